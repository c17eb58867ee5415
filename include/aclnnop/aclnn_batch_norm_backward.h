/*
 * aclnnop/aclnn_batch_norm_backward.h - aclnnBatchNormBackward, plain batch
 * normalisation backward with PyTorch native_batch_norm_backward semantics
 * (aclnn-spec.md 2.8); saveInvstd holds the invstd that aclnnBatchNorm saved.
 * training: with xhat = (input - saveMean) * saveInvstd, R samples per channel,
 *   gradInput = weight * saveInvstd / R
 *               * (R * gradOut - sum(gradOut) - xhat * sum(gradOut * xhat)),
 *   gradWeight = sum(gradOut * xhat), gradBias = sum(gradOut).
 * eval: invstd = 1/sqrt(runningVar + eps), gradInput = gradOut * weight * invstd,
 *   gradWeight = sum(gradOut * (input - runningMean)) * invstd, gradBias = sum(gradOut).
 * gradOut, input: same shape, dtype and format, rank 2..8; C = dim 1, or the last dim
 * for NHWC/NDHWC (as aclnnBatchNorm). weight, runningMean, runningVar, saveMean,
 * saveInvstd: optional [C], defaults 1, 0, 1, 0, 1 (in eval saveMean/saveInvstd may
 * also be [0]). outputMask: 3 booleans (gradInput, gradWeight, gradBias); a disabled
 * output may be NULL and is neither validated nor written. An empty input succeeds
 * and writes nothing. Executor tensor indices: inputs gradOut, input, weight,
 * runningMean, runningVar, saveMean, saveInvstd (absent ones skipped); outputs the
 * enabled ones in signature order.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H */
