/*
 * tensor.c - element types (their sizes and names) and tensor views: constructors
 * for the common views (contiguous, channels-last, 1-D) and the element count of a
 * view. Converting elements is the kernels' (src/kernels/convert.c).
 */
#include <string.h>

#include "core/arith.h"
#include "core/export.h"
#include "core/tensor.h"
#include "syncbn/syncbn.h"

static sbn_tensor empty_view(void *data, sbn_dtype dtype, int rank, const int64_t *shape)
{
    sbn_tensor t;
    int d;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.rank = rank;
    if (rank < 0 || rank > SBN_MAX_RANK || shape == NULL) return t;
    for (d = 0; d < rank; d++) t.shape[d] = shape[d];
    return t;
}

SBN_API sbn_tensor sbn_tensor_contiguous(void *data, sbn_dtype dtype, int rank,
                                         const int64_t *shape)
{
    sbn_tensor t = empty_view(data, dtype, rank, shape);
    int64_t stride = 1;
    int d;
    if (rank < 0 || rank > SBN_MAX_RANK || shape == NULL) return t;
    for (d = rank - 1; d >= 0; d--) {
        t.strides[d] = stride;
        /* a shape whose element count does not fit is refused by every op's checks;
         * the strides past that point stay 0 instead of wrapping */
        if (!sbn__mul_i64(stride, shape[d] > 0 ? shape[d] : 1, &stride)) break;
    }
    return t;
}

SBN_API sbn_tensor sbn_tensor_channels_last(void *data, sbn_dtype dtype, int rank,
                                            const int64_t *shape)
{
    sbn_tensor t = empty_view(data, dtype, rank, shape);
    int64_t stride;
    int d;
    if (rank < 2 || rank > SBN_MAX_RANK || shape == NULL) return sbn_tensor_contiguous(data, dtype, rank, shape);
    t.strides[1] = 1;
    stride = shape[1] > 0 ? shape[1] : 1;
    for (d = rank - 1; d >= 2; d--) {
        t.strides[d] = stride;
        if (!sbn__mul_i64(stride, shape[d] > 0 ? shape[d] : 1, &stride)) return t;
    }
    t.strides[0] = stride;
    return t;
}

SBN_API sbn_tensor sbn_tensor_1d(void *data, sbn_dtype dtype, int64_t n)
{
    return sbn_tensor_contiguous(data, dtype, 1, &n);
}

SBN_API int64_t sbn_tensor_numel(const sbn_tensor *t)
{
    int64_t n = 1;
    int d;
    if (t == NULL || t->rank < 0 || t->rank > SBN_MAX_RANK) return 0;
    for (d = 0; d < t->rank; d++) {
        if (t->shape[d] <= 0) return 0;
    }
    for (d = 0; d < t->rank; d++)
        if (!sbn__mul_i64(n, t->shape[d], &n)) return INT64_MAX; /* saturates */
    return n;
}

SBN_API size_t sbn_dtype_size(sbn_dtype dtype)
{
    switch (dtype) {
    case SBN_F32: return 4;
    case SBN_F64: return 8;
    case SBN_F16: return 2;
    case SBN_BF16: return 2;
    case SBN_I32: return 4;
    case SBN_I64: return 8;
    }
    return 0;
}

SBN_API const char *sbn_dtype_name(sbn_dtype dtype)
{
    switch (dtype) {
    case SBN_F32: return "f32";
    case SBN_F64: return "f64";
    case SBN_F16: return "f16";
    case SBN_BF16: return "bf16";
    case SBN_I32: return "i32";
    case SBN_I64: return "i64";
    }
    return "?";
}

int sbn__is_float_dtype(sbn_dtype dtype)
{
    return dtype == SBN_F32 || dtype == SBN_F64 || dtype == SBN_F16 || dtype == SBN_BF16;
}
