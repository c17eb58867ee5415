/*
 * test_aclnn_gather.c - aclnnBatchNormGatherStatsWithCounts and
 * aclnnSyncBatchNormGatherStats through the aclnn API. Each op: every documented
 * status with the argument that triggers it (each NULL, dtypes outside the lists
 * including integer types, the equal-dtype rules, private formats, ranks, every
 * dim mismatch, W == 0) and the message naming it; the check order when two
 * arguments are wrong; empty W and C; FLOAT, FLOAT16 and BF16 tensors (mixed),
 * strided, transposed and offset, against the double oracle (ref_merge, or the
 * sum formulas) on the values as stored, with the running statistics (unbiased
 * variance; each running tensor of WithCounts optional on its own; N == 0 and
 * N == 1); the CANN doc examples (WithCounts reading A of aclnn-spec.md section 3,
 * SyncBatchNormGatherStats section 2.3); phase-2 value errors (negative counts);
 * the executor rules and a repeatable executor on new addresses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"
#include "ref/ref.h"

#define F ACL_FLOAT
#define F16 ACL_FLOAT16
#define ND ACL_FORMAT_ND
#define PRIV ACL_FORMAT_NC1HWC0
#define E_NULL ACLNN_ERR_PARAM_NULLPTR
#define E_INVALID ACLNN_ERR_PARAM_INVALID

static const aclDataType k_floats[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* Relative tolerance of a value stored in dtype after an exact double computation. */
static double out_tol(aclDataType dtype)
{
    sbn_dtype sd = SBN_F32;
    atsup_native_dtype(dtype, &sd);
    return 2.0 * tsup_unit_roundoff(sd) + 1e-12;
}

/* ---------------- aclnnBatchNormGatherStatsWithCounts ---------------- */

/* Tensor slots in signature order. */
enum { G_IN, G_MEAN, G_INV, G_RM, G_RV, G_CNT, G_MALL, G_IALL, G_N };

static aclnnStatus wc_call_eps(aclTensor *const *a, double momentum, double eps, int null_ws,
                               int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
        a[G_IN], a[G_MEAN], a[G_INV], a[G_RM], a[G_RV], momentum, eps, a[G_CNT], a[G_MALL],
        a[G_IALL], null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnBatchNormGatherStatsWithCounts, ws, ex);
}

static aclnnStatus wc_call(aclTensor *const *a, int null_ws, int null_ex)
{
    return wc_call_eps(a, 0.1, 1e-5, null_ws, null_ex);
}

static void test_with_counts_doc_example(void)
{
    static const int64_t in_shape[] = {2, 4, 2}, wc[] = {4, 4};
    static const double counts[] = {1, 2, 3, 4}, rm0[] = {1, 2, 3, 4}, rv0[] = {5, 6, 7, 8};
    static const double want[4][4] = {
        {.8, 1.1, 1.4, 1.7},
        {.601022608, .493965208, .413508024, .353148972},
        {.998, 1.991, 2.984, 3.977},
        {4.98075815, 5.98553593, 6.99498037, 8.00909148}};
    double mean[16] = {0, 1, 2, 3, 4, 5, 6, 7}, invstd[16], got[4];
    atsup_tensor t[G_N];
    aclTensor *a[G_N];
    int i;
    for (i = 0; i < 16; i++) invstd[i] = i / 4 + 1;
    t[G_IN] = atsup_plain(F, 3, in_shape, NULL);
    t[G_MEAN] = atsup_plain(F, 2, wc, mean);
    t[G_INV] = atsup_plain(F, 2, wc, invstd);
    t[G_RM] = atsup_vec(F, 4, rm0);
    t[G_RV] = atsup_vec(F, 4, rv0);
    t[G_CNT] = atsup_vec(F, 4, counts);
    t[G_MALL] = atsup_vec(F, 4, NULL);
    t[G_IALL] = atsup_vec(F, 4, NULL);
    atsup_handles(t, a, G_N);
    CHECK_ACL(wc_call_eps(a, 0.01, 1e-4, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[G_MALL], got);
    CHECK(tsup_close("meanAll", got, want[0], 4, 0.0, 1e-6));
    atsup_read(&t[G_IALL], got);
    CHECK(tsup_close("invstdAll", got, want[1], 4, 0.0, 1e-6));
    atsup_read(&t[G_RM], got);
    CHECK(tsup_close("runningMean", got, want[2], 4, 0.0, 1e-6));
    atsup_read(&t[G_RV], got);
    CHECK(tsup_close("runningVar (unbiased)", got, want[3], 4, 0.0, 1e-6));
    atsup_free_n(t, G_N);
}

/*
 * W ranks of (mean, var) per channel, stored as mean/invstd in dtype `dt` (strided
 * at an offset, and transposed), counts in `cdt`, outputs in `odt`, running stats
 * in `rdt`, each running tensor present per `running` (bit 0 mean, bit 1 var).
 */
static void check_with_counts(aclDataType dt, aclDataType cdt, aclDataType odt, aclDataType rdt,
                              int running, const double *counts, int64_t w, uint64_t seed)
{
    const int64_t c = 5, in_shape[] = {3, 5, 2}, wcs[] = {w, c};
    const double momentum = 0.125, eps = 1e-3, eps_f = (double)(float)eps;
    double *m = atsup_normal(seed, w * c, 0.5, 2.0, dt);
    double *v = atsup_normal(seed + 1, w * c, 0, 1, F);
    double *inv = malloc(sizeof(double) * (size_t)(w * c) * 3), *ms = inv + w * c, *vs = ms + w * c;
    double rm[5], rv[5], want[4][5], got[5], biased[5];
    atsup_tensor t[G_N], rm_t, rv_t;
    aclTensor *a[G_N];
    int64_t i;
    for (i = 0; i < w * c; i++) inv[i] = 1.0 / sqrt(0.5 + fabs(v[i]) + eps);
    for (i = 0; i < c; i++) {
        rm[i] = 0.25 * (double)i - 0.5;
        rv[i] = 1.0 + 0.5 * (double)i;
    }
    t[G_IN] = atsup_make(ACL_BF16, 3, in_shape, TSUP_CHANNELS_LAST, ATSUP_PLAIN, ND, NULL);
    t[G_MEAN] = atsup_make(dt, 2, wcs, TSUP_STRIDED, ATSUP_OFFSET, ND, m);
    t[G_INV] = atsup_make(dt, 2, wcs, TSUP_CHANNELS_LAST, ATSUP_OFFSET, ND, inv);
    rm_t = atsup_make(rdt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, rm);
    rv_t = atsup_make(rdt, 1, &c, TSUP_STRIDED, ATSUP_PLAIN, ND, rv);
    t[G_RM] = rm_t;
    t[G_RV] = rv_t;
    t[G_CNT] = atsup_make(cdt, 1, &w, TSUP_STRIDED, ATSUP_OFFSET, ND, counts);
    t[G_MALL] = atsup_make(odt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    t[G_IALL] = atsup_make(odt, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_OFFSET, ND, NULL);
    atsup_handles(t, a, G_N);
    if (!(running & 1)) a[G_RM] = NULL;
    if (!(running & 2)) a[G_RV] = NULL;
    /* the oracle on the stored values: var_j = invstd_j^-2 - eps (eps as a float) */
    atsup_read(&t[G_MEAN], ms);
    atsup_read(&t[G_INV], vs);
    for (i = 0; i < w * c; i++) vs[i] = 1.0 / (vs[i] * vs[i]) - eps_f;
    atsup_read(&rm_t, want[2]);
    atsup_read(&rv_t, want[3]);
    ref_merge(ms, vs, counts, w, c, (double)(float)momentum, want[0], biased, want[2], want[3]);
    for (i = 0; i < c; i++) want[1][i] = 1.0 / sqrt(biased[i] + eps_f);
    if (!(running & 1)) atsup_read(&rm_t, want[2]);
    if (!(running & 2)) atsup_read(&rv_t, want[3]);

    CHECK_ACL(wc_call_eps(a, momentum, eps, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[G_MALL], got);
    CHECK(tsup_close("meanAll", got, want[0], c, 1e-30, out_tol(odt)));
    atsup_read(&t[G_IALL], got);
    CHECK(tsup_close("invstdAll", got, want[1], c, 0.0, out_tol(odt)));
    atsup_read(&rm_t, got);
    CHECK(tsup_close("runningMean", got, want[2], c, 0.0, out_tol(rdt)));
    atsup_read(&rv_t, got);
    CHECK(tsup_close("runningVar", got, want[3], c, 0.0, out_tol(rdt)));
    for (i = 0; i < G_N; i++) CHECK_MSG(atsup_guard_ok(&t[i]), "tensor %d written outside", (int)i);
    atsup_free_n(t, G_N);
    TSUP_FREE_ALL(m, v, inv);
}

static void test_with_counts_oracle(void)
{
    static const double counts[] = {4, 0, 7, 1};
    int d, running;
    for (d = 0; d < 3; d++)
        for (running = 0; running < 4; running++) {
            check_with_counts(k_floats[d], k_floats[(d + 1) % 3], k_floats[(d + 2) % 3],
                              d == 1 ? F16 : F, running, counts, 4, 10 * (uint64_t)d);
            RETURN_IF_FAILED();
        }
    /* one sample in all: runningMean moves, runningVar stays (M2/(N-1) is undefined) */
    check_with_counts(F, F, F, F, 3, counts + 3, 1, 77);
}

/* Empty mean (W == 0), empty input, C == 0. */
static void test_with_counts_empty(void)
{
    static const int64_t in0[] = {0, 4, 2}, in4[] = {2, 4}, w0[] = {0, 4}, cn0[] = {2, 0};
    static const int64_t wc0[] = {3, 0};
    static const double seven[] = {7, 7, 7, 7}, ones[] = {1, 2, 3};
    atsup_tensor t[G_N], in_e, in_c0, m_c0, cnt3, o0a, o0b;
    unsigned char *snap_rm, *snap_rv;
    aclTensor *a[G_N];
    double got[4];
    int i;
    t[G_IN] = atsup_plain(F, 2, in4, NULL);
    t[G_MEAN] = atsup_plain(F, 2, w0, NULL);
    t[G_INV] = atsup_plain(F16, 2, w0, NULL);
    t[G_RM] = atsup_vec(F, 4, seven);
    t[G_RV] = atsup_vec(F, 4, seven);
    t[G_CNT] = atsup_vec(F, 0, NULL);
    t[G_MALL] = atsup_vec(F, 4, seven);
    t[G_IALL] = atsup_vec(ACL_BF16, 4, seven);
    in_e = atsup_plain(F, 3, in0, NULL);
    in_c0 = atsup_plain(F, 2, cn0, NULL);
    m_c0 = atsup_plain(F, 2, wc0, NULL);
    cnt3 = atsup_vec(F, 3, ones);
    o0a = atsup_vec(F, 0, NULL);
    o0b = atsup_vec(F, 0, NULL);
    snap_rm = tsup_snapshot(&t[G_RM].buf);
    snap_rv = tsup_snapshot(&t[G_RV].buf);
    atsup_handles(t, a, G_N);
    CHECK_ACL(wc_call(a, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[G_MALL], got);
    for (i = 0; i < 4; i++) CHECK_MSG(got[i] == 0.0, "meanAll[%d] = %g", i, got[i]);
    atsup_read(&t[G_IALL], got);
    for (i = 0; i < 4; i++) CHECK_MSG(isnan(got[i]), "invstdAll[%d] = %g", i, got[i]);
    CHECK_MSG(tsup_unchanged(&t[G_RM].buf, snap_rm) && tsup_unchanged(&t[G_RV].buf, snap_rv),
              "W == 0 changed the running statistics");
    /* an empty input only gives C */
    a[G_IN] = in_e.t;
    CHECK_ACL(wc_call(a, 0, 0), ACLNN_SUCCESS);
    /* C == 0: mean and invstd [3, 0], every [C] tensor [0]: success, nothing to do */
    a[G_IN] = in_c0.t;
    a[G_MEAN] = a[G_INV] = m_c0.t;
    a[G_CNT] = cnt3.t;
    a[G_RM] = a[G_RV] = NULL;
    a[G_MALL] = o0a.t;
    a[G_IALL] = o0b.t;
    CHECK_ACL(wc_call(a, 0, 0), ACLNN_SUCCESS);
    a[G_IALL] = NULL;
    CHECK_ACL(wc_call(a, 0, 0), E_NULL);
    CHECK_MSG_HAS("invstdAll");
    free(snap_rm);
    free(snap_rv);
    atsup_free_n(t, G_N);
    ATSUP_FREE(&in_e, &in_c0, &m_c0, &cnt3, &o0a, &o0b);
}

static const atsup_case k_wc_cases[] = {
    ATSUP_CASE1("NULL input", ATSUP_NULL_ARG(G_IN), E_NULL, "input"),
    ATSUP_CASE1("NULL mean", ATSUP_NULL_ARG(G_MEAN), E_NULL, "mean"),
    ATSUP_CASE1("NULL invstd", ATSUP_NULL_ARG(G_INV), E_NULL, "invstd"),
    ATSUP_CASE1("NULL counts", ATSUP_NULL_ARG(G_CNT), E_NULL, "counts"),
    ATSUP_CASE1("NULL meanAll", ATSUP_NULL_ARG(G_MALL), E_NULL, "meanAll"),
    ATSUP_CASE1("NULL invstdAll", ATSUP_NULL_ARG(G_IALL), E_NULL, "invstdAll"),
    ATSUP_CASE1("NULL workspaceSize", ATSUP_NULL_WS, E_NULL, "workspaceSize"),
    ATSUP_CASE1("NULL executor", ATSUP_NULL_EX, E_NULL, "executor"),
    ATSUP_CASE1("NULL runningMean", ATSUP_NULL_ARG(G_RM), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("NULL runningVar", ATSUP_NULL_ARG(G_RV), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("INT8 input", ATSUP_RAW(G_IN, ACL_INT8, ND, 2, 2, 3), E_INVALID, "input"),
    ATSUP_CASE1("DOUBLE mean", ATSUP_RAW(G_MEAN, ACL_DOUBLE, ND, 2, 2, 3), E_INVALID, "mean"),
    ATSUP_CASE1("INT32 invstd", ATSUP_RAW(G_INV, ACL_INT32, ND, 2, 2, 3), E_INVALID, "invstd"),
    ATSUP_CASE1("INT32 runningMean", ATSUP_RAW(G_RM, ACL_INT32, ND, 1, 3), E_INVALID,
                "runningMean"),
    ATSUP_CASE1("DOUBLE runningVar", ATSUP_RAW(G_RV, ACL_DOUBLE, ND, 1, 3), E_INVALID,
                "runningVar"),
    ATSUP_CASE1("INT32 counts", ATSUP_RAW(G_CNT, ACL_INT32, ND, 1, 2), E_INVALID, "counts"),
    ATSUP_CASE1("INT64 meanAll", ATSUP_RAW(G_MALL, ACL_INT64, ND, 1, 3), E_INVALID, "meanAll"),
    ATSUP_CASE1("UINT8 invstdAll", ATSUP_RAW(G_IALL, ACL_UINT8, ND, 1, 3), E_INVALID,
                "invstdAll"),
    ATSUP_CASE1("FLOAT16 input (mixed)", ATSUP_RAW(G_IN, F16, ND, 2, 2, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("BF16 mean (mixed)", ATSUP_RAW(G_MEAN, ACL_BF16, ND, 2, 2, 3), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("NC1HWC0 input", ATSUP_RAW(G_IN, F, PRIV, 2, 2, 3), E_INVALID, "input"),
    ATSUP_CASE1("NC1HWC0 mean", ATSUP_RAW(G_MEAN, F, PRIV, 2, 2, 3), E_INVALID, "mean"),
    ATSUP_CASE1("FRACTAL_Z invstd", ATSUP_RAW(G_INV, F, ACL_FORMAT_FRACTAL_Z, 2, 2, 3), E_INVALID,
                "invstd"),
    ATSUP_CASE1("NC1HWC0 counts", ATSUP_RAW(G_CNT, F, PRIV, 1, 2), E_INVALID, "counts"),
    ATSUP_CASE1("NC1HWC0 runningMean", ATSUP_RAW(G_RM, F, PRIV, 1, 3), E_INVALID, "runningMean"),
    ATSUP_CASE1("FRACTAL_NZ meanAll", ATSUP_RAW(G_MALL, F, ACL_FORMAT_FRACTAL_NZ, 1, 3),
                E_INVALID, "meanAll"),
    ATSUP_CASE1("2-D NCHW input", ATSUP_RAW(G_IN, F, ACL_FORMAT_NCHW, 2, 2, 3), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("rank-1 input", ATSUP_RAW(G_IN, F, ND, 1, 3), E_INVALID, "input"),
    ATSUP_CASE1("rank-9 input", ATSUP_RAW(G_IN, F, ND, 9, 1, 3, 1, 1, 1, 1, 1, 1, 1), E_INVALID,
                "input"),
    ATSUP_CASE1("rank-8 input", ATSUP_RAW(G_IN, F, ND, 8, 1, 3, 1, 1, 1, 1, 1, 2), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("1-D mean", ATSUP_RAW(G_MEAN, F, ND, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("3-D invstd", ATSUP_RAW(G_INV, F, ND, 3, 2, 3, 1), E_INVALID, "invstd"),
    ATSUP_CASE1("invstd W = 3", ATSUP_RAW(G_INV, F, ND, 2, 3, 3), E_INVALID, "dim 0"),
    ATSUP_CASE1("counts W = 3", ATSUP_RAW(G_CNT, F, ND, 1, 3), E_INVALID, "dim 0"),
    ATSUP_CASE1("mean C = 4", ATSUP_RAW(G_MEAN, F, ND, 2, 2, 4), E_INVALID, "dim 1"),
    ATSUP_CASE1("invstd C = 2", ATSUP_RAW(G_INV, F, ND, 2, 2, 2), E_INVALID, "dim 1"),
    ATSUP_CASE1("runningMean [4]", ATSUP_RAW(G_RM, F, ND, 1, 4), E_INVALID, "runningMean"),
    ATSUP_CASE1("runningVar [1, 3]", ATSUP_RAW(G_RV, F, ND, 2, 1, 3), E_INVALID, "runningVar"),
    ATSUP_CASE1("counts [2, 1]", ATSUP_RAW(G_CNT, F, ND, 2, 2, 1), E_INVALID, "counts"),
    ATSUP_CASE1("meanAll [4]", ATSUP_RAW(G_MALL, F, ND, 1, 4), E_INVALID, "meanAll"),
    ATSUP_CASE1("invstdAll [1, 3]", ATSUP_RAW(G_IALL, F, ND, 2, 1, 3), E_INVALID, "invstdAll"),
    ATSUP_CASE2("NULL input before bad mean dtype", ATSUP_NULL_ARG(G_IN),
                ATSUP_RAW(G_MEAN, ACL_INT32, ND, 2, 2, 3), E_NULL, "input"),
    ATSUP_CASE2("NULL workspaceSize before bad dtype", ATSUP_NULL_WS,
                ATSUP_RAW(G_IN, ACL_INT32, ND, 2, 2, 3), E_NULL, "workspaceSize"),
    ATSUP_CASE2("NULL meanAll before bad runningMean dtype", ATSUP_NULL_ARG(G_MALL),
                ATSUP_RAW(G_RM, ACL_INT32, ND, 1, 3), E_NULL, "meanAll"),
    ATSUP_CASE2("dtype before shape", ATSUP_RAW(G_CNT, ACL_INT32, ND, 1, 2),
                ATSUP_RAW(G_MEAN, F, ND, 2, 2, 4), E_INVALID, "must be one of"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(G_MEAN, F, PRIV, 2, 2, 3),
                ATSUP_RAW(G_INV, F, ND, 2, 3, 3), E_INVALID, "private"),
};

/* Valid WithCounts arguments: input [2, 3], W = 2, C = 3. */
static void wc_fixture(atsup_tensor *t)
{
    static const int64_t in_shape[] = {2, 3};
    static const double two[] = {2, 2, 2, 2, 2, 2}, ones[] = {1, 1, 1};
    t[G_IN] = atsup_plain(F, 2, in_shape, NULL);
    t[G_MEAN] = atsup_plain(F, 2, in_shape, NULL);
    t[G_INV] = atsup_plain(F, 2, in_shape, two);
    t[G_RM] = atsup_vec(F, 3, NULL);
    t[G_RV] = atsup_vec(F, 3, ones);
    t[G_CNT] = atsup_vec(F, 2, ones);
    t[G_MALL] = atsup_vec(F, 3, NULL);
    t[G_IALL] = atsup_vec(F, 3, NULL);
}

static void test_with_counts_arguments(void)
{
    static const double bad_counts[][2] = {{1, -1}, {NAN, 1}, {INFINITY, 1}};
    atsup_tensor t[G_N], cnt;
    aclTensor *a[G_N];
    int i, failed;
    wc_fixture(t);
    atsup_handles(t, a, G_N);
    failed = atsup_expect_all(wc_call, a, G_N, k_wc_cases, TSUP_COUNT(k_wc_cases));
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
    CHECK_ACL(wc_call_eps(a, 1.5, 1e-5, 0, 0), E_INVALID);
    CHECK_MSG_HAS("momentum");
    CHECK_ACL(wc_call_eps(a, NAN, 1e-5, 0, 0), E_INVALID);
    CHECK_ACL(wc_call_eps(a, 0.1, -1e-5, 0, 0), E_INVALID);
    CHECK_MSG_HAS("eps");
    CHECK_ACL(wc_call_eps(a, 1.0, 0.0, 0, 0), ACLNN_SUCCESS);
    { /* input only gives C: its data is never read, so it may still be NULL */
        static const int64_t shape[] = {4, 3, 2};
        aclTensor *no_data = aclCreateTensor(shape, 3, F16, NULL, 0, ND, shape, 3, NULL);
        a[G_IN] = no_data;
        CHECK_ACL(wc_call(a, 0, 0), ACLNN_SUCCESS);
        a[G_IN] = t[G_IN].t;
        aclDestroyTensor(no_data);
    }
    for (i = 0; i < 3; i++) { /* counts are values: phase 1 passes, phase 2 refuses */
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        cnt = atsup_vec(F, 2, bad_counts[i]);
        CHECK_ACL(aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
                      a[G_IN], a[G_MEAN], a[G_INV], a[G_RM], a[G_RV], 0.1, 1e-5, cnt.t,
                      a[G_MALL], a[G_IALL], &ws, &ex),
                  ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNormGatherStatsWithCounts, ws, ex), E_INVALID);
        CHECK_MSG_HAS("counts");
        atsup_free(&cnt);
    }
    atsup_free_n(t, G_N);
}

static aclnnStatus wc_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor **a = ctx;
    return aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
        a[G_IN], a[G_MEAN], a[G_INV], a[G_RM], a[G_RV], 0.1, 1e-5, a[G_CNT], a[G_MALL], a[G_IALL],
        ws, ex);
}

/*
 * Executor rules, then a repeatable executor without runningMean run three times:
 * mean is input 1, runningVar input 3 and counts input 4 (absent tensors are not
 * counted), meanAll output 0; each run gets new buffers for those four.
 */
static void test_with_counts_executor(void)
{
    const int64_t c = 3, w = 2, wcs[] = {2, 3};
    const double eps_f = (double)(float)1e-5, mom = (double)(float)0.1;
    atsup_tensor t[G_N];
    aclTensor *a[G_N];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int i, k;
    wc_fixture(t);
    atsup_handles(t, a, G_N);
    CHECK(atsup_check_executor_rules(wc_phase1, a, aclnnBatchNormGatherStatsWithCounts));
    /* mean without memory yet: phase 1 passes, phase 2 gives 161001 */
    CHECK(atsup_check_no_data(wc_phase1, a, aclnnBatchNormGatherStatsWithCounts, &a[G_MEAN], F, 2,
                              wcs, ND));
    a[G_RM] = NULL;
    CHECK_ACL(wc_phase1(a, &ws, &ex), ACLNN_SUCCESS);
    CHECK(ws == 0);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (k = 0; k < 3; k++) {
        double *m = atsup_normal(30 + (uint64_t)k, w * c, (double)k, 1.0, F), var[6], counts[2];
        double rv0[3] = {1.0 + k, 2.0, 3.0}, want[3][3], biased[3], got[3];
        atsup_tensor mk, rvk, ck, mallk;
        counts[0] = 1.0 + k;
        counts[1] = 3.0;
        mk = atsup_make(F, 2, wcs, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, m);
        rvk = atsup_vec(F, 3, rv0);
        ck = atsup_vec(F, 2, counts);
        mallk = atsup_vec(F, 3, NULL); /* the layout of the tensor it replaces */
        CHECK_ACL(aclSetInputTensorAddr(ex, 1, t[G_MEAN].t, mk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetInputTensorAddr(ex, 3, t[G_RV].t, rvk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetInputTensorAddr(ex, 4, t[G_CNT].t, ck.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, t[G_MALL].t, mallk.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNormGatherStatsWithCounts, ws, ex), ACLNN_SUCCESS);
        for (i = 0; i < 6; i++) var[i] = 0.25 - eps_f; /* invstd 2 everywhere */
        memcpy(want[2], rv0, sizeof rv0);
        ref_merge(m, var, counts, w, c, mom, want[0], biased, NULL, want[2]);
        for (i = 0; i < 3; i++) want[1][i] = 1.0 / sqrt(biased[i] + eps_f);
        atsup_read(&mallk, got);
        CHECK_MSG(tsup_close("meanAll", got, want[0], c, 1e-7, 1e-6), "run %d", k);
        atsup_read(&t[G_IALL], got);
        CHECK_MSG(tsup_close("invstdAll", got, want[1], c, 0.0, 1e-6), "run %d", k);
        atsup_read(&rvk, got);
        CHECK_MSG(tsup_close("runningVar", got, want[2], c, 0.0, 1e-6), "run %d", k);
        CHECK(atsup_guard_ok(&mallk));
        ATSUP_FREE(&mk, &rvk, &ck, &mallk);
        free(m);
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    atsup_free_n(t, G_N);
}

/* ---------------- aclnnSyncBatchNormGatherStats ---------------- */

enum { Y_SUM, Y_SQ, Y_CNT, Y_MEAN, Y_VAR, Y_BM, Y_BI, Y_N };

static aclnnStatus sync_call_mom(aclTensor *const *a, float momentum, float eps, int null_ws,
                                 int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
        a[Y_SUM], a[Y_SQ], a[Y_CNT], a[Y_MEAN], a[Y_VAR], momentum, eps, a[Y_BM], a[Y_BI],
        null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnSyncBatchNormGatherStats, ws, ex);
}

static aclnnStatus sync_call(aclTensor *const *a, int null_ws, int null_ex)
{
    return sync_call_mom(a, 0.1f, 1e-5f, null_ws, null_ex);
}

/*
 * W ranks of sums (dtype dt, strided/offset/transposed), counts in cdt, running
 * stats in dt (the equal-dtype rule), batch outputs in odt; oracle on stored values.
 * counts may hold zeros; *_want gets batch mean, invstd, running mean, variance.
 */
static void check_sync(aclDataType dt, aclDataType cdt, aclDataType odt, const double *counts,
                       int64_t w, const double *sums, const double *squares, double want[4][4])
{
    const int64_t c = 4, wc[] = {w, c};
    const double m = (double)0.1f, eps_f = (double)1e-5f;
    static const double rm0[] = {1, -2, 3, 0.5}, rv0[] = {2, 1, 0.25, 4};
    double *st = malloc(sizeof(double) * (size_t)(w * c) * 2), *sq = st + w * c, cn[8], got[4];
    atsup_tensor t[Y_N];
    aclTensor *a[Y_N];
    int64_t i, j;
    t[Y_SUM] = atsup_make(dt, 2, wc, TSUP_STRIDED, ATSUP_OFFSET, ND, sums);
    t[Y_SQ] = atsup_make(dt, 2, wc, TSUP_CHANNELS_LAST, ATSUP_PLAIN, ND, squares);
    t[Y_CNT] = atsup_make(cdt, 1, &w, TSUP_STRIDED, ATSUP_OFFSET, ND, counts);
    t[Y_MEAN] = atsup_make(dt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, rm0);
    t[Y_VAR] = atsup_make(dt, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_OFFSET, ND, rv0);
    t[Y_BM] = atsup_make(odt, 1, &c, TSUP_STRIDED, ATSUP_PLAIN, ND, NULL);
    t[Y_BI] = atsup_make(odt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    atsup_handles(t, a, Y_N);
    atsup_read(&t[Y_SUM], st);
    atsup_read(&t[Y_SQ], sq);
    atsup_read(&t[Y_CNT], cn);
    atsup_read(&t[Y_MEAN], want[2]);
    atsup_read(&t[Y_VAR], want[3]);
    for (j = 0; j < c; j++) {
        double n = 0, s = 0, q = 0, bv;
        for (i = 0; i < w; i++)
            if (cn[i] > 0) {
                n += cn[i];
                s += st[i * c + j];
                q += sq[i * c + j];
            }
        want[0][j] = n > 0 ? s / n : 0.0;
        bv = n > 0 ? q / n - want[0][j] * want[0][j] : NAN;
        if (bv < 0) bv = 0; /* documented deviation: clamped, CANN gives NaN */
        want[1][j] = 1.0 / sqrt(bv + eps_f);
        if (n > 0) want[2][j] = (1 - m) * want[2][j] + m * want[0][j];
        if (n > 1) want[3][j] = (1 - m) * want[3][j] + m * bv * n / (n - 1);
    }
    CHECK_ACL(sync_call(a, 0, 0), ACLNN_SUCCESS);
    for (i = 0; i < 4; i++) {
        static const char *const names[] = {"batchMean", "batchInvstd", "mean", "variance"};
        static const int slots[] = {Y_BM, Y_BI, Y_MEAN, Y_VAR};
        atsup_read(&t[slots[i]], got);
        CHECK(tsup_close(names[i], got, want[i], c, 1e-30, out_tol(i < 2 ? odt : dt)));
    }
    for (i = 0; i < Y_N; i++) CHECK_MSG(atsup_guard_ok(&t[i]), "tensor %d written outside", (int)i);
    atsup_free_n(t, Y_N);
    free(st);
}

static void test_sync_doc_example(void)
{
    static const double sums[] = {300, 400}, counts[] = {400};
    static const double want[4][2] = {{0.75, 1.0}, {2.30933950, 316.227766}, {360.075, 360.1},
                                      {360.018797, 360.0}};
    static const int64_t wc[] = {1, 2};
    static const double four[] = {400, 400};
    atsup_tensor t[Y_N];
    aclTensor *a[Y_N];
    double got[2];
    int i;
    static const int slots[] = {Y_BM, Y_BI, Y_MEAN, Y_VAR};
    t[Y_SUM] = atsup_plain(F, 2, wc, sums);
    t[Y_SQ] = atsup_plain(F, 2, wc, sums);
    t[Y_CNT] = atsup_vec(ACL_INT32, 1, counts);
    t[Y_MEAN] = atsup_vec(F, 2, four);
    t[Y_VAR] = atsup_vec(F, 2, four);
    t[Y_BM] = atsup_vec(F, 2, NULL);
    t[Y_BI] = atsup_vec(F, 2, NULL);
    atsup_handles(t, a, Y_N);
    CHECK_ACL(sync_call_mom(a, 0.1f, 1e-5f, 0, 0), ACLNN_SUCCESS);
    for (i = 0; i < 4; i++) {
        atsup_read(&t[slots[i]], got);
        CHECK_MSG(tsup_close("doc example", got, want[i], 2, 0.0, 1e-6), "output %d", i);
    }
    atsup_free_n(t, Y_N);
}

static void test_sync_oracle(void)
{
    static const double counts[] = {5, 0, 3}, ones[] = {2}, one[] = {1};
    double want[4][4], sums[12], squares[12], neg_sum[4] = {2, 2, 2, 2}, neg_sq[4] = {1, 1, 1, 1};
    int d, i;
    for (d = 0; d < 3; d++) {
        double *mu = atsup_normal(40 + (uint64_t)d, 12, 1.0, 1.0, F);
        double *var = atsup_normal(50 + (uint64_t)d, 12, 0.0, 1.0, F);
        for (i = 0; i < 12; i++) {
            double n = counts[i / 4];
            sums[i] = n * mu[i];
            squares[i] = n * (0.5 + fabs(var[i]) + mu[i] * mu[i]);
        }
        check_sync(k_floats[d], d == 0 ? ACL_INT32 : k_floats[(d + 1) % 3], k_floats[(d + 2) % 3],
                   counts, 3, sums, squares, want);
        free(mu);
        free(var);
        RETURN_IF_FAILED();
    }
    /* sum 2, squares 1, count 2: batch variance 1/2 - 1 < 0 is clamped at 0 (CANN: NaN) */
    check_sync(F, F, F, ones, 1, neg_sum, neg_sq, want);
    for (i = 0; i < 4; i++) CHECK(fabs(want[1][i] - 1.0 / sqrt((double)1e-5f)) < 1e-9);
    /* every count 0: batchMean 0, batchInvstd NaN, running stats untouched */
    check_sync(F, ACL_INT32, F, counts + 1, 1, neg_sum, neg_sq, want);
    /* N == 1: variance untouched */
    check_sync(ACL_FLOAT16, F, F, one, 1, neg_sum, neg_sq, want);
}

static const atsup_case k_sync_cases[] = {
    ATSUP_CASE1("NULL totalSum", ATSUP_NULL_ARG(Y_SUM), E_NULL, "totalSum"),
    ATSUP_CASE1("NULL totalSquareSum", ATSUP_NULL_ARG(Y_SQ), E_NULL, "totalSquareSum"),
    ATSUP_CASE1("NULL sampleCount", ATSUP_NULL_ARG(Y_CNT), E_NULL, "sampleCount"),
    ATSUP_CASE1("NULL mean", ATSUP_NULL_ARG(Y_MEAN), E_NULL, "mean"),
    ATSUP_CASE1("NULL variance", ATSUP_NULL_ARG(Y_VAR), E_NULL, "variance"),
    ATSUP_CASE1("NULL batchMean", ATSUP_NULL_ARG(Y_BM), E_NULL, "batchMean"),
    ATSUP_CASE1("NULL batchInvstd", ATSUP_NULL_ARG(Y_BI), E_NULL, "batchInvstd"),
    ATSUP_CASE1("NULL workspaceSize", ATSUP_NULL_WS, E_NULL, "workspaceSize"),
    ATSUP_CASE1("NULL executor", ATSUP_NULL_EX, E_NULL, "executor"),
    ATSUP_CASE1("INT32 totalSum", ATSUP_RAW(Y_SUM, ACL_INT32, ND, 2, 2, 3), E_INVALID, "totalSum"),
    ATSUP_CASE1("DOUBLE totalSquareSum", ATSUP_RAW(Y_SQ, ACL_DOUBLE, ND, 2, 2, 3), E_INVALID,
                "totalSquareSum"),
    ATSUP_CASE1("INT64 sampleCount", ATSUP_RAW(Y_CNT, ACL_INT64, ND, 1, 2), E_INVALID,
                "sampleCount"),
    ATSUP_CASE1("DOUBLE sampleCount", ATSUP_RAW(Y_CNT, ACL_DOUBLE, ND, 1, 2), E_INVALID,
                "sampleCount"),
    ATSUP_CASE1("INT32 sampleCount", ATSUP_RAW(Y_CNT, ACL_INT32, ND, 1, 2), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("BF16 sampleCount", ATSUP_RAW(Y_CNT, ACL_BF16, ND, 1, 2), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("INT32 mean", ATSUP_RAW(Y_MEAN, ACL_INT32, ND, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("UINT8 variance", ATSUP_RAW(Y_VAR, ACL_UINT8, ND, 1, 3), E_INVALID, "variance"),
    ATSUP_CASE1("INT8 batchMean", ATSUP_RAW(Y_BM, ACL_INT8, ND, 1, 3), E_INVALID, "batchMean"),
    ATSUP_CASE1("DOUBLE batchInvstd", ATSUP_RAW(Y_BI, ACL_DOUBLE, ND, 1, 3), E_INVALID,
                "batchInvstd"),
    ATSUP_CASE1("FLOAT16 totalSquareSum", ATSUP_RAW(Y_SQ, F16, ND, 2, 2, 3), E_INVALID,
                "totalSquareSum has dtype FLOAT16"),
    ATSUP_CASE1("FLOAT16 totalSum", ATSUP_RAW(Y_SUM, F16, ND, 2, 2, 3), E_INVALID,
                "totalSquareSum has dtype FLOAT"),
    ATSUP_CASE1("FLOAT16 mean", ATSUP_RAW(Y_MEAN, F16, ND, 1, 3), E_INVALID,
                "mean has dtype FLOAT16"),
    ATSUP_CASE1("BF16 variance", ATSUP_RAW(Y_VAR, ACL_BF16, ND, 1, 3), E_INVALID,
                "variance has dtype BF16"),
    ATSUP_CASE1("FLOAT16 batchInvstd", ATSUP_RAW(Y_BI, F16, ND, 1, 3), E_INVALID,
                "batchInvstd has dtype FLOAT16"),
    ATSUP_CASE2("FLOAT16 batchMean and batchInvstd", ATSUP_RAW(Y_BM, F16, ND, 1, 3),
                ATSUP_RAW(Y_BI, F16, ND, 1, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("NC1HWC0 totalSum", ATSUP_RAW(Y_SUM, F, PRIV, 2, 2, 3), E_INVALID, "totalSum"),
    ATSUP_CASE1("NC1HWC0 totalSquareSum", ATSUP_RAW(Y_SQ, F, PRIV, 2, 2, 3), E_INVALID,
                "totalSquareSum"),
    ATSUP_CASE1("NC1HWC0 sampleCount", ATSUP_RAW(Y_CNT, F, PRIV, 1, 2), E_INVALID, "sampleCount"),
    ATSUP_CASE1("FRACTAL_NZ mean", ATSUP_RAW(Y_MEAN, F, ACL_FORMAT_FRACTAL_NZ, 1, 3), E_INVALID,
                "mean"),
    ATSUP_CASE1("NC1HWC0 variance", ATSUP_RAW(Y_VAR, F, PRIV, 1, 3), E_INVALID, "variance"),
    ATSUP_CASE1("NC1HWC0 batchMean", ATSUP_RAW(Y_BM, F, PRIV, 1, 3), E_INVALID, "batchMean"),
    ATSUP_CASE1("NC1HWC0 batchInvstd", ATSUP_RAW(Y_BI, F, PRIV, 1, 3), E_INVALID, "batchInvstd"),
    ATSUP_CASE1("NCHW totalSum (rank 2)", ATSUP_RAW(Y_SUM, F, ACL_FORMAT_NCHW, 2, 2, 3),
                ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("rank-1 totalSum", ATSUP_RAW(Y_SUM, F, ND, 1, 3), E_INVALID, "totalSum"),
    ATSUP_CASE1("rank-3 totalSquareSum", ATSUP_RAW(Y_SQ, F, ND, 3, 2, 3, 1), E_INVALID,
                "totalSquareSum"),
    ATSUP_CASE1("rank-9 totalSum", ATSUP_RAW(Y_SUM, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1),
                E_INVALID, "totalSum"),
    ATSUP_CASE1("totalSquareSum [3, 3]", ATSUP_RAW(Y_SQ, F, ND, 2, 3, 3), E_INVALID,
                "dim 0 of totalSquareSum"),
    ATSUP_CASE1("totalSquareSum [2, 4]", ATSUP_RAW(Y_SQ, F, ND, 2, 2, 4), E_INVALID,
                "dim 1 of totalSquareSum"),
    ATSUP_CASE1("sampleCount [3]", ATSUP_RAW(Y_CNT, F, ND, 1, 3), E_INVALID, "sampleCount"),
    ATSUP_CASE1("sampleCount [2, 1]", ATSUP_RAW(Y_CNT, F, ND, 2, 2, 1), E_INVALID, "sampleCount"),
    ATSUP_CASE1("mean [4]", ATSUP_RAW(Y_MEAN, F, ND, 1, 4), E_INVALID, "mean"),
    ATSUP_CASE1("variance [1, 3]", ATSUP_RAW(Y_VAR, F, ND, 2, 1, 3), E_INVALID, "variance"),
    ATSUP_CASE1("batchMean [2]", ATSUP_RAW(Y_BM, F, ND, 1, 2), E_INVALID, "batchMean"),
    ATSUP_CASE1("batchInvstd [4]", ATSUP_RAW(Y_BI, F, ND, 1, 4), E_INVALID, "batchInvstd"),
    ATSUP_CASE2("NULL totalSum before bad dtype", ATSUP_NULL_ARG(Y_SUM),
                ATSUP_RAW(Y_MEAN, ACL_INT32, ND, 1, 3), E_NULL, "totalSum"),
    ATSUP_CASE2("bad dtype before NULL workspaceSize", ATSUP_NULL_WS,
                ATSUP_RAW(Y_CNT, ACL_INT64, ND, 1, 2), E_INVALID, "sampleCount"),
    ATSUP_CASE2("dtype before shape", ATSUP_RAW(Y_BM, ACL_INT8, ND, 1, 3),
                ATSUP_RAW(Y_SQ, F, ND, 2, 3, 3), E_INVALID, "must be one of"),
    ATSUP_CASE2("equal dtypes before format", ATSUP_RAW(Y_MEAN, F16, ND, 1, 3),
                ATSUP_RAW(Y_CNT, F, PRIV, 1, 2), E_INVALID, "mean has dtype FLOAT16"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(Y_VAR, F, PRIV, 1, 3),
                ATSUP_RAW(Y_MEAN, F, ND, 1, 4), E_INVALID, "private"),
};

/* The [W, C] shape of the valid SyncBatchNormGatherStats arguments. */
static const int64_t k_sync_wc[] = {2, 3};

/* Valid SyncBatchNormGatherStats arguments: W = 2, C = 3. */
static void sync_fixture(atsup_tensor *t)
{
    static const double sums[] = {1, 2, 3, 4, 5, 6}, sq[] = {9, 9, 9, 9, 9, 9}, n[] = {2, 3};
    t[Y_SUM] = atsup_plain(F, 2, k_sync_wc, sums);
    t[Y_SQ] = atsup_plain(F, 2, k_sync_wc, sq);
    t[Y_CNT] = atsup_vec(ACL_INT32, 2, n);
    t[Y_MEAN] = atsup_vec(F, 3, NULL);
    t[Y_VAR] = atsup_vec(F, 3, NULL);
    t[Y_BM] = atsup_vec(F, 3, NULL);
    t[Y_BI] = atsup_vec(F, 3, NULL);
}

static void test_sync_arguments(void)
{
    static const int64_t w0[] = {0, 3}, c0[] = {2, 0};
    static const double negative[] = {2, -3};
    atsup_tensor t[Y_N], s0, q0, n0, sc0, qc0, v0[4], neg;
    aclTensor *a[Y_N], *b[Y_N];
    int i, failed;
    sync_fixture(t);
    for (i = 0; i < Y_N; i++) a[i] = b[i] = t[i].t;
    failed = atsup_expect_all(sync_call, a, Y_N, k_sync_cases, TSUP_COUNT(k_sync_cases));
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
    CHECK_ACL(sync_call_mom(a, 1.5f, 1e-5f, 0, 0), E_INVALID);
    CHECK_MSG_HAS("momentum");
    CHECK_ACL(sync_call_mom(a, 0.1f, -1.0f, 0, 0), E_INVALID);
    CHECK_MSG_HAS("eps");
    /* W == 0 -> 161002 (as CANN) */
    s0 = atsup_plain(F, 2, w0, NULL);
    q0 = atsup_plain(F, 2, w0, NULL);
    n0 = atsup_vec(F, 0, NULL);
    b[Y_SUM] = s0.t;
    b[Y_SQ] = q0.t;
    b[Y_CNT] = n0.t;
    CHECK_ACL(sync_call(b, 0, 0), E_INVALID);
    CHECK_MSG_HAS("W");
    /* C == 0 -> success, nothing to do */
    sc0 = atsup_plain(F, 2, c0, NULL);
    qc0 = atsup_plain(F, 2, c0, NULL);
    b[Y_SUM] = sc0.t;
    b[Y_SQ] = qc0.t;
    b[Y_CNT] = t[Y_CNT].t;
    for (i = 0; i < 4; i++) {
        v0[i] = atsup_vec(F, 0, NULL);
        b[Y_MEAN + i] = v0[i].t;
    }
    CHECK_ACL(sync_call(b, 0, 0), ACLNN_SUCCESS);
    /* a negative count passes phase 1 and is refused by phase 2 */
    neg = atsup_vec(F, 2, negative);
    a[Y_CNT] = neg.t;
    CHECK_ACL(sync_call(a, 0, 0), E_INVALID);
    CHECK_MSG_HAS("sample_count");
    atsup_free_n(t, Y_N);
    atsup_free_n(v0, 4);
    ATSUP_FREE(&s0, &q0, &n0, &sc0, &qc0, &neg);
}

static aclnnStatus sync_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor **a = ctx;
    return aclnnSyncBatchNormGatherStatsGetWorkspaceSize(a[Y_SUM], a[Y_SQ], a[Y_CNT], a[Y_MEAN],
                                                         a[Y_VAR], 0.1f, 1e-5f, a[Y_BM], a[Y_BI],
                                                         ws, ex);
}

/* Executor rules, then a repeatable executor whose sampleCount (input 2), mean (input 3)
 * and batchMean (output 0) move to new buffers on each of three runs. */
static void test_sync_executor(void)
{
    atsup_tensor t[Y_N];
    aclTensor *a[Y_N];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const double m = (double)0.1f;
    int i, k;
    sync_fixture(t);
    atsup_handles(t, a, Y_N);
    CHECK(atsup_check_executor_rules(sync_phase1, a, aclnnSyncBatchNormGatherStats));
    /* totalSum without memory yet: phase 1 passes, phase 2 gives 161001 */
    CHECK(atsup_check_no_data(sync_phase1, a, aclnnSyncBatchNormGatherStats, &a[Y_SUM], F, 2,
                              k_sync_wc, ND));
    CHECK_ACL(sync_phase1(a, &ws, &ex), ACLNN_SUCCESS);
    CHECK(ws == 0);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (k = 0; k < 3; k++) {
        double n[2], rm[3] = {1.0 * k, 2.0, -1.0}, want[2][3], got[3];
        atsup_tensor nk, rmk, bmk;
        n[0] = 1.0 + k;
        n[1] = 2.0;
        nk = atsup_vec(ACL_INT32, 2, n);
        rmk = atsup_vec(F, 3, rm); /* new buffers have the layout of the tensors they replace */
        bmk = atsup_vec(F, 3, NULL);
        CHECK_ACL(aclSetInputTensorAddr(ex, 2, t[Y_CNT].t, nk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetInputTensorAddr(ex, 3, t[Y_MEAN].t, rmk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, t[Y_BM].t, bmk.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnSyncBatchNormGatherStats, ws, ex), ACLNN_SUCCESS);
        for (i = 0; i < 3; i++) { /* sums row 0: 1 2 3, row 1: 4 5 6 */
            want[0][i] = (double)(1 + i + 4 + i) / (n[0] + n[1]);
            want[1][i] = (1 - m) * rm[i] + m * want[0][i];
        }
        atsup_read(&bmk, got);
        CHECK_MSG(tsup_close("batchMean", got, want[0], 3, 0.0, 1e-6), "run %d", k);
        atsup_read(&rmk, got);
        CHECK_MSG(tsup_close("mean", got, want[1], 3, 1e-7, 1e-6), "run %d", k);
        CHECK(atsup_guard_ok(&rmk) && atsup_guard_ok(&bmk));
        ATSUP_FREE(&nk, &rmk, &bmk);
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    atsup_free_n(t, Y_N);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_with_counts_doc_example), SBN_TEST_CASE(test_with_counts_oracle),
    SBN_TEST_CASE(test_with_counts_empty),       SBN_TEST_CASE(test_with_counts_arguments),
    SBN_TEST_CASE(test_with_counts_executor),    SBN_TEST_CASE(test_sync_doc_example),
    SBN_TEST_CASE(test_sync_oracle),             SBN_TEST_CASE(test_sync_arguments),
    SBN_TEST_CASE(test_sync_executor),
};

SBN_TEST_MAIN(k_cases)
