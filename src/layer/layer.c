/*
 * layer.c - SyncBN forward and backward built from the native ops and the
 * communicator (layer.h has the contract). Every argument is checked before the
 * first collective; a rank whose arguments are wrong announces the failure with
 * sbn_comm_fail so that its peers return SBN_ERR_PEER_FAILED instead of waiting.
 * The public calls read the caller's sized config into the library's own
 * (layer_config.c) and hand the io struct's members to forward() and backward().
 *
 * The statistics travel as order-independent sums (layer_sums.h): the forward
 * pass deposits this rank's moments (default: one unit for the whole local batch;
 * reproducible: one unit per sample) and one allreduce merges the accumulators,
 * so every rank finishes the same bits whatever the reduction tree, and each rank
 * sends and receives O(C) bytes whatever the world size.
 *
 * A channel whose mean is far from 0 compared with its spread (|mean|/std past about
 * 1e8, or a constant channel) is not trusted to that exchange: every rank finds the same channels untrusted in the same merged
 * sums, and all of them exchange once more, depositing their units around the mean
 * found (layer_sums.h), so the sums hold only deviations.
 *
 * The accumulators take at most SBN_LAYER_MAX_UNITS units per channel over the world
 * (one deposit term each, 2^31 - 1 in all): each rank checks its own units before the
 * exchange (announcing a refusal), and every rank refuses a merged world past it with
 * the same SBN_ERR_TOO_LARGE, so no sum wraps silently.
 *
 * Workspace (64-byte aligned), C channels, whatever the world size:
 *   local moments [C]{count, mean, M2} | merged [C] | mean [C] | invstd [C] |
 *   sums [2C] (forward: the centres and the channels to centre) | accumulators
 *   [3C + 2] | the ops' own workspace (the largest of them and of the per-sample
 *   passes)
 */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "kernels/convert.h"
#include "layer/layer_config.h"
#include "layer/layer_sums.h"
#include "ops/moments.h"
#include "syncbn/layer.h"

/* Tags that the ranks must agree on: channels, dtype and which exchange it is (the
 * forward's second, centred exchange of ill-conditioned channels has its own). */
enum { PHASE_FORWARD = 1, PHASE_BACKWARD = 2, PHASE_CENTRED = 3 };

typedef struct layer_ws {
    sbn_moments *local, *merged;
    double *mean, *invstd, *sums;
    sbn__rsum *acc;
    void *ops;
    size_t ops_bytes;
} layer_ws;

/* SIZE_MAX when the count does not fit (refused as SBN_ERR_TOO_LARGE). */
static size_t arrays_bytes(int64_t channels)
{
    size_t moments = sbn__sat_mul((size_t)channels, 2 * sizeof(sbn_moments));
    size_t accs = sbn__sat_mul(sbn__sat_add(sbn__sat_mul((size_t)channels, 3), 2),
                               sizeof(sbn__rsum)); /* SBN_LAYER_FWD_ACCS, the larger block */
    return sbn__sat_add(sbn__sat_add(moments, sbn__sat_mul((size_t)channels, 4 * sizeof(double))),
                        accs);
}

/* The largest workspace any op of the layer needs for x; SIZE_MAX when one does not fit. */
static size_t ops_bytes(const sbn_tensor *x)
{
    sbn_status (*sizers[])(const sbn_tensor *, size_t *) = {
        sbn_stats_moments_workspace_size, sbn_elemt_workspace_size,
        sbn_backward_reduce_workspace_size, sbn_backward_elemt_workspace_size,
        sbn_batch_norm_workspace_size, sbn_batch_norm_backward_workspace_size};
    size_t most = 0, bytes;
    unsigned i;
    for (i = 0; i < sizeof sizers / sizeof sizers[0]; i++) {
        if (sizers[i](x, &bytes) != SBN_OK) return SIZE_MAX;
        if (bytes > most) most = bytes;
    }
    bytes = sbn__ws_bytes(sbn__layer_sample_bytes(x));
    return bytes > most ? bytes : most;
}

/* The whole layer workspace for x (any world size); SIZE_MAX when it does not fit. */
static size_t layer_bytes(const sbn_tensor *x)
{
    return sbn__sat_add(sbn__ws_bytes(arrays_bytes(x->shape[1])), ops_bytes(x));
}

static sbn_status too_large(const sbn_tensor *x)
{
    char shape[160];
    return sbn__error(SBN_ERR_TOO_LARGE,
                      "x has shape %s: the layer workspace does not fit in size_t",
                      sbn__shape_str(x, shape, sizeof shape));
}

SBN_API sbn_status sbn_syncbn_workspace_size(const sbn_tensor *x, size_t *bytes)
{
    size_t need;
    sbn_status s;
    sbn__clear_error();
    if ((s = sbn__check_present(bytes, "bytes")) != SBN_OK) return s;
    if ((s = sbn__check_activation_shape(x, "x")) != SBN_OK) return s;
    need = layer_bytes(x);
    if (need == SIZE_MAX) return too_large(x);
    *bytes = need;
    return SBN_OK;
}

static void carve(void *workspace, size_t workspace_bytes, int64_t channels, layer_ws *ws)
{
    char *base = (char *)sbn__ws_align(workspace);
    size_t used = sbn__ws_bytes(arrays_bytes(channels));
    ws->local = (sbn_moments *)base;
    ws->merged = ws->local + channels;
    ws->mean = (double *)(ws->merged + channels);
    ws->invstd = ws->mean + channels;
    ws->sums = ws->invstd + channels;
    ws->acc = (sbn__rsum *)(ws->sums + 2 * channels);
    ws->ops = (char *)workspace + used;
    ws->ops_bytes = workspace_bytes - used;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Adds the time since *mark to *bucket (when timing is on) and moves the mark. */
static void lap(const sbn_syncbn_config *config, double *bucket, double *mark)
{
    double t;
    if (config->timing == NULL) return;
    t = now_seconds();
    *bucket += t - *mark;
    *mark = t;
}

/* FNV-1a, 64 bits, over n bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

/*
 * A digest of what changes the results and must be the same on every rank: C and
 * the config's eps, momentum (0 when cumulative, where it is unused), cumulative,
 * nan_guard and sync_grad_params, each canonical (flags 0 or 1, +0 for -0).
 */
static uint64_t config_digest(const sbn_tensor *x, const sbn_syncbn_config *config)
{
    double eps = config->eps + 0.0, momentum = config->cumulative ? 0.0 : config->momentum + 0.0;
    int64_t words[4];
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    words[0] = x->shape[1];
    words[1] = config->cumulative != 0;
    words[2] = config->nan_guard != 0;
    words[3] = config->sync_grad_params != 0;
    h = fnv1a(h, words, sizeof words);
    h = fnv1a(h, &eps, sizeof eps);
    return fnv1a(h, &momentum, sizeof momentum);
}

/*
 * The tag the ranks must agree on, checked by the comm's header: bits 0-1 the
 * phase, bit 2 the reproducible mode, bits 3-6 the dtype, bits 7-62 the digest of C
 * and the config, so ranks that disagree on any of them get SBN_ERR_COMM_MISMATCH on
 * every rank instead of diverging (C also shows in the block's count).
 */
static int64_t make_tag(const sbn_tensor *x, const sbn_syncbn_config *config, int phase)
{
    uint64_t h = config_digest(x, config);
    h = (h ^ (h >> 56)) & ((UINT64_C(1) << 56) - 1);
    return (int64_t)(h << 7) | ((int64_t)x->dtype << 3) | ((config->reproducible != 0) << 2) |
           phase;
}

/* A mismatch of the layer's collective: its sentence goes on with what this rank's tag
 * holds, so that the logs of two ranks show which field differs. */
static sbn_status explain_mismatch(sbn_status s, const sbn_tensor *x,
                                   const sbn_syncbn_config *config)
{
    char prev[512];
    if (s != SBN_ERR_COMM_MISMATCH) return s;
    snprintf(prev, sizeof prev, "%s", sbn_last_error());
    return sbn__error(s, "%s; the SyncBN layer's tag holds the phase, the dtype and a digest of C "
                      "and the config, which every rank must share: this rank has C %lld, %s, "
                      "reproducible %d, eps %.17g, momentum %.17g, cumulative %d, nan_guard %d, "
                      "sync_grad_params %d", prev, (long long)x->shape[1],
                      sbn_dtype_name(x->dtype), config->reproducible != 0, config->eps,
                      config->momentum, config->cumulative != 0, config->nan_guard != 0,
                      config->sync_grad_params != 0);
}

static sbn_status check_config(const sbn_syncbn_config *config)
{
    sbn_status s;
    if ((s = sbn__check_eps(config->eps)) != SBN_OK) return s;
    if (!config->cumulative && config->training) return sbn__check_momentum(config->momentum);
    return SBN_OK;
}

/*
 * The layer's workspace: its arrays for this world plus the largest op workspace,
 * apart from every tensor of the call (outputs and inputs) and from the int64
 * counters num_batches_tracked and global_count (either may be NULL).
 */
static sbn_status check_layer_workspace(const sbn_tensor *x, const void *workspace,
                                        size_t workspace_bytes, const sbn__arg *outputs, int n_out,
                                        const sbn__arg *inputs, int n_in,
                                        int64_t *num_batches_tracked, int64_t *global_count)
{
    size_t need = layer_bytes(x);
    sbn_tensor counter_views[2];
    sbn__arg counters[2] = {{NULL, "num_batches_tracked"}, {NULL, "global_count"}};
    sbn_status s;
    if (need == SIZE_MAX) return too_large(x);
    if (workspace_bytes < need || workspace == NULL)
        return sbn__error(SBN_ERR_WORKSPACE_TOO_SMALL,
                          "workspace_bytes is %zu but the layer needs %zu bytes "
                          "(sbn_syncbn_workspace_size)", workspace == NULL ? 0 : workspace_bytes,
                          need);
    counter_views[0] = sbn_tensor_1d(num_batches_tracked, SBN_I64, 1);
    counter_views[1] = sbn_tensor_1d(global_count, SBN_I64, 1);
    if (num_batches_tracked) counters[0].t = &counter_views[0];
    if (global_count) counters[1].t = &counter_views[1];
    s = sbn__check_workspace_apart(workspace, need, outputs, n_out, inputs, n_in);
    if (s != SBN_OK) return s;
    return sbn__check_workspace_apart(workspace, need, counters, 2, NULL, 0);
}

/* Every check of the forward call that can be made before the collective. */
static sbn_status check_forward(const sbn_syncbn_config *config,
                                const sbn_tensor *x, const sbn_tensor *weight,
                                const sbn_tensor *bias, sbn_tensor *running_mean,
                                sbn_tensor *running_var, int64_t *num_batches_tracked,
                                sbn_tensor *y, sbn_tensor *save_mean, sbn_tensor *save_invstd,
                                int64_t *global_count, void *workspace, size_t workspace_bytes)
{
    /* running stats are written in training and only read in eval */
    const sbn__arg outputs[] = {{y, "y"}, {save_mean, "save_mean"}, {save_invstd, "save_invstd"},
                                {config->training ? running_mean : NULL, "running_mean"},
                                {config->training ? running_var : NULL, "running_var"}};
    const sbn__arg inputs[] = {{x, "x"}, {weight, "weight"}, {bias, "bias"},
                               {config->training ? NULL : running_mean, "running_mean"},
                               {config->training ? NULL : running_var, "running_var"}};
    int tracking = running_mean != NULL || running_var != NULL;
    int syncing = config->training;
    sbn_status s;
    int64_t channels;

    if ((s = check_config(config)) != SBN_OK) return s;
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(bias, "bias", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_like(y, "y", x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_mean, "save_mean", channels, syncing)) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_invstd, "save_invstd", channels, syncing)) != SBN_OK) return s;
    if (syncing && (s = sbn__check_present(global_count, "global_count")) != SBN_OK) return s;
    if (config->training && config->cumulative && tracking && num_batches_tracked == NULL)
        return sbn__error(SBN_ERR_NULL_ARGUMENT,
                          "num_batches_tracked is NULL but cumulative averaging needs it");
    if (!config->training && tracking && (running_mean == NULL || running_var == NULL))
        return sbn__error(SBN_ERR_NULL_ARGUMENT,
                          "eval mode needs both running_mean and running_var (or neither)");
    if ((s = sbn__check_aliases(outputs, 5, inputs, 5, y, x)) != SBN_OK) return s;
    return check_layer_workspace(x, workspace, workspace_bytes, outputs, 5, inputs, 5,
                                 num_batches_tracked, global_count);
}

/* Eval, or training without a world to sync with: plain batch norm, no collective. */
static sbn_status forward_local(const sbn_syncbn_config *config, const sbn_tensor *x,
                                const sbn_tensor *weight, const sbn_tensor *bias,
                                sbn_tensor *running_mean, sbn_tensor *running_var, sbn_tensor *y,
                                sbn_tensor *save_mean, sbn_tensor *save_invstd,
                                int64_t *global_count, layer_ws *ws, sbn_pool_t *pool)
{
    int use_running = running_mean != NULL && running_var != NULL;
    sbn_status s = sbn_batch_norm(x, weight, bias, !use_running, 0.0, config->eps,
                                  use_running ? running_mean : NULL,
                                  use_running ? running_var : NULL, y,
                                  use_running ? NULL : save_mean, use_running ? NULL : save_invstd,
                                  ws->ops, ws->ops_bytes, pool);
    if (global_count && !SBN_FAILED(s)) *global_count = sbn_tensor_numel(x) / x->shape[1];
    return s;
}

/* 1 when every merged channel has finite mean and M2. */
static int merged_finite(const sbn_moments *merged, int64_t channels)
{
    int64_t c;
    for (c = 0; c < channels; c++)
        if (!isfinite(merged[c].mean) || !isfinite(merged[c].m2)) return 0;
    return 1;
}

/* This rank's units: its samples (reproducible, when they hold elements), else 1
 * for a batch with elements. */
static int64_t local_units(const sbn_syncbn_config *config, const sbn_tensor *x)
{
    int64_t numel = sbn_tensor_numel(x);
    if (numel == 0) return 0;
    return config->reproducible ? x->shape[0] : 1;
}

static sbn_status too_many_units(const sbn_tensor *x, double units, const char *whose)
{
    char shape[160];
    return sbn__error(SBN_ERR_TOO_LARGE,
                      "x has shape %s and %s %.0f units per channel (samples in reproducible "
                      "mode, ranks with samples otherwise), but the layer's exact accumulators "
                      "take at most %lld: 3 x units + 20 deposits each, up to 2^31 - 1",
                      sbn__shape_str(x, shape, sizeof shape), whose, units,
                      (long long)SBN_LAYER_MAX_UNITS);
}

/* Before the exchange: this rank's own units. */
static sbn_status check_local_units(const sbn_syncbn_config *config, const sbn_tensor *x)
{
    int64_t units = local_units(config, x);
    if (units <= SBN_LAYER_MAX_UNITS) return SBN_OK;
    return too_many_units(x, (double)units, "this rank holds");
}

/* After it: the world's, the same merged value (so the same verdict) on every rank. */
static sbn_status check_world_units(const sbn_tensor *x, const sbn__rsum *units_acc)
{
    double units = sbn__rsum_value(units_acc);
    if (units <= (double)SBN_LAYER_MAX_UNITS) return SBN_OK;
    return too_many_units(x, units, "the world holds");
}

/*
 * This rank's part of the forward statistics, deposited into the cleared
 * accumulators: reproducible, one unit per sample; else one unit per channel for
 * the whole local batch (its moments from sbn_stats_moments, kept in ws->local for
 * the centred exchange). centre NULL: the first exchange; else each unit's mean is
 * deposited as mean - centre[c].
 */
static sbn_status deposit_forward(const sbn_syncbn_config *config, const sbn_tensor *x,
                                  const double *centre, layer_ws *ws, sbn_pool_t *pool)
{
    const int64_t channels = x->shape[1];
    int64_t c;
    sbn_status s;
    sbn__rsum_clear(ws->acc, SBN_LAYER_FWD_ACCS(channels));
    if (config->reproducible) {
        sbn__layer_sample_moments(x, centre, ws->acc, sbn__ws_align(ws->ops), pool);
        return SBN_OK;
    }
    if (centre == NULL) {
        s = sbn_stats_moments(x, ws->local, ws->ops, ws->ops_bytes, pool);
        if (s != SBN_OK) return s;
    }
    if (channels == 0 || !(ws->local[0].count > 0)) return SBN_OK;
    for (c = 0; c < channels; c++) {
        double m = ws->local[c].mean;
        if (centre != NULL && centre[c] != 0.0) m -= centre[c];
        sbn__layer_deposit_moments(ws->acc, channels, c, ws->local[c].count, m,
                                   ws->local[c].m2);
    }
    sbn__rsum_add(&ws->acc[3 * channels], ws->local[0].count);
    sbn__rsum_add(&ws->acc[SBN_LAYER_FWD_UNITS(channels)], 1.0);
    return SBN_OK;
}

/*
 * The merged forward statistics of every channel into ws->merged: from the first
 * exchange, then, when any channel is not trusted (layer_sums.h), from a second one
 * around the means found (ws->sums: centres [C], then 1 for the channels redone).
 * Returns a comm status or a failure of the units check.
 */
static sbn_status merge_forward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                                const sbn_tensor *x, layer_ws *ws, sbn_pool_t *pool,
                                double *mark)
{
    const int64_t channels = x->shape[1];
    double *centre = ws->sums, *redo = ws->sums + channels, count, units;
    sbn_syncbn_timing unused = {0, 0, 0};
    sbn_syncbn_timing *timing = config->timing ? config->timing : &unused;
    int64_t c;
    int again = 0, trusted;
    sbn_status s = sbn_comm_allreduce_merge(comm, ws->acc, SBN_LAYER_FWD_ACCS(channels),
                                            sizeof(sbn__rsum), sbn__rsum_merge_bytes,
                                            make_tag(x, config, PHASE_FORWARD));
    lap(config, &timing->comm_seconds, mark);
    if (s != SBN_OK) return explain_mismatch(s, x, config);
    if ((s = check_world_units(x, &ws->acc[SBN_LAYER_FWD_UNITS(channels)])) != SBN_OK) return s;
    count = sbn__layer_count(ws->acc, channels);
    units = sbn__rsum_value(&ws->acc[SBN_LAYER_FWD_UNITS(channels)]);
    for (c = 0; c < channels; c++) {
        ws->merged[c] = sbn__layer_finish_moments(ws->acc, channels, c, count, 0.0, units,
                                                  &trusted);
        centre[c] = trusted ? 0.0 : ws->merged[c].mean;
        redo[c] = !trusted;
        again |= !trusted;
    }
    if (!again) return SBN_OK;
    s = deposit_forward(config, x, centre, ws, pool);
    if (s != SBN_OK) return sbn_comm_fail(comm, s);
    lap(config, &timing->stats_seconds, mark);
    s = sbn_comm_allreduce_merge(comm, ws->acc, SBN_LAYER_FWD_ACCS(channels), sizeof(sbn__rsum),
                                 sbn__rsum_merge_bytes, make_tag(x, config, PHASE_CENTRED));
    lap(config, &timing->comm_seconds, mark);
    if (s != SBN_OK) return explain_mismatch(s, x, config);
    for (c = 0; c < channels; c++)
        if (redo[c] != 0.0)
            ws->merged[c] = sbn__layer_finish_moments(ws->acc, channels, c, count, centre[c],
                                                      units, &trusted);
    return SBN_OK;
}

/* The forward pass with the config read (layer.h has the contract). */
static sbn_status forward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                          const sbn_tensor *x, const sbn_tensor *weight, const sbn_tensor *bias,
                          sbn_tensor *running_mean, sbn_tensor *running_var,
                          int64_t *num_batches_tracked, sbn_tensor *y, sbn_tensor *save_mean,
                          sbn_tensor *save_invstd, int64_t *global_count, void *workspace,
                          size_t workspace_bytes, sbn_pool_t *pool)
{
    sbn_syncbn_timing unused = {0, 0, 0};
    sbn_syncbn_timing *timing = config->timing ? config->timing : &unused;
    sbn_status s, result = SBN_OK;
    sbn_tensor mean_view, invstd_view;
    double mark = now_seconds(), factor;
    int64_t channels, c, batches;
    int tracking = running_mean != NULL || running_var != NULL, update = 1;
    layer_ws ws;

    s = check_forward(config, x, weight, bias, running_mean, running_var,
                      num_batches_tracked, y, save_mean, save_invstd, global_count, workspace,
                      workspace_bytes);
    if (s != SBN_OK) return config->training ? sbn_comm_fail(comm, s) : s;
    channels = x->shape[1];
    carve(workspace, workspace_bytes, channels, &ws);
    if (!config->training)
        return forward_local(config, x, weight, bias, running_mean, running_var, y, save_mean,
                             save_invstd, global_count, &ws, pool);

    /* 1. this rank's units into the accumulators, 2. one allreduce of 3C + 2 of them
     * (two for ill-conditioned channels), merged into the global moments */
    s = check_local_units(config, x);
    if (s == SBN_OK) s = deposit_forward(config, x, NULL, &ws, pool);
    if (s != SBN_OK) return sbn_comm_fail(comm, s);
    lap(config, &timing->stats_seconds, &mark);
    s = merge_forward(comm, config, x, &ws, pool, &mark);
    if (s != SBN_OK) return s;

    /* 3. the global statistics, the same bits on every rank (PyTorch counts every
     * training call in num_batches_tracked) */
    batches = tracking && num_batches_tracked ? *num_batches_tracked + 1 : 0;
    factor = config->cumulative ? (batches > 0 ? 1.0 / (double)batches : 0.0) : config->momentum;
    mean_view = sbn_tensor_1d(ws.mean, SBN_F64, channels);
    invstd_view = sbn_tensor_1d(ws.invstd, SBN_F64, channels);
    for (c = 0; c < channels; c++) {
        result = sbn__combine_status(result, sbn__finish_channel(&ws.merged[c], c, factor,
                                                                 config->eps, NULL, NULL,
                                                                 &mean_view, &invstd_view));
    }
    if (result != SBN_NO_SAMPLES && !merged_finite(ws.merged, channels)) {
        if (config->nan_guard) {
            update = 0;
            result = SBN_NON_FINITE_STATS;
        }
    }

    /* 4. y = (x - mean) * invstd * w + b with the global statistics */
    s = sbn_elemt(x, &mean_view, &invstd_view, weight, bias, y, ws.ops, ws.ops_bytes, pool);
    lap(config, &timing->elemt_seconds, &mark);
    if (SBN_FAILED(s)) return sbn_comm_fail(comm, s); /* the peers' next collective fails */

    /* 5. the layer's state, only once nothing can fail any more */
    if (tracking && num_batches_tracked) *num_batches_tracked = batches;
    for (c = 0; c < channels; c++) {
        if (update && tracking)
            sbn__finish_channel(&ws.merged[c], c, factor, config->eps, running_mean, running_var,
                                NULL, NULL);
        sbn__store1(save_mean, c, ws.mean[c]);
        sbn__store1(save_invstd, c, ws.invstd[c]);
    }
    *global_count = channels > 0 ? (int64_t)ws.merged[0].count : 0;
    return result;
}

static sbn_status check_backward(const sbn_syncbn_config *config,
                                 const sbn_tensor *dy, const sbn_tensor *x,
                                 const sbn_tensor *weight, const sbn_tensor *running_mean,
                                 const sbn_tensor *running_var, const sbn_tensor *save_mean,
                                 const sbn_tensor *save_invstd, int64_t global_count,
                                 sbn_tensor *grad_input, sbn_tensor *grad_weight,
                                 sbn_tensor *grad_bias, void *workspace, size_t workspace_bytes)
{
    const sbn__arg outputs[] = {{grad_input, "grad_input"}, {grad_weight, "grad_weight"},
                                {grad_bias, "grad_bias"}};
    const sbn__arg inputs[] = {{dy, "dy"}, {x, "x"}, {weight, "weight"},
                               {running_mean, "running_mean"}, {running_var, "running_var"},
                               {save_mean, "save_mean"}, {save_invstd, "save_invstd"}};
    int use_running = !config->training && running_mean != NULL && running_var != NULL;
    sbn_status s;
    int64_t channels, r;

    if ((s = check_config(config)) != SBN_OK) return s;
    if ((s = sbn__check_activation(x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_like(dy, "dy", x, "x")) != SBN_OK) return s;
    channels = x->shape[1];
    if ((s = sbn__check_vector(weight, "weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_mean, "running_mean", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(running_var, "running_var", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(save_mean, "save_mean", channels, !use_running)) != SBN_OK)
        return s;
    if ((s = sbn__check_vector(save_invstd, "save_invstd", channels, !use_running)) != SBN_OK)
        return s;
    if (grad_input && (s = sbn__check_like(grad_input, "grad_input", x, "x")) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_weight, "grad_weight", channels, 0)) != SBN_OK) return s;
    if ((s = sbn__check_vector(grad_bias, "grad_bias", channels, 0)) != SBN_OK) return s;
    r = sbn_tensor_numel(x) / channels;
    if (config->training && global_count < r)
        return sbn__error(SBN_ERR_BAD_VALUE,
                          "global_count is %lld but x holds %lld samples per channel",
                          (long long)global_count, (long long)r);
    if ((s = sbn__check_aliases(outputs, 3, inputs, 7, grad_input, dy)) != SBN_OK) return s;
    return check_layer_workspace(x, workspace, workspace_bytes, outputs, 3, inputs, 7, NULL,
                                 NULL);
}

/*
 * This rank's backward sums: its own share (sum_dy, sum_dy_xmu) in ws->mean[0, 2C)
 * and the same deposited into the cleared accumulators: reproducible, per sample
 * (the share is then the rounded sum of its samples); else the whole local batch.
 */
static sbn_status deposit_backward(const sbn_syncbn_config *config, const sbn_tensor *dy,
                                   const sbn_tensor *x, const sbn_tensor *save_mean,
                                   const sbn_tensor *save_invstd, layer_ws *ws, sbn_pool_t *pool)
{
    const int64_t channels = x->shape[1];
    sbn_tensor sum_dy = sbn_tensor_1d(ws->mean, SBN_F64, channels);
    sbn_tensor sum_dy_xmu = sbn_tensor_1d(ws->mean + channels, SBN_F64, channels);
    int64_t c;
    sbn_status s;
    sbn__rsum_clear(ws->acc, SBN_LAYER_BWD_ACCS(channels));
    if ((s = check_local_units(config, x)) != SBN_OK) return s;
    if (config->reproducible) {
        sbn__layer_sample_sums(dy, x, save_mean, ws->acc, sbn__ws_align(ws->ops), pool);
        for (c = 0; c < 2 * channels; c++) ws->mean[c] = sbn__rsum_value(&ws->acc[c]);
        return SBN_OK;
    }
    s = sbn_backward_reduce(dy, x, save_mean, save_invstd, &sum_dy, &sum_dy_xmu, NULL, NULL,
                            ws->ops, ws->ops_bytes, pool);
    if (s != SBN_OK) return s;
    for (c = 0; c < 2 * channels; c++) sbn__rsum_add(&ws->acc[c], ws->mean[c]);
    sbn__rsum_add(&ws->acc[SBN_LAYER_BWD_UNITS(channels)], (double)local_units(config, x));
    return SBN_OK;
}

/* The backward pass with the config read. */
static sbn_status backward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                           const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *weight,
                           const sbn_tensor *running_mean, const sbn_tensor *running_var,
                           const sbn_tensor *save_mean, const sbn_tensor *save_invstd,
                           int64_t global_count, sbn_tensor *grad_input, sbn_tensor *grad_weight,
                           sbn_tensor *grad_bias, void *workspace, size_t workspace_bytes,
                           sbn_pool_t *pool)
{
    sbn_syncbn_timing unused = {0, 0, 0};
    sbn_syncbn_timing *timing = config->timing ? config->timing : &unused;
    sbn_tensor sum_dy, sum_dy_xmu;
    double mark = now_seconds(), *param_sums;
    int64_t channels, c;
    layer_ws ws;
    sbn_status s;
    int sync_params;

    s = check_backward(config, dy, x, weight, running_mean, running_var, save_mean,
                       save_invstd, global_count, grad_input, grad_weight, grad_bias, workspace,
                       workspace_bytes);
    if (s != SBN_OK) return config->training ? sbn_comm_fail(comm, s) : s;
    channels = x->shape[1];
    carve(workspace, workspace_bytes, channels, &ws);
    if (!config->training) {
        int use_running = running_mean != NULL && running_var != NULL;
        return sbn_batch_norm_backward(dy, x, weight, running_mean, running_var,
                                       use_running ? NULL : save_mean,
                                       use_running ? NULL : save_invstd, !use_running,
                                       config->eps, grad_input, grad_weight, grad_bias, ws.ops,
                                       ws.ops_bytes, pool);
    }

    /* 1. this rank's sums into the accumulators (its own share kept in mean/invstd);
     * 2. one allreduce of 2C + 1 accumulators when grad_input or synced params need them */
    sum_dy = sbn_tensor_1d(ws.sums, SBN_F64, channels);
    sum_dy_xmu = sbn_tensor_1d(ws.sums + channels, SBN_F64, channels);
    s = deposit_backward(config, dy, x, save_mean, save_invstd, &ws, pool);
    if (s != SBN_OK) return sbn_comm_fail(comm, s);
    lap(config, &timing->stats_seconds, &mark);
    sync_params = config->sync_grad_params && (grad_weight || grad_bias);
    if (grad_input != NULL || sync_params) {
        s = sbn_comm_allreduce_merge(comm, ws.acc, SBN_LAYER_BWD_ACCS(channels),
                                     sizeof(sbn__rsum), sbn__rsum_merge_bytes,
                                     make_tag(x, config, PHASE_BACKWARD));
        lap(config, &timing->comm_seconds, &mark);
        if (s != SBN_OK) return explain_mismatch(s, x, config);
        s = check_world_units(x, &ws.acc[SBN_LAYER_BWD_UNITS(channels)]);
        if (s != SBN_OK) return s;
        for (c = 0; c < 2 * channels; c++) ws.sums[c] = sbn__rsum_value(&ws.acc[c]);
    }
    /* 3. grad_input with the global sums and count */
    if (grad_input) {
        s = sbn_backward_elemt(dy, x, save_mean, save_invstd, weight, &sum_dy, &sum_dy_xmu,
                               global_count, grad_input, ws.ops, ws.ops_bytes, pool);
        if (SBN_FAILED(s)) return sbn_comm_fail(comm, s); /* the peers' next collective fails */
    }
    /* 4. grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy: this rank's share or the
     * world's; an all-empty world has invstd NaN and gradients 0 */
    param_sums = sync_params ? ws.sums : ws.mean;
    for (c = 0; c < channels; c++) {
        if (grad_weight)
            sbn__store1(grad_weight, c,
                        global_count > 0 ? param_sums[channels + c] * sbn__load1(save_invstd, c)
                                         : 0.0);
        if (grad_bias) sbn__store1(grad_bias, c, param_sums[c]);
    }
    lap(config, &timing->elemt_seconds, &mark);
    return SBN_OK;
}

/* comm, config and io present and the config readable: else the failure, announced to
 * the peers (a rank cannot tell here whether the call would have been a collective). */
static sbn_status check_call(sbn_comm_t *comm, const sbn_syncbn_config *config, const void *io,
                             sbn_syncbn_config *read)
{
    sbn_status s;
    sbn__clear_error();
    if ((s = sbn__check_present(comm, "comm")) != SBN_OK) return s;
    if ((s = sbn__check_present(config, "config")) != SBN_OK) return sbn_comm_fail(comm, s);
    if ((s = sbn__check_present(io, "io")) != SBN_OK) return sbn_comm_fail(comm, s);
    if ((s = sbn__layer_read_config(config, read)) != SBN_OK) return sbn_comm_fail(comm, s);
    return SBN_OK;
}

SBN_API sbn_status sbn_syncbn_forward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                                      const sbn_syncbn_forward_io *io, void *workspace,
                                      size_t workspace_bytes, sbn_pool_t *pool)
{
    sbn_syncbn_config read;
    sbn_status s = check_call(comm, config, io, &read);
    if (s != SBN_OK) return s;
    return forward(comm, &read, io->x, io->weight, io->bias, io->running_mean, io->running_var,
                   io->num_batches_tracked, io->y, io->save_mean, io->save_invstd,
                   io->global_count, workspace, workspace_bytes, pool);
}

SBN_API sbn_status sbn_syncbn_backward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                                       const sbn_syncbn_backward_io *io, void *workspace,
                                       size_t workspace_bytes, sbn_pool_t *pool)
{
    sbn_syncbn_config read;
    sbn_status s = check_call(comm, config, io, &read);
    if (s != SBN_OK) return s;
    return backward(comm, &read, io->dy, io->x, io->weight, io->running_mean, io->running_var,
                    io->save_mean, io->save_invstd, io->global_count, io->grad_input,
                    io->grad_weight, io->grad_bias, workspace, workspace_bytes, pool);
}
