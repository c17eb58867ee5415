/*
 * aclnnop/aclnn_batch_norm_stats.h - aclnnBatchNormStats, CANN's per-channel
 * batch statistics of one rank: mean = sum(x)/R and invstd = 1/sqrt(var + eps)
 * with the biased variance, over every axis except dim 1 (aclnn-spec.md 2.1).
 * input: rank 2..8, FLOAT/FLOAT16/BF16, any public format (C is always dim 1);
 * mean, invstd: FLOAT [C]. eps is narrowed to float as CANN does. An empty input
 * (R == 0, C > 0) gives mean 0 and invstd NaN. Executor tensor indices:
 * input 0 = input; output 0 = mean, 1 = invstd.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_STATS_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_STATS_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input,
                                                                    double eps, aclTensor *mean,
                                                                    aclTensor *invstd,
                                                                    uint64_t *workspaceSize,
                                                                    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_STATS_H */
