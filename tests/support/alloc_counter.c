/*
 * alloc_counter.c - the counting allocator of alloc_counter.h: atomic counters
 * in the tsup_counter passed as the allocator's user pointer, and a thread-local
 * flag that makes every allocation of one thread fail.
 */
#include "alloc_counter.h"

#include <stdlib.h>

#include "syncbn/syncbn.h"

static _Thread_local int fail_this_thread_;

void *tsup_counting_malloc(size_t bytes, void *user)
{
    tsup_counter *c = user;
    long k = atomic_fetch_add(&c->calls, 1) + 1;
    void *p;
    if (k == atomic_load(&c->fail_at) || fail_this_thread_) return NULL;
    p = malloc(bytes ? bytes : 1);
    if (p) atomic_fetch_add(&c->live, 1);
    return p;
}

void tsup_counting_free(void *ptr, void *user)
{
    tsup_counter *c = user;
    if (!ptr) return;
    atomic_fetch_sub(&c->live, 1);
    atomic_fetch_add(&c->frees, 1);
    free(ptr);
}

void tsup_counter_install(tsup_counter *c)
{
    sbn_set_allocator(tsup_counting_malloc, tsup_counting_free, c);
}

void tsup_counter_fail_this_thread(int on)
{
    fail_this_thread_ = on;
}
