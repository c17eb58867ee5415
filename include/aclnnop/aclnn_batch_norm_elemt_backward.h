/*
 * aclnnop/aclnn_batch_norm_elemt_backward.h - aclnnBatchNormElemtBackward, the
 * elementwise input gradient of SyncBN (aclnn-spec.md 2.6), with N = the sum of
 * every element of counter:
 *   gradInput = (gradOut - sumDy/N - (input - mean) * invstd^2 * sumDyXmu/N) * invstd * weight
 * gradOut, gradInput: input's shape; input rank 2..8, C = dim 1 > 0; mean, invstd,
 * sumDy, sumDyXmu, weight (optional, NULL = ones): [C]; FLOAT/FLOAT16/BF16.
 * counter: INT32/FLOAT16/FLOAT, rank 1..8, any shape (e.g. the [W] per-rank counts);
 * it is summed in phase 2, each element a whole number >= 0, N >= the samples per
 * channel of input. An empty input succeeds and writes nothing. gradInput may be
 * gradOut itself (same view). Executor tensor indices: inputs gradOut, input, mean,
 * invstd, weight, sumDy, sumDyXmu, counter (absent ones skipped); output 0 = gradInput.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const aclTensor *sumDy,
    const aclTensor *sumDyXmu, aclTensor *counter, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtBackward(void *workspace,
                                                            uint64_t workspaceSize,
                                                            aclOpExecutor *executor,
                                                            const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H */
