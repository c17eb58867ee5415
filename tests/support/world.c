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

/*
 * The runner behind tsup_run_world and tsup_run_world_held (held: the end barrier).
 * Worlds of more than TSUP_MAX_WORLD ranks (the scale tests run 64 and 256) get
 * 1 MiB thread stacks, so that hundreds of threads stay cheap under ASan too.
 */
static int run_world(int world, double timeout, tsup_rank_fn fn, void *shared, int held)
{
    sbn_comm_t **comms = calloc((size_t)world, sizeof *comms);
    tsup_rank *ctx = calloc((size_t)world, sizeof *ctx);
    thread_arg *args = calloc((size_t)world, sizeof *args);
    pthread_t *threads = calloc((size_t)world, sizeof *threads);
    pthread_barrier_t end;
    pthread_attr_t attr;
    int r, bad = 0;
    sbn_status s;
    if (!comms || !ctx || !args || !threads) {
        sbn_test_fail(__FILE__, __LINE__, "could not allocate a world of %d ranks", world);
        bad = 1;
        goto out;
    }
    s = sbn_comm_threads_create(world, timeout, comms);
    if (s != SBN_OK) {
        sbn_test_fail(__FILE__, __LINE__, "sbn_comm_threads_create(%d): %s (%s)", world,
                      sbn_status_name(s), sbn_last_error());
        bad = 1;
        goto out;
    }
    if (held) pthread_barrier_init(&end, NULL, (unsigned)world);
    pthread_attr_init(&attr);
    if (world > TSUP_MAX_WORLD) pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    for (r = 0; r < world; r++) {
        ctx[r].rank = r;
        ctx[r].world = world;
        ctx[r].comm = comms[r];
        ctx[r].shared = shared;
        args[r].fn = fn;
        args[r].ctx = &ctx[r];
        args[r].end = held ? &end : NULL;
        if (pthread_create(&threads[r], &attr, rank_main, &args[r]) != 0) {
            sbn_test_fail(__FILE__, __LINE__, "pthread_create failed");
            exit(1);
        }
    }
    pthread_attr_destroy(&attr);
    for (r = 0; r < world; r++) pthread_join(threads[r], NULL);
    if (held) pthread_barrier_destroy(&end);
    for (r = 0; r < world; r++) {
        if (ctx[r].failed) {
            sbn_test_fail(__FILE__, __LINE__, "world of %d: %s", world, ctx[r].msg);
            bad = 1;
        }
        sbn_comm_destroy(comms[r]);
    }
out:
    free(comms);
    free(ctx);
    free(args);
    free(threads);
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
