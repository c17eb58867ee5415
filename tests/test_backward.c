/*
 * test_backward.c - sbn_backward_reduce and sbn_backward_elemt against the double
 * oracle (ref_backward_reduce, ref_backward_elemt). The matrix crosses shapes
 * (ranks 2..8, C = 1, 3, 64, N = 1, R = 1..1000), x and dy layouts (channels-first,
 * channels-last, strided, each against each), grad_input in a third layout or
 * in place over dy, dtype sets (f32, f64, f16, bf16, f16/bf16 activations with f32
 * per-channel tensors), weight present or absent, count = R or a larger global
 * count (other ranks' samples), serial or pooled. Also: all 16 combinations of
 * backward_reduce's optional outputs; empty x (reduce gives zeros, elemt writes
 * nothing); per channel sum(grad_input) ~ 0 when the sums come from the same batch
 * and count = R; a central-difference gradient check of ref_bn_loss in f64 on tiny
 * shapes against both sbn_batch_norm_backward (training) and backward_reduce +
 * backward_elemt; and bitwise equality for pool NULL/1/2/3 on a many-chunk shape.
 * Tolerances: output rounding (2 unit roundoffs of the output dtype times |want|)
 * plus a few unit roundoffs of the compute precision (f64 only when every tensor is
 * f64, else f32) times the sum of the absolute values of the formula's terms.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/optest.h"
#include "syncbn/ops.h"

/* x and dy dtype, per-channel input dtype (mean, invstd, weight, sums), output dtype. */
typedef struct dtypes_t {
    sbn_dtype x, p, out;
} dtypes_t;

static const dtypes_t k_dtypes[] = {
    {SBN_F32, SBN_F32, SBN_F32}, {SBN_F64, SBN_F64, SBN_F64},   {SBN_F16, SBN_F16, SBN_F16},
    {SBN_BF16, SBN_BF16, SBN_BF16}, {SBN_F16, SBN_F32, SBN_F32}, {SBN_BF16, SBN_F32, SBN_F32},
};

enum { OUT_SUM_DY = 1, OUT_SUM_DY_XMU = 2, OUT_GRAD_WEIGHT = 4, OUT_GRAD_BIAS = 8 };

typedef struct bw_spec {
    const tsup_shape *shape;
    dtypes_t dt;
    tsup_layout xl, dyl, gil, pl; /* x, dy, grad_input, per-channel views */
    int has_w, in_place, mask;    /* mask: backward_reduce outputs (OUT_*) */
    int64_t count_mult;           /* count = R * count_mult */
    sbn_pool_t *pool;
} bw_spec;

/* Inputs of one run as logical doubles (rounded to their dtypes) and as views. */
typedef struct bw_data {
    int64_t n, c, s, numel;
    double *xv, *dyv, *pv[3]; /* pv: mean, invstd, weight */
    tsup_buf x, dy, p[3];
} bw_data;

static void describe(const bw_spec *sp, char *buf, size_t size)
{
    char shs[96];
    tsup_shape_str(sp->shape->rank, sp->shape->d, shs, sizeof shs);
    snprintf(buf, size,
             "%s x/dy %s (x %s, dy %s), params %s %s, out %s, grad_input %s, w=%d mask=%d "
             "count=R*%lld pool=%d",
             shs, sbn_dtype_name(sp->dt.x), tsup_layout_name(sp->xl), tsup_layout_name(sp->dyl),
             sbn_dtype_name(sp->dt.p), tsup_layout_name(sp->pl), sbn_dtype_name(sp->dt.out),
             sp->in_place ? "in place over dy" : tsup_layout_name(sp->gil), sp->has_w, sp->mask,
             (long long)sp->count_mult, sbn_pool_threads(sp->pool));
}

/* x ~ N(0.5, 2), dy ~ N(0.1, 1), mean near the data mean, invstd near 1/2, w signed. */
static void data_make(const bw_spec *sp, uint64_t seed, bw_data *d)
{
    const tsup_shape *sh = sp->shape;
    tsup_rng rng = tsup_rng_seed(seed);
    int64_t ch;
    int k;
    memset(d, 0, sizeof *d);
    tsup_split_ncs(sh->rank, sh->d, &d->n, &d->c, &d->s);
    d->numel = tsup_numel(sh->rank, sh->d);
    d->xv = tsup_alloc_fill(d->numel, 0.0);
    d->dyv = tsup_alloc_fill(d->numel, 0.0);
    tsup_fill_normal(&rng, d->xv, d->numel, 0.5, 2.0, sp->dt.x);
    tsup_fill_normal(&rng, d->dyv, d->numel, 0.1, 1.0, sp->dt.x);
    for (k = 0; k < 3; k++) d->pv[k] = tsup_alloc_fill(d->c, 0.0);
    for (ch = 0; ch < d->c; ch++) {
        d->pv[0][ch] = tsup_round(sp->dt.p, 0.5 + 0.5 * tsup_normal(&rng));
        d->pv[1][ch] = tsup_round(sp->dt.p, 0.25 + 0.5 * tsup_uniform(&rng));
        d->pv[2][ch] = tsup_round(sp->dt.p, tsup_normal(&rng));
    }
    d->x = tsup_make_view(sp->dt.x, sh->rank, sh->d, sp->xl, d->xv);
    d->dy = tsup_make_view(sp->dt.x, sh->rank, sh->d, sp->dyl, d->dyv);
    for (k = 0; k < 3; k++) d->p[k] = tsup_make_view(sp->dt.p, 1, &d->c, sp->pl, d->pv[k]);
}

static void data_free(bw_data *d)
{
    int k;
    for (k = 0; k < 3; k++) {
        tsup_free(&d->p[k]);
        free(d->pv[k]);
    }
    tsup_free(&d->x);
    tsup_free(&d->dy);
    free(d->xv);
    free(d->dyv);
}

/* backward_reduce with the outputs in sp->mask, each checked against the oracle. */
static void check_reduce(const bw_spec *sp, bw_data *d)
{
    int64_t c = d->c, i;
    double u_c = tsup_compute_u(sp->dt.x, sp->dt.p, sp->dt.out);
    double u_o = tsup_unit_roundoff(sp->dt.out);
    double *want[4], *tol[4], *got = tsup_alloc_fill(c, 0.0), *nanv = tsup_alloc_fill(c, NAN);
    double *abs_dy = tsup_alloc_fill(c, 0.0), *abs_dyxmu = tsup_alloc_fill(c, 0.0);
    static const char *names[4] = {"sum_dy", "sum_dy_xmu", "grad_weight", "grad_bias"};
    tsup_buf out[4];
    unsigned char *xsnap = tsup_snapshot(&d->x), *dysnap = tsup_snapshot(&d->dy);
    size_t ws_bytes;
    void *ws = tsup_workspace(sbn_backward_reduce_workspace_size, &d->x.view, &ws_bytes);
    char desc[400];
    int k;

    describe(sp, desc, sizeof desc);
    for (k = 0; k < 4; k++) {
        want[k] = tsup_alloc_fill(c, 0.0);
        tol[k] = tsup_alloc_fill(c, 0.0);
        out[k] = tsup_make_view(sp->dt.out, 1, &c, sp->pl, nanv);
    }
    CHECK_OK(sbn_backward_reduce(&d->dy.view, &d->x.view, &d->p[0].view, &d->p[1].view,
                                 sp->mask & OUT_SUM_DY ? &out[0].view : NULL,
                                 sp->mask & OUT_SUM_DY_XMU ? &out[1].view : NULL,
                                 sp->mask & OUT_GRAD_WEIGHT ? &out[2].view : NULL,
                                 sp->mask & OUT_GRAD_BIAS ? &out[3].view : NULL, ws, ws_bytes,
                                 sp->pool));

    ref_backward_reduce(d->dyv, d->xv, d->n, c, d->s, d->pv[0], want[0], want[1]);
    for (i = 0; i < d->numel; i++) {
        int64_t ch = (i / d->s) % c;
        abs_dy[ch] += fabs(d->dyv[i]);
        abs_dyxmu[ch] += fabs(d->dyv[i]) * (fabs(d->xv[i] - d->pv[0][ch]) + fabs(d->pv[0][ch]));
    }
    for (i = 0; i < c; i++) {
        want[2][i] = want[1][i] * d->pv[1][i];
        want[3][i] = want[0][i];
        tol[0][i] = tol[3][i] = 4.0 * u_c * abs_dy[i];
        tol[1][i] = 4.0 * u_c * abs_dyxmu[i];
        tol[2][i] = 4.0 * u_c * abs_dyxmu[i] * d->pv[1][i];
    }
    for (k = 0; k < 4; k++) {
        for (i = 0; i < c; i++) tol[k][i] += 2.0 * u_o * fabs(want[k][i]);
        if (!(sp->mask & (1 << k))) continue;
        tsup_read(&out[k].view, got);
        CHECK_MSG(tsup_close_tol(names[k], got, want[k], tol[k], c),
                  "%s: backward_reduce %s differs", desc, names[k]);
        CHECK_MSG(tsup_guard_intact(&out[k]), "%s: write outside %s", desc, names[k]);
    }
    CHECK_MSG(tsup_unchanged(&d->x, xsnap) && tsup_unchanged(&d->dy, dysnap),
              "%s: backward_reduce modified x or dy", desc);
    for (k = 0; k < 4; k++) {
        tsup_free(&out[k]);
        free(want[k]);
        free(tol[k]);
    }
    TSUP_FREE_ALL(got, nanv, abs_dy, abs_dyxmu, xsnap, dysnap, ws);
}

/*
 * backward_elemt with count = R * count_mult and sums scaled to that count (as if
 * other ranks contributed similar batches), grad_input in its own view or over dy.
 */
static void check_elemt(const bw_spec *sp, bw_data *d, uint64_t seed)
{
    int64_t c = d->c, numel = d->numel, r = d->n * d->s, count = r * sp->count_mult, i;
    double u_c = tsup_compute_u(sp->dt.x, sp->dt.p, sp->dt.out);
    double *sd = tsup_alloc_fill(c, 0.0), *sdx = tsup_alloc_fill(c, 0.0);
    double *want = tsup_alloc_fill(numel, 0.0);
    double *tol = tsup_alloc_fill(numel, 0.0), *got = tsup_alloc_fill(numel, 0.0);
    double *nanv = tsup_alloc_fill(numel, NAN), *w = sp->has_w ? d->pv[2] : NULL;
    sbn_dtype gdt = sp->in_place ? sp->dt.x : sp->dt.out;
    tsup_rng rng = tsup_rng_seed(seed);
    tsup_buf sums[2], gbuf, *gi;
    unsigned char *xsnap = tsup_snapshot(&d->x);
    size_t ws_bytes;
    void *ws = tsup_workspace(sbn_backward_elemt_workspace_size, &d->x.view, &ws_bytes);
    char desc[400];

    describe(sp, desc, sizeof desc);
    ref_backward_reduce(d->dyv, d->xv, d->n, c, d->s, d->pv[0], sd, sdx);
    for (i = 0; i < c; i++) {
        double extra = sqrt((double)(count - r));
        sd[i] = tsup_round(sp->dt.p, sd[i] * (double)sp->count_mult + extra * tsup_normal(&rng));
        sdx[i] = tsup_round(sp->dt.p, sdx[i] * (double)sp->count_mult +
                                          2.0 * extra * tsup_normal(&rng));
    }
    sums[0] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, sd);
    sums[1] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, sdx);
    if (sp->in_place) {
        gi = &d->dy;
    } else {
        gbuf = tsup_make_view(gdt, sp->shape->rank, sp->shape->d, sp->gil, nanv);
        gi = &gbuf;
    }
    CHECK_OK(sbn_backward_elemt(&d->dy.view, &d->x.view, &d->p[0].view, &d->p[1].view,
                                sp->has_w ? &d->p[2].view : NULL, &sums[0].view, &sums[1].view,
                                count, &gi->view, ws, ws_bytes, sp->pool));

    ref_backward_elemt(d->dyv, d->xv, d->n, c, d->s, d->pv[0], d->pv[1], w, sd, sdx,
                       (double)count, want);
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / d->s) % c;
        double is = d->pv[1][ch], wc = w ? w[ch] : 1.0, nn = (double)count;
        double terms = fabs(d->dyv[i]) + fabs(sd[ch] / nn) +
                       fabs((d->xv[i] - d->pv[0][ch]) * is * is * sdx[ch] / nn);
        tol[i] = 2.0 * tsup_unit_roundoff(gdt) * fabs(want[i]) + 6.0 * u_c * terms * fabs(is * wc) +
                 (gdt == SBN_F16 ? ldexp(1.0, -24) : 0.0);
    }
    tsup_read(&gi->view, got);
    CHECK_MSG(tsup_close_tol("grad_input", got, want, tol, numel), "%s: backward_elemt differs",
              desc);
    CHECK_MSG(tsup_guard_intact(gi), "%s: write outside grad_input", desc);
    CHECK_MSG(tsup_unchanged(&d->x, xsnap), "%s: backward_elemt modified x", desc);
    if (!sp->in_place) tsup_free(&gbuf);
    tsup_free(&sums[0]);
    tsup_free(&sums[1]);
    TSUP_FREE_ALL(sd, sdx, want, tol, got, nanv, xsnap, ws);
}

/*
 * The matrix for one dtype set: every shape, x layout and dy layout. grad_input's
 * layout, in-place, weight, the per-channel layout, count and pool cycle with the
 * run index.
 */
static void run_matrix(int dt_index)
{
    static const int64_t mults[3] = {1, 2, 5};
    sbn_pool_t *pool3 = tsup_pool(3);
    int si, xl, dyl, run = 0;
    CHECK_MSG(pool3 != NULL, "sbn_pool_create(3) failed: %s", sbn_last_error());
    for (si = 0; si < TSUP_N_MATRIX_SHAPES; si++) {
        for (xl = 0; xl < 3; xl++) {
            for (dyl = 0; dyl < 3; dyl++, run++) {
                bw_spec sp;
                bw_data d;
                uint64_t seed = (uint64_t)(1000 * dt_index + run);
                memset(&sp, 0, sizeof sp);
                sp.shape = &tsup_matrix_shapes[si];
                sp.dt = k_dtypes[dt_index];
                sp.xl = (tsup_layout)xl;
                sp.dyl = (tsup_layout)dyl;
                sp.gil = (tsup_layout)((xl + dyl + run) % 3);
                sp.pl = (run / 2) % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
                sp.has_w = run % 2;
                sp.in_place = run % 4 == 3;
                sp.mask = 15;
                sp.count_mult = mults[run % 3];
                sp.pool = (run / 3) % 2 ? pool3 : NULL;
                data_make(&sp, seed, &d);
                check_reduce(&sp, &d);
                RETURN_IF_FAILED();
                check_elemt(&sp, &d, seed);
                RETURN_IF_FAILED();
                data_free(&d);
            }
        }
    }
    sbn_pool_destroy(pool3);
}

#define MATRIX_CASE(name, index) \
    static void name(void) { run_matrix(index); }
MATRIX_CASE(backward_f32, 0)
MATRIX_CASE(backward_f64, 1)
MATRIX_CASE(backward_f16, 2)
MATRIX_CASE(backward_bf16, 3)
MATRIX_CASE(backward_f16_params_f32, 4)
MATRIX_CASE(backward_bf16_params_f32, 5)

/* Every on/off combination of backward_reduce's four outputs. */
static void backward_reduce_output_masks(void)
{
    static const tsup_shape sh = {3, {2, 3, 17}};
    static const dtypes_t dts[2] = {{SBN_F32, SBN_F32, SBN_F32}, {SBN_F16, SBN_F32, SBN_F16}};
    int mask, di;
    for (di = 0; di < 2; di++) {
        for (mask = 0; mask < 16; mask++) {
            bw_spec sp;
            bw_data d;
            memset(&sp, 0, sizeof sp);
            sp.shape = &sh;
            sp.dt = dts[di];
            sp.xl = TSUP_CHANNELS_LAST;
            sp.dyl = TSUP_STRIDED;
            sp.pl = mask % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
            sp.mask = mask;
            sp.count_mult = 1;
            data_make(&sp, (uint64_t)(300 + mask), &d);
            check_reduce(&sp, &d);
            RETURN_IF_FAILED();
            data_free(&d);
        }
    }
}

/* Empty x: backward_reduce writes zeros, backward_elemt writes nothing; both SBN_OK. */
static void run_empty(void)
{
    static const tsup_shape shapes[] = {{3, {0, 3, 4}}, {4, {2, 3, 0, 5}}, {2, {0, 64}}};
    double fill[64];
    int si, xl, k;
    for (k = 0; k < 64; k++) fill[k] = 0.5 + 0.25 * k;
    for (si = 0; si < 3; si++) {
        for (xl = 0; xl < 3; xl++) {
            const tsup_shape *sh = &shapes[si];
            int64_t c = sh->d[1], ch;
            tsup_buf x = tsup_make_view(SBN_F32, sh->rank, sh->d, (tsup_layout)xl, NULL);
            tsup_buf dy =
                tsup_make_view(SBN_F32, sh->rank, sh->d, (tsup_layout)((xl + 1) % 3), NULL);
            tsup_buf gi =
                tsup_make_view(SBN_F32, sh->rank, sh->d, (tsup_layout)((xl + 2) % 3), NULL);
            tsup_buf p = tsup_make_1d(SBN_F32, c, fill), out[4];
            unsigned char *gisnap = tsup_snapshot(&gi), *dysnap = tsup_snapshot(&dy);
            size_t ws_bytes;
            void *ws = tsup_workspace(sbn_backward_reduce_workspace_size, &x.view, &ws_bytes);
            for (k = 0; k < 4; k++) out[k] = tsup_make_1d(k % 2 ? SBN_F64 : SBN_F32, c, fill);
            sbn_status st = sbn_backward_reduce(&dy.view, &x.view, &p.view, &p.view,
                                                &out[0].view, &out[1].view, &out[2].view,
                                                &out[3].view, ws, ws_bytes, NULL);
            CHECK_MSG(st == SBN_OK, "empty shape %d x %s: backward_reduce %s (%s)", si,
                      tsup_layout_name((tsup_layout)xl), sbn_status_name(st), sbn_last_error());
            for (k = 0; k < 4; k++)
                for (ch = 0; ch < c; ch++)
                    CHECK_MSG(tsup_get1(&out[k].view, ch) == 0.0,
                              "empty shape %d layout %d: reduce output %d[%lld] = %g, want 0", si,
                              xl, k, (long long)ch, tsup_get1(&out[k].view, ch));
            free(ws);
            ws = tsup_workspace(sbn_backward_elemt_workspace_size, &x.view, &ws_bytes);
            st = sbn_backward_elemt(&dy.view, &x.view, &p.view, &p.view, &p.view, &p.view, &p.view,
                                    10, &gi.view, ws, ws_bytes, NULL);
            CHECK_MSG(st == SBN_OK, "empty shape %d x %s: backward_elemt %s (%s)", si,
                      tsup_layout_name((tsup_layout)xl), sbn_status_name(st), sbn_last_error());
            CHECK_MSG(tsup_unchanged(&gi, gisnap), "empty shape %d: grad_input written", si);
            st = sbn_backward_elemt(&dy.view, &x.view, &p.view, &p.view, NULL, &p.view, &p.view, 10,
                                    &dy.view, ws, ws_bytes, NULL);
            CHECK_MSG(st == SBN_OK, "empty shape %d x %s: in-place backward_elemt %s (%s)", si,
                      tsup_layout_name((tsup_layout)xl), sbn_status_name(st), sbn_last_error());
            CHECK_MSG(tsup_unchanged(&dy, dysnap), "empty shape %d: dy written in place", si);
            for (k = 0; k < 4; k++) tsup_free(&out[k]);
            TSUP_BUF_FREE(&x, &dy, &gi, &p);
            TSUP_FREE_ALL(gisnap, dysnap, ws);
        }
    }
}

static void backward_empty(void)
{
    run_empty();
}

static void backward_empty_zero_strides(void)
{
    tsup_set_zero_strides(1);
    run_empty();
}

/*
 * With mean/invstd of this batch (oracle, f64 views), the library's own sums and
 * count = R, every channel of grad_input sums to ~0:
 * |sum| <= 16 R u max_i (|dy| + |sum_dy/R| + |(x-mean) invstd^2 sum_dy_xmu/R|) |invstd w|.
 */
static void backward_grad_input_sums_to_zero(void)
{
    static const tsup_shape shapes[] = {{3, {4, 3, 50}}, {4, {2, 5, 7, 7}}, {2, {300, 2}}};
    static const sbn_dtype xdts[] = {SBN_F32, SBN_F64, SBN_F16, SBN_BF16};
    int si, di;
    for (si = 0; si < 3; si++) {
        for (di = 0; di < 4; di++) {
            bw_spec sp;
            bw_data d;
            tsup_buf sums[2], gi, st[2];
            double *mean, *invstd, *sdx, *gv, *chsum, *chmax;
            int64_t i, r, c;
            size_t wsr, wse;
            void *ws_r, *ws_e;
            memset(&sp, 0, sizeof sp);
            sp.shape = &shapes[si];
            sp.dt.x = xdts[di];
            sp.dt.p = SBN_F64;
            sp.dt.out = xdts[di] == SBN_F64 ? SBN_F64 : SBN_F32;
            sp.xl = (tsup_layout)(si % 3);
            sp.dyl = (tsup_layout)((si + di) % 3);
            data_make(&sp, (uint64_t)(40 + 4 * si + di), &d);
            c = d.c;
            r = d.n * d.s;
            mean = tsup_alloc_fill(c, 0.0);
            invstd = tsup_alloc_fill(c, 0.0);
            sdx = tsup_alloc_fill(c, 0.0);
            gv = tsup_alloc_fill(d.numel, 0.0);
            chsum = tsup_alloc_fill(c, 0.0);
            chmax = tsup_alloc_fill(c, 0.0);
            ref_stats(d.xv, d.n, c, d.s, 1e-5, mean, invstd);
            st[0] = tsup_make_1d(SBN_F64, c, mean);
            st[1] = tsup_make_1d(SBN_F64, c, invstd);
            sums[0] = tsup_make_1d(SBN_F64, c, NULL);
            sums[1] = tsup_make_1d(SBN_F64, c, NULL);
            gi = tsup_make_view(sp.dt.out, sp.shape->rank, sp.shape->d, TSUP_CHANNELS_FIRST, NULL);
            ws_r = tsup_workspace(sbn_backward_reduce_workspace_size, &d.x.view, &wsr);
            ws_e = tsup_workspace(sbn_backward_elemt_workspace_size, &d.x.view, &wse);
            CHECK_OK(sbn_backward_reduce(&d.dy.view, &d.x.view, &st[0].view, &st[1].view,
                                         &sums[0].view, &sums[1].view, NULL, NULL, ws_r, wsr,
                                         NULL));
            CHECK_OK(sbn_backward_elemt(&d.dy.view, &d.x.view, &st[0].view, &st[1].view,
                                        &d.p[2].view, &sums[0].view, &sums[1].view, r, &gi.view,
                                        ws_e, wse, NULL));
            tsup_read(&gi.view, gv);
            for (i = 0; i < c; i++) sdx[i] = tsup_get1(&sums[1].view, i);
            for (i = 0; i < d.numel; i++) {
                int64_t ch = (i / d.s) % c;
                double is = invstd[ch];
                double t = (fabs(d.dyv[i]) + fabs(tsup_get1(&sums[0].view, ch) / (double)r) +
                            fabs((d.xv[i] - mean[ch]) * is * is * sdx[ch] / (double)r)) *
                           fabs(is * d.pv[2][ch]);
                chsum[ch] += gv[i];
                if (t > chmax[ch]) chmax[ch] = t;
            }
            for (i = 0; i < c; i++) {
                double tol =
                    16.0 * (double)r * tsup_compute_u(sp.dt.x, sp.dt.p, sp.dt.out) * chmax[i];
                CHECK_MSG(fabs(chsum[i]) <= tol,
                          "x %s shape %d channel %lld: sum(grad_input) = %.3g, tol %.3g",
                          sbn_dtype_name(xdts[di]), si, (long long)i, chsum[i], tol);
            }
            TSUP_BUF_FREE(&st[0], &st[1], &sums[0], &sums[1], &gi);
            TSUP_FREE_ALL(mean, invstd, sdx, gv, chsum, chmax, ws_r, ws_e);
            data_free(&d);
        }
    }
}

/* Central difference of ref_bn_loss along v[i] (v is one of x, w, b; restored after). */
static double central_diff(double *v, int64_t i, const double *x, int64_t n, int64_t c, int64_t s,
                           const double *w, const double *b, const double *g)
{
    const double h = 1e-6;
    double keep = v[i], lp, lm;
    v[i] = keep + h;
    lp = ref_bn_loss(x, n, c, s, w, b, 1e-5, g);
    v[i] = keep - h;
    lm = ref_bn_loss(x, n, c, s, w, b, 1e-5, g);
    v[i] = keep;
    return (lp - lm) / (2.0 * h);
}

/*
 * Finite differences of L = sum(g * bn_train(x; w, b)) in f64 against the library's
 * gradients with dy = g: sbn_batch_norm_backward (training) and backward_reduce +
 * backward_elemt (count = R), with mean/invstd from sbn_batch_norm's save outputs.
 */
static void backward_finite_difference(void)
{
    static const tsup_shape shapes[] = {{3, {3, 2, 2}}, {4, {2, 3, 1, 2}}, {2, {5, 2}}};
    int si, xl, path;
    for (si = 0; si < 3; si++) {
        for (xl = 0; xl < 3; xl++) {
            const tsup_shape *sh = &shapes[si];
            bw_spec sp;
            bw_data d;
            double *bv, *fd[3], *got, fdmax = 0.0;
            tsup_buf bb, y, st[2], gr[3], sums[2];
            int64_t i, c, r, len[3];
            size_t wsb;
            void *ws;
            memset(&sp, 0, sizeof sp);
            sp.shape = sh;
            sp.dt.x = sp.dt.p = sp.dt.out = SBN_F64;
            sp.xl = (tsup_layout)xl;
            sp.dyl = (tsup_layout)((xl + 1) % 3);
            data_make(&sp, (uint64_t)(900 + 3 * si + xl), &d);
            c = d.c;
            r = d.n * d.s;
            len[0] = d.numel;
            len[1] = len[2] = c;
            bv = tsup_alloc_fill(c, 0.0);
            for (i = 0; i < c; i++) bv[i] = 0.3 * (double)i - 0.2;
            for (i = 0; i < 3; i++) fd[i] = tsup_alloc_fill(len[i], 0.0);
            for (i = 0; i < d.numel; i++)
                fd[0][i] = central_diff(d.xv, i, d.xv, d.n, c, d.s, d.pv[2], bv, d.dyv);
            for (i = 0; i < c; i++) {
                fd[1][i] = central_diff(d.pv[2], i, d.xv, d.n, c, d.s, d.pv[2], bv, d.dyv);
                fd[2][i] = central_diff(bv, i, d.xv, d.n, c, d.s, d.pv[2], bv, d.dyv);
            }
            for (path = 0; path < 3; path++)
                for (i = 0; i < len[path]; i++) fdmax = fmax(fdmax, fabs(fd[path][i]));
            bb = tsup_make_1d(SBN_F64, c, bv);
            y = tsup_make_view(SBN_F64, sh->rank, sh->d, TSUP_CHANNELS_FIRST, NULL);
            st[0] = tsup_make_1d(SBN_F64, c, NULL);
            st[1] = tsup_make_1d(SBN_F64, c, NULL);
            ws = tsup_workspace(sbn_batch_norm_workspace_size, &d.x.view, &wsb);
            CHECK_OK(sbn_batch_norm(&d.x.view, &d.p[2].view, &bb.view, 1, 0.1, 1e-5, NULL, NULL,
                                    &y.view, &st[0].view, &st[1].view, ws, wsb, NULL));
            free(ws);
            for (path = 0; path < 2; path++) {
                gr[0] = tsup_make_view(SBN_F64, sh->rank, sh->d, (tsup_layout)((xl + 2) % 3), NULL);
                gr[1] = tsup_make_1d(SBN_F64, c, NULL);
                gr[2] = tsup_make_1d(SBN_F64, c, NULL);
                if (path == 0) {
                    ws = tsup_workspace(sbn_batch_norm_backward_workspace_size, &d.x.view, &wsb);
                    CHECK_OK(sbn_batch_norm_backward(&d.dy.view, &d.x.view, &d.p[2].view, NULL,
                                                     NULL, &st[0].view, &st[1].view, 1, 1e-5,
                                                     &gr[0].view, &gr[1].view, &gr[2].view, ws,
                                                     wsb, NULL));
                    free(ws);
                } else {
                    sums[0] = tsup_make_1d(SBN_F64, c, NULL);
                    sums[1] = tsup_make_1d(SBN_F64, c, NULL);
                    ws = tsup_workspace(sbn_backward_reduce_workspace_size, &d.x.view, &wsb);
                    CHECK_OK(sbn_backward_reduce(&d.dy.view, &d.x.view, &st[0].view, &st[1].view,
                                                 &sums[0].view, &sums[1].view, &gr[1].view,
                                                 &gr[2].view, ws, wsb, NULL));
                    free(ws);
                    ws = tsup_workspace(sbn_backward_elemt_workspace_size, &d.x.view, &wsb);
                    CHECK_OK(sbn_backward_elemt(&d.dy.view, &d.x.view, &st[0].view, &st[1].view,
                                                &d.p[2].view, &sums[0].view, &sums[1].view, r,
                                                &gr[0].view, ws, wsb, NULL));
                    free(ws);
                    tsup_free(&sums[0]);
                    tsup_free(&sums[1]);
                }
                for (i = 0; i < 3; i++) {
                    static const char *names[3] = {"grad_input", "grad_weight", "grad_bias"};
                    int ok;
                    got = tsup_alloc_fill(len[i], 0.0);
                    tsup_read(&gr[i].view, got);
                    ok = tsup_close(names[i], got, fd[i], len[i], 2e-6 * fmax(1.0, fdmax), 1e-6);
                    CHECK_MSG(ok, "shape %d x %s, %s: %s differs from finite differences", si,
                              tsup_layout_name((tsup_layout)xl),
                              path ? "backward_reduce+backward_elemt" : "batch_norm_backward",
                              names[i]);
                    free(got);
                    tsup_free(&gr[i]);
                }
            }
            for (i = 0; i < 3; i++) free(fd[i]);
            TSUP_BUF_FREE(&bb, &y, &st[0], &st[1]);
            free(bv);
            data_free(&d);
        }
    }
}

/* backward_reduce and backward_elemt bytes for pool NULL, 1, 2, 3 threads on 3x5x4000. */
static void backward_threads_bitwise(void)
{
    static const tsup_shape sh = {3, {3, 5, 4000}};
    static const dtypes_t dts[2] = {{SBN_F32, SBN_F32, SBN_F64}, {SBN_BF16, SBN_F32, SBN_F32}};
    int di, xl, t, k;
    for (di = 0; di < 2; di++) {
        for (xl = 0; xl < 2; xl++) {
            bw_spec sp;
            bw_data d;
            tsup_buf base[5], cur[5]; /* sum_dy, sum_dy_xmu, grad_weight, grad_bias, grad_input */
            int64_t c, count;
            size_t wsr, wse;
            void *ws_r, *ws_e;
            memset(&sp, 0, sizeof sp);
            sp.shape = &sh;
            sp.dt = dts[di];
            sp.xl = (tsup_layout)xl;
            sp.dyl = (tsup_layout)(1 - xl);
            data_make(&sp, (uint64_t)(60 + 2 * di + xl), &d);
            c = d.c;
            count = 3 * d.n * d.s;
            ws_r = tsup_workspace(sbn_backward_reduce_workspace_size, &d.x.view, &wsr);
            ws_e = tsup_workspace(sbn_backward_elemt_workspace_size, &d.x.view, &wse);
            for (t = 0; t <= 3; t++) {
                tsup_buf *o = t == 0 ? base : cur;
                sbn_pool_t *pool = t == 0 ? NULL : tsup_pool(t);
                CHECK_MSG(t == 0 || pool != NULL, "sbn_pool_create(%d) failed", t);
                for (k = 0; k < 4; k++) o[k] = tsup_make_1d(sp.dt.out, c, NULL);
                o[4] = tsup_make_view(sp.dt.out, sh.rank, sh.d, TSUP_CHANNELS_FIRST, NULL);
                CHECK_OK(sbn_backward_reduce(&d.dy.view, &d.x.view, &d.p[0].view, &d.p[1].view,
                                             &o[0].view, &o[1].view, &o[2].view, &o[3].view,
                                             ws_r, wsr, pool));
                CHECK_OK(sbn_backward_elemt(&d.dy.view, &d.x.view, &d.p[0].view, &d.p[1].view,
                                            &d.p[2].view, &o[0].view, &o[1].view, count,
                                            &o[4].view, ws_e, wse, pool));
                if (t > 0) {
                    for (k = 0; k < 5; k++) {
                        int same = tsup_same_bytes("output", o[k].alloc, base[k].alloc,
                                                   o[k].alloc_bytes);
                        CHECK_MSG(same, "x %s %s: output %d with %d threads differs from serial",
                                  sbn_dtype_name(sp.dt.x), tsup_layout_name(sp.xl), k, t);
                        tsup_free(&o[k]);
                    }
                }
                sbn_pool_destroy(pool);
            }
            for (k = 0; k < 5; k++) tsup_free(&base[k]);
            free(ws_r);
            free(ws_e);
            data_free(&d);
        }
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(backward_f32),
    SBN_TEST_CASE(backward_f64),
    SBN_TEST_CASE(backward_f16),
    SBN_TEST_CASE(backward_bf16),
    SBN_TEST_CASE(backward_f16_params_f32),
    SBN_TEST_CASE(backward_bf16_params_f32),
    SBN_TEST_CASE(backward_reduce_output_masks),
    SBN_TEST_CASE(backward_empty),
    SBN_TEST_CASE(backward_empty_zero_strides),
    SBN_TEST_CASE(backward_grad_input_sums_to_zero),
    SBN_TEST_CASE(backward_finite_difference),
    SBN_TEST_CASE(backward_threads_bitwise),
};

SBN_TEST_MAIN(k_cases)
