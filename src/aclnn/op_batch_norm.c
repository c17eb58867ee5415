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

#include <stdint.h>

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNorm"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The tensor arguments in signature order. */
enum { T_INPUT, T_WEIGHT, T_BIAS, T_RMEAN, T_RVAR, T_OUTPUT, T_SAVE_MEAN, T_SAVE_INVSTD, NT };

static const char *const k_names[NT] = {"input",  "weight",   "bias",      "runningMean",
                                        "runningVar", "output", "saveMean", "saveInvstd"};

/* executor->ints[0] packs slot + 1 of tensor k in bits 5k..5k+4 (0: absent); ints[1]: training. */
#define SLOT_BITS 5
enum { INT_SLOTS, INT_TRAINING };
enum { SCALAR_MOMENTUM, SCALAR_EPS };

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

static aclnnStatus run_batch_norm(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    int training = e->ints[INT_TRAINING] != 0;
    sbn_tensor *x = arg(e, T_INPUT), *rmean = arg(e, T_RMEAN), *rvar = arg(e, T_RVAR);
    sbn_tensor zeros = constant_vector(&k_zero, x->shape[1]);
    sbn_tensor ones = constant_vector(&k_one, x->shape[1]);
    sbn_status s;
    if (!training) {
        if (rmean == NULL) rmean = &zeros;
        if (rvar == NULL) rvar = &ones;
    }
    s = sbn_batch_norm(x, arg(e, T_WEIGHT), arg(e, T_BIAS), training,
                       e->scalars[SCALAR_MOMENTUM], e->scalars[SCALAR_EPS], rmean, rvar,
                       arg(e, T_OUTPUT), arg(e, T_SAVE_MEAN), arg(e, T_SAVE_INVSTD), workspace,
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

/* on[k]: tensor k takes part (required, given optional, or save* when training). */
static aclnnStatus check_args(const aclTensor *const *t, const int *on, int training)
{
    const aclTensor *input = t[T_INPUT], *output = t[T_OUTPUT];
    char a[160];
    int64_t c;
    int k;

    TRY(sbn__acl_check_null(OP, input, "input"));
    TRY(sbn__acl_check_null(OP, output, "output"));
    if (training) {
        TRY(sbn__acl_check_null(OP, t[T_SAVE_MEAN], "saveMean"));
        TRY(sbn__acl_check_null(OP, t[T_SAVE_INVSTD], "saveInvstd"));
    }

    TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    for (k = T_OUTPUT; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    for (k = T_WEIGHT; k <= T_RVAR; k++)
        if (on[k]) TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));

    if (input->format != output->format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has format %s but output has format %s; they must be equal",
                             sbn__acl_format_name(input->format),
                             sbn__acl_format_name(output->format));
    TRY(check_5d_format(input, "input"));
    TRY(check_5d_format(output, "output"));
    for (k = 0; k < NT; k++)
        if (on[k]) TRY(sbn__acl_check_format(OP, t[k], k_names[k]));

    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    TRY(sbn__acl_check_rank(OP, output, "output", 2, 8));
    TRY(sbn__acl_check_same_shape(OP, output, "output", input, "input"));
    c = input->dims[channels_last(input->format) ? input->ndim - 1 : 1];
    if (c == 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has shape %s and format %s: the channel dim is 0",
                             sbn__acl_shape_str(input, a, sizeof a),
                             sbn__acl_format_name(input->format));
    for (k = 0; k < NT; k++)
        if (on[k] && k != T_INPUT && k != T_OUTPUT)
            TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias,
    aclTensor *runningMean, aclTensor *runningVar, bool training, double momentum, double eps,
    aclTensor *output, aclTensor *saveMean, aclTensor *saveInvstd, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const t[NT] = {input,      weight, bias,     runningMean,
                                    runningVar, output, saveMean, saveInvstd};
    /* in eval, saveMean and saveInvstd are not arguments (neither validated nor written) */
    const int on[NT] = {1, weight != NULL, bias != NULL, runningMean != NULL,
                        runningVar != NULL, 1, training, training};
    /* CANN narrows both to float */
    const double eps_f = (double)(float)eps, momentum_f = (double)(float)momentum;
    sbn_tensor x;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;
    int k, cl;

    sbn__acl_clear_error();
    TRY(check_args(t, on, training));
    if ((s = sbn__check_eps(eps_f)) != SBN_OK) return sbn__acl_from_native(s, OP);
    if (training && (s = sbn__check_momentum(momentum_f)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    /* Not checked by CANN (which would crash); never dereferenced here. */
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));

    cl = channels_last(input->format);
    x = sbn__acl_view(input, cl);
    if (x.data == NULL) x.data = &x; /* the size depends on the shape only; data may come later */
    if ((s = sbn_batch_norm_workspace_size(&x, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, run_batch_norm, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->ints[INT_SLOTS] = 0;
    e->ints[INT_TRAINING] = training;
    e->scalars[SCALAR_MOMENTUM] = momentum_f;
    e->scalars[SCALAR_EPS] = eps_f;
    for (k = 0; k < NT; k++) {
        const aclTensor *tk = on[k] ? t[k] : NULL;
        int big = k == T_INPUT || k == T_OUTPUT;
        int slot = sbn__acl_exec_add(e, tk, sbn__acl_view(tk, cl && big), k >= T_OUTPUT);
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

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
