/*
 * test_kernels_runs.c - the runs kernels of kernels.h (runs_accum, runs_bwd_accum:
 * several equal runs of one channel per call, the lanes running on from run to run;
 * runs_normalize, runs_backward: several runs, each with its own coefficients). Their
 * definition is one call of the one-run kernel per run: run i of a reduction starts at
 * lane (lane + i * len) % 16, run i of a map takes coefficients k[m * ldk + i];
 * test_kernels_stream.c checks the one-run kernels themselves. Every table this
 * machine has (and the streaming tables beyond the cache) is compared BITWISE with
 * scalar's one-run kernels called that way, for f64, f32, f16 and bf16: run lengths
 * 1..33, the plane sizes of ResNet (49, 196) and more, 1..40 runs, every lane 0..15,
 * run strides equal to the length (adjacent runs), longer (gaps, which must stay
 * untouched) and negative, misaligned pointers, maps also in place, ldk past the
 * runs. Values are finite (normal, around 1e4, wide magnitudes, subnormal, the last with
 * maps whose results are subnormal), so no NaN payload choice enters the compare; accumulators start nonzero and every byte of
 * them and of each output buffer is compared. Two planted faults (a lane restarted
 * per run, a map that takes run 0's coefficients for every run) must be caught.
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
#define TSUP_RNG_SEED 0x52554E53C0FFEE01ull
#include "support/ieee_formats.h"
#include "support/kernel_isas.h"
#include "support/stream_values.h"

#define MAXRUNS 40
#define MAXLEN 260
#define SPAN ((MAXRUNS + 1) * (2 * MAXLEN + 8)) /* elements a call may reach, either side */
#define BUF (2 * SPAN + 64)

typedef struct call {
    int dt, profile;
    size_t runs, len;
    unsigned lane;
    int64_t xs, dys, ys; /* run strides, elements */
    int off;             /* misalignment, elements */
} call;

static _Alignas(64) unsigned char g_x[BUF * 8], g_dy[BUF * 8];
static _Alignas(64) unsigned char g_y0[BUF * 8], g_y1[BUF * 8];

/* The address of run 0 in a buffer, so that runs 0..runs-1 stay inside whatever the
 * stride's sign. */
static unsigned char *base(unsigned char *buf, const call *c, int64_t s)
{
    int64_t first = SPAN + c->off;
    (void)s;
    return buf + first * k_fmt[c->dt].es;
}

static double value(const call *c)
{
    int dt = c->dt, mb = k_fmt[dt].mbits, emin = 2 - (1 << (k_fmt[dt].ebits - 1));
    switch (c->profile) {
    case 0: return normal();
    case 1: return 1e4 + 1e-2 * normal();
    case 2: /* wide magnitudes, finite in every type (fp16 tops out at 65504) */
        return random_sign(ldexp(0.5 + uniform(), dt == SBN_KD_F16 ? below(24) - 12 : below(60) - 30));
    default:
        return random_sign(below(4) ? ldexp(uniform(), emin - below(mb)) : ldexp(1 + uniform(), emin));
    }
}

/* The elements [lo, hi) of the buffers a call reaches (any of its strides), with 16
 * more either side. */
static void reach(const call *c, int64_t *lo, int64_t *hi)
{
    const int64_t s[3] = {c->xs, c->dys, c->ys};
    int64_t first = SPAN + c->off, end = (int64_t)(c->runs - 1);
    int i;
    *lo = first - 16;
    *hi = first + (int64_t)c->len + 16;
    for (i = 0; i < 3; i++) {
        if (end * s[i] < 0 && first + end * s[i] - 16 < *lo) *lo = first + end * s[i] - 16;
        if (end * s[i] > 0 && first + end * s[i] + (int64_t)c->len + 16 > *hi)
            *hi = first + end * s[i] + (int64_t)c->len + 16;
    }
}

static void fill(unsigned char *buf, const call *c)
{
    int64_t i, lo, hi;
    reach(c, &lo, &hi);
    for (i = lo; i < hi; i++) put_bits(c->dt, buf, i, narrow(c->dt, value(c)));
}

/* The definition: one call of scalar's one-run kernel per run. */
static void accum_by_run(const sbn_kernels *s, const call *c, int bwd, const void *dy,
                         const void *x, double shift, double *acc)
{
    size_t i, es = (size_t)k_fmt[c->dt].es;
    for (i = 0; i < c->runs; i++) {
        unsigned l = (unsigned)((c->lane + i * c->len) % SBN_LANES);
        const char *xi = (const char *)x + (int64_t)i * c->xs * (int64_t)es;
        if (bwd)
            s->bwd_accum[c->dt]((const char *)dy + (int64_t)i * c->dys * (int64_t)es, xi, c->len,
                                l, shift, acc);
        else
            s->accum[c->dt](xi, c->len, l, shift, acc);
    }
}

/* Run i's coefficients from the structure-of-arrays k (ld LDK), one-run calls. */
#define LDK (MAXRUNS + 3)
static void map_by_run(const sbn_kernels *s, const call *c, int bwd, const void *dy,
                       const void *x, const double *kd, const float *kf, void *y)
{
    size_t i, es = (size_t)k_fmt[c->dt].es;
    int m;
    for (i = 0; i < c->runs; i++) {
        const char *xi = (const char *)x + (int64_t)i * c->xs * (int64_t)es;
        char *yi = (char *)y + (int64_t)i * c->ys * (int64_t)es;
        double kc[4];
        float fc[4];
        const void *k = c->dt == SBN_KD_F64 ? (const void *)kc : (const void *)fc;
        for (m = 0; m < 4; m++) kc[m] = kd[m * LDK + (int)i], fc[m] = kf[m * LDK + (int)i];
        if (bwd)
            s->backward[c->dt]((const char *)dy + (int64_t)i * c->dys * (int64_t)es, xi, c->len,
                               k, yi);
        else
            s->normalize[c->dt](xi, c->len, k, yi);
    }
}

/* Each run's coefficients ([4][LDK]): double for fp64, sbn__map_coefs_float's floats
 * otherwise; the entries past the runs hold garbage the kernels must not use. With
 * subnormal inputs (profile 3) the mean and the constant term are 0, so that the maps'
 * results are subnormal floats too: the AVX512_BF16 conversion flushes those, and the
 * bf16 maps of that table must notice and map them again. */
static void coefs(const call *c, int bwd, double *kd, float *kf)
{
    int i, m, tiny = c->profile == 3;
    for (i = 0; i < LDK; i++) {
        double k[4], mean = c->profile == 1 ? 1e4 : tiny ? 0.0 : normal();
        float f[4];
        k[0] = bwd ? (tiny ? 0.0 : normal()) : mean;
        k[1] = bwd ? mean : 0.5 + uniform();
        k[2] = bwd ? 0.1 * normal() : tiny ? 0.0 : normal();
        k[3] = 0.5 + uniform();
        (void)sbn__map_coefs_float(bwd, k, f);
        for (m = 0; m < 4; m++) kd[m * LDK + i] = k[m], kf[m * LDK + i] = f[m];
    }
}

static int g_report = 1; /* 0 while faults are planted: a mismatch is then expected */

static int fail(const sbn_kernels *k, const call *c, const char *what, int inplace)
{
    if (!g_report) return 0;
    sbn_test_fail(__FILE__, __LINE__, "%s %s %s: runs %zu len %zu lane %u xs %lld dys %lld ys %lld off %d profile %d%s",
              k->isa, k_fmt[c->dt].name, what, c->runs, c->len, c->lane, (long long)c->xs,
              (long long)c->dys, (long long)c->ys, c->off, c->profile, inplace ? " in place" : "");
    return 0;
}

/* One call of each runs kernel of k against the definition; 1 when all match. */
static int check_call(const sbn_kernels *s, const sbn_kernels *k, const call *c)
{
    double acc0[2 * SBN_LANES], acc1[2 * SBN_LANES], kd[4 * LDK];
    float kf[4 * LDK];
    const void *kc;
    unsigned char *x = base(g_x, c, c->xs), *dy = base(g_dy, c, c->dys);
    int bwd, l, inplace;
    double shift = c->profile == 1 ? 1e4 : 0.25 * normal();
    for (bwd = 0; bwd < 2; bwd++) {
        for (l = 0; l < 2 * SBN_LANES; l++) acc0[l] = acc1[l] = 0.5 * l - 3.0;
        accum_by_run(s, c, bwd, dy, x, shift, acc0);
        if (bwd)
            k->runs_bwd_accum[c->dt](dy, c->dys, x, c->xs, c->runs, c->len, c->lane, shift, acc1);
        else
            k->runs_accum[c->dt](x, c->xs, c->runs, c->len, c->lane, shift, acc1);
        if (memcmp(acc0, acc1, sizeof acc0) != 0)
            return fail(k, c, bwd ? "runs_bwd_accum" : "runs_accum", 0);
        coefs(c, bwd, kd, kf);
        kc = c->dt == SBN_KD_F64 ? (const void *)kd : (const void *)kf;
        for (inplace = 0; inplace < 2; inplace++) {
            call cc = *c;
            unsigned char *y0, *y1;
            int64_t lo, hi, es = k_fmt[c->dt].es;
            if (inplace) cc.ys = c->xs;
            reach(c, &lo, &hi);
            memcpy(g_y0 + lo * es, g_x + lo * es, (size_t)((hi - lo) * es));
            memcpy(g_y1 + lo * es, g_x + lo * es, (size_t)((hi - lo) * es));
            y0 = base(g_y0, &cc, cc.ys);
            y1 = base(g_y1, &cc, cc.ys);
            /* in place: x is the output buffer itself, which starts as a copy of g_x */
            map_by_run(s, &cc, bwd, dy, inplace ? (const void *)y0 : x, kd, kf, y0);
            if (bwd)
                k->runs_backward[c->dt](dy, cc.dys, inplace ? (const void *)y1 : x, cc.xs, cc.runs,
                                        cc.len, kc, LDK, y1, cc.ys);
            else
                k->runs_normalize[c->dt](inplace ? (const void *)y1 : x, cc.xs, cc.runs, cc.len,
                                         kc, LDK, y1, cc.ys);
            if (memcmp(g_y0 + lo * es, g_y1 + lo * es, (size_t)((hi - lo) * es)) != 0)
                return fail(k, &cc, bwd ? "runs_backward" : "runs_normalize", inplace);
        }
    }
    return 1;
}

static const size_t k_lens[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 40, 49, 64, 65, 100, 196, 257};
static const size_t k_runs[] = {1, 2, 3, 4, 5, 8, 17, 32, 40};

/* Stride variant v for runs of len: adjacent, gaps, negative. */
static int64_t stride_for(size_t len, int v)
{
    switch (v) {
    case 0: return (int64_t)len;
    case 1: return (int64_t)len + 1 + (int64_t)below(7);
    case 2: return 2 * (int64_t)len + 3;
    default: return -((int64_t)len + (int64_t)below(5));
    }
}

/* Every (len, runs, lane) for the tables in ks against scalar; dt_only < 0: all types. */
static int check_tables(const sbn_kernels *s, const sbn_kernels *const *ks, int nk, int dt_only)
{
    size_t a, b;
    int dt, i, ok = 1;
    for (dt = 0; dt < SBN_KD_COUNT; dt++) {
        call c;
        if (dt_only >= 0 && dt != dt_only) continue;
        memset(&c, 0, sizeof c);
        c.dt = dt;
        for (a = 0; a < sizeof k_lens / sizeof k_lens[0]; a++)
            for (b = 0; b < sizeof k_runs / sizeof k_runs[0]; b++)
                for (c.lane = 0; c.lane < SBN_LANES; c.lane++) {
                    int v = (int)below(4);
                    c.len = k_lens[a];
                    c.runs = k_runs[b];
                    c.profile = (int)below(4);
                    c.xs = stride_for(c.len, v);
                    c.dys = stride_for(c.len, (int)below(4));
                    c.ys = stride_for(c.len, below(2) ? v : (int)below(4));
                    c.off = (int)below(4);
                    fill(g_x, &c);
                    fill(g_dy, &c);
                    for (i = 0; i < nk; i++) {
                        ok &= check_call(s, ks[i], &c);
                        if (!ok) return 0;
                    }
                }
    }
    return ok;
}

static void test_runs_kernels_bitwise(void)
{
    const sbn_kernels *ks[NVARIANT];
    int n = map_variants(ks), i;
    CHECK(n >= 1 && strcmp(ks[0]->isa, "scalar") == 0);
    for (i = 0; i < n; i++) printf("    %s runs kernels against scalar one-run calls\n", ks[i]->isa);
    (void)check_tables(ks[0], ks, n, -1);
}

/* ---- planted faults ---- */

static void bad_runs_accum_lane(const void *x, int64_t xs, size_t runs, size_t len,
                                unsigned lane, double shift, double *acc)
{
    size_t i;
    (void)lane;
    for (i = 0; i < runs; i++)
        sbn__kernels_for("scalar")->accum[SBN_KD_F32]((const float *)x + (int64_t)i * xs, len, 0,
                                                      shift, acc);
}

static void bad_runs_normalize_first(const void *x, int64_t xs, size_t runs, size_t len,
                                     const void *k, size_t ldk, void *y, int64_t ys)
{
    size_t i;
    (void)ldk;
    for (i = 0; i < runs; i++) /* run 0's coefficients for every run */
        sbn__kernels_for("scalar")->normalize[SBN_KD_BF16]((const uint16_t *)x + (int64_t)i * xs,
                                                           len, k,
                                                           (uint16_t *)y + (int64_t)i * ys);
}

static void test_checker_catches_faults(void)
{
    const sbn_kernels *s = sbn__kernels_for("scalar");
    sbn_kernels bad;
    const sbn_kernels *ks[1];
    int caught;
    CHECK(s != NULL);
    RETURN_IF_FAILED();
    g_report = 0;
    ks[0] = &bad;
    bad = *s;
    bad.runs_accum[SBN_KD_F32] = bad_runs_accum_lane;
    caught = !check_tables(s, ks, 1, SBN_KD_F32);
    printf("    planted fault runs_accum f32: lane restarted per run   %s\n", caught ? "caught" : "MISSED");
    bad = *s;
    bad.runs_normalize[SBN_KD_BF16] = bad_runs_normalize_first;
    caught &= !check_tables(s, ks, 1, SBN_KD_BF16);
    printf("    planted fault runs_normalize bf16: run 0's coefficients %s\n", caught ? "caught" : "MISSED");
    g_report = 1;
    CHECK_MSG(caught, "a planted fault was not caught");
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_runs_kernels_bitwise),
        SBN_TEST_CASE(test_checker_catches_faults),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
