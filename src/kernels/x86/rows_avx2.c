/*
 * rows_avx2.c - the row reductions of kernels.h (row_accum, row_bwd_accum) for AVX2
 * (+FMA, F16C), twice (avx2_pf, for tensors beyond the cache, also prefetches the next
 * block of short rows), in the canonical order of stream_scalar.c: row r of a channels-last
 * (or (N, C)) tensor adds to row l = (lane + r) % 16 of the lane-major accumulators
 * (a[l * ld + j], b[l * ld + j]), vectorised across channels (four doubles per ymm,
 * 16 channels a step). Rows go in the blocks of row_blocks.h: one lane's rows of a
 * block (every 16th) are added while its accumulators sit in registers, loaded and
 * stored once per block, so each lane still takes its rows in order. Adding each row
 * to accumulators in memory instead costs a load and a store of 16 bytes of
 * accumulators per element, which bounds an L1-resident reduction at several times
 * the reference kernels' float lanes (bench_kernels row_accum64). A row's 16 channels
 * are loaded eight at a time, each half just before its steps: eight accumulators and
 * four centers leave four ymm for elements, and with all of a row's x and dy loaded
 * first GCC kept accumulators on the stack (a store and reload in their chains). The
 * channels past the last whole 16 (all of a row narrower than 16) go four lanes at a
 * time, 4 channels a ymm, the last 1..3 through the low lanes of one ymm (partial
 * loads of io_avx2.h, masked loads and stores of the accumulators). Only a[l * ld + j],
 * b[l * ld + j] with j < cn are read or written. Per element, in double, each
 * operation rounded once (b's product and add one fused multiply-add, as C's fma):
 *   row_accum:      d = x - shift;  a += d;   b = fma(d, d, b)
 *   row_bwd_accum:  a += dy;        b = fma(dy, x - center, b)
 */
#include <stdint.h>

#include "kernels/row_blocks.h"
#include "kernels/x86/io_avx2.h"
#include "kernels/x86/kernel_inline.h"

#define AVX2R_INLINE SBN_KERNEL_INLINE

/* ---- element access by a dtype that is a constant in each inlined copy ---- */

/* Row r of a tensor of dt with row stride rs elements, from channel j. */
AVX2R_INLINE const char *row_at(sbn_kdtype dt, const void *p, int64_t rs, size_t r, size_t j)
{
    return (const char *)p + ((int64_t)r * rs + (int64_t)j) * (int64_t)avx2_esize(dt);
}

/* Eight elements at p as two ymm (v[0]: elements 0-3). */
AVX2R_INLINE void ld8(sbn_kdtype dt, const char *p, __m256d v[2])
{
    switch (dt) {
    case SBN_KD_F64:
        avx2_ld8_f64(p, 0, &v[0], &v[1]);
        break;
    case SBN_KD_F32:
        avx2_ld8_f32(p, 0, &v[0], &v[1]);
        break;
    case SBN_KD_F16:
        avx2_ld8_f16(p, 0, &v[0], &v[1]);
        break;
    default:
        avx2_ld8_bf16(p, 0, &v[0], &v[1]);
        break;
    }
}

/* One ymm of four channels into a, b: the forward's x (v) or the backward's dy (g), x. */
AVX2R_INLINE void step4(int bwd, __m256d *a, __m256d *b, __m256d g, __m256d v, __m256d c)
{
    if (bwd) {
        *a = _mm256_add_pd(*a, g);
        *b = _mm256_fmadd_pd(g, _mm256_sub_pd(v, c), *b);
    } else {
        const __m256d d = _mm256_sub_pd(v, c);
        *a = _mm256_add_pd(*a, d);
        *b = _mm256_fmadd_pd(d, d, *b);
    }
}

/* Accumulators of t <= 4 channels at p: +0.0 unread when `fresh`, else loaded. */
AVX2R_INLINE __m256d acc_load(const double *p, size_t t, int fresh)
{
    return fresh ? _mm256_setzero_pd() : avx2_ldm_pd(p, t);
}

/* ---- one lane's rows, 16 channels a step ---- */

/* Adds m rows of one lane (x, x + xstep, ... in bytes; dy likewise) to its accumulators
 * ar[0..cn), br[0..cn), cn a multiple of 16, in row order: each group of 16 channels is
 * loaded once (or, `fresh`, starts at +0.0 unread), takes the m rows, and is stored
 * once. bwd and dt are constants in each inlined copy; dy is read only with bwd. */
AVX2R_INLINE void lane_rows16(sbn_kdtype dt, int bwd, const char *dy, int64_t dstep,
                              const char *x, int64_t xstep, size_t m, size_t cn,
                              const double *c, double *ar, double *br, int fresh)
{
    const int64_t es = (int64_t)avx2_esize(dt);
    size_t j, t;
    int k;
    for (j = 0; j < cn; j += 16) {
        __m256d a[4], b[4], cv[4];
        for (k = 0; k < 4; k++) {
            cv[k] = _mm256_loadu_pd(c + j + 4 * k);
            a[k] = acc_load(ar + j + 4 * k, 4, fresh);
            b[k] = acc_load(br + j + 4 * k, 4, fresh);
        }
        for (t = 0; t < m; t++) {
            const char *xt = x + (int64_t)t * xstep + (int64_t)j * es;
            const char *gt = bwd ? dy + (int64_t)t * dstep + (int64_t)j * es : NULL;
            for (k = 0; k < 4; k += 2) {
                __m256d v[2], g[2];
                ld8(dt, xt + 4 * k * es, v);
                if (bwd)
                    ld8(dt, gt + 4 * k * es, g);
                else
                    g[0] = g[1] = v[0];
                step4(bwd, &a[k], &b[k], g[0], v[0], cv[k]);
                step4(bwd, &a[k + 1], &b[k + 1], g[1], v[1], cv[k + 1]);
            }
        }
        for (k = 0; k < 4; k++) {
            _mm256_storeu_pd(ar + j + 4 * k, a[k]);
            _mm256_storeu_pd(br + j + 4 * k, b[k]);
        }
    }
}

/* ---- the channels past the last whole 16: nl (1 or 4) lanes at a time ---- */

/*
 * Lanes i < nl take rows i, i + 16, ... (m each) from x and dy (rows xrow / drow bytes
 * apart, 16 rows xstep / dstep apart), channels [0, cn) with cn < 16, into ar[i],
 * br[i]. One lane at a time, a group of four channels would have one addition chain
 * per sum in flight, each row waiting for the last to leave the pipeline; four lanes
 * give four (rows q..q+3 of each 16 are adjacent in memory). Each lane still adds its
 * rows in increasing order, so the bits do not change.
 */
AVX2R_INLINE void lanes_rest(sbn_kdtype dt, int bwd, const char *dy, int64_t drow,
                             int64_t dstep, const char *x, int64_t xrow, int64_t xstep,
                             int nl, size_t m, size_t cn, const double *c, double *const *ar,
                             double *const *br, int fresh)
{
    const int64_t es = (int64_t)avx2_esize(dt);
    size_t j, t;
    int i;
    for (j = 0; j < cn; j += 4) {
        const size_t w = cn - j < 4 ? cn - j : 4;
        const __m256d cv = w == 4 ? _mm256_loadu_pd(c + j) : avx2_ldp_f64(c, (int64_t)j, w);
        __m256d a[4], b[4];
        for (i = 0; i < nl; i++) {
            a[i] = acc_load(ar[i] + j, w, fresh);
            b[i] = acc_load(br[i] + j, w, fresh);
        }
        for (t = 0; t < m; t++)
            for (i = 0; i < nl; i++) {
                const int64_t o = (int64_t)t * xstep + i * xrow + (int64_t)j * es;
                const __m256d v = avx2_ld4_kd(dt, x + o, w);
                __m256d g = v;
                if (bwd)
                    g = avx2_ld4_kd(dt, dy + (int64_t)t * dstep + i * drow + (int64_t)j * es, w);
                step4(bwd, &a[i], &b[i], g, v, cv);
            }
        for (i = 0; i < nl; i++) {
            avx2_stm_pd(ar[i] + j, w, a[i]);
            avx2_stm_pd(br[i] + j, w, b[i]);
        }
    }
}

/*
 * Prefetch of the next block for rows read from memory (row_blocks.h; a row of 64 bf16
 * channels is two lines, and a lane's next row is 2 KiB further). Only rows of at least
 * 16 channels and at most ROW_PREFETCH_BYTES: from 256 bytes a lane's next row is 4 KiB
 * further, a page, and the hardware prefetchers keep up as well as the prefetches do;
 * rows narrower than 16 channels go four adjacent rows a step, close to memory order,
 * where the prefetches only cost. So do they on data in cache, hence only the avx2_pf
 * entry points, for tensors beyond the last-level cache, prefetch.
 */
#define ROW_PREFETCH_BYTES 192

/* row_accum (bwd 0: dy unused, c the shifts) and row_bwd_accum (bwd 1: c the centers);
 * prefetch: the next block's rows, when they are short (the avx2_pf entry points). */
AVX2R_INLINE void rows_accum(sbn_kdtype dt, int bwd, const void *dy, int64_t dys, const void *x,
                             int64_t xs, size_t rows, size_t cn, unsigned lane, const double *c,
                             double *a, double *b, size_t ld, int prefetch, int fresh)
{
    const int64_t drow = dys * (int64_t)avx2_esize(dt), dstep = SBN_LANES * drow;
    const int64_t xrow = xs * (int64_t)avx2_esize(dt), xstep = SBN_LANES * xrow;
    const size_t whole = cn / 16 * 16; /* channels in whole groups of 16 */
    const size_t block = sbn__row_block(bwd, !whole); /* row_blocks.h */
    const size_t rb = cn * avx2_esize(dt); /* bytes of a row's channels */
    size_t r, q;
    if (cn == 0) return;
    prefetch = prefetch && whole && rb <= ROW_PREFETCH_BYTES;
    for (r = 0; r < rows; r += block) {
        const size_t nb = rows - r < block ? rows - r : block;
        const int first = fresh && r == 0; /* the block that reaches each lane first */
        for (q = 0; whole && q < SBN_LANES && q < nb; q++) {
            const size_t l = (lane + r + q) % SBN_LANES;
            if (prefetch && bwd) sbn__prefetch_next_block(dy, drow, rb, rows, block, r, q);
            if (prefetch) sbn__prefetch_next_block(x, xrow, rb, rows, block, r, q);
            lane_rows16(dt, bwd, bwd ? row_at(dt, dy, dys, r + q, 0) : NULL, dstep,
                        row_at(dt, x, xs, r + q, 0), xstep, sbn__lane_rows(nb, q), whole, c,
                        a + l * ld, b + l * ld, first);
        }
        for (q = 0; whole < cn && q < SBN_LANES && q < nb; q += 4) {
            double *ar[4], *br[4];
            const int four = q + 4 <= nb && sbn__lane_rows(nb, q + 3) == sbn__lane_rows(nb, q);
            size_t i;
            for (i = 0; i < 4; i++) {
                const size_t l = (lane + r + q + i) % SBN_LANES;
                ar[i] = a + l * ld + whole;
                br[i] = b + l * ld + whole;
            }
            if (four)
                lanes_rest(dt, bwd, bwd ? row_at(dt, dy, dys, r + q, whole) : NULL, drow, dstep,
                           row_at(dt, x, xs, r + q, whole), xrow, xstep, 4, sbn__lane_rows(nb, q),
                           cn - whole, c + whole, ar, br, first);
            else
                for (i = 0; i < 4 && q + i < nb; i++)
                    lanes_rest(dt, bwd, bwd ? row_at(dt, dy, dys, r + q + i, whole) : NULL, drow,
                               dstep, row_at(dt, x, xs, r + q + i, whole), xrow, xstep, 1,
                               sbn__lane_rows(nb, q + i), cn - whole, c + whole, ar + i, br + i,
                               first);
        }
    }
}

/* ---- the entry points: one per family and element type, twice (avx2_pf: for data
 * beyond the cache) ---- */

#define SBN_DEFINE_ROWS_AVX2(dt, kd, isa, prefetch)                                             \
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
#define SBN_DEFINE_ROWS_AVX2_BOTH(dt, kd)        \
    SBN_DEFINE_ROWS_AVX2(dt, kd, avx2, 0)        \
    SBN_DEFINE_ROWS_AVX2(dt, kd, avx2_pf, 1)

SBN_DEFINE_ROWS_AVX2_BOTH(f64, SBN_KD_F64)
SBN_DEFINE_ROWS_AVX2_BOTH(f32, SBN_KD_F32)
SBN_DEFINE_ROWS_AVX2_BOTH(f16, SBN_KD_F16)
SBN_DEFINE_ROWS_AVX2_BOTH(bf16, SBN_KD_BF16)
