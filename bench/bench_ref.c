/*
 * bench_ref.c - the plain reference kernels the benchmark compares against,
 * built on their own with -O3 -march=native. They do the least work a batch norm
 * can do in memory traffic and nothing else (no double sums, no care for accuracy):
 *   fwd-train: one read pass summing x and x*x per channel (f32 lanes), then one
 *              pass y = a[c]*x + b[c];                                 3E bytes
 *   bwd:       one read pass summing dy and dy*x, then dx = k1*dy + k2*x + k3; 5E
 *   eval:      one pass y = a[c]*x + b[c];                             2E
 * in the case's own layout; bf16 and fp16 elements are widened to float and rounded
 * back to nearest even (their kernels, written with vectors: bench_ref_half.c). Work is
 * split into equal contiguous ranges of (n, c) planes (channels-first) or rows of C
 * (channels-last, 2-D) over a team of pthreads; per-thread per-channel partials are added
 * after a barrier (ref_barrier.h: spin, then sleep).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ref_barrier.h"

#define LANES 32 /* independent accumulators per plane sum */

typedef struct ref_job {
    const bench_problem *p;
    bench_mode mode;
} ref_job;

struct ref_team {
    int threads;
    int64_t max_c;
    pthread_t *workers;
    int started;
    ref_barrier start, mid, end;
    const ref_job *job;
    int stop;
    float *part; /* [threads][2][max_c] */
    float *coef; /* [threads][3][max_c] */
};

static inline float ld_f32(const float *p, int64_t i) { return p[i]; }
static inline void st_f32(float *p, int64_t i, float v) { p[i] = v; }

/*
 * Kernels for one element type T with loader LD and storer ST:
 *   plane_sums:  (sum a, sum a*b) over n contiguous elements (b = a for the forward)
 *   rows_sums:   per-channel sums over `rows` rows of C (channels-last)
 *   plane_map:   y = k1*a + k2*b + k3 over a plane (b unused when k2 is NULL-free: fwd)
 *   rows_map:    the same per row of C
 */
#define DEFINE_REF_KERNELS(SFX, T, LD, ST)                                                    \
    static void plane_sums_##SFX(const T *restrict a, const T *restrict b, int64_t n, float *s0, float *s1)    \
    {                                                                                         \
        float acc0[LANES] = {0}, acc1[LANES] = {0}, r0 = 0.0f, r1 = 0.0f;                     \
        int64_t i = 0, j;                                                                     \
        for (; i + LANES <= n; i += LANES)                                                    \
            for (j = 0; j < LANES; j++) {                                                     \
                float va = LD(a, i + j), vb = LD(b, i + j);                                   \
                acc0[j] += va;                                                                \
                acc1[j] += va * vb;                                                           \
            }                                                                                 \
        for (; i < n; i++) {                                                                  \
            r0 += LD(a, i);                                                                   \
            r1 += LD(a, i) * LD(b, i);                                                        \
        }                                                                                     \
        for (j = 0; j < LANES; j++) {                                                         \
            r0 += acc0[j];                                                                    \
            r1 += acc1[j];                                                                    \
        }                                                                                     \
        *s0 += r0;                                                                            \
        *s1 += r1;                                                                            \
    }                                                                                         \
    static void rows_sums_##SFX(const T *restrict a, const T *restrict b, int64_t rows, int64_t c, float *restrict s0,  \
                                float *restrict s1)                                                    \
    {                                                                                         \
        int64_t r = 0, k;                                                                     \
        for (; r + 4 <= rows; r += 4) {                                                       \
            const T *a0 = a + r * c, *b0 = b + r * c;                                         \
            for (k = 0; k < c; k++) {                                                         \
                float x0 = LD(a0, k), x1 = LD(a0, c + k), x2 = LD(a0, 2 * c + k),             \
                      x3 = LD(a0, 3 * c + k);                                                 \
                s0[k] += (x0 + x1) + (x2 + x3);                                               \
                s1[k] += (x0 * LD(b0, k) + x1 * LD(b0, c + k)) +                              \
                         (x2 * LD(b0, 2 * c + k) + x3 * LD(b0, 3 * c + k));                   \
            }                                                                                 \
        }                                                                                     \
        for (; r < rows; r++)                                                                 \
            for (k = 0; k < c; k++) {                                                         \
                s0[k] += LD(a, r * c + k);                                                    \
                s1[k] += LD(a, r * c + k) * LD(b, r * c + k);                                 \
            }                                                                                 \
    }                                                                                         \
    static void plane_map1_##SFX(const T *restrict a, int64_t n, float k1, float k3, T *restrict y)             \
    {                                                                                         \
        int64_t i;                                                                            \
        for (i = 0; i < n; i++) ST(y, i, k1 * LD(a, i) + k3);                                 \
    }                                                                                         \
    static void plane_map2_##SFX(const T *restrict a, const T *restrict b, int64_t n, float k1, float k2,       \
                                 float k3, T *restrict y)                                              \
    {                                                                                         \
        int64_t i;                                                                            \
        for (i = 0; i < n; i++) ST(y, i, k1 * LD(a, i) + k2 * LD(b, i) + k3);                 \
    }                                                                                         \
    static void rows_map1_##SFX(const T *restrict a, int64_t rows, int64_t c, const float *restrict k1,         \
                                const float *restrict k3, T *restrict y)                                        \
    {                                                                                         \
        int64_t r, k;                                                                         \
        for (r = 0; r < rows; r++)                                                            \
            for (k = 0; k < c; k++) ST(y, r * c + k, k1[k] * LD(a, r * c + k) + k3[k]);       \
    }                                                                                         \
    static void rows_map2_##SFX(const T *restrict a, const T *restrict b, int64_t rows, int64_t c,              \
                                const float *restrict k1, const float *restrict k2, const float *restrict k3, T *restrict y)      \
    {                                                                                         \
        int64_t r, k;                                                                         \
        for (r = 0; r < rows; r++)                                                            \
            for (k = 0; k < c; k++)                                                           \
                ST(y, r * c + k, k1[k] * LD(a, r * c + k) + k2[k] * LD(b, r * c + k) + k3[k]); \
    }

DEFINE_REF_KERNELS(f32, float, ld_f32, st_f32)

void ref_plane_sums(int bf16, const void *x, int64_t n, float *s0, float *s1)
{
    if (bf16)
        ref_half_plane_sums(SBN_BF16, (const uint16_t *)x, (const uint16_t *)x, n, s0, s1);
    else
        plane_sums_f32((const float *)x, (const float *)x, n, s0, s1);
}

void ref_rows_sums(int bf16, const void *x, int64_t rows, int64_t c, float *s0, float *s1)
{
    if (bf16)
        ref_half_rows_sums(SBN_BF16, (const uint16_t *)x, (const uint16_t *)x, rows, c, s0, s1);
    else
        rows_sums_f32((const float *)x, (const float *)x, rows, c, s0, s1);
}

int64_t bench_numel(const bench_problem *p)
{
    return p->n * p->c * p->h * p->w;
}

/* Per-layout geometry: `units` planes of `len` elements (cf) or rows of C (cl). */
typedef struct geom {
    int planes; /* 1: (n, c) planes of h*w; 0: rows of c */
    int64_t units, len, c;
} geom;

static geom geometry(const bench_problem *p)
{
    geom g;
    g.c = p->c;
    g.planes = p->rank == 4 && !p->channels_last;
    if (g.planes) {
        g.units = p->n * p->c;
        g.len = p->h * p->w;
    } else {
        g.units = p->n * p->h * p->w;
        g.len = p->c;
    }
    return g;
}

/* bf16 and fp16 go to bench_ref_half.c's kernels (they take the dtype), fp32 to the above. */
static int is_half(sbn_dtype dt)
{
    return dt == SBN_BF16 || dt == SBN_F16;
}

static void sums_range(const bench_problem *p, const geom *g, const void *a, const void *b,
                       int64_t lo, int64_t hi, float *s0, float *s1)
{
    size_t es = sbn_dtype_size(p->dtype);
    int half = is_half(p->dtype);
    int64_t u;
    if (g->planes) {
        for (u = lo; u < hi; u++) {
            const char *pa = (const char *)a + (size_t)(u * g->len) * es;
            const char *pb = (const char *)b + (size_t)(u * g->len) * es;
            int64_t ch = u % g->c;
            if (half)
                ref_half_plane_sums(p->dtype, (const uint16_t *)pa, (const uint16_t *)pb, g->len,
                                    &s0[ch], &s1[ch]);
            else
                plane_sums_f32((const float *)pa, (const float *)pb, g->len, &s0[ch], &s1[ch]);
        }
    } else {
        const char *pa = (const char *)a + (size_t)(lo * g->c) * es;
        const char *pb = (const char *)b + (size_t)(lo * g->c) * es;
        if (half)
            ref_half_rows_sums(p->dtype, (const uint16_t *)pa, (const uint16_t *)pb, hi - lo, g->c,
                               s0, s1);
        else
            rows_sums_f32((const float *)pa, (const float *)pb, hi - lo, g->c, s0, s1);
    }
}

/* out = k1*a + k2*b + k3 per channel; b and k2 NULL for the one-input map. */
static void map_range(const bench_problem *p, const geom *g, const void *a, const void *b,
                      const float *k1, const float *k2, const float *k3, void *out, int64_t lo,
                      int64_t hi)
{
    size_t es = sbn_dtype_size(p->dtype);
    int half = is_half(p->dtype);
    int64_t u;
    if (g->planes) {
        for (u = lo; u < hi; u++) {
            size_t off = (size_t)(u * g->len) * es;
            const char *pa = (const char *)a + off, *pb = b ? (const char *)b + off : NULL;
            char *po = (char *)out + off;
            int64_t ch = u % g->c;
            if (half)
                ref_half_plane_map(p->dtype, (const uint16_t *)pa, (const uint16_t *)pb, g->len,
                                   k1[ch], b ? k2[ch] : 0.0f, k3[ch], (uint16_t *)po);
            else if (b == NULL)
                plane_map1_f32((const float *)pa, g->len, k1[ch], k3[ch], (float *)po);
            else
                plane_map2_f32((const float *)pa, (const float *)pb, g->len, k1[ch], k2[ch],
                               k3[ch], (float *)po);
        }
    } else {
        size_t off = (size_t)(lo * g->c) * es;
        const char *pa = (const char *)a + off, *pb = b ? (const char *)b + off : NULL;
        char *po = (char *)out + off;
        if (half)
            ref_half_rows_map(p->dtype, (const uint16_t *)pa, (const uint16_t *)pb, hi - lo, g->c,
                              k1, k2, k3, (uint16_t *)po);
        else if (b == NULL)
            rows_map1_f32((const float *)pa, hi - lo, g->c, k1, k3, (float *)po);
        else
            rows_map2_f32((const float *)pa, (const float *)pb, hi - lo, g->c, k1, k2, k3,
                          (float *)po);
    }
}

static void mid_barrier(ref_team *t)
{
    if (t->threads > 1) ref_barrier_wait(&t->mid);
}

/* Thread tid's share of one job. */
static void run_share(ref_team *t, int tid)
{
    const bench_problem *p = t->job->p;
    bench_mode mode = t->job->mode;
    geom g = geometry(p);
    int64_t lo = g.units * tid / t->threads, hi = g.units * (tid + 1) / t->threads, c, j;
    int64_t count = bench_numel(p) / p->c;
    float *s0 = t->part + (size_t)(2 * tid) * (size_t)t->max_c, *s1 = s0 + t->max_c;
    float *k1 = t->coef + (size_t)(3 * tid) * (size_t)t->max_c, *k2 = k1 + t->max_c,
          *k3 = k2 + t->max_c;

    if (mode == BENCH_EVAL) {
        for (c = 0; c < g.c; c++) {
            float a = p->weight[c] / sqrtf(p->run_var[c] + (float)p->eps);
            k1[c] = a;
            k3[c] = p->bias[c] - p->run_mean[c] * a;
        }
        map_range(p, &g, p->x, NULL, k1, NULL, k3, p->y, lo, hi);
        return;
    }
    memset(s0, 0, (size_t)g.c * sizeof *s0);
    memset(s1, 0, (size_t)g.c * sizeof *s1);
    if (mode == BENCH_FWD) sums_range(p, &g, p->x, p->x, lo, hi, s0, s1);
    else sums_range(p, &g, p->dy, p->x, lo, hi, s0, s1);
    mid_barrier(t);
    for (c = 0; c < g.c; c++) {
        float a = 0.0f, b = 0.0f;
        for (j = 0; j < t->threads; j++) {
            a += t->part[(size_t)(2 * j) * (size_t)t->max_c + (size_t)c];
            b += t->part[(size_t)(2 * j + 1) * (size_t)t->max_c + (size_t)c];
        }
        if (mode == BENCH_FWD) {
            float mean = a / (float)count, var = b / (float)count - mean * mean;
            float inv = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + (float)p->eps);
            k1[c] = p->weight[c] * inv;
            k3[c] = p->bias[c] - mean * k1[c];
        } else {
            /* dx = w*inv*(dy - sum_dy/R - (x-mean)*inv^2*sum(dy*(x-mean))/R) */
            float mean = p->save_mean[c], inv = p->save_invstd[c];
            float dot = b - mean * a, wi = p->weight[c] * inv;
            k1[c] = wi;
            k2[c] = -wi * inv * inv * dot / (float)count;
            k3[c] = -wi * a / (float)count - k2[c] * mean;
            if (tid == 0) {
                p->grad_weight[c] = dot * inv;
                p->grad_bias[c] = a;
            }
        }
    }
    if (mode == BENCH_FWD) map_range(p, &g, p->x, NULL, k1, NULL, k3, p->y, lo, hi);
    else map_range(p, &g, p->dy, p->x, k1, k2, k3, p->dx, lo, hi);
}

static void *worker_main(void *arg)
{
    ref_team *t = ((void **)arg)[0];
    int tid = (int)(intptr_t)((void **)arg)[1];
    free(arg);
    for (;;) {
        ref_barrier_wait(&t->start);
        if (t->stop) return NULL;
        run_share(t, tid);
        ref_barrier_wait(&t->end);
    }
}

ref_team *ref_team_create(int threads, int64_t max_channels)
{
    ref_team *t = calloc(1, sizeof *t);
    int i;
    if (t == NULL) return NULL;
    t->threads = threads < 1 ? 1 : threads;
    t->max_c = max_channels < 1 ? 1 : max_channels;
    t->part = calloc((size_t)(2 * t->threads) * (size_t)t->max_c, sizeof(float));
    t->coef = calloc((size_t)(3 * t->threads) * (size_t)t->max_c, sizeof(float));
    t->workers = calloc((size_t)t->threads, sizeof *t->workers);
    if (t->part == NULL || t->coef == NULL || t->workers == NULL) {
        free(t->part);
        free(t->coef);
        free(t->workers);
        free(t);
        return NULL;
    }
    if (t->threads > 1) {
        ref_barrier_init(&t->start, (unsigned)t->threads);
        ref_barrier_init(&t->mid, (unsigned)t->threads);
        ref_barrier_init(&t->end, (unsigned)t->threads);
        for (i = 1; i < t->threads; i++) {
            void **arg = malloc(2 * sizeof *arg);
            if (arg == NULL) abort();
            arg[0] = t;
            arg[1] = (void *)(intptr_t)i;
            if (pthread_create(&t->workers[i], NULL, worker_main, arg) != 0) abort();
            t->started++;
        }
    }
    return t;
}

void ref_team_destroy(ref_team *t)
{
    int i;
    if (t == NULL) return;
    if (t->threads > 1) {
        t->stop = 1;
        ref_barrier_wait(&t->start);
        for (i = 1; i <= t->started; i++) pthread_join(t->workers[i], NULL);
        ref_barrier_destroy(&t->start);
        ref_barrier_destroy(&t->mid);
        ref_barrier_destroy(&t->end);
    }
    free(t->part);
    free(t->coef);
    free(t->workers);
    free(t);
}

void ref_run(ref_team *t, const bench_problem *p, bench_mode mode)
{
    ref_job job;
    job.p = p;
    job.mode = mode;
    t->job = &job;
    if (t->threads == 1) {
        run_share(t, 0);
        return;
    }
    ref_barrier_wait(&t->start);
    run_share(t, 0);
    ref_barrier_wait(&t->end);
}
