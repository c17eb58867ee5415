/*
 * machine.c - the description of this machine that every schedule decision starts
 * from, read once per process: the CPUs this process may run on (its affinity mask,
 * capped by its control group's CPU quota, which cgroup_cpus.c reads), and the size of
 * one instance of the L1d, L2 and L3 caches with the number of CPUs that share it and
 * where each number came from. Sizes come from the kernel's
 * /sys/devices/system/cpu/cpu0/cache/index<i> (level, type, size, shared_cpu_list),
 * else from the C library's sysconf, else from defaults (32 KiB, 1 MiB, 32 MiB). The
 * kernel comes first because sysconf can be far off inside virtual machines: it may
 * report the whole package's L3, summed over every core complex or socket, to a guest
 * that runs on two of its cores (508 MiB on a 2-CPU AMD EPYC Zen 5 guest, 320 MiB on a
 * Zen 4 one whose kernel says 32 MiB). So a size that /sys did not confirm must be
 * plausible: no x86 part has more than 12 MiB of L3 per core (AMD's stacked-cache
 * parts: 96 MiB over 8 cores), so an unconfirmed L3 is capped at SBN_L3_MAX_PER_CPU
 * times the CPUs of this process, and unconfirmed L1d and L2 sizes outside the range
 * of real parts fall back to the defaults. A many-core machine has several L3s (one
 * per AMD core complex of 4-8 cores, one per socket): the description counts the L3
 * instances among this process's CPUs (the distinct first CPUs of each CPU's L3
 * shared_cpu_list), believed only while an instance's CPUs have no more than
 * SBN_L3_MAX_PER_CPU each (a guest told that each vCPU has its own 32 MiB L3 keeps one).
 * The size rules use one instance: what a call writes or reads beyond it lands in the
 * L3s of other core complexes or sockets, from which the next op's threads, placed
 * anywhere, read at about the cost of memory. `syncbn info` prints it all with sources.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/machine.h"
#include "syncbn/syncbn.h"

#define SBN_L3_MAX_PER_CPU ((int64_t)16 << 20)
#define SBN_MAX_CPU_IDS 1024 /* CPU numbers a cpu_set_t holds (CPU_SETSIZE) */
#define SBN_MAX_CPU_LIST 65536 /* the largest CPU number and count a list may give */

static const char k_from_sys[] = "the kernel (/sys)";
static const int64_t g_default_bytes[3] = {(int64_t)32 << 10, (int64_t)1 << 20,
                                           (int64_t)32 << 20};
/* The sizes of real parts' L1d and L2 per core (a reading outside is not believed). */
static const int64_t g_plausible_lo[2] = {(int64_t)8 << 10, (int64_t)128 << 10};
static const int64_t g_plausible_hi[2] = {(int64_t)1 << 20, (int64_t)64 << 20};

static long sysconf_bytes(int level)
{
    long v = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
    v = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                             : _SC_LEVEL3_CACHE_SIZE);
#else
    (void)level;
#endif
    return v;
}

#define SYS_CPU_ROOT "/sys/devices/system/cpu"

int sbn__read_first_line(const char *path, char *buf, int len)
{
    FILE *f;
    int ok;
    if ((f = fopen(path, "r")) == NULL) return 0;
    ok = fgets(buf, len, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* The first line of <root>/cpu<cpu>/cache/index<i>/<name> into buf. */
static int cache_field_at(const char *root, int cpu, int i, const char *name, char *buf, int len)
{
    char path[512];
    if (snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/%s", root, cpu, i, name) >=
        (int)sizeof path)
        return 0;
    return sbn__read_first_line(path, buf, len);
}

int sbn__cpu_list_count(const char *s)
{
    long n = 0;
    while (*s && *s != '\n') {
        char *end;
        long a, b;
        if (*s < '0' || *s > '9') return 0;
        a = strtol(s, &end, 10);
        if (end == s || a < 0 || a >= SBN_MAX_CPU_LIST) return 0;
        b = a;
        if (*end == '-') {
            s = end + 1;
            if (*s < '0' || *s > '9') return 0;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b >= SBN_MAX_CPU_LIST) return 0;
        }
        n += b - a + 1;
        if (n > SBN_MAX_CPU_LIST) return 0;
        if (*end != ',' && *end != '\0' && *end != '\n') return 0;
        s = *end == ',' ? end + 1 : end;
    }
    return (int)n;
}

/* The index<i> of cpu's data or unified cache of `level` under root, or -1. */
static int cache_index_at(const char *root, int cpu, int level)
{
    int i;
    for (i = 0; i < 8; i++) {
        char lv[16], type[32];
        if (!cache_field_at(root, cpu, i, "level", lv, sizeof lv) ||
            (int)strtol(lv, NULL, 10) != level)
            continue;
        if (!cache_field_at(root, cpu, i, "type", type, sizeof type) ||
            strncmp(type, "Instruction", 11) == 0)
            continue;
        return i;
    }
    return -1;
}

/* The /sys entry of `level` (data or unified): its size, and the CPUs sharing it (0 when
 * the entry does not say). -1 when there is none. */
static int64_t sys_bytes(int level, int *sharing)
{
    char size[32], shared[1024], unit = 0;
    long v = -1;
    int i = cache_index_at(SYS_CPU_ROOT, 0, level);
    if (i < 0 || !cache_field_at(SYS_CPU_ROOT, 0, i, "size", size, sizeof size) ||
        sscanf(size, "%ld%c", &v, &unit) < 1)
        return -1;
    if (unit == 'K') v *= 1024;
    else if (unit == 'M') v *= 1024 * 1024;
    *sharing = cache_field_at(SYS_CPU_ROOT, 0, i, "shared_cpu_list", shared, sizeof shared)
                   ? sbn__cpu_list_count(shared)
                   : 0;
    return v;
}

/* Whether cpu's cache index<i> under root is level 3 (the index cpu0 has it at, which
 * the other CPUs of a machine share: one file read a CPU instead of a scan). */
static int is_l3_at(const char *root, int cpu, int i)
{
    char lv[16];
    return i >= 0 && cache_field_at(root, cpu, i, "level", lv, sizeof lv) &&
           strtol(lv, NULL, 10) == 3;
}

int sbn__l3_instances_at(const char *root, const int *cpus, int n)
{
    int firsts[SBN_MAX_CPU_IDS], count = 0, c, k;
    const int common = n > 0 ? cache_index_at(root, cpus[0], 3) : -1;
    for (c = 0; c < n; c++) {
        char shared[1024];
        char *end;
        long first;
        int i = is_l3_at(root, cpus[c], common) ? common : cache_index_at(root, cpus[c], 3);
        if (i < 0 || !cache_field_at(root, cpus[c], i, "shared_cpu_list", shared, sizeof shared))
            return 1;
        first = strtol(shared, &end, 10); /* the instance's lowest CPU names it */
        if (end == shared || first < 0 || first >= SBN_MAX_CPU_IDS) return 1;
        for (k = 0; k < count; k++)
            if (firsts[k] == (int)first) break;
        if (k == count) firsts[count++] = (int)first;
    }
    return count > 0 ? count : 1;
}

int sbn__affinity_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
}

static sbn__machine g_machine;
static pthread_once_t g_machine_once = PTHREAD_ONCE_INIT;

static void read_level(sbn__machine *m, int level)
{
    sbn__cache_level *c = &m->cache[level - 1];
    int sharing = 0;
    int64_t v = sys_bytes(level, &sharing);
    if (v > 0) {
        c->bytes = v;
        c->sharing = sharing;
        c->source = k_from_sys;
        return;
    }
    v = sysconf_bytes(level);
    c->sharing = 0;
    if (v <= 0) {
        c->bytes = g_default_bytes[level - 1];
        c->source = "a default (neither /sys nor sysconf has it)";
    } else if (level < 3 && (v < g_plausible_lo[level - 1] || v > g_plausible_hi[level - 1])) {
        c->bytes = g_default_bytes[level - 1];
        c->source = "a default (sysconf's reading is not a real part's)";
    } else if (level == 3 && v > SBN_L3_MAX_PER_CPU * m->cpus_affinity) {
        c->bytes = SBN_L3_MAX_PER_CPU * m->cpus_affinity;
        c->source = "sysconf, capped at 16 MiB per CPU of this process (it reported more)";
        c->reported = v;
    } else {
        c->bytes = v;
        c->source = "sysconf (no /sys entry)";
    }
}

/* The CPU numbers of this process's affinity mask into ids; their count, 0 when the
 * mask cannot be read. */
static int affinity_ids(int *ids, int max)
{
    int n = 0;
#ifdef CPU_ISSET
    cpu_set_t set;
    int c;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (c = 0; c < CPU_SETSIZE && c < SBN_MAX_CPU_IDS && n < max; c++)
        if (CPU_ISSET(c, &set)) ids[n++] = c;
#else
    (void)ids;
    (void)max;
#endif
    return n;
}

/* The L3 instances among this process's CPUs, when /sys gave the L3 and the count is
 * plausible (sbn__l3_believed_instances); else 1. */
static void read_l3_instances(sbn__machine *m)
{
    int ids[SBN_MAX_CPU_IDS];
    const sbn__cache_level *l3 = &m->cache[2];
    int n = affinity_ids(ids, SBN_MAX_CPU_IDS), instances;
    m->l3_instances = 1;
    m->l3_instances_reported = 0;
    if (n < 2 || l3->source != k_from_sys) return;
    instances = sbn__l3_instances_at(SYS_CPU_ROOT, ids, n);
    m->l3_instances = sbn__l3_believed_instances(l3->bytes, instances, l3->sharing, n);
    if (m->l3_instances != instances) m->l3_instances_reported = instances;
}

int sbn__l3_believed_instances(int64_t l3_bytes, int instances, int sharing, int cpus)
{
    if (instances < 2 || cpus < instances || sharing < 1) return 1;
    return l3_bytes / sharing > SBN_L3_MAX_PER_CPU ? 1 : instances;
}

static void read_machine(void)
{
    int level;
    g_machine.cpus_affinity = sbn__affinity_cpus();
    g_machine.cpu_quota = sbn__cgroup_cpu_quota_at("");
    g_machine.cpus = sbn__cpus_within_quota(g_machine.cpus_affinity, g_machine.cpu_quota);
    g_machine.node_cpus = sbn__node_cpus_at("");
    if (g_machine.node_cpus < g_machine.cpus_affinity)
        g_machine.node_cpus = g_machine.cpus_affinity;
    for (level = 1; level <= 3; level++) read_level(&g_machine, level);
    read_l3_instances(&g_machine);
    /* an inclusive hierarchy never shrinks: keep the levels ordered */
    if (g_machine.cache[1].bytes < g_machine.cache[0].bytes)
        g_machine.cache[1].bytes = g_machine.cache[0].bytes;
    if (g_machine.cache[2].bytes < g_machine.cache[1].bytes)
        g_machine.cache[2].bytes = g_machine.cache[1].bytes;
}

const sbn__machine *sbn__machine_get(void)
{
    pthread_once(&g_machine_once, read_machine);
    return &g_machine;
}

int64_t sbn__cache_bytes(int level)
{
    level = level < 1 ? 1 : level > 3 ? 3 : level;
    return sbn__machine_get()->cache[level - 1].bytes;
}
