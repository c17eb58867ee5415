/*
 * op_batch_norm_elemt_backward.c - aclnnBatchNormElemtBackward on the native
 * sbn_backward_elemt, with N = the sum of every element of counter:
 *   gradInput = (gradOut - sumDy/N - (input - mean) * invstd^2 * sumDyXmu/N) * invstd * weight
 * Phase 1 checks in CANN's order: NULL (workspaceSize, executor first, as CANN's
 * OP_CHECK_COMM_INPUT; then gradOut, input, mean, invstd, sumDy, sumDyXmu, counter,
 * gradInput -> 161001; weight is optional, NULL = ones), dtype (the float tensors
 * FLOAT/FLOAT16/BF16, weight only when given; counter INT32/FLOAT16/FLOAT), format (a
 * private format on gradOut, input or gradInput, then on any other present tensor ->
 * 161002: CANN checks the first three only, but a CPU cannot honour a private layout
 * anywhere), shape (input rank 2..8; gradOut, gradInput rank <= 8; counter rank 1..8;
 * C = input dim 1 != 0; gradOut and gradInput shape == input shape; mean, invstd,
 * weight, sumDy, sumDyXmu [C]).
 * Decisions: counter is summed in phase 2, not phase 1, because a repeatable executor
 * may get new addresses (aclSetInputTensorAddr) and new counts between runs; a dim of
 * stride 0 multiplies the sum instead of being walked. Every counter element must be a
 * whole number >= 0 (CANN would divide by a fractional or negative N) and N at least
 * input's samples per channel (native rule: N counts this rank's samples too), else
 * 161002 in phase 2. Computed in double (CANN: fp16 when every float input is fp16,
 * else fp32), rounded once to gradInput's dtype. An empty input (C > 0) succeeds and
 * phase 2 reads and writes nothing, counter included (workspace 0). gradInput may be
 * gradOut itself (same view); a partial overlap with an input is refused in phase 2.
 */
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"

#include <math.h>
#include <string.h>

#include "aclnn_internal.h"

#define OP "aclnnBatchNormElemtBackward"

/* The tensor arguments in signature order. */
enum { T_GRAD_OUT, T_INPUT, T_MEAN, T_INVSTD, T_WEIGHT, T_SUM_DY, T_SUM_DY_XMU, T_COUNTER,
       T_GRAD_INPUT, NT };

static const char *const k_names[NT] = {"gradOut", "input",    "mean",    "invstd",   "weight",
                                        "sumDy",   "sumDyXmu", "counter", "gradInput"};

static const aclDataType k_counter_list[] = {ACL_INT32, ACL_FLOAT16, ACL_FLOAT};
static const sbn__acl_dtypes k_counter_dtypes = {k_counter_list, 3};

/* Largest N kept exactly (counts are summed in double). */
#define MAX_COUNT 9007199254740992.0 /* 2^53 */

/*
 * dst[0..n) = the counts at p, p + stride, ... (stride in elements) of dtype: the
 * counter's INT32, FLOAT16 or FLOAT (the dtypes phase 1 let through), as doubles.
 */
static void load_counts(const char *p, sbn_dtype dtype, int64_t stride, int64_t n, double *dst)
{
    const int64_t step = stride * (int64_t)sbn_dtype_size(dtype); /* inside the checked extent */
    int64_t k;
    for (k = 0; k < n; k++) {
        const char *q = p + k * step;
        int32_t i;
        uint16_t h;
        float f;
        switch (dtype) {
        case SBN_I32: memcpy(&i, q, sizeof i), dst[k] = (double)i; break;
        case SBN_F16: memcpy(&h, q, sizeof h), dst[k] = (double)sbn_f16_to_float(h); break;
        case SBN_F32: memcpy(&f, q, sizeof f), dst[k] = (double)f; break;
        default: dst[k] = NAN; break; /* refused by the caller as not a whole number */
        }
    }
}

/*
 * *total = the sum of every element of counter (any rank and strides), each a whole
 * number >= 0. A dim of stride 0 repeats the same elements: it multiplies the sum of
 * the others instead of being walked (a broadcast counter costs what its data holds).
 */
static aclnnStatus counter_total(const sbn_tensor *counter, int64_t *total)
{
    sbn_tensor c = *counter; /* the dims that address distinct elements */
    int64_t idx[SBN_MAX_RANK] = {0}, numel = sbn_tensor_numel(counter), done, k;
    int64_t elem = (int64_t)sbn_dtype_size(c.dtype);
    double sum = 0.0, repeat = 1.0, run[256];
    int d, last;

    if (numel == 0) {
        *total = 0;
        return ACLNN_SUCCESS;
    }
    if (c.data == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, OP,
                             "counter has %lld elements but its data pointer is NULL",
                             (long long)numel);
    for (c.rank = 0, d = 0; d < counter->rank; d++) {
        if (counter->strides[d] == 0) {
            repeat *= (double)counter->shape[d];
            continue;
        }
        c.shape[c.rank] = counter->shape[d];
        c.strides[c.rank++] = counter->strides[d];
    }
    if (c.rank == 0) c.rank = 1, c.shape[0] = 1, c.strides[0] = 1;
    numel = sbn_tensor_numel(&c);
    last = c.rank - 1;
    for (done = 0; done < numel;) {
        /* one run along the last dim, starting at idx (idx[last] == 0) */
        int64_t n = c.shape[last], off = 0;
        for (d = 0; d < c.rank; d++) off += idx[d] * c.strides[d];
        while (n > 0) {
            int64_t m = n < 256 ? n : 256;
            load_counts((const char *)c.data + off * elem, c.dtype, c.strides[last], m, run);
            for (k = 0; k < m; k++) {
                if (!(run[k] >= 0.0) || run[k] != floor(run[k]) || run[k] > MAX_COUNT)
                    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                                         "counter holds %g; every count must be a whole number "
                                         "from 0 to 2^53 (9007199254740992)",
                                         run[k]);
                sum += run[k];
            }
            if (sum * repeat > MAX_COUNT)
                return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                                     "the counts in counter add up to more than 2^53 "
                                     "(9007199254740992), the largest total N kept exactly");
            done += m;
            n -= m;
            off += m * c.strides[last];
        }
        for (d = last - 1; d >= 0; d--) {
            if (++idx[d] < c.shape[d]) break;
            idx[d] = 0;
        }
    }
    *total = (int64_t)(sum * repeat);
    return ACLNN_SUCCESS;
}

static aclnnStatus run_elemt_backward(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    int64_t count = 0;
    sbn_status s;
    SBN_ACL_TRY(counter_total(sbn__acl_arg(e, T_COUNTER), &count));
    s = sbn_backward_elemt(sbn__acl_arg(e, T_GRAD_OUT), sbn__acl_arg(e, T_INPUT),
                           sbn__acl_arg(e, T_MEAN), sbn__acl_arg(e, T_INVSTD),
                           sbn__acl_arg(e, T_WEIGHT), sbn__acl_arg(e, T_SUM_DY),
                           sbn__acl_arg(e, T_SUM_DY_XMU), count, sbn__acl_arg(e, T_GRAD_INPUT),
                           workspace, (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus check_args(const aclTensor *const *t)
{
    const aclTensor *input = t[T_INPUT];
    int64_t c;
    int k;

    for (k = 0; k < NT; k++)
        if (k != T_WEIGHT) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    for (k = 0; k < NT; k++)
        if (t[k])
            SBN_ACL_TRY(sbn__acl_check_dtype(
                OP, t[k], k_names[k], k == T_COUNTER ? &k_counter_dtypes : &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_format(OP, t[T_GRAD_OUT], "gradOut"));
    SBN_ACL_TRY(sbn__acl_check_format(OP, input, "input"));
    SBN_ACL_TRY(sbn__acl_check_format(OP, t[T_GRAD_INPUT], "gradInput"));
    for (k = T_MEAN; k <= T_COUNTER; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, t[T_GRAD_OUT], "gradOut", 0, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, t[T_GRAD_INPUT], "gradInput", 0, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, t[T_COUNTER], "counter", 1, 8));
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 0, &c));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, t[T_GRAD_OUT], "gradOut", input, "input"));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, t[T_GRAD_INPUT], "gradInput", input, "input"));
    for (k = T_MEAN; k <= T_SUM_DY_XMU; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const aclTensor *sumDy,
    const aclTensor *sumDyXmu, aclTensor *counter, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {gradOut, input, mean,    invstd,   weight,
                                    sumDy,   sumDyXmu, counter, gradInput};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    uint64_t bytes = 0;
    int empty;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));
    SBN_ACL_TRY(check_args(t));

    empty = sbn__acl_numel(t[T_INPUT]) == 0; /* nothing to read or write: phase 2 does nothing */
    if (!empty)
        SBN_ACL_TRY(
            sbn__acl_workspace_size(OP, sbn_backward_elemt_workspace_size, t[T_INPUT], 0, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = empty ? sbn__acl_run_nothing : run_elemt_backward, .workspace_size = bytes,
        .tensors = t, .names = k_names, .count = NT, .first_output = T_GRAD_INPUT};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtBackward(void *workspace,
                                                            uint64_t workspaceSize,
                                                            aclOpExecutor *executor,
                                                            const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
