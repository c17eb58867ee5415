/*
 * support.h - test helpers shared by the test programs: building tensor views of
 * any dtype and layout from logical double values, reading them back, guard bytes
 * that catch writes outside a view, a deterministic random generator, and the
 * oracle comparison that prints the first differing elements and the max
 * difference. Written independently of the library's own conversions.
 *
 * Logical values are row-major over the logical shape (N, C, d2, ...).
 */
#ifndef SBN_TEST_SUPPORT_H
#define SBN_TEST_SUPPORT_H

#include <stdint.h>
#include "syncbn/syncbn.h"

typedef enum tsup_layout {
    TSUP_CHANNELS_FIRST = 0, /* contiguous row-major */
    TSUP_CHANNELS_LAST = 1,  /* memory order (N, d2, ..., C) */
    TSUP_STRIDED = 2         /* row-major with the last dim at step 2, at an offset into the buffer */
} tsup_layout;

typedef struct tsup_buf {
    sbn_tensor view;
    unsigned char *alloc; /* the whole buffer, guard bytes included */
    size_t alloc_bytes;
} tsup_buf;

/* Name of a layout for messages. */
const char *tsup_layout_name(tsup_layout layout);
/* Builds a view; values (numel doubles, row-major logical) may be NULL for zeros. */
tsup_buf tsup_make(sbn_dtype dtype, int rank, const int64_t *shape, tsup_layout layout,
                   const double *values);
/* Shorthand for a 1-D tensor of n values. */
tsup_buf tsup_make_1d(sbn_dtype dtype, int64_t n, const double *values);
/* Reads a view back as logical row-major doubles. */
void tsup_read(const sbn_tensor *view, double *out);
/* Reads element i of a 1-D view. */
double tsup_get1(const sbn_tensor *view, int64_t i);
/* 1 when every byte of the buffer outside the view's elements still holds the guard pattern. */
int tsup_guard_intact(const tsup_buf *buf);
/* 1 when the buffer's bytes equal `snapshot` (taken with tsup_snapshot). */
unsigned char *tsup_snapshot(const tsup_buf *buf);
int tsup_unchanged(const tsup_buf *buf, const unsigned char *snapshot);
void tsup_free(tsup_buf *buf);

/* Rounds a double to the nearest value of dtype (round to nearest even). */
double tsup_round(sbn_dtype dtype, double value);
/* Unit roundoff of a float dtype: 2^-24 f32, 2^-53 f64, 2^-11 f16, 2^-8 bf16. */
double tsup_unit_roundoff(sbn_dtype dtype);
int64_t tsup_numel(int rank, const int64_t *shape);

/* Deterministic generator (splitmix64); normal values via Box-Muller. */
typedef struct tsup_rng { uint64_t state; } tsup_rng;
tsup_rng tsup_rng_seed(uint64_t seed);
uint64_t tsup_next_u64(tsup_rng *rng); /* the next 64 random bits */
double tsup_uniform(tsup_rng *rng); /* [0, 1) */
double tsup_normal(tsup_rng *rng);
/* n values of mean + std * normal, each rounded to dtype. */
void tsup_fill_normal(tsup_rng *rng, double *v, int64_t n, double mean, double std,
                      sbn_dtype dtype);

/*
 * Compares got against want elementwise: |got - want| <= abs_tol + rel_tol * |want|.
 * NaN matches NaN; infinities must match exactly. On failure prints `what`, the
 * first 5 differing elements and the max difference, and returns 0.
 */
int tsup_close(const char *what, const double *got, const double *want, int64_t n,
               double abs_tol, double rel_tol);
/* Bitwise equality of two buffers, with a message naming the first differing byte. */
int tsup_same_bytes(const char *what, const void *a, const void *b, size_t bytes);

#endif /* SBN_TEST_SUPPORT_H */
