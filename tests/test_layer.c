/*
 * test_layer.c - sbn_syncbn_forward/backward over the threads backend, one pthread
 * per rank, against the double oracle. The defining property of SyncBN: for worlds
 * of 1, 2, 3, 4 and 7 ranks with seeded uneven splits along N (empty ranks
 * included), f32 and bf16 activations, channels-first and channels-last views,
 * three training steps each, every rank's y, save_mean/save_invstd, running stats
 * (momentum 0.1, or the cumulative average with num_batches_tracked) and
 * grad_input equal whole-batch batch norm of the concatenated batch
 * (ref_batch_norm_train / ref_batch_norm_backward_train on the dtype-rounded
 * values); each rank's grad_weight/grad_bias equal its shard's share and their sum
 * the whole-batch values, or every rank holds the whole-batch values with
 * sync_grad_params. Variants drop the affine parameters and the running stats. An
 * all-empty world returns SBN_NO_SAMPLES with the running stats bit-unchanged and a
 * backward giving zero parameter gradients (PyTorch's None). Eval, with and without
 * running stats, is run on ONE rank of a two-rank world whose other rank calls
 * nothing: it must return promptly with the oracle's values, and a barrier on both
 * ranks afterwards proves that no collective was started. Tolerances follow
 * docs/numerics.md: output rounding (u of the output dtype) times the value, plus
 * the double computation's error (R u64 scaled by 1 + |mean|/std) times the
 * absolute terms of each formula, plus the rounding of save_* when it is f32.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/layer_tol.h"
#include "support/optest.h"
#include "support/world.h"
#include "syncbn/layer.h"

#define STEPS 3
#define TIMEOUT 20.0 /* seconds: never fires in a passing run */
#define EPS 1e-5

/* srel[c]: relative error of the double statistics, 8 R u64 (1 + |mean|/std) (numerics.md). */
static void stats_rel(const double *x, int64_t n, int64_t C, int64_t S, double *srel)
{
    double *mean = tsup_alloc_fill(C, 0), *var = tsup_alloc_fill(C, 0);
    int64_t c;
    ref_mean_var(x, n, C, S, mean, var);
    for (c = 0; c < C; c++)
        srel[c] = 8.0 * (double)(n * S) * ldexp(1.0, -53) *
                  (1.0 + fabs(mean[c]) / sqrt(var[c] + EPS));
    free(mean);
    free(var);
}

/* ---- (a), (d), (e): the SyncBN property ---- */

typedef struct prop_spec {
    int world;
    sbn_dtype xdt, pdt, sdt; /* x/dy/y/grad_input; weight/bias/running/grad params; save_* */
    tsup_layout layout;
    int nd;                  /* 2: (N, C); 4: (N, C, 2, 3) */
    int affine, tracking, sync, cumulative;
    double x_mean, x_std;
    uint64_t seed;
} prop_spec;

enum { P_SM, P_SI, P_GW, P_GB, P_RM, P_RV, P_COUNT };

typedef struct prop_data {
    const prop_spec *sp;
    int64_t c, s, ntot, n[TSUP_MAX_WORLD], off[TSUP_MAX_WORLD];
    double *x[STEPS], *dy[STEPS], *y[STEPS], *gi[STEPS]; /* whole batch; ranks fill y, gi */
    double *w, *b, *rm0, *rv0;
    double *pc; /* [TSUP_MAX_WORLD][STEPS][P_COUNT][C]: what each rank's per-channel tensors held */
    int64_t count[TSUP_MAX_WORLD][STEPS], nbt[TSUP_MAX_WORLD][STEPS];
} prop_data;

#define PC(d, r, k, which) \
    ((d)->pc + ((((size_t)(r) * STEPS + (size_t)(k)) * P_COUNT + (which)) * (size_t)(d)->c))

static void rank_prop(tsup_rank *cx)
{
    prop_data *d = cx->shared;
    const prop_spec *sp = d->sp;
    int r = cx->rank, k, j;
    int64_t shape[4] = {d->n[r], d->c, 2, 3}, base = d->off[r] * d->c * d->s, nbt = 0;
    int64_t numel = d->n[r] * d->c * d->s;
    double *nanv = tsup_alloc_fill(numel > d->c ? numel : d->c, NAN);
    tsup_buf wt = tsup_make_1d(sp->pdt, d->c, d->w), bs = tsup_make_1d(sp->pdt, d->c, d->b);
    tsup_buf pcb[P_COUNT];
    sbn_dtype pdts[P_COUNT] = {sp->sdt, sp->sdt, sp->pdt, sp->pdt, sp->pdt, sp->pdt};
    const double *init[P_COUNT] = {nanv, nanv, nanv, nanv, d->rm0, d->rv0};
    sbn_syncbn_config cfg;
    size_t bytes = 0;
    void *ws = NULL;

    for (j = 0; j < P_COUNT; j++) pcb[j] = tsup_make_1d(pdts[j], d->c, init[j]);
    sbn_syncbn_config_default(&cfg);
    cfg.sync_grad_params = sp->sync;
    cfg.cumulative = sp->cumulative;
    if (sp->cumulative) cfg.momentum = 0.7; /* must be ignored */
    for (k = 0; k < STEPS; k++) {
        tsup_buf x = tsup_make(sp->xdt, sp->nd, shape, sp->layout, d->x[k] + base);
        tsup_buf dy = tsup_make(sp->xdt, sp->nd, shape, sp->layout, d->dy[k] + base);
        tsup_buf y = tsup_make(sp->xdt, sp->nd, shape, sp->layout, nanv);
        tsup_buf gi = tsup_make(sp->xdt, sp->nd, shape, sp->layout, nanv);
        const sbn_tensor *w = sp->affine ? &wt.view : NULL, *b = sp->affine ? &bs.view : NULL;
        sbn_tensor *rm = sp->tracking ? &pcb[P_RM].view : NULL;
        sbn_tensor *rv = sp->tracking ? &pcb[P_RV].view : NULL;
        if (k == 0) {
            RNOTE_STATUS(cx, sbn_syncbn_workspace_size(&x.view, &bytes), SBN_OK);
            ws = malloc(bytes ? bytes : 1);
        }
        /* No early return: a rank that stopped would leave its peers waiting. */
        RNOTE_STATUS(cx, sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &x.view,
                                            .weight = w, .bias = b, .running_mean = rm,
                                            .running_var = rv, .num_batches_tracked = &nbt,
                                            .y = &y.view, .save_mean = &pcb[P_SM].view,
                                            .save_invstd = &pcb[P_SI].view,
                                            .global_count = &d->count[r][k]}, ws, bytes, NULL), SBN_OK);
        d->nbt[r][k] = nbt;
        tsup_read(&y.view, d->y[k] + base);
        RNOTE_STATUS(cx, sbn_syncbn_backward(cx->comm, &cfg,
                                             &(sbn_syncbn_backward_io){.dy = &dy.view,
                                             .x = &x.view, .weight = w, .running_mean = rm,
                                             .running_var = rv, .save_mean = &pcb[P_SM].view,
                                             .save_invstd = &pcb[P_SI].view,
                                             .global_count = d->count[r][k],
                                             .grad_input = &gi.view,
                                             .grad_weight = &pcb[P_GW].view,
                                             .grad_bias = &pcb[P_GB].view}, ws, bytes, NULL), SBN_OK);
        tsup_read(&gi.view, d->gi[k] + base);
        for (j = 0; j < P_COUNT; j++) {
            tsup_read(&pcb[j].view, PC(d, r, k, j));
            RNOTE(cx, tsup_guard_intact(&pcb[j]), "step %d: write outside per-channel #%d", k, j);
        }
        RNOTE(cx, tsup_guard_intact(&y) && tsup_guard_intact(&gi), "step %d: write outside y/gi",
              k);
        TSUP_BUF_FREE(&x, &dy, &y, &gi);
    }
    for (j = 0; j < P_COUNT; j++) tsup_free(&pcb[j]);
    tsup_free(&wt);
    tsup_free(&bs);
    free(ws);
    free(nanv);
}

/* Oracle comparison of one run; returns at the first failing check. */
static void prop_check(const prop_data *d, const char *desc)
{
    const prop_spec *sp = d->sp;
    int64_t C = d->c, S = d->s, R = d->ntot * S, numel = d->ntot * C * S, ch;
    double u64 = ldexp(1.0, -53), uo = tsup_unit_roundoff(sp->xdt), um = tsup_map_u(sp->xdt);
    double up = tsup_unit_roundoff(sp->pdt), us = tsup_unit_roundoff(sp->sdt);
    double *mean = tsup_alloc_fill(C, 0), *is = tsup_alloc_fill(C, 0), *var = tsup_alloc_fill(C, 0);
    double *ms = tsup_alloc_fill(C, 0), *iss = tsup_alloc_fill(C, 0), *srel = tsup_alloc_fill(C, 0);
    double *uc = tsup_alloc_fill(C, 0), *orm = tsup_alloc_fill(C, 0), *orv = tsup_alloc_fill(C, 0);
    double *trm = tsup_alloc_fill(C, 0), *trv = tsup_alloc_fill(C, 0);
    double *avg = tsup_alloc_fill(2 * C, 0), *want = tsup_alloc_fill(6 * C, 0);
    double *tol = tsup_alloc_fill(6 * C, 0), *sum = tsup_alloc_fill(2 * C, 0);
    double *absdy = tsup_alloc_fill(C, 0), *absdx = tsup_alloc_fill(C, 0);
    double *ady = tsup_alloc_fill(C, 0), *adx = tsup_alloc_fill(C, 0);
    double *wnt = tsup_alloc_fill(numel, 0), *tl = tsup_alloc_fill(numel, 0);
    double *big = tsup_alloc_fill(C, 0);
    const double *wv = sp->affine ? d->w : NULL, *bv = sp->affine ? d->b : NULL;
    int k, r;

    memcpy(orm, d->rm0, (size_t)C * sizeof *orm);
    memcpy(orv, d->rv0, (size_t)C * sizeof *orv);
    for (k = 0; k < STEPS; k++) {
        double m = sp->cumulative ? 1.0 / (k + 1) : 0.1;
        for (r = 0; r < sp->world; r++) {
            CHECK_MSG(d->count[r][k] == R, "%s step %d: rank %d global_count %lld, expected "
                      "%lld", desc, k, r, (long long)d->count[r][k], (long long)R);
            CHECK_MSG(d->nbt[r][k] == (sp->tracking ? k + 1 : 0), "%s step %d: rank %d "
                      "num_batches_tracked %lld", desc, k, r, (long long)d->nbt[r][k]);
        }
        /* Forward: the oracle on the whole batch; running stats stored in pdt each step. */
        memcpy(want + 4 * C, orm, (size_t)C * sizeof *orm);
        memcpy(want + 5 * C, orv, (size_t)C * sizeof *orv);
        ref_batch_norm_train(d->x[k], d->ntot, C, S, wv, bv, m, EPS, wnt, mean, is, orm, orv);
        ref_mean_var(d->x[k], d->ntot, C, S, mean, var);
        stats_rel(d->x[k], d->ntot, C, S, srel);
        for (ch = 0; ch < C; ch++) {
            double sd = sqrt(var[ch] + EPS), vu = var[ch] * (double)R / (double)(R - 1);
            double prm = want[4 * C + ch], prv = want[5 * C + ch];
            orm[ch] = tsup_round(sp->pdt, orm[ch]);
            orv[ch] = tsup_round(sp->pdt, orv[ch]);
            avg[ch] += mean[ch] / STEPS;
            avg[C + ch] += vu / STEPS;
            big[ch] = fmax(big[ch], fmax(fabs(mean[ch]), vu));
            uc[ch] = 4.0 * (double)R * u64 + 4.0 * us + 2.0 * srel[ch];
            ms[ch] = tsup_round(sp->sdt, mean[ch]);
            iss[ch] = tsup_round(sp->sdt, is[ch]);
            want[ch] = mean[ch];
            want[C + ch] = is[ch];
            tol[ch] = 2.0 * us * fabs(mean[ch]) + srel[ch] * sd;
            tol[C + ch] = (2.0 * us + srel[ch]) * is[ch];
            trm[ch] = (1.0 - m) * trm[ch] + 4.0 * up * (fabs((1.0 - m) * prm) + fabs(m * mean[ch])) +
                      m * srel[ch] * sd + 2.0 * up * fabs(orm[ch]);
            trv[ch] = (1.0 - m) * trv[ch] + 4.0 * up * (fabs((1.0 - m) * prv) + fabs(m * vu)) +
                      2.0 * m * vu * srel[ch] + 2.0 * up * fabs(orv[ch]);
        }
        tsup_layer_fwd_tol(d->x[k], d->ntot, C, S, wv, bv, mean, is, srel, uo, 0.0, um, wnt, tl);
        CHECK_MSG(tsup_close_tol("y", d->y[k], wnt, tl, numel), "%s step %d: y differs", desc, k);
        for (r = 0; r < sp->world; r++) {
            CHECK_MSG(tsup_close_tol("save_mean", PC(d, r, k, P_SM), want, tol, C) &&
                      tsup_close_tol("save_invstd", PC(d, r, k, P_SI), want + C, tol + C, C),
                      "%s step %d: rank %d save_* differ", desc, k, r);
            if (!sp->tracking) continue;
            CHECK_MSG(tsup_close_tol("running_mean", PC(d, r, k, P_RM), orm, trm, C) &&
                      tsup_close_tol("running_var", PC(d, r, k, P_RV), orv, trv, C),
                      "%s step %d: rank %d running stats differ", desc, k, r);
            CHECK_MSG(memcmp(PC(d, r, k, P_RM), PC(d, 0, k, P_RM), 2 * (size_t)C * 8) == 0,
                      "%s step %d: running stats of rank %d differ from rank 0's", desc, k, r);
        }
        /* Backward: whole batch with the save_* values rounded as stored. */
        ref_batch_norm_backward_train(d->dy[k], d->x[k], d->ntot, C, S, wv, ms, iss, wnt, want,
                                      want + C);
        tsup_layer_bwd_tol(d->dy[k], d->x[k], d->ntot, C, S, wv, ms, iss, uc, uo, 0.0, um, wnt, tl, absdy, absdx);
        CHECK_MSG(tsup_close_tol("grad_input", d->gi[k], wnt, tl, numel),
                  "%s step %d: grad_input differs", desc, k);
        for (ch = 0; ch < C; ch++) {
            tol[ch] = 2.0 * up * fabs(want[ch]) + 4.0 * uc[ch] * absdx[ch];
            tol[C + ch] = 2.0 * up * fabs(want[C + ch]) + 4.0 * uc[ch] * absdy[ch];
            sum[ch] = sum[C + ch] = tol[2 * C + ch] = tol[3 * C + ch] = 0.0;
        }
        for (r = 0; r < sp->world && !sp->sync; r++) {
            /* This rank's share: its shard's sums around the global mean (PyTorch: local). */
            int64_t at = d->off[r] * C * S;
            double *share = want + 4 * C, *shtol = tol + 4 * C;
            ref_backward_reduce(d->dy[k] + at, d->x[k] + at, d->n[r], C, S, ms, share + C, share);
            tsup_layer_bwd_tol(d->dy[k] + at, d->x[k] + at, d->n[r], C, S, wv, ms, iss, uc, uo, 0.0, um, NULL, NULL,
                    ady, adx);
            for (ch = 0; ch < C; ch++) {
                share[ch] *= iss[ch];
                shtol[ch] = 2.0 * up * fabs(share[ch]) + 4.0 * uc[ch] * adx[ch];
                shtol[C + ch] = 2.0 * up * fabs(share[C + ch]) + 4.0 * uc[ch] * ady[ch];
                sum[ch] += PC(d, r, k, P_GW)[ch];
                sum[C + ch] += PC(d, r, k, P_GB)[ch];
                tol[2 * C + ch] += shtol[ch];
                tol[3 * C + ch] += shtol[C + ch];
            }
            CHECK_MSG(tsup_close_tol("grad_weight share", PC(d, r, k, P_GW), share, shtol, C) &&
                      tsup_close_tol("grad_bias share", PC(d, r, k, P_GB), share + C, shtol + C,
                                     C),
                      "%s step %d: rank %d's local parameter gradients differ", desc, k, r);
        }
        if (!sp->sync)
            CHECK_MSG(tsup_close_tol("sum grad_weight", sum, want, tol + 2 * C, C) &&
                      tsup_close_tol("sum grad_bias", sum + C, want + C, tol + 3 * C, C),
                      "%s step %d: parameter gradients summed over ranks differ", desc, k);
        for (r = 0; r < sp->world && sp->sync; r++)
            CHECK_MSG(tsup_close_tol("grad_weight", PC(d, r, k, P_GW), want, tol, C) &&
                      tsup_close_tol("grad_bias", PC(d, r, k, P_GB), want + C, tol + C, C),
                      "%s step %d: rank %d's synced parameter gradients differ", desc, k, r);
    }
    if (sp->cumulative) {
        /* After K steps the running stats are the plain averages of the K batches' stats. */
        for (ch = 0; ch < C; ch++) {
            tol[ch] = trm[ch] + 4.0 * STEPS * up * big[ch];
            tol[C + ch] = trv[ch] + 4.0 * STEPS * up * big[ch];
        }
        CHECK_MSG(tsup_close_tol("cumulative running_mean", PC(d, 0, STEPS - 1, P_RM), avg, tol,
                                 C) &&
                  tsup_close_tol("cumulative running_var", PC(d, 0, STEPS - 1, P_RV), avg + C,
                                 tol + C, C),
                  "%s: the cumulative running stats are not the batch averages", desc);
    }
    free(mean); free(is); free(var); free(ms); free(iss); free(srel); free(uc); free(orm);
    free(orv); free(trm); free(trv); free(avg); free(want); free(tol); free(sum); free(absdy);
    free(absdx); free(ady); free(adx); free(wnt); free(tl); free(big);
}

static void run_prop(const prop_spec *sp)
{
    prop_data d;
    tsup_rng rng = tsup_rng_seed(sp->seed);
    int r, k, empty = sp->world > 1 ? (int)(sp->seed % (uint64_t)sp->world) : -1;
    int64_t numel, i;
    char desc[300];

    memset(&d, 0, sizeof d);
    d.sp = sp;
    d.c = 3 + (int64_t)(sp->seed % 3);
    d.s = sp->nd == 4 ? 6 : 1;
    /* Uneven split: 0..3 samples a rank, one rank forced empty, at least 2 in all. */
    for (r = 0; r < sp->world; r++) {
        d.n[r] = r == empty ? 0 : (int64_t)(tsup_uniform(&rng) * 4.0);
        d.off[r] = d.ntot;
        d.ntot += d.n[r];
    }
    if (d.ntot < 2) {
        r = (empty + 1) % sp->world;
        d.n[r] += 2;
        for (d.ntot = 0, k = 0; k < sp->world; k++) {
            d.off[k] = d.ntot;
            d.ntot += d.n[k];
        }
    }
    numel = d.ntot * d.c * d.s;
    for (k = 0; k < STEPS; k++) {
        d.x[k] = tsup_alloc_fill(numel, 0);
        d.dy[k] = tsup_alloc_fill(numel, 0);
        d.y[k] = tsup_alloc_fill(numel, NAN);
        d.gi[k] = tsup_alloc_fill(numel, NAN);
        for (i = 0; i < numel; i++)
            d.x[k][i] = tsup_round(sp->xdt, sp->x_mean + 0.25 * (double)((i / d.s) % d.c % 4) +
                                                 sp->x_std * tsup_normal(&rng));
        tsup_fill_normal(&rng, d.dy[k], numel, 0.1, 1.0, sp->xdt);
    }
    d.w = tsup_alloc_fill(d.c, 0);
    d.b = tsup_alloc_fill(d.c, 0);
    d.rm0 = tsup_alloc_fill(d.c, 0);
    d.rv0 = tsup_alloc_fill(d.c, 0);
    for (i = 0; i < d.c; i++) {
        d.w[i] = tsup_round(sp->pdt, tsup_normal(&rng));
        d.b[i] = tsup_round(sp->pdt, tsup_normal(&rng));
        d.rm0[i] = tsup_round(sp->pdt, sp->cumulative ? 7.0 : tsup_normal(&rng));
        d.rv0[i] = tsup_round(sp->pdt, sp->cumulative ? 9.0 : 0.5 + tsup_uniform(&rng));
    }
    d.pc = tsup_alloc_fill((int64_t)TSUP_MAX_WORLD * STEPS * P_COUNT * d.c, NAN);
    snprintf(desc, sizeof desc, "W=%d split", sp->world);
    for (r = 0; r < sp->world; r++)
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%lld", r ? "," : " ",
                 (long long)d.n[r]);
    snprintf(desc + strlen(desc), sizeof desc - strlen(desc),
             " C=%lld nd=%d x %s params %s save %s %s affine=%d tracking=%d sync=%d "
             "cumulative=%d x~N(%g,%g) seed %llu", (long long)d.c, sp->nd,
             sbn_dtype_name(sp->xdt), sbn_dtype_name(sp->pdt), sbn_dtype_name(sp->sdt),
             tsup_layout_name(sp->layout), sp->affine, sp->tracking, sp->sync, sp->cumulative,
             sp->x_mean, sp->x_std, (unsigned long long)sp->seed);
    if (tsup_run_world(sp->world, TIMEOUT, rank_prop, &d) == 0) prop_check(&d, desc);
    else fprintf(stderr, "    (in %s)\n", desc);
    for (k = 0; k < STEPS; k++) {
        TSUP_FREE_ALL(d.x[k], d.dy[k], d.y[k], d.gi[k]);
    }
    free(d.w); free(d.b); free(d.rm0); free(d.rv0); free(d.pc);
}

/* (a): every world size x {f32, bf16} x {channels-first, channels-last}, 3 steps each. */
static void syncbn_equals_whole_batch(void)
{
    static const int worlds[] = {1, 2, 3, 4, 7};
    int w, t, l;
    for (w = 0; w < 5; w++)
        for (t = 0; t < 2; t++)
            for (l = 0; l < 2; l++) {
                prop_spec sp = {worlds[w], t ? SBN_BF16 : SBN_F32, SBN_F32,
                                t ? SBN_F32 : SBN_F64, l ? TSUP_CHANNELS_LAST : TSUP_CHANNELS_FIRST,
                                4, 1, 1, (w + t + l) % 2, 0, 0.5, 1.0,
                                (uint64_t)(100 * w + 10 * t + l + 1)};
                run_prop(&sp);
                RETURN_IF_FAILED();
            }
}

/* (a) with sync_grad_params, (d) without affine / running stats, (e) cumulative, and more. */
static void syncbn_variants(void)
{
    static const prop_spec specs[] = {
        /* W  x         params    save      layout               nd aff trk syn cum mean std seed */
        {3, SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, 1, 1, 1, 0, 0.5, 1.0, 11},
        {7, SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 4, 1, 1, 1, 0, 0.5, 1.0, 12},
        {3, SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_LAST, 4, 1, 0, 0, 0, 0.5, 1.0, 13},
        {4, SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_FIRST, 4, 0, 1, 0, 0, 0.5, 1.0, 14},
        {2, SBN_F32, SBN_F32, SBN_F32, TSUP_CHANNELS_FIRST, 4, 0, 0, 1, 0, 0.5, 1.0, 15},
        {5, SBN_F32, SBN_F64, SBN_F64, TSUP_CHANNELS_FIRST, 2, 1, 1, 0, 0, 100.0, 0.5, 16},
        {3, SBN_BF16, SBN_BF16, SBN_F32, TSUP_STRIDED, 4, 1, 1, 0, 0, 0.5, 1.0, 17},
        {3, SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, 1, 1, 0, 1, 0.5, 1.0, 18},
        {4, SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 4, 1, 1, 1, 1, -2.0, 3.0, 19},
        {1, SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_LAST, 4, 0, 1, 0, 1, 0.5, 1.0, 20},
    };
    size_t k;
    for (k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        run_prop(&specs[k]);
        RETURN_IF_FAILED();
    }
}

/* ---- (b) every rank empty ---- */

static void rank_all_empty(tsup_rank *cx)
{
    int64_t shape[3] = {0, 3, 2}, c = 3, nbt = 5, count = -1, i;
    double rmv[3] = {0.5, -1.0, 2.0}, rvv[3] = {1.0, 2.0, 3.0}, nanv[3] = {NAN, NAN, NAN};
    tsup_buf x = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    tsup_buf dy = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    tsup_buf y = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    tsup_buf gi = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    tsup_buf w = tsup_make_1d(SBN_F32, c, rvv), b = tsup_make_1d(SBN_F32, c, rmv);
    tsup_buf rm = tsup_make_1d(SBN_F32, c, rmv), rv = tsup_make_1d(SBN_F32, c, rvv);
    tsup_buf sm = tsup_make_1d(SBN_F64, c, NULL), si = tsup_make_1d(SBN_F64, c, NULL);
    tsup_buf gw = tsup_make_1d(SBN_F32, c, nanv), gb = tsup_make_1d(SBN_F32, c, nanv);
    unsigned char *rms = tsup_snapshot(&rm), *rvs = tsup_snapshot(&rv);
    sbn_syncbn_config cfg;
    size_t bytes = 0;
    void *ws;
    int sync;

    sbn_syncbn_workspace_size(&x.view, &bytes);
    ws = malloc(bytes);
    sbn_syncbn_config_default(&cfg);
    for (sync = 0; sync < 2; sync++) {
        cfg.sync_grad_params = sync;
        RNOTE_STATUS(cx, sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &x.view,
                                            .weight = &w.view, .bias = &b.view,
                                            .running_mean = &rm.view, .running_var = &rv.view,
                                            .num_batches_tracked = &nbt, .y = &y.view,
                                            .save_mean = &sm.view, .save_invstd = &si.view,
                                            .global_count = &count}, ws, bytes, NULL), SBN_NO_SAMPLES);
        RNOTE(cx, tsup_unchanged(&rm, rms) && tsup_unchanged(&rv, rvs), "running stats changed");
        RNOTE(cx, count == 0, "global_count %lld", (long long)count);
        RNOTE(cx, nbt == 6 + sync, "num_batches_tracked %lld (PyTorch counts every training "
              "call)", (long long)nbt);
        RNOTE_STATUS(cx, sbn_syncbn_backward(cx->comm, &cfg,
                                             &(sbn_syncbn_backward_io){.dy = &dy.view,
                                             .x = &x.view, .weight = &w.view,
                                             .save_mean = &sm.view, .save_invstd = &si.view,
                                             .global_count = count, .grad_input = &gi.view,
                                             .grad_weight = &gw.view, .grad_bias = &gb.view}, ws,
                                             bytes, NULL), SBN_OK);
        for (i = 0; i < c; i++)
            RNOTE(cx, tsup_get1(&gw.view, i) == 0.0 && tsup_get1(&gb.view, i) == 0.0,
                  "sync=%d: channel %lld: grad_weight %g, grad_bias %g; an empty world has zero "
                  "parameter gradients (PyTorch returns None, i.e. zeros)", sync, (long long)i,
                  tsup_get1(&gw.view, i), tsup_get1(&gb.view, i));
    }
    tsup_free(&x); tsup_free(&dy); tsup_free(&y); tsup_free(&gi); tsup_free(&w); tsup_free(&b);
    tsup_free(&rm); tsup_free(&rv); tsup_free(&sm); tsup_free(&si); tsup_free(&gw);
    tsup_free(&gb);
    TSUP_FREE_ALL(rms, rvs, ws);
}

static void all_ranks_empty(void)
{
    static const int worlds[] = {1, 3, 4};
    int k;
    for (k = 0; k < 3; k++)
        if (tsup_run_world(worlds[k], TIMEOUT, rank_all_empty, NULL)) return;
}

/* ---- (c) eval makes no collective ---- */

enum { EN = 5, EC = 3, ES = 4 };

typedef struct eval_shared {
    pthread_barrier_t done;
    sbn_status st[4];
    char err[4][160]; /* the sentence of each call, from rank 0's thread */
    double elapsed, drm, drv; /* drm, drv: change of the running stats (0 when untouched) */
    double x[EN * EC * ES], dy[EN * EC * ES], w[EC], b[EC], rm[EC], rv[EC];
    double y[2][EN * EC * ES], gi[2][EN * EC * ES], pc[2][5][EC]; /* sm, si, gw, gb, nbt */
} eval_shared;

static void rank_eval(tsup_rank *cx)
{
    eval_shared *sh = cx->shared;
    int64_t shape[3] = {EN, EC, ES}, c = EC, nbt = 4, count;
    double three[EC] = {3, 3, 3};
    tsup_buf x, dy, y, gi, w, b, rm, rv, pcb[4];
    sbn_syncbn_config cfg;
    size_t bytes = 0;
    void *ws;
    int mode, j;
    double t0;

    if (cx->rank == 1) { /* calls nothing until rank 0 is done */
        pthread_barrier_wait(&sh->done);
        RNOTE_STATUS(cx, sbn_comm_barrier(cx->comm), SBN_OK);
        return;
    }
    x = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_LAST, sh->x);
    dy = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_LAST, sh->dy);
    y = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    gi = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    w = tsup_make_1d(SBN_F32, c, sh->w);
    b = tsup_make_1d(SBN_F32, c, sh->b);
    rm = tsup_make_1d(SBN_F32, c, sh->rm);
    rv = tsup_make_1d(SBN_F32, c, sh->rv);
    sbn_syncbn_workspace_size(&x.view, &bytes);
    ws = malloc(bytes);
    sbn_syncbn_config_default(&cfg);
    cfg.training = 0;
    t0 = tsup_now();
    for (mode = 0; mode < 2; mode++) { /* 0: with running stats, 1: track_running_stats off */
        sbn_tensor *rmv = mode ? NULL : &rm.view, *rvv = mode ? NULL : &rv.view;
        for (j = 0; j < 4; j++) pcb[j] = tsup_make_1d(SBN_F32, c, three);
        sh->st[2 * mode] = sbn_syncbn_forward(cx->comm, &cfg,
                                              &(sbn_syncbn_forward_io){.x = &x.view,
                                              .weight = &w.view, .bias = &b.view,
                                              .running_mean = rmv, .running_var = rvv,
                                              .num_batches_tracked = &nbt, .y = &y.view,
                                              .save_mean = &pcb[0].view,
                                              .save_invstd = &pcb[1].view, .global_count = &count},
                                              ws, bytes, NULL);
        snprintf(sh->err[2 * mode], sizeof sh->err[0], "%s", sbn_last_error());
        sh->st[2 * mode + 1] = sbn_syncbn_backward(cx->comm, &cfg,
                                                   &(sbn_syncbn_backward_io){.dy = &dy.view,
                                                   .x = &x.view, .weight = &w.view,
                                                   .running_mean = rmv, .running_var = rvv,
                                                   .save_mean = &pcb[0].view,
                                                   .save_invstd = &pcb[1].view,
                                                   .global_count = count, .grad_input = &gi.view,
                                                   .grad_weight = &pcb[2].view,
                                                   .grad_bias = &pcb[3].view}, ws, bytes, NULL);
        snprintf(sh->err[2 * mode + 1], sizeof sh->err[0], "%s", sbn_last_error());
        tsup_read(&y.view, sh->y[mode]);
        tsup_read(&gi.view, sh->gi[mode]);
        for (j = 0; j < 4; j++) {
            tsup_read(&pcb[j].view, sh->pc[mode][j]);
            tsup_free(&pcb[j]);
        }
        sh->pc[mode][4][0] = (double)nbt;
    }
    sh->elapsed = tsup_now() - t0;
    sh->drm = tsup_get1(&rm.view, 0) - sh->rm[0];
    sh->drv = tsup_get1(&rv.view, 0) - sh->rv[0];
    pthread_barrier_wait(&sh->done);
    RNOTE_STATUS(cx, sbn_comm_barrier(cx->comm), SBN_OK); /* the world is intact, calls in step */
    tsup_free(&x); tsup_free(&dy); tsup_free(&y); tsup_free(&gi); tsup_free(&w); tsup_free(&b);
    tsup_free(&rm); tsup_free(&rv);
    free(ws);
}

static void eval_check(eval_shared *sh)
{
    enum { Nu32 = EN * EC * ES };
    double u32 = ldexp(1.0, -24), u64 = ldexp(1.0, -53), mean[EC], is[EC], ms[EC], iss[EC];
    double zeros[EC] = {0, 0, 0}, gw[EC], gb[EC], tol[2 * EC], srel[EC], uc[EC], absdy[EC];
    double absdx[EC], want[Nu32], tl[Nu32];
    int k, mode, c;
    for (k = 0; k < 4; k++)
        CHECK_MSG(sh->st[k] == SBN_OK, "eval %s (%s running stats) returned %s: %s",
                  k % 2 ? "backward" : "forward", k < 2 ? "with" : "without",
                  sbn_status_name(sh->st[k]), sh->err[k]);
    CHECK_MSG(sh->elapsed < 0.25, "eval on one rank took %g s (a collective waited?)", sh->elapsed);
    CHECK_MSG(sh->drm == 0.0 && sh->drv == 0.0, "eval changed the running stats");
    stats_rel(sh->x, EN, EC, ES, srel);
    for (mode = 0; mode < 2; mode++) {
        CHECK_MSG(sh->pc[mode][4][0] == 4.0, "eval changed num_batches_tracked to %g",
                  sh->pc[mode][4][0]);
        if (mode == 0) { /* y = (x - running_mean) / sqrt(running_var + eps) w + b */
            for (c = 0; c < EC; c++) {
                mean[c] = ms[c] = sh->rm[c];
                is[c] = iss[c] = 1.0 / sqrt(sh->rv[c] + EPS);
                CHECK_MSG(sh->pc[0][0][c] == 3.0 && sh->pc[0][1][c] == 3.0,
                          "eval with running stats wrote save_mean/save_invstd");
            }
            ref_elemt(sh->x, EN, EC, ES, mean, is, sh->w, sh->b, want);
            tsup_layer_fwd_tol(sh->x, EN, EC, ES, sh->w, sh->b, mean, is, zeros, u32, 0.0, u32, want, tl);
        } else { /* batch norm with this rank's own batch statistics */
            ref_batch_norm_train(sh->x, EN, EC, ES, sh->w, sh->b, 0.0, EPS, want, mean, is, NULL,
                                 NULL);
            tsup_layer_fwd_tol(sh->x, EN, EC, ES, sh->w, sh->b, mean, is, srel, u32, 0.0, u32, want, tl);
            for (c = 0; c < EC; c++) {
                ms[c] = tsup_round(SBN_F32, mean[c]);
                iss[c] = tsup_round(SBN_F32, is[c]);
                tol[c] = 2.0 * u32 * fabs(mean[c]) + srel[c] / is[c];
                tol[EC + c] = (2.0 * u32 + srel[c]) * is[c];
            }
            CHECK_MSG(tsup_close_tol("save_mean", sh->pc[1][0], mean, tol, EC) &&
                      tsup_close_tol("save_invstd", sh->pc[1][1], is, tol + EC, EC),
                      "eval without running stats: save_* are not this rank's batch stats");
        }
        CHECK_MSG(tsup_close_tol("eval y", sh->y[mode], want, tl, Nu32), "eval mode %d: y differs",
                  mode);
        for (c = 0; c < EC; c++)
            uc[c] = 4.0 * EN * ES * u64 + (mode ? 4.0 * u32 + 2.0 * srel[c] : 0.0);
        if (mode == 0) { /* dy w invstd; sum(dy (x - running_mean)) invstd; sum(dy) */
            ref_backward_elemt(sh->dy, sh->x, EN, EC, ES, ms, iss, sh->w, zeros, zeros, 1.0, want);
            ref_backward_reduce(sh->dy, sh->x, EN, EC, ES, ms, gb, gw);
            for (c = 0; c < EC; c++) gw[c] *= iss[c];
        } else {
            ref_batch_norm_backward_train(sh->dy, sh->x, EN, EC, ES, sh->w, ms, iss, want, gw, gb);
        }
        tsup_layer_bwd_tol(sh->dy, sh->x, EN, EC, ES, sh->w, ms, iss, uc, u32, 0.0, u32, want, tl, absdy, absdx);
        for (c = 0; c < EC; c++) {
            tol[c] = 2.0 * u32 * fabs(gw[c]) + 4.0 * uc[c] * absdx[c];
            tol[EC + c] = 2.0 * u32 * fabs(gb[c]) + 4.0 * uc[c] * absdy[c];
        }
        CHECK_MSG(tsup_close_tol("eval grad_input", sh->gi[mode], want, tl, Nu32) &&
                  tsup_close_tol("eval grad_weight", sh->pc[mode][2], gw, tol, EC) &&
                  tsup_close_tol("eval grad_bias", sh->pc[mode][3], gb, tol + EC, EC),
                  "eval mode %d: backward differs", mode);
    }
}

static void eval_makes_no_collective(void)
{
    eval_shared *sh = calloc(1, sizeof *sh);
    tsup_rng rng = tsup_rng_seed(77);
    pthread_barrier_init(&sh->done, NULL, 2);
    tsup_fill_normal(&rng, sh->x, EN * EC * ES, 0.7, 2.0, SBN_F32);
    tsup_fill_normal(&rng, sh->dy, EN * EC * ES, 0.1, 1.0, SBN_F32);
    tsup_fill_normal(&rng, sh->w, EC, 0.0, 1.0, SBN_F32);
    tsup_fill_normal(&rng, sh->b, EC, 0.0, 1.0, SBN_F32);
    tsup_fill_normal(&rng, sh->rm, EC, 0.5, 0.5, SBN_F32);
    tsup_fill_normal(&rng, sh->rv, EC, 3.0, 0.5, SBN_F32);
    /* Timeout 0.5 s: a collective on rank 0 alone would take that long and fail. */
    if (tsup_run_world(2, 0.5, rank_eval, sh) == 0) eval_check(sh);
    pthread_barrier_destroy(&sh->done);
    free(sh);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(syncbn_equals_whole_batch),
    SBN_TEST_CASE(syncbn_variants),
    SBN_TEST_CASE(all_ranks_empty),
    SBN_TEST_CASE(eval_makes_no_collective),
};

SBN_TEST_MAIN(k_cases)
