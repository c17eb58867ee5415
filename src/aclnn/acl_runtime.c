/*
 * acl_runtime.c - the process and memory calls of the acl runtime with their CPU
 * meaning. aclInit/aclFinalize keep a process flag (a second aclInit returns
 * ACL_ERROR_REPEAT_INITIALIZE, a second aclFinalize ACL_ERROR_REPEAT_FINALIZE,
 * and aclInit may follow aclFinalize, as in CANN). aclInit reads its JSON config
 * file (acl_config.c; {"syncbn": {"num_threads": N}} sizes the aclnn thread pool)
 * and fails, leaving the process uninitialised, when the file is bad; aclFinalize
 * destroys the aclnn pool (aclnn_pool.c), which the next op creates again. The
 * other calls do not require aclInit, since nothing on a CPU depends on it.
 * Devices and contexts are in acl_context.c, streams, events and the async calls
 * in acl_stream.c. Memory from aclrtMalloc, aclrtMallocAlign32 and aclrtMallocHost
 * is 64-byte aligned, taken through sbn_malloc (so the allocator hook sees it),
 * and registered in a hash table keyed by address, so that freeing an unknown
 * pointer, a pointer twice or with the wrong free function is refused instead of
 * crashing. Argument rules and codes follow CANN's runtime: NULL pointers and size
 * 0 in malloc give ACL_ERROR_INVALID_PARAM, a copy or set of 0 bytes succeeds at
 * once, count > destMax gives ACL_ERROR_RT_PARAM_INVALID, an unknown copy kind
 * ACL_ERROR_INVALID_PARAM, a failed allocation ACL_ERROR_RT_MEMORY_ALLOCATION; the
 * async copies and sets share these checks (sbn__acl_memcpy, sbn__acl_memset).
 * Allocating, copying and setting need a current context, as in CANN: a thread
 * that has not called aclrtSetDevice (or made a context current) gets
 * ACL_ERROR_RT_CONTEXT_NULL once the arguments passed their checks (a copy or set
 * of 0 bytes still succeeds at once); aclrtFree and aclrtFreeHost do not need one.
 * Failures leave a message for aclGetRecentErrMsg().
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define SBN_ACL_MEM_ALIGN 64
#define SBN_ACL_MEM_BUCKETS 256

static pthread_mutex_t g_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;

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

SBN_ACL_API aclError aclInit(const char *configPath)
{
    static const char *op = "aclInit";
    int threads = 0, already;
    aclError ret;
    pthread_mutex_lock(&g_rt_lock);
    already = g_initialized;
    pthread_mutex_unlock(&g_rt_lock);
    if (already)
        return sbn__acl_fail(ACL_ERROR_REPEAT_INITIALIZE, op,
                             "aclInit was already called (call aclFinalize first)");
    ret = sbn__acl_read_config(op, configPath, &threads);
    if (ret != ACL_SUCCESS) return ret;
    ret = set_initialized(1, ACL_ERROR_REPEAT_INITIALIZE, op,
                          "aclInit was already called (call aclFinalize first)");
    if (ret == ACL_SUCCESS) sbn__acl_pool_configure(threads);
    return ret;
}

SBN_ACL_API aclError aclFinalize(void)
{
    aclError ret = set_initialized(0, ACL_ERROR_REPEAT_FINALIZE, "aclFinalize",
                                   "aclFinalize without a matching aclInit");
    if (ret == ACL_SUCCESS) sbn__acl_pool_shutdown();
    return ret;
}

/* ---- memory ---- */

/* One allocation: the block from sbn_malloc holds this header, then the aligned user bytes. */
typedef struct mem_node {
    struct mem_node *next; /* bucket chain */
    void *block;           /* what sbn_malloc returned */
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
    aclError ret;
    if (out == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "the output pointer is NULL");
    if (size == 0)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "size is 0; it must be positive");
    if ((ret = sbn__acl_require_context(op)) != ACL_SUCCESS) return ret;
    if (size > SIZE_MAX - sizeof(mem_node) - SBN_ACL_MEM_ALIGN)
        return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "size %zu is too large", size);
    block = (unsigned char *)sbn_malloc(sizeof(mem_node) + SBN_ACL_MEM_ALIGN + size);
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
    sbn_free(n->block);
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    (void)policy; /* page policies have no CPU meaning */
    return mem_alloc("aclrtMalloc", devPtr, size, 0);
}

SBN_ACL_API aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    return mem_alloc("aclrtMallocHost", hostPtr, size, 1);
}

SBN_ACL_API aclError aclrtFree(void *devPtr)
{
    return mem_free("aclrtFree", devPtr, 0);
}

SBN_ACL_API aclError aclrtFreeHost(void *hostPtr)
{
    return mem_free("aclrtFreeHost", hostPtr, 1);
}

SBN_ACL_API aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    (void)policy;
    return mem_alloc("aclrtMallocAlign32", devPtr, size, 0); /* 64-byte aligned: also 32 */
}

aclError sbn__acl_memcpy(const char *op, void *dst, size_t destMax, const void *src, size_t count,
                         aclrtMemcpyKind kind)
{
    aclError ret;
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
    ret = sbn__acl_require_context(op);
    if (ret != ACL_SUCCESS) return ret;
    memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError sbn__acl_memset(const char *op, void *devPtr, size_t maxCount, int32_t value,
                         size_t count)
{
    aclError ret;
    if (count == 0) return ACL_SUCCESS;
    if (devPtr == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "devPtr is NULL");
    if (count > maxCount)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "count %zu is larger than maxCount %zu (the destination's size)",
                             count, maxCount);
    ret = sbn__acl_require_context(op);
    if (ret != ACL_SUCCESS) return ret;
    memset(devPtr, (int)(unsigned char)value, count);
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                             aclrtMemcpyKind kind)
{
    return sbn__acl_memcpy("aclrtMemcpy", dst, destMax, src, count, kind);
}

SBN_ACL_API aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    return sbn__acl_memset("aclrtMemset", devPtr, maxCount, value, count);
}
