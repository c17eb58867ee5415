/*
 * walk.c - the walk over one channel's elements. For x of shape (N, C, d2..dk)
 * the elements of channel c are indexed by r in [0, R), R = N*d2*...*dk, in
 * logical row-major order over the non-channel dims. The walk visits any range
 * of r for up to three tensors of the same shape but their own strides and
 * dtypes, one run along the innermost dim at a time, and tells the engines
 * which path a set of tensors takes (rows, plane, kernel element type).
 */
#include <string.h>

#include "core/arith.h"
#include "kernels/kernels.h"
#include "ops/walk.h"
#include "syncbn/syncbn.h"

void sbn__walk_init(sbn__walk *w, const sbn_tensor *const *tensors, int ntensors)
{
    const sbn_tensor *x = tensors[0];
    int d, i, n = 0;

    memset(w, 0, sizeof *w);
    w->ntensors = ntensors;
    w->channels = x->shape[1];
    w->reduction = sbn_tensor_numel(x) / (x->shape[1] > 0 ? x->shape[1] : 1);
    w->chunks = (w->reduction + SBN_CHUNK - 1) / SBN_CHUNK;
    for (i = 0; i < ntensors; i++) {
        w->data[i] = tensors[i]->data;
        w->dtype[i] = tensors[i]->dtype;
        /* a channel dim of size 1 never moves: its stride (any value) is never used */
        w->channel_stride[i] = x->shape[1] > 1 ? tensors[i]->strides[1] : 0;
    }
    if (w->reduction == 0) { /* nothing to walk; the other dims may not even multiply */
        w->ndims = 1;
        return;
    }
    /* Keep the non-channel dims of size > 1; merge a dim into the previous one
     * when every tensor steps through both as through one dim. */
    for (d = 0; d < x->rank; d++) {
        int mergeable = n > 0;
        if (d == 1 || x->shape[d] == 1) continue;
        for (i = 0; mergeable && i < ntensors; i++) { /* checked views: the product may still
                                                         * pass INT64_MAX by one stride */
            int64_t step;
            mergeable = sbn__mul_i64(tensors[i]->strides[d], x->shape[d], &step) &&
                        w->stride[i][n - 1] == step;
        }
        if (mergeable) {
            w->size[n - 1] *= x->shape[d];
            for (i = 0; i < ntensors; i++) w->stride[i][n - 1] = tensors[i]->strides[d];
            continue;
        }
        w->size[n] = x->shape[d];
        for (i = 0; i < ntensors; i++) w->stride[i][n] = tensors[i]->strides[d];
        n++;
    }
    if (n == 0) { /* every non-channel dim has size 1 (or 0): one dim of size R */
        w->size[0] = w->reduction;
        for (i = 0; i < ntensors; i++) w->stride[i][0] = 0;
        n = 1;
    }
    w->ndims = n;
}

int64_t sbn__walk_chunk_len(const sbn__walk *w, int64_t k)
{
    int64_t start = k * SBN_CHUNK, left = w->reduction - start;
    return left < SBN_CHUNK ? left : SBN_CHUNK;
}

void sbn__walk_runs(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__run_fn fn,
                    void *ctx)
{
    int64_t index[SBN_MAX_RANK], offset[SBN_WALK_MAX_TENSORS], rest = r0, done = 0;
    int last = w->ndims - 1, d, i;
    char *ptr[SBN_WALK_MAX_TENSORS];
    int64_t inner[SBN_WALK_MAX_TENSORS];

    for (i = 0; i < w->ntensors; i++) {
        offset[i] = c * w->channel_stride[i];
        inner[i] = w->stride[i][last];
    }
    for (d = last; d >= 0; d--) {
        index[d] = rest % w->size[d];
        rest /= w->size[d];
        for (i = 0; i < w->ntensors; i++) offset[i] += index[d] * w->stride[i][d];
    }
    while (done < n) {
        int64_t run = w->size[last] - index[last];
        if (run > n - done) run = n - done;
        for (i = 0; i < w->ntensors; i++)
            ptr[i] = w->data[i] + offset[i] * (int64_t)sbn_dtype_size(w->dtype[i]);
        fn(ctx, ptr, inner, done, run);
        done += run;
        if (done == n) break;
        /* the inner dim wraps to 0; carry into the outer dims */
        for (i = 0; i < w->ntensors; i++) offset[i] -= index[last] * w->stride[i][last];
        index[last] = 0;
        for (d = last - 1; d >= 0; d--) {
            index[d]++;
            for (i = 0; i < w->ntensors; i++) offset[i] += w->stride[i][d];
            if (index[d] < w->size[d]) break;
            for (i = 0; i < w->ntensors; i++) offset[i] -= index[d] * w->stride[i][d];
            index[d] = 0;
        }
    }
}

void sbn__walk_advance(const sbn__walk *w, char *const *ptr, const int64_t *stride, int64_t steps,
                       const char **out)
{
    int i;
    for (i = 0; i < w->ntensors; i++)
        out[i] = ptr[i] + steps * stride[i] * (int64_t)sbn_dtype_size(w->dtype[i]);
}

int sbn__walk_is_rows(const sbn__walk *w)
{
    int i;
    if (w->channels < 2) return 0;
    for (i = 0; i < w->ntensors; i++)
        if (w->channel_stride[i] != 1) return 0;
    return 1;
}

int sbn__walk_kdtype(const sbn__walk *w)
{
    int i, kd;
    switch (w->dtype[0]) {
    case SBN_F64: kd = SBN_KD_F64; break;
    case SBN_F32: kd = SBN_KD_F32; break;
    case SBN_F16: kd = SBN_KD_F16; break;
    case SBN_BF16: kd = SBN_KD_BF16; break;
    default: return -1;
    }
    for (i = 1; i < w->ntensors; i++)
        if (w->dtype[i] != w->dtype[0]) return -1;
    return kd;
}

int sbn__walk_unit_inner(const sbn__walk *w)
{
    int i;
    for (i = 0; i < w->ntensors; i++)
        if (w->stride[i][w->ndims - 1] != 1) return 0;
    return 1;
}

static int g_short_runs = 1; /* sbn__short_runs_set (tests) */

void sbn__short_runs_set(int on)
{
    g_short_runs = on != 0;
}

/* Bytes of one run (the inner dim of a two-dim walk) over all the walk's tensors. */
static int64_t run_bytes(const sbn__walk *w)
{
    int64_t bytes = 0;
    int i;
    for (i = 0; i < w->ntensors; i++) bytes += w->size[1] * (int64_t)sbn_dtype_size(w->dtype[i]);
    return bytes;
}

int sbn__walk_short_runs(const sbn__walk *w)
{
    if (!g_short_runs || w->ndims != 2 || w->size[0] < 2 || !sbn__walk_unit_inner(w)) return 0;
    return run_bytes(w) <= SBN_SHORT_RUN_BYTES;
}

int64_t sbn__runs_window(const sbn__walk *w, int64_t cn)
{
    int64_t window = SBN_RUNS_WINDOW_BYTES / (run_bytes(w) * (cn > 0 ? cn : 1));
    return window > 0 ? window : 1;
}

void sbn__walk_run_groups(const sbn__walk *w, int64_t c, int64_t r0, int64_t n, sbn__runs_fn fn,
                          void *ctx)
{
    int64_t len = w->size[1], done = 0, run_stride[SBN_WALK_MAX_TENSORS];
    char *ptr[SBN_WALK_MAX_TENSORS];
    int i;
    for (i = 0; i < w->ntensors; i++) run_stride[i] = w->stride[i][0];
    while (done < n) {
        int64_t r = r0 + done, outer = r / len, e = r % len, runs = 1, m;
        for (i = 0; i < w->ntensors; i++)
            ptr[i] = w->data[i] + (c * w->channel_stride[i] + outer * w->stride[i][0] + e) *
                                      (int64_t)sbn_dtype_size(w->dtype[i]);
        if (e != 0 || n - done < len) /* a piece of a run */
            m = len - e < n - done ? len - e : n - done;
        else
            runs = (n - done) / len, m = len;
        fn(ctx, ptr, run_stride, done, runs, m);
        done += runs * m;
    }
}

static void prefetch_line(void *ctx, uintptr_t line)
{
    (void)ctx;
    __builtin_prefetch((const void *)line);
}

void sbn__walk_prefetch_runs(const sbn__walk *w, int64_t c, int64_t r0, int64_t r1)
{
    sbn__walk_run_lines(w, c, r0, r1, prefetch_line, NULL);
}
