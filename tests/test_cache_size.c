/*
 * test_cache_size.c - the cache sizes the size-based schedules use (machine.c)
 * and the rule built on them (sbn__beyond_cache). Where the kernel describes the
 * caches in /sys, the sizes are its per-instance sizes (the C library's sysconf
 * can be far off: 320 MiB for a 32 MiB L3 on an AMD EPYC VM), read here with a
 * parser of the test's own; elsewhere they are positive and L3 >= L2. The rule:
 * tensors over the asked share of the L3 are beyond the cache, the override and
 * SBN_STREAM_STORES force it either way. The L3 instances among the process's CPUs:
 * which counts are believed, and the count from a /sys tree made here.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/machine.h"
#include "harness/harness.h"
#include "ops/plan.h"
#include "syncbn/ops.h"

/* The size in bytes of cpu0's data or unified cache of `level` per /sys, or -1. */
static long sys_size(int level)
{
    int i;
    for (i = 0; i < 16; i++) {
        char path[128], buf[64] = "";
        long lv = -1, kib = -1;
        int data = 0;
        FILE *f;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(buf, sizeof buf, f)) lv = atol(buf);
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(buf, sizeof buf, f))
            data = strncmp(buf, "Data", 4) == 0 || strncmp(buf, "Unified", 7) == 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
        if (strchr(buf, 'K') != NULL) kib = atol(buf);
        else if (strchr(buf, 'M') != NULL) kib = atol(buf) * 1024;
        fclose(f);
        if (lv == level && data && kib > 0) return kib * 1024;
    }
    return -1;
}

static void sizes_are_the_kernels(void)
{
    int level;
    CHECK(sbn__cache_bytes(1) > 0);
    CHECK(sbn__cache_bytes(2) >= sbn__cache_bytes(1));
    CHECK(sbn__cache_bytes(3) >= sbn__cache_bytes(2));
    for (level = 1; level <= 3; level++) {
        long want = sys_size(level);
        if (want < 0) {
            printf("    note: no L%d in /sys here; the sizes come from sysconf or defaults\n", level);
            continue;
        }
        printf("    L%d: %ld KiB per /sys, %lld KiB used\n", level, want / 1024,
               (long long)(sbn__cache_bytes(level) / 1024));
        CHECK_MSG(sbn__cache_bytes(level) == (int64_t)want, "L%d", level);
    }
}

static void beyond_cache_by_share(void)
{
    int64_t l3 = sbn__cache_bytes(3), n = l3 / 4 / 2; /* f32 elements of half the L3 */
    int64_t shape[1];
    sbn_tensor t;
    const sbn_tensor *one[1], *two[2];
    shape[0] = n;
    t = sbn_tensor_contiguous(NULL, SBN_F32, 1, shape);
    one[0] = &t, two[0] = &t, two[1] = &t;
    if (getenv("SBN_STREAM_STORES") != NULL) {
        printf("    note: SBN_STREAM_STORES is set; only the override is checked\n");
    } else {
        CHECK(!sbn__beyond_cache(one, 1, 0.9, 1));    /* half the L3 */
        CHECK(sbn__beyond_cache(two, 2, 2.0 / 3.0, 1)); /* the whole L3, asked with 2/3 */
        CHECK(!sbn__beyond_cache(two, 2, 1.0, 1));    /* not more than it */
        CHECK(!sbn__beyond_cache(two, 2, 0.25, 0));   /* short runs */
        CHECK(sbn__beyond_cache(one, 1, 0.25, 1));
    }
    sbn__stream_stores_set(1);
    CHECK(sbn__beyond_cache(one, 1, 1.0, 0)); /* forced, even short runs */
    sbn__stream_stores_set(0);
    CHECK(!sbn__beyond_cache(two, 2, 0.25, 1));
    sbn__stream_stores_set(-1);
}

/* Which counts of L3 instances are believed (machine.c), on machines the tests do not run
 * on, and this machine's count. */
static void l3_instances_believed(void)
{
    const int64_t mib = (int64_t)1 << 20, l3 = 32 * mib;
    const sbn__machine *m = sbn__machine_get();
    CHECK(sbn__l3_believed_instances(l3, 8, 8, 64) == 8);           /* EPYC: 8 complexes of 8 */
    CHECK(sbn__l3_believed_instances(96 * mib, 12, 8, 96) == 12);   /* stacked cache, 12 MiB a CPU */
    CHECK(sbn__l3_believed_instances(300 * mib, 2, 60, 16) == 2);   /* 16 CPUs of two sockets */
    CHECK(sbn__l3_believed_instances(l3, 2, 1, 2) == 1);  /* a guest told each vCPU has 32 MiB */
    CHECK(sbn__l3_believed_instances(l3, 16, 1, 16) == 1);
    CHECK(sbn__l3_believed_instances(l3, 2, 0, 16) == 1); /* sharing unknown */
    CHECK(sbn__l3_believed_instances(l3, 3, 1, 2) == 1);  /* more instances than CPUs */
    CHECK(sbn__l3_believed_instances(l3, 1, 8, 64) == 1);
    CHECK(sbn__l3_believed_instances(l3, 0, 8, 64) == 1);
    CHECK(m->l3_instances >= 1 && m->l3_instances <= m->cpus);
    CHECK(m->l3_instances == 1 || m->l3_instances_reported == 0);
    printf("    L3 instances among this process's CPUs: %d (%d reported)\n", m->l3_instances,
           m->l3_instances_reported);
}

/* Writes text to root/cpu<cpu>/cache/index<i>/<name>, making the directories. */
static int put(const char *root, int cpu, int i, const char *name, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/cpu%d", root, cpu);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/cpu%d/cache", root, cpu);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/cpu%d/cache/index%d", root, cpu, i);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/%s", root, cpu, i, name);
    if ((f = fopen(path, "w")) == NULL) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* One CPU's caches as /sys gives them: L1d, L1i, L2 private, the L3 shared by `l3`. */
static int put_cpu(const char *root, int cpu, const char *l3)
{
    char own[16];
    snprintf(own, sizeof own, "%d\n", cpu);
    return put(root, cpu, 0, "level", "1\n") && put(root, cpu, 0, "type", "Data\n") &&
           put(root, cpu, 0, "shared_cpu_list", own) && put(root, cpu, 1, "level", "1\n") &&
           put(root, cpu, 1, "type", "Instruction\n") && put(root, cpu, 2, "level", "2\n") &&
           put(root, cpu, 2, "type", "Unified\n") && put(root, cpu, 2, "shared_cpu_list", own) &&
           put(root, cpu, 3, "level", "3\n") && put(root, cpu, 3, "type", "Unified\n") &&
           put(root, cpu, 3, "shared_cpu_list", l3);
}

/* The count of L3 instances from a /sys tree of the test's making: two core complexes of
 * eight CPUs, a CPU whose L3 entry is missing, one whose list does not parse, one whose
 * L3 sits at another index than cpu0's. */
static void instances_from_a_cpu_tree(void)
{
    char root[] = "/tmp/sbn_cpu_tree_XXXXXX";
    int cpu, all[16], first_three[3] = {0, 1, 2}, across[2] = {3, 12}, with_bad[2] = {0, 16};
    int with_missing[2] = {0, 17}, odd_layout[3] = {0, 18, 7};
    char path[512];
    CHECK(mkdtemp(root) != NULL);
    for (cpu = 0; cpu < 16; cpu++) {
        all[cpu] = cpu;
        CHECK(put_cpu(root, cpu, cpu < 8 ? "0-7\n" : "8-15\n"));
    }
    CHECK(put_cpu(root, 16, "x\n"));
    CHECK(put(root, 17, 0, "level", "1\n"));
    /* a CPU whose L3 is index2 (no L2 entry): found by a scan, not at cpu0's index3 */
    CHECK(put(root, 18, 0, "level", "1\n") && put(root, 18, 0, "type", "Data\n"));
    CHECK(put(root, 18, 2, "level", "3\n") && put(root, 18, 2, "type", "Unified\n"));
    CHECK(put(root, 18, 2, "shared_cpu_list", "18-19\n"));
    CHECK(sbn__l3_instances_at(root, all, 16) == 2);
    CHECK(sbn__l3_instances_at(root, first_three, 3) == 1);
    CHECK(sbn__l3_instances_at(root, across, 2) == 2);
    CHECK(sbn__l3_instances_at(root, with_bad, 2) == 1);
    CHECK(sbn__l3_instances_at(root, with_missing, 2) == 1);
    CHECK(sbn__l3_instances_at(root, all, 0) == 1);
    CHECK(sbn__l3_instances_at(root, odd_layout, 3) == 2);
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    CHECK(system(path) == 0);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(sizes_are_the_kernels),
    SBN_TEST_CASE(beyond_cache_by_share),
    SBN_TEST_CASE(l3_instances_believed),
    SBN_TEST_CASE(instances_from_a_cpu_tree),
};

SBN_TEST_MAIN(k_cases)
