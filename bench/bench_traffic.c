/*
 * bench_traffic.c - bytes per rank per SyncBN layer step as the world grows
 * (bench_ops --traffic). For W = 2, 4, ..., 256 in-process ranks (threads
 * backend), every rank runs one training step (sbn_syncbn_forward +
 * sbn_syncbn_backward, f32, one sample of C channels and 2x2 pixels each, both
 * modes) and reads sbn_comm_traffic before and after; the largest sent and
 * received counts over the ranks are reported. Beside them, the exchanges of the
 * previous design on the same handles: an allgather of 3C doubles (forward) and
 * an allreduce-sum of 2C doubles (an allgather underneath), whose received bytes
 * grow as W * 5C * 8. Output: CSV rows
 *   traffic,<path>,<W>,<C>,<sent bytes>,<received bytes>
 * with path = merge (the layer's step, default mode), merge-repro (reproducible
 * mode) or allgather (the previous exchanges).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syncbn/layer.h"

#define TRAFFIC_C 64

typedef struct traffic_rank {
    sbn_comm_t *comm;
    int path; /* 0 merge, 1 merge-repro, 2 allgather */
    uint64_t sent, received;
    sbn_status status;
} traffic_rank;

static const char *const path_names[] = {"merge", "merge-repro", "allgather"};

/* One layer step (fwd + bwd) of this rank's 1 x C x 2 x 2 batch. */
static sbn_status layer_step(sbn_comm_t *comm, int reproducible)
{
    enum { C = TRAFFIC_C, E = TRAFFIC_C * 4 };
    static const int64_t shape[4] = {1, C, 2, 2};
    float x[E], y[E], dy[E], dx[E], vec[4 * C];
    double stat[2 * C];
    int64_t count = 0, i;
    sbn_tensor tx = sbn_tensor_contiguous(x, SBN_F32, 4, shape);
    sbn_tensor ty = sbn_tensor_contiguous(y, SBN_F32, 4, shape);
    sbn_tensor tdy = sbn_tensor_contiguous(dy, SBN_F32, 4, shape);
    sbn_tensor tdx = sbn_tensor_contiguous(dx, SBN_F32, 4, shape);
    sbn_tensor w = sbn_tensor_1d(vec, SBN_F32, C), b = sbn_tensor_1d(vec + C, SBN_F32, C);
    sbn_tensor gw = sbn_tensor_1d(vec + 2 * C, SBN_F32, C);
    sbn_tensor gb = sbn_tensor_1d(vec + 3 * C, SBN_F32, C);
    sbn_tensor sm = sbn_tensor_1d(stat, SBN_F64, C), si = sbn_tensor_1d(stat + C, SBN_F64, C);
    sbn_syncbn_config cfg;
    size_t bytes = 0;
    void *ws;
    sbn_status s;
    for (i = 0; i < E; i++) {
        x[i] = (float)(i % 7) - 3.0f + 0.01f * (float)sbn_comm_rank(comm);
        dy[i] = (float)(i % 5) * 0.25f;
    }
    for (i = 0; i < 4 * C; i++) vec[i] = 1.0f;
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = reproducible;
    if ((s = sbn_syncbn_workspace_size(&tx, &bytes)) != SBN_OK) return s;
    if ((ws = malloc(bytes)) == NULL) return sbn_comm_fail(comm, SBN_ERR_OUT_OF_MEMORY);
    s = sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &tx, .weight = &w, .bias = &b,
                           .y = &ty, .save_mean = &sm, .save_invstd = &si, .global_count = &count},
                           ws, bytes, NULL);
    if (!SBN_FAILED(s))
        s = sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &tdy, .x = &tx,
                                .weight = &w, .save_mean = &sm, .save_invstd = &si,
                                .global_count = count, .grad_input = &tdx, .grad_weight = &gw,
                                .grad_bias = &gb}, ws, bytes, NULL);
    free(ws);
    return SBN_FAILED(s) ? s : SBN_OK;
}

/* The previous design's exchanges: allgather of 3C doubles, allreduce-sum of 2C. */
static sbn_status allgather_step(sbn_comm_t *comm)
{
    double mine[3 * TRAFFIC_C], sums[2 * TRAFFIC_C], *all;
    sbn_status s;
    memset(mine, 0, sizeof mine);
    memset(sums, 0, sizeof sums);
    all = malloc((size_t)sbn_comm_size(comm) * sizeof mine);
    if (all == NULL) return sbn_comm_fail(comm, SBN_ERR_OUT_OF_MEMORY);
    s = sbn_comm_allgather(comm, mine, 3 * TRAFFIC_C, all, 1);
    if (s == SBN_OK) s = sbn_comm_allreduce_sum(comm, sums, 2 * TRAFFIC_C, 2);
    free(all);
    return s;
}

static void *traffic_thread(void *arg)
{
    traffic_rank *t = arg;
    uint64_t s0, r0, s1, r1;
    /* one step first, so that one-time setup is not counted */
    t->status = t->path == 2 ? allgather_step(t->comm) : layer_step(t->comm, t->path);
    if (t->status != SBN_OK) return NULL;
    sbn_comm_traffic(t->comm, &s0, &r0);
    t->status = t->path == 2 ? allgather_step(t->comm) : layer_step(t->comm, t->path);
    sbn_comm_traffic(t->comm, &s1, &r1);
    t->sent = s1 - s0;
    t->received = r1 - r0;
    return NULL;
}

/* Runs one path on a world of w threads; prints its row; 0 on success. */
static int traffic_world(int w, int path)
{
    sbn_comm_t **comms = calloc((size_t)w, sizeof *comms);
    traffic_rank *ranks = calloc((size_t)w, sizeof *ranks);
    pthread_t *th = calloc((size_t)w, sizeof *th);
    uint64_t sent = 0, received = 0;
    int i, started = 0, rc = 0;
    if (!comms || !ranks || !th || sbn_comm_threads_create(w, 60.0, comms) != SBN_OK) {
        fprintf(stderr, "bench_ops --traffic: cannot create a world of %d: %s\n", w,
                sbn_last_error());
        rc = 1;
        goto out;
    }
    for (i = 0; i < w; i++) {
        ranks[i].comm = comms[i];
        ranks[i].path = path;
        if (pthread_create(&th[i], NULL, traffic_thread, &ranks[i]) != 0) break;
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (i = 0; i < w; i++) {
        if (i >= started || ranks[i].status != SBN_OK) rc = 1;
        if (ranks[i].sent > sent) sent = ranks[i].sent;
        if (ranks[i].received > received) received = ranks[i].received;
    }
    if (rc == 0)
        printf("traffic,%s,%d,%d,%llu,%llu\n", path_names[path], w, TRAFFIC_C,
               (unsigned long long)sent, (unsigned long long)received);
    else
        fprintf(stderr, "bench_ops --traffic: W=%d %s failed\n", w, path_names[path]);
    for (i = 0; i < w; i++) sbn_comm_destroy(comms[i]);
out:
    free(comms);
    free(ranks);
    free(th);
    return rc;
}

int bench_traffic(void)
{
    int w, path, rc = 0;
    printf("# traffic: bytes per rank per layer step (fwd + bwd), max over ranks, threads "
           "backend, C = %d; headers included\n", TRAFFIC_C);
    printf("traffic,path,world,channels,sent_bytes,received_bytes\n");
    for (w = 2; w <= 256; w *= 2)
        for (path = 0; path < 3; path++) rc |= traffic_world(w, path);
    return rc;
}
