/*
 * convert_scalar.c - the portable load and store kernels: contiguous fp32, fp16
 * and bf16 runs widened exactly to double, and doubles narrowed back with one
 * correct rounding (through float with round-to-odd for fp16 and bf16).
 */
#include <string.h>

#include "kernels/kernels.h"

void sbn_f32_load_ukernel__scalar(const void *src, size_t n, double *dst)
{
    const float *p = src;
    size_t i;
    for (i = 0; i < n; i++) dst[i] = p[i];
}

void sbn_f16_load_ukernel__scalar(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i;
    for (i = 0; i < n; i++) dst[i] = sbn__f16_to_float(p[i]);
}

void sbn_bf16_load_ukernel__scalar(const void *src, size_t n, double *dst)
{
    const uint16_t *p = src;
    size_t i;
    for (i = 0; i < n; i++) dst[i] = sbn__bf16_to_float(p[i]);
}

void sbn_f32_store_ukernel__scalar(const double *src, size_t n, void *dst)
{
    float *p = dst;
    size_t i;
    for (i = 0; i < n; i++) p[i] = (float)src[i];
}

void sbn_f16_store_ukernel__scalar(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i;
    for (i = 0; i < n; i++) p[i] = sbn__float_to_f16(sbn__narrow_round_to_odd(src[i]));
}

void sbn_bf16_store_ukernel__scalar(const double *src, size_t n, void *dst)
{
    uint16_t *p = dst;
    size_t i;
    for (i = 0; i < n; i++) p[i] = sbn__float_to_bf16(sbn__narrow_round_to_odd(src[i]));
}
