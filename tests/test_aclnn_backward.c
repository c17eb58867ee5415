/*
 * test_aclnn_backward.c - aclnnBatchNormReduceBackward and aclnnBatchNormElemtBackward
 * through the public aclnn API. Argument checks: every NULL (tensors, workspaceSize,
 * executor), dtypes outside the lists (integer and DOUBLE; BF16 and INT64 counters),
 * the private format NC1HWC0, ranks 1 and 9, each shape mismatch, C == 0, the check
 * order when two arguments are wrong (NULL before dtype before format before shape),
 * ReduceBackward's disabled outputs (NULL, bad dtype, private format or wrong shape:
 * all accepted) and the recent message naming the argument. Numbers against the
 * double oracle (ref_backward_reduce, ref_backward_elemt) for FLOAT, FLOAT16 and BF16
 * activations with mixed per-channel and output dtypes, inputs and outputs
 * contiguous, channels-last, strided and at an offset into their storage, every
 * inputG/weightG/biasG combination (disabled outputs untouched), counters of every
 * dtype and of ranks 1, 2 and 8, weight absent, gradInput in place over gradOut.
 * Empty inputs (ReduceBackward: enabled outputs zeroed; ElemtBackward: nothing read
 * or written). Phase-2 counter rules (fractional, negative, too small -> 161002).
 * Executors: the shared rules (atsup_check_executor_rules) on both ops, and a
 * repeatable ElemtBackward executor rerun with new gradOut, counter and gradInput
 * addresses (counter summed at each run). Tolerances: outputs are computed in double
 * from the stored inputs and rounded once, so |got - want| <= 2 u(out) |want| + 1e-9;
 * gradInput (the elementwise map, computed in float for FLOAT/FLOAT16/BF16 tensors)
 * adds the map's bound 6 u |invstd w| (|dy| + |sum_dy/N| + |(x - mean) invstd^2
 * sum_dy_xmu/N|), u = 2^-24 (atsup_backward_tol).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "ref/ref.h"

#define SENTINEL 7.0

/* 1 when every value of t (at most 64) is exactly `value` and its guard bytes are intact. */
static int all_equal(const atsup_tv *t, double value)
{
    double got[64];
    int64_t i;
    if (t->n > 64) return 0;
    atsup_read(&t->a, got);
    for (i = 0; i < t->n; i++)
        if (got[i] != value) return 0;
    return atsup_guard_ok(&t->a);
}

/* ---------------- aclnnBatchNormReduceBackward ---------------- */

enum { RB_GRAD_OUT, RB_INPUT, RB_MEAN, RB_INVSTD, RB_WEIGHT, RB_SUM_DY, RB_SUM_DY_XMU,
       RB_GRAD_WEIGHT, RB_GRAD_BIAS, RB_N };

static bool g_rb_mask[3] = {true, true, true};

static aclnnStatus call_rb(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormReduceBackwardGetWorkspaceSize(
        a[0], a[1], a[2], a[3], a[4], g_rb_mask[0], g_rb_mask[1], g_rb_mask[2], a[5], a[6], a[7],
        a[8], null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnBatchNormReduceBackward, ws, ex);
}

#define F ACL_FLOAT
#define ND ACL_FORMAT_ND
#define PRIV ACL_FORMAT_NC1HWC0
#define E161001 ACLNN_ERR_PARAM_NULLPTR
#define E161002 ACLNN_ERR_PARAM_INVALID

static const atsup_case k_rb_cases[] = {
    ATSUP_CASE1("gradOut NULL", ATSUP_NULL_ARG(RB_GRAD_OUT), E161001, "gradOut"),
    ATSUP_CASE1("input NULL", ATSUP_NULL_ARG(RB_INPUT), E161001, "input"),
    ATSUP_CASE1("mean NULL", ATSUP_NULL_ARG(RB_MEAN), E161001, "mean"),
    ATSUP_CASE1("invstd NULL", ATSUP_NULL_ARG(RB_INVSTD), E161001, "invstd"),
    ATSUP_CASE1("weight NULL is fine", ATSUP_NULL_ARG(RB_WEIGHT), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("sumDy NULL", ATSUP_NULL_ARG(RB_SUM_DY), E161001, "sumDy"),
    ATSUP_CASE1("sumDyXmu NULL", ATSUP_NULL_ARG(RB_SUM_DY_XMU), E161001, "sumDyXmu"),
    ATSUP_CASE1("gradWeight NULL", ATSUP_NULL_ARG(RB_GRAD_WEIGHT), E161001, "gradWeight"),
    ATSUP_CASE1("gradBias NULL", ATSUP_NULL_ARG(RB_GRAD_BIAS), E161001, "gradBias"),
    ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, E161001, "workspaceSize"),
    ATSUP_CASE1("executor NULL", ATSUP_NULL_EX, E161001, "executor"),
    ATSUP_CASE1("gradOut INT32", ATSUP_RAW(RB_GRAD_OUT, ACL_INT32, ND, 3, 2, 3, 4), E161002,
                "gradOut"),
    ATSUP_CASE1("input DOUBLE", ATSUP_RAW(RB_INPUT, ACL_DOUBLE, ND, 3, 2, 3, 4), E161002, "input"),
    ATSUP_CASE1("mean INT8", ATSUP_RAW(RB_MEAN, ACL_INT8, ND, 1, 3), E161002, "mean"),
    ATSUP_CASE1("invstd INT64", ATSUP_RAW(RB_INVSTD, ACL_INT64, ND, 1, 3), E161002, "invstd"),
    ATSUP_CASE1("weight BOOL", ATSUP_RAW(RB_WEIGHT, ACL_BOOL, ND, 1, 3), E161002, "weight"),
    ATSUP_CASE1("sumDy INT32", ATSUP_RAW(RB_SUM_DY, ACL_INT32, ND, 1, 3), E161002, "sumDy"),
    ATSUP_CASE1("gradBias DOUBLE", ATSUP_RAW(RB_GRAD_BIAS, ACL_DOUBLE, ND, 1, 3), E161002,
                "gradBias"),
    ATSUP_CASE1("gradOut FLOAT16 vs input FLOAT",
                ATSUP_RAW(RB_GRAD_OUT, ACL_FLOAT16, ND, 3, 2, 3, 4), E161002, "FLOAT16"),
    ATSUP_CASE1("input private format", ATSUP_RAW(RB_INPUT, F, PRIV, 3, 2, 3, 4), E161002,
                "NC1HWC0"),
    ATSUP_CASE2("both private", ATSUP_RAW(RB_GRAD_OUT, F, PRIV, 3, 2, 3, 4),
                ATSUP_RAW(RB_INPUT, F, PRIV, 3, 2, 3, 4), E161002, "private"),
    ATSUP_CASE2("NHWC pair is fine", ATSUP_RAW(RB_GRAD_OUT, F, ACL_FORMAT_NHWC, 3, 2, 3, 4),
                ATSUP_RAW(RB_INPUT, F, ACL_FORMAT_NHWC, 3, 2, 3, 4), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("mean private", ATSUP_RAW(RB_MEAN, F, PRIV, 1, 3), E161002, "mean"),
    ATSUP_CASE1("gradWeight private", ATSUP_RAW(RB_GRAD_WEIGHT, F, ACL_FORMAT_FRACTAL_NZ, 1, 3),
                E161002, "gradWeight"),
    ATSUP_CASE2("rank 1", ATSUP_RAW(RB_GRAD_OUT, F, ND, 1, 2), ATSUP_RAW(RB_INPUT, F, ND, 1, 2),
                E161002, "rank"),
    ATSUP_CASE1("input rank 9", ATSUP_RAW(RB_INPUT, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1), E161002,
                "input"),
    ATSUP_CASE1("gradOut rank 9", ATSUP_RAW(RB_GRAD_OUT, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1),
                E161002, "gradOut"),
    ATSUP_CASE2("C == 0", ATSUP_RAW(RB_GRAD_OUT, F, ND, 3, 2, 0, 4),
                ATSUP_RAW(RB_INPUT, F, ND, 3, 2, 0, 4), E161002, "channel"),
    ATSUP_CASE1("gradOut shape", ATSUP_RAW(RB_GRAD_OUT, F, ND, 3, 2, 3, 5), E161002, "gradOut"),
    ATSUP_CASE1("mean [4]", ATSUP_RAW(RB_MEAN, F, ND, 1, 4), E161002, "mean"),
    ATSUP_CASE1("invstd [1, 3]", ATSUP_RAW(RB_INVSTD, F, ND, 2, 1, 3), E161002, "invstd"),
    ATSUP_CASE1("weight [2]", ATSUP_RAW(RB_WEIGHT, F, ND, 1, 2), E161002, "weight"),
    ATSUP_CASE1("sumDyXmu [4]", ATSUP_RAW(RB_SUM_DY_XMU, F, ND, 1, 4), E161002, "sumDyXmu"),
    ATSUP_CASE1("gradBias [3, 1]", ATSUP_RAW(RB_GRAD_BIAS, F, ND, 2, 3, 1), E161002, "gradBias"),
    /* order: the first failing stage decides */
    ATSUP_CASE2("NULL before dtype", ATSUP_RAW(RB_GRAD_OUT, ACL_INT32, ND, 3, 2, 3, 4),
                ATSUP_NULL_ARG(RB_GRAD_BIAS), E161001, "gradBias"),
    ATSUP_CASE2("workspaceSize first", ATSUP_NULL_ARG(RB_INPUT), ATSUP_NULL_WS, E161001,
                "workspaceSize"),
    ATSUP_CASE2("dtype before format", ATSUP_RAW(RB_INPUT, F, PRIV, 3, 2, 3, 4),
                ATSUP_RAW(RB_INVSTD, ACL_INT32, ND, 1, 3), E161002, "invstd"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(RB_MEAN, F, PRIV, 1, 7),
                ATSUP_RAW(RB_GRAD_OUT, F, ND, 3, 2, 3, 5), E161002, "NC1HWC0"),
};

/* With every output disabled: anything goes in the output slots. */
static const atsup_case k_rb_disabled_cases[] = {
    ATSUP_CASE2("NULL outputs", ATSUP_NULL_ARG(RB_SUM_DY), ATSUP_NULL_ARG(RB_GRAD_BIAS),
                ACLNN_SUCCESS, NULL),
    ATSUP_CASE2("bad dtype / private format", ATSUP_RAW(RB_SUM_DY_XMU, ACL_INT32, ND, 1, 3),
                ATSUP_RAW(RB_GRAD_WEIGHT, F, PRIV, 1, 3), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("wrong shape", ATSUP_RAW(RB_GRAD_BIAS, F, ND, 2, 5, 5), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("inputs still checked", ATSUP_NULL_ARG(RB_MEAN), E161001, "mean"),
};

static void rb_args(atsup_tv *t)
{
    static const int64_t x[3] = {2, 3, 4}, c = 3;
    int k;
    for (k = 0; k < RB_N; k++)
        t[k] = k < RB_MEAN
                   ? atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 0.5, 0)
                   : atsup_tv_make(F, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 1.0, 0);
}

static void rb_argument_checks(void)
{
    atsup_tv t[RB_N];
    aclTensor *a[RB_N];
    int k, failed;
    rb_args(t);
    for (k = 0; k < RB_N; k++) a[k] = t[k].a.t;
    failed = atsup_expect_all(call_rb, a, RB_N, k_rb_cases, TSUP_COUNT(k_rb_cases));
    g_rb_mask[0] = g_rb_mask[1] = g_rb_mask[2] = false;
    failed += atsup_expect_all(call_rb, a, RB_N, k_rb_disabled_cases,
                               TSUP_COUNT(k_rb_disabled_cases));
    g_rb_mask[0] = g_rb_mask[1] = g_rb_mask[2] = true;
    for (k = 0; k < RB_N; k++) atsup_tv_free(&t[k]);
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
}

typedef struct rb_spec {
    int rank;
    int64_t shape[5];
    aclDataType x, p, out;
    tsup_layout layout;
    atsup_place place;
    int mask; /* bit 0 inputG, 1 weightG, 2 biasG */
    int has_weight;
} rb_spec;

/* One ReduceBackward run against the oracle; disabled outputs keep SENTINEL. */
static int rb_numeric(const rb_spec *sp, uint64_t seed)
{
    tsup_rng rng = tsup_rng_seed(seed);
    const int64_t c = sp->shape[1], n = sp->shape[0];
    const int64_t s_dim = n ? tsup_numel(sp->rank, sp->shape) / c / n : 0;
    atsup_tv dy, x, mean, invstd, w, out[4];
    double *want[4];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s;
    int k, ok = 1;
    const bool g[3] = {(sp->mask & 1) != 0, (sp->mask & 2) != 0, (sp->mask & 4) != 0};
    const int on[4] = {g[0], g[0], g[1], g[2]};
    static const char *const names[4] = {"sumDy", "sumDyXmu", "gradWeight", "gradBias"};

    dy = atsup_tv_make(sp->x, sp->rank, sp->shape, sp->layout, sp->place, ND, &rng, 0.3, 1.0);
    x = atsup_tv_make(sp->x, sp->rank, sp->shape, TSUP_STRIDED, ATSUP_OFFSET, ND, &rng, 1.0, 2.0);
    mean = atsup_tv_make(sp->p, 1, &c, sp->layout, sp->place, ND, &rng, 1.0, 0.5);
    invstd = atsup_tv_make(sp->p, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, &rng, 2.0, 0.25);
    w = atsup_tv_make(sp->p, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, &rng, 1.0, 0.5);
    for (k = 0; k < 4; k++) {
        out[k] = atsup_tv_make(sp->out, 1, &c, k % 2 ? TSUP_STRIDED : sp->layout,
                               k % 2 ? ATSUP_OFFSET : sp->place, ND, NULL, SENTINEL, 0);
        want[k] = calloc((size_t)c, sizeof(double));
    }
    ref_backward_reduce(dy.v, x.v, n, c, s_dim, mean.v, want[0], want[1]);
    for (k = 0; k < c; k++) {
        want[2][k] = want[1][k] * invstd.v[k];
        want[3][k] = want[0][k];
    }
    s = aclnnBatchNormReduceBackwardGetWorkspaceSize(
        dy.a.t, x.a.t, mean.a.t, invstd.a.t, sp->has_weight ? w.a.t : NULL, g[0], g[1], g[2],
        out[0].a.t, out[1].a.t, out[2].a.t, out[3].a.t, &ws, &ex);
    if (s == ACLNN_SUCCESS) s = atsup_run(aclnnBatchNormReduceBackward, ws, ex);
    if (s != ACLNN_SUCCESS) {
        fprintf(stderr, "    status %d: %s\n", (int)s, atsup_msg());
        ok = 0;
    }
    for (k = 0; ok && k < 4; k++) {
        if (on[k])
            ok = atsup_tv_close(names[k], &out[k], want[k], sp->out);
        else if (!all_equal(&out[k], SENTINEL))
            ok = 0, fprintf(stderr, "    disabled %s was written\n", names[k]);
    }
    if (!ok)
        fprintf(stderr, "    case rank %d x %s p %s out %s layout %s mask %d\n", sp->rank,
                atsup_dtype_name(sp->x), atsup_dtype_name(sp->p), atsup_dtype_name(sp->out),
                tsup_layout_name(sp->layout), sp->mask);
    ATSUP_TV_FREE(&dy, &x, &mean, &invstd, &w);
    for (k = 0; k < 4; k++) atsup_tv_free(&out[k]), free(want[k]);
    return ok;
}

static void rb_numbers(void)
{
    static const rb_spec specs[] = {
        {3, {4, 3, 5}, F, F, F, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, 7, 1},
        {4, {2, 5, 3, 2}, ACL_FLOAT16, F, F, TSUP_STRIDED, ATSUP_OFFSET, 7, 0},
        {2, {17, 4}, ACL_BF16, ACL_BF16, ACL_BF16, TSUP_CHANNELS_LAST, ATSUP_PLAIN, 7, 1},
        {5, {2, 3, 2, 1, 3}, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, TSUP_CHANNELS_LAST,
         ATSUP_OFFSET, 7, 1},
        {3, {3, 2, 700}, F, ACL_BF16, ACL_FLOAT16, TSUP_STRIDED, ATSUP_PLAIN, 7, 1},
    };
    int i, failed = 0;
    for (i = 0; i < TSUP_COUNT(specs); i++)
        failed += !rb_numeric(&specs[i], 100 + (uint64_t)i);
    CHECK_MSG(failed == 0, "%d ReduceBackward cases failed", failed);
}

static void rb_every_mask(void)
{
    rb_spec sp = {4, {2, 3, 2, 2}, F, F, F, TSUP_STRIDED, ATSUP_OFFSET, 0, 1};
    int failed = 0;
    for (sp.mask = 0; sp.mask < 8; sp.mask++) failed += !rb_numeric(&sp, 7 + (uint64_t)sp.mask);
    CHECK_MSG(failed == 0, "%d masks failed", failed);
}

/* Empty input: the enabled outputs become 0, the disabled ones are untouched. */
static void rb_empty(void)
{
    rb_spec sp = {3, {0, 3, 4}, F, F, F, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, 5, 1};
    int failed = 0;
    failed += !rb_numeric(&sp, 1);
    sp.mask = 2;
    failed += !rb_numeric(&sp, 2);
    CHECK_MSG(failed == 0, "%d empty cases failed", failed);
}

/* ---------------- aclnnBatchNormElemtBackward ---------------- */

enum { EB_GRAD_OUT, EB_INPUT, EB_MEAN, EB_INVSTD, EB_WEIGHT, EB_SUM_DY, EB_SUM_DY_XMU,
       EB_COUNTER, EB_GRAD_INPUT, EB_N };

static aclnnStatus call_eb(aclTensor *const *a, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormElemtBackwardGetWorkspaceSize(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], null_ws ? NULL : &ws,
        null_ex ? NULL : &ex);
    if (s != ACLNN_SUCCESS) return s;
    return atsup_run(aclnnBatchNormElemtBackward, ws, ex);
}

static const atsup_case k_eb_cases[] = {
    ATSUP_CASE1("gradOut NULL", ATSUP_NULL_ARG(EB_GRAD_OUT), E161001, "gradOut"),
    ATSUP_CASE1("input NULL", ATSUP_NULL_ARG(EB_INPUT), E161001, "input"),
    ATSUP_CASE1("mean NULL", ATSUP_NULL_ARG(EB_MEAN), E161001, "mean"),
    ATSUP_CASE1("invstd NULL", ATSUP_NULL_ARG(EB_INVSTD), E161001, "invstd"),
    ATSUP_CASE1("weight NULL is fine", ATSUP_NULL_ARG(EB_WEIGHT), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("sumDy NULL", ATSUP_NULL_ARG(EB_SUM_DY), E161001, "sumDy"),
    ATSUP_CASE1("sumDyXmu NULL", ATSUP_NULL_ARG(EB_SUM_DY_XMU), E161001, "sumDyXmu"),
    ATSUP_CASE1("counter NULL", ATSUP_NULL_ARG(EB_COUNTER), E161001, "counter"),
    ATSUP_CASE1("gradInput NULL", ATSUP_NULL_ARG(EB_GRAD_INPUT), E161001, "gradInput"),
    ATSUP_CASE1("workspaceSize NULL", ATSUP_NULL_WS, E161001, "workspaceSize"),
    ATSUP_CASE1("executor NULL", ATSUP_NULL_EX, E161001, "executor"),
    ATSUP_CASE1("gradOut INT32", ATSUP_RAW(EB_GRAD_OUT, ACL_INT32, ND, 3, 2, 3, 4), E161002,
                "gradOut"),
    ATSUP_CASE1("input UINT8", ATSUP_RAW(EB_INPUT, ACL_UINT8, ND, 3, 2, 3, 4), E161002, "input"),
    ATSUP_CASE1("weight INT32", ATSUP_RAW(EB_WEIGHT, ACL_INT32, ND, 1, 3), E161002, "weight"),
    ATSUP_CASE1("sumDy DOUBLE", ATSUP_RAW(EB_SUM_DY, ACL_DOUBLE, ND, 1, 3), E161002, "sumDy"),
    ATSUP_CASE1("counter INT64", ATSUP_RAW(EB_COUNTER, ACL_INT64, ND, 1, 2), E161002, "counter"),
    ATSUP_CASE1("counter BF16", ATSUP_RAW(EB_COUNTER, ACL_BF16, ND, 1, 2), E161002, "counter"),
    ATSUP_CASE1("gradInput INT8", ATSUP_RAW(EB_GRAD_INPUT, ACL_INT8, ND, 3, 2, 3, 4), E161002,
                "gradInput"),
    ATSUP_CASE1("gradOut private", ATSUP_RAW(EB_GRAD_OUT, F, PRIV, 3, 2, 3, 4), E161002, "gradOut"),
    ATSUP_CASE1("input private", ATSUP_RAW(EB_INPUT, F, PRIV, 3, 2, 3, 4), E161002, "NC1HWC0"),
    ATSUP_CASE1("gradInput private", ATSUP_RAW(EB_GRAD_INPUT, F, ACL_FRACTAL_Z_3D, 3, 2, 3, 4),
                E161002, "gradInput"),
    ATSUP_CASE1("input rank 1", ATSUP_RAW(EB_INPUT, F, ND, 1, 3), E161002, "input"),
    ATSUP_CASE1("input rank 9", ATSUP_RAW(EB_INPUT, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1), E161002,
                "rank"),
    ATSUP_CASE1("gradInput rank 9",
                ATSUP_RAW(EB_GRAD_INPUT, F, ND, 9, 2, 3, 1, 1, 1, 1, 1, 1, 1), E161002,
                "gradInput"),
    ATSUP_CASE1("counter rank 9", ATSUP_RAW(EB_COUNTER, F, ND, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1),
                E161002, "counter"),
    ATSUP_CASE1("counter rank 0", ATSUP_RAW(EB_COUNTER, F, ND, 0, 0), E161002, "counter"),
    ATSUP_CASE1("C == 0", ATSUP_RAW(EB_INPUT, F, ND, 3, 2, 0, 4), E161002, "channel"),
    ATSUP_CASE1("gradOut shape", ATSUP_RAW(EB_GRAD_OUT, F, ND, 3, 2, 3, 5), E161002, "gradOut"),
    ATSUP_CASE1("gradInput shape", ATSUP_RAW(EB_GRAD_INPUT, F, ND, 2, 6, 4), E161002, "gradInput"),
    ATSUP_CASE1("mean [4]", ATSUP_RAW(EB_MEAN, F, ND, 1, 4), E161002, "mean"),
    ATSUP_CASE1("invstd [3, 1]", ATSUP_RAW(EB_INVSTD, F, ND, 2, 3, 1), E161002, "invstd"),
    ATSUP_CASE1("weight [1]", ATSUP_RAW(EB_WEIGHT, F, ND, 1, 1), E161002, "weight"),
    ATSUP_CASE1("sumDyXmu [2]", ATSUP_RAW(EB_SUM_DY_XMU, F, ND, 1, 2), E161002, "sumDyXmu"),
    ATSUP_CASE1("mean private", ATSUP_RAW(EB_MEAN, F, PRIV, 1, 3), E161002, "mean"),
    ATSUP_CASE1("counter private", ATSUP_RAW(EB_COUNTER, ACL_INT32, PRIV, 1, 2), E161002,
                "counter"),
    ATSUP_CASE1("counter NCHW passes phase 1 (N = 0 < R)",
                ATSUP_RAW(EB_COUNTER, ACL_INT32, ACL_FORMAT_NCHW, 1, 1), E161002, "count is 0"),
    ATSUP_CASE2("NULL before dtype", ATSUP_RAW(EB_GRAD_OUT, ACL_INT32, ND, 3, 2, 3, 4),
                ATSUP_NULL_ARG(EB_COUNTER), E161001, "counter"),
    ATSUP_CASE2("dtype before format", ATSUP_RAW(EB_INPUT, F, PRIV, 3, 2, 3, 4),
                ATSUP_RAW(EB_COUNTER, ACL_INT64, ND, 1, 2), E161002, "counter"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(EB_GRAD_INPUT, F, PRIV, 3, 2, 3, 4),
                ATSUP_RAW(EB_MEAN, F, ND, 1, 5), E161002, "gradInput"),
};

/* Valid arguments: x [2, 3, 4] (R = 8), counter INT32 [2] = {8, 8}. */
static void eb_args(atsup_tv *t)
{
    static const int64_t x[3] = {2, 3, 4}, c = 3, w = 2;
    int k;
    for (k = 0; k < EB_N; k++) {
        if (k == EB_COUNTER)
            t[k] =
                atsup_tv_make(ACL_INT32, 1, &w, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 8, 0);
        else if (k < EB_MEAN || k == EB_GRAD_INPUT)
            t[k] = atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 0.5, 0);
        else
            t[k] = atsup_tv_make(F, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 1.0, 0);
    }
}

static void eb_argument_checks(void)
{
    atsup_tv t[EB_N];
    aclTensor *a[EB_N];
    int k, failed;
    eb_args(t);
    for (k = 0; k < EB_N; k++) a[k] = t[k].a.t;
    failed = atsup_expect_all(call_eb, a, EB_N, k_eb_cases, TSUP_COUNT(k_eb_cases));
    for (k = 0; k < EB_N; k++) atsup_tv_free(&t[k]);
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
}

/* Counter values are checked when phase 2 sums them; any rank and layout is summed. */
static void eb_counter_rules(void)
{
    static const int64_t two = 2, four[2] = {2, 2};
    static const double fractional[2] = {8.5, 8}, negative[2] = {20, -1}, small[2] = {3, 4};
    static const double spread[4] = {4, 4, 0, 8}; /* 16 over a [2, 2] counter */
    atsup_tv t[EB_N];
    atsup_tensor cnt;
    aclTensor *a[EB_N];
    int k;
    eb_args(t);
    for (k = 0; k < EB_N; k++) a[k] = t[k].a.t;
    cnt = atsup_make(F, 1, &two, TSUP_STRIDED, ATSUP_OFFSET, ACL_FORMAT_ND, fractional);
    a[EB_COUNTER] = cnt.t;
    CHECK_ACL(call_eb(a, 0, 0), E161002);
    CHECK_MSG_HAS("counter");
    atsup_free(&cnt);
    cnt = atsup_make(ACL_INT32, 1, &two, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ACL_FORMAT_ND, negative);
    a[EB_COUNTER] = cnt.t;
    CHECK_ACL(call_eb(a, 0, 0), E161002);
    CHECK_MSG_HAS("counter");
    atsup_free(&cnt);
    cnt = atsup_make(ACL_FLOAT16, 1, &two, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ACL_FORMAT_ND, small);
    a[EB_COUNTER] = cnt.t; /* N = 7 < R = 8 */
    CHECK_ACL(call_eb(a, 0, 0), E161002);
    CHECK_MSG_HAS("count");
    atsup_free(&cnt);
    cnt = atsup_make(ACL_FLOAT16, 2, four, TSUP_CHANNELS_LAST, ATSUP_PLAIN, ACL_FORMAT_ND, spread);
    a[EB_COUNTER] = cnt.t;
    CHECK_ACL(call_eb(a, 0, 0), ACLNN_SUCCESS);
    atsup_free(&cnt);
    { /* stride-0 dims repeat their elements: [2^40] over one 1 is N = 2^40; [2, 3] 2 * 4 = R */
        static const int32_t one = 1, vals[3] = {3, 1, 0};
        const int64_t huge = (int64_t)1 << 40, zero = 0, dims[2] = {2, 3}, strides[2] = {0, 1};
        aclTensor *c1 = aclCreateTensor(&huge, 1, ACL_INT32, &zero, 0, ND, &zero, 0, (void *)&one);
        aclTensor *c2 = aclCreateTensor(dims, 2, ACL_INT32, strides, 0, ND, &dims[1], 1,
                                        (void *)vals);
        a[EB_COUNTER] = c1;
        CHECK_ACL(call_eb(a, 0, 0), ACLNN_SUCCESS);
        a[EB_COUNTER] = c2;
        CHECK_ACL(call_eb(a, 0, 0), ACLNN_SUCCESS);
        aclDestroyTensor(c1), aclDestroyTensor(c2);
    }
    for (k = 0; k < EB_N; k++) atsup_tv_free(&t[k]);
}

typedef struct eb_spec {
    int rank;
    int64_t shape[6];
    aclDataType x, p, out, counter;
    int counter_rank; /* 1: [3], 2: [3, 1], 8: [3, 1, ..., 1] */
    tsup_layout layout;
    atsup_place place;
    int has_weight, in_place;
} eb_spec;

static int eb_numeric(const eb_spec *sp, uint64_t seed)
{
    tsup_rng rng = tsup_rng_seed(seed);
    const int64_t c = sp->shape[1], n = sp->shape[0], numel = tsup_numel(sp->rank, sp->shape);
    const int64_t r = numel / c;
    int64_t cshape[8] = {3, 1, 1, 1, 1, 1, 1, 1};
    const double counts[3] = {(double)r, (double)(2 * r), 5};
    atsup_tv dy, x, mean, invstd, w, sdy, sdx, cnt, gi;
    double *want = malloc((size_t)(numel ? numel : 1) * sizeof *want);
    double *tol = malloc((size_t)(numel ? numel : 1) * sizeof *tol);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s;
    int ok = 1;

    dy = atsup_tv_make(sp->x, sp->rank, sp->shape, sp->layout, sp->place, ND, &rng, 0.2, 1.0);
    x = atsup_tv_make(sp->x, sp->rank, sp->shape, TSUP_STRIDED, ATSUP_OFFSET, ND, &rng, 1.0, 2.0);
    mean = atsup_tv_make(sp->p, 1, &c, sp->layout, sp->place, ND, &rng, 1.0, 0.5);
    invstd = atsup_tv_make(sp->p, 1, &c, TSUP_STRIDED, ATSUP_PLAIN, ND, &rng, 1.5, 0.25);
    w = atsup_tv_make(sp->p, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_OFFSET, ND, &rng, 1.0, 0.5);
    sdy = atsup_tv_make(sp->p, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, &rng, 0.0, 3.0);
    sdx = atsup_tv_make(sp->p, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, &rng, 0.0, 3.0);
    cnt.n = 3;
    cnt.v = NULL;
    cnt.a = atsup_make(sp->counter, sp->counter_rank, cshape, TSUP_STRIDED, ATSUP_OFFSET,
                       ACL_FORMAT_ND, counts);
    gi = atsup_tv_make(sp->out, sp->rank, sp->shape,
                       sp->layout == TSUP_STRIDED ? TSUP_CHANNELS_LAST : TSUP_STRIDED, ATSUP_OFFSET,
                       ND, NULL, SENTINEL, 0);
    if (sp->in_place) {
        atsup_tv_free(&gi);
        gi = dy;
    }
    ref_backward_elemt(dy.v, x.v, n, c, r / n, mean.v, invstd.v, sp->has_weight ? w.v : NULL,
                       sdy.v, sdx.v, counts[0] + counts[1] + counts[2], want);
    atsup_backward_tol(dy.v, x.v, n, c, r / n, mean.v, invstd.v, sp->has_weight ? w.v : NULL,
                       sdy.v, sdx.v, counts[0] + counts[1] + counts[2], want, sp->out,
                       atsup_map_u(sp->x, sp->x, gi.a.dtype), tol);
    s = aclnnBatchNormElemtBackwardGetWorkspaceSize(dy.a.t, x.a.t, mean.a.t, invstd.a.t,
                                                    sp->has_weight ? w.a.t : NULL, sdy.a.t,
                                                    sdx.a.t, cnt.a.t, gi.a.t, &ws, &ex);
    if (s == ACLNN_SUCCESS) s = atsup_run(aclnnBatchNormElemtBackward, ws, ex);
    if (s != ACLNN_SUCCESS) {
        fprintf(stderr, "    status %d: %s\n", (int)s, atsup_msg());
        ok = 0;
    }
    if (ok) ok = atsup_tv_close_tol("gradInput", &gi, want, tol);
    if (!ok)
        fprintf(stderr, "    case rank %d x %s p %s out %s counter %s/%d layout %s in_place %d\n",
                sp->rank, atsup_dtype_name(sp->x), atsup_dtype_name(sp->p),
                atsup_dtype_name(sp->out), atsup_dtype_name(sp->counter), sp->counter_rank,
                tsup_layout_name(sp->layout), sp->in_place);
    if (!sp->in_place) atsup_tv_free(&gi);
    ATSUP_TV_FREE(&dy, &x, &mean, &invstd, &w, &sdy, &sdx, &cnt);
    TSUP_FREE_ALL(want, tol);
    return ok;
}

static void eb_numbers(void)
{
    static const eb_spec specs[] = {
        {3, {4, 3, 5}, F, F, F, ACL_INT32, 1, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, 1, 0},
        {4, {2, 5, 3, 2}, ACL_FLOAT16, F, F, ACL_FLOAT, 2, TSUP_STRIDED, ATSUP_OFFSET, 0, 0},
        {2, {17, 4}, ACL_BF16, ACL_BF16, ACL_BF16, ACL_INT32, 8, TSUP_CHANNELS_LAST, ATSUP_PLAIN, 1,
         0},
        {6, {2, 3, 2, 1, 3, 2}, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, 1,
         TSUP_CHANNELS_LAST, ATSUP_OFFSET, 1, 0},
        {3, {3, 2, 700}, F, ACL_BF16, ACL_FLOAT16, ACL_FLOAT, 1, TSUP_STRIDED, ATSUP_PLAIN, 1, 0},
        {3, {2, 3, 4}, F, F, F, ACL_INT32, 1, TSUP_STRIDED, ATSUP_OFFSET, 1, 1},
        {4, {2, 3, 2, 2}, ACL_FLOAT16, F, ACL_FLOAT16, ACL_INT32, 2, TSUP_CHANNELS_LAST,
         ATSUP_PLAIN, 0, 1},
    };
    int i, failed = 0;
    for (i = 0; i < TSUP_COUNT(specs); i++)
        failed += !eb_numeric(&specs[i], 200 + (uint64_t)i);
    CHECK_MSG(failed == 0, "%d ElemtBackward cases failed", failed);
}

/* Empty input: success with workspace 0; counter (here invalid) and gradInput untouched. */
static void eb_empty(void)
{
    static const int64_t x[3] = {0, 3, 4}, two = 2;
    static const double bad[2] = {-1, 0.5};
    atsup_tv t[EB_N];
    aclTensor *a[EB_N];
    unsigned char *snap;
    uint64_t ws = 99;
    aclOpExecutor *ex = NULL;
    int k;
    eb_args(t);
    ATSUP_TV_FREE(&t[EB_GRAD_OUT], &t[EB_INPUT], &t[EB_GRAD_INPUT]);
    t[EB_GRAD_OUT] = atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 0, 0);
    t[EB_INPUT] = atsup_tv_make(F, 3, x, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL, 0, 0);
    t[EB_GRAD_INPUT] = atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 0, 0);
    atsup_free(&t[EB_COUNTER].a);
    t[EB_COUNTER].a = atsup_make(F, 1, &two, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ACL_FORMAT_ND, bad);
    for (k = 0; k < EB_N; k++) a[k] = t[k].a.t;
    snap = tsup_snapshot(&t[EB_GRAD_INPUT].a.buf);
    CHECK_ACL(aclnnBatchNormElemtBackwardGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                          a[7], a[8], &ws, &ex),
              ACLNN_SUCCESS);
    CHECK(ws == 0);
    CHECK_ACL(aclnnBatchNormElemtBackward(NULL, 0, ex, NULL), ACLNN_SUCCESS);
    CHECK(tsup_unchanged(&t[EB_GRAD_INPUT].a.buf, snap));
    free(snap);
    for (k = 0; k < EB_N; k++) atsup_tv_free(&t[k]);
}

/* ---------------- executors through the real ops ---------------- */

static aclnnStatus rb_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor *const *a = (aclTensor *const *)ctx;
    return aclnnBatchNormReduceBackwardGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], true, true,
                                                        true, a[5], a[6], a[7], a[8], ws, ex);
}

static aclnnStatus eb_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor *const *a = (aclTensor *const *)ctx;
    return aclnnBatchNormElemtBackwardGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                       a[7], a[8], ws, ex);
}

static void executor_rules(void)
{
    atsup_tv rb[RB_N], eb[EB_N];
    aclTensor *ra[RB_N], *ea[EB_N];
    int k, ok;
    rb_args(rb);
    eb_args(eb);
    for (k = 0; k < RB_N; k++) ra[k] = rb[k].a.t;
    for (k = 0; k < EB_N; k++) ea[k] = eb[k].a.t;
    ok = atsup_check_executor_rules(rb_phase1, ra, aclnnBatchNormReduceBackward);
    ok = atsup_check_executor_rules(eb_phase1, ea, aclnnBatchNormElemtBackward) && ok;
    for (k = 0; k < RB_N; k++) atsup_tv_free(&rb[k]);
    for (k = 0; k < EB_N; k++) atsup_tv_free(&eb[k]);
    CHECK(ok);
}

/* A repeatable ElemtBackward executor rerun with new gradOut, counter and gradInput data. */
static void eb_repeatable_new_addresses(void)
{
    static const int64_t x[3] = {2, 3, 4}, two = 2;
    tsup_rng rng = tsup_rng_seed(5);
    atsup_tv t[EB_N], dy2, cnt2, gi2;
    aclTensor *a[EB_N];
    double want[24], tol[24];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int k, run;
    eb_args(t);
    for (k = 0; k < EB_N; k++) a[k] = t[k].a.t;
    dy2 = atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, &rng, 0, 1);
    cnt2 = atsup_tv_make(ACL_INT32, 1, &two, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 20, 0);
    gi2 = atsup_tv_make(F, 3, x, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ND, NULL, 0, 0);
    CHECK_ACL(eb_phase1(a, &ws, &ex), ACLNN_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (run = 0; run < 3; run++) {
        const atsup_tv *dy = run ? &dy2 : &t[EB_GRAD_OUT], *gi = run ? &gi2 : &t[EB_GRAD_INPUT];
        double n = run ? 40 : 16;
        if (run == 1) { /* inputs: gradOut 0, counter 7 (weight present); output 0 */
            CHECK_ACL(aclSetInputTensorAddr(ex, 0, a[EB_GRAD_OUT], dy2.a.data), ACLNN_SUCCESS);
            CHECK_ACL(aclSetInputTensorAddr(ex, 7, a[EB_COUNTER], cnt2.a.data), ACLNN_SUCCESS);
            CHECK_ACL(aclSetOutputTensorAddr(ex, 0, a[EB_GRAD_INPUT], gi2.a.data), ACLNN_SUCCESS);
        }
        CHECK_ACL(atsup_run(aclnnBatchNormElemtBackward, ws, ex), ACLNN_SUCCESS);
        ref_backward_elemt(dy->v, t[EB_INPUT].v, 2, 3, 4, t[EB_MEAN].v, t[EB_INVSTD].v,
                           t[EB_WEIGHT].v, t[EB_SUM_DY].v, t[EB_SUM_DY_XMU].v, n, want);
        atsup_backward_tol(dy->v, t[EB_INPUT].v, 2, 3, 4, t[EB_MEAN].v, t[EB_INVSTD].v,
                           t[EB_WEIGHT].v, t[EB_SUM_DY].v, t[EB_SUM_DY_XMU].v, n, want, F,
                           atsup_map_u(F, F, F), tol);
        CHECK(atsup_tv_close_tol("gradInput", gi, want, tol));
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    for (k = 0; k < EB_N; k++) atsup_tv_free(&t[k]);
    ATSUP_TV_FREE(&dy2, &cnt2, &gi2);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(rb_argument_checks), SBN_TEST_CASE(rb_numbers),
    SBN_TEST_CASE(rb_every_mask),      SBN_TEST_CASE(rb_empty),
    SBN_TEST_CASE(eb_argument_checks), SBN_TEST_CASE(eb_counter_rules),
    SBN_TEST_CASE(eb_numbers),         SBN_TEST_CASE(eb_empty),
    SBN_TEST_CASE(executor_rules),     SBN_TEST_CASE(eb_repeatable_new_addresses),
};

SBN_TEST_MAIN(k_cases)
