/*
 * cache_size.c - the data cache sizes of this machine, for the schedules that
 * choose by bytes (one_pass.c: a thread's share of L2; channel_map.c: whether an
 * output is far larger than the last-level cache). From sysconf where the C
 * library knows them (_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE), else from
 * /sys/devices/system/cpu/cpu0/cache/index<i> (the entry whose "level" is the one
 * asked and whose "type" is not Instruction), else the sizes of the machines the
 * schedules were tuned on (1 MiB L2, 32 MiB L3). Read once per level: the callers
 * ask on every op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

static long sysconf_bytes(int level)
{
    long v = -1;
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
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

#define CACHE_DEFAULT_L2 ((int64_t)1 << 20)
#define CACHE_DEFAULT_L3 ((int64_t)32 << 20)

int64_t sbn__cache_bytes(int level)
{
    static int64_t cached[2] = {-1, -1}; /* benign race: every thread finds the same value */
    int64_t *c = &cached[level == 2 ? 0 : 1];
    if (*c < 0) {
        long v = sysconf_bytes(level);
        if (v <= 0) v = sys_bytes(level);
        *c = v > 0 ? (int64_t)v : level == 2 ? CACHE_DEFAULT_L2 : CACHE_DEFAULT_L3;
    }
    return *c;
}
