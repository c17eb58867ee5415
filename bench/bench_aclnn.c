/*
 * bench_aclnn.c - the aclnn rows of bench_ops: the same problem run through the
 * CANN-compatible API as a framework calls it, both phases on every repetition
 * (GetWorkspaceSize builds an executor, the op runs it on a stream), on the
 * process-wide aclnn pool, sized to the case's thread count through aclInit's
 * config file ({"syncbn": {"num_threads": T}}). Rows: "aclnn" is aclnnBatchNorm
 * (fwd-train, eval) or aclnnBatchNormBackward (bwd), to compare with the native
 * "syncbn" row; "aclnn-syncfwd" is the SyncBN forward of one rank,
 * aclnnBatchNormStats -> aclnnBatchNormGatherStatsWithCounts (W = 1) ->
 * aclnnBatchNormElemt, and "native-syncfwd" the same three native calls
 * (sbn_stats, sbn_gather_stats_with_counts, sbn_elemt) on a native pool of the
 * same size. Channels-last activations are NCHW views with NHWC strides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "bench.h"
#include "syncbn/ops.h"

struct aclnn_case {
    const bench_problem *p;
    bench_mode mode;
    int kind;
    sbn_pool_t *pool; /* BENCH_NATIVE_SYNCFWD */
    aclrtStream stream;
    aclTensor *x, *y, *dy, *dx, *w, *b, *rm, *rv, *sm, *si, *gw, *gb;
    aclTensor *mean1, *invstd1, *mean_row, *invstd_row, *counts, *mean_all, *invstd_all;
    aclBoolArray *mask;
    float mean[1 << 14], invstd[1 << 14], mall[1 << 14], iall[1 << 14], count_value;
    void *ws;
    size_t ws_bytes;
};

static int g_aclnn_threads; /* the size aclInit last gave the pool; 0: not initialised */

/* Re-initialises acl with a config file that sizes the aclnn pool to `threads`. */
static int set_aclnn_threads(int threads)
{
    char path[64];
    FILE *f;
    aclError ret;
    if (g_aclnn_threads == threads) return 0;
    if (g_aclnn_threads != 0) aclFinalize();
    g_aclnn_threads = 0;
    snprintf(path, sizeof path, "/tmp/bench_aclnn_%d.json", (int)getpid());
    f = fopen(path, "w");
    if (f == NULL) return -1;
    fprintf(f, "{\"syncbn\": {\"num_threads\": %d}}\n", threads);
    fclose(f);
    ret = aclInit(path);
    unlink(path);
    if (ret != ACL_SUCCESS) return -1;
    g_aclnn_threads = threads;
    return aclrtSetDevice(0) == ACL_SUCCESS ? 0 : -1;
}

/* An activation tensor over data: NCHW view, contiguous or with NHWC strides. */
static aclTensor *activation(const bench_problem *p, void *data)
{
    int64_t dims[4] = {p->n, p->c, p->h, p->w}, strides[4], storage = bench_numel(p);
    aclDataType dt = p->dtype == SBN_BF16 ? ACL_BF16
                     : p->dtype == SBN_F16 ? ACL_FLOAT16
                                           : ACL_FLOAT;
    int rank = p->rank;
    if (p->channels_last && rank == 4) {
        strides[0] = p->h * p->w * p->c;
        strides[1] = 1;
        strides[2] = p->w * p->c;
        strides[3] = p->c;
    } else {
        strides[3] = 1;
        strides[2] = p->w;
        strides[1] = p->h * p->w;
        strides[0] = p->c * p->h * p->w;
        if (rank == 2) {
            strides[0] = p->c;
            strides[1] = 1;
        }
    }
    return aclCreateTensor(dims, (uint64_t)rank, dt, strides, 0,
                           rank == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_ND, &storage, 1, data);
}

static aclTensor *vector(float *data, int64_t c, int row)
{
    int64_t dims[2] = {1, c}, strides[2] = {c, 1};
    return row ? aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, data)
               : aclCreateTensor(dims + 1, 1, ACL_FLOAT, strides + 1, 0, ACL_FORMAT_ND, dims + 1,
                                 1, data);
}

/* Grows the workspace to bytes (outside the timing when called from create). */
static int need_workspace(aclnn_case *k, uint64_t bytes)
{
    if (bytes <= k->ws_bytes) return 0;
    bench_free(k->ws, k->ws_bytes);
    k->ws = bench_alloc((size_t)bytes);
    k->ws_bytes = k->ws ? (size_t)bytes : 0;
    return k->ws ? 0 : -1;
}

#define PHASES(get, run)                                               \
    do {                                                               \
        uint64_t ws_ = 0;                                              \
        aclOpExecutor *ex_ = NULL;                                     \
        if ((get) != ACLNN_SUCCESS) return -1;                         \
        if (need_workspace(k, ws_) != 0) return -1;                    \
        if (run(k->ws, ws_, ex_, k->stream) != ACLNN_SUCCESS) return -1; \
    } while (0)

static int run_native_syncfwd(aclnn_case *k)
{
    const bench_problem *p = k->p;
    int64_t shp[4] = {p->n, p->c, p->h, p->w};
    sbn_tensor x = p->channels_last
                       ? sbn_tensor_channels_last(p->x, p->dtype, p->rank, shp)
                       : sbn_tensor_contiguous(p->x, p->dtype, p->rank, shp);
    sbn_tensor y = p->channels_last
                       ? sbn_tensor_channels_last(p->y, p->dtype, p->rank, shp)
                       : sbn_tensor_contiguous(p->y, p->dtype, p->rank, shp);
    int64_t row[2] = {1, p->c};
    sbn_tensor mean = sbn_tensor_1d(k->mean, SBN_F32, p->c),
               invstd = sbn_tensor_1d(k->invstd, SBN_F32, p->c),
               mean_row = sbn_tensor_contiguous(k->mean, SBN_F32, 2, row),
               invstd_row = sbn_tensor_contiguous(k->invstd, SBN_F32, 2, row),
               counts = sbn_tensor_1d(&k->count_value, SBN_F32, 1),
               mall = sbn_tensor_1d(k->mall, SBN_F32, p->c),
               iall = sbn_tensor_1d(k->iall, SBN_F32, p->c),
               rm = sbn_tensor_1d(p->run_mean, SBN_F32, p->c),
               rv = sbn_tensor_1d(p->run_var, SBN_F32, p->c),
               w = sbn_tensor_1d(p->weight, SBN_F32, p->c),
               b = sbn_tensor_1d(p->bias, SBN_F32, p->c);
    if (SBN_FAILED(sbn_stats(&x, p->eps, &mean, &invstd, k->ws, k->ws_bytes, k->pool))) return -1;
    if (SBN_FAILED(sbn_gather_stats_with_counts(&mean_row, &invstd_row, &counts, 0.1, p->eps, &rm,
                                                &rv, &mall, &iall, k->ws, k->ws_bytes, k->pool)))
        return -1;
    return SBN_FAILED(sbn_elemt(&x, &mall, &iall, &w, &b, &y, k->ws, k->ws_bytes, k->pool)) ? -1
                                                                                             : 0;
}

int aclnn_case_run(void *ctx)
{
    aclnn_case *k = ctx;
    const bench_problem *p = k->p;
    if (k->kind == BENCH_NATIVE_SYNCFWD) return run_native_syncfwd(k);
    if (k->kind == BENCH_ACLNN_SYNCFWD) {
        PHASES(aclnnBatchNormStatsGetWorkspaceSize(k->x, p->eps, k->mean1, k->invstd1, &ws_, &ex_),
               aclnnBatchNormStats);
        PHASES(aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
                   k->x, k->mean_row, k->invstd_row, k->rm, k->rv, 0.1, p->eps, k->counts,
                   k->mean_all, k->invstd_all, &ws_, &ex_),
               aclnnBatchNormGatherStatsWithCounts);
        PHASES(aclnnBatchNormElemtGetWorkspaceSize(k->x, k->w, k->b, k->mean_all, k->invstd_all,
                                                   p->eps, k->y, &ws_, &ex_),
               aclnnBatchNormElemt);
        return 0;
    }
    switch (k->mode) {
    case BENCH_FWD:
        PHASES(aclnnBatchNormGetWorkspaceSize(k->x, k->w, k->b, k->rm, k->rv, true, 0.1, p->eps,
                                              k->y, k->sm, k->si, &ws_, &ex_),
               aclnnBatchNorm);
        return 0;
    case BENCH_EVAL:
        PHASES(aclnnBatchNormGetWorkspaceSize(k->x, k->w, k->b, k->rm, k->rv, false, 0.1, p->eps,
                                              k->y, NULL, NULL, &ws_, &ex_),
               aclnnBatchNorm);
        return 0;
    case BENCH_BWD:
        PHASES(aclnnBatchNormBackwardGetWorkspaceSize(k->dy, k->x, k->w, NULL, NULL, k->sm, k->si,
                                                      true, p->eps, k->mask, k->dx, k->gw, k->gb,
                                                      &ws_, &ex_),
               aclnnBatchNormBackward);
        return 0;
    }
    return -1;
}

void aclnn_case_destroy(aclnn_case *k)
{
    size_t i;
    if (k == NULL) return; /* before any &k->member: on a null k that is undefined already */
    aclTensor *all[] = {k->x,     k->y,       k->dy,       k->dx,         k->w,
                        k->b,     k->rm,      k->rv,       k->sm,         k->si,
                        k->gw,    k->gb,      k->mean1,    k->invstd1,    k->mean_row,
                        k->invstd_row, k->counts, k->mean_all, k->invstd_all};
    for (i = 0; i < sizeof all / sizeof all[0]; i++) aclDestroyTensor(all[i]);
    aclDestroyBoolArray(k->mask);
    if (k->stream != NULL) aclrtDestroyStream(k->stream);
    bench_free(k->ws, k->ws_bytes);
    free(k);
}

aclnn_case *aclnn_case_create(const bench_problem *p, bench_mode mode, int kind, sbn_pool_t *pool,
                              char *why, size_t why_len)
{
    bool mask[3] = {true, true, true};
    aclnn_case *k;
    if (p->c > (1 << 14)) {
        snprintf(why, why_len, "C > 16384");
        return NULL;
    }
    if (kind != BENCH_ACLNN_BN && mode != BENCH_FWD) {
        snprintf(why, why_len, "fwd-train only");
        return NULL;
    }
    if (kind != BENCH_NATIVE_SYNCFWD && set_aclnn_threads(p->threads) != 0) {
        snprintf(why, why_len, "aclInit with %d threads failed: %s", p->threads,
                 aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "?");
        return NULL;
    }
    k = calloc(1, sizeof *k);
    if (k == NULL) return NULL;
    k->p = p;
    k->mode = mode;
    k->kind = kind;
    k->pool = pool;
    k->count_value = (float)(p->n * p->h * p->w);
    k->x = activation(p, p->x);
    k->y = activation(p, p->y);
    k->dy = activation(p, p->dy);
    k->dx = activation(p, p->dx);
    k->w = vector(p->weight, p->c, 0);
    k->b = vector(p->bias, p->c, 0);
    k->rm = vector(p->run_mean, p->c, 0);
    k->rv = vector(p->run_var, p->c, 0);
    k->sm = vector(p->save_mean, p->c, 0);
    k->si = vector(p->save_invstd, p->c, 0);
    k->gw = vector(p->grad_weight, p->c, 0);
    k->gb = vector(p->grad_bias, p->c, 0);
    k->mean1 = vector(k->mean, p->c, 0);
    k->invstd1 = vector(k->invstd, p->c, 0);
    k->mean_row = vector(k->mean, p->c, 1);
    k->invstd_row = vector(k->invstd, p->c, 1);
    k->counts = vector(&k->count_value, 1, 0);
    k->mean_all = vector(k->mall, p->c, 0);
    k->invstd_all = vector(k->iall, p->c, 0);
    k->mask = aclCreateBoolArray(mask, 3);
    if (kind == BENCH_NATIVE_SYNCFWD) {
        int64_t shp[4] = {p->n, p->c, p->h, p->w};
        sbn_tensor x = sbn_tensor_contiguous(p->x, p->dtype, p->rank, shp);
        int64_t row[2] = {1, p->c};
        sbn_tensor mean_row = sbn_tensor_contiguous(k->mean, SBN_F32, 2, row);
        size_t a = 0, b = 0, g = 0;
        sbn_stats_workspace_size(&x, &a);
        sbn_elemt_workspace_size(&x, &b);
        sbn_gather_stats_with_counts_workspace_size(&mean_row, &g);
        if (b > a) a = b;
        need_workspace(k, g > a ? g : a);
    } else if (kind != BENCH_NATIVE_SYNCFWD && aclrtCreateStream(&k->stream) != ACL_SUCCESS) {
        snprintf(why, why_len, "aclrtCreateStream failed");
        aclnn_case_destroy(k);
        return NULL;
    }
    /* a first run: grows the workspace and checks that the calls work */
    if (aclnn_case_run(k) != 0) {
        const char *msg = kind == BENCH_NATIVE_SYNCFWD ? sbn_last_error() : aclGetRecentErrMsg();
        snprintf(why, why_len, "first run failed: %s", msg ? msg : "?");
        aclnn_case_destroy(k);
        return NULL;
    }
    return k;
}
