/*
 * pool.c - the caller-owned thread pool and the parallel loop. A pool of T threads
 * runs T-1 workers; the thread that calls an op is the T-th. A loop runs on a team
 * of W <= T threads (the caller and workers 1..W-1): sbn__pool_team makes a view of
 * the pool W threads wide, and the plan (plan.c) picks W per call from its work, so a
 * small call on a 64-thread pool wakes nobody, and the same few workers serve the
 * small loops while the others sleep.
 *
 * Every worker has a slot of its own cache line, slot = (loop number << 2) | phase.
 * The caller publishes the loop's descriptor, then writes "invited" into the slots of
 * the team; a worker, spinning on its own slot, claims the loop with a compare-and-swap
 * to "running" and writes "done" when it has finished. Once out of work, the caller
 * turns every slot still "invited" into "cancelled" (a worker still waking up, or
 * asleep: the caller does not wait for it) and waits for the "running" ones. So
 * starting and joining W threads costs W-1 cache-line transfers each way and no lock,
 * with no line that all the workers fight over. Work is handed out in pieces of
 * `step` indices (1, or count / 8W when there are many small ones, a per-channel
 * loop): member j of the team first takes piece j, then pieces from a shared counter,
 * and the caller runs the first piece of a member it cancelled. Every index writes its
 * own result, so which thread ran it never changes the bits.
 *
 * An idle worker spins on its slot for SBN_POOL_SPIN_NS after the last loop it ran,
 * because an op runs a few loops back to back and a layer several ops; then it sleeps
 * on a condition variable, and the caller touches the sleepers' mutex only when a
 * worker it invites is asleep (a store-then-load on both sides, sequentially consistent:
 * either the caller sees the sleeper's flag or the sleeper sees its slot change). The
 * workers sleep in groups of doubling size, members [2^g, 2^(g+1)) on condition variable
 * g, and a loop wakes the groups its team reaches: at most log2(W) + 1 broadcasts, and
 * never more than about W sleepers. One variable for the whole pool woke every sleeper
 * for a loop of two, and on a pool larger than the machine those wake-ups, each taking
 * the mutex to go back to sleep, held the caller off its CPU; one variable per worker
 * made a wide loop pay a system call per member (bench_pool, cold loops). Ops on one
 * pool from several threads take turns (run_lock).
 *
 * The caller also counts what each loop cost beyond its work (sbn__pool_stats: loops,
 * members invited, sleepers woken, invitations cancelled, members waited for and the
 * time spent waiting), under run_lock and with the clock read only when it waits, so
 * that a benchmark can tell where a slow loop's time went (bench_ops --pool-stats).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/env.h"
#include "core/export.h"
#include "core/machine.h"
#include "core/pool.h"
#include "core/status.h"
#include "syncbn/syncbn.h"

#define SBN_POOL_MAX_THREADS 1024

/*
 * How long an idle thread spins before it sleeps (workers) or yields (the caller
 * waiting for a preempted worker). A futex wake-up plus the scheduler's placement
 * costs tens of microseconds, longer than many loops of an op; spinning several times
 * that catches the next loop of the same op and of the next op, while a program that
 * stops calling gets its cores back within a fraction of a millisecond.
 */
#define SBN_POOL_SPIN_NS 200000
/* Wake-up groups: members [2^g, 2^(g+1)), g < SBN_POOL_GROUPS, cover 1..SBN_POOL_MAX_THREADS-1. */
#define SBN_POOL_GROUPS 10
#define SBN_CACHE_LINE 64

enum { PHASE_INVITED = 0, PHASE_RUNNING = 1, PHASE_DONE = 2, PHASE_CANCELLED = 3 };
#define SLOT(number, phase) ((unsigned long)(number) << 2 | (unsigned long)(phase))
#define SLOT_NUMBER(s) ((s) >> 2)
#define SLOT_PHASE(s) ((int)((s)&3UL))

struct sbn_pool_core;
typedef struct pool_worker {
    _Alignas(SBN_CACHE_LINE) atomic_ulong slot; /* written by the caller and this worker */
    atomic_int asleep;                          /* 1 while in (or entering) the condition wait */
    int index;                                  /* 1..T-1: its piece in a loop */
    struct sbn_pool_core *core;
    pthread_t thread;
} pool_worker;

struct sbn_pool_core {
    int started;             /* workers successfully created */
    void *self_block;        /* the allocation behind this struct */
    void *workers_block;     /* the allocation behind `workers` */
    pool_worker *workers;    /* [T-1], one cache line each */
    pthread_mutex_t run_lock; /* one parallel loop at a time */
    pthread_mutex_t lock;    /* sleeping workers only */
    pthread_cond_t wake[SBN_POOL_GROUPS]; /* group g: members [2^g, 2^(g+1)) */
    int conds;               /* groups whose `wake` is initialised */
    atomic_int stop;
    unsigned long loops;     /* loops started (under run_lock) */
    sbn__pool_stats stats;   /* what the loops cost beyond their work (under run_lock) */
    int64_t spin_ns;
    /* the open loop, written before the slots invite anyone */
    sbn__range_fn fn;
    void *ctx;
    int64_t count, step, pieces, width;
    _Alignas(SBN_CACHE_LINE) atomic_llong next; /* the next shared piece */
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

static void run_piece(struct sbn_pool_core *core, int64_t piece)
{
    int64_t begin = piece * core->step;
    int64_t end = begin + core->step < core->count ? begin + core->step : core->count;
    core->fn(core->ctx, begin, end);
}

/* Piece `first` (this member's own), then shared pieces until none is left. A loop of no
 * more pieces than members (the plan's tasks, one a thread) has no shared ones: every
 * member leaves without touching the counter, whose line W members would otherwise take
 * in turn at the end of every loop. */
static void run_pieces(struct sbn_pool_core *core, int64_t first)
{
    if (first < core->pieces) run_piece(core, first);
    if (core->pieces <= core->width) return;
    for (;;) {
        long long p = atomic_fetch_add_explicit(&core->next, 1, memory_order_relaxed);
        if (p >= core->pieces) break;
        run_piece(core, (int64_t)p);
    }
}

/* Spins until the slot's loop number differs from `seen` or the pool stops, until
 * `deadline`; the clock is read once every 64 pauses. 1 when something changed. */
static int spin_for_slot(pool_worker *self, unsigned long seen, int64_t deadline)
{
    for (;;) {
        int i;
        for (i = 0; i < 64; i++) {
            if (SLOT_NUMBER(atomic_load_explicit(&self->slot, memory_order_acquire)) != seen ||
                atomic_load_explicit(&self->core->stop, memory_order_relaxed))
                return 1;
            cpu_relax();
        }
        if (now_ns() > deadline) return 0;
    }
}

/* The wake-up group of member m >= 1: floor(log2(m)). */
static int wake_group(int m)
{
    int g = 0;
    while (m >> (g + 1)) g++;
    return g;
}

/* Wakes the groups that hold a sleeping member of a team `width` wide (members
 * 1..width-1). The flags are read under the lock, where the sleepers set them. */
static void wake_team(struct sbn_pool_core *core, int64_t width)
{
    int64_t lo, m;
    int g;
    pthread_mutex_lock(&core->lock);
    for (g = 0, lo = 1; lo < width; g++, lo *= 2) {
        int64_t hi = 2 * lo < width ? 2 * lo : width;
        for (m = lo; m < hi; m++)
            if (atomic_load(&core->workers[m - 1].asleep)) {
                pthread_cond_broadcast(&core->wake[g]);
                break;
            }
    }
    pthread_mutex_unlock(&core->lock);
}

static void *worker_main(void *arg)
{
    pool_worker *self = arg;
    struct sbn_pool_core *core = self->core;
    unsigned long seen = 0;
    int64_t spin_until = now_ns() + core->spin_ns;
    for (;;) {
        unsigned long s;
        if (!spin_for_slot(self, seen, spin_until)) {
            pthread_mutex_lock(&core->lock);
            atomic_store(&self->asleep, 1);
            while (!atomic_load(&core->stop) && SLOT_NUMBER(atomic_load(&self->slot)) == seen)
                pthread_cond_wait(&core->wake[wake_group(self->index)], &core->lock);
            atomic_store(&self->asleep, 0);
            pthread_mutex_unlock(&core->lock);
        }
        if (atomic_load(&core->stop)) return NULL;
        s = atomic_load_explicit(&self->slot, memory_order_acquire);
        seen = SLOT_NUMBER(s);
        if (SLOT_PHASE(s) == PHASE_INVITED &&
            atomic_compare_exchange_strong_explicit(&self->slot, &s, SLOT(seen, PHASE_RUNNING),
                                                    memory_order_acq_rel, memory_order_acquire)) {
            run_pieces(core, self->index);
            atomic_store_explicit(&self->slot, SLOT(seen, PHASE_DONE), memory_order_release);
        }
        /* Spins for the next loop (an op's loops come back to back), also when this one was
         * cancelled (the caller went on without this worker): asleep again at once, the
         * worker would be late by a whole wake-up for the next loop too, and could be
         * cancelled loop after loop while its caller runs its pieces. */
        spin_until = now_ns() + core->spin_ns;
    }
}

static void stop_workers(struct sbn_pool_core *core)
{
    int i;
    atomic_store(&core->stop, 1);
    pthread_mutex_lock(&core->lock);
    for (i = 0; i < core->conds; i++) pthread_cond_broadcast(&core->wake[i]);
    pthread_mutex_unlock(&core->lock);
    for (i = 0; i < core->started; i++) pthread_join(core->workers[i].thread, NULL);
}

/* `bytes` of zeroed memory starting on a cache line; *block is what to free. */
static void *zalloc_lines(size_t bytes, void **block)
{
    char *raw = sbn__calloc(1, bytes + SBN_CACHE_LINE);
    *block = raw;
    if (raw == NULL) return NULL;
    return raw + (SBN_CACHE_LINE - (uintptr_t)raw % SBN_CACHE_LINE) % SBN_CACHE_LINE;
}

static void free_pool(struct sbn_pool *pool)
{
    struct sbn_pool_core *core = pool->core;
    if (core != NULL) {
        int i;
        for (i = 0; i < core->conds; i++) pthread_cond_destroy(&core->wake[i]);
        pthread_mutex_destroy(&core->lock);
        pthread_mutex_destroy(&core->run_lock);
        sbn__free(core->workers_block);
        sbn__free(core->self_block);
    }
    sbn__free(pool);
}

SBN_API sbn_status sbn_pool_create(int threads, sbn_pool_t **out)
{
    struct sbn_pool *pool;
    struct sbn_pool_core *core = NULL;
    void *block = NULL;
    int i;

    sbn__clear_error();
    if (out == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "pool (the output pointer) is NULL");
    *out = NULL;
    if (threads < 1 || threads > SBN_POOL_MAX_THREADS)
        return sbn__error(SBN_ERR_BAD_VALUE, "threads is %d; expected 1 to %d", threads,
                          SBN_POOL_MAX_THREADS);
    pool = sbn__calloc(1, sizeof *pool);
    if (pool != NULL) core = zalloc_lines(sizeof *core, &block);
    if (core != NULL) {
        core->self_block = block;
        if (threads > 1)
            core->workers = zalloc_lines((size_t)(threads - 1) * sizeof *core->workers,
                                         &core->workers_block);
    }
    if (pool == NULL || core == NULL || (threads > 1 && core->workers == NULL)) {
        if (core != NULL) sbn__free(core->workers_block);
        sbn__free(block);
        sbn__free(pool);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate a pool of %d threads", threads);
    }
    pool->core = core;
    pool->threads = threads;
    core->spin_ns = SBN_POOL_SPIN_NS;
    pthread_mutex_init(&core->run_lock, NULL);
    pthread_mutex_init(&core->lock, NULL);
    atomic_init(&core->next, 0);
    atomic_init(&core->stop, 0);
    for (i = 0; i < SBN_POOL_GROUPS; i++) {
        if (pthread_cond_init(&core->wake[i], NULL) != 0) {
            free_pool(pool);
            return sbn__error(SBN_ERR_THREAD, "could not create the pool's wake-up %d", i);
        }
        core->conds++;
    }
    for (i = 0; i < threads - 1; i++) {
        pool_worker *w = &core->workers[i];
        w->core = core;
        w->index = i + 1;
        atomic_init(&w->slot, SLOT(0, PHASE_DONE));
        atomic_init(&w->asleep, 0);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
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

SBN_API int sbn_pool_default_threads(void)
{
    int n = sbn__env_get()->num_threads; /* 1..SBN_POOL_MAX_THREADS when set and valid, else 0 */
    if (n <= 0) n = sbn__default_cpus(); /* mask, quota and the local ranks' shares, now */
    return n > SBN_POOL_MAX_THREADS ? SBN_POOL_MAX_THREADS : n;
}

sbn_pool_t *sbn__pool_team(sbn_pool_t *pool, int threads, sbn_pool_t *view)
{
    if (pool == NULL || threads <= 1) return NULL;
    if (threads >= pool->threads) return pool;
    view->core = pool->core;
    view->threads = threads;
    return view;
}

/* Waits until worker w, which claimed loop `number`, has written "done": spins, then
 * yields (a worker can only be that late when the machine runs more threads than it
 * has cores, or the piece is long). */
static void wait_for_worker(struct sbn_pool_core *core, pool_worker *w, unsigned long number)
{
    int64_t deadline = 0;
    int i = 0;
    while (atomic_load_explicit(&w->slot, memory_order_acquire) != SLOT(number, PHASE_DONE)) {
        cpu_relax();
        if (++i % 64 != 0) continue;
        if (deadline == 0) deadline = now_ns() + core->spin_ns;
        else if (now_ns() > deadline) sched_yield();
    }
}

void sbn__pool_stats_take(sbn_pool_t *pool, sbn__pool_stats *out, int reset)
{
    struct sbn_pool_core *core;
    if (out != NULL) memset(out, 0, sizeof *out);
    if (pool == NULL) return;
    core = pool->core;
    pthread_mutex_lock(&core->run_lock);
    if (out != NULL) *out = core->stats;
    if (reset) memset(&core->stats, 0, sizeof core->stats);
    pthread_mutex_unlock(&core->run_lock);
}

void sbn__parallel_for(sbn_pool_t *pool, int64_t count, sbn__range_fn fn, void *ctx)
{
    struct sbn_pool_core *core;
    int64_t width, k;
    unsigned long number;
    int sleeper = 0;
    int64_t waited_from = 0;
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
     * index; eight pieces per thread keep the balance of uneven indices. */
    core->step = count >= 16 * width ? count / (8 * width) : 1;
    core->pieces = (count + core->step - 1) / core->step;
    core->width = width;
    atomic_store_explicit(&core->next, width, memory_order_relaxed);
    number = ++core->loops;
    /* release stores, then one full fence before reading the sleepers' flags (pairs with
     * the sleeper's store-then-load): a sequentially consistent store per slot would
     * wait for each line's transfer in turn */
    for (k = 0; k < width - 1; k++)
        atomic_store_explicit(&core->workers[k].slot, SLOT(number, PHASE_INVITED),
                              memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    for (k = 0; k < width - 1 && !sleeper; k++) sleeper = atomic_load(&core->workers[k].asleep);
    core->stats.loops++;
    core->stats.invited += width - 1;
    if (sleeper) {
        core->stats.woke_sleepers++;
        wake_team(core, width);
    }

    run_pieces(core, 0);

    /* cancel the invitations not taken up yet (running their first pieces here), then
     * wait for the members that did take them */
    for (k = 0; k < width - 1; k++) {
        pool_worker *w = &core->workers[k];
        unsigned long s = SLOT(number, PHASE_INVITED);
        /* a plain load first: a locked compare-and-swap on every slot would take each
         * line in turn even when its worker has long claimed it */
        if (atomic_load_explicit(&w->slot, memory_order_acquire) != s) continue;
        if (atomic_compare_exchange_strong_explicit(&w->slot, &s, SLOT(number, PHASE_CANCELLED),
                                                    memory_order_acq_rel, memory_order_acquire)) {
            core->stats.cancelled++;
            if (w->index < core->pieces) run_piece(core, w->index);
        }
    }
    for (k = 0; k < width - 1; k++) {
        pool_worker *w = &core->workers[k];
        unsigned long s = atomic_load_explicit(&w->slot, memory_order_acquire);
        if (s == SLOT(number, PHASE_CANCELLED) || s == SLOT(number, PHASE_DONE)) continue;
        if (waited_from == 0) waited_from = now_ns();
        core->stats.waited++;
        wait_for_worker(core, w, number);
    }
    if (waited_from != 0) {
        int64_t ns = now_ns() - waited_from;
        core->stats.wait_ns += ns;
        if (ns > core->stats.wait_ns_max) core->stats.wait_ns_max = ns;
    }
    pthread_mutex_unlock(&core->run_lock);
}
