/*
 * aclnn_extent.c - where a native view lies in memory, for the bounded-view rule of
 * the aclnn layer (aclnn_view.c in phase 1, aclnn_executor.c in phase 2), and the
 * "[a, b, c]" lists its messages print. A view of shape s and strides t (in elements)
 * reaches the element offsets sum_d i_d * t_d for 0 <= i_d < s_d; their minimum is
 * lo = the sum of the negative (s_d - 1) * t_d, their maximum hi the sum of the
 * positive ones, and in bytes the view covers [data + lo * es, data + (hi + 1) * es)
 * for an element size es. Every product, sum and address is overflow-checked, so a
 * view that does not fit is refused before anything reads through it. The native
 * ops compute the same extent for their own checks; the layer has its own because
 * it bounds views against an aclTensor's storage, which the native views do not know.
 */
#include <stdio.h>

#include "aclnn_internal.h"

sbn__acl_extent_result sbn__acl_view_extent(const sbn_tensor *v, sbn__acl_extent *e)
{
    int64_t es = (int64_t)sbn_dtype_size(v->dtype), low = 0, high = 0, span, lo_bytes, hi_bytes;
    uintptr_t base = (uintptr_t)v->data;
    uint64_t below;
    int d;
    e->lo = e->hi = 0;
    e->byte_lo = e->byte_hi = base;
    for (d = 0; d < v->rank; d++)
        if (v->shape[d] <= 0) return SBN_ACL_EXTENT_EMPTY;
    for (d = 0; d < v->rank; d++) {
        if (!sbn__acl_mul_i64(v->shape[d] - 1, v->strides[d], &span)) return SBN_ACL_EXTENT_OVERFLOW;
        if (span < 0 ? !sbn__acl_add_i64(low, span, &low) : !sbn__acl_add_i64(high, span, &high))
            return SBN_ACL_EXTENT_OVERFLOW;
    }
    e->lo = low;
    e->hi = high;
    if (!sbn__acl_mul_i64(low, es, &lo_bytes) || !sbn__acl_add_i64(high, 1, &hi_bytes) ||
        !sbn__acl_mul_i64(hi_bytes, es, &hi_bytes))
        return SBN_ACL_EXTENT_OVERFLOW;
    /* lo_bytes <= 0 < hi_bytes: the range must wrap neither below 0 nor above UINTPTR_MAX */
    below = (uint64_t)0 - (uint64_t)lo_bytes; /* |lo_bytes|, exact in unsigned arithmetic */
    if (below > base || (uint64_t)hi_bytes > UINTPTR_MAX - base) return SBN_ACL_EXTENT_OVERFLOW;
    e->byte_lo = base - (uintptr_t)below;
    e->byte_hi = base + (uintptr_t)hi_bytes;
    return SBN_ACL_EXTENT_OK;
}

const char *sbn__acl_dims_str(const int64_t *v, int64_t n, char *buf, size_t size)
{
    size_t used;
    int64_t d;
    if (buf == NULL || size == 0) return buf;
    if (n < 0) {
        snprintf(buf, size, "(rank %lld)", (long long)n);
        return buf;
    }
    used = (size_t)snprintf(buf, size, "[");
    for (d = 0; d < n && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)v[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}
