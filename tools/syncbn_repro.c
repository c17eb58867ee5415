/*
 * syncbn_repro.c - `syncbn verify --reproducible` and the digest of `syncbn demo
 * --reproducible` (syncbn_repro.h has the digest). verify runs a handful of cases
 * (2-D to 5-D, f32, bf16 and f16, contiguous and channels-last, momentum and the
 * cumulative average) for two training steps in reproducible mode with
 * sync_grad_params, digests every output, and compares with the case's W = 1
 * digest (one rank, no pool): on the threads backend for worlds of 1 to 16 ranks,
 * each with a seeded random split along N (empty ranks included) and a pool of 0
 * to 4 threads per rank, then in a re-execution of this program (/proc/self/exe,
 * posix_spawn) with SBN_FORCE_SCALAR=1 and the hidden flag --print-digests, whose
 * W = 1 and W = 3 digests must be the same; under MPI, the world's digest against
 * a W = 1 digest computed on each process alone. The inputs are a fixed formula of
 * the case, the step and the element index, rounded through the dtype by the
 * library's own elementwise op.
 */
#define _GNU_SOURCE /* environ */
#include "syncbn_repro.h"
#include "syncbn_agree.h"

#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syncbn/info.h" /* the kernel variant of this process */
#ifdef SBN_HAVE_MPI
#include <mpi.h>
#include "syncbn/comm_mpi.h"
#endif

extern char **environ;

#define REPRO_TAG 0x5265 /* the digest's allreduce */
#define STEPS 2
#define MAX_WORLD 16

/* ---- the digest ---- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n--) {
        h ^= *p++;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The splitmix64 finalizer: every input bit reaches every output bit. */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

/* What one step's allreduce carries: the sum of sample hashes, the per-channel hash range. */
typedef struct fold {
    uint64_t sum, lo, hi;
} fold;

/* Exactly associative and commutative: an integer sum, a minimum and a maximum. */
static void merge_folds(void *inout, const void *in, size_t count)
{
    size_t i;
    for (i = 0; i < count; i++) {
        fold a, b;
        memcpy(&a, (char *)inout + i * sizeof a, sizeof a);
        memcpy(&b, (const char *)in + i * sizeof b, sizeof b);
        a.sum += b.sum;
        a.lo = b.lo < a.lo ? b.lo : a.lo;
        a.hi = b.hi > a.hi ? b.hi : a.hi;
        memcpy((char *)inout + i * sizeof a, &a, sizeof a);
    }
}

sbn_status repro_fold_step(sbn_comm_t *comm, const repro_step *st, uint64_t *digest, int *agree)
{
    int64_t step = st->step, i;
    uint64_t h = fnv(REPRO_DIGEST_INIT, &step, sizeof step);
    fold f = {0, 0, 0};
    sbn_status s;
    int k;
    for (k = 0; k < 2; k++) {
        const sbn_tensor *t = st->act[k];
        size_t es = t ? sbn_dtype_size(t->dtype) : 0;
        int64_t n = t ? t->shape[0] : 0, sample = n > 0 ? sbn_tensor_numel(t) / n : 0;
        for (i = 0; i < n; i++) {
            int64_t key[3] = {step, k, st->first + i};
            const char *bytes = (const char *)t->data + i * t->strides[0] * (int64_t)es;
            f.sum += mix(fnv(fnv(REPRO_DIGEST_INIT, key, sizeof key), bytes, (size_t)sample * es));
        }
    }
    for (k = 0; k < 6; k++)
        if (st->pc[k])
            h = fnv(h, st->pc[k]->data,
                    (size_t)sbn_tensor_numel(st->pc[k]) * sbn_dtype_size(st->pc[k]->dtype));
    f.lo = f.hi = mix(fnv(h, st->counters, sizeof st->counters));
    s = sbn_comm_allreduce_merge(comm, &f, 1, sizeof f, merge_folds, REPRO_TAG);
    if (s != SBN_OK) return s;
    if (f.lo != f.hi) *agree = 0;
    *digest = mix(fnv(fnv(*digest, &f.sum, sizeof f.sum), &f.lo, sizeof f.lo));
    return SBN_OK;
}

/* ---- the cases of verify ---- */

typedef struct vcase {
    int nd;
    int64_t dims[5]; /* global (N, C, ...) */
    sbn_dtype dtype;
    int channels_last, cumulative;
    uint64_t seed;
} vcase;

static const vcase k_cases[] = {
    {4, {7, 3, 5, 5}, SBN_F32, 0, 0, 1},
    {4, {13, 16, 4, 3}, SBN_BF16, 1, 0, 2},
    {4, {5, 1, 40, 60}, SBN_F16, 0, 0, 3}, /* samples span two reduction chunks */
    {4, {2, 64, 1, 1}, SBN_F32, 1, 1, 4},  /* most ranks empty */
    {2, {2500, 2}, SBN_F32, 0, 0, 5},      /* more samples than the layer groups at once */
    {5, {11, 5, 2, 3, 2}, SBN_BF16, 1, 1, 6},
    {3, {19, 4, 7}, SBN_F16, 1, 0, 7},
};
#define N_CASES ((int)(sizeof k_cases / sizeof k_cases[0]))

/* The same global inputs for every world: dtype values in the case's layout. */
typedef struct vinputs {
    const vcase *cs;
    int64_t n, c, sample; /* sample: C * spatial elements */
    void *x[STEPS], *dy[STEPS];
    float *w, *b, *rm0, *rv0;
} vinputs;

static void case_name(const vcase *cs, char *buf, size_t size)
{
    size_t at = 0;
    int d;
    buf[0] = '\0';
    for (d = 0; d < cs->nd && at + 24 < size; d++, at = strlen(buf))
        snprintf(buf + at, size - at, "%s%lld", d ? "x" : "", (long long)cs->dims[d]);
    snprintf(buf + at, size - at, " %s %s %s", sbn_dtype_name(cs->dtype),
             cs->channels_last ? "channels-last" : "channels-first",
             cs->cumulative ? "cumulative" : "momentum");
}

/* (rows, C, ...) of the case over data: contiguous or channels-last. */
static sbn_tensor view_of(void *data, sbn_dtype dtype, const vcase *cs, int64_t rows, int layout)
{
    int64_t shape[5];
    memcpy(shape, cs->dims, sizeof shape);
    shape[0] = rows;
    return layout ? sbn_tensor_channels_last(data, dtype, cs->nd, shape)
                  : sbn_tensor_contiguous(data, dtype, cs->nd, shape);
}

/* A deterministic value in [-1, 1) from a seed and an index. */
static double noise(uint64_t seed, int64_t i)
{
    return (double)(mix(seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xD1B54A32D192ED03ull + 1) >>
                    11) * (2.0 / 9007199254740992.0) - 1.0;
}

static void free_inputs(vinputs *in)
{
    int k;
    for (k = 0; k < STEPS; k++) {
        free(in->x[k]);
        free(in->dy[k]);
    }
    free(in->w), free(in->b), free(in->rm0), free(in->rv0);
}

/* Generates the case's inputs; returns the status of the conversions. */
static sbn_status make_inputs(const vcase *cs, vinputs *in)
{
    int64_t numel, i, s = 1;
    double *v = NULL, *zeros = NULL, *ones = NULL;
    size_t es = sbn_dtype_size(cs->dtype), bytes = 0;
    sbn_status st = SBN_ERR_OUT_OF_MEMORY;
    void *ws = NULL;
    int k, d;
    memset(in, 0, sizeof *in);
    in->cs = cs;
    in->n = cs->dims[0];
    in->c = cs->dims[1];
    for (d = 2; d < cs->nd; d++) s *= cs->dims[d];
    in->sample = in->c * s;
    numel = in->n * in->sample;
    v = malloc((size_t)numel * sizeof *v);
    zeros = calloc((size_t)in->c, sizeof *zeros);
    ones = malloc((size_t)in->c * sizeof *ones);
    in->w = malloc((size_t)in->c * sizeof(float));
    in->b = malloc((size_t)in->c * sizeof(float));
    in->rm0 = malloc((size_t)in->c * sizeof(float));
    in->rv0 = malloc((size_t)in->c * sizeof(float));
    if (!v || !zeros || !ones || !in->w || !in->b || !in->rm0 || !in->rv0) goto done;
    for (i = 0; i < in->c; i++) {
        ones[i] = 1.0;
        in->w[i] = (float)(1.0 + 0.5 * noise(cs->seed, -1 - i));
        in->b[i] = (float)(0.5 * noise(cs->seed, -1001 - i));
        in->rm0[i] = (float)noise(cs->seed, -2001 - i);
        in->rv0[i] = (float)(1.0 + 0.5 * noise(cs->seed, -3001 - i));
    }
    for (k = 0; k < STEPS; k++) {
        sbn_tensor src = view_of(v, SBN_F64, cs, in->n, 0), dst, m, is;
        in->x[k] = malloc((size_t)numel * es + 1);
        in->dy[k] = malloc((size_t)numel * es + 1);
        if (k == 0 && sbn_elemt_workspace_size(&src, &bytes) == SBN_OK) ws = malloc(bytes + 1);
        if (!in->x[k] || !in->dy[k] || !ws) goto done;
        m = sbn_tensor_1d(zeros, SBN_F64, in->c);
        is = sbn_tensor_1d(ones, SBN_F64, in->c);
        /* x: per-channel means and spreads; dy: around a small per-channel offset */
        for (i = 0; i < numel; i++) {
            int64_t ch = (i / s) % in->c;
            v[i] = 0.5 * (double)(ch % 7) - 1.0 + 0.1 * k +
                   (0.25 + 0.125 * (double)(ch % 5)) * noise(cs->seed * 16 + 2 * (uint64_t)k, i);
        }
        dst = view_of(in->x[k], cs->dtype, cs, in->n, cs->channels_last);
        if ((st = sbn_elemt(&src, &m, &is, NULL, NULL, &dst, ws, bytes, NULL)) != SBN_OK) goto done;
        for (i = 0; i < numel; i++)
            v[i] = 0.5 * noise(cs->seed * 16 + 2 * (uint64_t)k + 1, i) +
                   0.01 * (double)((i / s) % in->c);
        dst = view_of(in->dy[k], cs->dtype, cs, in->n, cs->channels_last);
        if ((st = sbn_elemt(&src, &m, &is, NULL, NULL, &dst, ws, bytes, NULL)) != SBN_OK) goto done;
    }
    st = SBN_OK;
done:
    free(v), free(zeros), free(ones), free(ws);
    return st;
}

/* ---- one rank's run and the worlds ---- */

/* A world's split along N and each rank's pool (0: none). */
typedef struct vplan {
    int world;
    int64_t n[MAX_WORLD], off[MAX_WORLD];
    int threads[MAX_WORLD];
} vplan;

/* Two training steps of rows [first, first + rows) over comm, folded into *digest. */
static sbn_status run_rank(const vinputs *in, int64_t first, int64_t rows, int threads,
                           sbn_comm_t *comm, uint64_t *digest, int *agree)
{
    const vcase *cs = in->cs;
    const int64_t C = in->c;
    size_t es = sbn_dtype_size(cs->dtype), act = (size_t)(rows * in->sample) * es, bytes = 0;
    size_t at = (size_t)(first * in->sample) * es;
    float *f = malloc((size_t)C * 4 * sizeof *f);
    double *sv = malloc((size_t)C * 2 * sizeof *sv);
    void *y = malloc(act + 1), *gi = malloc(act + 1), *ws = NULL;
    sbn_tensor w = sbn_tensor_1d(in->w, SBN_F32, C), b = sbn_tensor_1d(in->b, SBN_F32, C);
    sbn_tensor rm, rv, gw, gb, sm, si, yv, gv;
    sbn_tensor x0 = view_of(in->x[0], cs->dtype, cs, rows, cs->channels_last);
    int64_t nbt = 0, count = 0;
    sbn_pool_t *pool = NULL;
    sbn_syncbn_config cfg;
    sbn_status s = SBN_OK;
    int k;

    *digest = REPRO_DIGEST_INIT;
    *agree = 1;
    if (!f || !sv || !y || !gi) s = SBN_ERR_OUT_OF_MEMORY;
    if (s == SBN_OK) s = sbn_syncbn_workspace_size(&x0, &bytes);
    if (s == SBN_OK && (ws = malloc(bytes + 1)) == NULL) s = SBN_ERR_OUT_OF_MEMORY;
    if (s == SBN_OK && threads > 0) s = sbn_pool_create(threads, &pool);
    if (s != SBN_OK) { /* the peers' next collective fails instead of waiting */
        s = sbn_comm_fail(comm, s);
        goto done;
    }
    memcpy(f, in->rm0, (size_t)C * sizeof *f);
    memcpy(f + C, in->rv0, (size_t)C * sizeof *f);
    rm = sbn_tensor_1d(f, SBN_F32, C);
    rv = sbn_tensor_1d(f + C, SBN_F32, C);
    gw = sbn_tensor_1d(f + 2 * C, SBN_F32, C);
    gb = sbn_tensor_1d(f + 3 * C, SBN_F32, C);
    sm = sbn_tensor_1d(sv, SBN_F64, C);
    si = sbn_tensor_1d(sv + C, SBN_F64, C);
    yv = view_of(y, cs->dtype, cs, rows, cs->channels_last);
    gv = view_of(gi, cs->dtype, cs, rows, cs->channels_last);
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = 1;
    cfg.sync_grad_params = 1;
    cfg.cumulative = cs->cumulative;
    for (k = 0; k < STEPS; k++) {
        sbn_tensor x = view_of((char *)in->x[k] + at, cs->dtype, cs, rows, cs->channels_last);
        sbn_tensor dy = view_of((char *)in->dy[k] + at, cs->dtype, cs, rows, cs->channels_last);
        repro_step st = {k, first, {&yv, &gv}, {&sm, &si, &rm, &rv, &gw, &gb}, {0, 0}};
        s = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &x, .weight = &w,
                               .bias = &b, .running_mean = &rm, .running_var = &rv,
                               .num_batches_tracked = &nbt, .y = &yv, .save_mean = &sm,
                               .save_invstd = &si, .global_count = &count}, ws, bytes, pool);
        if (SBN_FAILED(s)) break;
        s = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &dy, .x = &x,
                                .weight = &w, .save_mean = &sm, .save_invstd = &si,
                                .global_count = count, .grad_input = &gv, .grad_weight = &gw,
                                .grad_bias = &gb}, ws, bytes, pool);
        if (SBN_FAILED(s)) break;
        st.counters[0] = count;
        st.counters[1] = nbt;
        if ((s = repro_fold_step(comm, &st, digest, agree)) != SBN_OK) break;
    }
done:
    sbn_pool_destroy(pool);
    free(f), free(sv), free(y), free(gi), free(ws);
    return s;
}

typedef struct vjob {
    const vinputs *in;
    int64_t first, rows;
    int threads;
    sbn_comm_t *comm;
    uint64_t digest;
    int agree;
    sbn_status status;
} vjob;

static void *vjob_main(void *arg)
{
    vjob *j = arg;
    j->status = run_rank(j->in, j->first, j->rows, j->threads, j->comm, &j->digest, &j->agree);
    return NULL;
}

/* Runs the plan on a threads world: rank 0's digest; *agree 0 when the ranks' differ. */
static sbn_status run_threads_world(const vinputs *in, const vplan *pl, uint64_t *digest,
                                    int *agree)
{
    sbn_comm_t *comms[MAX_WORLD];
    pthread_t threads[MAX_WORLD];
    vjob jobs[MAX_WORLD];
    sbn_status s = sbn_comm_threads_create(pl->world, check_comm_timeout(), comms);
    int r;
    if (s != SBN_OK) return s;
    for (r = 0; r < pl->world; r++) {
        jobs[r].in = in;
        jobs[r].first = pl->off[r];
        jobs[r].rows = pl->n[r];
        jobs[r].threads = pl->threads[r];
        jobs[r].comm = comms[r];
        if (pthread_create(&threads[r], NULL, vjob_main, &jobs[r]) != 0) {
            fprintf(stderr, "syncbn: cannot start rank thread %d\n", r);
            exit(1); /* the ranks already started would wait for this one until their timeout */
        }
    }
    for (r = 0; r < pl->world; r++) pthread_join(threads[r], NULL);
    *digest = jobs[0].digest;
    *agree = 1;
    for (r = 0; r < pl->world; r++) {
        if (SBN_FAILED(jobs[r].status) && !SBN_FAILED(s)) s = jobs[r].status;
        if (!jobs[r].agree || jobs[r].digest != jobs[0].digest) *agree = 0;
        sbn_comm_destroy(comms[r]);
    }
    return s;
}

/* A seeded random split (sorted cut points, one rank always empty from W = 2) and pools. */
static void make_plan(uint64_t seed, int64_t ntot, int world, int max_threads, vplan *pl)
{
    int64_t cuts[MAX_WORLD + 1], at = 0, v;
    int empty = world > 1 ? (int)(mix(seed) % (uint64_t)world) : -1, open = world - (empty >= 0);
    int i, j, r;
    memset(pl, 0, sizeof *pl);
    pl->world = world;
    cuts[0] = 0;
    cuts[open] = ntot;
    for (i = 1; i < open; i++) {
        v = (int64_t)(mix(seed + 1000 * (uint64_t)i) % (uint64_t)(ntot + 1));
        for (j = i; j > 1 && cuts[j - 1] > v; j--) cuts[j] = cuts[j - 1];
        cuts[j] = v;
    }
    for (r = 0, i = 0; r < world; r++) {
        pl->off[r] = at;
        pl->n[r] = r == empty ? 0 : cuts[i + 1] - cuts[i];
        i += r != empty;
        at += pl->n[r];
        pl->threads[r] = (int)(mix(seed + 7 + 31 * (uint64_t)r) % (uint64_t)(max_threads + 1));
    }
}

static void plan_text(const vplan *pl, char *buf, size_t size)
{
    size_t at;
    int r;
    snprintf(buf, size, "W = %d split", pl->world);
    for (r = 0; r < pl->world && (at = strlen(buf)) + 24 < size; r++)
        snprintf(buf + at, size - at, "%s%lld", r ? "," : " ", (long long)pl->n[r]);
    for (r = 0; r < pl->world && (at = strlen(buf)) + 16 < size; r++)
        snprintf(buf + at, size - at, "%s%d", r ? "," : " threads ", pl->threads[r]);
}

/* The W = 1 digest of a case (one rank, no pool). */
static sbn_status digest_w1(const vinputs *in, uint64_t *digest)
{
    vplan pl;
    int agree;
    memset(&pl, 0, sizeof pl);
    pl.world = 1;
    pl.n[0] = in->n;
    return run_threads_world(in, &pl, digest, &agree);
}

/* ---- verify on the threads backend ---- */

/* The kernel variant this process uses ("scalar", "avx2", "avx512", "avx512bf16"). */
static const char *kernels_name(void)
{
    sbn_info in;
    in.size = sizeof in;
    return sbn_info_get(&in) == SBN_OK ? in.kernels : "?";
}

/* The hidden child: this process's kernels, then per case the W = 1 and W = 3 digests. */
static int print_digests(void)
{
    int i;
    printf("isa %s\n", kernels_name());
    for (i = 0; i < N_CASES; i++) {
        vinputs in;
        vplan pl;
        uint64_t d1 = 0, d3 = 0;
        int agree = 0;
        sbn_status s = make_inputs(&k_cases[i], &in);
        make_plan(k_cases[i].seed * 977, in.n, 3, 4, &pl);
        if (s == SBN_OK) s = digest_w1(&in, &d1);
        if (s == SBN_OK) s = run_threads_world(&in, &pl, &d3, &agree);
        if (s == SBN_OK && agree)
            printf("case %d %016llx %016llx\n", i, (unsigned long long)d1, (unsigned long long)d3);
        else
            printf("case %d failed %s\n", i, sbn_status_name(s));
        free_inputs(&in);
    }
    return 0;
}

/* Re-executes this program with SBN_FORCE_SCALAR=1 --print-digests; its output into buf. */
static int run_scalar_child(char *buf, size_t size)
{
    static char a0[] = "syncbn", a1[] = "verify", a2[] = "--reproducible",
                a3[] = "--print-digests", force[] = "SBN_FORCE_SCALAR=1";
    char *argv[] = {a0, a1, a2, a3, NULL}, **env;
    posix_spawn_file_actions_t actions;
    size_t n = 0, got = 0;
    int fds[2], status = 0, rc;
    pid_t pid;
    ssize_t r;
    while (environ[n]) n++;
    env = calloc(n + 2, sizeof *env);
    if (env == NULL || pipe(fds) != 0) {
        free(env);
        return -1;
    }
    for (n = 0; environ[n]; n++) env[n] = environ[n];
    for (n = 0; env[n]; n++)
        if (strncmp(env[n], "SBN_FORCE_SCALAR=", 17) == 0) break;
    env[n] = force; /* replaces the variable, or adds it before the terminating NULL */
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    fflush(stdout);
    rc = posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, env);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    while (rc == 0 && got + 1 < size && (r = read(fds[0], buf + got, size - got - 1)) != 0) {
        if (r > 0) got += (size_t)r;
    }
    buf[got] = '\0';
    close(fds[0]);
    free(env);
    if (rc != 0) return -1;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int verify_threads(void)
{
    static char child[16384];
    uint64_t d1[N_CASES];
    int ok[N_CASES], passed = 0, i, w, rc;
    char note[N_CASES][400], name[96], isa[32] = "";
    const char *line;

    for (i = 0; i < N_CASES; i++) {
        vinputs in;
        sbn_status s = make_inputs(&k_cases[i], &in);
        ok[i] = 1;
        note[i][0] = '\0';
        if (s == SBN_OK) s = digest_w1(&in, &d1[i]);
        if (s != SBN_OK) {
            snprintf(note[i], sizeof note[i], "W = 1 failed: %s: %s", sbn_status_name(s),
                     sbn_last_error());
            ok[i] = 0;
        }
        for (w = 1; w <= MAX_WORLD && ok[i]; w++) {
            vplan pl;
            uint64_t d = 0;
            int agree = 0;
            char text[200];
            make_plan(k_cases[i].seed * 1000 + (uint64_t)w, in.n, w, 4, &pl);
            s = run_threads_world(&in, &pl, &d, &agree);
            if (s == SBN_OK && agree && d == d1[i]) continue;
            plan_text(&pl, text, sizeof text);
            snprintf(note[i], sizeof note[i], "%s: %s", text,
                     s != SBN_OK ? sbn_status_name(s)
                                 : !agree ? "the ranks' per-channel outputs differ"
                                          : "digest differs from W = 1's");
            ok[i] = 0;
        }
        free_inputs(&in);
    }
    /* the forced-scalar kernels in a fresh process (the variable is read once per process) */
    rc = run_scalar_child(child, sizeof child);
    if (rc == 0 && (line = strstr(child, "isa ")) != NULL) sscanf(line, "isa %31s", isa);
    for (i = 0; i < N_CASES; i++) {
        char key[32];
        unsigned long long a = 0, b = 0;
        snprintf(key, sizeof key, "case %d ", i);
        line = strstr(child, key);
        if (!ok[i]) continue;
        if (rc != 0 || strcmp(isa, "scalar") != 0 || line == NULL ||
            sscanf(line + strlen(key), "%llx %llx", &a, &b) != 2) {
            snprintf(note[i], sizeof note[i], "the SBN_FORCE_SCALAR=1 re-execution failed "
                     "(exit %d, kernels '%s'): %.120s", rc, isa, line ? line : child);
            ok[i] = 0;
        } else if (a != d1[i] || b != d1[i]) {
            snprintf(note[i], sizeof note[i], "SBN_FORCE_SCALAR=1: W = 1 digest %016llx, W = 3 "
                     "%016llx; this process (%s): %016llx", a, b, kernels_name(),
                     (unsigned long long)d1[i]);
            ok[i] = 0;
        }
    }
    for (i = 0; i < N_CASES; i++) {
        case_name(&k_cases[i], name, sizeof name);
        if (ok[i])
            printf("ok    %-40s digest %016llx: W = 1..%d (random splits, empty ranks, 0..%d "
                   "threads a rank) and %s vs scalar kernels equal\n",
                   name, (unsigned long long)d1[i], MAX_WORLD, 4, kernels_name());
        else
            printf("FAIL  %-40s %s\n", name, note[i]);
        passed += ok[i];
    }
    printf("verify --reproducible: %d passed, %d failed\n", passed, N_CASES - passed);
    return passed == N_CASES ? 0 : 1;
}

/* ---- verify under MPI ---- */

#ifdef SBN_HAVE_MPI
static int verify_mpi(void)
{
    int rank = 0, size = 1, passed = 0, i;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 0; i < N_CASES; i++) {
        vinputs in;
        uint64_t d1 = 0, dw = 0;
        int agree = 0, good, all = 0, threads = rank % 5;
        int64_t first = 0, rows = 0;
        sbn_comm_t *comm = NULL;
        char name[96];
        sbn_status s = make_inputs(&k_cases[i], &in), sw;
        if (s == SBN_OK) s = digest_w1(&in, &d1);
        /* this world's uneven split (check_split: shares 1, 2, 3, ...), rank 1 empty from 3 on */
        check_split(in.n, size, rank, size > 2 ? 1 : -1, &first, &rows);
        sw = sbn_comm_mpi_create(MPI_COMM_WORLD, &comm);
        if (sw == SBN_OK) /* a process without inputs still takes part: its peers fail too */
            sw = s == SBN_OK ? run_rank(&in, first, rows, threads, comm, &dw, &agree)
                             : sbn_comm_fail(comm, s);
        sbn_comm_destroy(comm);
        good = s == SBN_OK && sw == SBN_OK && agree && dw == d1;
        /* every rank's verdict through the command's timed communicator, never a raw
         * collective that a rank on another path would leave waiting */
        all = agree_count(!good, sw != SBN_OK ? sw : s) == 0;
        case_name(&k_cases[i], name, sizeof name);
        if (rank == 0 && all)
            printf("ok    %-40s digest %016llx: %d MPI processes equal W = 1\n", name,
                   (unsigned long long)d1, size);
        else if (rank == 0 || !good)
            printf("FAIL  %-40s rank %d rows [%lld, %lld): %s, digest %016llx; W = 1 %016llx\n",
                   name, rank, (long long)first, (long long)(first + rows),
                   sw != SBN_OK ? sbn_status_name(sw) : s != SBN_OK ? sbn_status_name(s)
                                                      : !agree ? "ranks disagree" : "differs",
                   (unsigned long long)dw, (unsigned long long)d1);
        passed += all;
        free_inputs(&in);
    }
    if (rank == 0)
        printf("verify --reproducible (mpi backend, %d processes): %d passed, %d failed\n", size,
               passed, N_CASES - passed);
    return passed == N_CASES ? 0 : 1;
}
#endif

int repro_verify(const char *backend, int digests_only)
{
    if (digests_only) return print_digests();
#ifdef SBN_HAVE_MPI
    if (strcmp(backend, "mpi") == 0) return verify_mpi();
#endif
    (void)backend;
    return verify_threads();
}

/* ---- demo --reproducible ---- */

static void demo_hook(void *user, sbn_comm_t *comm, const check_outputs *out)
{
    repro_demo *demo = user;
    int slot = demo->slots == 1 ? 0 : sbn_comm_rank(comm), k;
    repro_step st;
    sbn_status s;
    memset(&st, 0, sizeof st);
    st.step = out->step;
    st.first = out->first;
    st.act[0] = &out->y;
    st.act[1] = &out->grad_input;
    for (k = 0; k < 4; k++) st.pc[k] = &out->stats[k];
    st.counters[1] = out->num_batches_tracked;
    s = repro_fold_step(comm, &st, &demo->digest[slot], &demo->agree[slot]);
    if (s != SBN_OK && demo->status[slot] == SBN_OK) demo->status[slot] = s;
}

int repro_demo_start(repro_demo *demo, int slots, check_config *cfg)
{
    int i;
    demo->slots = slots;
    demo->digest = calloc((size_t)slots, sizeof *demo->digest);
    demo->agree = calloc((size_t)slots, sizeof *demo->agree);
    demo->status = calloc((size_t)slots, sizeof *demo->status);
    if (!demo->digest || !demo->agree || !demo->status) return 0;
    for (i = 0; i < slots; i++) {
        demo->digest[i] = REPRO_DIGEST_INIT;
        demo->agree[i] = 1;
        demo->status[i] = SBN_OK;
    }
    cfg->reproducible = 1;
    cfg->hook = demo_hook;
    cfg->hook_user = demo;
    return 1;
}

void repro_demo_free(repro_demo *demo)
{
    free(demo->digest), free(demo->agree), free(demo->status);
}

int repro_demo_finish(repro_demo *demo, const check_config *cfg, int mpi, int printer)
{
    check_config one = *cfg;
    repro_demo single;
    check_result r;
    uint64_t d1 = 0;
    int equal = 0, agree = 1, rank0 = 1, i;
    for (i = 0; i < demo->slots; i++)
        if (!demo->agree[i] || demo->digest[i] != demo->digest[0] || demo->status[i] != SBN_OK)
            agree = 0;
#ifdef SBN_HAVE_MPI
    if (mpi) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        rank0 = rank == 0;
    }
#endif
    memset(&r, 0, sizeof r);
    one.verbose = one.progress = 0;
    one.empty_rank = -1;
    if (rank0 && repro_demo_start(&single, 1, &one)) { /* the same batch on one rank */
        sbn_comm_t *comm = NULL;
        if (sbn_comm_threads_create(1, check_comm_timeout(), &comm) == SBN_OK) {
            check_run(&one, comm, &r);
            sbn_comm_destroy(comm);
            d1 = single.digest[0];
            equal = check_passed(&r) && single.status[0] == SBN_OK && single.agree[0] && agree &&
                    d1 == demo->digest[0];
        }
    }
    if (rank0) repro_demo_free(&single);
    if (mpi) { /* rank 0's verdict, through the command's timed communicator (a sum) */
        double verdict = rank0 ? equal : 0;
        agree_sum(&verdict, 1);
        equal = verdict != 0;
    }
    if (printer) {
        printf("demo --reproducible: digest %016llx of every step's y, grad_input, save_mean, "
               "save_invstd and running stats%s\n", (unsigned long long)demo->digest[0],
               agree ? "" : " (the ranks' per-channel outputs DIFFER)");
        printf("demo --reproducible: W = 1 digest %016llx: %s\n", (unsigned long long)d1,
               equal ? "equal, the same bits as one rank" : "DIFFERENT from one rank");
    }
    repro_demo_free(demo);
    return equal ? 0 : 1;
}
