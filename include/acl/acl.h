/*
 * acl/acl.h - the acl entry header of CANN as syncbn provides it on a CPU:
 * process setup (aclInit/aclFinalize), the calling thread's recent error message
 * (aclGetRecentErrMsg, shared by the runtime and the aclnn ops) and, through
 * acl/acl_rt.h, the runtime calls and error codes. A program written for an
 * Ascend NPU includes this header unchanged.
 */
#ifndef SYNCBN_ACL_ACL_H
#define SYNCBN_ACL_ACL_H

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

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
