/*
 * test_kernels.c - the reductions, loads and stores of every kernel variant that
 * sbn__kernels_for() offers on this machine (scalar, avx2, avx512) against the scalar
 * one, BITWISE: the canonical 16-lane reduction order with no fused multiply-add in a
 * reduction, and the loads' and stores' fixed conversions, leave no freedom, so any
 * difference in any bit, NaN payloads and signed zeros included, is a bug (but for
 * results of two or more NaN sources, support/nan_sources.h).
 *   - whole-chunk reductions through the fp64 streaming kernels (accum with shift 0 and
 *     with the chunk's first element, bwd_accum), from lane 0: n = 1..67, 100, 255, 1000,
 *     1001, 2047, 2048, aligned and misaligned, over value profiles: normal, mean 1e4 with
 *     std 1e-2, mixed magnitudes, values near fp32/fp16/bf16 rounding ties,
 *     subnormals, signed zeros, NaN (with payloads) and infinities; and a value planted
 *     at every lane position of a long run, against a wrong lane order;
 *   - loads: every fp16 and bf16 bit pattern, random fp32 bit patterns;
 *   - stores: doubles near every kind of tie, overflow and underflow, specials;
 * with n = 0 for loads and stores, and pointers offset by 0..3 elements.
 * Outputs live in guarded buffers: a write outside [0, n) is a mismatch too.
 * The maps are in test_kernels_maps.c; dispatch and whole ops in test_kernels_dispatch.c.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#define TSUP_RNG_SEED 0x5EED5EED12345678ull
#include "support/kernel_isas.h"
#include "support/kernel_values.h"
#include "support/nan_sources.h"
#include "syncbn/ops.h"

enum {
    P_NORMAL,
    P_LARGE_MEAN,
    P_MAGNITUDES,
    P_MIXED,
    P_SPECIALS,
    P_ONE_SPECIAL,
    P_ZEROS,
    P_COUNT
};

static const char *const k_profile_names[] = {"normal",   "mean1e4_std1e-2", "magnitudes", "mixed",
                                              "specials", "one_special",     "signed_zeros"};

static void fill_profile(double *v, size_t n, int profile)
{
    size_t i;
    for (i = 0; i < n; i++) {
        switch (profile) {
        case P_NORMAL: v[i] = normal(); break;
        case P_LARGE_MEAN: v[i] = 1e4 + 1e-2 * normal(); break;
        case P_MAGNITUDES: v[i] = random_sign(ldexp(0.5 + uniform(), below(120) - 60)); break;
        case P_MIXED: v[i] = mixed_value(0); break;
        case P_SPECIALS: v[i] = below(8) == 0 ? mixed_value(1) : normal(); break;
        case P_ONE_SPECIAL: v[i] = normal(); break;
        default: v[i] = random_sign(0.0); break;
        }
    }
    if (profile == P_ONE_SPECIAL && n > 0) {
        double specials[3];
        specials[0] = random_nan();
        specials[1] = random_sign(INFINITY);
        specials[2] = 1e308;
        v[(size_t)below((int)n)] = specials[below(3)];
    }
}

/* The same in double arithmetic (the reductions): only infinities. */
static int nan_sources(const double *a, size_t na, const double *b, size_t nb)
{
    return nan_sources_huge(a, na, b, nb, INFINITY);
}

/* Bitwise equal, or (relax) both NaN. */
static int same_double(double r, double g, int relax)
{
    if (bits_of(r) == bits_of(g)) return 1;
    if (relax && isnan(r) && isnan(g)) {
        g_relaxed++;
        return 1;
    }
    return 0;
}

/* ---- reductions ---- */

static _Alignas(64) double g_a[MAXN + 16], g_b[MAXN + 16];

/* A whole chunk through the fp64 streaming kernels from lane 0, folded (kernels.h):
 * r = (fold a, fold b) of accum with the given shift, or of bwd_accum. */
static void chunk_accum(const sbn_kernels *k, const double *x, size_t n, double shift, double *r)
{
    double acc[2 * SBN_LANES] = {0};
    k->accum[SBN_KD_F64](x, n, 0, shift, acc);
    r[0] = sbn__fold16(acc);
    r[1] = sbn__fold16(acc + SBN_LANES);
}

static void chunk_bwd(const sbn_kernels *k, const double *dy, const double *x, size_t n,
                      double center, double *r)
{
    double acc[2 * SBN_LANES] = {0};
    k->bwd_accum[SBN_KD_F64](dy, x, n, 0, center, acc);
    r[0] = sbn__fold16(acc);
    r[1] = sbn__fold16(acc + SBN_LANES);
}

static void check_reductions_for(const sbn_kernels *ref, const sbn_kernels *k)
{
    size_t ns[100], n;
    int count = sizes(ns, 0), s, profile, misalign;
    for (profile = 0; profile < P_COUNT; profile++)
        for (s = 0; s < count; s++)
            for (misalign = 0; misalign < 2; misalign++) {
                double *x = g_a + misalign, *dy = g_b + misalign * 3;
                double r[2], g[2], center;
                int relax, relax_x;
                n = ns[s];
                fill_profile(x, n, profile);
                fill_profile(dy, n, profile == P_LARGE_MEAN ? P_NORMAL : profile);
                center = below(2) ? x[0] : normal();
                relax_x = nan_sources(x, n, NULL, 0) >= 2;
                relax = nan_sources(x, n, dy, n) >= 2;

                chunk_accum(ref, x, n, x[0], r);
                g[0] = g[1] = 12345.0;
                chunk_accum(k, x, n, x[0], g);
                CHECK_MSG(same_double(r[0], g[0], relax_x) && same_double(r[1], g[1], relax_x),
                          "%s shifted accum n=%zu profile=%s misalign=%d: %a/%a %a/%a "
                          "(bits %016llx/%016llx %016llx/%016llx)",
                          k->isa, n, k_profile_names[profile], misalign, g[0], r[0], g[1], r[1],
                          (unsigned long long)bits_of(g[0]), (unsigned long long)bits_of(r[0]),
                          (unsigned long long)bits_of(g[1]), (unsigned long long)bits_of(r[1]));

                chunk_accum(ref, x, n, 0.0, r);
                g[0] = g[1] = 12345.0;
                chunk_accum(k, x, n, 0.0, g);
                CHECK_MSG(same_double(r[0], g[0], relax_x) && same_double(r[1], g[1], relax_x),
                          "%s accum n=%zu profile=%s misalign=%d: sum %a/%a sumsq %a/%a "
                          "(bits %016llx/%016llx %016llx/%016llx)",
                          k->isa, n, k_profile_names[profile], misalign, g[0], r[0], g[1], r[1],
                          (unsigned long long)bits_of(g[0]), (unsigned long long)bits_of(r[0]),
                          (unsigned long long)bits_of(g[1]), (unsigned long long)bits_of(r[1]));

                chunk_bwd(ref, dy, x, n, center, r);
                g[0] = g[1] = 12345.0;
                chunk_bwd(k, dy, x, n, center, g);
                CHECK_MSG(same_double(r[0], g[0], relax) && same_double(r[1], g[1], relax),
                          "%s bwd_accum n=%zu profile=%s misalign=%d: %a/%a %a/%a "
                          "(bits %016llx/%016llx %016llx/%016llx)",
                          k->isa, n, k_profile_names[profile], misalign, g[0], r[0], g[1], r[1],
                          (unsigned long long)bits_of(g[0]), (unsigned long long)bits_of(r[0]),
                          (unsigned long long)bits_of(g[1]), (unsigned long long)bits_of(r[1]));
            }
}

static void test_reductions_bitwise(void)
{
    const sbn_kernels *ks[NISA];
    int n = isas(ks), i;
    CHECK(n >= 1 && strcmp(ks[0]->isa, "scalar") == 0);
    for (i = 0; i < n; i++) {
        printf("    reductions: %s\n", ks[i]->isa);
        check_reductions_for(ks[0], ks[i]);
        RETURN_IF_FAILED();
    }
    printf("    %d results from two or more NaN sources compared as NaN only\n", g_relaxed);
}

/* A reduction of one long run with a value added at every lane position in turn:
 * a wrong lane assignment or order changes the rounding of the large sums. */
static void test_reductions_lane_order(void)
{
    const sbn_kernels *ks[NISA];
    int n = isas(ks), i, pos;
    size_t len = MAXN, j;
    for (i = 1; i < n; i++)
        for (pos = 0; pos < 48; pos++) {
            double r[2], g[2];
            for (j = 0; j < len; j++) g_a[j] = ldexp(1.0, (int)(j % 7) * 9) + (double)j;
            for (j = 0; j < len; j++) g_b[j] = j % 3 ? 1.0 : -1.0;
            g_a[pos] = 0x1.0p60; /* swallows later additions of its lane only */
            g_a[pos + 16] = -0x1.0p60;
            chunk_accum(ks[0], g_a, len - (size_t)pos, 0.0, r);
            chunk_accum(ks[i], g_a, len - (size_t)pos, 0.0, g);
            CHECK_MSG(memcmp(r, g, sizeof r) == 0, "%s accum lane order pos=%d: %a/%a %a/%a",
                      ks[i]->isa, pos, g[0], r[0], g[1], r[1]);
            chunk_accum(ks[0], g_a, len - (size_t)pos, 3.0, r);
            chunk_accum(ks[i], g_a, len - (size_t)pos, 3.0, g);
            CHECK_MSG(memcmp(r, g, sizeof r) == 0, "%s shifted accum lane order pos=%d: %a/%a %a/%a",
                      ks[i]->isa, pos, g[0], r[0], g[1], r[1]);
            chunk_bwd(ks[0], g_b, g_a, len - (size_t)pos, 3.0, r);
            chunk_bwd(ks[i], g_b, g_a, len - (size_t)pos, 3.0, g);
            CHECK_MSG(memcmp(r, g, sizeof r) == 0,
                      "%s bwd_accum lane order pos=%d: %a/%a %a/%a", ks[i]->isa, pos, g[0],
                      r[0], g[1], r[1]);
        }
}

/* ---- loads ---- */

#define BIGN 65536

static _Alignas(64) uint16_t g_h[BIGN + 8];
static _Alignas(64) float g_f[BIGN + 8];
static _Alignas(64) double g_dref[BIGN + 2 * PAD], g_dgot[BIGN + 2 * PAD];

typedef void (*load_fn)(const void *, size_t, double *);

/* One load of n elements at src into guarded outputs; 0 and a message on a mismatch. */
static int check_load(const char *isa, const char *what, load_fn ref, load_fn got,
                      const void *src, size_t n, int out_off)
{
    long d;
    memset(g_dref, 0xA5, sizeof g_dref);
    memset(g_dgot, 0xA5, sizeof g_dgot);
    ref(src, n, g_dref + PAD + out_off);
    got(src, n, g_dgot + PAD + out_off);
    d = first_diff(g_dref, g_dgot, BIGN + 2 * PAD, sizeof(double));
    if (d < 0) return 1;
    sbn_test_fail(__FILE__, __LINE__,
                  "%s %s n=%zu out_off=%d: element %ld (index %ld) %016llx want %016llx", isa,
                  what, n, out_off, d, d - PAD - out_off, (unsigned long long)bits_of(g_dgot[d]),
                  (unsigned long long)bits_of(g_dref[d]));
    return 0;
}

static void test_loads_bitwise(void)
{
    const sbn_kernels *ks[NISA];
    size_t ns[100];
    int nisa = isas(ks), count = sizes(ns, 1), i, s, off;
    for (i = 0; i < nisa; i++) {
        const sbn_kernels *k = ks[i], *r = ks[0];
        printf("    loads: %s\n", k->isa);
        /* every fp16 / bf16 bit pattern, and random fp32 bits, at offsets 0..3 */
        for (off = 0; off < 4; off++) {
            size_t j, n = BIGN - 8;
            for (j = 0; j < BIGN + 8; j++) g_h[j] = (uint16_t)(j - (size_t)off);
            for (j = 0; j < BIGN + 8; j++) g_f[j] = float_from_bits(next_u32());
            if (!check_load(k->isa, "f16 all patterns", r->load_f16, k->load_f16, g_h + off,
                            BIGN, 0))
                return;
            if (!check_load(k->isa, "bf16 all patterns", r->load_bf16, k->load_bf16, g_h + off,
                            BIGN, 0))
                return;
            if (!check_load(k->isa, "f32 random bits", r->load_f32, k->load_f32, g_f + off, n,
                            off))
                return;
        }
        /* every size, with offsets of input and output */
        for (s = 0; s < count; s++)
            for (off = 0; off < 4; off++) {
                size_t j, n = ns[s];
                for (j = 0; j < n + 8; j++) {
                    g_h[j] = (uint16_t)next_u32();
                    g_f[j] = below(2) ? (float)mixed_value(1) : float_from_bits(next_u32());
                }
                if (!check_load(k->isa, "f16", r->load_f16, k->load_f16, g_h + off, n, 3 - off))
                    return;
                if (!check_load(k->isa, "bf16", r->load_bf16, k->load_bf16, g_h + off, n, off))
                    return;
                if (!check_load(k->isa, "f32", r->load_f32, k->load_f32, g_f + off, n, 3 - off))
                    return;
            }
    }
}

/* ---- stores ---- */

static _Alignas(64) double g_src[MAXN + 8];
static _Alignas(64) unsigned char g_oref[(MAXN + 2 * PAD) * 4], g_ogot[(MAXN + 2 * PAD) * 4];

typedef void (*store_fn)(const double *, size_t, void *);

static int check_store(const char *isa, const char *what, store_fn ref, store_fn got,
                       const double *src, size_t n, size_t es, int out_off)
{
    long d;
    memset(g_oref, 0xA5, sizeof g_oref);
    memset(g_ogot, 0xA5, sizeof g_ogot);
    ref(src, n, g_oref + (PAD + (size_t)out_off) * es);
    got(src, n, g_ogot + (PAD + (size_t)out_off) * es);
    d = first_diff(g_oref, g_ogot, sizeof g_oref / es, es);
    if (d < 0) return 1;
    {
        long idx = d - PAD - out_off;
        double in = idx >= 0 && (size_t)idx < n ? src[idx] : 0.0;
        uint32_t gv = 0, rv = 0;
        memcpy(&gv, g_ogot + (size_t)d * es, es);
        memcpy(&rv, g_oref + (size_t)d * es, es);
        sbn_test_fail(__FILE__, __LINE__,
                      "%s %s n=%zu out_off=%d: index %ld input %a (%016llx): got %08x want %08x",
                      isa, what, n, out_off, idx, in, (unsigned long long)bits_of(in),
                      (unsigned)gv, (unsigned)rv);
    }
    return 0;
}

static void test_stores_bitwise(void)
{
    const sbn_kernels *ks[NISA];
    size_t ns[100];
    int nisa = isas(ks), count = sizes(ns, 1), i, s, off, rep;
    for (i = 0; i < nisa; i++) {
        const sbn_kernels *k = ks[i], *r = ks[0];
        printf("    stores: %s\n", k->isa);
        for (s = 0; s < count; s++)
            for (off = 0; off < 4; off++)
                for (rep = 0; rep < (ns[s] < 100 ? 4 : 40); rep++) {
                    size_t j, n = ns[s];
                    int profile = rep % 4 == 0 ? P_SPECIALS : P_MIXED;
                    fill_profile(g_src, n + 8, profile);
                    if (rep % 4 == 1) /* the float ties of the double: round-to-odd's hard case */
                        for (j = 0; j < n + 8; j++) g_src[j] = near_tie(24, -30, 20, 1);
                    if (!check_store(k->isa, "f32", r->store_f32, k->store_f32, g_src + (off & 1),
                                     n, 4, off))
                        return;
                    if (!check_store(k->isa, "f16", r->store_f16, k->store_f16, g_src + (off & 1),
                                     n, 2, off))
                        return;
                    if (!check_store(k->isa, "bf16", r->store_bf16, k->store_bf16,
                                     g_src + (off & 1), n, 2, 3 - off))
                        return;
                }
    }
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_reductions_bitwise),
        SBN_TEST_CASE(test_reductions_lane_order),
        SBN_TEST_CASE(test_loads_bitwise),
        SBN_TEST_CASE(test_stores_bitwise),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
