/*
 * test_stats.c - the local reductions sbn_stats, sbn_stats_moments and sbn_reduce
 * against the double-precision oracle (tests/ref). A shape matrix (ranks 2,3,4,5,8;
 * C = 1, 3, 64; spatial sizes 1, 7, 16, 17, 1000) is run in every input layout
 * (channels-first, channels-last, strided) and input dtype (f32, f64, f16, bf16),
 * with f32/f64 outputs written through contiguous and strided 1-D views whose
 * guard bytes must stay intact. The oracle always runs on the input as read back
 * from the view (so dtype rounding is not counted as error) and the tolerances
 * are derived from the reduction length R and the output dtype. Further cases:
 * empty inputs, f16/bf16 outputs, a badly conditioned fp32 input (mean 1e4,
 * std 1e-2), the CANN documentation example, and bitwise equality of all three
 * ops for pools of 1, 2 and 3 threads against the serial run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/optest.h"
#include "syncbn/ops.h"

#define EPS 1e-5

static const sbn_dtype k_in_dtypes[] = {SBN_F32, SBN_F64, SBN_F16, SBN_BF16};
static const tsup_layout k_layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};

/* Per-channel data of one input, read back after dtype rounding, plus its oracle. */
typedef struct oracle {
    int64_t n, c, s, r;
    double *x;                         /* logical values as stored in the view */
    double *mean, *invstd, *var;       /* ref_stats / ref_mean_var */
    double *sum, *sqsum;               /* ref_reduce */
    double max_abs, max_sum_abs, max_sqsum, cond; /* scales for the tolerances */
} oracle;

static oracle oracle_build(const sbn_tensor *x)
{
    oracle o;
    int64_t numel = sbn_tensor_numel(x), ch, i, k;
    memset(&o, 0, sizeof o);
    o.n = x->shape[0];
    o.c = x->shape[1];
    o.s = 1;
    for (i = 2; i < x->rank; i++) o.s *= x->shape[i];
    o.r = o.n * o.s;
    o.x = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
    o.mean = malloc(sizeof(double) * (size_t)o.c * 7);
    o.invstd = o.mean + o.c;
    o.var = o.mean + 2 * o.c;
    o.sum = o.mean + 3 * o.c;
    o.sqsum = o.mean + 4 * o.c;
    tsup_read(x, o.x);
    ref_stats(o.x, o.n, o.c, o.s, EPS, o.mean, o.invstd);
    ref_mean_var(o.x, o.n, o.c, o.s, o.mean + 5 * o.c, o.var);
    ref_reduce(o.x, o.n, o.c, o.s, o.sum, o.sqsum);
    o.cond = 1.0;
    for (ch = 0; ch < o.c; ch++) {
        double sa = 0.0, cond;
        for (i = 0; i < o.n; i++)
            for (k = 0; k < o.s; k++) sa += fabs(o.x[(i * o.c + ch) * o.s + k]);
        if (sa > o.max_sum_abs) o.max_sum_abs = sa;
        if (o.sqsum[ch] > o.max_sqsum) o.max_sqsum = o.sqsum[ch];
        cond = 1.0 + o.mean[ch] * o.mean[ch] / (o.var[ch] + EPS);
        if (o.r > 0 && cond > o.cond) o.cond = cond;
    }
    for (i = 0; i < numel; i++)
        if (fabs(o.x[i]) > o.max_abs) o.max_abs = fabs(o.x[i]);
    return o;
}

static void oracle_free(oracle *o)
{
    free(o->x);
    free(o->mean);
}

/* Double-sum error allowance: R * 2^-50 * scale. */
static double sum_err(int64_t r, double scale)
{
    return (double)r * ldexp(1.0, -50) * scale;
}

/* Smallest absolute error of rounding a small value to `dtype` (subnormal quantum). */
static double tiny_tol(sbn_dtype dtype)
{
    return tsup_unit_roundoff(dtype) * 1e-4;
}

/* Makes a 1-D [c] output view in dtype/layout, prefilled with NaN. */
static tsup_buf make_out(sbn_dtype dtype, int64_t c, tsup_layout layout)
{
    double *fill = malloc(sizeof(double) * (size_t)c);
    tsup_buf b;
    int64_t i;
    for (i = 0; i < c; i++) fill[i] = NAN;
    b = tsup_make(dtype, 1, &c, layout, fill);
    free(fill);
    return b;
}

/* Reads a 1-D output and compares it; checks guard bytes; records a failure. */
static void check_out(const char *desc, const char *name, const tsup_buf *b,
                      const double *want, double abs_tol, double rel_tol)
{
    int64_t c = b->view.shape[0];
    double *got = malloc(sizeof(double) * (size_t)c);
    char what[256];
    snprintf(what, sizeof what, "%s of %s", name, desc);
    tsup_read(&b->view, got);
    if (!tsup_close(what, got, want, c, abs_tol, rel_tol))
        sbn_test_fail(__FILE__, __LINE__, "%s differs from the oracle", what);
    if (!tsup_guard_intact(b))
        sbn_test_fail(__FILE__, __LINE__, "%s wrote outside its view", what);
    free(got);
}

/* Runs sbn_stats on x and compares with the oracle. */
static void check_stats(const char *desc, const sbn_tensor *x, const oracle *o,
                        sbn_dtype odt, tsup_layout olayout, sbn_pool_t *pool)
{
    tsup_buf mean = make_out(odt, o->c, olayout), invstd = make_out(odt, o->c, olayout);
    size_t bytes = 0;
    void *ws;
    sbn_status st, want = o->r == 0 ? SBN_NO_SAMPLES : SBN_OK;
    double u = tsup_unit_roundoff(odt);

    if (sbn_stats_workspace_size(x, &bytes) != SBN_OK)
        sbn_test_fail(__FILE__, __LINE__, "stats_workspace_size failed for %s", desc);
    ws = tsup_ws_alloc(bytes);
    st = sbn_stats(x, EPS, &mean.view, &invstd.view, ws, bytes, pool);
    if (st != want) {
        sbn_test_fail(__FILE__, __LINE__, "sbn_stats(%s) returned %s, expected %s (%s)", desc,
                      sbn_status_name(st), sbn_status_name(want), sbn_last_error());
    } else {
        check_out(desc, "stats mean", &mean, o->mean,
                  sum_err(o->r, o->max_abs) + tiny_tol(odt), 4 * u);
        check_out(desc, "stats invstd", &invstd, o->invstd, tiny_tol(odt),
                  4 * u + sum_err(o->r, o->cond));
    }
    free(ws);
    tsup_free(&mean);
    tsup_free(&invstd);
}

/* Runs sbn_stats_moments on x and compares count, mean and M2/R with the oracle. */
static void check_moments(const char *desc, const sbn_tensor *x, const oracle *o,
                          sbn_pool_t *pool)
{
    sbn_moments *m = malloc(sizeof(sbn_moments) * (size_t)o->c);
    double *mean = malloc(sizeof(double) * (size_t)o->c * 2), *var = mean + o->c;
    double *want_var = malloc(sizeof(double) * (size_t)o->c);
    size_t bytes = 0;
    void *ws;
    int64_t ch;
    sbn_status st;
    char what[256];

    if (sbn_stats_moments_workspace_size(x, &bytes) != SBN_OK)
        sbn_test_fail(__FILE__, __LINE__, "moments_workspace_size failed for %s", desc);
    ws = tsup_ws_alloc(bytes);
    st = sbn_stats_moments(x, m, ws, bytes, pool);
    if (st != SBN_OK) {
        sbn_test_fail(__FILE__, __LINE__, "sbn_stats_moments(%s) returned %s (%s)", desc,
                      sbn_status_name(st), sbn_last_error());
    } else {
        for (ch = 0; ch < o->c; ch++) {
            if (m[ch].count != (double)o->r)
                sbn_test_fail(__FILE__, __LINE__, "moments count[%lld] of %s: got %.17g, want %lld",
                              (long long)ch, desc, m[ch].count, (long long)o->r);
            mean[ch] = m[ch].mean;
            var[ch] = o->r > 0 ? m[ch].m2 / (double)o->r : m[ch].m2;
            want_var[ch] = o->r > 0 ? o->var[ch] : 0.0;
        }
        snprintf(what, sizeof what, "moments mean of %s", desc);
        if (!tsup_close(what, mean, o->mean, o->c, sum_err(o->r, o->max_abs), 4 * ldexp(1.0, -53)))
            sbn_test_fail(__FILE__, __LINE__, "%s differs from the oracle", what);
        snprintf(what, sizeof what, "moments m2/R of %s", desc);
        if (!tsup_close(what, var, want_var, o->c, 1e-300,
                        8 * ldexp(1.0, -53) + sum_err(o->r, o->cond)))
            sbn_test_fail(__FILE__, __LINE__, "%s differs from the oracle", what);
    }
    TSUP_FREE_ALL(ws, m, mean, want_var);
}

/* Runs sbn_reduce on x and compares with the oracle. */
static void check_reduce(const char *desc, const sbn_tensor *x, const oracle *o,
                         sbn_dtype odt, tsup_layout olayout, sbn_pool_t *pool)
{
    tsup_buf sum = make_out(odt, o->c, olayout), sq = make_out(odt, o->c, olayout);
    size_t bytes = 0;
    void *ws;
    sbn_status st;
    double u = tsup_unit_roundoff(odt);

    if (sbn_reduce_workspace_size(x, &bytes) != SBN_OK)
        sbn_test_fail(__FILE__, __LINE__, "reduce_workspace_size failed for %s", desc);
    ws = tsup_ws_alloc(bytes);
    st = sbn_reduce(x, &sum.view, &sq.view, ws, bytes, pool);
    if (st != SBN_OK) {
        sbn_test_fail(__FILE__, __LINE__, "sbn_reduce(%s) returned %s (%s)", desc,
                      sbn_status_name(st), sbn_last_error());
    } else {
        check_out(desc, "reduce sum", &sum, o->sum,
                  sum_err(o->r, o->max_sum_abs) + tiny_tol(odt), 4 * u);
        check_out(desc, "reduce square_sum", &sq, o->sqsum,
                  sum_err(o->r, o->max_sqsum) + tiny_tol(odt), 4 * u);
    }
    free(ws);
    tsup_free(&sum);
    tsup_free(&sq);
}

/* Describes a case for messages: "f16 channels-last (2,3,4,4) -> f32 strided". */
static void describe(char *buf, size_t size, const sbn_tensor *x, tsup_layout layout,
                     sbn_dtype odt, tsup_layout olayout)
{
    int d, len = snprintf(buf, size, "x %s %s (", sbn_dtype_name(x->dtype),
                          tsup_layout_name(layout));
    for (d = 0; d < x->rank && len < (int)size; d++)
        len += snprintf(buf + len, size - (size_t)len, d ? ",%lld" : "%lld",
                        (long long)x->shape[d]);
    if (len < (int)size)
        snprintf(buf + len, size - (size_t)len, ") -> out %s %s", sbn_dtype_name(odt),
                 tsup_layout_name(olayout));
}

/* Random input values with a per-channel offset, row-major logical. */
static double *random_values(int rank, const int64_t *shape, uint64_t seed, double base,
                             double std)
{
    int64_t numel = tsup_numel(rank, shape), inner = 1, i;
    double *v = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
    tsup_rng rng = tsup_rng_seed(seed);
    int d;
    for (d = 2; d < rank; d++) inner *= shape[d];
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / inner) % shape[1];
        v[i] = base + 0.25 * (double)(ch % 5) + std * tsup_normal(&rng);
    }
    return v;
}

/* Builds x, runs all three ops and compares them with the oracle. */
static void run_case(int rank, const int64_t *shape, tsup_layout layout, sbn_dtype xdt,
                     sbn_dtype odt, tsup_layout olayout, uint64_t seed)
{
    double *v = random_values(rank, shape, seed, -0.5, 1.5);
    tsup_buf x = tsup_make(xdt, rank, shape, layout, v);
    oracle o = oracle_build(&x.view);
    char desc[200];
    describe(desc, sizeof desc, &x.view, layout, odt, olayout);
    check_stats(desc, &x.view, &o, odt, olayout, NULL);
    check_moments(desc, &x.view, &o, NULL);
    check_reduce(desc, &x.view, &o, odt, olayout, NULL);
    if (!tsup_guard_intact(&x)) sbn_test_fail(__FILE__, __LINE__, "input of %s modified", desc);
    oracle_free(&o);
    tsup_free(&x);
    free(v);
}

/*
 * Shape (N, C, d2..) of the given rank whose spatial dims multiply to `sp`: the
 * prime factors of sp are dealt round-robin over the spatial dims. N is 2 for
 * small sp, 5 for sp = 1000 with C <= 3 (R = 5000: several reduction chunks),
 * else 1. Rank 2 has no spatial dims, so N = sp (times 5) there.
 */
static void make_shape(int rank, int64_t c, int64_t sp, int64_t *shape)
{
    int nsp = rank - 2, k = 0, d;
    int64_t p, rest = sp, batch = sp <= 17 ? 2 : c <= 3 ? 5 : 1; /* R > SBN_CHUNK for few C */
    shape[1] = c;
    if (rank == 2) {
        shape[0] = sp * (batch == 5 ? 5 : 1);
        return;
    }
    shape[0] = batch;
    for (d = 2; d < rank; d++) shape[d] = 1;
    for (p = 2; rest > 1; p++) {
        while (rest % p == 0) {
            shape[2 + (k++ % nsp)] *= p;
            rest /= p;
        }
    }
}

/* The full matrix for one rank; output dtype and layout cycle over the cases. */
static void run_matrix(int rank)
{
    static const int64_t cs[] = {1, 3, 64};
    static const int64_t sps[] = {1, 7, 16, 17, 1000};
    int ic, is, il, id, index = 0;
    for (ic = 0; ic < 3; ic++) {
        for (is = 0; is < 5; is++) {
            int64_t shape[SBN_MAX_RANK];
            make_shape(rank, cs[ic], sps[is], shape);
            for (il = 0; il < 3; il++) {
                for (id = 0; id < 4; id++, index++) {
                    sbn_dtype odt = (index % 2) ? SBN_F64 : SBN_F32;
                    tsup_layout olayout = (index / 2) % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
                    run_case(rank, shape, k_layouts[il], k_in_dtypes[id], odt, olayout,
                             (uint64_t)(rank * 1000 + index));
                }
            }
        }
    }
}

static void test_matrix_rank2(void) { run_matrix(2); }
static void test_matrix_rank3(void) { run_matrix(3); }
static void test_matrix_rank4(void) { run_matrix(4); }
static void test_matrix_rank5(void) { run_matrix(5); }
static void test_matrix_rank8(void) { run_matrix(8); }

/* f16 and bf16 outputs (contiguous and strided) on a few inputs. */
static void test_half_outputs(void)
{
    static const int64_t shape[] = {2, 5, 3, 7};
    run_case(4, shape, TSUP_CHANNELS_FIRST, SBN_F32, SBN_F16, TSUP_CHANNELS_FIRST, 1);
    run_case(4, shape, TSUP_CHANNELS_LAST, SBN_F16, SBN_F16, TSUP_STRIDED, 2);
    run_case(4, shape, TSUP_STRIDED, SBN_BF16, SBN_BF16, TSUP_CHANNELS_FIRST, 3);
}

/* Empty inputs: stats -> mean 0, invstd NaN, SBN_NO_SAMPLES; moments -> zeros; reduce -> 0. */
static void test_empty(void)
{
    static const int64_t shapes[][4] = {{0, 3, 0, 0}, {0, 3, 5, 0}, {2, 3, 0, 4}, {0, 1, 7, 2}};
    static const int ranks[] = {2, 3, 4, 4};
    int is, il;
    for (is = 0; is < 4; is++) {
        for (il = 0; il < 3; il++) {
            sbn_dtype xdt = k_in_dtypes[(is + il) % 4];
            tsup_buf x = tsup_make(xdt, ranks[is], shapes[is], k_layouts[il], NULL);
            oracle o = oracle_build(&x.view);
            char desc[200];
            describe(desc, sizeof desc, &x.view, k_layouts[il], SBN_F32, k_layouts[il % 2 * 2]);
            if (o.r != 0) sbn_test_fail(__FILE__, __LINE__, "test bug: %s not empty", desc);
            /* the oracle of an empty channel: mean 0, invstd NaN, sums 0 */
            check_stats(desc, &x.view, &o, SBN_F32, k_layouts[il % 2 * 2], NULL);
            check_moments(desc, &x.view, &o, NULL);
            check_reduce(desc, &x.view, &o, SBN_F64, k_layouts[il % 2 * 2], NULL);
            oracle_free(&o);
            tsup_free(&x);
        }
    }
}

/* Relative error of `got` against `want`. */
static double rel_err(double got, double want)
{
    return fabs(got - want) / fabs(want);
}

/* Moments of an (8, 16, 64, 64) fp32 input of the given mean/std against the oracle;
 * with `outlier`, the first element of every chunk (the shift of the one-pass chunk
 * moments, numerics.md) sits 1000 std above the mean: the worst case for the shift. */
static void check_conditioning(double mean, double std, double var_tol, int outlier)
{
    static const int64_t shape[] = {8, 16, 64, 64};
    int64_t numel = tsup_numel(4, shape), ch;
    double *v = malloc(sizeof(double) * (size_t)numel);
    tsup_rng rng = tsup_rng_seed(77);
    tsup_buf x;
    oracle o;
    sbn_moments m[16];
    size_t bytes = 0;
    void *ws;
    double worst = 0.0;

    tsup_fill_normal(&rng, v, numel, mean, std, SBN_F32);
    if (outlier) { /* channel-first contiguous: channel c, index r at (r / 4096) * 16 * 4096 + c * 4096 + r % 4096 */
        int64_t r, c;
        for (c = 0; c < 16; c++)
            for (r = 0; r < 32768; r += 2048) /* SBN_CHUNK */
                v[(r / 4096) * 16 * 4096 + c * 4096 + r % 4096] = (double)(float)(mean + 1000.0 * std);
    }
    x = tsup_make(SBN_F32, 4, shape, TSUP_CHANNELS_FIRST, v);
    o = oracle_build(&x.view);
    CHECK_OK(sbn_stats_moments_workspace_size(&x.view, &bytes));
    ws = tsup_ws_alloc(bytes);
    CHECK_OK(sbn_stats_moments(&x.view, m, ws, bytes, NULL));
    for (ch = 0; ch < 16; ch++) {
        double got = m[ch].m2 / m[ch].count, e = rel_err(got, o.var[ch]);
        if (e > worst) worst = e;
        if (e > var_tol || fabs(m[ch].mean - o.mean[ch]) > 1e-12 * (fabs(mean) + 1000.0 * std) ||
            m[ch].count != 32768.0)
            sbn_test_fail(__FILE__, __LINE__,
                          "mean %g std %g channel %lld: count %.17g, mean %.17g (want %.17g), "
                          "var %.17g (want %.17g), rel err %.3g > %.3g",
                          mean, std, (long long)ch, m[ch].count, m[ch].mean, o.mean[ch], got,
                          o.var[ch], e, var_tol);
    }
    printf("    measured: mean %g, std %g, n 32768%s: worst variance relative error %.3g (limit %.3g)\n",
           mean, std, outlier ? ", chunk-leading outliers" : "", worst, var_tol);
    free(ws);
    oracle_free(&o);
    tsup_free(&x);
    free(v);
}

static void test_conditioning_large_mean(void) { check_conditioning(1e4, 1e-2, 1e-9, 0); }
static void test_conditioning_unit(void) { check_conditioning(0.0, 1.0, 1e-12, 0); }
static void test_conditioning_shift_outlier(void) { check_conditioning(1e4, 1e-2, 1e-9, 1); }

/* CANN aclnnBatchNormStats doc example: [[1,2,3],[4,5,6]], eps 1e-5. */
static void test_cann_example(void)
{
    static const double xv[] = {1, 2, 3, 4, 5, 6};
    static const double want_mean[] = {2.5, 3.5, 4.5};
    static const int64_t shape[] = {2, 3};
    const double doc_invstd = 0.666665185;
    const double formula_invstd = 1.0 / sqrt(2.25 + 1e-5); /* var = ((1.5)^2 * 2) / 2 */
    tsup_buf x = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, xv);
    tsup_buf mean = make_out(SBN_F32, 3, TSUP_CHANNELS_FIRST);
    tsup_buf invstd = make_out(SBN_F32, 3, TSUP_CHANNELS_FIRST);
    double got_mean[3], got_invstd[3], want_doc[3], want_formula[3];
    size_t bytes = 0;
    void *ws;
    int i;
    for (i = 0; i < 3; i++) {
        want_doc[i] = doc_invstd;
        want_formula[i] = formula_invstd;
    }
    CHECK_OK(sbn_stats_workspace_size(&x.view, &bytes));
    ws = tsup_ws_alloc(bytes);
    CHECK_OK(sbn_stats(&x.view, 1e-5, &mean.view, &invstd.view, ws, bytes, NULL));
    tsup_read(&mean.view, got_mean);
    tsup_read(&invstd.view, got_invstd);
    CHECK(tsup_close("cann mean", got_mean, want_mean, 3, 0.0, 0.0));
    CHECK(tsup_close("cann invstd vs doc", got_invstd, want_doc, 3, 0.0, 1e-6));
    CHECK(tsup_close("cann invstd vs formula", got_invstd, want_formula, 3, 0.0,
                     2 * tsup_unit_roundoff(SBN_F32)));
    free(ws);
    TSUP_BUF_FREE(&x, &mean, &invstd);
}

/* A constant channel: invstd = 1/sqrt(eps), and 0 for eps = 0 (docs/numerics.md). */
static void test_constant_channel(void)
{
    static const int64_t shape[] = {4, 2, 5};
    static const double eps[] = {1e-5, 0.0};
    double v[40], want_mean[2] = {0.75, -3.0}, want_invstd[2], got[2];
    int i, ie;
    for (i = 0; i < 40; i++) v[i] = want_mean[(i / 5) % 2];
    for (ie = 0; ie < 2; ie++) {
        tsup_buf x = tsup_make(SBN_F64, 3, shape, TSUP_CHANNELS_LAST, v);
        tsup_buf mean = make_out(SBN_F64, 2, TSUP_CHANNELS_FIRST);
        tsup_buf invstd = make_out(SBN_F64, 2, TSUP_STRIDED);
        size_t bytes = 0;
        void *ws;
        want_invstd[0] = want_invstd[1] = eps[ie] > 0 ? 1.0 / sqrt(eps[ie]) : 0.0;
        CHECK_OK(sbn_stats_workspace_size(&x.view, &bytes));
        ws = tsup_ws_alloc(bytes);
        CHECK_OK(sbn_stats(&x.view, eps[ie], &mean.view, &invstd.view, ws, bytes, NULL));
        tsup_read(&mean.view, got);
        CHECK(tsup_close("constant mean", got, want_mean, 2, 0.0, 0.0));
        tsup_read(&invstd.view, got);
        CHECK(tsup_close("constant invstd", got, want_invstd, 2, 0.0, 4 * ldexp(1.0, -53)));
        free(ws);
        TSUP_BUF_FREE(&x, &mean, &invstd);
    }
}

/* Results of the three ops on x with a pool, as raw bytes. */
typedef struct op_bytes {
    double mean[5], invstd[5], sum[5], sqsum[5];
    sbn_moments moments[5];
} op_bytes;

static sbn_status run_all(const sbn_tensor *x, sbn_pool_t *pool, op_bytes *out)
{
    int64_t c = x->shape[1];
    sbn_tensor mean = sbn_tensor_1d(out->mean, SBN_F64, c);
    sbn_tensor invstd = sbn_tensor_1d(out->invstd, SBN_F64, c);
    sbn_tensor sum = sbn_tensor_1d(out->sum, SBN_F64, c);
    sbn_tensor sq = sbn_tensor_1d(out->sqsum, SBN_F64, c);
    size_t b1 = 0, b2 = 0, b3 = 0, bytes;
    void *ws;
    sbn_status st;
    memset(out, 0, sizeof *out);
    if ((st = sbn_stats_workspace_size(x, &b1)) != SBN_OK) return st;
    if ((st = sbn_stats_moments_workspace_size(x, &b2)) != SBN_OK) return st;
    if ((st = sbn_reduce_workspace_size(x, &b3)) != SBN_OK) return st;
    bytes = b1 > b2 ? b1 : b2;
    bytes = bytes > b3 ? bytes : b3;
    ws = tsup_ws_alloc(bytes);
    st = sbn_stats(x, EPS, &mean, &invstd, ws, b1, pool);
    if (st == SBN_OK) st = sbn_stats_moments(x, out->moments, ws, b2, pool);
    if (st == SBN_OK) st = sbn_reduce(x, &sum, &sq, ws, b3, pool);
    free(ws);
    return st;
}

/*
 * Bitwise equality of every output for pools of 1, 2, 3 threads vs. no pool, and
 * (docs/numerics.md) of every layout vs. channels-first.
 */
static void test_threads_bitwise(void)
{
    static const int64_t shape[] = {3, 5, 4000};
    double *v = random_values(3, shape, 99, 3.0, 2.0);
    op_bytes first;
    int il, t;
    for (il = 0; il < 3; il++) {
        tsup_buf x = tsup_make(SBN_F32, 3, shape, k_layouts[il], v);
        op_bytes serial, threaded;
        CHECK_OK(run_all(&x.view, NULL, &serial));
        if (il == 0) first = serial;
        CHECK_MSG(tsup_same_bytes(tsup_layout_name(k_layouts[il]), &first, &serial, sizeof first),
                  "%s input gives other bits than channels-first", tsup_layout_name(k_layouts[il]));
        for (t = 1; t <= 3; t++) {
            sbn_pool_t *pool = NULL;
            char what[96];
            CHECK_OK(sbn_pool_create(t, &pool));
            CHECK(sbn_pool_threads(pool) == t);
            CHECK_OK(run_all(&x.view, pool, &threaded));
            sbn_pool_destroy(pool);
            snprintf(what, sizeof what, "%s input, %d threads vs serial",
                     tsup_layout_name(k_layouts[il]), t);
            CHECK_MSG(tsup_same_bytes(what, &serial, &threaded, sizeof serial),
                      "outputs of %s differ", what);
        }
        tsup_free(&x);
    }
    free(v);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_matrix_rank2),
    SBN_TEST_CASE(test_matrix_rank3),
    SBN_TEST_CASE(test_matrix_rank4),
    SBN_TEST_CASE(test_matrix_rank5),
    SBN_TEST_CASE(test_matrix_rank8),
    SBN_TEST_CASE(test_half_outputs),
    SBN_TEST_CASE(test_empty),
    SBN_TEST_CASE(test_conditioning_large_mean),
    SBN_TEST_CASE(test_conditioning_unit),
    SBN_TEST_CASE(test_conditioning_shift_outlier),
    SBN_TEST_CASE(test_cann_example),
    SBN_TEST_CASE(test_constant_channel),
    SBN_TEST_CASE(test_threads_bitwise),
};

SBN_TEST_MAIN(k_cases)
