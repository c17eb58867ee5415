/*
 * machine.h - the description of this machine that every schedule decision starts
 * from (machine.c): the CPUs this process may use (its affinity mask, capped by its
 * control group's CPU quota: cgroup_cpus.c) and the L1d, L2 and L3 cache sizes, with the
 * CPUs sharing each, the number of L3 instances, and where each number came from. Read
 * once per process; `syncbn info` prints it (sbn_info_get). Beside it, the share of the
 * machine a rank of a job that several ranks run on takes by default (local_ranks.c).
 */
#ifndef SBN_CORE_MACHINE_H
#define SBN_CORE_MACHINE_H

#include <stdint.h>

typedef struct sbn__cache_level {
    int64_t bytes;      /* one instance (L1d, L2: per core) */
    int sharing;        /* CPUs sharing one instance; 0 when unknown */
    int64_t reported;   /* what sysconf said when that was not believed, else 0 */
    const char *source; /* where bytes came from, in words */
} sbn__cache_level;
typedef struct sbn__machine {
    int cpus;                  /* CPUs this process may use: cpus_affinity within the quota */
    int cpus_affinity;         /* CPUs in this process's affinity mask */
    double cpu_quota;          /* its cgroup's CPU quota in CPUs (2.5: 250 ms a 100 ms); 0: none */
    int node_cpus;             /* CPUs of the machine its job may use: the cgroup's cpuset, else
                                  the online CPUs, else cpus_affinity */
    sbn__cache_level cache[3]; /* L1d, L2, L3 */
    int l3_instances;          /* L3 instances among those CPUs; 1 when unknown */
    int l3_instances_reported; /* what /sys said when that was not believed, else 0 */
} sbn__machine;
/* The CPUs in this process's affinity mask now (the online CPUs when the mask cannot be
 * read); at least 1. The machine description keeps the count of its first read. */
int sbn__affinity_cpus(void);
/* The CPU bandwidth limit of this process's cgroup (v2 cpu.max, v1 cpu.cfs_quota_us over
 * cpu.cfs_period_us), the least over its cgroup and their ancestors, in CPUs; 0 when there
 * is none or it cannot be read. root prefixes every path read ("" for this machine;
 * the tests pass a tree they wrote). */
double sbn__cgroup_cpu_quota_at(const char *root);
/* The CPUs of this process's cgroup's cpuset (v2 cpuset.cpus.effective, v1
 * cpuset.effective_cpus or cpuset.cpus) at the deepest level that gives them; 0 when none
 * does. The CPUs of the machine a job may use: that, else /sys/devices/system/cpu/online's
 * count, else 0. root as above. */
int sbn__cgroup_cpuset_cpus_at(const char *root);
int sbn__node_cpus_at(const char *root);
/* The first line of the file at path into buf (len bytes, NUL-terminated, without its
 * newline): 1; 0 when the file cannot be opened or is empty. The /sys and cgroup readers'. */
int sbn__read_first_line(const char *path, char *buf, int len);
/* CPUs in a list like "0-7,16-23" (numbers below 65536); 0 when it does not parse. */
int sbn__cpu_list_count(const char *s);
/* The CPUs a pool should use: cpus, or fewer under a quota (its ceiling, at least 1). */
int sbn__cpus_within_quota(int cpus, double quota);
/* The processes of one job on this machine per their launcher's variables (local_ranks.c:
 * OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, LOCAL_WORLD_SIZE, the largest valid), 1 when
 * none says more; *source (when not NULL) names the variable, or NULL. Reads the
 * environment. */
int sbn__local_ranks(const char **source);
/* A launcher variable's value as a count of ranks (1..65536), 0 when it is not one. */
int sbn__parse_local_ranks(const char *text);
/* cpus, at most node_cpus / ranks (at least 1). */
int sbn__cpus_per_rank(int cpus, int node_cpus, int ranks);
/* The CPUs a default pool takes now: the affinity mask within the quota, at most this
 * process's share of the node's CPUs among the local ranks. */
int sbn__default_cpus(void);
/* This machine, read once per process (thread-safe). */
const sbn__machine *sbn__machine_get(void);
/* Bytes of this machine's level-1, 2 or 3 data cache (per instance): sbn__machine_get's. */
int64_t sbn__cache_bytes(int level);
/* The L3 instances among `cpus` (n CPU numbers) per the cache entries under root (a
 * /sys/devices/system/cpu tree): the distinct first CPUs of their L3 shared_cpu_list;
 * 1 when an entry is missing or does not parse. Reads files; for machine.c and the tests. */
int sbn__l3_instances_at(const char *root, const int *cpus, int n);
/* `instances` L3s of l3_bytes among `cpus` CPUs, each shared by `sharing` CPUs (of the
 * machine, also those outside the process), if that gives no CPU more L3 than a real part
 * has (16 MiB) and no more instances than CPUs; else 1. */
int sbn__l3_believed_instances(int64_t l3_bytes, int instances, int sharing, int cpus);

#endif /* SBN_CORE_MACHINE_H */
