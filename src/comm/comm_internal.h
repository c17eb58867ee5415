/*
 * comm_internal.h - what the communicator's files share: the backend vtable and
 * the handle every backend embeds as its first member. A backend moves bytes
 * (allgather_bytes, barrier) and reports its own failures through sbn__error;
 * the generic layer (comm.c) owns everything else: the header exchange that
 * checks the ranks agree, the sticky failure state, the rank-order sum and the
 * grow-only scratch buffer. Backends create a handle with sbn__comm_init and
 * their destroy frees the handle itself after sbn__comm_release has run.
 */
#ifndef SBN_COMM_INTERNAL_H
#define SBN_COMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "syncbn/comm.h"

/* The words of the header every collective exchanges first, one row per rank. */
enum {
    SBN_HDR_OP = 0,     /* SBN_OP_* */
    SBN_HDR_COUNT = 1,  /* doubles per rank */
    SBN_HDR_TAG = 2,    /* the caller's tag */
    SBN_HDR_SEQ = 3,    /* the handle's call number, 1-based */
    SBN_HDR_STATUS = 4, /* the announced status of a FAIL, else 0 */
    SBN_HDR_WORDS = 5
};

enum { SBN_OP_ALLGATHER = 1, SBN_OP_ALLREDUCE = 2, SBN_OP_BARRIER = 3, SBN_OP_FAIL = 4 };

struct sbn__comm_vtable {
    /*
     * Every rank contributes `bytes` bytes (the same on every rank); recv gets
     * size * bytes, rank r's block at r * bytes. send and recv may be NULL when
     * bytes is 0. Returns SBN_OK or a failure with its sentence set.
     */
    sbn_status (*allgather_bytes)(sbn_comm_t *comm, const void *send, size_t bytes, void *recv);
    /* Returns once every rank has entered it. */
    sbn_status (*barrier)(sbn_comm_t *comm);
    /* Frees the backend's state and the handle itself. */
    void (*destroy)(sbn_comm_t *comm);
};

struct sbn_comm {
    const struct sbn__comm_vtable *vt;
    int rank, size;
    uint64_t seq;             /* collectives started on this handle */
    int64_t *headers;         /* size * SBN_HDR_WORDS, allocated at creation */
    void *scratch;            /* grow-only, allocated on first use */
    size_t scratch_bytes;
    /* Sticky failure: set when a collective learned that a rank failed. */
    int dead;
    int dead_rank;            /* the first failed rank */
    sbn_status dead_status;   /* the status it announced */
    uint64_t dead_seq;        /* the call in which the failure was seen */
};

/*
 * Fills the generic part of a backend's handle (zeroed by the caller) and
 * allocates its header buffer. Returns SBN_OK or SBN_ERR_OUT_OF_MEMORY.
 */
sbn_status sbn__comm_init(sbn_comm_t *comm, const struct sbn__comm_vtable *vt, int rank,
                          int size);
/* Frees what sbn__comm_init and the generic layer allocated; not the handle. */
void sbn__comm_release(sbn_comm_t *comm);

#endif /* SBN_COMM_INTERNAL_H */
