/*
 * test_layer_errors.c - how sbn_syncbn_forward/backward fail in a world of threads
 * (one pthread per rank), and that no failure hangs a rank or touches an output.
 * A table of odd ranks: invalid arguments (eps -1, momentum 1.5, a short
 * workspace, a y of the wrong shape, save_mean NULL; in backward a grad_input of
 * the wrong shape or a global_count below the local count) give that rank its own
 * status and SBN_ERR_PEER_FAILED naming it on every peer; a rank with another C or
 * dtype, one that calls backward instead of forward or forward instead of
 * backward, give SBN_ERR_COMM_MISMATCH on every rank with a sentence naming both
 * calls (the forward exchanges 3C + 2 accumulators, the backward 2C + 1); a rank
 * whose config differs in eps, momentum, cumulative, nan_guard, sync_grad_params
 * (in forward, or only in backward) or reproducible gives SBN_ERR_COMM_MISMATCH on
 * every rank, each sentence naming that rank's own value; a rank that skips the call leaves its peers SBN_ERR_TIMEOUT after the
 * world's 0.5 s timeout. In every case y, save_*, the running stats,
 * num_batches_tracked, global_count and the gradients keep their bytes on every
 * rank. The NaN guard: an Inf or NaN on one rank gives SBN_NON_FINITE_STATS and
 * bit-unchanged running stats on every rank with nan_guard = 1, and non-finite
 * running stats in that channel (finite, oracle-equal ones elsewhere) with
 * nan_guard = 0, as PyTorch. A world holding one sample per channel returns
 * SBN_SINGLE_SAMPLE with running_var unchanged, and the guard holds there too.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ref/ref.h"
#include "support/support.h"
#include "support/world.h"
#include "syncbn/layer.h"

#define TIMEOUT 20.0 /* seconds: never fires in a passing run */
#define SHORT 0.5    /* the timeout of worlds where a rank skips a call */

/* ---- one rank's tensors: x (n, c, 2) channels-last and every output, with snapshots ---- */

enum { B_X, B_DY, B_Y, B_GI, B_W, B_B, B_RM, B_RV, B_SM, B_SI, B_GW, B_GB, NB };
static const char *const k_names[NB] = {"x", "dy", "y", "grad_input", "weight", "bias",
                                        "running_mean", "running_var", "save_mean",
                                        "save_invstd", "grad_weight", "grad_bias"};

typedef struct rank_bufs {
    int64_t n, c, nbt, count;
    double x[64], dy[64];
    tsup_buf t[NB];
    unsigned char *snap[NB];
    int64_t snap_nbt, snap_count;
    size_t bytes;
    void *ws;
} rank_bufs;

/* x ~ N(0.5, 1) from (seed, rank), rounded to dtype; outputs filled with 7 (gradients NaN). */
static void bufs_make(rank_bufs *rb, int64_t n, int64_t c, sbn_dtype dtype, uint64_t seed)
{
    tsup_rng rng = tsup_rng_seed(seed);
    int64_t shape[3] = {n, c, 2}, numel = n * c * 2, i;
    double per[4][8];
    int k;
    memset(rb, 0, sizeof *rb);
    rb->n = n;
    rb->c = c;
    rb->nbt = 3;
    rb->count = -7;
    tsup_fill_normal(&rng, rb->x, numel, 0.5, 1.0, dtype);
    tsup_fill_normal(&rng, rb->dy, numel, 0.0, 1.0, dtype);
    for (i = 0; i < c; i++) {
        per[0][i] = 1.0 + 0.25 * (double)i; /* weight, running_var */
        per[1][i] = 0.5 - 0.25 * (double)i; /* bias, running_mean */
        per[2][i] = 7.0;
        per[3][i] = NAN;
    }
    rb->t[B_X] = tsup_make(dtype, 3, shape, TSUP_CHANNELS_LAST, rb->x);
    rb->t[B_DY] = tsup_make(dtype, 3, shape, TSUP_CHANNELS_LAST, rb->dy);
    rb->t[B_Y] = tsup_make(dtype, 3, shape, TSUP_CHANNELS_LAST, NULL);
    rb->t[B_GI] = tsup_make(dtype, 3, shape, TSUP_CHANNELS_LAST, NULL);
    for (k = B_W; k < NB; k++) {
        static const int src[NB] = {0, 0, 0, 0, 0, 1, 1, 0, 2, 2, 3, 3};
        rb->t[k] = tsup_make_1d(k >= B_SM && k <= B_SI ? SBN_F64 : SBN_F32, c, per[src[k]]);
    }
    sbn_syncbn_workspace_size(&rb->t[B_X].view, &rb->bytes);
    rb->ws = malloc(rb->bytes);
}

static void bufs_snapshot(rank_bufs *rb)
{
    int k;
    for (k = 0; k < NB; k++) {
        free(rb->snap[k]);
        rb->snap[k] = tsup_snapshot(&rb->t[k]);
    }
    rb->snap_nbt = rb->nbt;
    rb->snap_count = rb->count;
}

/* The name of the first tensor (or counter) that changed since the snapshot; NULL if none. */
static const char *bufs_changed(const rank_bufs *rb)
{
    int k;
    for (k = 0; k < NB; k++)
        if (!tsup_unchanged(&rb->t[k], rb->snap[k])) return k_names[k];
    if (rb->nbt != rb->snap_nbt) return "num_batches_tracked";
    return rb->count != rb->snap_count ? "global_count" : NULL;
}

static void bufs_free(rank_bufs *rb)
{
    int k;
    for (k = 0; k < NB; k++) {
        tsup_free(&rb->t[k]);
        free(rb->snap[k]);
    }
    free(rb->ws);
}

#define V(rb, k) (&(rb)->t[k].view)

static sbn_status fwd(tsup_rank *cx, rank_bufs *rb, const sbn_syncbn_config *cfg)
{
    return sbn_syncbn_forward(cx->comm, cfg, &(sbn_syncbn_forward_io){.x = V(rb, B_X),
                              .weight = V(rb, B_W), .bias = V(rb, B_B),
                              .running_mean = V(rb, B_RM), .running_var = V(rb, B_RV),
                              .num_batches_tracked = &rb->nbt, .y = V(rb, B_Y),
                              .save_mean = V(rb, B_SM), .save_invstd = V(rb, B_SI),
                              .global_count = &rb->count}, rb->ws, rb->bytes, NULL);
}

static sbn_status bwd(tsup_rank *cx, rank_bufs *rb, const sbn_syncbn_config *cfg, int64_t count)
{
    return sbn_syncbn_backward(cx->comm, cfg, &(sbn_syncbn_backward_io){.dy = V(rb, B_DY),
                               .x = V(rb, B_X), .weight = V(rb, B_W), .running_mean = V(rb, B_RM),
                               .running_var = V(rb, B_RV), .save_mean = V(rb, B_SM),
                               .save_invstd = V(rb, B_SI), .global_count = count,
                               .grad_input = V(rb, B_GI), .grad_weight = V(rb, B_GW),
                               .grad_bias = V(rb, B_GB)}, rb->ws, rb->bytes, NULL);
}

/* ---- (g), (h), (i): an odd rank ---- */

typedef enum odd_kind {
    K_EPS, K_MOMENTUM, K_WORKSPACE, K_Y_SHAPE, K_SAVE_NULL, K_CHANNELS, K_DTYPE,
    K_BACKWARD_INSTEAD, K_SKIP, K_CFG_EPS, K_CFG_MOMENTUM, K_CFG_CUMULATIVE, K_CFG_NAN_GUARD,
    K_CFG_SYNC, K_CFG_REPRO,
    K_BWD_GI_SHAPE, K_BWD_COUNT, K_BWD_FORWARD_INSTEAD, K_BWD_SKIP, K_BWD_CFG_SYNC
} odd_kind;

typedef struct err_case {
    const char *name;
    int world, odd;
    odd_kind kind;
    sbn_status want_odd, want_peers;
    const char *msg_odd, *msg_peers; /* pieces of the sentences (NULL: not checked) */
    const char *msg_all;             /* a piece every rank's sentence holds */
} err_case;

static const err_case k_err_cases[] = {
    {"eps -1", 3, 1, K_EPS, SBN_ERR_BAD_VALUE, SBN_ERR_PEER_FAILED, "eps is -1",
     "rank 1 (SBN_ERR_BAD_VALUE)", NULL},
    {"momentum 1.5", 2, 1, K_MOMENTUM, SBN_ERR_BAD_VALUE, SBN_ERR_PEER_FAILED, "momentum",
     "rank 1 (SBN_ERR_BAD_VALUE)", NULL},
    {"short workspace", 4, 3, K_WORKSPACE, SBN_ERR_WORKSPACE_TOO_SMALL, SBN_ERR_PEER_FAILED,
     "workspace", "rank 3 (SBN_ERR_WORKSPACE_TOO_SMALL)", NULL},
    {"y shape", 3, 2, K_Y_SHAPE, SBN_ERR_BAD_SHAPE, SBN_ERR_PEER_FAILED, "y has shape",
     "rank 2 (SBN_ERR_BAD_SHAPE)", NULL},
    {"save_mean NULL", 2, 0, K_SAVE_NULL, SBN_ERR_NULL_ARGUMENT, SBN_ERR_PEER_FAILED,
     "save_mean", "rank 0 (SBN_ERR_NULL_ARGUMENT)", NULL},
    {"other C", 3, 2, K_CHANNELS, SBN_ERR_COMM_MISMATCH, SBN_ERR_COMM_MISMATCH,
     "rank 2 called allreduce_merge (count 14,", "rank 2 called allreduce_merge (count 14,",
     "rank 0 called allreduce_merge (count 11,"},
    {"other dtype", 4, 1, K_DTYPE, SBN_ERR_COMM_MISMATCH, SBN_ERR_COMM_MISMATCH, NULL, NULL,
     "rank 1 called allreduce_merge (count 11,"},
    {"backward instead of forward", 3, 1, K_BACKWARD_INSTEAD, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, NULL, NULL, "rank 1 called allreduce_merge (count 7,"},
    {"skipped forward", 3, 2, K_SKIP, SBN_OK, SBN_ERR_TIMEOUT, NULL, "rank 2 missing", NULL},
    {"backward grad_input shape", 3, 1, K_BWD_GI_SHAPE, SBN_ERR_BAD_SHAPE, SBN_ERR_PEER_FAILED,
     "grad_input has shape", "rank 1 (SBN_ERR_BAD_SHAPE)", NULL},
    {"backward global_count 0", 2, 1, K_BWD_COUNT, SBN_ERR_BAD_VALUE, SBN_ERR_PEER_FAILED,
     "global_count is 0", "rank 1 (SBN_ERR_BAD_VALUE)", NULL},
    {"forward instead of backward", 4, 2, K_BWD_FORWARD_INSTEAD, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, NULL, NULL, "rank 2 called allreduce_merge (count 11,"},
    {"skipped backward", 2, 1, K_BWD_SKIP, SBN_OK, SBN_ERR_TIMEOUT, NULL, "rank 1 missing",
     NULL},
    /* ranks with another config (every field that changes a result) */
    {"other eps", 3, 1, K_CFG_EPS, SBN_ERR_COMM_MISMATCH, SBN_ERR_COMM_MISMATCH, "eps 0.001,",
     "eps 1.0000000000000001e-05,", "the SyncBN layer's tag"},
    {"other momentum", 2, 0, K_CFG_MOMENTUM, SBN_ERR_COMM_MISMATCH, SBN_ERR_COMM_MISMATCH,
     "momentum 0.5,", "momentum 0.10000000000000001,", "the SyncBN layer's tag"},
    {"cumulative on one rank", 4, 3, K_CFG_CUMULATIVE, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, "cumulative 1", "cumulative 0", "the SyncBN layer's tag"},
    {"nan_guard on one rank", 3, 2, K_CFG_NAN_GUARD, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, "nan_guard 1", "nan_guard 0", "the SyncBN layer's tag"},
    {"sync_grad_params on one rank", 2, 1, K_CFG_SYNC, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, "sync_grad_params 1", "sync_grad_params 0", "the SyncBN layer's tag"},
    {"reproducible on one rank", 3, 0, K_CFG_REPRO, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, "reproducible 1", "reproducible 0", "the SyncBN layer's tag"},
    {"backward sync_grad_params on one rank", 3, 2, K_BWD_CFG_SYNC, SBN_ERR_COMM_MISMATCH,
     SBN_ERR_COMM_MISMATCH, "sync_grad_params 1", "sync_grad_params 0",
     "called allreduce_merge (count 7,"},
};

static void rank_err(tsup_rank *cx)
{
    const err_case *ec = cx->shared;
    int odd = cx->rank == ec->odd, backward = ec->kind >= K_BWD_GI_SHAPE;
    sbn_dtype dt = odd && ec->kind == K_DTYPE ? SBN_BF16 : SBN_F32;
    int64_t c = odd && ec->kind == K_CHANNELS ? 4 : 3, wrong[3] = {1, 3, 3};
    sbn_syncbn_config cfg;
    sbn_status want = odd ? ec->want_odd : ec->want_peers, got = SBN_OK;
    const char *changed;
    rank_bufs rb;
    tsup_buf bad_y;
    double t0, took;

    bufs_make(&rb, 1 + cx->rank % 3, c, dt, 40 + (uint64_t)cx->rank);
    sbn_syncbn_config_default(&cfg);
    if (backward) RNOTE_STATUS(cx, fwd(cx, &rb, &cfg), SBN_OK);
    bufs_snapshot(&rb);
    bad_y = tsup_make(SBN_F32, 3, wrong, TSUP_CHANNELS_FIRST, NULL);
    t0 = tsup_now();
    if (!odd) {
        got = backward ? bwd(cx, &rb, &cfg, rb.count) : fwd(cx, &rb, &cfg);
    } else {
        switch (ec->kind) {
        case K_EPS: cfg.eps = -1.0; got = fwd(cx, &rb, &cfg); break;
        case K_MOMENTUM: cfg.momentum = 1.5; got = fwd(cx, &rb, &cfg); break;
        case K_WORKSPACE: rb.bytes--; got = fwd(cx, &rb, &cfg); break;
        case K_Y_SHAPE: rb.t[B_Y].view.shape[0]++; got = fwd(cx, &rb, &cfg); break;
        case K_SAVE_NULL:
            got = sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = V(&rb, B_X),
                                     .y = V(&rb, B_Y), .save_invstd = V(&rb, B_SI),
                                     .global_count = &rb.count}, rb.ws, rb.bytes, NULL);
            break;
        case K_CHANNELS:
        case K_DTYPE: got = fwd(cx, &rb, &cfg); break;
        case K_BACKWARD_INSTEAD: got = bwd(cx, &rb, &cfg, rb.n * 2); break;
        case K_BWD_GI_SHAPE:
            got = sbn_syncbn_backward(cx->comm, &cfg, &(sbn_syncbn_backward_io){.dy = V(&rb, B_DY),
                                      .x = V(&rb, B_X), .save_mean = V(&rb, B_SM),
                                      .save_invstd = V(&rb, B_SI), .global_count = rb.count,
                                      .grad_input = &bad_y.view}, rb.ws, rb.bytes, NULL);
            break;
        case K_BWD_COUNT: got = bwd(cx, &rb, &cfg, 0); break;
        case K_BWD_FORWARD_INSTEAD: got = fwd(cx, &rb, &cfg); break;
        case K_CFG_EPS: cfg.eps = 1e-3; got = fwd(cx, &rb, &cfg); break;
        case K_CFG_MOMENTUM: cfg.momentum = 0.5; got = fwd(cx, &rb, &cfg); break;
        case K_CFG_CUMULATIVE: cfg.cumulative = 1; got = fwd(cx, &rb, &cfg); break;
        case K_CFG_NAN_GUARD: cfg.nan_guard = 1; got = fwd(cx, &rb, &cfg); break;
        case K_CFG_SYNC: cfg.sync_grad_params = 1; got = fwd(cx, &rb, &cfg); break;
        case K_CFG_REPRO: cfg.reproducible = 1; got = fwd(cx, &rb, &cfg); break;
        case K_BWD_CFG_SYNC: cfg.sync_grad_params = 1; got = bwd(cx, &rb, &cfg, rb.count); break;
        case K_SKIP:
        case K_BWD_SKIP: break; /* calls nothing */
        }
    }
    took = tsup_now() - t0;
    RNOTE(cx, got == want, "%s: returned %s, expected %s (%s)", ec->name, sbn_status_name(got),
          sbn_status_name(want), sbn_last_error());
    if (got != SBN_OK) {
        RNOTE(cx, odd || strstr(sbn_last_error(), "rank") != NULL, "%s: the sentence \"%s\" "
              "names no rank", ec->name, sbn_last_error());
        RNOTE_HAS(cx, odd ? ec->msg_odd : ec->msg_peers);
        RNOTE_HAS(cx, ec->msg_all);
    }
    if (want == SBN_ERR_TIMEOUT)
        RNOTE(cx, took >= 0.8 * SHORT && took < 10.0 * SHORT, "%s: timed out after %g s",
              ec->name, took);
    else
        RNOTE(cx, took < 5.0, "%s: took %g s", ec->name, took);
    changed = bufs_changed(&rb);
    RNOTE(cx, changed == NULL, "%s: %s was modified by a failed call", ec->name, changed);
    tsup_free(&bad_y);
    bufs_free(&rb);
}

static void odd_rank_fails_everywhere(void)
{
    size_t k;
    for (k = 0; k < sizeof k_err_cases / sizeof k_err_cases[0]; k++) {
        const err_case *ec = &k_err_cases[k];
        int skip = ec->kind == K_SKIP || ec->kind == K_BWD_SKIP;
        if (tsup_run_world_held(ec->world, skip ? SHORT : TIMEOUT, rank_err, (void *)ec)) {
            fprintf(stderr, "    (case \"%s\")\n", ec->name);
            return;
        }
    }
}

/* ---- (f) the NaN guard ---- */

typedef struct guard_case {
    int world, bad_rank, guard;
    double bad;
    int single; /* 1: the world holds one sample (rank 0: x (1, C, 1)), the bad value in it */
} guard_case;

typedef struct guard_shared {
    const guard_case *gc;
    double x[TSUP_MAX_WORLD][64]; /* each rank's x, logical row-major (rounded) */
    double rm[TSUP_MAX_WORLD][3], rv[TSUP_MAX_WORLD][3];
    double rm0[3], rv0[3];
    int64_t n[TSUP_MAX_WORLD];
} guard_shared;

static void rank_guard(tsup_rank *cx)
{
    guard_shared *sh = cx->shared;
    const guard_case *gc = sh->gc;
    int64_t n = gc->single ? (cx->rank == 0) : 1 + cx->rank % 3, i;
    sbn_syncbn_config cfg;
    sbn_status want, got;
    rank_bufs rb;

    bufs_make(&rb, n, 3, SBN_F32, 90 + (uint64_t)cx->rank);
    if (gc->single) { /* x (n, 3, 1): its elements (0, c, 0) are (0, c, 0) of (n, 3, 2) */
        rb.t[B_X].view.shape[2] = rb.t[B_Y].view.shape[2] = 1;
        for (i = 0; i < 3; i++) rb.x[i] = rb.x[2 * i];
    }
    if (cx->rank == gc->bad_rank) { /* element (0, 1, 0): logical index 1 or 2, offset 1 */
        rb.x[gc->single ? 1 : 2] = gc->bad;
        ((float *)rb.t[B_X].view.data)[1] = (float)gc->bad;
    }
    sh->n[cx->rank] = n;
    for (i = 0; i < n * 3 * (gc->single ? 1 : 2); i++) sh->x[cx->rank][i] = rb.x[i];
    for (i = 0; i < 3 && cx->rank == 0; i++) { /* the same on every rank: one writer */
        sh->rm0[i] = tsup_get1(V(&rb, B_RM), i);
        sh->rv0[i] = tsup_get1(V(&rb, B_RV), i);
    }
    bufs_snapshot(&rb);
    sbn_syncbn_config_default(&cfg);
    cfg.nan_guard = gc->guard;
    want = gc->guard && isfinite(gc->bad) == 0 ? SBN_NON_FINITE_STATS
                                               : gc->single ? SBN_SINGLE_SAMPLE : SBN_OK;
    got = fwd(cx, &rb, &cfg);
    if (want == SBN_NON_FINITE_STATS)
        RNOTE(cx, tsup_unchanged(&rb.t[B_RM], rb.snap[B_RM]) &&
                  tsup_unchanged(&rb.t[B_RV], rb.snap[B_RV]),
              "nan_guard let a non-finite batch into the running stats: running_mean[1] %g, "
              "running_var[1] %g", tsup_get1(V(&rb, B_RM), 1), tsup_get1(V(&rb, B_RV), 1));
    RNOTE(cx, got == want, "forward returned %s, expected %s (%s)", sbn_status_name(got),
          sbn_status_name(want), sbn_last_error());
    for (i = 0; i < 3; i++) {
        sh->rm[cx->rank][i] = tsup_get1(V(&rb, B_RM), i);
        sh->rv[cx->rank][i] = tsup_get1(V(&rb, B_RV), i);
    }
    bufs_free(&rb);
}

/* Without the guard: channel 1 non-finite on every rank, the others equal the oracle. */
static void guard_check_off(const guard_shared *sh)
{
    const guard_case *gc = sh->gc;
    double all[3 * 64], mean[3], is[3], rm[3], rv[3], u32 = ldexp(1.0, -24);
    int64_t n = 0, i, c;
    int r;
    for (r = 0; r < gc->world; n += sh->n[r], r++) /* the shards in rank order: the batch */
        for (i = 0; i < sh->n[r] * 6; i++) all[n * 6 + i] = sh->x[r][i];
    memcpy(rm, sh->rm0, sizeof rm);
    memcpy(rv, sh->rv0, sizeof rv);
    ref_batch_norm_train(all, n, 3, 2, NULL, NULL, 0.1, 1e-5, NULL, mean, is, rm, rv);
    for (r = 0; r < gc->world; r++) {
        CHECK_MSG(!isfinite(sh->rm[r][1]) || !isfinite(sh->rv[r][1]), "rank %d: running stats "
                  "%g, %g stayed finite without the guard (PyTorch lets them through)", r,
                  sh->rm[r][1], sh->rv[r][1]);
        for (c = 0; c < 3; c += 2)
            CHECK_MSG(fabs(sh->rm[r][c] - rm[c]) <= 8.0 * u32 * (fabs(rm[c]) + 1.0) &&
                      fabs(sh->rv[r][c] - rv[c]) <= 8.0 * u32 * (fabs(rv[c]) + 1.0),
                      "rank %d channel %lld: running stats %g, %g; oracle %g, %g", r,
                      (long long)c, sh->rm[r][c], sh->rv[r][c], rm[c], rv[c]);
    }
}

static void nan_guard(void)
{
    static const guard_case cases[] = {
        {3, 1, 1, INFINITY, 0}, {4, 3, 1, NAN, 0},      {2, 0, 1, -INFINITY, 0},
        {3, 1, 0, INFINITY, 0}, {4, 2, 0, NAN, 0},
    };
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        guard_shared sh;
        memset(&sh, 0, sizeof sh);
        sh.gc = &cases[k];
        if (tsup_run_world_held(cases[k].world, TIMEOUT, rank_guard, &sh)) {
            fprintf(stderr, "    (case %zu: bad value %g on rank %d, nan_guard %d)\n", k,
                    cases[k].bad, cases[k].bad_rank, cases[k].guard);
            return;
        }
        if (!cases[k].guard) guard_check_off(&sh);
        RETURN_IF_FAILED();
    }
}

/* One sample per channel in the whole world: SBN_SINGLE_SAMPLE, running_var unchanged. */
static void single_sample_world(void)
{
    static const guard_case plain = {3, -1, 1, 0.0, 1}, inf = {2, 0, 1, INFINITY, 1};
    guard_shared sh;
    int r, c;
    memset(&sh, 0, sizeof sh);
    sh.gc = &plain;
    if (tsup_run_world_held(plain.world, TIMEOUT, rank_guard, &sh)) return;
    for (r = 0; r < plain.world; r++)
        for (c = 0; c < 3; c++) {
            double want = 0.9 * sh.rm0[c] + 0.1 * sh.x[0][c];
            CHECK_MSG(fabs(sh.rm[r][c] - want) <= ldexp(1.0, -21) * (fabs(want) + 1.0),
                      "rank %d channel %d: running_mean %.9g, expected %.9g", r, c,
                      sh.rm[r][c], want);
            CHECK_MSG(sh.rv[r][c] == sh.rv0[c], "rank %d channel %d: running_var changed to %g "
                      "with one sample", r, c, sh.rv[r][c]);
        }
    memset(&sh, 0, sizeof sh);
    sh.gc = &inf; /* the single sample is Inf: the guard must still refuse it */
    tsup_run_world_held(inf.world, TIMEOUT, rank_guard, &sh);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(odd_rank_fails_everywhere),
    SBN_TEST_CASE(nan_guard),
    SBN_TEST_CASE(single_sample_world),
};

SBN_TEST_MAIN(k_cases)
