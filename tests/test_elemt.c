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
#include "support/optest.h"
#include "syncbn/ops.h"

/* Element types of x, y and the per-channel tensors (mean, invstd, weight, bias). */
typedef struct dtypes_t {
    sbn_dtype x, y, p;
} dtypes_t;

static const tsup_shape k_shapes[] = {
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
#define N_SHAPES TSUP_COUNT(k_shapes)

static const dtypes_t k_dtypes[] = {
    {SBN_F32, SBN_F32, SBN_F32},   {SBN_F64, SBN_F64, SBN_F64},  {SBN_F16, SBN_F16, SBN_F16},
    {SBN_BF16, SBN_BF16, SBN_BF16}, {SBN_F16, SBN_F16, SBN_F32},  {SBN_BF16, SBN_BF16, SBN_F32},
    {SBN_F16, SBN_F32, SBN_F32},   {SBN_F64, SBN_F32, SBN_F64},
};

/* One run: what to build and how to call sbn_elemt. */
typedef struct elemt_spec {
    const tsup_shape *shape;
    dtypes_t dt;
    tsup_layout xl, yl, pl; /* layouts of x, y and the per-channel views */
    int has_w, has_b, in_place;
    double x_mean, x_std; /* x ~ N(x_mean, x_std) */
    sbn_pool_t *pool;
} elemt_spec;

static void describe(const elemt_spec *sp, char *buf, size_t size)
{
    char shs[96];
    tsup_shape_str(sp->shape->rank, sp->shape->d, shs, sizeof shs);
    snprintf(buf, size,
             "elemt %s x %s %s, y %s %s, params %s %s, w=%d b=%d in_place=%d pool=%d mean %g",
             shs, sbn_dtype_name(sp->dt.x), tsup_layout_name(sp->xl),
             sbn_dtype_name(sp->in_place ? sp->dt.x : sp->dt.y),
             tsup_layout_name(sp->in_place ? sp->xl : sp->yl), sbn_dtype_name(sp->dt.p),
             tsup_layout_name(sp->pl), sp->has_w, sp->has_b, sp->in_place,
             sbn_pool_threads(sp->pool), sp->x_mean);
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
    for (k = 0; k < 4; k++) pv[k] = tsup_alloc_fill(c, 0.0);
    for (ch = 0; ch < c; ch++) {
        pv[0][ch] = tsup_round(dt, x_mean + 0.5 * x_std * tsup_normal(rng));
        pv[1][ch] = tsup_round(dt, (0.5 + tsup_uniform(rng)) / x_std);
        pv[2][ch] = tsup_round(dt, tsup_normal(rng));
        pv[3][ch] = tsup_round(dt, tsup_normal(rng));
    }
}

static void run_elemt(const elemt_spec *sp, uint64_t seed)
{
    const tsup_shape *sh = sp->shape;
    int64_t n, c, s, i, numel = tsup_numel(sh->rank, sh->d);
    tsup_rng rng = tsup_rng_seed(seed);
    sbn_dtype ydt = sp->in_place ? sp->dt.x : sp->dt.y;
    double u_c = tsup_compute_u(sp->dt.x, ydt, sp->dt.p);
    double *xv = tsup_alloc_fill(numel, 0.0), *nanv = tsup_alloc_fill(numel, NAN);
    double *got = tsup_alloc_fill(numel, 0.0), *want = tsup_alloc_fill(numel, 0.0);
    double *tol = tsup_alloc_fill(numel, 0.0), *pv[4];
    tsup_buf x, ybuf, *y, p[4];
    unsigned char *xsnap, *psnap[4];
    void *ws;
    size_t ws_bytes;
    char desc[320];
    int k, ok;

    describe(sp, desc, sizeof desc);
    tsup_split_ncs(sh->rank, sh->d, &n, &c, &s);
    tsup_fill_normal(&rng, xv, numel, sp->x_mean, sp->x_std, sp->dt.x);
    make_params(&rng, c, sp->x_mean, sp->x_std, sp->dt.p, pv);
    x = tsup_make_view(sp->dt.x, sh->rank, sh->d, sp->xl, xv);
    xsnap = tsup_snapshot(&x);
    if (sp->in_place) {
        y = &x;
    } else {
        ybuf = tsup_make_view(ydt, sh->rank, sh->d, sp->yl, nanv);
        y = &ybuf;
    }
    for (k = 0; k < 4; k++) {
        p[k] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, pv[k]);
        psnap[k] = tsup_snapshot(&p[k]);
    }
    ws = tsup_workspace(sbn_elemt_workspace_size, &x.view, &ws_bytes);
    CHECK_OK(sbn_elemt(&x.view, &p[0].view, &p[1].view, sp->has_w ? &p[2].view : NULL,
                       sp->has_b ? &p[3].view : NULL, &y->view, ws, ws_bytes, sp->pool));

    ref_elemt(xv, n, c, s, pv[0], pv[1], sp->has_w ? pv[2] : NULL, sp->has_b ? pv[3] : NULL,
              want);
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / s) % c;
        double w = sp->has_w ? pv[2][ch] : 1.0, b = sp->has_b ? pv[3][ch] : 0.0;
        tol[i] = 2.0 * tsup_unit_roundoff(ydt) * fabs(want[i]) +
                 4.0 * u_c * (fabs(b) + fabs((xv[i] - pv[0][ch]) * pv[1][ch] * w)) +
                 tsup_abs_floor(ydt);
    }
    tsup_read(&y->view, got);
    ok = tsup_close_tol("y", got, want, tol, numel);
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
    TSUP_FREE_ALL(ws, xsnap, xv, nanv, got, want, tol);
}

/*
 * The matrix for one dtype set: every shape, x layout and y layout, then the
 * in-place form for every x layout. Weight/bias presence, per-channel layout and
 * the pool cycle with the run index so every combination occurs.
 */
static void run_matrix(int dt_index)
{
    sbn_pool_t *pool2 = tsup_pool(2);
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
    static const tsup_shape sh = {4, {2, 3, 5, 7}};
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
    static const tsup_shape shapes[] = {
        {3, {0, 3, 5}}, {3, {2, 3, 0}}, {2, {0, 64}}, {4, {2, 3, 0, 4}}, {5, {1, 1, 2, 0, 3}},
    };
    static const dtypes_t dts[] = {{SBN_F32, SBN_F32, SBN_F32}, {SBN_F16, SBN_F16, SBN_F32}};
    double pv[64];
    int si, di, xl, i;
    for (i = 0; i < 64; i++) pv[i] = 0.5 + 0.01 * i;
    for (si = 0; si < 5; si++) {
        for (di = 0; di < 2; di++) {
            for (xl = 0; xl < 3; xl++) {
                const tsup_shape *sh = &shapes[si];
                int64_t c = sh->d[1];
                tsup_buf x = tsup_make_view(dts[di].x, sh->rank, sh->d, (tsup_layout)xl, NULL);
                tsup_buf y =
                    tsup_make_view(dts[di].y, sh->rank, sh->d, (tsup_layout)((xl + 2) % 3), NULL);
                tsup_buf p = tsup_make_1d(dts[di].p, c, pv);
                unsigned char *xsnap = tsup_snapshot(&x), *ysnap = tsup_snapshot(&y);
                size_t ws_bytes;
                void *ws = tsup_workspace(sbn_elemt_workspace_size, &x.view, &ws_bytes);
                char shs[96];
                sbn_status st = sbn_elemt(&x.view, &p.view, &p.view, &p.view, &p.view, &y.view,
                                          ws, ws_bytes, NULL);
                tsup_shape_str(sh->rank, sh->d, shs, sizeof shs);
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
                TSUP_BUF_FREE(&x, &y, &p);
                TSUP_FREE_ALL(xsnap, ysnap, ws);
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
    tsup_set_zero_strides(1);
    run_empty();
}

/* Output bytes for pool NULL, 1, 2 and 3 threads must be identical (many chunks). */
static void elemt_threads_bitwise(void)
{
    static const tsup_shape sh = {3, {3, 5, 4000}};
    static const dtypes_t dts[] = {{SBN_F32, SBN_F32, SBN_F32}, {SBN_BF16, SBN_F16, SBN_F32},
                                   {SBN_F64, SBN_F64, SBN_F64}};
    int64_t numel = tsup_numel(sh.rank, sh.d), c = sh.d[1];
    int di, xl, t, k;
    for (di = 0; di < 3; di++) {
        for (xl = 0; xl < 2; xl++) {
            tsup_rng rng = tsup_rng_seed((uint64_t)(500 + di * 2 + xl));
            double *xv = tsup_alloc_fill(numel, 0.0), *pv[4];
            tsup_buf x, p[4], y0;
            size_t ws_bytes;
            void *ws;
            tsup_fill_normal(&rng, xv, numel, 0.5, 2.0, dts[di].x);
            make_params(&rng, c, 0.5, 2.0, dts[di].p, pv);
            x = tsup_make_view(dts[di].x, sh.rank, sh.d, (tsup_layout)xl, xv);
            for (k = 0; k < 4; k++) p[k] = tsup_make_1d(dts[di].p, c, pv[k]);
            y0 = tsup_make_view(dts[di].y, sh.rank, sh.d, (tsup_layout)(1 - xl), NULL);
            ws = tsup_workspace(sbn_elemt_workspace_size, &x.view, &ws_bytes);
            CHECK_OK(sbn_elemt(&x.view, &p[0].view, &p[1].view, &p[2].view, &p[3].view,
                               &y0.view, ws, ws_bytes, NULL));
            for (t = 1; t <= 3; t++) {
                sbn_pool_t *pool = tsup_pool(t);
                tsup_buf y = tsup_make_view(dts[di].y, sh.rank, sh.d, (tsup_layout)(1 - xl), NULL);
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

static const sbn_test_case k_cases[] = {
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

SBN_TEST_MAIN(k_cases)
