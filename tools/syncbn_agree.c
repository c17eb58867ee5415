/*
 * syncbn_agree.c - the MPI ranks of the `syncbn` command agree through the library's
 * timed, header-checked collectives on one communicator of their own (syncbn_agree.h).
 * Flags are compared by a 64-bit FNV-1a hash of their normalized text, sent as two
 * 32-bit halves in doubles (exact), gathered from every rank; counts and broadcasts
 * are sums of doubles. A collective that fails here means the ranks no longer run the
 * same program or MPI lost one of them: the command prints the library's sentence and
 * calls MPI_Abort rather than risk another call that could wait forever. Without MPI
 * the functions are never called; they keep their single-rank meaning.
 */
#include "syncbn_agree.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SBN_HAVE_MPI
#include <mpi.h>

#include "syncbn/comm_mpi.h"

#define AGREE_TAG_FLAGS 0x466c /* the tags of this communicator's collectives */
#define AGREE_TAG_COUNT 0x436e
#define AGREE_TAG_SUM 0x5375

static sbn_comm_t *g_comm;

/* Prints what failed and ends the job: nothing more may be waited for. */
static void give_up(const char *what)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "syncbn: rank %d: %s: %s; ending the job (MPI_Abort)\n", rank, what,
            sbn_last_error());
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached: MPI_Abort does not return */
}

void agree_open(void)
{
    if (sbn_comm_mpi_create(MPI_COMM_WORLD, &g_comm) != SBN_OK)
        give_up("the command's communicator was not created");
}

void agree_close(void)
{
    sbn_comm_destroy(g_comm);
    g_comm = NULL;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
    return h;
}

int agree_same_flags(const char *flags, const char *shown)
{
    uint64_t h = fnv(flags);
    double mine[2] = {(double)(h >> 32), (double)(h & 0xffffffffu)}, *all;
    int rank = sbn_comm_rank(g_comm), size = sbn_comm_size(g_comm), r, differ = 0;
    all = calloc((size_t)size * 2, sizeof *all);
    if (all == NULL) {
        fprintf(stderr, "syncbn: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (sbn_comm_allgather(g_comm, mine, 2, all, AGREE_TAG_FLAGS) != SBN_OK)
        give_up("the ranks could not compare their flags");
    for (r = 1; r < size; r++) differ += all[2 * r] != all[0] || all[2 * r + 1] != all[1];
    if (differ > 0 && rank == 0) { /* one write: the other ranks' lines must not cut into it */
        char line[1024];
        size_t n = (size_t)snprintf(line, sizeof line,
                                    "syncbn: the MPI processes were started with different flags; "
                                    "every process must run the same command with the same flags "
                                    "(--threads may differ). Rank 0 runs: %s. Ranks that differ:",
                                    shown);
        for (r = 1; r < size && n + 16 < sizeof line; r++)
            if (all[2 * r] != all[0] || all[2 * r + 1] != all[1])
                n += (size_t)snprintf(line + n, sizeof line - n, " %d", r);
        fprintf(stderr, "%s\n", line);
    }
    if (differ > 0 && rank != 0 && (all[2 * rank] != all[0] || all[2 * rank + 1] != all[1]))
        fprintf(stderr, "syncbn: rank %d runs: %s (not rank 0's flags)\n", rank, shown);
    free(all);
    return differ == 0;
}

int agree_count(int failed, sbn_status status)
{
    double v[2] = {failed != 0, status == SBN_ERR_TIMEOUT || status == SBN_ERR_COMM};
    if (sbn_comm_allreduce_sum(g_comm, v, 2, AGREE_TAG_COUNT) != SBN_OK)
        give_up("the ranks could not agree on the outcome of the run");
    if (v[1] > 0) {
        if (sbn_comm_rank(g_comm) == 0)
            fprintf(stderr, "syncbn: the run timed out or lost MPI on %.0f of %d ranks; MPI may "
                            "still own its messages, so the job ends here (MPI_Abort)\n",
                    v[1], sbn_comm_size(g_comm));
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return (int)v[0];
}

void agree_sum(double *values, size_t count)
{
    if (sbn_comm_allreduce_sum(g_comm, values, count, AGREE_TAG_SUM) != SBN_OK)
        give_up("the ranks could not exchange their results");
}

#else /* no MPI: one rank, which agrees with itself */

void agree_open(void) {}
void agree_close(void) {}

int agree_same_flags(const char *flags, const char *shown)
{
    (void)flags, (void)shown;
    return 1;
}

int agree_count(int failed, sbn_status status)
{
    (void)status;
    return failed != 0;
}

void agree_sum(double *values, size_t count)
{
    (void)values, (void)count;
}

#endif
