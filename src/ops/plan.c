/*
 * plan.c - every schedule decision of the ops, in one place: how many of a pool's
 * threads a loop takes, how a pass is cut into tasks, whether a map's stores stream
 * past the cache and a reduction prefetches, whether channels-last rows are mapped in
 * tiles, and whether a training step runs in one pass over cache-sized blocks. Each
 * decision starts from the machine description (machine.c: the CPUs of the process and
 * the L1d, L2 and L3 sizes) and the call (bytes, channels, rows, layout, dtypes, the
 * team); each constant is named once below with the mechanism that sets it, and the
 * bench case that shows it (the measurements are in docs/performance.md). The
 * environment's overrides (SBN_STREAM_STORES, SBN_ROW_TILES, SBN_ONE_PASS_BYTES) come
 * parsed from env.c, and the tests' setters sit beside them. The engines (channel_reduce.c,
 * row_reduce.c, channel_map.c, one_pass.c) carry out what this file decides. No decision
 * changes a bit: every reduction's order is fixed by the shape alone (chunks of
 * SBN_CHUNK, merged in index order), and a map has no order to keep.
 */
#include "core/arith.h"
#include "core/env.h"
#include "core/machine.h"
#include "core/pool.h"
#include "kernels/kernels.h"
#include "ops/plan.h"
#include "ops/walk.h"
#include "syncbn/syncbn.h"

/* ---- teams: how many threads a loop takes ---- */

/*
 * A worker woken for a loop costs about a microsecond when it is spinning (its slot's
 * cache line, the loop's descriptor) and tens when it sleeps; a loop pays that once per
 * extra thread. So it runs on as many threads as its work keeps busy for
 * SBN_TEAM_MIN_NS each, never more than the pool nor the CPUs of the process (a pool of
 * 16 on 2 CPUs would time-slice its workers against the caller, which waits for each).
 * Work is estimated from what the loop moves or computes: SBN_NS_PER_BYTE streamed (a
 * core reads and writes about 20 GB/s from its caches), SBN_NS_PER_CHANNEL for a
 * channel's finish (two divisions and a square root, eight channels per vector
 * instruction, and a few elements of each per-channel vector converted a piece of
 * channels at a time: a nanosecond or two), SBN_NS_PER_COEFS for rounding a channel's
 * four map coefficients to float and checking their range (a vectorised loop), and
 * SBN_NS_PER_CHUNK for merging one chunk's partial moments (Chan's update, two more
 * divisions). An estimate too high makes a loop over a few thousand channels take
 * every thread for a microsecond's work each, and wait for the slowest of them.
 * Bench cases: bench_pool, small ops on pools of 1 to 16 threads (2x64x8x8 runs alike
 * on all); bench_ops 2x65536 and 8x2048, whose time is the per-channel steps.
 */
#define SBN_TEAM_MIN_NS 4000.0
#define SBN_NS_PER_BYTE 0.05
#define SBN_NS_PER_CHANNEL 3.0
#define SBN_NS_PER_COEFS 1.5
#define SBN_NS_PER_CHUNK 10.0

static int g_full_teams; /* sbn__plan_full_teams (tests) */
static int g_cpus;       /* sbn__plan_set_cpus (tests); 0: the machine's */

void sbn__plan_full_teams(int on)
{
    g_full_teams = on != 0;
}

void sbn__plan_set_cpus(int cpus)
{
    g_cpus = cpus > 0 ? cpus : 0;
}

int sbn__plan_width(const sbn_pool_t *pool, double work_ns)
{
    int threads = sbn_pool_threads(pool), cpus;
    double fit;
    if (threads <= 1) return 1; /* also NULL: sbn_pool_threads(NULL) is 1 */
    if (g_full_teams) return threads;
    cpus = g_cpus > 0 ? g_cpus : sbn__machine_get()->cpus;
    if (threads > cpus) threads = cpus;
    fit = work_ns / SBN_TEAM_MIN_NS;
    return fit < 1.0 ? 1 : fit < (double)threads ? (int)fit : threads;
}

double sbn__plan_stream_ns(const sbn_tensor *const *t, int n)
{
    double bytes = 0.0;
    int i;
    for (i = 0; i < n; i++)
        if (t[i] != NULL)
            bytes += (double)sbn_tensor_numel(t[i]) * (double)sbn_dtype_size(t[i]->dtype);
    return bytes * SBN_NS_PER_BYTE;
}

double sbn__plan_channels_ns(int64_t channels, int64_t chunks)
{
    return (double)channels * (SBN_NS_PER_CHANNEL + SBN_NS_PER_CHUNK * (double)chunks);
}

double sbn__plan_coefs_ns(int64_t channels)
{
    return (double)channels * SBN_NS_PER_COEFS;
}

sbn_pool_t *sbn__plan_team(sbn_pool_t *pool, double work_ns, sbn_pool_t *view)
{
    return sbn__pool_team(pool, sbn__plan_width(pool, work_ns), view);
}

/* ---- tasks: how a pass is cut ---- */

/*
 * Rows are split into segments of whole chunks (SBN_CHUNK rows of every channel),
 * channels into blocks; task t is (segment t / blocks, block t % blocks). Each thread
 * gets about one segment, so it sweeps one stretch of memory once, in order (segments
 * of a quarter of that length broke the hardware prefetchers' streams: bench_ops
 * 32x64x56x56 fp32 at 2 threads). A chunk never straddles two segments, so the split
 * changes speed, never bits.
 */
static void split_chunks(sbn__plan *plan, const sbn__walk *w, int64_t want)
{
    int64_t seg_chunks = (w->chunks + want - 1) / want;
    plan->segments = (w->chunks + seg_chunks - 1) / seg_chunks;
    plan->seg_rows = seg_chunks * SBN_CHUNK;
}

void sbn__plan_tasks(sbn__plan *plan, const sbn__walk *w, int64_t block, sbn_pool_t *pool)
{
    int64_t threads = sbn_pool_threads(pool), want;
    plan->block = block < 1 ? 1 : block;
    plan->blocks = w->channels > 0 ? (w->channels + plan->block - 1) / plan->block : 0;
    if (w->chunks == 0 || plan->blocks == 0) {
        plan->segments = plan->seg_rows = 0;
        return;
    }
    want = threads <= 1 ? 1 : (threads + plan->blocks - 1) / plan->blocks;
    split_chunks(plan, w, want > w->chunks ? w->chunks : want);
}

/*
 * Row maps split the rows: a channel split gives each thread a slice of every row, and
 * slices stream worse than whole rows (bench_ops 2x512x32x32 NHWC; 1x2048x4x4 NHWC at two
 * threads, 4 KiB slices). Except with fewer than SBN_ROW_MAP_MIN_ROWS rows a thread and
 * slices of SBN_ROW_MAP_MIN_SLICE bytes or more: then every thread of a row split reads
 * all C channels' coefficients (16 bytes a channel in float form, just written by another
 * core) for a few rows of data, twice the data at two fp32 rows, where a channel split
 * gives each thread its own C / T of them (bench_ops 2x16384 and 2x65536 at two threads).
 * The slices are whole cache lines of the output: no line is written by two threads.
 */
#define SBN_ROW_MAP_MIN_ROWS 32
#define SBN_ROW_MAP_MIN_SLICE 16384

/* Channels a cache line of the row map's output holds. */
static int64_t line_channels(const sbn__walk *w)
{
    return SBN_LINE_BYTES / (int64_t)sbn_dtype_size(w->dtype[w->ntensors - 1]);
}

/* Whether a row map on `threads` threads splits the channels (the rule above). */
static int row_map_splits_channels(const sbn__walk *w, int64_t threads)
{
    int64_t out_bytes = (int64_t)sbn_dtype_size(w->dtype[w->ntensors - 1]);
    return threads > 1 && w->reduction < SBN_ROW_MAP_MIN_ROWS * threads &&
           w->channels * out_bytes >= SBN_ROW_MAP_MIN_SLICE * threads;
}

/* At most `block` channels rounded up to whole lines of the output. */
static int64_t whole_lines(const sbn__walk *w, int64_t block)
{
    int64_t line = line_channels(w);
    return (block + line - 1) / line * line;
}

void sbn__plan_row_map(sbn__plan *plan, const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = sbn_pool_threads(pool);
    plan->block = w->channels > 0 ? w->channels : 1;
    plan->blocks = w->channels > 0 ? 1 : 0;
    if (w->reduction == 0 || plan->blocks == 0) {
        plan->segments = plan->seg_rows = 0;
        return;
    }
    if (row_map_splits_channels(w, threads)) {
        plan->block = whole_lines(w, (w->channels + threads - 1) / threads);
        plan->blocks = (w->channels + plan->block - 1) / plan->block;
        plan->segments = 1;
        plan->seg_rows = w->reduction;
        return;
    }
    plan->segments = threads < w->reduction ? threads : w->reduction;
    plan->seg_rows = (w->reduction + plan->segments - 1) / plan->segments;
    plan->segments = (w->reduction + plan->seg_rows - 1) / plan->seg_rows;
}

void sbn__plan_task(const sbn__plan *plan, const sbn__walk *w, int64_t t, int64_t *r0,
                    int64_t *r1, int64_t *c0, int64_t *cn)
{
    int64_t s = t / plan->blocks, b = t % plan->blocks;
    *r0 = s * plan->seg_rows;
    *r1 = *r0 + plan->seg_rows;
    if (*r1 > w->reduction) *r1 = w->reduction;
    *c0 = b * plan->block;
    *cn = w->channels - *c0 < plan->block ? w->channels - *c0 : plan->block;
}

/*
 * A row map whose coefficients come from a per-channel step (the ops' finishing:
 * statistics to invstd, running statistics, weight and bias, and the float form) runs
 * that step inside its own tasks, a block of channels at a time, right before mapping
 * the block: one loop instead of two, and the block's per-channel vectors (about
 * SBN_COEF_CHANNEL_BYTES a channel, in and out) are written and read again while they
 * sit in the L2, where a pass over each vector of 10^5 channels goes to the L3 (bench_ops
 * 2x100000 and 8x65536 at one thread; 32x4096 at two, where the finishing ran on one
 * thread between two loops). Only where a task covers every row of its channels anyway:
 * with one thread, up to SBN_ROW_MAP_MIN_ROWS rows (beyond, the rows' own traffic hides
 * the per-channel passes), and with more the row map's channel split above. The block is
 * half the L2 worth of per-channel vectors, at most an even share of the channels, in
 * whole cache lines of the output.
 */
#define SBN_COEF_CHANNEL_BYTES 128

static int g_coef_blocks = -1; /* sbn__coef_blocks_set (tests) */

void sbn__coef_blocks_set(int mode)
{
    g_coef_blocks = mode < 0 ? -1 : mode != 0;
}

int sbn__plan_coef_blocks(sbn__plan *plan, const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = sbn_pool_threads(pool), block, share;
    if (w->reduction == 0 || w->channels == 0 || g_coef_blocks == 0) return 0;
    if (g_coef_blocks == 1) { /* tests: blocks of two lines, many tasks */
        block = 2 * line_channels(w);
    } else {
        if (threads <= 1 ? w->reduction > SBN_ROW_MAP_MIN_ROWS
                         : !row_map_splits_channels(w, threads))
            return 0;
        block = sbn__cache_bytes(2) / 2 / SBN_COEF_CHANNEL_BYTES;
        share = (w->channels + threads - 1) / threads;
        block = whole_lines(w, block < share ? block : share);
    }
    plan->block = block;
    plan->blocks = (w->channels + block - 1) / block;
    plan->segments = 1;
    plan->seg_rows = w->reduction;
    return 1;
}

int64_t sbn__plan_block_all(const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = sbn_pool_threads(pool);
    return w->chunks < threads ? (w->channels + threads - 1) / threads : w->channels;
}

/*
 * The plane maps split the channels in T blocks also when T segments of whole chunks
 * would be uneven: when the largest (ceil(chunks / T) chunks) holds more than
 * SBN_UNEVEN_NUM / SBN_UNEVEN_DEN of an even share of the rows, the slowest thread would
 * wait longer than the cost of reading channel blocks in short pieces (bench_ops
 * 32x512x14x14 NCHW at 2 threads: 4 chunks of rows mapped as 4096 and 2176). The row
 * reductions keep whole-chunk segments: split by channels, the sums of two tensors read
 * half rows (bench_ops 32x512x14x14 NHWC backward).
 */
#define SBN_UNEVEN_NUM 9
#define SBN_UNEVEN_DEN 8

int64_t sbn__plan_block_map(const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = sbn_pool_threads(pool), largest;
    if (threads <= 1 || w->chunks < threads) return sbn__plan_block_all(w, pool);
    largest = (w->chunks + threads - 1) / threads * SBN_CHUNK;
    if (largest > w->reduction) largest = w->reduction;
    if (largest * threads * SBN_UNEVEN_DEN > w->reduction * SBN_UNEVEN_NUM)
        return (w->channels + threads - 1) / threads;
    return w->channels;
}

void sbn__plan_cap_segments(sbn__plan *plan, const sbn__walk *w, int64_t max_segments)
{
    if (plan->segments <= max_segments) return;
    split_chunks(plan, w, max_segments);
}

/* ---- stores and prefetch: beyond the cache ---- */

/*
 * A cached store reads its line before writing it, so a map from memory to memory
 * moves 3 bytes per 2; a non-temporal store skips that read but also skips the cache,
 * which loses while the tensors fit: the output stays in the L3 for whoever reads it
 * next. So a map streams its stores once its tensors pass SBN_MAP_STREAM_SHARE of the
 * L3 (one instance also where there are several: the next op's threads read another
 * core complex's or socket's L3 at about the cost of memory; the rest of the L3 holds
 * what else the program keeps there; bench_ops
 * 32x128x28x28 and 4096x1024 fp32 eval on either side of the L3 size). Channels-last
 * row maps stream from SBN_ROWS_STREAM_SHARE: their traffic to the L3 is what they wait
 * on, and streaming leaves the L1 to x and the coefficients (bench_ops 32x2048x7x7 NHWC
 * eval); with 2 or more threads only rows that write SBN_ROWS_STREAM_MIN_BYTES or more,
 * since narrower rows write partial lines from several threads (bench_ops bf16
 * 32x64x56x56 NHWC eval). A plane map streams only runs of SBN_STREAM_RUN_BYTES or more:
 * each run's head before its first full line goes through the cache, and lines shared
 * between cached and streamed neighbours cost more than they save (bench_ops fp32 eval
 * of 64x2048x7x7 against 32x512x28x28 NCHW); for the same reason rows narrower than
 * SBN_ROWS_STREAM_MIN_BYTES stream only when they are whole lines (bench_ops fp32
 * 32x24x56x56 and 32x80x28x28 NHWC eval, against 32x48x56x56). The reductions' inputs,
 * just written by the op before, stay in an L3 they fit; the row reductions (AVX2,
 * AVX-512) prefetch the next block of short rows once their inputs pass
 * SBN_REDUCE_PREFETCH_SHARE, where the rest of the op's traffic evicts them (bench_ops
 * bf16 32x64x56x56 NHWC backward).
 */
#define SBN_STREAM_RUN_BYTES 2048

static int g_beyond_override = -1; /* sbn__stream_stores_set (tests) */

void sbn__stream_stores_set(int mode)
{
    g_beyond_override = mode < 0 ? -1 : mode != 0;
}

int sbn__beyond_cache(const sbn_tensor *const *t, int n, double share, int suits)
{
    int env_mode = sbn__env_get()->stream_stores; /* -1 when unset or invalid */
    double bytes = 0.0;
    int i;
    if (g_beyond_override >= 0) return g_beyond_override;
    if (env_mode >= 0) return env_mode;
    if (!suits) return 0;
    for (i = 0; i < n; i++)
        bytes += (double)sbn_tensor_numel(t[i]) * (double)sbn_dtype_size(t[i]->dtype);
    return bytes > share * (double)sbn__cache_bytes(3);
}

/* Whether the output is written in stretches long enough for non-temporal stores: rows
 * (consecutive rows are consecutive memory in the row path's tensors) of
 * SBN_ROWS_STREAM_MIN_BYTES or more, or narrower ones of whole lines (row_bytes), planes
 * when a run spans SBN_STREAM_RUN_BYTES or more in every tensor. */
static int long_runs(const sbn__walk *w, int rows, int64_t row_bytes)
{
    int i;
    if (rows) return row_bytes >= SBN_ROWS_STREAM_MIN_BYTES || row_bytes % SBN_LINE_BYTES == 0;
    for (i = 0; i < w->ntensors; i++)
        if (w->stride[i][w->ndims - 1] != 1 ||
            w->size[w->ndims - 1] * (int64_t)sbn_dtype_size(w->dtype[i]) < SBN_STREAM_RUN_BYTES)
            return 0;
    return 1;
}

int sbn__plan_map_stores(const sbn_tensor *const *t, int n, const sbn__walk *w, int rows,
                         const sbn_pool_t *pool, int *beyond_l3)
{
    int one_thread = sbn_pool_threads(pool) == 1, streaming;
    int64_t row_bytes = w->channels * (int64_t)sbn_dtype_size(t[n - 1]->dtype);
    double share = rows && (one_thread || row_bytes >= SBN_ROWS_STREAM_MIN_BYTES)
                       ? SBN_ROWS_STREAM_SHARE
                       : SBN_MAP_STREAM_SHARE;
    streaming = sbn__beyond_cache(t, n, share, long_runs(w, rows, row_bytes));
    *beyond_l3 = streaming && sbn__beyond_cache(t, n, 1.0, 1);
    return streaming;
}

/*
 * Short runs (NCHW planes of fp32 up to 8x8, of fp16 and bf16 up to 11x11) are reduced a
 * channel at a time over a window of images (channel_reduce.c): a channel's runs of one
 * image lie C runs apart, and a visit reads the one to five lines of each, of which only
 * the first may have come in with the previous channel's run.
 * Such visits give the hardware prefetchers nothing to follow, within a run or across
 * them, so each line waits its whole latency, which from memory the out-of-order window
 * cannot cover; the engine then prefetches the next channel's runs of the window while
 * it reduces this one. Runs of more than SBN_PREFETCH_RUN_BYTES a tensor (fp32 9x9,
 * bf16 12x12 and up) are long enough for the prefetchers, and within the cache the
 * prefetches only cost (bench_prefetch: the backward reduction and the statistics of
 * 32x2048x7x7, 128x512x7x7 and 64x1024x8x8 fp32 NCHW, against 8x2048x7x7 and 16x2048x7x7
 * in the cache, 64x512x10x10 fp32 and 32x1024x14x14). SBN_PREFETCH_RUN_BYTES is in
 * plan.h, for `syncbn info`.
 */

int sbn__plan_prefetch_runs(const sbn__walk *w, int beyond_cache)
{
    int i;
    if (!beyond_cache || !sbn__walk_short_runs(w)) return 0;
    for (i = 0; i < w->ntensors; i++)
        if (w->size[1] * (int64_t)sbn_dtype_size(w->dtype[i]) > SBN_PREFETCH_RUN_BYTES) return 0;
    return 1;
}

/* ---- whole chunks in registers ---- */

/*
 * A chunk of at most SBN_ROW_CHUNK_WHOLE_MAX_ROWS rows (eight a lane) goes whole to the
 * row_chunk kernels, whose lanes stay in registers: for such a chunk the row kernels
 * store 16 lanes x 2 sums per channel for a few rows of each and the fold reads them
 * back, more traffic than the rows, and with tens of thousands of channels those lanes
 * alone pass the L2 (bench_ops 48x24000, 64x8192, 100x3000, 2x4096x7x7 NHWC at one
 * thread). Longer chunks lose to the lanes (256x1024, 512x1024 with up to 512 rows whole)
 * where the kernels walk each group's column down every row (AVX-512). Kernels that take
 * longer chunks a slice of channels at a time, its lanes in the L1 (row_chunk_sliced:
 * AVX2, scalar), keep winning up to SBN_ROW_CHUNK_WHOLE_SLICED_ROWS (16 a lane): each
 * slice reads a few lines of every row, and the lines the prefetchers fetch beyond them
 * must outlast a pass down all the rows to serve the next slice, which 512 rows of a
 * 512 KiB L2 do not (the kernels alone against row_accum and fold_rows, 128-2048 rows;
 * bench_ops 1x512x14x14 and 4x1024x7x7 NHWC, 160x2048; docs/performance.md).
 */
#define SBN_ROW_CHUNK_WHOLE_MAX_ROWS 128
#define SBN_ROW_CHUNK_WHOLE_SLICED_ROWS 256

int sbn__plan_row_chunk_whole(const struct sbn_kernels *k, int64_t rows)
{
    return rows <= (k->row_chunk_sliced ? SBN_ROW_CHUNK_WHOLE_SLICED_ROWS
                                        : SBN_ROW_CHUNK_WHOLE_MAX_ROWS);
}

/*
 * A whole chunk's walk down a column of lines is one stream per row and tensor read.
 * Beyond the L2 its lines come from the L3 or memory, and past SBN_PREFETCH_STREAMS
 * streams the hardware prefetchers lose them, so each line waits its full latency: such
 * a chunk takes the prefetching kernels of the tables beyond the cache
 * (row_chunk_avx512.c; bench_ops 32x65536 and 32x16384 backward, 64x16384 and 48x24000
 * forward, at one thread). With 32 streams (a forward of 32 rows: 32x16384, 16x65536)
 * the prefetches cost more than they hide, and so they do within the L2 (2x2048x7x7
 * bf16 NHWC backward).
 */
#define SBN_PREFETCH_STREAMS 32

int sbn__plan_row_chunk_prefetch(int tensors, int64_t rows, int64_t row_bytes)
{
    return rows * tensors > SBN_PREFETCH_STREAMS && rows * row_bytes > sbn__cache_bytes(2);
}

/* ---- row tiles ---- */

/*
 * Rows whose coefficients and elements together exceed the L1 (fp32 normalize over 2048
 * channels: 24 KiB of float coefficients and 8 KiB of x and of y a row) are mapped in
 * tiles of SBN_ROW_TILE channels x SBN_ROW_TILE_ROWS rows, so that a tile's coefficients
 * stay in the L1 for its rows; a row at a time, each row's coefficients come back from
 * the L2 (bench_kernels row_normalize over 2048 channels; bench_ops 8x2048x7x7 NHWC
 * eval). Beyond the L3 the rows stream their stores and tiles would break the streams:
 * whole rows there. Elementwise maps: the tiles change no bit.
 */
#define SBN_ROW_TILE 512
#define SBN_ROW_TILE_ROWS 16

static int g_row_tiles = -1; /* sbn__row_tiles_set (tests) */

void sbn__row_tiles_set(int mode)
{
    g_row_tiles = mode < 0 ? -1 : mode != 0;
}

int64_t sbn__plan_row_tile(const sbn__walk *w, int rows, int kd, int float_coefs, int backward,
                           int beyond_l3, int64_t *tile_rows)
{
    int64_t per_channel = (backward ? 4 : 3) * (float_coefs ? 4 : 8);
    int i, mode = g_row_tiles;
    *tile_rows = SBN_ROW_TILE_ROWS;
    if (!rows || kd < 0) return 0;
    if (mode < 0) mode = sbn__env_get()->row_tiles; /* -1 when unset or invalid */
    if (mode >= 0) return mode ? SBN_ROW_TILE : 0;
    if (beyond_l3) return 0;
    for (i = 0; i < w->ntensors; i++) per_channel += (int64_t)sbn_dtype_size(w->dtype[i]);
    return w->channels > SBN_ROW_TILE && w->channels * per_channel > sbn__cache_bytes(1)
               ? SBN_ROW_TILE
               : 0;
}

/* ---- one pass ---- */

/*
 * A training step reads x (and dy) twice, to reduce and to map. One pass over blocks of
 * channels (one_pass.c) reads each block a second time from the cache it sits in, with
 * half a core's L2 as the budget of a block's inputs. The size rule, channels-first only
 * (a channels-last block reads a slice of every row, wasting most of each line):
 *  - with 2 or more threads, inputs (R x C x bytes per element) that fit the team's
 *    budgets together: each thread's blocks stay in its own L2 from the reduction to the
 *    map, where two passes would read most of the second from other cores' caches
 *    (bench_ops 2x512x32x32 and 8x256x28x28 NCHW at 16 threads);
 *  - otherwise inputs within half the L3 whose blocks are read in N pieces of
 *    SBN_ONE_PASS_MIN_PIECE or more: the second read then comes from the L2 instead of
 *    the L3. Only with an L2 of SBN_ONE_PASS_L3_L2 or more: beside a 1 MiB L2 a sweep's
 *    second pass from the L3 was as fast as the blocks' from the L2, so the blocks' shorter
 *    streams only cost (Zen 4 and 5: 8x256x28x28 fp32 NCHW backward, at one thread and at
 *    two), while with a 2 MiB L2 and a mesh L3 it is not (Xeon: 2x512x32x32 and
 *    8x256x28x28 backward, 32x64x56x56 fwd-train). Shorter pieces stream badly (the
 *    hardware prefetchers restart at each piece and stop at page ends): pieces of 16 KiB
 *    lost on a 1 MiB-L2 machine, 25-32 KiB won on a 2 MiB-L2 one (bench/scale.sh's closing
 *    A/B, 32x64x56x56 fp32 and 32x2048x7x7 bf16 NCHW). From memory it never pays: N
 *    scattered pieces stream far slower than the whole tensor in memory order.
 * The block is budget / (R x bytes per element) channels, at most C / 2T, so that there
 * are at least 2T blocks (each lane's scratch and coefficients then fit in the two-pass
 * workspace); a channels-last block forced by a budget is a multiple of
 * SBN_ONE_PASS_MIN_ROW_BYTES a row (narrower slices waste most of each line).
 */
#define SBN_ONE_PASS_MIN_PIECE ((int64_t)24 << 10)
#define SBN_ONE_PASS_MIN_ROW_BYTES 512
#define SBN_ONE_PASS_L3_L2 ((int64_t)2 << 20)
#define ONE_PASS_BY_SIZE (-2) /* budget_bytes: no setting, decide by size */

static int64_t g_budget_override = -1; /* sbn__one_pass_set_budget (tests) */

void sbn__one_pass_set_budget(int64_t bytes)
{
    g_budget_override = bytes < 0 ? -1 : bytes;
}

/* The per-thread byte budget set by a test or the environment; 0 when the schedule is
 * off, ONE_PASS_BY_SIZE when nothing is set. */
static int64_t budget_bytes(void)
{
    int64_t env = sbn__env_get()->one_pass_bytes; /* -1 when unset or invalid */
    if (g_budget_override >= 0) return g_budget_override;
    return env >= 0 ? env : ONE_PASS_BY_SIZE;
}

static int64_t budget_by_size(const sbn_tensor *x, int64_t r, size_t bytes_per_element,
                              int64_t threads)
{
    int64_t inputs, budget = sbn__cache_bytes(2) / 2;
    if (x->strides[1] == 1) return 0;
    if (!sbn__mul_i64(r * x->shape[1], (int64_t)bytes_per_element, &inputs)) return 0;
    if (threads >= 2 && inputs <= threads * budget) return budget;
    if (inputs > sbn__cache_bytes(3) / 2) return 0;
    if (sbn__cache_bytes(2) < SBN_ONE_PASS_L3_L2) return 0;
    return budget / x->shape[0] >= SBN_ONE_PASS_MIN_PIECE ? budget : 0;
}

int64_t sbn__one_pass_block(const sbn_tensor *x, size_t bytes_per_element, sbn_pool_t *pool)
{
    int64_t channels = x->shape[1], r = sbn_tensor_numel(x) / (channels > 0 ? channels : 1);
    int64_t threads = sbn_pool_threads(pool), budget = budget_bytes(), per_channel, block;
    if (r == 0 || channels < 2) return 0;
    if (budget == ONE_PASS_BY_SIZE) budget = budget_by_size(x, r, bytes_per_element, threads);
    if (budget == 0) return 0;
    if (!sbn__mul_i64(r, (int64_t)bytes_per_element, &per_channel)) return 0;
    block = budget / per_channel;
    if (block > channels / (2 * threads)) block = channels / (2 * threads);
    if (block < 1) return 0;
    if (x->strides[1] == 1) { /* channels-last: a block reads `block` neighbours of each row */
        int64_t quantum = SBN_ONE_PASS_MIN_ROW_BYTES / (int64_t)bytes_per_element;
        if (quantum < 1) quantum = 1;
        if (block < quantum) return 0;
        block -= block % quantum;
    }
    return block;
}
