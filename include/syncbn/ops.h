/*
 * ops.h - the native SyncBN compute ops, stateless, in two kinds:
 *  - Ops over an activation x (stats, stats_moments, reduce, elemt, backward_reduce,
 *    backward_elemt, batch_norm, batch_norm_backward) are pairs:
 *    sbn_<op>_workspace_size(...) tells how many bytes of scratch the op needs for
 *    these shapes, then sbn_<op>(..., workspace, workspace_bytes, pool) runs it,
 *    splitting its work over the pool's threads.
 *  - Ops over per-channel data only (gather_moments, gather_stats_from_sums,
 *    fold_conv: O(W x C) or O(numel(conv_weight)) serial work) never need scratch or
 *    threads, so they are single calls without workspace, workspace_bytes or pool.
 *    gather_stats_with_counts is the one exception: it has the pair (its size is 0
 *    and it runs serially) because its CANN twin, a two-phase aclnn call, reports
 *    that size in its first phase.
 * Ops never allocate; a workspace of 0 bytes may be NULL. Arguments come in the order
 * inputs, scalars, outputs, workspace, pool, with PyTorch's names. They stay
 * positional (the layer calls of layer.h take structs): at most 10 tensors, each op
 * one formula, and adapters (aclnn, Python) map their namesakes onto them argument
 * for argument. Optional tensors are NULL when absent.
 *
 * Errors: every op returns an sbn_status (syncbn.h); a failure writes no output and
 * leaves a sentence naming the argument, its shape and the rule it broke in
 * sbn_last_error(). The failures common to every op: SBN_ERR_NULL_ARGUMENT (a
 * required pointer), SBN_ERR_BAD_DTYPE, SBN_ERR_BAD_RANK, SBN_ERR_BAD_SHAPE (a view
 * against its peers), SBN_ERR_ALIAS (an output overlapping another argument or the
 * workspace), SBN_ERR_MISALIGNED and SBN_ERR_TOO_LARGE (a view's data or extent),
 * SBN_ERR_BAD_VALUE (eps not finite or < 0, momentum outside [0, 1], a count out of
 * range), SBN_ERR_WORKSPACE_TOO_SMALL (pairs); each op's comment adds its own.
 *
 * Notation: x is (N, C, d2, ..., dk), rank 2..8, channel axis 1 (any strides).
 * R = numel(x) / C is the number of elements of one channel ("the reduction").
 * Per-channel tensors are 1-D [C]. All sums are taken in double precision over a
 * reduction order fixed by the shape (docs/numerics.md), so results do not depend
 * on the thread count or the ISA. Elementwise outputs (y, grad_input) are computed
 * in float with fused multiply-adds when no tensor of the map is fp64 (error bound
 * in docs/numerics.md), else in double.
 */
#ifndef SYNCBN_OPS_H
#define SYNCBN_OPS_H

#include "syncbn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-channel moments of a set of samples: count, mean, M2 = sum((x - mean)^2). */
typedef struct sbn_moments {
    double count;
    double mean;
    double m2;
} sbn_moments;

/*
 * stats: mean[c] = sum(x)/R, invstd[c] = 1/sqrt(M2/R + eps) (biased variance).
 * R == 0 (empty x): mean = 0, invstd = NaN, returns SBN_NO_SAMPLES.
 * mean, invstd: [C], any float dtype (fp32 for fp16/bf16 x is the usual choice).
 */
sbn_status sbn_stats_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_stats(const sbn_tensor *x, double eps, sbn_tensor *mean, sbn_tensor *invstd,
                     void *workspace, size_t workspace_bytes, sbn_pool_t *pool);

/*
 * stats_moments: the same reduction, returned as double (count, mean, M2) per
 * channel in moments[0..C-1], for exchange between ranks (no eps round trip).
 * Empty x gives count 0, mean 0, M2 0 and SBN_OK.
 */
sbn_status sbn_stats_moments_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_stats_moments(const sbn_tensor *x, sbn_moments *moments, void *workspace,
                             size_t workspace_bytes, sbn_pool_t *pool);

/*
 * gather_stats_with_counts: merge W ranks' per-channel statistics.
 *   mean_all, invstd_all: [W, C]; counts: [W] (any dtype, values finite and >= 0).
 *   Rank j's M2 is rebuilt as (1/invstd^2 - eps) * count_j (clamped at 0) and the
 *   ranks are merged in order 0..W-1 with Chan's formula; N = sum(counts).
 *   mean[c] = global mean, invstd[c] = 1/sqrt(M2/N + eps).
 *   running_mean <- (1 - momentum) * running_mean + momentum * mean
 *   running_var  <- (1 - momentum) * running_var  + momentum * M2/(N - 1)   (unbiased)
 * Each running tensor is optional and updated independently.
 * N == 0: mean 0, invstd NaN, running stats untouched, SBN_NO_SAMPLES.
 * N == 1: running_mean is updated, running_var is left unchanged (M2/0 is undefined),
 *         SBN_SINGLE_SAMPLE.
 * Ranks with count 0 contribute nothing; their mean/invstd values are not read.
 */
sbn_status sbn_gather_stats_with_counts_workspace_size(const sbn_tensor *mean_all, size_t *bytes);
sbn_status sbn_gather_stats_with_counts(const sbn_tensor *mean_all, const sbn_tensor *invstd_all,
                                        const sbn_tensor *counts, double momentum, double eps,
                                        sbn_tensor *running_mean, sbn_tensor *running_var,
                                        sbn_tensor *mean, sbn_tensor *invstd, void *workspace,
                                        size_t workspace_bytes, sbn_pool_t *pool);

/*
 * gather_moments: the native merge of parts[j * C + c] (j = rank 0..W-1), double
 * (count, mean, M2) from sbn_stats_moments, without going through invstd.
 * Every count must be in [0, SBN_MOMENTS_MAX_COUNT] = [0, 2^53] (9007199254740992,
 * the largest integer up to which a double holds every count exactly); NaN, a
 * negative or a larger count is SBN_ERR_BAD_VALUE naming the rank, the channel and
 * the value.
 * Same outputs, running-stat rules and statuses as gather_stats_with_counts; any
 * of total (the merged moments, [C] structs), mean and invstd may be NULL.
 */
#define SBN_MOMENTS_MAX_COUNT 9007199254740992.0 /* 2^53 */
sbn_status sbn_gather_moments(const sbn_moments *parts, int64_t world, int64_t channels,
                              double momentum, double eps, sbn_tensor *running_mean,
                              sbn_tensor *running_var, sbn_moments *total, sbn_tensor *mean,
                              sbn_tensor *invstd);

/*
 * gather_stats_from_sums (CANN SyncBatchNormGatherStats):
 *   total_sum, total_square_sum: [W, C]; sample_count: [W] (any dtype, finite, >= 0).
 *   N = sum(sample_count); mean = sum(total_sum)/N;
 *   var = max(0, sum(total_square_sum)/N - mean^2); invstd = 1/sqrt(var + eps);
 *   running stats as above with the unbiased var * N/(N - 1).
 *   Statuses for N == 0 and N == 1 as gather_stats_with_counts.
 */
sbn_status sbn_gather_stats_from_sums(const sbn_tensor *total_sum,
                                      const sbn_tensor *total_square_sum,
                                      const sbn_tensor *sample_count, double momentum, double eps,
                                      sbn_tensor *running_mean, sbn_tensor *running_var,
                                      sbn_tensor *mean, sbn_tensor *invstd);

/* reduce (CANN BatchNormReduce): sum[c] = sum(x), square_sum[c] = sum(x^2). Empty x gives 0. */
sbn_status sbn_reduce_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_reduce(const sbn_tensor *x, sbn_tensor *sum, sbn_tensor *square_sum,
                      void *workspace, size_t workspace_bytes, sbn_pool_t *pool);

/*
 * elemt: y = (x - mean[c]) * invstd[c] * weight[c] + bias[c]; weight (default 1)
 * and bias (default 0) optional. y has x's shape and any float dtype and strides;
 * y may be exactly x (same view) for an in-place update, but may not partly overlap it.
 */
sbn_status sbn_elemt_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_elemt(const sbn_tensor *x, const sbn_tensor *mean, const sbn_tensor *invstd,
                     const sbn_tensor *weight, const sbn_tensor *bias, sbn_tensor *y,
                     void *workspace, size_t workspace_bytes, sbn_pool_t *pool);

/*
 * backward_reduce: local sums for the backward pass; dy has x's shape.
 *   sum_dy[c]      = sum(dy)
 *   sum_dy_xmu[c]  = sum(dy * (x - mean[c]))
 *   grad_weight[c] = sum_dy_xmu[c] * invstd[c]
 *   grad_bias[c]   = sum_dy[c]
 * Each output is optional (NULL = not computed). Empty x gives zeros.
 */
sbn_status sbn_backward_reduce_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_backward_reduce(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *mean,
                               const sbn_tensor *invstd, sbn_tensor *sum_dy,
                               sbn_tensor *sum_dy_xmu, sbn_tensor *grad_weight,
                               sbn_tensor *grad_bias, void *workspace, size_t workspace_bytes,
                               sbn_pool_t *pool);

/*
 * backward_elemt: with N = count (the global number of samples per channel, >= R):
 *   grad_input = (dy - sum_dy/N - (x - mean) * invstd^2 * sum_dy_xmu/N) * invstd * weight
 * weight optional (default 1). grad_input may be exactly dy (same view).
 * count must be >= R (it counts this rank's samples too), else SBN_ERR_BAD_VALUE.
 */
sbn_status sbn_backward_elemt_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_backward_elemt(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *mean,
                              const sbn_tensor *invstd, const sbn_tensor *weight,
                              const sbn_tensor *sum_dy, const sbn_tensor *sum_dy_xmu,
                              int64_t count, sbn_tensor *grad_input, void *workspace,
                              size_t workspace_bytes, sbn_pool_t *pool);

/*
 * batch_norm (forward), PyTorch F.batch_norm semantics.
 * training != 0: mean/var of this batch (biased var for y), y = (x - mean) * invstd * w + b,
 *   running_mean/var updated with momentum (var unbiased; each optional), save_mean = mean
 *   and save_invstd = invstd (each optional). Empty x: save_mean 0, save_invstd NaN,
 *   SBN_NO_SAMPLES; R == 1: running_var untouched, SBN_SINGLE_SAMPLE.
 * training == 0: y = (x - running_mean) / sqrt(running_var + eps) * w + b; both running
 *   tensors are required; save_* are not written; SBN_OK also for an empty x.
 */
sbn_status sbn_batch_norm_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_batch_norm(const sbn_tensor *x, const sbn_tensor *weight, const sbn_tensor *bias,
                          int training, double momentum, double eps, sbn_tensor *running_mean,
                          sbn_tensor *running_var, sbn_tensor *y, sbn_tensor *save_mean,
                          sbn_tensor *save_invstd, void *workspace, size_t workspace_bytes,
                          sbn_pool_t *pool);

/*
 * batch_norm_backward, PyTorch native_batch_norm_backward semantics.
 * training != 0: needs save_mean and save_invstd; with xhat = (x - save_mean) * save_invstd,
 *   grad_input = w * invstd / R * (R*dy - sum(dy) - xhat * sum(dy * xhat)),
 *   grad_weight = sum(dy * xhat), grad_bias = sum(dy).
 * training == 0: needs running_mean and running_var; invstd = 1/sqrt(running_var + eps),
 *   grad_input = dy * w * invstd, grad_weight = sum(dy * (x - running_mean)) * invstd,
 *   grad_bias = sum(dy).
 * Outputs grad_input, grad_weight, grad_bias are each optional (NULL = masked off).
 * Empty x: grad_weight and grad_bias are set to 0.
 */
sbn_status sbn_batch_norm_backward_workspace_size(const sbn_tensor *x, size_t *bytes);
sbn_status sbn_batch_norm_backward(const sbn_tensor *dy, const sbn_tensor *x,
                                   const sbn_tensor *weight, const sbn_tensor *running_mean,
                                   const sbn_tensor *running_var, const sbn_tensor *save_mean,
                                   const sbn_tensor *save_invstd, int training, double eps,
                                   sbn_tensor *grad_input, sbn_tensor *grad_weight,
                                   sbn_tensor *grad_bias, void *workspace, size_t workspace_bytes,
                                   sbn_pool_t *pool);

/*
 * fold_conv: folds an eval-mode batch norm into the convolution (or linear layer)
 * before it, for deployment. conv_weight is [O, I, k...] (rank 2..8, dim 0 = the
 * output channel the batch norm normalises); per output channel o:
 *   scale[o] = bn_weight[o] / sqrt(running_var[o] + eps)
 *   folded_weight[o, ...] = conv_weight[o, ...] * scale[o]
 *   folded_bias[o] = (conv_bias[o] - running_mean[o]) * scale[o] + bn_bias[o]
 * computed in double and rounded once. conv_bias, bn_weight and bn_bias are optional
 * (0, 1 and 0 when NULL); the rest are required, every [O] tensor any float dtype.
 * In place: folded_weight may be exactly the conv_weight view, folded_bias exactly
 * the conv_bias view. A running_var + eps <= 0 gives Inf/NaN, as PyTorch's fusion.
 */
sbn_status sbn_fold_conv(const sbn_tensor *conv_weight, const sbn_tensor *conv_bias,
                         const sbn_tensor *bn_weight, const sbn_tensor *bn_bias,
                         const sbn_tensor *running_mean, const sbn_tensor *running_var, double eps,
                         sbn_tensor *folded_weight, sbn_tensor *folded_bias);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_OPS_H */
