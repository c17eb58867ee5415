/*
 * test_elemt.c - sbn_elemt (y = (x - mean) * invstd * w + b) against the double
 * oracle ref_elemt. The matrix crosses shapes (ranks 2, 3, 4, 5 and 8; C = 1, 3
 * and 64; N = 1; spatial sizes 1, 7, 16, 17 and 1000) with x channels-first,
 * channels-last or strided and y in every layout (so often a different one than
 * x), dtype sets (f32, f64, f16, bf16 throughout; f16/bf16 x with f32 per-channel
 * parameters; f16 x into f32 y; f64 x into f32 y), weight and bias each present or
 * absent, contiguous or strided per-channel views, serial or pooled. Other cases:
 * in-place (y is exactly the x view), empty x (nothing written), a large mean
 * offset, guard bytes around every output, inputs left untouched, and bitwise
 * equality for pool NULL/1/2/3. The tolerance is the output rounding (2 unit
 * roundoffs of y's dtype times |y|) plus 4 unit roundoffs of the compute precision
 * (f64 only when every tensor is f64, else f32) times |b| + |(x - mean)*invstd*w|.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/support.h"
#include "syncbn/ops.h"

typedef struct shape_t {
    int rank;
    int64_t d[SBN_MAX_RANK];
} shape_t;

/* Element types of x, y and the per-channel tensors (mean, invstd, weight, bias). */
typedef struct dtypes_t {
    sbn_dtype x, y, p;
} dtypes_t;

static const shape_t k_shapes[] = {
    {2, {1, 3}},                    /* N = 1, spatial 1 */
    {2, {17, 64}},                  /* spatial 1, C = 64 */
    {3, {1, 1, 1000}},              /* C = 1, spatial 1000 */
    {3, {2, 3, 7}},                 /* spatial 7 */
    {3, {1, 64, 17}},               /* spatial 17 */
    {3, {2, 64, 16}},               /* spatial 16 */
    {4, {2, 3, 4, 4}},              /* spatial 16 */
    {4, {1, 64, 1, 1}},             /* spatial 1 */
    {4, {3, 1, 1, 17}},             /* C = 1, spatial 17 */
    {5, {1, 3, 1, 7, 1}},           /* spatial 7 */
    {5, {2, 3, 2, 4, 2}},           /* spatial 16 */
    {5, {1, 3, 10, 10, 10}},        /* spatial 1000 */
    {8, {1, 3, 2, 1, 2, 1, 2, 2}},  /* spatial 16 */
    {8, {2, 1, 1, 1, 1, 1, 1, 17}}, /* C = 1, spatial 17 */
};
#define N_SHAPES ((int)(sizeof k_shapes / sizeof k_shapes[0]))

static const dtypes_t k_dtypes[] = {
    {SBN_F32, SBN_F32, SBN_F32},   {SBN_F64, SBN_F64, SBN_F64},  {SBN_F16, SBN_F16, SBN_F16},
    {SBN_BF16, SBN_BF16, SBN_BF16}, {SBN_F16, SBN_F16, SBN_F32},  {SBN_BF16, SBN_BF16, SBN_F32},
    {SBN_F16, SBN_F32, SBN_F32},   {SBN_F64, SBN_F32, SBN_F64},
};

/* One run: what to build and how to call sbn_elemt. */
typedef struct elemt_spec {
    const shape_t *shape;
    dtypes_t dt;
    tsup_layout xl, yl, pl; /* layouts of x, y and the per-channel views */
    int has_w, has_b, in_place;
    double x_mean, x_std; /* x ~ N(x_mean, x_std) */
    sbn_pool_t *pool;
} elemt_spec;

static void split_shape(const shape_t *sh, int64_t *n, int64_t *c, int64_t *s)
{
    int d;
    *n = sh->d[0];
    *c = sh->d[1];
    *s = 1;
    for (d = 2; d < sh->rank; d++) *s *= sh->d[d];
}

static void shape_str(const shape_t *sh, char *buf, size_t size)
{
    size_t used = 0;
    int d;
    buf[0] = 0;
    for (d = 0; d < sh->rank && used + 1 < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "x" : "",
                                 (long long)sh->d[d]);
}

static void describe(const elemt_spec *sp, char *buf, size_t size)
{
    char shs[96];
    shape_str(sp->shape, shs, sizeof shs);
    snprintf(buf, size,
             "elemt %s x %s %s, y %s %s, params %s %s, w=%d b=%d in_place=%d pool=%d mean %g",
             shs, sbn_dtype_name(sp->dt.x), tsup_layout_name(sp->xl),
             sbn_dtype_name(sp->in_place ? sp->dt.x : sp->dt.y),
             tsup_layout_name(sp->in_place ? sp->xl : sp->yl), sbn_dtype_name(sp->dt.p),
             tsup_layout_name(sp->pl), sp->has_w, sp->has_b, sp->in_place,
             sbn_pool_threads(sp->pool), sp->x_mean);
}

/* Smallest positive subnormal of the dtype that matters at the tests' magnitudes. */
static double abs_floor(sbn_dtype dt)
{
    return dt == SBN_F16 ? ldexp(1.0, -24) : 0.0;
}

/*
 * |got - want| <= tol[i] for every element (NaN matches NaN). Prints `what`, the
 * first 5 failures and the worst ratio diff/tol; returns 1 when all pass.
 */
static int close_tol(const char *what, const double *got, const double *want, const double *tol,
                     int64_t n)
{
    int64_t i, bad = 0;
    double worst = 0.0;
    for (i = 0; i < n; i++) {
        double diff = fabs(got[i] - want[i]);
        int ok = (isnan(got[i]) && isnan(want[i])) || diff <= tol[i];
        if (!ok) {
            double ratio = isnan(diff) ? INFINITY : diff / tol[i];
            if (ratio > worst || isnan(worst)) worst = ratio;
            if (bad < 5)
                fprintf(stderr, "    %s[%lld]: got %.17g, want %.17g, diff %.3g (tol %.3g)\n",
                        what, (long long)i, got[i], want[i], diff, tol[i]);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "    %s: %lld of %lld elements differ, worst diff/tol %.3g\n", what,
                (long long)bad, (long long)n, worst);
    return bad == 0;
}

/* Allocates the workspace sbn_elemt asks for (NULL for 0 bytes). */
static void *elemt_workspace(const sbn_tensor *x, size_t *bytes)
{
    *bytes = 0;
    if (sbn_elemt_workspace_size(x, bytes) != SBN_OK) return NULL;
    return *bytes ? malloc(*bytes) : NULL;
}

/* Frees every heap pointer listed. */
#define FREE_ALL(...)                                                                \
    do {                                                                             \
        void *free_all_[] = {__VA_ARGS__};                                           \
        size_t free_i_;                                                              \
        for (free_i_ = 0; free_i_ < sizeof free_all_ / sizeof *free_all_; free_i_++) \
            free(free_all_[free_i_]);                                                \
    } while (0)

/*
 * tsup_make, except that an empty view gets the strides of the shape with every 0
 * dim taken as 1 (as sbn_tensor_contiguous builds them) unless g_zero_strides is
 * set: then it keeps tsup_make's (numpy's) strides, where a 0 dim zeroes the
 * strides outside it. An empty view has no elements, so either must be accepted.
 */
static int g_zero_strides;

static tsup_buf make_view(sbn_dtype dt, int rank, const int64_t *shape, tsup_layout layout,
                          const double *values)
{
    tsup_buf b = tsup_make(dt, rank, shape, layout, values);
    if (tsup_numel(rank, shape) == 0 && !g_zero_strides) {
        int64_t ones[SBN_MAX_RANK];
        tsup_buf tmp;
        int d;
        for (d = 0; d < rank; d++) ones[d] = shape[d] > 0 ? shape[d] : 1;
        tmp = tsup_make(dt, rank, ones, layout, NULL);
        memcpy(b.view.strides, tmp.view.strides, sizeof b.view.strides);
        tsup_free(&tmp);
    }
    return b;
}

static double *alloc_fill(int64_t n, double value)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    int64_t i;
    for (i = 0; i < n; i++) v[i] = value;
    return v;
}

/*
 * Per-channel parameters, rounded to the dtype: pv[0] mean near the data mean,
 * pv[1] invstd near 1/x_std, pv[2] weight, pv[3] bias (signed, any size).
 */
static void make_params(tsup_rng *rng, int64_t c, double x_mean, double x_std, sbn_dtype dt,
                        double *pv[4])
{
    int64_t ch;
    int k;
    for (k = 0; k < 4; k++) pv[k] = alloc_fill(c, 0.0);
    for (ch = 0; ch < c; ch++) {
        pv[0][ch] = tsup_round(dt, x_mean + 0.5 * x_std * tsup_normal(rng));
        pv[1][ch] = tsup_round(dt, (0.5 + tsup_uniform(rng)) / x_std);
        pv[2][ch] = tsup_round(dt, tsup_normal(rng));
        pv[3][ch] = tsup_round(dt, tsup_normal(rng));
    }
}

static void run_elemt(const elemt_spec *sp, uint64_t seed)
{
    const shape_t *sh = sp->shape;
    int64_t n, c, s, i, numel = tsup_numel(sh->rank, sh->d);
    tsup_rng rng = tsup_rng_seed(seed);
    sbn_dtype ydt = sp->in_place ? sp->dt.x : sp->dt.y;
    int all64 = sp->dt.x == SBN_F64 && ydt == SBN_F64 && sp->dt.p == SBN_F64;
    double u_c = tsup_unit_roundoff(all64 ? SBN_F64 : SBN_F32);
    double *xv = alloc_fill(numel, 0.0), *nanv = alloc_fill(numel, NAN);
    double *got = alloc_fill(numel, 0.0), *want = alloc_fill(numel, 0.0);
    double *tol = alloc_fill(numel, 0.0), *pv[4];
    tsup_buf x, ybuf, *y, p[4];
    unsigned char *xsnap, *psnap[4];
    void *ws;
    size_t ws_bytes;
    char desc[320];
    int k, ok;

    describe(sp, desc, sizeof desc);
    split_shape(sh, &n, &c, &s);
    tsup_fill_normal(&rng, xv, numel, sp->x_mean, sp->x_std, sp->dt.x);
    make_params(&rng, c, sp->x_mean, sp->x_std, sp->dt.p, pv);
    x = make_view(sp->dt.x, sh->rank, sh->d, sp->xl, xv);
    xsnap = tsup_snapshot(&x);
    if (sp->in_place) {
        y = &x;
    } else {
        ybuf = make_view(ydt, sh->rank, sh->d, sp->yl, nanv);
        y = &ybuf;
    }
    for (k = 0; k < 4; k++) {
        p[k] = make_view(sp->dt.p, 1, &c, sp->pl, pv[k]);
        psnap[k] = tsup_snapshot(&p[k]);
    }
    ws = elemt_workspace(&x.view, &ws_bytes);
    CHECK_OK(sbn_elemt(&x.view, &p[0].view, &p[1].view, sp->has_w ? &p[2].view : NULL,
                       sp->has_b ? &p[3].view : NULL, &y->view, ws, ws_bytes, sp->pool));

    ref_elemt(xv, n, c, s, pv[0], pv[1], sp->has_w ? pv[2] : NULL, sp->has_b ? pv[3] : NULL,
              want);
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / s) % c;
        double w = sp->has_w ? pv[2][ch] : 1.0, b = sp->has_b ? pv[3][ch] : 0.0;
        tol[i] = 2.0 * tsup_unit_roundoff(ydt) * fabs(want[i]) +
                 4.0 * u_c * (fabs(b) + fabs((xv[i] - pv[0][ch]) * pv[1][ch] * w)) +
                 abs_floor(ydt);
    }
    tsup_read(&y->view, got);
    ok = close_tol("y", got, want, tol, numel);
    CHECK_MSG(ok, "%s: y differs from ref_elemt", desc);
    CHECK_MSG(tsup_guard_intact(y), "%s: write outside y", desc);
    CHECK_MSG(sp->in_place || tsup_unchanged(&x, xsnap), "%s: x was modified", desc);
    for (k = 0; k < 4; k++)
        CHECK_MSG(tsup_unchanged(&p[k], psnap[k]), "%s: per-channel input %d modified", desc, k);

    for (k = 0; k < 4; k++) {
        tsup_free(&p[k]);
        free(psnap[k]);
        free(pv[k]);
    }
    if (!sp->in_place) tsup_free(&ybuf);
    tsup_free(&x);
    FREE_ALL(ws, xsnap, xv, nanv, got, want, tol);
}

static sbn_pool_t *make_pool(int threads)
{
    sbn_pool_t *pool = NULL;
    if (sbn_pool_create(threads, &pool) != SBN_OK) return NULL;
    return pool;
}

/*
 * The matrix for one dtype set: every shape, x layout and y layout, then the
 * in-place form for every x layout. Weight/bias presence, per-channel layout and
 * the pool cycle with the run index so every combination occurs.
 */
static void run_matrix(int dt_index)
{
    sbn_pool_t *pool2 = make_pool(2);
    int si, xl, yl, run = 0;
    CHECK_MSG(pool2 != NULL, "sbn_pool_create(2) failed: %s", sbn_last_error());
    for (si = 0; si < N_SHAPES; si++) {
        for (xl = 0; xl < 3; xl++) {
            for (yl = 0; yl <= 3; yl++, run++) {
                elemt_spec sp;
                memset(&sp, 0, sizeof sp);
                sp.shape = &k_shapes[si];
                sp.dt = k_dtypes[dt_index];
                sp.xl = (tsup_layout)xl;
                sp.in_place = yl == 3 && sp.dt.x == sp.dt.y;
                if (yl == 3 && !sp.in_place) continue;
                sp.yl = sp.in_place ? sp.xl : (tsup_layout)yl;
                sp.pl = (run / 4) % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
                sp.has_w = run % 2;
                sp.has_b = (run / 2) % 2;
                sp.x_mean = 0.5;
                sp.x_std = 2.0;
                sp.pool = run % 3 == 1 ? pool2 : NULL;
                run_elemt(&sp, (uint64_t)(1000 * dt_index + run));
                RETURN_IF_FAILED();
            }
        }
    }
    sbn_pool_destroy(pool2);
}

#define MATRIX_CASE(name, index) \
    static void name(void) { run_matrix(index); }
MATRIX_CASE(elemt_f32, 0)
MATRIX_CASE(elemt_f64, 1)
MATRIX_CASE(elemt_f16, 2)
MATRIX_CASE(elemt_bf16, 3)
MATRIX_CASE(elemt_f16_params_f32, 4)
MATRIX_CASE(elemt_bf16_params_f32, 5)
MATRIX_CASE(elemt_f16_to_f32, 6)
MATRIX_CASE(elemt_f64_to_f32, 7)

/* Data far from zero relative to its spread: x - mean must not lose the digits of y. */
static void elemt_mean_offset(void)
{
    static const shape_t sh = {4, {2, 3, 5, 7}};
    static const struct { dtypes_t dt; double mean, std; } rows[] = {
        {{SBN_F32, SBN_F32, SBN_F32}, 1000.0, 0.5},
        {{SBN_F64, SBN_F64, SBN_F64}, 1.0e6, 0.25},
        {{SBN_F16, SBN_F16, SBN_F32}, 100.0, 1.0},
        {{SBN_BF16, SBN_F32, SBN_F32}, 300.0, 8.0},
    };
    int r, xl;
    for (r = 0; r < 4; r++) {
        for (xl = 0; xl < 3; xl++) {
            elemt_spec sp;
            memset(&sp, 0, sizeof sp);
            sp.shape = &sh;
            sp.dt = rows[r].dt;
            sp.xl = (tsup_layout)xl;
            sp.yl = (tsup_layout)((xl + 1) % 3);
            sp.has_w = sp.has_b = 1;
            sp.x_mean = rows[r].mean;
            sp.x_std = rows[r].std;
            run_elemt(&sp, (uint64_t)(77 + 3 * r + xl));
            RETURN_IF_FAILED();
        }
    }
}

/* Empty x (a zero dim anywhere but C): SBN_OK, y and every guard byte untouched. */
static void run_empty(void)
{
    static const shape_t shapes[] = {
        {3, {0, 3, 5}}, {3, {2, 3, 0}}, {2, {0, 64}}, {4, {2, 3, 0, 4}}, {5, {1, 1, 2, 0, 3}},
    };
    static const dtypes_t dts[] = {{SBN_F32, SBN_F32, SBN_F32}, {SBN_F16, SBN_F16, SBN_F32}};
    double pv[64];
    int si, di, xl, i;
    for (i = 0; i < 64; i++) pv[i] = 0.5 + 0.01 * i;
    for (si = 0; si < 5; si++) {
        for (di = 0; di < 2; di++) {
            for (xl = 0; xl < 3; xl++) {
                const shape_t *sh = &shapes[si];
                int64_t c = sh->d[1];
                tsup_buf x = make_view(dts[di].x, sh->rank, sh->d, (tsup_layout)xl, NULL);
                tsup_buf y = make_view(dts[di].y, sh->rank, sh->d, (tsup_layout)((xl + 2) % 3),
                                       NULL);
                tsup_buf p = tsup_make_1d(dts[di].p, c, pv);
                unsigned char *xsnap = tsup_snapshot(&x), *ysnap = tsup_snapshot(&y);
                size_t ws_bytes;
                void *ws = elemt_workspace(&x.view, &ws_bytes);
                char shs[96];
                sbn_status st = sbn_elemt(&x.view, &p.view, &p.view, &p.view, &p.view, &y.view,
                                          ws, ws_bytes, NULL);
                shape_str(sh, shs, sizeof shs);
                CHECK_MSG(st == SBN_OK, "empty %s x %s %s: %s (%s)", shs, sbn_dtype_name(dts[di].x),
                          tsup_layout_name((tsup_layout)xl), sbn_status_name(st), sbn_last_error());
                CHECK_MSG(tsup_unchanged(&y, ysnap), "empty %s %s: y written", shs,
                          tsup_layout_name((tsup_layout)xl));
                /* In place on the empty view as well. */
                st = sbn_elemt(&x.view, &p.view, &p.view, NULL, NULL, &x.view, ws, ws_bytes, NULL);
                CHECK_MSG(st == SBN_OK, "empty %s %s in place: %s (%s)", shs,
                          tsup_layout_name((tsup_layout)xl), sbn_status_name(st), sbn_last_error());
                CHECK_MSG(tsup_unchanged(&x, xsnap), "empty %s %s: x written in place", shs,
                          tsup_layout_name((tsup_layout)xl));
                tsup_free(&x);
                tsup_free(&y);
                tsup_free(&p);
                FREE_ALL(xsnap, ysnap, ws);
            }
        }
    }
}

static void elemt_empty(void)
{
    run_empty();
}

static void elemt_empty_zero_strides(void)
{
    g_zero_strides = 1;
    run_empty();
}

/* Output bytes for pool NULL, 1, 2 and 3 threads must be identical (many chunks). */
static void elemt_threads_bitwise(void)
{
    static const shape_t sh = {3, {3, 5, 4000}};
    static const dtypes_t dts[] = {{SBN_F32, SBN_F32, SBN_F32}, {SBN_BF16, SBN_F16, SBN_F32},
                                   {SBN_F64, SBN_F64, SBN_F64}};
    int64_t numel = tsup_numel(sh.rank, sh.d), c = sh.d[1];
    int di, xl, t, k;
    for (di = 0; di < 3; di++) {
        for (xl = 0; xl < 2; xl++) {
            tsup_rng rng = tsup_rng_seed((uint64_t)(500 + di * 2 + xl));
            double *xv = alloc_fill(numel, 0.0), *pv[4];
            tsup_buf x, p[4], y0;
            size_t ws_bytes;
            void *ws;
            tsup_fill_normal(&rng, xv, numel, 0.5, 2.0, dts[di].x);
            make_params(&rng, c, 0.5, 2.0, dts[di].p, pv);
            x = make_view(dts[di].x, sh.rank, sh.d, (tsup_layout)xl, xv);
            for (k = 0; k < 4; k++) p[k] = tsup_make_1d(dts[di].p, c, pv[k]);
            y0 = make_view(dts[di].y, sh.rank, sh.d, (tsup_layout)(1 - xl), NULL);
            ws = elemt_workspace(&x.view, &ws_bytes);
            CHECK_OK(sbn_elemt(&x.view, &p[0].view, &p[1].view, &p[2].view, &p[3].view,
                               &y0.view, ws, ws_bytes, NULL));
            for (t = 1; t <= 3; t++) {
                sbn_pool_t *pool = make_pool(t);
                tsup_buf y = make_view(dts[di].y, sh.rank, sh.d, (tsup_layout)(1 - xl), NULL);
                int same;
                CHECK_MSG(pool != NULL, "sbn_pool_create(%d) failed", t);
                CHECK_OK(sbn_elemt(&x.view, &p[0].view, &p[1].view, &p[2].view, &p[3].view,
                                   &y.view, ws, ws_bytes, pool));
                same = tsup_same_bytes("y", y.alloc, y0.alloc, y.alloc_bytes);
                CHECK_MSG(same, "elemt x %s %s: %d threads differ from serial",
                          sbn_dtype_name(dts[di].x), tsup_layout_name((tsup_layout)xl), t);
                tsup_free(&y);
                sbn_pool_destroy(pool);
            }
            for (k = 0; k < 4; k++) {
                tsup_free(&p[k]);
                free(pv[k]);
            }
            tsup_free(&x);
            tsup_free(&y0);
            free(ws);
            free(xv);
        }
    }
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(elemt_f32),
        SBN_TEST_CASE(elemt_f64),
        SBN_TEST_CASE(elemt_f16),
        SBN_TEST_CASE(elemt_bf16),
        SBN_TEST_CASE(elemt_f16_params_f32),
        SBN_TEST_CASE(elemt_bf16_params_f32),
        SBN_TEST_CASE(elemt_f16_to_f32),
        SBN_TEST_CASE(elemt_f64_to_f32),
        SBN_TEST_CASE(elemt_mean_offset),
        SBN_TEST_CASE(elemt_empty),
        SBN_TEST_CASE(elemt_empty_zero_strides),
        SBN_TEST_CASE(elemt_threads_bitwise),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
