/*
 * convert.c - the element conversions: fp16 and bf16 to and from float (the rules
 * every kernel variant reproduces bit for bit), and runs or single elements of any
 * dtype to and from double, contiguous runs through the chosen kernel table. They
 * live with the kernels because the kernels' tails call the scalar rules and the run
 * converters call the kernels: core below them converts nothing. Stores round to
 * nearest, ties to even, exactly once: a double is first narrowed to float with
 * round-to-odd, which keeps enough bits for the final round-to-nearest-even into
 * fp16 or bf16 to be correct.
 */
#include <math.h>
#include <string.h>

#include "core/export.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "syncbn/syncbn.h"

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* double -> float, rounding to odd: truncate toward zero, then set the last bit if inexact. */
float sbn__narrow_round_to_odd(double d)
{
    float f = (float)d;
    uint32_t u;
    if (!isfinite(f) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    u = float_bits(f) | 1u;
    return bits_float(u);
}

float sbn__f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    if (exponent == 0) {
        float v = (float)mantissa * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    if (exponent == 31) return bits_float(sign | 0x7F800000u | (mantissa << 13));
    return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t sbn__float_to_f16(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return (uint16_t)(sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 rounds to infinity */
    if (a < 0x38800000u) {                                    /* below 2^-14: subnormal */
        float scaled = bits_float(a) * 16777216.0f;             /* exact: times 2^24 */
        return (uint16_t)(sign | (uint16_t)nearbyintf(scaled));
    }
    a += 0xFFFu + ((a >> 13) & 1u); /* round to nearest even on the 13 dropped bits */
    return (uint16_t)(sign | (uint16_t)((a >> 13) - (112u << 10)));
}

float sbn__bf16_to_float(uint16_t h)
{
    return bits_float((uint32_t)h << 16);
}

uint16_t sbn__float_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

void sbn__load_run(const void *base, sbn_dtype dtype, int64_t stride, int64_t n, double *dst)
{
    const sbn_kernels *k = sbn__kernels();
    int64_t i;
    /* Contiguous runs of 8 or more: the SIMD kernels. Shorter ones (a chunk's shift, one
     * element per chunk) convert here, exactly as the kernels do: a 1-element call
     * through the AVX-512 kernel ended in a masked store that the caller's reload could
     * not forward from, a store-forwarding stall per chunk. */
    if (stride == 1 && n >= 8) {
        if (dtype == SBN_F32) return k->load_f32(base, (size_t)n, dst);
        if (dtype == SBN_F16) return k->load_f16(base, (size_t)n, dst);
        if (dtype == SBN_BF16) return k->load_bf16(base, (size_t)n, dst);
    }
    switch (dtype) {
    case SBN_F32: {
        const float *p = base;
        if (stride == 1)
            for (i = 0; i < n; i++) dst[i] = p[i];
        else
            for (i = 0; i < n; i++) dst[i] = p[i * stride];
        break;
    }
    case SBN_F64: {
        const double *p = base;
        for (i = 0; i < n; i++) dst[i] = p[i * stride];
        break;
    }
    case SBN_F16: {
        const uint16_t *p = base;
        for (i = 0; i < n; i++) dst[i] = sbn__f16_to_float(p[i * stride]);
        break;
    }
    case SBN_BF16: {
        const uint16_t *p = base;
        for (i = 0; i < n; i++) dst[i] = sbn__bf16_to_float(p[i * stride]);
        break;
    }
    case SBN_I32: {
        const int32_t *p = base;
        for (i = 0; i < n; i++) dst[i] = p[i * stride];
        break;
    }
    case SBN_I64: {
        const int64_t *p = base;
        for (i = 0; i < n; i++) dst[i] = (double)p[i * stride];
        break;
    }
    }
}

void sbn__store_run(void *base, sbn_dtype dtype, int64_t stride, int64_t n, const double *src)
{
    const sbn_kernels *k = sbn__kernels();
    int64_t i;
    if (stride == 1 && n > 0) {
        if (dtype == SBN_F32) return k->store_f32(src, (size_t)n, base);
        if (dtype == SBN_F16) return k->store_f16(src, (size_t)n, base);
        if (dtype == SBN_BF16) return k->store_bf16(src, (size_t)n, base);
    }
    switch (dtype) {
    case SBN_F32: {
        float *p = base;
        if (stride == 1)
            for (i = 0; i < n; i++) p[i] = (float)src[i];
        else
            for (i = 0; i < n; i++) p[i * stride] = (float)src[i];
        break;
    }
    case SBN_F64: {
        double *p = base;
        for (i = 0; i < n; i++) p[i * stride] = src[i];
        break;
    }
    case SBN_F16: {
        uint16_t *p = base;
        for (i = 0; i < n; i++) p[i * stride] = sbn__float_to_f16(sbn__narrow_round_to_odd(src[i]));
        break;
    }
    case SBN_BF16: {
        uint16_t *p = base;
        for (i = 0; i < n; i++) p[i * stride] = sbn__float_to_bf16(sbn__narrow_round_to_odd(src[i]));
        break;
    }
    case SBN_I32: {
        int32_t *p = base;
        for (i = 0; i < n; i++) p[i * stride] = (int32_t)nearbyint(src[i]);
        break;
    }
    case SBN_I64: {
        int64_t *p = base;
        for (i = 0; i < n; i++) p[i * stride] = (int64_t)nearbyint(src[i]);
        break;
    }
    }
}

/* One element of a dtype other than fp32 and fp64 (those are inline in convert.h),
 * through the run converters: the same conversions as a run. */
double sbn__load1_any(const sbn_tensor *t, int64_t i)
{
    double v = 0.0;
    const char *p = (const char *)t->data + i * t->strides[0] * (int64_t)sbn_dtype_size(t->dtype);
    sbn__load_run(p, t->dtype, 1, 1, &v);
    return v;
}

void sbn__store1_any(const sbn_tensor *t, int64_t i, double value)
{
    char *p = (char *)t->data + i * t->strides[0] * (int64_t)sbn_dtype_size(t->dtype);
    sbn__store_run(p, t->dtype, 1, 1, &value);
}

void sbn__load_vec(const sbn_tensor *t, int64_t i0, int64_t n, double *dst)
{
    const char *p =
        (const char *)t->data + i0 * t->strides[0] * (int64_t)sbn_dtype_size(t->dtype);
    sbn__load_run(p, t->dtype, t->strides[0], n, dst);
}

void sbn__store_vec(const sbn_tensor *t, int64_t i0, int64_t n, const double *src)
{
    char *p = (char *)t->data + i0 * t->strides[0] * (int64_t)sbn_dtype_size(t->dtype);
    sbn__store_run(p, t->dtype, t->strides[0], n, src);
}

double sbn__load2(const sbn_tensor *t, int64_t i, int64_t j)
{
    double v = 0.0;
    const char *p = (const char *)t->data +
                    (i * t->strides[0] + j * t->strides[1]) * (int64_t)sbn_dtype_size(t->dtype);
    sbn__load_run(p, t->dtype, 1, 1, &v);
    return v;
}

SBN_API uint16_t sbn_float_to_f16(float value)
{
    return sbn__float_to_f16(value);
}

SBN_API float sbn_f16_to_float(uint16_t bits)
{
    return sbn__f16_to_float(bits);
}
