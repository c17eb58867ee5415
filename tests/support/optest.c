/*
 * optest.c - the op tests' shared helpers (see optest.h): the matrix shapes,
 * empty views with either stride convention, filled arrays, the per-element
 * tolerance comparison, workspaces, pools and the small numeric helpers. The
 * choice of empty-view strides is one process-wide flag, set by the cases that
 * test numpy's zeroed strides.
 */
#include "optest.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int g_zero_strides;

const tsup_shape tsup_matrix_shapes[TSUP_N_MATRIX_SHAPES] = {
    {2, {1, 3}},          {2, {17, 64}},     {3, {1, 1, 1000}},
    {3, {2, 3, 7}},       {4, {2, 3, 4, 4}}, {4, {1, 64, 1, 17}},
    {5, {2, 1, 2, 1, 8}}, {8, {1, 3, 2, 1, 2, 1, 2, 2}},
};

double *tsup_alloc_fill(int64_t n, double value)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    int64_t i;
    for (i = 0; i < n; i++) v[i] = value;
    return v;
}

void tsup_set_zero_strides(int zero_strides)
{
    g_zero_strides = zero_strides;
}

tsup_buf tsup_make_view(sbn_dtype dtype, int rank, const int64_t *shape, tsup_layout layout,
                        const double *values)
{
    tsup_buf b = tsup_make(dtype, rank, shape, layout, values);
    if (tsup_numel(rank, shape) == 0 && !g_zero_strides) {
        /* the strides of the shape with its 0 dims taken as 1 */
        int64_t ones[SBN_MAX_RANK];
        tsup_buf tmp;
        int d;
        for (d = 0; d < rank; d++) ones[d] = shape[d] > 0 ? shape[d] : 1;
        tmp = tsup_make(dtype, rank, ones, layout, NULL);
        memcpy(b.view.strides, tmp.view.strides, sizeof b.view.strides);
        tsup_free(&tmp);
    }
    return b;
}

void tsup_split_ncs(int rank, const int64_t *shape, int64_t *n, int64_t *c, int64_t *s)
{
    int d;
    *n = shape[0];
    *c = shape[1];
    *s = 1;
    for (d = 2; d < rank; d++) *s *= shape[d];
}

void tsup_shape_str(int rank, const int64_t *d, char *buf, size_t size)
{
    size_t used = 0;
    int k;
    buf[0] = 0;
    for (k = 0; k < rank && used + 1 < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "x" : "", (long long)d[k]);
}

int tsup_close_tol(const char *what, const double *got, const double *want, const double *tol,
                   int64_t n)
{
    int64_t i, bad = 0;
    double worst = 0.0;
    for (i = 0; i < n; i++) {
        double diff = fabs(got[i] - want[i]);
        int ok = (isnan(got[i]) && isnan(want[i])) || diff <= tol[i];
        if (!ok) {
            double ratio = isnan(diff) ? INFINITY : diff / tol[i];
            if (ratio > worst || isnan(worst)) worst = ratio;
            if (bad < 5)
                fprintf(stderr, "    %s[%lld]: got %.17g, want %.17g, diff %.3g (tol %.3g)\n",
                        what, (long long)i, got[i], want[i], diff, tol[i]);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "    %s: %lld of %lld elements differ, worst diff/tol %.3g\n", what,
                (long long)bad, (long long)n, worst);
    return bad == 0;
}

void *tsup_workspace(tsup_ws_size_fn fn, const sbn_tensor *x, size_t *bytes)
{
    *bytes = 0;
    if (fn(x, bytes) != SBN_OK) return NULL;
    return tsup_ws_alloc(*bytes);
}

void *tsup_ws_alloc(size_t bytes)
{
    return bytes ? malloc(bytes) : NULL;
}

sbn_pool_t *tsup_pool(int threads)
{
    sbn_pool_t *pool = NULL;
    if (sbn_pool_create(threads, &pool) != SBN_OK) return NULL;
    return pool;
}

double tsup_compute_u(sbn_dtype a, sbn_dtype b, sbn_dtype c)
{
    int all64 = a == SBN_F64 && b == SBN_F64 && c == SBN_F64;
    return tsup_unit_roundoff(all64 ? SBN_F64 : SBN_F32);
}

double tsup_abs_floor(sbn_dtype dtype)
{
    return dtype == SBN_F16 ? ldexp(1.0, -24) : 0.0;
}
