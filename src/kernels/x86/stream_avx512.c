/*
 * stream_avx512.c - the streaming reductions of kernels.h for AVX-512 (F, BW,
 * VL, DQ) + F16C, in the canonical order of stream_scalar.c. Runs of one channel:
 * the 16 lanes of a and of b live in two zmm each (lanes 0-7, 8-15), loaded from
 * acc at entry and stored at exit. Element i goes to lane (lane + i) % 16, so the
 * run is cut into 16-element blocks aligned to lane 0: a head block read from
 * x - lane with a mask that leaves out the elements before x (masked-out elements
 * are never read, so this cannot fault), full blocks, and a masked tail. Masked
 * adds leave the lanes a block does not reach untouched, so every lane sees
 * exactly the scalar sequence of additions. Rows (channels-last): row r adds to
 * row l = (lane + r) % 16 of the lane-major accumulators, vectorised across
 * channels (eight doubles per zmm, 32 channels a step, a masked step for the last
 * cn % 8). Rows go in blocks of 128 (64 in the backward): one lane's rows of a
 * block (every 16th) are added while its accumulators sit in registers, loaded
 * and stored once per block, so each lane still takes its rows in order. The _pf
 * entry points (for tensors beyond the last-level cache, kernels.h) also prefetch
 * the next block's rows into L2 when a row's slice is short (row_prefetch below).
 * Several runs of one channel (runs_accum, runs_bwd_accum) fill each group of eight
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

/* ---- rows: one lane's rows at a time, its accumulators in registers ---- */

/* Row r of a tensor of dt with row stride rs elements. */
SBN512_INLINE const char *row_at(sbn_kdtype dt, const void *p, int64_t rs, size_t r)
{
    return (const char *)p + (int64_t)r * rs * (int64_t)sbn512_esize(dt);
}

/* Adds m rows of one lane, at x, x + step, ... (step in bytes: 16 rows), to the lane's
 * accumulators ar[0..cn), br[0..cn), in row order: each block of channels is loaded
 * once (or, `fresh` - a constant in each inlined copy - starts at +0.0 unread), takes
 * the m rows, and is stored once. */
#define SBN512_LANE_LOAD(fresh, p) ((fresh) ? _mm512_setzero_pd() : _mm512_loadu_pd(p))
/* Declares a0..a3 and b0..b3: 32 channels' accumulators of one lane at pa and pb. */
#define SBN512_LANES32(fresh, pa, pb)                                                          \
    __m512d a0 = SBN512_LANE_LOAD(fresh, (pa)), a1 = SBN512_LANE_LOAD(fresh, (pa) + 8);      \
    __m512d a2 = SBN512_LANE_LOAD(fresh, (pa) + 16), a3 = SBN512_LANE_LOAD(fresh, (pa) + 24); \
    __m512d b0 = SBN512_LANE_LOAD(fresh, (pb)), b1 = SBN512_LANE_LOAD(fresh, (pb) + 8);      \
    __m512d b2 = SBN512_LANE_LOAD(fresh, (pb) + 16), b3 = SBN512_LANE_LOAD(fresh, (pb) + 24)
#define SBN512_LANE_LOADZ(fresh, k, p) \
    ((fresh) ? _mm512_setzero_pd() : _mm512_maskz_loadu_pd((k), (p)))

SBN512_INLINE void lane_accum(sbn_kdtype dt, const char *x, int64_t step, size_t m, size_t cn,
                              const double *shift, double *ar, double *br, int fresh)
{
    size_t j, t;
    for (j = 0; j + 32 <= cn; j += 32) {
        const __m512d s0 = _mm512_loadu_pd(shift + j), s1 = _mm512_loadu_pd(shift + j + 8);
        const __m512d s2 = _mm512_loadu_pd(shift + j + 16), s3 = _mm512_loadu_pd(shift + j + 24);
        SBN512_LANES32(fresh, ar + j, br + j);
        for (t = 0; t < m; t++) {
            const char *p = x + (int64_t)t * step;
            accum8(&a0, &b0, sbn512_load8(dt, sbn512_at(dt, p, j)), s0);
            accum8(&a1, &b1, sbn512_load8(dt, sbn512_at(dt, p, j + 8)), s1);
            accum8(&a2, &b2, sbn512_load8(dt, sbn512_at(dt, p, j + 16)), s2);
            accum8(&a3, &b3, sbn512_load8(dt, sbn512_at(dt, p, j + 24)), s3);
        }
        _mm512_storeu_pd(ar + j, a0);
        _mm512_storeu_pd(ar + j + 8, a1);
        _mm512_storeu_pd(ar + j + 16, a2);
        _mm512_storeu_pd(ar + j + 24, a3);
        _mm512_storeu_pd(br + j, b0);
        _mm512_storeu_pd(br + j + 8, b1);
        _mm512_storeu_pd(br + j + 16, b2);
        _mm512_storeu_pd(br + j + 24, b3);
    }
    for (; j < cn; j += 8) {
        const __mmask8 k = cn - j >= 8 ? (__mmask8)0xFF : tail_mask(cn - j);
        const __m512d s0 = _mm512_maskz_loadu_pd(k, shift + j);
        __m512d a0 = SBN512_LANE_LOADZ(fresh, k, ar + j), b0 = SBN512_LANE_LOADZ(fresh, k, br + j);
        for (t = 0; t < m; t++)
            accum8(&a0, &b0, sbn512_load8z(dt, sbn512_at(dt, x + (int64_t)t * step, j), k), s0);
        _mm512_mask_storeu_pd(ar + j, k, a0);
        _mm512_mask_storeu_pd(br + j, k, b0);
    }
}

SBN512_INLINE void lane_bwd_accum(sbn_kdtype dt, const char *dy, int64_t dstep, const char *x,
                                  int64_t xstep, size_t m, size_t cn, const double *center,
                                  double *ar, double *br, int fresh)
{
    size_t j, t;
    for (j = 0; j + 32 <= cn; j += 32) {
        const __m512d c0 = _mm512_loadu_pd(center + j), c1 = _mm512_loadu_pd(center + j + 8);
        const __m512d c2 = _mm512_loadu_pd(center + j + 16), c3 = _mm512_loadu_pd(center + j + 24);
        SBN512_LANES32(fresh, ar + j, br + j);
        for (t = 0; t < m; t++) {
            const char *g = dy + (int64_t)t * dstep, *p = x + (int64_t)t * xstep;
            bwd8(&a0, &b0, sbn512_load8(dt, sbn512_at(dt, g, j)),
                 sbn512_load8(dt, sbn512_at(dt, p, j)), c0);
            bwd8(&a1, &b1, sbn512_load8(dt, sbn512_at(dt, g, j + 8)),
                 sbn512_load8(dt, sbn512_at(dt, p, j + 8)), c1);
            bwd8(&a2, &b2, sbn512_load8(dt, sbn512_at(dt, g, j + 16)),
                 sbn512_load8(dt, sbn512_at(dt, p, j + 16)), c2);
            bwd8(&a3, &b3, sbn512_load8(dt, sbn512_at(dt, g, j + 24)),
                 sbn512_load8(dt, sbn512_at(dt, p, j + 24)), c3);
        }
        _mm512_storeu_pd(ar + j, a0);
        _mm512_storeu_pd(ar + j + 8, a1);
        _mm512_storeu_pd(ar + j + 16, a2);
        _mm512_storeu_pd(ar + j + 24, a3);
        _mm512_storeu_pd(br + j, b0);
        _mm512_storeu_pd(br + j + 8, b1);
        _mm512_storeu_pd(br + j + 16, b2);
        _mm512_storeu_pd(br + j + 24, b3);
    }
    for (; j < cn; j += 8) {
        const __mmask8 k = cn - j >= 8 ? (__mmask8)0xFF : tail_mask(cn - j);
        const __m512d c0 = _mm512_maskz_loadu_pd(k, center + j);
        __m512d a0 = SBN512_LANE_LOADZ(fresh, k, ar + j), b0 = SBN512_LANE_LOADZ(fresh, k, br + j);
        for (t = 0; t < m; t++)
            bwd8(&a0, &b0, sbn512_load8z(dt, sbn512_at(dt, dy + (int64_t)t * dstep, j), k),
                 sbn512_load8z(dt, sbn512_at(dt, x + (int64_t)t * xstep, j), k), c0);
        _mm512_mask_storeu_pd(ar + j, k, a0);
        _mm512_mask_storeu_pd(br + j, k, b0);
    }
}

/*
 * The channels past the last whole 32 of a row (fewer than 32: every channel of a
 * narrow row) four lanes at a time: rows q..q+3 of each 16 side by side (adjacent in
 * memory), each lane with its own accumulators. One lane at a time, a group of eight
 * channels has two addition chains in flight, each adding a row only once the last has
 * left the FMA pipeline; four lanes give eight (bench_ops 16384x16 and 32x3x224x224
 * NHWC). Each lane still adds its rows in increasing order, so the bits do not change.
 */
SBN512_INLINE void lanes4_accum(sbn_kdtype dt, const char *x, int64_t row, int64_t step,
                                size_t m, size_t cn, const double *shift, double *const *ar,
                                double *const *br, int fresh)
{
    size_t j, t;
    int i;
    for (j = 0; j < cn; j += 8) {
        const __mmask8 k = cn - j >= 8 ? (__mmask8)0xFF : tail_mask(cn - j);
        const __m512d s0 = _mm512_maskz_loadu_pd(k, shift + j);
        __m512d a[4], b[4];
        for (i = 0; i < 4; i++) {
            a[i] = SBN512_LANE_LOADZ(fresh, k, ar[i] + j);
            b[i] = SBN512_LANE_LOADZ(fresh, k, br[i] + j);
        }
        for (t = 0; t < m; t++)
            for (i = 0; i < 4; i++)
                accum8(&a[i], &b[i],
                       sbn512_load8z(dt, sbn512_at(dt, x + (int64_t)t * step + i * row, j), k),
                       s0);
        for (i = 0; i < 4; i++) {
            _mm512_mask_storeu_pd(ar[i] + j, k, a[i]);
            _mm512_mask_storeu_pd(br[i] + j, k, b[i]);
        }
    }
}

SBN512_INLINE void lanes4_bwd_accum(sbn_kdtype dt, const char *dy, int64_t drow, int64_t dstep,
                                    const char *x, int64_t xrow, int64_t xstep, size_t m,
                                    size_t cn, const double *center, double *const *ar,
                                    double *const *br, int fresh)
{
    size_t j, t;
    int i;
    for (j = 0; j < cn; j += 8) {
        const __mmask8 k = cn - j >= 8 ? (__mmask8)0xFF : tail_mask(cn - j);
        const __m512d c0 = _mm512_maskz_loadu_pd(k, center + j);
        __m512d a[4], b[4];
        for (i = 0; i < 4; i++) {
            a[i] = SBN512_LANE_LOADZ(fresh, k, ar[i] + j);
            b[i] = SBN512_LANE_LOADZ(fresh, k, br[i] + j);
        }
        for (t = 0; t < m; t++)
            for (i = 0; i < 4; i++)
                bwd8(&a[i], &b[i],
                     sbn512_load8z(dt, sbn512_at(dt, dy + (int64_t)t * dstep + i * drow, j), k),
                     sbn512_load8z(dt, sbn512_at(dt, x + (int64_t)t * xstep + i * xrow, j), k),
                     c0);
        for (i = 0; i < 4; i++) {
            _mm512_mask_storeu_pd(ar[i] + j, k, a[i]);
            _mm512_mask_storeu_pd(br[i] + j, k, b[i]);
        }
    }
}

/* Rows go in blocks (a multiple of 16 rows); within a block, lane (lane + q) % 16 takes
 * rows q, q + 16, ... of the block in order, so every lane still adds its rows in
 * increasing order. No row is read twice; the block sets how many rows a lane adds per
 * load and store of its accumulators (block / 16) and how many rows (of each tensor)
 * are read side by side: 8 streams suit the hardware prefetchers. The forward reads
 * x alone and takes 128 rows, 8 streams (256 gains nothing at 64 channels and loses
 * on wider rows); the backward reads dy and x, so 64 rows make its 8 streams
 * (bench_kernels row reductions from DRAM). */
#define ROW_BLOCK 128
#define ROW_BLOCK_BWD 64
#define ROW_BLOCK_NARROW 512

/*
 * Prefetch (to L2) for rows read from memory: a block's rows are read a lane at a
 * time, 16 rows apart, an order the hardware prefetchers follow poorly when rows are
 * short. While lane q of a block is added, the slices of lane q's share of rows of
 * the next block (rows q * block / 16 onwards) are prefetched, so the next block
 * arrives in memory order. Only for slices of at most ROW_PREFETCH_BYTES: on longer
 * rows the hardware prefetchers already keep up and the extra instructions only
 * cost; on data in cache they only cost too (the reason only the _pf entry points,
 * for tensors beyond the last-level cache, prefetch).
 */
#define ROW_PREFETCH_BYTES 256

SBN512_INLINE void row_prefetch(sbn_kdtype dt, const void *x, int64_t xs, size_t first,
                                size_t end, size_t cn)
{
    size_t u;
    for (u = first; u < end; u++) {
        const char *p = row_at(dt, x, xs, u);
        uintptr_t o = (uintptr_t)p & ~(uintptr_t)63, stop = (uintptr_t)p + cn * sbn512_esize(dt);
        for (; o < stop; o += 64) _mm_prefetch((const char *)o, _MM_HINT_T1);
    }
}

/* Prefetches lane q's share of the block after the one at r (rows below `rows` only). */
SBN512_INLINE void prefetch_next(sbn_kdtype dt, const void *x, int64_t xs, size_t rows,
                                 size_t cn, size_t block, size_t r, size_t q)
{
    size_t first = r + block + q * (block / SBN_LANES);
    size_t end = first + block / SBN_LANES;
    if (end > rows) end = rows;
    if (first < end) row_prefetch(dt, x, xs, first, end, cn);
}

/* The number of rows of a block of nb rows that fall to offset q < 16. */
static inline size_t lane_rows(size_t nb, size_t q)
{
    return (nb - q + SBN_LANES - 1) / SBN_LANES;
}

SBN512_INLINE void row_accum(sbn_kdtype dt, const void *x, int64_t xs, size_t rows, size_t cn,
                             unsigned lane, const double *shift, double *a, double *b,
                             size_t ld, int prefetch, int fresh)
{
    const int64_t row = xs * (int64_t)sbn512_esize(dt), step = SBN_LANES * row;
    const size_t whole = cn / 32 * 32; /* channels in whole blocks of 32 */
    const size_t block = whole ? ROW_BLOCK : ROW_BLOCK_NARROW;
    size_t r, q;
    if (cn == 0) return;
    prefetch = prefetch && cn * sbn512_esize(dt) <= ROW_PREFETCH_BYTES;
    for (r = 0; r < rows; r += block) {
        size_t nb = rows - r < block ? rows - r : block;
        int first = fresh && r == 0; /* the block that reaches each lane first */
        for (q = 0; q < SBN_LANES && q < nb; q++) {
            size_t l = (lane + r + q) % SBN_LANES;
            if (prefetch) prefetch_next(dt, x, xs, rows, cn, block, r, q);
            if (whole)
                lane_accum(dt, row_at(dt, x, xs, r + q), step, lane_rows(nb, q), whole, shift,
                           a + l * ld, b + l * ld, first);
        }
        for (q = 0; whole < cn && q < SBN_LANES && q < nb; q += 4) {
            double *ar[4], *br[4];
            size_t i, n4 = q + 4 <= nb && lane_rows(nb, q + 3) == lane_rows(nb, q) ? 4 : 1;
            for (i = 0; i < 4; i++) {
                size_t l = (lane + r + q + i) % SBN_LANES;
                ar[i] = a + l * ld + whole;
                br[i] = b + l * ld + whole;
            }
            if (n4 == 4)
                lanes4_accum(dt, sbn512_at(dt, row_at(dt, x, xs, r + q), whole), row, step,
                             lane_rows(nb, q), cn - whole, shift + whole, ar, br, first);
            else
                for (i = 0; i < 4 && q + i < nb; i++)
                    lane_accum(dt, sbn512_at(dt, row_at(dt, x, xs, r + q + i), whole), step,
                               lane_rows(nb, q + i), cn - whole, shift + whole, ar[i], br[i],
                               first);
        }
    }
}

SBN512_INLINE void row_bwd_accum(sbn_kdtype dt, const void *dy, int64_t dys, const void *x,
                                 int64_t xs, size_t rows, size_t cn, unsigned lane,
                                 const double *center, double *a, double *b, size_t ld,
                                 int prefetch, int fresh)
{
    const int64_t drow = dys * (int64_t)sbn512_esize(dt), dstep = SBN_LANES * drow;
    const int64_t xrow = xs * (int64_t)sbn512_esize(dt), xstep = SBN_LANES * xrow;
    const size_t whole = cn / 32 * 32; /* channels in whole blocks of 32 */
    const size_t block = whole ? ROW_BLOCK_BWD : ROW_BLOCK_NARROW;
    size_t r, q;
    if (cn == 0) return;
    prefetch = prefetch && cn * sbn512_esize(dt) <= ROW_PREFETCH_BYTES;
    for (r = 0; r < rows; r += block) {
        size_t nb = rows - r < block ? rows - r : block;
        int first = fresh && r == 0; /* the block that reaches each lane first */
        for (q = 0; q < SBN_LANES && q < nb; q++) {
            size_t l = (lane + r + q) % SBN_LANES;
            if (prefetch) {
                prefetch_next(dt, dy, dys, rows, cn, block, r, q);
                prefetch_next(dt, x, xs, rows, cn, block, r, q);
            }
            if (whole)
                lane_bwd_accum(dt, row_at(dt, dy, dys, r + q), dstep, row_at(dt, x, xs, r + q),
                               xstep, lane_rows(nb, q), whole, center, a + l * ld, b + l * ld,
                               first);
        }
        for (q = 0; whole < cn && q < SBN_LANES && q < nb; q += 4) {
            double *ar[4], *br[4];
            size_t i, n4 = q + 4 <= nb && lane_rows(nb, q + 3) == lane_rows(nb, q) ? 4 : 1;
            for (i = 0; i < 4; i++) {
                size_t l = (lane + r + q + i) % SBN_LANES;
                ar[i] = a + l * ld + whole;
                br[i] = b + l * ld + whole;
            }
            if (n4 == 4)
                lanes4_bwd_accum(dt, sbn512_at(dt, row_at(dt, dy, dys, r + q), whole), drow, dstep,
                                 sbn512_at(dt, row_at(dt, x, xs, r + q), whole), xrow, xstep,
                                 lane_rows(nb, q), cn - whole, center + whole, ar, br, first);
            else
                for (i = 0; i < 4 && q + i < nb; i++)
                    lane_bwd_accum(dt, sbn512_at(dt, row_at(dt, dy, dys, r + q + i), whole),
                                   dstep, sbn512_at(dt, row_at(dt, x, xs, r + q + i), whole),
                                   xstep, lane_rows(nb, q + i), cn - whole, center + whole,
                                   ar[i], br[i], first);
        }
    }
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

/* ---- the entry points: one per family and element type, the row and planes reductions
 * twice (_pf: for data beyond the cache) ---- */

#define SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, isa, prefetch)                                  \
    void sbn_##dt##_row_accum_ukernel__##isa(const void *x, int64_t xs, size_t rows, size_t cn, \
                                             unsigned lane, const double *shift, double *a,    \
                                             double *b, size_t ld, int fresh)                  \
    {                                                                                          \
        row_accum(kd, x, xs, rows, cn, lane, shift, a, b, ld, prefetch, fresh);                \
    }                                                                                          \
    void sbn_##dt##_row_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 unsigned lane, const double *center,          \
                                                 double *a, double *b, size_t ld, int fresh)   \
    {                                                                                          \
        row_bwd_accum(kd, dy, dys, x, xs, rows, cn, lane, center, a, b, ld, prefetch, fresh);  \
    }                                                                                          \
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
    SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, avx512, 0)                                            \
    SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, avx512_pf, 1)

SBN_DEFINE_STREAM_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_STREAM_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_STREAM_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_STREAM_AVX512(bf16, SBN_KD_BF16)
