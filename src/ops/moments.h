/*
 * moments.h - the per-channel rules every statistics op and the layer share
 * (moments.c): the one merge formula of the library, invstd, the finish of a
 * channel with its running-stat update and status, and the gathers' argument checks.
 */
#ifndef SBN_OPS_MOMENTS_H
#define SBN_OPS_MOMENTS_H

#include "core/check.h"
#include "kernels/kernels.h" /* sbn__invstd */
#include "syncbn/ops.h"

/* Chan's merge of (count_b, mean_b, m2_b) into (a): the single merge formula of the library. */
void sbn__moments_merge(sbn_moments *a, double count_b, double mean_b, double m2_b);
/* The status of several channels: SBN_NO_SAMPLES beats SBN_SINGLE_SAMPLE beats SBN_OK. */
sbn_status sbn__combine_status(sbn_status acc, sbn_status channel);
/*
 * Writes mean/invstd (either may be NULL) of the merged moments of channel c and
 * updates running stats; returns SBN_NO_SAMPLES/SBN_SINGLE_SAMPLE/SBN_OK for this channel.
 */
sbn_status sbn__finish_channel(const sbn_moments *total, int64_t c, double momentum, double eps,
                               sbn_tensor *running_mean, sbn_tensor *running_var,
                               sbn_tensor *mean, sbn_tensor *invstd);
/* The same with the channel's invstd given (sbn__invstd(M2/n, eps) when n > 0): a loop
 * over many channels computes their divisions and square roots first, in a loop short
 * enough for the core to overlap channels, where one long body per channel waits for
 * each channel's square root and division in turn. */
sbn_status sbn__finish_channel_inv(const sbn_moments *total, int64_t c, double momentum,
                                   double inv, sbn_tensor *running_mean, sbn_tensor *running_var,
                                   sbn_tensor *mean, sbn_tensor *invstd);

/*
 * The checks shared by the [W, C] gather ops: inputs[0] and inputs[1] are [W, C]
 * float matrices, inputs[2] the [W] counts; running stats optional, mean and
 * invstd required; momentum, eps; no output overlapping anything.
 */
sbn_status sbn__check_gather_args(const sbn__arg *inputs, double momentum, double eps,
                                  sbn_tensor *running_mean, sbn_tensor *running_var,
                                  sbn_tensor *mean, sbn_tensor *invstd);

#endif /* SBN_OPS_MOMENTS_H */
