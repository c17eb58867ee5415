/*
 * layer.h - SyncBN forward and backward as one call each, with PyTorch's
 * semantics (torch.nn.SyncBatchNorm and its autograd function), over a
 * communicator from comm.h.
 *
 * Forward (training): local moments (count, mean, M2) of x, deposited as
 * order-independent sums (count*mean, count*mean^2, M2: exact products, scaled
 * past DBL_MAX), one allreduce of 3C + 2 accumulators merged exactly, the global
 * mean and M2 finished from them on every rank (a second allreduce around the mean
 * found for channels whose |mean| is too large for their spread, about 1e8 std
 * and beyond, or constant: then the sums hold only deviations), the running-stat
 * update (unbiased variance; momentum, or the cumulative average
 * 1/num_batches_tracked), then y = (x - mean) * invstd * w + b. Finite f64 data
 * whose variance passes DBL_MAX gives M2 = +Inf, invstd 0 and y = b, as
 * sbn_batch_norm. Backward (training): local sum_dy and sum_dy_xmu, one allreduce
 * of 2C + 1 accumulators, then grad_input with the global count; grad_weight and
 * grad_bias are this rank's share unless sync_grad_params.
 *
 * Limit: the exact accumulators take at most 2^31 - 1 deposits each, so a world may
 * hold at most SBN_SYNCBN_MAX_UNITS = 715827875 units per channel (samples in
 * reproducible mode; ranks with samples in the default mode); past it forward and
 * backward return SBN_ERR_TOO_LARGE (a rank's own batch before the exchange, the
 * merged world after it, on every rank), never a wrapped sum.
 * The accumulators are 56 bytes each and their merge is exactly associative, so
 * the result does not depend on the reduction tree of the backend (MPI's own
 * algorithms, a tree of threads) and each rank sends and receives O(C) bytes
 * whatever the world size.
 *
 * Reproducible mode (config.reproducible): every sample is its own unit (its
 * per-channel mean and M2, or its backward sums, computed in the kernels' fixed
 * order), so y, save_mean/save_invstd, running stats, grad_input and the synced
 * grad_weight/grad_bias are bitwise the same for every world size W >= 1, every
 * split of the global batch over the ranks (any N_r >= 0, samples in any order),
 * every thread count and every ISA, and equal to W = 1 (docs/numerics.md states
 * the accuracy). The default mode's bits depend on the split (each rank's batch is
 * one unit), never on the tree.
 * Eval with running stats: plain batch norm, no collective. Eval without running
 * stats (track_running_stats off): batch norm with this rank's batch statistics,
 * no collective (as PyTorch). Ranks with an empty batch (N = 0) take part in every
 * collective and get empty outputs; every rank must make the same calls.
 */
#ifndef SYNCBN_LAYER_H
#define SYNCBN_LAYER_H

#include "comm.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most units per channel a world may hold: (2^31 - 1 - 20) / 3 (see above). */
#define SBN_SYNCBN_MAX_UNITS 715827875

/* Seconds spent in each part of the calls that were given this struct (accumulated). */
typedef struct sbn_syncbn_timing {
    double stats_seconds;  /* local reductions (stats, backward_reduce) */
    double comm_seconds;   /* collectives, including waiting for slower ranks */
    double elemt_seconds;  /* merge and elementwise passes */
} sbn_syncbn_timing;

/*
 * Every rank of a training call must pass the same eps, momentum (unused, so free,
 * when cumulative), cumulative, nan_guard, sync_grad_params and reproducible: C, the
 * dtype and a digest of these travel in the tag of every collective of the layer,
 * and a rank that differs gets SBN_ERR_COMM_MISMATCH on every rank (each sentence
 * naming that rank's own values) instead of results that silently diverge.
 */
typedef struct sbn_syncbn_config {
    double eps;               /* default 1e-5 */
    double momentum;          /* default 0.1; unused when cumulative */
    int cumulative;           /* momentum = None: factor 1/num_batches_tracked */
    int training;             /* default 1 */
    int sync_grad_params;     /* all-reduce grad_weight/grad_bias too (default 0: local, as PyTorch) */
    int nan_guard;            /* do not let non-finite batch stats into the running stats */
    sbn_syncbn_timing *timing; /* optional */
    int reproducible;         /* same bits for any world size and split (see above); default 0 */
} sbn_syncbn_config;

/* eps 1e-5, momentum 0.1, training, everything else off. */
void sbn_syncbn_config_default(sbn_syncbn_config *config);

/* Workspace for both calls on this rank's x in a world of `world` ranks (the same for
 * every world size: nothing in the layer grows with W). */
sbn_status sbn_syncbn_workspace_size(const sbn_tensor *x, int world, size_t *bytes);

/*
 * x: this rank's (N_r, C, ...) batch, any N_r >= 0. weight, bias: optional [C].
 * running_mean, running_var: optional [C] (NULL = track_running_stats off);
 * num_batches_tracked: optional, incremented in training when running stats are
 * tracked (required when cumulative). y: x's shape. save_mean, save_invstd: [C]
 * (f64 keeps every digit for backward). global_count: the total samples per
 * channel over all ranks (for backward).
 * Statuses: SBN_NO_SAMPLES when every rank is empty (running stats untouched),
 * SBN_SINGLE_SAMPLE when the world holds one sample per channel, SBN_NON_FINITE_STATS
 * when nan_guard refused an update; failures as the ops plus the comm statuses, and
 * SBN_ERR_TOO_LARGE past SBN_SYNCBN_MAX_UNITS units.
 * A rank whose arguments are invalid announces its failure to its peers
 * (SBN_ERR_PEER_FAILED there) instead of leaving them waiting.
 */
sbn_status sbn_syncbn_forward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                              const sbn_tensor *x, const sbn_tensor *weight,
                              const sbn_tensor *bias, sbn_tensor *running_mean,
                              sbn_tensor *running_var, int64_t *num_batches_tracked,
                              sbn_tensor *y, sbn_tensor *save_mean, sbn_tensor *save_invstd,
                              int64_t *global_count, void *workspace, size_t workspace_bytes,
                              sbn_pool_t *pool);

/*
 * dy: x's shape. save_mean, save_invstd, global_count: from the forward call.
 * Eval with running stats: running_mean/running_var give the statistics instead.
 * grad_input, grad_weight, grad_bias: each optional; every rank must agree on
 * whether grad_input is wanted (it decides the collective).
 */
sbn_status sbn_syncbn_backward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                               const sbn_tensor *dy, const sbn_tensor *x,
                               const sbn_tensor *weight, const sbn_tensor *running_mean,
                               const sbn_tensor *running_var, const sbn_tensor *save_mean,
                               const sbn_tensor *save_invstd, int64_t global_count,
                               sbn_tensor *grad_input, sbn_tensor *grad_weight,
                               sbn_tensor *grad_bias, void *workspace, size_t workspace_bytes,
                               sbn_pool_t *pool);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_LAYER_H */
