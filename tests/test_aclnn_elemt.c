/*
 * test_aclnn_elemt.c - aclnnBatchNormElemt through the aclnn API: every
 * documented status with the argument that triggers it (each NULL, including
 * 161001 for a NULL input/mean/invstd/output as the doc says; dtypes outside the
 * list including integer types; private formats and input/output formats that
 * differ; ranks 1 and 9; every shape mismatch; C == 0) and the message naming it;
 * the check order when two arguments are wrong (NULL, dtype, format, then shape:
 * every rank before every size); optional weight and bias; mixed dtypes; empty
 * input; FLOAT, FLOAT16 and BF16 in contiguous, channels-last and strided-with-
 * offset layouts, ranks 2 to 8, with strided outputs whose guard bytes must
 * survive, against ref_elemt on the values as stored (tolerance: output rounding
 * plus the float map's bound, atsup_normalize_tol); in place and a partial
 * overlap; eps having no effect; the executor rules and a repeatable executor on
 * new addresses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "ref/ref.h"

#define F ACL_FLOAT
#define F16 ACL_FLOAT16
#define ND ACL_FORMAT_ND
#define NCHW ACL_FORMAT_NCHW
#define PRIV ACL_FORMAT_NC1HWC0
#define E_NULL ACLNN_ERR_PARAM_NULLPTR
#define E_INVALID ACLNN_ERR_PARAM_INVALID

static const aclDataType k_floats[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/* Tensor slots in signature order. */
enum { E_IN, E_W, E_B, E_MEAN, E_INV, E_OUT, E_N };

static aclnnStatus elemt_call_eps(aclTensor *const *a, double eps, int null_ws, int null_ex)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s = aclnnBatchNormElemtGetWorkspaceSize(a[E_IN], a[E_W], a[E_B], a[E_MEAN],
                                                        a[E_INV], eps, a[E_OUT],
                                                        null_ws ? NULL : &ws, null_ex ? NULL : &ex);
    return s != ACLNN_SUCCESS ? s : atsup_run(aclnnBatchNormElemt, ws, ex);
}

static aclnnStatus elemt_call(aclTensor *const *a, int null_ws, int null_ex)
{
    return elemt_call_eps(a, 1e-5, null_ws, null_ex);
}

/*
 * One oracle case: x of dtype xdt in `layout` (rank, shape), output of dtype ydt
 * strided at an offset, per-channel tensors of dtype pdt; weight/bias present per
 * `affine` (bit 0 weight, bit 1 bias).
 */
static void check_elemt(aclDataType xdt, aclDataType ydt, aclDataType pdt, int rank,
                        const int64_t *shape, tsup_layout layout, int affine, uint64_t seed)
{
    int64_t numel = tsup_numel(rank, shape), c = shape[1], n = shape[0], s = numel / (n * c), i;
    double *xv = atsup_normal(seed, numel, 0.5, 2.0, xdt);
    double *pv = atsup_normal(seed + 1, 4 * c, 0.0, 1.0, pdt);
    double *xs = malloc(sizeof(double) * (size_t)numel * 4), *want = xs + numel;
    double *got = want + numel, *tol = got + numel;
    double *ps = malloc(sizeof(double) * (size_t)c * 4);
    atsup_tensor t[E_N];
    aclTensor *a[E_N];
    char what[96];
    for (i = 0; i < c; i++) pv[3 * c + i] = 0.25 + fabs(pv[3 * c + i]); /* invstd > 0 */
    t[E_IN] = atsup_make(xdt, rank, shape, layout,
                         layout == TSUP_STRIDED ? ATSUP_OFFSET : ATSUP_PLAIN, ND, xv);
    t[E_W] = atsup_make(pdt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, pv);
    t[E_B] = atsup_make(pdt, 1, &c, TSUP_CHANNELS_FIRST, ATSUP_OFFSET, ND, pv + c);
    t[E_MEAN] = atsup_make(pdt, 1, &c, TSUP_STRIDED, ATSUP_PLAIN, ND, pv + 2 * c);
    t[E_INV] = atsup_make(pdt, 1, &c, TSUP_STRIDED, ATSUP_OFFSET, ND, pv + 3 * c);
    t[E_OUT] = atsup_make(ydt, rank, shape, TSUP_STRIDED, ATSUP_OFFSET, ND, NULL);
    atsup_handles(t, a, E_N);
    if (!(affine & 1)) a[E_W] = NULL;
    if (!(affine & 2)) a[E_B] = NULL;
    atsup_read(&t[E_IN], xs);
    for (i = 0; i < 4; i++) atsup_read(&t[E_W + i], ps + i * c);
    ref_elemt(xs, n, c, s, ps + 2 * c, ps + 3 * c, (affine & 1) ? ps : NULL,
              (affine & 2) ? ps + c : NULL, want);
    snprintf(what, sizeof what, "x %s y %s params %s rank %d %s affine %d",
             atsup_dtype_name(xdt), atsup_dtype_name(ydt), atsup_dtype_name(pdt), rank,
             tsup_layout_name(layout), affine);
    CHECK_ACL(elemt_call(a, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[E_OUT], got);
    atsup_normalize_tol(xs, n, c, s, ps + 2 * c, ps + 3 * c, (affine & 1) ? ps : NULL,
                        (affine & 2) ? ps + c : NULL, want, ydt, atsup_map_u(xdt, xdt, ydt), tol);
    CHECK_MSG(tsup_close_tol(what, got, want, tol, numel), "%s", what);
    CHECK_MSG(atsup_guard_ok(&t[E_OUT]), "%s: output written outside its view", what);
    atsup_free_n(t, E_N);
    TSUP_FREE_ALL(xv, pv, xs, ps);
}

static void test_elemt_oracle(void)
{
    static const int64_t shapes[][9] = {{2, 5, 3},          {3, 2, 4, 7},
                                        {4, 2, 3, 5, 4},    {5, 2, 2, 3, 2, 3},
                                        {6, 1, 3, 2, 2, 1, 2}, {8, 2, 2, 1, 2, 1, 3, 1, 2}};
    static const tsup_layout layouts[] = {TSUP_CHANNELS_FIRST, TSUP_CHANNELS_LAST, TSUP_STRIDED};
    size_t d, k, l;
    for (d = 0; d < 3; d++)
        for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
            for (l = 0; l < 3; l++) {
                aclDataType x = k_floats[d];
                check_elemt(x, k % 2 ? x : F, k % 3 == 0 ? x : F, (int)shapes[k][0], &shapes[k][1],
                            layouts[l], (int)((k + l) % 4), 100 * d + 10 * k + l);
                RETURN_IF_FAILED();
            }
}

/* Valid arguments: input and output [2, 3, 4], C = 3. */
static void elemt_fixture(atsup_tensor *t, const double *x)
{
    static const int64_t shape[] = {2, 3, 4};
    static const double w[] = {1, 2, 3}, b[] = {0.5, 0, -1}, m[] = {0, 1, 2}, inv[] = {1, 0.5, 2};
    t[E_IN] = atsup_plain(F, 3, shape, x);
    t[E_W] = atsup_vec(F, 3, w);
    t[E_B] = atsup_vec(F, 3, b);
    t[E_MEAN] = atsup_vec(F, 3, m);
    t[E_INV] = atsup_vec(F, 3, inv);
    t[E_OUT] = atsup_plain(F, 3, shape, NULL);
}

static const atsup_case k_elemt_cases[] = {
    ATSUP_CASE1("NULL input", ATSUP_NULL_ARG(E_IN), E_NULL, "input"),
    ATSUP_CASE1("NULL mean", ATSUP_NULL_ARG(E_MEAN), E_NULL, "mean"),
    ATSUP_CASE1("NULL invstd", ATSUP_NULL_ARG(E_INV), E_NULL, "invstd"),
    ATSUP_CASE1("NULL output", ATSUP_NULL_ARG(E_OUT), E_NULL, "output"),
    ATSUP_CASE1("NULL workspaceSize", ATSUP_NULL_WS, E_NULL, "workspaceSize"),
    ATSUP_CASE1("NULL executor", ATSUP_NULL_EX, E_NULL, "executor"),
    ATSUP_CASE1("NULL weight", ATSUP_NULL_ARG(E_W), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("NULL bias", ATSUP_NULL_ARG(E_B), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("INT32 input", ATSUP_RAW(E_IN, ACL_INT32, ND, 3, 2, 3, 4), E_INVALID, "input"),
    ATSUP_CASE1("INT8 weight", ATSUP_RAW(E_W, ACL_INT8, ND, 1, 3), E_INVALID, "weight"),
    ATSUP_CASE1("DOUBLE bias", ATSUP_RAW(E_B, ACL_DOUBLE, ND, 1, 3), E_INVALID, "bias"),
    ATSUP_CASE1("INT64 mean", ATSUP_RAW(E_MEAN, ACL_INT64, ND, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("UINT8 invstd", ATSUP_RAW(E_INV, ACL_UINT8, ND, 1, 3), E_INVALID, "invstd"),
    ATSUP_CASE1("BOOL output", ATSUP_RAW(E_OUT, ACL_BOOL, ND, 3, 2, 3, 4), E_INVALID, "output"),
    ATSUP_CASE1("FLOAT16 input (mixed dtypes)", ATSUP_RAW(E_IN, F16, ND, 3, 2, 3, 4),
                ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("BF16 mean (mixed dtypes)", ATSUP_RAW(E_MEAN, ACL_BF16, ND, 1, 3), ACLNN_SUCCESS,
                NULL),
    ATSUP_CASE1("output NCHW, input ND", ATSUP_RAW(E_OUT, F, NCHW, 3, 2, 3, 4), E_INVALID,
                "format"),
    ATSUP_CASE2("input and output NC1HWC0", ATSUP_RAW(E_IN, F, PRIV, 3, 2, 3, 4),
                ATSUP_RAW(E_OUT, F, PRIV, 3, 2, 3, 4), E_INVALID, "private"),
    ATSUP_CASE2("input and output NCHW on 3-D", ATSUP_RAW(E_IN, F, NCHW, 3, 2, 3, 4),
                ATSUP_RAW(E_OUT, F, NCHW, 3, 2, 3, 4), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("FRACTAL_Z weight", ATSUP_RAW(E_W, F, ACL_FORMAT_FRACTAL_Z, 1, 3), E_INVALID,
                "weight"),
    ATSUP_CASE1("NC1HWC0 mean", ATSUP_RAW(E_MEAN, F, PRIV, 1, 3), E_INVALID, "mean"),
    ATSUP_CASE1("rank-1 input", ATSUP_RAW(E_IN, F, ND, 1, 3), E_INVALID, "input"),
    ATSUP_CASE1("rank-9 input", ATSUP_RAW(E_IN, F, ND, 9, 1, 3, 1, 1, 1, 1, 1, 1, 1), E_INVALID,
                "input"),
    ATSUP_CASE1("rank-9 output", ATSUP_RAW(E_OUT, F, ND, 9, 2, 3, 4, 1, 1, 1, 1, 1, 1), E_INVALID,
                "output"),
    ATSUP_CASE2("rank-8 input and output", ATSUP_RAW(E_IN, F, ND, 8, 1, 3, 1, 2, 1, 1, 1, 2),
                ATSUP_RAW(E_OUT, F, ND, 8, 1, 3, 1, 2, 1, 1, 1, 2), ACLNN_SUCCESS, NULL),
    ATSUP_CASE1("output [2, 3, 5]", ATSUP_RAW(E_OUT, F, ND, 3, 2, 3, 5), E_INVALID, "output"),
    ATSUP_CASE1("output [6, 4]", ATSUP_RAW(E_OUT, F, ND, 2, 6, 4), E_INVALID, "output"),
    ATSUP_CASE2("C == 0", ATSUP_RAW(E_IN, F, ND, 3, 2, 0, 4), ATSUP_RAW(E_OUT, F, ND, 3, 2, 0, 4),
                E_INVALID, "channel"),
    ATSUP_CASE1("2-D weight", ATSUP_RAW(E_W, F, ND, 2, 1, 3), E_INVALID, "weight"),
    ATSUP_CASE1("bias [4]", ATSUP_RAW(E_B, F, ND, 1, 4), E_INVALID, "bias"),
    ATSUP_CASE1("mean [2]", ATSUP_RAW(E_MEAN, F, ND, 1, 2), E_INVALID, "mean"),
    ATSUP_CASE1("2-D invstd", ATSUP_RAW(E_INV, F, ND, 2, 3, 1), E_INVALID, "invstd"),
    ATSUP_CASE2("empty input", ATSUP_RAW(E_IN, F, ND, 3, 0, 3, 4),
                ATSUP_RAW(E_OUT, F16, ND, 3, 0, 3, 4), ACLNN_SUCCESS, NULL),
    ATSUP_CASE2("NULL mean before bad input dtype", ATSUP_NULL_ARG(E_MEAN),
                ATSUP_RAW(E_IN, ACL_INT32, ND, 3, 2, 3, 4), E_NULL, "mean"),
    ATSUP_CASE2("bad input dtype before NULL workspaceSize", ATSUP_NULL_WS,
                ATSUP_RAW(E_IN, ACL_INT32, ND, 3, 2, 3, 4), E_INVALID, "input"),
    ATSUP_CASE2("dtype before format", ATSUP_RAW(E_W, ACL_INT8, ND, 1, 3),
                ATSUP_RAW(E_OUT, F, PRIV, 3, 2, 3, 4), E_INVALID, "must be one of"),
    ATSUP_CASE2("format before shape", ATSUP_RAW(E_MEAN, F, PRIV, 1, 3),
                ATSUP_RAW(E_INV, F, ND, 1, 4), E_INVALID, "private"),
    ATSUP_CASE2("every rank before any size", ATSUP_RAW(E_W, F, ND, 1, 4),
                ATSUP_RAW(E_INV, F, ND, 2, 1, 3), E_INVALID, "invstd"),
};

static void test_elemt_arguments(void)
{
    atsup_tensor t[E_N];
    aclTensor *a[E_N];
    int failed;
    elemt_fixture(t, NULL);
    atsup_handles(t, a, E_N);
    failed = atsup_expect_all(elemt_call, a, E_N, k_elemt_cases, TSUP_COUNT(k_elemt_cases));
    CHECK_MSG(failed == 0, "%d argument cases failed", failed);
    atsup_free_n(t, E_N);
}

/* The doc-style example by hand, weight/bias optional, eps without effect, in place. */
static void test_elemt_values(void)
{
    static const double eps_values[] = {1e-5, 0.0, -3.0, NAN, 1e300};
    double x[24], want[24], got[24], base[24];
    atsup_tensor t[E_N];
    aclTensor *a[E_N];
    int i, k;
    for (i = 0; i < 24; i++) x[i] = 0.25 * i - 2.0;
    elemt_fixture(t, x);
    atsup_handles(t, a, E_N);
    /* y = (x - mean) * invstd * w + b with elemt_fixture's per-channel values, C = 3, S = 4 */
    for (i = 0; i < 24; i++) {
        static const double w[] = {1, 2, 3}, b[] = {0.5, 0, -1}, m[] = {0, 1, 2};
        static const double inv[] = {1, 0.5, 2};
        int c = (i / 4) % 3;
        want[i] = (x[i] - m[c]) * inv[c] * w[c] + b[c];
    }
    CHECK_ACL(elemt_call(a, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[E_OUT], base);
    CHECK(tsup_close("y", base, want, 24, 1e-7, 1e-7));
    for (k = 0; k < 5; k++) { /* eps cancels in CANN's formula: any value, the same bits */
        CHECK_ACL(elemt_call_eps(a, eps_values[k], 0, 0), ACLNN_SUCCESS);
        atsup_read(&t[E_OUT], got);
        CHECK_MSG(memcmp(got, base, sizeof got) == 0, "eps %g changed the output", eps_values[k]);
    }
    a[E_W] = a[E_B] = NULL; /* weight 1, bias 0 */
    CHECK_ACL(elemt_call(a, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[E_OUT], got);
    for (i = 0; i < 24; i++) {
        static const double m[] = {0, 1, 2}, inv[] = {1, 0.5, 2};
        int c = (i / 4) % 3;
        want[i] = (x[i] - m[c]) * inv[c];
    }
    CHECK(tsup_close("y without weight and bias", got, want, 24, 1e-7, 1e-7));
    a[E_OUT] = t[E_IN].t; /* in place: output is input itself */
    CHECK_ACL(elemt_call(a, 0, 0), ACLNN_SUCCESS);
    atsup_read(&t[E_IN], got);
    CHECK(tsup_close("y in place", got, want, 24, 1e-7, 1e-7));
    atsup_free_n(t, E_N);
}

/* An output that partly overlaps the input passes phase 1 and is refused by phase 2. */
static void test_elemt_overlap(void)
{
    static const int64_t shape[] = {2, 3, 4}, strides[] = {12, 4, 1}, storage = 32;
    float *buf = calloc(32, sizeof(float));
    atsup_tensor t[E_N];
    aclTensor *x, *y, *a[E_N];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    elemt_fixture(t, NULL);
    atsup_handles(t, a, E_N);
    x = aclCreateTensor(shape, 3, F, strides, 0, ND, &storage, 1, buf);
    y = aclCreateTensor(shape, 3, F, strides, 4, ND, &storage, 1, buf);
    CHECK(x != NULL && y != NULL);
    a[E_IN] = x;
    a[E_OUT] = y;
    CHECK_ACL(aclnnBatchNormElemtGetWorkspaceSize(a[E_IN], a[E_W], a[E_B], a[E_MEAN], a[E_INV],
                                                  1e-5, a[E_OUT], &ws, &ex),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormElemt, ws, ex), E_INVALID);
    CHECK(atsup_msg()[0] != '\0');
    aclDestroyTensor(x);
    aclDestroyTensor(y);
    free(buf);
    atsup_free_n(t, E_N);
}

static aclnnStatus elemt_phase1(void *ctx, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor **a = ctx;
    return aclnnBatchNormElemtGetWorkspaceSize(a[E_IN], a[E_W], a[E_B], a[E_MEAN], a[E_INV], 1e-5,
                                               a[E_OUT], ws, ex);
}

/*
 * Executor rules, then a repeatable executor without weight run three times:
 * input is input 0, mean input 2 (absent weight not counted), output output 0;
 * each run gets new input, mean and output buffers of the same layout.
 */
static void test_elemt_executor(void)
{
    static const int64_t shape[] = {2, 3, 4}, c = 3;
    atsup_tensor t[E_N];
    aclTensor *a[E_N];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int i, k;
    elemt_fixture(t, NULL);
    atsup_handles(t, a, E_N);
    CHECK(atsup_check_executor_rules(elemt_phase1, a, aclnnBatchNormElemt));
    /* input without memory yet: phase 1 passes, phase 2 gives 161001 */
    CHECK(atsup_check_no_data(elemt_phase1, a, aclnnBatchNormElemt, &a[E_IN], F, 3, shape, ND));
    a[E_W] = NULL;
    CHECK_ACL(elemt_phase1(a, &ws, &ex), ACLNN_SUCCESS);
    CHECK(ws > 0);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    for (k = 0; k < 3; k++) {
        double *xv = atsup_normal(60 + (uint64_t)k, 24, (double)k, 1.0, F), m[3], want[24], got[24];
        double ps[12];
        atsup_tensor xk, mk, yk;
        for (i = 0; i < 3; i++) m[i] = 0.5 * (i + k);
        xk = atsup_plain(F, 3, shape, xv);
        mk = atsup_vec(F, 3, m);
        yk = atsup_plain(F, 3, shape, NULL);
        CHECK_ACL(aclSetInputTensorAddr(ex, 0, t[E_IN].t, xk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetInputTensorAddr(ex, 2, t[E_MEAN].t, mk.data), ACLNN_SUCCESS);
        CHECK_ACL(aclSetOutputTensorAddr(ex, 0, t[E_OUT].t, yk.data), ACLNN_SUCCESS);
        CHECK_ACL(atsup_run(aclnnBatchNormElemt, ws, ex), ACLNN_SUCCESS);
        atsup_read(&t[E_B], ps);
        atsup_read(&t[E_INV], ps + 3);
        ref_elemt(xv, 2, c, 4, m, ps + 3, NULL, ps, want);
        atsup_read(&yk, got);
        CHECK_MSG(tsup_close("y on new addresses", got, want, 24, 1e-6, 1e-6), "run %d", k);
        ATSUP_FREE(&xk, &mk, &yk);
        free(xv);
    }
    CHECK_ACL(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    atsup_free_n(t, E_N);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_elemt_oracle),  SBN_TEST_CASE(test_elemt_arguments),
    SBN_TEST_CASE(test_elemt_values),  SBN_TEST_CASE(test_elemt_overlap),
    SBN_TEST_CASE(test_elemt_executor),
};

SBN_TEST_MAIN(k_cases)
