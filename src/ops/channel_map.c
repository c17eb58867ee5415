/*
 * channel_map.c - the chunked per-channel elementwise maps behind elemt,
 * backward_elemt and both batch norms. Each (channel, chunk) task gathers its
 * inputs as doubles, applies the channel's affine map and scatters the result in
 * the output's dtype and strides:
 *   NORMALIZE: y  = (x - k0) * k1 + k2                    k = (mean, invstd*w, b)
 *   BACKWARD:  gi = (dy - k0 - (x - k1) * k2) * k3        k = (sum_dy/N, mean,
 *                                                              invstd^2*sum_dy_xmu/N, invstd*w)
 * When every tensor is fp32 with unit inner strides, the f32 kernels map each run
 * directly; channels-last and (N, C) tensors go row by row over blocks of channels.
 * Every path computes the same double expression, so the bits are the same.
 * Reading each element before writing it makes an in-place call (output = the
 * identical input view) safe on both paths.
 */
#include "core/internal.h"
#include "kernels/kernels.h"

typedef struct map_job {
    sbn__map_kind kind;
    sbn__walk walk; /* tensor 0 = in0, 1 = in1 (BACKWARD), last = out */
    const double *coef;
    int all_f32;    /* every tensor fp32 */
    int direct;     /* all fp32 with unit inner strides: the f32 kernels work in place */
} map_job;

/* The two maps on one element, in double, in the order every path (and every
 * f32 kernel) uses; q points at the channel's four coefficients. */
static inline double normalize_one(double x, const double *q)
{
    return (x - q[0]) * q[1] + q[2];
}

static inline double backward_one(double dy, double x, const double *q)
{
    return ((dy - q[0]) - (x - q[1]) * q[2]) * q[3];
}

/* One run of an all-fp32 map with unit strides: the kernel reads and writes in place. */
typedef struct direct_ctx {
    const map_job *job;
    const double *coef;
} direct_ctx;

static void direct_run(void *arg, char *const *ptr, const int64_t *stride, int64_t at,
                       int64_t len)
{
    const direct_ctx *dc = arg;
    const sbn_kernels *kern = sbn__kernels();
    (void)stride;
    (void)at;
    if (dc->job->kind == SBN_MAP_NORMALIZE)
        kern->normalize[SBN_KD_F32](ptr[0], (size_t)len, dc->coef, ptr[1]);
    else
        kern->backward[SBN_KD_F32](ptr[0], ptr[1], (size_t)len, dc->coef, ptr[2]);
}

static void map_chunks(void *ctx, int64_t begin, int64_t end)
{
    map_job *job = ctx;
    const sbn__walk *w = &job->walk;
    _Alignas(64) double a[SBN_CHUNK];
    _Alignas(64) double b[SBN_CHUNK];
    int64_t t, i;
    for (t = begin; t < end; t++) {
        int64_t k = t / w->channels, c = t % w->channels, n = sbn__walk_chunk_len(w, k);
        const double *q = job->coef + 4 * c;
        if (job->direct) {
            direct_ctx dc;
            dc.job = job;
            dc.coef = q;
            sbn__walk_runs(w, c, k * SBN_CHUNK, n, direct_run, &dc);
            continue;
        }
        sbn__walk_gather(w, 0, c, k * SBN_CHUNK, n, a);
        if (job->kind == SBN_MAP_NORMALIZE) {
            for (i = 0; i < n; i++) a[i] = normalize_one(a[i], q);
            sbn__walk_scatter(w, 1, c, k * SBN_CHUNK, n, a);
        } else {
            sbn__walk_gather(w, 1, c, k * SBN_CHUNK, n, b);
            for (i = 0; i < n; i++) a[i] = backward_one(a[i], b[i], q);
            sbn__walk_scatter(w, 2, c, k * SBN_CHUNK, n, a);
        }
    }
}

/* The row path (channels-last and (N, C)): task t maps chunk t / blocks of rows for a
 * block of SBN_ROW_BLOCK channels, row by row over contiguous memory, with the same
 * double expression per element as the other paths. */
static void map_row_blocks(void *ctx, int64_t begin, int64_t end)
{
    map_job *job = ctx;
    const sbn__walk *w = &job->walk;
    int64_t blocks = (w->channels + SBN_ROW_BLOCK - 1) / SBN_ROW_BLOCK, t, r, j;
    int out = job->kind == SBN_MAP_NORMALIZE ? 1 : 2, i;
    for (t = begin; t < end; t++) {
        int64_t k = t / blocks, c0 = (t % blocks) * SBN_ROW_BLOCK, n = sbn__walk_chunk_len(w, k);
        int64_t cn = w->channels - c0 < SBN_ROW_BLOCK ? w->channels - c0 : SBN_ROW_BLOCK;
        const double *q = job->coef + 4 * c0;
        char *row[SBN_WALK_MAX_TENSORS];
        for (i = 0; i < w->ntensors; i++)
            row[i] = w->data[i] +
                     (k * SBN_CHUNK * w->stride[i][0] + c0) * (int64_t)sbn_dtype_size(w->dtype[i]);
        if (job->all_f32) { /* the same expression on floats, no conversion calls */
            int64_t s0 = w->stride[0][0], s1 = w->stride[1][0], s2 = w->stride[out][0];
            const float *x0 = (const float *)row[0], *x1 = (const float *)row[1];
            float *y = (float *)row[out];
            for (r = 0; r < n; r++, x0 += s0, x1 += s1, y += s2) {
                if (job->kind == SBN_MAP_NORMALIZE)
                    for (j = 0; j < cn; j++)
                        y[j] = (float)normalize_one(x0[j], q + 4 * j);
                else
                    for (j = 0; j < cn; j++)
                        y[j] = (float)backward_one(x0[j], x1[j], q + 4 * j);
            }
            continue;
        }
        for (r = 0; r < n; r++) {
            double a[SBN_ROW_BLOCK], b[SBN_ROW_BLOCK];
            sbn__load_run(row[0], w->dtype[0], 1, cn, a);
            if (job->kind == SBN_MAP_NORMALIZE) {
                for (j = 0; j < cn; j++) a[j] = normalize_one(a[j], q + 4 * j);
            } else {
                sbn__load_run(row[1], w->dtype[1], 1, cn, b);
                for (j = 0; j < cn; j++)
                    a[j] = backward_one(a[j], b[j], q + 4 * j);
            }
            sbn__store_run(row[out], w->dtype[out], 1, cn, a);
            for (i = 0; i < w->ntensors; i++)
                row[i] += w->stride[i][0] * (int64_t)sbn_dtype_size(w->dtype[i]);
        }
    }
}

/* 1 when every tensor is fp32 (and, with unit, steps by one element along the innermost walk dim). */
static int all_f32(const sbn__walk *w, int unit)
{
    int i;
    for (i = 0; i < w->ntensors; i++)
        if (w->dtype[i] != SBN_F32 || (unit && w->stride[i][w->ndims - 1] != 1)) return 0;
    return 1;
}

void sbn__channel_map(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                      const double *coef, sbn_tensor *out, sbn_pool_t *pool)
{
    map_job job;
    const sbn_tensor *tensors[3];
    int n = 0;
    tensors[n++] = in0;
    if (kind == SBN_MAP_BACKWARD) tensors[n++] = in1;
    tensors[n++] = out;
    job.kind = kind;
    job.coef = coef;
    sbn__walk_init(&job.walk, tensors, n);
    job.all_f32 = all_f32(&job.walk, 0);
    job.direct = all_f32(&job.walk, 1);
    if (sbn__walk_is_rows(&job.walk))
        sbn__parallel_for(pool,
                          job.walk.chunks * ((job.walk.channels + SBN_ROW_BLOCK - 1) / SBN_ROW_BLOCK),
                          map_row_blocks, &job);
    else
        sbn__parallel_for(pool, job.walk.channels * job.walk.chunks, map_chunks, &job);
}
