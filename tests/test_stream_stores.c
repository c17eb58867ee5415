/*
 * test_stream_stores.c - the kernel tables for tensors far larger than the
 * last-level cache (sbn__beyond_cache: maps that write with non-temporal stores,
 * AVX-512 row reductions that prefetch the next block of short rows) and the
 * reductions over short runs that prefetch the next channel's runs give the same
 * bits as the cached ones. Each case runs a batch norm step
 * (support/train_pair.h: training forward and backward, eval forward) with
 * streaming stores off and no pool, then on, with no pool and with pools of 2 and
 * 3 threads, and compares every output byte. Shapes cover NCHW planes whose
 * lengths leave every head before a 64-byte line, channels-last rows, (N, C) and
 * strided views, f32/f64/f16/bf16. The kernels themselves are compared with scalar
 * at every offset by test_kernels_stream.c and test_kernels_maps.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#include "ops/plan.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/ops.h"

static void run_case(const tsup_step_case *k)
{
    tsup_step_inputs in;
    tsup_step_outputs base;
    int p;
    tsup_step_inputs_make(k, 11, &in);
    sbn__stream_stores_set(0);
    tsup_step_run(k, &in, &base, NULL);
    sbn__stream_stores_set(1);
    for (p = 0; p < 3; p++)
        if (!tsup_step_matches(k, &in, &base, in.pools[p]))
            sbn_test_fail(__FILE__, __LINE__, "%s %s: streaming stores, pool %d differ",
                          sbn_dtype_name(k->dtype), tsup_layout_name(k->layout), p);
    sbn__stream_stores_set(-1);
    tsup_step_free(&base);
    tsup_step_inputs_free(&in);
}

static void streaming_bits_equal_cached(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {3, 24, 5, 7}, TSUP_CHANNELS_FIRST}, /* planes of 35: every head */
        {SBN_F32, 4, {2, 12, 41, 53}, TSUP_CHANNELS_FIRST},
        {SBN_F64, 3, {4, 13, 515}, TSUP_CHANNELS_FIRST},
        {SBN_F16, 4, {2, 16, 9, 9}, TSUP_CHANNELS_FIRST},
        {SBN_BF16, 4, {2, 16, 13, 11}, TSUP_CHANNELS_FIRST},
        {SBN_BF16, 4, {2, 16, 9, 9}, TSUP_STRIDED},
        {SBN_F32, 2, {1500, 256, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C): rows */
        {SBN_F32, 4, {4, 64, 8, 8}, TSUP_CHANNELS_LAST},
        {SBN_F32, 4, {2, 256, 3, 3}, TSUP_CHANNELS_LAST},
        {SBN_F64, 4, {2, 24, 5, 5}, TSUP_CHANNELS_LAST},
        {SBN_F16, 4, {2, 40, 6, 6}, TSUP_CHANNELS_LAST},
        {SBN_BF16, 4, {2, 512, 4, 4}, TSUP_CHANNELS_LAST},
        /* rows over several blocks of 128 with slices the row reductions prefetch */
        {SBN_F32, 4, {4, 32, 16, 20}, TSUP_CHANNELS_LAST},
        {SBN_BF16, 4, {3, 64, 12, 12}, TSUP_CHANNELS_LAST},
        {SBN_F64, 4, {2, 24, 10, 10}, TSUP_CHANNELS_LAST},
        {SBN_F16, 2, {2100, 48, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C): past a chunk */
        /* short runs that prefetch: windows, tasks of 64 channels and chunks crossed */
        {SBN_F32, 4, {48, 70, 7, 7}, TSUP_CHANNELS_FIRST},
        {SBN_BF16, 4, {45, 66, 8, 8}, TSUP_CHANNELS_FIRST},
        {SBN_F64, 4, {5, 3, 4, 5}, TSUP_CHANNELS_FIRST},
    };
    const sbn_kernels *cached = sbn__kernels(), *streaming = sbn__kernels_streaming();
    unsigned i;
    if (streaming->normalize[SBN_KD_F32] == cached->normalize[SBN_KD_F32])
        printf("    note: the %s kernels have no streaming maps; the two runs share kernels\n",
               cached->isa);
    else
        printf("    %s against %s\n", streaming->isa, cached->isa);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
        CHECK_MSG(sbn_test_failures() == 0, "case %u", i);
    }
}

/* The streaming table shares the plane reductions and conversions with the cached one;
 * its maps and row reductions are its own or the cached ones, never missing. */
static void streaming_table_shares_plane_reductions(void)
{
    const sbn_kernels *cached = sbn__kernels(), *streaming = sbn__kernels_streaming();
    int d;
    for (d = 0; d < SBN_KD_COUNT; d++) {
        CHECK(streaming->accum[d] == cached->accum[d]);
        CHECK(streaming->bwd_accum[d] == cached->bwd_accum[d]);
        CHECK(streaming->row_accum[d] != NULL && streaming->row_bwd_accum[d] != NULL);
        CHECK(streaming->normalize[d] != NULL && streaming->backward[d] != NULL);
        CHECK(streaming->row_normalize[d] != NULL && streaming->row_backward[d] != NULL);
    }
    CHECK(streaming->load_f32 == cached->load_f32 && streaming->store_bf16 == cached->store_bf16);
}

/* The short runs prefetched beyond the cache are those of 256 bytes a tensor or less
 * (7x7 and 8x8 planes of fp32), never within the cache or for longer runs. */
static void prefetched_runs(void)
{
    static const struct {
        sbn_dtype dtype;
        int64_t shape[4];
        int expected;
    } cases[] = {
        {SBN_F32, {32, 64, 7, 7}, 1},
        {SBN_F32, {32, 64, 8, 8}, 1},
        {SBN_BF16, {32, 64, 8, 8}, 1},
        {SBN_F32, {32, 64, 9, 9}, 0},   /* 324 bytes */
        {SBN_BF16, {32, 64, 14, 14}, 0}, /* 392 bytes */
        {SBN_F32, {1, 64, 7, 7}, 0},     /* one run a channel: no short-run path */
    };
    static float data[32 * 64 * 14 * 14];
    unsigned i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sbn_tensor x = sbn_tensor_contiguous(data, cases[i].dtype, 4, cases[i].shape);
        const sbn_tensor *t[2];
        sbn__walk w;
        t[0] = t[1] = &x;
        sbn__walk_init(&w, t, 2);
        CHECK_MSG(sbn__plan_prefetch_runs(&w, 1) == cases[i].expected, "case %u", i);
        CHECK_MSG(sbn__plan_prefetch_runs(&w, 0) == 0, "case %u in the cache", i);
    }
}

/* The lines sbn__walk_run_lines visits (the ones the reduction prefetches), recorded. */
#define MAX_LINES 512
typedef struct line_log {
    uintptr_t line[MAX_LINES];
    int n, overflow;
} line_log;

static void record_line(void *ctx, uintptr_t line)
{
    line_log *log = ctx;
    if (log->n < MAX_LINES)
        log->line[log->n++] = line;
    else
        log->overflow = 1;
}

static int has_line(const line_log *log, uintptr_t line)
{
    int i;
    for (i = 0; i < log->n; i++)
        if (log->line[i] == line) return 1;
    return 0;
}

/* The lines visited for channel c over rows [r0, r1) are those of the elements of every
 * whole run (image) of channel c that holds one of those rows, in each tensor, and no
 * other: computed here element by element from the views' strides, for a contiguous
 * NCHW pair, a window starting and ending inside runs, and an x whose images run
 * backwards in memory (negative batch stride). */
static void prefetched_lines_cover_the_runs(void)
{
    static uint16_t mem_dy[5 * 6 * 7 * 7], mem_x[5 * 6 * 7 * 7];
    static const int64_t shape[4] = {5, 6, 7, 7};
    static const int64_t windows[][3] = {{3, 0, 245}, {0, 59, 152}, {5, 49, 50}, {2, 100, 100}};
    unsigned k;
    for (k = 0; k < sizeof windows / sizeof windows[0]; k++) {
        sbn_tensor dy = sbn_tensor_contiguous(mem_dy, SBN_BF16, 4, shape);
        sbn_tensor x = sbn_tensor_contiguous(mem_x, SBN_BF16, 4, shape);
        const sbn_tensor *t[2];
        int64_t c = windows[k][0], r0 = windows[k][1], r1 = windows[k][2], n, e;
        int i, expected = 0;
        line_log log;
        sbn__walk w;
        x.data = mem_x + 4 * 6 * 49; /* image n at mem_x + (4 - n) * 294 */
        x.strides[0] = -6 * 49;
        t[0] = &dy;
        t[1] = &x;
        sbn__walk_init(&w, t, 2);
        CHECK_MSG(sbn__walk_short_runs(&w), "window %u: not a short-run walk", k);
        memset(&log, 0, sizeof log);
        sbn__walk_run_lines(&w, c, r0, r1, record_line, &log);
        CHECK(!log.overflow);
        for (i = 0; i < 2; i++)
            for (n = r0 / 49; r1 > r0 && n <= (r1 - 1) / 49; n++)
                for (e = 0; e < 49; e++) {
                    const uint16_t *el = (const uint16_t *)t[i]->data + n * t[i]->strides[0] +
                                         c * t[i]->strides[1] + e;
                    uintptr_t line = (uintptr_t)el & ~(uintptr_t)63;
                    if (e == 0 || ((uintptr_t)(el - 1) & ~(uintptr_t)63) != line) expected++;
                    CHECK_MSG(has_line(&log, line), "window %u: tensor %d image %lld element "
                              "%lld: its line not visited", k, i, (long long)n, (long long)e);
                }
        /* every visited line is one of those (a run's lines are visited once each) */
        CHECK_MSG(log.n == expected, "window %u: %d lines visited, %d expected", k, log.n,
                  expected);
    }
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(streaming_bits_equal_cached),
    SBN_TEST_CASE(prefetched_runs),
    SBN_TEST_CASE(prefetched_lines_cover_the_runs),
    SBN_TEST_CASE(streaming_table_shares_plane_reductions),
};

SBN_TEST_MAIN(k_cases)
