/*
 * optest.h - helpers shared by the tests of the native ops and the layer
 * (test_backward.c, test_batch_norm.c, test_elemt.c, test_stats.c, test_gather.c,
 * test_layer.c, mpi/test_mpi_layer.c, and the aclnn tests through
 * aclnn_support.h): a shape type and the shapes of the backward and batch-norm
 * matrices, views whose empty-view strides follow a per-process choice, filled
 * double arrays, macros freeing many pointers or buffers at once, the
 * elementwise comparison against per-element tolerances, workspaces sized by an
 * op's *_workspace_size function, pools, the (N, C, S) split and the shape string
 * of failure messages, and the compute precision and error floor the tolerances
 * assume. Everything here builds on support.h.
 */
#ifndef SBN_TEST_OPTEST_H
#define SBN_TEST_OPTEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "support/support.h"
#include "syncbn/syncbn.h"

/* A logical shape (N, C, d2, ...) of `rank` dims. */
typedef struct tsup_shape {
    int rank;
    int64_t d[SBN_MAX_RANK];
} tsup_shape;

/* Calls fn on every argument listed (each of type T), in order. */
#define TSUP_EACH(T, fn, ...)                                                        \
    do {                                                                             \
        T each_all_[] = {__VA_ARGS__};                                               \
        size_t each_i_;                                                              \
        for (each_i_ = 0; each_i_ < sizeof each_all_ / sizeof *each_all_; each_i_++) \
            fn(each_all_[each_i_]);                                                  \
    } while (0)

/* Frees every heap pointer listed (NULL entries are fine). */
#define TSUP_FREE_ALL(...) TSUP_EACH(void *, free, __VA_ARGS__)
/* tsup_free of every tsup_buf pointer listed, in order. */
#define TSUP_BUF_FREE(...) TSUP_EACH(tsup_buf *, tsup_free, __VA_ARGS__)

/* The number of elements of a static array, as an int. */
#define TSUP_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/*
 * The shapes of the backward and batch-norm matrices (test_backward.c,
 * test_batch_norm.c): ranks 2, 3, 4, 5 and 8; C = 1, 3 and 64; N = 1; R = 1..1000.
 */
#define TSUP_N_MATRIX_SHAPES 8
extern const tsup_shape tsup_matrix_shapes[TSUP_N_MATRIX_SHAPES];

/* malloc'ed array of n doubles (at least one allocated), each set to value; free() it. */
double *tsup_alloc_fill(int64_t n, double value);

/*
 * How tsup_make_view lays out the strides of an empty view (a 0 anywhere in the
 * shape): 0 (the default) gives the strides of the shape with every 0 dim taken
 * as 1, as sbn_tensor_contiguous builds them; 1 keeps tsup_make's (numpy's)
 * strides, where a 0 dim zeroes the strides outside it. An empty view has no
 * elements, so an op must accept either. The choice holds for the rest of the
 * process (each harness case runs in its own child).
 */
void tsup_set_zero_strides(int zero_strides);
/* tsup_make, with an empty view's strides as chosen by tsup_set_zero_strides. */
tsup_buf tsup_make_view(sbn_dtype dtype, int rank, const int64_t *shape, tsup_layout layout,
                        const double *values);

/* (N, C, S) of a channels-at-dim-1 shape: N = dim 0, C = dim 1, S = the product of the rest. */
void tsup_split_ncs(int rank, const int64_t *shape, int64_t *n, int64_t *c, int64_t *s);
/* Writes the dims joined by "x" (e.g. "2x3x7") into buf; "" for rank 0. */
void tsup_shape_str(int rank, const int64_t *d, char *buf, size_t size);

/*
 * |got - want| <= tol[i] for every element (NaN matches NaN). On failure prints
 * `what`, the first 5 differing elements and the worst ratio diff/tol, and
 * returns 0; 1 when all pass.
 */
int tsup_close_tol(const char *what, const double *got, const double *want, const double *tol,
                   int64_t n);

/* An op's workspace-size query, as in ops.h. */
typedef sbn_status (*tsup_ws_size_fn)(const sbn_tensor *x, size_t *bytes);
/* Sets *bytes from fn (0 when fn fails) and returns a malloc'ed workspace, NULL for 0 bytes. */
void *tsup_workspace(tsup_ws_size_fn fn, const sbn_tensor *x, size_t *bytes);
/* malloc(bytes), or NULL for 0 bytes: a workspace of a size already known. */
void *tsup_ws_alloc(size_t bytes);
/* A pool of `threads` threads, or NULL when sbn_pool_create fails. */
sbn_pool_t *tsup_pool(int threads);

/* Unit roundoff of the compute precision a tolerance assumes: f64 when a, b, c all are, else f32. */
double tsup_compute_u(sbn_dtype a, sbn_dtype b, sbn_dtype c);
/* The absolute error floor of an output dtype at the tests' magnitudes: 2^-24 for f16, else 0. */
double tsup_abs_floor(sbn_dtype dtype);

#endif /* SBN_TEST_OPTEST_H */
