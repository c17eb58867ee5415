/*
 * comm_threads.c - the in-process backend: a world of W ranks, one handle per
 * rank, each used from its own thread. The world holds one slot per rank and a
 * reusable two-phase exchange under a mutex and a condition variable. Arrival:
 * each rank posts its send pointer and size, and the last to arrive opens the
 * round (a generation counter) for everyone; each rank then copies every slot
 * into its own recv outside the lock. Departure: nobody returns, and so reuses its
 * send buffer, until every rank has copied (a second generation counter). Waiting
 * for arrivals is bounded by the world's timeout (CLOCK_MONOTONIC; the argument,
 * else SBN_COMM_TIMEOUT, else 60 s, as sbn__comm_timeout decides); a timeout, a
 * size mismatch or a destroyed handle breaks the world, and from then on every
 * collective on any of its handles fails at once with the sentence that broke it.
 * The world is freed with its last handle. The merge allreduce uses the same
 * arrival and departure around its own middle: a reduce-scatter then allgather
 * over the ranks' own buffers when count >= W, a binary tree (with one condition
 * variable per rank) below, so that no rank reads more than 3 * count elements
 * whatever W; see scatter_merge and tree_merge. The header of every collective
 * takes the same arrival and departure too, but a rank reads only its ring
 * successor's header and one shared word unless the ranks disagree or one
 * failed (threads_headers). Traffic: a rank counts its posted payload as sent
 * once and what it reads from other ranks' buffers as received.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"
#include "core/alloc.h"
#include "core/export.h"
#include "core/status.h"

#define SBN_WORLD_MAX 4096
#define SBN_WORLD_TEXT 400

typedef struct world_slot {
    const void *send;
    size_t bytes;
    int posted; /* arrived in the open round */
    /* The tree merge: the round in which this rank's subtree / final result was ready. */
    uint64_t reduced, final;
    pthread_cond_t cond; /* this rank waits here for its tree neighbours */
} world_slot;

typedef struct sbn_world {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int size;
    int refs;            /* live handles */
    double timeout;      /* seconds */
    int arrived;         /* ranks arrived in the open round */
    int departed;        /* ranks done copying in the closing round */
    uint64_t round;      /* bumped when every rank has arrived */
    uint64_t leave;      /* bumped when every rank has copied */
    uint64_t disagreed;  /* the last round whose header check failed (threads_headers) */
    int broken;
    sbn_status broken_status;
    char broken_text[SBN_WORLD_TEXT];
    world_slot *slots;
} sbn_world;

typedef struct threads_comm {
    struct sbn_comm base; /* first: a sbn_comm_t * is a threads_comm * */
    sbn_world *world;
} threads_comm;

/* ---- the world ---- */

/* Marks the world broken (the first reason wins) and wakes every waiter; lock held. */
static void break_world(sbn_world *w, sbn_status status, const char *text)
{
    if (!w->broken) {
        w->broken = 1;
        w->broken_status = status;
        snprintf(w->broken_text, sizeof w->broken_text, "%s", text);
    }
    pthread_cond_broadcast(&w->cond);
}

/* `earlier`: the world was already broken when this collective began. */
static sbn_status broken_error(const sbn_world *w, int earlier)
{
    if (earlier)
        return sbn__error(w->broken_status, "the in-process world was broken before this "
                          "collective: %s", w->broken_text);
    return sbn__error(w->broken_status, "%s", w->broken_text);
}

static struct timespec deadline_after(double seconds)
{
    struct timespec ts;
    time_t whole = (time_t)seconds;
    long nanos = (long)((seconds - (double)whole) * 1e9);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += whole;
    ts.tv_nsec += nanos;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* "rank 2" or "ranks 1, 2, 5" for the ranks that have not posted; lock held. */
static void missing_ranks(const sbn_world *w, char *buf, size_t size)
{
    size_t len;
    int r, n = 0, shown = 0;
    for (r = 0; r < w->size; r++) n += !w->slots[r].posted;
    len = (size_t)snprintf(buf, size, "%s ", n == 1 ? "rank" : "ranks");
    for (r = 0; r < w->size && len < size; r++) {
        if (w->slots[r].posted) continue;
        if (shown == 8) {
            len += (size_t)snprintf(buf + len, size - len, ", ...");
            break;
        }
        len += (size_t)snprintf(buf + len, size - len, "%s%d", shown ? ", " : "", r);
        shown++;
    }
}

/* The last rank to arrive: checks the sizes and opens the round; lock held. */
static void open_round(sbn_world *w)
{
    int r;
    for (r = 1; r < w->size; r++) {
        if (w->slots[r].bytes != w->slots[0].bytes) {
            char text[SBN_WORLD_TEXT];
            snprintf(text, sizeof text, "rank 0 exchanged %zu bytes but rank %d exchanged %zu",
                     w->slots[0].bytes, r, w->slots[r].bytes);
            break_world(w, SBN_ERR_COMM_MISMATCH, text);
            return;
        }
    }
    for (r = 0; r < w->size; r++) w->slots[r].posted = 0;
    w->arrived = 0;
    w->round++;
    pthread_cond_broadcast(&w->cond);
}

/*
 * Arrival: posts (send, bytes) and waits, until the world's deadline, for every
 * rank to post; *round_out is then the number of the round just opened (the same
 * on every rank). Returns the broken world's error otherwise.
 */
static sbn_status arrive(threads_comm *c, const void *send, size_t bytes, uint64_t *round_out)
{
    sbn_world *w = c->world;
    struct timespec deadline = deadline_after(w->timeout);
    uint64_t round;
    int rank = c->base.rank;

    pthread_mutex_lock(&w->lock);
    if (w->broken) {
        sbn_status s = broken_error(w, 1);
        pthread_mutex_unlock(&w->lock);
        return s;
    }
    round = w->round;
    w->slots[rank].send = send;
    w->slots[rank].bytes = bytes;
    w->slots[rank].posted = 1;
    if (++w->arrived == w->size) open_round(w);
    while (w->round == round && !w->broken) {
        if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline) == ETIMEDOUT &&
            w->round == round && !w->broken) {
            char text[SBN_WORLD_TEXT], missing[SBN_WORLD_TEXT / 2];
            missing_ranks(w, missing, sizeof missing);
            snprintf(text, sizeof text, "rank %d timed out after %g s: %d of %d ranks arrived at "
                     "the collective, %s missing", rank, w->timeout, w->arrived, w->size,
                     missing);
            break_world(w, SBN_ERR_TIMEOUT, text);
        }
    }
    if (w->round == round) { /* broken before every rank arrived */
        sbn_status s = broken_error(w, 0);
        pthread_mutex_unlock(&w->lock);
        return s;
    }
    pthread_mutex_unlock(&w->lock);
    *round_out = round + 1; /* the next round needs this rank: nobody can open it yet */
    return SBN_OK;
}

/*
 * Returns once every rank of the open round has called it. Every rank is already
 * past its arrival, so nothing here can block for long: no timeout, and nothing
 * can break the world now. Departure (nobody leaves, and so reuses its buffer,
 * until every rank has read it) and the merge's middle step both use it.
 */
static void meet(sbn_world *w)
{
    uint64_t leave;
    pthread_mutex_lock(&w->lock);
    leave = w->leave;
    if (++w->departed == w->size) {
        w->departed = 0;
        w->leave++;
        pthread_cond_broadcast(&w->cond);
    }
    while (w->leave == leave) pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

static sbn_status threads_allgather(sbn_comm_t *base, const void *send, size_t bytes, void *recv)
{
    threads_comm *c = (threads_comm *)base;
    sbn_world *w = c->world;
    uint64_t round;
    sbn_status s = arrive(c, send, bytes, &round);
    int r;

    if (SBN_FAILED(s)) return s;
    /* The slots stay valid until every rank has departed. */
    if (bytes > 0)
        for (r = 0; r < w->size; r++)
            memcpy((char *)recv + (size_t)r * bytes, w->slots[r].send, bytes);
    if (w->size > 1) sbn__comm_count(base, bytes, (uint64_t)(w->size - 1) * bytes);
    meet(w);
    return SBN_OK;
}

static sbn_status threads_barrier(sbn_comm_t *base)
{
    return threads_allgather(base, NULL, 0, NULL);
}

/* ---- the header exchange ---- */

/*
 * The header check in O(1) per rank. Every rank posts its header as for an
 * allgather (the same timed arrival), then compares its ring successor's,
 * rank (r + 1) % size, with its own on every word that must agree and looks at
 * the successor's op and status; a difference or a failure marks the round in
 * the world's `disagreed` word. Every adjacent pair agreeing is every pair
 * agreeing, and every rank's header is seen by its predecessor, so after a meet
 * that word is the verdict of every rank: clear, nothing else is read; set,
 * every rank copies every header into comm->headers for the generic verdicts
 * and meets again before leaving (the headers live on their ranks' stacks). A
 * world of one compares its header with itself and still sees its own failure.
 * Read per rank: the successor's header and the word, W - 1 headers more when
 * the check failed. The word is written under the lock, before the meet, and
 * read after it; no rank can write it again before every rank arrives again.
 */
static sbn_status threads_headers(sbn_comm_t *base, const int64_t *mine, int *all_agree)
{
    threads_comm *c = (threads_comm *)base;
    sbn_world *w = c->world;
    const size_t bytes = SBN_HDR_WORDS * sizeof(int64_t);
    const int64_t *next;
    uint64_t round, got = bytes + sizeof w->disagreed;
    sbn_status s = arrive(c, mine, bytes, &round);
    int r, same = 1;

    *all_agree = 0;
    if (SBN_FAILED(s)) return s;
    next = w->slots[(base->rank + 1) % w->size].send;
    for (r = 0; r < SBN_HDR_STATUS; r++) same = same && next[r] == mine[r];
    if (!same || next[SBN_HDR_OP] == SBN_OP_FAIL || next[SBN_HDR_STATUS] != 0) {
        pthread_mutex_lock(&w->lock);
        w->disagreed = round;
        pthread_mutex_unlock(&w->lock);
    }
    meet(w);
    *all_agree = w->disagreed != round;
    if (!*all_agree) {
        for (r = 0; r < w->size; r++)
            memcpy(base->headers + (size_t)r * SBN_HDR_WORDS, w->slots[r].send, bytes);
        got += (uint64_t)(w->size - 1) * bytes;
        meet(w);
    }
    if (w->size > 1) sbn__comm_count(base, bytes, got);
    return SBN_OK;
}

/* ---- the merge allreduce ---- */

/* Slice r of `count` elements over `size` ranks: [lo, lo + n), the first count % size longer. */
static void slice_of(size_t count, int size, int r, size_t *lo, size_t *n)
{
    size_t base = count / (size_t)size, extra = count % (size_t)size, ur = (size_t)r;
    *lo = ur * base + (ur < extra ? ur : extra);
    *n = base + (ur < extra ? 1 : 0);
}

/*
 * count >= size: a reduce-scatter then an allgather over the ranks' own buffers,
 * with no copy of their own. Rank r owns slice r (n_r = count / size elements,
 * give or take one) and merges slice r of every other rank's buffer into slice r
 * of its own: nobody else reads slice r of rank r's buffer in that step. After a
 * meet, rank r copies slice q of rank q's buffer into its own for every q != r
 * (nobody reads those slices of rank r's buffer in this step). Read per rank:
 * (size - 1) * n_r + (count - n_r) elements, under 2 * count when size divides
 * count and under 3 * count always, whatever the size.
 */
static void scatter_merge(threads_comm *c, unsigned char *data, size_t count, size_t elem,
                          sbn_comm_merge_fn merge)
{
    sbn_world *w = c->world;
    int me = c->base.rank, size = w->size, k;
    size_t lo, n, qlo, qn;
    uint64_t got = 0;

    slice_of(count, size, me, &lo, &n);
    for (k = 1; k < size; k++) { /* from rank me + 1 on, so that the ranks spread their reads */
        const unsigned char *theirs = w->slots[(me + k) % size].send;
        merge(data + lo * elem, theirs + lo * elem, n);
        got += n * elem;
    }
    meet(w);
    for (k = 1; k < size; k++) {
        int q = (me + k) % size;
        slice_of(count, size, q, &qlo, &qn);
        memcpy(data + qlo * elem, (const unsigned char *)w->slots[q].send + qlo * elem, qn * elem);
        got += qn * elem;
    }
    sbn__comm_count(&c->base, count * elem, got);
}

/*
 * count < size (slices would be empty, and a rank owning one element would read
 * it from all size - 1 peers): a binary tree, rank r's children 2r + 1 and
 * 2r + 2. Up: rank r waits for each child's subtree to be merged into the child's
 * buffer, then merges it into its own. Down: rank r waits for its parent's final
 * result and copies it over its own buffer. Read per rank: at most 2 * count
 * elements up and count down; 2 * log2(size) steps deep. The `reduced` and
 * `final` words carry the round number, so stale ones never match.
 */
static void tree_merge(threads_comm *c, unsigned char *data, size_t count, size_t elem,
                       sbn_comm_merge_fn merge, uint64_t round)
{
    sbn_world *w = c->world;
    int me = c->base.rank, parent = (me - 1) / 2, k;
    size_t bytes = count * elem;
    uint64_t got = 0;

    for (k = 1; k <= 2 && 2 * me + k < w->size; k++) {
        int child = 2 * me + k;
        pthread_mutex_lock(&w->lock);
        while (w->slots[child].reduced != round) pthread_cond_wait(&w->slots[me].cond, &w->lock);
        pthread_mutex_unlock(&w->lock);
        merge(data, w->slots[child].send, count);
        got += bytes;
    }
    pthread_mutex_lock(&w->lock);
    w->slots[me].reduced = round;
    if (me > 0) {
        pthread_cond_signal(&w->slots[parent].cond);
        while (w->slots[parent].final != round) pthread_cond_wait(&w->slots[me].cond, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    if (me > 0) {
        memcpy(data, w->slots[parent].send, bytes);
        got += bytes;
    }
    pthread_mutex_lock(&w->lock);
    w->slots[me].final = round;
    for (k = 1; k <= 2 && 2 * me + k < w->size; k++)
        pthread_cond_signal(&w->slots[2 * me + k].cond);
    pthread_mutex_unlock(&w->lock);
    sbn__comm_count(&c->base, bytes, got);
}

/* Arrival as for an allgather (the buffer posted), the merge, then departure. */
static sbn_status threads_merge(sbn_comm_t *base, void *data, size_t count, size_t elem_bytes,
                                sbn_comm_merge_fn merge)
{
    threads_comm *c = (threads_comm *)base;
    uint64_t round;
    sbn_status s = arrive(c, data, count * elem_bytes, &round);
    if (SBN_FAILED(s)) return s;
    if (count >= (size_t)c->world->size)
        scatter_merge(c, data, count, elem_bytes, merge);
    else
        tree_merge(c, data, count, elem_bytes, merge, round);
    meet(c->world);
    return SBN_OK;
}

static void free_world(sbn_world *w)
{
    int r;
    for (r = 0; r < w->size; r++) pthread_cond_destroy(&w->slots[r].cond);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    sbn__free(w->slots);
    sbn__free(w);
}

/* Drops one reference; the last frees the world. Otherwise the world can no longer meet. */
static void release_world(sbn_world *w, int rank)
{
    int last;
    pthread_mutex_lock(&w->lock);
    last = --w->refs == 0;
    if (!last && rank >= 0) {
        char text[SBN_WORLD_TEXT];
        snprintf(text, sizeof text, "rank %d's handle was destroyed, so no collective can "
                 "complete", rank);
        break_world(w, SBN_ERR_PEER_FAILED, text);
    }
    pthread_mutex_unlock(&w->lock);
    if (last) free_world(w);
}

static void threads_destroy(sbn_comm_t *base)
{
    threads_comm *c = (threads_comm *)base;
    sbn_world *w = c->world;
    int rank = base->rank;
    sbn__free(c);
    release_world(w, rank);
}

static const struct sbn__comm_vtable threads_vtable = {
    .allgather_bytes = threads_allgather,
    .barrier = threads_barrier,
    .destroy = threads_destroy,
    .allreduce_merge = threads_merge,
    .exchange_headers = threads_headers,
};

/* ---- creation ---- */

static sbn_status create_world(int size, double timeout, sbn_world **out)
{
    pthread_condattr_t attr;
    sbn_world *w;
    int rc, r;

    *out = NULL;
    w = sbn__calloc(1, sizeof *w);
    if (w == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate a world of %d ranks", size);
    w->slots = sbn__calloc((size_t)size, sizeof *w->slots);
    if (w->slots == NULL) {
        sbn__free(w);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the %d slots of a world",
                          size);
    }
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        sbn__free(w->slots);
        sbn__free(w);
        return sbn__error(SBN_ERR_THREAD, "could not initialize the world's mutex");
    }
    rc = pthread_condattr_init(&attr);
    if (rc == 0) {
        rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (rc == 0) rc = pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (rc != 0) {
        pthread_mutex_destroy(&w->lock);
        sbn__free(w->slots);
        sbn__free(w);
        return sbn__error(SBN_ERR_THREAD, "could not initialize the world's condition variable "
                          "on CLOCK_MONOTONIC (error %d)", rc);
    }
    for (r = 0; r < size; r++) { /* the tree merge's, untimed */
        rc = pthread_cond_init(&w->slots[r].cond, NULL);
        if (rc != 0) {
            while (--r >= 0) pthread_cond_destroy(&w->slots[r].cond);
            pthread_cond_destroy(&w->cond);
            pthread_mutex_destroy(&w->lock);
            sbn__free(w->slots);
            sbn__free(w);
            return sbn__error(SBN_ERR_THREAD, "could not initialize the condition variables of "
                              "a world of %d ranks (error %d)", size, rc);
        }
    }
    w->size = size;
    w->timeout = timeout;
    *out = w;
    return SBN_OK;
}

SBN_API sbn_status sbn_comm_threads_create(int world, double timeout_seconds, sbn_comm_t **comms)
{
    sbn_world *w;
    sbn_status s;
    int r, made;

    sbn__clear_error();
    if (comms == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "comms (the output array) is NULL");
    if (world < 1 || world > SBN_WORLD_MAX)
        return sbn__error(SBN_ERR_BAD_VALUE, "world is %d; expected 1 to %d ranks", world,
                          SBN_WORLD_MAX);
    for (r = 0; r < world; r++) comms[r] = NULL;
    s = sbn__comm_timeout(timeout_seconds, &timeout_seconds);
    if (SBN_FAILED(s)) return s;

    s = create_world(world, timeout_seconds, &w);
    if (SBN_FAILED(s)) return s;
    for (made = 0; made < world; made++) {
        threads_comm *c = sbn__calloc(1, sizeof *c);
        if (c == NULL) {
            s = sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the handle of rank %d of %d",
                           made, world);
            break;
        }
        s = sbn__comm_init(&c->base, &threads_vtable, made, world);
        if (SBN_FAILED(s)) {
            sbn__free(c);
            break;
        }
        c->world = w;
        comms[made] = &c->base;
    }
    w->refs = made;
    if (made == world) return SBN_OK;

    /* Undo: free the handles made so far, then the world. */
    for (r = 0; r < made; r++) {
        threads_comm *c = (threads_comm *)comms[r];
        comms[r] = NULL;
        sbn__comm_release(&c->base);
        sbn__free(c);
    }
    free_world(w);
    return s;
}
