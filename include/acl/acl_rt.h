/*
 * acl/acl_rt.h - the acl runtime calls that CANN's aclnn samples make (devices,
 * streams, memory, copies), with CANN's names, values and signatures, and their
 * CPU meaning in syncbn: "device" memory is host memory, a stream is a handle on
 * which nothing is queued (every op runs synchronously, so synchronizing is a
 * no-op), and the copy kinds all mean memmove. The acl error codes these calls
 * return are defined here with CANN's values (acl_base.h and rt_error_codes.h
 * in CANN), so that including acl/acl.h or acl/acl_rt.h provides them.
 */
#ifndef SYNCBN_ACL_ACL_RT_H
#define SYNCBN_ACL_ACL_RT_H

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- acl error codes (CANN values) ---- */
#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_API_NOT_SUPPORT 200001
#define ACL_ERROR_INVALID_DEVICE 200002
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_FAILURE 500001
/* runtime codes (rt_error_codes.h) */
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_MEMORY_FREE 207002
#define ACL_ERROR_RT_INTERNAL_ERROR 507000

/* Page policies of aclrtMalloc; on a CPU every policy is an ordinary allocation. */
typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
} aclrtMemMallocPolicy;

/* Copy directions; on a CPU every kind is a memmove. */
typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* ---- devices: any id >= 0 names the CPU; the current device is per thread ---- */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/* ACL_ERROR_RT_CONTEXT_NULL when the calling thread has set no device. */
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);

/* ---- streams: handles only; work never waits on them ---- */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/* NULL is the default stream. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* ---- memory: 64-byte aligned; size 0 is refused, as in CANN ---- */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
/* Only pointers returned by aclrtMalloc (aclrtFree) or aclrtMallocHost (aclrtFreeHost). */
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);

/* Copies count bytes; count > destMax is refused. count == 0 succeeds at once. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
/* Sets count bytes to (unsigned char)value; count > maxCount is refused. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
                                         size_t count);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ACL_RT_H */
