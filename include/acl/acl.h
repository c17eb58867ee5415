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

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Initializes the process once; a second call before aclFinalize returns
 * ACL_ERROR_REPEAT_INITIALIZE. configPath NULL or "": no settings. Otherwise a JSON
 * file; {"syncbn": {"num_threads": N}} (1..1024) sizes the aclnn thread pool, other
 * keys are ignored. Cannot be opened -> ACL_ERROR_INVALID_FILE; not JSON ->
 * ACL_ERROR_PARSE_FILE; a bad syncbn value -> ACL_ERROR_FILE_ATTR_INVALID; a failed
 * aclInit initialises nothing.
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
