/*
 * stream_map_scalar.c - the portable elementwise maps of kernels.h for every
 * element type, over runs of one channel and over rows of a block of channels
 * (coefficients in structure-of-arrays form). Each element is computed in double
 * in this order and narrowed once:
 *   normalize:  y  = (x - k0) * k1 + k2
 *   backward:   gi = ((dy - k0) - (x - k1) * k2) * k3
 */
#include "kernels/scalar/kernel_io_scalar.h"

#define SBN_DEFINE_MAP_SCALAR(dt)                                                               \
    void sbn_##dt##_normalize_ukernel__scalar(const void *x, size_t n, const double *k, void *y) \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++)                                                                \
            sbn__st_##dt(y, (int64_t)i, (sbn__ld_##dt(x, (int64_t)i) - k[0]) * k[1] + k[2]);   \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_backward_ukernel__scalar(const void *dy, const void *x, size_t n,           \
                                             const double *k, void *gi)                        \
    {                                                                                          \
        size_t i;                                                                              \
        for (i = 0; i < n; i++) {                                                              \
            double g = sbn__ld_##dt(dy, (int64_t)i), v = sbn__ld_##dt(x, (int64_t)i);          \
            sbn__st_##dt(gi, (int64_t)i, ((g - k[0]) - (v - k[1]) * k[2]) * k[3]);             \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_normalize_ukernel__scalar(const void *x, int64_t xs, size_t rows,       \
                                                  size_t cn, const double *k, size_t ldk,      \
                                                  void *y, int64_t ys)                         \
    {                                                                                          \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++)                                                             \
            for (j = 0; j < cn; j++) {                                                         \
                double v = sbn__ld_##dt(x, (int64_t)r * xs + (int64_t)j);                      \
                sbn__st_##dt(y, (int64_t)r * ys + (int64_t)j,                                  \
                             (v - k[j]) * k[ldk + j] + k[2 * ldk + j]);                        \
            }                                                                                  \
    }                                                                                          \
                                                                                               \
    void sbn_##dt##_row_backward_ukernel__scalar(const void *dy, int64_t dys, const void *x,    \
                                                 int64_t xs, size_t rows, size_t cn,           \
                                                 const double *k, size_t ldk, void *gi,        \
                                                 int64_t gs)                                   \
    {                                                                                          \
        size_t r, j;                                                                           \
        for (r = 0; r < rows; r++)                                                             \
            for (j = 0; j < cn; j++) {                                                         \
                double g = sbn__ld_##dt(dy, (int64_t)r * dys + (int64_t)j);                    \
                double v = sbn__ld_##dt(x, (int64_t)r * xs + (int64_t)j);                      \
                sbn__st_##dt(gi, (int64_t)r * gs + (int64_t)j,                                 \
                             ((g - k[j]) - (v - k[ldk + j]) * k[2 * ldk + j]) * k[3 * ldk + j]); \
            }                                                                                  \
    }

SBN_DEFINE_MAP_SCALAR(f64)
SBN_DEFINE_MAP_SCALAR(f32)
SBN_DEFINE_MAP_SCALAR(f16)
SBN_DEFINE_MAP_SCALAR(bf16)
