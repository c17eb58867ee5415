/*
 * aclnn/aclnn_base.h - the header every CANN aclnn op header includes first: the aclnn
 * object and executor API (aclnn/acl_meta.h: aclTensor, aclOpExecutor, the status
 * codes, create/destroy and the getters) and the acl base types. syncbn adds one
 * declaration for C callers: the arrays aclGetViewShape, aclGetViewStrides and
 * aclGetStorageShape hand out are released with C++ `delete[]` as CANN documents, or
 * from C with sbn_acl_free_array (see docs/aclnn-mapping.md, "Memory rules").
 */
#ifndef SYNCBN_ACLNN_ACLNN_BASE_H
#define SYNCBN_ACLNN_ACLNN_BASE_H

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Releases an array returned by aclGetViewShape, aclGetViewStrides or
 * aclGetStorageShape (NULL does nothing). In C++, `delete[] array` is equivalent.
 */
ACL_FUNC_VISIBILITY void sbn_acl_free_array(void *array);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACLNN_ACLNN_BASE_H */
