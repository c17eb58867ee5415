/*
 * test_kernels.c - every kernel variant that sbn__kernels_for() offers on this
 * machine (scalar, avx2, avx512) against the scalar one, BITWISE: the canonical
 * 16-lane reduction order with no fused multiply-add in a reduction, and the maps'
 * fixed operations (fp64 in double; fp32/fp16/bf16 in float with explicit FMAs,
 * kernels.h) leave no freedom, so any difference in any bit, NaN payloads and
 * signed zeros included, is a bug (but for results of two or more NaN sources).
 *   - whole-chunk reductions through the fp64 streaming kernels (accum with shift
 *     0 and with the chunk's first element, bwd_accum), from lane 0: n = 1..67, 100, 255, 1000, 1001,
 *     2047, 2048, aligned and misaligned, over value profiles: normal, mean 1e4 with
 *     std 1e-2, mixed magnitudes, values near fp32/fp16/bf16 rounding ties,
 *     subnormals, signed zeros, NaN (with payloads) and infinities;
 *   - loads: every fp16 and bf16 bit pattern, random fp32 bit patterns;
 *   - stores: doubles near every kind of tie, overflow and underflow, specials;
 *   - f32 maps (normalize, backward): random bits and mixed values, float coefficients
 *     from sbn__map_coefs_float of fp64-form sets (including extreme and non-finite
 *     ones) and drawn directly (random bits, extremes, NaNs), in place too;
 *   - fp32/fp16/bf16 maps, runs and rows, against an oracle of their float formula with
 *     its fused multiply-add (support/map_oracle.h), on inputs where the unfused
 *     formula and double arithmetic give other results: the scalar kernels, then
 *     every other variant;
 * with n = 0 for loads, stores and maps, and pointers offset by 0..3 elements.
 * Outputs live in guarded buffers: a write outside [0, n) is a mismatch too.
 * Dispatch and whole ops are in test_kernels_dispatch.c.
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
#include "support/kernel_isas.h"
#include "support/map_oracle.h"
#include "syncbn/ops.h"

#define MAXN 2048
#define PAD 64 /* guard elements either side of every output */

/* ---- deterministic random values ---- */

static uint64_t g_rng = 0x5EED5EED12345678ull;

static uint64_t next_u64(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t next_u32(void)
{
    return (uint32_t)(next_u64() >> 32);
}

static double uniform(void) /* [0, 1) */
{
    return (double)(next_u64() >> 11) * 0x1.0p-53;
}

static int below(int n)
{
    return (int)(uniform() * n);
}

static double normal(void)
{
    double u = uniform(), v = uniform();
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static float float_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static double random_sign(double v)
{
    return next_u64() & 1 ? -v : v;
}

/* A NaN with a random payload, sign and quiet bit. */
static double random_nan(void)
{
    uint64_t mant = next_u64() & 0x000FFFFFFFFFFFFFull;
    if (mant == 0) mant = 1;
    return from_bits((next_u64() & 0x8000000000000000ull) | 0x7FF0000000000000ull | mant);
}

/*
 * A value at or next to a rounding tie of a format with `bits` significand bits
 * (24 fp32, 11 fp16, 8 bf16) and exponents emin..emax: a representable value plus
 * half an ulp, then moved by 0, a few double ulps, or a few float ulps of the tie.
 */
static double near_tie(int bits, int emin, int emax, int subnormal_min)
{
    int e = emin + below(emax - emin + 1);
    double ulp = ldexp(1.0, e - (bits - 1));
    double m = (double)((int64_t)(1 << (bits - 1)) + below(1 << (bits - 1)));
    double v, tie;
    if (subnormal_min && below(4) == 0) { /* the subnormal range of the format */
        ulp = ldexp(1.0, emin - (bits - 1));
        m = (double)below(1 << (bits - 1));
        v = m * ulp;
    } else {
        v = m * ulp;
    }
    tie = v + 0.5 * ulp;
    switch (below(6)) {
    case 0: break;
    case 1: tie = nextafter(tie, INFINITY); break;
    case 2: tie = nextafter(tie, -INFINITY); break;
    case 3: tie += ldexp(tie, -30) * (below(2) ? 1 : -1); break; /* a float ulp or so */
    case 4: tie = v; break;                                        /* exact */
    default: tie += ulp * (uniform() - 0.5); break;
    }
    return random_sign(tie);
}

/* One value of a broad mix: ties of every format, range edges, subnormals, specials. */
static double mixed_value(int specials)
{
    int kind = below(specials ? 18 : 14);
    switch (kind) {
    case 0: return normal();
    case 1: return 1e4 + 1e-2 * normal();
    case 2: return random_sign(ldexp(0.5 + uniform(), below(2000) - 1000));
    case 3: return near_tie(24, -126, 127, 1);  /* fp32 ties (and fp32 subnormals) */
    case 4: return near_tie(11, -14, 15, 1);    /* fp16 ties */
    case 5: return near_tie(8, -126, 127, 1);   /* bf16 ties */
    case 6: return random_sign(ldexp(uniform(), -1074 + below(60))); /* double subnormals */
    case 7: return random_sign(ldexp(uniform(), -150 + below(8)));   /* below fp32 subnormals */
    case 8: return random_sign(65504.0 + 32.0 * (uniform() - 0.3)); /* fp16 overflow edge */
    case 9: /* fp32 overflow edge: FLT_MAX, its rounding boundary, beyond */
        return random_sign(ldexp(1.0 - ldexp(1.0, -25) + ldexp(uniform() - 0.5, -23), 128));
    case 10: return random_sign(ldexp(0.5 + uniform(), -26 + below(4))); /* fp16 underflow edge */
    case 11: return random_sign(0.0);
    case 12: return random_sign(ldexp(1.0, below(300) - 150));
    case 13: return random_sign(1e300 * uniform());
    case 14: return random_nan();
    case 15: return random_sign(INFINITY);
    case 16: return from_bits(0x7FF8000000000000ull); /* the default NaN */
    default: return random_sign(ldexp(uniform(), -1074 + below(52)));
    }
}

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

static const size_t k_sizes[] = {100, 255, 1000, 1001, 2047, 2048};

/* The test sizes: 0 (when allowed), 1..67, then k_sizes. Returns the count. */
static int sizes(size_t *out, int with_zero)
{
    int c = 0;
    size_t i;
    if (with_zero) out[c++] = 0;
    for (i = 1; i <= 67; i++) out[c++] = i;
    for (i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; i++) out[c++] = k_sizes[i];
    return c;
}

/*
 * NaN payloads. x86 returns the first operand's NaN when both operands of an
 * operation are NaNs, and C compilers treat + and * as commutative, so which of
 * two different NaNs survives is not fixed even in the scalar code. Where the
 * inputs of one result hold two or more "NaN sources" (distinct NaN patterns once
 * quieted, plus any infinity, which can make the default NaN), that result only
 * has to be NaN in both; with at most one source every bit must match. The sources
 * of a map result are its inputs and the coefficients the map reads, as passed: the
 * floats for the f32 maps (three for normalize, four for backward). In the float maps
 * a finite value above 2^126 counts like an infinity: a difference of two such can
 * overflow to one, then 0 * inf makes the default NaN, which may meet a NaN operand in
 * an FMA or a product, whose forms (vfmadd132/213/231, commuted operands) pick
 * differently between two NaNs.
 */
static int g_relaxed; /* results compared as "both NaN" in the running case */

static void add_source(uint64_t *seen, int *count, double v, int *inf, double huge)
{
    int i;
    uint64_t q;
    if (isinf(v) || fabs(v) > huge) *inf = 1;
    if (!isnan(v)) return;
    q = bits_of(v) | 0x0008000000000000ull;
    for (i = 0; i < *count; i++)
        if (seen[i] == q) return;
    if (*count < 4) seen[(*count)++] = q;
}

/* The number of NaN sources (capped at 5) among a[0..na), b[0..nb); finite values above
 * huge count as an infinity. */
static int nan_sources_huge(const double *a, size_t na, const double *b, size_t nb, double huge)
{
    uint64_t seen[4];
    int count = 0, inf = 0;
    size_t i;
    for (i = 0; i < na; i++) add_source(seen, &count, a[i], &inf, huge);
    for (i = 0; i < nb; i++) add_source(seen, &count, b[i], &inf, huge);
    return count + inf;
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

/* ---- f32 maps ---- */

static _Alignas(64) float g_x[MAXN + 8], g_dy[MAXN + 8];
static _Alignas(64) float g_yref[MAXN + 2 * PAD], g_ygot[MAXN + 2 * PAD];

#define NCOEF 9   /* coefficient sets: 0..5 in the fp64 form, 6..8 floats drawn directly */
#define NCOEF64 6

/* A set in the fp64 form: (mean, s, b) for normalize, (a, mean, q, s) for backward. */
static void coefficients(int which, double *k)
{
    int j;
    switch (which) {
    case 0: k[0] = 0.25; k[1] = 1.5; k[2] = -0.125; k[3] = 0.75; break;
    case 1:
        for (j = 0; j < 4; j++) k[j] = normal() * ldexp(1.0, below(20) - 10);
        break;
    case 2: k[0] = 1e4 + 1e-3 * normal(); k[1] = 1e2 * uniform(); k[2] = normal(); k[3] = 3e38; break;
    case 3: k[0] = 0.0; k[1] = 1e-40; k[2] = -0.0; k[3] = 1e-300; break;
    case 4: k[0] = normal(); k[1] = INFINITY; k[2] = normal(); k[3] = -INFINITY; break;
    default: k[0] = random_nan(); k[1] = normal(); k[2] = random_nan(); k[3] = normal(); break;
    }
}

/* One float coefficient drawn directly: random bits (set 6); an extreme (set 7: zeros,
 * subnormals, FLT_MIN, FLT_MAX, powers of two around 1, infinities, NaNs of any payload,
 * quiet or signalling); an ordinary float with all 24 bits at a random scale (set 8). */
static float direct_coefficient(int which)
{
    static const uint32_t k_extreme[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u,
                                         0x7F7FFFFFu, 0x7F7FFFFEu, 0x7F800000u, 0x3F800000u,
                                         0x33800000u, 0x4B800000u, 0x7FC00000u};
    const int nx = (int)(sizeof k_extreme / sizeof k_extreme[0]);
    uint32_t sign = (uint32_t)(next_u64() & 1) << 31;
    if (which == NCOEF64) return float_from_bits(next_u32());
    if (which == NCOEF64 + 1) {
        if (below(5) == 0) /* a NaN of any payload */
            return float_from_bits(sign | 0x7F800000u | (next_u32() & 0x7FFFFFu) | 1u);
        return float_from_bits(sign | k_extreme[below(nx)]);
    }
    return (float)random_sign(ldexp(1.0 + uniform(), below(60) - 30));
}

/* The float coefficients of set `which` as the f32 maps take them: for normalize (fn) and
 * backward (fb), sbn__map_coefs_float's of the fp64 form, or drawn directly. */
static void float_coefficients(int which, float *fn, float *fb)
{
    double k[4];
    int j;
    if (which >= NCOEF64) {
        for (j = 0; j < 4; j++) fn[j] = direct_coefficient(which);
        for (j = 0; j < 4; j++) fb[j] = direct_coefficient(which);
        return;
    }
    coefficients(which, k);
    (void)sbn__map_coefs_float(0, k, fn); /* 0 (the double fallback's case) is tested too */
    (void)sbn__map_coefs_float(1, k, fb);
}

static void fill_floats(float *v, size_t n, int bitsmode)
{
    size_t j;
    for (j = 0; j < n; j++)
        v[j] = bitsmode ? float_from_bits(next_u32())
                        : below(4) == 0 ? (float)mixed_value(1) : (float)normal();
}

/* Compares the guarded outputs; x (and dy for backward, else NULL) are the inputs of the
 * n results at y offset yo and coef[0..ncoef) the coefficients the map reads (3 for
 * normalize, 4 for backward), for the NaN-source rule. */
static int check_map_out(const char *isa, const char *what, size_t n, const float *x,
                         const float *dy, const float *coef, int ncoef, int yo, int kc,
                         int inplace)
{
    size_t i, total = MAXN + 2 * PAD;
    for (i = 0; i < total; i++) {
        uint32_t gb, rb;
        long idx = (long)i - PAD - yo;
        memcpy(&gb, &g_ygot[i], 4);
        memcpy(&rb, &g_yref[i], 4);
        if (gb == rb) continue;
        if (idx >= 0 && (size_t)idx < n && isnan(g_ygot[i]) && isnan(g_yref[i])) {
            double in[2], cd[4];
            int m = 0, t;
            in[m++] = x[idx];
            if (dy != NULL) in[m++] = dy[idx];
            for (t = 0; t < ncoef; t++) cd[t] = coef[t];
            if (nan_sources_huge(in, (size_t)m, cd, (size_t)ncoef, 0x1p126) >= 2) {
                g_relaxed++;
                continue;
            }
        }
        sbn_test_fail(__FILE__, __LINE__,
                      "%s %s n=%zu y_off=%d coef=%d inplace=%d: index %ld got %08x want %08x "
                      "(coefficients %08x %08x %08x %08x)",
                      isa, what, n, yo, kc, inplace, idx, (unsigned)gb, (unsigned)rb,
                      (unsigned)float_bits(coef[0]), (unsigned)float_bits(coef[1]),
                      (unsigned)float_bits(coef[2]),
                      (unsigned)(ncoef > 3 ? float_bits(coef[3]) : 0));
        return 0;
    }
    return 1;
}

static void test_maps_bitwise(void)
{
    const sbn_kernels *ks[NISA];
    size_t ns[100];
    int nisa = isas(ks), count = sizes(ns, 1), i, s, xo, kc;
    for (i = 0; i < nisa; i++) {
        const sbn_kernels *k = ks[i], *r = ks[0];
        printf("    maps: %s\n", k->isa);
        for (s = 0; s < count; s++)
            for (xo = 0; xo < 4; xo++)
                for (kc = 0; kc < NCOEF; kc++) {
                    size_t n = ns[s];
                    int yo = (xo + kc) % 4, dyo = (xo + 1) % 4;
                    float fn[4], fb[4]; /* exactly the coefficients: ASan sees over-reads */
                    float_coefficients(kc, fn, fb);
                    fill_floats(g_x, n + 8, kc & 1);
                    fill_floats(g_dy, n + 8, (kc >> 1) & 1);

                    memset(g_yref, 0xA5, sizeof g_yref);
                    memset(g_ygot, 0xA5, sizeof g_ygot);
                    r->normalize[SBN_KD_F32](g_x + xo, n, fn, g_yref + PAD + yo);
                    k->normalize[SBN_KD_F32](g_x + xo, n, fn, g_ygot + PAD + yo);
                    if (!check_map_out(k->isa, "normalize", n, g_x + xo, NULL, fn, 3, yo, kc, 0))
                        return;

                    memset(g_yref, 0xA5, sizeof g_yref);
                    memset(g_ygot, 0xA5, sizeof g_ygot);
                    r->backward[SBN_KD_F32](g_dy + dyo, g_x + xo, n, fb, g_yref + PAD + yo);
                    k->backward[SBN_KD_F32](g_dy + dyo, g_x + xo, n, fb, g_ygot + PAD + yo);
                    if (!check_map_out(k->isa, "backward", n, g_x + xo, g_dy + dyo, fb, 4, yo, kc,
                                       0))
                        return;

                    /* in place: y is x (normalize), gi is dy (backward) */
                    memset(g_yref, 0xA5, sizeof g_yref);
                    memset(g_ygot, 0xA5, sizeof g_ygot);
                    memcpy(g_yref + PAD + xo, g_x + xo, n * sizeof(float));
                    memcpy(g_ygot + PAD + xo, g_x + xo, n * sizeof(float));
                    r->normalize[SBN_KD_F32](g_yref + PAD + xo, n, fn, g_yref + PAD + xo);
                    k->normalize[SBN_KD_F32](g_ygot + PAD + xo, n, fn, g_ygot + PAD + xo);
                    if (!check_map_out(k->isa, "normalize", n, g_x + xo, NULL, fn, 3, xo, kc, 1))
                        return;

                    memset(g_yref, 0xA5, sizeof g_yref);
                    memset(g_ygot, 0xA5, sizeof g_ygot);
                    memcpy(g_yref + PAD + xo, g_dy + xo, n * sizeof(float));
                    memcpy(g_ygot + PAD + xo, g_dy + xo, n * sizeof(float));
                    r->backward[SBN_KD_F32](g_yref + PAD + xo, g_x + dyo, n, fb, g_yref + PAD + xo);
                    k->backward[SBN_KD_F32](g_ygot + PAD + xo, g_x + dyo, n, fb, g_ygot + PAD + xo);
                    if (!check_map_out(k->isa, "backward", n, g_x + dyo, g_dy + xo, fb, 4, xo, kc,
                                       1))
                        return;
                }
    }
    printf("    %d results from two or more NaN sources compared as NaN only\n", g_relaxed);
}

/* ---- the float maps against an oracle of their formula ---- */

/*
 * The fp32/fp16/bf16 maps are float arithmetic with an explicit fused multiply-add,
 *   y = fma(x - f0, f1, f2),   gi = fma(x - f0, f1, dy - f2) * f3,
 * narrowed once (kernels.h). Every variant must give support/map_oracle.h's result, each
 * step rounded once from its exact value formed in double (no fmaf), on inputs chosen so
 * that the look-alikes give other results after the narrowing: the product rounded before
 * the add (a forgotten FMA) and the same formula in double arithmetic narrowed once (the
 * previous contract). The inputs cancel: the addend (f2, or dy - f2) is the negated float
 * nearest (x - f0) * f1, plus j of that float's ulps (j of p - 3 bits, p the element's
 * precision), so the product's rounding error, up to half that ulp, and the roundings of
 * x - f0 (f0 has bits below x's) and of dy - f2 are several ulps of the result. Only
 * inputs where the unfused formula differs are kept; how many of them double arithmetic
 * gets right is counted too. Runs repeat one input L = 1..67 times (vector bodies and
 * tails, one coefficient set per call); rows give each of NORA channels its own
 * coefficients.
 */
#define NORA 1024 /* inputs per element type and map */
#define OROWS 3

typedef struct ocase {
    float x, dy, f[4];
    uint32_t want;
} ocase;

static ocase g_oc[NORA];
static _Alignas(64) unsigned char g_oin[2][(OROWS * (NORA + 1) + 8) * 4];
static _Alignas(64) unsigned char g_oout[(OROWS * (NORA + 2) + 2 * PAD) * 4];
static _Alignas(64) float g_ok[4 * (NORA + 3)];

static const int k_oracle_dts[] = {SBN_KD_F32, SBN_KD_F16, SBN_KD_BF16};
static const char *const k_dt_names[] = {"f64", "f32", "f16", "bf16"};

static int precision_of(int dt) { return dt == SBN_KD_F32 ? 24 : dt == SBN_KD_F16 ? 11 : 8; }
static size_t esize(int dt) { return dt == SBN_KD_F32 ? 4 : 2; }

/* The element bits of float v in type dt, v narrowed once (to nearest even). */
static uint32_t out_bits(int dt, float v)
{
    if (dt == SBN_KD_F32) return float_bits(v);
    return dt == SBN_KD_F16 ? sbn__float_to_f16(v) : sbn__float_to_bf16(v);
}

/* The element bits of double v in type dt, v rounded once (round to odd to float first). */
static uint32_t out_bits_double(int dt, double v)
{
    if (dt == SBN_KD_F32) return float_bits((float)v);
    return out_bits(dt, sbn__narrow_round_to_odd(v));
}

static void put_elem(int dt, void *buf, size_t i, uint32_t bits)
{
    memcpy((char *)buf + i * esize(dt), &bits, esize(dt));
}

static uint32_t get_elem(int dt, const void *buf, size_t i)
{
    uint32_t u = 0;
    memcpy(&u, (const char *)buf + i * esize(dt), esize(dt));
    return u;
}

/* A random value of type dt with all p bits of its significand free, in [2^e, 2^(e+1)). */
static float elem_value(int dt, int e)
{
    int p = precision_of(dt);
    double m = (double)((1 << (p - 1)) + below(1 << (p - 1)));
    return (float)random_sign(ldexp(m, e - (p - 1)));
}

static float float_ulp(float v) { return (float)ldexp(1.0, ilogb(v) - 23); }

/* f0 and f1 for x, and the addend c that cancels (x - f0) * f1 but for about 2^e_res. */
static float cancel_coefs(int dt, int e_res, float x, float *f)
{
    int p = precision_of(dt), r = p - 3, e_p = e_res - r + 23, ex = ilogb(x);
    double j = random_sign((double)((1 << (r - 1)) + below(1 << (r - 1))));
    float d, pf;
    f[0] = (float)random_sign(ldexp(1.0 + uniform(), ex - 2 - below(5)));
    d = tsup_subf(x, f[0]);
    f[1] = elem_value(SBN_KD_F32, e_p - ilogb(d));
    pf = (float)((double)d * f[1]);
    return (float)(-(double)pf + j * float_ulp(pf));
}

/* Draws one input of the map on type dt; its results by the oracle and the look-alikes,
 * bit 0: the unfused formula differs from the oracle after the narrowing, 1: double
 * arithmetic differs. */
static int oracle_case(int dt, int bwd, ocase *c)
{
    int t = below(9) - 4, p = precision_of(dt), diff = 0, e3 = below(9) - 4, e_res, ey;
    volatile float d, e, prod, sum_u;
    float fused, addend;
    double v;
    c->dy = 0.0f;
    c->f[3] = 0.0f;
    e_res = bwd ? t - e3 : t; /* backward multiplies by f3 of about 2^e3 at the end */
    c->x = elem_value(dt, (e_res - p + 26) / 2 > 12 ? 12 : (e_res - p + 26) / 2);
    addend = cancel_coefs(dt, e_res, c->x, c->f);
    if (!bwd) {
        c->f[2] = addend;
    } else { /* dy - f2 about the addend, dy below it (and within fp16's range) */
        ey = ilogb(addend) - 1 - below(3);
        c->dy = elem_value(dt, dt == SBN_KD_F16 && ey > 14 ? 14 : ey);
        c->f[2] = (float)((double)c->dy - addend);
        c->f[3] = elem_value(SBN_KD_F32, e3);
    }
    fused = bwd ? tsup_backward_flt(c->dy, c->x, c->f, 1) : tsup_normalize_flt(c->x, c->f, 1);
    c->want = out_bits(dt, fused);
    /* the look-alikes: float arithmetic without the FMA, and double arithmetic */
    d = c->x - c->f[0];
    e = bwd ? c->dy - c->f[2] : c->f[2];
    prod = d * c->f[1];
    sum_u = prod + e;
    v = ((double)c->x - c->f[0]) * c->f[1] + (bwd ? (double)c->dy - c->f[2] : c->f[2]);
    if (bwd) {
        volatile float gi_u = sum_u * c->f[3];
        diff |= out_bits(dt, gi_u) != c->want;
        v *= c->f[3];
    } else {
        diff |= out_bits(dt, sum_u) != c->want;
    }
    diff |= (out_bits_double(dt, v) != c->want) << 1;
    if (!isfinite(fused) || fused == 0.0f) return 0; /* not drawn to be; never kept */
    return diff;
}

/* NORA inputs where the unfused formula differs; 0 with a message when too few are found. */
static int oracle_inputs(int dt, int bwd)
{
    int kept = 0, drawn = 0, dbl = 0, diff;
    while (kept < NORA && drawn < 8 * NORA) {
        drawn++;
        diff = oracle_case(dt, bwd, &g_oc[kept]);
        if (!(diff & 1)) continue;
        dbl += (diff >> 1) & 1;
        kept++;
    }
    printf("    %s %s: %d FMA-sensitive inputs of %d drawn (the unfused formula differs); "
           "double arithmetic differs in %d\n",
           k_dt_names[dt], bwd ? "backward" : "normalize", kept, drawn, dbl);
    if (kept < NORA || dbl < 3 * NORA / 4) {
        sbn_test_fail(__FILE__, __LINE__, "%s %s: too few sensitive inputs", k_dt_names[dt],
                      bwd ? "backward" : "normalize");
        return 0;
    }
    return 1;
}

/* The input i of a run: its element bits, as the map reads them. */
static uint32_t in_bits(int dt, float v) { return out_bits(dt, v); }

/* Case i through the run kernel, repeated L times at offset i % 4; 0 at a mismatch. */
static int oracle_run(const sbn_kernels *k, int dt, int bwd, int i)
{
    const ocase *c = &g_oc[i];
    size_t L = 1 + (size_t)i % 67, off = (size_t)i % 4, e, es = esize(dt);
    size_t total = sizeof g_oout / es;
    float fc[4]; /* exactly the coefficients: ASan sees over-reads */
    memcpy(fc, c->f, sizeof fc);
    for (e = 0; e < L; e++) {
        put_elem(dt, g_oin[0], off + e, in_bits(dt, c->x));
        put_elem(dt, g_oin[1], e, in_bits(dt, c->dy));
    }
    memset(g_oout, 0xA5, sizeof g_oout);
    if (bwd)
        k->backward[dt](g_oin[1], g_oin[0] + off * es, L, fc, g_oout + (PAD + off) * es);
    else
        k->normalize[dt](g_oin[0] + off * es, L, fc, g_oout + (PAD + off) * es);
    for (e = 0; e < total; e++) {
        long idx = (long)e - PAD - (long)off;
        uint32_t want = idx >= 0 && (size_t)idx < L ? c->want : (es == 4 ? 0xA5A5A5A5u : 0xA5A5u);
        uint32_t got = get_elem(dt, g_oout, e);
        if (got == want) continue;
        sbn_test_fail(__FILE__, __LINE__,
                      "%s %s %s (run of %zu) input %d: index %ld got %08x want %08x; x %a dy %a "
                      "f %a %a %a %a",
                      k->isa, k_dt_names[dt], bwd ? "backward" : "normalize", L, i, idx,
                      (unsigned)got, (unsigned)want, c->x, c->dy, c->f[0], c->f[1], c->f[2],
                      c->f[3]);
        return 0;
    }
    return 1;
}

/* All inputs through the row kernel: OROWS rows of NORA channels, channel j holding input j
 * in every row, row strides with gaps, coefficients of stride NORA + 3 with NaN gaps. */
static int oracle_rows(const sbn_kernels *k, int dt, int bwd)
{
    size_t es = esize(dt), cn = NORA, xs = NORA + 1, ys = NORA + 2, ldk = NORA + 3, r, j, e;
    size_t total = sizeof g_oout / es;
    uint32_t guard = es == 4 ? 0xA5A5A5A5u : 0xA5A5u;
    for (e = 0; e < 4 * ldk; e++) g_ok[e] = float_from_bits(0x7FC0DEADu);
    for (j = 0; j < cn; j++)
        for (e = 0; e < 4; e++) g_ok[e * ldk + j] = g_oc[j].f[e];
    for (r = 0; r < OROWS; r++)
        for (j = 0; j < cn; j++) {
            put_elem(dt, g_oin[0], r * xs + j, in_bits(dt, g_oc[j].x));
            put_elem(dt, g_oin[1], r * xs + j, in_bits(dt, g_oc[j].dy));
        }
    memset(g_oout, 0xA5, sizeof g_oout);
    if (bwd)
        k->row_backward[dt](g_oin[1], (int64_t)xs, g_oin[0], (int64_t)xs, OROWS, cn, g_ok, ldk,
                            g_oout + PAD * es, (int64_t)ys);
    else
        k->row_normalize[dt](g_oin[0], (int64_t)xs, OROWS, cn, g_ok, ldk, g_oout + PAD * es,
                             (int64_t)ys);
    for (e = 0; e < total; e++) {
        long idx = (long)e - PAD;
        int inside = idx >= 0 && (size_t)idx < (OROWS - 1) * ys + cn && (size_t)idx % ys < cn;
        uint32_t want = inside ? g_oc[(size_t)idx % ys].want : guard;
        uint32_t got = get_elem(dt, g_oout, e);
        if (got == want) continue;
        sbn_test_fail(__FILE__, __LINE__,
                      "%s %s %s: index %ld (row %ld col %ld%s) got %08x want %08x", k->isa,
                      k_dt_names[dt], bwd ? "row_backward" : "row_normalize", idx,
                      idx / (long)ys, idx % (long)ys, inside ? "" : ", outside", (unsigned)got,
                      (unsigned)want);
        return 0;
    }
    return 1;
}

/* which 0: the scalar kernels; 1: every other variant. */
static void maps_against_oracle(int which)
{
    const sbn_kernels *ks[NISA];
    int nisa = isas(ks), d, bwd, i, v;
    CHECK(nisa >= 1 && strcmp(ks[0]->isa, "scalar") == 0);
    if (which == 1 && nisa == 1) printf("    no other ISA on this machine\n");
    for (d = 0; d < 3; d++)
        for (bwd = 0; bwd < 2; bwd++) {
            int dt = k_oracle_dts[d];
            if (!oracle_inputs(dt, bwd)) return;
            for (v = which; v < (which ? nisa : 1); v++) {
                for (i = 0; i < NORA; i++)
                    if (!oracle_run(ks[v], dt, bwd, i)) return;
                if (!oracle_rows(ks[v], dt, bwd)) return;
                printf("      %s: all %d equal the oracle (runs and rows)\n", ks[v]->isa, NORA);
            }
        }
}

static void test_maps_fma_oracle(void) { maps_against_oracle(0); }
static void test_maps_fma_oracle_isas(void) { maps_against_oracle(1); }

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_reductions_bitwise),
        SBN_TEST_CASE(test_reductions_lane_order),
        SBN_TEST_CASE(test_loads_bitwise),
        SBN_TEST_CASE(test_stores_bitwise),
        SBN_TEST_CASE(test_maps_bitwise),
        SBN_TEST_CASE(test_maps_fma_oracle),
        SBN_TEST_CASE(test_maps_fma_oracle_isas),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
