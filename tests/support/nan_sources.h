/*
 * nan_sources.h - the NaN-source rule of test_kernels.c and test_kernels_maps.c: how
 * many distinct NaN sources feed one result, and the running count of results that were
 * therefore compared as "both NaN" only (g_relaxed, printed by each case). The rule
 * itself is below.
 */
#ifndef SBN_TEST_NAN_SOURCES_H
#define SBN_TEST_NAN_SOURCES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "support/rng.h"

/*
 * NaN payloads. x86 returns the first operand's NaN when both operands of an
 * operation are NaNs, and C compilers treat + and * as commutative, so which of
 * two different NaNs survives is not fixed even in the scalar code. Where the
 * inputs of one result hold two or more "NaN sources" (distinct NaN patterns once
 * quieted, plus any infinity, which can make the default NaN), that result only
 * has to be NaN in both; with at most one source every bit must match. The sources
 * of a map result are its inputs and the coefficients the map reads, as passed: the
 * floats for the f32 maps (three for normalize, four for backward). In the float maps
 * a finite value above 2^126 counts like an infinity: a difference of two such can
 * overflow to one, then 0 * inf makes the default NaN, which may meet a NaN operand in
 * an FMA or a product, whose forms (vfmadd132/213/231, commuted operands) pick
 * differently between two NaNs.
 */
static int g_relaxed; /* results compared as "both NaN" in the running case */

static inline void add_source(uint64_t *seen, int *count, double v, int *inf, double huge)
{
    int i;
    uint64_t q;
    if (isinf(v) || fabs(v) > huge) *inf = 1;
    if (!isnan(v)) return;
    q = bits_of(v) | 0x0008000000000000ull;
    for (i = 0; i < *count; i++)
        if (seen[i] == q) return;
    if (*count < 4) seen[(*count)++] = q;
}

/* The number of NaN sources (capped at 5) among a[0..na), b[0..nb); finite values above
 * huge count as an infinity. */
static inline int nan_sources_huge(const double *a, size_t na, const double *b, size_t nb,
                                   double huge)
{
    uint64_t seen[4];
    int count = 0, inf = 0;
    size_t i;
    for (i = 0; i < na; i++) add_source(seen, &count, a[i], &inf, huge);
    for (i = 0; i < nb; i++) add_source(seen, &count, b[i], &inf, huge);
    return count + inf;
}

#endif /* SBN_TEST_NAN_SOURCES_H */
