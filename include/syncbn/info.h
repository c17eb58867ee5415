/*
 * info.h - what this build and this process use, as the library itself decided it:
 * the kernel variant dispatch chose, the machine description the schedules start from
 * (CPUs, caches and where each size came from), the sizes beyond which the schedules
 * change path, and every SBN_* environment variable as the library parsed it. It is
 * what `syncbn info` prints, and what a bug report should carry; nothing here changes
 * what the library computes. The values are read once per process, on first use.
 *
 *   sbn_info info;
 *   info.size = sizeof info;
 *   if (sbn_info_get(&info) == SBN_OK) printf("kernels: %s\n", info.kernels);
 */
#ifndef SYNCBN_INFO_H
#define SYNCBN_INFO_H

#include "syncbn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for the environment variables and for one variable's state in words. */
#define SBN_INFO_MAX_VARS 16
#define SBN_INFO_TEXT 512

/* One instance of a data cache. */
typedef struct sbn_info_cache {
    int64_t bytes;      /* the size the schedules use (L1d and L2: per core) */
    int sharing;        /* CPUs sharing one instance; 0 when unknown */
    int64_t reported;   /* what the C library reported when it was not believed, else 0 */
    const char *source; /* where `bytes` came from, in words */
} sbn_info_cache;

/* One SBN_* environment variable. */
typedef struct sbn_info_var {
    const char *name;          /* "SBN_NUM_THREADS", ... */
    int set;                   /* present and not blank */
    int valid;                 /* set, well formed and within its bounds */
    const char *value;         /* as given, blanks kept (unprintable bytes as '?'); "" if absent */
    const char *message;       /* when set and not valid: the sentence naming it; else "" */
    char state[SBN_INFO_TEXT]; /* "unset (<default>)", the value and its meaning, or
                                  "invalid: <message>; refused: ..." */
} sbn_info_var;

typedef struct sbn_info {
    size_t size; /* set by the caller to sizeof(sbn_info): the bytes the library may fill */
    const char *kernels;        /* the variant in use: "scalar", "avx2" or "avx512" */
    char kernels_usable[64];    /* every variant built and usable on this CPU, ' '-separated */
    int cpus;                   /* CPUs this process may use: its affinity mask, capped by
                                   its cgroup's CPU quota (cpus_affinity, cpu_quota below) */
    sbn_info_cache cache[3];    /* L1d, L2, L3 */
    /* The size rules of the schedules, in bytes of all a call's tensors together. */
    double row_tile_bytes;          /* channels-last maps tile rows beyond this (the L1d) */
    double map_stream_bytes;        /* maps stream their stores beyond this */
    double rows_stream_bytes;       /* the same for channels-last rows ... */
    int rows_stream_min_row_bytes;  /* ... on 2+ threads with rows of this size or more */
    double reduce_prefetch_bytes;   /* reductions prefetch beyond this (short rows; short
                                       planes: prefetch_run_bytes below) */
    int stream_stores;              /* SBN_STREAM_STORES: -1 by size, 0 never, 1 always */
    int row_tiles;                  /* SBN_ROW_TILES: -1 by size, 0 never, 1 always */
    int threads;                    /* the default thread count: SBN_NUM_THREADS, else cpus
                                       (at most its share among local_ranks below) */
    int max_threads;                /* the largest SBN_NUM_THREADS accepted */
    double comm_timeout;            /* seconds SBN_COMM_TIMEOUT gives (0: unset or invalid) */
    double comm_timeout_default;    /* seconds when SBN_COMM_TIMEOUT is unset */
    double comm_timeout_max;        /* the cap on SBN_COMM_TIMEOUT */
    int nvars;                      /* entries of var */
    sbn_info_var var[SBN_INFO_MAX_VARS];
    /* The L3s among this process's CPUs (core complexes, sockets); the size rules above
     * use one. */
    int l3_instances;          /* L3 instances among this process's CPUs (1 when unknown) */
    int l3_instances_reported; /* what /sys said when that was not believed, else 0 */
    /* Where cpus came from: a container limited to N CPUs (Kubernetes, docker --cpus)
     * sees the whole machine in its affinity mask, and its CPU time is a quota. */
    int cpus_affinity; /* CPUs in this process's affinity mask */
    double cpu_quota;  /* its cgroup's CPU quota in CPUs (cpu.max: 2.5 for 250 ms a 100 ms
                          period); 0 when it has none or it cannot be read */
    /* The ranks of this job on this machine, as its launcher says (Open MPI, MPICH or
     * Intel MPI's Hydra, torchrun): the default thread count is at most the machine's
     * CPUs (within the quota) divided among them. */
    int local_ranks;                /* 1 when no launcher variable is set */
    const char *local_ranks_source; /* the variable that gave it ("" when none) */
    /* Beyond reduce_prefetch_bytes, the reductions over NCHW planes of at most this many
     * bytes a tensor (fp32 up to 8x8, fp16 and bf16 up to 11x11) prefetch each next
     * channel's planes. */
    int prefetch_run_bytes;
} sbn_info;

/*
 * Fills *info, up to info->size bytes (a caller built against an older, shorter
 * sbn_info gets the fields it knows). The strings stay valid for the process.
 * SBN_ERR_NULL_ARGUMENT for NULL; SBN_ERR_BAD_VALUE when info->size is smaller than
 * the first two fields.
 */
sbn_status sbn_info_get(sbn_info *info);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_INFO_H */
