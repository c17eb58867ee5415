/*
 * acl/acl_mdl.h - CANN's offline-model API header (aclmdl*: loading and running .om
 * models). A CPU has no .om models, so syncbn implements none of it; the header exists
 * because acl/acl.h includes it and host programs include it by name. It declares
 * CANN's opaque model types and size limits so that code naming them compiles, and no
 * functions: a program that calls aclmdl* fails at link time rather than at run time.
 */
#ifndef SYNCBN_ACL_ACL_MDL_H
#define SYNCBN_ACL_ACL_MDL_H

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_MAX_DIM_CNT 128
#define ACL_MAX_TENSOR_NAME_LEN 128

typedef struct aclmdlDataset aclmdlDataset;
typedef struct aclmdlDesc aclmdlDesc;
typedef struct aclmdlAIPP aclmdlAIPP;
typedef struct aclmdlConfigHandle aclmdlConfigHandle;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ACL_MDL_H */
