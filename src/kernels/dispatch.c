/*
 * dispatch.c - picks the kernel variants once per process: the widest ISA in
 * kernels.inc that was built and that this CPU supports, unless the environment
 * sets SBN_FORCE_SCALAR=1 (env.c). Every variant gives the same bits (kernels.h), so the
 * choice changes speed only.
 */
#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "kernels/kernels.h"

/* One streaming family in sbn_kdtype order. */
#define SBN_FAMILY(kernel, isa)                                                              \
    {sbn_f64_##kernel##_ukernel__##isa, sbn_f32_##kernel##_ukernel__##isa,                    \
     sbn_f16_##kernel##_ukernel__##isa, sbn_bf16_##kernel##_ukernel__##isa}

/* A table named `name`: conversions, plane and runs reductions of `isa`, row reductions of
 * `rowred`, row_chunk and planes reductions of `rows`, maps of `maps` (one ISA for all four
 * in the tables of kernels.inc). */
#define SBN_KERNEL_TABLE_OF(name, isa, rowred, rows, maps)                                    \
    {#name,                                                                                   \
     sbn_f32_load_ukernel__##isa,                                                             \
     sbn_f16_load_ukernel__##isa,                                                             \
     sbn_bf16_load_ukernel__##isa,                                                            \
     sbn_f32_store_ukernel__##isa,                                                            \
     sbn_f16_store_ukernel__##isa,                                                            \
     sbn_bf16_store_ukernel__##isa,                                                           \
     SBN_FAMILY(accum, isa),                                                                  \
     SBN_FAMILY(bwd_accum, isa),                                                              \
     SBN_FAMILY(row_accum, rowred),                                                           \
     SBN_FAMILY(row_bwd_accum, rowred),                                                       \
     SBN_FAMILY(normalize, maps),                                                             \
     SBN_FAMILY(backward, maps),                                                              \
     SBN_FAMILY(row_normalize, maps),                                                         \
     SBN_FAMILY(row_backward, maps),                                                          \
     SBN_FAMILY(runs_accum, isa),                                                             \
     SBN_FAMILY(runs_bwd_accum, isa),                                                         \
     SBN_FAMILY(planes_accum, rows),                                                          \
     SBN_FAMILY(planes_bwd_accum, rows),                                                      \
     SBN_FAMILY(row_chunk, rows),                                                             \
     SBN_FAMILY(row_bwd_chunk, rows),                                                         \
     SBN_FAMILY(runs_normalize, maps),                                                        \
     SBN_FAMILY(runs_backward, maps),                                                         \
     sbn_invstd_ukernel__##isa,                                                               \
     sbn_fold_rows_ukernel__##isa,                                                            \
     SBN_ROW_CHUNK_SLICED_##rows,                                                             \
     SBN_PLANES_BY_RUN_##rows}
/* row_chunk_sliced of each ISA's row kernels (kernels.h). */
#define SBN_ROW_CHUNK_SLICED_scalar 1
#define SBN_ROW_CHUNK_SLICED_avx2 1
#define SBN_ROW_CHUNK_SLICED_avx512 0
#define SBN_ROW_CHUNK_SLICED_avx512_pf 0
/* planes_by_run of each ISA's planes kernels (kernels.h; the planes of `rows`). */
#define SBN_PLANES_BY_RUN_scalar 1
#define SBN_PLANES_BY_RUN_avx2 1
#define SBN_PLANES_BY_RUN_avx512 0
#define SBN_PLANES_BY_RUN_avx512_pf 1
#define SBN_KERNEL_TABLE(isa) SBN_KERNEL_TABLE_OF(isa, isa, isa, isa, isa),
/* The table of each row of kernels.inc: one ISA throughout, but avx512bf16, which is
 * avx512 with maps of its own. */
#define SBN_TABLE_scalar SBN_KERNEL_TABLE(scalar)
#define SBN_TABLE_avx2 SBN_KERNEL_TABLE(avx2)
#define SBN_TABLE_avx512 SBN_KERNEL_TABLE(avx512)
#define SBN_TABLE_avx512bf16 SBN_KERNEL_TABLE_OF(avx512bf16, avx512, avx512, avx512, avx512bf16),

static const sbn_kernels g_tables[] = {
#define SBN_KERNEL_ISA(isa, supported) SBN_TABLE_##isa
#include "kernels/kernels.inc"
#undef SBN_KERNEL_ISA
};

/* F16C (CPUID.1:ECX bit 29), which not every compiler's __builtin_cpu_supports knows. */
__attribute__((unused)) static int cpu_has_f16c(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
#else
    return 0;
#endif
}

/* AVX512_BF16 (CPUID.(EAX=7, ECX=1):EAX bit 5), which not every compiler's
 * __builtin_cpu_supports knows. */
__attribute__((unused)) static int cpu_has_avx512bf16(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
#else
    return 0;
#endif
}

static int supported(const char *isa)
{
    __builtin_cpu_init();
#define SBN_KERNEL_ISA(name, check) \
    if (strcmp(isa, #name) == 0) return (check);
#include "kernels/kernels.inc"
#undef SBN_KERNEL_ISA
    return 0;
}

#define SBN_TABLES (sizeof g_tables / sizeof g_tables[0])

/* The tables for tensors beyond the cache, for the ISAs that have them: maps with
 * non-temporal stores, row reductions with prefetch, and for AVX-512 planes reductions
 * one channel at a time (in memory order); `isa` names the
 * table of kernels.inc each one stands in for. */
typedef struct streaming_table {
    const char *isa;
    sbn_kernels table;
} streaming_table;

static const streaming_table g_streaming_tables[] = {
#ifdef SBN_HAVE_AVX2
    {"avx2", SBN_KERNEL_TABLE_OF(avx2_nt, avx2, avx2_pf, avx2, avx2_nt)},
#endif
#ifdef SBN_HAVE_AVX512
    {"avx512", SBN_KERNEL_TABLE_OF(avx512_nt, avx512, avx512_pf, avx512_pf, avx512_nt)},
#endif
#ifdef SBN_HAVE_AVX512BF16
    {"avx512bf16", SBN_KERNEL_TABLE_OF(avx512bf16_nt, avx512, avx512_pf, avx512_pf, avx512_nt)},
#endif
    {.isa = NULL}}; /* the end */

static sbn_kernels g_streaming[SBN_TABLES]; /* g_tables[i] with its kernels beyond the cache */
static size_t g_chosen;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_streaming(void)
{
    size_t i, j;
    for (i = 0; i < SBN_TABLES; i++) {
        g_streaming[i] = g_tables[i];
        for (j = 0; g_streaming_tables[j].isa != NULL; j++)
            if (strcmp(g_streaming_tables[j].isa, g_tables[i].isa) == 0)
                g_streaming[i] = g_streaming_tables[j].table;
    }
}

static void choose(void)
{
    size_t i;
    build_streaming();
    g_chosen = 0;
    if (sbn__env_get()->force_scalar) return;
    for (i = 0; i < SBN_TABLES; i++)
        if (supported(g_tables[i].isa)) g_chosen = i;
}

const sbn_kernels *sbn__kernels(void)
{
    pthread_once(&g_once, choose);
    return &g_tables[g_chosen];
}

const sbn_kernels *sbn__kernels_streaming(void)
{
    pthread_once(&g_once, choose);
    return &g_streaming[g_chosen];
}

static int table_index(const char *isa)
{
    size_t i;
    for (i = 0; i < SBN_TABLES; i++)
        if (strcmp(g_tables[i].isa, isa) == 0) return supported(isa) ? (int)i : -1;
    return -1;
}

const sbn_kernels *sbn__kernels_for(const char *isa)
{
    int i = table_index(isa);
    return i < 0 ? NULL : &g_tables[i];
}

const sbn_kernels *sbn__kernels_streaming_for(const char *isa)
{
    int i = table_index(isa);
    pthread_once(&g_once, choose);
    return i < 0 ? NULL : &g_streaming[i];
}
