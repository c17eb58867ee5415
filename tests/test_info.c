/*
 * test_info.c - sbn_info_get (syncbn/info.h), what `syncbn info` prints: its facts are
 * the library's own (the kernel table in use, the machine description, the parsed
 * environment, the size rules of plan.h), a caller built against a shorter struct gets
 * only the bytes it asked for, and bad arguments get a status and a sentence.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <string.h>

#include "core/env.h"
#include "core/machine.h"
#include "harness/harness.h"
#include "kernels/kernels.h"
#include "ops/plan.h"
#include "support/env_now.h"
#include "syncbn/info.h"

static void test_info_matches_the_library(void)
{
    sbn_info in;
    const sbn__machine *m = sbn__machine_get();
    int i;
    memset(&in, 0xA5, sizeof in);
    in.size = sizeof in;
    CHECK_OK(sbn_info_get(&in));
    CHECK(in.size == sizeof in);
    CHECK(strcmp(in.kernels, sbn__kernels()->isa) == 0);
    CHECK_MSG(strstr(in.kernels_usable, in.kernels) != NULL, "usable '%s' lacks '%s'",
              in.kernels_usable, in.kernels);
    CHECK(strncmp(in.kernels_usable, "scalar", 6) == 0); /* always built, always usable */
    CHECK(in.cpus_affinity == sbn__affinity_cpus());
    CHECK(in.cpus == sbn__cpus_within_quota(sbn__affinity_cpus(), m->cpu_quota));
    CHECK(in.cpu_quota == m->cpu_quota);
    for (i = 0; i < 3; i++) {
        CHECK(in.cache[i].bytes == m->cache[i].bytes && in.cache[i].bytes > 0);
        CHECK(in.cache[i].sharing == m->cache[i].sharing);
        CHECK(in.cache[i].reported == m->cache[i].reported);
        CHECK(in.cache[i].source != NULL && strcmp(in.cache[i].source, m->cache[i].source) == 0);
    }
    CHECK(in.row_tile_bytes == (double)sbn__cache_bytes(1));
    CHECK(in.map_stream_bytes == SBN_MAP_STREAM_SHARE * (double)sbn__cache_bytes(3));
    CHECK(in.rows_stream_bytes == SBN_ROWS_STREAM_SHARE * (double)sbn__cache_bytes(3));
    CHECK(in.reduce_prefetch_bytes == SBN_REDUCE_PREFETCH_SHARE * (double)sbn__cache_bytes(3));
    CHECK(in.prefetch_run_bytes == SBN_PREFETCH_RUN_BYTES);
    CHECK(in.rows_stream_min_row_bytes == SBN_ROWS_STREAM_MIN_BYTES);
    CHECK(in.l3_instances == m->l3_instances && in.l3_instances >= 1);
    CHECK(in.l3_instances_reported == m->l3_instances_reported);
    CHECK(in.max_threads == SBN_ENV_MAX_THREADS);
    CHECK(in.comm_timeout_default == SBN_COMM_DEFAULT_TIMEOUT);
    CHECK(in.comm_timeout_max == SBN_COMM_MAX_TIMEOUT);
    CHECK(in.nvars == SBN_ENV_COUNT);
    for (i = 0; i < in.nvars; i++) {
        CHECK(strcmp(in.var[i].name, tsup_env_names[i]) == 0);
        CHECK(in.var[i].value != NULL && in.var[i].message != NULL);
        CHECK(memchr(in.var[i].state, '\0', sizeof in.var[i].state) != NULL);
    }
}

/* Each variable as the library parsed it: set, valid, value, message and state. */
static void test_info_environment(void)
{
    sbn_info in;
    char want[SBN_INFO_TEXT];
    in.size = sizeof in;
    tsup_setenv_now("SBN_NUM_THREADS", " 3 ");
    tsup_setenv_now("SBN_STREAM_STORES", "2");
    tsup_setenv_now("SBN_COMM_TIMEOUT", "7");
    CHECK_OK(sbn_info_get(&in));
    CHECK(in.threads == 3);
    CHECK(in.var[SBN_ENV_NUM_THREADS].set && in.var[SBN_ENV_NUM_THREADS].valid);
    CHECK(strcmp(in.var[SBN_ENV_NUM_THREADS].value, " 3 ") == 0);
    CHECK(strcmp(in.var[SBN_ENV_NUM_THREADS].message, "") == 0);
    CHECK(in.var[SBN_ENV_STREAM_STORES].set && !in.var[SBN_ENV_STREAM_STORES].valid);
    CHECK(in.stream_stores == -1); /* invalid: the default, by size */
    CHECK(strcmp(in.var[SBN_ENV_STREAM_STORES].message,
                 sbn__env_get()->var[SBN_ENV_STREAM_STORES].message) == 0);
    CHECK(strstr(in.var[SBN_ENV_STREAM_STORES].message, "\"2\"") != NULL);
    sbn__env_describe(sbn__env_get(), SBN_ENV_STREAM_STORES, want, sizeof want);
    CHECK(strcmp(in.var[SBN_ENV_STREAM_STORES].state, want) == 0);
    CHECK(in.comm_timeout == 7.0);
    CHECK(!in.var[SBN_ENV_ROW_TILES].set && in.row_tiles == -1);
    tsup_unsetenv_now("SBN_NUM_THREADS");
    tsup_unsetenv_now("SBN_STREAM_STORES");
    tsup_unsetenv_now("SBN_COMM_TIMEOUT");
    CHECK_OK(sbn_info_get(&in));
    CHECK(in.threads == sbn__default_cpus() && !in.var[SBN_ENV_NUM_THREADS].set);
    CHECK(in.threads <= in.cpus && in.threads >= 1);
    CHECK(in.comm_timeout == 0.0);
}

/* A caller that knows a shorter struct gets those bytes and not one more. */
static void test_info_shorter_struct(void)
{
    sbn_info in;
    size_t known = offsetof(sbn_info, cpus);
    unsigned char *bytes = (unsigned char *)&in;
    size_t i;
    memset(&in, 0x5A, sizeof in);
    in.size = known;
    CHECK_OK(sbn_info_get(&in));
    CHECK(in.size == known);
    CHECK(in.kernels != NULL && strcmp(in.kernels, sbn__kernels()->isa) == 0);
    for (i = known; i < sizeof in; i++)
        CHECK_MSG(bytes[i] == 0x5A, "byte %zu past the %zu asked for was written", i, known);
}

static void test_info_bad_arguments(void)
{
    sbn_info in;
    CHECK_STATUS(sbn_info_get(NULL), SBN_ERR_NULL_ARGUMENT);
    CHECK(strstr(sbn_last_error(), "info") != NULL);
    in.size = sizeof(size_t);
    CHECK_STATUS(sbn_info_get(&in), SBN_ERR_BAD_VALUE);
    CHECK(strstr(sbn_last_error(), "info->size") != NULL);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(test_info_matches_the_library),
    SBN_TEST_CASE(test_info_environment),
    SBN_TEST_CASE(test_info_shorter_struct),
    SBN_TEST_CASE(test_info_bad_arguments),
};

SBN_TEST_MAIN(k_cases)
