/*
 * test_aclnn_fast_backward.c - aclnnFastBatchNormBackward through the public API:
 * numbers against the double oracle (ref_batch_norm_backward_train in training; the
 * eval formulas written out here in double) for FLOAT, FLOAT16 and BF16 activations,
 * inputs contiguous, strided and at an offset, channels-last gradInput, both versions
 * (0 and 1 give the same bits), masked outputs NULL and untouched; the checks this op
 * adds to aclnnBatchNormBackward's (version outside {0, 1} -> 161002; gradInput of
 * another dtype than gradOut -> 161002) and the shared ones (NULL gradOut/input or an
 * enabled output -> 161001, outputMask of size 2 -> 161002, private format, rank 9,
 * channel mismatch); the executor rules every op shares. Tolerance: outputs computed
 * in double from the stored inputs, rounded once: |got - want| <= 2 u(out) |want| + 1e-9;
 * gradInput (the elementwise map, in float for these dtypes) adds the map's bound from
 * the oracle's quantities: training 6 u |invstd w| (|dy| + |sum_dy/N| + |(x - mean)
 * invstd^2 sum_dy_xmu/N|), eval 4 u |dy invstd w|, u = 2^-24 (atsup_backward_tol,
 * atsup_normalize_tol).
 */
#include <math.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_fast_batch_norm_backward.h"
#include "aclnnop/level2/aclnn_fast_batch_norm_backward.h" /* the older path, same file */
#include "ref/ref.h"

#define ND ACL_FORMAT_ND
#define CF TSUP_CHANNELS_FIRST
#define ST TSUP_STRIDED
#define PL ATSUP_PLAIN
#define OF ATSUP_OFFSET

enum { N = 3, C = 4, S = 5 };

static atsup_tv vec(aclDataType dt, tsup_rng *rng, double mean, double std)
{
    const int64_t c = C;
    return atsup_tv_make(dt, 1, &c, ST, OF, ND, rng, mean, std);
}

/* One training or eval call of dtype dt and version v; checks every output. */
static void run_case(aclDataType dt, int training, int version)
{
    static const int64_t shape[3] = {N, C, S};
    tsup_rng rng = tsup_rng_seed(40u + (unsigned)dt * 3u + (unsigned)training);
    const bool all[3] = {true, true, true};
    atsup_tv x = atsup_tv_make(dt, 3, shape, CF, PL, ND, &rng, 0.5, 2.0);
    atsup_tv dy = atsup_tv_make(dt, 3, shape, ST, OF, ND, &rng, 0.0, 1.0);
    atsup_tv gi = atsup_tv_make(dt, 3, shape, ST, OF, ND, NULL, 0, 0);
    atsup_tv w = vec(ACL_FLOAT, &rng, 1.0, 0.5), rm = vec(ACL_FLOAT, &rng, 0.3, 0.2);
    atsup_tv rv = vec(ACL_FLOAT, &rng, 2.0, 0.1), sm = vec(ACL_FLOAT, &rng, 0.4, 0.2);
    atsup_tv si = vec(ACL_FLOAT, &rng, 0.8, 0.05), gw = vec(ACL_FLOAT, NULL, 0, 0);
    atsup_tv gb = vec(ACL_FLOAT, NULL, 0, 0);
    double giw[N * C * S], gww[C], gbw[C], tol[N * C * S], inv[C], sum_dy[C], sum_dyx[C];
    const double map_u = atsup_map_u(dt, dt, dt); /* gradOut, input and gradInput are dt */
    const double eps = (double)(float)1e-3;
    aclBoolArray *mask = aclCreateBoolArray(all, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int64_t i, c, k;
    CHECK_ACL(aclnnFastBatchNormBackwardGetWorkspaceSize(
                  dy.a.t, x.a.t, w.a.t, rm.a.t, rv.a.t, sm.a.t, si.a.t, training, 1e-3, mask,
                  version, gi.a.t, gw.a.t, gb.a.t, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnFastBatchNormBackward, ws, ex), ACLNN_SUCCESS);
    if (training) {
        ref_batch_norm_backward_train(dy.v, x.v, N, C, S, w.v, sm.v, si.v, giw, gww, gbw);
        ref_backward_reduce(dy.v, x.v, N, C, S, sm.v, sum_dy, sum_dyx);
        atsup_backward_tol(dy.v, x.v, N, C, S, sm.v, si.v, w.v, sum_dy, sum_dyx,
                           (double)(N * S), giw, dt, map_u, tol);
    } else {
        for (c = 0; c < C; c++) {
            const double invstd = inv[c] = 1.0 / sqrt(rv.v[c] + eps);
            double sdy = 0, sdyx = 0;
            for (i = 0; i < N; i++)
                for (k = 0; k < S; k++) {
                    const int64_t j = (i * C + c) * S + k;
                    giw[j] = dy.v[j] * w.v[c] * invstd;
                    sdy += dy.v[j];
                    sdyx += dy.v[j] * (x.v[j] - rm.v[c]);
                }
            gww[c] = sdyx * invstd;
            gbw[c] = sdy;
        }
        /* grad_input = dy * invstd * w: the normalize map of dy with mean 0, no bias */
        atsup_normalize_tol(dy.v, N, C, S, NULL, inv, w.v, NULL, giw, dt, map_u, tol);
    }
    CHECK_MSG(atsup_tv_close_tol("gradInput", &gi, giw, tol) &&
                  atsup_tv_close("gradWeight", &gw, gww, ACL_FLOAT) &&
                  atsup_tv_close("gradBias", &gb, gbw, ACL_FLOAT),
              "%s training=%d version=%d", atsup_dtype_name(dt), training, version);
    aclDestroyBoolArray(mask);
    ATSUP_TV_FREE(&x, &dy, &gi, &w, &rm, &rv, &sm, &si, &gw, &gb);
}

static void numbers_against_oracle(void)
{
    static const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    int d, training, version;
    for (d = 0; d < 3; d++)
        for (training = 0; training <= 1; training++)
            for (version = 0; version <= 1; version++) run_case(dts[d], training, version);
}

/* Masked outputs may be NULL and keep their values; a mask of size 2 is refused. */
static void masks(void)
{
    static const int64_t shape[2] = {6, C};
    tsup_rng rng = tsup_rng_seed(5);
    const bool only_bias[3] = {false, false, true}, two[2] = {true, true};
    atsup_tv x = atsup_tv_make(ACL_FLOAT, 2, shape, CF, PL, ND, &rng, 0, 1);
    atsup_tv dy = atsup_tv_make(ACL_FLOAT, 2, shape, CF, PL, ND, &rng, 0, 1);
    atsup_tv gb = vec(ACL_FLOAT, NULL, 0, 0), gw = vec(ACL_FLOAT, NULL, 7.0, 0);
    double want[C], sevens[C];
    aclBoolArray *m = aclCreateBoolArray(only_bias, 3), *m2 = aclCreateBoolArray(two, 2);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int64_t i, c;
    CHECK_ACL(aclnnFastBatchNormBackwardGetWorkspaceSize(dy.a.t, x.a.t, NULL, NULL, NULL, NULL,
                                                         NULL, true, 1e-5, m, 0, NULL, gw.a.t,
                                                         gb.a.t, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnFastBatchNormBackward, ws, ex), ACLNN_SUCCESS);
    for (c = 0; c < C; c++) {
        want[c] = 0, sevens[c] = 7.0;
        for (i = 0; i < 6; i++) want[c] += dy.v[i * C + c];
    }
    CHECK(atsup_tv_close("gradBias", &gb, want, ACL_FLOAT));
    CHECK(atsup_tv_close("gradWeight untouched", &gw, sevens, ACL_FLOAT));
    CHECK_ACL(aclnnFastBatchNormBackwardGetWorkspaceSize(dy.a.t, x.a.t, NULL, NULL, NULL, NULL,
                                                         NULL, true, 1e-5, m2, 0, NULL, gw.a.t,
                                                         gb.a.t, &ws, &ex),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("outputMask");
    aclDestroyBoolArray(m);
    aclDestroyBoolArray(m2);
    ATSUP_TV_FREE(&x, &dy, &gb, &gw);
}

/* ---- argument checks ---- */

enum { A_DY, A_X, A_W, A_RM, A_RV, A_SM, A_SI, A_GI, A_GW, A_GB, A_N };
static int g_version;

static aclnnStatus call(aclTensor *const *a, int null_ws, int null_ex)
{
    const bool all[3] = {true, true, true};
    aclBoolArray *m = aclCreateBoolArray(all, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnFastBatchNormBackwardGetWorkspaceSize(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], true, 1e-5, m, g_version, a[7], a[8], a[9],
        null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    aclDestroyBoolArray(m);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnFastBatchNormBackward, ws, ex);
}

static void make_valid(atsup_tv *t)
{
    static const int64_t shape[3] = {2, C, 3};
    int k;
    for (k = 0; k < A_N; k++)
        t[k] = (k == A_DY || k == A_X || k == A_GI)
                   ? atsup_tv_make(ACL_FLOAT, 3, shape, CF, PL, ND, NULL, 1.0, 0)
                   : vec(ACL_FLOAT, NULL, 1.0, 0);
}

static void argument_checks(void)
{
    const atsup_case cases[] = {
        ATSUP_CASE1("gradOut NULL", ATSUP_NULL_ARG(A_DY), ACLNN_ERR_PARAM_NULLPTR, "gradOut"),
        ATSUP_CASE1("gradInput NULL", ATSUP_NULL_ARG(A_GI), ACLNN_ERR_PARAM_NULLPTR, "gradInput"),
        ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, ACLNN_ERR_PARAM_NULLPTR, "workspaceSize"),
        ATSUP_CASE1("gradInput f16", ATSUP_RAW(A_GI, ACL_FLOAT16, ND, 3, 2, C, 3),
                    ACLNN_ERR_PARAM_INVALID, "gradInput"),
        ATSUP_CASE1("input int32", ATSUP_RAW(A_X, ACL_INT32, ND, 3, 2, C, 3),
                    ACLNN_ERR_PARAM_INVALID, "input"),
        ATSUP_CASE1("private format", ATSUP_RAW(A_X, ACL_FLOAT, ACL_FORMAT_NC1HWC0, 3, 2, C, 3),
                    ACLNN_ERR_PARAM_INVALID, "input"),
        ATSUP_CASE1("rank 9", ATSUP_RAW(A_X, ACL_FLOAT, ND, 9, 1, C, 1, 1, 1, 1, 1, 1, 1),
                    ACLNN_ERR_PARAM_INVALID, "input"),
        ATSUP_CASE1("weight [C+1]", ATSUP_RAW(A_W, ACL_FLOAT, ND, 1, C + 1),
                    ACLNN_ERR_PARAM_INVALID, "weight"),
        ATSUP_CASE2("NULL before dtype", ATSUP_NULL_ARG(A_X),
                    ATSUP_RAW(A_DY, ACL_INT32, ND, 3, 2, C, 3), ACLNN_ERR_PARAM_NULLPTR, "input"),
    };
    atsup_tv t[A_N];
    aclTensor *a[A_N];
    int k, failed;
    make_valid(t);
    for (k = 0; k < A_N; k++) a[k] = t[k].a.t;
    g_version = 0;
    failed = atsup_expect_all(call, a, A_N, cases, (int)(sizeof cases / sizeof cases[0]));
    CHECK_MSG(failed == 0, "%d cases failed", failed);
    g_version = 1;
    CHECK_ACL(call(a, 0, 0), ACLNN_SUCCESS);
    g_version = 2;
    CHECK_ACL(call(a, 0, 0), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("version");
    g_version = -1;
    CHECK_ACL(call(a, 0, 0), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("version");
    for (k = 0; k < A_N; k++) atsup_tv_free(&t[k]);
}

typedef struct ctx_t {
    aclTensor *a[A_N];
    aclBoolArray *mask;
} ctx_t;

static aclnnStatus phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    ctx_t *b = (ctx_t *)ctx;
    return aclnnFastBatchNormBackwardGetWorkspaceSize(b->a[0], b->a[1], b->a[2], b->a[3],
                                                      b->a[4], b->a[5], b->a[6], true, 1e-5,
                                                      b->mask, 1, b->a[7], b->a[8], b->a[9], ws,
                                                      ex);
}

static void executor_rules(void)
{
    const bool all[3] = {true, true, true};
    atsup_tv t[A_N];
    ctx_t ctx;
    int k;
    make_valid(t);
    for (k = 0; k < A_N; k++) ctx.a[k] = t[k].a.t;
    ctx.mask = aclCreateBoolArray(all, 3);
    CHECK(atsup_check_executor_rules(phase1, &ctx, aclnnFastBatchNormBackward));
    aclDestroyBoolArray(ctx.mask);
    for (k = 0; k < A_N; k++) atsup_tv_free(&t[k]);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(numbers_against_oracle), SBN_TEST_CASE(masks),
    SBN_TEST_CASE(argument_checks),        SBN_TEST_CASE(executor_rules),
};

SBN_TEST_MAIN(k_cases)
