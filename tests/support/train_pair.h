/*
 * train_pair.h - one batch norm step on a tensor, run twice under two settings of
 * the library and compared byte for byte: the schedule tests (test_one_pass.c,
 * test_stream_stores.c) change how the ops run, never what they give. A step is
 * training forward (y, save_mean, save_invstd, running_mean, running_var), training
 * backward (grad_input, grad_weight, grad_bias) and eval forward (y_eval).
 */
#ifndef SBN_TEST_TRAIN_PAIR_H
#define SBN_TEST_TRAIN_PAIR_H

#include "support/support.h"

typedef struct tsup_step_outputs {
    tsup_buf y, gi, sm, si, rm, rv, gw, gb, ye;
} tsup_step_outputs;

/* Runs the step on x and dy (of x's dtype, rank, shape and layout; C <= 512). */
void tsup_step_run(const tsup_buf *x, const tsup_buf *dy, sbn_dtype dtype, int rank,
                   const int64_t *shape, tsup_layout layout, tsup_step_outputs *o,
                   sbn_pool_t *pool);
/* 1 if every output of a and b holds the same bytes; else reports the first that
 * differs (by name) and returns 0. */
int tsup_step_same(const tsup_step_outputs *a, const tsup_step_outputs *b);
void tsup_step_free(tsup_step_outputs *o);

#endif /* SBN_TEST_TRAIN_PAIR_H */
