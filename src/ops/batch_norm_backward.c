/*
 * batch_norm_backward.c - plain batch normalisation backward (PyTorch
 * native_batch_norm_backward). With (mean, invstd) = (save_mean, save_invstd) in
 * training or (running_mean, 1/sqrt(running_var + eps)) in eval, one BACKWARD
 * reduction gives sum_dy and sum_dy_xmu = sum(dy * (x - mean)), then
 *   grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy,
 *   training: grad_input = (dy - sum_dy/R - (x - mean) * invstd^2 * sum_dy_xmu/R) * invstd * w
 *   eval:     grad_input = dy * invstd * w
 */
#include "core/internal.h"

static size_t backward_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], 6 * sizeof(double)));
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
    if ((s = sbn__check_workspace(workspace, workspace_bytes, backward_need(x))) != SBN_OK)
        return s;
    return sbn__check_workspace_apart(workspace, sbn__ws_bytes(backward_need(x)), outputs, 3,
                                      inputs, 7);
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
    sbn_status s;
    double *scratch, *sums, *coef;
    int64_t c, channels, r;
    int need_sums;

    sbn__clear_error();
    s = check_args(dy, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps,
                   grad_input, grad_weight, grad_bias, workspace, workspace_bytes);
    if (s != SBN_OK) return s;

    channels = x->shape[1];
    r = sbn_tensor_numel(x) / channels;
    scratch = sbn__ws_align(workspace);
    sums = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    coef = sums + 2 * channels;
    /* coef[c] = mean, coef[C + c] = invstd for this mode */
    for (c = 0; c < channels; c++) {
        coef[c] = sbn__load1(training ? save_mean : running_mean, c);
        coef[1 * channels + c] = training ? sbn__load1(save_invstd, c)
                                   : sbn__invstd(sbn__load1(running_var, c), eps);
    }
    need_sums = grad_weight || grad_bias || (training && grad_input);
    if (need_sums) {
        sbn_tensor centers = sbn_tensor_1d(coef, SBN_F64, channels);
        sbn__channel_reduce(SBN_REDUCE_BACKWARD, dy, x, &centers, sums, scratch, pool);
    }
    for (c = 0; c < channels; c++) {
        if (grad_weight) sbn__store1(grad_weight, c, sums[2 * c + 1] * coef[1 * channels + c]);
        if (grad_bias) sbn__store1(grad_bias, c, sums[2 * c]);
    }
    if (grad_input == NULL || r == 0) return SBN_OK;
    for (c = 0; c < channels; c++) {
        double mean = coef[c], invstd = coef[1 * channels + c];
        double w = weight ? sbn__load1(weight, c) : 1.0;
        if (training) {
            coef[c] = sums[2 * c] / (double)r;
            coef[1 * channels + c] = mean;
            coef[2 * channels + c] = invstd * invstd * sums[2 * c + 1] / (double)r;
            coef[3 * channels + c] = invstd * w;
        } else {
            coef[c] = 0.0;
            coef[1 * channels + c] = invstd * w;
            coef[2 * channels + c] = 0.0;
            coef[3 * channels + c] = 0.0;
        }
    }
    if (training)
        sbn__channel_map(SBN_MAP_BACKWARD, dy, x, coef, grad_input, pool);
    else
        sbn__channel_map(SBN_MAP_NORMALIZE, dy, NULL, coef, grad_input, pool);
    return SBN_OK;
}
