/*
 * test_kernels_invstd.c - the invstd kernel of every variant this CPU runs (kernels.h):
 * out[j] = v == 0 ? 0 : 1 / sqrt(v), v = m2[j * stride] / count + eps, bit for bit the C
 * expression, for n = 0 .. 40 (every vector tail), strides 1, 2 and 3, counts 1, 3, 6, 8,
 * 2048 and 2^53 (the powers of two take a multiplication, sbn__pow2_recip), and m2
 * values that reach every branch: zeros of both signs (v = 0 with eps = 0), subnormals,
 * huge values whose square root's reciprocal is subnormal, infinities, NaN, negatives
 * (NaN out) and random magnitudes. Elements between the strided ones and past n must
 * stay untouched. sbn__pow2_recip itself: nonzero exactly for powers of two in
 * [1, 2^1000], and then x * recip == x / n bit for bit over the same special values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/kernel_isas.h"

#define MAXN 40

static double special(unsigned i, uint64_t *seed)
{
    static const double k[] = {0.0, -0.0, 1.0, 4.9e-324, 2.2e-308, 1.7e308, INFINITY,
                               -INFINITY, NAN, -1.0, 1e-300, 3.0, 0.25};
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    if (i % 3 == 0) return k[(*seed >> 33) % (sizeof k / sizeof k[0])];
    return ldexp((double)(*seed >> 11) / 9007199254740992.0, (int)((*seed >> 3) % 200) - 100);
}

static void check_one(const sbn_kernels *kern, size_t stride, size_t n, double count, double eps,
                      uint64_t seed)
{
    double m2[MAXN * 3 + 8], out[MAXN + 8], want[MAXN];
    size_t j;
    for (j = 0; j < sizeof m2 / sizeof m2[0]; j++) m2[j] = special((unsigned)j, &seed);
    for (j = 0; j < n; j++) {
        double v = m2[j * stride] / count + eps;
        want[j] = v == 0.0 ? 0.0 : 1.0 / sqrt(v);
    }
    for (j = 0; j < sizeof out / sizeof out[0]; j++) out[j] = -7.5;
    kern->invstd(m2, stride, n, count, eps, out);
    CHECK_MSG(memcmp(out, want, n * sizeof(double)) == 0,
              "%s invstd differs from the C expression (n %zu, stride %zu, count %g, eps %g)",
              kern->isa, n, stride, count, eps);
    for (j = n; j < sizeof out / sizeof out[0]; j++)
        CHECK_MSG(out[j] == -7.5, "%s invstd wrote out[%zu] past n = %zu", kern->isa, j, n);
}

static void test_every_variant(void)
{
    const sbn_kernels *tables[NISA];
    static const double counts[] = {1.0, 3.0, 6.0, 8.0, 2048.0, 9007199254740992.0};
    static const double epss[] = {0.0, 1e-5, 1e300};
    int t, nt = isas(tables);
    size_t n, s, ci, ei;
    CHECK(nt >= 1);
    for (t = 0; t < nt; t++)
        for (n = 0; n <= MAXN; n++)
            for (s = 1; s <= 3; s++)
                for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                    for (ei = 0; ei < 3; ei++)
                        check_one(tables[t], s, n, counts[ci], epss[ei],
                                  (uint64_t)(n * 131 + s * 17 + ci * 5 + ei + 1));
}

/* v = 0 exactly gives +0 (not Inf), from +0 and -0 alike; NaN in gives NaN out. */
static void test_edges(void)
{
    const sbn_kernels *tables[NISA];
    int t, nt = isas(tables);
    double m2[9] = {0.0, -0.0, NAN, -4.0, 4.0, 0.0, -0.0, 16.0, 1.0}, out[9];
    for (t = 0; t < nt; t++) {
        tables[t]->invstd(m2, 1, 9, 1.0, 0.0, out);
        CHECK_MSG(out[0] == 0.0 && !signbit(out[0]) && out[1] == 0.0 && !signbit(out[1]),
                  "%s: v = 0 gives %g, %g", tables[t]->isa, out[0], out[1]);
        CHECK_MSG(isnan(out[2]) && isnan(out[3]), "%s: NaN/negative give %g, %g", tables[t]->isa,
                  out[2], out[3]);
        CHECK_MSG(out[4] == 0.5 && out[7] == 0.25 && out[8] == 1.0, "%s: 1/sqrt wrong",
                  tables[t]->isa);
    }
}

/* In place (out == m2, stride 1), as the ops call it on a vector of variances with
 * count 1: every element the C expression of its own old value. */
static void test_in_place(void)
{
    const sbn_kernels *tables[NISA];
    int t, nt = isas(tables);
    size_t n, j;
    for (t = 0; t < nt; t++)
        for (n = 0; n <= MAXN; n++) {
            double v[MAXN + 1], want[MAXN + 1];
            uint64_t seed = (uint64_t)n * 977 + 3;
            for (j = 0; j <= MAXN; j++) {
                v[j] = special((unsigned)j + 1, &seed);
                want[j] = j < n ? (v[j] / 1.0 + 1e-5 == 0.0 ? 0.0 : 1.0 / sqrt(v[j] / 1.0 + 1e-5))
                                : v[j];
            }
            tables[t]->invstd(v, 1, n, 1.0, 1e-5, v);
            CHECK_MSG(memcmp(v, want, sizeof v) == 0, "%s invstd in place differs (n %zu)",
                      tables[t]->isa, n);
        }
}

/* sbn__pow2_recip: 1/n for the powers of two in [1, 2^1000] (x * 1/n then agrees with x / n
 * in every bit, subnormal, infinite and NaN results included), 0 for anything else. */
static void test_pow2_recip(void)
{
    static const double not_pow2[] = {0.0,  -0.0, -8.0,     0.5,      3.0,     6.0,
                                      2049, 1e300, INFINITY, -INFINITY, NAN,    4.9e-324,
                                      9007199254740994.0};
    uint64_t seed = 12345;
    int e, i;
    size_t k;
    for (k = 0; k < sizeof not_pow2 / sizeof not_pow2[0]; k++)
        CHECK_MSG(sbn__pow2_recip(not_pow2[k]) == 0.0, "pow2_recip(%g) should be 0", not_pow2[k]);
    CHECK(sbn__pow2_recip(ldexp(1.0, 1001)) == 0.0);
    for (e = 0; e <= 1000; e++) {
        double n = ldexp(1.0, e), r = sbn__pow2_recip(n);
        CHECK_MSG(r == ldexp(1.0, -e), "pow2_recip(2^%d) = %g", e, r);
        for (i = 0; i < 40; i++) {
            double x = special((unsigned)i, &seed), q = x / n, p = x * r;
            CHECK_MSG(memcmp(&q, &p, sizeof q) == 0, "x * pow2_recip(2^%d) != x / 2^%d for x = %g",
                      e, e, x);
        }
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_pow2_recip),
    SBN_TEST_CASE(test_every_variant),
    SBN_TEST_CASE(test_edges),
    SBN_TEST_CASE(test_in_place),
};

SBN_TEST_MAIN(k_cases)
