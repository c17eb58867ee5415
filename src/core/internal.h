/*
 * internal.h - what the library's files share and nothing outside sees: the
 * thread-local error report, the allocator, element conversions, tensor checks,
 * the walk over one channel's elements in fixed chunks, and the parallel loop.
 * Names are sbn__*; symbols are hidden from the shared library's export table.
 */
#ifndef SBN_CORE_INTERNAL_H
#define SBN_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "syncbn/ops.h"
#include "syncbn/syncbn.h"

#if defined(SBN_BUILDING_LIBRARY) && defined(__GNUC__)
#define SBN_API __attribute__((visibility("default")))
#else
#define SBN_API
#endif

/*
 * The reduction over one channel's R elements is cut into chunks of SBN_CHUNK
 * consecutive elements (in logical order over the non-channel dims). Each chunk
 * is reduced on its own, then the chunks are merged in index order: the order of
 * every floating-point operation depends on the shape only.
 */
#define SBN_CHUNK 2048

/* ---- errors (status.c) ---- */
/* Clears the calling thread's error text; every public entry point calls it first. */
void sbn__clear_error(void);
/* Records a printf-style sentence for sbn_last_error() and returns `status`. */
sbn_status sbn__error(sbn_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- allocation (alloc.c) ---- */
void *sbn__malloc(size_t bytes);
void *sbn__calloc(size_t count, size_t size);
void sbn__free(void *ptr);

/* ---- element conversions (convert.c) ---- */
int sbn__is_float_dtype(sbn_dtype dtype);
/* Loads n elements at base, step `stride` elements, as doubles. */
void sbn__load_run(const void *base, sbn_dtype dtype, int64_t stride, int64_t n, double *dst);
/* Stores n doubles, each rounded to nearest (even) in dtype. */
void sbn__store_run(void *base, sbn_dtype dtype, int64_t stride, int64_t n, const double *src);
/* Element i along dim 0 of a view (for 1-D per-channel tensors). */
double sbn__load1(const sbn_tensor *t, int64_t i);
void sbn__store1(const sbn_tensor *t, int64_t i, double value);
/* Element (i, j) of a 2-D view. */
double sbn__load2(const sbn_tensor *t, int64_t i, int64_t j);

/* ---- size-checked arithmetic and view extents (extent.c) ---- */
/* *out = a * b or a + b; 0 (and *out unchanged) when the result does not fit. */
static inline int sbn__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
static inline int sbn__add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
static inline int sbn__add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}
/*
 * Where a view lies, relative to its data pointer: the lowest and highest element
 * offsets it touches (lo <= 0 <= hi, from sum over dims of (shape[d] - 1) * strides[d]
 * split by sign), and the byte range [byte_lo, byte_hi) as addresses. Every step is
 * overflow-checked, including the address arithmetic.
 */
typedef struct sbn__extent {
    int64_t lo, hi;            /* element offsets, inclusive */
    uintptr_t byte_lo, byte_hi; /* addresses: [byte_lo, byte_hi) */
} sbn__extent;
typedef enum sbn__extent_result {
    SBN_EXTENT_EMPTY = 0, /* no elements (a dim is 0): touches no memory */
    SBN_EXTENT_OK = 1,
    SBN_EXTENT_OVERFLOW = -1 /* the extent or a byte address does not fit */
} sbn__extent_result;
/* The extent of t (rank 0..SBN_MAX_RANK, dims >= 0, known dtype). */
sbn__extent_result sbn__view_extent(const sbn_tensor *t, sbn__extent *e);
/*
 * The checks every view with data passes before an op touches it: its extent and
 * byte range fit (else SBN_ERR_TOO_LARGE naming `name`, the shape, the strides and
 * the offending dim) and its data is aligned to its element size (else
 * SBN_ERR_MISALIGNED). Views without elements pass.
 */
sbn_status sbn__check_view_memory(const sbn_tensor *t, const char *name);
/* "[1, 2, 3]" of t's strides into buf. */
const char *sbn__strides_str(const sbn_tensor *t, char *buf, size_t size);
/* 1 when the byte ranges of two views intersect (views without elements never do). */
int sbn__views_overlap(const sbn_tensor *a, const sbn_tensor *b);
/* 1 when the byte range of t intersects [p, p + bytes). */
int sbn__view_overlaps_bytes(const sbn_tensor *t, const void *p, size_t bytes);

/* ---- tensor checks (check.c) ---- */
/* A tensor argument and the name messages use for it. */
typedef struct sbn__arg {
    const sbn_tensor *t;
    const char *name;
} sbn__arg;
/* "[2, 3, 4]" into buf. */
const char *sbn__shape_str(const sbn_tensor *t, char *buf, size_t size);
/* Fails with SBN_ERR_NULL_ARGUMENT naming `name` when t is NULL. */
sbn_status sbn__check_present(const void *t, const char *name);
/* An activation: rank 2..8, float dtype, dims >= 0, C > 0, data set when numel > 0. */
sbn_status sbn__check_activation(const sbn_tensor *t, const char *name);
/* check_activation without the data pointer (workspace sizes are known before the data). */
sbn_status sbn__check_activation_shape(const sbn_tensor *t, const char *name);
/* Like check_activation, plus the same shape as x (named x_name). */
sbn_status sbn__check_like(const sbn_tensor *t, const char *name, const sbn_tensor *x,
                           const char *x_name);
/* NULL passes unless required; otherwise a 1-D float tensor of length c. */
sbn_status sbn__check_vector(const sbn_tensor *t, const char *name, int64_t c, int required);
/* A 2-D float tensor [rows, cols] with cols > 0; a negative rows or cols means "any". */
sbn_status sbn__check_matrix(const sbn_tensor *t, const char *name, int64_t rows, int64_t cols);
/* check_matrix without the data pointer (for workspace sizes). */
sbn_status sbn__check_matrix_shape(const sbn_tensor *t, const char *name, int64_t rows,
                                   int64_t cols);
/* A 1-D tensor of length n, any dtype, with data (the gathers check its values). */
sbn_status sbn__check_count_vector(const sbn_tensor *t, const char *name, int64_t n);
sbn_status sbn__check_eps(double eps);
sbn_status sbn__check_momentum(double momentum);
/*
 * Workspace large enough for `need` bytes (plus alignment slack, see sbn__ws_align),
 * and the part of it the op uses apart from every view in outputs and inputs
 * (sbn__check_workspace_apart).
 */
sbn_status sbn__check_workspace(const void *workspace, size_t bytes, size_t need,
                                const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                                int n_in);
/*
 * The bytes [workspace, workspace + used) that a call writes its scratch to overlap
 * none of the views in `a` and `b` (NULL entries skipped): the scratch is written
 * while the inputs are still read and before the outputs are. An op passes
 * sbn__ws_bytes(need); NULL or used == 0 passes.
 */
sbn_status sbn__check_workspace_apart(const void *workspace, size_t used, const sbn__arg *a,
                                      int na, const sbn__arg *b, int nb);
/* a + b and a * b, or SIZE_MAX when they do not fit (workspace sizes; SIZE_MAX is refused). */
static inline size_t sbn__sat_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t sbn__sat_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
/*
 * The common body of sbn_<op>_workspace_size: checks `bytes` and x (an
 * activation's dtype, rank and dims; its data may still be NULL), then stores
 * need(x) plus the alignment slack in *bytes.
 */
sbn_status sbn__activation_workspace(const sbn_tensor *x, size_t *bytes,
                                     size_t (*need)(const sbn_tensor *x));
/* The 64-byte aligned start of a workspace. */
double *sbn__ws_align(void *workspace);
/* Adds the alignment slack to a workspace need; 0 stays 0. */
size_t sbn__ws_bytes(size_t need);

/*
 * Alias rules: every output must not overlap itself, any input, or another output,
 * except that an output may be exactly one input view (pairs listed in `same_ok`).
 * Views are compared by byte ranges (conservative). NULL entries are skipped.
 */
sbn_status sbn__check_aliases(const sbn__arg *outputs, int n_out, const sbn__arg *inputs,
                              int n_in, const sbn_tensor *inplace_out,
                              const sbn_tensor *inplace_in);
/* 1 when a and b are the same view (data, dtype, rank, shape, strides). */
int sbn__same_view(const sbn_tensor *a, const sbn_tensor *b);

/* ---- the walk over a channel's elements (walk.c) ---- */
#define SBN_WALK_MAX_TENSORS 3

/*
 * The non-channel dims of x's shape with the strides of up to three same-shaped
 * tensors, with size-1 dims dropped and dims merged where every tensor allows.
 */
typedef struct sbn__walk {
    int64_t channels;   /* C */
    int64_t reduction;  /* R = numel / C */
    int64_t chunks;     /* ceil(R / SBN_CHUNK) */
    int ndims;
    int ntensors;
    int64_t size[SBN_MAX_RANK];
    int64_t stride[SBN_WALK_MAX_TENSORS][SBN_MAX_RANK];
    int64_t channel_stride[SBN_WALK_MAX_TENSORS];
    char *data[SBN_WALK_MAX_TENSORS];
    sbn_dtype dtype[SBN_WALK_MAX_TENSORS];
} sbn__walk;

void sbn__walk_init(sbn__walk *w, const sbn_tensor *const *tensors, int ntensors);
/* Length of chunk k: SBN_CHUNK except for the last. */
int64_t sbn__walk_chunk_len(const sbn__walk *w, int64_t k);
/*
 * Calls fn once per run of [r0, r0 + n) of channel c: a stretch along the innermost
 * walk dim, where tensor i's elements start at ptr[i] and are stride[i] elements
 * apart; `at` is the run's position within [r0, r0 + n).
 */
typedef void (*sbn__run_fn)(void *ctx, char *const *ptr, const int64_t *stride, int64_t at,
                            int64_t len);
void sbn__walk_runs(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__run_fn fn,
                    void *ctx);
/*
 * Rows: when every tensor has channel stride 1 (channels-last and (N, C) tensors),
 * a "row" r holds channels 0..C-1 side by side; the walk's runs are then runs of
 * rows, `stride` elements apart. Otherwise the engine goes plane by plane: for each
 * run along the innermost walk dim, every channel of a block in turn, which for
 * NCHW is plain memory order.
 */
int sbn__walk_is_rows(const sbn__walk *w);
/* out[i] = ptr[i] advanced by `steps` elements of stride[i] (tensor i's dtype). */
void sbn__walk_advance(const sbn__walk *w, char *const *ptr, const int64_t *stride, int64_t steps,
                       const char **out);
/* The end of the piece of [rr, run_end) that stays inside rr's chunk. */
static inline int64_t sbn__chunk_piece_end(int64_t rr, int64_t run_end)
{
    int64_t end = (rr / SBN_CHUNK + 1) * SBN_CHUNK;
    return end < run_end ? end : run_end;
}
/*
 * Short runs, taken a channel at a time: a walk of two dims (runs along the outer
 * one; every tensor with unit inner strides) whose runs span at most
 * SBN_SHORT_RUN_BYTES of all its tensors together - NCHW with small planes (7x7; 14x14
 * but for the fp32 backward, whose runs of dy and x, 1568 bytes, amortise a call
 * each and lost when grouped from memory: bench_ops 32x1024x14x14). The
 * reductions then hand a channel's consecutive runs to one runs kernel (kernels.h)
 * instead of one call per run. sbn__walk_run_groups calls fn once per stretch of
 * [r0, r0 + n) of channel c: `runs` whole runs of `len` (the inner size), or one piece
 * of a run (runs = 1, len shorter); tensor i's run j of the stretch starts at ptr[i] +
 * j * run_stride[i] elements; `at` is the stretch's position within [r0, r0 + n).
 */
#define SBN_SHORT_RUN_BYTES 1024
int sbn__walk_short_runs(const sbn__walk *w);
/* Runs per window when cn channels take their short runs a window at a time: the
 * window of the cn channels spans about SBN_RUNS_WINDOW_BYTES (all tensors), so it stays
 * in cache while the channels take their runs out of it, one channel at a time. */
#define SBN_RUNS_WINDOW_BYTES ((int64_t)256 << 10)
int64_t sbn__runs_window(const sbn__walk *w, int64_t cn);
/* Tests: 0 turns the short-run path off, 1 back on (the default). */
void sbn__short_runs_set(int on);
typedef void (*sbn__runs_fn)(void *ctx, char *const *ptr, const int64_t *run_stride, int64_t at,
                             int64_t runs, int64_t len);
void sbn__walk_run_groups(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__runs_fn fn,
                          void *ctx);
/* The kernel element type (sbn_kdtype) shared by every tensor of the walk, or -1. */
int sbn__walk_kdtype(const sbn__walk *w);
/* 1 when every tensor steps by one element along the innermost walk dim. */
int sbn__walk_unit_inner(const sbn__walk *w);

/*
 * How the engine splits a pass into tasks: `segments` ranges of seg_rows rows
 * (whole chunks for a reduction), times `blocks` blocks of `block` channels; task
 * t = segment t / blocks, block t % blocks, so a thread's tasks follow memory. The
 * split follows the pool's thread count (one segment on one thread, for one
 * sequential sweep); the results never depend on it, because every chunk lies
 * inside one segment and a map has no order to keep.
 */
typedef struct sbn__plan {
    int64_t segments, seg_rows, blocks, block;
} sbn__plan;
/* A map over whole rows (channels-last, (N, C)): every channel, the rows cut into one
 * contiguous range per thread, at any row (no chunk to keep whole). */
void sbn__plan_row_map(sbn__plan *plan, const sbn__walk *w, sbn_pool_t *pool);
void sbn__plan_tasks(sbn__plan *plan, const sbn__walk *w, int64_t block, sbn_pool_t *pool);
/* The block for passes with no per-channel state to carry (row reductions; the plane
 * maps start from it): every channel, or C / T when there are fewer chunks than threads. */
int64_t sbn__plan_block_all(const sbn__walk *w, sbn_pool_t *pool);
/* The plane maps' block: the same, and C / T also when T segments of whole chunks
 * would be uneven (the largest over 9/8 of an even share of the rows). */
int64_t sbn__plan_block_map(const sbn__walk *w, sbn_pool_t *pool);
/* Elements converted to double at a time where a kernel cannot read a tensor directly. */
#define SBN_CONVERT_PIECE 256
/* At most max_segments segments (longer ones). */
void sbn__plan_cap_segments(sbn__plan *plan, const sbn__walk *w, int64_t max_segments);
/* Rows [r0, r1) and channels [c0, c0 + cn) of task t. */
void sbn__plan_task(const sbn__plan *plan, const sbn__walk *w, int64_t t, int64_t *r0,
                    int64_t *r1, int64_t *c0, int64_t *cn);

/* ---- parallel loop (pool.c) ---- */
typedef void (*sbn__range_fn)(void *ctx, int64_t begin, int64_t end);
/*
 * Calls fn over [0, count) in pieces on the pool's threads (NULL: serially on the
 * caller). Pieces are independent; callers make each piece's result depend only
 * on its index, never on which thread ran it.
 */
void sbn__parallel_for(sbn_pool_t *pool, int64_t count, sbn__range_fn fn, void *ctx);
/*
 * A pool handle: the shared core (workers, gate) and how many of its threads a loop
 * may use. The pool's own handle is as wide as the pool; a team is a narrower handle
 * on the caller's stack.
 */
struct sbn_pool {
    struct sbn_pool_core *core;
    int threads;
};
/* A handle `threads` wide over pool's core, written to *view: NULL (run serially) when
 * pool is NULL or threads <= 1, pool itself when threads >= its width. */
sbn_pool_t *sbn__pool_team(sbn_pool_t *pool, int threads, sbn_pool_t *view);

/* ---- every schedule decision (src/ops/plan.c) ---- */
/* The shares of the L3 beyond which a map streams its stores (channels-last rows: on one
 * thread, or with rows of SBN_ROWS_STREAM_MIN_BYTES or more) and a row reduction
 * prefetches; the mechanism is in plan.c, and `syncbn info` prints them. */
#define SBN_MAP_STREAM_SHARE 0.9
#define SBN_ROWS_STREAM_SHARE 0.5
#define SBN_ROWS_STREAM_MIN_BYTES 512
#define SBN_REDUCE_PREFETCH_SHARE 0.5
/* Whether the n tensors of a map or a reduction together exceed `share` of the L3, so
 * that it takes the kernels for data beyond the cache (sbn__kernels_streaming:
 * non-temporal stores in maps, prefetch in AVX-512 row reductions); never when `suits`
 * is 0, unless forced (sbn__stream_stores_set, SBN_STREAM_STORES). */
int sbn__beyond_cache(const sbn_tensor *const *t, int n, double share, int suits);
/* Forces sbn__beyond_cache: -1 by size (the default), 0 never, 1 always (tests; the
 * environment's SBN_STREAM_STORES=0|1 does the same). */
void sbn__stream_stores_set(int mode);
/* A map's stores over its n tensors (the output last), walked as w (rows: the row path)
 * on pool: 1 to stream them past the cache; *beyond_l3 is set when the tensors exceed
 * the whole L3. */
int sbn__plan_map_stores(const sbn_tensor *const *t, int n, const sbn__walk *w, int rows,
                         const sbn_pool_t *pool, int *beyond_l3);
/* The row path's tile width in channels (0: whole rows) and, in *tile_rows, its rows. */
int64_t sbn__plan_row_tile(const sbn__walk *w, int rows, int kd, int float_coefs, int backward,
                           int beyond_l3, int64_t *tile_rows);
/* The row path's tiles: -1 by size (the default), 0 never, 1 always (tests; the
 * environment's SBN_ROW_TILES=0|1 does the same). Speed only, never bits. */
void sbn__row_tiles_set(int mode);
/*
 * Channels per block of the one-pass schedule for which a block's inputs (R x
 * bytes_per_element bytes a channel) fit a thread's cache budget, with at least 2T
 * blocks; 0 when the two-pass schedule should run instead.
 */
int64_t sbn__one_pass_block(const sbn_tensor *x, size_t bytes_per_element, sbn_pool_t *pool);
/* Sets the per-thread budget in bytes (0: two passes always; -1: back to the default, the
 * environment's SBN_ONE_PASS_BYTES or else the size rule of plan.c). Tests. */
void sbn__one_pass_set_budget(int64_t bytes);
/* The threads of pool that `work_ns` nanoseconds of work keep busy: 1 for NULL or a
 * small loop, at most the pool's width and the CPUs of this process. */
int sbn__plan_width(const sbn_pool_t *pool, double work_ns);
/* sbn__pool_team of that width (NULL: run serially). */
sbn_pool_t *sbn__plan_team(sbn_pool_t *pool, double work_ns, sbn_pool_t *view);
/* The work of streaming the n tensors (NULL entries skipped) once. */
double sbn__plan_stream_ns(const sbn_tensor *const *t, int n);
/* The work of finishing `channels` channels of `chunks` partial results each. */
double sbn__plan_channels_ns(int64_t channels, int64_t chunks);
/* 1: every loop on the pool's full width (tests, so they get the splits they ask for). */
void sbn__plan_full_teams(int on);
/* Plans as if the process had `cpus` CPUs (tests, to take team widths a small machine
 * would not); 0: the machine's. */
void sbn__plan_set_cpus(int cpus);

/* ---- chunked channel reductions (src/ops/channel_reduce.c) ---- */
typedef enum sbn__reduce_kind {
    SBN_REDUCE_MOMENTS,      /* tensor 0 = x: (mean, M2) per chunk, merged with Chan's formula */
    SBN_REDUCE_SUMS,         /* tensor 0 = x: (sum x, sum x^2) */
    SBN_REDUCE_BACKWARD      /* tensor 0 = dy, 1 = x: (sum dy, sum dy*(x - center[c])) */
} sbn__reduce_kind;

/*
 * One channel's chunk in progress: the kernels' 2 x 16 lanes and the shift (the
 * chunk's first element for MOMENTS when finite, else 0; 0 for SUMS; the channel's
 * center for BACKWARD). sbn__chunk_finish folds the lanes of a chunk of n elements
 * into its two partials: MOMENTS (mean, M2) = (shift + A/n, B - A*A/n, raised to 0 when
 * negative; NaN stays NaN),
 * SUMS and BACKWARD (A, B), with A, B the folded lane sums (kernels.h).
 */
void sbn__chunk_finish(sbn__reduce_kind kind, int64_t n, double shift, double *a, double *b,
                       double *part);
/* The same from the folded sums A = sa, B = sb (the row path folds many channels at once). */
void sbn__chunk_finish_sums(sbn__reduce_kind kind, int64_t n, double shift, double sa, double sb,
                            double *part);
/* The shift a MOMENTS chunk starting with value v uses. */
double sbn__chunk_shift(double v);

/* Shared by the plane and row paths of a reduction. */
typedef struct sbn__reduce_job {
    sbn__reduce_kind kind;
    sbn__walk walk;
    sbn__plan plan;
    const sbn_tensor *center;
    int kd;          /* kernel element type of every tensor, or -1 (convert to double first) */
    const struct sbn_kernels *kern; /* sbn__kernels(), or the table beyond the cache */
    double *partial; /* [C][chunks][2] */
    double *out;     /* [C][2] */
    double *row_state; /* row path: SBN_ROW_SLOTS slots of [16][C] a, [16][C] b, [C] shift */
} sbn__reduce_job;
/* The row path's task t (row_reduce.c). */
void sbn__row_reduce_task(const sbn__reduce_job *job, int64_t t);
/* The row path keeps the lanes of every channel of a row (so a chunk's rows are read
 * whole, in order) in the workspace, one slot per segment; at most SBN_ROW_SLOTS
 * segments run at once (more threads split the channels instead). */
#define SBN_ROW_SLOTS 4
#define SBN_ROW_SLOT_DOUBLES(C) ((size_t)(C) * (2 * 16 + 1))
#define SBN_PLANE_BLOCK 64 /* channels per plane-path task */

/*
 * Channel c of a MOMENTS walk again when the chunked pass left its mean or M2
 * non-finite: if every element is finite, *mean and *m2 are recomputed on x * 2^-k
 * (the same chunked scheme) and scaled back, so M2 is +Inf only when it passes
 * DBL_MAX; with a NaN or Inf element they are left as they are (moments_wide.c).
 */
void sbn__moments_wide(const sbn__walk *w, int64_t c, double *mean, double *m2);

/* Workspace bytes that sbn__channel_reduce needs for x's shape. */
size_t sbn__channel_reduce_bytes(const sbn_tensor *x);
/*
 * Per channel c, writes out[2c], out[2c+1]: for MOMENTS the mean and M2 over R
 * elements (0, 0 when R == 0); for SUMS and BACKWARD the two sums. `center` gives
 * the per-channel mean for BACKWARD (loaded through sbn__load1). `scratch` holds
 * sbn__channel_reduce_bytes(x) bytes, 8-byte aligned.
 */
void sbn__channel_reduce(sbn__reduce_kind kind, const sbn_tensor *dy_or_x, const sbn_tensor *x,
                         const sbn_tensor *center, double *out, double *scratch,
                         sbn_pool_t *pool);

/* ---- chunked elementwise maps (src/ops/channel_map.c) ---- */
/*
 * Per-channel affine maps, with coefficients in structure-of-arrays form, a [4][C]
 * double array (k0 of channel c at coef[c], k1 at coef[C + c], ...):
 *   SBN_MAP_NORMALIZE: out = (x - k0) * k1 + k2                 (in0 = x)
 *   SBN_MAP_BACKWARD:  out = (dy - k0 - (x - k1) * k2) * k3     (in0 = dy, in1 = x)
 * computed in double when a tensor is fp64, else in float (kernels.h). The caller's
 * coefficient block is SBN_MAP_COEF_DOUBLES * C doubles: the [4][C] coefficients,
 * then room the map uses for their [4][C] float form.
 */
#define SBN_MAP_COEF_DOUBLES 6
typedef enum sbn__map_kind { SBN_MAP_NORMALIZE, SBN_MAP_BACKWARD } sbn__map_kind;
void sbn__channel_map(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                      double *coef, sbn_tensor *out, sbn_pool_t *pool);

/* ---- the machine (src/core/machine.c) ---- */
typedef struct sbn__cache_level {
    int64_t bytes;      /* one instance (L1d, L2: per core) */
    int sharing;        /* CPUs sharing one instance; 0 when unknown */
    int64_t reported;   /* what sysconf said when that was not believed, else 0 */
    const char *source; /* where bytes came from, in words */
} sbn__cache_level;
typedef struct sbn__machine {
    int cpus;                  /* CPUs in this process's affinity mask */
    sbn__cache_level cache[3]; /* L1d, L2, L3 */
} sbn__machine;
/* The CPUs in this process's affinity mask now (the online CPUs when the mask cannot be
 * read); at least 1. The machine description keeps the count of its first read. */
int sbn__affinity_cpus(void);
/* This machine, read once per process (thread-safe). */
const sbn__machine *sbn__machine_get(void);
/* Bytes of this machine's level-1, 2 or 3 data cache (per instance): sbn__machine_get's. */
int64_t sbn__cache_bytes(int level);

/* ---- the one-pass schedule of batch_norm / batch_norm_backward (src/ops/one_pass.c) ---- */
/* The view of channels [c0, c0 + cn) of t (same strides). */
sbn_tensor sbn__channel_slice(const sbn_tensor *t, int64_t c0, int64_t cn);
/* Calls fn(ctx, lane, c0, cn) for every block, lane = the pool lane running it (0..T-1):
 * lane l runs blocks l, l + T, ... in order; no two calls with one lane overlap. */
typedef void (*sbn__block_fn)(void *ctx, int64_t lane, int64_t c0, int64_t cn);
void sbn__one_pass_run(int64_t channels, int64_t block, sbn__block_fn fn, void *ctx,
                       sbn_pool_t *pool);

/* ---- shared per-channel rules (src/ops/moments.c) ---- */
/* Chan's merge of (count_b, mean_b, m2_b) into (a): the single merge formula of the library. */
void sbn__moments_merge(sbn_moments *a, double count_b, double mean_b, double m2_b);
/* The status of several channels: SBN_NO_SAMPLES beats SBN_SINGLE_SAMPLE beats SBN_OK. */
sbn_status sbn__combine_status(sbn_status acc, sbn_status channel);
/* 1/sqrt(var + eps), or 0 when var + eps == 0 (PyTorch's convention). */
double sbn__invstd(double var, double eps);
/*
 * Writes mean/invstd (either may be NULL) of the merged moments of channel c and
 * updates running stats; returns SBN_NO_SAMPLES/SBN_SINGLE_SAMPLE/SBN_OK for this channel.
 */
sbn_status sbn__finish_channel(const sbn_moments *total, int64_t c, double momentum, double eps,
                               sbn_tensor *running_mean, sbn_tensor *running_var,
                               sbn_tensor *mean, sbn_tensor *invstd);

/*
 * The checks shared by the [W, C] gather ops: inputs[0] and inputs[1] are [W, C]
 * float matrices, inputs[2] the [W] counts; running stats optional, mean and
 * invstd required; momentum, eps; no output overlapping anything.
 */
sbn_status sbn__check_gather_args(const sbn__arg *inputs, double momentum, double eps,
                                  sbn_tensor *running_mean, sbn_tensor *running_var,
                                  sbn_tensor *mean, sbn_tensor *invstd);

#endif /* SBN_CORE_INTERNAL_H */
