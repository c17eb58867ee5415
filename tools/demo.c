/*
 * demo.c - the project's main job until the distributed layer lands: a synthetic
 * fp32 batch (N, C, H, W) is split along N into W uneven shards (one of them
 * empty), each shard's local moments are computed with sbn_stats_moments and
 * also its (mean, invstd) with sbn_stats, the shards are merged both ways
 * (sbn_gather_moments and sbn_gather_stats_with_counts), every shard is
 * normalised with sbn_elemt, and the result is compared with sbn_batch_norm on
 * the whole batch. Prints the max differences and exits non-zero if they exceed
 * the fp32 tolerance.
 *
 * Usage: sbn_demo [--ranks W] [--shape NxCxHxW] [--threads T]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncbn/ops.h"

typedef struct demo_config {
    int ranks;
    int threads;
    int64_t shape[4];
} demo_config;

static int parse_args(int argc, char **argv, demo_config *cfg)
{
    int i;
    cfg->ranks = 4;
    cfg->threads = 2;
    cfg->shape[0] = 26;
    cfg->shape[1] = 16;
    cfg->shape[2] = 28;
    cfg->shape[3] = 28;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
            cfg->ranks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            cfg->threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            long long n, c, h, w;
            if (sscanf(argv[++i], "%lldx%lldx%lldx%lld", &n, &c, &h, &w) != 4) return 0;
            cfg->shape[0] = n;
            cfg->shape[1] = c;
            cfg->shape[2] = h;
            cfg->shape[3] = w;
        } else {
            return 0;
        }
    }
    return cfg->ranks >= 1 && cfg->threads >= 1 && cfg->shape[0] >= 1 && cfg->shape[1] >= 1 &&
           cfg->shape[2] >= 1 && cfg->shape[3] >= 1;
}

/* Uneven shard sizes along N: rank 1 gets nothing (when W > 1), the rest share N unevenly. */
static void split_batch(int64_t n, int ranks, int64_t *sizes)
{
    int64_t left = n;
    int j, takers = ranks > 1 ? ranks - 1 : 1;
    for (j = 0; j < ranks; j++) sizes[j] = 0;
    for (j = 0; j < ranks; j++) {
        int64_t share;
        if (ranks > 1 && j == 1) continue;
        share = takers > 1 ? (left * 2) / (takers + 1) : left;
        if (share < 1 && left > 0) share = 1;
        sizes[j] = share;
        left -= share;
        takers--;
    }
    sizes[0] += left;
}

static double max_abs_diff(const float *a, const float *b, int64_t n)
{
    double worst = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || d != d) worst = d;
    }
    return worst;
}

static int check(sbn_status s, const char *what)
{
    if (SBN_FAILED(s)) {
        fprintf(stderr, "%s failed: %s: %s\n", what, sbn_status_name(s), sbn_last_error());
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    demo_config cfg;
    int64_t n, c, hw, numel, j, i, offset;
    int64_t *sizes;
    float *x, *y_whole, *y_shards, *mean_all, *invstd_all, *counts;
    float g_mean[2][1024], g_invstd[2][1024], whole_mean[1024], whole_invstd[1024];
    float rm[2][1024], rv[2][1024], whole_rm[1024], whole_rv[1024];
    sbn_moments *parts;
    sbn_pool_t *pool = NULL;
    void *ws;
    size_t ws_bytes = 0;
    double worst_y[2], worst_stats = 0.0, worst_running = 0.0, tol;
    int ok = 1, k;
    unsigned seed = 12345;

    if (!parse_args(argc, argv, &cfg) || cfg.shape[1] > 1024) {
        fprintf(stderr, "usage: %s [--ranks W] [--shape NxCxHxW (C <= 1024)] [--threads T]\n",
                argv[0]);
        return 2;
    }
    n = cfg.shape[0];
    c = cfg.shape[1];
    hw = cfg.shape[2] * cfg.shape[3];
    numel = n * c * hw;
    sizes = calloc((size_t)cfg.ranks, sizeof *sizes);
    x = malloc((size_t)numel * sizeof *x);
    y_whole = malloc((size_t)numel * sizeof *x);
    y_shards = malloc((size_t)numel * sizeof *x);
    mean_all = calloc((size_t)(cfg.ranks * c), sizeof *mean_all);
    invstd_all = calloc((size_t)(cfg.ranks * c), sizeof *invstd_all);
    counts = calloc((size_t)cfg.ranks, sizeof *counts);
    parts = calloc((size_t)(cfg.ranks * c), sizeof *parts);
    if (!sizes || !x || !y_whole || !y_shards || !mean_all || !invstd_all || !counts || !parts) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    /* channel k has mean 3k - 5 and std 0.5 + k/4: a deterministic pseudo-random fill */
    for (i = 0; i < numel; i++) {
        int64_t ch = (i / hw) % c;
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((3.0 * (double)ch - 5.0) +
                       (0.5 + (double)ch / 4.0) * (((seed >> 8) & 0xFFFF) / 32768.0 - 1.0));
    }
    for (k = 0; k < 2; k++)
        for (i = 0; i < c; i++) {
            rm[k][i] = 0.0f;
            rv[k][i] = 1.0f;
        }
    for (i = 0; i < c; i++) {
        whole_rm[i] = 0.0f;
        whole_rv[i] = 1.0f;
    }
    split_batch(n, cfg.ranks, sizes);
    if (cfg.threads > 1 && !check(sbn_pool_create(cfg.threads, &pool), "sbn_pool_create")) return 1;

    /* one workspace, sized for the largest call (the whole batch) */
    {
        int64_t shape[4];
        sbn_tensor whole;
        memcpy(shape, cfg.shape, sizeof shape);
        whole = sbn_tensor_contiguous(x, SBN_F32, 4, shape);
        if (!check(sbn_batch_norm_workspace_size(&whole, &ws_bytes), "workspace size")) return 1;
        ws = malloc(ws_bytes);
        if (!ws) return 1;

        /* whole-batch reference run */
        {
            sbn_tensor y = sbn_tensor_contiguous(y_whole, SBN_F32, 4, shape);
            sbn_tensor t_rm = sbn_tensor_1d(whole_rm, SBN_F32, c), t_rv = sbn_tensor_1d(whole_rv, SBN_F32, c);
            sbn_tensor t_m = sbn_tensor_1d(whole_mean, SBN_F32, c), t_i = sbn_tensor_1d(whole_invstd, SBN_F32, c);
            if (!check(sbn_batch_norm(&whole, NULL, NULL, 1, 0.1, 1e-5, &t_rm, &t_rv, &y, &t_m, &t_i,
                                      ws, ws_bytes, pool), "sbn_batch_norm"))
                return 1;
        }
    }

    /* per shard: local statistics in both forms */
    for (j = 0, offset = 0; j < cfg.ranks; j++) {
        int64_t shape[4] = {sizes[j], c, cfg.shape[2], cfg.shape[3]};
        sbn_tensor shard = sbn_tensor_contiguous(x + offset, SBN_F32, 4, shape);
        sbn_tensor m = sbn_tensor_1d(mean_all + j * c, SBN_F32, c);
        sbn_tensor is = sbn_tensor_1d(invstd_all + j * c, SBN_F32, c);
        if (!check(sbn_stats_moments(&shard, parts + j * c, ws, ws_bytes, pool), "sbn_stats_moments"))
            return 1;
        if (!check(sbn_stats(&shard, 1e-5, &m, &is, ws, ws_bytes, pool), "sbn_stats")) return 1;
        counts[j] = (float)(sizes[j] * hw);
        offset += sizes[j] * c * hw;
    }

    /* merge: k = 0 native moments, k = 1 the (mean, invstd, count) form */
    for (k = 0; k < 2; k++) {
        sbn_tensor t_m = sbn_tensor_1d(g_mean[k], SBN_F32, c), t_i = sbn_tensor_1d(g_invstd[k], SBN_F32, c);
        sbn_tensor t_rm = sbn_tensor_1d(rm[k], SBN_F32, c), t_rv = sbn_tensor_1d(rv[k], SBN_F32, c);
        if (k == 0) {
            if (!check(sbn_gather_moments(parts, cfg.ranks, c, 0.1, 1e-5, &t_rm, &t_rv, NULL, &t_m, &t_i),
                       "sbn_gather_moments"))
                return 1;
        } else {
            int64_t wc[2] = {cfg.ranks, c};
            sbn_tensor t_ma = sbn_tensor_contiguous(mean_all, SBN_F32, 2, wc);
            sbn_tensor t_ia = sbn_tensor_contiguous(invstd_all, SBN_F32, 2, wc);
            sbn_tensor t_c = sbn_tensor_1d(counts, SBN_F32, cfg.ranks);
            if (!check(sbn_gather_stats_with_counts(&t_ma, &t_ia, &t_c, 0.1, 1e-5, &t_rm, &t_rv, &t_m,
                                                    &t_i, NULL, 0, pool),
                       "sbn_gather_stats_with_counts"))
                return 1;
        }
        /* normalise every shard with the global statistics */
        for (j = 0, offset = 0; j < cfg.ranks; j++) {
            int64_t shape[4] = {sizes[j], c, cfg.shape[2], cfg.shape[3]};
            sbn_tensor shard = sbn_tensor_contiguous(x + offset, SBN_F32, 4, shape);
            sbn_tensor out = sbn_tensor_contiguous(y_shards + offset, SBN_F32, 4, shape);
            if (!check(sbn_elemt(&shard, &t_m, &t_i, NULL, NULL, &out, ws, ws_bytes, pool), "sbn_elemt"))
                return 1;
            offset += sizes[j] * c * hw;
        }
        worst_y[k] = max_abs_diff(y_shards, y_whole, numel);
        for (i = 0; i < c; i++) {
            double dm = fabs(g_mean[k][i] - whole_mean[i]);
            double di = fabs(g_invstd[k][i] - whole_invstd[i]) / whole_invstd[i];
            double dr = fmax(fabs(rm[k][i] - whole_rm[i]), fabs(rv[k][i] - whole_rv[i]) / whole_rv[i]);
            if (dm > worst_stats) worst_stats = dm;
            if (di > worst_stats) worst_stats = di;
            if (dr > worst_running) worst_running = dr;
        }
    }

    printf("syncbn demo: batch %lldx%lldx%lldx%lld fp32 split over %d ranks, threads %d\n",
           (long long)n, (long long)c, (long long)cfg.shape[2], (long long)cfg.shape[3], cfg.ranks,
           cfg.threads);
    printf("  shard sizes along N:");
    for (j = 0; j < cfg.ranks; j++) printf(" %lld", (long long)sizes[j]);
    printf("\n");
    printf("  max |y_shards - y_whole|, native moments merge:      %.3g\n", worst_y[0]);
    printf("  max |y_shards - y_whole|, (mean, invstd, count) merge: %.3g\n", worst_y[1]);
    printf("  max difference of mean / relative invstd:            %.3g\n", worst_stats);
    printf("  max difference of running stats (relative var):      %.3g\n", worst_running);
    /* y is O(1): a few fp32 ulps of |y| <= ~4, plus the fp32 rounding of the shipped invstd */
    tol = 64 * 5.96e-8 * 4.0;
    ok = worst_y[0] <= tol && worst_y[1] <= 16 * tol && worst_stats <= 1e-5 && worst_running <= 1e-5;
    printf("%s\n", ok ? "demo: sharded SyncBN matches whole-batch BN" : "demo: MISMATCH");

    sbn_pool_destroy(pool);
    free(ws);
    free(parts);
    free(counts);
    free(invstd_all);
    free(mean_all);
    free(y_shards);
    free(y_whole);
    free(x);
    free(sizes);
    return ok ? 0 : 1;
}
