/*
 * aclnn_support.h - helpers for the aclnn and acl tests (test_aclnn_*.c,
 * test_acl_runtime.c): aclTensors built with aclCreateTensor over tsup buffers
 * (any float dtype and tsup layout, the view placed at the buffer start or at an
 * element offset into a larger storage, guard bytes around it), tensors kept with
 * their logical values for the numeric checks (atsup_tv), raw tensors of any
 * aclDataType or rank for the argument checks, reading a tensor back as doubles,
 * freeing many at once, phase 2 with a fresh workspace, the argument-check
 * tables, the executor rules every op shares (a tensor without data included),
 * checks of the status and of aclGetRecentErrMsg, and the per-element tolerances
 * of the elementwise maps' outputs (computed in float for FLOAT/FLOAT16/BF16). Values are logical
 * row-major over the view dims, as in support.h.
 */
#ifndef SBN_TEST_ACLNN_SUPPORT_H
#define SBN_TEST_ACLNN_SUPPORT_H

#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "harness/harness.h"
#include "support/optest.h"
#include "support/support.h"

/*
 * The CPUs of the process's affinity mask as libsyncbn counts them (an internal of the
 * core, reached through the static library), which test_aclnn_threads compares the
 * aclnn pool's default size with. Declared here because the aclnn layer's own header
 * (src/aclnn/aclnn_internal.h) includes nothing of libsyncbn's internals.
 */
int sbn__affinity_cpus(void);

/* Where the view sits in the storage handed to aclCreateTensor. */
typedef enum atsup_place {
    ATSUP_PLAIN = 0, /* tensorData = the first element, offset 0, storageDims = viewDims */
    ATSUP_OFFSET = 1 /* tensorData = the buffer start, offset > 0, storage = the whole buffer */
} atsup_place;

typedef struct atsup_tensor {
    aclTensor *t;      /* NULL when aclCreateTensor refused */
    tsup_buf buf;      /* the storage; buf.view is the logical view (when `native`) */
    void *data;        /* the tensorData given to aclCreateTensor */
    aclDataType dtype;
    int native;        /* 1 when values were stored (a float or integer dtype of rank <= 8) */
    void *raw;         /* storage of a tensor that is not native */
} atsup_tensor;

/* The native dtype of FLOAT, FLOAT16, BF16, DOUBLE, INT32, INT64; 0 for the others. */
int atsup_native_dtype(aclDataType dtype, sbn_dtype *out);
const char *atsup_dtype_name(aclDataType dtype);

/* A tensor of `dtype` holding values (NULL: zeros) in the given layout and place. */
atsup_tensor atsup_make(aclDataType dtype, int rank, const int64_t *shape, tsup_layout layout,
                        atsup_place place, aclFormat format, const double *values);
/* Contiguous, ND, offset 0. */
atsup_tensor atsup_plain(aclDataType dtype, int rank, const int64_t *shape, const double *values);
/* A contiguous ND 1-D tensor of n values. */
atsup_tensor atsup_vec(aclDataType dtype, int64_t n, const double *values);
/*
 * A tensor whose values are never read (argument checks): any dtype, rank 0..16,
 * contiguous, with zeroed storage of 8 bytes per element.
 */
atsup_tensor atsup_raw(aclDataType dtype, int rank, const int64_t *shape, aclFormat format);
/* malloc'ed count values mean + std * normal (seeded), each rounded to dtype; free() them. */
double *atsup_normal(uint64_t seed, int64_t count, double mean, double std, aclDataType dtype);
/* Reads a native tensor back as logical row-major doubles. */
void atsup_read(const atsup_tensor *a, double *out);
/* 1 when the bytes around the view are intact (native tensors). */
int atsup_guard_ok(const atsup_tensor *a);
/* Destroys the aclTensor and frees the storage; a zeroed struct is a no-op. */
void atsup_free(atsup_tensor *a);

/* The native dtype of an aclDataType (atsup_native_dtype), SBN_F32 for the others. */
sbn_dtype atsup_native(aclDataType dtype);

/* A tensor with its logical values (rounded to its dtype), for the numeric checks. */
typedef struct atsup_tv {
    atsup_tensor a;
    double *v; /* n logical row-major values as stored; may be NULL */
    int64_t n;
} atsup_tv;

/*
 * A tensor of dt in the given layout, place and format holding normal values
 * (mean, std) drawn from rng when rng is set, else `mean` everywhere; v keeps
 * the values rounded to dt.
 */
atsup_tv atsup_tv_make(aclDataType dt, int rank, const int64_t *shape, tsup_layout layout,
                       atsup_place place, aclFormat format, tsup_rng *rng, double mean,
                       double std);
/* Frees the tensor and the values, and zeroes *t. */
void atsup_tv_free(atsup_tv *t);
/*
 * Reads t back (n values) and compares with want: |got - want| <= 1e-9 +
 * 2 u(dt) |want|, NaN matching NaN; the guard bytes must be intact too.
 * 1 when both hold; otherwise prints what differed and returns 0.
 */
int atsup_tv_close(const char *what, const atsup_tv *t, const double *want, aclDataType dt);
/* The same against per-element tolerances: |got[i] - want[i]| <= tol[i] (tsup_close_tol). */
int atsup_tv_close_tol(const char *what, const atsup_tv *t, const double *want,
                       const double *tol);

/*
 * Tolerances of an elementwise map's output (normalize: y, output, gradInput in eval;
 * backward: gradInput in training), per element. The maps compute in float when
 * every tensor of the map is FLOAT, FLOAT16 or BF16 (kernels.h, docs/numerics.md),
 * with proven bounds over the absolute values of the formula's terms:
 *   normalize:  |y - y_exact|   <= output rounding + 4 u_c (|b| + |(x - mean) invstd w|)
 *   backward:   |gi - gi_exact| <= output rounding + 6 u_c |invstd w| (|dy| + |sum_dy / N|
 *                                  + |(x - mean) invstd^2 sum_dy_xmu / N|)
 * atsup_map_u gives u_c from the dtypes of the map's tensors (input(s) and output):
 * 2^-24, or 0 when all are DOUBLE (the map computes in double, which the rounding
 * term already covers). The tolerance functions take the oracle's own quantities
 * (those ref_elemt / ref_backward_elemt take; channel at dim 1, element i in channel
 * (i / s) % c of n * c * s; w NULL: 1, b NULL: 0, mean NULL: 0) and set
 *   tol[i] = 1e-9 + 2 u(out) |want[i]|   (atsup_tv_close's tolerance)  + the term above.
 */
double atsup_map_u(aclDataType in0, aclDataType in1, aclDataType out);
void atsup_normalize_tol(const double *x, int64_t n, int64_t c, int64_t s, const double *mean,
                         const double *invstd, const double *w, const double *b,
                         const double *want, aclDataType out, double u_c, double *tol);
void atsup_backward_tol(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                        const double *mean, const double *invstd, const double *w,
                        const double *sum_dy, const double *sum_dy_xmu, double count,
                        const double *want, aclDataType out, double u_c, double *tol);

/* atsup_free of every atsup_tensor pointer listed, in order. */
#define ATSUP_FREE(...) TSUP_EACH(atsup_tensor *, atsup_free, __VA_ARGS__)
/* atsup_tv_free of every atsup_tv pointer listed, in order. */
#define ATSUP_TV_FREE(...) TSUP_EACH(atsup_tv *, atsup_tv_free, __VA_ARGS__)

/* a[i] = t[i].t for i < n: the handles of an argument array. */
void atsup_handles(const atsup_tensor *t, aclTensor **a, int n);
/* atsup_free of t[0..n-1]. */
void atsup_free_n(atsup_tensor *t, int n);

/* A function of phase 2 (the const on a stream parameter does not change the type). */
typedef aclnnStatus (*atsup_phase2_fn)(void *workspace, uint64_t workspaceSize,
                                       aclOpExecutor *executor, aclrtStream stream);
/* Runs phase 2 with a fresh workspace of `size` bytes (NULL when 0) and a NULL stream. */
aclnnStatus atsup_run(atsup_phase2_fn fn, uint64_t size, aclOpExecutor *executor);

/*
 * Fetches aclGetRecentErrMsg() (which returns and clears the message) into a
 * static copy and returns the copy; "" when there was none.
 */
const char *atsup_msg(void);
/* Fetches the recent message: 1 when it contains needle; otherwise prints it, 0. */
int atsup_msg_has(const char *needle);

/*
 * Argument-check cases. An op's test lists its tensor arguments in signature order
 * in an array; a case replaces up to two of them (with NULL, or with a raw tensor
 * of the given dtype, rank, shape and format), or sets workspaceSize/executor to
 * NULL, calls phase 1 and expects a status and a word of the recent message.
 */
#define ATSUP_NULL (-1)     /* rank: the argument is NULL */
#define ATSUP_SLOT_WS (-2)  /* slot: workspaceSize is NULL */
#define ATSUP_SLOT_EX (-3)  /* slot: executor is NULL */
#define ATSUP_MAX_ARGS 16

typedef struct atsup_arg {
    int slot; /* index in the argument array, or ATSUP_SLOT_WS / ATSUP_SLOT_EX */
    int rank; /* 0..16, or ATSUP_NULL */
    int64_t shape[10];
    aclDataType dtype;
    aclFormat format;
} atsup_arg;

typedef struct atsup_case {
    const char *label;
    int nsub;         /* 1 or 2 replacements */
    atsup_arg sub[2];
    aclnnStatus want;
    const char *needle; /* must appear in the recent message when want != 0; NULL: not checked */
} atsup_case;

/* Table shorthands (designated initializers, so unnamed fields are zero). */
#define ATSUP_NULL_ARG(s) {.slot = (s), .rank = ATSUP_NULL}
#define ATSUP_NULL_WS {.slot = ATSUP_SLOT_WS, .rank = ATSUP_NULL}
#define ATSUP_NULL_EX {.slot = ATSUP_SLOT_EX, .rank = ATSUP_NULL}
#define ATSUP_RAW(s, dt, fmt, r, ...) \
    {.slot = (s), .rank = (r), .shape = {__VA_ARGS__}, .dtype = (dt), .format = (fmt)}
#define ATSUP_CASE1(lbl, a, st, nd) \
    {.label = (lbl), .nsub = 1, .sub = {a}, .want = (st), .needle = (nd)}
#define ATSUP_CASE2(lbl, a, b, st, nd) \
    {.label = (lbl), .nsub = 2, .sub = {a, b}, .want = (st), .needle = (nd)}

/*
 * Calls phase 1 with args (NULL workspaceSize/executor when asked); on success it
 * must also run phase 2, so that the executor is freed, and return its status.
 */
typedef aclnnStatus (*atsup_call_fn)(aclTensor *const *args, int null_ws, int null_ex);
/* Runs one case on a copy of args; 1 when the status and message are as expected. */
int atsup_expect(atsup_call_fn fn, aclTensor *const *args, int nargs, const atsup_case *c);
/* Runs every case; returns the number that failed (each one printed). */
int atsup_expect_all(atsup_call_fn fn, aclTensor *const *args, int nargs,
                     const atsup_case *cases, int ncases);

/* Phase 1 of one op call over fixed arguments (ctx), for atsup_check_executor_rules. */
typedef aclnnStatus (*atsup_phase1_fn)(void *ctx, uint64_t *workspaceSize,
                                       aclOpExecutor **executor);
/*
 * The executor rules every op shares, through the real op: a second phase 2 on an
 * executor already run is refused (no crash); a workspace smaller than asked ->
 * 161002 and the executor stays usable; a real stream and a NULL stream both run;
 * phase 2 with a NULL executor -> 161001; a repeatable executor runs twice, is
 * destroyed, and is refused afterwards. 1 when all hold, else prints and 0.
 */
int atsup_check_executor_rules(atsup_phase1_fn phase1, void *ctx, atsup_phase2_fn phase2);

/*
 * A tensor made before its memory (data NULL, as CANN allows): puts a contiguous
 * tensor of dtype, shape and format without data in *slot (an argument ctx
 * passes), runs phase 1 (must succeed) and phase 2 (must refuse with 161001),
 * destroys the tensor and restores *slot. 1 when both statuses are as expected,
 * else prints the first that is not and returns 0.
 */
int atsup_check_no_data(atsup_phase1_fn phase1, void *ctx, atsup_phase2_fn phase2,
                        aclTensor **slot, aclDataType dtype, int rank, const int64_t *shape,
                        aclFormat format);

/* Checks an aclnnStatus expression, printing the recent message on a mismatch. */
#define CHECK_ACL(expr, expected)                                                           \
    do {                                                                                    \
        aclnnStatus check_acl_got_ = (expr);                                                \
        aclnnStatus check_acl_want_ = (expected);                                           \
        if (check_acl_got_ != check_acl_want_) {                                            \
            sbn_test_fail(__FILE__, __LINE__, "%s returned %d, expected %d (message: %s)",  \
                          #expr, (int)check_acl_got_, (int)check_acl_want_, atsup_msg());   \
            return;                                                                         \
        }                                                                                   \
    } while (0)

/* Fails the case unless the recent message names `needle`. */
#define CHECK_MSG_HAS(needle) CHECK_MSG(atsup_msg_has(needle), "message lacks \"%s\"", needle)

#endif /* SBN_TEST_ACLNN_SUPPORT_H */
