/*
 * io_avx2.h - element access for the AVX2 (+F16C) kernels, shared by
 * convert_avx2.c and the streaming kernels: the exact widening of 4 or 8
 * contiguous fp64/fp32/fp16/bf16 elements to doubles, and the one narrowing of
 * doubles to the element type, bit for bit as the scalar conversions of convert.c.
 *   widen:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by moving
 *           the 16 bits into the high half of a float. All exact.
 *   narrow: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16 and
 *           bf16 must come out rounded once to nearest even, which is what
 *           convert.c's round-to-odd float step gives; here the double is rounded
 *           to odd on its bit pattern at two bits more than the format keeps (a
 *           few integer operations, no lane-crossing masks), narrowed to float
 *           exactly by vcvtpd2ps, then rounded to nearest even by vcvtps2ph (fp16)
 *           or the integer carry trick of convert.c (bf16). NaNs come out as
 *           convert.c writes them (fp16: the canonical quiet NaN with the sign;
 *           bf16: the high half, quieted).
 * Every access reads or writes exactly the elements named: 8, 4, or (ldp/stp, for
 * tails) the first t of 1..3, the other lanes zero; element i of a typed array is
 * passed as (base, i). The per-dtype helpers are named by the dtype token of the
 * kernel macros (avx2_ld4_f16, avx2_st8_bf16, avx2_ldp_f32, ...); the scalar
 * sbn__ld_<dt> / sbn__st_<dt> of kernel_io_scalar.h serve the remaining tails.
 * The float maps use a second set for fp32/fp16/bf16 with floats in place of
 * doubles (avx2_ldf8_<dt>, avx2_stf8_<dt>, the pair avx2_ldf16_<dt> / avx2_stf16_<dt>,
 * and avx2_ldfp_<dt> / avx2_stfp_<dt> for the first t of 1..7, in pieces of 4, 2
 * and 1): the same exact
 * widening to float, and one narrowing of a float to nearest even, bit for bit as
 * convert.c's sbn__float_to_f16 / sbn__float_to_bf16 for every float but a
 * signaling NaN to bf16 (kept unquieted; no arithmetic result is one).
 */
#ifndef SBN_IO_AVX2_H
#define SBN_IO_AVX2_H

#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/scalar/kernel_io_scalar.h"
#include "kernels/x86/kernel_inline.h"
#include "kernels/x86/nt_store.h"

/* ---- full-vector stores: non-temporal where aligned when SBN_MAP_NT is 1 ---- */

/* stream_map_nt_avx2.c sets SBN_MAP_NT before including this header (nt_store.h);
 * every other user gets plain stores. */
static inline void avx2_store_pd(double *p, __m256d v)
{
    if (sbn_nt_aligned(p, 32)) _mm256_stream_pd(p, v);
    else _mm256_storeu_pd(p, v);
}
static inline void avx2_store_ps(float *p, __m256 v)
{
    if (sbn_nt_aligned(p, 32)) _mm256_stream_ps(p, v);
    else _mm256_storeu_ps(p, v);
}
static inline void avx2_store_si256(void *p, __m256i v)
{
    if (sbn_nt_aligned(p, 32)) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}
static inline void avx2_store_si128(void *p, __m128i v)
{
    if (sbn_nt_aligned(p, 16)) _mm_stream_si128((__m128i *)p, v);
    else _mm_storeu_si128((__m128i *)p, v);
}

/* ---- narrowing helpers ---- */

/*
 * Doubles rounded to odd on their bit patterns, keeping the bits above low_mask
 * (2^k - 1): the low k bits are cleared and, if any was set, the lowest kept bit
 * is set ((low + low_mask) reaches that bit exactly when low != 0). That is
 * truncation toward zero plus the sticky bit, at 53 - k significant bits for
 * normal values; infinities stay, NaNs stay NaNs (sign and top payload bits kept).
 */
static inline __m256d avx2_round_to_odd_bits(__m256d x, long long low_mask)
{
    const __m256i m = _mm256_set1_epi64x(low_mask);
    __m256i u = _mm256_castpd_si256(x);
    __m256i sticky = _mm256_add_epi64(_mm256_and_si256(u, m), m);
    return _mm256_castsi256_pd(_mm256_andnot_si256(m, _mm256_or_si256(u, sticky)));
}

/*
 * The fp16 and bf16 stores round each double once, to nearest even, as if
 * directly (what convert.c's round-to-odd float step guarantees): first to odd at
 * 13 (fp16) or 10 (bf16) significant bits, two more than the format keeps, which
 * vcvtpd2ps then narrows exactly wherever the value can still round to nonzero
 * (below 2^-137 / 2^-140 every candidate rounds to a signed zero anyway; from
 * 2^128 both give infinity); then to nearest even into the format. NaNs get their
 * float payload cleared below the quiet bit (fp16: the canonical sign | 0x7E00),
 * or below the kept half (bf16: the high half, whose quiet bit 0x40 is set).
 */
#define SBN_AVX2_F16_DROP 0x000000FFFFFFFFFFll  /* 40 bits: 13 significant bits left */
#define SBN_AVX2_BF16_DROP 0x000007FFFFFFFFFFll /* 43 bits: 10 significant bits left */

/* Floats to fp16, round to nearest even; NaN -> sign | 0x7E00 (the double stores pass
 * floats already rounded to odd; the float maps their results as they are). */
static inline __m128i avx2_float8_to_f16(__m256 f)
{
    __m256 keep = _mm256_or_ps(_mm256_cmp_ps(f, f, _CMP_ORD_Q),
                               _mm256_castsi256_ps(_mm256_set1_epi32((int)0xFFC00000u)));
    return _mm256_cvtps_ph(_mm256_and_ps(f, keep), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* The same for four floats; the result in the low 64 bits. */
static inline __m128i avx2_float4_to_f16(__m128 f)
{
    __m128 keep =
        _mm_or_ps(_mm_cmpord_ps(f, f), _mm_castsi128_ps(_mm_set1_epi32((int)0xFFC00000u)));
    return _mm_cvtps_ph(_mm_and_ps(f, keep), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* Floats to bf16 in 32-bit lanes: round to nearest even on the dropped 16 bits (add
 * 0x7FFF and the kept half's lowest bit, keep the high half); a NaN keeps its high half
 * as it is, chosen by a blend after the rounding rather than by clearing its low half
 * before: the high half is already at hand for the lowest bit, so the blend saves an
 * operation per vector on the integer and shift pipes that bound the bf16 maps. */
static inline __m256i avx2_float8_to_bf16_32(__m256 f)
{
    const __m256i u = _mm256_castps_si256(f), hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF));
    r = _mm256_srli_epi32(_mm256_add_epi32(r, _mm256_and_si256(hi, _mm256_set1_epi32(1))), 16);
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(hi),
                                                _mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
}

static inline __m128i avx2_float4_to_bf16_32(__m128 f)
{
    const __m128i u = _mm_castps_si128(f), hi = _mm_srli_epi32(u, 16);
    __m128i r = _mm_add_epi32(u, _mm_set1_epi32(0x7FFF));
    r = _mm_srli_epi32(_mm_add_epi32(r, _mm_and_si128(hi, _mm_set1_epi32(1))), 16);
    return _mm_castps_si128(
        _mm_blendv_ps(_mm_castsi128_ps(r), _mm_castsi128_ps(hi), _mm_cmpunord_ps(f, f)));
}

/* Eight doubles (lo: elements 0-3) to eight floats, rounded to odd above the low_mask bits. */
static inline __m256 avx2_odd8_ps(__m256d lo, __m256d hi, long long low_mask)
{
    __m128 a = _mm256_cvtpd_ps(avx2_round_to_odd_bits(lo, low_mask));
    __m128 b = _mm256_cvtpd_ps(avx2_round_to_odd_bits(hi, low_mask));
    return _mm256_set_m128(b, a);
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
/* bf16 to float for the reductions: each 16-bit word interleaved above a zero word (the
 * high half of its float), one unpack per four elements instead of a zero-extend and a
 * shift (and, for eight, no lane extract): fewer shuffle-port uops per element
 * (bench_kernels AVX2 bf16 accum). */
static inline __m256d avx2_ld4_bf16(const void *p, int64_t i)
{
    __m128i w = _mm_loadu_si64((const uint16_t *)p + i);
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), w)));
}

static inline void avx2_st4_f64(void *p, int64_t i, __m256d v)
{
    avx2_store_pd((double *)p + i, v);
}
static inline void avx2_st4_f32(void *p, int64_t i, __m256d v)
{
    _mm_storeu_ps((float *)p + i, _mm256_cvtpd_ps(v));
}
static inline void avx2_st4_f16(void *p, int64_t i, __m256d v)
{
    __m128 f = _mm256_cvtpd_ps(avx2_round_to_odd_bits(v, SBN_AVX2_F16_DROP));
    _mm_storeu_si64((uint16_t *)p + i, avx2_float4_to_f16(f));
}
static inline void avx2_st4_bf16(void *p, int64_t i, __m256d v)
{
    __m128 f = _mm256_cvtpd_ps(avx2_round_to_odd_bits(v, SBN_AVX2_BF16_DROP));
    __m128i r = avx2_float4_to_bf16_32(f);
    _mm_storeu_si64((uint16_t *)p + i, _mm_packus_epi32(r, r));
}

/* ---- per dtype: 8 elements <-> two ymm of doubles (lo: elements 0-3) ---- */

static inline void avx2_ld8_f64(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_loadu_pd((const double *)p + i);
    *hi = _mm256_loadu_pd((const double *)p + i + 4);
}
static inline void avx2_ld8_f32(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + i));
    *hi = _mm256_cvtps_pd(_mm_loadu_ps((const float *)p + i + 4));
}
static inline void avx2_ld8_f16(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    __m256 f = avx2_f16x8_to_ps((const uint16_t *)p + i);
    *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}
static inline void avx2_ld8_bf16(const void *p, int64_t i, __m256d *lo, __m256d *hi)
{
    __m128i w = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    *lo = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), w)));
    *hi = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpackhi_epi16(_mm_setzero_si128(), w)));
}

static inline void avx2_st8_f64(void *p, int64_t i, __m256d lo, __m256d hi)
{
    avx2_store_pd((double *)p + i, lo);
    avx2_store_pd((double *)p + i + 4, hi);
}
static inline void avx2_st8_f32(void *p, int64_t i, __m256d lo, __m256d hi)
{
    avx2_store_ps((float *)p + i, _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)));
}
static inline void avx2_st8_f16(void *p, int64_t i, __m256d lo, __m256d hi)
{
    __m128i h = avx2_float8_to_f16(avx2_odd8_ps(lo, hi, SBN_AVX2_F16_DROP));
    avx2_store_si128((uint16_t *)p + i, h);
}
static inline void avx2_st8_bf16(void *p, int64_t i, __m256d lo, __m256d hi)
{
    __m256i r = avx2_float8_to_bf16_32(avx2_odd8_ps(lo, hi, SBN_AVX2_BF16_DROP));
    __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    avx2_store_si128((uint16_t *)p + i, h);
}

/* ---- per dtype: the first t elements, 1 <= t <= 3, <-> the low lanes of a ymm ---- */

/* Reads exactly q[0..t); the other lanes are zero. */
static inline __m256d avx2_ldp_f64(const void *p, int64_t i, size_t t)
{
    const double *q = (const double *)p + i;
    __m128d lo = _mm_load_sd(q), hi = _mm_setzero_pd();
    if (t > 1) lo = _mm_loadh_pd(lo, q + 1);
    if (t > 2) hi = _mm_load_sd(q + 2);
    return _mm256_set_m128d(hi, lo);
}
static inline __m256d avx2_ldp_f32(const void *p, int64_t i, size_t t)
{
    const float *q = (const float *)p + i;
    __m128 f = _mm_load_ss(q);
    if (t > 1) f = _mm_insert_ps(f, _mm_load_ss(q + 1), 0x10);
    if (t > 2) f = _mm_insert_ps(f, _mm_load_ss(q + 2), 0x20);
    return _mm256_cvtps_pd(f);
}
static inline __m128i avx2_ldp_u16(const uint16_t *q, size_t t)
{
    __m128i w = _mm_cvtsi32_si128(q[0]);
    if (t > 1) w = _mm_insert_epi16(w, q[1], 1);
    if (t > 2) w = _mm_insert_epi16(w, q[2], 2);
    return w;
}
static inline __m256d avx2_ldp_f16(const void *p, int64_t i, size_t t)
{
    return _mm256_cvtps_pd(_mm_cvtph_ps(avx2_ldp_u16((const uint16_t *)p + i, t)));
}
static inline __m256d avx2_ldp_bf16(const void *p, int64_t i, size_t t)
{
    __m128i w = avx2_ldp_u16((const uint16_t *)p + i, t);
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), w)));
}

/* ---- the row reductions' access, by a kernel dtype dt that is a constant in each inlined
 * copy (rows_avx2.c, row_chunk_avx2.c) ---- */

SBN_KERNEL_INLINE size_t avx2_esize(sbn_kdtype dt)
{
    return dt == SBN_KD_F64 ? 8 : dt == SBN_KD_F32 ? 4 : 2;
}

/* The mask of the first t of four doubles (t <= 4). */
SBN_KERNEL_INLINE __m256i avx2_first_lanes(size_t t)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)t), _mm256_set_epi64x(3, 2, 1, 0));
}

/* The first t <= 4 doubles at p (the other lanes +0.0, nothing past read), and into p
 * (nothing past written): accumulators, shifts and sums of a channel group's tail. */
SBN_KERNEL_INLINE __m256d avx2_ldm_pd(const double *p, size_t t)
{
    return t == 4 ? _mm256_loadu_pd(p) : _mm256_maskload_pd(p, avx2_first_lanes(t));
}
SBN_KERNEL_INLINE void avx2_stm_pd(double *p, size_t t, __m256d v)
{
    if (t == 4)
        _mm256_storeu_pd(p, v);
    else
        _mm256_maskstore_pd(p, avx2_first_lanes(t), v);
}

/* Four elements of the kernel dtype dt at p, or with t < 4 the first t (1 <= t; the other
 * lanes zero, nothing past read). */
SBN_KERNEL_INLINE __m256d avx2_ld4_kd(sbn_kdtype dt, const void *p, size_t t)
{
    if (t < 4) switch (dt) {
        case SBN_KD_F64: return avx2_ldp_f64(p, 0, t);
        case SBN_KD_F32: return avx2_ldp_f32(p, 0, t);
        case SBN_KD_F16: return avx2_ldp_f16(p, 0, t);
        default: return avx2_ldp_bf16(p, 0, t);
        }
    switch (dt) {
    case SBN_KD_F64: return avx2_ld4_f64(p, 0);
    case SBN_KD_F32: return avx2_ld4_f32(p, 0);
    case SBN_KD_F16: return avx2_ld4_f16(p, 0);
    default: return avx2_ld4_bf16(p, 0);
    }
}

/* Writes exactly q[0..t) from the low lanes of v. */
static inline void avx2_stp_f64(void *p, int64_t i, size_t t, __m256d v)
{
    double *q = (double *)p + i;
    __m128d lo = _mm256_castpd256_pd128(v);
    _mm_store_sd(q, lo);
    if (t > 1) _mm_storeh_pd(q + 1, lo);
    if (t > 2) _mm_store_sd(q + 2, _mm256_extractf128_pd(v, 1));
}
static inline void avx2_stp_f32(void *p, int64_t i, size_t t, __m256d v)
{
    float *q = (float *)p + i;
    __m128i f = _mm_castps_si128(_mm256_cvtpd_ps(v));
    _mm_storeu_si32(q, f);
    if (t > 1) _mm_storeu_si32(q + 1, _mm_srli_si128(f, 4));
    if (t > 2) _mm_storeu_si32(q + 2, _mm_srli_si128(f, 8));
}
static inline void avx2_stp_u16(uint16_t *q, size_t t, __m128i h)
{
    q[0] = (uint16_t)_mm_extract_epi16(h, 0);
    if (t > 1) q[1] = (uint16_t)_mm_extract_epi16(h, 1);
    if (t > 2) q[2] = (uint16_t)_mm_extract_epi16(h, 2);
}
static inline void avx2_stp_f16(void *p, int64_t i, size_t t, __m256d v)
{
    __m128 f = _mm256_cvtpd_ps(avx2_round_to_odd_bits(v, SBN_AVX2_F16_DROP));
    avx2_stp_u16((uint16_t *)p + i, t, avx2_float4_to_f16(f));
}
static inline void avx2_stp_bf16(void *p, int64_t i, size_t t, __m256d v)
{
    __m128 f = _mm256_cvtpd_ps(avx2_round_to_odd_bits(v, SBN_AVX2_BF16_DROP));
    __m128i r = avx2_float4_to_bf16_32(f);
    avx2_stp_u16((uint16_t *)p + i, t, _mm_packus_epi32(r, r));
}

/* ---- per dtype, float maps: 8 elements <-> one ymm of floats ---- */

static inline __m256 avx2_ldf8_f32(const void *p, int64_t i)
{
    return _mm256_loadu_ps((const float *)p + i);
}
static inline __m256 avx2_ldf8_f16(const void *p, int64_t i)
{
    return avx2_f16x8_to_ps((const uint16_t *)p + i);
}
static inline __m256 avx2_ldf8_bf16(const void *p, int64_t i)
{
    return avx2_bf16x8_to_ps((const uint16_t *)p + i);
}

/* Sixteen elements as two ymm of floats for an elementwise map with the same
 * coefficients in every lane, in the order avx2_stf16_<dt> stores back: fp32 and fp16
 * in order (a: elements 0-7, b: 8-15); bf16 in pair order (a: 0-3 and 8-11, b: 4-7 and
 * 12-15), each word unpacked above a zero word: one load and two shuffles in place of
 * two zero-extensions, two shifts and, at the store, a lane permutation. */
static inline void avx2_ldf16_f32(const void *p, int64_t i, __m256 *a, __m256 *b)
{
    *a = avx2_ldf8_f32(p, i);
    *b = avx2_ldf8_f32(p, i + 8);
}
static inline void avx2_ldf16_f16(const void *p, int64_t i, __m256 *a, __m256 *b)
{
    *a = avx2_ldf8_f16(p, i);
    *b = avx2_ldf8_f16(p, i + 8);
}
static inline void avx2_ldf16_bf16(const void *p, int64_t i, __m256 *a, __m256 *b)
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    *a = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));
    *b = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));
}

static inline void avx2_stf8_f32(void *p, int64_t i, __m256 v)
{
    avx2_store_ps((float *)p + i, v);
}
static inline void avx2_stf8_f16(void *p, int64_t i, __m256 v)
{
    avx2_store_si128((uint16_t *)p + i, avx2_float8_to_f16(v));
}
/* bf16 in 32-bit lanes (each <= 0xFFFF, so the unsigned saturation is exact) to 16 bits. */
static inline void avx2_stf8_bf16(void *p, int64_t i, __m256 v)
{
    __m256i r = avx2_float8_to_bf16_32(v);
    __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    avx2_store_si128((uint16_t *)p + i, h);
}

/* 16 elements from two ymm of floats (a: elements 0-7, b: 8-15). */
static inline void avx2_stf16_f32(void *p, int64_t i, __m256 a, __m256 b)
{
    avx2_store_ps((float *)p + i, a);
    avx2_store_ps((float *)p + i + 8, b);
}
static inline void avx2_stf16_f16(void *p, int64_t i, __m256 a, __m256 b)
{
    __m256i h = _mm256_set_m128i(avx2_float8_to_f16(b), avx2_float8_to_f16(a));
    avx2_store_si256((uint16_t *)p + i, h);
}
/* bf16 takes a and b in the pair order of avx2_ldf16_bf16 (a: elements 0-3 and 8-11,
 * b: 4-7 and 12-15), which packus, working per 128-bit half, puts back in order. */
static inline void avx2_stf16_bf16(void *p, int64_t i, __m256 a, __m256 b)
{
    __m256i h = _mm256_packus_epi32(avx2_float8_to_bf16_32(a), avx2_float8_to_bf16_32(b));
    avx2_store_si256((uint16_t *)p + i, h);
}

/* ---- per dtype, float maps: the first t elements, 1 <= t <= 7, <-> the low lanes of a ymm ---- */

/* Reads exactly q[0..t): pieces of 4, 2 and 1 elements, the last first; other lanes zero. */
static inline __m128i avx2_ldfp_u16(const uint16_t *q, size_t t)
{
    __m128i w = _mm_setzero_si128();
    if (t & 1) w = _mm_cvtsi32_si128(q[t - 1]);
    if (t & 2) w = _mm_or_si128(_mm_slli_si128(w, 4), _mm_loadu_si32(q + (t & 4)));
    if (t & 4) w = _mm_or_si128(_mm_slli_si128(w, 8), _mm_loadu_si64(q));
    return w;
}
/* Writes exactly q[0..t) from the low 16-bit lanes of h, in pieces of 4, 2 and 1. */
static inline void avx2_stfp_u16(uint16_t *q, size_t t, __m128i h)
{
    if (t & 4) {
        _mm_storeu_si64(q, h);
        h = _mm_srli_si128(h, 8);
        q += 4;
    }
    if (t & 2) {
        _mm_storeu_si32(q, h);
        h = _mm_srli_si128(h, 4);
        q += 2;
    }
    if (t & 1) *q = (uint16_t)_mm_cvtsi128_si32(h);
}

/* fp32 in the same pieces (not vmaskmovps: its masked store is slow on AMD cores). */
static inline __m256 avx2_ldfp_f32(const void *p, int64_t i, size_t t)
{
    const float *q = (const float *)p + i;
    __m128 w = _mm_setzero_ps();
    if (t & 1) w = _mm_load_ss(q + t - 1);
    if (t & 2) w = _mm_movelh_ps(_mm_castsi128_ps(_mm_loadu_si64(q + (t & 4))), w);
    if (t & 4) return _mm256_set_m128(w, _mm_loadu_ps(q));
    return _mm256_set_m128(_mm_setzero_ps(), w);
}
static inline __m256 avx2_ldfp_f16(const void *p, int64_t i, size_t t)
{
    return _mm256_cvtph_ps(avx2_ldfp_u16((const uint16_t *)p + i, t));
}
static inline __m256 avx2_ldfp_bf16(const void *p, int64_t i, size_t t)
{
    __m256i w = _mm256_cvtepu16_epi32(avx2_ldfp_u16((const uint16_t *)p + i, t));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static inline void avx2_stfp_f32(void *p, int64_t i, size_t t, __m256 v)
{
    float *q = (float *)p + i;
    __m128 w = _mm256_castps256_ps128(v);
    if (t & 4) {
        _mm_storeu_ps(q, w);
        w = _mm256_extractf128_ps(v, 1);
        q += 4;
    }
    if (t & 2) {
        _mm_storeu_si64(q, _mm_castps_si128(w));
        w = _mm_movehl_ps(w, w);
        q += 2;
    }
    if (t & 1) _mm_store_ss(q, w);
}
static inline void avx2_stfp_f16(void *p, int64_t i, size_t t, __m256 v)
{
    avx2_stfp_u16((uint16_t *)p + i, t, avx2_float8_to_f16(v));
}
static inline void avx2_stfp_bf16(void *p, int64_t i, size_t t, __m256 v)
{
    __m256i r = avx2_float8_to_bf16_32(v);
    avx2_stfp_u16((uint16_t *)p + i, t,
                  _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

#endif /* SBN_IO_AVX2_H */
