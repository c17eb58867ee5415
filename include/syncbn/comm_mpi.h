/*
 * comm_mpi.h - the MPI backend of the communicator, built when CMake finds MPI
 * (SBN_HAVE_MPI is then defined for users of the library). The handle works on
 * its own duplicate of the given communicator, so its traffic never mixes with
 * the caller's, and that duplicate returns errors instead of aborting: every MPI
 * error becomes SBN_ERR_COMM with MPI's own error text. MPI must be initialized
 * before creation and the handle destroyed before MPI_Finalize. Creation is
 * collective over `comm` (it calls MPI_Comm_dup); any intracommunicator works,
 * MPI_COMM_WORLD or a subgroup from MPI_Comm_split. This is the only syncbn
 * header that includes <mpi.h>.
 */
#ifndef SYNCBN_COMM_MPI_H
#define SYNCBN_COMM_MPI_H

#include <mpi.h>

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A handle whose rank and size are the caller's in `comm`. */
sbn_status sbn_comm_mpi_create(MPI_Comm comm, sbn_comm_t **out);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_COMM_MPI_H */
