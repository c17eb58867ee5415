/*
 * batch_norm_stats.c - the CANN aclnnBatchNormStats doc example as a CPU program:
 * input [[1,2,3],[4,5,6]], eps 1e-5 -> mean [2.5, 3.5, 4.5], invstd 0.666665185 each.
 */
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "common.h"

int main(void)
{
    int32_t device = 0;
    aclrtStream stream = NULL;
    int64_t in_shape[2] = {2, 3}, c_shape[1] = {3};
    float input[6] = {1, 2, 3, 4, 5, 6}, zeros[3] = {0, 0, 0};
    void *d_input = NULL, *d_mean = NULL, *d_invstd = NULL, *workspace = NULL;
    aclTensor *t_input = NULL, *t_mean = NULL, *t_invstd = NULL;
    aclOpExecutor *executor = NULL;
    uint64_t workspace_size = 0;
    const double want_mean[3] = {2.5, 3.5, 4.5};
    const double want_invstd[3] = {0.666665185, 0.666665185, 0.666665185};
    int bad;

    CHECK_RET(sample_init(device, &stream) == 0, "init");
    CHECK_RET(sample_tensor(input, in_shape, 2, ACL_FLOAT, 4, &d_input, &t_input) == 0, "input");
    CHECK_RET(sample_tensor(zeros, c_shape, 1, ACL_FLOAT, 4, &d_mean, &t_mean) == 0, "mean");
    CHECK_RET(sample_tensor(zeros, c_shape, 1, ACL_FLOAT, 4, &d_invstd, &t_invstd) == 0, "invstd");

    CHECK_RET(aclnnBatchNormStatsGetWorkspaceSize(t_input, 1e-5, t_mean, t_invstd, &workspace_size,
                                                  &executor) == ACLNN_SUCCESS,
              "aclnnBatchNormStatsGetWorkspaceSize");
    if (workspace_size > 0)
        CHECK_RET(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
                  "aclrtMalloc workspace");
    CHECK_RET(aclnnBatchNormStats(workspace, workspace_size, executor, stream) == ACLNN_SUCCESS,
              "aclnnBatchNormStats");
    CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");

    bad = sample_expect("mean", d_mean, want_mean, 3, 1e-6);
    bad += sample_expect("invstd", d_invstd, want_invstd, 3, 1e-6);

    aclDestroyTensor(t_input);
    aclDestroyTensor(t_mean);
    aclDestroyTensor(t_invstd);
    aclrtFree(d_input);
    aclrtFree(d_mean);
    aclrtFree(d_invstd);
    if (workspace) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    printf("%s\n", bad ? "batch_norm_stats: MISMATCH" : "batch_norm_stats: ok");
    return bad ? 1 : 0;
}
