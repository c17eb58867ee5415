/*
 * stream_map_avx2.c - the elementwise maps of kernels.h for AVX2 (+F16C), every
 * element type, bit for bit as stream_map_scalar.c: eight elements at a time as
 * two ymm of doubles, then four, then the last 1..3 as the low lanes of one ymm
 * (read and written element by element); the row maps the same along each row's
 * channels, the structure-of-arrays coefficients loaded per block of channels
 * (only those of channels < cn; the tail's once per call). Elements are widened
 * exactly and narrowed once (io_avx2.h: fp32 to nearest even; fp16/bf16 rounded
 * once to nearest even, as the scalar round-to-odd-then-nearest does). Each
 * element is computed in double with the scalar operations in the same order, no
 * fused multiply-add (a product is rounded, then added):
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 * Each block is read before it is written, so y == x (in place) is safe; nothing
 * outside the elements named is read or written, and pointers need no alignment.
 */
#include "kernels/x86/io_avx2.h"

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

#define SBN_DEFINE_MAP_AVX2(dt)                                                                 \
    void sbn_##dt##_normalize_ukernel__avx2(const void *x, size_t n, const void *kv, void *y)  \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
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
    void sbn_##dt##_backward_ukernel__avx2(const void *dy, const void *x, size_t n,             \
                                           const void *kv, void *gi)                          \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
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
    void sbn_##dt##_row_normalize_ukernel__avx2(const void *x, int64_t xs, size_t rows,         \
                                                size_t cn, const void *kv, size_t ldk,        \
                                                void *y, int64_t ys)                           \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
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
    void sbn_##dt##_row_backward_ukernel__avx2(const void *dy, int64_t dys, const void *x,      \
                                               int64_t xs, size_t rows, size_t cn,             \
                                               const void *kv, size_t ldk, void *gi,          \
                                               int64_t gs)                                     \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
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

SBN_DEFINE_MAP_AVX2(f64)
SBN_DEFINE_MAP_AVX2(f32)
SBN_DEFINE_MAP_AVX2(f16)
SBN_DEFINE_MAP_AVX2(bf16)
