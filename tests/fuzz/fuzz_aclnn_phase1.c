/*
 * fuzz_aclnn_phase1.c - a libFuzzer target over the phase-1 argument space of the
 * nine aclnn ops: the input bytes choose the op, and for every tensor argument
 * whether it is NULL, its rank (0..10), dims (small, zero or huge), strides
 * (positive, zero, negative), offset, dtype (valid and invalid values) and format
 * (public and private), plus the scalars (NaN and Inf included) and NULL
 * workspaceSize/executor pointers. Phase 1 must return a status, never crash,
 * leak or read out of bounds. When phase 1 succeeds and every tensor's extent lies
 * inside its own data buffer, phase 2 runs too (ASan checks every access);
 * otherwise the executor is destroyed.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_batch_norm_reduce.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"

#define MAX_TENSORS 12
#define BUFFER_BYTES 4096 /* each tensor gets its own buffer */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
    const uint8_t *data;
    size_t size, pos;
} reader;

static unsigned next(reader *r)
{
    return r->pos < r->size ? r->data[r->pos++] : 0u;
}

static double next_scalar(reader *r)
{
    static const double specials[] = {1e-5, 0.1, 0.0, 1.0, -1.0, NAN, INFINITY, 1e300, 0.5, 1e-3};
    return specials[next(r) % (sizeof specials / sizeof specials[0])];
}

typedef struct fuzz_state {
    aclTensor *tensors[MAX_TENSORS];
    int in_bounds[MAX_TENSORS];
    int count;
    _Alignas(64) unsigned char buffer[MAX_TENSORS][BUFFER_BYTES];
} fuzz_state;

static size_t dtype_bytes(aclDataType dt)
{
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: return 8;
    default: return 1;
    }
}

/* A tensor chosen by the bytes, or NULL; records whether its extent fits the buffer. */
static aclTensor *make_tensor(reader *r, fuzz_state *st, int channels)
{
    static const aclDataType dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_DOUBLE,
                                         ACL_INT64, ACL_INT8, ACL_BOOL, (aclDataType)99,
                                         ACL_DT_UNDEFINED};
    static const aclFormat formats[] = {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC,
                                        ACL_FORMAT_NCDHW, ACL_FORMAT_NC1HWC0, ACL_FORMAT_NC,
                                        ACL_FORMAT_NCL, ACL_FORMAT_FRACTAL_NZ, (aclFormat)77};
    int64_t dims[10], strides[10], offset, low = 0, high = 0, stride = 1;
    uint64_t rank;
    unsigned mode = next(r);
    aclDataType dt;
    aclFormat fmt;
    size_t es;
    aclTensor *t;
    int d, fits;

    if (st->count >= MAX_TENSORS || mode % 8 == 0) return NULL;
    rank = next(r) % 11;
    dt = dtypes[next(r) % (sizeof dtypes / sizeof dtypes[0])];
    fmt = formats[next(r) % (sizeof formats / sizeof formats[0])];
    es = dtype_bytes(dt);
    for (d = (int)rank - 1; d >= 0; d--) {
        unsigned b = next(r);
        if (b % 16 == 0)
            dims[d] = 0;
        else if (b % 16 == 1)
            dims[d] = (int64_t)1 << (30 + b % 31); /* huge */
        else if (d == 1 || (rank == 1 && b % 2))
            dims[d] = channels;
        else
            dims[d] = 1 + b % 5;
        strides[d] = stride;
        if (dims[d] > 0 && __builtin_mul_overflow(stride, dims[d], &stride))
            stride = (int64_t)1 << 62; /* saturate: the tensor is too large to fit anyway */
    }
    if (mode % 8 == 1 && rank > 0) strides[rank - 1] = 0;
    if (mode % 8 == 2 && rank > 0) strides[0] = -strides[0];
    if (mode % 8 == 3 && rank > 0) strides[rank - 1] = 2;
    offset = mode % 8 == 4 ? (int64_t)(next(r) % 64) : 0;
    fits = 1;
    for (d = 0; d < (int)rank; d++) {
        int64_t span = 0;
        if (dims[d] > 0 && __builtin_mul_overflow(dims[d] - 1, strides[d], &span)) fits = 0;
        if (span < -((int64_t)1 << 40) || span > ((int64_t)1 << 40)) fits = 0;
        if (!fits) break;
        if (span < 0) low += span;
        else high += span;
    }
    fits = fits && offset + low >= 0 && (offset + high + 1) * (int64_t)es <= BUFFER_BYTES;
    t = aclCreateTensor(rank ? dims : NULL, rank, dt, rank ? strides : NULL, offset, fmt,
                        rank ? dims : NULL, rank, st->buffer[st->count]);
    if (t == NULL) return NULL;
    st->in_bounds[st->count] = fits;
    st->tensors[st->count++] = t;
    return t;
}

static int all_in_bounds(const fuzz_state *st)
{
    int i;
    for (i = 0; i < st->count; i++)
        if (!st->in_bounds[i]) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_state st;
    reader r = {data, size, 0};
    aclTensor *t[MAX_TENSORS];
    aclOpExecutor *executor = NULL;
    uint64_t ws_size = 0;
    unsigned op = next(&r) % 9, nulls = next(&r);
    uint64_t *ws_ptr = nulls & 1 ? NULL : &ws_size;
    aclOpExecutor **ex_ptr = nulls & 2 ? NULL : &executor;
    int channels = 1 + (int)(next(&r) % 4), i;
    double eps = next_scalar(&r), momentum = next_scalar(&r);
    bool flags[3] = {(nulls & 4) != 0, (nulls & 8) != 0, (nulls & 16) != 0};
    aclBoolArray *mask = NULL;
    aclnnStatus s = -1;

    memset(st.tensors, 0, sizeof st.tensors);
    st.count = 0;
    for (i = 0; i < MAX_TENSORS; i++) t[i] = make_tensor(&r, &st, channels);
    if (nulls & 32) mask = aclCreateBoolArray(flags, 1 + next(&r) % 3);

    switch (op) {
    case 0: s = aclnnBatchNormStatsGetWorkspaceSize(t[0], eps, t[1], t[2], ws_ptr, ex_ptr); break;
    case 1:
        s = aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], momentum,
                                                                eps, t[5], t[6], t[7], ws_ptr, ex_ptr);
        break;
    case 2:
        s = aclnnSyncBatchNormGatherStatsGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], (float)momentum,
                                                          (float)eps, t[5], t[6], ws_ptr, ex_ptr);
        break;
    case 3:
        s = aclnnBatchNormElemtGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], eps, t[5], ws_ptr, ex_ptr);
        break;
    case 4:
        s = aclnnBatchNormReduceBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], flags[0], flags[1],
                                                         flags[2], t[5], t[6], t[7], t[8], ws_ptr,
                                                         ex_ptr);
        break;
    case 5:
        s = aclnnBatchNormElemtBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7],
                                                        t[8], ws_ptr, ex_ptr);
        break;
    case 6:
        s = aclnnBatchNormGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], flags[0], momentum, eps, t[5],
                                           t[6], t[7], ws_ptr, ex_ptr);
        break;
    case 7:
        s = aclnnBatchNormBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], flags[0],
                                                   eps, mask, t[7], t[8], t[9], ws_ptr, ex_ptr);
        break;
    default: s = aclnnBatchNormReduceGetWorkspaceSize(t[0], t[1], t[2], ws_ptr, ex_ptr); break;
    }

    if (s == ACLNN_SUCCESS && ex_ptr != NULL && executor != NULL) {
        void *workspace = ws_size > 0 && ws_size <= (1u << 24) ? malloc(ws_size) : NULL;
        if (all_in_bounds(&st) && (ws_size == 0 || workspace != NULL)) {
            /* the same phase 2 for every op: they share one signature */
            aclnnStatus (*phase2[])(void *, uint64_t, aclOpExecutor *, aclrtStream) = {
                aclnnBatchNormStats, aclnnBatchNormGatherStatsWithCounts, NULL, aclnnBatchNormElemt,
                aclnnBatchNormReduceBackward, aclnnBatchNormElemtBackward, aclnnBatchNorm,
                aclnnBatchNormBackward, aclnnBatchNormReduce};
            if (op == 2)
                aclnnSyncBatchNormGatherStats(workspace, ws_size, executor, NULL);
            else
                phase2[op](workspace, ws_size, executor, NULL);
        } else {
            aclDestroyAclOpExecutor(executor);
        }
        free(workspace);
    }
    if (mask) aclDestroyBoolArray(mask);
    for (i = 0; i < st.count; i++) aclDestroyTensor(st.tensors[i]);
    return 0;
}
