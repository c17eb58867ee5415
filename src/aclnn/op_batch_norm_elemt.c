/*
 * op_batch_norm_elemt.c - aclnnBatchNormElemt on the native sbn_elemt:
 * output = (input - mean[c]) * invstd[c] * weight[c] + bias[c]. Phase 1 checks in
 * CANN's order: NULL (input, mean, invstd, output -> 161001, as the doc says; the
 * CANN code returns 161002 there; weight and bias are optional, NULL = ones and
 * zeros, as the code), dtype (every present tensor FLOAT/FLOAT16/BF16; the doc's
 * equal-dtype rule is not enforced, as the code), format (input and output formats
 * differ, or a private format on any present tensor -> 161002; CANN checks only
 * input's), shape (input and output rank 2..8, output shape == input shape,
 * C = input dim 1 != 0, weight/bias/mean/invstd 1-D, then each of size C).
 * workspaceSize and executor are not checked by CANN (it would crash); here a NULL
 * one gives 161001 after every other check. Decisions: eps is not used: CANN turns
 * invstd into var = invstd^-2 - eps and runs inference BN with the same eps, so eps
 * cancels (up to rounding) and any value is accepted; invstd > 0 is not checked
 * (as CANN). An empty input (C > 0) succeeds and phase 2 writes nothing. output
 * may be input itself (same view); a partial overlap is refused by the native op in
 * phase 2 (161002). A tensor whose data is still NULL passes phase 1 (its memory may
 * be set with aclSet*TensorAddr); phase 2 refuses it (161001).
 */
#include "aclnnop/aclnn_batch_norm_elemt.h"

#include "aclnn_internal.h"

#define OP "aclnnBatchNormElemt"

/* The tensor arguments in signature order. */
enum { T_INPUT, T_WEIGHT, T_BIAS, T_MEAN, T_INVSTD, T_OUTPUT, NT };

static const char *const k_names[NT] = {"input", "weight", "bias", "mean", "invstd", "output"};

static aclnnStatus run_elemt(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_elemt(sbn__acl_arg(e, T_INPUT), sbn__acl_arg(e, T_MEAN),
                             sbn__acl_arg(e, T_INVSTD), sbn__acl_arg(e, T_WEIGHT),
                             sbn__acl_arg(e, T_BIAS), sbn__acl_arg(e, T_OUTPUT), workspace,
                             (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus check_args(const aclTensor *const *t)
{
    const aclTensor *input = t[T_INPUT], *output = t[T_OUTPUT];
    int64_t c;
    int k;
    for (k = 0; k < NT; k++)
        if (k != T_WEIGHT && k != T_BIAS) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    for (k = 0; k < NT; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_same_format(OP, input, "input", output, "output"));
    for (k = 0; k < NT; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, output, "output", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, output, "output", input, "input"));
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 0, &c));
    for (k = T_WEIGHT; k <= T_INVSTD; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_rank(OP, t[k], k_names[k], 1, 1));
    for (k = T_WEIGHT; k <= T_INVSTD; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias, aclTensor *mean,
    aclTensor *invstd, double eps, aclTensor *output, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {input, weight, bias, mean, invstd, output};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    uint64_t bytes = 0;

    (void)eps; /* cancels in CANN's formula, see the file comment */
    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(check_args(t));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    SBN_ACL_TRY(sbn__acl_workspace_size(OP, sbn_elemt_workspace_size, t[T_INPUT], 0, &bytes));
    const sbn__acl_exec_spec spec = {.run = run_elemt, .workspace_size = bytes, .tensors = t,
                                     .names = k_names, .count = NT, .first_output = T_OUTPUT};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
