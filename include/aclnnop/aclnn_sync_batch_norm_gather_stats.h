/*
 * aclnnop/aclnn_sync_batch_norm_gather_stats.h - aclnnSyncBatchNormGatherStats,
 * CANN's merge of W ranks' per-channel sums and square sums with their sample
 * counts (aclnn-spec.md 2.3): batchMean = sum(totalSum)/N, batchInvstd =
 * 1/sqrt(sum(totalSquareSum)/N - batchMean^2 + eps), and the running mean and
 * variance (unbiased, var*N/(N-1)) updated in place. totalSum, totalSquareSum:
 * [W, C], W > 0; sampleCount: [W] FLOAT/FLOAT16/BF16/INT32 (finite, >= 0);
 * mean, variance, batchMean, batchInvstd: [C]. momentum and eps are float here,
 * and phase 2 takes a non-const stream, as in CANN. C == 0 is a no-op. Executor
 * tensor indices: inputs totalSum, totalSquareSum, sampleCount, mean, variance;
 * outputs batchMean, batchInvstd.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H
#define SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
    const aclTensor *totalSum, const aclTensor *totalSquareSum, const aclTensor *sampleCount,
    aclTensor *mean, aclTensor *variance, float momentum, float eps, aclTensor *batchMean,
    aclTensor *batchInvstd, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStats(void *workspace,
                                                              uint64_t workspaceSize,
                                                              aclOpExecutor *executor,
                                                              aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H */
