/*
 * acl_runtime.c - the acl runtime calls of acl/acl.h with their CPU meaning.
 * aclInit/aclFinalize keep a process flag (a second aclInit returns
 * ACL_ERROR_REPEAT_INITIALIZE, a second aclFinalize ACL_ERROR_REPEAT_FINALIZE,
 * and aclInit may follow aclFinalize, as in CANN); the other calls do not
 * require aclInit, since nothing on a CPU depends on it. A device id >= 0 names
 * the CPU; the current device is per thread, as CANN's context is. Streams are
 * handles of the shared object registry (aclnn_handles.c): an unknown or destroyed
 * one is refused, never dereferenced, and a handle is never reused. Memory from
 * aclrtMalloc/aclrtMallocHost is 64-byte aligned, taken through sbn__malloc (so
 * the allocator hook sees it), and registered in a hash table keyed by address,
 * so that freeing an unknown pointer, a pointer twice or with the wrong free
 * function is refused instead of crashing. Argument rules and codes follow
 * CANN's runtime: NULL pointers and size 0 in malloc give ACL_ERROR_INVALID_PARAM,
 * a copy or set of 0 bytes succeeds at once, count > destMax gives
 * ACL_ERROR_RT_PARAM_INVALID, an unknown copy kind ACL_ERROR_INVALID_PARAM, a
 * failed allocation ACL_ERROR_RT_MEMORY_ALLOCATION. Failures leave a message for
 * aclGetRecentErrMsg().
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define SBN_ACL_MEM_ALIGN 64
#define SBN_ACL_MEM_BUCKETS 256
#define SBN_ACL_STREAM_MAGIC 0x53424e5354524d53ull /* "SBNSTRMS" */

static pthread_mutex_t g_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static _Thread_local int32_t g_device = -1;
static int64_t g_device_refs; /* aclrtSetDevice calls not yet reset, all devices together */

/* ---- process ---- */

/* Sets the process flag to `to` unless it already holds it: then `repeat` (with why). */
static aclError set_initialized(int to, aclError repeat, const char *op, const char *why)
{
    int changed;
    pthread_mutex_lock(&g_rt_lock);
    changed = g_initialized != to;
    g_initialized = to;
    pthread_mutex_unlock(&g_rt_lock);
    return changed ? ACL_SUCCESS : sbn__acl_fail(repeat, op, "%s", why);
}

SBN_API aclError aclInit(const char *configPath)
{
    (void)configPath; /* no acl.json setting has a CPU meaning */
    return set_initialized(1, ACL_ERROR_REPEAT_INITIALIZE, "aclInit",
                           "aclInit was already called (call aclFinalize first)");
}

SBN_API aclError aclFinalize(void)
{
    return set_initialized(0, ACL_ERROR_REPEAT_FINALIZE, "aclFinalize",
                           "aclFinalize without a matching aclInit");
}

/* ---- devices ---- */

/* Any device id >= 0 names the CPU. */
static aclError check_device_id(const char *op, int32_t deviceId)
{
    if (deviceId >= 0) return ACL_SUCCESS;
    return sbn__acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, op, "device id %d is negative",
                         (int)deviceId);
}

SBN_API aclError aclrtSetDevice(int32_t deviceId)
{
    aclError ret = check_device_id("aclrtSetDevice", deviceId);
    if (ret != ACL_SUCCESS) return ret;
    pthread_mutex_lock(&g_rt_lock);
    g_device_refs++;
    pthread_mutex_unlock(&g_rt_lock);
    g_device = deviceId;
    return ACL_SUCCESS;
}

SBN_API aclError aclrtResetDevice(int32_t deviceId)
{
    aclError ret = check_device_id("aclrtResetDevice", deviceId);
    if (ret != ACL_SUCCESS) return ret;
    pthread_mutex_lock(&g_rt_lock);
    if (g_device_refs > 0) g_device_refs--;
    pthread_mutex_unlock(&g_rt_lock);
    if (g_device == deviceId) g_device = -1;
    return ACL_SUCCESS;
}

SBN_API aclError aclrtGetDevice(int32_t *deviceId)
{
    if (deviceId == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId is NULL");
    if (g_device < 0)
        return sbn__acl_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice",
                             "this thread has no current device (call aclrtSetDevice first)");
    *deviceId = g_device;
    return ACL_SUCCESS;
}

/* ---- streams ---- */

/* A stream is an object of the shared registry (aclnn_handles.c); callers hold its handle. */
typedef struct stream_object {
    uint64_t magic;
} stream_object;

static aclError unknown_stream(const char *op, aclrtStream stream)
{
    return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                         "stream %p was not created by aclrtCreateStream or is destroyed", stream);
}

SBN_API aclError aclrtCreateStream(aclrtStream *stream)
{
    stream_object *s;
    if (stream == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream is NULL");
    s = (stream_object *)sbn__acl_object_new(SBN_ACL_KIND_STREAM, sizeof *s);
    if (s == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream",
                             "out of memory");
    s->magic = SBN_ACL_STREAM_MAGIC;
    *stream = sbn__acl_object_handle(s);
    return ACL_SUCCESS;
}

SBN_API aclError aclrtDestroyStream(aclrtStream stream)
{
    if (stream == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream", "stream is NULL");
    if (!sbn__acl_object_destroy(stream, SBN_ACL_KIND_STREAM))
        return unknown_stream("aclrtDestroyStream", stream);
    return ACL_SUCCESS;
}

SBN_API aclError aclrtSynchronizeStream(aclrtStream stream)
{
    if (stream == NULL) return ACL_SUCCESS; /* the default stream */
    if (sbn__acl_object_get(stream, SBN_ACL_KIND_STREAM) == NULL)
        return unknown_stream("aclrtSynchronizeStream", stream);
    return ACL_SUCCESS; /* every op already ran to completion */
}

/* ---- memory ---- */

/* One allocation: the block from sbn__malloc holds this header, then the aligned user bytes. */
typedef struct mem_node {
    struct mem_node *next; /* bucket chain */
    void *block;           /* what sbn__malloc returned */
    void *ptr;             /* what the caller got */
    size_t size;
    int host;              /* 1: aclrtMallocHost, 0: aclrtMalloc */
} mem_node;

static mem_node *g_mem[SBN_ACL_MEM_BUCKETS];

static size_t mem_bucket(const void *p)
{
    uintptr_t v = (uintptr_t)p / SBN_ACL_MEM_ALIGN;
    return (size_t)((v ^ (v >> 8) ^ (v >> 16)) % SBN_ACL_MEM_BUCKETS);
}

static aclError mem_alloc(const char *op, void **out, size_t size, int host)
{
    unsigned char *block;
    uintptr_t user;
    mem_node *n;
    size_t b;
    if (out == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "the output pointer is NULL");
    if (size == 0)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "size is 0; it must be positive");
    if (size > SIZE_MAX - sizeof(mem_node) - SBN_ACL_MEM_ALIGN)
        return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "size %zu is too large", size);
    block = (unsigned char *)sbn__malloc(sizeof(mem_node) + SBN_ACL_MEM_ALIGN + size);
    if (block == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "out of memory (%zu bytes)",
                             size);
    user = ((uintptr_t)block + sizeof(mem_node) + SBN_ACL_MEM_ALIGN - 1) &
           ~(uintptr_t)(SBN_ACL_MEM_ALIGN - 1);
    n = (mem_node *)(void *)block;
    n->block = block;
    n->ptr = (void *)user;
    n->size = size;
    n->host = host;
    b = mem_bucket(n->ptr);
    pthread_mutex_lock(&g_rt_lock);
    n->next = g_mem[b];
    g_mem[b] = n;
    pthread_mutex_unlock(&g_rt_lock);
    *out = n->ptr;
    return ACL_SUCCESS;
}

static aclError mem_free(const char *op, void *ptr, int host)
{
    mem_node **p, *n = NULL;
    int wrong_kind = 0;
    if (ptr == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "the pointer is NULL");
    pthread_mutex_lock(&g_rt_lock);
    for (p = &g_mem[mem_bucket(ptr)]; *p != NULL; p = &(*p)->next) {
        if ((*p)->ptr != ptr) continue;
        if ((*p)->host != host) {
            wrong_kind = 1;
            break;
        }
        n = *p;
        *p = n->next;
        break;
    }
    pthread_mutex_unlock(&g_rt_lock);
    if (wrong_kind)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op, "%p was allocated by %s", ptr,
                             host ? "aclrtMalloc (free it with aclrtFree)"
                                  : "aclrtMallocHost (free it with aclrtFreeHost)");
    if (n == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "%p was not returned by %s, or is already freed", ptr,
                             host ? "aclrtMallocHost" : "aclrtMalloc");
    sbn__free(n->block);
    return ACL_SUCCESS;
}

SBN_API aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    (void)policy; /* page policies have no CPU meaning */
    return mem_alloc("aclrtMalloc", devPtr, size, 0);
}

SBN_API aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    return mem_alloc("aclrtMallocHost", hostPtr, size, 1);
}

SBN_API aclError aclrtFree(void *devPtr)
{
    return mem_free("aclrtFree", devPtr, 0);
}

SBN_API aclError aclrtFreeHost(void *hostPtr)
{
    return mem_free("aclrtFreeHost", hostPtr, 1);
}

SBN_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                             aclrtMemcpyKind kind)
{
    static const char *op = "aclrtMemcpy";
    if (count == 0) return ACL_SUCCESS;
    if (dst == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "dst is NULL");
    if (src == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "src is NULL");
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST:
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_DEVICE_TO_HOST:
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_DEFAULT:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
        break;
    default:
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "kind %d is not an aclrtMemcpyKind",
                             (int)kind);
    }
    if (count > destMax)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "count %zu is larger than destMax %zu (the destination's size)",
                             count, destMax);
    memmove(dst, src, count);
    return ACL_SUCCESS;
}

SBN_API aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    static const char *op = "aclrtMemset";
    if (count == 0) return ACL_SUCCESS;
    if (devPtr == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "devPtr is NULL");
    if (count > maxCount)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "count %zu is larger than maxCount %zu (the destination's size)",
                             count, maxCount);
    memset(devPtr, (int)(unsigned char)value, count);
    return ACL_SUCCESS;
}
