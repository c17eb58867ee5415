/*
 * reduce.h - the chunked channel reductions (channel_reduce.c, with the row path in
 * row_reduce.c and the rescaled retry in moments_wide.c): per channel the moments
 * (mean, M2), the plain sums, or the backward sums, over a walk whose chunks are
 * reduced by the kernels' lanes and merged in chunk order, so the bits depend on
 * the shape alone.
 */
#ifndef SBN_OPS_REDUCE_H
#define SBN_OPS_REDUCE_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "ops/plan.h"
#include "ops/walk.h"
#include "syncbn/syncbn.h"

struct sbn_kernels;

typedef enum sbn__reduce_kind {
    SBN_REDUCE_MOMENTS,      /* tensor 0 = x: (mean, M2) per chunk, merged with Chan's formula */
    SBN_REDUCE_SUMS,         /* tensor 0 = x: (sum x, sum x^2) */
    SBN_REDUCE_BACKWARD      /* tensor 0 = dy, 1 = x: (sum dy, sum dy*(x - center[c])) */
} sbn__reduce_kind;

/*
 * One channel's chunk in progress: the kernels' 2 x 16 lanes and the shift (the
 * chunk's first element for MOMENTS when finite, else 0; 0 for SUMS; the channel's
 * center for BACKWARD). sbn__chunk_finish folds the lanes of a chunk of n elements
 * into its two partials: MOMENTS (mean, M2) = (shift + A/n, B - A*A/n, raised to 0 when
 * negative; NaN stays NaN),
 * SUMS and BACKWARD (A, B), with A, B the folded lane sums (kernels.h).
 */
void sbn__chunk_finish(sbn__reduce_kind kind, int64_t n, double shift, double *a, double *b,
                       double *part);

/* The same from the folded sums A = sa, B = sb (the row path folds many channels at
 * once, and calls this per channel of every chunk: inline). A rounding can leave a tiny
 * negative M2, raised to 0; NaN (from NaN or Inf data, or squares past DBL_MAX, which
 * the merge then redoes in scaled doubles, moments_wide.c) passes, so non-finite data
 * gives a non-finite variance whatever R and the chunking. */
static inline void sbn__chunk_finish_sums(sbn__reduce_kind kind, int64_t n, double shift,
                                          double sa, double sb, double *part)
{
    if (kind == SBN_REDUCE_MOMENTS) {
        double r = sbn__pow2_recip((double)n);
        double m2 = sb - sbn__div_count(sa * sa, (double)n, r);
        part[0] = shift + sbn__div_count(sa, (double)n, r);
        part[1] = m2 < 0 ? 0.0 : m2;
    } else {
        part[0] = sa;
        part[1] = sb;
    }
}

/* Whether v is finite, as a compare (|v| <= DBL_MAX, false for Inf and NaN), which the
 * channel-loop clones vectorise: an integer test of the exponent bits, or isfinite, stays
 * scalar in the baseline build. */
static inline int sbn__finite(double v)
{
    return __builtin_fabs(v) <= DBL_MAX;
}

/* The shift a MOMENTS chunk starting with value v uses: v when finite, else 0. */
static inline double sbn__chunk_shift(double v)
{
    return sbn__finite(v) ? v : 0.0;
}

/* Shared by the plane and row paths of a reduction. */
typedef struct sbn__reduce_job {
    sbn__reduce_kind kind;
    sbn__walk walk;
    sbn__plan plan;
    const sbn_tensor *center;
    int kd;          /* kernel element type of every tensor, or -1 (convert to double first) */
    const struct sbn_kernels *kern; /* sbn__kernels(), or the table beyond the cache */
    int in_memory_order; /* the plane path reads channel after channel (channel_reduce.c) */
    int prefetch_runs;   /* short runs: the next channel's runs prefetched (plan.c) */
    double *partial; /* [C][chunks][2] */
    double *out;     /* [C][2] */
    double *row_state; /* row path: SBN_ROW_SLOTS slots of [16][C] a, [16][C] b, [C] shift */
} sbn__reduce_job;
/* The row path's task t (row_reduce.c). */
void sbn__row_reduce_task(const sbn__reduce_job *job, int64_t t);
/* The row path keeps the lanes of every channel of a row (so a chunk's rows are read
 * whole, in order) in the workspace, one slot per segment; at most SBN_ROW_SLOTS
 * segments run at once (more threads split the channels instead). */
#define SBN_ROW_SLOTS 4
#define SBN_ROW_SLOT_DOUBLES(C) ((size_t)(C) * (2 * 16 + 1))
#define SBN_PLANE_BLOCK 64 /* channels per plane-path task */

/*
 * Channel c of a MOMENTS walk again when the chunked pass left its mean or M2
 * non-finite: if every element is finite, *mean and *m2 are recomputed on x * 2^-k
 * (the same chunked scheme) and scaled back, so M2 is +Inf only when it passes
 * DBL_MAX; with a NaN or Inf element they are left as they are (moments_wide.c).
 */
void sbn__moments_wide(const sbn__walk *w, int64_t c, double *mean, double *m2);

/* Workspace bytes that sbn__channel_reduce needs for x's shape. */
size_t sbn__channel_reduce_bytes(const sbn_tensor *x);
/*
 * Per channel c, writes out[2c], out[2c+1]: for MOMENTS the mean and M2 over R
 * elements (0, 0 when R == 0); for SUMS and BACKWARD the two sums. `center` gives
 * the per-channel mean for BACKWARD (loaded through sbn__load1). `scratch` holds
 * sbn__channel_reduce_bytes(x) bytes, 8-byte aligned.
 */
void sbn__channel_reduce(sbn__reduce_kind kind, const sbn_tensor *dy_or_x, const sbn_tensor *x,
                         const sbn_tensor *center, double *out, double *scratch,
                         sbn_pool_t *pool);

#endif /* SBN_OPS_REDUCE_H */
