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
 * integer carry; NaNs as convert.c writes them). bf16 takes runs, and rows of up to 2048
 * channels, sixteen elements at a time in the pair order of avx2_ldf16_bf16 (rows with
 * their coefficients rearranged into that order once per call). Several adjacent runs
 * of the float maps (short NCHW planes) go as one stretch, each lane with its run's
 * coefficients. Each block is read before it is
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

/* ---- bf16 rows sixteen channels a step, in the pair order of avx2_ldf16_bf16 ---- */

/*
 * The bf16 row maps take 16 channels as one load and two unpacks, in pair order, with
 * their coefficients rearranged once per call into that order (a: channels 0-3 and 8-11
 * of each 16, b: 4-7 and 12-15) in a table on the stack, a group of 16 channels' three or
 * four coefficients side by side (three or four lines, a and b halves each: one stream of
 * lines, not one a coefficient, 8 KiB apart in the same L1 sets), up to SBN_PAIR_MAX_CN
 * channels; the channels past the last whole 16 go the eight-wide way, and so do wider
 * rows. Each element's operations are those of the eight-wide code: the same bits.
 * SBN_PAIR_MAX_CN covers the widest rows plan.c leaves untiled beside a 32 KiB L1 (bf16
 * normalize: three float coefficients and two elements, 16 bytes a channel, 2048
 * channels) and its row tiles (512 channels); the tables are then 24 and 32 KiB.
 */
#define SBN_PAIR_MAX_CN 2048

/* The coefficients of 16 channels from j of f into kp (32-byte aligned) in pair order:
 * kp[0..8) channels 0-3 and 8-11, kp[8..16) channels 4-7 and 12-15. */
static inline void pair_coefs(const float *f, size_t j, float *kp)
{
    const __m256 lo = _mm256_loadu_ps(f + j), hi = _mm256_loadu_ps(f + j + 8);
    _mm256_store_ps(kp, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_store_ps(kp + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* Whether rows take the pair order: whole sixteens of channels, a table that fits, and
 * more than one row to amortise building it. */
static inline int pair_rows(size_t rows, size_t cn)
{
    return rows > 1 && cn >= 16 && cn <= SBN_PAIR_MAX_CN;
}

static void bf16_row_normalize_pair(const void *x, int64_t xs, size_t rows, size_t cn,
                                    const void *kv, size_t ldk, void *y, int64_t ys)
{
    _Alignas(32) float kp[SBN_PAIR_MAX_CN / 16][3][16];
    const float *f = kv;
    const size_t c16 = cn & ~(size_t)15;
    size_t r, j, c;
    if (!pair_rows(rows, cn)) {
        bf16_row_normalize_run(x, xs, rows, cn, kv, ldk, y, ys);
        return;
    }
    for (j = 0; j < c16; j += 16)
        for (c = 0; c < 3; c++) pair_coefs(f + c * ldk, j, kp[j / 16][c]);
    for (r = 0; r < rows; r++) {
        const int64_t ox = (int64_t)r * xs, oy = (int64_t)r * ys;
        for (j = 0; j < c16; j += 16) {
            const float(*k)[16] = kp[j / 16];
            __m256 a, b;
            avx2_ldf16_bf16(x, ox + (int64_t)j, &a, &b);
            avx2_stf16_bf16(y, oy + (int64_t)j,
                            normalize8(a, _mm256_load_ps(k[0]), _mm256_load_ps(k[1]),
                                       _mm256_load_ps(k[2])),
                            normalize8(b, _mm256_load_ps(k[0] + 8), _mm256_load_ps(k[1] + 8),
                                       _mm256_load_ps(k[2] + 8)));
        }
    }
    if (c16 < cn)
        bf16_row_normalize_run((const uint16_t *)x + c16, xs, rows, cn - c16, f + c16, ldk,
                               (uint16_t *)y + c16, ys);
}

static void bf16_row_backward_pair(const void *dy, int64_t dys, const void *x, int64_t xs,
                                   size_t rows, size_t cn, const void *kv, size_t ldk, void *gi,
                                   int64_t gs)
{
    _Alignas(32) float kp[SBN_PAIR_MAX_CN / 16][4][16];
    const float *f = kv;
    const size_t c16 = cn & ~(size_t)15;
    size_t r, j, c;
    if (!pair_rows(rows, cn)) {
        bf16_row_backward_run(dy, dys, x, xs, rows, cn, kv, ldk, gi, gs);
        return;
    }
    for (j = 0; j < c16; j += 16)
        for (c = 0; c < 4; c++) pair_coefs(f + c * ldk, j, kp[j / 16][c]);
    for (r = 0; r < rows; r++) {
        const int64_t og = (int64_t)r * dys, ox = (int64_t)r * xs, oo = (int64_t)r * gs;
        for (j = 0; j < c16; j += 16) {
            const float(*k)[16] = kp[j / 16];
            __m256 ga, gb, va, vb;
            avx2_ldf16_bf16(dy, og + (int64_t)j, &ga, &gb);
            avx2_ldf16_bf16(x, ox + (int64_t)j, &va, &vb);
            avx2_stf16_bf16(gi, oo + (int64_t)j,
                            backward8(ga, va, _mm256_load_ps(k[0]), _mm256_load_ps(k[1]),
                                      _mm256_load_ps(k[2]), _mm256_load_ps(k[3])),
                            backward8(gb, vb, _mm256_load_ps(k[0] + 8), _mm256_load_ps(k[1] + 8),
                                      _mm256_load_ps(k[2] + 8), _mm256_load_ps(k[3] + 8)));
        }
    }
    if (c16 < cn)
        bf16_row_backward_run((const uint16_t *)dy + c16, dys, (const uint16_t *)x + c16, xs,
                              rows, cn - c16, f + c16, ldk, (uint16_t *)gi + c16, gs);
}

/* ---- the 16 entry points: the run's head apart when streaming ---- */

/* normalize_rows / backward_rows: the functions the row entry points call. */
#define SBN_DEFINE_MAP_AVX2_ENTRIES(dt, es, normalize_rows, backward_rows)                      \
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
        normalize_rows(x, xs, rows, cn, k, ldk, y, ys);                                        \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, row_backward)(const void *dy, int64_t dys, const void *x,            \
                                         int64_t xs, size_t rows, size_t cn, const void *k,    \
                                         size_t ldk, void *gi, int64_t gs)                     \
    {                                                                                          \
        backward_rows(dy, dys, x, xs, rows, cn, k, ldk, gi, gs);                               \
    }

/* Only bf16 has a pair order of its own; the others' row maps stay eight-wide. */
SBN_DEFINE_MAP_AVX2_ENTRIES(f64, sizeof(double), f64_row_normalize_run, f64_row_backward_run)
SBN_DEFINE_MAP_AVX2_ENTRIES(f32, sizeof(float), f32_row_normalize_run, f32_row_backward_run)
SBN_DEFINE_MAP_AVX2_ENTRIES(f16, sizeof(uint16_t), f16_row_normalize_run, f16_row_backward_run)
SBN_DEFINE_MAP_AVX2_ENTRIES(bf16, sizeof(uint16_t), bf16_row_normalize_pair,
                            bf16_row_backward_pair)

/* ---- fp32/fp16/bf16 runs laid end to end ---- */

/*
 * The runs of a runs map call are most often adjacent: the planes of consecutive channels
 * of an NCHW image (stride = len). Then the call maps them as one stretch of runs * len
 * elements: each run's whole vectors (16, then 8, elements at stretch offsets that are
 * multiples of 8) with its broadcast coefficients, and the vector that runs into the next
 * run with the lanes of each run taking that run's coefficients (a blend; len >= 8, so a
 * vector meets at most two runs). A call per run pays a call and the last 1..7 elements'
 * pieces per run, as much again as a 7x7 plane's 49 elements. The streaming build
 * (SBN_MAP_NT) keeps a call per run, which maps each run's head up to the store alignment
 * apart.
 */
static const int32_t k_lanes_from[16] = {0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1};

/* Lanes [0, rem) from a, the others from b (rem < 8). */
static inline __m256 runs_blend8(__m256 a, __m256 b, size_t rem)
{
    return _mm256_blendv_ps(
        a, b, _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(k_lanes_from + 8 - rem))));
}

/* Coefficient c of run i (f: structure of arrays), and of the vector from e that ends run
 * i at `end` (rem = end - e of its t lanes are run i's; the rest, if any, run i + 1's). */
#define SBN_RUN_K(f, ldk, c, i) _mm256_broadcast_ss((f) + (c) * (ldk) + (i))
#define SBN_EDGE_K(f, ldk, c, i, kc, rem, t) \
    ((t) > (rem) ? runs_blend8(kc, SBN_RUN_K(f, ldk, c, (i) + 1), rem) : (kc))

/* The first t <= 8 elements from e: a whole vector, or the pieces of io_avx2.h. */
#define SBN_LDF_UPTO8(dt, p, e, t) \
    ((t) == 8 ? avx2_ldf8_##dt(p, (int64_t)(e)) : avx2_ldfp_##dt(p, (int64_t)(e), t))
#define SBN_STF_UPTO8(dt, p, e, t, v)                                  \
    do {                                                              \
        if ((t) == 8)                                                 \
            avx2_stf8_##dt(p, (int64_t)(e), v);                       \
        else                                                          \
            avx2_stfp_##dt(p, (int64_t)(e), t, v);                    \
    } while (0)

#define SBN_DEFINE_RUNS_FUSED_AVX2(dt)                                                          \
    static int dt##_runs_normalize_fused(const void *x, int64_t xs, size_t runs, size_t len,   \
                                         const void *kv, size_t ldk, void *y, int64_t ys)      \
    {                                                                                          \
        const float *f = kv;                                                                   \
        const size_t n = runs * len;                                                           \
        size_t e = 0, i;                                                                       \
        if (SBN_MAP_NT || len < 8 || xs != (int64_t)len || ys != (int64_t)len) return 0;       \
        for (i = 0; i < runs; i++) {                                                           \
            const size_t end = (i + 1) * len;                                                  \
            const __m256 k0 = SBN_RUN_K(f, ldk, 0, i), k1 = SBN_RUN_K(f, ldk, 1, i);           \
            const __m256 k2 = SBN_RUN_K(f, ldk, 2, i);                                         \
            for (; e + 16 <= end; e += 16) {                                                   \
                __m256 a, b;                                                                   \
                avx2_ldf16_##dt(x, (int64_t)e, &a, &b);                                        \
                avx2_stf16_##dt(y, (int64_t)e, normalize8(a, k0, k1, k2),                      \
                                normalize8(b, k0, k1, k2));                                    \
            }                                                                                  \
            if (e + 8 <= end) {                                                                \
                avx2_stf8_##dt(y, (int64_t)e,                                                  \
                               normalize8(avx2_ldf8_##dt(x, (int64_t)e), k0, k1, k2));         \
                e += 8;                                                                        \
            }                                                                                  \
            if (e < end) { /* the vector from e meets run i + 1, or ends the stretch */        \
                const size_t rem = end - e, t = n - e < 8 ? n - e : 8;                         \
                const __m256 v = normalize8(SBN_LDF_UPTO8(dt, x, e, t),                        \
                                            SBN_EDGE_K(f, ldk, 0, i, k0, rem, t),              \
                                            SBN_EDGE_K(f, ldk, 1, i, k1, rem, t),              \
                                            SBN_EDGE_K(f, ldk, 2, i, k2, rem, t));             \
                SBN_STF_UPTO8(dt, y, e, t, v);                                                 \
                e += t;                                                                        \
            }                                                                                  \
        }                                                                                      \
        return 1;                                                                              \
    }                                                                                          \
                                                                                               \
    static int dt##_runs_backward_fused(const void *dy, int64_t dys, const void *x, int64_t xs, \
                                        size_t runs, size_t len, const void *kv, size_t ldk,   \
                                        void *gi, int64_t gs)                                  \
    {                                                                                          \
        const float *f = kv;                                                                   \
        const size_t n = runs * len;                                                           \
        size_t e = 0, i;                                                                       \
        if (SBN_MAP_NT || len < 8 || dys != (int64_t)len || xs != (int64_t)len ||              \
            gs != (int64_t)len)                                                                \
            return 0;                                                                          \
        for (i = 0; i < runs; i++) {                                                           \
            const size_t end = (i + 1) * len;                                                  \
            const __m256 k0 = SBN_RUN_K(f, ldk, 0, i), k1 = SBN_RUN_K(f, ldk, 1, i);           \
            const __m256 k2 = SBN_RUN_K(f, ldk, 2, i), k3 = SBN_RUN_K(f, ldk, 3, i);           \
            for (; e + 16 <= end; e += 16) {                                                   \
                __m256 ga, gb, va, vb;                                                         \
                avx2_ldf16_##dt(dy, (int64_t)e, &ga, &gb);                                     \
                avx2_ldf16_##dt(x, (int64_t)e, &va, &vb);                                      \
                avx2_stf16_##dt(gi, (int64_t)e, backward8(ga, va, k0, k1, k2, k3),             \
                                backward8(gb, vb, k0, k1, k2, k3));                            \
            }                                                                                  \
            if (e + 8 <= end) {                                                                \
                const __m256 g = avx2_ldf8_##dt(dy, (int64_t)e);                               \
                const __m256 v = avx2_ldf8_##dt(x, (int64_t)e);                                \
                avx2_stf8_##dt(gi, (int64_t)e, backward8(g, v, k0, k1, k2, k3));               \
                e += 8;                                                                        \
            }                                                                                  \
            if (e < end) {                                                                     \
                const size_t rem = end - e, t = n - e < 8 ? n - e : 8;                         \
                const __m256 g = SBN_LDF_UPTO8(dt, dy, e, t), v = SBN_LDF_UPTO8(dt, x, e, t);  \
                const __m256 r = backward8(g, v, SBN_EDGE_K(f, ldk, 0, i, k0, rem, t),         \
                                           SBN_EDGE_K(f, ldk, 1, i, k1, rem, t),               \
                                           SBN_EDGE_K(f, ldk, 2, i, k2, rem, t),               \
                                           SBN_EDGE_K(f, ldk, 3, i, k3, rem, t));              \
                SBN_STF_UPTO8(dt, gi, e, t, r);                                                \
                e += t;                                                                        \
            }                                                                                  \
        }                                                                                      \
        return 1;                                                                              \
    }

SBN_DEFINE_RUNS_FUSED_AVX2(f32)
SBN_DEFINE_RUNS_FUSED_AVX2(f16)
SBN_DEFINE_RUNS_FUSED_AVX2(bf16)

/* Several runs: adjacent ones of fp32/fp16/bf16 as one stretch (above), the others with
 * a call of the one-run maps per run (runs_by_run.h). */
#if SBN_MAP_NT
#define SBN_MAP_ISA avx2_nt
#else
#define SBN_MAP_ISA avx2
#endif
#define SBN_RUNS_MAP_BY_RUN(dt, isa, size, T) SBN_DEFINE_RUNS_MAP_BY_RUN(dt, isa, size, T)
#define SBN_RUNS_MAP_FUSED(dt, isa, size)                                                      \
    SBN_DEFINE_RUNS_MAP_FIRST(dt, isa, size, float, dt##_runs_normalize_fused,                 \
                              dt##_runs_backward_fused)
SBN_RUNS_MAP_BY_RUN(f64, SBN_MAP_ISA, 8, double)
SBN_RUNS_MAP_FUSED(f32, SBN_MAP_ISA, 4)
SBN_RUNS_MAP_FUSED(f16, SBN_MAP_ISA, 2)
SBN_RUNS_MAP_FUSED(bf16, SBN_MAP_ISA, 2)
