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
 * check. gradInput may be gradOut itself (same view); other overlaps are refused in
 * phase 2 (161002).
 */
#include "aclnnop/aclnn_batch_norm_backward.h"

#include <stdint.h>

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormBackward"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The tensor arguments in signature order. */
enum { T_GRAD_OUT, T_INPUT, T_WEIGHT, T_RMEAN, T_RVAR, T_SAVE_MEAN, T_SAVE_INVSTD,
       T_GRAD_INPUT, T_GRAD_WEIGHT, T_GRAD_BIAS, NT };

static const char *const k_names[NT] = {"gradOut",    "input",      "weight",    "runningMean",
                                        "runningVar", "saveMean",   "saveInvstd", "gradInput",
                                        "gradWeight", "gradBias"};

/*
 * executor->ints[0] packs slot + 1 of tensor k in bits 5k..5k+4 (0: absent or
 * disabled); ints[1]: training; ints[2]: empty input.
 */
#define SLOT_BITS 5
enum { INT_SLOTS, INT_TRAINING, INT_EMPTY };
enum { SCALAR_EPS };

static sbn_tensor *arg(aclOpExecutor *e, int k)
{
    return sbn__acl_exec_view(e, (int)((e->ints[INT_SLOTS] >> (SLOT_BITS * k)) & 31) - 1);
}

/* A read-only [c] vector of one value: a stride-0 view of a constant. */
static sbn_tensor constant_vector(const double *value, int64_t c)
{
    sbn_tensor t = sbn_tensor_1d((void *)(uintptr_t)value, SBN_F64, c);
    t.strides[0] = 0;
    return t;
}

static const double k_zero = 0.0, k_one = 1.0;

static aclnnStatus run_batch_norm_backward(aclOpExecutor *e, void *workspace,
                                           uint64_t workspace_size)
{
    int training = e->ints[INT_TRAINING] != 0;
    sbn_tensor *x = arg(e, T_INPUT), *mean, *var_or_invstd;
    sbn_tensor zeros = constant_vector(&k_zero, x->shape[1]);
    sbn_tensor ones = constant_vector(&k_one, x->shape[1]);
    sbn_status s;
    if (e->ints[INT_EMPTY]) return ACLNN_SUCCESS;
    /* training reads (saveMean, saveInvstd), eval (runningMean, runningVar) */
    mean = arg(e, training ? T_SAVE_MEAN : T_RMEAN);
    var_or_invstd = arg(e, training ? T_SAVE_INVSTD : T_RVAR);
    if (mean == NULL) mean = &zeros;
    if (var_or_invstd == NULL) var_or_invstd = &ones;
    s = sbn_batch_norm_backward(arg(e, T_GRAD_OUT), x, arg(e, T_WEIGHT),
                                training ? NULL : mean, training ? NULL : var_or_invstd,
                                training ? mean : NULL, training ? var_or_invstd : NULL, training,
                                e->scalars[SCALAR_EPS], arg(e, T_GRAD_INPUT),
                                arg(e, T_GRAD_WEIGHT), arg(e, T_GRAD_BIAS), workspace,
                                (size_t)workspace_size, NULL);
    return sbn__acl_from_native(s, OP);
}

/* 1 for the formats whose channel is the last dim. */
static int channels_last(aclFormat format)
{
    return format == ACL_FORMAT_NHWC || format == ACL_FORMAT_NDHWC;
}

static aclnnStatus check_5d_format(const aclTensor *t, const char *name)
{
    if (t->ndim == 5 && t->format != ACL_FORMAT_NCDHW && t->format != ACL_FORMAT_NDHWC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "%s is 5-D with format %s; a 5-D tensor must be NCDHW or NDHWC",
                             name, sbn__acl_format_name(t->format));
    return ACLNN_SUCCESS;
}

/* The outputMask checks of the NULL stage; mask[] gets its 3 values. */
static aclnnStatus read_mask(const aclBoolArray *output_mask, bool *mask)
{
    int i;
    TRY(sbn__acl_check_null(OP, output_mask, "outputMask"));
    if (output_mask->magic != SBN_ACL_BOOL_ARRAY_MAGIC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "outputMask (%p) is not a live aclBoolArray: it was destroyed or "
                             "never made by aclCreateBoolArray",
                             (const void *)output_mask);
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
    char a[160];
    int64_t c;
    int k;

    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_null(OP, t[k], k_names[k]));

    TRY(sbn__acl_check_dtype(OP, grad_out, "gradOut", &SBN_ACL_FLOATS));
    TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    if (grad_out->dtype != input->dtype)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "gradOut has dtype %s but input has dtype %s; they must be equal",
                             sbn__acl_dtype_name(grad_out->dtype),
                             sbn__acl_dtype_name(input->dtype));
    for (k = T_GRAD_INPUT; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    for (k = T_WEIGHT; k <= T_SAVE_INVSTD; k++)
        if (on[k]) TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    if (grad_out->format != input->format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "gradOut has format %s but input has format %s; they must be equal",
                             sbn__acl_format_name(grad_out->format),
                             sbn__acl_format_name(input->format));
    if (on[T_GRAD_INPUT] && grad_input->format != grad_out->format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "gradInput has format %s but gradOut has format %s; they must be "
                             "equal",
                             sbn__acl_format_name(grad_input->format),
                             sbn__acl_format_name(grad_out->format));
    TRY(check_5d_format(input, "input"));
    if (on[T_GRAD_INPUT]) TRY(check_5d_format(grad_input, "gradInput"));
    for (k = 0; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    TRY(sbn__acl_check_rank(OP, grad_out, "gradOut", 2, 8));
    TRY(sbn__acl_check_same_shape(OP, grad_out, "gradOut", input, "input"));
    if (on[T_GRAD_INPUT]) {
        TRY(sbn__acl_check_rank(OP, grad_input, "gradInput", 2, 8));
        TRY(sbn__acl_check_same_shape(OP, grad_input, "gradInput", grad_out, "gradOut"));
    }
    c = input->dims[channels_last(input->format) ? input->ndim - 1 : 1];
    if (c == 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has shape %s and format %s: the channel dim is 0",
                             sbn__acl_shape_str(input, a, sizeof a),
                             sbn__acl_format_name(input->format));
    for (k = T_WEIGHT; k < NT; k++) {
        if (!on[k] || k == T_GRAD_INPUT) continue;
        /* in eval, saveMean and saveInvstd may also be empty (CANN) */
        if (!training && (k == T_SAVE_MEAN || k == T_SAVE_INVSTD) && t[k]->ndim == 1 &&
            t[k]->dims[0] == 0)
            continue;
        TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const t[NT] = {gradOut,  input,      weight,    runningMean,
                                    runningVar, saveMean, saveInvstd, gradInput,
                                    gradWeight, gradBias};
    const double eps_f = (double)(float)eps; /* CANN narrows eps to float */
    bool mask[3] = {false, false, false};
    int on[NT], k, cl, empty;
    sbn_tensor x;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;

    sbn__acl_clear_error();
    TRY(sbn__acl_check_null(OP, gradOut, "gradOut"));
    TRY(sbn__acl_check_null(OP, input, "input"));
    TRY(read_mask(outputMask, mask));
    for (k = 0; k < NT; k++) on[k] = k < T_GRAD_INPUT ? t[k] != NULL : mask[k - T_GRAD_INPUT];
    TRY(check_args(t, on, training));
    if ((s = sbn__check_eps(eps_f)) != SBN_OK) return sbn__acl_from_native(s, OP);
    /* Not checked by CANN (which would crash); never dereferenced here. */
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));

    cl = channels_last(input->format);
    empty = sbn__acl_numel(input) == 0;
    x = sbn__acl_view(input, cl);
    if (x.data == NULL) x.data = &x; /* the size depends on the shape only; data may come later */
    if (!empty && (s = sbn_batch_norm_backward_workspace_size(&x, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, run_batch_norm_backward, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->ints[INT_SLOTS] = 0;
    e->ints[INT_TRAINING] = training;
    e->ints[INT_EMPTY] = empty;
    e->scalars[SCALAR_EPS] = eps_f;
    for (k = 0; k < NT; k++) {
        const aclTensor *tk = on[k] ? t[k] : NULL; /* a disabled output is not an argument */
        int big = k == T_GRAD_OUT || k == T_INPUT || k == T_GRAD_INPUT;
        int slot = sbn__acl_exec_add(e, tk, sbn__acl_view(tk, cl && big), k >= T_GRAD_INPUT);
        if (tk && slot < 0) {
            sbn__acl_exec_discard(e);
            return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
        }
        e->ints[INT_SLOTS] |= (int64_t)(slot + 1) << (SLOT_BITS * k);
    }
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
