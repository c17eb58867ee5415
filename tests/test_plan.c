/*
 * test_plan.c - the pool's loops and the plan's team sizes (src/core/pool.c,
 * src/ops/plan.c). The pool: every index of a loop runs exactly once, whatever the
 * team width, the count, whether the workers are spinning, asleep or cancelled while
 * waking, and with several threads calling loops on one pool at once; a loop after the
 * workers fell asleep wakes every member it invites, for team widths across the wake-up
 * groups; its counts of what the loops cost add up. The plan: a
 * loop never takes more threads than the pool, the CPUs or its work justify, and the
 * teams it picks (unlike the rest of the tests, which run every loop on the whole pool)
 * give the same bits as one thread, for every op of a training step, in both layouts
 * and several dtypes, on pools of 2 to 16 threads planned as on a 16-CPU machine, and
 * of 24 to 128 threads planned as on a 128-CPU machine and with full teams.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/machine.h"
#include "core/pool.h"
#include "harness/harness.h"
#include "ops/plan.h"
#include "support/support.h"
#include "support/train_pair.h"
#include "syncbn/ops.h"

#define MAX_COUNT 2048

typedef struct count_job {
    atomic_int hits[MAX_COUNT];
} count_job;

static void hit(void *ctx, int64_t begin, int64_t end)
{
    count_job *job = ctx;
    int64_t i;
    for (i = begin; i < end; i++) atomic_fetch_add(&job->hits[i], 1);
}

/* Runs a loop of `count` indices on `team` and checks each ran exactly once. */
static int loop_once(sbn_pool_t *team, int64_t count, count_job *job)
{
    int64_t i;
    for (i = 0; i < count; i++) atomic_store(&job->hits[i], 0);
    sbn__parallel_for(team, count, hit, job);
    for (i = 0; i < count; i++)
        if (atomic_load(&job->hits[i]) != 1) {
            sbn_test_fail(__FILE__, __LINE__, "count %lld, width %d: index %lld ran %d times",
                          (long long)count, sbn_pool_threads(team), (long long)i,
                          atomic_load(&job->hits[i]));
            return 0;
        }
    return 1;
}

static void every_index_once(void)
{
    static const int64_t counts[] = {1, 2, 3, 7, 15, 16, 17, 33, 255, 256, 257, 1000, MAX_COUNT};
    count_job *job = calloc(1, sizeof *job);
    sbn_pool_t *pool = NULL;
    int width, round;
    unsigned c;
    CHECK_OK(sbn_pool_create(16, &pool));
    for (round = 0; round < 3; round++)
        for (width = 1; width <= 16; width++) {
            sbn_pool_t view, *team = sbn__pool_team(pool, width, &view);
            CHECK(sbn_pool_threads(team) == width);
            for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                if (!loop_once(team, counts[c], job)) goto done;
                /* let the workers fall asleep now and then: the caller then cancels
                 * the invitations of those still waking and runs their pieces */
                if (round == 1 && c % 4 == 0) usleep(1000);
            }
        }
done:
    sbn_pool_destroy(pool);
    free(job);
}

/* Member pieces of 3 ms, the caller's own of 1 ms: members have claimed theirs by the
 * time the caller is done, and it waits for them. */
static void slow_members(void *ctx, int64_t begin, int64_t end)
{
    usleep(begin == 0 ? 1000 : 3000);
    hit(ctx, begin, end);
}

/* The pool's own counts of what its loops cost: exact for loops and invitations, and
 * consistent for the rest (a member is cancelled or claims its invitation, and only one
 * that claimed can be waited for); slow members are waited for; a reset starts over. */
static void pool_stats_count_the_loops(void)
{
    count_job *job = calloc(1, sizeof *job);
    sbn_pool_t *pool = NULL, view, *team;
    sbn__pool_stats st;
    int i;
    sbn__pool_stats_take(NULL, &st, 1);
    CHECK(st.loops == 0 && st.invited == 0 && st.wait_ns == 0);
    CHECK_OK(sbn_pool_create(6, &pool));
    sbn__pool_stats_take(pool, NULL, 1);
    team = sbn__pool_team(pool, 4, &view);
    for (i = 0; i < 10; i++) loop_once(team, 1000, job);
    sbn__parallel_for(NULL, 10, hit, job); /* serial: no loop of the pool */
    loop_once(pool, 1, job);               /* one index: the caller alone */
    sbn__pool_stats_take(pool, &st, 0);
    CHECK_MSG(st.loops == 10 && st.invited == 30, "loops %lld, invited %lld (want 10, 30)",
              (long long)st.loops, (long long)st.invited);
    CHECK(st.cancelled >= 0 && st.waited >= 0 && st.cancelled + st.waited <= st.invited);
    CHECK(st.wait_ns >= st.wait_ns_max && st.wait_ns_max >= 0);
    sbn__pool_stats_take(pool, &st, 1);
    sbn__pool_stats_take(pool, &st, 0);
    CHECK(st.loops == 0 && st.invited == 0 && st.waited == 0 && st.wait_ns == 0);
    for (i = 0; i < 8; i++) {
        int64_t k;
        for (k = 0; k < 6; k++) atomic_store(&job->hits[k], 0);
        sbn__parallel_for(pool, 6, slow_members, job);
        for (k = 0; k < 6; k++) CHECK(atomic_load(&job->hits[k]) == 1);
    }
    sbn__pool_stats_take(pool, &st, 0);
    CHECK(st.loops == 8 && st.invited == 40 && st.cancelled + st.waited <= st.invited);
    CHECK_MSG(st.waited > 0, "8 loops of 3 ms members: the caller never waited (%lld cancelled)",
              (long long)st.cancelled);
    CHECK(st.wait_ns > 0 && st.wait_ns >= st.wait_ns_max);
    sbn_pool_destroy(pool);
    free(job);
}

/* A loop of `width` pieces whose piece 0 (the caller's, which it runs first) waits for
 * every other piece to be run by the member it belongs to, up to 5 s: the caller cancels
 * and takes over only the invitations not claimed by then. */
typedef struct wake_probe {
    pthread_t caller;
    int64_t count;
    atomic_int members_done, by_caller;
} wake_probe;

static void wait_for_members(void *ctx, int64_t begin, int64_t end)
{
    wake_probe *p = ctx;
    int64_t i;
    for (i = begin; i < end; i++) {
        if (i == 0) {
            int spins;
            for (spins = 0; spins < 50000 && atomic_load(&p->members_done) < p->count - 1; spins++)
                usleep(100);
        } else if (pthread_equal(pthread_self(), p->caller)) {
            atomic_fetch_add(&p->by_caller, 1);
        } else {
            atomic_fetch_add(&p->members_done, 1);
        }
    }
}

/* Teams of every width woken from sleep: after the workers have slept (5 ms idle, well past
 * their spin), a loop must wake every member it invites - all of them take their piece
 * while the caller waits in its own - whichever wake-up groups (pool.c) the team spans. */
static void sleepers_woken_for_every_width(void)
{
    static const int widths[] = {2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 40};
    sbn_pool_t *pool = NULL;
    unsigned i;
    CHECK_OK(sbn_pool_create(40, &pool));
    for (i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        sbn_pool_t view, *team = sbn__pool_team(pool, widths[i], &view);
        wake_probe p;
        p.caller = pthread_self();
        p.count = widths[i];
        atomic_init(&p.members_done, 0);
        atomic_init(&p.by_caller, 0);
        usleep(5000);
        sbn__parallel_for(team, widths[i], wait_for_members, &p);
        CHECK_MSG(atomic_load(&p.by_caller) == 0 && atomic_load(&p.members_done) == widths[i] - 1,
                  "width %d after sleep: %d members took their piece, the caller ran %d",
                  widths[i], atomic_load(&p.members_done), atomic_load(&p.by_caller));
    }
    sbn_pool_destroy(pool);
}

typedef struct caller_arg {
    sbn_pool_t *pool;
    count_job *job;
    int width, ok;
} caller_arg;

static void *caller_main(void *p)
{
    caller_arg *a = p;
    sbn_pool_t view, *team = sbn__pool_team(a->pool, a->width, &view);
    int i;
    a->ok = 1;
    for (i = 0; i < 300 && a->ok; i++) a->ok = loop_once(team, 1 + (i * 37) % 700, a->job);
    return NULL;
}

/* Several threads run loops of different widths on one pool at once: they take turns. */
static void concurrent_callers(void)
{
    enum { CALLERS = 4 };
    pthread_t t[CALLERS];
    caller_arg args[CALLERS];
    count_job *jobs = calloc(CALLERS, sizeof *jobs);
    sbn_pool_t *pool = NULL;
    int i;
    CHECK_OK(sbn_pool_create(8, &pool));
    for (i = 0; i < CALLERS; i++) {
        args[i].pool = pool;
        args[i].job = &jobs[i];
        args[i].width = 2 + 2 * i;
        CHECK(pthread_create(&t[i], NULL, caller_main, &args[i]) == 0);
    }
    for (i = 0; i < CALLERS; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(args[i].ok, "caller %d (width %d) saw an index run other than once", i,
                  args[i].width);
    }
    sbn_pool_destroy(pool);
    free(jobs);
}

static void width_rules(void)
{
    sbn_pool_t *pool = NULL;
    int cpus = sbn__machine_get()->cpus, top;
    CHECK_OK(sbn_pool_create(16, &pool));
    sbn__plan_full_teams(0);
    top = cpus < 16 ? cpus : 16;
    CHECK(sbn__plan_width(NULL, 1e12) == 1);
    CHECK(sbn__plan_width(pool, 0.0) == 1);
    CHECK(sbn__plan_width(pool, 100.0) == 1); /* a tenth of a microsecond of work */
    CHECK_MSG(sbn__plan_width(pool, 1e12) == top, "width %d, expected %d (pool 16, %d cpus)",
              sbn__plan_width(pool, 1e12), top, cpus);
    {
        int w, last = 1;
        double ns;
        for (ns = 1.0; ns < 1e9; ns *= 1.5) { /* more work never takes fewer threads */
            w = sbn__plan_width(pool, ns);
            CHECK(w >= last && w <= top);
            last = w;
        }
    }
    /* a small op's streaming work keeps one thread */
    {
        int64_t shape[4] = {2, 64, 8, 8};
        tsup_buf x = tsup_make(SBN_F32, 4, shape, TSUP_CHANNELS_FIRST, NULL);
        const sbn_tensor *t[1] = {&x.view};
        CHECK(sbn__plan_width(pool, sbn__plan_stream_ns(t, 1)) == 1);
        tsup_free(&x);
    }
    sbn__plan_full_teams(1);
    CHECK(sbn__plan_width(pool, 0.0) == 16);
    sbn_pool_destroy(pool);
}

/*
 * Each case's training step (and eval) on pools of each width, with the plan's teams
 * as on a machine of `cpus` CPUs (and, when `full_too`, with every loop on the whole
 * pool too), against one thread, byte for byte.
 */
static void pools_same_bits(const tsup_step_case *cases, unsigned ncases, const int *threads,
                            unsigned nthreads, int cpus, uint64_t seed, int full_too)
{
    unsigned c, p;
    int full;
    sbn__plan_set_cpus(cpus);
    for (c = 0; c < ncases; c++) {
        const tsup_step_case *k = &cases[c];
        tsup_step_inputs in;
        tsup_step_outputs base;
        tsup_step_inputs_make(k, seed + c, &in);
        tsup_step_run(k, &in, &base, NULL);
        for (p = 0; p < nthreads; p++) {
            sbn_pool_t *pool = NULL;
            CHECK_OK(sbn_pool_create(threads[p], &pool));
            for (full = 0; full <= full_too; full++) {
                sbn__plan_full_teams(full);
                CHECK_MSG(tsup_step_matches(k, &in, &base, pool),
                          "case %u (%s %s), pool of %d, %s teams", c, sbn_dtype_name(k->dtype),
                          tsup_layout_name(k->layout), threads[p], full ? "full" : "planned");
            }
            sbn_pool_destroy(pool);
        }
        tsup_step_free(&base);
        tsup_step_inputs_free(&in);
    }
    sbn__plan_set_cpus(0);
    sbn__plan_full_teams(1);
}

/* The planned teams of a 16-CPU machine give the bits of one thread. */
static void planned_teams_same_bits(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {8, 64, 28, 28}, TSUP_CHANNELS_FIRST},
        {SBN_F32, 4, {8, 64, 28, 28}, TSUP_CHANNELS_LAST},
        {SBN_BF16, 4, {2, 256, 16, 16}, TSUP_CHANNELS_FIRST},
        {SBN_BF16, 4, {4, 96, 14, 14}, TSUP_CHANNELS_LAST},
        {SBN_F16, 2, {4096, 48, 0, 0}, TSUP_CHANNELS_FIRST},
        {SBN_F64, 4, {2, 16, 5, 7}, TSUP_CHANNELS_FIRST},
        {SBN_F32, 4, {3, 40, 21, 23}, TSUP_STRIDED},
    };
    static const int threads[] = {2, 3, 8, 16};
    pools_same_bits(cases, sizeof cases / sizeof cases[0], threads,
                    sizeof threads / sizeof threads[0], 16, 11, 0);
}

/*
 * Pools as wide as the nodes users train on (24 to 128 threads, planned as on a
 * 128-CPU machine, then with every loop on the whole pool): more threads than chunks,
 * channels or rows split the work in ways no 2-16-thread pool does (one-channel
 * blocks, empty segments, teams wider than a loop's count), and every output keeps the
 * bits of one thread. Small shapes: the pools' workers time-slice on a CI machine.
 */
static void wide_pools_same_bits(void)
{
    static const tsup_step_case cases[] = {
        {SBN_F32, 4, {2, 96, 9, 11}, TSUP_CHANNELS_FIRST},
        {SBN_F32, 4, {3, 40, 7, 7}, TSUP_CHANNELS_LAST},
        {SBN_BF16, 4, {4, 130, 5, 5}, TSUP_CHANNELS_FIRST},
        {SBN_F64, 2, {5000, 3, 0, 0}, TSUP_CHANNELS_FIRST},
        {SBN_F16, 2, {33, 200, 0, 0}, TSUP_CHANNELS_FIRST},
        {SBN_F32, 4, {3, 17, 13, 6}, TSUP_STRIDED},
        {SBN_F32, 4, {4, 3, 96, 96}, TSUP_CHANNELS_FIRST}, /* 18 chunks a channel */
        {SBN_BF16, 4, {8, 5, 64, 80}, TSUP_CHANNELS_LAST}, /* 20 chunks of rows */
    };
    static const int threads[] = {24, 64, 128};
    pools_same_bits(cases, sizeof cases / sizeof cases[0], threads,
                    sizeof threads / sizeof threads[0], 128, 41, 1);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(every_index_once),
    SBN_TEST_CASE(concurrent_callers),
    SBN_TEST_CASE(pool_stats_count_the_loops),
    SBN_TEST_CASE(sleepers_woken_for_every_width),
    SBN_TEST_CASE(width_rules),
    SBN_TEST_CASE(planned_teams_same_bits),
    SBN_TEST_CASE(wide_pools_same_bits),
};

SBN_TEST_MAIN(k_cases)
