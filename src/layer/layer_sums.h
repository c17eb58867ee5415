/*
 * layer_sums.h - the SyncBN layer's statistics as sums that do not depend on the
 * order in which they are added: the units a rank contributes (its whole batch,
 * or each sample in reproducible mode) are deposited into order-independent
 * accumulators (core/rsum.h), one allreduce merges them (any tree, same bits),
 * and every rank finishes the same global statistics from the merged sums.
 *
 * Forward, per channel c, a unit u with count S_u, mean m_u and M2_u deposits
 *   P += S_u * m_u,  Q += S_u * m_u^2,  M += M2_u
 * (S*m split exactly with fma into 2 deposits; S*m^2 as a double-double, within
 * 2^-104, 2 deposits; so 5 deposits per unit and channel).
 * and the count N += S_u once per unit row. After the merge, with g = P / N:
 *   M2 = M + Q - 2 g P + N g^2 = sum_u M2_u + sum_u S_u (m_u - g)^2  (>= 0)
 * evaluated in the accumulators (P's exact parts times g, g^2 times N, each
 * product split exactly), rounded once. Backward deposits the unit's sum_dy and
 * sum_dy_xmu. Layout of the forward block: [P: C][Q: C][M: C][N: 1] accumulators;
 * backward: [sum_dy: C][sum_dy_xmu: C].
 */
#ifndef SBN_LAYER_SUMS_H
#define SBN_LAYER_SUMS_H

#include "core/internal.h"
#include "core/rsum.h"
#include "syncbn/ops.h"

/* Accumulators of the forward block for C channels and of the backward block. */
#define SBN_LAYER_FWD_ACCS(C) (3 * (size_t)(C) + 1)
#define SBN_LAYER_BWD_ACCS(C) (2 * (size_t)(C))

/* Per-sample work goes in groups of at most this many (sample, channel) cells. */
#define SBN_LAYER_GROUP_CELLS 4096

/* Samples per group for x: at least 1, at most N. */
int64_t sbn__layer_group_samples(const sbn_tensor *x);
/* Scratch bytes of the per-sample passes (group buffers and the kernels' scratch). */
size_t sbn__layer_sample_bytes(const sbn_tensor *x);

/* Deposits one unit of channel c (count S > 0) into the forward block. */
void sbn__layer_deposit_moments(sbn__rsum *acc, int64_t channels, int64_t c, double count,
                                double mean, double m2);
/* The global count per channel N of a merged forward block. */
double sbn__layer_count(const sbn__rsum *acc, int64_t channels);
/* The global (count, mean, M2) of channel c from a merged forward block of count n. */
sbn_moments sbn__layer_finish_moments(const sbn__rsum *acc, int64_t channels, int64_t c,
                                      double n);

/*
 * Reproducible forward: deposits every sample of x as a unit (its per-channel mean
 * and M2 in the kernels' fixed order), and N_r * S into the count. `scratch`
 * holds sbn__layer_sample_bytes(x) bytes.
 */
void sbn__layer_sample_moments(const sbn_tensor *x, sbn__rsum *acc, void *scratch,
                               sbn_pool_t *pool);
/*
 * Reproducible backward: deposits every sample's sum(dy) and sum(dy * (x - mean[c]))
 * into the backward block.
 */
void sbn__layer_sample_sums(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *mean,
                            sbn__rsum *acc, void *scratch, sbn_pool_t *pool);

#endif /* SBN_LAYER_SUMS_H */
