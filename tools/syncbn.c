/*
 * syncbn.c - the `syncbn` command, the project's main job.
 *   syncbn demo   [--ranks W] [--shape NxCxHxW] [--iters K] [--backend threads|mpi]
 *                 [--dtype f32|bf16|f16|f64] [--channels-last] [--empty] [--cumulative]
 *                 [--threads T] [--reproducible]
 *       W ranks train K steps of forward + backward on a synthetic, deliberately uneven
 *       batch (rank r holds a share r + 1 of it, so every rank has samples; --empty gives
 *       rank 1 none, to show an empty rank taking part) and print per step the max
 *       difference against whole-batch BN and the time split into stats, communication and
 *       elementwise work. (--no-empty, the default, is still accepted.)
 *       --reproducible: the layer's reproducible mode; also prints the digest of the
 *       outputs and whether it equals the digest of the same batch on one rank.
 *   syncbn verify [--backend threads|mpi] [--reproducible]
 *       The same comparison over a matrix of shapes, dtypes, layouts and splits; exits
 *       non-zero on any mismatch. --reproducible: digests of the reproducible mode's
 *       outputs for 1..16 ranks, random splits and pools, and the forced-scalar kernels
 *       (or the MPI world), each against one rank's (syncbn_repro.c).
 *       (--print-digests, hidden: the mode of verify --reproducible's re-executed child.)
 *   syncbn info
 *       What this build and this process would use: version, the kernel variant chosen,
 *       every SBN_* variable as the library parsed it (syncbn/info.h), the CPUs (the
 *       affinity mask within the cgroup's CPU quota), the caches, the thread count
 *       (SBN_NUM_THREADS, else the CPUs or this rank's share of them), MPI built or not,
 *       the communicator timeout (SBN_COMM_TIMEOUT); exits 1 when one of those variables
 *       holds an invalid value. demo and verify refuse a bad SBN_COMM_TIMEOUT (exit 1)
 *       and give their threads worlds the library's timeout when it is set.
 * With --backend mpi the command runs under mpirun: `mpirun -np W syncbn demo --backend mpi`;
 * every process must get the same flags (--threads aside), which the processes check first,
 * and they agree on each run's outcome before any later collective (syncbn_agree.c).
 * Every flag is checked strictly (whole integers, no trailing characters) against the
 * documented limits below; a bad, unknown, repeated or incomplete flag, or --ranks with
 * --backend mpi (the world is mpirun's), is named on stderr and the command exits with
 * status 2 without running anything.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syncbn/info.h" /* what the library uses: kernels, machine, the SBN_* variables */
#include "syncbn_agree.h"
#include "syncbn_check.h"
#include "syncbn_repro.h"
#ifdef SBN_HAVE_MPI
#include <mpi.h>
#include "syncbn/comm_mpi.h"
#endif

/*
 * Limits of the flags (every flag out of range is refused with a message naming it and
 * its limit, exit status 2). Every rank of a demo holds the whole global batch in
 * double several times over (about 48 bytes per element), so the batch is bounded
 * alone and times the ranks; the bounds also keep every size product far from
 * overflowing int64.
 */
#define MAX_RANKS 64
#define MAX_ITERS 100000
#define MAX_THREADS 256
#define MAX_TOTAL_THREADS 1024             /* ranks x threads: the compute threads of a demo */
#define MAX_ELEMENTS ((int64_t)1 << 24)    /* N x C x d2 x ... x dk of the global batch */
#define MAX_RANK_ELEMENTS ((int64_t)1 << 26) /* ranks x elements: about 3 GiB in all */
#define USAGE_ERROR 2

typedef struct options {
    const char *command;
    const char *backend;
    int ranks;
    int print_digests; /* hidden: verify --reproducible's re-executed child */
    check_config cfg;
} options;

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: syncbn demo [--ranks W] [--shape NxCxHxW] [--iters K] [--backend threads|mpi]\n"
            "                   [--dtype f32|bf16|f16|f64] [--channels-last] [--empty]\n"
            "                   [--cumulative] [--threads T] [--reproducible]\n"
            "       syncbn verify [--backend threads|mpi] [--reproducible]\n"
            "       syncbn info\n"
            "limits: --ranks 1 to %d, --iters 1 to %d, --threads 1 to %d (ranks x threads at most %d);\n"
            "        --shape has 2 to %d dims NxCx..., N >= 0, the others >= 1, at most %lld elements\n"
            "        (and ranks x elements at most %lld: every rank holds the whole batch)\n",
            MAX_RANKS, MAX_ITERS, MAX_THREADS, MAX_TOTAL_THREADS, CHECK_MAX_RANK,
            (long long)MAX_ELEMENTS, (long long)MAX_RANK_ELEMENTS);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static int usage_error(const char *format, ...);

/* Prints "syncbn: <message>" and a pointer to the usage; returns the usage exit status. */
static int usage_error(const char *format, ...)
{
    va_list args;
    fprintf(stderr, "syncbn: ");
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, "\n(syncbn --help shows the usage)\n");
    return USAGE_ERROR;
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

/*
 * A whole decimal integer in [lo, hi]: optional '-', digits, nothing else (no blanks,
 * no '+', no trailing characters). Returns 1 and sets *out, or 0.
 */
static int parse_integer(const char *text, size_t length, long long lo, long long hi,
                         long long *out)
{
    char digits[32], *end = NULL;
    long long value;
    size_t i;
    if (length == 0 || length >= sizeof digits) return 0;
    for (i = 0; i < length; i++)
        if (!(isdigit((unsigned char)text[i]) || (i == 0 && text[i] == '-' && length > 1)))
            return 0;
    memcpy(digits, text, length);
    digits[length] = '\0';
    errno = 0;
    value = strtoll(digits, &end, 10);
    if (errno != 0 || end != digits + length || value < lo || value > hi) return 0;
    *out = value;
    return 1;
}

static int parse_int_flag(const char *flag, const char *value, int lo, int hi, int *out)
{
    long long v;
    if (parse_integer(value, strlen(value), lo, hi, &v)) {
        *out = (int)v;
        return 0;
    }
    return usage_error("%s %s: expected an integer from %d to %d", flag, value, lo, hi);
}

/* --shape NxCx...: 2..CHECK_MAX_RANK dims, N >= 0, the others >= 1, bounded product. */
static int parse_shape(const char *value, check_config *cfg)
{
    const char *p = value;
    int64_t elements = 1, others = 1;
    int rank = 0, d;
    for (;;) {
        const char *x = strchr(p, 'x');
        size_t length = x ? (size_t)(x - p) : strlen(p);
        long long dim;
        if (rank == CHECK_MAX_RANK) {
            return usage_error("--shape %s: more than %d dims; expected 2 to %d dims NxCx...", value,
                               CHECK_MAX_RANK, CHECK_MAX_RANK);
        }
        if (!parse_integer(p, length, rank == 0 ? 0 : 1, MAX_ELEMENTS, &dim)) {
            return usage_error("--shape %s: dim %d ('%.*s') must be an integer from %d to %lld "
                               "(expected NxCx... with 2 to %d dims)",
                               value, rank, (int)length, p, rank == 0 ? 0 : 1,
                               (long long)MAX_ELEMENTS, CHECK_MAX_RANK);
        }
        cfg->shape[rank++] = dim;
        if (x == NULL) break;
        p = x + 1;
    }
    if (rank < 2) {
        return usage_error("--shape %s: %d dim; expected 2 to %d dims NxCx...", value, rank,
                           CHECK_MAX_RANK);
    }
    /* every dim <= 2^24 and every partial product checked against 2^24: nothing overflows */
    for (d = 1; d < rank; d++) {
        others *= cfg->shape[d];
        if (others > MAX_ELEMENTS) break;
    }
    elements = others > MAX_ELEMENTS ? others : others * cfg->shape[0];
    if (elements > MAX_ELEMENTS) {
        return usage_error("--shape %s: more than %lld elements (the limit of --shape)", value,
                           (long long)MAX_ELEMENTS);
    }
    cfg->rank = rank;
    return 0;
}

static int64_t batch_elements(const check_config *cfg)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < cfg->rank; d++) n *= cfg->shape[d];
    return n;
}

/* Every flag: the first N_VALUE_FLAGS take a value, the others are switches. */
static const char *const k_flags[] = {"--ranks",         "--iters",    "--threads",
                                      "--backend",       "--dtype",    "--shape",
                                      "--channels-last", "--no-empty", "--cumulative",
                                      "--reproducible",  "--print-digests", "--empty"};
#define N_VALUE_FLAGS 6

/* The flag's index in k_flags, or -1. */
static int flag_index(const char *flag)
{
    int i;
    for (i = 0; i < (int)(sizeof k_flags / sizeof k_flags[0]); i++)
        if (strcmp(flag, k_flags[i]) == 0) return i;
    return -1;
}

static int takes_value(const char *flag)
{
    int i = flag_index(flag);
    return i >= 0 && i < N_VALUE_FLAGS;
}

static int is_switch(const char *flag)
{
    return flag_index(flag) >= N_VALUE_FLAGS && strcmp(flag, "--print-digests") != 0;
}

/*
 * Parses argv into o. Returns -1 to run, 0 after printing the usage on request
 * (--help), or USAGE_ERROR after printing a message that names the argument.
 */
static int parse(int argc, char **argv, options *o)
{
    int i, empty = 0, no_empty = 0, rc;
    unsigned seen = 0; /* bit k: k_flags[k] was given */
    memset(o, 0, sizeof *o);
    if (argc < 2) {
        print_usage(stderr);
        return USAGE_ERROR;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    o->command = argv[1];
    o->backend = "threads";
    if (strcmp(o->command, "info") == 0) {
        if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            print_usage(stdout);
            return 0;
        }
        if (argc > 2) return usage_error("%s is not a flag of info (info takes no flags)", argv[2]);
        return -1;
    }
    if (strcmp(o->command, "demo") != 0 && strcmp(o->command, "verify") != 0)
        return usage_error("unknown command '%s': expected demo or verify (or info)", o->command);
    o->ranks = 4;
    o->cfg.rank = 4;
    o->cfg.shape[0] = 16;
    o->cfg.shape[1] = 32;
    o->cfg.shape[2] = 28;
    o->cfg.shape[3] = 28;
    o->cfg.dtype = SBN_F32;
    o->cfg.iters = 5;
    o->cfg.threads = 1;
    for (i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_usage(stdout);
            return 0;
        }
        if (flag_index(a) >= 0 && (seen >> flag_index(a) & 1u)) /* not silently the last one */
            return usage_error("%s is given twice: give each flag once", a);
        if (flag_index(a) >= 0) seen |= 1u << flag_index(a);
        if (strcmp(a, "--print-digests") == 0 && strcmp(o->command, "verify") == 0) {
            o->print_digests = 1;
            continue;
        }
        if (!takes_value(a) && !is_switch(a))
            return usage_error("unknown flag '%s' for %s", a, o->command);
        if (strcmp(o->command, "verify") == 0 && strcmp(a, "--backend") != 0 &&
            strcmp(a, "--reproducible") != 0)
            return usage_error("%s is not a flag of %s (verify takes only --backend and "
                               "--reproducible)", a, o->command);
        if (is_switch(a)) {
            if (strcmp(a, "--channels-last") == 0) o->cfg.channels_last = 1;
            if (strcmp(a, "--no-empty") == 0) no_empty = 1;
            if (strcmp(a, "--empty") == 0) empty = 1;
            if (strcmp(a, "--cumulative") == 0) o->cfg.cumulative = 1;
            if (strcmp(a, "--reproducible") == 0) o->cfg.reproducible = 1;
            continue;
        }
        if (v == NULL) return usage_error("%s needs a value", a);
        i++;
        rc = 0;
        if (strcmp(a, "--ranks") == 0) {
            rc = parse_int_flag(a, v, 1, MAX_RANKS, &o->ranks);
        } else if (strcmp(a, "--iters") == 0) {
            rc = parse_int_flag(a, v, 1, MAX_ITERS, &o->cfg.iters);
        } else if (strcmp(a, "--threads") == 0) {
            rc = parse_int_flag(a, v, 1, MAX_THREADS, &o->cfg.threads);
        } else if (strcmp(a, "--backend") == 0) {
            if (strcmp(v, "threads") != 0 && strcmp(v, "mpi") != 0)
                return usage_error("--backend %s: expected threads or mpi", v);
#ifndef SBN_HAVE_MPI
            if (strcmp(v, "mpi") == 0)
                return usage_error("--backend %s: this build has no MPI (expected threads)", v);
#endif
            o->backend = v;
        } else if (strcmp(a, "--dtype") == 0) {
            if (!parse_dtype(v, &o->cfg.dtype))
                return usage_error("--dtype %s: expected f32, bf16, f16 or f64", v);
        } else {
            rc = parse_shape(v, &o->cfg);
        }
        if (rc != 0) return rc;
    }
    if (empty && no_empty)
        return usage_error("--empty with --no-empty: give one (--empty: rank 1 gets no samples)");
    o->cfg.empty_rank = empty ? 1 : -1;
    if (strcmp(o->backend, "mpi") == 0 && (seen >> flag_index("--ranks") & 1u))
        return usage_error("--ranks %d with --backend mpi: the world is the MPI processes (mpirun "
                           "-np %d); --ranks is a flag of the threads backend",
                           o->ranks, o->ranks);
    if (o->print_digests && (!o->cfg.reproducible || strcmp(o->backend, "threads") != 0))
        return usage_error("--print-digests needs --reproducible and the threads backend (it is "
                           "the mode of verify --reproducible's re-executed child)");
    /* limits that bind two flags (threads backend: --ranks is the world) */
    if (strcmp(o->backend, "threads") == 0 && strcmp(o->command, "demo") == 0) {
        if (o->ranks * o->cfg.threads > MAX_TOTAL_THREADS)
            return usage_error("--ranks %d with --threads %d: %d compute threads; expected ranks x "
                               "threads at most %d",
                               o->ranks, o->cfg.threads, o->ranks * o->cfg.threads,
                               MAX_TOTAL_THREADS);
        if (o->ranks * batch_elements(&o->cfg) > MAX_RANK_ELEMENTS)
            return usage_error("--ranks %d with --shape of %lld elements: every rank holds the "
                               "whole batch; expected ranks x elements at most %lld",
                               o->ranks, (long long)batch_elements(&o->cfg),
                               (long long)MAX_RANK_ELEMENTS);
    }
    return -1;
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
    sbn_status s = ok ? sbn_comm_threads_create(ranks, check_comm_timeout(), comms)
                      : SBN_ERR_OUT_OF_MEMORY;
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
/* A communicator that is not made fails this rank's run (its status in out), so that the
 * ranks still meet at the agreement after the run (agree_count). */
static int run_mpi(const check_config *cfg, check_result *out)
{
    sbn_comm_t *comm = NULL;
    sbn_status s = sbn_comm_mpi_create(MPI_COMM_WORLD, &comm);
    if (s != SBN_OK) {
        fprintf(stderr, "syncbn: rank %d: %s\n", g_mpi_rank, sbn_last_error());
        memset(out, 0, sizeof *out);
        out->status = s;
        snprintf(out->message, sizeof out->message, "%s", sbn_last_error());
        return 1;
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
    int world = world_size(o), printer = is_printer(o), mpi = strcmp(o->backend, "mpi") == 0, rc;
    int64_t first, count;
    repro_demo digests;
    int j, started, failed;
    o->cfg.verbose = 1;
    o->cfg.progress = 1;
    if (o->cfg.empty_rank >= world) o->cfg.empty_rank = -1;
    if (printer) {
        printf("syncbn demo: global batch ");
        for (j = 0; j < o->cfg.rank; j++)
            printf("%s%lld", j ? "x" : "", (long long)o->cfg.shape[j]);
        printf(" %s %s, %d ranks (%s backend), %d steps%s\n", sbn_dtype_name(o->cfg.dtype),
               o->cfg.channels_last ? "channels-last" : "channels-first", world, o->backend,
               o->cfg.iters, o->cfg.reproducible ? ", reproducible mode" : "");
        printf("  samples per rank:");
        for (j = 0; j < world; j++) {
            check_split(o->cfg.shape[0], world, j, o->cfg.empty_rank, &first, &count);
            printf(" %lld", (long long)count);
        }
        printf("\n");
    }
    /* --reproducible: every rank's outputs are digested (one slot per rank of this process) */
    started = !o->cfg.reproducible || repro_demo_start(&digests, mpi ? 1 : world, &o->cfg);
    if (!started) fprintf(stderr, "syncbn: out of memory\n");
    if (mpi ? agree_count(!started, SBN_OK) > 0 : !started) return 1; /* every rank alike */
    if (!run_one(o, &o->cfg, &r)) return 1;
    rc = check_passed(&r) ? 0 : 1;
    if (printer) {
        print_result(&r);
        printf("%s\n", rc == 0 ? "demo: SyncBN over the ranks matches whole-batch BN"
                              : "demo: MISMATCH against whole-batch BN");
    }
    /* under MPI every rank learns whether any run failed before the digests' collective */
    failed = mpi ? agree_count(SBN_FAILED(r.status), r.status) : SBN_FAILED(r.status);
    if (failed > 0 && o->cfg.reproducible) {
        if (printer)
            printf("demo --reproducible: the run failed on %d of %d ranks; no digests compared\n",
                   failed, world);
        repro_demo_free(&digests);
        return 1;
    }
    if (o->cfg.reproducible) rc |= repro_demo_finish(&digests, &o->cfg, mpi, printer);
    return rc | (failed > 0);
}

static int verify(options *o)
{
    static const int64_t shapes[][4] = {{7, 3, 5, 5}, {13, 16, 4, 3}, {5, 1, 40, 60}, {2, 64, 1, 1}};
    static const sbn_dtype dtypes[] = {SBN_F32, SBN_BF16, SBN_F16};
    static const int worlds[] = {1, 2, 3, 4, 7};
    int world_fixed = strcmp(o->backend, "threads") != 0, printer = is_printer(o);
    unsigned si, di, wi, layout;
    int failures = 0, runs = 0;
    if (o->cfg.reproducible) return repro_verify(o->backend, o->print_digests);
    for (wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
        int world = world_fixed ? world_size(o) : worlds[wi];
        for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
                for (layout = 0; layout < 2; layout++) {
                    check_config cfg;
                    check_result r;
                    memset(&cfg, 0, sizeof cfg);
                    cfg.rank = 4;
                    memcpy(cfg.shape, shapes[si], sizeof shapes[si]);
                    cfg.dtype = dtypes[di];
                    cfg.channels_last = (int)layout;
                    cfg.iters = 2;
                    cfg.threads = 1 + (int)(si % 2);
                    cfg.empty_rank = world > 1 ? (int)((si + di) % (unsigned)world) : -1;
                    cfg.cumulative = (int)(di == 1);
                    o->ranks = world;
                    if (!run_one(o, &cfg, &r)) return 1;
                    runs++;
                    /* under MPI a case fails on every rank when it failed on one */
                    if (world_fixed ? agree_count(!check_passed(&r), r.status) > 0
                                    : !check_passed(&r))
                        failures++;
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

/* ---- syncbn info ---- */

/* The cache sizes the schedules use, where each came from, and what the size rules of
 * the schedules decide from them. */
static void print_caches(const sbn_info *in)
{
    int streams = in->stream_stores, tiles = in->row_tiles; /* -1: unset or invalid */
    double l1 = (double)in->cache[0].bytes, l2 = (double)in->cache[1].bytes;
    double l3 = (double)in->cache[2].bytes, mib = 1048576.0;
    int level;
    printf("caches: L1d %.4g KiB, L2 %.4g MiB, L3 %.4g MiB (one instance each)\n", l1 / 1024.0,
           l2 / mib, l3 / mib);
    for (level = 0; level < 3; level++) { /* where each size came from */
        const sbn_info_cache *c = &in->cache[level];
        printf("  L%d: %s", level + 1, c->source);
        if (c->sharing > 0) printf("; shared by %d CPUs", c->sharing);
        if (c->reported > 0) printf("; reported %.4g MiB", (double)c->reported / mib);
        printf("\n");
    }
    printf("  L3 instances among these CPUs: %d", in->l3_instances);
    if (in->l3_instances_reported > 0)
        printf(" (/sys gave %d, not believed: docs/tuning.md)", in->l3_instances_reported);
    printf("%s\n", in->l3_instances > 1 ? " (the size rules below use one)" : "");
    if (tiles >= 0)
        printf("row tiles: %s (SBN_ROW_TILES=%d)\n", tiles ? "always" : "never", tiles);
    else
        printf("row tiles: channels-last maps whose rows and coefficients exceed %.4g KiB, "
               "while the tensors fit the L3 (SBN_ROW_TILES not set: by size)\n",
               in->row_tile_bytes / 1024.0);
    if (streams >= 0)
        printf("beyond the cache: %s (SBN_STREAM_STORES=%d)\n", streams ? "always" : "never",
               streams);
    else
        printf("beyond the cache: maps over %.4g MiB (channels-last "
               "rows: %.4g MiB, with 2+ threads rows of %d bytes or more) stream their stores, "
               "reductions over %.4g MiB prefetch short rows and NCHW planes of up to %d bytes "
               "(SBN_STREAM_STORES not set: by size)\n",
               in->map_stream_bytes / mib, in->rows_stream_bytes / mib,
               in->rows_stream_min_row_bytes, in->reduce_prefetch_bytes / mib,
               in->prefetch_run_bytes);
}

/* The library's parse of the variable `name` (every variable info prints is there). */
static const sbn_info_var *info_var(const sbn_info *in, const char *name)
{
    static const sbn_info_var none = {"", 0, 0, "", "", ""};
    int i;
    for (i = 0; i < in->nvars; i++)
        if (strcmp(in->var[i].name, name) == 0) return &in->var[i];
    return &none;
}

static int info(void)
{
    sbn_info in; /* the library's own view: kernels, machine, every SBN_* variable */
    const sbn_info_var *num, *timeout;
    char share[160];
    int bad = 0, id;
    sbn_comm_t *comm = NULL;

    in.size = sizeof in;
    if (SBN_FAILED(sbn_info_get(&in))) {
        fprintf(stderr, "syncbn: %s\n", sbn_last_error());
        return 1;
    }
    num = info_var(&in, "SBN_NUM_THREADS");
    timeout = info_var(&in, "SBN_COMM_TIMEOUT");
    printf("version: %d.%d.%d (library %s)\n", SBN_VERSION_MAJOR, SBN_VERSION_MINOR,
           SBN_VERSION_PATCH, sbn_version());
    printf("kernels: %s (usable on this CPU: %s)\n", in.kernels, in.kernels_usable);
    for (id = 0; id < in.nvars; id++) { /* each variable: its parsed value, or why not */
        printf("%s: %s\n", in.var[id].name, in.var[id].state);
        if (in.var[id].set && !in.var[id].valid) bad = 1;
    }
    if (in.cpu_quota > 0 && in.cpus < in.cpus_affinity)
        printf("cpus: %d (the cgroup's CPU quota of %.2f CPUs; %d in this process's affinity "
               "mask)\n", in.cpus, in.cpu_quota, in.cpus_affinity);
    else if (in.cpu_quota > 0)
        printf("cpus: %d (in this process's affinity mask, within the cgroup's CPU quota of "
               "%.2f CPUs)\n", in.cpus, in.cpu_quota);
    else
        printf("cpus: %d (in this process's affinity mask)\n", in.cpus);
    print_caches(&in);
    if (in.local_ranks > 1)
        snprintf(share, sizeof share, "the cpus above, at most the machine's share of %d local "
                 "ranks (%s)", in.local_ranks, in.local_ranks_source);
    else
        snprintf(share, sizeof share, "the cpus above");
    if (!num->set)
        printf("threads: %d (SBN_NUM_THREADS unset: %s)\n", in.threads, share);
    else if (num->valid)
        printf("threads: %d (SBN_NUM_THREADS)\n", in.threads);
    else
        printf("threads: %d (SBN_NUM_THREADS is \"%s\", refused: expected 1 to %d; %s)\n",
               in.threads, num->value, in.max_threads, share);
#ifdef SBN_HAVE_MPI
    {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length = 0;
        MPI_Get_library_version(version, &length); /* allowed before MPI_Init */
        version[strcspn(version, "\n,")] = '\0';
        printf("mpi: yes (%s; syncbn demo/verify --backend mpi, syncbn::mpi)\n", version);
    }
#else
    printf("mpi: no (built without the MPI backend)\n");
#endif
    /* The library's own rule decides: a one-rank threads communicator reads SBN_COMM_TIMEOUT. */
    if (SBN_FAILED(sbn_comm_threads_create(1, 0.0, &comm)))
        printf("comm timeout: refused: %s\n", sbn_last_error());
    else if (!timeout->set)
        printf("comm timeout: %g s (SBN_COMM_TIMEOUT unset: the default)\n",
               in.comm_timeout_default);
    else
        printf("comm timeout: %g s (SBN_COMM_TIMEOUT%s)\n", in.comm_timeout,
               in.comm_timeout == in.comm_timeout_max ? ", capped" : "");
    if (comm != NULL) sbn_comm_destroy(comm);
    return bad;
}

/* demo and verify refuse a bad SBN_COMM_TIMEOUT before running anything, as every
 * communicator creation of the library would; 1 when refused. */
static int comm_timeout_refused(void)
{
    sbn_info in;
    const sbn_info_var *t;
    in.size = sizeof in;
    if (SBN_FAILED(sbn_info_get(&in))) return 0; /* cannot fail with a valid struct */
    t = info_var(&in, "SBN_COMM_TIMEOUT");
    if (!t->set || t->valid) return 0;
    fprintf(stderr, "syncbn: %s\n", t->message);
    return 1;
}

#ifdef SBN_HAVE_MPI
/*
 * What every MPI process must share (agree_same_flags): the options that decide which
 * collectives the command makes, normalized (flag order and spelling do not matter;
 * --threads, a per-process pool, may differ). `shown`: the command line for messages.
 */
static void flags_text(const options *o, int argc, char **argv, char *flags, size_t size,
                       char *shown, size_t shown_size)
{
    size_t n = 0;
    int d, i;
    n += (size_t)snprintf(flags, size, "%s reproducible=%d digests=%d iters=%d dtype=%s "
                          "channels_last=%d empty=%d cumulative=%d shape=", o->command,
                          o->cfg.reproducible, o->print_digests, o->cfg.iters,
                          sbn_dtype_name(o->cfg.dtype), o->cfg.channels_last, o->cfg.empty_rank,
                          o->cfg.cumulative);
    for (d = 0; d < o->cfg.rank && n < size; d++)
        n += (size_t)snprintf(flags + n, size - n, "%s%lld", d ? "x" : "", (long long)o->cfg.shape[d]);
    shown[0] = '\0';
    for (i = 1, n = 0; i < argc && n < shown_size; i++)
        n += (size_t)snprintf(shown + n, shown_size - n, "%s%s", i > 1 ? " " : "", argv[i]);
}
#endif

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    if (strcmp(o.command, "info") == 0) return info();
    if (comm_timeout_refused()) return 1;
#ifdef SBN_HAVE_MPI
    if (strcmp(o.backend, "mpi") == 0) {
        char flags[512], shown[512];
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi_rank);
        /* the first collective of every rank, whatever its flags: are they everyone's? */
        agree_open();
        flags_text(&o, argc, argv, flags, sizeof flags, shown, sizeof shown);
        if (!agree_same_flags(flags, shown)) rc = USAGE_ERROR;
    }
#endif
    if (rc != USAGE_ERROR) /* else refused on every rank alike: nothing runs */
        rc = strcmp(o.command, "demo") == 0 ? demo(&o) : verify(&o); /* parse() knows no other */
#ifdef SBN_HAVE_MPI
    if (strcmp(o.backend, "mpi") == 0) {
        agree_close();
        MPI_Finalize();
    }
#endif
    return rc;
}
