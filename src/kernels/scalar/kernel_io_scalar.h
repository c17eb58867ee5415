/*
 * kernel_io_scalar.h - element access for the portable streaming kernels: the
 * exact widening of element i of an fp64/fp32/fp16/bf16 array to double, and the
 * one narrowing of a double result to the element type (fp32: the C cast, round
 * to nearest even; fp16/bf16: round to odd to float, then to nearest even, so a
 * value is rounded once as if directly). Each dtype gets its own inline pair,
 * named by the dtype token the kernel macros use. The float maps use a second
 * pair per non-fp64 dtype: the exact widening to float and the one narrowing of a
 * float (fp16/bf16: to nearest even).
 */
#ifndef SBN_KERNEL_IO_SCALAR_H
#define SBN_KERNEL_IO_SCALAR_H

#include "kernels/kernels.h"

static inline float sbn__ldf_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static inline float sbn__ldf_f16(const void *p, int64_t i)
{
    return sbn__f16_to_float(((const uint16_t *)p)[i]);
}
static inline float sbn__ldf_bf16(const void *p, int64_t i)
{
    return sbn__bf16_to_float(((const uint16_t *)p)[i]);
}

static inline void sbn__stf_f32(void *p, int64_t i, float v) { ((float *)p)[i] = v; }
static inline void sbn__stf_f16(void *p, int64_t i, float v)
{
    ((uint16_t *)p)[i] = sbn__float_to_f16(v);
}
static inline void sbn__stf_bf16(void *p, int64_t i, float v)
{
    ((uint16_t *)p)[i] = sbn__float_to_bf16(v);
}

/* The double pair: float widens exactly; fp16/bf16 narrow through round-to-odd. */
static inline double sbn__ld_f64(const void *p, int64_t i) { return ((const double *)p)[i]; }
static inline double sbn__ld_f32(const void *p, int64_t i) { return sbn__ldf_f32(p, i); }
static inline double sbn__ld_f16(const void *p, int64_t i) { return sbn__ldf_f16(p, i); }
static inline double sbn__ld_bf16(const void *p, int64_t i) { return sbn__ldf_bf16(p, i); }

static inline void sbn__st_f64(void *p, int64_t i, double v) { ((double *)p)[i] = v; }
static inline void sbn__st_f32(void *p, int64_t i, double v) { sbn__stf_f32(p, i, (float)v); }
static inline void sbn__st_f16(void *p, int64_t i, double v)
{
    sbn__stf_f16(p, i, sbn__narrow_round_to_odd(v));
}
static inline void sbn__st_bf16(void *p, int64_t i, double v)
{
    sbn__stf_bf16(p, i, sbn__narrow_round_to_odd(v));
}

#endif /* SBN_KERNEL_IO_SCALAR_H */
