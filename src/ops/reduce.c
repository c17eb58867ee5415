/*
 * reduce.c - the per-channel sum and square sum of x (CANN BatchNormReduce):
 * sum[c] = sum(x), square_sum[c] = sum(x^2), accumulated in double by the SUMS
 * channel reduction. Empty x gives zeros.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/reduce.h"
#include "syncbn/ops.h"

static size_t reduce_need(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__channel_reduce_bytes(x),
                        sbn__sat_mul((size_t)x->shape[1], 2 * sizeof(double)));
}

SBN_API sbn_status sbn_reduce_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, reduce_need);
}

SBN_API sbn_status sbn_reduce(const sbn_tensor *x, sbn_tensor *sum, sbn_tensor *square_sum,
                              void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg outputs[] = {{sum, "sum"}, {square_sum, "square_sum"}};
    const sbn__arg inputs[] = {{x, "x"}};
    sbn_status s;
    double *scratch, *result;
    int64_t c, channels;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(sum, "sum", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(square_sum, "square_sum", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 2, inputs, 1, NULL, NULL)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, reduce_need(x), outputs, 2, inputs, 1);
    if (s != SBN_OK) return s;

    scratch = sbn__ws_align(workspace);
    result = scratch + sbn__channel_reduce_bytes(x) / sizeof(double);
    sbn__channel_reduce(SBN_REDUCE_SUMS, x, NULL, NULL, result, scratch, pool);
    for (c = 0; c < channels; c++) {
        sbn__store1(sum, c, result[2 * c]);
        sbn__store1(square_sum, c, result[2 * c + 1]);
    }
    return SBN_OK;
}
