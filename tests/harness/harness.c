/*
 * harness.c - runs a table of test cases, each in a forked child with an alarm
 * as its timeout. The parent reports pass, fail, crash (signal) or timeout per
 * case and exits non-zero if any case did not pass. Sanitizer reports in the
 * child (leaks included, checked at the child's exit) fail that case.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syncbn/syncbn.h"

static int g_failures;

/* The library sizes each loop's team by its work (src/ops/plan.c): a small tensor runs
 * on one thread whatever the pool. Tests ask for splits with small tensors (a pool of 3
 * must split 3 ways), so every loop runs on the whole pool the test made; test_plan
 * turns this off and checks that the planned teams give the same bits. */
void sbn__plan_full_teams(int on);

void sbn_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    g_failures++;
    fprintf(stderr, "    FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

int sbn_test_failures(void)
{
    return g_failures;
}

static int timeout_seconds(void)
{
    const char *env = getenv("SBN_TEST_TIMEOUT");
    int value = env ? atoi(env) : 0;
    return value > 0 ? value : 60;
}

static int wanted(int argc, char **argv, const char *name)
{
    int i, any = 0;
    for (i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        any = 1;
        if (strcmp(argv[i], name) == 0) return 1;
    }
    return !any;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one case in a child; returns 1 when it passed. */
static int run_case(const sbn_test_case *tc)
{
    int status = 0;
    double start = now_seconds();
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "    fork failed; running %s in-process\n", tc->name);
        g_failures = 0;
        tc->fn();
        return g_failures == 0;
    }
    if (pid == 0) {
        alarm((unsigned)timeout_seconds());
        g_failures = 0;
        tc->fn();
        fflush(stdout);
        fflush(stderr);
        exit(g_failures == 0 ? 0 : 1);
    }
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("  ok    %-48s %7.3f s\n", tc->name, now_seconds() - start);
        return 1;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        printf("  FAIL  %-48s timed out after %d s\n", tc->name, timeout_seconds());
    else if (WIFSIGNALED(status))
        printf("  FAIL  %-48s killed by signal %d\n", tc->name, WTERMSIG(status));
    else
        printf("  FAIL  %-48s exit status %d\n", tc->name, WEXITSTATUS(status));
    return 0;
}

int sbn_test_main(int argc, char **argv, const sbn_test_case *cases, int count)
{
    int i, passed = 0, failed = 0;

    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (i = 0; i < count; i++) printf("%s\n", cases[i].name);
        return 0;
    }
    printf("%s\n", argv[0]);
    sbn__plan_full_teams(1);
    for (i = 0; i < count; i++) {
        if (!wanted(argc, argv, cases[i].name)) continue;
        if (run_case(&cases[i]))
            passed++;
        else
            failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
