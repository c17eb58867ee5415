/*
 * finish_avx512.c - the chunk-end kernels (kernels.h) for AVX-512. invstd: eight
 * channels per division and square root (each rounded once like the scalar C; the
 * division by a power-of-two count a multiplication, sbn__pow2_recip), the strided m2
 * gathered, the zero test as a mask, the last n % 8 channels under a mask.
 * fold_rows: eight channels' 16 lanes in sixteen registers (lanes never reached as
 * +0.0), folded by sbn__fold16's additions; the last cn % 8 channels under a mask.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/x86/kernel_inline.h"

void sbn_invstd_ukernel__avx512(const double *m2, size_t stride, size_t n, double count,
                                double eps, double *out)
{
    const __m512d c = _mm512_set1_pd(count), e = _mm512_set1_pd(eps), one = _mm512_set1_pd(1.0);
    const double recip = sbn__pow2_recip(count); /* nonzero: m2 * recip is m2 / count */
    const __m512d rc = _mm512_set1_pd(recip);
    const __m512i idx = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi64((long long)stride));
    size_t j;
    for (j = 0; j < n; j += 8) {
        const __mmask8 m = n - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (n - j)) - 1u);
        __m512d v = _mm512_mask_i64gather_pd(one, m, idx, m2 + j * stride, 8);
        __m512d r;
        __mmask8 nonzero;
        v = _mm512_add_pd(recip != 0.0 ? _mm512_mul_pd(v, rc) : _mm512_div_pd(v, c), e);
        nonzero = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_NEQ_UQ);
        r = _mm512_maskz_div_pd(nonzero, one, _mm512_sqrt_pd(v));
        _mm512_mask_storeu_pd(out + j, m, r);
    }
}

/* Lanes [0, used) of eight channels (those of mask m) at s, ld apart, folded, with
 * `width` (16, 8, 4, 2 or 1; a constant in each inlined copy) the power of two >= used:
 * the stages whose upper lanes no chunk reached are left out, since they would add +0.0
 * (x + (+0.0) == x for every lane value, kernels.h). Within the width, a lane past `used`
 * loads under an empty mask (+0.0, nothing read) rather than behind a branch, so the
 * lanes stay in registers; `on` has bit l set for l < used. Its address is lane 0's: a
 * masked-off element on a page never touched (a lane no chunk reached may lie on one)
 * costs the CPU a microcode assist, hundreds of cycles each. */
SBN_KERNEL_INLINE __m512d fold_column8(const double *s, size_t ld, unsigned on, __mmask8 m,
                                       unsigned width)
{
#define SBN_LANE(l)                                                                        \
    _mm512_maskz_loadu_pd((__mmask8)(m & (0u - ((on >> (l)) & 1u))),                     \
                          s + (size_t)((on >> (l)) & 1u) * (l) * ld)
    __m512d h0 = SBN_LANE(0), h1, h2, h3, h4, h5, h6, h7;
    if (width == 1) return h0;
    h1 = SBN_LANE(1);
    if (width == 2) return _mm512_add_pd(h0, h1);
    h2 = SBN_LANE(2);
    h3 = SBN_LANE(3);
    if (width == 4) return _mm512_add_pd(_mm512_add_pd(h0, h2), _mm512_add_pd(h1, h3));
    h4 = SBN_LANE(4);
    h5 = SBN_LANE(5);
    h6 = SBN_LANE(6);
    h7 = SBN_LANE(7);
    if (width == 16) {
        h0 = _mm512_add_pd(h0, SBN_LANE(8));
        h1 = _mm512_add_pd(h1, SBN_LANE(9));
        h2 = _mm512_add_pd(h2, SBN_LANE(10));
        h3 = _mm512_add_pd(h3, SBN_LANE(11));
        h4 = _mm512_add_pd(h4, SBN_LANE(12));
        h5 = _mm512_add_pd(h5, SBN_LANE(13));
        h6 = _mm512_add_pd(h6, SBN_LANE(14));
        h7 = _mm512_add_pd(h7, SBN_LANE(15));
    }
#undef SBN_LANE
    h0 = _mm512_add_pd(h0, h4);
    h1 = _mm512_add_pd(h1, h5);
    h2 = _mm512_add_pd(h2, h6);
    h3 = _mm512_add_pd(h3, h7);
    h0 = _mm512_add_pd(h0, h2);
    h1 = _mm512_add_pd(h1, h3);
    return _mm512_add_pd(h0, h1);
}

SBN_KERNEL_INLINE void fold_rows(double *a, double *b, size_t ld, size_t cn, unsigned used,
                                 unsigned width)
{
    const unsigned on = (1u << used) - 1u;
    size_t j;
    for (j = 0; j < cn; j += 8) {
        const __mmask8 m = cn - j >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (cn - j)) - 1u);
        _mm512_mask_storeu_pd(a + j, m, fold_column8(a + j, ld, on, m, width));
        _mm512_mask_storeu_pd(b + j, m, fold_column8(b + j, ld, on, m, width));
    }
}

void sbn_fold_rows_ukernel__avx512(double *a, double *b, size_t ld, size_t cn, unsigned used)
{
    if (used > 8) fold_rows(a, b, ld, cn, used, 16);
    else if (used > 4) fold_rows(a, b, ld, cn, used, 8);
    else if (used > 2) fold_rows(a, b, ld, cn, used, 4);
    else if (used == 2) fold_rows(a, b, ld, cn, used, 2);
    else fold_rows(a, b, ld, cn, used, 1);
}
