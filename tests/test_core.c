/*
 * test_core.c - the foundation in syncbn.h: the status table (every row enumerated
 * through SBN_STATUS_TABLE, unknown values, SBN_FAILED), dtype sizes and names, the
 * tensor view constructors and numel, the version, sbn_last_error() being per thread,
 * the thread pool (create/destroy for 1..4 threads, bad arguments, results bitwise
 * equal to the serial ones, one pool shared by two threads running ops at once) and
 * the allocator hook: a counting allocator that fails the k-th allocation for every k
 * until pool creation succeeds, checking SBN_ERR_OUT_OF_MEMORY, the out pointer (left
 * alone or set to NULL) and that no allocation is left live after a failure or a destroy.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/alloc_counter.h"
#include "support/support.h"
#include "syncbn/ops.h"

/* ---- status table ---- */

/* Every (name, value, text) row of the table, through the X-macro. */
typedef struct status_row {
    sbn_status status;
    int value;
    const char *name, *text;
} status_row;
#define STATUS_ROW(name_, value_, text_) {name_, value_, #name_, text_},
static const status_row rows_[] = {SBN_STATUS_TABLE(STATUS_ROW)};
#undef STATUS_ROW
enum { NROWS = (int)(sizeof rows_ / sizeof rows_[0]) };

static int in_table(int value)
{
    int i;
    for (i = 0; i < NROWS; i++)
        if (rows_[i].value == value) return 1;
    return 0;
}

static void status_table(void)
{
    int i, j;
    for (i = 0; i < NROWS; i++) {
        const status_row *r = &rows_[i];
        CHECK_MSG((int)r->status == r->value, "%s is %d, table says %d", r->name, (int)r->status,
                  r->value);
        CHECK_MSG(strcmp(sbn_status_name(r->status), r->name) == 0, "sbn_status_name(%d) = \"%s\"",
                  r->value, sbn_status_name(r->status));
        CHECK_MSG(strcmp(sbn_status_str(r->status), r->text) == 0, "sbn_status_str(%s) = \"%s\"",
                  r->name, sbn_status_str(r->status));
        CHECK_MSG((SBN_FAILED(r->status) != 0) == (r->value < 0), "SBN_FAILED(%s)", r->name);
        for (j = 0; j < i; j++)
            CHECK_MSG(rows_[j].value != r->value, "%s: duplicate value", r->name);
    }
    CHECK(in_table(0) && in_table(-1) && NROWS >= 13);
}

static void status_unknown(void)
{
    int values[8], n = 0, v, i;
    for (v = 0; in_table(v); v++) {
    }
    values[n++] = v; /* just past the successes */
    for (v = -1; in_table(v); v--) {
    }
    values[n++] = v; /* just past the failures */
    values[n++] = 1000, values[n++] = -1000, values[n++] = INT_MAX, values[n++] = INT_MIN;
    for (i = 0; i < n; i++) {
        sbn_status s = (sbn_status)values[i];
        CHECK_MSG(strcmp(sbn_status_name(s), "SBN_UNKNOWN_STATUS") == 0, "name(%d) = \"%s\"",
                  values[i], sbn_status_name(s));
        CHECK_MSG(sbn_status_str(s) != NULL && sbn_status_str(s)[0] != 0, "str(%d) empty",
                  values[i]);
    }
    CHECK(SBN_FAILED(SBN_ERR_INTERNAL) && SBN_FAILED(-1) && SBN_FAILED(INT_MIN));
    CHECK(!SBN_FAILED(SBN_OK) && !SBN_FAILED(SBN_NO_SAMPLES) && !SBN_FAILED(SBN_SINGLE_SAMPLE));
}

/* ---- dtypes, views, version ---- */

static void dtypes(void)
{
    static const struct { sbn_dtype dtype; size_t size; const char *name; } rows[] = {
        {SBN_F32, 4, "f32"}, {SBN_F64, 8, "f64"}, {SBN_F16, 2, "f16"},
        {SBN_BF16, 2, "bf16"}, {SBN_I32, 4, "i32"}, {SBN_I64, 8, "i64"},
        {(sbn_dtype)6, 0, "?"}, {(sbn_dtype)99, 0, "?"}, {(sbn_dtype)-1, 0, "?"},
    };
    size_t i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK_MSG(sbn_dtype_size(rows[i].dtype) == rows[i].size, "size(%d) = %zu",
                  (int)rows[i].dtype, sbn_dtype_size(rows[i].dtype));
        CHECK_MSG(strcmp(sbn_dtype_name(rows[i].dtype), rows[i].name) == 0, "name(%d) = \"%s\"",
                  (int)rows[i].dtype, sbn_dtype_name(rows[i].dtype));
    }
}

/* The value of binary16 bits h by its definition, in double (every half is exact). */
static double f16_oracle(unsigned h)
{
    int exponent = (int)(h >> 10) & 31, mantissa = (int)(h & 1023u);
    double v = exponent ? ldexp(1024 + mantissa, exponent - 25) : ldexp(mantissa, -24);
    return (h & 0x8000u) ? -v : v;
}

/* sbn_f16_to_float on all 65536 patterns against the definition, the round trip, and
 * sbn_float_to_f16 at every midpoint between neighbouring finite halves (ties to even)
 * and just beside it, at the overflow threshold and for NaN. */
static void f16_conversions(void)
{
    unsigned h;
    for (h = 0; h < 65536u; h++) {
        float f = sbn_f16_to_float((uint16_t)h);
        int nan = ((h >> 10) & 31) == 31 && (h & 1023u);
        if (nan) {
            CHECK_MSG(isnan(f), "f16 %#x is not NaN as float", h);
            CHECK_MSG(sbn_float_to_f16(f) == ((h & 0x8000u) | 0x7E00u), "NaN %#x", h);
            continue;
        }
        if (((h >> 10) & 31) == 31) {
            CHECK_MSG(isinf(f) && (f < 0) == !!(h & 0x8000u), "f16 %#x is not Inf", h);
        } else {
            CHECK_MSG((double)f == f16_oracle(h), "f16 %#x: %.9g, want %.9g", h, f, f16_oracle(h));
        }
        CHECK_MSG(sbn_float_to_f16(f) == h, "round trip of %#x gives %#x", h, sbn_float_to_f16(f));
        if ((h & 0x7FFFu) < 0x7BFFu) { /* h and h + 1 finite, same sign */
            float next = sbn_f16_to_float((uint16_t)(h + 1));
            float mid = (float)(((double)f + (double)next) / 2); /* exact: 12 bits */
            unsigned even = (h & 1u) ? h + 1 : h;
            CHECK_MSG(sbn_float_to_f16(mid) == even, "midpoint after %#x gives %#x", h,
                      sbn_float_to_f16(mid));
            CHECK_MSG(sbn_float_to_f16(nextafterf(mid, f)) == h, "below midpoint after %#x", h);
            CHECK_MSG(sbn_float_to_f16(nextafterf(mid, next)) == h + 1, "above midpoint after %#x", h);
        }
    }
    CHECK(sbn_float_to_f16(65520.0f) == 0x7C00u && sbn_float_to_f16(-65520.0f) == 0xFC00u);
    CHECK(sbn_float_to_f16(nextafterf(65520.0f, 0.0f)) == 0x7BFFu);
    CHECK(sbn_float_to_f16(1e30f) == 0x7C00u && sbn_float_to_f16(1e-30f) == 0);
}

static int view_is(const sbn_tensor *t, void *data, sbn_dtype dtype, int rank,
                   const int64_t *shape, const int64_t *strides)
{
    int d;
    if (t->data != data || t->dtype != dtype || t->rank != rank) return 0;
    for (d = 0; d < rank; d++)
        if (t->shape[d] != shape[d] || t->strides[d] != strides[d]) return 0;
    return 1;
}

static void tensor_views(void)
{
    static float buf[1024];
    static const int64_t s4[] = {2, 3, 4, 5}, cf4[] = {60, 20, 5, 1}, cl4[] = {60, 1, 15, 3};
    static const int64_t s3[] = {2, 3, 7}, cl3[] = {21, 1, 3};
    static const int64_t s2[] = {5, 3}, c2[] = {3, 1}, s1[] = {9}, c1[] = {1};
    static const int64_t s8[] = {1, 2, 1, 2, 1, 2, 1, 2}, c8[] = {16, 8, 8, 4, 4, 2, 2, 1};
    static const int64_t z[] = {2, 3, 0, 5};
    sbn_tensor t;
    t = sbn_tensor_contiguous(buf, SBN_F32, 4, s4);
    CHECK(view_is(&t, buf, SBN_F32, 4, s4, cf4));
    CHECK(sbn_tensor_numel(&t) == 120);
    t = sbn_tensor_contiguous(buf, SBN_F64, 8, s8);
    CHECK(view_is(&t, buf, SBN_F64, 8, s8, c8));
    CHECK(sbn_tensor_numel(&t) == 16);
    t = sbn_tensor_contiguous(buf, SBN_BF16, 1, s1);
    CHECK(view_is(&t, buf, SBN_BF16, 1, s1, c1));
    t = sbn_tensor_channels_last(buf, SBN_F16, 4, s4);
    CHECK(view_is(&t, buf, SBN_F16, 4, s4, cl4));
    CHECK(sbn_tensor_numel(&t) == 120);
    t = sbn_tensor_channels_last(buf, SBN_F32, 3, s3);
    CHECK(view_is(&t, buf, SBN_F32, 3, s3, cl3));
    t = sbn_tensor_channels_last(buf + 1, SBN_F32, 2, s2);
    CHECK(view_is(&t, buf + 1, SBN_F32, 2, s2, c2)); /* rank 2: the contiguous view */
    t = sbn_tensor_1d(buf, SBN_I64, 9);
    CHECK(view_is(&t, buf, SBN_I64, 1, s1, c1));
    CHECK(sbn_tensor_numel(&t) == 9);
    t = sbn_tensor_contiguous(buf, SBN_F32, 4, z);
    CHECK(sbn_tensor_numel(&t) == 0);
    t = sbn_tensor_1d(NULL, SBN_F32, 0);
    CHECK(sbn_tensor_numel(&t) == 0 && t.rank == 1 && t.shape[0] == 0);
}

static void version(void)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", SBN_VERSION_MAJOR, SBN_VERSION_MINOR,
             SBN_VERSION_PATCH);
    CHECK(sbn_version() != NULL);
    CHECK_MSG(strcmp(sbn_version(), want) == 0, "sbn_version() = \"%s\"", sbn_version());
    CHECK(strcmp(want, "0.2.0") == 0);
}

/* ---- ops used to exercise pools: stats then elemt on an f32 (8, 16, 257) x ---- */

enum { PN = 8, PC = 16, PS = 257 };

typedef struct job {
    tsup_buf x, y, mean, invstd;
    double want_mean[PC]; /* the per-channel mean of x, in double */
    void *ws;
    size_t ws_bytes;
} job;

static void job_init(job *j, uint64_t seed)
{
    static const int64_t shape[] = {PN, PC, PS};
    double *v = malloc(sizeof(double) * PN * PC * PS);
    tsup_rng rng = tsup_rng_seed(seed);
    size_t a = 0, b = 0;
    int64_t i;
    tsup_fill_normal(&rng, v, PN * PC * PS, 0.5, 2.0, SBN_F32);
    memset(j->want_mean, 0, sizeof j->want_mean);
    for (i = 0; i < PN * PC * PS; i++) j->want_mean[i / PS % PC] += v[i] / (PN * PS);
    j->x = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_LAST, v);
    j->y = tsup_make(SBN_F32, 3, shape, TSUP_CHANNELS_FIRST, NULL);
    j->mean = tsup_make_1d(SBN_F32, PC, NULL);
    j->invstd = tsup_make_1d(SBN_F64, PC, NULL);
    sbn_stats_workspace_size(&j->x.view, &a);
    sbn_elemt_workspace_size(&j->x.view, &b);
    j->ws_bytes = a > b ? a : b;
    j->ws = malloc(j->ws_bytes + 1);
    free(v);
}

static void job_free(job *j)
{
    tsup_free(&j->x), tsup_free(&j->y), tsup_free(&j->mean), tsup_free(&j->invstd);
    free(j->ws);
}

static sbn_status job_run(job *j, sbn_pool_t *pool)
{
    sbn_status st = sbn_stats(&j->x.view, 1e-5, &j->mean.view, &j->invstd.view, j->ws,
                              j->ws_bytes, pool);
    if (SBN_FAILED(st)) return st;
    return sbn_elemt(&j->x.view, &j->mean.view, &j->invstd.view, NULL, NULL, &j->y.view, j->ws,
                     j->ws_bytes, pool);
}

/* 1 when the computed means match the double ones to f32 accuracy. */
static int job_correct(const job *j)
{
    double got[PC];
    tsup_read(&j->mean.view, got);
    return tsup_close("mean", got, j->want_mean, PC, 1e-5, 1e-5);
}

/* 1 when the outputs of a and b are bitwise equal. */
static int job_same(const job *a, const job *b)
{
    return tsup_same_bytes("y", a->y.alloc, b->y.alloc, a->y.alloc_bytes) &&
           tsup_same_bytes("mean", a->mean.alloc, b->mean.alloc, a->mean.alloc_bytes) &&
           tsup_same_bytes("invstd", a->invstd.alloc, b->invstd.alloc, a->invstd.alloc_bytes);
}

/* ---- pool ---- */

static void pool_lifecycle(void)
{
    int t;
    CHECK(sbn_pool_threads(NULL) == 1);
    sbn_pool_destroy(NULL);
    for (t = 1; t <= 4; t++) {
        sbn_pool_t *pool = NULL;
        CHECK_OK(sbn_pool_create(t, &pool));
        CHECK(pool != NULL);
        CHECK_MSG(sbn_pool_threads(pool) == t, "threads %d, want %d", sbn_pool_threads(pool), t);
        CHECK(sbn_last_error()[0] == 0);
        sbn_pool_destroy(pool);
    }
}

static void pool_errors(void)
{
    static const int bad[] = {0, -1, 1025, 100000, INT_MIN, INT_MAX};
    sbn_pool_t *sentinel = (sbn_pool_t *)(uintptr_t)0x1234, *pool;
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pool = sentinel;
        CHECK_STATUS(sbn_pool_create(bad[i], &pool), SBN_ERR_BAD_VALUE);
        CHECK_MSG(pool == sentinel || pool == NULL, "pool set to %p on failure (threads %d)",
                  (void *)pool, bad[i]);
        CHECK_MSG(strstr(sbn_last_error(), "threads") != NULL, "message \"%s\"", sbn_last_error());
    }
    CHECK_STATUS(sbn_pool_create(2, NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK_MSG(strstr(sbn_last_error(), "pool") != NULL, "message \"%s\"", sbn_last_error());
    CHECK_OK(sbn_pool_create(2, &pool));
    CHECK(sbn_last_error()[0] == 0);
    sbn_pool_destroy(pool);
}

static void pool_max_threads(void)
{
    sbn_pool_t *pool = NULL;
    job a, b;
    sbn_status st = sbn_pool_create(1024, &pool);
    if (st == SBN_ERR_THREAD) { /* the machine's thread limit, not the library */
        printf("    1024 threads could not be started here: %s\n", sbn_last_error());
        return;
    }
    CHECK_OK(st);
    CHECK(sbn_pool_threads(pool) == 1024);
    job_init(&a, 5), job_init(&b, 5);
    CHECK_OK(job_run(&a, NULL));
    CHECK_OK(job_run(&b, pool));
    CHECK(job_same(&a, &b));
    sbn_pool_destroy(pool);
    job_free(&a), job_free(&b);
}

static void pool_results_match_serial(void)
{
    job serial, par;
    int t;
    job_init(&serial, 11);
    CHECK_OK(job_run(&serial, NULL));
    CHECK(job_correct(&serial));
    for (t = 1; t <= 4; t++) {
        sbn_pool_t *pool = NULL;
        job_init(&par, 11);
        CHECK_OK(sbn_pool_create(t, &pool));
        CHECK_OK(job_run(&par, pool));
        CHECK_MSG(job_same(&serial, &par), "%d threads differ from serial", t);
        sbn_pool_destroy(pool);
        job_free(&par);
    }
    job_free(&serial);
}

typedef struct worker {
    sbn_pool_t *pool;
    job *mine, *want;
    int iterations, errors;
    char first_error[256];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    int i;
    for (i = 0; i < w->iterations; i++) {
        sbn_status st;
        memset(w->mine->y.view.data, 0, PN * PC * PS * sizeof(float));
        st = job_run(w->mine, w->pool);
        if (SBN_FAILED(st) || !job_same(w->mine, w->want)) {
            if (!w->errors++)
                snprintf(w->first_error, sizeof w->first_error, "iteration %d: %s %s", i,
                         sbn_status_name(st), sbn_last_error());
        }
    }
    return NULL;
}

static void pool_shared_by_two_threads(void)
{
    job want[2], mine[2];
    worker w[2];
    pthread_t th[2];
    sbn_pool_t *pool = NULL;
    int i;
    CHECK_OK(sbn_pool_create(4, &pool));
    for (i = 0; i < 2; i++) {
        job_init(&want[i], 100 + (uint64_t)i);
        job_init(&mine[i], 100 + (uint64_t)i);
        CHECK_OK(job_run(&want[i], NULL));
        CHECK(job_correct(&want[i]));
        memset(&w[i], 0, sizeof w[i]);
        w[i].pool = pool, w[i].mine = &mine[i], w[i].want = &want[i], w[i].iterations = 40;
    }
    for (i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 2; i++)
        CHECK_MSG(w[i].errors == 0, "thread %d: %d bad iterations, first: %s", i, w[i].errors,
                  w[i].first_error);
    sbn_pool_destroy(pool);
    for (i = 0; i < 2; i++) job_free(&want[i]), job_free(&mine[i]);
}

/* ---- sbn_last_error() is per thread ---- */

static void *fail_in_thread(void *arg)
{
    char *out = arg;
    sbn_pool_t *pool;
    snprintf(out, 256, "%s", sbn_last_error()); /* a fresh thread starts with "" */
    if (sbn_pool_create(0, &pool) != SBN_ERR_BAD_VALUE) snprintf(out, 256, "create(0) accepted");
    return NULL;
}

static void last_error_per_thread(void)
{
    char seen[256] = "unset", mine[256];
    pthread_t th;
    CHECK_STATUS(sbn_pool_create(2, NULL), SBN_ERR_NULL_ARGUMENT);
    snprintf(mine, sizeof mine, "%s", sbn_last_error());
    CHECK(mine[0] != 0);
    CHECK(pthread_create(&th, NULL, fail_in_thread, seen) == 0);
    pthread_join(th, NULL);
    CHECK_MSG(seen[0] == 0, "new thread saw \"%s\"", seen);
    CHECK_MSG(strcmp(sbn_last_error(), mine) == 0, "main thread's message became \"%s\"",
              sbn_last_error());
}

/* ---- allocator hook ---- */

static void allocator_fail_each(void)
{
    sbn_pool_t *sentinel = (sbn_pool_t *)(uintptr_t)0x4321;
    long k, total = -1;
    for (k = 1; k <= 10000 && total < 0; k++) {
        tsup_counter a = {0};
        sbn_pool_t *pool = sentinel;
        sbn_status st;
        a.fail_at = k;
        tsup_counter_install(&a);
        st = sbn_pool_create(4, &pool);
        if (st == SBN_ERR_OUT_OF_MEMORY) {
            CHECK_MSG(a.calls >= k, "k=%ld: OUT_OF_MEMORY after only %ld allocations", k, a.calls);
            CHECK_MSG(pool == sentinel || pool == NULL, "k=%ld: pool set to %p on failure", k,
                      (void *)pool);
            CHECK_MSG(a.live == 0, "k=%ld: %ld allocations leaked on failure", k, a.live);
            CHECK_MSG(sbn_last_error()[0] != 0, "k=%ld: no message", k);
        } else {
            CHECK_MSG(st == SBN_OK, "k=%ld: sbn_pool_create returned %s (%s)", k,
                      sbn_status_name(st), sbn_last_error());
            CHECK_MSG(a.calls < k, "k=%ld: allocation %ld failed but create returned SBN_OK", k, k);
            CHECK(sbn_pool_threads(pool) == 4);
            sbn_pool_destroy(pool);
            CHECK_MSG(a.live == 0, "k=%ld: %ld allocations leaked after destroy", k, a.live);
            total = a.calls;
        }
    }
    sbn_set_allocator(NULL, NULL, NULL);
    CHECK_MSG(total >= 1, "sbn_pool_create never used the allocator (k reached %ld)", k);
    printf("    sbn_pool_create(4) makes %ld allocation(s)\n", total);
}

static void allocator_no_allocation_in_ops(void)
{
    tsup_counter a = {0};
    sbn_pool_t *pool = NULL;
    job serial, par;
    long calls;
    tsup_counter_install(&a);
    CHECK_OK(sbn_pool_create(3, &pool));
    CHECK(a.calls >= 1 && a.live >= 1);
    calls = a.calls;
    job_init(&serial, 3), job_init(&par, 3);
    CHECK_OK(job_run(&serial, NULL));
    CHECK_OK(job_run(&par, pool));
    CHECK(job_same(&serial, &par));
    CHECK_MSG(a.calls == calls, "ops made %ld allocations", a.calls - calls);
    sbn_pool_destroy(pool);
    CHECK(a.live == 0);
    /* the default allocator is back: nothing reaches the counter any more */
    sbn_set_allocator(NULL, NULL, NULL);
    calls = a.calls;
    CHECK_OK(sbn_pool_create(2, &pool));
    sbn_pool_destroy(pool);
    CHECK_MSG(a.calls == calls && a.live == 0, "the counting allocator is still in use");
    job_free(&serial), job_free(&par);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(status_table),
    SBN_TEST_CASE(status_unknown),
    SBN_TEST_CASE(dtypes),
    SBN_TEST_CASE(f16_conversions),
    SBN_TEST_CASE(tensor_views),
    SBN_TEST_CASE(version),
    SBN_TEST_CASE(pool_lifecycle),
    SBN_TEST_CASE(pool_errors),
    SBN_TEST_CASE(pool_max_threads),
    SBN_TEST_CASE(pool_results_match_serial),
    SBN_TEST_CASE(pool_shared_by_two_threads),
    SBN_TEST_CASE(last_error_per_thread),
    SBN_TEST_CASE(allocator_fail_each),
    SBN_TEST_CASE(allocator_no_allocation_in_ops),
};

SBN_TEST_MAIN(k_cases)
