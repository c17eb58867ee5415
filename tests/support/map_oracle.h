/*
 * map_oracle.h - an independent model of the fp32/fp16/bf16 elementwise maps of
 * kernels.h, written from their documented formula and not from the kernels:
 *   normalize:  y  = fma(x - f0, f1, f2)
 *   backward:   gi = fma(x - f0, f1, dy - f2) * f3
 * in float, each operation rounded once to nearest even from its exact value. No
 * fmaf and no FMA instruction: the exact values are formed in double. A product of
 * two floats is exact in double (24 + 24 bits, exponents within double's normal
 * range), so one rounding of it to float is the float product; a sum of two doubles
 * is exact as the pair s + e of TwoSum (Knuth), and s + e rounded to 53 bits to odd,
 * then to float, is the float nearest s + e, since 53 >= 24 + 2 (Boldo and Melquiond,
 * "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
 * odd"). Specials: a NaN operand propagates (quieted, payload kept), else 0 * inf and
 * inf - inf give the default NaN, as IEEE 754 and x86 do; with two NaN operands the
 * choice is not modelled (the tests keep such inputs out of bitwise comparisons).
 * Shared by test_kernels_maps.c and test_kernels_stream.c; compiled like them without
 * -ffp-contract=fast (ISO C), and the sums below have no product to contract anyway.
 */
#ifndef SBN_TEST_MAP_ORACLE_H
#define SBN_TEST_MAP_ORACLE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The float nearest a + b, for finite doubles whose sum is far from double overflow. */
static inline float tsup_float_of_sum(double a, double b)
{
    double s = a + b, bv = s - a, av = s - bv;
    double e = (a - av) + (b - bv); /* a + b == s + e exactly */
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (e != 0.0 && (u & 1) == 0) /* to odd: s's odd neighbour on e's side */
        s = nextafter(s, e > 0.0 ? INFINITY : -INFINITY);
    return (float)s;
}

/* A float NaN with its quiet bit set (sign and payload kept), as x86 arithmetic returns it. */
static inline float tsup_quiet(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u |= 0x00400000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* a - b rounded once to float. */
static inline float tsup_subf(float a, float b)
{
    if (isnan(a)) return tsup_quiet(a);
    if (isnan(b)) return tsup_quiet(b);
    if (isinf(a) || isinf(b)) return (float)((double)a - (double)b); /* inf - inf: default NaN */
    return tsup_float_of_sum(a, -(double)b);
}

/* a * b rounded once to float. */
static inline float tsup_mulf(float a, float b)
{
    if (isnan(a)) return tsup_quiet(a);
    if (isnan(b)) return tsup_quiet(b);
    return (float)((double)a * (double)b); /* exact, or inf, or 0 * inf's default NaN */
}

/* fma(a, b, c) = a * b + c rounded once to float. */
static inline float tsup_fmaf(float a, float b, float c)
{
    double p;
    if (isnan(a)) return tsup_quiet(a);
    if (isnan(b)) return tsup_quiet(b);
    if (isnan(c)) return tsup_quiet(c);
    p = (double)a * (double)b; /* exact; 0 * inf: the default NaN */
    if (!isfinite(p) || isinf(c)) return (float)(p + (double)c);
    return tsup_float_of_sum(p, c);
}

/* The maps on one element; f[0], f[ldk], f[2 * ldk], f[3 * ldk] as in kernels.h. */
static inline float tsup_normalize_flt(float x, const float *f, size_t ldk)
{
    return tsup_fmaf(tsup_subf(x, f[0]), f[ldk], f[2 * ldk]);
}

static inline float tsup_backward_flt(float dy, float x, const float *f, size_t ldk)
{
    return tsup_mulf(tsup_fmaf(tsup_subf(x, f[0]), f[ldk], tsup_subf(dy, f[2 * ldk])),
                     f[3 * ldk]);
}

#endif /* SBN_TEST_MAP_ORACLE_H */
