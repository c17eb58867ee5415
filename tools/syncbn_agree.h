/*
 * syncbn_agree.h - how the ranks of `syncbn demo|verify --backend mpi` agree with one
 * another. The command's own collectives go through one library communicator over
 * MPI_COMM_WORLD (sbn_comm_mpi_create: every collective waits at most its timeout and
 * checks that the ranks made the same call), never through raw MPI collectives, which
 * wait forever for a rank that took another path. Right after MPI_Init the ranks
 * compare their flags (a rank started with other flags would make other collectives);
 * after each run they count the ranks whose run failed before anything depends on it,
 * so that every rank skips or stops alike. When one of these collectives fails, or a
 * rank's run timed out or lost MPI (MPI may still own its messages), the command
 * prints why and ends the job with MPI_Abort, as the README advises after a timeout.
 */
#ifndef SYNCBN_TOOLS_AGREE_H
#define SYNCBN_TOOLS_AGREE_H

#include <stddef.h>

#include "syncbn/comm.h"

/* After MPI_Init: creates the command's communicator. */
void agree_open(void);
/* Before MPI_Finalize. */
void agree_close(void);

/*
 * 1 when every rank's flags (`flags`, the normalized text of its options) are rank 0's;
 * else prints on rank 0 which ranks differ and on each of those its flags (`shown`),
 * and returns 0 on every rank.
 */
int agree_same_flags(const char *flags, const char *shown);

/*
 * The number of ranks that pass `failed` != 0, the same on every rank. `status` is this
 * rank's last status: when it is SBN_ERR_TIMEOUT or SBN_ERR_COMM on any rank, the job
 * is ended (MPI_Abort) instead.
 */
int agree_count(int failed, sbn_status status);

/* Sums `count` doubles over the ranks, in place (rank 0's alone: a broadcast). */
void agree_sum(double *values, size_t count);

#endif /* SYNCBN_TOOLS_AGREE_H */
