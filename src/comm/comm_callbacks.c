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
 */
#include "comm_internal.h"

typedef struct callbacks_comm {
    struct sbn_comm base; /* first: a sbn_comm_t * is a callbacks_comm * */
    sbn_comm_callbacks cb;
    void *user;
    unsigned char *barrier_recv; /* size bytes, only without a barrier callback */
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

static void callbacks_destroy(sbn_comm_t *base)
{
    callbacks_comm *c = (callbacks_comm *)base;
    if (c->cb.destroy != NULL) c->cb.destroy(c->user);
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

SBN_API sbn_status sbn_comm_callbacks_create(int rank, int size, const sbn_comm_callbacks *callbacks,
                                             void *user, sbn_comm_t **comm)
{
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
    s = sbn__comm_init(&c->base,
                       callbacks->allreduce ? &callbacks_vtable_allreduce : &callbacks_vtable,
                       rank, size);
    if (SBN_FAILED(s)) {
        sbn__free(c->barrier_recv);
        sbn__free(c);
        return s;
    }
    *comm = &c->base;
    return SBN_OK;
}
