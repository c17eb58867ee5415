/*
 * map_avx512.c - the elementwise fp32 kernels for AVX-512F, sixteen elements at a
 * time (eight with masked loads and stores for the tail), computed in double with
 * the operations of map_scalar.c in the same order and rounded once to float:
 *   normalize: y  = ((x - k0) * k1 + k2)
 *   backward:  gi = (((dy - k0) - (x - k1) * k2) * k3)
 * No FMA: the product is rounded before the addition. Each block is read before
 * it is written, so y == x (in place) is safe; pointers need no alignment.
 */
#include <immintrin.h>

#include "kernels/kernels.h"

static inline __mmask8 tail_mask(size_t r)
{
    return (__mmask8)((1u << r) - 1u);
}

static inline __m256 normalize8(__m256 x, __m512d k0, __m512d k1, __m512d k2)
{
    __m512d v = _mm512_cvtps_pd(x);
    return _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(_mm512_sub_pd(v, k0), k1), k2));
}

void sbn_f32_normalize_ukernel__avx512(const float *x, size_t n, const double *k, float *y)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]), k2 = _mm512_set1_pd(k[2]);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        a = normalize8(a, k0, k1, k2);
        b = normalize8(b, k0, k1, k2);
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        _mm256_mask_storeu_ps(y + i, m, normalize8(_mm256_maskz_loadu_ps(m, x + i), k0, k1, k2));
    }
}

static inline __m256 backward8(__m256 g, __m256 x, __m512d k0, __m512d k1, __m512d k2,
                               __m512d k3)
{
    __m512d a = _mm512_sub_pd(_mm512_cvtps_pd(g), k0);
    __m512d b = _mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(x), k1), k2);
    return _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_sub_pd(a, b), k3));
}

void sbn_f32_backward_ukernel__avx512(const float *dy, const float *x, size_t n, const double *k,
                                      float *gi)
{
    const __m512d k0 = _mm512_set1_pd(k[0]), k1 = _mm512_set1_pd(k[1]);
    const __m512d k2 = _mm512_set1_pd(k[2]), k3 = _mm512_set1_pd(k[3]);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 ga = _mm256_loadu_ps(dy + i), gb = _mm256_loadu_ps(dy + i + 8);
        __m256 xa = _mm256_loadu_ps(x + i), xb = _mm256_loadu_ps(x + i + 8);
        ga = backward8(ga, xa, k0, k1, k2, k3);
        gb = backward8(gb, xb, k0, k1, k2, k3);
        _mm256_storeu_ps(gi + i, ga);
        _mm256_storeu_ps(gi + i + 8, gb);
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        __m256 g = _mm256_maskz_loadu_ps(m, dy + i), v = _mm256_maskz_loadu_ps(m, x + i);
        _mm256_mask_storeu_ps(gi + i, m, backward8(g, v, k0, k1, k2, k3));
    }
}
