/*
 * layer_sums.h - the SyncBN layer's statistics as sums that do not depend on the
 * order in which they are added: the units a rank contributes (its whole batch,
 * or each sample in reproducible mode) are deposited into order-independent
 * accumulators (core/rsum.h), one allreduce merges them (any tree, same bits),
 * and every rank finishes the same global statistics from the merged sums.
 *
 * Forward, per channel c, a unit u with count S_u, mean m_u and M2_u deposits,
 * around a centre K_c (0 in the first exchange),
 *   P += S_u * (m_u - K),  Q += S_u * (m_u - K)^2,  M += M2_u
 * (S*m split exactly with fma into 2 deposits; S*m^2 as a double-double, within
 * 2^-104, 2 deposits; so 5 deposits per unit and channel; factors past 2^448 are
 * scaled by whole bins and their products deposited at that offset, so squares
 * past DBL_MAX are summed too), the count N += S_u once per unit row and the
 * number of units U += 1 per unit. After the merge, with g = P / N:
 *   M2 = M + Q - 2 g P + N g^2 = sum_u M2_u + sum_u S_u (m_u - K - g)^2  (>= 0)
 * evaluated in the accumulators (P's exact parts times g, g^2 times N, each
 * product split exactly), rounded once, and mean = K + g. The sum is exact but for
 * the accumulators' truncation and the rounding of g, both below about 2^-95 of the
 * largest term: when that bound is not below 2^-45 of the M2 found (|mean|/std past
 * about 1e8, or a constant channel), the channel is not
 * `trusted` and the layer exchanges once more around K = the mean found, which
 * leaves only the deviations in the sums. Backward deposits the unit's sum_dy and
 * sum_dy_xmu, and U. Layout of the forward block: [P: C][Q: C][M: C][N: 1][U: 1]
 * accumulators; backward: [sum_dy: C][sum_dy_xmu: C][U: 1].
 *
 * Every accumulator takes at most SBN_RSUM_MAX_TERMS deposits; the finish's takes
 * the most, 3U + 20, so the layer refuses a world of more than SBN_LAYER_MAX_UNITS
 * units per channel (reproducible mode: samples; default mode: non-empty ranks).
 */
#ifndef SBN_LAYER_SUMS_H
#define SBN_LAYER_SUMS_H

#include "core/rsum.h"
#include "syncbn/layer.h"
#include "syncbn/ops.h"

_Static_assert(SBN_SYNCBN_MAX_UNITS == (SBN_RSUM_MAX_TERMS - 20) / 3,
               "layer.h states the layer's unit limit");

/* Accumulators of the forward block for C channels and of the backward block. */
#define SBN_LAYER_FWD_ACCS(C) (3 * (size_t)(C) + 2)
#define SBN_LAYER_BWD_ACCS(C) (2 * (size_t)(C) + 1)
/* The units accumulator of each block. */
#define SBN_LAYER_FWD_UNITS(C) (3 * (C) + 1)
#define SBN_LAYER_BWD_UNITS(C) (2 * (C))
/* The most units a world may hold per channel: (SBN_RSUM_MAX_TERMS - 20) / 3, which
 * layer.h states as SBN_SYNCBN_MAX_UNITS. */
#define SBN_LAYER_MAX_UNITS ((SBN_RSUM_MAX_TERMS - 20) / 3)

/* Per-sample work goes in groups of at most this many (sample, channel) cells. */
#define SBN_LAYER_GROUP_CELLS 4096

/* Samples per group for x: at least 1, at most N. */
int64_t sbn__layer_group_samples(const sbn_tensor *x);
/* Scratch bytes of the per-sample passes (group buffers and the kernels' scratch). */
size_t sbn__layer_sample_bytes(const sbn_tensor *x);

/* Deposits one unit of channel c (count S > 0, its mean minus the centre) into the
 * forward block. */
void sbn__layer_deposit_moments(sbn__rsum *acc, int64_t channels, int64_t c, double count,
                                double mean, double m2);
/* The global count per channel N of a merged forward block. */
double sbn__layer_count(const sbn__rsum *acc, int64_t channels);
/*
 * The global (count, mean, M2) of channel c from a merged forward block of count n,
 * deposited around `centre` (mean = centre + g), with `units` from its units
 * accumulator. *trusted = 0 when the truncation bound is not below 2^-45 of the
 * M2 found (and the sums hold no NaN or Inf): then exchange again around the mean.
 */
sbn_moments sbn__layer_finish_moments(const sbn__rsum *acc, int64_t channels, int64_t c,
                                      double n, double centre, double units, int *trusted);

/*
 * Reproducible forward: deposits every sample of x as a unit (its per-channel mean
 * minus centre[c] (NULL: 0) and M2 in the kernels' fixed order), N_r * S into the
 * count and N_r into the units. `scratch` holds sbn__layer_sample_bytes(x) bytes.
 */
void sbn__layer_sample_moments(const sbn_tensor *x, const double *centre, sbn__rsum *acc,
                               void *scratch, sbn_pool_t *pool);
/*
 * Reproducible backward: deposits every sample's sum(dy) and sum(dy * (x - mean[c]))
 * into the backward block, and N_r into its units.
 */
void sbn__layer_sample_sums(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *mean,
                            sbn__rsum *acc, void *scratch, sbn_pool_t *pool);

#endif /* SBN_LAYER_SUMS_H */
