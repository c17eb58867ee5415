/*
 * finish_avx2.c - the chunk-end kernels (kernels.h) for AVX2. invstd: four channels
 * per division and square root (vdivpd, vsqrtpd, each rounded once like the scalar
 * C; the division by a power-of-two count a multiplication, sbn__pow2_recip), the zero
 * test as a blend; the last n % 4 channels by sbn__invstd. fold_rows:
 * four channels' 16 lanes in registers (lanes never reached as +0.0), folded by
 * sbn__fold16's additions; the last cn % 4 channels one at a time, the same way.
 */
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/kernel_inline.h"

void sbn_invstd_ukernel__avx2(const double *m2, size_t stride, size_t n, double count,
                              double eps, double *out)
{
    const __m256d c = _mm256_set1_pd(count), e = _mm256_set1_pd(eps), one = _mm256_set1_pd(1.0);
    const __m256d zero = _mm256_setzero_pd();
    const double recip = sbn__pow2_recip(count); /* nonzero: m2 * recip is m2 / count */
    const __m256d rc = _mm256_set1_pd(recip);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const double *p = m2 + j * stride;
        __m256d v = _mm256_set_pd(p[3 * stride], p[2 * stride], p[stride], p[0]);
        __m256d r;
        v = _mm256_add_pd(recip != 0.0 ? _mm256_mul_pd(v, rc) : _mm256_div_pd(v, c), e);
        r = _mm256_div_pd(one, _mm256_sqrt_pd(v));
        _mm256_storeu_pd(out + j, _mm256_blendv_pd(r, zero, _mm256_cmp_pd(v, zero, _CMP_EQ_OQ)));
    }
    for (; j < n; j++) out[j] = sbn__invstd(m2[j * stride] / count, eps);
}

/* Lanes [0, used) of four channels at s, ld apart, folded, with `width` (16, 8, 4, 2 or
 * 1; a constant in each inlined copy) the power of two >= used: the stages whose upper
 * lanes no chunk reached are left out, since they would add +0.0 (x + (+0.0) == x for
 * every lane value, kernels.h). Within the width, a lane past `used` loads under an
 * empty mask (+0.0, nothing read) rather than behind a branch, so the lanes stay in
 * registers; `on` has bit l set for l < used. Its address is lane 0's: a masked-off
 * element on a page never touched (a lane no chunk reached may lie on one) costs the
 * CPU a microcode assist, hundreds of cycles each. */
SBN_KERNEL_INLINE __m256d fold_column4(const double *s, size_t ld, unsigned on,
                                       unsigned width)
{
#define SBN_LANE(l)                                                                       \
    _mm256_maskload_pd(s + (size_t)((on >> (l)) & 1u) * (l) * ld,                        \
                       _mm256_set1_epi64x(-(long long)((on >> (l)) & 1u)))
    __m256d h0 = SBN_LANE(0), h1, h2, h3, h4, h5, h6, h7;
    if (width == 1) return h0;
    h1 = SBN_LANE(1);
    if (width == 2) return _mm256_add_pd(h0, h1);
    h2 = SBN_LANE(2);
    h3 = SBN_LANE(3);
    if (width == 4) return _mm256_add_pd(_mm256_add_pd(h0, h2), _mm256_add_pd(h1, h3));
    h4 = SBN_LANE(4);
    h5 = SBN_LANE(5);
    h6 = SBN_LANE(6);
    h7 = SBN_LANE(7);
    if (width == 16) {
        h0 = _mm256_add_pd(h0, SBN_LANE(8));
        h1 = _mm256_add_pd(h1, SBN_LANE(9));
        h2 = _mm256_add_pd(h2, SBN_LANE(10));
        h3 = _mm256_add_pd(h3, SBN_LANE(11));
        h4 = _mm256_add_pd(h4, SBN_LANE(12));
        h5 = _mm256_add_pd(h5, SBN_LANE(13));
        h6 = _mm256_add_pd(h6, SBN_LANE(14));
        h7 = _mm256_add_pd(h7, SBN_LANE(15));
    }
#undef SBN_LANE
    h0 = _mm256_add_pd(h0, h4);
    h1 = _mm256_add_pd(h1, h5);
    h2 = _mm256_add_pd(h2, h6);
    h3 = _mm256_add_pd(h3, h7);
    h0 = _mm256_add_pd(h0, h2);
    h1 = _mm256_add_pd(h1, h3);
    return _mm256_add_pd(h0, h1);
}

SBN_KERNEL_INLINE void fold_rows(double *a, double *b, size_t ld, size_t cn, unsigned used,
                                 unsigned width)
{
    const unsigned on = (1u << used) - 1u;
    size_t j = 0;
    for (; j + 4 <= cn; j += 4) {
        _mm256_storeu_pd(a + j, fold_column4(a + j, ld, on, width));
        _mm256_storeu_pd(b + j, fold_column4(b + j, ld, on, width));
    }
    for (; j < cn; j++) {
        sbn__fold16_column(a + j, ld, used);
        sbn__fold16_column(b + j, ld, used);
    }
}

void sbn_fold_rows_ukernel__avx2(double *a, double *b, size_t ld, size_t cn, unsigned used)
{
    if (used > 8) fold_rows(a, b, ld, cn, used, 16);
    else if (used > 4) fold_rows(a, b, ld, cn, used, 8);
    else if (used > 2) fold_rows(a, b, ld, cn, used, 4);
    else if (used == 2) fold_rows(a, b, ld, cn, used, 2);
    else fold_rows(a, b, ld, cn, used, 1);
}
