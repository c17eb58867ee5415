/*
 * alloc.c - the allocator hook. Every allocation of the library goes through
 * sbn__malloc/sbn__free so that a caller (or a test injecting failures) can
 * substitute its own functions. Ops never allocate; objects such as pools do.
 * sbn_malloc/sbn_free are the same two calls for code built on the library (the
 * aclnn library), so its objects go through the hook too.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/export.h"
#include "syncbn/syncbn.h"

static sbn_malloc_fn g_malloc_fn;
static sbn_free_fn g_free_fn;
static void *g_user;

SBN_API void sbn_set_allocator(sbn_malloc_fn malloc_fn, sbn_free_fn free_fn, void *user)
{
    if (malloc_fn == NULL || free_fn == NULL) {
        g_malloc_fn = NULL;
        g_free_fn = NULL;
        g_user = NULL;
        return;
    }
    g_malloc_fn = malloc_fn;
    g_free_fn = free_fn;
    g_user = user;
}

void *sbn__malloc(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    return g_malloc_fn ? g_malloc_fn(bytes, g_user) : malloc(bytes);
}

void *sbn__calloc(size_t count, size_t size)
{
    void *p;
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    p = sbn__malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void sbn__free(void *ptr)
{
    if (ptr == NULL) return;
    if (g_free_fn)
        g_free_fn(ptr, g_user);
    else
        free(ptr);
}

SBN_API void *sbn_malloc(size_t bytes)
{
    return sbn__malloc(bytes);
}

SBN_API void sbn_free(void *ptr)
{
    sbn__free(ptr);
}
