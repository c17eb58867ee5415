/*
 * test_acl_runtime.c - the acl runtime of acl/acl.h on a CPU: the error code and
 * enum values (CANN's), aclInit/aclFinalize (repeat codes, init again after
 * finalize), devices (per thread, negative ids, GetDevice before SetDevice),
 * aclInit's JSON config file (good, empty, bad JSON and bad syncbn settings),
 * streams (create, synchronize, destroy, unknown and NULL handles), memory
 * (alignment, every policy, size 0, NULL, double free, foreign pointers, host vs
 * device frees, allocation failure through the allocator hook), aclrtMemcpy in
 * every kind with the destMax check, count 0, overlap and bad kinds, aclrtMemset
 * with its maxCount check, and aclGetRecentErrMsg: NULL when nothing failed,
 * returned and cleared, per thread, the pointer valid until the next call. The
 * cases that create streams, allocate, copy or set call aclrtSetDevice(0) first, as
 * CANN requires (tests/test_acl_no_device.c covers the refusals without it).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn_support.h"
#include "harness/harness.h"
#include "support/alloc_counter.h"
#include "syncbn/syncbn.h"

static void codes_and_enums(void)
{
    CHECK(ACL_SUCCESS == 0 && ACL_ERROR_NONE == 0);
    CHECK(ACL_ERROR_INVALID_PARAM == 100000 && ACL_ERROR_UNINITIALIZE == 100001);
    CHECK(ACL_ERROR_REPEAT_INITIALIZE == 100002 && ACL_ERROR_REPEAT_FINALIZE == 100037);
    CHECK(ACL_ERROR_BAD_ALLOC == 200000 && ACL_ERROR_INTERNAL_ERROR == 500000);
    CHECK(ACL_ERROR_RT_PARAM_INVALID == 107000 && ACL_ERROR_RT_INVALID_DEVICEID == 107001);
    CHECK(ACL_ERROR_RT_CONTEXT_NULL == 107002 && ACL_ERROR_RT_MEMORY_ALLOCATION == 207001);
    CHECK(ACL_MEM_MALLOC_HUGE_FIRST == 0 && ACL_MEM_MALLOC_HUGE_ONLY == 1);
    CHECK(ACL_MEM_MALLOC_NORMAL_ONLY == 2 && ACL_MEM_MALLOC_NORMAL_ONLY_P2P == 5);
    CHECK(ACL_MEM_TYPE_LOW_BAND_WIDTH == 0x100 && ACL_MEM_TYPE_HIGH_BAND_WIDTH == 0x1000);
    CHECK(ACL_MEMCPY_HOST_TO_HOST == 0 && ACL_MEMCPY_HOST_TO_DEVICE == 1);
    CHECK(ACL_MEMCPY_DEVICE_TO_HOST == 2 && ACL_MEMCPY_DEVICE_TO_DEVICE == 3);
    CHECK(ACL_MEMCPY_DEFAULT == 4);
}

static void init_and_finalize(void)
{
    CHECK_ACL(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    CHECK(atsup_msg_has("aclFinalize"));
    CHECK_ACL(aclInit(NULL), ACL_SUCCESS);
    CHECK_ACL(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK(atsup_msg_has("aclInit"));
    CHECK_ACL(aclFinalize(), ACL_SUCCESS);
    CHECK_ACL(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    /* a config path that cannot be opened: CANN's code, and nothing initialised */
    CHECK_ACL(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
    CHECK(atsup_msg_has("/nonexistent/acl.json"));
    CHECK_ACL(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    CHECK_ACL(aclInit(""), ACL_SUCCESS);
    CHECK_ACL(aclFinalize(), ACL_SUCCESS);
}

/* aclInit(path) of a file holding text; the file is removed afterwards. */
static aclError init_with_text(const char *text)
{
    char path[64];
    FILE *f;
    aclError ret;
    snprintf(path, sizeof path, "/tmp/sbn_acl_cfg_%d.json", (int)getpid());
    f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs(text, f);
    fclose(f);
    ret = aclInit(path);
    unlink(path);
    return ret;
}

static void config_file(void)
{
    static const struct {
        const char *text;
        aclError want;
        const char *word; /* in the message */
    } cases[] = {
        {"", ACL_SUCCESS, NULL},
        {"{}", ACL_SUCCESS, NULL},
        {" {\"dump\": {\"dump_list\": [1, 2.5e3, -0.5, true, null, \"a\\u00e9\\n\"]}} ",
         ACL_SUCCESS, NULL},
        {"{\"syncbn\": {\"num_threads\": 3, \"other\": [1]}}", ACL_SUCCESS, NULL},
        {"{\"x\": {\"syncbn\": 5}}", ACL_SUCCESS, NULL}, /* only the top-level key counts */
        {"{", ACL_ERROR_PARSE_FILE, "not valid JSON"},
        {"{\"a\": 1,}", ACL_ERROR_PARSE_FILE, "not valid JSON"},
        {"{\"a\": 01}", ACL_ERROR_PARSE_FILE, "not valid JSON"},
        {"{\"a\": \"\\q\"}", ACL_ERROR_PARSE_FILE, "escape"},
        {"{\"a\": tru}", ACL_ERROR_PARSE_FILE, "not valid JSON"},
        {"{} {}", ACL_ERROR_PARSE_FILE, "follows"},
        {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]"
         "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
         ACL_ERROR_PARSE_FILE, "deeper"},
        {"{\"syncbn\": 4}", ACL_ERROR_FILE_ATTR_INVALID, "\"syncbn\" must be an object"},
        {"{\"syncbn\": {\"num_threads\": 0}}", ACL_ERROR_FILE_ATTR_INVALID, "num_threads"},
        {"{\"syncbn\": {\"num_threads\": 1025}}", ACL_ERROR_FILE_ATTR_INVALID, "1 to 1024"},
        {"{\"syncbn\": {\"num_threads\": 2.5}}", ACL_ERROR_FILE_ATTR_INVALID, "num_threads"},
        {"{\"syncbn\": {\"num_threads\": -2}}", ACL_ERROR_FILE_ATTR_INVALID, "num_threads"},
        {"{\"syncbn\": {\"num_threads\": \"2\"}}", ACL_ERROR_FILE_ATTR_INVALID, "num_threads"},
    };
    size_t k;
    CHECK(ACL_ERROR_INVALID_FILE == 100003 && ACL_ERROR_PARSE_FILE == 100006);
    CHECK(ACL_ERROR_FILE_ATTR_INVALID == 100008);
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        aclError got = init_with_text(cases[k].text);
        CHECK_MSG(got == cases[k].want, "config %zu (%s): %d, expected %d (%s)", k,
                  cases[k].text, got, cases[k].want, atsup_msg());
        if (cases[k].word != NULL) {
            CHECK(atsup_msg_has(cases[k].word));
            /* a bad file initialises nothing */
            CHECK_ACL(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
        } else {
            CHECK_ACL(aclFinalize(), ACL_SUCCESS);
        }
    }
}

static void *get_device_in_thread(void *arg)
{
    int32_t id = 1234;
    *(aclError *)arg = aclrtGetDevice(&id);
    return NULL;
}

static void devices(void)
{
    int32_t id = -7;
    pthread_t th;
    aclError other = ACL_SUCCESS;
    CHECK_ACL(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(atsup_msg_has("aclrtSetDevice"));
    CHECK_ACL(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_ACL(aclrtResetDevice(-2), ACL_ERROR_RT_INVALID_DEVICEID);
    /* no aclInit needed */
    CHECK_ACL(aclrtSetDevice(3), ACL_SUCCESS);
    CHECK_ACL(aclrtGetDevice(&id), ACL_SUCCESS);
    CHECK(id == 3);
    /* the current device belongs to the thread */
    CHECK(pthread_create(&th, NULL, get_device_in_thread, &other) == 0);
    pthread_join(th, NULL);
    CHECK(other == ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_ACL(aclrtGetDevice(&id), ACL_SUCCESS);
    CHECK(id == 0);
    CHECK_ACL(aclrtResetDevice(3), ACL_SUCCESS); /* not current: current stays 0 */
    CHECK_ACL(aclrtGetDevice(&id), ACL_SUCCESS);
    CHECK(id == 0);
    CHECK_ACL(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_ACL(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
}

static void streams(void)
{
    aclrtStream s = NULL, t = NULL;
    int local = 0;
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS); /* streams need a current device */
    CHECK_ACL(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_ACL(aclrtCreateStream(&t), ACL_SUCCESS);
    CHECK(s != NULL && t != NULL && s != t);
    CHECK_ACL(aclrtSynchronizeStream(s), ACL_SUCCESS);
    CHECK_ACL(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
    CHECK_ACL(aclrtSynchronizeStream(&local), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtDestroyStream(&local), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("aclrtDestroyStream"));
    CHECK_ACL(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtDestroyStream(s), ACL_SUCCESS);
    CHECK_ACL(aclrtDestroyStream(s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtSynchronizeStream(t), ACL_SUCCESS);
    CHECK_ACL(aclrtDestroyStream(t), ACL_SUCCESS);
}

static void memory_alloc_and_free(void)
{
    static const aclrtMemMallocPolicy policies[] = {
        ACL_MEM_MALLOC_HUGE_FIRST,     ACL_MEM_MALLOC_HUGE_ONLY,
        ACL_MEM_MALLOC_NORMAL_ONLY,    ACL_MEM_MALLOC_HUGE_FIRST_P2P,
        ACL_MEM_MALLOC_HUGE_ONLY_P2P,  ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
        ACL_MEM_TYPE_LOW_BAND_WIDTH,   ACL_MEM_TYPE_HIGH_BAND_WIDTH};
    void *p[8], *h = NULL, *q = NULL;
    int i, local = 0;
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS); /* allocation needs a current device */
    for (i = 0; i < 8; i++) {
        p[i] = NULL;
        CHECK_ACL(aclrtMalloc(&p[i], (size_t)(1 + 37 * i), policies[i]), ACL_SUCCESS);
        CHECK(p[i] != NULL && (uintptr_t)p[i] % 64 == 0);
        memset(p[i], 0x5a, (size_t)(1 + 37 * i)); /* ASan: the whole size is usable */
    }
    CHECK_ACL(aclrtMalloc(&q, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(atsup_msg_has("size is 0"));
    CHECK_ACL(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtMalloc(&q, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK_ACL(aclrtMallocHost(&h, 100), ACL_SUCCESS);
    CHECK(h != NULL && (uintptr_t)h % 64 == 0);
    CHECK_ACL(aclrtMallocHost(&q, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtMallocHost(NULL, 4), ACL_ERROR_INVALID_PARAM);
    /* wrong free function, foreign pointer, NULL, twice */
    CHECK_ACL(aclrtFree(h), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("aclrtFreeHost"));
    CHECK_ACL(aclrtFreeHost(p[0]), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtFree(&local), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtFree((char *)p[1] + 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_ACL(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM);
    for (i = 0; i < 8; i++) CHECK_ACL(aclrtFree(p[i]), ACL_SUCCESS);
    CHECK_ACL(aclrtFree(p[3]), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("already freed"));
    CHECK_ACL(aclrtFreeHost(h), ACL_SUCCESS);
    CHECK_ACL(aclrtFreeHost(h), ACL_ERROR_RT_PARAM_INVALID);
}

static void memory_many_allocations(void)
{
    enum { N = 2000 };
    void **p = calloc(N, sizeof *p);
    int i;
    CHECK(p != NULL);
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS);
    for (i = 0; i < N; i++)
        CHECK_ACL(aclrtMalloc(&p[i], 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    for (i = N - 1; i >= 0; i -= 2) CHECK_ACL(aclrtFree(p[i]), ACL_SUCCESS);
    for (i = 0; i < N; i += 2) CHECK_ACL(aclrtFree(p[i]), ACL_SUCCESS);
    free(p);
}

static void memory_through_allocator_hook(void)
{
    tsup_counter c = {.fail_at = 1};
    void *p = NULL;
    aclrtStream s = NULL;
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS); /* before the hook: its context is not counted */
    tsup_counter_install(&c);
    CHECK_ACL(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(atsup_msg_has("out of memory"));
    c.fail_at = 2;
    CHECK_ACL(aclrtCreateStream(&s), ACL_ERROR_RT_MEMORY_ALLOCATION);
    c.fail_at = 0;
    CHECK_ACL(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK(c.live == 1);
    CHECK_ACL(aclrtFree(p), ACL_SUCCESS);
    sbn_set_allocator(NULL, NULL, NULL);
    CHECK(c.live == 0);
}

static void memcpy_kinds_and_checks(void)
{
    static const aclrtMemcpyKind kinds[] = {ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                                            ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE,
                                            ACL_MEMCPY_DEFAULT};
    unsigned char host[32], back[32];
    void *dev = NULL, *dev2 = NULL;
    int i, k;
    for (i = 0; i < 32; i++) host[i] = (unsigned char)(i * 7 + 1);
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_ACL(aclrtMalloc(&dev, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_ACL(aclrtMalloc(&dev2, 32, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    for (k = 0; k < 5; k++) {
        memset(dev, 0, 32), memset(dev2, 0, 32), memset(back, 0, 32);
        CHECK_ACL(aclrtMemcpy(dev, 32, host, 32, kinds[k]), ACL_SUCCESS);
        CHECK_ACL(aclrtMemcpy(dev2, 32, dev, 32, kinds[k]), ACL_SUCCESS);
        CHECK_ACL(aclrtMemcpy(back, sizeof back, dev2, 32, kinds[k]), ACL_SUCCESS);
        CHECK_MSG(memcmp(back, host, 32) == 0, "kind %d: round trip differs", (int)kinds[k]);
    }
    /* the destination-size check: nothing is written */
    memset(back, 0xee, sizeof back);
    CHECK_ACL(aclrtMemcpy(back, 16, dev, 17, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("destMax"));
    CHECK(back[0] == 0xee && back[16] == 0xee);
    CHECK_ACL(aclrtMemcpy(back, 16, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(back[15] == host[15] && back[16] == 0xee);
    /* count 0 succeeds even with NULL pointers; NULL with a count does not */
    CHECK_ACL(aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    CHECK_ACL(aclrtMemcpy(NULL, 8, host, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtMemcpy(dev, 8, NULL, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtMemcpy(dev, 8, host, 8, (aclrtMemcpyKind)99), ACL_ERROR_INVALID_PARAM);
    CHECK(atsup_msg_has("kind 99"));
    /* overlapping ranges are copied as if through a temporary */
    memcpy(back, host, 32);
    CHECK_ACL(aclrtMemcpy(back + 4, 28, back, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    CHECK(memcmp(back + 4, host, 16) == 0);
    CHECK_ACL(aclrtFree(dev), ACL_SUCCESS);
    CHECK_ACL(aclrtFree(dev2), ACL_SUCCESS);
}

static void memset_checks(void)
{
    unsigned char buf[16];
    int i;
    memset(buf, 0, sizeof buf);
    CHECK_ACL(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_ACL(aclrtMemset(buf, sizeof buf, 0xab, 10), ACL_SUCCESS);
    for (i = 0; i < 16; i++) CHECK(buf[i] == (i < 10 ? 0xab : 0));
    CHECK_ACL(aclrtMemset(buf, sizeof buf, 0x1ff, 2), ACL_SUCCESS); /* low byte */
    CHECK(buf[0] == 0xff && buf[1] == 0xff && buf[2] == 0xab);
    CHECK_ACL(aclrtMemset(buf, 8, 0, 9), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(atsup_msg_has("maxCount"));
    CHECK(buf[0] == 0xff);
    CHECK_ACL(aclrtMemset(NULL, 0, 0, 0), ACL_SUCCESS);
    CHECK_ACL(aclrtMemset(NULL, 8, 0, 8), ACL_ERROR_INVALID_PARAM);
}

static void *fail_in_thread(void *arg)
{
    const char **out = arg;
    out[0] = aclGetRecentErrMsg(); /* nothing failed on this thread */
    aclrtFree(NULL);
    out[1] = aclGetRecentErrMsg();
    out[2] = out[1] ? strdup(out[1]) : NULL;
    return NULL;
}

static void recent_error_message(void)
{
    const char *first, *in_thread[3] = {"x", NULL, NULL};
    pthread_t th;
    char copy[256];
    CHECK(aclGetRecentErrMsg() == NULL);
    CHECK_ACL(aclrtMemset(NULL, 8, 0, 8), ACL_ERROR_INVALID_PARAM);
    /* another thread sees neither this message nor leaves its own here */
    CHECK(pthread_create(&th, NULL, fail_in_thread, (void *)in_thread) == 0);
    pthread_join(th, NULL);
    CHECK(in_thread[0] == NULL);
    CHECK(in_thread[2] != NULL && strstr(in_thread[2], "aclrtFree") != NULL);
    free((void *)(uintptr_t)in_thread[2]);
    first = aclGetRecentErrMsg();
    CHECK(first != NULL && strstr(first, "aclrtMemset") != NULL && strstr(first, "devPtr"));
    snprintf(copy, sizeof copy, "%s", first);
    /* a success does not clear it; a new failure does not overwrite the returned text */
    CHECK_ACL(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(strcmp(first, copy) == 0);
    CHECK(atsup_msg_has("aclrtFree"));
    CHECK(aclGetRecentErrMsg() == NULL);
    CHECK_ACL(aclrtMemset(NULL, 8, 0, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_ACL(aclrtMemset(NULL, 0, 0, 0), ACL_SUCCESS);
    CHECK(atsup_msg_has("aclrtMemset"));
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(codes_and_enums),
    SBN_TEST_CASE(init_and_finalize),
    SBN_TEST_CASE(config_file),
    SBN_TEST_CASE(devices),
    SBN_TEST_CASE(streams),
    SBN_TEST_CASE(memory_alloc_and_free),
    SBN_TEST_CASE(memory_many_allocations),
    SBN_TEST_CASE(memory_through_allocator_hook),
    SBN_TEST_CASE(memcpy_kinds_and_checks),
    SBN_TEST_CASE(memset_checks),
    SBN_TEST_CASE(recent_error_message),
};

SBN_TEST_MAIN(k_cases)
