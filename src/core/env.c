/*
 * env.c - the one parser of the SBN_* environment variables (env.h). A table names
 * each variable with its parser, the forms it accepts, its default and whether a bad
 * value is ignored (tuning switches: the default applies, with a warning on stderr)
 * or refused (SBN_COMM_TIMEOUT: the calls that read it fail). Every value is trimmed
 * of surrounding blanks, and a blank one counts as unset; numbers are whole decimal
 * digits (no sign, no base prefix) checked against their bound before they are
 * used, so a huge value can never reach a size computation. The variables are read
 * together on the first sbn__env_get (pthread_once) into one static struct that
 * nothing writes afterwards, except the tests' sbn__env_reload.
 */
#include "core/env.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/machine.h"
#include "syncbn/syncbn.h"

#define SBN_ENV_LONGEST 128 /* bytes of the longest value parsed, blanks trimmed */

/* Parses a trimmed, non-empty value into its field of env; 1 when it is valid. */
typedef int (*env_parse_fn)(const char *value, sbn__env *env);

typedef struct env_spec {
    const char *name;
    env_parse_fn parse;
    const char *expected; /* the accepted forms, for the message */
    const char *fallback; /* what applies when it is unset (or ignored) */
    int refused;          /* 1: a bad value fails the calls that read it; 0: it is ignored */
} env_spec;

int sbn__parse_whole(const char *s, int64_t hi, int64_t *out)
{
    int64_t v = 0;
    if (*s == '\0') return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (v > (hi - (*s - '0')) / 10) return 0; /* v * 10 + digit > hi, without overflow */
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 1;
}

/* Exactly "0" or "1". */
static int parse_bit(const char *s, int *out)
{
    if ((s[0] != '0' && s[0] != '1') || s[1] != '\0') return 0;
    *out = s[0] - '0';
    return 1;
}

static int parse_one_pass_bytes(const char *s, sbn__env *env)
{
    if (strcmp(s, "l2") == 0) {
        env->one_pass_bytes = sbn__cache_bytes(2) / 2;
        return 1;
    }
    return sbn__parse_whole(s, SBN_ENV_MAX_ONE_PASS_BYTES, &env->one_pass_bytes);
}

static int parse_stream_stores(const char *s, sbn__env *env)
{
    return parse_bit(s, &env->stream_stores);
}

static int parse_row_tiles(const char *s, sbn__env *env)
{
    return parse_bit(s, &env->row_tiles);
}

static int parse_force_scalar(const char *s, sbn__env *env)
{
    return parse_bit(s, &env->force_scalar);
}

static int parse_num_threads(const char *s, sbn__env *env)
{
    int64_t v;
    if (!sbn__parse_whole(s, SBN_ENV_MAX_THREADS, &v) || v < 1) return 0;
    env->num_threads = (int)v;
    return 1;
}

/* strtod's numbers (an overflow to +inf is capped like inf itself); NaN, 0 and less refused. */
static int parse_comm_timeout(const char *s, sbn__env *env)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v > 0)) return 0;
    env->comm_timeout = v > SBN_COMM_MAX_TIMEOUT ? SBN_COMM_MAX_TIMEOUT : v;
    return 1;
}

static const env_spec k_specs[SBN_ENV_COUNT] = {
    [SBN_ENV_ONE_PASS_BYTES] = {"SBN_ONE_PASS_BYTES", parse_one_pass_bytes,
                                "0 (off), l2 (half the L2 per core) or a whole number of bytes "
                                "up to 1099511627776",
                                "the one-pass schedule by size", 0},
    [SBN_ENV_STREAM_STORES] = {"SBN_STREAM_STORES", parse_stream_stores,
                               "0 (never) or 1 (always)", "streaming stores by size", 0},
    [SBN_ENV_ROW_TILES] = {"SBN_ROW_TILES", parse_row_tiles, "0 (never) or 1 (always)",
                           "row tiles by size", 0},
    [SBN_ENV_FORCE_SCALAR] = {"SBN_FORCE_SCALAR", parse_force_scalar,
                              "0 or 1 (the scalar kernels)",
                              "the widest kernels the CPU supports", 0},
    [SBN_ENV_NUM_THREADS] = {"SBN_NUM_THREADS", parse_num_threads,
                             "a whole number from 1 to 1024",
                             "the CPUs of the mask, the CPU quota and the local ranks' share", 0},
    [SBN_ENV_COMM_TIMEOUT] = {"SBN_COMM_TIMEOUT", parse_comm_timeout,
                              "a number of seconds greater than 0", "60 s", 1},
};

/* The value for messages: at most SBN_ENV_TEXT - 4 bytes, unprintable ones as '?'. */
static void keep_text(const char *value, char *text)
{
    size_t i, room = SBN_ENV_TEXT - 4;
    for (i = 0; value[i] != '\0' && i < room; i++)
        text[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
    strcpy(text + i, value[i] != '\0' ? "..." : "");
}

static void parse_one(sbn__env *env, sbn__env_id id)
{
    const env_spec *s = &k_specs[id];
    sbn__env_var *v = &env->var[id];
    const char *raw = getenv(s->name);
    char value[SBN_ENV_LONGEST + 1];
    size_t n;
    memset(v, 0, sizeof *v);
    v->name = s->name;
    if (raw == NULL) return;
    keep_text(raw, v->text);
    while (isspace((unsigned char)*raw)) raw++;
    n = strlen(raw);
    while (n > 0 && isspace((unsigned char)raw[n - 1])) n--;
    if (n == 0) return; /* blank: unset */
    v->set = 1;
    if (n <= SBN_ENV_LONGEST) { /* a longer one is no value of any variable */
        memcpy(value, raw, n);
        value[n] = '\0';
        v->valid = s->parse(value, env);
    }
    if (v->valid) return;
    if (s->refused) /* the caller's way out is in the sentence its call returns */
        snprintf(v->message, sizeof v->message,
                 "the environment variable %s is \"%s\"; expected %s (unset it for the default: %s)",
                 s->name, v->text, s->expected, s->fallback);
    else
        snprintf(v->message, sizeof v->message, "the environment variable %s is \"%s\"; expected %s",
                 s->name, v->text, s->expected);
}

/* Every field at its default, then each variable parsed; a bad value leaves its default. */
static void parse_all(sbn__env *env)
{
    int id;
    memset(env, 0, sizeof *env);
    env->one_pass_bytes = -1;
    env->stream_stores = -1;
    env->row_tiles = -1;
    for (id = 0; id < SBN_ENV_COUNT; id++) parse_one(env, (sbn__env_id)id);
}

static void warn_ignored(const sbn__env *env)
{
    int id;
    for (id = 0; id < SBN_ENV_COUNT; id++) {
        const sbn__env_var *v = &env->var[id];
        if (v->set && !v->valid && !k_specs[id].refused)
            fprintf(stderr, "syncbn: warning: %s; ignored: %s\n", v->message, k_specs[id].fallback);
    }
}

static sbn__env g_env;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_reads; /* how many times load ran (sbn__env_reload) */

static void load(void)
{
    parse_all(&g_env);
    warn_ignored(&g_env);
    g_reads++;
}

const sbn__env *sbn__env_get(void)
{
    pthread_once(&g_once, load);
    return &g_env;
}

void sbn__env_reload(void)
{
    int before = g_reads;
    pthread_once(&g_once, load);
    if (g_reads == before) load(); /* not read just now by the first use */
}

/* A valid value in words. */
static void describe_value(const sbn__env *env, sbn__env_id id, char *buf, size_t size)
{
    const sbn__env_var *v = &env->var[id];
    switch (id) {
    case SBN_ENV_ONE_PASS_BYTES:
        snprintf(buf, size, "%lld bytes%s", (long long)env->one_pass_bytes,
                 env->one_pass_bytes == 0           ? " (off)"
                 : strstr(v->text, "l2") != NULL ? " (l2: half the L2 per core)"
                                                 : "");
        break;
    case SBN_ENV_STREAM_STORES:
    case SBN_ENV_ROW_TILES: {
        int on = id == SBN_ENV_ROW_TILES ? env->row_tiles : env->stream_stores;
        snprintf(buf, size, "%d (%s)", on, on ? "always" : "never");
        break;
    }
    case SBN_ENV_FORCE_SCALAR:
        snprintf(buf, size, "%d (%s)", env->force_scalar,
                 env->force_scalar ? "the scalar kernels" : "the widest kernels the CPU supports");
        break;
    case SBN_ENV_NUM_THREADS:
        snprintf(buf, size, "%d threads", env->num_threads);
        break;
    default:
        snprintf(buf, size, "%g s%s", env->comm_timeout,
                 env->comm_timeout == SBN_COMM_MAX_TIMEOUT ? " (the cap)" : "");
        break;
    }
}

void sbn__env_describe(const sbn__env *env, sbn__env_id id, char *buf, size_t size)
{
    const env_spec *s;
    const sbn__env_var *v;
    if (buf == NULL || size == 0) return;
    buf[0] = '\0';
    if ((int)id < 0 || id >= SBN_ENV_COUNT) return;
    s = &k_specs[id];
    v = &env->var[id];
    if (!v->set)
        snprintf(buf, size, "unset (%s)", s->fallback);
    else if (!v->valid)
        snprintf(buf, size, "invalid: %s; refused: %s%s", v->message,
                 s->refused ? "every communicator creation that reads it fails" : s->fallback,
                 s->refused ? "" : " instead");
    else
        describe_value(env, id, buf, size);
}
