/*
 * test_moments_range.c - the statistics ops on finite f64 data whose squared
 * deviations pass DBL_MAX (issue 25, item 4). The chunked pass squares x - shift in
 * double, so such data gave M2 = NaN (Inf - Inf) and invstd NaN where
 * docs/numerics.md promises M2 = +Inf and invstd 0 (PyTorch: invstd 0, y = bias),
 * and M2 = Inf where the true M2 still fits. Channel 0 of x (n, 3, s) holds one of
 * five patterns, channels 1 and 2 ordinary data, for R = n * s in {2, 5, 8, 64,
 * 2049}, channels-first (the plane path; short runs for small s), channels-last
 * (the row path) and strided. sbn_stats_moments, sbn_stats (f64 outputs) and
 * sbn_batch_norm (training: y, save_*, running_var) are checked against a scaled
 * two-pass oracle in double (x * 2^-k, mean first, then the squares; M2 scaled back
 * by 2^2k): the mean within 8 R 2^-53 max|x|, M2 +Inf exactly when the oracle's M2
 * passes DBL_MAX, else within 1e-10 relative, invstd 0 and y equal to the bias
 * exactly when M2 is +Inf (NaN where x - mean itself overflows, as in PyTorch). A constant channel of 1e300 must keep M2 = 0 and mean
 * 1e300 (no rescue where nothing overflowed). The ISA case runs every op in a child
 * with SBN_FORCE_SCALAR=1 and requires the same bits as the default kernels.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/support.h"
#include "syncbn/ops.h"

#define C 3
#define MAXR 2049
#define W0 1.5  /* weight of every channel */
#define B0 0.25 /* bias of every channel */
#define RV0 2.0 /* running_var before the step */
#define EPS 1e-5

enum { P_PM, P_OFFSET, P_FITS, P_NEAR_MAX, P_CONST, NPAT };
static const char *const k_pat_names[NPAT] = {
    "+-1e200", "1e200 + {1e200, -5e199}", "1e156 +- 0.9 sqrt(DBL_MAX / R) (M2 fits)",
    "+-0.9 DBL_MAX", "1e300 constant"};

/* Channel 0's value at logical index j of R. */
static double pattern(int pat, int64_t j, int64_t r)
{
    double a = 0.9 * sqrt(DBL_MAX / (double)r);
    switch (pat) {
    case P_PM: return j % 2 ? 1e200 : -1e200;
    case P_OFFSET: return 1e200 + (j % 2 ? 1e200 : -5e199);
    case P_FITS: return 1e156 + (j % 2 ? a : -a);
    case P_NEAR_MAX: return j % 2 ? 0.9 * DBL_MAX : -0.9 * DBL_MAX;
    default: return 1e300;
    }
}

/* Scaled two-pass oracle: mean, and M2 as m2s * 2^(2k) (m2s in range). */
typedef struct oracle {
    double mean, maxabs, m2s;
    int k;
} oracle;

static oracle two_pass(const double *v, int64_t r)
{
    oracle o = {0, 0, 0, 0};
    double sum = 0.0, ms;
    int64_t j;
    for (j = 0; j < r; j++)
        if (fabs(v[j]) > o.maxabs) o.maxabs = fabs(v[j]);
    o.k = o.maxabs > 0 && ilogb(o.maxabs) > 400 ? ilogb(o.maxabs) - 400 : 0;
    for (j = 0; j < r; j++) sum += ldexp(v[j], -o.k);
    ms = sum / (double)r;
    for (j = 0; j < r; j++) {
        double d = ldexp(v[j], -o.k) - ms;
        o.m2s += d * d;
    }
    o.mean = ldexp(ms, o.k);
    return o;
}

/* 1: the oracle's M2 is past DBL_MAX, 0: it fits, -1: too close to tell. */
static int oracle_overflows(const oracle *o)
{
    double limit = ldexp(DBL_MAX, -2 * o->k);
    if (limit == 0.0 || o->m2s > limit * (1 + 1e-9)) return 1;
    return o->m2s < limit * (1 - 1e-9) ? 0 : -1;
}

/* The logical x (n, C, s): channel 0 the pattern, channel 1 N(0.5, 1), channel 2 N(1e4, 1e-2). */
static void make_x(int pat, int64_t n, int64_t s, double *x, double *ch0)
{
    tsup_rng rng = tsup_rng_seed(2500 + (uint64_t)(n * 7 + s));
    int64_t i, c, q;
    for (i = 0; i < n; i++)
        for (c = 0; c < C; c++)
            for (q = 0; q < s; q++) {
                int64_t j = i * s + q;
                double v = c == 0 ? pattern(pat, j, n * s)
                                  : c == 1 ? 0.5 + tsup_normal(&rng) : 1e4 + 1e-2 * tsup_normal(&rng);
                x[(i * C + c) * s + q] = v;
                if (c == 0) ch0[j] = v;
            }
}

/* The outputs of one case, in one array (what the ISA case compares bitwise). */
enum { O_MOM = 0, O_MEAN = 3 * C, O_INV = 4 * C, O_SM = 5 * C, O_SI = 6 * C, O_RV = 7 * C,
       O_Y = 8 * C };
#define OUT_DOUBLES (O_Y + C * MAXR)

/* Runs the three ops on x (n, C, s) in `layout`; 0 when every call returned SBN_OK. */
static int run_ops(const double *xv, int64_t n, int64_t s, tsup_layout layout, double *out)
{
    int64_t shape[3] = {n, C, s};
    double w[C], b[C], rm[C], rv[C];
    tsup_buf x = tsup_make(SBN_F64, 3, shape, layout, xv), y, wt, bt, rmt, rvt, smt, sit, mt, it;
    size_t bytes = 0, more;
    sbn_moments mom[C];
    void *ws;
    int c, bad = 0;
    for (c = 0; c < C; c++) w[c] = W0, b[c] = B0, rm[c] = 0.0, rv[c] = RV0;
    y = tsup_make(SBN_F64, 3, shape, layout, NULL);
    wt = tsup_make_1d(SBN_F64, C, w), bt = tsup_make_1d(SBN_F64, C, b);
    rmt = tsup_make_1d(SBN_F64, C, rm), rvt = tsup_make_1d(SBN_F64, C, rv);
    smt = tsup_make_1d(SBN_F64, C, NULL), sit = tsup_make_1d(SBN_F64, C, NULL);
    mt = tsup_make_1d(SBN_F64, C, NULL), it = tsup_make_1d(SBN_F64, C, NULL);
    sbn_batch_norm_workspace_size(&x.view, &bytes);
    sbn_stats_workspace_size(&x.view, &more);
    if (more > bytes) bytes = more;
    sbn_stats_moments_workspace_size(&x.view, &more);
    if (more > bytes) bytes = more;
    ws = malloc(bytes);
    bad |= sbn_stats_moments(&x.view, mom, ws, bytes, NULL) != SBN_OK;
    bad |= sbn_stats(&x.view, EPS, &mt.view, &it.view, ws, bytes, NULL) != SBN_OK;
    bad |= sbn_batch_norm(&x.view, &wt.view, &bt.view, 1, 0.1, EPS, &rmt.view, &rvt.view,
                          &y.view, &smt.view, &sit.view, ws, bytes, NULL) != SBN_OK;
    for (c = 0; c < C; c++) {
        out[O_MOM + 3 * c] = mom[c].count;
        out[O_MOM + 3 * c + 1] = mom[c].mean;
        out[O_MOM + 3 * c + 2] = mom[c].m2;
        out[O_MEAN + c] = tsup_get1(&mt.view, c);
        out[O_INV + c] = tsup_get1(&it.view, c);
        out[O_SM + c] = tsup_get1(&smt.view, c);
        out[O_SI + c] = tsup_get1(&sit.view, c);
        out[O_RV + c] = tsup_get1(&rvt.view, c);
    }
    tsup_read(&y.view, out + O_Y);
    free(ws);
    tsup_free(&x), tsup_free(&y), tsup_free(&wt), tsup_free(&bt), tsup_free(&rmt);
    tsup_free(&rvt), tsup_free(&smt), tsup_free(&sit), tsup_free(&mt), tsup_free(&it);
    return bad;
}

/* Channel 0's outputs against the oracle; `what` names the case. */
static void check_channel0(const double *out, const double *xv, const double *ch0, int64_t n,
                           int64_t s, int pat, const char *what)
{
    const int64_t r = n * s;
    oracle o = two_pass(ch0, r);
    int over = oracle_overflows(&o);
    double mean_tol = 8.0 * (double)r * ldexp(o.maxabs, -53), m2 = out[O_MOM + 2];
    double means[3] = {out[O_MOM + 1], out[O_MEAN], out[O_SM]};
    int64_t i, q, k;
    for (k = 0; k < 3; k++)
        CHECK_MSG(fabs(means[k] - o.mean) <= mean_tol, "%s: mean #%lld %.17g, oracle %.17g "
                  "(tolerance %g)", what, (long long)k, means[k], o.mean, mean_tol);
    CHECK_MSG(out[O_MOM] == (double)r, "%s: count %g", what, out[O_MOM]);
    if (pat == P_CONST) {
        CHECK_MSG(m2 == 0.0 && out[O_MOM + 1] == 1e300, "%s: M2 %g mean %.17g; expected 0 and "
                  "1e300", what, m2, out[O_MOM + 1]);
        return;
    }
    if (over == 1) {
        CHECK_MSG(m2 == INFINITY, "%s: M2 %g; the oracle's M2 is %.6g * 2^%d, past DBL_MAX: "
                  "expected +Inf", what, m2, o.m2s, 2 * o.k);
        CHECK_MSG(out[O_INV] == 0.0 && out[O_SI] == 0.0 && out[O_RV] == INFINITY,
                  "%s: invstd %g, save_invstd %g, running_var %g; expected 0, 0, +Inf", what,
                  out[O_INV], out[O_SI], out[O_RV]);
        /* y = (x - mean) * 0 + b: the bias, unless x - mean itself overflows (then NaN,
         * as in PyTorch: only +-0.9 DBL_MAX with an uneven split gets there) */
        for (i = 0; i < n; i++)
            for (q = 0; q < s; q++) {
                double yv = out[O_Y + i * C * s + q];
                int wide = !isfinite(xv[i * C * s + q] - out[O_SM]);
                CHECK_MSG(wide ? isnan(yv) : yv == B0, "%s: y[%lld, 0, %lld] = %g; expected %s",
                          what, (long long)i, (long long)q, yv, wide ? "NaN" : "the bias");
            }
    } else if (over == 0) {
        double want = ldexp(o.m2s, 2 * o.k), inv = 1.0 / sqrt(want / (double)r + EPS);
        CHECK_MSG(isfinite(m2) && fabs(m2 - want) <= 1e-10 * want, "%s: M2 %.17g, oracle "
                  "%.17g (finite: it fits)", what, m2, want);
        CHECK_MSG(fabs(out[O_INV] - inv) <= 1e-10 * inv && fabs(out[O_SI] - inv) <= 1e-10 * inv,
                  "%s: invstd %.17g / %.17g, oracle %.17g", what, out[O_INV], out[O_SI], inv);
        for (i = 0; i < n; i++)
            for (q = 0; q < s; q++) {
                double yw = (xv[i * C * s + q] - o.mean) * inv * W0 + B0;
                CHECK_MSG(fabs(out[O_Y + i * C * s + q] - yw) <= 1e-7, "%s: y[%lld, 0, %lld] = "
                          "%.17g, oracle %.17g", what, (long long)i, (long long)q,
                          out[O_Y + i * C * s + q], yw);
            }
    }
}

/* The (n, s) splits of each R: one sample of R, R samples of one, and n * s in between. */
typedef struct split { int64_t n, s; } split;
static const split k_splits[] = {{1, 2},  {2, 1},  {1, 5},  {5, 1},   {2, 4},    {8, 1},
                                 {4, 16}, {64, 1}, {1, 64}, {3, 683}, {2049, 1}, {1, 2049}};
static const tsup_layout k_layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};
#define NSPLIT (sizeof k_splits / sizeof k_splits[0])
#define NLAYOUT (sizeof k_layouts / sizeof k_layouts[0])

static void squares_past_dbl_max(void)
{
    double *x = malloc(C * MAXR * sizeof *x), *ch0 = malloc(MAXR * sizeof *ch0);
    double *out = malloc(OUT_DOUBLES * sizeof *out);
    unsigned si, li;
    int pat, cases = 0;
    char what[200];
    for (si = 0; si < NSPLIT; si++)
        for (li = 0; li < NLAYOUT; li++)
            for (pat = 0; pat < NPAT; pat++) {
                const split *sp = &k_splits[si];
                make_x(pat, sp->n, sp->s, x, ch0);
                snprintf(what, sizeof what, "R %lld as (%lld, %d, %lld) %s, channel 0 %s",
                         (long long)(sp->n * sp->s), (long long)sp->n, C, (long long)sp->s,
                         tsup_layout_name(k_layouts[li]), k_pat_names[pat]);
                CHECK_MSG(run_ops(x, sp->n, sp->s, k_layouts[li], out) == 0, "%s: an op failed "
                          "(%s)", what, sbn_last_error());
                check_channel0(out, x, ch0, sp->n, sp->s, pat, what);
                RETURN_IF_FAILED();
                cases++;
            }
    printf("    %d cases (%zu shapes x %zu layouts x %d patterns) on %s\n", cases, NSPLIT,
           NLAYOUT, NPAT, sbn__kernels()->isa);
    free(x), free(ch0), free(out);
}

/* Every case's outputs with SBN_FORCE_SCALAR=1 (a child) and with the default kernels. */
static void scalar_and_simd_agree(void)
{
    const size_t per = OUT_DOUBLES * sizeof(double), n = NSPLIT * NPAT;
    double *x = malloc(C * MAXR * sizeof *x), *ch0 = malloc(MAXR * sizeof *ch0);
    double *mine = malloc(per), *shared;
    unsigned si, pat;
    int status = 0;
    pid_t pid;
    shared = mmap(NULL, n * per, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED && x && ch0 && mine);
    memset(shared, 0, n * per);
    fflush(stdout);
    fflush(stderr);
    pid = fork(); /* no op has run yet: the child chooses its kernels afresh */
    CHECK(pid >= 0);
    if (pid == 0) {
        int bad = setenv("SBN_FORCE_SCALAR", "1", 1) != 0 ||
                  strcmp(sbn__kernels()->isa, "scalar") != 0;
        for (si = 0; si < NSPLIT && !bad; si++)
            for (pat = 0; pat < NPAT && !bad; pat++) {
                make_x((int)pat, k_splits[si].n, k_splits[si].s, x, ch0);
                memset(mine, 0, per);
                bad = run_ops(x, k_splits[si].n, k_splits[si].s,
                              k_layouts[(si + pat) % NLAYOUT], mine);
                memcpy(shared + (si * NPAT + pat) * OUT_DOUBLES, mine, per);
            }
        _exit(bad ? 3 : 0);
    }
    while (waitpid(pid, &status, 0) < 0) {
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the SBN_FORCE_SCALAR=1 child failed (status %d)", status);
    printf("    forced scalar (child) against %s\n", sbn__kernels()->isa);
    for (si = 0; si < NSPLIT; si++)
        for (pat = 0; pat < NPAT; pat++) {
            char what[160];
            make_x((int)pat, k_splits[si].n, k_splits[si].s, x, ch0);
            memset(mine, 0, per);
            CHECK(run_ops(x, k_splits[si].n, k_splits[si].s, k_layouts[(si + pat) % NLAYOUT],
                          mine) == 0);
            snprintf(what, sizeof what, "(%lld, %d, %lld) %s, %s: default vs forced scalar",
                     (long long)k_splits[si].n, C, (long long)k_splits[si].s,
                     tsup_layout_name(k_layouts[(si + pat) % NLAYOUT]), k_pat_names[pat]);
            CHECK(tsup_same_bytes(what, mine, shared + (si * NPAT + pat) * OUT_DOUBLES, per));
        }
    munmap(shared, n * per);
    free(x), free(ch0), free(mine);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(squares_past_dbl_max),
    SBN_TEST_CASE(scalar_and_simd_agree),
};

SBN_TEST_MAIN(k_cases)
