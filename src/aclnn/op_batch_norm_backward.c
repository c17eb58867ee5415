/*
 * op_batch_norm_backward.c - aclnnBatchNormBackward on the native
 * sbn_batch_norm_backward (PyTorch native_batch_norm_backward). Phase 1 checks in
 * CANN's order: NULL (gradOut, input, outputMask -> 161001; outputMask of size != 3
 * -> 161002; an output whose mask bit is set -> 161001), dtype (gradOut, input
 * FLOAT/FLOAT16/BF16 and equal; the enabled outputs; weight, runningMean, runningVar,
 * saveMean, saveInvstd when given), format (gradOut and input formats equal; gradInput
 * equal too when enabled; a 5-D input or gradInput must be NCDHW or NDHWC, as on 950;
 * a private format on gradOut or input, then on any other validated tensor -> 161002),
 * shape (input and gradOut rank 2..8 and equal shapes; gradInput too when enabled;
 * C = input dim 1, or the last dim for NHWC/NDHWC as aclnnBatchNorm and 950, != 0;
 * weight, running stats [C]; saveMean/saveInvstd [C], or [0] in eval; gradWeight and
 * gradBias [C] when enabled), then eps, then workspaceSize and executor.
 * Decisions: eps is narrowed to float as CANN ((double)(float)eps) and must then be
 * finite and >= 0 (161002 in phase 1). saveInvstd holds the invstd (open question 6:
 * PyTorch, and CANN's own golden). The defaults of the optional [C] tensors are
 * weight 1, runningMean 0, runningVar 1, saveMean 0, saveInvstd 1 (constant stride-0
 * views, nothing allocated); training reads saveMean/saveInvstd and eval reads the
 * running stats, the other pair is validated only. outputMask of size != 3 gives
 * 161002 (the spec; CANN's code returns 161001 there). A disabled output may be NULL
 * and is neither validated nor written. The dtype rules CANN adds on 950 (auxiliary
 * tensors float or gradOut's dtype, gradInput == gradOut's dtype) are not enforced:
 * every mix computes correctly here. The arguments are validated before the
 * empty-input shortcut (open question 9; C == 0 is invalid); an empty input then
 * succeeds and writes nothing (workspace 0). workspaceSize and executor are not
 * checked by CANN (it would crash); here a NULL one gives 161001 after every other
 * check. aclnnFastBatchNormBackward (op_fast_batch_norm_backward.c) runs this same
 * phase 1 with its `version` (0 or 1, checked after the shapes, before eps) and the
 * rule that an enabled gradInput has gradOut's dtype. gradInput may be gradOut itself (same view); other overlaps are refused in
 * phase 2 (161002).
 */
#include "aclnnop/aclnn_batch_norm_backward.h"

#include "aclnn_internal.h"


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

static aclnnStatus run_batch_norm_backward(aclOpExecutor *e, void *workspace,
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
    return sbn__acl_from_native(s, e->op);
}

/* The outputMask checks of the NULL stage; mask[] gets its 3 values. */
static aclnnStatus read_mask(const char *op, const aclBoolArray *mask_handle, bool *mask)
{
    const aclBoolArray *output_mask;
    int i;
    SBN_ACL_TRY(sbn__acl_check_null(op, mask_handle, "outputMask"));
    output_mask = (const aclBoolArray *)sbn__acl_object_get(mask_handle, SBN_ACL_KIND_BOOL_ARRAY);
    if (output_mask == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "outputMask (%p) is not a live aclBoolArray: it was destroyed or "
                             "never made by aclCreateBoolArray",
                             (const void *)mask_handle);
    if (output_mask->size != 3)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "outputMask has %llu values; it must have 3 (gradInput, gradWeight, "
                             "gradBias)",
                             (unsigned long long)output_mask->size);
    for (i = 0; i < 3; i++) mask[i] = output_mask->values[i];
    return ACLNN_SUCCESS;
}

/* on[k]: tensor k takes part (required, given optional, or enabled output). */
/* fast: aclnnFastBatchNormBackward's extra rule (gradInput, when enabled, has gradOut's dtype). */
static aclnnStatus check_args(const char *op, const aclTensor *const *t, const int *on,
                              int training, int fast)
{
    const aclTensor *grad_out = t[T_GRAD_OUT], *input = t[T_INPUT], *grad_input = t[T_GRAD_INPUT];
    int64_t c;
    int k;

    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_null(op, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_dtype(op, grad_out, "gradOut", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_dtype(op, input, "input", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_same_dtype(op, grad_out, "gradOut", input, "input"));
    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(op, t[k], k_names[k], &SBN_ACL_FLOATS));
    if (fast && on[T_GRAD_INPUT])
        SBN_ACL_TRY(sbn__acl_check_same_dtype(op, grad_input, "gradInput", grad_out, "gradOut"));
    for (k = T_WEIGHT; k <= T_SAVE_INVSTD; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(op, t[k], k_names[k], &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_same_format(op, grad_out, "gradOut", input, "input"));
    if (on[T_GRAD_INPUT])
        SBN_ACL_TRY(sbn__acl_check_same_format(op, grad_input, "gradInput", grad_out, "gradOut"));
    SBN_ACL_TRY(sbn__acl_check_5d_format(op, input, "input"));
    if (on[T_GRAD_INPUT]) SBN_ACL_TRY(sbn__acl_check_5d_format(op, grad_input, "gradInput"));
    for (k = 0; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_format(op, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(op, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(op, grad_out, "gradOut", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_same_shape(op, grad_out, "gradOut", input, "input"));
    if (on[T_GRAD_INPUT]) {
        SBN_ACL_TRY(sbn__acl_check_rank(op, grad_input, "gradInput", 2, 8));
        SBN_ACL_TRY(sbn__acl_check_same_shape(op, grad_input, "gradInput", grad_out, "gradOut"));
    }
    SBN_ACL_TRY(sbn__acl_check_channels(op, input, "input", 1, &c));
    for (k = T_WEIGHT; k < NT; k++) {
        if (!on[k] || k == T_GRAD_INPUT) continue;
        /* in eval, saveMean and saveInvstd may also be empty (CANN) */
        if (!training && (k == T_SAVE_MEAN || k == T_SAVE_INVSTD) && t[k]->ndim == 1 &&
            t[k]->dims[0] == 0)
            continue;
        SBN_ACL_TRY(sbn__acl_check_vector(op, t[k], k_names[k], c));
    }
    return ACLNN_SUCCESS;
}

/* Phase 1 of aclnnBatchNormBackward (fast 0) and aclnnFastBatchNormBackward (fast 1). */
aclnnStatus sbn__acl_batch_norm_backward_phase1(
    const char *op, int fast, int version, const aclTensor *gradOut, const aclTensor *input,
    const aclTensor *weight, const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
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
    SBN_ACL_TRY(sbn__acl_check_null(op, gradOut, "gradOut"));
    SBN_ACL_TRY(sbn__acl_check_null(op, input, "input"));
    SBN_ACL_TRY(read_mask(op, outputMask, mask));
    /* a disabled output is not an argument */
    for (k = 0; k < NT; k++) on[k] = k < T_GRAD_INPUT ? t[k] != NULL : mask[k - T_GRAD_INPUT];
    SBN_ACL_TRY(check_args(op, t, on, training, fast));
    if (fast && version != 0 && version != 1) /* the NPU algorithm: no effect here */
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "version is %d; it must be 0 or 1",
                             version);
    SBN_ACL_TRY(sbn__acl_check_eps(op, eps_f));
    SBN_ACL_TRY(sbn__acl_check_out_args(op, workspaceSize, executor));

    cl = sbn__acl_format_is_channels_last(t[T_INPUT]->format);
    empty = sbn__acl_numel(t[T_INPUT]) == 0; /* nothing to write: phase 2 does nothing */
    if (!empty)
        SBN_ACL_TRY(sbn__acl_workspace_size(op, sbn_batch_norm_backward_workspace_size, t[T_INPUT],
                                            cl, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = empty ? sbn__acl_run_nothing : run_batch_norm_backward, .workspace_size = bytes,
        .tensors = t, .on = on, .names = k_names, .count = NT, .first_output = T_GRAD_INPUT,
        .channels_last = cl ? CHANNELS_LAST_ARGS : 0u, .scalars = {[SCALAR_EPS] = eps_f},
        .ints = {[INT_TRAINING] = training}};
    return sbn__acl_exec_build(op, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    return sbn__acl_batch_norm_backward_phase1(
        "aclnnBatchNormBackward", 0, 0, gradOut, input, weight, runningMean, runningVar, saveMean,
        saveInvstd, training, eps, outputMask, gradInput, gradWeight, gradBias, workspaceSize,
        executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream)
{
    return sbn__acl_phase2("aclnnBatchNormBackward", workspace, workspaceSize, executor, stream);
}
