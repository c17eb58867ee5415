/*
 * comm_mpi.h - the MPI backend of the communicator, built when CMake finds MPI
 * (SBN_HAVE_MPI is then defined for users of the library). The handle works on
 * its own duplicate of the given communicator, so its traffic never mixes with
 * the caller's, and that duplicate returns errors instead of aborting: every MPI
 * error becomes SBN_ERR_COMM with MPI's own error text. MPI must be initialized
 * before creation and the handle destroyed before MPI_Finalize. Creation is
 * collective over `comm` (it duplicates it); any intracommunicator works,
 * MPI_COMM_WORLD or a subgroup from MPI_Comm_split. This is the only syncbn
 * header that includes <mpi.h>.
 *
 * Timeouts: creation and every collective wait at most the handle's timeout (the
 * rule is in comm.h: the argument, else SBN_COMM_TIMEOUT, else 60 s) for the other
 * ranks, then return SBN_ERR_TIMEOUT naming the ranks whose messages had not
 * reached this rank; the peers that were waiting in the same call, and a late rank
 * at its next call, then fail at once with that sentence. After a timeout the
 * handle is broken: every later collective fails at once, and MPI may keep some of
 * the handle's requests for good (MPI cannot take back a message that is half on
 * its way), so the job cannot be trusted to finish its collectives or MPI_Finalize
 * cleanly. An MPI program should then report the error and call
 * MPI_Abort(MPI_COMM_WORLD, 1), as it would for any lost rank.
 *
 * sbn_comm_allreduce_merge runs MPI_Iallreduce (a commutative user op on a
 * datatype of elem_bytes bytes, from and into the handle's own staging buffers)
 * after the header exchange, polled against the same timeout. A rank that never
 * comes is named by the header exchange; a timeout in the MPI_Iallreduce itself
 * (a rank stopped or died after the header) cannot name anyone and breaks the
 * handle as above: the request stays pending in MPI for good (a nonblocking
 * collective can be neither cancelled nor freed), and its staging buffers,
 * datatype and op are never freed, so that MPI may still complete it.
 */
#ifndef SYNCBN_COMM_MPI_H
#define SYNCBN_COMM_MPI_H

#include <mpi.h>

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A handle whose rank and size are the caller's in `comm`; the default timeout. */
sbn_status sbn_comm_mpi_create(MPI_Comm comm, sbn_comm_t **out);

/* The same with an explicit timeout in seconds (<= 0 or NaN: the default, see comm.h). */
sbn_status sbn_comm_mpi_create_with_timeout(MPI_Comm comm, double timeout_seconds,
                                            sbn_comm_t **out);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_COMM_MPI_H */
