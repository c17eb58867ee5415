/*
 * support.c - tensor construction in every dtype and layout, guard-byte checks,
 * a seeded generator and the tolerance comparison used by all test programs.
 * The fp16/bf16 conversions here are the tests' own (round to nearest even via
 * frexp/ldexp), independent of the library's.
 */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTE 0xA5
#define GUARD_PAD 64 /* bytes before and after the used range */

const char *tsup_layout_name(tsup_layout layout)
{
    switch (layout) {
    case TSUP_CHANNELS_FIRST: return "channels-first";
    case TSUP_CHANNELS_LAST: return "channels-last";
    case TSUP_STRIDED: return "strided";
    }
    return "?";
}

int64_t tsup_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    int i;
    for (i = 0; i < rank; i++) n *= shape[i];
    return n;
}

double tsup_unit_roundoff(sbn_dtype dtype)
{
    switch (dtype) {
    case SBN_F32: return ldexp(1.0, -24);
    case SBN_F64: return ldexp(1.0, -53);
    case SBN_F16: return ldexp(1.0, -11);
    case SBN_BF16: return ldexp(1.0, -8);
    default: return 0.0;
    }
}

/* Rounds to `bits` significand bits (implicit bit included), min exponent emin, RNE. */
static double round_to_format(double v, int bits, int emin, double max_finite)
{
    int e;
    double scale, r;
    if (v == 0.0 || !isfinite(v)) return v;
    (void)frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
    if (e - 1 < emin) e = emin + 1; /* subnormal: fixed quantum */
    scale = ldexp(1.0, bits - e);
    r = nearbyint(v * scale) / scale; /* default rounding mode is to nearest even */
    if (fabs(r) > max_finite) return v > 0 ? INFINITY : -INFINITY;
    return r;
}

double tsup_round(sbn_dtype dtype, double value)
{
    switch (dtype) {
    case SBN_F32: return (double)(float)value;
    case SBN_F64: return value;
    case SBN_F16: return round_to_format(value, 11, -14, 65504.0);
    case SBN_BF16: return round_to_format(value, 8, -126, 3.3895313892515355e38);
    case SBN_I32:
    case SBN_I64: return nearbyint(value);
    }
    return value;
}

static void encode(sbn_dtype dtype, double value, unsigned char *dst)
{
    double r = tsup_round(dtype, value);
    switch (dtype) {
    case SBN_F32: { float f = (float)r; memcpy(dst, &f, 4); break; }
    case SBN_F64: memcpy(dst, &r, 8); break;
    case SBN_BF16: {
        float f = (float)r; /* exact: r has 8 significant bits */
        uint32_t u;
        uint16_t h;
        memcpy(&u, &f, 4);
        h = (uint16_t)(u >> 16);
        if (isnan(r)) h = 0x7FC0;
        memcpy(dst, &h, 2);
        break;
    }
    case SBN_F16: {
        uint16_t h;
        if (isnan(r)) {
            h = 0x7E00;
        } else if (isinf(r)) {
            h = r > 0 ? 0x7C00 : 0xFC00;
        } else {
            uint16_t sign = r < 0 ? 0x8000 : 0;
            double a = fabs(r);
            if (a < ldexp(1.0, -14)) {
                h = (uint16_t)(sign | (uint16_t)(a * ldexp(1.0, 24)));
            } else {
                int e;
                double m = frexp(a, &e); /* a = m 2^e, m in [0.5,1) */
                uint16_t exp_field = (uint16_t)(e - 1 + 15);
                uint16_t mant = (uint16_t)((m * 2.0 - 1.0) * 1024.0);
                h = (uint16_t)(sign | (uint16_t)(exp_field << 10) | mant);
            }
        }
        memcpy(dst, &h, 2);
        break;
    }
    case SBN_I32: { int32_t i = (int32_t)r; memcpy(dst, &i, 4); break; }
    case SBN_I64: { int64_t i = (int64_t)r; memcpy(dst, &i, 8); break; }
    }
}

static double decode(sbn_dtype dtype, const unsigned char *src)
{
    switch (dtype) {
    case SBN_F32: { float f; memcpy(&f, src, 4); return f; }
    case SBN_F64: { double d; memcpy(&d, src, 8); return d; }
    case SBN_BF16: {
        uint16_t h;
        uint32_t u;
        float f;
        memcpy(&h, src, 2);
        u = (uint32_t)h << 16;
        memcpy(&f, &u, 4);
        return f;
    }
    case SBN_F16: {
        uint16_t h;
        int exp_field, mant;
        double v;
        memcpy(&h, src, 2);
        exp_field = (h >> 10) & 0x1F;
        mant = h & 0x3FF;
        if (exp_field == 0x1F) v = mant ? NAN : INFINITY;
        else if (exp_field == 0) v = ldexp((double)mant, -24);
        else v = ldexp(1.0 + mant / 1024.0, exp_field - 15);
        return (h & 0x8000) ? -v : v;
    }
    case SBN_I32: { int32_t i; memcpy(&i, src, 4); return i; }
    case SBN_I64: { int64_t i; memcpy(&i, src, 8); return (double)i; }
    }
    return NAN;
}

/* Byte offset from view.data of the element with logical row-major index `linear`. */
static int64_t element_offset(const sbn_tensor *v, int64_t linear)
{
    int64_t off = 0;
    int d;
    for (d = v->rank - 1; d >= 0; d--) {
        int64_t idx = v->shape[d] > 0 ? linear % v->shape[d] : 0;
        linear = v->shape[d] > 0 ? linear / v->shape[d] : 0;
        off += idx * v->strides[d];
    }
    return off * (int64_t)sbn_dtype_size(v->dtype);
}

tsup_buf tsup_make(sbn_dtype dtype, int rank, const int64_t *shape, tsup_layout layout,
                   const double *values)
{
    tsup_buf buf;
    int64_t numel = tsup_numel(rank, shape), span = 1, i;
    size_t es = sbn_dtype_size(dtype);
    int d;

    memset(&buf, 0, sizeof buf);
    buf.view.dtype = dtype;
    buf.view.rank = rank;
    for (d = 0; d < rank; d++) buf.view.shape[d] = shape[d];
    if (layout == TSUP_CHANNELS_LAST && rank >= 2) {
        int64_t stride = 1;
        buf.view.strides[1] = 1;
        stride = shape[1];
        for (d = rank - 1; d >= 2; d--) {
            buf.view.strides[d] = stride;
            stride *= shape[d];
        }
        buf.view.strides[0] = stride;
        span = stride * shape[0];
    } else {
        int64_t step = layout == TSUP_STRIDED ? 2 : 1, stride = step;
        for (d = rank - 1; d >= 0; d--) {
            buf.view.strides[d] = stride;
            stride *= (d == rank - 1 ? shape[d] : shape[d]);
        }
        span = stride;
    }
    if (span < 1) span = 1;
    buf.alloc_bytes = (size_t)span * es + 2 * GUARD_PAD;
    buf.alloc = malloc(buf.alloc_bytes);
    memset(buf.alloc, GUARD_BYTE, buf.alloc_bytes);
    buf.view.data = buf.alloc + GUARD_PAD;
    for (i = 0; i < numel; i++)
        encode(dtype, values ? values[i] : 0.0,
               (unsigned char *)buf.view.data + element_offset(&buf.view, i));
    return buf;
}

tsup_buf tsup_make_1d(sbn_dtype dtype, int64_t n, const double *values)
{
    return tsup_make(dtype, 1, &n, TSUP_CHANNELS_FIRST, values);
}

void tsup_read(const sbn_tensor *view, double *out)
{
    int64_t numel = tsup_numel(view->rank, view->shape), i;
    for (i = 0; i < numel; i++)
        out[i] = decode(view->dtype, (const unsigned char *)view->data + element_offset(view, i));
}

double tsup_get1(const sbn_tensor *view, int64_t i)
{
    return decode(view->dtype, (const unsigned char *)view->data +
                                   i * view->strides[0] * (int64_t)sbn_dtype_size(view->dtype));
}

int tsup_guard_intact(const tsup_buf *buf)
{
    int64_t numel = tsup_numel(buf->view.rank, buf->view.shape), i;
    size_t es = sbn_dtype_size(buf->view.dtype), b;
    unsigned char *mask = calloc(buf->alloc_bytes, 1);
    int ok = 1;
    for (i = 0; i < numel; i++) {
        size_t start = (size_t)((unsigned char *)buf->view.data - buf->alloc) +
                       (size_t)element_offset(&buf->view, i);
        memset(mask + start, 1, es);
    }
    for (b = 0; b < buf->alloc_bytes; b++) {
        if (!mask[b] && buf->alloc[b] != GUARD_BYTE) {
            fprintf(stderr, "    guard byte %zu of %zu overwritten (0x%02x)\n", b,
                    buf->alloc_bytes, buf->alloc[b]);
            ok = 0;
            break;
        }
    }
    free(mask);
    return ok;
}

unsigned char *tsup_snapshot(const tsup_buf *buf)
{
    unsigned char *copy = malloc(buf->alloc_bytes);
    memcpy(copy, buf->alloc, buf->alloc_bytes);
    return copy;
}

int tsup_unchanged(const tsup_buf *buf, const unsigned char *snapshot)
{
    return memcmp(buf->alloc, snapshot, buf->alloc_bytes) == 0;
}

void tsup_free(tsup_buf *buf)
{
    free(buf->alloc);
    buf->alloc = NULL;
}

tsup_rng tsup_rng_seed(uint64_t seed)
{
    tsup_rng rng;
    rng.state = seed * 0x9E3779B97F4A7C15ull + 1;
    return rng;
}

uint64_t tsup_next_u64(tsup_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double tsup_uniform(tsup_rng *rng)
{
    return (double)(tsup_next_u64(rng) >> 11) * ldexp(1.0, -53);
}

double tsup_normal(tsup_rng *rng)
{
    double u1 = tsup_uniform(rng), u2 = tsup_uniform(rng);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tsup_fill_normal(tsup_rng *rng, double *v, int64_t n, double mean, double std,
                      sbn_dtype dtype)
{
    int64_t i;
    for (i = 0; i < n; i++) v[i] = tsup_round(dtype, mean + std * tsup_normal(rng));
}

int tsup_close(const char *what, const double *got, const double *want, int64_t n,
               double abs_tol, double rel_tol)
{
    int64_t i, bad = 0, worst = -1;
    double max_diff = 0.0;
    for (i = 0; i < n; i++) {
        double g = got[i], w = want[i], diff;
        int ok;
        if (isnan(w) || isnan(g)) {
            ok = isnan(w) && isnan(g);
            diff = ok ? 0.0 : INFINITY;
        } else if (isinf(w) || isinf(g)) {
            ok = g == w;
            diff = ok ? 0.0 : INFINITY;
        } else {
            diff = fabs(g - w);
            ok = diff <= abs_tol + rel_tol * fabs(w);
        }
        if (diff > max_diff || worst < 0) {
            if (diff > max_diff) max_diff = diff;
            if (!ok) worst = i;
        }
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "    %s[%lld]: got %.17g, want %.17g, diff %.3g (tol %.3g)\n",
                        what, (long long)i, g, w, diff, abs_tol + rel_tol * fabs(w));
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "    %s: %lld of %lld elements differ, max diff %.3g (abs_tol %.3g, rel_tol %.3g)\n",
                what, (long long)bad, (long long)n, max_diff, abs_tol, rel_tol);
        return 0;
    }
    return 1;
}

int tsup_same_bytes(const char *what, const void *a, const void *b, size_t bytes)
{
    const unsigned char *pa = a, *pb = b;
    size_t i;
    for (i = 0; i < bytes; i++) {
        if (pa[i] != pb[i]) {
            fprintf(stderr, "    %s: first differing byte %zu of %zu (0x%02x vs 0x%02x)\n", what, i,
                    bytes, pa[i], pb[i]);
            return 0;
        }
    }
    return 1;
}
