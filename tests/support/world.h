/*
 * world.h - a world of ranks as threads, for the tests of the communicator and
 * the layer (test_comm_threads.c, test_comm_callbacks.c, test_layer.c,
 * test_layer_errors.c). tsup_run_world creates a threads-backend world, runs a
 * rank function on one pthread per rank, joins them, reports each rank's first
 * recorded failure through the harness and destroys the handles. A rank thread
 * must not use the harness's CHECK macros (they return from the case, not the
 * thread, and would leave peers waiting): it records failures in its context
 * with the R* macros below, which the main thread reports after the join. The
 * macros work on any context struct with the fields `rank`, `failed` and a
 * `msg` array, so other rank runners (the callbacks backend's bus) use them too.
 */
#ifndef SBN_TEST_WORLD_H
#define SBN_TEST_WORLD_H

#include <stddef.h>
#include <string.h>

#include "syncbn/comm.h"

#define TSUP_MAX_WORLD 8

/* One rank of a world: what its thread gets. */
typedef struct tsup_rank {
    int rank, world;
    sbn_comm_t *comm; /* this rank's handle of the threads-backend world */
    void *shared;     /* the run's shared state, as given to tsup_run_world */
    int failed;       /* set with msg by the first recorded failure */
    char msg[800];
} tsup_rank;

typedef void (*tsup_rank_fn)(tsup_rank *ctx);

/*
 * Runs fn on every rank of a fresh world of `world` ranks (any number; above
 * TSUP_MAX_WORLD, the size callers' per-rank arrays may assume, the threads get
 * small stacks) with the given timeout; reports every failed rank with
 * sbn_test_fail; returns 0 when no rank recorded a failure (and no creation
 * failed), 1 otherwise.
 */
int tsup_run_world(int world, double timeout, tsup_rank_fn fn, void *shared);
/*
 * tsup_run_world, except that every rank waits for all the others at a barrier
 * after fn returns: a rank that skips a call keeps its thread until all are done.
 */
int tsup_run_world_held(int world, double timeout, tsup_rank_fn fn, void *shared);

/* 1 when needle is NULL or the calling thread's sbn_last_error() contains it. */
int tsup_error_has(const char *needle);

/* Seconds on the monotonic clock. */
double tsup_now(void);

/*
 * Records a failure in (rank, *failed, msg) as "line LINE, rank RANK: " and the
 * printf-style message, unless one is already recorded. Used by the macros.
 */
void tsup_rank_note(int rank, int *failed, char *msg, size_t size, int line, const char *fmt,
                    ...) __attribute__((format(printf, 6, 7)));

/* When cond is false: records the rank's first failure (printf-style message), then `after`. */
#define TSUP_RANK_IF_NOT_(ctx, cond, after, ...)                                          \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            tsup_rank_note((ctx)->rank, &(ctx)->failed, (ctx)->msg, sizeof (ctx)->msg,    \
                           __LINE__, __VA_ARGS__);                                        \
            after;                                                                        \
        }                                                                                 \
    } while (0)

/* TSUP_RANK_IF_NOT_ of an sbn_status expression (spelled `text`) against want. */
#define TSUP_RANK_STATUS_(ctx, expr, text, want, after)                                   \
    do {                                                                                  \
        sbn_status got_ = (expr);                                                         \
        TSUP_RANK_IF_NOT_(ctx, got_ == (want), after, "%s returned %s, expected %s (%s)", \
                          text, sbn_status_name(got_), sbn_status_name(want),             \
                          sbn_last_error());                                              \
    } while (0)

/* Records the rank's first failure when cond is false and goes on. */
#define RNOTE(ctx, cond, ...) TSUP_RANK_IF_NOT_(ctx, cond, (void)0, __VA_ARGS__)
/* Records the rank's first failure when cond is false and returns from the rank function. */
#define RCHECK(ctx, cond, ...) TSUP_RANK_IF_NOT_(ctx, cond, return, __VA_ARGS__)

/* RCHECK of an sbn_status expression against the expected status. */
#define RSTATUS(ctx, expr, want) TSUP_RANK_STATUS_(ctx, expr, #expr, want, return)
/* RNOTE of an sbn_status expression against the expected status (goes on). */
#define RNOTE_STATUS(ctx, expr, want) TSUP_RANK_STATUS_(ctx, expr, #expr, want, (void)0)

/* RCHECK that the last error sentence contains needle. */
#define RHAS(ctx, needle)                                                                 \
    RCHECK(ctx, tsup_error_has(needle), "message \"%s\" lacks \"%s\"", sbn_last_error(), needle)
/* RNOTE that the last error sentence contains needle; a NULL needle checks nothing. */
#define RNOTE_HAS(ctx, needle)                                                            \
    RNOTE(ctx, tsup_error_has(needle), "message \"%s\" lacks \"%s\"", sbn_last_error(),      \
          (needle) ? (needle) : "")

#endif /* SBN_TEST_WORLD_H */
