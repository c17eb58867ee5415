/*
 * map_elems_avx512.h - the element steps of the AVX-512 maps (stream_map_avx512.c, the
 * only includer, once per build of it): stores that stream where the build streams
 * (SBN_MAP_NT, nt_store.h) and the line is aligned, the fp32/fp16/bf16 map formulas on
 * 16 (8) floats, and the loads and stores of 16 (8) elements of fp32, fp16 or bf16 as
 * floats, exact on the way in and rounded once on the way out (bf16 by the build's
 * narrowing, bf16_avx512.h). Included after SBN_MAP_NT and SBN_MAP_BF16_CVT are set,
 * as their values choose the code.
 */
#ifndef SBN_MAP_ELEMS_AVX512_H
#define SBN_MAP_ELEMS_AVX512_H

#include "kernels/x86/bf16_avx512.h"
#include "kernels/x86/io_avx512.h"
#include "kernels/x86/nt_store.h"

/* ---- stores: non-temporal where SBN_MAP_NT and aligned ---- */

SBN512_INLINE void store_pd(double *p, __m512d v)
{
    if (sbn_nt_aligned(p, 64)) _mm512_stream_pd(p, v);
    else _mm512_storeu_pd(p, v);
}

SBN512_INLINE void store_ps(float *p, __m512 v)
{
    if (sbn_nt_aligned(p, 64)) _mm512_stream_ps(p, v);
    else _mm512_storeu_ps(p, v);
}

SBN512_INLINE void store_si512(void *p, __m512i v)
{
    if (sbn_nt_aligned(p, 64)) _mm512_stream_si512(p, v);
    else _mm512_storeu_si512(p, v);
}

SBN512_INLINE void store_si256(void *p, __m256i v)
{
    if (sbn_nt_aligned(p, 32)) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}

/* ---- fp32/fp16/bf16 elements as floats ---- */

SBN512_INLINE __m512 fnormalize16(__m512 v, __m512 f0, __m512 f1, __m512 f2)
{
    return _mm512_fmadd_ps(_mm512_sub_ps(v, f0), f1, f2);
}

SBN512_INLINE __m512 fbackward16(__m512 g, __m512 v, __m512 f0, __m512 f1, __m512 f2, __m512 f3)
{
    return _mm512_mul_ps(_mm512_fmadd_ps(_mm512_sub_ps(v, f0), f1, _mm512_sub_ps(g, f2)), f3);
}

/* Sixteen floats to fp16, to nearest even; vcvtps2ph writes a (quiet) NaN as sign |
 * 0x7E00 | payload: an unsigned then a signed minimum clear the payload and leave
 * every other value alone (negatives are >= 0x8000 unsigned, negative signed). */
SBN512_INLINE __m256i f16_narrow16(__m512 v)
{
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    h = _mm256_min_epu16(h, _mm256_set1_epi16((short)0xFE00));
    return _mm256_min_epi16(h, _mm256_set1_epi16(0x7E00));
}

/* Sixteen elements of dt (fp32/fp16/bf16) at p as floats, exactly; the z form reads
 * only those in m (zero elsewhere). */
SBN512_INLINE __m512 ld16(sbn_kdtype dt, const void *p)
{
    switch (dt) {
    case SBN_KD_F32: return _mm512_loadu_ps(p);
    case SBN_KD_F16: return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    default: return bf16_widen16(_mm256_loadu_si256((const __m256i *)p));
    }
}

SBN512_INLINE __m512 ld16z(sbn_kdtype dt, const void *p, __mmask16 m)
{
    switch (dt) {
    case SBN_KD_F32: return _mm512_maskz_loadu_ps(m, p);
    case SBN_KD_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    default: return bf16_widen16(_mm256_maskz_loadu_epi16(m, p));
    }
}

/* Sixteen floats narrowed once to dt at p; the m form writes only those in m. */
SBN512_INLINE void st16(sbn_kdtype dt, void *p, __m512 v)
{
    switch (dt) {
    case SBN_KD_F32: store_ps(p, v); break;
    case SBN_KD_F16: store_si256(p, f16_narrow16(v)); break;
    default: store_si256(p, bf16_narrow16(v)); break;
    }
}

SBN512_INLINE void st16m(sbn_kdtype dt, void *p, __mmask16 m, __m512 v)
{
    switch (dt) {
    case SBN_KD_F32: _mm512_mask_storeu_ps(p, m, v); break;
    case SBN_KD_F16: _mm256_mask_storeu_epi16(p, m, f16_narrow16(v)); break;
    default: _mm256_mask_storeu_epi16(p, m, bf16_narrow16(v)); break;
    }
}

/* Eight floats per ymm, for rows of at most 8 channels (half the work of a zmm). The
 * FMA through its masked AVX-512VL form, all lanes on. */
SBN512_INLINE __m256 fnormalize8(__m256 v, __m256 f0, __m256 f1, __m256 f2)
{
    return _mm256_mask_fmadd_ps(_mm256_sub_ps(v, f0), (__mmask8)0xFF, f1, f2);
}

SBN512_INLINE __m256 fbackward8(__m256 g, __m256 v, __m256 f0, __m256 f1, __m256 f2, __m256 f3)
{
    return _mm256_mul_ps(_mm256_mask_fmadd_ps(_mm256_sub_ps(v, f0), (__mmask8)0xFF, f1,
                                              _mm256_sub_ps(g, f2)),
                         f3);
}

/* The elements in m of eight of dt at p as floats (zero elsewhere), and eight floats
 * narrowed to dt at p, writing those in m. */
SBN512_INLINE __m256 ld8z(sbn_kdtype dt, const void *p, __mmask8 m)
{
    switch (dt) {
    case SBN_KD_F32: return _mm256_maskz_loadu_ps(m, p);
    case SBN_KD_F16: return _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, p));
    default: return bf16x8_to_float(_mm_maskz_loadu_epi16(m, p));
    }
}

SBN512_INLINE void st8m(sbn_kdtype dt, void *p, __mmask8 m, __m256 v)
{
    __m128i h;
    switch (dt) {
    case SBN_KD_F32: _mm256_mask_storeu_ps(p, m, v); return;
    case SBN_KD_F16:
        h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        h = _mm_min_epi16(_mm_min_epu16(h, _mm_set1_epi16((short)0xFE00)), _mm_set1_epi16(0x7E00));
        break;
    default: h = bf16_narrow8(v); break;
    }
    _mm_mask_storeu_epi16(p, m, h);
}

#endif /* SBN_MAP_ELEMS_AVX512_H */
