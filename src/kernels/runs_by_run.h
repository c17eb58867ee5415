/*
 * runs_by_run.h - the runs kernels of kernels.h (several equal runs of one channel
 * per call) and the planes kernels (one run of each of several channels) as loops
 * over the table's one-run kernels, for the ISAs whose one-run
 * kernels already keep up with short runs (scalar) or that have no fused form
 * (AVX2). Run i starts at lane (lane + i * len) % 16, so the bits are those of one
 * call per run by construction. The AVX-512 reductions fuse the runs instead
 * (stream_avx512.c), filling each block of lanes from the end of one run and the
 * start of the next.
 */
#ifndef SBN_RUNS_BY_RUN_H
#define SBN_RUNS_BY_RUN_H

#include "kernels/kernels.h"

/* Element i of an array of elements of `size` bytes, as a byte address. */
#define SBN_RUN_AT(p, i, size) ((const char *)(p) + (int64_t)(i) * (int64_t)(size))
#define SBN_RUN_AT_W(p, i, size) ((char *)(p) + (int64_t)(i) * (int64_t)(size))

#define SBN_DEFINE_RUNS_REDUCE_BY_RUN(dt, isa, size)                                              \
    void sbn_##dt##_runs_accum_ukernel__##isa(const void *x, int64_t xs, size_t runs,            \
                                              size_t len, unsigned lane, double shift,          \
                                              double *acc)                                      \
    {                                                                                           \
        size_t i;                                                                               \
        for (i = 0; i < runs; i++)                                                              \
            sbn_##dt##_accum_ukernel__##isa(SBN_RUN_AT(x, (int64_t)i * xs, size), len,          \
                                            (unsigned)((lane + i * len) % SBN_LANES), shift,    \
                                            acc);                                               \
    }                                                                                           \
    void sbn_##dt##_runs_bwd_accum_ukernel__##isa(const void *dy, int64_t dys, const void *x,    \
                                                  int64_t xs, size_t runs, size_t len,          \
                                                  unsigned lane, double center, double *acc)    \
    {                                                                                           \
        size_t i;                                                                               \
        for (i = 0; i < runs; i++)                                                              \
            sbn_##dt##_bwd_accum_ukernel__##isa(SBN_RUN_AT(dy, (int64_t)i * dys, size),         \
                                                SBN_RUN_AT(x, (int64_t)i * xs, size), len,      \
                                                (unsigned)((lane + i * len) % SBN_LANES),       \
                                                center, acc);                                   \
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

/* Run i's four coefficients, of type T, gathered from structure-of-arrays form. */
#define SBN_RUN_COEFS(T, k, ldk, i, c)                                                           \
    do {                                                                                        \
        int m_;                                                                                 \
        for (m_ = 0; m_ < 4; m_++) (c)[m_] = ((const T *)(k))[(size_t)m_ * (ldk) + (i)];        \
    } while (0)

/* The maps, for an entry-point suffix `isa` (the _nt tables have their own); T is the
 * coefficient type (double for f64, float otherwise). */
#define SBN_DEFINE_RUNS_MAP_BY_RUN(dt, isa, size, T)                                              \
    void sbn_##dt##_runs_normalize_ukernel__##isa(const void *x, int64_t xs, size_t runs,        \
                                                  size_t len, const void *k, size_t ldk,        \
                                                  void *y, int64_t ys)                          \
    {                                                                                           \
        size_t i;                                                                               \
        T c[4];                                                                                 \
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
        for (i = 0; i < runs; i++) {                                                            \
            SBN_RUN_COEFS(T, k, ldk, i, c);                                                     \
            sbn_##dt##_backward_ukernel__##isa(SBN_RUN_AT(dy, (int64_t)i * dys, size),          \
                                               SBN_RUN_AT(x, (int64_t)i * xs, size), len, c,    \
                                               SBN_RUN_AT_W(gi, (int64_t)i * gs, size));        \
        }                                                                                       \
    }

#endif /* SBN_RUNS_BY_RUN_H */
