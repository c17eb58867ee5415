/*
 * aclnnop/aclnn_fast_batch_norm_backward.h - aclnnFastBatchNormBackward, CANN's
 * "high-performance" variant of aclnnBatchNormBackward (hicann ops-nn
 * norm/batch_norm_grad_v3): the same arguments, formulas and outputs plus `version`,
 * the NPU kernel's algorithm number (0 or 1), which changes nothing on a CPU. With
 * xhat = (input - saveMean) * saveInvstd and R samples per channel:
 * training: gradInput = weight * saveInvstd / R * (R * gradOut - sum(gradOut)
 *           - xhat * sum(gradOut * xhat)), gradWeight = sum(gradOut * xhat),
 *           gradBias = sum(gradOut);
 * eval: gradInput = gradOut * weight / sqrt(runningVar + eps), gradWeight =
 *       sum(gradOut * (input - runningMean)) / sqrt(runningVar + eps), gradBias = sum(gradOut).
 * gradOut, input (and gradInput when enabled): same shape, dtype and format, rank 2..8,
 * C = dim 1 (or the last dim for NHWC/NDHWC, as aclnnBatchNormBackward). weight,
 * runningMean, runningVar, saveMean, saveInvstd: optional [C] (defaults 1, 0, 1, 0, 1).
 * outputMask: 3 booleans (gradInput, gradWeight, gradBias). Executor tensor indices as
 * aclnnBatchNormBackward.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_FAST_BATCH_NORM_BACKWARD_H
#define SYNCBN_ACLNNOP_ACLNN_FAST_BATCH_NORM_BACKWARD_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnFastBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    int version, aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACLNN_API aclnnStatus aclnnFastBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor,
                                                 const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_FAST_BATCH_NORM_BACKWARD_H */
