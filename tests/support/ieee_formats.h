/*
 * ieee_formats.h - the element formats of the streaming-kernel oracle (test_kernels_stream.c)
 * written from the IEEE definitions, independently of the library's own conversions: the
 * f64/f32/f16/bf16 layouts, reading and writing element bits, exact widening (a NaN keeps
 * sign and payload and becomes quiet), rounding to any precision and exponent range to
 * nearest even or to odd, encoding, and the one narrowing of a map result (fp32 to nearest
 * even; fp16/bf16 round-to-odd to float, then to nearest even; NaN -> fp16 sign|0x7E00, bf16
 * high half|0x40). test_kernels_stream_formats.c checks them against known values and the
 * library's conversions. The bit views come from support/rng.h: the including file defines
 * TSUP_RNG_SEED first.
 */
#ifndef SBN_TEST_IEEE_FORMATS_H
#define SBN_TEST_IEEE_FORMATS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "support/rng.h"

/* 2^e, |e| < 1023. */
static inline double pow2(int e) { return from_bits((uint64_t)(e + 1023) << 52); }

static const struct {
    int mbits, ebits, es;
    const char *name;
} k_fmt[SBN_KD_COUNT] = {
    {52, 11, 8, "f64"}, {23, 8, 4, "f32"}, {10, 5, 2, "f16"}, {7, 8, 2, "bf16"}};

/* Element i of an array of type dt as bits (little-endian, as the targets). */
static inline uint64_t get_bits(int dt, const void *p, int64_t i)
{
    uint64_t u = 0;
    memcpy(&u, (const char *)p + i * k_fmt[dt].es, (size_t)k_fmt[dt].es);
    return u;
}

static inline void put_bits(int dt, void *p, int64_t i, uint64_t u)
{
    memcpy((char *)p + i * k_fmt[dt].es, &u, (size_t)k_fmt[dt].es);
}

/* Exact widening; a NaN keeps sign and payload and becomes quiet. */
static inline double widen(int dt, uint64_t u)
{
    int mb = k_fmt[dt].mbits, eb = k_fmt[dt].ebits, bias = (1 << (eb - 1)) - 1;
    uint64_t m = u & ((1ull << mb) - 1), e = (u >> mb) & ((1ull << eb) - 1);
    int neg = (int)((u >> (mb + eb)) & 1);
    double v;
    if (dt == SBN_KD_F64) return from_bits(u);
    if (e == (1ull << eb) - 1) {
        if (m == 0) return neg ? -INFINITY : INFINITY;
        return from_bits((uint64_t)neg << 63 | 0x7FF8000000000000ull | m << (52 - mb));
    }
    v = (double)(e ? m | 1ull << mb : m) * pow2((e ? (int)e : 1) - bias - mb);
    return neg ? -v : v;
}

static inline double get(int dt, const void *p, int64_t i) { return widen(dt, get_bits(dt, p, i)); }

/* v (not NaN) rounded to p significant bits, exponents emin..emax (gradual underflow
 * below emin), to nearest even or (odd) to odd; odd saturates at the largest finite. */
static inline double round_fmt(double v, int p, int emin, int emax, int odd)
{
    double a = fabs(v), m, fl, r;
    int e = (int)(bits_of(a) >> 52) - 1023; /* a in [2^e, 2^(e+1)); doubles' subnormals: -1023 */
    if (a == 0.0 || isinf(a)) return v;
    if (e < emin) e = emin;
    m = a * pow2(p - 1 - e); /* exact: a power-of-two scaling, m < 2^p */
    fl = floor(m);
    if (odd)
        r = fl == m || ((uint64_t)fl & 1) ? fl : fl + 1.0;
    else
        r = m - fl > 0.5 || (m - fl == 0.5 && ((uint64_t)fl & 1)) ? fl + 1.0 : fl;
    r *= pow2(e - p + 1);
    if (r >= pow2(emax + 1)) r = odd ? (2.0 - pow2(1 - p)) * pow2(emax) : INFINITY;
    return v < 0 ? -r : r;
}

/* The bits of r, a value of the format (or an infinity). */
static inline uint64_t encode(int dt, double r)
{
    int mb = k_fmt[dt].mbits, eb = k_fmt[dt].ebits, bias = (1 << (eb - 1)) - 1;
    uint64_t sign = (uint64_t)(signbit(r) != 0) << (mb + eb);
    double a = fabs(r);
    int e = (int)(bits_of(a) >> 52) - 1023;
    if (isinf(a)) return sign | ((1ull << eb) - 1) << mb;
    if (a == 0.0) return sign;
    if (e < 1 - bias) return sign | (uint64_t)(a * pow2(mb - (1 - bias)));
    return sign | (uint64_t)(e + bias) << mb | ((uint64_t)(a * pow2(mb - e)) - (1ull << mb));
}

/* The one narrowing of a map result to the element type. */
static inline uint64_t narrow(int dt, double v)
{
    uint64_t u = bits_of(v);
    if (dt == SBN_KD_F64) return u;
    if (isnan(v)) {
        uint32_t f = (uint32_t)(u >> 32 & 0x80000000u) | 0x7FC00000u; /* quiet, sign, payload */
        f |= (uint32_t)(u >> 29 & 0x7FFFFF);
        if (dt == SBN_KD_F32) return f;
        return dt == SBN_KD_F16 ? ((f >> 16) & 0x8000u) | 0x7E00u : (f >> 16) | 0x40u;
    }
    if (dt == SBN_KD_F32) return encode(dt, round_fmt(v, 24, -126, 127, 0));
    v = round_fmt(v, 24, -126, 127, 1);
    return dt == SBN_KD_F16 ? encode(dt, round_fmt(v, 11, -14, 15, 0))
                            : encode(dt, round_fmt(v, 8, -126, 127, 0));
}

#endif /* SBN_TEST_IEEE_FORMATS_H */
