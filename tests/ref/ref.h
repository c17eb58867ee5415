/*
 * ref.h - the double-precision oracle. Plain two-pass formulas over logical
 * row-major double arrays, written independently of the library's kernels and
 * never linked into it. x is (N, C, S) with S the product of the dims after the
 * channel axis; R = N * S elements per channel. Per-channel arrays have C values.
 */
#ifndef SBN_TEST_REF_H
#define SBN_TEST_REF_H

#include <stdint.h>

/* mean = sum/R; var_biased = sum((x-mean)^2)/R. R == 0 gives mean 0, var NaN. */
void ref_mean_var(const double *x, int64_t n, int64_t c, int64_t s, double *mean,
                  double *var_biased);
/* invstd = 1/sqrt(var_biased + eps) per channel; NaN for R == 0. */
void ref_stats(const double *x, int64_t n, int64_t c, int64_t s, double eps, double *mean,
               double *invstd);
/* sum and square sum per channel. */
void ref_reduce(const double *x, int64_t n, int64_t c, int64_t s, double *sum,
                double *square_sum);
/*
 * Merge W ranks' (mean_j, var_biased_j, count_j) [W][C] into global mean and biased var
 * by the two-pass identity on totals: M2 = sum_j (count_j*var_j + count_j*(mean_j - mean)^2).
 * Returns N = sum(count). Running stats (may be NULL) updated with momentum, unbiased var;
 * nothing is updated when N == 0, running_var not updated when N == 1.
 */
double ref_merge(const double *mean_j, const double *var_j, const double *count, int64_t w,
                 int64_t c, double momentum, double *mean, double *var_biased,
                 double *running_mean, double *running_var);
/* y = (x - mean) * invstd * w + b; w/b NULL mean 1/0. */
void ref_elemt(const double *x, int64_t n, int64_t c, int64_t s, const double *mean,
               const double *invstd, const double *w, const double *b, double *y);
/* sum_dy and sum_dy_xmu per channel (either may be NULL). */
void ref_backward_reduce(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                         const double *mean, double *sum_dy, double *sum_dy_xmu);
/* grad_input = (dy - sum_dy/N - (x-mean)*invstd^2*sum_dy_xmu/N) * invstd * w. */
void ref_backward_elemt(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                        const double *mean, const double *invstd, const double *w,
                        const double *sum_dy, const double *sum_dy_xmu, double count,
                        double *grad_input);
/*
 * Whole-batch training forward: y, batch mean/invstd; running stats (may be NULL)
 * updated with momentum and the unbiased variance (not when R <= 1).
 */
void ref_batch_norm_train(const double *x, int64_t n, int64_t c, int64_t s, const double *w,
                          const double *b, double momentum, double eps, double *y,
                          double *mean, double *invstd, double *running_mean,
                          double *running_var);
/*
 * Whole-batch training backward given the batch mean/invstd: grad_input, grad_weight,
 * grad_bias (any may be NULL).
 */
void ref_batch_norm_backward_train(const double *dy, const double *x, int64_t n, int64_t c,
                                   int64_t s, const double *w, const double *mean,
                                   const double *invstd, double *grad_input,
                                   double *grad_weight, double *grad_bias);
/*
 * A training-mode batch-norm loss for finite differences: L = sum(y * g) with y the
 * training forward output, g a fixed weighting of the same shape.
 */
double ref_bn_loss(const double *x, int64_t n, int64_t c, int64_t s, const double *w,
                   const double *b, double eps, const double *g);
#endif /* SBN_TEST_REF_H */
