/*
 * cache_size.c - the data cache sizes of this machine, for the schedules that
 * choose by bytes (one_pass.c: a thread's share of L2; channel_map.c: whether a
 * channels-last row and its coefficients fit the L1; channel_map.c and
 * channel_reduce.c: whether tensors are far larger than the last-level cache,
 * sbn__beyond_cache). From the kernel's
 * /sys/devices/system/cpu/cpu0/cache/index<i> (the entry whose "level" is the one
 * asked and whose "type" is not Instruction: one instance's size), else from
 * sysconf (_SC_LEVEL1_DCACHE_SIZE, ..._LEVEL3_...), else the sizes of the machines
 * the schedules were tuned on (32 KiB L1d, 1 MiB L2, 32 MiB L3). The kernel comes
 * first because the C library can be far off: on the AMD EPYC Zen 4 VM the
 * project measures on, glibc's sysconf gives an L3 of 320 MiB where /sys and lscpu
 * give 32 MiB, which kept every tensor "inside the cache". Read once per level:
 * the callers ask on every op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env.h"
#include "core/internal.h"

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

/* The first line of /sys/devices/system/cpu/cpu0/cache/index<i>/<name> into buf. */
static int sys_cache_field(int i, const char *name, char *buf, int len)
{
    char path[96];
    FILE *f;
    int ok;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", i, name);
    if ((f = fopen(path, "r")) == NULL) return 0;
    ok = fgets(buf, len, f) != NULL;
    fclose(f);
    return ok;
}

static long sys_bytes(int level)
{
    int i;
    for (i = 0; i < 8; i++) {
        char lv[16], type[32], size[32], unit = 0;
        long v = -1;
        if (!sys_cache_field(i, "level", lv, sizeof lv) || (int)strtol(lv, NULL, 10) != level)
            continue;
        if (!sys_cache_field(i, "type", type, sizeof type) || strncmp(type, "Instruction", 11) == 0)
            continue;
        if (!sys_cache_field(i, "size", size, sizeof size) || sscanf(size, "%ld%c", &v, &unit) < 1)
            continue;
        if (unit == 'K') v *= 1024;
        else if (unit == 'M') v *= 1024 * 1024;
        return v;
    }
    return -1;
}

#define CACHE_DEFAULT_L1 ((int64_t)32 << 10)
#define CACHE_DEFAULT_L2 ((int64_t)1 << 20)
#define CACHE_DEFAULT_L3 ((int64_t)32 << 20)

int64_t sbn__cache_bytes(int level)
{
    static int64_t cached[3] = {-1, -1, -1}; /* benign race: every thread finds the same value */
    int64_t *c;
    level = level < 1 ? 1 : level > 3 ? 3 : level;
    c = &cached[level - 1];
    if (*c < 0) {
        long v = sys_bytes(level);
        if (v <= 0) v = sysconf_bytes(level);
        *c = v > 0        ? (int64_t)v
             : level == 1 ? CACHE_DEFAULT_L1
             : level == 2 ? CACHE_DEFAULT_L2
                          : CACHE_DEFAULT_L3;
    }
    return *c;
}

/*
 * Beyond the cache when the tensors' bytes exceed `share` of the L3; maps ask with 0.9,
 * reductions with 1. A cached store reads its line before writing it, so a map from memory to
 * memory moves 3 bytes per 2; a non-temporal one skips that read but also skips the
 * cache, which loses while the tensors fit: the output stays in the L3 for whoever reads
 * it next (the next layer, or the next call). AMD EPYC Zen 4 VM (32 MiB L3), ops on hot
 * buffers, min ms cached vs non-temporal (ABBA): x + y = 25.7 MB (0.8 of the L3), fp32
 * 32x128x28x28 eval at 2 threads 0.20 vs 0.45, fwd-train 0.50 vs 0.71, 1 thread eval
 * 0.42 vs 0.46; bf16 32x64x56x56 eval at 2 threads 0.28 vs 0.46; 38.5 MB (a backward's
 * dy + x + grad_input, 1.2 of the L3): fp32 32x128x28x28 1.48 vs 1.25 at 1 thread; 51 MB:
 * fp32 32x1024x14x14 eval 0.79 vs 0.70 at 2 threads; and already at 1.0 of the L3
 * (4096x1024 fp32 fwd-train, x + y = 32 MiB): 1.43-1.51 vs 0.77-1.03 at 2 threads, 2.6-2.9
 * vs 1.8-2.1 at 1. The crossing lies between 0.8 and 1.0 of the L3: maps ask with 0.9 (an
 * earlier kernel-only timing had put it at 2/3). The reductions' inputs, just written by the op
 * before, stay in an L3 they fit in, where the row reductions' prefetch costs time
 * (stream_avx512.c).
 */
static int g_beyond_override = -1;

void sbn__stream_stores_set(int mode)
{
    g_beyond_override = mode < 0 ? -1 : mode != 0;
}

int sbn__beyond_cache(const sbn_tensor *const *t, int n, double share, int suits)
{
    int env_mode = sbn__env_get()->stream_stores; /* -1 when unset or invalid */
    double bytes = 0.0;
    int i;
    if (g_beyond_override >= 0) return g_beyond_override;
    if (env_mode >= 0) return env_mode;
    if (!suits) return 0;
    for (i = 0; i < n; i++)
        bytes += (double)sbn_tensor_numel(t[i]) * (double)sbn_dtype_size(t[i]->dtype);
    return bytes > share * (double)sbn__cache_bytes(3);
}
