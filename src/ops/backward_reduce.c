/*
 * backward_reduce.c - the local sums of the backward pass, per channel:
 *   sum_dy = sum(dy), sum_dy_xmu = sum(dy * (x - mean)),
 *   grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy.
 * One BACKWARD channel reduction (channel_reduce.c) gives both sums; each output
 * is optional. Empty x gives zeros.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/reduce.h"
#include "syncbn/ops.h"

static size_t backward_reduce_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], 2 * sizeof(double)));
}

SBN_API sbn_status sbn_backward_reduce_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, backward_reduce_need);
}

SBN_API sbn_status sbn_backward_reduce(const sbn_tensor *dy, const sbn_tensor *x,
                                       const sbn_tensor *mean, const sbn_tensor *invstd,
                                       sbn_tensor *sum_dy, sbn_tensor *sum_dy_xmu,
                                       sbn_tensor *grad_weight, sbn_tensor *grad_bias,
                                       void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg outputs[] = {{sum_dy, "sum_dy"}, {sum_dy_xmu, "sum_dy_xmu"},
                                {grad_weight, "grad_weight"}, {grad_bias, "grad_bias"}};
    const sbn__arg inputs[] = {{dy, "dy"}, {x, "x"}, {mean, "mean"}, {invstd, "invstd"}};
    sbn_status s;
    double *scratch, *sums;
    int64_t c, channels;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_like(dy, "dy", x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(mean, "mean", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(sum_dy, "sum_dy", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(sum_dy_xmu, "sum_dy_xmu", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_weight, "grad_weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_bias, "grad_bias", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 4, inputs, 4, NULL, NULL)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, backward_reduce_need(x),
                             outputs, 4, inputs, 4);
    if (s != SBN_OK) return s;

    scratch = sbn__ws_align(workspace);
    sums = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    if (sum_dy || sum_dy_xmu || grad_weight || grad_bias)
        sbn__channel_reduce(SBN_REDUCE_BACKWARD, dy, x, mean, sums, scratch, pool);
    for (c = 0; c < channels; c++) {
        if (sum_dy) sbn__store1(sum_dy, c, sums[2 * c]);
        if (sum_dy_xmu) sbn__store1(sum_dy_xmu, c, sums[2 * c + 1]);
        if (grad_weight) sbn__store1(grad_weight, c, sums[2 * c + 1] * sbn__load1(invstd, c));
        if (grad_bias) sbn__store1(grad_bias, c, sums[2 * c]);
    }
    return SBN_OK;
}
