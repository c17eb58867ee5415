/*
 * aclnnop/aclnn_batch_norm_gather_stats_with_counts.h -
 * aclnnBatchNormGatherStatsWithCounts, CANN's merge of W ranks' per-channel
 * (mean, invstd) rows weighted by counts into the global meanAll and invstdAll,
 * with the running-statistics update (aclnn-spec.md 2.2). input (rank 2..8) only
 * gives C = dim 1; mean, invstd: [W, C]; counts: [W] (finite, >= 0); runningMean,
 * runningVar: optional [C], each updated on its own, runningVar with the
 * unbiased variance M2/(N - 1); meanAll, invstdAll: [C]. Float tensors are
 * FLOAT/FLOAT16/BF16, mixed dtypes allowed. momentum and eps are narrowed to
 * float. W == 0 gives meanAll 0, invstdAll NaN and leaves the running stats
 * alone. Executor tensor indices: inputs input, mean, invstd, runningMean,
 * runningVar, counts (absent ones skipped); outputs meanAll, invstdAll.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
    aclTensor *runningVar, double momentum, double eps, const aclTensor *counts,
    aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace,
                                                                    uint64_t workspaceSize,
                                                                    aclOpExecutor *executor,
                                                                    const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H */
