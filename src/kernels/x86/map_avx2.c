/*
 * map_avx2.c - the elementwise fp32 kernels for AVX2, eight elements at a time
 * (the tail in scalar code), computed in double with the operations of
 * map_scalar.c in the same order and rounded once to float:
 *   normalize: y  = ((x - k0) * k1 + k2)
 *   backward:  gi = (((dy - k0) - (x - k1) * k2) * k3)
 * No FMA: the product is rounded before the addition. Each block is read before
 * it is written, so y == x (in place) is safe; pointers need no alignment.
 */
#include <immintrin.h>

#include "kernels/kernels.h"

static inline __m128 normalize4(__m128 x, __m256d k0, __m256d k1, __m256d k2)
{
    __m256d v = _mm256_cvtps_pd(x);
    return _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(v, k0), k1), k2));
}

void sbn_f32_normalize_ukernel__avx2(const float *x, size_t n, const double *k, float *y)
{
    const __m256d k0 = _mm256_set1_pd(k[0]), k1 = _mm256_set1_pd(k[1]), k2 = _mm256_set1_pd(k[2]);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m128 a = normalize4(_mm256_castps256_ps128(v), k0, k1, k2);
        __m128 b = normalize4(_mm256_extractf128_ps(v, 1), k0, k1, k2);
        _mm256_storeu_ps(y + i, _mm256_set_m128(b, a));
    }
    for (; i < n; i++) y[i] = (float)(((double)x[i] - k[0]) * k[1] + k[2]);
}

static inline __m128 backward4(__m128 g, __m128 x, __m256d k0, __m256d k1, __m256d k2,
                               __m256d k3)
{
    __m256d a = _mm256_sub_pd(_mm256_cvtps_pd(g), k0);
    __m256d b = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(x), k1), k2);
    return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_sub_pd(a, b), k3));
}

void sbn_f32_backward_ukernel__avx2(const float *dy, const float *x, size_t n, const double *k,
                                    float *gi)
{
    const __m256d k0 = _mm256_set1_pd(k[0]), k1 = _mm256_set1_pd(k[1]);
    const __m256d k2 = _mm256_set1_pd(k[2]), k3 = _mm256_set1_pd(k[3]);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(dy + i), v = _mm256_loadu_ps(x + i);
        __m128 a = backward4(_mm256_castps256_ps128(g), _mm256_castps256_ps128(v), k0, k1, k2, k3);
        __m128 b = backward4(_mm256_extractf128_ps(g, 1), _mm256_extractf128_ps(v, 1), k0, k1, k2, k3);
        _mm256_storeu_ps(gi + i, _mm256_set_m128(b, a));
    }
    for (; i < n; i++)
        gi[i] = (float)((((double)dy[i] - k[0]) - ((double)x[i] - k[1]) * k[2]) * k[3]);
}
