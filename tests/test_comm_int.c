/*
 * test_comm_int.c - the callbacks backend with an allreduce_int64 callback (the
 * path torch.distributed takes): a fake framework of W threads whose int64
 * allreduce combines the ranks in a different order for every element and rank
 * (a rotation), so only an exact, order-free protocol gives the same bytes.
 * Covered, for W = 1..5: the merge of the library's accumulators (sbn__rsum, with
 * negative, huge, tiny, infinite and NaN terms and empty accumulators) equals the
 * rank-order sbn__rsum_merge_bytes byte for byte, for counts that fit in the
 * header's ride (13) and that need a second MAX (193); the bytes each rank hands
 * to the callbacks are the same formula at every W (flat); a count mismatch (10
 * against 6) is SBN_ERR_COMM_MISMATCH on every rank naming both calls; a failed
 * rank is SBN_ERR_PEER_FAILED on the others; another merge (xor, not the
 * accumulators) still gives the rank-order result through the allgather. The
 * speculative merge (comm_spec.h): alternating merges of 13 and 193 take one SUM
 * once two steps show the period, fall back (guessed SUM, MAX, SUM) when one
 * rank's top rises and when the maximum top falls; merges of 13 alone (period 1)
 * and two of 13 then two of 193 (period 4) take one SUM too; the result is always
 * the rank-order bytes; an
 * armed handle still reports a step mismatch, a count mismatch and a failed rank. The
 * layer: reproducible forward + backward over the bus, W = 3 with a split of 3, 0
 * and 4 samples, gives W = 1's bits (threads backend, whole batch) for y,
 * grad_input, the saved and running statistics and the synced parameter gradients.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rsum.h"
#include "harness/harness.h"
#include "support/world.h"
#include "syncbn/comm.h"
#include "syncbn/layer.h"

#define MAXW 5

typedef struct bus {
    pthread_barrier_t meet;
    int size;
    int64_t *data[MAXW];
    size_t count[MAXW];
    int op[MAXW];
    uint64_t sent[MAXW], received[MAXW];
} bus;

typedef struct endpoint {
    bus *b;
    int rank;
} endpoint;

static int bus_allreduce_int64(void *user, int64_t *data, size_t count, int op)
{
    endpoint *e = user;
    bus *b = e->b;
    int64_t *out = malloc(count * sizeof *out + 1);
    int r, bad = 0;
    size_t i;
    b->data[e->rank] = data;
    b->count[e->rank] = count;
    b->op[e->rank] = op;
    pthread_barrier_wait(&b->meet);
    for (r = 0; r < b->size; r++) bad |= b->count[r] != count || b->op[r] != op;
    for (i = 0; !bad && i < count; i++) { /* ranks in a rotated order per element and rank */
        int first = (int)((i + (size_t)e->rank) % (size_t)b->size), k;
        int64_t v = b->data[first][i];
        for (k = 1; k < b->size; k++) {
            int64_t x = b->data[(first + k) % b->size][i];
            if (op == SBN_COMM_INT_SUM) v = (int64_t)((uint64_t)v + (uint64_t)x);
            else if (x > v) v = x;
        }
        out[i] = v;
    }
    pthread_barrier_wait(&b->meet);
    if (!bad) memcpy(data, out, count * sizeof *out);
    free(out);
    pthread_barrier_wait(&b->meet);
    return bad ? 9 : 0;
}

static int bus_allgather(void *user, const void *send, size_t bytes, void *recv)
{
    endpoint *e = user;
    bus *b = e->b;
    int r;
    b->data[e->rank] = (int64_t *)(uintptr_t)send;
    b->count[e->rank] = bytes;
    pthread_barrier_wait(&b->meet);
    for (r = 0; r < b->size; r++)
        memcpy((char *)recv + (size_t)r * bytes, b->data[r], bytes);
    pthread_barrier_wait(&b->meet);
    return 0;
}

/* Rank r's accumulators of a case: deterministic, so every thread can rebuild any rank's. */
static void build(sbn__rsum *acc, size_t n, int rank, unsigned seed)
{
    uint64_t s = 0x9E3779B97F4A7C15u * (seed + 1) + (uint64_t)rank * 7919u;
    size_t i;
    int k;
    sbn__rsum_clear(acc, n);
    for (i = 0; i < n; i++) {
        int terms = (int)((i + (size_t)rank) % 7); /* 0: an empty accumulator */
        for (k = 0; k < terms; k++) {
            double m;
            int e;
            s = s * 6364136223846793005u + 1442695040888963407u;
            m = (double)(s >> 11) / 9007199254740992.0 - 0.5;
            e = (int)((s >> 3) % 200) - 100 + (int)(i % 5) * 150 - 300;
            sbn__rsum_add(&acc[i], ldexp(m, e));
        }
    }
    if (n > 7 && rank == 1) sbn__rsum_add(&acc[3], INFINITY);
    if (n > 7 && rank == 2) sbn__rsum_add(&acc[3], -INFINITY);
    if (n > 7 && rank == 0) sbn__rsum_add(&acc[5], NAN);
    if (n > 7) sbn__rsum_add(&acc[6], ldexp(1.0, 1020) * (rank % 2 ? -1.5 : 1.75));
}

static void xor_merge(void *inout, const void *in, size_t count)
{
    uint64_t *a = inout;
    const uint64_t *b = in;
    size_t i;
    for (i = 0; i < count; i++) a[i] = (a[i] ^ b[i]) * 3 + 1; /* not commutative: order shows */
}

typedef struct rank_ctx {
    int rank, world, failed;
    char msg[800];
    bus *b;
    endpoint ep;
} rank_ctx;

static const size_t k_counts[] = {13, 193};

static void rank_run(rank_ctx *c, sbn_comm_t **out)
{
    sbn_comm_callbacks cb = {bus_allgather, NULL, NULL, NULL, bus_allreduce_int64};
    sbn__rsum acc[193], want[193], other[193];
    uint64_t x[4], xw[4];
    size_t j;
    int r;
    c->ep.b = c->b;
    c->ep.rank = c->rank;
    RSTATUS(c, sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, out), SBN_OK);
    for (j = 0; j < 2; j++) {
        size_t n = k_counts[j];
        uint64_t s0, r0, s1, r1;
        build(acc, n, c->rank, (unsigned)j);
        build(want, n, 0, (unsigned)j);
        for (r = 1; r < c->world; r++) {
            build(other, n, r, (unsigned)j);
            sbn__rsum_merge_bytes(want, other, n);
        }
        sbn_comm_traffic(*out, &s0, &r0);
        RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, n, sizeof(sbn__rsum), sbn__rsum_merge_bytes,
                                            (int64_t)n), SBN_OK);
        sbn_comm_traffic(*out, &s1, &r1);
        RCHECK(c, memcmp(acc, want, n * sizeof *acc) == 0, "count %zu: merged bytes differ from "
               "the rank-order merge", n);
        RCHECK(c, sbn__rsum_value(&acc[3]) != sbn__rsum_value(&acc[3]) || c->world < 3,
               "+inf and -inf merge to NaN");
        c->b->sent[c->rank] = s1 - s0;
        c->b->received[c->rank] = r1 - r0;
        /* every rank's traffic of this merge, checked by the caller of the world */
        RCHECK(c, c->world == 1 || s1 - s0 == 512 + 88 * n + (n > 51 ? 8 * (n - 51) : 0),
               "count %zu: %llu bytes sent", n, (unsigned long long)(s1 - s0));
        RCHECK(c, s1 - s0 == r1 - r0, "sent %llu, received %llu", (unsigned long long)(s1 - s0),
               (unsigned long long)(r1 - r0));
    }
    /* another merge: the rank-order allgather merge, after the folded header */
    for (j = 0; j < 4; j++) x[j] = xw[j] = 0x1234567u * (j + 1);
    for (r = 1; r < c->world; r++) {
        uint64_t y[4];
        for (j = 0; j < 4; j++) y[j] = 0x1234567u * (j + 1) + (uint64_t)r * 77u;
        xor_merge(xw, y, 4);
    }
    for (j = 0; j < 4; j++) x[j] += (uint64_t)c->rank * 77u;
    RSTATUS(c, sbn_comm_allreduce_merge(*out, x, 4, 8, xor_merge, 1), SBN_OK);
    RCHECK(c, memcmp(x, xw, sizeof x) == 0, "xor merge differs from the rank-order merge");
    if (c->world == 1) return;
    /* the last rank calls a merge of 6 where the others call one of 10 */
    RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, c->rank == c->world - 1 ? 6 : 10,
                                        sizeof(sbn__rsum), sbn__rsum_merge_bytes, 3),
            SBN_ERR_COMM_MISMATCH);
    RHAS(c, "allreduce_merge (count 10");
    RHAS(c, "allreduce_merge (count 6");
    /* rank 0 fails; the others are in a merge */
    if (c->rank == 0) {
        RSTATUS(c, sbn_comm_fail(*out, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, 13, sizeof(sbn__rsum),
                                            sbn__rsum_merge_bytes, 13), SBN_ERR_PEER_FAILED);
        RHAS(c, "SBN_ERR_BAD_SHAPE");
    }
}

static void *rank_main(void *p)
{
    sbn_comm_t *comm = NULL;
    rank_run(p, &comm);
    sbn_comm_destroy(comm);
    return NULL;
}

static void merges_over_int64(void)
{
    uint64_t per_w[MAXW + 1];
    int w, r;
    for (w = 1; w <= MAXW; w++) {
        rank_ctx ctx[MAXW];
        pthread_t threads[MAXW];
        bus b;
        memset(&b, 0, sizeof b);
        pthread_barrier_init(&b.meet, NULL, (unsigned)w);
        b.size = w;
        for (r = 0; r < w; r++) {
            memset(&ctx[r], 0, sizeof ctx[r]);
            ctx[r].rank = r;
            ctx[r].world = w;
            ctx[r].b = &b;
            if (pthread_create(&threads[r], NULL, rank_main, &ctx[r]) != 0) exit(1);
        }
        for (r = 0; r < w; r++) pthread_join(threads[r], NULL);
        pthread_barrier_destroy(&b.meet);
        for (r = 0; r < w; r++) {
            CHECK_MSG(!ctx[r].failed, "world %d: %s", w, ctx[r].msg);
            CHECK_MSG(b.sent[r] == b.sent[0], "world %d: rank %d sent %llu, rank 0 %llu", w, r,
                      (unsigned long long)b.sent[r], (unsigned long long)b.sent[0]);
        }
        per_w[w] = b.sent[0];
    }
    /* the last merge (193 accumulators) moves the same bytes per rank at W = 2..5 */
    for (w = 3; w <= MAXW; w++)
        CHECK_MSG(per_w[w] == per_w[2], "W %d: %llu bytes, W 2: %llu", w,
                  (unsigned long long)per_w[w], (unsigned long long)per_w[2]);
}

/* ---- the speculative one-SUM merge (comm_spec.h) ---- */

static uint64_t normal_bytes(size_t n)
{
    return 512 + 88 * n + (n > 51 ? 8 * (n - 51) : 0);
}

static uint64_t spec_bytes(size_t n)
{
    return 8 * (11 * n + (n + 2) / 3 + 3);
}

/*
 * Merge j of the speculation script: its count, step, whether rank 1 adds a huge
 * term to accumulator 0 (its top rises above every other rank's), the count of the
 * guess it starts with (0: none, the two-collective path alone) and whether the
 * guess holds; the bytes each rank hands the callbacks follow (a hit: the guessed
 * SUM alone; a miss: the guessed SUM, then the MAX and the SUM).
 */
typedef struct spec_merge {
    size_t n;
    int64_t step;
    int huge;
    size_t guess;
    int hit;
} spec_merge;

static const spec_merge k_script[] = {
    {13, 1, 0, 0, 0}, {193, 1, 0, 0, 0}, /* forwards and backwards: two steps show the period */
    {13, 2, 0, 0, 0}, {193, 2, 0, 0, 0},
    {13, 3, 0, 13, 1}, {193, 3, 0, 193, 1}, /* the next step: one SUM each */
    {13, 4, 1, 13, 0},                      /* rank 1's top rose: it does not fit */
    {193, 4, 0, 193, 1},
    {13, 5, 0, 13, 0},                      /* the guessed top is nobody's: the maximum fell */
    {193, 5, 0, 193, 1}, {13, 6, 0, 13, 1}, /* the same tops again */
    {193, 8, 0, 193, 1},                    /* a step two ahead on every rank: one distance */
    {13, 9, 0, 13, 1},
    {13, 9, 0, 193, 0},                     /* a second forward: the guess (a backward) fails */
    {13, 10, 0, 0, 0}, {13, 10, 0, 13, 1},  /* forwards alone: period 1 after three */
    {193, 10, 0, 13, 0}, {193, 10, 0, 0, 0}, /* two forwards, two backwards (accumulation) */
    {13, 11, 0, 0, 0}, {13, 11, 0, 0, 0}, {193, 11, 0, 193, 1}, {193, 11, 0, 193, 1}, /* P 4 */
    {13, 12, 0, 13, 1}, {13, 12, 0, 13, 1}, {193, 12, 0, 193, 1}, {193, 12, 0, 193, 1},
};

static void spec_run(rank_ctx *c, sbn_comm_t **out)
{
    sbn_comm_callbacks cb = {bus_allgather, NULL, NULL, NULL, bus_allreduce_int64};
    sbn__rsum acc[193], want[193], other[193];
    size_t j;
    int r;
    c->ep.b = c->b;
    c->ep.rank = c->rank;
    RSTATUS(c, sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, out), SBN_OK);
    for (j = 0; j < sizeof k_script / sizeof k_script[0]; j++) {
        const spec_merge *m = &k_script[j];
        uint64_t s0, r0, s1, r1, expect;
        build(acc, m->n, c->rank, (unsigned)m->n);
        if (m->huge && c->rank == 1) sbn__rsum_add(&acc[0], ldexp(1.0, 1000));
        build(want, m->n, 0, (unsigned)m->n);
        for (r = 1; r < c->world; r++) {
            build(other, m->n, r, (unsigned)m->n);
            if (m->huge && r == 1) sbn__rsum_add(&other[0], ldexp(1.0, 1000));
            sbn__rsum_merge_bytes(want, other, m->n);
        }
        RSTATUS(c, sbn_comm_set_step(*out, m->step), SBN_OK);
        sbn_comm_traffic(*out, &s0, &r0);
        RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, m->n, sizeof(sbn__rsum),
                                            sbn__rsum_merge_bytes, (int64_t)m->n), SBN_OK);
        sbn_comm_traffic(*out, &s1, &r1);
        RCHECK(c, memcmp(acc, want, m->n * sizeof *acc) == 0, "merge %zu (count %zu): merged "
               "bytes differ from the rank-order merge", j, m->n);
        expect = m->guess == 0 ? normal_bytes(m->n)
               : spec_bytes(m->guess) + (m->hit ? 0 : normal_bytes(m->n));
        RCHECK(c, c->world == 1 || s1 - s0 == expect, "merge %zu (count %zu): %llu bytes sent, "
               "expected %llu", j, m->n, (unsigned long long)(s1 - s0),
               (unsigned long long)expect);
    }
    if (c->world == 1) return;
    /* armed (period 4, the guess: count 13 at step 12): the last rank is a step ahead */
    RSTATUS(c, sbn_comm_set_step(*out, c->rank == c->world - 1 ? 14 : 13), SBN_OK);
    RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, 13, sizeof(sbn__rsum), sbn__rsum_merge_bytes,
                                        13), SBN_ERR_COMM_MISMATCH);
    RHAS(c, "is at step 13");
    /* a count mismatch; then two steps re-arm the guess (period 2), and rank 0 fails while
     * the others make the guessed merge */
    RSTATUS(c, sbn_comm_set_step(*out, 15), SBN_OK);
    RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, c->rank == 0 ? 12 : 193, sizeof(sbn__rsum),
                                        sbn__rsum_merge_bytes, 193), SBN_ERR_COMM_MISMATCH);
    RHAS(c, "allreduce_merge (count 12");
    for (j = 0; j < 4; j++)
        RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, j % 2 ? 193 : 13, sizeof(sbn__rsum),
                                            sbn__rsum_merge_bytes, j % 2 ? 193 : 13), SBN_OK);
    if (c->rank == 0) {
        RSTATUS(c, sbn_comm_fail(*out, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        RSTATUS(c, sbn_comm_allreduce_merge(*out, acc, 13, sizeof(sbn__rsum),
                                            sbn__rsum_merge_bytes, 13), SBN_ERR_PEER_FAILED);
        RHAS(c, "SBN_ERR_BAD_SHAPE");
    }
}

static void *spec_main(void *p)
{
    sbn_comm_t *comm = NULL;
    spec_run(p, &comm);
    sbn_comm_destroy(comm);
    return NULL;
}

static void speculative_merges(void)
{
    int w, r;
    for (w = 1; w <= MAXW; w++) {
        rank_ctx ctx[MAXW];
        pthread_t threads[MAXW];
        bus b;
        memset(&b, 0, sizeof b);
        pthread_barrier_init(&b.meet, NULL, (unsigned)w);
        b.size = w;
        for (r = 0; r < w; r++) {
            memset(&ctx[r], 0, sizeof ctx[r]);
            ctx[r].rank = r;
            ctx[r].world = w;
            ctx[r].b = &b;
            if (pthread_create(&threads[r], NULL, spec_main, &ctx[r]) != 0) exit(1);
        }
        for (r = 0; r < w; r++) pthread_join(threads[r], NULL);
        pthread_barrier_destroy(&b.meet);
        for (r = 0; r < w; r++) CHECK_MSG(!ctx[r].failed, "world %d: %s", w, ctx[r].msg);
    }
}

/* ---- the layer over the bus against W = 1 ---- */

#define LC 3
#define LN 7
#define LS 4 /* H * W */
static const int64_t k_split[3] = {3, 0, 4};

typedef struct layer_out {
    double y[LN * LC * LS], gi[LN * LC * LS];
    double mean[LC], invstd[LC], rm[LC], rv[LC], gw[LC], gb[LC];
} layer_out;

typedef struct layer_ctx {
    int rank, world, failed;
    char msg[800];
    bus *b;
    endpoint ep;
    sbn_comm_t *comm; /* W = 1: a threads handle */
    const double *x, *dy;
    layer_out *out;
} layer_ctx;

/* One rank's forward + backward on samples [n0, n0 + n) of x, results into out. */
static void layer_rank(layer_ctx *c, int64_t n0, int64_t n)
{
    int64_t shape[4] = {n, LC, 2, 2}, count = 0, nbt = 0;
    double w[LC] = {1.25, -0.5, 2.0}, bias[LC] = {0.1, 0.2, -0.3};
    sbn_tensor x = sbn_tensor_contiguous((void *)(c->x + n0 * LC * LS), SBN_F64, 4, shape);
    sbn_tensor dy = sbn_tensor_contiguous((void *)(c->dy + n0 * LC * LS), SBN_F64, 4, shape);
    sbn_tensor y = sbn_tensor_contiguous(c->out->y + n0 * LC * LS, SBN_F64, 4, shape);
    sbn_tensor gi = sbn_tensor_contiguous(c->out->gi + n0 * LC * LS, SBN_F64, 4, shape);
    sbn_tensor wt = sbn_tensor_1d(w, SBN_F64, LC), bt = sbn_tensor_1d(bias, SBN_F64, LC);
    sbn_tensor rm = sbn_tensor_1d(c->out->rm, SBN_F64, LC);
    sbn_tensor rv = sbn_tensor_1d(c->out->rv, SBN_F64, LC);
    sbn_tensor sm = sbn_tensor_1d(c->out->mean, SBN_F64, LC);
    sbn_tensor si = sbn_tensor_1d(c->out->invstd, SBN_F64, LC);
    sbn_tensor gw = sbn_tensor_1d(c->out->gw, SBN_F64, LC);
    sbn_tensor gb = sbn_tensor_1d(c->out->gb, SBN_F64, LC);
    sbn_syncbn_config cfg;
    size_t bytes;
    void *ws;
    int k;
    for (k = 0; k < LC; k++) {
        c->out->rm[k] = 0.0;
        c->out->rv[k] = 1.0;
    }
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = 1;
    cfg.sync_grad_params = 1;
    RSTATUS(c, sbn_syncbn_workspace_size(&x, &bytes), SBN_OK);
    ws = malloc(bytes + 1);
    RNOTE_STATUS(c, sbn_syncbn_forward(c->comm, &cfg, &(sbn_syncbn_forward_io){.x = &x,
                                       .weight = &wt, .bias = &bt, .running_mean = &rm,
                                       .running_var = &rv, .num_batches_tracked = &nbt, .y = &y,
                                       .save_mean = &sm, .save_invstd = &si,
                                       .global_count = &count}, ws, bytes, NULL), SBN_OK);
    RNOTE_STATUS(c, sbn_syncbn_backward(c->comm, &cfg, &(sbn_syncbn_backward_io){.dy = &dy,
                                        .x = &x, .weight = &wt, .save_mean = &sm,
                                        .save_invstd = &si, .global_count = count,
                                        .grad_input = &gi, .grad_weight = &gw, .grad_bias = &gb},
                                        ws, bytes, NULL), SBN_OK);
    RNOTE(c, count == LN * LS, "global count %lld", (long long)count);
    free(ws);
}

static void *layer_main(void *p)
{
    layer_ctx *c = p;
    sbn_comm_callbacks cb = {bus_allgather, NULL, NULL, NULL, bus_allreduce_int64};
    int64_t n0 = 0;
    int r;
    c->ep.b = c->b;
    c->ep.rank = c->rank;
    for (r = 0; r < c->rank; r++) n0 += k_split[r];
    if (sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, &c->comm) != SBN_OK) {
        c->failed = 1;
        snprintf(c->msg, sizeof c->msg, "create: %s", sbn_last_error());
        return NULL;
    }
    layer_rank(c, n0, k_split[c->rank]);
    sbn_comm_destroy(c->comm);
    return NULL;
}

static void layer_equals_one_rank(void)
{
    double x[LN * LC * LS], dy[LN * LC * LS];
    static layer_out one, ranks[3];
    layer_ctx ctx[3], solo;
    pthread_t threads[3];
    uint64_t s = 12345;
    bus b;
    int r, i;
    for (i = 0; i < LN * LC * LS; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        x[i] = 3.0 + ldexp((double)(s >> 11), -51) - 2.0;
        dy[i] = ldexp((double)(s >> 20), -43) - 0.5;
    }
    memset(&solo, 0, sizeof solo);
    solo.world = 1;
    solo.x = x;
    solo.dy = dy;
    solo.out = &one;
    CHECK_OK(sbn_comm_threads_create(1, 0.0, &solo.comm));
    layer_rank(&solo, 0, LN);
    sbn_comm_destroy(solo.comm);
    CHECK_MSG(!solo.failed, "W = 1: %s", solo.msg);
    memset(&b, 0, sizeof b);
    pthread_barrier_init(&b.meet, NULL, 3);
    b.size = 3;
    for (r = 0; r < 3; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].world = 3;
        ctx[r].b = &b;
        ctx[r].x = x;
        ctx[r].dy = dy;
        ctx[r].out = &ranks[r];
        if (pthread_create(&threads[r], NULL, layer_main, &ctx[r]) != 0) exit(1);
    }
    for (r = 0; r < 3; r++) pthread_join(threads[r], NULL);
    pthread_barrier_destroy(&b.meet);
    for (r = 0; r < 3; r++) {
        int64_t lo = 0, k;
        CHECK_MSG(!ctx[r].failed, "rank %d: %s", r, ctx[r].msg);
        for (k = 0; k < r; k++) lo += k_split[k];
        lo *= LC * LS;
        CHECK(memcmp(ranks[r].y + lo, one.y + lo, (size_t)(k_split[r] * LC * LS) * 8) == 0);
        CHECK(memcmp(ranks[r].gi + lo, one.gi + lo, (size_t)(k_split[r] * LC * LS) * 8) == 0);
        CHECK_MSG(memcmp(ranks[r].mean, one.mean, sizeof one.mean) == 0 &&
                  memcmp(ranks[r].invstd, one.invstd, sizeof one.invstd) == 0 &&
                  memcmp(ranks[r].rm, one.rm, sizeof one.rm) == 0 &&
                  memcmp(ranks[r].rv, one.rv, sizeof one.rv) == 0, "rank %d: statistics", r);
        CHECK_MSG(memcmp(ranks[r].gw, one.gw, sizeof one.gw) == 0 &&
                  memcmp(ranks[r].gb, one.gb, sizeof one.gb) == 0, "rank %d: gradients", r);
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(merges_over_int64),
    SBN_TEST_CASE(speculative_merges),
    SBN_TEST_CASE(layer_equals_one_rank),
};

SBN_TEST_MAIN(k_cases)
