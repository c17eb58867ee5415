/*
 * test_comm_callbacks.c - the callbacks backend, driven by a fake in-process
 * "framework": a bus of W endpoints whose allgather posts each rank's buffer,
 * meets the others at a pthread barrier, copies every block and meets them again.
 * Each rank thread wraps its endpoint with sbn_comm_callbacks_create. Covered:
 * allgather, allreduce (bits equal to the rank-order sum) and barrier, with and
 * without a barrier callback (the one-byte allgather fallback); the destroy
 * callback called once per handle; failing callbacks (every rank, or one rank
 * on the payload) returning SBN_ERR_COMM with the callback's name and value;
 * the header check still catching a disagreement; argument errors; and allocation
 * failures at creation, with no allocation left live and `user` left alone.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/alloc_counter.h"
#include "support/world.h"
#include "syncbn/comm.h"

#define MAXW 4

/* ---- the fake framework ---- */

typedef struct bus {
    pthread_barrier_t meet;
    int size;
    const void *send[MAXW];
    size_t bytes[MAXW];
    int all_fail;        /* every allgather returns -3 at once: the framework is down */
    atomic_int barrier_fail; /* the barrier callback returns 7 at once (ranks set it as they go) */
    int fail_rank;       /* this rank's fail_call-th allgather returns 42 after the transfer */
    int fail_call;
    atomic_int allgathers, barriers, destroys;
} bus;

typedef struct endpoint {
    bus *b;
    int rank;
    int calls;
} endpoint;

static int bus_allgather(void *user, const void *send, size_t bytes, void *recv)
{
    endpoint *e = user;
    bus *b = e->b;
    int r;
    e->calls++;
    atomic_fetch_add(&b->allgathers, 1);
    if (b->all_fail) return -3;
    b->send[e->rank] = send;
    b->bytes[e->rank] = bytes;
    pthread_barrier_wait(&b->meet);
    for (r = 0; r < b->size; r++)
        if (b->bytes[r] == bytes && bytes > 0)
            memcpy((char *)recv + (size_t)r * bytes, b->send[r], bytes);
    pthread_barrier_wait(&b->meet);
    return e->rank == b->fail_rank && e->calls == b->fail_call ? 42 : 0;
}

static int bus_barrier(void *user)
{
    endpoint *e = user;
    atomic_fetch_add(&e->b->barriers, 1);
    if (e->b->barrier_fail) return 7;
    pthread_barrier_wait(&e->b->meet);
    return 0;
}

static void bus_destroy(void *user)
{
    endpoint *e = user;
    atomic_fetch_add(&e->b->destroys, 1);
}

static void bus_init(bus *b, int size)
{
    memset(b, 0, sizeof *b);
    pthread_barrier_init(&b->meet, NULL, (unsigned)size);
    b->size = size;
    b->fail_rank = -1;
    atomic_init(&b->allgathers, 0);
    atomic_init(&b->barriers, 0);
    atomic_init(&b->destroys, 0);
}

/* ---- one thread per rank, each wrapping its endpoint ---- */

typedef struct rank_ctx {
    int rank, world;
    bus *b;
    endpoint ep;
    int with_barrier;
    int kind; /* which scenario */
    int failed;
    char msg[800];
} rank_ctx;

enum { K_COLLECTIVES, K_ALL_FAIL, K_PAYLOAD_FAIL, K_MISMATCH, K_STEP_MISMATCH };

static double value_of(int rank, size_t i)
{
    return ldexp(1.0 + 0.1 * (double)rank + 0.001 * (double)i, (int)((rank * 7 + (int)i) % 23) - 11);
}

/* One rank's scenario on its handle, created into *out (destroyed by the caller). */
static void rank_run(rank_ctx *c, sbn_comm_t **out)
{
    sbn_comm_callbacks cb = {bus_allgather, c->with_barrier ? bus_barrier : NULL, bus_destroy, NULL, NULL};
    sbn_comm_t *comm;
    double v[40], g[40 * MAXW];
    size_t i;
    int r;

    c->ep.b = c->b;
    c->ep.rank = c->rank;
    RSTATUS(c, sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, out), SBN_OK);
    comm = *out;
    RCHECK(c, sbn_comm_rank(comm) == c->rank && sbn_comm_size(comm) == c->world, "rank/size");
    for (i = 0; i < 40; i++) v[i] = value_of(c->rank, i);
    switch (c->kind) {
    case K_COLLECTIVES:
        RSTATUS(c, sbn_comm_allgather(comm, v, 40, g, 1), SBN_OK);
        for (r = 0; r < c->world; r++)
            for (i = 0; i < 40; i++)
                RCHECK(c, g[(size_t)r * 40 + i] == value_of(r, i), "gather [%d][%zu]", r, i);
        RSTATUS(c, sbn_comm_barrier(comm), SBN_OK);
        RSTATUS(c, sbn_comm_allreduce_sum(comm, v, 40, 2), SBN_OK);
        for (i = 0; i < 40; i++) {
            double want = value_of(0, i);
            for (r = 1; r < c->world; r++) want += value_of(r, i);
            RCHECK(c, memcmp(&want, &v[i], sizeof want) == 0, "sum[%zu] %.17g vs %.17g", i, v[i],
                   want);
        }
        RSTATUS(c, sbn_comm_barrier(comm), SBN_OK);
        RSTATUS(c, sbn_comm_allgather(comm, NULL, 0, NULL, 3), SBN_OK);
        break;
    case K_ALL_FAIL:
        RSTATUS(c, sbn_comm_allreduce_sum(comm, v, 40, 0), SBN_ERR_COMM);
        RHAS(c, "the allgather callback returned -3");
        RSTATUS(c, sbn_comm_fail(comm, SBN_ERR_BAD_VALUE), SBN_ERR_COMM); /* not announced */
        RHAS(c, "returned -3");
        break;
    case K_PAYLOAD_FAIL:
        /* Call 1 is the header exchange, call 2 the payload. */
        RSTATUS(c, sbn_comm_allgather(comm, v, 40, g, 0), c->rank == 1 ? SBN_ERR_COMM : SBN_OK);
        if (c->rank == 1) {
            RHAS(c, "the allgather callback returned 42 on rank 1 of");
            RHAS(c, "payload");
        }
        if (c->with_barrier) {
            c->b->barrier_fail = 1;
            RSTATUS(c, sbn_comm_barrier(comm), SBN_ERR_COMM);
            RHAS(c, "the barrier callback returned 7");
        }
        break;
    case K_STEP_MISMATCH: /* the last rank skipped step 1: the same rule as every backend */
        RSTATUS(c, sbn_comm_set_step(comm, c->rank == c->world - 1 ? 2 : 1), SBN_OK);
        RSTATUS(c, sbn_comm_allreduce_sum(comm, v, 40, 0), SBN_ERR_COMM_MISMATCH);
        RHAS(c, "is at step 2 (a rank skipped or repeated a step)");
        break;
    default: /* K_MISMATCH: the header check works over any backend */
        RSTATUS(c, sbn_comm_allreduce_sum(comm, v, c->rank == c->world - 1 ? 39 : 40, 0),
                SBN_ERR_COMM_MISMATCH);
        RHAS(c, "count 39");
        break;
    }
}

static void *rank_main(void *p)
{
    sbn_comm_t *comm = NULL;
    rank_run(p, &comm);
    sbn_comm_destroy(comm);
    return NULL;
}

/* Runs one scenario on a bus of `world` ranks; returns 0 when every rank passed. */
static int run_bus(bus *b, int world, int with_barrier, int kind)
{
    rank_ctx ctx[MAXW];
    pthread_t threads[MAXW];
    int r, bad = 0;
    for (r = 0; r < world; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].world = world;
        ctx[r].b = b;
        ctx[r].with_barrier = with_barrier;
        ctx[r].kind = kind;
        if (pthread_create(&threads[r], NULL, rank_main, &ctx[r]) != 0) exit(1);
    }
    for (r = 0; r < world; r++) pthread_join(threads[r], NULL);
    for (r = 0; r < world; r++) {
        if (!ctx[r].failed) continue;
        sbn_test_fail(__FILE__, __LINE__, "world %d, barrier callback %d: %s", world, with_barrier,
                      ctx[r].msg);
        bad = 1;
    }
    return bad;
}

static void collectives(void)
{
    int w, with;
    for (w = 1; w <= MAXW; w++) {
        for (with = 0; with < 2; with++) {
            bus b;
            bus_init(&b, w);
            if (run_bus(&b, w, with, K_COLLECTIVES)) return;
            /*
             * Per rank: allgather and allreduce (header + payload; no payload for an
             * allreduce of one rank), two barriers (header + the barrier callback or
             * its one-byte allgather) and an allgather of nothing (header only).
             */
            CHECK_MSG(atomic_load(&b.destroys) == w, "destroy called %d times",
                      atomic_load(&b.destroys));
            CHECK_MSG(atomic_load(&b.barriers) == (with ? 2 * w : 0), "barrier callback called "
                      "%d times", atomic_load(&b.barriers));
            CHECK_MSG(atomic_load(&b.allgathers) == w * ((with ? 7 : 9) - (w == 1)), "allgather callback "
                      "called %d times", atomic_load(&b.allgathers));
            pthread_barrier_destroy(&b.meet);
        }
    }
}

static void failing_callbacks(void)
{
    int with;
    bus b;
    bus_init(&b, 3);
    b.all_fail = 1;
    if (run_bus(&b, 3, 1, K_ALL_FAIL)) return;
    pthread_barrier_destroy(&b.meet);
    for (with = 0; with < 2; with++) {
        bus_init(&b, 3);
        b.fail_rank = 1;
        b.fail_call = 2;
        if (run_bus(&b, 3, with, K_PAYLOAD_FAIL)) return;
        pthread_barrier_destroy(&b.meet);
    }
}

static void mismatch_over_callbacks(void)
{
    bus b;
    bus_init(&b, 3);
    if (run_bus(&b, 3, 0, K_MISMATCH)) return;
    pthread_barrier_destroy(&b.meet);
    bus_init(&b, 3);
    run_bus(&b, 3, 0, K_STEP_MISMATCH);
    pthread_barrier_destroy(&b.meet);
}

static void argument_errors(void)
{
    bus b;
    endpoint ep = {&b, 0, 0};
    sbn_comm_callbacks cb = {bus_allgather, NULL, bus_destroy, NULL, NULL};
    sbn_comm_callbacks none = {NULL, bus_barrier, bus_destroy, NULL, NULL};
    sbn_comm_t *comm = (sbn_comm_t *)&ep;
    bus_init(&b, 1);
    CHECK_STATUS(sbn_comm_callbacks_create(0, 1, NULL, &ep, &comm), SBN_ERR_NULL_ARGUMENT);
    CHECK(comm == NULL);
    CHECK_STATUS(sbn_comm_callbacks_create(0, 1, &none, &ep, &comm), SBN_ERR_NULL_ARGUMENT);
    CHECK(strstr(sbn_last_error(), "allgather") != NULL);
    CHECK_STATUS(sbn_comm_callbacks_create(0, 1, &cb, &ep, NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sbn_comm_callbacks_create(0, 0, &cb, &ep, &comm), SBN_ERR_BAD_VALUE);
    CHECK_STATUS(sbn_comm_callbacks_create(-1, 2, &cb, &ep, &comm), SBN_ERR_BAD_VALUE);
    CHECK_STATUS(sbn_comm_callbacks_create(2, 2, &cb, &ep, &comm), SBN_ERR_BAD_VALUE);
    CHECK(strstr(sbn_last_error(), "rank is 2") != NULL);
    CHECK(atomic_load(&b.destroys) == 0);
    /* A world of one through the callbacks, with the barrier fallback. */
    CHECK_OK(sbn_comm_callbacks_create(0, 1, &cb, &ep, &comm));
    CHECK_OK(sbn_comm_barrier(comm));
    sbn_comm_destroy(comm);
    CHECK(atomic_load(&b.destroys) == 1);
    pthread_barrier_destroy(&b.meet);
}

static tsup_counter counter_;

static void create_out_of_memory(void)
{
    bus b;
    endpoint ep = {&b, 0, 0};
    int with;
    long k; /* the index of the call that fails */
    bus_init(&b, 1);
    tsup_counter_install(&counter_);
    for (with = 0; with < 2; with++) {
        sbn_comm_callbacks cb = {bus_allgather, with ? bus_barrier : NULL, bus_destroy, NULL, NULL};
        sbn_comm_t *comm = NULL;
        for (k = 0;; k++) {
            sbn_status s;
            counter_.fail_at = k + 1;
            counter_.calls = 0;
            s = sbn_comm_callbacks_create(0, 1, &cb, &ep, &comm);
            if (s == SBN_OK) break;
            CHECK_STATUS(s, SBN_ERR_OUT_OF_MEMORY);
            CHECK(comm == NULL);
            CHECK_MSG(counter_.live == 0, "%ld live after failure %ld", counter_.live, k);
            CHECK(k < 10);
        }
        CHECK_MSG(k == (with ? 2 : 3), "creation made %ld allocations", k);
        CHECK(atomic_load(&b.destroys) == with); /* user untouched on failure */
        counter_.fail_at = 0;
        sbn_comm_destroy(comm);
        CHECK(atomic_load(&b.destroys) == with + 1);
        CHECK(counter_.live == 0);
    }
    sbn_set_allocator(NULL, NULL, NULL);
    pthread_barrier_destroy(&b.meet);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(collectives),
    SBN_TEST_CASE(failing_callbacks),
    SBN_TEST_CASE(mismatch_over_callbacks),
    SBN_TEST_CASE(argument_errors),
    SBN_TEST_CASE(create_out_of_memory),
};

SBN_TEST_MAIN(k_cases)
