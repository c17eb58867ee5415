/*
 * bench_ops.c - side-by-side CPU batch-norm benchmark, one process:
 *   for each shape x dtype (f32, bf16, f16) x layout (cf, cl) x threads (--threads, any list: 1,2,4,16) x mode
 *   (fwd-train, bwd, eval) it times, on the same buffers and interleaved in blocks,
 *     syncbn  this project's sbn_batch_norm / sbn_batch_norm_backward, pool of T threads
 *     ref     the plain reference kernels of bench_ref.c (T pthreads)
 *     onednn  oneDNN 2.6 batch normalization (OpenMP, T threads), when found at build time
 *   and prints one CSV row per (implementation, case); bench/run_bench.py merges them.
 * Also the SyncBN layer (forward + backward) over W in-process ranks (--syncbn) or
 * under mpirun (--syncbn-mpi): see bench_syncbn.c.
 *
 * Row format (shared with bench/peers/torch_bn.py), lines starting with '#' are notes:
 *   impl,shape,dtype,threads,layout,mode,min_ms,med_ms,reps,floor_bytes,gbps,status,note
 * Byte floors (E = numel * element size): fwd-train 3E, bwd 5E, eval 2E; gbps = floor/median.
 * Buffers are allocated (THP-advised) and touched before any timing; nothing is
 * allocated inside a timed loop; each implementation is warmed up first.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "syncbn/ops.h"

#define MAX_SHAPES 64
#define MAX_SAMPLES 20000

static const char *const mode_names[] = {"fwd-train", "bwd", "eval"};
static const int floor_factor[] = {3, 5, 2};

/* ---------- shared helpers ---------- */

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_min(const double *v, int n)
{
    double m = INFINITY;
    int i;
    for (i = 0; i < n; i++)
        if (v[i] < m) m = v[i];
    return n > 0 ? m : NAN;
}

void bench_row(const char *impl, const char *shape, const char *dtype, const char *threads,
               const char *layout, const char *mode, double min_s, double med_s, int reps,
               double floor_bytes, const char *status, const char *note)
{
    char buf[512];
    size_t i;
    /* the note is free text: keep it CSV-safe */
    snprintf(buf, sizeof buf, "%s", note ? note : "");
    for (i = 0; buf[i]; i++)
        if (buf[i] == ',' || buf[i] == '\n') buf[i] = ';';
    if (reps > 0)
        printf("%s,%s,%s,%s,%s,%s,%.4f,%.4f,%d,%.0f,%.2f,%s,%s\n", impl, shape, dtype, threads,
               layout, mode, 1e3 * min_s, 1e3 * med_s, reps, floor_bytes,
               floor_bytes / med_s / 1e9, status, buf);
    else
        printf("%s,%s,%s,%s,%s,%s,,,0,%.0f,,%s,%s\n", impl, shape, dtype, threads, layout, mode,
               floor_bytes, status, buf);
    fflush(stdout);
}

void *bench_alloc(size_t bytes)
{
    void *p = NULL;
    size_t align = (size_t)2 << 20;
    if (bytes == 0) bytes = 64;
    bytes = (bytes + align - 1) / align * align;
    if (posix_memalign(&p, align, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    memset(p, 0, bytes); /* fault every page in now, not in a timed loop */
    return p;
}

void bench_free(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

/* ---------- oneDNN stub when it was not found at build time ---------- */
#ifndef SBN_BENCH_HAVE_DNNL
int bench_dnnl_available(char *buf, size_t len)
{
    snprintf(buf, len, "oneDNN not found at build time (libdnnl-dev)");
    return 0;
}
dnnl_case *dnnl_case_create(const bench_problem *p, bench_mode mode, char *why, size_t why_len)
{
    (void)p;
    (void)mode;
    snprintf(why, why_len, "oneDNN not built in");
    return NULL;
}
int dnnl_case_run(dnnl_case *k)
{
    (void)k;
    return -1;
}
const char *dnnl_case_impl(const dnnl_case *k)
{
    (void)k;
    return "";
}
void dnnl_case_destroy(dnnl_case *k)
{
    (void)k;
}
#endif

/* ---------- shapes ---------- */

typedef struct shape {
    int rank;
    int64_t d[4];
    char text[64];
} shape;

static int parse_shape(const char *s, shape *out)
{
    char *end;
    int r = 0;
    memset(out, 0, sizeof *out);
    while (*s && r < 4) {
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) return -1;
        out->d[r++] = v;
        s = end;
        if (*s == 'x' || *s == 'X') s++;
        else break;
    }
    if (*s != '\0' || (r != 2 && r != 4)) return -1;
    out->rank = r;
    if (r == 2) {
        out->d[2] = out->d[3] = 1;
        snprintf(out->text, sizeof out->text, "%lldx%lld", (long long)out->d[0], (long long)out->d[1]);
    } else {
        snprintf(out->text, sizeof out->text, "%lldx%lldx%lldx%lld", (long long)out->d[0],
                 (long long)out->d[1], (long long)out->d[2], (long long)out->d[3]);
    }
    return 0;
}

/* Shape files: one shape per line ("32x64x56x56 [count] [# comment]"); '#' lines skipped. */
static int read_shapes(const char *path, shape *list, int *count)
{
    FILE *f = fopen(path, "r");
    char line[256], tok[128];
    if (f == NULL) {
        fprintf(stderr, "bench_ops: cannot open %s\n", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%127s", tok) != 1 || tok[0] == '#') continue;
        if (*count >= MAX_SHAPES || parse_shape(tok, &list[*count]) != 0) {
            fprintf(stderr, "bench_ops: %s: bad or too many shapes at '%s'\n", path, tok);
            fclose(f);
            return -1;
        }
        (*count)++;
    }
    fclose(f);
    return 0;
}

/* ---------- timing: implementations interleaved in blocks ---------- */

typedef int (*run_fn)(void *ctx);

typedef struct timed {
    const char *impl;
    run_fn fn;
    void *ctx;
    int active, done, failed;
    double *samples;
    int n;
    double busy, est;
} timed;

static int run_timed(timed *t, int reps)
{
    int i;
    for (i = 0; i < reps && t->n < MAX_SAMPLES; i++) {
        double t0 = bench_now(), t1;
        if (t->fn(t->ctx) != 0) return -1;
        t1 = bench_now();
        t->samples[t->n++] = t1 - t0;
        t->busy += t1 - t0;
    }
    return 0;
}

static void measure(timed *list, int count, const bench_opts *o)
{
    int i, left = 0, last = -1;
    /* warm-up: at least 2 runs and 30 ms (at most 0.5 s); its mean sets the block size */
    for (i = 0; i < count; i++) {
        timed *t = &list[i];
        double t0 = bench_now(), el = 0.0;
        int reps = 0;
        t->n = 0;
        t->busy = 0.0;
        t->done = !t->active;
        if (!t->active) continue;
        do {
            if (t->fn(t->ctx) != 0) {
                t->failed = 1;
                break;
            }
            reps++;
            el = bench_now() - t0;
        } while ((reps < 2 || el < 0.03) && el < 0.5);
        if (t->failed) {
            t->done = 1;
            continue;
        }
        t->est = el / reps;
        left++;
        usleep(2000);
    }
    while (left > 0) {
        for (i = 0; i < count; i++) {
            timed *t = &list[i];
            int block;
            if (t->done) continue;
            /* about a quarter of min_time per block, so that every implementation
             * sees the same slow and fast phases of the machine */
            block = (int)(0.25 * o->min_time / t->est);
            if (block < 1) block = 1;
            if (block > MAX_SAMPLES / 8) block = MAX_SAMPLES / 8;
            if (last != i && last >= 0) usleep(2000); /* let idle OpenMP/pool threads settle */
            last = i;
            if (run_timed(t, block) != 0) {
                t->failed = 1;
                t->done = 1;
                left--;
                continue;
            }
            if ((t->n >= o->min_reps && t->busy >= o->min_time) ||
                (t->busy >= o->max_time && t->n >= 5) || t->n >= MAX_SAMPLES) {
                t->done = 1;
                left--;
            }
        }
    }
}

/* ---------- this project's calls ---------- */

typedef struct ours_ctx {
    bench_problem *p;
    bench_mode mode;
    sbn_pool_t *pool;
    void *ws;
    size_t ws_bytes;
    sbn_tensor x, y, dy, dx, w, b, rm, rv, sm, si, gw, gb;
    int pool_stats;          /* --pool-stats: tally the pool's counts of every call */
    bench_pool_tally tally;
} ours_ctx;

static sbn_tensor act_view(const bench_problem *p, void *data)
{
    int64_t shp[4] = {p->n, p->c, p->h, p->w};
    return p->channels_last ? sbn_tensor_channels_last(data, p->dtype, p->rank, shp)
                            : sbn_tensor_contiguous(data, p->dtype, p->rank, shp);
}

static sbn_status ours_call(ours_ctx *k)
{
    switch (k->mode) {
    case BENCH_FWD:
        return sbn_batch_norm(&k->x, &k->w, &k->b, 1, 0.1, k->p->eps, &k->rm, &k->rv, &k->y,
                              &k->sm, &k->si, k->ws, k->ws_bytes, k->pool);
    case BENCH_BWD:
        return sbn_batch_norm_backward(&k->dy, &k->x, &k->w, NULL, NULL, &k->sm, &k->si, 1,
                                       k->p->eps, &k->dx, &k->gw, &k->gb, k->ws, k->ws_bytes,
                                       k->pool);
    case BENCH_EVAL:
        return sbn_batch_norm(&k->x, &k->w, &k->b, 0, 0.1, k->p->eps, &k->rm, &k->rv, &k->y,
                              NULL, NULL, k->ws, k->ws_bytes, k->pool);
    }
    return SBN_ERR_INTERNAL;
}

static int ours_run(void *ctx)
{
    ours_ctx *k = ctx;
    sbn_status st;
    if (!k->pool_stats) return SBN_FAILED(ours_call(k)) ? -1 : 0;
    bench_pool_stats_before(k->pool);
    st = ours_call(k);
    bench_pool_stats_after(k->pool, &k->tally);
    return SBN_FAILED(st) ? -1 : 0;
}

typedef struct ref_ctx {
    ref_team *team;
    bench_problem *p;
    bench_mode mode;
} ref_ctx;

static int ref_call(void *ctx)
{
    ref_ctx *k = ctx;
    ref_run(k->team, k->p, k->mode);
    return 0;
}

static int dnnl_call(void *ctx)
{
    return dnnl_case_run(ctx);
}

/* ---------- data ---------- */

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Deterministic values in [-1, 1). */
static float noise(uint64_t i, uint64_t seed)
{
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 29;
    return (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

static void fill(void *buf, sbn_dtype dt, int64_t n, float offset, float scale, uint64_t seed)
{
    int64_t i;
    for (i = 0; i < n; i++) {
        float v = offset + scale * noise((uint64_t)i, seed);
        if (dt == SBN_BF16) ((uint16_t *)buf)[i] = to_bf16(v);
        else if (dt == SBN_F16) ((uint16_t *)buf)[i] = sbn_float_to_f16(v);
        else ((float *)buf)[i] = v;
    }
}

/* ---------- options ---------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_ops [--shapes FILE]... [--shape NxCxHxW|NxC]... [--dtypes f32,bf16,f16]\n"
            "                 [--threads 1,2,4,16] [--layouts cf,cl] [--modes fwd-train,bwd,eval]\n"
            "                 [--min-reps 20] [--min-time 0.3] [--max-time 1.0] [--no-onednn] [--no-aclnn]\n"
            "                 [--pool-stats]   (syncbn rows: what the pool's loops cost a call)\n"
            "                 [--syncbn] [--syncbn-only] [--syncbn-shape 32x64x56x56] [--world 2]\n"
            "       mpirun -np W bench_ops --syncbn-mpi [--syncbn-shape ...]\n"
            "       bench_ops --traffic   (bytes per rank per layer step, W = 2 .. 256)\n");
}

static int has_item(const char *list, const char *item)
{
    size_t n = strlen(item);
    const char *s = list;
    while ((s = strstr(s, item)) != NULL) {
        if ((s == list || s[-1] == ',') && (s[n] == '\0' || s[n] == ',')) return 1;
        s += n;
    }
    return 0;
}

/* 0 when every comma-separated item of `list` (option `opt`) is one of `known` (a
 * comma-separated list too); else -1 with a message naming the item, so a typo or a dtype
 * the benchmark does not run is an error, not a run with rows missing. */
static int check_items(const char *opt, const char *list, const char *known)
{
    const char *s = list;
    if (*list == '\0') {
        fprintf(stderr, "bench_ops: %s is empty (one or more of %s)\n", opt, known);
        return -1;
    }
    while (*s) {
        size_t n = strcspn(s, ",");
        char item[32];
        if (n == 0 || n >= sizeof item) {
            fprintf(stderr, "bench_ops: bad %s '%s' (one or more of %s)\n", opt, list, known);
            return -1;
        }
        memcpy(item, s, n);
        item[n] = '\0';
        if (!has_item(known, item)) {
            fprintf(stderr, "bench_ops: %s: unknown '%s' in '%s' (one or more of %s)\n", opt,
                    item, list, known);
            return -1;
        }
        s += n;
        if (*s == ',') {
            s++;
            if (*s == '\0') {
                fprintf(stderr, "bench_ops: bad %s '%s' (ends in a comma)\n", opt, list);
                return -1;
            }
        }
    }
    return 0;
}

/* ---------- the matrix ---------- */

typedef struct run_cfg {
    const char *dtypes, *threads, *layouts, *modes;
    int no_onednn;
    int no_aclnn; /* --no-aclnn: skip the aclnn rows (a shorter scaling run) */
    int pool_stats; /* --pool-stats: the syncbn rows' notes say what their loops cost */
} run_cfg;

static void run_case(bench_problem *p, bench_mode mode, const shape *s, sbn_pool_t *pool,
                     ref_team *team, const run_cfg *rc, const bench_opts *o, void **ws,
                     size_t *ws_bytes)
{
    ours_ctx ok;
    ref_ctx rk;
    timed list[6];
    dnnl_case *dk = NULL;
    aclnn_case *ak[3] = {NULL, NULL, NULL}; /* list[3..5]: bench_aclnn.c kinds 0..2 */
    char why[160] = "", awhy[3][160], thr[16], note[256];
    const char *dt = sbn_dtype_name(p->dtype), *lay = p->channels_last ? "cl" : "cf";
    double floor_bytes = (double)floor_factor[mode] * (double)bench_numel(p) *
                         (double)sbn_dtype_size(p->dtype);
    size_t need = 0, more = 0;
    sbn_status st;
    int i;

    snprintf(thr, sizeof thr, "%d", p->threads);
    memset(&ok, 0, sizeof ok);
    ok.p = p;
    ok.mode = mode;
    ok.pool = pool;
    ok.pool_stats = rc->pool_stats;
    ok.x = act_view(p, p->x);
    ok.y = act_view(p, p->y);
    ok.dy = act_view(p, p->dy);
    ok.dx = act_view(p, p->dx);
    ok.w = sbn_tensor_1d(p->weight, SBN_F32, p->c);
    ok.b = sbn_tensor_1d(p->bias, SBN_F32, p->c);
    ok.rm = sbn_tensor_1d(p->run_mean, SBN_F32, p->c);
    ok.rv = sbn_tensor_1d(p->run_var, SBN_F32, p->c);
    ok.sm = sbn_tensor_1d(p->save_mean, SBN_F32, p->c);
    ok.si = sbn_tensor_1d(p->save_invstd, SBN_F32, p->c);
    ok.gw = sbn_tensor_1d(p->grad_weight, SBN_F32, p->c);
    ok.gb = sbn_tensor_1d(p->grad_bias, SBN_F32, p->c);
    /* workspace: grown (and touched) outside any timing */
    sbn_batch_norm_workspace_size(&ok.x, &need);
    sbn_batch_norm_backward_workspace_size(&ok.x, &more);
    if (more > need) need = more;
    if (need > *ws_bytes) {
        bench_free(*ws, *ws_bytes);
        *ws = bench_alloc(need);
        *ws_bytes = *ws ? need : 0;
    }
    ok.ws = *ws;
    ok.ws_bytes = *ws_bytes;

    /* batch statistics for the backward cases (and a first check that the call works) */
    if (mode == BENCH_BWD) {
        ours_ctx f = ok;
        f.mode = BENCH_FWD;
        st = ours_call(&f);
        if (SBN_FAILED(st))
            fprintf(stderr, "bench_ops: forward for bwd setup failed: %s\n", sbn_last_error());
        for (i = 0; i < p->c; i++)
            p->batch_var[i] = 1.0f / (p->save_invstd[i] * p->save_invstd[i]) - (float)p->eps;
    }
    st = ours_call(&ok);

    rk.team = team;
    rk.p = p;
    rk.mode = mode;
    if (!rc->no_onednn) dk = dnnl_case_create(p, mode, why, sizeof why);

    memset(list, 0, sizeof list);
    list[0].impl = "syncbn";
    list[0].fn = ours_run;
    list[0].ctx = &ok;
    list[0].active = !SBN_FAILED(st);
    list[1].impl = "ref";
    list[1].fn = ref_call;
    list[1].ctx = &rk;
    list[1].active = 1;
    list[2].impl = "onednn";
    list[2].fn = dnnl_call;
    list[2].ctx = dk;
    list[2].active = dk != NULL;
    for (i = 0; i < 3; i++) {
        static const char *const names[3] = {"aclnn", "aclnn-syncfwd", "native-syncfwd"};
        awhy[i][0] = '\0';
        ak[i] = rc->no_aclnn ? NULL : aclnn_case_create(p, mode, i, pool, awhy[i], sizeof awhy[i]);
        list[3 + i].impl = names[i];
        list[3 + i].fn = aclnn_case_run;
        list[3 + i].ctx = ak[i];
        list[3 + i].active = ak[i] != NULL;
    }
    for (i = 0; i < 6; i++) list[i].samples = malloc(MAX_SAMPLES * sizeof(double));
    measure(list, 6, o);

    for (i = 0; i < 6; i++) {
        timed *t = &list[i];
        const char *status = "ok";
        note[0] = '\0';
        if (i == 0 && SBN_FAILED(st)) {
            status = "error";
            snprintf(note, sizeof note, "%s: %s", sbn_status_name(st), sbn_last_error());
        } else if (i == 2 && dk == NULL) {
            char ver[128];
            status = bench_dnnl_available(ver, sizeof ver) && !rc->no_onednn ? "unsupported"
                                                                              : "missing";
            snprintf(note, sizeof note, "%s", rc->no_onednn ? "--no-onednn" : why);
        } else if (i >= 3 && ak[i - 3] == NULL) {
            if (rc->no_aclnn) {
                free(t->samples);
                continue;
            }
            if (mode != BENCH_FWD && i > 3) { /* the SyncBN forward rows are fwd-train only */
                free(t->samples);
                continue;
            }
            status = "unsupported";
            snprintf(note, sizeof note, "%s", awhy[i - 3]);
        } else if (t->failed) {
            status = "error";
            snprintf(note, sizeof note, "run failed");
        } else if (i == 2) {
            snprintf(note, sizeof note, "%s%s", dnnl_case_impl(dk),
                     p->rank == 2 ? " (2-D given as N x C x 1 x 1 nhwc)" : "");
        } else if (i == 0 && rc->pool_stats) {
            bench_pool_stats_note(&ok.tally, note, sizeof note);
        } else if (i == 0 || i >= 3) {
            snprintf(note, sizeof note, "pool %d", p->threads);
        } else {
            snprintf(note, sizeof note, "%d pthreads", p->threads);
        }
        if (t->n > 0 && strcmp(status, "ok") == 0) {
            double mn = bench_min(t->samples, t->n), md = bench_median(t->samples, t->n);
            bench_row(t->impl, s->text, dt, thr, lay, mode_names[mode], mn, md, t->n,
                      floor_bytes, status, note);
        } else {
            bench_row(t->impl, s->text, dt, thr, lay, mode_names[mode], 0, 0, 0, floor_bytes,
                      status, note);
        }
        free(t->samples);
    }
    dnnl_case_destroy(dk);
    for (i = 0; i < 3; i++) aclnn_case_destroy(ak[i]);
}

#define MAX_THREAD_COUNTS 16

/* The thread counts of a list like "1,2,4,16": each 1..1024, at most MAX_THREAD_COUNTS, in the
 * order given; -1 (with a message) on anything else. */
static int parse_thread_list(const char *list, int *counts)
{
    int n = 0;
    const char *s = list;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1024 || (*end != ',' && *end != '\0') ||
            n >= MAX_THREAD_COUNTS) {
            fprintf(stderr, "bench_ops: bad --threads '%s' (a list of 1..1024, at most %d)\n",
                    list, MAX_THREAD_COUNTS);
            return -1;
        }
        counts[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    if (n == 0) fprintf(stderr, "bench_ops: --threads is empty\n");
    return n > 0 ? n : -1;
}

static int run_matrix(const shape *shapes, int nshapes, const run_cfg *rc, const bench_opts *o)
{
    static const sbn_dtype dtypes[] = {SBN_F32, SBN_BF16, SBN_F16};
    sbn_pool_t *pools[MAX_THREAD_COUNTS] = {NULL};
    ref_team *teams[MAX_THREAD_COUNTS] = {NULL};
    int counts[MAX_THREAD_COUNTS], ncounts;
    int64_t max_c = 1;
    void *ws = NULL;
    size_t ws_bytes = 0;
    int si, di, li, ti, mi;

    if ((ncounts = parse_thread_list(rc->threads, counts)) < 0) return 2;
    for (si = 0; si < nshapes; si++)
        if (shapes[si].d[1] > max_c) max_c = shapes[si].d[1];
    for (ti = 0; ti < ncounts; ti++) {
        if (sbn_pool_create(counts[ti], &pools[ti]) != SBN_OK ||
            !(teams[ti] = ref_team_create(counts[ti], max_c))) {
            fprintf(stderr, "bench_ops: cannot create %d threads\n", counts[ti]);
            return 1;
        }
    }
    for (si = 0; si < nshapes; si++) {
        const shape *s = &shapes[si];
        bench_problem p;
        size_t act_bytes;
        memset(&p, 0, sizeof p);
        p.rank = s->rank;
        p.n = s->d[0];
        p.c = s->d[1];
        p.h = s->d[2];
        p.w = s->d[3];
        p.eps = 1e-5;
        act_bytes = (size_t)bench_numel(&p) * 4;
        p.x = bench_alloc(act_bytes);
        p.y = bench_alloc(act_bytes);
        p.dy = bench_alloc(act_bytes);
        p.dx = bench_alloc(act_bytes);
        {
            float *vec = bench_alloc((size_t)p.c * 10 * sizeof(float));
            if (!p.x || !p.y || !p.dy || !p.dx || !vec) {
                fprintf(stderr, "bench_ops: out of memory for %s\n", s->text);
                return 1;
            }
            p.weight = vec;
            p.bias = vec + p.c;
            p.run_mean = vec + 2 * p.c;
            p.run_var = vec + 3 * p.c;
            p.save_mean = vec + 4 * p.c;
            p.save_invstd = vec + 5 * p.c;
            p.batch_var = vec + 6 * p.c;
            p.grad_weight = vec + 7 * p.c;
            p.grad_bias = vec + 8 * p.c;
            for (mi = 0; mi < p.c; mi++) {
                p.weight[mi] = 1.0f + 0.25f * (float)(mi % 3);
                p.bias[mi] = 0.125f * (float)(mi % 4) - 0.25f;
                p.run_mean[mi] = 0.5f;
                p.run_var[mi] = 1.0f;
                p.save_invstd[mi] = 1.0f;
                p.batch_var[mi] = 1.0f;
            }
        }
        for (di = 0; di < (int)(sizeof dtypes / sizeof dtypes[0]); di++) {
            p.dtype = dtypes[di];
            if (!has_item(rc->dtypes, sbn_dtype_name(p.dtype))) continue;
            fill(p.x, p.dtype, bench_numel(&p), 0.5f, 1.0f, 1);
            fill(p.dy, p.dtype, bench_numel(&p), 0.0f, 0.5f, 2);
            for (li = 0; li < 2; li++) {
                /* a 2-D tensor has one layout: (N, C) contiguous is channels-last too */
                if (p.rank == 2 && li == 1) continue;
                if (p.rank == 4 && !has_item(rc->layouts, li ? "cl" : "cf")) continue;
                p.channels_last = li;
                for (ti = 0; ti < ncounts; ti++) {
                    p.threads = counts[ti];
                    for (mi = 0; mi < 3; mi++) {
                        if (!has_item(rc->modes, mode_names[mi])) continue;
                        run_case(&p, (bench_mode)mi, s, pools[ti], teams[ti], rc, o, &ws, &ws_bytes);
                    }
                }
            }
        }
        bench_free(p.x, act_bytes);
        bench_free(p.y, act_bytes);
        bench_free(p.dy, act_bytes);
        bench_free(p.dx, act_bytes);
        bench_free(p.weight, (size_t)p.c * 10 * sizeof(float));
    }
    bench_free(ws, ws_bytes);
    for (ti = 0; ti < ncounts; ti++) {
        sbn_pool_destroy(pools[ti]);
        ref_team_destroy(teams[ti]);
    }
    return 0;
}

static void print_header(void)
{
    char ver[128], model[128] = "?", line[256], thp[128] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        fclose(f);
    }
    f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (fgets(thp, sizeof thp, f)) thp[strcspn(thp, "\n")] = '\0';
        fclose(f);
    }
    bench_dnnl_available(ver, sizeof ver);
    printf("# bench_ops: syncbn %s; cpu: %s; %ld online cpus; THP: %s\n", sbn_version(), model,
           sysconf(_SC_NPROCESSORS_ONLN), thp);
    printf("# peers: ref = plain reduce-then-map kernels (-O3 -march=native); %s\n", ver);
    printf("# buffers: 2 MiB aligned; MADV_HUGEPAGE; touched before timing; hot (same tensors "
           "every rep); implementations interleaved in blocks\n");
    printf("impl,shape,dtype,threads,layout,mode,min_ms,med_ms,reps,floor_bytes,gbps,status,note\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static shape shapes[MAX_SHAPES];
    int nshapes = 0, i, do_syncbn = 0, syncbn_only = 0, syncbn_mpi = 0, traffic = 0;
    run_cfg rc = {"f32,bf16", "1,2", "cf,cl", "fwd-train,bwd,eval", 0, 0, 0};
    bench_opts o;
    shape ss;

    o.min_reps = 20;
    o.min_time = 0.3;
    o.max_time = 1.0;
    o.world = 2;
    o.syncbn_shape[0] = 32;
    o.syncbn_shape[1] = 64;
    o.syncbn_shape[2] = 56;
    o.syncbn_shape[3] = 56;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--syncbn") == 0) do_syncbn = 1;
        else if (strcmp(a, "--syncbn-only") == 0) do_syncbn = syncbn_only = 1;
        else if (strcmp(a, "--syncbn-mpi") == 0) syncbn_mpi = 1;
        else if (strcmp(a, "--traffic") == 0) traffic = 1;
        else if (strcmp(a, "--no-onednn") == 0) rc.no_onednn = 1;
        else if (strcmp(a, "--no-aclnn") == 0) rc.no_aclnn = 1;
        else if (strcmp(a, "--pool-stats") == 0) rc.pool_stats = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        } else if (v == NULL) {
            usage();
            return 2;
        } else if (strcmp(a, "--shapes") == 0) {
            if (read_shapes(v, shapes, &nshapes) != 0) return 2;
            i++;
        } else if (strcmp(a, "--shape") == 0) {
            if (nshapes >= MAX_SHAPES || parse_shape(v, &shapes[nshapes]) != 0) {
                fprintf(stderr, "bench_ops: bad shape '%s'\n", v);
                return 2;
            }
            nshapes++;
            i++;
        } else if (strcmp(a, "--syncbn-shape") == 0) {
            if (parse_shape(v, &ss) != 0 || ss.rank != 4) {
                fprintf(stderr, "bench_ops: bad --syncbn-shape '%s' (NxCxHxW)\n", v);
                return 2;
            }
            memcpy(o.syncbn_shape, ss.d, sizeof o.syncbn_shape);
            i++;
        } else if (strcmp(a, "--dtypes") == 0) rc.dtypes = argv[++i];
        else if (strcmp(a, "--threads") == 0) rc.threads = argv[++i];
        else if (strcmp(a, "--layouts") == 0) rc.layouts = argv[++i];
        else if (strcmp(a, "--modes") == 0) rc.modes = argv[++i];
        else if (strcmp(a, "--min-reps") == 0) o.min_reps = atoi(argv[++i]);
        else if (strcmp(a, "--min-time") == 0) o.min_time = atof(argv[++i]);
        else if (strcmp(a, "--max-time") == 0) o.max_time = atof(argv[++i]);
        else if (strcmp(a, "--world") == 0) o.world = atoi(argv[++i]);
        else {
            usage();
            return 2;
        }
    }
    if (check_items("--dtypes", rc.dtypes, "f32,bf16,f16") != 0 ||
        check_items("--layouts", rc.layouts, "cf,cl") != 0 ||
        check_items("--modes", rc.modes, "fwd-train,bwd,eval") != 0)
        return 2;
    if (o.min_reps < 1) o.min_reps = 1;
    if (o.world < 1 || o.world > 64) o.world = 2;
    if (syncbn_mpi) return bench_syncbn_mpi(&o, &argc, &argv);
    if (traffic) return bench_traffic();

    print_header();
    if (!syncbn_only) {
        double t0 = bench_now();
        int rc_m;
        if (nshapes == 0) {
            fprintf(stderr, "bench_ops: no shapes (use --shapes FILE or --shape SPEC)\n");
            return 2;
        }
        rc_m = run_matrix(shapes, nshapes, &rc, &o);
        printf("# matrix took %.1f s\n", bench_now() - t0);
        if (rc_m != 0) return rc_m;
    }
    if (do_syncbn) return bench_syncbn_threads(&o);
    return 0;
}
