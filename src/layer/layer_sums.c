/*
 * layer_sums.c - the deposits and the finish of the SyncBN layer's
 * order-independent statistics (layer_sums.h has the formulas), and the
 * per-sample passes of reproducible mode. A sample never spans ranks, so its
 * partials (mean and M2 of each channel, or its two backward sums) are computed
 * by the ordinary reduction kernels on a view of that sample alone, in their fixed
 * order; the accumulators then make the sum over samples independent of which
 * rank or thread held them. When the batch and channel dims merge into one
 * stride (NCHW, (N, C), any view with stride[0] == C * stride[1]), G samples go
 * through the kernels at once as a (1, G*C, spatial) view whose "channel"
 * k = j*C + c is channel c of sample n0 + j; otherwise (channels-last) one sample
 * at a time. Either way each (sample, channel) reduction reads the same elements
 * in the same order, so the bits do not depend on the grouping. With one element
 * per (sample, channel) ((N, C) inputs) the units are read directly: mean x and
 * M2 0, or dy and dy * (x - mean), which is what the kernels would give.
 */
#include <math.h>
#include <string.h>

#include "core/arith.h"
#include "kernels/convert.h"
#include "layer/layer_sums.h"
#include "ops/reduce.h"

/* ---- deposits and finish ---- */

/*
 * Squares and products of means past 2^511 pass DBL_MAX, so every factor v is taken
 * as v' * 2^(32 b) with |v'| < 2^448 (b = 0 below 2^448, else the fewest bins that
 * bring it there: v' is then normal and exact) and every product is deposited at
 * its offset (sbn__rsum_add_scaled). Products of two such factors and a count
 * (< 2^63) stay below 2^960, their rounding errors normal: the deposited exact
 * terms are those the unscaled products give whenever these do not overflow, so
 * the bits only change where they used to be Inf or NaN.
 */
#define SCALE_EXP 448

typedef struct scaled {
    double v;     /* the factor / 2^(32 bins) */
    int64_t bins; /* 0 .. 18 */
} scaled;

static scaled scale_of(double v)
{
    scaled s = {v, 0};
    if (fabs(v) >= 0x1p448 && isfinite(v)) {
        s.bins = (ilogb(v) - SCALE_EXP + 32) / 32; /* ilogb(v') = ilogb(v) - 32 bins < 448 */
        s.v = ldexp(v, (int)(-32 * s.bins));
    }
    return s;
}

/* Deposits a * b * 2^(32 bins) exactly: the rounded product and, when finite, its
 * error (fma); a == 1 (a unit of one element) needs no split. */
static void add_product(sbn__rsum *acc, double a, double b, int64_t bins)
{
    double p = a * b;
    sbn__rsum_add_scaled(acc, p, bins);
    if (a != 1.0 && isfinite(p)) sbn__rsum_add_scaled(acc, fma(a, b, -p), bins);
}

/*
 * Deposits count * v * v * 2^(64 v.bins) as two doubles whose sum is within 2^-104
 * of it (relative): v*v = h + l exactly (fma), count*h = p + e exactly, then p and
 * round(e + count*l). Deterministic, which is all the accumulators need; the error
 * is far below their 2^-96 truncation.
 */
static void add_scaled_square(sbn__rsum *acc, double count, scaled v)
{
    double h = v.v * v.v, p = count * h;
    sbn__rsum_add_scaled(acc, p, 2 * v.bins);
    if (!isfinite(p)) return;
    if (count == 1.0) sbn__rsum_add_scaled(acc, fma(v.v, v.v, -h), 2 * v.bins);
    else sbn__rsum_add_scaled(acc, fma(count, h, -p) + count * fma(v.v, v.v, -h), 2 * v.bins);
}

void sbn__layer_deposit_moments(sbn__rsum *acc, int64_t channels, int64_t c, double count,
                                double mean, double m2)
{
    scaled m = scale_of(mean);
    add_product(&acc[c], count, m.v, m.bins);
    add_scaled_square(&acc[channels + c], count, m);
    if (m2 != 0) sbn__rsum_add(&acc[2 * channels + c], m2);
}

double sbn__layer_count(const sbn__rsum *acc, int64_t channels)
{
    return sbn__rsum_value(&acc[3 * channels]);
}

/*
 * g = round(P) / N, from P * 2^(-32 b) when P's top bin passes 62 (P past about
 * 2^900): the same bits as round(P) / N where that is finite, since the scaling is
 * exact and the scaled value normal.
 */
static double global_mean(const sbn__rsum *p, double n)
{
    int64_t b = p->top > 62 ? p->top - 62 : 0;
    return ldexp(sbn__rsum_value_scaled(p, b) / n, (int)(32 * b));
}

/*
 * 0 when M2's error bound is not below 2^-45 of it. The bound: the truncation of
 * the finish's nt <= 3 units + 20 terms, each below 2^(32 (top - 3) - 1074), plus
 * 2^-101 Q for the double-double deposits of S m^2 and N g^2 (2^-104 each) and the
 * rounding of g (N (mean - g)^2 <= 2^-104 Q). Compared 32 sb bits down, in range.
 */
static int m2_trusted(const sbn__rsum *m2, const sbn__rsum *q, double units)
{
    int64_t top = m2->top, sb = top > 40 ? top - 40 : 0;
    double r, bound;
    if (m2->flags != 0 || top < 0) return 1; /* NaN/Inf data, or nothing but zeros */
    r = sbn__rsum_value_scaled(m2, sb);
    bound = ldexp(3.0 * units + 20.0, (int)(32 * (top - 3 - sb) - 1074)) +
            ldexp(sbn__rsum_value_scaled(q, sb), -101);
    return r >= ldexp(bound, 45);
}

sbn_moments sbn__layer_finish_moments(const sbn__rsum *acc, int64_t channels, int64_t c,
                                      double n, double centre, double units, int *trusted)
{
    sbn_moments out = {0.0, 0.0, 0.0};
    double parts[SBN_RSUM_PARTS], g;
    scaled gs, two_g;
    sbn__rsum m2;
    int64_t pb;
    int k, np;
    *trusted = 1;
    if (!(n > 0)) return out;
    g = global_mean(&acc[c], n);
    gs = scale_of(g);
    two_g.v = -2.0 * gs.v; /* exact */
    two_g.bins = gs.bins;
    /* M2 = M + Q - 2 g P + N g^2, P's parts scaled by 2^(-32 pb) to stay below 2^431 */
    m2 = acc[channels + c];
    sbn__rsum_merge(&m2, &acc[2 * channels + c], 1);
    pb = acc[c].top > 45 ? acc[c].top - 45 : 0;
    np = sbn__rsum_parts_scaled(&acc[c], pb, parts);
    for (k = 0; k < np; k++) add_product(&m2, two_g.v, parts[k], two_g.bins + pb);
    add_scaled_square(&m2, n, gs);
    *trusted = m2_trusted(&m2, &acc[channels + c], units);
    out.count = n;
    out.mean = centre == 0.0 ? g : centre + g;
    out.m2 = sbn__rsum_value(&m2); /* +Inf when M2 passes DBL_MAX */
    if (out.m2 < 0) out.m2 = 0; /* truncation below 2^-96 of the largest term; NaN stays */
    return out;
}

/* ---- per-sample passes ---- */

/* Elements per (sample, channel): the product of the dims after the channel. */
static int64_t sample_size(const sbn_tensor *x)
{
    int64_t s = 1;
    int d;
    for (d = 2; d < x->rank; d++) s *= x->shape[d];
    return s;
}

/* 1 when samples n and n + 1 continue the channel stride (stride[0] == C * stride[1]). */
static int samples_merge(const sbn_tensor *x)
{
    int64_t step;
    if (x->shape[0] <= 1) return 1;
    return sbn__mul_i64(x->shape[1], x->strides[1], &step) && step == x->strides[0];
}

int64_t sbn__layer_group_samples(const sbn_tensor *x)
{
    int64_t g = SBN_LAYER_GROUP_CELLS / (x->shape[1] > 0 ? x->shape[1] : 1);
    if (g < 1 || !samples_merge(x)) g = 1;
    if (g > x->shape[0]) g = x->shape[0] > 0 ? x->shape[0] : 1;
    return g;
}

/* Samples [n0, n0 + g) of x as one (1, g*C, ...) view (g == 1: any layout). */
static sbn_tensor group_view(const sbn_tensor *x, int64_t n0, int64_t g)
{
    sbn_tensor v = *x;
    if (n0 > 0) /* (data may be NULL when only the size is asked) */
        v.data = (char *)x->data + n0 * x->strides[0] * (int64_t)sbn_dtype_size(x->dtype);
    v.shape[0] = 1;
    v.shape[1] = g * x->shape[1];
    v.strides[0] = v.shape[1] * x->strides[1];
    return v;
}

/* Scratch of groups of g samples: center [gC] (backward), the reduction's own, out [2gC]. */
static size_t group_bytes(const sbn_tensor *x, int64_t g)
{
    sbn_tensor v = group_view(x, 0, g);
    size_t cells = sbn__sat_mul((size_t)g, (size_t)x->shape[1]);
    return sbn__sat_add(sbn__channel_reduce_bytes(&v), sbn__sat_mul(cells, 3 * sizeof(double)));
}

size_t sbn__layer_sample_bytes(const sbn_tensor *x)
{
    if (x->shape[0] == 0 || sample_size(x) == 0) return 0; /* nothing to reduce */
    if (sample_size(x) == 1) /* rows of x, dy and the means, in double */
        return sbn__sat_mul((size_t)x->shape[1], 3 * sizeof(double));
    return group_bytes(x, sbn__layer_group_samples(x));
}

/* The reduction's scratch of a group inside the per-sample scratch: after the centers
 * of gmax samples (gmax * C doubles, used by the backward pass). */
static double *group_scratch(const sbn_tensor *x, int64_t gmax, void *scratch)
{
    return (double *)scratch + gmax * x->shape[1];
}

/* The group's results (2 per cell) after its reduction scratch. */
static double *group_out(const sbn_tensor *v, double *reduce_scratch)
{
    return reduce_scratch + sbn__channel_reduce_bytes(v) / sizeof(double);
}

/* Sample n of a tensor with one element per (sample, channel), its C values in double. */
static void load_sample(const sbn_tensor *x, int64_t n, double *out)
{
    const char *p = (const char *)x->data;
    if (n > 0) p += n * x->strides[0] * (int64_t)sbn_dtype_size(x->dtype);
    sbn__load_run(p, x->dtype, x->strides[1], x->shape[1], out);
}

/* A unit's mean about channel c's centre (centre NULL: 0; m - 0 would turn -0 into +0). */
static double about(const double *centre, int64_t c, double m)
{
    return centre != NULL && centre[c] != 0.0 ? m - centre[c] : m;
}

void sbn__layer_sample_moments(const sbn_tensor *x, const double *centre, sbn__rsum *acc,
                               void *scratch, sbn_pool_t *pool)
{
    const int64_t n = x->shape[0], channels = x->shape[1], s = sample_size(x);
    const int64_t gmax = sbn__layer_group_samples(x);
    int64_t n0, k;
    if (n == 0 || s == 0) return;
    if (s == 1) { /* a unit is one element: mean x, M2 0 (what the kernels give), no pass */
        double *row = scratch;
        for (n0 = 0; n0 < n; n0++) {
            load_sample(x, n0, row);
            for (k = 0; k < channels; k++)
                sbn__layer_deposit_moments(acc, channels, k, 1.0, about(centre, k, row[k]), 0.0);
        }
        sbn__rsum_add(&acc[3 * channels], (double)n);
        sbn__rsum_add(&acc[SBN_LAYER_FWD_UNITS(channels)], (double)n);
        return;
    }
    for (n0 = 0; n0 < n; n0 += gmax) {
        const int64_t g = n - n0 < gmax ? n - n0 : gmax;
        sbn_tensor v = group_view(x, n0, g);
        double *rs = group_scratch(x, gmax, scratch), *out = group_out(&v, rs);
        sbn__channel_reduce(SBN_REDUCE_MOMENTS, &v, NULL, NULL, out, rs, pool);
        for (k = 0; k < g * channels; k++)
            sbn__layer_deposit_moments(acc, channels, k % channels, (double)s,
                                       about(centre, k % channels, out[2 * k]), out[2 * k + 1]);
    }
    sbn__rsum_add(&acc[3 * channels], (double)n * (double)s);
    sbn__rsum_add(&acc[SBN_LAYER_FWD_UNITS(channels)], (double)n);
}

void sbn__layer_sample_sums(const sbn_tensor *dy, const sbn_tensor *x, const sbn_tensor *mean,
                            sbn__rsum *acc, void *scratch, sbn_pool_t *pool)
{
    const int64_t n = x->shape[0], channels = x->shape[1], gx = sbn__layer_group_samples(x);
    const int64_t gdy = sbn__layer_group_samples(dy), gmax = gx < gdy ? gx : gdy;
    double *cen = scratch;
    sbn_tensor center;
    int64_t n0, k, c;
    if (n == 0 || sample_size(x) == 0) return;
    sbn__rsum_add(&acc[SBN_LAYER_BWD_UNITS(channels)], (double)n);
    if (sample_size(x) == 1) { /* one element per unit: the kernels' two sums, directly */
        double *row = scratch, *drow = row + channels, *means = drow + channels;
        for (c = 0; c < channels; c++) means[c] = sbn__load1(mean, c);
        for (n0 = 0; n0 < n; n0++) {
            load_sample(x, n0, row);
            load_sample(dy, n0, drow);
            for (c = 0; c < channels; c++) {
                sbn__rsum_add(&acc[c], drow[c]);
                sbn__rsum_add(&acc[channels + c], drow[c] * (row[c] - means[c]));
            }
        }
        return;
    }
    /* every group centers cell j*C + c on mean[c]: the means of gmax samples, once */
    sbn__load_run(mean->data, mean->dtype, mean->strides[0], channels, cen);
    for (k = 1; k < gmax; k++) memcpy(cen + k * channels, cen, (size_t)channels * sizeof *cen);
    for (n0 = 0; n0 < n; n0 += gmax) {
        const int64_t g = n - n0 < gmax ? n - n0 : gmax;
        sbn_tensor v = group_view(x, n0, g), dv = group_view(dy, n0, g);
        double *rs = group_scratch(x, gmax, scratch), *out = group_out(&v, rs);
        center = sbn_tensor_1d(cen, SBN_F64, g * channels);
        sbn__channel_reduce(SBN_REDUCE_BACKWARD, &dv, &v, &center, out, rs, pool);
        for (k = 0; k < g * channels; k++) {
            sbn__rsum_add(&acc[k % channels], out[2 * k]);
            sbn__rsum_add(&acc[channels + k % channels], out[2 * k + 1]);
        }
    }
}
