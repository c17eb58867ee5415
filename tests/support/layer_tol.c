/*
 * layer_tol.c - the layer tests' tolerances of y and grad_input (layer_tol.h): the
 * output rounding, the error of the double statistics and sums, and the error of
 * the map's own arithmetic (docs/numerics.md, "Elementwise ops").
 */
#include "support/layer_tol.h"

#include <math.h>
#include <string.h>

double tsup_map_u(sbn_dtype xdt)
{
    return xdt == SBN_F64 ? 0.0 : ldexp(1.0, -24);
}

void tsup_layer_fwd_tol(const double *x, int64_t n, int64_t C, int64_t S, const double *w,
                        const double *b, const double *mean, const double *is,
                        const double *srel, double uo, double floor_abs, double um,
                        const double *want, double *tl)
{
    int64_t i;
    for (i = 0; i < n * C * S; i++) {
        int64_t c = (i / S) % C;
        double wc = w ? w[c] : 1.0, bc = b ? fabs(b[c]) : 0.0;
        double xw = fabs((x[i] - mean[c]) * is[c] * wc), mw = fabs(mean[c] * is[c] * wc);
        tl[i] = 2.0 * uo * fabs(want[i]) + floor_abs + 8.0 * ldexp(1.0, -53) * (bc + xw + mw) +
                4.0 * um * (bc + xw) + srel[c] * (xw + mw);
    }
}

void tsup_layer_bwd_tol(const double *dy, const double *x, int64_t n, int64_t C, int64_t S,
                        const double *w, const double *ms, const double *iss, const double *uc,
                        double uo, double floor_abs, double um, const double *want, double *tl,
                        double *absdy, double *absdx)
{
    int64_t i, R = n * S;
    memset(absdy, 0, (size_t)C * sizeof *absdy);
    memset(absdx, 0, (size_t)C * sizeof *absdx);
    for (i = 0; i < n * C * S; i++) {
        int64_t c = (i / S) % C;
        absdy[c] += fabs(dy[i]);
        absdx[c] += fabs(dy[i]) * (fabs((x[i] - ms[c]) * iss[c]) + fabs(ms[c] * iss[c]));
    }
    for (i = 0; i < n * C * S && tl; i++) {
        int64_t c = (i / S) % C;
        double wis = fabs((w ? w[c] : 1.0) * iss[c]);
        double t = fabs(dy[i]) + absdy[c] / (double)R +
                   (fabs((x[i] - ms[c]) * iss[c]) + fabs(ms[c] * iss[c])) * absdx[c] / (double)R;
        tl[i] = 2.0 * uo * fabs(want[i]) + floor_abs + (8.0 * uc[c] + 6.0 * um) * wis * t;
    }
}
