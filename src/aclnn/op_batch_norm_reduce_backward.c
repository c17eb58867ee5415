/*
 * op_batch_norm_reduce_backward.c - aclnnBatchNormReduceBackward on the native
 * sbn_backward_reduce: sumDy = sum(gradOut), sumDyXmu = sum(gradOut * (input - mean)),
 * gradWeight = sumDyXmu * invstd, gradBias = sumDy. Phase 1 checks in CANN's order:
 * NULL (workspaceSize, executor first, as CANN's OP_CHECK_COMM_INPUT; then gradOut,
 * input, mean, invstd, and each enabled output -> 161001), dtype (gradOut, input,
 * mean, invstd FLOAT/FLOAT16/BF16; gradOut and input equal; weight when given; the
 * enabled outputs), format (gradOut and input formats equal; a private format on
 * any present input or enabled output -> 161002), shape (gradOut and input rank
 * 2..8, C = input dim 1 != 0, gradOut shape == input shape, mean/invstd/weight and
 * the enabled outputs [C]). C is always dim 1, whatever the (public) format.
 * Decisions: inputG enables sumDy and sumDyXmu, weightG gradWeight, biasG gradBias;
 * a disabled output may be NULL and is neither validated nor written (as CANN's UT:
 * a bad dtype or format there passes). weight is optional and unused (as CANN).
 * Deviation from CANN: mean, invstd and weight (when given) are checked as [C] and
 * gradOut's shape against input's, because phase 2 reads them (CANN checks none of
 * them; a wrong size would be an out-of-bounds read) -> 161002; weight's dtype and
 * format are checked like mean's. An empty input (C > 0) succeeds and phase 2 fills
 * the enabled outputs with 0 (as 950; open question 5). Sums are taken in double
 * (CANN: fp32) and each output is rounded to its own dtype. An output overlapping
 * an input or another output is refused in phase 2 (161002).
 */
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormReduceBackward"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The tensor arguments in signature order. */
enum { T_GRAD_OUT, T_INPUT, T_MEAN, T_INVSTD, T_WEIGHT, T_SUM_DY, T_SUM_DY_XMU, T_GRAD_WEIGHT,
       T_GRAD_BIAS, NT };

static const char *const k_names[NT] = {"gradOut", "input", "mean", "invstd", "weight",
                                        "sumDy", "sumDyXmu", "gradWeight", "gradBias"};

/* executor->ints[0] packs slot + 1 of tensor k in bits 5k..5k+4 (0: absent or disabled). */
#define SLOT_BITS 5

static sbn_tensor *arg(aclOpExecutor *e, int k)
{
    return sbn__acl_exec_view(e, (int)((e->ints[0] >> (SLOT_BITS * k)) & 31) - 1);
}

static aclnnStatus run_reduce_backward(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_backward_reduce(arg(e, T_GRAD_OUT), arg(e, T_INPUT), arg(e, T_MEAN),
                                       arg(e, T_INVSTD), arg(e, T_SUM_DY), arg(e, T_SUM_DY_XMU),
                                       arg(e, T_GRAD_WEIGHT), arg(e, T_GRAD_BIAS), workspace,
                                       (size_t)workspace_size, NULL);
    return sbn__acl_from_native(s, OP);
}

/* on[k]: tensor k is required (inputs but weight) or an enabled output; weight when given. */
static aclnnStatus check_args(const aclTensor *const *t, const int *on)
{
    const aclTensor *grad_out = t[T_GRAD_OUT], *input = t[T_INPUT];
    char a[160];
    int k;

    for (k = 0; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    for (k = T_GRAD_OUT; k <= T_INVSTD; k++)
        TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    if (grad_out->dtype != input->dtype)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "gradOut has dtype %s but input has dtype %s; they must be equal",
                             sbn__acl_dtype_name(grad_out->dtype),
                             sbn__acl_dtype_name(input->dtype));
    for (k = T_WEIGHT; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    if (grad_out->format != input->format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "gradOut has format %s but input has format %s; they must be equal",
                             sbn__acl_format_name(grad_out->format),
                             sbn__acl_format_name(input->format));
    for (k = 0; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    TRY(sbn__acl_check_rank(OP, grad_out, "gradOut", 2, 8));
    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    if (input->dims[1] == 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has shape %s: the channel dim (1) is 0",
                             sbn__acl_shape_str(input, a, sizeof a));
    TRY(sbn__acl_check_same_shape(OP, grad_out, "gradOut", input, "input"));
    for (k = T_MEAN; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_vector(OP, t[k], k_names[k], input->dims[1]));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const bool inputG, const bool weightG,
    const bool biasG, aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const t[NT] = {gradOut, input, mean, invstd, weight,
                                    sumDy, sumDyXmu, gradWeight, gradBias};
    const int on[NT] = {1, 1, 1, 1, weight != NULL, inputG, inputG, weightG, biasG};
    sbn_tensor x;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;
    int k;

    sbn__acl_clear_error();
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));
    TRY(check_args(t, on));

    x = sbn__acl_view(input, 0);
    if (x.data == NULL) x.data = &x; /* the size depends on the shape only; data may come later */
    if ((s = sbn_backward_reduce_workspace_size(&x, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, run_reduce_backward, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->ints[0] = 0;
    for (k = 0; k < NT; k++) {
        const aclTensor *tk = on[k] ? t[k] : NULL; /* a disabled output is not an argument */
        int slot = sbn__acl_exec_add(e, tk, sbn__acl_view(tk, 0), k >= T_SUM_DY);
        if (tk && slot < 0) {
            sbn__acl_exec_discard(e);
            return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
        }
        e->ints[0] |= (int64_t)(slot + 1) << (SLOT_BITS * k);
    }
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackward(void *workspace,
                                                             uint64_t workspaceSize,
                                                             aclOpExecutor *executor,
                                                             const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
