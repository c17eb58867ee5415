/*
 * env_now.h - what the tests of the SBN_* environment share: setenv and unsetenv
 * followed by sbn__env_reload (the library reads its environment once per process,
 * src/core/env.h, so a test that changes a variable between calls reads it again), the
 * variables' names in sbn__env_id order, and each parsed field as a double with the
 * default it holds when its variable is unset or invalid. Header-only, for the test
 * programs with or without the test support library and for the fuzz targets.
 */
#ifndef SBN_TEST_ENV_NOW_H
#define SBN_TEST_ENV_NOW_H

#include <stdlib.h>

#include "core/env.h"

static const char *const tsup_env_names[SBN_ENV_COUNT] = {
    "SBN_ONE_PASS_BYTES", "SBN_STREAM_STORES", "SBN_ROW_TILES",
    "SBN_FORCE_SCALAR",   "SBN_NUM_THREADS",   "SBN_COMM_TIMEOUT"};

static const double tsup_env_defaults[SBN_ENV_COUNT] = {-1, -1, -1, 0, 0, 0};

static inline int tsup_setenv_now(const char *name, const char *value)
{
    int rc = setenv(name, value, 1);
    sbn__env_reload();
    return rc;
}

static inline int tsup_unsetenv_now(const char *name)
{
    int rc = unsetenv(name);
    sbn__env_reload();
    return rc;
}

/* The field of variable id as a double. */
static inline double tsup_env_field(const sbn__env *env, int id)
{
    switch (id) {
    case SBN_ENV_ONE_PASS_BYTES: return (double)env->one_pass_bytes;
    case SBN_ENV_STREAM_STORES: return env->stream_stores;
    case SBN_ENV_ROW_TILES: return env->row_tiles;
    case SBN_ENV_FORCE_SCALAR: return env->force_scalar;
    case SBN_ENV_NUM_THREADS: return env->num_threads;
    default: return env->comm_timeout;
    }
}

#endif /* SBN_TEST_ENV_NOW_H */
