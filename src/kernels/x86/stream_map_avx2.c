/*
 * stream_map_avx2.c - the elementwise maps of kernels.h for AVX2 (+FMA, F16C),
 * every element type, bit for bit as stream_map_scalar.c, over runs and over rows
 * of a block of channels (structure-of-arrays coefficients, loaded per block of
 * channels, only those of channels < cn; the tail's once per call). fp64 computes
 * in double with double coefficients k and no fused multiply-add, eight elements
 * at a time as two ymm, then four, then the last 1..3 (read and written element by
 * element):
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 * fp32, fp16 and bf16 compute in float with float coefficients f, runs sixteen
 * elements at a time as two ymm, then eight, rows eight channels at a time; then
 * the last 1..7 as the low lanes of one ymm (read and written in pieces of 4, 2
 * and 1 elements), each element widened exactly to float and every operation
 * rounded once to nearest even, vfmadd*ps as C's fmaf:
 *   normalize:  y  = fma(x - f0, f1, f2)
 *   backward:   gi = fma(x - f0, f1, dy - f2) * f3
 * then narrowed once (io_avx2.h: fp16 by vcvtps2ph to nearest even, bf16 by the
 * integer carry; NaNs as convert.c writes them). Each block is read before it is
 * written, so y == x (in place) is safe; nothing outside the elements named is
 * read or written, and pointers need no alignment. stream_map_nt_avx2.c builds
 * this file again with SBN_MAP_NT = 1 (entry points ..._ukernel__avx2_nt): the
 * full-vector stores of io_avx2.h that cover an aligned 32 or 16 bytes are then
 * non-temporal and a run's head up to a 32-byte boundary is mapped apart (the
 * caller fences after its calls, nt_store.h); the values are the same.
 */
#include "kernels/runs_by_run.h"
#include "kernels/x86/io_avx2.h"

#if SBN_MAP_NT
#define SBN_MAP_ENTRY(dt, family) sbn_##dt##_##family##_ukernel__avx2_nt
#else
#define SBN_MAP_ENTRY(dt, family) sbn_##dt##_##family##_ukernel__avx2
#endif


/* ---- fp64: double coefficients, double arithmetic, no fused product ---- */

static inline __m256d normalize4(__m256d v, __m256d k0, __m256d k1, __m256d k2)
{
    return _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(v, k0), k1), k2);
}

static inline __m256d backward4(__m256d g, __m256d v, __m256d k0, __m256d k1, __m256d k2,
                                __m256d k3)
{
    __m256d a = _mm256_sub_pd(g, k0);
    __m256d b = _mm256_mul_pd(_mm256_sub_pd(v, k1), k2);
    return _mm256_mul_pd(_mm256_sub_pd(a, b), k3);
}

/* Channel j's coefficient c (0..3) for four channels from j, structure of arrays. */
#define SBN_K4(k, ldk, c, j) _mm256_loadu_pd((k) + (c) * (ldk) + (j))
/* The same for the first t (1..3) channels only. */
#define SBN_KP(k, ldk, c, j, t) avx2_ldp_f64((k) + (c) * (ldk), (int64_t)(j), t)

#define SBN_DEFINE_MAP_AVX2_F64(dt)                                                             \
    static void dt##_normalize_run(const void *x, size_t n, const void *kv, void *y)           \
    {                                                                                          \
        const double *k = kv;                                                                  \
        const __m256d k0 = _mm256_set1_pd(k[0]), k1 = _mm256_set1_pd(k[1]);                   \
        const __m256d k2 = _mm256_set1_pd(k[2]);                                               \
        size_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8) {                                                           \
            __m256d lo, hi;                                                                    \
            avx2_ld8_##dt(x, (int64_t)i, &lo, &hi);                                            \
            avx2_st8_##dt(y, (int64_t)i, normalize4(lo, k0, k1, k2), normalize4(hi, k0, k1, k2)); \
        }                                                                                      \
        if (i + 4 <= n) {                                                                      \
            avx2_st4_##dt(y, (int64_t)i, normalize4(avx2_ld4_##dt(x, (int64_t)i), k0, k1, k2)); \
            i += 4;                                                                            \
        }                                                                                      \
        if (i < n)                                                                             \
            avx2_stp_##dt(y, (int64_t)i, n - i,                                                \
                          normalize4(avx2_ldp_##dt(x, (int64_t)i, n - i), k0, k1, k2));        \
    }                                                                                          \
                                                                                               \
    static void dt##_backward_run(const void *dy, const void *x, size_t n,                     \
                                           const void *kv, void *gi)                          \
    {                                                                                          \
        const double *k = kv;                                                                  \
        const __m256d k0 = _mm256_set1_pd(k[0]), k1 = _mm256_set1_pd(k[1]);                   \
        const __m256d k2 = _mm256_set1_pd(k[2]), k3 = _mm256_set1_pd(k[3]);                   \
        size_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8) {                                                           \
            __m256d glo, ghi, vlo, vhi;                                                        \
            avx2_ld8_##dt(dy, (int64_t)i, &glo, &ghi);                                         \
            avx2_ld8_##dt(x, (int64_t)i, &vlo, &vhi);                                          \
            avx2_st8_##dt(gi, (int64_t)i, backward4(glo, vlo, k0, k1, k2, k3),                 \
                          backward4(ghi, vhi, k0, k1, k2, k3));                                \
        }                                                                                      \
        if (i + 4 <= n) {                                                                      \
            __m256d g = avx2_ld4_##dt(dy, (int64_t)i), v = avx2_ld4_##dt(x, (int64_t)i);       \
            avx2_st4_##dt(gi, (int64_t)i, backward4(g, v, k0, k1, k2, k3));                    \
            i += 4;                                                                            \
        }                                                                                      \
        if (i < n) {                                                                           \
            __m256d g = avx2_ldp_##dt(dy, (int64_t)i, n - i);                                  \
            __m256d v = avx2_ldp_##dt(x, (int64_t)i, n - i);                                   \
            avx2_stp_##dt(gi, (int64_t)i, n - i, backward4(g, v, k0, k1, k2, k3));             \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static void dt##_row_normalize_run(const void *x, int64_t xs, size_t rows,                 \
                                                size_t cn, const void *kv, size_t ldk,        \
                                                void *y, int64_t ys)                           \
    {                                                                                          \
        const double *k = kv;                                                                  \
        size_t r, j, jt = cn & ~(size_t)3, t = cn - jt;                                        \
        __m256d p0 = _mm256_setzero_pd(), p1 = p0, p2 = p0; /* the tail's coefficients */      \
        if (t != 0 && rows != 0) {                                                             \
            p0 = SBN_KP(k, ldk, 0, jt, t);                                                     \
            p1 = SBN_KP(k, ldk, 1, jt, t);                                                     \
            p2 = SBN_KP(k, ldk, 2, jt, t);                                                     \
        }                                                                                      \
        for (r = 0; r < rows; r++) {                                                           \
            int64_t ox = (int64_t)r * xs, oy = (int64_t)r * ys;                                \
            for (j = 0; j + 8 <= cn; j += 8) {                                                 \
                __m256d lo, hi;                                                                \
                avx2_ld8_##dt(x, ox + (int64_t)j, &lo, &hi);                                   \
                lo = normalize4(lo, SBN_K4(k, ldk, 0, j), SBN_K4(k, ldk, 1, j),                \
                                SBN_K4(k, ldk, 2, j));                                         \
                hi = normalize4(hi, SBN_K4(k, ldk, 0, j + 4), SBN_K4(k, ldk, 1, j + 4),        \
                                SBN_K4(k, ldk, 2, j + 4));                                     \
                avx2_st8_##dt(y, oy + (int64_t)j, lo, hi);                                     \
            }                                                                                  \
            if (j + 4 <= cn) {                                                                 \
                __m256d v = avx2_ld4_##dt(x, ox + (int64_t)j);                                 \
                avx2_st4_##dt(y, oy + (int64_t)j,                                              \
                              normalize4(v, SBN_K4(k, ldk, 0, j), SBN_K4(k, ldk, 1, j),        \
                                         SBN_K4(k, ldk, 2, j)));                               \
                j += 4;                                                                        \
            }                                                                                  \
            if (t != 0)                                                                        \
                avx2_stp_##dt(y, oy + (int64_t)jt, t,                                          \
                              normalize4(avx2_ldp_##dt(x, ox + (int64_t)jt, t), p0, p1, p2));  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static void dt##_row_backward_run(const void *dy, int64_t dys, const void *x,              \
                                               int64_t xs, size_t rows, size_t cn,             \
                                               const void *kv, size_t ldk, void *gi,          \
                                               int64_t gs)                                     \
    {                                                                                          \
        const double *k = kv;                                                                  \
        size_t r, j, jt = cn & ~(size_t)3, t = cn - jt;                                        \
        __m256d p0 = _mm256_setzero_pd(), p1 = p0, p2 = p0, p3 = p0;                           \
        if (t != 0 && rows != 0) {                                                             \
            p0 = SBN_KP(k, ldk, 0, jt, t);                                                     \
            p1 = SBN_KP(k, ldk, 1, jt, t);                                                     \
            p2 = SBN_KP(k, ldk, 2, jt, t);                                                     \
            p3 = SBN_KP(k, ldk, 3, jt, t);                                                     \
        }                                                                                      \
        for (r = 0; r < rows; r++) {                                                           \
            int64_t og = (int64_t)r * dys, ox = (int64_t)r * xs, oo = (int64_t)r * gs;         \
            for (j = 0; j + 8 <= cn; j += 8) {                                                 \
                __m256d glo, ghi, vlo, vhi;                                                    \
                avx2_ld8_##dt(dy, og + (int64_t)j, &glo, &ghi);                                \
                avx2_ld8_##dt(x, ox + (int64_t)j, &vlo, &vhi);                                 \
                glo = backward4(glo, vlo, SBN_K4(k, ldk, 0, j), SBN_K4(k, ldk, 1, j),          \
                                SBN_K4(k, ldk, 2, j), SBN_K4(k, ldk, 3, j));                   \
                ghi = backward4(ghi, vhi, SBN_K4(k, ldk, 0, j + 4), SBN_K4(k, ldk, 1, j + 4),  \
                                SBN_K4(k, ldk, 2, j + 4), SBN_K4(k, ldk, 3, j + 4));           \
                avx2_st8_##dt(gi, oo + (int64_t)j, glo, ghi);                                  \
            }                                                                                  \
            if (j + 4 <= cn) {                                                                 \
                __m256d g = avx2_ld4_##dt(dy, og + (int64_t)j);                                \
                __m256d v = avx2_ld4_##dt(x, ox + (int64_t)j);                                 \
                avx2_st4_##dt(gi, oo + (int64_t)j,                                             \
                              backward4(g, v, SBN_K4(k, ldk, 0, j), SBN_K4(k, ldk, 1, j),      \
                                        SBN_K4(k, ldk, 2, j), SBN_K4(k, ldk, 3, j)));          \
                j += 4;                                                                        \
            }                                                                                  \
            if (t != 0) {                                                                      \
                __m256d g = avx2_ldp_##dt(dy, og + (int64_t)jt, t);                            \
                __m256d v = avx2_ldp_##dt(x, ox + (int64_t)jt, t);                             \
                avx2_stp_##dt(gi, oo + (int64_t)jt, t, backward4(g, v, p0, p1, p2, p3));       \
            }                                                                                  \
        }                                                                                      \
    }

SBN_DEFINE_MAP_AVX2_F64(f64)

/* ---- fp32/fp16/bf16: float coefficients, float arithmetic, two explicit FMAs ---- */

static inline __m256 normalize8(__m256 v, __m256 f0, __m256 f1, __m256 f2)
{
    return _mm256_fmadd_ps(_mm256_sub_ps(v, f0), f1, f2);
}

static inline __m256 backward8(__m256 g, __m256 v, __m256 f0, __m256 f1, __m256 f2, __m256 f3)
{
    return _mm256_mul_ps(_mm256_fmadd_ps(_mm256_sub_ps(v, f0), f1, _mm256_sub_ps(g, f2)), f3);
}

/* Channel j's float coefficient c (0..3) for eight channels from j, structure of arrays. */
#define SBN_F8(f, ldk, c, j) _mm256_loadu_ps((f) + (c) * (ldk) + (j))
/* The same for the first t (1..7) channels only, the other lanes zero. */
#define SBN_FP(f, ldk, c, j, t) avx2_ldfp_f32((f) + (c) * (ldk), (int64_t)(j), t)

#define SBN_DEFINE_MAP_AVX2_FLT(dt)                                                             \
    static void dt##_normalize_run(const void *x, size_t n, const void *kv, void *y)           \
    {                                                                                          \
        const float *f = kv;                                                                   \
        const __m256 f0 = _mm256_set1_ps(f[0]), f1 = _mm256_set1_ps(f[1]);                     \
        const __m256 f2 = _mm256_set1_ps(f[2]);                                                \
        size_t i = 0;                                                                          \
        for (; i + 16 <= n; i += 16) {                                                         \
            __m256 a, b;                                                                       \
            avx2_ldf16_##dt(x, (int64_t)i, &a, &b);                                            \
            avx2_stf16_##dt(y, (int64_t)i, normalize8(a, f0, f1, f2), normalize8(b, f0, f1, f2)); \
        }                                                                                      \
        if (i + 8 <= n) {                                                                      \
            avx2_stf8_##dt(y, (int64_t)i, normalize8(avx2_ldf8_##dt(x, (int64_t)i), f0, f1, f2)); \
            i += 8;                                                                            \
        }                                                                                      \
        if (i < n)                                                                             \
            avx2_stfp_##dt(y, (int64_t)i, n - i,                                               \
                           normalize8(avx2_ldfp_##dt(x, (int64_t)i, n - i), f0, f1, f2));      \
    }                                                                                          \
                                                                                               \
    static void dt##_backward_run(const void *dy, const void *x, size_t n,                     \
                                           const void *kv, void *gi)                          \
    {                                                                                          \
        const float *f = kv;                                                                   \
        const __m256 f0 = _mm256_set1_ps(f[0]), f1 = _mm256_set1_ps(f[1]);                     \
        const __m256 f2 = _mm256_set1_ps(f[2]), f3 = _mm256_set1_ps(f[3]);                     \
        size_t i = 0;                                                                          \
        for (; i + 16 <= n; i += 16) {                                                         \
            __m256 ga, gb, va, vb;                                                             \
            avx2_ldf16_##dt(dy, (int64_t)i, &ga, &gb);                                         \
            avx2_ldf16_##dt(x, (int64_t)i, &va, &vb);                                          \
            avx2_stf16_##dt(gi, (int64_t)i, backward8(ga, va, f0, f1, f2, f3),                 \
                            backward8(gb, vb, f0, f1, f2, f3));                                \
        }                                                                                      \
        if (i + 8 <= n) {                                                                      \
            __m256 g = avx2_ldf8_##dt(dy, (int64_t)i), v = avx2_ldf8_##dt(x, (int64_t)i);      \
            avx2_stf8_##dt(gi, (int64_t)i, backward8(g, v, f0, f1, f2, f3));                   \
            i += 8;                                                                            \
        }                                                                                      \
        if (i < n) {                                                                           \
            __m256 g = avx2_ldfp_##dt(dy, (int64_t)i, n - i);                                  \
            __m256 v = avx2_ldfp_##dt(x, (int64_t)i, n - i);                                   \
            avx2_stfp_##dt(gi, (int64_t)i, n - i, backward8(g, v, f0, f1, f2, f3));            \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static void dt##_row_normalize_run(const void *x, int64_t xs, size_t rows,                 \
                                                size_t cn, const void *kv, size_t ldk,        \
                                                void *y, int64_t ys)                           \
    {                                                                                          \
        const float *f = kv;                                                                   \
        size_t r, j, jt = cn & ~(size_t)7, t = cn - jt;                                        \
        __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0; /* the tail's coefficients */       \
        if (t != 0 && rows != 0) {                                                             \
            p0 = SBN_FP(f, ldk, 0, jt, t);                                                     \
            p1 = SBN_FP(f, ldk, 1, jt, t);                                                     \
            p2 = SBN_FP(f, ldk, 2, jt, t);                                                     \
        }                                                                                      \
        for (r = 0; r < rows; r++) {                                                           \
            int64_t ox = (int64_t)r * xs, oy = (int64_t)r * ys;                                \
            for (j = 0; j < jt; j += 8) {                                                      \
                __m256 v = avx2_ldf8_##dt(x, ox + (int64_t)j);                                 \
                avx2_stf8_##dt(y, oy + (int64_t)j,                                             \
                               normalize8(v, SBN_F8(f, ldk, 0, j), SBN_F8(f, ldk, 1, j),       \
                                          SBN_F8(f, ldk, 2, j)));                              \
            }                                                                                  \
            if (t != 0)                                                                        \
                avx2_stfp_##dt(y, oy + (int64_t)jt, t,                                         \
                               normalize8(avx2_ldfp_##dt(x, ox + (int64_t)jt, t), p0, p1, p2)); \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static void dt##_row_backward_run(const void *dy, int64_t dys, const void *x,              \
                                               int64_t xs, size_t rows, size_t cn,             \
                                               const void *kv, size_t ldk, void *gi,          \
                                               int64_t gs)                                     \
    {                                                                                          \
        const float *f = kv;                                                                   \
        size_t r, j, jt = cn & ~(size_t)7, t = cn - jt;                                        \
        __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;                            \
        if (t != 0 && rows != 0) {                                                             \
            p0 = SBN_FP(f, ldk, 0, jt, t);                                                     \
            p1 = SBN_FP(f, ldk, 1, jt, t);                                                     \
            p2 = SBN_FP(f, ldk, 2, jt, t);                                                     \
            p3 = SBN_FP(f, ldk, 3, jt, t);                                                     \
        }                                                                                      \
        for (r = 0; r < rows; r++) {                                                           \
            int64_t og = (int64_t)r * dys, ox = (int64_t)r * xs, oo = (int64_t)r * gs;         \
            for (j = 0; j < jt; j += 8) {                                                      \
                __m256 g = avx2_ldf8_##dt(dy, og + (int64_t)j);                                \
                __m256 v = avx2_ldf8_##dt(x, ox + (int64_t)j);                                 \
                avx2_stf8_##dt(gi, oo + (int64_t)j,                                            \
                               backward8(g, v, SBN_F8(f, ldk, 0, j), SBN_F8(f, ldk, 1, j),     \
                                         SBN_F8(f, ldk, 2, j), SBN_F8(f, ldk, 3, j)));         \
            }                                                                                  \
            if (t != 0) {                                                                      \
                __m256 g = avx2_ldfp_##dt(dy, og + (int64_t)jt, t);                            \
                __m256 v = avx2_ldfp_##dt(x, ox + (int64_t)jt, t);                             \
                avx2_stfp_##dt(gi, oo + (int64_t)jt, t, backward8(g, v, p0, p1, p2, p3));      \
            }                                                                                  \
        }                                                                                      \
    }

SBN_DEFINE_MAP_AVX2_FLT(f32)
SBN_DEFINE_MAP_AVX2_FLT(f16)
SBN_DEFINE_MAP_AVX2_FLT(bf16)

/* ---- the 16 entry points: the run's head apart when streaming ---- */

#define SBN_DEFINE_MAP_AVX2_ENTRIES(dt, es)                                                     \
    void SBN_MAP_ENTRY(dt, normalize)(const void *x, size_t n, const void *k, void *y)          \
    {                                                                                          \
        size_t h = sbn_nt_head(y, es, n, 32);                                                  \
        dt##_normalize_run(x, h, k, y);                                                        \
        dt##_normalize_run((const char *)x + h * es, n - h, k, (char *)y + h * es);            \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, backward)(const void *dy, const void *x, size_t n, const void *k,    \
                                     void *gi)                                                 \
    {                                                                                          \
        size_t h = sbn_nt_head(gi, es, n, 32);                                                 \
        dt##_backward_run(dy, x, h, k, gi);                                                    \
        dt##_backward_run((const char *)dy + h * es, (const char *)x + h * es, n - h, k,       \
                          (char *)gi + h * es);                                                \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, row_normalize)(const void *x, int64_t xs, size_t rows, size_t cn,    \
                                          const void *k, size_t ldk, void *y, int64_t ys)      \
    {                                                                                          \
        dt##_row_normalize_run(x, xs, rows, cn, k, ldk, y, ys);                                \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, row_backward)(const void *dy, int64_t dys, const void *x,            \
                                         int64_t xs, size_t rows, size_t cn, const void *k,    \
                                         size_t ldk, void *gi, int64_t gs)                     \
    {                                                                                          \
        dt##_row_backward_run(dy, dys, x, xs, rows, cn, k, ldk, gi, gs);                       \
    }

SBN_DEFINE_MAP_AVX2_ENTRIES(f64, sizeof(double))
SBN_DEFINE_MAP_AVX2_ENTRIES(f32, sizeof(float))
SBN_DEFINE_MAP_AVX2_ENTRIES(f16, sizeof(uint16_t))
SBN_DEFINE_MAP_AVX2_ENTRIES(bf16, sizeof(uint16_t))

/* Several runs of a channel: a loop over the one-run maps above (runs_by_run.h). */
#if SBN_MAP_NT
#define SBN_MAP_ISA avx2_nt
#else
#define SBN_MAP_ISA avx2
#endif
#define SBN_RUNS_MAP_BY_RUN(dt, isa, size, T) SBN_DEFINE_RUNS_MAP_BY_RUN(dt, isa, size, T)
SBN_RUNS_MAP_BY_RUN(f64, SBN_MAP_ISA, 8, double)
SBN_RUNS_MAP_BY_RUN(f32, SBN_MAP_ISA, 4, float)
SBN_RUNS_MAP_BY_RUN(f16, SBN_MAP_ISA, 2, float)
SBN_RUNS_MAP_BY_RUN(bf16, SBN_MAP_ISA, 2, float)
