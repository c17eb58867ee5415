/*
 * row_reduce.c - the row path of the channel reductions, for tensors whose
 * channels sit side by side in memory (channels-last, (N, C)). A task takes its
 * segment's rows in order, whole (all of its channels at once), and the row
 * kernels of kernels.h add row r to lane r % 16 of every channel (lanes stored
 * lane-major, a[l][c]). The lanes of all C channels live in the workspace, one
 * slot per segment (SBN_ROW_SLOTS at most); when the threads split a segment's
 * channels into blocks, each block keeps its lanes, a[16][cn], b[16][cn] and its
 * shifts, in its own part of the slot (from c0 * 33 doubles): lanes of C apart
 * would put the threads' accumulators side by side on every lane's row, and the
 * cache lines at the 32 seams would bounce between the cores (false sharing,
 * bench_ops 2x512x32x32 NHWC stats at 2 threads). With a block of channels on
 * the stack instead, each block would re-read a slice of every row: a strided pass
 * over the whole tensor per block, slow at C = 256. A chunk of few rows that arrives
 * whole in one run (an (N, C) batch of at most 128 or 256 rows, by the kernel table:
 * sbn__plan_row_chunk_whole) skips the slot: the row_chunk kernels reduce and fold it
 * in one call, its lanes in registers or a slice of channels at a time in the L1.
 * Chunks, shifts and the fold are those of the plane path (channel_reduce.c), so the
 * bits are the same whatever the layout.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "ops/clones.h"
#include "ops/plan.h"
#include "ops/reduce.h"
#include "ops/walk.h"
#include "syncbn/syncbn.h"

typedef struct row_task {
    const sbn__reduce_job *job;
    int64_t c0, cn, ld; /* the task's channels; ld = cn, the lane stride of its region */
    double *a, *b;      /* lane l of channel c0 + j at a[l * ld + j] (the region's) */
    double *shift;      /* [cn], channel c0 + j at shift[j] */
    int64_t used;       /* lanes the chunk in progress reaches: min(its rows, 16) */
} row_task;

/* Adds rows [0, n) at p[i] (stride[i] apart) to the lanes from lane `lane`; `fresh`: the
 * lanes they reach start from +0.0 (the kernels' contract; only with kd >= 0). */
static void accumulate_rows(row_task *rt, const char *const *p, const int64_t *stride, int64_t n,
                            unsigned lane, int fresh)
{
    const sbn__reduce_job *job = rt->job;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = job->kern;
    int backward = job->kind == SBN_REDUCE_BACKWARD;
    double v0[SBN_CONVERT_PIECE], v1[SBN_CONVERT_PIECE];
    int64_t r, j, m;
    if (job->kd >= 0) {
        if (backward)
            kern->row_bwd_accum[job->kd](p[0], stride[0], p[1], stride[1], (size_t)n,
                                         (size_t)rt->cn, lane, rt->shift, rt->a, rt->b,
                                         (size_t)rt->ld, fresh);
        else
            kern->row_accum[job->kd](p[0], stride[0], (size_t)n, (size_t)rt->cn, lane, rt->shift,
                                     rt->a, rt->b, (size_t)rt->ld, fresh);
        return;
    }
    for (r = 0; r < n; r++) /* mixed dtypes: row by row, a piece of channels at a time */
        for (j = 0; j < rt->cn; j += m) {
            unsigned l = (unsigned)((lane + r) % SBN_LANES);
            m = rt->cn - j < SBN_CONVERT_PIECE ? rt->cn - j : SBN_CONVERT_PIECE;
            sbn__load_run(p[0] + (r * stride[0] + j) * (int64_t)sbn_dtype_size(w->dtype[0]),
                          w->dtype[0], 1, m, v0);
            if (backward) {
                sbn__load_run(p[1] + (r * stride[1] + j) * (int64_t)sbn_dtype_size(w->dtype[1]),
                              w->dtype[1], 1, m, v1);
                kern->row_bwd_accum[SBN_KD_F64](v0, 0, v1, 0, 1, (size_t)m, l, rt->shift + j,
                                                rt->a + j, rt->b + j, (size_t)rt->ld, 0);
            } else {
                kern->row_accum[SBN_KD_F64](v0, 0, 1, (size_t)m, l, rt->shift + j, rt->a + j,
                                            rt->b + j, (size_t)rt->ld, 0);
            }
        }
}

/* A MOMENTS chunk's shifts: its first row (first_row), each value when finite, else 0.
 * The other kinds keep the shifts the task set (0, or the centers). */
SBN_CHANNEL_LOOP static void chunk_shifts(row_task *rt, const char *first_row)
{
    int64_t j;
    if (rt->job->kind != SBN_REDUCE_MOMENTS) return;
    sbn__load_run(first_row, rt->job->walk.dtype[0], 1, rt->cn, rt->shift);
    for (j = 0; j < rt->cn; j++) rt->shift[j] = sbn__chunk_shift(rt->shift[j]);
}

/* Chunk k starts at first_row, and the run in progress gives it its first `rows` rows.
 * Its rows go to lanes 0, 1, ... in turn (a chunk starts on lane 0), so a chunk of n < 16
 * rows reaches lanes [0, n) only: just those start from +0.0 and are folded at its end
 * (the fold_rows kernel reads only those). Returns 1 when that first run reaches all of
 * them and a kernel reads the rows directly: the kernel then starts them at +0.0 itself
 * (`fresh`), and nothing is cleared here - for a chunk of few rows of many channels the
 * clear cost as much as the rows. Otherwise they are cleared here. */
static int start_chunk(row_task *rt, const char *first_row, int64_t k, int64_t rows)
{
    const sbn__reduce_job *job = rt->job;
    int64_t l, n = sbn__walk_chunk_len(&job->walk, k);
    int fresh;
    rt->used = n < SBN_LANES ? n : SBN_LANES;
    fresh = job->kd >= 0 && rows >= rt->used;
    for (l = 0; !fresh && l < rt->used; l++) {
        memset(rt->a + l * rt->ld, 0, (size_t)rt->cn * sizeof(double));
        memset(rt->b + l * rt->ld, 0, (size_t)rt->cn * sizeof(double));
    }
    chunk_shifts(rt, first_row);
    return fresh;
}

/* Chunk k's partials from its folded sums, A and B of channel j at a[j], b[j]. */
SBN_CHANNEL_LOOP static void store_chunk(row_task *rt, int64_t k)
{
    const sbn__walk *w = &rt->job->walk;
    int64_t j, n = sbn__walk_chunk_len(w, k);
    for (j = 0; j < rt->cn; j++)
        sbn__chunk_finish_sums(rt->job->kind, n, rt->shift[j], rt->a[j], rt->b[j],
                               rt->job->partial + 2 * ((rt->c0 + j) * w->chunks + k));
}

static void finish_chunk(row_task *rt, int64_t k)
{
    rt->job->kern->fold_rows(rt->a, rt->b, (size_t)rt->ld, (size_t)rt->cn, (unsigned)rt->used);
    store_chunk(rt, k);
}

/* Bytes of one element of every tensor the reduction reads (x, or dy and x). */
static int64_t row_element_bytes(const sbn__walk *w)
{
    int64_t bytes = 0;
    int i;
    for (i = 0; i < w->ntensors; i++) bytes += (int64_t)sbn_dtype_size(w->dtype[i]);
    return bytes;
}

/* Chunk k whole, its n rows at p[i]: reduced and folded by one kernel call, whose lanes
 * never leave its registers (kernels.h, row_chunk); rows beyond the L2 by the kernels
 * that prefetch them (plan.c). */
static void whole_chunk(row_task *rt, const char *const *p, const int64_t *stride, int64_t k,
                        int64_t n)
{
    const sbn__reduce_job *job = rt->job;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern =
        sbn__plan_row_chunk_prefetch(w->ntensors, n, rt->cn * row_element_bytes(w))
            ? sbn__kernels_streaming()
            : sbn__kernels(); /* not job->kern, whose table may be the streaming one */
    chunk_shifts(rt, p[0]);
    if (job->kind == SBN_REDUCE_BACKWARD)
        kern->row_bwd_chunk[job->kd](p[0], stride[0], p[1], stride[1], (size_t)n,
                                     (size_t)rt->cn, rt->shift, rt->a, rt->b);
    else
        kern->row_chunk[job->kd](p[0], stride[0], (size_t)n, (size_t)rt->cn, rt->shift, rt->a,
                                 rt->b);
    store_chunk(rt, k);
}

/* One run of rows [r, r + len) (r = the segment's start + at): split at chunk boundaries. */
typedef struct run_ctx {
    row_task *rt;
    int64_t r0;
} run_ctx;

static void row_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    const run_ctx *rc = arg;
    row_task *rt = rc->rt;
    const sbn__walk *w = &rt->job->walk;
    int64_t r = rc->r0 + at, done = 0;
    while (done < len) {
        int64_t rr = r + done, k = rr / SBN_CHUNK, end = sbn__chunk_piece_end(rr, r + len);
        int64_t n = end - rr;
        const char *q[SBN_WALK_MAX_TENSORS];
        sbn__walk_advance(w, ptr, stride, done, q);
        if (rr % SBN_CHUNK == 0 && n == sbn__walk_chunk_len(w, k) && rt->job->kd >= 0 &&
            sbn__plan_row_chunk_whole(rt->job->kern, n)) {
            whole_chunk(rt, q, stride, k, n);
            done += n;
            continue;
        }
        int fresh = rr % SBN_CHUNK == 0 ? start_chunk(rt, q[0], k, n) : 0;
        accumulate_rows(rt, q, stride, n, (unsigned)(rr % SBN_LANES), fresh);
        if (end % SBN_CHUNK == 0 || end == w->reduction) finish_chunk(rt, k);
        done += n;
    }
}

void sbn__row_reduce_task(const sbn__reduce_job *job, int64_t t)
{
    int64_t C = job->walk.channels, r0, r1, j;
    double *slot = job->row_state + (size_t)(t / job->plan.blocks) * SBN_ROW_SLOT_DOUBLES(C);
    double *region;
    row_task rt;
    run_ctx rc;
    rt.job = job;
    sbn__plan_task(&job->plan, &job->walk, t, &r0, &r1, &rt.c0, &rt.cn);
    region = slot + rt.c0 * (2 * SBN_LANES + 1);
    rt.ld = rt.cn;
    rt.a = region;
    rt.b = region + SBN_LANES * rt.cn;
    rt.shift = region + 2 * SBN_LANES * rt.cn;
    if (job->kind == SBN_REDUCE_BACKWARD) /* MOMENTS sets its shifts per chunk (start_chunk) */
        sbn__load_vec(job->center, rt.c0, rt.cn, rt.shift);
    else
        for (j = 0; j < rt.cn; j++) rt.shift[j] = 0.0;
    rc.rt = &rt;
    rc.r0 = r0;
    sbn__walk_runs(&job->walk, rt.c0, r0, r1 - r0, row_run, &rc);
}
