/*
 * test_gather.c - the cross-rank merges sbn_gather_stats_with_counts,
 * sbn_gather_moments and sbn_gather_stats_from_sums. The central property is the
 * split: a batch cut along N into W = 1..7 uneven parts (some empty), reduced per
 * part by the library's own local ops (sbn_stats / sbn_stats_moments / sbn_reduce)
 * and merged, must give the whole-batch oracle's mean, invstd, running_mean and
 * running_var, for every intermediate dtype, count dtype (f32, f64, i32, i64) and
 * [W, C] layout. Synthetic per-rank statistics then cover the edge rules: no
 * samples (SBN_NO_SAMPLES, running stats bit-unchanged), a single sample
 * (SBN_SINGLE_SAMPLE, running_var unchanged), optional running tensors and
 * outputs, zero-count ranks holding NaN, and the two CANN documentation examples
 * (checked against the published numbers and recomputed with ref_merge).
 * Tolerances come from the intermediate and output dtypes and the data scale.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/optest.h"
#include "syncbn/ops.h"

#define MOMENTUM 0.1
#define EPS 1e-5

typedef enum gather_kind { G_COUNTS = 0, G_MOMENTS = 1, G_SUMS = 2 } gather_kind;
static const char *const k_kind_names[] = {"gather_stats_with_counts", "gather_moments",
                                           "gather_stats_from_sums"};
static const sbn_dtype k_count_dtypes[] = {SBN_F32, SBN_F64, SBN_I32, SBN_I64};
static const tsup_layout k_layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};

/* Which optional arguments a call passes. */
enum { OPT_RM = 1, OPT_RV = 2, OPT_TOTAL = 4, OPT_STATS = 8, OPT_ALL = 15 };

/* Per-rank statistics: count [W], mean and biased var [W*C] (NaN allowed where count is 0). */
typedef struct ranks {
    int64_t w, c;
    double *count, *mean, *var;
} ranks;

static ranks ranks_alloc(int64_t w, int64_t c)
{
    ranks r;
    r.w = w;
    r.c = c;
    r.count = tsup_alloc_fill(w, 0.0);
    r.mean = tsup_alloc_fill(w * c, 0.0);
    r.var = tsup_alloc_fill(w * c, 0.0);
    return r;
}

static void ranks_free(ranks *r)
{
    TSUP_FREE_ALL(r->count, r->mean, r->var);
}

/*
 * The op-specific rows for synthetic ranks: counts -> (mean, invstd), moments ->
 * (mean, M2), sums -> (sum, square sum; 0 for an empty rank, whose sums are 0).
 */
static void ranks_to_rows(gather_kind kind, const ranks *rk, double eps, double *a, double *b)
{
    int64_t j, ch;
    for (j = 0; j < rk->w; j++) {
        for (ch = 0; ch < rk->c; ch++) {
            int64_t i = j * rk->c + ch;
            double n = rk->count[j], m = rk->mean[i], v = rk->var[i];
            if (kind == G_COUNTS) {
                a[i] = m;
                b[i] = 1.0 / sqrt(v + eps);
            } else if (kind == G_MOMENTS) {
                a[i] = m;
                b[i] = n * v;
            } else {
                a[i] = n > 0 ? n * m : 0.0;
                b[i] = n > 0 ? n * (v + m * m) : 0.0;
            }
        }
    }
}

/* The inputs of one gather call. */
typedef struct gather_in {
    gather_kind kind;
    int64_t w, c;
    sbn_dtype mid, count_dtype;
    tsup_layout layout;
    tsup_buf a, b, counts;  /* [W, C], [W, C], [W] for counts and sums */
    sbn_moments *parts;     /* [W * C] for moments */
} gather_in;

static gather_in gin_make(gather_kind kind, const ranks *rk, const double *a, const double *b,
                          sbn_dtype mid, sbn_dtype count_dtype, tsup_layout layout)
{
    gather_in g;
    int64_t shape[2], i;
    memset(&g, 0, sizeof g);
    g.kind = kind;
    g.w = shape[0] = rk->w;
    g.c = shape[1] = rk->c;
    g.mid = kind == G_MOMENTS ? SBN_F64 : mid;
    g.count_dtype = count_dtype;
    g.layout = layout;
    if (kind == G_MOMENTS) {
        g.parts = malloc(sizeof(sbn_moments) * (size_t)(rk->w * rk->c));
        for (i = 0; i < rk->w * rk->c; i++) {
            g.parts[i].count = rk->count[i / rk->c];
            g.parts[i].mean = a[i];
            g.parts[i].m2 = b[i];
        }
        return g;
    }
    g.a = tsup_make(mid, 2, shape, layout, a);
    g.b = tsup_make(mid, 2, shape, layout, b);
    g.counts = tsup_make(count_dtype, 1, &rk->w,
                         layout == TSUP_STRIDED ? TSUP_STRIDED : TSUP_CHANNELS_FIRST, rk->count);
    return g;
}

static void gin_free(gather_in *g)
{
    if (g->kind == G_MOMENTS) {
        free(g->parts);
        return;
    }
    TSUP_BUF_FREE(&g->a, &g->b, &g->counts);
}

static void describe(char *buf, size_t size, const gather_in *g, sbn_dtype out, int opts)
{
    snprintf(buf, size, "%s W=%lld C=%lld mid %s counts %s %s out %s opts %d",
             k_kind_names[g->kind], (long long)g->w, (long long)g->c, sbn_dtype_name(g->mid),
             sbn_dtype_name(g->count_dtype), tsup_layout_name(g->layout), sbn_dtype_name(out),
             opts);
}

static sbn_status run_gather(const gather_in *g, double momentum, double eps, sbn_tensor *rm,
                             sbn_tensor *rv, sbn_moments *total, sbn_tensor *mean,
                             sbn_tensor *invstd)
{
    size_t bytes = 0;
    void *ws;
    sbn_status st;
    switch (g->kind) {
    case G_COUNTS:
        st = sbn_gather_stats_with_counts_workspace_size(&g->a.view, &bytes);
        if (st != SBN_OK) return st;
        ws = tsup_ws_alloc(bytes);
        st = sbn_gather_stats_with_counts(&g->a.view, &g->b.view, &g->counts.view, momentum,
                                          eps, rm, rv, mean, invstd, ws, bytes, NULL);
        free(ws);
        return st;
    case G_MOMENTS:
        return sbn_gather_moments(g->parts, g->w, g->c, momentum, eps, rm, rv, total, mean,
                                  invstd);
    case G_SUMS:
        return sbn_gather_stats_from_sums(&g->a.view, &g->b.view, &g->counts.view, momentum,
                                          eps, rm, rv, mean, invstd);
    }
    return SBN_ERR_INTERNAL;
}

/* Expected results; rm0/rv0 are the running stats before the call. */
typedef struct expect {
    sbn_status status;
    double n;
    double *mean, *var, *invstd, *rm, *rv, *rm0, *rv0;
    double *store;
} expect;

static expect expect_alloc(int64_t c, uint64_t seed)
{
    expect e;
    tsup_rng rng = tsup_rng_seed(seed);
    int64_t ch;
    e.store = tsup_alloc_fill(7 * c, 0.0);
    e.mean = e.store;
    e.var = e.store + c;
    e.invstd = e.store + 2 * c;
    e.rm = e.store + 3 * c;
    e.rv = e.store + 4 * c;
    e.rm0 = e.store + 5 * c;
    e.rv0 = e.store + 6 * c;
    for (ch = 0; ch < c; ch++) {
        e.rm0[ch] = e.rm[ch] = tsup_round(SBN_F16, tsup_normal(&rng));
        e.rv0[ch] = e.rv[ch] = tsup_round(SBN_F16, 0.5 + tsup_uniform(&rng));
    }
    e.status = SBN_OK;
    e.n = 0;
    return e;
}

static sbn_status status_for(double n)
{
    return n == 0 ? SBN_NO_SAMPLES : n == 1 ? SBN_SINGLE_SAMPLE : SBN_OK;
}

/* Expectation by the oracle's merge of the ranks. */
static void expect_merge(expect *e, const ranks *rk, double momentum, double eps)
{
    int64_t ch;
    e->n = ref_merge(rk->mean, rk->var, rk->count, rk->w, rk->c, momentum, e->mean, e->var,
                     e->rm, e->rv);
    for (ch = 0; ch < rk->c; ch++) e->invstd[ch] = e->n > 0 ? 1.0 / sqrt(e->var[ch] + eps) : NAN;
    e->status = status_for(e->n);
}

/* Tolerances: mean/running_mean absolute, var (M2/N) absolute, invstd and output relative. */
typedef struct tols {
    double mean_abs, var_abs, invstd_rel, out_rel;
} tols;

static tols tols_for(gather_kind kind, const ranks *rk, const expect *e, sbn_dtype mid,
                     sbn_dtype out, double eps)
{
    double u = tsup_unit_roundoff(kind == G_MOMENTS ? SBN_F64 : mid);
    double vmax = 0.0, s2 = 0.0, spread = 0.0, vmin = INFINITY;
    int64_t j, ch;
    tols t;
    for (j = 0; j < rk->w; j++) {
        for (ch = 0; ch < rk->c && rk->count[j] > 0; ch++) {
            double m = rk->mean[j * rk->c + ch], v = rk->var[j * rk->c + ch];
            vmax = fmax(vmax, v);
            s2 = fmax(s2, m * m + v);
            spread = fmax(spread, fabs(m - e->mean[ch]) * fabs(m));
        }
    }
    for (ch = 0; ch < rk->c; ch++)
        if (!isnan(e->var[ch])) vmin = fmin(vmin, e->var[ch]);
    t.out_rel = 4 * tsup_unit_roundoff(out);
    t.mean_abs = (8 * u + 1e-13) * sqrt(s2) + 1e-300;
    t.var_abs = 16 * u * (kind == G_COUNTS ? vmax + spread + eps : s2 + eps) + 1e-12 * (s2 + eps);
    t.invstd_rel = (isinf(vmin) ? 0.0 : t.var_abs / (vmin + eps)) + t.out_rel;
    return t;
}

/* Makes a 1-D [c] buffer of dtype from values (NULL: NaN). */
static tsup_buf make_vec(sbn_dtype dtype, int64_t c, const double *values)
{
    double *fill = tsup_alloc_fill(c, 0.0);
    tsup_buf b;
    int64_t i;
    for (i = 0; i < c; i++) fill[i] = values ? values[i] : NAN;
    b = tsup_make(dtype, 1, &c, c % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST, fill);
    free(fill);
    return b;
}

/* Compares a 1-D output with `want`, and its guard bytes. */
static void check_vec(const char *desc, const char *name, const tsup_buf *b, const double *want,
                      double abs_tol, double rel_tol)
{
    int64_t c = b->view.shape[0];
    double *got = tsup_alloc_fill(c, 0.0);
    char what[300];
    snprintf(what, sizeof what, "%s of %s", name, desc);
    tsup_read(&b->view, got);
    if (!tsup_close(what, got, want, c, abs_tol, rel_tol))
        sbn_test_fail(__FILE__, __LINE__, "%s differs from the expectation", what);
    if (!tsup_guard_intact(b)) sbn_test_fail(__FILE__, __LINE__, "%s wrote outside its view", what);
    free(got);
}

/* The merged moments `total` against the expectation. */
static void check_total(const char *desc, const sbn_moments *total, const expect *e, int64_t c,
                        const tols *t)
{
    double *mean = tsup_alloc_fill(c, 0.0), *var = tsup_alloc_fill(c, 0.0);
    int64_t ch;
    char what[300];
    for (ch = 0; ch < c; ch++) {
        if (total[ch].count != e->n)
            sbn_test_fail(__FILE__, __LINE__, "total[%lld].count of %s: got %.17g, want %.17g",
                          (long long)ch, desc, total[ch].count, e->n);
        mean[ch] = total[ch].mean;
        var[ch] = total[ch].m2 / e->n;
    }
    snprintf(what, sizeof what, "total.mean of %s", desc);
    if (!tsup_close(what, mean, e->mean, c, t->mean_abs, 4 * ldexp(1.0, -53)))
        sbn_test_fail(__FILE__, __LINE__, "%s differs", what);
    snprintf(what, sizeof what, "total.m2/N of %s", desc);
    if (!tsup_close(what, var, e->var, c, t->var_abs, 4 * ldexp(1.0, -53)))
        sbn_test_fail(__FILE__, __LINE__, "%s differs", what);
    free(mean);
    free(var);
}

/* Runs one gather with the given optional arguments and checks every output. */
static void check_gather(const gather_in *g, int opts, double momentum, double eps, sbn_dtype out,
                         const expect *e, const tols *t)
{
    int64_t c = g->c;
    tsup_buf rm = make_vec(out, c, e->rm0), rv = make_vec(out, c, e->rv0);
    tsup_buf mean = make_vec(out, c, NULL), invstd = make_vec(out, c, NULL);
    unsigned char *rm_snap = tsup_snapshot(&rm), *rv_snap = tsup_snapshot(&rv);
    sbn_moments *total = malloc(sizeof(sbn_moments) * (size_t)c);
    int stats = g->kind != G_MOMENTS || (opts & OPT_STATS);
    int with_total = g->kind == G_MOMENTS && (opts & OPT_TOTAL);
    char desc[240];
    sbn_status st;

    describe(desc, sizeof desc, g, out, opts);
    st = run_gather(g, momentum, eps, (opts & OPT_RM) ? &rm.view : NULL,
                    (opts & OPT_RV) ? &rv.view : NULL, with_total ? total : NULL,
                    stats ? &mean.view : NULL, stats ? &invstd.view : NULL);
    if (st != e->status) {
        sbn_test_fail(__FILE__, __LINE__, "%s returned %s, expected %s (%s)", desc,
                      sbn_status_name(st), sbn_status_name(e->status), sbn_last_error());
    } else {
        if (stats) {
            check_vec(desc, "mean", &mean, e->mean, t->mean_abs, t->out_rel);
            check_vec(desc, "invstd", &invstd, e->invstd, 1e-300, t->invstd_rel);
        }
        if ((opts & OPT_RM) && e->status != SBN_NO_SAMPLES)
            check_vec(desc, "running_mean", &rm, e->rm, t->mean_abs, t->out_rel);
        if ((opts & OPT_RV) && e->status == SBN_OK)
            check_vec(desc, "running_var", &rv, e->rv, 2 * t->var_abs, t->out_rel);
        if (with_total && e->status != SBN_NO_SAMPLES) check_total(desc, total, e, c, t);
    }
    if (!(opts & OPT_RM) || e->status == SBN_NO_SAMPLES)
        if (!tsup_unchanged(&rm, rm_snap))
            sbn_test_fail(__FILE__, __LINE__, "running_mean of %s changed", desc);
    if (!(opts & OPT_RV) || e->status != SBN_OK)
        if (!tsup_unchanged(&rv, rv_snap))
            sbn_test_fail(__FILE__, __LINE__, "running_var of %s changed", desc);
    TSUP_FREE_ALL(rm_snap, rv_snap, total);
    TSUP_BUF_FREE(&rm, &rv, &mean, &invstd);
}

/* Builds the op's inputs from synthetic ranks and checks it against ref_merge. */
static void check_synthetic(gather_kind kind, const ranks *rk, int opts, sbn_dtype mid,
                            sbn_dtype count_dtype, tsup_layout layout, sbn_dtype out,
                            uint64_t seed)
{
    double *a = tsup_alloc_fill(rk->w * rk->c, 0.0), *b = tsup_alloc_fill(rk->w * rk->c, 0.0);
    gather_in g;
    expect e = expect_alloc(rk->c, seed);
    tols t;
    ranks_to_rows(kind, rk, EPS, a, b);
    g = gin_make(kind, rk, a, b, mid, count_dtype, layout);
    expect_merge(&e, rk, MOMENTUM, EPS);
    t = tols_for(kind, rk, &e, mid, out, EPS);
    check_gather(&g, opts, MOMENTUM, EPS, out, &e, &t);
    gin_free(&g);
    TSUP_FREE_ALL(e.store, a, b);
}

/* Random ranks with the given counts; zero-count ranks get NaN mean and var. */
static ranks random_ranks(int64_t w, int64_t c, const double *counts, uint64_t seed)
{
    ranks rk = ranks_alloc(w, c);
    tsup_rng rng = tsup_rng_seed(seed);
    int64_t j, ch;
    for (j = 0; j < w; j++) {
        rk.count[j] = counts[j];
        for (ch = 0; ch < c; ch++) {
            int64_t i = j * c + ch;
            rk.mean[i] = counts[j] > 0 ? 0.5 * (double)ch + tsup_normal(&rng) : NAN;
            rk.var[i] = counts[j] > 1 ? 0.25 + 2.0 * tsup_uniform(&rng) : counts[j] > 0 ? 0.0 : NAN;
        }
    }
    return rk;
}

/* Runs check_synthetic for all three kinds on the given counts. */
static void check_all_kinds(int64_t w, int64_t c, const double *counts, int opts, sbn_dtype mid,
                            uint64_t seed)
{
    ranks rk = random_ranks(w, c, counts, seed);
    int k;
    for (k = 0; k < 3; k++) {
        uint64_t s = seed + (uint64_t)k;
        check_synthetic((gather_kind)k, &rk, opts, mid, k_count_dtypes[s % 4], k_layouts[s % 3],
                        s % 2 ? SBN_F64 : SBN_F32, s);
    }
    ranks_free(&rk);
}

/* ---- (a) the split property ---- */

#define SPLIT_N 13
#define SPLIT_C 3
#define SPLIT_S 7

/* Uneven sizes of w parts summing to total; part 1 (w >= 3) and part 0 (w >= 5) are empty. */
static void split_sizes(tsup_rng *rng, int64_t total, int w, int64_t *sizes)
{
    int64_t cuts[8];
    int i, j;
    for (i = 0; i < w - 1; i++) cuts[i] = (int64_t)(tsup_uniform(rng) * (double)(total + 1));
    for (i = 1; i < w - 1; i++) /* insertion sort */
        for (j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            int64_t tmp = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = tmp;
        }
    for (i = 0; i < w; i++) sizes[i] = (i < w - 1 ? cuts[i] : total) - (i > 0 ? cuts[i - 1] : 0);
    if (w >= 3) {
        sizes[2] += sizes[1];
        sizes[1] = 0;
    }
    if (w >= 5) {
        sizes[3] += sizes[0];
        sizes[0] = 0;
    }
}

/* Runs the kind's local op on one part (n rows of x) into rows a, b of rank j. */
static void local_op(gather_kind kind, const double *x, int64_t n, sbn_dtype mid, double *a,
                     double *b, double *count)
{
    int64_t shape[3] = {n, SPLIT_C, SPLIT_S};
    tsup_buf xb = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, x);
    tsup_buf oa = make_vec(mid, SPLIT_C, NULL), ob = make_vec(mid, SPLIT_C, NULL);
    sbn_moments m[SPLIT_C];
    sbn_status st, want = (kind == G_COUNTS && n == 0) ? SBN_NO_SAMPLES : SBN_OK;
    size_t bytes = 0;
    void *ws;
    int ch;
    *count = (double)(n * SPLIT_S);
    if (kind == G_COUNTS) sbn_stats_workspace_size(&xb.view, &bytes);
    if (kind == G_MOMENTS) sbn_stats_moments_workspace_size(&xb.view, &bytes);
    if (kind == G_SUMS) sbn_reduce_workspace_size(&xb.view, &bytes);
    ws = tsup_ws_alloc(bytes);
    if (kind == G_COUNTS) st = sbn_stats(&xb.view, EPS, &oa.view, &ob.view, ws, bytes, NULL);
    else if (kind == G_SUMS) st = sbn_reduce(&xb.view, &oa.view, &ob.view, ws, bytes, NULL);
    else st = sbn_stats_moments(&xb.view, m, ws, bytes, NULL);
    if (st != want)
        sbn_test_fail(__FILE__, __LINE__, "local op for %s on %lld rows returned %s (%s)",
                      k_kind_names[kind], (long long)n, sbn_status_name(st), sbn_last_error());
    for (ch = 0; ch < SPLIT_C; ch++) {
        a[ch] = kind == G_MOMENTS ? m[ch].mean : tsup_get1(&oa.view, ch);
        b[ch] = kind == G_MOMENTS ? m[ch].m2 : tsup_get1(&ob.view, ch);
        if (kind == G_MOMENTS && m[ch].count != *count)
            sbn_test_fail(__FILE__, __LINE__, "stats_moments count %.17g, want %.17g",
                          m[ch].count, *count);
    }
    free(ws);
    TSUP_BUF_FREE(&xb, &oa, &ob);
}

/* One split into w parts, merged by `kind`, against the whole-batch oracle. */
static void check_split(gather_kind kind, const double *x, const int64_t *sizes, int w,
                        sbn_dtype mid, sbn_dtype count_dtype, tsup_layout layout, sbn_dtype out,
                        uint64_t seed)
{
    ranks rk = ranks_alloc(w, SPLIT_C);
    double *a = tsup_alloc_fill(w * SPLIT_C, 0.0), *b = tsup_alloc_fill(w * SPLIT_C, 0.0);
    double *y = tsup_alloc_fill(SPLIT_N * SPLIT_C * SPLIT_S, 0.0);
    expect e = expect_alloc(SPLIT_C, seed);
    int64_t row = 0;
    gather_in g;
    tols t;
    int j;
    for (j = 0; j < w; j++) {
        const double *part = x + row * SPLIT_C * SPLIT_S;
        local_op(kind, part, sizes[j], mid, a + j * SPLIT_C, b + j * SPLIT_C, &rk.count[j]);
        ref_mean_var(part, sizes[j], SPLIT_C, SPLIT_S, rk.mean + j * SPLIT_C, rk.var + j * SPLIT_C);
        row += sizes[j];
    }
    g = gin_make(kind, &rk, a, b, mid, count_dtype, layout);
    ref_batch_norm_train(x, SPLIT_N, SPLIT_C, SPLIT_S, NULL, NULL, MOMENTUM, EPS, y, e.mean,
                         e.invstd, e.rm, e.rv);
    ref_mean_var(x, SPLIT_N, SPLIT_C, SPLIT_S, y, e.var); /* y: scratch for the mean */
    e.n = SPLIT_N * SPLIT_S;
    t = tols_for(kind, &rk, &e, mid, out, EPS);
    check_gather(&g, OPT_ALL, MOMENTUM, EPS, out, &e, &t);
    gin_free(&g);
    ranks_free(&rk);
    TSUP_FREE_ALL(e.store, a, b, y);
}

/* The split property for one kind over W = 1..7, intermediate and count dtypes. */
static void run_split(gather_kind kind)
{
    static const sbn_dtype mids[] = {SBN_F32, SBN_F64};
    int64_t numel = SPLIT_N * SPLIT_C * SPLIT_S, i, sizes[7];
    double *x = tsup_alloc_fill(numel, 0.0);
    tsup_rng rng = tsup_rng_seed(1234);
    int w, im, ic, index = 0;
    for (i = 0; i < numel; i++) /* per-channel offsets, f32-rounded like the parts */
        x[i] = tsup_round(SBN_F32, 0.75 * (double)((i / SPLIT_S) % SPLIT_C) - 0.5 +
                                       1.5 * tsup_normal(&rng));
    for (w = 1; w <= 7; w++) {
        split_sizes(&rng, SPLIT_N, w, sizes);
        for (im = 0; im < (kind == G_MOMENTS ? 1 : 2); im++) {
            for (ic = 0; ic < (kind == G_MOMENTS ? 1 : 4); ic++, index++) {
                check_split(kind, x, sizes, w, mids[im], k_count_dtypes[ic], k_layouts[index % 3],
                            index % 2 ? SBN_F64 : SBN_F32, (uint64_t)index);
                if (sbn_test_failures()) {
                    fprintf(stderr, "    split sizes:");
                    for (i = 0; i < w; i++) fprintf(stderr, " %lld", (long long)sizes[i]);
                    fprintf(stderr, "\n");
                    free(x);
                    return;
                }
            }
        }
    }
    free(x);
}

static void test_split_counts(void) { run_split(G_COUNTS); }
static void test_split_moments(void) { run_split(G_MOMENTS); }
static void test_split_sums(void) { run_split(G_SUMS); }

/* ---- (b)-(e), (g): synthetic ranks ---- */

/* (b) every count dtype on every kind and layout. */
static void test_count_dtypes(void)
{
    static const double counts[] = {4, 1, 7, 2, 9};
    ranks rk = random_ranks(5, 6, counts, 5);
    int k, ic;
    for (k = 0; k < 3; k++)
        for (ic = 0; ic < 4; ic++)
            check_synthetic((gather_kind)k, &rk, OPT_ALL, SBN_F64, k_count_dtypes[ic],
                            k_layouts[ic % 3], SBN_F64, (uint64_t)(10 * k + ic));
    ranks_free(&rk);
}

/* (c) every count zero: SBN_NO_SAMPLES, mean 0, invstd NaN, running stats bit-unchanged. */
static void test_all_counts_zero(void)
{
    static const double zeros[] = {0, 0, 0};
    check_all_kinds(3, 4, zeros, OPT_ALL, SBN_F32, 21);
    check_all_kinds(1, 2, zeros, OPT_ALL, SBN_F64, 22);
}

/* (d) one sample in all: SBN_SINGLE_SAMPLE, running_mean updated, running_var unchanged. */
static void test_single_sample(void)
{
    static const double one_mid[] = {0, 1, 0};
    static const double one_only[] = {1};
    check_all_kinds(3, 5, one_mid, OPT_ALL, SBN_F64, 31);
    check_all_kinds(1, 3, one_only, OPT_ALL, SBN_F64, 32);
}

/* (e) running tensors optional independently; gather_moments' outputs optional too. */
static void test_optional_running(void)
{
    static const double counts[] = {3, 0, 5, 2};
    static const int opts[] = {OPT_ALL, OPT_ALL & ~OPT_RV, OPT_ALL & ~OPT_RM,
                               OPT_TOTAL | OPT_STATS, OPT_RM | OPT_RV | OPT_TOTAL,
                               OPT_RM | OPT_RV | OPT_STATS};
    int i;
    for (i = 0; i < 6; i++) check_all_kinds(4, 3, counts, opts[i], SBN_F64, (uint64_t)(40 + i));
}

/* (g) zero-count ranks holding NaN (first, middle, last) do not poison the merge. */
static void test_nan_in_empty_ranks(void)
{
    static const double counts[] = {0, 2, 0, 3, 4, 0};
    check_all_kinds(6, 5, counts, OPT_ALL, SBN_F32, 51);
    check_all_kinds(6, 5, counts, OPT_ALL, SBN_F64, 52);
}

/* ---- (f) CANN documentation examples ---- */

/* Checks against the published numbers (rel tol) and against ref_merge of the same ranks. */
static void check_published(gather_kind kind, const ranks *rk, const double *rm0,
                            const double *rv0, double momentum, double eps, sbn_dtype mid,
                            sbn_dtype count_dtype, sbn_dtype out, const double *pub)
{
    int64_t c = rk->c;
    double *a = tsup_alloc_fill(rk->w * c, 0.0), *b = tsup_alloc_fill(rk->w * c, 0.0);
    expect e = expect_alloc(c, 0);
    tols t = {0.0, 0.0, 1e-7, 1e-7};
    gather_in g;
    ranks_to_rows(kind, rk, eps, a, b);
    g = gin_make(kind, rk, a, b, mid, count_dtype, TSUP_CHANNELS_FIRST);
    memcpy(e.rm0, rm0, sizeof(double) * (size_t)c);
    memcpy(e.rv0, rv0, sizeof(double) * (size_t)c);
    /* published: mean, invstd, running_mean, running_var, C values each */
    memcpy(e.mean, pub, sizeof(double) * (size_t)c);
    memcpy(e.invstd, pub + c, sizeof(double) * (size_t)c);
    memcpy(e.rm, pub + 2 * c, sizeof(double) * (size_t)c);
    memcpy(e.rv, pub + 3 * c, sizeof(double) * (size_t)c);
    e.status = SBN_OK;
    e.n = 0;
    check_gather(&g, OPT_RM | OPT_RV | OPT_STATS, momentum, eps, out, &e, &t);
    /* and the oracle's own merge of the same ranks, at the dtype tolerances */
    memcpy(e.rm, rm0, sizeof(double) * (size_t)c);
    memcpy(e.rv, rv0, sizeof(double) * (size_t)c);
    e.n = ref_merge(rk->mean, rk->var, rk->count, rk->w, c, momentum, e.mean, e.var, e.rm, e.rv);
    if (!tsup_close("ref_merge vs published", e.mean, pub, c, 0.0, 1e-7) ||
        !tsup_close("ref_merge running_mean vs published", e.rm, pub + 2 * c, c, 0.0, 1e-7) ||
        !tsup_close("ref_merge running_var vs published", e.rv, pub + 3 * c, c, 0.0, 1e-7))
        sbn_test_fail(__FILE__, __LINE__, "oracle disagrees with the %s example",
                      k_kind_names[kind]);
    {
        int64_t ch;
        for (ch = 0; ch < c; ch++) e.invstd[ch] = 1.0 / sqrt(e.var[ch] + eps);
    }
    t = tols_for(kind, rk, &e, mid, out, eps);
    check_gather(&g, OPT_ALL, momentum, eps, out, &e, &t);
    gin_free(&g);
    TSUP_FREE_ALL(e.store, a, b);
}

/* aclnn-spec 2.3: SyncBatchNormGatherStats doc example. */
static void test_cann_sums_example(void)
{
    static const double pub[] = {0.75, 1.0, 2.30933950, 316.227766,
                                 360.075, 360.1, 360.018797, 360.0};
    static const double run0[] = {400, 400};
    ranks rk = ranks_alloc(1, 2);
    int k;
    rk.count[0] = 400;
    rk.mean[0] = 300.0 / 400.0;
    rk.mean[1] = 400.0 / 400.0;
    rk.var[0] = 300.0 / 400.0 - rk.mean[0] * rk.mean[0]; /* 0.1875 */
    rk.var[1] = 400.0 / 400.0 - rk.mean[1] * rk.mean[1]; /* 0: no clamp needed */
    check_published(G_SUMS, &rk, run0, run0, 0.1, 1e-5, SBN_F32, SBN_I32, SBN_F32, pub);
    for (k = 0; k < 3; k++)
        check_published((gather_kind)k, &rk, run0, run0, 0.1, 1e-5, SBN_F64, SBN_F64, SBN_F64, pub);
    ranks_free(&rk);
}

/* aclnn-spec 3, reading A: mean rows 0..7 then zeros, invstd rows 1, 2, 3, 4. */
static void test_cann_counts_example(void)
{
    static const double pub[] = {
        .8, 1.1, 1.4, 1.7,
        .601022608, .493965208, .413508024, .353148972,
        .998, 1.991, 2.984, 3.977,
        4.98075815, 5.98553593, 6.99498037, 8.00909148};
    static const double rm0[] = {1, 2, 3, 4}, rv0[] = {5, 6, 7, 8};
    ranks rk = ranks_alloc(4, 4);
    int64_t j, ch;
    int k;
    for (j = 0; j < 4; j++) {
        rk.count[j] = (double)(j + 1);
        for (ch = 0; ch < 4; ch++) {
            double invstd = (double)(j + 1);
            rk.mean[j * 4 + ch] = j < 2 ? (double)(4 * j + ch) : 0.0;
            rk.var[j * 4 + ch] = 1.0 / (invstd * invstd) - 1e-4;
        }
    }
    check_published(G_COUNTS, &rk, rm0, rv0, 0.01, 1e-4, SBN_F32, SBN_F32, SBN_F32, pub);
    for (k = 0; k < 3; k++)
        check_published((gather_kind)k, &rk, rm0, rv0, 0.01, 1e-4, SBN_F64, SBN_I64, SBN_F64, pub);
    ranks_free(&rk);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_split_counts),
    SBN_TEST_CASE(test_split_moments),
    SBN_TEST_CASE(test_split_sums),
    SBN_TEST_CASE(test_count_dtypes),
    SBN_TEST_CASE(test_all_counts_zero),
    SBN_TEST_CASE(test_single_sample),
    SBN_TEST_CASE(test_optional_running),
    SBN_TEST_CASE(test_nan_in_empty_ranks),
    SBN_TEST_CASE(test_cann_sums_example),
    SBN_TEST_CASE(test_cann_counts_example),
};

SBN_TEST_MAIN(k_cases)
