/*
 * stream_scalar.c - the portable streaming reductions of kernels.h, which define
 * the canonical order the SIMD variants reproduce bit for bit. Runs of one
 * channel: element i adds to lane (lane + i) % 16. Rows of a block of channels
 * (channels-last): row r adds to lane (lane + r) % 16 of every channel, the lanes
 * stored lane-major a[l * ld + j]. Per element, in double, each operation rounded
 * once: b takes its product and add in one fused multiply-add (C's fma, correctly
 * rounded; the SIMD variants use their FMA instructions, which round the same way),
 * a product and a sum in one rounding instead of two, and one operation less:
 *   accum:      d = x - shift;  a += d;   b = fma(d, d, b)
 *   bwd_accum:  a += dy;        b = fma(dy, x - center, b)
 */
#include <math.h>

#include "kernels/runs_by_run.h"
#include "kernels/scalar/kernel_io_scalar.h"

#define SBN_DEFINE_STREAM_SCALAR(dt)                                                            \
    void sbn_##dt##_accum_ukernel__scalar(const void *x, size_t n, unsigned lane, double shift, \
                                          double *acc)                                         \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) {                                                              \
            unsigned l = (unsigned)((lane + i) % SBN_LANES);                                   \
            double d = sbn__ld_##dt(x, (int64_t)i) - shift;                                    \
            acc[l] += d;                                                                       \
            acc[SBN_LANES + l] = fma(d, d, acc[SBN_LANES + l]);                                \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_bwd_accum_ukernel__scalar(const void *dy, const void *x, size_t n,          \
                                              unsigned lane, double center, double *acc)       \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) {                                                              \
            unsigned l = (unsigned)((lane + i) % SBN_LANES);                                   \
            double g = sbn__ld_##dt(dy, (int64_t)i);                                           \
            double xc = sbn__ld_##dt(x, (int64_t)i) - center;                                  \
            acc[l] += g;                                                                       \
            acc[SBN_LANES + l] = fma(g, xc, acc[SBN_LANES + l]);                               \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_accum_ukernel__scalar(const void *x, int64_t xs, size_t rows,           \
                                              size_t cn, unsigned lane, const double *shift,   \
                                              double *a, double *b, size_t ld, int fresh)      \
    {                                                                                          \
        size_t r, j;                                                                           \
        if (fresh) sbn__clear_fresh_lanes(a, b, ld, cn, lane, rows);                           \
        for (r = 0; r < rows; r++) {                                                           \
            size_t l = (lane + r) % SBN_LANES;                                                 \
            for (j = 0; j < cn; j++) {                                                         \
                double d = sbn__ld_##dt(x, (int64_t)r * xs + (int64_t)j) - shift[j];           \
                a[l * ld + j] += d;                                                            \
                b[l * ld + j] = fma(d, d, b[l * ld + j]);                                      \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_bwd_accum_ukernel__scalar(const void *dy, int64_t dys, const void *x,   \
                                                  int64_t xs, size_t rows, size_t cn,          \
                                                  unsigned lane, const double *center,         \
                                                  double *a, double *b, size_t ld, int fresh)  \
    {                                                                                          \
        size_t r, j;                                                                           \
        if (fresh) sbn__clear_fresh_lanes(a, b, ld, cn, lane, rows);                           \
        for (r = 0; r < rows; r++) {                                                           \
            size_t l = (lane + r) % SBN_LANES;                                                 \
            for (j = 0; j < cn; j++) {                                                         \
                double g = sbn__ld_##dt(dy, (int64_t)r * dys + (int64_t)j);                    \
                double xc = sbn__ld_##dt(x, (int64_t)r * xs + (int64_t)j) - center[j];         \
                a[l * ld + j] += g;                                                            \
                b[l * ld + j] = fma(g, xc, b[l * ld + j]);                                     \
            }                                                                                  \
        }                                                                                      \
    }

SBN_DEFINE_STREAM_SCALAR(f64)
SBN_DEFINE_STREAM_SCALAR(f32)
SBN_DEFINE_STREAM_SCALAR(f16)
SBN_DEFINE_STREAM_SCALAR(bf16)

SBN_DEFINE_RUNS_REDUCE_BY_RUN(f64, scalar, 8)
SBN_DEFINE_RUNS_REDUCE_BY_RUN(f32, scalar, 4)
SBN_DEFINE_RUNS_REDUCE_BY_RUN(f16, scalar, 2)
SBN_DEFINE_RUNS_REDUCE_BY_RUN(bf16, scalar, 2)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f64, scalar)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f32, scalar)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(f16, scalar)
SBN_DEFINE_PLANES_REDUCE_BY_RUN(bf16, scalar)
SBN_DEFINE_ROW_CHUNK_BY_LANES(f64, scalar, 8)
SBN_DEFINE_ROW_CHUNK_BY_LANES(f32, scalar, 4)
SBN_DEFINE_ROW_CHUNK_BY_LANES(f16, scalar, 2)
SBN_DEFINE_ROW_CHUNK_BY_LANES(bf16, scalar, 2)
