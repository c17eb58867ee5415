/*
 * syncbn_check.c - a SyncBN training run checked against whole-batch batch norm.
 * Every rank generates the same global batch for each step (a fixed formula of
 * the step and the element index), rounds it through the run's dtype, takes its
 * rows, and runs sbn_syncbn_forward/backward over its communicator. Every rank
 * also runs sbn_batch_norm and sbn_batch_norm_backward on the whole batch in
 * double: SyncBN is correct when each rank's slice of y and grad_input, its
 * running statistics, and the sum over ranks of grad_weight/grad_bias equal the
 * whole-batch ones. The differences are gathered so that every rank ends with
 * the world's maximum.
 *
 * Tolerances (docs/numerics.md): outputs in the run's dtype are correctly rounded
 * from double values, so y and grad_input may differ by a few units of its
 * roundoff u; running stats are fp32 and carry one rounding per step; the
 * parameter gradients are fp32 per rank, summed over W ranks.
 */
#include "syncbn_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncbn/info.h" /* SBN_COMM_TIMEOUT as the library parsed it */

#define CHECK_EPS 1e-5
#define CHECK_MOMENTUM 0.1

double check_comm_timeout(void)
{
    sbn_info in;
    int i;
    in.size = sizeof in;
    if (sbn_info_get(&in) == SBN_OK)
        for (i = 0; i < in.nvars; i++)
            if (strcmp(in.var[i].name, "SBN_COMM_TIMEOUT") == 0 && in.var[i].set) return 0.0;
    return CHECK_TIMEOUT;
}

void check_split(int64_t n, int world, int rank, int empty_rank, int64_t *first, int64_t *count)
{
    /*
     * Uneven on purpose: the k ranks other than the empty one (empty_rank, -1 for none) get
     * shares 1, 2, 3, ... of the batch. When N >= k each of them first gets one sample and
     * the shares split the other N - k, so no rank is empty by accident of rounding:
     *   rank r: first = (ranks before r that hold samples) + m * w_before / w_all,
     *           count = [r holds samples] + m * (w_before + w_r) / w_all - m * w_before / w_all,
     * with m = N - k, w_r = r + 1 (0 for the empty rank). When N < k, m = N and no base.
     */
    int64_t weight_before = 0, weight_all = 0, holders_before = 0, holders = 0, j, m, base;
    int64_t mine = rank == empty_rank ? 0 : rank + 1;
    for (j = 0; j < world; j++) {
        int64_t wj = j == empty_rank ? 0 : j + 1;
        if (j < rank) weight_before += wj;
        if (j < rank && wj > 0) holders_before++;
        if (wj > 0) holders++;
        weight_all += wj;
    }
    if (weight_all == 0) {
        *first = 0;
        *count = rank == 0 ? n : 0;
        return;
    }
    base = n >= holders ? 1 : 0;
    m = n - base * holders;
    *first = base * holders_before + m * weight_before / weight_all;
    *count = base * (mine > 0) + m * (weight_before + mine) / weight_all - m * weight_before / weight_all;
}

int check_passed(const check_result *r)
{
    return !SBN_FAILED(r->status) && r->y <= r->tol_y && r->running <= r->tol_running &&
           r->grad_input <= r->tol_grad_input && r->grad_params <= r->tol_grad_params &&
           r->stats <= r->tol_stats;
}

/* A deterministic value in [-1, 1) from a seed and an index. */
static double noise(uint64_t seed, int64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

typedef struct run_state {
    int64_t n, c, hw, numel, first, rows;
    double *x, *dy, *y_ref, *gi_ref, *tmp;          /* whole batch, f64 logical */
    double *rm_ref, *rv_ref, *mean_ref, *invstd_ref, *gw_ref, *gb_ref, *zeros, *ones;
    float *weight, *bias, *rm, *rv, *gw, *gb;
    double *save_mean, *save_invstd, *param_sums;
    void *x_r, *dy_r, *y_r, *gi_r, *full_cast;     /* dtype buffers */
    void *ws;
    size_t ws_bytes;
    int64_t num_batches_tracked, nbt_ref;
} run_state;

/* A (rows, C, d2, ..., dk) view of data with cfg's rank and dims, channels-first or -last. */
static sbn_tensor view_of(void *data, sbn_dtype dtype, int64_t rows, const check_config *cfg,
                          int channels_last)
{
    int64_t s[CHECK_MAX_RANK];
    int d;
    s[0] = rows;
    for (d = 1; d < cfg->rank; d++) s[d] = cfg->shape[d];
    return channels_last ? sbn_tensor_channels_last(data, dtype, cfg->rank, s)
                         : sbn_tensor_contiguous(data, dtype, cfg->rank, s);
}

/* Copies src into dst (any dtypes and layouts): elemt with mean 0, invstd 1 is a rounding copy. */
static sbn_status convert(const sbn_tensor *src, sbn_tensor *dst, run_state *st)
{
    sbn_tensor zeros = sbn_tensor_1d(st->zeros, SBN_F64, st->c);
    sbn_tensor ones = sbn_tensor_1d(st->ones, SBN_F64, st->c);
    return sbn_elemt(src, &zeros, &ones, NULL, NULL, dst, st->ws, st->ws_bytes, NULL);
}

static void *xcalloc(size_t count, size_t size, int *ok)
{
    void *p = calloc(count ? count : 1, size);
    if (p == NULL) *ok = 0;
    return p;
}

static int allocate(run_state *st, const check_config *cfg)
{
    size_t es = sbn_dtype_size(cfg->dtype), n = (size_t)st->numel, c = (size_t)st->c, bytes = 0;
    size_t rows = (size_t)(st->rows * st->c * st->hw);
    sbn_tensor whole;
    int ok = 1;
    st->x = xcalloc(n, 8, &ok);
    st->dy = xcalloc(n, 8, &ok);
    st->y_ref = xcalloc(n, 8, &ok);
    st->gi_ref = xcalloc(n, 8, &ok);
    st->tmp = xcalloc(n, 8, &ok);
    st->full_cast = xcalloc(n, es, &ok);
    st->x_r = xcalloc(rows, es, &ok);
    st->dy_r = xcalloc(rows, es, &ok);
    st->y_r = xcalloc(rows, es, &ok);
    st->gi_r = xcalloc(rows, es, &ok);
    st->rm_ref = xcalloc(c, 8, &ok);
    st->rv_ref = xcalloc(c, 8, &ok);
    st->mean_ref = xcalloc(c, 8, &ok);
    st->invstd_ref = xcalloc(c, 8, &ok);
    st->gw_ref = xcalloc(c, 8, &ok);
    st->gb_ref = xcalloc(c, 8, &ok);
    st->zeros = xcalloc(c, 8, &ok);
    st->ones = xcalloc(c, 8, &ok);
    st->save_mean = xcalloc(c, 8, &ok);
    st->save_invstd = xcalloc(c, 8, &ok);
    st->param_sums = xcalloc(2 * c, 8, &ok);
    st->weight = xcalloc(c, 4, &ok);
    st->bias = xcalloc(c, 4, &ok);
    st->rm = xcalloc(c, 4, &ok);
    st->rv = xcalloc(c, 4, &ok);
    st->gw = xcalloc(c, 4, &ok);
    st->gb = xcalloc(c, 4, &ok);
    if (!ok) return 0;
    /* one workspace for the layer, the whole-batch reference and the conversions */
    whole = view_of(st->x, SBN_F64, st->n, cfg, 0);
    if (sbn_syncbn_workspace_size(&whole, &bytes) != SBN_OK) return 0;
    {
        /* the layer's own need is that of this rank's x (dtype, layout, rows), which may
         * exceed the whole batch's: reproducible mode's per-sample scratch */
        sbn_tensor mine = view_of(st->x_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
        size_t more = 0;
        if (sbn_syncbn_workspace_size(&mine, &more) != SBN_OK) return 0;
        if (more > bytes) bytes = more;
        sbn_batch_norm_backward_workspace_size(&whole, &more);
        if (more > bytes) bytes = more;
        sbn_batch_norm_workspace_size(&whole, &more);
        if (more > bytes) bytes = more;
    }
    st->ws_bytes = bytes;
    st->ws = malloc(bytes);
    return st->ws != NULL;
}

static void release(run_state *st)
{
    void *all[] = {st->x, st->dy, st->y_ref, st->gi_ref, st->tmp, st->full_cast, st->x_r,
                   st->dy_r, st->y_r, st->gi_r, st->rm_ref, st->rv_ref, st->mean_ref,
                   st->invstd_ref, st->gw_ref, st->gb_ref, st->zeros, st->ones, st->save_mean,
                   st->save_invstd, st->param_sums, st->weight, st->bias, st->rm, st->rv,
                   st->gw, st->gb, st->ws};
    size_t i;
    for (i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* Fills the step's whole batch, rounded through the dtype, and this rank's dtype copies. */
static sbn_status make_batch(run_state *st, const check_config *cfg, int step)
{
    sbn_tensor full = view_of(st->x, SBN_F64, st->n, cfg, 0);
    sbn_tensor full_dy = view_of(st->dy, SBN_F64, st->n, cfg, 0);
    sbn_tensor cast = view_of(st->full_cast, cfg->dtype, st->n, cfg, 0);
    sbn_tensor shard, shard_dy, mine, mine_dy;
    int64_t i, offset = st->first * st->c * st->hw;
    sbn_status s;
    for (i = 0; i < st->numel; i++) {
        int64_t ch = (i / st->hw) % st->c;
        double mean = 0.5 * (double)ch - 1.0 + 0.1 * step, spread = 0.25 + 0.125 * (double)(ch % 5);
        st->x[i] = mean + spread * noise((uint64_t)(2 * step + 1), i);
        st->dy[i] = 0.5 * noise((uint64_t)(2 * step + 2), i) + 0.01 * (double)ch;
    }
    if ((s = convert(&full, &cast, st)) != SBN_OK || (s = convert(&cast, &full, st)) != SBN_OK)
        return s;
    if ((s = convert(&full_dy, &cast, st)) != SBN_OK || (s = convert(&cast, &full_dy, st)) != SBN_OK)
        return s;
    shard = view_of(st->x + offset, SBN_F64, st->rows, cfg, 0);
    shard_dy = view_of(st->dy + offset, SBN_F64, st->rows, cfg, 0);
    mine = view_of(st->x_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    mine_dy = view_of(st->dy_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    if ((s = convert(&shard, &mine, st)) != SBN_OK) return s;
    return convert(&shard_dy, &mine_dy, st);
}

/* Whole-batch batch norm in double: y_ref, gi_ref, gw_ref, gb_ref, running stats. */
static sbn_status reference_step(run_state *st, const check_config *cfg)
{
    sbn_tensor x = view_of(st->x, SBN_F64, st->n, cfg, 0);
    sbn_tensor dy = view_of(st->dy, SBN_F64, st->n, cfg, 0);
    sbn_tensor y = view_of(st->y_ref, SBN_F64, st->n, cfg, 0);
    sbn_tensor gi = view_of(st->gi_ref, SBN_F64, st->n, cfg, 0);
    sbn_tensor w = sbn_tensor_1d(st->weight, SBN_F32, st->c), b = sbn_tensor_1d(st->bias, SBN_F32, st->c);
    sbn_tensor rm = sbn_tensor_1d(st->rm_ref, SBN_F64, st->c), rv = sbn_tensor_1d(st->rv_ref, SBN_F64, st->c);
    sbn_tensor m = sbn_tensor_1d(st->mean_ref, SBN_F64, st->c), is = sbn_tensor_1d(st->invstd_ref, SBN_F64, st->c);
    sbn_tensor gw = sbn_tensor_1d(st->gw_ref, SBN_F64, st->c), gb = sbn_tensor_1d(st->gb_ref, SBN_F64, st->c);
    double factor = CHECK_MOMENTUM;
    sbn_status s;
    st->nbt_ref++;
    if (cfg->cumulative) factor = 1.0 / (double)st->nbt_ref;
    s = sbn_batch_norm(&x, &w, &b, 1, factor, CHECK_EPS, &rm, &rv, &y, &m, &is, st->ws,
                       st->ws_bytes, NULL);
    if (SBN_FAILED(s)) return s;
    return sbn_batch_norm_backward(&dy, &x, &w, NULL, NULL, &m, &is, 1, CHECK_EPS, &gi, &gw, &gb,
                                   st->ws, st->ws_bytes, NULL);
}

/* This rank's forward + backward through the layer. */
static sbn_status layer_step(run_state *st, const check_config *cfg, sbn_comm_t *comm,
                             sbn_pool_t *pool, sbn_syncbn_timing *timing)
{
    sbn_syncbn_config config;
    sbn_tensor x = view_of(st->x_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    sbn_tensor dy = view_of(st->dy_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    sbn_tensor y = view_of(st->y_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    sbn_tensor gi = view_of(st->gi_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    sbn_tensor w = sbn_tensor_1d(st->weight, SBN_F32, st->c), b = sbn_tensor_1d(st->bias, SBN_F32, st->c);
    sbn_tensor rm = sbn_tensor_1d(st->rm, SBN_F32, st->c), rv = sbn_tensor_1d(st->rv, SBN_F32, st->c);
    sbn_tensor m = sbn_tensor_1d(st->save_mean, SBN_F64, st->c);
    sbn_tensor is = sbn_tensor_1d(st->save_invstd, SBN_F64, st->c);
    sbn_tensor gw = sbn_tensor_1d(st->gw, SBN_F32, st->c), gb = sbn_tensor_1d(st->gb, SBN_F32, st->c);
    int64_t count = 0;
    sbn_status s;
    sbn_syncbn_config_default(&config);
    config.eps = CHECK_EPS;
    config.momentum = CHECK_MOMENTUM;
    config.cumulative = cfg->cumulative;
    config.reproducible = cfg->reproducible;
    config.timing = timing;
    s = sbn_syncbn_forward(comm, &config, &(sbn_syncbn_forward_io){.x = &x, .weight = &w,
                           .bias = &b, .running_mean = &rm, .running_var = &rv,
                           .num_batches_tracked = &st->num_batches_tracked, .y = &y,
                           .save_mean = &m, .save_invstd = &is, .global_count = &count}, st->ws,
                           st->ws_bytes, pool);
    if (SBN_FAILED(s)) return s;
    return sbn_syncbn_backward(comm, &config, &(sbn_syncbn_backward_io){.dy = &dy, .x = &x,
                               .weight = &w, .save_mean = &m, .save_invstd = &is,
                               .global_count = count, .grad_input = &gi, .grad_weight = &gw,
                               .grad_bias = &gb}, st->ws, st->ws_bytes, pool);
}

static double max_abs(const double *a, int64_t n)
{
    double worst = 0.0;
    int64_t i;
    for (i = 0; i < n; i++)
        if (fabs(a[i]) > worst) worst = fabs(a[i]);
    return worst;
}

/* max |got (dtype, this rank's rows) - want (whole-batch f64 at this rank's rows)| */
static double slice_diff(run_state *st, const check_config *cfg, void *got, const double *want)
{
    sbn_tensor src = view_of(got, cfg->dtype, st->rows, cfg, cfg->channels_last);
    sbn_tensor dst = view_of(st->tmp, SBN_F64, st->rows, cfg, 0);
    int64_t i, n = st->rows * st->c * st->hw, offset = st->first * st->c * st->hw;
    double worst = 0.0;
    if (n == 0) return 0.0;
    if (convert(&src, &dst, st) != SBN_OK) return INFINITY;
    for (i = 0; i < n; i++) {
        double d = fabs(st->tmp[i] - want[offset + i]);
        if (!(d <= worst)) worst = d; /* NaN propagates */
    }
    return worst;
}

/* Differences of one step on this rank: {y, running, grad_input, grad_params, stats}. */
static sbn_status step_diffs(run_state *st, const check_config *cfg, sbn_comm_t *comm,
                             double *diff)
{
    int64_t c;
    sbn_status s;
    memset(diff, 0, 5 * sizeof *diff);
    diff[0] = slice_diff(st, cfg, st->y_r, st->y_ref);
    diff[2] = slice_diff(st, cfg, st->gi_r, st->gi_ref);
    for (c = 0; c < st->c; c++) {
        st->param_sums[c] = st->gw[c];
        st->param_sums[st->c + c] = st->gb[c];
        diff[1] = fmax(diff[1], fmax(fabs(st->rm[c] - st->rm_ref[c]), fabs(st->rv[c] - st->rv_ref[c])));
        diff[4] = fmax(diff[4], fabs(st->save_mean[c] - st->mean_ref[c]));
        diff[4] = fmax(diff[4], fabs(st->save_invstd[c] - st->invstd_ref[c]) / st->invstd_ref[c]);
    }
    s = sbn_comm_allreduce_sum(comm, st->param_sums, (size_t)(2 * st->c), 7);
    if (s != SBN_OK) return s;
    for (c = 0; c < st->c; c++)
        diff[3] = fmax(diff[3], fmax(fabs(st->param_sums[c] - st->gw_ref[c]),
                                     fabs(st->param_sums[st->c + c] - st->gb_ref[c])));
    return SBN_OK;
}

static void set_tolerances(const run_state *st, const check_config *cfg, int world,
                           check_result *r)
{
    double u = cfg->dtype == SBN_F32 ? ldexp(1.0, -24)
               : cfg->dtype == SBN_F64 ? ldexp(1.0, -53)
               : cfg->dtype == SBN_F16 ? ldexp(1.0, -11)
                                       : ldexp(1.0, -8);
    double running_scale = fmax(max_abs(st->rm_ref, st->c), max_abs(st->rv_ref, st->c));
    double param_scale = fmax(max_abs(st->gw_ref, st->c), max_abs(st->gb_ref, st->c));
    r->tol_y = 4 * u * fmax(1.0, r->y_scale);
    r->tol_grad_input = 8 * u * fmax(1e-3, r->grad_scale);
    r->tol_running = 4.0 * (cfg->iters + 1) * ldexp(1.0, -24) * fmax(1.0, running_scale);
    r->tol_grad_params = 2.0 * (world + 1) * ldexp(1.0, -24) * fmax(1.0, param_scale);
    r->tol_stats = 1e-9;
}

/* Hands this rank's outputs of the step to cfg->hook. */
static void call_hook(run_state *st, const check_config *cfg, sbn_comm_t *comm, int step)
{
    check_outputs out;
    out.step = step;
    out.first = st->first;
    out.y = view_of(st->y_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    out.grad_input = view_of(st->gi_r, cfg->dtype, st->rows, cfg, cfg->channels_last);
    out.stats[0] = sbn_tensor_1d(st->save_mean, SBN_F64, st->c);
    out.stats[1] = sbn_tensor_1d(st->save_invstd, SBN_F64, st->c);
    out.stats[2] = sbn_tensor_1d(st->rm, SBN_F32, st->c);
    out.stats[3] = sbn_tensor_1d(st->rv, SBN_F32, st->c);
    out.num_batches_tracked = st->num_batches_tracked;
    cfg->hook(cfg->hook_user, comm, &out);
}

void check_run(const check_config *cfg, sbn_comm_t *comm, check_result *result)
{
    run_state st;
    sbn_pool_t *pool = NULL;
    int world = sbn_comm_size(comm), rank = sbn_comm_rank(comm), step, i, j;
    double diff[5 + 3], *all = NULL;
    int64_t c;

    memset(&st, 0, sizeof st);
    memset(result, 0, sizeof *result);
    st.n = cfg->shape[0];
    st.c = cfg->shape[1];
    st.hw = 1;
    for (i = 2; i < cfg->rank; i++) st.hw *= cfg->shape[i];
    st.numel = st.n * st.c * st.hw;
    check_split(st.n, world, rank, cfg->empty_rank, &st.first, &st.rows);
    all = calloc((size_t)world * 8, sizeof *all);
    if (!allocate(&st, cfg) || all == NULL) {
        result->status = sbn_comm_fail(comm, SBN_ERR_OUT_OF_MEMORY);
        snprintf(result->message, sizeof result->message, "rank %d: out of memory", rank);
        goto done;
    }
    if (cfg->threads > 1) {
        sbn_status s = sbn_pool_create(cfg->threads, &pool);
        if (SBN_FAILED(s)) {
            /* refuse rather than run serially: the caller asked for these threads */
            snprintf(result->message, sizeof result->message,
                     "rank %d: cannot create a pool of %d threads: %s", rank, cfg->threads,
                     sbn_last_error());
            result->status = sbn_comm_fail(comm, s);
            pool = NULL;
            goto done;
        }
    }
    for (c = 0; c < st.c; c++) {
        st.weight[c] = (float)(1.0 + 0.25 * (double)(c % 3));
        st.bias[c] = (float)(0.125 * (double)(c % 4) - 0.25);
        st.rm[c] = 0.0f;
        st.rv[c] = 1.0f;
        st.rm_ref[c] = 0.0;
        st.rv_ref[c] = 1.0;
        st.ones[c] = 1.0;
    }
    for (step = 0; step < cfg->iters; step++) {
        sbn_syncbn_timing timing = {0, 0, 0};
        sbn_status s = sbn_comm_set_step(comm, step); /* a rank off by a step is a mismatch */
        if (s == SBN_OK) s = make_batch(&st, cfg, step);
        if (s == SBN_OK) s = reference_step(&st, cfg);
        if (SBN_FAILED(s)) {
            result->status = sbn_comm_fail(comm, s);
            snprintf(result->message, sizeof result->message, "rank %d: %s", rank, sbn_last_error());
            goto done;
        }
        /* start the step together, so that the timing shows the step, not the reference */
        s = sbn_comm_barrier(comm);
        if (s == SBN_OK) s = layer_step(&st, cfg, comm, pool, &timing);
        if (!SBN_FAILED(s)) s = step_diffs(&st, cfg, comm, diff);
        if (SBN_FAILED(s)) {
            result->status = s;
            snprintf(result->message, sizeof result->message, "rank %d: %s: %s", rank,
                     sbn_status_name(s), sbn_last_error());
            goto done;
        }
        if (cfg->hook) call_hook(&st, cfg, comm, step);
        diff[5] = timing.stats_seconds;
        diff[6] = timing.comm_seconds;
        diff[7] = timing.elemt_seconds;
        if ((s = sbn_comm_allgather(comm, diff, 8, all, 8)) != SBN_OK) {
            result->status = s;
            snprintf(result->message, sizeof result->message, "rank %d: %s", rank, sbn_last_error());
            goto done;
        }
        /* differences: the world's maximum; times: the critical-path rank, the one that
         * waited least in the collectives (the others' extra wait is load imbalance) */
        for (i = 0; i < 5; i++) diff[i] = 0.0;
        for (j = 0; j < world; j++) {
            for (i = 0; i < 5; i++) diff[i] = fmax(diff[i], all[8 * j + i]);
            if (j == 0 || all[8 * j + 6] < diff[6])
                for (i = 5; i < 8; i++) diff[i] = all[8 * j + i];
        }
        result->y = fmax(result->y, diff[0]);
        result->running = fmax(result->running, diff[1]);
        result->grad_input = fmax(result->grad_input, diff[2]);
        result->grad_params = fmax(result->grad_params, diff[3]);
        result->stats = fmax(result->stats, diff[4]);
        result->timing.stats_seconds += diff[5];
        result->timing.comm_seconds += diff[6];
        result->timing.elemt_seconds += diff[7];
        result->y_scale = fmax(result->y_scale, max_abs(st.y_ref, st.numel));
        result->grad_scale = fmax(result->grad_scale, max_abs(st.gi_ref, st.numel));
        result->steps = step + 1;
        if (cfg->verbose && rank == 0) {
            double total = diff[5] + diff[6] + diff[7];
            printf("  step %3d  max diff: y %.2e  running %.2e  grad_input %.2e  grad_w/b %.2e"
                   "  | stats %.3f ms  comm %.3f ms (%.1f%%)  elemt %.3f ms\n",
                   step + 1, diff[0], diff[1], diff[2], diff[3], 1e3 * diff[5], 1e3 * diff[6],
                   total > 0 ? 100.0 * diff[6] / total : 0.0, 1e3 * diff[7]);
            fflush(stdout);
        } else if (cfg->progress && rank == 0 && (step + 1) % 10 == 0) {
            fprintf(stderr, "  ... step %d of %d\n", step + 1, cfg->iters);
        }
    }
    set_tolerances(&st, cfg, world, result);
    result->status = SBN_OK;
done:
    sbn_pool_destroy(pool);
    free(all);
    release(&st);
}
