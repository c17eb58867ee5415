/*
 * layer_tol.h - the per-element tolerances of the layer tests' y and grad_input
 * against the double oracle (docs/numerics.md), shared by
 * test_layer.c, test_layer_repro.c and tests/mpi/test_mpi_layer.c:
 *   y:  2 uo |want| + floor + 8 u64 (|b| + xw + mw) + 4 um (|b| + xw) + srel (xw + mw)
 *       with xw = |(x - mean) invstd w|, mw = |mean invstd w|;
 *   gi: 2 uo |want| + floor + (8 uc + 6 um) |w invstd| t,
 *       t = |dy| + sum|dy|/R + (|xhat| + |mean invstd|) sum|dy|(|xhat| + |mean invstd|)/R;
 * uo is the output's unit roundoff, floor its absolute floor (fp16 subnormals), srel
 * and uc the relative errors of the statistics and sums, and um the unit roundoff of
 * the map's own arithmetic: 2^-24 when it computes in float (x not fp64), else 0
 * (the double form's error is the 8 u64 term). w and b may be NULL (1 and 0).
 */
#ifndef SBN_TEST_LAYER_TOL_H
#define SBN_TEST_LAYER_TOL_H

#include <stdint.h>

#include "syncbn/syncbn.h"

/* um for activations of dtype xdt: 2^-24 unless fp64. */
double tsup_map_u(sbn_dtype xdt);

void tsup_layer_fwd_tol(const double *x, int64_t n, int64_t C, int64_t S, const double *w,
                        const double *b, const double *mean, const double *is,
                        const double *srel, double uo, double floor_abs, double um,
                        const double *want, double *tl);

/* Also returns absdy = sum |dy| and absdx = sum |dy| (|xhat| + |mean invstd|) per channel,
 * the scales of sum_dy and sum_dy_xmu; tl (and want) may be NULL for only those. */
void tsup_layer_bwd_tol(const double *dy, const double *x, int64_t n, int64_t C, int64_t S,
                        const double *w, const double *ms, const double *iss, const double *uc,
                        double uo, double floor_abs, double um, const double *want, double *tl,
                        double *absdy, double *absdx);

#endif /* SBN_TEST_LAYER_TOL_H */
