/*
 * walk.h - the walk over one channel's elements (walk.c), on which every engine of
 * ops runs: the chunks that fix the order of a reduction, the runs of up to three
 * same-shaped tensors along the innermost dim, the row and short-run paths, and the
 * kernel element type a set of tensors shares (kernels/kernels.h).
 */
#ifndef SBN_OPS_WALK_H
#define SBN_OPS_WALK_H

#include <stdint.h>

#include "syncbn/syncbn.h"

/*
 * The reduction over one channel's R elements is cut into chunks of SBN_CHUNK
 * consecutive elements (in logical order over the non-channel dims). Each chunk
 * is reduced on its own, then the chunks are merged in index order: the order of
 * every floating-point operation depends on the shape only.
 */
#define SBN_CHUNK 2048

#define SBN_WALK_MAX_TENSORS 3

/* Bytes of a cache line, the unit in which cores own memory: a row split keeps each
 * thread's output whole lines, non-temporal stores write whole lines, and a prefetch
 * fetches one. */
#define SBN_LINE_BYTES 64

/*
 * The non-channel dims of x's shape with the strides of up to three same-shaped
 * tensors, with size-1 dims dropped and dims merged where every tensor allows.
 */
typedef struct sbn__walk {
    int64_t channels;   /* C */
    int64_t reduction;  /* R = numel / C */
    int64_t chunks;     /* ceil(R / SBN_CHUNK) */
    int ndims;
    int ntensors;
    int64_t size[SBN_MAX_RANK];
    int64_t stride[SBN_WALK_MAX_TENSORS][SBN_MAX_RANK];
    int64_t channel_stride[SBN_WALK_MAX_TENSORS];
    char *data[SBN_WALK_MAX_TENSORS];
    sbn_dtype dtype[SBN_WALK_MAX_TENSORS];
} sbn__walk;

void sbn__walk_init(sbn__walk *w, const sbn_tensor *const *tensors, int ntensors);
/* Length of chunk k: SBN_CHUNK except for the last. */
int64_t sbn__walk_chunk_len(const sbn__walk *w, int64_t k);
/*
 * Calls fn once per run of [r0, r0 + n) of channel c: a stretch along the innermost
 * walk dim, where tensor i's elements start at ptr[i] and are stride[i] elements
 * apart; `at` is the run's position within [r0, r0 + n).
 */
typedef void (*sbn__run_fn)(void *ctx, char *const *ptr, const int64_t *stride, int64_t at,
                            int64_t len);
void sbn__walk_runs(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__run_fn fn,
                    void *ctx);
/*
 * Rows: when every tensor has channel stride 1 (channels-last and (N, C) tensors),
 * a "row" r holds channels 0..C-1 side by side; the walk's runs are then runs of
 * rows, `stride` elements apart. Otherwise the engine goes plane by plane: for each
 * run along the innermost walk dim, every channel of a block in turn, which for
 * NCHW is plain memory order.
 */
int sbn__walk_is_rows(const sbn__walk *w);
/* out[i] = ptr[i] advanced by `steps` elements of stride[i] (tensor i's dtype). */
void sbn__walk_advance(const sbn__walk *w, char *const *ptr, const int64_t *stride, int64_t steps,
                       const char **out);
/* The end of the piece of [rr, run_end) that stays inside rr's chunk. */
static inline int64_t sbn__chunk_piece_end(int64_t rr, int64_t run_end)
{
    int64_t end = (rr / SBN_CHUNK + 1) * SBN_CHUNK;
    return end < run_end ? end : run_end;
}
/*
 * Short runs, taken a channel at a time: a walk of two dims (runs along the outer
 * one; every tensor with unit inner strides) whose runs span at most
 * SBN_SHORT_RUN_BYTES of all its tensors together - NCHW with small planes (7x7; 14x14
 * but for the fp32 backward, whose runs of dy and x, 1568 bytes, amortise a call
 * each and lost when grouped from memory: bench_ops 32x1024x14x14). The
 * reductions then hand a channel's consecutive runs to one runs kernel (kernels.h)
 * instead of one call per run. sbn__walk_run_groups calls fn once per stretch of
 * [r0, r0 + n) of channel c: `runs` whole runs of `len` (the inner size), or one piece
 * of a run (runs = 1, len shorter); tensor i's run j of the stretch starts at ptr[i] +
 * j * run_stride[i] elements; `at` is the stretch's position within [r0, r0 + n).
 */
#define SBN_SHORT_RUN_BYTES 1024
int sbn__walk_short_runs(const sbn__walk *w);
/* Runs per window when cn channels take their short runs a window at a time: the
 * window of the cn channels spans about SBN_RUNS_WINDOW_BYTES (all tensors), so it stays
 * in cache while the channels take their runs out of it, one channel at a time. */
#define SBN_RUNS_WINDOW_BYTES ((int64_t)256 << 10)
int64_t sbn__runs_window(const sbn__walk *w, int64_t cn);

/* Calls visit(ctx, line) for every cache line (the address of its first byte) of every
 * whole run of channel c that holds a row of [r0, r1), in each tensor of a short-run walk
 * (two dims, unit inner strides), run after run; inline, so that a constant visit is
 * inlined too. sbn__walk_prefetch_runs prefetches those lines (plan.c's
 * sbn__plan_prefetch_runs says when); tests record them. */
static inline void sbn__walk_run_lines(const sbn__walk *w, int64_t c, int64_t r0, int64_t r1,
                                       void (*visit)(void *ctx, uintptr_t line), void *ctx)
{
    int64_t len = w->size[1], outer;
    int i;
    for (i = 0; i < w->ntensors; i++) {
        int64_t es = (int64_t)sbn_dtype_size(w->dtype[i]);
        for (outer = r0 / len; r1 > r0 && outer <= (r1 - 1) / len; outer++) {
            const char *run =
                w->data[i] + (c * w->channel_stride[i] + outer * w->stride[i][0]) * es;
            uintptr_t line = (uintptr_t)run & ~(uintptr_t)(SBN_LINE_BYTES - 1);
            uintptr_t last = (uintptr_t)(run + len * es - 1);
            for (; line <= last; line += SBN_LINE_BYTES) visit(ctx, line);
        }
    }
}
void sbn__walk_prefetch_runs(const sbn__walk *w, int64_t c, int64_t r0, int64_t r1);
/* Tests: 0 turns the short-run path off, 1 back on (the default). */
void sbn__short_runs_set(int on);
typedef void (*sbn__runs_fn)(void *ctx, char *const *ptr, const int64_t *run_stride, int64_t at,
                             int64_t runs, int64_t len);
void sbn__walk_run_groups(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__runs_fn fn,
                          void *ctx);
/* The kernel element type (sbn_kdtype) shared by every tensor of the walk, or -1. */
int sbn__walk_kdtype(const sbn__walk *w);
/* 1 when every tensor steps by one element along the innermost walk dim. */
int sbn__walk_unit_inner(const sbn__walk *w);

/* Elements converted to double at a time where a kernel cannot read a tensor directly. */
#define SBN_CONVERT_PIECE 256

#endif /* SBN_OPS_WALK_H */
