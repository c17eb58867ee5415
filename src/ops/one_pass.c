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
 * Whether a step runs this way, and with which block, is decided in plan.c
 * (sbn__one_pass_block): by the machine's L2 and L3 and the team, or by
 * SBN_ONE_PASS_BYTES.
 */
#include <stdatomic.h>

#include "core/pool.h"
#include "ops/one_pass.h"
#include "syncbn/syncbn.h"

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
    sbn__parallel_for(pool, sbn_pool_threads(pool), run_lanes, &job);
}
