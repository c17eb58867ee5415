/*
 * test_kernels_stream.c - the streaming kernels of kernels.h (accum, bwd_accum, row_accum,
 * row_bwd_accum, normalize, backward, row_normalize, row_backward; f64, f32, f16, bf16).
 * The scalar ones are checked bit for bit against an oracle written here from the formulas
 * of kernels.h, with its own conversions from the IEEE definitions (support/ieee_formats.h,
 * checked on their own in test_kernels_stream_formats.c), so the scalar definitions are tested
 * themselves: the reductions and the fp64 maps as the same double operations in the same
 * order (the reductions' squares and products fused into their adds with C's fma); the
 * fp32/fp16/bf16 maps, which take float coefficients, as float arithmetic with
 * an explicit fused multiply-add, each step rounded once from its exact value
 * (support/map_oracle.h, no fmaf), the float result narrowed once. Every other ISA that
 * sbn__kernels_for() offers is checked BITWISE against scalar. Runs: n = 0..70, 100, 255,
 * 2047, 2048, each with every lane 0..15 (three value profiles per pair in turn), pointers
 * misaligned by 0..3 elements; rows: cn 1..70 and 256, rows 0..40 (0..3, 15..17 and every
 * fourth per cn), ld = cn or cn + 5, row strides cn and larger with garbage in the gaps;
 * maps also in place. Profiles: normal, mean 1e4 +- 1e-2, magnitudes, mixed, subnormals,
 * signed zeros, specials (inf, NaN payloads, huge), random bits, and values whose map
 * results fall on or next to fp32/fp16/bf16 rounding ties. Map coefficients: sets in the
 * fp64 form (ordinary, tiny, extreme (2^+-1000), infinite, NaN, ties), passed as doubles to
 * the fp64 maps and as sbn__map_coefs_float's floats to the others, and sets drawn directly
 * in the kernel's coefficient type (random bits; extremes: zeros, subnormals, the largest
 * finite, infinities, NaNs), which the kernels must follow bit for bit whatever they hold.
 * Where two different NaNs could meet in one lane sequence or element (operand order, not
 * the contract, would pick the payload) an input is replaced by 0.75 (a coefficient too,
 * counting the coefficients actually passed), so every comparison is of all bits; for the
 * float maps a finite value of magnitude 2^126 or more counts as a source like an infinity,
 * since x - f0 can overflow to one. Inputs and coefficients are exact-size heap blocks
 * (ASan sees over-reads); outputs and accumulators sit in guarded buffers, the
 * accumulators pre-filled nonzero and every entry a kernel must not touch (unused lanes,
 * j >= cn, guards) holding a signalling NaN that any arithmetic would quiet; every byte is
 * compared. The last case plants faults and checks that the checker sees each one.
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
#define TSUP_RNG_SEED 0x57EA5EED0BADCAFEull
#include "support/ieee_formats.h"
#include "support/kernel_isas.h"
#include "support/map_oracle.h"
#include "support/stream_values.h"

#define MAXE 155648 /* input elements: 300 rows of stride 2 * 256 (600 of 2 * 9), + offsets */
#define PAD 32     /* guard elements either side of a map output */
#define GA 8       /* guard doubles either side of the accumulators */
#define MAXCN 2064 /* the widest rows */
#define MAXLD (MAXCN + 7)
#define SNAN_BITS 0x7FF4A5A5A5A5A5A5ull /* untouchable accumulator entries */

/* ---- the oracle kernels (runs are rows = n, cn = 1, strides 1, ld = ldk = 1) ----
 * The reductions' fused multiply-add is C's fma, correctly rounded by the standard
 * (IEEE 754 fusedMultiplyAdd); the planted faults below include the unfused form. */

static void oracle_accum(int dt, int bwd, const void *dy, int64_t dys, const void *x, int64_t xs,
                         size_t rows, size_t cn, unsigned lane, const double *c, double *a,
                         double *b, size_t ld)
{
    size_t r, j;
    for (r = 0; r < rows; r++)
        for (j = 0; j < cn; j++) {
            size_t l = (lane + r) % SBN_LANES;
            double v = get(dt, x, (int64_t)r * xs + (int64_t)j);
            if (bwd) {
                double g = get(dt, dy, (int64_t)r * dys + (int64_t)j);
                a[l * ld + j] += g;
                b[l * ld + j] = fma(g, v - c[j], b[l * ld + j]);
            } else {
                double d = v - c[j];
                a[l * ld + j] += d;
                b[l * ld + j] = fma(d, d, b[l * ld + j]);
            }
        }
}

/* fp64: double coefficients, the double formula; fp32/fp16/bf16: float coefficients, the
 * float formula of support/map_oracle.h on the exactly widened elements, narrowed once. */
static void oracle_map(int dt, int bwd, const void *dy, int64_t dys, const void *x, int64_t xs,
                       size_t rows, size_t cn, const void *kv, size_t ldk, void *y, int64_t ys)
{
    size_t r, j;
    for (r = 0; r < rows; r++)
        for (j = 0; j < cn; j++) {
            double v = get(dt, x, (int64_t)r * xs + (int64_t)j), res;
            if (dt == SBN_KD_F64) {
                const double *k = kv;
                if (bwd)
                    res = ((get(dt, dy, (int64_t)r * dys + (int64_t)j) - k[j]) -
                           (v - k[ldk + j]) * k[2 * ldk + j]) * k[3 * ldk + j];
                else
                    res = (v - k[j]) * k[ldk + j] + k[2 * ldk + j];
            } else if (bwd) {
                res = tsup_backward_flt((float)get(dt, dy, (int64_t)r * dys + (int64_t)j),
                                        (float)v, (const float *)kv + j, ldk);
            } else {
                res = tsup_normalize_flt((float)v, (const float *)kv + j, ldk);
            }
            put_bits(dt, y, (int64_t)r * ys + (int64_t)j, narrow(dt, res));
        }
}

/* ---- value profiles and coefficients ---- */

enum { P_NORMAL, P_MEAN, P_MAGNITUDES, P_MIXED, P_SUBNORMAL, P_ZEROS, P_SPECIALS, P_TIES, P_BITS,
       P_COUNT };
static const char *const k_profile_names[] = {"normal",       "mean1e4",  "magnitudes",
                                              "mixed",        "subnormal", "signed_zeros",
                                              "specials",     "ties",      "random_bits"};

/* The call: a run is rows = n, cn = ld = ldk = 1, strides 1. */
typedef struct geo {
    int dt, row, profile, kset, tie_e;
    int fresh; /* row reductions: the call starts a chunk (kernels.h) */
    size_t rows, cn, ld, ldk;
    int64_t xs, dys, ys;
    unsigned lane;
    int xo, dyo, yo; /* misalignment of x, dy, y in elements */
} geo;

static uint64_t nan_bits(int dt)
{
    int mb = k_fmt[dt].mbits, eb = k_fmt[dt].ebits;
    uint64_t m = next_u64() & ((1ull << mb) - 1);
    return (next_u64() & 1) << (mb + eb) | ((1ull << eb) - 1) << mb | (m ? m : 1);
}

static void put_value(const geo *g, void *p, int64_t i)
{
    int dt = g->dt, mb = k_fmt[dt].mbits, emin = 2 - (1 << (k_fmt[dt].ebits - 1)), c;
    double v;
    switch (g->profile) {
    case P_NORMAL: v = normal(); break;
    case P_MEAN: v = 1e4 + 1e-2 * normal(); break;
    case P_MAGNITUDES: v = random_sign(ldexp(0.5 + uniform(), below(120) - 60)); break;
    case P_MIXED: v = mixed_value(); break;
    case P_SUBNORMAL:
        v = random_sign(below(8) ? ldexp(uniform(), emin - below(mb)) : ldexp(1 + uniform(), emin));
        break;
    case P_ZEROS: v = random_sign(0.0); break;
    case P_SPECIALS: /* one in 20 each: a NaN of the type, inf, huge, a mixed value */
        if ((c = below(20)) == 0) {
            put_bits(dt, p, i, nan_bits(dt));
            return;
        }
        v = c == 1 ? random_sign(INFINITY) : c == 2 ? random_sign(1e300) : normal();
        if (c == 3) v = mixed_value();
        break;
    case P_TIES: v = random_sign(ldexp(1.0 + uniform(), g->tie_e)); break;
    default: put_bits(dt, p, i, next_u64()); return;
    }
    put_bits(dt, p, i, narrow(dt, v));
}

static double pick_center(const geo *g, const void *x, size_t j)
{
    if (g->profile == P_MEAN) return 1e4 + 1e-2 * normal();
    if (g->profile == P_ZEROS) return random_sign(0.0);
    switch (below(20)) {
    case 0: return 0.0;
    case 1: return g->rows > 0 ? get(g->dt, x, (int64_t)j) : 1.0;
    case 2: return random_sign(ldexp(uniform(), -1070));
    case 3: return random_sign(1e300);
    case 4: return random_sign(INFINITY);
    case 5: return from_bits(nan_bits(SBN_KD_F64));
    default: return normal() * ldexp(1.0, below(9) - 4);
    }
}

#define NCOEF 10 /* sets 0..7 in the fp64 form, 8..9 drawn in the kernel's coefficient type */
#define NCOEF64 8
#define K_TIE 7

/* A set in the fp64 form: k = (mean, s, b) for normalize, (a, mean, q, s) for backward. */
static void make_coef(int set, int bwd, const geo *g, double *k)
{
    int t;
    double u = ldexp(1.0, g->tie_e - k_fmt[g->dt].mbits), c;
    for (t = 0; t < 4; t++) k[t] = normal() * ldexp(1.0, below(20) - 10);
    switch (set) {
    case 0: k[0] = 0.25; k[1] = 1.5; k[2] = -0.125; k[3] = 0.75; break;
    case 1: break;
    case 2: k[0] = 1e4 + 1e-3 * normal(); k[1] = 1e2 * uniform(); k[3] = 3e38; break;
    case 3: k[0] = 0.0; k[1] = 1e-40; k[2] = -0.0; k[3] = 1e-300; break;
    case 4: /* scales from 2^-1000 to 2^1000: underflow, overflow, subnormal results */
        k[1] = random_sign(pow2(below(2001) - 1000)), k[2] = 5e-324;
        k[3] = random_sign(pow2(below(801) - 400));
        break;
    case 5: k[below(bwd ? 4 : 3)] = random_sign(INFINITY); break;
    case 6: k[below(bwd ? 4 : 3)] = from_bits(nan_bits(SBN_KD_F64)); break;
    default: { /* results u/2 (+ a little) away from the grid: near ties of the type */
        static const double k_delta[] = {0.0, 0x1p-20, -0x1p-20, 0x1p-45, -0x1p-45, 0.25};
        c = 0.5 * u + u * k_delta[below(6)];
        if (bwd) { k[0] = -c; k[1] = 0.0; k[2] = 0.0; k[3] = 1.0; }
        else { k[0] = 0.0; k[1] = 1.0; k[2] = c; }
    }
    }
}

/* The bits of one coefficient of type cdt (f64 or f32) drawn directly: set 8 random bits,
 * set 9 an extreme (a zero, the smallest subnormal, a subnormal, the smallest normal, the
 * largest finite, near it, an infinity, a NaN with a random payload, quiet or signalling)
 * or an ordinary value at a random scale of the type's range. */
static uint64_t direct_coef(int set, int cdt)
{
    int mb = k_fmt[cdt].mbits, eb = k_fmt[cdt].ebits, emax = (1 << (eb - 1)) - 1;
    uint64_t sign = (next_u64() & 1) << (mb + eb), inf = ((1ull << eb) - 1) << mb;
    if (set == NCOEF64) return next_u64() & (cdt == SBN_KD_F64 ? ~0ull : 0xFFFFFFFFull);
    switch (below(10)) {
    case 0: return sign;
    case 1: return sign | 1;
    case 2: return sign | (next_u64() & ((1ull << mb) - 1));
    case 3: return sign | 1ull << mb;
    case 4: return sign | (inf - 1);
    case 5: return sign | (inf - 1 - (next_u64() & 0xFF));
    case 6: return sign | inf;
    case 7: return nan_bits(cdt);
    default: return narrow(cdt, normal() * ldexp(1.0, below(2 * emax) - emax));
    }
}

/* Channel j's coefficients as the kernel of g->dt takes them, bits of type cdt: fp64 takes
 * the fp64 form, the others its floats (sbn__map_coefs_float) or floats drawn directly. */
static void coef_bits(int set, int bwd, const geo *g, int cdt, uint64_t *kb)
{
    double k[4];
    float f[4];
    int t;
    if (set >= NCOEF64) {
        for (t = 0; t < 4; t++) kb[t] = direct_coef(set, cdt);
        return;
    }
    make_coef(set, bwd, g, k);
    if (cdt == SBN_KD_F64) {
        for (t = 0; t < 4; t++) kb[t] = bits_of(k[t]);
        return;
    }
    (void)sbn__map_coefs_float(bwd, k, f); /* 0 (the double fallback's case) is tested too */
    for (t = 0; t < 4; t++) {
        uint32_t u;
        memcpy(&u, &f[t], sizeof u);
        kb[t] = u;
    }
}

/* ---- one NaN source per lane sequence or element ---- */

/* A NaN (its quiet pattern), or 1 for what can make the default NaN (inf, or huge: above
 * 2^500 in double arithmetic, above 2^126 in the float maps, where x - f0 can overflow), or 0. */
static uint64_t src_key(double v, double huge)
{
    if (isnan(v)) return bits_of(v) | 0x0008000000000000ull;
    return isinf(v) || fabs(v) > huge ? 1 : 0;
}

static double huge_for(int dt, int map) { return map && dt != SBN_KD_F64 ? 0x1p126 : 0x1p500; }

static int src_join(uint64_t *st, uint64_t key)
{
    if (key == 0 || *st == key) return 1;
    if (*st != 0) return 0;
    *st = key;
    return 1;
}

static uint64_t g_seq[SBN_LANES * MAXCN], g_base[MAXCN];

/* Elements (r, j) of p[0..np) (row strides s) join the sequence of channel j and lane
 * (lane + r) % 16 (lanes: the reductions) or of that element alone (the maps), which starts
 * with ex[j*nex ..]; an element that would bring a second source to its sequence becomes 0.75. */
static int one_source(const geo *g, void *const *p, const int64_t *s, int np, int lanes,
                      const double *ex, int nex)
{
    size_t r, j, l;
    int t, ok;
    double huge = huge_for(g->dt, !lanes);
    for (j = 0; j < g->cn; j++) {
        g_base[j] = 0;
        for (t = 0; t < nex; t++)
            if (!src_join(&g_base[j], src_key(ex[j * (size_t)nex + (size_t)t], huge))) return 0;
        for (l = 0; l < SBN_LANES; l++) g_seq[l * g->cn + j] = g_base[j];
    }
    for (r = 0; r < g->rows; r++)
        for (j = 0; j < g->cn; j++) {
            uint64_t *seq = &g_seq[((g->lane + r) % SBN_LANES) * g->cn + j], st;
            st = lanes ? *seq : g_base[j];
            for (ok = 1, t = 0; t < np; t++)
                ok = ok && src_join(&st, src_key(get(g->dt, p[t], (int64_t)r * s[t] + (int64_t)j),
                                                 huge));
            if (ok && lanes) *seq = st;
            for (t = 0; !ok && t < np; t++)
                put_bits(g->dt, p[t], (int64_t)r * s[t] + (int64_t)j, narrow(g->dt, 0.75));
        }
    return 1;
}

/* ---- running one call on two implementations (NULL: the oracle) ---- */

static _Alignas(64) unsigned char g_mx[(MAXE + 8) * 8], g_mdy[(MAXE + 8) * 8];
#define ACCN (2 * GA + 2 * SBN_LANES * MAXLD + 3)
#define YBYTES ((MAXE + 2 * PAD + 8) * 8)
static _Alignas(64) double g_acc0[ACCN], g_accr[ACCN], g_accg[ACCN];
static _Alignas(64) unsigned char g_y0[YBYTES], g_yr[YBYTES], g_yg[YBYTES];

static size_t extent(const geo *g, int64_t s) /* elements from row 0 to the end of the last */
{
    return g->rows ? (g->rows - 1) * (size_t)s + g->cn : 0;
}

static const char *name_of(const sbn_kernels *k) { return k ? k->isa : "oracle"; }

/* x (or dy) master: profile values at the elements, garbage in row gaps and before. */
static void gen_master(const geo *g, void *m, int64_t s, int off)
{
    size_t i, ext = extent(g, s);
    for (i = 0; i < (size_t)off + ext; i++) {
        if (i < (size_t)off || (i - (size_t)off) % (size_t)s >= g->cn)
            put_bits(g->dt, m, (int64_t)i, next_u64());
        else
            put_value(g, m, (int64_t)i);
    }
}

/* Heap blocks of exactly `bytes` (ASan sees a read past the end). */
static void *exact_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) abort();
    return p;
}

static void *exact_copy(const void *src, size_t bytes)
{
    void *p = exact_alloc(bytes);
    if (bytes) memcpy(p, src, bytes);
    return p;
}

static int lane_used(const geo *g, size_t l)
{
    return g->rows >= SBN_LANES || (l + SBN_LANES - g->lane) % SBN_LANES < g->rows;
}

/* The reference (NULL: the oracle), the implementations compared with it, bit for bit. */
typedef struct impls {
    const sbn_kernels *ref, *got[NVARIANT];
    int ngot, report;
} impls;

static void fail_geo(const geo *g, const impls *im, int k, const char *fam, int inplace,
                     const char *where, uint64_t gb, uint64_t rb)
{
    if (!im->report) return;
    sbn_test_fail(__FILE__, __LINE__,
                  "%s %s %s vs %s: n/rows=%zu cn=%zu lane=%u xs=%lld dys=%lld ys=%lld ld=%zu "
                  "ldk=%zu off x/dy/y=%d/%d/%d inplace=%d profile=%s kset=%d: %s: got %016llx "
                  "want %016llx", k_fmt[g->dt].name, fam, name_of(im->got[k]), name_of(im->ref),
                  g->rows, g->cn, g->lane, (long long)g->xs, (long long)g->dys, (long long)g->ys,
                  g->ld, g->ldk, g->xo, g->dyo, g->yo, inplace, k_profile_names[g->profile],
                  g->kset, where, (unsigned long long)gb, (unsigned long long)rb);
}

static void call_accum(const sbn_kernels *k, const geo *g, int bwd, const void *dy, const void *x,
                       const double *c, double *a, double *b)
{
    int dt = g->dt;
    if (k == NULL && g->fresh) /* the lanes the call reaches start from +0.0 */
        sbn__clear_fresh_lanes(a, b, g->ld, g->cn, g->lane, g->rows);
    if (k == NULL)
        oracle_accum(dt, bwd, dy, g->dys, x, g->xs, g->rows, g->cn, g->lane, c, a, b, g->ld);
    else if (g->row && bwd)
        k->row_bwd_accum[dt](dy, g->dys, x, g->xs, g->rows, g->cn, g->lane, c, a, b, g->ld,
                             g->fresh);
    else if (g->row)
        k->row_accum[dt](x, g->xs, g->rows, g->cn, g->lane, c, a, b, g->ld, g->fresh);
    else if (bwd)
        k->bwd_accum[dt](dy, x, g->rows, g->lane, c[0], a);
    else
        k->accum[dt](x, g->rows, g->lane, c[0], a);
}

static int check_accum(const impls *im, const geo *g, int bwd)
{
    static const char *const fam[2][2] = {{"accum", "bwd_accum"}, {"row_accum", "row_bwd_accum"}};
    int es = k_fmt[g->dt].es, ok = 1, k;
    size_t ld = g->ld, span = SBN_LANES * ld, bo = GA + span + (g->row ? 3 : 0), i, l, j;
    size_t total = bo + span + GA; /* guard, a, (3 guard), b, guard */
    unsigned char *x = exact_copy(g_mx, ((size_t)g->xo + extent(g, g->xs)) * (size_t)es);
    unsigned char *dy = exact_copy(g_mdy, ((size_t)g->dyo + extent(g, g->dys)) * (size_t)es);
    double *c = exact_alloc(g->cn * sizeof(double));
    void *p[2];
    int64_t s[2];
    uint64_t snan = SNAN_BITS;
    p[0] = x + g->xo * es, s[0] = g->xs, p[1] = dy + g->dyo * es, s[1] = g->dys;
    for (j = 0; j < g->cn; j++) c[j] = pick_center(g, p[0], j);
    if (!one_source(g, p, s, bwd ? 2 : 1, 1, c, 1)) abort();
    for (i = 0; i < total; i++) memcpy(&g_acc0[i], &snan, sizeof snan);
    for (l = 0; l < SBN_LANES; l++)
        for (j = 0; lane_used(g, l) && j < g->cn; j++) {
            g_acc0[GA + l * ld + j] = random_sign(0.0625 + uniform()) * pow2(below(8) - 4);
            g_acc0[bo + l * ld + j] = (0.0625 + uniform()) * pow2(below(8) - 4);
        }
    memcpy(g_accr, g_acc0, total * sizeof(double));
    call_accum(im->ref, g, bwd, p[1], p[0], c, g_accr + GA, g_accr + bo);
    for (k = 0; k < im->ngot && ok; k++) {
        memcpy(g_accg, g_acc0, total * sizeof(double));
        call_accum(im->got[k], g, bwd, p[1], p[0], c, g_accg + GA, g_accg + bo);
        for (i = 0; i < total && ok; i++)
            if (memcmp(&g_accr[i], &g_accg[i], sizeof(double)) != 0) {
                char where[96];
                size_t o = i < bo ? i - GA : i - bo;
                if (i < GA || i >= bo + span || (i >= GA + span && i < bo))
                    snprintf(where, sizeof where, "accumulator guard %zu", i);
                else
                    snprintf(where, sizeof where, "%c[lane %zu][%zu]%s", i < bo ? 'a' : 'b', o / ld,
                             o % ld, o % ld >= g->cn || !lane_used(g, o / ld) ? " (no-go)" : "");
                fail_geo(g, im, k, fam[g->row][bwd], 0, where, bits_of(g_accg[i]),
                         bits_of(g_accr[i]));
                ok = 0;
            }
    }
    free(x), free(dy), free(c);
    return ok;
}

static void call_map(const sbn_kernels *k, const geo *g, int bwd, const void *dy, int64_t dys,
                     const void *x, int64_t xs, const void *kc, void *y, int64_t ys)
{
    int dt = g->dt;
    if (k == NULL)
        oracle_map(dt, bwd, dy, dys, x, xs, g->rows, g->cn, kc, g->ldk, y, ys);
    else if (g->row && bwd)
        k->row_backward[dt](dy, dys, x, xs, g->rows, g->cn, kc, g->ldk, y, ys);
    else if (g->row)
        k->row_normalize[dt](x, xs, g->rows, g->cn, kc, g->ldk, y, ys);
    else if (bwd)
        k->backward[dt](dy, x, g->rows, kc, y);
    else
        k->normalize[dt](x, g->rows, kc, y);
}

/* One map call into buf: in place, y is x (normalize) or dy (backward). */
static void run_map(const sbn_kernels *k, const geo *g, int bwd, int inplace, void *const *p,
                    const void *kc, unsigned char *y, int64_t ys)
{
    if (inplace && bwd)
        call_map(k, g, 1, y, ys, p[0], g->xs, kc, y, ys);
    else if (inplace)
        call_map(k, g, 0, NULL, 0, y, ys, kc, y, ys);
    else
        call_map(k, g, bwd, p[1], g->dys, p[0], g->xs, kc, y, ys);
}

static double g_ex[MAXCN * 4];

static int check_map(const impls *im, const geo *g, int bwd, int inplace)
{
    static const char *const fam[2][2] = {{"normalize", "backward"},
                                          {"row_normalize", "row_backward"}};
    /* the coefficient type: double for fp64, float for the others; nk of them are read */
    int es = k_fmt[g->dt].es, nk = bwd ? 4 : 3, ok = 1, t, k;
    int cdt = g->dt == SBN_KD_F64 ? SBN_KD_F64 : SBN_KD_F32;
    size_t xb = ((size_t)g->xo + extent(g, g->xs)) * (size_t)es;
    size_t dyb = ((size_t)g->dyo + extent(g, g->dys)) * (size_t)es;
    size_t ldk = g->ldk, klen = g->row ? (size_t)(nk - 1) * ldk + g->cn : 4, j, i, total;
    unsigned char *x = exact_copy(g_mx, xb), *dy = exact_copy(g_mdy, dyb);
    unsigned char *kc = exact_alloc(klen * (size_t)k_fmt[cdt].es);
    int64_t s[2], ys = inplace ? (bwd ? g->dys : g->xs) : g->ys;
    int yo = inplace ? (bwd ? g->dyo : g->xo) : g->yo;
    double huge = huge_for(g->dt, 1);
    void *p[2];
    p[0] = x + g->xo * es, s[0] = g->xs, p[1] = dy + g->dyo * es, s[1] = g->dys;
    for (i = 0; i < klen; i++) put_bits(cdt, kc, (int64_t)i, nan_bits(cdt)); /* ldk gaps */
    for (j = 0; j < g->cn; j++) {
        uint64_t kb[4], st = 0;
        coef_bits((g->kset + (int)j) % NCOEF, bwd, g, cdt, kb);
        for (t = 0; t < nk; t++) { /* one source among the coefficients passed too */
            if (!src_join(&st, src_key(widen(cdt, kb[t]), huge))) kb[t] = narrow(cdt, 0.75);
            put_bits(cdt, kc, (int64_t)((size_t)t * ldk + j), kb[t]);
            g_ex[j * (size_t)nk + (size_t)t] = widen(cdt, kb[t]);
        }
    }
    if (!one_source(g, p, s, bwd ? 2 : 1, 0, g_ex, nk)) abort();
    total = ((size_t)(2 * PAD + yo) + extent(g, ys)) * (size_t)es;
    for (i = 0; i < total; i += 8) {
        uint64_t r = next_u64();
        memcpy(g_y0 + i, &r, 8);
    }
    if (inplace) memcpy(g_y0 + PAD * es, bwd ? dy : x, bwd ? dyb : xb);
    memcpy(g_yr, g_y0, total);
    run_map(im->ref, g, bwd, inplace, p, kc, g_yr + (PAD + yo) * es, ys);
    for (k = 0; k < im->ngot && ok; k++) {
        memcpy(g_yg, g_y0, total);
        run_map(im->got[k], g, bwd, inplace, p, kc, g_yg + (PAD + yo) * es, ys);
        for (i = 0; i < total / (size_t)es && ok; i++)
            if (memcmp(g_yr + i * (size_t)es, g_yg + i * (size_t)es, (size_t)es) != 0) {
                char where[96];
                long idx = (long)i - PAD - yo;
                if (idx < 0 || (size_t)idx >= extent(g, ys))
                    snprintf(where, sizeof where, "output guard (index %ld)", idx);
                else
                    snprintf(where, sizeof where, "row %ld col %ld%s", idx / (long)ys,
                             idx % (long)ys, idx % (long)ys >= (long)g->cn ? " (row gap)" : "");
                fail_geo(g, im, k, fam[g->row][bwd], inplace, where,
                         get_bits(g->dt, g_yg, (int64_t)i), get_bits(g->dt, g_yr, (int64_t)i));
                ok = 0;
            }
    }
    free(x), free(dy), free(kc);
    return ok;
}

/* Every family on one geometry, fresh inputs; 0 at the first mismatch. */
static int check_all(const impls *im, const geo *g)
{
    int bwd, inplace;
    gen_master(g, g_mx, g->xs, g->xo);
    gen_master(g, g_mdy, g->dys, g->dyo);
    for (bwd = 0; bwd < 2; bwd++)
        if (!check_accum(im, g, bwd)) return 0;
    for (bwd = 0; bwd < 2; bwd++)
        for (inplace = 0; inplace < 2; inplace++)
            if (!check_map(im, g, bwd, inplace)) return 0;
    return 1;
}

static int tie_exponent(int dt) { return dt == SBN_KD_F16 ? below(29) - 14 : below(61) - 30; }

/* Runs: every n of the list with every lane, each pair under 3 of the profiles in turn. */
static int check_runs(const impls *im, int dt_only)
{
    static const size_t k_big[] = {100, 255, 2047, 2048};
    size_t ns[80];
    int count = 0, dt, t, si;
    unsigned lane;
    for (si = 0; si <= 70; si++) ns[count++] = (size_t)si;
    for (si = 0; si < 4; si++) ns[count++] = k_big[si];
    for (dt = 0; dt < SBN_KD_COUNT; dt++)
        for (si = 0; si < count && (dt_only < 0 || dt == dt_only); si++)
            for (lane = 0; lane < SBN_LANES; lane++)
                for (t = 0; t < 3; t++) {
                    geo g;
                    size_t n = ns[si];
                    int prof = (int)((lane + n + 3 * (size_t)t) % P_COUNT);
                    memset(&g, 0, sizeof g);
                    g.dt = dt, g.profile = prof, g.rows = n, g.lane = lane;
                    g.cn = g.ld = g.ldk = 1, g.xs = g.dys = g.ys = 1;
                    g.xo = (int)((lane + (unsigned)t) & 3), g.dyo = (int)((lane * 3 + n + 1) & 3);
                    g.yo = (int)((lane + n + (size_t)t) & 3);
                    g.kset = (int)((lane + n + (size_t)t) % NCOEF);
                    if (prof == P_TIES && (lane & 1)) g.kset = K_TIE;
                    g.tie_e = tie_exponent(dt);
                    if (!check_all(im, &g)) return 0;
                }
    return 1;
}

static int64_t stride_for(size_t cn, int v)
{
    switch (v & 3) {
    case 0: return (int64_t)cn;
    case 1: return (int64_t)cn + 1;
    case 2: return (int64_t)cn + 7;
    default: return 2 * (int64_t)cn;
    }
}

/* One row geometry: lane, ld, ldk, strides, offsets and values varied with (cn, rows, dt). */
static int check_row_geo(const impls *im, int dt, size_t cn, size_t rows)
{
    geo g;
    int v = (int)(cn * 7 + rows * 3 + (size_t)dt);
    memset(&g, 0, sizeof g);
    g.dt = dt, g.row = 1, g.rows = rows, g.cn = cn;
    g.lane = (unsigned)((cn + 5 * rows) % SBN_LANES);
    g.ld = cn + (v & 1 ? 5 : 0), g.ldk = cn + (v & 2 ? 3 : 0);
    g.xs = stride_for(cn, v >> 2), g.dys = stride_for(cn, v >> 4);
    g.ys = stride_for(cn, v >> 3);
    g.xo = v & 3, g.dyo = (v >> 3) & 3, g.yo = (v >> 5) & 3;
    g.profile = (int)((cn + rows) % P_COUNT);
    g.kset = g.profile == P_TIES && (rows & 1) ? K_TIE : (int)((cn * 3 + rows) % NCOEF);
    g.tie_e = tie_exponent(dt);
    g.fresh = (int)((cn + rows + (size_t)dt) / 2 % 2);
    return check_all(im, &g);
}

/* Rows: cn 1..70 and 256, each with rows 0..3, 15..17 and every fourth count up to 40
 * (all counts 0..40 over the cn); cn 257, 512, 513, 1040, 1057, 2047, 2048, 2049 and 2064
 * (a row tile of plan.c is 512 channels; the AVX2 bf16 maps take rows of up to 2048
 * channels sixteen channels a step, a tail of 1..15 and wider rows eight a step) with
 * 1..3, 16, 17 and 33 rows;
 * then rows over one and two blocks of the SIMD row
 * reductions (64 and 128 rows; 512 for rows narrower than 16 channels), whose AVX-512
 * _pf variants prefetch the next block of slices of up to 256 bytes: cn from 1 to 256
 * (both sides of that limit for every element size). Half the geometries start a chunk
 * (`fresh`), so a block after the first that restarts its lanes at zero is caught. */
static int check_rows(const impls *im, int dt_only)
{
    static const size_t long_cn[] = {1, 9, 32, 33, 64, 65, 128, 256};
    static const size_t wide_cn[] = {257, 512, 513, 1040, 1057, 2047, 2048, 2049, 2064};
    static const size_t wide_rows[] = {1, 2, 3, 16, 17, 33};
    static const size_t long_rows[] = {63, 65, 127, 128, 129, 143, 256, 257, 300,
                                       511, 513, 600};
    int dt, ci;
    size_t rows, i, j;
    for (dt = 0; dt < SBN_KD_COUNT; dt++) {
        if (dt_only >= 0 && dt != dt_only) continue;
        for (ci = 0; ci <= 70; ci++)
            for (rows = 0; rows <= 40; rows++) {
                size_t cn = ci < 70 ? (size_t)ci + 1 : 256;
                if (rows > 3 && (rows < 15 || rows > 17) && (rows + cn) % (cn > 70 ? 8 : 4) != 0)
                    continue;
                if (!check_row_geo(im, dt, cn, rows)) return 0;
            }
        for (i = 0; i < sizeof wide_cn / sizeof wide_cn[0]; i++)
            for (j = 0; j < sizeof wide_rows / sizeof wide_rows[0]; j++)
                if (!check_row_geo(im, dt, wide_cn[i], wide_rows[j])) return 0;
        for (i = 0; i < sizeof long_cn / sizeof long_cn[0]; i++)
            for (j = 0; j < sizeof long_rows / sizeof long_rows[0]; j++)
                if (((i + j) % 2 == 0 || long_cn[i] <= 65) &&
                    (long_rows[j] <= 300 || long_cn[i] < 16))
                    if (!check_row_geo(im, dt, long_cn[i], long_rows[j])) return 0;
    }
    return 1;
}

/* ---- cases ---- */

/* which = 0: scalar against the oracle; 1: every other ISA against scalar. */
static int setup(impls *im, int which)
{
    const sbn_kernels *ks[NVARIANT];
    int n = map_variants(ks), i;
    memset(im, 0, sizeof *im);
    im->report = 1;
    if (n < 1 || strcmp(ks[0]->isa, "scalar") != 0) return 0;
    if (which == 0) {
        im->got[im->ngot++] = ks[0];
        return 1;
    }
    im->ref = ks[0];
    for (i = 1; i < n; i++) printf("    %s against scalar\n", (im->got[im->ngot++] = ks[i])->isa);
    if (n == 1) printf("    no other ISA on this machine\n");
    return 1;
}

static void suite(int which, int rows)
{
    impls im;
    CHECK(setup(&im, which));
    if (im.ngot > 0) (void)(rows ? check_rows(&im, -1) : check_runs(&im, -1));
}

static void test_scalar_runs_vs_oracle(void) { suite(0, 0); }
static void test_scalar_rows_vs_oracle(void) { suite(0, 1); }
static void test_isa_runs_bitwise(void) { suite(1, 0); }
static void test_isa_rows_bitwise(void) { suite(1, 1); }

/* ---- planted faults: the checker must see each ---- */

static void bad_accum_lane(const void *x, size_t n, unsigned lane, double shift, double *acc)
{
    sbn_f32_accum_ukernel__scalar(x, n, (lane + 1) % SBN_LANES, shift, acc);
}

static void bad_accum_order(const void *x, size_t n, unsigned lane, double shift, double *acc)
{
    size_t h = n >= 32 ? 16 : 0; /* the second 16 elements before the first */
    sbn_f64_accum_ukernel__scalar((const double *)x + h, h, lane, shift, acc);
    sbn_f64_accum_ukernel__scalar(x, h, lane, shift, acc);
    sbn_f64_accum_ukernel__scalar((const double *)x + 2 * h, n - 2 * h, lane, shift, acc);
}

/* The reductions' previous contract: the square (the product) rounded before it is added. */
static void bad_accum_unfused(const void *x, size_t n, unsigned lane, double shift, double *acc)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned l = (unsigned)((lane + i) % SBN_LANES);
        double d = ((const double *)x)[i] - shift;
        volatile double p = d * d;
        acc[l] += d;
        acc[SBN_LANES + l] += p;
    }
}

static void bad_bwd_accum_unfused(const void *dy, const void *x, size_t n, unsigned lane,
                                  double center, double *acc)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned l = (unsigned)((lane + i) % SBN_LANES);
        double g = ((const float *)dy)[i];
        volatile double p = g * ((double)((const float *)x)[i] - center);
        acc[l] += g;
        acc[SBN_LANES + l] += p;
    }
}

static void bad_normalize_extra(const void *x, size_t n, const void *k, void *y)
{
    sbn_f32_normalize_ukernel__scalar(x, n, k, y);
    if (n > 0) ((float *)y)[n] = ((float *)y)[n - 1];
}

static void bad_backward_tail(const void *dy, const void *x, size_t n, const void *k, void *gi)
{
    sbn_f16_backward_ukernel__scalar(dy, x, n % 16 ? n - 1 : n, k, gi);
}

/* The maps' previous contract: the float coefficients in double arithmetic, rounded to odd to
 * float, then to nearest even: no double rounding, but not the float formula. */
static void bad_normalize_double(const void *x, size_t n, const void *k, void *y)
{
    const float *f = k;
    size_t i;
    for (i = 0; i < n; i++) {
        double v = sbn__bf16_to_float(((const uint16_t *)x)[i]);
        ((uint16_t *)y)[i] =
            sbn__float_to_bf16(sbn__narrow_round_to_odd((v - f[0]) * f[1] + f[2]));
    }
}

/* The float formula with the product rounded before the add: no FMA. */
static void bad_normalize_unfused(const void *x, size_t n, const void *k, void *y)
{
    const float *f = k;
    size_t i;
    for (i = 0; i < n; i++) {
        volatile float p = (((const float *)x)[i] - f[0]) * f[1];
        ((float *)y)[i] = p + f[2];
    }
}

/* Backward with its FMA split into a rounded product and an add. */
static void bad_backward_unfused(const void *dy, const void *x, size_t n, const void *k, void *gi)
{
    const float *f = k;
    size_t i;
    for (i = 0; i < n; i++) {
        volatile float p = (((const float *)x)[i] - f[0]) * f[1];
        ((float *)gi)[i] = (p + (((const float *)dy)[i] - f[2])) * f[3];
    }
}

static void bad_row_accum_ld(const void *x, int64_t xs, size_t rows, size_t cn, unsigned lane,
                             const double *shift, double *a, double *b, size_t ld, int fresh)
{
    sbn_f32_row_accum_ukernel__scalar(x, xs, rows, cn, lane, shift, a, b, ld, fresh);
    if (rows > 0 && ld > cn) b[lane * ld + cn] += 0.0;
}

static void bad_row_normalize_gap(const void *x, int64_t xs, size_t rows, size_t cn,
                                  const void *k, size_t ldk, void *y, int64_t ys)
{
    sbn_f64_row_normalize_ukernel__scalar(x, xs, rows, cn, k, ldk, y, ys);
    if (rows > 1 && ys > (int64_t)cn) ((double *)y)[cn] = 0.0;
}

static void test_checker_catches_faults(void)
{
    static const char *const k_what[] = {
        "accum f32: lane + 1",
        "accum f64: order within a lane",
        "normalize f32: writes y[n]",
        "backward f16: misses a tail element",
        "normalize bf16: double arithmetic, round to odd",
        "normalize f32: product rounded (no FMA)",
        "backward f32: product rounded (no FMA)",
        "accum f64: square rounded before the add",
        "bwd_accum f32: product rounded before the add",
        "row_accum f32: touches b[lane][cn]",
        "row_normalize f64: writes a row gap"};
    const int nfault = (int)(sizeof k_what / sizeof k_what[0]), nruns = 9;
    const sbn_kernels *s = sbn__kernels_for("scalar");
    sbn_kernels bad;
    impls im;
    int f, dt = 0, caught;
    CHECK(s != NULL);
    memset(&im, 0, sizeof im);
    im.ref = s, im.got[0] = &bad, im.ngot = 1;
    for (f = 0; f < nfault; f++) {
        bad = *s;
        switch (f) {
        case 0: bad.accum[dt = SBN_KD_F32] = bad_accum_lane; break;
        case 1: bad.accum[dt = SBN_KD_F64] = bad_accum_order; break;
        case 2: bad.normalize[dt = SBN_KD_F32] = bad_normalize_extra; break;
        case 3: bad.backward[dt = SBN_KD_F16] = bad_backward_tail; break;
        case 4: bad.normalize[dt = SBN_KD_BF16] = bad_normalize_double; break;
        case 5: bad.normalize[dt = SBN_KD_F32] = bad_normalize_unfused; break;
        case 6: bad.backward[dt = SBN_KD_F32] = bad_backward_unfused; break;
        case 7: bad.accum[dt = SBN_KD_F64] = bad_accum_unfused; break;
        case 8: bad.bwd_accum[dt = SBN_KD_F32] = bad_bwd_accum_unfused; break;
        case 9: bad.row_accum[dt = SBN_KD_F32] = bad_row_accum_ld; break;
        default: bad.row_normalize[dt = SBN_KD_F64] = bad_row_normalize_gap; break;
        }
        caught = f < nruns ? !check_runs(&im, dt) : !check_rows(&im, dt);
        printf("    planted fault %-48s %s\n", k_what[f], caught ? "caught" : "MISSED");
        CHECK_MSG(caught, "planted fault not caught: %s", k_what[f]);
    }
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_scalar_runs_vs_oracle),
        SBN_TEST_CASE(test_scalar_rows_vs_oracle),
        SBN_TEST_CASE(test_isa_runs_bitwise),
        SBN_TEST_CASE(test_isa_rows_bitwise),
        SBN_TEST_CASE(test_checker_catches_faults),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
