/*
 * aclnn/aclnn_base.h - the header every CANN aclnn op header includes first: the aclnn
 * object and executor API (aclnn/acl_meta.h: aclTensor, aclOpExecutor, the status
 * codes, create/destroy and the getters) and the acl base types. The arrays
 * aclGetViewShape, aclGetViewStrides and aclGetStorageShape hand out are released with
 * C++ `delete[]` as CANN documents, or from C with sbn_acl_free_array (acl_meta.h; see
 * docs/aclnn-mapping.md, "Memory rules").
 */
#ifndef SYNCBN_ACLNN_ACLNN_BASE_H
#define SYNCBN_ACLNN_ACLNN_BASE_H

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#endif /* SYNCBN_ACLNN_ACLNN_BASE_H */
