/*
 * aclnnop/aclnn_util.h - what CANN's aclnn op headers include after aclnn/aclnn_base.h:
 * the export macro ACLNN_API that marks each aclnnXxx declaration. syncbn's op headers
 * use ACL_FUNC_VISIBILITY, the same attribute; this header lets code written against
 * CANN's headers (and their level2/ copies) use ACLNN_API.
 */
#ifndef SYNCBN_ACLNNOP_ACLNN_UTIL_H
#define SYNCBN_ACLNNOP_ACLNN_UTIL_H

#include "aclnn/aclnn_base.h"

#ifndef ACLNN_API
#define ACLNN_API ACL_FUNC_VISIBILITY
#endif

#endif /* SYNCBN_ACLNNOP_ACLNN_UTIL_H */
