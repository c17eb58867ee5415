/*
 * arith.h - size-checked integer arithmetic: the checked forms report whether the
 * result fits (shapes, strides, extents: a product that does not fit is refused with
 * a message), the saturating forms give SIZE_MAX (workspace sizes: SIZE_MAX is then
 * refused as too large).
 */
#ifndef SBN_CORE_ARITH_H
#define SBN_CORE_ARITH_H

#include <stddef.h>
#include <stdint.h>

/* *out = a * b or a + b; 0 (and *out unchanged) when the result does not fit. */
static inline int sbn__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
static inline int sbn__add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
static inline int sbn__add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
/* a + b and a * b, or SIZE_MAX when they do not fit (workspace sizes; SIZE_MAX is refused). */
static inline size_t sbn__sat_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t sbn__sat_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

#endif /* SBN_CORE_ARITH_H */
