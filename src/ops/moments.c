/*
 * moments.c - the per-channel rules every statistics op shares: Chan's merge of
 * (count, mean, M2) triples, invstd from a variance, and the finish of one
 * channel (mean/invstd outputs, running-stat update with the unbiased variance,
 * the zero- and single-sample statuses), and the argument checks the [W, C] gathers
 * share.
 *
 *   merge:  n = na + nb, d = mb - ma, mean = ma + d*nb/n, M2 = M2a + M2b + d^2*na*nb/n
 *   invstd = 1/sqrt(M2/n + eps)   (0 when M2/n + eps == 0, as PyTorch)
 *   running_mean <- (1-m)*running_mean + m*mean
 *   running_var  <- (1-m)*running_var  + m*M2/(n-1)
 */
#include <math.h>

#include "core/check.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/moments.h"
#include "syncbn/ops.h"

void sbn__moments_merge(sbn_moments *a, double count_b, double mean_b, double m2_b)
{
    double n, delta;
    if (count_b <= 0) return;
    if (a->count <= 0) {
        a->count = count_b;
        a->mean = mean_b;
        a->m2 = m2_b;
        return;
    }
    n = a->count + count_b;
    delta = mean_b - a->mean;
    a->mean += delta * (count_b / n);
    a->m2 += m2_b + delta * delta * (a->count * count_b / n);
    a->count = n;
}

sbn_status sbn__combine_status(sbn_status acc, sbn_status channel)
{
    if (acc == SBN_NO_SAMPLES || channel == SBN_NO_SAMPLES) return SBN_NO_SAMPLES;
    if (acc == SBN_SINGLE_SAMPLE || channel == SBN_SINGLE_SAMPLE) return SBN_SINGLE_SAMPLE;
    return SBN_OK;
}

sbn_status sbn__finish_channel(const sbn_moments *total, int64_t c, double momentum, double eps,
                               sbn_tensor *running_mean, sbn_tensor *running_var,
                               sbn_tensor *mean, sbn_tensor *invstd)
{
    double n = total->count;
    return sbn__finish_channel_inv(total, c, momentum, n > 0 ? sbn__invstd(total->m2 / n, eps) : 0.0,
                                   running_mean, running_var, mean, invstd);
}

sbn_status sbn__finish_channel_inv(const sbn_moments *total, int64_t c, double momentum,
                                   double inv, sbn_tensor *running_mean, sbn_tensor *running_var,
                                   sbn_tensor *mean, sbn_tensor *invstd)
{
    double n = total->count;
    if (n <= 0) {
        if (mean) sbn__store1(mean, c, 0.0);
        if (invstd) sbn__store1(invstd, c, NAN);
        return SBN_NO_SAMPLES;
    }
    if (mean) sbn__store1(mean, c, total->mean);
    if (invstd) sbn__store1(invstd, c, inv);
    if (running_mean)
        sbn__store1(running_mean, c,
                    (1.0 - momentum) * sbn__load1(running_mean, c) + momentum * total->mean);
    if (n <= 1) return SBN_SINGLE_SAMPLE;
    if (running_var)
        sbn__store1(running_var, c,
                    (1.0 - momentum) * sbn__load1(running_var, c) +
                        momentum * (total->m2 / (n - 1.0)));
    return SBN_OK;
}

/* The counts of a gather: a [W] vector of any dtype (sbn__check_count_vector), every
 * value finite and >= 0 (read through the element conversions, which core lacks). */
static sbn_status check_counts(const sbn_tensor *t, const char *name, int64_t n)
{
    int64_t i;
    sbn_status s = sbn__check_count_vector(t, name, n);
    if (s != SBN_OK) return s;
    for (i = 0; i < n; i++) {
        double v = sbn__load1(t, i);
        if (!isfinite(v) || v < 0)
            return sbn__error(SBN_ERR_BAD_VALUE, "%s[%lld] is %.17g; counts must be finite and >= 0",
                              name, (long long)i, v);
    }
    return SBN_OK;
}

sbn_status sbn__check_gather_args(const sbn__arg *inputs, double momentum, double eps,
                                  sbn_tensor *running_mean, sbn_tensor *running_var,
                                  sbn_tensor *mean, sbn_tensor *invstd)
{
    const sbn__arg outputs[] = {{running_mean, "running_mean"}, {running_var, "running_var"},
                                {mean, "mean"}, {invstd, "invstd"}};
    const sbn_tensor *first = inputs[0].t;
    int64_t world, channels;
    sbn_status s;
    int i;
    for (i = 0; i < 3; i++)
        if ((s = sbn__check_present(inputs[i].t, inputs[i].name)) != SBN_OK) return s;
    if ((s = sbn__check_present(mean, "mean")) != SBN_OK) return s;
    if ((s = sbn__check_present(invstd, "invstd")) != SBN_OK) return s;
    if ((s = sbn__check_matrix(first, inputs[0].name, -1, -1)) != SBN_OK) return s;
    world = first->shape[0];
    channels = first->shape[1];
    if ((s = sbn__check_matrix(inputs[1].t, inputs[1].name, world, channels)) != SBN_OK) return s;
    if ((s = check_counts(inputs[2].t, inputs[2].name, world)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(mean, "mean", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_momentum(momentum)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    return sbn__check_aliases(outputs, 4, inputs, 3, NULL, NULL);
}
