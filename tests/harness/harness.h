/*
 * harness.h - the project's small test framework. A test program lists its cases
 * in a table and calls sbn_test_main(); every case runs in a child process under
 * a timeout (SBN_TEST_TIMEOUT seconds, default 60), so a crash or a hang fails
 * that case instead of stalling the run. `prog NAME...` runs only the named
 * cases; `prog --list` prints them. The last line is "N passed, N failed".
 *
 * Assertions record the failure with file and line and return from the case.
 */
#ifndef SBN_TEST_HARNESS_H
#define SBN_TEST_HARNESS_H

#include <stdio.h>

typedef void (*sbn_test_fn)(void);

typedef struct sbn_test_case {
    const char *name;
    sbn_test_fn fn;
} sbn_test_case;

#define SBN_TEST_CASE(fn) { #fn, fn }

int sbn_test_main(int argc, char **argv, const sbn_test_case *cases, int count);

/* Defines main() running the static array `cases` (an array, not a pointer) with sbn_test_main. */
#define SBN_TEST_MAIN(cases)                                                          \
    int main(int argc, char **argv)                                                   \
    {                                                                                 \
        return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0])); \
    }

/* Marks the running case failed and prints a message (printf-style). */
void sbn_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Number of failures recorded in the running case so far. */
int sbn_test_failures(void);

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            sbn_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);    \
            return;                                                   \
        }                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                          \
    do {                                                              \
        if (!(cond)) {                                                \
            sbn_test_fail(__FILE__, __LINE__, __VA_ARGS__);           \
            return;                                                   \
        }                                                             \
    } while (0)

/* Checks an sbn_status-returning expression against the expected status. */
#define CHECK_STATUS(expr, expected)                                                   \
    do {                                                                               \
        sbn_status check_status_got_ = (expr);                                         \
        sbn_status check_status_want_ = (expected);                                    \
        if (check_status_got_ != check_status_want_) {                                 \
            sbn_test_fail(__FILE__, __LINE__, "%s returned %s, expected %s (%s)",      \
                          #expr, sbn_status_name(check_status_got_),                   \
                          sbn_status_name(check_status_want_), sbn_last_error());      \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, SBN_OK)

/* Returns from the case if a helper already recorded a failure. */
#define RETURN_IF_FAILED()                                            \
    do {                                                              \
        if (sbn_test_failures() > 0) return;                          \
    } while (0)

#endif /* SBN_TEST_HARNESS_H */
