/*
 * stream_avx2.c - the streaming reductions of kernels.h for AVX2 (+F16C), every
 * element type, bit for bit the sequence of stream_scalar.c. Runs of one channel
 * (element i to lane (lane + i) % 16): the head, up to the element that falls in
 * lane 0, is added in scalar code on acc in memory; then, while 16 elements
 * remain, the 16 lanes of a and b sit in 4 + 4 ymm registers (lanes 0-3, 4-7,
 * 8-11, 12-15) and take 16 elements per iteration, lane k the element at k past
 * the block start; they are stored back and the tail is added in scalar code.
 * Each lane thus adds its elements in index order with the scalar operations.
 * Rows (channels-last; row r to lane (lane + r) % 16 of every channel): per row,
 * 16 channels per iteration (4 doubles per ymm), then 4 at a time, then the last
 * cn % 4 in scalar code, each a[l * ld + j] / b[l * ld + j] read, added to and
 * stored once per row as the scalar loop does; nothing past channel cn is read or
 * written. Elements are widened exactly (io_avx2.h). Per element, in double, no
 * fused multiply-add (the product is rounded, then added):
 *   accum:      d = x - shift;  a += d;   b += d * d
 *   bwd_accum:  a += dy;        b += dy * (x - center)
 */
#include "kernels/x86/io_avx2.h"

/* Sixteen elements from element i of p as four ymm of doubles v0..v3. */
#define SBN_LD16(dt, p, i, v0, v1, v2, v3)            \
    do {                                              \
        avx2_ld8_##dt(p, (int64_t)(i), &v0, &v1);     \
        avx2_ld8_##dt(p, (int64_t)(i) + 8, &v2, &v3); \
    } while (0)

/* accum: one ymm of deviations d (overwritten) into accumulators va, vb. */
#define SBN_ACC_STEP(va, vb, v, vs)                    \
    do {                                               \
        v = _mm256_sub_pd(v, vs);                      \
        va = _mm256_add_pd(va, v);                     \
        vb = _mm256_add_pd(vb, _mm256_mul_pd(v, v));   \
    } while (0)

/* bwd_accum: one ymm of dy (g) and x (v) into accumulators va, vb. */
#define SBN_BWD_STEP(va, vb, g, v, vc)                                   \
    do {                                                                 \
        va = _mm256_add_pd(va, g);                                       \
        vb = _mm256_add_pd(vb, _mm256_mul_pd(g, _mm256_sub_pd(v, vc)));  \
    } while (0)

/* row_accum: channels j..j+3 of one row (v), shifts at s, lanes at pa, pb. */
#define SBN_ROW_ACC4(pa, pb, s, j, v)                                                 \
    do {                                                                              \
        __m256d d_ = _mm256_sub_pd(v, _mm256_loadu_pd((s) + (j)));                    \
        _mm256_storeu_pd((pa) + (j), _mm256_add_pd(_mm256_loadu_pd((pa) + (j)), d_)); \
        _mm256_storeu_pd((pb) + (j),                                                  \
                         _mm256_add_pd(_mm256_loadu_pd((pb) + (j)), _mm256_mul_pd(d_, d_))); \
    } while (0)

/* row_bwd_accum: channels j..j+3 of one row, dy (g) and x (v), centers at c. */
#define SBN_ROW_BWD4(pa, pb, c, j, g, v)                                                      \
    do {                                                                                      \
        __m256d p_ = _mm256_mul_pd(g, _mm256_sub_pd(v, _mm256_loadu_pd((c) + (j))));          \
        _mm256_storeu_pd((pa) + (j), _mm256_add_pd(_mm256_loadu_pd((pa) + (j)), g));          \
        _mm256_storeu_pd((pb) + (j), _mm256_add_pd(_mm256_loadu_pd((pb) + (j)), p_));         \
    } while (0)

#define SBN_DEFINE_STREAM_AVX2(dt)                                                              \
    void sbn_##dt##_accum_ukernel__avx2(const void *x, size_t n, unsigned lane, double shift,   \
                                        double *acc)                                           \
    {                                                                                          \
        size_t l0 = lane % SBN_LANES, head = (SBN_LANES - l0) % SBN_LANES, i = 0;              \
        if (head > n) head = n;                                                                \
        for (; i < head; i++) {                                                                \
            double d = sbn__ld_##dt(x, (int64_t)i) - shift;                                    \
            acc[l0 + i] += d;                                                                  \
            acc[SBN_LANES + l0 + i] += d * d;                                                  \
        }                                                                                      \
        if (n - i >= SBN_LANES) {                                                              \
            const __m256d vs = _mm256_set1_pd(shift);                                          \
            __m256d a0 = _mm256_loadu_pd(acc), a1 = _mm256_loadu_pd(acc + 4);                  \
            __m256d a2 = _mm256_loadu_pd(acc + 8), a3 = _mm256_loadu_pd(acc + 12);             \
            __m256d b0 = _mm256_loadu_pd(acc + 16), b1 = _mm256_loadu_pd(acc + 20);            \
            __m256d b2 = _mm256_loadu_pd(acc + 24), b3 = _mm256_loadu_pd(acc + 28);            \
            for (; i + SBN_LANES <= n; i += SBN_LANES) {                                       \
                __m256d v0, v1, v2, v3;                                                        \
                SBN_LD16(dt, x, i, v0, v1, v2, v3);                                            \
                SBN_ACC_STEP(a0, b0, v0, vs);                                                  \
                SBN_ACC_STEP(a1, b1, v1, vs);                                                  \
                SBN_ACC_STEP(a2, b2, v2, vs);                                                  \
                SBN_ACC_STEP(a3, b3, v3, vs);                                                  \
            }                                                                                  \
            _mm256_storeu_pd(acc, a0);                                                         \
            _mm256_storeu_pd(acc + 4, a1);                                                     \
            _mm256_storeu_pd(acc + 8, a2);                                                     \
            _mm256_storeu_pd(acc + 12, a3);                                                    \
            _mm256_storeu_pd(acc + 16, b0);                                                    \
            _mm256_storeu_pd(acc + 20, b1);                                                    \
            _mm256_storeu_pd(acc + 24, b2);                                                    \
            _mm256_storeu_pd(acc + 28, b3);                                                    \
        }                                                                                      \
        for (; i < n; i++) {                                                                   \
            size_t l = (l0 + i) % SBN_LANES;                                                   \
            double d = sbn__ld_##dt(x, (int64_t)i) - shift;                                    \
            acc[l] += d;                                                                       \
            acc[SBN_LANES + l] += d * d;                                                       \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_bwd_accum_ukernel__avx2(const void *dy, const void *x, size_t n,            \
                                            unsigned lane, double center, double *acc)         \
    {                                                                                          \
        size_t l0 = lane % SBN_LANES, head = (SBN_LANES - l0) % SBN_LANES, i = 0;              \
        if (head > n) head = n;                                                                \
        for (; i < head; i++) {                                                                \
            double g = sbn__ld_##dt(dy, (int64_t)i);                                           \
            acc[l0 + i] += g;                                                                  \
            acc[SBN_LANES + l0 + i] += g * (sbn__ld_##dt(x, (int64_t)i) - center);             \
        }                                                                                      \
        if (n - i >= SBN_LANES) {                                                              \
            const __m256d vc = _mm256_set1_pd(center);                                         \
            __m256d a0 = _mm256_loadu_pd(acc), a1 = _mm256_loadu_pd(acc + 4);                  \
            __m256d a2 = _mm256_loadu_pd(acc + 8), a3 = _mm256_loadu_pd(acc + 12);             \
            __m256d b0 = _mm256_loadu_pd(acc + 16), b1 = _mm256_loadu_pd(acc + 20);            \
            __m256d b2 = _mm256_loadu_pd(acc + 24), b3 = _mm256_loadu_pd(acc + 28);            \
            for (; i + SBN_LANES <= n; i += SBN_LANES) {                                       \
                __m256d g0, g1, g2, g3, v0, v1, v2, v3;                                        \
                SBN_LD16(dt, dy, i, g0, g1, g2, g3);                                           \
                SBN_LD16(dt, x, i, v0, v1, v2, v3);                                            \
                SBN_BWD_STEP(a0, b0, g0, v0, vc);                                              \
                SBN_BWD_STEP(a1, b1, g1, v1, vc);                                              \
                SBN_BWD_STEP(a2, b2, g2, v2, vc);                                              \
                SBN_BWD_STEP(a3, b3, g3, v3, vc);                                              \
            }                                                                                  \
            _mm256_storeu_pd(acc, a0);                                                         \
            _mm256_storeu_pd(acc + 4, a1);                                                     \
            _mm256_storeu_pd(acc + 8, a2);                                                     \
            _mm256_storeu_pd(acc + 12, a3);                                                    \
            _mm256_storeu_pd(acc + 16, b0);                                                    \
            _mm256_storeu_pd(acc + 20, b1);                                                    \
            _mm256_storeu_pd(acc + 24, b2);                                                    \
            _mm256_storeu_pd(acc + 28, b3);                                                    \
        }                                                                                      \
        for (; i < n; i++) {                                                                   \
            size_t l = (l0 + i) % SBN_LANES;                                                   \
            double g = sbn__ld_##dt(dy, (int64_t)i);                                           \
            acc[l] += g;                                                                       \
            acc[SBN_LANES + l] += g * (sbn__ld_##dt(x, (int64_t)i) - center);                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_accum_ukernel__avx2(const void *x, int64_t xs, size_t rows, size_t cn,  \
                                            unsigned lane, const double *shift, double *a,     \
                                            double *b, size_t ld)                              \
    {                                                                                          \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++) {                                                           \
            size_t l = (lane + r) % SBN_LANES;                                                 \
            double *pa = a + l * ld, *pb = b + l * ld;                                         \
            int64_t o = (int64_t)r * xs;                                                       \
            for (j = 0; j + 16 <= cn; j += 16) {                                               \
                __m256d v0, v1, v2, v3;                                                        \
                SBN_LD16(dt, x, o + (int64_t)j, v0, v1, v2, v3);                               \
                SBN_ROW_ACC4(pa, pb, shift, j, v0);                                            \
                SBN_ROW_ACC4(pa, pb, shift, j + 4, v1);                                        \
                SBN_ROW_ACC4(pa, pb, shift, j + 8, v2);                                        \
                SBN_ROW_ACC4(pa, pb, shift, j + 12, v3);                                       \
            }                                                                                  \
            for (; j + 4 <= cn; j += 4) {                                                      \
                __m256d v = avx2_ld4_##dt(x, o + (int64_t)j);                                  \
                SBN_ROW_ACC4(pa, pb, shift, j, v);                                             \
            }                                                                                  \
            for (; j < cn; j++) {                                                              \
                double d = sbn__ld_##dt(x, o + (int64_t)j) - shift[j];                         \
                pa[j] += d;                                                                    \
                pb[j] += d * d;                                                                \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_bwd_accum_ukernel__avx2(const void *dy, int64_t dys, const void *x,     \
                                                int64_t xs, size_t rows, size_t cn,            \
                                                unsigned lane, const double *center,           \
                                                double *a, double *b, size_t ld)               \
    {                                                                                          \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++) {                                                           \
            size_t l = (lane + r) % SBN_LANES;                                                 \
            double *pa = a + l * ld, *pb = b + l * ld;                                         \
            int64_t og = (int64_t)r * dys, o = (int64_t)r * xs;                                \
            for (j = 0; j + 16 <= cn; j += 16) {                                               \
                __m256d g0, g1, g2, g3, v0, v1, v2, v3;                                        \
                SBN_LD16(dt, dy, og + (int64_t)j, g0, g1, g2, g3);                             \
                SBN_LD16(dt, x, o + (int64_t)j, v0, v1, v2, v3);                               \
                SBN_ROW_BWD4(pa, pb, center, j, g0, v0);                                       \
                SBN_ROW_BWD4(pa, pb, center, j + 4, g1, v1);                                   \
                SBN_ROW_BWD4(pa, pb, center, j + 8, g2, v2);                                   \
                SBN_ROW_BWD4(pa, pb, center, j + 12, g3, v3);                                  \
            }                                                                                  \
            for (; j + 4 <= cn; j += 4) {                                                      \
                __m256d g = avx2_ld4_##dt(dy, og + (int64_t)j);                                \
                __m256d v = avx2_ld4_##dt(x, o + (int64_t)j);                                  \
                SBN_ROW_BWD4(pa, pb, center, j, g, v);                                         \
            }                                                                                  \
            for (; j < cn; j++) {                                                              \
                double g = sbn__ld_##dt(dy, og + (int64_t)j);                                  \
                pa[j] += g;                                                                    \
                pb[j] += g * (sbn__ld_##dt(x, o + (int64_t)j) - center[j]);                    \
            }                                                                                  \
        }                                                                                      \
    }

SBN_DEFINE_STREAM_AVX2(f64)
SBN_DEFINE_STREAM_AVX2(f32)
SBN_DEFINE_STREAM_AVX2(f16)
SBN_DEFINE_STREAM_AVX2(bf16)
