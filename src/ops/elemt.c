/*
 * elemt.c - the elementwise normalisation y = (x - mean[c]) * invstd[c] * w[c] + b[c]
 * with weight (default 1) and bias (default 0) optional. The per-channel
 * coefficients go to the workspace as (mean, invstd*w, b), then the NORMALIZE
 * channel map (channel_map.c) writes y in its own dtype and strides.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/map.h"
#include "ops/plan.h"
#include "syncbn/ops.h"

static size_t elemt_need(const sbn_tensor *x)
{
    return sbn__sat_mul((size_t)x->shape[1], SBN_MAP_COEF_DOUBLES * sizeof(double));
}

SBN_API sbn_status sbn_elemt_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, elemt_need);
}

/* The map's coefficients (mean, invstd*w, b, 0) of channels [begin, end). */
typedef struct elemt_job {
    const sbn_tensor *mean, *invstd, *weight, *bias;
    double *coef;
    int64_t channels;
} elemt_job;

static void elemt_coefs(void *ctx, int64_t begin, int64_t end)
{
    const elemt_job *job = ctx;
    double *coef = job->coef;
    int64_t c, channels = job->channels;
    for (c = begin; c < end; c++) {
        coef[c] = sbn__load1(job->mean, c);
        coef[1 * channels + c] =
            sbn__load1(job->invstd, c) * (job->weight ? sbn__load1(job->weight, c) : 1.0);
        coef[2 * channels + c] = job->bias ? sbn__load1(job->bias, c) : 0.0;
        coef[3 * channels + c] = 0.0;
    }
}

SBN_API sbn_status sbn_elemt(const sbn_tensor *x, const sbn_tensor *mean, const sbn_tensor *invstd,
                             const sbn_tensor *weight, const sbn_tensor *bias, sbn_tensor *y,
                             void *workspace, size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg outputs[] = {{y, "y"}};
    const sbn__arg inputs[] = {{x, "x"}, {mean, "mean"}, {invstd, "invstd"}, {weight, "weight"},
                               {bias, "bias"}};
    sbn_status s;
    int64_t channels;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(mean, "mean", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(bias, "bias", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_like(y, "y", x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_aliases(outputs, 1, inputs, 5, y, x)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, elemt_need(x), outputs, 1, inputs, 5);
    if (s != SBN_OK) return s;

    {
        elemt_job job = {mean, invstd, weight, bias, sbn__ws_align(workspace), channels};
        sbn__channel_map_with(SBN_MAP_NORMALIZE, x, NULL, job.coef, elemt_coefs, &job,
                              sbn__plan_channels_ns(channels, 0), y, pool);
    }
    return SBN_OK;
}
