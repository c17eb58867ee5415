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

#include "aclnn_internal.h"

#define OP "aclnnBatchNormReduce"

enum { T_X, T_SUM, T_SQUARE_SUM, NT }; /* the tensor arguments in signature order */

static const char *const k_names[NT] = {"x", "sum", "squareSum"};

static aclnnStatus run_reduce(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_reduce(sbn__acl_arg(e, T_X), sbn__acl_arg(e, T_SUM),
                              sbn__acl_arg(e, T_SQUARE_SUM), workspace, (size_t)workspace_size,
                              sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
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
    int64_t c;
    SBN_ACL_TRY(sbn__acl_check_null(OP, x, "x"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, sum, "sum"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, squareSum, "squareSum"));

    SBN_ACL_TRY(sbn__acl_check_dtype(OP, x, "x", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_dtype(OP, sum, "sum", &SBN_ACL_FLOAT_ONLY));
    SBN_ACL_TRY(sbn__acl_check_dtype(OP, squareSum, "squareSum", &SBN_ACL_FLOAT_ONLY));

    if (x->format != ACL_FORMAT_NCHW && x->format != ACL_FORMAT_NHWC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "x has format %s; only NCHW and NHWC are supported",
                             sbn__acl_format_name(x->format));
    SBN_ACL_TRY(check_output_format(sum, "sum"));
    SBN_ACL_TRY(check_output_format(squareSum, "squareSum"));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, x, "x", 4, 4));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, sum, "sum", 1, 1));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, squareSum, "squareSum", 1, 1));
    c = x->dims[x->format == ACL_FORMAT_NHWC ? 3 : 1];
    SBN_ACL_TRY(sbn__acl_check_vector(OP, sum, "sum", c));
    SBN_ACL_TRY(sbn__acl_check_vector(OP, squareSum, "squareSum", c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x,
                                                                     aclTensor *sum,
                                                                     aclTensor *squareSum,
                                                                     uint64_t *workspaceSize,
                                                                     aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {x, sum, squareSum};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    uint64_t bytes = 0;
    int nhwc, empty_channels;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(check_args(t[T_X], t[T_SUM], t[T_SQUARE_SUM]));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    nhwc = t[T_X]->format == ACL_FORMAT_NHWC; /* C moves to dim 1 of x's view */
    empty_channels = t[T_X]->dims[nhwc ? 3 : 1] == 0; /* sum and squareSum are empty */
    if (!empty_channels)
        SBN_ACL_TRY(sbn__acl_workspace_size(OP, sbn_reduce_workspace_size, t[T_X], nhwc, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = empty_channels ? sbn__acl_run_nothing : run_reduce, .workspace_size = bytes,
        .tensors = t, .names = k_names, .count = NT, .first_output = T_SUM,
        .channels_last = nhwc ? 1u << T_X : 0u};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
