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

#include <string.h>

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormElemt"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The native view of the tensor in a slot of executor e (NULL for an absent one). */
#define VIEW(slot) sbn__acl_exec_view(e, (int)e->ints[slot])

/* executor->ints[]: the slots, in signature order */
enum { SLOT_INPUT, SLOT_WEIGHT, SLOT_BIAS, SLOT_MEAN, SLOT_INVSTD, SLOT_OUTPUT, NSLOTS };

static const char *const k_names[NSLOTS] = {"input", "weight", "bias", "mean", "invstd", "output"};

static aclnnStatus run_elemt(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_elemt(VIEW(SLOT_INPUT), VIEW(SLOT_MEAN), VIEW(SLOT_INVSTD),
                             VIEW(SLOT_WEIGHT), VIEW(SLOT_BIAS), VIEW(SLOT_OUTPUT), workspace,
                             (size_t)workspace_size, NULL);
    return sbn__acl_from_native(s, OP);
}

/*
 * x for a *_workspace_size call: the size depends on the shape only, but the native
 * checks want data when there are elements, and a tensor's memory may be set only
 * before phase 2 (aclSet*TensorAddr). A NULL data pointer is replaced by a dummy
 * one that is never read.
 */
static sbn_tensor sized_view(sbn_tensor v)
{
    static double dummy;
    if (v.data == NULL) v.data = &dummy;
    return v;
}

static aclnnStatus check_args(const aclTensor *const *t)
{
    const aclTensor *input = t[SLOT_INPUT], *output = t[SLOT_OUTPUT];
    char a[160];
    int i;
    for (i = 0; i < NSLOTS; i++)
        if (i != SLOT_WEIGHT && i != SLOT_BIAS) TRY(sbn__acl_check_null(OP, t[i], k_names[i]));

    for (i = 0; i < NSLOTS; i++)
        if (t[i]) TRY(sbn__acl_check_dtype(OP, t[i], k_names[i], &SBN_ACL_FLOATS));

    if (input->format != output->format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has format %s but output has format %s; they must be equal",
                             sbn__acl_format_name(input->format),
                             sbn__acl_format_name(output->format));
    for (i = 0; i < NSLOTS; i++)
        if (t[i]) TRY(sbn__acl_check_format(OP, t[i], k_names[i]));

    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    TRY(sbn__acl_check_rank(OP, output, "output", 2, 8));
    TRY(sbn__acl_check_same_shape(OP, output, "output", input, "input"));
    if (input->dims[1] == 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has shape %s: the channel dim (1) is 0",
                             sbn__acl_shape_str(input, a, sizeof a));
    for (i = SLOT_WEIGHT; i <= SLOT_INVSTD; i++)
        if (t[i]) TRY(sbn__acl_check_rank(OP, t[i], k_names[i], 1, 1));
    for (i = SLOT_WEIGHT; i <= SLOT_INVSTD; i++)
        if (t[i]) TRY(sbn__acl_check_vector(OP, t[i], k_names[i], input->dims[1]));
    return ACLNN_SUCCESS;
}

static sbn_tensor view_or_none(const aclTensor *t)
{
    sbn_tensor v;
    if (t) return sbn__acl_view(t, 0);
    memset(&v, 0, sizeof v);
    return v;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias, aclTensor *mean,
    aclTensor *invstd, double eps, aclTensor *output, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const t[NSLOTS] = {input, weight, bias, mean, invstd, output};
    sbn_tensor x, sized;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;
    int i;

    (void)eps; /* cancels in CANN's formula, see the file comment */
    sbn__acl_clear_error();
    TRY(check_args(t));
    /* Not checked by CANN (which would crash); never dereferenced here. */
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));

    x = sbn__acl_view(input, 0);
    sized = sized_view(x);
    if ((s = sbn_elemt_workspace_size(&sized, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, run_elemt, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    for (i = 0; i < NSLOTS; i++) {
        e->ints[i] = sbn__acl_exec_add(e, t[i], view_or_none(t[i]), i == SLOT_OUTPUT);
        if (t[i] && e->ints[i] < 0) {
            sbn__acl_exec_discard(e);
            return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
        }
    }
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
