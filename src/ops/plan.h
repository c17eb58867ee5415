/*
 * plan.h - every schedule decision of the library (plan.c): how a pass is split into
 * tasks, how many threads a loop wakes, whether a map streams its stores past the
 * cache, the row tiles, the one-pass schedule's blocks. Each decision follows the
 * machine (core/machine.h), the pool and the tensors' sizes, and changes speed only:
 * no decision changes a bit of any result. The setters are for tests; the
 * environment's switches (core/env.h) set the same modes.
 */
#ifndef SBN_OPS_PLAN_H
#define SBN_OPS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ops/walk.h"
#include "syncbn/syncbn.h"

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
/* A row map that computes its coefficients itself (sbn__channel_map_with): 1 when each
 * task should produce and map one block of channels over every row (plan filled in),
 * 0 when the coefficients are better produced in a loop of their own first. */
int sbn__plan_coef_blocks(sbn__plan *plan, const sbn__walk *w, sbn_pool_t *pool);
/* -1 by size (the default), 0 never, 1 wherever the map allows it, in blocks of two cache
 * lines of the output (tests). Speed only, never bits. */
void sbn__coef_blocks_set(int mode);
void sbn__plan_tasks(sbn__plan *plan, const sbn__walk *w, int64_t block, sbn_pool_t *pool);
/* The block for passes with no per-channel state to carry (row reductions; the plane
 * maps start from it): every channel, or C / T when there are fewer chunks than threads. */
int64_t sbn__plan_block_all(const sbn__walk *w, sbn_pool_t *pool);
/* The plane maps' block: the same, and C / T also when T segments of whole chunks
 * would be uneven (the largest over 9/8 of an even share of the rows). */
int64_t sbn__plan_block_map(const sbn__walk *w, sbn_pool_t *pool);
/* At most max_segments segments (longer ones). */
void sbn__plan_cap_segments(sbn__plan *plan, const sbn__walk *w, int64_t max_segments);
/* Rows [r0, r1) and channels [c0, c0 + cn) of task t. */
void sbn__plan_task(const sbn__plan *plan, const sbn__walk *w, int64_t t, int64_t *r0,
                    int64_t *r1, int64_t *c0, int64_t *cn);

/* The shares of the L3 beyond which a map streams its stores (channels-last rows: on one
 * thread, or with rows of SBN_ROWS_STREAM_MIN_BYTES or more) and a reduction prefetches
 * (short rows; short runs of SBN_PREFETCH_RUN_BYTES a tensor or less); the mechanism is
 * in plan.c, and `syncbn info` prints them. */
#define SBN_MAP_STREAM_SHARE 0.9
#define SBN_ROWS_STREAM_SHARE 0.5
#define SBN_ROWS_STREAM_MIN_BYTES 512
#define SBN_REDUCE_PREFETCH_SHARE 0.5
#define SBN_PREFETCH_RUN_BYTES 256
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
/* Whether the row path reduces a whole chunk of `rows` rows in one call of k's row_chunk
 * kernels (lanes in registers, or a slice of channels at a time in the L1) rather than
 * with its lanes in the workspace. */
struct sbn_kernels;
int sbn__plan_row_chunk_whole(const struct sbn_kernels *k, int64_t rows);
/* Whether such a whole chunk, row_bytes a row (the task's channels of each of the
 * `tensors` tensors it reads), takes the kernels that prefetch its rows, those of the
 * tables beyond the cache. Speed only, never bits. */
int sbn__plan_row_chunk_prefetch(int tensors, int64_t rows, int64_t row_bytes);
/* Whether a reduction over the short runs of w (sbn__walk_short_runs), whose inputs are
 * beyond the cache as sbn__beyond_cache says, prefetches each next channel's runs. Speed
 * only, never bits. */
int sbn__plan_prefetch_runs(const sbn__walk *w, int beyond_cache);
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
/* The work of rounding `channels` channels' map coefficients to float. */
double sbn__plan_coefs_ns(int64_t channels);
/* 1: every loop on the pool's full width (tests, so they get the splits they ask for). */
void sbn__plan_full_teams(int on);
/* Plans as if the process had `cpus` CPUs (tests, to take team widths a small machine
 * would not); 0: the machine's. */
void sbn__plan_set_cpus(int cpus);

#endif /* SBN_OPS_PLAN_H */
