/*
 * kernels.h - the micro-kernels under the channel reductions and maps, and the
 * table that picks one variant of each per process (scalar, AVX2, AVX-512; see
 * kernels.inc). Names follow sbn_<dtype>_<kernel>_ukernel__<isa>.
 *
 * The canonical order (docs/numerics.md): a reduction over x[0..n) keeps 16 lane
 * accumulators, lane k adding x[k], x[k+16], x[k+32], ... in increasing index
 * order starting from +0.0; the lanes are then folded by halving,
 *   for h in 8, 4, 2, 1:  s[k] = s[k] + s[k+h]  for k < h,
 * and s[0] is the sum. No fused multiply-add anywhere (files are compiled with
 * -ffp-contract=off): every variant gives the same bits as the scalar one.
 * Elementwise kernels compute each element in double with the same operations
 * in the same order as the scalar code, so they match bit for bit too.
 */
#ifndef SBN_KERNELS_H
#define SBN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define SBN_LANES 16

/* Moments of x[0..n), n >= 1: mean = fold(x)/n; with d = x - mean,
 * M2 = fold(d*d) - fold(d)^2/n, clamped at 0. */
typedef void (*sbn_moments_fn)(const double *x, size_t n, double *mean, double *m2);
/* sum = fold(x), sumsq = fold(x*x). */
typedef void (*sbn_sums_fn)(const double *x, size_t n, double *sum, double *sumsq);
/* sum_dy = fold(dy), sum_dy_xmu = fold(dy * (x - center)). */
typedef void (*sbn_backward_sums_fn)(const double *dy, const double *x, size_t n, double center,
                                     double *sum_dy, double *sum_dy_xmu);
/* Exact widening of n contiguous elements to double. */
typedef void (*sbn_load_fn)(const void *src, size_t n, double *dst);
/* Narrowing of n doubles to contiguous elements, correctly rounded (to nearest, ties to even). */
typedef void (*sbn_store_fn)(const double *src, size_t n, void *dst);
/* y[i] = (float)(((double)x[i] - k[0]) * k[1] + k[2]) over contiguous fp32. */
typedef void (*sbn_f32_normalize_fn)(const float *x, size_t n, const double *k, float *y);
/* gi[i] = (float)((((double)dy[i] - k[0]) - ((double)x[i] - k[1]) * k[2]) * k[3]). */
typedef void (*sbn_f32_backward_fn)(const float *dy, const float *x, size_t n, const double *k,
                                    float *gi);

typedef struct sbn_kernels {
    const char *isa;
    sbn_moments_fn moments;
    sbn_sums_fn sums;
    sbn_backward_sums_fn backward_sums;
    sbn_load_fn load_f32, load_f16, load_bf16;
    sbn_store_fn store_f32, store_f16, store_bf16;
    sbn_f32_normalize_fn f32_normalize;
    sbn_f32_backward_fn f32_backward;
} sbn_kernels;

/*
 * The kernels chosen for this process: the widest ISA the CPU supports among those
 * built, or scalar when SBN_FORCE_SCALAR=1 is set in the environment. Chosen once.
 */
const sbn_kernels *sbn__kernels(void);
/* The table of one ISA by name ("scalar", "avx2", "avx512"), or NULL if not built
 * or not supported by this CPU (tests compare every ISA with scalar). */
const sbn_kernels *sbn__kernels_for(const char *isa);

/* The lane fold, shared by every variant once its lanes are in memory. */
static inline double sbn__fold16(double *s)
{
    int h, k;
    for (h = SBN_LANES / 2; h >= 1; h /= 2)
        for (k = 0; k < h; k++) s[k] = s[k] + s[k + h];
    return s[0];
}

#define SBN_DECLARE_KERNELS(isa)                                                              \
    void sbn_f64_moments_ukernel__##isa(const double *x, size_t n, double *mean, double *m2); \
    void sbn_f64_sums_ukernel__##isa(const double *x, size_t n, double *sum, double *sumsq);  \
    void sbn_f64_backward_sums_ukernel__##isa(const double *dy, const double *x, size_t n,    \
                                              double center, double *sum_dy,                 \
                                              double *sum_dy_xmu);                           \
    void sbn_f32_load_ukernel__##isa(const void *src, size_t n, double *dst);                \
    void sbn_f16_load_ukernel__##isa(const void *src, size_t n, double *dst);                \
    void sbn_bf16_load_ukernel__##isa(const void *src, size_t n, double *dst);               \
    void sbn_f32_store_ukernel__##isa(const double *src, size_t n, void *dst);               \
    void sbn_f16_store_ukernel__##isa(const double *src, size_t n, void *dst);               \
    void sbn_bf16_store_ukernel__##isa(const double *src, size_t n, void *dst);              \
    void sbn_f32_normalize_ukernel__##isa(const float *x, size_t n, const double *k,          \
                                          float *y);                                         \
    void sbn_f32_backward_ukernel__##isa(const float *dy, const float *x, size_t n,           \
                                         const double *k, float *gi);

SBN_DECLARE_KERNELS(scalar)
SBN_DECLARE_KERNELS(avx2)
SBN_DECLARE_KERNELS(avx512)

/* Conversions shared by the scalar kernels and the SIMD tails (convert.c). */
float sbn__f16_to_float(uint16_t h);
uint16_t sbn__float_to_f16(float f);
float sbn__bf16_to_float(uint16_t h);
uint16_t sbn__float_to_bf16(float f);
/* double -> float rounding to odd (truncate, then set the last bit if inexact). */
float sbn__narrow_round_to_odd(double d);

#endif /* SBN_KERNELS_H */
