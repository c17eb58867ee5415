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
 * Reproducible mode (config->reproducible): every sample is its own unit (its
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
 * The layer's options. The struct is sized so that it can grow: `size` is
 * sizeof(sbn_syncbn_config) as the caller compiled it, set by SBN_SYNCBN_CONFIG_INIT
 * or sbn_syncbn_config_default(). New fields are only ever appended, each with a
 * default, so the library reads the fields that lie wholly inside `size` and gives
 * every field past it its default (a caller built against an older, smaller header
 * keeps working). A size smaller than the `size` field itself (0: a config never
 * initialised) or larger than this library's struct (a caller built against a newer
 * header) is SBN_ERR_BAD_VALUE naming both sizes.
 *
 * Every rank of a training call must pass the same eps, momentum (unused, so free,
 * when cumulative), cumulative, nan_guard, sync_grad_params and reproducible: C, the
 * dtype and a digest of these travel in the tag of every collective of the layer,
 * and a rank that differs gets SBN_ERR_COMM_MISMATCH on every rank (each sentence
 * naming that rank's own values) instead of results that silently diverge.
 */
typedef struct sbn_syncbn_config {
    size_t size;              /* sizeof(sbn_syncbn_config) of the caller's header */
    double eps;               /* default 1e-5; finite, >= 0 */
    double momentum;          /* default 0.1, in [0, 1]; unused when cumulative */
    int cumulative;           /* momentum = None: factor 1/num_batches_tracked (default 0) */
    int training;             /* default 1 */
    int sync_grad_params;     /* all-reduce grad_weight/grad_bias too (default 0: local, as PyTorch) */
    int nan_guard;            /* do not let non-finite batch stats into the running stats (0) */
    int reproducible;         /* same bits for any world size and split (see above); default 0 */
    sbn_syncbn_timing *timing; /* optional, accumulated into (default NULL) */
} sbn_syncbn_config;

/* The defaults as an initializer: sbn_syncbn_config c = SBN_SYNCBN_CONFIG_INIT; */
#define SBN_SYNCBN_CONFIG_INIT {sizeof(sbn_syncbn_config), 1e-5, 0.1, 0, 1, 0, 0, 0, NULL}

/*
 * Fills the first `size` bytes of *config with the defaults (eps 1e-5, momentum 0.1,
 * training, everything else off) and sets config->size = size. For bindings that
 * know their struct's size (ctypes.sizeof); C callers use sbn_syncbn_config_default.
 * Errors: SBN_ERR_NULL_ARGUMENT (config), SBN_ERR_BAD_VALUE (size outside
 * [sizeof(size_t), sizeof(sbn_syncbn_config)]).
 */
sbn_status sbn_syncbn_config_init(sbn_syncbn_config *config, size_t size);

/* The defaults, sized by the caller's own header. */
static inline sbn_status sbn_syncbn_config_default(sbn_syncbn_config *config)
{
    return sbn_syncbn_config_init(config, sizeof *config);
}

/*
 * The bytes of workspace both calls need on this rank's x (N_r, C, ...): the same for
 * every world size, as nothing in the layer grows with the number of ranks. Errors:
 * SBN_ERR_NULL_ARGUMENT (x, bytes), SBN_ERR_BAD_RANK / SBN_ERR_BAD_SHAPE (x),
 * SBN_ERR_TOO_LARGE when the size does not fit in size_t.
 */
sbn_status sbn_syncbn_workspace_size(const sbn_tensor *x, size_t *bytes);

/*
 * The tensors of a forward call, by role. Designated initializers name them at the
 * call site; a member left out is NULL (absent). Members and shapes:
 *   x: this rank's (N_r, C, ...) batch, any N_r >= 0; any float dtype and strides.
 *   weight, bias: optional [C].
 *   running_mean, running_var: optional [C] (both NULL = track_running_stats off);
 *     written in training, read in eval (eval needs both or neither).
 *   num_batches_tracked: optional, incremented in training when running stats are
 *     tracked (required when config->cumulative).
 *   y: x's shape (may be exactly the x view, in place).
 *   save_mean, save_invstd: [C], required in training (f64 keeps every digit for
 *     backward); in eval without running stats they receive the batch statistics.
 *   global_count: required in training: the total samples per channel over all ranks
 *     (for backward).
 * Unlike the config, this struct is fixed: the tensors of batch norm are those of
 * PyTorch's, and a new one would be a new call.
 */
typedef struct sbn_syncbn_forward_io {
    const sbn_tensor *x;
    const sbn_tensor *weight;
    const sbn_tensor *bias;
    sbn_tensor *running_mean;
    sbn_tensor *running_var;
    int64_t *num_batches_tracked;
    sbn_tensor *y;
    sbn_tensor *save_mean;
    sbn_tensor *save_invstd;
    int64_t *global_count;
} sbn_syncbn_forward_io;

/*
 * The forward pass (see the top of this file) of this rank's io->x, a collective in
 * training: every rank must call it.
 * Statuses: SBN_NO_SAMPLES when every rank is empty (running stats untouched),
 * SBN_SINGLE_SAMPLE when the world holds one sample per channel, SBN_NON_FINITE_STATS
 * when nan_guard refused an update. Failures: SBN_ERR_NULL_ARGUMENT (comm, config,
 * io or a required member), SBN_ERR_BAD_VALUE (config->size, eps, momentum), the
 * ops' dtype/rank/shape/alias/alignment errors, each naming the member as the
 * sentence's subject, SBN_ERR_WORKSPACE_TOO_SMALL, the comm statuses,
 * and SBN_ERR_TOO_LARGE past SBN_SYNCBN_MAX_UNITS units. A rank whose arguments are
 * invalid announces its failure to its peers (SBN_ERR_PEER_FAILED there) instead of
 * leaving them waiting. sbn_last_error() has the sentence.
 */
sbn_status sbn_syncbn_forward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                              const sbn_syncbn_forward_io *io, void *workspace,
                              size_t workspace_bytes, sbn_pool_t *pool);

/*
 * The tensors of a backward call, by role (a member left out is NULL):
 *   dy: x's shape. x: the forward's input.
 *   weight: optional [C].
 *   running_mean, running_var: optional [C]; in eval, when both are given, they are
 *     the statistics (save_* are then not read).
 *   save_mean, save_invstd, global_count: from the forward call.
 *   grad_input: optional, x's shape (may be exactly the dy view); every rank must
 *     agree on whether it is wanted (it decides the collective).
 *   grad_weight, grad_bias: optional [C]; this rank's share unless
 *     config->sync_grad_params.
 */
typedef struct sbn_syncbn_backward_io {
    const sbn_tensor *dy;
    const sbn_tensor *x;
    const sbn_tensor *weight;
    const sbn_tensor *running_mean;
    const sbn_tensor *running_var;
    const sbn_tensor *save_mean;
    const sbn_tensor *save_invstd;
    int64_t global_count;
    sbn_tensor *grad_input;
    sbn_tensor *grad_weight;
    sbn_tensor *grad_bias;
} sbn_syncbn_backward_io;

/*
 * The backward pass, a collective in training when grad_input (or synced
 * grad_weight/grad_bias) is wanted. Failures as sbn_syncbn_forward, plus
 * SBN_ERR_BAD_VALUE when global_count is below this rank's samples per channel.
 */
sbn_status sbn_syncbn_backward(sbn_comm_t *comm, const sbn_syncbn_config *config,
                               const sbn_syncbn_backward_io *io, void *workspace,
                               size_t workspace_bytes, sbn_pool_t *pool);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_LAYER_H */
