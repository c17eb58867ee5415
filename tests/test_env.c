/*
 * test_env.c - the one parser of the SBN_* environment variables (src/core/env.c).
 * Every variable against a table of good and bad values (huge, negative, signs,
 * bases, exponents, garbage, blanks, NaN, infinities): each good one gives its field,
 * each bad one leaves the field at its default and a sentence naming the variable
 * and its value; a blank one counts as unset. The variables are read once per
 * process; the ignored ones warn once on stderr, SBN_COMM_TIMEOUT refuses instead;
 * sbn__env_describe words each state for `syncbn info`; and the library's readers
 * (aclnn pool, streaming stores, the one-pass schedule) see the struct. A huge
 * SBN_ONE_PASS_BYTES once overflowed the one-pass block count and crashed a worker:
 * it is now refused, and a step on a tensor of one element a channel keeps its bits.
 * Each case runs in its own forked child (the harness), so setenv here does not leak.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, fileno, dup */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aclnn/aclnn_internal.h"
#include "core/env.h"
#include "core/machine.h"
#include "harness/harness.h"
#include "ops/plan.h"
#include "support/env_now.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/comm.h"

typedef struct env_case {
    sbn__env_id id;
    const char *value;
    int valid;
    double want; /* the field when valid */
} env_case;

#define L2_HALF (-2.0) /* want: half the L2 */

static const env_case k_cases[] = {
    {SBN_ENV_ONE_PASS_BYTES, "0", 1, 0},
    {SBN_ENV_ONE_PASS_BYTES, "4096", 1, 4096},
    {SBN_ENV_ONE_PASS_BYTES, " 65536\t", 1, 65536},
    {SBN_ENV_ONE_PASS_BYTES, "007", 1, 7},
    {SBN_ENV_ONE_PASS_BYTES, "1099511627776", 1, 1099511627776.0},
    {SBN_ENV_ONE_PASS_BYTES, "l2", 1, L2_HALF},
    {SBN_ENV_ONE_PASS_BYTES, " l2 ", 1, L2_HALF},
    {SBN_ENV_ONE_PASS_BYTES, "1099511627777", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "9223372036854775807", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "9223372036854775808", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "99999999999999999999999999", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "-1", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "+5", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "0x10", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "1e3", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "L2", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "l3", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "12abc", 0, 0},
    {SBN_ENV_ONE_PASS_BYTES, "1 2", 0, 0},
    {SBN_ENV_STREAM_STORES, "0", 1, 0},
    {SBN_ENV_STREAM_STORES, "1", 1, 1},
    {SBN_ENV_STREAM_STORES, "2", 0, 0},
    {SBN_ENV_STREAM_STORES, "01", 0, 0},
    {SBN_ENV_STREAM_STORES, "-1", 0, 0},
    {SBN_ENV_STREAM_STORES, "1.0", 0, 0},
    {SBN_ENV_STREAM_STORES, "yes", 0, 0},
    {SBN_ENV_ROW_TILES, " 1", 1, 1},
    {SBN_ENV_ROW_TILES, "0\n", 1, 0},
    {SBN_ENV_ROW_TILES, "yes", 0, 0},
    {SBN_ENV_ROW_TILES, "true", 0, 0},
    {SBN_ENV_FORCE_SCALAR, "1", 1, 1},
    {SBN_ENV_FORCE_SCALAR, "0", 1, 0},
    {SBN_ENV_FORCE_SCALAR, "2", 0, 0},
    {SBN_ENV_FORCE_SCALAR, "on", 0, 0},
    {SBN_ENV_NUM_THREADS, "1", 1, 1},
    {SBN_ENV_NUM_THREADS, " 3 ", 1, 3},
    {SBN_ENV_NUM_THREADS, "1024", 1, 1024},
    {SBN_ENV_NUM_THREADS, "0", 0, 0},
    {SBN_ENV_NUM_THREADS, "1025", 0, 0},
    {SBN_ENV_NUM_THREADS, "-2", 0, 0},
    {SBN_ENV_NUM_THREADS, "lots", 0, 0},
    {SBN_ENV_NUM_THREADS, "3x", 0, 0},
    {SBN_ENV_NUM_THREADS, "4294967299", 0, 0},
    {SBN_ENV_NUM_THREADS, "99999999999999999999", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "2.5", 1, 2.5},
    {SBN_ENV_COMM_TIMEOUT, " 0.3 ", 1, 0.3},
    {SBN_ENV_COMM_TIMEOUT, "60", 1, 60},
    {SBN_ENV_COMM_TIMEOUT, "inf", 1, SBN_COMM_MAX_TIMEOUT},
    {SBN_ENV_COMM_TIMEOUT, "1e400", 1, SBN_COMM_MAX_TIMEOUT},
    {SBN_ENV_COMM_TIMEOUT, "1e9", 1, SBN_COMM_MAX_TIMEOUT},
    {SBN_ENV_COMM_TIMEOUT, "abc", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "-1", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "0", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "nan", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "-inf", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "5s", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "1e-400", 0, 0},
    {SBN_ENV_COMM_TIMEOUT, "0x", 0, 0},
};

/* Each value alone: its validity, its field (or the default), the sentence of a bad one. */
static void every_value_parses_strictly(void)
{
    size_t i;
    for (i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const env_case *c = &k_cases[i];
        const sbn__env *env;
        const sbn__env_var *v;
        double want = c->want == L2_HALF ? (double)(sbn__cache_bytes(2) / 2) : c->want;
        CHECK(tsup_setenv_now(tsup_env_names[c->id], c->value) == 0);
        env = sbn__env_get();
        v = &env->var[c->id];
        CHECK_MSG(v->name != NULL && strcmp(v->name, tsup_env_names[c->id]) == 0, "name %s", v->name);
        CHECK_MSG(v->set && v->valid == c->valid, "%s=\"%s\": set %d valid %d, expected valid %d",
                  tsup_env_names[c->id], c->value, v->set, v->valid, c->valid);
        if (c->valid) {
            CHECK_MSG(tsup_env_field(env, c->id) == want && v->message[0] == '\0',
                      "%s=\"%s\" gave %.17g, expected %.17g", tsup_env_names[c->id], c->value,
                      tsup_env_field(env, c->id), want);
        } else {
            CHECK_MSG(tsup_env_field(env, c->id) == tsup_env_defaults[c->id],
                      "%s=\"%s\" (bad) left %.17g, expected the default %g", tsup_env_names[c->id],
                      c->value, tsup_env_field(env, c->id), tsup_env_defaults[c->id]);
            CHECK_MSG(strstr(v->message, tsup_env_names[c->id]) != NULL &&
                          strstr(v->message, c->value) != NULL && strstr(v->message, "expected"),
                      "%s=\"%s\": the message does not name it: %s", tsup_env_names[c->id], c->value,
                      v->message);
        }
        CHECK(tsup_unsetenv_now(tsup_env_names[c->id]) == 0);
    }
}

static void blank_means_unset(void)
{
    static const char *const blanks[] = {"", " ", "\t \n"};
    size_t b;
    int id;
    for (b = 0; b < sizeof blanks / sizeof blanks[0]; b++) {
        const sbn__env *env;
        for (id = 0; id < SBN_ENV_COUNT; id++) CHECK(setenv(tsup_env_names[id], blanks[b], 1) == 0);
        sbn__env_reload();
        env = sbn__env_get();
        for (id = 0; id < SBN_ENV_COUNT; id++) {
            const sbn__env_var *v = &env->var[id];
            CHECK_MSG(!v->set && !v->valid && v->message[0] == '\0' &&
                          tsup_env_field(env, (sbn__env_id)id) == tsup_env_defaults[id],
                      "%s=\"%s\": set %d valid %d", tsup_env_names[id], blanks[b], v->set, v->valid);
        }
    }
}

/* A long value or one with unprintable bytes is quoted short and printable. */
static void messages_quote_safely(void)
{
    char longer[400];
    const sbn__env_var *v;
    memset(longer, '7', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", longer) == 0);
    v = &sbn__env_get()->var[SBN_ENV_NUM_THREADS];
    CHECK(v->set && !v->valid && strlen(v->text) < SBN_ENV_TEXT);
    CHECK_MSG(strstr(v->message, "SBN_NUM_THREADS") && strstr(v->message, "777...\""), "%s",
              v->message);
    CHECK(tsup_setenv_now("SBN_ROW_TILES", "\x1b[2J\x7f") == 0);
    v = &sbn__env_get()->var[SBN_ENV_ROW_TILES];
    CHECK_MSG(!v->valid && strstr(v->message, "\"?[2J?\"") != NULL, "%s", v->message);
}

/* Read once: a change after the first use is not seen until sbn__env_reload. */
static void read_once(void)
{
    CHECK(setenv("SBN_NUM_THREADS", "5", 1) == 0);
    CHECK(sbn__env_get()->num_threads == 5);
    CHECK(setenv("SBN_NUM_THREADS", "6", 1) == 0);
    CHECK(sbn__env_get()->num_threads == 5);
    sbn__env_reload();
    CHECK(sbn__env_get()->num_threads == 6);
}

/* Reads the text written to stderr while `fn` runs (stderr to a temporary file). */
static void capture_stderr(void (*fn)(void), char *out, size_t size)
{
    FILE *tmp = tmpfile();
    int saved = dup(2);
    size_t n = 0;
    out[0] = '\0';
    if (tmp == NULL || saved < 0) return;
    fflush(stderr);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    n = fread(out, 1, size - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
}

static int count_of(const char *text, const char *word)
{
    int n = 0;
    for (; (text = strstr(text, word)) != NULL; text += strlen(word)) n++;
    return n;
}

static void first_use_and_ops(void)
{
    const sbn_tensor *none[1];
    int64_t shape[2] = {4, 3};
    tsup_buf x = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, NULL);
    none[0] = &x.view;
    (void)sbn__env_get();
    (void)sbn__env_get();
    (void)sbn__beyond_cache(none, 1, 0.9, 1);
    (void)sbn__acl_pool_default_threads();
    tsup_free(&x);
}

/* The ignored ones warn once, naming the variable and value; a refused or good one does not. */
static void bad_tuning_values_warn_once(void)
{
    char text[4096];
    CHECK(setenv("SBN_ROW_TILES", "yes", 1) == 0);
    CHECK(setenv("SBN_ONE_PASS_BYTES", "9223372036854775807", 1) == 0);
    CHECK(setenv("SBN_COMM_TIMEOUT", "abc", 1) == 0);
    CHECK(setenv("SBN_FORCE_SCALAR", "0", 1) == 0);
    capture_stderr(first_use_and_ops, text, sizeof text);
    CHECK_MSG(count_of(text, "SBN_ROW_TILES is \"yes\"") == 1, "stderr: %s", text);
    CHECK_MSG(count_of(text, "SBN_ONE_PASS_BYTES is \"9223372036854775807\"") == 1, "stderr: %s",
              text);
    CHECK_MSG(count_of(text, "ignored") == 2, "stderr: %s", text);
    CHECK_MSG(count_of(text, "SBN_COMM_TIMEOUT") == 0 && count_of(text, "SBN_FORCE_SCALAR") == 0,
              "stderr: %s", text);
    CHECK_MSG(count_of(text, "\n") == 2, "stderr: %s", text);
}

/* SBN_COMM_TIMEOUT is refused where it is read, with the parser's sentence. */
static void bad_comm_timeout_is_refused(void)
{
    sbn_comm_t *comms[2] = {NULL, NULL};
    CHECK(tsup_setenv_now("SBN_COMM_TIMEOUT", "1e-400") == 0);
    CHECK_STATUS(sbn_comm_threads_create(2, 0.0, comms), SBN_ERR_BAD_VALUE);
    CHECK_MSG(strstr(sbn_last_error(), "SBN_COMM_TIMEOUT") && strstr(sbn_last_error(), "1e-400"),
              "%s", sbn_last_error());
    CHECK(comms[0] == NULL && comms[1] == NULL);
}

/* The readers see the struct: the aclnn pool's size, the streaming-store switch. */
static void readers_use_the_struct(void)
{
    const sbn_tensor *one[1];
    int64_t shape[2] = {4, 3};
    tsup_buf x = tsup_make(SBN_F32, 2, shape, TSUP_CHANNELS_FIRST, NULL);
    one[0] = &x.view;
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "5") == 0);
    CHECK(sbn__acl_pool_default_threads() == 5);
    CHECK(tsup_setenv_now("SBN_NUM_THREADS", "5x") == 0);
    CHECK(sbn__acl_pool_default_threads() ==
              sbn__default_cpus() ||
          sbn__acl_pool_default_threads() == 1024);
    CHECK(tsup_setenv_now("SBN_STREAM_STORES", "1") == 0);
    CHECK(sbn__beyond_cache(one, 1, 0.9, 0) == 1);
    CHECK(tsup_setenv_now("SBN_STREAM_STORES", "2") == 0);
    CHECK(sbn__beyond_cache(one, 1, 0.9, 0) == 0); /* ignored: by size, and too small */
    tsup_free(&x);
}

/*
 * The crash of issue 25: SBN_ONE_PASS_BYTES=9223372036854775807 made the one-pass block
 * count (block x 2 x threads) overflow on tensors of few elements a channel, and a worker
 * then ran blocks at wrapped channel offsets. Now refused (the size rule applies): every
 * output keeps the two-pass bits with pools of 1 to 3 threads.
 */
static void huge_one_pass_bytes_keeps_the_bits(void)
{
    static const tsup_step_case k = {SBN_F32, 4, {1, 32, 1, 1}, TSUP_CHANNELS_FIRST};
    tsup_step_inputs in;
    tsup_step_outputs base;
    int p;
    tsup_step_inputs_make(&k, 5, &in);
    sbn__one_pass_set_budget(0);
    tsup_step_run(&k, &in, &base, NULL);
    sbn__one_pass_set_budget(-1);
    CHECK(tsup_setenv_now("SBN_ONE_PASS_BYTES", "9223372036854775807") == 0);
    CHECK(sbn__env_get()->one_pass_bytes == -1);
    for (p = 0; p < 3; p++) {
        CHECK(sbn__one_pass_block(&in.x.view, 4, in.pools[p]) == 0);
        CHECK_MSG(tsup_step_matches(&k, &in, &base, in.pools[p]), "pool %d differs", p);
    }
    tsup_step_free(&base);
    tsup_step_inputs_free(&in);
}

/* sbn__env_describe: "unset", the value, or "invalid: ... refused", never past its buffer. */
static void describe_words_each_state(void)
{
    char buf[512], tiny[8];
    const sbn__env *env;
    CHECK(tsup_setenv_now("SBN_ROW_TILES", "1") == 0);
    CHECK(setenv("SBN_COMM_TIMEOUT", "1e400", 1) == 0);
    CHECK(setenv("SBN_NUM_THREADS", "0", 1) == 0);
    sbn__env_reload();
    env = sbn__env_get();
    sbn__env_describe(env, SBN_ENV_ONE_PASS_BYTES, buf, sizeof buf);
    CHECK_MSG(strncmp(buf, "unset", 5) == 0, "%s", buf);
    sbn__env_describe(env, SBN_ENV_ROW_TILES, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "1 (always)") == 0, "%s", buf);
    sbn__env_describe(env, SBN_ENV_COMM_TIMEOUT, buf, sizeof buf);
    CHECK_MSG(strncmp(buf, "1e+08 s", 7) == 0, "%s", buf);
    sbn__env_describe(env, SBN_ENV_NUM_THREADS, buf, sizeof buf);
    CHECK_MSG(strncmp(buf, "invalid: ", 9) == 0 && strstr(buf, "\"0\"") && strstr(buf, "refused"),
              "%s", buf);
    sbn__env_describe(env, SBN_ENV_NUM_THREADS, tiny, sizeof tiny);
    CHECK(strlen(tiny) == sizeof tiny - 1);
    sbn__env_describe(env, SBN_ENV_COUNT, buf, sizeof buf);
    CHECK(buf[0] == '\0');
}

static const sbn_test_case k_tests[] = {
    SBN_TEST_CASE(every_value_parses_strictly),
    SBN_TEST_CASE(blank_means_unset),
    SBN_TEST_CASE(messages_quote_safely),
    SBN_TEST_CASE(read_once),
    SBN_TEST_CASE(bad_tuning_values_warn_once),
    SBN_TEST_CASE(bad_comm_timeout_is_refused),
    SBN_TEST_CASE(readers_use_the_struct),
    SBN_TEST_CASE(huge_one_pass_bytes_keeps_the_bits),
    SBN_TEST_CASE(describe_words_each_state),
};

SBN_TEST_MAIN(k_tests)
