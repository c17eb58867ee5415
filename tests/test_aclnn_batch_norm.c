/*
 * test_aclnn_batch_norm.c - aclnnBatchNorm and aclnnBatchNormBackward through the
 * public aclnn API. Argument checks: every NULL (tensors, outputMask, workspaceSize,
 * executor), dtypes outside the list (integer and DOUBLE), gradOut/input dtypes that
 * differ, the private format NC1HWC0 (and input/output or gradInput formats that
 * differ, 5-D ND), ranks 1 and 9, each shape mismatch, C == 0, outputMask of size 2
 * and 4, eps and momentum out of range, the check order when two arguments are wrong,
 * what eval and a disabled output leave unchecked, and the recent message naming the
 * argument. Numbers against the double oracle (ref_batch_norm_train, ref_elemt,
 * ref_batch_norm_backward_train, ref_backward_reduce) for FLOAT, FLOAT16 and BF16,
 * training and eval, optional tensors present or absent (defaults 1, 0, 0, 1 / 1, 0,
 * 1, 0, 1), every outputMask (disabled outputs untouched), NHWC and NDHWC tensors
 * (C = last dim), inputs and outputs contiguous, channels-last, strided and at an
 * offset, output in place over input, data far from zero (mean 1000, std 2); forward
 * then backward end to end. Empty inputs (validated first; BatchNorm training sets
 * saveMean 0 and saveInvstd NaN, nothing else is written). Executors: the shared
 * rules (atsup_check_executor_rules) on both ops and a repeatable eval BatchNorm rerun
 * with new input and output addresses.
 * Tolerances: outputs are computed in double from the stored inputs and rounded once:
 * |got - want| <= 2 u(out) |want| + 1e-9. The elementwise maps' outputs (output;
 * gradInput) compute in float for FLOAT/FLOAT16/BF16 tensors and add the map's bound:
 * normalize (output, eval gradInput) 4 u (|b| + |(x - mean) invstd w|), training
 * gradInput 6 u |invstd w| (|dy| + |sum_dy/N| + |(x - mean) invstd^2 sum_dy_xmu/N|),
 * u = 2^-24, from the oracle's own quantities (atsup_normalize_tol, atsup_backward_tol).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "ref/ref.h"

#define SENTINEL 7.0
#define F ACL_FLOAT
#define ND ACL_FORMAT_ND
#define PRIV ACL_FORMAT_NC1HWC0
#define E161001 ACLNN_ERR_PARAM_NULLPTR
#define E161002 ACLNN_ERR_PARAM_INVALID
#define H ACL_FLOAT16
#define B ACL_BF16
#define CF TSUP_CHANNELS_FIRST
#define CL TSUP_CHANNELS_LAST
#define ST TSUP_STRIDED
#define PL ATSUP_PLAIN
#define OF ATSUP_OFFSET
#define NHWC ACL_FORMAT_NHWC

static atsup_tv make_vec(aclDataType dt, int64_t c, tsup_layout layout, tsup_rng *rng, double mean,
                         double std)
{
    return atsup_tv_make(dt, 1, &c, layout, layout == TSUP_STRIDED ? ATSUP_OFFSET : ATSUP_PLAIN, ND,
                         rng, mean, std);
}

/* 1 when every value of t is still `value` (a tensor that must not be written). */
static int untouched(const char *what, const atsup_tv *t, double value)
{
    double *want = tsup_alloc_fill(t->n, value);
    int ok = atsup_tv_close(what, t, want, ACL_DOUBLE);
    free(want);
    return ok;
}

/* (N, C, S) geometry of a shape: C = dim 1, or the last dim when channels_last. */
static void geometry(int rank, const int64_t *shape, int cl, int64_t *n, int64_t *c, int64_t *s)
{
    int d;
    *n = shape[0];
    *c = shape[cl ? rank - 1 : 1];
    *s = 1;
    for (d = 1; d < rank; d++)
        if (d != (cl ? rank - 1 : 1)) *s *= shape[d];
}

/* Logical row-major values <-> (N, C, S) order, for channels-last tensors. */
static void to_ncs(const double *v, double *out, int64_t n, int64_t c, int64_t s, int cl, int back)
{
    int64_t i, j, k;
    for (i = 0; i < n; i++)
        for (j = 0; j < c; j++)
            for (k = 0; k < s; k++) {
                int64_t ncs = (i * c + j) * s + k, mem = cl ? (i * s + k) * c + j : ncs;
                if (back)
                    out[mem] = v[ncs];
                else
                    out[ncs] = v[mem];
            }
}

/* ---------------- argument checks ---------------- */

enum { BN_INPUT, BN_WEIGHT, BN_BIAS, BN_RMEAN, BN_RVAR, BN_OUTPUT, BN_SAVE_MEAN, BN_SAVE_INVSTD,
       BN_N };
enum { BB_GRAD_OUT, BB_INPUT, BB_WEIGHT, BB_RMEAN, BB_RVAR, BB_SAVE_MEAN, BB_SAVE_INVSTD,
       BB_GRAD_INPUT, BB_GRAD_WEIGHT, BB_GRAD_BIAS, BB_N };

static bool g_training = true, g_mask[4] = {true, true, true, true}, g_mask_null;
static double g_eps = 1e-5, g_momentum = 0.1;
static uint64_t g_mask_size = 3;

static aclnnStatus call_bn(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], g_training,
                                                   g_momentum, g_eps, a[5], a[6], a[7],
                                                   null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnBatchNorm, ws, ex);
}

static aclnnStatus call_bb(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclBoolArray *mask = g_mask_null ? NULL : aclCreateBoolArray(g_mask, g_mask_size);
    aclnnStatus s = aclnnBatchNormBackwardGetWorkspaceSize(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], g_training, g_eps, mask, a[7], a[8], a[9],
        null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    if (s == ACLNN_SUCCESS) s = atsup_run(aclnnBatchNormBackward, ws, ex);
    if (mask) aclDestroyBoolArray(mask);
    return s;
}

/* Valid arguments of BatchNorm (bn) or BatchNormBackward: x [2, 3, 4], [3] vectors of ones. */
static int make_valid(atsup_tv *t, int bn)
{
    static const int64_t x[3] = {2, 3, 4};
    int k, n = bn ? BN_N : BB_N;
    for (k = 0; k < n; k++) {
        int big = bn ? k == BN_INPUT || k == BN_OUTPUT
                     : k == BB_GRAD_OUT || k == BB_INPUT || k == BB_GRAD_INPUT;
        t[k] = big ? atsup_tv_make(F, 3, x, CF, PL, ND, NULL, 0.5, 0)
                   : make_vec(F, 3, k % 2 ? ST : CF, NULL, 1.0, 0);
    }
    return n;
}

/* Runs a table over fresh valid arguments; returns the failures. */
static int run_table(atsup_call_fn fn, int bn, const atsup_case *cases, int ncases)
{
    atsup_tv t[BB_N];
    aclTensor *a[BB_N];
    int k, n = make_valid(t, bn), failed;
    for (k = 0; k < n; k++) a[k] = t[k].a.t;
    failed = atsup_expect_all(fn, a, n, cases, ncases);
    for (k = 0; k < n; k++) atsup_tv_free(&t[k]);
    return failed;
}

#define X3(s, dt, fmt, ...) ATSUP_RAW(s, dt, fmt, 3, __VA_ARGS__)
#define V1(s, dt, fmt, c) ATSUP_RAW(s, dt, fmt, 1, c)
#define R9(s) ATSUP_RAW(s, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1)

static const atsup_case k_bn_train[] = {
    ATSUP_CASE1("input NULL", ATSUP_NULL_ARG(BN_INPUT), E161001, "input"),
    ATSUP_CASE1("output NULL", ATSUP_NULL_ARG(BN_OUTPUT), E161001, "output"),
    ATSUP_CASE1("saveMean NULL", ATSUP_NULL_ARG(BN_SAVE_MEAN), E161001, "saveMean"),
    ATSUP_CASE1("saveInvstd NULL", ATSUP_NULL_ARG(BN_SAVE_INVSTD), E161001, "saveInvstd"),
    ATSUP_CASE2("weight, bias NULL", ATSUP_NULL_ARG(BN_WEIGHT), ATSUP_NULL_ARG(BN_BIAS), 0, NULL),
    ATSUP_CASE2("running NULL", ATSUP_NULL_ARG(BN_RMEAN), ATSUP_NULL_ARG(BN_RVAR), 0, NULL),
    ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, E161001, "workspaceSize"),
    ATSUP_CASE1("executor NULL", ATSUP_NULL_EX, E161001, "executor"),
    ATSUP_CASE1("input INT32", X3(BN_INPUT, ACL_INT32, ND, 2, 3, 4), E161002, "input"),
    ATSUP_CASE1("output DOUBLE", X3(BN_OUTPUT, ACL_DOUBLE, ND, 2, 3, 4), E161002, "output"),
    ATSUP_CASE1("saveMean INT8", V1(BN_SAVE_MEAN, ACL_INT8, ND, 3), E161002, "saveMean"),
    ATSUP_CASE1("saveInvstd BOOL", V1(BN_SAVE_INVSTD, ACL_BOOL, ND, 3), E161002, "saveInvstd"),
    ATSUP_CASE1("weight INT64", V1(BN_WEIGHT, ACL_INT64, ND, 3), E161002, "weight"),
    ATSUP_CASE1("bias UINT8", V1(BN_BIAS, ACL_UINT8, ND, 3), E161002, "bias"),
    ATSUP_CASE1("runningMean INT32", V1(BN_RMEAN, ACL_INT32, ND, 3), E161002, "runningMean"),
    ATSUP_CASE1("runningVar DOUBLE", V1(BN_RVAR, ACL_DOUBLE, ND, 3), E161002, "runningVar"),
    ATSUP_CASE1("input private", X3(BN_INPUT, F, PRIV, 2, 3, 4), E161002, "NC1HWC0"),
    ATSUP_CASE2("both private", X3(BN_INPUT, F, PRIV, 2, 3, 4), X3(BN_OUTPUT, F, PRIV, 2, 3, 4),
                E161002, "private"),
    ATSUP_CASE1("weight private", V1(BN_WEIGHT, F, PRIV, 3), E161002, "weight"),
    ATSUP_CASE2("5-D ND", ATSUP_RAW(BN_INPUT, F, ND, 5, 2, 3, 2, 2, 2),
                ATSUP_RAW(BN_OUTPUT, F, ND, 5, 2, 3, 2, 2, 2), E161002, "5-D"),
    ATSUP_CASE2("5-D NCDHW", ATSUP_RAW(BN_INPUT, F, ACL_FORMAT_NCDHW, 5, 2, 3, 2, 2, 2),
                ATSUP_RAW(BN_OUTPUT, F, ACL_FORMAT_NCDHW, 5, 2, 3, 2, 2, 2), 0, NULL),
    ATSUP_CASE2("NHWC: C is last", ATSUP_RAW(BN_INPUT, F, ACL_FORMAT_NHWC, 4, 2, 5, 4, 3),
                ATSUP_RAW(BN_OUTPUT, F, ACL_FORMAT_NHWC, 4, 2, 5, 4, 3), 0, NULL),
    ATSUP_CASE2("NHWC: [C] checked against the last dim",
                ATSUP_RAW(BN_INPUT, F, ACL_FORMAT_NHWC, 4, 2, 3, 4, 5),
                ATSUP_RAW(BN_OUTPUT, F, ACL_FORMAT_NHWC, 4, 2, 3, 4, 5), E161002, "weight"),
    ATSUP_CASE2("rank 1", V1(BN_INPUT, F, ND, 2), V1(BN_OUTPUT, F, ND, 2), E161002, "rank"),
    ATSUP_CASE2("rank 9", R9(BN_INPUT), R9(BN_OUTPUT), E161002, "rank"),
    ATSUP_CASE1("output shape", X3(BN_OUTPUT, F, ND, 2, 3, 5), E161002, "output"),
    ATSUP_CASE2("C == 0", X3(BN_INPUT, F, ND, 2, 0, 4), X3(BN_OUTPUT, F, ND, 2, 0, 4), E161002,
                "channel"),
    ATSUP_CASE1("weight [4]", V1(BN_WEIGHT, F, ND, 4), E161002, "weight"),
    ATSUP_CASE1("bias [3, 1]", ATSUP_RAW(BN_BIAS, F, ND, 2, 3, 1), E161002, "bias"),
    ATSUP_CASE1("runningMean [2]", V1(BN_RMEAN, F, ND, 2), E161002, "runningMean"),
    ATSUP_CASE1("runningVar [0]", V1(BN_RVAR, F, ND, 0), E161002, "runningVar"),
    ATSUP_CASE1("saveMean [4]", V1(BN_SAVE_MEAN, F, ND, 4), E161002, "saveMean"),
    ATSUP_CASE1("saveInvstd [1]", V1(BN_SAVE_INVSTD, F, ND, 1), E161002, "saveInvstd"),
    ATSUP_CASE2("NULL before dtype", X3(BN_INPUT, ACL_INT32, ND, 2, 3, 4),
                ATSUP_NULL_ARG(BN_SAVE_INVSTD), E161001, "saveInvstd"),
    ATSUP_CASE2("dtype before format", X3(BN_INPUT, F, PRIV, 2, 3, 4),
                V1(BN_RVAR, ACL_INT32, ND, 3), E161002, "runningVar"),
    ATSUP_CASE2("format before shape", V1(BN_BIAS, F, PRIV, 9), X3(BN_OUTPUT, F, ND, 2, 3, 5),
                E161002, "NC1HWC0"),
    ATSUP_CASE2("workspaceSize last", ATSUP_NULL_WS, V1(BN_WEIGHT, F, ND, 4), E161002, "weight"),
};

static const atsup_case k_bn_eval[] = {
    ATSUP_CASE2("save NULL", ATSUP_NULL_ARG(BN_SAVE_MEAN), ATSUP_NULL_ARG(BN_SAVE_INVSTD), 0, NULL),
    ATSUP_CASE2("save unchecked", V1(BN_SAVE_MEAN, ACL_INT32, PRIV, 7),
                ATSUP_RAW(BN_SAVE_INVSTD, F, ND, 2, 5, 5), 0, NULL),
    ATSUP_CASE2("running NULL", ATSUP_NULL_ARG(BN_RMEAN), ATSUP_NULL_ARG(BN_RVAR), 0, NULL),
    ATSUP_CASE1("input NULL", ATSUP_NULL_ARG(BN_INPUT), E161001, "input"),
    ATSUP_CASE1("runningVar [2]", V1(BN_RVAR, F, ND, 2), E161002, "runningVar"),
};

static const atsup_case k_bb_train[] = {
    ATSUP_CASE1("gradOut NULL", ATSUP_NULL_ARG(BB_GRAD_OUT), E161001, "gradOut"),
    ATSUP_CASE1("input NULL", ATSUP_NULL_ARG(BB_INPUT), E161001, "input"),
    ATSUP_CASE1("gradInput NULL", ATSUP_NULL_ARG(BB_GRAD_INPUT), E161001, "gradInput"),
    ATSUP_CASE1("gradWeight NULL", ATSUP_NULL_ARG(BB_GRAD_WEIGHT), E161001, "gradWeight"),
    ATSUP_CASE1("gradBias NULL", ATSUP_NULL_ARG(BB_GRAD_BIAS), E161001, "gradBias"),
    ATSUP_CASE2("weight, runningMean NULL", ATSUP_NULL_ARG(BB_WEIGHT), ATSUP_NULL_ARG(BB_RMEAN),
                0, NULL),
    ATSUP_CASE2("save NULL", ATSUP_NULL_ARG(BB_SAVE_MEAN), ATSUP_NULL_ARG(BB_SAVE_INVSTD), 0, NULL),
    ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, E161001, "workspaceSize"),
    ATSUP_CASE1("executor NULL", ATSUP_NULL_EX, E161001, "executor"),
    ATSUP_CASE1("gradOut INT32", X3(BB_GRAD_OUT, ACL_INT32, ND, 2, 3, 4), E161002, "gradOut"),
    ATSUP_CASE1("input DOUBLE", X3(BB_INPUT, ACL_DOUBLE, ND, 2, 3, 4), E161002, "input"),
    ATSUP_CASE1("gradOut FLOAT16 vs input FLOAT", X3(BB_GRAD_OUT, ACL_FLOAT16, ND, 2, 3, 4),
                E161002, "FLOAT16"),
    ATSUP_CASE1("gradInput INT8", X3(BB_GRAD_INPUT, ACL_INT8, ND, 2, 3, 4), E161002, "gradInput"),
    ATSUP_CASE1("gradWeight INT32", V1(BB_GRAD_WEIGHT, ACL_INT32, ND, 3), E161002, "gradWeight"),
    ATSUP_CASE1("weight BOOL", V1(BB_WEIGHT, ACL_BOOL, ND, 3), E161002, "weight"),
    ATSUP_CASE1("runningVar INT64", V1(BB_RVAR, ACL_INT64, ND, 3), E161002, "runningVar"),
    ATSUP_CASE1("saveInvstd UINT8", V1(BB_SAVE_INVSTD, ACL_UINT8, ND, 3), E161002, "saveInvstd"),
    ATSUP_CASE1("gradOut private", X3(BB_GRAD_OUT, F, PRIV, 2, 3, 4), E161002, "NC1HWC0"),
    ATSUP_CASE2("both private", X3(BB_GRAD_OUT, F, PRIV, 2, 3, 4), X3(BB_INPUT, F, PRIV, 2, 3, 4),
                E161002, "NC1HWC0"),
    ATSUP_CASE1("gradInput NCHW vs ND", X3(BB_GRAD_INPUT, F, ACL_FORMAT_NCHW, 2, 3, 4), E161002,
                "gradInput"),
    ATSUP_CASE1("saveMean private", V1(BB_SAVE_MEAN, F, PRIV, 3), E161002, "saveMean"),
    ATSUP_CASE2("5-D ND", ATSUP_RAW(BB_GRAD_OUT, F, ND, 5, 2, 3, 2, 2, 2),
                ATSUP_RAW(BB_INPUT, F, ND, 5, 2, 3, 2, 2, 2), E161002, "5-D"),
    ATSUP_CASE2("rank 1", V1(BB_GRAD_OUT, F, ND, 2), V1(BB_INPUT, F, ND, 2), E161002, "rank"),
    ATSUP_CASE2("rank 9", R9(BB_GRAD_OUT), R9(BB_INPUT), E161002, "rank"),
    ATSUP_CASE1("gradOut shape", X3(BB_GRAD_OUT, F, ND, 2, 3, 5), E161002, "gradOut"),
    ATSUP_CASE1("gradInput shape", X3(BB_GRAD_INPUT, F, ND, 2, 3, 5), E161002, "gradInput"),
    ATSUP_CASE1("weight [4]", V1(BB_WEIGHT, F, ND, 4), E161002, "weight"),
    ATSUP_CASE1("runningMean [2]", V1(BB_RMEAN, F, ND, 2), E161002, "runningMean"),
    ATSUP_CASE1("saveMean [0] in training", V1(BB_SAVE_MEAN, F, ND, 0), E161002, "saveMean"),
    ATSUP_CASE1("saveInvstd [3, 1]", ATSUP_RAW(BB_SAVE_INVSTD, F, ND, 2, 3, 1), E161002,
                "saveInvstd"),
    ATSUP_CASE1("gradWeight [4]", V1(BB_GRAD_WEIGHT, F, ND, 4), E161002, "gradWeight"),
    ATSUP_CASE1("gradBias [1]", V1(BB_GRAD_BIAS, F, ND, 1), E161002, "gradBias"),
    ATSUP_CASE2("NULL before dtype", X3(BB_INPUT, ACL_INT32, ND, 2, 3, 4),
                ATSUP_NULL_ARG(BB_GRAD_BIAS), E161001, "gradBias"),
    ATSUP_CASE2("dtype before format", X3(BB_GRAD_INPUT, F, PRIV, 2, 3, 4),
                V1(BB_RMEAN, ACL_INT32, ND, 3), E161002, "runningMean"),
    ATSUP_CASE2("format before shape", V1(BB_WEIGHT, F, PRIV, 9), X3(BB_GRAD_OUT, F, ND, 2, 3, 5),
                E161002, "NC1HWC0"),
    ATSUP_CASE2("empty input, gradInput shape", X3(BB_GRAD_OUT, F, ND, 0, 3, 4),
                X3(BB_INPUT, F, ND, 0, 3, 4), E161002, "gradInput"),
};

/* outputMask {false, true, true}: gradInput is not an argument. */
static const atsup_case k_bb_no_grad_input[] = {
    ATSUP_CASE1("gradInput NULL", ATSUP_NULL_ARG(BB_GRAD_INPUT), 0, NULL),
    ATSUP_CASE1("gradInput INT32, private, any shape",
                ATSUP_RAW(BB_GRAD_INPUT, ACL_INT32, PRIV, 1, 9), 0, NULL),
    ATSUP_CASE2("C == 0", X3(BB_GRAD_OUT, F, ND, 2, 0, 4), X3(BB_INPUT, F, ND, 2, 0, 4), E161002,
                "channel"),
    ATSUP_CASE2("empty input", X3(BB_GRAD_OUT, F, ND, 0, 3, 4), X3(BB_INPUT, F, ND, 0, 3, 4), 0,
                NULL),
};

static const atsup_case k_bb_eval[] = {
    ATSUP_CASE2("save [0]", V1(BB_SAVE_MEAN, F, ND, 0), V1(BB_SAVE_INVSTD, F, ND, 0), 0, NULL),
    ATSUP_CASE1("saveMean [4] still checked", V1(BB_SAVE_MEAN, F, ND, 4), E161002, "saveMean"),
    ATSUP_CASE2("running NULL", ATSUP_NULL_ARG(BB_RMEAN), ATSUP_NULL_ARG(BB_RVAR), 0, NULL),
};

static const atsup_case k_bb_mask[] = {
    ATSUP_CASE1("outputMask of size 2", ATSUP_NULL_ARG(BB_GRAD_INPUT), E161002, "outputMask"),
    ATSUP_CASE1("size is checked before the outputs", ATSUP_NULL_ARG(BB_GRAD_BIAS), E161002,
                "outputMask"),
    ATSUP_CASE1("gradOut NULL first", ATSUP_NULL_ARG(BB_GRAD_OUT), E161001, "gradOut"),
};

static const atsup_case k_mask_null =
    ATSUP_CASE1("outputMask NULL", ATSUP_NULL_ARG(BB_WEIGHT), E161001, "outputMask");

static void argument_checks(void)
{
    int failed = run_table(call_bn, 1, k_bn_train, TSUP_COUNT(k_bn_train));
    g_training = false;
    failed += run_table(call_bn, 1, k_bn_eval, TSUP_COUNT(k_bn_eval));
    failed += run_table(call_bb, 0, k_bb_eval, TSUP_COUNT(k_bb_eval));
    g_training = true;
    failed += run_table(call_bb, 0, k_bb_train, TSUP_COUNT(k_bb_train));
    g_mask[0] = false;
    failed += run_table(call_bb, 0, k_bb_no_grad_input, TSUP_COUNT(k_bb_no_grad_input));
    g_mask[0] = true;
    g_mask_size = 2;
    failed += run_table(call_bb, 0, k_bb_mask, TSUP_COUNT(k_bb_mask));
    g_mask_size = 4;
    failed += run_table(call_bb, 0, k_bb_mask, 1);
    g_mask_size = 3;
    g_mask_null = true;
    failed += run_table(call_bb, 0, &k_mask_null, 1);
    g_mask_null = false;
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
}

/* eps and momentum, narrowed to float, are checked in phase 1 (momentum only in training). */
static void scalar_checks(void)
{
    static const struct {
        double eps, momentum;
        bool training;
        aclnnStatus bn, bb;
        const char *needle;
    } k[] = {
        {-1e-3, 0.1, true, E161002, E161002, "eps"}, {NAN, 0.1, true, E161002, E161002, "eps"},
        {1e300, 0.1, false, E161002, E161002, "eps"}, {1e-5, 1.5, true, E161002, 0, "momentum"},
        {1e-5, -0.5, true, E161002, 0, "momentum"},   {1e-5, 1.5, false, 0, 0, NULL},
        {0.0, 1.0, true, 0, 0, NULL},                 {1e-5, NAN, false, 0, 0, NULL},
    };
    atsup_case c = {.label = "scalars", .nsub = 0};
    int i, failed = 0;
    for (i = 0; i < TSUP_COUNT(k); i++) {
        g_eps = k[i].eps, g_momentum = k[i].momentum, g_training = k[i].training;
        c.want = k[i].bn, c.needle = k[i].needle;
        failed += run_table(call_bn, 1, &c, 1);
        c.want = k[i].bb, c.needle = k[i].bb ? k[i].needle : NULL;
        failed += run_table(call_bb, 0, &c, 1);
    }
    g_eps = 1e-5, g_momentum = 0.1, g_training = true;
    CHECK_MSG(failed == 0, "%d scalar cases failed", failed);
}

/* ---------------- numbers ---------------- */

typedef struct bn_spec {
    int rank;
    int64_t shape[6];
    aclDataType x, p, out;
    aclFormat format; /* ND, NCHW, NHWC or NDHWC */
    tsup_layout layout;
    atsup_place place;
    int training, has_wb;
    int has_stats; /* BatchNorm: the running stats; backward: the pair its mode reads */
    int in_place;  /* output over input / gradInput over gradOut */
    int mask;      /* BatchNormBackward: bit 0 gradInput, 1 gradWeight, 2 gradBias */
} bn_spec;

/* Added to the means of x and of the mean tensors (mean_offset: data far from zero). */
static double g_offset;

static int is_cl(aclFormat f)
{
    return f == ACL_FORMAT_NHWC || f == ACL_FORMAT_NDHWC;
}

static void report(const char *op, const bn_spec *sp, aclnnStatus s)
{
    fprintf(stderr, "    %s rank %d x %s p %s out %s format %d layout %s training %d mask %d "
            "wb %d stats %d in_place %d: status %d %s\n",
            op, sp->rank, atsup_dtype_name(sp->x), atsup_dtype_name(sp->p),
            atsup_dtype_name(sp->out),
            (int)sp->format, tsup_layout_name(sp->layout), sp->training, sp->mask, sp->has_wb,
            sp->has_stats, sp->in_place, (int)s, atsup_msg());
}

static int bn_numeric(const bn_spec *sp, uint64_t seed)
{
    tsup_rng rng = tsup_rng_seed(seed);
    const double eps = (double)(float)1e-5, momentum = (double)(float)0.1;
    const int cl = is_cl(sp->format);
    int64_t n, c, s, numel = tsup_numel(sp->rank, sp->shape), i;
    atsup_tv x, y, w, b, rm, rv, sm, si;
    double *xn, *yn, *yw, *tn, *tw, *mean, *invstd, *rmw, *rvw;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st;
    int ok = 1;

    geometry(sp->rank, sp->shape, cl, &n, &c, &s);
    x = atsup_tv_make(sp->x, sp->rank, sp->shape, sp->layout, sp->place, sp->format, &rng,
                      0.5 + g_offset, 2.0);
    y = sp->in_place ? x
                     : atsup_tv_make(sp->out, sp->rank, sp->shape,
                                     sp->layout == TSUP_STRIDED ? TSUP_CHANNELS_LAST : TSUP_STRIDED,
                                     ATSUP_OFFSET, sp->format, NULL, SENTINEL, 0);
    w = make_vec(sp->p, c, TSUP_STRIDED, &rng, 1.0, 0.5);
    b = make_vec(sp->p, c, TSUP_CHANNELS_FIRST, &rng, 0.0, 1.0);
    rm = make_vec(sp->p, c, TSUP_STRIDED, &rng, 0.2 + g_offset, 0.5);
    rv = make_vec(sp->p, c, TSUP_CHANNELS_FIRST, &rng, 1.5, 0.25);
    sm = make_vec(sp->p, c, TSUP_STRIDED, NULL, SENTINEL, 0);
    si = make_vec(sp->p, c, TSUP_CHANNELS_FIRST, NULL, SENTINEL, 0);
    xn = tsup_alloc_fill(numel, 0), yn = tsup_alloc_fill(numel, 0), yw = tsup_alloc_fill(numel, 0);
    tn = tsup_alloc_fill(numel, 0), tw = tsup_alloc_fill(numel, 0);
    mean = tsup_alloc_fill(c, 0.0), invstd = tsup_alloc_fill(c, 1.0);
    rmw = tsup_alloc_fill(c, 0), rvw = tsup_alloc_fill(c, 0);
    memcpy(rmw, rm.v, (size_t)c * sizeof *rmw);
    memcpy(rvw, rv.v, (size_t)c * sizeof *rvw);
    to_ncs(x.v, xn, n, c, s, cl, 0);
    if (sp->training) {
        ref_batch_norm_train(xn, n, c, s, sp->has_wb ? w.v : NULL, sp->has_wb ? b.v : NULL,
                             momentum, eps, yn, mean, invstd, sp->has_stats ? rmw : NULL,
                             sp->has_stats ? rvw : NULL);
    } else {
        for (i = 0; i < c && sp->has_stats; i++) mean[i] = rm.v[i], invstd[i] = rv.v[i];
        for (i = 0; i < c; i++) invstd[i] = 1.0 / sqrt(invstd[i] + eps);
        ref_elemt(xn, n, c, s, mean, invstd, sp->has_wb ? w.v : NULL, sp->has_wb ? b.v : NULL, yn);
    }
    to_ncs(yn, yw, n, c, s, cl, 1);
    atsup_normalize_tol(xn, n, c, s, mean, invstd, sp->has_wb ? w.v : NULL,
                        sp->has_wb ? b.v : NULL, yn, sp->out,
                        atsup_map_u(sp->x, sp->x, y.a.dtype), tn);
    to_ncs(tn, tw, n, c, s, cl, 1);
    st = aclnnBatchNormGetWorkspaceSize(
        x.a.t, sp->has_wb ? w.a.t : NULL, sp->has_wb ? b.a.t : NULL, sp->has_stats ? rm.a.t : NULL,
        sp->has_stats ? rv.a.t : NULL, sp->training, 0.1, 1e-5, y.a.t, sm.a.t, si.a.t, &ws, &ex);
    if (st == ACLNN_SUCCESS) st = atsup_run(aclnnBatchNorm, ws, ex);
    ok = st == ACLNN_SUCCESS && atsup_tv_close_tol("output", &y, yw, tw);
    if (ok && sp->training) {
        ok = atsup_tv_close("saveMean", &sm, mean, sp->p) &&
             atsup_tv_close("saveInvstd", &si, invstd, sp->p) &&
             atsup_tv_close("runningMean", &rm, rmw, sp->p) &&
             atsup_tv_close("runningVar", &rv, rvw, sp->p);
    } else if (ok) {
        ok = untouched("saveMean", &sm, SENTINEL) && untouched("saveInvstd", &si, SENTINEL) &&
             atsup_tv_close("runningMean", &rm, rmw, sp->p) &&
             atsup_tv_close("runningVar", &rv, rvw, sp->p);
    }
    if (!ok) report("BatchNorm", sp, st);
    if (!sp->in_place) atsup_tv_free(&y);
    ATSUP_TV_FREE(&x, &w, &b, &rm, &rv, &sm, &si);
    TSUP_FREE_ALL(xn, yn, yw, tn, tw, mean, invstd, rmw, rvw);
    return ok;
}

static int bb_numeric(const bn_spec *sp, uint64_t seed)
{
    tsup_rng rng = tsup_rng_seed(seed);
    const double eps = (double)(float)1e-5;
    const int cl = is_cl(sp->format), tr = sp->training;
    const bool mask[3] = {(sp->mask & 1) != 0, (sp->mask & 2) != 0, (sp->mask & 4) != 0};
    int64_t n, c, s, numel = tsup_numel(sp->rank, sp->shape), i;
    atsup_tv dy, x, w, rm, rv, sm, si, gi, gw, gb;
    double *dyn, *xn, *gin, *giw, *tn, *tw, *mean, *inv, *zeros, *sdy, *sdx, *gww, *gbw;
    double map_u;
    aclBoolArray *m = aclCreateBoolArray(mask, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st;
    int ok;

    geometry(sp->rank, sp->shape, cl, &n, &c, &s);
    dy = atsup_tv_make(sp->x, sp->rank, sp->shape, sp->layout, sp->place, sp->format, &rng, 0.3,
                       1.0);
    x = atsup_tv_make(sp->x, sp->rank, sp->shape, TSUP_STRIDED, ATSUP_OFFSET, sp->format, &rng,
                      0.5 + g_offset, 2.0);
    gi = sp->in_place ? dy
                      : atsup_tv_make(sp->out, sp->rank, sp->shape, sp->layout == CL ? ST : CL, PL,
                                      sp->format, NULL, SENTINEL, 0);
    w = make_vec(sp->p, c, TSUP_STRIDED, &rng, 1.0, 0.5);
    rm = make_vec(sp->p, c, TSUP_CHANNELS_FIRST, &rng, 0.4 + g_offset, 0.5);
    rv = make_vec(sp->p, c, TSUP_STRIDED, &rng, 1.5, 0.25);
    sm = make_vec(sp->p, c, TSUP_STRIDED, &rng, 0.5 + g_offset, 0.5);
    si = make_vec(sp->p, c, TSUP_CHANNELS_FIRST, &rng, 0.8, 0.1);
    gw = make_vec(sp->out, c, TSUP_STRIDED, NULL, SENTINEL, 0);
    gb = make_vec(sp->out, c, TSUP_CHANNELS_FIRST, NULL, SENTINEL, 0);
    dyn = tsup_alloc_fill(numel, 0), xn = tsup_alloc_fill(numel, 0);
    gin = tsup_alloc_fill(numel, 0), giw = tsup_alloc_fill(numel, 0);
    tn = tsup_alloc_fill(numel, 0), tw = tsup_alloc_fill(numel, 0);
    mean = tsup_alloc_fill(c, 0), inv = tsup_alloc_fill(c, 1), zeros = tsup_alloc_fill(c, 0);
    sdy = tsup_alloc_fill(c, 0);
    sdx = tsup_alloc_fill(c, 0), gww = tsup_alloc_fill(c, 0), gbw = tsup_alloc_fill(c, 0);
    to_ncs(dy.v, dyn, n, c, s, cl, 0);
    to_ncs(x.v, xn, n, c, s, cl, 0);
    for (i = 0; i < c && sp->has_stats; i++)
        mean[i] = tr ? sm.v[i] : rm.v[i], inv[i] = tr ? si.v[i] : rv.v[i];
    /* gradInput's map: training the backward map of dy and x, eval the normalize map of dy */
    map_u = atsup_map_u(sp->x, sp->x, gi.a.dtype);
    if (tr) {
        ref_batch_norm_backward_train(dyn, xn, n, c, s, sp->has_wb ? w.v : NULL, mean, inv, gin,
                                      gww, gbw);
        ref_backward_reduce(dyn, xn, n, c, s, mean, sdy, sdx);
        atsup_backward_tol(dyn, xn, n, c, s, mean, inv, sp->has_wb ? w.v : NULL, sdy, sdx,
                           (double)(n * s), gin, sp->out, map_u, tn);
    } else {
        for (i = 0; i < c; i++) inv[i] = 1.0 / sqrt(inv[i] + eps);
        ref_elemt(dyn, n, c, s, zeros, inv, sp->has_wb ? w.v : NULL, NULL, gin);
        atsup_normalize_tol(dyn, n, c, s, zeros, inv, sp->has_wb ? w.v : NULL, NULL, gin,
                            sp->out, map_u, tn);
        ref_backward_reduce(dyn, xn, n, c, s, mean, sdy, sdx);
        for (i = 0; i < c; i++) gww[i] = sdx[i] * inv[i], gbw[i] = sdy[i];
    }
    to_ncs(gin, giw, n, c, s, cl, 1);
    to_ncs(tn, tw, n, c, s, cl, 1);
    /* training reads the save pair (running given, validated only); eval the running pair */
    st = aclnnBatchNormBackwardGetWorkspaceSize(
        dy.a.t, x.a.t, sp->has_wb ? w.a.t : NULL, tr || sp->has_stats ? rm.a.t : NULL,
        tr || sp->has_stats ? rv.a.t : NULL, !tr || sp->has_stats ? sm.a.t : NULL,
        !tr || sp->has_stats ? si.a.t : NULL, tr, 1e-5, m, mask[0] ? gi.a.t : NULL, gw.a.t,
        mask[2] ? gb.a.t : NULL, &ws, &ex);
    if (st == ACLNN_SUCCESS) st = atsup_run(aclnnBatchNormBackward, ws, ex);
    ok = st == ACLNN_SUCCESS;
    ok = ok && (mask[0] ? atsup_tv_close_tol("gradInput", &gi, giw, tw)
                        : sp->in_place || untouched("gradInput", &gi, SENTINEL));
    ok = ok && (mask[1] ? atsup_tv_close("gradWeight", &gw, gww, sp->out)
                        : untouched("gradWeight", &gw, SENTINEL));
    ok = ok && (mask[2] ? atsup_tv_close("gradBias", &gb, gbw, sp->out)
                        : untouched("gradBias", &gb, SENTINEL));
    if (!ok) report("BatchNormBackward", sp, st);
    if (!sp->in_place) atsup_tv_free(&gi);
    ATSUP_TV_FREE(&dy, &x, &w, &rm, &rv, &sm, &si, &gw, &gb);
    TSUP_FREE_ALL(dyn, xn, gin, giw, tn, tw, mean, inv, zeros, sdy, sdx, gww, gbw);
    aclDestroyBoolArray(m);
    return ok;
}


/* rank, shape, x, p, out, format, layout, place, training, wb, stats, in_place, mask */
static const bn_spec k_specs[] = {
    {3, {4, 3, 5}, F, F, F, ND, CF, PL, 1, 1, 1, 0, 7},
    {3, {4, 3, 5}, F, F, F, ND, CF, PL, 0, 1, 1, 0, 7},
    {4, {2, 5, 3, 2}, H, F, H, ACL_FORMAT_NCHW, ST, OF, 1, 0, 1, 0, 7},
    {4, {2, 5, 3, 2}, H, F, F, ACL_FORMAT_NCHW, ST, OF, 0, 0, 0, 0, 7},
    {2, {17, 4}, B, B, B, ND, CL, PL, 1, 1, 0, 0, 7},
    {2, {17, 4}, B, B, B, ND, CL, OF, 0, 1, 0, 0, 7},
    {6, {2, 3, 2, 1, 3, 2}, F, H, B, ND, CL, OF, 1, 1, 1, 0, 7},
    {3, {3, 2, 700}, F, B, F, ND, ST, PL, 0, 1, 1, 0, 7},
    {4, {2, 4, 3, 3}, F, F, F, NHWC, CF, PL, 1, 1, 1, 0, 7},
    {4, {2, 4, 3, 3}, H, F, H, NHWC, ST, OF, 0, 1, 1, 0, 7},
    {5, {2, 3, 2, 2, 5}, F, F, F, ACL_FORMAT_NDHWC, CL, OF, 1, 1, 1, 0, 7},
    {5, {2, 5, 2, 2, 3}, B, F, B, ACL_FORMAT_NCDHW, CF, PL, 0, 0, 1, 0, 7},
    {3, {2, 3, 4}, F, F, F, ND, ST, OF, 1, 1, 1, 1, 7},
    {4, {2, 3, 2, 2}, H, H, H, NHWC, CL, PL, 0, 1, 1, 1, 7},
};

static void batch_norm_numbers(void)
{
    int i, failed = 0;
    for (i = 0; i < TSUP_COUNT(k_specs); i++) failed += !bn_numeric(&k_specs[i], 300 + (uint64_t)i);
    CHECK_MSG(failed == 0, "%d BatchNorm cases failed", failed);
}

static void backward_numbers(void)
{
    int i, failed = 0;
    for (i = 0; i < TSUP_COUNT(k_specs); i++) failed += !bb_numeric(&k_specs[i], 400 + (uint64_t)i);
    CHECK_MSG(failed == 0, "%d BatchNormBackward cases failed", failed);
}

static void backward_every_mask(void)
{
    bn_spec sp = {4, {2, 3, 2, 2}, F, F, F, ND, ST, OF, 1, 1, 1, 0, 0};
    int failed = 0;
    for (sp.training = 0; sp.training < 2; sp.training++)
        for (sp.mask = 0; sp.mask < 8; sp.mask++)
            failed += !bb_numeric(&sp, 50 + (uint64_t)sp.mask);
    CHECK_MSG(failed == 0, "%d masks failed", failed);
}

/*
 * Data far from zero relative to its spread (x ~ N(1000.5, 2), the mean tensors near
 * it): the maps must keep x - mean's digits; BatchNorm training's batch mean (double)
 * is not a float, so the float map needs its split into a float and a correction.
 */
static void mean_offset(void)
{
    static const int pick[] = {0, 1, 2, 4, 8, 9, 12};
    int i, failed = 0;
    g_offset = 1000.0;
    for (i = 0; i < TSUP_COUNT(pick); i++) {
        failed += !bn_numeric(&k_specs[pick[i]], 700 + (uint64_t)i);
        failed += !bb_numeric(&k_specs[pick[i]], 800 + (uint64_t)i);
    }
    g_offset = 0.0;
    CHECK_MSG(failed == 0, "%d cases failed", failed);
}

/* aclnnBatchNorm (training) feeds saveMean/saveInvstd to aclnnBatchNormBackward. */
static void forward_then_backward(void)
{
    static const int64_t shape[3] = {4, 3, 5}, c = 3;
    tsup_rng rng = tsup_rng_seed(9);
    const bool all[3] = {true, true, true};
    atsup_tv x = atsup_tv_make(F, 3, shape, CF, PL, ND, &rng, 1.0, 2.0);
    atsup_tv dy = atsup_tv_make(F, 3, shape, ST, OF, ND, &rng, 0, 1);
    atsup_tv y = atsup_tv_make(F, 3, shape, CF, PL, ND, NULL, 0, 0);
    atsup_tv gi = atsup_tv_make(F, 3, shape, CL, OF, ND, NULL, 0, 0);
    atsup_tv w = make_vec(F, c, ST, &rng, 1, 0.5), sm = make_vec(F, c, CF, NULL, 0, 0);
    atsup_tv si = make_vec(F, c, ST, NULL, 0, 0), gw = make_vec(F, c, CF, NULL, 0, 0);
    atsup_tv gb = make_vec(F, c, CF, NULL, 0, 0);
    double mean[3], invstd[3], giw[60], gww[3], gbw[3], sdy[3], sdx[3], tol[60];
    aclBoolArray *m = aclCreateBoolArray(all, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_ACL(aclnnBatchNormGetWorkspaceSize(x.a.t, w.a.t, NULL, NULL, NULL, true, 0.1, 1e-5, y.a.t,
                                             sm.a.t, si.a.t, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNorm, ws, ex), ACLNN_SUCCESS);
    CHECK_ACL(aclnnBatchNormBackwardGetWorkspaceSize(dy.a.t, x.a.t, w.a.t, NULL, NULL, sm.a.t,
                                                     si.a.t, true, 1e-5, m, gi.a.t, gw.a.t,
                                                     gb.a.t, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormBackward, ws, ex), ACLNN_SUCCESS);
    ref_stats(x.v, 4, 3, 5, (double)(float)1e-5, mean, invstd);
    CHECK(atsup_tv_close("saveMean", &sm, mean, F) && atsup_tv_close("saveInvstd", &si, invstd, F));
    atsup_read(&sm.a, mean), atsup_read(&si.a, invstd); /* the stored fp32 statistics */
    ref_batch_norm_backward_train(dy.v, x.v, 4, 3, 5, w.v, mean, invstd, giw, gww, gbw);
    ref_backward_reduce(dy.v, x.v, 4, 3, 5, mean, sdy, sdx);
    atsup_backward_tol(dy.v, x.v, 4, 3, 5, mean, invstd, w.v, sdy, sdx, 20.0, giw, F,
                       atsup_map_u(F, F, F), tol);
    CHECK(atsup_tv_close_tol("gradInput", &gi, giw, tol) &&
          atsup_tv_close("gradWeight", &gw, gww, F) &&
          atsup_tv_close("gradBias", &gb, gbw, F));
    aclDestroyBoolArray(m);
    ATSUP_TV_FREE(&x, &dy, &y, &gi, &w, &sm, &si, &gw, &gb);
}

/* Empty input after validation: BatchNorm training saveMean 0, saveInvstd NaN, nothing else. */
static void empty_inputs(void)
{
    static const int64_t shape[3] = {0, 3, 4}, c = 3;
    const bool all[3] = {true, true, true};
    const double zeros[3] = {0, 0, 0}, nans[3] = {NAN, NAN, NAN};
    atsup_tv x = atsup_tv_make(F, 3, shape, ST, OF, ND, NULL, 0, 0);
    atsup_tv y = atsup_tv_make(F, 3, shape, CF, PL, ND, NULL, 0, 0);
    atsup_tv rm = make_vec(F, c, CF, NULL, SENTINEL, 0), rv = make_vec(F, c, ST, NULL, SENTINEL, 0);
    atsup_tv sm = make_vec(F, c, ST, NULL, SENTINEL, 0), si = make_vec(H, c, CF, NULL, SENTINEL, 0);
    atsup_tv gw = make_vec(F, c, CF, NULL, SENTINEL, 0), gb = make_vec(B, c, ST, NULL, SENTINEL, 0);
    aclBoolArray *m = aclCreateBoolArray(all, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int training;
    /* validated first: an invalid argument is an error even for an empty input */
    CHECK_ACL(aclnnBatchNormGetWorkspaceSize(x.a.t, gw.a.t, NULL, rm.a.t, sm.a.t, true, 0.1, 1e-5,
                                             y.a.t, x.a.t, si.a.t, &ws, &ex),
              E161002);
    CHECK_MSG_HAS("saveMean");
    CHECK_ACL(aclnnBatchNormBackwardGetWorkspaceSize(y.a.t, x.a.t, y.a.t, NULL, NULL, NULL, NULL,
                                                     true, 1e-5, m, y.a.t, gw.a.t, gb.a.t, &ws,
                                                     &ex),
              E161002);
    CHECK_MSG_HAS("weight");
    for (training = 0; training < 2; training++) {
        CHECK_ACL(aclnnBatchNormGetWorkspaceSize(x.a.t, NULL, NULL, rm.a.t, rv.a.t, training, 0.1,
                                                 1e-5, y.a.t, sm.a.t, si.a.t, &ws, &ex),
                  ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNorm, ws, ex), ACLNN_SUCCESS);
        CHECK(untouched("runningMean", &rm, SENTINEL) && untouched("runningVar", &rv, SENTINEL));
        if (training)
            CHECK(atsup_tv_close("saveMean", &sm, zeros, F) &&
                  atsup_tv_close("saveInvstd", &si, nans, H));
        else
            CHECK(untouched("saveMean", &sm, SENTINEL) && untouched("saveInvstd", &si, SENTINEL));
        CHECK_ACL(aclnnBatchNormBackwardGetWorkspaceSize(y.a.t, x.a.t, NULL, NULL, NULL, NULL, NULL,
                                                         training, 1e-5, m, y.a.t, gw.a.t, gb.a.t,
                                                         &ws, &ex),
                  ACLNN_SUCCESS);
        CHECK(ws == 0);
        CHECK_ACL(aclnnBatchNormBackward(NULL, 0, ex, NULL), ACLNN_SUCCESS);
        CHECK(untouched("gradWeight", &gw, SENTINEL) && untouched("gradBias", &gb, SENTINEL));
    }
    aclDestroyBoolArray(m);
    ATSUP_TV_FREE(&x, &y, &rm, &rv, &sm, &si, &gw, &gb);
}

/* ---------------- executors through the real ops ---------------- */

typedef struct bb_ctx {
    aclTensor *a[BB_N];
    aclBoolArray *mask;
} bb_ctx;

static aclnnStatus bn_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor *const *a = (aclTensor *const *)ctx;
    return aclnnBatchNormGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], true, 0.1, 1e-5, a[5],
                                          a[6], a[7], ws, ex);
}

static aclnnStatus bb_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    bb_ctx *b = (bb_ctx *)ctx;
    return aclnnBatchNormBackwardGetWorkspaceSize(b->a[0], b->a[1], b->a[2], b->a[3], b->a[4],
                                                  b->a[5], b->a[6], true, 1e-5, b->mask, b->a[7],
                                                  b->a[8], b->a[9], ws, ex);
}

static void executor_rules(void)
{
    const bool all[3] = {true, true, true};
    atsup_tv bn[BN_N], bb[BB_N];
    aclTensor *a[BN_N];
    bb_ctx ctx;
    int k, ok;
    make_valid(bn, 1);
    make_valid(bb, 0);
    for (k = 0; k < BN_N; k++) a[k] = bn[k].a.t;
    for (k = 0; k < BB_N; k++) ctx.a[k] = bb[k].a.t;
    ctx.mask = aclCreateBoolArray(all, 3);
    ok = atsup_check_executor_rules(bn_phase1, a, aclnnBatchNorm);
    ok = atsup_check_executor_rules(bb_phase1, &ctx, aclnnBatchNormBackward) && ok;
    aclDestroyBoolArray(ctx.mask);
    for (k = 0; k < BN_N; k++) atsup_tv_free(&bn[k]);
    for (k = 0; k < BB_N; k++) atsup_tv_free(&bb[k]);
    CHECK(ok);
}

/* A repeatable eval BatchNorm (NHWC) rerun with new input and output addresses; late data. */
static void repeatable_new_addresses(void)
{
    static const int64_t shape[4] = {2, 4, 3, 3}, c = 3;
    tsup_rng rng = tsup_rng_seed(11);
    atsup_tv x[2], y[2], rm = make_vec(F, c, ST, &rng, 0.3, 1);
    atsup_tv rv = make_vec(F, c, CF, &rng, 2, 0.2);
    double inv[3], xn[72], yn[72], yw[72], tn[72], tw[72];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int k, run;
    for (k = 0; k < 2; k++) {
        x[k] = atsup_tv_make(F, 4, shape, CF, PL, NHWC, &rng, 0, 2);
        y[k] = atsup_tv_make(F, 4, shape, CF, PL, NHWC, NULL, 0, 0);
    }
    for (k = 0; k < c; k++) inv[k] = 1.0 / sqrt(rv.v[k] + (double)(float)1e-5);
    CHECK_ACL(aclnnBatchNormGetWorkspaceSize(x[0].a.t, NULL, NULL, rm.a.t, rv.a.t, false, 0.1, 1e-5,
                                             y[0].a.t, NULL, NULL, &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (run = 0; run < 4; run++) {
        k = run % 2;
        /* input index 0 = input (runningMean 1, runningVar 2); output index 0 = output */
        CHECK_ACL(aclSetInputTensorAddr(ex, 0, x[0].a.t, x[k].a.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, y[0].a.t, y[k].a.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNorm, ws, ex), ACLNN_SUCCESS);
        to_ncs(x[k].v, xn, 2, 3, 12, 1, 0);
        ref_elemt(xn, 2, 3, 12, rm.v, inv, NULL, NULL, yn);
        to_ncs(yn, yw, 2, 3, 12, 1, 1);
        atsup_normalize_tol(xn, 2, 3, 12, rm.v, inv, NULL, NULL, yn, F, atsup_map_u(F, F, F), tn);
        to_ncs(tn, tw, 2, 3, 12, 1, 1);
        CHECK(atsup_tv_close_tol("output", &y[k], yw, tw));
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    { /* tensors without data in phase 1: a run before the addresses are set is refused */
        aclTensor *xl = aclCreateTensor(shape, 4, F, NULL, 0, NHWC, shape, 4, NULL);
        aclTensor *yl = aclCreateTensor(shape, 4, F, NULL, 0, NHWC, shape, 4, NULL);
        CHECK_ACL(aclnnBatchNormGetWorkspaceSize(xl, NULL, NULL, rm.a.t, rv.a.t, false, 0.1, 1e-5,
                                                 yl, NULL, NULL, &ws, &ex),
                  ACLNN_SUCCESS);
        CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNorm, ws, ex), E161001);
        CHECK_ACL(aclSetInputTensorAddr(ex, 0, xl, x[1].a.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, yl, y[0].a.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNorm, ws, ex), ACLNN_SUCCESS);
        CHECK(atsup_tv_close_tol("output", &y[0], yw, tw)); /* yw, tw: x[1]'s from the last run */
        CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
        aclDestroyTensor(xl), aclDestroyTensor(yl);
    }
    for (k = 0; k < 2; k++) atsup_tv_free(&x[k]), atsup_tv_free(&y[k]);
    ATSUP_TV_FREE(&rm, &rv);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(argument_checks),       SBN_TEST_CASE(scalar_checks),
    SBN_TEST_CASE(batch_norm_numbers),    SBN_TEST_CASE(backward_numbers),
    SBN_TEST_CASE(backward_every_mask),   SBN_TEST_CASE(mean_offset),
    SBN_TEST_CASE(forward_then_backward), SBN_TEST_CASE(empty_inputs),
    SBN_TEST_CASE(executor_rules),        SBN_TEST_CASE(repeatable_new_addresses),
};

SBN_TEST_MAIN(k_cases)
