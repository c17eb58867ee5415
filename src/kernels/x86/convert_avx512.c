/*
 * convert_avx512.c - the load and store kernels for AVX-512 (F, BW, VL, DQ) and
 * F16C, written once over the element-type helpers of io_avx512.h (the ones the
 * streaming kernels use): loads eight elements at a time with a masked tail,
 * stores sixteen at a time then eight with a mask.
 *   loads:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   stores: fp32 by vcvtpd2ps (round to nearest even, like the C cast); fp16 and
 *           bf16 correctly rounded as convert.c does (see io_avx512.h), NaNs
 *           written as convert.c writes them.
 */
#include "kernels/x86/io_avx512.h"

SBN512_INLINE void load_run(sbn_kdtype dt, const void *src, size_t n, double *dst)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm512_storeu_pd(dst + i, sbn512_load8(dt, sbn512_at(dt, src, i)));
    if (i < n) {
        const __mmask8 m = tail_mask(n - i);
        _mm512_mask_storeu_pd(dst + i, m, sbn512_load8z(dt, sbn512_at(dt, src, i), m));
    }
}

SBN512_INLINE void store_run(sbn_kdtype dt, const double *src, size_t n, void *dst)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        sbn512_store16(dt, sbn512_at_w(dt, dst, i), _mm512_loadu_pd(src + i),
                       _mm512_loadu_pd(src + i + 8));
    for (; i < n; i += 8) {
        const __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        sbn512_store8m(dt, sbn512_at_w(dt, dst, i), m, _mm512_maskz_loadu_pd(m, src + i));
    }
}

#define SBN_DEFINE_CONVERT_AVX512(dt, kd)                                                       \
    void sbn_##dt##_load_ukernel__avx512(const void *src, size_t n, double *dst)               \
    {                                                                                          \
        load_run(kd, src, n, dst);                                                             \
    }                                                                                          \
    void sbn_##dt##_store_ukernel__avx512(const double *src, size_t n, void *dst)              \
    {                                                                                          \
        store_run(kd, src, n, dst);                                                            \
    }

SBN_DEFINE_CONVERT_AVX512(f32, SBN_KD_F32)
SBN_DEFINE_CONVERT_AVX512(f16, SBN_KD_F16)
SBN_DEFINE_CONVERT_AVX512(bf16, SBN_KD_BF16)
