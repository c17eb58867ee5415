/*
 * cpu_quota.c - the CPU bandwidth limit of this process's control group, which the
 * machine description (machine.c) caps its CPU count with. A container runtime that
 * limits a container to N CPUs (Kubernetes' resources.limits.cpu, docker --cpus) does
 * not shrink the affinity mask: a process in an 8-CPU pod on a 128-core node sees 128
 * CPUs, and a pool of 128 threads spends the pod's 8 CPU-seconds of each second in a
 * few milliseconds, after which the kernel stops every thread of the group until the
 * next period (100 ms by default): a call that needs its whole team waits for that.
 * The limit is a quota of CPU time per period, in cgroup v2 the file cpu.max ("max
 * 100000" or "<quota us> <period us>"), in v1 cpu.cfs_quota_us (-1: none) beside
 * cpu.cfs_period_us; it applies at every level of the hierarchy, so the smallest
 * quota / period from the process's cgroup up to the mount's root counts. The
 * process's cgroup is its line of /proc/self/cgroup ("0::<path>" for v2, "<n>:<list
 * with cpu>:<path>" for v1, which wins on hybrid systems, where the cpu controller is
 * v1's). A container usually mounts its own cgroup as the root, while /proc/self/cgroup
 * may give the path as the host sees it; the directories of that path then do not
 * exist under the mount and only the root's file is read. The mounts are the usual
 * /sys/fs/cgroup (v2) and /sys/fs/cgroup/cpu,cpuacct (or cpuacct,cpu, or cpu: v1); a
 * cgroup file system mounted elsewhere is not looked for (no limit is found then). Read
 * once per process (machine.c): a limit changed later, or a move to another cgroup, is
 * not seen. Every path is under a root prefix ("" for this machine) so that the tests
 * can write the trees they read.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/machine.h"

#define SBN_CGROUP_PATH 1024 /* longest path read; a longer one is not followed */

/* The first line of root + path into buf (without the newline); 0 when unreadable. */
static int read_line(const char *root, const char *path, char *buf, int len)
{
    char full[3 * SBN_CGROUP_PATH];
    FILE *f;
    int ok;
    if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full) return 0;
    if ((f = fopen(full, "r")) == NULL) return 0;
    ok = fgets(buf, len, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* A whole positive decimal number filling s; 0 otherwise. */
static double positive(const char *s)
{
    double v = 0;
    if (*s == '\0' || strlen(s) > 18) return 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* One level's quota in CPUs: v2's cpu.max, or v1's two files; 0 for none. */
static double level_quota(const char *root, const char *dir, int v1)
{
    char path[2 * SBN_CGROUP_PATH + 32], q[64], p[64];
    double quota, period;
    if (v1) {
        if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir) >= (int)sizeof path ||
            !read_line(root, path, q, sizeof q))
            return 0;
        if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir) >= (int)sizeof path ||
            !read_line(root, path, p, sizeof p))
            return 0;
    } else {
        char *space;
        if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path ||
            !read_line(root, path, q, sizeof q) || (space = strchr(q, ' ')) == NULL)
            return 0;
        *space = '\0';
        snprintf(p, sizeof p, "%s", space + 1);
    }
    quota = positive(q); /* "max" and -1 (no limit) give 0 */
    period = positive(p);
    return quota > 0 && period > 0 ? quota / period : 0;
}

/* The cgroup path of the cpu controller from /proc/self/cgroup into path, and whether it
 * is v1's; 0 when neither line is there. A path too long to hold is taken as the mount's
 * root "/" (the root's limit still counts), and the rest of its line is skipped, never
 * read as a line of its own. */
static int cgroup_path(const char *root, char *path, int len, int *v1)
{
    char full[SBN_CGROUP_PATH + 32], line[SBN_CGROUP_PATH + 128];
    int found = 0;
    FILE *f;
    if (snprintf(full, sizeof full, "%s/proc/self/cgroup", root) >= (int)sizeof full) return 0;
    if ((f = fopen(full, "r")) == NULL) return 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char *list = strchr(line, ':'), *p;
        const size_t got = strlen(line);
        int ch, cut = 0;
        if ((got == 0 || line[got - 1] != '\n') && !feof(f)) { /* longer than line */
            while ((ch = fgetc(f)) != EOF && ch != '\n') continue;
            cut = 1;
        }
        if (list == NULL || (p = strchr(list + 1, ':')) == NULL) continue;
        *p++ = '\0';
        p[strcspn(p, "\n")] = '\0';
        if (*p != '/') continue;
        if (cut || strlen(p) >= (size_t)len) p[1] = '\0'; /* only the root is followed */
        if (strcmp(list + 1, "") == 0 && !found) { /* "0::<path>": the unified hierarchy */
            snprintf(path, (size_t)len, "%s", p);
            *v1 = 0, found = 1;
        } else {
            const char *c = list + 1; /* v1: a comma-separated controller list with "cpu" */
            while (c != NULL && *c != '\0') {
                size_t n = strcspn(c, ",");
                if (n == 3 && strncmp(c, "cpu", 3) == 0) {
                    snprintf(path, (size_t)len, "%s", p);
                    *v1 = 1, found = 1;
                    break;
                }
                c = c[n] == ',' ? c + n + 1 : NULL;
            }
            if (found && *v1) break;
        }
    }
    fclose(f);
    return found;
}

double sbn__cgroup_cpu_quota_at(const char *root)
{
    static const char *const v1_mounts[] = {"/sys/fs/cgroup/cpu,cpuacct",
                                            "/sys/fs/cgroup/cpuacct,cpu", "/sys/fs/cgroup/cpu"};
    char path[SBN_CGROUP_PATH], dir[2 * SBN_CGROUP_PATH];
    double least = 0;
    int v1 = 0, m;
    if (!cgroup_path(root, path, sizeof path, &v1)) return 0;
    for (m = 0; m < (v1 ? 3 : 1); m++) { /* v1: any mount name, whichever has it */
        const char *mount = v1 ? v1_mounts[m] : "/sys/fs/cgroup";
        size_t end = strlen(path);
        for (;;) { /* the cgroup, then each parent up to the mount's root */
            double q;
            snprintf(dir, sizeof dir, "%s%.*s", mount, (int)end, path);
            q = level_quota(root, dir, v1);
            if (q > 0 && (least == 0 || q < least)) least = q;
            if (end <= 1) break;
            while (end > 0 && path[end - 1] != '/') end--;
            if (end > 1) end--; /* drop the '/' too, but keep the root's */
            else end = 0;
        }
        if (least > 0) break;
    }
    return least;
}

int sbn__cpus_within_quota(int cpus, double quota)
{
    double whole;
    if (quota <= 0) return cpus;
    whole = ceil(quota);
    return whole < (double)cpus ? (whole < 1 ? 1 : (int)whole) : cpus;
}
