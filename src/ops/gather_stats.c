/*
 * gather_stats.c - merging the statistics of W ranks into the global batch
 * statistics, and the running-stat update. Two forms:
 *   gather_stats_with_counts: PyTorch/CANN shape, ranks send (mean, invstd) and a
 *     count; rank j's M2 is rebuilt as (1/invstd_j^2 - eps) * count_j (>= 0;
 *     invstd 0 means variance 0, the convention of stats).
 *   gather_moments: the native form, ranks send double (count, mean, M2), no eps
 *     round trip.
 * Ranks are merged in order 0..W-1 with Chan's formula (moments.c); ranks with
 * count 0 are skipped without reading their values.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/extent.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/moments.h"
#include "syncbn/ops.h"

SBN_API sbn_status sbn_gather_stats_with_counts_workspace_size(const sbn_tensor *mean_all,
                                                               size_t *bytes)
{
    sbn_status s;
    sbn__clear_error();
    if ((s = sbn__check_present(bytes, "bytes")) != SBN_OK) return s;
    if ((s = sbn__check_matrix_shape(mean_all, "mean_all", -1, -1)) != SBN_OK) return s;
    *bytes = 0;
    return SBN_OK;
}

SBN_API sbn_status sbn_gather_stats_with_counts(const sbn_tensor *mean_all,
                                                const sbn_tensor *invstd_all,
                                                const sbn_tensor *counts, double momentum,
                                                double eps, sbn_tensor *running_mean,
                                                sbn_tensor *running_var, sbn_tensor *mean,
                                                sbn_tensor *invstd, void *workspace,
                                                size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg inputs[] = {{mean_all, "mean_all"}, {invstd_all, "invstd_all"},
                               {counts, "counts"}};
    sbn_status s, channel, result = SBN_OK;
    int64_t c, j, world, channels;

    (void)pool;
    sbn__clear_error();
    s = sbn__check_gather_args(inputs, momentum, eps, running_mean, running_var, mean, invstd);
    if (s != SBN_OK) return s;
    world = mean_all->shape[0];
    channels = mean_all->shape[1];
    s = sbn__check_workspace(workspace, workspace_bytes, 0, NULL, 0, NULL, 0);
    if (s != SBN_OK) return s;

    for (c = 0; c < channels; c++) {
        sbn_moments total = {0.0, 0.0, 0.0};
        for (j = 0; j < world; j++) {
            double count = sbn__load1(counts, j), is, var;
            if (count <= 0) continue;
            is = sbn__load2(invstd_all, j, c);
            var = is == 0.0 ? 0.0 : 1.0 / (is * is) - eps;
            if (var < 0) var = 0;
            sbn__moments_merge(&total, count, sbn__load2(mean_all, j, c), var * count);
        }
        channel = sbn__finish_channel(&total, c, momentum, eps, running_mean, running_var,
                                      mean, invstd);
        result = sbn__combine_status(result, channel);
    }
    return result;
}

SBN_API sbn_status sbn_gather_moments(const sbn_moments *parts, int64_t world, int64_t channels,
                                      double momentum, double eps, sbn_tensor *running_mean,
                                      sbn_tensor *running_var, sbn_moments *total,
                                      sbn_tensor *mean, sbn_tensor *invstd)
{
    sbn_tensor parts_view, total_view;
    sbn__arg outputs[] = {{running_mean, "running_mean"}, {running_var, "running_var"},
                          {mean, "mean"}, {invstd, "invstd"}, {NULL, "total"}};
    sbn__arg inputs[] = {{NULL, "parts"}};
    sbn_status s, channel, result = SBN_OK;
    int64_t c, j, cells;

    sbn__clear_error();
    if ((s = sbn__check_present(parts, "parts")) != SBN_OK) return s;
    if (world < 1 || channels < 1)
        return sbn__error(SBN_ERR_BAD_SHAPE, "parts is [world = %lld][channels = %lld]; both must be >= 1",
                          (long long)world, (long long)channels);
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(mean, "mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_momentum(momentum)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    if (!sbn__mul_i64(world, channels, &cells) || cells > ((int64_t)1 << 56) / 3)
        return sbn__error(SBN_ERR_TOO_LARGE,
                          "parts is [world = %lld][channels = %lld]: more than 2^56 / 3 moments",
                          (long long)world, (long long)channels);
    parts_view = sbn_tensor_1d((void *)parts, SBN_F64, cells * 3);
    total_view = sbn_tensor_1d(total, SBN_F64, channels * 3);
    if ((s = sbn__check_view_memory(&parts_view, "parts")) != SBN_OK) return s;
    if (total && (s = sbn__check_view_memory(&total_view, "total")) != SBN_OK) return s;
    for (j = 0; j < cells; j++) {
        if (!(parts[j].count >= 0) || parts[j].count > SBN_MOMENTS_MAX_COUNT)
            return sbn__error(SBN_ERR_BAD_VALUE,
                              "parts[rank %lld][channel %lld].count is %.17g; counts must be in "
                              "[0, 2^53] (9007199254740992, the largest count a double holds "
                              "exactly)",
                              (long long)(j / channels), (long long)(j % channels), parts[j].count);
    }
    inputs[0].t = &parts_view;
    if (total) outputs[4].t = &total_view;
    if ((s = sbn__check_aliases(outputs, 5, inputs, 1, NULL, NULL)) != SBN_OK) return s;

    for (c = 0; c < channels; c++) {
        sbn_moments merged = {0.0, 0.0, 0.0};
        for (j = 0; j < world; j++) {
            const sbn_moments *p = &parts[j * channels + c];
            sbn__moments_merge(&merged, p->count, p->mean, p->m2);
        }
        if (total) total[c] = merged;
        channel = sbn__finish_channel(&merged, c, momentum, eps, running_mean, running_var,
                                      mean, invstd);
        result = sbn__combine_status(result, channel);
    }
    return result;
}
