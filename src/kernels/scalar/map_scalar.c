/*
 * map_scalar.c - the portable elementwise fp32 kernels, computed in double:
 *   normalize: y  = ((x - k0) * k1 + k2)
 *   backward:  gi = (((dy - k0) - (x - k1) * k2) * k3)
 * each rounded once to float.
 */
#include "kernels/kernels.h"

void sbn_f32_normalize_ukernel__scalar(const float *x, size_t n, const double *k, float *y)
{
    size_t i;
    for (i = 0; i < n; i++) y[i] = (float)(((double)x[i] - k[0]) * k[1] + k[2]);
}

void sbn_f32_backward_ukernel__scalar(const float *dy, const float *x, size_t n, const double *k,
                                      float *gi)
{
    size_t i;
    for (i = 0; i < n; i++)
        gi[i] = (float)((((double)dy[i] - k[0]) - ((double)x[i] - k[1]) * k[2]) * k[3]);
}
