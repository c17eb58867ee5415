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

static const sbn_kernels *g_chosen;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const char *force = getenv("SBN_FORCE_SCALAR");
    size_t i;
    g_chosen = &g_tables[0];
    if (force != NULL && strcmp(force, "1") == 0) return;
    for (i = 0; i < sizeof g_tables / sizeof g_tables[0]; i++)
        if (supported(g_tables[i].isa)) g_chosen = &g_tables[i];
}

const sbn_kernels *sbn__kernels(void)
{
    pthread_once(&g_once, choose);
    return g_chosen;
}

const sbn_kernels *sbn__kernels_for(const char *isa)
{
    size_t i;
    for (i = 0; i < sizeof g_tables / sizeof g_tables[0]; i++)
        if (strcmp(g_tables[i].isa, isa) == 0) return supported(isa) ? &g_tables[i] : NULL;
    return NULL;
}
