/*
 * test_acl_no_device.c - the runtime calls CANN refuses on a host thread without a
 * current context (ACL_ERROR_RT_CONTEXT_NULL, 107002), one case per call. Each
 * call runs on a fresh pthread that never called aclrtSetDevice, and again on a
 * fresh thread that set device 0 and reset it (aclrtResetDevice leaves no
 * context): it must return 107002 with an aclGetRecentErrMsg sentence naming the
 * call and saying "call aclrtSetDevice first", and do nothing (no handle or
 * pointer returned, no byte written). The same thread then calls aclrtSetDevice(0)
 * and the same call succeeds, so the refusal is only about the missing context.
 * Argument errors still come first (a NULL output is 100000 with or without a
 * device), a copy or set of 0 bytes still succeeds, the frees and the use of
 * existing streams need no device, and a thread that made another thread's
 * context current (aclrtSetCurrentContext) has one. A current context destroyed
 * by another thread is none: the create calls, aclrtGetCurrentContext and
 * aclrtGetDevice all refuse with 107002.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "harness/harness.h"

#define NBYTES 64

/* One call under test, in the thread that runs it. */
typedef struct job job;
typedef aclError (*call_fn)(job *j);
struct job {
    call_fn call;
    int reset_first;            /* set device 0 and reset it before the call */
    aclError refused, allowed;  /* without a context / after aclrtSetDevice(0) */
    int untouched;              /* the refused call left its outputs alone */
    int cleanup_failed;
    char msg[512];              /* aclGetRecentErrMsg() after the refused call */
    /* state for the calls */
    void *out;                  /* handle or pointer the call returns */
    unsigned char dst[NBYTES], src[NBYTES];
    size_t mem_free, mem_total;
};

static void *run_job(void *arg)
{
    job *j = (job *)arg;
    const char *m;
    if (j->reset_first &&
        (aclrtSetDevice(0) != ACL_SUCCESS || aclrtResetDevice(0) != ACL_SUCCESS)) {
        j->cleanup_failed = 1;
        return NULL;
    }
    /* without a context: refused, nothing done */
    j->out = NULL;
    memset(j->dst, 0x33, sizeof j->dst);
    j->mem_free = j->mem_total = 7;
    j->refused = j->call(j);
    m = aclGetRecentErrMsg();
    snprintf(j->msg, sizeof j->msg, "%s", m != NULL ? m : "");
    j->untouched = j->out == NULL && j->dst[0] == 0x33 && j->dst[NBYTES - 1] == 0x33 &&
                   j->mem_free == 7 && j->mem_total == 7;
    /* with one: the same call succeeds */
    if (aclrtSetDevice(0) != ACL_SUCCESS) {
        j->cleanup_failed = 1;
        return NULL;
    }
    j->allowed = j->call(j);
    if (aclrtResetDevice(0) != ACL_SUCCESS) j->cleanup_failed = 1;
    return NULL;
}

/* Runs call on a fresh thread (never set a device, then set and reset) and checks it. */
static void expect_context_null(call_fn call, const char *op)
{
    int reset_first;
    for (reset_first = 0; reset_first < 2; reset_first++) {
        static job j;
        pthread_t th;
        memset(&j, 0, sizeof j);
        j.call = call;
        j.reset_first = reset_first;
        j.refused = j.allowed = -1;
        CHECK(pthread_create(&th, NULL, run_job, &j) == 0);
        pthread_join(th, NULL);
        CHECK_MSG(j.refused == ACL_ERROR_RT_CONTEXT_NULL, "%s%s: %d, want 107002", op,
                  reset_first ? " after aclrtResetDevice" : "", (int)j.refused);
        CHECK_MSG(strstr(j.msg, op) != NULL && strstr(j.msg, "call aclrtSetDevice first") != NULL,
                  "%s: message \"%s\"", op, j.msg);
        CHECK_MSG(j.untouched, "%s: the refused call returned or wrote something", op);
        CHECK_MSG(j.allowed == ACL_SUCCESS, "%s after aclrtSetDevice(0): %d", op, (int)j.allowed);
        CHECK(!j.cleanup_failed);
    }
}

/* ---- the calls: each returns its code and, on success, releases what it made ---- */

static aclError create_stream(job *j)
{
    aclError r = aclrtCreateStream((aclrtStream *)&j->out);
    if (r == ACL_SUCCESS && aclrtDestroyStream(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError create_stream_with_config(job *j)
{
    aclError r = aclrtCreateStreamWithConfig((aclrtStream *)&j->out, 0, ACL_STREAM_FAST_LAUNCH);
    if (r == ACL_SUCCESS && aclrtDestroyStream(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError create_event(job *j)
{
    aclError r = aclrtCreateEvent((aclrtEvent *)&j->out);
    if (r == ACL_SUCCESS && aclrtDestroyEvent(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError create_event_with_flag(job *j)
{
    aclError r = aclrtCreateEventWithFlag((aclrtEvent *)&j->out, ACL_EVENT_TIME_LINE);
    if (r == ACL_SUCCESS && aclrtDestroyEvent(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError malloc_device(job *j)
{
    aclError r = aclrtMalloc(&j->out, NBYTES, ACL_MEM_MALLOC_HUGE_FIRST);
    if (r == ACL_SUCCESS && aclrtFree(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError malloc_align32(job *j)
{
    aclError r = aclrtMallocAlign32(&j->out, NBYTES, ACL_MEM_MALLOC_NORMAL_ONLY);
    if (r == ACL_SUCCESS && aclrtFree(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError malloc_host(job *j)
{
    aclError r = aclrtMallocHost(&j->out, NBYTES);
    if (r == ACL_SUCCESS && aclrtFreeHost(j->out) != ACL_SUCCESS) j->cleanup_failed = 1;
    return r;
}

static aclError memcpy_sync(job *j)
{
    memset(j->src, 0x5a, sizeof j->src);
    return aclrtMemcpy(j->dst, sizeof j->dst, j->src, sizeof j->src, ACL_MEMCPY_HOST_TO_DEVICE);
}

static aclError memcpy_async(job *j)
{
    memset(j->src, 0x5a, sizeof j->src);
    return aclrtMemcpyAsync(j->dst, sizeof j->dst, j->src, sizeof j->src,
                            ACL_MEMCPY_DEVICE_TO_HOST, NULL);
}

static aclError memset_sync(job *j)
{
    return aclrtMemset(j->dst, sizeof j->dst, 0, sizeof j->dst);
}

static aclError memset_async(job *j)
{
    return aclrtMemsetAsync(j->dst, sizeof j->dst, 0, sizeof j->dst, NULL);
}

static aclError synchronize_device(job *j)
{
    (void)j;
    return aclrtSynchronizeDevice();
}

static aclError get_current_context(job *j)
{
    return aclrtGetCurrentContext((aclrtContext *)&j->out);
}

static aclError get_mem_info(job *j)
{
    return aclrtGetMemInfo(ACL_HBM_MEM, &j->mem_free, &j->mem_total);
}

/* ---- one case per refused call ---- */

static void no_device_create_stream(void)
{
    expect_context_null(create_stream, "aclrtCreateStream");
}

static void no_device_create_stream_with_config(void)
{
    expect_context_null(create_stream_with_config, "aclrtCreateStreamWithConfig");
}

static void no_device_create_event(void)
{
    expect_context_null(create_event, "aclrtCreateEvent");
}

static void no_device_create_event_with_flag(void)
{
    expect_context_null(create_event_with_flag, "aclrtCreateEventWithFlag");
}

static void no_device_malloc(void)
{
    expect_context_null(malloc_device, "aclrtMalloc");
}

static void no_device_malloc_align32(void)
{
    expect_context_null(malloc_align32, "aclrtMallocAlign32");
}

static void no_device_malloc_host(void)
{
    expect_context_null(malloc_host, "aclrtMallocHost");
}

static void no_device_memcpy(void)
{
    expect_context_null(memcpy_sync, "aclrtMemcpy");
}

static void no_device_memcpy_async(void)
{
    expect_context_null(memcpy_async, "aclrtMemcpyAsync");
}

static void no_device_memset(void)
{
    expect_context_null(memset_sync, "aclrtMemset");
}

static void no_device_memset_async(void)
{
    expect_context_null(memset_async, "aclrtMemsetAsync");
}

static void no_device_synchronize_device(void)
{
    expect_context_null(synchronize_device, "aclrtSynchronizeDevice");
}

static void no_device_get_current_context(void)
{
    expect_context_null(get_current_context, "aclrtGetCurrentContext");
}

static void no_device_get_mem_info(void)
{
    expect_context_null(get_mem_info, "aclrtGetMemInfo");
}

/* ---- what still works without a context ---- */

typedef struct still_works {
    void *dev, *host;
    aclrtStream stream;
    aclrtContext ctx;
    int args_first, zero_bytes, frees, stream_use, ctx_current;
} still_works;

static void *without_context(void *arg)
{
    still_works *w = (still_works *)arg;
    unsigned char buf[8] = {0};
    size_t mem_free = 0, mem_total = 0;
    aclrtStream s = NULL;
    aclrtEvent e = NULL;
    void *p = NULL;
    aclrtContext cur = NULL;
    /* argument errors are found before the missing context, as in CANN */
    w->args_first = aclrtCreateStream(NULL) == ACL_ERROR_INVALID_PARAM &&
                    aclrtCreateEventWithFlag(&e, 0x4) == ACL_ERROR_INVALID_PARAM &&
                    aclrtCreateStreamWithConfig(&s, 0, 0x100) == ACL_ERROR_INVALID_PARAM &&
                    aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_INVALID_PARAM &&
                    aclrtMallocHost(NULL, 8) == ACL_ERROR_INVALID_PARAM &&
                    aclrtMemcpy(buf, 4, buf, 8, ACL_MEMCPY_HOST_TO_HOST) ==
                        ACL_ERROR_RT_PARAM_INVALID &&
                    aclrtMemcpy(buf, 8, buf, 8, (aclrtMemcpyKind)99) == ACL_ERROR_INVALID_PARAM &&
                    aclrtMemset(NULL, 8, 0, 8) == ACL_ERROR_INVALID_PARAM &&
                    aclrtGetMemInfo((aclrtMemAttr)18, &mem_free, &mem_total) ==
                        ACL_ERROR_INVALID_PARAM &&
                    aclrtGetMemInfo(ACL_DDR_MEM, NULL, &mem_total) == ACL_ERROR_INVALID_PARAM &&
                    aclrtGetCurrentContext(NULL) == ACL_ERROR_INVALID_PARAM && s == NULL &&
                    e == NULL && p == NULL;
    /* 0 bytes are done at once */
    w->zero_bytes = aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_HOST_TO_HOST) == ACL_SUCCESS &&
                    aclrtMemset(NULL, 0, 0, 0) == ACL_SUCCESS &&
                    aclrtMemcpyAsync(buf, 8, buf, 0, ACL_MEMCPY_DEFAULT, NULL) == ACL_SUCCESS;
    /* memory from another thread is freed, its stream used and destroyed */
    w->frees = aclrtFree(w->dev) == ACL_SUCCESS && aclrtFreeHost(w->host) == ACL_SUCCESS;
    w->stream_use = aclrtSynchronizeStream(w->stream) == ACL_SUCCESS &&
                    aclrtDestroyStream(w->stream) == ACL_SUCCESS;
    /* another thread's context made current is a current context */
    w->ctx_current = aclrtSetCurrentContext(w->ctx) == ACL_SUCCESS &&
                     aclrtGetCurrentContext(&cur) == ACL_SUCCESS && cur == w->ctx &&
                     aclrtCreateStream(&s) == ACL_SUCCESS && aclrtDestroyStream(s) == ACL_SUCCESS &&
                     aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS &&
                     aclrtFree(p) == ACL_SUCCESS;
    return NULL;
}

static void what_works_without_a_context(void)
{
    static still_works w;
    pthread_t th;
    memset(&w, 0, sizeof w);
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS);
    CHECK(aclrtMalloc(&w.dev, 16, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    CHECK(aclrtMallocHost(&w.host, 16) == ACL_SUCCESS);
    CHECK(aclrtCreateStream(&w.stream) == ACL_SUCCESS);
    CHECK(aclrtCreateContext(&w.ctx, 0) == ACL_SUCCESS);
    CHECK(pthread_create(&th, NULL, without_context, &w) == 0);
    pthread_join(th, NULL);
    CHECK(w.args_first);
    CHECK(w.zero_bytes);
    CHECK(w.frees);
    CHECK(w.stream_use);
    CHECK(w.ctx_current);
    CHECK(aclrtDestroyContext(w.ctx) == ACL_SUCCESS);
}

typedef struct destroy_job {
    aclrtContext ctx;
    aclError ret;
} destroy_job;

static void *destroy_context(void *arg)
{
    destroy_job *d = (destroy_job *)arg;
    d->ret = aclrtDestroyContext(d->ctx);
    return NULL;
}

/*
 * A current context destroyed (here, or by another thread while it is still current
 * here) is no context: the calls refuse as without a device.
 */
static void destroyed_context_is_none(void)
{
    destroy_job other = {NULL, -1};
    aclrtContext ctx = NULL;
    aclrtStream s = NULL;
    void *p = NULL;
    unsigned char buf[8] = {0};
    pthread_t th;
    CHECK(aclrtCreateContext(&ctx, 0) == ACL_SUCCESS);
    CHECK(aclrtCreateStream(&s) == ACL_SUCCESS);
    CHECK(aclrtDestroyStream(s) == ACL_SUCCESS);
    CHECK(aclrtDestroyContext(ctx) == ACL_SUCCESS);
    s = NULL;
    CHECK(aclrtCreateStream(&s) == ACL_ERROR_RT_CONTEXT_NULL && s == NULL);
    CHECK(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_RT_CONTEXT_NULL && p == NULL);
    /* destroyed by another thread while current here */
    CHECK(aclrtCreateContext(&ctx, 0) == ACL_SUCCESS);
    CHECK(aclrtMemset(buf, 8, 1, 8) == ACL_SUCCESS && buf[7] == 1);
    other.ctx = ctx;
    CHECK(pthread_create(&th, NULL, destroy_context, &other) == 0);
    pthread_join(th, NULL);
    CHECK(other.ret == ACL_SUCCESS);
    CHECK(aclrtMemset(buf, 8, 2, 8) == ACL_ERROR_RT_CONTEXT_NULL && buf[7] == 1);
    CHECK(aclrtCreateEvent((aclrtEvent *)&p) == ACL_ERROR_RT_CONTEXT_NULL && p == NULL);
    CHECK(aclrtSynchronizeDevice() == ACL_ERROR_RT_CONTEXT_NULL);
    {   /* the device query agrees with the context query: neither is current */
        int32_t dev = 77;
        aclrtContext cur = NULL;
        CHECK(aclrtGetCurrentContext(&cur) == ACL_ERROR_RT_CONTEXT_NULL && cur == NULL);
        CHECK(aclrtGetDevice(&dev) == ACL_ERROR_RT_CONTEXT_NULL && dev == 77);
    }
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS);
    CHECK(aclrtMemset(buf, 8, 2, 8) == ACL_SUCCESS && buf[7] == 2);
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(no_device_create_stream),
    SBN_TEST_CASE(no_device_create_stream_with_config),
    SBN_TEST_CASE(no_device_create_event),
    SBN_TEST_CASE(no_device_create_event_with_flag),
    SBN_TEST_CASE(no_device_malloc),
    SBN_TEST_CASE(no_device_malloc_align32),
    SBN_TEST_CASE(no_device_malloc_host),
    SBN_TEST_CASE(no_device_memcpy),
    SBN_TEST_CASE(no_device_memcpy_async),
    SBN_TEST_CASE(no_device_memset),
    SBN_TEST_CASE(no_device_memset_async),
    SBN_TEST_CASE(no_device_synchronize_device),
    SBN_TEST_CASE(no_device_get_current_context),
    SBN_TEST_CASE(no_device_get_mem_info),
    SBN_TEST_CASE(what_works_without_a_context),
    SBN_TEST_CASE(destroyed_context_is_none),
};

SBN_TEST_MAIN(cases)
