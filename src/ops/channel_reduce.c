/*
 * channel_reduce.c - the chunked per-channel reductions behind stats, reduce,
 * backward_reduce and both batch norms. Phase 1 reduces every (channel, chunk)
 * pair on its own into two doubles of scratch; phase 2 merges each channel's
 * chunks in index order. Chunks are SBN_CHUNK elements of one channel (the last
 * may be shorter), gathered as doubles and reduced by the kernels of kernels.h in
 * their canonical 16-lane order, so the arithmetic depends on the shape alone:
 *   MOMENTS:  per chunk, two-pass: mean = sum(x)/n, M2 = sum((x-mean)^2) - (sum(x-mean))^2/n;
 *             chunks merged with Chan's formula.
 *   SUMS:     sum(x), sum(x^2), added chunk by chunk.
 *   BACKWARD: sum(dy), sum(dy * (x - center)), added chunk by chunk.
 * Tasks are numbered chunk-major (all channels of chunk 0, then chunk 1, ...).
 * Channels-last and (N, C) tensors take the row path (row_reduce.c): a task reads a
 * block of SBN_ROW_BLOCK channels row by row (contiguous memory) in the same
 * canonical order, so the bits are those of the per-channel path.
 */
#include "core/internal.h"
#include "kernels/kernels.h"

typedef struct reduce_job {
    sbn__reduce_kind kind;
    sbn__walk walk;
    const sbn_tensor *center;
    double *partial; /* [C][chunks][2] */
    double *out;     /* [C][2] */
} reduce_job;

static void reduce_chunks(void *ctx, int64_t begin, int64_t end)
{
    reduce_job *job = ctx;
    const sbn__walk *w = &job->walk;
    const sbn_kernels *kern = sbn__kernels();
    _Alignas(64) double a[SBN_CHUNK];
    _Alignas(64) double b[SBN_CHUNK];
    int64_t t;
    for (t = begin; t < end; t++) {
        int64_t k = t / w->channels, c = t % w->channels, n = sbn__walk_chunk_len(w, k);
        double *part = job->partial + 2 * (c * w->chunks + k);
        sbn__walk_gather(w, 0, c, k * SBN_CHUNK, n, a);
        switch (job->kind) {
        case SBN_REDUCE_MOMENTS: kern->moments(a, (size_t)n, &part[0], &part[1]); break;
        case SBN_REDUCE_SUMS: kern->sums(a, (size_t)n, &part[0], &part[1]); break;
        case SBN_REDUCE_BACKWARD:
            sbn__walk_gather(w, 1, c, k * SBN_CHUNK, n, b);
            kern->backward_sums(a, b, (size_t)n, sbn__load1(job->center, c), &part[0], &part[1]);
            break;
        }
    }
}

/* The row path (row_reduce.c): task t covers chunk t / blocks of the rows for a block
 * of SBN_ROW_BLOCK channels. */
static void reduce_row_blocks(void *ctx, int64_t begin, int64_t end)
{
    reduce_job *job = ctx;
    const sbn__walk *w = &job->walk;
    int64_t blocks = (w->channels + SBN_ROW_BLOCK - 1) / SBN_ROW_BLOCK, t, j;
    for (t = begin; t < end; t++) {
        int64_t k = t / blocks, c0 = (t % blocks) * SBN_ROW_BLOCK;
        int64_t cn = w->channels - c0 < SBN_ROW_BLOCK ? w->channels - c0 : SBN_ROW_BLOCK;
        double out[2 * SBN_ROW_BLOCK];
        sbn__row_reduce_block(job->kind, w, job->center, k, c0, cn, out);
        for (j = 0; j < cn; j++) {
            double *part = job->partial + 2 * ((c0 + j) * w->chunks + k);
            part[0] = out[2 * j];
            part[1] = out[2 * j + 1];
        }
    }
}

static void merge_channels(void *ctx, int64_t begin, int64_t end)
{
    reduce_job *job = ctx;
    const sbn__walk *w = &job->walk;
    int64_t c, k;
    for (c = begin; c < end; c++) {
        const double *part = job->partial + 2 * c * w->chunks;
        if (job->kind == SBN_REDUCE_MOMENTS) {
            sbn_moments total = {0.0, 0.0, 0.0};
            for (k = 0; k < w->chunks; k++)
                sbn__moments_merge(&total, (double)sbn__walk_chunk_len(w, k), part[2 * k],
                                   part[2 * k + 1]);
            job->out[2 * c] = total.mean;
            job->out[2 * c + 1] = total.m2;
        } else {
            double s0 = 0.0, s1 = 0.0;
            for (k = 0; k < w->chunks; k++) {
                s0 += part[2 * k];
                s1 += part[2 * k + 1];
            }
            job->out[2 * c] = s0;
            job->out[2 * c + 1] = s1;
        }
    }
}

size_t sbn__channel_reduce_bytes(const sbn_tensor *x)
{
    int64_t c = x->shape[1], r = c > 0 ? sbn_tensor_numel(x) / c : 0;
    int64_t chunks = (r + SBN_CHUNK - 1) / SBN_CHUNK;
    return (size_t)(c * chunks * 2) * sizeof(double);
}

void sbn__channel_reduce(sbn__reduce_kind kind, const sbn_tensor *dy_or_x, const sbn_tensor *x,
                         const sbn_tensor *center, double *out, double *scratch,
                         sbn_pool_t *pool)
{
    reduce_job job;
    const sbn_tensor *tensors[2];
    tensors[0] = dy_or_x;
    tensors[1] = x;
    job.kind = kind;
    job.center = center;
    job.partial = scratch;
    job.out = out;
    sbn__walk_init(&job.walk, tensors, kind == SBN_REDUCE_BACKWARD ? 2 : 1);
    if (sbn__walk_is_rows(&job.walk))
        sbn__parallel_for(pool,
                          job.walk.chunks * ((job.walk.channels + SBN_ROW_BLOCK - 1) / SBN_ROW_BLOCK),
                          reduce_row_blocks, &job);
    else
        sbn__parallel_for(pool, job.walk.channels * job.walk.chunks, reduce_chunks, &job);
    if (job.walk.chunks == 0) {
        int64_t c;
        for (c = 0; c < job.walk.channels; c++) out[2 * c] = out[2 * c + 1] = 0.0;
        return;
    }
    sbn__parallel_for(pool, job.walk.channels, merge_channels, &job);
}
