/*
 * bench_prefetch.c - what the prefetch of short NCHW planes gains or costs, measured in
 * one process so that a machine's drift weighs on both sides alike. A reduction over
 * planes of up to SBN_PREFETCH_RUN_BYTES a tensor (7x7, 8x8) takes a channel at a time
 * over a window of images and prefetches the next channel's planes when its inputs are
 * beyond the cache (plan.c, sbn__plan_prefetch_runs); sbn__stream_stores_set forces that
 * rule off and on (for such planes it changes nothing else: their runs kernels are the
 * same in both tables). For each shape, dtype, op (sbn_stats, sbn_backward_reduce) and
 * pool size, the op runs with the rule off and on in turn, --reps times each, and the
 * row gives both sides' minimum and median milliseconds, off / on (above 1: the prefetch
 * gains), and what the rule decides by itself (`rule`: 1 prefetches). The shapes default
 * to the ones behind the rule's size limits: 7x7 and 8x8 planes in and beyond the L3,
 * and 14x14 ones, which the rule leaves alone (the control).
 *   usage: bench_prefetch [--threads 1,2,4] [--reps N] [--shapes 32x2048x7x7,...]
 *   rows:  op,shape,dtype,threads,rule,off_min_ms,off_med_ms,on_min_ms,on_med_ms,
 *          off_x_on_min,off_x_on_med
 */
#define _GNU_SOURCE
#include <inttypes.h>
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

static int case_make(bench_case *k, const int64_t *shape, sbn_dtype dt)
{
    int64_t n = shape[0] * shape[1] * shape[2] * shape[3], i, c = shape[1];
    size_t es = dt == SBN_F32 ? 4 : 2, a, b;
    void *x = aligned_alloc(4096, ((size_t)n * es + 4095) / 4096 * 4096);
    void *dy = aligned_alloc(4096, ((size_t)n * es + 4095) / 4096 * 4096);
    float *v = calloc((size_t)c * 4, sizeof *v);
    if (!x || !dy || !v) return 0;
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
    if (sbn_stats_workspace_size(&k->x, &a) != SBN_OK ||
        sbn_backward_reduce_workspace_size(&k->x, &b) != SBN_OK)
        return 0;
    k->ws_bytes = a > b ? a : b;
    k->ws = malloc(k->ws_bytes ? k->ws_bytes : 1);
    return k->ws != NULL;
}

static void case_free(bench_case *k)
{
    free(k->x.data);
    free(k->dy.data);
    free(k->mean.data);
    free(k->ws);
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

static int parse_list(const char *s, int *out)
{
    int n = 0;
    char *end;
    while (*s && n < MAX_LIST) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1024) return 0;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *shapes = "32x2048x7x7,128x512x7x7,64x1024x8x8,8x2048x7x7,32x1024x14x14";
    static double t_off[MAX_REPS], t_on[MAX_REPS];
    int threads[MAX_LIST] = {1, 2}, nthreads = 2, reps = 60, ai, ti, d, op, r;
    char buf[512], *tok, *save;
    for (ai = 1; ai < argc; ai++) {
        if (!strcmp(argv[ai], "--threads") && ai + 1 < argc)
            nthreads = parse_list(argv[++ai], threads);
        else if (!strcmp(argv[ai], "--reps") && ai + 1 < argc)
            reps = atoi(argv[++ai]);
        else if (!strcmp(argv[ai], "--shapes") && ai + 1 < argc)
            shapes = argv[++ai];
        else
            nthreads = 0;
        if (nthreads == 0 || reps < 1 || reps > MAX_REPS) {
            fprintf(stderr, "usage: bench_prefetch [--threads 1,2,4] [--reps 1..%d] "
                            "[--shapes NxCxHxW,...]\n", MAX_REPS);
            return 2;
        }
    }
    printf("op,shape,dtype,threads,rule,off_min_ms,off_med_ms,on_min_ms,on_med_ms,"
           "off_x_on_min,off_x_on_med\n");
    snprintf(buf, sizeof buf, "%s", shapes);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t shape[4];
        if (sscanf(tok, "%" SCNd64 "x%" SCNd64 "x%" SCNd64 "x%" SCNd64, &shape[0], &shape[1],
                   &shape[2], &shape[3]) != 4 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 ||
            shape[3] < 1) {
            fprintf(stderr, "bench_prefetch: shape %s: expected NxCxHxW\n", tok);
            return 2;
        }
        for (d = 0; d < 2; d++) {
            sbn_dtype dt = d ? SBN_BF16 : SBN_F32;
            bench_case k;
            if (!case_make(&k, shape, dt)) {
                fprintf(stderr, "bench_prefetch: %s: out of memory\n", tok);
                return 1;
            }
            for (ti = 0; ti < nthreads; ti++) {
                sbn_pool_t *pool = NULL;
                if (sbn_pool_create(threads[ti], &pool) != SBN_OK) return 1;
                for (op = 0; op < 2; op++) {
                    for (r = 0; r < reps; r++) { /* off, on, on, off, ...: each side first alike */
                        int side, first = r & 1;
                        for (side = 0; side < 2; side++) {
                            int on = side ^ first;
                            double t0;
                            sbn__stream_stores_set(on);
                            t0 = now_ms();
                            if (run_op(&k, op, pool) != SBN_OK) {
                                fprintf(stderr, "bench_prefetch: %s: %s\n", tok,
                                        sbn_last_error());
                                return 1;
                            }
                            (on ? t_on : t_off)[r] = now_ms() - t0;
                        }
                    }
                    sbn__stream_stores_set(-1);
                    qsort(t_off, (size_t)reps, sizeof t_off[0], cmp_double);
                    qsort(t_on, (size_t)reps, sizeof t_on[0], cmp_double);
                    printf("%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f\n",
                           op ? "backward_reduce" : "stats", tok, d ? "bf16" : "f32",
                           threads[ti], rule_prefetches(&k, op), t_off[0], t_off[reps / 2],
                           t_on[0], t_on[reps / 2], t_off[0] / t_on[0],
                           t_off[reps / 2] / t_on[reps / 2]);
                    fflush(stdout);
                }
                sbn_pool_destroy(pool);
            }
            case_free(&k);
        }
    }
    return 0;
}
