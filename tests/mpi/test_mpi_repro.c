/*
 * test_mpi_repro.c - the reproducible mode of the SyncBN layer across processes
 * (sbn_syncbn_config.reproducible = 1), run under mpirun with 2, 3 or 4 processes.
 * Every process generates the same global batch from a seed and first computes the
 * W = 1 result of the whole batch on its own, over a one-rank threads communicator
 * and without a pool; then the MPI world (sbn_comm_mpi_create(MPI_COMM_WORLD)) runs
 * the same two training steps with forward and backward (sync_grad_params = 1) on a
 * split along N that depends on the number of processes (seeded cut points; rank 1
 * empty from 3 processes on) with a pool of 0, 2 or 3 threads by rank. Every process
 * then compares, byte for byte (memcmp), its rows of y and grad_input and its
 * save_mean, save_invstd, running_mean, running_var, grad_weight, grad_bias,
 * global_count and num_batches_tracked with its local W = 1 values; the failure
 * counts are summed with MPI_Allreduce (mpi_cases.h) and rank 0 prints the verdict.
 * f32, bf16 and f16; contiguous and channels-last; 2-D to 5-D; momentum and the
 * cumulative average; a 2-D batch of 2500 samples (several groups in the layer).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"
#include "support/optest.h"
#include "syncbn/comm_mpi.h"
#include "syncbn/layer.h"

#define STEPS 2

enum { P_SM, P_SI, P_RM, P_RV, P_GW, P_GB, P_COUNT };
static const char *const k_pc_names[P_COUNT] = {"save_mean",   "save_invstd", "running_mean",
                                                "running_var", "grad_weight", "grad_bias"};

typedef struct mcase {
    sbn_dtype xdt, pdt, sdt; /* x/dy/y/grad_input; params and running stats; save_* */
    tsup_layout layout;
    int nd;
    int64_t dims[5]; /* global (N, C, ...) */
    int cumulative;
    uint64_t seed;
} mcase;

/* The same global inputs on every process. */
typedef struct minputs {
    int64_t n, c, sample; /* sample: elements per sample (C * spatial) */
    tsup_buf xb[STEPS], dyb[STEPS];
    double *w, *b, *rm0, *rv0;
} minputs;

/* What one rank's layer calls produced, as bytes. */
typedef struct moutputs {
    unsigned char *act[STEPS][2];         /* y, grad_input: this rank's rows */
    unsigned char *pc[STEPS][P_COUNT];    /* C * 8 bytes each */
    int64_t ctr[STEPS][2];                /* global_count, num_batches_tracked */
} moutputs;

static void make_inputs(const mcase *cs, minputs *in)
{
    tsup_rng rng = tsup_rng_seed(cs->seed);
    int64_t numel, i, s = 1;
    double *v;
    int k, d;
    memset(in, 0, sizeof *in);
    in->n = cs->dims[0];
    in->c = cs->dims[1];
    for (d = 2; d < cs->nd; d++) s *= cs->dims[d];
    in->sample = in->c * s;
    numel = in->n * in->sample;
    v = tsup_alloc_fill(numel, 0);
    for (k = 0; k < STEPS; k++) {
        for (i = 0; i < numel; i++)
            v[i] = 0.5 + 0.25 * (double)((i / s) % in->c % 4) + tsup_normal(&rng);
        for (i = 0; i < numel; i++) v[i] = tsup_round(cs->xdt, v[i]);
        in->xb[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, v);
        tsup_fill_normal(&rng, v, numel, 0.1, 1.0, cs->xdt);
        in->dyb[k] = tsup_make(cs->xdt, cs->nd, cs->dims, cs->layout, v);
    }
    free(v);
    in->w = tsup_alloc_fill(in->c, 0);
    in->b = tsup_alloc_fill(in->c, 0);
    in->rm0 = tsup_alloc_fill(in->c, 0);
    in->rv0 = tsup_alloc_fill(in->c, 0);
    for (i = 0; i < in->c; i++) {
        in->w[i] = tsup_round(cs->pdt, tsup_normal(&rng));
        in->b[i] = tsup_round(cs->pdt, tsup_normal(&rng));
        in->rm0[i] = tsup_round(cs->pdt, tsup_normal(&rng));
        in->rv0[i] = tsup_round(cs->pdt, 0.5 + tsup_uniform(&rng));
    }
}

static void free_inputs(minputs *in)
{
    int k;
    for (k = 0; k < STEPS; k++) TSUP_BUF_FREE(&in->xb[k], &in->dyb[k]);
    TSUP_FREE_ALL(in->w, in->b, in->rm0, in->rv0);
}

static void alloc_outputs(moutputs *out, const mcase *cs, int64_t rows, const minputs *in)
{
    size_t act = (size_t)(rows * in->sample) * sbn_dtype_size(cs->xdt);
    int k, j;
    memset(out, 0, sizeof *out);
    for (k = 0; k < STEPS; k++) {
        out->act[k][0] = calloc(act ? act : 1, 1);
        out->act[k][1] = calloc(act ? act : 1, 1);
        for (j = 0; j < P_COUNT; j++) out->pc[k][j] = calloc((size_t)in->c, 8);
    }
}

static void free_outputs(moutputs *out)
{
    int k, j;
    for (k = 0; k < STEPS; k++) {
        TSUP_FREE_ALL(out->act[k][0], out->act[k][1]);
        for (j = 0; j < P_COUNT; j++) free(out->pc[k][j]);
    }
}

static sbn_dtype pc_dtype(const mcase *cs, int j)
{
    return j == P_SM || j == P_SI ? cs->sdt : cs->pdt;
}

/* Rows [off, off + n) of a global view. */
static sbn_tensor rows_of(const sbn_tensor *whole, int64_t off, int64_t n)
{
    sbn_tensor v = *whole;
    v.data = (char *)whole->data + off * whole->strides[0] * (int64_t)sbn_dtype_size(whole->dtype);
    v.shape[0] = n;
    return v;
}

/* STEPS training steps of this rank's rows [off, off + n) over comm; "what" names the run. */
static void run_layer(sbn_comm_t *comm, const mcase *cs, const minputs *in, int64_t off,
                      int64_t n, int threads, moutputs *out, const char *what)
{
    double *nanv = tsup_alloc_fill(n * in->sample > in->c ? n * in->sample : in->c, NAN);
    const double *init[P_COUNT] = {nanv, nanv, in->rm0, in->rv0, nanv, nanv};
    tsup_buf pcb[P_COUNT], wt = tsup_make_1d(cs->pdt, in->c, in->w);
    tsup_buf bs = tsup_make_1d(cs->pdt, in->c, in->b);
    int64_t shape[5], nbt = 0, count = -1;
    sbn_tensor x0 = rows_of(&in->xb[0].view, off, n);
    sbn_pool_t *pool = NULL;
    sbn_syncbn_config cfg;
    size_t bytes = 0, act = (size_t)(n * in->sample) * sbn_dtype_size(cs->xdt);
    void *ws;
    int k, j;

    memcpy(shape, cs->dims, sizeof shape);
    shape[0] = n;
    for (j = 0; j < P_COUNT; j++) pcb[j] = tsup_make_1d(pc_dtype(cs, j), in->c, init[j]);
    if (threads > 0)
        EXPECT_STATUS_OF(sbn_pool_create(threads, &pool), SBN_OK, "sbn_pool_create");
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = 1;
    cfg.sync_grad_params = 1;
    cfg.cumulative = cs->cumulative;
    sbn_syncbn_workspace_size(&x0, &bytes);
    ws = malloc(bytes ? bytes : 1);
    for (k = 0; k < STEPS; k++) {
        sbn_tensor x = rows_of(&in->xb[k].view, off, n), dy = rows_of(&in->dyb[k].view, off, n);
        tsup_buf y = tsup_make(cs->xdt, cs->nd, shape, cs->layout, nanv);
        tsup_buf gi = tsup_make(cs->xdt, cs->nd, shape, cs->layout, nanv);
        sbn_status st;
        /* no early return: every process must make the same collectives */
        st = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &x, .weight = &wt.view,
                                .bias = &bs.view, .running_mean = &pcb[P_RM].view,
                                .running_var = &pcb[P_RV].view, .num_batches_tracked = &nbt,
                                .y = &y.view, .save_mean = &pcb[P_SM].view,
                                .save_invstd = &pcb[P_SI].view, .global_count = &count}, ws, bytes,
                                pool);
        EXPECT(st == SBN_OK, "%s step %d: forward returned %s", what, k, sbn_status_name(st));
        st = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &dy, .x = &x,
                                 .weight = &wt.view, .save_mean = &pcb[P_SM].view,
                                 .save_invstd = &pcb[P_SI].view, .global_count = count,
                                 .grad_input = &gi.view, .grad_weight = &pcb[P_GW].view,
                                 .grad_bias = &pcb[P_GB].view}, ws, bytes, pool);
        EXPECT(st == SBN_OK, "%s step %d: backward returned %s", what, k, sbn_status_name(st));
        memcpy(out->act[k][0], y.view.data, act);
        memcpy(out->act[k][1], gi.view.data, act);
        for (j = 0; j < P_COUNT; j++)
            memcpy(out->pc[k][j], pcb[j].view.data,
                   (size_t)in->c * sbn_dtype_size(pc_dtype(cs, j)));
        out->ctr[k][0] = count;
        out->ctr[k][1] = nbt;
        TSUP_BUF_FREE(&y, &gi);
    }
    for (j = 0; j < P_COUNT; j++) tsup_free(&pcb[j]);
    TSUP_BUF_FREE(&wt, &bs);
    sbn_pool_destroy(pool);
    TSUP_FREE_ALL(ws, nanv);
}

/* This np's split: seeded sorted cut points, rank 1 empty from 3 processes on. */
static void make_split(uint64_t seed, int64_t ntot, int64_t *n, int64_t *off)
{
    tsup_rng rng = tsup_rng_seed(seed * 131 + (uint64_t)g_size);
    int64_t cuts[TSUP_MPI_MAX_PROCS + 1], v, at = 0;
    int open = g_size > 2 ? g_size - 1 : g_size, i, j, r;
    cuts[0] = 0;
    cuts[open] = ntot;
    for (i = 1; i < open; i++) {
        v = (int64_t)(tsup_uniform(&rng) * (double)(ntot + 1));
        for (j = i; j > 1 && cuts[j - 1] > v; j--) cuts[j] = cuts[j - 1];
        cuts[j] = v;
    }
    for (r = 0, i = 0; r < g_size; r++) {
        int empty = g_size > 2 && r == 1;
        off[r] = at;
        n[r] = empty ? 0 : cuts[i + 1] - cuts[i];
        i += !empty;
        at += n[r];
    }
}

static void check_case(const mcase *cs)
{
    int64_t n[TSUP_MPI_MAX_PROCS], off[TSUP_MPI_MAX_PROCS], row_bytes;
    sbn_comm_t *local = NULL, *comm = NULL;
    minputs in;
    moutputs ref, got;
    char shape[64], what[160];
    int k, j;

    make_inputs(cs, &in);
    make_split(cs->seed, in.n, n, off);
    row_bytes = in.sample * (int64_t)sbn_dtype_size(cs->xdt);
    tsup_shape_str(cs->nd, cs->dims, shape, sizeof shape);
    snprintf(what, sizeof what, "%s %s %s%s, np %d, rank %d rows [%lld, %lld)", shape,
             sbn_dtype_name(cs->xdt), tsup_layout_name(cs->layout),
             cs->cumulative ? " cumulative" : "", g_size, g_rank, (long long)off[g_rank],
             (long long)(off[g_rank] + n[g_rank]));
    alloc_outputs(&ref, cs, in.n, &in);
    alloc_outputs(&got, cs, n[g_rank], &in);
    /* W = 1 on this process alone */
    EXPECT_STATUS_OF(sbn_comm_threads_create(1, 60.0, &local), SBN_OK, "sbn_comm_threads_create");
    if (local) run_layer(local, cs, &in, 0, in.n, 0, &ref, "local W=1");
    sbn_comm_destroy(local);
    /* the MPI world */
    EXPECT_STATUS_OF(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm), SBN_OK, "sbn_comm_mpi_create");
    if (comm) run_layer(comm, cs, &in, off[g_rank], n[g_rank], g_rank % 3 ? g_rank % 3 + 1 : 0,
                        &got, what);
    sbn_comm_destroy(comm);
    for (k = 0; k < STEPS; k++) {
        size_t bytes = (size_t)(n[g_rank] * row_bytes);
        EXPECT(memcmp(got.act[k][0], ref.act[k][0] + off[g_rank] * row_bytes, bytes) == 0,
               "%s step %d: y differs from W = 1's", what, k);
        EXPECT(memcmp(got.act[k][1], ref.act[k][1] + off[g_rank] * row_bytes, bytes) == 0,
               "%s step %d: grad_input differs from W = 1's", what, k);
        for (j = 0; j < P_COUNT; j++)
            EXPECT(memcmp(got.pc[k][j], ref.pc[k][j],
                          (size_t)in.c * sbn_dtype_size(pc_dtype(cs, j))) == 0,
                   "%s step %d: %s differs from W = 1's", what, k, k_pc_names[j]);
        EXPECT(got.ctr[k][0] == ref.ctr[k][0] && got.ctr[k][1] == ref.ctr[k][1],
               "%s step %d: global_count %lld, num_batches_tracked %lld; W = 1: %lld, %lld",
               what, k, (long long)got.ctr[k][0], (long long)got.ctr[k][1],
               (long long)ref.ctr[k][0], (long long)ref.ctr[k][1]);
    }
    free_outputs(&ref);
    free_outputs(&got);
    free_inputs(&in);
}

static void reproducible_equals_w1(void)
{
    static const mcase cases[] = {
        /* x        params   save     layout               nd dims                cum seed */
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 4, {13, 3, 3, 5}, 0, 1},
        {SBN_F32, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 4, {13, 3, 3, 5}, 1, 2},
        {SBN_BF16, SBN_F32, SBN_F32, TSUP_CHANNELS_LAST, 3, {19, 4, 7}, 0, 3},
        {SBN_BF16, SBN_BF16, SBN_F64, TSUP_CHANNELS_FIRST, 5, {11, 5, 2, 3, 2}, 0, 4},
        {SBN_F16, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 2, {29, 6}, 1, 5},
        {SBN_F16, SBN_F16, SBN_F32, TSUP_CHANNELS_LAST, 4, {9, 20, 2, 3}, 0, 6},
        {SBN_F32, SBN_F32, SBN_F64, TSUP_CHANNELS_FIRST, 2, {2500, 2}, 0, 7},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

int main(int argc, char **argv)
{
    static const mpi_case cases[] = {{"reproducible_equals_w1", reproducible_equals_w1}};
    return mpi_run_cases(&argc, &argv, cases, TSUP_COUNT(cases), NULL);
}
