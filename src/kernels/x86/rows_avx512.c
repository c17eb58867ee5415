/*
 * rows_avx512.c - the row reductions of kernels.h (row_accum, row_bwd_accum) for
 * AVX-512 (F, BW, VL, DQ) + F16C, in the canonical order of stream_scalar.c: row r
 * of a channels-last (or (N, C)) tensor adds to row l = (lane + r) % 16 of the
 * lane-major accumulators (a[l * ld + j], b[l * ld + j]), vectorised across channels
 * (eight doubles per zmm, 32 channels a step, a masked step for the last cn % 8).
 * Rows go in blocks of 128 (64 in the backward): one lane's rows of a block (every
 * 16th) are added while its accumulators sit in registers, loaded and stored once per
 * block, so each lane still takes its rows in order; the channels past the last whole
 * 32 go four lanes at a time, and rows of fewer than 32 channels in blocks of 512
 * (lanes4_rows). The _pf entry points (for tensors beyond the last-level cache,
 * kernels.h) also prefetch the next block's rows into L2 when a row's slice is short
 * (sbn__prefetch_next_block of row_blocks.h). Only a[l * ld + j], b[l * ld + j] with
 * j < cn are read or written.
 * Per element, in double, each operation rounded once (-ffp-contract=off; b's product
 * and add are one fused multiply-add, as C's fma in the scalar kernels):
 *   row_accum:      d = x - shift;  a += d;   b = fma(d, d, b)
 *   row_bwd_accum:  a += dy;        b = fma(dy, x - center, b)
 */
#include <stdint.h>

#include "kernels/row_blocks.h"
#include "kernels/x86/io_avx512.h"

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
SBN512_INLINE void lanes4_rows(sbn_kdtype dt, int bwd, const char *dy, int64_t drow,
                               int64_t dstep, const char *x, int64_t xrow, int64_t xstep,
                               size_t m, size_t cn, const double *center, double *const *ar,
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
            for (i = 0; i < 4; i++) {
                __m512d v = sbn512_load8z(dt, sbn512_at(dt, x + (int64_t)t * xstep + i * xrow, j),
                                          k);
                if (bwd) /* a constant in each inlined copy */
                    bwd8(&a[i], &b[i],
                         sbn512_load8z(dt, sbn512_at(dt, dy + (int64_t)t * dstep + i * drow, j), k),
                         v, c0);
                else
                    accum8(&a[i], &b[i], v, c0);
            }
        for (i = 0; i < 4; i++) {
            _mm512_mask_storeu_pd(ar[i] + j, k, a[i]);
            _mm512_mask_storeu_pd(br[i] + j, k, b[i]);
        }
    }
}

/*
 * Prefetch of the next block for rows read from memory (row_blocks.h), only for slices
 * of at most ROW_PREFETCH_BYTES: on longer rows the hardware prefetchers already keep up
 * and the extra instructions only cost; on data in cache they only cost too (the reason
 * only the _pf entry points, for tensors beyond the last-level cache, prefetch).
 */
#define ROW_PREFETCH_BYTES 256

/* Lane work on m rows, r0, r0 + 16, ..., from channel j0 on (cn channels), accumulators at
 * ar, br: the forward's (x) or, with bwd, the backward's (dy and x). bwd is a constant in
 * each inlined copy, and dy is touched only when it is set. */
SBN512_INLINE void lane_step(sbn_kdtype dt, int bwd, const void *dy, int64_t dys, const void *x,
                             int64_t xs, size_t r0, size_t j0, size_t m, size_t cn,
                             const double *c, double *ar, double *br, int fresh)
{
    const int64_t es = (int64_t)sbn512_esize(dt);
    const char *p = sbn512_at(dt, row_at(dt, x, xs, r0), j0);
    if (bwd)
        lane_bwd_accum(dt, sbn512_at(dt, row_at(dt, dy, dys, r0), j0), SBN_LANES * dys * es, p,
                       SBN_LANES * xs * es, m, cn, c + j0, ar, br, fresh);
    else
        lane_accum(dt, p, SBN_LANES * xs * es, m, cn, c + j0, ar, br, fresh);
}

/* row_accum (bwd 0: dy unused, c the shifts) and row_bwd_accum (bwd 1: c the centers). */
SBN512_INLINE void rows_accum(sbn_kdtype dt, int bwd, const void *dy, int64_t dys, const void *x,
                              int64_t xs, size_t rows, size_t cn, unsigned lane, const double *c,
                              double *a, double *b, size_t ld, int prefetch, int fresh)
{
    const int64_t drow = dys * (int64_t)sbn512_esize(dt), dstep = SBN_LANES * drow;
    const int64_t xrow = xs * (int64_t)sbn512_esize(dt), xstep = SBN_LANES * xrow;
    const size_t whole = cn / 32 * 32; /* channels in whole blocks of 32 */
    const size_t block = sbn__row_block(bwd, !whole); /* row_blocks.h */
    const size_t rb = cn * sbn512_esize(dt); /* bytes of a row's channels */
    size_t r, q;
    if (cn == 0) return;
    prefetch = prefetch && rb <= ROW_PREFETCH_BYTES;
    for (r = 0; r < rows; r += block) {
        size_t nb = rows - r < block ? rows - r : block;
        int first = fresh && r == 0; /* the block that reaches each lane first */
        for (q = 0; q < SBN_LANES && q < nb; q++) {
            size_t l = (lane + r + q) % SBN_LANES;
            if (prefetch && bwd) sbn__prefetch_next_block(dy, drow, rb, rows, block, r, q);
            if (prefetch) sbn__prefetch_next_block(x, xrow, rb, rows, block, r, q);
            if (whole)
                lane_step(dt, bwd, dy, dys, x, xs, r + q, 0, sbn__lane_rows(nb, q), whole, c,
                          a + l * ld, b + l * ld, first);
        }
        for (q = 0; whole < cn && q < SBN_LANES && q < nb; q += 4) {
            double *ar[4], *br[4];
            const size_t m = sbn__lane_rows(nb, q);
            size_t i, n4 = q + 4 <= nb && sbn__lane_rows(nb, q + 3) == m ? 4 : 1;
            for (i = 0; i < 4; i++) {
                size_t l = (lane + r + q + i) % SBN_LANES;
                ar[i] = a + l * ld + whole;
                br[i] = b + l * ld + whole;
            }
            if (n4 == 4)
                lanes4_rows(dt, bwd,
                            bwd ? sbn512_at(dt, row_at(dt, dy, dys, r + q), whole) : NULL, drow,
                            dstep, sbn512_at(dt, row_at(dt, x, xs, r + q), whole), xrow, xstep,
                            m, cn - whole, c + whole, ar, br, first);
            else
                for (i = 0; i < 4 && q + i < nb; i++)
                    lane_step(dt, bwd, dy, dys, x, xs, r + q + i, whole, sbn__lane_rows(nb, q + i),
                              cn - whole, c, ar[i], br[i], first);
        }
    }
}

/* ---- the entry points: one per family and element type, twice (_pf: for data beyond
 * the cache) ---- */

#define SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, isa, prefetch)                                  \
    void sbn_##dt##_row_accum_ukernel__##isa(const void *x, int64_t xs, size_t rows, size_t cn, \
                                             unsigned lane, const double *shift, double *a,    \
                                             double *b, size_t ld, int fresh)                  \
    {                                                                                          \
        rows_accum(kd, 0, NULL, 0, x, xs, rows, cn, lane, shift, a, b, ld, prefetch, fresh);   \
    }                                                                                          \
    void sbn_##dt##_row_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 unsigned lane, const double *center,          \
                                                 double *a, double *b, size_t ld, int fresh)   \
    {                                                                                          \
        rows_accum(kd, 1, dy, dys, x, xs, rows, cn, lane, center, a, b, ld, prefetch, fresh);  \
    }

#define SBN_DEFINE_ROWS_AVX512(dt, kd)                                                          \
    SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, avx512, 0)                                            \
    SBN_DEFINE_ROW_REDUCE_AVX512(dt, kd, avx512_pf, 1)

SBN_DEFINE_ROWS_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_ROWS_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_ROWS_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_ROWS_AVX512(bf16, SBN_KD_BF16)
