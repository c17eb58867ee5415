/*
 * batch_norm.c - plain batch normalisation forward (PyTorch F.batch_norm).
 * Training: the MOMENTS reduction gives each channel's mean and M2 over R;
 *   y = (x - mean) * invstd * w + b with invstd = 1/sqrt(M2/R + eps), running
 *   stats updated with momentum and M2/(R-1), save_mean/save_invstd written.
 * Eval: y = (x - running_mean) / sqrt(running_var + eps) * w + b.
 * y is computed from the double statistics, not from their rounded copies.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/pool.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "ops/clones.h"
#include "ops/map.h"
#include "ops/moments.h"
#include "ops/one_pass.h"
#include "ops/plan.h"
#include "ops/reduce.h"
#include "ops/walk.h"
#include "syncbn/ops.h"

/* Scratch: chunk partials, per-channel (mean, M2), per-channel map coefficients. */
static size_t batch_norm_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], (2 + SBN_MAP_COEF_DOUBLES) * sizeof(double)));
}

SBN_API sbn_status sbn_batch_norm_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, batch_norm_need);
}

static sbn_status check_args(const sbn_tensor *x, const sbn_tensor *weight, const sbn_tensor *bias,
                             int training, double momentum, double eps, sbn_tensor *running_mean,
                             sbn_tensor *running_var, sbn_tensor *y, sbn_tensor *save_mean,
                             sbn_tensor *save_invstd, const void *workspace,
                             size_t workspace_bytes)
{
    /* running stats are written in training and only read in eval */
    const sbn__arg outputs[] = {{y, "y"}, {save_mean, "save_mean"}, {save_invstd, "save_invstd"},
                                {training ? running_mean : NULL, "running_mean"},
                                {training ? running_var : NULL, "running_var"}};
    const sbn__arg inputs[] = {{x, "x"}, {weight, "weight"}, {bias, "bias"},
                               {training ? NULL : running_mean, "running_mean"},
                               {training ? NULL : running_var, "running_var"}};
    sbn_status s;
    int64_t channels;
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(bias, "bias", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, !training)) != SBN_OK)
        return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, !training)) != SBN_OK)
        return s;
    if ((s = sbn__check_like(y, "y", x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_mean, "save_mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_invstd, "save_invstd", channels, 0)) != SBN_OK) return s;
    if (training && (s = sbn__check_momentum(momentum)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 5, inputs, 5, y, x)) != SBN_OK) return s;
    return sbn__check_workspace(workspace, workspace_bytes, batch_norm_need(x),
                                outputs, 5, inputs, 5);
}

/* The arguments of a step: training (two passes or one-pass blocks) or eval. */
typedef struct bn_job {
    const sbn_tensor *x, *weight, *bias;
    sbn_tensor *y, *running_mean, *running_var, *save_mean, *save_invstd;
    double momentum, eps;
    int64_t r, block;
    double *scratch, *stats, *coef; /* one-pass: per-lane scratch and [4][block] coefficients */
    size_t lane_scratch;            /* doubles of scratch per lane */
} bn_job;

/* train_range for R = 0 (no samples: mean 0, invstd NaN, nothing updated), a channel at a
 * time through the finish every statistics op shares. */
static void train_range_empty(const bn_job *job, int64_t c0, int64_t cn, const double *stats,
                              double *k, int64_t ks)
{
    double n = (double)job->r;
    int64_t j;
    for (j = 0; j < cn; j++) {
        int64_t c = c0 + j;
        sbn_moments total;
        total.count = n;
        total.mean = stats[2 * j];
        total.m2 = stats[2 * j + 1];
        k[ks + j] = n > 0 ? sbn__invstd(total.m2 / n, job->eps) : 0.0;
        sbn__finish_channel_inv(&total, c, job->momentum, k[ks + j], job->running_mean,
                                job->running_var, job->save_mean, job->save_invstd);
        k[j] = total.mean;
        k[ks + j] *= job->weight ? sbn__load1(job->weight, c) : 1.0;
        k[2 * ks + j] = job->bias ? sbn__load1(job->bias, c) : 0.0;
        k[3 * ks + j] = 0.0;
    }
}

/* The last steps of a channel range's map coefficients (mean, s, b, 0) at k[j], k[ks + j],
 * k[2ks + j], k[3ks + j], once s holds invstd: s *= weight (when given), b = bias (or 0),
 * the fourth 0. A piece of channels at a time through the conversion kernels. */
SBN_CHANNEL_LOOP static void finish_coefs(const bn_job *job, int64_t c0, int64_t cn, double *k,
                                           int64_t ks)
{
    double v[SBN_CONVERT_PIECE];
    int64_t j, p, pn;
    for (p = 0; job->weight && p < cn; p += pn) {
        pn = cn - p < SBN_CONVERT_PIECE ? cn - p : SBN_CONVERT_PIECE;
        sbn__load_vec(job->weight, c0 + p, pn, v);
        for (j = 0; j < pn; j++) k[ks + p + j] *= v[j];
    }
    if (job->bias)
        sbn__load_vec(job->bias, c0, cn, k + 2 * ks);
    else
        for (j = 0; j < cn; j++) k[2 * ks + j] = 0.0;
    for (j = 0; j < cn; j++) k[3 * ks + j] = 0.0;
}

/*
 * Channels [c0, c0 + cn) of a training pass, from their (mean, M2) at stats[2j],
 * stats[2j + 1]: running stats and save_* written, and the map coefficients (mean,
 * invstd*w, b, 0) of channel c0 + j at k[j], k[ks + j], k[2ks + j], k[3ks + j]. The
 * finish of sbn__finish_channel_inv with the same expressions, a column at a time: the
 * invstds by the kernel that divides and takes square roots eight channels at a time
 * (sbn__invstd's bits), each per-channel vector read and written a piece at a time
 * through the conversion kernels, the arithmetic in loops that vectorise. One channel
 * at a time, every channel waits for its own square root and divisions and converts
 * each of its six vectors' elements alone: with thousands of channels over a few rows
 * that is most of a training step.
 */
SBN_CHANNEL_LOOP static void train_range(const bn_job *job, int64_t c0, int64_t cn,
                                          const double *stats, double *k, int64_t ks)
{
    const double n = (double)job->r, keep = 1.0 - job->momentum, m = job->momentum;
    double v[SBN_CONVERT_PIECE];
    int64_t j, p, pn;
    if (job->r == 0) {
        train_range_empty(job, c0, cn, stats, k, ks);
        return;
    }
    sbn__kernels()->invstd(stats + 1, 2, (size_t)cn, n, job->eps, k + ks);
    for (j = 0; j < cn; j++) k[j] = stats[2 * j];
    if (job->save_mean) sbn__store_vec(job->save_mean, c0, cn, k);
    if (job->save_invstd) sbn__store_vec(job->save_invstd, c0, cn, k + ks);
    for (p = 0; p < cn; p += pn) {
        pn = cn - p < SBN_CONVERT_PIECE ? cn - p : SBN_CONVERT_PIECE;
        if (job->running_mean) {
            sbn__load_vec(job->running_mean, c0 + p, pn, v);
            for (j = 0; j < pn; j++) v[j] = keep * v[j] + m * k[p + j];
            sbn__store_vec(job->running_mean, c0 + p, pn, v);
        }
        if (job->running_var && job->r > 1) { /* one sample: no unbiased variance */
            sbn__load_vec(job->running_var, c0 + p, pn, v);
            for (j = 0; j < pn; j++) v[j] = keep * v[j] + m * (stats[2 * (p + j) + 1] / (n - 1.0));
            sbn__store_vec(job->running_var, c0 + p, pn, v);
        }
    }
    finish_coefs(job, c0, cn, k, ks);
}

/* Channels [begin, end) of a two-pass training forward, on the pool (each writes its
 * own elements; a square root and divisions per channel add up over thousands). */
static void train_channels(void *ctx, int64_t begin, int64_t end)
{
    const bn_job *job = ctx;
    train_range(job, begin, end - begin, job->stats + 2 * begin, job->coef + begin,
                job->x->shape[1]);
}

/* Eval: the map's coefficients of channels [begin, end) from the running statistics,
 * (running_mean, invstd*w, b, 0), a column at a time as train_range: the invstds by the
 * invstd kernel with count 1 (var / 1 is var, so sbn__invstd(var, eps)'s bits). */
static void eval_channels(void *ctx, int64_t begin, int64_t end)
{
    const bn_job *job = ctx;
    int64_t channels = job->x->shape[1], cn = end - begin;
    double *k = job->coef + begin;
    sbn__load_vec(job->running_mean, begin, cn, k);
    sbn__load_vec(job->running_var, begin, cn, k + channels);
    sbn__kernels()->invstd(k + channels, 1, (size_t)cn, 1.0, job->eps, k + channels);
    finish_coefs(job, begin, cn, k, channels);
}

/* One block of the one-pass schedule: reduce channels [c0, c0 + cn), then map them. */
static void train_block(void *ctx, int64_t lane, int64_t c0, int64_t cn)
{
    const bn_job *job = ctx;
    sbn_tensor xs = sbn__channel_slice(job->x, c0, cn), ys = sbn__channel_slice(job->y, c0, cn);
    double *k = job->coef + lane * SBN_MAP_COEF_DOUBLES * job->block;
    sbn__channel_reduce(SBN_REDUCE_MOMENTS, &xs, NULL, NULL, job->stats + 2 * c0,
                        job->scratch + (size_t)lane * job->lane_scratch, NULL);
    train_range(job, c0, cn, job->stats + 2 * c0, k, cn);
    sbn__channel_map(SBN_MAP_NORMALIZE, &xs, NULL, k, &ys, NULL);
}

/* Training: one pass per cache-sized block of channels where that pays, else two passes. */
static void train(bn_job *job, sbn_pool_t *pool)
{
    int64_t channels = job->x->shape[1];
    const sbn_tensor *tensors[2];
    sbn_pool_t one_pass_team;
    tensors[0] = job->x;
    tensors[1] = job->y;
    pool = sbn__plan_team(pool, sbn__plan_stream_ns(tensors, 2), &one_pass_team);
    job->block = sbn__one_pass_block(job->x, sbn_dtype_size(job->x->dtype), pool);
    if (job->block > 0) {
        sbn_tensor first = sbn__channel_slice(job->x, 0, job->block);
        job->lane_scratch = sbn__channel_reduce_bytes(&first) / sizeof(double);
        sbn__one_pass_run(channels, job->block, train_block, job, pool);
        return;
    }
    sbn__channel_reduce(SBN_REDUCE_MOMENTS, job->x, NULL, NULL, job->stats, job->scratch, pool);
    sbn__channel_map_with(SBN_MAP_NORMALIZE, job->x, NULL, job->coef, train_channels, job,
                          sbn__plan_channels_ns(channels, 0), job->y, pool);
}

SBN_API sbn_status sbn_batch_norm(const sbn_tensor *x, const sbn_tensor *weight,
                                  const sbn_tensor *bias, int training, double momentum,
                                  double eps, sbn_tensor *running_mean, sbn_tensor *running_var,
                                  sbn_tensor *y, sbn_tensor *save_mean, sbn_tensor *save_invstd,
                                  void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    sbn_status s;
    double *scratch, *stats, *coef;
    int64_t channels, r;

    sbn__clear_error();
    s = check_args(x, weight, bias, training, momentum, eps, running_mean, running_var, y,
                   save_mean, save_invstd, workspace, workspace_bytes);
    if (s != SBN_OK) return s;

    channels = x->shape[1];
    r = sbn_tensor_numel(x) / channels;
    scratch = sbn__ws_align(workspace);
    stats = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    coef = stats + 2 * channels;
    {
        bn_job job = {x, weight, bias, y, running_mean, running_var, save_mean, save_invstd,
                         momentum, eps, r, 0, scratch, stats, coef, 0};
        if (training) {
            train(&job, pool);
            return r == 0 ? SBN_NO_SAMPLES : r == 1 ? SBN_SINGLE_SAMPLE : SBN_OK;
        }
        sbn__channel_map_with(SBN_MAP_NORMALIZE, x, NULL, coef, eval_channels, &job,
                              sbn__plan_channels_ns(channels, 0), y, pool);
    }
    return SBN_OK;
}
