/*
 * local_ranks.c - how many processes of one parallel job share this machine, from the
 * variables their launcher sets, and the default thread count that leaves each its
 * share. Several MPI ranks (or torchrun workers) on one node each see, unbound or bound
 * to a socket, many more CPUs in their affinity mask than are theirs: 8 ranks on a
 * 64-core node bound to its two sockets see 32 CPUs each, and pools sized from the mask
 * would run 256 threads on 64 cores, every parallel loop then waiting for members the
 * kernel has parked behind another rank's. So the default is the CPUs of the mask and
 * the quota (machine.c), at most the job's CPUs of the machine (its cgroup's cpuset, else
 * the online CPUs: cgroup_cpus.c; within the quota) divided by the local ranks: 8 each in
 * the example, 1 for ranks bound to one core. The launchers' variables, the largest
 * valid one (a launcher of one rank a node may start another of several):
 * OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI's mpirun), MPI_LOCALNRANKS (MPICH's and Intel
 * MPI's Hydra), LOCAL_WORLD_SIZE (torchrun). A value that is not a whole number from 1 to
 * SBN_MAX_LOCAL_RANKS is skipped. Read from the environment at each call (a pool's
 * creation, sbn_info_get), not once: a program may set them before it creates its pool.
 * Not read: Slurm's srun (which binds each task to its CPUs by default), MVAPICH's and
 * Horovod's variables.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/machine.h"

#define SBN_MAX_LOCAL_RANKS 65536

static const char *const k_local_rank_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                                "LOCAL_WORLD_SIZE"};

int sbn__parse_local_ranks(const char *text)
{
    int64_t v;
    if (text == NULL || strlen(text) > 6 || !sbn__parse_whole(text, SBN_MAX_LOCAL_RANKS, &v))
        return 0;
    return v >= 1 ? (int)v : 0;
}

int sbn__local_ranks(const char **source)
{
    size_t i;
    int most = 1;
    if (source != NULL) *source = NULL;
    for (i = 0; i < sizeof k_local_rank_vars / sizeof k_local_rank_vars[0]; i++) {
        int n = sbn__parse_local_ranks(getenv(k_local_rank_vars[i]));
        if (n > most) { /* nested launchers (mpirun of one rank a node, torchrun of 8) */
            most = n;
            if (source != NULL) *source = k_local_rank_vars[i];
        }
    }
    return most;
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
    const sbn__machine *m = sbn__machine_get();
    int cpus = sbn__cpus_within_quota(sbn__affinity_cpus(), m->cpu_quota);
    int node = sbn__cpus_within_quota(m->node_cpus, m->cpu_quota);
    return sbn__cpus_per_rank(cpus, node, sbn__local_ranks(NULL));
}
