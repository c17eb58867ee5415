/*
 * batch_norm_backward.c - plain batch normalisation backward (PyTorch
 * native_batch_norm_backward). With (mean, invstd) = (save_mean, save_invstd) in
 * training or (running_mean, 1/sqrt(running_var + eps)) in eval, one BACKWARD
 * reduction gives sum_dy and sum_dy_xmu = sum(dy * (x - mean)), then
 *   grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy,
 *   training: grad_input = (dy - sum_dy/R - (x - mean) * invstd^2 * sum_dy_xmu/R) * invstd * w
 *   eval:     grad_input = dy * invstd * w
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

static size_t backward_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], (2 + SBN_MAP_COEF_DOUBLES) * sizeof(double)));
}

SBN_API sbn_status sbn_batch_norm_backward_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, backward_need);
}

static sbn_status check_args(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *weight,
                             const sbn_tensor *running_mean, const sbn_tensor *running_var,
                             const sbn_tensor *save_mean, const sbn_tensor *save_invstd,
                             int training, double eps, sbn_tensor *grad_input,
                             sbn_tensor *grad_weight, sbn_tensor *grad_bias,
                             const void *workspace, size_t workspace_bytes)
{
    const sbn__arg outputs[] = {{grad_input, "grad_input"}, {grad_weight, "grad_weight"},
                                {grad_bias, "grad_bias"}};
    const sbn__arg inputs[] = {{dy, "dy"}, {x, "x"}, {weight, "weight"},
                               {running_mean, "running_mean"}, {running_var, "running_var"},
                               {save_mean, "save_mean"}, {save_invstd, "save_invstd"}};
    sbn_status s;
    int64_t channels;
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_like(dy, "dy", x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, !training)) != SBN_OK)
        return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, !training)) != SBN_OK)
        return s;
    if ((s = sbn__check_vector(save_mean, "save_mean", channels, training)) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_invstd, "save_invstd", channels, training)) != SBN_OK)
        return s;
    if (grad_input && (s = sbn__check_like(grad_input, "grad_input", x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_weight, "grad_weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_bias, "grad_bias", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 3, inputs, 7, grad_input, dy)) != SBN_OK) return s;
    return sbn__check_workspace(workspace, workspace_bytes, backward_need(x),
                                outputs, 3, inputs, 7);
}

/* The arguments a training block needs (the one-pass schedule). */
typedef struct backward_job {
    const sbn_tensor *dy, *x, *weight;
    sbn_tensor *grad_input, *grad_weight, *grad_bias;
    int64_t r, channels, block;
    double *scratch, *sums, *coef; /* coef: mean [C], invstd [C], then per-lane [4][block] */
    size_t lane_scratch;           /* doubles of scratch per lane */
} backward_job;

/*
 * Channels [c0, c0 + cn), from their sums (sum dy, sum dy*(x - mean)) at sum[2j],
 * sum[2j + 1] and their mean and invstd at mean[j], inv[j]: grad_weight = sum[1] *
 * invstd and grad_bias = sum[0] stored, and with `k` the map's coefficients of channel
 * c0 + j at k[j], k[ks + j], k[2ks + j], k[3ks + j] (channel_map.c): training
 *   (sum dy / R, mean, invstd^2 * sum[1] / R, invstd * w),
 * eval (0, invstd * w, 0, 0). k may be mean (ks apart from inv): each piece's means and
 * invstds are read before its coefficients are written. A piece of channels at a time,
 * each vector through the conversion kernels, the arithmetic in loops that vectorise.
 */
SBN_CHANNEL_LOOP static void finish_range(const backward_job *job, int training, int64_t c0,
                                           int64_t cn, const double *sum, const double *mean,
                                           const double *inv, double *k, int64_t ks)
{
    double v[SBN_CONVERT_PIECE], w[SBN_CONVERT_PIECE], mu[SBN_CONVERT_PIECE],
        is[SBN_CONVERT_PIECE];
    const double r = (double)job->r, rr = sbn__pow2_recip(r);
    int64_t p, pn, j;
    for (p = 0; p < cn; p += pn) {
        const double *s = sum + 2 * p;
        pn = cn - p < SBN_CONVERT_PIECE ? cn - p : SBN_CONVERT_PIECE;
        if (job->grad_weight) {
            for (j = 0; j < pn; j++) v[j] = s[2 * j + 1] * inv[p + j];
            sbn__store_vec(job->grad_weight, c0 + p, pn, v);
        }
        if (job->grad_bias) {
            for (j = 0; j < pn; j++) v[j] = s[2 * j];
            sbn__store_vec(job->grad_bias, c0 + p, pn, v);
        }
        if (!k) continue;
        if (job->weight)
            sbn__load_vec(job->weight, c0 + p, pn, w);
        else
            for (j = 0; j < pn; j++) w[j] = 1.0;
        for (j = 0; j < pn; j++) {
            mu[j] = mean[p + j];
            is[j] = inv[p + j];
        }
        if (training) {
            for (j = 0; j < pn; j++) {
                k[p + j] = sbn__div_count(s[2 * j], r, rr);
                k[ks + p + j] = mu[j];
                k[2 * ks + p + j] = sbn__div_count(is[j] * is[j] * s[2 * j + 1], r, rr);
                k[3 * ks + p + j] = is[j] * w[j];
            }
        } else {
            for (j = 0; j < pn; j++) {
                k[p + j] = 0.0;
                k[ks + p + j] = is[j] * w[j];
                k[2 * ks + p + j] = 0.0;
                k[3 * ks + p + j] = 0.0;
            }
        }
    }
}

/* Channels [begin, end) of a two-pass backward, on the pool: grad_weight, grad_bias and
 * the map's coefficients, in place of (mean, invstd) at coef (each channel its own). */
typedef struct channels_job {
    const backward_job *job;
    int training, grad_input;
} channels_job;

static void finish_channels(void *ctx, int64_t begin, int64_t end)
{
    const channels_job *cj = ctx;
    const backward_job *job = cj->job;
    double *coef = job->coef;
    finish_range(job, cj->training, begin, end - begin, job->sums + 2 * begin, coef + begin,
                 coef + job->channels + begin, cj->grad_input ? coef + begin : NULL,
                 job->channels);
}

/* One block of the one-pass schedule: the sums of channels [c0, c0 + cn), then grad_input. */
static void train_block(void *ctx, int64_t lane, int64_t c0, int64_t cn)
{
    const backward_job *job = ctx;
    sbn_tensor dys = sbn__channel_slice(job->dy, c0, cn), xs = sbn__channel_slice(job->x, c0, cn);
    sbn_tensor gis = sbn__channel_slice(job->grad_input, c0, cn);
    sbn_tensor centers = sbn_tensor_1d(job->coef + c0, SBN_F64, cn);
    double *k = job->coef + 2 * job->channels + lane * SBN_MAP_COEF_DOUBLES * job->block;
    const double *invstd = job->coef + job->channels;
    sbn__channel_reduce(SBN_REDUCE_BACKWARD, &dys, &xs, &centers, job->sums + 2 * c0,
                        job->scratch + (size_t)lane * job->lane_scratch, NULL);
    finish_range(job, 1, c0, cn, job->sums + 2 * c0, job->coef + c0, invstd + c0, k, cn);
    sbn__channel_map(SBN_MAP_BACKWARD, &dys, &xs, k, &gis, NULL);
}

SBN_API sbn_status sbn_batch_norm_backward(const sbn_tensor *dy, const sbn_tensor *x,
                                           const sbn_tensor *weight,
                                           const sbn_tensor *running_mean,
                                           const sbn_tensor *running_var,
                                           const sbn_tensor *save_mean,
                                           const sbn_tensor *save_invstd, int training,
                                           double eps, sbn_tensor *grad_input,
                                           sbn_tensor *grad_weight, sbn_tensor *grad_bias,
                                           void *workspace, size_t workspace_bytes,
                                           sbn_pool_t *pool)
{
    backward_job job;
    channels_job cj;
    sbn_pool_t team;
    sbn_status s;
    double *coef;
    int64_t channels;
    int need_sums;

    sbn__clear_error();
    s = check_args(dy, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps,
                   grad_input, grad_weight, grad_bias, workspace, workspace_bytes);
    if (s != SBN_OK) return s;

    channels = x->shape[1];
    job.dy = dy;
    job.x = x;
    job.weight = weight;
    job.grad_input = grad_input;
    job.grad_weight = grad_weight;
    job.grad_bias = grad_bias;
    job.channels = channels;
    job.r = sbn_tensor_numel(x) / channels;
    job.scratch = sbn__ws_align(workspace);
    job.sums = job.scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    job.coef = coef = job.sums + 2 * channels;
    /* coef[c] = mean, coef[C + c] = invstd for this mode (eval: the invstd kernel with
     * count 1, var / 1 being var, so sbn__invstd(var, eps)'s bits) */
    sbn__load_vec(training ? save_mean : running_mean, 0, channels, coef);
    sbn__load_vec(training ? save_invstd : running_var, 0, channels, coef + channels);
    if (!training)
        sbn__kernels()->invstd(coef + channels, 1, (size_t)channels, 1.0, eps, coef + channels);
    if (training && grad_input && job.r > 0) {
        size_t bytes = sbn_dtype_size(dy->dtype) + sbn_dtype_size(x->dtype);
        const sbn_tensor *tensors[3];
        sbn_pool_t one_pass_team, *one_pass_pool;
        tensors[0] = dy;
        tensors[1] = x;
        tensors[2] = grad_input;
        one_pass_pool = sbn__plan_team(pool, sbn__plan_stream_ns(tensors, 3), &one_pass_team);
        job.block = sbn__one_pass_block(x, bytes, one_pass_pool);
        if (job.block > 0) {
            sbn_tensor first = sbn__channel_slice(x, 0, job.block);
            job.lane_scratch = sbn__channel_reduce_bytes(&first) / sizeof(double);
            sbn__one_pass_run(channels, job.block, train_block, &job, one_pass_pool);
            return SBN_OK;
        }
    }
    need_sums = grad_weight || grad_bias || (training && grad_input);
    if (need_sums) {
        sbn_tensor centers = sbn_tensor_1d(coef, SBN_F64, channels);
        sbn__channel_reduce(SBN_REDUCE_BACKWARD, dy, x, &centers, job.sums, job.scratch, pool);
    }
    cj.job = &job;
    cj.training = training;
    cj.grad_input = grad_input != NULL && job.r > 0;
    if (!cj.grad_input) {
        sbn__parallel_for(sbn__plan_team(pool, sbn__plan_channels_ns(channels, 0), &team),
                          channels, finish_channels, &cj);
        return SBN_OK;
    }
    if (training)
        sbn__channel_map_with(SBN_MAP_BACKWARD, dy, x, coef, finish_channels, &cj,
                              sbn__plan_channels_ns(channels, 0), grad_input, pool);
    else
        sbn__channel_map_with(SBN_MAP_NORMALIZE, dy, NULL, coef, finish_channels, &cj,
                              sbn__plan_channels_ns(channels, 0), grad_input, pool);
    return SBN_OK;
}
