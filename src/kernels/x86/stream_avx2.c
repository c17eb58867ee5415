/*
 * stream_avx2.c - PLACEHOLDER: the streaming kernels of kernels.h for avx2, for
 * now forwarding to the scalar ones (same bits by definition) until the SIMD
 * versions land.
 */
#include "kernels/kernels.h"

#define SBN_FORWARD_STREAM(dt)                                                                  \
    void sbn_##dt##_accum_ukernel__avx2(const void *x, size_t n, unsigned lane, double shift, \
                                         double *acc)                                         \
    { sbn_##dt##_accum_ukernel__scalar(x, n, lane, shift, acc); }                              \
    void sbn_##dt##_bwd_accum_ukernel__avx2(const void *dy, const void *x, size_t n,          \
                                             unsigned lane, double center, double *acc)       \
    { sbn_##dt##_bwd_accum_ukernel__scalar(dy, x, n, lane, center, acc); }                     \
    void sbn_##dt##_row_accum_ukernel__avx2(const void *x, int64_t xs, size_t rows, size_t cn, \
                                             unsigned lane, const double *shift, double *a,    \
                                             double *b, size_t ld)                            \
    { sbn_##dt##_row_accum_ukernel__scalar(x, xs, rows, cn, lane, shift, a, b, ld); }          \
    void sbn_##dt##_row_bwd_accum_ukernel__avx2(const void *dy, int64_t dys, const void *x,   \
                                                 int64_t xs, size_t rows, size_t cn,          \
                                                 unsigned lane, const double *center,         \
                                                 double *a, double *b, size_t ld)             \
    { sbn_##dt##_row_bwd_accum_ukernel__scalar(dy, dys, x, xs, rows, cn, lane, center, a, b, ld); } \
    void sbn_##dt##_normalize_ukernel__avx2(const void *x, size_t n, const double *k, void *y) \
    { sbn_##dt##_normalize_ukernel__scalar(x, n, k, y); }                                      \
    void sbn_##dt##_backward_ukernel__avx2(const void *dy, const void *x, size_t n,           \
                                            const double *k, void *gi)                        \
    { sbn_##dt##_backward_ukernel__scalar(dy, x, n, k, gi); }                                  \
    void sbn_##dt##_row_normalize_ukernel__avx2(const void *x, int64_t xs, size_t rows,       \
                                                 size_t cn, const double *k, size_t ldk,      \
                                                 void *y, int64_t ys)                         \
    { sbn_##dt##_row_normalize_ukernel__scalar(x, xs, rows, cn, k, ldk, y, ys); }              \
    void sbn_##dt##_row_backward_ukernel__avx2(const void *dy, int64_t dys, const void *x,    \
                                                int64_t xs, size_t rows, size_t cn,           \
                                                const double *k, size_t ldk, void *gi,        \
                                                int64_t gs)                                   \
    { sbn_##dt##_row_backward_ukernel__scalar(dy, dys, x, xs, rows, cn, k, ldk, gi, gs); }

SBN_FORWARD_STREAM(f64)
SBN_FORWARD_STREAM(f32)
SBN_FORWARD_STREAM(f16)
SBN_FORWARD_STREAM(bf16)
