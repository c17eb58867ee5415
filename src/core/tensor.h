/*
 * tensor.h - what core knows of element types beyond the public sbn_dtype_size and
 * sbn_dtype_name (tensor.c). Core only sizes and names elements; reading or writing
 * their values is the kernels' (kernels/convert.h).
 */
#ifndef SBN_CORE_TENSOR_H
#define SBN_CORE_TENSOR_H

#include "syncbn/syncbn.h"

/* 1 for the floating-point dtypes (f32, f64, f16, bf16): the ones activations may have. */
int sbn__is_float_dtype(sbn_dtype dtype);

#endif /* SBN_CORE_TENSOR_H */
