/*
 * syncbn.c - the `syncbn` command, the project's main job.
 *   syncbn demo   [--ranks W] [--shape NxCxHxW] [--iters K] [--backend threads|mpi]
 *                 [--dtype f32|bf16|f16|f64] [--channels-last] [--no-empty] [--threads T]
 *       W ranks train K steps of forward + backward on a synthetic, deliberately uneven
 *       batch (rank 1 empty by default) and print per step the max difference against
 *       whole-batch BN and the time split into stats, communication and elementwise work.
 *   syncbn verify [--backend threads|mpi]
 *       The same comparison over a matrix of shapes, dtypes, layouts and splits; exits
 *       non-zero on any mismatch.
 * With --backend mpi the command runs under mpirun: `mpirun -np W syncbn demo --backend mpi`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncbn_check.h"
#ifdef SBN_HAVE_MPI
#include <mpi.h>
#include "syncbn/comm_mpi.h"
#endif

typedef struct options {
    const char *command;
    const char *backend;
    int ranks;
    check_config cfg;
} options;

static int usage(void)
{
    fprintf(stderr,
            "usage: syncbn demo [--ranks W] [--shape NxCxHxW] [--iters K] [--backend threads|mpi]\n"
            "                   [--dtype f32|bf16|f16|f64] [--channels-last] [--no-empty] [--threads T]\n"
            "       syncbn verify [--backend threads|mpi]\n");
    return 2;
}

static int parse_dtype(const char *s, sbn_dtype *out)
{
    static const sbn_dtype all[] = {SBN_F32, SBN_F64, SBN_F16, SBN_BF16};
    unsigned i;
    for (i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, sbn_dtype_name(all[i])) == 0) {
            *out = all[i];
            return 1;
        }
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    int i, no_empty = 0;
    memset(o, 0, sizeof *o);
    if (argc < 2) return 0;
    o->command = argv[1];
    o->backend = "threads";
    o->ranks = 4;
    o->cfg.shape[0] = 16;
    o->cfg.shape[1] = 32;
    o->cfg.shape[2] = 28;
    o->cfg.shape[3] = 28;
    o->cfg.dtype = SBN_F32;
    o->cfg.iters = 5;
    o->cfg.threads = 1;
    for (i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--channels-last") == 0) {
            o->cfg.channels_last = 1;
        } else if (strcmp(a, "--no-empty") == 0) {
            no_empty = 1;
        } else if (strcmp(a, "--cumulative") == 0) {
            o->cfg.cumulative = 1;
        } else if (v == NULL) {
            return 0;
        } else if (strcmp(a, "--ranks") == 0) {
            o->ranks = atoi(v), i++;
        } else if (strcmp(a, "--iters") == 0) {
            o->cfg.iters = atoi(v), i++;
        } else if (strcmp(a, "--threads") == 0) {
            o->cfg.threads = atoi(v), i++;
        } else if (strcmp(a, "--backend") == 0) {
            o->backend = v, i++;
        } else if (strcmp(a, "--dtype") == 0) {
            if (!parse_dtype(v, &o->cfg.dtype)) return 0;
            i++;
        } else if (strcmp(a, "--shape") == 0) {
            long long n, c, h, w;
            if (sscanf(v, "%lldx%lldx%lldx%lld", &n, &c, &h, &w) != 4) return 0;
            o->cfg.shape[0] = n, o->cfg.shape[1] = c, o->cfg.shape[2] = h, o->cfg.shape[3] = w;
            i++;
        } else {
            return 0;
        }
    }
    o->cfg.empty_rank = no_empty ? -1 : 1;
    return o->ranks >= 1 && o->ranks <= 256 && o->cfg.iters >= 1 && o->cfg.threads >= 1 &&
           o->cfg.shape[0] >= 0 && o->cfg.shape[1] >= 1 && o->cfg.shape[2] >= 1 &&
           o->cfg.shape[3] >= 1;
}

typedef struct rank_job {
    const check_config *cfg;
    sbn_comm_t *comm;
    check_result result;
} rank_job;

static void *rank_main(void *arg)
{
    rank_job *job = arg;
    check_run(job->cfg, job->comm, &job->result);
    return NULL;
}

/* Runs cfg on `ranks` in-process ranks; returns rank 0's result (the world's maxima). */
static int run_threads(const check_config *cfg, int ranks, check_result *out)
{
    sbn_comm_t **comms = calloc((size_t)ranks, sizeof *comms);
    rank_job *jobs = calloc((size_t)ranks, sizeof *jobs);
    pthread_t *threads = calloc((size_t)ranks, sizeof *threads);
    int r, ok = comms && jobs && threads;
    sbn_status s = ok ? sbn_comm_threads_create(ranks, 120.0, comms) : SBN_ERR_OUT_OF_MEMORY;
    if (s != SBN_OK) {
        fprintf(stderr, "syncbn: cannot create %d ranks: %s\n", ranks, sbn_last_error());
        free(comms), free(jobs), free(threads);
        return 0;
    }
    for (r = 0; r < ranks; r++) {
        jobs[r].cfg = cfg;
        jobs[r].comm = comms[r];
        if (pthread_create(&threads[r], NULL, rank_main, &jobs[r]) != 0) {
            fprintf(stderr, "syncbn: cannot start rank thread %d\n", r);
            exit(1); /* the ranks already started would wait for this one until their timeout */
        }
    }
    for (r = 0; r < ranks; r++) pthread_join(threads[r], NULL);
    *out = jobs[0].result;
    for (r = 0; r < ranks; r++) {
        if (SBN_FAILED(jobs[r].result.status) && !SBN_FAILED(out->status)) *out = jobs[r].result;
        sbn_comm_destroy(comms[r]);
    }
    free(comms), free(jobs), free(threads);
    return 1;
}

#ifdef SBN_HAVE_MPI
static int g_mpi_rank;
static int run_mpi(const check_config *cfg, check_result *out)
{
    sbn_comm_t *comm = NULL;
    if (sbn_comm_mpi_create(MPI_COMM_WORLD, &comm) != SBN_OK) {
        fprintf(stderr, "syncbn: %s\n", sbn_last_error());
        return 0;
    }
    check_run(cfg, comm, out);
    sbn_comm_destroy(comm);
    return 1;
}
#endif

static int run_one(const options *o, const check_config *cfg, check_result *out)
{
    if (strcmp(o->backend, "threads") == 0) return run_threads(cfg, o->ranks, out);
#ifdef SBN_HAVE_MPI
    if (strcmp(o->backend, "mpi") == 0) return run_mpi(cfg, out);
#endif
    fprintf(stderr, "syncbn: backend '%s' is not available (threads%s)\n", o->backend,
#ifdef SBN_HAVE_MPI
            ", mpi"
#else
            "; this build has no MPI"
#endif
    );
    return 0;
}

static int is_printer(const options *o)
{
#ifdef SBN_HAVE_MPI
    if (strcmp(o->backend, "mpi") == 0) return g_mpi_rank == 0;
#endif
    (void)o;
    return 1;
}

static int world_size(const options *o)
{
#ifdef SBN_HAVE_MPI
    if (strcmp(o->backend, "mpi") == 0) {
        int size = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        return size;
    }
#endif
    return o->ranks;
}

static void print_result(const check_result *r)
{
    double total = r->timing.stats_seconds + r->timing.comm_seconds + r->timing.elemt_seconds;
    if (SBN_FAILED(r->status)) {
        printf("  FAILED: %s: %s\n", sbn_status_name(r->status), r->message);
        return;
    }
    printf("  max diff over %d steps (tolerance):  y %.2e (%.1e)  running %.2e (%.1e)  "
           "grad_input %.2e (%.1e)  grad_w/b %.2e (%.1e)  mean/invstd %.2e (%.1e)\n",
           r->steps, r->y, r->tol_y, r->running, r->tol_running, r->grad_input, r->tol_grad_input,
           r->grad_params, r->tol_grad_params, r->stats, r->tol_stats);
    printf("  time (critical-path rank, all steps): stats %.2f ms, communication %.2f ms (%.1f%% of the "
           "step), elementwise %.2f ms\n",
           1e3 * r->timing.stats_seconds, 1e3 * r->timing.comm_seconds,
           total > 0 ? 100.0 * r->timing.comm_seconds / total : 0.0, 1e3 * r->timing.elemt_seconds);
}

static int demo(options *o)
{
    check_result r;
    int world = world_size(o), printer = is_printer(o);
    int64_t first, count;
    int j;
    o->cfg.verbose = 1;
    o->cfg.progress = 1;
    if (o->cfg.empty_rank >= world) o->cfg.empty_rank = -1;
    if (printer) {
        printf("syncbn demo: global batch %lldx%lldx%lldx%lld %s %s, %d ranks (%s backend), %d steps\n",
               (long long)o->cfg.shape[0], (long long)o->cfg.shape[1], (long long)o->cfg.shape[2],
               (long long)o->cfg.shape[3], sbn_dtype_name(o->cfg.dtype),
               o->cfg.channels_last ? "channels-last" : "channels-first", world, o->backend,
               o->cfg.iters);
        printf("  samples per rank:");
        for (j = 0; j < world; j++) {
            check_split(o->cfg.shape[0], world, j, o->cfg.empty_rank, &first, &count);
            printf(" %lld", (long long)count);
        }
        printf("\n");
    }
    if (!run_one(o, &o->cfg, &r)) return 1;
    if (!printer) return check_passed(&r) ? 0 : 1;
    print_result(&r);
    printf("%s\n", check_passed(&r) ? "demo: SyncBN over the ranks matches whole-batch BN"
                                    : "demo: MISMATCH against whole-batch BN");
    return check_passed(&r) ? 0 : 1;
}

static int verify(options *o)
{
    static const int64_t shapes[][4] = {{7, 3, 5, 5}, {13, 16, 4, 3}, {5, 1, 40, 60}, {2, 64, 1, 1}};
    static const sbn_dtype dtypes[] = {SBN_F32, SBN_BF16, SBN_F16};
    static const int worlds[] = {1, 2, 3, 4, 7};
    int world_fixed = strcmp(o->backend, "threads") != 0, printer = is_printer(o);
    unsigned si, di, wi, layout;
    int failures = 0, runs = 0;
    for (wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
        int world = world_fixed ? world_size(o) : worlds[wi];
        for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
                for (layout = 0; layout < 2; layout++) {
                    check_config cfg;
                    check_result r;
                    memset(&cfg, 0, sizeof cfg);
                    memcpy(cfg.shape, shapes[si], sizeof cfg.shape);
                    cfg.dtype = dtypes[di];
                    cfg.channels_last = (int)layout;
                    cfg.iters = 2;
                    cfg.threads = 1 + (int)(si % 2);
                    cfg.empty_rank = world > 1 ? (int)((si + di) % (unsigned)world) : -1;
                    cfg.cumulative = (int)(di == 1);
                    o->ranks = world;
                    if (!run_one(o, &cfg, &r)) return 1;
                    runs++;
                    if (!check_passed(&r)) failures++;
                    if (printer && (!check_passed(&r) || getenv("SBN_VERBOSE"))) {
                        printf("%s world %d shape %lldx%lldx%lldx%lld %s %s empty rank %d:\n",
                               check_passed(&r) ? "ok  " : "FAIL", world, (long long)cfg.shape[0],
                               (long long)cfg.shape[1], (long long)cfg.shape[2],
                               (long long)cfg.shape[3], sbn_dtype_name(cfg.dtype),
                               layout ? "channels-last" : "channels-first", cfg.empty_rank);
                        print_result(&r);
                    }
                }
        if (world_fixed) break;
    }
    if (printer) printf("verify (%s backend): %d passed, %d failed\n", o->backend, runs - failures, failures);
    return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    options o;
    int rc;
    if (!parse(argc, argv, &o)) return usage();
#ifdef SBN_HAVE_MPI
    if (strcmp(o.backend, "mpi") == 0) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi_rank);
    }
#endif
    if (strcmp(o.command, "demo") == 0)
        rc = demo(&o);
    else if (strcmp(o.command, "verify") == 0)
        rc = verify(&o);
    else
        rc = usage();
#ifdef SBN_HAVE_MPI
    if (strcmp(o.backend, "mpi") == 0) MPI_Finalize();
#endif
    return rc;
}
