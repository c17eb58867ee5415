/*
 * op_fast_batch_norm_backward.c - aclnnFastBatchNormBackward (hicann ops-nn
 * norm/batch_norm_grad_v3, CANN's "high-performance" BatchNorm backward) on the native
 * sbn_batch_norm_backward, like aclnnBatchNormBackward, whose checks and decisions it
 * repeats (see op_batch_norm_backward.c's comment: CANN's order NULL -> dtype -> format
 * -> shape, outputMask of size 3, a disabled output neither validated nor written,
 * saveInvstd holding the invstd, optional [C] tensors defaulting to 1, 0, 1, 0, 1, C the
 * last dim for NHWC/NDHWC, arguments validated before the empty-input shortcut, eps
 * narrowed to float and checked, a NULL workspaceSize/executor 161001 last). What this
 * op adds, from its CANN doc: `version` (the NPU algorithm, 0 or 1; anything else ->
 * 161002 after the shape checks, before eps; no effect on the numbers) and the rule that
 * gradInput, when enabled, has gradOut's dtype (161002 in the dtype stage). The doc's
 * A2/A3 rule that weight and the statistics share gradOut's dtype is not enforced, as
 * for aclnnBatchNormBackward: every mix computes correctly here.
 */
#include "aclnnop/aclnn_fast_batch_norm_backward.h"

#include "aclnn/aclnn_internal.h"

#define OP "aclnnFastBatchNormBackward"

/* The tensor arguments in signature order. */
enum { T_GRAD_OUT, T_INPUT, T_WEIGHT, T_RMEAN, T_RVAR, T_SAVE_MEAN, T_SAVE_INVSTD,
       T_GRAD_INPUT, T_GRAD_WEIGHT, T_GRAD_BIAS, NT };

static const char *const k_names[NT] = {"gradOut",    "input",      "weight",    "runningMean",
                                        "runningVar", "saveMean",   "saveInvstd", "gradInput",
                                        "gradWeight", "gradBias"};

/* The tensors viewed channels-last (C moved to dim 1) for an NHWC/NDHWC input. */
#define CHANNELS_LAST_ARGS ((1u << T_GRAD_OUT) | (1u << T_INPUT) | (1u << T_GRAD_INPUT))

enum { INT_TRAINING }; /* executor->ints[] */
enum { SCALAR_EPS };   /* executor->scalars[] */

static aclnnStatus run_fast_batch_norm_backward(aclOpExecutor *e, void *workspace,
                                           uint64_t workspace_size)
{
    int training = e->ints[INT_TRAINING] != 0;
    sbn_tensor *x = sbn__acl_arg(e, T_INPUT), *mean, *var_or_invstd;
    sbn_tensor zeros = sbn__acl_zeros(x->shape[1]), ones = sbn__acl_ones(x->shape[1]);
    sbn_status s;
    /* training reads (saveMean, saveInvstd), eval (runningMean, runningVar) */
    mean = sbn__acl_arg(e, training ? T_SAVE_MEAN : T_RMEAN);
    var_or_invstd = sbn__acl_arg(e, training ? T_SAVE_INVSTD : T_RVAR);
    if (mean == NULL) mean = &zeros;
    if (var_or_invstd == NULL) var_or_invstd = &ones;
    s = sbn_batch_norm_backward(sbn__acl_arg(e, T_GRAD_OUT), x, sbn__acl_arg(e, T_WEIGHT),
                                training ? NULL : mean, training ? NULL : var_or_invstd,
                                training ? mean : NULL, training ? var_or_invstd : NULL, training,
                                e->scalars[SCALAR_EPS], sbn__acl_arg(e, T_GRAD_INPUT),
                                sbn__acl_arg(e, T_GRAD_WEIGHT), sbn__acl_arg(e, T_GRAD_BIAS),
                                workspace, (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

/* The outputMask checks of the NULL stage; mask[] gets its 3 values. */
static aclnnStatus read_mask(const aclBoolArray *mask_handle, bool *mask)
{
    const aclBoolArray *output_mask;
    int i;
    SBN_ACL_TRY(sbn__acl_check_null(OP, mask_handle, "outputMask"));
    output_mask = (const aclBoolArray *)sbn__acl_object_get(mask_handle, SBN_ACL_KIND_BOOL_ARRAY);
    if (output_mask == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "outputMask (%p) is not a live aclBoolArray: it was destroyed or "
                             "never made by aclCreateBoolArray",
                             (const void *)mask_handle);
    if (output_mask->size != 3)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "outputMask has %llu values; it must have 3 (gradInput, gradWeight, "
                             "gradBias)",
                             (unsigned long long)output_mask->size);
    for (i = 0; i < 3; i++) mask[i] = output_mask->values[i];
    return ACLNN_SUCCESS;
}

/* on[k]: tensor k takes part (required, given optional, or enabled output). */
static aclnnStatus check_args(const aclTensor *const *t, const int *on, int training)
{
    const aclTensor *grad_out = t[T_GRAD_OUT], *input = t[T_INPUT], *grad_input = t[T_GRAD_INPUT];
    int64_t c;
    int k;

    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_dtype(OP, grad_out, "gradOut", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_same_dtype(OP, grad_out, "gradOut", input, "input"));
    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    if (on[T_GRAD_INPUT])
        SBN_ACL_TRY(sbn__acl_check_same_dtype(OP, grad_input, "gradInput", grad_out, "gradOut"));
    for (k = T_WEIGHT; k <= T_SAVE_INVSTD; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_same_format(OP, grad_out, "gradOut", input, "input"));
    if (on[T_GRAD_INPUT])
        SBN_ACL_TRY(sbn__acl_check_same_format(OP, grad_input, "gradInput", grad_out, "gradOut"));
    SBN_ACL_TRY(sbn__acl_check_5d_format(OP, input, "input"));
    if (on[T_GRAD_INPUT]) SBN_ACL_TRY(sbn__acl_check_5d_format(OP, grad_input, "gradInput"));
    for (k = 0; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, grad_out, "gradOut", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, grad_out, "gradOut", input, "input"));
    if (on[T_GRAD_INPUT]) {
        SBN_ACL_TRY(sbn__acl_check_rank(OP, grad_input, "gradInput", 2, 8));
        SBN_ACL_TRY(sbn__acl_check_same_shape(OP, grad_input, "gradInput", grad_out, "gradOut"));
    }
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 1, &c));
    for (k = T_WEIGHT; k < NT; k++) {
        if (!on[k] || k == T_GRAD_INPUT) continue;
        /* in eval, saveMean and saveInvstd may also be empty (CANN) */
        if (!training && (k == T_SAVE_MEAN || k == T_SAVE_INVSTD) && t[k]->ndim == 1 &&
            t[k]->dims[0] == 0)
            continue;
        SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    }
    return ACLNN_SUCCESS;
}

/* version: the NPU kernel's algorithm (CANN accepts 0 and 1); nothing changes with it here. */
static aclnnStatus check_version(int version)
{
    if (version != 0 && version != 1)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP, "version is %d; it must be 0 or 1",
                             version);
    return ACLNN_SUCCESS;
}

ACLNN_API aclnnStatus aclnnFastBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    int version, aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {gradOut,  input,      weight,    runningMean,
                                    runningVar, saveMean, saveInvstd, gradInput,
                                    gradWeight, gradBias};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    const double eps_f = (double)(float)eps; /* CANN narrows eps to float */
    bool mask[3] = {false, false, false};
    int on[NT], k, cl, empty;
    uint64_t bytes = 0;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(sbn__acl_check_null(OP, gradOut, "gradOut"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, input, "input"));
    SBN_ACL_TRY(read_mask(outputMask, mask));
    /* a disabled output is not an argument */
    for (k = 0; k < NT; k++) on[k] = k < T_GRAD_INPUT ? t[k] != NULL : mask[k - T_GRAD_INPUT];
    SBN_ACL_TRY(check_args(t, on, training));
    SBN_ACL_TRY(check_version(version));
    SBN_ACL_TRY(sbn__acl_check_eps(OP, eps_f));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    cl = sbn__acl_format_is_channels_last(t[T_INPUT]->format);
    empty = sbn__acl_numel(t[T_INPUT]) == 0; /* nothing to write: phase 2 does nothing */
    if (!empty)
        SBN_ACL_TRY(sbn__acl_workspace_size(OP, sbn_batch_norm_backward_workspace_size, t[T_INPUT],
                                            cl, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = empty ? sbn__acl_run_nothing : run_fast_batch_norm_backward, .workspace_size = bytes,
        .tensors = t, .on = on, .names = k_names, .count = NT, .first_output = T_GRAD_INPUT,
        .channels_last = cl ? CHANNELS_LAST_ARGS : 0u, .scalars = {[SCALAR_EPS] = eps_f},
        .ints = {[INT_TRAINING] = training}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACLNN_API aclnnStatus aclnnFastBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
