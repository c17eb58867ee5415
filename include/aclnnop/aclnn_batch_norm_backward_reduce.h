/*
 * aclnnop/aclnn_batch_norm_backward_reduce.h - aclnnBatchNormReduceBackward, the
 * local per-channel sums of the SyncBN backward pass (aclnn-spec.md 2.5):
 * sumDy = sum(gradOut), sumDyXmu = sum(gradOut * (input - mean)),
 * gradWeight = sumDyXmu * invstd, gradBias = sumDy, over every axis except dim 1.
 * gradOut, input: same shape, dtype and format, rank 2..8, C = dim 1 > 0; mean,
 * invstd and weight (optional, unused): [C]. inputG enables sumDy and sumDyXmu,
 * weightG gradWeight, biasG gradBias; a disabled output may be NULL and is neither
 * validated nor written. Every tensor FLOAT/FLOAT16/BF16. An empty input fills the
 * enabled outputs with 0. Executor tensor indices: inputs gradOut, input, mean,
 * invstd, weight (absent ones skipped); outputs the enabled ones in signature order.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const bool inputG, const bool weightG,
    const bool biasG, aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackward(void *workspace,
                                                             uint64_t workspaceSize,
                                                             aclOpExecutor *executor,
                                                             const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H */
