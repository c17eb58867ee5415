/*
 * local_ranks.c - how many processes of one parallel job share this machine, from the
 * variables their launcher sets, and the default thread count that leaves each its
 * share. Several MPI ranks (or torchrun workers) on one node each see, unbound or bound
 * to a socket, many more CPUs in their affinity mask than are theirs: 8 ranks on a
 * 64-core node bound to its two sockets see 32 CPUs each, and pools sized from the mask
 * would run 256 threads on 64 cores, every parallel loop then waiting for members the
 * kernel has parked behind another rank's. So the default is the CPUs of the mask and
 * the quota (machine.c), at most the node's CPUs (within the quota) divided by the local
 * ranks: 8 each in the example, 1 for ranks bound to one core. The launchers' variables,
 * the first one set and valid: OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI's mpirun),
 * MPI_LOCALNRANKS (MPICH's and Intel MPI's Hydra), LOCAL_WORLD_SIZE (torchrun). A value
 * that is not a whole number from 1 to SBN_MAX_LOCAL_RANKS is skipped.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/machine.h"

#define SBN_MAX_LOCAL_RANKS 65536

static const char *const k_local_rank_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                                "LOCAL_WORLD_SIZE"};

int sbn__parse_local_ranks(const char *text)
{
    long v = 0;
    size_t i, n;
    if (text == NULL) return 0;
    n = strlen(text);
    if (n == 0 || n > 6) return 0;
    for (i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9') return 0;
        v = v * 10 + (text[i] - '0');
    }
    return v >= 1 && v <= SBN_MAX_LOCAL_RANKS ? (int)v : 0;
}

int sbn__local_ranks(const char **source)
{
    size_t i;
    for (i = 0; i < sizeof k_local_rank_vars / sizeof k_local_rank_vars[0]; i++) {
        int n = sbn__parse_local_ranks(getenv(k_local_rank_vars[i]));
        if (n > 0) {
            if (source != NULL) *source = k_local_rank_vars[i];
            return n;
        }
    }
    if (source != NULL) *source = NULL;
    return 1;
}

int sbn__cpus_per_rank(int cpus, int node_cpus, int ranks)
{
    int share;
    if (ranks <= 1) return cpus;
    share = node_cpus / ranks;
    if (share < 1) share = 1;
    return share < cpus ? share : cpus;
}

int sbn__default_cpus(void)
{
    const double quota = sbn__machine_get()->cpu_quota;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cpus = sbn__cpus_within_quota(sbn__affinity_cpus(), quota);
    int node = sbn__cpus_within_quota(online > 0 ? (int)online : cpus, quota);
    return sbn__cpus_per_rank(cpus, node, sbn__local_ranks(NULL));
}
