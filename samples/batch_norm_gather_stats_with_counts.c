/*
 * batch_norm_gather_stats_with_counts.c - the CANN aclnnBatchNormGatherStatsWithCounts
 * doc example as a CPU program, with the sample's under-sized mean vector read as
 * aclnn-spec.md section 3 "reading A" (rows 2-3 of mean are 0): input {2,4,2},
 * counts [1,2,3,4], invstd rows 1,2,3,4, runningMean [1,2,3,4], runningVar [5,6,7,8],
 * momentum 0.01, eps 1e-4.
 */
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "common.h"

int main(void)
{
    int32_t device = 0;
    aclrtStream stream = NULL;
    int64_t in_shape[3] = {2, 4, 2}, wc[2] = {4, 4}, w[1] = {4}, c[1] = {4};
    float input[16] = {0}, mean[16] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0};
    float invstd[16] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
    float counts[4] = {1, 2, 3, 4}, running_mean[4] = {1, 2, 3, 4}, running_var[4] = {5, 6, 7, 8};
    float zeros[4] = {0, 0, 0, 0};
    void *d_input, *d_mean, *d_invstd, *d_counts, *d_rm, *d_rv, *d_mean_all, *d_invstd_all;
    void *workspace = NULL;
    aclTensor *t_input, *t_mean, *t_invstd, *t_counts, *t_rm, *t_rv, *t_mean_all, *t_invstd_all;
    aclOpExecutor *executor = NULL;
    uint64_t workspace_size = 0;
    const double want_mean_all[4] = {0.8, 1.1, 1.4, 1.7};
    const double want_invstd_all[4] = {0.601022608, 0.493965208, 0.413508024, 0.353148972};
    const double want_rm[4] = {0.998, 1.991, 2.984, 3.977};
    const double want_rv[4] = {4.98075815, 5.98553593, 6.99498037, 8.00909148};
    int bad;

    CHECK_RET(sample_init(device, &stream) == 0, "init");
    CHECK_RET(sample_tensor(input, in_shape, 3, ACL_FLOAT, 4, &d_input, &t_input) == 0, "input");
    CHECK_RET(sample_tensor(mean, wc, 2, ACL_FLOAT, 4, &d_mean, &t_mean) == 0, "mean");
    CHECK_RET(sample_tensor(invstd, wc, 2, ACL_FLOAT, 4, &d_invstd, &t_invstd) == 0, "invstd");
    CHECK_RET(sample_tensor(counts, w, 1, ACL_FLOAT, 4, &d_counts, &t_counts) == 0, "counts");
    CHECK_RET(sample_tensor(running_mean, c, 1, ACL_FLOAT, 4, &d_rm, &t_rm) == 0, "runningMean");
    CHECK_RET(sample_tensor(running_var, c, 1, ACL_FLOAT, 4, &d_rv, &t_rv) == 0, "runningVar");
    CHECK_RET(sample_tensor(zeros, c, 1, ACL_FLOAT, 4, &d_mean_all, &t_mean_all) == 0, "meanAll");
    CHECK_RET(sample_tensor(zeros, c, 1, ACL_FLOAT, 4, &d_invstd_all, &t_invstd_all) == 0, "invstdAll");

    CHECK_RET(aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
                  t_input, t_mean, t_invstd, t_rm, t_rv, 1e-2, 1e-4, t_counts, t_mean_all,
                  t_invstd_all, &workspace_size, &executor) == ACLNN_SUCCESS,
              "aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize");
    if (workspace_size > 0)
        CHECK_RET(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
                  "aclrtMalloc workspace");
    CHECK_RET(aclnnBatchNormGatherStatsWithCounts(workspace, workspace_size, executor, stream) ==
                  ACLNN_SUCCESS,
              "aclnnBatchNormGatherStatsWithCounts");
    CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");

    bad = sample_expect("meanAll", d_mean_all, want_mean_all, 4, 1e-6);
    bad += sample_expect("invstdAll", d_invstd_all, want_invstd_all, 4, 1e-6);
    bad += sample_expect("runningMean", d_rm, want_rm, 4, 1e-6);
    bad += sample_expect("runningVar", d_rv, want_rv, 4, 1e-6);

    aclDestroyTensor(t_input), aclDestroyTensor(t_mean), aclDestroyTensor(t_invstd);
    aclDestroyTensor(t_counts), aclDestroyTensor(t_rm), aclDestroyTensor(t_rv);
    aclDestroyTensor(t_mean_all), aclDestroyTensor(t_invstd_all);
    aclrtFree(d_input), aclrtFree(d_mean), aclrtFree(d_invstd), aclrtFree(d_counts);
    aclrtFree(d_rm), aclrtFree(d_rv), aclrtFree(d_mean_all), aclrtFree(d_invstd_all);
    if (workspace) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    printf("%s\n", bad ? "batch_norm_gather_stats_with_counts: MISMATCH"
                       : "batch_norm_gather_stats_with_counts: ok");
    return bad ? 1 : 0;
}
