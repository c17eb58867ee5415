/*
 * comm_mpi_merge.h - what the MPI backend's merge allreduce (comm_mpi.c) needs
 * from comm_mpi_merge.c: per handle, one commutative MPI_Op and one committed
 * datatype of elem_bytes contiguous bytes per (elem_bytes, merge) pair, created
 * lazily before the first header exchange that needs them, and a staging buffer
 * (the input then the output of MPI_Iallreduce, count * elem_bytes each), so that
 * MPI never holds the caller's buffer. MPI's user functions get no context
 * pointer, so a process-wide registry maps each of those datatype handles to its
 * merge function; the op's function looks the datatype it is given up there.
 * Built only with the MPI backend.
 */
#ifndef SBN_COMM_MPI_MERGE_H
#define SBN_COMM_MPI_MERGE_H

#include <mpi.h>

#include "comm_internal.h"

typedef struct sbn__mpi_merge_type {
    size_t elem_bytes;
    sbn_comm_merge_fn merge;
    MPI_Datatype type; /* elem_bytes x MPI_BYTE, committed and registered */
} sbn__mpi_merge_type;

typedef struct sbn__mpi_merge {
    MPI_Op op;                  /* MPI_OP_NULL until the first merge */
    sbn__mpi_merge_type *types; /* ntypes of cap, grow-only */
    int ntypes, cap;
    unsigned char *stage;       /* 2 * count * elem_bytes: MPI_Iallreduce's input, output */
    size_t stage_bytes;
    MPI_Request request;        /* the MPI_Iallreduce in flight, else MPI_REQUEST_NULL */
    int abandoned;              /* a request never completed: everything here stays MPI's */
} sbn__mpi_merge;

/* An empty state: no op, no datatype, no stage. */
void sbn__mpi_merge_init(sbn__mpi_merge *m);

/*
 * Checks MPI's limits (count and elem_bytes are ints in MPI), grows the stage to
 * 2 * count * elem_bytes and creates the op and the datatype of (elem_bytes,
 * merge) if they do not exist yet. SBN_OK, or the failure with its sentence.
 */
sbn_status sbn__mpi_merge_prepare(sbn__mpi_merge *m, size_t count, size_t elem_bytes,
                                  sbn_comm_merge_fn merge);

/* The datatype prepared for (elem_bytes, merge), or MPI_DATATYPE_NULL. */
MPI_Datatype sbn__mpi_merge_type_of(const sbn__mpi_merge *m, size_t elem_bytes,
                                    sbn_comm_merge_fn merge);

/*
 * Frees the datatypes (MPI calls only when mpi_alive), the op, the stage and the
 * registry entries. An abandoned state frees nothing: MPI may still run the
 * reduction of the request it kept, which needs the datatype, its registry entry,
 * the op and the stage.
 */
void sbn__mpi_merge_release(sbn__mpi_merge *m, int mpi_alive);

/* "MPI's text for code (MPI error code)" into buf (comm_mpi.c; shared by both files). */
void sbn__mpi_text(int code, char *buf, size_t size);

#endif /* SBN_COMM_MPI_MERGE_H */
