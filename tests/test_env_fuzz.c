/*
 * test_env_fuzz.c - the environment fuzzer: random SBN_* values around a normal
 * workload, one child process per case, since the library reads its environment once
 * per process. `test_env_fuzz [CASES [SEED [SECONDS]]]` (default 300 cases, a seed from
 * the clock, printed for a rerun, and no case started after 45 s) re-executes itself (/proc/self/exe --child POOL) with
 * each of the six variables unset or set to a value drawn from: edge strings (huge,
 * negative, signs, bases, exponents, NaN, infinities, blanks, "l2", 0/1/2), numbers
 * near 2^63, a valid value of that variable, a random string of digits, or random bytes. The child runs
 * training forward, backward and eval forward on five tensors (one and two elements a
 * channel, where a huge SBN_ONE_PASS_BYTES once overflowed the one-pass block count;
 * small; medium NCHW fp32; channels-last bf16) with a pool of 1 to 8 threads, creates
 * a threads communicator with the environment's timeout, and prints a digest of every
 * output and what it parsed. Each case must exit 0 within 60 s, give the digests of a
 * child without any SBN_* variable, judge every value whose validity is known as
 * expected (a valid value valid, random bytes with a '#' invalid), refuse the
 * communicator exactly when SBN_COMM_TIMEOUT is bad, and write to stderr nothing but
 * one warning for each bad tuning value.
 */
#define _GNU_SOURCE /* environ */
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aclnn/aclnn_internal.h"
#include "core/env.h"
#include "support/env_now.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/comm.h"

extern char **environ;

#define DEFAULT_CASES 300
#define DEFAULT_SECONDS 45 /* no case starts after this (ASan children are slow) */
#define CHILD_SECONDS 60
#define OUT_BYTES 8192

static const tsup_step_case k_shapes[] = {
    {SBN_F32, 4, {1, 32, 1, 1}, TSUP_CHANNELS_FIRST}, /* one element a channel */
    {SBN_F16, 2, {2, 64, 0, 0}, TSUP_CHANNELS_FIRST}, /* (N, C): two */
    {SBN_F32, 4, {4, 8, 5, 5}, TSUP_CHANNELS_FIRST},
    {SBN_F32, 4, {8, 64, 16, 16}, TSUP_CHANNELS_FIRST},
    {SBN_BF16, 4, {4, 128, 8, 8}, TSUP_CHANNELS_LAST},
};
#define N_SHAPES ((int)(sizeof k_shapes / sizeof k_shapes[0]))

/* ---- the child: the workload under whatever environment it was given ---- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n--) h = (h ^ *p++) * 0x100000001b3ull;
    return h;
}

static uint64_t digest_of(const tsup_step_outputs *o)
{
    const tsup_buf *all[] = {&o->y, &o->gi, &o->sm, &o->si, &o->rm, &o->rv, &o->gw, &o->gb, &o->ye};
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < sizeof all / sizeof all[0]; i++) {
        int64_t n = sbn_tensor_numel(&all[i]->view);
        double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
        if (v == NULL) return 0;
        tsup_read(&all[i]->view, v);
        h = fnv(h, v, (size_t)n * sizeof(double));
        free(v);
    }
    return h;
}

static int child(int threads)
{
    const sbn__env *env = sbn__env_get();
    sbn_pool_t *pool = NULL;
    sbn_comm_t *comms[2] = {NULL, NULL};
    sbn_status s;
    int i, acl_threads = sbn__acl_pool_default_threads();
    if (threads > 1 && sbn_pool_create(threads, &pool) != SBN_OK) return 3;
    for (i = 0; i < N_SHAPES; i++) {
        tsup_step_inputs in;
        tsup_step_outputs out;
        tsup_step_inputs_make(&k_shapes[i], 17, &in);
        tsup_step_run(&k_shapes[i], &in, &out, pool);
        printf("digest %d %016llx\n", i, (unsigned long long)digest_of(&out));
        tsup_step_free(&out);
        tsup_step_inputs_free(&in);
    }
    sbn_pool_destroy(pool);
    s = sbn_comm_threads_create(2, 0.0, comms);
    sbn_comm_destroy(comms[0]);
    sbn_comm_destroy(comms[1]);
    printf("comm %d\n", (int)s);
    printf("acl_threads %d\n", acl_threads >= 1 && acl_threads <= SBN_ENV_MAX_THREADS);
    for (i = 0; i < SBN_ENV_COUNT; i++)
        printf("env %d %d %d\n", i, env->var[i].set, env->var[i].valid);
    return 0;
}

/* ---- the values ---- */

enum { UNKNOWN = -1, INVALID = 0, VALID = 1 };

static const char *const k_edges[] = {
    "", " ", "\t", "\n", "0", "1", "2", "3", "8", "-1", "-0", "+1", "01", " 1 ", "1\n", "0x10",
    "0x1p3", "1e3", "1e400", "-1e400", "1e-400", "1e8", "nan", "NaN", "-nan", "inf", "-inf",
    "infinity", "l2", "L2", " l2 ", "l1", "l2x", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "18446744073709551615", "18446744073709551616",
    "99999999999999999999999999999", "1099511627776", "1099511627777", "1024", "1025",
    "4294967296", "4294967297", "0.5", "2.5", "1.0", ".5", "5.", "1e", "e1", "yes", "no", "true",
    "abc", "12abc", "1 2", "1,5", "\x01", "\xff\xfe", "%s%s%n", "$(true)", "\"", "=", "0 0",
};

/* A valid value of variable id (its text in buf). */
static void valid_value(tsup_rng *rng, int id, char *buf, size_t size)
{
    uint64_t r = tsup_next_u64(rng);
    switch (id) {
    case SBN_ENV_ONE_PASS_BYTES:
        if (r % 4 == 0) snprintf(buf, size, "l2");
        else if (r % 4 == 1) snprintf(buf, size, "%llu", (unsigned long long)((r >> 8) % 4096));
        else snprintf(buf, size, "%llu", (unsigned long long)((r >> 8) % (((uint64_t)1 << 40) + 1)));
        break;
    case SBN_ENV_NUM_THREADS:
        snprintf(buf, size, "%d", 1 + (int)((r >> 8) % SBN_ENV_MAX_THREADS));
        break;
    case SBN_ENV_COMM_TIMEOUT:
        snprintf(buf, size, "%.4g", 1e-3 + (double)((r >> 11) % 1000000) * 1e-3 * (double)(1 + r % 1000));
        break;
    default:
        snprintf(buf, size, "%d", (int)(r & 1));
        break;
    }
}

/* Picks variable id's value into buf (NULL return: unset); *expect what the parser must say.
 * Unset 25%, an edge string 20%, a huge number 15% (near 2^63 and its halves: the block
 * count of the one-pass schedule overflowed there), a valid value 20%, a random string of
 * digits 10%, random bytes 10%. */
static const char *pick(tsup_rng *rng, int id, char *buf, size_t size, int *expect)
{
    uint64_t r = tsup_next_u64(rng) % 100, x = tsup_next_u64(rng);
    size_t n, i;
    *expect = UNKNOWN;
    if (r < 25) return NULL;
    if (r < 45) return k_edges[x % (sizeof k_edges / sizeof k_edges[0])];
    if (r < 60) {
        uint64_t big = x % 2 ? (uint64_t)INT64_MAX - x % 1000 : (uint64_t)INT64_MAX >> (x % 8);
        snprintf(buf, size, "%llu", (unsigned long long)big);
        return buf;
    }
    if (r < 80) {
        valid_value(rng, id, buf, size);
        *expect = VALID;
        return buf;
    }
    n = 1 + (size_t)(x % (r < 90 ? 30 : size - 2));
    for (i = 0; i < n; i++) {
        uint64_t c = tsup_next_u64(rng);
        buf[i] = r < 90 ? (char)('0' + c % 10) : (char)(1 + c % 255); /* digits, or any byte */
    }
    if (r < 90 && tsup_next_u64(rng) % 4 == 0) buf[0] = '-';
    buf[n] = '\0';
    if (r >= 90) { /* no variable accepts a '#' */
        buf[tsup_next_u64(rng) % n] = '#';
        *expect = INVALID;
    }
    return buf;
}

/* ---- the parent ---- */

typedef struct run {
    int status;        /* waitpid's, or -1 when the child did not finish in time */
    char out[OUT_BYTES], err[OUT_BYTES];
} run;

static void read_back(FILE *f, char *buf)
{
    size_t n;
    fflush(f);
    rewind(f);
    n = fread(buf, 1, OUT_BYTES - 1, f);
    buf[n] = '\0';
    rewind(f);
    if (ftruncate(fileno(f), 0) != 0) buf[0] = '\0';
}

/* Runs `--child threads` with environ less every SBN_* variable of the library, plus add. */
static void spawn_child(int threads, char *const *add, FILE *out, FILE *err, run *r)
{
    static char self[] = "test_env_fuzz", flag[] = "--child";
    char arg[16], *argv[] = {self, flag, arg, NULL}, **envp;
    size_t n = 0, k = 0, i;
    posix_spawn_file_actions_t actions;
    pid_t pid;
    double waited = 0.0;
    while (environ[n]) n++;
    envp = calloc(n + SBN_ENV_COUNT + 1, sizeof *envp);
    r->status = -1;
    r->out[0] = r->err[0] = '\0';
    if (envp == NULL) return;
    for (i = 0; i < n; i++) {
        int id, ours = 0;
        for (id = 0; id < SBN_ENV_COUNT; id++) {
            size_t len = strlen(tsup_env_names[id]);
            ours |= strncmp(environ[i], tsup_env_names[id], len) == 0 && environ[i][len] == '=';
        }
        if (!ours) envp[k++] = environ[i];
    }
    for (i = 0; add[i] != NULL; i++) envp[k++] = add[i];
    snprintf(arg, sizeof arg, "%d", threads);
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fileno(out), 1);
    posix_spawn_file_actions_adddup2(&actions, fileno(err), 2);
    fflush(stdout);
    if (posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, envp) == 0) {
        int status = 0;
        struct timespec nap = {0, 5000000};
        pid_t got;
        while ((got = waitpid(pid, &status, WNOHANG)) == 0 && waited < CHILD_SECONDS) {
            nanosleep(&nap, NULL);
            waited += 0.005;
        }
        if (got == 0) { /* a hang: stop it, and report it as one */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        } else {
            r->status = status;
        }
    }
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    read_back(out, r->out);
    read_back(err, r->err);
}

static int count_of(const char *text, const char *word)
{
    int n = 0;
    for (; (text = strstr(text, word)) != NULL; text += strlen(word)) n++;
    return n;
}

/* Every stderr line is one of the library's warnings. */
static int only_warnings(const char *err)
{
    const char *line = err;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, "syncbn: warning: the environment variable SBN_", 46) != 0) return 0;
        if (end == NULL) break;
        line = end + 1;
    }
    return 1;
}

/* Checks one finished case; prints what is wrong and returns 0, or returns 1. */
static int judge(int c, const run *r, const char *ref, char *const *add, const int *expect)
{
    int id, set[SBN_ENV_COUNT], valid[SBN_ENV_COUNT], comm = 1, acl = 0, ok = 1, i;
    const char *p;
    if (r->status < 0 || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
        printf("case %d: the child %s (status %d)\n", c,
               r->status < 0 ? "hung (killed after 60 s)" : "did not exit 0", r->status);
        ok = 0;
    } else {
        char digests[OUT_BYTES];
        size_t n = 0;
        for (p = r->out; (p = strstr(p, "digest ")) != NULL; p = strchr(p, '\n')) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p + 1) : strlen(p);
            memcpy(digests + n, p, len);
            n += len;
            if (e == NULL) break;
        }
        digests[n] = '\0';
        if (strcmp(digests, ref) != 0) {
            printf("case %d: outputs differ from the run without SBN_* variables:\n%s", c, digests);
            ok = 0;
        }
        for (id = 0; id < SBN_ENV_COUNT; id++) {
            char key[16];
            snprintf(key, sizeof key, "env %d ", id);
            p = strstr(r->out, key);
            set[id] = valid[id] = -1;
            if (p) sscanf(p + strlen(key), "%d %d", &set[id], &valid[id]);
        }
        if ((p = strstr(r->out, "comm ")) != NULL) sscanf(p + 5, "%d", &comm);
        if ((p = strstr(r->out, "acl_threads ")) != NULL) sscanf(p + 12, "%d", &acl);
        for (id = 0; id < SBN_ENV_COUNT; id++) {
            int bad = set[id] == 1 && valid[id] == 0, warned;
            char word[64];
            if (set[id] < 0) {
                printf("case %d: no state printed for %s\n", c, tsup_env_names[id]);
                ok = 0;
                continue;
            }
            if (expect[id] != UNKNOWN && (set[id] != 1 || valid[id] != expect[id])) {
                printf("case %d: %s judged %s, expected %s\n", c, tsup_env_names[id],
                       valid[id] ? "valid" : "invalid", expect[id] ? "valid" : "invalid");
                ok = 0;
            }
            snprintf(word, sizeof word, "variable %s is", tsup_env_names[id]);
            warned = count_of(r->err, word);
            if (warned != (bad && id != SBN_ENV_COMM_TIMEOUT)) {
                printf("case %d: %s warned %d times (set %d valid %d)\n", c, tsup_env_names[id], warned,
                       set[id], valid[id]);
                ok = 0;
            }
        }
        if (comm != (set[SBN_ENV_COMM_TIMEOUT] == 1 && !valid[SBN_ENV_COMM_TIMEOUT]
                         ? SBN_ERR_BAD_VALUE : SBN_OK) || !acl) {
            printf("case %d: communicator status %d, aclnn pool size in range %d\n", c, comm, acl);
            ok = 0;
        }
        if (!only_warnings(r->err)) {
            printf("case %d: stderr holds more than warnings:\n%s\n", c, r->err);
            ok = 0;
        }
    }
    if (!ok) { /* the environment, each byte outside printable ASCII as \xNN */
        printf("case %d environment:", c);
        for (i = 0; add[i] != NULL; i++) {
            const unsigned char *b = (const unsigned char *)add[i];
            printf(" [");
            for (; *b; b++) printf(*b >= 0x20 && *b < 0x7f ? "%c" : "\\x%02x", *b);
            printf("]");
        }
        printf("\n");
    }
    return ok;
}

/* "NAME=value" into buf (room for any name and value of pick). */
static char *env_pair(char *buf, const char *name, const char *value)
{
    size_t ln = strlen(name), lv = strlen(value);
    memcpy(buf, name, ln);
    buf[ln] = '=';
    memcpy(buf + ln + 1, value, lv + 1);
    return buf;
}

static int parent(int cases, uint64_t seed, int seconds)
{
    static char values[SBN_ENV_COUNT][512];
    static char pairs[SBN_ENV_COUNT][sizeof values[0] + 32];
    static run r;
    char ref[OUT_BYTES], *none[] = {NULL}, *add[SBN_ENV_COUNT + 1];
    FILE *out = tmpfile(), *err = tmpfile();
    tsup_rng rng = tsup_rng_seed(seed);
    int c, failed = 0, with_bad = 0, threads_seen[9] = {0};
    time_t t0 = time(NULL);
    if (out == NULL || err == NULL) {
        printf("test_env_fuzz: no temporary files\n");
        return 1;
    }
    spawn_child(1, none, out, err, &r);
    if (r.status != 0 || strstr(r.out, "digest ") == NULL) {
        printf("test_env_fuzz: the reference child failed (status %d):\n%s%s\n", r.status, r.out,
               r.err);
        return 1;
    }
    *strstr(r.out, "comm ") = '\0'; /* the digests alone */
    snprintf(ref, sizeof ref, "%s", r.out);
    for (c = 0; c < cases && time(NULL) - t0 < seconds; c++) {
        int id, k = 0, expect[SBN_ENV_COUNT], threads = 1 + (int)(tsup_next_u64(&rng) % 8);
        for (id = 0; id < SBN_ENV_COUNT; id++) {
            const char *v = pick(&rng, id, values[id], sizeof values[id], &expect[id]);
            if (v != NULL) add[k++] = env_pair(pairs[id], tsup_env_names[id], v);
        }
        add[k] = NULL;
        spawn_child(threads, add, out, err, &r);
        threads_seen[threads]++;
        with_bad += strstr(r.err, "warning") != NULL || strstr(r.out, "comm -") != NULL;
        if (!judge(c, &r, ref, add, expect)) failed++;
        if (failed >= 5) break;
    }
    printf("test_env_fuzz: %d cases (%d with a bad value), %d failed, pools of 1..8 threads "
           "(%d with 8), %ld s; rerun: test_env_fuzz %d %llu %d\n",
           failed >= 5 ? c + 1 : c, with_bad, failed, threads_seen[8], (long)(time(NULL) - t0),
           cases, (unsigned long long)seed, seconds);
    fclose(out);
    fclose(err);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int cases = DEFAULT_CASES, seconds = DEFAULT_SECONDS;
    uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(atoi(argv[2]));
    if (argc > 1) cases = atoi(argv[1]);
    if (argc > 2) seed = strtoull(argv[2], NULL, 10);
    if (argc > 3) seconds = atoi(argv[3]);
    if (cases < 1) cases = 1;
    return parent(cases, seed, seconds > 0 ? seconds : DEFAULT_SECONDS);
}
