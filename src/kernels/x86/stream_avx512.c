/*
 * stream_avx512.c - the streaming reductions of kernels.h for AVX-512 (F, BW,
 * VL, DQ) + F16C, in the canonical order of stream_scalar.c. Runs of one channel:
 * the 16 lanes of a and of b live in two zmm each (lanes 0-7, 8-15), loaded from
 * acc at entry and stored at exit. Element i goes to lane (lane + i) % 16, so the
 * run is cut into 16-element blocks aligned to lane 0: a head block read from
 * x - lane with a mask that leaves out the elements before x (masked-out elements
 * are never read, so this cannot fault), full blocks, and a masked tail. Masked
 * adds leave the lanes a block does not reach untouched, so every lane sees
 * exactly the scalar sequence of additions (the rows, channels-last, are in
 * rows_avx512.c). Several runs of one channel (runs_accum, runs_bwd_accum) fill each group of eight
 * lanes across runs: the end of one run and the start of the next share a group (a
 * merging masked load), so short runs (7x7 planes) cost whole groups, not a head and
 * a tail each.
 * Only a[l * ld + j], b[l * ld + j] with j < cn are read or written. Per element,
 * in double, each operation rounded once (-ffp-contract=off; b's product and add are
 * one fused multiply-add, as C's fma in the scalar kernels); which NaN survives where
 * two meet is not fixed (kernels.h, numerics.md):
 *   accum:      d = x - shift;  a += d;   b = fma(d, d, b)
 *   bwd_accum:  a += dy;        b = fma(dy, x - center, b)
 */
#include <stdint.h>

#include "kernels/x86/io_avx512.h"

/* ---- one zmm of eight lanes in registers (runs) ---- */

/* accum8 and bwd8 (io_avx512.h), and their masked forms: */
SBN512_INLINE void accum8m(__m512d *a, __m512d *b, __mmask8 m, __m512d v, __m512d shift)
{
    __m512d d = _mm512_sub_pd(v, shift);
    *a = _mm512_mask_add_pd(*a, m, *a, d);
    *b = _mm512_mask3_fmadd_pd(d, d, *b, m);
}

SBN512_INLINE void bwd8m(__m512d *a, __m512d *b, __mmask8 m, __m512d g, __m512d v,
                         __m512d center)
{
    *a = _mm512_mask_add_pd(*a, m, *a, g);
    *b = _mm512_mask3_fmadd_pd(g, _mm512_sub_pd(v, center), *b, m);
}

/* The head block of a run starting at lane != 0: its first `lane` elements would lie
 * before p, so the address is formed as an integer and the mask leaves them out. */
SBN512_INLINE const void *head_block(sbn_kdtype dt, const void *p, unsigned lane, unsigned half)
{
    return (const void *)((uintptr_t)p - lane * sbn512_esize(dt) + half * 8u * sbn512_esize(dt));
}

/* The number of elements of a run of n in its head block (lane != 0). */
static inline size_t head_count(size_t n, unsigned lane)
{
    return n < SBN_LANES - lane ? n : SBN_LANES - lane;
}

SBN512_INLINE void accum(sbn_kdtype dt, const void *x, size_t n, unsigned lane, double shift,
                         double *acc)
{
    __m512d a0, a1, b0, b1;
    const __m512d s = _mm512_set1_pd(shift);
    size_t i = 0;
    if (n == 0) return;
    a0 = _mm512_loadu_pd(acc);
    a1 = _mm512_loadu_pd(acc + 8);
    b0 = _mm512_loadu_pd(acc + SBN_LANES);
    b1 = _mm512_loadu_pd(acc + SBN_LANES + 8);
    lane %= SBN_LANES;
    if (lane != 0) {
        __mmask16 m;
        i = head_count(n, lane);
        m = (__mmask16)(tail_mask16(i) << lane);
        accum8m(&a0, &b0, (__mmask8)m, sbn512_load8z(dt, head_block(dt, x, lane, 0), (__mmask8)m), s);
        accum8m(&a1, &b1, (__mmask8)(m >> 8),
                sbn512_load8z(dt, head_block(dt, x, lane, 1), (__mmask8)(m >> 8)), s);
    }
    for (; i + SBN_LANES <= n; i += SBN_LANES) {
        accum8(&a0, &b0, sbn512_load8(dt, sbn512_at(dt, x, i)), s);
        accum8(&a1, &b1, sbn512_load8(dt, sbn512_at(dt, x, i + 8)), s);
    }
    if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        accum8m(&a0, &b0, (__mmask8)m, sbn512_load8z(dt, sbn512_at(dt, x, i), (__mmask8)m), s);
        accum8m(&a1, &b1, (__mmask8)(m >> 8),
                sbn512_load8z(dt, sbn512_at(dt, x, i + 8), (__mmask8)(m >> 8)), s);
    }
    _mm512_storeu_pd(acc, a0);
    _mm512_storeu_pd(acc + 8, a1);
    _mm512_storeu_pd(acc + SBN_LANES, b0);
    _mm512_storeu_pd(acc + SBN_LANES + 8, b1);
}

SBN512_INLINE void bwd_accum(sbn_kdtype dt, const void *dy, const void *x, size_t n,
                             unsigned lane, double center, double *acc)
{
    __m512d a0, a1, b0, b1;
    const __m512d c = _mm512_set1_pd(center);
    size_t i = 0;
    if (n == 0) return;
    a0 = _mm512_loadu_pd(acc);
    a1 = _mm512_loadu_pd(acc + 8);
    b0 = _mm512_loadu_pd(acc + SBN_LANES);
    b1 = _mm512_loadu_pd(acc + SBN_LANES + 8);
    lane %= SBN_LANES;
    if (lane != 0) {
        __mmask16 m;
        __mmask8 m0, m1;
        i = head_count(n, lane);
        m = (__mmask16)(tail_mask16(i) << lane);
        m0 = (__mmask8)m;
        m1 = (__mmask8)(m >> 8);
        bwd8m(&a0, &b0, m0, sbn512_load8z(dt, head_block(dt, dy, lane, 0), m0),
              sbn512_load8z(dt, head_block(dt, x, lane, 0), m0), c);
        bwd8m(&a1, &b1, m1, sbn512_load8z(dt, head_block(dt, dy, lane, 1), m1),
              sbn512_load8z(dt, head_block(dt, x, lane, 1), m1), c);
    }
    for (; i + SBN_LANES <= n; i += SBN_LANES) {
        bwd8(&a0, &b0, sbn512_load8(dt, sbn512_at(dt, dy, i)), sbn512_load8(dt, sbn512_at(dt, x, i)),
             c);
        bwd8(&a1, &b1, sbn512_load8(dt, sbn512_at(dt, dy, i + 8)),
             sbn512_load8(dt, sbn512_at(dt, x, i + 8)), c);
    }
    if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        __mmask8 m0 = (__mmask8)m, m1 = (__mmask8)(m >> 8);
        bwd8m(&a0, &b0, m0, sbn512_load8z(dt, sbn512_at(dt, dy, i), m0),
              sbn512_load8z(dt, sbn512_at(dt, x, i), m0), c);
        bwd8m(&a1, &b1, m1, sbn512_load8z(dt, sbn512_at(dt, dy, i + 8), m1),
              sbn512_load8z(dt, sbn512_at(dt, x, i + 8), m1), c);
    }
    _mm512_storeu_pd(acc, a0);
    _mm512_storeu_pd(acc + 8, a1);
    _mm512_storeu_pd(acc + SBN_LANES, b0);
    _mm512_storeu_pd(acc + SBN_LANES + 8, b1);
}

/* ---- one run of each of several channels, interleaved (planes) ---- */

/*
 * K channels' runs of one geometry side by side, K a constant of each inlined copy
 * (PLANES_GROUP, 2 or 1): channel k at x + k * cs, its lanes in a0[k], a1[k], b0[k],
 * b1[k]. Each channel's lanes take their elements in the order accum gives them; only
 * the channels are interleaved, so a step's K add and K fused multiply-add chains are in
 * flight together, where one channel's wait for their latency every 16 elements.
 */
#define PLANES_GROUP 4

/* Channel k's lanes (acc + 32 k) into and out of a0[k], a1[k], b0[k], b1[k], k < K. */
SBN512_INLINE void planes_load(const double *acc, size_t K, __m512d *a0, __m512d *a1, __m512d *b0,
                               __m512d *b1)
{
    size_t k;
    for (k = 0; k < K; k++) {
        const double *p = acc + 2 * SBN_LANES * k;
        a0[k] = _mm512_loadu_pd(p);
        a1[k] = _mm512_loadu_pd(p + 8);
        b0[k] = _mm512_loadu_pd(p + SBN_LANES);
        b1[k] = _mm512_loadu_pd(p + SBN_LANES + 8);
    }
}

SBN512_INLINE void planes_store(double *acc, size_t K, const __m512d *a0, const __m512d *a1,
                                const __m512d *b0, const __m512d *b1)
{
    size_t k;
    for (k = 0; k < K; k++) {
        double *p = acc + 2 * SBN_LANES * k;
        _mm512_storeu_pd(p, a0[k]);
        _mm512_storeu_pd(p + 8, a1[k]);
        _mm512_storeu_pd(p + SBN_LANES, b0[k]);
        _mm512_storeu_pd(p + SBN_LANES + 8, b1[k]);
    }
}

SBN512_INLINE void planes_group(sbn_kdtype dt, const char *x, int64_t cs, size_t K, size_t n,
                                unsigned lane, const double *shift, double *acc)
{
    __m512d a0[PLANES_GROUP], a1[PLANES_GROUP], b0[PLANES_GROUP], b1[PLANES_GROUP];
    __m512d s[PLANES_GROUP];
    size_t i = 0, k;
    planes_load(acc, K, a0, a1, b0, b1);
    for (k = 0; k < K; k++) s[k] = _mm512_set1_pd(shift[k]);
    if (lane != 0) {
        __mmask16 m;
        i = head_count(n, lane);
        m = (__mmask16)(tail_mask16(i) << lane);
        for (k = 0; k < K; k++) {
            const char *q = x + (int64_t)k * cs;
            accum8m(&a0[k], &b0[k], (__mmask8)m,
                    sbn512_load8z(dt, head_block(dt, q, lane, 0), (__mmask8)m), s[k]);
            accum8m(&a1[k], &b1[k], (__mmask8)(m >> 8),
                    sbn512_load8z(dt, head_block(dt, q, lane, 1), (__mmask8)(m >> 8)), s[k]);
        }
    }
    for (; i + SBN_LANES <= n; i += SBN_LANES)
        for (k = 0; k < K; k++) {
            const char *q = x + (int64_t)k * cs;
            accum8(&a0[k], &b0[k], sbn512_load8(dt, sbn512_at(dt, q, i)), s[k]);
            accum8(&a1[k], &b1[k], sbn512_load8(dt, sbn512_at(dt, q, i + 8)), s[k]);
        }
    if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        for (k = 0; k < K; k++) {
            const char *q = x + (int64_t)k * cs;
            accum8m(&a0[k], &b0[k], (__mmask8)m,
                    sbn512_load8z(dt, sbn512_at(dt, q, i), (__mmask8)m), s[k]);
            accum8m(&a1[k], &b1[k], (__mmask8)(m >> 8),
                    sbn512_load8z(dt, sbn512_at(dt, q, i + 8), (__mmask8)(m >> 8)), s[k]);
        }
    }
    planes_store(acc, K, a0, a1, b0, b1);
}

SBN512_INLINE void planes_bwd_group(sbn_kdtype dt, const char *dy, int64_t dcs, const char *x,
                                    int64_t cs, size_t K, size_t n, unsigned lane,
                                    const double *center, double *acc)
{
    __m512d a0[PLANES_GROUP], a1[PLANES_GROUP], b0[PLANES_GROUP], b1[PLANES_GROUP];
    __m512d c[PLANES_GROUP];
    size_t i = 0, k;
    planes_load(acc, K, a0, a1, b0, b1);
    for (k = 0; k < K; k++) c[k] = _mm512_set1_pd(center[k]);
    if (lane != 0) {
        __mmask16 m;
        __mmask8 m0, m1;
        i = head_count(n, lane);
        m = (__mmask16)(tail_mask16(i) << lane);
        m0 = (__mmask8)m;
        m1 = (__mmask8)(m >> 8);
        for (k = 0; k < K; k++) {
            const char *g = dy + (int64_t)k * dcs, *q = x + (int64_t)k * cs;
            bwd8m(&a0[k], &b0[k], m0, sbn512_load8z(dt, head_block(dt, g, lane, 0), m0),
                  sbn512_load8z(dt, head_block(dt, q, lane, 0), m0), c[k]);
            bwd8m(&a1[k], &b1[k], m1, sbn512_load8z(dt, head_block(dt, g, lane, 1), m1),
                  sbn512_load8z(dt, head_block(dt, q, lane, 1), m1), c[k]);
        }
    }
    for (; i + SBN_LANES <= n; i += SBN_LANES)
        for (k = 0; k < K; k++) {
            const char *g = dy + (int64_t)k * dcs, *q = x + (int64_t)k * cs;
            bwd8(&a0[k], &b0[k], sbn512_load8(dt, sbn512_at(dt, g, i)),
                 sbn512_load8(dt, sbn512_at(dt, q, i)), c[k]);
            bwd8(&a1[k], &b1[k], sbn512_load8(dt, sbn512_at(dt, g, i + 8)),
                 sbn512_load8(dt, sbn512_at(dt, q, i + 8)), c[k]);
        }
    if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        __mmask8 m0 = (__mmask8)m, m1 = (__mmask8)(m >> 8);
        for (k = 0; k < K; k++) {
            const char *g = dy + (int64_t)k * dcs, *q = x + (int64_t)k * cs;
            bwd8m(&a0[k], &b0[k], m0, sbn512_load8z(dt, sbn512_at(dt, g, i), m0),
                  sbn512_load8z(dt, sbn512_at(dt, q, i), m0), c[k]);
            bwd8m(&a1[k], &b1[k], m1, sbn512_load8z(dt, sbn512_at(dt, g, i + 8), m1),
                  sbn512_load8z(dt, sbn512_at(dt, q, i + 8), m1), c[k]);
        }
    }
    planes_store(acc, K, a0, a1, b0, b1);
}

/*
 * Groups of `group` channels (PLANES_GROUP, then a pair, then one), or with group 1 one
 * channel at a time: the entry points for data beyond the cache (the _pf table), where
 * several channels' runs side by side are as many interleaved streams from memory, which
 * the hardware prefetchers follow worse than one (bench: sbn_stats 32x64x56x56 fp32 NCHW
 * and backward_reduce 32x128x28x28 slower interleaved, faster in cache).
 */
SBN512_INLINE void planes_accum(sbn_kdtype dt, const void *x, int64_t cs, size_t cn, size_t n,
                                unsigned lane, const double *shift, double *acc, size_t group)
{
    const char *p = x;
    size_t j = 0;
    if (n == 0) return;
    lane %= SBN_LANES;
    if (group > 1) {
        for (; j + PLANES_GROUP <= cn; j += PLANES_GROUP)
            planes_group(dt, p + (int64_t)j * cs, cs, PLANES_GROUP, n, lane, shift + j,
                         acc + 2 * SBN_LANES * j);
        if (cn - j >= 2) {
            planes_group(dt, p + (int64_t)j * cs, cs, 2, n, lane, shift + j,
                         acc + 2 * SBN_LANES * j);
            j += 2;
        }
    }
    for (; j < cn; j++)
        planes_group(dt, p + (int64_t)j * cs, cs, 1, n, lane, shift + j, acc + 2 * SBN_LANES * j);
}

SBN512_INLINE void planes_bwd_accum(sbn_kdtype dt, const void *dy, int64_t dcs, const void *x,
                                    int64_t cs, size_t cn, size_t n, unsigned lane,
                                    const double *center, double *acc, size_t group)
{
    const char *g = dy, *p = x;
    size_t j = 0;
    if (n == 0) return;
    lane %= SBN_LANES;
    if (group > 1) {
        for (; j + PLANES_GROUP <= cn; j += PLANES_GROUP)
            planes_bwd_group(dt, g + (int64_t)j * dcs, dcs, p + (int64_t)j * cs, cs, PLANES_GROUP,
                             n, lane, center + j, acc + 2 * SBN_LANES * j);
        if (cn - j >= 2) {
            planes_bwd_group(dt, g + (int64_t)j * dcs, dcs, p + (int64_t)j * cs, cs, 2, n, lane,
                             center + j, acc + 2 * SBN_LANES * j);
            j += 2;
        }
    }
    for (; j < cn; j++)
        planes_bwd_group(dt, g + (int64_t)j * dcs, dcs, p + (int64_t)j * cs, cs, 1, n, lane,
                         center + j, acc + 2 * SBN_LANES * j);
}

/* ---- several runs of one channel: each group of eight lanes filled across runs ---- */

/* Eight elements of dt in the low bits of a zmm, as stored: the z form loads those in
 * m (zero elsewhere), the merge form replaces those in m of r; masked-out elements are
 * not read. widen8 turns them into eight doubles, exactly. */
SBN512_INLINE __m512i raw8z(sbn_kdtype dt, __mmask8 m, const void *p)
{
    switch (dt) {
    case SBN_KD_F64: return _mm512_maskz_loadu_epi64(m, p);
    case SBN_KD_F32: return _mm512_castsi256_si512(_mm256_maskz_loadu_epi32(m, p));
    default: return _mm512_castsi128_si512(_mm_maskz_loadu_epi16(m, p));
    }
}

SBN512_INLINE __m512i raw8_merge(sbn_kdtype dt, __m512i r, __mmask8 m, const void *p)
{
    switch (dt) {
    case SBN_KD_F64: return _mm512_mask_loadu_epi64(r, m, p);
    case SBN_KD_F32:
        return _mm512_castsi256_si512(_mm256_mask_loadu_epi32(_mm512_castsi512_si256(r), m, p));
    default: return _mm512_castsi128_si512(_mm_mask_loadu_epi16(_mm512_castsi512_si128(r), m, p));
    }
}

SBN512_INLINE __m512d widen8(sbn_kdtype dt, __m512i r)
{
    switch (dt) {
    case SBN_KD_F64: return _mm512_castsi512_pd(r);
    case SBN_KD_F32: return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_castsi512_si256(r)));
    case SBN_KD_F16: return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm512_castsi512_si128(r)));
    default: return _mm512_cvtps_pd(bf16x8_to_float(_mm512_castsi512_si128(r)));
    }
}

/* p moved back by q elements, formed as an integer (it may point before the array;
 * the elements there are masked out and never read). */
SBN512_INLINE const char *back(sbn_kdtype dt, const char *p, size_t q)
{
    return (const char *)((uintptr_t)p - q * sbn512_esize(dt));
}

/*
 * The lanes go in groups of eight (lanes 0-7 in a0/b0, 8-15 in a1/b1, `half` says which
 * is next); q elements of the current group are filled. A run first completes the group
 * in progress (a merging masked load, the elements before q kept), then takes whole
 * groups straight from memory, and leaves its last < 8 elements as a new group in
 * progress. Every lane still adds its elements in order, once per group it is in, and
 * a group's masked-out lanes are left alone: the bits of one call per run, with the
 * per-run heads and tails of short runs (7x7: 49 elements) merged into whole groups.
 * Runs of fewer than 8 elements take the same path.
 */
SBN512_INLINE void runs_accum(sbn_kdtype dt, const void *x, int64_t xs, size_t runs, size_t len,
                              unsigned lane, double shift, double *acc)
{
    const size_t es = sbn512_esize(dt);
    const __m512d s = _mm512_set1_pd(shift);
    __m512d a0 = _mm512_loadu_pd(acc), a1 = _mm512_loadu_pd(acc + 8);
    __m512d b0 = _mm512_loadu_pd(acc + SBN_LANES), b1 = _mm512_loadu_pd(acc + SBN_LANES + 8);
    __m512i raw = _mm512_setzero_si512();
    __mmask8 fill = 0;
    size_t i, q = (lane % SBN_LANES) & 7u;
    unsigned half = (lane % SBN_LANES) >> 3;
    for (i = 0; i < runs; i++) {
        const char *p = (const char *)x + (int64_t)i * xs * (int64_t)es;
        size_t left = len;
        if (q != 0) { /* complete the group in progress */
            size_t take = left < 8 - q ? left : 8 - q;
            __mmask8 m = (__mmask8)(tail_mask(take) << q);
            raw = raw8_merge(dt, raw, m, back(dt, p, q));
            fill |= m;
            p += take * es;
            left -= take;
            q += take;
            if (q < 8) continue;
            if (half) accum8m(&a1, &b1, fill, widen8(dt, raw), s);
            else accum8m(&a0, &b0, fill, widen8(dt, raw), s);
            half ^= 1u;
            q = 0;
        }
        if (half && left >= 8) {
            accum8(&a1, &b1, sbn512_load8(dt, p), s);
            half = 0;
            p += 8 * es;
            left -= 8;
        }
        for (; left >= 16; left -= 16, p += 16 * es) {
            accum8(&a0, &b0, sbn512_load8(dt, p), s);
            accum8(&a1, &b1, sbn512_load8(dt, p + 8 * es), s);
        }
        if (left >= 8) {
            accum8(&a0, &b0, sbn512_load8(dt, p), s);
            half = 1;
            p += 8 * es;
            left -= 8;
        }
        if (left != 0) { /* a new group in progress */
            fill = tail_mask(left);
            raw = raw8z(dt, fill, p);
            q = left;
        }
    }
    if (q != 0) {
        if (half) accum8m(&a1, &b1, fill, widen8(dt, raw), s);
        else accum8m(&a0, &b0, fill, widen8(dt, raw), s);
    }
    _mm512_storeu_pd(acc, a0);
    _mm512_storeu_pd(acc + 8, a1);
    _mm512_storeu_pd(acc + SBN_LANES, b0);
    _mm512_storeu_pd(acc + SBN_LANES + 8, b1);
}

/* The same for the backward sums, dy and x filled alike. */
SBN512_INLINE void runs_bwd_accum(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                  int64_t xs, size_t runs, size_t len, unsigned lane,
                                  double center, double *acc)
{
    const size_t es = sbn512_esize(dt);
    const __m512d c = _mm512_set1_pd(center);
    __m512d a0 = _mm512_loadu_pd(acc), a1 = _mm512_loadu_pd(acc + 8);
    __m512d b0 = _mm512_loadu_pd(acc + SBN_LANES), b1 = _mm512_loadu_pd(acc + SBN_LANES + 8);
    __m512i rg = _mm512_setzero_si512(), rx = _mm512_setzero_si512();
    __mmask8 fill = 0;
    size_t i, q = (lane % SBN_LANES) & 7u;
    unsigned half = (lane % SBN_LANES) >> 3;
    for (i = 0; i < runs; i++) {
        const char *g = (const char *)dy + (int64_t)i * dys * (int64_t)es;
        const char *p = (const char *)x + (int64_t)i * xs * (int64_t)es;
        size_t left = len;
        if (q != 0) {
            size_t take = left < 8 - q ? left : 8 - q;
            __mmask8 m = (__mmask8)(tail_mask(take) << q);
            rg = raw8_merge(dt, rg, m, back(dt, g, q));
            rx = raw8_merge(dt, rx, m, back(dt, p, q));
            fill |= m;
            g += take * es;
            p += take * es;
            left -= take;
            q += take;
            if (q < 8) continue;
            if (half) bwd8m(&a1, &b1, fill, widen8(dt, rg), widen8(dt, rx), c);
            else bwd8m(&a0, &b0, fill, widen8(dt, rg), widen8(dt, rx), c);
            half ^= 1u;
            q = 0;
        }
        if (half && left >= 8) {
            bwd8(&a1, &b1, sbn512_load8(dt, g), sbn512_load8(dt, p), c);
            half = 0;
            g += 8 * es;
            p += 8 * es;
            left -= 8;
        }
        for (; left >= 16; left -= 16, g += 16 * es, p += 16 * es) {
            bwd8(&a0, &b0, sbn512_load8(dt, g), sbn512_load8(dt, p), c);
            bwd8(&a1, &b1, sbn512_load8(dt, g + 8 * es), sbn512_load8(dt, p + 8 * es), c);
        }
        if (left >= 8) {
            bwd8(&a0, &b0, sbn512_load8(dt, g), sbn512_load8(dt, p), c);
            half = 1;
            g += 8 * es;
            p += 8 * es;
            left -= 8;
        }
        if (left != 0) {
            fill = tail_mask(left);
            rg = raw8z(dt, fill, g);
            rx = raw8z(dt, fill, p);
            q = left;
        }
    }
    if (q != 0) {
        if (half) bwd8m(&a1, &b1, fill, widen8(dt, rg), widen8(dt, rx), c);
        else bwd8m(&a0, &b0, fill, widen8(dt, rg), widen8(dt, rx), c);
    }
    _mm512_storeu_pd(acc, a0);
    _mm512_storeu_pd(acc + 8, a1);
    _mm512_storeu_pd(acc + SBN_LANES, b0);
    _mm512_storeu_pd(acc + SBN_LANES + 8, b1);
}

/* ---- the entry points: one per family and element type, the planes reductions twice
 * (_pf: for data beyond the cache) ---- */

#define SBN_DEFINE_PLANES_AVX512(dt, kd, isa, prefetch)                                     \
    void sbn_##dt##_planes_accum_ukernel__##isa(const void *x, int64_t cs, size_t cn, size_t n, \
                                                unsigned lane, const double *shift,            \
                                                double *acc)                                   \
    {                                                                                          \
        planes_accum(kd, x, cs, cn, n, lane, shift, acc, prefetch ? 1 : PLANES_GROUP);         \
    }                                                                                          \
    void sbn_##dt##_planes_bwd_accum_ukernel__##isa(const void *dy, int64_t dcs, const void *x, \
                                                    int64_t cs, size_t cn, size_t n,           \
                                                    unsigned lane, const double *center,       \
                                                    double *acc)                               \
    {                                                                                          \
        planes_bwd_accum(kd, dy, dcs, x, cs, cn, n, lane, center, acc,                         \
                         prefetch ? 1 : PLANES_GROUP);                                         \
    }

#define SBN_DEFINE_STREAM_AVX512(dt, kd)                                                        \
    void sbn_##dt##_accum_ukernel__avx512(const void *x, size_t n, unsigned lane, double shift, \
                                          double *acc)                                         \
    {                                                                                          \
        accum(kd, x, n, lane, shift, acc);                                                     \
    }                                                                                          \
    void sbn_##dt##_bwd_accum_ukernel__avx512(const void *dy, const void *x, size_t n,          \
                                              unsigned lane, double center, double *acc)       \
    {                                                                                          \
        bwd_accum(kd, dy, x, n, lane, center, acc);                                            \
    }                                                                                          \
    void sbn_##dt##_runs_accum_ukernel__avx512(const void *x, int64_t xs, size_t runs,          \
                                               size_t len, unsigned lane, double shift,        \
                                               double *acc)                                    \
    {                                                                                          \
        runs_accum(kd, x, xs, runs, len, lane, shift, acc);                                    \
    }                                                                                          \
    void sbn_##dt##_runs_bwd_accum_ukernel__avx512(const void *dy, int64_t dys, const void *x,  \
                                                   int64_t xs, size_t runs, size_t len,        \
                                                   unsigned lane, double center, double *acc)  \
    {                                                                                          \
        runs_bwd_accum(kd, dy, dys, x, xs, runs, len, lane, center, acc);                      \
    }                                                                                          \
    SBN_DEFINE_PLANES_AVX512(dt, kd, avx512, 0)                                                \
    SBN_DEFINE_PLANES_AVX512(dt, kd, avx512_pf, 1)

SBN_DEFINE_STREAM_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_STREAM_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_STREAM_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_STREAM_AVX512(bf16, SBN_KD_BF16)
