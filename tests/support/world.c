/*
 * world.c - runs a rank function on one pthread per rank of a threads-backend
 * world (see world.h): creates the world, starts the threads, joins them,
 * reports each rank's recorded failure through the harness and destroys the
 * handles after every thread has finished.
 */
#define _POSIX_C_SOURCE 200809L
#include "world.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness/harness.h"

/* What a rank thread gets: the function, its context, the end barrier (or NULL). */
typedef struct thread_arg {
    tsup_rank_fn fn;
    tsup_rank *ctx;
    pthread_barrier_t *end;
} thread_arg;

/* A rank thread: runs the rank function, then waits at the end barrier when there is one. */
static void *rank_main(void *p)
{
    thread_arg *a = p;
    a->fn(a->ctx);
    if (a->end) pthread_barrier_wait(a->end);
    return NULL;
}

/* The runner behind tsup_run_world and tsup_run_world_held (held: the end barrier). */
static int run_world(int world, double timeout, tsup_rank_fn fn, void *shared, int held)
{
    sbn_comm_t *comms[TSUP_MAX_WORLD];
    tsup_rank ctx[TSUP_MAX_WORLD];
    thread_arg args[TSUP_MAX_WORLD];
    pthread_t threads[TSUP_MAX_WORLD];
    pthread_barrier_t end;
    int r, bad = 0;
    sbn_status s = sbn_comm_threads_create(world, timeout, comms);
    if (s != SBN_OK) {
        sbn_test_fail(__FILE__, __LINE__, "sbn_comm_threads_create(%d): %s (%s)", world,
                      sbn_status_name(s), sbn_last_error());
        return 1;
    }
    if (held) pthread_barrier_init(&end, NULL, (unsigned)world);
    for (r = 0; r < world; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].world = world;
        ctx[r].comm = comms[r];
        ctx[r].shared = shared;
        args[r].fn = fn;
        args[r].ctx = &ctx[r];
        args[r].end = held ? &end : NULL;
        if (pthread_create(&threads[r], NULL, rank_main, &args[r]) != 0) {
            sbn_test_fail(__FILE__, __LINE__, "pthread_create failed");
            exit(1);
        }
    }
    for (r = 0; r < world; r++) pthread_join(threads[r], NULL);
    if (held) pthread_barrier_destroy(&end);
    for (r = 0; r < world; r++) {
        if (ctx[r].failed) {
            sbn_test_fail(__FILE__, __LINE__, "world of %d: %s", world, ctx[r].msg);
            bad = 1;
        }
        sbn_comm_destroy(comms[r]);
    }
    return bad;
}

int tsup_run_world(int world, double timeout, tsup_rank_fn fn, void *shared)
{
    return run_world(world, timeout, fn, shared, 0);
}

int tsup_run_world_held(int world, double timeout, tsup_rank_fn fn, void *shared)
{
    return run_world(world, timeout, fn, shared, 1);
}

int tsup_error_has(const char *needle)
{
    return needle == NULL || strstr(sbn_last_error(), needle) != NULL;
}

double tsup_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tsup_rank_note(int rank, int *failed, char *msg, size_t size, int line, const char *fmt,
                    ...)
{
    va_list ap;
    int n;
    if (*failed) return;
    n = snprintf(msg, size, "line %d, rank %d: ", line, rank);
    if (n < 0) n = 0;
    if ((size_t)n >= size) n = (int)size - 1;
    va_start(ap, fmt);
    vsnprintf(msg + n, size - (size_t)n, fmt, ap);
    va_end(ap);
    *failed = 1;
}
