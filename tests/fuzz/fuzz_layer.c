/*
 * fuzz_layer.c - a libFuzzer target over the SyncBN layer (syncbn/layer.h) on a
 * threads world (syncbn/comm.h): the input bytes choose W = 1..4 ranks, C, the dtype,
 * the layout, the rank of x, an uneven N per rank (0 allowed), the values of x and dy,
 * the config (training or eval, cumulative, nan_guard, sync_grad_params, momentum,
 * reproducible) and
 * a pool (NULL or two threads shared by the ranks); then every rank runs two steps of
 * forward and backward on its own thread, and sometimes one rank gets one bad argument
 * in one call (NULL or misshapen tensors, bad eps or momentum, a short workspace, y on
 * the layer's workspace or on x, misaligned or unaddressable views, no global_count).
 * Oracles (abort() on violation): every rank returns (the world's timeout is 5 s and
 * SBN_ERR_TIMEOUT is a violation: a failing rank must tell its peers); in a synchronized
 * call either every rank fails or none does; when all succeed, every rank holds the
 * same save_mean/save_invstd bits and global_count, the mean matches a double
 * reference over the whole batch, outputs are finite for finite data, and a channel
 * holding a NaN never gets finite batch statistics. ASan checks every access.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz_util.h"
#include "syncbn/layer.h"

#define MAX_WORLD 4
#define MAX_C 5
#define STEPS 2

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef enum bad_arg {
    BAD_NONE, BAD_NULL_X, BAD_WEIGHT_SHAPE, BAD_EPS, BAD_MOMENTUM, BAD_SHORT_WORKSPACE,
    BAD_Y_ON_WORKSPACE, BAD_Y_ON_X, BAD_MISALIGNED_Y, BAD_HUGE_STRIDE, BAD_NO_GLOBAL_COUNT,
    BAD_DTYPE, BAD_GRAD_ON_WORKSPACE, BAD_COUNT
} bad_arg;

typedef struct world_plan {
    int world, rank, channels_last, dtype_code;
    int64_t c, spatial[2], n[MAX_WORLD];
    sbn_syncbn_config config;
    int track; /* running statistics given */
    int bad_rank, bad_step, bad_in_backward;
    bad_arg bad;
    unsigned char values[64]; /* x and dy values come from these bytes */
    int nan_rank;             /* this rank's x gets a NaN in channel 0 (-1: none) */
    sbn_pool_t *pool;
} world_plan;

typedef struct rank_state {
    const world_plan *plan;
    sbn_comm_t *comm;
    int rank;
    sbn_status forward[STEPS], backward[STEPS];
    double save_mean[STEPS][MAX_C], save_invstd[STEPS][MAX_C];
    int64_t global_count[STEPS];
    int outputs_finite[STEPS];
    double sum[MAX_C], count; /* the rank's x in double, for the reference mean */
    int nan_channels;         /* bit c: this rank's x holds a NaN in channel c */
} rank_state;

static void fail(const world_plan *p, const char *what, int rank, int step)
{
    fprintf(stderr,
            "fuzz_layer: VIOLATION: %s (rank %d, step %d)\n  world %d, C %lld, x rank %d, "
            "dtype %d, %s, training %d, cumulative %d, nan_guard %d, sync_grad_params %d, "
            "momentum %g, reproducible %d; N per rank:",
            what, rank, step, p->world, (long long)p->c, p->rank, p->dtype_code,
            p->channels_last ? "channels-last" : "channels-first", p->config.training,
            p->config.cumulative, p->config.nan_guard, p->config.sync_grad_params,
            p->config.momentum, p->config.reproducible);
    for (rank = 0; rank < p->world; rank++) fprintf(stderr, " %lld", (long long)p->n[rank]);
    fprintf(stderr, "\n  bad argument %d on rank %d at step %d in %s; NaN on rank %d\n", (int)p->bad,
            p->bad_rank, p->bad_step, p->bad_in_backward ? "backward" : "forward", p->nan_rank);
    abort();
}

static sbn_tensor activation(void *data, const world_plan *p, int64_t n)
{
    int64_t shape[4] = {n, p->c, p->spatial[0], p->spatial[1]};
    sbn_dtype dtype = (sbn_dtype)p->dtype_code;
    return p->channels_last ? sbn_tensor_channels_last(data, dtype, p->rank, shape)
                            : sbn_tensor_contiguous(data, dtype, p->rank, shape);
}

static void store(sbn_dtype dtype, void *p, double v)
{
    switch (dtype) {
    case SBN_F64: memcpy(p, &v, 8); break;
    case SBN_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case SBN_BF16: { /* values here are multiples of 1/16 below 8: exact in bf16 and f16 */
        float f = (float)v;
        uint32_t bits;
        uint16_t h;
        memcpy(&bits, &f, 4);
        h = (uint16_t)(bits >> 16);
        memcpy(p, &h, 2);
        break;
    }
    default: { /* f16: sign, 5-bit exponent, 10-bit mantissa; v is 0, NaN or |v| in [2^-4, 8) */
        uint16_t h = 0;
        if (v != v) h = 0x7e00;
        else if (v != 0) {
            int e;
            double m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
            h = (uint16_t)(((e - 1 + 15) << 10) | ((int)(m * 2048) & 0x3ff));
            if (v < 0) h |= 0x8000;
        }
        memcpy(p, &h, 2);
        break;
    }
    }
}

typedef struct fill_ctx {
    rank_state *st;
    unsigned char *base;
    int which; /* 0: x, 1: dy */
    int64_t i;
} fill_ctx;

static void fill_element(void *ctx, int64_t byte_offset, const int64_t *index)
{
    fill_ctx *f = ctx;
    const world_plan *p = f->st->plan;
    double v = ((int)p->values[(f->i++ * 7 + (uint64_t)f->which * 13 + (uint64_t)f->st->rank * 29) % 64] - 128) / 16.0;
    if (f->which == 0 && p->nan_rank == f->st->rank && f->i == 1) v = NAN;
    store((sbn_dtype)p->dtype_code, f->base + byte_offset, v);
    if (f->which == 0) {
        double back = fz_load((sbn_dtype)p->dtype_code, f->base + byte_offset);
        if (back != back) f->st->nan_channels |= 1 << index[1];
        else f->st->sum[index[1]] += back;
    }
}

static int all_finite(const void *data, sbn_dtype dtype, int64_t count)
{
    int64_t i;
    size_t es = sbn_dtype_size(dtype);
    for (i = 0; i < count; i++)
        if (!isfinite(fz_load(dtype, (const unsigned char *)data + (size_t)i * es))) return 0;
    return 1;
}

/* The arguments of one layer call that a bad_arg may spoil; out is y or grad_input. */
typedef struct call_args {
    sbn_tensor x, out, w;
    sbn_syncbn_config config;
    size_t ws_bytes;
    int64_t *count; /* forward: &global_count; backward: NULL means pass -1 */
    int x_null;
} call_args;

static void spoil(call_args *a, bad_arg bad, unsigned char *ws, size_t ws_bytes, size_t es)
{
    switch (bad) {
    case BAD_NULL_X: a->x_null = 1; break;
    case BAD_WEIGHT_SHAPE: a->w.shape[0] += 1; break;
    case BAD_EPS: a->config.eps = NAN; break;
    case BAD_MOMENTUM: a->config.momentum = 1.5; break;
    case BAD_SHORT_WORKSPACE: a->ws_bytes = ws_bytes ? ws_bytes - 1 : 0; break;
    case BAD_Y_ON_WORKSPACE: a->out.data = ws + 64; break; /* ws has room for it beyond ws_bytes */
    case BAD_Y_ON_X: a->out.data = (unsigned char *)a->x.data + es; break;
    case BAD_MISALIGNED_Y: if (es > 1) a->out.data = (unsigned char *)a->out.data + 1; break;
    case BAD_HUGE_STRIDE: a->out.strides[0] = (int64_t)1 << 62, a->x.strides[0] = INT64_MIN; break;
    case BAD_NO_GLOBAL_COUNT: a->count = NULL; break;
    case BAD_DTYPE: a->x.dtype = (sbn_dtype)9; break;
    case BAD_GRAD_ON_WORKSPACE: a->out.data = ws; break;
    default: break;
    }
}

static void *rank_main(void *arg)
{
    rank_state *st = arg;
    const world_plan *p = st->plan;
    sbn_syncbn_config config = p->config;
    int64_t n = p->n[st->rank], c = p->c, nbt = 0, numel, count = 0;
    sbn_dtype dtype = (sbn_dtype)p->dtype_code;
    size_t es = sbn_dtype_size(dtype), ws_bytes = 0, ws_alloc, act_bytes;
    sbn_tensor x, y, dy, gi, w, b, rm, rv, sm, si, gw, gb;
    float weight[MAX_C], bias[MAX_C], run_mean[MAX_C], run_var[MAX_C], gweight[MAX_C], gbias[MAX_C];
    double save_mean[MAX_C], save_invstd[MAX_C];
    unsigned char *xd, *yd, *dyd, *gid, *ws;
    int step, ch;
    x = activation(NULL, p, n);
    numel = sbn_tensor_numel(&x);
    act_bytes = (size_t)numel * es + 8;
    if (sbn_syncbn_workspace_size(&x, &ws_bytes) != SBN_OK) abort();
    ws_alloc = ws_bytes + act_bytes + 64;
    xd = malloc(act_bytes), yd = malloc(act_bytes), dyd = malloc(act_bytes), gid = malloc(act_bytes);
    ws = malloc(ws_alloc);
    if (!xd || !yd || !dyd || !gid || !ws) abort();
    x = activation(xd, p, n), y = activation(yd, p, n), dy = activation(dyd, p, n);
    gi = activation(gid, p, n);
    {
        fill_ctx fx = {st, xd, 0, 0}, fd = {st, dyd, 1, 0};
        fz_for_each_element(&x, INT64_MAX, fill_element, &fx);
        fz_for_each_element(&dy, INT64_MAX, fill_element, &fd);
        st->count = (double)(numel / c);
    }
    for (ch = 0; ch < c; ch++) {
        weight[ch] = 1.0f + 0.25f * (float)ch, bias[ch] = 0.5f - 0.125f * (float)ch;
        run_mean[ch] = 0.0f, run_var[ch] = 1.0f;
    }
    w = sbn_tensor_1d(weight, SBN_F32, c), b = sbn_tensor_1d(bias, SBN_F32, c);
    rm = sbn_tensor_1d(run_mean, SBN_F32, c), rv = sbn_tensor_1d(run_var, SBN_F32, c);
    sm = sbn_tensor_1d(save_mean, SBN_F64, c), si = sbn_tensor_1d(save_invstd, SBN_F64, c);
    gw = sbn_tensor_1d(gweight, SBN_F32, c), gb = sbn_tensor_1d(gbias, SBN_F32, c);

    for (step = 0; step < STEPS; step++) {
        int bad_here = st->rank == p->bad_rank && step == p->bad_step;
        call_args fa = {x, y, w, config, ws_bytes, &count, 0}, ba = {x, gi, w, config, ws_bytes, &count, 0};
        sbn_status s;
        if (bad_here && !p->bad_in_backward) spoil(&fa, p->bad, ws, ws_bytes, es);
        if (bad_here && p->bad_in_backward) spoil(&ba, p->bad, ws, ws_bytes, es);
        s = sbn_syncbn_forward(st->comm, &fa.config,
                               &(sbn_syncbn_forward_io){.x = fa.x_null ? NULL : &fa.x,
                               .weight = &fa.w, .bias = &b, .running_mean = p->track ? &rm : NULL,
                               .running_var = p->track ? &rv : NULL, .num_batches_tracked = &nbt,
                               .y = &fa.out, .save_mean = &sm, .save_invstd = &si,
                               .global_count = fa.count}, ws, fa.ws_bytes, p->pool);
        st->forward[step] = s;
        st->backward[step] = SBN_ERR_INTERNAL;
        if (SBN_FAILED(s)) break;
        for (ch = 0; ch < c; ch++)
            st->save_mean[step][ch] = save_mean[ch], st->save_invstd[step][ch] = save_invstd[ch];
        st->global_count[step] = count;
        st->outputs_finite[step] = all_finite(yd, dtype, numel);
        s = sbn_syncbn_backward(st->comm, &ba.config, &(sbn_syncbn_backward_io){.dy = &dy,
                                .x = ba.x_null ? NULL : &ba.x, .weight = &ba.w,
                                .running_mean = p->track ? &rm : NULL,
                                .running_var = p->track ? &rv : NULL, .save_mean = &sm,
                                .save_invstd = &si, .global_count = ba.count ? count : -1,
                                .grad_input = &ba.out, .grad_weight = &gw, .grad_bias = &gb}, ws,
                                ba.ws_bytes, p->pool);
        st->backward[step] = s;
        if (SBN_FAILED(s)) break;
        st->outputs_finite[step] = st->outputs_finite[step] && all_finite(gid, dtype, numel) &&
                                   all_finite(gweight, SBN_F32, c) && all_finite(gbias, SBN_F32, c);
    }
    free(xd), free(yd), free(dyd), free(gid), free(ws);
    return NULL;
}

static void check_world(const world_plan *p, rank_state *st)
{
    int r, step, ch;
    int64_t total_n = 0;
    int nan_channels = 0;
    for (r = 0; r < p->world; r++) total_n += p->n[r], nan_channels |= st[r].nan_channels;
    for (step = 0; step < STEPS; step++) {
        int fwd_failed = 0, bwd_failed = 0, ran_backward = 0;
        for (r = 0; r < p->world; r++) {
            if (st[r].forward[step] == SBN_ERR_TIMEOUT || st[r].backward[step] == SBN_ERR_TIMEOUT)
                fail(p, "a rank timed out: a failing peer did not announce its failure", r, step);
            fwd_failed += SBN_FAILED(st[r].forward[step]);
            if (!SBN_FAILED(st[r].forward[step])) {
                ran_backward++;
                bwd_failed += SBN_FAILED(st[r].backward[step]);
            }
        }
        if (!p->config.training) { /* eval: no collective, each rank on its own */
            if (fwd_failed || bwd_failed) return;
            continue;
        }
        if (fwd_failed && fwd_failed != p->world)
            fail(p, "forward failed on some ranks but returned success on others", -1, step);
        if (fwd_failed) return;
        if (bwd_failed && bwd_failed != ran_backward)
            fail(p, "backward failed on some ranks but returned success on others", -1, step);
        if (bwd_failed) return;
        /* every rank succeeded in both calls */
        for (r = 0; r < p->world; r++) {
            if (st[r].forward[step] != st[0].forward[step])
                fail(p, "ranks returned different forward statuses", r, step);
            if (st[r].global_count[step] != total_n * p->spatial[0] * p->spatial[1])
                fail(p, "global_count is not the world's samples per channel", r, step);
            if (memcmp(st[r].save_mean[step], st[0].save_mean[step], sizeof st[0].save_mean[step]) ||
                memcmp(st[r].save_invstd[step], st[0].save_invstd[step], sizeof st[0].save_invstd[step]))
                fail(p, "ranks hold different save_mean/save_invstd", r, step);
            if (!nan_channels && total_n > 0 && !st[r].outputs_finite[step])
                fail(p, "non-finite outputs from finite data", r, step);
        }
        if (total_n == 0 && st[0].forward[step] != SBN_NO_SAMPLES)
            fail(p, "an empty world did not return SBN_NO_SAMPLES", 0, step);
        for (ch = 0; ch < p->c && total_n > 0; ch++) {
            double sum = 0, count = 0, mean = st[0].save_mean[step][ch];
            int finite = isfinite(mean) && isfinite(st[0].save_invstd[step][ch]);
            for (r = 0; r < p->world; r++) sum += st[r].sum[ch], count += st[r].count;
            if (nan_channels >> ch & 1) {
                if (finite) fail(p, "finite batch statistics for a channel holding a NaN", 0, step);
            } else if (!(fabs(mean - sum / count) <= 1e-9 * (1.0 + fabs(sum / count)))) {
                fail(p, "save_mean differs from the whole-batch mean", 0, step);
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sbn_pool_t *two_threads;
    fz_reader rd = {data, size, 0};
    world_plan p;
    rank_state st[MAX_WORLD];
    sbn_comm_t *comms[MAX_WORLD];
    pthread_t threads[MAX_WORLD];
    int r, flags;
    static const double momenta[] = {0.1, 0.0, 1.0, 0.5};
    if (two_threads == NULL && sbn_pool_create(2, &two_threads) != SBN_OK) abort();
    memset(&p, 0, sizeof p);
    p.world = 1 + (int)fz_pick(&rd, MAX_WORLD);
    p.c = 1 + fz_pick(&rd, MAX_C);
    p.rank = 2 + (int)fz_pick(&rd, 3);
    p.spatial[0] = 1 + fz_pick(&rd, 4);
    p.spatial[1] = 1 + fz_pick(&rd, 3);
    p.dtype_code = (int)fz_pick(&rd, 4);
    p.channels_last = (int)fz_pick(&rd, 2);
    for (r = 0; r < p.world; r++) p.n[r] = fz_pick(&rd, 5);
    flags = (int)fz_next(&rd);
    sbn_syncbn_config_default(&p.config);
    p.config.training = flags % 4 != 0;
    p.config.cumulative = (flags >> 2) & 1;
    p.config.nan_guard = (flags >> 3) & 1;
    p.config.sync_grad_params = (flags >> 4) & 1;
    p.config.momentum = momenta[(flags >> 5) % 4];
    p.pool = (flags >> 7) ? two_threads : NULL;
    p.config.reproducible = (int)fz_pick(&rd, 2);
    p.bad = fz_pick(&rd, 2) ? (bad_arg)(1 + fz_pick(&rd, BAD_COUNT - 1)) : BAD_NONE;
    p.bad_rank = (int)fz_pick(&rd, (unsigned)p.world);
    p.bad_step = (int)fz_pick(&rd, STEPS);
    p.bad_in_backward = (int)fz_pick(&rd, 2);
    p.track = fz_pick(&rd, 4) != 0;
    p.nan_rank = fz_pick(&rd, 8) == 0 ? (int)fz_pick(&rd, (unsigned)p.world) : -1;
    for (r = 0; r < 64; r++) p.values[r] = (unsigned char)fz_next(&rd);
    if (p.rank == 2) p.spatial[0] = p.spatial[1] = 1;
    if (p.rank == 3) p.spatial[1] = 1;

    if (sbn_comm_threads_create(p.world, 5.0, comms) != SBN_OK) abort();
    memset(st, 0, sizeof st);
    for (r = 0; r < p.world; r++) {
        st[r].plan = &p, st[r].comm = comms[r], st[r].rank = r;
        if (pthread_create(&threads[r], NULL, rank_main, &st[r]) != 0) abort();
    }
    for (r = 0; r < p.world; r++) pthread_join(threads[r], NULL);
    for (r = 0; r < p.world; r++) sbn_comm_destroy(comms[r]);
    check_world(&p, st);
    return 0;
}
