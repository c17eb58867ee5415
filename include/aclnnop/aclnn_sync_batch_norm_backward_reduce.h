/*
 * aclnnop/aclnn_sync_batch_norm_backward_reduce.h - aclnnSyncBatchNormBackwardReduce,
 * the SyncBatchNormBackwardReduce op of CANN (the TBE op, redone in Ascend C for
 * hicann ops-nn): from per-channel sums already reduced across ranks,
 *   sumDyXmu = sumDyDxPad - mean * sumDy      (= sum(dy * (x - mean)))
 *   y        = sumDyXmu * invertStd           (the weight gradient)
 * element by element. The four inputs and two outputs have one shape (any rank 1..8,
 * not empty, no broadcasting) and FLOAT, FLOAT16 or BF16 elements; CANN requires one
 * dtype for all six (so does syncbn). Executor tensor indices: inputs sumDy,
 * sumDyDxPad, mean, invertStd; outputs sumDyXmu, y.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H
#define SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(
    const aclTensor *sumDy, const aclTensor *sumDyDxPad, const aclTensor *mean,
    const aclTensor *invertStd, aclTensor *sumDyXmu, aclTensor *y, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACLNN_API aclnnStatus aclnnSyncBatchNormBackwardReduce(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H */
