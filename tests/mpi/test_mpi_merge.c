/*
 * test_mpi_merge.c - sbn_comm_allreduce_merge and sbn_comm_traffic on the MPI
 * backend, run by ctest under mpirun -np 2, 3 and 4, and again with each of Open
 * MPI's libnbc MPI_Iallreduce algorithms forced (the merge allreduce is an
 * MPI_Iallreduce with a user op, which libnbc serves; coll_tuned's dynamic rules
 * only cover the blocking MPI_Allreduce, so they do not apply):
 *   --mca coll_libnbc_iallreduce_algorithm 1: ring (segments of count / p, each
 *       merged along the ring: the merge sees partial element ranges),
 *   2: binomial (reduce to rank 0 up a binomial tree, then broadcast),
 *   3: rabenseifner (reduce-scatter + allgather; libnbc takes it only when count
 *       >= the largest power of two <= p, else it runs the ring),
 *   4: recursive doubling.
 * Unforced (0), libnbc picks binomial for p < 4 or fewer than 65536 bytes and
 * rabenseifner above that, so the 1500 x 56-byte case at np 4 runs rabenseifner.
 * rank 0 prints the algorithm asked for and how often the merge was called, so the
 * runs show different schedules. The same checks pass under each: every rank's
 * bytes equal the serial merge of all ranks' inputs for counts 0, 1, 7, 1000 and
 * 1500 and elem_bytes 8, 24 and 56 (the exact merge of test_comm_merge.c: words
 * summed, maxed, xored and counted), on MPI_COMM_WORLD and on a reversed
 * subcommunicator alive at the same time; traffic per rank (header: W - 1
 * messages of 56 bytes each way; payload: count * elem_bytes each way);
 * disagreements on count, elem_bytes and tag giving SBN_ERR_COMM_MISMATCH
 * everywhere; sbn_comm_fail giving SBN_ERR_PEER_FAILED; argument errors (also
 * MPI's int limit); no allocation of syncbn left live; and, last (a broken handle
 * leaks by design), a rank that never arrives giving SBN_ERR_TIMEOUT after 1 s
 * on its peers and at once on itself, and a rank stalled inside MPI's reduction
 * (a merge that sleeps) making the MPI_Iallreduce itself time out.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_cases.h"
#include "support/alloc_counter.h"
#include "support/merge_words.h"
#include "syncbn/comm_mpi.h"

#define HEADER 56
#define TOKEN_TAG 78

/* ---- the exact merge of support/merge_words.h, with call counters ---- */

static long g_merge_calls, g_merge_elems;
static double g_slow_merge; /* seconds the next merge call sleeps first (merge_slow_peer) */

/* The shared test merge (support/merge_words.h), counted, and slowed when asked. */
static void merge_words(void *inout, const void *in, size_t count, size_t words)
{
    if (g_slow_merge > 0) {
        struct timespec ts = {(time_t)g_slow_merge, 0};
        g_slow_merge = 0;
        nanosleep(&ts, NULL);
    }
    g_merge_calls++;
    g_merge_elems += (long)count;
    mw_merge(inout, in, count, words);
}

static void merge8(void *inout, const void *in, size_t n) { merge_words(inout, in, n, 1); }
static void merge24(void *inout, const void *in, size_t n) { merge_words(inout, in, n, 3); }
static void merge56(void *inout, const void *in, size_t n) { merge_words(inout, in, n, 7); }

static sbn_comm_merge_fn merge_for(size_t elem)
{
    return elem == 8 ? merge8 : elem == 24 ? merge24 : merge56;
}


/* ((in_0 (+) in_1) (+) ...) (+) in_{size-1}, into want. */
static void serial_merge(unsigned char *want, int size, size_t count, size_t elem, uint64_t salt)
{
    unsigned char *in = malloc(count * elem + 1);
    int r;
    mw_fill_input(want, 0, count, elem, salt);
    for (r = 1; r < size; r++) {
        mw_fill_input(in, r, count, elem, salt);
        merge_words(want, in, count, elem / 8);
    }
    free(in);
}

/* ---- cases ---- */

static const size_t counts_[] = {0, 1, 7, 1000, 1500};
static const size_t elems_[] = {8, 24, 56};

/* Every count and elem_bytes on one handle; inputs by the handle's rank. */
static void check_results(sbn_comm_t *comm, const char *what)
{
    int rank = sbn_comm_rank(comm), size = sbn_comm_size(comm);
    unsigned char *buf = malloc(1500 * 56), *want = malloc(1500 * 56);
    size_t k, e;
    for (k = 0; k < sizeof counts_ / sizeof counts_[0]; k++) {
        for (e = 0; e < 3; e++) {
            size_t n = counts_[k], elem = elems_[e];
            uint64_t salt = 10 * k + e;
            serial_merge(want, size, n, elem, salt);
            mw_fill_input(buf, rank, n, elem, salt);
            EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, n, elem, merge_for(elem),
                                                   (int64_t)salt), SBN_OK);
            EXPECT(n == 0 || memcmp(buf, want, n * elem) == 0, "%s, count %zu, elem_bytes %zu: "
                   "the result differs from the serial merge", what, n, elem);
        }
    }
    free(buf);
    free(want);
}

static void merge_results(void)
{
    sbn_comm_t *world = NULL, *reversed = NULL;
    MPI_Comm rev;
    const char *alg = getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
    long calls, elems, total_calls = 0;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -g_rank, &rev);
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &world), SBN_OK);
    EXPECT_STATUS(sbn_comm_mpi_create(rev, &reversed), SBN_OK);
    EXPECT(sbn_comm_rank(reversed) == g_size - 1 - g_rank, "reversed rank %d",
           sbn_comm_rank(reversed));
    calls = g_merge_calls;
    elems = g_merge_elems;
    if (world && reversed) {
        check_results(world, "MPI_COMM_WORLD");
        check_results(reversed, "reversed");
    }
    /* The serial merges of the check count too: report only the library's calls. */
    calls = g_merge_calls - calls;
    elems = g_merge_elems - elems;
    {
        long serial_calls = 2 * 15 * (g_size - 1), library = calls - serial_calls;
        MPI_Allreduce(&library, &total_calls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (g_rank == 0)
            printf("    libnbc iallreduce algorithm %s: rank 0 merged %ld times, all ranks %ld "
                   "times (%ld elements on rank 0 with the serial checks)\n",
                   alg ? alg : "0 (unforced)", library, total_calls, elems);
    }
    sbn_comm_destroy(reversed);
    sbn_comm_destroy(world);
    MPI_Comm_free(&rev);
}

static void merge_traffic(void)
{
    sbn_comm_t *comm = NULL;
    unsigned char buf[64 * 56];
    uint64_t s0, r0, s1, r1, s2, r2, block = 64 * 56;
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    mw_fill_input(buf, g_rank, 64, 56, 1);
    sbn_comm_traffic(comm, &s0, &r0);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, NULL, 0, 56, merge56, 0), SBN_OK);
    sbn_comm_traffic(comm, &s1, &r1);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 64, 56, merge56, 0), SBN_OK);
    sbn_comm_traffic(comm, &s2, &r2);
    EXPECT(s1 - s0 == (uint64_t)(g_size - 1) * HEADER && r1 - r0 == (uint64_t)(g_size - 1) *
           HEADER, "header: %llu sent, %llu received", (unsigned long long)(s1 - s0),
           (unsigned long long)(r1 - r0));
    EXPECT((s2 - s1) - (s1 - s0) == block && (r2 - r1) - (r1 - r0) == block,
           "payload: %llu sent, %llu received", (unsigned long long)((s2 - s1) - (s1 - s0)),
           (unsigned long long)((r2 - r1) - (r1 - r0)));
    if (g_rank == 0)
        printf("    np %d, count 64 x 56 bytes: header %llu B each way, payload %llu B sent, "
               "%llu B received per rank\n", g_size, (unsigned long long)(s1 - s0),
               (unsigned long long)((s2 - s1) - (s1 - s0)),
               (unsigned long long)((r2 - r1) - (r1 - r0)));
    sbn_comm_destroy(comm);
}

static void merge_mismatch(void)
{
    sbn_comm_t *comm = NULL;
    unsigned char buf[9 * 56];
    int last = g_rank == g_size - 1;
    char other[128];
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    mw_fill_input(buf, g_rank, 8, 56, 2);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, last ? 7 : 8, 56, merge56, 3),
                  SBN_ERR_COMM_MISMATCH);
    snprintf(other, sizeof other, "but rank %d called allreduce_merge (count 7, elem_bytes 56, "
             "tag 3, call #1)", g_size - 1);
    EXPECT_HAS("rank 0 called allreduce_merge (count 8, elem_bytes 56, tag 3, call #1)");
    EXPECT_HAS(other);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 8, last ? 24 : 56,
                                           merge_for(last ? 24 : 56), 3), SBN_ERR_COMM_MISMATCH);
    snprintf(other, sizeof other, "but rank %d called allreduce_merge (count 8, elem_bytes 24, "
             "tag 3, call #2)", g_size - 1);
    EXPECT_HAS(other);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 8, 56, merge56, last ? 4 : 3),
                  SBN_ERR_COMM_MISMATCH);
    EXPECT_HAS("tag 4, call #3)");
    /* Not sticky. */
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 8, 56, merge56, 3), SBN_OK);
    sbn_comm_destroy(comm);
}

static void merge_peer_failure(void)
{
    sbn_comm_t *comm = NULL;
    unsigned char buf[4 * 24];
    char who[64];
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    mw_fill_input(buf, g_rank, 4, 24, 3);
    if (g_rank == g_size - 1) {
        EXPECT_STATUS(sbn_comm_fail(comm, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 4, 24, merge24, 0), SBN_ERR_PEER_FAILED);
        snprintf(who, sizeof who, "rank %d (SBN_ERR_BAD_SHAPE)", g_size - 1);
        EXPECT_HAS(who);
    }
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 4, 24, merge24, 0), SBN_ERR_PEER_FAILED);
    sbn_comm_destroy(comm);
}

static void merge_argument_errors(void)
{
    sbn_comm_t *comm = NULL;
    unsigned char buf[8];
    /* Rank 0 passes elem_bytes 0: it gets SBN_ERR_BAD_VALUE, its peers SBN_ERR_PEER_FAILED. */
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    mw_fill_input(buf, g_rank, 1, 8, 4);
    if (g_rank == 0) {
        EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 1, 0, merge8, 0), SBN_ERR_BAD_VALUE);
        EXPECT_HAS("elem_bytes is 0");
    } else {
        EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 1, 8, merge8, 0), SBN_ERR_PEER_FAILED);
        EXPECT_HAS("rank 0 (SBN_ERR_BAD_VALUE)");
    }
    sbn_comm_destroy(comm);
    /* MPI's int count: refused before the header on every rank, nothing read or allocated. */
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, (size_t)INT_MAX + 1, 1, merge8, 0),
                  SBN_ERR_BAD_VALUE);
    EXPECT_HAS("count 2147483648 is above INT_MAX");
    sbn_comm_destroy(comm);
}

/* Every allocation of syncbn is counted (support/alloc_counter.c): none may be live here
 * (registry included). */
static tsup_counter g_counter;

static void install_counter(void)
{
    tsup_counter_install(&g_counter);
}

static void no_allocation_left(void)
{
    long live = atomic_load(&g_counter.live);
    EXPECT(live == 0, "%ld allocations of syncbn are still live", live);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * The last rank skips the merge until rank 0 has timed out (it waits for a
 * token): its peers time out in the header exchange naming it, and its own late
 * call fails at once with their notice. Last: the broken handle leaks by design.
 * "At once" is under half the timeout: told from waiting for it, with room for
 * ranks busy-polling on loaded CPUs.
 */
#define MERGE_TIMEOUT 3.0
static void merge_never_arrives(void)
{
    sbn_comm_t *comm = NULL;
    unsigned char buf[10 * 8];
    int culprit = g_size - 1, token = 1;
    double t0, took;
    char missing[32];
    EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(MPI_COMM_WORLD, MERGE_TIMEOUT, &comm), SBN_OK);
    if (comm == NULL) return;
    mw_fill_input(buf, g_rank, 10, 8, 5);
    t0 = now_seconds();
    if (g_rank != culprit) {
        EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 10, 8, merge8, 0), SBN_ERR_TIMEOUT);
        took = now_seconds() - t0;
        snprintf(missing, sizeof missing, "rank %d missing", culprit);
        EXPECT_HAS(missing);
        EXPECT(took >= 0.9 * MERGE_TIMEOUT && took < MERGE_TIMEOUT + 10.0,
               "timed out after %.3f s with a timeout of %g s", took, MERGE_TIMEOUT);
        if (g_rank == 0) MPI_Send(&token, 1, MPI_INT, culprit, TOKEN_TAG, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, TOKEN_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t0 = now_seconds();
        EXPECT_STATUS(sbn_comm_allreduce_merge(comm, buf, 10, 8, merge8, 0), SBN_ERR_TIMEOUT);
        took = now_seconds() - t0;
        EXPECT(took < 0.5 * MERGE_TIMEOUT, "the late call took %.3f s", took);
        EXPECT_HAS("gave up in its call #1");
    }
    sbn_comm_destroy(comm);
}

/*
 * A rank stalled after the header: rank 0's first merge call sleeps 3 s, under a
 * 1 s timeout, inside MPI's reduction. Which ranks wait for it depends on MPI's
 * algorithm, so a rank may return SBN_OK or SBN_ERR_TIMEOUT (from its own
 * deadline in the MPI_Iallreduce, or from a peer's notice). Under binomial (what
 * libnbc picks unforced for these 128 bytes), ring and rabenseifner every rank's
 * result passes through a merge of rank 0's, so some rank must time out; under
 * recursive doubling maybe nobody waits for rank 0 (np 3 here: nobody did). When
 * some rank timed out, the next collective must fail on every rank at once.
 */
static void merge_slow_peer(void)
{
    sbn_comm_t *comm = NULL;
    const char *alg = getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
    unsigned char buf[16 * 8];
    int timed_out = 0, total = 0, may_all_pass = alg && strcmp(alg, "4") == 0;
    sbn_status s;
    double t0;
    EXPECT_STATUS(sbn_comm_mpi_create_with_timeout(MPI_COMM_WORLD, 1.0, &comm), SBN_OK);
    if (comm == NULL) return;
    mw_fill_input(buf, g_rank, 16, 8, 6);
    if (g_rank == 0) g_slow_merge = 3.0;
    s = sbn_comm_allreduce_merge(comm, buf, 16, 8, merge8, 0);
    g_slow_merge = 0;
    EXPECT(s == SBN_OK || s == SBN_ERR_TIMEOUT, "got %s", sbn_status_name(s));
    if (s == SBN_ERR_TIMEOUT) {
        timed_out = 1;
        EXPECT(strstr(sbn_last_error(), "in the MPI_Iallreduce of an allreduce_merge") != NULL,
               "the sentence does not say where it timed out");
    }
    MPI_Allreduce(&timed_out, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("    a merge stalled 3 s on rank 0 (timeout 1 s): %d of %d ranks timed out\n", total,
               g_size);
    EXPECT(total > 0 || may_all_pass, "no rank timed out");
    if (total > 0) {
        t0 = now_seconds();
        s = sbn_comm_barrier(comm);
        EXPECT(s == SBN_ERR_TIMEOUT, "the next collective returned %s", sbn_status_name(s));
        EXPECT(now_seconds() - t0 < 1.5, "the next collective took %.3f s", now_seconds() - t0);
    }
    sbn_comm_destroy(comm);
}

int main(int argc, char **argv)
{
    static const mpi_case cases[] = {
        {"merge_results", merge_results},
        {"merge_traffic", merge_traffic},
        {"merge_mismatch", merge_mismatch},
        {"merge_peer_failure", merge_peer_failure},
        {"merge_argument_errors", merge_argument_errors},
        {"no_allocation_left", no_allocation_left},
        {"merge_never_arrives", merge_never_arrives},
        {"merge_slow_peer", merge_slow_peer},
    };
    return mpi_run_cases(&argc, &argv, cases, (int)(sizeof cases / sizeof cases[0]),
                         install_counter);
}
