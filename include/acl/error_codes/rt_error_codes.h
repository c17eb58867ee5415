/*
 * acl/error_codes/rt_error_codes.h - the acl runtime's error codes with CANN's names
 * and values, declared as CANN's headers of this generation declare them: constants
 * (`static const int32_t`), not macros, so that C++ code may write `::ACL_RT_SUCCESS`
 * and C code compares against them at run time. acl/acl_base.h includes this file, as
 * CANN's does. syncbn's runtime (acl/acl_rt.h) returns only a few of them (107000,
 * 107001, 107002, 107017, 207001); the rest are declared so that programs written for
 * an NPU, which name them, compile unchanged.
 */
#ifndef SYNCBN_ACL_ERROR_CODES_RT_ERROR_CODES_H
#define SYNCBN_ACL_ERROR_CODES_RT_ERROR_CODES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static const int32_t ACL_RT_SUCCESS = 0;

/* 1xxxxx: the caller's arguments or state */
static const int32_t ACL_ERROR_RT_PARAM_INVALID = 107000;
static const int32_t ACL_ERROR_RT_INVALID_DEVICEID = 107001;
static const int32_t ACL_ERROR_RT_CONTEXT_NULL = 107002;
static const int32_t ACL_ERROR_RT_STREAM_CONTEXT = 107003;
static const int32_t ACL_ERROR_RT_MODEL_CONTEXT = 107004;
static const int32_t ACL_ERROR_RT_STREAM_MODEL = 107005;
static const int32_t ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID = 107006;
static const int32_t ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL = 107007;
static const int32_t ACL_ERROR_RT_ADDR_UNALIGNED = 107008;
static const int32_t ACL_ERROR_RT_FILE_OPEN = 107009;
static const int32_t ACL_ERROR_RT_FILE_WRITE = 107010;
static const int32_t ACL_ERROR_RT_STREAM_SUBSCRIBE = 107011;
static const int32_t ACL_ERROR_RT_THREAD_SUBSCRIBE = 107012;
static const int32_t ACL_ERROR_RT_GROUP_NOT_SET = 107013;
static const int32_t ACL_ERROR_RT_GROUP_NOT_CREATE = 107014;
static const int32_t ACL_ERROR_RT_STREAM_NO_CB_REG = 107015;
static const int32_t ACL_ERROR_RT_INVALID_MEMORY_TYPE = 107016;
static const int32_t ACL_ERROR_RT_INVALID_HANDLE = 107017;
static const int32_t ACL_ERROR_RT_INVALID_MALLOC_TYPE = 107018;
static const int32_t ACL_ERROR_RT_WAIT_TIMEOUT = 107019;
static const int32_t ACL_ERROR_RT_TASK_TIMEOUT = 107020;
static const int32_t ACL_ERROR_RT_SYSPARAMOPT_NOT_SET = 107021;
static const int32_t ACL_ERROR_RT_DEVICE_TASK_ABORT = 107022;
static const int32_t ACL_ERROR_RT_STREAM_ABORT = 107023;

/* 2xxxxx: resources and unsupported features */
static const int32_t ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
static const int32_t ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
static const int32_t ACL_ERROR_RT_MEMORY_FREE = 207002;
static const int32_t ACL_ERROR_RT_AICORE_OVER_FLOW = 207003;
static const int32_t ACL_ERROR_RT_NO_DEVICE = 207004;
static const int32_t ACL_ERROR_RT_RESOURCE_ALLOC_FAIL = 207005;
static const int32_t ACL_ERROR_RT_NO_PERMISSION = 207006;
static const int32_t ACL_ERROR_RT_NO_EVENT_RESOURCE = 207007;
static const int32_t ACL_ERROR_RT_NO_STREAM_RESOURCE = 207008;
static const int32_t ACL_ERROR_RT_NO_NOTIFY_RESOURCE = 207009;
static const int32_t ACL_ERROR_RT_NO_MODEL_RESOURCE = 207010;
static const int32_t ACL_ERROR_RT_NO_CDQ_RESOURCE = 207011;
static const int32_t ACL_ERROR_RT_OVER_LIMIT = 207012;
static const int32_t ACL_ERROR_RT_QUEUE_EMPTY = 207013;
static const int32_t ACL_ERROR_RT_QUEUE_FULL = 207014;
static const int32_t ACL_ERROR_RT_REPEATED_INIT = 207015;
static const int32_t ACL_ERROR_RT_AIVEC_OVER_FLOW = 207016;
static const int32_t ACL_ERROR_RT_OVER_FLOW = 207017;
static const int32_t ACL_ERROR_RT_DEVICE_OOM = 207018;

/* 5xxxxx: internal failures of the runtime, the device or its driver */
static const int32_t ACL_ERROR_RT_INTERNAL_ERROR = 507000;
static const int32_t ACL_ERROR_RT_TS_ERROR = 507001;
static const int32_t ACL_ERROR_RT_STREAM_TASK_FULL = 507002;
static const int32_t ACL_ERROR_RT_STREAM_TASK_EMPTY = 507003;
static const int32_t ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004;
static const int32_t ACL_ERROR_RT_END_OF_SEQUENCE = 507005;
static const int32_t ACL_ERROR_RT_EVENT_NOT_COMPLETE = 507006;
static const int32_t ACL_ERROR_RT_CONTEXT_RELEASE_ERROR = 507007;
static const int32_t ACL_ERROR_RT_SOC_VERSION = 507008;
static const int32_t ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT = 507009;
static const int32_t ACL_ERROR_RT_LOST_HEARTBEAT = 507010;
static const int32_t ACL_ERROR_RT_MODEL_EXECUTE = 507011;
static const int32_t ACL_ERROR_RT_REPORT_TIMEOUT = 507012;
static const int32_t ACL_ERROR_RT_SYS_DMA = 507013;
static const int32_t ACL_ERROR_RT_AICORE_TIMEOUT = 507014;
static const int32_t ACL_ERROR_RT_AICORE_EXCEPTION = 507015;
static const int32_t ACL_ERROR_RT_AICORE_TRAP_EXCEPTION = 507016;
static const int32_t ACL_ERROR_RT_AICPU_TIMEOUT = 507017;
static const int32_t ACL_ERROR_RT_AICPU_EXCEPTION = 507018;
static const int32_t ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR = 507019;
static const int32_t ACL_ERROR_RT_AICPU_MODEL_RSP_ERR = 507020;
static const int32_t ACL_ERROR_RT_PROFILING_ERROR = 507021;
static const int32_t ACL_ERROR_RT_IPC_ERROR = 507022;
static const int32_t ACL_ERROR_RT_MODEL_ABORT_NORMAL = 507023;
static const int32_t ACL_ERROR_RT_KERNEL_UNREGISTERING = 507024;
static const int32_t ACL_ERROR_RT_RINGBUFFER_NOT_INIT = 507025;
static const int32_t ACL_ERROR_RT_RINGBUFFER_NO_DATA = 507026;
static const int32_t ACL_ERROR_RT_KERNEL_LOOKUP = 507027;
static const int32_t ACL_ERROR_RT_KERNEL_DUPLICATE = 507028;
static const int32_t ACL_ERROR_RT_DEBUG_REGISTER_FAIL = 507029;
static const int32_t ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL = 507030;
static const int32_t ACL_ERROR_RT_LABEL_CONTEXT = 507031;
static const int32_t ACL_ERROR_RT_PROGRAM_USE_OUT = 507032;
static const int32_t ACL_ERROR_RT_DEV_SETUP_ERROR = 507033;
static const int32_t ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = 507034;
static const int32_t ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035;
static const int32_t ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION = 507036;
static const int32_t ACL_ERROR_RT_CDQ_BATCH_ABNORMAL = 507037;
static const int32_t ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR = 507038;
static const int32_t ACL_ERROR_RT_DIE_SET_ERROR = 507039;
static const int32_t ACL_ERROR_RT_INVALID_DIEID = 507040;
static const int32_t ACL_ERROR_RT_DIE_MODE_NOT_SET = 507041;
static const int32_t ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW = 507042;
static const int32_t ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW = 507043;
static const int32_t ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW = 507044;
static const int32_t ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW = 507045;
static const int32_t ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046;
static const int32_t ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = 507047;
static const int32_t ACL_ERROR_RT_FFTS_PLUS_TIMEOUT = 507048;
static const int32_t ACL_ERROR_RT_FFTS_PLUS_EXCEPTION = 507049;
static const int32_t ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION = 507050;
static const int32_t ACL_ERROR_RT_SEND_MSG = 507051;
static const int32_t ACL_ERROR_RT_COPY_DATA = 507052;
static const int32_t ACL_ERROR_RT_DEVICE_MEM_ERROR = 507053;
static const int32_t ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR = 507054;
static const int32_t ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR = 507055;
static const int32_t ACL_ERROR_RT_LINK_ERROR = 507056;
static const int32_t ACL_ERROR_RT_SUSPECT_REMOTE_ERROR = 507057;
static const int32_t ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899;
static const int32_t ACL_ERROR_RT_AICPU_INTERNAL_ERROR = 507900;
static const int32_t ACL_ERROR_RT_SOCKET_CLOSE = 507901;
static const int32_t ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR = 507902;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_ACL_ERROR_CODES_RT_ERROR_CODES_H */
