/*
 * row_reduce.c - the row path of the channel reductions, for tensors whose
 * channels sit side by side in memory (channels-last, (N, C)): a task takes its
 * segment chunk by chunk, and each chunk's rows once per block of up to
 * SBN_ROW_BLOCK channels (the chunk stays in the cache between blocks); the row
 * kernels of kernels.h add row r to lane r % 16 of every channel of the block
 * (lanes stored lane-major, a[l][j]). Chunks, shifts and the fold are
 * those of the plane path (channel_reduce.c), so the bits are the same whatever
 * the layout. Everything lives on the task's stack (about 17 KB).
 */
#include <string.h>

#include "core/internal.h"
#include "kernels/kernels.h"

typedef struct row_task {
    const sbn__reduce_job *job;
    int64_t r0, c0, cn;
    double a[SBN_LANES * SBN_ROW_BLOCK], b[SBN_LANES * SBN_ROW_BLOCK];
    double shift[SBN_ROW_BLOCK];
} row_task;

/* Adds rows [0, n) at p[i] (stride[i] apart) to the lanes from lane `lane`. */
static void accumulate_rows(row_task *rt, const char *const *p, const int64_t *stride, int64_t n,
                            unsigned lane)
{
    const sbn__reduce_job *job = rt->job;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = sbn__kernels();
    int backward = job->kind == SBN_REDUCE_BACKWARD;
    double v0[SBN_ROW_BLOCK], v1[SBN_ROW_BLOCK];
    int64_t r;
    if (job->kd >= 0) {
        if (backward)
            kern->row_bwd_accum[job->kd](p[0], stride[0], p[1], stride[1], (size_t)n,
                                         (size_t)rt->cn, lane, rt->shift, rt->a, rt->b,
                                         SBN_ROW_BLOCK);
        else
            kern->row_accum[job->kd](p[0], stride[0], (size_t)n, (size_t)rt->cn, lane, rt->shift,
                                     rt->a, rt->b, SBN_ROW_BLOCK);
        return;
    }
    for (r = 0; r < n; r++) { /* mixed dtypes: row by row through doubles */
        unsigned l = (unsigned)((lane + r) % SBN_LANES);
        sbn__load_run(p[0] + r * stride[0] * (int64_t)sbn_dtype_size(w->dtype[0]), w->dtype[0], 1,
                      rt->cn, v0);
        if (backward) {
            sbn__load_run(p[1] + r * stride[1] * (int64_t)sbn_dtype_size(w->dtype[1]),
                          w->dtype[1], 1, rt->cn, v1);
            kern->row_bwd_accum[SBN_KD_F64](v0, 0, v1, 0, 1, (size_t)rt->cn, l, rt->shift, rt->a,
                                            rt->b, SBN_ROW_BLOCK);
        } else {
            kern->row_accum[SBN_KD_F64](v0, 0, 1, (size_t)rt->cn, l, rt->shift, rt->a, rt->b,
                                        SBN_ROW_BLOCK);
        }
    }
}

static void finish_chunk(row_task *rt, int64_t k)
{
    const sbn__walk *w = &rt->job->walk;
    int64_t j, l, n = sbn__walk_chunk_len(w, k);
    for (j = 0; j < rt->cn; j++) {
        double a[SBN_LANES], b[SBN_LANES];
        for (l = 0; l < SBN_LANES; l++) {
            a[l] = rt->a[l * SBN_ROW_BLOCK + j];
            b[l] = rt->b[l * SBN_ROW_BLOCK + j];
        }
        sbn__chunk_finish(rt->job->kind, n, rt->shift[j], a, b,
                          rt->job->partial + 2 * ((rt->c0 + j) * w->chunks + k));
    }
}

/* One run of rows [r, r + len): split at chunk boundaries. */
static void row_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    row_task *rt = arg;
    const sbn__reduce_job *job = rt->job;
    const sbn__walk *w = &job->walk;
    int64_t r = rt->r0 + at, done = 0, j;
    while (done < len) {
        int64_t rr = r + done, k = rr / SBN_CHUNK, end = sbn__chunk_piece_end(rr, r + len);
        int64_t n = end - rr;
        const char *q[SBN_WALK_MAX_TENSORS];
        sbn__walk_advance(w, ptr, stride, done, q);
        if (rr % SBN_CHUNK == 0) {
            memset(rt->a, 0, sizeof rt->a);
            memset(rt->b, 0, sizeof rt->b);
            if (job->kind == SBN_REDUCE_MOMENTS) {
                sbn__load_run(q[0], w->dtype[0], 1, rt->cn, rt->shift);
                for (j = 0; j < rt->cn; j++) rt->shift[j] = sbn__chunk_shift(rt->shift[j]);
            }
        }
        accumulate_rows(rt, q, stride, n, (unsigned)(rr % SBN_LANES));
        if (end % SBN_CHUNK == 0 || end == w->reduction) finish_chunk(rt, k);
        done += n;
    }
}

void sbn__row_reduce_task(const sbn__reduce_job *job, int64_t t)
{
    row_task rt;
    int64_t r0, r1, c0, cn, r, b, j;
    rt.job = job;
    sbn__plan_task(&job->plan, &job->walk, t, &r0, &r1, &c0, &cn);
    /* Chunk by chunk, every block of the task's channels in turn: a chunk of rows is
     * read from memory once and its other blocks come from the cache, instead of one
     * pass over the whole segment per block reading a slice of every row. */
    for (r = r0; r < r1; r += SBN_CHUNK)
        for (b = c0; b < c0 + cn; b += SBN_ROW_BLOCK) {
            rt.r0 = r;
            rt.c0 = b;
            rt.cn = c0 + cn - b < SBN_ROW_BLOCK ? c0 + cn - b : SBN_ROW_BLOCK;
            for (j = 0; j < SBN_ROW_BLOCK; j++)
                rt.shift[j] = job->kind == SBN_REDUCE_BACKWARD && j < rt.cn
                                  ? sbn__load1(job->center, rt.c0 + j)
                                  : 0.0;
            sbn__walk_runs(&job->walk, rt.c0, r, r1 - r < SBN_CHUNK ? r1 - r : SBN_CHUNK, row_run,
                           &rt);
        }
}
