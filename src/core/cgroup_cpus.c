/*
 * cgroup_cpus.c - what this process's control group allows of the machine's CPUs, which
 * the machine description (machine.c) and the default pool (local_ranks.c) start from.
 * A container runtime that limits a container to N CPUs (Kubernetes' resources.limits.cpu,
 * docker --cpus) does not shrink the affinity mask: a process in an 8-CPU pod on a
 * 128-core node sees 128 CPUs, and a pool of 128 threads spends the pod's 8 CPU-seconds
 * of each second in a few milliseconds, after which the kernel stops every thread of the
 * group until the next period (100 ms by default): a call that needs its whole team waits
 * for that. The limit is a quota of CPU time per period, in cgroup v2 the file cpu.max
 * ("max 100000" or "<quota us> <period us>"), in v1 cpu.cfs_quota_us (-1: none) beside
 * cpu.cfs_period_us; it applies at every level of the hierarchy, so the smallest quota /
 * period from the process's cgroup up to the mount's root counts. The CPUs a job may use
 * at all (docker --cpuset-cpus, Slurm's ConstrainCores, a cpuset around mpirun) are the
 * group's cpuset, v2 cpuset.cpus.effective, v1 cpuset.effective_cpus (or cpuset.cpus):
 * the ranks of a job divide those among them, not the machine's online CPUs, which
 * /sys/devices/system/cpu/online lists when there is no cpuset (sysconf may count the
 * affinity mask instead, on musl and some glibc). The process's cgroup is its line of
 * /proc/self/cgroup ("0::<path>" for v2, "<n>:<list with the controller>:<path>" for
 * v1, which wins on hybrid systems, where that controller is v1's). A container usually
 * mounts its own cgroup as the root, while /proc/self/cgroup may give the path as the
 * host sees it; the directories of that path then do not exist under the mount and only
 * the root's files are read. The mounts are the usual /sys/fs/cgroup (v2) and
 * /sys/fs/cgroup/<controllers> (v1); a cgroup file system mounted elsewhere is not looked
 * for (no limit is found then). Read once per process (machine.c): a limit changed later,
 * or a move to another cgroup, is not seen. Every path is under a root prefix ("" for
 * this machine) so that the tests can write the trees they read.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/env.h"
#include "core/machine.h"

#define SBN_CGROUP_PATH 1024 /* longest path read; a longer one is not followed */

/* The first line of root + path into buf (without the newline); 0 when unreadable. */
static int read_line(const char *root, const char *path, char *buf, int len)
{
    char full[3 * SBN_CGROUP_PATH];
    if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full) return 0;
    return sbn__read_first_line(full, buf, len);
}

/* A whole positive decimal number of at most 18 digits filling s; 0 otherwise. */
static double positive(const char *s)
{
    int64_t v;
    return strlen(s) <= 18 && sbn__parse_whole(s, INT64_MAX, &v) ? (double)v : 0;
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

/* The cgroup path of `controller` ("cpu", "cpuset") from /proc/self/cgroup into path, and
 * whether it is v1's; 0 when neither line is there. A path too long to hold is taken as
 * the mount's root "/" (the root's limit still counts), and the rest of its line is
 * skipped, never read as a line of its own. */
static int cgroup_path(const char *root, const char *controller, char *path, int len, int *v1)
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
            const char *c = list + 1; /* v1: a comma-separated list with the controller */
            const size_t want = strlen(controller);
            while (c != NULL && *c != '\0') {
                size_t n = strcspn(c, ",");
                if (n == want && strncmp(c, controller, n) == 0) {
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

/* The next level up from path[0, *end): the parent's length, "/" (1) for the root's
 * children, 0 for the mount itself; 0 returned after the mount. */
static int parent_level(const char *path, size_t *end)
{
    if (*end == 0) return 0;
    if (*end <= 1) {
        *end = 0;
        return 1;
    }
    while (*end > 0 && path[*end - 1] != '/') (*end)--;
    if (*end > 1) (*end)--; /* drop the '/' too, but keep the root's */
    else *end = 0;
    return 1;
}

double sbn__cgroup_cpu_quota_at(const char *root)
{
    static const char *const v1_mounts[] = {"/sys/fs/cgroup/cpu,cpuacct",
                                            "/sys/fs/cgroup/cpuacct,cpu", "/sys/fs/cgroup/cpu"};
    char path[SBN_CGROUP_PATH], dir[2 * SBN_CGROUP_PATH];
    double least = 0;
    int v1 = 0, m;
    if (!cgroup_path(root, "cpu", path, sizeof path, &v1)) return 0;
    for (m = 0; m < (v1 ? 3 : 1); m++) { /* v1: any mount name, whichever has it */
        const char *mount = v1 ? v1_mounts[m] : "/sys/fs/cgroup";
        size_t end = strlen(path);
        do { /* the cgroup, then each parent up to the mount's root */
            double q;
            snprintf(dir, sizeof dir, "%s%.*s", mount, (int)end, path);
            q = level_quota(root, dir, v1);
            if (q > 0 && (least == 0 || q < least)) least = q;
        } while (parent_level(path, &end));
        if (least > 0) break;
    }
    return least;
}

/* CPUs in the list file root + path ("0-7,16-23"); 0 when unreadable or not a list. */
static int list_file_cpus(const char *root, const char *path)
{
    char line[4096];
    return read_line(root, path, line, sizeof line) ? sbn__cpu_list_count(line) : 0;
}

int sbn__cgroup_cpuset_cpus_at(const char *root)
{
    static const char *const v1_files[] = {"cpuset.effective_cpus", "cpuset.cpus"};
    char path[SBN_CGROUP_PATH], file[2 * SBN_CGROUP_PATH + 32];
    int v1 = 0;
    size_t end;
    if (!cgroup_path(root, "cpuset", path, sizeof path, &v1)) return 0;
    end = strlen(path);
    do { /* the deepest level that says: the effective set there is what applies */
        size_t f;
        for (f = 0; f < (v1 ? 2u : 1u); f++) {
            int n;
            snprintf(file, sizeof file, "%s%.*s/%s",
                     v1 ? "/sys/fs/cgroup/cpuset" : "/sys/fs/cgroup", (int)end, path,
                     v1 ? v1_files[f] : "cpuset.cpus.effective");
            if ((n = list_file_cpus(root, file)) > 0) return n;
        }
    } while (parent_level(path, &end));
    return 0;
}

int sbn__node_cpus_at(const char *root)
{
    int n = sbn__cgroup_cpuset_cpus_at(root);
    return n > 0 ? n : list_file_cpus(root, "/sys/devices/system/cpu/online");
}

int sbn__cpus_within_quota(int cpus, double quota)
{
    double whole;
    if (quota <= 0) return cpus;
    whole = ceil(quota); /* at least 1 for any quota > 0 */
    return whole < (double)cpus ? (int)whole : cpus;
}
