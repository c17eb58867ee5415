/*
 * test_layer_units.c - the limit of the SyncBN layer's exact accumulators: every
 * accumulator takes at most 2^31 - 1 deposits (SBN_RSUM_MAX_TERMS; past 2^32 their
 * 64-bit digits wrap and the sums go wrong silently), and the finish's takes 3 per
 * unit + 20, so a world may hold at most SBN_LAYER_MAX_UNITS = 715827875 units per
 * channel (samples in reproducible mode). A world that large needs no 715 million
 * samples here: rank 0 is a real layer call on two samples over a callbacks
 * communicator of size 2, and rank 1 is simulated inside the callbacks, contributing
 * the accumulators that k one-element samples of value 1 give in reproducible mode
 * (P and Q: k deposits of 1.0, N and U: one deposit of k), built by the library's
 * own exact merges (doublings). k + 2 = 715827875: accepted, with mean (k + 8) /
 * (k + 2) and M2 (20k + 4) / (k + 2) (x = 3, 5 on rank 0) from the exact formulas;
 * k + 2 = 715827876 and k = 2^32 + 3 (where P's digits wrap): SBN_ERR_TOO_LARGE with
 * the count and the limit in the sentence, every output untouched. The backward
 * block likewise (k samples of dy = 1, sync_grad_params: grad_bias = k + dy0 + dy1).
 * A rank whose own batch passes the limit (x of 715827876 samples, a zero-stride
 * view; y mapped but never touched) is refused before its exchange, in forward and
 * backward.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/rsum.h"
#include "harness/harness.h"
#include "layer/layer_sums.h"
#include "syncbn/comm.h"
#include "syncbn/layer.h"

/* The state of `count` deposits of t: one deposit, then exact doublings and merges. */
static sbn__rsum copies(double t, uint64_t count)
{
    sbn__rsum pow, total;
    sbn__rsum_clear(&pow, 1);
    sbn__rsum_clear(&total, 1);
    sbn__rsum_add(&pow, t);
    for (; count; count >>= 1) {
        if (count & 1) sbn__rsum_merge(&total, &pow, 1);
        sbn__rsum_merge(&pow, &pow, 1);
    }
    return total;
}

/* ---- a world of two: rank 0 real, rank 1 in the callbacks ---- */

typedef struct fake_peer {
    sbn__rsum acc[8]; /* what rank 1 contributes to the next merge */
    size_t count;     /* its accumulators */
} fake_peer;

static int peer_allgather(void *user, const void *send, size_t bytes, void *recv)
{
    (void)user;
    memcpy(recv, send, bytes); /* rank 0 */
    memcpy((char *)recv + bytes, send, bytes); /* rank 1 makes the same call */
    return 0;
}

static int peer_allreduce(void *user, void *data, size_t count, size_t elem_bytes,
                          sbn_comm_merge_fn merge)
{
    fake_peer *fp = user;
    if (count != fp->count || elem_bytes != sizeof(sbn__rsum)) return 1;
    merge(data, fp->acc, count);
    return 0;
}

static sbn_comm_t *peer_world(fake_peer *fp)
{
    sbn_comm_callbacks cb;
    sbn_comm_t *comm = NULL;
    memset(&cb, 0, sizeof cb);
    cb.allgather = peer_allgather;
    cb.allreduce = peer_allreduce;
    if (sbn_comm_callbacks_create(0, 2, &cb, fp, &comm) != SBN_OK) return NULL;
    return comm;
}

/* Rank 1's forward block for C = 1: k samples of one element, value 1. */
static void peer_forward(fake_peer *fp, uint64_t k)
{
    sbn__rsum_clear(fp->acc, 8);
    fp->count = SBN_LAYER_FWD_ACCS(1);
    fp->acc[0] = copies(1.0, k);  /* P: S m = 1 (S = 1: no error term) */
    fp->acc[1] = copies(1.0, k);  /* Q: S m^2 = 1 (exact: no low part) */
    sbn__rsum_add(&fp->acc[3], (double)k); /* N */
    sbn__rsum_add(&fp->acc[SBN_LAYER_FWD_UNITS(1)], (double)k); /* U */
}

/* Rank 1's backward block for C = 1: k samples of dy = 1 at x = the mean. */
static void peer_backward(fake_peer *fp, uint64_t k)
{
    sbn__rsum_clear(fp->acc, 8);
    fp->count = SBN_LAYER_BWD_ACCS(1);
    fp->acc[0] = copies(1.0, k); /* sum_dy; sum_dy_xmu stays 0 */
    sbn__rsum_add(&fp->acc[SBN_LAYER_BWD_UNITS(1)], (double)k);
}

static int has(const char *needle)
{
    return strstr(sbn_last_error(), needle) != NULL;
}

/* Rank 0: x = {3, 5} as (2, 1) f64, reproducible; forward outputs, filled with 7. */
typedef struct rank0 {
    double x[2], y[2], dy[2], gi[2], rm, rv, sm, si, gw, gb;
    int64_t nbt, count;
    sbn_tensor xv, yv, dyv, giv, rmv, rvv, smv, siv, gwv, gbv;
    sbn_syncbn_config cfg;
    void *ws;
    size_t bytes;
} rank0;

static void rank0_init(rank0 *r)
{
    int64_t shape[2] = {2, 1};
    memset(r, 0, sizeof *r);
    r->x[0] = 3.0, r->x[1] = 5.0, r->dy[0] = 0.5, r->dy[1] = -0.25;
    r->y[0] = r->y[1] = r->gi[0] = r->gi[1] = 7.0;
    r->rm = 0.5, r->rv = 2.0, r->sm = r->si = r->gw = r->gb = 7.0;
    r->nbt = 3, r->count = -7;
    r->xv = sbn_tensor_contiguous(r->x, SBN_F64, 2, shape);
    r->yv = sbn_tensor_contiguous(r->y, SBN_F64, 2, shape);
    r->dyv = sbn_tensor_contiguous(r->dy, SBN_F64, 2, shape);
    r->giv = sbn_tensor_contiguous(r->gi, SBN_F64, 2, shape);
    r->rmv = sbn_tensor_1d(&r->rm, SBN_F64, 1), r->rvv = sbn_tensor_1d(&r->rv, SBN_F64, 1);
    r->smv = sbn_tensor_1d(&r->sm, SBN_F64, 1), r->siv = sbn_tensor_1d(&r->si, SBN_F64, 1);
    r->gwv = sbn_tensor_1d(&r->gw, SBN_F64, 1), r->gbv = sbn_tensor_1d(&r->gb, SBN_F64, 1);
    sbn_syncbn_config_default(&r->cfg);
    r->cfg.reproducible = 1;
    r->cfg.sync_grad_params = 1;
    sbn_syncbn_workspace_size(&r->xv, &r->bytes);
    r->ws = malloc(r->bytes);
}

static sbn_status rank0_forward(rank0 *r, sbn_comm_t *comm)
{
    return sbn_syncbn_forward(comm, &r->cfg, &(sbn_syncbn_forward_io){.x = &r->xv,
                              .running_mean = &r->rmv, .running_var = &r->rvv,
                              .num_batches_tracked = &r->nbt, .y = &r->yv, .save_mean = &r->smv,
                              .save_invstd = &r->siv, .global_count = &r->count}, r->ws, r->bytes,
                              NULL);
}

static sbn_status rank0_backward(rank0 *r, sbn_comm_t *comm, int64_t global_count)
{
    return sbn_syncbn_backward(comm, &r->cfg, &(sbn_syncbn_backward_io){.dy = &r->dyv, .x = &r->xv,
                               .save_mean = &r->smv, .save_invstd = &r->siv,
                               .global_count = global_count, .grad_input = &r->giv,
                               .grad_weight = &r->gwv, .grad_bias = &r->gbv}, r->ws, r->bytes,
                               NULL);
}

/* 1 when no forward output moved from its fill. */
static int forward_untouched(const rank0 *r)
{
    return r->y[0] == 7.0 && r->y[1] == 7.0 && r->sm == 7.0 && r->si == 7.0 && r->rm == 0.5 &&
           r->rv == 2.0 && r->nbt == 3 && r->count == -7;
}

static void forward_at_the_limit(void)
{
    const uint64_t k = (uint64_t)SBN_LAYER_MAX_UNITS - 2;
    const double n = (double)(k + 2), mean = (double)(k + 8) / n;
    const double m2 = (double)(20 * k + 4) / n, inv = 1.0 / sqrt(m2 / n + 1e-5);
    fake_peer fp;
    sbn_comm_t *comm = peer_world(&fp);
    rank0 r;
    CHECK(comm != NULL);
    rank0_init(&r);
    peer_forward(&fp, k);
    CHECK_STATUS(rank0_forward(&r, comm), SBN_OK);
    CHECK_MSG(r.count == (int64_t)(k + 2), "global_count %lld", (long long)r.count);
    CHECK_MSG(fabs(r.sm - mean) <= 1e-15 * mean, "save_mean %.17g, exact %.17g", r.sm, mean);
    CHECK_MSG(fabs(r.si - inv) <= 1e-12 * inv, "save_invstd %.17g, exact %.17g", r.si, inv);
    CHECK_MSG(fabs(r.rv - (0.9 * 2.0 + 0.1 * m2 / (n - 1))) <= 1e-12, "running_var %.17g",
              r.rv);
    printf("    %.0f units: mean %.17g, M2 %.6g, as the exact formulas\n", n, r.sm, m2);
    free(r.ws);
    sbn_comm_destroy(comm);
}

static void forward_past_the_limit(void)
{
    static const uint64_t ks[] = {(uint64_t)SBN_LAYER_MAX_UNITS - 1, (UINT64_C(1) << 32) + 3};
    unsigned i;
    for (i = 0; i < 2; i++) {
        fake_peer fp;
        sbn_comm_t *comm = peer_world(&fp);
        char units[40];
        rank0 r;
        CHECK(comm != NULL);
        rank0_init(&r);
        peer_forward(&fp, ks[i]);
        snprintf(units, sizeof units, "%llu units", (unsigned long long)(ks[i] + 2));
        CHECK_STATUS(rank0_forward(&r, comm), SBN_ERR_TOO_LARGE);
        CHECK_MSG(has(units) && has("715827875") && has("the world holds"), "message: %s",
                  sbn_last_error());
        CHECK_MSG(forward_untouched(&r), "a refused forward changed an output (save_mean %g, "
                  "running_var %g, count %lld)", r.sm, r.rv, (long long)r.count);
        free(r.ws);
        sbn_comm_destroy(comm);
    }
}

static void backward_limit(void)
{
    static const uint64_t ks[] = {(uint64_t)SBN_LAYER_MAX_UNITS - 2,
                                  (uint64_t)SBN_LAYER_MAX_UNITS - 1};
    unsigned i;
    for (i = 0; i < 2; i++) {
        fake_peer fp;
        sbn_comm_t *comm = peer_world(&fp);
        rank0 r;
        sbn_status s;
        CHECK(comm != NULL);
        rank0_init(&r);
        r.sm = 4.0, r.si = 1.0;
        peer_backward(&fp, ks[i]);
        s = rank0_backward(&r, comm, (int64_t)(ks[i] + 2));
        if (i == 0) {
            CHECK_MSG(s == SBN_OK, "%s (%s)", sbn_status_name(s), sbn_last_error());
            CHECK_MSG(r.gb == (double)ks[i] + 0.25, "grad_bias %.17g, expected %.17g", r.gb,
                      (double)ks[i] + 0.25);
        } else {
            CHECK_MSG(s == SBN_ERR_TOO_LARGE && has("715827876 units"), "%s (%s)",
                      sbn_status_name(s), sbn_last_error());
            CHECK_MSG(r.gb == 7.0 && r.gw == 7.0 && r.gi[0] == 7.0 && r.gi[1] == 7.0,
                      "a refused backward changed an output");
        }
        free(r.ws);
        sbn_comm_destroy(comm);
    }
}

/* A rank whose own batch holds more units than the limit: refused before the exchange. */
static void one_rank_past_the_limit(void)
{
    const int64_t n = SBN_LAYER_MAX_UNITS + 1;
    int64_t shape[2] = {n, 1}, nbt = 3, count = -7;
    size_t ybytes = (size_t)n * 2, bytes;
    uint16_t one = 0x3C00; /* f16 1.0, read through zero strides */
    double rm = 0.5, rv = 2.0, sm = 7.0, si = 7.0, gb = 7.0;
    sbn_tensor x = sbn_tensor_contiguous(&one, SBN_F16, 2, shape), y, rmv, rvv, smv, siv, gbv;
    sbn_syncbn_config cfg;
    sbn_comm_t *comm;
    void *ymem, *ws;
    x.strides[0] = x.strides[1] = 0;
    ymem = mmap(NULL, ybytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    CHECK(ymem != MAP_FAILED);
    y = sbn_tensor_contiguous(ymem, SBN_F16, 2, shape);
    rmv = sbn_tensor_1d(&rm, SBN_F64, 1), rvv = sbn_tensor_1d(&rv, SBN_F64, 1);
    smv = sbn_tensor_1d(&sm, SBN_F64, 1), siv = sbn_tensor_1d(&si, SBN_F64, 1);
    gbv = sbn_tensor_1d(&gb, SBN_F64, 1);
    sbn_syncbn_config_default(&cfg);
    cfg.reproducible = 1;
    CHECK(sbn_comm_threads_create(1, 5.0, &comm) == SBN_OK);
    CHECK(sbn_syncbn_workspace_size(&x, &bytes) == SBN_OK);
    ws = malloc(bytes);
    CHECK_STATUS(sbn_syncbn_forward(comm, &cfg, &(sbn_syncbn_forward_io){.x = &x,
                                    .running_mean = &rmv, .running_var = &rvv,
                                    .num_batches_tracked = &nbt, .y = &y, .save_mean = &smv,
                                    .save_invstd = &siv, .global_count = &count}, ws, bytes, NULL),
                 SBN_ERR_TOO_LARGE);
    CHECK_MSG(has("this rank holds 715827876 units") && has("715827875"), "message: %s",
              sbn_last_error());
    CHECK(rm == 0.5 && rv == 2.0 && sm == 7.0 && si == 7.0 && nbt == 3 && count == -7);
    sm = 0.0, si = 1.0;
    CHECK_STATUS(sbn_syncbn_backward(comm, &cfg, &(sbn_syncbn_backward_io){.dy = &x, .x = &x,
                                     .save_mean = &smv, .save_invstd = &siv, .global_count = n,
                                     .grad_bias = &gbv}, ws, bytes, NULL),
                 SBN_ERR_TOO_LARGE);
    CHECK_MSG(has("this rank holds 715827876 units"), "message: %s", sbn_last_error());
    CHECK(gb == 7.0);
    free(ws);
    munmap(ymem, ybytes);
    sbn_comm_destroy(comm);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(forward_at_the_limit),
    SBN_TEST_CASE(forward_past_the_limit),
    SBN_TEST_CASE(backward_limit),
    SBN_TEST_CASE(one_rank_past_the_limit),
};

SBN_TEST_MAIN(k_cases)
