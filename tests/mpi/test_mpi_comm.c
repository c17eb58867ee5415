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

#include "syncbn/comm_mpi.h"

#define MAX_PROCS 64

static int g_rank; /* in MPI_COMM_WORLD */
static int g_failures;

/*
 * Checks record the failure and carry on: every rank must keep making the same
 * sequence of collectives, or a failure on one rank would leave the others waiting.
 */
#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "    FAIL rank %d, %s:%d: ", g_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, " [%s]\n", sbn_last_error());                            \
            g_failures++;                                                            \
        }                                                                            \
    } while (0)

#define CHECK_STATUS(expr, want)                                                     \
    do {                                                                             \
        sbn_status got_ = (expr);                                                    \
        CHECK(got_ == (want), "%s returned %s, expected %s", #expr,                  \
              sbn_status_name(got_), sbn_status_name(want));                         \
    } while (0)

#define CHECK_HAS(needle) \
    CHECK(strstr(sbn_last_error(), needle) != NULL, "the message lacks \"%s\"", needle)

/* A value that depends on (rank, i, salt), with magnitudes spread so the sum order matters. */
static double value_of(int rank, size_t i, int salt)
{
    uint64_t x = (uint64_t)rank * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull +
                 (uint64_t)salt * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return ldexp((double)(x >> 11) / 9007199254740992.0 - 0.5, (int)(x % 41) - 20);
}

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
        for (i = 0; i < n; i++) send[i] = value_of(ids[rank], i, k);
        CHECK_STATUS(sbn_comm_allgather(comm, send, n, recv, (int64_t)n), SBN_OK);
        for (r = 0; r < size; r++)
            for (i = 0; i < n; i++)
                if (recv[(size_t)r * n + i] != value_of(ids[r], i, k)) {
                    CHECK(0, "count %zu: recv[%d][%zu] differs", n, r, i);
                    break;
                }
        CHECK_STATUS(sbn_comm_allreduce_sum(comm, send, n, 5), SBN_OK);
        for (i = 0; i < n; i++) {
            double want = value_of(ids[0], i, k);
            for (r = 1; r < size; r++) want += value_of(ids[r], i, k);
            if (memcmp(&want, &send[i], sizeof want) != 0) {
                CHECK(0, "count %zu: sum[%zu] = %.17g, rank-order sum %.17g", n, i, send[i],
                       want);
                break;
            }
        }
        free(send);
        free(recv);
    }
    CHECK_STATUS(sbn_comm_barrier(comm), SBN_OK);
}

static void world_collectives(void)
{
    sbn_comm_t *comm = NULL;
    int size, ids[MAX_PROCS], r;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    CHECK(sbn_comm_rank(comm) == g_rank && sbn_comm_size(comm) == size, "rank %d size %d",
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
    int size, sub_rank, sub_size, ids[MAX_PROCS], r;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &sub);
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);
    CHECK_STATUS(sbn_comm_mpi_create(sub, &comm), SBN_OK);
    CHECK(sbn_comm_rank(comm) == sub_rank && sbn_comm_size(comm) == sub_size,
          "rank %d size %d in a subgroup of %d", sbn_comm_rank(comm), sbn_comm_size(comm),
          sub_size);
    /* Subgroup rank r is the world rank with the same parity, r-th from the top. */
    for (r = 0; r < sub_size; r++) {
        int top = (size - 1) - ((size - 1 - g_rank % 2) % 2);
        ids[r] = top - 2 * r;
    }
    CHECK(ids[sub_rank] == g_rank, "subgroup rank %d is world rank %d, expected %d", sub_rank,
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
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    if (g_rank == 0) MPI_Isend(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, &req);
    CHECK_STATUS(sbn_comm_allreduce_sum(comm, &v, 1, 0), SBN_OK);
    CHECK(v == (double)size, "sum %g", v);
    CHECK_STATUS(sbn_comm_barrier(comm), SBN_OK);
    if (g_rank == size - 1) {
        MPI_Recv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == 4242, "received %d", got);
    }
    if (g_rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
    /* MPI_ERRORS_RETURN went on the duplicate: the caller's handler is unchanged. */
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
    CHECK(handler == MPI_ERRORS_ARE_FATAL, "the caller's error handler was changed");
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
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    CHECK_STATUS(sbn_comm_allreduce_sum(comm, v, 10 + (g_rank == size - 1), 3),
                 SBN_ERR_COMM_MISMATCH);
    CHECK_HAS("rank 0 called allreduce (count 10, tag 3, call #1)");
    snprintf(other, sizeof other, "rank %d called allreduce (count 11, tag 3, call #1)", size - 1);
    CHECK_HAS(other);
    /* Not sticky: the handle still works. */
    v[0] = 2.0;
    CHECK_STATUS(sbn_comm_allreduce_sum(comm, v, 1, 0), SBN_OK);
    CHECK(v[0] == 2.0 * size, "sum %g", v[0]);
    /* An op disagreement. */
    if (g_rank == 1)
        CHECK_STATUS(sbn_comm_barrier(comm), SBN_ERR_COMM_MISMATCH);
    else
        CHECK_STATUS(sbn_comm_allgather(comm, v, 1, v + 8, 0), SBN_ERR_COMM_MISMATCH);
    CHECK_HAS("but rank 1 called barrier (count 0, tag 0, call #3)");
    sbn_comm_destroy(comm);
}

static void peer_failure(void)
{
    sbn_comm_t *comm = NULL;
    int size;
    double v[4] = {1, 2, 3, 4};
    char who[64];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK);
    CHECK_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 1), SBN_OK);
    if (g_rank == size - 1) {
        CHECK_STATUS(sbn_comm_fail(comm, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        CHECK_STATUS(sbn_comm_allreduce_sum(comm, v, 4, 1), SBN_ERR_PEER_FAILED);
        snprintf(who, sizeof who, "rank %d (SBN_ERR_BAD_SHAPE)", size - 1);
        CHECK_HAS(who);
    }
    /* Sticky on every rank alike, so nobody waits for a collective that will not happen. */
    CHECK_STATUS(sbn_comm_barrier(comm), SBN_ERR_PEER_FAILED);
    sbn_comm_destroy(comm);
}

static void argument_errors(void)
{
    sbn_comm_t *comm = NULL;
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_NULL, &comm), SBN_ERR_NULL_ARGUMENT);
    CHECK(comm == NULL, "out set on failure");
    CHECK_STATUS(sbn_comm_mpi_create(MPI_COMM_WORLD, NULL), SBN_ERR_NULL_ARGUMENT);
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
    CHECK(g_live == 0, "%ld allocations of syncbn are still live", g_live);
}

typedef struct mpi_case {
    const char *name;
    void (*fn)(void);
} mpi_case;

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
    int k, passed = 0, failed = 0, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAX_PROCS) {
        if (g_rank == 0) fprintf(stderr, "run at most %d processes\n", MAX_PROCS);
        MPI_Finalize();
        return 1;
    }
    sbn_set_allocator(counting_malloc, counting_free, NULL);
    if (g_rank == 0) printf("%s on %d processes\n", argv[0], size);
    for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        int mine, total = 0;
        g_failures = 0;
        cases[k].fn();
        mine = g_failures;
        MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (total == 0)
            passed++;
        else
            failed++;
        if (g_rank == 0) {
            printf("  %s  %s\n", total == 0 ? "ok  " : "FAIL", cases[k].name);
            fflush(stdout);
        }
    }
    if (g_rank == 0) printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
