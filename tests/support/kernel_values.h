/*
 * kernel_values.h - the values and sizes that test_kernels.c and test_kernels_maps.c
 * feed the kernel variants: normal values, fp32 bit views, NaNs with random payloads,
 * values at or next to the rounding ties of fp32/fp16/bf16, a broad mix of magnitudes,
 * range edges, subnormals and specials, and the test sizes 0, 1..67 and a few large ones
 * up to MAXN, whose outputs sit PAD guard elements inside their buffers. Draws from
 * support/rng.h (the including file defines TSUP_RNG_SEED).
 */
#ifndef SBN_TEST_KERNEL_VALUES_H
#define SBN_TEST_KERNEL_VALUES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "support/rng.h"

#define MAXN 2048
#define PAD 64 /* guard elements either side of every output */

static inline double normal(void)
{
    double u = uniform(), v = uniform();
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static inline float float_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A NaN with a random payload, sign and quiet bit. */
static inline double random_nan(void)
{
    uint64_t mant = next_u64() & 0x000FFFFFFFFFFFFFull;
    if (mant == 0) mant = 1;
    return from_bits((next_u64() & 0x8000000000000000ull) | 0x7FF0000000000000ull | mant);
}

/*
 * A value at or next to a rounding tie of a format with `bits` significand bits
 * (24 fp32, 11 fp16, 8 bf16) and exponents emin..emax: a representable value plus
 * half an ulp, then moved by 0, a few double ulps, or a few float ulps of the tie.
 */
static inline double near_tie(int bits, int emin, int emax, int subnormal_min)
{
    int e = emin + below(emax - emin + 1);
    double ulp = ldexp(1.0, e - (bits - 1));
    double m = (double)((int64_t)(1 << (bits - 1)) + below(1 << (bits - 1)));
    double v, tie;
    if (subnormal_min && below(4) == 0) { /* the subnormal range of the format */
        ulp = ldexp(1.0, emin - (bits - 1));
        m = (double)below(1 << (bits - 1));
        v = m * ulp;
    } else {
        v = m * ulp;
    }
    tie = v + 0.5 * ulp;
    switch (below(6)) {
    case 0: break;
    case 1: tie = nextafter(tie, INFINITY); break;
    case 2: tie = nextafter(tie, -INFINITY); break;
    case 3: tie += ldexp(tie, -30) * (below(2) ? 1 : -1); break; /* a float ulp or so */
    case 4: tie = v; break;                                        /* exact */
    default: tie += ulp * (uniform() - 0.5); break;
    }
    return random_sign(tie);
}

/* One value of a broad mix: ties of every format, range edges, subnormals, specials. */
static inline double mixed_value(int specials)
{
    int kind = below(specials ? 18 : 14);
    switch (kind) {
    case 0: return normal();
    case 1: return 1e4 + 1e-2 * normal();
    case 2: return random_sign(ldexp(0.5 + uniform(), below(2000) - 1000));
    case 3: return near_tie(24, -126, 127, 1);  /* fp32 ties (and fp32 subnormals) */
    case 4: return near_tie(11, -14, 15, 1);    /* fp16 ties */
    case 5: return near_tie(8, -126, 127, 1);   /* bf16 ties */
    case 6: return random_sign(ldexp(uniform(), -1074 + below(60))); /* double subnormals */
    case 7: return random_sign(ldexp(uniform(), -150 + below(8)));   /* below fp32 subnormals */
    case 8: return random_sign(65504.0 + 32.0 * (uniform() - 0.3)); /* fp16 overflow edge */
    case 9: /* fp32 overflow edge: FLT_MAX, its rounding boundary, beyond */
        return random_sign(ldexp(1.0 - ldexp(1.0, -25) + ldexp(uniform() - 0.5, -23), 128));
    case 10: return random_sign(ldexp(0.5 + uniform(), -26 + below(4))); /* fp16 underflow edge */
    case 11: return random_sign(0.0);
    case 12: return random_sign(ldexp(1.0, below(300) - 150));
    case 13: return random_sign(1e300 * uniform());
    case 14: return random_nan();
    case 15: return random_sign(INFINITY);
    case 16: return from_bits(0x7FF8000000000000ull); /* the default NaN */
    default: return random_sign(ldexp(uniform(), -1074 + below(52)));
    }
}

static const size_t k_sizes[] = {100, 255, 1000, 1001, 2047, 2048};

/* The test sizes: 0 (when allowed), 1..67, then k_sizes. Returns the count. */
static inline int sizes(size_t *out, int with_zero)
{
    int c = 0;
    size_t i;
    if (with_zero) out[c++] = 0;
    for (i = 1; i <= 67; i++) out[c++] = i;
    for (i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; i++) out[c++] = k_sizes[i];
    return c;
}

#endif /* SBN_TEST_KERNEL_VALUES_H */
