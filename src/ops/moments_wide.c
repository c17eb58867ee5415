/*
 * moments_wide.c - a channel's (mean, M2) again, in scaled doubles, when the chunked
 * MOMENTS pass (channel_reduce.c) left either non-finite although every element is
 * finite. That pass squares d = x - shift in double, so f64 data whose deviations
 * pass about 1.34e154 overflow there: B = sum(d^2) = Inf, and B - A^2/n or a
 * chunk's d itself (|x - shift| > DBL_MAX) then gives Inf - Inf = NaN, or an M2 of
 * Inf where the true M2 still fits (B <= (n + 1) M2, so B overflows first). Here the
 * channel is read once to find max|x| and any NaN/Inf; NaN or Inf data keeps the
 * pass's result (NaN mean or M2, docs/numerics.md). Otherwise, with k = max(0,
 * ilogb(max|x|) - 400), the same scheme runs on x * 2^-k (exact but for values that
 * become subnormal, which are below 2^-600 of the largest and cannot matter once
 * something overflowed): chunks of SBN_CHUNK in logical order, shift = the chunk's
 * first element, mean_k = shift + A/n, M2_k = B - A^2/n (clamped at 0), Chan merges
 * in chunk order; |x * 2^-k| < 2^401 keeps every square and sum below 2^870. Then
 * mean = mean_s * 2^k (clamped to [-max|x|, max|x|], which the true mean is in) and
 * M2 = M2_s * 2^2k, which is +Inf exactly when M2 passes DBL_MAX. Plain scalar
 * code in a fixed order: the same bits for every ISA, thread count and layout. Only
 * channels whose pass ended non-finite pay: two more reads of the channel when the
 * data is finite, one (the scan) when it holds a NaN or an Inf.
 */
#include <float.h>
#include <math.h>

#include "kernels/convert.h"
#include "ops/moments.h"
#include "ops/reduce.h"
#include "ops/walk.h"
#include "syncbn/ops.h"

#define WIDE_EXP 400 /* the scaled data's largest exponent */

typedef struct wide_scan {
    sbn_dtype dtype;
    double maxabs;
    int nonfinite;
    /* the scaled pass: */
    int k;                   /* the scale 2^-k */
    int64_t n;               /* elements in the chunk in progress */
    double shift, a, b;      /* its shift and sums */
    sbn_moments total;       /* the merged chunks */
} wide_scan;

/* Calls fn on the run's elements as doubles, SBN_CONVERT_PIECE at a time. */
static void each_piece(wide_scan *ws, const char *p, int64_t stride, int64_t len,
                       void (*fn)(wide_scan *, const double *, int64_t))
{
    double buf[SBN_CONVERT_PIECE];
    int64_t done, m, size = (int64_t)sbn_dtype_size(ws->dtype);
    for (done = 0; done < len; done += m) {
        m = len - done < SBN_CONVERT_PIECE ? len - done : SBN_CONVERT_PIECE;
        sbn__load_run(p + done * stride * size, ws->dtype, stride, m, buf);
        fn(ws, buf, m);
    }
}

static void scan_piece(wide_scan *ws, const double *v, int64_t m)
{
    int64_t i;
    for (i = 0; i < m; i++) {
        double a = fabs(v[i]);
        if (!(a <= DBL_MAX)) ws->nonfinite = 1; /* NaN or Inf */
        else if (a > ws->maxabs) ws->maxabs = a;
    }
}

static void scan_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    (void)at;
    each_piece(ctx, ptr[0], stride[0], len, scan_piece);
}

/* Merges the chunk in progress into the total. */
static void close_chunk(wide_scan *ws)
{
    double n = (double)ws->n, m2 = ws->b - ws->a * ws->a / n;
    sbn__moments_merge(&ws->total, n, ws->shift + ws->a / n, m2 < 0 ? 0.0 : m2);
    ws->n = 0;
}

static void sum_piece(wide_scan *ws, const double *v, int64_t m)
{
    int64_t i;
    for (i = 0; i < m; i++) {
        double x = ldexp(v[i], -ws->k), d;
        if (ws->n == 0) {
            ws->shift = x;
            ws->a = ws->b = 0.0;
        }
        d = x - ws->shift;
        ws->a += d;
        ws->b = fma(d, d, ws->b);
        ws->n++;
        if (ws->n == SBN_CHUNK) close_chunk(ws);
    }
}

static void sum_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t at, int64_t len)
{
    (void)at;
    each_piece(ctx, ptr[0], stride[0], len, sum_piece);
}

void sbn__moments_wide(const sbn__walk *w, int64_t c, double *mean, double *m2)
{
    wide_scan ws = {0};
    int e;
    ws.dtype = w->dtype[0];
    sbn__walk_runs(w, c, 0, w->reduction, scan_run, &ws);
    if (ws.nonfinite || ws.maxabs == 0.0) return; /* NaN/Inf data: the pass's NaN stays */
    e = ilogb(ws.maxabs);
    ws.k = e > WIDE_EXP ? e - WIDE_EXP : 0;
    sbn__walk_runs(w, c, 0, w->reduction, sum_run, &ws);
    if (ws.n > 0) close_chunk(&ws);
    *mean = ldexp(ws.total.mean, ws.k);
    if (*mean > ws.maxabs) *mean = ws.maxabs; /* a rounding past the largest element */
    if (*mean < -ws.maxabs) *mean = -ws.maxabs;
    *m2 = ldexp(ws.total.m2, 2 * ws.k);
}
