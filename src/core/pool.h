/*
 * pool.h - the parallel loop over a caller-owned pool (pool.c) and the pool handle.
 * A loop hands out independent pieces of [0, count); callers make each piece's
 * result depend only on its index, never on which thread ran it, which is what
 * keeps the bits the same for any thread count. How wide a loop runs is the plan's
 * decision (ops/plan.h); the pool only provides teams of a given width.
 */
#ifndef SBN_CORE_POOL_H
#define SBN_CORE_POOL_H

#include <stdint.h>

#include "syncbn/syncbn.h"

typedef void (*sbn__range_fn)(void *ctx, int64_t begin, int64_t end);
/*
 * Calls fn over [0, count) in pieces on the pool's threads (NULL: serially on the
 * caller). Pieces are independent; callers make each piece's result depend only
 * on its index, never on which thread ran it.
 */
void sbn__parallel_for(sbn_pool_t *pool, int64_t count, sbn__range_fn fn, void *ctx);
/*
 * A pool handle: the shared core (workers, gate) and how many of its threads a loop
 * may use. The pool's own handle is as wide as the pool; a team is a narrower handle
 * on the caller's stack.
 */
struct sbn_pool {
    struct sbn_pool_core *core;
    int threads;
};
/* A handle `threads` wide over pool's core, written to *view: NULL (run serially) when
 * pool is NULL or threads <= 1, pool itself when threads >= its width. */
sbn_pool_t *sbn__pool_team(sbn_pool_t *pool, int threads, sbn_pool_t *view);

/*
 * What a pool's loops cost beyond their work, since its creation or the last reset:
 * loops of 2 or more threads, the workers they invited, loops that had to wake a
 * sleeping worker (tens of microseconds), invitations the caller cancelled because the
 * worker had not claimed them when the caller ran out of work (it then ran their pieces
 * itself), workers the caller had to wait for after that, and the time it waited
 * (total, and the longest of one loop). Benchmarks read them (bench_ops --pool-stats).
 */
typedef struct sbn__pool_stats {
    int64_t loops, invited, woke_sleepers, cancelled, waited;
    int64_t wait_ns, wait_ns_max;
} sbn__pool_stats;
/* Copies the counts into *out (zeros for a NULL pool) and, when reset, starts them over.
 * Takes the pool's turn, so not from inside a loop's piece. */
void sbn__pool_stats_take(sbn_pool_t *pool, sbn__pool_stats *out, int reset);

#endif /* SBN_CORE_POOL_H */
