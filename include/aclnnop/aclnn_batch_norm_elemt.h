/*
 * aclnnop/aclnn_batch_norm_elemt.h - aclnnBatchNormElemt, CANN's elementwise
 * normalisation output = (input - mean[c]) * invstd[c] * weight[c] + bias[c]
 * (aclnn-spec.md 2.4). input, output: same shape and format, rank 2..8, C = dim 1
 * > 0; weight (NULL = ones), bias (NULL = zeros), mean, invstd: [C]. All tensors
 * FLOAT/FLOAT16/BF16; dtypes may differ. eps does not enter the result (it
 * cancels in CANN's formula) and is accepted as given. output may be input itself.
 * Executor tensor indices: inputs input, weight, bias, mean, invstd (absent ones
 * skipped); output 0 = output.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias, aclTensor *mean,
    aclTensor *invstd, double eps, aclTensor *output, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H */
