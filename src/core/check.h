/*
 * check.h - the argument checks of the ops and the layer (check.c): shapes, dtypes
 * and data of activations, per-channel vectors and [W, C] matrices, eps and
 * momentum, workspaces, and the alias rules between outputs and inputs. Each failure
 * returns its status with a sentence naming the argument (status.h). The checks read
 * shapes, strides and addresses only, never element values.
 */
#ifndef SBN_CORE_CHECK_H
#define SBN_CORE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "syncbn/syncbn.h"

/* A tensor argument and the name messages use for it. */
typedef struct sbn__arg {
    const sbn_tensor *t;
    const char *name;
} sbn__arg;
/* "[2, 3, 4]" of t's shape, or of its strides, into buf. */
const char *sbn__shape_str(const sbn_tensor *t, char *buf, size_t size);
const char *sbn__strides_str(const sbn_tensor *t, char *buf, size_t size);
/* Fails with SBN_ERR_NULL_ARGUMENT naming `name` when t is NULL. */
sbn_status sbn__check_present(const void *t, const char *name);
/* An activation: rank 2..8, float dtype, dims >= 0, C > 0, data set when numel > 0. */
sbn_status sbn__check_activation(const sbn_tensor *t, const char *name);
/* check_activation without the data pointer (workspace sizes are known before the data). */
sbn_status sbn__check_activation_shape(const sbn_tensor *t, const char *name);
/* Like check_activation, plus the same shape as x (named x_name). */
sbn_status sbn__check_like(const sbn_tensor *t, const char *name, const sbn_tensor *x,
                           const char *x_name);
/* NULL passes unless required; otherwise a 1-D float tensor of length c. */
sbn_status sbn__check_vector(const sbn_tensor *t, const char *name, int64_t c, int required);
/* A 2-D float tensor [rows, cols] with cols > 0; a negative rows or cols means "any". */
sbn_status sbn__check_matrix(const sbn_tensor *t, const char *name, int64_t rows, int64_t cols);
/* check_matrix without the data pointer (for workspace sizes). */
sbn_status sbn__check_matrix_shape(const sbn_tensor *t, const char *name, int64_t rows,
                                   int64_t cols);
/* A 1-D tensor of length n, any dtype, with data (the gathers check its values). */
sbn_status sbn__check_count_vector(const sbn_tensor *t, const char *name, int64_t n);
sbn_status sbn__check_eps(double eps);
sbn_status sbn__check_momentum(double momentum);
/*
 * Workspace large enough for `need` bytes (plus alignment slack, see sbn__ws_align),
 * and the part of it the op uses apart from every view in outputs and inputs
 * (sbn__check_workspace_apart).
 */
sbn_status sbn__check_workspace(const void *workspace, size_t bytes, size_t need,
                                const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                                int n_in);
/*
 * The bytes [workspace, workspace + used) that a call writes its scratch to overlap
 * none of the views in `a` and `b` (NULL entries skipped): the scratch is written
 * while the inputs are still read and before the outputs are. An op passes
 * sbn__ws_bytes(need); NULL or used == 0 passes.
 */
sbn_status sbn__check_workspace_apart(const void *workspace, size_t used, const sbn__arg *a,
                                      int na, const sbn__arg *b, int nb);
/*
 * The common body of sbn_<op>_workspace_size: checks `bytes` and x (an
 * activation's dtype, rank and dims; its data may still be NULL), then stores
 * need(x) plus the alignment slack in *bytes.
 */
sbn_status sbn__activation_workspace(const sbn_tensor *x, size_t *bytes,
                                     size_t (*need)(const sbn_tensor *x));
/* The 64-byte aligned start of a workspace. */
double *sbn__ws_align(void *workspace);
/* Adds the alignment slack to a workspace need; 0 stays 0. */
size_t sbn__ws_bytes(size_t need);

/*
 * Alias rules: every output must not overlap itself, any input, or another output,
 * except that inplace_out may be exactly the view inplace_in (an in-place op).
 * Views are compared by byte ranges (conservative). NULL entries are skipped.
 */
sbn_status sbn__check_aliases(const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                              int n_in, const sbn_tensor *inplace_out,
                              const sbn_tensor *inplace_in);
/* 1 when a and b are the same view (data, dtype, rank, shape, strides). */
int sbn__same_view(const sbn_tensor *a, const sbn_tensor *b);

#endif /* SBN_CORE_CHECK_H */
