/*
 * convert.h - element values of any dtype to and from double (convert.c): runs with
 * a stride, and single elements of 1-D and 2-D views. Contiguous runs of fp32, fp16
 * and bf16 go through the chosen kernel table (kernels.h), the rest through the
 * scalar rules every variant matches, so the bits never depend on the ISA. The
 * engines use these where a kernel cannot read a tensor directly, the ops for their
 * per-channel vectors. The fp16/bf16 <-> float rules themselves are in kernels.h.
 */
#ifndef SBN_KERNELS_CONVERT_H
#define SBN_KERNELS_CONVERT_H

#include <stdint.h>

#include "syncbn/syncbn.h"

/* Loads n elements at base, step `stride` elements, as doubles. */
void sbn__load_run(const void *base, sbn_dtype dtype, int64_t stride, int64_t n, double *dst);
/* Stores n doubles, each rounded to nearest (even) in dtype. */
void sbn__store_run(void *base, sbn_dtype dtype, int64_t stride, int64_t n, const double *src);
/*
 * Element i along dim 0 of a view (for 1-D per-channel tensors). Inline for fp32 and
 * fp64, the per-channel vectors of nearly every call: the ops read and write a handful
 * per channel, and with thousands of channels on few rows a call per element costs
 * more than the data. Other dtypes go through sbn__load1_any / sbn__store1_any.
 */
double sbn__load1_any(const sbn_tensor *t, int64_t i);
void sbn__store1_any(const sbn_tensor *t, int64_t i, double value);

static inline double sbn__load1(const sbn_tensor *t, int64_t i)
{
    if (t->dtype == SBN_F32) return ((const float *)t->data)[i * t->strides[0]];
    if (t->dtype == SBN_F64) return ((const double *)t->data)[i * t->strides[0]];
    return sbn__load1_any(t, i);
}

static inline void sbn__store1(const sbn_tensor *t, int64_t i, double value)
{
    if (t->dtype == SBN_F32)
        ((float *)t->data)[i * t->strides[0]] = (float)value; /* to nearest, as the kernels */
    else if (t->dtype == SBN_F64)
        ((double *)t->data)[i * t->strides[0]] = value;
    else
        sbn__store1_any(t, i, value);
}
/* Elements [i0, i0 + n) along dim 0 of a view, as sbn__load_run / sbn__store_run: the
 * per-channel vectors a piece of channels at a time, through the conversion kernels,
 * where a loop of sbn__load1 / sbn__store1 converts and branches per element. */
void sbn__load_vec(const sbn_tensor *t, int64_t i0, int64_t n, double *dst);
void sbn__store_vec(const sbn_tensor *t, int64_t i0, int64_t n, const double *src);
/* Element (i, j) of a 2-D view. */
double sbn__load2(const sbn_tensor *t, int64_t i, int64_t j);

#endif /* SBN_KERNELS_CONVERT_H */
