/*
 * op_batch_norm_gather_stats_with_counts.c - aclnnBatchNormGatherStatsWithCounts
 * on the native sbn_gather_stats_with_counts (aclnn mean/invstd [W, C] are the
 * native mean_all/invstd_all; aclnn meanAll/invstdAll are the native mean/invstd).
 * Phase 1 checks in CANN's order: NULL (workspaceSize, executor, input, mean,
 * invstd, counts, meanAll, invstdAll -> 161001; runningMean/runningVar are
 * optional), dtype (every present tensor FLOAT/FLOAT16/BF16, one by one, mixed
 * allowed; INT32 counts -> 161002), format (a private format on any present
 * tensor -> 161002; CANN checks only input, mean, invstd and counts, but a CPU
 * cannot honour a private layout on an output either), shape (input rank 2..8;
 * mean, invstd 2-D; counts 1-D; dim 0 of mean, invstd, counts equal; dim 1 of
 * mean, invstd == C = input dim 1; running tensors, meanAll, invstdAll [C]), then
 * momentum and eps. input is only used for C; its data is never read.
 * Decisions: momentum and eps are narrowed to float as CANN does ((double)(float)x)
 * and must then satisfy the native rules (momentum in [0, 1], eps finite >= 0),
 * checked here so phase 1 fails (CANN checks neither). runningVar is updated with
 * the unbiased M2/(N - 1) (open question 1). Each non-NULL running tensor is
 * updated on its own (CANN skips both when runningMean is NULL and crashes when
 * only runningVar is NULL). Empty mean: W == 0 succeeds with meanAll 0, invstdAll
 * NaN and the running stats untouched (the native N == 0 rule); C == 0 succeeds and
 * phase 2 does nothing (every output is empty); validation comes first, as in
 * CANN. counts must be finite and >= 0 (native rule, checked in phase 2 -> 161002);
 * ranks with count 0 are skipped. N == 1 leaves runningVar unchanged (native; CANN
 * would divide by zero). A tensor whose data is still NULL passes phase 1 (its memory
 * may be set with aclSet*TensorAddr); phase 2 refuses it (161001), except input, whose
 * data is never read.
 */
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"

#include "aclnn_internal.h"

#define OP "aclnnBatchNormGatherStatsWithCounts"

/* The tensor arguments in signature order. */
enum { T_INPUT, T_MEAN, T_INVSTD, T_RMEAN, T_RVAR, T_COUNTS, T_MEAN_ALL, T_INVSTD_ALL, NT };

static const char *const k_names[NT] = {"input",  "mean",    "invstd",   "runningMean",
                                        "runningVar", "counts", "meanAll", "invstdAll"};

enum { SCALAR_MOMENTUM, SCALAR_EPS }; /* executor->scalars[] */

static aclnnStatus run_gather(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_gather_stats_with_counts(
        sbn__acl_arg(e, T_MEAN), sbn__acl_arg(e, T_INVSTD), sbn__acl_arg(e, T_COUNTS),
        e->scalars[SCALAR_MOMENTUM], e->scalars[SCALAR_EPS], sbn__acl_arg(e, T_RMEAN),
        sbn__acl_arg(e, T_RVAR), sbn__acl_arg(e, T_MEAN_ALL), sbn__acl_arg(e, T_INVSTD_ALL),
        workspace, (size_t)workspace_size, sbn__acl_run_pool());
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus check_shapes(const aclTensor *const *t)
{
    const aclTensor *input = t[T_INPUT], *mean = t[T_MEAN], *invstd = t[T_INVSTD],
                    *counts = t[T_COUNTS];
    char a[160], b[160], d[160];
    int64_t c;
    int k;
    SBN_ACL_TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, mean, "mean", 2, 2));
    SBN_ACL_TRY(sbn__acl_check_rank(OP, invstd, "invstd", 2, 2));
    /* CANN compares counts' dim 0 before it checks that counts is 1-D; a 0-D counts
     * has no dim 0, so its rank is checked first here. */
    SBN_ACL_TRY(sbn__acl_check_rank(OP, counts, "counts", 1, 1));
    if (mean->dims[0] != invstd->dims[0] || counts->dims[0] != mean->dims[0])
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "dim 0 (W) of mean %s, invstd %s and counts %s must be equal",
                             sbn__acl_shape_str(mean, a, sizeof a),
                             sbn__acl_shape_str(invstd, b, sizeof b),
                             sbn__acl_shape_str(counts, d, sizeof d));
    c = input->dims[1];
    if (mean->dims[1] != c || invstd->dims[1] != c)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "dim 1 of mean %s and invstd %s must be the channel count C = %lld "
                             "of input %s",
                             sbn__acl_shape_str(mean, a, sizeof a),
                             sbn__acl_shape_str(invstd, b, sizeof b), (long long)c,
                             sbn__acl_shape_str(input, d, sizeof d));
    for (k = T_RMEAN; k < NT; k++)
        if (t[k] && k != T_COUNTS) SBN_ACL_TRY(sbn__acl_check_vector(OP, t[k], k_names[k], c));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_args(const aclTensor *const *t)
{
    int k;
    for (k = 0; k < NT; k++)
        if (k != T_RMEAN && k != T_RVAR) SBN_ACL_TRY(sbn__acl_check_null(OP, t[k], k_names[k]));
    for (k = 0; k < NT; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[k], k_names[k], &SBN_ACL_FLOATS));
    for (k = 0; k < NT; k++)
        if (t[k]) SBN_ACL_TRY(sbn__acl_check_format(OP, t[k], k_names[k]));
    return check_shapes(t);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
    aclTensor *runningVar, double momentum, double eps, const aclTensor *counts,
    aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {input,      mean,   invstd,  runningMean,
                                    runningVar, counts, meanAll, invstdAll};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */
    double momentum_f = (double)(float)momentum, eps_f = (double)(float)eps; /* as CANN */
    uint64_t bytes = 0;
    int empty_channels;

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));
    SBN_ACL_TRY(check_args(t));
    SBN_ACL_TRY(sbn__acl_check_momentum(OP, momentum_f));
    SBN_ACL_TRY(sbn__acl_check_eps(OP, eps_f));

    empty_channels = t[T_INPUT]->dims[1] == 0; /* every output is empty: phase 2 does nothing */
    if (!empty_channels)
        SBN_ACL_TRY(sbn__acl_workspace_size(OP, sbn_gather_stats_with_counts_workspace_size,
                                            t[T_MEAN],
                                            0, &bytes));
    const sbn__acl_exec_spec spec = {
        .run = empty_channels ? sbn__acl_run_nothing : run_gather, .workspace_size = bytes,
        .tensors = t, .names = k_names, .count = NT, .first_output = T_MEAN_ALL,
        .scalars = {[SCALAR_MOMENTUM] = momentum_f, [SCALAR_EPS] = eps_f}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace,
                                                                    uint64_t workspaceSize,
                                                                    aclOpExecutor *executor,
                                                                    const aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
