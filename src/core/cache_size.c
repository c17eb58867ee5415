/*
 * cache_size.c - whether the tensors of a map or a reduction lie beyond the last-level
 * cache (sbn__beyond_cache), from the L3 size of the machine description (machine.c),
 * for the schedules that choose by bytes: channel_map.c streams its stores and
 * channel_reduce.c prefetches short rows beyond it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env.h"
#include "core/internal.h"

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
