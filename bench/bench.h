/*
 * bench.h - shared declarations of the bench_ops benchmark: the problem every
 * implementation runs on (one set of buffers), the plain reference kernels
 * (bench_ref.c), the oneDNN peer (bench_onednn.c, only when oneDNN was found),
 * the SyncBN layer rows (bench_syncbn.c) and the output helpers (bench_ops.c).
 */
#ifndef SYNCBN_BENCH_H
#define SYNCBN_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "syncbn/syncbn.h"

typedef enum bench_mode { BENCH_FWD = 0, BENCH_BWD = 1, BENCH_EVAL = 2 } bench_mode;

/*
 * One benchmark case. Activations are (n, c, h, w) for rank 4 and (n, c) for rank 2
 * (h = w = 1); channels_last selects the (n, h, w, c) memory order (rank 4 only).
 * The activation buffers and the per-channel f32 vectors are shared by all implementations.
 */
typedef struct bench_problem {
    int rank;
    int64_t n, c, h, w;
    int channels_last;
    sbn_dtype dtype; /* SBN_F32, SBN_BF16 or SBN_F16 */
    int threads;
    double eps;
    void *x, *y, *dy, *dx;
    float *weight, *bias;      /* [C] */
    float *run_mean, *run_var; /* [C] running statistics (eval reads them, fwd-train updates) */
    float *save_mean, *save_invstd; /* [C] written by this project's fwd-train */
    float *batch_var;          /* [C] variance matching save_invstd (oneDNN backward input) */
    float *grad_weight, *grad_bias;
} bench_problem;

/* Elements of one activation. */
int64_t bench_numel(const bench_problem *p);

/* ---- bench_ref.c: the plain reference (read-reduce pass, then y = a*x + b) ---- */
typedef struct ref_team ref_team;
/* A team of `threads` threads (the caller is one); max_channels bounds C of later runs. */
ref_team *ref_team_create(int threads, int64_t max_channels);
void ref_team_destroy(ref_team *team);
/* Runs the reference of `mode` on p's buffers with the team's threads. */
void ref_run(ref_team *team, const bench_problem *p, bench_mode mode);
/* The reference's read-reduce kernels alone, for bench_kernels (float lanes, what the
 * peers' statistics cost beside syncbn's double lanes): s0 += sum x and s1 += sum x*x
 * over n contiguous elements (plane), or per channel k < c over `rows` rows of c
 * (s0[k], s1[k]). x is bf16 when bf16 != 0, else fp32. */
void ref_plane_sums(int bf16, const void *x, int64_t n, float *s0, float *s1);
void ref_rows_sums(int bf16, const void *x, int64_t rows, int64_t c, float *s0, float *s1);

/* ---- bench_ref_half.c: the reference's bf16 / fp16 kernels (dt SBN_BF16 or SBN_F16) ---- */
/* *s0 += sum a, *s1 += sum a*b over n elements (b == a: sum of squares). */
void ref_half_plane_sums(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t n, float *s0,
                         float *s1);
/* s0[k] += sum_r a[r][k], s1[k] += sum_r a[r][k]*b[r][k] over rows of c. */
void ref_half_rows_sums(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t rows,
                        int64_t c, float *s0, float *s1);
/* y = k1*a + k2*b + k3 over n elements (b NULL: k1*a + k3). */
void ref_half_plane_map(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t n, float k1,
                        float k2, float k3, uint16_t *y);
/* The same per row of c, with per-channel k1, k2, k3 (b and k2 NULL together). */
void ref_half_rows_map(sbn_dtype dt, const uint16_t *a, const uint16_t *b, int64_t rows, int64_t c,
                       const float *k1, const float *k2, const float *k3, uint16_t *y);

/* ---- bench_onednn.c (or the stub in bench_ops.c when oneDNN is missing) ---- */
typedef struct dnnl_case dnnl_case;
/* 1 when oneDNN was compiled in; version text in buf. */
int bench_dnnl_available(char *buf, size_t len);
/* NULL with a reason in why when oneDNN has no primitive for this case. */
dnnl_case *dnnl_case_create(const bench_problem *p, bench_mode mode, char *why, size_t why_len);
/* 0 on success. */
int dnnl_case_run(dnnl_case *k);
const char *dnnl_case_impl(const dnnl_case *k);
void dnnl_case_destroy(dnnl_case *k);

/* ---- bench_pool_stats.c: bench_ops --pool-stats ---- */
/* A call waiting longer than this for its pool's members counts as slow. */
#define BENCH_SLOW_WAIT_NS 50000.0
typedef struct bench_pool_tally {
    long long calls, loops, woke, cancelled, waited, slow_calls;
    long long wait_ns, wait_ns_max;
} bench_pool_tally;
/* Around each call of an op on pool: starts the pool's counts over, then adds them to t. */
void bench_pool_stats_before(sbn_pool_t *pool);
void bench_pool_stats_after(sbn_pool_t *pool, bench_pool_tally *t);
/* t per call, as a row's note (no commas). */
void bench_pool_stats_note(const bench_pool_tally *t, char *buf, size_t len);

/* ---- bench_ops.c: options, timing and output shared with bench_syncbn.c ---- */
typedef struct bench_opts {
    int min_reps;    /* at least this many timed repetitions ... */
    double min_time; /* ... and at least this many seconds of them ... */
    double max_time; /* ... unless this many seconds have gone by (and >= 5 reps) */
    int64_t syncbn_shape[4];
    int world;
} bench_opts;

double bench_now(void);
double bench_median(double *v, int n); /* sorts v */
double bench_min(const double *v, int n);
/* One CSV row (the format shared with bench/peers/torch_bn.py). */
void bench_row(const char *impl, const char *shape, const char *dtype, const char *threads,
               const char *layout, const char *mode, double min_s, double med_s, int reps,
               double floor_bytes, const char *status, const char *note);
/* Page-aligned, THP-advised, touched memory (NULL on failure); bench_free releases it. */
void *bench_alloc(size_t bytes);
void bench_free(void *p, size_t bytes);

/* ---- bench_aclnn.c: the aclnn path (both phases per call, the process-wide aclnn pool) ---- */
enum {
    BENCH_ACLNN_BN = 0,      /* aclnnBatchNorm (fwd-train, eval) / aclnnBatchNormBackward (bwd) */
    BENCH_ACLNN_SYNCFWD = 1, /* aclnnBatchNormStats -> GatherStatsWithCounts -> Elemt */
    BENCH_NATIVE_SYNCFWD = 2 /* sbn_stats -> sbn_gather_stats_with_counts -> sbn_elemt on pool */
};
typedef struct aclnn_case aclnn_case;
/* NULL with a reason in why when the case does not apply or its first run fails. */
aclnn_case *aclnn_case_create(const bench_problem *p, bench_mode mode, int kind, sbn_pool_t *pool,
                              char *why, size_t why_len);
int aclnn_case_run(void *k); /* 0 on success */
void aclnn_case_destroy(aclnn_case *k);

/* ---- bench_syncbn.c: the SyncBN layer, W ranks, fwd + bwd per step ---- */
int bench_syncbn_threads(const bench_opts *o);
/* Under mpirun: every process is one rank; rank 0 prints the row. */
int bench_syncbn_mpi(const bench_opts *o, int *argc, char ***argv);

/* ---- bench_traffic.c: bytes per rank per layer step for W = 2 .. 256 (threads) ---- */
int bench_traffic(void);

#endif /* SYNCBN_BENCH_H */
