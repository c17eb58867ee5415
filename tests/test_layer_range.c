/*
 * test_layer_range.c - the SyncBN layer on f64 batches at the edges of the double
 * range and of conditioning (issue 25, item 3): means past 1.34e154, whose squares
 * the layer's finish M2 = M + Q - 2gP + Ng^2 used to overflow (Inf - Inf: NaN y,
 * save_invstd and running_var with SBN_OK), sums of means past DBL_MAX, squared
 * deviations past DBL_MAX, a constant channel near DBL_MAX, and means 1e12 to 1e14
 * times the spread, where that finish cancels away every digit unless the layer
 * centres its sums. A global batch x (12, 2, 3), channel 0 one of the patterns below
 * and channel 1 N(0.5, 1), runs through worlds of 1, 2 and 3 ranks (uneven, one rank
 * empty) in the default and the reproducible mode, eps 0 so that invstd shows the
 * variance. Oracle, per channel, in double on x * 2^-k (k from max|x|): the mean by
 * Neumaier's compensated sum, M2 by the corrected two-pass sum((x - mean)^2) -
 * (sum(x - mean))^2 / R, scaled back. Checked on every rank: save_mean within 4 ulp +
 * 4 R 2^-53 max|x - mean| of the oracle; M2 (through save_invstd and running_var)
 * within 1e-9 + 8 ulp(mean) / std relative (the units' means are doubles), or +Inf
 * (invstd 0, y = bias) exactly when the oracle's M2 passes DBL_MAX; y = (x - save_mean) invstd w + b within 1e-9 of its scale;
 * global_count. The reproducible worlds must equal W = 1 bit for bit. Patterns:
 * "2e154 + N(0, 1e148)" is the issue's; "1000 + N(0, 1)" is the ordinary control.
 * Then 1536 constant channels of random huge values, whose variance must be exactly
 * 0 (the finish without a centre returned +Inf or noise for about one in ten).
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/support.h"
#include "support/world.h"
#include "syncbn/layer.h"

#define N 12
#define C 2
#define S 3
#define R (N * S)
#define TIMEOUT 30.0
#define W0 1.5
#define B0 0.25
#define RM0 0.5
#define RV0 2.0

typedef struct pattern {
    const char *name;
    double mean, std; /* channel 0: mean + std * N(0, 1), or by sample when std < 0 */
} pattern;

static const pattern k_patterns[] = {
    {"2e154 + N(0, 1e148)", 2e154, 1e148},      /* the issue: var about 1e296 */
    {"1e300 + N(0, 1e294)", 1e300, 1e294},      /* squares of the mean far past DBL_MAX */
    {"-1e307 + N(0, 1e301)", -1e307, 1e301},    /* the sum of the units' means past it too */
    {"1e160 + N(0, 1e148)", 1e160, 1e148},      /* mean/std 1e12: cancels without a centre */
    {"1e8 + N(0, 1e-6)", 1e8, 1e-6},            /* mean/std 1e14, ordinary magnitudes */
    {"1.5e308 constant", 1.5e308, 0.0},         /* M2 = 0 */
    {"+-1e200 by sample", 1e200, -1.0},         /* squared deviations past DBL_MAX: M2 +Inf */
    {"1000 + N(0, 1)", 1000.0, 1.0},            /* the ordinary control */
};
#define NPAT ((int)(sizeof k_patterns / sizeof k_patterns[0]))

/* Worlds: sample counts per rank. */
typedef struct world_split {
    int world;
    int64_t n[3];
} world_split;
static const world_split k_worlds[] = {{1, {N, 0, 0}}, {2, {5, 7, 0}}, {3, {4, 0, 8}}};
#define NWORLD ((int)(sizeof k_worlds / sizeof k_worlds[0]))

/* One run: the global x and every output, per rank where per-rank. */
typedef struct run {
    const world_split *ws;
    int reproducible;
    double x[N * C * S], y[N * C * S];
    double sm[3][C], si[3][C], rm[3][C], rv[3][C];
    int64_t count[3];
    sbn_status status[3];
} run;

static void make_x(int pat, double *x)
{
    const pattern *p = &k_patterns[pat];
    tsup_rng rng = tsup_rng_seed(2503 + (uint64_t)pat);
    int64_t i, c, q;
    for (i = 0; i < N; i++)
        for (c = 0; c < C; c++)
            for (q = 0; q < S; q++) {
                double z = tsup_normal(&rng);
                double v = c == 1 ? 0.5 + z : p->std < 0 ? (i % 2 ? p->mean : -p->mean)
                                                       : p->mean + p->std * z;
                x[(i * C + c) * S + q] = v;
            }
}

static void rank_fwd(tsup_rank *cx)
{
    run *rn = cx->shared;
    int64_t off = 0, shape[3] = {0, C, S}, i;
    double w[C], b[C];
    sbn_syncbn_config cfg;
    sbn_tensor xv, yv, wv, bv, rmv, rvv, smv, siv;
    int64_t nbt = 0;
    size_t bytes;
    void *ws;
    int r;
    for (r = 0; r < cx->rank; r++) off += rn->ws->n[r];
    shape[0] = rn->ws->n[cx->rank];
    for (i = 0; i < C; i++) {
        w[i] = W0, b[i] = B0;
        rn->rm[cx->rank][i] = RM0, rn->rv[cx->rank][i] = RV0;
    }
    xv = sbn_tensor_contiguous(rn->x + off * C * S, SBN_F64, 3, shape);
    yv = sbn_tensor_contiguous(rn->y + off * C * S, SBN_F64, 3, shape);
    wv = sbn_tensor_1d(w, SBN_F64, C), bv = sbn_tensor_1d(b, SBN_F64, C);
    rmv = sbn_tensor_1d(rn->rm[cx->rank], SBN_F64, C);
    rvv = sbn_tensor_1d(rn->rv[cx->rank], SBN_F64, C);
    smv = sbn_tensor_1d(rn->sm[cx->rank], SBN_F64, C);
    siv = sbn_tensor_1d(rn->si[cx->rank], SBN_F64, C);
    sbn_syncbn_config_default(&cfg);
    cfg.eps = 0.0;
    cfg.reproducible = rn->reproducible;
    RCHECK(cx, sbn_syncbn_workspace_size(&xv, &bytes) == SBN_OK, "workspace size");
    ws = malloc(bytes);
    rn->status[cx->rank] = sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &xv,
                                              .weight = &wv, .bias = &bv, .running_mean = &rmv,
                                              .running_var = &rvv, .num_batches_tracked = &nbt,
                                              .y = &yv, .save_mean = &smv, .save_invstd = &siv,
                                              .global_count = &rn->count[cx->rank]}, ws, bytes,
                                              NULL);
    free(ws);
}

/* Neumaier's compensated sum of x * 2^-k over channel c. */
static double scaled_sum(const double *x, int c, int k, double shift)
{
    double s = 0.0, comp = 0.0;
    int64_t i, q;
    for (i = 0; i < N; i++)
        for (q = 0; q < S; q++) {
            double v = ldexp(x[(i * C + c) * S + q], -k) - shift, t = s + v;
            comp += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
            s = t;
        }
    return s + comp;
}

typedef struct oracle {
    double mean, m2s, maxabs, maxdev;
    int k; /* M2 = m2s * 2^(2k) */
} oracle;

static oracle channel_oracle(const double *x, int c)
{
    oracle o = {0, 0, 0, 0, 0};
    double ms, sd;
    int64_t i, q;
    for (i = 0; i < N; i++)
        for (q = 0; q < S; q++)
            if (fabs(x[(i * C + c) * S + q]) > o.maxabs) o.maxabs = fabs(x[(i * C + c) * S + q]);
    o.k = ilogb(o.maxabs) > 400 ? ilogb(o.maxabs) - 400 : 0;
    ms = scaled_sum(x, c, o.k, 0.0) / R;
    sd = scaled_sum(x, c, o.k, ms); /* sum(x - mean), for the correction */
    for (i = 0; i < N; i++)
        for (q = 0; q < S; q++) {
            double d = ldexp(x[(i * C + c) * S + q], -o.k) - ms;
            o.m2s += d * d;
            if (fabs(d) > o.maxdev) o.maxdev = fabs(d);
        }
    o.m2s -= sd * sd / R;
    if (o.m2s < 0) o.m2s = 0;
    o.mean = ldexp(ms, o.k);
    o.maxdev = ldexp(o.maxdev, o.k);
    return o;
}

/* Rank r's outputs against the oracle of each channel. */
static void check_rank(const run *rn, int r, const char *what)
{
    int64_t off = 0, i, q;
    int c, k;
    for (k = 0; k < r; k++) off += rn->ws->n[k];
    CHECK_MSG(rn->status[r] == SBN_OK, "%s, rank %d: %s", what, r, sbn_status_name(rn->status[r]));
    CHECK_MSG(rn->count[r] == R, "%s, rank %d: global_count %lld", what, r,
              (long long)rn->count[r]);
    for (c = 0; c < C; c++) {
        oracle o = channel_oracle(rn->x, c);
        double limit = ldexp(DBL_MAX, -2 * o.k), mean = rn->sm[r][c], inv = rn->si[r][c];
        double ulp = o.mean != 0.0 ? ldexp(1.0, ilogb(o.mean) - 52) : 0.0;
        double tol = 4.0 * ulp + 4.0 * R * ldexp(o.maxdev, -53);
        int over = o.m2s > limit;
        CHECK_MSG(fabs(mean - o.mean) <= tol, "%s, rank %d, channel %d: save_mean %.17g, "
                  "oracle %.17g (tolerance %g)", what, r, c, mean, o.mean, tol);
        CHECK_MSG(fabs(rn->rm[r][c] - (0.9 * RM0 + 0.1 * mean)) <= 1e-15 * fabs(mean) + 1e-15,
                  "%s, rank %d, channel %d: running_mean %.17g", what, r, c, rn->rm[r][c]);
        if (over) {
            CHECK_MSG(inv == 0.0 && rn->rv[r][c] == INFINITY, "%s, rank %d, channel %d: "
                      "save_invstd %g, running_var %g; the oracle's M2 passes DBL_MAX: expected "
                      "0 and +Inf", what, r, c, inv, rn->rv[r][c]);
        } else {
            /* the units' means are doubles: the part of M2 between units carries their
             * rounding, up to about 2 ulp(mean) / std relative (docs/numerics.md) */
            double m2 = ldexp(o.m2s, 2 * o.k), want_inv = m2 > 0 ? 1.0 / sqrt(m2 / R) : 0.0;
            double want_rv = 0.9 * RV0 + 0.1 * (m2 / (R - 1));
            double rel = 1e-9 + (m2 > 0 ? 4.0 * ulp * want_inv : 0.0);
            CHECK_MSG(fabs(inv - want_inv) <= rel * want_inv, "%s, rank %d, channel %d: "
                      "save_invstd %.17g, oracle %.17g (M2 %.17g, tolerance %.3g relative)",
                      what, r, c, inv, want_inv, m2, rel);
            CHECK_MSG(fabs(rn->rv[r][c] - want_rv) <= 2.0 * rel * want_rv, "%s, rank %d, channel "
                      "%d: running_var %.17g, oracle %.17g", what, r, c, rn->rv[r][c], want_rv);
        }
        for (i = off; i < off + rn->ws->n[r]; i++)
            for (q = 0; q < S; q++) {
                double xv = rn->x[(i * C + c) * S + q], yv = rn->y[(i * C + c) * S + q];
                double d = xv - mean, want = d * inv * W0 + B0;
                double scale = isfinite(d) ? fabs(d * inv * W0) + B0 : 1.0;
                CHECK_MSG(isfinite(d) ? fabs(yv - want) <= 1e-9 * scale : isnan(yv),
                          "%s, rank %d: y[%lld, %d, %lld] = %.17g, expected %.17g", what, r,
                          (long long)i, c, (long long)q, yv, want);
            }
    }
}

static void run_world(run *rn, int pat, int wi, int reproducible)
{
    memset(rn, 0, sizeof *rn);
    rn->ws = &k_worlds[wi];
    rn->reproducible = reproducible;
    make_x(pat, rn->x);
    tsup_run_world(rn->ws->world, TIMEOUT, rank_fwd, rn);
}

static void describe(char *buf, size_t size, int pat, int wi, int reproducible)
{
    const world_split *w = &k_worlds[wi];
    snprintf(buf, size, "%s, %s mode, W = %d (%lld/%lld/%lld)", k_patterns[pat].name,
             reproducible ? "reproducible" : "default", w->world, (long long)w->n[0],
             (long long)w->n[1], (long long)w->n[2]);
}

static void means_past_the_range(void)
{
    static run rn, ref;
    char what[200];
    int pat, wi, repro, r, cases = 0;
    for (pat = 0; pat < NPAT; pat++)
        for (repro = 0; repro < 2; repro++)
            for (wi = 0; wi < NWORLD; wi++) {
                describe(what, sizeof what, pat, wi, repro);
                run_world(&rn, pat, wi, repro);
                RETURN_IF_FAILED();
                for (r = 0; r < rn.ws->world; r++) {
                    check_rank(&rn, r, what);
                    RETURN_IF_FAILED();
                }
                if (wi == 0) ref = rn;
                if (repro && wi > 0) { /* the same bits as W = 1 */
                    CHECK(tsup_same_bytes(what, rn.y, ref.y, sizeof rn.y));
                    for (r = 0; r < rn.ws->world; r++) {
                        CHECK(tsup_same_bytes(what, rn.sm[r], ref.sm[0], sizeof rn.sm[r]));
                        CHECK(tsup_same_bytes(what, rn.si[r], ref.si[0], sizeof rn.si[r]));
                        CHECK(tsup_same_bytes(what, rn.rm[r], ref.rm[0], sizeof rn.rm[r]));
                        CHECK(tsup_same_bytes(what, rn.rv[r], ref.rv[0], sizeof rn.rv[r]));
                    }
                }
                cases++;
            }
    printf("    %d worlds (%d patterns x 2 modes x %d splits)\n", cases, NPAT, NWORLD);
}

/* ---- constant channels of huge values: M2 exactly 0 ---- */

#define CC 64 /* channels */
#define CS 4  /* elements per (sample, channel) */
#define CN 29 /* samples */

typedef struct const_run {
    const int64_t *split;
    int world, reproducible;
    double x[CN * CC * CS], y[CN * CC * CS], m[CC];
    double sm[3][CC], si[3][CC], rv[3][CC];
    sbn_status status[3];
} const_run;

static void rank_const(tsup_rank *cx)
{
    const_run *cr = cx->shared;
    int64_t off = 0, shape[3] = {0, CC, CS}, nbt = 0, count, i;
    double rm[CC];
    sbn_syncbn_config cfg;
    sbn_tensor xv, yv, rmv, rvv, smv, siv;
    size_t bytes;
    void *ws;
    int r;
    for (r = 0; r < cx->rank; r++) off += cr->split[r];
    shape[0] = cr->split[cx->rank];
    for (i = 0; i < CC; i++) rm[i] = RM0, cr->rv[cx->rank][i] = RV0;
    xv = sbn_tensor_contiguous(cr->x + off * CC * CS, SBN_F64, 3, shape);
    yv = sbn_tensor_contiguous(cr->y + off * CC * CS, SBN_F64, 3, shape);
    rmv = sbn_tensor_1d(rm, SBN_F64, CC), rvv = sbn_tensor_1d(cr->rv[cx->rank], SBN_F64, CC);
    smv = sbn_tensor_1d(cr->sm[cx->rank], SBN_F64, CC);
    siv = sbn_tensor_1d(cr->si[cx->rank], SBN_F64, CC);
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = cr->reproducible;
    RCHECK(cx, sbn_syncbn_workspace_size(&xv, &bytes) == SBN_OK, "workspace size");
    ws = malloc(bytes);
    cr->status[cx->rank] = sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &xv,
                                              .running_mean = &rmv, .running_var = &rvv,
                                              .num_batches_tracked = &nbt, .y = &yv,
                                              .save_mean = &smv, .save_invstd = &siv,
                                              .global_count = &count}, ws, bytes, NULL);
    free(ws);
}

/*
 * Channels holding one huge value m (|m| in 2^500 .. 2^1020, random significand):
 * without a centre, M + Q - 2gP + Ng^2 came out as N (m - g)^2 or rounding noise of
 * N m^2 2^-104 for about one channel in ten, i.e. +Inf or a huge variance, where the
 * variance is exactly 0: save_mean must be m, save_invstd 1/sqrt(eps), running_var
 * 0.9 * 2 + 0.1 * 0 and y 0 (no weight, no bias), bit for bit.
 */
static void constant_huge_channels(void)
{
    static const int64_t splits[3][3] = {{CN, 0, 0}, {11, 18, 0}, {9, 0, 20}};
    static const_run cr;
    int round, k, r, c, cases = 0;
    tsup_rng rng = tsup_rng_seed(2577);
    for (round = 0; round < 4; round++)
        for (k = 0; k < 6; k++) {
            int64_t i, q;
            memset(&cr, 0, sizeof cr);
            cr.split = splits[k % 3];
            cr.world = k % 3 + 1;
            cr.reproducible = k / 3;
            for (c = 0; c < CC; c++) {
                double mant = 1.0 + tsup_uniform(&rng);
                cr.m[c] = ldexp(tsup_uniform(&rng) < 0.5 ? -mant : mant,
                                500 + (int)(tsup_uniform(&rng) * 520));
            }
            for (i = 0; i < CN; i++)
                for (c = 0; c < CC; c++)
                    for (q = 0; q < CS; q++) cr.x[(i * CC + c) * CS + q] = cr.m[c];
            if (tsup_run_world(cr.world, TIMEOUT, rank_const, &cr)) return;
            for (r = 0; r < cr.world; r++) {
                CHECK_MSG(cr.status[r] == SBN_OK, "rank %d: %s", r, sbn_status_name(cr.status[r]));
                for (c = 0; c < CC; c++)
                    CHECK_MSG(cr.sm[r][c] == cr.m[c] && cr.si[r][c] == 1.0 / sqrt(1e-5) &&
                                  cr.rv[r][c] == 0.9 * RV0 + 0.1 * 0.0,
                              "%s mode, W = %d, rank %d, channel %d, constant %.17g: save_mean "
                              "%.17g, save_invstd %g, running_var %g; expected the constant, "
                              "%g, %g", cr.reproducible ? "reproducible" : "default", cr.world,
                              r, c, cr.m[c], cr.sm[r][c], cr.si[r][c], cr.rv[r][c],
                              1.0 / sqrt(1e-5), 0.9 * RV0);
            }
            for (i = 0; i < CN * CC * CS; i++)
                CHECK_MSG(cr.y[i] == 0.0, "y[%lld] = %g, expected 0", (long long)i, cr.y[i]);
            cases += CC;
        }
    printf("    %d constant channels, default and reproducible, W = 1, 2, 3\n", cases);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(means_past_the_range),
    SBN_TEST_CASE(constant_huge_channels),
};

SBN_TEST_MAIN(k_cases)
