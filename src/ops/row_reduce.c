/*
 * row_reduce.c - the row path of the channel reductions, for tensors whose
 * channels sit side by side in memory (channels-last, (N, C)): a task reduces
 * chunk k of the rows for a block of up to SBN_ROW_BLOCK channels, reading each
 * row's block of channels contiguously. It keeps the canonical order of
 * kernels.h per channel (lane r % 16 adds row r, in row order; lanes folded by
 * halving) with the same operations as the scalar kernels, so its bits equal the
 * per-channel path's. Moments read the rows twice (mean first, then deviations);
 * everything lives in a few small arrays on the stack. The accumulation loops
 * always run over SBN_ROW_BLOCK channels (a fixed trip count the compiler
 * vectorises); the channels past cn hold zeros and are never written out.
 */
#include <string.h>

#include "core/internal.h"
#include "kernels/kernels.h"

/* Channels [c0, c0 + cn) of row r of tensor i, as doubles. */
static void load_row(const sbn__walk *w, int i, int64_t r, int64_t c0, int64_t cn, double *dst)
{
    size_t es = sbn_dtype_size(w->dtype[i]);
    const char *p = w->data[i] + (r * w->stride[i][0] + c0) * (int64_t)es;
    int64_t j;
    if (w->dtype[i] == SBN_F32) {
        const float *f = (const float *)p;
        for (j = 0; j < cn; j++) dst[j] = f[j];
        return;
    }
    sbn__load_run(p, w->dtype[i], 1, cn, dst);
}

/* Lane accumulators, lane-major so that the channel loop runs over contiguous doubles. */
typedef double lanes_t[SBN_LANES][SBN_ROW_BLOCK];

/* The fold of channel j's 16 lanes (kernels.h). */
static double fold_channel(lanes_t acc, int64_t j)
{
    double lane[SBN_LANES];
    int k;
    for (k = 0; k < SBN_LANES; k++) lane[k] = acc[k][j];
    return sbn__fold16(lane);
}

static void moments_block(const sbn__walk *w, int64_t r0, int64_t n, int64_t c0, int64_t cn,
                          double *out)
{
    lanes_t s, d, q;
    double v[SBN_ROW_BLOCK] = {0}, mean[SBN_ROW_BLOCK];
    int64_t r, j;
    memset(s, 0, sizeof s);
    for (r = 0; r < n; r++) {
        load_row(w, 0, r0 + r, c0, cn, v);
        for (j = 0; j < SBN_ROW_BLOCK; j++) s[r % SBN_LANES][j] += v[j];
    }
    for (j = 0; j < SBN_ROW_BLOCK; j++) mean[j] = fold_channel(s, j) / (double)n;
    memset(d, 0, sizeof d);
    memset(q, 0, sizeof q);
    for (r = 0; r < n; r++) {
        load_row(w, 0, r0 + r, c0, cn, v);
        for (j = 0; j < SBN_ROW_BLOCK; j++) {
            double dev = v[j] - mean[j];
            d[r % SBN_LANES][j] += dev;
            q[r % SBN_LANES][j] += dev * dev;
        }
    }
    for (j = 0; j < cn; j++) {
        double dev = fold_channel(d, j), sq = fold_channel(q, j) - dev * dev / (double)n;
        out[2 * j] = mean[j];
        out[2 * j + 1] = sq > 0 ? sq : 0.0;
    }
}

static void sums_block(const sbn__walk *w, int64_t r0, int64_t n, int64_t c0, int64_t cn,
                       double *out)
{
    lanes_t s, q;
    double v[SBN_ROW_BLOCK] = {0};
    int64_t r, j;
    memset(s, 0, sizeof s);
    memset(q, 0, sizeof q);
    for (r = 0; r < n; r++) {
        load_row(w, 0, r0 + r, c0, cn, v);
        for (j = 0; j < SBN_ROW_BLOCK; j++) {
            s[r % SBN_LANES][j] += v[j];
            q[r % SBN_LANES][j] += v[j] * v[j];
        }
    }
    for (j = 0; j < cn; j++) {
        out[2 * j] = fold_channel(s, j);
        out[2 * j + 1] = fold_channel(q, j);
    }
}

static void backward_block(const sbn__walk *w, const double *center, int64_t r0, int64_t n,
                           int64_t c0, int64_t cn, double *out)
{
    lanes_t s, p;
    double dy[SBN_ROW_BLOCK] = {0}, x[SBN_ROW_BLOCK] = {0};
    int64_t r, j;
    memset(s, 0, sizeof s);
    memset(p, 0, sizeof p);
    for (r = 0; r < n; r++) {
        load_row(w, 0, r0 + r, c0, cn, dy);
        load_row(w, 1, r0 + r, c0, cn, x);
        for (j = 0; j < SBN_ROW_BLOCK; j++) {
            s[r % SBN_LANES][j] += dy[j];
            p[r % SBN_LANES][j] += dy[j] * (x[j] - center[j]);
        }
    }
    for (j = 0; j < cn; j++) {
        out[2 * j] = fold_channel(s, j);
        out[2 * j + 1] = fold_channel(p, j);
    }
}

void sbn__row_reduce_block(sbn__reduce_kind kind, const sbn__walk *w, const sbn_tensor *center,
                           int64_t k, int64_t c0, int64_t cn, double *out)
{
    int64_t r0 = k * SBN_CHUNK, n = sbn__walk_chunk_len(w, k), j;
    double centers[SBN_ROW_BLOCK] = {0};
    switch (kind) {
    case SBN_REDUCE_MOMENTS: moments_block(w, r0, n, c0, cn, out); break;
    case SBN_REDUCE_SUMS: sums_block(w, r0, n, c0, cn, out); break;
    case SBN_REDUCE_BACKWARD:
        for (j = 0; j < cn; j++) centers[j] = sbn__load1(center, c0 + j);
        backward_block(w, centers, r0, n, c0, cn, out);
        break;
    }
}
