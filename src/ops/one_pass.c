/*
 * one_pass.c - the one-pass schedule of the single-process ops (batch_norm and
 * batch_norm_backward in training). Two passes read x (and dy) from memory twice:
 * once to reduce, once to map. When the slice of one block of channels fits in a
 * thread's share of its L2 cache, the block can be reduced and then mapped while
 * it is still there, so memory sees each byte of the inputs once. The channels are
 * cut into blocks of `block` channels; the pool's T threads each run one lane (each
 * with its own slice of the op's scratch) that takes blocks from a shared counter
 * until none is left, so a worker that joins late (still waking) takes fewer blocks
 * instead of holding up a fixed share, and each block runs the same serial reduction
 * and map as the two-pass engine restricted to its channels: every channel's chunks,
 * lanes and merge order are those of the whole-tensor pass, so the bits do not change
 * (test_one_pass).
 *
 * The block: budget / (R x bytes per element read) channels, at most C / 2T (so there
 * are at least 2T blocks: each lane's scratch and coefficients then fit in the
 * two-pass workspace), where budget is SBN_ONE_PASS_BYTES (parsed by env.c: bytes up to
 * 2^40; "l2" means half the L2 per core; 0 turns the schedule off; a bad value is
 * ignored), else the size rule of budget_by_size, which
 * asks the machine description: one pass pays where the second read of a block would
 * otherwise come from a slower level than the one the block sits in (another core's
 * cache, or the L3 instead of this core's L2). It never pays from memory: a block of a
 * few channels of an NCHW tensor is read as N scattered plane-sized pieces, which
 * stream far slower than the whole tensor in memory order, and short pieces (under 24
 * KiB, six pages) stream badly even from the L3 (docs/performance.md has the
 * measurements either side of that length). Channels-last blocks read a slice of every row,
 * which wastes most of each cache line unless a block's row spans 512 bytes or more;
 * the size rule leaves them to two passes (tests force them with budgets).
 */
#include <stdatomic.h>

#include "core/env.h"
#include "core/internal.h"

#define ONE_PASS_BY_SIZE (-2) /* budget_bytes: no setting, decide by size */
#define ONE_PASS_MIN_PIECE ((int64_t)24 << 10)
#define ONE_PASS_MIN_ROW_BYTES 512

static int64_t g_budget_override = -1; /* sbn__one_pass_set_budget (tests) */

/* The per-thread byte budget of a block's inputs set by a test or the environment; 0
 * when the schedule is off, ONE_PASS_BY_SIZE when nothing is set. */
static int64_t budget_bytes(void)
{
    int64_t env = sbn__env_get()->one_pass_bytes; /* -1 when unset or invalid */
    if (g_budget_override >= 0) return g_budget_override;
    return env >= 0 ? env : ONE_PASS_BY_SIZE;
}

/*
 * The size rule, for channels-first tensors, with half a core's L2 as the budget:
 *  - when 2 or more threads share inputs (R x C x bytes_per_element) that fit in their
 *    L2 budgets together, each thread's blocks stay in its own L2 from the reduction to
 *    the map, where two passes would read most of the second from other cores' caches;
 *  - otherwise, at any thread count, when the inputs fit in half the L3 and a block is
 *    read in pieces of 24 KiB or more (budget / N): the second read of each block then
 *    comes from the L2 instead of the L3.
 * Else 0 (two passes).
 */
static int64_t budget_by_size(const sbn_tensor *x, int64_t r, size_t bytes_per_element,
                              int64_t threads)
{
    int64_t inputs, budget = sbn__cache_bytes(2) / 2;
    if (x->strides[1] == 1) return 0;
    if (!sbn__mul_i64(r * x->shape[1], (int64_t)bytes_per_element, &inputs)) return 0;
    if (threads >= 2 && inputs <= threads * budget) return budget;
    if (inputs > sbn__cache_bytes(3) / 2) return 0;
    /* a block is read as shape[0] pieces of budget / shape[0] bytes: short ones stream
     * badly (the hardware prefetchers restart at every piece and stop at page ends) */
    return budget / x->shape[0] >= ONE_PASS_MIN_PIECE ? budget : 0;
}

void sbn__one_pass_set_budget(int64_t bytes)
{
    g_budget_override = bytes < 0 ? -1 : bytes;
}

int64_t sbn__one_pass_block(const sbn_tensor *x, size_t bytes_per_element, sbn_pool_t *pool)
{
    int64_t channels = x->shape[1], r = sbn_tensor_numel(x) / (channels > 0 ? channels : 1);
    int64_t threads = pool ? sbn_pool_threads(pool) : 1, budget = budget_bytes(), per_channel;
    int64_t block;
    if (r == 0 || channels < 2) return 0;
    if (budget == ONE_PASS_BY_SIZE) budget = budget_by_size(x, r, bytes_per_element, threads);
    if (budget == 0) return 0;
    if (!sbn__mul_i64(r, (int64_t)bytes_per_element, &per_channel)) return 0;
    block = budget / per_channel;
    /* at least 2T blocks: each lane's scratch and coefficients then fit the workspace */
    if (block > channels / (2 * threads)) block = channels / (2 * threads);
    if (block < 1) return 0;
    if (x->strides[1] == 1) { /* channels-last: a block reads `block` neighbours of each row */
        int64_t quantum = ONE_PASS_MIN_ROW_BYTES / (int64_t)bytes_per_element;
        if (quantum < 1) quantum = 1;
        if (block < quantum) return 0;
        block -= block % quantum;
    }
    return block;
}

sbn_tensor sbn__channel_slice(const sbn_tensor *t, int64_t c0, int64_t cn)
{
    sbn_tensor s = *t;
    s.data = (char *)t->data + c0 * t->strides[1] * (int64_t)sbn_dtype_size(t->dtype);
    s.shape[1] = cn;
    return s;
}

typedef struct lanes_job {
    sbn__block_fn fn;
    void *ctx;
    int64_t channels, block;
    atomic_llong next; /* the next block to hand out */
} lanes_job;

/* Lane `lane` takes blocks from the shared counter until none is left: a thread that
 * joins the loop late (a worker still waking) takes fewer blocks, not a fixed half. */
static void run_lanes(void *ctx, int64_t begin, int64_t end)
{
    lanes_job *job = ctx;
    int64_t lane;
    for (lane = begin; lane < end; lane++)
        for (;;) {
            int64_t c0 = (int64_t)atomic_fetch_add(&job->next, 1) * job->block, cn;
            if (c0 >= job->channels) break;
            cn = job->channels - c0 < job->block ? job->channels - c0 : job->block;
            job->fn(job->ctx, lane, c0, cn);
        }
}

void sbn__one_pass_run(int64_t channels, int64_t block, sbn__block_fn fn, void *ctx,
                       sbn_pool_t *pool)
{
    lanes_job job;
    job.fn = fn;
    job.ctx = ctx;
    job.channels = channels;
    job.block = block;
    atomic_init(&job.next, 0);
    sbn__parallel_for(pool, pool ? sbn_pool_threads(pool) : 1, run_lanes, &job);
}
