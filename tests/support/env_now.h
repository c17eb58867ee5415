/*
 * env_now.h - setenv and unsetenv for tests that change an SBN_* variable between
 * calls: the library reads its environment once per process (src/core/env.h), so
 * each change is followed by sbn__env_reload, which parses every variable again.
 * Header-only, for test programs with or without the test support library.
 */
#ifndef SBN_TEST_ENV_NOW_H
#define SBN_TEST_ENV_NOW_H

#include <stdlib.h>

#include "core/env.h"

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

#endif /* SBN_TEST_ENV_NOW_H */
