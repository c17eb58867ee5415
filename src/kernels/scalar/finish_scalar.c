/*
 * finish_scalar.c - the portable invstd kernel (kernels.h): one channel at a time,
 * the C expression every variant matches, v = m2 / count + eps, then 1 / sqrt(v), or 0
 * when v is 0. Division, addition and square root are each rounded once.
 */
#include <math.h>

#include "kernels/kernels.h"

void sbn_invstd_ukernel__scalar(const double *m2, size_t stride, size_t n, double count,
                                double eps, double *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        double v = m2[j * stride] / count + eps;
        out[j] = v == 0.0 ? 0.0 : 1.0 / sqrt(v);
    }
}
