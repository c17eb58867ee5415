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

#endif /* SBN_CORE_POOL_H */
