/*
 * bench_prefetch.c - what the prefetch of short NCHW planes gains or costs, measured in
 * one process so that a machine's drift weighs on both sides alike. A reduction over
 * planes of up to SBN_PREFETCH_RUN_BYTES a tensor (fp32 up to 8x8, bf16 up to 11x11)
 * takes a channel at a time over a window of images and prefetches the next channel's
 * planes when its inputs are beyond the cache (plan.c, sbn__plan_prefetch_runs);
 * sbn__stream_stores_set forces that rule off and on. For planes that short it changes
 * nothing else (their runs kernels are the same in both tables); for longer ones it can
 * (on AVX-512 the plane path's kernels and order beyond the cache), so the 14x14 rows are
 * the control only where they stay short runs: fp32 statistics, bf16 both ops. For each
 * shape, dtype, op (sbn_stats, sbn_backward_reduce) and pool size, the op runs once, then
 * with the rule off and on in turn, --reps times each; the row gives both sides' minimum
 * and median milliseconds, off / on (above 1: the prefetch gains), and `rule`, what the
 * size rule decides (1 prefetches; SBN_STREAM_STORES, when set, decides it instead). The
 * shapes default to the ones behind the rule's limits: 7x7 and 8x8 planes in and beyond
 * the L3, and 14x14 ones, which the rule leaves alone.
 *   usage: bench_prefetch [--threads 1,2,4] [--reps N] [--shapes 32x2048x7x7,...]
 *   rows:  op,shape,dtype,threads,rule,off_min_ms,off_med_ms,on_min_ms,on_med_ms,
 *          off_x_on_min,off_x_on_med
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/plan.h"
#include "syncbn/ops.h"

#define MAX_LIST 16
#define MAX_REPS 4096

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One case's buffers: x and dy of the shape (values near 1, as activations after a
 * layer are), the per-channel vectors in fp32, and the larger op's workspace. */
typedef struct bench_case {
    sbn_tensor x, dy, mean, invstd, out0, out1;
    void *ws;
    size_t ws_bytes;
} bench_case;

static void case_free(bench_case *k)
{
    free(k->x.data);
    free(k->dy.data);
    free(k->mean.data);
    free(k->ws);
}

static int case_make(bench_case *k, const int64_t *shape, sbn_dtype dt)
{
    int64_t n = shape[0] * shape[1] * shape[2] * shape[3], i, c = shape[1];
    size_t es = dt == SBN_F32 ? 4 : 2, a, b;
    void *x = aligned_alloc(4096, ((size_t)n * es + 4095) / 4096 * 4096);
    void *dy = aligned_alloc(4096, ((size_t)n * es + 4095) / 4096 * 4096);
    float *v = calloc((size_t)c * 4, sizeof *v);
    k->ws = NULL;
    if (!x || !dy || !v) {
        free(x);
        free(dy);
        free(v);
        return 0;
    }
    for (i = 0; i < n; i++) {
        float fx = 1.0f + (float)(i % 37) * 0.01f, fg = (float)(i % 29) * 0.1f - 1.4f;
        if (dt == SBN_F32) {
            ((float *)x)[i] = fx;
            ((float *)dy)[i] = fg;
        } else { /* bf16: the high half of the float */
            uint32_t ux, ug;
            memcpy(&ux, &fx, sizeof ux);
            memcpy(&ug, &fg, sizeof ug);
            ((uint16_t *)x)[i] = (uint16_t)(ux >> 16);
            ((uint16_t *)dy)[i] = (uint16_t)(ug >> 16);
        }
    }
    for (i = 0; i < c; i++) v[i] = 1.1f, v[c + i] = 2.0f;
    k->x = sbn_tensor_contiguous(x, dt, 4, shape);
    k->dy = sbn_tensor_contiguous(dy, dt, 4, shape);
    k->mean = sbn_tensor_1d(v, SBN_F32, c);
    k->invstd = sbn_tensor_1d(v + c, SBN_F32, c);
    k->out0 = sbn_tensor_1d(v + 2 * c, SBN_F32, c);
    k->out1 = sbn_tensor_1d(v + 3 * c, SBN_F32, c);
    if (sbn_stats_workspace_size(&k->x, &a) == SBN_OK &&
        sbn_backward_reduce_workspace_size(&k->x, &b) == SBN_OK) {
        k->ws_bytes = a > b ? a : b;
        k->ws = malloc(k->ws_bytes ? k->ws_bytes : 1);
    }
    if (k->ws == NULL) case_free(k);
    return k->ws != NULL;
}

static sbn_status run_op(bench_case *k, int backward, sbn_pool_t *pool)
{
    if (backward)
        return sbn_backward_reduce(&k->dy, &k->x, &k->mean, &k->invstd, &k->out0, &k->out1, NULL,
                                   NULL, k->ws, k->ws_bytes, pool);
    return sbn_stats(&k->x, 1e-5, &k->out0, &k->out1, k->ws, k->ws_bytes, pool);
}

/* Whether the library's own rule prefetches this op's planes. */
static int rule_prefetches(const bench_case *k, int backward)
{
    const sbn_tensor *t[2];
    sbn__walk w;
    t[0] = backward ? &k->dy : &k->x;
    t[1] = &k->x;
    sbn__walk_init(&w, t, backward ? 2 : 1);
    return sbn__plan_prefetch_runs(&w, sbn__beyond_cache(t, backward ? 2 : 1,
                                                         SBN_REDUCE_PREFETCH_SHARE, 1));
}

/* A whole number in [1, max] that is all of s, or 0. */
static long long parse_count(const char *s, const char *end_chars, const char **end, long long max)
{
    char *e;
    long long v;
    if (*s < '0' || *s > '9') return 0;
    v = strtoll(s, &e, 10);
    if (v < 1 || v > max || (*e != '\0' && strchr(end_chars, *e) == NULL)) return 0;
    *end = e;
    return v;
}

/* "1,2,4": up to MAX_LIST counts in 1..1024, no empty item; the count, or 0. */
static int parse_list(const char *s, int *out)
{
    int n = 0;
    const char *end;
    for (;;) {
        long long v = parse_count(s, ",", &end, 1024);
        if (v == 0 || n == MAX_LIST) return 0;
        out[n++] = (int)v;
        if (*end == '\0') return n;
        s = end + 1;
    }
}

/* "NxCxHxW": four dims of at least 1 whose elements, at 4 bytes, a size_t counts; 1 if so. */
static int parse_shape(const char *s, int64_t *shape)
{
    const char *end = s;
    int64_t n = 1;
    int d;
    for (d = 0; d < 4; d++) {
        long long v = parse_count(d ? end + 1 : s, d < 3 ? "x" : "", &end, INT64_MAX);
        if (v == 0 || (d < 3 && *end != 'x') || __builtin_mul_overflow(n, (int64_t)v, &n))
            return 0;
        shape[d] = v;
    }
    return *end == '\0' && n <= (int64_t)(SIZE_MAX / 8);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_prefetch [--threads 1,2,4] [--reps 1..%d] "
                    "[--shapes NxCxHxW,...]\n", MAX_REPS);
    return 2;
}

int main(int argc, char **argv)
{
    static const char *const k_default = "32x2048x7x7,128x512x7x7,64x1024x8x8,8x2048x7x7,"
                                         "32x1024x14x14";
    static double t_off[MAX_REPS], t_on[MAX_REPS];
    static int64_t shapes[MAX_LIST][4];
    static char names[MAX_LIST][64];
    const char *list = k_default, *end;
    int threads[MAX_LIST] = {1, 2}, nthreads = 2, reps = 60, nshapes = 0, ai, si, ti, d, op, r;
    for (ai = 1; ai < argc; ai++) {
        if (ai + 1 >= argc) return usage();
        if (!strcmp(argv[ai], "--threads")) {
            if ((nthreads = parse_list(argv[++ai], threads)) == 0) return usage();
        } else if (!strcmp(argv[ai], "--reps")) {
            if ((reps = (int)parse_count(argv[++ai], "", &end, MAX_REPS)) == 0) return usage();
        } else if (!strcmp(argv[ai], "--shapes")) {
            list = argv[++ai];
        } else {
            return usage();
        }
    }
    for (;;) { /* every shape checked before any row */
        const char *comma = strchr(list, ',');
        size_t len = comma ? (size_t)(comma - list) : strlen(list);
        if (nshapes == MAX_LIST || len == 0 || len >= sizeof names[0]) {
            fprintf(stderr, "bench_prefetch: --shapes: at most %d shapes of under %zu "
                            "characters each\n", MAX_LIST, sizeof names[0]);
            return 2;
        }
        memcpy(names[nshapes], list, len);
        names[nshapes][len] = '\0';
        if (!parse_shape(names[nshapes], shapes[nshapes])) {
            fprintf(stderr, "bench_prefetch: shape %s: expected NxCxHxW, each at least 1\n",
                    names[nshapes]);
            return 2;
        }
        nshapes++;
        if (!comma) break;
        list = comma + 1;
    }
    printf("op,shape,dtype,threads,rule,off_min_ms,off_med_ms,on_min_ms,on_med_ms,"
           "off_x_on_min,off_x_on_med\n");
    for (si = 0; si < nshapes; si++)
        for (d = 0; d < 2; d++) {
            sbn_dtype dt = d ? SBN_BF16 : SBN_F32;
            bench_case k;
            if (!case_make(&k, shapes[si], dt)) {
                fprintf(stderr, "bench_prefetch: %s: out of memory\n", names[si]);
                return 1;
            }
            for (ti = 0; ti < nthreads; ti++) {
                sbn_pool_t *pool = NULL;
                if (sbn_pool_create(threads[ti], &pool) != SBN_OK) {
                    fprintf(stderr, "bench_prefetch: a pool of %d: %s\n", threads[ti],
                            sbn_last_error());
                    return 1;
                }
                for (op = 0; op < 2; op++) {
                    if (run_op(&k, op, pool) != SBN_OK) { /* and the workspace touched */
                        fprintf(stderr, "bench_prefetch: %s: %s\n", names[si],
                                sbn_last_error());
                        return 1;
                    }
                    for (r = 0; r < reps; r++) { /* off, on, on, off, ...: each side first alike */
                        int side, first = r & 1;
                        for (side = 0; side < 2; side++) {
                            int on = side ^ first;
                            double t0;
                            sbn__stream_stores_set(on);
                            t0 = now_ms();
                            (void)run_op(&k, op, pool);
                            (on ? t_on : t_off)[r] = now_ms() - t0;
                        }
                    }
                    sbn__stream_stores_set(-1);
                    qsort(t_off, (size_t)reps, sizeof t_off[0], cmp_double);
                    qsort(t_on, (size_t)reps, sizeof t_on[0], cmp_double);
                    printf("%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f\n",
                           op ? "backward_reduce" : "stats", names[si], d ? "bf16" : "f32",
                           threads[ti], rule_prefetches(&k, op), t_off[0], t_off[reps / 2],
                           t_on[0], t_on[reps / 2], t_off[0] / t_on[0],
                           t_off[reps / 2] / t_on[reps / 2]);
                    fflush(stdout);
                }
                sbn_pool_destroy(pool);
            }
            case_free(&k);
        }
    return 0;
}
