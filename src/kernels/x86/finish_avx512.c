/*
 * finish_avx512.c - the invstd kernel (kernels.h) for AVX-512: eight channels per
 * division and square root (each rounded once like the scalar C), the strided m2
 * gathered, the zero test as a mask, the last n % 8 channels under a mask.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"

void sbn_invstd_ukernel__avx512(const double *m2, size_t stride, size_t n, double count,
                                double eps, double *out)
{
    const __m512d c = _mm512_set1_pd(count), e = _mm512_set1_pd(eps), one = _mm512_set1_pd(1.0);
    const __m512i idx = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi64((long long)stride));
    size_t j;
    for (j = 0; j < n; j += 8) {
        const __mmask8 m = n - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (n - j)) - 1u);
        __m512d v = _mm512_mask_i64gather_pd(one, m, idx, m2 + j * stride, 8);
        __m512d r;
        __mmask8 nonzero;
        v = _mm512_add_pd(_mm512_div_pd(v, c), e);
        nonzero = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_NEQ_UQ);
        r = _mm512_maskz_div_pd(nonzero, one, _mm512_sqrt_pd(v));
        _mm512_mask_storeu_pd(out + j, m, r);
    }
}
