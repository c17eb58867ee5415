/*
 * stats.c - the local batch statistics of x (N, C, ...): per channel the mean
 * and invstd = 1/sqrt(M2/R + eps) (biased variance), or the double moments
 * (count, mean, M2) that the distributed layer exchanges instead of invstd.
 * Both run the MOMENTS channel reduction (channel_reduce.c).
 */
#include <math.h>

#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/moments.h"
#include "ops/reduce.h"
#include "syncbn/ops.h"

/* Scratch: the chunk partials, then the per-channel (mean, M2) results. */
static size_t stats_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], 2 * sizeof(double)));
}

SBN_API sbn_status sbn_stats_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, stats_need);
}

SBN_API sbn_status sbn_stats_moments_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn_stats_workspace_size(x, bytes);
}

/* Runs the reduction; mean/M2 of channel c land in result[2c], result[2c+1]. */
static double *run_moments(const sbn_tensor *x, void *workspace, sbn_pool_t *pool)
{
    double *scratch = sbn__ws_align(workspace);
    double *result = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    sbn__channel_reduce(SBN_REDUCE_MOMENTS, x, NULL, NULL, result, scratch, pool);
    return result;
}

/* mean and invstd of every channel from its (mean, M2) at result[2c], result[2c + 1], a
 * piece of channels at a time: the invstds by the invstd kernel (sbn__invstd(M2 / R, eps)'s
 * bits), both outputs through the conversion kernels. */
static void store_stats(const double *result, int64_t channels, double r, double eps,
                        sbn_tensor *mean, sbn_tensor *invstd)
{
    double v[SBN_CONVERT_PIECE];
    int64_t p, pn, j;
    for (p = 0; p < channels; p += pn) {
        pn = channels - p < SBN_CONVERT_PIECE ? channels - p : SBN_CONVERT_PIECE;
        for (j = 0; j < pn; j++) v[j] = result[2 * (p + j)];
        sbn__store_vec(mean, p, pn, v);
        sbn__kernels()->invstd(result + 2 * p + 1, 2, (size_t)pn, r, eps, v);
        sbn__store_vec(invstd, p, pn, v);
    }
}

SBN_API sbn_status sbn_stats(const sbn_tensor *x, double eps, sbn_tensor *mean, sbn_tensor *invstd,
                             void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg outputs[] = {{mean, "mean"}, {invstd, "invstd"}};
    const sbn__arg inputs[] = {{x, "x"}};
    sbn_status s;
    double *result;
    int64_t c, channels, r;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(mean, "mean", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 2, inputs, 1, NULL, NULL)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, stats_need(x), outputs, 2, inputs, 1);
    if (s != SBN_OK) return s;

    r = sbn_tensor_numel(x) / channels;
    result = run_moments(x, workspace, pool);
    if (r == 0) {
        for (c = 0; c < channels; c++) {
            sbn__store1(mean, c, 0.0);
            sbn__store1(invstd, c, NAN);
        }
        return SBN_NO_SAMPLES;
    }
    store_stats(result, channels, (double)r, eps, mean, invstd);
    return SBN_OK;
}

SBN_API sbn_status sbn_stats_moments(const sbn_tensor *x, sbn_moments *moments, void *workspace,
                                     size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg inputs[] = {{x, "x"}};
    sbn__arg outputs[1];
    sbn_tensor moments_view;
    sbn_status s;
    double *result;
    int64_t c, channels, r;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_present(moments, "moments")) != SBN_OK) return s;
    moments_view = sbn_tensor_1d(moments, SBN_F64, x->shape[1] * 3);
    outputs[0].t = &moments_view;
    outputs[0].name = "moments";
    if ((s = sbn__check_aliases(outputs, 1, inputs, 1, NULL, NULL)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, stats_need(x), outputs, 1, inputs, 1);
    if (s != SBN_OK) return s;

    channels = x->shape[1];
    r = sbn_tensor_numel(x) / channels;
    result = run_moments(x, workspace, pool);
    for (c = 0; c < channels; c++) {
        moments[c].count = (double)r;
        moments[c].mean = result[2 * c];
        moments[c].m2 = result[2 * c + 1];
    }
    return SBN_OK;
}
