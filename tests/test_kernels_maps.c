/*
 * test_kernels_maps.c - the elementwise maps (normalize, backward) of every kernel variant
 * that sbn__kernels_for() offers on this machine (scalar, avx2, avx512). The f32 maps
 * against the scalar ones BITWISE, on random bits and mixed values, n = 0..67, 100, 255,
 * 1000, 1001, 2047, 2048, pointers offset by 0..3 elements, in place too, with float
 * coefficients from sbn__map_coefs_float of fp64-form sets (including extreme and
 * non-finite ones) and drawn directly (random bits, extremes, NaNs); the fixed float
 * arithmetic with explicit FMAs (kernels.h) leaves no freedom, so any difference in any
 * bit is a bug, but for results of two or more NaN sources (support/nan_sources.h). Then
 * the fp32/fp16/bf16 maps, runs and rows, against an oracle of their float formula with
 * its fused multiply-add (support/map_oracle.h), on inputs where the unfused formula and
 * double arithmetic give other results: the scalar kernels, then every other variant.
 * Outputs live in guarded buffers: a write outside [0, n) is a mismatch too. The
 * reductions, loads and stores are in test_kernels.c.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#define TSUP_RNG_SEED 0x5EED5EED12345678ull
#include "support/kernel_isas.h"
#include "support/kernel_values.h"
#include "support/map_oracle.h"
#include "support/nan_sources.h"

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
    const sbn_kernels *ks[NVARIANT];
    size_t ns[100];
    int nisa = map_variants(ks), count = sizes(ns, 1), i, s, xo, kc;
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
    const sbn_kernels *ks[NVARIANT];
    int nisa = map_variants(ks), d, bwd, i, v;
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
        SBN_TEST_CASE(test_maps_bitwise),
        SBN_TEST_CASE(test_maps_fma_oracle),
        SBN_TEST_CASE(test_maps_fma_oracle_isas),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
