/*
 * test_aclnn_sync_backward_reduce.c - aclnnSyncBatchNormBackwardReduce through the public
 * API: sumDyXmu = sumDyDxPad - mean * sumDy and y = sumDyXmu * invertStd against the
 * same formulas in double, for FLOAT, FLOAT16 and BF16, shapes [C], [1, C] and
 * [2, 3, C], views contiguous, strided (step 2) and at an offset into their storage;
 * the checks (each NULL -> 161001; INT32, DOUBLE, a dtype differing from sumDy's, a
 * private format, rank 9, a shape differing from sumDy's, an empty sumDy and a view
 * that is not one strided run -> 161002; NULL workspaceSize -> 161001) and the executor
 * rules every op shares. Tolerance: each output rounded once from double:
 * |got - want| <= 2 u(dt) |want| + 1e-9.
 */
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_sync_batch_norm_backward_reduce.h"
#include "aclnnop/level2/aclnn_sync_batch_norm_backward_reduce.h"

#define ND ACL_FORMAT_ND
#define CF TSUP_CHANNELS_FIRST
#define ST TSUP_STRIDED

enum { A_SUM_DY, A_PAD, A_MEAN, A_INVSTD, A_XMU, A_Y, A_N };

static void run_case(aclDataType dt, int rank, const int64_t *shape, tsup_layout layout,
                     atsup_place place)
{
    tsup_rng rng = tsup_rng_seed(70u + (unsigned)dt + 5u * (unsigned)rank + (unsigned)layout);
    atsup_tv t[A_N];
    double want_xmu[64], want_y[64];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int64_t i;
    int k;
    t[A_SUM_DY] = atsup_tv_make(dt, rank, shape, layout, place, ND, &rng, 3.0, 10.0);
    t[A_PAD] = atsup_tv_make(dt, rank, shape, CF, place, ND, &rng, -2.0, 30.0);
    t[A_MEAN] = atsup_tv_make(dt, rank, shape, layout, ATSUP_PLAIN, ND, &rng, 0.5, 2.0);
    t[A_INVSTD] = atsup_tv_make(dt, rank, shape, CF, ATSUP_OFFSET, ND, &rng, 1.5, 0.2);
    t[A_XMU] = atsup_tv_make(dt, rank, shape, layout, ATSUP_OFFSET, ND, NULL, 0, 0);
    t[A_Y] = atsup_tv_make(dt, rank, shape, CF, place, ND, NULL, 0, 0);
    CHECK_ACL(aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(
                  t[0].a.t, t[1].a.t, t[2].a.t, t[3].a.t, t[4].a.t, t[5].a.t, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnSyncBatchNormBackwardReduce, ws, ex), ACLNN_SUCCESS);
    for (i = 0; i < t[0].n; i++) {
        want_xmu[i] = t[A_PAD].v[i] - t[A_MEAN].v[i] * t[A_SUM_DY].v[i];
        want_y[i] = want_xmu[i] * t[A_INVSTD].v[i];
    }
    CHECK_MSG(atsup_tv_close("sumDyXmu", &t[A_XMU], want_xmu, dt) &&
                  atsup_tv_close("y", &t[A_Y], want_y, dt),
              "%s rank %d layout %d place %d", atsup_dtype_name(dt), rank, (int)layout,
              (int)place);
    for (k = 0; k < A_N; k++) atsup_tv_free(&t[k]);
}

static void numbers_against_oracle(void)
{
    static const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    static const int64_t s1[1] = {7}, s2[2] = {1, 9}, s3[3] = {2, 3, 5};
    int d;
    for (d = 0; d < 3; d++) {
        run_case(dts[d], 1, s1, CF, ATSUP_PLAIN);
        run_case(dts[d], 1, s1, ST, ATSUP_OFFSET); /* a 1-D view of stride 2 */
        run_case(dts[d], 2, s2, CF, ATSUP_OFFSET);
        run_case(dts[d], 2, s2, ST, ATSUP_PLAIN);  /* [1, 9] with the last dim at step 2 */
        run_case(dts[d], 3, s3, CF, ATSUP_OFFSET);
    }
}

static aclnnStatus call(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(
        a[0], a[1], a[2], a[3], a[4], a[5], null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnSyncBatchNormBackwardReduce, ws, ex);
}

static void make_valid(atsup_tv *t)
{
    const int64_t c = 4;
    int k;
    for (k = 0; k < A_N; k++) t[k] = atsup_tv_make(ACL_FLOAT, 1, &c, CF, ATSUP_PLAIN, ND, NULL, 1, 0);
}

static void argument_checks(void)
{
    const atsup_case cases[] = {
        ATSUP_CASE1("sumDy NULL", ATSUP_NULL_ARG(A_SUM_DY), ACLNN_ERR_PARAM_NULLPTR, "sumDy"),
        ATSUP_CASE1("sumDyDxPad NULL", ATSUP_NULL_ARG(A_PAD), ACLNN_ERR_PARAM_NULLPTR,
                    "sumDyDxPad"),
        ATSUP_CASE1("mean NULL", ATSUP_NULL_ARG(A_MEAN), ACLNN_ERR_PARAM_NULLPTR, "mean"),
        ATSUP_CASE1("invertStd NULL", ATSUP_NULL_ARG(A_INVSTD), ACLNN_ERR_PARAM_NULLPTR,
                    "invertStd"),
        ATSUP_CASE1("sumDyXmu NULL", ATSUP_NULL_ARG(A_XMU), ACLNN_ERR_PARAM_NULLPTR, "sumDyXmu"),
        ATSUP_CASE1("y NULL", ATSUP_NULL_ARG(A_Y), ACLNN_ERR_PARAM_NULLPTR, "y"),
        ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, ACLNN_ERR_PARAM_NULLPTR, "workspaceSize"),
        ATSUP_CASE1("executor NULL", ATSUP_NULL_EX, ACLNN_ERR_PARAM_NULLPTR, "executor"),
        ATSUP_CASE1("mean int32", ATSUP_RAW(A_MEAN, ACL_INT32, ND, 1, 4), ACLNN_ERR_PARAM_INVALID,
                    "mean"),
        ATSUP_CASE1("y double", ATSUP_RAW(A_Y, ACL_DOUBLE, ND, 1, 4), ACLNN_ERR_PARAM_INVALID, "y"),
        ATSUP_CASE1("invertStd f16 vs sumDy f32", ATSUP_RAW(A_INVSTD, ACL_FLOAT16, ND, 1, 4),
                    ACLNN_ERR_PARAM_INVALID, "invertStd"),
        ATSUP_CASE1("private format", ATSUP_RAW(A_PAD, ACL_FLOAT, ACL_FORMAT_NC1HWC0, 1, 4),
                    ACLNN_ERR_PARAM_INVALID, "sumDyDxPad"),
        ATSUP_CASE1("rank 9", ATSUP_RAW(A_SUM_DY, ACL_FLOAT, ND, 9, 1, 1, 1, 1, 1, 1, 1, 1, 4),
                    ACLNN_ERR_PARAM_INVALID, "sumDy"),
        ATSUP_CASE1("shape [5]", ATSUP_RAW(A_XMU, ACL_FLOAT, ND, 1, 5), ACLNN_ERR_PARAM_INVALID,
                    "sumDyXmu"),
        ATSUP_CASE1("shape [1, 4] (no broadcasting)", ATSUP_RAW(A_MEAN, ACL_FLOAT, ND, 2, 1, 4),
                    ACLNN_ERR_PARAM_INVALID, "mean"),
        ATSUP_CASE2("empty", ATSUP_RAW(A_SUM_DY, ACL_FLOAT, ND, 1, 0),
                    ATSUP_RAW(A_PAD, ACL_FLOAT, ND, 1, 0), ACLNN_ERR_PARAM_INVALID, "sumDy"),
        ATSUP_CASE2("NULL before dtype", ATSUP_NULL_ARG(A_Y),
                    ATSUP_RAW(A_MEAN, ACL_INT32, ND, 1, 4), ACLNN_ERR_PARAM_NULLPTR, "y"),
        ATSUP_CASE2("dtype before shape", ATSUP_RAW(A_MEAN, ACL_INT32, ND, 1, 4),
                    ATSUP_RAW(A_Y, ACL_FLOAT, ND, 1, 9), ACLNN_ERR_PARAM_INVALID, "mean"),
    };
    atsup_tv t[A_N];
    aclTensor *a[A_N];
    int k, failed;
    make_valid(t);
    for (k = 0; k < A_N; k++) a[k] = t[k].a.t;
    failed = atsup_expect_all(call, a, A_N, cases, (int)(sizeof cases / sizeof cases[0]));
    CHECK_MSG(failed == 0, "%d cases failed", failed);
    for (k = 0; k < A_N; k++) atsup_tv_free(&t[k]);
}

/* A [2, 2] view whose rows are 3 apart is not one strided run: refused in phase 1. */
static void unflattenable_view(void)
{
    static const int64_t dims[2] = {2, 2}, strides[2] = {3, 1}, storage[1] = {6};
    float data[6][A_N];
    aclTensor *a[A_N];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int k;
    memset(data, 0, sizeof data);
    for (k = 0; k < A_N; k++)
        a[k] = aclCreateTensor(dims, 2, ACL_FLOAT, k == A_MEAN ? strides : NULL, 0, ND,
                               k == A_MEAN ? storage : dims, k == A_MEAN ? 1 : 2, data[k]);
    CHECK_ACL(aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5],
                                                               &ws, &ex),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("mean");
    for (k = 0; k < A_N; k++) aclDestroyTensor(a[k]);
}

static aclnnStatus phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor *const *a = (aclTensor *const *)ctx;
    return aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5], ws,
                                                            ex);
}

static void executor_rules(void)
{
    atsup_tv t[A_N];
    aclTensor *a[A_N];
    int k;
    make_valid(t);
    for (k = 0; k < A_N; k++) a[k] = t[k].a.t;
    CHECK(atsup_check_executor_rules(phase1, a, aclnnSyncBatchNormBackwardReduce));
    for (k = 0; k < A_N; k++) atsup_tv_free(&t[k]);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(numbers_against_oracle), SBN_TEST_CASE(argument_checks),
    SBN_TEST_CASE(unflattenable_view),     SBN_TEST_CASE(executor_rules),
};

SBN_TEST_MAIN(k_cases)
