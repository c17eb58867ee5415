/*
 * stream_map_scalar.c - the portable elementwise maps of kernels.h for every
 * element type, over runs of one channel and over rows of a block of channels
 * (coefficients in structure-of-arrays form). fp64 computes each element in
 * double with double coefficients k:
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 * fp32, fp16 and bf16 widen each element exactly to float and compute in float
 * with float coefficients f (sbn__map_coefs_float) and C99's fmaf, which rounds
 * once like the vector FMA instructions:
 *   normalize:  y  = fma(x - f0, f1, f2)
 *   backward:   gi = fma(x - f0, f1, dy - f2) * f3
 * then narrow once to the element type (fp16/bf16: to nearest even).
 */
#include <math.h>

#include "kernels/runs_by_run.h"
#include "kernels/scalar/kernel_io_scalar.h"

/* fp64: double coefficients, double arithmetic, no fused product. */
static inline double normalize_f64(double x, const double *k, size_t ldk)
{
    return (x - k[0]) * k[ldk] + k[2 * ldk];
}

static inline double backward_f64(double g, double x, const double *k, size_t ldk)
{
    return ((g - k[0]) - (x - k[ldk]) * k[2 * ldk]) * k[3 * ldk];
}

/* fp32/fp16/bf16: float coefficients, float arithmetic, one explicit fused product. */
static inline float normalize_flt(float x, const float *f, size_t ldk)
{
    return fmaf(x - f[0], f[ldk], f[2 * ldk]);
}

static inline float backward_flt(float g, float x, const float *f, size_t ldk)
{
    return fmaf(x - f[0], f[ldk], g - f[2 * ldk]) * f[3 * ldk];
}

/* One family per element type: LD/ST widen/narrow, CT the coefficient type, OP the arithmetic. */
#define SBN_DEFINE_MAP_SCALAR(dt, CT, LD, ST, SFX)                                              \
    void sbn_##dt##_normalize_ukernel__scalar(const void *x, size_t n, const void *k, void *y)   \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) ST(y, (int64_t)i, normalize_##SFX(LD(x, (int64_t)i), k, 1));   \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_backward_ukernel__scalar(const void *dy, const void *x, size_t n,           \
                                             const void *k, void *gi)                          \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++)                                                                \
            ST(gi, (int64_t)i, backward_##SFX(LD(dy, (int64_t)i), LD(x, (int64_t)i), k, 1));   \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_normalize_ukernel__scalar(const void *x, int64_t xs, size_t rows,       \
                                                  size_t cn, const void *k, size_t ldk,        \
                                                  void *y, int64_t ys)                         \
    {                                                                                          \
        const CT *kc = k;                                                                      \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++)                                                             \
            for (j = 0; j < cn; j++)                                                           \
                ST(y, (int64_t)r * ys + (int64_t)j,                                            \
                   normalize_##SFX(LD(x, (int64_t)r * xs + (int64_t)j), kc + j, ldk));         \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_backward_ukernel__scalar(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 const void *k, size_t ldk, void *gi,          \
                                                 int64_t gs)                                   \
    {                                                                                          \
        const CT *kc = k;                                                                      \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++)                                                             \
            for (j = 0; j < cn; j++)                                                           \
                ST(gi, (int64_t)r * gs + (int64_t)j,                                           \
                   backward_##SFX(LD(dy, (int64_t)r * dys + (int64_t)j),                       \
                                  LD(x, (int64_t)r * xs + (int64_t)j), kc + j, ldk));          \
    }

SBN_DEFINE_MAP_SCALAR(f64, double, sbn__ld_f64, sbn__st_f64, f64)
SBN_DEFINE_MAP_SCALAR(f32, float, sbn__ldf_f32, sbn__stf_f32, flt)
SBN_DEFINE_MAP_SCALAR(f16, float, sbn__ldf_f16, sbn__stf_f16, flt)
SBN_DEFINE_MAP_SCALAR(bf16, float, sbn__ldf_bf16, sbn__stf_bf16, flt)

SBN_DEFINE_RUNS_MAP_BY_RUN(f64, scalar, 8, double)
SBN_DEFINE_RUNS_MAP_BY_RUN(f32, scalar, 4, float)
SBN_DEFINE_RUNS_MAP_BY_RUN(f16, scalar, 2, float)
SBN_DEFINE_RUNS_MAP_BY_RUN(bf16, scalar, 2, float)
