/*
 * one_pass.h - the one-pass schedule of batch_norm and batch_norm_backward
 * (one_pass.c): blocks of channels whose inputs fit a thread's cache, each reduced
 * and then mapped while still in cache. plan.c decides the block (sbn__one_pass_block).
 */
#ifndef SBN_OPS_ONE_PASS_H
#define SBN_OPS_ONE_PASS_H

#include <stdint.h>

#include "syncbn/syncbn.h"

/* The view of channels [c0, c0 + cn) of t (same strides). */
sbn_tensor sbn__channel_slice(const sbn_tensor *t, int64_t c0, int64_t cn);
/* Calls fn(ctx, lane, c0, cn) for every block, lane = the pool lane running it (0..T-1):
 * lane l runs blocks l, l + T, ... in order; no two calls with one lane overlap. */
typedef void (*sbn__block_fn)(void *ctx, int64_t lane, int64_t c0, int64_t cn);
void sbn__one_pass_run(int64_t channels, int64_t block, sbn__block_fn fn, void *ctx,
                       sbn_pool_t *pool);

#endif /* SBN_OPS_ONE_PASS_H */
