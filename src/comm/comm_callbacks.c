/*
 * comm_callbacks.c - the backend that lets a framework carry the bytes: the
 * handle keeps the user's allgather, barrier, destroy and allreduce callbacks and
 * their `user` pointer. A nonzero return from a callback becomes SBN_ERR_COMM
 * with a sentence naming the callback and the value. Without a barrier callback,
 * the barrier is an allgather of one byte into a buffer allocated at creation.
 * Without an allreduce callback, the handle's vtable has no allreduce_merge and
 * the generic layer merges an allgather of every rank's data in rank order (so
 * each rank receives size * count * elem_bytes bytes). Traffic: what is handed
 * to the callbacks and what they hand back. On a failed creation the user's
 * destroy callback is not called: `user` stays the caller's.
 *
 * With an allreduce_int64 callback (and at most 2^20 ranks) the header check is
 * one MAX over a fixed CB_HEADER_WORDS words: the six words the ranks must agree
 * on, their complements (MAX of ~x is ~MIN of x, so a word agrees on every rank
 * iff its maximum is the complement of its complement's maximum), a flag set by a
 * failing rank, and up to CB_RIDE values that ride along (the tops of the layer's
 * accumulators), padded with INT64_MIN. The size never depends on the call, so
 * ranks that disagree on everything still make the same-sized collective; every
 * rank sees the same maxima, so a disagreement makes every rank gather the
 * headers (allgather) for the generic verdicts. The accumulators' merge is then a
 * MAX of the tops that did not ride (count > CB_RIDE) and one SUM of their packed
 * words (core/rsum.h). Once the collectives repeat with a period (a training
 * step's forward and backward alternate), the merge is one SUM: it guesses the
 * header and the maximum tops from the collective one period back and proves the
 * guess in the same SUM (comm_spec.h), falling back to the MAX and the SUM when
 * the guess fails on any rank; either way the bits of the rank-order merge.
 */
#include "comm_internal.h"
#include "comm_spec.h"
#include "core/alloc.h"
#include "core/export.h"
#include "core/rsum.h"
#include "core/status.h"

#define CB_CHECKED 6                       /* header words before SBN_HDR_STATUS */
#define CB_HEADER_WORDS 64
#define CB_RIDE (CB_HEADER_WORDS - 2 * CB_CHECKED - 1)

typedef struct callbacks_comm {
    struct sbn_comm base; /* first: a sbn_comm_t * is a callbacks_comm * */
    sbn_comm_callbacks cb;
    void *user;
    unsigned char *barrier_recv; /* size bytes, only without a barrier callback */
    sbn__spec spec;              /* the guesses of the speculative merge (with merge_rsum) */
} callbacks_comm;

static sbn_status callbacks_allgather(sbn_comm_t *base, const void *send, size_t bytes,
                                      void *recv)
{
    callbacks_comm *c = (callbacks_comm *)base;
    int rc = c->cb.allgather(c->user, send, bytes, recv);
    if (rc != 0)
        return sbn__error(SBN_ERR_COMM, "the allgather callback returned %d on rank %d of %d "
                          "(%zu bytes per rank)", rc, base->rank, base->size, bytes);
    sbn__comm_count(base, bytes, (uint64_t)base->size * bytes);
    return SBN_OK;
}

static sbn_status callbacks_barrier(sbn_comm_t *base)
{
    callbacks_comm *c = (callbacks_comm *)base;
    unsigned char token = 0;
    int rc;
    if (c->cb.barrier != NULL) {
        rc = c->cb.barrier(c->user);
        if (rc != 0)
            return sbn__error(SBN_ERR_COMM, "the barrier callback returned %d on rank %d of %d",
                              rc, base->rank, base->size);
        return SBN_OK;
    }
    rc = c->cb.allgather(c->user, &token, 1, c->barrier_recv);
    if (rc != 0)
        return sbn__error(SBN_ERR_COMM, "the allgather callback returned %d on rank %d of %d "
                          "(the one-byte allgather that stands for the barrier)",
                          rc, base->rank, base->size);
    sbn__comm_count(base, 1, (uint64_t)base->size);
    return SBN_OK;
}

static sbn_status callbacks_allreduce(sbn_comm_t *base, void *data, size_t count,
                                      size_t elem_bytes, sbn_comm_merge_fn merge)
{
    callbacks_comm *c = (callbacks_comm *)base;
    int rc = c->cb.allreduce(c->user, data, count, elem_bytes, merge);
    if (rc != 0)
        return sbn__error(SBN_ERR_COMM, "the allreduce callback returned %d on rank %d of %d "
                          "(%zu elements of %zu bytes)", rc, base->rank, base->size, count,
                          elem_bytes);
    sbn__comm_count(base, (uint64_t)count * elem_bytes, (uint64_t)count * elem_bytes);
    return SBN_OK;
}

static sbn_status int_allreduce(callbacks_comm *c, int64_t *data, size_t count, int op,
                                const char *what)
{
    int rc = c->cb.allreduce_int64(c->user, data, count, op);
    if (rc != 0) {
        sbn__spec_forget(&c->spec); /* the peers may have gone on: no guess is shared now */
        return sbn__error(SBN_ERR_COMM, "the allreduce_int64 callback returned %d on rank %d of %d "
                          "(%s: %zu values, %s)", rc, c->base.rank, c->base.size, what, count,
                          op == SBN_COMM_INT_MAX ? "max" : "sum");
    }
    sbn__comm_count(&c->base, (uint64_t)count * 8, (uint64_t)count * 8);
    return SBN_OK;
}

static sbn_status callbacks_headers(sbn_comm_t *base, const int64_t *mine, int *all_agree)
{
    callbacks_comm *c = (callbacks_comm *)base;
    int64_t buf[CB_HEADER_WORDS];
    size_t ride = base->ride_n < CB_RIDE ? base->ride_n : CB_RIDE, i;
    sbn_status s;
    int w, agree;
    if (sbn__spec_armed(&c->spec)) {
        /* every rank starts with the guessed SUM (its size is the guess's, the same on all) */
        size_t m = sbn__spec_words(sbn__spec_guess_n(&c->spec));
        sbn__spec_fill(&c->spec, mine, base->ride_data, base->ride, base->ride_n);
        s = int_allreduce(c, c->spec.buf, m, SBN_COMM_INT_SUM, "speculative merge");
        if (SBN_FAILED(s)) return s;
        if (sbn__spec_verdict(&c->spec, base->size, base->ride_data)) {
            const int64_t *guessed = c->spec.rec[c->spec.guess].tops;
            sbn__spec_record_start(&c->spec, mine, base->ride_n);
            sbn__spec_record_tops(&c->spec, guessed, base->ride_n);
            base->merged = 1;
            *all_agree = 1;
            return SBN_OK;
        }
    }
    for (w = 0; w < CB_CHECKED; w++) {
        buf[w] = mine[w];
        buf[CB_CHECKED + w] = ~mine[w];
    }
    buf[2 * CB_CHECKED] = mine[SBN_HDR_OP] == SBN_OP_FAIL;
    for (i = 0; i < CB_RIDE; i++)
        buf[2 * CB_CHECKED + 1 + i] = i < ride ? base->ride[i] : INT64_MIN;
    s = int_allreduce(c, buf, CB_HEADER_WORDS, SBN_COMM_INT_MAX, "header");
    if (SBN_FAILED(s)) return s;
    agree = buf[2 * CB_CHECKED] == 0;
    for (w = 0; w < CB_CHECKED; w++) agree = agree && buf[w] == ~buf[CB_CHECKED + w];
    *all_agree = agree;
    /* a merge that agreed becomes a guess once merge_rsum has its maximum tops */
    sbn__spec_record_start(&c->spec, agree && base->ride_data != NULL ? mine : NULL,
                           base->ride_n);
    if (agree) {
        for (i = 0; i < ride; i++) base->ride[i] = buf[2 * CB_CHECKED + 1 + i];
        return SBN_OK;
    }
    /* every rank saw these maxima: every rank gathers the headers for the verdicts */
    return callbacks_allgather(base, mine, SBN_HDR_WORDS * sizeof(int64_t), base->headers);
}

static sbn_status callbacks_merge_rsum(sbn_comm_t *base, void *data, size_t count, int64_t *tops,
                                       int64_t *words)
{
    callbacks_comm *c = (callbacks_comm *)base;
    sbn_status s;
    if (count > CB_RIDE) {
        s = int_allreduce(c, tops + CB_RIDE, count - CB_RIDE, SBN_COMM_INT_MAX, "tops");
        if (SBN_FAILED(s)) return s;
    }
    sbn__rsum_pack(data, count, tops, words);
    s = int_allreduce(c, words, count * SBN_RSUM_INT_WORDS, SBN_COMM_INT_SUM, "sums");
    if (SBN_FAILED(s)) return s;
    sbn__rsum_unpack(data, count, tops, words);
    sbn__spec_record_tops(&c->spec, tops, count);
    return SBN_OK;
}

static sbn_status callbacks_prepare_rsum(sbn_comm_t *base, size_t count)
{
    return sbn__spec_reserve(&((callbacks_comm *)base)->spec, count);
}

static void callbacks_destroy(sbn_comm_t *base)
{
    callbacks_comm *c = (callbacks_comm *)base;
    if (c->cb.destroy != NULL) c->cb.destroy(c->user);
    sbn__spec_free(&c->spec);
    sbn__free(c->barrier_recv);
    sbn__free(c);
}

/* Without an allreduce callback: the generic layer's allgather-then-merge. */
static const struct sbn__comm_vtable callbacks_vtable = {
    .allgather_bytes = callbacks_allgather,
    .barrier = callbacks_barrier,
    .destroy = callbacks_destroy,
};

static const struct sbn__comm_vtable callbacks_vtable_allreduce = {
    .allgather_bytes = callbacks_allgather,
    .barrier = callbacks_barrier,
    .destroy = callbacks_destroy,
    .allreduce_merge = callbacks_allreduce,
};

/* With allreduce_int64: four tables, with and without the allreduce callback. */
static const struct sbn__comm_vtable callbacks_vtable_int = {
    .allgather_bytes = callbacks_allgather,
    .barrier = callbacks_barrier,
    .destroy = callbacks_destroy,
    .exchange_headers = callbacks_headers,
    .merge_rsum = callbacks_merge_rsum,
    .prepare_rsum = callbacks_prepare_rsum,
};

static const struct sbn__comm_vtable callbacks_vtable_int_allreduce = {
    .allgather_bytes = callbacks_allgather,
    .barrier = callbacks_barrier,
    .destroy = callbacks_destroy,
    .allreduce_merge = callbacks_allreduce,
    .exchange_headers = callbacks_headers,
    .merge_rsum = callbacks_merge_rsum,
    .prepare_rsum = callbacks_prepare_rsum,
};

SBN_API sbn_status sbn_comm_callbacks_create(int rank, int size, const sbn_comm_callbacks *callbacks,
                                             void *user, sbn_comm_t **comm)
{
    const struct sbn__comm_vtable *vt;
    callbacks_comm *c;
    sbn_status s;

    sbn__clear_error();
    if (comm == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm (the output pointer) is NULL");
    *comm = NULL;
    if (callbacks == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "callbacks is NULL");
    if (callbacks->allgather == NULL)
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "callbacks->allgather is NULL; it is required");
    if (size < 1) return sbn__error(SBN_ERR_BAD_VALUE, "size is %d; expected at least 1", size);
    if (rank < 0 || rank >= size)
        return sbn__error(SBN_ERR_BAD_VALUE, "rank is %d; expected 0 to %d (size %d)", rank,
                          size - 1, size);

    c = sbn__calloc(1, sizeof *c);
    if (c == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate a callbacks communicator");
    c->cb = *callbacks;
    c->user = user;
    if (callbacks->barrier == NULL) {
        c->barrier_recv = sbn__malloc((size_t)size);
        if (c->barrier_recv == NULL) {
            sbn__free(c);
            return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the %d-byte barrier "
                              "buffer", size);
        }
    }
    if (callbacks->allreduce_int64 != NULL && size <= SBN_RSUM_INT_MAX_RANKS)
        vt = callbacks->allreduce ? &callbacks_vtable_int_allreduce : &callbacks_vtable_int;
    else
        vt = callbacks->allreduce ? &callbacks_vtable_allreduce : &callbacks_vtable;
    s = sbn__comm_init(&c->base, vt, rank, size);
    if (SBN_FAILED(s)) {
        sbn__free(c->barrier_recv);
        sbn__free(c);
        return s;
    }
    if (vt->merge_rsum != NULL) c->base.ride_cap = CB_RIDE;
    *comm = &c->base;
    return SBN_OK;
}
