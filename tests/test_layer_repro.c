/*
 * test_layer_repro.c - the reproducible mode of the SyncBN layer
 * (sbn_syncbn_config.reproducible = 1) over the threads backend. For each case the
 * W = 1 result (one rank, no pool) is computed in-process first and checked against
 * the double oracle with test_layer.c's tolerances (docs/numerics.md; f16 adds its
 * 2^-24 subnormal floor); then worlds of 1, 2, 3, 5, 8 and 16 ranks (and 64 and
 * 256 in the scale case) with seeded random splits of the same global batch (samples
 * in global order, empty ranks in every world of W >= 2, many in the scale case) and
 * a pool of 0 (NULL) to 4 threads chosen per rank run two training steps
 * (momentum or cumulative running stats carried from step to step) and backward with
 * sync_grad_params = 1, and every output must equal W = 1's BIT FOR BIT (memcmp): y
 * and grad_input (the whole batch assembled from the ranks' views of one buffer),
 * and on every rank save_mean, save_invstd, running_mean, running_var, grad_weight,
 * grad_bias, global_count and num_batches_tracked. Activations f32, bf16 and f16,
 * contiguous and channels-last, 2-D to 5-D; a 2-D batch of more samples than the
 * layer groups at once and a 3-D one whose samples span several reduction chunks.
 * The ISA case forks a child with SBN_FORCE_SCALAR=1 (read once per process, so the
 * child chooses afresh) whose worlds must equal the parent's default-kernel W = 1.
 * The negative control runs the DEFAULT mode on data with a large mean (1000 + N(0,1))
 * over two splits and requires at least one output to differ, which proves the
 * bitwise comparison can fail. Values come from a seeded generator, never hard-coded.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "ref/ref.h"
#include "support/layer_tol.h"
#include "support/optest.h"
#include "support/world.h"
#include "syncbn/layer.h"

#define STEPS 2
#define EPS 1e-5
#define TIMEOUT 60.0 /* seconds: never fires in a passing run */
#define MAX_WORLD 256

/* A rank's per-step outputs besides y and grad_input; P_CTR: global_count, num_batches_tracked. */
enum { P_SM, P_SI, P_RM, P_RV, P_GW, P_GB, P_CTR, P_COUNT };
static const char *const k_pc_names[P_COUNT] = {
    "save_mean", "save_invstd", "running_mean", "running_var", "grad_weight", "grad_bias",
    "global_count/num_batches_tracked"};

/* One configuration: dtypes, layout, the global shape, the running-stat rule, the data. */
typedef struct rcase {
    sbn_dtype xdt, pdt, sdt; /* x/dy/y/grad_input; weight/bias/running/grad params; save_* */
    tsup_layout layout;
    int nd;
    int64_t dims[5]; /* global (N, C, ...) */
    int cumulative;
    double x_mean, x_std;
    uint64_t seed;
} rcase;

/* The inputs of a case, the same for every world: logical values and global buffers. */
typedef struct rinputs {
    const rcase *cs;
    int64_t n, c, s, numel;
    double *x[STEPS], *dy[STEPS];   /* logical row-major, rounded to xdt (for the oracle) */
    tsup_buf xb[STEPS], dyb[STEPS]; /* the same values in xdt and the case's layout */
    double *w, *b, *rm0, *rv0;      /* rounded to pdt */
} rinputs;

/* How a world runs: its size, the split along N, each rank's pool, the mode. */
typedef struct rplan {
    int world, reproducible;
    int64_t n[MAX_WORLD], off[MAX_WORLD];
    int threads[MAX_WORLD]; /* 0: no pool (NULL); else a pool of that many threads */
} rplan;

/* ---- inputs ---- */

static void make_inputs(const rcase *cs, rinputs *in)
{
    tsup_rng rng = tsup_rng_seed(cs->seed);
    int64_t i;
    int k, d;
    memset(in, 0, sizeof *in);
    in->cs = cs;
    in->n = cs->dims[0];
    in->c = cs->dims[1];
    in->s = 1;
    for (d = 2; d < cs->nd; d++) in->s *= cs->dims[d];
    in->numel = in->n * in->c * in->s;
    for (k = 0; k < STEPS; k++) {
        in->x[k] = tsup_alloc_fill(in->numel, 0);
        in->dy[k] = tsup_alloc_fill(in->numel, 0);
        for (i = 0; i < in->numel; i++)
            in->x[k][i] = tsup_round(cs->xdt, cs->x_mean + cs->x_std * tsup_normal(&rng) +
                                                  0.25 * (double)((i / in->s) % in->c % 4));
        tsup_fill_normal(&rng, in->dy[k], in->numel, 0.1, 1.0, cs->xdt);
        in->xb[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, in->x[k]);
        in->dyb[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, in->dy[k]);
    }
    in->w = tsup_alloc_fill(4 * in->c, 0);
    in->b = in->w + in->c;
    in->rm0 = in->b + in->c;
    in->rv0 = in->rm0 + in->c;
    for (i = 0; i < in->c; i++) {
        in->w[i] = tsup_round(cs->pdt, tsup_normal(&rng));
        in->b[i] = tsup_round(cs->pdt, tsup_normal(&rng));
        in->rm0[i] = tsup_round(cs->pdt, cs->cumulative ? 7.0 : tsup_normal(&rng));
        in->rv0[i] = tsup_round(cs->pdt, cs->cumulative ? 9.0 : 0.5 + tsup_uniform(&rng));
    }
}

static void free_inputs(rinputs *in)
{
    int k;
    for (k = 0; k < STEPS; k++) {
        TSUP_FREE_ALL(in->x[k], in->dy[k]);
        TSUP_BUF_FREE(&in->xb[k], &in->dyb[k]);
    }
    free(in->w); /* b, rm0, rv0 too */
}

static void case_desc(const rcase *cs, char *buf, size_t size)
{
    char shape[96];
    tsup_shape_str(cs->nd, cs->dims, shape, sizeof shape);
    snprintf(buf, size, "%s x %s params %s save %s %s%s x~N(%g,%g) seed %llu", shape,
             sbn_dtype_name(cs->xdt), sbn_dtype_name(cs->pdt), sbn_dtype_name(cs->sdt),
             tsup_layout_name(cs->layout), cs->cumulative ? " cumulative" : "", cs->x_mean,
             cs->x_std, (unsigned long long)cs->seed);
}

/* ---- plans: splits and pools ---- */

/*
 * A random split of ntot samples over `world` ranks in global order: each rank is
 * closed with probability p_empty, one more is always closed when world >= 2, the
 * open ranks share the batch at world-1 sorted random cut points (more empty ranks
 * when cuts coincide); each rank's pool has 0..max_threads threads.
 */
static void make_plan(tsup_rng *rng, int64_t ntot, int world, double p_empty, int max_threads,
                      int reproducible, rplan *pl)
{
    int open[MAX_WORLD], m = 0, r, i, j, e = (int)(tsup_uniform(rng) * world);
    int64_t cuts[MAX_WORLD + 1], at = 0;
    memset(pl, 0, sizeof *pl);
    pl->world = world;
    pl->reproducible = reproducible;
    for (r = 0; r < world; r++) m += open[r] = r != e && tsup_uniform(rng) >= p_empty;
    if (m == 0) /* W = 1, or every rank closed: one rank takes everything */
        m = open[(e + 1) % world] = 1;
    cuts[0] = 0;
    cuts[m] = ntot;
    for (i = 1; i < m; i++) { /* insertion sort of the cut points */
        int64_t v = (int64_t)(tsup_uniform(rng) * (double)(ntot + 1));
        for (j = i; j > 1 && cuts[j - 1] > v; j--) cuts[j] = cuts[j - 1];
        cuts[j] = v;
    }
    for (r = 0, i = 0; r < world; r++) {
        pl->off[r] = at;
        pl->n[r] = open[r] ? cuts[i + 1] - cuts[i] : 0;
        i += open[r];
        at += pl->n[r];
        pl->threads[r] = (int)(tsup_uniform(rng) * (double)(max_threads + 1));
    }
}

static void plan_desc(const rplan *pl, char *buf, size_t size)
{
    size_t at;
    int r;
    snprintf(buf, size, "%s W=%d split", pl->reproducible ? "reproducible" : "default", pl->world);
    for (r = 0; r < pl->world && (at = strlen(buf)) + 24 < size; r++)
        snprintf(buf + at, size - at, "%s%lld", r ? "," : " ", (long long)pl->n[r]);
    for (r = 0; r < pl->world && (at = strlen(buf)) + 16 < size; r++)
        snprintf(buf + at, size - at, "%s%d", r ? "," : " threads ", pl->threads[r]);
}

/* ---- what a world produced, as bytes ---- */

/*
 * A blob: for each step the global y and grad_input buffers (span bytes each, the
 * layout's memory order), then per rank and step the P_COUNT outputs (slot bytes
 * each: C values of the output's dtype, or the two int64 counters).
 */
static size_t blob_span(const rinputs *in)
{
    return ((size_t)in->numel * sbn_dtype_size(in->cs->xdt) + 7) & ~(size_t)7;
}

static size_t blob_slot(const rinputs *in)
{
    return (size_t)(in->c > 2 ? in->c : 2) * 8;
}

static size_t blob_bytes(const rinputs *in, int world)
{
    return 2 * STEPS * blob_span(in) + (size_t)world * STEPS * P_COUNT * blob_slot(in);
}

static unsigned char *blob_act(const rinputs *in, unsigned char *blob, int k, int grad)
{
    return blob + (size_t)(2 * k + grad) * blob_span(in);
}

static unsigned char *blob_pc(const rinputs *in, unsigned char *blob, int r, int k, int j)
{
    return blob + 2 * STEPS * blob_span(in) +
           (((size_t)r * STEPS + (size_t)k) * P_COUNT + (size_t)j) * blob_slot(in);
}

static sbn_dtype pc_dtype(const rcase *cs, int j)
{
    return j == P_SM || j == P_SI ? cs->sdt : j == P_CTR ? SBN_I64 : cs->pdt;
}

/* Elements of output j: C, or the 2 counters. */
static int64_t pc_count(const rinputs *in, int j)
{
    return j == P_CTR ? 2 : in->c;
}

/* ---- one world ---- */

typedef struct world_run {
    const rinputs *in;
    const rplan *pl;
    tsup_buf y[STEPS], gi[STEPS]; /* global buffers; each rank writes its rows */
    unsigned char *blob;
} world_run;

/* A rank thread's context (rank, failed, msg: the fields world.h's R* macros use). */
typedef struct rank_ctx {
    world_run *run;
    sbn_comm_t *comm;
    int rank, failed;
    char msg[600];
} rank_ctx;

/* Rows [off, off + n) of a global view: the same strides, data moved to row off. */
static sbn_tensor rows_of(const sbn_tensor *whole, int64_t off, int64_t n)
{
    sbn_tensor v = *whole;
    v.data = (char *)whole->data + off * whole->strides[0] * (int64_t)sbn_dtype_size(whole->dtype);
    v.shape[0] = n;
    return v;
}

static void *rank_main(void *arg)
{
    rank_ctx *cx = arg;
    world_run *run = cx->run;
    const rinputs *in = run->in;
    const rcase *cs = in->cs;
    const rplan *pl = run->pl;
    const int r = cx->rank;
    const int64_t nr = pl->n[r], off = pl->off[r];
    double *nanv = tsup_alloc_fill(in->c, NAN);
    const double *init[P_CTR] = {nanv, nanv, in->rm0, in->rv0, nanv, nanv};
    tsup_buf pcb[P_CTR], wt = tsup_make_1d(cs->pdt, in->c, in->w);
    tsup_buf bs = tsup_make_1d(cs->pdt, in->c, in->b);
    sbn_tensor x0 = rows_of(&in->xb[0].view, off, nr);
    int64_t ctr[2] = {-1, 0}; /* global_count, num_batches_tracked */
    sbn_pool_t *pool = NULL;
    sbn_syncbn_config cfg;
    size_t bytes = 0;
    void *ws;
    int k, j;

    for (j = 0; j < P_CTR; j++) pcb[j] = tsup_make_1d(pc_dtype(cs, j), in->c, init[j]);
    if (pl->threads[r] > 0) RNOTE_STATUS(cx, sbn_pool_create(pl->threads[r], &pool), SBN_OK);
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = pl->reproducible;
    cfg.sync_grad_params = 1;
    cfg.cumulative = cs->cumulative;
    if (cs->cumulative) cfg.momentum = 0.7; /* must be ignored */
    RNOTE_STATUS(cx, sbn_syncbn_workspace_size(&x0, &bytes), SBN_OK);
    ws = malloc(bytes ? bytes : 1);
    /* No early return: a rank that stopped would leave its peers waiting. */
    for (k = 0; k < STEPS; k++) {
        sbn_tensor x = rows_of(&in->xb[k].view, off, nr), dy = rows_of(&in->dyb[k].view, off, nr);
        sbn_tensor y = rows_of(&run->y[k].view, off, nr), gi = rows_of(&run->gi[k].view, off, nr);
        RNOTE_STATUS(cx, sbn_syncbn_forward(cx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &x,
                                            .weight = &wt.view, .bias = &bs.view,
                                            .running_mean = &pcb[P_RM].view,
                                            .running_var = &pcb[P_RV].view,
                                            .num_batches_tracked = &ctr[1], .y = &y,
                                            .save_mean = &pcb[P_SM].view,
                                            .save_invstd = &pcb[P_SI].view,
                                            .global_count = &ctr[0]}, ws, bytes, pool), SBN_OK);
        RNOTE_STATUS(cx, sbn_syncbn_backward(cx->comm, &cfg, &(sbn_syncbn_backward_io){.dy = &dy,
                                             .x = &x, .weight = &wt.view,
                                             .save_mean = &pcb[P_SM].view,
                                             .save_invstd = &pcb[P_SI].view,
                                             .global_count = ctr[0], .grad_input = &gi,
                                             .grad_weight = &pcb[P_GW].view,
                                             .grad_bias = &pcb[P_GB].view}, ws, bytes, pool),
                     SBN_OK);
        for (j = 0; j < P_COUNT; j++)
            memcpy(blob_pc(in, run->blob, r, k, j), j == P_CTR ? (void *)ctr : pcb[j].view.data,
                   (size_t)pc_count(in, j) * sbn_dtype_size(pc_dtype(cs, j)));
    }
    for (j = 0; j < P_CTR; j++) {
        RNOTE(cx, tsup_guard_intact(&pcb[j]), "write outside %s", k_pc_names[j]);
        tsup_free(&pcb[j]);
    }
    TSUP_BUF_FREE(&wt, &bs);
    sbn_pool_destroy(pool);
    TSUP_FREE_ALL(ws, nanv);
    return NULL;
}

/*
 * Runs the plan on a fresh threads world (one pthread per rank) and fills blob (of
 * blob_bytes(in, world)). Returns 0, or 1 after reporting the first failing rank.
 */
static int run_world(const rinputs *in, const rplan *pl, unsigned char *blob, const char *desc)
{
    const rcase *cs = in->cs;
    const int world = pl->world;
    sbn_comm_t **comms = calloc((size_t)world, sizeof *comms);
    rank_ctx *cx = calloc((size_t)world, sizeof *cx);
    pthread_t *threads = calloc((size_t)world, sizeof *threads);
    double *nanv = tsup_alloc_fill(in->numel, NAN);
    size_t act_bytes = (size_t)in->numel * sbn_dtype_size(cs->xdt);
    pthread_attr_t attr;
    world_run run;
    int r, k, bad = 0, failed_ranks = 0;
    sbn_status s;

    run.in = in;
    run.pl = pl;
    run.blob = blob;
    memset(blob, 0, blob_bytes(in, world));
    for (k = 0; k < STEPS; k++) {
        run.y[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, nanv);
        run.gi[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, nanv);
    }
    s = sbn_comm_threads_create(world, TIMEOUT, comms);
    if (s != SBN_OK) {
        sbn_test_fail(__FILE__, __LINE__, "%s: sbn_comm_threads_create(%d): %s (%s)", desc, world,
                      sbn_status_name(s), sbn_last_error());
        bad = 1;
        goto done;
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)2 << 20); /* 256 ranks: keep the address space small */
    for (r = 0; r < world; r++) {
        cx[r].run = &run;
        cx[r].comm = comms[r];
        cx[r].rank = r;
        if (pthread_create(&threads[r], &attr, rank_main, &cx[r]) != 0) {
            sbn_test_fail(__FILE__, __LINE__, "%s: pthread_create failed", desc);
            exit(1); /* the ranks already started would wait for this one */
        }
    }
    pthread_attr_destroy(&attr);
    for (r = 0; r < world; r++) pthread_join(threads[r], NULL);
    for (r = 0; r < world; r++) {
        if (cx[r].failed && failed_ranks++ == 0)
            sbn_test_fail(__FILE__, __LINE__, "%s: %s", desc, cx[r].msg);
        sbn_comm_destroy(comms[r]);
    }
    if (failed_ranks > 1) fprintf(stderr, "    (%d ranks failed in all)\n", failed_ranks);
    bad = failed_ranks > 0;
    for (k = 0; k < STEPS && !bad; k++) {
        if (!tsup_guard_intact(&run.y[k]) || !tsup_guard_intact(&run.gi[k])) {
            sbn_test_fail(__FILE__, __LINE__, "%s: step %d: write outside y or grad_input", desc,
                          k);
            bad = 1;
        }
        memcpy(blob_act(in, blob, k, 0), run.y[k].view.data, act_bytes);
        memcpy(blob_act(in, blob, k, 1), run.gi[k].view.data, act_bytes);
    }
done:
    for (k = 0; k < STEPS; k++) TSUP_BUF_FREE(&run.y[k], &run.gi[k]);
    TSUP_FREE_ALL(comms, cx, threads, nanv);
    return bad;
}

/* ---- bitwise comparison ---- */

/* The first element (of n, es bytes each) whose bytes differ, or -1. */
static int64_t first_diff(const unsigned char *a, const unsigned char *b, int64_t n, size_t es)
{
    int64_t i;
    if (memcmp(a, b, (size_t)n * es) == 0) return -1;
    for (i = 0; i < n; i++)
        if (memcmp(a + (size_t)i * es, b + (size_t)i * es, es) != 0) return i;
    return -1;
}

/* Element i of a dtype array of bytes, as a double. */
static double element(const unsigned char *bytes, sbn_dtype dtype, int64_t i)
{
    sbn_tensor v = sbn_tensor_1d((void *)bytes, dtype, i + 1);
    return tsup_get1(&v, i);
}

/*
 * Compares every output of a world (blob of `world` ranks) with the W = 1 reference,
 * bit for bit: y and grad_input of the whole batch, then each rank's other outputs
 * against W = 1's rank 0. names == NULL: reports the first difference as a failure
 * and returns 1; else lists the differing outputs' names there and counts them all.
 */
static int compare_blobs(const rinputs *in, unsigned char *ref, unsigned char *got, int world,
                         const char *desc, char *names, size_t size)
{
    const rcase *cs = in->cs;
    int diffs = 0, k, r, j;
    for (r = -1; r < world; r++) /* r = -1: y and grad_input */
        for (k = 0; k < STEPS; k++)
            for (j = 0; j < (r < 0 ? 2 : P_COUNT); j++) {
                unsigned char *a = r < 0 ? blob_act(in, got, k, j) : blob_pc(in, got, r, k, j);
                unsigned char *b = r < 0 ? blob_act(in, ref, k, j) : blob_pc(in, ref, 0, k, j);
                const char *what = r < 0 ? (j ? "grad_input" : "y") : k_pc_names[j];
                sbn_dtype dt = r < 0 ? cs->xdt : pc_dtype(cs, j);
                int64_t i = first_diff(a, b, r < 0 ? in->numel : pc_count(in, j),
                                       sbn_dtype_size(dt));
                if (i < 0) continue;
                diffs++;
                if (names == NULL) {
                    char where[40] = "the batch (memory order)";
                    if (r >= 0) snprintf(where, sizeof where, "rank %d", r);
                    sbn_test_fail(__FILE__, __LINE__, "%s: step %d: %s of %s differs from W = "
                                  "1's at element %lld: %a vs %a", desc, k, what, where,
                                  (long long)i, element(a, dt, i), element(b, dt, i));
                    return diffs;
                }
                if (strstr(names, what) == NULL && strlen(names) + strlen(what) + 2 < size)
                    snprintf(names + strlen(names), size - strlen(names), "%s%s",
                             names[0] ? ", " : "", what);
            }
    return diffs;
}

/* ---- the double oracle (tolerances: support/layer_tol.h, docs/numerics.md) ---- */

/* Reads y (grad 0) or grad_input (grad 1) of step k from a blob as logical doubles. */
static void read_act(const rinputs *in, unsigned char *blob, int k, int grad, double *out)
{
    sbn_tensor v = in->xb[k].view;
    v.data = blob_act(in, blob, k, grad);
    tsup_read(&v, out);
}

/* The W = 1 blob against whole-batch batch norm in double; returns at the first failure. */
static void oracle_check(const rinputs *in, unsigned char *blob, const char *desc)
{
    const rcase *cs = in->cs;
    const int64_t C = in->c, S = in->s, N = in->n, R = N * S, numel = in->numel;
    double u64 = ldexp(1.0, -53), uo = tsup_unit_roundoff(cs->xdt), fl = tsup_abs_floor(cs->xdt);
    double um = tsup_map_u(cs->xdt);
    double up = tsup_unit_roundoff(cs->pdt), us = tsup_unit_roundoff(cs->sdt);
    double *v = tsup_alloc_fill(28 * C + 3 * numel, 0), *wnt = v + 28 * C, *tl = wnt + numel;
    double *out = tl + numel, *mean = v, *is = v + C, *var = v + 2 * C, *ms = v + 3 * C;
    double *iss = v + 4 * C, *srel = v + 5 * C, *uc = v + 6 * C, *orm = v + 7 * C;
    double *orv = v + 8 * C, *trm = v + 9 * C, *trv = v + 10 * C, *avg = v + 11 * C;
    double *big = v + 13 * C, *prev = v + 14 * C, *pc = v + 16 * C, *tol = v + 22 * C;
    double *gw = v + 24 * C, *gb = v + 25 * C, *absdy = v + 26 * C, *absdx = v + 27 * C;
    int64_t ch, ctr[2];
    int k, j;

    memcpy(orm, in->rm0, (size_t)C * sizeof *orm);
    memcpy(orv, in->rv0, (size_t)C * sizeof *orv);
    for (k = 0; k < STEPS; k++) {
        double m = cs->cumulative ? 1.0 / (k + 1) : 0.1;
        memcpy(ctr, blob_pc(in, blob, 0, k, P_CTR), sizeof ctr);
        CHECK_MSG(ctr[0] == R && ctr[1] == k + 1, "%s step %d: global_count %lld, "
                  "num_batches_tracked %lld", desc, k, (long long)ctr[0], (long long)ctr[1]);
        for (j = 0; j < P_CTR; j++) { /* rank 0's per-channel outputs as doubles */
            sbn_tensor t = sbn_tensor_1d(blob_pc(in, blob, 0, k, j), pc_dtype(cs, j), C);
            tsup_read(&t, pc + j * C);
        }
        memcpy(prev, orm, (size_t)C * sizeof *orm);
        memcpy(prev + C, orv, (size_t)C * sizeof *orv);
        ref_batch_norm_train(in->x[k], N, C, S, in->w, in->b, m, EPS, wnt, mean, is, orm, orv);
        ref_mean_var(in->x[k], N, C, S, mean, var);
        for (ch = 0; ch < C; ch++) {
            double sd = sqrt(var[ch] + EPS), vu = var[ch] * (double)R / (double)(R - 1);
            /* the relative error of the double statistics, 8 R u64 (1 + |mean|/std) */
            srel[ch] = 8.0 * (double)R * u64 * (1.0 + fabs(mean[ch]) / sd);
            orm[ch] = tsup_round(cs->pdt, orm[ch]);
            orv[ch] = tsup_round(cs->pdt, orv[ch]);
            avg[ch] += mean[ch] / STEPS;
            avg[C + ch] += vu / STEPS;
            big[ch] = fmax(big[ch], fmax(fabs(mean[ch]), vu));
            uc[ch] = 4.0 * (double)R * u64 + 4.0 * us + 2.0 * srel[ch];
            ms[ch] = tsup_round(cs->sdt, mean[ch]);
            iss[ch] = tsup_round(cs->sdt, is[ch]);
            tol[ch] = 2.0 * us * fabs(mean[ch]) + srel[ch] * sd;
            tol[C + ch] = (2.0 * us + srel[ch]) * is[ch];
            trm[ch] = (1.0 - m) * trm[ch] +
                      4.0 * up * (fabs((1.0 - m) * prev[ch]) + fabs(m * mean[ch])) +
                      m * srel[ch] * sd + 2.0 * up * fabs(orm[ch]);
            trv[ch] = (1.0 - m) * trv[ch] +
                      4.0 * up * (fabs((1.0 - m) * prev[C + ch]) + fabs(m * vu)) +
                      2.0 * m * vu * srel[ch] + 2.0 * up * fabs(orv[ch]);
        }
        tsup_layer_fwd_tol(in->x[k], N, C, S, in->w, in->b, mean, is, srel, uo, fl, um, wnt, tl);
        read_act(in, blob, k, 0, out);
        CHECK_MSG(tsup_close_tol("y", out, wnt, tl, numel), "%s step %d: y differs", desc, k);
        CHECK_MSG(tsup_close_tol("save_mean", pc + P_SM * C, mean, tol, C) &&
                  tsup_close_tol("save_invstd", pc + P_SI * C, is, tol + C, C),
                  "%s step %d: save_* differ", desc, k);
        CHECK_MSG(tsup_close_tol("running_mean", pc + P_RM * C, orm, trm, C) &&
                  tsup_close_tol("running_var", pc + P_RV * C, orv, trv, C),
                  "%s step %d: running stats differ", desc, k);
        /* Backward: whole batch with the save_* values rounded as stored; params synced. */
        ref_batch_norm_backward_train(in->dy[k], in->x[k], N, C, S, in->w, ms, iss, wnt, gw, gb);
        tsup_layer_bwd_tol(in->dy[k], in->x[k], N, C, S, in->w, ms, iss, uc, uo, fl, um, wnt, tl,
                           absdy, absdx);
        read_act(in, blob, k, 1, out);
        CHECK_MSG(tsup_close_tol("grad_input", out, wnt, tl, numel),
                  "%s step %d: grad_input differs", desc, k);
        for (ch = 0; ch < C; ch++) {
            tol[ch] = 2.0 * up * fabs(gw[ch]) + 4.0 * uc[ch] * absdx[ch];
            tol[C + ch] = 2.0 * up * fabs(gb[ch]) + 4.0 * uc[ch] * absdy[ch];
        }
        CHECK_MSG(tsup_close_tol("grad_weight", pc + P_GW * C, gw, tol, C) &&
                  tsup_close_tol("grad_bias", pc + P_GB * C, gb, tol + C, C),
                  "%s step %d: synced parameter gradients differ", desc, k);
    }
    if (cs->cumulative) {
        /* After STEPS steps the running stats are the plain averages of the batches' stats. */
        for (ch = 0; ch < C; ch++) {
            tol[ch] = trm[ch] + 4.0 * STEPS * up * big[ch];
            tol[C + ch] = trv[ch] + 4.0 * STEPS * up * big[ch];
        }
        CHECK_MSG(tsup_close_tol("cumulative running_mean", pc + P_RM * C, avg, tol, C) &&
                  tsup_close_tol("cumulative running_var", pc + P_RV * C, avg + C, tol + C, C),
                  "%s: the cumulative running stats are not the batch averages", desc);
    }
    free(v);
}

/* ---- the property: every world equals W = 1 ---- */

/*
 * The W = 1 reference of cs (one rank, no pool), checked against the oracle, then
 * every world of `worlds`, `reps` times with a fresh random split (each rank empty with
 * probability p_empty, more in later repetitions) and pools of 0..max_threads: each
 * must equal the reference bit for bit.
 */
static void run_case(const rcase *cs, const int *worlds, int nworlds, int reps, double p_empty,
                     int max_threads)
{
    rinputs in;
    rplan *pl = malloc(sizeof *pl);
    tsup_rng rng = tsup_rng_seed(cs->seed * 7919 + 13);
    unsigned char *ref, *got;
    char cdesc[200], desc[600];
    int i, most = 1, r, rep, runs = 0;

    for (i = 0; i < nworlds; i++) most = worlds[i] > most ? worlds[i] : most;
    make_inputs(cs, &in);
    ref = malloc(blob_bytes(&in, 1));
    got = malloc(blob_bytes(&in, most));
    case_desc(cs, cdesc, sizeof cdesc);
    make_plan(&rng, in.n, 1, 0.0, 0, 1, pl);
    pl->threads[0] = 0;
    snprintf(desc, sizeof desc, "%s: reference W=1", cdesc);
    if (run_world(&in, pl, ref, desc) == 0) oracle_check(&in, ref, desc);
    for (rep = 0; rep < reps; rep++)
        for (i = 0; i < nworlds && sbn_test_failures() == 0; i++, runs++) {
            make_plan(&rng, in.n, worlds[i], p_empty + 0.35 * rep, max_threads, 1, pl);
            if (worlds[i] >= 64) /* mostly no extra threads, a few ranks with a pool of 2 */
                for (r = 0; r < worlds[i]; r += 17) pl->threads[r] = 2;
            snprintf(desc, sizeof desc, "%s: ", cdesc);
            plan_desc(pl, desc + strlen(desc), sizeof desc - strlen(desc));
            if (run_world(&in, pl, got, desc) == 0)
                compare_blobs(&in, ref, got, worlds[i], desc, NULL, 0);
        }
    if (sbn_test_failures() == 0)
        printf("    %s: %d worlds bitwise equal to W = 1\n", cdesc, runs);
    TSUP_FREE_ALL(ref, got, pl);
    free_inputs(&in);
}

static const int k_worlds[] = {1, 2, 3, 5, 8, 16};

/* Every rank 2..5 and both layouts for one activation dtype. */
static void run_matrix(sbn_dtype xdt, uint64_t seed)
{
    static const int64_t dims[4][5] = {{29, 6}, {19, 4, 7}, {13, 3, 3, 5}, {11, 5, 2, 3, 2}};
    int d, l;
    for (d = 0; d < 4; d++)
        for (l = 0; l < 2; l++) {
            rcase cs;
            memset(&cs, 0, sizeof cs);
            cs.xdt = xdt;
            cs.pdt = d == 3 ? (xdt == SBN_F16 ? SBN_F16 : SBN_BF16) : SBN_F32;
            cs.sdt = d % 2 ? SBN_F32 : SBN_F64;
            cs.layout = l ? TSUP_CHANNELS_LAST : TSUP_CHANNELS_FIRST;
            cs.nd = d + 2;
            memcpy(cs.dims, dims[d], sizeof cs.dims);
            cs.x_mean = 0.5;
            cs.x_std = 1.0;
            cs.seed = seed + (uint64_t)(10 * d + l);
            run_case(&cs, k_worlds, TSUP_COUNT(k_worlds), 2, 0.25, 4);
            RETURN_IF_FAILED();
        }
}

/* One harness case (one child process, one timeout) per activation dtype. */
#define MATRIX_CASE(name, dtype, seed) \
    static void name(void) { run_matrix(dtype, seed); }
MATRIX_CASE(repro_f32, SBN_F32, 100)
MATRIX_CASE(repro_bf16, SBN_BF16, 200)
MATRIX_CASE(repro_f16, SBN_F16, 300)

/*
 * Sizes at the layer's internal boundaries: a 2-D batch of 2500 samples (more than
 * one group of SBN_LAYER_GROUP_CELLS cells, so W = 1 cuts the groups elsewhere than
 * the ranks do), a 3-D batch whose samples span two reduction chunks (2100 > 2048
 * elements), 20 channels (61 accumulators: more than the world, the other threads
 * allreduce path); then the cumulative average and a large mean.
 */
static void repro_boundaries_and_cumulative(void)
{
    static const rcase cases[] = {
        /* x       params   save     layout               nd dims              cum mean std seed */
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 2, {2500, 2}, 0, 0.5, 1.0, 401},
        {SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 2, {2500, 2}, 0, 0.5, 1.0, 402},
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 3, {6, 2, 2100}, 0, 0.5, 1.0, 403},
        {SBN_F16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 3, {6, 2, 2100}, 0, 0.5, 1.0, 404},
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_LAST, 4, {9, 20, 2, 3}, 0, 0.5, 1.0, 405},
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_LAST, 4, {13, 3, 3, 5}, 1, 0.5, 1.0, 406},
        {SBN_BF16, SBN_BF16, SBN_F32, TSUP_CHANNELS_FIRST, 3, {19, 4, 7}, 1, -2.0, 3.0, 407},
        {SBN_F16, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 5, {11, 5, 2, 3, 2}, 1, 0.5, 1.0, 408},
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, {17, 3, 2, 2}, 0, 100.0, 0.5, 409},
    };
    int i;
    for (i = 0; i < TSUP_COUNT(cases); i++) {
        run_case(&cases[i], k_worlds, TSUP_COUNT(k_worlds), 2, 0.25, 4);
        RETURN_IF_FAILED();
    }
}

/* The scale simulation: 64 and 256 ranks on 300 samples, many ranks empty. */
static void repro_scale_64_256(void)
{
    static const rcase cases[] = {
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, {300, 3, 2, 2}, 0, 0.5, 1.0, 501},
        {SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 4, {300, 3, 2, 2}, 1, 0.5, 1.0, 502},
    };
    static const int worlds[] = {64, 256};
    int i;
    for (i = 0; i < TSUP_COUNT(cases); i++) {
        run_case(&cases[i], worlds, TSUP_COUNT(worlds), 1, 0.5, 1);
        RETURN_IF_FAILED();
    }
}

/* ---- ISA variants: SBN_FORCE_SCALAR=1 in a child against the default kernels ---- */

static void repro_isa_variants(void)
{
    static const rcase cases[] = {
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, {9, 5, 7, 9}, 0, 0.5, 1.0, 601},
        {SBN_F32, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 4, {9, 5, 7, 9}, 1, 0.5, 1.0, 602},
        {SBN_BF16, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 3, {7, 3, 67}, 0, 0.5, 1.0, 603},
        {SBN_BF16, SBN_BF16, SBN_F32, TSUP_CHANNELS_LAST, 5, {8, 17, 2, 3, 5}, 0, 0.5, 1.0, 604},
        {SBN_F16, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 3, {5, 2, 2100}, 0, 0.5, 1.0, 605},
        {SBN_F16, SBN_F16, SBN_F32, TSUP_CHANNELS_LAST, 2, {301, 7}, 1, 0.5, 1.0, 606},
    };
    enum { NC = (int)(sizeof cases / sizeof cases[0]) };
    rinputs in[NC];
    rplan *pl = malloc(2 * NC * sizeof *pl);
    size_t at[NC + 1], total;
    unsigned char *shared, *ref = NULL;
    char cdesc[200], desc[600];
    int i, status = 0;
    pid_t pid;

    /* Inputs and plans first (test code only: no kernel is chosen before the fork). */
    at[0] = 0;
    for (i = 0; i < NC; i++) {
        tsup_rng rng = tsup_rng_seed(cases[i].seed);
        make_inputs(&cases[i], &in[i]);
        make_plan(&rng, in[i].n, 1, 0.0, 4, 1, &pl[2 * i]);
        make_plan(&rng, in[i].n, 3, 0.25, 4, 1, &pl[2 * i + 1]);
        at[i + 1] = at[i] + blob_bytes(&in[i], 1) + blob_bytes(&in[i], 3);
    }
    total = at[NC];
    shared = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) { /* the child chooses its kernels afresh: forced scalar */
        int bad = setenv("SBN_FORCE_SCALAR", "1", 1) != 0 ||
                  strcmp(sbn__kernels()->isa, "scalar") != 0;
        for (i = 0; i < NC && !bad; i++) {
            case_desc(&cases[i], cdesc, sizeof cdesc);
            bad = run_world(&in[i], &pl[2 * i], shared + at[i], cdesc) ||
                  run_world(&in[i], &pl[2 * i + 1], shared + at[i] + blob_bytes(&in[i], 1), cdesc);
        }
        _exit(bad ? 3 : 0);
    }
    while (waitpid(pid, &status, 0) < 0) {
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the SBN_FORCE_SCALAR=1 child failed (status %d)", status);
    CHECK(unsetenv("SBN_FORCE_SCALAR") == 0);
    printf("    forced scalar (child) against %s (default, W = 1)\n", sbn__kernels()->isa);
    for (i = 0; i < NC; i++) {
        int w;
        unsigned char *blob = shared + at[i];
        free(ref);
        ref = malloc(blob_bytes(&in[i], 1));
        case_desc(&cases[i], cdesc, sizeof cdesc);
        pl[2 * i].threads[0] = 0;
        snprintf(desc, sizeof desc, "%s: default kernels W=1", cdesc);
        if (run_world(&in[i], &pl[2 * i], ref, desc)) break;
        oracle_check(&in[i], ref, desc);
        for (w = 0; w < 2 && sbn_test_failures() == 0; w++) {
            snprintf(desc, sizeof desc, "%s: forced scalar ", cdesc);
            plan_desc(&pl[2 * i + w], desc + strlen(desc), sizeof desc - strlen(desc));
            compare_blobs(&in[i], ref, blob, w ? 3 : 1, desc, NULL, 0);
            blob += blob_bytes(&in[i], 1);
        }
        if (sbn_test_failures()) break;
    }
    for (i = 0; i < NC; i++) free_inputs(&in[i]);
    munmap(shared, total);
    TSUP_FREE_ALL(ref, pl);
}

/* ---- the negative control: the default mode depends on the split ---- */

/*
 * The default mode deposits each rank's whole-batch moments, rounded once per rank,
 * so its bits depend on the split. With a large mean (1000 + N(0, 1), f32) the
 * rounding of the per-rank means and M2 reaches the global statistics, and at least
 * one output must differ between W = 1 and a 3-rank split; the same comparison must
 * find no difference in reproducible mode. If the default mode ever gave the same
 * bits here, the control would fail and the data would have to change.
 */
static void default_mode_depends_on_split(void)
{
    static const rcase cs = {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 3, {24, 3, 5},
                             0, 1000.0, 1.0, 701};
    rinputs in;
    rplan *pl = calloc(1, sizeof *pl);
    unsigned char *ref, *got;
    char names[300] = "", desc[300];
    int mode, diffs = 0;
    static const int64_t split[3] = {7, 0, 17};

    make_inputs(&cs, &in);
    ref = malloc(blob_bytes(&in, 1));
    got = malloc(blob_bytes(&in, 3));
    for (mode = 0; mode < 2 && sbn_test_failures() == 0; mode++) {
        pl->world = 1;
        pl->reproducible = mode;
        pl->n[0] = in.n;
        pl->off[0] = 0;
        pl->threads[0] = 0;
        if (run_world(&in, pl, ref, "control W=1")) break;
        pl->world = 3;
        pl->n[0] = split[0], pl->n[1] = split[1], pl->n[2] = split[2];
        pl->off[0] = 0, pl->off[1] = split[0], pl->off[2] = split[0] + split[1];
        plan_desc(pl, desc, sizeof desc);
        if (run_world(&in, pl, got, desc)) break;
        if (mode == 0) {
            diffs = compare_blobs(&in, ref, got, 3, desc, names, sizeof names);
            printf("    default mode, W=1 vs split 7,0,17: %d outputs differ (%s)\n", diffs,
                   names);
            if (diffs == 0)
                sbn_test_fail(__FILE__, __LINE__, "the default mode gave the same bits for W=1 "
                              "and the split 7,0,17: this control cannot show that the bitwise "
                              "comparison fails; choose data whose per-rank rounding differs");
        } else {
            compare_blobs(&in, ref, got, 3, desc, NULL, 0);
        }
    }
    free_inputs(&in);
    TSUP_FREE_ALL(ref, got, pl);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(repro_f32),
    SBN_TEST_CASE(repro_bf16),
    SBN_TEST_CASE(repro_f16),
    SBN_TEST_CASE(repro_boundaries_and_cumulative),
    SBN_TEST_CASE(repro_scale_64_256),
    SBN_TEST_CASE(repro_isa_variants),
    SBN_TEST_CASE(default_mode_depends_on_split),
};

SBN_TEST_MAIN(k_cases)
