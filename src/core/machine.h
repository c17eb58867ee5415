/*
 * machine.h - the description of this machine that every schedule decision starts
 * from (machine.c): the CPUs of this process's affinity mask and the L1d, L2 and L3
 * cache sizes, with the CPUs sharing each and where each number came from. Read once
 * per process; `syncbn info` prints it (sbn_info_get).
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
    int cpus;                  /* CPUs in this process's affinity mask */
    sbn__cache_level cache[3]; /* L1d, L2, L3 */
} sbn__machine;
/* The CPUs in this process's affinity mask now (the online CPUs when the mask cannot be
 * read); at least 1. The machine description keeps the count of its first read. */
int sbn__affinity_cpus(void);
/* This machine, read once per process (thread-safe). */
const sbn__machine *sbn__machine_get(void);
/* Bytes of this machine's level-1, 2 or 3 data cache (per instance): sbn__machine_get's. */
int64_t sbn__cache_bytes(int level);

#endif /* SBN_CORE_MACHINE_H */
