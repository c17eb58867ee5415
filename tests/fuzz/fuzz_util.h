/*
 * fuzz_util.h - helpers shared by the native-API fuzz targets (fuzz_native_ops.c,
 * fuzz_layer.c): a reader that turns the fuzzer's bytes into choices (0 once the
 * input is used up), the exact extent of a view computed in 128-bit arithmetic
 * (so the fuzzer knows, independently of the library, whether a view fits in its
 * buffer, cannot be addressed at all, or is empty), an odometer over a view's
 * index space, element loads for every dtype (f16 and bf16 decoded here) and the
 * "same view" rule of in-place calls. A header, not a .c file: every
 * tests/fuzz/fuzz_*.c is built as its own libFuzzer target.
 */
#ifndef SBN_FUZZ_UTIL_H
#define SBN_FUZZ_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "syncbn/syncbn.h"

typedef struct fz_reader {
    const uint8_t *data;
    size_t size, pos;
} fz_reader;

static inline unsigned fz_next(fz_reader *r)
{
    return r->pos < r->size ? r->data[r->pos++] : 0u;
}

static inline unsigned fz_next16(fz_reader *r)
{
    unsigned lo = fz_next(r);
    return lo | (fz_next(r) << 8);
}

/* One of n choices. */
static inline unsigned fz_pick(fz_reader *r, unsigned n)
{
    return fz_next(r) % n;
}

/* Where a view lies, relative to its data pointer, in bytes: [lo, hi). */
typedef enum fz_extent_kind {
    FZ_VIEW_INVALID, /* rank outside 0..SBN_MAX_RANK, a negative dim or an unknown dtype */
    FZ_VIEW_EMPTY,   /* some dim is 0: no element is ever touched */
    FZ_VIEW_HUGE,    /* more than 2^56 elements, or a byte range that no address space holds */
    FZ_VIEW_OK
} fz_extent_kind;

typedef struct fz_extent {
    fz_extent_kind kind;
    __int128 lo, hi;  /* byte offsets from data: the view touches [data + lo, data + hi) */
    __int128 numel;
} fz_extent;

static inline fz_extent fz_view_extent(const sbn_tensor *t)
{
    fz_extent e;
    __int128 lo = 0, hi = 0, numel = 1, es = (__int128)sbn_dtype_size(t->dtype);
    int d, empty = 0;
    e.kind = FZ_VIEW_INVALID;
    e.lo = e.hi = e.numel = 0;
    if (t->rank < 0 || t->rank > SBN_MAX_RANK || es == 0) return e;
    for (d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0) return e;
        if (t->shape[d] == 0) empty = 1;
    }
    if (empty) {
        e.kind = FZ_VIEW_EMPTY;
        return e;
    }
    for (d = 0; d < t->rank; d++) {
        __int128 span = (__int128)(t->shape[d] - 1) * t->strides[d], cap = (__int128)1 << 100;
        if (span > cap) span = cap; /* already far beyond any address space; keeps sums exact */
        if (span < -cap) span = -cap;
        if (numel <= ((__int128)1 << 60)) numel *= t->shape[d];
        if (span < 0) lo += span;
        else hi += span;
    }
    e.numel = numel;
    e.lo = lo * es;
    e.hi = (hi + 1) * es;
    /* no address space holds a range of 2^63 bytes or more on either side */
    e.kind = numel > ((__int128)1 << 56) || e.lo <= -((__int128)1 << 63) ||
                     e.hi >= ((__int128)1 << 63)
                 ? FZ_VIEW_HUGE
                 : FZ_VIEW_OK;
    return e;
}

/*
 * Calls visit(ctx, byte_offset_from_data, index) for every element of a view whose
 * extent is FZ_VIEW_OK, in row-major index order; returns 0 without visiting when the
 * view has more than `limit` elements.
 */
typedef void (*fz_visit_fn)(void *ctx, int64_t byte_offset, const int64_t *index);

static inline int fz_for_each_element(const sbn_tensor *t, int64_t limit, fz_visit_fn visit,
                                      void *ctx)
{
    fz_extent e = fz_view_extent(t);
    int64_t index[SBN_MAX_RANK], offset = 0, es = (int64_t)sbn_dtype_size(t->dtype);
    int d;
    if (e.kind == FZ_VIEW_EMPTY) return 1;
    if (e.kind != FZ_VIEW_OK || e.numel > limit) return 0;
    for (d = 0; d < t->rank; d++) index[d] = 0;
    for (;;) {
        visit(ctx, offset * es, index);
        for (d = t->rank - 1; d >= 0; d--) {
            if (++index[d] < t->shape[d]) {
                offset += t->strides[d];
                break;
            }
            offset -= (index[d] - 1) * t->strides[d];
            index[d] = 0;
        }
        if (d < 0) return 1;
    }
}

static inline double fz_half_to_double(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f;
    double mantissa = (double)(h & 0x3ff), v;
    if (exponent == 0x1f) v = mantissa != 0 ? NAN : INFINITY;
    else if (exponent == 0) v = ldexp(mantissa, -24);
    else v = ldexp(mantissa + 1024.0, exponent - 25);
    return h & 0x8000 ? -v : v;
}

/* The value of one element of `dtype` at p (any alignment). */
static inline double fz_load(sbn_dtype dtype, const void *p)
{
    switch (dtype) {
    case SBN_F32: { float v; memcpy(&v, p, 4); return v; }
    case SBN_F64: { double v; memcpy(&v, p, 8); return v; }
    case SBN_F16: { uint16_t v; memcpy(&v, p, 2); return fz_half_to_double(v); }
    case SBN_BF16: {
        uint16_t v;
        uint32_t bits;
        float f;
        memcpy(&v, p, 2);
        bits = (uint32_t)v << 16;
        memcpy(&f, &bits, 4);
        return f;
    }
    case SBN_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case SBN_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return NAN;
    }
}

/* The library's in-place rule: same data, dtype, rank, shape, and strides of dims > 1. */
static inline int fz_same_view(const sbn_tensor *a, const sbn_tensor *b)
{
    int d;
    if (a->data != b->data || a->dtype != b->dtype || a->rank != b->rank) return 0;
    if (a->rank < 0 || a->rank > SBN_MAX_RANK) return 0;
    for (d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return 0;
    return 1;
}

#endif /* SBN_FUZZ_UTIL_H */
