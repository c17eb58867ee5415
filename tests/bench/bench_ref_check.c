/*
 * bench_ref_check.c - the benchmark's reference kernels (bench/bench_ref.c and, for bf16
 * and fp16, bench/bench_ref_half.c) compute batch norm: a timing peer that wrote wrong
 * or partial outputs would make every "% of ref" a lie. For each mode (fwd-train, eval,
 * bwd), layout (NCHW, NHWC, 2-D (N, C)) and a team of 1 and 3 threads, on shapes whose
 * planes and rows leave vector tails:
 *   - fp32: y / dx within 1e-4 (relative to |value| + 1) of a double-precision oracle
 *     (the reference's statistics are float sums);
 *   - bf16 and fp16 on the same (representable) inputs: within one rounding of the fp32
 *     reference's outputs (2^-8 and 2^-11 of |value|, plus 1e-5 for the float sums' order).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench.h"
#include "harness/harness.h"
#include "support/support.h"

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t to_half(sbn_dtype dt, float v)
{
    return dt == SBN_BF16 ? to_bf16(v) : sbn_float_to_f16(v);
}

static float from_half(sbn_dtype dt, uint16_t h)
{
    return dt == SBN_BF16 ? from_bf16(h) : sbn_f16_to_float(h);
}

typedef struct problem_bufs {
    bench_problem p;
    float vec[10 * 64];
} problem_bufs;

/* A problem of shape dims (rank 2 or 4) in dtype dt, inputs from xs / dys (fp32 values
 * representable in every dtype checked), per-channel vectors as bench_ops sets them. */
static void make(problem_bufs *b, const int64_t *dims, int rank, int channels_last, sbn_dtype dt,
                 const float *xs, const float *dys, int threads)
{
    bench_problem *p = &b->p;
    int64_t n, i, c;
    size_t es = sbn_dtype_size(dt);
    memset(b, 0, sizeof *b);
    p->rank = rank;
    p->n = dims[0];
    p->c = dims[1];
    p->h = rank == 4 ? dims[2] : 1;
    p->w = rank == 4 ? dims[3] : 1;
    p->channels_last = channels_last;
    p->dtype = dt;
    p->threads = threads;
    p->eps = 1e-5;
    n = bench_numel(p);
    p->x = calloc((size_t)n, es);
    p->y = calloc((size_t)n, es);
    p->dy = calloc((size_t)n, es);
    p->dx = calloc((size_t)n, es);
    c = p->c;
    p->weight = b->vec;
    p->bias = b->vec + c;
    p->run_mean = b->vec + 2 * c;
    p->run_var = b->vec + 3 * c;
    p->save_mean = b->vec + 4 * c;
    p->save_invstd = b->vec + 5 * c;
    p->batch_var = b->vec + 6 * c;
    p->grad_weight = b->vec + 7 * c;
    p->grad_bias = b->vec + 8 * c;
    for (i = 0; i < c; i++) {
        p->weight[i] = 1.0f + 0.25f * (float)(i % 3);
        p->bias[i] = 0.125f * (float)(i % 4) - 0.25f;
        p->run_mean[i] = 0.5f;
        p->run_var[i] = 1.5f;
        p->save_mean[i] = 0.375f + 0.0625f * (float)(i % 5);
        p->save_invstd[i] = 1.25f;
    }
    for (i = 0; i < n; i++) {
        if (dt == SBN_F32) {
            ((float *)p->x)[i] = xs[i];
            ((float *)p->dy)[i] = dys[i];
        } else {
            ((uint16_t *)p->x)[i] = to_half(dt, xs[i]);
            ((uint16_t *)p->dy)[i] = to_half(dt, dys[i]);
        }
    }
}

static void release(problem_bufs *b)
{
    free(b->p.x);
    free(b->p.y);
    free(b->p.dy);
    free(b->p.dx);
}

/* Element i of the mode's output as a float. */
static float out_at(const bench_problem *p, bench_mode mode, int64_t i)
{
    const void *o = mode == BENCH_BWD ? p->dx : p->y;
    if (p->dtype == SBN_F32) return ((const float *)o)[i];
    return from_half(p->dtype, ((const uint16_t *)o)[i]);
}

/* The channel of element i in the problem's memory order. */
static int64_t channel_of(const bench_problem *p, int64_t i)
{
    if (p->rank == 2 || p->channels_last) return i % p->c;
    return (i / (p->h * p->w)) % p->c;
}

/* The double-precision batch norm of the fp32 problem: out[i] for every element. */
static void oracle(const bench_problem *p, bench_mode mode, double *out)
{
    int64_t n = bench_numel(p), per = n / p->c, i, c;
    const float *x = p->x, *dy = p->dy;
    double *s0 = calloc((size_t)p->c, sizeof *s0), *s1 = calloc((size_t)p->c, sizeof *s1);
    for (i = 0; i < n; i++) {
        c = channel_of(p, i);
        s0[c] += mode == BENCH_BWD ? dy[i] : x[i];
        s1[c] += mode == BENCH_BWD ? (double)dy[i] * ((double)x[i] - p->save_mean[c])
                                   : (double)x[i] * x[i];
    }
    for (i = 0; i < n; i++) {
        c = channel_of(p, i);
        if (mode == BENCH_EVAL) {
            out[i] = ((double)x[i] - p->run_mean[c]) / sqrt((double)p->run_var[c] + p->eps) *
                         p->weight[c] + p->bias[c];
        } else if (mode == BENCH_FWD) {
            double mean = s0[c] / (double)per, var = s1[c] / (double)per - mean * mean;
            out[i] = ((double)x[i] - mean) / sqrt(var + p->eps) * p->weight[c] + p->bias[c];
        } else {
            double inv = p->save_invstd[c], xh = ((double)x[i] - p->save_mean[c]) * inv;
            out[i] = p->weight[c] * inv *
                     (dy[i] - s0[c] / (double)per - xh * inv * s1[c] / (double)per);
        }
    }
    free(s0);
    free(s1);
}

static void check_shape(const int64_t *dims, int rank, int channels_last)
{
    static const sbn_dtype halves[2] = {SBN_BF16, SBN_F16};
    static const char *const names[3] = {"fwd-train", "bwd", "eval"};
    int64_t n = dims[0] * dims[1] * (rank == 4 ? dims[2] * dims[3] : 1), i;
    float *xs = malloc((size_t)n * sizeof *xs), *dys = malloc((size_t)n * sizeof *dys);
    double *want = malloc((size_t)n * sizeof *want);
    int mode, threads, h;
    for (i = 0; i < n; i++) { /* values exact in bf16 and fp16: 8 significant bits or fewer */
        xs[i] = (float)((i * 37) % 97) / 32.0f - 1.0f;
        dys[i] = (float)((i * 53) % 89) / 64.0f - 0.5f;
    }
    for (mode = 0; mode < 3; mode++)
        for (threads = 1; threads <= 3; threads += 2) {
            problem_bufs f;
            ref_team *team = ref_team_create(threads, dims[1]);
            CHECK(team != NULL);
            if (team == NULL) break;
            make(&f, dims, rank, channels_last, SBN_F32, xs, dys, threads);
            ref_run(team, &f.p, (bench_mode)mode);
            oracle(&f.p, (bench_mode)mode, want);
            for (i = 0; i < n; i++) {
                double got = out_at(&f.p, (bench_mode)mode, i);
                CHECK_MSG(fabs(got - want[i]) <= 1e-4 * (fabs(want[i]) + 1.0),
                          "f32 %s %s T%d element %lld: %.9g, oracle %.9g", names[mode],
                          channels_last ? "cl" : "cf", threads, (long long)i, got, want[i]);
                if (sbn_test_failures()) break;
            }
            for (h = 0; h < 2; h++) {
                problem_bufs b;
                double u = tsup_unit_roundoff(halves[h]);
                make(&b, dims, rank, channels_last, halves[h], xs, dys, threads);
                ref_run(team, &b.p, (bench_mode)mode);
                for (i = 0; i < n && !sbn_test_failures(); i++) {
                    double a = out_at(&f.p, (bench_mode)mode, i);
                    double got = out_at(&b.p, (bench_mode)mode, i);
                    CHECK_MSG(fabs(got - a) <= u * fabs(a) + 1e-5 * (1.0 + fabs(a)),
                              "%s %s %s T%d element %lld: %.9g, fp32 reference %.9g",
                              sbn_dtype_name(halves[h]), names[mode], channels_last ? "cl" : "cf",
                              threads, (long long)i, got, a);
                }
                release(&b);
            }
            release(&f);
            ref_team_destroy(team);
        }
    free(xs);
    free(dys);
    free(want);
}

/* 5x7 planes and 37 channels: every vector loop leaves a tail, rows go 4 at a time and 1. */
static void planes_nchw(void)
{
    static const int64_t d[4] = {3, 37, 5, 7};
    check_shape(d, 4, 0);
}

static void rows_nhwc(void)
{
    static const int64_t d[4] = {3, 37, 5, 7};
    check_shape(d, 4, 1);
}

/* Planes of 7x7 (three sixteen-wide vectors and one element) and 64 channels. */
static void short_planes(void)
{
    static const int64_t d[4] = {2, 64, 7, 7};
    check_shape(d, 4, 0);
}

static void two_d(void)
{
    static const int64_t d[2] = {23, 19};
    check_shape(d, 2, 0);
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(planes_nchw),
    SBN_TEST_CASE(rows_nhwc),
    SBN_TEST_CASE(short_planes),
    SBN_TEST_CASE(two_d),
};

SBN_TEST_MAIN(cases)
