/*
 * runs_by_run.h - the runs kernels of kernels.h (several equal runs of one channel
 * per call) and the planes kernels (one run of each of several channels) as loops
 * over the table's one-run kernels, the row_chunk kernels as the row reduction and
 * fold_rows of slices of channels, for the ISAs whose one-run kernels already keep up
 * with short runs (scalar) or that have no fused form (AVX2, whose runs reductions
 * copy short runs end to end into a stage and reduce it as one run, and whose float
 * maps take adjacent runs as one stretch, stream_map_avx2.c). Run i starts at
 * lane (lane + i * len) % 16, so the bits are those of one call per run by
 * construction. The AVX-512 reductions fuse the runs instead (stream_avx512.c),
 * filling each block of lanes from the end of one run and the start of the next.
 */
#ifndef SBN_RUNS_BY_RUN_H
#define SBN_RUNS_BY_RUN_H

#include <string.h>

#include "kernels/kernels.h"

/* Element i of an array of elements of `size` bytes, as a byte address. */
#define SBN_RUN_AT(p, i, size) ((const char *)(p) + (int64_t)(i) * (int64_t)(size))
#define SBN_RUN_AT_W(p, i, size) ((char *)(p) + (int64_t)(i) * (int64_t)(size))

/* The runs of a channel, one call of the one-run kernel each. */
static inline void sbn__runs_accum_by_run(sbn_accum_fn accum, const void *x, int64_t xs,
                                          size_t runs, size_t len, unsigned lane, double shift,
                                          double *acc, size_t size)
{
    size_t i;
    for (i = 0; i < runs; i++)
        accum(SBN_RUN_AT(x, (int64_t)i * xs, size), len,
              (unsigned)((lane + i * len) % SBN_LANES), shift, acc);
}
static inline void sbn__runs_bwd_accum_by_run(sbn_bwd_accum_fn accum, const void *dy,
                                              int64_t dys, const void *x, int64_t xs,
                                              size_t runs, size_t len, unsigned lane,
                                              double center, double *acc, size_t size)
{
    size_t i;
    for (i = 0; i < runs; i++)
        accum(SBN_RUN_AT(dy, (int64_t)i * dys, size), SBN_RUN_AT(x, (int64_t)i * xs, size), len,
              (unsigned)((lane + i * len) % SBN_LANES), center, acc);
}

#define SBN_DEFINE_RUNS_REDUCE_BY_RUN(dt, isa, size)                                              \
    void sbn_##dt##_runs_accum_ukernel__##isa(const void *x, int64_t xs, size_t runs,            \
                                              size_t len, unsigned lane, double shift,          \
                                              double *acc)                                      \
    {                                                                                           \
        sbn__runs_accum_by_run(sbn_##dt##_accum_ukernel__##isa, x, xs, runs, len, lane, shift,  \
                               acc, size);                                                      \
    }                                                                                           \
    void sbn_##dt##_runs_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                  int64_t xs, size_t runs, size_t len,          \
                                                  unsigned lane, double center, double *acc)    \
    {                                                                                           \
        sbn__runs_bwd_accum_by_run(sbn_##dt##_bwd_accum_ukernel__##isa, dy, dys, x, xs, runs,    \
                                   len, lane, center, acc, size);                               \
    }

/*
 * The same, for ISAs whose one-run kernels hold the 16 lanes in registers only inside a
 * run (AVX2): short runs (below) are copied side by side into a stage on the
 * stack (in L1) and reduced as one run. Element k of the stage is element k of the runs
 * laid end to end, so it takes lane (lane + i0 * len + k) % 16, as the calls per run
 * give it, and each lane its elements in the same order: the same bits. The lanes then
 * stay in registers across run boundaries, where per run they went through memory at
 * each head and tail, with loads that overlap the stores before them and wait for them.
 * That saving is up to 30 of a run's elements taken outside the registers, and the copy
 * costs a pass over all of them and a call per run, so only calls of at least four runs
 * of at most four blocks of lanes each are staged (7x7 and 8x8 planes; with 14x14 ones,
 * or two runs a call, the copies cost more than the heads and tails they save).
 */
#define SBN_RUNS_STAGE_BYTES 2048
#define SBN_RUNS_STAGE_MAX_LEN (4 * SBN_LANES)
#define SBN_RUNS_STAGE_MIN_RUNS 4
_Static_assert(SBN_RUNS_STAGE_MIN_RUNS * SBN_RUNS_STAGE_MAX_LEN * 8 <= SBN_RUNS_STAGE_BYTES,
               "a stage holds at least SBN_RUNS_STAGE_MIN_RUNS runs of any element type");

/* Whether a runs call is staged: enough runs, none empty or too long. */
static inline int sbn__runs_staged(size_t runs, size_t len)
{
    return runs >= SBN_RUNS_STAGE_MIN_RUNS && len > 0 && len <= SBN_RUNS_STAGE_MAX_LEN;
}

/* Runs [i, i + m) of x (run stride xs elements of `size` bytes, rb bytes each) side by
 * side into stage. */
static inline void sbn__stage_runs(unsigned char *stage, const void *x, int64_t xs, size_t i,
                                   size_t m, size_t rb, size_t size)
{
    size_t k;
    for (k = 0; k < m; k++) memcpy(stage + k * rb, SBN_RUN_AT(x, (int64_t)(i + k) * xs, size), rb);
}

#define SBN_DEFINE_RUNS_REDUCE_STAGED(dt, isa, size)                                              \
    void sbn_##dt##_runs_accum_ukernel__##isa(const void *x, int64_t xs, size_t runs,            \
                                              size_t len, unsigned lane, double shift,          \
                                              double *acc)                                      \
    {                                                                                           \
        _Alignas(64) unsigned char st[SBN_RUNS_STAGE_BYTES];                                     \
        const size_t rb = len * (size);                                                         \
        size_t i, m;                                                                            \
        if (!sbn__runs_staged(runs, len)) {                                                     \
            sbn__runs_accum_by_run(sbn_##dt##_accum_ukernel__##isa, x, xs, runs, len, lane,     \
                                   shift, acc, size);                                           \
            return;                                                                             \
        }                                                                                       \
        for (i = 0; i < runs; i += m) {                                                         \
            m = runs - i < SBN_RUNS_STAGE_BYTES / rb ? runs - i : SBN_RUNS_STAGE_BYTES / rb;     \
            sbn__stage_runs(st, x, xs, i, m, rb, size);                                         \
            sbn_##dt##_accum_ukernel__##isa(st, m * len, (unsigned)((lane + i * len) % SBN_LANES), \
                                            shift, acc);                                        \
        }                                                                                       \
    }                                                                                           \
    void sbn_##dt##_runs_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                  int64_t xs, size_t runs, size_t len,          \
                                                  unsigned lane, double center, double *acc)    \
    {                                                                                           \
        _Alignas(64) unsigned char sg[SBN_RUNS_STAGE_BYTES], sx[SBN_RUNS_STAGE_BYTES];           \
        const size_t rb = len * (size);                                                         \
        size_t i, m;                                                                            \
        if (!sbn__runs_staged(runs, len)) {                                                     \
            sbn__runs_bwd_accum_by_run(sbn_##dt##_bwd_accum_ukernel__##isa, dy, dys, x, xs,      \
                                       runs, len, lane, center, acc, size);                     \
            return;                                                                             \
        }                                                                                       \
        for (i = 0; i < runs; i += m) {                                                         \
            m = runs - i < SBN_RUNS_STAGE_BYTES / rb ? runs - i : SBN_RUNS_STAGE_BYTES / rb;     \
            sbn__stage_runs(sg, dy, dys, i, m, rb, size);                                       \
            sbn__stage_runs(sx, x, xs, i, m, rb, size);                                         \
            sbn_##dt##_bwd_accum_ukernel__##isa(sg, sx, m * len,                                \
                                                (unsigned)((lane + i * len) % SBN_LANES),       \
                                                center, acc);                                   \
        }                                                                                       \
    }

/* The planes kernels as a loop over the one-run kernels, channel by channel. */
#define SBN_DEFINE_PLANES_REDUCE_BY_RUN(dt, isa)                                                  \
    void sbn_##dt##_planes_accum_ukernel__##isa(const void *x, int64_t cs, size_t cn, size_t n,  \
                                                unsigned lane, const double *shift,             \
                                                double *acc)                                    \
    {                                                                                           \
        size_t j;                                                                               \
        for (j = 0; j < cn; j++)                                                                \
            sbn_##dt##_accum_ukernel__##isa(SBN_RUN_AT(x, j, cs), n, lane, shift[j],            \
                                            acc + 2 * SBN_LANES * j);                           \
    }                                                                                           \
    void sbn_##dt##_planes_bwd_accum_ukernel__##isa(const void *dy, int64_t dcs, const void *x,  \
                                                    int64_t cs, size_t cn, size_t n,            \
                                                    unsigned lane, const double *center,        \
                                                    double *acc)                                \
    {                                                                                           \
        size_t j;                                                                               \
        for (j = 0; j < cn; j++)                                                                \
            sbn_##dt##_bwd_accum_ukernel__##isa(SBN_RUN_AT(dy, j, dcs), SBN_RUN_AT(x, j, cs), n, \
                                                lane, center[j], acc + 2 * SBN_LANES * j);      \
    }

/*
 * The row_chunk kernels as row_accum (fresh lanes from lane 0) then fold_rows, a slice
 * of SBN_ROW_CHUNK_SLICE channels at a time through lanes on the stack: the definition,
 * and for ISAs without a fused form the lanes of a slice (16 KiB) stay in L1 where the
 * lanes of every channel would not. `size`: bytes per element.
 */
#define SBN_ROW_CHUNK_SLICE 64
/* A slice's end: its m channels' lanes (ld = m) folded over min(n, 16) lanes, A and B
 * copied out to a[0..m), b[0..m). */
static inline void sbn__row_chunk_slice_out(sbn_fold_rows_fn fold, double *la, double *lb,
                                            size_t m, size_t n, double *a, double *b)
{
    size_t k;
    fold(la, lb, m, m, n < SBN_LANES ? (unsigned)n : SBN_LANES);
    for (k = 0; k < m; k++) a[k] = la[k], b[k] = lb[k];
}
#define SBN_DEFINE_ROW_CHUNK_BY_LANES(dt, isa, size)                                              \
    SBN_DEFINE_ROW_CHUNK_BY_LANES_AS(dt, isa, size, , sbn_##dt##_row_chunk_ukernel__##isa,       \
                                     sbn_##dt##_row_bwd_chunk_ukernel__##isa)
/* The same under other names, with a storage class (static: a kernel that keeps lanes in
 * registers for some chunks and takes this way for the others, row_chunk_avx2.c). */
#define SBN_DEFINE_ROW_CHUNK_BY_LANES_AS(dt, isa, size, storage, fwd, bwd)                       \
    storage void fwd(const void *x, int64_t xs, size_t n, size_t cn, const double *shift,        \
                     double *a, double *b)                                                      \
    {                                                                                           \
        double la[SBN_LANES * SBN_ROW_CHUNK_SLICE], lb[SBN_LANES * SBN_ROW_CHUNK_SLICE];         \
        size_t j, m;                                                                            \
        for (j = 0; j < cn; j += m) {                                                           \
            m = cn - j < SBN_ROW_CHUNK_SLICE ? cn - j : SBN_ROW_CHUNK_SLICE;                    \
            sbn_##dt##_row_accum_ukernel__##isa(SBN_RUN_AT(x, j, size), xs, n, m, 0, shift + j,  \
                                                la, lb, m, 1);                                  \
            sbn__row_chunk_slice_out(sbn_fold_rows_ukernel__##isa, la, lb, m, n, a + j, b + j);  \
        }                                                                                       \
    }                                                                                           \
    storage void bwd(const void *dy, int64_t dys, const void *x, int64_t xs, size_t n,           \
                     size_t cn, const double *center, double *a, double *b)                     \
    {                                                                                           \
        double la[SBN_LANES * SBN_ROW_CHUNK_SLICE], lb[SBN_LANES * SBN_ROW_CHUNK_SLICE];         \
        size_t j, m;                                                                            \
        for (j = 0; j < cn; j += m) {                                                           \
            m = cn - j < SBN_ROW_CHUNK_SLICE ? cn - j : SBN_ROW_CHUNK_SLICE;                    \
            sbn_##dt##_row_bwd_accum_ukernel__##isa(SBN_RUN_AT(dy, j, size), dys,                \
                                                    SBN_RUN_AT(x, j, size), xs, n, m, 0,        \
                                                    center + j, la, lb, m, 1);                  \
            sbn__row_chunk_slice_out(sbn_fold_rows_ukernel__##isa, la, lb, m, n, a + j, b + j);  \
        }                                                                                       \
    }

/* Run i's four coefficients, of type T, gathered from structure-of-arrays form. */
#define SBN_RUN_COEFS(T, k, ldk, i, c)                                                           \
    do {                                                                                        \
        int m_;                                                                                 \
        for (m_ = 0; m_ < 4; m_++) (c)[m_] = ((const T *)(k))[(size_t)m_ * (ldk) + (i)];        \
    } while (0)

/* The maps, for an entry-point suffix `isa` (the _nt tables have their own); T is the
 * coefficient type (double for f64, float otherwise). With _FIRST, fused_normalize and
 * fused_backward name functions of the entry's arguments that may map the whole call some
 * other way with the same bits, returning nonzero if they did. */
#define SBN_DEFINE_RUNS_MAP_BY_RUN(dt, isa, size, T) \
    SBN_DEFINE_RUNS_MAP_FIRST(dt, isa, size, T, sbn__runs_map_none, sbn__runs_map_none)
#define sbn__runs_map_none(...) 0
#define SBN_DEFINE_RUNS_MAP_FIRST(dt, isa, size, T, fused_normalize, fused_backward)               \
    void sbn_##dt##_runs_normalize_ukernel__##isa(const void *x, int64_t xs, size_t runs,        \
                                                  size_t len, const void *k, size_t ldk,        \
                                                  void *y, int64_t ys)                          \
    {                                                                                           \
        size_t i;                                                                               \
        T c[4];                                                                                 \
        if (fused_normalize(x, xs, runs, len, k, ldk, y, ys)) return;                           \
        for (i = 0; i < runs; i++) {                                                            \
            SBN_RUN_COEFS(T, k, ldk, i, c);                                                     \
            sbn_##dt##_normalize_ukernel__##isa(SBN_RUN_AT(x, (int64_t)i * xs, size), len, c,   \
                                                SBN_RUN_AT_W(y, (int64_t)i * ys, size));        \
        }                                                                                       \
    }                                                                                           \
    void sbn_##dt##_runs_backward_ukernel__##isa(const void *dy, int64_t dys, const void *x,     \
                                                 int64_t xs, size_t runs, size_t len,           \
                                                 const void *k, size_t ldk, void *gi,           \
                                                 int64_t gs)                                    \
    {                                                                                           \
        size_t i;                                                                               \
        T c[4];                                                                                 \
        if (fused_backward(dy, dys, x, xs, runs, len, k, ldk, gi, gs)) return;                  \
        for (i = 0; i < runs; i++) {                                                            \
            SBN_RUN_COEFS(T, k, ldk, i, c);                                                     \
            sbn_##dt##_backward_ukernel__##isa(SBN_RUN_AT(dy, (int64_t)i * dys, size),          \
                                               SBN_RUN_AT(x, (int64_t)i * xs, size), len, c,    \
                                               SBN_RUN_AT_W(gi, (int64_t)i * gs, size));        \
        }                                                                                       \
    }

#endif /* SBN_RUNS_BY_RUN_H */
