/*
 * pool.c - the caller-owned thread pool and the parallel loop. A pool of T
 * threads runs T-1 workers; the thread that calls an op is the T-th. Work is
 * handed out from an atomic counter, one index at a time, or count / 8T at a time
 * when there are many (a per-channel loop); since every index writes its own
 * result, which thread ran it never changes the bits. Ops on one
 * pool from several threads take turns (run_lock). A batch norm runs a few loops
 * back to back (reduce, merge, map), so workers and the caller spin for a few
 * tens of microseconds before they sleep on a condition variable: waking a
 * sleeping thread costs about as much as a small loop. A worker joins a loop only
 * while it is open; the caller closes it when it has run out of indices and then
 * waits only for the workers that joined, never for one still waking up (a
 * sleeping worker's wake-up took 20-40 us on the project's VM, more than the
 * per-channel merge loop it was woken for).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "internal.h"

#define SBN_POOL_MAX_THREADS 1024
#define SBN_POOL_SPINS 4000 /* pause instructions before sleeping (~20-60 us) */

struct sbn_pool {
    int threads;
    int started;              /* workers successfully created */
    pthread_t *workers;
    pthread_mutex_t run_lock; /* one parallel loop at a time */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    atomic_ulong generation;  /* bumped for each loop (under lock; read by spinners) */
    atomic_int stop;
    atomic_int busy;          /* workers that joined the current loop and are still in it */
    unsigned long open_gen;   /* the generation workers may join, 0 once closed (under lock) */
    sbn__range_fn fn;
    void *ctx;
    int64_t count;
    int64_t step;             /* indices taken at a time: 1, or count / (8 T) for many small ones */
    atomic_llong next;
};

/* Takes `step` indices at a time until none is left. */
static void run_pieces(struct sbn_pool *pool)
{
    for (;;) {
        long long i = atomic_fetch_add(&pool->next, pool->step);
        if (i >= pool->count) break;
        pool->fn(pool->ctx, (int64_t)i,
                 i + pool->step < pool->count ? (int64_t)(i + pool->step) : pool->count);
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
    struct sbn_pool *pool = arg;
    unsigned long seen = 0;
    for (;;) {
        int spin;
        for (spin = 0; spin < SBN_POOL_SPINS && atomic_load(&pool->generation) == seen &&
                       !atomic_load(&pool->stop);
             spin++)
            cpu_relax();
        pthread_mutex_lock(&pool->lock);
        while (!pool->stop && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop) {
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        seen = pool->generation;
        if (pool->open_gen != seen) { /* the caller has finished this loop without us */
            pthread_mutex_unlock(&pool->lock);
            continue;
        }
        atomic_fetch_add(&pool->busy, 1);
        pthread_mutex_unlock(&pool->lock);

        run_pieces(pool);

        if (atomic_fetch_sub(&pool->busy, 1) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

static void stop_workers(struct sbn_pool *pool)
{
    int i;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (i = 0; i < pool->started; i++) pthread_join(pool->workers[i], NULL);
}

static void free_pool(struct sbn_pool *pool)
{
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->run_lock);
    sbn__free(pool->workers);
    sbn__free(pool);
}

SBN_API sbn_status sbn_pool_create(int threads, sbn_pool_t **out)
{
    struct sbn_pool *pool;
    int i;

    sbn__clear_error();
    if (out == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "pool (the output pointer) is NULL");
    *out = NULL;
    if (threads < 1 || threads > SBN_POOL_MAX_THREADS)
        return sbn__error(SBN_ERR_BAD_VALUE, "threads is %d; expected 1 to %d", threads,
                          SBN_POOL_MAX_THREADS);
    pool = sbn__calloc(1, sizeof *pool);
    if (pool == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate a pool of %d threads", threads);
    pool->threads = threads;
    if (threads > 1) {
        pool->workers = sbn__calloc((size_t)(threads - 1), sizeof *pool->workers);
        if (pool->workers == NULL) {
            sbn__free(pool);
            return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate %d worker handles",
                              threads - 1);
        }
    }
    pthread_mutex_init(&pool->run_lock, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->next, 0);
    for (i = 0; i < threads - 1; i++) {
        if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
            stop_workers(pool);
            free_pool(pool);
            return sbn__error(SBN_ERR_THREAD, "could not create worker thread %d of %d", i + 1,
                              threads - 1);
        }
        pool->started++;
    }
    *out = pool;
    return SBN_OK;
}

SBN_API void sbn_pool_destroy(sbn_pool_t *pool)
{
    if (pool == NULL) return;
    stop_workers(pool);
    free_pool(pool);
}

SBN_API int sbn_pool_threads(const sbn_pool_t *pool)
{
    return pool ? pool->threads : 1;
}

void sbn__parallel_for(sbn_pool_t *pool, int64_t count, sbn__range_fn fn, void *ctx)
{
    int spin;
    if (count <= 0) return;
    if (pool == NULL || pool->threads == 1 || count == 1) {
        fn(ctx, 0, count);
        return;
    }
    pthread_mutex_lock(&pool->run_lock);
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->count = count;
    /* One index at a time bounces the counter's cache line between cores for every
     * index: 1024 per-channel merges of about 50 ns took longer on 2 threads than on
     * 1. Eight steps per thread keep the balance of uneven indices. */
    pool->step = count >= 16 * (int64_t)pool->threads ? count / (8 * (int64_t)pool->threads) : 1;
    atomic_store(&pool->next, 0);
    atomic_store(&pool->busy, 0);
    pool->open_gen = atomic_fetch_add(&pool->generation, 1) + 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_pieces(pool);

    pthread_mutex_lock(&pool->lock); /* close: from here on busy only falls */
    pool->open_gen = 0;
    pthread_mutex_unlock(&pool->lock);
    for (spin = 0; spin < SBN_POOL_SPINS && atomic_load(&pool->busy) > 0; spin++) cpu_relax();
    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->busy) > 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_unlock(&pool->run_lock);
}
