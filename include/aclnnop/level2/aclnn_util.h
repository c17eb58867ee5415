/*
 * aclnnop/level2/aclnn_util.h - the level2/ path of aclnnop/aclnn_util.h (CANN's older
 * op headers live in aclnnop/level2/ and include "aclnn_util.h" next to themselves).
 */
#ifndef SYNCBN_ACLNNOP_LEVEL2_ACLNN_UTIL_H
#define SYNCBN_ACLNNOP_LEVEL2_ACLNN_UTIL_H

#include "aclnnop/aclnn_util.h"

#endif /* SYNCBN_ACLNNOP_LEVEL2_ACLNN_UTIL_H */
