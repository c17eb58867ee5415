/*
 * convert_avx2.c - the load and store kernels for AVX2 and F16C, eight elements
 * at a time, the tail through the scalar conversions of convert.c (by way of
 * kernel_io_scalar.h). The vector conversions live in io_avx2.h, shared with the
 * streaming kernels:
 *   loads:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   stores: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16 and
 *           bf16 first narrow to float with round-to-odd exactly as
 *           sbn__narrow_round_to_odd does, then round to nearest even (vcvtps2ph
 *           for fp16, the integer carry trick of convert.c for bf16); NaNs come
 *           out as convert.c writes them.
 */
#include "kernels/x86/io_avx2.h"

/* ---- loads ---- */

#define SBN_DEFINE_LOAD_AVX2(dt)                                                               \
    void sbn_##dt##_load_ukernel__avx2(const void *src, size_t n, double *dst)                 \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8) {                                                           \
            __m256d lo, hi;                                                                    \
            avx2_ld8_##dt(src, (int64_t)i, &lo, &hi);                                          \
            _mm256_storeu_pd(dst + i, lo);                                                     \
            _mm256_storeu_pd(dst + i + 4, hi);                                                 \
        }                                                                                      \
        for (; i < n; i++) dst[i] = sbn__ld_##dt(src, (int64_t)i);                             \
    }

SBN_DEFINE_LOAD_AVX2(f32)
SBN_DEFINE_LOAD_AVX2(f16)
SBN_DEFINE_LOAD_AVX2(bf16)

/* ---- stores ---- */

#define SBN_DEFINE_STORE_AVX2(dt)                                                              \
    void sbn_##dt##_store_ukernel__avx2(const double *src, size_t n, void *dst)                \
    {                                                                                          \
        size_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                             \
            avx2_st8_##dt(dst, (int64_t)i, _mm256_loadu_pd(src + i),                           \
                          _mm256_loadu_pd(src + i + 4));                                       \
        for (; i < n; i++) sbn__st_##dt(dst, (int64_t)i, src[i]);                             \
    }

SBN_DEFINE_STORE_AVX2(f32)
SBN_DEFINE_STORE_AVX2(f16)
SBN_DEFINE_STORE_AVX2(bf16)
