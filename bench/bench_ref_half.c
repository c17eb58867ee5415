/*
 * bench_ref_half.c - the reference kernels for the 2-byte floats, bf16 and fp16 (see
 * bench_ref.c, which calls them): the same float-lane loops as its fp32 kernels, written
 * with vectors, as the compiler does not vectorize fp16 conversions at all and leaves the
 * bf16 ones a third to a half slower than written out. Conversions: bf16 widens by a
 * 16-bit shift and narrows by integer rounding to nearest even (no AVX512_BF16: what a
 * plain kernel does); fp16 by the CPU's instructions (AVX-512 sixteen a vector, F16C
 * eight). Scalar tails, and CPUs without these, convert one element at a time with the
 * same bits. Built with -O3 -march=native; no care for accuracy beyond float lanes.
 */
#include <stdint.h>
#include <string.h>
#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "bench.h"

#define INLINE static inline __attribute__((always_inline))

static inline float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* One element. fp16: the magnitude moved to the float's fields and scaled by 2^(127-15)
 * rebiases the exponent and normalises subnormals; the way back rounds to nearest even
 * (below 2^-14 by the float addition of 0.5, whose rounding is fp16's subnormal grid). */
INLINE float ld1(int bf, const uint16_t *p, int64_t i)
{
    uint32_t h = p[i], m = (h & 0x7fffu) << 13;
    if (bf) return u2f(h << 16);
    if ((h & 0x7c00u) == 0x7c00u) m |= 0x7f800000u;
    return u2f(f2u(u2f(m) * 0x1p112f) | ((h & 0x8000u) << 16));
}

INLINE uint16_t st1(int bf, float v)
{
    uint32_t u = f2u(v), sign = u & 0x80000000u, o;
    if (bf) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    u ^= sign;
    if (u >= 143u << 23) o = u > 255u << 23 ? 0x7e00u : 0x7c00u;
    else if (u < 113u << 23) o = f2u(u2f(u) + 0.5f) - f2u(0.5f);
    else o = (u - (112u << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
    return (uint16_t)(o | (sign >> 16));
}

#if defined(__AVX512F__) /* sixteen floats a vector */
#define VW 16
typedef __m512 vfloat;
#define VADD _mm512_add_ps
#define VMUL _mm512_mul_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
INLINE vfloat vld(int bf, const uint16_t *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

INLINE void vst(int bf, uint16_t *p, vfloat v)
{
    __m256i h;
    if (bf) {
        __m512i u = _mm512_castps_si512(v), odd = _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                                                   _mm512_set1_epi32(1));
        u = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
        h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16));
    } else {
        h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    }
    _mm256_storeu_si256((__m256i *)p, h);
}
#elif defined(__F16C__) && defined(__AVX2__) /* eight */
#define VW 8
typedef __m256 vfloat;
#define VADD _mm256_add_ps
#define VMUL _mm256_mul_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
INLINE vfloat vld(int bf, const uint16_t *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (bf) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

INLINE void vst(int bf, uint16_t *p, vfloat v)
{
    __m128i h;
    if (bf) {
        __m256i u = _mm256_castps_si256(v), odd = _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                                                   _mm256_set1_epi32(1));
        u = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))),
                              16);
        /* packus takes 128-bit halves in turn: 0-3 and 4-7 of u land in lanes 0 and 2 */
        u = _mm256_permute4x64_epi64(_mm256_packus_epi32(u, u), 0x08);
        h = _mm256_castsi256_si128(u);
    } else {
        h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    }
    _mm_storeu_si128((__m128i *)p, h);
}
#else
#define VW 0
#endif

#if VW
INLINE float vsum(vfloat v)
{
    float t[VW], s = 0.0f;
    int j;
    VSTORE(t, v);
    for (j = 0; j < VW; j++) s += t[j];
    return s;
}
#endif

/* *s0 += sum a, *s1 += sum a*b over n contiguous elements (b == a: the forward). */
INLINE void plane_sums(int bf, const uint16_t *a, const uint16_t *b, int64_t n, float *s0,
                       float *s1)
{
    float r0 = 0.0f, r1 = 0.0f;
    int64_t i = 0;
#if VW
    vfloat p0[4], p1[4];
    int j;
    for (j = 0; j < 4; j++) p0[j] = p1[j] = VZERO();
    for (; i + 4 * VW <= n; i += 4 * VW)
        for (j = 0; j < 4; j++) {
            vfloat va = vld(bf, a + i + VW * j), vb = b == a ? va : vld(bf, b + i + VW * j);
            p0[j] = VADD(p0[j], va);
            p1[j] = VADD(p1[j], VMUL(va, vb));
        }
    for (; i + VW <= n; i += VW) { /* short planes (7x7: three vectors and one element) */
        vfloat va = vld(bf, a + i), vb = b == a ? va : vld(bf, b + i);
        p0[0] = VADD(p0[0], va);
        p1[0] = VADD(p1[0], VMUL(va, vb));
    }
    r0 = vsum(VADD(VADD(p0[0], p0[1]), VADD(p0[2], p0[3])));
    r1 = vsum(VADD(VADD(p1[0], p1[1]), VADD(p1[2], p1[3])));
#endif
    for (; i < n; i++) {
        r0 += ld1(bf, a, i);
        r1 += ld1(bf, a, i) * ld1(bf, b, i);
    }
    *s0 += r0;
    *s1 += r1;
}

/* s0[k] += sum a[r][k], s1[k] += sum a[r][k]*b[r][k] over rows of c: four rows a pass over
 * the sums, as bench_ref.c's rows_sums. */
INLINE void rows_sums(int bf, const uint16_t *a, const uint16_t *b, int64_t rows, int64_t c,
                      float *s0, float *s1)
{
    int64_t r = 0, k, q, j;
    for (; r < rows; r += q) {
        const uint16_t *ar = a + r * c, *br = b + r * c;
        q = rows - r < 4 ? rows - r : 4;
        k = 0;
#if VW
        for (; q == 4 && k + VW <= c; k += VW) {
            vfloat x0 = vld(bf, ar + k), x1 = vld(bf, ar + c + k), x2 = vld(bf, ar + 2 * c + k),
                   x3 = vld(bf, ar + 3 * c + k);
            vfloat p = VADD(VADD(VMUL(x0, vld(bf, br + k)), VMUL(x1, vld(bf, br + c + k))),
                            VADD(VMUL(x2, vld(bf, br + 2 * c + k)),
                                 VMUL(x3, vld(bf, br + 3 * c + k))));
            VSTORE(s0 + k, VADD(VLOAD(s0 + k), VADD(VADD(x0, x1), VADD(x2, x3))));
            VSTORE(s1 + k, VADD(VLOAD(s1 + k), p));
        }
#endif
        for (; k < c; k++)
            for (j = 0; j < q; j++) {
                s0[k] += ld1(bf, ar + j * c, k);
                s1[k] += ld1(bf, ar + j * c, k) * ld1(bf, br + j * c, k);
            }
    }
}

/* y = k1*a + k2*b + k3 over n elements of one channel (b NULL: y = k1*a + k3). */
INLINE void plane_map(int bf, const uint16_t *a, const uint16_t *b, int64_t n, float k1,
                      float k2, float k3, uint16_t *y)
{
    int64_t i = 0;
#if VW
    vfloat v1 = VSET1(k1), v2 = VSET1(k2), v3 = VSET1(k3);
    for (; i + VW <= n; i += VW) {
        vfloat t = VADD(VMUL(v1, vld(bf, a + i)), v3);
        if (b) t = VADD(t, VMUL(v2, vld(bf, b + i)));
        vst(bf, y + i, t);
    }
#endif
    for (; i < n; i++) y[i] = st1(bf, k1 * ld1(bf, a, i) + k3 + (b ? k2 * ld1(bf, b, i) : 0.0f));
}

/* The same per row of c channels, with per-channel k1, k2, k3 (k2 and b NULL together). */
INLINE void rows_map(int bf, const uint16_t *a, const uint16_t *b, int64_t rows, int64_t c,
                     const float *k1, const float *k2, const float *k3, uint16_t *y)
{
    int64_t r, k;
    for (r = 0; r < rows; r++) {
        const uint16_t *ar = a + r * c, *br = b ? b + r * c : NULL;
        uint16_t *yr = y + r * c;
        k = 0;
#if VW
        for (; k + VW <= c; k += VW) {
            vfloat t = VADD(VMUL(VLOAD(k1 + k), vld(bf, ar + k)), VLOAD(k3 + k));
            if (br) t = VADD(t, VMUL(VLOAD(k2 + k), vld(bf, br + k)));
            vst(bf, yr + k, t);
        }
#endif
        for (; k < c; k++)
            yr[k] = st1(bf, k1[k] * ld1(bf, ar, k) + k3[k] + (br ? k2[k] * ld1(bf, br, k) : 0.0f));
    }
}

/* The entry points: each kernel compiled once per type (bf a constant in each branch). */
void ref_half_plane_sums(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t n, float *s0,
                         float *s1)
{
    if (dt == SBN_BF16) plane_sums(1, a, b, n, s0, s1);
    else plane_sums(0, a, b, n, s0, s1);
}

void ref_half_rows_sums(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t rows,
                        int64_t c, float *s0, float *s1)
{
    if (dt == SBN_BF16) rows_sums(1, a, b, rows, c, s0, s1);
    else rows_sums(0, a, b, rows, c, s0, s1);
}

void ref_half_plane_map(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t n, float k1,
                        float k2, float k3, uint16_t *y)
{
    if (dt == SBN_BF16) plane_map(1, a, b, n, k1, k2, k3, y);
    else plane_map(0, a, b, n, k1, k2, k3, y);
}

void ref_half_rows_map(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t rows, int64_t c,
                       const float *k1, const float *k2, const float *k3, uint16_t *y)
{
    if (dt == SBN_BF16) rows_map(1, a, b, rows, c, k1, k2, k3, y);
    else rows_map(0, a, b, rows, c, k1, k2, k3, y);
}
