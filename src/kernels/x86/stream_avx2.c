/*
 * stream_avx2.c - the streaming reductions of kernels.h for AVX2 (+F16C), every
 * element type, bit for bit the sequence of stream_scalar.c. Runs of one channel
 * (element i to lane (lane + i) % 16): the head, the elements up to the one that
 * falls in lane 0, is added to acc in memory; then, while 16 elements remain, the
 * 16 lanes of a and b sit in 4 + 4 ymm registers (lanes 0-3, 4-7, 8-11, 12-15)
 * and take 16 elements per iteration, lane k the element k past the block start;
 * they are stored back and the tail (lanes 0..) is added in memory. The backward
 * loads each quarter's dy and x just before its step: with all sixteen loaded first
 * (eight ymm of temporaries beside eight accumulators and the center), GCC kept one
 * accumulator on the stack, and its fma chain waited on a store and a reload every
 * iteration (ctest kernel_spills checks it). Heads and tails go 4 elements at a time,
 * the last 1..3 through the low lanes of one ymm (io_avx2.h) and scalar adds, in
 * straight-line code (a loop there would be auto-vectorised behind runtime alias
 * checks that cost more than they save).
 * Each lane thus adds its elements in index order with the scalar operations, and
 * only the lanes the scalar code would touch are read and written.
 * The row reductions (channels-last) are rows_avx2.c's.
 * Elements are widened exactly (io_avx2.h). Per element, in double, b's product and
 * add in one fused multiply-add (rounded once, as C's fma):
 *   accum:      d = x - shift;  a += d;   b = fma(d, d, b)
 *   bwd_accum:  a += dy;        b = fma(dy, x - center, b)
 */
#include <math.h>

#include "kernels/runs_by_run.h"
#include "kernels/x86/io_avx2.h"

/* Sixteen elements from element i of p as four ymm of doubles v0..v3. */
#define SBN_LD16(dt, p, i, v0, v1, v2, v3)            \
    do {                                              \
        avx2_ld8_##dt(p, (int64_t)(i), &v0, &v1);     \
        avx2_ld8_##dt(p, (int64_t)(i) + 8, &v2, &v3); \
    } while (0)

/* accum: one ymm of elements v (overwritten by v - shift) into registers va, vb. */
#define SBN_ACC_STEP(va, vb, v, vs)                  \
    do {                                             \
        v = _mm256_sub_pd(v, vs);                    \
        va = _mm256_add_pd(va, v);                   \
        vb = _mm256_fmadd_pd(v, v, vb);               \
    } while (0)

/* bwd_accum: one ymm of dy (g) and x (v) into registers va, vb. */
#define SBN_BWD_STEP(va, vb, g, v, vc)                                  \
    do {                                                                \
        const __m256d g_ = (g), v_ = (v);                               \
        va = _mm256_add_pd(va, g_);                                     \
        vb = _mm256_fmadd_pd(g_, _mm256_sub_pd(v_, vc), vb);             \
    } while (0)

/* Four deviations d into the lanes pa[0..3], pb[0..3] in memory. */
static inline void acc4_mem(double *pa, double *pb, __m256d d)
{
    _mm256_storeu_pd(pa, _mm256_add_pd(_mm256_loadu_pd(pa), d));
    _mm256_storeu_pd(pb, _mm256_fmadd_pd(d, d, _mm256_loadu_pd(pb)));
}

/* Four dy (g) and x - center (xc) into the lanes pa[0..3], pb[0..3] in memory. */
static inline void bwd4_mem(double *pa, double *pb, __m256d g, __m256d xc)
{
    _mm256_storeu_pd(pa, _mm256_add_pd(_mm256_loadu_pd(pa), g));
    _mm256_storeu_pd(pb, _mm256_fmadd_pd(g, xc, _mm256_loadu_pd(pb)));
}

/* The same for the first t (1..3) lanes only, in scalar code on the vector's lanes. */
static inline void acc3_mem(double *pa, double *pb, __m256d d, size_t t)
{
    double v[4];
    size_t k;
    _mm256_storeu_pd(v, d);
    for (k = 0; k < 3; k++) {
        if (k == t) break;
        pa[k] += v[k];
        pb[k] = fma(v[k], v[k], pb[k]);
    }
}

static inline void bwd3_mem(double *pa, double *pb, __m256d g, __m256d xc, size_t t)
{
    double gv[4], cv[4];
    size_t k;
    _mm256_storeu_pd(gv, g);
    _mm256_storeu_pd(cv, xc);
    for (k = 0; k < 3; k++) {
        if (k == t) break;
        pa[k] += gv[k];
        pb[k] = fma(gv[k], cv[k], pb[k]);
    }
}

/* The 16 lanes of a and b (acc[0..31]) in registers. */
typedef struct lanes16 {
    __m256d a0, a1, a2, a3, b0, b1, b2, b3;
} lanes16;

static inline lanes16 lanes_load(const double *acc)
{
    lanes16 r;
    r.a0 = _mm256_loadu_pd(acc);
    r.a1 = _mm256_loadu_pd(acc + 4);
    r.a2 = _mm256_loadu_pd(acc + 8);
    r.a3 = _mm256_loadu_pd(acc + 12);
    r.b0 = _mm256_loadu_pd(acc + 16);
    r.b1 = _mm256_loadu_pd(acc + 20);
    r.b2 = _mm256_loadu_pd(acc + 24);
    r.b3 = _mm256_loadu_pd(acc + 28);
    return r;
}

static inline void lanes_store(double *acc, const lanes16 *r)
{
    _mm256_storeu_pd(acc, r->a0);
    _mm256_storeu_pd(acc + 4, r->a1);
    _mm256_storeu_pd(acc + 8, r->a2);
    _mm256_storeu_pd(acc + 12, r->a3);
    _mm256_storeu_pd(acc + 16, r->b0);
    _mm256_storeu_pd(acc + 20, r->b1);
    _mm256_storeu_pd(acc + 24, r->b2);
    _mm256_storeu_pd(acc + 28, r->b3);
}

/*
 * Per dtype: the partial runs (elements [i, end) into the contiguous lanes from
 * p, b at p + 16), then the kernels.
 */
#define SBN_DEFINE_STREAM_AVX2(dt)                                                              \
    static inline void acc_part_##dt(const void *x, size_t i, size_t end, double shift,        \
                                     double *p)                                                \
    {                                                                                          \
        const __m256d vs = _mm256_set1_pd(shift);                                              \
        for (; i + 4 <= end; i += 4, p += 4)                                                   \
            acc4_mem(p, p + SBN_LANES, _mm256_sub_pd(avx2_ld4_##dt(x, (int64_t)i), vs));       \
        if (i < end)                                                                           \
            acc3_mem(p, p + SBN_LANES,                                                         \
                     _mm256_sub_pd(avx2_ldp_##dt(x, (int64_t)i, end - i), vs), end - i);       \
    }                                                                                          \
                                                                                               \
    static inline void bwd_part_##dt(const void *dy, const void *x, size_t i, size_t end,      \
                                     double center, double *p)                                 \
    {                                                                                          \
        const __m256d vc = _mm256_set1_pd(center);                                             \
        for (; i + 4 <= end; i += 4, p += 4)                                                   \
            bwd4_mem(p, p + SBN_LANES, avx2_ld4_##dt(dy, (int64_t)i),                          \
                     _mm256_sub_pd(avx2_ld4_##dt(x, (int64_t)i), vc));                         \
        if (i < end)                                                                           \
            bwd3_mem(p, p + SBN_LANES, avx2_ldp_##dt(dy, (int64_t)i, end - i),                 \
                     _mm256_sub_pd(avx2_ldp_##dt(x, (int64_t)i, end - i), vc), end - i);       \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_accum_ukernel__avx2(const void *x, size_t n, unsigned lane, double shift,   \
                                        double *acc)                                           \
    {                                                                                          \
        size_t l0 = lane % SBN_LANES, i = (SBN_LANES - l0) % SBN_LANES;                        \
        if (i > n) i = n;                                                                      \
        acc_part_##dt(x, 0, i, shift, acc + l0); /* the head, lanes l0.. */                    \
        if (n - i >= SBN_LANES) {                                                              \
            const __m256d vs = _mm256_set1_pd(shift);                                          \
            lanes16 r = lanes_load(acc);                                                       \
            for (; i + SBN_LANES <= n; i += SBN_LANES) {                                       \
                __m256d v0, v1, v2, v3;                                                        \
                SBN_LD16(dt, x, i, v0, v1, v2, v3);                                            \
                SBN_ACC_STEP(r.a0, r.b0, v0, vs);                                              \
                SBN_ACC_STEP(r.a1, r.b1, v1, vs);                                              \
                SBN_ACC_STEP(r.a2, r.b2, v2, vs);                                              \
                SBN_ACC_STEP(r.a3, r.b3, v3, vs);                                              \
            }                                                                                  \
            lanes_store(acc, &r);                                                              \
        }                                                                                      \
        acc_part_##dt(x, i, n, shift, acc); /* the tail, lanes 0.. */                          \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_bwd_accum_ukernel__avx2(const void *dy, const void *x, size_t n,            \
                                            unsigned lane, double center, double *acc)         \
    {                                                                                          \
        size_t l0 = lane % SBN_LANES, i = (SBN_LANES - l0) % SBN_LANES;                        \
        if (i > n) i = n;                                                                      \
        bwd_part_##dt(dy, x, 0, i, center, acc + l0);                                          \
        if (n - i >= SBN_LANES) {                                                              \
            const __m256d vc = _mm256_set1_pd(center);                                         \
            lanes16 r = lanes_load(acc);                                                       \
            for (; i + SBN_LANES <= n; i += SBN_LANES) {                                       \
                SBN_BWD_STEP(r.a0, r.b0, avx2_ld4_##dt(dy, (int64_t)i),                        \
                             avx2_ld4_##dt(x, (int64_t)i), vc);                                \
                SBN_BWD_STEP(r.a1, r.b1, avx2_ld4_##dt(dy, (int64_t)i + 4),                    \
                             avx2_ld4_##dt(x, (int64_t)i + 4), vc);                            \
                SBN_BWD_STEP(r.a2, r.b2, avx2_ld4_##dt(dy, (int64_t)i + 8),                    \
                             avx2_ld4_##dt(x, (int64_t)i + 8), vc);                            \
                SBN_BWD_STEP(r.a3, r.b3, avx2_ld4_##dt(dy, (int64_t)i + 12),                   \
                             avx2_ld4_##dt(x, (int64_t)i + 12), vc);                           \
            }                                                                                  \
            lanes_store(acc, &r);                                                              \
        }                                                                                      \
        bwd_part_##dt(dy, x, i, n, center, acc);                                               \
    }

SBN_DEFINE_STREAM_AVX2(f64)
SBN_DEFINE_STREAM_AVX2(f32)
SBN_DEFINE_STREAM_AVX2(f16)
SBN_DEFINE_STREAM_AVX2(bf16)

SBN_DEFINE_RUNS_REDUCE_STAGED(f64, avx2, 8)
SBN_DEFINE_RUNS_REDUCE_STAGED(f32, avx2, 4)
SBN_DEFINE_RUNS_REDUCE_STAGED(f16, avx2, 2)
SBN_DEFINE_RUNS_REDUCE_STAGED(bf16, avx2, 2)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f64, avx2)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f32, avx2)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f16, avx2)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(bf16, avx2)
