/*
 * train_pair.h - one batch norm step on a tensor, run twice under two settings of
 * the library and compared byte for byte: the schedule tests (test_one_pass.c,
 * test_stream_stores.c, test_short_runs.c, test_row_tiles.c) change how the ops run,
 * never what they give. A step is
 * training forward (y, save_mean, save_invstd, running_mean, running_var), training
 * backward (grad_input, grad_weight, grad_bias) and eval forward (y_eval).
 */
#ifndef SBN_TEST_TRAIN_PAIR_H
#define SBN_TEST_TRAIN_PAIR_H

#include "support/support.h"

/* A case: the dtype, rank, shape and layout of x, dy and the outputs. */
typedef struct tsup_step_case {
    sbn_dtype dtype;
    int rank;
    int64_t shape[4];
    tsup_layout layout;
} tsup_step_case;

/* x ~ N(3, 2), dy ~ N(0.5, 1) (seeded), and the pools to run with: none, 2 and 3 threads. */
typedef struct tsup_step_inputs {
    tsup_buf x, dy;
    sbn_pool_t *pools[3];
} tsup_step_inputs;

typedef struct tsup_step_outputs {
    tsup_buf y, gi, sm, si, rm, rv, gw, gb, ye;
} tsup_step_outputs;

void tsup_step_inputs_make(const tsup_step_case *k, uint64_t seed, tsup_step_inputs *in);
void tsup_step_inputs_free(tsup_step_inputs *in);
/* Runs the step on in's x and dy into fresh outputs. */
void tsup_step_run(const tsup_step_case *k, const tsup_step_inputs *in, tsup_step_outputs *o,
                   sbn_pool_t *pool);
/* 1 if every output of a and b holds the same bytes; else reports the first that
 * differs (by name) and returns 0. */
int tsup_step_same(const tsup_step_outputs *a, const tsup_step_outputs *b);
void tsup_step_free(tsup_step_outputs *o);
/* Runs the step on in's x and dy with pool and compares every output with base
 * (tsup_step_same); frees what it ran. 1 if all match. */
int tsup_step_matches(const tsup_step_case *k, const tsup_step_inputs *in,
                      const tsup_step_outputs *base, sbn_pool_t *pool);

/* A schedule setting of the library: -1 its default (by size), 0 off, 1 forced. */
typedef void (*tsup_setting_fn)(int mode);
/* Runs case k (inputs from seed) with setting(0) and no pool as the base, then with
 * setting(1) and setting(-1) on no pool and pools of 2 and 3 threads, each compared
 * byte for byte with the base; a difference fails the test, naming `what`, the case,
 * the mode and the pool. Leaves setting(-1). */
void tsup_step_check_setting(const tsup_step_case *k, uint64_t seed, tsup_setting_fn setting,
                             const char *what);

#endif /* SBN_TEST_TRAIN_PAIR_H */
