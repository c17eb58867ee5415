/*
 * acl_stream.c - streams, events and the async copies of the acl runtime on a CPU.
 * A stream runs its work in order, and here every piece of work (an aclnn op's
 * phase 2, aclrtMemcpyAsync, aclrtMemsetAsync) runs to completion at its call, on
 * the calling thread: by the time an async call returns its work is done, so
 * synchronizing a stream, an event or the device returns at once, a stream is
 * always complete (aclrtStreamQuery) and waiting for an event never blocks. Work
 * given a stream that was destroyed (or never created) is refused at the call with
 * ACL_ERROR_RT_PARAM_INVALID and does nothing, as CANN refuses it; NULL is the
 * default stream. Creating a stream or an event, and the async copies and sets,
 * need a current context (aclrtSetDevice first): a thread without one gets
 * ACL_ERROR_RT_CONTEXT_NULL after the argument checks, as in CANN; using existing
 * streams and events does not. Streams and events are handles of the shared registry
 * (aclnn_handles.c), never dereferenced before they are found live. An event
 * recorded on a stream takes the time of the call (CLOCK_MONOTONIC), which is when
 * the work before it on that stream finished; aclrtEventElapsedTime gives the
 * milliseconds between two recorded events (ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID
 * when one was never recorded, ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL when the end
 * was recorded before the start). aclrtQueryEventStatus and
 * aclrtQueryEventWaitStatus say complete once the event was recorded, not ready
 * before; aclrtQueryEvent says complete either way (nothing is pending).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define STREAM_MAGIC 0x53424e5354524d53ull /* "SBNSTRMS" */
#define EVENT_MAGIC 0x53424e4556454e54ull  /* "SBNEVENT" */

#define KNOWN_STREAM_FLAGS                                                           \
    (ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT |         \
     ACL_STREAM_HUGE | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY)
#define KNOWN_EVENT_FLAGS                                                             \
    (ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |       \
     ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC)

typedef struct stream_object {
    uint64_t magic;
    uint32_t priority;
    uint32_t flags;
} stream_object;

typedef struct event_object {
    uint64_t magic;
    uint32_t flags;
    int recorded;
    uint64_t time_ns; /* CLOCK_MONOTONIC at the last record */
} event_object;

/* Guards the recorded/time_ns of every event (two threads may record one event). */
static pthread_mutex_t g_event_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

aclError sbn__acl_check_stream(const char *op, aclrtStream stream, aclError code)
{
    if (stream == NULL) return ACL_SUCCESS; /* the default stream */
    if (sbn__acl_object_get(stream, SBN_ACL_KIND_STREAM) != NULL) return ACL_SUCCESS;
    return sbn__acl_fail(code, op,
                         "stream %p was not created by aclrtCreateStream or is destroyed; "
                         "nothing was run",
                         stream);
}

static aclError unknown_event(const char *op, const char *name, aclrtEvent event)
{
    return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                         "%s %p was not created by aclrtCreateEvent or is destroyed", name,
                         event);
}

/* ---- streams ---- */

static aclError create_stream(const char *op, aclrtStream *stream, uint32_t priority,
                              uint32_t flags)
{
    stream_object *s;
    aclError ret;
    if (stream == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "stream is NULL");
    if ((ret = sbn__acl_require_context(op)) != ACL_SUCCESS) return ret;
    s = (stream_object *)sbn__acl_object_new(SBN_ACL_KIND_STREAM, sizeof *s);
    if (s == NULL) return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "out of memory");
    s->magic = STREAM_MAGIC;
    s->priority = priority;
    s->flags = flags;
    *stream = sbn__acl_object_handle(s);
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtCreateStream(aclrtStream *stream)
{
    return create_stream("aclrtCreateStream", stream, 0, 0);
}

SBN_ACL_API aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority,
                                             uint32_t flag)
{
    static const char *op = "aclrtCreateStreamWithConfig";
    if (stream == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "stream is NULL");
    if ((flag & ~(uint32_t)KNOWN_STREAM_FLAGS) != 0)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op,
                             "flag 0x%x has bits that are not ACL_STREAM_* flags (0x%x)",
                             (unsigned)flag, (unsigned)(flag & ~(uint32_t)KNOWN_STREAM_FLAGS));
    return create_stream(op, stream, priority, flag);
}

SBN_ACL_API aclError aclrtDestroyStream(aclrtStream stream)
{
    static const char *op = "aclrtDestroyStream";
    if (stream == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "stream is NULL");
    if (!sbn__acl_object_destroy(stream, SBN_ACL_KIND_STREAM))
        return sbn__acl_fail(ACL_ERROR_RT_PARAM_INVALID, op,
                             "stream %p was not created by aclrtCreateStream or is destroyed",
                             stream);
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtSynchronizeStream(aclrtStream stream)
{
    return sbn__acl_check_stream("aclrtSynchronizeStream", stream, ACL_ERROR_RT_PARAM_INVALID);
}

SBN_ACL_API aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    static const char *op = "aclrtSynchronizeStreamWithTimeout";
    if (timeout < -1)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op,
                             "timeout %d ms is below -1 (-1 waits without a limit)",
                             (int)timeout);
    return sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
}

SBN_ACL_API aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
    static const char *op = "aclrtStreamQuery";
    aclError ret;
    if (status == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "status is NULL");
    ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret == ACL_SUCCESS) *status = ACL_STREAM_STATUS_COMPLETE;
    return ret;
}

/* ---- async copies: done at the call ---- */

SBN_ACL_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                  aclrtMemcpyKind kind, aclrtStream stream)
{
    static const char *op = "aclrtMemcpyAsync";
    aclError ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret != ACL_SUCCESS) return ret;
    return sbn__acl_memcpy(op, dst, destMax, src, count, kind);
}

SBN_ACL_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                  aclrtStream stream)
{
    static const char *op = "aclrtMemsetAsync";
    aclError ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret != ACL_SUCCESS) return ret;
    return sbn__acl_memset(op, devPtr, maxCount, value, count);
}

/* ---- events ---- */

static aclError create_event(const char *op, aclrtEvent *event, uint32_t flags)
{
    event_object *e;
    aclError ret;
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    if ((ret = sbn__acl_require_context(op)) != ACL_SUCCESS) return ret;
    e = (event_object *)sbn__acl_object_new(SBN_ACL_KIND_EVENT, sizeof *e);
    if (e == NULL) return sbn__acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, op, "out of memory");
    e->magic = EVENT_MAGIC;
    e->flags = flags;
    *event = sbn__acl_object_handle(e);
    return ACL_SUCCESS;
}

SBN_ACL_API aclError aclrtCreateEvent(aclrtEvent *event)
{
    return create_event("aclrtCreateEvent", event, 0);
}

SBN_ACL_API aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    static const char *op = "aclrtCreateEventWithFlag";
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    if ((flag & ~(uint32_t)KNOWN_EVENT_FLAGS) != 0)
        return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op,
                             "flag 0x%x has bits that are not ACL_EVENT_* flags (0x%x)",
                             (unsigned)flag, (unsigned)(flag & ~(uint32_t)KNOWN_EVENT_FLAGS));
    return create_event(op, event, flag);
}

SBN_ACL_API aclError aclrtDestroyEvent(aclrtEvent event)
{
    static const char *op = "aclrtDestroyEvent";
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    if (!sbn__acl_object_destroy(event, SBN_ACL_KIND_EVENT))
        return unknown_event(op, "event", event);
    return ACL_SUCCESS;
}

/*
 * Runs `what` on the live event object of handle under the event lock: 0 with
 * ACL_SUCCESS, else the failure (NULL -> ACL_ERROR_INVALID_PARAM, not live ->
 * ACL_ERROR_RT_PARAM_INVALID). The registry lock is held too, so the event cannot
 * be destroyed meanwhile.
 */
typedef void (*event_fn)(event_object *e, void *arg);

static aclError with_event(const char *op, const char *name, aclrtEvent event, event_fn what,
                           void *arg)
{
    event_object *e;
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "%s is NULL", name);
    sbn__acl_registry_lock();
    e = (event_object *)sbn__acl_object_find_locked(event, SBN_ACL_KIND_EVENT);
    if (e != NULL && what != NULL) {
        pthread_mutex_lock(&g_event_lock);
        what(e, arg);
        pthread_mutex_unlock(&g_event_lock);
    }
    sbn__acl_registry_unlock();
    return e != NULL ? ACL_SUCCESS : unknown_event(op, name, event);
}

static void record(event_object *e, void *arg)
{
    e->recorded = 1;
    e->time_ns = *(const uint64_t *)arg;
}

static void reset(event_object *e, void *arg)
{
    (void)arg;
    e->recorded = 0;
    e->time_ns = 0;
}

/* arg: {int recorded, uint64_t time} filled from the event. */
typedef struct event_state {
    int recorded;
    uint64_t time_ns;
} event_state;

static void read_state(event_object *e, void *arg)
{
    event_state *s = (event_state *)arg;
    s->recorded = e->recorded;
    s->time_ns = e->time_ns;
}

SBN_ACL_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    static const char *op = "aclrtRecordEvent";
    uint64_t t;
    aclError ret;
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret != ACL_SUCCESS) return ret;
    t = now_ns(); /* the stream's earlier work is done: it finished by now */
    return with_event(op, "event", event, record, &t);
}

SBN_ACL_API aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream)
{
    static const char *op = "aclrtResetEvent";
    aclError ret;
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret != ACL_SUCCESS) return ret;
    return with_event(op, "event", event, reset, NULL);
}

SBN_ACL_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
    static const char *op = "aclrtStreamWaitEvent";
    aclError ret;
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    ret = sbn__acl_check_stream(op, stream, ACL_ERROR_RT_PARAM_INVALID);
    if (ret != ACL_SUCCESS) return ret;
    return with_event(op, "event", event, NULL, NULL); /* its work is already done */
}

SBN_ACL_API aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    return with_event("aclrtSynchronizeEvent", "event", event, NULL, NULL);
}

/* The argument checks and the event read of the three aclrtQueryEvent* calls. */
static aclError query_event(const char *op, aclrtEvent event, const void *status, event_state *s)
{
    if (event == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "event is NULL");
    if (status == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "status is NULL");
    return with_event(op, "event", event, read_state, s);
}

SBN_ACL_API aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status)
{
    event_state s = {0, 0};
    aclError ret = query_event("aclrtQueryEvent", event, status, &s);
    if (ret == ACL_SUCCESS) *status = ACL_EVENT_STATUS_COMPLETE;
    return ret;
}

SBN_ACL_API aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    event_state s = {0, 0};
    aclError ret = query_event("aclrtQueryEventStatus", event, status, &s);
    if (ret == ACL_SUCCESS)
        *status = s.recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                             : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ret;
}

SBN_ACL_API aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status)
{
    event_state s = {0, 0};
    aclError ret = query_event("aclrtQueryEventWaitStatus", event, status, &s);
    if (ret == ACL_SUCCESS)
        *status = s.recorded ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
    return ret;
}

SBN_ACL_API aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    static const char *op = "aclrtEventElapsedTime";
    event_state a = {0, 0}, b = {0, 0};
    aclError ret;
    if (ms == NULL) return sbn__acl_fail(ACL_ERROR_INVALID_PARAM, op, "ms is NULL");
    ret = with_event(op, "startEvent", startEvent, read_state, &a);
    if (ret != ACL_SUCCESS) return ret;
    ret = with_event(op, "endEvent", endEvent, read_state, &b);
    if (ret != ACL_SUCCESS) return ret;
    if (!a.recorded || !b.recorded)
        return sbn__acl_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, op,
                             "%s was never recorded (call aclrtRecordEvent first)",
                             !a.recorded ? "startEvent" : "endEvent");
    if (b.time_ns < a.time_ns)
        return sbn__acl_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, op,
                             "endEvent was recorded %.3f ms before startEvent",
                             (double)(a.time_ns - b.time_ns) / 1e6);
    *ms = (float)((double)(b.time_ns - a.time_ns) / 1e6);
    return ACL_SUCCESS;
}
