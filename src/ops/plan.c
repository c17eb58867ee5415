/*
 * plan.c - how many of a pool's threads take part in one loop of an op. Waking a
 * worker, handing it the loop and joining it costs about a microsecond when it is
 * spinning (two cache-line transfers: the gate word and the loop's descriptor) and
 * tens of microseconds when it sleeps; a loop pays that once per extra thread. So a
 * loop runs on as many threads as its work keeps busy for SBN_TEAM_MIN_NS each, never
 * more than the pool has nor more than the CPUs this process may run on (a pool of 16
 * threads on a 2-CPU machine would otherwise time-slice its workers against the
 * caller, which waits for each). Work is estimated from what the loop moves or
 * computes: SBN_NS_PER_BYTE for the streaming engines (a core reads and writes about
 * 20 GB/s from its caches), SBN_NS_PER_CHANNEL for a per-channel finish (a division, a
 * square root and a few loads and stores), SBN_NS_PER_CHUNK for merging one chunk's
 * partial moments (Chan's update, one division). The split never changes the bits:
 * every reduction's order is fixed by the shape alone (task_plan.c), so the team size
 * is a matter of speed only. Tests run every loop on the whole pool
 * (sbn__plan_full_teams), so the splits they ask for are the splits they get.
 */
#include "core/internal.h"

#define SBN_TEAM_MIN_NS 4000.0
#define SBN_NS_PER_BYTE 0.05
#define SBN_NS_PER_CHANNEL 60.0
#define SBN_NS_PER_CHUNK 10.0

static int g_full_teams; /* sbn__plan_full_teams (tests) */
static int g_cpus;       /* sbn__plan_set_cpus (tests); 0: the machine's */

void sbn__plan_full_teams(int on)
{
    g_full_teams = on != 0;
}

void sbn__plan_set_cpus(int cpus)
{
    g_cpus = cpus > 0 ? cpus : 0;
}

int sbn__plan_width(const sbn_pool_t *pool, double work_ns)
{
    int threads = sbn_pool_threads(pool), cpus;
    double fit;
    if (pool == NULL || threads <= 1) return 1;
    if (g_full_teams) return threads;
    cpus = g_cpus > 0 ? g_cpus : sbn__machine_get()->cpus;
    if (threads > cpus) threads = cpus;
    fit = work_ns / SBN_TEAM_MIN_NS;
    return fit < 1.0 ? 1 : fit < (double)threads ? (int)fit : threads;
}

double sbn__plan_stream_ns(const sbn_tensor *const *t, int n)
{
    double bytes = 0.0;
    int i;
    for (i = 0; i < n; i++)
        if (t[i] != NULL)
            bytes += (double)sbn_tensor_numel(t[i]) * (double)sbn_dtype_size(t[i]->dtype);
    return bytes * SBN_NS_PER_BYTE;
}

double sbn__plan_channels_ns(int64_t channels, int64_t chunks)
{
    return (double)channels * (SBN_NS_PER_CHANNEL + SBN_NS_PER_CHUNK * (double)chunks);
}

sbn_pool_t *sbn__plan_team(sbn_pool_t *pool, double work_ns, sbn_pool_t *view)
{
    return sbn__pool_team(pool, sbn__plan_width(pool, work_ns), view);
}
