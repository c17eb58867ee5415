/*
 * test_kernels_planes.c - the planes kernels of kernels.h (planes_accum,
 * planes_bwd_accum: one run of each of cn channels that share its geometry, channel j's
 * at x + j * cs bytes, its accumulators at acc + 32 j). Their definition is one call of
 * the one-run kernel per channel (test_kernels_stream.c checks those); the vector
 * variants interleave the channels, which must not change any lane's order. Every
 * table this machine has (and the tables beyond the cache) is compared BITWISE with
 * scalar's one-run kernels called that way, for f64, f32, f16 and bf16: cn 0..9 and 13
 * (groups of four, a pair, a single), run lengths 0..33, 49, 100, 255, 784, every lane
 * 0..15, channel strides equal to the length (adjacent planes), longer (gaps) and
 * negative, dy's differing from x's, misaligned pointers. Values are finite (mixed
 * signs and magnitudes), accumulators start from distinct nonzero values, and the
 * accumulators of a channel past cn hold a signalling NaN that must stay untouched.
 * Two planted faults (every channel taking channel 0's shift; lanes restarted at 0 for
 * the channels after the first) must be caught.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/finite_inputs.h"
#include "support/kernel_isas.h"

#define MAXCN 13
#define MAXLEN 784
#define GAP 5
#define SPAN ((MAXCN + 1) * (MAXLEN + 2 * GAP + 8)) /* elements a call reaches either side */
#define ACC (2 * SBN_LANES)
#define SNAN_BITS 0x7FF4A5A5A5A5A5A5ull

typedef struct call {
    int dt;
    size_t cn, n;
    unsigned lane;
    int64_t cs, dcs; /* channel strides, elements */
    int off;         /* misalignment, elements */
} call;

static const size_t k_esize[SBN_KD_COUNT] = {8, 4, 2, 2};
static _Alignas(64) unsigned char g_x[(2 * SPAN + 64) * 8], g_dy[(2 * SPAN + 64) * 8];

/* Channel 0's run in a buffer: the middle, so negative strides stay inside. */
static const unsigned char *run0(const unsigned char *buf, const call *c)
{
    return buf + (size_t)(SPAN + c->off) * k_esize[c->dt];
}

/* Accumulators of cn + 1 channels: distinct nonzero starts, the last one poison. */
static void start_acc(const call *c, double *acc)
{
    size_t i;
    for (i = 0; i < c->cn * ACC; i++) acc[i] = 0.125 * (double)(i % 37) - 2.0;
    for (i = c->cn * ACC; i < (c->cn + 1) * ACC; i++) {
        uint64_t b = SNAN_BITS;
        memcpy(&acc[i], &b, sizeof b);
    }
}

/* The definition: one call of scalar's one-run kernel per channel. */
static void planes_by_run(const sbn_kernels *s, const call *c, int bwd, const double *shift,
                          double *acc)
{
    const unsigned char *x = run0(g_x, c), *dy = run0(g_dy, c);
    int64_t es = (int64_t)k_esize[c->dt];
    size_t j;
    for (j = 0; j < c->cn; j++) {
        const unsigned char *xj = x + (int64_t)j * c->cs * es;
        if (bwd)
            s->bwd_accum[c->dt](dy + (int64_t)j * c->dcs * es, xj, c->n, c->lane, shift[j],
                                acc + j * ACC);
        else
            s->accum[c->dt](xj, c->n, c->lane, shift[j], acc + j * ACC);
    }
}

static int g_report = 1; /* 0 while faults are planted: a mismatch is then expected */

/* One call of each planes kernel of k against the definition; 1 when both match. */
static int check_call(const sbn_kernels *s, const sbn_kernels *k, const call *c)
{
    double acc0[(MAXCN + 1) * ACC], acc1[(MAXCN + 1) * ACC], shift[MAXCN];
    int64_t es = (int64_t)k_esize[c->dt];
    size_t j;
    int bwd;
    for (j = 0; j < MAXCN; j++) shift[j] = 0.75 * (double)j - 3.5;
    for (bwd = 0; bwd < 2; bwd++) {
        start_acc(c, acc0);
        start_acc(c, acc1);
        planes_by_run(s, c, bwd, shift, acc0);
        if (bwd)
            k->planes_bwd_accum[c->dt](run0(g_dy, c), c->dcs * es, run0(g_x, c), c->cs * es, c->cn,
                                       c->n, c->lane, shift, acc1);
        else
            k->planes_accum[c->dt](run0(g_x, c), c->cs * es, c->cn, c->n, c->lane, shift, acc1);
        if (memcmp(acc0, acc1, (c->cn + 1) * ACC * sizeof(double)) != 0) {
            if (g_report)
                sbn_test_fail(__FILE__, __LINE__,
                              "%s %s dt %d: cn %zu n %zu lane %u cs %lld dcs %lld off %d", k->isa,
                              bwd ? "planes_bwd_accum" : "planes_accum", c->dt, c->cn, c->n,
                              c->lane, (long long)c->cs, (long long)c->dcs, c->off);
            return 0;
        }
    }
    return 1;
}

/* Every geometry for one table; 1 when all match. */
static int check_table(const sbn_kernels *s, const sbn_kernels *k, int dt_only)
{
    static const size_t cns[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13};
    static const size_t lens[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 49, 100, 255, 784};
    size_t ci, li;
    unsigned lane;
    int dt, v, ok = 1;
    for (dt = 0; dt < SBN_KD_COUNT; dt++) {
        if (dt_only >= 0 && dt != dt_only) continue;
        uint64_t sx = 0x9E3779B97F4A7C15ull + (uint64_t)dt;
        uint64_t sdy = 0xD1B54A32D192ED03ull + (uint64_t)dt;
        tsup_fill_finite(dt, g_x, sizeof g_x / k_esize[dt], &sx, -8, 13);
        tsup_fill_finite(dt, g_dy, sizeof g_dy / k_esize[dt], &sdy, -8, 13);
        for (ci = 0; ci < sizeof cns / sizeof cns[0]; ci++)
            for (li = 0; li < sizeof lens / sizeof lens[0]; li++)
                for (lane = 0; lane < SBN_LANES; lane++)
                    for (v = 0; v < 3; v++) {
                        call c;
                        int64_t n = (int64_t)lens[li];
                        c.dt = dt, c.cn = cns[ci], c.n = lens[li], c.lane = lane;
                        c.off = (int)((lane + ci) % 4);
                        c.cs = v == 0 ? n : v == 1 ? n + GAP : -(n + 3);
                        c.dcs = v == 1 ? n + 2 * GAP : c.cs;
                        if (!check_call(s, k, &c)) {
                            ok = 0;
                            if (!g_report) return 0;
                        }
                    }
    }
    return ok;
}

static void test_planes_match_runs(void)
{
    const sbn_kernels *tables[2 * NISA];
    const sbn_kernels *scalar = sbn__kernels_for("scalar");
    int t, nt = isas(tables), n = nt;
    CHECK(scalar != NULL);
    if (scalar == NULL) return;
    for (t = 0; t < nt; t++) { /* and the tables beyond the cache, where they differ */
        const sbn_kernels *st = sbn__kernels_streaming_for(tables[t]->isa);
        if (st != NULL && st->planes_accum[SBN_KD_F32] != tables[t]->planes_accum[SBN_KD_F32])
            tables[n++] = st;
    }
    for (t = 0; t < n; t++) CHECK_MSG(check_table(scalar, tables[t], -1), "%s", tables[t]->isa);
}

/* ---- planted faults: the checker must see each ---- */

static void bad_planes_shift(const void *x, int64_t cs, size_t cn, size_t n, unsigned lane,
                             const double *shift, double *acc)
{
    const sbn_kernels *s = sbn__kernels_for("scalar");
    size_t j;
    for (j = 0; j < cn; j++) /* channel 0's shift for every channel */
        s->accum[SBN_KD_F32]((const char *)x + (int64_t)j * cs, n, lane, shift[0], acc + j * ACC);
}

static void bad_planes_lane(const void *dy, int64_t dcs, const void *x, int64_t cs, size_t cn,
                            size_t n, unsigned lane, const double *center, double *acc)
{
    const sbn_kernels *s = sbn__kernels_for("scalar");
    size_t j;
    for (j = 0; j < cn; j++) /* lanes restarted at 0 after the first channel */
        s->bwd_accum[SBN_KD_F32]((const char *)dy + (int64_t)j * dcs,
                                 (const char *)x + (int64_t)j * cs, n, j == 0 ? lane : 0,
                                 center[j], acc + j * ACC);
}

static void test_checker_catches_faults(void)
{
    const sbn_kernels *scalar = sbn__kernels_for("scalar");
    sbn_kernels bad;
    int fault;
    CHECK(scalar != NULL);
    if (scalar == NULL) return;
    for (fault = 0; fault < 2; fault++) {
        bad = *scalar;
        if (fault == 0) bad.planes_accum[SBN_KD_F32] = bad_planes_shift;
        else bad.planes_bwd_accum[SBN_KD_F32] = bad_planes_lane;
        g_report = 0;
        CHECK_MSG(!check_table(scalar, &bad, SBN_KD_F32), "planted fault %d not caught", fault);
        g_report = 1;
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_planes_match_runs),
    SBN_TEST_CASE(test_checker_catches_faults),
};

SBN_TEST_MAIN(k_cases)
