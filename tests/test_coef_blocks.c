/*
 * test_coef_blocks.c - row maps that compute their coefficients inside their own tasks,
 * a block of channels at a time (channel_map.c, sbn__plan_coef_blocks), give the bits of
 * the coefficients computed first in a loop of their own. Each training step
 * (support/train_pair.h: forward, backward, eval) runs with the blocks off, then forced
 * (blocks of two cache lines, many tasks) and by size, with no pool and pools of 2 and
 * 3 threads, and every output byte is compared: (N, C) with few rows and C not a
 * multiple of a block, channels-last with few rows, f32, bf16, f16 and f64. Then
 * sbn_elemt and sbn_backward_elemt with the coefficients of one channel in the last
 * block out of float's range, on data whose float and double forms differ: the blocks
 * mapped in float before it must be mapped again in double, the bits of the map with
 * the blocks off (the double form over the whole tensor); in place too, where the map
 * cannot run twice and so takes no blocks.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness/harness.h"
#include "ops/plan.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/ops.h"

static void coef_blocks_bits_equal_one_loop(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 2, {2, 1000, 0, 0}, TSUP_CHANNELS_FIRST},  /* 31 blocks and a short one */
        {SBN_BF16, 2, {5, 777, 0, 0}, TSUP_CHANNELS_FIRST},  /* a short last block */
        {SBN_F16, 2, {1, 300, 0, 0}, TSUP_CHANNELS_FIRST},   /* one sample a channel */
        {SBN_F64, 2, {3, 250, 0, 0}, TSUP_CHANNELS_FIRST},   /* double coefficients */
        {SBN_F32, 4, {2, 200, 2, 3}, TSUP_CHANNELS_LAST},    /* 12 rows */
        {SBN_F32, 2, {3, 20000, 0, 0}, TSUP_CHANNELS_FIRST}, /* blocks by size */
        {SBN_F32, 2, {40, 5000, 0, 0}, TSUP_CHANNELS_FIRST}, /* by size: no blocks */
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tsup_step_check_setting(&cases[i], 31, sbn__coef_blocks_set, "blocks");
}

enum { N_ROWS = 4, N_CHANNELS = 300 };

/* x (and dy) of N_ROWS x N_CHANNELS fp32 far from zero, so that the float form's
 * roundings (x - m, then a fused multiply-add) differ from the double form's single
 * rounding in some elements; per-channel vectors with channel N_CHANNELS - 1's weight
 * at 1e300 (f64), whose multiplier is beyond float's range. */
typedef struct elemt_inputs {
    tsup_buf x, dy, mean, invstd, weight, bias, sum_dy, sum_dy_xmu;
} elemt_inputs;

static void elemt_inputs_make(elemt_inputs *in)
{
    int64_t shape[2] = {N_ROWS, N_CHANNELS}, c;
    double v[N_ROWS * N_CHANNELS], g[N_ROWS * N_CHANNELS], p[6][N_CHANNELS];
    tsup_rng rng = tsup_rng_seed(77);
    tsup_fill_normal(&rng, v, N_ROWS * N_CHANNELS, 1000.0, 3.0, SBN_F32);
    tsup_fill_normal(&rng, g, N_ROWS * N_CHANNELS, 0.5, 1.0, SBN_F32);
    for (c = 0; c < N_CHANNELS; c++) {
        p[0][c] = tsup_round(SBN_F32, 1000.0 + 0.37 * (double)(c % 5));
        p[1][c] = tsup_round(SBN_F32, 0.3 + 0.01 * (double)(c % 7));
        p[2][c] = c == N_CHANNELS - 1 ? 1e300 : 1.0 + 0.1 * (double)(c % 3);
        p[3][c] = tsup_round(SBN_F32, 0.25 * (double)(c % 4) - 0.5);
        p[4][c] = tsup_round(SBN_F32, 3.0 + 0.5 * (double)(c % 3));
        p[5][c] = tsup_round(SBN_F32, -7.0 + (double)(c % 11));
    }
    in->x = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, v);
    in->dy = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, g);
    in->mean = tsup_make_1d(SBN_F32, N_CHANNELS, p[0]);
    in->invstd = tsup_make_1d(SBN_F32, N_CHANNELS, p[1]);
    in->weight = tsup_make_1d(SBN_F64, N_CHANNELS, p[2]);
    in->bias = tsup_make_1d(SBN_F32, N_CHANNELS, p[3]);
    in->sum_dy = tsup_make_1d(SBN_F32, N_CHANNELS, p[4]);
    in->sum_dy_xmu = tsup_make_1d(SBN_F32, N_CHANNELS, p[5]);
}

static void elemt_inputs_free(elemt_inputs *in)
{
    tsup_buf *b[] = {&in->x, &in->dy, &in->mean, &in->invstd,
                     &in->weight, &in->bias, &in->sum_dy, &in->sum_dy_xmu};
    size_t i;
    for (i = 0; i < sizeof b / sizeof b[0]; i++) tsup_free(b[i]);
}

/* elemt (backward 0) or backward_elemt (1) of `in` into out (a copy of x or dy first
 * when in_place, the map then writing over it), with pool. */
static void run_elemt(const elemt_inputs *in, int backward, int in_place, sbn_pool_t *pool,
                      double *out)
{
    int64_t shape[2] = {N_ROWS, N_CHANNELS};
    double start[N_ROWS * N_CHANNELS];
    const tsup_buf *src = backward ? &in->dy : &in->x;
    tsup_buf y;
    size_t bytes;
    void *ws;
    tsup_read(&src->view, start);
    y = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, in_place ? start : NULL);
    if (backward) {
        sbn_backward_elemt_workspace_size(&in->x.view, &bytes);
        ws = malloc(bytes);
        CHECK_OK(sbn_backward_elemt(in_place ? &y.view : &in->dy.view, &in->x.view,
                                    &in->mean.view, &in->invstd.view, &in->weight.view,
                                    &in->sum_dy.view, &in->sum_dy_xmu.view, 64, &y.view, ws,
                                    bytes, pool));
    } else {
        sbn_elemt_workspace_size(&in->x.view, &bytes);
        ws = malloc(bytes);
        CHECK_OK(sbn_elemt(in_place ? &y.view : &in->x.view, &in->mean.view, &in->invstd.view,
                           &in->weight.view, &in->bias.view, &y.view, ws, bytes, pool));
    }
    tsup_read(&y.view, out);
    free(ws);
    tsup_free(&y);
}

static void out_of_range_maps_again_in_double(void)
{
    elemt_inputs in;
    sbn_pool_t *pool = NULL;
    double base[N_ROWS * N_CHANNELS], got[N_ROWS * N_CHANNELS];
    int backward, in_place, p;
    elemt_inputs_make(&in);
    CHECK_OK(sbn_pool_create(3, &pool));
    for (backward = 0; backward < 2; backward++)
        for (in_place = 0; in_place < 2; in_place++) {
            sbn__coef_blocks_set(0);
            run_elemt(&in, backward, in_place, NULL, base);
            sbn__coef_blocks_set(1);
            for (p = 0; p < 2; p++) {
                run_elemt(&in, backward, in_place, p ? pool : NULL, got);
                CHECK_MSG(tsup_same_bytes("y", got, base, sizeof got),
                          "%s, in place %d, pool %d: blocks change the bits",
                          backward ? "backward_elemt" : "elemt", in_place, p);
            }
        }
    sbn__coef_blocks_set(-1);
    sbn_pool_destroy(pool);
    elemt_inputs_free(&in);
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(coef_blocks_bits_equal_one_loop),
        SBN_TEST_CASE(out_of_range_maps_again_in_double),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
