/*
 * finish_scalar.c - the portable invstd kernel (kernels.h): one channel at a time,
 * sbn__invstd(m2 / count, eps), the rule every variant matches.
 */
#include "kernels/kernels.h"

void sbn_invstd_ukernel__scalar(const double *m2, size_t stride, size_t n, double count,
                                double eps, double *out)
{
    size_t j;
    for (j = 0; j < n; j++) out[j] = sbn__invstd(m2[j * stride] / count, eps);
}
