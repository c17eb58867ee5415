/*
 * one_pass.c - the one-pass schedule of the single-process ops (batch_norm and
 * batch_norm_backward in training). Two passes read x (and dy) from memory twice:
 * once to reduce, once to map. When the slice of one block of channels fits in a
 * thread's share of its L2 cache, the block can be reduced and then mapped while
 * it is still there, so memory sees each byte of the inputs once. The channels are
 * cut into blocks of `block` channels; the pool's T threads each run one lane (each
 * with its own slice of the op's scratch) that takes blocks from a shared counter
 * until none is left, so a worker that joins late (still waking) takes fewer blocks
 * instead of holding up a fixed share (8x256x28x28 fp32 at 2 threads, median of 1000
 * calls: backward 0.528 -> 0.504 ms, forward 0.285 -> 0.269, with lanes of fixed
 * blocks lane, lane + T, ... before), and each block runs the same serial reduction
 * and map as the two-pass engine restricted to its channels: every channel's chunks,
 * lanes and merge order are those of the whole-tensor pass, so the bits do not change
 * (test_one_pass).
 *
 * The block: budget / (R x bytes per element read) channels, where budget is
 * SBN_ONE_PASS_BYTES (parsed by env.c: bytes up to 2^40; "l2" means half the L2 per core,
 * from cache_size.c, else 1 MiB; 0 turns the schedule off; a bad value is ignored).
 * Unset, the schedule runs by size: with 2 or more
 * threads, on channels-first tensors whose inputs fit in half the L3 and whose N pieces
 * per block span 64 KiB or more, with half the L2 as budget (N <= 8 here; pieces of 62
 * KiB and more were measured to win, 16 KiB to lose). Measured on the AMD EPYC Zen 4 VM
 * (1 MiB L2, 32 MiB L3), fp32 NCHW forward training at 2 threads, min/median ms:
 * 2x512x32x32 0.197/0.245 two passes -> 0.158/0.186 one pass, 8x256x28x28
 * 0.27-0.28/0.30-0.33 -> 0.24/0.28-0.31; backward and one thread within noise (0.30 ->
 * 0.31 at 1T on 2x512x32x32). With N = 32 (pieces of 16 KiB) it lost at 2 threads:
 * fwd-train 32x128x28x28 0.67-0.74 -> 1.10-1.14 ms, 32x512x14x14 0.87-0.89 -> 1.14-1.28,
 * 32x2048x7x7 1.46-1.58 -> 1.73-1.83 (min). From memory it loses (32x64x56x56 at 2
 * threads 1.06-1.54 -> 2.3-2.7 ms; 4.7 vs 3.1 ms at one thread on the Zen 5 VM): a block
 * of one or a few channels of an NCHW tensor is read as N scattered plane-sized pieces,
 * which streams far slower than the whole tensor in memory order, and the two-pass
 * schedule's second pass already hits the L3; channels-last blocks gained nothing. Tests
 * set budgets to force many blocks. It is used only when there are at least 2T blocks
 * (each lane's scratch and coefficients then fit in the two-pass workspace), and for
 * channels-last tensors only when a block's row spans 512 bytes or more (narrower slices
 * waste most of each line).
 */
#include <stdatomic.h>

#include "core/env.h"
#include "core/internal.h"

#define ONE_PASS_BY_SIZE (-2) /* budget_bytes: no setting, decide by size */
#define ONE_PASS_MIN_PIECE ((int64_t)64 << 10)
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

/* The size rule: half the L2 when at least 2 threads share a channels-first tensor
 * whose inputs (R x C x bytes_per_element) fit in half the L3 and whose blocks are
 * read in pieces of 64 KiB or more (budget / N); else 0. */
static int64_t budget_by_size(const sbn_tensor *x, int64_t r, size_t bytes_per_element,
                              int64_t threads)
{
    int64_t inputs, budget;
    if (threads < 2 || x->strides[1] == 1) return 0;
    if (!sbn__mul_i64(r * x->shape[1], (int64_t)bytes_per_element, &inputs) ||
        inputs > sbn__cache_bytes(3) / 2)
        return 0;
    budget = sbn__cache_bytes(2) / 2;
    /* a block is read as shape[0] pieces of budget / shape[0] bytes: short ones stream badly */
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
    int64_t block, lanes_blocks;
    if (r == 0 || channels < 2) return 0;
    if (budget == ONE_PASS_BY_SIZE) budget = budget_by_size(x, r, bytes_per_element, threads);
    if (budget == 0) return 0;
    if (!sbn__mul_i64(r, (int64_t)bytes_per_element, &per_channel)) return 0;
    block = budget / per_channel;
    /* at least 2T blocks; a budget near INT64_MAX must not wrap this product */
    if (block < 1 || !sbn__mul_i64(block, 2 * threads, &lanes_blocks) || lanes_blocks > channels)
        return 0;
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
