/*
 * stream_map_avx512.c - the elementwise maps of kernels.h for AVX-512 (F, BW, VL,
 * DQ) + F16C and every element type, computed in double with the operations of
 * stream_map_scalar.c in the same order and narrowed once (io_avx512.h: fp32
 * round to nearest even; fp16/bf16 round to odd to float, then to nearest even;
 * fp64 not narrowed):
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 * No FMA: a product is rounded before it is added. Runs of one channel take 16
 * elements a step (fp16/bf16 narrowed sixteen at once) with the coefficients in
 * registers, then eight at a time with masked loads and stores for the tail
 * (bf16: sixteen at a time in io_avx512.h's interleaved order, a masked sixteen
 * for the tail).
 * Rows of a block of channels: up to 16 channels, the coefficients stay in
 * registers for all the rows (up to 8, rows go in pairs to narrow sixteen at
 * once); more, the rows go in groups of four, each block of 16 channels' (then
 * 8's, masked for the last cn % 8) coefficients loaded once from the
 * structure-of-arrays k for the group. Every element is read before it is
 * written, so y == x (in place) is safe; pointers need no alignment, and nothing
 * outside the [0, n) or rows x cn outputs is written.
 */
#include "kernels/x86/io_avx512.h"

/* normalize: the add on the FMA ports; backward: the two subtractions (io_avx512.h: same bits). */
SBN512_INLINE __m512d normalize8(__m512d v, __m512d k0, __m512d k1, __m512d k2)
{
    return sbn512_add_on_fma(_mm512_mul_pd(_mm512_sub_pd(v, k0), k1), k2);
}

SBN512_INLINE __m512d backward8(__m512d g, __m512d v, __m512d k0, __m512d k1, __m512d k2,
                                __m512d k3)
{
    __m512d a = sbn512_sub_on_fma(g, k0);
    __m512d b = _mm512_mul_pd(sbn512_sub_on_fma(v, k1), k2);
    return _mm512_mul_pd(_mm512_sub_pd(a, b), k3);
}

/* The mask of the eight elements from i of a run of n (all of them when 8 remain). */
static inline __mmask8 step_mask(size_t n, size_t i)
{
    return n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
}

/* ---- runs of one channel ---- */

SBN512_INLINE void normalize(sbn_kdtype dt, const void *x, size_t n, const double *k, void *y)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]), k2 = _mm512_set1_pd(k[2]);
    size_t i = 0;
    if (dt == SBN_KD_BF16) { /* sixteen at a time in the interleaved order */
        const uint16_t *xp = x;
        uint16_t *yp = y;
        __m512d v0, v1;
        for (; i + 16 <= n; i += 16) {
            bf16x16_load_p(_mm256_loadu_si256((const __m256i *)(xp + i)), &v0, &v1);
            _mm256_storeu_si256((__m256i *)(yp + i), bf16x16_narrow_p(normalize8(v0, k0, k1, k2),
                                                                       normalize8(v1, k0, k1, k2)));
        }
        if (i < n) {
            const __mmask16 m = tail_mask16(n - i);
            bf16x16_load_p(_mm256_maskz_loadu_epi16(m, xp + i), &v0, &v1);
            _mm256_mask_storeu_epi16(yp + i, m, bf16x16_narrow_p(normalize8(v0, k0, k1, k2),
                                                                  normalize8(v1, k0, k1, k2)));
        }
        return;
    }
    for (; i + 16 <= n; i += 16) {
        __m512d v0 = sbn512_load8(dt, sbn512_at(dt, x, i));
        __m512d v1 = sbn512_load8(dt, sbn512_at(dt, x, i + 8));
        sbn512_store16(dt, sbn512_at_w(dt, y, i), normalize8(v0, k0, k1, k2),
                       normalize8(v1, k0, k1, k2));
    }
    for (; i < n; i += 8) {
        __mmask8 m = step_mask(n, i);
        __m512d v = sbn512_load8z(dt, sbn512_at(dt, x, i), m);
        sbn512_store8m(dt, sbn512_at_w(dt, y, i), m, normalize8(v, k0, k1, k2));
    }
}

SBN512_INLINE void backward(sbn_kdtype dt, const void *dy, const void *x, size_t n,
                            const double *k, void *gi)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]);
    const __m512d k2 = _mm512_set1_pd(k[2]), k3 = _mm512_set1_pd(k[3]);
    size_t i = 0;
    if (dt == SBN_KD_BF16) { /* sixteen at a time in the interleaved order */
        const uint16_t *gp = dy, *xp = x;
        uint16_t *op = gi;
        __m512d g0, g1, v0, v1;
        for (; i + 16 <= n; i += 16) {
            bf16x16_load_p(_mm256_loadu_si256((const __m256i *)(gp + i)), &g0, &g1);
            bf16x16_load_p(_mm256_loadu_si256((const __m256i *)(xp + i)), &v0, &v1);
            _mm256_storeu_si256((__m256i *)(op + i),
                                bf16x16_narrow_p(backward8(g0, v0, k0, k1, k2, k3),
                                                 backward8(g1, v1, k0, k1, k2, k3)));
        }
        if (i < n) {
            const __mmask16 m = tail_mask16(n - i);
            bf16x16_load_p(_mm256_maskz_loadu_epi16(m, gp + i), &g0, &g1);
            bf16x16_load_p(_mm256_maskz_loadu_epi16(m, xp + i), &v0, &v1);
            _mm256_mask_storeu_epi16(op + i, m, bf16x16_narrow_p(backward8(g0, v0, k0, k1, k2, k3),
                                                                  backward8(g1, v1, k0, k1, k2, k3)));
        }
        return;
    }
    for (; i + 16 <= n; i += 16) {
        __m512d g0 = sbn512_load8(dt, sbn512_at(dt, dy, i));
        __m512d g1 = sbn512_load8(dt, sbn512_at(dt, dy, i + 8));
        __m512d v0 = sbn512_load8(dt, sbn512_at(dt, x, i));
        __m512d v1 = sbn512_load8(dt, sbn512_at(dt, x, i + 8));
        sbn512_store16(dt, sbn512_at_w(dt, gi, i), backward8(g0, v0, k0, k1, k2, k3),
                       backward8(g1, v1, k0, k1, k2, k3));
    }
    for (; i < n; i += 8) {
        __mmask8 m = step_mask(n, i);
        __m512d g = sbn512_load8z(dt, sbn512_at(dt, dy, i), m);
        __m512d v = sbn512_load8z(dt, sbn512_at(dt, x, i), m);
        sbn512_store8m(dt, sbn512_at_w(dt, gi, i), m, backward8(g, v, k0, k1, k2, k3));
    }
}

/* ---- rows of a block of channels ---- */

SBN512_INLINE const void *row_at(sbn_kdtype dt, const void *p, int64_t rs, size_t r)
{
    return (const char *)p + (int64_t)r * rs * (int64_t)sbn512_esize(dt);
}

SBN512_INLINE void *row_at_w(sbn_kdtype dt, void *p, int64_t rs, size_t r)
{
    return (char *)p + (int64_t)r * rs * (int64_t)sbn512_esize(dt);
}

/* Coefficient row c of channels [j, j + 8) (masked: those in m, zero elsewhere). */
SBN512_INLINE __m512d coef8(const double *k, size_t ldk, int c, size_t j)
{
    return _mm512_loadu_pd(k + (size_t)c * ldk + j);
}

SBN512_INLINE __m512d coef8z(const double *k, size_t ldk, int c, size_t j, __mmask8 m)
{
    return _mm512_maskz_loadu_pd(m, k + (size_t)c * ldk + j);
}

/* At most 16 channels: the coefficients stay in registers across the rows; at most 8,
 * rows go in pairs so that fp16 and bf16 narrow sixteen elements at once. */
SBN512_INLINE void row_normalize_narrow(sbn_kdtype dt, const void *x, int64_t xs, size_t rows,
                                        size_t cn, const double *k, size_t ldk, void *y,
                                        int64_t ys)
{
    const __mmask8 m0 = step_mask(cn, 0), m1 = cn > 8 ? step_mask(cn, 8) : 0;
    const __mmask16 m16 = (__mmask16)(m0 | (unsigned)m1 << 8);
    const __m512d a0 = coef8z(k, ldk, 0, 0, m0), b0 = coef8z(k, ldk, 1, 0, m0);
    const __m512d c0 = coef8z(k, ldk, 2, 0, m0);
    const __m512d a1 = coef8z(k, ldk, 0, 8, m1), b1 = coef8z(k, ldk, 1, 8, m1);
    const __m512d c1 = coef8z(k, ldk, 2, 8, m1);
    size_t r = 0;
    if (m1) {
        for (; r < rows; r++) {
            const void *xr = row_at(dt, x, xs, r);
            __m512d v0 = sbn512_load8z(dt, xr, m0), v1 = sbn512_load8z(dt, sbn512_at(dt, xr, 8), m1);
            sbn512_store16m(dt, row_at_w(dt, y, ys, r), m16, normalize8(v0, a0, b0, c0),
                            normalize8(v1, a1, b1, c1));
        }
        return;
    }
    for (; r + 2 <= rows; r += 2) {
        __m512d v0 = sbn512_load8z(dt, row_at(dt, x, xs, r), m0);
        __m512d v1 = sbn512_load8z(dt, row_at(dt, x, xs, r + 1), m0);
        sbn512_store8x2m(dt, row_at_w(dt, y, ys, r), row_at_w(dt, y, ys, r + 1), m0,
                         normalize8(v0, a0, b0, c0), normalize8(v1, a0, b0, c0));
    }
    if (r < rows)
        sbn512_store8m(dt, row_at_w(dt, y, ys, r), m0,
                       normalize8(sbn512_load8z(dt, row_at(dt, x, xs, r), m0), a0, b0, c0));
}

/* Rows [0, m) of more than 16 channels, m <= ROW_GROUP: each block of coefficients is
 * loaded once for the m rows. Only narrow rows are grouped (group_rows): walking
 * several wide rows side by side splits each tensor into that many short streams,
 * which the prefetchers follow badly (bf16 backward over 1024 channels: 0.80
 * ns/element with groups of 4 against 0.29 over 64 channels). */
#define ROW_GROUP 4
#define ROW_GROUP_BYTES 1024

/* Rows per group for rows of cn elements of dt: ROW_GROUP while a group spans at most
 * ROW_GROUP_BYTES of each tensor, else 1. */
static inline size_t group_rows(sbn_kdtype dt, size_t cn)
{
    return cn * sbn512_esize(dt) * ROW_GROUP <= ROW_GROUP_BYTES ? ROW_GROUP : 1;
}

SBN512_INLINE void normalize_rows(sbn_kdtype dt, const void *x, int64_t xs, size_t m, size_t cn,
                                  const double *k, size_t ldk, void *y, int64_t ys)
{
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512d a0 = coef8(k, ldk, 0, j), b0 = coef8(k, ldk, 1, j), c0 = coef8(k, ldk, 2, j);
        const __m512d a1 = coef8(k, ldk, 0, j + 8), b1 = coef8(k, ldk, 1, j + 8);
        const __m512d c1 = coef8(k, ldk, 2, j + 8);
        for (t = 0; t < m; t++) {
            const void *xr = row_at(dt, x, xs, t);
            __m512d v0 = sbn512_load8(dt, sbn512_at(dt, xr, j));
            __m512d v1 = sbn512_load8(dt, sbn512_at(dt, xr, j + 8));
            sbn512_store16(dt, sbn512_at_w(dt, row_at_w(dt, y, ys, t), j),
                           normalize8(v0, a0, b0, c0), normalize8(v1, a1, b1, c1));
        }
    }
    for (; j < cn; j += 8) {
        const __mmask8 q = step_mask(cn, j);
        const __m512d a0 = coef8z(k, ldk, 0, j, q), b0 = coef8z(k, ldk, 1, j, q);
        const __m512d c0 = coef8z(k, ldk, 2, j, q);
        for (t = 0; t < m; t++) {
            __m512d v = sbn512_load8z(dt, sbn512_at(dt, row_at(dt, x, xs, t), j), q);
            sbn512_store8m(dt, sbn512_at_w(dt, row_at_w(dt, y, ys, t), j), q,
                           normalize8(v, a0, b0, c0));
        }
    }
}

SBN512_INLINE void row_normalize(sbn_kdtype dt, const void *x, int64_t xs, size_t rows, size_t cn,
                                 const double *k, size_t ldk, void *y, int64_t ys)
{
    size_t r, g = group_rows(dt, cn);
    if (cn == 0 || rows == 0) return;
    if (cn <= 16) {
        row_normalize_narrow(dt, x, xs, rows, cn, k, ldk, y, ys);
        return;
    }
    for (r = 0; r < rows; r += g)
        normalize_rows(dt, row_at(dt, x, xs, r), xs, rows - r < g ? rows - r : g, cn, k, ldk,
                       row_at_w(dt, y, ys, r), ys);
}

SBN512_INLINE void row_backward_narrow(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                       int64_t xs, size_t rows, size_t cn, const double *k,
                                       size_t ldk, void *gi, int64_t gs)
{
    const __mmask8 m0 = step_mask(cn, 0), m1 = cn > 8 ? step_mask(cn, 8) : 0;
    const __mmask16 m16 = (__mmask16)(m0 | (unsigned)m1 << 8);
    const __m512d a0 = coef8z(k, ldk, 0, 0, m0), b0 = coef8z(k, ldk, 1, 0, m0);
    const __m512d c0 = coef8z(k, ldk, 2, 0, m0), d0 = coef8z(k, ldk, 3, 0, m0);
    const __m512d a1 = coef8z(k, ldk, 0, 8, m1), b1 = coef8z(k, ldk, 1, 8, m1);
    const __m512d c1 = coef8z(k, ldk, 2, 8, m1), d1 = coef8z(k, ldk, 3, 8, m1);
    size_t r = 0;
    if (m1) {
        for (; r < rows; r++) {
            const void *gr = row_at(dt, dy, dys, r), *xr = row_at(dt, x, xs, r);
            __m512d g0 = sbn512_load8z(dt, gr, m0), v0 = sbn512_load8z(dt, xr, m0);
            __m512d g1 = sbn512_load8z(dt, sbn512_at(dt, gr, 8), m1);
            __m512d v1 = sbn512_load8z(dt, sbn512_at(dt, xr, 8), m1);
            sbn512_store16m(dt, row_at_w(dt, gi, gs, r), m16, backward8(g0, v0, a0, b0, c0, d0),
                            backward8(g1, v1, a1, b1, c1, d1));
        }
        return;
    }
    for (; r + 2 <= rows; r += 2) {
        __m512d g0 = sbn512_load8z(dt, row_at(dt, dy, dys, r), m0);
        __m512d v0 = sbn512_load8z(dt, row_at(dt, x, xs, r), m0);
        __m512d g1 = sbn512_load8z(dt, row_at(dt, dy, dys, r + 1), m0);
        __m512d v1 = sbn512_load8z(dt, row_at(dt, x, xs, r + 1), m0);
        sbn512_store8x2m(dt, row_at_w(dt, gi, gs, r), row_at_w(dt, gi, gs, r + 1), m0,
                         backward8(g0, v0, a0, b0, c0, d0), backward8(g1, v1, a0, b0, c0, d0));
    }
    if (r < rows) {
        __m512d g0 = sbn512_load8z(dt, row_at(dt, dy, dys, r), m0);
        __m512d v0 = sbn512_load8z(dt, row_at(dt, x, xs, r), m0);
        sbn512_store8m(dt, row_at_w(dt, gi, gs, r), m0, backward8(g0, v0, a0, b0, c0, d0));
    }
}

SBN512_INLINE void backward_rows(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                 int64_t xs, size_t m, size_t cn, const double *k, size_t ldk,
                                 void *gi, int64_t gs)
{
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512d a0 = coef8(k, ldk, 0, j), b0 = coef8(k, ldk, 1, j);
        const __m512d c0 = coef8(k, ldk, 2, j), d0 = coef8(k, ldk, 3, j);
        const __m512d a1 = coef8(k, ldk, 0, j + 8), b1 = coef8(k, ldk, 1, j + 8);
        const __m512d c1 = coef8(k, ldk, 2, j + 8), d1 = coef8(k, ldk, 3, j + 8);
        for (t = 0; t < m; t++) {
            const void *gr = row_at(dt, dy, dys, t), *xr = row_at(dt, x, xs, t);
            __m512d g0 = sbn512_load8(dt, sbn512_at(dt, gr, j));
            __m512d g1 = sbn512_load8(dt, sbn512_at(dt, gr, j + 8));
            __m512d v0 = sbn512_load8(dt, sbn512_at(dt, xr, j));
            __m512d v1 = sbn512_load8(dt, sbn512_at(dt, xr, j + 8));
            sbn512_store16(dt, sbn512_at_w(dt, row_at_w(dt, gi, gs, t), j),
                           backward8(g0, v0, a0, b0, c0, d0), backward8(g1, v1, a1, b1, c1, d1));
        }
    }
    for (; j < cn; j += 8) {
        const __mmask8 q = step_mask(cn, j);
        const __m512d a0 = coef8z(k, ldk, 0, j, q), b0 = coef8z(k, ldk, 1, j, q);
        const __m512d c0 = coef8z(k, ldk, 2, j, q), d0 = coef8z(k, ldk, 3, j, q);
        for (t = 0; t < m; t++) {
            __m512d g = sbn512_load8z(dt, sbn512_at(dt, row_at(dt, dy, dys, t), j), q);
            __m512d v = sbn512_load8z(dt, sbn512_at(dt, row_at(dt, x, xs, t), j), q);
            sbn512_store8m(dt, sbn512_at_w(dt, row_at_w(dt, gi, gs, t), j), q,
                           backward8(g, v, a0, b0, c0, d0));
        }
    }
}

SBN512_INLINE void row_backward(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                int64_t xs, size_t rows, size_t cn, const double *k, size_t ldk,
                                void *gi, int64_t gs)
{
    size_t r, g = group_rows(dt, cn);
    if (cn == 0 || rows == 0) return;
    if (cn <= 16) {
        row_backward_narrow(dt, dy, dys, x, xs, rows, cn, k, ldk, gi, gs);
        return;
    }
    for (r = 0; r < rows; r += g)
        backward_rows(dt, row_at(dt, dy, dys, r), dys, row_at(dt, x, xs, r), xs,
                      rows - r < g ? rows - r : g, cn, k, ldk, row_at_w(dt, gi, gs, r), gs);
}

/* ---- the 16 entry points: one per family and element type ---- */

#define SBN_DEFINE_MAP_AVX512(dt, kd)                                                           \
    void sbn_##dt##_normalize_ukernel__avx512(const void *x, size_t n, const void *kv, void *y) \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
        normalize(kd, x, n, k, y);                                                             \
    }                                                                                          \
    void sbn_##dt##_backward_ukernel__avx512(const void *dy, const void *x, size_t n,           \
                                             const void *kv, void *gi)                        \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
        backward(kd, dy, x, n, k, gi);                                                         \
    }                                                                                          \
    void sbn_##dt##_row_normalize_ukernel__avx512(const void *x, int64_t xs, size_t rows,       \
                                                  size_t cn, const void *kv, size_t ldk,      \
                                                  void *y, int64_t ys)                         \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
        row_normalize(kd, x, xs, rows, cn, k, ldk, y, ys);                                     \
    }                                                                                          \
    void sbn_##dt##_row_backward_ukernel__avx512(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 const void *kv, size_t ldk, void *gi,        \
                                                 int64_t gs)                                   \
    {                                                                                          \
        const double *k = kv; /* TODO(fmath): float coefficients */ \
        row_backward(kd, dy, dys, x, xs, rows, cn, k, ldk, gi, gs);                            \
    }

SBN_DEFINE_MAP_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_MAP_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_MAP_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_MAP_AVX512(bf16, SBN_KD_BF16)
