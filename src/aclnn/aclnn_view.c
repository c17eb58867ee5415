/*
 * aclnn_view.c - the bridge from an aclTensor to the native sbn_tensor view the
 * ops compute on. aclCreateTensor's (dims, strides, offset) already count
 * elements, as sbn_tensor's do, so a view is the tensor's data plus offset
 * elements, with dims and strides copied. An NHWC/NDHWC tensor stores its
 * channel in the last dim; with channels_last the view moves that dim to
 * position 1, the native channel axis, carrying its stride along, so no data is
 * moved. A tensor whose data is still NULL (CANN allows setting it later with
 * aclSet*TensorAddr) gives a view with NULL data; a rank the native views cannot
 * hold (> SBN_MAX_RANK) gives rank -1, which every native check refuses.
 */
#include <stdint.h>
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

sbn_tensor sbn__acl_view(const aclTensor *t, int channels_last)
{
    sbn_tensor v;
    int ok = 0, d, rank;
    size_t elem;
    memset(&v, 0, sizeof v);
    if (!sbn__acl_tensor_is_live(t)) {
        v.rank = -1;
        return v;
    }
    v.dtype = sbn__acl_native_dtype(t->dtype, &ok);
    elem = ok ? sbn_dtype_size(v.dtype) : 0;
    if (t->data != NULL)
        v.data = (void *)((uintptr_t)t->data + (uintptr_t)(t->offset * (int64_t)elem));
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
