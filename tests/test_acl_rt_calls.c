/*
 * test_acl_rt_calls.c - the runtime calls frameworks make (issue 12), each with its
 * success and its refusals: contexts (create makes current, set/get current,
 * destroy, default contexts of aclrtSetDevice, per thread, stale handles),
 * aclrtGetDeviceCount, aclrtSynchronizeDevice, aclrtGetRunMode, aclrtGetSocName,
 * aclrtGetMemInfo (needs a device), streams with config, query and timeout,
 * aclrtStreamWaitEvent, events (record, reset, query in the three forms, elapsed
 * time from real timestamps, never-recorded and reversed pairs), aclrtMemcpyAsync
 * and aclrtMemsetAsync (done at the call; a destroyed stream is refused and writes
 * nothing), aclrtMallocAlign32, aclDataTypeSize and the aclFloat16 conversions
 * against the native fp16 rounding. The cases that create streams or events,
 * allocate or copy call aclrtSetDevice(0) first, as CANN requires.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn_support.h"
#include "harness/harness.h"

#define CHECK_RT(expr, want) CHECK_ACL((aclError)(expr), (aclError)(want))

static void codes_and_enums(void)
{
    CHECK(ACL_ERROR_RT_STREAM_CONTEXT == 107003 && ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006);
    CHECK(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL == 107007 && ACL_ERROR_RT_WAIT_TIMEOUT == 107019);
    CHECK(ACL_ERROR_RT_STREAM_NOT_COMPLETE == 507004 && ACL_ERROR_RT_EVENT_NOT_COMPLETE == 507006);
    CHECK(ACL_DEVICE == 0 && ACL_HOST == 1);
    CHECK(ACL_EVENT_STATUS_COMPLETE == 0 && ACL_EVENT_STATUS_NOT_READY == 1);
    CHECK(ACL_EVENT_RECORDED_STATUS_NOT_READY == 0 && ACL_EVENT_RECORDED_STATUS_COMPLETE == 1);
    CHECK(ACL_EVENT_WAIT_STATUS_COMPLETE == 0 && ACL_EVENT_WAIT_STATUS_RESERVED == 0xFFFF);
    CHECK(ACL_STREAM_STATUS_COMPLETE == 0 && ACL_STREAM_STATUS_NOT_READY == 1);
    CHECK(ACL_DDR_MEM == 0 && ACL_HBM_MEM == 1 && ACL_MEM_P2P_HUGE1G == 17);
    CHECK(ACL_STREAM_FAST_LAUNCH == 1 && ACL_STREAM_DEVICE_USE_ONLY == 0x20);
    CHECK(ACL_EVENT_SYNC == 1 && ACL_EVENT_TIME_LINE == 8 && ACL_EVENT_IPC == 0x40);
    CHECK(sizeof(aclFloat16) == 2);
}

static void *current_context_in_thread(void *arg)
{
    aclrtContext ctx = NULL;
    *(aclError *)arg = aclrtGetCurrentContext(&ctx);
    return NULL;
}

static void contexts(void)
{
    aclrtContext a = NULL, b = NULL, cur = NULL, dflt = NULL;
    int32_t dev = -1;
    pthread_t th;
    aclError other = ACL_SUCCESS;
    /* nothing current yet */
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(atsup_msg_has("aclrtSetDevice"));
    CHECK_RT(aclrtGetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtCreateContext(&a, -1), ACL_ERROR_RT_INVALID_DEVICEID);
    /* aclrtSetDevice makes the default context current */
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
    CHECK(dflt != NULL);
    CHECK_RT(aclrtDestroyContext(dflt), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("default context"));
    /* a created context becomes current, with its device */
    CHECK_RT(aclrtCreateContext(&a, 2), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == a);
    CHECK_RT(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 2);
    CHECK_RT(aclrtCreateContext(&b, 1), ACL_SUCCESS);
    CHECK(b != a);
    CHECK_RT(aclrtSetCurrentContext(a), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == a);
    CHECK_RT(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 2);
    /* the current context belongs to the thread */
    CHECK(pthread_create(&th, NULL, current_context_in_thread, &other) == 0);
    pthread_join(th, NULL);
    CHECK(other == ACL_ERROR_RT_CONTEXT_NULL);
    /* back to the default context of device 0 */
    CHECK_RT(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
    CHECK_RT(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 0);
    CHECK_RT(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    /* destroying b (not current) leaves the current one; a stale handle is refused */
    CHECK_RT(aclrtDestroyContext(b), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyContext(b), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtSetCurrentContext(b), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("not a live context"));
    CHECK_RT(aclrtSetCurrentContext((aclrtContext)&other), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtDestroyContext(NULL), ACL_ERROR_INVALID_PARAM);
    /* destroying the current context leaves the thread with none */
    CHECK_RT(aclrtSetCurrentContext(a), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyContext(a), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_RT(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
    /* the same default context again for device 0 */
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == dflt);
    CHECK_RT(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_RT(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
}

static void device_queries(void)
{
    uint32_t count = 0;
    aclrtRunMode mode = ACL_DEVICE;
    size_t free_bytes = 0, total = 0;
    const char *soc;
    CHECK_RT(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    CHECK(count == 1);
    CHECK_RT(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtGetRunMode(&mode), ACL_SUCCESS);
    CHECK(mode == ACL_HOST);
    CHECK_RT(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
    soc = aclrtGetSocName();
    CHECK(soc != NULL && strcmp(soc, "syncbn-cpu") == 0);
    /* a thread without a device */
    CHECK_RT(aclrtSynchronizeDevice(), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_RT(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_RT(aclrtSynchronizeDevice(), ACL_SUCCESS);
    CHECK_RT(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_SUCCESS);
    CHECK(total > ((size_t)64 << 20) && free_bytes <= total);
    CHECK_RT(aclrtGetMemInfo(ACL_MEM_P2P_HUGE1G, &free_bytes, &total), ACL_SUCCESS);
    CHECK_RT(aclrtGetMemInfo((aclrtMemAttr)18, &free_bytes, &total), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtGetMemInfo((aclrtMemAttr)-1, &free_bytes, &total), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtGetMemInfo(ACL_DDR_MEM, NULL, &total), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtGetMemInfo(ACL_DDR_MEM, &free_bytes, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtResetDevice(0), ACL_SUCCESS);
}

static void streams(void)
{
    aclrtStream s = NULL, t = NULL;
    aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS); /* streams need a current device */
    CHECK_RT(aclrtCreateStreamWithConfig(&s, 3, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC),
             ACL_SUCCESS);
    CHECK_RT(aclrtCreateStreamWithConfig(&t, 0, 0x100), ACL_ERROR_INVALID_PARAM);
    CHECK(atsup_msg_has("0x100"));
    CHECK_RT(aclrtCreateStreamWithConfig(NULL, 0, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    CHECK(st == ACL_STREAM_STATUS_COMPLETE);
    CHECK_RT(aclrtStreamQuery(NULL, &st), ACL_SUCCESS); /* the default stream */
    CHECK_RT(aclrtStreamQuery(s, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS);
    CHECK_RT(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_SUCCESS);
    CHECK_RT(aclrtSynchronizeStreamWithTimeout(s, 100), ACL_SUCCESS);
    CHECK_RT(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtDestroyStream(s), ACL_SUCCESS);
    /* destroyed: refused by every call */
    CHECK_RT(aclrtStreamQuery(s, &st), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtSynchronizeStreamWithTimeout(s, 10), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("destroyed"));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void events(void)
{
    aclrtEvent a = NULL, b = NULL, c = NULL;
    aclrtStream s = NULL, dead = NULL;
    aclrtEventStatus es = ACL_EVENT_STATUS_RESERVED;
    aclrtEventRecordedStatus rs = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    aclrtEventWaitStatus ws = ACL_EVENT_WAIT_STATUS_RESERVED;
    float ms = -1.0f;
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS); /* events and streams need a current device */
    CHECK_RT(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtCreateEvent(&a), ACL_SUCCESS);
    CHECK_RT(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC), ACL_SUCCESS);
    CHECK_RT(aclrtCreateEventWithFlag(&c, 0x4), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_RT(aclrtCreateStream(&dead), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyStream(dead), ACL_SUCCESS);
    /* not recorded yet */
    CHECK_RT(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_RT(aclrtQueryEventWaitStatus(a, &ws), ACL_SUCCESS);
    CHECK(ws == ACL_EVENT_WAIT_STATUS_NOT_READY);
    CHECK_RT(aclrtQueryEvent(a, &es), ACL_SUCCESS);
    CHECK(es == ACL_EVENT_STATUS_COMPLETE);
    CHECK_RT(aclrtSynchronizeEvent(a), ACL_SUCCESS);
    CHECK_RT(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
    CHECK(atsup_msg_has("startEvent was never recorded"));
    /* record with real time in between */
    CHECK_RT(aclrtRecordEvent(a, s), ACL_SUCCESS);
    CHECK_RT(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
    CHECK(atsup_msg_has("endEvent"));
    sleep_ms(20);
    CHECK_RT(aclrtRecordEvent(b, NULL), ACL_SUCCESS);
    CHECK_RT(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS);
    CHECK_MSG(ms >= 19.0f, "elapsed %.3f ms across a 20 ms sleep", (double)ms);
    CHECK_RT(aclrtEventElapsedTime(&ms, a, a), ACL_SUCCESS);
    CHECK(ms == 0.0f);
    CHECK_RT(aclrtEventElapsedTime(&ms, b, a), ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL);
    CHECK_RT(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_RT(aclrtQueryEventWaitStatus(b, &ws), ACL_SUCCESS);
    CHECK(ws == ACL_EVENT_WAIT_STATUS_COMPLETE);
    CHECK_RT(aclrtStreamWaitEvent(s, b), ACL_SUCCESS);
    CHECK_RT(aclrtStreamWaitEvent(dead, b), ACL_ERROR_RT_PARAM_INVALID);
    /* a destroyed stream: nothing is recorded */
    CHECK_RT(aclrtResetEvent(a, s), ACL_SUCCESS);
    CHECK_RT(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_RT(aclrtRecordEvent(a, dead), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtQueryEventStatus(a, &rs), ACL_SUCCESS);
    CHECK(rs == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    /* NULL and stale events */
    CHECK_RT(aclrtRecordEvent(NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtQueryEvent(a, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtQueryEventStatus(a, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtDestroyEvent(a), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyEvent(a), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtRecordEvent(a, s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("aclrtCreateEvent"));
    CHECK_RT(aclrtSynchronizeEvent(a), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtSynchronizeEvent((aclrtEvent)&ms), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM);
    /* an event is not a stream, nor a stream an event */
    CHECK_RT(aclrtSynchronizeStream((aclrtStream)b), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtSynchronizeEvent((aclrtEvent)s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtDestroyEvent(b), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void async_copies(void)
{
    unsigned char src[64], dst[64];
    aclrtStream s = NULL, dead = NULL;
    int i;
    for (i = 0; i < 64; i++) src[i] = (unsigned char)i;
    memset(dst, 0, sizeof dst);
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS); /* streams and copies need a current device */
    CHECK_RT(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_RT(aclrtCreateStream(&dead), ACL_SUCCESS);
    CHECK_RT(aclrtDestroyStream(dead), ACL_SUCCESS);
    /* done by the time the call returns */
    CHECK_RT(aclrtMemcpyAsync(dst, 64, src, 64, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    CHECK(memcmp(dst, src, 64) == 0);
    CHECK_RT(aclrtMemsetAsync(dst, 64, 0x1FF, 16, NULL), ACL_SUCCESS);
    CHECK(dst[0] == 0xFF && dst[15] == 0xFF && dst[16] == 16);
    /* the same checks as the sync calls */
    CHECK_RT(aclrtMemcpyAsync(dst, 8, src, 9, ACL_MEMCPY_DEVICE_TO_HOST, s),
             ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("aclrtMemcpyAsync"));
    CHECK_RT(aclrtMemcpyAsync(dst, 64, src, 4, (aclrtMemcpyKind)99, s), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtMemcpyAsync(NULL, 64, src, 4, ACL_MEMCPY_DEFAULT, s), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtMemcpyAsync(dst, 64, src, 0, ACL_MEMCPY_DEFAULT, s), ACL_SUCCESS);
    CHECK_RT(aclrtMemsetAsync(dst, 4, 0, 5, s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RT(aclrtMemsetAsync(NULL, 4, 0, 4, s), ACL_ERROR_INVALID_PARAM);
    /* a destroyed stream: refused at the call, nothing written */
    memset(dst, 0x33, sizeof dst);
    CHECK_RT(aclrtMemcpyAsync(dst, 64, src, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, dead),
             ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("destroyed"));
    CHECK_RT(aclrtMemsetAsync(dst, 64, 0, 64, dead), ACL_ERROR_RT_PARAM_INVALID);
    for (i = 0; i < 64; i++) CHECK(dst[i] == 0x33);
    CHECK_RT(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void malloc_align32(void)
{
    void *p = NULL;
    CHECK_RT(aclrtSetDevice(0), ACL_SUCCESS); /* allocation needs a current device */
    CHECK_RT(aclrtMallocAlign32(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK(p != NULL && ((uintptr_t)p % 32) == 0);
    memset(p, 1, 100);
    CHECK_RT(aclrtFreeHost(p), ACL_ERROR_RT_PARAM_INVALID); /* device memory */
    CHECK_RT(aclrtFree(p), ACL_SUCCESS);
    CHECK_RT(aclrtMallocAlign32(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_RT(aclrtMallocAlign32(NULL, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
}

static void data_type_sizes(void)
{
    CHECK(aclDataTypeSize(ACL_FLOAT) == 4 && aclDataTypeSize(ACL_FLOAT16) == 2);
    CHECK(aclDataTypeSize(ACL_BF16) == 2 && aclDataTypeSize(ACL_DOUBLE) == 8);
    CHECK(aclDataTypeSize(ACL_INT8) == 1 && aclDataTypeSize(ACL_UINT8) == 1);
    CHECK(aclDataTypeSize(ACL_INT16) == 2 && aclDataTypeSize(ACL_UINT16) == 2);
    CHECK(aclDataTypeSize(ACL_INT32) == 4 && aclDataTypeSize(ACL_UINT32) == 4);
    CHECK(aclDataTypeSize(ACL_INT64) == 8 && aclDataTypeSize(ACL_UINT64) == 8);
    CHECK(aclDataTypeSize(ACL_BOOL) == 1 && aclDataTypeSize(ACL_COMPLEX64) == 8);
    CHECK(aclDataTypeSize(ACL_COMPLEX128) == 16 && aclDataTypeSize(ACL_COMPLEX32) == 4);
    CHECK(aclDataTypeSize(ACL_FLOAT8_E4M3FN) == 1 && aclDataTypeSize(ACL_HIFLOAT8) == 1);
    CHECK(aclDataTypeSize(ACL_STRING) == 0 && aclDataTypeSize(ACL_DT_UNDEFINED) == 0);
    CHECK(aclDataTypeSize(ACL_INT4) == 0 && aclDataTypeSize(ACL_FLOAT4_E2M1) == 0);
    CHECK(aclDataTypeSize((aclDataType)5) == 0 && aclDataTypeSize((aclDataType)1000) == 0);
}

static void float16(void)
{
    uint32_t h;
    CHECK(aclFloatToFloat16(1.0f) == 0x3C00 && aclFloatToFloat16(-2.0f) == 0xC000);
    CHECK(aclFloatToFloat16(65504.0f) == 0x7BFF);
    CHECK(aclFloatToFloat16(65520.0f) == 0x7C00); /* rounds to infinity */
    CHECK(aclFloatToFloat16(INFINITY) == 0x7C00 && aclFloatToFloat16(-INFINITY) == 0xFC00);
    CHECK((aclFloatToFloat16(NAN) & 0x7C00) == 0x7C00 && (aclFloatToFloat16(NAN) & 0x3FF) != 0);
    CHECK(aclFloatToFloat16(5.9604644775390625e-8f) == 0x0001); /* smallest subnormal */
    CHECK(aclFloatToFloat16(2.98e-8f) == 0x0000);
    /* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
    CHECK(aclFloatToFloat16(1.0f + 0x1p-11f) == 0x3C00);
    CHECK(aclFloatToFloat16(1.0f + 3 * 0x1p-11f) == 0x3C02);
    CHECK(aclFloat16ToFloat(0x3C00) == 1.0f && aclFloat16ToFloat(0xC000) == -2.0f);
    CHECK(aclFloat16ToFloat(0x0001) == 5.9604644775390625e-8f);
    CHECK(isinf(aclFloat16ToFloat(0x7C00)) && isnan(aclFloat16ToFloat(0x7E00)));
    /* every finite half survives the round trip */
    for (h = 0; h < 0x10000; h++) {
        aclFloat16 v = (aclFloat16)h;
        if ((h & 0x7C00) == 0x7C00) continue;
        CHECK_MSG(aclFloatToFloat16(aclFloat16ToFloat(v)) == v, "0x%04x", (unsigned)h);
    }
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(codes_and_enums), SBN_TEST_CASE(contexts),     SBN_TEST_CASE(device_queries),
    SBN_TEST_CASE(streams),         SBN_TEST_CASE(events),       SBN_TEST_CASE(async_copies),
    SBN_TEST_CASE(malloc_align32),  SBN_TEST_CASE(data_type_sizes), SBN_TEST_CASE(float16),
};

SBN_TEST_MAIN(cases)
