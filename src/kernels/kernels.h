/*
 * kernels.h - the micro-kernels under the channel reductions and maps, and the
 * table that picks one variant of each per process (scalar, AVX2, AVX-512; see
 * kernels.inc). Names follow sbn_<dtype>_<kernel>_ukernel__<isa>.
 *
 * The canonical order (docs/numerics.md): a chunk's reduction keeps 16 lane
 * accumulators per sum, lane k adding the chunk's elements k, k+16, k+32, ... in
 * increasing index order starting from +0.0, whatever runs or rows they arrive
 * in; the lanes are then folded by halving,
 *   for h in 8, 4, 2, 1:  s[k] = s[k] + s[k+h]  for k < h,
 * and s[0] is the sum. Each operation is rounded once: a sum of squares or
 * products takes each term in one fused multiply-add (C's fma; the vector FMA
 * instructions round the same way), nothing else is contracted (files are compiled
 * with -ffp-contract=off): every variant gives the same bits as the scalar one.
 * Elementwise kernels compute each element with the same operations in the same
 * order as the scalar code (fp64 in double; fp32/fp16/bf16 in float with the
 * explicit fused multiply-adds below), so they match bit for bit too.
 */
#ifndef SBN_KERNELS_H
#define SBN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define SBN_LANES 16

/* Exact widening of n contiguous elements to double. */
typedef void (*sbn_load_fn)(const void *src, size_t n, double *dst);
/* Narrowing of n doubles to contiguous elements, correctly rounded (to nearest, ties to even). */
typedef void (*sbn_store_fn)(const double *src, size_t n, void *dst);

/*
 * The element types the streaming kernels below come in, as table indices. Every
 * kernel of a family reads (and a map writes) one element type throughout. The
 * reductions widen exactly to double; the maps compute as described below and
 * narrow once.
 */
typedef enum sbn_kdtype { SBN_KD_F64, SBN_KD_F32, SBN_KD_F16, SBN_KD_BF16, SBN_KD_COUNT } sbn_kdtype;

/*
 * Streaming reductions over a run of one channel (x[0..n), contiguous). acc holds
 * 2 x 16 lane accumulators, a = acc[0..15] and b = acc[16..31]; element i goes to
 * lane l = (lane + i) % 16, lanes taking their elements in index order:
 *   accum:      d = x[i] - shift;   a[l] += d;      b[l] = fma(d, d, b[l])
 *   bwd_accum:  a[l] += dy[i];      b[l] = fma(dy[i], x[i] - center, b[l])
 * A chunk's lanes may be fed by several runs; lanes are folded only at the end.
 */
typedef void (*sbn_accum_fn)(const void *x, size_t n, unsigned lane, double shift, double *acc);
typedef void (*sbn_bwd_accum_fn)(const void *dy, const void *x, size_t n, unsigned lane,
                                 double center, double *acc);
/*
 * The same over rows (channels-last): x holds `rows` rows of cn contiguous channels,
 * row r starting at x + r * xs elements; row r adds to lane l = (lane + r) % 16 of
 * every channel j < cn. Accumulators are lane-major, a[l * ld + j] and b[l * ld + j]:
 *   row_accum:      d = x[r][j] - shift[j];  a[l][j] += d;   b[l][j] = fma(d, d, b[l][j])
 *   row_bwd_accum:  a[l][j] += dy[r][j];
 *                   b[l][j] = fma(dy[r][j], x[r][j] - center[j], b[l][j])
 * With `fresh` nonzero the call starts a chunk: the lanes it reaches, (lane + r) % 16 for
 * r < min(rows, 16), start from +0.0 whatever they hold (a variant may clear them or
 * start its registers at zero without reading them), so the caller need not clear a
 * chunk's lanes first: for a chunk of few rows that clear costs as much as the rows.
 */
typedef void (*sbn_row_accum_fn)(const void *x, int64_t xs, size_t rows, size_t cn,
                                 unsigned lane, const double *shift, double *a, double *b,
                                 size_t ld, int fresh);
typedef void (*sbn_row_bwd_accum_fn)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                     size_t rows, size_t cn, unsigned lane,
                                     const double *center, double *a, double *b, size_t ld,
                                     int fresh);

/* The clear a row reduction's `fresh` asks for, for variants that accumulate in memory:
 * lanes (lane + r) % 16, r < min(rows, 16), of channels [0, cn) set to +0.0. */
static inline void sbn__clear_fresh_lanes(double *a, double *b, size_t ld, size_t cn,
                                          unsigned lane, size_t rows)
{
    size_t r, j;
    for (r = 0; r < rows && r < 16; r++) {
        double *pa = a + ((lane + r) % 16) * ld, *pb = b + ((lane + r) % 16) * ld;
        for (j = 0; j < cn; j++) pa[j] = pb[j] = 0.0;
    }
}
/*
 * The same over `runs` runs of one channel of len contiguous elements each, run i at
 * x + i * xs elements (channels-first tensors with short planes: one kernel call
 * for a channel's planes instead of one per plane). The runs follow each other in
 * the channel's order: element e of run i is the call's element i * len + e and
 * goes to lane (lane + i * len + e) % 16, exactly as one accum call per run would.
 */
typedef void (*sbn_runs_accum_fn)(const void *x, int64_t xs, size_t runs, size_t len,
                                  unsigned lane, double shift, double *acc);
typedef void (*sbn_runs_bwd_accum_fn)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                      size_t runs, size_t len, unsigned lane, double center,
                                      double *acc);
/*
 * The same over one run of each of cn channels that share its geometry (channels-first
 * tensors: the planes of one image, channel j's at x + j * cs bytes, dy's at dy + j * dcs):
 * channel j's run is n contiguous elements whose element i goes to lane (lane + i) % 16 of
 * its accumulators acc + 32 j, with shift[j] (center[j]), exactly as one accum call per
 * channel would. The channels' lanes are independent, so a variant may interleave them:
 * one channel's lanes form a chain of dependent additions (an add and a fused
 * multiply-add per step), several channels side by side keep more of them in flight.
 */
typedef void (*sbn_planes_accum_fn)(const void *x, int64_t cs, size_t cn, size_t n, unsigned lane,
                                    const double *shift, double *acc);
typedef void (*sbn_planes_bwd_accum_fn)(const void *dy, int64_t dcs, const void *x, int64_t cs,
                                        size_t cn, size_t n, unsigned lane, const double *center,
                                        double *acc);
/*
 * Elementwise maps over a run of one channel (contiguous). The fp64 kernels take
 * double coefficients k and compute each element in double in this order:
 *   normalize:  y[i]  = (x[i] - k[0]) * k[1] + k[2]
 *   backward:   gi[i] = ((dy[i] - k[0]) - (x[i] - k[1]) * k[2]) * k[3]
 * The fp32, fp16 and bf16 kernels take float coefficients f (sbn__map_coefs_float
 * derives them from those k) and compute in float, each element widened exactly to
 * float, every operation rounded to nearest even:
 *   normalize:  y[i]  = fma(x[i] - f[0], f[1], f[2])
 *   backward:   gi[i] = fma(x[i] - f[0], f[1], dy[i] - f[2]) * f[3]
 * then narrowed once (fp32: nothing to do; fp16/bf16: to nearest even, NaNs as
 * convert.c writes them). docs/numerics.md bounds the error of the float form.
 * Each element is read before it is written: y == x (in place) is safe.
 */
typedef void (*sbn_normalize_fn)(const void *x, size_t n, const void *k, void *y);
typedef void (*sbn_backward_fn)(const void *dy, const void *x, size_t n, const void *k,
                                void *gi);
/*
 * The same over rows of cn contiguous channels (row r of each tensor at r * stride
 * elements), channel j's coefficients in structure-of-arrays form, of the kernel's
 * coefficient type (double for fp64, float otherwise):
 * k0 = k[j], k1 = k[ldk + j], k2 = k[2 * ldk + j], k3 = k[3 * ldk + j].
 */
typedef void (*sbn_row_normalize_fn)(const void *x, int64_t xs, size_t rows, size_t cn,
                                     const void *k, size_t ldk, void *y, int64_t ys);
typedef void (*sbn_row_backward_fn)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                    size_t rows, size_t cn, const void *k, size_t ldk,
                                    void *gi, int64_t gs);

/* The same over `runs` runs of len contiguous elements, run i of each tensor at its
 * stride (elements) times i, with run i's coefficients in structure-of-arrays form as
 * for rows: k[i], k[ldk + i], k[2 * ldk + i], k[3 * ldk + i]. Channels-first tensors
 * with short planes: the planes of consecutive channels, in memory order. */
typedef void (*sbn_runs_normalize_fn)(const void *x, int64_t xs, size_t runs, size_t len,
                                      const void *k, size_t ldk, void *y, int64_t ys);
typedef void (*sbn_runs_backward_fn)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                     size_t runs, size_t len, const void *k, size_t ldk,
                                     void *gi, int64_t gs);

/*
 * The float coefficients of one channel from its double ones (the fp64 form above),
 * the mean split off as its nearest float m so that x - m loses nothing to a large
 * mean (the rest of the mean moves into the constant term, computed in double):
 *   normalize, k = (mean, s, b):      f = (m, s, b + (m - mean) * s, 0)
 *   backward,  k = (a, mean, q, s):   f = (m, -q, a + (m - mean) * q, s)
 * each rounded once to float (m - mean is exact). Returns 0 when a finite k gives an
 * infinite f or a nonzero multiplier (s, q) below FLT_MIN, where the float form's
 * error bound does not hold: the caller then computes the map in double.
 */
/* A finite multiplier is usable as a float: it stays finite and is 0 or normal. The
 * tests are 0/1 values combined with & and | (no side effects to skip), so a loop over
 * channels has no branch in it and vectorises. */
static inline int sbn__float_multiplier_ok(double v)
{
    int finite = __builtin_isfinite(v) != 0, inf_f = __builtin_isinf((float)v) != 0;
    return !(finite & (inf_f | ((v != 0.0) & (__builtin_fabs(v) < 0x1p-126))));
}

static inline int sbn__map_coefs_float(int backward, const double *k, float *f)
{
    double mean = backward ? k[1] : k[0], s = backward ? k[3] : k[1];
    double mult = backward ? k[2] : s, m, konst;
    int ok = 1;
    f[0] = (float)mean;
    m = (double)f[0];
    if (backward) {
        konst = k[0] + (m - mean) * mult;
        f[1] = (float)-mult;
        f[3] = (float)s;
    } else {
        konst = k[2] + (m - mean) * s;
        f[1] = (float)s;
        f[3] = 0.0f;
    }
    f[2] = (float)konst;
    ok &= !((__builtin_isfinite(mean) != 0) & (__builtin_isinf(f[0]) != 0));
    ok &= !((__builtin_isfinite(konst) != 0) & (__builtin_isinf(f[2]) != 0));
    ok &= sbn__float_multiplier_ok(s) & sbn__float_multiplier_ok(mult);
    return ok;
}

/* 1/n when n is a power of two in [1, 2^1000], else 0. Such a 1/n is exact, so x * (1/n)
 * and x / n round the same real number and agree in every bit, for every x (subnormal,
 * infinite and NaN results included): a division by a count that is a power of two (a
 * batch of 8, 16, 32 rows) becomes a multiplication, where a vector division occupies
 * the divider for about ten cycles, and with thousands of channels over a few rows the
 * per-channel divisions are a large part of a training step. */
static inline double sbn__pow2_recip(double n)
{
    int64_t bits;
    __builtin_memcpy(&bits, &n, sizeof bits);
    /* positive, mantissa bits zero, biased exponent in [1023, 2023] */
    return (bits & 0xFFFFFFFFFFFFFll) == 0 && (bits >> 52) >= 1023 && (bits >> 52) <= 2023
               ? 1.0 / n
               : 0.0;
}

/* x / n, with recip = sbn__pow2_recip(n) taken once outside the loop: a multiplication
 * when n is a power of two, the same bits either way. */
static inline double sbn__div_count(double x, double n, double recip)
{
    return recip != 0.0 ? x * recip : x / n;
}

/* 1/sqrt(var + eps), or 0 when var + eps == 0 (PyTorch's convention): the rule of every
 * op's invstd and of the invstd kernels below. Inline: it runs once per channel in every
 * finish, and thousands of channels over a few rows make a call per channel the cost. */
static inline double sbn__invstd(double var, double eps)
{
    double v = var + eps;
    return v == 0.0 ? 0.0 : 1.0 / __builtin_sqrt(v);
}

/*
 * invstd of n channels, the step every training finish takes per channel:
 *   v = m2[j * stride] / count + eps;   out[j] = v == 0 ? 0 : 1 / sqrt(v)
 * each division, addition and square root rounded once (IEEE), so every variant gives
 * the bits of sbn__invstd(m2[j * stride] / count, eps); the vector variants do eight
 * (four) channels per division and square root, which one at a time wait on the divider.
 * With stride 1, out may be m2 itself (each element is read before it is written); with
 * count 1 it is sbn__invstd(m2[j], eps), a variance's invstd (m2 / 1 is m2).
 */
typedef void (*sbn_invstd_fn)(const double *m2, size_t stride, size_t n, double count, double eps,
                              double *out);
/*
 * The row path's chunk end for cn channels: channel j's lanes, lane l at a[l * ld + j]
 * and b[l * ld + j], folded by sbn__fold16's additions in its order, A and B left in
 * lane 0 (a[j], b[j]). Only lanes [0, used) are read (1 <= used <= 16; a chunk of n < 16
 * rows reaches n lanes): a lane never reached counts as +0.0, and x + (+0.0) == x for
 * every x a lane can hold (no lane holds -0.0: a sum started at +0.0 is -0.0 only if
 * both addends are, and an exact-zero fused multiply-add onto +0.0 is +0.0, to nearest),
 * so the bits are those of skipping its additions. One channel's 16 lanes are a column
 * ld doubles apart: the vector variants fold eight (four) channels at once in registers,
 * where a stage at a time over lane rows would store and reload every stage.
 */
typedef void (*sbn_fold_rows_fn)(double *a, double *b, size_t ld, size_t cn, unsigned used);
/*
 * A whole chunk of n >= 1 rows (channels-last) reduced and folded in one call: the
 * lanes row_accum (row_bwd_accum) would fill from lane 0 with `fresh` set, folded as
 * fold_rows with used = min(n, 16), A of channel j written to a[j] and B to b[j]. Same
 * bits as those two calls; a variant may keep the lanes in registers, never storing
 * them: for a chunk of few rows of many channels, storing 2 x 16 lanes a channel and
 * reading them back to fold cost more than reading the rows.
 */
typedef void (*sbn_row_chunk_fn)(const void *x, int64_t xs, size_t n, size_t cn,
                                 const double *shift, double *a, double *b);
typedef void (*sbn_row_bwd_chunk_fn)(const void *dy, int64_t dys, const void *x, int64_t xs,
                                     size_t n, size_t cn, const double *center, double *a,
                                     double *b);

typedef struct sbn_kernels {
    const char *isa;
    sbn_load_fn load_f32, load_f16, load_bf16;
    sbn_store_fn store_f32, store_f16, store_bf16;
    sbn_accum_fn accum[SBN_KD_COUNT];
    sbn_bwd_accum_fn bwd_accum[SBN_KD_COUNT];
    sbn_row_accum_fn row_accum[SBN_KD_COUNT];
    sbn_row_bwd_accum_fn row_bwd_accum[SBN_KD_COUNT];
    sbn_normalize_fn normalize[SBN_KD_COUNT];
    sbn_backward_fn backward[SBN_KD_COUNT];
    sbn_row_normalize_fn row_normalize[SBN_KD_COUNT];
    sbn_row_backward_fn row_backward[SBN_KD_COUNT];
    sbn_runs_accum_fn runs_accum[SBN_KD_COUNT];
    sbn_runs_bwd_accum_fn runs_bwd_accum[SBN_KD_COUNT];
    sbn_planes_accum_fn planes_accum[SBN_KD_COUNT];
    sbn_planes_bwd_accum_fn planes_bwd_accum[SBN_KD_COUNT];
    sbn_row_chunk_fn row_chunk[SBN_KD_COUNT];
    sbn_row_bwd_chunk_fn row_bwd_chunk[SBN_KD_COUNT];
    sbn_runs_normalize_fn runs_normalize[SBN_KD_COUNT];
    sbn_runs_backward_fn runs_backward[SBN_KD_COUNT];
    sbn_invstd_fn invstd;
    sbn_fold_rows_fn fold_rows;
    /* How the row_chunk kernels take a chunk of more than a few rows: 1, a slice of channels
     * at a time through lanes in the L1 (scalar, AVX2); 0, each group's column of lines
     * down every row with the lanes in registers (AVX-512). The same in an ISA's default
     * and streaming tables; plan.c sizes whole chunks by it. */
    int row_chunk_sliced;
    /* How the planes kernels take several channels: 1, channel after channel through the
     * one-run kernels (scalar, AVX2: SBN_DEFINE_PLANES_REDUCE_BY_RUN), so a call on a piece
     * of every channel gains nothing from their side-by-side runs (also AVX-512's table
     * beyond the cache, one channel at a time); 0, four channels interleaved (AVX-512's
     * default table). channel_reduce.c reads the planes in memory order when it is 1. */
    int planes_by_run;
} sbn_kernels;

/*
 * The kernels chosen for this process: the widest ISA the CPU supports among those
 * built, or scalar when SBN_FORCE_SCALAR=1 is set in the environment. Chosen once.
 */
const sbn_kernels *sbn__kernels(void);
/* The table of one ISA by name ("scalar", "avx2", "avx512"), or NULL if not built
 * or not supported by this CPU (tests compare every ISA with scalar). */
const sbn_kernels *sbn__kernels_for(const char *isa);
/*
 * The same tables for tensors much larger than the last-level cache (channel_map.c
 * and channel_reduce.c decide, sbn__beyond_cache): maps that write their output with
 * non-temporal stores, row reductions that prefetch the next block of short rows, and
 * for AVX-512 row_chunk kernels that prefetch their rows (plan.c chooses them for whole
 * chunks beyond the L2) and planes reductions that take one channel at a time (in memory
 * order, not interleaved). Same bits, less memory traffic or waiting. An ISA without such
 * kernels (scalar) gives its own table; the streaming tables are named "avx2_nt" and
 * "avx512_nt". The plane and runs reductions (and AVX2's row_chunk and planes reductions)
 * are shared.
 */
const sbn_kernels *sbn__kernels_streaming(void);
const sbn_kernels *sbn__kernels_streaming_for(const char *isa);

/* The lane fold, shared by every variant once its lanes are in memory: for h in 8, 4,
 * 2, 1, s[k] = s[k] + s[k + h] (k < h), s[0] the result. Written out stage by stage in
 * temporaries (the same additions, so the same bits) rather than as the in-place loop
 * it was, which compiled to a loop over h re-reading each stage's stores: a chain of
 * store-to-load forwards in every fold. */
static inline double sbn__fold16(const double *s)
{
    double h8[8], h4[4], h2[2];
    int k;
    for (k = 0; k < 8; k++) h8[k] = s[k] + s[k + 8];
    for (k = 0; k < 4; k++) h4[k] = h8[k] + h8[k + 4];
    for (k = 0; k < 2; k++) h2[k] = h4[k] + h4[k + 2];
    return h2[0] + h2[1];
}

/* fold_rows (above) of one channel: lanes [0, used) at s, ld apart, folded into s[0]. */
static inline void sbn__fold16_column(double *s, size_t ld, unsigned used)
{
    double lane[SBN_LANES];
    unsigned l;
    for (l = 0; l < SBN_LANES; l++) lane[l] = l < used ? s[l * ld] : 0.0;
    s[0] = sbn__fold16(lane);
}

#define SBN_DECLARE_KERNELS(isa)                                                              \
    void sbn_f32_load_ukernel__##isa(const void *src, size_t n, double *dst);                \
    void sbn_f16_load_ukernel__##isa(const void *src, size_t n, double *dst);                \
    void sbn_bf16_load_ukernel__##isa(const void *src, size_t n, double *dst);               \
    void sbn_f32_store_ukernel__##isa(const double *src, size_t n, void *dst);               \
    void sbn_f16_store_ukernel__##isa(const double *src, size_t n, void *dst);               \
    void sbn_bf16_store_ukernel__##isa(const double *src, size_t n, void *dst);               \
    void sbn_invstd_ukernel__##isa(const double *m2, size_t stride, size_t n, double count,   \
                                   double eps, double *out);                               \
    void sbn_fold_rows_ukernel__##isa(double *a, double *b, size_t ld, size_t cn, unsigned used);

SBN_DECLARE_KERNELS(scalar)
SBN_DECLARE_KERNELS(avx2)
SBN_DECLARE_KERNELS(avx512)

/* The four maps of one element type: sbn_<dt>_<map>_ukernel__<isa>. */
#define SBN_DECLARE_MAP_KERNELS_DT(dt, isa)                                                     \
    void sbn_##dt##_normalize_ukernel__##isa(const void *x, size_t n, const void *k,            \
                                             void *y);                                         \
    void sbn_##dt##_backward_ukernel__##isa(const void *dy, const void *x, size_t n,            \
                                            const void *k, void *gi);                          \
    void sbn_##dt##_row_normalize_ukernel__##isa(const void *x, int64_t xs, size_t rows,        \
                                                 size_t cn, const void *k, size_t ldk,         \
                                                 void *y, int64_t ys);                         \
    void sbn_##dt##_row_backward_ukernel__##isa(const void *dy, int64_t dys, const void *x,     \
                                                int64_t xs, size_t rows, size_t cn,            \
                                                const void *k, size_t ldk, void *gi,           \
                                                int64_t gs);

/* The two runs maps of one element type. */
#define SBN_DECLARE_RUNS_MAP_KERNELS_DT(dt, isa)                                                \
    void sbn_##dt##_runs_normalize_ukernel__##isa(const void *x, int64_t xs, size_t runs,       \
                                                  size_t len, const void *k, size_t ldk,       \
                                                  void *y, int64_t ys);                        \
    void sbn_##dt##_runs_backward_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t runs, size_t len,          \
                                                 const void *k, size_t ldk, void *gi,          \
                                                 int64_t gs);

/* The row reductions of one element type (row_accum, row_bwd_accum). */
#define SBN_DECLARE_ROW_ACCUM_KERNELS_DT(dt, isa)                                               \
    void sbn_##dt##_row_accum_ukernel__##isa(const void *x, int64_t xs, size_t rows, size_t cn, \
                                             unsigned lane, const double *shift, double *a,    \
                                             double *b, size_t ld, int fresh);                 \
    void sbn_##dt##_row_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 unsigned lane, const double *center,          \
                                                 double *a, double *b, size_t ld, int fresh);
/* The row, row_chunk and planes reductions of one element type. */
#define SBN_DECLARE_ROW_REDUCE_KERNELS_DT(dt, isa)                                              \
    SBN_DECLARE_ROW_ACCUM_KERNELS_DT(dt, isa)                                                   \
    void sbn_##dt##_planes_accum_ukernel__##isa(const void *x, int64_t cs, size_t cn, size_t n, \
                                                unsigned lane, const double *shift,            \
                                                double *acc);                                  \
    void sbn_##dt##_row_chunk_ukernel__##isa(const void *x, int64_t xs, size_t n, size_t cn,    \
                                             const double *shift, double *a, double *b);       \
    void sbn_##dt##_row_bwd_chunk_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t n, size_t cn,              \
                                                 const double *center, double *a, double *b);  \
    void sbn_##dt##_planes_bwd_accum_ukernel__##isa(const void *dy, int64_t dcs, const void *x, \
                                                    int64_t cs, size_t cn, size_t n,           \
                                                    unsigned lane, const double *center,       \
                                                    double *acc);

/* One family member per element type: sbn_<dt>_<kernel>_ukernel__<isa>, dt in f64 f32 f16 bf16. */
#define SBN_DECLARE_STREAM_KERNELS_DT(dt, isa)                                                  \
    void sbn_##dt##_accum_ukernel__##isa(const void *x, size_t n, unsigned lane, double shift,  \
                                         double *acc);                                         \
    void sbn_##dt##_bwd_accum_ukernel__##isa(const void *dy, const void *x, size_t n,           \
                                             unsigned lane, double center, double *acc);       \
    void sbn_##dt##_runs_accum_ukernel__##isa(const void *x, int64_t xs, size_t runs,           \
                                              size_t len, unsigned lane, double shift,         \
                                              double *acc);                                    \
    void sbn_##dt##_runs_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,   \
                                                  int64_t xs, size_t runs, size_t len,         \
                                                  unsigned lane, double center, double *acc);  \
    SBN_DECLARE_ROW_REDUCE_KERNELS_DT(dt, isa)                                                  \
    SBN_DECLARE_MAP_KERNELS_DT(dt, isa)                                                         \
    SBN_DECLARE_RUNS_MAP_KERNELS_DT(dt, isa)
#define SBN_DECLARE_STREAM_KERNELS(isa)        \
    SBN_DECLARE_STREAM_KERNELS_DT(f64, isa)    \
    SBN_DECLARE_STREAM_KERNELS_DT(f32, isa)    \
    SBN_DECLARE_STREAM_KERNELS_DT(f16, isa)    \
    SBN_DECLARE_STREAM_KERNELS_DT(bf16, isa)

SBN_DECLARE_STREAM_KERNELS(scalar)
SBN_DECLARE_STREAM_KERNELS(avx2)
SBN_DECLARE_STREAM_KERNELS(avx512)

/* The maps with non-temporal stores (stream_map_nt_avx2.c, stream_map_nt_avx512.c). */
#define SBN_DECLARE_NT_MAP_KERNELS(isa)         \
    SBN_DECLARE_MAP_KERNELS_DT(f64, isa)        \
    SBN_DECLARE_MAP_KERNELS_DT(f32, isa)        \
    SBN_DECLARE_MAP_KERNELS_DT(f16, isa)        \
    SBN_DECLARE_MAP_KERNELS_DT(bf16, isa)       \
    SBN_DECLARE_RUNS_MAP_KERNELS_DT(f64, isa)   \
    SBN_DECLARE_RUNS_MAP_KERNELS_DT(f32, isa)   \
    SBN_DECLARE_RUNS_MAP_KERNELS_DT(f16, isa)   \
    SBN_DECLARE_RUNS_MAP_KERNELS_DT(bf16, isa)
SBN_DECLARE_NT_MAP_KERNELS(avx2_nt)
SBN_DECLARE_NT_MAP_KERNELS(avx512_nt)
/* The AVX-512 maps whose bf16 runs narrow by the CPU's conversion (AVX512_BF16;
 * stream_map_bf16_avx512.c), everything else as in avx512. */
SBN_DECLARE_NT_MAP_KERNELS(avx512bf16)
/* The AVX2 row reductions that prefetch the next block of short rows (rows_avx2.c; only
 * row_accum and row_bwd_accum: the avx2_nt table's other row kernels are avx2's). */
SBN_DECLARE_ROW_ACCUM_KERNELS_DT(f64, avx2_pf)
SBN_DECLARE_ROW_ACCUM_KERNELS_DT(f32, avx2_pf)
SBN_DECLARE_ROW_ACCUM_KERNELS_DT(f16, avx2_pf)
SBN_DECLARE_ROW_ACCUM_KERNELS_DT(bf16, avx2_pf)
/* The AVX-512 row reductions that prefetch the next block of short rows (rows_avx512.c),
 * the planes reductions one channel at a time (stream_avx512.c) and the row_chunk kernels
 * that prefetch their rows (row_chunk_avx512.c). */
SBN_DECLARE_ROW_REDUCE_KERNELS_DT(f64, avx512_pf)
SBN_DECLARE_ROW_REDUCE_KERNELS_DT(f32, avx512_pf)
SBN_DECLARE_ROW_REDUCE_KERNELS_DT(f16, avx512_pf)
SBN_DECLARE_ROW_REDUCE_KERNELS_DT(bf16, avx512_pf)

/* Conversions shared by the scalar kernels and the SIMD tails (convert.c). */
float sbn__f16_to_float(uint16_t h);
uint16_t sbn__float_to_f16(float f);
float sbn__bf16_to_float(uint16_t h);
uint16_t sbn__float_to_bf16(float f);
/* double -> float rounding to odd (truncate, then set the last bit if inexact). */
float sbn__narrow_round_to_odd(double d);

#endif /* SBN_KERNELS_H */
