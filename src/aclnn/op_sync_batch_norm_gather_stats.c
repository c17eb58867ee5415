/*
 * op_sync_batch_norm_gather_stats.c - aclnnSyncBatchNormGatherStats on the native
 * sbn_gather_stats_from_sums (aclnn mean/variance are the native running_mean/
 * running_var, batchMean/batchInvstd the native mean/invstd). Phase 1 checks in
 * CANN's order: NULL (the seven tensors -> 161001), dtype (totalSum,
 * totalSquareSum, mean, variance, batchMean, batchInvstd FLOAT/FLOAT16/BF16,
 * sampleCount also INT32; then totalSquareSum, mean and variance must have
 * totalSum's dtype and batchInvstd batchMean's -> 161002), format (a private
 * format on any tensor; CANN skips batchMean/batchInvstd, but a CPU cannot honour
 * a private layout), shape (ranks 2, 2, 1, 1, 1, 1, 1; totalSquareSum ==
 * totalSum [W, C]; sampleCount [W]; mean, variance, batchMean, batchInvstd [C]),
 * then W == 0 -> 161002 and C == 0 -> success with a phase 2 that does nothing.
 * workspaceSize and executor are not checked by CANN (it would crash); here a
 * NULL one gives 161001 after every other check. Decisions: momentum and eps are
 * float in this signature and must satisfy the native rules (momentum in [0, 1],
 * eps finite >= 0; checked here, CANN checks neither). Deviations from CANN: the
 * counts are used as given (CANN truncates them to int32 first; integral counts
 * give the same result), a negative batch variance from rounding is clamped at 0
 * (CANN gives NaN), counts must be finite and >= 0 (phase 2, 161002), N == 0
 * gives batchMean 0 and batchInvstd NaN with the running stats untouched, and
 * N == 1 leaves variance unchanged (CANN divides by N - 1 = 0), and a rank whose count
 * is 0 contributes nothing even if its sums are not 0 (CANN adds them). A tensor whose
 * data is still NULL passes phase 1; phase 2 refuses it (161001).
 */
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"

#include "aclnn_internal.h"

#define OP "aclnnSyncBatchNormGatherStats"

/* The tensor arguments in signature order. */
enum { T_SUM, T_SQUARES, T_COUNT, T_MEAN, T_VAR, T_BMEAN, T_BINVSTD, NT };
enum { SCALAR_MOMENTUM, SCALAR_EPS }; /* executor->scalars[] */

static const char *const k_names[NT] = {"totalSum", "totalSquareSum", "sampleCount", "mean",
                                        "variance", "batchMean", "batchInvstd"};

static const aclDataType k_count_list[] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_BF16};
static const sbn__acl_dtypes k_count_dtypes = {k_count_list, 4};

static aclnnStatus run_gather(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s;
    (void)workspace;
    (void)workspace_size;
    s = sbn_gather_stats_from_sums(sbn__acl_arg(e, T_SUM), sbn__acl_arg(e, T_SQUARES),
                                   sbn__acl_arg(e, T_COUNT), e->scalars[SCALAR_MOMENTUM],
                                   e->scalars[SCALAR_EPS], sbn__acl_arg(e, T_MEAN),
                                   sbn__acl_arg(e, T_VAR), sbn__acl_arg(e, T_BMEAN),
                                   sbn__acl_arg(e, T_BINVSTD));
    return sbn__acl_from_native(s, OP);
}

static aclnnStatus same_dtype(const aclTensor *const *t, int i, int ref)
{
    if (t[i]->dtype == t[ref]->dtype) return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                         "%s has dtype %s but %s has dtype %s; they must match",
                         k_names[i], sbn__acl_dtype_name(t[i]->dtype), k_names[ref],
                         sbn__acl_dtype_name(t[ref]->dtype));
}

static aclnnStatus dim_mismatch(const aclTensor *const *t, int i, int dim, int ref, int ref_dim)
{
    char a[160], b[160];
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                         "dim %d of %s %s must equal dim %d of %s %s", dim, k_names[i],
                         sbn__acl_shape_str(t[i], a, sizeof a), ref_dim, k_names[ref],
                         sbn__acl_shape_str(t[ref], b, sizeof b));
}

static aclnnStatus check_args(const aclTensor *const *t)
{
    static const int rank[NT] = {2, 2, 1, 1, 1, 1, 1};
    int i;
    for (i = 0; i < NT; i++) SBN_ACL_TRY(sbn__acl_check_null(OP, t[i], k_names[i]));

    for (i = 0; i < NT; i++)
        SBN_ACL_TRY(sbn__acl_check_dtype(OP, t[i], k_names[i],
                                         i == T_COUNT ? &k_count_dtypes : &SBN_ACL_FLOATS));
    SBN_ACL_TRY(same_dtype(t, T_SQUARES, T_SUM));
    SBN_ACL_TRY(same_dtype(t, T_MEAN, T_SUM));
    SBN_ACL_TRY(same_dtype(t, T_VAR, T_SUM));
    SBN_ACL_TRY(same_dtype(t, T_BINVSTD, T_BMEAN));

    for (i = 0; i < NT; i++) SBN_ACL_TRY(sbn__acl_check_format(OP, t[i], k_names[i]));

    for (i = 0; i < NT; i++)
        SBN_ACL_TRY(sbn__acl_check_rank(OP, t[i], k_names[i], rank[i], rank[i]));
    if (t[T_SQUARES]->dims[0] != t[T_SUM]->dims[0])
        return dim_mismatch(t, T_SQUARES, 0, T_SUM, 0);
    if (t[T_SQUARES]->dims[1] != t[T_SUM]->dims[1])
        return dim_mismatch(t, T_SQUARES, 1, T_SUM, 1);
    if (t[T_COUNT]->dims[0] != t[T_SUM]->dims[0])
        return dim_mismatch(t, T_COUNT, 0, T_SUM, 0);
    for (i = T_MEAN; i < NT; i++)
        if (t[i]->dims[0] != t[T_SUM]->dims[1]) return dim_mismatch(t, i, 0, T_SUM, 1);
    if (t[T_SUM]->dims[0] == 0) {
        char a[160];
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "totalSum has shape %s: W (dim 0) is 0; at least one rank is needed",
                             sbn__acl_shape_str(t[T_SUM], a, sizeof a));
    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
    const aclTensor *totalSum, const aclTensor *totalSquareSum, const aclTensor *sampleCount,
    aclTensor *mean, aclTensor *variance, float momentum, float eps, aclTensor *batchMean,
    aclTensor *batchInvstd, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const given[NT] = {totalSum, totalSquareSum, sampleCount, mean,
                                    variance, batchMean,      batchInvstd};
    const aclTensor *t[NT]; /* the tensor objects of the handles given */

    sbn__acl_clear_error();
    sbn__acl_resolve_tensors(given, t, NT);
    SBN_ACL_TRY(check_args(t));
    SBN_ACL_TRY(sbn__acl_check_momentum(OP, (double)momentum));
    SBN_ACL_TRY(sbn__acl_check_eps(OP, (double)eps));
    SBN_ACL_TRY(sbn__acl_check_out_args(OP, workspaceSize, executor));

    /* The native op needs no workspace; C == 0: every [C] tensor is empty, nothing to do. */
    const sbn__acl_exec_spec spec = {
        .run = t[T_SUM]->dims[1] == 0 ? sbn__acl_run_nothing : run_gather, .tensors = t,
        .names = k_names, .count = NT, .first_output = T_BMEAN,
        .scalars = {[SCALAR_MOMENTUM] = (double)momentum, [SCALAR_EPS] = (double)eps}};
    return sbn__acl_exec_build(OP, &spec, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStats(void *workspace,
                                                              uint64_t workspaceSize,
                                                              aclOpExecutor *executor,
                                                              aclrtStream stream)
{
    return sbn__acl_phase2(OP, workspace, workspaceSize, executor, stream);
}
