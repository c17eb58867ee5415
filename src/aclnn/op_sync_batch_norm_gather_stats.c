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

#include "aclnn/aclnn_internal.h"

#define OP "aclnnSyncBatchNormGatherStats"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The native view of the tensor in a slot of executor e (NULL for an absent one). */
#define VIEW(slot) sbn__acl_exec_view(e, (int)e->ints[slot])

/* executor->ints[]: the slots, in signature order */
enum { SLOT_SUM, SLOT_SQUARES, SLOT_COUNT, SLOT_MEAN, SLOT_VAR, SLOT_BMEAN, SLOT_BINVSTD,
       NSLOTS };
enum { SCALAR_MOMENTUM, SCALAR_EPS }; /* executor->scalars[] */

static const char *const k_names[NSLOTS] = {"totalSum", "totalSquareSum", "sampleCount", "mean",
                                            "variance", "batchMean", "batchInvstd"};

static const aclDataType k_count_list[] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_BF16};
static const sbn__acl_dtypes k_count_dtypes = {k_count_list, 4};

static aclnnStatus run_gather(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s;
    (void)workspace;
    (void)workspace_size;
    s = sbn_gather_stats_from_sums(VIEW(SLOT_SUM), VIEW(SLOT_SQUARES), VIEW(SLOT_COUNT),
                                   e->scalars[SCALAR_MOMENTUM], e->scalars[SCALAR_EPS],
                                   VIEW(SLOT_MEAN), VIEW(SLOT_VAR), VIEW(SLOT_BMEAN),
                                   VIEW(SLOT_BINVSTD));
    return sbn__acl_from_native(s, OP);
}

/* C == 0: every [C] tensor is empty, there is nothing to compute. */
static aclnnStatus run_nothing(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    (void)e;
    (void)workspace;
    (void)workspace_size;
    return ACLNN_SUCCESS;
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
    static const int rank[NSLOTS] = {2, 2, 1, 1, 1, 1, 1};
    int i;
    for (i = 0; i < NSLOTS; i++) TRY(sbn__acl_check_null(OP, t[i], k_names[i]));

    for (i = 0; i < NSLOTS; i++)
        TRY(sbn__acl_check_dtype(OP, t[i], k_names[i],
                                 i == SLOT_COUNT ? &k_count_dtypes : &SBN_ACL_FLOATS));
    TRY(same_dtype(t, SLOT_SQUARES, SLOT_SUM));
    TRY(same_dtype(t, SLOT_MEAN, SLOT_SUM));
    TRY(same_dtype(t, SLOT_VAR, SLOT_SUM));
    TRY(same_dtype(t, SLOT_BINVSTD, SLOT_BMEAN));

    for (i = 0; i < NSLOTS; i++) TRY(sbn__acl_check_format(OP, t[i], k_names[i]));

    for (i = 0; i < NSLOTS; i++) TRY(sbn__acl_check_rank(OP, t[i], k_names[i], rank[i], rank[i]));
    if (t[SLOT_SQUARES]->dims[0] != t[SLOT_SUM]->dims[0])
        return dim_mismatch(t, SLOT_SQUARES, 0, SLOT_SUM, 0);
    if (t[SLOT_SQUARES]->dims[1] != t[SLOT_SUM]->dims[1])
        return dim_mismatch(t, SLOT_SQUARES, 1, SLOT_SUM, 1);
    if (t[SLOT_COUNT]->dims[0] != t[SLOT_SUM]->dims[0])
        return dim_mismatch(t, SLOT_COUNT, 0, SLOT_SUM, 0);
    for (i = SLOT_MEAN; i < NSLOTS; i++)
        if (t[i]->dims[0] != t[SLOT_SUM]->dims[1]) return dim_mismatch(t, i, 0, SLOT_SUM, 1);
    if (t[SLOT_SUM]->dims[0] == 0) {
        char a[160];
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, OP,
                             "totalSum has shape %s: W (dim 0) is 0; at least one rank is needed",
                             sbn__acl_shape_str(t[SLOT_SUM], a, sizeof a));
    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
    const aclTensor *totalSum, const aclTensor *totalSquareSum, const aclTensor *sampleCount,
    aclTensor *mean, aclTensor *variance, float momentum, float eps, aclTensor *batchMean,
    aclTensor *batchInvstd, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const t[NSLOTS] = {totalSum, totalSquareSum, sampleCount, mean,
                                        variance, batchMean, batchInvstd};
    sbn_status s;
    aclOpExecutor *e;
    int i;

    sbn__acl_clear_error();
    TRY(check_args(t));
    if ((s = sbn__check_momentum((double)momentum)) != SBN_OK) return sbn__acl_from_native(s, OP);
    if ((s = sbn__check_eps((double)eps)) != SBN_OK) return sbn__acl_from_native(s, OP);
    /* Not checked by CANN (which would crash); never dereferenced here. */
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));

    /* The native op needs no workspace. */
    e = sbn__acl_exec_create(OP, totalSum->dims[1] == 0 ? run_nothing : run_gather, 0);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    for (i = 0; i < NSLOTS; i++) {
        e->ints[i] = sbn__acl_exec_add(e, t[i], sbn__acl_view(t[i], 0), i >= SLOT_BMEAN);
        if (e->ints[i] < 0) {
            sbn__acl_exec_discard(e);
            return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
        }
    }
    e->scalars[SCALAR_MOMENTUM] = (double)momentum;
    e->scalars[SCALAR_EPS] = (double)eps;
    *workspaceSize = 0;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnSyncBatchNormGatherStats(void *workspace,
                                                              uint64_t workspaceSize,
                                                              aclOpExecutor *executor,
                                                              aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
