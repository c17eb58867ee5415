/*
 * ref.c - the double-precision oracle behind every numeric test. Each function is
 * a plain loop nest over (n, c, s) on logical row-major doubles, written from the
 * formulas in ops.h / the spec and sharing nothing with the library. Means and
 * variances use the two-pass algorithm with the usual correction term
 * (var = (sum(d^2) - (sum d)^2 / R) / R, d = x - mean), which is accurate to a
 * few ulps of double for any data the tests use. No cleverness, no speed.
 */
#include "ref.h"

#include <math.h>

/* Index of element (i, ch, k) of an (n, c, s) row-major array. */
static int64_t at(int64_t i, int64_t ch, int64_t k, int64_t c, int64_t s)
{
    return (i * c + ch) * s + k;
}

/* Mean and biased variance of channel ch; R == 0 gives mean 0, var NaN. */
static void channel_mean_var(const double *x, int64_t n, int64_t c, int64_t s, int64_t ch,
                             double *mean_out, double *var_out)
{
    int64_t r = n * s, i, k;
    double sum = 0.0, mean, dsum = 0.0, d2sum = 0.0;
    if (r == 0) {
        *mean_out = 0.0;
        *var_out = NAN;
        return;
    }
    for (i = 0; i < n; i++)
        for (k = 0; k < s; k++) sum += x[at(i, ch, k, c, s)];
    mean = sum / (double)r;
    for (i = 0; i < n; i++) {
        for (k = 0; k < s; k++) {
            double d = x[at(i, ch, k, c, s)] - mean;
            dsum += d;
            d2sum += d * d;
        }
    }
    /* Second pass refinement: the exact mean is mean + dsum / r. */
    *mean_out = mean + dsum / (double)r;
    *var_out = (d2sum - dsum * dsum / (double)r) / (double)r;
    if (*var_out < 0.0) *var_out = 0.0;
}

void ref_mean_var(const double *x, int64_t n, int64_t c, int64_t s, double *mean,
                  double *var_biased)
{
    int64_t ch;
    for (ch = 0; ch < c; ch++) channel_mean_var(x, n, c, s, ch, &mean[ch], &var_biased[ch]);
}

void ref_stats(const double *x, int64_t n, int64_t c, int64_t s, double eps, double *mean,
               double *invstd)
{
    int64_t ch;
    for (ch = 0; ch < c; ch++) {
        double var;
        channel_mean_var(x, n, c, s, ch, &mean[ch], &var);
        invstd[ch] = isnan(var) ? NAN : 1.0 / sqrt(var + eps);
    }
}

void ref_reduce(const double *x, int64_t n, int64_t c, int64_t s, double *sum,
                double *square_sum)
{
    int64_t ch, i, k;
    for (ch = 0; ch < c; ch++) {
        double a = 0.0, b = 0.0;
        for (i = 0; i < n; i++) {
            for (k = 0; k < s; k++) {
                double v = x[at(i, ch, k, c, s)];
                a += v;
                b += v * v;
            }
        }
        sum[ch] = a;
        square_sum[ch] = b;
    }
}

/* running <- (1 - momentum) * running + momentum * value (running may be NULL). */
static void blend(double *running, int64_t ch, double momentum, double value)
{
    if (running) running[ch] = (1.0 - momentum) * running[ch] + momentum * value;
}

double ref_merge(const double *mean_j, const double *var_j, const double *count, int64_t w,
                 int64_t c, double momentum, double *mean, double *var_biased,
                 double *running_mean, double *running_var)
{
    int64_t ch, j;
    double total = 0.0;
    for (j = 0; j < w; j++) total += count[j];
    for (ch = 0; ch < c; ch++) {
        double sum = 0.0, m2 = 0.0, mu;
        if (total == 0.0) {
            mean[ch] = 0.0;
            var_biased[ch] = NAN;
            continue;
        }
        for (j = 0; j < w; j++)
            if (count[j] > 0.0) sum += count[j] * mean_j[j * c + ch];
        mu = sum / total;
        for (j = 0; j < w; j++) {
            if (count[j] > 0.0) {
                double d = mean_j[j * c + ch] - mu;
                m2 += count[j] * var_j[j * c + ch] + count[j] * d * d;
            }
        }
        mean[ch] = mu;
        var_biased[ch] = m2 / total;
        blend(running_mean, ch, momentum, mu);
        if (total > 1.0) blend(running_var, ch, momentum, m2 / (total - 1.0));
    }
    return total;
}

void ref_elemt(const double *x, int64_t n, int64_t c, int64_t s, const double *mean,
               const double *invstd, const double *w, const double *b, double *y)
{
    int64_t i, ch, k;
    for (i = 0; i < n; i++) {
        for (ch = 0; ch < c; ch++) {
            double wc = w ? w[ch] : 1.0, bc = b ? b[ch] : 0.0;
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                y[idx] = (x[idx] - mean[ch]) * invstd[ch] * wc + bc;
            }
        }
    }
}

void ref_backward_reduce(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                         const double *mean, double *sum_dy, double *sum_dy_xmu)
{
    int64_t i, ch, k;
    for (ch = 0; ch < c; ch++) {
        double a = 0.0, b = 0.0;
        for (i = 0; i < n; i++) {
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                a += dy[idx];
                b += dy[idx] * (x[idx] - mean[ch]);
            }
        }
        if (sum_dy) sum_dy[ch] = a;
        if (sum_dy_xmu) sum_dy_xmu[ch] = b;
    }
}

void ref_backward_elemt(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                        const double *mean, const double *invstd, const double *w,
                        const double *sum_dy, const double *sum_dy_xmu, double count,
                        double *grad_input)
{
    int64_t i, ch, k;
    for (i = 0; i < n; i++) {
        for (ch = 0; ch < c; ch++) {
            double wc = w ? w[ch] : 1.0, is = invstd[ch];
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                grad_input[idx] = (dy[idx] - sum_dy[ch] / count -
                                   (x[idx] - mean[ch]) * is * is * sum_dy_xmu[ch] / count) *
                                  is * wc;
            }
        }
    }
}

void ref_batch_norm_train(const double *x, int64_t n, int64_t c, int64_t s, const double *w,
                          const double *b, double momentum, double eps, double *y,
                          double *mean, double *invstd, double *running_mean,
                          double *running_var)
{
    int64_t r = n * s, ch;
    for (ch = 0; ch < c; ch++) {
        double var;
        channel_mean_var(x, n, c, s, ch, &mean[ch], &var);
        invstd[ch] = r == 0 ? NAN : 1.0 / sqrt(var + eps);
        if (r >= 1) blend(running_mean, ch, momentum, mean[ch]);
        if (r >= 2) blend(running_var, ch, momentum, var * (double)r / (double)(r - 1));
    }
    if (y) ref_elemt(x, n, c, s, mean, invstd, w, b, y);
}

void ref_batch_norm_backward_train(const double *dy, const double *x, int64_t n, int64_t c,
                                   int64_t s, const double *w, const double *mean,
                                   const double *invstd, double *grad_input,
                                   double *grad_weight, double *grad_bias)
{
    int64_t r = n * s, i, ch, k;
    for (ch = 0; ch < c; ch++) {
        double sdy = 0.0, sdyxhat = 0.0, wc = w ? w[ch] : 1.0;
        for (i = 0; i < n; i++) {
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                sdy += dy[idx];
                sdyxhat += dy[idx] * (x[idx] - mean[ch]) * invstd[ch];
            }
        }
        if (grad_bias) grad_bias[ch] = sdy;
        if (grad_weight) grad_weight[ch] = sdyxhat;
        if (!grad_input) continue;
        for (i = 0; i < n; i++) {
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                double xhat = (x[idx] - mean[ch]) * invstd[ch];
                grad_input[idx] = wc * invstd[ch] / (double)r *
                                  ((double)r * dy[idx] - sdy - xhat * sdyxhat);
            }
        }
    }
}

double ref_bn_loss(const double *x, int64_t n, int64_t c, int64_t s, const double *w,
                   const double *b, double eps, const double *g)
{
    int64_t i, ch, k;
    double loss = 0.0;
    for (ch = 0; ch < c; ch++) {
        double mean, var, invstd, wc = w ? w[ch] : 1.0, bc = b ? b[ch] : 0.0;
        channel_mean_var(x, n, c, s, ch, &mean, &var);
        invstd = 1.0 / sqrt(var + eps);
        for (i = 0; i < n; i++) {
            for (k = 0; k < s; k++) {
                int64_t idx = at(i, ch, k, c, s);
                loss += ((x[idx] - mean) * invstd * wc + bc) * g[idx];
            }
        }
    }
    return loss;
}
