/*
 * op_fast_batch_norm_backward.c - aclnnFastBatchNormBackward (hicann ops-nn
 * norm/batch_norm_grad_v3, CANN's "high-performance" BatchNorm backward) on the native
 * sbn_batch_norm_backward, through aclnnBatchNormBackward's phase 1, whose checks and
 * decisions it shares (see op_batch_norm_backward.c's comment: CANN's order NULL -> dtype -> format
 * -> shape, outputMask of size 3, a disabled output neither validated nor written,
 * saveInvstd holding the invstd, optional [C] tensors defaulting to 1, 0, 1, 0, 1, C the
 * last dim for NHWC/NDHWC, arguments validated before the empty-input shortcut, eps
 * narrowed to float and checked, a NULL workspaceSize/executor 161001 last). What this
 * op adds, from its CANN doc: `version` (the NPU algorithm, 0 or 1; anything else ->
 * 161002 after the shape checks, before eps; no effect on the numbers) and the rule that
 * gradInput, when enabled, has gradOut's dtype (161002 in the dtype stage). The doc's
 * A2/A3 rule that weight and the statistics share gradOut's dtype is not enforced, as
 * for aclnnBatchNormBackward: every mix computes correctly here.
 */
#include "aclnnop/aclnn_fast_batch_norm_backward.h"

#include "aclnn_internal.h"

#define OP "aclnnFastBatchNormBackward"

ACLNN_API aclnnStatus aclnnFastBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    int version, aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    return sbn__acl_batch_norm_backward_phase1(
        OP, 1, version, gradOut, input, weight, runningMean, runningVar, saveMean,
        saveInvstd, training, eps, outputMask, gradInput, gradWeight, gradBias, workspaceSize,
        executor);
}

ACLNN_API aclnnStatus aclnnFastBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
