/*
 * bench_pool_stats.c - bench_ops --pool-stats: what the pool's loops cost a call of an op
 * beyond its work, added up over the calls of one row and printed in the row's note. Each
 * call's counts are taken from the pool itself (sbn__pool_stats_take, reset before the
 * call, read after it): loops of 2 or more threads, sleeping workers woken, invitations
 * the caller cancelled and ran itself, workers it waited for after its own work and how
 * long. A row whose median sits far above its minimum then says whether its time went to
 * waking workers, to members that claimed a piece late, or to none of these (the work).
 * Reading the counts takes the pool's lock twice a call: a few tens of nanoseconds inside
 * the timing, so rows with it are for diagnosis, not for the tables.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "core/pool.h"

void bench_pool_stats_before(sbn_pool_t *pool)
{
    sbn__pool_stats_take(pool, NULL, 1);
}

void bench_pool_stats_after(sbn_pool_t *pool, bench_pool_tally *t)
{
    sbn__pool_stats st;
    sbn__pool_stats_take(pool, &st, 0);
    t->calls++;
    t->loops += st.loops;
    t->woke += st.woke_sleepers;
    t->cancelled += st.cancelled;
    t->waited += st.waited;
    t->wait_ns += st.wait_ns;
    if (st.wait_ns > t->wait_ns_max) t->wait_ns_max = st.wait_ns;
    if (st.wait_ns > BENCH_SLOW_WAIT_NS) t->slow_calls++;
}

void bench_pool_stats_note(const bench_pool_tally *t, char *buf, size_t len)
{
    double n = t->calls > 0 ? (double)t->calls : 1.0;
    snprintf(buf, len,
             "pool stats over %lld calls: a call %.1f loops; %.2f woke sleepers; %.2f cancelled;"
             " %.2f waited for; wait %.1f us (longest %.1f us; %lld calls over %.0f us)",
             (long long)t->calls, (double)t->loops / n, (double)t->woke / n,
             (double)t->cancelled / n, (double)t->waited / n, (double)t->wait_ns / n * 1e-3,
             (double)t->wait_ns_max * 1e-3, (long long)t->slow_calls, BENCH_SLOW_WAIT_NS * 1e-3);
}
