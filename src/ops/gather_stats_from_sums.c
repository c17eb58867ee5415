/*
 * gather_stats_from_sums.c - the sum / square-sum / sample-count merge (CANN
 * SyncBatchNormGatherStats). Per channel, over ranks j with count_j > 0:
 *   N = sum(count_j), mean = sum(total_sum[j])/N,
 *   var = max(0, sum(total_square_sum[j])/N - mean^2)   (biased),
 *   invstd = 1/sqrt(var + eps); running stats as moments.c with M2 = var*N.
 * The clamp at 0 keeps rounding from turning a constant channel into NaN.
 */
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/moments.h"
#include "syncbn/ops.h"

SBN_API sbn_status sbn_gather_stats_from_sums(const sbn_tensor *total_sum,
                                              const sbn_tensor *total_square_sum,
                                              const sbn_tensor *sample_count, double momentum,
                                              double eps, sbn_tensor *running_mean,
                                              sbn_tensor *running_var, sbn_tensor *mean,
                                              sbn_tensor *invstd)
{
    const sbn__arg inputs[] = {{total_sum, "total_sum"}, {total_square_sum, "total_square_sum"},
                               {sample_count, "sample_count"}};
    sbn_status s, result = SBN_OK;
    int64_t c, j, world, channels;

    sbn__clear_error();
    s = sbn__check_gather_args(inputs, momentum, eps, running_mean, running_var, mean, invstd);
    if (s != SBN_OK) return s;
    world = total_sum->shape[0];
    channels = total_sum->shape[1];

    for (c = 0; c < channels; c++) {
        double n = 0.0, sum = 0.0, squares = 0.0, m, var;
        sbn_moments total = {0.0, 0.0, 0.0};
        sbn_status channel;
        for (j = 0; j < world; j++) {
            double count = sbn__load1(sample_count, j);
            if (count <= 0) continue;
            n += count;
            sum += sbn__load2(total_sum, j, c);
            squares += sbn__load2(total_square_sum, j, c);
        }
        if (n > 0) {
            m = sum / n;
            var = squares / n - m * m;
            if (var < 0) var = 0;
            total.count = n;
            total.mean = m;
            total.m2 = var * n;
        }
        channel = sbn__finish_channel(&total, c, momentum, eps, running_mean, running_var, mean,
                                      invstd);
        result = sbn__combine_status(result, channel);
    }
    return result;
}
