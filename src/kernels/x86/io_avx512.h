/*
 * io_avx512.h - element access shared by the AVX-512 (F, BW, VL, DQ) + F16C
 * kernels (convert_avx512.c, stream_avx512.c, rows_avx512.c, stream_map_avx512.c,
 * row_chunk_avx512.c), and the reductions' step on eight lanes (accum8, bwd8): eight
 * elements of an fp64/fp32/fp16/bf16 array at a time widened exactly to a zmm of
 * doubles, and eight or sixteen doubles narrowed once to the element type, each
 * with a masked form whose masked-out elements are neither read (no fault) nor
 * written.
 *   widening:  fp32 by vcvtps2pd; fp16 by vcvtph2ps then vcvtps2pd; bf16 by
 *              moving the 16 bits into the high half of a float. All exact.
 *   narrowing: fp32 by vcvtpd2ps (round to nearest even, like the C cast). fp16
 *              and bf16 first narrow to float with round-to-odd (a truncating
 *              vcvtpd2ps with the last bit set where the truncation was inexact),
 *              then round to nearest even: vcvtps2ph for fp16, the integer carry
 *              trick of convert.c for bf16. NaNs come out as convert.c writes them
 *              (fp16: the canonical quiet NaN with the sign; bf16: the high half,
 *              quieted). Sixteen at a time, fp16 takes a cheaper sticky bit that
 *              gives the same fp16 bits (double16_to_f16), and bf16 rounds the
 *              truncated float half up, falling back to the exact path only for
 *              a float on a bf16 midpoint or a NaN (double16_to_bf16_hi).
 *   bf16 runs: sixteen elements in a lane-interleaved order (bf16x16_load_p /
 *              bf16x16_narrow_p: in-lane unpacks in, one word permute out).
 * The float from round-to-odd differs from sbn__narrow_round_to_odd only above
 * FLT_MAX (FLT_MAX here, infinity there), which both narrowings turn into
 * infinity. The element type is a parameter of always-inline functions (SBN512_INLINE,
 * kernel_inline.h): every caller passes a constant, so each kernel compiles to
 * straight-line code.
 */
#ifndef SBN_IO_AVX512_H
#define SBN_IO_AVX512_H

#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/kernel_inline.h"

#define SBN512_INLINE SBN_KERNEL_INLINE

/* The mask of the first r < 8 (tail_mask) or r < 16 (tail_mask16) elements. */
static inline __mmask8 tail_mask(size_t r)
{
    return (__mmask8)((1u << r) - 1u);
}

static inline __mmask16 tail_mask16(size_t r)
{
    return (__mmask16)((1u << r) - 1u);
}

/* Eight bf16 to float: the 16 bits become the high half (word 2i + 1 takes bf16 i, the
 * even words are zeroed by the mask). Exact. One word permute (AVX512BW) instead of a
 * zero-extend and a shift: the reductions' bf16 loads are one instruction a vector
 * cheaper (bench_ops 2x512x32x32 bf16 backward). */
static inline __m256 bf16x8_to_float(__m128i h)
{
    const __m256i idx = _mm256_setr_epi16(0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7);
    return _mm256_castsi256_ps(
        _mm256_maskz_permutexvar_epi16((__mmask16)0xAAAA, idx, _mm256_castsi128_si256(h)));
}

/* Eight doubles to float bits, rounded to odd: truncate, then set the last bit where
 * that was inexact (NaN and infinity convert exactly and keep their bits). */
static inline __m256i round_to_odd8(__m512d x)
{
    __m256 t = _mm512_cvt_roundpd_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), x, _CMP_NEQ_OQ);
    __m256i u = _mm256_castps_si256(t);
    return _mm256_mask_or_epi32(u, inexact, u, _mm256_set1_epi32(1));
}

/* Float bits to fp16, round to nearest even; NaN -> sign | 0x7E00 as convert.c. */
static inline __m128i float8_to_f16(__m256i u)
{
    __m256 f = _mm256_castsi256_ps(u);
    __mmask8 nan = _mm256_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i qn = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                 _mm256_set1_epi32(0x7E00));
    return _mm_mask_blend_epi16(nan, h, _mm256_cvtepi32_epi16(qn));
}

/* Float bits to bf16, round to nearest even on the dropped 16 bits; NaN -> high half | 0x40. */
static inline __m128i float8_to_bf16(__m256i u)
{
    __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __mmask8 nan = _mm256_cmpgt_epu32_mask(absu, _mm256_set1_epi32(0x7F800000));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd), 16);
    r = _mm256_mask_or_epi32(r, nan, hi, _mm256_set1_epi32(0x40));
    return _mm256_cvtepi32_epi16(r);
}

/* Sixteen doubles (lo: elements 0-7, hi: 8-15) to float bits rounded to odd, as
 * round_to_odd8 on each half (bf16 needs the exact sticky bit: it keeps float's
 * subnormals). */
static inline __m512i round_to_odd16(__m512d lo, __m512d hi)
{
    __m256 t0 = _mm512_cvt_roundpd_ps(lo, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 t1 = _mm512_cvt_roundpd_ps(hi, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 i0 = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t0), lo, _CMP_NEQ_OQ);
    __mmask8 i1 = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t1), hi, _CMP_NEQ_OQ);
    __m512i u = _mm512_castps_si512(_mm512_insertf32x8(_mm512_castps256_ps512(t0), t1, 1));
    return _mm512_mask_or_epi32(u, _mm512_kunpackb(i1, i0), u, _mm512_set1_epi32(1));
}

/* Sixteen doubles to fp16, the same bits as round_to_odd8 then float8_to_f16 on each
 * half, in fewer steps. The sticky bit comes from the 29 double significand bits
 * that truncation to float drops: exact wherever the float is normal; below 2^-126
 * (float subnormal, more bits dropped) the fp16 result is a signed zero whatever
 * the last float bit, and above FLT_MAX it is infinity. vcvtps2ph writes a NaN as
 * sign | 0x7E00 | payload; two unsigned/signed minimums clear the payload and leave
 * every other value alone (negatives are >= 0x8000 unsigned, negative signed). */
static inline __m256i double16_to_f16(__m512d lo, __m512d hi)
{
    const __m512i low29 = _mm512_set1_epi64(0x1FFFFFFF);
    __m256 t0 = _mm512_cvt_roundpd_ps(lo, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 t1 = _mm512_cvt_roundpd_ps(hi, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask16 sticky = _mm512_kunpackb(_mm512_test_epi64_mask(_mm512_castpd_si512(hi), low29),
                                       _mm512_test_epi64_mask(_mm512_castpd_si512(lo), low29));
    __m512i u = _mm512_castps_si512(_mm512_insertf32x8(_mm512_castps256_ps512(t0), t1, 1));
    __m256i h;
    u = _mm512_mask_or_epi32(u, sticky, u, _mm512_set1_epi32(1));
    h = _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    h = _mm256_min_epu16(h, _mm256_set1_epi16((short)0xFE00));
    return _mm256_min_epi16(h, _mm256_set1_epi16(0x7E00));
}

/* Sixteen float bits to bf16 as float8_to_bf16. */
static inline __m256i float16_to_bf16(__m512i u)
{
    __m512 f = _mm512_castsi512_ps(u);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i odd = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd), 16);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

/* Sixteen doubles to bf16, the same bits as round_to_odd16 then float16_to_bf16, in
 * fewer steps, as sixteen dwords whose high halves are the bf16 (dword i holds
 * element i of lo then hi). Truncated to float (t, FLT_MAX above it), the value
 * lies on the same side of every bf16 midpoint as the double (the midpoints are
 * floats, truncation is monotone), so rounding t half up on its low 16 bits (+0x8000,
 * the carry trick) is exact unless t is itself a midpoint (low half 0x8000: the
 * double may lie above it) or a NaN (a payload must not carry): then, rarely, one
 * test and a branch, the exact path recomputes the sixteen. */
static inline __m512i double16_to_bf16_hi(__m512d lo, __m512d hi)
{
    __m256 t0 = _mm512_cvt_roundpd_ps(lo, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 t1 = _mm512_cvt_roundpd_ps(hi, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 t = _mm512_insertf32x8(_mm512_castps256_ps512(t0), t1, 1);
    __m512i u = _mm512_castps_si512(t);
    __m512i w = _mm512_ternarylogic_epi32(u, _mm512_set1_epi32(0x8000), _mm512_set1_epi32(0xFFFF),
                                          0x28); /* (u ^ 0x8000) & 0xFFFF */
    __mmask16 tie = _mm512_testn_epi32_mask(w, w), nan = _mm512_fpclass_ps_mask(t, 0x81);
    if (__builtin_expect(!_kortestz_mask16_u8(tie, nan), 0)) {
        __m256i h = float16_to_bf16(round_to_odd16(lo, hi));
        return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    }
    return _mm512_add_epi32(u, _mm512_set1_epi32(0x8000));
}

/* The high halves of sixteen dwords, in order. */
static inline __m256i hi_halves16(__m512i s)
{
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 31, 29, 27,
                                         25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, s));
}

static inline __m256i double16_to_bf16(__m512d lo, __m512d hi)
{
    return hi_halves16(double16_to_bf16_hi(lo, hi));
}

/* ---- sixteen bf16 in a lane-interleaved order (runs: any order read and written
 * alike will do). load16p widens elements 0-3, 8-11 into lo and 4-7, 12-15 into hi
 * (two in-lane unpacks put each bf16 in the high half of a float, no shifts);
 * store16p undoes it. ---- */

static inline void bf16x16_load_p(__m256i h, __m512d *lo, __m512d *hi)
{
    const __m256i z = _mm256_setzero_si256();
    *lo = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_unpacklo_epi16(z, h)));
    *hi = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_unpackhi_epi16(z, h)));
}

static inline __m256i bf16x16_narrow_p(__m512d lo, __m512d hi)
{
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 31, 29, 27,
                                         25, 15, 13, 11, 9, 23, 21, 19, 17, 7, 5, 3, 1);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, double16_to_bf16_hi(lo, hi)));
}

/* ---- eight elements of element type dt (sbn_kdtype) at p ---- */

/*
 * a + b and a - b issued as fused multiply-adds with the multiplier exactly 1.0:
 * a * 1 is exact, so fma(a, 1, b) rounds a + b once, exactly like the add (same
 * bits, signed zeros, infinities and NaN-ness included). They only move work from
 * the adder ports, where the moments loop's adds and conversions queue, to the FMA
 * ports, which it otherwise leaves idle. No product is ever fused with an add.
 */
SBN512_INLINE __m512d sbn512_add_on_fma(__m512d a, __m512d b)
{
    return _mm512_fmadd_pd(a, _mm512_set1_pd(1.0), b);
}

SBN512_INLINE __m512d sbn512_sub_on_fma(__m512d a, __m512d b)
{
    return _mm512_fnmadd_pd(b, _mm512_set1_pd(1.0), a);
}

/* One row (or block) of eight lanes, as kernels.h defines the reductions: b takes the
 * square or the product in one fused multiply-add (rounded once, as C's fma); the
 * subtraction runs on the FMA ports and a's add on the add ports, two and two (same
 * bits, above). */
SBN512_INLINE void accum8(__m512d *a, __m512d *b, __m512d v, __m512d shift)
{
    __m512d d = sbn512_sub_on_fma(v, shift);
    *a = _mm512_add_pd(*a, d);
    *b = _mm512_fmadd_pd(d, d, *b);
}

SBN512_INLINE void bwd8(__m512d *a, __m512d *b, __m512d g, __m512d v, __m512d center)
{
    *a = _mm512_add_pd(*a, g);
    *b = _mm512_fmadd_pd(g, sbn512_sub_on_fma(v, center), *b);
}

SBN512_INLINE size_t sbn512_esize(sbn_kdtype dt)
{
    return dt == SBN_KD_F64 ? 8 : dt == SBN_KD_F32 ? 4 : 2;
}

/* Element i of an array of dt, as a byte address (i may exceed the array: the
 * masked accesses below never touch masked-out elements). */
SBN512_INLINE const char *sbn512_at(sbn_kdtype dt, const void *p, size_t i)
{
    return (const char *)p + i * sbn512_esize(dt);
}

SBN512_INLINE char *sbn512_at_w(sbn_kdtype dt, void *p, size_t i)
{
    return (char *)p + i * sbn512_esize(dt);
}

SBN512_INLINE __m512d sbn512_load8(sbn_kdtype dt, const void *p)
{
    switch (dt) {
    case SBN_KD_F64: return _mm512_loadu_pd(p);
    case SBN_KD_F32: return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p));
    case SBN_KD_F16: return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)));
    default: return _mm512_cvtps_pd(bf16x8_to_float(_mm_loadu_si128((const __m128i *)p)));
    }
}

/* The same with the elements outside m read as zero (and not read at all). */
SBN512_INLINE __m512d sbn512_load8z(sbn_kdtype dt, const void *p, __mmask8 m)
{
    switch (dt) {
    case SBN_KD_F64: return _mm512_maskz_loadu_pd(m, p);
    case SBN_KD_F32: return _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, p));
    case SBN_KD_F16: return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, p)));
    default: return _mm512_cvtps_pd(bf16x8_to_float(_mm_maskz_loadu_epi16(m, p)));
    }
}

SBN512_INLINE void sbn512_store8(sbn_kdtype dt, void *p, __m512d v)
{
    switch (dt) {
    case SBN_KD_F64: _mm512_storeu_pd(p, v); break;
    case SBN_KD_F32: _mm256_storeu_ps((float *)p, _mm512_cvtpd_ps(v)); break;
    case SBN_KD_F16: _mm_storeu_si128((__m128i *)p, float8_to_f16(round_to_odd8(v))); break;
    default: _mm_storeu_si128((__m128i *)p, float8_to_bf16(round_to_odd8(v))); break;
    }
}

/* The same writing only the elements in m. */
SBN512_INLINE void sbn512_store8m(sbn_kdtype dt, void *p, __mmask8 m, __m512d v)
{
    switch (dt) {
    case SBN_KD_F64: _mm512_mask_storeu_pd(p, m, v); break;
    case SBN_KD_F32: _mm256_mask_storeu_ps(p, m, _mm512_cvtpd_ps(v)); break;
    case SBN_KD_F16: _mm_mask_storeu_epi16(p, m, float8_to_f16(round_to_odd8(v))); break;
    default: _mm_mask_storeu_epi16(p, m, float8_to_bf16(round_to_odd8(v))); break;
    }
}

/* Sixteen doubles (lo: elements 0-7, hi: 8-15) narrowed to dt at p: fp16 and bf16 in
 * one zmm of float bits, the others as two store8. */
SBN512_INLINE void sbn512_store16(sbn_kdtype dt, void *p, __m512d lo, __m512d hi)
{
    switch (dt) {
    case SBN_KD_F16: _mm256_storeu_si256((__m256i *)p, double16_to_f16(lo, hi)); break;
    case SBN_KD_BF16: _mm256_storeu_si256((__m256i *)p, double16_to_bf16(lo, hi)); break;
    default:
        sbn512_store8(dt, p, lo);
        sbn512_store8(dt, (char *)p + 8 * sbn512_esize(dt), hi);
        break;
    }
}

/* The same writing only the elements in m. */
SBN512_INLINE void sbn512_store16m(sbn_kdtype dt, void *p, __mmask16 m, __m512d lo, __m512d hi)
{
    switch (dt) {
    case SBN_KD_F16: _mm256_mask_storeu_epi16(p, m, double16_to_f16(lo, hi)); break;
    case SBN_KD_BF16: _mm256_mask_storeu_epi16(p, m, double16_to_bf16(lo, hi)); break;
    default:
        sbn512_store8m(dt, p, (__mmask8)m, lo);
        sbn512_store8m(dt, (char *)p + 8 * sbn512_esize(dt), (__mmask8)(m >> 8), hi);
        break;
    }
}

/* Two groups of eight doubles narrowed to dt, v to p and w to q, writing the elements
 * in m of each: fp16 and bf16 narrow the sixteen at once. */
SBN512_INLINE void sbn512_store8x2m(sbn_kdtype dt, void *p, void *q, __mmask8 m, __m512d v,
                                    __m512d w)
{
    __m256i h;
    switch (dt) {
    case SBN_KD_F16: h = double16_to_f16(v, w); break;
    case SBN_KD_BF16: h = double16_to_bf16(v, w); break;
    default:
        sbn512_store8m(dt, p, m, v);
        sbn512_store8m(dt, q, m, w);
        return;
    }
    _mm_mask_storeu_epi16(p, m, _mm256_castsi256_si128(h));
    _mm_mask_storeu_epi16(q, m, _mm256_extracti128_si256(h, 1));
}

#endif /* SBN_IO_AVX512_H */
