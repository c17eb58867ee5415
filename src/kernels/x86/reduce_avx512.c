/*
 * reduce_avx512.c - the reduction kernels for AVX-512F, in the canonical order of
 * kernels.h: the 16 lanes are two zmm accumulators (lanes 0-7 and 8-15), each lane
 * adding the elements at its position mod 16 in index order from +0.0. A tail
 * shorter than 16 is added with masked operations, which leave the lanes it does
 * not reach untouched, so every lane sees exactly the scalar sequence of
 * additions; the lanes are then stored and folded with sbn__fold16. No FMA: a
 * product is rounded before it is added (-ffp-contract=off, no FMA intrinsics).
 */
#include <immintrin.h>

#include "kernels/kernels.h"

/* The 16-lane mask of the first r < 16 elements of a tail: low 8 lanes, high 8 lanes. */
static inline __mmask8 tail_lo(size_t r)
{
    return (__mmask8)(r >= 8 ? 0xFFu : (1u << r) - 1u);
}

static inline __mmask8 tail_hi(size_t r)
{
    return (__mmask8)(r <= 8 ? 0u : (1u << (r - 8)) - 1u);
}

static inline double fold2(__m512d lo, __m512d hi)
{
    _Alignas(64) double s[SBN_LANES];
    _mm512_store_pd(s, lo);
    _mm512_store_pd(s + 8, hi);
    return sbn__fold16(s);
}

void sbn_f64_moments_ukernel__avx512(const double *x, size_t n, double *mean, double *m2)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    __m512d d0 = _mm512_setzero_pd(), d1 = _mm512_setzero_pd();
    __m512d q0 = _mm512_setzero_pd(), q1 = _mm512_setzero_pd();
    __m512d vm;
    size_t i, full = n & ~(size_t)(SBN_LANES - 1), r = n - full;
    double m, dev, sq;

    for (i = 0; i < full; i += SBN_LANES) {
        s0 = _mm512_add_pd(s0, _mm512_loadu_pd(x + i));
        s1 = _mm512_add_pd(s1, _mm512_loadu_pd(x + i + 8));
    }
    if (r) {
        __mmask8 lo = tail_lo(r), hi = tail_hi(r);
        s0 = _mm512_mask_add_pd(s0, lo, s0, _mm512_maskz_loadu_pd(lo, x + full));
        s1 = _mm512_mask_add_pd(s1, hi, s1, _mm512_maskz_loadu_pd(hi, x + full + 8));
    }
    m = fold2(s0, s1) / (double)n;

    vm = _mm512_set1_pd(m);
    for (i = 0; i < full; i += SBN_LANES) {
        __m512d a = _mm512_sub_pd(_mm512_loadu_pd(x + i), vm);
        __m512d b = _mm512_sub_pd(_mm512_loadu_pd(x + i + 8), vm);
        d0 = _mm512_add_pd(d0, a);
        d1 = _mm512_add_pd(d1, b);
        q0 = _mm512_add_pd(q0, _mm512_mul_pd(a, a));
        q1 = _mm512_add_pd(q1, _mm512_mul_pd(b, b));
    }
    if (r) {
        __mmask8 lo = tail_lo(r), hi = tail_hi(r);
        __m512d a = _mm512_sub_pd(_mm512_maskz_loadu_pd(lo, x + full), vm);
        __m512d b = _mm512_sub_pd(_mm512_maskz_loadu_pd(hi, x + full + 8), vm);
        d0 = _mm512_mask_add_pd(d0, lo, d0, a);
        d1 = _mm512_mask_add_pd(d1, hi, d1, b);
        q0 = _mm512_mask_add_pd(q0, lo, q0, _mm512_mul_pd(a, a));
        q1 = _mm512_mask_add_pd(q1, hi, q1, _mm512_mul_pd(b, b));
    }
    dev = fold2(d0, d1);
    sq = fold2(q0, q1) - dev * dev / (double)n;
    *mean = m;
    *m2 = sq > 0 ? sq : 0.0;
}

void sbn_f64_sums_ukernel__avx512(const double *x, size_t n, double *sum, double *sumsq)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    __m512d q0 = _mm512_setzero_pd(), q1 = _mm512_setzero_pd();
    size_t i, full = n & ~(size_t)(SBN_LANES - 1), r = n - full;

    for (i = 0; i < full; i += SBN_LANES) {
        __m512d a = _mm512_loadu_pd(x + i), b = _mm512_loadu_pd(x + i + 8);
        s0 = _mm512_add_pd(s0, a);
        s1 = _mm512_add_pd(s1, b);
        q0 = _mm512_add_pd(q0, _mm512_mul_pd(a, a));
        q1 = _mm512_add_pd(q1, _mm512_mul_pd(b, b));
    }
    if (r) {
        __mmask8 lo = tail_lo(r), hi = tail_hi(r);
        __m512d a = _mm512_maskz_loadu_pd(lo, x + full), b = _mm512_maskz_loadu_pd(hi, x + full + 8);
        s0 = _mm512_mask_add_pd(s0, lo, s0, a);
        s1 = _mm512_mask_add_pd(s1, hi, s1, b);
        q0 = _mm512_mask_add_pd(q0, lo, q0, _mm512_mul_pd(a, a));
        q1 = _mm512_mask_add_pd(q1, hi, q1, _mm512_mul_pd(b, b));
    }
    *sum = fold2(s0, s1);
    *sumsq = fold2(q0, q1);
}

void sbn_f64_backward_sums_ukernel__avx512(const double *dy, const double *x, size_t n,
                                           double center, double *sum_dy, double *sum_dy_xmu)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    __m512d p0 = _mm512_setzero_pd(), p1 = _mm512_setzero_pd();
    __m512d vc = _mm512_set1_pd(center);
    size_t i, full = n & ~(size_t)(SBN_LANES - 1), r = n - full;

    for (i = 0; i < full; i += SBN_LANES) {
        __m512d ga = _mm512_loadu_pd(dy + i), gb = _mm512_loadu_pd(dy + i + 8);
        __m512d xa = _mm512_sub_pd(_mm512_loadu_pd(x + i), vc);
        __m512d xb = _mm512_sub_pd(_mm512_loadu_pd(x + i + 8), vc);
        s0 = _mm512_add_pd(s0, ga);
        s1 = _mm512_add_pd(s1, gb);
        p0 = _mm512_add_pd(p0, _mm512_mul_pd(ga, xa));
        p1 = _mm512_add_pd(p1, _mm512_mul_pd(gb, xb));
    }
    if (r) {
        __mmask8 lo = tail_lo(r), hi = tail_hi(r);
        __m512d ga = _mm512_maskz_loadu_pd(lo, dy + full);
        __m512d gb = _mm512_maskz_loadu_pd(hi, dy + full + 8);
        __m512d xa = _mm512_sub_pd(_mm512_maskz_loadu_pd(lo, x + full), vc);
        __m512d xb = _mm512_sub_pd(_mm512_maskz_loadu_pd(hi, x + full + 8), vc);
        s0 = _mm512_mask_add_pd(s0, lo, s0, ga);
        s1 = _mm512_mask_add_pd(s1, hi, s1, gb);
        p0 = _mm512_mask_add_pd(p0, lo, p0, _mm512_mul_pd(ga, xa));
        p1 = _mm512_mask_add_pd(p1, hi, p1, _mm512_mul_pd(gb, xb));
    }
    *sum_dy = fold2(s0, s1);
    *sum_dy_xmu = fold2(p0, p1);
}
