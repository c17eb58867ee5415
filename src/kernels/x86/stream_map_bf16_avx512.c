/*
 * stream_map_bf16_avx512.c - the AVX-512 maps once more, for CPUs with AVX512_BF16: the
 * entry points sbn_<dt>_<map>_ukernel__avx512bf16 of kernels.h. The code is
 * stream_map_avx512.c's, built with SBN_MAP_BF16_CVT = 1: its bf16 runs narrow by the
 * CPU's conversion, one instruction for 32 floats where the integer rounding takes ten
 * and a permute, which is what a bf16 run's map waits on while its data is in the cache
 * (measurements: docs/performance.md). That conversion reads float subnormals as signed
 * zeros instead of rounding them (bf16_avx512.h), and every other float as the rounding
 * does; the runs' maps report the outputs whose floats were subnormal. So each bf16 map
 * here maps a piece of at most SBN_BF16_PIECE elements that way and, when the piece had a
 * subnormal float among its outputs, maps it again by the rounding kernel of
 * stream_map_avx512.c: the bits are those of every other variant, and the second pass
 * costs only where outputs are that small (below 2^-126), not where they are zeros.
 * An output that shares memory with an input (in place) could not be mapped again from
 * its input: such calls go to the rounding kernel whole. Rows (channels-last) gain
 * nothing from the conversion, which is not what their maps wait on (their coefficients
 * come a vector per 16 channels): the row maps are the rounding ones. fp64, fp32 and
 * fp16 are stream_map_avx512.c's maps under this variant's names.
 */
#define SBN_MAP_BF16_CVT 1
#include "kernels/x86/stream_map_avx512.c"

/* Elements a piece maps before its check: whatever the check finds is mapped again from
 * inputs still in the L1. */
#define SBN_BF16_PIECE 4096

/* The bytes [lo, hi) that `count` lines of len bf16, s elements apart, span from p. */
typedef struct span {
    uintptr_t lo, hi;
} span;

static span span_of(const void *p, int64_t s, size_t count, size_t len)
{
    int64_t last = count > 0 ? (int64_t)(count - 1) * s : 0;
    span r;
    r.lo = (uintptr_t)p + (uintptr_t)(last < 0 ? last * 2 : 0);
    r.hi = (uintptr_t)p + (uintptr_t)((last > 0 ? last : 0) + (int64_t)len) * 2;
    return r;
}

static int spans_meet(span a, span b)
{
    return a.lo < b.hi && b.lo < a.hi;
}

#define BF16_AT(p, i) ((const uint16_t *)(p) + (i))
#define BF16_AT_W(p, i) ((uint16_t *)(p) + (i))

void sbn_bf16_normalize_ukernel__avx512bf16(const void *x, size_t n, const void *k, void *y)
{
    size_t i, m;
    if (spans_meet(span_of(x, 0, 1, n), span_of(y, 0, 1, n))) {
        sbn_bf16_normalize_ukernel__avx512(x, n, k, y);
        return;
    }
    for (i = 0; i < n; i += m) {
        m = n - i < SBN_BF16_PIECE ? n - i : SBN_BF16_PIECE;
        if (run_normalize(SBN_KD_BF16, BF16_AT(x, i), m, k, BF16_AT_W(y, i)))
            sbn_bf16_normalize_ukernel__avx512(BF16_AT(x, i), m, k, BF16_AT_W(y, i));
    }
}

void sbn_bf16_backward_ukernel__avx512bf16(const void *dy, const void *x, size_t n, const void *k,
                                           void *gi)
{
    span out = span_of(gi, 0, 1, n);
    size_t i, m;
    if (spans_meet(span_of(x, 0, 1, n), out) || spans_meet(span_of(dy, 0, 1, n), out)) {
        sbn_bf16_backward_ukernel__avx512(dy, x, n, k, gi);
        return;
    }
    for (i = 0; i < n; i += m) {
        m = n - i < SBN_BF16_PIECE ? n - i : SBN_BF16_PIECE;
        if (run_backward(SBN_KD_BF16, BF16_AT(dy, i), BF16_AT(x, i), m, k, BF16_AT_W(gi, i)))
            sbn_bf16_backward_ukernel__avx512(BF16_AT(dy, i), BF16_AT(x, i), m, k,
                                              BF16_AT_W(gi, i));
    }
}

/* Runs a piece takes: SBN_BF16_PIECE elements, at least one run. Runs [i, i + m) take
 * coefficient columns i..: k advanced by i floats (structure of arrays, ldk apart). */
static size_t piece_runs(size_t len)
{
    return len >= SBN_BF16_PIECE ? 1 : SBN_BF16_PIECE / (len > 0 ? len : 1);
}

#define COEFS_AT(k, i) ((const float *)(k) + (i))

void sbn_bf16_runs_normalize_ukernel__avx512bf16(const void *x, int64_t xs, size_t runs,
                                                 size_t len, const void *k, size_t ldk, void *y,
                                                 int64_t ys)
{
    size_t i, m, step = piece_runs(len);
    if (spans_meet(span_of(x, xs, runs, len), span_of(y, ys, runs, len))) {
        sbn_bf16_runs_normalize_ukernel__avx512(x, xs, runs, len, k, ldk, y, ys);
        return;
    }
    for (i = 0; i < runs; i += m) {
        const void *xi = BF16_AT(x, (int64_t)i * xs);
        void *yi = BF16_AT_W(y, (int64_t)i * ys);
        m = runs - i < step ? runs - i : step;
        if (runs_map(SBN_KD_BF16, 0, NULL, 0, xi, xs, m, len, COEFS_AT(k, i), ldk, yi, ys))
            sbn_bf16_runs_normalize_ukernel__avx512(xi, xs, m, len, COEFS_AT(k, i), ldk, yi, ys);
    }
}

void sbn_bf16_runs_backward_ukernel__avx512bf16(const void *dy, int64_t dys, const void *x,
                                                int64_t xs, size_t runs, size_t len, const void *k,
                                                size_t ldk, void *gi, int64_t gs)
{
    span out = span_of(gi, gs, runs, len);
    size_t i, m, step = piece_runs(len);
    if (spans_meet(span_of(x, xs, runs, len), out) ||
        spans_meet(span_of(dy, dys, runs, len), out)) {
        sbn_bf16_runs_backward_ukernel__avx512(dy, dys, x, xs, runs, len, k, ldk, gi, gs);
        return;
    }
    for (i = 0; i < runs; i += m) {
        const void *gr = BF16_AT(dy, (int64_t)i * dys), *xr = BF16_AT(x, (int64_t)i * xs);
        void *out_i = BF16_AT_W(gi, (int64_t)i * gs);
        m = runs - i < step ? runs - i : step;
        if (runs_map(SBN_KD_BF16, 1, gr, dys, xr, xs, m, len, COEFS_AT(k, i), ldk, out_i, gs))
            sbn_bf16_runs_backward_ukernel__avx512(gr, dys, xr, xs, m, len, COEFS_AT(k, i), ldk,
                                                   out_i, gs);
    }
}

void sbn_bf16_row_normalize_ukernel__avx512bf16(const void *x, int64_t xs, size_t rows, size_t cn,
                                                const void *k, size_t ldk, void *y, int64_t ys)
{
    sbn_bf16_row_normalize_ukernel__avx512(x, xs, rows, cn, k, ldk, y, ys);
}

void sbn_bf16_row_backward_ukernel__avx512bf16(const void *dy, int64_t dys, const void *x,
                                               int64_t xs, size_t rows, size_t cn, const void *k,
                                               size_t ldk, void *gi, int64_t gs)
{
    sbn_bf16_row_backward_ukernel__avx512(dy, dys, x, xs, rows, cn, k, ldk, gi, gs);
}
