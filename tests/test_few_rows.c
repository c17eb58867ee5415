/*
 * test_few_rows.c - channel reductions whose chunks hold fewer than 16 rows: small
 * batches of (N, C) and (N, C, L) inputs, and a last chunk of a few rows after whole
 * ones (R = 2048 + k). Channels-last inputs take the row path, whose chunks reach only
 * lanes [0, rows) and fold only those; channels-first inputs take the plane path. The
 * contract (docs/numerics.md) is the same bits in every layout and for every pool, so
 * each case compares the raw bytes of sbn_stats, sbn_stats_moments, sbn_reduce and
 * sbn_backward_reduce in the channels-last, strided and channels-first layouts, with
 * pools of 1 to 3 threads, and checks the means and sums against the double-precision
 * oracle. The values put signed zeros, exact cancellations (x and -x in one lane), a
 * NaN and an infinity where a lane's sum could show a sign of zero or lose them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/optest.h"
#include "syncbn/ops.h"

#define EPS 1e-5
#define MAX_C 48

/* Every output of the four reductions, as raw bytes. */
typedef struct few_bytes {
    double mean[MAX_C], invstd[MAX_C], sum[MAX_C], sqsum[MAX_C];
    double sum_dy[MAX_C], sum_dy_xmu[MAX_C];
    sbn_moments moments[MAX_C];
} few_bytes;

static sbn_status run_all(const sbn_tensor *dy, const sbn_tensor *x, const double *center,
                          sbn_pool_t *pool, few_bytes *out)
{
    int64_t c = x->shape[1];
    sbn_tensor mean = sbn_tensor_1d(out->mean, SBN_F64, c);
    sbn_tensor invstd = sbn_tensor_1d(out->invstd, SBN_F64, c);
    sbn_tensor sum = sbn_tensor_1d(out->sum, SBN_F64, c);
    sbn_tensor sq = sbn_tensor_1d(out->sqsum, SBN_F64, c);
    sbn_tensor sdy = sbn_tensor_1d(out->sum_dy, SBN_F64, c);
    sbn_tensor sdx = sbn_tensor_1d(out->sum_dy_xmu, SBN_F64, c);
    sbn_tensor ctr = sbn_tensor_1d((void *)center, SBN_F64, c);
    sbn_tensor ones = sbn_tensor_1d(out->invstd, SBN_F64, c); /* any invstd: unused by these */
    size_t b[4] = {0, 0, 0, 0}, bytes = 0;
    void *ws;
    sbn_status st;
    int i;
    memset(out, 0, sizeof *out);
    if ((st = sbn_stats_workspace_size(x, &b[0])) != SBN_OK) return st;
    if ((st = sbn_stats_moments_workspace_size(x, &b[1])) != SBN_OK) return st;
    if ((st = sbn_reduce_workspace_size(x, &b[2])) != SBN_OK) return st;
    if ((st = sbn_backward_reduce_workspace_size(x, &b[3])) != SBN_OK) return st;
    for (i = 0; i < 4; i++) bytes = b[i] > bytes ? b[i] : bytes;
    ws = tsup_ws_alloc(bytes);
    st = sbn_stats(x, EPS, &mean, &invstd, ws, b[0], pool);
    if (st == SBN_OK) st = sbn_stats_moments(x, out->moments, ws, b[1], pool);
    if (st == SBN_OK) st = sbn_reduce(x, &sum, &sq, ws, b[2], pool);
    if (st == SBN_OK)
        st = sbn_backward_reduce(dy, x, &ctr, &ones, &sdy, &sdx, NULL, NULL, ws, b[3], pool);
    free(ws);
    return st;
}

/* Value of element i (logical row-major) of channel c: random, with channel 0 all
 * signed zeros, channel 1 pairs x, -x on rows 16 apart (one lane's exact
 * cancellation), channel 2 a NaN and channel 3 an infinity when there are rows enough. */
static double value(int64_t i, int64_t c, int64_t rows, int64_t row, unsigned *seed)
{
    double v;
    *seed = *seed * 1103515245u + 12345u;
    v = ((double)(*seed >> 8 & 0xFFFF) / 65536.0 - 0.5) * 8.0 + (double)c;
    if (c == 0) return (i % 3 == 0) ? -0.0 : 0.0;
    if (c == 1) return row % 32 < 16 ? 1.5 + (double)(row % 16) : -(1.5 + (double)(row % 16));
    if (c == 2 && rows > 2 && row == rows / 2) return NAN;
    if (c == 3 && rows > 1 && row == rows - 1) return INFINITY;
    return v;
}

/* The oracle's sum of x over channel c (finite channels only). */
static double oracle_sum(const double *v, int64_t n, int64_t c_count, int64_t l, int64_t c)
{
    double s = 0.0;
    int64_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < l; k++) s += v[(i * c_count + c) * l + k];
    return s;
}

static void run_shape(int64_t n, int64_t c, int64_t l)
{
    int rank = l > 0 ? 3 : 2;
    int64_t shape[3] = {n, c, l}, rows = n * (l > 0 ? l : 1), total = rows * c, i, ch;
    int64_t inner = l > 0 ? l : 1;
    double *xv = malloc((size_t)total * sizeof *xv), *dv = malloc((size_t)total * sizeof *dv);
    double center[MAX_C];
    unsigned seed = (unsigned)(n * 131 + c * 7 + l);
    static const tsup_layout layouts[] = {TSUP_CHANNELS_LAST, TSUP_STRIDED, TSUP_CHANNELS_FIRST};
    few_bytes first, got;
    char what[160];
    int il, t;
    CHECK(xv != NULL && dv != NULL);
    for (i = 0; i < total; i++) {
        int64_t s = i / (c * inner), k = i % inner;
        ch = i / inner % c;
        xv[i] = value(i, ch, rows, s * inner + k, &seed);
        dv[i] = value(i + 7, (ch + 2) % c, rows, s * inner + k, &seed);
    }
    for (ch = 0; ch < c; ch++) center[ch] = 0.25 * (double)ch - 1.0;
    for (il = 0; il < 3; il++) {
        tsup_buf x = tsup_make(SBN_F32, rank, shape, layouts[il], xv);
        tsup_buf dy = tsup_make(SBN_F32, rank, shape, layouts[il], dv);
        for (t = 0; t <= 3; t++) {
            sbn_pool_t *pool = NULL;
            if (t > 0) CHECK_OK(sbn_pool_create(t, &pool));
            CHECK_OK(run_all(&dy.view, &x.view, center, pool, il == 0 && t == 0 ? &first : &got));
            sbn_pool_destroy(pool);
            if (il == 0 && t == 0) continue;
            snprintf(what, sizeof what, "%lldx%lldx%lld %s input, pool of %d vs channels-last serial",
                     (long long)n, (long long)c, (long long)l, tsup_layout_name(layouts[il]), t);
            CHECK_MSG(tsup_same_bytes(what, &first, &got, sizeof first), "outputs of %s differ",
                      what);
        }
        tsup_free(&x);
        tsup_free(&dy);
    }
    /* the oracle, on what the f32 views hold (the values above are f32-exact or rounded
     * alike in both): the sums of the finite channels, and the NaN and Inf kept */
    for (i = 0; i < total; i++) xv[i] = (double)(float)xv[i];
    for (ch = 0; ch < c; ch++) {
        double want;
        want = oracle_sum(xv, n, c, inner, ch);
        if (isnan(want)) {
            CHECK_MSG(isnan(first.sum[ch]) && isnan(first.mean[ch]), "channel %lld lost its NaN",
                      (long long)ch);
        } else if (isinf(want)) {
            CHECK_MSG(first.sum[ch] == want, "channel %lld sum %.17g, want %g", (long long)ch,
                      first.sum[ch], want);
        } else {
            CHECK_MSG(fabs(first.sum[ch] - want) <= 1e-12 * (fabs(want) + (double)rows * 8.0),
                      "%lldx%lldx%lld channel %lld: sum %.17g, oracle %.17g", (long long)n,
                      (long long)c, (long long)l, (long long)ch, first.sum[ch], want);
            CHECK_MSG(fabs(first.mean[ch] - want / (double)rows) <= 1e-12 * (fabs(want) + 8.0),
                      "channel %lld: mean %.17g, oracle %.17g", (long long)ch, first.mean[ch],
                      want / (double)rows);
        }
    }
    CHECK_MSG(first.sum[0] == 0.0 && !signbit(first.sum[0]), "channel of signed zeros sums to %g",
              first.sum[0]);
    free(xv);
    free(dv);
}

/* (N, C): every batch size from 1 to 17, and 31, 32, 33 (two lanes' rows and a third). */
static void test_matrix_2d(void)
{
    static const int64_t ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33};
    static const int64_t cs[] = {4, 9, 40};
    size_t i, j;
    for (i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (j = 0; j < sizeof cs / sizeof cs[0]; j++) run_shape(ns[i], cs[j], 0);
}

/* (N, C, L) with N * L rows under 16, and chunks of 2048 rows followed by a few. */
static void test_matrix_3d(void)
{
    static const int64_t nl[][2] = {{1, 3}, {2, 3}, {3, 5}, {5, 3}, {1, 15}, {2, 8},
                                    {1, 2051}, {4, 513}, {2053, 1}, {683, 3}};
    size_t i;
    for (i = 0; i < sizeof nl / sizeof nl[0]; i++) run_shape(nl[i][0], 5, nl[i][1]);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_matrix_2d),
    SBN_TEST_CASE(test_matrix_3d),
};

SBN_TEST_MAIN(k_cases)
