/*
 * op_batch_norm_reduce.c - aclnnBatchNormReduce on the native sbn_reduce: per
 * channel sum(x) and sum(x^2) over N, H and W. Phase 1 checks in CANN's order:
 * NULL (x, sum, squareSum -> 161001), dtype (x FLOAT/FLOAT16/BF16, sum and
 * squareSum FLOAT), format (x NCHW or NHWC, sum and squareSum ND, as the CANN code;
 * anything else -> 161002), shape (x 4-D, sum and squareSum 1-D of size C, with
 * C = dim 1 for NCHW and dim 3 for NHWC; an NHWC x is handed to the native op as
 * the channels-last view sbn__acl_view(x, 1)). workspaceSize and executor are not
 * checked by CANN (it would crash); here a NULL one gives 161001 after every other
 * check. Decisions: an empty x succeeds and phase 2 fills sum and squareSum with 0,
 * but the arguments are validated first (open question 9: CANN takes its empty
 * shortcut before validating; here an invalid argument is an error even for an
 * empty x). C == 0 is an empty x: success, and phase 2 does nothing. A tensor whose
 * data is still NULL passes phase 1; phase 2 refuses it (161001).
 */
#include "aclnnop/aclnn_batch_norm_reduce.h"

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormReduce"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The native view of the tensor in a slot of executor e (NULL for an absent one). */
#define VIEW(slot) sbn__acl_exec_view(e, (int)e->ints[slot])

enum { SLOT_X, SLOT_SUM, SLOT_SQUARE_SUM, NSLOTS }; /* executor->ints[] */

static aclnnStatus run_reduce(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_reduce(VIEW(SLOT_X), VIEW(SLOT_SUM), VIEW(SLOT_SQUARE_SUM), workspace,
                              (size_t)workspace_size, NULL);
    return sbn__acl_from_native(s, OP);
}

/* C == 0: sum and squareSum are empty, there is nothing to compute. */
static aclnnStatus run_nothing(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    (void)e;
    (void)workspace;
    (void)workspace_size;
    return ACLNN_SUCCESS;
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

static aclnnStatus check_output_format(const aclTensor *t, const char *name)
{
    if (t->format == ACL_FORMAT_ND) return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP, "%s has format %s; only ND is supported",
                         name, sbn__acl_format_name(t->format));
}

static aclnnStatus check_args(const aclTensor *x, const aclTensor *sum,
                              const aclTensor *squareSum)
{
    TRY(sbn__acl_check_null(OP, x, "x"));
    TRY(sbn__acl_check_null(OP, sum, "sum"));
    TRY(sbn__acl_check_null(OP, squareSum, "squareSum"));

    TRY(sbn__acl_check_dtype(OP, x, "x", &SBN_ACL_FLOATS));
    TRY(sbn__acl_check_dtype(OP, sum, "sum", &SBN_ACL_FLOAT_ONLY));
    TRY(sbn__acl_check_dtype(OP, squareSum, "squareSum", &SBN_ACL_FLOAT_ONLY));

    if (x->format != ACL_FORMAT_NCHW && x->format != ACL_FORMAT_NHWC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "x has format %s; only NCHW and NHWC are supported",
                             sbn__acl_format_name(x->format));
    TRY(check_output_format(sum, "sum"));
    TRY(check_output_format(squareSum, "squareSum"));

    TRY(sbn__acl_check_rank(OP, x, "x", 4, 4));
    TRY(sbn__acl_check_rank(OP, sum, "sum", 1, 1));
    TRY(sbn__acl_check_rank(OP, squareSum, "squareSum", 1, 1));
    TRY(sbn__acl_check_vector(OP, sum, "sum", x->dims[x->format == ACL_FORMAT_NHWC ? 3 : 1]));
    TRY(sbn__acl_check_vector(OP, squareSum, "squareSum",
                              x->dims[x->format == ACL_FORMAT_NHWC ? 3 : 1]));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x,
                                                                     aclTensor *sum,
                                                                     aclTensor *squareSum,
                                                                     uint64_t *workspaceSize,
                                                                     aclOpExecutor **executor)
{
    sbn_tensor xv, sized;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;
    int empty_channels;

    sbn__acl_clear_error();
    TRY(check_args(x, sum, squareSum));
    /* Not checked by CANN (which would crash); never dereferenced here. */
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));

    xv = sbn__acl_view(x, x->format == ACL_FORMAT_NHWC); /* NHWC: C moves to dim 1 */
    empty_channels = xv.shape[1] == 0;
    sized = sized_view(xv);
    if (!empty_channels && (s = sbn_reduce_workspace_size(&sized, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, empty_channels ? run_nothing : run_reduce, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->ints[SLOT_X] = sbn__acl_exec_add(e, x, xv, 0);
    e->ints[SLOT_SUM] = sbn__acl_exec_add(e, sum, sbn__acl_view(sum, 0), 1);
    e->ints[SLOT_SQUARE_SUM] = sbn__acl_exec_add(e, squareSum, sbn__acl_view(squareSum, 0), 1);
    if (e->ints[SLOT_X] < 0 || e->ints[SLOT_SUM] < 0 || e->ints[SLOT_SQUARE_SUM] < 0) {
        sbn__acl_exec_discard(e);
        return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
    }
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
