/*
 * channel_reduce.c - the chunked per-channel reductions behind stats, reduce,
 * backward_reduce and both batch norms. Every channel's R elements are cut into
 * chunks of SBN_CHUNK in index order; each chunk is reduced on its own into two
 * doubles of scratch by the streaming kernels of kernels.h (16 lanes, lane r % 16
 * takes element r, folded by halving), and phase 2 merges each channel's chunks in
 * index order:
 *   MOMENTS:  per chunk, one pass on d = x - shift (shift = the chunk's first
 *             element when finite, else 0): mean = shift + sum(d)/n,
 *             M2 = sum(d^2) - sum(d)^2/n; chunks merged with Chan's formula.
 *             Because the shift is one of the chunk's values, n*(mean - shift)^2
 *             <= M2 and the cancellation in M2 costs at most a factor n + 1.
 *             A channel whose merged mean or M2 is not finite is redone in
 *             scaled doubles when its data is finite (moments_wide.c).
 *   SUMS:     sum(x), sum(x^2) (shift 0), added chunk by chunk.
 *   BACKWARD: sum(dy), sum(dy * (x - center)), added chunk by chunk.
 * The arithmetic depends on the shape alone, not on the layout, the thread count
 * or the kernel ISA. Memory is read once, in order: the plane path (here) takes
 * each run along the innermost walk dim for every channel of a block in turn,
 * carrying each channel's chunk in progress across runs, or, for short runs (small
 * planes, sbn__walk_short_runs), a window of runs of one channel at a time through the
 * runs kernels, then the next channel (same lanes, same order); the row path
 * (row_reduce.c, channels-last) takes whole rows, its lanes in the workspace.
 */
#include <math.h>
#include <string.h>

#include "core/arith.h"
#include "core/pool.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "ops/clones.h"
#include "ops/moments.h"
#include "ops/plan.h"
#include "ops/reduce.h"
#include "ops/walk.h"
#include "syncbn/ops.h"

void sbn__chunk_finish(sbn__reduce_kind kind, int64_t n, double shift, double *a, double *b,
                       double *part)
{
    sbn__chunk_finish_sums(kind, n, shift, sbn__fold16(a), sbn__fold16(b), part);
}

/* The chunks in progress of one plane-path task: channels [c0, c0 + cn). */
typedef struct plane_task {
    const sbn__reduce_job *job;
    const sbn_kernels *kern;
    int direct;                          /* one kernel dtype, unit inner strides */
    int64_t cs[SBN_WALK_MAX_TENSORS];   /* channel strides in bytes */
    int64_t r0, c0, cn;
    double acc[SBN_PLANE_BLOCK][2 * SBN_LANES];
    double shift[SBN_PLANE_BLOCK];
} plane_task;

/* Adds n elements (tensor i at p[i], stride[i] apart) to channel j's lanes from lane `lane`,
 * for strided or mixed-dtype tensors: through doubles, a piece at a time. */
static void accumulate(plane_task *pt, int64_t j, const char *const *p, const int64_t *stride,
                       int64_t n, unsigned lane)
{
    const sbn__reduce_job *job = pt->job;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = job->kern;
    int backward = job->kind == SBN_REDUCE_BACKWARD;
    double buf0[SBN_CONVERT_PIECE], buf1[SBN_CONVERT_PIECE];
    int64_t done, m;
    for (done = 0; done < n; done += m) {
        m = n - done < SBN_CONVERT_PIECE ? n - done : SBN_CONVERT_PIECE;
        sbn__load_run(p[0] + done * stride[0] * (int64_t)sbn_dtype_size(w->dtype[0]), w->dtype[0],
                      stride[0], m, buf0);
        if (backward) {
            sbn__load_run(p[1] + done * stride[1] * (int64_t)sbn_dtype_size(w->dtype[1]),
                          w->dtype[1], stride[1], m, buf1);
            kern->bwd_accum[SBN_KD_F64](buf0, buf1, (size_t)m, (unsigned)((lane + done) % SBN_LANES),
                                        pt->shift[j], pt->acc[j]);
        } else {
            kern->accum[SBN_KD_F64](buf0, (size_t)m, (unsigned)((lane + done) % SBN_LANES),
                                    pt->shift[j], pt->acc[j]);
        }
    }
}

/* Channel j's chunk starts with the element at `first` (tensor 0): fresh lanes, and
 * for MOMENTS that element's shift. */
static void chunk_start(plane_task *pt, int64_t j, const char *first)
{
    memset(pt->acc[j], 0, sizeof pt->acc[j]);
    if (pt->job->kind == SBN_REDUCE_MOMENTS) {
        double v;
        sbn__load_run(first, pt->job->walk.dtype[0], 1, 1, &v);
        pt->shift[j] = sbn__chunk_shift(v);
    }
}

/* Channel j has taken rows [rr, end) of rr's chunk: when that ends the chunk, its lanes
 * are folded into the chunk's partials. */
static void chunk_close(plane_task *pt, int64_t j, int64_t rr, int64_t end)
{
    const sbn__walk *w = &pt->job->walk;
    int64_t k = rr / SBN_CHUNK;
    if (end % SBN_CHUNK == 0 || end == w->reduction)
        sbn__chunk_finish(pt->job->kind, sbn__walk_chunk_len(w, k), pt->shift[j], pt->acc[j],
                          pt->acc[j] + SBN_LANES,
                          pt->job->partial + 2 * ((pt->c0 + j) * w->chunks + k));
}

/* Adds piece [rr, rr + n) of the run (tensor i's channel 0 at q[i]) to channels [j0, j1):
 * one planes kernel call when direct (their runs side by side, kernels.h), else channel
 * by channel through doubles. */
static void accumulate_piece(plane_task *pt, const char *const *q, const int64_t *stride,
                             int64_t j0, int64_t j1, int64_t rr, int64_t n)
{
    const sbn__reduce_job *job = pt->job;
    unsigned lane = (unsigned)(rr % SBN_LANES);
    int64_t j, i;
    if (pt->direct && job->kind == SBN_REDUCE_BACKWARD)
        pt->kern->planes_bwd_accum[job->kd](q[0] + j0 * pt->cs[0], pt->cs[0], q[1] + j0 * pt->cs[1],
                                            pt->cs[1], (size_t)(j1 - j0), (size_t)n, lane,
                                            pt->shift + j0, pt->acc[j0]);
    else if (pt->direct)
        pt->kern->planes_accum[job->kd](q[0] + j0 * pt->cs[0], pt->cs[0], (size_t)(j1 - j0),
                                        (size_t)n, lane, pt->shift + j0, pt->acc[j0]);
    else
        for (j = j0; j < j1; j++) {
            const char *qj[SBN_WALK_MAX_TENSORS];
            for (i = 0; i < job->walk.ntensors; i++) qj[i] = q[i] + j * pt->cs[i];
            accumulate(pt, j, qj, stride, n, lane);
        }
}

/* Rows [r, r + len) of channels [j0, j1): the run's pieces in turn, each for them all. */
static void run_pieces(plane_task *pt, char *const *ptr, const int64_t *stride, int64_t r,
                       int64_t len, int64_t j0, int64_t j1)
{
    int64_t done, j;
    for (done = 0; done < len;) {
        int64_t rr = r + done, end = sbn__chunk_piece_end(rr, r + len);
        const char *q[SBN_WALK_MAX_TENSORS];
        sbn__walk_advance(&pt->job->walk, ptr, stride, done, q);
        if (rr % SBN_CHUNK == 0)
            for (j = j0; j < j1; j++) chunk_start(pt, j, q[0] + j * pt->cs[0]);
        accumulate_piece(pt, q, stride, j0, j1, rr, end - rr);
        for (j = j0; j < j1; j++) chunk_close(pt, j, rr, end);
        done = end - r;
    }
}

/* One run of rows [r, r + len) along the innermost dim, for every channel of the task:
 * its pieces (cut at chunk ends) in turn, each piece for all the channels at once
 * (accumulate_piece), which lets AVX-512's planes kernels interleave four channels.
 * Beyond the cache, and with planes kernels that go channel by channel anyway
 * (planes_by_run: scalar, AVX2), a run that crosses a chunk end goes a channel at a time
 * instead, each channel's pieces in turn, so that memory is read in order (channel after
 * channel of a plane-major tensor): piece after piece it would be read in strides, which
 * the hardware prefetchers follow worse (bench: sbn_stats 32x64x56x56 fp32 NCHW; AVX2
 * training steps of 32x64x56x56 NCHW, whose inputs fit half the L3 but come from memory).
 * Each channel's lanes take its elements in index order either way: the same bits. */
static void plane_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    plane_task *pt = arg;
    int64_t r = pt->r0 + at, j;
    if (!pt->job->in_memory_order || sbn__chunk_piece_end(r, r + len) == r + len)
        run_pieces(pt, ptr, stride, r, len, 0, pt->cn);
    else
        for (j = 0; j < pt->cn; j++) run_pieces(pt, ptr, stride, r, len, j, j + 1);
}

/*
 * Short runs (sbn__walk_short_runs): a channel's runs of a window go to one runs kernel,
 * which merges the lanes of one run's tail and the next one's head. The task's rows are
 * taken in windows of whole runs (sbn__runs_window), every channel of the block in turn
 * within a window; beyond the cache, each channel's runs of the window are prefetched
 * while the channel before is reduced, the next window's first channel's while the last
 * one is (sbn__plan_prefetch_runs). Same chunks, lanes and order as the plane path, so
 * the same bits.
 */

typedef struct channel_runs {
    plane_task *pt;
    int64_t j, r;  /* the channel within the task, the stretch's first row */
    int new_chunk; /* the stretch starts a chunk (chunk_start on its first element) */
} channel_runs;

static void runs_stretch(void *arg, char *const *ptr, const int64_t *run_stride, int64_t at,
                         int64_t runs, int64_t len)
{
    channel_runs *cr = arg;
    plane_task *pt = cr->pt;
    const sbn__reduce_job *job = pt->job;
    unsigned lane = (unsigned)((cr->r + at) % SBN_LANES);
    int64_t j = cr->j;
    if (cr->new_chunk) {
        chunk_start(pt, j, ptr[0]);
        cr->new_chunk = 0;
    }
    if (job->kind == SBN_REDUCE_BACKWARD)
        pt->kern->runs_bwd_accum[job->kd](ptr[0], run_stride[0], ptr[1], run_stride[1],
                                          (size_t)runs, (size_t)len, lane, pt->shift[j],
                                          pt->acc[j]);
    else
        pt->kern->runs_accum[job->kd](ptr[0], run_stride[0], (size_t)runs, (size_t)len, lane,
                                      pt->shift[j], pt->acc[j]);
}

/* The end of the window that starts at row wa: `window` runs of len on, at most r1. */
static int64_t window_end(int64_t wa, int64_t len, int64_t window, int64_t r1)
{
    int64_t wb = (wa / len + window) * len;
    return wb < r1 ? wb : r1;
}

static void reduce_runs(plane_task *pt, int64_t r1)
{
    const sbn__reduce_job *job = pt->job;
    const sbn__walk *w = &job->walk;
    int64_t len = w->size[1], window = sbn__runs_window(w, pt->cn), wa, wb, j, rr, end;
    for (wa = pt->r0; wa < r1; wa = wb) {
        wb = window_end(wa, len, window, r1);
        for (j = 0; j < pt->cn; j++) {
            if (job->prefetch_runs && j + 1 < pt->cn)
                sbn__walk_prefetch_runs(w, pt->c0 + j + 1, wa, wb);
            else if (job->prefetch_runs && wb < r1) /* the next window's first channel */
                sbn__walk_prefetch_runs(w, pt->c0, wb, window_end(wb, len, window, r1));
            for (rr = wa; rr < wb; rr = end) {
                channel_runs cr;
                end = sbn__chunk_piece_end(rr, wb);
                cr.pt = pt, cr.j = j, cr.r = rr, cr.new_chunk = rr % SBN_CHUNK == 0;
                sbn__walk_run_groups(w, pt->c0 + j, rr, end - rr, runs_stretch, &cr);
                chunk_close(pt, j, rr, end);
            }
        }
    }
}

static void reduce_tasks(void *ctx, int64_t begin, int64_t end)
{
    const sbn__reduce_job *job = ctx;
    int64_t t, r1, j;
    for (t = begin; t < end; t++) {
        if (sbn__walk_is_rows(&job->walk)) {
            sbn__row_reduce_task(job, t);
            continue;
        }
        {
            plane_task pt;
            int i;
            pt.job = job;
            pt.kern = job->kern;
            pt.direct = job->kd >= 0 && sbn__walk_unit_inner(&job->walk);
            for (i = 0; i < job->walk.ntensors; i++)
                pt.cs[i] = job->walk.channel_stride[i] *
                           (int64_t)sbn_dtype_size(job->walk.dtype[i]);
            sbn__plan_task(&job->plan, &job->walk, t, &pt.r0, &r1, &pt.c0, &pt.cn);
            for (j = 0; j < pt.cn; j++)
                pt.shift[j] = job->kind == SBN_REDUCE_BACKWARD ? sbn__load1(job->center, pt.c0 + j)
                                                               : 0.0;
            if (pt.direct && sbn__walk_short_runs(&job->walk))
                reduce_runs(&pt, r1);
            else
                sbn__walk_runs(&job->walk, pt.c0, pt.r0, r1 - pt.r0, plane_run, &pt);
        }
    }
}

/* The merge of channels [begin, end): their chunks' partials in chunk order, into out. */
SBN_CHANNEL_LOOP static void merge_channels(void *ctx, int64_t begin, int64_t end)
{
    const sbn__reduce_job *job = ctx;
    const sbn__walk *w = &job->walk;
    int64_t c, k;
    for (c = begin; c < end; c++) {
        const double *part = job->partial + 2 * c * w->chunks;
        if (job->kind == SBN_REDUCE_MOMENTS) {
            sbn_moments total = {0.0, 0.0, 0.0};
            for (k = 0; k < w->chunks; k++)
                sbn__moments_merge(&total, (double)sbn__walk_chunk_len(w, k), part[2 * k],
                                   part[2 * k + 1]);
            /* squares past DBL_MAX on finite data: again in scaled doubles */
            if (!isfinite(total.mean) || !isfinite(total.m2))
                sbn__moments_wide(w, c, &total.mean, &total.m2);
            job->out[2 * c] = total.mean;
            job->out[2 * c + 1] = total.m2;
        } else {
            double s0 = 0.0, s1 = 0.0;
            for (k = 0; k < w->chunks; k++) {
                s0 += part[2 * k];
                s1 += part[2 * k + 1];
            }
            job->out[2 * c] = s0;
            job->out[2 * c + 1] = s1;
        }
    }
}

/* One chunk a channel: the chunks wrote their partials into out, which is the merge
 * (a MOMENTS merge of one chunk into nothing is that chunk; a sum starting at +0.0 adds
 * a partial exactly, and no partial is -0.0: a folded lane never is, kernels.h). What is
 * left is the scaled pass of moments_wide for channels of [begin, end) left non-finite. */
static void widen_channels(void *ctx, int64_t begin, int64_t end)
{
    const sbn__reduce_job *job = ctx;
    int64_t c;
    for (c = begin; c < end; c++)
        if (!isfinite(job->out[2 * c]) || !isfinite(job->out[2 * c + 1]))
            sbn__moments_wide(&job->walk, c, &job->out[2 * c], &job->out[2 * c + 1]);
}

/* Whether every one of n doubles is finite (sbn__finite, which vectorises: over few rows
 * of many channels this scan is a visible part of a training forward). */
SBN_CHANNEL_LOOP static int all_finite(const double *v, int64_t n)
{
    int bad = 0;
    int64_t i;
    for (i = 0; i < n; i++) bad |= !sbn__finite(v[i]);
    return bad == 0;
}

/* The row path's state slots. Counted for every layout: workspace sizes depend on
 * the shapes alone (ops.h), and any tensor of this shape may take the row path.
 * At most 4 x C x 264 bytes; for tensors of several chunks, under 4% of fp32 x. */
static size_t row_state_doubles(const sbn_tensor *x, int64_t chunks)
{
    int64_t c = x->shape[1];
    if (c < 2 || chunks == 0) return 0;
    return sbn__sat_mul((size_t)(chunks < SBN_ROW_SLOTS ? chunks : SBN_ROW_SLOTS),
                        sbn__sat_mul((size_t)c, 2 * 16 + 1));
}

/* SIZE_MAX when the count does not fit (the shape is then refused). */
size_t sbn__channel_reduce_bytes(const sbn_tensor *x)
{
    int64_t c = x->shape[1], r = c > 0 ? sbn_tensor_numel(x) / c : 0;
    int64_t chunks = r / SBN_CHUNK + (r % SBN_CHUNK != 0);
    size_t partials = sbn__sat_mul(sbn__sat_mul((size_t)c, (size_t)chunks), 2);
    return sbn__sat_mul(sbn__sat_add(partials, row_state_doubles(x, chunks)), sizeof(double));
}

/*
 * The table beyond the cache differs from the default only in its row reductions
 * (AVX2, AVX-512), which prefetch the next block of short rows, and AVX-512's planes
 * reductions, which take one channel at a time (kernels.h); plan.c decides when
 * (sbn__beyond_cache with SBN_REDUCE_PREFETCH_SHARE), and the plane path then also reads
 * in memory order (in_memory_order, plane_run), as it always does with planes kernels
 * that go channel by channel, and short runs are prefetched a channel ahead
 * (prefetch_runs, reduce_runs). Same arithmetic, same bits.
 */
void sbn__channel_reduce(sbn__reduce_kind kind, const sbn_tensor *dy_or_x, const sbn_tensor *x,
                         const sbn_tensor *center, double *out, double *scratch,
                         sbn_pool_t *pool)
{
    sbn__reduce_job job;
    const sbn_tensor *tensors[2];
    sbn_pool_t team, merge_team, *merge_team_of;
    tensors[0] = dy_or_x;
    tensors[1] = x;
    job.kind = kind;
    job.center = center;
    job.partial = scratch;
    job.out = out;
    sbn__walk_init(&job.walk, tensors, kind == SBN_REDUCE_BACKWARD ? 2 : 1);
    job.kd = sbn__walk_kdtype(&job.walk);
    pool = sbn__plan_team(pool, sbn__plan_stream_ns(tensors, job.walk.ntensors), &team);
    job.in_memory_order = sbn__beyond_cache(tensors, job.walk.ntensors,
                                            SBN_REDUCE_PREFETCH_SHARE, 1);
    job.prefetch_runs = sbn__plan_prefetch_runs(&job.walk, job.in_memory_order);
    job.kern = job.in_memory_order ? sbn__kernels_streaming() : sbn__kernels();
    job.in_memory_order |= job.kern->planes_by_run;
    if (job.walk.chunks == 0) {
        int64_t c;
        for (c = 0; c < job.walk.channels; c++) out[2 * c] = out[2 * c + 1] = 0.0;
        return;
    }
    job.row_state = scratch + 2 * job.walk.channels * job.walk.chunks;
    if (sbn__walk_is_rows(&job.walk)) {
        sbn__plan_tasks(&job.plan, &job.walk, sbn__plan_block_all(&job.walk, pool), pool);
        sbn__plan_cap_segments(&job.plan, &job.walk, SBN_ROW_SLOTS);
    } else {
        sbn__plan_tasks(&job.plan, &job.walk, SBN_PLANE_BLOCK, pool);
    }
    if (job.walk.chunks == 1) job.partial = out; /* [C][1][2] is out's [C][2] */
    sbn__parallel_for(pool, job.plan.segments * job.plan.blocks, reduce_tasks, &job);
    merge_team_of = sbn__plan_team(pool, sbn__plan_channels_ns(job.walk.channels, job.walk.chunks),
                                   &merge_team);
    if (job.walk.chunks > 1)
        sbn__parallel_for(merge_team_of, job.walk.channels, merge_channels, &job);
    else if (kind == SBN_REDUCE_MOMENTS && !all_finite(out, 2 * job.walk.channels))
        sbn__parallel_for(merge_team_of, job.walk.channels, widen_channels, &job);
}
