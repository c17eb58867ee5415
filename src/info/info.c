/*
 * info.c - sbn_info_get: the facts `syncbn info` prints, gathered from the modules
 * that own them - the kernel variant (kernels/dispatch.c), the machine description
 * (core/machine.c), the environment as parsed (core/env.c) and the size rules of the
 * schedules (ops/plan.h) - so that the command and other callers read them through
 * the public API instead of the library's internals. It sits above every module it
 * reads and nothing in the library calls it.
 */
#include <string.h>

#include "core/env.h"
#include "core/export.h"
#include "core/machine.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include "ops/plan.h"
#include "syncbn/info.h"

/* The variants a build may have, in kernels.inc's order (narrowest first). */
static const char *const k_isas[] = {"scalar", "avx2", "avx512", "avx512bf16"};

static void fill(sbn_info *info)
{
    const sbn__env *env = sbn__env_get();
    const sbn__machine *m = sbn__machine_get();
    double l1 = (double)sbn__cache_bytes(1), l3 = (double)sbn__cache_bytes(3);
    size_t i;
    int id;

    info->kernels = sbn__kernels()->isa;
    for (i = 0; i < sizeof k_isas / sizeof k_isas[0]; i++) {
        if (sbn__kernels_for(k_isas[i]) == NULL) continue;
        if (info->kernels_usable[0] != '\0')
            strncat(info->kernels_usable, " ",
                    sizeof info->kernels_usable - strlen(info->kernels_usable) - 1);
        strncat(info->kernels_usable, k_isas[i],
                sizeof info->kernels_usable - strlen(info->kernels_usable) - 1);
    }
    info->cpus_affinity = sbn__affinity_cpus(); /* now, as the default pool reads it */
    info->cpus = sbn__cpus_within_quota(info->cpus_affinity, m->cpu_quota);
    for (i = 0; i < 3; i++) {
        info->cache[i].bytes = m->cache[i].bytes;
        info->cache[i].sharing = m->cache[i].sharing;
        info->cache[i].reported = m->cache[i].reported;
        info->cache[i].source = m->cache[i].source;
    }
    info->row_tile_bytes = l1;
    info->map_stream_bytes = SBN_MAP_STREAM_SHARE * l3;
    info->rows_stream_bytes = SBN_ROWS_STREAM_SHARE * l3;
    info->rows_stream_min_row_bytes = SBN_ROWS_STREAM_MIN_BYTES;
    info->reduce_prefetch_bytes = SBN_REDUCE_PREFETCH_SHARE * l3;
    info->stream_stores = env->stream_stores;
    info->row_tiles = env->row_tiles;
    info->threads = env->num_threads > 0 ? env->num_threads : sbn__default_cpus();
    info->max_threads = SBN_ENV_MAX_THREADS;
    info->comm_timeout = env->comm_timeout;
    info->comm_timeout_default = SBN_COMM_DEFAULT_TIMEOUT;
    info->comm_timeout_max = SBN_COMM_MAX_TIMEOUT;
    for (id = 0; id < SBN_ENV_COUNT && id < SBN_INFO_MAX_VARS; id++) {
        const sbn__env_var *v = &env->var[id];
        sbn_info_var *out = &info->var[id];
        out->name = v->name;
        out->set = v->set;
        out->valid = v->valid;
        out->value = v->text;
        out->message = v->set && !v->valid ? v->message : "";
        sbn__env_describe(env, (sbn__env_id)id, out->state, sizeof out->state);
    }
    info->nvars = id;
    info->l3_instances = m->l3_instances;
    info->l3_instances_reported = m->l3_instances_reported;
    info->cpu_quota = m->cpu_quota;
    info->local_ranks = sbn__local_ranks(&info->local_ranks_source);
    if (info->local_ranks_source == NULL) info->local_ranks_source = "";
    info->prefetch_run_bytes = SBN_PREFETCH_RUN_BYTES;
}

SBN_API sbn_status sbn_info_get(sbn_info *info)
{
    sbn_info all; /* the whole struct; a caller built against a shorter one gets its part */
    size_t size;
    sbn__clear_error();
    if (info == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "info is NULL");
    size = info->size;
    if (size < offsetof(sbn_info, kernels_usable))
        return sbn__error(SBN_ERR_BAD_VALUE,
                          "info->size is %zu; expected sizeof(sbn_info) (%zu), at least %zu",
                          size, sizeof(sbn_info), offsetof(sbn_info, kernels_usable));
    memset(&all, 0, sizeof all);
    fill(&all);
    all.size = size < sizeof all ? size : sizeof all;
    memcpy(info, &all, all.size);
    return SBN_OK;
}
