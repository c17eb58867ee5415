/*
 * aclnn_handles.c - the one registry of live aclnn objects, shared by every kind
 * (tensor, scalar, the int/float/bool arrays, tensor list, executor, stream). An
 * object lives in one sbn_malloc block behind a small header; what the caller
 * gets is not that address but a handle: an address inside a region of address
 * space reserved with PROT_NONE (no memory behind it, nothing else can ever be
 * placed there), handed out in increasing order and never reused while the
 * process lives (a new region is reserved when one runs out). Every call looks a
 * handle up by value in a mutex-protected hash table before touching anything, so
 * a NULL-free pointer that is not a live handle of the expected kind - destroyed,
 * never created, of another kind, or any foreign memory - is found dead without
 * being dereferenced, and a stale handle stays dead even when its object's memory
 * now holds a new object (the new one has a new handle). Limits: an object must not
 * be destroyed while another thread is inside a call that uses it (the executor,
 * whose runs are long, counts its runs and defers the free itself); the handle
 * space is 2^26 handles per reserved GiB, so it runs out only after ~10^13 creates.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "aclnn_internal.h"

#define HANDLE_REGION_BYTES ((uintptr_t)1 << 30) /* reserved at a time */
#define HANDLE_STEP ((uintptr_t)16)               /* handles are 16-byte aligned */
#define BUCKETS 4096u

typedef struct object_header {
    struct object_header *next; /* bucket chain */
    uintptr_t handle;
    sbn__acl_kind kind;
} object_header;

/* The header rounded up to 16 bytes, so that the object after it is aligned like malloc's. */
#define HEADER_BYTES ((sizeof(object_header) + 15u) / 16u * 16u)

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static object_header *g_buckets[BUCKETS];
static uintptr_t g_next_handle, g_region_end; /* the unused part of the current region */

static object_header *header_of(const void *obj)
{
    return (object_header *)(uintptr_t)((uintptr_t)obj - HEADER_BYTES);
}

static void *object_of(object_header *h)
{
    return (unsigned char *)h + HEADER_BYTES;
}

static size_t bucket_of(uintptr_t handle)
{
    return (size_t)((handle / HANDLE_STEP) % BUCKETS);
}

/* A handle never handed out before, or 0 when no address space can be reserved. */
static uintptr_t new_handle_locked(void)
{
    if (g_next_handle == g_region_end) {
        void *region = mmap(NULL, (size_t)HANDLE_REGION_BYTES, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (region == MAP_FAILED) return 0;
        g_next_handle = (uintptr_t)region;
        g_region_end = g_next_handle + HANDLE_REGION_BYTES;
    }
    g_next_handle += HANDLE_STEP;
    return g_next_handle - HANDLE_STEP;
}

void sbn__acl_registry_lock(void)
{
    pthread_mutex_lock(&g_registry_lock);
}

void sbn__acl_registry_unlock(void)
{
    pthread_mutex_unlock(&g_registry_lock);
}

void *sbn__acl_object_new(sbn__acl_kind kind, size_t bytes)
{
    object_header *h;
    size_t total;
    if (!sbn__acl_add_size(bytes, HEADER_BYTES, &total)) return NULL;
    h = (object_header *)sbn_malloc(total);
    if (h == NULL) return NULL;
    memset(h, 0, total);
    h->kind = kind;
    sbn__acl_registry_lock();
    h->handle = new_handle_locked();
    if (h->handle != 0) {
        size_t b = bucket_of(h->handle);
        h->next = g_buckets[b];
        g_buckets[b] = h;
    }
    sbn__acl_registry_unlock();
    if (h->handle == 0) {
        sbn_free(h);
        return NULL;
    }
    return object_of(h);
}

void *sbn__acl_object_handle(const void *obj)
{
    return obj == NULL ? NULL : (void *)header_of(obj)->handle;
}

void *sbn__acl_object_find_locked(const void *handle, sbn__acl_kind kind)
{
    uintptr_t key = (uintptr_t)handle;
    object_header *h;
    if (key == 0) return NULL;
    for (h = g_buckets[bucket_of(key)]; h != NULL; h = h->next)
        if (h->handle == key) return h->kind == kind ? object_of(h) : NULL;
    return NULL;
}

void *sbn__acl_object_get(const void *handle, sbn__acl_kind kind)
{
    void *obj;
    sbn__acl_registry_lock();
    obj = sbn__acl_object_find_locked(handle, kind);
    sbn__acl_registry_unlock();
    return obj;
}

void sbn__acl_object_unlink_locked(void *obj)
{
    object_header *h = header_of(obj), **p = &g_buckets[bucket_of(h->handle)];
    while (*p != NULL && *p != h) p = &(*p)->next;
    if (*p == h) *p = h->next;
    h->next = NULL;
}

void sbn__acl_object_free(void *obj)
{
    if (obj != NULL) sbn_free(header_of(obj));
}

int sbn__acl_object_destroy(const void *handle, sbn__acl_kind kind)
{
    void *obj;
    sbn__acl_registry_lock();
    obj = sbn__acl_object_find_locked(handle, kind);
    if (obj != NULL) sbn__acl_object_unlink_locked(obj);
    sbn__acl_registry_unlock();
    sbn__acl_object_free(obj);
    return obj != NULL;
}
