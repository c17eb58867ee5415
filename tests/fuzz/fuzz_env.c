/*
 * fuzz_env.c - a libFuzzer target over the SBN_* environment parser (src/core/env.c) and
 * the schedule that a huge value once crashed. The input's first byte picks which of the
 * six variables are set, the second the size of a describe buffer, and the rest, split
 * at NUL bytes, gives their values (any other bytes). The target sets them, reads the
 * environment again (sbn__env_reload, its warnings sent to /dev/null) and checks, with
 * abort() on a violation: an unset or blank variable is unset with its field at the
 * default; a valid one has its field within its bounds (budget 0..2^40, a 0|1 switch,
 * threads 1..1024, a timeout in (0, 1e8]) and no message; an invalid one keeps the
 * default and has a message naming it; a value holding a character no form accepts is
 * invalid; sbn__env_describe stays inside any buffer; the one-pass block of a tensor of
 * two elements a channel on a pool of 5 threads is 0 or leaves 2 x 5 blocks within the
 * channels; and training batch_norm on it gives the bits it gave with nothing set.
 * What is read once per process (the kernel choice, the aclnn pool) is test_env_fuzz's
 * part: it re-executes itself for each case.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, dup */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env.h"
#include "ops/plan.h"
#include "support/env_now.h"
#include "syncbn/ops.h"

#define C 40
#define N 2
#define POOL_THREADS 5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct outputs {
    float y[N * C], mean[C], invstd[C];
} outputs;

static sbn_pool_t *g_pool;
static float g_x[N * C];
static outputs g_ref;
static unsigned char g_ws[1 << 16];

static void check(int ok, const char *what, int id)
{
    if (ok) return;
    fprintf(stderr, "fuzz_env: %s (%s)\n", what, id >= 0 ? tsup_env_names[id] : "-");
    abort();
}

static sbn_tensor x_view(void)
{
    int64_t shape[4] = {N, C, 1, 1};
    return sbn_tensor_contiguous(g_x, SBN_F32, 4, shape);
}

static void run(outputs *o)
{
    int64_t shape[4] = {N, C, 1, 1};
    sbn_tensor x = x_view(), y = sbn_tensor_contiguous(o->y, SBN_F32, 4, shape);
    sbn_tensor m = sbn_tensor_1d(o->mean, SBN_F32, C), s = sbn_tensor_1d(o->invstd, SBN_F32, C);
    size_t bytes = 0;
    memset(o, 0, sizeof *o);
    check(sbn_batch_norm_workspace_size(&x, &bytes) == SBN_OK && bytes <= sizeof g_ws, "workspace",
          -1);
    check(!SBN_FAILED(sbn_batch_norm(&x, NULL, NULL, 1, 0.1, 1e-5, NULL, NULL, &y, &m, &s, g_ws,
                                     bytes, g_pool)),
          "batch_norm failed", -1);
}

/* Re-reads the environment with stderr on /dev/null (the warnings of bad values). */
static void reload_quietly(void)
{
    static int null_fd = -2;
    int saved;
    if (null_fd == -2) null_fd = open("/dev/null", O_WRONLY);
    fflush(stderr);
    saved = dup(2);
    if (null_fd >= 0 && saved >= 0) dup2(null_fd, 2);
    sbn__env_reload();
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

static void init(void)
{
    int i;
    for (i = 0; i < N * C; i++) g_x[i] = (float)((i * 37) % 11) - 3.5f;
    check(sbn_pool_create(POOL_THREADS, &g_pool) == SBN_OK, "pool", -1);
    for (i = 0; i < SBN_ENV_COUNT; i++) unsetenv(tsup_env_names[i]);
    reload_quietly();
    run(&g_ref);
}

static int in_bounds(int id, double v)
{
    switch (id) {
    case SBN_ENV_ONE_PASS_BYTES: return v >= 0 && v <= (double)SBN_ENV_MAX_ONE_PASS_BYTES;
    case SBN_ENV_NUM_THREADS: return v >= 1 && v <= SBN_ENV_MAX_THREADS;
    case SBN_ENV_COMM_TIMEOUT: return v > 0 && v <= SBN_COMM_MAX_TIMEOUT;
    default: return v == 0 || v == 1;
    }
}

/* A character that is neither a blank nor part of any accepted form (digits, "l2", strtod's). */
static int foreign(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\n\v\f\r0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-_()", *s))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    char *text = malloc(size + 1), *p, *values[SBN_ENV_COUNT] = {0};
    unsigned mask = size > 0 ? data[0] : 0;
    size_t describe_size = 1 + (size > 1 ? data[1] : 0);
    const sbn__env *env;
    outputs got;
    int id;
    int64_t block;
    sbn_tensor x;
    if (!ready) {
        init();
        ready = 1;
    }
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    p = size > 2 ? text + 2 : text + size;
    for (id = 0; id < SBN_ENV_COUNT; id++) { /* the set ones take the next NUL-ended piece */
        if (!(mask >> id & 1u)) {
            unsetenv(tsup_env_names[id]);
            continue;
        }
        values[id] = p;
        p += strlen(p);
        if (p < text + size) p++;
        setenv(tsup_env_names[id], values[id], 1);
    }
    reload_quietly();
    env = sbn__env_get();
    for (id = 0; id < SBN_ENV_COUNT; id++) {
        const sbn__env_var *v = &env->var[id];
        char *buf = malloc(describe_size);
        check(v->name != NULL && strcmp(v->name, tsup_env_names[id]) == 0, "name", id);
        check(values[id] != NULL || !v->set, "set but not given", id);
        if (v->set && v->valid) {
            check(in_bounds(id, tsup_env_field(env, id)) && v->message[0] == '\0', "valid but out of bounds",
                  id);
            check(!foreign(values[id]), "a foreign character accepted", id);
        } else {
            check(tsup_env_field(env, id) == tsup_env_defaults[id], "not the default", id);
            check(v->set ? strstr(v->message, tsup_env_names[id]) != NULL : v->message[0] == '\0',
                  "the message", id);
        }
        if (buf != NULL) {
            sbn__env_describe(env, (sbn__env_id)id, buf, describe_size);
            check(strlen(buf) < describe_size, "describe overran", id);
            free(buf);
        }
    }
    x = x_view();
    block = sbn__one_pass_block(&x, sizeof(float), g_pool);
    check(block >= 0 && block <= C && block * 2 * POOL_THREADS <= C, "one-pass block", 0);
    run(&got);
    check(memcmp(&got, &g_ref, sizeof got) == 0, "batch_norm's bits changed", -1);
    free(text);
    return 0;
}
