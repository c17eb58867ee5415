/*
 * kernel_isas.h - the kernel variants the tests walk: their names as in
 * src/kernels/kernels.inc, the tables this machine supports, and the widest one
 * (the one dispatch should choose), the same with the streaming map tables, and a
 * bitwise compare of two arrays. Shared by
 * test_kernels.c, test_kernels_maps.c, test_kernels_stream.c and test_kernels_dispatch.c.
 */
#ifndef SBN_TEST_KERNEL_ISAS_H
#define SBN_TEST_KERNEL_ISAS_H

#include <string.h>

#include "kernels/kernels.h"

static const char *const k_isa_names[] = {"scalar", "avx2", "avx512", "avx512bf16"};
#define NISA ((int)(sizeof k_isa_names / sizeof k_isa_names[0]))


static inline int isas(const sbn_kernels **out)
{
    int i, n = 0;
    for (i = 0; i < NISA; i++)
        if ((out[n] = sbn__kernels_for(k_isa_names[i])) != NULL) n++;
    return n;
}

/* The tables of isas() followed by the streaming tables that have maps of their own
 * (non-temporal stores, e.g. "avx512_nt"): the variants the map tests compare. */
#define NVARIANT (2 * NISA)
static inline int map_variants(const sbn_kernels **out)
{
    int i, n = isas(out), m = n;
    for (i = 0; i < n; i++) {
        const sbn_kernels *s = sbn__kernels_streaming_for(out[i]->isa);
        if (s != NULL && s->normalize[SBN_KD_F32] != out[i]->normalize[SBN_KD_F32]) out[m++] = s;
    }
    return m;
}

static inline const char *widest_isa(void)
{
    int i;
    const char *w = "scalar";
    for (i = 0; i < NISA; i++)
        if (sbn__kernels_for(k_isa_names[i]) != NULL) w = k_isa_names[i];
    return w;
}

/* Index of the first differing element of size es, or -1. */
static inline long first_diff(const void *a, const void *b, size_t count, size_t es)
{
    size_t i;
    for (i = 0; i < count; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) != 0) return (long)i;
    return -1;
}

#endif /* SBN_TEST_KERNEL_ISAS_H */
