/*
 * acl_context.c - devices and contexts of the acl runtime on a CPU, and the device
 * queries frameworks make. A device id >= 0 names the CPU (aclrtGetDeviceCount
 * says 1; any id >= 0 is accepted as the same CPU). Each thread has a current
 * context and with it a current device, as in CANN: aclrtSetDevice makes the
 * device's default context (one per device id, made on first use, living as long
 * as the process) current and creates the aclnn thread pool if it does not exist
 * yet; aclrtCreateContext makes a new context and makes it current;
 * aclrtSetCurrentContext switches to a context made by either. Contexts are
 * handles of the shared registry (aclnn_handles.c): a destroyed or foreign one is
 * refused (ACL_ERROR_RT_PARAM_INVALID), never dereferenced; a default context
 * cannot be destroyed; destroying the calling thread's current context leaves it
 * with none. A thread that has neither set a device nor made a context current
 * (never, or not since aclrtResetDevice of its device or the destruction of its
 * context) has no current context, and the calls CANN refuses then refuse with
 * ACL_ERROR_RT_CONTEXT_NULL and a message saying to call aclrtSetDevice first
 * (sbn__acl_require_context, after the call's argument checks as in CANN):
 * aclrtGetDevice, aclrtGetCurrentContext, aclrtSynchronizeDevice and
 * aclrtGetMemInfo here; aclrtCreateStream(WithConfig), aclrtCreateEvent(WithFlag),
 * aclrtMemcpyAsync and aclrtMemsetAsync in acl_stream.c; aclrtMalloc,
 * aclrtMallocAlign32, aclrtMallocHost, aclrtMemcpy and aclrtMemset in
 * acl_runtime.c. The frees, stream and event use, and the device-less queries
 * (count, run mode, SoC name) work without one, as in CANN. The run mode
 * is ACL_HOST (the program runs on the host; every copy kind works), the SoC name
 * is "syncbn-cpu", and aclrtGetMemInfo reports the machine's physical and
 * available memory for every memory attribute.
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define CONTEXT_MAGIC 0x53424e4354585421ull /* "SBNCTXT!" */

typedef struct context_object {
    uint64_t magic;
    int32_t device;
    int is_default;
} context_object;

/* The default context of each device id used so far (a short list: one per id). */
typedef struct default_context {
    struct default_context *next;
    int32_t device;
    void *handle;
} default_context;

static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static default_context *g_defaults;
static _Thread_local int32_t g_device = -1;
static _Thread_local void *g_context; /* the current context's handle, or NULL */

static aclError check_device_id(const char *op, int32_t deviceId)
{
    if (deviceId >= 0) return ACL_SUCCESS;
    return sbn__acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, op, "device id %d is negative",
                         (int)deviceId);
}

static aclError no_context(const char *op)
{
    return sbn__acl_fail(ACL_ERROR_RT_CONTEXT_NULL, op,
                         "this thread has no current context: call aclrtSetDevice first (or "
                         "make a context current with aclrtCreateContext or "
                         "aclrtSetCurrentContext)");
}

/* 1 when the calling thread's current context exists and is live (another thread may destroy it). */
static int has_context(void)
{
    return g_context != NULL && sbn__acl_object_get(g_context, SBN_ACL_KIND_CONTEXT) != NULL;
}

aclError sbn__acl_require_context(const char *op)
{
    return has_context() ? ACL_SUCCESS : no_context(op);
}

static context_object *new_context(int32_t device, int is_default)
{
    context_object *c =
        (context_object *)sbn__acl_object_new(SBN_ACL_KIND_CONTEXT, sizeof(context_object));
    if (c == NULL) return NULL;
    c->magic = CONTEXT_MAGIC;
    c->device = device;
    c->is_default = is_default;
    return c;
}

/* The handle of device's default context, made on first use; NULL when out of memory. */
static void *default_context_of(int32_t device)
{
    default_context *d;
    void *handle = NULL;
    pthread_mutex_lock(&g_ctx_lock);
    for (d = g_defaults; d != NULL; d = d->next)
        if (d->device == device) handle = d->handle;
    if (handle == NULL) {
        d = (default_context *)sbn_malloc(sizeof *d);
        context_object *c = d != NULL ? new_context(device, 1) : NULL;
        if (c != NULL) {
            d->device = device;
            d->handle = handle = sbn__acl_object_handle(c);
            d->next = g_defaults;
            g_defaults = d;
        } else {
            sbn_free(d);
        }
    }
    pthread_mutex_unlock(&g_ctx_lock);
    return handle;
}

/* -1 when the thread has no live current context (see has_context). */
int32_t sbn__acl_current_device(void)
{
    return has_context() ? g_device : -1;
}

/* ---- devices ---- */

SBN_ACL_API aclError aclrtSetDevice(int32_t deviceId)
{
    void *ctx;
    aclError ret = check_device_id("aclrtSetDevice", deviceId);
    if (ret != ACL_SUCCESS) return ret;
    ctx = default_context_of(deviceId);
    if (ctx == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtSetDevice",
                             "out of memory for the default context of device %d", (int)deviceId);
    g_device = deviceId;
    g_context = ctx;
    sbn__acl_pool_warm(); /* the aclnn ops' threads start here rather than in the first op */
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtResetDevice(int32_t deviceId)
{
    aclError ret = check_device_id("aclrtResetDevice", deviceId);
    if (ret != ACL_SUCCESS) return ret;
    if (g_device == deviceId) {
        g_device = -1;
        g_context = NULL;
    }
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtGetDevice(int32_t *deviceId)
{
    if (deviceId == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId is NULL");
    /* the device is the current context's: none when another thread destroyed it */
    if (!has_context())
        return sbn__acl_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice",
                             "this thread has no current device (call aclrtSetDevice first; "
                             "a context destroyed by another thread leaves none)");
    *deviceId = g_device;
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtGetDeviceCount(uint32_t *count)
{
    if (count == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count is NULL");
    *count = 1;
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtSynchronizeDevice(void)
{
    if (!has_context()) return no_context("aclrtSynchronizeDevice");
    return ACL_SUCCESS; /* every op and copy completed at its call */
}

SBN_ACL_API aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
    if (runMode == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode is NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

SBN_ACL_API const char *aclrtGetSocName(void)
{
    return "syncbn-cpu";
}

SBN_ACL_API aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total)
{
    static const char *op = "aclrtGetMemInfo";
    long page = sysconf(_SC_PAGESIZE), phys = sysconf(_SC_PHYS_PAGES),
         avail = sysconf(_SC_AVPHYS_PAGES);
    if (free == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "free is NULL");
    if (total == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "total is NULL");
    if ((int)attr < (int)ACL_DDR_MEM || (int)attr > (int)ACL_MEM_P2P_HUGE1G)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "attr %d is not an aclrtMemAttr",
                             (int)attr);
    if (!has_context()) return no_context(op);
    if (page <= 0 || phys <= 0)
        return sbn__acl_fail(ACL_ERROR_RT_INTERNAL_ERROR, op,
                             "the machine's memory size is not known");
    if (avail < 0) avail = 0;
    *total = (size_t)phys * (size_t)page;
    *free = (size_t)avail * (size_t)page;
    return ACL_SUCCESS;
}

/* ---- contexts ---- */

SBN_ACL_API aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    static const char *op = "aclrtCreateContext";
    context_object *c;
    aclError ret;
    if (context == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "context is NULL");
    ret = check_device_id(op, deviceId);
    if (ret != ACL_SUCCESS) return ret;
    c = new_context(deviceId, 0);
    if (c == NULL) return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "out of memory");
    *context = sbn__acl_object_handle(c);
    g_context = *context; /* as CANN: the new context becomes the thread's current one */
    g_device = deviceId;
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtDestroyContext(aclrtContext context)
{
    static const char *op = "aclrtDestroyContext";
    context_object *c;
    int is_default = 0;
    if (context == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "context is NULL");
    sbn__acl_registry_lock();
    c = (context_object *)sbn__acl_object_find_locked(context, SBN_ACL_KIND_CONTEXT);
    if (c != NULL && c->is_default)
        is_default = 1;
    else if (c != NULL)
        sbn__acl_object_unlink_locked(c);
    sbn__acl_registry_unlock();
    if (c == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "context %p was not created by aclrtCreateContext or is destroyed",
                             context);
    if (is_default)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "context %p is the default context of device %d (made by "
                             "aclrtSetDevice); only contexts from aclrtCreateContext are "
                             "destroyed",
                             context, (int)c->device);
    sbn__acl_object_free(c);
    if (g_context == context) {
        g_context = NULL;
        g_device = -1;
    }
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtSetCurrentContext(aclrtContext context)
{
    static const char *op = "aclrtSetCurrentContext";
    context_object *c;
    int32_t device = -1;
    if (context == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "context is NULL");
    sbn__acl_registry_lock();
    c = (context_object *)sbn__acl_object_find_locked(context, SBN_ACL_KIND_CONTEXT);
    if (c != NULL) device = c->device;
    sbn__acl_registry_unlock();
    if (c == NULL)
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "context %p is not a live context (destroyed, or not made by "
                             "aclrtCreateContext or aclrtSetDevice)",
                             context);
    g_context = context;
    g_device = device;
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtGetCurrentContext(aclrtContext *context)
{
    static const char *op = "aclrtGetCurrentContext";
    if (context == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "context is NULL");
    if (!has_context()) return no_context(op); /* none, or destroyed by another thread */
    *context = g_context;
    return ACL_SUCCESS;
}
