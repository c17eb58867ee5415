/*
 * op_batch_norm.c - aclnnBatchNorm on the native sbn_batch_norm (PyTorch
 * F.batch_norm). Phase 1 checks in CANN's order: NULL (input, output; saveMean and
 * saveInvstd when training -> 161001), dtype (input, output, and when training
 * saveMean, saveInvstd; then weight, bias, runningMean, runningVar when given:
 * FLOAT/FLOAT16/BF16, mixed dtypes allowed), format (input and output formats equal;
 * a 5-D input or output must be NCDHW or NDHWC, as on 950; a private format on
 * input, then on any other validated tensor -> 161002: CANN checks input's only, but
 * a CPU cannot honour a private layout anywhere), shape (input and output rank 2..8,
 * output shape == input shape; C = input dim 1, or the last dim for NHWC/NDHWC as on
 * 950, != 0; weight, bias, running stats [C]; saveMean, saveInvstd [C] when
 * training), then eps and, when training, momentum, then workspaceSize and executor.
 * Decisions: eps and momentum are narrowed to float as CANN ((double)(float)x), then
 * must meet the native rules (eps finite >= 0, momentum in [0, 1]): 161002 in phase 1
 * (CANN checks neither). runningVar is updated with the unbiased variance; R == 1
 * leaves it unchanged (native; CANN would divide by zero). saveInvstd holds the invstd
 * 1/sqrt(var + eps), as 950 and PyTorch (open question 6; older products store var).
 * eval: runningMean/runningVar NULL mean 0 and 1 (constant stride-0 views, nothing
 * allocated, workspace unchanged); saveMean and saveInvstd are neither validated nor
 * written. The arguments are validated before the empty-input shortcut (open question
 * 9: an invalid argument is an error even for an empty input; C == 0 is one); an empty
 * input then succeeds: training sets saveMean to 0 and saveInvstd to NaN and leaves the
 * running stats, eval writes nothing. workspaceSize and executor are not checked by
 * CANN (it would crash); here a NULL one gives 161001 after every other check. output
 * may be input itself (same view); other overlaps are refused in phase 2 (161002).
 */
#include "aclnnop/aclnn_batch_norm.h"

#include "aclnn_internal.h"

#define OP "aclnnBatchNorm"

/* The tensor arguments in signature order. */
enum { T_INPUT, T_WEIGHT, T_BIAS, T_RMEAN, T_RVAR, T_OUTPUT, T_SAVE_MEAN, T_SAVE_INVSTD, NT };

static const char *const k_names[NT] = {"input",  "weight",   "bias",      "runningMean",
                                        "runningVar", "output", "saveMean", "saveInvstd"};

/* The tensors viewed channels-last (C moved to dim 1) for an NHWC/NDHWC input. */
#define CHANNELS_LAST_ARGS ((1u << T_INPUT) | (1u << T_OUTPUT))

enum { INT_TRAINING };                /* executor->ints[] */
enum { SCALAR_MOMENTUM, SCALAR_EPS }; /* executor->scalars[] */

static aclnnStatus run_batch_norm(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    int training = e->ints[INT_TRAINING] != 0;
    sbn_tensor *x = sbn__acl_arg(e, T_INPUT), *rmean = sbn__acl_arg(e, T_RMEAN),
               *rvar = sbn__acl_arg(e, T_RVAR);
    sbn_tensor zeros = sbn__acl_zeros(x->shape[1]), ones = sbn__acl_ones(x->shape[1]);
    sbn_status s;
    if (!training) {
        if (rmean == NULL) rmean = &zeros;
        if (rvar == NULL) rvar = &ones;
    }
    s = sbn_batch_norm(x, sbn__acl_arg(e, T_WEIGHT), sbn__acl_arg(e, T_BIAS), training,
                       e->scalars[SCALAR_MOMENTUM], e->scalars[SCALAR_EPS], rmean, rvar,
                       sbn__acl_arg(e, T_OUTPUT), sbn__acl_arg(e, T_SAVE_MEAN),
                       sbn__acl_arg(e, T_SAVE_INVSTD), workspace, (size_t)workspace_size,
                       sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

/* on[k]: tensor k takes part (required, given optional, or save* when training). */
static aclnnStatus check_args(const aclTensor *const *t, const int *on, int training)
{
    const aclTensor *input = t[T_INPUT], *output = t[T_OUTPUT];
    int64_t c;
    int k;

    SBN_ACL_TRY(sbn__acl_check_null(OP, input, "input"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, output, "output"));
    if (training) {
        SBN_ACL_TRY(sbn__acl_check_null(OP, t[T_SAVE_MEAN], "saveMean"));
        SBN_ACL_TRY(sbn__acl_check_null(OP, t[T_SAVE_INVSTD], "saveInvstd"));
    }

    SBN_ACL_TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    for (k = T_OUTPUT; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    for (k = T_WEIGHT; k <= T_RVAR; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    SBN_ACL_TRY(sbn__acl_check_same_format(OP, input, "input", output, "output"));
    SBN_ACL_TRY(sbn__acl_check_5d_format(OP, input, "input"));
    SBN_ACL_TRY(sbn__acl_check_5d_format(OP, output, "output"));
    for (k = 0; k < NT; k++)
        if (on[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, output, "output", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_same_shape(OP, output, "output", input, "input"));
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 1, &c));
    for (k = 0; k < NT; k++)
        if (on[k] && k != T_INPUT && k != T_OUTPUT)
            SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias,
    aclTensor *runningMean, aclTensor *runningVar, bool training, double momentum, double eps,
    aclTensor *output, aclTensor *saveMean, aclTensor *saveInvstd, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {input,      weight, bias,     runningMean,
                                    runningVar, output, saveMean, saveInvstd};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    /* in eval, saveMean and saveInvstd are not arguments (neither validated nor written) */
    const int on[NT] = {1, weight != NULL, bias != NULL, runningMean != NULL,
                        runningVar != NULL, 1, training, training};
    /* CANN narrows both to float */
    const double eps_f = (double)(float)eps, momentum_f = (double)(float)momentum;
    uint64_t bytes = 0;
    int cl;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(check_args(t, on, training));
    SBN_ACL_TRY(sbn__acl_check_eps(OP, eps_f));
    if (training) SBN_ACL_TRY(sbn__acl_check_momentum(OP, momentum_f));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    cl = sbn__acl_format_is_channels_last(t[T_INPUT]->format);
    SBN_ACL_TRY(
        sbn__acl_workspace_size(OP, sbn_batch_norm_workspace_size, t[T_INPUT], cl, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = run_batch_norm, .workspace_size = bytes, .tensors = t, .on = on, .names = k_names,
        .count = NT,
        .first_output = T_OUTPUT, .channels_last = cl ? CHANNELS_LAST_ARGS : 0u,
        .scalars = {[SCALAR_MOMENTUM] = momentum_f, [SCALAR_EPS] = eps_f},
        .ints = {[INT_TRAINING] = training}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
