/*
 * test_short_runs.c - the short-run path of the channel reductions
 * (sbn__walk_short_runs: NCHW with small planes, a channel's runs handed to one runs
 * kernel in windows of the task's rows) gives the same bits as the plane path, one
 * kernel call per run (the maps' runs kernels are checked in test_kernels_runs.c). Each case runs a training step (forward, backward, eval;
 * support/train_pair.h) with the path off, then on with no pool and pools of 2 and 3
 * threads, and compares every output byte. Shapes: planes of 7x7, 5x5, 3x3 (shorter
 * than a group of lanes) and 14x14, R below and above the chunk size (chunks that
 * end inside a run), enough channels for several windows per task, f32, f64, f16,
 * bf16. Each case checks that it took the path.
 */
#include <stdio.h>

#include "harness/harness.h"
#include "ops/walk.h"
#include "support/support.h"
#include "support/train_pair.h"

static void run_case(const tsup_step_case *k)
{
    tsup_step_inputs in;
    tsup_step_outputs base;
    const sbn_tensor *t[1];
    sbn__walk w;
    int p;
    tsup_step_inputs_make(k, 11, &in);
    t[0] = &in.x.view;
    sbn__walk_init(&w, t, 1);
    CHECK_MSG(sbn__walk_short_runs(&w), "%s (%lld, %lld, %lld, %lld) does not take the path",
              sbn_dtype_name(k->dtype), (long long)k->shape[0], (long long)k->shape[1],
              (long long)k->shape[2], (long long)k->shape[3]);
    sbn__short_runs_set(0);
    tsup_step_run(k, &in, &base, NULL);
    sbn__short_runs_set(1);
    for (p = 0; p < 3; p++)
        if (!tsup_step_matches(k, &in, &base, in.pools[p]))
            sbn_test_fail(__FILE__, __LINE__, "%s (%lld, %lld, %lld, %lld), pool %d: differs",
                          sbn_dtype_name(k->dtype), (long long)k->shape[0], (long long)k->shape[1],
                          (long long)k->shape[2], (long long)k->shape[3], p);
    tsup_step_free(&base);
    tsup_step_inputs_free(&in);
}

static void short_runs_bits_equal_plane_path(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {90, 64, 7, 7}, TSUP_CHANNELS_FIRST},  /* R = 4410: 3 chunks, windows */
        {SBN_BF16, 4, {90, 64, 7, 7}, TSUP_CHANNELS_FIRST},
        {SBN_F64, 4, {70, 3, 5, 5}, TSUP_CHANNELS_FIRST},   /* 200-byte runs, R = 1750 */
        {SBN_F16, 4, {300, 5, 3, 3}, TSUP_CHANNELS_FIRST},  /* runs of 9 < a group of 8 + 8 */
        {SBN_BF16, 4, {33, 40, 14, 14}, TSUP_CHANNELS_FIRST}, /* 392-byte runs */
        {SBN_F32, 3, {200, 7, 17}, TSUP_CHANNELS_FIRST},   /* rank 3, odd runs */
        {SBN_F32, 4, {2, 512, 7, 7}, TSUP_CHANNELS_FIRST},  /* two runs a channel */
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(short_runs_bits_equal_plane_path),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
