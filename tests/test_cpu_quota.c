/*
 * test_cpu_quota.c - the CPU quota and the cpuset of the process's control group
 * (cgroup_cpus.c): the quota caps the machine description's CPU count and so the default
 * pool, the cpuset gives the machine's CPUs the ranks of a job share. Both are read from trees of
 * /proc/self/cgroup and /sys/fs/cgroup that the test writes (cgroup v2 with nested
 * limits, a container whose own cgroup is the mount's root, v1 under each mount name,
 * a hybrid system, no limit, files that do not parse, paths too long to hold, odd
 * slashes), the count a quota allows,
 * and this machine's description and info agreeing with what this machine's files say.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/machine.h"
#include "harness/harness.h"
#include "syncbn/info.h"
#include "syncbn/syncbn.h"

/* Writes text to root + rel, making the directories on the way; 1 on success. */
static int put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    size_t i, n;
    FILE *f;
    n = (size_t)snprintf(path, sizeof path, "%s%s", root, rel);
    if (n >= sizeof path) return 0;
    for (i = strlen(root) + 1; i < n; i++)
        if (path[i] == '/') {
            path[i] = '\0';
            (void)mkdir(path, 0700);
            path[i] = '/';
        }
    if ((f = fopen(path, "w")) == NULL) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* A fresh tree under /tmp; the caller removes it with drop(). */
static void fresh(char *root)
{
    strcpy(root, "/tmp/sbn_cgroup_XXXXXX");
    CHECK(mkdtemp(root) != NULL);
}

static void drop(const char *root)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

static int near(double a, double b)
{
    return a > b - 1e-9 && a < b + 1e-9;
}

/* v2: the least quota over the cgroup and its ancestors; "max" levels do not limit. */
static void v2_nested_limits(void)
{
    char root[64];
    fresh(root);
    CHECK(put(root, "/proc/self/cgroup", "0::/kubepods/pod1/ctr\n"));
    CHECK(put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "250000 100000\n"));
    CHECK(put(root, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n"));
    CHECK(put(root, "/sys/fs/cgroup/kubepods/cpu.max", "max 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 2.5));
    /* a parent's tighter limit wins */
    CHECK(put(root, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 1.5));
    /* another period: 800 ms every 50 ms is 16 CPUs, above the parent's 1.5 */
    CHECK(put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "800000 50000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 1.5));
    CHECK(put(root, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 16.0));
    drop(root);
}

/* A container that mounts its own cgroup as the root while /proc/self/cgroup names the
 * host's path: the path's directories are absent, the root's file counts. */
static void v2_container_root(void)
{
    char root[64];
    fresh(root);
    CHECK(put(root, "/proc/self/cgroup", "0::/system.slice/docker-abc.scope\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu.max", "300000 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 3.0));
    CHECK(put(root, "/proc/self/cgroup", "0::/\n")); /* a cgroup namespace */
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 3.0));
    CHECK(put(root, "/sys/fs/cgroup/cpu.max", "max 100000\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    drop(root);
}

/* v1 under cpu,cpuacct or cpu; -1 is no limit; a hybrid system's v1 cpu line wins over
 * its "0::" line. */
static void v1_quota(void)
{
    char root[64];
    fresh(root);
    CHECK(put(root, "/proc/self/cgroup",
              "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"));
    CHECK(put(root, "/sys/fs/cgroup/docker/abc/cpu.max", "900000 100000\n")); /* not v1's */
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 0.5));
    CHECK(put(root, "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    drop(root);
    fresh(root); /* the controller list in the other order, mounted as plain "cpu" */
    CHECK(put(root, "/proc/self/cgroup", "3:cpuacct,cpu:/\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "400000\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 4.0));
    /* "cpuset" is not "cpu" */
    CHECK(put(root, "/proc/self/cgroup", "5:cpuset:/\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    drop(root);
}

/* Nothing to read, and files that do not parse: no limit, never a crash. */
static void unreadable_or_malformed(void)
{
    static const char *const bad[] = {"banana\n", "0 100000\n", "100000 0\n", "-5 100000\n",
                                      "100000\n", "1e5 100000\n", "100000 abc\n", "\n",
                                      "100000 100000 7\n", ""};
    char root[64], longpath[1400];
    size_t i;
    fresh(root);
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0); /* no /proc/self/cgroup */
    CHECK(put(root, "/proc/self/cgroup", "garbage without colons\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    CHECK(put(root, "/proc/self/cgroup", "0::relative/path\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    CHECK(put(root, "/proc/self/cgroup", "0::/a\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0); /* no cpu.max anywhere */
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(put(root, "/sys/fs/cgroup/a/cpu.max", bad[i]));
        CHECK_MSG(sbn__cgroup_cpu_quota_at(root) == 0, "cpu.max \"%s\"", bad[i]);
    }
    CHECK(sbn__cgroup_cpu_quota_at("/nonexistent/root") == 0);
    drop(root);
    /* a path longer than the reader holds: the mount's root still counts, and the rest of
     * the line is not read as a line of its own (its "::/a" would name a's limit) */
    fresh(root);
    memset(longpath, 'x', sizeof longpath);
    memcpy(longpath, "0::/", 4);
    memcpy(longpath + sizeof longpath - 6, "::/a\n", 6);
    CHECK(put(root, "/proc/self/cgroup", longpath));
    CHECK(put(root, "/sys/fs/cgroup/a/cpu.max", "50000 100000\n"));
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    CHECK(put(root, "/sys/fs/cgroup/cpu.max", "200000 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 2.0));
    drop(root);
}

/* Trailing and double slashes, the host's root with no cpu.max, a v1 limit on an ancestor
 * below the mount, a "0::" line before the v1 cpu line. */
static void paths_and_orders(void)
{
    char root[64];
    fresh(root);
    CHECK(put(root, "/proc/self/cgroup", "0::/a/b/\n"));
    CHECK(put(root, "/sys/fs/cgroup/a/cpu.max", "50000 100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 0.5));
    CHECK(put(root, "/proc/self/cgroup", "0::/a//b\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 0.5));
    CHECK(put(root, "/proc/self/cgroup", "0::/\n")); /* the host's root: no cpu.max there */
    CHECK(sbn__cgroup_cpu_quota_at(root) == 0);
    drop(root);
    fresh(root);
    CHECK(put(root, "/proc/self/cgroup", "0::/\n2:cpuacct,cpu:/slice/job/step\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpu.max", "100000 100000\n")); /* v2's: not the cpu one */
    CHECK(put(root, "/sys/fs/cgroup/cpuacct,cpu/slice/cpu.cfs_quota_us", "600000\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpuacct,cpu/slice/cpu.cfs_period_us", "100000\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpuacct,cpu/slice/job/step/cpu.cfs_quota_us", "-1\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpuacct,cpu/slice/job/step/cpu.cfs_period_us", "100000\n"));
    CHECK(near(sbn__cgroup_cpu_quota_at(root), 6.0));
    drop(root);
}

/* The CPUs a quota allows: its ceiling, at least one, never more than the mask. */
static void cpus_within_quota(void)
{
    CHECK(sbn__cpus_within_quota(128, 8.0) == 8);
    CHECK(sbn__cpus_within_quota(128, 2.5) == 3);
    CHECK(sbn__cpus_within_quota(128, 0.2) == 1);
    CHECK(sbn__cpus_within_quota(4, 16.0) == 4);
    CHECK(sbn__cpus_within_quota(8, 0) == 8);
    CHECK(sbn__cpus_within_quota(1, 0.5) == 1);
}

/* This process: the description, the default pool and sbn_info agree with this machine's
 * own files. */
static void this_machine(void)
{
    const sbn__machine *m = sbn__machine_get();
    double quota = sbn__cgroup_cpu_quota_at("");
    sbn_info in;
    memset(&in, 0, sizeof in);
    in.size = sizeof in;
    CHECK(m->cpus_affinity == sbn__affinity_cpus());
    CHECK(near(m->cpu_quota, quota));
    CHECK(m->cpus == sbn__cpus_within_quota(m->cpus_affinity, quota));
    CHECK(m->cpus >= 1 && m->cpus <= m->cpus_affinity);
    CHECK(m->node_cpus >= m->cpus_affinity);
    if (sbn__node_cpus_at("") >= m->cpus_affinity) CHECK(m->node_cpus == sbn__node_cpus_at(""));
    CHECK(sbn_info_get(&in) == SBN_OK);
    CHECK(in.cpus == m->cpus && in.cpus_affinity == m->cpus_affinity);
    CHECK(near(in.cpu_quota, quota));
    if (getenv("SBN_NUM_THREADS") == NULL && sbn__local_ranks(NULL) == 1)
        CHECK(sbn_pool_default_threads() == m->cpus);
    printf("    cpus %d (affinity %d, quota %.2f)\n", m->cpus, m->cpus_affinity, quota);
}

/* CPU lists: ranges and single CPUs; anything else is 0. */
static void cpu_lists(void)
{
    static const char *const bad[] = {"", "a", "1-0", "0-70000", "70000", "-1", "0-", "0,,2",
                                      "0-3 ", "0-3x", "1 2", "0-65535,0-65535"};
    size_t i;
    CHECK(sbn__cpu_list_count("0-7,16-23") == 16);
    CHECK(sbn__cpu_list_count("3") == 1);
    CHECK(sbn__cpu_list_count("0-1\n") == 2);
    CHECK(sbn__cpu_list_count("0,2,4-5") == 4);
    CHECK(sbn__cpu_list_count("0-65535") == 65536);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(sbn__cpu_list_count(bad[i]) == 0, "\"%s\"", bad[i]);
}

/* The cpuset the job may use: the deepest level that gives it, v2 and v1; the online
 * CPUs without one. */
static void cpusets(void)
{
    char root[64];
    fresh(root);
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 0 && sbn__node_cpus_at(root) == 0);
    CHECK(put(root, "/sys/devices/system/cpu/online", "0-127\n"));
    CHECK(sbn__node_cpus_at(root) == 128); /* no cgroup file: the machine's */
    CHECK(put(root, "/proc/self/cgroup", "0::/slurm/job7/step0\n"));
    CHECK(put(root, "/sys/fs/cgroup/slurm/job7/cpuset.cpus.effective", "4-11\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 8); /* the step has no file: its job's */
    CHECK(put(root, "/sys/fs/cgroup/slurm/job7/step0/cpuset.cpus.effective", "4-7\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 4 && sbn__node_cpus_at(root) == 4);
    CHECK(put(root, "/sys/fs/cgroup/slurm/job7/step0/cpuset.cpus.effective", "\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 8); /* empty: the level above says */
    drop(root);
    fresh(root); /* v1: effective_cpus first, else cpuset.cpus */
    CHECK(put(root, "/proc/self/cgroup", "3:cpuset:/docker/abc\n1:cpu:/docker/abc\n"));
    CHECK(put(root, "/sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus", "0-3\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 4);
    CHECK(put(root, "/sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus", "0-1\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 2);
    CHECK(put(root, "/sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus", "junk\n"));
    CHECK(sbn__cgroup_cpuset_cpus_at(root) == 4);
    drop(root);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(v2_nested_limits),
    SBN_TEST_CASE(v2_container_root),
    SBN_TEST_CASE(v1_quota),
    SBN_TEST_CASE(unreadable_or_malformed),
    SBN_TEST_CASE(paths_and_orders),
    SBN_TEST_CASE(cpus_within_quota),
    SBN_TEST_CASE(cpu_lists),
    SBN_TEST_CASE(cpusets),
    SBN_TEST_CASE(this_machine),
};

SBN_TEST_MAIN(k_cases)
