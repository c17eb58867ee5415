/*
 * aclnnop/level2/aclnn_sync_batch_norm_backward_reduce.h - the older CANN include path of
 * aclnnop/aclnn_sync_batch_norm_backward_reduce.h (CANN kept its op headers in aclnnop/level2/ before
 * moving them up a level); the declarations are those of aclnnop/aclnn_sync_batch_norm_backward_reduce.h.
 */
#ifndef SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H
#define SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H

#include "aclnnop/aclnn_sync_batch_norm_backward_reduce.h"

#endif /* SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_BACKWARD_REDUCE_H */
