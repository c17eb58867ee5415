/*
 * test_one_pass.c - the one-pass schedule of batch_norm and batch_norm_backward
 * (src/ops/one_pass.c) gives the same bits as the two-pass one. Each case runs
 * training forward and backward with the schedule off (budget 0), then with budgets
 * that cut the channels into blocks of 1, 2, 3 ... channels, with no pool and with
 * pools of 2 and 3 threads, and compares every output byte (support/train_pair.h:
 * y, save_mean, save_invstd, running_mean, running_var, grad_input, grad_weight,
 * grad_bias, and the eval y).
 * Shapes cover NCHW, channels-last, (N, C) and strided views, f32/f64/f16/bf16,
 * R below, at and above the chunk size. A case that never
 * took the one-pass path would prove nothing, so each checks that it did.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/machine.h"
#include "harness/harness.h"
#include "ops/plan.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/ops.h"

static void run_case(const tsup_step_case *k)
{
    int64_t r = tsup_numel(k->rank, k->shape) / k->shape[1];
    int64_t blocks[] = {1, 2, 3, 16, 64, 128}, es = (int64_t)sbn_dtype_size(k->dtype);
    tsup_step_inputs in;
    tsup_step_outputs base;
    int p, b, took = 0;
    tsup_step_inputs_make(k, 7, &in);
    sbn__one_pass_set_budget(0);
    tsup_step_run(k, &in, &base, NULL);
    for (p = 0; p < 3; p++) {
        for (b = 0; b < 6; b++) {
            sbn__one_pass_set_budget(blocks[b] * r * es * 2); /* backward reads dy and x */
            if (sbn__one_pass_block(&in.x.view, (size_t)es * 2, in.pools[p]) > 0) took++;
            if (!tsup_step_matches(k, &in, &base, in.pools[p]))
                sbn_test_fail(__FILE__, __LINE__, "%s %s R %lld: blocks of %lld, pool %d differ",
                              sbn_dtype_name(k->dtype), tsup_layout_name(k->layout), (long long)r,
                              (long long)blocks[b], p);
        }
    }
    sbn__one_pass_set_budget(-1);
    CHECK_MSG(took > 0, "the one-pass schedule never ran for this case");
    tsup_step_free(&base);
    tsup_step_inputs_free(&in);
}

static void one_pass_bits_equal_two_pass(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {3, 24, 5, 7}, TSUP_CHANNELS_FIRST},
        {SBN_F32, 4, {2, 12, 41, 53}, TSUP_CHANNELS_FIRST},  /* R = 4346: several chunks */
        {SBN_F64, 3, {4, 13, 512}, TSUP_CHANNELS_FIRST},     /* R = 2048: one chunk exactly */
        {SBN_F16, 4, {2, 16, 9, 9}, TSUP_CHANNELS_FIRST},
        {SBN_BF16, 4, {2, 16, 9, 9}, TSUP_STRIDED},
        {SBN_F32, 2, {1500, 256, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C): channel stride 1 */
        {SBN_F32, 4, {2, 256, 3, 3}, TSUP_CHANNELS_LAST},
        {SBN_BF16, 4, {2, 512, 4, 4}, TSUP_CHANNELS_LAST},
    };
    unsigned i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
        CHECK_MSG(sbn_test_failures() == 0, "case %u", i);
    }
}

/* With nothing set, the size rule (a budget of half the L2, channels-first only): inputs
 * within half the L3 read in pieces of 24 KiB or more, with an L2 of 2 MiB or more; or,
 * with 2
 * or more threads, inputs that fit the threads' budgets together, in pieces of any
 * length. The shapes: 8 channels of exactly the budget each (one channel a block), 4
 * L2s in all, as one piece per block and as 64; and 4 channels of half the budget each
 * in 64 pieces (2 budgets: the L2s of two threads hold them, one thread's does not). */
static void one_pass_size_rule(void)
{
    int64_t l2 = sbn__cache_bytes(2), l3 = sbn__cache_bytes(3);
    int64_t budget = l2 / 2, shape[3] = {1, 8, budget / 4};
    int64_t many[3] = {64, 8, budget / 4 / 64}; /* the same bytes in 64 pieces of budget/64 */
    int64_t team[3] = {64, 4, budget / 4 / 64 / 2};
    tsup_buf cf, cl, cf_many, cf_team;
    sbn_pool_t *two = NULL;
    if (getenv("SBN_ONE_PASS_BYTES") != NULL || l3 < 16 * budget) {
        printf("    SBN_ONE_PASS_BYTES set, or an L3 under 8 L2s: no size rule to check\n");
        return;
    }
    cf = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    cl = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_LAST, NULL);
    cf_many = tsup_make(SBN_F32, 3, many, TSUP_CHANNELS_FIRST, NULL);
    cf_team = tsup_make(SBN_F32, 3, team, TSUP_CHANNELS_FIRST, NULL);
    CHECK(sbn_pool_create(2, &two) == SBN_OK);
    sbn__one_pass_set_budget(-1);
    /* the L2 instead of the L3, with an L2 of 2 MiB or more, at any thread count */
    CHECK(sbn__one_pass_block(&cf.view, 4, two) == (l2 >= ((int64_t)2 << 20) ? 1 : 0));
    CHECK(sbn__one_pass_block(&cf.view, 4, NULL) == (l2 >= ((int64_t)2 << 20) ? 1 : 0));
    CHECK(sbn__one_pass_block(&cl.view, 4, two) == 0);  /* channels-last: two passes */
    if (budget / 64 < ((int64_t)24 << 10)) /* pieces under 24 KiB: two passes */
        CHECK(sbn__one_pass_block(&cf_many.view, 4, two) == 0);
    CHECK(sbn__one_pass_block(&cf_team.view, 4, two) == 1);   /* the two L2s hold it all */
    if (budget / 64 < ((int64_t)24 << 10))                    /* one L2 does not: pieces */
        CHECK(sbn__one_pass_block(&cf_team.view, 4, NULL) == 0);
    sbn_pool_destroy(two);
    tsup_free(&cf);
    tsup_free(&cl);
    tsup_free(&cf_many);
    tsup_free(&cf_team);
}

/* Budgets near INT64_MAX (the override is not bounded as SBN_ONE_PASS_BYTES is) on tensors
 * of one or two elements a channel: a block is then wider than any tensor, and its 2T
 * blocks must not wrap around to a small number, which turned the schedule on with a
 * block that overflowed the lanes' channel offsets (a crash). The block is capped at
 * C / 2T (or the schedule is off), and every output keeps the two-pass bits. */
static void one_pass_huge_budget(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {1, 32, 1, 1}, TSUP_CHANNELS_FIRST}, /* R = 1: 4 bytes a channel forward */
        {SBN_F16, 2, {2, 64, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C), R = 2 */
    };
    static const int64_t budgets[] = {INT64_MAX, INT64_MAX / 2 + 1, (int64_t)1 << 62};
    unsigned i, b;
    int p;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tsup_step_case *k = &cases[i];
        int64_t es = (int64_t)sbn_dtype_size(k->dtype);
        tsup_step_inputs in;
        tsup_step_outputs base;
        tsup_step_inputs_make(k, 11, &in);
        sbn__one_pass_set_budget(0);
        tsup_step_run(k, &in, &base, NULL);
        for (b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
            for (p = 0; p < 3; p++) {
                int64_t fwd, bwd, cap;
                sbn__one_pass_set_budget(budgets[b]);
                fwd = sbn__one_pass_block(&in.x.view, (size_t)es, in.pools[p]);
                bwd = sbn__one_pass_block(&in.x.view, (size_t)es * 2, in.pools[p]);
                cap = k->shape[1] / (2 * (int64_t)sbn_pool_threads(in.pools[p]));
                if (fwd < 0 || bwd < 0 || fwd > cap || bwd > cap)
                    sbn_test_fail(__FILE__, __LINE__, "case %u budget %lld pool %d: blocks of "
                                  "%lld / %lld channels, expected 0 to C / 2T = %lld", i,
                                  (long long)budgets[b], p, (long long)fwd, (long long)bwd,
                                  (long long)cap);
                else if (!tsup_step_matches(k, &in, &base, in.pools[p]))
                    sbn_test_fail(__FILE__, __LINE__, "case %u budget %lld pool %d differs", i,
                                  (long long)budgets[b], p);
            }
        sbn__one_pass_set_budget(-1);
        tsup_step_free(&base);
        tsup_step_inputs_free(&in);
        RETURN_IF_FAILED();
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(one_pass_bits_equal_two_pass),
    SBN_TEST_CASE(one_pass_size_rule),
    SBN_TEST_CASE(one_pass_huge_budget),
};

SBN_TEST_MAIN(k_cases)
