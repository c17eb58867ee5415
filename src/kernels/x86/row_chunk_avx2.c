/*
 * row_chunk_avx2.c - the row_chunk kernels of kernels.h for AVX2 (+FMA, F16C): a whole
 * chunk of channels-last rows reduced and folded with its lanes in registers, a group
 * of channels at a time (w ymm of four channels: a cache line of fp64 or fp32, half a
 * line of fp16 and bf16). Lane k takes rows k, k + 16, ... from +0.0 with the row
 * kernels' operations (rows_avx2.c), and the fold of kernels.h's sbn__fold16,
 *   P8[k] = L[k] + L[k + 8],  P4[k] = P8[k] + P8[k + 4],  P2[k] = P4[k] + P4[k + 2],
 *   A = P2[0] + P2[1],
 * is taken depth first (fold8, fold4, fold2), so that a few partial sums are live at a
 * time; what the 16 registers do not hold the compiler keeps on the stack, in the L1. A
 * lane no row reaches is +0.0, and a lane's sum is never -0.0 (it starts at +0.0, and
 * x + y rounds an exact zero to +0.0), so adding such a lane changes nothing and is
 * skipped. Same bits as row_accum with fresh lanes followed by fold_rows, which store
 * 2 x 16 lanes a channel and read them back, and which the chunks of more than
 * SBN_CHUNK_REGISTER_ROWS rows still take (through the L1, a slice of channels at a
 * time: runs_by_run.h). With up to two rows a lane those stores and loads cost as much
 * as the rows; with more, a lane's several rows share each load and store, while a group
 * here walks its column of lines down every row of x (and dy), and with rows a multiple
 * of 4 KiB apart (power-of-two channel counts) the column falls into one L1 set and is
 * gone before the next group (bench_ops 8x2048, 16x1024, 32x4096 against 64x1024 and
 * 2x2048x7x7 NHWC; the numbers are in docs/performance.md).
 */
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/runs_by_run.h"
#include "kernels/x86/io_avx2.h"
#include "kernels/x86/kernel_inline.h"

#define AVX2C_INLINE SBN_KERNEL_INLINE
#define CHUNK_W 4 /* the most ymm a group takes per sum */
#define SBN_CHUNK_REGISTER_ROWS 32 /* two rows a lane */

/* A group: w ymm of four channels, ymm i at channel g0 + 4 i of row 0 (x, and dy in the
 * backward), rows xs (dys) bytes apart; t[i] of its four channels lie in [0, cn) (4 but
 * in the last group). s: the shifts (centers) of those channels. */
typedef struct chunk_group {
    sbn_kdtype dt;
    int bwd;
    const char *x, *dy;
    int64_t xs, dys;
    size_t n;
    size_t t[CHUNK_W];
    __m256d s[CHUNK_W];
} chunk_group;

/* Four elements at p, or in the last group the first t (the others +0.0, nothing past
 * read; none for t = 0). */
AVX2C_INLINE __m256d load4(sbn_kdtype dt, int full, const char *p, size_t t)
{
    if (full) return avx2_ld4_kd(dt, p, 4);
    return t == 0 ? _mm256_setzero_pd() : avx2_ld4_kd(dt, p, t);
}

/* L[k]: lane k's two sums over rows k, k + 16, ... in order, from +0.0:
 *   forward:  d = x - shift;  a += d;  b = fma(d, d, b)
 *   backward: a += dy;  b = fma(dy, x - center, b) */
AVX2C_INLINE void lane_sums(const chunk_group *g, int w, int full, size_t k, __m256d *a,
                            __m256d *b)
{
    const int64_t es = (int64_t)avx2_esize(g->dt);
    size_t r;
    int i;
    for (i = 0; i < w; i++) a[i] = b[i] = _mm256_setzero_pd();
    for (r = k; r < g->n; r += SBN_LANES)
        for (i = 0; i < w; i++) {
            const __m256d v = load4(g->dt, full, g->x + (int64_t)r * g->xs + 4 * i * es, g->t[i]);
            if (g->bwd) {
                const __m256d d =
                    load4(g->dt, full, g->dy + (int64_t)r * g->dys + 4 * i * es, g->t[i]);
                a[i] = _mm256_add_pd(a[i], d);
                b[i] = _mm256_fmadd_pd(d, _mm256_sub_pd(v, g->s[i]), b[i]);
            } else {
                const __m256d d = _mm256_sub_pd(v, g->s[i]);
                a[i] = _mm256_add_pd(a[i], d);
                b[i] = _mm256_fmadd_pd(d, d, b[i]);
            }
        }
}

AVX2C_INLINE void add_w(int w, __m256d *a, __m256d *b, const __m256d *a1, const __m256d *b1)
{
    int i;
    for (i = 0; i < w; i++) {
        a[i] = _mm256_add_pd(a[i], a1[i]);
        b[i] = _mm256_add_pd(b[i], b1[i]);
    }
}

/* A level of the fold: name(k) = inner(k) + inner(k + step), the second skipped when no
 * row reaches lane k + step (then every lane it adds is +0.0). */
#define SBN_CHUNK_FOLD(name, inner, step)                                                       \
    AVX2C_INLINE void name(const chunk_group *g, int w, int full, size_t k, __m256d *a,        \
                           __m256d *b)                                                         \
    {                                                                                          \
        __m256d a1[CHUNK_W], b1[CHUNK_W];                                                      \
        inner(g, w, full, k, a, b);                                                            \
        if (k + (step) >= g->n) return;                                                        \
        inner(g, w, full, k + (step), a1, b1);                                                 \
        add_w(w, a, b, a1, b1);                                                                \
    }
SBN_CHUNK_FOLD(fold8, lane_sums, 8) /* P8[k] = L[k] + L[k + 8], k < 8 */
SBN_CHUNK_FOLD(fold4, fold8, 4)     /* P4[k] = P8[k] + P8[k + 4], k < 4 */
SBN_CHUNK_FOLD(fold2, fold4, 2)     /* P2[k] = P4[k] + P4[k + 2], k < 2 */

/* One group (full: every t[i] is 4) from its shifts to its A and B. */
AVX2C_INLINE void group_sums(chunk_group *g, int w, int full, const double *s, double *a,
                             double *b)
{
    __m256d va[CHUNK_W], vb[CHUNK_W], va1[CHUNK_W], vb1[CHUNK_W];
    int i;
    for (i = 0; i < w; i++) g->s[i] = avx2_ldm_pd(s + 4 * i, full ? 4 : g->t[i]);
    fold2(g, w, full, 0, va, vb);
    if (g->n > 1) {
        fold2(g, w, full, 1, va1, vb1);
        add_w(w, va, vb, va1, vb1);
    }
    for (i = 0; i < w; i++)
        if (full || g->t[i] > 0) { /* a tail ymm of no channel: past the arrays' end */
            avx2_stm_pd(a + 4 * i, full ? 4 : g->t[i], va[i]);
            avx2_stm_pd(b + 4 * i, full ? 4 : g->t[i], vb[i]);
        }
}

/* A whole chunk of n rows of cn channels, x (dy) rows xs (dys) elements apart, in groups
 * of 4 w channels; the channels past the last whole group as one more, partial. */
AVX2C_INLINE void row_chunk(sbn_kdtype dt, int w, int bwd, const void *dy, int64_t dys,
                            const void *x, int64_t xs, size_t n, size_t cn, const double *s,
                            double *a, double *b)
{
    const int64_t es = (int64_t)avx2_esize(dt);
    const size_t per = 4 * (size_t)w;
    chunk_group g;
    size_t j;
    int i;
    g.dt = dt, g.bwd = bwd, g.n = n, g.xs = xs * es, g.dys = dys * es;
    for (i = 0; i < CHUNK_W; i++) g.t[i] = 4;
    for (j = 0; j + per <= cn; j += per) {
        g.x = (const char *)x + (int64_t)j * es;
        g.dy = bwd ? (const char *)dy + (int64_t)j * es : NULL;
        group_sums(&g, w, 1, s + j, a + j, b + j);
    }
    if (j < cn) {
        for (i = 0; i < w; i++) {
            const size_t lo = j + 4 * (size_t)i;
            g.t[i] = lo >= cn ? 0 : cn - lo < 4 ? cn - lo : 4;
        }
        g.x = (const char *)x + (int64_t)j * es;
        g.dy = bwd ? (const char *)dy + (int64_t)j * es : NULL;
        group_sums(&g, w, 0, s + j, a + j, b + j);
    }
}

/* ymm a group: a cache line of fp64 (2) and fp32 (4); half a line of fp16 and bf16,
 * whose whole line would take 16 ymm of sums a level of the fold. */
#define SBN_CHUNK_YMM(kd) ((kd) == SBN_KD_F64 ? 2 : 4)

#define SBN_DEFINE_ROW_CHUNK_AVX2(dt, kd, size)                                                 \
    SBN_DEFINE_ROW_CHUNK_BY_LANES_AS(dt, avx2, size, static, dt##_chunk_by_lanes,               \
                                     dt##_bwd_chunk_by_lanes)                                   \
    void sbn_##dt##_row_chunk_ukernel__avx2(const void *x, int64_t xs, size_t n, size_t cn,     \
                                            const double *shift, double *a, double *b)         \
    {                                                                                          \
        if (n > SBN_CHUNK_REGISTER_ROWS)                                                       \
            dt##_chunk_by_lanes(x, xs, n, cn, shift, a, b);                                    \
        else                                                                                   \
            row_chunk(kd, SBN_CHUNK_YMM(kd), 0, NULL, 0, x, xs, n, cn, shift, a, b);           \
    }                                                                                          \
    void sbn_##dt##_row_bwd_chunk_ukernel__avx2(const void *dy, int64_t dys, const void *x,     \
                                                int64_t xs, size_t n, size_t cn,               \
                                                const double *center, double *a, double *b)    \
    {                                                                                          \
        if (n > SBN_CHUNK_REGISTER_ROWS)                                                       \
            dt##_bwd_chunk_by_lanes(dy, dys, x, xs, n, cn, center, a, b);                      \
        else                                                                                   \
            row_chunk(kd, SBN_CHUNK_YMM(kd), 1, dy, dys, x, xs, n, cn, center, a, b);          \
    }

SBN_DEFINE_ROW_CHUNK_AVX2(f64, SBN_KD_F64, 8)
SBN_DEFINE_ROW_CHUNK_AVX2(f32, SBN_KD_F32, 4)
SBN_DEFINE_ROW_CHUNK_AVX2(f16, SBN_KD_F16, 2)
SBN_DEFINE_ROW_CHUNK_AVX2(bf16, SBN_KD_BF16, 2)
