/*
 * io_avx2.h - element access for the AVX2 (+F16C) kernels, shared by
 * convert_avx2.c and the streaming kernels: the exact widening of 4 or 8
 * contiguous fp64/fp32/fp16/bf16 elements to doubles, and the one narrowing of
 * doubles to the element type, bit for bit as the scalar conversions of convert.c.
 *   widen:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   narrow: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16 and
 *           bf16 first narrow to float with round-to-odd exactly as
 *           sbn__narrow_round_to_odd does (round to nearest; where that is finite
 *           and inexact, step one ulp toward zero if it went away from zero, then
 *           set the last bit), then round to nearest even: vcvtps2ph for fp16, the
 *           integer carry trick of convert.c for bf16. NaNs come out as convert.c
 *           writes them (fp16: the canonical quiet NaN with the sign; bf16: the
 *           high half, quieted).
 * Every access reads or writes exactly the 4 or 8 elements named; element i of a
 * typed array is passed as (base, i). The per-dtype helpers are named by the
 * dtype token of the kernel macros (avx2_ld4_f16, avx2_st8_bf16, ...); the
 * scalar sbn__ld_<dt> / sbn__st_<dt> of kernel_io_scalar.h serve heads and tails.
 */
#ifndef SBN_IO_AVX2_H
#define SBN_IO_AVX2_H

#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/scalar/kernel_io_scalar.h"

/* ---- narrowing helpers ---- */

/* The low 32 bits of each 64-bit lane of four lane masks, as four 32-bit lanes. */
static inline __m128i avx2_narrow_mask(__m256d m)
{
    __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), idx));
}

/* Four doubles to float bits, rounded to odd as sbn__narrow_round_to_odd. */
static inline __m128i avx2_round_to_odd4(__m256d x)
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
    u = _mm_add_epi32(u, avx2_narrow_mask(away)); /* -1: one ulp toward zero */
    return _mm_or_si128(u, _mm_and_si128(avx2_narrow_mask(inexact), _mm_set1_epi32(1)));
}

/* Float bits to fp16, round to nearest even; NaN -> sign | 0x7E00 as convert.c. */
static inline __m128i avx2_float8_to_f16(__m256i u)
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

/* The same for four floats; the result in the low 64 bits. */
static inline __m128i avx2_float4_to_f16(__m128i u)
{
    __m128 f = _mm_castsi128_ps(u);
    __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(f, f));
    __m128i h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m128i qn = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(0x8000)),
                              _mm_set1_epi32(0x7E00));
    return _mm_blendv_epi8(h, _mm_packus_epi32(qn, qn), _mm_packs_epi32(nan, nan));
}

/* Float bits to bf16, round to nearest even on the dropped 16 bits; NaN -> high half | 0x40. */
static inline __m128i avx2_float8_to_bf16(__m256i u)
{
    __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7F800000));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* The same for four floats; the result in the low 64 bits. */
static inline __m128i avx2_float4_to_bf16(__m128i u)
{
    __m128i absu = _mm_and_si128(u, _mm_set1_epi32(0x7FFFFFFF));
    __m128i nan = _mm_cmpgt_epi32(absu, _mm_set1_epi32(0x7F800000));
    __m128i hi = _mm_srli_epi32(u, 16);
    __m128i odd = _mm_and_si128(hi, _mm_set1_epi32(1));
    __m128i r = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7FFF)), odd), 16);
    r = _mm_blendv_epi8(r, _mm_or_si128(hi, _mm_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(r, r);
}

/* ---- widening helpers ---- */

static inline __m256 avx2_f16x8_to_ps(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256 avx2_bf16x8_to_ps(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* ---- per dtype: 4 elements <-> one ymm of doubles ---- */

static inline __m256d avx2_ld4_f64(const void *p, int64_t i)
{
    return _mm256_loadu_pd((const double *)p + i);
}
static inline __m256d avx2_ld4_f32(const void *p, int64_t i)
{
    return _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + i));
}
static inline __m256d avx2_ld4_f16(const void *p, int64_t i)
{
    return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadu_si64((const uint16_t *)p + i)));
}
static inline __m256d avx2_ld4_bf16(const void *p, int64_t i)
{
    __m128i w = _mm_cvtepu16_epi32(_mm_loadu_si64((const uint16_t *)p + i));
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(w, 16)));
}

static inline void avx2_st4_f64(void *p, int64_t i, __m256d v)
{
    _mm256_storeu_pd((double *)p + i, v);
}
static inline void avx2_st4_f32(void *p, int64_t i, __m256d v)
{
    _mm_storeu_ps((float *)p + i, _mm256_cvtpd_ps(v));
}
static inline void avx2_st4_f16(void *p, int64_t i, __m256d v)
{
    _mm_storeu_si64((uint16_t *)p + i, avx2_float4_to_f16(avx2_round_to_odd4(v)));
}
static inline void avx2_st4_bf16(void *p, int64_t i, __m256d v)
{
    _mm_storeu_si64((uint16_t *)p + i, avx2_float4_to_bf16(avx2_round_to_odd4(v)));
}

/* ---- per dtype: 8 elements <-> two ymm of doubles (lo: elements 0-3) ---- */

static inline void avx2_ld8_f64(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_loadu_pd((const double *)p + i);
    *hi = _mm256_loadu_pd((const double *)p + i + 4);
}
static inline void avx2_ld8_f32(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    __m256 f = _mm256_loadu_ps((const float *)p + i);
    *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}
static inline void avx2_ld8_f16(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    __m256 f = avx2_f16x8_to_ps((const uint16_t *)p + i);
    *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}
static inline void avx2_ld8_bf16(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    __m256 f = avx2_bf16x8_to_ps((const uint16_t *)p + i);
    *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

static inline void avx2_st8_f64(void *p, int64_t i, __m256d lo, __m256d hi)
{
    _mm256_storeu_pd((double *)p + i, lo);
    _mm256_storeu_pd((double *)p + i + 4, hi);
}
static inline void avx2_st8_f32(void *p, int64_t i, __m256d lo, __m256d hi)
{
    _mm256_storeu_ps((float *)p + i, _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)));
}
static inline void avx2_st8_f16(void *p, int64_t i, __m256d lo, __m256d hi)
{
    __m256i u = _mm256_set_m128i(avx2_round_to_odd4(hi), avx2_round_to_odd4(lo));
    _mm_storeu_si128((__m128i *)((uint16_t *)p + i), avx2_float8_to_f16(u));
}
static inline void avx2_st8_bf16(void *p, int64_t i, __m256d lo, __m256d hi)
{
    __m256i u = _mm256_set_m128i(avx2_round_to_odd4(hi), avx2_round_to_odd4(lo));
    _mm_storeu_si128((__m128i *)((uint16_t *)p + i), avx2_float8_to_bf16(u));
}

#endif /* SBN_IO_AVX2_H */
