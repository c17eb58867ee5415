// sync_batch_norm_gather_stats.cpp - the CANN aclnnSyncBatchNormGatherStats doc
// example as a C++ CPU program: sums [300,400], squares [300,400], count [400]
// (INT32), mean = var = [400,400], momentum 0.1, eps 1e-5 -> batchMean [0.75, 1.0],
// batchInvstd [2.30933950, 316.227766], mean [360.075, 360.1],
// variance [360.018797, 360.0].
#include <cstdio>
#include <vector>

#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"
#include "common.h"

int main()
{
    int32_t device = 0;
    aclrtStream stream = nullptr;
    std::vector<int64_t> wc = {1, 2}, w = {1}, c = {2};
    std::vector<float> sum = {300, 400}, square = {300, 400}, running_mean = {400, 400},
                       running_var = {400, 400}, out = {0, 0};
    std::vector<int32_t> count = {400};
    void *d_sum = nullptr, *d_square = nullptr, *d_count = nullptr, *d_mean = nullptr,
         *d_var = nullptr, *d_bmean = nullptr, *d_binvstd = nullptr, *workspace = nullptr;
    aclTensor *t_sum = nullptr, *t_square = nullptr, *t_count = nullptr, *t_mean = nullptr,
              *t_var = nullptr, *t_bmean = nullptr, *t_binvstd = nullptr;
    aclOpExecutor *executor = nullptr;
    uint64_t workspace_size = 0;

    CHECK_RET(sample_init(device, &stream) == 0, "init");
    CHECK_RET(sample_tensor(sum.data(), wc.data(), 2, ACL_FLOAT, 4, &d_sum, &t_sum) == 0, "sum");
    CHECK_RET(sample_tensor(square.data(), wc.data(), 2, ACL_FLOAT, 4, &d_square, &t_square) == 0, "square");
    CHECK_RET(sample_tensor(count.data(), w.data(), 1, ACL_INT32, 4, &d_count, &t_count) == 0, "count");
    CHECK_RET(sample_tensor(running_mean.data(), c.data(), 1, ACL_FLOAT, 4, &d_mean, &t_mean) == 0, "mean");
    CHECK_RET(sample_tensor(running_var.data(), c.data(), 1, ACL_FLOAT, 4, &d_var, &t_var) == 0, "variance");
    CHECK_RET(sample_tensor(out.data(), c.data(), 1, ACL_FLOAT, 4, &d_bmean, &t_bmean) == 0, "batchMean");
    CHECK_RET(sample_tensor(out.data(), c.data(), 1, ACL_FLOAT, 4, &d_binvstd, &t_binvstd) == 0, "batchInvstd");

    CHECK_RET(aclnnSyncBatchNormGatherStatsGetWorkspaceSize(t_sum, t_square, t_count, t_mean, t_var,
                                                            0.1f, 1e-5f, t_bmean, t_binvstd,
                                                            &workspace_size, &executor) == ACLNN_SUCCESS,
              "aclnnSyncBatchNormGatherStatsGetWorkspaceSize");
    if (workspace_size > 0)
        CHECK_RET(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
                  "aclrtMalloc workspace");
    CHECK_RET(aclnnSyncBatchNormGatherStats(workspace, workspace_size, executor, stream) == ACLNN_SUCCESS,
              "aclnnSyncBatchNormGatherStats");
    CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");

    const double want_bmean[2] = {0.75, 1.0}, want_binvstd[2] = {2.30933950, 316.227766};
    const double want_mean[2] = {360.075, 360.1}, want_var[2] = {360.018797, 360.0};
    int bad = sample_expect("batchMean", d_bmean, want_bmean, 2, 1e-6);
    bad += sample_expect("batchInvstd", d_binvstd, want_binvstd, 2, 1e-6);
    bad += sample_expect("mean", d_mean, want_mean, 2, 1e-6);
    bad += sample_expect("variance", d_var, want_var, 2, 1e-6);

    for (aclTensor *t : {t_sum, t_square, t_count, t_mean, t_var, t_bmean, t_binvstd}) aclDestroyTensor(t);
    for (void *p : {d_sum, d_square, d_count, d_mean, d_var, d_bmean, d_binvstd}) aclrtFree(p);
    if (workspace) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    std::printf("%s\n", bad ? "sync_batch_norm_gather_stats: MISMATCH" : "sync_batch_norm_gather_stats: ok");
    return bad ? 1 : 0;
}
