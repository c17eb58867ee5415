/*
 * channel_map.c - the per-channel elementwise maps behind elemt, backward_elemt
 * and both batch norms, with the coefficients of channel c in structure-of-arrays
 * form (k_m = coef[m * C + c]):
 *   NORMALIZE: y  = (x - k0) * k1 + k2                    k = (mean, invstd*w, b)
 *   BACKWARD:  gi = (dy - k0 - (x - k1) * k2) * k3        k = (sum_dy/N, mean,
 *                                                              invstd^2*sum_dy_xmu/N, invstd*w)
 * When every tensor is fp32, fp16 or bf16 the map computes in float: the
 * coefficients are turned once into their float form (sbn__map_coefs_float, into
 * the room after them) and each element takes two or three float operations with
 * fused multiply-adds (kernels.h; the error bound is in docs/numerics.md). With an
 * fp64 tensor, or a coefficient out of float's normal range, it computes in double
 * as the fp64 kernels do. Every schedule decision comes from plan.c (the team, the
 * tasks, the stores, the tiles). Tasks follow memory: the plane path maps
 * each run along the innermost walk dim for every channel of a block in turn (one
 * runs kernel call, each channel's run with its coefficients), the
 * row path (channels-last, (N, C)) maps runs of whole rows (rows too wide for the
 * L1 with their coefficients in tiles of channels x rows). When every tensor has
 * one element type (and, on the plane path, unit inner strides) the map kernels
 * work in place on the tensors; otherwise pieces are widened to double, narrowed
 * exactly to float for the float form, mapped by the fp32 (or fp64) kernels and
 * stored: the same arithmetic, so a strided or mixed-type view gives the bits of
 * the contiguous one. Each element is read before it is written, so output ==
 * input is safe. When the map's tensors together are far larger than the
 * last-level cache, the kernels write the output with non-temporal stores
 * (sbn__plan_map_stores): same bits, a third less memory traffic. An op may hand the
 * map the step that computes its coefficients (sbn__channel_map_with): the map runs it
 * with their float form in one loop over the channels before mapping, or, where plan.c
 * says so, inside each task for the task's own block of channels right before mapping
 * it (a coefficient out of float's range found by one block sends the whole map again
 * through the double form, so no channel's form depends on the blocks).
 */
#include <stdlib.h>
#include <string.h>

#include "core/extent.h"
#include "core/pool.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "ops/clones.h"
#include "ops/map.h"
#include "ops/plan.h"
#include "ops/walk.h"
#include "syncbn/syncbn.h"

/* The coefficients of channels [begin, end): the caller's step `coefs` when given, then
 * their float form into f ([4][C], when the map computes in float); out_of_range is set
 * when one is out of float's range. */
typedef struct coefs_job {
    sbn__map_kind kind;
    const double *coef;
    int64_t channels;
    float *f;
    sbn__coefs_fn coefs;
    void *ctx;
    int out_of_range;
} coefs_job;

typedef struct map_job {
    const sbn_kernels *kern; /* the maps of whole runs and rows (maybe streaming) */
    int streaming;           /* kern is the table beyond the cache: fence after each task */
    int beyond_l3;           /* the tensors exceed the whole L3 (no row tiles then) */
    sbn__map_kind kind;
    sbn__walk walk; /* tensor 0 = in0, 1 = in1 (BACKWARD), last = out */
    sbn__plan plan;
    const double *coef;
    const float *fcoef; /* the float form, [4][C], or NULL: compute in double */
    int kd;         /* kernel element type of every tensor, or -1 */
    int rows;       /* the row path */
    int unit;       /* unit inner strides (plane path) */
    int64_t tile;   /* row path: channels a kernel call takes (tiles of rows too wide), or 0 */
    int64_t tile_rows; /* rows of a tile */
    coefs_job *produce; /* each task computes its channels' coefficients first, or NULL */
} map_job;

typedef struct map_task {
    const map_job *job;
    int64_t r0, c0, cn;
} map_task;

static size_t es(const sbn__walk *w, int i)
{
    return sbn_dtype_size(w->dtype[i]);
}

/* Channel c's four coefficients in the form the job computes with: floats into f when
 * the job has a float form, else doubles into k; returns the one filled. */
static const void *channel_coefs(const map_job *job, int64_t c, double *k, float *f)
{
    int64_t C = job->walk.channels;
    int j;
    if (job->fcoef) {
        for (j = 0; j < 4; j++) f[j] = job->fcoef[j * C + c];
        return f;
    }
    for (j = 0; j < 4; j++) k[j] = job->coef[j * C + c];
    return k;
}

/* A piece of m doubles (exact floats) mapped by the fp32 kernels: narrowed exactly to
 * float, mapped, widened back. ldk = 0: the m elements are one channel's, f its four
 * coefficients; else one row's m channels, f structure of arrays ldk apart. b is the
 * second input (BACKWARD); the result goes to a. */
static void map_piece_float(const sbn_kernels *kern, sbn__map_kind kind, double *a,
                            const double *b, int64_t m, const float *f, size_t ldk)
{
    float fa[SBN_CONVERT_PIECE], fb[SBN_CONVERT_PIECE];
    kern->store_f32(a, (size_t)m, fa);
    if (kind == SBN_MAP_BACKWARD) kern->store_f32(b, (size_t)m, fb);
    if (ldk == 0 && kind == SBN_MAP_NORMALIZE)
        kern->normalize[SBN_KD_F32](fa, (size_t)m, f, fa);
    else if (ldk == 0)
        kern->backward[SBN_KD_F32](fa, fb, (size_t)m, f, fa);
    else if (kind == SBN_MAP_NORMALIZE)
        kern->row_normalize[SBN_KD_F32](fa, 0, 1, (size_t)m, f, ldk, fa, 0);
    else
        kern->row_backward[SBN_KD_F32](fa, 0, fb, 0, 1, (size_t)m, f, ldk, fa, 0);
    kern->load_f32(fa, (size_t)m, a);
}

/* Plane path, one run of len elements of channel c (tensor i at p[i], stride[i] apart),
 * through doubles: strided runs or mixed element types. */
static void map_channel_run(const map_job *job, int64_t c, char *const *p, const int64_t *stride,
                            int64_t len)
{
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = sbn__kernels();
    int64_t done, m, o = job->kind == SBN_MAP_NORMALIZE ? 1 : 2;
    double k[4], a[SBN_CONVERT_PIECE], b[SBN_CONVERT_PIECE];
    float f[4];
    const void *kc = channel_coefs(job, c, k, f);
    for (done = 0; done < len; done += m) {
        m = len - done < SBN_CONVERT_PIECE ? len - done : SBN_CONVERT_PIECE;
        sbn__load_run(p[0] + done * stride[0] * (int64_t)es(w, 0), w->dtype[0], stride[0], m, a);
        if (job->kind == SBN_MAP_BACKWARD)
            sbn__load_run(p[1] + done * stride[1] * (int64_t)es(w, 1), w->dtype[1], stride[1], m, b);
        if (job->fcoef)
            map_piece_float(kern, job->kind, a, b, m, kc, 0);
        else if (job->kind == SBN_MAP_NORMALIZE)
            kern->normalize[SBN_KD_F64](a, (size_t)m, kc, a);
        else
            kern->backward[SBN_KD_F64](a, b, (size_t)m, kc, a);
        sbn__store_run(p[o] + done * stride[o] * (int64_t)es(w, (int)o), w->dtype[o], stride[o], m,
                       a);
    }
}

static void plane_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    const map_task *mt = arg;
    const map_job *job = mt->job;
    const sbn__walk *w = &job->walk;
    int64_t j;
    int i;
    (void)at;
    if (job->kd >= 0 && job->unit) { /* the common case: this run of every channel of the block,
                                      * one runs kernel call (short planes, 7x7, are many) */
        const void *k = job->fcoef ? (const void *)(job->fcoef + mt->c0)
                                   : (const void *)(job->coef + mt->c0);
        size_t ldk = (size_t)w->channels;
        if (job->kind == SBN_MAP_NORMALIZE)
            job->kern->runs_normalize[job->kd](ptr[0], w->channel_stride[0], (size_t)mt->cn,
                                               (size_t)len, k, ldk, ptr[1], w->channel_stride[1]);
        else
            job->kern->runs_backward[job->kd](ptr[0], w->channel_stride[0], ptr[1],
                                              w->channel_stride[1], (size_t)mt->cn, (size_t)len,
                                              k, ldk, ptr[2], w->channel_stride[2]);
        return;
    }
    for (j = 0; j < mt->cn; j++) {
        char *p[SBN_WALK_MAX_TENSORS];
        for (i = 0; i < w->ntensors; i++)
            p[i] = ptr[i] + j * w->channel_stride[i] * (int64_t)es(w, i);
        map_channel_run(mt->job, mt->c0 + j, p, stride, len);
    }
}

/* Rows [r0, r0 + rows) of the task's channels [c, c + cn) through the row kernels. */
static void map_rows(const map_job *job, const map_task *mt, char *const *ptr,
                     const int64_t *stride, int64_t r0, int64_t rows, int64_t c, int64_t cn)
{
    const sbn__walk *w = &job->walk;
    const void *kc = job->fcoef ? (const void *)(job->fcoef + mt->c0 + c)
                                : (const void *)(job->coef + mt->c0 + c);
    size_t ldk = (size_t)w->channels;
    char *p[SBN_WALK_MAX_TENSORS];
    int i;
    for (i = 0; i < w->ntensors; i++) p[i] = ptr[i] + (r0 * stride[i] + c) * (int64_t)es(w, i);
    if (job->kind == SBN_MAP_NORMALIZE)
        job->kern->row_normalize[job->kd](p[0], stride[0], (size_t)rows, (size_t)cn, kc, ldk,
                                          p[1], stride[1]);
    else
        job->kern->row_backward[job->kd](p[0], stride[0], p[1], stride[1], (size_t)rows,
                                         (size_t)cn, kc, ldk, p[2], stride[2]);
}

/* Row path, rows [0, len) of channels [c0, c0 + cn), row r of tensor i at ptr[i] + r * stride[i]. */
static void row_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    const map_task *mt = arg;
    const map_job *job = mt->job;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = sbn__kernels();
    const double *k = job->coef + mt->c0;
    const float *f = job->fcoef ? job->fcoef + mt->c0 : NULL;
    size_t ldk = (size_t)w->channels;
    int64_t r, o = job->kind == SBN_MAP_NORMALIZE ? 1 : 2, c, m;
    double a[SBN_CONVERT_PIECE], b[SBN_CONVERT_PIECE];
    (void)at;
    if (job->kd >= 0) { /* whole rows in one call, or tiles of SBN_ROW_TILE_ROWS rows */
        int64_t rows = job->tile ? job->tile_rows : len, tile = job->tile ? job->tile : mt->cn;
        for (r = 0; r < len; r += rows)
            for (c = 0; c < mt->cn; c += tile)
                map_rows(job, mt, ptr, stride, r, len - r < rows ? len - r : rows, c,
                         mt->cn - c < tile ? mt->cn - c : tile);
        return;
    }
    for (r = 0; r < len; r++) /* mixed dtypes: through doubles, a piece of a row at a time */
        for (c = 0; c < mt->cn; c += m) {
            const char *p0 = ptr[0] + (r * stride[0] + c) * (int64_t)es(w, 0);
            char *po = ptr[o] + (r * stride[o] + c) * (int64_t)es(w, (int)o);
            m = mt->cn - c < SBN_CONVERT_PIECE ? mt->cn - c : SBN_CONVERT_PIECE;
            sbn__load_run(p0, w->dtype[0], 1, m, a);
            if (job->kind == SBN_MAP_BACKWARD)
                sbn__load_run(ptr[1] + (r * stride[1] + c) * (int64_t)es(w, 1), w->dtype[1], 1, m,
                              b);
            if (f)
                map_piece_float(kern, job->kind, a, b, m, f + c, ldk);
            else if (job->kind == SBN_MAP_NORMALIZE)
                kern->row_normalize[SBN_KD_F64](a, 0, 1, (size_t)m, k + c, ldk, a, 0);
            else
                kern->row_backward[SBN_KD_F64](a, 0, b, 0, 1, (size_t)m, k + c, ldk, a, 0);
            sbn__store_run(po, w->dtype[o], 1, m, a);
        }
}

/* Non-temporal stores are weakly ordered and the streaming kernels do not fence
 * (nt_store.h): an sfence orders them (what both vendors' manuals name for it) before
 * the pool reports the task done; the full fence orders the rest. */
static void order_streaming_stores(void)
{
#if defined(__SSE__)
    __builtin_ia32_sfence();
#endif
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void produce_coefs(void *ctx, int64_t begin, int64_t end);

static void map_tasks(void *ctx, int64_t begin, int64_t end)
{
    const map_job *job = ctx;
    int64_t t, r1;
    for (t = begin; t < end; t++) {
        map_task mt;
        mt.job = job;
        sbn__plan_task(&job->plan, &job->walk, t, &mt.r0, &r1, &mt.c0, &mt.cn);
        if (job->produce) produce_coefs(job->produce, mt.c0, mt.c0 + mt.cn);
        sbn__walk_runs(&job->walk, mt.c0, mt.r0, r1 - mt.r0, job->rows ? row_run : plane_run,
                       &mt);
    }
    if (job->streaming) order_streaming_stores();
}

/* Every tensor fp32, fp16 or bf16: the float form applies. */
static int float_types(const sbn__walk *w)
{
    int i;
    for (i = 0; i < w->ntensors; i++)
        if (w->dtype[i] != SBN_F32 && w->dtype[i] != SBN_F16 && w->dtype[i] != SBN_BF16) return 0;
    return 1;
}

/* The float coefficients of channels [begin, end): `backward` a constant in each
 * instance, so the per-channel body has no branch on the kind. */
static inline int float_coefs_of(int backward, const double *coef, float *f, int64_t C,
                                 int64_t begin, int64_t end)
{
    int64_t c;
    int j, ok = 1;
    for (c = begin; c < end; c++) {
        double k[4];
        float fc[4];
        for (j = 0; j < 4; j++) k[j] = coef[j * C + c];
        ok &= sbn__map_coefs_float(backward, k, fc);
        for (j = 0; j < 4; j++) f[j * C + c] = fc[j];
    }
    return ok;
}

SBN_CHANNEL_LOOP static int float_coefs(sbn__map_kind kind, const double *coef, float *f,
                                        int64_t C, int64_t begin, int64_t end)
{
    return kind == SBN_MAP_BACKWARD ? float_coefs_of(1, coef, f, C, begin, end)
                                    : float_coefs_of(0, coef, f, C, begin, end);
}

static void produce_coefs(void *ctx, int64_t begin, int64_t end)
{
    coefs_job *cj = ctx;
    if (cj->coefs) cj->coefs(cj->ctx, begin, end);
    if (cj->f && !float_coefs(cj->kind, cj->coef, cj->f, cj->channels, begin, end))
        __atomic_store_n(&cj->out_of_range, 1, __ATOMIC_RELAXED);
}

/* The row or plane plan, the tiles and the map, with coefficients in place. */
static void run_map(map_job *job, sbn_pool_t *pool)
{
    job->tile = sbn__plan_row_tile(&job->walk, job->rows, job->kd, job->fcoef != NULL,
                                   job->kind == SBN_MAP_BACKWARD, job->beyond_l3,
                                   &job->tile_rows);
    /* No state to carry: one block of every channel keeps the sweep in memory order. */
    if (!job->produce) {
        if (job->rows)
            sbn__plan_row_map(&job->plan, &job->walk, pool);
        else
            sbn__plan_tasks(&job->plan, &job->walk, sbn__plan_block_map(&job->walk, pool), pool);
    }
    sbn__parallel_for(pool, job->plan.segments * job->plan.blocks, map_tasks, job);
}

/* Whether out shares memory with an input (in place): a map that writes out cannot then
 * be done again from its inputs. */
static int writes_an_input(const sbn_tensor *in0, const sbn_tensor *in1, const sbn_tensor *out)
{
    return sbn__views_overlap(out, in0) || (in1 != NULL && sbn__views_overlap(out, in1));
}

void sbn__channel_map(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                      double *coef, sbn_tensor *out, sbn_pool_t *pool)
{
    sbn__channel_map_with(kind, in0, in1, coef, NULL, NULL, 0.0, out, pool);
}

void sbn__channel_map_with(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                           double *coef, sbn__coefs_fn coefs, void *ctx, double coefs_ns,
                           sbn_tensor *out, sbn_pool_t *pool)
{
    map_job job;
    coefs_job cj;
    const sbn_tensor *tensors[3];
    sbn_pool_t team, both_team, coef_team, *whole = pool;
    int n = 0, blocked = 0;
    double step_ns;
    tensors[n++] = in0;
    if (kind == SBN_MAP_BACKWARD) tensors[n++] = in1;
    tensors[n++] = out;
    job.kind = kind;
    job.coef = coef;
    job.produce = NULL;
    sbn__walk_init(&job.walk, tensors, n);
    job.kd = sbn__walk_kdtype(&job.walk);
    job.rows = sbn__walk_is_rows(&job.walk);
    job.unit = sbn__walk_unit_inner(&job.walk);
    cj.kind = kind;
    cj.coef = coef;
    cj.channels = job.walk.channels;
    cj.f = float_types(&job.walk) ? (float *)(coef + 4 * job.walk.channels) : NULL;
    cj.coefs = coefs;
    cj.ctx = ctx;
    cj.out_of_range = 0;
    /* The loop before the map is as wide as the op's step alone would take (the float
     * form rides along: summed, the two estimates put small loops on two threads, whose
     * start and join cost more than they split; bench_ops 2x2048x7x7 at two threads). */
    step_ns = coefs ? coefs_ns : sbn__plan_coefs_ns(cj.channels);
    coefs_ns = (coefs ? coefs_ns : 0.0) + (cj.f ? sbn__plan_coefs_ns(cj.channels) : 0.0);
    if (coefs && job.rows && !writes_an_input(in0, in1, out)) {
        pool = sbn__plan_team(whole, sbn__plan_stream_ns(tensors, n) + coefs_ns, &both_team);
        blocked = sbn__plan_coef_blocks(&job.plan, &job.walk, pool);
    }
    if (!blocked) pool = sbn__plan_team(whole, sbn__plan_stream_ns(tensors, n), &team);
    job.streaming = sbn__plan_map_stores(tensors, n, &job.walk, job.rows, pool, &job.beyond_l3);
    job.kern = job.streaming ? sbn__kernels_streaming() : sbn__kernels();
    job.fcoef = cj.f;
    if (blocked) {
        job.produce = &cj;
        run_map(&job, pool);
        if (!cj.out_of_range) return;
        /* A coefficient out of float's range: the whole map again in double, as below
         * (every channel's coefficients are in place now; the inputs are intact). */
        job.produce = NULL;
        job.fcoef = NULL;
        job.kd = -1;
        run_map(&job, pool);
        return;
    }
    if (coefs || cj.f)
        sbn__parallel_for(sbn__plan_team(whole, step_ns, &coef_team), job.walk.channels,
                          produce_coefs, &cj);
    if (cj.out_of_range) {
        job.fcoef = NULL;
        job.kd = -1; /* out of float's range: the double form, through pieces */
    }
    run_map(&job, pool);
}
