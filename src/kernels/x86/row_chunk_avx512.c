/*
 * row_chunk_avx512.c - the row_chunk kernels of kernels.h for AVX-512: a whole chunk
 * of channels-last rows reduced and folded with its lanes in registers, one cache line
 * of channels (a group: one, two or four zmm) at a time. Lane k takes rows k, k + 16, ...
 * from +0.0 (accum8 / bwd8, the row kernels' operations), and the fold's additions
 *   P8[k] = L[k] + L[k + 8],  P4[k] = P8[k] + P8[k + 4],  P2[k] = P4[k] + P4[k + 2],
 *   A = P2[0] + P2[1]
 * are taken depth first (fold8, fold4, fold2 below), so a few partial sums are live at
 * a time where 16 lanes x 2 sums of a group would not fit the 32 registers.
 * A lane no row reaches is +0.0 and leaves every sum it is added to unchanged (kernels.h,
 * fold_rows), so the bits are those of row_accum with fresh lanes followed by fold_rows.
 * Nothing is stored but A and B: for a chunk of 32 rows of 4096 channels that saves
 * 1 MiB of lane stores and the fold's reloads of them. Each kernel comes twice: as is,
 * and (suffix avx512_pf, the tables beyond the cache) prefetching its rows.
 */
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/x86/io_avx512.h"

/* A group: the channels of one cache line of row 0 (and, rows being a multiple of 64 bytes
 * apart in the shapes where it matters, of every row), as w zmm of eight channels, zmm i
 * at channel g0 + 8 i; channels outside [0, cn) are masked off and never read. x (dy) is
 * channel g0 of row 0, rows xs (dys) bytes apart; s the shifts (centers). */
#define GROUP_ZMM 4
typedef struct group {
    sbn_kdtype dt;
    int bwd, prefetch;
    const char *x, *dy;
    int64_t xs, dys;
    size_t n;
    __mmask8 m[GROUP_ZMM];
    __m512d s[GROUP_ZMM];
} group;

SBN512_INLINE void add_w(int w, __m512d *a, __m512d *b, const __m512d *a1, const __m512d *b1)
{
    int i;
    for (i = 0; i < w; i++) {
        a[i] = _mm512_add_pd(a[i], a1[i]);
        b[i] = _mm512_add_pd(b[i], b1[i]);
    }
}

/*
 * The prefetching variants (the tables beyond the cache, for chunks whose rows the L2
 * does not hold: plan.c, sbn__plan_row_chunk_prefetch) ask for row r's lines of the group
 * SBN_CHUNK_PREFETCH_GROUPS groups ahead as they read row r's lines of this one. A group
 * walks down a column of lines, one stream per row and tensor, more streams than the
 * hardware prefetchers follow, whose lines would otherwise each wait for the L3 or
 * memory. Two groups ahead is a few hundred bytes a row, asked for a group's walk
 * (hundreds of nanoseconds) before it is read; into the L2 (T1), as the L1's few ways
 * of the column's sets (rows_alias below) would drop them before use.
 */
#define SBN_CHUNK_PREFETCH_GROUPS 2
SBN512_INLINE void prefetch_row(const group *g, int w, size_t r)
{
    const int64_t es = (int64_t)sbn512_esize(g->dt);
    const int64_t ahead = SBN_CHUNK_PREFETCH_GROUPS * 8 * w * es;
    int64_t line;
    for (line = 0; line < 8 * w * es; line += 64) {
        _mm_prefetch(g->x + (int64_t)r * g->xs + ahead + line, _MM_HINT_T1);
        if (g->bwd) _mm_prefetch(g->dy + (int64_t)r * g->dys + ahead + line, _MM_HINT_T1);
    }
}

/* L[k]: lane k's two sums over rows k, k + 16, ... in order, from +0.0. */
SBN512_INLINE void lane_sums(const group *g, int w, size_t k, __m512d *a, __m512d *b)
{
    const int64_t es = (int64_t)sbn512_esize(g->dt);
    size_t r;
    int i;
    for (i = 0; i < w; i++) a[i] = b[i] = _mm512_setzero_pd();
    for (r = k; r < g->n; r += SBN_LANES) {
        if (g->prefetch) prefetch_row(g, w, r);
        for (i = 0; i < w; i++) {
            const char *p = g->x + (int64_t)r * g->xs + 8 * i * es;
            __m512d v = sbn512_load8z(g->dt, p, g->m[i]);
            if (g->bwd)
                bwd8(&a[i], &b[i],
                     sbn512_load8z(g->dt, g->dy + (int64_t)r * g->dys + 8 * i * es, g->m[i]), v,
                     g->s[i]);
            else
                accum8(&a[i], &b[i], v, g->s[i]);
        }
    }
}

/* P8[k] = L[k] + L[k + 8], k < 8. A partial sum whose first lane no row reaches (lane
 * j >= n) is +0.0 in every element, and adding +0.0 changes no sum a lane holds (the file's
 * comment), so the addition is skipped: with 8 rows half of the fold's additions would
 * otherwise add zeros. */
SBN512_INLINE void fold8(const group *g, int w, size_t k, __m512d *a, __m512d *b)
{
    __m512d a1[GROUP_ZMM], b1[GROUP_ZMM];
    lane_sums(g, w, k, a, b);
    if (k + 8 >= g->n) return;
    lane_sums(g, w, k + 8, a1, b1);
    add_w(w, a, b, a1, b1);
}

/* P4[k] = P8[k] + P8[k + 4], k < 4. */
SBN512_INLINE void fold4(const group *g, int w, size_t k, __m512d *a, __m512d *b)
{
    __m512d a1[GROUP_ZMM], b1[GROUP_ZMM];
    fold8(g, w, k, a, b);
    if (k + 4 >= g->n) return;
    fold8(g, w, k + 4, a1, b1);
    add_w(w, a, b, a1, b1);
}

/* P2[k] = P4[k] + P4[k + 2], k < 2. */
SBN512_INLINE void fold2(const group *g, int w, size_t k, __m512d *a, __m512d *b)
{
    __m512d a1[GROUP_ZMM], b1[GROUP_ZMM];
    fold4(g, w, k, a, b);
    if (k + 2 >= g->n) return;
    fold4(g, w, k + 2, a1, b1);
    add_w(w, a, b, a1, b1);
}

/* Mask of the channels c0 .. c0 + 7 that lie in [0, cn): bits [lo, hi). */
static inline __mmask8 group_mask(int64_t c0, size_t cn)
{
    int64_t lo = c0 < 0 ? -c0 : 0, hi = (int64_t)cn - c0;
    if (hi > 8) hi = 8;
    if (hi <= lo) return 0;
    return (__mmask8)((0xffu >> (8 - (hi - lo))) << lo);
}

/* w zmm a group: one or two cache lines of the element type (eight fp64, 16 fp32, 32
 * fp16/bf16 a line; rows_alias below). A group of one zmm would share each line with its
 * neighbours, and with rows a multiple
 * of 4 KiB apart (power-of-two channel counts) a chunk's rows fall in one L1 set: the
 * line is gone from the L1 when the neighbour needs it, and every group reads it again
 * from the L2 (bench_ops 32x4096 against 32x4000). Wider groups spill a few partial sums
 * to the stack instead, which the L1 holds. */
SBN512_INLINE void row_chunk(sbn_kdtype dt, int w, int bwd, int prefetch, const void *dy,
                             int64_t dys, const void *x, int64_t xs, size_t n, size_t cn,
                             const double *s, double *a, double *b)
{
    const int64_t es = (int64_t)sbn512_esize(dt), per = 8 * w;
    int64_t g0 = -(int64_t)(((uintptr_t)x % 64) / (uintptr_t)es); /* line-aligned groups */
    for (; g0 < (int64_t)cn; g0 += per) {
        group g;
        __m512d va[GROUP_ZMM], vb[GROUP_ZMM], va1[GROUP_ZMM], vb1[GROUP_ZMM];
        int i;
        g.dt = dt, g.bwd = bwd, g.prefetch = prefetch, g.n = n;
        g.x = (const char *)x + g0 * es, g.xs = xs * es;
        g.dy = bwd ? (const char *)dy + g0 * es : NULL, g.dys = dys * es;
        for (i = 0; i < w; i++) {
            g.m[i] = group_mask(g0 + 8 * i, cn);
            g.s[i] = _mm512_maskz_loadu_pd(g.m[i], s + g0 + 8 * i);
        }
        fold2(&g, w, 0, va, vb); /* A, B = P2[0] + P2[1] */
        if (n > 1) {
            fold2(&g, w, 1, va1, vb1);
            add_w(w, va, vb, va1, vb1);
        }
        for (i = 0; i < w; i++) {
            _mm512_mask_storeu_pd(a + g0 + 8 * i, g.m[i], va[i]);
            _mm512_mask_storeu_pd(b + g0 + 8 * i, g.m[i], vb[i]);
        }
    }
}

/* zmm a group: one cache line of the element type. */
#define SBN_CHUNK_ZMM(kd) ((kd) == SBN_KD_F64 ? 1 : (kd) == SBN_KD_F32 ? 2 : 4)
/*
 * Rows a multiple of SBN_ROWS_ALIAS_BYTES apart (power-of-two channel counts: 256 fp32
 * channels and up) fall into at most four of the L1's sets, since an x86 L1d of 32 or 48
 * KiB has 64 sets of 64-byte lines and lines 4 KiB apart share one: a group's column of
 * lines, one a row and tensor, needs far more ways than a set has (32 rows of x and dy
 * are 64 lines for 12 ways), and every group pays for it again. Groups of two lines
 * (fp64, fp32) halve the number of such columns; 2-byte types keep one line, whose
 * partial sums already take 4 zmm a level of the fold, and so do other strides, where a
 * wider group only adds masked lanes at the tail. Same bits: the group width changes
 * which channels a pass takes, not any channel's arithmetic.
 */
#define SBN_ROWS_ALIAS_BYTES 1024
SBN512_INLINE int rows_alias(int bwd, int64_t es, int64_t xs, int64_t dys)
{
    return (xs * es) % SBN_ROWS_ALIAS_BYTES == 0 ||
           (bwd && (dys * es) % SBN_ROWS_ALIAS_BYTES == 0);
}
/* Each kernel with and without prefetch. */
#define SBN_DEFINE_ROW_CHUNK_VARIANT(dt, kd, isa, prefetch)                                     \
    void sbn_##dt##_row_chunk_ukernel__##isa(const void *x, int64_t xs, size_t n, size_t cn,    \
                                             const double *shift, double *a, double *b)        \
    {                                                                                          \
        if (SBN_CHUNK_ZMM(kd) < GROUP_ZMM && rows_alias(0, sbn512_esize(kd), xs, 0))           \
            row_chunk(kd, 2 * SBN_CHUNK_ZMM(kd), 0, prefetch, NULL, 0, x, xs, n, cn, shift, a, \
                      b);                                                                      \
        else                                                                                   \
            row_chunk(kd, SBN_CHUNK_ZMM(kd), 0, prefetch, NULL, 0, x, xs, n, cn, shift, a, b); \
    }                                                                                          \
    void sbn_##dt##_row_bwd_chunk_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t n, size_t cn,              \
                                                 const double *center, double *a, double *b)   \
    {                                                                                          \
        if (SBN_CHUNK_ZMM(kd) < GROUP_ZMM && rows_alias(1, sbn512_esize(kd), xs, dys))         \
            row_chunk(kd, 2 * SBN_CHUNK_ZMM(kd), 1, prefetch, dy, dys, x, xs, n, cn, center, a, \
                      b);                                                                      \
        else                                                                                   \
            row_chunk(kd, SBN_CHUNK_ZMM(kd), 1, prefetch, dy, dys, x, xs, n, cn, center, a, b); \
    }
#define SBN_DEFINE_ROW_CHUNK_AVX512(dt, kd)                                                     \
    SBN_DEFINE_ROW_CHUNK_VARIANT(dt, kd, avx512, 0)                                            \
    SBN_DEFINE_ROW_CHUNK_VARIANT(dt, kd, avx512_pf, 1)

SBN_DEFINE_ROW_CHUNK_AVX512(f64, SBN_KD_F64)
SBN_DEFINE_ROW_CHUNK_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_ROW_CHUNK_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_ROW_CHUNK_AVX512(bf16, SBN_KD_BF16)
