/*
 * test_guards.c - the hostile inputs an adversarial probe used against the native
 * ops and the layer (issue 10), one case each, every one of which the library
 * used to get wrong: strides whose extents overflow 64 bits (an output aliased
 * onto its own input, two outputs at one address), a workspace inside an input or
 * an output, size arithmetic that wrapped (gather_moments, layer workspace size,
 * contiguous strides), a gather_moments count past 2^53 refused without naming that
 * limit, misaligned f64/f16/bf16 data, NaN and Inf data hidden as
 * variance 0, a momentum reported with too few digits, and a layer that changed
 * its state before refusing an argument. Each case asserts the status, that
 * sbn_last_error() names the argument, and that no buffer changed on a refusal.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/world.h"
#include "syncbn/layer.h"
#include "syncbn/ops.h"

static int error_has(const char *needle)
{
    return strstr(sbn_last_error(), needle) != NULL;
}

/* x (2, 2, 4) f32, filled 0..15; mean/invstd [2]; a workspace for sbn_stats. */
typedef struct stats_args {
    float x[16], mean[2], invstd[2];
    int64_t shape[3];
    sbn_tensor xv, mv, iv;
    void *ws;
    size_t ws_bytes;
} stats_args;

static void stats_args_init(stats_args *a)
{
    int i;
    memset(a, 0, sizeof *a);
    for (i = 0; i < 16; i++) a->x[i] = (float)i;
    a->shape[0] = 2;
    a->shape[1] = 2;
    a->shape[2] = 4;
    a->xv = sbn_tensor_contiguous(a->x, SBN_F32, 3, a->shape);
    a->mv = sbn_tensor_1d(a->mean, SBN_F32, 2);
    a->iv = sbn_tensor_1d(a->invstd, SBN_F32, 2);
    sbn_stats_workspace_size(&a->xv, &a->ws_bytes);
    a->ws = malloc(a->ws_bytes);
}

/* A mean stride of 2^62 + (x - mean) elements wraps mean[1] onto x[0] in 64-bit addresses. */
static void stride_wrapping_onto_input(void)
{
    stats_args a;
    float before[16];
    int64_t delta;
    sbn_status s;
    stats_args_init(&a);
    memcpy(before, a.x, sizeof before);
    delta = (int64_t)(((intptr_t)a.x - (intptr_t)a.mean) / (intptr_t)sizeof(float));
    a.mv.strides[0] = ((int64_t)1 << 62) + delta;
    s = sbn_stats(&a.xv, 1e-5, &a.mv, &a.iv, a.ws, a.ws_bytes, NULL);
    free(a.ws);
    CHECK_MSG(SBN_FAILED(s), "sbn_stats accepted a wrapping stride: %s", sbn_status_name(s));
    CHECK_MSG(s == SBN_ERR_TOO_LARGE, "got %s (%s)", sbn_status_name(s), sbn_last_error());
    CHECK_MSG(error_has("mean"), "message: %s", sbn_last_error());
    CHECK(memcmp(before, a.x, sizeof before) == 0);
}

/* A stride of 2^62 puts mean[1] at mean[0]'s address (4 * 2^62 wraps to 0); INT64_MIN too. */
static void stride_wrapping_onto_itself(void)
{
    static const int64_t strides[] = {(int64_t)1 << 62, INT64_MIN, INT64_MAX, -((int64_t)1 << 62)};
    unsigned k;
    for (k = 0; k < sizeof strides / sizeof strides[0]; k++) {
        stats_args a;
        sbn_status s;
        float mean_before[2];
        stats_args_init(&a);
        memcpy(mean_before, a.mean, sizeof mean_before);
        a.mv.strides[0] = strides[k];
        s = sbn_stats(&a.xv, 1e-5, &a.mv, &a.iv, a.ws, a.ws_bytes, NULL);
        free(a.ws);
        CHECK_MSG(s == SBN_ERR_TOO_LARGE, "stride %lld: got %s (%s)", (long long)strides[k],
                  sbn_status_name(s), sbn_last_error());
        CHECK_MSG(error_has("mean"), "message: %s", sbn_last_error());
        CHECK(memcmp(mean_before, a.mean, sizeof mean_before) == 0);
    }
}

/* An input with a huge stride is refused too, before any read. */
static void input_stride_overflow(void)
{
    stats_args a;
    sbn_status s;
    stats_args_init(&a);
    a.xv.strides[2] = INT64_MAX / 2;
    s = sbn_stats(&a.xv, 1e-5, &a.mv, &a.iv, a.ws, a.ws_bytes, NULL);
    free(a.ws);
    CHECK_MSG(s == SBN_ERR_TOO_LARGE, "got %s (%s)", sbn_status_name(s), sbn_last_error());
    CHECK_MSG(error_has("x has shape [2, 2, 4] and strides"), "message: %s", sbn_last_error());
}

/* A workspace inside x: used to give SBN_OK with a wrong mean and x overwritten. */
static void workspace_inside_input(void)
{
    size_t bytes;
    float *big, before_x[64];
    int64_t shape[3] = {2, 2, 16};
    sbn_tensor xv, mv, iv;
    float mean[2] = {0, 0}, invstd[2] = {0, 0};
    sbn_status s;
    int i;
    big = malloc(4096 * sizeof(float));
    for (i = 0; i < 4096; i++) big[i] = (float)(i % 7);
    xv = sbn_tensor_contiguous(big, SBN_F32, 3, shape);
    mv = sbn_tensor_1d(mean, SBN_F32, 2);
    iv = sbn_tensor_1d(invstd, SBN_F32, 2);
    CHECK(sbn_stats_workspace_size(&xv, &bytes) == SBN_OK);
    CHECK(bytes < 2048 * sizeof(float));
    memcpy(before_x, big, sizeof before_x);
    s = sbn_stats(&xv, 1e-5, &mv, &iv, big + 8, bytes, NULL);
    CHECK_MSG(s == SBN_ERR_ALIAS, "got %s (%s)", sbn_status_name(s), sbn_last_error());
    CHECK_MSG(error_has("workspace") && error_has("x"), "message: %s", sbn_last_error());
    CHECK(memcmp(before_x, big, sizeof before_x) == 0);
    CHECK(mean[0] == 0 && invstd[0] == 0);
    /* and over an output: mean inside the workspace */
    mv = sbn_tensor_1d(big + 2048 + 16, SBN_F32, 2);
    s = sbn_stats(&xv, 1e-5, &mv, &iv, big + 2048, bytes, NULL);
    CHECK_MSG(s == SBN_ERR_ALIAS && error_has("mean"), "got %s (%s)", sbn_status_name(s),
              sbn_last_error());
    /* a workspace right after x is fine */
    s = sbn_stats(&xv, 1e-5, &mv, &iv, big + 64, bytes, NULL);
    free(big);
    CHECK_MSG(s == SBN_OK, "got %s (%s)", sbn_status_name(s), sbn_last_error());
}

/* world * channels wrapped to 0 and the merge read past parts. */
static void gather_moments_huge_world(void)
{
    sbn_moments parts[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    sbn_status s = sbn_gather_moments(parts, (int64_t)1 << 33, (int64_t)1 << 31, 0.1, 1e-5, NULL,
                                      NULL, NULL, NULL, NULL);
    CHECK_MSG(s == SBN_ERR_TOO_LARGE, "got %s (%s)", sbn_status_name(s), sbn_last_error());
    CHECK_MSG(error_has("parts"), "message: %s", sbn_last_error());
}

/* A count past 2^53 (1e300) was refused as "counts must be finite and >= 0", which it
 * is: the message must name the real limit. 2^53 itself is accepted, its successor not. */
static void gather_moments_count_limit(void)
{
    static const double bad[] = {1e300, 9007199254740994.0, INFINITY, NAN, -1.0};
    sbn_moments parts[4] = {{3, 1, 2}, {5, 2, 4}, {1, 0, 0}, {2, 1, 1}}, total[2];
    unsigned k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sbn_status s;
        parts[2].count = bad[k]; /* rank 1, channel 0 */
        s = sbn_gather_moments(parts, 2, 2, 0.1, 1e-5, NULL, NULL, total, NULL, NULL);
        CHECK_MSG(s == SBN_ERR_BAD_VALUE, "count %g: got %s (%s)", bad[k], sbn_status_name(s),
                  sbn_last_error());
        CHECK_MSG(error_has("parts[rank 1][channel 0].count") && error_has("2^53") &&
                      error_has("9007199254740992"),
                  "count %g: message: %s", bad[k], sbn_last_error());
    }
    parts[2].count = SBN_MOMENTS_MAX_COUNT;
    CHECK_STATUS(sbn_gather_moments(parts, 2, 2, 0.1, 1e-5, NULL, NULL, total, NULL, NULL),
                 SBN_OK);
    CHECK_MSG(total[0].count == SBN_MOMENTS_MAX_COUNT + 3.0, "total count %.17g",
              total[0].count);
}

/* C = 2^50 and W = 2^20: C * (W + 2) * 24 bytes wrapped around. The layer's arrays
 * no longer grow with W (C * 248 bytes); at the largest C a view may have, 2^56, the
 * size is either refused or at least that much, never wrapped to a small number. */
static void layer_workspace_size_wraps(void)
{
    int64_t shape[2] = {1, (int64_t)1 << 56};
    sbn_tensor x = sbn_tensor_contiguous(NULL, SBN_F32, 2, shape);
    size_t bytes = 7;
    sbn_status s = sbn_syncbn_workspace_size(&x, &bytes);
    CHECK_MSG(s == SBN_ERR_TOO_LARGE || (s == SBN_OK && bytes >= ((size_t)1 << 56) * 248),
              "got %s, bytes %zu (%s)", sbn_status_name(s), bytes, sbn_last_error());
    if (s != SBN_OK) CHECK(bytes == 7);
    /* an op's own workspace size saturates too: C = 2^56 needs C x 264 row-state bytes */
    shape[1] = (int64_t)1 << 56;
    x = sbn_tensor_channels_last(NULL, SBN_F32, 2, shape);
    s = sbn_stats_workspace_size(&x, &bytes);
    CHECK_MSG(s == SBN_ERR_TOO_LARGE, "got %s, bytes %zu (%s)", sbn_status_name(s), bytes,
              sbn_last_error());
}

/* {2^40, 2^40}: the contiguous strides and the element count overflowed (UB). */
static void contiguous_shape_overflow(void)
{
    int64_t shape[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 4};
    float dummy[4];
    sbn_tensor x = sbn_tensor_contiguous(dummy, SBN_F32, 3, shape);
    float mean[2], invstd[2];
    sbn_tensor mv = sbn_tensor_1d(mean, SBN_F32, 2), iv = sbn_tensor_1d(invstd, SBN_F32, 2);
    CHECK(sbn_tensor_numel(&x) == INT64_MAX);
    CHECK(x.strides[2] == 1 && x.strides[1] == 4);
    CHECK_STATUS(sbn_stats(&x, 1e-5, &mv, &iv, NULL, 0, NULL), SBN_ERR_BAD_SHAPE);
    CHECK_MSG(error_has("2^56"), "message: %s", sbn_last_error());
}

/* f64 at +4 bytes and f16/bf16 at +1 byte were loaded through misaligned pointers (UB). */
static void misaligned_data(void)
{
    static const sbn_dtype dtypes[] = {SBN_F64, SBN_F32, SBN_F16, SBN_BF16};
    static const size_t offsets[] = {4, 2, 1, 1};
    unsigned k;
    for (k = 0; k < 4; k++) {
        _Alignas(64) unsigned char buf[512];
        float mean[3], invstd[3];
        int64_t shape[2] = {4, 3};
        sbn_tensor x, mv, iv;
        size_t bytes;
        void *ws;
        sbn_status s;
        memset(buf, 0, sizeof buf);
        x = sbn_tensor_contiguous(buf + offsets[k], dtypes[k], 2, shape);
        mv = sbn_tensor_1d(mean, SBN_F32, 3);
        iv = sbn_tensor_1d(invstd, SBN_F32, 3);
        CHECK(sbn_stats_workspace_size(&x, &bytes) == SBN_OK);
        ws = malloc(bytes);
        s = sbn_stats(&x, 1e-5, &mv, &iv, ws, bytes, NULL);
        free(ws);
        CHECK_MSG(s == SBN_ERR_MISALIGNED, "%s at +%zu: got %s (%s)", sbn_dtype_name(dtypes[k]),
                  offsets[k], sbn_status_name(s), sbn_last_error());
        CHECK_MSG(error_has("x's data") && error_has(sbn_dtype_name(dtypes[k])), "message: %s",
                  sbn_last_error());
    }
    {   /* a misaligned per-channel output is refused as well */
        stats_args a;
        sbn_tensor odd;
        _Alignas(8) unsigned char raw[16];
        stats_args_init(&a);
        odd = sbn_tensor_1d(raw + 1, SBN_F32, 2);
        CHECK_STATUS(sbn_stats(&a.xv, 1e-5, &odd, &a.iv, a.ws, a.ws_bytes, NULL),
                     SBN_ERR_MISALIGNED);
        free(a.ws);
    }
}

/* One channel of R f64 values: the reduction's variance through sbn_stats_moments. */
static double moments_m2(const double *v, int64_t r, double *mean)
{
    int64_t shape[2];
    sbn_tensor x;
    sbn_moments m = {0, 0, 0};
    size_t bytes;
    void *ws;
    shape[0] = r;
    shape[1] = 1;
    x = sbn_tensor_contiguous((void *)v, SBN_F64, 2, shape);
    sbn_stats_moments_workspace_size(&x, &bytes);
    ws = malloc(bytes);
    if (sbn_stats_moments(&x, &m, ws, bytes, NULL) != SBN_OK) m.m2 = -1;
    free(ws);
    *mean = m.mean;
    return m.m2;
}

/* sbn_stats of x (4, 2) of dtype dt, eps 1e-5, into f64 mean and invstd. */
static sbn_status stats_4x2(void *x, sbn_dtype dt, double mean[2], double invstd[2])
{
    int64_t shape[2] = {4, 2};
    sbn_tensor xv = sbn_tensor_contiguous(x, dt, 2, shape);
    sbn_tensor mv = sbn_tensor_1d(mean, SBN_F64, 2), iv = sbn_tensor_1d(invstd, SBN_F64, 2);
    size_t bytes;
    void *ws;
    sbn_status s;
    sbn_stats_workspace_size(&xv, &bytes);
    ws = malloc(bytes);
    s = sbn_stats(&xv, 1e-5, &mv, &iv, ws, bytes, NULL);
    free(ws);
    return s;
}

/*
 * NaN, Inf and squares past DBL_MAX used to be clamped to variance 0, for some R only;
 * then finite data whose squared deviations pass DBL_MAX gave M2 = NaN (Inf - Inf)
 * where docs/numerics.md promises M2 = +Inf and invstd 0. NaN data: mean and M2 NaN;
 * an Inf: M2 NaN; +-1e200 (mean near 0, or 1.25e200): M2 = +Inf, a finite mean.
 */
static void non_finite_variance(void)
{
    static const int64_t lengths[] = {2, 5, 8, 64, 2048, 2049, 5000};
    static const double bad[] = {NAN, INFINITY, -INFINITY};
    unsigned i, k;
    for (i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        int64_t r = lengths[i], j;
        double *v = malloc((size_t)r * sizeof(double)), mean, m2;
        for (k = 0; k < 3; k++) {
            for (j = 0; j < r; j++) v[j] = (double)(j % 5);
            v[r / 2] = bad[k];
            m2 = moments_m2(v, r, &mean);
            CHECK_MSG(isnan(m2) && (!isnan(bad[k]) || isnan(mean)), "R %lld with %g: M2 %g "
                      "(mean %g); expected M2 NaN (and mean NaN for a NaN)", (long long)r,
                      bad[k], m2, mean);
        }
        for (k = 0; k < 2; k++) {
            for (j = 0; j < r; j++)
                v[j] = k == 0 ? (j % 2 ? 1e200 : -1e200) : 1e200 + (j % 2 ? 1e200 : -5e199);
            m2 = moments_m2(v, r, &mean);
            CHECK_MSG(m2 == INFINITY && isfinite(mean), "R %lld of %s: M2 %g, mean %g; "
                      "expected M2 +Inf and a finite mean", (long long)r,
                      k == 0 ? "+-1e200" : "1e200 + {1e200, -5e199}", m2, mean);
        }
        free(v);
    }
    {   /* and sbn_stats reports invstd NaN, not 1/sqrt(eps) */
        float x[8] = {1, 2, NAN, 4, 5, 6, 7, 8};
        double mean[2], invstd[2];
        CHECK_STATUS(stats_4x2(x, SBN_F32, mean, invstd), SBN_OK);
        CHECK_MSG(isnan(invstd[0]), "invstd[0] %g", invstd[0]);
        CHECK_MSG(isfinite(invstd[1]), "invstd[1] %g", invstd[1]);
    }
    {   /* ... and invstd 0 (PyTorch's) for squares past DBL_MAX */
        double x[8] = {2e200, 1, 1e200, 2, 2e200, 3, 1e200, 4}, mean[2], invstd[2];
        CHECK_STATUS(stats_4x2(x, SBN_F64, mean, invstd), SBN_OK);
        CHECK_MSG(invstd[0] == 0.0 && fabs(mean[0] - 1.5e200) <= 1e-15 * 1.5e200,
                  "channel 0: mean %.17g, invstd %g; expected 1.5e200, 0", mean[0], invstd[0]);
        CHECK_MSG(isfinite(invstd[1]) && invstd[1] > 0, "invstd[1] %g", invstd[1]);
    }
}

static void momentum_message_digits(void)
{
    float rm[2] = {0, 0}, rv[2] = {1, 1}, mean[2], invstd[2], y[8], x[8] = {0};
    int64_t shape[2] = {4, 2};
    sbn_tensor xv = sbn_tensor_contiguous(x, SBN_F32, 2, shape);
    sbn_tensor yv = sbn_tensor_contiguous(y, SBN_F32, 2, shape);
    sbn_tensor rmv = sbn_tensor_1d(rm, SBN_F32, 2), rvv = sbn_tensor_1d(rv, SBN_F32, 2);
    sbn_tensor mv = sbn_tensor_1d(mean, SBN_F32, 2), iv = sbn_tensor_1d(invstd, SBN_F32, 2);
    CHECK_STATUS(sbn_batch_norm(&xv, NULL, NULL, 1, 1.0000001, 1e-5, &rmv, &rvv, &yv, &mv, &iv,
                                NULL, 0, NULL),
                 SBN_ERR_BAD_VALUE);
    CHECK_MSG(error_has("momentum is 1.0000001"), "message: %s", sbn_last_error());
}

/* Found by fuzz_native_ops: a channel dim of size 1 with a huge stride (never used) overflowed
 * the engine's byte stride; an empty x whose other dims multiply past 2^63 overflowed the walk. */
static void unused_strides_and_empty_dims(void)
{
    float b[4] = {1.0f, 2.0f, 4.0f, 8.0f};
    int64_t shape[2] = {2, 1};
    sbn_tensor x = sbn_tensor_contiguous(b + 2, SBN_F32, 2, shape);
    sbn_moments m;
    _Alignas(64) unsigned char ws[4096];
    size_t bytes;
    x.strides[0] = -1;
    x.strides[1] = ((int64_t)1 << 61) + 1;
    CHECK(sbn_stats_moments_workspace_size(&x, &bytes) == SBN_OK && bytes <= sizeof ws);
    CHECK_STATUS(sbn_stats_moments(&x, &m, ws, sizeof ws, NULL), SBN_OK);
    CHECK_MSG(m.count == 2 && m.mean == 3.0 && m.m2 == 2.0, "count %g mean %g m2 %g", m.count,
              m.mean, m.m2);
    {
        int64_t big[7] = {0, 1, 1, 2, (int64_t)1 << 62, 2, 2};
        int64_t strides[7] = {8, 1, 2, 4, 4, 2, 1};
        sbn_tensor e = sbn_tensor_contiguous(b, SBN_F16, 7, big);
        memcpy(e.strides, strides, sizeof strides);
        CHECK(sbn_stats_moments_workspace_size(&e, &bytes) == SBN_OK && bytes <= sizeof ws);
        CHECK_STATUS(sbn_stats_moments(&e, &m, ws, sizeof ws, NULL), SBN_OK);
        CHECK(m.count == 0);
    }
}

/* ---- the layer: y inside the layer workspace, W = 2 ---- */
typedef struct layer_case {
    int64_t n, c;
} layer_case;

static void layer_rank(tsup_rank *ctx)
{
    enum { N = 4, C = 3 };
    float x[N * C], y[N * C], rm[C], rv[C], sm[C], si[C];
    int64_t shape[2] = {N, C}, nbt = 5, count = -1;
    sbn_tensor xv, yv, rmv, rvv, smv, siv;
    sbn_syncbn_config cfg;
    size_t bytes;
    char *ws;
    sbn_status s;
    int i;
    for (i = 0; i < N * C; i++) x[i] = (float)(i * (ctx->rank + 1));
    for (i = 0; i < C; i++) rm[i] = 0.5f, rv[i] = 2.0f, sm[i] = -1.0f, si[i] = -1.0f;
    xv = sbn_tensor_contiguous(x, SBN_F32, 2, shape);
    rmv = sbn_tensor_1d(rm, SBN_F32, C);
    rvv = sbn_tensor_1d(rv, SBN_F32, C);
    smv = sbn_tensor_1d(sm, SBN_F32, C);
    siv = sbn_tensor_1d(si, SBN_F32, C);
    sbn_syncbn_config_default(&cfg);
    RNOTE(ctx, sbn_syncbn_workspace_size(&xv, &bytes) == SBN_OK, "workspace size");
    ws = malloc(bytes + sizeof y);
    /* rank 0 puts y at the end of its workspace, which the layer uses for scratch */
    yv = sbn_tensor_contiguous(ctx->rank == 0 ? (void *)(ws + bytes - 16) : (void *)y, SBN_F32,
                               2, shape);
    s = sbn_syncbn_forward(ctx->comm, &cfg, &(sbn_syncbn_forward_io){.x = &xv,
                           .running_mean = &rmv, .running_var = &rvv, .num_batches_tracked = &nbt,
                           .y = &yv, .save_mean = &smv, .save_invstd = &siv,
                           .global_count = &count}, ws, bytes + sizeof y, NULL);
    free(ws);
    if (ctx->rank == 0) {
        RNOTE(ctx, s == SBN_ERR_ALIAS, "rank 0: got %s (%s)", sbn_status_name(s),
              sbn_last_error());
        RNOTE(ctx, strstr(sbn_last_error(), "workspace") && strstr(sbn_last_error(), "y"),
              "rank 0 message: %s", sbn_last_error());
    } else {
        RNOTE(ctx, s == SBN_ERR_PEER_FAILED, "rank %d: got %s (%s)", ctx->rank,
              sbn_status_name(s), sbn_last_error());
    }
    RNOTE(ctx, nbt == 5 && count == -1, "state changed: num_batches_tracked %lld, count %lld",
          (long long)nbt, (long long)count);
    for (i = 0; i < C; i++)
        RNOTE(ctx, rm[i] == 0.5f && rv[i] == 2.0f && sm[i] == -1.0f && si[i] == -1.0f,
              "channel %d changed: running %g %g, save %g %g", i, rm[i], rv[i], sm[i], si[i]);
}

static void layer_refuses_before_any_write(void)
{
    CHECK(tsup_run_world(2, 10.0, layer_rank, NULL) == 0);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(stride_wrapping_onto_input),
    SBN_TEST_CASE(stride_wrapping_onto_itself),
    SBN_TEST_CASE(input_stride_overflow),
    SBN_TEST_CASE(workspace_inside_input),
    SBN_TEST_CASE(gather_moments_huge_world),
    SBN_TEST_CASE(gather_moments_count_limit),
    SBN_TEST_CASE(layer_workspace_size_wraps),
    SBN_TEST_CASE(contiguous_shape_overflow),
    SBN_TEST_CASE(misaligned_data),
    SBN_TEST_CASE(non_finite_variance),
    SBN_TEST_CASE(momentum_message_digits),
    SBN_TEST_CASE(unused_strides_and_empty_dims),
    SBN_TEST_CASE(layer_refuses_before_any_write),
};

SBN_TEST_MAIN(k_cases)
