/*
 * fuzz_aclnn_phase2.c - a libFuzzer target that drives the nine aclnn ops through
 * both phases over guarded buffers. The input bytes choose the op, a consistent
 * base shape (N, C, spatial dims, W ranks; channels-first or NHWC) and then, per
 * tensor argument, how it departs from it: absent, another dim or a huge one,
 * padded, zero or swapped strides, an offset (small or huge), a storage that is
 * exact, too small or larger, given as the view dims or as one flat dim, data set
 * at creation, later through aclSetTensorAddr, or never, a misaligned address, and
 * another dtype or format. Each tensor's storage sits inside its own malloc'ed
 * arena with guard bytes on both sides; inputs hold whole numbers, outputs and
 * guards a sentinel. After the calls, every arena is compared with its snapshot:
 * a byte may change only when a phase 2 succeeded and the byte belongs to an
 * element of a written tensor's view inside its storage; when every call was
 * refused, no byte may change at all. A violation abort()s so libFuzzer reports
 * it (ASan reports an access outside an arena). Also: a destroyed tensor handle
 * must be refused by a second destroy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_batch_norm.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_backward_reduce.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"
#include "aclnnop/aclnn_batch_norm_reduce.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "aclnnop/aclnn_sync_batch_norm_gather_stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 11
#define MAX_RANK 8
#define GUARD 64
#define MAX_STORAGE 4096   /* elements */
#define MAX_MARKED 1000000 /* elements walked to mark a view's bytes */
#define SENTINEL 0xA5

typedef struct reader {
    const uint8_t *data;
    size_t size, pos;
} reader;

static unsigned next(reader *r)
{
    return r->pos < r->size ? r->data[r->pos++] : 0u;
}

/* The role of an argument: its base shape, and whether the op may write it. */
typedef enum role { ROLE_X, ROLE_V, ROLE_M, ROLE_K } role;
typedef struct arg_spec {
    role shape;
    int written;  /* an output, or a running statistic updated in place */
    int optional; /* NULL is a valid value */
} arg_spec;

typedef struct op_spec {
    int nargs;
    arg_spec args[MAX_ARGS];
} op_spec;

#define X_IN {ROLE_X, 0, 0}
#define X_OUT {ROLE_X, 1, 0}
#define V_IN {ROLE_V, 0, 0}
#define V_OPT {ROLE_V, 0, 1}
#define V_OUT {ROLE_V, 1, 0}
#define V_RUN {ROLE_V, 1, 1} /* optional running statistic, updated in place */
#define M_IN {ROLE_M, 0, 0}
#define K_IN {ROLE_K, 0, 0}

static const op_spec k_ops[9] = {
    /* 0 Stats: input, mean, invstd */
    {3, {X_IN, V_OUT, V_OUT}},
    /* 1 GatherStatsWithCounts: input, mean, invstd, runningMean, runningVar, counts,
       meanAll, invstdAll */
    {8, {X_IN, M_IN, M_IN, V_RUN, V_RUN, K_IN, V_OUT, V_OUT}},
    /* 2 SyncGatherStats: totalSum, totalSquareSum, sampleCount, mean, variance, batchMean,
       batchInvstd */
    {7, {M_IN, M_IN, K_IN, {ROLE_V, 1, 0}, {ROLE_V, 1, 0}, V_OUT, V_OUT}},
    /* 3 Elemt: input, weight, bias, mean, invstd, output */
    {6, {X_IN, V_OPT, V_OPT, V_IN, V_IN, X_OUT}},
    /* 4 ReduceBackward: gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, gradWeight,
       gradBias */
    {9, {X_IN, X_IN, V_IN, V_IN, V_OPT, V_OUT, V_OUT, V_OUT, V_OUT}},
    /* 5 ElemtBackward: gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter,
       gradInput */
    {9, {X_IN, X_IN, V_IN, V_IN, V_OPT, V_IN, V_IN, K_IN, X_OUT}},
    /* 6 BatchNorm: input, weight, bias, runningMean, runningVar, output, saveMean,
       saveInvstd */
    {8, {X_IN, V_OPT, V_OPT, V_RUN, V_RUN, X_OUT, V_OUT, V_OUT}},
    /* 7 BatchNormBackward: gradOut, input, weight, runningMean, runningVar, saveMean,
       saveInvstd, gradInput, gradWeight, gradBias */
    {10, {X_IN, X_IN, V_OPT, V_OPT, V_OPT, V_OPT, V_OPT, X_OUT, V_OUT, V_OUT}},
    /* 8 Reduce: x, sum, squareSum */
    {3, {X_IN, V_OUT, V_OUT}},
};

typedef struct tensor_case {
    aclTensor *t;
    unsigned char *arena, *before; /* arena: GUARD | storage | GUARD (+ misalignment) */
    size_t arena_bytes;
    unsigned char *storage; /* where the storage starts inside the arena */
    int64_t dims[MAX_RANK], strides[MAX_RANK], offset, storage_numel;
    int rank, written, set_later;
    size_t es;
} tensor_case;

typedef struct base_shape {
    int64_t n, c, w, spatial[3];
    int nspatial, nhwc;
} base_shape;

static size_t dtype_size(aclDataType dt)
{
    switch (dt) {
    case ACL_FLOAT16: case ACL_BF16: return 2;
    case ACL_DOUBLE: case ACL_INT64: return 8;
    case ACL_INT8: return 1;
    default: return 4;
    }
}

/* Writes the whole number 64 in dtype dt at p (the value every input holds). */
static void store_input_value(unsigned char *p, aclDataType dt)
{
    const float f = 64.0f;
    const double d = 64.0;
    const int32_t i32 = 64;
    const int64_t i64 = 64;
    const uint16_t f16 = 0x5400, bf16 = 0x4280; /* 64.0 */
    switch (dt) {
    case ACL_FLOAT16: memcpy(p, &f16, 2); break;
    case ACL_BF16: memcpy(p, &bf16, 2); break;
    case ACL_DOUBLE: memcpy(p, &d, 8); break;
    case ACL_INT32: memcpy(p, &i32, 4); break;
    case ACL_INT64: memcpy(p, &i64, 8); break;
    case ACL_INT8: *p = 64; break;
    default: memcpy(p, &f, 4); break;
    }
}

/* The base dims of a role. */
static int base_dims(role r, const base_shape *b, int64_t *dims)
{
    int k, rank = 0;
    switch (r) {
    case ROLE_X:
        dims[rank++] = b->n;
        if (!b->nhwc) dims[rank++] = b->c;
        for (k = 0; k < b->nspatial; k++) dims[rank++] = b->spatial[k];
        if (b->nhwc) dims[rank++] = b->c;
        return rank;
    case ROLE_V: dims[0] = b->c; return 1;
    case ROLE_M: dims[0] = b->w, dims[1] = b->c; return 2;
    default: dims[0] = b->w; return 1;
    }
}

/* 1 + the highest element the view reaches, or -1 when it overflows or is huge. */
static int64_t view_span(const tensor_case *tc)
{
    int64_t hi = 0, span;
    int d;
    for (d = 0; d < tc->rank; d++) {
        if (tc->dims[d] == 0) return 0;
        if (__builtin_mul_overflow(tc->dims[d] - 1, tc->strides[d], &span) ||
            __builtin_add_overflow(hi, span, &hi))
            return -1;
    }
    if (__builtin_add_overflow(hi, tc->offset, &hi) || hi >= ((int64_t)1 << 40)) return -1;
    return hi + 1;
}

/* Builds argument k of the op; NULL when the bytes make it absent. */
static void make_tensor(reader *r, tensor_case *tc, const arg_spec *spec, const base_shape *b,
                        int nhwc_format)
{
    static const aclDataType other_dtypes[] = {ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_DOUBLE,
                                               ACL_INT8};
    unsigned m = next(r), how = next(r), pick = next(r);
    aclDataType dt = ACL_FLOAT;
    aclFormat fmt = ACL_FORMAT_ND;
    int64_t sdims[MAX_RANK], need, numel, step;
    uint64_t sdims_n;
    size_t misalign = 0, i;
    int d;

    memset(tc, 0, sizeof *tc);
    tc->written = spec->written;
    if ((spec->optional && m % 8 == 0) || m == 255) return; /* absent (or a NULL required) */
    tc->rank = base_dims(spec->shape, b, tc->dims);
    if (how % 11 == 1) tc->dims[pick % tc->rank] = pick % 7;                 /* another dim */
    if (how % 23 == 2) tc->dims[pick % tc->rank] = (int64_t)1 << (32 + pick % 28); /* huge */
    if (how % 29 == 3 && tc->rank < MAX_RANK) tc->dims[tc->rank++] = 1 + pick % 2; /* rank */
    if (m % 5 == 1) dt = other_dtypes[pick % 5];
    if (tc->rank == 4 && spec->shape == ROLE_X)
        fmt = nhwc_format ? ACL_FORMAT_NHWC : ACL_FORMAT_NCHW;
    if (tc->rank == 5 && spec->shape == ROLE_X) fmt = ACL_FORMAT_NCDHW;
    if (m % 37 == 2) fmt = ACL_FORMAT_NC1HWC0;
    tc->es = dtype_size(dt);
    /* strides: contiguous, then a departure */
    step = 1;
    for (d = tc->rank - 1; d >= 0; d--) {
        tc->strides[d] = step;
        if (tc->dims[d] > 0 && __builtin_mul_overflow(step, tc->dims[d], &step))
            step = (int64_t)1 << 62;
    }
    switch (how % 7) {
    case 1: tc->strides[pick % tc->rank] *= 2; break;                         /* padded */
    case 2: tc->strides[pick % tc->rank] = 0; break;                          /* broadcast */
    case 3:
        if (tc->rank >= 2) { /* swapped */
            int64_t s = tc->strides[0];
            tc->strides[0] = tc->strides[tc->rank - 1], tc->strides[tc->rank - 1] = s;
        }
        break;
    default: break;
    }
    /* a huge dim of stride 0 would be a valid view of billions of elements: too slow */
    for (d = 0; d < tc->rank; d++)
        if (tc->dims[d] > MAX_STORAGE && tc->strides[d] == 0) tc->strides[d] = 1;
    switch (m % 13) {
    case 3: tc->offset = pick % 9; break;
    case 4: tc->offset = INT64_MAX - (int64_t)(pick % 4); break;
    case 5: tc->offset = (int64_t)1 << (40 + pick % 23); break;
    default: tc->offset = 0; break;
    }
    /* storage: what the view needs, then too small or larger */
    need = view_span(tc);
    if (need < 0 || need > MAX_STORAGE) need = 1 + pick % 16; /* the view cannot fit */
    numel = need;
    if (how % 5 == 4) numel = numel > (int64_t)(1 + pick % 3) ? numel - (1 + pick % 3) : 0;
    if (how % 9 == 5) numel += pick % 5;
    tc->storage_numel = numel;
    /* as the view dims when they describe exactly that, else one flat dim */
    sdims_n = 1;
    sdims[0] = numel;
    if (m % 3 == 0 && tc->offset == 0) {
        int64_t prod = 1;
        for (d = 0; d < tc->rank; d++)
            prod *= tc->dims[d] < MAX_STORAGE ? tc->dims[d] : MAX_STORAGE + 1;
        if (prod == numel) {
            sdims_n = (uint64_t)tc->rank;
            memcpy(sdims, tc->dims, sizeof(int64_t) * (size_t)tc->rank);
        }
    }
    if (m % 17 == 6 && tc->es > 1) misalign = tc->es / 2;
    tc->arena_bytes = 2 * GUARD + misalign + (size_t)numel * tc->es;
    tc->arena = (unsigned char *)malloc(tc->arena_bytes);
    tc->before = (unsigned char *)malloc(tc->arena_bytes);
    if (tc->arena == NULL || tc->before == NULL) abort();
    memset(tc->arena, SENTINEL, tc->arena_bytes);
    tc->storage = tc->arena + GUARD + misalign;
    if (!tc->written)
        for (i = 0; i < (size_t)numel; i++) store_input_value(tc->storage + i * tc->es, dt);
    memcpy(tc->before, tc->arena, tc->arena_bytes);
    tc->set_later = m % 11 == 7 ? 1 : m % 41 == 8 ? 2 : 0; /* 1: aclSetTensorAddr, 2: never */
    tc->t = aclCreateTensor(tc->dims, (uint64_t)tc->rank, dt, tc->strides, tc->offset, fmt,
                            sdims, sdims_n, tc->set_later ? NULL : tc->storage);
}

/* Marks the bytes of every element of tc's view that lie inside its storage. */
static void mark_view(const tensor_case *tc, unsigned char *legit)
{
    int64_t idx[MAX_RANK] = {0}, count = 1, k, off, step;
    int d, fits;
    for (d = 0; d < tc->rank; d++) {
        if (tc->dims[d] == 0) return;
        if (tc->dims[d] > MAX_MARKED / count) return; /* too many to walk: nothing is legit */
        count *= tc->dims[d];
    }
    for (k = 0; k < count; k++) {
        /* (a disabled output is not checked by the op: its offset may be anything) */
        off = tc->offset;
        for (fits = 1, d = 0; d < tc->rank && fits; d++)
            fits = !__builtin_mul_overflow(idx[d], tc->strides[d], &step) &&
                   !__builtin_add_overflow(off, step, &off);
        if (fits && off >= 0 && off < tc->storage_numel)
            memset(legit + (tc->storage - tc->arena) + (size_t)off * tc->es, 1, tc->es);
        for (d = tc->rank - 1; d >= 0; d--) {
            if (++idx[d] < tc->dims[d]) break;
            idx[d] = 0;
        }
    }
}

static void violation(const char *what, int op, int arg, size_t byte)
{
    fprintf(stderr, "fuzz_aclnn_phase2: op %d, argument %d, arena byte %zu: %s\n", op, arg,
            byte, what);
    abort();
}

typedef aclnnStatus (*phase2_fn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

static aclnnStatus run_phase1(int op, aclTensor **t, double eps, double momentum,
                              const bool *flags, aclBoolArray *mask, uint64_t *ws,
                              aclOpExecutor **e)
{
    switch (op) {
    case 0: return aclnnBatchNormStatsGetWorkspaceSize(t[0], eps, t[1], t[2], ws, e);
    case 1:
        return aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
            t[0], t[1], t[2], t[3], t[4], momentum, eps, t[5], t[6], t[7], ws, e);
    case 2:
        return aclnnSyncBatchNormGatherStatsGetWorkspaceSize(
            t[0], t[1], t[2], t[3], t[4], (float)momentum, (float)eps, t[5], t[6], ws, e);
    case 3:
        return aclnnBatchNormElemtGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], eps, t[5], ws, e);
    case 4:
        return aclnnBatchNormReduceBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], flags[0],
                                                            flags[1], flags[2], t[5], t[6], t[7],
                                                            t[8], ws, e);
    case 5:
        return aclnnBatchNormElemtBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5],
                                                           t[6], t[7], t[8], ws, e);
    case 6:
        return aclnnBatchNormGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], flags[0], momentum,
                                              eps, t[5], t[6], t[7], ws, e);
    case 7:
        return aclnnBatchNormBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6],
                                                      flags[0], eps, mask, t[7], t[8], t[9], ws, e);
    default: return aclnnBatchNormReduceGetWorkspaceSize(t[0], t[1], t[2], ws, e);
    }
}

static const phase2_fn k_phase2[9] = {
    aclnnBatchNormStats,         aclnnBatchNormGatherStatsWithCounts,
    aclnnSyncBatchNormGatherStats, aclnnBatchNormElemt,
    aclnnBatchNormReduceBackward, aclnnBatchNormElemtBackward,
    aclnnBatchNorm,              aclnnBatchNormBackward,
    aclnnBatchNormReduce};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const double scalars[] = {1e-5, 0.1, 0.0, 1.0, -1.0, 0.5, 1e300};
    reader r = {data, size, 0};
    tensor_case tc[MAX_ARGS];
    aclTensor *t[MAX_ARGS];
    base_shape b;
    aclOpExecutor *e = NULL;
    aclBoolArray *mask = NULL;
    uint64_t ws_size = 0;
    void *ws = NULL;
    unsigned op = next(&r) % 9, shape = next(&r), flag_bits = next(&r);
    bool flags[3] = {(flag_bits & 1) != 0, (flag_bits & 2) != 0, (flag_bits & 4) != 0};
    double eps = scalars[next(&r) % 7], momentum = scalars[next(&r) % 7];
    int k, nargs = k_ops[op].nargs, repeatable = (flag_bits & 8) != 0, succeeded = 0;
    aclnnStatus s;
    size_t i;

    memset(&b, 0, sizeof b);
    b.n = shape % 4;          /* 0..3: empty batches too */
    b.c = 1 + (shape >> 2) % 5;
    b.w = 1 + (shape >> 5) % 3;
    b.nspatial = (int)(next(&r) % 4);
    for (k = 0; k < b.nspatial; k++) b.spatial[k] = 1 + next(&r) % 4;
    b.nhwc = b.nspatial == 2 && (flag_bits & 16) != 0 && (op == 6 || op == 7 || op == 8);
    for (k = 0; k < nargs; k++) {
        make_tensor(&r, &tc[k], &k_ops[op].args[k], &b, b.nhwc);
        t[k] = tc[k].t;
    }
    if (op == 7 && (flag_bits & 32) == 0) mask = aclCreateBoolArray(flags, 3);

    s = run_phase1((int)op, t, eps, momentum, flags, mask, &ws_size, &e);
    if (s == ACLNN_SUCCESS) {
        for (k = 0; k < nargs; k++)
            if (tc[k].t != NULL && tc[k].set_later == 1)
                aclSetTensorAddr(e, 0, tc[k].t, tc[k].storage);
        if (repeatable) aclSetAclOpExecutorRepeatable(e);
        if (ws_size > 0 && ws_size <= ((uint64_t)1 << 26)) ws = malloc(ws_size);
        if (ws_size > 0 && ws == NULL) {
            aclDestroyAclOpExecutor(e);
        } else {
            succeeded = k_phase2[op](ws, ws_size, e, NULL) == ACLNN_SUCCESS;
            if (repeatable) {
                succeeded |= k_phase2[op](ws, ws_size, e, NULL) == ACLNN_SUCCESS;
                aclDestroyAclOpExecutor(e);
            }
        }
        free(ws);
    }

    for (k = 0; k < nargs; k++) {
        unsigned char *legit;
        if (tc[k].arena == NULL) continue;
        legit = (unsigned char *)calloc(tc[k].arena_bytes, 1);
        if (legit == NULL) abort();
        if (succeeded && tc[k].written) mark_view(&tc[k], legit);
        for (i = 0; i < tc[k].arena_bytes; i++)
            if (tc[k].arena[i] != tc[k].before[i] && !legit[i])
                violation(succeeded ? "a byte outside the written views changed"
                                    : "a byte changed although every call was refused",
                          (int)op, k, i);
        free(legit);
    }
    if (mask) aclDestroyBoolArray(mask);
    for (k = 0; k < nargs; k++) {
        if (tc[k].t != NULL && aclDestroyTensor(tc[k].t) != ACLNN_SUCCESS)
            violation("destroying a live tensor failed", (int)op, k, 0);
        if (tc[k].t != NULL && aclDestroyTensor(tc[k].t) != ACLNN_ERR_PARAM_INVALID)
            violation("a destroyed tensor was destroyed again", (int)op, k, 0);
        free(tc[k].arena);
        free(tc[k].before);
    }
    return 0;
}
