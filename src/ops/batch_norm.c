/*
 * batch_norm.c - plain batch normalisation forward (PyTorch F.batch_norm).
 * Training: the MOMENTS reduction gives each channel's mean and M2 over R;
 *   y = (x - mean) * invstd * w + b with invstd = 1/sqrt(M2/R + eps), running
 *   stats updated with momentum and M2/(R-1), save_mean/save_invstd written.
 * Eval: y = (x - running_mean) / sqrt(running_var + eps) * w + b.
 * y is computed from the double statistics, not from their rounded copies.
 */
#include "core/internal.h"

/* Scratch: chunk partials, per-channel (mean, M2), per-channel map coefficients. */
static size_t batch_norm_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], 6 * sizeof(double)));
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
    if ((s = sbn__check_workspace(workspace, workspace_bytes, batch_norm_need(x))) != SBN_OK)
        return s;
    return sbn__check_workspace_apart(workspace, sbn__ws_bytes(batch_norm_need(x)), outputs, 5,
                                      inputs, 5);
}

SBN_API sbn_status sbn_batch_norm(const sbn_tensor *x, const sbn_tensor *weight,
                                  const sbn_tensor *bias, int training, double momentum,
                                  double eps, sbn_tensor *running_mean, sbn_tensor *running_var,
                                  sbn_tensor *y, sbn_tensor *save_mean, sbn_tensor *save_invstd,
                                  void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    sbn_status s, result = SBN_OK;
    double *scratch, *stats, *coef;
    int64_t c, channels, r;

    sbn__clear_error();
    s = check_args(x, weight, bias, training, momentum, eps, running_mean, running_var, y,
                   save_mean, save_invstd, workspace, workspace_bytes);
    if (s != SBN_OK) return s;

    channels = x->shape[1];
    r = sbn_tensor_numel(x) / channels;
    scratch = sbn__ws_align(workspace);
    stats = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    coef = stats + 2 * channels;
    if (training) {
        sbn__channel_reduce(SBN_REDUCE_MOMENTS, x, NULL, NULL, stats, scratch, pool);
        for (c = 0; c < channels; c++) {
            sbn_moments total;
            sbn_status channel;
            total.count = (double)r;
            total.mean = stats[2 * c];
            total.m2 = stats[2 * c + 1];
            channel = sbn__finish_channel(&total, c, momentum, eps, running_mean, running_var,
                                          save_mean, save_invstd);
            result = sbn__combine_status(result, channel);
            coef[c] = total.mean;
            coef[1 * channels + c] = r > 0 ? sbn__invstd(total.m2 / (double)r, eps) : 0.0;
        }
    } else {
        for (c = 0; c < channels; c++) {
            coef[c] = sbn__load1(running_mean, c);
            coef[1 * channels + c] = sbn__invstd(sbn__load1(running_var, c), eps);
        }
    }
    for (c = 0; c < channels; c++) {
        coef[1 * channels + c] *= weight ? sbn__load1(weight, c) : 1.0;
        coef[2 * channels + c] = bias ? sbn__load1(bias, c) : 0.0;
        coef[3 * channels + c] = 0.0;
    }
    sbn__channel_map(SBN_MAP_NORMALIZE, x, NULL, coef, y, pool);
    return result;
}
