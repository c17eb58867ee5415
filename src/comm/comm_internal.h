/*
 * comm_internal.h - what the communicator's files share: the backend vtable and
 * the handle every backend embeds as its first member. A backend moves bytes
 * (allgather_bytes, barrier, optionally allreduce_merge and exchange_headers) and
 * reports its own failures through sbn__error and its traffic through
 * sbn__comm_count; the generic layer (comm.c) owns everything else: the header
 * verdicts that check the ranks agree, the sticky failure state, the rank-order
 * sum, the rank-order merge of backends without their own, and the grow-only
 * scratch buffer. Backends create a handle with sbn__comm_init and their destroy
 * frees the handle itself after sbn__comm_release has run. The
 * timeout rule (an explicit argument, else SBN_COMM_TIMEOUT, else 60 s) lives
 * here too, so that every backend that waits reads it the same way.
 */
#ifndef SBN_COMM_INTERNAL_H
#define SBN_COMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/env.h"
#include "syncbn/comm.h"

/* The words of the header every collective exchanges first, one row per rank. */
enum {
    SBN_HDR_OP = 0,     /* SBN_OP_* */
    SBN_HDR_COUNT = 1,  /* doubles per rank */
    SBN_HDR_TAG = 2,    /* the caller's tag */
    SBN_HDR_SEQ = 3,    /* the handle's call number, 1-based */
    SBN_HDR_STEP = 4,   /* the caller's step (sbn_comm_set_step), 0 until set */
    SBN_HDR_ELEM = 5,   /* bytes per element: 8 for doubles, elem_bytes of a merge, 0 */
    SBN_HDR_STATUS = 6, /* the announced status of a FAIL, else 0 */
    SBN_HDR_WORDS = 7   /* every word before SBN_HDR_STATUS must agree (56 bytes) */
};

/* SBN_COMM_DEFAULT_TIMEOUT and SBN_COMM_MAX_TIMEOUT: core/env.h, whose parser caps the
 * environment's timeout as sbn__comm_timeout caps an argument. */


enum {
    SBN_OP_ALLGATHER = 1,
    SBN_OP_ALLREDUCE = 2,
    SBN_OP_BARRIER = 3,
    SBN_OP_FAIL = 4,
    SBN_OP_ALLREDUCE_MERGE = 5
};

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
    /*
     * Optional, before the header exchange of an allreduce-merge: whatever can
     * fail on one rank alone (allocations, backend limits), so that the rank
     * announces the failure instead of leaving its peers waiting. NULL: nothing.
     */
    sbn_status (*prepare_merge)(sbn_comm_t *comm, size_t count, size_t elem_bytes,
                                sbn_comm_merge_fn merge);
    /*
     * Optional: the allreduce-merge in place, after the header exchange agreed
     * (count > 0, size > 1). NULL: the generic layer allgathers every rank's data
     * into its scratch and merges it in rank order.
     */
    sbn_status (*allreduce_merge)(sbn_comm_t *comm, void *data, size_t count, size_t elem_bytes,
                                  sbn_comm_merge_fn merge);
    /*
     * Optional: the header exchange itself, `mine` being this rank's
     * SBN_HDR_WORDS words. *all_agree = 1 when every rank's header agrees with
     * this one on every word before SBN_HDR_STATUS and no rank announced a
     * failure (the same answer on every rank), and comm->headers is then left
     * alone; otherwise *all_agree = 0 and comm->headers holds every rank's header,
     * as after the allgather, for the generic verdicts. NULL: the allgather.
     */
    sbn_status (*exchange_headers)(sbn_comm_t *comm, const int64_t *mine, int *all_agree);
    /*
     * Optional: the merge of `count` (> 0) of the library's exact accumulators
     * (sbn__rsum, as bytes) by integer maxima and sums (core/rsum.h), after the
     * header exchange agreed (size > 1). tops[i] holds this rank's top of
     * element i; exchange_headers has already replaced the first
     * min(count, comm->ride_cap) of them by their maximum over the ranks (they
     * rode in comm->ride). `words` is scratch of count * SBN_RSUM_INT_WORDS int64.
     */
    sbn_status (*merge_rsum)(sbn_comm_t *comm, void *data, size_t count, int64_t *tops,
                             int64_t *words);
    /*
     * Optional, with merge_rsum, before the header exchange of a merge of `count`
     * accumulators: what can fail on one rank alone (the speculative merge's
     * buffers), so that the rank announces the failure. NULL: nothing.
     */
    sbn_status (*prepare_rsum)(sbn_comm_t *comm, size_t count);
};

struct sbn_comm {
    const struct sbn__comm_vtable *vt;
    int rank, size;
    uint64_t seq;             /* collectives started on this handle */
    int64_t step;             /* the caller's step, sent in every header */
    int64_t *headers;         /* size * SBN_HDR_WORDS, allocated at creation */
    void *scratch;            /* grow-only, allocated on first use */
    size_t scratch_bytes;
    /* Sticky failure: set when a collective learned that a rank failed. */
    int dead;
    int dead_rank;            /* the first failed rank */
    sbn_status dead_status;   /* the status it announced */
    uint64_t dead_seq;        /* the call in which the failure was seen */
    /*
     * Values that ride in the next header exchange (a backend with merge_rsum):
     * exchange_headers takes the maximum over the ranks of ride[0 .. min(ride_n,
     * ride_cap)) in place when every rank agrees. ride_cap is the backend's, set at
     * creation; ride is set by the generic layer around one start() only.
     */
    int64_t *ride;
    size_t ride_n, ride_cap;
    /*
     * Around the start() of an rsum merge, its accumulators (else NULL): a backend's
     * exchange_headers may merge them already (the speculative merge, comm_spec.h)
     * and then sets `merged`, so that merge_rsum is not called.
     */
    void *ride_data;
    int merged;
    /* Traffic (sbn_comm_traffic), counted by the backends with sbn__comm_count. */
    uint64_t bytes_sent, bytes_received;
};

/* Adds to the handle's traffic counters. */
static inline void sbn__comm_count(sbn_comm_t *comm, uint64_t sent, uint64_t received)
{
    comm->bytes_sent += sent;
    comm->bytes_received += received;
}

/*
 * Fills the generic part of a backend's handle (zeroed by the caller) and
 * allocates its header buffer. Returns SBN_OK or SBN_ERR_OUT_OF_MEMORY.
 */
sbn_status sbn__comm_init(sbn_comm_t *comm, const struct sbn__comm_vtable *vt, int rank,
                          int size);
/* Frees what sbn__comm_init and the generic layer allocated; not the handle. */
void sbn__comm_release(sbn_comm_t *comm);

/*
 * The timeout of a backend that waits: `requested` when it is a number > 0
 * (capped at SBN_COMM_MAX_TIMEOUT, so +inf means "practically never"); otherwise
 * (0, negative, NaN) the SBN_COMM_TIMEOUT environment variable (env.c, read once
 * per process) when it is set and not blank, which must then be a number > 0 (same
 * cap; surrounding blanks allowed), else SBN_ERR_BAD_VALUE with env.c's sentence
 * quoting it; otherwise SBN_COMM_DEFAULT_TIMEOUT.
 */
sbn_status sbn__comm_timeout(double requested, double *seconds);

#endif /* SBN_COMM_INTERNAL_H */
