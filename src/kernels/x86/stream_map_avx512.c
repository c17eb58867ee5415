/*
 * stream_map_avx512.c - the elementwise maps of kernels.h for AVX-512 (F, BW, VL,
 * DQ) + F16C, bit for bit as stream_map_scalar.c. fp32, fp16 and bf16 widen each
 * element exactly to float (fp16: vcvtph2ps; bf16: its bits as a float's high
 * half), compute with float coefficients f, every operation rounded to nearest even
 * (an FMA once, as fmaf),
 *   normalize:  y  = fma(x - f0, f1, f2)
 *   backward:   gi = fma(x - f0, f1, dy - f2) * f3
 * and narrow once as convert.c does (fp16: vcvtps2ph, a NaN's payload cleared to
 * sign | 0x7E00; bf16: to nearest even on the dropped 16 bits, a NaN its quiet high
 * half). fp64 keeps double coefficients k and double arithmetic, no fused product:
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 * Runs of one channel take 32 floats a step in two zmm (fp64: 16 doubles), the tail
 * through masked loads and stores. Rows (channels-last) of up to 8 channels (a ymm;
 * fp64: rows in pairs) or 64 (fp64: 16) keep the coefficients in registers for all the
 * rows; wider rows go in blocks of 16 channels (fp64: 8), the last masked, a row at a
 * time in memory order (fp64: each block's structure-of-arrays coefficients loaded
 * once for a group of up to four narrow rows). The element steps (stores, loads,
 * formulas) are in map_elems_avx512.h. Every element is read before it is written, so
 * in place (y == x, gi == dy)
 * is safe; pointers need no alignment, and nothing outside [0, n) or the rows x cn
 * elements is read or written. stream_map_nt_avx512.c builds this file again with
 * SBN_MAP_NT = 1 (entry points ..._ukernel__avx512_nt): there every full-vector store
 * that covers an aligned 64-byte line (32 bytes for the fp16/bf16 halves, which fill
 * a line in pairs) is non-temporal, around the caches, a run's first elements are
 * taken apart until its output reaches such a line (the caller fences after its
 * calls, nt_store.h). Same values, same bits; only the path to memory differs.
 * stream_map_bf16_avx512.c builds it once more with SBN_MAP_BF16_CVT = 1 (entry points
 * ..._ukernel__avx512bf16): bf16 narrows by the CPU's conversion (bf16_avx512.h).
 */
#include "kernels/x86/bf16_avx512.h"
#include "kernels/x86/io_avx512.h"
#include "kernels/x86/map_elems_avx512.h"
#include "kernels/x86/nt_store.h"

#if SBN_MAP_NT
#define SBN_MAP_ENTRY(dt, family) sbn_##dt##_##family##_ukernel__avx512_nt
#elif SBN_MAP_BF16_CVT
#define SBN_MAP_ENTRY(dt, family) sbn_##dt##_##family##_ukernel__avx512bf16
#else
#define SBN_MAP_ENTRY(dt, family) sbn_##dt##_##family##_ukernel__avx512
#endif

/* The mask of the first r < 32 elements. */
static inline __mmask32 tail_mask32(size_t r)
{
    return (__mmask32)((1u << r) - 1u);
}

/* fp64 rows [0, m) of more than 8 channels, m <= ROW_GROUP: each block of coefficients
 * is loaded once for the m rows. Only narrow rows are grouped (group_rows): walking
 * several wide rows side by side splits each tensor into that many short streams,
 * which the prefetchers follow badly (bf16 backward over 1024 channels from DRAM is
 * faster a row at a time). */
#define ROW_GROUP 4
#define ROW_GROUP_BYTES 1024

/* Rows per group for rows of cn elements of dt: ROW_GROUP while a group spans at most
 * ROW_GROUP_BYTES of each tensor, else 1. */
static inline size_t group_rows(sbn_kdtype dt, size_t cn)
{
    return cn * sbn512_esize(dt) * ROW_GROUP <= ROW_GROUP_BYTES ? ROW_GROUP : 1;
}

/* ======== fp64: double coefficients, double arithmetic ======== */

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

static void normalize_f64(const double *x, size_t n, const double *k, double *y)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]), k2 = _mm512_set1_pd(k[2]);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d v0 = _mm512_loadu_pd(x + i), v1 = _mm512_loadu_pd(x + i + 8);
        store_pd(y + i, normalize8(v0, k0, k1, k2));
        store_pd(y + i + 8, normalize8(v1, k0, k1, k2));
    }
    for (; i < n; i += 8) {
        __mmask8 m = step_mask(n, i);
        _mm512_mask_storeu_pd(y + i, m, normalize8(_mm512_maskz_loadu_pd(m, x + i), k0, k1, k2));
    }
}

static void backward_f64(const double *dy, const double *x, size_t n, const double *k,
                         double *gi)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]);
    const __m512d k2 = _mm512_set1_pd(k[2]), k3 = _mm512_set1_pd(k[3]);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d g0 = _mm512_loadu_pd(dy + i), g1 = _mm512_loadu_pd(dy + i + 8);
        __m512d v0 = _mm512_loadu_pd(x + i), v1 = _mm512_loadu_pd(x + i + 8);
        store_pd(gi + i, backward8(g0, v0, k0, k1, k2, k3));
        store_pd(gi + i + 8, backward8(g1, v1, k0, k1, k2, k3));
    }
    for (; i < n; i += 8) {
        __mmask8 m = step_mask(n, i);
        __m512d g = _mm512_maskz_loadu_pd(m, dy + i), v = _mm512_maskz_loadu_pd(m, x + i);
        _mm512_mask_storeu_pd(gi + i, m, backward8(g, v, k0, k1, k2, k3));
    }
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

#define D_ROW(p, s, r) ((const double *)(p) + (int64_t)(r) * (s))
#define D_ROW_W(p, s, r) ((double *)(p) + (int64_t)(r) * (s))

/* At most 16 channels: the coefficients stay in registers across the rows; at most 8,
 * rows go in pairs. */
static void row_normalize_narrow_f64(const double *x, int64_t xs, size_t rows, size_t cn,
                                     const double *k, size_t ldk, double *y, int64_t ys)
{
    const __mmask8 m0 = step_mask(cn, 0), m1 = cn > 8 ? step_mask(cn, 8) : 0;
    const __m512d a0 = coef8z(k, ldk, 0, 0, m0), b0 = coef8z(k, ldk, 1, 0, m0);
    const __m512d c0 = coef8z(k, ldk, 2, 0, m0);
    const __m512d a1 = coef8z(k, ldk, 0, 8, m1), b1 = coef8z(k, ldk, 1, 8, m1);
    const __m512d c1 = coef8z(k, ldk, 2, 8, m1);
    size_t r = 0;
    if (m1) {
        for (; r < rows; r++) {
            const double *xr = D_ROW(x, xs, r);
            double *yr = D_ROW_W(y, ys, r);
            __m512d v0 = _mm512_maskz_loadu_pd(m0, xr), v1 = _mm512_maskz_loadu_pd(m1, xr + 8);
            _mm512_mask_storeu_pd(yr, m0, normalize8(v0, a0, b0, c0));
            _mm512_mask_storeu_pd(yr + 8, m1, normalize8(v1, a1, b1, c1));
        }
        return;
    }
    for (; r + 2 <= rows; r += 2) {
        __m512d v0 = _mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r));
        __m512d v1 = _mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r + 1));
        _mm512_mask_storeu_pd(D_ROW_W(y, ys, r), m0, normalize8(v0, a0, b0, c0));
        _mm512_mask_storeu_pd(D_ROW_W(y, ys, r + 1), m0, normalize8(v1, a0, b0, c0));
    }
    if (r < rows)
        _mm512_mask_storeu_pd(D_ROW_W(y, ys, r), m0,
                              normalize8(_mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r)), a0, b0, c0));
}

static void normalize_rows_f64(const double *x, int64_t xs, size_t m, size_t cn,
                               const double *k, size_t ldk, double *y, int64_t ys)
{
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512d a0 = coef8(k, ldk, 0, j), b0 = coef8(k, ldk, 1, j), c0 = coef8(k, ldk, 2, j);
        const __m512d a1 = coef8(k, ldk, 0, j + 8), b1 = coef8(k, ldk, 1, j + 8);
        const __m512d c1 = coef8(k, ldk, 2, j + 8);
        for (t = 0; t < m; t++) {
            const double *xr = D_ROW(x, xs, t) + j;
            double *yr = D_ROW_W(y, ys, t) + j;
            __m512d v0 = _mm512_loadu_pd(xr), v1 = _mm512_loadu_pd(xr + 8);
            store_pd(yr, normalize8(v0, a0, b0, c0));
            store_pd(yr + 8, normalize8(v1, a1, b1, c1));
        }
    }
    for (; j < cn; j += 8) {
        const __mmask8 q = step_mask(cn, j);
        const __m512d a0 = coef8z(k, ldk, 0, j, q), b0 = coef8z(k, ldk, 1, j, q);
        const __m512d c0 = coef8z(k, ldk, 2, j, q);
        for (t = 0; t < m; t++) {
            __m512d v = _mm512_maskz_loadu_pd(q, D_ROW(x, xs, t) + j);
            _mm512_mask_storeu_pd(D_ROW_W(y, ys, t) + j, q, normalize8(v, a0, b0, c0));
        }
    }
}

static void row_normalize_f64(const double *x, int64_t xs, size_t rows, size_t cn,
                              const double *k, size_t ldk, double *y, int64_t ys)
{
    size_t r, g = group_rows(SBN_KD_F64, cn);
    if (cn == 0 || rows == 0) return;
    if (cn <= 16) {
        row_normalize_narrow_f64(x, xs, rows, cn, k, ldk, y, ys);
        return;
    }
    for (r = 0; r < rows; r += g)
        normalize_rows_f64(D_ROW(x, xs, r), xs, rows - r < g ? rows - r : g, cn, k, ldk,
                           D_ROW_W(y, ys, r), ys);
}

static void row_backward_narrow_f64(const double *dy, int64_t dys, const double *x, int64_t xs,
                                    size_t rows, size_t cn, const double *k, size_t ldk,
                                    double *gi, int64_t gs)
{
    const __mmask8 m0 = step_mask(cn, 0), m1 = cn > 8 ? step_mask(cn, 8) : 0;
    const __m512d a0 = coef8z(k, ldk, 0, 0, m0), b0 = coef8z(k, ldk, 1, 0, m0);
    const __m512d c0 = coef8z(k, ldk, 2, 0, m0), d0 = coef8z(k, ldk, 3, 0, m0);
    const __m512d a1 = coef8z(k, ldk, 0, 8, m1), b1 = coef8z(k, ldk, 1, 8, m1);
    const __m512d c1 = coef8z(k, ldk, 2, 8, m1), d1 = coef8z(k, ldk, 3, 8, m1);
    size_t r = 0;
    if (m1) {
        for (; r < rows; r++) {
            const double *gr = D_ROW(dy, dys, r), *xr = D_ROW(x, xs, r);
            double *orow = D_ROW_W(gi, gs, r);
            __m512d g0 = _mm512_maskz_loadu_pd(m0, gr), v0 = _mm512_maskz_loadu_pd(m0, xr);
            __m512d g1 = _mm512_maskz_loadu_pd(m1, gr + 8), v1 = _mm512_maskz_loadu_pd(m1, xr + 8);
            _mm512_mask_storeu_pd(orow, m0, backward8(g0, v0, a0, b0, c0, d0));
            _mm512_mask_storeu_pd(orow + 8, m1, backward8(g1, v1, a1, b1, c1, d1));
        }
        return;
    }
    for (; r + 2 <= rows; r += 2) {
        __m512d g0 = _mm512_maskz_loadu_pd(m0, D_ROW(dy, dys, r));
        __m512d v0 = _mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r));
        __m512d g1 = _mm512_maskz_loadu_pd(m0, D_ROW(dy, dys, r + 1));
        __m512d v1 = _mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r + 1));
        _mm512_mask_storeu_pd(D_ROW_W(gi, gs, r), m0, backward8(g0, v0, a0, b0, c0, d0));
        _mm512_mask_storeu_pd(D_ROW_W(gi, gs, r + 1), m0, backward8(g1, v1, a0, b0, c0, d0));
    }
    if (r < rows) {
        __m512d g0 = _mm512_maskz_loadu_pd(m0, D_ROW(dy, dys, r));
        __m512d v0 = _mm512_maskz_loadu_pd(m0, D_ROW(x, xs, r));
        _mm512_mask_storeu_pd(D_ROW_W(gi, gs, r), m0, backward8(g0, v0, a0, b0, c0, d0));
    }
}

static void backward_rows_f64(const double *dy, int64_t dys, const double *x, int64_t xs,
                              size_t m, size_t cn, const double *k, size_t ldk, double *gi,
                              int64_t gs)
{
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512d a0 = coef8(k, ldk, 0, j), b0 = coef8(k, ldk, 1, j);
        const __m512d c0 = coef8(k, ldk, 2, j), d0 = coef8(k, ldk, 3, j);
        const __m512d a1 = coef8(k, ldk, 0, j + 8), b1 = coef8(k, ldk, 1, j + 8);
        const __m512d c1 = coef8(k, ldk, 2, j + 8), d1 = coef8(k, ldk, 3, j + 8);
        for (t = 0; t < m; t++) {
            const double *gr = D_ROW(dy, dys, t) + j, *xr = D_ROW(x, xs, t) + j;
            double *orow = D_ROW_W(gi, gs, t) + j;
            __m512d g0 = _mm512_loadu_pd(gr), g1 = _mm512_loadu_pd(gr + 8);
            __m512d v0 = _mm512_loadu_pd(xr), v1 = _mm512_loadu_pd(xr + 8);
            store_pd(orow, backward8(g0, v0, a0, b0, c0, d0));
            store_pd(orow + 8, backward8(g1, v1, a1, b1, c1, d1));
        }
    }
    for (; j < cn; j += 8) {
        const __mmask8 q = step_mask(cn, j);
        const __m512d a0 = coef8z(k, ldk, 0, j, q), b0 = coef8z(k, ldk, 1, j, q);
        const __m512d c0 = coef8z(k, ldk, 2, j, q), d0 = coef8z(k, ldk, 3, j, q);
        for (t = 0; t < m; t++) {
            __m512d g = _mm512_maskz_loadu_pd(q, D_ROW(dy, dys, t) + j);
            __m512d v = _mm512_maskz_loadu_pd(q, D_ROW(x, xs, t) + j);
            _mm512_mask_storeu_pd(D_ROW_W(gi, gs, t) + j, q, backward8(g, v, a0, b0, c0, d0));
        }
    }
}

static void row_backward_f64(const double *dy, int64_t dys, const double *x, int64_t xs,
                             size_t rows, size_t cn, const double *k, size_t ldk, double *gi,
                             int64_t gs)
{
    size_t r, g = group_rows(SBN_KD_F64, cn);
    if (cn == 0 || rows == 0) return;
    if (cn <= 16) {
        row_backward_narrow_f64(dy, dys, x, xs, rows, cn, k, ldk, gi, gs);
        return;
    }
    for (r = 0; r < rows; r += g)
        backward_rows_f64(D_ROW(dy, dys, r), dys, D_ROW(x, xs, r), xs,
                          rows - r < g ? rows - r : g, cn, k, ldk, D_ROW_W(gi, gs, r), gs);
}

/* ======== fp32/fp16/bf16: float coefficients, float arithmetic ======== */

/* ---- runs of one channel ---- */

/* The runs' maps return, for bf16, the outputs whose floats were subnormal
 * (bf16x32_suspects): where the CPU's conversion narrows, those are the outputs to check
 * (bf16_avx512.h); 0 otherwise. */
SBN512_INLINE __mmask32 fnormalize(sbn_kdtype dt, const void *x, size_t n, const float *f,
                                   void *y)
{
    const __m512 f0 = _mm512_set1_ps(f[0]), f1 = _mm512_set1_ps(f[1]), f2 = _mm512_set1_ps(f[2]);
    size_t i = 0;
    if (dt == SBN_KD_BF16) { /* 32 at a time (bf16_avx512.h) */
        const uint16_t *xp = x;
        uint16_t *yp = y;
        __mmask32 suspects = 0;
        __m512 v0, v1;
        for (; i + 32 <= n; i += 32) {
            bf16x32_load(xp + i, &v0, &v1);
            v0 = fnormalize16(v0, f0, f1, f2), v1 = fnormalize16(v1, f0, f1, f2);
            suspects |= bf16x32_suspects((__mmask32)~0u, v0, v1);
            store_si512(yp + i, bf16x32_pack(v0, v1));
        }
        if (i < n) {
            const __mmask32 m = tail_mask32(n - i);
            bf16x32_loadz(m, xp + i, &v0, &v1);
            v0 = fnormalize16(v0, f0, f1, f2), v1 = fnormalize16(v1, f0, f1, f2);
            suspects |= bf16x32_suspects(m, v0, v1);
            _mm512_mask_storeu_epi16(yp + i, m, bf16x32_pack(v0, v1));
        }
        return suspects;
    }
    for (; i + 32 <= n; i += 32) {
        __m512 v0 = ld16(dt, sbn512_at(dt, x, i)), v1 = ld16(dt, sbn512_at(dt, x, i + 16));
        st16(dt, sbn512_at_w(dt, y, i), fnormalize16(v0, f0, f1, f2));
        st16(dt, sbn512_at_w(dt, y, i + 16), fnormalize16(v1, f0, f1, f2));
    }
    if (i + 16 <= n) {
        st16(dt, sbn512_at_w(dt, y, i), fnormalize16(ld16(dt, sbn512_at(dt, x, i)), f0, f1, f2));
        i += 16;
    }
    if (i < n) {
        const __mmask16 m = tail_mask16(n - i);
        st16m(dt, sbn512_at_w(dt, y, i), m,
              fnormalize16(ld16z(dt, sbn512_at(dt, x, i), m), f0, f1, f2));
    }
    return 0;
}

SBN512_INLINE __mmask32 fbackward(sbn_kdtype dt, const void *dy, const void *x, size_t n,
                                  const float *f, void *gi)
{
    const __m512 f0 = _mm512_set1_ps(f[0]), f1 = _mm512_set1_ps(f[1]);
    const __m512 f2 = _mm512_set1_ps(f[2]), f3 = _mm512_set1_ps(f[3]);
    size_t i = 0;
    if (dt == SBN_KD_BF16) { /* 32 at a time (bf16_avx512.h) */
        const uint16_t *gp = dy, *xp = x;
        uint16_t *op = gi;
        __mmask32 suspects = 0;
        __m512 g0, g1, v0, v1;
        for (; i + 32 <= n; i += 32) {
            bf16x32_load(gp + i, &g0, &g1);
            bf16x32_load(xp + i, &v0, &v1);
            v0 = fbackward16(g0, v0, f0, f1, f2, f3), v1 = fbackward16(g1, v1, f0, f1, f2, f3);
            suspects |= bf16x32_suspects((__mmask32)~0u, v0, v1);
            store_si512(op + i, bf16x32_pack(v0, v1));
        }
        if (i < n) {
            const __mmask32 m = tail_mask32(n - i);
            bf16x32_loadz(m, gp + i, &g0, &g1);
            bf16x32_loadz(m, xp + i, &v0, &v1);
            v0 = fbackward16(g0, v0, f0, f1, f2, f3), v1 = fbackward16(g1, v1, f0, f1, f2, f3);
            suspects |= bf16x32_suspects(m, v0, v1);
            _mm512_mask_storeu_epi16(op + i, m, bf16x32_pack(v0, v1));
        }
        return suspects;
    }
    for (; i + 32 <= n; i += 32) {
        __m512 g0 = ld16(dt, sbn512_at(dt, dy, i)), g1 = ld16(dt, sbn512_at(dt, dy, i + 16));
        __m512 v0 = ld16(dt, sbn512_at(dt, x, i)), v1 = ld16(dt, sbn512_at(dt, x, i + 16));
        st16(dt, sbn512_at_w(dt, gi, i), fbackward16(g0, v0, f0, f1, f2, f3));
        st16(dt, sbn512_at_w(dt, gi, i + 16), fbackward16(g1, v1, f0, f1, f2, f3));
    }
    if (i + 16 <= n) {
        __m512 g = ld16(dt, sbn512_at(dt, dy, i)), v = ld16(dt, sbn512_at(dt, x, i));
        st16(dt, sbn512_at_w(dt, gi, i), fbackward16(g, v, f0, f1, f2, f3));
        i += 16;
    }
    if (i < n) {
        const __mmask16 m = tail_mask16(n - i);
        __m512 g = ld16z(dt, sbn512_at(dt, dy, i), m), v = ld16z(dt, sbn512_at(dt, x, i), m);
        st16m(dt, sbn512_at_w(dt, gi, i), m, fbackward16(g, v, f0, f1, f2, f3));
    }
    return 0;
}

/* ---- rows of a block of channels (strides and row offsets in bytes: xb = xs * size) ---- */

/* Coefficient row c of channels [j, j + 16) (z: those in m, zero elsewhere). */
SBN512_INLINE __m512 fcoef16(const float *k, size_t ldk, int c, size_t j)
{
    return _mm512_loadu_ps(k + (size_t)c * ldk + j);
}

SBN512_INLINE __m512 fcoef16z(const float *k, size_t ldk, int c, size_t j, __mmask16 m)
{
    return _mm512_maskz_loadu_ps(m, k + (size_t)c * ldk + j);
}

SBN512_INLINE __m256 fcoef8z(const float *k, size_t ldk, int c, __mmask8 m)
{
    return _mm256_maskz_loadu_ps(m, k + (size_t)c * ldk);
}

#define AT(p, o) ((const char *)(p) + (o))
#define AT_W(p, o) ((char *)(p) + (o))

/* Rows [0, m) of more than 16 channels, m <= ROW_GROUP: blocks of 16 channels, each
 * block's coefficients loaded once for the m rows; the last cn % 16 masked. */
SBN512_INLINE void fnormalize_rows(sbn_kdtype dt, const void *x, int64_t xb, size_t m, size_t cn,
                                   const float *k, size_t ldk, void *y, int64_t yb)
{
    const int64_t es = (int64_t)sbn512_esize(dt);
    int64_t xo, yo;
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512 a = fcoef16(k, ldk, 0, j), b = fcoef16(k, ldk, 1, j), c = fcoef16(k, ldk, 2, j);
        for (t = 0, xo = (int64_t)j * es, yo = (int64_t)j * es; t < m; t++, xo += xb, yo += yb)
            st16(dt, AT_W(y, yo), fnormalize16(ld16(dt, AT(x, xo)), a, b, c));
    }
    if (j < cn) {
        const __mmask16 q = tail_mask16(cn - j);
        const __m512 a = fcoef16z(k, ldk, 0, j, q), b = fcoef16z(k, ldk, 1, j, q);
        const __m512 c = fcoef16z(k, ldk, 2, j, q);
        for (t = 0, xo = (int64_t)j * es, yo = (int64_t)j * es; t < m; t++, xo += xb, yo += yb)
            st16m(dt, AT_W(y, yo), q, fnormalize16(ld16z(dt, AT(x, xo), q), a, b, c));
    }
}

/*
 * Rows of nb <= NARROW_BLOCKS blocks of 16 channels (the last one cn % 16 wide, masked,
 * when cn is not a multiple of 16), the blocks' coefficients in registers for all the
 * rows, a row at a time: reloading 3 (4) coefficient vectors a block and row from the L1
 * costs more than the row's own loads and stores (bench_ops 32x24x56x56 and
 * 32x64x56x56 NHWC). A whole last block is stored as the others (streamed when the
 * build streams); only a partial one takes the masked store. The coefficients of block
 * i are f[4 * i + c], c < ncoef.
 */
#define NARROW_BLOCKS 4
SBN512_INLINE __mmask16 narrow_mask(size_t cn, int nb, int i)
{
    return i < nb - 1 || cn % 16 == 0 ? (__mmask16)0xFFFF : tail_mask16(cn % 16);
}

SBN512_INLINE void narrow_coefs(const float *k, size_t ldk, size_t cn, int nb, int ncoef,
                                __m512 *f)
{
    int i, c;
    for (i = 0; i < nb; i++)
        for (c = 0; c < ncoef; c++)
            f[4 * i + c] = fcoef16z(k, ldk, c, 16 * (size_t)i, narrow_mask(cn, nb, i));
}

SBN512_INLINE void fnormalize_narrow(sbn_kdtype dt, int nb, const void *x, int64_t xb,
                                     size_t rows, size_t cn, const float *k, size_t ldk,
                                     void *y, int64_t yb)
{
    const int64_t es = (int64_t)sbn512_esize(dt), bb = 16 * es;
    __m512 f[4 * NARROW_BLOCKS];
    int64_t xo = 0, yo = 0;
    size_t r;
    int i;
    narrow_coefs(k, ldk, cn, nb, 3, f);
    for (r = 0; r < rows; r++, xo += xb, yo += yb)
        for (i = 0; i < nb; i++) {
            const __mmask16 q = narrow_mask(cn, nb, i);
            const __m512 *g = f + 4 * i;
            if (q == 0xFFFF)
                st16(dt, AT_W(y, yo + i * bb),
                     fnormalize16(ld16(dt, AT(x, xo + i * bb)), g[0], g[1], g[2]));
            else
                st16m(dt, AT_W(y, yo + i * bb), q,
                      fnormalize16(ld16z(dt, AT(x, xo + i * bb), q), g[0], g[1], g[2]));
        }
}

SBN512_INLINE void fbackward_narrow(sbn_kdtype dt, int nb, const void *dy, int64_t gb,
                                    const void *x, int64_t xb, size_t rows, size_t cn,
                                    const float *k, size_t ldk, void *gi, int64_t ob)
{
    const int64_t es = (int64_t)sbn512_esize(dt), bb = 16 * es;
    __m512 f[4 * NARROW_BLOCKS];
    int64_t go = 0, xo = 0, oo = 0;
    size_t r;
    int i;
    narrow_coefs(k, ldk, cn, nb, 4, f);
    for (r = 0; r < rows; r++, go += gb, xo += xb, oo += ob)
        for (i = 0; i < nb; i++) {
            const __mmask16 q = narrow_mask(cn, nb, i);
            const __m512 *g = f + 4 * i;
            if (q == 0xFFFF)
                st16(dt, AT_W(gi, oo + i * bb),
                     fbackward16(ld16(dt, AT(dy, go + i * bb)), ld16(dt, AT(x, xo + i * bb)), g[0],
                                 g[1], g[2], g[3]));
            else
                st16m(dt, AT_W(gi, oo + i * bb), q,
                      fbackward16(ld16z(dt, AT(dy, go + i * bb), q),
                                  ld16z(dt, AT(x, xo + i * bb), q), g[0], g[1], g[2], g[3]));
        }
}

/* Up to 8 channels in a ymm, up to NARROW_BLOCKS x 16 in zmm, the coefficients in
 * registers for all the rows; more, one row at a time through fnormalize_rows. */
SBN512_INLINE void frow_normalize(sbn_kdtype dt, const void *x, int64_t xs, size_t rows,
                                  size_t cn, const float *k, size_t ldk, void *y, int64_t ys)
{
    const int64_t es = (int64_t)sbn512_esize(dt), xb = xs * es, yb = ys * es;
    int64_t xo = 0, yo = 0;
    size_t r;
    if (cn == 0 || rows == 0) return;
    if (cn <= 8) {
        const __mmask8 q = cn == 8 ? (__mmask8)0xFF : tail_mask(cn);
        const __m256 a = fcoef8z(k, ldk, 0, q), b = fcoef8z(k, ldk, 1, q), c = fcoef8z(k, ldk, 2, q);
        for (r = 0; r < rows; r++, xo += xb, yo += yb)
            st8m(dt, AT_W(y, yo), q, fnormalize8(ld8z(dt, AT(x, xo), q), a, b, c));
        return;
    }
    switch ((cn + 15) / 16) {
    case 1: fnormalize_narrow(dt, 1, x, xb, rows, cn, k, ldk, y, yb); return;
    case 2: fnormalize_narrow(dt, 2, x, xb, rows, cn, k, ldk, y, yb); return;
    case 3: fnormalize_narrow(dt, 3, x, xb, rows, cn, k, ldk, y, yb); return;
    case 4: fnormalize_narrow(dt, 4, x, xb, rows, cn, k, ldk, y, yb); return;
    default: break;
    }
    /* A row at a time, so that y is written in memory order: four rows written a
     * 64-byte block per row in turn are four interleaved store streams, which DRAM
     * takes slower than one (bench_ops 32x64x56x56 NHWC eval); float coefficients
     * are one load per 16 channels from L1. */
    for (r = 0; r < rows; r++, xo += xb, yo += yb)
        fnormalize_rows(dt, AT(x, xo), xb, 1, cn, k, ldk, AT_W(y, yo), yb);
}

SBN512_INLINE void fbackward_rows(sbn_kdtype dt, const void *dy, int64_t gb, const void *x,
                                  int64_t xb, size_t m, size_t cn, const float *k, size_t ldk,
                                  void *gi, int64_t ob)
{
    const int64_t es = (int64_t)sbn512_esize(dt);
    int64_t go, xo, oo;
    size_t j, t;
    for (j = 0; j + 16 <= cn; j += 16) {
        const __m512 a = fcoef16(k, ldk, 0, j), b = fcoef16(k, ldk, 1, j);
        const __m512 c = fcoef16(k, ldk, 2, j), d = fcoef16(k, ldk, 3, j);
        for (t = 0, go = xo = oo = (int64_t)j * es; t < m; t++, go += gb, xo += xb, oo += ob) {
            __m512 g = ld16(dt, AT(dy, go)), v = ld16(dt, AT(x, xo));
            st16(dt, AT_W(gi, oo), fbackward16(g, v, a, b, c, d));
        }
    }
    if (j < cn) {
        const __mmask16 q = tail_mask16(cn - j);
        const __m512 a = fcoef16z(k, ldk, 0, j, q), b = fcoef16z(k, ldk, 1, j, q);
        const __m512 c = fcoef16z(k, ldk, 2, j, q), d = fcoef16z(k, ldk, 3, j, q);
        for (t = 0, go = xo = oo = (int64_t)j * es; t < m; t++, go += gb, xo += xb, oo += ob) {
            __m512 g = ld16z(dt, AT(dy, go), q), v = ld16z(dt, AT(x, xo), q);
            st16m(dt, AT_W(gi, oo), q, fbackward16(g, v, a, b, c, d));
        }
    }
}

SBN512_INLINE void frow_backward(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                 int64_t xs, size_t rows, size_t cn, const float *k, size_t ldk,
                                 void *gi, int64_t gs)
{
    const int64_t es = (int64_t)sbn512_esize(dt), gb = dys * es, xb = xs * es, ob = gs * es;
    int64_t go = 0, xo = 0, oo = 0;
    size_t r;
    if (cn == 0 || rows == 0) return;
    if (cn <= 8) {
        const __mmask8 q = cn == 8 ? (__mmask8)0xFF : tail_mask(cn);
        const __m256 a = fcoef8z(k, ldk, 0, q), b = fcoef8z(k, ldk, 1, q);
        const __m256 c = fcoef8z(k, ldk, 2, q), d = fcoef8z(k, ldk, 3, q);
        for (r = 0; r < rows; r++, go += gb, xo += xb, oo += ob) {
            __m256 gv = ld8z(dt, AT(dy, go), q), v = ld8z(dt, AT(x, xo), q);
            st8m(dt, AT_W(gi, oo), q, fbackward8(gv, v, a, b, c, d));
        }
        return;
    }
    switch ((cn + 15) / 16) {
    case 1: fbackward_narrow(dt, 1, dy, gb, x, xb, rows, cn, k, ldk, gi, ob); return;
    case 2: fbackward_narrow(dt, 2, dy, gb, x, xb, rows, cn, k, ldk, gi, ob); return;
    case 3: fbackward_narrow(dt, 3, dy, gb, x, xb, rows, cn, k, ldk, gi, ob); return;
    case 4: fbackward_narrow(dt, 4, dy, gb, x, xb, rows, cn, k, ldk, gi, ob); return;
    default: break;
    }
    for (r = 0; r < rows; r++, go += gb, xo += xb, oo += ob) /* a row at a time: see frow_normalize */
        fbackward_rows(dt, AT(dy, go), gb, AT(x, xo), xb, 1, cn, k, ldk, AT_W(gi, oo), ob);
}

/* ---- the entry points: per family and element type; a run's output up to its first
 * aligned line goes apart (sbn_nt_head, non-temporal builds only) ---- */

SBN512_INLINE __mmask32 run_normalize(sbn_kdtype dt, const void *x, size_t n, const void *k,
                                      void *y)
{
    size_t h = sbn_nt_head(y, sbn512_esize(dt), n, 64);
    if (dt == SBN_KD_F64) {
        normalize_f64(x, h, k, y);
        normalize_f64((const double *)x + h, n - h, k, (double *)y + h);
        return 0;
    }
    return fnormalize(dt, x, h, k, y) |
           fnormalize(dt, sbn512_at(dt, x, h), n - h, k, sbn512_at_w(dt, y, h));
}

SBN512_INLINE __mmask32 run_backward(sbn_kdtype dt, const void *dy, const void *x, size_t n,
                                     const void *k, void *gi)
{
    size_t h = sbn_nt_head(gi, sbn512_esize(dt), n, 64);
    if (dt == SBN_KD_F64) {
        backward_f64(dy, x, h, k, gi);
        backward_f64((const double *)dy + h, (const double *)x + h, n - h, k, (double *)gi + h);
        return 0;
    }
    return fbackward(dt, dy, x, h, k, gi) |
           fbackward(dt, sbn512_at(dt, dy, h), sbn512_at(dt, x, h), n - h, k,
                     sbn512_at_w(dt, gi, h));
}

/* Several runs (the planes of consecutive channels): the one-run maps in a loop,
 * inlined, run i's coefficients gathered from structure-of-arrays form: on 7x7
 * planes a call and its setup per run cost as much as the run's elements. */
/* Run i starts (i x s) elements from p; s may be negative (a reversed view), so the
 * offset stays signed: through size_t it wrapped, which C leaves undefined. */
#define RUN(dt, p, i, s) \
    ((const char *)(p) + (int64_t)(i) * (s) * (int64_t)sbn512_esize(dt))
#define RUN_W(dt, p, i, s) ((char *)(p) + (int64_t)(i) * (s) * (int64_t)sbn512_esize(dt))

SBN512_INLINE __mmask32 runs_map(sbn_kdtype dt, int bwd, const void *dy, int64_t dys,
                                 const void *x, int64_t xs, size_t runs, size_t len, const void *k,
                                 size_t ldk, void *y, int64_t ys)
{
    __mmask32 suspects = 0;
    size_t i;
    int m;
    for (i = 0; i < runs; i++) {
        double kd[4];
        float kf[4];
        const void *c = kd;
        if (dt == SBN_KD_F64) {
            for (m = 0; m < 4; m++) kd[m] = ((const double *)k)[(size_t)m * ldk + i];
        } else {
            for (m = 0; m < 4; m++) kf[m] = ((const float *)k)[(size_t)m * ldk + i];
            c = kf;
        }
        if (bwd)
            suspects |= run_backward(dt, RUN(dt, dy, i, dys), RUN(dt, x, i, xs), len, c,
                                     RUN_W(dt, y, i, ys));
        else
            suspects |= run_normalize(dt, RUN(dt, x, i, xs), len, c, RUN_W(dt, y, i, ys));
    }
    return suspects;
}

#define SBN_DEFINE_MAP_AVX512(dt, kd)                                                           \
    void SBN_MAP_ENTRY(dt, normalize)(const void *x, size_t n, const void *k, void *y)          \
    {                                                                                          \
        run_normalize(kd, x, n, k, y);                                                         \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, backward)(const void *dy, const void *x, size_t n, const void *k,    \
                                     void *gi)                                                 \
    {                                                                                          \
        run_backward(kd, dy, x, n, k, gi);                                                     \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, runs_normalize)(const void *x, int64_t xs, size_t runs, size_t len,  \
                                           const void *k, size_t ldk, void *y, int64_t ys)     \
    {                                                                                          \
        runs_map(kd, 0, NULL, 0, x, xs, runs, len, k, ldk, y, ys);                             \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, runs_backward)(const void *dy, int64_t dys, const void *x,           \
                                          int64_t xs, size_t runs, size_t len, const void *k,  \
                                          size_t ldk, void *gi, int64_t gs)                    \
    {                                                                                          \
        runs_map(kd, 1, dy, dys, x, xs, runs, len, k, ldk, gi, gs);                            \
    }

SBN_DEFINE_MAP_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_MAP_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_MAP_AVX512(f16, SBN_KD_F16)
#if !SBN_MAP_BF16_CVT /* stream_map_bf16_avx512.c defines them, checked */
SBN_DEFINE_MAP_AVX512(bf16, SBN_KD_BF16)
#endif

void SBN_MAP_ENTRY(f64, row_normalize)(const void *x, int64_t xs, size_t rows, size_t cn,
                                       const void *k, size_t ldk, void *y, int64_t ys)
{
    row_normalize_f64(x, xs, rows, cn, k, ldk, y, ys);
}

void SBN_MAP_ENTRY(f64, row_backward)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                      size_t rows, size_t cn, const void *k, size_t ldk,
                                      void *gi, int64_t gs)
{
    row_backward_f64(dy, dys, x, xs, rows, cn, k, ldk, gi, gs);
}

#define SBN_DEFINE_ROW_MAP_AVX512_FLT(dt, kd)                                                   \
    void SBN_MAP_ENTRY(dt, row_normalize)(const void *x, int64_t xs, size_t rows, size_t cn,    \
                                          const void *k, size_t ldk, void *y, int64_t ys)      \
    {                                                                                          \
        frow_normalize(kd, x, xs, rows, cn, k, ldk, y, ys);                                    \
    }                                                                                          \
    void SBN_MAP_ENTRY(dt, row_backward)(const void *dy, int64_t dys, const void *x,            \
                                         int64_t xs, size_t rows, size_t cn, const void *k,    \
                                         size_t ldk, void *gi, int64_t gs)                     \
    {                                                                                          \
        frow_backward(kd, dy, dys, x, xs, rows, cn, k, ldk, gi, gs);                           \
    }

SBN_DEFINE_ROW_MAP_AVX512_FLT(f32, SBN_KD_F32)
SBN_DEFINE_ROW_MAP_AVX512_FLT(f16, SBN_KD_F16)
#if !SBN_MAP_BF16_CVT /* stream_map_bf16_avx512.c: the rounding ones */
SBN_DEFINE_ROW_MAP_AVX512_FLT(bf16, SBN_KD_BF16)
#endif
