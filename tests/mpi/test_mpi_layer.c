/*
 * test_mpi_layer.c - sbn_syncbn_forward/backward across processes over the MPI
 * backend, run under mpirun with 2, 3 or 4 processes. Every process generates
 * the same global batch from a seed and takes its shard along N (uneven; rank 1
 * empty when there are more than 2 processes); two training steps through a handle
 * from sbn_comm_mpi_create(MPI_COMM_WORLD) must give, on every process, the
 * whole-batch oracle's y and grad_input for its rows, its save_mean/save_invstd,
 * running stats (momentum 0.1) and global_count, a local grad_weight/grad_bias
 * equal to its shard's share whose sum over the processes (MPI_Allreduce here) is
 * the whole-batch value, or the whole-batch value itself with sync_grad_params;
 * f32 and bf16, channels-first and channels-last. Also: an all-empty world
 * (SBN_NO_SAMPLES everywhere, running stats bit-unchanged, backward succeeds),
 * eval called on rank 0 alone while the others wait in an MPI_Barrier of their
 * own (a collective inside eval would deadlock, which ctest's timeout reports), a
 * rank with eps = -1 (SBN_ERR_BAD_VALUE there, SBN_ERR_PEER_FAILED on its peers),
 * and a rank whose config differs (eps in forward, sync_grad_params in backward:
 * SBN_ERR_COMM_MISMATCH on every process). No fork harness under MPI: the cases run in sequence, each process
 * counts its failures, the counts are summed with MPI_Allreduce and rank 0 prints
 * "N passed, N failed"; the exit status is non-zero on any failure. Tolerances as
 * in test_layer.c (docs/numerics.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"
#include "ref/ref.h"
#include "support/layer_tol.h"
#include "support/optest.h"
#include "syncbn/comm_mpi.h"
#include "syncbn/layer.h"

#define EPS 1e-5
#define STEPS 2

/* |got - want| <= tol[i] elementwise (see tsup_close_tol), messages naming this rank. */
static int close_tol(const char *what, const double *got, const double *want, const double *tol,
                     int64_t n)
{
    char named[96];
    snprintf(named, sizeof named, "rank %d %s", g_rank, what);
    return tsup_close_tol(named, got, want, tol, n);
}

/* ---- the property ---- */

typedef struct spec {
    sbn_dtype xdt, sdt; /* activations; save_* (params, running stats: f32) */
    tsup_layout layout;
    int sync;
    uint64_t seed;
} spec;

typedef struct batch {
    int64_t c, s, ntot, n[TSUP_MPI_MAX_PROCS], off[TSUP_MPI_MAX_PROCS];
    double *x[STEPS], *dy[STEPS], w[4], b[4], rm0[4], rv0[4];
} batch;

/* The same global batch on every process: the split and the values come from the seed. */
static void batch_make(const spec *sp, batch *bt)
{
    tsup_rng rng = tsup_rng_seed(sp->seed);
    int64_t numel, i;
    int r, k;
    memset(bt, 0, sizeof *bt);
    bt->c = 3;
    bt->s = 4;
    for (r = 0; r < g_size; r++) {
        bt->n[r] = g_size > 2 && r == 1 ? 0 : 1 + (int64_t)(tsup_uniform(&rng) * 3.0);
        bt->off[r] = bt->ntot;
        bt->ntot += bt->n[r];
    }
    numel = bt->ntot * bt->c * bt->s;
    for (k = 0; k < STEPS; k++) {
        bt->x[k] = tsup_alloc_fill(numel, 0);
        bt->dy[k] = tsup_alloc_fill(numel, 0);
        for (i = 0; i < numel; i++)
            bt->x[k][i] = tsup_round(sp->xdt, 0.5 + 0.5 * (double)((i / bt->s) % bt->c) +
                                                  tsup_normal(&rng));
        tsup_fill_normal(&rng, bt->dy[k], numel, 0.1, 1.0, sp->xdt);
    }
    for (i = 0; i < bt->c; i++) {
        bt->w[i] = tsup_round(SBN_F32, tsup_normal(&rng));
        bt->b[i] = tsup_round(SBN_F32, tsup_normal(&rng));
        bt->rm0[i] = tsup_round(SBN_F32, tsup_normal(&rng));
        bt->rv0[i] = tsup_round(SBN_F32, 0.5 + tsup_uniform(&rng));
    }
}

static void batch_free(batch *bt)
{
    int k;
    for (k = 0; k < STEPS; k++) {
        free(bt->x[k]);
        free(bt->dy[k]);
    }
}

/* Per-element tolerances of y and grad_input and per-channel sums (support/layer_tol.h). */
static void tolerances(const batch *bt, int k, const spec *sp, const double *mean,
                       const double *is, const double *ms, const double *iss, const double *srel,
                       const double *y, const double *gi, double *ty, double *tg, double *absdy,
                       double *absdx)
{
    int64_t C = bt->c, S = bt->s, R = bt->ntot * S, c;
    double uo = tsup_unit_roundoff(sp->xdt), um = tsup_map_u(sp->xdt), uc[4];
    for (c = 0; c < C; c++)
        uc[c] = 4.0 * (double)R * ldexp(1.0, -53) + 4.0 * tsup_unit_roundoff(sp->sdt) +
                2.0 * srel[c];
    tsup_layer_fwd_tol(bt->x[k], bt->ntot, C, S, bt->w, bt->b, mean, is, srel, uo, 0.0, um, y,
                       ty);
    tsup_layer_bwd_tol(bt->dy[k], bt->x[k], bt->ntot, C, S, bt->w, ms, iss, uc, uo, 0.0, um, gi,
                       tg, absdy, absdx);
}

static void check_property(const spec *sp)
{
    batch bt;
    sbn_comm_t *comm = NULL;
    sbn_syncbn_config cfg;
    int64_t C, S, shape[3], nbt = 0, count = -1, numel, mine, at, ch;
    double u64 = ldexp(1.0, -53), u32 = ldexp(1.0, -24), us = tsup_unit_roundoff(sp->sdt);
    double *nanv, *ywant, *gwant, *ty, *tg, *got, mean[4], is[4], ms[4], iss[4], var[4];
    double srel[4], orm[4], orv[4], trm[4] = {0}, trv[4] = {0}, absdy[4], absdx[4], pc[6][4];
    double gw[4], gb[4], sh[8], shs[8], tl[8], prev[8];
    tsup_buf wt, bs, rm, rv, sm, si, gwb, gbb;
    size_t bytes = 0;
    void *ws;
    int k;

    batch_make(sp, &bt);
    C = bt.c;
    S = bt.s;
    numel = bt.ntot * C * S;
    mine = bt.n[g_rank] * C * S;
    at = bt.off[g_rank] * C * S;
    shape[0] = bt.n[g_rank];
    shape[1] = C;
    shape[2] = S;
    nanv = tsup_alloc_fill(mine > C ? mine : C, NAN);
    ywant = tsup_alloc_fill(numel, 0);
    gwant = tsup_alloc_fill(numel, 0);
    ty = tsup_alloc_fill(numel, 0);
    tg = tsup_alloc_fill(numel, 0);
    got = tsup_alloc_fill(mine, 0);
    wt = tsup_make_1d(SBN_F32, C, bt.w);
    bs = tsup_make_1d(SBN_F32, C, bt.b);
    rm = tsup_make_1d(SBN_F32, C, bt.rm0);
    rv = tsup_make_1d(SBN_F32, C, bt.rv0);
    sm = tsup_make_1d(sp->sdt, C, nanv);
    si = tsup_make_1d(sp->sdt, C, nanv);
    gwb = tsup_make_1d(SBN_F32, C, nanv);
    gbb = tsup_make_1d(SBN_F32, C, nanv);
    memcpy(orm, bt.rm0, sizeof orm);
    memcpy(orv, bt.rv0, sizeof orv);
    sbn_syncbn_config_default(&cfg);
    cfg.sync_grad_params = sp->sync;
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    for (k = 0; k < STEPS; k++) {
        tsup_buf x = tsup_make(sp->xdt, 3, shape, sp->layout, bt.x[k] + at);
        tsup_buf dy = tsup_make(sp->xdt, 3, shape, sp->layout, bt.dy[k] + at);
        tsup_buf y = tsup_make(sp->xdt, 3, shape, sp->layout, nanv);
        tsup_buf gi = tsup_make(sp->xdt, 3, shape, sp->layout, nanv);
        sbn_status st;
        if (k == 0) sbn_syncbn_workspace_size(&x.view, &bytes);
        ws = malloc(bytes ? bytes : 1);
        st = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &x.view,
                                .weight = &wt.view, .bias = &bs.view, .running_mean = &rm.view,
                                .running_var = &rv.view, .num_batches_tracked = &nbt, .y = &y.view,
                                .save_mean = &sm.view, .save_invstd = &si.view,
                                .global_count = &count}, ws, bytes, NULL);
        EXPECT_STATUS_OF(st, SBN_OK, "forward");
        st = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &dy.view,
                                 .x = &x.view, .weight = &wt.view, .save_mean = &sm.view,
                                 .save_invstd = &si.view, .global_count = count,
                                 .grad_input = &gi.view, .grad_weight = &gwb.view,
                                 .grad_bias = &gbb.view}, ws, bytes, NULL);
        EXPECT_STATUS_OF(st, SBN_OK, "backward");
        free(ws);
        EXPECT(count == bt.ntot * S && nbt == k + 1, "step %d: global_count %lld, "
               "num_batches_tracked %lld", k, (long long)count, (long long)nbt);

        /* The oracle on the whole batch. */
        memcpy(prev, orm, sizeof orm);
        memcpy(prev + 4, orv, sizeof orv);
        ref_batch_norm_train(bt.x[k], bt.ntot, C, S, bt.w, bt.b, 0.1, EPS, ywant, mean, is, orm,
                             orv);
        ref_mean_var(bt.x[k], bt.ntot, C, S, mean, var);
        for (ch = 0; ch < C; ch++) {
            double sd = sqrt(var[ch] + EPS), R = (double)(bt.ntot * S), vu = var[ch] * R / (R - 1);
            double prm = prev[ch], prv = prev[4 + ch];
            srel[ch] = 8.0 * R * u64 * (1.0 + fabs(mean[ch]) / sd);
            orm[ch] = tsup_round(SBN_F32, orm[ch]);
            orv[ch] = tsup_round(SBN_F32, orv[ch]);
            trm[ch] = 0.9 * trm[ch] + 4.0 * u32 * (fabs(0.9 * prm) + fabs(0.1 * mean[ch])) +
                      0.1 * srel[ch] * sd + 2.0 * u32 * fabs(orm[ch]);
            trv[ch] = 0.9 * trv[ch] + 4.0 * u32 * (fabs(0.9 * prv) + 0.1 * vu) +
                      0.2 * vu * srel[ch] + 2.0 * u32 * fabs(orv[ch]);
            ms[ch] = tsup_round(sp->sdt, mean[ch]);
            iss[ch] = tsup_round(sp->sdt, is[ch]);
            pc[0][ch] = tsup_get1(&sm.view, ch);
            pc[1][ch] = tsup_get1(&si.view, ch);
            pc[2][ch] = tsup_get1(&rm.view, ch);
            pc[3][ch] = tsup_get1(&rv.view, ch);
            pc[4][ch] = tsup_get1(&gwb.view, ch);
            pc[5][ch] = tsup_get1(&gbb.view, ch);
            EXPECT(fabs(pc[0][ch] - mean[ch]) <= 2.0 * us * fabs(mean[ch]) + srel[ch] * sd &&
                   fabs(pc[1][ch] - is[ch]) <= (2.0 * us + srel[ch]) * is[ch],
                   "step %d channel %lld: save %.17g, %.17g; oracle %.17g, %.17g", k,
                   (long long)ch, pc[0][ch], pc[1][ch], mean[ch], is[ch]);
            EXPECT(fabs(pc[2][ch] - orm[ch]) <= trm[ch] && fabs(pc[3][ch] - orv[ch]) <= trv[ch],
                   "step %d channel %lld: running %.9g, %.9g; oracle %.9g, %.9g", k,
                   (long long)ch, pc[2][ch], pc[3][ch], orm[ch], orv[ch]);
        }
        ref_batch_norm_backward_train(bt.dy[k], bt.x[k], bt.ntot, C, S, bt.w, ms, iss, gwant, gw,
                                      gb);
        tolerances(&bt, k, sp, mean, is, ms, iss, srel, ywant, gwant, ty, tg, absdy, absdx);
        tsup_read(&y.view, got);
        EXPECT(close_tol("y", got, ywant + at, ty + at, mine), "step %d: y differs", k);
        tsup_read(&gi.view, got);
        EXPECT(close_tol("grad_input", got, gwant + at, tg + at, mine), "step %d: grad_input "
               "differs", k);
        /* grad_weight/grad_bias: the shard's share (or the whole with sync), and the sum. */
        ref_backward_reduce(bt.dy[k] + at, bt.x[k] + at, bt.n[g_rank], C, S, ms, sh + C, sh);
        for (ch = 0; ch < C; ch++) {
            double uc = 4.0 * (double)(bt.ntot * S) * u64 + 4.0 * us + 2.0 * srel[ch];
            sh[ch] *= iss[ch];
            tl[ch] = 2.0 * u32 * fabs(sp->sync ? gw[ch] : sh[ch]) + 4.0 * uc * absdx[ch];
            tl[C + ch] = 2.0 * u32 * fabs(sp->sync ? gb[ch] : sh[C + ch]) + 4.0 * uc * absdy[ch];
            shs[ch] = pc[4][ch];
            shs[C + ch] = pc[5][ch];
        }
        if (sp->sync) {
            EXPECT(close_tol("grad_weight", pc[4], gw, tl, C) &&
                   close_tol("grad_bias", pc[5], gb, tl + C, C), "step %d: synced parameter "
                   "gradients differ", k);
        } else {
            EXPECT(close_tol("grad_weight share", pc[4], sh, tl, C) &&
                   close_tol("grad_bias share", pc[5], sh + C, tl + C, C), "step %d: local "
                   "parameter gradients differ from the shard's share", k);
            /* the sum's tolerance: every process's output rounding plus the sums' error */
            for (ch = 0; ch < 2 * C; ch++) prev[ch] = 2.0 * u32 * fabs(sh[ch]);
            MPI_Allreduce(MPI_IN_PLACE, shs, (int)(2 * C), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, prev, (int)(2 * C), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (ch = 0; ch < C; ch++) {
                double uc = 4.0 * (double)(bt.ntot * S) * u64 + 4.0 * us + 2.0 * srel[ch];
                sh[ch] = gw[ch];
                sh[C + ch] = gb[ch];
                tl[ch] = prev[ch] + 4.0 * uc * absdx[ch];
                tl[C + ch] = prev[C + ch] + 4.0 * uc * absdy[ch];
            }
            EXPECT(close_tol("sum grad_weight", shs, sh, tl, C) &&
                   close_tol("sum grad_bias", shs + C, sh + C, tl + C, C), "step %d: parameter "
                   "gradients summed over the processes differ from the whole batch's", k);
        }
        TSUP_BUF_FREE(&x, &dy, &y, &gi);
    }
    sbn_comm_destroy(comm);
    tsup_free(&wt); tsup_free(&bs); tsup_free(&rm); tsup_free(&rv); tsup_free(&sm);
    tsup_free(&si); tsup_free(&gwb); tsup_free(&gbb);
    free(nanv); free(ywant); free(gwant); free(ty); free(tg); free(got);
    batch_free(&bt);
}

static void property(void)
{
    static const spec specs[] = {
        {SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 0, 1},
        {SBN_BF16, SBN_F32, TSUP_CHANNELS_LAST, 0, 2},
        {SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 1, 3},
        {SBN_BF16, SBN_F64, TSUP_CHANNELS_FIRST, 1, 4},
    };
    size_t k;
    for (k = 0; k < sizeof specs / sizeof specs[0]; k++) check_property(&specs[k]);
}

/* ---- the other cases ---- */

typedef struct small {
    tsup_buf x, y, w, b, rm, rv, sm, si, gw, gb;
    size_t bytes;
    void *ws;
} small;

/* x (n, 3, 2) f32 of value v, w = b = 1, running stats (0.5, 2), save/grads NaN. */
static void small_make(small *t, int64_t n, double v)
{
    int64_t shape[3] = {n, 3, 2}, i;
    double xv[64] = {0}, ones[3] = {1, 1, 1}, rmv[3] = {0.5, 0.5, 0.5}, rvv[3] = {2, 2, 2};
    double nanv[3] = {NAN, NAN, NAN};
    for (i = 0; i < n * 6 && i < 64; i++) xv[i] = v + 0.25 * (double)i;
    t->x = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, xv);
    t->y = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    t->w = tsup_make_1d(SBN_F32, 3, ones);
    t->b = tsup_make_1d(SBN_F32, 3, ones);
    t->rm = tsup_make_1d(SBN_F32, 3, rmv);
    t->rv = tsup_make_1d(SBN_F32, 3, rvv);
    t->sm = tsup_make_1d(SBN_F64, 3, nanv);
    t->si = tsup_make_1d(SBN_F64, 3, nanv);
    t->gw = tsup_make_1d(SBN_F32, 3, nanv);
    t->gb = tsup_make_1d(SBN_F32, 3, nanv);
    sbn_syncbn_workspace_size(&t->x.view, &t->bytes);
    t->ws = malloc(t->bytes);
}

static void small_free(small *t)
{
    tsup_buf *all[] = {&t->x, &t->y, &t->w, &t->b, &t->rm, &t->rv, &t->sm, &t->si, &t->gw, &t->gb};
    size_t k;
    for (k = 0; k < sizeof all / sizeof all[0]; k++) tsup_free(all[k]);
    free(t->ws);
}

static sbn_status small_forward(sbn_comm_t *comm, const sbn_syncbn_config *cfg, small *t,
                                int64_t *nbt, int64_t *count)
{
    return sbn_syncbn_forward(comm, cfg, &(sbn_syncbn_forward_io){.x = &t->x.view,
                              .weight = &t->w.view, .bias = &t->b.view,
                              .running_mean = &t->rm.view, .running_var = &t->rv.view,
                              .num_batches_tracked = nbt, .y = &t->y.view,
                              .save_mean = &t->sm.view, .save_invstd = &t->si.view,
                              .global_count = count}, t->ws, t->bytes, NULL);
}

static void all_empty(void)
{
    sbn_comm_t *comm = NULL;
    sbn_syncbn_config cfg;
    small t;
    unsigned char *rms, *rvs;
    int64_t nbt = 0, count = -1;
    sbn_status st;
    small_make(&t, 0, 0.0);
    rms = tsup_snapshot(&t.rm);
    rvs = tsup_snapshot(&t.rv);
    sbn_syncbn_config_default(&cfg);
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    st = small_forward(comm, &cfg, &t, &nbt, &count);
    EXPECT_STATUS_OF(st, SBN_NO_SAMPLES, "forward on an all-empty world");
    EXPECT(tsup_unchanged(&t.rm, rms) && tsup_unchanged(&t.rv, rvs), "running stats changed");
    EXPECT(count == 0, "global_count %lld", (long long)count);
    st = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &t.x.view, .x = &t.x.view,
                             .weight = &t.w.view, .save_mean = &t.sm.view,
                             .save_invstd = &t.si.view, .global_count = count,
                             .grad_input = &t.y.view, .grad_weight = &t.gw.view,
                             .grad_bias = &t.gb.view}, t.ws, t.bytes, NULL);
    EXPECT_STATUS_OF(st, SBN_OK, "backward on an all-empty world");
    sbn_comm_destroy(comm);
    free(rms);
    free(rvs);
    small_free(&t);
}

/* Rank 0 alone runs eval; the others wait in a barrier of MPI_COMM_WORLD (not the handle's). */
static void eval_alone(void)
{
    sbn_comm_t *comm = NULL;
    sbn_syncbn_config cfg;
    small t;
    int64_t nbt = 4, count = 0, i;
    double xv[12], yv[12], want[12], mean[3], is[3], w[3] = {1, 1, 1};
    small_make(&t, 2, 1.0);
    sbn_syncbn_config_default(&cfg);
    cfg.training = 0;
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    if (g_rank == 0) {
        sbn_status st = small_forward(comm, &cfg, &t, &nbt, &count);
        EXPECT_STATUS_OF(st, SBN_OK, "eval forward on rank 0 alone");
        tsup_read(&t.x.view, xv);
        tsup_read(&t.y.view, yv);
        for (i = 0; i < 3; i++) {
            mean[i] = 0.5;
            is[i] = 1.0 / sqrt(2.0 + EPS);
        }
        ref_elemt(xv, 2, 3, 2, mean, is, w, w, want);
        for (i = 0; i < 12 && st == SBN_OK; i++)
            EXPECT(fabs(yv[i] - want[i]) <= ldexp(1.0, -23) * (fabs(want[i]) + 1.0),
                   "eval y[%lld] = %.9g, oracle %.9g", (long long)i, yv[i], want[i]);
        EXPECT(nbt == 4, "eval changed num_batches_tracked to %lld", (long long)nbt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* The handle is still in step on every process: a training call goes through. */
    cfg.training = 1;
    EXPECT_STATUS_OF(small_forward(comm, &cfg, &t, &nbt, &count), SBN_OK, "training after eval");
    sbn_comm_destroy(comm);
    small_free(&t);
}

/*
 * The last process forwards with eps = odd_eps, the others with 1e-5: each gets its
 * status and a sentence holding its needle (NULL: not checked), and nothing is written.
 */
static void odd_eps_forward(double odd_eps, sbn_status want_odd, sbn_status want_peers,
                            const char *has_odd, const char *has_peers)
{
    sbn_comm_t *comm = NULL;
    sbn_syncbn_config cfg;
    small t;
    int64_t nbt = 0, count = -1;
    int odd = g_rank == g_size - 1;
    const char *needle = odd ? has_odd : has_peers;
    unsigned char *ys;
    small_make(&t, 1 + g_rank % 2, 0.5);
    ys = tsup_snapshot(&t.y);
    sbn_syncbn_config_default(&cfg);
    if (odd) cfg.eps = odd_eps;
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    EXPECT_STATUS_OF(small_forward(comm, &cfg, &t, &nbt, &count), odd ? want_odd : want_peers,
                     "forward");
    if (needle) EXPECT_HAS(needle);
    EXPECT(tsup_unchanged(&t.y, ys) && nbt == 0 && count == -1, "a failed call wrote outputs");
    sbn_comm_destroy(comm);
    free(ys);
    small_free(&t);
}

/* The last process passes eps = -1: SBN_ERR_BAD_VALUE there, SBN_ERR_PEER_FAILED elsewhere. */
static void failing_rank(void)
{
    char name[64];
    snprintf(name, sizeof name, "rank %d (SBN_ERR_BAD_VALUE)", g_size - 1);
    odd_eps_forward(-1.0, SBN_ERR_BAD_VALUE, SBN_ERR_PEER_FAILED, NULL, name);
}

/*
 * The last process passes another eps (forward), or sync_grad_params only in backward:
 * SBN_ERR_COMM_MISMATCH on every process, each sentence naming its own value.
 */
static void config_mismatch(void)
{
    sbn_comm_t *comm = NULL;
    sbn_syncbn_config cfg;
    small t;
    int64_t nbt = 0, count = -1;
    sbn_status st;
    odd_eps_forward(1e-3, SBN_ERR_COMM_MISMATCH, SBN_ERR_COMM_MISMATCH, "eps 0.001,",
                    "eps 1.0000000000000001e-05,");
    small_make(&t, 1 + g_rank % 2, 0.5);
    sbn_syncbn_config_default(&cfg);
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    EXPECT_STATUS_OF(small_forward(comm, &cfg, &t, &nbt, &count), SBN_OK, "forward, same config");
    if (g_rank == g_size - 1) cfg.sync_grad_params = 1;
    st = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &t.x.view, .x = &t.x.view,
                             .weight = &t.w.view, .save_mean = &t.sm.view,
                             .save_invstd = &t.si.view, .global_count = count,
                             .grad_input = &t.y.view, .grad_weight = &t.gw.view,
                             .grad_bias = &t.gb.view}, t.ws, t.bytes, NULL);
    EXPECT_STATUS_OF(st, SBN_ERR_COMM_MISMATCH, "backward with sync_grad_params on one rank");
    EXPECT_HAS(g_rank == g_size - 1 ? "sync_grad_params 1" : "sync_grad_params 0");
    sbn_comm_destroy(comm);
    small_free(&t);
}

int main(int argc, char **argv)
{
    static const mpi_case cases[] = {
        {"property", property},         {"all_empty", all_empty}, {"eval_alone", eval_alone},
        {"failing_rank", failing_rank}, {"config_mismatch", config_mismatch},
    };
    return mpi_run_cases(&argc, &argv, cases, TSUP_COUNT(cases), NULL);
}
