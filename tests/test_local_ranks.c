/*
 * test_local_ranks.c - the default thread count of a process that is one of several
 * ranks of a job on this machine (local_ranks.c): which launcher variable counts
 * (Open MPI's, then Hydra's, then torchrun's; an invalid one is skipped), the share of
 * the node's CPUs each rank gets, and the default pool, sbn_info and the aclnn pool size
 * following the variables as they are set and unset.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "core/machine.h"
#include "harness/harness.h"
#include "support/env_now.h"
#include "syncbn/info.h"
#include "syncbn/syncbn.h"

static const char *const k_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                     "LOCAL_WORLD_SIZE"};

static void clear_vars(void)
{
    size_t i;
    for (i = 0; i < sizeof k_vars / sizeof k_vars[0]; i++) tsup_unsetenv_now(k_vars[i]);
    tsup_unsetenv_now("SBN_NUM_THREADS");
}

/* Whole numbers 1..65536 count; anything else is not a rank count. */
static void values_parsed(void)
{
    static const char *const bad[] = {"", "0", "-1", "+2", " 2", "2 ", "2x", "1e3", "65537",
                                      "9999999", "0x10", "two"};
    size_t i;
    CHECK(sbn__parse_local_ranks("1") == 1);
    CHECK(sbn__parse_local_ranks("8") == 8);
    CHECK(sbn__parse_local_ranks("008") == 8);
    CHECK(sbn__parse_local_ranks("65536") == 65536);
    CHECK(sbn__parse_local_ranks(NULL) == 0);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(sbn__parse_local_ranks(bad[i]) == 0, "\"%s\"", bad[i]);
}

/* The share: cpus, at most node / ranks, at least 1. */
static void shares(void)
{
    CHECK(sbn__cpus_per_rank(64, 64, 1) == 64);
    CHECK(sbn__cpus_per_rank(64, 64, 8) == 8);  /* unbound ranks */
    CHECK(sbn__cpus_per_rank(32, 64, 8) == 8);  /* bound to a socket each */
    CHECK(sbn__cpus_per_rank(1, 64, 8) == 1);   /* bound to a core each */
    CHECK(sbn__cpus_per_rank(64, 64, 3) == 21); /* a share rounds down */
    CHECK(sbn__cpus_per_rank(8, 4, 16) == 1);   /* more ranks than CPUs */
    CHECK(sbn__cpus_per_rank(4, 64, 2) == 4);   /* the mask is smaller than the share */
}

/* The largest valid variable counts (nested launchers); invalid ones are skipped. */
static void which_variable(void)
{
    const char *source = "x";
    clear_vars();
    CHECK(sbn__local_ranks(&source) == 1 && source == NULL);
    CHECK(tsup_setenv_now("LOCAL_WORLD_SIZE", "4") == 0);
    CHECK(sbn__local_ranks(&source) == 4 && strcmp(source, "LOCAL_WORLD_SIZE") == 0);
    CHECK(tsup_setenv_now("MPI_LOCALNRANKS", "3") == 0);
    CHECK(sbn__local_ranks(&source) == 4 && strcmp(source, "LOCAL_WORLD_SIZE") == 0);
    CHECK(tsup_setenv_now("OMPI_COMM_WORLD_LOCAL_SIZE", "6") == 0);
    CHECK(sbn__local_ranks(&source) == 6 && strcmp(source, "OMPI_COMM_WORLD_LOCAL_SIZE") == 0);
    CHECK(tsup_setenv_now("OMPI_COMM_WORLD_LOCAL_SIZE", "lots") == 0); /* skipped */
    CHECK(sbn__local_ranks(&source) == 4 && strcmp(source, "LOCAL_WORLD_SIZE") == 0);
    /* mpirun of one rank a node starting torchrun of eight workers */
    CHECK(tsup_setenv_now("OMPI_COMM_WORLD_LOCAL_SIZE", "1") == 0);
    CHECK(tsup_unsetenv_now("MPI_LOCALNRANKS") == 0);
    CHECK(tsup_setenv_now("LOCAL_WORLD_SIZE", "8") == 0);
    CHECK(sbn__local_ranks(&source) == 8 && strcmp(source, "LOCAL_WORLD_SIZE") == 0);
    /* none valid */
    CHECK(tsup_setenv_now("OMPI_COMM_WORLD_LOCAL_SIZE", "0") == 0);
    CHECK(tsup_setenv_now("MPI_LOCALNRANKS", "-3") == 0);
    CHECK(tsup_setenv_now("LOCAL_WORLD_SIZE", "8 ") == 0);
    CHECK(sbn__local_ranks(&source) == 1 && source == NULL);
    CHECK(sbn__local_ranks(NULL) == 1);
    clear_vars();
}

/* The default pool, sbn_info and its threads follow the variables; SBN_NUM_THREADS wins. */
static void default_pool_takes_its_share(void)
{
    const sbn__machine *m = sbn__machine_get();
    int cpus = sbn__cpus_within_quota(sbn__affinity_cpus(), m->cpu_quota);
    int node = sbn__cpus_within_quota(m->node_cpus, m->cpu_quota);
    int ranks;
    sbn_info in;
    clear_vars();
    CHECK(sbn_pool_default_threads() == (cpus > 1024 ? 1024 : cpus));
    for (ranks = 1; ranks <= 2 * node + 1; ranks++) {
        char text[16];
        int want = node / ranks < 1 ? 1 : node / ranks;
        if (want > cpus) want = cpus;
        if (want > 1024) want = 1024;
        snprintf(text, sizeof text, "%d", ranks);
        CHECK(tsup_setenv_now("OMPI_COMM_WORLD_LOCAL_SIZE", text) == 0);
        CHECK_MSG(sbn_pool_default_threads() == want, "%d ranks: %d threads, want %d", ranks,
                  sbn_pool_default_threads(), want);
        memset(&in, 0, sizeof in);
        in.size = sizeof in;
        CHECK(sbn_info_get(&in) == SBN_OK);
        CHECK(in.threads == (node / ranks < 1 ? 1 : node / ranks < cpus ? node / ranks : cpus));
        CHECK(in.local_ranks == ranks);
        CHECK(strcmp(in.local_ranks_source, ranks > 1 ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "") == 0);
        CHECK(in.cpus == cpus); /* the CPUs stay the mask's: only the default is shared */
    }
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "3") == 0);
    CHECK(sbn_pool_default_threads() == 3);
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "many") == 0); /* refused: the share again */
    CHECK(sbn_pool_default_threads() == 1); /* 2 node + 1 ranks: one each */
    clear_vars();
    memset(&in, 0, sizeof in);
    in.size = sizeof in;
    CHECK(sbn_info_get(&in) == SBN_OK);
    CHECK(in.local_ranks == 1 && strcmp(in.local_ranks_source, "") == 0);
    printf("    node %d cpus, this process %d\n", node, cpus);
}

/* A mask narrowed to one CPU keeps one thread whatever the share; the machine's CPUs the
 * job may use are at least the mask's (machine.c). */
static void narrowed_mask(void)
{
    cpu_set_t one;
    const sbn__machine *m = sbn__machine_get();
    clear_vars();
    CHECK(m->node_cpus >= m->cpus_affinity && m->cpus_affinity >= 1);
    CPU_ZERO(&one);
    CHECK(sched_getcpu() >= 0);
    CPU_SET(sched_getcpu(), &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(sbn_pool_default_threads() == 1);
    CHECK(tsup_setenv_now("LOCAL_WORLD_SIZE", "2") == 0);
    CHECK(sbn_pool_default_threads() == 1);
    clear_vars();
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(values_parsed),
    SBN_TEST_CASE(shares),
    SBN_TEST_CASE(which_variable),
    SBN_TEST_CASE(default_pool_takes_its_share),
    SBN_TEST_CASE(narrowed_mask),
};

SBN_TEST_MAIN(k_cases)
