/*
 * acl/acl_op.h - CANN's single-operator API header (aclop*: ops compiled for the NPU
 * and run from descriptors). syncbn has no aclop path: its ops are the aclnn ones
 * (aclnnop/), which need nothing from here. The header exists because acl/acl.h
 * includes it and host programs include it by name; it declares CANN's types (opaque
 * handles, the engine enum with CANN's values) so that code naming them compiles, and
 * no functions: a program that calls aclop* fails at link time rather than at run time.
 */
#ifndef SYNCBN_ACL_ACL_OP_H
#define SYNCBN_ACL_ACL_OP_H

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclopHandle aclopHandle;
typedef struct aclopAttr aclopAttr;
typedef struct aclopKernelDesc aclopKernelDesc;

typedef enum aclEngineType {
    ACL_ENGINE_SYS = 0,
    ACL_ENGINE_AICORE = 1,
    ACL_ENGINE_VECTOR = 2
} aclopEngineType;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ACL_OP_H */
