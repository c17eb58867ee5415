/*
 * alloc_counter.h - a counting allocator for sbn_set_allocator, shared by the
 * tests that check allocation failures and leaks (test_core.c,
 * test_comm_threads.c, test_comm_callbacks.c, test_aclnn_objects.c,
 * test_aclnn_executor.c, test_acl_runtime.c). It counts the calls and the
 * allocations still live, can fail the k-th call or every call of one thread,
 * and is safe to use from several threads at once (the counters are atomic).
 */
#ifndef SBN_TEST_ALLOC_COUNTER_H
#define SBN_TEST_ALLOC_COUNTER_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct tsup_counter {
    atomic_long calls;   /* calls of the malloc hook, failed ones included */
    atomic_long live;    /* allocations made and not yet freed */
    atomic_long frees;   /* frees of non-NULL pointers */
    atomic_long fail_at; /* the 1-based call that returns NULL; 0 never */
} tsup_counter;

/* The malloc hook: user is the tsup_counter. Allocates max(bytes, 1) bytes. */
void *tsup_counting_malloc(size_t bytes, void *user);
/* The free hook: user is the tsup_counter; NULL is ignored. */
void tsup_counting_free(void *ptr, void *user);
/* sbn_set_allocator(tsup_counting_malloc, tsup_counting_free, c). */
void tsup_counter_install(tsup_counter *c);
/* With on != 0, every later allocation made by the calling thread fails (still counted). */
void tsup_counter_fail_this_thread(int on);

#endif /* SBN_TEST_ALLOC_COUNTER_H */
