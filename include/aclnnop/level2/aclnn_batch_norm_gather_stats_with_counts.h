/*
 * aclnnop/level2/aclnn_batch_norm_gather_stats_with_counts.h - the older CANN include path of
 * aclnnop/aclnn_batch_norm_gather_stats_with_counts.h (CANN kept its op headers in aclnnop/level2/ before
 * moving them up a level); the declarations are those of aclnnop/aclnn_batch_norm_gather_stats_with_counts.h.
 */
#ifndef SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H
#define SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H

#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"

#endif /* SYNCBN_ACLNNOP_LEVEL2_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H */
