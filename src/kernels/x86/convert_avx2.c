/*
 * convert_avx2.c - the load and store kernels for AVX2 and F16C, eight elements
 * at a time, the tail through the scalar conversions of convert.c.
 *   loads:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   stores: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16 and
 *           bf16 first narrow to float with round-to-odd exactly as
 *           sbn__narrow_round_to_odd does (round to nearest; where that is finite
 *           and inexact, step one ulp toward zero if it went away from zero, then
 *           set the last bit), then round to nearest even: vcvtps2ph for fp16, the
 *           integer carry trick of convert.c for bf16. NaNs come out as convert.c
 *           writes them (fp16: the canonical quiet NaN with the sign; bf16: the
 *           high half, quieted).
 */
#include <immintrin.h>

#include "kernels/kernels.h"

/* ---- loads ---- */

void sbn_f32_load_ukernel__avx2(const void *src, size_t n, double *dst)
{
    const float *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_pd(dst + i, _mm256_cvtps_pd(_mm_loadu_ps(p + i)));
        _mm256_storeu_pd(dst + i + 4, _mm256_cvtps_pd(_mm_loadu_ps(p + i + 4)));
    }
    for (; i < n; i++) dst[i] = p[i];
}

static inline void store_float8(double *dst, __m256 f)
{
    _mm256_storeu_pd(dst, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(dst + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
}

void sbn_f16_load_ukernel__avx2(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        store_float8(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i))));
    for (; i < n; i++) dst[i] = sbn__f16_to_float(p[i]);
}

void sbn_bf16_load_ukernel__avx2(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + i)));
        store_float8(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; i++) dst[i] = sbn__bf16_to_float(p[i]);
}

/* ---- stores ---- */

void sbn_f32_store_ukernel__avx2(const double *src, size_t n, void *dst)
{
    float *p = dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128 a = _mm256_cvtpd_ps(_mm256_loadu_pd(src + i));
        __m128 b = _mm256_cvtpd_ps(_mm256_loadu_pd(src + i + 4));
        _mm256_storeu_ps(p + i, _mm256_set_m128(b, a));
    }
    for (; i < n; i++) p[i] = (float)src[i];
}

/* The low 32 bits of each 64-bit lane of four lane masks, as four 32-bit lanes. */
static inline __m128i narrow_mask(__m256d m)
{
    __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), idx));
}

/* Four doubles to float bits, rounded to odd as sbn__narrow_round_to_odd. */
static inline __m128i round_to_odd4(__m256d x)
{
    const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(__builtin_inf());
    __m128 f = _mm256_cvtpd_ps(x);
    __m256d back = _mm256_cvtps_pd(f);
    __m256d aback = _mm256_andnot_pd(sign, back), ax = _mm256_andnot_pd(sign, x);
    /* finite and inexact; of those, rounded away from zero */
    __m256d inexact = _mm256_and_pd(_mm256_cmp_pd(back, x, _CMP_NEQ_OQ),
                                    _mm256_cmp_pd(aback, inf, _CMP_LT_OQ));
    __m256d away = _mm256_and_pd(inexact, _mm256_cmp_pd(aback, ax, _CMP_GT_OQ));
    __m128i u = _mm_castps_si128(f);
    u = _mm_add_epi32(u, narrow_mask(away)); /* -1: one ulp toward zero */
    return _mm_or_si128(u, _mm_and_si128(narrow_mask(inexact), _mm_set1_epi32(1)));
}

static inline __m256i round_to_odd8(const double *src)
{
    __m128i lo = round_to_odd4(_mm256_loadu_pd(src));
    __m128i hi = round_to_odd4(_mm256_loadu_pd(src + 4));
    return _mm256_set_m128i(hi, lo);
}

/* Float bits to fp16, round to nearest even; NaN -> sign | 0x7E00 as convert.c. */
static inline __m128i float8_to_f16(__m256i u)
{
    __m256 f = _mm256_castsi256_ps(u);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i qn = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                 _mm256_set1_epi32(0x7E00));
    __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    __m128i qn16 = _mm_packus_epi32(_mm256_castsi256_si128(qn), _mm256_extracti128_si256(qn, 1));
    return _mm_blendv_epi8(h, qn16, nan16);
}

/* Float bits to bf16, round to nearest even on the dropped 16 bits; NaN -> high half | 0x40. */
static inline __m128i float8_to_bf16(__m256i u)
{
    __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7F800000));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

void sbn_f16_store_ukernel__avx2(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i), float8_to_f16(round_to_odd8(src + i)));
    for (; i < n; i++) p[i] = sbn__float_to_f16(sbn__narrow_round_to_odd(src[i]));
}

void sbn_bf16_store_ukernel__avx2(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(p + i), float8_to_bf16(round_to_odd8(src + i)));
    for (; i < n; i++) p[i] = sbn__float_to_bf16(sbn__narrow_round_to_odd(src[i]));
}
