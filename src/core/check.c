/*
 * check.c - argument validation shared by every op. Each check returns SBN_OK or
 * a failure status with a sentence (naming the argument, its shape and the rule
 * it broke) recorded for sbn_last_error(). Ops run all checks before writing
 * anything, so a failed call leaves every output as it was.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arith.h"
#include "core/check.h"
#include "core/extent.h"
#include "core/status.h"
#include "core/tensor.h"
#include "syncbn/syncbn.h"

/* Element counts above this are refused, so that byte offsets never overflow int64. */
#define SBN_MAX_ELEMENTS ((int64_t)1 << 56)

/* "[a, b, c]" of n values into buf ("(rank n)" when n is out of range). */
static const char *dims_str(const int64_t *v, int n, char *buf, size_t size)
{
    size_t used = 0;
    int d;
    if (size == 0) return buf;
    buf[0] = '\0';
    if (n < 0 || n > SBN_MAX_RANK) {
        snprintf(buf, size, "(rank %d)", n);
        return buf;
    }
    used += (size_t)snprintf(buf + used, size - used, "[");
    for (d = 0; d < n && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "", (long long)v[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

const char *sbn__shape_str(const sbn_tensor *t, char *buf, size_t size)
{
    return dims_str(t->shape, t->rank, buf, size);
}

const char *sbn__strides_str(const sbn_tensor *t, char *buf, size_t size)
{
    return dims_str(t->strides, t->rank, buf, size);
}

sbn_status sbn__check_present(const void *t, const char *name)
{
    if (t == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "%s is NULL", name);
    return SBN_OK;
}

static sbn_status check_float_dtype(const sbn_tensor *t, const char *name)
{
    if (!sbn__is_float_dtype(t->dtype))
        return sbn__error(SBN_ERR_BAD_DTYPE, "%s has dtype %s (%d); expected f32, f64, f16 or bf16",
                          name, sbn_dtype_name(t->dtype), (int)t->dtype);
    return SBN_OK;
}

/* Dims non-negative, element count bounded, and (need_data) data set when there are elements. */
static sbn_status check_dims(const sbn_tensor *t, const char *name, int need_data)
{
    char shape[160];
    int64_t numel = 1;
    int d;
    for (d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0)
            return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s: dim %d is negative", name,
                              sbn__shape_str(t, shape, sizeof shape), d);
    }
    for (d = 0; d < t->rank; d++) {
        if (t->shape[d] == 0) {
            numel = 0;
            break;
        }
        if (numel > SBN_MAX_ELEMENTS / t->shape[d])
            return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s: more than 2^56 elements", name,
                              sbn__shape_str(t, shape, sizeof shape));
        numel *= t->shape[d];
    }
    if (need_data && numel > 0 && t->data == NULL)
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "%s has shape %s but its data pointer is NULL",
                          name, sbn__shape_str(t, shape, sizeof shape));
    if (need_data) return sbn__check_view_memory(t, name);
    return SBN_OK;
}

/* An activation's dtype, rank and dims; its data pointer only when need_data. */
static sbn_status check_activation(const sbn_tensor *t, const char *name, int need_data)
{
    char shape[160];
    sbn_status s = sbn__check_present(t, name);
    if (s != SBN_OK) return s;
    if ((s = check_float_dtype(t, name)) != SBN_OK) return s;
    if (t->rank < 2 || t->rank > SBN_MAX_RANK)
        return sbn__error(SBN_ERR_BAD_RANK, "%s has rank %d; expected 2 to %d (N, C, ...)", name,
                          t->rank, SBN_MAX_RANK);
    if ((s = check_dims(t, name, need_data)) != SBN_OK) return s;
    if (t->shape[1] == 0)
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s: the channel dim (1) is 0", name,
                          sbn__shape_str(t, shape, sizeof shape));
    return SBN_OK;
}

sbn_status sbn__check_activation(const sbn_tensor *t, const char *name)
{
    return check_activation(t, name, 1);
}

sbn_status sbn__check_activation_shape(const sbn_tensor *t, const char *name)
{
    return check_activation(t, name, 0);
}

sbn_status sbn__check_like(const sbn_tensor *t, const char *name, const sbn_tensor *x,
                           const char *x_name)
{
    char a[160], b[160];
    int d, same;
    sbn_status s = sbn__check_activation(t, name);
    if (s != SBN_OK) return s;
    same = t->rank == x->rank;
    for (d = 0; same && d < t->rank; d++) same = t->shape[d] == x->shape[d];
    if (!same)
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s but %s has shape %s; they must match",
                          name, sbn__shape_str(t, a, sizeof a), x_name,
                          sbn__shape_str(x, b, sizeof b));
    return SBN_OK;
}

sbn_status sbn__check_vector(const sbn_tensor *t, const char *name, int64_t c, int required)
{
    char shape[160];
    sbn_status s;
    if (t == NULL) return required ? sbn__check_present(t, name) : SBN_OK;
    if ((s = check_float_dtype(t, name)) != SBN_OK) return s;
    if (t->rank != 1)
        return sbn__error(SBN_ERR_BAD_RANK, "%s has rank %d; expected a 1-D tensor of C = %lld",
                          name, t->rank, (long long)c);
    if ((s = check_dims(t, name, 1)) != SBN_OK) return s;
    if (t->shape[0] != c)
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s; expected [%lld] (C)", name,
                          sbn__shape_str(t, shape, sizeof shape), (long long)c);
    return SBN_OK;
}

/* A [rows, cols] float matrix; its data pointer only when need_data. */
static sbn_status check_matrix(const sbn_tensor *t, const char *name, int64_t rows, int64_t cols,
                               int need_data)
{
    char shape[160];
    sbn_status s = sbn__check_present(t, name);
    if (s != SBN_OK) return s;
    if ((s = check_float_dtype(t, name)) != SBN_OK) return s;
    if (t->rank != 2)
        return sbn__error(SBN_ERR_BAD_RANK, "%s has rank %d; expected a 2-D tensor [W, C]", name,
                          t->rank);
    if ((s = check_dims(t, name, need_data)) != SBN_OK) return s;
    if ((rows >= 0 && t->shape[0] != rows) || (cols >= 0 && t->shape[1] != cols))
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s; expected [%lld, %lld] (W, C)", name,
                          sbn__shape_str(t, shape, sizeof shape),
                          (long long)(rows >= 0 ? rows : t->shape[0]),
                          (long long)(cols >= 0 ? cols : t->shape[1]));
    if (t->shape[1] == 0)
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s: C is 0", name,
                          sbn__shape_str(t, shape, sizeof shape));
    return SBN_OK;
}

sbn_status sbn__check_matrix(const sbn_tensor *t, const char *name, int64_t rows, int64_t cols)
{
    return check_matrix(t, name, rows, cols, 1);
}

sbn_status sbn__check_matrix_shape(const sbn_tensor *t, const char *name, int64_t rows,
                                   int64_t cols)
{
    return check_matrix(t, name, rows, cols, 0);
}

sbn_status sbn__check_count_vector(const sbn_tensor *t, const char *name, int64_t n)
{
    char shape[160];
    sbn_status s = sbn__check_present(t, name);
    if (s != SBN_OK) return s;
    if (sbn_dtype_size(t->dtype) == 0)
        return sbn__error(SBN_ERR_BAD_DTYPE, "%s has an unknown dtype (%d)", name, (int)t->dtype);
    if (t->rank != 1)
        return sbn__error(SBN_ERR_BAD_RANK, "%s has rank %d; expected a 1-D tensor [W]", name,
                          t->rank);
    if ((s = check_dims(t, name, 1)) != SBN_OK) return s;
    if (t->shape[0] != n)
        return sbn__error(SBN_ERR_BAD_SHAPE, "%s has shape %s; expected [%lld] (W)", name,
                          sbn__shape_str(t, shape, sizeof shape), (long long)n);
    return SBN_OK;
}

sbn_status sbn__check_eps(double eps)
{
    if (!isfinite(eps) || eps < 0)
        return sbn__error(SBN_ERR_BAD_VALUE, "eps is %.17g; expected a finite value >= 0", eps);
    return SBN_OK;
}

sbn_status sbn__check_momentum(double momentum)
{
    if (!isfinite(momentum) || momentum < 0 || momentum > 1)
        return sbn__error(SBN_ERR_BAD_VALUE, "momentum is %.17g; expected a value in [0, 1]",
                          momentum);
    return SBN_OK;
}

#define SBN_WS_ALIGN 64

sbn_status sbn__activation_workspace(const sbn_tensor *x, size_t *bytes,
                                     size_t (*need)(const sbn_tensor *x))
{
    size_t total;
    sbn_status s;
    sbn__clear_error();
    if ((s = sbn__check_present(bytes, "bytes")) != SBN_OK) return s;
    if ((s = sbn__check_activation_shape(x, "x")) != SBN_OK) return s;
    total = sbn__ws_bytes(need(x));
    if (total == SIZE_MAX) {
        char shape[160];
        return sbn__error(SBN_ERR_TOO_LARGE, "x has shape %s: the workspace it needs does not fit "
                          "in size_t", sbn__shape_str(x, shape, sizeof shape));
    }
    *bytes = total;
    return SBN_OK;
}

size_t sbn__ws_bytes(size_t need)
{
    return need == 0 ? 0 : sbn__sat_add(need, SBN_WS_ALIGN);
}

double *sbn__ws_align(void *workspace)
{
    uintptr_t p = (uintptr_t)workspace;
    p = (p + SBN_WS_ALIGN - 1) & ~(uintptr_t)(SBN_WS_ALIGN - 1);
    return (double *)p;
}

sbn_status sbn__check_workspace(const void *workspace, size_t bytes, size_t need,
                                const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                                int n_in)
{
    size_t total = sbn__ws_bytes(need);
    if (total == 0) return SBN_OK;
    if (workspace == NULL)
        return sbn__error(SBN_ERR_WORKSPACE_TOO_SMALL,
                          "workspace is NULL but the op needs %zu bytes", total);
    if (total == SIZE_MAX)
        return sbn__error(SBN_ERR_TOO_LARGE, "the op's workspace does not fit in size_t");
    if (bytes < total)
        return sbn__error(SBN_ERR_WORKSPACE_TOO_SMALL,
                          "workspace_bytes is %zu but the op needs %zu bytes", bytes, total);
    return sbn__check_workspace_apart(workspace, total, outputs, n_out, inputs, n_in);
}

sbn_status sbn__check_workspace_apart(const void *workspace, size_t total, const sbn__arg *a,
                                      int na, const sbn__arg *b, int nb)
{
    const sbn__arg *list;
    int i, k, n;
    if (total == 0 || workspace == NULL) return SBN_OK;
    for (k = 0; k < 2; k++) {
        list = k == 0 ? a : b;
        n = k == 0 ? na : nb;
        for (i = 0; i < n; i++) {
            if (list[i].t == NULL || !sbn__view_overlaps_bytes(list[i].t, workspace, total))
                continue;
            return sbn__error(SBN_ERR_ALIAS,
                              "the workspace [%p, +%zu bytes) overlaps %s in memory; the op writes "
                              "its scratch there",
                              workspace, total, list[i].name);
        }
    }
    return SBN_OK;
}

int sbn__same_view(const sbn_tensor *a, const sbn_tensor *b)
{
    int d;
    if (a->data != b->data || a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return 0;
    return 1;
}

/* 1 when two distinct index tuples of t can address the same element. */
static int overlaps_itself(const sbn_tensor *t)
{
    int64_t size[SBN_MAX_RANK], stride[SBN_MAX_RANK], extent = 1;
    int n = 0, i, j, d;
    if (sbn_tensor_numel(t) == 0) return 0;
    for (d = 0; d < t->rank; d++) {
        if (t->shape[d] <= 1) continue;
        size[n] = t->shape[d];
        stride[n] = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
        n++;
    }
    for (i = 1; i < n; i++) /* insertion sort by |stride| */
        for (j = i; j > 0 && stride[j] < stride[j - 1]; j--) {
            int64_t ts = stride[j], tz = size[j];
            stride[j] = stride[j - 1];
            size[j] = size[j - 1];
            stride[j - 1] = ts;
            size[j - 1] = tz;
        }
    for (i = 0; i < n; i++) {
        if (stride[i] < extent) return 1;
        extent += stride[i] * (size[i] - 1);
    }
    return 0;
}

sbn_status sbn__check_aliases(const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                              int n_in, const sbn_tensor *inplace_out,
                              const sbn_tensor *inplace_in)
{
    int i, j;
    for (i = 0; i < n_out; i++) {
        const sbn_tensor *out = outputs[i].t;
        if (out == NULL) continue;
        if (overlaps_itself(out))
            return sbn__error(SBN_ERR_ALIAS,
                              "%s has strides that make two of its elements share memory",
                              outputs[i].name);
        for (j = 0; j < n_in; j++) {
            const sbn_tensor *in = inputs[j].t;
            if (in == NULL || !sbn__views_overlap(out, in)) continue;
            if (out == inplace_out && in == inplace_in && sbn__same_view(out, in)) continue;
            return sbn__error(SBN_ERR_ALIAS, "%s overlaps input %s in memory%s", outputs[i].name,
                              inputs[j].name,
                              out == inplace_out && in == inplace_in
                                  ? " (in place is allowed only with the identical view)"
                                  : "");
        }
        for (j = 0; j < i; j++) {
            if (outputs[j].t != NULL && sbn__views_overlap(out, outputs[j].t))
                return sbn__error(SBN_ERR_ALIAS, "outputs %s and %s overlap in memory",
                                  outputs[j].name, outputs[i].name);
        }
    }
    return SBN_OK;
}
