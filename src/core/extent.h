/*
 * extent.h - where a view lies in memory (extent.c): its element and byte range,
 * every step overflow-checked, the checks every view with data passes before an op
 * touches it, and the overlap tests the alias rules (check.h) are built on.
 */
#ifndef SBN_CORE_EXTENT_H
#define SBN_CORE_EXTENT_H

#include <stddef.h>
#include <stdint.h>

#include "syncbn/syncbn.h"

/*
 * Where a view lies, relative to its data pointer: the lowest and highest element
 * offsets it touches (lo <= 0 <= hi, from sum over dims of (shape[d] - 1) * strides[d]
 * split by sign), and the byte range [byte_lo, byte_hi) as addresses. Every step is
 * overflow-checked, including the address arithmetic.
 */
typedef struct sbn__extent {
    int64_t lo, hi;            /* element offsets, inclusive */
    uintptr_t byte_lo, byte_hi; /* addresses: [byte_lo, byte_hi) */
} sbn__extent;
typedef enum sbn__extent_result {
    SBN_EXTENT_EMPTY = 0, /* no elements (a dim is 0): touches no memory */
    SBN_EXTENT_OK = 1,
    SBN_EXTENT_OVERFLOW = -1 /* the extent or a byte address does not fit */
} sbn__extent_result;
/* The extent of t (rank 0..SBN_MAX_RANK, dims >= 0, known dtype). */
sbn__extent_result sbn__view_extent(const sbn_tensor *t, sbn__extent *e);
/*
 * The checks every view with data passes before an op touches it: its extent and
 * byte range fit (else SBN_ERR_TOO_LARGE naming `name`, the shape, the strides and
 * the offending dim) and its data is aligned to its element size (else
 * SBN_ERR_MISALIGNED). Views without elements pass.
 */
sbn_status sbn__check_view_memory(const sbn_tensor *t, const char *name);
/* 1 when the byte ranges of two views intersect (views without elements never do). */
int sbn__views_overlap(const sbn_tensor *a, const sbn_tensor *b);
/* 1 when the byte range of t intersects [p, p + bytes). */
int sbn__view_overlaps_bytes(const sbn_tensor *t, const void *p, size_t bytes);

#endif /* SBN_CORE_EXTENT_H */
