/*
 * bench_faults.c - checks that the ops run without page faults in steady state
 * (issue 6): after two warm-up calls, 50 training steps (sbn_batch_norm forward +
 * sbn_batch_norm_backward, fp32 32x64x56x56) on the same tensors and workspace,
 * with getrusage's minor + major fault counts read around the loop, for 1 and 2
 * threads and both layouts. Prints one line per case; exits 1 if any step faulted.
 *   usage: bench_faults
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "syncbn/ops.h"

#define C 64
#define STEPS 50

static long faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt + u.ru_majflt;
}

static sbn_tensor act(void *data, int cl)
{
    static const int64_t shape[4] = {32, C, 56, 56};
    return cl ? sbn_tensor_channels_last(data, SBN_F32, 4, shape)
              : sbn_tensor_contiguous(data, SBN_F32, 4, shape);
}

static int run_case(int threads, int cl, float *buf[4], float vec[8][C])
{
    sbn_tensor x = act(buf[0], cl), y = act(buf[1], cl), dy = act(buf[2], cl), dx = act(buf[3], cl);
    sbn_tensor v[8];
    sbn_pool_t *pool = NULL;
    size_t b1 = 0, b2 = 0, bytes;
    char *ws;
    long before = 0, after;
    int i, s;
    for (i = 0; i < 8; i++) v[i] = sbn_tensor_1d(vec[i], SBN_F32, C);
    if (threads > 1 && sbn_pool_create(threads, &pool) != SBN_OK) return -1;
    sbn_batch_norm_workspace_size(&x, &b1);
    sbn_batch_norm_backward_workspace_size(&x, &b2);
    bytes = b1 > b2 ? b1 : b2;
    ws = malloc(bytes);
    if (!ws) return -1;
    memset(ws, 0, bytes);
    for (s = -2; s < STEPS; s++) {
        if (s == 0) before = faults();
        if (SBN_FAILED(sbn_batch_norm(&x, &v[0], &v[1], 1, 0.1, 1e-5, &v[2], &v[3], &y, &v[4],
                                      &v[5], ws, bytes, pool)) ||
            SBN_FAILED(sbn_batch_norm_backward(&dy, &x, &v[0], NULL, NULL, &v[4], &v[5], 1, 1e-5,
                                               &dx, &v[6], &v[7], ws, bytes, pool)))
            return -1;
    }
    after = faults();
    printf("threads %d %s: %ld page faults in %d fwd-train + bwd steps after warm-up "
           "(workspace %zu bytes)\n", threads, cl ? "channels-last " : "channels-first", after - before,
           STEPS, bytes);
    free(ws);
    sbn_pool_destroy(pool);
    return after - before > 0;
}

int main(void)
{
    size_t n = (size_t)32 * C * 56 * 56, i;
    float *buf[4], vec[8][C];
    int t, cl, bad = 0;
    for (i = 0; i < 4; i++) {
        buf[i] = malloc(n * sizeof(float));
        if (!buf[i]) return 1;
    }
    for (i = 0; i < n; i++) {
        buf[0][i] = (float)(i % 7);
        buf[2][i] = (float)(i % 5) - 2.0f;
        buf[1][i] = buf[3][i] = 0.0f;
    }
    for (i = 0; i < C; i++) {
        vec[0][i] = vec[3][i] = 1.0f;
        vec[1][i] = vec[2][i] = vec[4][i] = vec[5][i] = vec[6][i] = vec[7][i] = 0.0f;
    }
    for (t = 1; t <= 2; t++)
        for (cl = 0; cl <= 1; cl++) {
            int r = run_case(t, cl, buf, vec);
            if (r != 0) bad = 1;
        }
    for (i = 0; i < 4; i++) free(buf[i]);
    return bad;
}
