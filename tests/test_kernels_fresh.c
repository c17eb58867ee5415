/*
 * test_kernels_fresh.c - the row reductions' `fresh` start (kernels.h): for every
 * variant this CPU runs (scalar, AVX2, AVX-512 and the prefetching AVX2 and AVX-512 tables),
 * element type, lane offset, row count (1..200, across the 16 lanes and the kernels'
 * row blocks) and channel count (vector tails), a call with fresh = 1 on lanes full of
 * poison must leave exactly the bytes of a call with fresh = 0 on the same buffer with
 * the lanes it reaches, (lane + r) % 16 for r < min(rows, 16), cleared to +0.0: the same
 * sums, and every lane it does not reach (and every element past cn) untouched.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/finite_inputs.h"
#include "support/kernel_isas.h"

#define MAXROWS 200
#define MAXCN 37
#define LD (MAXCN + 3)
#define LANES_DOUBLES (SBN_LANES * LD)

static void poison(double *a, double *b)
{
    size_t i;
    for (i = 0; i < LANES_DOUBLES; i++) {
        a[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? -0.0 : 1e300;
        b[i] = i % 2 == 0 ? -INFINITY : 7.25;
    }
}

static void check_one(const sbn_kernels *k, int dt, int bwd, size_t rows, size_t cn, unsigned lane,
                      uint64_t seed)
{
    static double x[MAXROWS * MAXCN], dy[MAXROWS * MAXCN];
    double center[MAXCN], a1[LANES_DOUBLES], b1[LANES_DOUBLES], a0[LANES_DOUBLES],
        b0[LANES_DOUBLES];
    size_t j;
    tsup_fill_finite(dt, x, rows * MAXCN, &seed, -6, 9);
    tsup_fill_finite(dt, dy, rows * MAXCN, &seed, -6, 9);
    for (j = 0; j < MAXCN; j++) center[j] = (double)(j % 5) - 2.0;
    poison(a1, b1);
    poison(a0, b0);
    sbn__clear_fresh_lanes(a0, b0, LD, cn, lane, rows);
    if (bwd) {
        k->row_bwd_accum[dt](dy, MAXCN, x, MAXCN, rows, cn, lane, center, a1, b1, LD, 1);
        k->row_bwd_accum[dt](dy, MAXCN, x, MAXCN, rows, cn, lane, center, a0, b0, LD, 0);
    } else {
        k->row_accum[dt](x, MAXCN, rows, cn, lane, center, a1, b1, LD, 1);
        k->row_accum[dt](x, MAXCN, rows, cn, lane, center, a0, b0, LD, 0);
    }
    CHECK_MSG(memcmp(a1, a0, sizeof a0) == 0 && memcmp(b1, b0, sizeof b0) == 0,
              "%s %s dt %d: fresh = 1 differs from cleared lanes (rows %zu, cn %zu, lane %u)",
              k->isa, bwd ? "row_bwd_accum" : "row_accum", dt, rows, cn, lane);
}

static void test_fresh_is_a_clear(void)
{
    static const size_t rows[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 65, 129, 200};
    static const size_t cns[] = {1, 3, 8, 13, 32, 37};
    static const unsigned lanes[] = {0, 5};
    const sbn_kernels *tables[2 * NISA];
    int t, nt = isas(tables), n = nt, dt, bwd;
    size_t ri, ci, li;
    for (t = 0; t < nt; t++) { /* and the tables beyond the cache (prefetching rows) */
        const sbn_kernels *s = sbn__kernels_streaming_for(tables[t]->isa);
        if (s != NULL && s->row_accum[SBN_KD_F32] != tables[t]->row_accum[SBN_KD_F32])
            tables[n++] = s;
    }
    for (t = 0; t < n; t++)
        for (dt = 0; dt < SBN_KD_COUNT; dt++)
            for (bwd = 0; bwd < 2; bwd++)
                for (ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                    for (ci = 0; ci < sizeof cns / sizeof cns[0]; ci++)
                        for (li = 0; li < 2; li++)
                            check_one(tables[t], dt, bwd, rows[ri], cns[ci], lanes[li],
                                      (uint64_t)(ri * 131 + ci * 7 + li + (size_t)dt * 1000));
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_fresh_is_a_clear),
};

SBN_TEST_MAIN(k_cases)
