/*
 * pool.c - the caller-owned thread pool and the parallel loop. A pool of T threads
 * runs T-1 workers; the thread that calls an op is the T-th. A loop runs on a team
 * of W <= T threads (the caller and up to W-1 workers): sbn__pool_team makes a view
 * of the pool W threads wide, and the plan (plan.c) picks W per call from its bytes,
 * so a small call on a 64-thread pool wakes nobody. Work is handed out from an atomic
 * counter, one index at a time, or count / 8W at a time when there are many (a
 * per-channel loop); since every index writes its own result, which thread ran it
 * never changes the bits.
 *
 * Starting and joining take no lock: the caller publishes the loop and then a gate
 * word, gate = (loop number << 32) | (invited << 16) | active. Workers are numbered
 * 1..T-1, and a loop W wide invites workers 1..W-1 alone, so the same few threads
 * serve the small loops and the others stay asleep. An invited worker joins with one
 * compare-and-swap that succeeds only while the gate still carries the loop it saw;
 * it leaves with one atomic decrement. The caller, once out of indices, clears the
 * loop number (closing the gate to latecomers, such as a worker still waking up) and
 * waits only for the active count to drain. A worker spins on the loop number for a
 * while after each loop it ran, because an op runs a few loops back to back and a
 * layer several ops; then it sleeps on a condition variable, and the caller touches
 * that mutex only when an invited worker sleeps (a store-then-load on both sides,
 * sequentially consistent, means either the caller sees the sleeper or the sleeper
 * sees the new loop). Ops on one pool from several threads take turns (run_lock).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "internal.h"

#define SBN_POOL_MAX_THREADS 1024

/*
 * How long an idle thread spins before it sleeps (workers) or yields (the caller
 * waiting for a preempted worker). A futex wake-up plus the scheduler's placement
 * costs tens of microseconds, longer than many loops of an op; spinning several times
 * that catches the next loop of the same op and of the next op, while a program that
 * stops calling gets its cores back within a fraction of a millisecond.
 */
#define SBN_POOL_SPIN_NS 200000

#define GATE_ACTIVE_MASK 0xffffULL
#define GATE_INVITED(g) (((g) >> 16) & 0xffffULL)
#define GATE_LOOP(g) ((g) >> 32)

struct sbn_pool_core;
typedef struct pool_worker {
    struct sbn_pool_core *core;
    int index;         /* 1..T-1 */
    atomic_int asleep; /* 1 while in the condition wait (or about to be) */
    pthread_t thread;
} pool_worker;

struct sbn_pool_core {
    int threads;
    int started;              /* workers successfully created */
    pool_worker *workers;
    pthread_mutex_t run_lock; /* one parallel loop at a time */
    pthread_mutex_t lock;     /* sleeping workers only */
    pthread_cond_t wake;
    atomic_int stop;
    atomic_ulong loop;        /* number of the newest loop (never 0 once one ran) */
    atomic_ullong gate;       /* see the file comment */
    unsigned long loops;      /* loops started (under run_lock) */
    int64_t spin_ns;          /* how long an idle thread spins */
    /* the open loop, written before its gate is published */
    sbn__range_fn fn;
    void *ctx;
    int64_t count;
    int64_t step;             /* indices taken at a time: 1, or count / (8 W) for many small ones */
    atomic_llong next;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Takes `step` indices at a time until none is left. */
static void run_pieces(struct sbn_pool_core *core)
{
    for (;;) {
        long long i = atomic_fetch_add(&core->next, core->step);
        if (i >= core->count) break;
        core->fn(core->ctx, (int64_t)i,
                 i + core->step < core->count ? (int64_t)(i + core->step) : core->count);
    }
}

/* Spins until the loop number differs from `seen` or the pool stops, until `deadline`;
 * the clock is read once every 64 pauses. 1 when something changed. */
static int spin_for_loop(struct sbn_pool_core *core, unsigned long seen, int64_t deadline)
{
    for (;;) {
        int i;
        for (i = 0; i < 64; i++) {
            if (atomic_load_explicit(&core->loop, memory_order_acquire) != seen ||
                atomic_load_explicit(&core->stop, memory_order_relaxed))
                return 1;
            cpu_relax();
        }
        if (now_ns() > deadline) return 0;
    }
}

/* Joins loop `number` if it invites worker `index` and its gate is still open: one CAS. */
static int try_join(struct sbn_pool_core *core, unsigned long number, int index)
{
    unsigned long long g = atomic_load_explicit(&core->gate, memory_order_acquire);
    do {
        if (GATE_LOOP(g) != (number & 0xffffffffUL) || (unsigned long long)index > GATE_INVITED(g))
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&core->gate, &g, g + 1, memory_order_acq_rel,
                                                    memory_order_acquire));
    return 1;
}

static void *worker_main(void *arg)
{
    pool_worker *self = arg;
    struct sbn_pool_core *core = self->core;
    unsigned long seen = 0;
    int64_t spin_until = now_ns() + core->spin_ns;
    for (;;) {
        unsigned long number;
        if (!spin_for_loop(core, seen, spin_until)) {
            pthread_mutex_lock(&core->lock);
            atomic_store(&self->asleep, 1);
            while (!atomic_load(&core->stop) && atomic_load(&core->loop) == seen)
                pthread_cond_wait(&core->wake, &core->lock);
            atomic_store(&self->asleep, 0);
            pthread_mutex_unlock(&core->lock);
        }
        if (atomic_load(&core->stop)) return NULL;
        number = atomic_load_explicit(&core->loop, memory_order_acquire);
        seen = number;
        if (!try_join(core, number, self->index)) continue; /* not invited, or closed */
        run_pieces(core);
        atomic_fetch_sub_explicit(&core->gate, 1, memory_order_release);
        spin_until = now_ns() + core->spin_ns;
    }
}

static void stop_workers(struct sbn_pool_core *core)
{
    int i;
    atomic_store(&core->stop, 1);
    pthread_mutex_lock(&core->lock);
    pthread_cond_broadcast(&core->wake);
    pthread_mutex_unlock(&core->lock);
    for (i = 0; i < core->started; i++) pthread_join(core->workers[i].thread, NULL);
}

static void free_pool(struct sbn_pool *pool)
{
    struct sbn_pool_core *core = pool->core;
    pthread_cond_destroy(&core->wake);
    pthread_mutex_destroy(&core->lock);
    pthread_mutex_destroy(&core->run_lock);
    sbn__free(core->workers);
    sbn__free(core);
    sbn__free(pool);
}

SBN_API sbn_status sbn_pool_create(int threads, sbn_pool_t **out)
{
    struct sbn_pool *pool;
    struct sbn_pool_core *core;
    int i;

    sbn__clear_error();
    if (out == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "pool (the output pointer) is NULL");
    *out = NULL;
    if (threads < 1 || threads > SBN_POOL_MAX_THREADS)
        return sbn__error(SBN_ERR_BAD_VALUE, "threads is %d; expected 1 to %d", threads,
                          SBN_POOL_MAX_THREADS);
    pool = sbn__calloc(1, sizeof *pool);
    core = sbn__calloc(1, sizeof *core);
    if (pool == NULL || core == NULL ||
        (threads > 1 && (core->workers = sbn__calloc((size_t)(threads - 1),
                                                     sizeof *core->workers)) == NULL)) {
        sbn__free(core);
        sbn__free(pool);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate a pool of %d threads", threads);
    }
    pool->core = core;
    pool->threads = threads;
    core->threads = threads;
    pthread_mutex_init(&core->run_lock, NULL);
    pthread_mutex_init(&core->lock, NULL);
    pthread_cond_init(&core->wake, NULL);
    atomic_init(&core->next, 0);
    atomic_init(&core->gate, 0);
    atomic_init(&core->loop, 0);
    atomic_init(&core->stop, 0);
    core->spin_ns = SBN_POOL_SPIN_NS;
    for (i = 0; i < threads - 1; i++) {
        core->workers[i].core = core;
        core->workers[i].index = i + 1;
        atomic_init(&core->workers[i].asleep, 0);
        if (pthread_create(&core->workers[i].thread, NULL, worker_main, &core->workers[i]) != 0) {
            stop_workers(core);
            free_pool(pool);
            return sbn__error(SBN_ERR_THREAD, "could not create worker thread %d of %d", i + 1,
                              threads - 1);
        }
        core->started++;
    }
    *out = pool;
    return SBN_OK;
}

SBN_API void sbn_pool_destroy(sbn_pool_t *pool)
{
    if (pool == NULL) return;
    stop_workers(pool->core);
    free_pool(pool);
}

SBN_API int sbn_pool_threads(const sbn_pool_t *pool)
{
    return pool ? pool->threads : 1;
}

sbn_pool_t *sbn__pool_team(sbn_pool_t *pool, int threads, sbn_pool_t *view)
{
    if (pool == NULL || threads <= 1) return NULL;
    if (threads >= pool->threads) return pool;
    view->core = pool->core;
    view->threads = threads;
    return view;
}

/* Waits until every admitted worker has left the closed loop: spins, then yields (a
 * worker can only be late when the machine runs more threads than it has cores). */
static void wait_for_team(struct sbn_pool_core *core)
{
    int64_t deadline = 0;
    int i = 0;
    while ((atomic_load_explicit(&core->gate, memory_order_acquire) & GATE_ACTIVE_MASK) != 0) {
        cpu_relax();
        if (++i % 64 != 0) continue;
        if (deadline == 0) deadline = now_ns() + core->spin_ns;
        else if (now_ns() > deadline) sched_yield();
    }
}

void sbn__parallel_for(sbn_pool_t *pool, int64_t count, sbn__range_fn fn, void *ctx)
{
    struct sbn_pool_core *core;
    int64_t width, k;
    unsigned long number;
    if (count <= 0) return;
    width = pool == NULL ? 1 : pool->threads < count ? pool->threads : count;
    if (width <= 1) {
        fn(ctx, 0, count);
        return;
    }
    core = pool->core;
    pthread_mutex_lock(&core->run_lock);
    core->fn = fn;
    core->ctx = ctx;
    core->count = count;
    /* One index at a time bounces the counter's cache line between cores for every
     * index; eight steps per thread keep the balance of uneven indices. */
    core->step = count >= 16 * width ? count / (8 * width) : 1;
    atomic_store_explicit(&core->next, 0, memory_order_relaxed);
    number = ++core->loops;
    if ((number & 0xffffffffUL) == 0) number = ++core->loops; /* 0 marks a closed gate */
    atomic_store_explicit(&core->gate,
                          (unsigned long long)(number & 0xffffffffUL) << 32 |
                              (unsigned long long)(width - 1) << 16,
                          memory_order_release);
    atomic_store(&core->loop, number); /* seq_cst: pairs with the sleepers' check */
    for (k = 0; k < width - 1; k++)
        if (atomic_load(&core->workers[k].asleep)) {
            pthread_mutex_lock(&core->lock);
            pthread_cond_broadcast(&core->wake);
            pthread_mutex_unlock(&core->lock);
            break;
        }

    run_pieces(core);

    /* close the gate to latecomers (keeps the admitted and active counts), then drain */
    atomic_fetch_and_explicit(&core->gate, 0xffffffffULL, memory_order_acq_rel);
    wait_for_team(core);
    pthread_mutex_unlock(&core->run_lock);
}
