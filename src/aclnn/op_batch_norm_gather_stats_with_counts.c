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

#include <string.h>

#include "aclnn/aclnn_internal.h"

#define OP "aclnnBatchNormGatherStatsWithCounts"

#define TRY(expr)                                             \
    do {                                                      \
        aclnnStatus try_status_ = (expr);                     \
        if (try_status_ != ACLNN_SUCCESS) return try_status_; \
    } while (0)

/* The native view of the tensor in a slot of executor e (NULL for an absent one). */
#define VIEW(slot) sbn__acl_exec_view(e, (int)e->ints[slot])

/* executor->ints[]: the slots, in signature order */
enum { SLOT_INPUT, SLOT_MEAN, SLOT_INVSTD, SLOT_RMEAN, SLOT_RVAR, SLOT_COUNTS, SLOT_MEAN_ALL,
       SLOT_INVSTD_ALL, SLOT_COUNT };
enum { SCALAR_MOMENTUM, SCALAR_EPS }; /* executor->scalars[] */

static aclnnStatus run_gather(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    sbn_status s = sbn_gather_stats_with_counts(
        VIEW(SLOT_MEAN), VIEW(SLOT_INVSTD), VIEW(SLOT_COUNTS), e->scalars[SCALAR_MOMENTUM],
        e->scalars[SCALAR_EPS], VIEW(SLOT_RMEAN), VIEW(SLOT_RVAR), VIEW(SLOT_MEAN_ALL),
        VIEW(SLOT_INVSTD_ALL), workspace, (size_t)workspace_size, NULL);
    return sbn__acl_from_native(s, OP);
}

/* C == 0: every output is empty, there is nothing to compute. */
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

static aclnnStatus check_shapes(const aclTensor *input, const aclTensor *mean,
                                const aclTensor *invstd, const aclTensor *runningMean,
                                const aclTensor *runningVar, const aclTensor *counts,
                                const aclTensor *meanAll, const aclTensor *invstdAll)
{
    char a[160], b[160], d[160];
    int64_t c;
    TRY(sbn__acl_check_rank(OP, input, "input", 2, 8));
    TRY(sbn__acl_check_rank(OP, mean, "mean", 2, 2));
    TRY(sbn__acl_check_rank(OP, invstd, "invstd", 2, 2));
    /* CANN compares counts' dim 0 before it checks that counts is 1-D; a 0-D counts
     * has no dim 0, so its rank is checked first here. */
    TRY(sbn__acl_check_rank(OP, counts, "counts", 1, 1));
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
    if (runningMean) TRY(sbn__acl_check_vector(OP, runningMean, "runningMean", c));
    if (runningVar) TRY(sbn__acl_check_vector(OP, runningVar, "runningVar", c));
    TRY(sbn__acl_check_vector(OP, meanAll, "meanAll", c));
    TRY(sbn__acl_check_vector(OP, invstdAll, "invstdAll", c));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_args(const aclTensor *input, const aclTensor *mean,
                              const aclTensor *invstd, const aclTensor *runningMean,
                              const aclTensor *runningVar, const aclTensor *counts,
                              const aclTensor *meanAll, const aclTensor *invstdAll,
                              uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const all[] = {input, mean, invstd, runningMean, runningVar, counts,
                                    meanAll, invstdAll};
    static const char *const names[] = {"input", "mean", "invstd", "runningMean", "runningVar",
                                        "counts", "meanAll", "invstdAll"};
    int i;
    TRY(sbn__acl_check_null(OP, workspaceSize, "workspaceSize"));
    TRY(sbn__acl_check_null(OP, executor, "executor"));
    for (i = 0; i < 8; i++)
        if (i != SLOT_RMEAN && i != SLOT_RVAR) TRY(sbn__acl_check_null(OP, all[i], names[i]));
    for (i = 0; i < 8; i++)
        if (all[i]) TRY(sbn__acl_check_dtype(OP, all[i], names[i], &SBN_ACL_FLOATS));
    for (i = 0; i < 8; i++)
        if (all[i]) TRY(sbn__acl_check_format(OP, all[i], names[i]));
    return check_shapes(input, mean, invstd, runningMean, runningVar, counts, meanAll, invstdAll);
}

static sbn_tensor view_or_none(const aclTensor *t)
{
    sbn_tensor v;
    if (t) return sbn__acl_view(t, 0);
    memset(&v, 0, sizeof v);
    return v;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd, aclTensor *runningMean,
    aclTensor *runningVar, double momentum, double eps, const aclTensor *counts,
    aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *const all[] = {input, mean, invstd, runningMean, runningVar, counts,
                                    meanAll, invstdAll};
    double momentum_f = (double)(float)momentum, eps_f = (double)(float)eps; /* as CANN */
    sbn_tensor sized;
    size_t bytes = 0;
    sbn_status s;
    aclOpExecutor *e;
    int i, empty_channels;

    sbn__acl_clear_error();
    TRY(check_args(input, mean, invstd, runningMean, runningVar, counts, meanAll, invstdAll,
                   workspaceSize, executor));
    if ((s = sbn__check_momentum(momentum_f)) != SBN_OK) return sbn__acl_from_native(s, OP);
    if ((s = sbn__check_eps(eps_f)) != SBN_OK) return sbn__acl_from_native(s, OP);

    empty_channels = input->dims[1] == 0;
    sized = sized_view(sbn__acl_view(mean, 0));
    if (!empty_channels &&
        (s = sbn_gather_stats_with_counts_workspace_size(&sized, &bytes)) != SBN_OK)
        return sbn__acl_from_native(s, OP);
    e = sbn__acl_exec_create(OP, empty_channels ? run_nothing : run_gather, (uint64_t)bytes);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    for (i = 0; i < SLOT_COUNT; i++) {
        int is_output = i == SLOT_MEAN_ALL || i == SLOT_INVSTD_ALL;
        e->ints[i] = sbn__acl_exec_add(e, all[i], view_or_none(all[i]), is_output);
        if (all[i] && e->ints[i] < 0) {
            sbn__acl_exec_discard(e);
            return sbn__acl_fail(ACLNN_ERR_INNER, OP, "the executor has no room for the tensors");
        }
    }
    e->scalars[SCALAR_MOMENTUM] = momentum_f;
    e->scalars[SCALAR_EPS] = eps_f;
    *workspaceSize = (uint64_t)bytes;
    *executor = e;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace,
                                                                    uint64_t workspaceSize,
                                                                    aclOpExecutor *executor,
                                                                    const aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(OP, workspace, workspaceSize, executor, stream);
}
