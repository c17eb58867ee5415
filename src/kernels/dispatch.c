/*
 * dispatch.c - picks the kernel variants once per process: the widest ISA in
 * kernels.inc that was built and that this CPU supports, unless the environment
 * sets SBN_FORCE_SCALAR=1. Every variant gives the same bits (kernels.h), so the
 * choice changes speed only.
 */
#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

/* One streaming family in sbn_kdtype order. */
#define SBN_FAMILY(kernel, isa)                                                              \
    {sbn_f64_##kernel##_ukernel__##isa, sbn_f32_##kernel##_ukernel__##isa,                    \
     sbn_f16_##kernel##_ukernel__##isa, sbn_bf16_##kernel##_ukernel__##isa}

#define SBN_KERNEL_TABLE(isa)                                                                 \
    {#isa,                                                                                    \
     sbn_f32_load_ukernel__##isa,                                                             \
     sbn_f16_load_ukernel__##isa,                                                             \
     sbn_bf16_load_ukernel__##isa,                                                            \
     sbn_f32_store_ukernel__##isa,                                                            \
     sbn_f16_store_ukernel__##isa,                                                            \
     sbn_bf16_store_ukernel__##isa,                                                           \
     SBN_FAMILY(accum, isa),                                                                  \
     SBN_FAMILY(bwd_accum, isa),                                                              \
     SBN_FAMILY(row_accum, isa),                                                              \
     SBN_FAMILY(row_bwd_accum, isa),                                                          \
     SBN_FAMILY(normalize, isa),                                                              \
     SBN_FAMILY(backward, isa),                                                               \
     SBN_FAMILY(row_normalize, isa),                                                          \
     SBN_FAMILY(row_backward, isa)},

static const sbn_kernels g_tables[] = {
#define SBN_KERNEL_ISA(isa, supported) SBN_KERNEL_TABLE(isa)
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

/* The kernels for tensors beyond the cache, for the ISAs that have them: maps with
 * non-temporal stores, row reductions with prefetch (AVX2 keeps its own). */
typedef struct streaming_maps {
    const char *isa, *name;
    sbn_row_accum_fn row_accum[SBN_KD_COUNT];
    sbn_row_bwd_accum_fn row_bwd_accum[SBN_KD_COUNT];
    sbn_normalize_fn normalize[SBN_KD_COUNT];
    sbn_backward_fn backward[SBN_KD_COUNT];
    sbn_row_normalize_fn row_normalize[SBN_KD_COUNT];
    sbn_row_backward_fn row_backward[SBN_KD_COUNT];
} streaming_maps;

static const streaming_maps g_streaming_maps[] = {
#ifdef SBN_HAVE_AVX2
    {"avx2", "avx2_nt", SBN_FAMILY(row_accum, avx2), SBN_FAMILY(row_bwd_accum, avx2),
     SBN_FAMILY(normalize, avx2_nt), SBN_FAMILY(backward, avx2_nt),
     SBN_FAMILY(row_normalize, avx2_nt), SBN_FAMILY(row_backward, avx2_nt)},
#endif
#ifdef SBN_HAVE_AVX512
    {"avx512", "avx512_nt", SBN_FAMILY(row_accum, avx512_pf), SBN_FAMILY(row_bwd_accum, avx512_pf),
     SBN_FAMILY(normalize, avx512_nt), SBN_FAMILY(backward, avx512_nt),
     SBN_FAMILY(row_normalize, avx512_nt), SBN_FAMILY(row_backward, avx512_nt)},
#endif
    {NULL, NULL, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}}};

static sbn_kernels g_streaming[SBN_TABLES]; /* g_tables[i] with its kernels beyond the cache */
static size_t g_chosen;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_streaming(void)
{
    size_t i, j;
    for (i = 0; i < SBN_TABLES; i++) {
        g_streaming[i] = g_tables[i];
        for (j = 0; g_streaming_maps[j].isa != NULL; j++) {
            const streaming_maps *m = &g_streaming_maps[j];
            if (strcmp(m->isa, g_tables[i].isa) != 0) continue;
            g_streaming[i].isa = m->name;
            memcpy(g_streaming[i].row_accum, m->row_accum, sizeof m->row_accum);
            memcpy(g_streaming[i].row_bwd_accum, m->row_bwd_accum, sizeof m->row_bwd_accum);
            memcpy(g_streaming[i].normalize, m->normalize, sizeof m->normalize);
            memcpy(g_streaming[i].backward, m->backward, sizeof m->backward);
            memcpy(g_streaming[i].row_normalize, m->row_normalize, sizeof m->row_normalize);
            memcpy(g_streaming[i].row_backward, m->row_backward, sizeof m->row_backward);
        }
    }
}

static void choose(void)
{
    const char *force = getenv("SBN_FORCE_SCALAR");
    size_t i;
    build_streaming();
    g_chosen = 0;
    if (force != NULL && strcmp(force, "1") == 0) return;
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
