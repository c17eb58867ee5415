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

#include "aclnn_internal.h"

#define OP "aclnnBatchNormReduceBackward"

/* The tensor arguments in signature order. */
enum { T_GRAD_OUT, T_INPUT, T_MEAN, T_INVSTD, T_WEIGHT, T_SUM_DY, T_SUM_DY_XMU, T_GRAD_WEIGHT,
       T_GRAD_BIAS, NT };

static const char *const k_names[NT] = {"gradOut", "input", "mean", "invstd", "weight",
                                        "sumDy", "sumDyXmu", "gradWeight", "gradBias"};

static aclnnStatus run_reduce_backward(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_backward_reduce(
        sbn__acl_arg(e, T_GRAD_OUT), sbn__acl_arg(e, T_INPUT), sbn__acl_arg(e, T_MEAN),
        sbn__acl_arg(e, T_INVSTD), sbn__acl_arg(e, T_SUM_DY), sbn__acl_arg(e, T_SUM_DY_XMU),
        sbn__acl_arg(e, T_GRAD_WEIGHT), sbn__acl_arg(e, T_GRAD_BIAS), workspace,
        (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

/* on[k]: tensor k is required (inputs but weight) or an enabled output; weight when given. */
static aclnnStatus check_args(const aclTensor *const *t, const int *on)
{
    const aclTensor *grad_out = t[T_GRAD_OUT], *input = t[T_INPUT];
    int64_t c;
    int k;

    for (k = 0; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    for (k = T_GRAD_OUT; k <= T_INVSTD; k++)
        SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_same_dtype(OP, grad_out, "gradOut", input, "input"));
    for (k = T_WEIGHT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_same_format(OP, grad_out, "gradOut", input, "input"));
    for (k = 0; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, grad_out, "gradOut", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 0, &c));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, grad_out, "gradOut", input, "input"));
    for (k = T_MEAN; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const bool inputG, const bool weightG,
    const bool biasG, aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {gradOut, input, mean, invstd, weight,
                                    sumDy, sumDyXmu, gradWeight, gradBias};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    /* a disabled output is not an argument */
    const int on[NT] = {1, 1, 1, 1, weight != NULL, inputG, inputG, weightG, biasG};
    uint64_t bytes = 0;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));
    SBN_ACL_TRY(check_args(t, on));

    SBN_ACL_TRY(
        sbn__acl_workspace_size(OP, sbn_backward_reduce_workspace_size, t[T_INPUT], 0, &bytes));
    const sbn__acl_exec_spec spec = {.run = run_reduce_backward, .workspace_size = bytes,
                                     .tensors = t, .on = on, .names = k_names, .count = NT,
                                     .first_output = T_SUM_DY};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceBackward(void *workspace,
                                                             uint64_t workspaceSize,
                                                             aclOpExecutor *executor,
                                                             const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
