/*
 * acl/acl.h - the acl entry header of CANN as syncbn provides it on a CPU: process
 * setup (aclInit/aclFinalize), the calling thread's recent error message
 * (aclGetRecentErrMsg, shared by the runtime and the aclnn ops) and, as CANN's acl.h
 * does, the runtime (acl/acl_rt.h), the single-op API (acl/acl_op.h) and the model API
 * (acl/acl_mdl.h); the error codes are acl_base.h's constants (`::ACL_SUCCESS` compiles
 * in C++). A program written for an Ascend NPU includes this header unchanged.
 */
#ifndef SYNCBN_ACL_ACL_H
#define SYNCBN_ACL_ACL_H

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "acl/acl_op.h"
#include "acl/acl_mdl.h"

/*
 * Transition: an older acl/acl_rt.h defined some of the codes again as macros, which
 * hide acl_base.h's constants (`::ACL_SUCCESS` would read `::0`). The codes are
 * acl_base.h's; these lines drop such macros and do nothing once acl_rt.h has none.
 */
#undef ACL_SUCCESS
#undef ACL_ERROR_NONE
#undef ACL_ERROR_INVALID_PARAM
#undef ACL_ERROR_UNINITIALIZE
#undef ACL_ERROR_REPEAT_INITIALIZE
#undef ACL_ERROR_INVALID_FILE
#undef ACL_ERROR_REPEAT_FINALIZE
#undef ACL_ERROR_BAD_ALLOC
#undef ACL_ERROR_API_NOT_SUPPORT
#undef ACL_ERROR_INVALID_DEVICE
#undef ACL_ERROR_INTERNAL_ERROR
#undef ACL_ERROR_FAILURE
#undef ACL_ERROR_RT_PARAM_INVALID
#undef ACL_ERROR_RT_INVALID_DEVICEID
#undef ACL_ERROR_RT_CONTEXT_NULL
#undef ACL_ERROR_RT_INVALID_HANDLE
#undef ACL_ERROR_RT_FEATURE_NOT_SUPPORT
#undef ACL_ERROR_RT_MEMORY_ALLOCATION
#undef ACL_ERROR_RT_MEMORY_FREE
#undef ACL_ERROR_RT_INTERNAL_ERROR
#undef ACL_ERROR_PARSE_FILE
#undef ACL_ERROR_FILE_ATTR_INVALID
#undef ACL_ERROR_RT_STREAM_CONTEXT
#undef ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID
#undef ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL
#undef ACL_ERROR_RT_WAIT_TIMEOUT
#undef ACL_ERROR_RT_STREAM_NOT_COMPLETE
#undef ACL_ERROR_RT_EVENT_NOT_COMPLETE

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Initializes the process once; a second call before aclFinalize returns
 * ACL_ERROR_REPEAT_INITIALIZE. configPath (NULL, "" or a JSON file) is not read:
 * no CANN setting has a CPU meaning.
 */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/* ACL_ERROR_REPEAT_FINALIZE when not initialized. aclInit may be called again afterwards. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

/*
 * The calling thread's most recent failure message, or NULL when there is none.
 * Returns and clears it: the pointer is valid until the next call on the thread.
 */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ACL_H */
