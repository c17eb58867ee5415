/*
 * test_aclnn_stats.c - aclnnBatchNormStats and aclnnBatchNormReduce through the
 * aclnn API (two phases, aclCreateTensor over test buffers). Each op: every
 * documented status with the argument that triggers it (each NULL, dtypes outside
 * the list including integer types, private formats, ranks 1 and 9, each shape
 * mismatch, C == 0) and the message naming that argument; the check order when
 * two arguments are wrong; empty inputs; FLOAT, FLOAT16 and BF16 inputs in
 * contiguous, channels-last and strided-with-offset layouts, with strided and
 * offset outputs whose guard bytes must survive, against the double oracle
 * (tests/ref) run on the values as stored; the CANN doc example (Stats); NHWC
 * (Reduce); the executor rules and a repeatable executor run three times on new
 * addresses set with aclSetInputTensorAddr/aclSetOutputTensorAddr.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm_reduce.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "ref/ref.h"

#define EPS 1e-5
#define EPS_F ((double)(float)EPS) /* what the op computes with: CANN narrows eps to float */
#define F ACL_FLOAT
#define ND ACL_FORMAT_ND
#define NCHW ACL_FORMAT_NCHW
#define NHWC ACL_FORMAT_NHWC
#define E_NULL ACLNN_ERR_PARAM_NULLPTR
#define E_INVALID ACLNN_ERR_PARAM_INVALID

static const aclDataType k_floats[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* (N, C, S) of a channels-at-dim-1 shape. */
static void split_ncs(int rank, const int64_t *shape, int64_t *n, int64_t *c, int64_t *s)
{
    int d;
    *n = shape[0];
    *c = shape[1];
    *s = 1;
    for (d = 2; d < rank; d++) *s *= shape[d];
}

/* ---------------- aclnnBatchNormStats ---------------- */

static aclnnStatus stats_run(const aclTensor *x, double eps, aclTensor *mean, aclTensor *invstd)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormStatsGetWorkspaceSize(x, eps, mean, invstd, &ws, &ex);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnBatchNormStats, ws, ex);
}

/* Runs Stats on x (as created) and compares mean/invstd (FLOAT, `out_place`) with the oracle. */
static void check_stats_on(const atsup_tensor *x, int rank, const int64_t *shape,
                           atsup_place out_place, const char *what)
{
    int64_t n, c, s, numel = tsup_numel(rank, shape);
    double *xv = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
    double *want = malloc(sizeof(double) * (size_t)shape[1] * 4), *got = want + 2 * shape[1];
    tsup_layout out_layout = out_place == ATSUP_OFFSET ? TSUP_STRIDED : TSUP_CHANNELS_FIRST;
    atsup_tensor mean, invstd;
    int ok;
    split_ncs(rank, shape, &n, &c, &s);
    mean = atsup_make(F, 1, &c, out_layout, out_place, ND, NULL);
    invstd = atsup_make(F, 1, &c, out_layout, out_place, ND, NULL);
    atsup_read(x, xv);
    ref_stats(xv, n, c, s, EPS_F, want, want + c);
    CHECK_ACL(stats_run(x->t, EPS, mean.t, invstd.t), ACLNN_SUCCESS);
    atsup_read(&mean, got);
    atsup_read(&invstd, got + c);
    ok = tsup_close(what, got, want, 2 * c, 1e-30, 1e-6);
    CHECK_MSG(ok, "Stats %s differs from the oracle", what);
    CHECK_MSG(atsup_guard_ok(&mean) && atsup_guard_ok(&invstd), "Stats %s wrote outside", what);
    ATSUP_FREE(&mean, &invstd);
    free(xv);
    free(want);
}

static const int64_t k_shapes[][9] = {
    {2, 5, 3}, {3, 2, 4, 7}, {4, 2, 3, 5, 4}, {5, 2, 2, 3, 2, 3}, {8, 2, 2, 1, 2, 1, 3, 1, 2}};

static void test_stats_oracle(void)
{
    static const tsup_layout layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};
    size_t d, k, l;
    for (d = 0; d < 3; d++)
        for (k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++)
            for (l = 0; l < 3; l++) {
                int rank = (int)k_shapes[k][0];
                const int64_t *shape = &k_shapes[k][1];
                int64_t numel = tsup_numel(rank, shape);
                double *v = atsup_normal(100 * d + 10 * k + l, numel, 0.5, 2.0, k_floats[d]);
                atsup_place place = l == 2 || k % 2 ? ATSUP_OFFSET : ATSUP_PLAIN;
                atsup_tensor x = atsup_make(k_floats[d], rank, shape, layouts[l], place,
                                            rank == 4 ? NCHW : ND, v);
                char what[96];
                snprintf(what, sizeof what, "%s rank %d %s", atsup_dtype_name(k_floats[d]), rank,
                         tsup_layout_name(layouts[l]));
                check_stats_on(&x, rank, shape, l == 1 ? ATSUP_OFFSET : ATSUP_PLAIN, what);
                atsup_free(&x);
                free(v);
                RETURN_IF_FAILED();
            }
}

static void test_stats_doc_example(void)
{
    static const double xv[] = {1, 2, 3, 4, 5, 6};
    static const int64_t shape[] = {2, 3};
    static const double want_mean[] = {2.5, 3.5, 4.5};
    static const double want_invstd[] = {0.666665185, 0.666665185, 0.666665185};
    atsup_tensor x = atsup_plain(F, 2, shape, xv), mean = atsup_vec(F, 3, NULL),
                 invstd = atsup_vec(F, 3, NULL);
    double got[3];
    uint64_t ws = 1234;
    aclOpExecutor *ex = NULL;
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(x.t, 1e-5, mean.t, invstd.t, &ws, &ex), 0);
    CHECK(ex != NULL);
    CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, ex), ACLNN_SUCCESS);
    atsup_read(&mean, got);
    CHECK(tsup_close("mean", got, want_mean, 3, 0.0, 1e-7));
    atsup_read(&invstd, got);
    CHECK(tsup_close("invstd", got, want_invstd, 3, 0.0, 2e-7));
    ATSUP_FREE(&x, &mean, &invstd);
}

static void test_stats_empty(void)
{
    static const int64_t shape[] = {0, 3};
    static const double seven[] = {7, 7, 7};
    atsup_tensor x = atsup_plain(ACL_FLOAT16, 2, shape, NULL), mean = atsup_vec(F, 3, seven),
                 invstd = atsup_vec(F, 3, seven);
    double got[3];
    int i;
    CHECK_ACL(stats_run(x.t, EPS, mean.t, invstd.t), ACLNN_SUCCESS);
    atsup_read(&mean, got);
    for (i = 0; i < 3; i++) CHECK_MSG(got[i] == 0.0, "mean[%d] = %g, expected 0", i, got[i]);
    atsup_read(&invstd, got);
    for (i = 0; i < 3; i++) CHECK_MSG(isnan(got[i]), "invstd[%d] = %g, expected NaN", i, got[i]);
    ATSUP_FREE(&x, &mean, &invstd);
}

static aclnnStatus stats_call(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormStatsGetWorkspaceSize(a[0], EPS, a[1], a[2], null_ws ? NULL : &ws,
                                                        null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnBatchNormStats, ws, ex);
}

/* Slots of Stats' tensor arguments. */
enum { S_IN, S_MEAN, S_INV };

static const atsup_case k_stats_cases[] = {
    ATSUP_CASE1("NULL input", ATSUP_NULL_ARG(S_IN), E_NULL, "input"),
    ATSUP_CASE1("NULL mean", ATSUP_NULL_ARG(S_MEAN), E_NULL, "mean"),
    ATSUP_CASE1("NULL invstd", ATSUP_NULL_ARG(S_INV), E_NULL, "invstd"),
    ATSUP_CASE1("NULL workspaceSize", ATSUP_NULL_WS, E_NULL, "workspaceSize"),
    ATSUP_CASE1("NULL executor", ATSUP_NULL_EX, E_NULL, "executor"),
    ATSUP_CASE1("INT32 input", ATSUP_RAW(S_IN, ACL_INT32, ND, 2, 2, 3), E_INVALID, "input"),
    ATSUP_CASE1("INT8 input", ATSUP_RAW(S_IN, ACL_INT8, ND, 2, 2, 3), E_INVALID, "input"),
    ATSUP_CASE1("DOUBLE input", ATSUP_RAW(S_IN, ACL_DOUBLE, ND, 2, 2, 3), E_INVALID, "input"),
    ATSUP_CASE1("FLOAT16 mean", ATSUP_RAW(S_MEAN, ACL_FLOAT16, ND, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("BF16 invstd", ATSUP_RAW(S_INV, ACL_BF16, ND, 1, 3), E_INVALID, "invstd"),
    ATSUP_CASE1("INT64 mean", ATSUP_RAW(S_MEAN, ACL_INT64, ND, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("NC1HWC0 input", ATSUP_RAW(S_IN, F, ACL_FORMAT_NC1HWC0, 2, 2, 3), E_INVALID,
                "input"),
    ATSUP_CASE1("FRACTAL_NZ mean", ATSUP_RAW(S_MEAN, F, ACL_FORMAT_FRACTAL_NZ, 1, 3), E_INVALID,
                "mean"),
    ATSUP_CASE1("NC1HWC0 invstd", ATSUP_RAW(S_INV, F, ACL_FORMAT_NC1HWC0, 1, 3), E_INVALID,
                "invstd"),
    ATSUP_CASE1("2-D NCHW input", ATSUP_RAW(S_IN, F, NCHW, 2, 2, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("2-D NHWC input", ATSUP_RAW(S_IN, F, NHWC, 2, 2, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("NCL mean", ATSUP_RAW(S_MEAN, F, ACL_FORMAT_NCL, 1, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("rank-1 input", ATSUP_RAW(S_IN, F, ND, 1, 3), E_INVALID, "input"),
    ATSUP_CASE1("rank-9 input", ATSUP_RAW(S_IN, F, ND, 9, 1, 3, 1, 1, 1, 1, 1, 1, 1), E_INVALID,
                "input"),
    ATSUP_CASE1("rank-8 input", ATSUP_RAW(S_IN, F, ND, 8, 1, 3, 1, 2, 1, 1, 1, 1), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("2-D mean", ATSUP_RAW(S_MEAN, F, ND, 2, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("mean [4]", ATSUP_RAW(S_MEAN, F, ND, 1, 4), E_INVALID, "mean"),
    ATSUP_CASE1("invstd [2]", ATSUP_RAW(S_INV, F, ND, 1, 2), E_INVALID, "invstd"),
    ATSUP_CASE1("C == 0", ATSUP_RAW(S_IN, F, ND, 2, 3, 0), E_INVALID, "channel"),
    ATSUP_CASE1("empty input {0, 3}", ATSUP_RAW(S_IN, F, ND, 2, 0, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE2("NULL input before bad mean dtype", ATSUP_NULL_ARG(S_IN),
                ATSUP_RAW(S_MEAN, ACL_INT32, ND, 1, 3), E_NULL, "input"),
    ATSUP_CASE2("NULL workspaceSize before bad input dtype", ATSUP_NULL_WS,
                ATSUP_RAW(S_IN, ACL_INT32, ND, 2, 2, 3), E_NULL, "workspaceSize"),
    ATSUP_CASE2("dtype before shape", ATSUP_RAW(S_IN, ACL_INT32, ND, 2, 2, 3),
                ATSUP_RAW(S_MEAN, F, ND, 1, 4), E_INVALID, "must be one of"),
    ATSUP_CASE2("dtype before format", ATSUP_RAW(S_IN, F, ACL_FORMAT_NC1HWC0, 2, 2, 3),
                ATSUP_RAW(S_MEAN, ACL_FLOAT16, ND, 1, 3), E_INVALID, "must be one of"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(S_IN, F, ACL_FORMAT_NC1HWC0, 2, 2, 3),
                ATSUP_RAW(S_MEAN, F, ND, 1, 4), E_INVALID, "private"),
};

static void test_stats_arguments(void)
{
    static const int64_t shape[] = {2, 3};
    atsup_tensor x = atsup_plain(F, 2, shape, NULL), mean = atsup_vec(F, 3, NULL),
                 invstd = atsup_vec(F, 3, NULL);
    aclTensor *args[3];
    int failed;
    args[S_IN] = x.t;
    args[S_MEAN] = mean.t;
    args[S_INV] = invstd.t;
    failed = atsup_expect_all(stats_call, args, 3, k_stats_cases, TSUP_COUNT(k_stats_cases));
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
    /* eps: narrowed to float, then it must be finite and >= 0 */
    CHECK_ACL(stats_run(x.t, -1e-3, mean.t, invstd.t), E_INVALID);
    CHECK_MSG_HAS("eps");
    CHECK_ACL(stats_run(x.t, NAN, mean.t, invstd.t), E_INVALID);
    CHECK_ACL(stats_run(x.t, 1e300, mean.t, invstd.t), E_INVALID); /* inf as a float */
    CHECK_ACL(stats_run(x.t, 0.0, mean.t, invstd.t), ACLNN_SUCCESS);
    ATSUP_FREE(&x, &mean, &invstd);
}

typedef struct op_ctx {
    aclTensor *t[4];
} op_ctx;

static aclnnStatus stats_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    op_ctx *c = ctx;
    return aclnnBatchNormStatsGetWorkspaceSize(c->t[0], EPS, c->t[1], c->t[2], ws, ex);
}

static aclnnStatus reduce_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    op_ctx *c = ctx;
    return aclnnBatchNormReduceGetWorkspaceSize(c->t[0], c->t[1], c->t[2], ws, ex);
}

/*
 * A repeatable executor run three times, each time on new x/out buffers set with
 * aclSetInputTensorAddr/aclSetOutputTensorAddr; `reduce` selects the op. The new
 * buffers have the first ones' layout (strided x at an offset, offset outputs).
 */
static void run_repeatable(int reduce)
{
    static const int64_t shape[] = {2, 3, 4, 5};
    const int64_t c = 3, numel = 120;
    double *v = atsup_normal(7, numel, 1.0, 3.0, F), xv[120], want[6], got[6];
    atsup_tensor x = atsup_make(F, 4, shape, TSUP_STRIDED, ATSUP_OFFSET, NCHW, v);
    atsup_tensor o1 = atsup_make(F, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    atsup_tensor o2 = atsup_make(F, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    op_ctx ctx;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int k;
    ctx.t[0] = x.t;
    ctx.t[1] = o1.t;
    ctx.t[2] = o2.t;
    CHECK_ACL((reduce ? reduce_phase1 : stats_phase1)(&ctx, &ws, &ex), ACLNN_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (k = 0; k < 3; k++) {
        double *vk = atsup_normal(50 + (uint64_t)k, numel, (double)k, 1.0 + k, F);
        atsup_tensor xk = atsup_make(F, 4, shape, TSUP_STRIDED, ATSUP_OFFSET, NCHW, vk);
        atsup_tensor ak = atsup_make(F, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
        atsup_tensor bk = atsup_make(F, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
        CHECK_ACL(aclSetInputTensorAddr(ex, 0, x.t, xk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, o1.t, ak.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 1, o2.t, bk.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(reduce ? aclnnBatchNormReduce : aclnnBatchNormStats, ws, ex), 0);
        atsup_read(&xk, xv);
        if (reduce)
            ref_reduce(xv, 2, c, 20, want, want + c);
        else
            ref_stats(xv, 2, c, 20, EPS_F, want, want + c);
        atsup_read(&ak, got);
        atsup_read(&bk, got + c);
        CHECK_MSG(tsup_close("run on new addresses", got, want, 2 * c, 1e-5, 1e-6), "run %d", k);
        CHECK(atsup_guard_ok(&ak) && atsup_guard_ok(&bk));
        ATSUP_FREE(&xk, &ak, &bk);
        free(vk);
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    atsup_read(&o1, got); /* the first buffers were never written */
    CHECK(got[0] == 0.0 && got[1] == 0.0 && got[2] == 0.0);
    ATSUP_FREE(&x, &o1, &o2);
    free(v);
}

static void test_stats_executor(void)
{
    static const int64_t shape[] = {4, 3, 5};
    double *v = atsup_normal(3, 60, 0.0, 1.0, F);
    atsup_tensor x = atsup_plain(F, 3, shape, v), mean = atsup_vec(F, 3, NULL),
                 invstd = atsup_vec(F, 3, NULL);
    op_ctx ctx;
    ctx.t[0] = x.t;
    ctx.t[1] = mean.t;
    ctx.t[2] = invstd.t;
    CHECK(atsup_check_executor_rules(stats_phase1, &ctx, aclnnBatchNormStats));
    run_repeatable(0);
    {
        /* a tensor made before its memory (data NULL, as CANN allows): phase 1 passes, phase 2
         * refuses with 161001 until aclSetInputTensorAddr gives it an address */
        aclTensor *late = aclCreateTensor(shape, 3, F, NULL, 0, ND, shape, 3, NULL);
        atsup_tensor m2 = atsup_vec(F, 3, NULL), i2 = atsup_vec(F, 3, NULL);
        double a[6], b[6];
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        CHECK(late != NULL);
        CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(late, EPS, m2.t, i2.t, &ws, &ex), 0);
        CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, ex), E_NULL);
        CHECK_MSG_HAS("NULL");
        CHECK_ACL(aclSetInputTensorAddr(ex, 0, late, x.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, ex), ACLNN_SUCCESS);
        CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
        CHECK_ACL(stats_run(x.t, EPS, mean.t, invstd.t), ACLNN_SUCCESS);
        atsup_read(&m2, a);
        atsup_read(&i2, a + 3);
        atsup_read(&mean, b);
        atsup_read(&invstd, b + 3);
        CHECK(memcmp(a, b, sizeof a) == 0);
        aclDestroyTensor(late);
        ATSUP_FREE(&m2, &i2);
    }
    ATSUP_FREE(&x, &mean, &invstd);
    free(v);
}

/* ---------------- aclnnBatchNormReduce ---------------- */

static aclnnStatus reduce_run(const aclTensor *x, aclTensor *sum, aclTensor *sq)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormReduceGetWorkspaceSize(x, sum, sq, &ws, &ex);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnBatchNormReduce, ws, ex);
}

/*
 * Reduce of a 4-D x against ref_reduce. nhwc: `shape` is (N, H, W, C) and x has
 * format NHWC; the oracle reads it as (N, C, H*W).
 */
static void check_reduce(aclDataType dt, const int64_t *shape, tsup_layout layout,
                         atsup_place place, int nhwc, uint64_t seed)
{
    int64_t numel = tsup_numel(4, shape), n = shape[0], c = nhwc ? shape[3] : shape[1];
    int64_t s = nhwc ? shape[1] * shape[2] : shape[2] * shape[3], i, j, k;
    double *v = atsup_normal(seed, numel, 0.25, 2.0, dt);
    double *stored = malloc(sizeof(double) * (size_t)numel * 2), *ncs = stored + numel;
    double *want = malloc(sizeof(double) * (size_t)c * 5), *got = want + 2 * c;
    double *scale = want + 4 * c;
    atsup_tensor x = atsup_make(dt, 4, shape, layout, place, nhwc ? NHWC : NCHW, v);
    atsup_tensor sum = atsup_make(F, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    atsup_tensor sq = atsup_make(F, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_OFFSET, ND, NULL);
    char what[96];
    snprintf(what, sizeof what, "Reduce %s %s %s", atsup_dtype_name(dt), nhwc ? "NHWC" : "NCHW",
             tsup_layout_name(layout));
    atsup_read(&x, stored);
    for (i = 0; i < n; i++)
        for (j = 0; j < c; j++)
            for (k = 0; k < s; k++)
                ncs[(i * c + j) * s + k] =
                    nhwc ? stored[(i * s + k) * c + j] : stored[(i * c + j) * s + k];
    ref_reduce(ncs, n, c, s, want, want + c);
    CHECK_ACL(reduce_run(x.t, sum.t, sq.t), ACLNN_SUCCESS);
    atsup_read(&sum, got);
    atsup_read(&sq, got + c);
    for (j = 0; j < c; j++) {
        scale[j] = 0.0;
        for (i = 0; i < n * s; i++) scale[j] += fabs(ncs[(i / s * c + j) * s + i % s]);
        CHECK_MSG(fabs(got[j] - want[j]) <= 1e-6 * scale[j] + 1e-30, "%s: sum[%lld] %.9g vs %.9g",
                  what, (long long)j, got[j], want[j]);
    }
    CHECK_MSG(tsup_close(what, got + c, want + c, c, 1e-30, 1e-6), "%s squareSum", what);
    CHECK_MSG(atsup_guard_ok(&sum) && atsup_guard_ok(&sq), "%s wrote outside", what);
    ATSUP_FREE(&x, &sum, &sq);
    TSUP_FREE_ALL(v, stored, want);
}

static void test_reduce_oracle(void)
{
    static const int64_t shapes[][4] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {3, 5, 2, 7}, {2, 17, 3, 1}};
    static const tsup_layout layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};
    size_t d, k, l;
    for (d = 0; d < 3; d++)
        for (k = 0; k < 4; k++)
            for (l = 0; l < 3; l++) {
                check_reduce(k_floats[d], shapes[k], layouts[l],
                             l == 2 ? ATSUP_OFFSET : ATSUP_PLAIN, 0, 10 * d + k + 100 * l);
                check_reduce(k_floats[d], shapes[k], layouts[l],
                             l == 0 ? ATSUP_OFFSET : ATSUP_PLAIN, 1, 7 + 10 * d + k + 100 * l);
                RETURN_IF_FAILED();
            }
}

static void test_reduce_empty(void)
{
    static const int64_t empty[] = {0, 3, 2, 2}, no_channels[] = {2, 0, 2, 2};
    static const double seven[] = {7, 7, 7};
    const int64_t zero = 0;
    atsup_tensor x = atsup_make(ACL_BF16, 4, empty, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, NCHW, NULL);
    atsup_tensor sum = atsup_vec(F, 3, seven), sq = atsup_vec(F, 3, seven);
    atsup_tensor x0 = atsup_make(F, 4, no_channels, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, NCHW, NULL);
    atsup_tensor s0 = atsup_vec(F, 0, NULL), q0 = atsup_vec(F, 0, NULL);
    atsup_tensor bad = atsup_raw(ACL_FLOAT16, 1, &zero, ND);
    double got[6];
    int i;
    CHECK_ACL(reduce_run(x.t, sum.t, sq.t), ACLNN_SUCCESS);
    atsup_read(&sum, got);
    atsup_read(&sq, got + 3);
    for (i = 0; i < 6; i++) CHECK_MSG(got[i] == 0.0, "output %d = %g, expected 0", i, got[i]);
    CHECK(atsup_guard_ok(&sum) && atsup_guard_ok(&sq));
    /* C == 0: success, nothing to write */
    CHECK_ACL(reduce_run(x0.t, s0.t, q0.t), ACLNN_SUCCESS);
    /* open question 9: validated before the empty shortcut */
    CHECK_ACL(reduce_run(x0.t, bad.t, q0.t), E_INVALID);
    CHECK_MSG_HAS("sum");
    ATSUP_FREE(&x, &sum, &sq, &x0, &s0, &q0, &bad);
}

static aclnnStatus reduce_call(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormReduceGetWorkspaceSize(a[0], a[1], a[2], null_ws ? NULL : &ws,
                                                         null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnBatchNormReduce, ws, ex);
}

enum { R_X, R_SUM, R_SQ };

static const atsup_case k_reduce_cases[] = {
    ATSUP_CASE1("NULL x", ATSUP_NULL_ARG(R_X), E_NULL, "x"),
    ATSUP_CASE1("NULL sum", ATSUP_NULL_ARG(R_SUM), E_NULL, "sum"),
    ATSUP_CASE1("NULL squareSum", ATSUP_NULL_ARG(R_SQ), E_NULL, "squareSum"),
    ATSUP_CASE1("NULL workspaceSize", ATSUP_NULL_WS, E_NULL, "workspaceSize"),
    ATSUP_CASE1("NULL executor", ATSUP_NULL_EX, E_NULL, "executor"),
    ATSUP_CASE1("INT32 x", ATSUP_RAW(R_X, ACL_INT32, NCHW, 4, 2, 3, 2, 2), E_INVALID, "x"),
    ATSUP_CASE1("UINT8 x", ATSUP_RAW(R_X, ACL_UINT8, NCHW, 4, 2, 3, 2, 2), E_INVALID, "x"),
    ATSUP_CASE1("DOUBLE x", ATSUP_RAW(R_X, ACL_DOUBLE, NCHW, 4, 2, 3, 2, 2), E_INVALID, "x"),
    ATSUP_CASE1("FLOAT16 sum", ATSUP_RAW(R_SUM, ACL_FLOAT16, ND, 1, 3), E_INVALID, "sum"),
    ATSUP_CASE1("BF16 squareSum", ATSUP_RAW(R_SQ, ACL_BF16, ND, 1, 3), E_INVALID, "squareSum"),
    ATSUP_CASE1("ND x", ATSUP_RAW(R_X, F, ND, 4, 2, 3, 2, 2), E_INVALID, "NCHW"),
    ATSUP_CASE1("NCDHW x", ATSUP_RAW(R_X, F, ACL_FORMAT_NCDHW, 4, 2, 3, 2, 2), E_INVALID, "x"),
    ATSUP_CASE1("NC1HWC0 x", ATSUP_RAW(R_X, F, ACL_FORMAT_NC1HWC0, 4, 2, 3, 2, 2), E_INVALID,
                "x"),
    ATSUP_CASE1("NCHW sum", ATSUP_RAW(R_SUM, F, NCHW, 1, 3), E_INVALID, "sum"),
    ATSUP_CASE1("NC1HWC0 squareSum", ATSUP_RAW(R_SQ, F, ACL_FORMAT_NC1HWC0, 1, 3), E_INVALID,
                "squareSum"),
    ATSUP_CASE1("rank-1 x", ATSUP_RAW(R_X, F, NCHW, 1, 3), E_INVALID, "x"),
    ATSUP_CASE1("rank-3 x", ATSUP_RAW(R_X, F, NCHW, 3, 2, 3, 4), E_INVALID, "x"),
    ATSUP_CASE1("rank-5 x", ATSUP_RAW(R_X, F, NCHW, 5, 2, 3, 2, 2, 1), E_INVALID, "x"),
    ATSUP_CASE1("rank-9 x", ATSUP_RAW(R_X, F, NCHW, 9, 1, 3, 1, 1, 1, 1, 1, 1, 1), E_INVALID, "x"),
    ATSUP_CASE1("2-D sum", ATSUP_RAW(R_SUM, F, ND, 2, 1, 3), E_INVALID, "sum"),
    ATSUP_CASE1("sum [4]", ATSUP_RAW(R_SUM, F, ND, 1, 4), E_INVALID, "sum"),
    ATSUP_CASE1("squareSum [2]", ATSUP_RAW(R_SQ, F, ND, 1, 2), E_INVALID, "squareSum"),
    ATSUP_CASE1("NHWC x, C = dim 3 = 3", ATSUP_RAW(R_X, F, NHWC, 4, 2, 2, 2, 3), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("NHWC x, dim 3 = 2 != 3", ATSUP_RAW(R_X, F, NHWC, 4, 2, 3, 2, 2), E_INVALID, "sum"),
    ATSUP_CASE1("empty x", ATSUP_RAW(R_X, ACL_FLOAT16, NCHW, 4, 0, 3, 2, 2), ACLNN_SUCCESS, NULL),
    ATSUP_CASE2("empty x, FLOAT16 sum", ATSUP_RAW(R_X, F, NCHW, 4, 0, 3, 2, 2),
                ATSUP_RAW(R_SUM, ACL_FLOAT16, ND, 1, 3), E_INVALID, "sum"),
    ATSUP_CASE2("empty x, ND format", ATSUP_RAW(R_X, F, ND, 4, 2, 3, 0, 2),
                ATSUP_RAW(R_SUM, F, ND, 1, 3), E_INVALID, "x"),
    ATSUP_CASE2("NULL x before bad sum dtype", ATSUP_NULL_ARG(R_X),
                ATSUP_RAW(R_SUM, ACL_INT32, ND, 1, 3), E_NULL, "x"),
    ATSUP_CASE2("NULL squareSum before bad x dtype", ATSUP_NULL_ARG(R_SQ),
                ATSUP_RAW(R_X, ACL_INT32, NCHW, 4, 2, 3, 2, 2), E_NULL, "squareSum"),
    ATSUP_CASE2("bad x dtype before NULL workspaceSize", ATSUP_NULL_WS,
                ATSUP_RAW(R_X, ACL_INT32, NCHW, 4, 2, 3, 2, 2), E_INVALID, "must be one of"),
    ATSUP_CASE2("dtype before shape", ATSUP_RAW(R_X, ACL_INT32, NCHW, 4, 2, 3, 2, 2),
                ATSUP_RAW(R_SUM, F, ND, 1, 4), E_INVALID, "must be one of"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(R_X, F, ND, 4, 2, 3, 2, 2),
                ATSUP_RAW(R_SUM, F, ND, 1, 4), E_INVALID, "NCHW"),
};

static void test_reduce_arguments(void)
{
    static const int64_t shape[] = {2, 3, 2, 2};
    atsup_tensor x = atsup_make(F, 4, shape, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, NCHW, NULL);
    atsup_tensor sum = atsup_vec(F, 3, NULL), sq = atsup_vec(F, 3, NULL);
    aclTensor *args[3];
    int failed;
    args[R_X] = x.t;
    args[R_SUM] = sum.t;
    args[R_SQ] = sq.t;
    failed = atsup_expect_all(reduce_call, args, 3, k_reduce_cases, TSUP_COUNT(k_reduce_cases));
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
    ATSUP_FREE(&x, &sum, &sq);
}

static void test_reduce_executor(void)
{
    static const int64_t shape[] = {2, 3, 4, 5};
    double *v = atsup_normal(9, 120, 0.0, 1.0, F);
    atsup_tensor x = atsup_make(F, 4, shape, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, NCHW, v);
    atsup_tensor sum = atsup_vec(F, 3, NULL), sq = atsup_vec(F, 3, NULL);
    op_ctx ctx;
    ctx.t[0] = x.t;
    ctx.t[1] = sum.t;
    ctx.t[2] = sq.t;
    CHECK(atsup_check_executor_rules(reduce_phase1, &ctx, aclnnBatchNormReduce));
    run_repeatable(1);
    /* x without memory yet: phase 1 passes, phase 2 gives 161001 */
    CHECK(atsup_check_no_data(reduce_phase1, &ctx, aclnnBatchNormReduce, &ctx.t[0], F, 4, shape,
                              NCHW));
    ATSUP_FREE(&x, &sum, &sq);
    free(v);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_stats_oracle),      SBN_TEST_CASE(test_stats_doc_example),
    SBN_TEST_CASE(test_stats_empty),       SBN_TEST_CASE(test_stats_arguments),
    SBN_TEST_CASE(test_stats_executor),    SBN_TEST_CASE(test_reduce_oracle),
    SBN_TEST_CASE(test_reduce_empty),      SBN_TEST_CASE(test_reduce_arguments),
    SBN_TEST_CASE(test_reduce_executor),
};

SBN_TEST_MAIN(k_cases)
