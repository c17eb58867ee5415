/*
 * aclnn_op_common.c - the steps the nine op files (op_*.c) share around their own
 * checks and mapping: the workspaceSize/executor NULL checks (which CANN does not
 * make), eps and momentum against the native rules (phase 1 fails rather than
 * phase 2), the workspace size asked of the native op for a tensor's view (the
 * native sizes depend on the shape only, so a tensor whose data is still NULL is
 * sized as it is), the constant stride-0 default vectors (zeros, ones) that stand
 * for absent optional [C] tensors without allocating, the phase 2 that does
 * nothing (empty input, C == 0), and the phase-2 entry point. Building the
 * executor from an op's argument list is sbn__acl_exec_build (aclnn_executor.c).
 */
#include <math.h>
#include <stdint.h>

#include "aclnn_internal.h"

aclnnStatus sbn__acl_check_out_args(const char *op, const uint64_t *workspaceSize,
                                    aclOpExecutor *const *executor)
{
    SBN_ACL_TRY(sbn__acl_check_null(op, workspaceSize, "workspaceSize"));
    return sbn__acl_check_null(op, executor, "executor");
}

/* The native check's status, mapped (its sentence becomes the recent message). */
static aclnnStatus native_check(const char *op, sbn_status status)
{
    return status == SBN_OK ? ACLNN_SUCCESS : sbn__acl_from_native(status, op);
}

/*
 * The native ops' rules for eps and momentum, checked here so that phase 1 refuses
 * what phase 2's native op would (as CANN's phase 1 does); the native op checks them
 * again when it runs, which is where the rules live.
 */
aclnnStatus sbn__acl_check_eps(const char *op, double eps)
{
    if (!isfinite(eps) || eps < 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "eps is %.17g; expected a finite value >= 0", eps);
    return ACLNN_SUCCESS;
}

aclnnStatus sbn__acl_check_momentum(const char *op, double momentum)
{
    if (!isfinite(momentum) || momentum < 0 || momentum > 1)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "momentum is %.17g; expected a value in [0, 1]", momentum);
    return ACLNN_SUCCESS;
}

aclnnStatus sbn__acl_workspace_size(const char *op, sbn__acl_size_fn size_fn, const aclTensor *t,
                                    int channels_last, uint64_t *bytes)
{
    sbn_tensor view = sbn__acl_shape_view(t, channels_last); /* sizes depend on the shape */
    size_t native_bytes = 0;
    SBN_ACL_TRY(native_check(op, size_fn(&view, &native_bytes)));
    *bytes = (uint64_t)native_bytes;
    return ACLNN_SUCCESS;
}

static const double k_zero = 0.0, k_one = 1.0;

/* A read-only [c] vector of one value: a stride-0 view of a constant. */
static sbn_tensor constant_vector(const double *value, int64_t c)
{
    sbn_tensor t = sbn_tensor_1d((void *)(uintptr_t)value, SBN_F64, c);
    t.strides[0] = 0;
    return t;
}

sbn_tensor sbn__acl_zeros(int64_t c)
{
    return constant_vector(&k_zero, c);
}

sbn_tensor sbn__acl_ones(int64_t c)
{
    return constant_vector(&k_one, c);
}

aclnnStatus sbn__acl_run_nothing(aclOpExecutor *executor, void *workspace,
                                 uint64_t workspace_size)
{
    (void)executor;
    (void)workspace;
    (void)workspace_size;
    return ACLNN_SUCCESS;
}

aclnnStatus sbn__acl_phase2(const char *op, void *workspace, uint64_t workspace_size,
                            aclOpExecutor *executor, aclrtStream stream)
{
    sbn__acl_clear_error();
    return sbn__acl_exec_run(op, workspace, workspace_size, executor, stream);
}
