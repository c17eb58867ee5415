/*
 * bf16_avx512.h - floats to and from bf16 for the AVX-512 maps (stream_map_avx512.c).
 * Widening is exact: a bf16 is the high half of a float's bits. Narrowing rounds to
 * nearest even on the dropped 16 bits, as convert.c does, in one of two builds:
 *   - by integer arithmetic (the default): convert.c's carry trick on the float's bits,
 *     then a word permute gathers the high halves;
 *   - with SBN_MAP_BF16_CVT, by the CPU's conversion (AVX512_BF16: vcvtne2ps2bf16, two
 *     vectors at once), one instruction where the trick takes ten and a permute. That
 *     instruction rounds alike on every float but the subnormals: it reads and writes
 *     them as signed zeros (its DAZ and FTZ), where the trick rounds them to the nearest
 *     bf16 subnormal. Its NaNs are the trick's (the quiet high half). So where it reads
 *     a float subnormal the result may be wrong, and only there: the runs' maps note the
 *     subnormal floats they narrow (bf16x32_suspects), and stream_map_bf16_avx512.c maps
 *     again, by the trick, any piece that has one.
 * Only the 32 bf16 of a run, which go through two zmm of floats, narrow by the CPU's
 * conversion (and only there are subnormals looked for): in the default build they go in a
 * lane-interleaved order (two in-lane unpacks, and one two-source permute back); with the
 * CPU's conversion in order (it packs two vectors in order itself). Single vectors always
 * round by the trick.
 */
#ifndef SBN_BF16_AVX512_H
#define SBN_BF16_AVX512_H

#include "kernels/x86/io_avx512.h"

/* Sixteen floats rounded to bf16 in the high halves of their bits (the low halves are
 * garbage): to nearest even on the low 16 bits by convert.c's carry trick, u + 0x7FFF
 * + (bit 16 of u), done as two masked adds; a NaN is left alone, so its payload does
 * not carry. Every NaN here comes out of an arithmetic instruction, hence quiet: its
 * high half already has convert.c's 0x40 bit. */
SBN512_INLINE __m512i bf16_round_hi(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    const __mmask16 odd = _mm512_mask_test_epi32_mask(num, u, _mm512_set1_epi32(0x10000));
    __m512i t = _mm512_mask_add_epi32(u, num, u, _mm512_set1_epi32(0x7FFF));
    return _mm512_mask_add_epi32(t, odd, t, _mm512_set1_epi32(1));
}

/* bf16_round_hi on eight floats: the lanes above them are computed and dropped. */
SBN512_INLINE __m256i bf16_round_hi8(__m256 v)
{
    return _mm512_castsi512_si256(bf16_round_hi(_mm512_castps256_ps512(v)));
}

/* bf16 in order: word i of a ymm to the high half of dword i (the low halves zeroed).
 * One word permute. */
SBN512_INLINE __m512 bf16_widen16(__m256i h)
{
    const __m512i idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7,
                                         0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    return _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16((__mmask32)0xAAAAAAAAu, idx, _mm512_castsi256_si512(h)));
}

/* Sixteen (eight) floats to bf16 in order, rounded in either build (the single vectors of
 * rows and tails, whose outputs nothing checks): the rounded high halves gathered. */
SBN512_INLINE __m256i bf16_narrow16(__m512 v)
{
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 31, 29, 27,
                                         25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, bf16_round_hi(v)));
}

SBN512_INLINE __m128i bf16_narrow8(__m256 v)
{
    return _mm256_cvtepi32_epi16(_mm256_srli_epi32(bf16_round_hi8(v), 16));
}

#if SBN_MAP_BF16_CVT

/* The 32 bf16 at p (z: those in m, zero elsewhere) as floats, in order, and back. */
SBN512_INLINE void bf16x32_load(const uint16_t *p, __m512 *lo, __m512 *hi)
{
    *lo = bf16_widen16(_mm256_loadu_si256((const __m256i *)p));
    *hi = bf16_widen16(_mm256_loadu_si256((const __m256i *)(p + 16)));
}

SBN512_INLINE void bf16x32_loadz(__mmask32 m, const uint16_t *p, __m512 *lo, __m512 *hi)
{
    *lo = bf16_widen16(_mm256_maskz_loadu_epi16((__mmask16)m, p));
    *hi = bf16_widen16(_mm256_maskz_loadu_epi16((__mmask16)(m >> 16), p + 16));
}

SBN512_INLINE __m512i bf16x32_pack(__m512 lo, __m512 hi)
{
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* Which of the 32 floats lo, hi (in m) the conversion may have narrowed wrongly: the
 * subnormals, which it flushed to signed zeros. Looked for among the floats, not among
 * the bf16 zeros they became: an output that is zero because its float is zero (an input
 * equal to the mean, in eval with a mean the data hits exactly) needs no second pass, and
 * with bf16's coarse grid such zeros come in most pieces. */
#define SBN_FPCLASS_DENORMAL 0x20 /* vfpclassps category: a subnormal of either sign */
SBN512_INLINE __mmask32 bf16x32_suspects(__mmask32 m, __m512 lo, __m512 hi)
{
    return (__mmask32)(_mm512_mask_fpclass_ps_mask((__mmask16)m, lo, SBN_FPCLASS_DENORMAL) |
                       ((__mmask32)_mm512_mask_fpclass_ps_mask((__mmask16)(m >> 16), hi,
                                                               SBN_FPCLASS_DENORMAL)
                        << 16));
}

#else

/* The 32 bf16 of one zmm widened in lane-interleaved order (each 128-bit lane's words
 * 0-3 to lo, 4-7 to hi, as the high halves of floats; z: those in m, zero elsewhere),
 * and put back in order by one two-source word permute of the rounded high halves. */
SBN512_INLINE void bf16x32_widen(__m512i h, __m512 *lo, __m512 *hi)
{
    const __m512i z = _mm512_setzero_si512();
    *lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h));
    *hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h));
}

SBN512_INLINE void bf16x32_load(const uint16_t *p, __m512 *lo, __m512 *hi)
{
    bf16x32_widen(_mm512_loadu_si512(p), lo, hi);
}

SBN512_INLINE void bf16x32_loadz(__mmask32 m, const uint16_t *p, __m512 *lo, __m512 *hi)
{
    bf16x32_widen(_mm512_maskz_loadu_epi16(m, p), lo, hi);
}

SBN512_INLINE __m512i bf16x32_pack(__m512 lo, __m512 hi)
{
    const __m512i idx = _mm512_set_epi16(63, 61, 59, 57, 31, 29, 27, 25, 55, 53, 51, 49, 23, 21, 19,
                                         17, 47, 45, 43, 41, 15, 13, 11, 9, 39, 37, 35, 33, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(bf16_round_hi(lo), idx, bf16_round_hi(hi));
}

/* The rounding is exact: no output needs a check. */
SBN512_INLINE __mmask32 bf16x32_suspects(__mmask32 m, __m512 lo, __m512 hi)
{
    (void)m;
    (void)lo;
    (void)hi;
    return 0;
}

#endif /* SBN_MAP_BF16_CVT */

#endif /* SBN_BF16_AVX512_H */
