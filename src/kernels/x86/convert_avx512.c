/*
 * convert_avx512.c - the load and store kernels for AVX-512 (F, BW, VL, DQ) and
 * F16C, eight elements at a time with masked loads and stores for the tail.
 *   loads:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   stores: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16 and
 *           bf16 first narrow to float with round-to-odd (a truncating vcvtpd2ps
 *           with the last bit set where the truncation was inexact), then round
 *           to nearest even: vcvtps2ph for fp16, the integer carry trick of
 *           convert.c for bf16. NaNs come out as convert.c writes them (fp16: the
 *           canonical quiet NaN with the sign; bf16: the high half, quieted).
 * The float from round-to-odd differs from sbn__narrow_round_to_odd only above
 * FLT_MAX (FLT_MAX here, infinity there), which both stores turn into infinity.
 * The conversion helpers live in io_avx512.h, shared with the streaming kernels.
 */
#include "kernels/x86/io_avx512.h"

/* ---- loads ---- */

void sbn_f32_load_ukernel__avx512(const void *src, size_t n, double *dst)
{
    const float *p = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_pd(dst + i, _mm512_cvtps_pd(_mm256_loadu_ps(p + i)));
        _mm512_storeu_pd(dst + i + 8, _mm512_cvtps_pd(_mm256_loadu_ps(p + i + 8)));
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        _mm512_mask_storeu_pd(dst + i, m, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, p + i)));
    }
}

void sbn_f16_load_ukernel__avx512(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + i)));
        _mm512_storeu_pd(dst + i, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
        _mm512_storeu_pd(dst + i + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1)));
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        __m256 f = _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, p + i));
        _mm512_mask_storeu_pd(dst + i, m, _mm512_cvtps_pd(f));
    }
}

void sbn_bf16_load_ukernel__avx512(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i w = _mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + i))), 16);
        __m512 f = _mm512_castsi512_ps(w);
        _mm512_storeu_pd(dst + i, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
        _mm512_storeu_pd(dst + i + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1)));
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        __m256 f = bf16x8_to_float(_mm_maskz_loadu_epi16(m, p + i));
        _mm512_mask_storeu_pd(dst + i, m, _mm512_cvtps_pd(f));
    }
}

/* ---- stores ---- */

void sbn_f32_store_ukernel__avx512(const double *src, size_t n, void *dst)
{
    float *p = dst;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(p + i, _mm512_cvtpd_ps(_mm512_loadu_pd(src + i)));
        _mm256_storeu_ps(p + i + 8, _mm512_cvtpd_ps(_mm512_loadu_pd(src + i + 8)));
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xFF : tail_mask(n - i);
        _mm256_mask_storeu_ps(p + i, m, _mm512_cvtpd_ps(_mm512_maskz_loadu_pd(m, src + i)));
    }
}

void sbn_f16_store_ukernel__avx512(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i), float8_to_f16(round_to_odd8(_mm512_loadu_pd(src + i))));
    if (i < n) {
        __mmask8 m = tail_mask(n - i);
        _mm_mask_storeu_epi16(p + i, m, float8_to_f16(round_to_odd8(_mm512_maskz_loadu_pd(m, src + i))));
    }
}

void sbn_bf16_store_ukernel__avx512(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i), float8_to_bf16(round_to_odd8(_mm512_loadu_pd(src + i))));
    if (i < n) {
        __mmask8 m = tail_mask(n - i);
        _mm_mask_storeu_epi16(p + i, m, float8_to_bf16(round_to_odd8(_mm512_maskz_loadu_pd(m, src + i))));
    }
}
