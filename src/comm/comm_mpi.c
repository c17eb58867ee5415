/*
 * comm_mpi.c - the MPI backend. Creation duplicates the caller's communicator
 * (MPI_Comm_dup) so that syncbn's messages can never match the caller's, and sets
 * MPI_ERRORS_RETURN on the duplicate so that an MPI failure comes back as a code
 * instead of aborting the job; every code becomes SBN_ERR_COMM with the text from
 * MPI_Error_string. allgather_bytes is MPI_Allgather on MPI_BYTE (on 8-byte units
 * when a block is over INT_MAX bytes), barrier is MPI_Barrier, and destroy frees
 * the duplicate.
 */
#include <limits.h>
#include <stdio.h>

#include "comm_internal.h"
#include "syncbn/comm_mpi.h"

typedef struct mpi_comm {
    struct sbn_comm base; /* first: a sbn_comm_t * is a mpi_comm * */
    MPI_Comm comm;        /* our duplicate */
} mpi_comm;

static sbn_status mpi_error(int code, const char *call, int rank)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0)
        snprintf(text, sizeof text, "unknown MPI error");
    else
        text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = '\0';
    if (rank >= 0)
        return sbn__error(SBN_ERR_COMM, "%s failed on rank %d: %s (MPI error %d)", call, rank,
                          text, code);
    return sbn__error(SBN_ERR_COMM, "%s failed: %s (MPI error %d)", call, text, code);
}

static sbn_status mpi_allgather(sbn_comm_t *base, const void *send, size_t bytes, void *recv)
{
    mpi_comm *c = (mpi_comm *)base;
    MPI_Datatype unit = MPI_BYTE;
    size_t count = bytes;
    int rc;

    if (bytes > (size_t)INT_MAX) {
        /* The payload is doubles, so a block is a whole number of 8-byte units. */
        if (bytes % 8 != 0 || bytes / 8 > (size_t)INT_MAX)
            return sbn__error(SBN_ERR_COMM, "a block of %zu bytes is too large for one "
                              "MPI_Allgather", bytes);
        rc = MPI_Type_contiguous(8, MPI_BYTE, &unit);
        if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&unit);
        if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Type_contiguous", base->rank);
        count = bytes / 8;
    }
    rc = MPI_Allgather(send, (int)count, unit, recv, (int)count, unit, c->comm);
    if (unit != MPI_BYTE) MPI_Type_free(&unit);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allgather", base->rank);
    return SBN_OK;
}

static sbn_status mpi_barrier(sbn_comm_t *base)
{
    mpi_comm *c = (mpi_comm *)base;
    int rc = MPI_Barrier(c->comm);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Barrier", base->rank);
    return SBN_OK;
}

static void mpi_destroy(sbn_comm_t *base)
{
    mpi_comm *c = (mpi_comm *)base;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    sbn__free(c);
}

static const struct sbn__comm_vtable mpi_vtable = {mpi_allgather, mpi_barrier, mpi_destroy};

SBN_API sbn_status sbn_comm_mpi_create(MPI_Comm comm, sbn_comm_t **out)
{
    mpi_comm *c;
    MPI_Comm dup = MPI_COMM_NULL;
    sbn_status s;
    int initialized = 0, finalized = 0, inter = 0, rank = 0, size = 0, rc;

    sbn__clear_error();
    if (out == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "out (the output pointer) is NULL");
    *out = NULL;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return sbn__error(SBN_ERR_COMM, "MPI is %s; create the communicator between MPI_Init "
                          "and MPI_Finalize", finalized ? "already finalized" : "not initialized");
    if (comm == MPI_COMM_NULL)
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is MPI_COMM_NULL");
    rc = MPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_test_inter", -1);
    if (inter)
        return sbn__error(SBN_ERR_BAD_VALUE, "comm is an intercommunicator; expected an "
                          "intracommunicator");

    rc = MPI_Comm_dup(comm, &dup);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_dup", -1);
    rc = MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(dup, &rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(dup, &size);
    if (rc != MPI_SUCCESS) {
        s = mpi_error(rc, "setting up the duplicate communicator", -1);
        MPI_Comm_free(&dup);
        return s;
    }

    c = sbn__calloc(1, sizeof *c);
    if (c == NULL) {
        MPI_Comm_free(&dup);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate an MPI communicator handle");
    }
    c->comm = dup;
    s = sbn__comm_init(&c->base, &mpi_vtable, rank, size);
    if (SBN_FAILED(s)) {
        MPI_Comm_free(&dup);
        sbn__free(c);
        return s;
    }
    *out = &c->base;
    return SBN_OK;
}
