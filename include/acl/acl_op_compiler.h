/*
 * acl/acl_op_compiler.h - CANN's op-compiler header: the compile options
 * (aclCompileOpt, set with aclSetCompileopt, e.g. ACL_OP_JIT_COMPILE) and compile
 * types, with CANN's names and values. syncbn compiles nothing (its aclnn ops are
 * plain C), so only the types are declared, so that framework code naming them
 * compiles; aclopCompile and aclSetCompileopt are not provided.
 */
#ifndef SYNCBN_ACL_ACL_OP_COMPILER_H
#define SYNCBN_ACL_ACL_OP_COMPILER_H

#include "acl/acl_base.h"
#include "acl/acl_op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclCompileType {
    ACL_COMPILE_SYS = 0,
    ACL_COMPILE_UNREGISTERED = 1
} aclopCompileType;

typedef enum {
    ACL_PRECISION_MODE = 0,
    ACL_AICORE_NUM = 1,
    ACL_AUTO_TUNE_MODE = 2,
    ACL_OP_SELECT_IMPL_MODE = 3,
    ACL_OPTYPELIST_FOR_IMPLMODE = 4,
    ACL_OP_DEBUG_LEVEL = 5,
    ACL_DEBUG_DIR = 6,
    ACL_OP_COMPILER_CACHE_MODE = 7,
    ACL_OP_COMPILER_CACHE_DIR = 8,
    ACL_OP_PERFORMANCE_MODE = 9,
    ACL_OP_JIT_COMPILE = 10,
    ACL_OP_DETERMINISTIC = 11,
    ACL_CUSTOMIZE_DTYPES = 12,
    ACL_OP_PRECISION_MODE = 13,
    ACL_ALLOW_HF32 = 14,
    ACL_PRECISION_MODE_V2 = 15,
    ACL_OP_DEBUG_OPTION = 16
} aclCompileOpt;

typedef enum aclCompileFlag {
    ACL_OP_COMPILE_DEFAULT = 0,
    ACL_OP_COMPILE_FUZZ = 1
} aclOpCompileFlag;

typedef struct aclGraphDumpOption aclGraphDumpOption;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ACL_OP_COMPILER_H */
