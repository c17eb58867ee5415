/*
 * test_mpi_comm.c - the MPI backend, run under mpirun with 2, 3 or 4 processes.
 * No fork harness here (forking under MPI is unsafe): the cases run one after the
 * other in every process and count their failures; the counts are summed over the
 * world with MPI_Allreduce and rank 0 prints "N passed, N failed". Covered:
 * handles from MPI_COMM_WORLD and from MPI_Comm_split subgroups (ranks and sizes
 * of the subgroup), allgather and allreduce results (the allreduce bitwise equal
 * to the rank-order sum), the duplicate communicator keeping the caller's own
 * pending messages apart, a rank-dependent count giving SBN_ERR_COMM_MISMATCH on
 * every rank, sbn_comm_fail giving SBN_ERR_PEER_FAILED on the peers, argument
 * errors, and no allocation of syncbn left live (counted through the allocator
 * hook, since LeakSanitizer cannot run on Open MPI).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/values.h"
#include "mpi_cases.h"
#include "syncbn/comm_mpi.h"

/* Allgather and allreduce over `comm`, whose ranks are mapped to `ids` (world ranks). */
static void check_collectives(sbn_comm_t *comm, const int *ids)
{
    static const size_t counts[] = {0, 1, 7, 1000};
    int rank = sbn_comm_rank(comm), size = sbn_comm_size(comm), k, r;
    if (comm == NULL) return; /* creation failed everywhere: already reported */
    for (k = 0; k < 4; k++) {
        size_t n = counts[k], i;
        double *send = malloc((n + 1) * sizeof *send);
        double *recv = malloc((n * (size_t)size + 1) * sizeof *recv);
        for (i = 0; i < n; i++) send[i] = tsup_spread_value(ids[rank], i, k);
        EXPECT_STATUS(sbn_comm_allgather(comm, send, n, recv, (int64_t)n), SBN_OK);
        for (r = 0; r < size; r++)
            for (i = 0; i < n; i++)
                if (recv[(size_t)r * n + i] != tsup_spread_value(ids[r], i, k)) {
                    EXPECT(0, "count %zu: recv[%d][%zu] differs", n, r, i);
                    break;
                }
        EXPECT_STATUS(sbn_comm_allreduce_sum(comm, send, n, 5), SBN_OK);
        for (i = 0; i < n; i++) {
            double want = tsup_spread_value(ids[0], i, k);
            for (r = 1; r < size; r++) want += tsup_spread_value(ids[r], i, k);
            if (memcmp(&want, &send[i], sizeof want) != 0) {
                EXPECT(0, "count %zu: sum[%zu] = %.17g, rank-order sum %.17g", n, i, send[i], want);
                break;
            }
        }
        free(send);
        free(recv);
    }
    EXPECT_STATUS(sbn_comm_barrier(comm), SBN_OK);
}

static void world_collectives(void)
{
    sbn_comm_t *comm = NULL;
    int size, ids[TSUP_MPI_MAX_PROCS], r;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    EXPECT(sbn_comm_rank(comm) == g_rank && sbn_comm_size(comm) == size, "rank %d size %d",
           sbn_comm_rank(comm), sbn_comm_size(comm));
    for (r = 0; r < size; r++) ids[r] = r;
    check_collectives(comm, ids);
    sbn_comm_destroy(comm);
}

/* Two subgroups (even and odd world ranks), each in reverse order. */
static void subgroup_collectives(void)
{
    MPI_Comm sub;
    sbn_comm_t *comm = NULL;
    int size, sub_rank, sub_size, ids[TSUP_MPI_MAX_PROCS], r;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &sub);
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);
    EXPECT_STATUS(sbn_comm_mpi_create(sub, &comm), SBN_OK);
    EXPECT(sbn_comm_rank(comm) == sub_rank && sbn_comm_size(comm) == sub_size,
           "rank %d size %d in a subgroup of %d", sbn_comm_rank(comm), sbn_comm_size(comm),
           sub_size);
    /* Subgroup rank r is the world rank with the same parity, r-th from the top. */
    for (r = 0; r < sub_size; r++) {
        int top = (size - 1) - ((size - 1 - g_rank % 2) % 2);
        ids[r] = top - 2 * r;
    }
    EXPECT(ids[sub_rank] == g_rank, "subgroup rank %d is world rank %d, expected %d", sub_rank,
           g_rank, ids[sub_rank]);
    check_collectives(comm, ids);
    sbn_comm_destroy(comm);
    MPI_Comm_free(&sub);
}

/*
 * A message the caller left pending on MPI_COMM_WORLD is not consumed by syncbn,
 * and the caller's error handler is left alone.
 */
static void traffic_kept_apart(void)
{
    sbn_comm_t *comm = NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Errhandler handler;
    int size, token = 4242, got = 0;
    double v = 1.0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    if (g_rank == 0) MPI_Isend(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, &req);
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, &v, 1, 0), SBN_OK);
    EXPECT(v == (double)size, "sum %g", v);
    EXPECT_STATUS(sbn_comm_barrier(comm), SBN_OK);
    if (g_rank == size - 1) {
        MPI_Recv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        EXPECT(got == 4242, "received %d", got);
    }
    if (g_rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
    /* MPI_ERRORS_RETURN went on the duplicate: the caller's handler is unchanged. */
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
    EXPECT(handler == MPI_ERRORS_ARE_FATAL, "the caller's error handler was changed");
    MPI_Errhandler_free(&handler);
    sbn_comm_destroy(comm);
}

static void mismatch_everywhere(void)
{
    sbn_comm_t *comm = NULL;
    int size;
    double v[16] = {0};
    char other[96];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 10 + (g_rank == size - 1), 3),
                  SBN_ERR_COMM_MISMATCH);
    EXPECT_HAS("rank 0 called allreduce (count 10, tag 3, call #1)");
    snprintf(other, sizeof other, "rank %d called allreduce (count 11, tag 3, call #1)", size - 1);
    EXPECT_HAS(other);
    /* Not sticky: the handle still works. */
    v[0] = 2.0;
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 1, 0), SBN_OK);
    EXPECT(v[0] == 2.0 * size, "sum %g", v[0]);
    /* An op disagreement. */
    if (g_rank == 1)
        EXPECT_STATUS(sbn_comm_barrier(comm), SBN_ERR_COMM_MISMATCH);
    else
        EXPECT_STATUS(sbn_comm_allgather(comm, v, 1, v + 8, 0), SBN_ERR_COMM_MISMATCH);
    EXPECT_HAS("but rank 1 called barrier (count 0, tag 0, call #3)");
    sbn_comm_destroy(comm);
}

static void peer_failure(void)
{
    sbn_comm_t *comm = NULL;
    int size;
    double v[4] = {1, 2, 3, 4};
    char who[64];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 1), SBN_OK);
    if (g_rank == size - 1) {
        EXPECT_STATUS(sbn_comm_fail(comm, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        EXPECT_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 1), SBN_ERR_PEER_FAILED);
        snprintf(who, sizeof who, "rank %d (SBN_ERR_BAD_SHAPE)", size - 1);
        EXPECT_HAS(who);
    }
    /* Sticky on every rank alike, so nobody waits for a collective that will not happen. */
    EXPECT_STATUS(sbn_comm_barrier(comm), SBN_ERR_PEER_FAILED);
    sbn_comm_destroy(comm);
}

static void argument_errors(void)
{
    sbn_comm_t *comm = NULL;
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_NULL, &comm), SBN_ERR_NULL_ARGUMENT);
    EXPECT(comm == NULL, "out set on failure");
    EXPECT_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, NULL), SBN_ERR_NULL_ARGUMENT);
}

/* Every allocation of syncbn is counted: none may be live after the cases. */
static long g_live;

static void *counting_malloc(size_t bytes, void *user)
{
    void *p = malloc(bytes);
    (void)user;
    if (p) g_live++;
    return p;
}

static void counting_free(void *p, void *user)
{
    (void)user;
    if (p) g_live--;
    free(p);
}

static void no_allocation_left(void)
{
    EXPECT(g_live == 0, "%ld allocations of syncbn are still live", g_live);
}

static void install_counter(void)
{
    sbn_set_allocator(counting_malloc, counting_free, NULL);
}

int main(int argc, char **argv)
{
    static const mpi_case cases[] = {
        {"world_collectives", world_collectives},
        {"subgroup_collectives", subgroup_collectives},
        {"traffic_kept_apart", traffic_kept_apart},
        {"mismatch_everywhere", mismatch_everywhere},
        {"peer_failure", peer_failure},
        {"argument_errors", argument_errors},
        {"no_allocation_left", no_allocation_left},
    };
    return mpi_run_cases(&argc, &argv, cases, (int)(sizeof cases / sizeof cases[0]),
                         install_counter);
}
