/*
 * op_batch_norm_stats.c - aclnnBatchNormStats on the native sbn_stats. Phase 1
 * checks in CANN's order (workspaceSize/executor, then input, mean, invstd for
 * NULL -> 161001; dtype: input FLOAT/FLOAT16/BF16, mean and invstd FLOAT; a
 * private format on any tensor; shape: input rank 2..8, mean and invstd 1-D, C != 0,
 * mean and invstd [C] -> 161002), then eps, and builds the executor; phase 2 runs
 * sbn_stats. Decisions: eps is narrowed to float as CANN does ((double)(float)eps)
 * and must then be finite and >= 0 (the native rule, checked here so that phase 1
 * fails rather than phase 2; CANN does not check it). C is dim 1 whatever the
 * public format (as CANN; NHWC is not reinterpreted). An empty input ({0, 3})
 * succeeds and phase 2 writes mean 0 and invstd NaN (the native op's R == 0 rule,
 * which is CANN's fill). Output overlap and a NULL data pointer of a non-empty
 * tensor are found by the native op in phase 2 (161002 / 161001): a tensor may be made
 * before its memory and get it with aclSetInputTensorAddr before phase 2. An executor
 * that cannot be allocated gives 561101 (CANN's ACLNN_ERR_INNER_CREATE_EXECUTOR).
 */
#include "aclnnop/aclnn_batch_norm_stats.h"

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormStats"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The native view of the tensor in a slot of executor e (NULL for an absent one). */
#define VIEW(slot) sbn__acl_exec_view(e, (int)e->ints[slot])

enum { SLOT_INPUT, SLOT_MEAN, SLOT_INVSTD }; /* executor->ints[] */
enum { SCALAR_EPS };                         /* executor->scalars[] */

static aclnnStatus run_stats(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_stats(VIEW(SLOT_INPUT), e->scalars[SCALAR_EPS], VIEW(SLOT_MEAN),
                             VIEW(SLOT_INVSTD), workspace, (size_t)workspace_size, NULL);
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

static aclnnStatus check_args(const aclTensor *input, const aclTensor *mean,
                              const aclTensor *invstd, uint64_t *workspaceSize,
                              aclOpExecutor **executor)
{
    int64_t c;
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));
    TRY(sbn__acl_check_null(OP, input, "input"));
    TRY(sbn__acl_check_null(OP, mean, "mean"));
    TRY(sbn__acl_check_null(OP, invstd, "invstd"));

    TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    TRY(sbn__acl_check_dtype(OP, mean, "mean", &SBN_ACL_FLOAT_ONLY));
    TRY(sbn__acl_check_dtype(OP, invstd, "invstd", &SBN_ACL_FLOAT_ONLY));

    TRY(sbn__acl_check_format(OP, input, "input"));
    TRY(sbn__acl_check_format(OP, mean, "mean"));
    TRY(sbn__acl_check_format(OP, invstd, "invstd"));

    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    TRY(sbn__acl_check_rank(OP, mean, "mean", 1, 1));
    TRY(sbn__acl_check_rank(OP, invstd, "invstd", 1, 1));
    c = input->dims[1];
    if (c == 0) {
        char shape[160];
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "input has shape %s: the channel dim (1) is 0",
                             sbn__acl_shape_str(input, shape, sizeof shape));
    }
    TRY(sbn__acl_check_vector(OP, mean, "mean", c));
    TRY(sbn__acl_check_vector(OP, invstd, "invstd", c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input,
                                                                    double eps, aclTensor *mean,
                                                                    aclTensor *invstd,
                                                                    uint64_t *workspaceSize,
                                                                    aclOpExecutor **executor)
{
    double eps_f = (double)(float)eps; /* CANN narrows eps to float */
    sbn_tensor x, sized;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;

    sbn__acl_clear_error();
    TRY(check_args(input, mean, invstd, workspaceSize, executor));
    if ((s = sbn__check_eps(eps_f)) != SBN_OK) return sbn__acl_from_native(s, OP);

    x = sbn__acl_view(input, 0);
    sized = sized_view(x);
    if ((s = sbn_stats_workspace_size(&sized, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, run_stats, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    e->ints[SLOT_INPUT] = sbn__acl_exec_add(e, input, x, 0);
    e->ints[SLOT_MEAN] = sbn__acl_exec_add(e, mean, sbn__acl_view(mean, 0), 1);
    e->ints[SLOT_INVSTD] = sbn__acl_exec_add(e, invstd, sbn__acl_view(invstd, 0), 1);
    if (e->ints[SLOT_INPUT] < 0 || e->ints[SLOT_MEAN] < 0 || e->ints[SLOT_INVSTD] < 0) {
        sbn__acl_exec_discard(e);
        return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
    }
    e->scalars[SCALAR_EPS] = eps_f;
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
