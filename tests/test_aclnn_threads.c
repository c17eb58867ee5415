/*
 * test_aclnn_threads.c - the process-wide thread pool of the aclnn ops (issue 12):
 * its size from the aclInit config file ({"syncbn": {"num_threads": N}}), from
 * SBN_NUM_THREADS, else from the CPUs of the affinity mask (narrowed with
 * sched_setaffinity); aclFinalize drops it and aclrtSetDevice creates it; every
 * one of the eleven aclnn ops gives the same bits with 1, 2 and 3 pool threads and
 * from two and three host threads running on their own streams at once (all on the
 * one pool); an op on a destroyed stream is refused and leaves its executor alive
 * for a retry on a live stream. Each case runs in its own process (the harness
 * forks), so each starts without a pool.
 */
#define _GNU_SOURCE /* sched_setaffinity, setenv */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/aclnn_internal.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_batch_norm_reduce.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "aclnnop/aclnn_fast_batch_norm_backward.h"
#include "aclnnop/aclnn_sync_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"
#include "aclnn_support.h"
#include "core/machine.h"
#include "harness/harness.h"
#include "support/env_now.h"

/* Large enough for the native ops to split over threads (chunks of N x HW). */
enum { N = 8, C = 6, H = 40, W = 40, HW = H * W, NX = N * C * HW, WORLD = 2 };

/* Every output of the nine ops, compared bit for bit. */
typedef struct outputs {
    float mean[C], invstd[C];                   /* Stats */
    float mean_all[C], invstd_all[C], rm[C], rv[C]; /* GatherStatsWithCounts */
    float y[NX];                                /* Elemt */
    float sum_dy[C], sum_dy_xmu[C], gw[C], gb[C]; /* ReduceBackward */
    float gi[NX];                               /* ElemtBackward */
    float out[NX], save_mean[C], save_invstd[C], rm2[C], rv2[C]; /* BatchNorm */
    float gi2[NX], gw2[C], gb2[C];              /* BatchNormBackward */
    float sum[C], sq[C];                        /* BatchNormReduce */
    float smean[C], svar[C], bmean[C], binv[C]; /* SyncBatchNormGatherStats */
    float gi3[NX], gw3[C], gb3[C];              /* FastBatchNormBackward */
    float sdxmu[C], ry[C];                      /* SyncBatchNormBackwardReduce */
} outputs;

static float g_x[NX], g_dy[NX];

static void fill_inputs(void)
{
    uint64_t s = 12345;
    int64_t i;
    for (i = 0; i < NX; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        g_x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 4.0 - 1.5);
        g_dy[i] = (float)((double)((s >> 20) & 0xFFFFF) / (double)(1u << 20) - 0.5);
    }
}

static aclTensor *tensor(void *data, int rank, const int64_t *shape, aclDataType dt)
{
    int64_t strides[4], n = 1;
    int d;
    for (d = rank - 1; d >= 0; d--) {
        strides[d] = n;
        n *= shape[d];
    }
    return aclCreateTensor(shape, (uint64_t)rank, dt, strides, 0,
                           rank == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_ND, shape, (uint64_t)rank,
                           data);
}

static const int64_t k_x_shape[4] = {N, C, H, W}, k_c[1] = {C}, k_wc[2] = {WORLD, C},
                     k_w[1] = {WORLD};

#define VEC(p) tensor((p), 1, k_c, ACL_FLOAT)
#define BIG(p) tensor((p), 4, k_x_shape, ACL_FLOAT)

/* Phase 2 of the op whose phase 1 just ran; the workspace is malloc'ed. */
static aclnnStatus phase2(atsup_phase2_fn fn, uint64_t ws, aclOpExecutor *ex, aclrtStream st)
{
    void *w = ws ? malloc(ws) : NULL;
    aclnnStatus s = fn(w, ws, ex, st);
    free(w);
    return s;
}

#define RUN(ret, call, fn)                                               \
    do {                                                                 \
        uint64_t ws_ = 0;                                                \
        aclOpExecutor *ex_ = NULL;                                       \
        ret = call;                                                      \
        if (ret == ACLNN_SUCCESS) ret = phase2(fn, ws_, ex_, stream);    \
    } while (0)

/* The eleven ops in a SyncBN forward/backward order on stream; 0 when all succeed. */
static int run_all_ops(outputs *o, aclrtStream stream)
{
    float weight[C], bias[C], mean2[WORLD * C], inv2[WORLD * C], counts[WORLD], counter[WORLD];
    float tsum[WORLD * C], tsq[WORLD * C], scount[WORLD];
    bool mask_values[3] = {true, true, true};
    aclBoolArray *mask = aclCreateBoolArray(mask_values, 3);
    aclTensor *x = BIG(g_x), *dy = BIG(g_dy), *y = BIG(o->y), *gi = BIG(o->gi),
              *out = BIG(o->out), *gi2 = BIG(o->gi2);
    aclTensor *t_w = VEC(weight), *t_b = VEC(bias), *mean = VEC(o->mean), *inv = VEC(o->invstd);
    aclTensor *m2 = tensor(mean2, 2, k_wc, ACL_FLOAT), *i2 = tensor(inv2, 2, k_wc, ACL_FLOAT);
    aclTensor *cnt = tensor(counts, 1, k_w, ACL_FLOAT), *ctr = tensor(counter, 1, k_w, ACL_FLOAT);
    aclTensor *mall = VEC(o->mean_all), *iall = VEC(o->invstd_all), *rm = VEC(o->rm),
              *rv = VEC(o->rv);
    aclTensor *sdy = VEC(o->sum_dy), *sdx = VEC(o->sum_dy_xmu), *gw = VEC(o->gw), *gb = VEC(o->gb);
    aclTensor *smean = VEC(o->save_mean), *sinv = VEC(o->save_invstd), *rm2 = VEC(o->rm2),
              *rv2 = VEC(o->rv2), *gw2 = VEC(o->gw2), *gb2 = VEC(o->gb2);
    aclTensor *sum = VEC(o->sum), *sq = VEC(o->sq);
    aclTensor *gi3 = BIG(o->gi3), *gw3 = VEC(o->gw3), *gb3 = VEC(o->gb3), *sdxmu = VEC(o->sdxmu),
              *ry = VEC(o->ry);
    aclTensor *ts = tensor(tsum, 2, k_wc, ACL_FLOAT), *tq = tensor(tsq, 2, k_wc, ACL_FLOAT),
              *sc = tensor(scount, 1, k_w, ACL_FLOAT), *sm = VEC(o->smean), *sv = VEC(o->svar),
              *bm = VEC(o->bmean), *bi = VEC(o->binv);
    aclnnStatus s;
    int c, bad = 0;

    for (c = 0; c < C; c++) {
        weight[c] = 1.0f + 0.25f * (float)c;
        bias[c] = 0.5f - 0.125f * (float)c;
        o->rm[c] = o->rm2[c] = o->smean[c] = 0.1f * (float)c;
        o->rv[c] = o->rv2[c] = o->svar[c] = 1.0f + 0.05f * (float)c;
    }
    RUN(s, aclnnBatchNormStatsGetWorkspaceSize(x, 1e-5, mean, inv, &ws_, &ex_),
        aclnnBatchNormStats);
    bad |= s != ACLNN_SUCCESS;
    for (c = 0; c < C; c++) { /* two ranks: this one and a shifted copy */
        mean2[c] = o->mean[c];
        inv2[c] = o->invstd[c];
        mean2[C + c] = o->mean[c] + 0.5f;
        inv2[C + c] = o->invstd[c] * 0.75f;
    }
    counts[0] = (float)(N * HW);
    counts[1] = (float)(N * HW / 2);
    counter[0] = counter[1] = (float)(N * HW);
    RUN(s,
        aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(x, m2, i2, rm, rv, 0.1, 1e-5, cnt,
                                                            mall, iall, &ws_, &ex_),
        aclnnBatchNormGatherStatsWithCounts);
    bad |= s != ACLNN_SUCCESS;
    RUN(s, aclnnBatchNormElemtGetWorkspaceSize(x, t_w, t_b, mall, iall, 1e-5, y, &ws_, &ex_),
        aclnnBatchNormElemt);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnBatchNormReduceBackwardGetWorkspaceSize(dy, x, mall, iall, t_w, true, true, true,
                                                     sdy, sdx, gw, gb, &ws_, &ex_),
        aclnnBatchNormReduceBackward);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnBatchNormElemtBackwardGetWorkspaceSize(dy, x, mall, iall, t_w, sdy, sdx, ctr, gi,
                                                    &ws_, &ex_),
        aclnnBatchNormElemtBackward);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnBatchNormGetWorkspaceSize(x, t_w, t_b, rm2, rv2, true, 0.1, 1e-5, out, smean, sinv,
                                       &ws_, &ex_),
        aclnnBatchNorm);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnBatchNormBackwardGetWorkspaceSize(dy, x, t_w, rm2, rv2, smean, sinv, true, 1e-5, mask,
                                               gi2, gw2, gb2, &ws_, &ex_),
        aclnnBatchNormBackward);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnFastBatchNormBackwardGetWorkspaceSize(dy, x, t_w, rm2, rv2, smean, sinv, true, 1e-5,
                                                   mask, 0, gi3, gw3, gb3, &ws_, &ex_),
        aclnnFastBatchNormBackward);
    bad |= s != ACLNN_SUCCESS;
    RUN(s,
        aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(sdy, sdx, mall, iall, sdxmu, ry, &ws_,
                                                         &ex_),
        aclnnSyncBatchNormBackwardReduce);
    bad |= s != ACLNN_SUCCESS;
    RUN(s, aclnnBatchNormReduceGetWorkspaceSize(x, sum, sq, &ws_, &ex_), aclnnBatchNormReduce);
    bad |= s != ACLNN_SUCCESS;
    for (c = 0; c < C; c++) {
        tsum[c] = o->sum[c];
        tsq[c] = o->sq[c];
        tsum[C + c] = o->sum[c] * 0.5f;
        tsq[C + c] = o->sq[c] * 0.5f;
    }
    scount[0] = (float)(N * HW);
    scount[1] = (float)(N * HW / 2);
    RUN(s,
        aclnnSyncBatchNormGatherStatsGetWorkspaceSize(ts, tq, sc, sm, sv, 0.1f, 1e-5f, bm, bi,
                                                      &ws_, &ex_),
        aclnnSyncBatchNormGatherStats);
    bad |= s != ACLNN_SUCCESS;
    if (bad) printf("    an op failed: %s\n", atsup_msg());

    aclDestroyBoolArray(mask);
    {
        aclTensor *all[] = {x,   dy,   y,   gi,  out, gi2, t_w, t_b, mean, inv, m2,  i2, cnt,
                            ctr, mall, iall, rm, rv,  sdy, sdx, gw,  gb,   smean, sinv, rm2,
                            rv2, gw2,  gb2, sum, sq,  ts,  tq,  sc,  sm,   sv,  bm,  bi,
                            gi3, gw3,  gb3, sdxmu, ry};
        size_t k;
        for (k = 0; k < sizeof all / sizeof all[0]; k++) aclDestroyTensor(all[k]);
    }
    return bad;
}

/* Writes a config file with the given text; returns its path (static storage). */
static const char *config_file(const char *text)
{
    static char path[64];
    FILE *f;
    snprintf(path, sizeof path, "/tmp/sbn_threads_%d.json", (int)getpid());
    f = fopen(path, "w");
    if (f == NULL) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

/* aclInit with {"syncbn": {"num_threads": n}}; 1 when it succeeded. */
static int init_with_threads(int n)
{
    char text[96];
    const char *path;
    aclError ret;
    snprintf(text, sizeof text, "{\"dump\": {}, \"syncbn\": {\"num_threads\": %d}}", n);
    path = config_file(text);
    if (path == NULL) return 0;
    ret = aclInit(path);
    unlink(path);
    return ret == ACL_SUCCESS;
}

static outputs g_serial, g_other;

static void same_bits_for_1_2_3_threads(void)
{
    int n;
    fill_inputs();
    for (n = 1; n <= 3; n++) {
        outputs *o = n == 1 ? &g_serial : &g_other;
        CHECK(init_with_threads(n));
        CHECK_MSG(sbn__acl_pool_threads() == n, "pool of %d threads, expected %d",
                  sbn__acl_pool_threads(), n);
        memset(o, 0xA5, sizeof *o);
        CHECK(run_all_ops(o, NULL) == 0);
        if (n > 1) CHECK_MSG(memcmp(o, &g_serial, sizeof *o) == 0, "%d threads differ", n);
        CHECK(aclFinalize() == ACL_SUCCESS);
    }
}

static void size_from_environment(void)
{
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "3") == 0);
    CHECK(sbn__acl_pool_threads() == 3);
    /* the config file comes first */
    CHECK(init_with_threads(2));
    CHECK(sbn__acl_pool_threads() == 2);
    /* aclFinalize forgets it: the environment again */
    CHECK(aclFinalize() == ACL_SUCCESS);
    CHECK(sbn__acl_pool_threads() == 3);
}

/* The CPU quota of this process's cgroup (0: none) and the default pool it gives now. */
static double quota(void)
{
    return sbn__machine_get()->cpu_quota;
}

static int cpus_now(void)
{
    return sbn__default_cpus();
}

static void bad_environment_is_ignored(void)
{
    const char *bad[] = {"0", "-2", "lots", "3x", "1025", ""};
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK(tsup_setenv_now("SBN_NUM_THREADS", bad[k]) == 0);
        CHECK_MSG(sbn__acl_pool_default_threads() == cpus_now(),
                  "SBN_NUM_THREADS=\"%s\" gave %d threads", bad[k],
                  sbn__acl_pool_default_threads());
    }
}

static void size_from_affinity_mask(void)
{
    cpu_set_t all, one;
    tsup_unsetenv_now("SBN_NUM_THREADS");
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    CHECK(sbn__affinity_cpus() == CPU_COUNT(&all));
    CHECK(sbn__acl_pool_default_threads() == cpus_now());
    if (sbn__local_ranks(NULL) == 1) /* no launcher's share: the mask within the quota */
        CHECK(sbn__acl_pool_default_threads() == sbn__cpus_within_quota(CPU_COUNT(&all), quota()));
    /* one CPU allowed: a pool of one (serial) */
    CPU_ZERO(&one);
    CHECK(sched_getcpu() >= 0);
    CPU_SET(sched_getcpu(), &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(sbn__affinity_cpus() == 1);
    CHECK(sbn__acl_pool_threads() == 1);
}

static void set_device_creates_the_pool(void)
{
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "2") == 0);
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS);
    /* the pool exists now: a new default does not change it until aclFinalize */
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "3") == 0);
    CHECK(sbn__acl_pool_threads() == 2);
    CHECK(aclInit(NULL) == ACL_SUCCESS);
    CHECK(aclFinalize() == ACL_SUCCESS);
    CHECK(sbn__acl_pool_threads() == 3);
    CHECK(aclrtResetDevice(0) == ACL_SUCCESS);
}

/* An op's phase 2 creates the pool (the size is fixed from then on). */
static void ops_run_on_the_pool(void)
{
    fill_inputs();
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "2") == 0);
    CHECK(run_all_ops(&g_other, NULL) == 0);
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "3") == 0);
    CHECK_MSG(sbn__acl_pool_threads() == 2, "the ops did not create the pool");
}

typedef struct host_thread {
    int rounds;
    int mismatches, failures;
    outputs out;
} host_thread;

static void *run_on_own_stream(void *arg)
{
    host_thread *h = (host_thread *)arg;
    aclrtStream stream = NULL;
    int r;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&stream) != ACL_SUCCESS) {
        h->failures++;
        return NULL;
    }
    for (r = 0; r < h->rounds; r++) {
        memset(&h->out, 0x5A, sizeof h->out);
        if (run_all_ops(&h->out, stream) != 0) h->failures++;
        if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) h->failures++;
        if (memcmp(&h->out, &g_serial, sizeof h->out) != 0) h->mismatches++;
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    return NULL;
}

/* n host threads at once on a pool of pool_threads; each must match the serial bits. */
static int host_threads_match(int n, int pool_threads)
{
    pthread_t th[3];
    static host_thread h[3];
    int k, bad = 0;
    fill_inputs();
    if (!init_with_threads(1)) return 0;
    memset(&g_serial, 0, sizeof g_serial);
    if (run_all_ops(&g_serial, NULL) != 0) return 0;
    aclFinalize();
    if (!init_with_threads(pool_threads)) return 0;
    for (k = 0; k < n; k++) {
        memset(&h[k], 0, sizeof h[k]);
        h[k].rounds = 3;
        if (pthread_create(&th[k], NULL, run_on_own_stream, &h[k]) != 0) return 0;
    }
    for (k = 0; k < n; k++) {
        pthread_join(th[k], NULL);
        if (h[k].failures || h[k].mismatches) {
            printf("    host thread %d: %d failures, %d mismatches\n", k, h[k].failures,
                   h[k].mismatches);
            bad = 1;
        }
    }
    aclFinalize();
    return !bad;
}

static void two_host_threads_same_bits(void)
{
    CHECK(host_threads_match(2, 2));
}

static void three_host_threads_on_three_pool_threads(void)
{
    CHECK(host_threads_match(3, 3));
}

static void destroyed_stream_is_refused(void)
{
    float x[2 * C * 4], mean[C], inv[C];
    int64_t shape[4] = {2, C, 2, 2};
    aclTensor *tx, *tm, *ti;
    aclrtStream stream;
    aclOpExecutor *ex = NULL;
    uint64_t ws = 0;
    void *w;
    int i;
    for (i = 0; i < 2 * C * 4; i++) x[i] = (float)i;
    tx = tensor(x, 4, shape, ACL_FLOAT);
    tm = VEC(mean);
    ti = VEC(inv);
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS); /* streams need a current device */
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS);
    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS);
    CHECK(aclnnBatchNormStatsGetWorkspaceSize(tx, 1e-5, tm, ti, &ws, &ex) == ACLNN_SUCCESS);
    w = malloc(ws ? ws : 1);
    mean[0] = -7.0f;
    CHECK_ACL(aclnnBatchNormStats(w, ws, ex, stream), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("destroyed"));
    CHECK(mean[0] == -7.0f); /* nothing ran */
    /* the executor is still alive: run it on the default stream */
    CHECK_ACL(aclnnBatchNormStats(w, ws, ex, NULL), ACLNN_SUCCESS);
    CHECK(mean[0] == 13.5f); /* channel 0 holds 0..3 and 24..27 */
    free(w);
    aclDestroyTensor(tx);
    aclDestroyTensor(tm);
    aclDestroyTensor(ti);
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(same_bits_for_1_2_3_threads),
    SBN_TEST_CASE(size_from_environment),
    SBN_TEST_CASE(bad_environment_is_ignored),
    SBN_TEST_CASE(size_from_affinity_mask),
    SBN_TEST_CASE(set_device_creates_the_pool),
    SBN_TEST_CASE(ops_run_on_the_pool),
    SBN_TEST_CASE(two_host_threads_same_bits),
    SBN_TEST_CASE(three_host_threads_on_three_pool_threads),
    SBN_TEST_CASE(destroyed_stream_is_refused),
};

SBN_TEST_MAIN(cases)
