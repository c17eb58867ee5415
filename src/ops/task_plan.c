/*
 * task_plan.c - how the reduction and map engines cut one pass into tasks for the pool.
 * Rows are split into segments of whole chunks (SBN_CHUNK rows of every channel),
 * channels into blocks; task t is (segment t / blocks, block t % blocks). Each thread
 * gets about one segment (T / blocks segments, at least one), so it sweeps one stretch
 * of memory once in order: measured on 32x64x56x56 fp32 with 2 threads, 4T segments ran
 * at 53-76% of the reference kernel, T segments at 85-100%. Because a chunk never
 * straddles two segments, the split changes speed, never bits. When T segments of whole
 * chunks would be uneven, the plane maps split the channels instead
 * (sbn__plan_block_map).
 */
#include "core/internal.h"

/* At most `want` (>= 1) segments of whole chunks, as even as chunks allow. */
static void split_chunks(sbn__plan *plan, const sbn__walk *w, int64_t want)
{
    int64_t seg_chunks = (w->chunks + want - 1) / want;
    plan->segments = (w->chunks + seg_chunks - 1) / seg_chunks;
    plan->seg_rows = seg_chunks * SBN_CHUNK;
}

void sbn__plan_tasks(sbn__plan *plan, const sbn__walk *w, int64_t block, sbn_pool_t *pool)
{
    int64_t threads = pool ? sbn_pool_threads(pool) : 1, want;
    plan->block = block < 1 ? 1 : block;
    plan->blocks = w->channels > 0 ? (w->channels + plan->block - 1) / plan->block : 0;
    if (w->chunks == 0 || plan->blocks == 0) {
        plan->segments = plan->seg_rows = 0;
        return;
    }
    want = threads <= 1 ? 1 : (1 * threads + plan->blocks - 1) / plan->blocks;
    split_chunks(plan, w, want > w->chunks ? w->chunks : want);
}

/*
 * Splitting the channels of a short channels-last tensor instead (fewer chunks than
 * threads) gave each thread a slice of every row: 2x512x32x32 fp32 NHWC training
 * batch_norm ran no faster on 2 threads than on 1 (341 vs 320 us), the map alone
 * slower; contiguous row ranges stream like the one-thread sweep.
 */
void sbn__plan_row_map(sbn__plan *plan, const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = pool ? sbn_pool_threads(pool) : 1;
    plan->block = w->channels > 0 ? w->channels : 1;
    plan->blocks = w->channels > 0 ? 1 : 0;
    if (w->reduction == 0 || plan->blocks == 0) {
        plan->segments = plan->seg_rows = 0;
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

int64_t sbn__plan_block_all(const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = pool ? sbn_pool_threads(pool) : 1;
    return w->chunks < threads ? (w->channels + threads - 1) / threads : w->channels;
}

/*
 * The plane maps take sbn__plan_block_all's block, unless T segments of whole chunks
 * would be uneven: when the largest (ceil(chunks / T) chunks) holds more than 9/8 of an
 * even share of the rows, the channels go in T blocks (then one segment: each thread maps
 * every row of its channels). 32x512x14x14 has 4 chunks of rows (6272): two threads
 * mapped 4096 and 2176 rows. bench_ops binaries before/after, 2 threads NCHW, 2 ABBA
 * rounds, min/median of medians ms: fp32 32x512x14x14 eval 0.265/0.585 -> 0.229/0.401,
 * bwd 1.216/1.989 -> 1.098/1.733; bf16 eval 0.213/0.250 -> 0.167/0.216, fwd-train
 * 0.507/0.686 -> 0.437/0.604; 8x256x28x28 fp32 eval 0.095/0.131 -> 0.075/0.095. The row
 * reductions keep whole-chunk segments: split by channels, fp32 channels-last backward
 * sums (dy and x, half rows of 1 KiB on each thread) ran 1.3-1.6x slower
 * (32x512x14x14 backward_reduce 0.54-0.61 -> 0.78-1.2 ms), although statistics gained.
 */
int64_t sbn__plan_block_map(const sbn__walk *w, sbn_pool_t *pool)
{
    int64_t threads = pool ? sbn_pool_threads(pool) : 1, largest;
    if (threads <= 1 || w->chunks < threads) return sbn__plan_block_all(w, pool);
    largest = (w->chunks + threads - 1) / threads * SBN_CHUNK;
    if (largest > w->reduction) largest = w->reduction;
    if (largest * threads * 8 > w->reduction * 9) return (w->channels + threads - 1) / threads;
    return w->channels;
}

void sbn__plan_cap_segments(sbn__plan *plan, const sbn__walk *w, int64_t max_segments)
{
    if (plan->segments <= max_segments) return;
    split_chunks(plan, w, max_segments);
}
