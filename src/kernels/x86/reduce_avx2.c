/*
 * reduce_avx2.c - the reduction kernels for AVX2, in the canonical order of
 * kernels.h: the 16 lanes are four ymm accumulators (lanes 0-3, 4-7, 8-11, 12-15),
 * each lane adding the elements at its position mod 16 in index order from +0.0.
 * Full blocks of 16 run in the vector loop; the lanes are then stored, the tail
 * elements i are added into lane i % 16 in order, and the lanes are folded with
 * sbn__fold16, which is exactly the scalar sequence of operations. No FMA: a
 * product is rounded before it is added (-ffp-contract=off, no FMA intrinsics).
 */
#include <immintrin.h>

#include "kernels/kernels.h"

typedef struct lanes4 {
    __m256d v[4];
} lanes4;

static inline lanes4 lanes_zero(void)
{
    lanes4 l;
    l.v[0] = l.v[1] = l.v[2] = l.v[3] = _mm256_setzero_pd();
    return l;
}

static inline void lanes_store(const lanes4 *l, double *s)
{
    _mm256_storeu_pd(s, l->v[0]);
    _mm256_storeu_pd(s + 4, l->v[1]);
    _mm256_storeu_pd(s + 8, l->v[2]);
    _mm256_storeu_pd(s + 12, l->v[3]);
}

void sbn_f64_moments_ukernel__avx2(const double *x, size_t n, double *mean, double *m2)
{
    _Alignas(32) double s[SBN_LANES], d_sum[SBN_LANES], q[SBN_LANES];
    lanes4 ls = lanes_zero(), ld = lanes_zero(), lq = lanes_zero();
    __m256d vm;
    size_t i, full = n & ~(size_t)(SBN_LANES - 1);
    int k;
    double m, dev, sq;

    for (i = 0; i < full; i += SBN_LANES)
        for (k = 0; k < 4; k++) ls.v[k] = _mm256_add_pd(ls.v[k], _mm256_loadu_pd(x + i + 4 * k));
    lanes_store(&ls, s);
    for (i = full; i < n; i++) s[i - full] += x[i];
    m = sbn__fold16(s) / (double)n;

    vm = _mm256_set1_pd(m);
    for (i = 0; i < full; i += SBN_LANES)
        for (k = 0; k < 4; k++) {
            __m256d d = _mm256_sub_pd(_mm256_loadu_pd(x + i + 4 * k), vm);
            ld.v[k] = _mm256_add_pd(ld.v[k], d);
            lq.v[k] = _mm256_add_pd(lq.v[k], _mm256_mul_pd(d, d));
        }
    lanes_store(&ld, d_sum);
    lanes_store(&lq, q);
    for (i = full; i < n; i++) {
        double d = x[i] - m;
        d_sum[i - full] += d;
        q[i - full] += d * d;
    }
    dev = sbn__fold16(d_sum);
    sq = sbn__fold16(q) - dev * dev / (double)n;
    *mean = m;
    *m2 = sq > 0 ? sq : 0.0;
}

void sbn_f64_sums_ukernel__avx2(const double *x, size_t n, double *sum, double *sumsq)
{
    _Alignas(32) double s[SBN_LANES], q[SBN_LANES];
    lanes4 ls = lanes_zero(), lq = lanes_zero();
    size_t i, full = n & ~(size_t)(SBN_LANES - 1);
    int k;

    for (i = 0; i < full; i += SBN_LANES)
        for (k = 0; k < 4; k++) {
            __m256d a = _mm256_loadu_pd(x + i + 4 * k);
            ls.v[k] = _mm256_add_pd(ls.v[k], a);
            lq.v[k] = _mm256_add_pd(lq.v[k], _mm256_mul_pd(a, a));
        }
    lanes_store(&ls, s);
    lanes_store(&lq, q);
    for (i = full; i < n; i++) {
        s[i - full] += x[i];
        q[i - full] += x[i] * x[i];
    }
    *sum = sbn__fold16(s);
    *sumsq = sbn__fold16(q);
}

void sbn_f64_backward_sums_ukernel__avx2(const double *dy, const double *x, size_t n,
                                         double center, double *sum_dy, double *sum_dy_xmu)
{
    _Alignas(32) double s[SBN_LANES], p[SBN_LANES];
    lanes4 ls = lanes_zero(), lp = lanes_zero();
    __m256d vc = _mm256_set1_pd(center);
    size_t i, full = n & ~(size_t)(SBN_LANES - 1);
    int k;

    for (i = 0; i < full; i += SBN_LANES)
        for (k = 0; k < 4; k++) {
            __m256d g = _mm256_loadu_pd(dy + i + 4 * k);
            __m256d d = _mm256_sub_pd(_mm256_loadu_pd(x + i + 4 * k), vc);
            ls.v[k] = _mm256_add_pd(ls.v[k], g);
            lp.v[k] = _mm256_add_pd(lp.v[k], _mm256_mul_pd(g, d));
        }
    lanes_store(&ls, s);
    lanes_store(&lp, p);
    for (i = full; i < n; i++) {
        s[i - full] += dy[i];
        p[i - full] += dy[i] * (x[i] - center);
    }
    *sum_dy = sbn__fold16(s);
    *sum_dy_xmu = sbn__fold16(p);
}
