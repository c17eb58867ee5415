/*
 * test_batch_norm.c - sbn_batch_norm and sbn_batch_norm_backward (PyTorch
 * native_batch_norm semantics) against the double oracle. Forward training is
 * checked against ref_batch_norm_train (y, save_mean, save_invstd, running stats
 * blended with momentum and the unbiased variance), each of weight, bias,
 * running_mean, running_var, save_mean and save_invstd present or absent; eval
 * against ref_elemt with the running stats (save_* and running stats untouched).
 * R == 1 must return SBN_SINGLE_SAMPLE with running_var unchanged; empty x must
 * return SBN_NO_SAMPLES with save_mean 0, save_invstd NaN and the running stats
 * unchanged. Backward training is checked against ref_batch_norm_backward_train,
 * eval against dy*w*invstd, sum(dy*(x-rm))*invstd, sum(dy) (built from ref_backward_
 * elemt/ref_backward_reduce with zero sums), every output mask. The matrix crosses
 * shapes, layouts (y and dy in layouts other than x's), dtype sets including
 * f16/bf16 activations with f32 per-channel tensors, momentum, eps and pools; a
 * large-offset case and bitwise equality for pool NULL/1/2/3/6 close the file.
 * Tolerances: output rounding plus a few unit roundoffs of the compute precision
 * times the absolute terms of each formula, plus the double reductions' error
 * (8 R u64 relative, scaled by 1 + |mean|/std) for statistics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/optest.h"
#include "syncbn/ops.h"

/* x/dy dtype, y/grad_input dtype, per-channel dtype (w, b, running, save, grad_w/b). */
typedef struct dtypes_t {
    sbn_dtype x, y, p;
} dtypes_t;

static const dtypes_t k_dtypes[] = {
    {SBN_F32, SBN_F32, SBN_F32}, {SBN_F64, SBN_F64, SBN_F64},   {SBN_F16, SBN_F16, SBN_F32},
    {SBN_BF16, SBN_BF16, SBN_F32}, {SBN_F16, SBN_F16, SBN_F16}, {SBN_BF16, SBN_BF16, SBN_BF16},
};

/* Optional forward tensors. */
enum { OPT_W = 1, OPT_B = 2, OPT_RM = 4, OPT_RV = 8, OPT_SM = 16, OPT_SI = 32, OPT_ALL = 63 };

typedef struct bn_spec {
    const tsup_shape *shape;
    dtypes_t dt;
    tsup_layout xl, yl, pl; /* x; y (forward) or dy (backward); per-channel views */
    int training, opt, mask, extra; /* extra: backward passes the pair its mode ignores */
    double momentum, eps, x_mean, x_std;
    sbn_pool_t *pool;
} bn_spec;

typedef struct bn_data {
    int64_t n, c, s, r, numel;
    double *xv, *dyv, *pv[4]; /* weight, bias, running_mean, running_var */
    tsup_buf x, dy;
} bn_data;

static void describe(const bn_spec *sp, const char *op, char *buf, size_t size)
{
    char shs[96];
    tsup_shape_str(sp->shape->rank, sp->shape->d, shs, sizeof shs);
    snprintf(buf, size,
             "%s %s training=%d x %s %s, y/dy %s %s, params %s %s, opt=%d mask=%d extra=%d "
             "momentum=%g eps=%g x~N(%g,%g) pool=%d",
             op, shs, sp->training, sbn_dtype_name(sp->dt.x), tsup_layout_name(sp->xl),
             sbn_dtype_name(sp->dt.y), tsup_layout_name(sp->yl), sbn_dtype_name(sp->dt.p),
             tsup_layout_name(sp->pl), sp->opt, sp->mask, sp->extra, sp->momentum, sp->eps,
             sp->x_mean, sp->x_std, sbn_pool_threads(sp->pool));
}

/* x ~ N(x_mean + 0.25 (c % 4), x_std), dy ~ N(0.1, 1); w, b signed; running stats near the data's. */
static void data_make(const bn_spec *sp, uint64_t seed, bn_data *d)
{
    const tsup_shape *sh = sp->shape;
    tsup_rng rng = tsup_rng_seed(seed);
    int64_t i;
    int k;
    memset(d, 0, sizeof *d);
    tsup_split_ncs(sh->rank, sh->d, &d->n, &d->c, &d->s);
    d->r = d->n * d->s;
    d->numel = tsup_numel(sh->rank, sh->d);
    d->xv = tsup_alloc_fill(d->numel, 0.0);
    d->dyv = tsup_alloc_fill(d->numel, 0.0);
    for (i = 0; i < d->numel; i++)
        d->xv[i] = tsup_round(sp->dt.x, sp->x_mean + 0.25 * (double)((i / d->s) % d->c % 4) +
                                             sp->x_std * tsup_normal(&rng));
    tsup_fill_normal(&rng, d->dyv, d->numel, 0.1, 1.0, sp->dt.x);
    for (k = 0; k < 4; k++) d->pv[k] = tsup_alloc_fill(d->c, 0.0);
    for (i = 0; i < d->c; i++) {
        d->pv[0][i] = tsup_round(sp->dt.p, tsup_normal(&rng));
        d->pv[1][i] = tsup_round(sp->dt.p, tsup_normal(&rng));
        d->pv[2][i] = tsup_round(sp->dt.p, sp->x_mean + 0.3 * sp->x_std * tsup_normal(&rng));
        d->pv[3][i] = tsup_round(sp->dt.p, sp->x_std * sp->x_std * (0.5 + tsup_uniform(&rng)));
    }
    d->x = tsup_make_view(sp->dt.x, sh->rank, sh->d, sp->xl, d->xv);
    d->dy = tsup_make_view(sp->dt.x, sh->rank, sh->d, sp->yl, d->dyv);
}

static void data_free(bn_data *d)
{
    int k;
    for (k = 0; k < 4; k++) free(d->pv[k]);
    tsup_free(&d->x);
    tsup_free(&d->dy);
    free(d->xv);
    free(d->dyv);
}

/* Index of the per-channel outputs/inputs of the forward op in its arrays. */
enum { F_W, F_B, F_RM, F_RV, F_SM, F_SI, F_COUNT };

/* One sbn_batch_norm call checked against the oracle (training or eval). */
static void check_forward(const bn_spec *sp, bn_data *d)
{
    static const char *names[F_COUNT] = {"weight", "bias", "running_mean", "running_var",
                                         "save_mean", "save_invstd"};
    int64_t c = d->c, r = d->r, i;
    double u_c = tsup_compute_u(sp->dt.x, sp->dt.y, sp->dt.p), u_p = tsup_unit_roundoff(sp->dt.p);
    double m = sp->momentum;
    double *want[F_COUNT], *tol[F_COUNT], *wy = tsup_alloc_fill(d->numel, 0.0);
    double *ty = tsup_alloc_fill(d->numel, 0.0), *gy = tsup_alloc_fill(d->numel, NAN);
    double *var = tsup_alloc_fill(c, 0.0), *srel = tsup_alloc_fill(c, 0.0);
    double *got = tsup_alloc_fill(c, 0.0);
    double *bmean = tsup_alloc_fill(c, 0.0), *eval_is = tsup_alloc_fill(c, 0.0);
    double *mu, *is, *wv = sp->opt & OPT_W ? d->pv[0] : NULL;
    double *bv = sp->opt & OPT_B ? d->pv[1] : NULL;
    tsup_buf pb[F_COUNT], y;
    unsigned char *snap[F_COUNT], *xsnap = tsup_snapshot(&d->x), *ysnap;
    sbn_status want_status = SBN_OK, st;
    size_t ws_bytes;
    void *ws = tsup_workspace(sbn_batch_norm_workspace_size, &d->x.view, &ws_bytes);
    char desc[400];
    int k;

    describe(sp, "batch_norm", desc, sizeof desc);
    for (k = 0; k < F_COUNT; k++) {
        want[k] = tsup_alloc_fill(c, 3.0); /* save_* start at 3: eval must leave them so */
        tol[k] = tsup_alloc_fill(c, 0.0);
        if (k < F_SM) memcpy(want[k], d->pv[k], (size_t)c * sizeof(double));
        pb[k] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, want[k]);
        snap[k] = tsup_snapshot(&pb[k]);
    }
    y = tsup_make_view(sp->dt.y, sp->shape->rank, sp->shape->d, sp->yl, gy);
    ysnap = tsup_snapshot(&y);
#define OPT_VIEW(bit, k) (sp->opt & (bit) ? &pb[k].view : NULL)
    st = sbn_batch_norm(&d->x.view, OPT_VIEW(OPT_W, F_W), OPT_VIEW(OPT_B, F_B), sp->training,
                        m, sp->eps, OPT_VIEW(OPT_RM, F_RM), OPT_VIEW(OPT_RV, F_RV), &y.view,
                        OPT_VIEW(OPT_SM, F_SM), OPT_VIEW(OPT_SI, F_SI), ws, ws_bytes, sp->pool);
#undef OPT_VIEW

    /* Expected values and tolerances. */
    ref_mean_var(d->xv, d->n, c, d->s, bmean, var);
    if (sp->training) {
        want_status = r == 0 ? SBN_NO_SAMPLES : r == 1 ? SBN_SINGLE_SAMPLE : SBN_OK;
        ref_batch_norm_train(d->xv, d->n, c, d->s, wv, bv, m, sp->eps, wy, want[F_SM],
                             want[F_SI], want[F_RM], want[F_RV]);
        mu = want[F_SM];
        is = want[F_SI];
        for (i = 0; i < c && r > 0; i++)
            srel[i] = 8.0 * (double)r * tsup_unit_roundoff(SBN_F64) *
                      (1.0 + fabs(bmean[i]) / sqrt(var[i] + sp->eps));
    } else {
        for (i = 0; i < c; i++) eval_is[i] = 1.0 / sqrt(d->pv[3][i] + sp->eps);
        mu = want[F_RM];
        is = eval_is;
        ref_elemt(d->xv, d->n, c, d->s, mu, is, wv, bv, wy);
    }
    for (i = 0; i < d->numel; i++) {
        int64_t ch = (i / d->s) % c;
        double w = wv ? wv[ch] : 1.0, b = bv ? bv[ch] : 0.0;
        double xw = fabs((d->xv[i] - mu[ch]) * is[ch] * w), mw = fabs(mu[ch] * is[ch] * w);
        ty[i] = 2.0 * tsup_unit_roundoff(sp->dt.y) * fabs(wy[i]) + tsup_abs_floor(sp->dt.y) +
                4.0 * u_c * (fabs(b) + xw + mw) + srel[ch] * (xw + mw);
    }
    for (i = 0; i < c; i++) {
        double sd = r > 0 ? sqrt(var[i] + sp->eps) : 0.0;
        double vu = r > 1 ? var[i] * (double)r / (double)(r - 1) : 0.0;
        tol[F_SM][i] = srel[i] * sd;
        tol[F_SI][i] = srel[i] * fabs(want[F_SI][i]);
        tol[F_RM][i] = 4.0 * u_p * (fabs((1.0 - m) * d->pv[2][i]) + fabs(m * bmean[i])) +
                       m * srel[i] * sd;
        tol[F_RV][i] = 4.0 * u_p * (fabs((1.0 - m) * d->pv[3][i]) + fabs(m * vu)) +
                       2.0 * m * vu * srel[i];
        for (k = F_RM; k < F_COUNT; k++) tol[k][i] += 2.0 * u_p * fabs(want[k][i]);
    }
    if (!sp->training && r == 0 && st == SBN_NO_SAMPLES) want_status = st; /* either is fine */
    CHECK_MSG(st == want_status, "%s: returned %s, expected %s (%s)", desc, sbn_status_name(st),
              sbn_status_name(want_status), sbn_last_error());

    tsup_read(&y.view, gy);
    CHECK_MSG(tsup_close_tol("y", gy, wy, ty, d->numel), "%s: y differs", desc);
    CHECK_MSG(tsup_guard_intact(&y), "%s: write outside y", desc);
    CHECK_MSG(d->numel > 0 || tsup_unchanged(&y, ysnap), "%s: empty y written", desc);
    CHECK_MSG(tsup_unchanged(&d->x, xsnap), "%s: x modified", desc);
    for (k = 0; k < F_COUNT; k++) {
        int present = (sp->opt >> k) & 1, frozen;
        if (!present) continue;
        /* Inputs, eval's running/save tensors, and running_var at R <= 1 keep their bytes. */
        frozen = k <= F_B || (!sp->training && k >= F_RM) || (k == F_RV && r <= 1) ||
                 (k == F_RM && r == 0);
        if (frozen) {
            CHECK_MSG(tsup_unchanged(&pb[k], snap[k]), "%s: %s modified", desc, names[k]);
            continue;
        }
        tsup_read(&pb[k].view, got);
        CHECK_MSG(tsup_close_tol(names[k], got, want[k], tol[k], c), "%s: %s differs", desc,
                  names[k]);
        CHECK_MSG(tsup_guard_intact(&pb[k]), "%s: write outside %s", desc, names[k]);
    }

    for (k = 0; k < F_COUNT; k++) {
        tsup_free(&pb[k]);
        TSUP_FREE_ALL(snap[k], want[k], tol[k]);
    }
    tsup_free(&y);
    TSUP_FREE_ALL(ysnap, xsnap, wy, ty, gy, var, srel, bmean, eval_is, got, ws);
}

/*
 * One sbn_batch_norm_backward call with the outputs in sp->mask. Training uses
 * save_mean/save_invstd of this batch (oracle, rounded to the per-channel dtype);
 * eval uses the running stats. With sp->extra the pair the mode ignores is passed too.
 */
static void check_backward(const bn_spec *sp, bn_data *d)
{
    static const char *names[3] = {"grad_input", "grad_weight", "grad_bias"};
    int64_t c = d->c, r = d->r, numel = d->numel, i;
    double u_c = tsup_compute_u(sp->dt.x, sp->dt.y, sp->dt.p), u_p = tsup_unit_roundoff(sp->dt.p);
    double *sm = tsup_alloc_fill(c, 0.0), *si = tsup_alloc_fill(c, 0.0), *mu, *is;
    double *want[3], *tol[3], *got = tsup_alloc_fill(numel, 0.0);
    double *nanv = tsup_alloc_fill(numel, NAN);
    double *zeros = tsup_alloc_fill(c, 0.0), *absdy = tsup_alloc_fill(c, 0.0);
    double *absdx = tsup_alloc_fill(c, 0.0);
    double *wv = sp->opt & OPT_W ? d->pv[0] : NULL;
    int64_t len[3];
    tsup_buf in[5], out[3]; /* in: weight, running_mean, running_var, save_mean, save_invstd */
    unsigned char *xsnap = tsup_snapshot(&d->x), *dysnap = tsup_snapshot(&d->dy);
    size_t ws_bytes;
    void *ws = tsup_workspace(sbn_batch_norm_backward_workspace_size, &d->x.view, &ws_bytes);
    char desc[400];
    int k, use[5];

    describe(sp, "batch_norm_backward", desc, sizeof desc);
    ref_stats(d->xv, d->n, c, d->s, sp->eps, sm, si);
    for (i = 0; i < c; i++) {
        sm[i] = tsup_round(sp->dt.p, sm[i]);
        si[i] = tsup_round(sp->dt.p, si[i]);
    }
    in[0] = tsup_make_1d(sp->dt.p, c, d->pv[0]);
    in[1] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, d->pv[2]);
    in[2] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, d->pv[3]);
    in[3] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, sm);
    in[4] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, si);
    use[0] = wv != NULL;
    use[1] = use[2] = !sp->training || sp->extra;
    use[3] = use[4] = sp->training || sp->extra;
    len[0] = numel;
    len[1] = len[2] = c;
    for (k = 0; k < 3; k++) {
        want[k] = tsup_alloc_fill(len[k], 0.0);
        tol[k] = tsup_alloc_fill(len[k], 0.0);
    }
    out[0] = tsup_make_view(sp->dt.y, sp->shape->rank, sp->shape->d,
                            (tsup_layout)((sp->xl + 1) % 3), nanv);
    out[1] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, nanv);
    out[2] = tsup_make_view(sp->dt.p, 1, &c, sp->pl, nanv);
#define IN_VIEW(k) (use[k] ? &in[k].view : NULL)
#define OUT_VIEW(k) (sp->mask & (1 << (k)) ? &out[k].view : NULL)
    CHECK_OK(sbn_batch_norm_backward(&d->dy.view, &d->x.view, IN_VIEW(0), IN_VIEW(1), IN_VIEW(2),
                                     IN_VIEW(3), IN_VIEW(4), sp->training, sp->eps, OUT_VIEW(0),
                                     OUT_VIEW(1), OUT_VIEW(2), ws, ws_bytes, sp->pool));
#undef IN_VIEW
#undef OUT_VIEW

    if (sp->training) {
        mu = sm;
        is = si;
        ref_batch_norm_backward_train(d->dyv, d->xv, d->n, c, d->s, wv, mu, is, want[0], want[1],
                                      want[2]);
    } else {
        mu = d->pv[2];
        is = sm; /* reused: the eval invstd from running_var */
        for (i = 0; i < c; i++) is[i] = 1.0 / sqrt(d->pv[3][i] + sp->eps);
        ref_backward_elemt(d->dyv, d->xv, d->n, c, d->s, mu, is, wv, zeros, zeros, 1.0, want[0]);
        ref_backward_reduce(d->dyv, d->xv, d->n, c, d->s, mu, want[2], want[1]);
        for (i = 0; i < c; i++) want[1][i] *= is[i];
    }
    /* absdx: sum |dy| (|xhat| + |mean invstd|), the size of sum(dy xhat)'s terms. */
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / d->s) % c;
        absdy[ch] += fabs(d->dyv[i]);
        absdx[ch] += fabs(d->dyv[i]) * (fabs((d->xv[i] - mu[ch]) * is[ch]) + fabs(mu[ch] * is[ch]));
    }
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / d->s) % c;
        double wis = fabs((wv ? wv[ch] : 1.0) * is[ch]), t = fabs(d->dyv[i]);
        if (sp->training)
            t += absdy[ch] / (double)r + (fabs((d->xv[i] - mu[ch]) * is[ch]) +
                                          fabs(mu[ch] * is[ch])) * absdx[ch] / (double)r;
        tol[0][i] = 2.0 * tsup_unit_roundoff(sp->dt.y) * fabs(want[0][i]) + 8.0 * u_c * wis * t +
                    tsup_abs_floor(sp->dt.y);
    }
    for (i = 0; i < c; i++) {
        tol[1][i] = 2.0 * u_p * fabs(want[1][i]) + 4.0 * u_c * absdx[i];
        tol[2][i] = 2.0 * u_p * fabs(want[2][i]) + 4.0 * u_c * absdy[i];
    }
    for (k = 0; k < 3; k++) {
        if (!(sp->mask & (1 << k))) continue;
        tsup_read(&out[k].view, got);
        CHECK_MSG(tsup_close_tol(names[k], got, want[k], tol[k], len[k]), "%s: %s differs", desc,
                  names[k]);
        CHECK_MSG(tsup_guard_intact(&out[k]), "%s: write outside %s", desc, names[k]);
    }
    CHECK_MSG(tsup_unchanged(&d->x, xsnap) && tsup_unchanged(&d->dy, dysnap),
              "%s: x or dy modified", desc);
    for (k = 0; k < 5; k++) tsup_free(&in[k]);
    for (k = 0; k < 3; k++) {
        tsup_free(&out[k]);
        free(want[k]);
        free(tol[k]);
    }
    TSUP_FREE_ALL(sm, si, got, nanv, zeros, absdy, absdx, xsnap, dysnap, ws);
}

/* Builds the data for sp, runs the forward and/or backward checks, frees it. */
static void run_spec(const bn_spec *sp, uint64_t seed, int forward, int backward)
{
    bn_data d;
    data_make(sp, seed, &d);
    if (forward) check_forward(sp, &d);
    RETURN_IF_FAILED();
    if (backward) check_backward(sp, &d);
    RETURN_IF_FAILED();
    data_free(&d);
}

/*
 * The matrix for one dtype set: every shape, x layout and y/dy layout, forward
 * and backward, training and eval. Optional tensors, masks, momentum, eps, the
 * per-channel layout and the pool cycle with the run index.
 */
static void run_matrix(int dt_index)
{
    static const double momenta[3] = {0.1, 0.5, 1.0}, epsilons[2] = {1e-5, 1e-3};
    sbn_pool_t *pool2 = tsup_pool(2);
    int si, xl, yl, training, run = 0;
    CHECK_MSG(pool2 != NULL, "sbn_pool_create(2) failed: %s", sbn_last_error());
    for (si = 0; si < TSUP_N_MATRIX_SHAPES; si++) {
        for (xl = 0; xl < 3; xl++) {
            for (yl = 0; yl < 3; yl++) {
                for (training = 1; training >= 0; training--, run++) {
                    bn_spec sp;
                    memset(&sp, 0, sizeof sp);
                    sp.shape = &tsup_matrix_shapes[si];
                    sp.dt = k_dtypes[dt_index];
                    sp.xl = (tsup_layout)xl;
                    sp.yl = (tsup_layout)yl;
                    sp.pl = (run / 3) % 2 ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
                    sp.training = training;
                    sp.opt = (run * 37) % 64 | (training ? 0 : OPT_RM | OPT_RV);
                    sp.mask = 1 + run % 7;
                    sp.extra = (run / 2) % 2;
                    sp.momentum = momenta[run % 3];
                    sp.eps = epsilons[(run / 5) % 2];
                    sp.x_mean = 0.5;
                    sp.x_std = 2.0;
                    sp.pool = run % 4 == 1 ? pool2 : NULL;
                    run_spec(&sp, (uint64_t)(1000 * dt_index + run), 1, 1);
                    RETURN_IF_FAILED();
                }
            }
        }
    }
    sbn_pool_destroy(pool2);
}

#define MATRIX_CASE(name, index) \
    static void name(void) { run_matrix(index); }
MATRIX_CASE(batch_norm_f32, 0)
MATRIX_CASE(batch_norm_f64, 1)
MATRIX_CASE(batch_norm_f16_params_f32, 2)
MATRIX_CASE(batch_norm_bf16_params_f32, 3)
MATRIX_CASE(batch_norm_f16, 4)
MATRIX_CASE(batch_norm_bf16, 5)

/* A spec with every optional tensor, f32 throughout, channels-first x and strided y. */
static bn_spec base_spec(const tsup_shape *sh, int training)
{
    bn_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.shape = sh;
    sp.dt.x = sp.dt.y = sp.dt.p = SBN_F32;
    sp.xl = TSUP_CHANNELS_FIRST;
    sp.yl = TSUP_STRIDED;
    sp.training = training;
    sp.opt = OPT_ALL;
    sp.mask = 7;
    sp.momentum = 0.1;
    sp.eps = 1e-5;
    sp.x_mean = 0.5;
    sp.x_std = 2.0;
    return sp;
}

/* All 64 presence combinations of the forward's optional tensors (training), and eval's 16. */
static void batch_norm_optional_tensors(void)
{
    static const tsup_shape sh = {4, {2, 3, 5, 3}};
    int opt, training;
    for (training = 1; training >= 0; training--) {
        for (opt = 0; opt < 64; opt++) {
            bn_spec sp = base_spec(&sh, training);
            sp.opt = opt;
            if (!training && (opt & (OPT_RM | OPT_RV)) != (OPT_RM | OPT_RV)) continue;
            sp.dt.p = opt % 3 == 0 ? SBN_F64 : SBN_F32;
            run_spec(&sp, (uint64_t)(100 + opt), 1, 0);
            RETURN_IF_FAILED();
        }
    }
}

/* Every grad mask (0..7) of the backward, training and eval, with and without weight. */
static void batch_norm_backward_masks(void)
{
    static const tsup_shape sh = {3, {3, 4, 9}};
    int mask, training, w;
    for (training = 1; training >= 0; training--) {
        for (mask = 0; mask < 8; mask++) {
            for (w = 0; w < 2; w++) {
                bn_spec sp = base_spec(&sh, training);
                sp.mask = mask;
                sp.opt = w ? OPT_W : 0;
                sp.extra = w;
                sp.yl = TSUP_CHANNELS_LAST;
                run_spec(&sp, (uint64_t)(200 + 16 * training + 2 * mask + w), 0, 1);
                RETURN_IF_FAILED();
            }
        }
    }
}

/* R == 1: SBN_SINGLE_SAMPLE, y = b, running_mean blended, running_var unchanged. */
static void batch_norm_single_sample(void)
{
    static const tsup_shape shapes[] = {{2, {1, 3}}, {4, {1, 4, 1, 1}}, {3, {1, 64, 1}}};
    int si, di;
    for (si = 0; si < 3; si++) {
        for (di = 0; di < 3; di++) {
            bn_spec sp = base_spec(&shapes[si], 1);
            sp.dt = k_dtypes[di];
            sp.xl = (tsup_layout)di;
            run_spec(&sp, (uint64_t)(400 + 3 * si + di), 1, 1);
            RETURN_IF_FAILED();
        }
    }
}

/*
 * Empty x: training returns SBN_NO_SAMPLES with save_mean 0 and save_invstd NaN,
 * running stats and y untouched; eval writes nothing; backward writes no grad_input
 * and leaves grad_weight/grad_bias either untouched or zero.
 */
static void run_empty(void)
{
    static const tsup_shape shapes[] = {{3, {0, 3, 4}}, {4, {2, 3, 0, 5}}, {2, {0, 64}}};
    int si, xl, training, k;
    for (si = 0; si < 3; si++) {
        for (xl = 0; xl < 3; xl++) {
            for (training = 1; training >= 0; training--) {
                bn_spec sp = base_spec(&shapes[si], training);
                bn_data d;
                int64_t c = shapes[si].d[1], ch;
                double ones[64];
                tsup_buf p, gi, g[2];
                unsigned char *gisnap;
                size_t wsb;
                void *ws;
                sp.xl = (tsup_layout)xl;
                sp.yl = (tsup_layout)((xl + 1) % 3);
                data_make(&sp, 7, &d);
                check_forward(&sp, &d);
                RETURN_IF_FAILED();
                for (ch = 0; ch < 64; ch++) ones[ch] = 1.0;
                p = tsup_make_1d(SBN_F32, c, ones);
                g[0] = tsup_make_1d(SBN_F32, c, ones);
                g[1] = tsup_make_1d(SBN_F32, c, ones);
                gi = tsup_make_view(SBN_F32, shapes[si].rank, shapes[si].d, sp.yl, NULL);
                gisnap = tsup_snapshot(&gi);
                ws = tsup_workspace(sbn_batch_norm_backward_workspace_size, &d.x.view, &wsb);
                CHECK_MSG(!SBN_FAILED(sbn_batch_norm_backward(
                              &d.dy.view, &d.x.view, &p.view, &p.view, &p.view, &p.view, &p.view,
                              training, 1e-5, &gi.view, &g[0].view, &g[1].view, ws, wsb, NULL)),
                          "empty backward shape %d: %s", si, sbn_last_error());
                CHECK_MSG(tsup_unchanged(&gi, gisnap), "empty backward: grad_input written");
                for (k = 0; k < 2; k++)
                    for (ch = 0; ch < c; ch++) {
                        double v = tsup_get1(&g[k].view, ch);
                        CHECK_MSG(v == 0.0 || v == 1.0, "empty backward: grad %d[%lld] = %g", k,
                                  (long long)ch, v);
                    }
                TSUP_BUF_FREE(&p, &g[0], &g[1], &gi);
                free(gisnap);
                free(ws);
                data_free(&d);
            }
        }
    }
}

static void batch_norm_empty(void)
{
    run_empty();
}

static void batch_norm_empty_zero_strides(void)
{
    tsup_set_zero_strides(1);
    run_empty();
}

/* Data far from zero relative to its spread (stats in double must keep the variance). */
static void batch_norm_mean_offset(void)
{
    static const tsup_shape sh = {4, {4, 3, 6, 7}};
    static const struct { dtypes_t dt; double mean, std; } rows[] = {
        {{SBN_F32, SBN_F32, SBN_F32}, 1000.0, 0.5},
        {{SBN_F64, SBN_F64, SBN_F64}, 1.0e6, 0.25},
        {{SBN_F16, SBN_F16, SBN_F32}, 100.0, 1.0},
        {{SBN_BF16, SBN_F32, SBN_F32}, 300.0, 8.0},
    };
    int k, training;
    for (k = 0; k < 4; k++) {
        for (training = 1; training >= 0; training--) {
            bn_spec sp = base_spec(&sh, training);
            sp.dt = rows[k].dt;
            sp.x_mean = rows[k].mean;
            sp.x_std = rows[k].std;
            sp.xl = (tsup_layout)(k % 3);
            run_spec(&sp, (uint64_t)(600 + 2 * k + training), 1, 1);
            RETURN_IF_FAILED();
        }
    }
}

/* Every output's bytes (per-channel ones in f64) for pool NULL, 1, 2, 3 and 6 threads,
 * at R = 12000 (6 chunks: even segments of rows for 2 and 3 threads; 6 threads: more
 * segments than the row path's state slots) and R = 8400 (5 chunks, the last short:
 * segments of whole chunks would be uneven, so the channels are split instead). */
static void threads_bitwise_shape(const tsup_shape *shape, int si)
{
    static const sbn_dtype xdts[2] = {SBN_F32, SBN_BF16};
    static const int k_threads[] = {0, 1, 2, 3, 6};
    const tsup_shape sh = *shape;
    int di, xl, t, ti, k, training;
    for (di = 0; di < 2; di++) {
        for (xl = 0; xl < 2; xl++) {
            for (training = 1; training >= 0; training--) {
                bn_spec sp = base_spec(&sh, training);
                bn_data d;
                tsup_buf base[8], cur[8]; /* y, rm, rv, sm, si, gi, gw, gb */
                int64_t c;
                size_t wsf, wsb;
                void *ws_f, *ws_b;
                sp.dt.x = sp.dt.y = xdts[di];
                sp.xl = (tsup_layout)xl;
                sp.yl = (tsup_layout)(1 - xl);
                data_make(&sp, (uint64_t)(800 + 8 * si + 4 * di + 2 * xl + training), &d);
                c = d.c;
                ws_f = tsup_workspace(sbn_batch_norm_workspace_size, &d.x.view, &wsf);
                ws_b = tsup_workspace(sbn_batch_norm_backward_workspace_size, &d.x.view, &wsb);
                for (ti = 0; ti < (int)(sizeof k_threads / sizeof k_threads[0]); ti++) {
                    tsup_buf *o, w;
                    t = k_threads[ti];
                    o = t == 0 ? base : cur;
                    w = tsup_make_1d(SBN_F64, c, d.pv[0]);
                    sbn_pool_t *pool = t == 0 ? NULL : tsup_pool(t);
                    CHECK_MSG(t == 0 || pool != NULL, "sbn_pool_create(%d) failed", t);
                    o[0] = tsup_make_view(sp.dt.y, sh.rank, sh.d, sp.yl, NULL);
                    o[1] = tsup_make_1d(SBN_F64, c, d.pv[2]);
                    o[2] = tsup_make_1d(SBN_F64, c, d.pv[3]);
                    for (k = 3; k < 8; k++)
                        o[k] = k == 5 ? tsup_make_view(sp.dt.y, sh.rank, sh.d, TSUP_CHANNELS_FIRST,
                                                       NULL)
                                      : tsup_make_1d(SBN_F64, c, NULL);
                    CHECK_OK(sbn_batch_norm(&d.x.view, &w.view, &w.view, training, 0.1, 1e-5,
                                            &o[1].view, &o[2].view, &o[0].view, &o[3].view,
                                            &o[4].view, ws_f, wsf, pool));
                    if (!training) { /* eval leaves save_* alone: give backward this batch's */
                        CHECK_OK(sbn_batch_norm(&d.x.view, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL,
                                                &o[5].view, &o[3].view, &o[4].view, ws_f, wsf,
                                                pool));
                    }
                    CHECK_OK(sbn_batch_norm_backward(&d.dy.view, &d.x.view, &w.view, &o[1].view,
                                                     &o[2].view, &o[3].view, &o[4].view, training,
                                                     1e-5, &o[5].view, &o[6].view, &o[7].view,
                                                     ws_b, wsb, pool));
                    tsup_free(&w);
                    sbn_pool_destroy(pool);
                    if (t == 0) continue;
                    for (k = 0; k < 8; k++) {
                        int same = tsup_same_bytes("output", o[k].alloc, base[k].alloc,
                                                   o[k].alloc_bytes);
                        CHECK_MSG(same,
                                  "R=%lld x %s %s training=%d: output %d with %d threads differs",
                                  (long long)(sh.d[0] * sh.d[2]), sbn_dtype_name(sp.dt.x),
                                  tsup_layout_name(sp.xl), training, k, t);
                        tsup_free(&o[k]);
                    }
                }
                for (k = 0; k < 8; k++) tsup_free(&base[k]);
                free(ws_f);
                free(ws_b);
                data_free(&d);
            }
        }
    }
}

static void batch_norm_threads_bitwise(void)
{
    static const tsup_shape shapes[2] = {{3, {3, 5, 4000}}, {3, {3, 5, 2800}}};
    int si;
    for (si = 0; si < 2; si++) {
        threads_bitwise_shape(&shapes[si], si);
        RETURN_IF_FAILED();
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(batch_norm_f32),
    SBN_TEST_CASE(batch_norm_f64),
    SBN_TEST_CASE(batch_norm_f16_params_f32),
    SBN_TEST_CASE(batch_norm_bf16_params_f32),
    SBN_TEST_CASE(batch_norm_f16),
    SBN_TEST_CASE(batch_norm_bf16),
    SBN_TEST_CASE(batch_norm_optional_tensors),
    SBN_TEST_CASE(batch_norm_backward_masks),
    SBN_TEST_CASE(batch_norm_single_sample),
    SBN_TEST_CASE(batch_norm_empty),
    SBN_TEST_CASE(batch_norm_empty_zero_strides),
    SBN_TEST_CASE(batch_norm_mean_offset),
    SBN_TEST_CASE(batch_norm_threads_bitwise),
};

SBN_TEST_MAIN(k_cases)
