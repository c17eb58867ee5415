/*
 * finish_avx2.c - the invstd kernel (kernels.h) for AVX2: four channels per division
 * and square root (vdivpd, vsqrtpd, each rounded once like the scalar C), the zero
 * test as a blend; the last n % 4 channels by sbn__invstd.
 */
#include <immintrin.h>

#include "kernels/kernels.h"

void sbn_invstd_ukernel__avx2(const double *m2, size_t stride, size_t n, double count,
                              double eps, double *out)
{
    const __m256d c = _mm256_set1_pd(count), e = _mm256_set1_pd(eps), one = _mm256_set1_pd(1.0);
    const __m256d zero = _mm256_setzero_pd();
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const double *p = m2 + j * stride;
        __m256d v = _mm256_set_pd(p[3 * stride], p[2 * stride], p[stride], p[0]);
        __m256d r;
        v = _mm256_add_pd(_mm256_div_pd(v, c), e);
        r = _mm256_div_pd(one, _mm256_sqrt_pd(v));
        _mm256_storeu_pd(out + j, _mm256_blendv_pd(r, zero, _mm256_cmp_pd(v, zero, _CMP_EQ_OQ)));
    }
    for (; j < n; j++) out[j] = sbn__invstd(m2[j * stride] / count, eps);
}
