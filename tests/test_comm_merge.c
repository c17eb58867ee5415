/*
 * test_comm_merge.c - sbn_comm_allreduce_merge and sbn_comm_traffic on the
 * threads backend (worlds of 1 to 256 ranks, one pthread each, run by
 * tests/support/world.c's tsup_run_world) and on the callbacks backend
 * (a fake framework of up to 8 threads, with and without an allreduce callback).
 * The merges are exact: an element is k = elem_bytes / 8 words, word j merged by
 * j % 4 = 0: wrapping sum, 1: max, 2: xor (of hashes: a rank merged twice cancels
 * out), 3: sum of ones (counts the ranks merged), so any tree gives the serial
 * merge's bytes and a missing, doubled or misplaced block does not. A second
 * merge records the order (an element is a list of ranks, merge appends: exact
 * and associative but not commutative) to see the callbacks' rank-order fallback
 * and that the allreduce callback's own order is used when it is given. Covered:
 * results for W = 1, 2, 3, 5, 8, 16, 64, 256 x count 0, 1, 7, 1000 x elem_bytes
 * 8, 24, 56 on every rank equal to the serial merge (count < W runs the tree,
 * count >= W the reduce-scatter); long interleaved runs with the other
 * collectives; per-rank payload traffic (measured as the difference from a
 * count-0 merge, i.e. without the header) flat in W: at most 3 * count *
 * elem_bytes for W = 2..256, and with the header under 3 blocks + 2 headers +
 * 64 bytes (the header check reads one peer's header, not W - 1); count,
 * elem_bytes, tag and op disagreements giving SBN_ERR_COMM_MISMATCH everywhere;
 * a failed rank giving SBN_ERR_PEER_FAILED; a rank that never arrives giving
 * SBN_ERR_TIMEOUT (0.5 s); argument errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/world.h"
#include "support/merge_words.h"
#include "syncbn/comm.h"

#define MAXW 256
#define TIMEOUT 60.0 /* seconds: never fires in a passing run, even with 256 threads under ASan */
#define HEADER 56    /* bytes of one rank's header */

/* ---- the exact merge of support/merge_words.h: words summed, maxed, xored, counted ---- */

static void merge8(void *inout, const void *in, size_t n) { mw_merge(inout, in, n, 1); }
static void merge24(void *inout, const void *in, size_t n) { mw_merge(inout, in, n, 3); }
static void merge56(void *inout, const void *in, size_t n) { mw_merge(inout, in, n, 7); }

static sbn_comm_merge_fn merge_for(size_t elem)
{
    return elem == 8 ? merge8 : elem == 24 ? merge24 : merge56;
}

/* The serial merge ((in_0 (+) in_1) (+) in_2) ... of `world` ranks' inputs. */
static unsigned char *serial_merge(int world, size_t count, size_t elem, uint64_t salt)
{
    unsigned char *want = malloc(count * elem + 1), *in = malloc(count * elem + 1);
    int r;
    mw_fill_input(want, 0, count, elem, salt);
    for (r = 1; r < world; r++) {
        mw_fill_input(in, r, count, elem, salt);
        merge_for(elem)(want, in, count);
    }
    free(in);
    return want;
}

/* ---- the order-recording merge: a list of up to 15 ranks, merge appends ---- */

enum { ORDER_BYTES = 16 };

static void merge_order(void *inout, const void *in, size_t count)
{
    unsigned char *o = inout;
    const unsigned char *p = in;
    size_t e, k;
    for (e = 0; e < count; e++, o += ORDER_BYTES, p += ORDER_BYTES)
        for (k = 0; k < p[0] && o[0] < ORDER_BYTES - 1; k++) o[1 + o[0]++] = p[1 + k];
}

/* ---- a threads world of up to 256 ranks ---- */

/* ---- results ---- */

static const int worlds_[] = {1, 2, 3, 5, 8, 16, 64, 256};
static const size_t counts_[] = {0, 1, 7, 1000};
static const size_t elems_[] = {8, 24, 56};
enum { NWORLDS = 8, NCOUNTS = 4, NELEMS = 3 };

typedef struct results_shared {
    unsigned char *want[NCOUNTS][NELEMS];
} results_shared;

static void rank_results(tsup_rank *c)
{
    results_shared *sh = c->shared;
    unsigned char *buf = malloc(1000 * 56);
    int k, e;
    for (k = 0; k < NCOUNTS; k++) {
        for (e = 0; e < NELEMS; e++) {
            size_t n = counts_[k], elem = elems_[e];
            uint64_t salt = (uint64_t)(10 * k + e);
            mw_fill_input(buf, c->rank, n, elem, salt);
            RNOTE_STATUS(c, sbn_comm_allreduce_merge(c->comm, n ? buf : NULL, n, elem,
                                                     merge_for(elem), (int64_t)salt), SBN_OK);
            RNOTE(c, n == 0 || memcmp(buf, sh->want[k][e], n * elem) == 0,
                  "count %zu, elem_bytes %zu: the result differs from the serial merge", n, elem);
        }
    }
    free(buf);
}

static void threads_results(void)
{
    int w, k, e;
    for (w = 0; w < NWORLDS; w++) {
        results_shared sh;
        int bad;
        for (k = 0; k < NCOUNTS; k++)
            for (e = 0; e < NELEMS; e++)
                sh.want[k][e] = serial_merge(worlds_[w], counts_[k], elems_[e],
                                             (uint64_t)(10 * k + e));
        bad = tsup_run_world(worlds_[w], TIMEOUT, rank_results, &sh);
        for (k = 0; k < NCOUNTS; k++)
            for (e = 0; e < NELEMS; e++) free(sh.want[k][e]);
        if (bad) return;
    }
}

/*
 * 150 rounds of a merge (counts 0..22 around W: tree and slices), an allgather and
 * an allreduce-sum: a rank reuses its buffer as soon as a collective returns, so
 * a peer still reading it would show. Each rank checks against its own serial merge.
 */
static void rank_interleaved(tsup_rank *c)
{
    unsigned char buf[23 * 24];
    double v[3], g[3 * 16];
    int it, r;
    for (it = 0; it < 150; it++) {
        size_t n = (size_t)(it * 7 % 23);
        unsigned char *want = serial_merge(c->world, n, 24, (uint64_t)it);
        mw_fill_input(buf, c->rank, n, 24, (uint64_t)it);
        RNOTE_STATUS(c, sbn_comm_allreduce_merge(c->comm, buf, n, 24, merge24, it), SBN_OK);
        RNOTE(c, n == 0 || memcmp(buf, want, n * 24) == 0, "round %d (count %zu) differs", it, n);
        free(want);
        v[0] = c->rank, v[1] = it, v[2] = 1.0;
        RNOTE_STATUS(c, sbn_comm_allgather(c->comm, v, 3, g, -it), SBN_OK);
        for (r = 0; r < c->world; r++) RNOTE(c, g[3 * r] == r, "round %d: gather", it);
        RNOTE_STATUS(c, sbn_comm_allreduce_sum(c->comm, v + 2, 1, it), SBN_OK);
        RNOTE(c, v[2] == c->world, "round %d: sum %g", it, v[2]);
        if (c->failed) return;
    }
}

static void threads_interleaved(void)
{
    if (tsup_run_world(5, TIMEOUT, rank_interleaved, NULL)) return;
    tsup_run_world(16, TIMEOUT, rank_interleaved, NULL);
}

/* ---- traffic ---- */

enum { TRAFFIC_COUNT = 64, TRAFFIC_ELEM = 56 };

typedef struct traffic_shared {
    uint64_t header_sent[MAXW], header_recv[MAXW], payload_sent[MAXW], payload_recv[MAXW];
    uint64_t total_recv[MAXW]; /* the whole merge, header included */
} traffic_shared;

/* A count-0 merge moves only the header: the payload is the difference of the second. */
static void rank_traffic(tsup_rank *c)
{
    traffic_shared *sh = c->shared;
    unsigned char buf[TRAFFIC_COUNT * TRAFFIC_ELEM];
    uint64_t s0, r0, s1, r1, s2, r2;
    mw_fill_input(buf, c->rank, TRAFFIC_COUNT, TRAFFIC_ELEM, 5);
    sbn_comm_traffic(c->comm, &s0, &r0);
    RSTATUS(c, sbn_comm_allreduce_merge(c->comm, NULL, 0, TRAFFIC_ELEM, merge56, 1), SBN_OK);
    sbn_comm_traffic(c->comm, &s1, &r1);
    RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, TRAFFIC_COUNT, TRAFFIC_ELEM, merge56, 2),
            SBN_OK);
    sbn_comm_traffic(c->comm, &s2, &r2);
    sh->header_sent[c->rank] = s1 - s0;
    sh->header_recv[c->rank] = r1 - r0;
    sh->payload_sent[c->rank] = (s2 - s1) - (s1 - s0);
    sh->payload_recv[c->rank] = (r2 - r1) - (r1 - r0);
    sh->total_recv[c->rank] = r2 - r1;
}

static void threads_traffic(void)
{
    static const int worlds[] = {2, 4, 16, 64, 256};
    const uint64_t block = TRAFFIC_COUNT * TRAFFIC_ELEM;
    uint64_t s = 0, r = 0;
    size_t k;
    printf("    threads, count %d x %d bytes (block %llu B): per rank per merge\n", TRAFFIC_COUNT,
           TRAFFIC_ELEM, (unsigned long long)block);
    printf("    %5s %12s %12s %14s %14s %14s\n", "W", "header sent", "header recv",
           "payload sent", "payload recv", "recv max/blk");
    for (k = 0; k < sizeof worlds / sizeof worlds[0]; k++) {
        int w = worlds[k], i;
        uint64_t rmin = UINT64_MAX, rmax = 0, rsum = 0;
        traffic_shared *sh = calloc(1, sizeof *sh);
        if (tsup_run_world(w, TIMEOUT, rank_traffic, sh)) {
            free(sh);
            return;
        }
        for (i = 0; i < w; i++) {
            /* The header check reads the next rank's header and the world's word. */
            CHECK_MSG(sh->header_sent[i] == HEADER && sh->header_recv[i] == HEADER + 8,
                      "W %d rank %d: header %llu sent, %llu received", w, i,
                      (unsigned long long)sh->header_sent[i],
                      (unsigned long long)sh->header_recv[i]);
            CHECK_MSG(sh->payload_sent[i] == block, "W %d rank %d: payload sent %llu", w, i,
                      (unsigned long long)sh->payload_sent[i]);
            /* Flat: an allgather would receive (W - 1) * block, 255 blocks at W = 256. */
            CHECK_MSG(sh->payload_recv[i] > 0 && sh->payload_recv[i] <= 3 * block,
                      "W %d rank %d: payload received %llu bytes, more than 3 blocks of %llu", w,
                      i, (unsigned long long)sh->payload_recv[i], (unsigned long long)block);
            /* Header included: flat too, an allgathered header would add (W - 1) x 56 B. */
            CHECK_MSG(sh->total_recv[i] < 3 * block + 2 * HEADER + 64,
                      "W %d rank %d: the merge received %llu bytes with its header, not under 3 "
                      "blocks of %llu + 2 headers + 64", w, i,
                      (unsigned long long)sh->total_recv[i], (unsigned long long)block);
            rmin = sh->payload_recv[i] < rmin ? sh->payload_recv[i] : rmin;
            rmax = sh->payload_recv[i] > rmax ? sh->payload_recv[i] : rmax;
            rsum += sh->payload_recv[i];
        }
        printf("    %5d %12llu %12llu %14llu %7llu..%-6llu %14.2f  (mean recv %.0f)\n", w,
               (unsigned long long)sh->header_sent[0], (unsigned long long)sh->header_recv[0],
               (unsigned long long)block, (unsigned long long)rmin, (unsigned long long)rmax,
               (double)rmax / (double)block, (double)rsum / w);
        free(sh);
    }
    /* A world of one moves nothing; NULL pointers are allowed. */
    {
        sbn_comm_t *one;
        unsigned char buf[56];
        mw_fill_input(buf, 0, 1, 56, 1);
        CHECK_OK(sbn_comm_threads_create(1, 0.0, &one));
        CHECK_OK(sbn_comm_allreduce_merge(one, buf, 1, 56, merge56, 0));
        sbn_comm_traffic(one, &s, &r);
        CHECK(s == 0 && r == 0);
        sbn_comm_traffic(one, NULL, &r);
        sbn_comm_traffic(one, &s, NULL);
        sbn_comm_destroy(one);
        sbn_comm_traffic(NULL, &s, &r);
        CHECK(s == 0 && r == 0);
    }
}

/* ---- disagreements, failures, timeouts ---- */

typedef struct mismatch_case {
    int odd_rank;
    int odd_op; /* 0: merge, 1: allreduce_sum */
    size_t odd_count, odd_elem;
    int64_t odd_tag;
    const char *want;
} mismatch_case;

static void rank_mismatch(tsup_rank *c)
{
    const mismatch_case *mc = c->shared;
    _Alignas(8) unsigned char buf[9 * 56];
    int odd = c->rank == mc->odd_rank;
    size_t n = odd ? mc->odd_count : 8, elem = odd ? mc->odd_elem : 56;
    mw_fill_input(buf, c->rank, 8, 56, 3);
    if (odd && mc->odd_op == 1)
        RSTATUS(c, sbn_comm_allreduce_sum(c->comm, (double *)(void *)buf, n, 3),
                SBN_ERR_COMM_MISMATCH);
    else
        RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, n, elem, merge_for(elem),
                                            odd ? mc->odd_tag : 3), SBN_ERR_COMM_MISMATCH);
    RHAS(c, "rank 0 called allreduce_merge (count 8, elem_bytes 56, tag 3, call #1) but rank");
    RHAS(c, mc->want);
    /* Not sticky: the next merge works. */
    mw_fill_input(buf, c->rank, 8, 56, 4);
    RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 8, 56, merge56, 4), SBN_OK);
}

static void threads_mismatch(void)
{
    static const mismatch_case cases[] = {
        {2, 0, 7, 56, 3, "rank 2 called allreduce_merge (count 7, elem_bytes 56, tag 3, call #1)"},
        {1, 0, 8, 24, 3, "rank 1 called allreduce_merge (count 8, elem_bytes 24, tag 3, call #1)"},
        {2, 0, 8, 56, 9, "rank 2 called allreduce_merge (count 8, elem_bytes 56, tag 9, call #1)"},
        {1, 1, 8, 8, 3, "rank 1 called allreduce (count 8, tag 3, call #1)"},
    };
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++)
        if (tsup_run_world(k % 2 ? 3 : 5, TIMEOUT, rank_mismatch, (void *)&cases[k])) return;
}

static void rank_peer_failed(tsup_rank *c)
{
    unsigned char buf[3 * 24];
    char who[64];
    mw_fill_input(buf, c->rank, 3, 24, 1);
    if (c->rank == c->world - 1) {
        RSTATUS(c, sbn_comm_fail(c->comm, SBN_ERR_BAD_SHAPE), SBN_ERR_BAD_SHAPE);
    } else {
        RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 3, 24, merge24, 0), SBN_ERR_PEER_FAILED);
        snprintf(who, sizeof who, "rank %d (SBN_ERR_BAD_SHAPE) failed", c->world - 1);
        RHAS(c, who);
    }
    /* Sticky on every rank. */
    RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 3, 24, merge24, 0), SBN_ERR_PEER_FAILED);
    RHAS(c, "allreduce_merge: this communicator is unusable since rank");
}

static void threads_peer_failed(void)
{
    if (tsup_run_world(4, TIMEOUT, rank_peer_failed, NULL)) return;
    tsup_run_world(64, TIMEOUT, rank_peer_failed, NULL);
}

typedef struct late_shared {
    pthread_barrier_t after; /* the late rank waits here until its peers have timed out */
    double elapsed[3];
} late_shared;

static void rank_never_arrives(tsup_rank *c)
{
    late_shared *sh = c->shared;
    unsigned char buf[10 * 8];
    double t0;
    mw_fill_input(buf, c->rank, 10, 8, 1);
    if (c->rank != 2) {
        t0 = tsup_now();
        RNOTE_STATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 10, 8, merge8, 0), SBN_ERR_TIMEOUT);
        sh->elapsed[c->rank] = tsup_now() - t0;
        RNOTE_HAS(c, "timed out after 0.5 s: 2 of 3 ranks arrived at the collective, rank 2 "
                  "missing");
        pthread_barrier_wait(&sh->after);
        return;
    }
    pthread_barrier_wait(&sh->after);
    t0 = tsup_now();
    RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 10, 8, merge8, 0), SBN_ERR_TIMEOUT);
    sh->elapsed[2] = tsup_now() - t0;
    RHAS(c, "was broken before this collective");
}

static void threads_never_arrives(void)
{
    late_shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_barrier_init(&sh.after, NULL, 3);
    tsup_run_world(3, 0.5, rank_never_arrives, &sh);
    pthread_barrier_destroy(&sh.after);
    RETURN_IF_FAILED();
    CHECK_MSG(sh.elapsed[0] >= 0.45 && sh.elapsed[0] < 10.0 && sh.elapsed[1] >= 0.45 &&
              sh.elapsed[1] < 10.0, "ranks 0 and 1 timed out after %g and %g s", sh.elapsed[0],
              sh.elapsed[1]);
    CHECK_MSG(sh.elapsed[2] < 1.0, "the late call took %g s", sh.elapsed[2]);
}

/* Rank 0's bad argument (per `kind`) makes it fail and its peer see PEER_FAILED. */
static void rank_bad_argument(tsup_rank *c)
{
    static const char *const want[] = {"elem_bytes is 0", "merge (the merge function) is NULL",
                                       "data is NULL with count 4", "overflows the address space"};
    static const sbn_status status[] = {SBN_ERR_BAD_VALUE, SBN_ERR_NULL_ARGUMENT,
                                        SBN_ERR_NULL_ARGUMENT, SBN_ERR_BAD_VALUE};
    int kind = *(const int *)c->shared;
    unsigned char buf[4 * 8];
    mw_fill_input(buf, c->rank, 4, 8, 1);
    if (c->rank == 0) {
        sbn_status s = kind == 0 ? sbn_comm_allreduce_merge(c->comm, buf, 4, 0, merge8, 0)
                     : kind == 1 ? sbn_comm_allreduce_merge(c->comm, buf, 4, 8, NULL, 0)
                     : kind == 2 ? sbn_comm_allreduce_merge(c->comm, NULL, 4, 8, merge8, 0)
                     : sbn_comm_allreduce_merge(c->comm, buf, SIZE_MAX / 4, 8, merge8, 0);
        RCHECK(c, s == status[kind], "kind %d returned %s (%s)", kind, sbn_status_name(s),
               sbn_last_error());
        RHAS(c, "allreduce_merge on rank 0: ");
        RHAS(c, want[kind]);
    } else {
        RSTATUS(c, sbn_comm_allreduce_merge(c->comm, buf, 4, 8, merge8, 0), SBN_ERR_PEER_FAILED);
        RHAS(c, "rank 0 (");
    }
}

static void argument_errors(void)
{
    unsigned char buf[8];
    int kind;
    CHECK_STATUS(sbn_comm_allreduce_merge(NULL, buf, 1, 8, merge8, 0), SBN_ERR_NULL_ARGUMENT);
    for (kind = 0; kind < 4; kind++)
        if (tsup_run_world(2, TIMEOUT, rank_bad_argument, &kind)) return;
    /* Count 0: data may be NULL; merge and elem_bytes are still checked. */
    {
        sbn_comm_t *comms[2];
        CHECK_OK(sbn_comm_threads_create(1, 0.0, comms));
        CHECK_OK(sbn_comm_allreduce_merge(comms[0], NULL, 0, 8, merge8, 0));
        CHECK_STATUS(sbn_comm_allreduce_merge(comms[0], NULL, 0, 8, NULL, 0),
                     SBN_ERR_NULL_ARGUMENT);
        sbn_comm_destroy(comms[0]);
    }
}

/* ---- the callbacks backend over a fake framework ---- */

#define BUSW 8

typedef struct bus {
    pthread_barrier_t meet;
    int size;
    int with_allreduce;
    int fail_rank; /* its allreduce callback returns 5 after taking part */
    const void *send[BUSW];
    atomic_int allgathers, allreduces;
} bus;

typedef struct endpoint {
    bus *b;
    int rank;
} endpoint;

static int bus_allgather(void *user, const void *send, size_t bytes, void *recv)
{
    endpoint *e = user;
    bus *b = e->b;
    int r;
    atomic_fetch_add(&b->allgathers, 1);
    b->send[e->rank] = send;
    pthread_barrier_wait(&b->meet);
    for (r = 0; r < b->size; r++)
        if (bytes > 0) memcpy((char *)recv + (size_t)r * bytes, b->send[r], bytes);
    pthread_barrier_wait(&b->meet);
    return 0;
}

/* The framework's own order: rank W-1's data merged with W-2, ..., 0 (descending). */
static int bus_allreduce(void *user, void *data, size_t count, size_t elem_bytes,
                         sbn_comm_merge_fn merge)
{
    endpoint *e = user;
    bus *b = e->b;
    unsigned char *acc = malloc(count * elem_bytes + 1);
    int r;
    atomic_fetch_add(&b->allreduces, 1);
    b->send[e->rank] = data;
    pthread_barrier_wait(&b->meet);
    memcpy(acc, b->send[b->size - 1], count * elem_bytes);
    for (r = b->size - 2; r >= 0; r--) merge(acc, b->send[r], count);
    pthread_barrier_wait(&b->meet);
    memcpy(data, acc, count * elem_bytes);
    free(acc);
    return e->rank == b->fail_rank ? 5 : 0;
}

typedef struct bus_rank {
    int rank, world, failed;
    char msg[800];
    bus *b;
    endpoint ep;
} bus_rank;

/* One rank's checks over its callbacks handle. */
static void bus_rank_run(bus_rank *c, sbn_comm_t *comm)
{
    unsigned char buf[100 * 56], order[3 * ORDER_BYTES], *want;
    uint64_t s0, r0, s1, r1;
    int with = c->b->with_allreduce, w = c->world, k, i;
    size_t e;

    for (k = 0; k < 3; k++) { /* the exact merge gives the serial bytes either way */
        size_t n = (size_t)(k == 0 ? 1 : k == 1 ? 7 : 100), elem = elems_[k];
        want = serial_merge(w, n, elem, (uint64_t)k);
        mw_fill_input(buf, c->rank, n, elem, (uint64_t)k);
        RNOTE_STATUS(c, sbn_comm_allreduce_merge(comm, buf, n, elem, merge_for(elem), k), SBN_OK);
        RNOTE(c, memcmp(buf, want, n * elem) == 0, "count %zu elem %zu differs", n, elem);
        free(want);
    }
    /* The order: rank order without the callback, the framework's (descending) with it. */
    for (e = 0; e < 3; e++) {
        memset(order + e * ORDER_BYTES, 0, ORDER_BYTES);
        order[e * ORDER_BYTES] = 1;
        order[e * ORDER_BYTES + 1] = (unsigned char)c->rank;
    }
    sbn_comm_traffic(comm, &s0, &r0);
    RSTATUS(c, sbn_comm_allreduce_merge(comm, order, 3, ORDER_BYTES, merge_order, 9), SBN_OK);
    sbn_comm_traffic(comm, &s1, &r1);
    for (e = 0; e < 3; e++) {
        RCHECK(c, order[e * ORDER_BYTES] == w, "element %zu lists %d ranks", e,
               order[e * ORDER_BYTES]);
        for (i = 0; i < w; i++)
            RCHECK(c, order[e * ORDER_BYTES + 1 + i] == (with ? w - 1 - i : i), "element %zu: "
                   "position %d is rank %d (%s)", e, i, order[e * ORDER_BYTES + 1 + i],
                   with ? "the framework's descending order expected" : "rank order expected");
    }
    /* Traffic: header (56 out, W x 56 back), then the payload: once each way or W back. */
    if (w > 1) {
        uint64_t p = 3 * ORDER_BYTES;
        RCHECK(c, s1 - s0 == HEADER + p, "sent %llu", (unsigned long long)(s1 - s0));
        RCHECK(c, r1 - r0 == (uint64_t)w * HEADER + (with ? p : (uint64_t)w * p),
               "received %llu", (unsigned long long)(r1 - r0));
    }
    /* A mismatch in elem_bytes over the callbacks. */
    RSTATUS(c, sbn_comm_allreduce_merge(comm, buf, 2, c->rank == w - 1 && w > 1 ? 24 : 56,
                                        merge_for(c->rank == w - 1 && w > 1 ? 24 : 56), 1),
            w > 1 ? SBN_ERR_COMM_MISMATCH : SBN_OK);
    if (w > 1) RHAS(c, "elem_bytes 24");
}

static void *bus_rank_main(void *p)
{
    bus_rank *c = p;
    sbn_comm_callbacks cb;
    sbn_comm_t *comm = NULL;
    memset(&cb, 0, sizeof cb); /* zeroed, then filled: members it does not set stay NULL */
    cb.allgather = bus_allgather;
    if (c->b->with_allreduce) cb.allreduce = bus_allreduce;
    c->ep.b = c->b;
    c->ep.rank = c->rank;
    if (sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, &comm) != SBN_OK) {
        tsup_rank_note(c->rank, &c->failed, c->msg, sizeof c->msg, __LINE__, "create: %s",
                       sbn_last_error());
        return NULL;
    }
    if (c->b->fail_rank < 0) {
        bus_rank_run(c, comm);
    } else { /* the allreduce callback fails on one rank: SBN_ERR_COMM there only */
        unsigned char buf[4 * 8];
        int bad = c->rank == c->b->fail_rank;
        mw_fill_input(buf, c->rank, 4, 8, 1);
        TSUP_RANK_STATUS_(c, sbn_comm_allreduce_merge(comm, buf, 4, 8, merge8, 0), "merge",
                          bad ? SBN_ERR_COMM : SBN_OK, (void)0);
        if (bad) RNOTE_HAS(c, "the allreduce callback returned 5 on rank 1 of");
    }
    sbn_comm_destroy(comm);
    return NULL;
}

static int run_bus(int world, int with_allreduce, int fail_rank)
{
    bus b;
    bus_rank ctx[BUSW];
    pthread_t threads[BUSW];
    int r, bad = 0;
    memset(&b, 0, sizeof b);
    pthread_barrier_init(&b.meet, NULL, (unsigned)world);
    b.size = world;
    b.with_allreduce = with_allreduce;
    b.fail_rank = fail_rank;
    atomic_init(&b.allgathers, 0);
    atomic_init(&b.allreduces, 0);
    for (r = 0; r < world; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].world = world;
        ctx[r].b = &b;
        if (pthread_create(&threads[r], NULL, bus_rank_main, &ctx[r]) != 0) exit(1);
    }
    for (r = 0; r < world; r++) pthread_join(threads[r], NULL);
    for (r = 0; r < world && !bad; r++) {
        if (!ctx[r].failed) continue;
        sbn_test_fail(__FILE__, __LINE__, "bus of %d, allreduce callback %d: %s", world,
                      with_allreduce, ctx[r].msg);
        bad = 1;
    }
    /* With the callback every payload went through it: the allgathers were headers only. */
    if (!bad && fail_rank < 0 && world > 1) {
        int merges = 5, headers = 5 * world;
        if (with_allreduce && (atomic_load(&b.allreduces) != (merges - 1) * world ||
                               atomic_load(&b.allgathers) != headers))
            bad = 1;
        if (!with_allreduce && (atomic_load(&b.allreduces) != 0 ||
                                atomic_load(&b.allgathers) != headers + (merges - 1) * world))
            bad = 1;
        if (bad)
            sbn_test_fail(__FILE__, __LINE__, "bus of %d, allreduce callback %d: %d allgathers, "
                          "%d allreduces", world, with_allreduce, atomic_load(&b.allgathers),
                          atomic_load(&b.allreduces));
    }
    pthread_barrier_destroy(&b.meet);
    return bad;
}

static void callbacks_merge(void)
{
    static const int worlds[] = {1, 2, 3, 5, 8};
    size_t k;
    int with;
    for (k = 0; k < sizeof worlds / sizeof worlds[0]; k++)
        for (with = 0; with < 2; with++)
            if (run_bus(worlds[k], with, -1)) return;
    run_bus(3, 1, 1);
}

/* The fallback needs size * count * elem_bytes: refused on every rank before the header. */
static void *overflow_rank(void *p)
{
    bus_rank *c = p;
    sbn_comm_callbacks cb;
    sbn_comm_t *comm = NULL;
    unsigned char buf[8];
    memset(&cb, 0, sizeof cb);
    cb.allgather = bus_allgather;
    c->ep.b = c->b;
    c->ep.rank = c->rank;
    if (sbn_comm_callbacks_create(c->rank, c->world, &cb, &c->ep, &comm) != SBN_OK) return NULL;
    TSUP_RANK_STATUS_(c, sbn_comm_allreduce_merge(comm, buf, SIZE_MAX / 16 + 1, 8, merge8, 0),
                      "merge", SBN_ERR_BAD_VALUE, (void)0);
    RNOTE_HAS(c, "2 ranks of");
    sbn_comm_destroy(comm);
    return NULL;
}

static void callbacks_fallback_overflow(void)
{
    bus b;
    bus_rank ctx[2];
    pthread_t threads[2];
    int r;
    memset(&b, 0, sizeof b);
    pthread_barrier_init(&b.meet, NULL, 2);
    b.size = 2;
    b.fail_rank = -1;
    for (r = 0; r < 2; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].world = 2;
        ctx[r].b = &b;
        if (pthread_create(&threads[r], NULL, overflow_rank, &ctx[r]) != 0) exit(1);
    }
    for (r = 0; r < 2; r++) pthread_join(threads[r], NULL);
    pthread_barrier_destroy(&b.meet);
    for (r = 0; r < 2; r++) CHECK_MSG(!ctx[r].failed, "%s", ctx[r].msg);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(threads_results),
    SBN_TEST_CASE(threads_interleaved),
    SBN_TEST_CASE(threads_traffic),
    SBN_TEST_CASE(threads_mismatch),
    SBN_TEST_CASE(threads_peer_failed),
    SBN_TEST_CASE(threads_never_arrives),
    SBN_TEST_CASE(argument_errors),
    SBN_TEST_CASE(callbacks_merge),
    SBN_TEST_CASE(callbacks_fallback_overflow),
};

SBN_TEST_MAIN(k_cases)
