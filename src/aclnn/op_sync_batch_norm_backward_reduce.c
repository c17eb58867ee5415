/*
 * op_sync_batch_norm_backward_reduce.c - aclnnSyncBatchNormBackwardReduce (CANN's
 * SyncBatchNormBackwardReduce: the per-channel step after the backward sums were
 * reduced across ranks) on the native sbn_elemt, element by element:
 *   sumDyXmu = sumDyDxPad - mean * sumDy,   y = sumDyXmu * invertStd.
 * Mapping: each tensor's view is flattened to one dim of E elements; sbn_elemt, whose
 * rule is out = (x - m) * s * w + b per channel, runs on a [1, E] view with E channels:
 * first x = mean, m = 0, s = sumDy, w = -1, b = sumDyDxPad into a double buffer in the
 * workspace (so sumDyXmu is exact to double, as the oracle), then from that buffer
 * (m = 0, s = 1) into sumDyXmu and (s = invertStd) into y: each output is rounded
 * once from double (CANN: fp32). Phase 1 checks in CANN's order: NULL (the six
 * tensors -> 161001), dtype (each FLOAT/FLOAT16/BF16, then all equal to sumDy's, as
 * the op requires), format (private formats -> 161002; the public ones are accepted
 * whatever the rank, as the family does; CANN lists ND), shape (sumDy rank 1..8, not
 * empty (CANN: the element count must not be 0), every other tensor sumDy's shape, no
 * broadcasting), then workspaceSize and executor (161001). Limit of syncbn: each view
 * must be expressible as one strided dim (contiguous, or a 1-D view of any stride, or
 * dims that collapse); another strided view gives 161002 in phase 1. Outputs
 * overlapping inputs or each other are refused in phase 2 (161002), as every op.
 */
#include <stdint.h>

#include "aclnnop/aclnn_sync_batch_norm_backward_reduce.h"

#include "aclnn_internal.h"

#define OP "aclnnSyncBatchNormBackwardReduce"

/* The tensor arguments in signature order. */
enum { T_SUM_DY, T_SUM_DY_DX_PAD, T_MEAN, T_INVERT_STD, T_SUM_DY_XMU, T_Y, NT };

static const char *const k_names[NT] = {"sumDy", "sumDyDxPad", "mean", "invertStd",
                                        "sumDyXmu", "y"};

enum { INT_ELEMENTS, INT_ELEMT_BYTES }; /* executor->ints[] */

/*
 * *stride = the one stride of a view of dims[0..ndim) that visits its elements as one
 * strided run (dims of size 1 ignored); 0 when there is none.
 */
static int flat_stride(int ndim, const int64_t *dims, const int64_t *strides, int64_t *stride)
{
    int d, have = 0;
    int64_t next_stride = 0, next_dim = 1;
    *stride = 1;
    for (d = ndim - 1; d >= 0; d--) {
        if (dims[d] == 1) continue;
        if (!have) {
            *stride = strides[d];
            have = 1;
        } else if (next_stride > INT64_MAX / next_dim || strides[d] != next_stride * next_dim) {
            return 0;
        }
        next_stride = strides[d];
        next_dim = dims[d];
    }
    return 1;
}

/* The [1, e] view (e channels of one sample) of a flattenable native view. */
static sbn_tensor row_view(const sbn_tensor *t, int64_t e)
{
    sbn_tensor r = *t;
    int64_t s = 1;
    (void)flat_stride(t->rank, t->shape, t->strides, &s);
    r.rank = 2;
    r.shape[0] = 1;
    r.shape[1] = e;
    r.strides[1] = s;
    r.strides[0] = s * e; /* never used (size-1 dim); within the view's checked extent */
    return r;
}

/* The same elements as a [e] per-channel vector. */
static sbn_tensor vector_view(const sbn_tensor *t, int64_t e)
{
    sbn_tensor r = row_view(t, e);
    r.rank = 1;
    r.shape[0] = e;
    r.strides[0] = r.strides[1];
    return r;
}

static const double k_minus_one = -1.0;

static aclnnStatus run_sync_backward_reduce(aclOpExecutor *e, void *workspace,
                                            uint64_t workspace_size)
{
    const int64_t n = e->ints[INT_ELEMENTS];
    const size_t elemt_bytes = (size_t)e->ints[INT_ELEMT_BYTES];
    sbn_tensor sum_dy = vector_view(sbn__acl_arg(e, T_SUM_DY), n);
    sbn_tensor pad = vector_view(sbn__acl_arg(e, T_SUM_DY_DX_PAD), n);
    sbn_tensor mean = row_view(sbn__acl_arg(e, T_MEAN), n);
    sbn_tensor invert_std = vector_view(sbn__acl_arg(e, T_INVERT_STD), n);
    sbn_tensor sum_dy_xmu = row_view(sbn__acl_arg(e, T_SUM_DY_XMU), n);
    sbn_tensor y = row_view(sbn__acl_arg(e, T_Y), n);
    sbn_tensor zeros = sbn__acl_zeros(n), ones = sbn__acl_ones(n);
    sbn_tensor minus_ones = sbn_tensor_1d((void *)(uintptr_t)&k_minus_one, SBN_F64, n);
    const int64_t row_shape[2] = {1, n};
    /* the double buffer follows sbn_elemt's own workspace */
    sbn_tensor exact = sbn_tensor_contiguous((char *)workspace + elemt_bytes, SBN_F64, 2, row_shape);
    sbn_status s;
    (void)workspace_size;
    minus_ones.strides[0] = 0;
    sbn_pool_t *pool = sbn__acl_run_pool();
    s = sbn_elemt(&mean, &zeros, &sum_dy, &minus_ones, &pad, &exact, workspace, elemt_bytes, pool);
    if (s == SBN_OK)
        s = sbn_elemt(&exact, &zeros, &ones, NULL, NULL, &sum_dy_xmu, workspace, elemt_bytes, pool);
    if (s == SBN_OK)
        s = sbn_elemt(&exact, &zeros, &invert_std, NULL, NULL, &y, workspace, elemt_bytes, pool);
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus check_args(const aclTensor *const *t, int64_t *elements)
{
    const aclTensor *sum_dy = t[T_SUM_DY];
    int64_t stride;
    int k;

    for (k = 0; k < NT; k++) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));
    for (k = 0; k < NT; k++) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    for (k = 1; k < NT; k++)
        SBN_ACL_TRY(sbn__acl_check_same_dtype(OP, t[k], k_names[k], sum_dy, "sumDy"));
    for (k = 0; k < NT; k++) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, sum_dy, "sumDy", 1, 8));
    for (k = 1; k < NT; k++)
        SBN_ACL_TRY(sbn__acl_check_same_shape(OP, t[k], k_names[k], sum_dy, "sumDy"));
    *elements = sbn__acl_numel(sum_dy);
    if (*elements == 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "sumDy has no elements; the op needs at least one");
    for (k = 0; k < NT; k++) {
        char buf[160];
        if (!flat_stride((int)t[k]->ndim, t[k]->dims, t[k]->strides, &stride))
            return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                                 "%s (shape %s) is a strided view whose elements are not one "
                                 "run of a single stride; syncbn needs such a view here",
                                 k_names[k], sbn__acl_shape_str(t[k], buf, sizeof buf));
    }
    return ACLNN_SUCCESS;
}

ACLNN_API aclnnStatus aclnnSyncBatchNormBackwardReduceGetWorkspaceSize(
    const aclTensor *sumDy, const aclTensor *sumDyDxPad, const aclTensor *mean,
    const aclTensor *invertStd, aclTensor *sumDyXmu, aclTensor *y, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {sumDy, sumDyDxPad, mean, invertStd, sumDyXmu, y};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    int64_t elements = 0;
    uint64_t elemt_bytes = 0;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(check_args(t, &elements));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    /* sbn_elemt's workspace for the [1, E] views (it depends on the shape only), rounded
       up to 64 bytes, then the E doubles of the exact sumDyXmu */
    {
        const int64_t dims[2] = {1, elements};
        const sbn_tensor shape = sbn_tensor_contiguous(NULL, SBN_F32, 2, dims);
        size_t bytes = 0;
        const sbn_status s = sbn_elemt_workspace_size(&shape, &bytes);
        if (s != SBN_OK) return sbn__acl_from_native(s, OP);
        elemt_bytes = (uint64_t)bytes;
    }
    if (elemt_bytes > UINT64_MAX / 2 || (uint64_t)elements > (UINT64_MAX / 2) / sizeof(double))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP, "sumDy is too large");
    elemt_bytes = (elemt_bytes + 63u) & ~(uint64_t)63u;
    const sbn__acl_exec_spec spec = {
        .run = run_sync_backward_reduce,
        .workspace_size = elemt_bytes + (uint64_t)elements * sizeof(double), .tensors = t,
        .names = k_names, .count = NT, .first_output = T_SUM_DY_XMU,
        .ints = {[INT_ELEMENTS] = elements, [INT_ELEMT_BYTES] = (int64_t)elemt_bytes}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACLNN_API aclnnStatus aclnnSyncBatchNormBackwardReduce(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
