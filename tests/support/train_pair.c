/*
 * train_pair.c - the batch norm step of train_pair.h: its seeded inputs, training
 * forward, training backward and eval forward into fresh buffers, and their
 * byte-for-byte comparison
 * (every output read back as doubles, which holds each dtype's values exactly).
 */
#include <stdlib.h>

#include "harness/harness.h"
#include "support/train_pair.h"
#include "syncbn/ops.h"

void tsup_step_inputs_make(const tsup_step_case *k, uint64_t seed, tsup_step_inputs *in)
{
    int64_t numel = tsup_numel(k->rank, k->shape);
    double *v = malloc((size_t)numel * sizeof(double)), *g = malloc((size_t)numel * sizeof(double));
    tsup_rng rng = tsup_rng_seed(seed + (uint64_t)numel);
    tsup_fill_normal(&rng, v, numel, 3.0, 2.0, k->dtype);
    tsup_fill_normal(&rng, g, numel, 0.5, 1.0, k->dtype);
    in->x = tsup_make(k->dtype, k->rank, k->shape, k->layout, v);
    in->dy = tsup_make(k->dtype, k->rank, k->shape, k->layout, g);
    in->pools[0] = in->pools[1] = in->pools[2] = NULL;
    sbn_pool_create(2, &in->pools[1]);
    sbn_pool_create(3, &in->pools[2]);
    free(v);
    free(g);
}

void tsup_step_inputs_free(tsup_step_inputs *in)
{
    tsup_free(&in->x);
    tsup_free(&in->dy);
    sbn_pool_destroy(in->pools[1]);
    sbn_pool_destroy(in->pools[2]);
}

void tsup_step_run(const tsup_step_case *k, const tsup_step_inputs *in, tsup_step_outputs *o,
                   sbn_pool_t *pool)
{
    const tsup_buf *x = &in->x, *dy = &in->dy;
    sbn_dtype dtype = k->dtype;
    int rank = k->rank;
    const int64_t *shape = k->shape;
    tsup_layout layout = k->layout;
    int64_t c = shape[1];
    double *ones = malloc((size_t)c * sizeof(double)), *zeros = malloc((size_t)c * sizeof(double));
    size_t bytes, bytes2;
    void *ws;
    int64_t i;
    for (i = 0; i < c; i++) ones[i] = 1.0, zeros[i] = 0.0;
    o->y = tsup_make(dtype, rank, shape, layout, NULL);
    o->ye = tsup_make(dtype, rank, shape, layout, NULL);
    o->gi = tsup_make(dtype, rank, shape, layout, NULL);
    o->sm = tsup_make_1d(SBN_F32, c, NULL);
    o->si = tsup_make_1d(SBN_F32, c, NULL);
    o->rm = tsup_make_1d(SBN_F32, c, zeros);
    o->rv = tsup_make_1d(SBN_F32, c, ones);
    free(ones);
    free(zeros);
    o->gw = tsup_make_1d(SBN_F64, c, NULL);
    o->gb = tsup_make_1d(SBN_F32, c, NULL);
    sbn_batch_norm_workspace_size(&x->view, &bytes);
    sbn_batch_norm_backward_workspace_size(&x->view, &bytes2);
    ws = malloc(bytes > bytes2 ? bytes : bytes2);
    sbn_batch_norm(&x->view, NULL, NULL, 1, 0.1, 1e-5, &o->rm.view, &o->rv.view, &o->y.view,
                   &o->sm.view, &o->si.view, ws, bytes, pool);
    sbn_batch_norm_backward(&dy->view, &x->view, NULL, NULL, NULL, &o->sm.view, &o->si.view, 1,
                            1e-5, &o->gi.view, &o->gw.view, &o->gb.view, ws, bytes2, pool);
    sbn_batch_norm(&x->view, NULL, NULL, 0, 0.1, 1e-5, &o->rm.view, &o->rv.view, &o->ye.view, NULL,
                   NULL, ws, bytes, pool);
    free(ws);
}

static int same(const tsup_buf *a, const tsup_buf *b, const char *what)
{
    int64_t n = sbn_tensor_numel(&a->view);
    double *va = malloc((size_t)(n ? n : 1) * sizeof(double));
    double *vb = malloc((size_t)(n ? n : 1) * sizeof(double));
    int ok;
    tsup_read(&a->view, va);
    tsup_read(&b->view, vb);
    ok = tsup_same_bytes(what, va, vb, (size_t)n * sizeof(double));
    free(va);
    free(vb);
    return ok;
}

int tsup_step_same(const tsup_step_outputs *a, const tsup_step_outputs *b)
{
    return same(&a->y, &b->y, "y") && same(&a->sm, &b->sm, "save_mean") &&
           same(&a->si, &b->si, "save_invstd") && same(&a->rm, &b->rm, "running_mean") &&
           same(&a->rv, &b->rv, "running_var") && same(&a->gi, &b->gi, "grad_input") &&
           same(&a->gw, &b->gw, "grad_weight") && same(&a->gb, &b->gb, "grad_bias") &&
           same(&a->ye, &b->ye, "y (eval)");
}

void tsup_step_free(tsup_step_outputs *o)
{
    tsup_free(&o->y);
    tsup_free(&o->ye);
    tsup_free(&o->gi);
    tsup_free(&o->sm);
    tsup_free(&o->si);
    tsup_free(&o->rm);
    tsup_free(&o->rv);
    tsup_free(&o->gw);
    tsup_free(&o->gb);
}

int tsup_step_matches(const tsup_step_case *k, const tsup_step_inputs *in,
                      const tsup_step_outputs *base, sbn_pool_t *pool)
{
    tsup_step_outputs got;
    int same;
    tsup_step_run(k, in, &got, pool);
    same = tsup_step_same(base, &got);
    tsup_step_free(&got);
    return same;
}

void tsup_step_check_setting(const tsup_step_case *k, uint64_t seed, tsup_setting_fn setting,
                             const char *what)
{
    tsup_step_inputs in;
    tsup_step_outputs base;
    int p, mode;
    tsup_step_inputs_make(k, seed, &in);
    setting(0);
    tsup_step_run(k, &in, &base, NULL);
    for (mode = 1; mode >= -1; mode -= 2) { /* forced, then by size */
        setting(mode);
        for (p = 0; p < 3; p++)
            if (!tsup_step_matches(k, &in, &base, in.pools[p]))
                sbn_test_fail(__FILE__, __LINE__,
                              "%s rank %d (%lld, %lld, %lld, %lld), %s %d, pool %d: differs",
                              sbn_dtype_name(k->dtype), k->rank, (long long)k->shape[0],
                              (long long)k->shape[1], (long long)k->shape[2],
                              (long long)k->shape[3], what, mode, p);
    }
    setting(-1);
    tsup_step_free(&base);
    tsup_step_inputs_free(&in);
}
