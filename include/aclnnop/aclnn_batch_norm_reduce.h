/*
 * aclnnop/aclnn_batch_norm_reduce.h - aclnnBatchNormReduce, CANN's per-channel
 * sum and square sum of a 4-D x over N, H and W (aclnn-spec.md 2.9). x: NCHW
 * (C = dim 1) or NHWC (C = dim 3), FLOAT/FLOAT16/BF16; sum, squareSum: FLOAT,
 * ND, [C]. An empty x gives zeros. Executor tensor indices: input 0 = x;
 * output 0 = sum, 1 = squareSum.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H
#define SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x,
                                                                     aclTensor *sum,
                                                                     aclTensor *squareSum,
                                                                     uint64_t *workspaceSize,
                                                                     aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H */
