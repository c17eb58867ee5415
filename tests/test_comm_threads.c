/*
 * test_comm_threads.c - the communicator's generic layer through the in-process
 * threads backend, one pthread per rank: allgather and allreduce results for
 * worlds of 1, 2, 3, 4 and 7 ranks and counts from 0 up, allreduce bits equal on
 * every rank and to the rank-order sum, long runs of mixed collectives, barrier
 * ordering, every kind of disagreement (count, tag, op) returning
 * SBN_ERR_COMM_MISMATCH on every rank with a sentence naming both ranks, a rank
 * that skips a call (its peers time out, its late call fails at once), announced
 * failures (sbn_comm_fail, bad arguments, a failed scratch allocation) returning
 * SBN_ERR_PEER_FAILED on the peers, destroyed handles, argument errors,
 * allocation failures at creation with no allocation left live, SBN_COMM_TIMEOUT
 * as the default timeout (bad values refused), and a rank that skipped a whole
 * step (sbn_comm_set_step) reported as a mismatch in the very next collective.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/harness.h"
#include "support/alloc_counter.h"
#include "support/env_now.h"
#include "support/values.h"
#include "support/world.h"
#include "syncbn/comm.h"

#define TIMEOUT 20.0 /* seconds: long enough never to fire in a passing run */

static double rank_order_sum(int world, size_t i, int salt)
{
    double s = tsup_spread_value(0, i, salt);
    int r;
    for (r = 1; r < world; r++) s += tsup_spread_value(r, i, salt);
    return s;
}

static const int worlds_[] = {1, 2, 3, 4, 7};
static const size_t counts_[] = {0, 1, 3, 17, 128, 1031};
enum { NWORLDS = 5, NCOUNTS = 6 };

/* ---- correctness ---- */

static void rank_allgather(tsup_rank *c)
{
    int k, r;
    for (k = 0; k < NCOUNTS; k++) {
        size_t n = counts_[k], i;
        double *send = n ? malloc(n * sizeof *send) : NULL;
        double *recv = n ? malloc(n * (size_t)c->world * sizeof *recv) : NULL;
        for (i = 0; i < n; i++) send[i] = tsup_spread_value(c->rank, i, k);
        for (i = 0; i < n * (size_t)c->world; i++) recv[i] = NAN;
        RSTATUS(c, sbn_comm_allgather(c->comm, send, n, recv, (int64_t)n), SBN_OK);
        RCHECK(c, sbn_last_error()[0] == '\0', "error text \"%s\" after success", sbn_last_error());
        for (r = 0; r < c->world; r++)
            for (i = 0; i < n; i++)
                RCHECK(c, recv[(size_t)r * n + i] == tsup_spread_value(r, i, k),
                       "count %zu: recv[%d][%zu] = %g, expected %g", n, r, i,
                       recv[(size_t)r * n + i], tsup_spread_value(r, i, k));
        free(send);
        free(recv);
    }
}

static void allgather_results(void)
{
    int w;
    for (w = 0; w < NWORLDS; w++)
        if (tsup_run_world(worlds_[w], TIMEOUT, rank_allgather, NULL)) return;
}

/* shared: results[rank][count index] arrays, compared by the main thread. */
typedef struct reduce_shared {
    double *results[TSUP_MAX_WORLD][NCOUNTS];
} reduce_shared;

static void rank_allreduce(tsup_rank *c)
{
    reduce_shared *sh = c->shared;
    int k;
    for (k = 0; k < NCOUNTS; k++) {
        size_t n = counts_[k], i;
        double *v = malloc((n ? n : 1) * sizeof *v);
        for (i = 0; i < n; i++) v[i] = tsup_spread_value(c->rank, i, 100 + k);
        sh->results[c->rank][k] = v;
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, n ? v : NULL, n, 7), SBN_OK);
    }
}

static void allreduce_bits(void)
{
    int w, r, k;
    for (w = 0; w < NWORLDS; w++) {
        int world = worlds_[w], bad;
        reduce_shared sh;
        memset(&sh, 0, sizeof sh);
        bad = tsup_run_world(world, TIMEOUT, rank_allreduce, &sh);
        for (k = 0; k < NCOUNTS && !bad; k++) {
            size_t n = counts_[k], i;
            for (i = 0; i < n && !bad; i++) {
                double want = rank_order_sum(world, i, 100 + k);
                for (r = 0; r < world; r++) {
                    if (memcmp(&sh.results[r][k][i], &want, sizeof want) != 0) {
                        sbn_test_fail(__FILE__, __LINE__, "world %d count %zu: rank %d has "
                                      "%.17g at %zu, rank-order sum %.17g", world, n, r,
                                      sh.results[r][k][i], i, want);
                        bad = 1;
                        break;
                    }
                }
            }
        }
        for (r = 0; r < world; r++)
            for (k = 0; k < NCOUNTS; k++) free(sh.results[r][k]);
        if (bad) return;
    }
}

/* 300 mixed collectives, then a mismatch whose sentence carries call #301. */
static void rank_many(tsup_rank *c)
{
    double v[5], g[5 * TSUP_MAX_WORLD];
    int call, r;
    for (call = 1; call <= 300; call++) {
        size_t n = (size_t)(call % 6), i;
        switch (call % 3) {
        case 0:
            for (i = 0; i < n; i++) v[i] = tsup_spread_value(c->rank, i, call);
            RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, n, call), SBN_OK);
            for (i = 0; i < n; i++)
                RCHECK(c, v[i] == rank_order_sum(c->world, i, call), "call %d: sum differs", call);
            break;
        case 1:
            for (i = 0; i < n; i++) v[i] = tsup_spread_value(c->rank, i, call);
            RSTATUS(c, sbn_comm_allgather(c->comm, v, n, g, -call), SBN_OK);
            for (r = 0; r < c->world; r++)
                for (i = 0; i < n; i++)
                    RCHECK(c, g[(size_t)r * n + i] == tsup_spread_value(r, i, call),
                           "call %d: gather differs", call);
            break;
        default: RSTATUS(c, sbn_comm_barrier(c->comm), SBN_OK);
        }
    }
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 1, c->rank == 3 ? 9 : 8), SBN_ERR_COMM_MISMATCH);
    RHAS(c, "call #301");
    RHAS(c, "rank 3 called allreduce (count 1, tag 9, call #301)");
}

static void many_collectives(void)
{
    tsup_run_world(4, TIMEOUT, rank_many, NULL);
}

/* Every rank adds to `arrived` before the barrier and reads it after: it must be complete. */
typedef struct barrier_shared {
    atomic_int arrived[20];
} barrier_shared;

static void rank_barrier(tsup_rank *c)
{
    barrier_shared *sh = c->shared;
    struct timespec pause = {0, 200000};
    int k;
    for (k = 0; k < 20; k++) {
        if ((k + c->rank) % 3 == 0) nanosleep(&pause, NULL); /* stagger arrivals */
        atomic_fetch_add(&sh->arrived[k], 1);
        RSTATUS(c, sbn_comm_barrier(c->comm), SBN_OK);
        RCHECK(c, atomic_load(&sh->arrived[k]) == c->world, "barrier %d let rank %d through with "
               "%d of %d arrived", k, c->rank, atomic_load(&sh->arrived[k]), c->world);
    }
}

static void barrier_orders(void)
{
    int w, k;
    for (w = 0; w < NWORLDS; w++) {
        barrier_shared sh;
        for (k = 0; k < 20; k++) atomic_init(&sh.arrived[k], 0);
        if (tsup_run_world(worlds_[w], TIMEOUT, rank_barrier, &sh)) return;
    }
}

static void single_rank_world(void)
{
    sbn_comm_t *comm;
    double v[3] = {1.5, -2.0, 4.0}, g[3];
    CHECK_OK(sbn_comm_threads_create(1, 0.0, &comm));
    CHECK(sbn_comm_rank(comm) == 0 && sbn_comm_size(comm) == 1);
    CHECK_OK(sbn_comm_allgather(comm, v, 3, g, 0));
    CHECK(memcmp(v, g, sizeof v) == 0);
    CHECK_OK(sbn_comm_allreduce_sum(comm, v, 3, 0));
    CHECK(v[0] == 1.5 && v[1] == -2.0 && v[2] == 4.0);
    CHECK_OK(sbn_comm_barrier(comm));
    sbn_comm_destroy(comm);
}

/* ---- disagreements ---- */

typedef struct mismatch_case {
    int odd_rank;      /* the rank that differs */
    int odd_op;        /* 0 allreduce, 1 allgather, 2 barrier */
    size_t odd_count;
    int64_t odd_tag;
    const char *want;  /* a piece of the sentence */
} mismatch_case;

static void rank_mismatch(tsup_rank *c)
{
    const mismatch_case *mc = c->shared;
    double v[130] = {0}, g[130 * TSUP_MAX_WORLD];
    int odd = c->rank == mc->odd_rank;
    int op = odd ? mc->odd_op : 0;
    size_t n = odd ? mc->odd_count : 128;
    int64_t tag = odd ? mc->odd_tag : 64;
    char other[64];
    if (op == 0)
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, n, tag), SBN_ERR_COMM_MISMATCH);
    else if (op == 1)
        RSTATUS(c, sbn_comm_allgather(c->comm, v, n, g, tag), SBN_ERR_COMM_MISMATCH);
    else
        RSTATUS(c, sbn_comm_barrier(c->comm), SBN_ERR_COMM_MISMATCH);
    RHAS(c, "rank 0 called allreduce (count 128, tag 64, call #1)");
    snprintf(other, sizeof other, "rank %d called ", mc->odd_rank);
    RHAS(c, other);
    RHAS(c, mc->want);
    /* A disagreement is not a failure: the handles remain usable. */
    v[0] = 1.0;
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 1, 1), SBN_OK);
    RCHECK(c, v[0] == (double)c->world, "sum after the mismatch is %g", v[0]);
}

static void mismatch_count(void)
{
    mismatch_case mc = {2, 0, 129, 64, "allreduce (count 129, tag 64, call #1)"};
    tsup_run_world(3, TIMEOUT, rank_mismatch, &mc);
}

static void mismatch_tag(void)
{
    mismatch_case mc = {1, 0, 128, 65, "allreduce (count 128, tag 65, call #1)"};
    tsup_run_world(4, TIMEOUT, rank_mismatch, &mc);
}

static void mismatch_op(void)
{
    mismatch_case mc = {2, 1, 128, 64, "rank 2 called allgather (count 128, tag 64, call #1)"};
    mismatch_case mb = {3, 2, 0, 0, "rank 3 called barrier (count 0, tag 0, call #1)"};
    if (tsup_run_world(3, TIMEOUT, rank_mismatch, &mc)) return;
    tsup_run_world(4, TIMEOUT, rank_mismatch, &mb);
}

/* ---- timeouts ---- */

typedef struct skip_shared {
    pthread_barrier_t after; /* the skipper waits here until its peers have timed out */
    double elapsed[TSUP_MAX_WORLD];
} skip_shared;

static void rank_skip(tsup_rank *c)
{
    skip_shared *sh = c->shared;
    double v[4] = {1, 2, 3, 4}, t0;
    if (c->rank != 2) {
        t0 = tsup_now();
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 4, 0), SBN_ERR_TIMEOUT);
        sh->elapsed[c->rank] = tsup_now() - t0;
        RHAS(c, "2 of 3 ranks arrived");
        RHAS(c, "rank 2 missing");
        pthread_barrier_wait(&sh->after);
        /* Every later collective on the broken world fails at once. */
        t0 = tsup_now();
        RSTATUS(c, sbn_comm_barrier(c->comm), SBN_ERR_TIMEOUT);
        RCHECK(c, tsup_now() - t0 < 0.25, "a collective on a broken world took %g s",
               tsup_now() - t0);
        RHAS(c, "was broken before this collective");
        return;
    }
    pthread_barrier_wait(&sh->after); /* rank 2 skipped the allreduce */
    t0 = tsup_now();
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 4, 0), SBN_ERR_TIMEOUT);
    sh->elapsed[c->rank] = tsup_now() - t0;
    RCHECK(c, sh->elapsed[c->rank] < 0.25, "the late call took %g s", sh->elapsed[c->rank]);
    RHAS(c, "rank 2 missing");
    RSTATUS(c, sbn_comm_fail(c->comm, SBN_ERR_BAD_VALUE), SBN_ERR_TIMEOUT);
}

static void skipped_call_times_out(void)
{
    skip_shared sh;
    int r;
    memset(&sh, 0, sizeof sh);
    pthread_barrier_init(&sh.after, NULL, 3);
    tsup_run_world(3, 0.3, rank_skip, &sh);
    pthread_barrier_destroy(&sh.after);
    RETURN_IF_FAILED();
    for (r = 0; r < 2; r++)
        CHECK_MSG(sh.elapsed[r] >= 0.25 && sh.elapsed[r] < 10.0, "rank %d timed out after %g s",
                  r, sh.elapsed[r]);
}

static void destroyed_handle_breaks_world(void)
{
    sbn_comm_t *comms[3];
    double t0;
    CHECK_OK(sbn_comm_threads_create(3, 30.0, comms));
    sbn_comm_destroy(comms[2]);
    t0 = tsup_now();
    CHECK_STATUS(sbn_comm_barrier(comms[0]), SBN_ERR_PEER_FAILED);
    CHECK(tsup_now() - t0 < 1.0);
    CHECK_MSG(strstr(sbn_last_error(), "rank 2's handle was destroyed") != NULL, "%s",
              sbn_last_error());
    /* Getters and destroy leave the sentence for the caller to report after cleaning up. */
    CHECK(sbn_comm_rank(comms[0]) == 0 && sbn_comm_size(comms[1]) == 3);
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
    CHECK_MSG(strstr(sbn_last_error(), "rank 2's handle was destroyed") != NULL, "%s",
              sbn_last_error());
}

/* ---- the default timeout from SBN_COMM_TIMEOUT ---- */

/* Rank 1 skips the allreduce; rank 0 must time out after the environment's 0.3 s. */
static void rank_env_timeout(tsup_rank *c)
{
    double v = 1.0, t0, took;
    if (c->rank == 1) return; /* held until rank 0 is done */
    t0 = tsup_now();
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, &v, 1, 0), SBN_ERR_TIMEOUT);
    took = tsup_now() - t0;
    RHAS(c, "timed out after 0.3 s");
    RHAS(c, "rank 1 missing");
    RCHECK(c, took < 10.0, "the timeout took %g s", took);
}

static void env_timeout_is_the_default(void)
{
    tsup_setenv_now("SBN_COMM_TIMEOUT", " 0.3 ");
    tsup_run_world_held(2, 0.0, rank_env_timeout, NULL);
    tsup_unsetenv_now("SBN_COMM_TIMEOUT");
}

static void env_timeout_bad_values(void)
{
    static const char *const bad[] = {"abc", "-1", "0", "nan", "5s", "-inf", "1e-400"};
    sbn_comm_t *comms[2] = {NULL, NULL};
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tsup_setenv_now("SBN_COMM_TIMEOUT", bad[k]);
        CHECK_STATUS(sbn_comm_threads_create(2, 0.0, comms), SBN_ERR_BAD_VALUE);
        CHECK_MSG(strstr(sbn_last_error(), "SBN_COMM_TIMEOUT") != NULL &&
                  strstr(sbn_last_error(), bad[k]) != NULL, "%s", sbn_last_error());
        CHECK(comms[0] == NULL && comms[1] == NULL);
        /* An explicit timeout does not read the environment. */
        CHECK_OK(sbn_comm_threads_create(2, 5.0, comms));
        sbn_comm_destroy(comms[0]);
        sbn_comm_destroy(comms[1]);
        comms[0] = comms[1] = NULL;
    }
    /* Empty means unset (60 s); "inf" is capped, i.e. practically never. */
    tsup_setenv_now("SBN_COMM_TIMEOUT", "");
    CHECK_OK(sbn_comm_threads_create(2, 0.0, comms));
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
    tsup_setenv_now("SBN_COMM_TIMEOUT", "inf");
    CHECK_OK(sbn_comm_threads_create(2, -1.0, comms));
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
    tsup_unsetenv_now("SBN_COMM_TIMEOUT");
}

/* ---- steps ---- */

/*
 * Steps of one allgather and one allreduce (as the layer's forward and backward);
 * rank 2 skips step 1. Every rank must get SBN_ERR_COMM_MISMATCH in the first
 * collective where the declared steps differ, not a timeout at the end.
 */
static void rank_skip_step(tsup_rank *c)
{
    double send[2] = {1, 2}, recv[2 * TSUP_MAX_WORLD];
    int step, failed_at = -1;
    sbn_status s = SBN_OK;
    for (step = 0; step < 4; step++) {
        if (c->rank == 2 && step == 1) continue;
        RSTATUS(c, sbn_comm_set_step(c->comm, step), SBN_OK);
        s = sbn_comm_allgather(c->comm, send, 2, recv, 5);
        if (s == SBN_OK) s = sbn_comm_allreduce_sum(c->comm, send, 2, 6);
        if (s != SBN_OK) {
            failed_at = step;
            break;
        }
    }
    RCHECK(c, s == SBN_ERR_COMM_MISMATCH, "got %s (%s)", sbn_status_name(s), sbn_last_error());
    RCHECK(c, failed_at == (c->rank == 2 ? 2 : 1), "reported in step %d", failed_at);
    RHAS(c, "rank 0 is at step 1 but rank 2 is at step 2 (a rank skipped or repeated a step)");
    RHAS(c, "call #3");
}

static void skipped_step_is_a_mismatch(void)
{
    tsup_run_world(3, TIMEOUT, rank_skip_step, NULL);
}

static void set_step_argument(void)
{
    CHECK_STATUS(sbn_comm_set_step(NULL, 3), SBN_ERR_NULL_ARGUMENT);
}

/* ---- announced failures ---- */

typedef struct fail_case {
    int fail_mask; /* ranks that call sbn_comm_fail */
    const char *want;
} fail_case;

static void rank_fail(tsup_rank *c)
{
    const fail_case *fc = c->shared;
    double v[8] = {0}, t0;
    if (fc->fail_mask & (1 << c->rank)) {
        sbn_status reason = c->rank == 1 ? SBN_ERR_BAD_SHAPE : SBN_ERR_OUT_OF_MEMORY;
        RSTATUS(c, sbn_comm_fail(c->comm, reason), reason);
        RHAS(c, "announced");
        RSTATUS(c, sbn_comm_fail(c->comm, reason), reason); /* already failed: no exchange */
        RSTATUS(c, sbn_comm_barrier(c->comm), SBN_ERR_PEER_FAILED);
        RHAS(c, "unusable");
        if (c->rank == 1) RHAS(c, "rank 1 (this rank) failed with SBN_ERR_BAD_SHAPE");
        return;
    }
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 8, 3), SBN_ERR_PEER_FAILED);
    RHAS(c, fc->want);
    RHAS(c, "failed before this collective");
    /* The failure is sticky: later collectives fail at once, on every rank alike. */
    t0 = tsup_now();
    RSTATUS(c, sbn_comm_allgather(c->comm, v, 1, v + 4, 3), SBN_ERR_PEER_FAILED);
    RCHECK(c, tsup_now() - t0 < 0.25, "a collective after a failure took %g s", tsup_now() - t0);
    RHAS(c, "unusable");
}

static void fail_one_rank(void)
{
    fail_case fc = {1 << 1, "rank 1 (SBN_ERR_BAD_SHAPE)"};
    tsup_run_world(4, TIMEOUT, rank_fail, &fc);
}

static void fail_two_ranks(void)
{
    fail_case fc = {(1 << 1) | (1 << 3), "ranks 1 (SBN_ERR_BAD_SHAPE), 3 (SBN_ERR_OUT_OF_MEMORY)"};
    tsup_run_world(5, TIMEOUT, rank_fail, &fc);
}

static void rank_fail_keeps_text(tsup_rank *c)
{
    double v = 1.0;
    if (c->rank == 0) {
        /* Produce a real failure sentence first, as an op would. */
        RSTATUS(c, sbn_comm_allreduce_sum(NULL, &v, 1, 0), SBN_ERR_NULL_ARGUMENT);
        RSTATUS(c, sbn_comm_fail(c->comm, SBN_ERR_NULL_ARGUMENT), SBN_ERR_NULL_ARGUMENT);
        RCHECK(c, strcmp(sbn_last_error(), "comm is NULL") == 0, "kept text is \"%s\"",
               sbn_last_error());
        return;
    }
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, &v, 1, 0), SBN_ERR_PEER_FAILED);
    RHAS(c, "rank 0 (SBN_ERR_NULL_ARGUMENT)");
}

static void fail_keeps_sentence(void)
{
    tsup_run_world(2, TIMEOUT, rank_fail_keeps_text, NULL);
}

/* Bad arguments on one rank are announced: that rank gets the argument error, peers PEER_FAILED. */
typedef struct badarg_case {
    int kind; /* 0 NULL values, 1 NULL recv, 2 overlap, 3 huge count, 4 fail(SBN_OK) */
    sbn_status want;
} badarg_case;

static void rank_badarg(tsup_rank *c)
{
    const badarg_case *bc = c->shared;
    double buf[16] = {0};
    if (c->rank == 1) {
        switch (bc->kind) {
        case 0: RSTATUS(c, sbn_comm_allreduce_sum(c->comm, NULL, 4, 0), bc->want); break;
        case 1: RSTATUS(c, sbn_comm_allgather(c->comm, buf, 4, NULL, 0), bc->want); break;
        case 2: RSTATUS(c, sbn_comm_allgather(c->comm, buf + 4, 4, buf, 0), bc->want); break;
        case 3: RSTATUS(c, sbn_comm_allreduce_sum(c->comm, buf, SIZE_MAX / 4, 0), bc->want); break;
        default: RSTATUS(c, sbn_comm_fail(c->comm, SBN_OK), bc->want); break;
        }
        RCHECK(c, sbn_last_error()[0] != '\0', "no sentence");
        return;
    }
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, buf, 4, 0), SBN_ERR_PEER_FAILED);
    RHAS(c, "rank 1 (");
}

static void argument_errors_in_world(void)
{
    static const badarg_case cases[] = {{0, SBN_ERR_NULL_ARGUMENT}, {1, SBN_ERR_NULL_ARGUMENT},
                                        {2, SBN_ERR_ALIAS}, {3, SBN_ERR_BAD_VALUE},
                                        {4, SBN_ERR_BAD_VALUE}};
    int k;
    for (k = 0; k < 5; k++)
        if (tsup_run_world(3, TIMEOUT, rank_badarg, (void *)&cases[k])) return;
}

static void argument_errors(void)
{
    sbn_comm_t *comms[2] = {(sbn_comm_t *)&comms, (sbn_comm_t *)&comms};
    double v = 0;
    CHECK_STATUS(sbn_comm_threads_create(0, 1.0, comms), SBN_ERR_BAD_VALUE);
    CHECK(strstr(sbn_last_error(), "world is 0") != NULL);
    CHECK_STATUS(sbn_comm_threads_create(4097, 1.0, comms), SBN_ERR_BAD_VALUE);
    CHECK_STATUS(sbn_comm_threads_create(-3, 1.0, comms), SBN_ERR_BAD_VALUE);
    CHECK_STATUS(sbn_comm_threads_create(2, 1.0, NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sbn_comm_allgather(NULL, &v, 1, &v, 0), SBN_ERR_NULL_ARGUMENT);
    CHECK(strstr(sbn_last_error(), "comm") != NULL);
    CHECK_STATUS(sbn_comm_allreduce_sum(NULL, &v, 1, 0), SBN_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sbn_comm_barrier(NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sbn_comm_fail(NULL, SBN_ERR_BAD_VALUE), SBN_ERR_NULL_ARGUMENT);
    CHECK(sbn_comm_rank(NULL) == -1);
    CHECK(sbn_comm_size(NULL) == 0);
    sbn_comm_destroy(NULL);
    /* A default timeout (0, negative, NaN) and an infinite one still create worlds. */
    CHECK_OK(sbn_comm_threads_create(2, -1.0, comms));
    CHECK(sbn_comm_rank(comms[1]) == 1 && sbn_comm_size(comms[0]) == 2);
    sbn_comm_destroy(comms[1]);
    sbn_comm_destroy(comms[0]);
    CHECK_OK(sbn_comm_threads_create(2, NAN, comms));
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
    CHECK_OK(sbn_comm_threads_create(2, INFINITY, comms));
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
}

/* ---- allocation failures ---- */

static tsup_counter counter_;

static void create_out_of_memory(void)
{
    sbn_comm_t *comms[4];
    long k;
    int r;
    tsup_counter_install(&counter_);
    for (k = 0;; k++) {
        sbn_status s;
        counter_.calls = 0;
        counter_.fail_at = k + 1; /* fails the call with index k */
        for (r = 0; r < 4; r++) comms[r] = (sbn_comm_t *)&comms;
        s = sbn_comm_threads_create(4, 1.0, comms);
        if (s == SBN_OK) break;
        CHECK_MSG(s == SBN_ERR_OUT_OF_MEMORY, "failing allocation %ld gave %s", k,
                  sbn_status_name(s));
        CHECK_MSG(strlen(sbn_last_error()) > 0, "no sentence");
        CHECK_MSG(counter_.live == 0, "failing allocation %ld left %ld live", k, counter_.live);
        for (r = 0; r < 4; r++) CHECK(comms[r] == NULL);
        CHECK(k < 100);
    }
    CHECK_MSG(k >= 5, "creation made only %ld allocations", k);
    counter_.fail_at = 0;
    for (r = 3; r >= 0; r--) sbn_comm_destroy(comms[r]);
    CHECK_MSG(counter_.live == 0, "%ld allocations live after destroy", counter_.live);
    sbn_set_allocator(NULL, NULL, NULL);
}

/* Rank 1 cannot grow its scratch: it returns OOM, the others PEER_FAILED naming it. */
static void rank_scratch_oom(tsup_rank *c)
{
    double v[64] = {0};
    if (c->rank == 1) tsup_counter_fail_this_thread(1);
    if (c->rank == 1) {
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 64, 0), SBN_ERR_OUT_OF_MEMORY);
        RHAS(c, "scratch");
        return;
    }
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 64, 0), SBN_ERR_PEER_FAILED);
    RHAS(c, "rank 1 (SBN_ERR_OUT_OF_MEMORY)");
}

/* After the first allreduce of n values, no further allocation for n or fewer. */
static void rank_steady(tsup_rank *c)
{
    double v[64];
    long before;
    int k;
    size_t i;
    for (i = 0; i < 64; i++) v[i] = 1.0;
    RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, 64, 0), SBN_OK);
    RSTATUS(c, sbn_comm_barrier(c->comm), SBN_OK);
    before = counter_.calls;
    for (k = 0; k < 20; k++) {
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, v, (size_t)(k * 3 % 65), 0), SBN_OK);
        RSTATUS(c, sbn_comm_allgather(c->comm, v, 1, v + 32, 0), SBN_OK);
    }
    RSTATUS(c, sbn_comm_barrier(c->comm), SBN_OK);
    RCHECK(c, counter_.calls == before, "%ld allocations in steady state", counter_.calls - before);
}

static void scratch_allocation(void)
{
    tsup_counter_install(&counter_);
    counter_.fail_at = 0;
    if (tsup_run_world(3, TIMEOUT, rank_scratch_oom, NULL) == 0)
        tsup_run_world(3, TIMEOUT, rank_steady, NULL);
    CHECK_MSG(counter_.live == 0, "%ld allocations live", counter_.live);
    sbn_set_allocator(NULL, NULL, NULL);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(allgather_results),
    SBN_TEST_CASE(allreduce_bits),
    SBN_TEST_CASE(many_collectives),
    SBN_TEST_CASE(barrier_orders),
    SBN_TEST_CASE(single_rank_world),
    SBN_TEST_CASE(mismatch_count),
    SBN_TEST_CASE(mismatch_tag),
    SBN_TEST_CASE(mismatch_op),
    SBN_TEST_CASE(skipped_call_times_out),
    SBN_TEST_CASE(destroyed_handle_breaks_world),
    SBN_TEST_CASE(env_timeout_is_the_default),
    SBN_TEST_CASE(env_timeout_bad_values),
    SBN_TEST_CASE(skipped_step_is_a_mismatch),
    SBN_TEST_CASE(set_step_argument),
    SBN_TEST_CASE(fail_one_rank),
    SBN_TEST_CASE(fail_two_ranks),
    SBN_TEST_CASE(fail_keeps_sentence),
    SBN_TEST_CASE(argument_errors_in_world),
    SBN_TEST_CASE(argument_errors),
    SBN_TEST_CASE(create_out_of_memory),
    SBN_TEST_CASE(scratch_allocation),
};

SBN_TEST_MAIN(k_cases)
