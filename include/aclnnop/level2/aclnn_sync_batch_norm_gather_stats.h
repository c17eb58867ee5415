/*
 * aclnnop/level2/aclnn_sync_batch_norm_gather_stats.h - the older CANN include path of
 * aclnnop/aclnn_sync_batch_norm_gather_stats.h (CANN kept its op headers in aclnnop/level2/ before
 * moving them up a level); the declarations are those of aclnnop/aclnn_sync_batch_norm_gather_stats.h.
 */
#ifndef SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H
#define SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H

#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"

#endif /* SYNCBN_ACLNNOP_LEVEL2_ACLNN_SYNC_BATCH_NORM_GATHER_STATS_H */
