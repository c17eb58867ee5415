/*
 * syncbn_check.h - one SyncBN training run of the `syncbn` command, seen from
 * one rank: the rank takes its uneven share of a synthetic batch, runs the layer's
 * forward and backward over its communicator for a number of steps, and compares
 * every output with whole-batch batch norm computed in double on the same
 * (dtype-rounded) values. demo and verify are both built on it. The caller
 * bounds the sizes (the command validates its flags): every rank holds the whole
 * batch in double, and a pool of `threads` that cannot be created fails the run.
 */
#ifndef SYNCBN_TOOLS_CHECK_H
#define SYNCBN_TOOLS_CHECK_H

#include "syncbn/layer.h"

/* The largest rank of a run's batch (the library's SBN_MAX_RANK). */
#define CHECK_MAX_RANK 8

/* One rank's outputs after a step of check_run, given to check_config.hook. */
typedef struct check_outputs {
    int step;
    int64_t first;            /* this rank's first row of the global batch */
    sbn_tensor y, grad_input; /* this rank's rows (dense, the run's layout) */
    sbn_tensor stats[4];      /* save_mean, save_invstd, running_mean, running_var */
    int64_t num_batches_tracked;
} check_outputs;

/* Called on every rank after every step, in step; it may make a collective on comm. */
typedef void (*check_hook)(void *user, sbn_comm_t *comm, const check_outputs *outputs);

typedef struct check_config {
    int rank;                     /* of the batch, 2..CHECK_MAX_RANK */
    int64_t shape[CHECK_MAX_RANK]; /* the global batch (N, C, d2, ..., dk); its first `rank` dims */
    sbn_dtype dtype;      /* of x, y, dy, grad_input */
    int channels_last;
    int iters;
    int empty_rank;       /* this rank gets no samples (-1: none) */
    int cumulative;       /* momentum = None */
    int threads;          /* compute threads per rank */
    int verbose;          /* print a line per step (rank 0) */
    int progress;         /* print a progress line for long runs (rank 0) */
    int reproducible;     /* the layer's reproducible mode (sbn_syncbn_config.reproducible) */
    check_hook hook;      /* optional: sees every step's outputs (demo --reproducible) */
    void *hook_user;
} check_config;

typedef struct check_result {
    double y, running, grad_input, grad_params, stats; /* max abs differences over ranks and steps */
    double y_scale, grad_scale;                        /* max |y|, max |grad_input| of the reference */
    double tol_y, tol_running, tol_grad_input, tol_grad_params, tol_stats;
    sbn_syncbn_timing timing; /* summed over steps, of the rank that waited least each step */
    int steps;
    sbn_status status;
    char message[256];
} check_result;

/*
 * The timeout the command gives its threads worlds: 0 when SBN_COMM_TIMEOUT is set, so
 * that the library's rule applies (its value, or SBN_ERR_BAD_VALUE when it is bad),
 * else CHECK_TIMEOUT (the library's 60 s default is short for a demo's large batches).
 */
#define CHECK_TIMEOUT 120.0
double check_comm_timeout(void);

/* The rows of the global batch owned by `rank` of `world`: [*first, *first + *count); uneven,
 * and empty only for empty_rank or when N is smaller than the ranks that hold samples. */
void check_split(int64_t n, int world, int rank, int empty_rank, int64_t *first, int64_t *count);
/* Runs the configuration on this rank; every rank of the world must call it. */
void check_run(const check_config *cfg, sbn_comm_t *comm, check_result *result);
/* 1 when every difference is within its tolerance and the run succeeded. */
int check_passed(const check_result *result);

#endif /* SYNCBN_TOOLS_CHECK_H */
