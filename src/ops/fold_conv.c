/*
 * fold_conv.c - batch norm folded into the convolution before it (ops.h has the
 * contract). For conv_weight [O, I, k...] and the batch norm's eval statistics:
 *   scale[o] = bn_weight[o] / sqrt(running_var[o] + eps)
 *   W'[o, ...] = W[o, ...] * scale[o],   b'[o] = (b[o] - running_mean[o]) * scale[o] + bn_bias[o]
 * Each output element depends only on its own input element and channel o's
 * values, so the fold works in place; it walks each output channel's block as
 * runs along the last dim, converting through double.
 */
#include <math.h>

#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "syncbn/ops.h"

#define FOLD_RUN 256 /* elements converted at a time */

/* Weight checks: conv_weight rank 2..8 float, folded_weight the same shape. */
static sbn_status check_weights(const sbn_tensor *conv_weight, const sbn_tensor *folded_weight)
{
    sbn_status s;
    if ((s = sbn__check_activation(conv_weight, "conv_weight")) != SBN_OK) return s;
    return sbn__check_like(folded_weight, "folded_weight", conv_weight, "conv_weight");
}

static sbn_status check_args(const sbn_tensor *conv_weight, const sbn_tensor *conv_bias,
                             const sbn_tensor *bn_weight, const sbn_tensor *bn_bias,
                             const sbn_tensor *running_mean, const sbn_tensor *running_var,
                             double eps, sbn_tensor *folded_weight, sbn_tensor *folded_bias)
{
    const sbn__arg inputs[] = {{conv_weight, "conv_weight"}, {conv_bias, "conv_bias"},
                               {bn_weight, "bn_weight"},     {bn_bias, "bn_bias"},
                               {running_mean, "running_mean"}, {running_var, "running_var"}};
    const sbn__arg weight_out[] = {{folded_weight, "folded_weight"}};
    const sbn__arg bias_out[] = {{folded_bias, "folded_bias"}};
    const sbn__arg both_out[] = {{folded_weight, "folded_weight"}, {folded_bias, "folded_bias"}};
    int64_t o;
    sbn_status s;
    if ((s = check_weights(conv_weight, folded_weight)) != SBN_OK) return s;
    o = conv_weight->shape[0];
    if ((s = sbn__check_vector(conv_bias, "conv_bias", o, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(bn_weight, "bn_weight", o, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(bn_bias, "bn_bias", o, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", o, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_var, "running_var", o, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(folded_bias, "folded_bias", o, 1)) != SBN_OK) return s;
    if ((s = sbn__check_eps(eps)) != SBN_OK) return s;
    /* each output against every input (its own in-place twin allowed), then each other */
    s = sbn__check_aliases(weight_out, 1, inputs, 6, folded_weight, conv_weight);
    if (s != SBN_OK) return s;
    s = sbn__check_aliases(bias_out, 1, inputs, 6, folded_bias, conv_bias);
    if (s != SBN_OK) return s;
    return sbn__check_aliases(both_out, 2, NULL, 0, NULL, NULL);
}

/* W'[o, ...] = W[o, ...] * scale over output channel o's block, run by run along the last dim. */
static void fold_channel(const sbn_tensor *w, sbn_tensor *out, int64_t o, double scale)
{
    int64_t idx[SBN_MAX_RANK] = {0}, last = w->rank - 1, len = w->shape[last], at, n, i, d;
    int64_t es_in = (int64_t)sbn_dtype_size(w->dtype), es_out = (int64_t)sbn_dtype_size(out->dtype);
    double buf[FOLD_RUN];
    for (;;) {
        const char *src = (const char *)w->data + o * w->strides[0] * es_in;
        char *dst = (char *)out->data + o * out->strides[0] * es_out;
        for (d = 1; d < last; d++) {
            src += idx[d] * w->strides[d] * es_in;
            dst += idx[d] * out->strides[d] * es_out;
        }
        for (at = 0; at < len; at += n) {
            n = len - at < FOLD_RUN ? len - at : FOLD_RUN;
            sbn__load_run(src + at * w->strides[last] * es_in, w->dtype, w->strides[last], n, buf);
            for (i = 0; i < n; i++) buf[i] *= scale;
            sbn__store_run(dst + at * out->strides[last] * es_out, out->dtype, out->strides[last],
                           n, buf);
        }
        for (d = last - 1; d >= 1; d--) { /* next index over dims 1..last-1 */
            if (++idx[d] < w->shape[d]) break;
            idx[d] = 0;
        }
        if (d < 1) return;
    }
}

SBN_API sbn_status sbn_fold_conv(const sbn_tensor *conv_weight, const sbn_tensor *conv_bias,
                                 const sbn_tensor *bn_weight, const sbn_tensor *bn_bias,
                                 const sbn_tensor *running_mean, const sbn_tensor *running_var,
                                 double eps, sbn_tensor *folded_weight, sbn_tensor *folded_bias)
{
    sbn_status s;
    int64_t o, outs;

    sbn__clear_error();
    s = check_args(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var, eps,
                   folded_weight, folded_bias);
    if (s != SBN_OK) return s;
    outs = conv_weight->shape[0];
    for (o = 0; o < outs; o++) {
        double gamma = bn_weight ? sbn__load1(bn_weight, o) : 1.0;
        double beta = bn_bias ? sbn__load1(bn_bias, o) : 0.0;
        double bias = conv_bias ? sbn__load1(conv_bias, o) : 0.0;
        double scale = gamma / sqrt(sbn__load1(running_var, o) + eps);
        double mean = sbn__load1(running_mean, o);
        if (sbn_tensor_numel(conv_weight) > 0) fold_channel(conv_weight, folded_weight, o, scale);
        sbn__store1(folded_bias, o, (bias - mean) * scale + beta);
    }
    return SBN_OK;
}
