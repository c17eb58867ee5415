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

#include "aclnn_internal.h"

#define OP "aclnnBatchNormStats"

enum { T_INPUT, T_MEAN, T_INVSTD, NT }; /* the tensor arguments in signature order */
enum { SCALAR_EPS };                    /* executor->scalars[] */

static const char *const k_names[NT] = {"input", "mean", "invstd"};

static aclnnStatus run_stats(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_stats(sbn__acl_arg(e, T_INPUT), e->scalars[SCALAR_EPS],
                             sbn__acl_arg(e, T_MEAN), sbn__acl_arg(e, T_INVSTD), workspace,
                             (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus check_args(const aclTensor *input, const aclTensor *mean,
                              const aclTensor *invstd)
{
    int64_t c;
    SBN_ACL_TRY(sbn__acl_check_null(OP, input, "input"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, mean, "mean"));
    SBN_ACL_TRY(sbn__acl_check_null(OP, invstd, "invstd"));

    SBN_ACL_TRY(sbn__acl_check_dtype(OP, input, "input", &SBN_ACL_FLOATS));
    SBN_ACL_TRY(sbn__acl_check_dtype(OP, mean, "mean", &SBN_ACL_FLOAT_ONLY));
    SBN_ACL_TRY(sbn__acl_check_dtype(OP, invstd, "invstd", &SBN_ACL_FLOAT_ONLY));

    SBN_ACL_TRY(sbn__acl_check_format(OP, input, "input"));
    SBN_ACL_TRY(sbn__acl_check_format(OP, mean, "mean"));
    SBN_ACL_TRY(sbn__acl_check_format(OP, invstd, "invstd"));

    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, mean, "mean", 1, 1));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, invstd, "invstd", 1, 1));
    SBN_ACL_TRY(sbn__acl_check_channels(OP, input, "input", 0, &c));
    SBN_ACL_TRY(sbn__acl_check_vector(OP, mean, "mean", c));
    SBN_ACL_TRY(sbn__acl_check_vector(OP, invstd, "invstd", c));
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input,
                                                                    double eps, aclTensor *mean,
                                                                    aclTensor *invstd,
                                                                    uint64_t *workspaceSize,
                                                                    aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {input, mean, invstd};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    double eps_f = (double)(float)eps; /* CANN narrows eps to float */
    uint64_t bytes = 0;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));
    SBN_ACL_TRY(check_args(t[T_INPUT], t[T_MEAN], t[T_INVSTD]));
    SBN_ACL_TRY(sbn__acl_check_eps(OP, eps_f));

    SBN_ACL_TRY(sbn__acl_workspace_size(OP, sbn_stats_workspace_size, t[T_INPUT], 0, &bytes));
    const sbn__acl_exec_spec spec = {.run = run_stats, .workspace_size = bytes, .tensors = t,
                                     .names = k_names, .count = NT, .first_output = T_MEAN,
                                     .scalars = {[SCALAR_EPS] = eps_f}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
