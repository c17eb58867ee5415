/*
 * extent.c - where a view lies in memory, computed so that nothing can wrap.
 * A view of shape s and strides t (in elements) touches the element offsets
 * sum_d i_d * t_d for 0 <= i_d < s_d; their minimum is lo = sum of the negative
 * (s_d - 1) * t_d and their maximum hi = sum of the positive ones. In bytes the
 * view covers [data + lo * es, data + (hi + 1) * es). Every product, sum and
 * address here is overflow-checked: a view whose extent or addresses do not fit
 * is refused (SBN_ERR_TOO_LARGE) before any op reads or writes through it, so the
 * alias checks and the walks downstream can use plain arithmetic.
 */
#include <stdio.h>

#include "core/arith.h"
#include "core/check.h"
#include "core/extent.h"
#include "core/status.h"
#include "syncbn/syncbn.h"

/* The first dim whose span (shape - 1) * stride, or its running sum, overflows; -1 if none. */
static int extent_elements(const sbn_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t low = 0, high = 0, span;
    int d;
    for (d = 0; d < t->rank; d++) {
        if (!sbn__mul_i64(t->shape[d] - 1, t->strides[d], &span)) return d;
        if (span < 0 ? !sbn__add_i64(low, span, &low) : !sbn__add_i64(high, span, &high))
            return d;
    }
    *lo = low;
    *hi = high;
    return -1;
}

sbn__extent_result sbn__view_extent(const sbn_tensor *t, sbn__extent *e)
{
    int64_t es = (int64_t)sbn_dtype_size(t->dtype), lo_bytes, hi_bytes;
    uintptr_t base = (uintptr_t)t->data;
    uint64_t below;
    int d;
    e->lo = e->hi = 0;
    e->byte_lo = e->byte_hi = base;
    for (d = 0; d < t->rank; d++)
        if (t->shape[d] <= 0) return SBN_EXTENT_EMPTY;
    if (extent_elements(t, &e->lo, &e->hi) >= 0) return SBN_EXTENT_OVERFLOW;
    if (!sbn__mul_i64(e->lo, es, &lo_bytes) || !sbn__add_i64(e->hi, 1, &hi_bytes) ||
        !sbn__mul_i64(hi_bytes, es, &hi_bytes))
        return SBN_EXTENT_OVERFLOW;
    /* lo_bytes <= 0 < hi_bytes: the range must not wrap below 0 or above UINTPTR_MAX */
    below = (uint64_t)0 - (uint64_t)lo_bytes; /* |lo_bytes|, exact in unsigned arithmetic */
    if (below > base) return SBN_EXTENT_OVERFLOW;
    if ((uint64_t)hi_bytes > UINTPTR_MAX - base) return SBN_EXTENT_OVERFLOW;
    e->byte_lo = base - (uintptr_t)below;
    e->byte_hi = base + (uintptr_t)hi_bytes;
    return SBN_EXTENT_OK;
}

sbn_status sbn__check_view_memory(const sbn_tensor *t, const char *name)
{
    char shape[160], strides[220];
    size_t es = sbn_dtype_size(t->dtype);
    sbn__extent e;
    int64_t lo = 0, hi = 0;
    int bad_dim;
    sbn__extent_result r = sbn__view_extent(t, &e);
    if (r == SBN_EXTENT_EMPTY) return SBN_OK;
    if (r == SBN_EXTENT_OVERFLOW) {
        bad_dim = extent_elements(t, &lo, &hi);
        if (bad_dim >= 0)
            return sbn__error(SBN_ERR_TOO_LARGE,
                              "%s has shape %s and strides %s: the extent overflows 64 bits at dim %d "
                              "(%lld x stride %lld)",
                              name, sbn__shape_str(t, shape, sizeof shape),
                              sbn__strides_str(t, strides, sizeof strides), bad_dim,
                              (long long)t->shape[bad_dim], (long long)t->strides[bad_dim]);
        return sbn__error(SBN_ERR_TOO_LARGE,
                          "%s has shape %s and strides %s at address %p: its byte range (element "
                          "offsets %lld to %lld of %zu bytes) does not fit in the address space",
                          name, sbn__shape_str(t, shape, sizeof shape),
                          sbn__strides_str(t, strides, sizeof strides), t->data, (long long)lo,
                          (long long)hi, es);
    }
    if (es > 1 && (uintptr_t)t->data % es != 0)
        return sbn__error(SBN_ERR_MISALIGNED,
                          "%s's data %p is not aligned to its element size (%s, %zu bytes); "
                          "views must start on a multiple of the element size",
                          name, t->data, sbn_dtype_name(t->dtype), es);
    return SBN_OK;
}

int sbn__views_overlap(const sbn_tensor *a, const sbn_tensor *b)
{
    sbn__extent ea, eb;
    if (sbn__view_extent(a, &ea) != SBN_EXTENT_OK || sbn__view_extent(b, &eb) != SBN_EXTENT_OK)
        return 0;
    return ea.byte_lo < eb.byte_hi && eb.byte_lo < ea.byte_hi;
}

int sbn__view_overlaps_bytes(const sbn_tensor *t, const void *p, size_t bytes)
{
    sbn__extent e;
    uintptr_t lo = (uintptr_t)p, hi;
    if (bytes == 0 || p == NULL || sbn__view_extent(t, &e) != SBN_EXTENT_OK) return 0;
    hi = bytes > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + bytes;
    return e.byte_lo < hi && lo < e.byte_hi;
}
