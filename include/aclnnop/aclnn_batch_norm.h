/*
 * aclnnop/aclnn_batch_norm.h - aclnnBatchNorm, plain batch normalisation forward
 * with PyTorch F.batch_norm semantics (aclnn-spec.md 2.7).
 * training: output = (input - mean) / sqrt(var + eps) * weight + bias with the
 *   batch mean and biased var; runningMean/runningVar (each optional) updated with
 *   momentum and the unbiased var; saveMean = mean, saveInvstd = 1/sqrt(var + eps).
 * eval: output = (input - runningMean) / sqrt(runningVar + eps) * weight + bias,
 *   running stats defaulting to 0 and 1; saveMean/saveInvstd are not used.
 * input, output: same shape and format, rank 2..8; C = dim 1, or the last dim for
 * NHWC/NDHWC (as on Ascend 950); a 5-D tensor must be NCDHW or NDHWC. weight
 * (NULL = ones), bias (NULL = zeros), running stats, saveMean, saveInvstd: [C].
 * Every tensor FLOAT/FLOAT16/BF16. momentum and eps are narrowed to float.
 * Executor tensor indices: inputs input, weight, bias, runningMean, runningVar
 * (absent ones skipped; the running stats are updated in place in training);
 * outputs output, saveMean, saveInvstd (training only).
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias,
    aclTensor *runningMean, aclTensor *runningVar, bool training, double momentum, double eps,
    aclTensor *output, aclTensor *saveMean, aclTensor *saveInvstd, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_H */
