/*
 * backward_elemt.c - the elementwise input gradient of SyncBN, with N the global
 * number of samples per channel (all ranks):
 *   grad_input = (dy - sum_dy/N - (x - mean) * invstd^2 * sum_dy_xmu/N) * invstd * w
 * Coefficients per channel go to the workspace, then the BACKWARD channel map.
 */
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "ops/map.h"
#include "ops/plan.h"
#include "syncbn/ops.h"

static size_t backward_elemt_need(const sbn_tensor *x)
{
    return sbn__sat_mul((size_t)x->shape[1], SBN_MAP_COEF_DOUBLES * sizeof(double));
}

SBN_API sbn_status sbn_backward_elemt_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    return sbn__activation_workspace(x, bytes, backward_elemt_need);
}

/* The map's coefficients (sum_dy/N, mean, invstd^2*sum_dy_xmu/N, invstd*w) of channels
 * [begin, end). */
typedef struct backward_elemt_job {
    const sbn_tensor *mean, *invstd, *weight, *sum_dy, *sum_dy_xmu;
    double *coef;
    int64_t channels;
    double n;
} backward_elemt_job;

static void backward_elemt_coefs(void *ctx, int64_t begin, int64_t end)
{
    const backward_elemt_job *job = ctx;
    double *coef = job->coef, n = job->n;
    int64_t c, channels = job->channels;
    for (c = begin; c < end; c++) {
        double is = sbn__load1(job->invstd, c);
        coef[c] = sbn__load1(job->sum_dy, c) / n;
        coef[1 * channels + c] = sbn__load1(job->mean, c);
        coef[2 * channels + c] = is * is * sbn__load1(job->sum_dy_xmu, c) / n;
        coef[3 * channels + c] = is * (job->weight ? sbn__load1(job->weight, c) : 1.0);
    }
}

SBN_API sbn_status sbn_backward_elemt(const sbn_tensor *dy, const sbn_tensor *x,
                                      const sbn_tensor *mean, const sbn_tensor *invstd,
                                      const sbn_tensor *weight, const sbn_tensor *sum_dy,
                                      const sbn_tensor *sum_dy_xmu, int64_t count,
                                      sbn_tensor *grad_input, void *workspace,
                                      size_t workspace_bytes, sbn_pool_t *pool)
{
    const sbn__arg outputs[] = {{grad_input, "grad_input"}};
    const sbn__arg inputs[] = {{dy, "dy"}, {x, "x"}, {mean, "mean"}, {invstd, "invstd"},
                               {weight, "weight"}, {sum_dy, "sum_dy"}, {sum_dy_xmu, "sum_dy_xmu"}};
    sbn_status s;
    int64_t channels, r;

    sbn__clear_error();
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_like(dy, "dy", x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(mean, "mean", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(invstd, "invstd", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(sum_dy, "sum_dy", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_vector(sum_dy_xmu, "sum_dy_xmu", channels, 1)) != SBN_OK) return s;
    if ((s = sbn__check_like(grad_input, "grad_input", x, "x")) != SBN_OK) return s;
    r = sbn_tensor_numel(x) / channels;
    if (r > 0 && count < r)
        return sbn__error(SBN_ERR_BAD_VALUE,
                          "count is %lld but x holds %lld samples per channel; count is the "
                          "global number of samples and cannot be smaller",
                          (long long)count, (long long)r);
    if ((s = sbn__check_aliases(outputs, 1, inputs, 7, grad_input, dy)) != SBN_OK) return s;
    s = sbn__check_workspace(workspace, workspace_bytes, backward_elemt_need(x),
                             outputs, 1, inputs, 7);
    if (s != SBN_OK) return s;
    if (r == 0) return SBN_OK;

    {
        backward_elemt_job job = {mean, invstd, weight, sum_dy, sum_dy_xmu,
                                  sbn__ws_align(workspace), channels, (double)count};
        sbn__channel_map_with(SBN_MAP_BACKWARD, dy, x, job.coef, backward_elemt_coefs, &job,
                              sbn__plan_channels_ns(channels, 0), grad_input, pool);
    }
    return SBN_OK;
}
