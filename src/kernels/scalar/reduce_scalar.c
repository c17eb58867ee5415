/*
 * reduce_scalar.c - the portable reduction kernels, which define the canonical
 * order every SIMD variant reproduces: 16 lane accumulators, lane k taking the
 * elements k, k+16, k+32, ... in order, folded by halving (kernels.h).
 *   moments:       mean = fold(x)/n, d = x - mean, M2 = fold(d*d) - fold(d)^2/n (>= 0)
 *   sums:          fold(x), fold(x*x)
 *   backward_sums: fold(dy), fold(dy*(x - center))
 */
#include <string.h>

#include "kernels/kernels.h"

void sbn_f64_moments_ukernel__scalar(const double *x, size_t n, double *mean, double *m2)
{
    double s[SBN_LANES], d_sum[SBN_LANES], q[SBN_LANES], m, dev, sq;
    size_t i;
    memset(s, 0, sizeof s);
    for (i = 0; i < n; i++) s[i % SBN_LANES] += x[i];
    m = sbn__fold16(s) / (double)n;
    memset(d_sum, 0, sizeof d_sum);
    memset(q, 0, sizeof q);
    for (i = 0; i < n; i++) {
        double d = x[i] - m;
        d_sum[i % SBN_LANES] += d;
        q[i % SBN_LANES] += d * d;
    }
    dev = sbn__fold16(d_sum);
    sq = sbn__fold16(q) - dev * dev / (double)n;
    *mean = m;
    *m2 = sq > 0 ? sq : 0.0;
}

void sbn_f64_sums_ukernel__scalar(const double *x, size_t n, double *sum, double *sumsq)
{
    double s[SBN_LANES], q[SBN_LANES];
    size_t i;
    memset(s, 0, sizeof s);
    memset(q, 0, sizeof q);
    for (i = 0; i < n; i++) {
        s[i % SBN_LANES] += x[i];
        q[i % SBN_LANES] += x[i] * x[i];
    }
    *sum = sbn__fold16(s);
    *sumsq = sbn__fold16(q);
}

void sbn_f64_backward_sums_ukernel__scalar(const double *dy, const double *x, size_t n,
                                           double center, double *sum_dy, double *sum_dy_xmu)
{
    double s[SBN_LANES], p[SBN_LANES];
    size_t i;
    memset(s, 0, sizeof s);
    memset(p, 0, sizeof p);
    for (i = 0; i < n; i++) {
        s[i % SBN_LANES] += dy[i];
        p[i % SBN_LANES] += dy[i] * (x[i] - center);
    }
    *sum_dy = sbn__fold16(s);
    *sum_dy_xmu = sbn__fold16(p);
}
