/*
 * test_layer_config.c - the sized sbn_syncbn_config (layer.h): the initializer
 * macro, sbn_syncbn_config_default and sbn_syncbn_config_init agree on the defaults;
 * a config whose size stops before a field (a caller built against an older, smaller
 * header) gets that field's default whatever its bytes hold, also when the size ends
 * inside the field; a size below the size field (0: never initialised) or past the
 * library's struct (a newer header) is SBN_ERR_BAD_VALUE with both sizes in the
 * sentence, and no output is written. Each call is a one-rank training forward on a
 * small f64 batch, whose y a default config gives bit for bit.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "syncbn/comm.h"
#include "syncbn/layer.h"

enum { N = 4, C = 3, NUMEL = N * C };

typedef struct run {
    double x[NUMEL], y[NUMEL], save_mean[C], save_invstd[C];
    int64_t count;
    double ws[4096];
} run;

/* A training forward of a fixed x with config; y, save_* and count start at 7. */
static sbn_status forward(const sbn_syncbn_config *config, run *r)
{
    int64_t shape[2] = {N, C};
    sbn_tensor x, y, sm, si;
    sbn_comm_t *comm;
    size_t bytes = 0;
    sbn_status s;
    int i;
    for (i = 0; i < NUMEL; i++) r->x[i] = (double)((i * 7) % 5) - 1.5, r->y[i] = 7.0;
    for (i = 0; i < C; i++) r->save_mean[i] = r->save_invstd[i] = 7.0;
    r->count = 7;
    x = sbn_tensor_contiguous(r->x, SBN_F64, 2, shape);
    y = sbn_tensor_contiguous(r->y, SBN_F64, 2, shape);
    sm = sbn_tensor_1d(r->save_mean, SBN_F64, C);
    si = sbn_tensor_1d(r->save_invstd, SBN_F64, C);
    if (sbn_syncbn_workspace_size(&x, &bytes) != SBN_OK || bytes > sizeof r->ws)
        return SBN_ERR_INTERNAL;
    if (sbn_comm_threads_create(1, 5.0, &comm) != SBN_OK) return SBN_ERR_INTERNAL;
    s = sbn_syncbn_forward(comm, config,
                           &(sbn_syncbn_forward_io){.x = &x, .y = &y, .save_mean = &sm,
                                                    .save_invstd = &si, .global_count = &r->count},
                           r->ws, sizeof r->ws, NULL);
    sbn_comm_destroy(comm);
    return s;
}

/* The outputs of two runs are the same bits. */
static int same_outputs(const run *a, const run *b)
{
    return memcmp(a->y, b->y, sizeof a->y) == 0 &&
           memcmp(a->save_mean, b->save_mean, sizeof a->save_mean) == 0 &&
           memcmp(a->save_invstd, b->save_invstd, sizeof a->save_invstd) == 0 &&
           a->count == b->count;
}

static int has(const char *needle)
{
    return strstr(sbn_last_error(), needle) != NULL;
}

static int same_defaults(const sbn_syncbn_config *a, const sbn_syncbn_config *b)
{
    return a->size == b->size && a->eps == b->eps && a->momentum == b->momentum &&
           a->cumulative == b->cumulative && a->training == b->training &&
           a->sync_grad_params == b->sync_grad_params && a->nan_guard == b->nan_guard &&
           a->reproducible == b->reproducible && a->timing == b->timing;
}

static void initializers_agree(void)
{
    sbn_syncbn_config macro = SBN_SYNCBN_CONFIG_INIT, fn, init;
    memset(&fn, 0x5A, sizeof fn);
    memset(&init, 0x5A, sizeof init);
    CHECK_OK(sbn_syncbn_config_default(&fn));
    CHECK_OK(sbn_syncbn_config_init(&init, sizeof init));
    CHECK(macro.size == sizeof(sbn_syncbn_config));
    CHECK(macro.eps == 1e-5 && macro.momentum == 0.1 && macro.training == 1);
    CHECK(!macro.cumulative && !macro.sync_grad_params && !macro.nan_guard &&
          !macro.reproducible && macro.timing == NULL);
    CHECK(same_defaults(&macro, &fn) && same_defaults(&macro, &init));
}

static void init_refuses_bad_sizes(void)
{
    sbn_syncbn_config c;
    unsigned char guard[sizeof c];
    CHECK_STATUS(sbn_syncbn_config_init(NULL, sizeof c), SBN_ERR_NULL_ARGUMENT);
    CHECK_MSG(has("config"), "message: %s", sbn_last_error());
    memset(&c, 0x5A, sizeof c);
    memcpy(guard, &c, sizeof c);
    CHECK_STATUS(sbn_syncbn_config_init(&c, 0), SBN_ERR_BAD_VALUE);
    CHECK_MSG(has("config->size is 0"), "message: %s", sbn_last_error());
    CHECK_STATUS(sbn_syncbn_config_init(&c, sizeof c + 8), SBN_ERR_BAD_VALUE);
    CHECK(memcmp(guard, &c, sizeof c) == 0); /* nothing written */
    /* a smaller (older) size writes only its own bytes */
    CHECK_OK(sbn_syncbn_config_init(&c, offsetof(sbn_syncbn_config, momentum)));
    CHECK(c.size == offsetof(sbn_syncbn_config, momentum) && c.eps == 1e-5);
    CHECK(memcmp((unsigned char *)&c + c.size, guard + c.size, sizeof c - c.size) == 0);
}

/* The fields past a smaller size are not read: invalid values there change nothing. */
static void smaller_size_takes_defaults(void)
{
    static run want, got;
    sbn_syncbn_config c = SBN_SYNCBN_CONFIG_INIT;
    sbn_syncbn_timing timing = {0, 0, 0};
    CHECK_OK(forward(&c, &want));
    CHECK(want.count == N);

    /* only the size field: eps -1, momentum 2 and training 0 past it are not read */
    c.size = sizeof c.size;
    c.eps = -1.0, c.momentum = 2.0, c.training = 0, c.timing = &timing;
    CHECK_OK(forward(&c, &got));
    CHECK(same_outputs(&want, &got));
    CHECK(timing.stats_seconds == 0.0 && timing.comm_seconds == 0.0 &&
          timing.elemt_seconds == 0.0);

    /* the same fields read in full are refused: eps is read at this size */
    c.size = sizeof c;
    CHECK_STATUS(forward(&c, &got), SBN_ERR_BAD_VALUE);
    CHECK_MSG(has("eps"), "message: %s", sbn_last_error());

    /* a size ending inside momentum: momentum 2 is not read, eps is */
    c = (sbn_syncbn_config)SBN_SYNCBN_CONFIG_INIT;
    c.size = offsetof(sbn_syncbn_config, momentum) + 4;
    c.momentum = 2.0, c.training = 0;
    CHECK_OK(forward(&c, &got));
    CHECK(same_outputs(&want, &got));

    /* a size up to timing: the flags are read, timing is not */
    c = (sbn_syncbn_config)SBN_SYNCBN_CONFIG_INIT;
    c.size = offsetof(sbn_syncbn_config, timing);
    c.timing = &timing;
    CHECK_OK(forward(&c, &got));
    CHECK(same_outputs(&want, &got));
    CHECK(timing.stats_seconds == 0.0 && timing.comm_seconds == 0.0 &&
          timing.elemt_seconds == 0.0);
    c.size = sizeof c; /* and read in full, timing accumulates */
    CHECK_OK(forward(&c, &got));
    CHECK(timing.stats_seconds + timing.comm_seconds + timing.elemt_seconds > 0.0);
}

/* Uninitialised (size 0) and newer (larger) configs are refused before any output. */
static void bad_sizes_refused(void)
{
    static run got;
    struct {
        sbn_syncbn_config c;
        unsigned char newer_fields[16];
    } big;
    sbn_syncbn_config zero;
    char want[96];
    int i;
    memset(&zero, 0, sizeof zero);
    CHECK_STATUS(forward(&zero, &got), SBN_ERR_BAD_VALUE);
    CHECK_MSG(has("config->size is 0") && has("SBN_SYNCBN_CONFIG_INIT"), "message: %s",
              sbn_last_error());
    for (i = 0; i < NUMEL; i++) CHECK(got.y[i] == 7.0);
    CHECK(got.count == 7);

    memset(&big, 0, sizeof big);
    big.c = (sbn_syncbn_config)SBN_SYNCBN_CONFIG_INIT;
    big.c.size = sizeof big;
    CHECK_STATUS(forward(&big.c, &got), SBN_ERR_BAD_VALUE);
    snprintf(want, sizeof want, "config->size is %zu", sizeof big);
    CHECK_MSG(has(want) && has("newer"), "message: %s", sbn_last_error());
    snprintf(want, sizeof want, "of %zu bytes", sizeof(sbn_syncbn_config));
    CHECK_MSG(has(want), "message: %s", sbn_last_error());
    for (i = 0; i < NUMEL; i++) CHECK(got.y[i] == 7.0);
    CHECK(got.count == 7 && got.save_mean[0] == 7.0);
}

static void null_io(void)
{
    sbn_syncbn_config c = SBN_SYNCBN_CONFIG_INIT;
    sbn_comm_t *comm;
    CHECK_OK(sbn_comm_threads_create(1, 5.0, &comm));
    CHECK_STATUS(sbn_syncbn_forward(comm, &c, NULL, NULL, 0, NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_MSG(has("io"), "message: %s", sbn_last_error());
    CHECK_STATUS(sbn_syncbn_backward(comm, &c, NULL, NULL, 0, NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_MSG(has("io"), "message: %s", sbn_last_error());
    sbn_comm_destroy(comm);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(initializers_agree),
    SBN_TEST_CASE(init_refuses_bad_sizes),
    SBN_TEST_CASE(smaller_size_takes_defaults),
    SBN_TEST_CASE(bad_sizes_refused),
    SBN_TEST_CASE(null_io),
};

SBN_TEST_MAIN(k_cases)
