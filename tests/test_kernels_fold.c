/*
 * test_kernels_fold.c - the fold_rows kernel of every variant this CPU runs
 * (kernels.h), bit for bit against the canonical fold written out here as the
 * in-place halving loop of docs/numerics.md (for h = 8, 4, 2, 1: s[k] += s[k + h] for
 * k < h, an addition skipped when lane k + h was never reached): every lane count
 * 1..16, cn = 0..40 (every vector tail), lane strides ld = cn, cn + 3 and 64, lanes
 * holding random magnitudes, +0.0, subnormals, infinities of both signs and NaN (a NaN
 * result only has to be NaN, as everywhere in the library). Lanes
 * past `used` hold poison (NaN, -0.0, 1e300) that must not reach the result; nothing
 * but a[0..cn) and b[0..cn) may change.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/kernel_isas.h"

#define MAXCN 40
#define MAXLD 64
#define AREA (SBN_LANES * MAXLD + 8)

/* A lane value: never -0.0 (the kernel's contract: no lane holds it). */
static double lane_value(uint64_t *seed)
{
    static const double k[] = {0.0, 1.0, -1.0, 4.9e-324, -2.2e-308, 1.7e308, -1.7e308, INFINITY,
                               -INFINITY, NAN, 3.0, -0.375};
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    if ((*seed >> 60) < 5) return k[(*seed >> 33) % (sizeof k / sizeof k[0])];
    return ldexp((double)(*seed >> 11) / 9007199254740992.0 - 0.5, (int)((*seed >> 3) % 120) - 60);
}

static double poison(size_t i)
{
    static const double p[] = {NAN, -0.0, 1e300, -INFINITY};
    return p[i % 4];
}

/* The canonical fold of channel j: lanes [0, used) of s, ld apart. */
static double want_fold(const double *s, size_t ld, unsigned used)
{
    double lane[SBN_LANES];
    unsigned h, k;
    for (k = 0; k < used; k++) lane[k] = s[k * ld];
    for (h = SBN_LANES / 2; h >= 1; h /= 2)
        for (k = 0; k < h; k++)
            if (k + h < used) lane[k] = lane[k] + lane[k + h];
    return lane[0];
}

static void fill(double *s, size_t ld, size_t cn, unsigned used, uint64_t *seed)
{
    size_t i;
    for (i = 0; i < AREA; i++) s[i] = poison(i);
    for (i = 0; i < (size_t)used * ld; i++)
        if (i % ld < cn) s[i] = lane_value(seed);
}

/* Bit for bit, but a NaN only has to be NaN: where two different NaNs meet (NaN data,
 * Inf + -Inf), x86 keeps the first operand's and compilers may swap the operands of +
 * (docs/numerics.md, "SIMD kernels"). */
static int same_bits(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y));
}

static void check_one(const sbn_kernels *kern, size_t ld, size_t cn, unsigned used, uint64_t seed)
{
    double a[AREA], b[AREA], a0[AREA], b0[AREA];
    size_t i;
    fill(a, ld, cn, used, &seed);
    fill(b, ld, cn, used, &seed);
    memcpy(a0, a, sizeof a);
    memcpy(b0, b, sizeof b);
    kern->fold_rows(a, b, ld, cn, used);
    for (i = 0; i < AREA; i++) {
        double wa = i < cn ? want_fold(a0 + i, ld, used) : a0[i];
        double wb = i < cn ? want_fold(b0 + i, ld, used) : b0[i];
        CHECK_MSG(same_bits(a[i], wa) && same_bits(b[i], wb),
                  "%s fold_rows: element %zu is (%a, %a), want (%a, %a) (used %u, cn %zu, ld %zu)",
                  kern->isa, i, a[i], b[i], wa, wb, used, cn, ld);
        if (!same_bits(a[i], wa) || !same_bits(b[i], wb)) return;
    }
}

static void test_every_variant(void)
{
    const sbn_kernels *tables[NISA];
    int t, nt = isas(tables);
    unsigned used;
    size_t cn, li;
    CHECK(nt >= 1);
    for (t = 0; t < nt; t++)
        for (used = 1; used <= SBN_LANES; used++)
            for (cn = 0; cn <= MAXCN; cn++)
                for (li = 0; li < 3; li++) {
                    size_t ld = li == 0 ? cn : li == 1 ? cn + 3 : MAXLD;
                    if (ld == 0) continue;
                    check_one(tables[t], ld, cn, used, (uint64_t)(used * 7919 + cn * 31 + li));
                }
}

/* The order matters: 1 + 2^53 + -2^53 + ... folded in the canonical tree and in a plain
 * left-to-right sum differ, so a variant that adds lanes in another order fails here. */
static void test_order(void)
{
    const sbn_kernels *tables[NISA];
    int t, nt = isas(tables);
    double a[SBN_LANES * 8], b[SBN_LANES * 8];
    unsigned l;
    size_t j;
    for (t = 0; t < nt; t++) {
        for (l = 0; l < SBN_LANES; l++)
            for (j = 0; j < 8; j++) {
                a[l * 8 + j] = l == 0 ? 1.0 : l == 8 ? 0x1p53 : l == 4 ? -0x1p53 : 0.0;
                b[l * 8 + j] = (double)(l + 1) * 0x1p-3 + (l % 3 == 0 ? 0x1p52 : 0.0);
            }
        tables[t]->fold_rows(a, b, 8, 8, SBN_LANES);
        for (j = 0; j < 8; j++) {
            double lane_a[SBN_LANES], lane_b[SBN_LANES];
            for (l = 0; l < SBN_LANES; l++) {
                lane_a[l] = l == 0 ? 1.0 : l == 8 ? 0x1p53 : l == 4 ? -0x1p53 : 0.0;
                lane_b[l] = (double)(l + 1) * 0x1p-3 + (l % 3 == 0 ? 0x1p52 : 0.0);
            }
            CHECK_MSG(same_bits(a[j], sbn__fold16(lane_a)) && same_bits(b[j], sbn__fold16(lane_b)),
                      "%s fold_rows: channel %zu is (%a, %a), the fold gives (%a, %a)",
                      tables[t]->isa, j, a[j], b[j], sbn__fold16(lane_a), sbn__fold16(lane_b));
        }
        CHECK_MSG(a[0] == 0.0, "%s fold_rows: (1 + 2^53) + -2^53 = 0 in the canonical order, got %a",
                  tables[t]->isa, a[0]);
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_every_variant),
    SBN_TEST_CASE(test_order),
};

SBN_TEST_MAIN(k_cases)
