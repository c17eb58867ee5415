// headers_and_delete.cpp - a C++ host program's view of syncbn's CANN headers: every
// header by CANN's name (acl/acl.h with acl_op.h, acl_mdl.h, acl_op_compiler.h,
// aclnn/aclnn_base.h, aclnnop/aclnn_util.h, the op headers at both include paths), the
// error codes as CANN declares them (`::ACL_SUCCESS`, `::ACL_ERROR_RT_PARAM_INVALID`
// are constants, not macros), and CANN's memory rule: the arrays aclGetViewShape,
// aclGetViewStrides and aclGetStorageShape return are released with delete[]. Built
// with -fsanitize=address, a getter array that did not come from operator new[] is
// reported as an alloc-dealloc mismatch and the program fails.
#include <cstdio>

#include "acl/acl.h"
#include "acl/acl_mdl.h"
#include "acl/acl_op.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_batch_norm_reduce.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "aclnnop/aclnn_fast_batch_norm_backward.h"
#include "aclnnop/aclnn_sync_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"
#include "aclnnop/aclnn_util.h"
#include "aclnnop/level2/aclnn_batch_norm.h"
#include "aclnnop/level2/aclnn_batch_norm_backward.h"
#include "aclnnop/level2/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/level2/aclnn_batch_norm_elemt.h"
#include "aclnnop/level2/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/level2/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/level2/aclnn_batch_norm_reduce.h"
#include "aclnnop/level2/aclnn_batch_norm_stats.h"
#include "aclnnop/level2/aclnn_fast_batch_norm_backward.h"
#include "aclnnop/level2/aclnn_sync_batch_norm_backward_reduce.h"
#include "aclnnop/level2/aclnn_sync_batch_norm_gather_stats.h"
#include "aclnnop/level2/aclnn_util.h"

// Qualified names only compile when the codes are declarations, not macros.
static const int k_codes[][2] = {
    {::ACL_SUCCESS, 0},
    {::ACL_ERROR_NONE, 0},
    {::ACL_ERROR_INVALID_PARAM, 100000},
    {::ACL_ERROR_REPEAT_INITIALIZE, 100002},
    {::ACL_ERROR_REPEAT_FINALIZE, 100037},
    {::ACL_ERROR_INVALID_BUNDLE_MODEL_ID, 148053},
    {::ACL_ERROR_BAD_ALLOC, 200000},
    {::ACL_ERROR_STORAGE_OVER_LIMIT, 300000},
    {::ACL_ERROR_PROFILING_FAILURE, 500005},
    {::ACL_RT_SUCCESS, 0},
    {::ACL_ERROR_RT_PARAM_INVALID, 107000},
    {::ACL_ERROR_RT_INVALID_HANDLE, 107017},
    {::ACL_ERROR_RT_MEMORY_ALLOCATION, 207001},
    {::ACL_ERROR_RT_INTERNAL_ERROR, 507000},
    {::ACL_OP_JIT_COMPILE, 10},
    {::ACL_ENGINE_VECTOR, 2},
};

int main()
{
    int bad = 0;
    for (const auto &code : k_codes)
        if (code[0] != code[1]) {
            std::printf("code %d, expected %d\n", code[0], code[1]);
            bad++;
        }

    const int64_t dims[3] = {2, 3, 4}, strides[3] = {12, 4, 1}, storage[1] = {30};
    float data[30] = {};
    aclTensor *t = aclCreateTensor(dims, 3, ACL_FLOAT, strides, 6, ACL_FORMAT_ND, storage, 1, data);
    if (t == nullptr) {
        std::printf("aclCreateTensor failed\n");
        return 1;
    }
    for (int round = 0; round < 3; round++) {
        int64_t *shape = nullptr, *got_strides = nullptr, *got_storage = nullptr;
        uint64_t n_shape = 0, n_strides = 0, n_storage = 0;
        if (aclGetViewShape(t, &shape, &n_shape) != ACLNN_SUCCESS ||
            aclGetViewStrides(t, &got_strides, &n_strides) != ACLNN_SUCCESS ||
            aclGetStorageShape(t, &got_storage, &n_storage) != ACLNN_SUCCESS) {
            std::printf("a getter failed: %s\n", aclGetRecentErrMsg());
            return 1;
        }
        if (n_shape != 3 || shape[0] != 2 || shape[2] != 4 || n_strides != 3 ||
            got_strides[0] != 12 || n_storage != 1 || got_storage[0] != 30)
            bad++;
        delete[] shape; // CANN's documented release
        delete[] got_strides;
        delete[] got_storage;
    }
    aclDestroyTensor(t);
    std::printf("%s\n", bad ? "headers_and_delete: MISMATCH" : "headers_and_delete: ok");
    return bad ? 1 : 0;
}
