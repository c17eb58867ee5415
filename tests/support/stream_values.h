/*
 * stream_values.h - the values that test_kernels_stream.c draws for its value profiles
 * and that test_kernels_stream_formats.c narrows: normal values (Box-Muller, both values
 * of a pair used), values next to the rounding ties of a format of any precision and
 * exponent range, and a mix of magnitudes, range edges of fp32/fp16, subnormals and signed
 * zeros. Draws from support/rng.h (the including file defines TSUP_RNG_SEED).
 */
#ifndef SBN_TEST_STREAM_VALUES_H
#define SBN_TEST_STREAM_VALUES_H

#include <math.h>
#include <stdint.h>

#include "support/rng.h"

static inline double normal(void) /* Box-Muller, both values used */
{
    static double spare;
    static int have;
    double u, v, r;
    if (have) return have = 0, spare;
    u = uniform(), v = uniform();
    if (u < 1e-300) u = 1e-300;
    r = sqrt(-2.0 * log(u));
    spare = r * sin(6.283185307179586 * v), have = 1;
    return r * cos(6.283185307179586 * v);
}

/* Next to a rounding tie of a format with `bits` significand bits, exponents emin..emax. */
static inline double near_tie(int bits, int emin, int emax)
{
    double ulp = ldexp(1.0, emin + below(emax - emin + 1) - (bits - 1));
    double tie = ((double)((int64_t)1 << (bits - 1)) + below(1 << (bits - 1)) + 0.5) * ulp;
    switch (below(4)) {
    case 0: break;
    case 1: tie = nextafter(tie, INFINITY); break;
    case 2: tie = nextafter(tie, -INFINITY); break;
    default: tie += ldexp(tie, -30) * (below(2) ? 1 : -1); break;
    }
    return random_sign(tie);
}

static inline double mixed_value(void)
{
    switch (below(12)) {
    case 0: return normal();
    case 1: return 1e4 + 1e-2 * normal();
    case 2: return random_sign(ldexp(0.5 + uniform(), below(2000) - 1000));
    case 3: return near_tie(24, -126, 127);
    case 4: return near_tie(11, -14, 15);
    case 5: return near_tie(8, -126, 127);
    case 6: return random_sign(ldexp(uniform(), -1074 + below(60)));
    case 7: return random_sign(ldexp(uniform(), -150 + below(8)));
    case 8: return random_sign(65504.0 + 32.0 * (uniform() - 0.3));
    case 9: return random_sign(ldexp(1.0 - ldexp(1.0, -25) + ldexp(uniform() - 0.5, -23), 128));
    case 10: return random_sign(ldexp(0.5 + uniform(), -26 + below(4)));
    default: return random_sign(0.0);
    }
}

#endif /* SBN_TEST_STREAM_VALUES_H */
