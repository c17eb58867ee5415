/*
 * aclnn_view.c - the bridge from an aclTensor to the native sbn_tensor view the
 * ops compute on. aclCreateTensor's (dims, strides, offset) already count
 * elements, as sbn_tensor's do, so a view is the tensor's data plus offset
 * elements, with dims and strides copied. An NHWC/NDHWC tensor stores its
 * channel in the last dim; with channels_last the view moves that dim to
 * position 1, the native channel axis, carrying its stride along, so no data is
 * moved. A tensor whose data is still NULL (CANN allows setting it later with
 * aclSet*TensorAddr) gives a view with NULL data; a rank the native views cannot
 * hold (> SBN_MAX_RANK), or an offset whose bytes or address do not fit, gives
 * rank -1, which every native check refuses. Also here: the bounded-view rule
 * (sbn__acl_check_storage), in overflow-checked arithmetic (sbn__acl_view_extent): a
 * view must reach only elements of its storage, the product of its storage dims
 * counted from the data pointer, and data that is set must be aligned to the
 * element size.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aclnn_internal.h"

sbn_dtype sbn__acl_native_dtype(aclDataType dtype, int *ok)
{
    int found = 1;
    sbn_dtype native = (sbn_dtype)0;
    switch (dtype) {
    case ACL_FLOAT: native = SBN_F32; break;
    case ACL_FLOAT16: native = SBN_F16; break;
    case ACL_BF16: native = SBN_BF16; break;
    case ACL_DOUBLE: native = SBN_F64; break;
    case ACL_INT32: native = SBN_I32; break;
    case ACL_INT64: native = SBN_I64; break;
    default: found = 0; break;
    }
    if (ok) *ok = found;
    return native;
}

/* The view of t; its data only when with_data (and t's data is set and the offset fits). */
static sbn_tensor make_view(const aclTensor *t, int channels_last, int with_data)
{
    sbn_tensor v;
    int ok = 0, d, rank;
    int64_t offset_bytes = 0;
    size_t elem;
    memset(&v, 0, sizeof v);
    if (!sbn__acl_tensor_is_live(t)) {
        v.rank = -1;
        return v;
    }
    v.dtype = sbn__acl_native_dtype(t->dtype, &ok);
    elem = ok ? sbn_dtype_size(v.dtype) : 0;
    if (with_data && t->data != NULL) {
        /* a view whose offset does not fit is unusable (rank -1); the storage check names it */
        if (!sbn__acl_mul_i64(t->offset, (int64_t)elem, &offset_bytes) ||
            (uint64_t)offset_bytes > UINTPTR_MAX - (uintptr_t)t->data) {
            v.rank = -1;
            return v;
        }
        v.data = (void *)((uintptr_t)t->data + (uintptr_t)offset_bytes);
    }
    if (t->ndim > SBN_MAX_RANK) {
        v.rank = -1;
        return v;
    }
    rank = (int)t->ndim;
    v.rank = rank;
    for (d = 0; d < rank; d++) {
        v.shape[d] = t->dims[d];
        v.strides[d] = t->strides[d];
    }
    if (channels_last && rank >= 3) {
        /* (N, d1, ..., d_{k-1}, C) -> (N, C, d1, ..., d_{k-1}) */
        for (d = rank - 1; d >= 2; d--) {
            v.shape[d] = t->dims[d - 1];
            v.strides[d] = t->strides[d - 1];
        }
        v.shape[1] = t->dims[rank - 1];
        v.strides[1] = t->strides[rank - 1];
    }
    return v;
}

sbn_tensor sbn__acl_view(const aclTensor *t, int channels_last)
{
    return make_view(t, channels_last, 1);
}

sbn_tensor sbn__acl_shape_view(const aclTensor *t, int channels_last)
{
    return make_view(t, channels_last, 0);
}

aclnnStatus sbn__acl_check_storage(const char *op, const aclTensor *t, const char *name)
{
    char dims[256], strides[256], storage[256];
    int64_t storage_numel = 1, storage_bytes, first, last;
    sbn_tensor v = sbn__acl_shape_view(t, 0); /* no data: the element extent only */
    sbn__acl_extent e;
    sbn__acl_extent_result r;
    int ok = 0, fits = 1;
    uint64_t d;
    size_t elem;
    if (!sbn__acl_tensor_is_live(t))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%s is not a live aclTensor", name);
    sbn__acl_native_dtype(t->dtype, &ok);
    if (!ok || v.rank < 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s: a view of dtype %s and rank %llu cannot be bounded (rank <= %d "
                             "and a numeric dtype are needed)",
                             name, sbn__acl_dtype_name(t->dtype), (unsigned long long)t->ndim,
                             SBN_MAX_RANK);
    elem = sbn_dtype_size(v.dtype);
    if (t->data != NULL && elem > 1 && (uintptr_t)t->data % elem != 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s's data %p is not aligned to its element size (%s, %zu bytes)",
                             name, t->data, sbn__acl_dtype_name(t->dtype), elem);
    /* the count of the non-zero dims must fit, even when another dim is 0 (the native
     * walks multiply dims before they look at the element count) */
    for (d = 0; d < t->ndim && fits; d++)
        fits = t->dims[d] == 0 || sbn__acl_mul_i64(storage_numel, t->dims[d], &storage_numel);
    if (!fits)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s has view shape %s: the product of its dims overflows 64 bits",
                             name, sbn__acl_dims_str(t->dims, (int64_t)t->ndim, dims, sizeof dims));
    storage_numel = 1;
    r = sbn__acl_view_extent(&v, &e);
    if (r == SBN_ACL_EXTENT_EMPTY) return ACLNN_SUCCESS; /* reaches no element */
    for (d = 0; d < t->storage_ndim && fits; d++)
        fits = sbn__acl_mul_i64(storage_numel, t->storage_dims[d], &storage_numel);
    fits = fits && sbn__acl_mul_i64(storage_numel, (int64_t)elem, &storage_bytes);
    /* elements offset + lo .. offset + hi of the storage, which holds storage_numel */
    if (r == SBN_ACL_EXTENT_OK && fits && sbn__acl_add_i64(t->offset, e.lo, &first) &&
        sbn__acl_add_i64(t->offset, e.hi, &last) && first >= 0 && last < storage_numel &&
        (t->data == NULL || (uint64_t)storage_bytes <= UINTPTR_MAX - (uintptr_t)t->data))
        return ACLNN_SUCCESS;
    sbn__acl_dims_str(t->dims, (int64_t)t->ndim, dims, sizeof dims);
    sbn__acl_dims_str(t->strides, (int64_t)t->ndim, strides, sizeof strides);
    sbn__acl_dims_str(t->storage_dims, (int64_t)t->storage_ndim, storage, sizeof storage);
    if (r != SBN_ACL_EXTENT_OK || !sbn__acl_add_i64(t->offset, e.hi, &last))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s has view shape %s, strides %s and offset %lld: the elements it "
                             "reaches overflow 64 bits; a view must lie inside its storage "
                             "(storage dims %s)",
                             name, dims, strides, (long long)t->offset, storage);
    if (!fits)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s has storage dims %s of %s: the storage size overflows 64 bits",
                             name, storage, sbn__acl_dtype_name(t->dtype));
    if (last < storage_numel)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s: its storage of %lld bytes (storage dims %s) at address %p "
                             "does not fit in the address space",
                             name, (long long)storage_bytes, storage, t->data);
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has view shape %s, strides %s and offset %lld: it reaches element "
                         "%lld but its storage (storage dims %s) holds %lld elements of %s; a "
                         "view must lie inside its storage",
                         name, dims, strides, (long long)t->offset, (long long)last, storage,
                         (long long)storage_numel, sbn__acl_dtype_name(t->dtype));
}
