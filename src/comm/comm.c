/*
 * comm.c - the generic layer of the communicator, shared by every backend. Each
 * collective first allgathers a fixed header (op, count, element size, tag, call
 * number, step, failure status: 7 int64, 56 bytes) from every rank (a backend
 * with its own exchange_headers, the threads one, first checks agreement in O(1)
 * per rank and gathers them only when that check fails); every rank then sees
 * the same headers and reaches the same verdict: a rank that announced a
 * failure makes every rank return SBN_ERR_PEER_FAILED (and the handle stays
 * failed), any disagreement makes every rank return SBN_ERR_COMM_MISMATCH, and
 * only when all agree is the payload exchanged. A rank whose own arguments are
 * wrong announces the failure in the header instead of leaving its peers
 * waiting. allreduce_sum gathers every rank's values into the grow-only scratch
 * and adds them in rank order 0..W-1, so all ranks get the same bits whatever the
 * backend. allreduce_merge (fixed-size elements, an exact user merge) runs the
 * backend's own algorithm after the header, or, for a backend without one, the
 * same gather-then-rank-order scheme; a backend with merge_rsum (callbacks with
 * allreduce_int64) merges the library's own accumulators (merge ==
 * sbn__rsum_merge_bytes) by integer maxima and sums instead, their tops riding in
 * the header exchange (or, when its guess of both holds, in one SUM that its
 * exchange_headers makes and that sets `merged`: comm_spec.h). The header also carries the caller's step
 * (sbn_comm_set_step): the call number alone can never differ between ranks,
 * since every exchange pairs the k-th call of each rank, so it cannot reveal a
 * rank that skipped a whole step; the caller's step can. The timeout rule shared
 * by the backends that wait (sbn__comm_timeout) is here too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "core/alloc.h"
#include "core/export.h"
#include "core/rsum.h"
#include "core/status.h"

#define SBN_COMM_TEXT 512

/* ---- handle lifetime ---- */

sbn_status sbn__comm_init(sbn_comm_t *comm, const struct sbn__comm_vtable *vt, int rank,
                          int size)
{
    comm->vt = vt;
    comm->rank = rank;
    comm->size = size;
    comm->seq = 0;
    comm->step = 0;
    comm->ride = NULL;
    comm->ride_n = comm->ride_cap = 0;
    comm->ride_data = NULL;
    comm->merged = 0;
    comm->headers = sbn__malloc((size_t)size * SBN_HDR_WORDS * sizeof(int64_t));
    if (comm->headers == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY,
                          "could not allocate the header buffer of a communicator of %d ranks",
                          size);
    return SBN_OK;
}

void sbn__comm_release(sbn_comm_t *comm)
{
    sbn__free(comm->headers);
    sbn__free(comm->scratch);
    comm->headers = NULL;
    comm->scratch = NULL;
    comm->scratch_bytes = 0;
}

/*
 * Like sbn_pool_destroy and sbn_pool_threads, destroy and the getters cannot fail
 * and leave the calling thread's error sentence alone, so that a caller may clean
 * up (or print the rank) before reporting the failure it just got.
 */
SBN_API void sbn_comm_destroy(sbn_comm_t *comm)
{
    if (comm == NULL) return;
    sbn__comm_release(comm);
    comm->vt->destroy(comm);
}

SBN_API int sbn_comm_rank(const sbn_comm_t *comm)
{
    return comm ? comm->rank : -1;
}

SBN_API int sbn_comm_size(const sbn_comm_t *comm)
{
    return comm ? comm->size : 0;
}

/* ---- messages ---- */

static const char *op_name(int64_t op, char *buf, size_t size)
{
    switch (op) {
    case SBN_OP_ALLGATHER: return "allgather";
    case SBN_OP_ALLREDUCE: return "allreduce";
    case SBN_OP_BARRIER: return "barrier";
    case SBN_OP_FAIL: return "fail";
    case SBN_OP_ALLREDUCE_MERGE: return "allreduce_merge";
    default: snprintf(buf, size, "op %" PRId64, op); return buf;
    }
}

/* Re-emits the backend's sentence for `status` with the call it happened in. */
static sbn_status backend_error(const sbn_comm_t *comm, int op, const char *phase,
                                sbn_status status)
{
    char text[SBN_COMM_TEXT], name[32];
    snprintf(text, sizeof text, "%s", sbn_last_error());
    return sbn__error(status, "rank %d, %s call #%" PRIu64 ", %s exchange: %s", comm->rank,
                      op_name(op, name, sizeof name), comm->seq, phase,
                      text[0] ? text : sbn_status_str(status));
}

static sbn_status dead_error(const sbn_comm_t *comm, int op)
{
    char name[32];
    return sbn__error(SBN_ERR_PEER_FAILED,
                      "rank %d, %s: this communicator is unusable since rank %d%s failed with "
                      "%s in call #%" PRIu64,
                      comm->rank, op_name(op, name, sizeof name), comm->dead_rank,
                      comm->dead_rank == comm->rank ? " (this rank)" : "",
                      sbn_status_name(comm->dead_status), comm->dead_seq);
}

/* ---- the header exchange and its verdict ---- */

static const int64_t *header_of(const sbn_comm_t *comm, int r)
{
    return comm->headers + (size_t)r * SBN_HDR_WORDS;
}

/* Any rank that announced a failure: records it and writes the sentence. */
static sbn_status verdict_failed(sbn_comm_t *comm, int my_op)
{
    char text[SBN_COMM_TEXT], name[32];
    size_t len = 0;
    int r, nfailed = 0, shown = 0;

    for (r = 0; r < comm->size; r++)
        if (header_of(comm, r)[SBN_HDR_OP] == SBN_OP_FAIL) nfailed++;
    if (nfailed == 0) return SBN_OK;

    text[0] = '\0';
    for (r = 0; r < comm->size && shown < 8; r++) {
        const int64_t *h = header_of(comm, r);
        if (h[SBN_HDR_OP] != SBN_OP_FAIL) continue;
        if (!comm->dead) {
            comm->dead = 1;
            comm->dead_rank = r;
            comm->dead_status = (sbn_status)h[SBN_HDR_STATUS];
            comm->dead_seq = comm->seq;
        }
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d (%s)", shown ? ", " : "", r,
                                sbn_status_name((sbn_status)h[SBN_HDR_STATUS]));
        if (len >= sizeof text) len = sizeof text - 1;
        shown++;
    }
    if (my_op == SBN_OP_FAIL) return SBN_OK; /* the caller returns its own reason */
    return sbn__error(SBN_ERR_PEER_FAILED,
                      "rank %d, %s call #%" PRIu64 ": %s %s%s failed before this collective",
                      comm->rank, op_name(my_op, name, sizeof name), comm->seq,
                      nfailed == 1 ? "rank" : "ranks", text, nfailed > shown ? ", ..." : "");
}

/* "allreduce (count 128, tag 64, call #1)"; a merge names its elem_bytes too. */
static void describe_call(const int64_t *h, char *buf, size_t size)
{
    char name[32], elem[48] = "";
    if (h[SBN_HDR_OP] == SBN_OP_ALLREDUCE_MERGE)
        snprintf(elem, sizeof elem, ", elem_bytes %" PRId64, h[SBN_HDR_ELEM]);
    snprintf(buf, size, "%s (count %" PRId64 "%s, tag %" PRId64 ", call #%" PRId64 ")",
             op_name(h[SBN_HDR_OP], name, sizeof name), h[SBN_HDR_COUNT], elem, h[SBN_HDR_TAG],
             h[SBN_HDR_SEQ]);
}

/* Every rank must agree with rank 0 on op, count, element size, tag, call number and step. */
static sbn_status verdict_mismatch(const sbn_comm_t *comm)
{
    const int64_t *h0 = header_of(comm, 0);
    char c0[160], cr[160], steps[160];
    int r, w;

    for (r = 1; r < comm->size; r++) {
        const int64_t *h = header_of(comm, r);
        int same = 1;
        for (w = 0; w < SBN_HDR_STATUS; w++) same = same && h[w] == h0[w];
        if (same) continue;
        steps[0] = '\0';
        if (h[SBN_HDR_STEP] != h0[SBN_HDR_STEP])
            snprintf(steps, sizeof steps, "rank 0 is at step %" PRId64 " but rank %d is at step "
                     "%" PRId64 " (a rank skipped or repeated a step): ", h0[SBN_HDR_STEP], r,
                     h[SBN_HDR_STEP]);
        describe_call(h0, c0, sizeof c0);
        describe_call(h, cr, sizeof cr);
        return sbn__error(SBN_ERR_COMM_MISMATCH, "%srank 0 called %s but rank %d called %s", steps,
                          c0, r, cr);
    }
    return SBN_OK;
}

/*
 * Starts a collective: numbers it, exchanges this rank's header and returns the
 * verdict every rank shares. `elem` is the element size in bytes the ranks must
 * agree on; `status` is the announced failure for SBN_OP_FAIL. A backend with
 * its own exchange_headers answers "all agree, nobody failed" without gathering
 * the headers (SBN_OK, as the verdicts would be), else gathers them for the same
 * verdicts as the allgather.
 */
static sbn_status start(sbn_comm_t *comm, int op, size_t count, size_t elem, int64_t tag,
                        sbn_status status)
{
    int64_t mine[SBN_HDR_WORDS];
    sbn_status s;

    comm->seq++;
    mine[SBN_HDR_OP] = op;
    mine[SBN_HDR_COUNT] = (int64_t)count;
    mine[SBN_HDR_TAG] = tag;
    mine[SBN_HDR_SEQ] = (int64_t)comm->seq;
    mine[SBN_HDR_STEP] = comm->step;
    mine[SBN_HDR_ELEM] = (int64_t)elem;
    mine[SBN_HDR_STATUS] = op == SBN_OP_FAIL ? (int64_t)status : 0;
    if (comm->vt->exchange_headers != NULL) {
        /* The backend's own check: the headers are only gathered when it fails. */
        int all_agree = 0;
        s = comm->vt->exchange_headers(comm, mine, &all_agree);
        if (SBN_FAILED(s)) return backend_error(comm, op, "header", s);
        if (all_agree) return SBN_OK;
    } else {
        s = comm->vt->allgather_bytes(comm, mine, sizeof mine, comm->headers);
        if (SBN_FAILED(s)) return backend_error(comm, op, "header", s);
    }
    s = verdict_failed(comm, op);
    if (SBN_FAILED(s) || op == SBN_OP_FAIL) return s;
    return verdict_mismatch(comm);
}

/*
 * A rank whose arguments are wrong still takes part in the collective, as a
 * failed rank, so that its peers return SBN_ERR_PEER_FAILED instead of waiting.
 * The caller writes its own sentence afterwards.
 */
static void announce(sbn_comm_t *comm, sbn_status status)
{
    if (comm->dead) return;
    (void)start(comm, SBN_OP_FAIL, 0, 0, 0, status);
}

/* 1 when size * count doubles (and count as an int64) fit. */
static int payload_fits(const sbn_comm_t *comm, size_t count)
{
    return count <= SIZE_MAX / sizeof(double) / (size_t)comm->size &&
           count <= (size_t)INT64_MAX / sizeof(double);
}

static sbn_status too_large(sbn_comm_t *comm, size_t count)
{
    announce(comm, SBN_ERR_BAD_VALUE);
    return sbn__error(SBN_ERR_BAD_VALUE, "count is %zu; %d ranks of that many doubles overflow "
                      "the address space", count, comm->size);
}

static int overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a_bytes > 0 && b_bytes > 0 && a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

/* ---- collectives ---- */

SBN_API sbn_status sbn_comm_allgather(sbn_comm_t *comm, const double *send, size_t count,
                                      double *recv, int64_t tag)
{
    sbn_status s;
    size_t bytes;

    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    if (comm->dead) return dead_error(comm, SBN_OP_ALLGATHER);
    if (!payload_fits(comm, count)) return too_large(comm, count);
    bytes = count * sizeof(double);
    if (count > 0 && (send == NULL || recv == NULL)) {
        announce(comm, SBN_ERR_NULL_ARGUMENT);
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "allgather on rank %d: %s is NULL with count %zu",
                          comm->rank, send == NULL ? "send" : "recv", count);
    }
    if (overlaps(send, bytes, recv, bytes * (size_t)comm->size)) {
        announce(comm, SBN_ERR_ALIAS);
        return sbn__error(SBN_ERR_ALIAS, "allgather on rank %d: send (%zu doubles) overlaps recv "
                          "(%d x %zu doubles)", comm->rank, count, comm->size, count);
    }
    s = start(comm, SBN_OP_ALLGATHER, count, sizeof(double), tag, SBN_OK);
    if (SBN_FAILED(s) || count == 0) return s;
    s = comm->vt->allgather_bytes(comm, send, bytes, recv);
    if (SBN_FAILED(s)) return backend_error(comm, SBN_OP_ALLGATHER, "payload", s);
    return SBN_OK;
}

/* Grows the scratch to at least `bytes`; returns 0 when the allocation failed. */
static int reserve_scratch(sbn_comm_t *comm, size_t bytes)
{
    void *p;
    if (bytes <= comm->scratch_bytes) return 1;
    p = sbn__malloc(bytes);
    if (p == NULL) return 0;
    sbn__free(comm->scratch);
    comm->scratch = p;
    comm->scratch_bytes = bytes;
    return 1;
}

/*
 * The merge of a backend without its own: every rank's data gathered into the
 * scratch (size rows of count * elem_bytes), then row 0 merged with rows 1, 2,
 * ..., size - 1 in that order: the same calls, hence the same bytes, on every
 * rank, even for a merge that is not commutative.
 */
static sbn_status merge_by_allgather(sbn_comm_t *comm, void *data, size_t count, size_t elem_bytes,
                                     sbn_comm_merge_fn merge)
{
    const unsigned char *rows = comm->scratch;
    size_t bytes = count * elem_bytes;
    sbn_status s = comm->vt->allgather_bytes(comm, data, bytes, comm->scratch);
    int r;
    if (SBN_FAILED(s)) return s;
    memcpy(data, rows, bytes);
    for (r = 1; r < comm->size; r++) merge(data, rows + (size_t)r * bytes, count);
    return SBN_OK;
}

/* inout[i] += in[i]: allreduce_sum as a merge, in rank order ((v0 + v1) + v2) + ... */
static void add_doubles(void *inout, const void *in, size_t count)
{
    double *acc = inout;
    const double *row = in;
    size_t i;
    for (i = 0; i < count; i++) acc[i] += row[i];
}

SBN_API sbn_status sbn_comm_allreduce_sum(sbn_comm_t *comm, double *values, size_t count,
                                          int64_t tag)
{
    sbn_status s;
    size_t bytes;

    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    if (comm->dead) return dead_error(comm, SBN_OP_ALLREDUCE);
    if (!payload_fits(comm, count)) return too_large(comm, count);
    bytes = count * sizeof(double);
    if (count > 0 && values == NULL) {
        announce(comm, SBN_ERR_NULL_ARGUMENT);
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "allreduce on rank %d: values is NULL with "
                          "count %zu", comm->rank, count);
    }
    if (comm->size > 1 && !reserve_scratch(comm, bytes * (size_t)comm->size)) {
        announce(comm, SBN_ERR_OUT_OF_MEMORY);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "allreduce on rank %d: could not allocate the "
                          "%d x %zu doubles scratch", comm->rank, comm->size, count);
    }
    s = start(comm, SBN_OP_ALLREDUCE, count, sizeof(double), tag, SBN_OK);
    if (SBN_FAILED(s) || count == 0 || comm->size == 1) return s;
    /* the same order, hence the same bits, on every rank */
    s = merge_by_allgather(comm, values, count, sizeof(double), add_doubles);
    if (SBN_FAILED(s)) return backend_error(comm, SBN_OP_ALLREDUCE, "payload", s);
    return SBN_OK;
}

/*
 * A failure of this rank alone before the header (a check or an allocation of
 * the backend's prepare_merge): announced like a bad argument, with its sentence.
 */
static sbn_status announce_own(sbn_comm_t *comm, sbn_status status)
{
    char text[SBN_COMM_TEXT];
    snprintf(text, sizeof text, "%s", sbn_last_error());
    announce(comm, status);
    return sbn__error(status, "allreduce_merge on rank %d: %s", comm->rank,
                      text[0] ? text : sbn_status_str(status));
}

/*
 * The merge of the library's own accumulators on a backend that merges them by
 * integer maxima and sums (merge_rsum): this rank's tops ride in the header
 * exchange, which takes their maximum when every rank agrees, and the backend
 * does the rest. Scratch: count tops, then count * SBN_RSUM_INT_WORDS words, both
 * needed before the header so that a failed allocation is announced.
 */
static sbn_status rsum_merge(sbn_comm_t *comm, void *data, size_t count, int64_t tag)
{
    const size_t per = 1 + SBN_RSUM_INT_WORDS;
    int64_t *tops;
    sbn_status s;
    if (count > SIZE_MAX / sizeof(int64_t) / per) {
        announce(comm, SBN_ERR_BAD_VALUE);
        return sbn__error(SBN_ERR_BAD_VALUE, "allreduce_merge on rank %d: %zu accumulators "
                          "overflow the address space", comm->rank, count);
    }
    if (!reserve_scratch(comm, count * per * sizeof(int64_t))) {
        announce(comm, SBN_ERR_OUT_OF_MEMORY);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "allreduce_merge on rank %d: could not allocate "
                          "the %zu x %zu int64 scratch", comm->rank, count, per);
    }
    if (comm->vt->prepare_rsum != NULL) {
        s = comm->vt->prepare_rsum(comm, count);
        if (SBN_FAILED(s)) return announce_own(comm, s);
    }
    tops = comm->scratch;
    sbn__rsum_tops(data, count, tops);
    comm->ride = tops;
    comm->ride_n = count;
    comm->ride_data = data;
    comm->merged = 0;
    s = start(comm, SBN_OP_ALLREDUCE_MERGE, count, sizeof(sbn__rsum), tag, SBN_OK);
    comm->ride = NULL;
    comm->ride_n = 0;
    comm->ride_data = NULL;
    if (SBN_FAILED(s) || comm->merged) return s; /* merged: the speculative SUM held */
    s = comm->vt->merge_rsum(comm, data, count, tops, tops + count);
    if (SBN_FAILED(s)) return backend_error(comm, SBN_OP_ALLREDUCE_MERGE, "payload", s);
    return SBN_OK;
}

SBN_API sbn_status sbn_comm_allreduce_merge(sbn_comm_t *comm, void *data, size_t count,
                                            size_t elem_bytes, sbn_comm_merge_fn merge,
                                            int64_t tag)
{
    const struct sbn__comm_vtable *vt;
    sbn_status s;
    size_t bytes;

    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    if (comm->dead) return dead_error(comm, SBN_OP_ALLREDUCE_MERGE);
    vt = comm->vt;
    if (elem_bytes == 0) {
        announce(comm, SBN_ERR_BAD_VALUE);
        return sbn__error(SBN_ERR_BAD_VALUE, "allreduce_merge on rank %d: elem_bytes is 0; "
                          "expected the size in bytes of one element (at least 1)", comm->rank);
    }
    if (merge == NULL) {
        announce(comm, SBN_ERR_NULL_ARGUMENT);
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "allreduce_merge on rank %d: merge (the merge "
                          "function) is NULL", comm->rank);
    }
    if (count > 0 && data == NULL) {
        announce(comm, SBN_ERR_NULL_ARGUMENT);
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "allreduce_merge on rank %d: data is NULL with "
                          "count %zu", comm->rank, count);
    }
    /* The header carries count and elem_bytes as int64; the payload must be addressable. */
    if (count > (size_t)INT64_MAX || elem_bytes > (size_t)INT64_MAX ||
        count > SIZE_MAX / elem_bytes) {
        announce(comm, SBN_ERR_BAD_VALUE);
        return sbn__error(SBN_ERR_BAD_VALUE, "allreduce_merge on rank %d: count %zu x elem_bytes "
                          "%zu overflows the address space", comm->rank, count, elem_bytes);
    }
    bytes = count * elem_bytes;
    if (vt->merge_rsum != NULL && merge == sbn__rsum_merge_bytes &&
        elem_bytes == sizeof(sbn__rsum) && comm->size > 1 && count > 0)
        return rsum_merge(comm, data, count, tag);
    if (comm->size > 1 && count > 0) {
        if (vt->prepare_merge != NULL) {
            s = vt->prepare_merge(comm, count, elem_bytes, merge);
            if (SBN_FAILED(s)) return announce_own(comm, s);
        }
        if (vt->allreduce_merge == NULL) {
            if (bytes > SIZE_MAX / (size_t)comm->size) {
                announce(comm, SBN_ERR_BAD_VALUE);
                return sbn__error(SBN_ERR_BAD_VALUE, "allreduce_merge on rank %d: %d ranks of %zu "
                                  "x %zu bytes (the allgather this backend merges from) overflow "
                                  "the address space", comm->rank, comm->size, count, elem_bytes);
            }
            if (!reserve_scratch(comm, bytes * (size_t)comm->size)) {
                announce(comm, SBN_ERR_OUT_OF_MEMORY);
                return sbn__error(SBN_ERR_OUT_OF_MEMORY, "allreduce_merge on rank %d: could not "
                                  "allocate the %d x %zu bytes scratch", comm->rank, comm->size,
                                  bytes);
            }
        }
    }
    s = start(comm, SBN_OP_ALLREDUCE_MERGE, count, elem_bytes, tag, SBN_OK);
    if (SBN_FAILED(s) || count == 0 || comm->size == 1) return s;
    if (vt->allreduce_merge != NULL)
        s = vt->allreduce_merge(comm, data, count, elem_bytes, merge);
    else
        s = merge_by_allgather(comm, data, count, elem_bytes, merge);
    if (SBN_FAILED(s)) return backend_error(comm, SBN_OP_ALLREDUCE_MERGE, "payload", s);
    return SBN_OK;
}

SBN_API void sbn_comm_traffic(const sbn_comm_t *comm, uint64_t *bytes_sent,
                              uint64_t *bytes_received)
{
    if (bytes_sent != NULL) *bytes_sent = comm ? comm->bytes_sent : 0;
    if (bytes_received != NULL) *bytes_received = comm ? comm->bytes_received : 0;
}

SBN_API sbn_status sbn_comm_barrier(sbn_comm_t *comm)
{
    sbn_status s;

    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    if (comm->dead) return dead_error(comm, SBN_OP_BARRIER);
    s = start(comm, SBN_OP_BARRIER, 0, 0, 0, SBN_OK);
    if (SBN_FAILED(s)) return s;
    s = comm->vt->barrier(comm);
    if (SBN_FAILED(s)) return backend_error(comm, SBN_OP_BARRIER, "barrier", s);
    return SBN_OK;
}

/*
 * Unlike the other entry points, the sentence of the failure being announced
 * (the caller's last error) is kept, so that `return sbn_comm_fail(comm, s);`
 * still reports why; without one, the sentence says what was announced.
 */
SBN_API sbn_status sbn_comm_fail(sbn_comm_t *comm, sbn_status reason)
{
    char kept[SBN_COMM_TEXT];
    sbn_status s;

    snprintf(kept, sizeof kept, "%s", sbn_last_error());
    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    if (!comm->dead) {
        s = start(comm, SBN_OP_FAIL, 0, 0, 0, reason);
        if (SBN_FAILED(s)) return s; /* the backend's error: the failure was not announced */
    }
    if (!SBN_FAILED(reason))
        return sbn__error(SBN_ERR_BAD_VALUE, "sbn_comm_fail on rank %d: reason %s is not a "
                          "failure (it was announced to the peers anyway)", comm->rank,
                          sbn_status_name(reason));
    if (kept[0] != '\0') return sbn__error(reason, "%s", kept);
    return sbn__error(reason, "rank %d announced %s to its peers", comm->rank,
                      sbn_status_name(reason));
}

SBN_API sbn_status sbn_comm_set_step(sbn_comm_t *comm, int64_t step)
{
    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is NULL");
    comm->step = step;
    return SBN_OK;
}

/* ---- the timeout rule of the backends that wait ---- */

static double capped_timeout(double seconds)
{
    return seconds > SBN_COMM_MAX_TIMEOUT ? SBN_COMM_MAX_TIMEOUT : seconds;
}

sbn_status sbn__comm_timeout(double requested, double *seconds)
{
    const sbn__env *env = sbn__env_get();
    const sbn__env_var *var = &env->var[SBN_ENV_COMM_TIMEOUT];

    if (requested > 0) { /* false for NaN too */
        *seconds = capped_timeout(requested);
        return SBN_OK;
    }
    *seconds = SBN_COMM_DEFAULT_TIMEOUT;
    if (!var->set) return SBN_OK; /* unset or blank: the default */
    if (!var->valid) return sbn__error(SBN_ERR_BAD_VALUE, "%s", var->message);
    *seconds = env->comm_timeout; /* env.c caps it as capped_timeout does */
    return SBN_OK;
}
