/*
 * ref_barrier.h - the barrier of the reference kernels' team (bench_ref.c): spin, then
 * sleep. The team meets three times a call (start, between the sums and the map, end);
 * pthread_barrier_wait puts every waiter to sleep at once, so each meeting cost a futex
 * wake-up per thread, tens to hundreds of microseconds on virtual machines, and the
 * reference at two threads ran slower than at one on small shapes - a handicap that
 * flattered syncbn's "% of ref". Waiters now spin for up to REF_BARRIER_SPIN_NS (the
 * same policy as syncbn's pool, src/core/pool.c) and only then sleep on a condition
 * variable, so that the team's threads do not take the CPUs from the implementation the
 * benchmark times next. A generation count tells a waiter that its barrier has opened.
 */
#ifndef SBN_BENCH_REF_BARRIER_H
#define SBN_BENCH_REF_BARRIER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define REF_BARRIER_SPIN_NS 200000

typedef struct ref_barrier {
    atomic_uint arrived;    /* threads at the barrier of this generation */
    atomic_uint generation; /* barriers opened so far */
    unsigned n;             /* threads that meet */
    pthread_mutex_t lock;   /* sleepers only */
    pthread_cond_t wake;
} ref_barrier;

static inline void ref_barrier_init(ref_barrier *b, unsigned n)
{
    atomic_init(&b->arrived, 0);
    atomic_init(&b->generation, 0);
    b->n = n;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->wake, NULL);
}

static inline void ref_barrier_destroy(ref_barrier *b)
{
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
}

static inline int64_t ref_barrier_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Returns once all n threads have called it. The last to arrive resets the count and
 * opens the barrier (a release store the others acquire, under the sleepers' lock). */
static inline void ref_barrier_wait(ref_barrier *b)
{
    unsigned gen = atomic_load_explicit(&b->generation, memory_order_acquire);
    int64_t deadline = 0;
    int i = 0;
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) + 1 == b->n) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        pthread_mutex_lock(&b->lock);
        atomic_store_explicit(&b->generation, gen + 1, memory_order_release);
        pthread_cond_broadcast(&b->wake);
        pthread_mutex_unlock(&b->lock);
        return;
    }
    while (atomic_load_explicit(&b->generation, memory_order_acquire) == gen) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (++i % 64 != 0) continue;
        if (deadline == 0) {
            deadline = ref_barrier_now_ns() + REF_BARRIER_SPIN_NS;
        } else if (ref_barrier_now_ns() > deadline) {
            pthread_mutex_lock(&b->lock);
            while (atomic_load_explicit(&b->generation, memory_order_acquire) == gen)
                pthread_cond_wait(&b->wake, &b->lock);
            pthread_mutex_unlock(&b->lock);
            return;
        }
    }
}

#endif /* SBN_BENCH_REF_BARRIER_H */
