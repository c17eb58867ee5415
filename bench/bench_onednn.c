/*
 * bench_onednn.c - the oneDNN 2.6 peer, through its C API, on the benchmark's own
 * buffers (memory objects wrap them; no copies). Compiled only when CMake finds
 * oneDNN. Tags: nchw (channels-first), nhwc (channels-last and 2-D as N x C x 1 x 1). Flags
 * dnnl_use_scale | dnnl_use_shift (f32 weight and bias); eval adds
 * dnnl_use_global_stats with the running statistics; backward is dnnl_backward
 * (diff scale and shift too) with the forward-training primitive as its hint.
 * Threads: omp_set_num_threads(T) before creating and before running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench.h"

struct dnnl_case {
    int threads;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t fwd_pd, pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[10];
    dnnl_exec_arg_t args[10];
    int nargs;
    const char *impl;
};

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

int bench_dnnl_available(char *buf, size_t len)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, len, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch,
             v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other runtime");
    return 1;
}

static void set_threads(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

static int add_arg(dnnl_case *k, int arg, const dnnl_memory_desc_t *md, void *data)
{
    dnnl_memory_t m;
    if (dnnl_memory_create(&m, md, k->engine, data) != dnnl_success) return -1;
    k->mem[k->nargs] = m;
    k->args[k->nargs].arg = arg;
    k->args[k->nargs].memory = m;
    k->nargs++;
    return 0;
}

void dnnl_case_destroy(dnnl_case *k)
{
    int i;
    if (k == NULL) return;
    for (i = 0; i < k->nargs; i++) dnnl_memory_destroy(k->mem[i]);
    if (k->prim) dnnl_primitive_destroy(k->prim);
    if (k->pd) dnnl_primitive_desc_destroy(k->pd);
    if (k->fwd_pd) dnnl_primitive_desc_destroy(k->fwd_pd);
    free(k);
}

dnnl_case *dnnl_case_create(const bench_problem *p, bench_mode mode, char *why, size_t why_len)
{
    dnnl_case *k;
    dnnl_memory_desc_t data_md, vec_md;
    dnnl_batch_normalization_desc_t fd, bd;
    dnnl_dims_t dims, cdim;
    dnnl_format_tag_t tag;
    dnnl_data_type_t dt = p->dtype == SBN_BF16 ? dnnl_bf16
                          : p->dtype == SBN_F16 ? dnnl_f16
                                                : dnnl_f32;
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_status_t st;
    int ok = 1;

    if (g_engine == NULL) {
        if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success ||
            dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags) != dnnl_success) {
            snprintf(why, why_len, "engine/stream creation failed");
            return NULL;
        }
    }
    k = calloc(1, sizeof *k);
    if (k == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    k->threads = p->threads;
    k->engine = g_engine;
    k->stream = g_stream;
    set_threads(p->threads);

    dims[0] = p->n;
    dims[1] = p->c;
    dims[2] = p->h;
    dims[3] = p->w;
    cdim[0] = p->c;
    /* A 2-D (N, C) tensor is described as (N, C, 1, 1) nhwc, the same bytes: with the
     * 2-D nc tag oneDNN 2.6 only offers its generic ncsp_bnorm:any, ~80x slower. */
    tag = p->channels_last || p->rank == 2 ? dnnl_nhwc : dnnl_nchw;
    if (dnnl_memory_desc_init_by_tag(&data_md, 4, dims, dt, tag) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&vec_md, 1, cdim, dnnl_f32, dnnl_a) != dnnl_success) {
        snprintf(why, why_len, "memory desc init failed");
        dnnl_case_destroy(k);
        return NULL;
    }
    st = dnnl_batch_normalization_forward_desc_init(
        &fd, mode == BENCH_EVAL ? dnnl_forward_inference : dnnl_forward_training, &data_md,
        (float)p->eps, mode == BENCH_EVAL ? flags | dnnl_use_global_stats : flags);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&k->fwd_pd, &fd, NULL, k->engine, NULL);
    if (st == dnnl_success && mode == BENCH_BWD) {
        st = dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &data_md, &data_md,
                                                         (float)p->eps, flags);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&k->pd, &bd, NULL, k->engine, k->fwd_pd);
    } else if (st == dnnl_success) {
        k->pd = k->fwd_pd;
        k->fwd_pd = NULL;
    }
    if (st != dnnl_success) {
        snprintf(why, why_len, "no primitive (%s)",
                 st == dnnl_unimplemented ? "unimplemented" : "error");
        dnnl_case_destroy(k);
        return NULL;
    }
    if (dnnl_primitive_desc_query(k->pd, dnnl_query_impl_info_str, 0, &k->impl) != dnnl_success)
        k->impl = "?";
    {
        const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(k->pd, dnnl_query_workspace_md, 0);
        if (ws != NULL && dnnl_memory_desc_get_size(ws) != 0) {
            snprintf(why, why_len, "needs a workspace (not expected without fused ReLU)");
            dnnl_case_destroy(k);
            return NULL;
        }
    }
    if (dnnl_primitive_create(&k->prim, k->pd) != dnnl_success) {
        snprintf(why, why_len, "primitive creation failed");
        dnnl_case_destroy(k);
        return NULL;
    }
    ok &= add_arg(k, DNNL_ARG_SRC, &data_md, p->x) == 0;
    ok &= add_arg(k, DNNL_ARG_SCALE, &vec_md, p->weight) == 0;
    if (mode == BENCH_BWD) {
        /* the batch statistics of this project's forward (mean and the variance that
         * matches its invstd); gradients of scale and shift into the shared vectors */
        ok &= add_arg(k, DNNL_ARG_MEAN, &vec_md, p->save_mean) == 0;
        /* 2.6 refuses (invalid_arguments) a use_shift backward without the shift input */
        ok &= add_arg(k, DNNL_ARG_SHIFT, &vec_md, p->bias) == 0;
        ok &= add_arg(k, DNNL_ARG_VARIANCE, &vec_md, p->batch_var) == 0;
        ok &= add_arg(k, DNNL_ARG_DIFF_DST, &data_md, p->dy) == 0;
        ok &= add_arg(k, DNNL_ARG_DIFF_SRC, &data_md, p->dx) == 0;
        ok &= add_arg(k, DNNL_ARG_DIFF_SCALE, &vec_md, p->grad_weight) == 0;
        ok &= add_arg(k, DNNL_ARG_DIFF_SHIFT, &vec_md, p->grad_bias) == 0;
    } else {
        ok &= add_arg(k, DNNL_ARG_SHIFT, &vec_md, p->bias) == 0;
        ok &= add_arg(k, DNNL_ARG_DST, &data_md, p->y) == 0;
        /* eval reads the running stats; training writes its batch stats into the
         * scratch vectors oneDNN owns here (grad_* are free in forward cases) */
        ok &= add_arg(k, DNNL_ARG_MEAN, &vec_md, mode == BENCH_EVAL ? p->run_mean : p->grad_weight) == 0;
        ok &= add_arg(k, DNNL_ARG_VARIANCE, &vec_md, mode == BENCH_EVAL ? p->run_var : p->grad_bias) == 0;
    }
    if (!ok) {
        snprintf(why, why_len, "memory creation failed");
        dnnl_case_destroy(k);
        return NULL;
    }
    return k;
}

int dnnl_case_run(dnnl_case *k)
{
    set_threads(k->threads);
    if (dnnl_primitive_execute(k->prim, k->stream, k->nargs, k->args) != dnnl_success) return -1;
    return dnnl_stream_wait(k->stream) == dnnl_success ? 0 : -1;
}

const char *dnnl_case_impl(const dnnl_case *k)
{
    return k->impl;
}
