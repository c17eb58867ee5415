/*
 * bench_syncbn.c - the SyncBN layer (sbn_syncbn_forward + sbn_syncbn_backward,
 * training, f32, channels-first) as one step per repetition over W ranks:
 *   --syncbn      W in-process ranks (threads backend), one thread each, compute serial
 *   --syncbn-mpi  one rank per MPI process (mpirun -np W), compute serial
 * The global batch (default 32x64x56x56) is split evenly over the ranks along N.
 * Each step starts with a barrier; its time is the slowest rank's (forward start to
 * backward end). The communication share uses sbn_syncbn_config.timing of the
 * critical-path rank (the one that waited least in the collectives); the other
 * rank's larger comm time is load imbalance, reported as the mean share.
 * Floor: fwd-train 3E + bwd 5E = 8E of the global tensor.
 * Each world runs twice: the default mode (rows syncbn-threads, syncbn-mpi) and
 * the reproducible mode (rows ...-repro, sbn_syncbn_config.reproducible), and the
 * note gives the bytes rank 0 sent and received per step (sbn_comm_traffic).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syncbn/layer.h"
#ifdef SBN_HAVE_MPI
#include "syncbn/comm_mpi.h"
#endif

#define MAX_STEPS 4000

typedef struct rank_args {
    sbn_comm_t *comm;
    const bench_opts *o;
    int reproducible;
    sbn_status status;
    char error[256];
    /* rank 0's results */
    int reps;
    double step_min, step_med, comm_share, comm_share_mean, comm_med_us, stats_ms, elemt_ms;
    uint64_t step_sent, step_received; /* this rank's bytes per step */
} rank_args;

static void fill_rank(float *a, int64_t n, int64_t first, float offset, float scale, uint64_t seed)
{
    int64_t i;
    for (i = 0; i < n; i++) {
        uint64_t z = ((uint64_t)(first + i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
        z ^= z >> 29;
        a[i] = offset + scale * (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
    }
}

/* The body every rank runs, identical for the threads and MPI backends. */
static void rank_main(rank_args *ra)
{
    const bench_opts *o = ra->o;
    sbn_comm_t *comm = ra->comm;
    int world = sbn_comm_size(comm), rank = sbn_comm_rank(comm), reps = 0, i, j;
    int64_t n_all = o->syncbn_shape[0], c = o->syncbn_shape[1];
    int64_t hw = o->syncbn_shape[2] * o->syncbn_shape[3];
    int64_t first = n_all * rank / world, rows = n_all * (rank + 1) / world - first;
    int64_t shp[4] = {rows, c, o->syncbn_shape[2], o->syncbn_shape[3]}, count = 0;
    size_t act = (size_t)(rows * c * hw) * sizeof(float), ws_bytes = 0;
    float *x = bench_alloc(act), *y = bench_alloc(act), *dy = bench_alloc(act), *dx = bench_alloc(act);
    float *vec = bench_alloc((size_t)c * 6 * sizeof(float));
    double *stat = bench_alloc((size_t)c * 2 * sizeof(double));
    double *mine = calloc(4 * MAX_STEPS, sizeof(double)), *all = NULL, est = 0.0, ests[64];
    void *ws = NULL;
    sbn_tensor tx, ty, tdy, tdx, w, b, rm, rv, sm, si, gw, gb;
    sbn_syncbn_config cfg;
    sbn_syncbn_timing tm;
    int64_t nbt = 0;
    sbn_status s = SBN_OK;

    ra->status = SBN_OK;
    if (!x || !y || !dy || !dx || !vec || !stat || !mine) s = SBN_ERR_OUT_OF_MEMORY;
    if (s == SBN_OK) {
        tx = sbn_tensor_contiguous(x, SBN_F32, 4, shp);
        ty = sbn_tensor_contiguous(y, SBN_F32, 4, shp);
        tdy = sbn_tensor_contiguous(dy, SBN_F32, 4, shp);
        tdx = sbn_tensor_contiguous(dx, SBN_F32, 4, shp);
        w = sbn_tensor_1d(vec, SBN_F32, c);
        b = sbn_tensor_1d(vec + c, SBN_F32, c);
        rm = sbn_tensor_1d(vec + 2 * c, SBN_F32, c);
        rv = sbn_tensor_1d(vec + 3 * c, SBN_F32, c);
        gw = sbn_tensor_1d(vec + 4 * c, SBN_F32, c);
        gb = sbn_tensor_1d(vec + 5 * c, SBN_F32, c);
        sm = sbn_tensor_1d(stat, SBN_F64, c);
        si = sbn_tensor_1d(stat + c, SBN_F64, c);
        for (i = 0; i < c; i++) {
            vec[i] = 1.0f + 0.25f * (float)(i % 3);
            vec[c + i] = 0.125f * (float)(i % 4) - 0.25f;
            vec[3 * c + i] = 1.0f;
        }
        fill_rank(x, rows * c * hw, first * c * hw, 0.5f, 1.0f, 11);
        fill_rank(dy, rows * c * hw, first * c * hw, 0.0f, 0.5f, 12);
        s = sbn_syncbn_workspace_size(&tx, &ws_bytes);
        if (s == SBN_OK && (ws = bench_alloc(ws_bytes)) == NULL) s = SBN_ERR_OUT_OF_MEMORY;
    }
    if (s != SBN_OK) {
        /* let the peers fail too instead of waiting */
        ra->status = sbn_comm_fail(comm, s);
        snprintf(ra->error, sizeof ra->error, "rank %d setup: %s", rank, sbn_status_name(s));
        goto out;
    }
    sbn_syncbn_config_default(&cfg);
    cfg.timing = &tm;
    cfg.reproducible = ra->reproducible;

    /* warm-up: a fixed 5 steps on every rank (the ranks must make the same calls);
     * every rank then adopts the slowest rank's estimate */
    for (i = 0; i < 5; i++) {
        double t0;
        if ((s = sbn_comm_barrier(comm)) != SBN_OK) break;
        t0 = bench_now();
        s = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &tx, .weight = &w,
                               .bias = &b, .running_mean = &rm, .running_var = &rv,
                               .num_batches_tracked = &nbt, .y = &ty, .save_mean = &sm,
                               .save_invstd = &si, .global_count = &count}, ws, ws_bytes, NULL);
        if (!SBN_FAILED(s))
            s = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &tdy, .x = &tx,
                                    .weight = &w, .save_mean = &sm, .save_invstd = &si,
                                    .global_count = count, .grad_input = &tdx, .grad_weight = &gw,
                                    .grad_bias = &gb}, ws, ws_bytes, NULL);
        if (SBN_FAILED(s)) break;
        if (i >= 2) est += bench_now() - t0;
    }
    if (SBN_FAILED(s)) {
        ra->status = s;
        snprintf(ra->error, sizeof ra->error, "rank %d: %s: %s", rank, sbn_status_name(s),
                 sbn_last_error());
        goto out;
    }
    est /= 3.0;
    if (world <= 64 && sbn_comm_allgather(comm, &est, 1, ests, 1) == SBN_OK)
        for (j = 0; j < world; j++)
            if (ests[j] > est) est = ests[j];
    /* the same number of steps on every rank: >= min_reps and >= min_time, <= max_time */
    reps = (int)ceil(o->min_time / est);
    if (reps < o->min_reps) reps = o->min_reps;
    if ((double)reps * est > o->max_time) reps = (int)(o->max_time / est);
    if (reps < 5) reps = 5;
    if (reps > MAX_STEPS) reps = MAX_STEPS;

    sbn_comm_traffic(comm, &ra->step_sent, &ra->step_received);
    for (i = 0; i < reps; i++) {
        double t0;
        memset(&tm, 0, sizeof tm);
        if ((s = sbn_comm_barrier(comm)) != SBN_OK) break;
        t0 = bench_now();
        s = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &tx, .weight = &w,
                               .bias = &b, .running_mean = &rm, .running_var = &rv,
                               .num_batches_tracked = &nbt, .y = &ty, .save_mean = &sm,
                               .save_invstd = &si, .global_count = &count}, ws, ws_bytes, NULL);
        if (!SBN_FAILED(s))
            s = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &tdy, .x = &tx,
                                    .weight = &w, .save_mean = &sm, .save_invstd = &si,
                                    .global_count = count, .grad_input = &tdx, .grad_weight = &gw,
                                    .grad_bias = &gb}, ws, ws_bytes, NULL);
        if (SBN_FAILED(s)) break;
        mine[i] = bench_now() - t0;
        mine[MAX_STEPS + i] = tm.comm_seconds;
        mine[2 * MAX_STEPS + i] = tm.stats_seconds;
        mine[3 * MAX_STEPS + i] = tm.elemt_seconds;
    }
    if (SBN_FAILED(s)) {
        ra->status = s;
        snprintf(ra->error, sizeof ra->error, "rank %d step: %s: %s", rank, sbn_status_name(s),
                 sbn_last_error());
        goto out;
    }
    {
        uint64_t sent, received; /* the barrier of each step counted too */
        sbn_comm_traffic(comm, &sent, &received);
        ra->step_sent = (sent - ra->step_sent) / (uint64_t)reps;
        ra->step_received = (received - ra->step_received) / (uint64_t)reps;
    }
    /* gather every rank's per-step numbers (outside the timed steps) */
    all = calloc((size_t)world * 4 * MAX_STEPS, sizeof(double));
    if (all == NULL || sbn_comm_allgather(comm, mine, 4 * MAX_STEPS, all, 2) != SBN_OK) {
        ra->status = SBN_ERR_COMM;
        snprintf(ra->error, sizeof ra->error, "rank %d: gathering the timings failed", rank);
        goto out;
    }
    if (rank == 0) {
        double *step = calloc((size_t)reps, sizeof(double)), *cm = calloc((size_t)reps, sizeof(double));
        double comm_crit = 0, comm_all = 0, step_sum = 0, stats = 0, elemt = 0;
        for (i = 0; i < reps && step && cm; i++) {
            int crit = 0;
            double st = 0.0;
            for (j = 0; j < world; j++) {
                const double *r = all + (size_t)j * 4 * MAX_STEPS;
                if (r[i] > st) st = r[i];
                if (r[MAX_STEPS + i] < all[(size_t)crit * 4 * MAX_STEPS + MAX_STEPS + i]) crit = j;
                comm_all += r[MAX_STEPS + i] / world;
            }
            step[i] = st;
            step_sum += st;
            cm[i] = all[(size_t)crit * 4 * MAX_STEPS + MAX_STEPS + i];
            comm_crit += cm[i];
            stats += all[(size_t)crit * 4 * MAX_STEPS + 2 * MAX_STEPS + i];
            elemt += all[(size_t)crit * 4 * MAX_STEPS + 3 * MAX_STEPS + i];
        }
        if (step && cm) {
            ra->reps = reps;
            ra->step_min = bench_min(step, reps);
            ra->step_med = bench_median(step, reps);
            ra->comm_share = comm_crit / step_sum;
            ra->comm_share_mean = comm_all / step_sum;
            ra->comm_med_us = 1e6 * bench_median(cm, reps);
            ra->stats_ms = 1e3 * stats / reps;
            ra->elemt_ms = 1e3 * elemt / reps;
        } else {
            ra->status = SBN_ERR_OUT_OF_MEMORY;
        }
        free(step);
        free(cm);
    }
out:
    free(all);
    free(mine);
    bench_free(x, act);
    bench_free(y, act);
    bench_free(dy, act);
    bench_free(dx, act);
    bench_free(vec, 0);
    bench_free(stat, 0);
    bench_free(ws, ws_bytes);
}

static void report(const char *impl, const bench_opts *o, int world, const rank_args *r0)
{
    char shape[64], thr[16], note[256];
    double e = 4.0 * (double)(o->syncbn_shape[0] * o->syncbn_shape[1] * o->syncbn_shape[2] *
                              o->syncbn_shape[3]);
    snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)o->syncbn_shape[0],
             (long long)o->syncbn_shape[1], (long long)o->syncbn_shape[2],
             (long long)o->syncbn_shape[3]);
    snprintf(thr, sizeof thr, "W%d", world);
    if (r0->status != SBN_OK) {
        bench_row(impl, shape, "f32", thr, "cf", "fwd+bwd", 0, 0, 0, 8 * e, "error", r0->error);
        return;
    }
    snprintf(note, sizeof note,
             "comm %.2f%% of step (critical rank; mean over ranks %.2f%%); comm median %.1f us; "
             "stats %.3f ms; elemt %.3f ms; %d ranks x %lld rows; compute serial; "
             "rank 0 per step (barrier included): sent %llu B, received %llu B",
             100.0 * r0->comm_share, 100.0 * r0->comm_share_mean, r0->comm_med_us, r0->stats_ms,
             r0->elemt_ms, world, (long long)(o->syncbn_shape[0] / world),
             (unsigned long long)r0->step_sent, (unsigned long long)r0->step_received);
    bench_row(impl, shape, "f32", thr, "cf", "fwd+bwd", r0->step_min, r0->step_med, r0->reps,
              8 * e, "ok", note);
}

static void *rank_thread(void *arg)
{
    rank_main(arg);
    return NULL;
}

/* One world of o->world threads in one mode; prints its row; 0 on success. */
static int threads_world(const bench_opts *o, int reproducible)
{
    int world = o->world, i, ok = 1;
    sbn_comm_t **comms = calloc((size_t)world, sizeof *comms);
    rank_args *ra = calloc((size_t)world, sizeof *ra);
    pthread_t *th = calloc((size_t)world, sizeof *th);
    if (!comms || !ra || !th || sbn_comm_threads_create(world, 120.0, comms) != SBN_OK) {
        fprintf(stderr, "bench_ops: cannot create the threads world: %s\n", sbn_last_error());
        return 1;
    }
    for (i = 0; i < world; i++) {
        ra[i].comm = comms[i];
        ra[i].o = o;
        ra[i].reproducible = reproducible;
        if (pthread_create(&th[i], NULL, rank_thread, &ra[i]) != 0) return 1;
    }
    for (i = 0; i < world; i++) pthread_join(th[i], NULL);
    for (i = 0; i < world && ok; i++)
        if (ra[i].status != SBN_OK) {
            ra[0].status = ra[i].status;
            memcpy(ra[0].error, ra[i].error, sizeof ra[0].error);
            ok = 0;
        }
    report(reproducible ? "syncbn-threads-repro" : "syncbn-threads", o, world, &ra[0]);
    for (i = 0; i < world; i++) sbn_comm_destroy(comms[i]);
    free(comms);
    free(ra);
    free(th);
    return ok ? 0 : 1;
}

int bench_syncbn_threads(const bench_opts *o)
{
    int rc = threads_world(o, 0);
    return threads_world(o, 1) | rc;
}

#ifdef SBN_HAVE_MPI
int bench_syncbn_mpi(const bench_opts *o, int *argc, char ***argv)
{
    rank_args ra;
    int rank = 0, size = 1, mode;
    sbn_comm_t *comm = NULL;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(&ra, 0, sizeof ra);
    if (sbn_comm_mpi_create(MPI_COMM_WORLD, &comm) != SBN_OK) {
        fprintf(stderr, "bench_ops: rank %d: sbn_comm_mpi_create: %s\n", rank, sbn_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (mode = 0; mode < 2; mode++) {
        memset(&ra, 0, sizeof ra);
        ra.comm = comm;
        ra.o = o;
        ra.reproducible = mode;
        rank_main(&ra);
        if (rank == 0) report(mode ? "syncbn-mpi-repro" : "syncbn-mpi", o, size, &ra);
        else if (ra.status != SBN_OK) fprintf(stderr, "bench_ops: %s\n", ra.error);
        if (ra.status != SBN_OK) break;
    }
    sbn_comm_destroy(comm);
    MPI_Finalize();
    return ra.status == SBN_OK ? 0 : 1;
}
#else
int bench_syncbn_mpi(const bench_opts *o, int *argc, char ***argv)
{
    /* every process mpirun started gets here: only its rank 0 (or a plain run) reports */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    (void)argc;
    (void)argv;
    if (rank == NULL) rank = getenv("PMI_RANK");
    if (rank == NULL || strcmp(rank, "0") == 0)
        bench_row("syncbn-mpi", "-", "f32", "-", "cf", "fwd+bwd", 0, 0, 0, 0, "missing",
                  "bench_ops was built without MPI");
    (void)o;
    return 0;
}
#endif
