/*
 * common.h - the helpers every sample uses, in the style of the CANN aclnn
 * samples: a CHECK_RET macro, acl init/finalize with a stream, and a tensor made
 * from host data (aclrtMalloc, aclrtMemcpy host to device, aclCreateTensor with
 * contiguous strides). Valid C and C++; each sample is built with the CANN link
 * line: -lascendcl -lnnopbase -lopapi.
 */
#ifndef SYNCBN_SAMPLES_COMMON_H
#define SYNCBN_SAMPLES_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

#define CHECK_RET(cond, what)                                              \
    do {                                                                   \
        if (!(cond)) {                                                     \
            const char *msg_ = aclGetRecentErrMsg();                       \
            printf("%s failed: %s\n", what, msg_ ? msg_ : "(no message)"); \
            return 1;                                                      \
        }                                                                  \
    } while (0)

static int sample_init(int32_t device, aclrtStream *stream)
{
    CHECK_RET(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    CHECK_RET(aclrtSetDevice(device) == ACL_SUCCESS, "aclrtSetDevice");
    CHECK_RET(aclrtCreateStream(stream) == ACL_SUCCESS, "aclrtCreateStream");
    return 0;
}

/* A float32 (or other 4-byte) tensor of `rank` dims over a device copy of host_data. */
static int sample_tensor(const void *host_data, const int64_t *shape, uint64_t rank,
                         aclDataType dtype, size_t elem_size, void **device, aclTensor **tensor)
{
    int64_t strides[8], numel = 1;
    size_t bytes;
    int d;
    for (d = (int)rank - 1; d >= 0; d--) {
        strides[d] = numel;
        numel *= shape[d];
    }
    bytes = (size_t)numel * elem_size;
    CHECK_RET(aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    CHECK_RET(aclrtMemcpy(*device, bytes, host_data, bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS,
              "aclrtMemcpy");
    *tensor = aclCreateTensor(shape, rank, dtype, strides, 0, ACL_FORMAT_ND, shape, rank, *device);
    CHECK_RET(*tensor != NULL, "aclCreateTensor");
    return 0;
}

/* Copies n floats back and compares them with want (relative tolerance tol); prints both. */
static int sample_expect(const char *name, const void *device, const double *want, int n,
                         double tol)
{
    float got[64];
    int i, bad = 0;
    if (aclrtMemcpy(got, sizeof got, device, (size_t)n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST) !=
        ACL_SUCCESS) {
        printf("%s: copy back failed\n", name);
        return 1;
    }
    for (i = 0; i < n; i++) {
        int ok = fabs((double)got[i] - want[i]) <= tol * fabs(want[i]) + 1e-12;
        printf("%s[%d] = %.9g (expected %.9g)%s\n", name, i, got[i], want[i], ok ? "" : "  MISMATCH");
        bad += !ok;
    }
    return bad;
}

#endif
