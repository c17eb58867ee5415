/*
 * finite_inputs.h - finite kernel inputs of every element type for the kernel tests that
 * compare variants with each other (test_kernels_fresh.c, test_kernels_planes.c): an LCG
 * stream the caller seeds, values k * 2^e with |k| <= 1000 and e drawn from `exps`
 * exponents starting at `emin` (fp64/fp32), or random fp16/bf16 patterns whose exponent
 * field is not all ones (no Inf or NaN), so that no NaN payload choice enters a bitwise
 * compare. Header-only.
 */
#ifndef SBN_TEST_FINITE_INPUTS_H
#define SBN_TEST_FINITE_INPUTS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

static inline uint64_t tsup_lcg_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 17;
}

/* n elements of kernel type dt at x. */
static inline void tsup_fill_finite(int dt, void *x, size_t n, uint64_t *s, int emin, int exps)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double v = ldexp((double)(tsup_lcg_next(s) % 2001) - 1000.0,
                         (int)(tsup_lcg_next(s) % (uint64_t)exps) + emin);
        switch (dt) {
        case SBN_KD_F64: ((double *)x)[i] = v; break;
        case SBN_KD_F32: ((float *)x)[i] = (float)v; break;
        default: {
            uint16_t b = (uint16_t)tsup_lcg_next(s);
            uint16_t expo = dt == SBN_KD_F16 ? 0x7C00 : 0x7F80;
            if ((b & expo) == expo) b = (uint16_t)(b & ~(expo & (expo >> 1)));
            ((uint16_t *)x)[i] = b;
        }
        }
    }
}

#endif /* SBN_TEST_FINITE_INPUTS_H */
