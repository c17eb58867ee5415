/*
 * mpi_cases.h - the case runner and checks of the tests run under mpirun
 * (test_mpi_comm.c, test_mpi_layer.c). There is no fork harness under MPI
 * (forking an MPI process is unsafe): the cases run one after the other in every
 * process, each process counts its failures, the counts of a case are summed
 * over the world with MPI_Allreduce, and rank 0 prints one "ok"/"FAIL" line a
 * case and "N passed, N failed"; the exit status is non-zero on any failure.
 * A check records the failure and goes on, so that every process keeps making
 * the same sequence of collectives. Header-only (static inline) because
 * test_mpi_comm does not link sbn_testlib; include it in one file per program.
 */
#ifndef SBN_TEST_MPI_CASES_H
#define SBN_TEST_MPI_CASES_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "syncbn/syncbn.h"

#define TSUP_MPI_MAX_PROCS 64

static int g_rank, g_size; /* in MPI_COMM_WORLD */
static int g_failures;     /* of this process, over all cases so far */

/* Prints "FAIL rank R, file:line: message [last error]" on stderr and counts the failure. */
static inline void mpi_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void mpi_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "    FAIL rank %d, %s:%d: ", g_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " [%s]\n", sbn_last_error());
    g_failures++;
}

/* Records a failure (printf-style message) when cond is false, and goes on. */
#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) mpi_fail(__FILE__, __LINE__, __VA_ARGS__);                      \
    } while (0)

/* EXPECT that an sbn_status expression equals want. */
#define EXPECT_STATUS(expr, want)                                                    \
    do {                                                                             \
        sbn_status got_ = (expr);                                                    \
        EXPECT(got_ == (want), "%s returned %s, expected %s", #expr,                 \
               sbn_status_name(got_), sbn_status_name(want));                        \
    } while (0)

/* EXPECT_STATUS of a status already held in `got`, named `what` in the message. */
#define EXPECT_STATUS_OF(got, want, what)                                            \
    EXPECT((got) == (want), "%s returned %s, expected %s", what, sbn_status_name(got), \
           sbn_status_name(want))

/* EXPECT that the last error sentence contains needle. */
#define EXPECT_HAS(needle)                                                           \
    EXPECT(strstr(sbn_last_error(), needle) != NULL, "the message lacks \"%s\"", needle)

typedef struct mpi_case {
    const char *name;
    void (*fn)(void);
} mpi_case;

/*
 * Initializes MPI (g_rank, g_size), refuses more than TSUP_MPI_MAX_PROCS
 * processes, calls setup (when not NULL), runs the n cases and finalizes MPI.
 * Returns the exit status: 0 when every case passed on every process.
 */
static inline int mpi_run_cases(int *argc, char ***argv, const mpi_case *cases, int n,
                                void (*setup)(void))
{
    int k, passed = 0, failed = 0;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size > TSUP_MPI_MAX_PROCS) {
        if (g_rank == 0) fprintf(stderr, "run at most %d processes\n", TSUP_MPI_MAX_PROCS);
        MPI_Finalize();
        return 1;
    }
    if (setup) setup();
    if (g_rank == 0) printf("%s on %d processes\n", (*argv)[0], g_size);
    for (k = 0; k < n; k++) {
        int before = g_failures, mine, total = 0;
        cases[k].fn();
        mine = g_failures - before;
        MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (total == 0)
            passed++;
        else
            failed++;
        if (g_rank == 0) {
            printf("  %s  %s\n", total == 0 ? "ok  " : "FAIL", cases[k].name);
            fflush(stdout);
        }
    }
    if (g_rank == 0) printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}

#endif /* SBN_TEST_MPI_CASES_H */
