/*
 * aclnnop/level2/aclnn_batch_norm_reduce.h - the older CANN include path of
 * aclnnop/aclnn_batch_norm_reduce.h (CANN kept its op headers in aclnnop/level2/ before
 * moving them up a level); the declarations are those of aclnnop/aclnn_batch_norm_reduce.h.
 */
#ifndef SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_REDUCE_H
#define SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_REDUCE_H

#include "aclnnop/aclnn_batch_norm_reduce.h"

#endif /* SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_REDUCE_H */
