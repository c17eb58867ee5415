/*
 * bench_pool.c - what a parallel loop costs to start and join, and what a small op
 * costs on pools of any size. For each team width W of a list (default 1, 2, 4, ...,
 * up to 64), on one pool of the largest W:
 *   hot   an empty loop of W indices run back to back (workers spinning): the cost of
 *         publishing a loop, W-1 workers joining and the caller draining them;
 *   cold  the same loop after 2 ms idle (workers asleep): the wake-up on top;
 *   busy  a loop of W pieces of 50 us of work each, back to back: the time beyond the
 *         50 us a member needs, which is the tail a loop waits for when a member is
 *         late (descheduled, or slow to see its invitation) - the reason the p90, p99
 *         and max columns are there; a '#' line after it gives the pool's own counts
 *         over those loops (sbn__pool_stats: sleepers woken, invitations cancelled,
 *         members waited for, the wait);
 * then sbn_batch_norm (training forward) and sbn_batch_norm_backward on small fp32
 * NCHW shapes (2x64x8x8, 8x128x14x14, 8x256x28x28 by default) with pools of 1, 2
 * and each W, as the library plans them (plan.c: a small call takes one thread
 * whatever the pool), back to back, and the training forward once more after 2 ms
 * idle each (fwd-train-cold: a layer's call after the rest of a training step, its
 * workers asleep). Each row: min, median, 90th and 99th percentile and max
 * microseconds over --reps calls (the cold rows over reps / 8).
 *   usage: bench_pool [--threads 1,2,4,...] [--reps N] [--shapes 2x64x8x8,...]
 *   rows:  kind,what,threads,min_us,med_us,p90_us,p99_us,max_us
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/machine.h"
#include "core/pool.h"
#include "syncbn/ops.h"

#define MAX_COUNTS 16

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *kind, const char *what, int threads, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%s,%s,%d,%.2f,%.2f,%.2f,%.2f,%.2f\n", kind, what, threads, t[0], t[n / 2],
           t[(n * 9) / 10], t[(n * 99) / 100], t[n - 1]);
    fflush(stdout);
}

static void nothing(void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    (void)begin;
    (void)end;
}

#define BUSY_PIECE_US 50.0

/* Each index: BUSY_PIECE_US of work (a spin on the clock). */
static void busy(void *ctx, int64_t begin, int64_t end)
{
    int64_t i;
    (void)ctx;
    for (i = begin; i < end; i++) {
        double until = now_us() + BUSY_PIECE_US;
        while (now_us() < until) {
        }
    }
}

static int parse_list(const char *s, int *out)
{
    int n = 0;
    while (*s && n < MAX_COUNTS) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1024) return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') return -1;
    }
    return n;
}

static void time_loops(sbn_pool_t *pool, int width, int reps, double *t)
{
    sbn_pool_t view, *team = sbn__pool_team(pool, width, &view);
    int i;
    for (i = 0; i < 50; i++) sbn__parallel_for(team, width, nothing, NULL);
    for (i = 0; i < reps; i++) {
        double t0 = now_us();
        sbn__parallel_for(team, width, nothing, NULL);
        t[i] = now_us() - t0;
    }
    report("loop", "hot", width, t, reps);
    for (i = 0; i < reps / 10 + 1; i++) {
        double t0;
        usleep(2000);
        t0 = now_us();
        sbn__parallel_for(team, width, nothing, NULL);
        t[i] = now_us() - t0;
    }
    report("loop", "cold", width, t, reps / 10 + 1);
    sbn__pool_stats_take(pool, NULL, 1);
    for (i = 0; i < reps / 4 + 1; i++) {
        double t0 = now_us();
        sbn__parallel_for(team, width, busy, NULL);
        t[i] = now_us() - t0 - BUSY_PIECE_US;
    }
    report("loop", "busy", width, t, reps / 4 + 1);
    if (width > 1) { /* where the busy loops' time beyond their work went */
        sbn__pool_stats st;
        double n = (double)(reps / 4 + 1);
        sbn__pool_stats_take(pool, &st, 1);
        printf("# busy,%d: a loop %.2f woke sleepers; %.2f cancelled; %.2f waited for; "
               "wait %.2f us (longest %.1f us)\n",
               width, (double)st.woke_sleepers / n, (double)st.cancelled / n,
               (double)st.waited / n, (double)st.wait_ns / n * 1e-3, (double)st.wait_ns_max * 1e-3);
    }
}

/* sbn_batch_norm training forward and its backward on an fp32 NCHW tensor, on `pool`. */
static int time_op(const int64_t *d, sbn_pool_t *pool, int threads, int reps, double *t)
{
    int64_t n = d[0] * d[1] * d[2] * d[3], c = d[1], shape[4];
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *dy = malloc((size_t)n * 4);
    float *dx = malloc((size_t)n * 4), *vec = calloc((size_t)c * 8, 4);
    sbn_tensor tx, ty, tdy, tdx, w, b, rm, rv, sm, si, gw, gb;
    size_t ws_bytes = 0, ws2 = 0;
    void *ws;
    char what[64];
    int64_t i;
    int k;
    if (!x || !y || !dy || !dx || !vec) return -1;
    memcpy(shape, d, sizeof shape);
    for (i = 0; i < n; i++) {
        x[i] = (float)((i * 7919) % 1000) / 1000.0f;
        dy[i] = (float)((i * 104729) % 1000) / 2000.0f;
    }
    for (i = 0; i < c; i++) vec[i] = 1.0f, vec[3 * c + i] = 1.0f;
    tx = sbn_tensor_contiguous(x, SBN_F32, 4, shape);
    ty = sbn_tensor_contiguous(y, SBN_F32, 4, shape);
    tdy = sbn_tensor_contiguous(dy, SBN_F32, 4, shape);
    tdx = sbn_tensor_contiguous(dx, SBN_F32, 4, shape);
    w = sbn_tensor_1d(vec, SBN_F32, c);
    b = sbn_tensor_1d(vec + c, SBN_F32, c);
    rm = sbn_tensor_1d(vec + 2 * c, SBN_F32, c);
    rv = sbn_tensor_1d(vec + 3 * c, SBN_F32, c);
    sm = sbn_tensor_1d(vec + 4 * c, SBN_F32, c);
    si = sbn_tensor_1d(vec + 5 * c, SBN_F32, c);
    gw = sbn_tensor_1d(vec + 6 * c, SBN_F32, c);
    gb = sbn_tensor_1d(vec + 7 * c, SBN_F32, c);
    sbn_batch_norm_workspace_size(&tx, &ws_bytes);
    sbn_batch_norm_backward_workspace_size(&tx, &ws2);
    if (ws2 > ws_bytes) ws_bytes = ws2;
    ws = malloc(ws_bytes);
    snprintf(what, sizeof what, "%lldx%lldx%lldx%lld", (long long)d[0], (long long)d[1],
             (long long)d[2], (long long)d[3]);
    for (k = -20; k < reps; k++) {
        double t0 = now_us();
        sbn_batch_norm(&tx, &w, &b, 1, 0.1, 1e-5, &rm, &rv, &ty, &sm, &si, ws, ws_bytes, pool);
        if (k >= 0) t[k] = now_us() - t0;
    }
    report("fwd-train", what, threads, t, reps);
    for (k = 0; k < reps / 8 + 1; k++) { /* after 2 ms idle: the pool's workers asleep */
        double t0;
        usleep(2000);
        t0 = now_us();
        sbn_batch_norm(&tx, &w, &b, 1, 0.1, 1e-5, &rm, &rv, &ty, &sm, &si, ws, ws_bytes, pool);
        t[k] = now_us() - t0;
    }
    report("fwd-train-cold", what, threads, t, reps / 8 + 1);
    for (k = -20; k < reps; k++) {
        double t0 = now_us();
        sbn_batch_norm_backward(&tdy, &tx, &w, NULL, NULL, &sm, &si, 1, 1e-5, &tdx, &gw, &gb, ws,
                                ws_bytes, pool);
        if (k >= 0) t[k] = now_us() - t0;
    }
    report("bwd", what, threads, t, reps);
    free(ws);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(vec);
    return 0;
}

int main(int argc, char **argv)
{
    int counts[MAX_COUNTS], ncounts = 0, reps = 2000, i, j, max_w = 1;
    const char *shapes = "2x64x8x8,8x128x14x14,8x256x28x28";
    double *t;
    sbn_pool_t *big = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if ((ncounts = parse_list(argv[++i], counts)) <= 0) {
                fprintf(stderr, "bench_pool: bad --threads\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--shapes") == 0 && i + 1 < argc) {
            shapes = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_pool [--threads 1,2,4] [--reps N] [--shapes NxCxHxW,...]\n");
            return 2;
        }
    }
    if (reps < 10) reps = 10;
    if (ncounts == 0)
        for (j = 1; j <= 64 && ncounts < MAX_COUNTS; j *= 2) counts[ncounts++] = j;
    for (i = 0; i < ncounts; i++)
        if (counts[i] > max_w) max_w = counts[i];
    t = malloc((size_t)reps * sizeof *t);
    if (t == NULL || sbn_pool_create(max_w, &big) != SBN_OK) return 1;
    printf("# bench_pool: %d cpus; pool of %d threads; %d reps\n",
           sbn__machine_get()->cpus, max_w, reps);
    printf("kind,what,threads,min_us,med_us,p90_us,p99_us,max_us\n");
    for (i = 0; i < ncounts; i++) time_loops(big, counts[i], reps, t);
    sbn_pool_destroy(big);
    {
        const char *s = shapes;
        while (*s) {
            int64_t d[4];
            int len = 0;
            if (sscanf(s, "%ldx%ldx%ldx%ld%n", &d[0], &d[1], &d[2], &d[3], &len) != 4) break;
            s += len;
            if (*s == ',') s++;
            for (i = -1; i < ncounts; i++) {
                int w = i < 0 ? 1 : counts[i];
                sbn_pool_t *pool = NULL;
                if (i >= 0 && w == 1) continue;
                if (sbn_pool_create(w, &pool) != SBN_OK) return 1;
                time_op(d, pool, w, reps / 4 + 10, t);
                sbn_pool_destroy(pool);
            }
        }
    }
    free(t);
    return 0;
}
