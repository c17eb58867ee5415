/*
 * test_mpi_faults.c - the MPI backend when a rank misbehaves, run by ctest under
 * mpirun -np 2 and 3 with SBN_COMM_TIMEOUT=3. The last rank is the culprit: it
 * stops calling (it blocks on MPI_COMM_WORLD until rank 0 has timed out), leaves
 * the loop early and destroys its handle, or skips a whole step. The others must
 * get SBN_ERR_TIMEOUT naming it within a generous bound (the timeout plus 10 s),
 * the culprit's late call must fail at once with the same story, later calls on
 * the broken handle must fail at once, and a skipped step must give
 * SBN_ERR_COMM_MISMATCH on every rank in the very collective where the steps
 * first differ (sbn_comm_set_step). Also: the explicit timeout argument wins over
 * the environment, bad SBN_COMM_TIMEOUT values fail creation with
 * SBN_ERR_BAD_VALUE, and a rank that does not take part in creation makes the
 * others' creation time out. Every rank leaves every case normally, so the run
 * ends with MPI_Finalize and an ordinary exit status.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_cases.h"
#include "support/env_now.h"
#include "syncbn/comm_mpi.h"

#define ENV_TIMEOUT 3.0        /* what ctest puts in SBN_COMM_TIMEOUT */
#define GENEROUS_BOUND 10.0    /* seconds over the timeout that still count as "within" */
#define AT_ONCE 1.5 /* a failure "at once": half ENV_TIMEOUT, so it is told from waiting for the
                     * timeout, with room for 3 ranks busy-polling on 2 loaded CPUs */
#define TOKEN_TAG 77

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int culprit(void)
{
    return g_size - 1;
}

/* Rank 0 tells the culprit it has timed out; the culprit waits for that. */
static void token_to_culprit(void)
{
    int token = 1;
    if (g_rank == 0) MPI_Send(&token, 1, MPI_INT, culprit(), TOKEN_TAG, MPI_COMM_WORLD);
}

static void wait_for_token(void)
{
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, 0, TOKEN_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/*
 * Everyone but the culprit calls an allreduce and must time out after about
 * `timeout` seconds naming the culprit; the culprit calls it only after rank 0
 * has timed out and must fail at once. Then every rank's next call fails at once.
 */
static void stopped_peer(sbn_comm_t *comm, double timeout)
{
    double v[4] = {1, 2, 3, 4}, t0, took;
    char missing[64], seconds[64];
    if (comm == NULL) return;
    snprintf(missing, sizeof missing, "rank %d missing", culprit());
    snprintf(seconds, sizeof seconds, "timed out after %g s", timeout);
    if (g_rank != culprit()) {
        t0 = now_seconds();
        EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 7), SBN_ERR_TIMEOUT);
        took = now_seconds() - t0;
        EXPECT(took >= 0.9 * timeout && took < timeout + GENEROUS_BOUND,
               "timed out after %.3f s with a timeout of %g s", took, timeout);
        EXPECT_HAS(missing);
        EXPECT_HAS(seconds);
        if (g_rank == 0) printf("    rank 0: SBN_ERR_TIMEOUT after %.3f s (timeout %g s)\n", took,
                                timeout);
        token_to_culprit();
    } else {
        wait_for_token();
        t0 = now_seconds();
        EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 7), SBN_ERR_TIMEOUT);
        took = now_seconds() - t0;
        EXPECT(took < AT_ONCE, "the late call took %.3f s", took);
        EXPECT_HAS("gave up"); /* rank 0, or another rank that timed out first */
        EXPECT_HAS(missing);
    }
    /* The handle is broken on every rank: the next collective fails at once. */
    t0 = now_seconds();
    EXPECT_STATUS(sbn_comm_barrier(comm), SBN_ERR_TIMEOUT);
    EXPECT(now_seconds() - t0 < AT_ONCE, "a collective on a broken handle took %.3f s",
           now_seconds() - t0);
    EXPECT_HAS("broken before this collective");
}

/* A peer that stops calling, with the default timeout (SBN_COMM_TIMEOUT from ctest). */
static void stopped_peer_times_out(void)
{
    sbn_comm_t *comm = NULL;
    double v = 1.0;
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    /* A first collective that everyone makes. */
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, &v, 1, 0), SBN_OK);
    EXPECT(v == (double)g_size, "sum %g", v);
    stopped_peer(comm, ENV_TIMEOUT);
    sbn_comm_destroy(comm);
}

/* The explicit argument wins over SBN_COMM_TIMEOUT. */
static void explicit_timeout_wins(void)
{
    sbn_comm_t *comm = NULL;
    EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(MPI_COMM_WORLD, 0.5, &comm), SBN_OK);
    stopped_peer(comm, 0.5);
    sbn_comm_destroy(comm);
}

/*
 * Steps of one allgather and one allreduce (as the layer's forward and backward);
 * the culprit leaves after `culprit_steps` steps and destroys its handle.
 */
static void peer_leaves_early(void)
{
    sbn_comm_t *comm = NULL;
    double send[3], recv[3 * TSUP_MPI_MAX_PROCS], t0 = 0.0, took;
    int steps = 4, mine = g_rank == culprit() ? 2 : steps, step;
    char missing[64];
    sbn_status s = SBN_OK;
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    if (comm == NULL) return;
    for (step = 0; step < mine && s == SBN_OK; step++) {
        send[0] = send[1] = send[2] = (double)step;
        t0 = now_seconds();
        s = sbn_comm_allgather(comm, send, 3, recv, 3);
        if (s == SBN_OK) s = sbn_comm_allreduce_sum(comm, send, 3, 2);
    }
    took = now_seconds() - t0;
    if (g_rank == culprit()) {
        EXPECT_STATUS_OF(s, SBN_OK, "the culprit's steps");
    } else {
        EXPECT_STATUS_OF(s, SBN_ERR_TIMEOUT, "the step after the culprit left");
        EXPECT(step == 3, "the failure came in step %d, expected step 2", step - 1);
        snprintf(missing, sizeof missing, "rank %d missing", culprit());
        EXPECT_HAS(missing);
        EXPECT(took < ENV_TIMEOUT + GENEROUS_BOUND, "the timeout took %.3f s", took);
    }
    sbn_comm_destroy(comm);
}

/*
 * Every rank declares its step; the culprit skips step 2. Every rank must get
 * SBN_ERR_COMM_MISMATCH at once in the first collective of that step.
 */
static void skipped_step_reported_at_once(void)
{
    sbn_comm_t *comm = NULL;
    double send[3], recv[3 * TSUP_MPI_MAX_PROCS], t0 = 0.0;
    int step, failed_at = -1;
    char want[96];
    sbn_status s = SBN_OK;
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    if (comm == NULL) return;
    for (step = 0; step < 5; step++) {
        if (g_rank == culprit() && step == 2) continue;
        EXPECT_STATUS(sbn_comm_set_step(comm, step), SBN_OK);
        send[0] = send[1] = send[2] = (double)step;
        t0 = now_seconds();
        s = sbn_comm_allgather(comm, send, 3, recv, 3);
        if (s == SBN_OK) s = sbn_comm_allreduce_sum(comm, send, 3, 2);
        if (s != SBN_OK) {
            failed_at = step;
            break;
        }
    }
    EXPECT_STATUS_OF(s, SBN_ERR_COMM_MISMATCH, "the collective after the skip");
    EXPECT(now_seconds() - t0 < AT_ONCE, "the mismatch took %.3f s", now_seconds() - t0);
    EXPECT(failed_at == (g_rank == culprit() ? 3 : 2), "reported in step %d", failed_at);
    snprintf(want, sizeof want, "rank 0 is at step 2 but rank %d is at step 3", culprit());
    EXPECT_HAS(want);
    EXPECT_HAS("skipped or repeated a step");
    /* Not sticky: once the ranks agree again, the handle works. */
    EXPECT_STATUS(sbn_comm_set_step(comm, 100), SBN_OK);
    send[0] = 1.0;
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, send, 1, 0), SBN_OK);
    EXPECT(send[0] == (double)g_size, "sum %g", send[0]);
    sbn_comm_destroy(comm);
}

/* Bad SBN_COMM_TIMEOUT values fail creation on every rank before any communication. */
static void bad_environment_values(void)
{
    static const char *const bad[] = {"abc", "-1", "0", "nan", "5s", "-inf", " "};
    sbn_comm_t *comm = NULL;
    double v = 1.0;
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tsup_setenv_now("SBN_COMM_TIMEOUT", bad[k]);
        if (k + 1 == sizeof bad / sizeof bad[0]) {
            /* Blank means unset: the default 60 s, and creation works. */
            EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
            EXPECT_STATUS(sbn_comm_allreduce_sum(comm, &v, 1, 0), SBN_OK);
            sbn_comm_destroy(comm);
            comm = NULL;
            continue;
        }
        EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_ERR_BAD_VALUE);
        EXPECT_HAS("SBN_COMM_TIMEOUT");
        EXPECT(comm == NULL, "out set on failure");
        /* The explicit argument does not read the environment. */
        EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(MPI_COMM_WORLD, 5.0, &comm), SBN_OK);
        sbn_comm_destroy(comm);
        comm = NULL;
    }
    tsup_setenv_now("SBN_COMM_TIMEOUT", "2");
}

/*
 * Creation is collective: when the culprit does not take part (yet), the others'
 * creation times out; the culprit's own creation later completes the duplicate.
 */
static void creation_times_out(void)
{
    MPI_Comm sub;
    sbn_comm_t *comm = NULL;
    double t0, took;
    MPI_Comm_dup(MPI_COMM_WORLD, &sub);
    if (g_rank != culprit()) {
        t0 = now_seconds();
        EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(sub, 0.5, &comm), SBN_ERR_TIMEOUT);
        took = now_seconds() - t0;
        EXPECT(comm == NULL, "out set on failure");
        EXPECT_HAS("creation is collective");
        EXPECT(took >= 0.45 && took < 0.5 + GENEROUS_BOUND, "creation timed out after %.3f s",
               took);
        token_to_culprit();
        /*
         * MPI keeps the timed-out duplication and progresses it on `sub` when the
         * culprit arrives: as comm_mpi.h says, `sub` must stay alive (it is left
         * to MPI_Finalize here).
         */
    } else {
        wait_for_token();
        EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(sub, 30.0, &comm), SBN_OK);
        sbn_comm_destroy(comm);
        MPI_Comm_free(&sub);
    }
}

int main(int argc, char **argv)
{
    static const mpi_case cases[] = {
        {"stopped_peer_times_out", stopped_peer_times_out},
        {"explicit_timeout_wins", explicit_timeout_wins},
        {"peer_leaves_early", peer_leaves_early},
        {"skipped_step_reported_at_once", skipped_step_reported_at_once},
        {"bad_environment_values", bad_environment_values},
        {"creation_times_out", creation_times_out},
    };
    return mpi_run_cases(&argc, &argv, cases, (int)(sizeof cases / sizeof cases[0]), NULL);
}
