/*
 * finish_scalar.c - the portable chunk-end kernels (kernels.h), one channel at a time,
 * the rules every variant matches: invstd is sbn__invstd(m2 / count, eps); fold_rows
 * gathers a channel's lanes (lanes never reached as +0.0) and folds them by sbn__fold16.
 */
#include "kernels/kernels.h"

void sbn_invstd_ukernel__scalar(const double *m2, size_t stride, size_t n, double count,
                                double eps, double *out)
{
    size_t j;
    for (j = 0; j < n; j++) out[j] = sbn__invstd(m2[j * stride] / count, eps);
}

void sbn_fold_rows_ukernel__scalar(double *a, double *b, size_t ld, size_t cn, unsigned used)
{
    size_t j;
    for (j = 0; j < cn; j++) {
        sbn__fold16_column(a + j, ld, used);
        sbn__fold16_column(b + j, ld, used);
    }
}
