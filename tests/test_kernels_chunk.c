/*
 * test_kernels_chunk.c - the row_chunk kernels of kernels.h (row_chunk, row_bwd_chunk: a
 * whole chunk of channels-last rows reduced from fresh lanes and folded in one call).
 * Their definition is scalar's row_accum (row_bwd_accum) from lane 0 with `fresh` set,
 * then fold_rows over min(n, 16) lanes, written out here on lanes of every channel.
 * Every table this machine has (and the tables beyond the cache, whose AVX-512 chunk
 * kernels prefetch their rows) is compared BITWISE with it for f64, f32, f16 and bf16:
 * rows 1..40, 47, 64, 100, 130, 200, 256 (one or several rows a lane, lanes never reached),
 * channels 0..19, 31-33, 63-65, 130 (every vector tail, the slices of the lane-buffer
 * variants), row strides equal to the channels and longer, dy's
 * differing from x's, x's, dy's or both a multiple of 1 KiB (the two-line groups of the
 * AVX-512 kernels), misaligned pointers. Values are finite with mixed signs and
 * magnitudes (2^-35..2^35, so that sums round), and -0.0 inputs beside zero shifts,
 * whose lanes must come out +0.0 (a lane starts from +0.0). Past cn, a[] and b[] hold a
 * signalling NaN that must stay. Two planted faults (rows summed in row order, not by
 * lanes; lanes started from their first row instead of +0.0) must be caught.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "support/finite_inputs.h"
#include "support/kernel_isas.h"

#define MAXCN 130
#define MAXROWS 256
#define GAP 3
#define SPAN (MAXROWS * (MAXCN + 2 * GAP) + 16) /* elements a call may reach */
#define SNAN_BITS 0x7FF4A5A5A5A5A5A5ull
#define TAIL 8 /* poisoned outputs past cn */

typedef struct call {
    int dt;
    size_t n, cn;
    int64_t xs, dys; /* row strides, elements */
    int off;         /* misalignment, elements */
} call;

static const size_t k_esize[SBN_KD_COUNT] = {8, 4, 2, 2};
static _Alignas(64) unsigned char g_x[(SPAN + 64) * 8], g_dy[(SPAN + 64) * 8];
static double g_la[SBN_LANES * MAXCN], g_lb[SBN_LANES * MAXCN];

static const void *at(const unsigned char *buf, const call *c)
{
    return buf + (size_t)c->off * k_esize[c->dt];
}

/* Finite values with every 8th element -0.0. */
static void fill(int dt, unsigned char *buf, size_t count, uint64_t seed)
{
    size_t i;
    tsup_fill_finite(dt, buf, count, &seed, -35, 70); /* sums that round */
    for (i = 0; i < count; i += 8) {
        switch (dt) {
        case SBN_KD_F64: ((double *)buf)[i] = -0.0; break;
        case SBN_KD_F32: ((float *)buf)[i] = -0.0f; break;
        default: ((uint16_t *)buf)[i] = 0x8000; break;
        }
    }
}

/* The definition, with scalar's kernels on lanes of all cn channels. */
static void chunk_by_lanes(const sbn_kernels *s, const call *c, int bwd, const double *shift,
                           double *a, double *b)
{
    size_t j, cn = c->cn;
    unsigned used = c->n < SBN_LANES ? (unsigned)c->n : SBN_LANES;
    if (cn == 0) return;
    if (bwd)
        s->row_bwd_accum[c->dt](at(g_dy, c), c->dys, at(g_x, c), c->xs, c->n, cn, 0, shift, g_la,
                                g_lb, cn, 1);
    else
        s->row_accum[c->dt](at(g_x, c), c->xs, c->n, cn, 0, shift, g_la, g_lb, cn, 1);
    s->fold_rows(g_la, g_lb, cn, cn, used);
    for (j = 0; j < cn; j++) a[j] = g_la[j], b[j] = g_lb[j];
}

static void poison(double *v, size_t count)
{
    uint64_t bits = SNAN_BITS;
    size_t i;
    for (i = 0; i < count; i++) memcpy(&v[i], &bits, sizeof bits);
}

static int g_report = 1; /* 0 while faults are planted: a mismatch is then expected */

/* One call of each chunk kernel of k against the definition; 1 when both match. */
static int check_call(const sbn_kernels *s, const sbn_kernels *k, const call *c)
{
    double a0[MAXCN + TAIL], b0[MAXCN + TAIL], a1[MAXCN + TAIL], b1[MAXCN + TAIL];
    double shift[MAXCN];
    size_t j, total = c->cn + TAIL;
    int bwd;
    for (j = 0; j < c->cn; j++) shift[j] = j % 3 == 0 ? 0.0 : 0.375 * (double)j - 5.0;
    for (bwd = 0; bwd < 2; bwd++) {
        poison(a0, total), poison(b0, total), poison(a1, total), poison(b1, total);
        chunk_by_lanes(s, c, bwd, shift, a0, b0);
        if (bwd)
            k->row_bwd_chunk[c->dt](at(g_dy, c), c->dys, at(g_x, c), c->xs, c->n, c->cn, shift,
                                    a1, b1);
        else
            k->row_chunk[c->dt](at(g_x, c), c->xs, c->n, c->cn, shift, a1, b1);
        if (memcmp(a0, a1, total * sizeof(double)) != 0 ||
            memcmp(b0, b1, total * sizeof(double)) != 0) {
            if (g_report)
                sbn_test_fail(__FILE__, __LINE__,
                              "%s %s dt %d: n %zu cn %zu xs %lld dys %lld off %d", k->isa,
                              bwd ? "row_bwd_chunk" : "row_chunk", c->dt, c->n, c->cn,
                              (long long)c->xs, (long long)c->dys, c->off);
            return 0;
        }
    }
    return 1;
}

/* The row stride (elements) of the aliasing variants: the least multiple of 1 KiB that
 * holds cn elements, so that the rows fall into a few L1 sets (the AVX-512 kernels then
 * take groups of two lines, row_chunk_avx512.c). */
static int64_t aliasing_stride(int dt, size_t cn)
{
    int64_t bytes = ((int64_t)(cn * k_esize[dt]) + 1023) / 1024 * 1024;
    return (bytes < 1024 ? 1024 : bytes) / (int64_t)k_esize[dt];
}

/* Every geometry for one table; 1 when all match. */
static int check_table(const sbn_kernels *s, const sbn_kernels *k, int dt_only)
{
    static const size_t cns[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                 14, 15, 16, 17, 18, 19, 31, 32, 33, 63, 64, 65, 130};
    static const size_t more_rows[] = {47, 64, 100, 130, 200, 256};
    size_t ci, n;
    int dt, v, ok = 1;
    for (dt = 0; dt < SBN_KD_COUNT; dt++) {
        if (dt_only >= 0 && dt != dt_only) continue;
        fill(dt, g_x, sizeof g_x / k_esize[dt], 0x9E3779B97F4A7C15ull + (uint64_t)dt);
        fill(dt, g_dy, sizeof g_dy / k_esize[dt], 0xD1B54A32D192ED03ull + (uint64_t)dt);
        for (ci = 0; ci < sizeof cns / sizeof cns[0]; ci++)
            for (n = 1; n <= 40 + sizeof more_rows / sizeof more_rows[0]; n++)
                for (v = 0; v < 5; v++) {
                    call c;
                    int64_t alias = aliasing_stride(dt, cns[ci]), longest;
                    c.dt = dt, c.cn = cns[ci];
                    c.n = n <= 40 ? n : more_rows[n - 41];
                    c.off = (int)((n + ci) % 4);
                    c.xs = (int64_t)c.cn + (v == 1 || v == 3 ? GAP : 0);
                    c.dys = (int64_t)c.cn + (v == 1 ? 2 * GAP : v == 4 ? GAP : 0);
                    if (v >= 2 && v <= 4) { /* x's rows, dy's or both 1 KiB multiples apart */
                        if (v != 3) c.xs = alias;
                        if (v != 4) c.dys = alias;
                    }
                    longest = c.xs > c.dys ? c.xs : c.dys;
                    if ((((int64_t)c.n - 1) * longest + (int64_t)c.cn + c.off) *
                            (int64_t)k_esize[dt] > (int64_t)sizeof g_x)
                        continue; /* a long chunk of wide aliasing rows: past the buffers */
                    if (!check_call(s, k, &c)) {
                        ok = 0;
                        if (!g_report) return 0;
                    }
                }
    }
    return ok;
}

static void test_chunk_matches_lanes(void)
{
    const sbn_kernels *tables[2 * NISA];
    const sbn_kernels *scalar = sbn__kernels_for("scalar");
    int t, nt = isas(tables), n = nt;
    CHECK(scalar != NULL);
    if (scalar == NULL) return;
    for (t = 0; t < nt; t++) { /* and the tables beyond the cache, where they differ */
        const sbn_kernels *st = sbn__kernels_streaming_for(tables[t]->isa);
        if (st != NULL && (st->row_chunk[SBN_KD_F32] != tables[t]->row_chunk[SBN_KD_F32] ||
                           st->row_bwd_chunk[SBN_KD_F32] != tables[t]->row_bwd_chunk[SBN_KD_F32]))
            tables[n++] = st;
    }
    for (t = 0; t < n; t++) CHECK_MSG(check_table(scalar, tables[t], -1), "%s", tables[t]->isa);
}

/* ---- planted faults: the checker must see each ---- */

static void bad_chunk_row_order(const void *x, int64_t xs, size_t n, size_t cn,
                                const double *shift, double *a, double *b)
{
    size_t r, j;
    for (j = 0; j < cn; j++) { /* every row into one sum, in row order */
        double sa = 0.0, sb = 0.0;
        for (r = 0; r < n; r++) {
            double d = (double)((const float *)x)[(int64_t)r * xs + (int64_t)j] - shift[j];
            sa += d;
            sb = fma(d, d, sb);
        }
        a[j] = sa, b[j] = sb;
    }
}

/* The fold of lanes [0, used), additions with lanes never reached skipped. */
static double fold_used(double *lane, unsigned used)
{
    unsigned h, k;
    for (h = SBN_LANES / 2; h >= 1; h /= 2)
        for (k = 0; k < h; k++)
            if (k + h < used) lane[k] = lane[k] + lane[k + h];
    return lane[0];
}

static void bad_chunk_first_row(const void *dy, int64_t dys, const void *x, int64_t xs, size_t n,
                                size_t cn, const double *center, double *a, double *b)
{
    size_t r, j, l;
    for (j = 0; j < cn; j++) { /* each lane starts from its first term, not from +0.0 */
        double la[SBN_LANES] = {0}, lb[SBN_LANES] = {0};
        for (r = 0; r < n; r++) {
            double g = (double)((const float *)dy)[(int64_t)r * dys + (int64_t)j];
            double xc = (double)((const float *)x)[(int64_t)r * xs + (int64_t)j] - center[j];
            l = r % SBN_LANES;
            la[l] = r < SBN_LANES ? g : la[l] + g;
            lb[l] = r < SBN_LANES ? g * xc : fma(g, xc, lb[l]);
        }
        l = n < SBN_LANES ? n : SBN_LANES;
        a[j] = fold_used(la, (unsigned)l), b[j] = fold_used(lb, (unsigned)l);
    }
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
        if (fault == 0) bad.row_chunk[SBN_KD_F32] = bad_chunk_row_order;
        else bad.row_bwd_chunk[SBN_KD_F32] = bad_chunk_first_row;
        g_report = 0;
        CHECK_MSG(!check_table(scalar, &bad, SBN_KD_F32), "planted fault %d not caught", fault);
        g_report = 1;
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_chunk_matches_lanes),
    SBN_TEST_CASE(test_checker_catches_faults),
};

SBN_TEST_MAIN(k_cases)
