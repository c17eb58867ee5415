/*
 * comm_mpi.c - the MPI backend. Creation duplicates the caller's communicator
 * (MPI_Comm_idup, polled against the timeout) so that syncbn's messages can never
 * match the caller's, and sets MPI_ERRORS_RETURN on the duplicate so that an MPI
 * failure comes back as a code (SBN_ERR_COMM with MPI_Error_string's text) instead
 * of aborting the job. An exchange is point-to-point: each rank posts a receive
 * from and a send to every peer, through a staging buffer the handle owns, and
 * polls them (MPI_Test, then short naps) against a deadline. Point-to-point rather
 * than MPI_Iallgather for two reasons: a rank learns exactly whose message did not
 * arrive, so a timeout names the missing ranks; and a receive can be cancelled,
 * whereas a nonblocking collective can be neither cancelled nor freed. On a
 * timeout the handle is broken for good: it cancels its receives, gives MPI up to
 * half a second to settle them, hands whatever is still pending to MPI for good
 * (the staging buffer is then leaked, never freed under MPI's feet) and sends a
 * notice to every peer, which a peer polls in every exchange: a peer still waiting
 * in the same call, or a late rank at its next call, fails at once with the
 * notice's sentence instead of waiting for its own deadline. A broken handle's
 * destroy leaves its duplicate communicator to MPI (see mpi_destroy).
 *
 * The merge allreduce is MPI's own collective: MPI_Iallreduce from and to the
 * handle's staging buffers (never the caller's) with a datatype of elem_bytes
 * bytes and a commutative op calling the merge (comm_mpi_merge.c), polled like
 * an exchange against the deadline and for the peers' notices. MPI names nobody
 * in a collective that does not complete, but a rank that never comes is already
 * caught by the header exchange before it, naming it; the MPI_Iallreduce times
 * out only when a rank stops after the header (a dead process, a merge that never
 * returns). Then, as after a failed exchange, the handle is broken and notifies
 * its peers, and the request stays pending for good (a nonblocking collective
 * can be neither cancelled nor freed): its staging buffers, datatype and op are
 * never freed, so that MPI can still finish it if the late ranks ever arrive.
 * Traffic: each exchange counts its W - 1 messages each way, each merge count *
 * elem_bytes each way (what MPI's algorithm moves inside is not visible here).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"
#include "comm_mpi_merge.h"
#include "core/alloc.h"
#include "core/export.h"
#include "core/status.h"
#include "syncbn/comm_mpi.h"

#define SBN_MPI_TAG_EXCHANGE 1
#define SBN_MPI_TAG_NOTICE 2
#define SBN_MPI_TEXT 480
#define SBN_MPI_SPINS 2000          /* polls before the first nap */
#define SBN_MPI_MAX_NAP_NS 1000000L /* naps grow from 1 us to 1 ms */
#define SBN_MPI_SETTLE_SECONDS 0.5  /* how long cancelled requests get to complete */

/* What a rank that gave up sends to every peer. */
typedef struct mpi_notice {
    int64_t rank;   /* the rank that gave up */
    int64_t seq;    /* its call number */
    int64_t status; /* why: SBN_ERR_TIMEOUT or SBN_ERR_COMM */
    char text[296]; /* its sentence */
} mpi_notice;

typedef struct mpi_comm {
    struct sbn_comm base;  /* first: a sbn_comm_t * is a mpi_comm * */
    MPI_Comm comm;         /* our duplicate */
    MPI_Datatype unit8;    /* 8 contiguous bytes, for blocks over INT_MAX bytes */
    double timeout;        /* seconds */
    MPI_Request *requests; /* 3 * size: receives from rank r, sends to r, notices to r */
    unsigned char *stage;  /* size blocks in, then one block out; grow-only */
    size_t stage_bytes;
    mpi_notice *notice_in, *notice_out;
    MPI_Request notice_recv; /* from any peer, posted at creation */
    int abandoned; /* MPI kept requests on stage or the notices: they are never freed */
    sbn__mpi_merge merge; /* the merge allreduce's op, datatypes, stage and request */
    int broken;
    sbn_status broken_status;
    char broken_text[SBN_MPI_TEXT];
} mpi_comm;

/* ---- clock and errors ---- */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(long nanos)
{
    struct timespec ts = {0, nanos};
    nanosleep(&ts, NULL);
}

/* MPI's text for `code`, into buf (comm_mpi_merge.h). */
void sbn__mpi_text(int code, char *buf, size_t size)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0)
        snprintf(text, sizeof text, "unknown MPI error");
    else
        text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = '\0';
    snprintf(buf, size, "%s (MPI error %d)", text, code);
}

static sbn_status mpi_error(int code, const char *call, int rank)
{
    char text[MPI_MAX_ERROR_STRING + 32];
    sbn__mpi_text(code, text, sizeof text);
    if (rank >= 0) return sbn__error(SBN_ERR_COMM, "%s failed on rank %d: %s", call, rank, text);
    return sbn__error(SBN_ERR_COMM, "%s failed: %s", call, text);
}

/* Copies src into dst of `size` bytes, cut short when too long, always terminated. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t len = strlen(src);
    if (len >= size) len = size - 1;
    memmove(dst, src, len);
    dst[len] = '\0';
}

/* Marks the handle broken (the first reason wins). */
static void break_handle(mpi_comm *c, sbn_status status, const char *text)
{
    if (c->broken) return;
    c->broken = 1;
    c->broken_status = status;
    copy_text(c->broken_text, sizeof c->broken_text, text);
}

/* `earlier`: the handle was already broken when this exchange began. */
static sbn_status broken_error(const mpi_comm *c, int earlier)
{
    if (earlier)
        return sbn__error(c->broken_status, "the MPI communicator was broken before this "
                          "collective: %s", c->broken_text);
    return sbn__error(c->broken_status, "%s", c->broken_text);
}

/* ---- requests ---- */

/*
 * Cancels the pending receives among reqs[0..n), gives every pending request up
 * to SBN_MPI_SETTLE_SECONDS to complete, then hands the rest to MPI for good
 * (MPI_Request_free) and records that its buffers may never be freed.
 */
static void settle_requests(mpi_comm *c, MPI_Request *reqs, int n, int cancel_from, int cancel_to)
{
    double deadline = now_seconds() + SBN_MPI_SETTLE_SECONDS;
    int i, flag, pending;
    for (i = cancel_from; i < cancel_to; i++)
        if (reqs[i] != MPI_REQUEST_NULL) MPI_Cancel(&reqs[i]);
    do {
        pending = 0;
        for (i = 0; i < n; i++) {
            if (reqs[i] == MPI_REQUEST_NULL) continue;
            flag = 0;
            if (MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) pending++;
        }
        if (pending) nap(100000L);
    } while (pending && now_seconds() < deadline);
    for (i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        MPI_Request_free(&reqs[i]);
        reqs[i] = MPI_REQUEST_NULL;
        c->abandoned = 1;
    }
}

/* Tells every peer that this rank gave up, with the handle's sentence; best effort. */
static void send_notices(mpi_comm *c)
{
    int size = c->base.size, r;
    MPI_Request *sends = c->requests + 2 * (size_t)size;
    memset(c->notice_out, 0, sizeof *c->notice_out);
    c->notice_out->rank = c->base.rank;
    c->notice_out->seq = (int64_t)c->base.seq;
    c->notice_out->status = (int64_t)c->broken_status;
    copy_text(c->notice_out->text, sizeof c->notice_out->text, c->broken_text);
    for (r = 0; r < size; r++)
        if (r != c->base.rank)
            MPI_Isend(c->notice_out, (int)sizeof *c->notice_out, MPI_BYTE, r, SBN_MPI_TAG_NOTICE,
                      c->comm, &sends[r]);
    sbn__comm_count(&c->base, (uint64_t)(size - 1) * sizeof *c->notice_out, 0);
}

/* 1 when a peer's notice has arrived (the handle is then broken with its sentence). */
static int notice_arrived(mpi_comm *c)
{
    char text[SBN_MPI_TEXT];
    int flag = 0;
    if (c->notice_recv == MPI_REQUEST_NULL) return 0;
    if (MPI_Test(&c->notice_recv, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) return 0;
    sbn__comm_count(&c->base, 0, sizeof *c->notice_in);
    c->notice_in->text[sizeof c->notice_in->text - 1] = '\0';
    snprintf(text, sizeof text, "rank %" PRId64 " gave up in its call #%" PRId64 ", which broke "
             "the communicator: %s", c->notice_in->rank, c->notice_in->seq, c->notice_in->text);
    break_handle(c, SBN_FAILED((sbn_status)c->notice_in->status)
                        ? (sbn_status)c->notice_in->status : SBN_ERR_PEER_FAILED, text);
    return 1;
}

/* "rank 2" or "ranks 1, 2, 5" for the peers whose receive is still pending. */
static int missing_ranks(const mpi_comm *c, char *buf, size_t size)
{
    size_t len;
    int r, n = 0, shown = 0;
    for (r = 0; r < c->base.size; r++) n += c->requests[r] != MPI_REQUEST_NULL;
    len = (size_t)snprintf(buf, size, "%s ", n == 1 ? "rank" : "ranks");
    for (r = 0; r < c->base.size && len < size; r++) {
        if (c->requests[r] == MPI_REQUEST_NULL) continue;
        if (shown == 8) {
            len += (size_t)snprintf(buf + len, size - len, ", ...");
            break;
        }
        len += (size_t)snprintf(buf + len, size - len, "%s%d", shown ? ", " : "", r);
        shown++;
    }
    return n;
}

/* ---- the exchange ---- */

/* Grows the staging buffer to (size + 1) blocks of `bytes`. */
static sbn_status reserve_stage(mpi_comm *c, size_t bytes)
{
    size_t blocks = (size_t)c->base.size + 1, need;
    unsigned char *p;
    if (bytes > SIZE_MAX / blocks)
        return sbn__error(SBN_ERR_COMM, "%zu ranks of %zu bytes overflow the address space",
                          blocks, bytes);
    need = blocks * bytes;
    if (need <= c->stage_bytes) return SBN_OK;
    p = sbn__malloc(need);
    if (p == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the %zu-byte staging "
                          "buffer of an MPI exchange", need);
    sbn__free(c->stage);
    c->stage = p;
    c->stage_bytes = need;
    return SBN_OK;
}

/* The failure of an exchange in flight: breaks the handle, settles its requests, tells the peers. */
static sbn_status fail_exchange(mpi_comm *c, sbn_status status, const char *text, int notify)
{
    int size = c->base.size;
    break_handle(c, status, text);
    settle_requests(c, c->requests, 2 * size, 0, size);
    if (notify) send_notices(c);
    return broken_error(c, 0);
}

/* Polls the posted requests until all complete, a notice arrives or the deadline passes. */
static sbn_status wait_exchange(mpi_comm *c, int unit_count, MPI_Datatype unit)
{
    double start = now_seconds(), deadline = start + c->timeout;
    long nap_ns = 1000L;
    int size = c->base.size, spins = 0, i, flag, pending, got = 0;
    char text[SBN_MPI_TEXT], missing[SBN_MPI_TEXT / 2], why[MPI_MAX_ERROR_STRING + 32];
    MPI_Status status;

    for (;;) {
        pending = 0;
        for (i = 0; i < 2 * size; i++) {
            int rc;
            if (c->requests[i] == MPI_REQUEST_NULL) continue;
            flag = 0;
            rc = MPI_Test(&c->requests[i], &flag, &status);
            if (rc != MPI_SUCCESS) {
                sbn__mpi_text(rc, why, sizeof why);
                snprintf(text, sizeof text, "MPI_Test of the %s rank %d failed on rank %d: %s",
                         i < size ? "receive from" : "send to", i % size, c->base.rank, why);
                return fail_exchange(c, SBN_ERR_COMM, text, 1);
            }
            if (!flag) {
                pending++;
            } else if (i < size && (MPI_Get_count(&status, unit, &got) != MPI_SUCCESS ||
                                    got != unit_count)) {
                snprintf(text, sizeof text, "rank %d sent %d units to rank %d where %d were "
                         "expected", i, got, c->base.rank, unit_count);
                return fail_exchange(c, SBN_ERR_COMM_MISMATCH, text, 1);
            }
        }
        if (pending == 0) return SBN_OK;
        if (notice_arrived(c)) {
            /* Say what this rank was still waiting for, after the peer's sentence. */
            if (missing_ranks(c, missing, sizeof missing) > 0) {
                size_t len = strlen(c->broken_text);
                int n = snprintf(c->broken_text + len, sizeof c->broken_text - len,
                                 "; rank %d was still waiting for %s", c->base.rank, missing);
                (void)n;
            }
            return fail_exchange(c, c->broken_status, c->broken_text, 0);
        }
        if (now_seconds() >= deadline) {
            int n = missing_ranks(c, missing, sizeof missing);
            if (n > 0)
                snprintf(text, sizeof text, "rank %d timed out after %g s: %d of %d ranks arrived "
                         "at the collective, %s missing", c->base.rank, c->timeout, size - n,
                         size, missing);
            else /* every message arrived, some sends are not done: a peer stopped receiving */
                snprintf(text, sizeof text, "rank %d timed out after %g s: every rank's message "
                         "arrived but its own sends did not complete", c->base.rank, c->timeout);
            return fail_exchange(c, SBN_ERR_TIMEOUT, text, 1);
        }
        if (++spins > SBN_MPI_SPINS) {
            nap(nap_ns);
            if (nap_ns < SBN_MPI_MAX_NAP_NS) nap_ns *= 2;
        }
    }
}

static sbn_status mpi_exchange(sbn_comm_t *base, const void *send, size_t bytes, void *recv)
{
    mpi_comm *c = (mpi_comm *)base;
    MPI_Datatype unit = MPI_BYTE;
    size_t count = bytes;
    unsigned char *out;
    int size = base->size, me = base->rank, r, rc = MPI_SUCCESS;
    char text[SBN_MPI_TEXT], why[MPI_MAX_ERROR_STRING + 32];
    sbn_status s;

    if (c->broken) return broken_error(c, 1);
    if (notice_arrived(c)) return broken_error(c, 0);
    if (size == 1) {
        if (bytes > 0) memcpy(recv, send, bytes);
        return SBN_OK;
    }
    if (bytes > (size_t)INT_MAX) {
        /* The payload is doubles, so a block is a whole number of 8-byte units. */
        if (bytes % 8 != 0 || bytes / 8 > (size_t)INT_MAX)
            return sbn__error(SBN_ERR_COMM, "a block of %zu bytes is too large for one MPI "
                              "message", bytes);
        unit = c->unit8;
        count = bytes / 8;
    }
    s = reserve_stage(c, bytes);
    if (SBN_FAILED(s)) return s; /* nothing posted: the peers time out, or get this rank later */
    out = c->stage + (size_t)size * bytes;
    if (bytes > 0) memcpy(out, send, bytes);

    for (r = 0; r < size && rc == MPI_SUCCESS; r++)
        if (r != me)
            rc = MPI_Irecv(c->stage + (size_t)r * bytes, (int)count, unit, r, SBN_MPI_TAG_EXCHANGE,
                           c->comm, &c->requests[r]);
    for (r = 0; r < size && rc == MPI_SUCCESS; r++)
        if (r != me)
            rc = MPI_Isend(out, (int)count, unit, r, SBN_MPI_TAG_EXCHANGE, c->comm,
                           &c->requests[size + r]);
    if (rc != MPI_SUCCESS) {
        sbn__mpi_text(rc, why, sizeof why);
        snprintf(text, sizeof text, "posting the messages of rank %d failed: %s", me, why);
        return fail_exchange(c, SBN_ERR_COMM, text, 1);
    }
    s = wait_exchange(c, (int)count, unit);
    if (SBN_FAILED(s)) return s;
    sbn__comm_count(base, (uint64_t)(size - 1) * bytes, (uint64_t)(size - 1) * bytes);
    if (bytes > 0) {
        for (r = 0; r < size; r++)
            if (r != me) memcpy((unsigned char *)recv + (size_t)r * bytes, c->stage + (size_t)r * bytes,
                                bytes);
        memcpy((unsigned char *)recv + (size_t)me * bytes, out, bytes);
    }
    return SBN_OK;
}

/* After the header exchange every rank has entered: one more empty exchange closes it. */
static sbn_status mpi_barrier(sbn_comm_t *base)
{
    return mpi_exchange(base, NULL, 0, NULL);
}

/* ---- the merge allreduce ---- */

/* Before the header: MPI's limits, the staging buffers, the op and the datatype. */
static sbn_status mpi_prepare_merge(sbn_comm_t *base, size_t count, size_t elem_bytes,
                                    sbn_comm_merge_fn merge)
{
    mpi_comm *c = (mpi_comm *)base;
    if (c->broken) return SBN_OK; /* the header exchange reports it */
    return sbn__mpi_merge_prepare(&c->merge, count, elem_bytes, merge);
}

/* A merge that did not complete: the handle breaks and its request stays MPI's. */
static sbn_status fail_merge(mpi_comm *c, sbn_status status, const char *text, int notify)
{
    break_handle(c, status, text);
    c->merge.abandoned = 1;
    if (notify) send_notices(c);
    return broken_error(c, 0);
}

/*
 * MPI_Iallreduce of stage[0, bytes) into stage[bytes, 2 bytes), then polled:
 * MPI_Test, then the peers' notices, then the deadline, with the exchanges' naps.
 */
static sbn_status mpi_allreduce_merge(sbn_comm_t *base, void *data, size_t count,
                                      size_t elem_bytes, sbn_comm_merge_fn merge)
{
    mpi_comm *c = (mpi_comm *)base;
    size_t bytes = count * elem_bytes;
    MPI_Datatype type = sbn__mpi_merge_type_of(&c->merge, elem_bytes, merge);
    unsigned char *in = c->merge.stage, *out = c->merge.stage + bytes;
    char text[SBN_MPI_TEXT], why[MPI_MAX_ERROR_STRING + 32];
    double deadline;
    long nap_ns = 1000L;
    int rc, flag = 0, spins = 0;

    if (c->broken) return broken_error(c, 1);
    if (notice_arrived(c)) return broken_error(c, 0);
    if (type == MPI_DATATYPE_NULL) /* prepare_merge ran on every rank that got here */
        return sbn__error(SBN_ERR_COMM, "no MPI datatype was prepared for %zu-byte elements",
                          elem_bytes);
    memcpy(in, data, bytes);
    rc = MPI_Iallreduce(in, out, (int)count, type, c->merge.op, c->comm, &c->merge.request);
    if (rc != MPI_SUCCESS) {
        sbn__mpi_text(rc, why, sizeof why);
        snprintf(text, sizeof text, "MPI_Iallreduce failed on rank %d: %s", base->rank, why);
        return fail_merge(c, SBN_ERR_COMM, text, 1);
    }
    deadline = now_seconds() + c->timeout;
    for (;;) {
        rc = MPI_Test(&c->merge.request, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            sbn__mpi_text(rc, why, sizeof why);
            snprintf(text, sizeof text, "MPI_Test of the MPI_Iallreduce failed on rank %d: %s",
                     base->rank, why);
            return fail_merge(c, SBN_ERR_COMM, text, 1);
        }
        if (flag) break;
        if (notice_arrived(c)) return fail_merge(c, c->broken_status, c->broken_text, 0);
        if (now_seconds() >= deadline) {
            snprintf(text, sizeof text, "rank %d timed out after %g s in the MPI_Iallreduce of "
                     "an allreduce_merge: every rank had passed the header exchange, but the "
                     "reduction did not complete (a rank stopped after it, or a merge did not "
                     "return in time)", base->rank, c->timeout);
            return fail_merge(c, SBN_ERR_TIMEOUT, text, 1);
        }
        if (++spins > SBN_MPI_SPINS) {
            nap(nap_ns);
            if (nap_ns < SBN_MPI_MAX_NAP_NS) nap_ns *= 2;
        }
    }
    memcpy(data, out, bytes);
    sbn__comm_count(base, bytes, bytes);
    return SBN_OK;
}

static void mpi_destroy(sbn_comm_t *base)
{
    mpi_comm *c = (mpi_comm *)base;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Request *notices = c->requests + 2 * (size_t)base->size;
        settle_requests(c, &c->notice_recv, 1, 0, 1);
        settle_requests(c, notices, base->size, 0, 0);
        if (c->unit8 != MPI_DATATYPE_NULL) MPI_Type_free(&c->unit8);
        sbn__mpi_merge_release(&c->merge, 1);
        /*
         * A broken handle keeps its duplicate: messages of the abandoned exchange
         * may still be on their way, and Open MPI hands messages for a freed
         * context to the next communicator that gets the same context id, which
         * would shift a later handle's exchanges by one message. A context id is
         * reused only once every rank has freed it, so one broken rank suffices.
         */
        if (c->comm != MPI_COMM_NULL && !c->broken) MPI_Comm_free(&c->comm);
    }
    if (finalized) sbn__mpi_merge_release(&c->merge, 0);
    if (!c->abandoned) {
        sbn__free(c->stage);
        sbn__free(c->notice_in);
        sbn__free(c->notice_out);
    }
    sbn__free(c->requests);
    sbn__free(c);
}

static const struct sbn__comm_vtable mpi_vtable = {
    .allgather_bytes = mpi_exchange,
    .barrier = mpi_barrier,
    .destroy = mpi_destroy,
    .prepare_merge = mpi_prepare_merge,
    .allreduce_merge = mpi_allreduce_merge,
};

/* ---- creation ---- */

/*
 * MPI_Comm_idup polled against the timeout: a rank that never creates cannot hang
 * the rest. The new communicator is written into a heap slot, because on a timeout
 * MPI keeps the operation (a nonblocking collective can be neither cancelled nor
 * freed) and writes the slot whenever the late ranks arrive: the slot is then
 * leaked, and the caller must keep `comm` alive (MPI progresses the duplication
 * on it).
 */
static sbn_status duplicate(MPI_Comm comm, double timeout, MPI_Comm *dup)
{
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm *slot;
    double deadline = now_seconds() + timeout;
    long nap_ns = 1000L;
    int rc, flag = 0, rank = -1, spins = 0;

    MPI_Comm_rank(comm, &rank);
    slot = sbn__malloc(sizeof *slot);
    if (slot == NULL)
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the slot of the duplicate "
                          "communicator");
    *slot = MPI_COMM_NULL;
    rc = MPI_Comm_idup(comm, slot, &req);
    if (rc != MPI_SUCCESS) {
        sbn__free(slot);
        return mpi_error(rc, "MPI_Comm_idup", rank);
    }
    for (;;) {
        rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) /* the slot stays MPI's */
            return mpi_error(rc, "MPI_Test of MPI_Comm_idup", rank);
        if (flag) {
            *dup = *slot;
            sbn__free(slot);
            return SBN_OK;
        }
        if (now_seconds() >= deadline) /* the slot stays MPI's */
            return sbn__error(SBN_ERR_TIMEOUT, "rank %d timed out after %g s creating the MPI "
                              "communicator: creation is collective and not every rank of comm "
                              "called it", rank, timeout);
        if (++spins > SBN_MPI_SPINS) {
            nap(nap_ns);
            if (nap_ns < SBN_MPI_MAX_NAP_NS) nap_ns *= 2;
        }
    }
}

/* Allocates the handle's buffers and posts the notice receive; `dup` becomes the handle's. */
static sbn_status make_handle(MPI_Comm dup, double timeout, mpi_comm **out)
{
    mpi_comm *c;
    sbn_status s;
    int rank = 0, size = 0, rc, r;

    *out = NULL;
    rc = MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(dup, &rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(dup, &size);
    if (rc != MPI_SUCCESS) {
        s = mpi_error(rc, "setting up the duplicate communicator", -1);
        MPI_Comm_free(&dup);
        return s;
    }
    c = sbn__calloc(1, sizeof *c);
    if (c == NULL) {
        MPI_Comm_free(&dup);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate an MPI communicator handle");
    }
    c->comm = dup;
    c->unit8 = MPI_DATATYPE_NULL;
    c->notice_recv = MPI_REQUEST_NULL;
    c->timeout = timeout;
    sbn__mpi_merge_init(&c->merge);
    c->requests = sbn__calloc(3 * (size_t)size, sizeof *c->requests);
    c->notice_in = sbn__calloc(1, sizeof *c->notice_in);
    c->notice_out = sbn__calloc(1, sizeof *c->notice_out);
    if (c->requests == NULL || c->notice_in == NULL || c->notice_out == NULL) {
        s = sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the request arrays of an MPI "
                       "communicator of %d ranks", size);
        goto undo;
    }
    for (r = 0; r < 3 * size; r++) c->requests[r] = MPI_REQUEST_NULL;
    s = sbn__comm_init(&c->base, &mpi_vtable, rank, size);
    if (SBN_FAILED(s)) goto undo;
    rc = MPI_Type_contiguous(8, MPI_BYTE, &c->unit8);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&c->unit8);
    if (rc == MPI_SUCCESS && size > 1)
        rc = MPI_Irecv(c->notice_in, (int)sizeof *c->notice_in, MPI_BYTE, MPI_ANY_SOURCE,
                       SBN_MPI_TAG_NOTICE, dup, &c->notice_recv);
    if (rc != MPI_SUCCESS) {
        s = mpi_error(rc, "setting up the MPI communicator handle", rank);
        sbn__comm_release(&c->base);
        goto undo;
    }
    *out = c;
    return SBN_OK;

undo:
    if (c->unit8 != MPI_DATATYPE_NULL) MPI_Type_free(&c->unit8);
    MPI_Comm_free(&c->comm);
    sbn__free(c->requests);
    sbn__free(c->notice_in);
    sbn__free(c->notice_out);
    sbn__free(c);
    return s;
}

SBN_API sbn_status sbn_comm_mpi_create_with_timeout(MPI_Comm comm, double timeout_seconds,
                                                    sbn_comm_t **out)
{
    mpi_comm *c;
    MPI_Comm dup = MPI_COMM_NULL;
    sbn_status s;
    double timeout;
    int initialized = 0, finalized = 0, inter = 0, rc;

    sbn__clear_error();
    if (out == NULL) return sbn__error(SBN_ERR_NULL_ARGUMENT, "out (the output pointer) is NULL");
    *out = NULL;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return sbn__error(SBN_ERR_COMM, "MPI is %s; create the communicator between MPI_Init "
                          "and MPI_Finalize", finalized ? "already finalized" : "not initialized");
    if (comm == MPI_COMM_NULL)
        return sbn__error(SBN_ERR_NULL_ARGUMENT, "comm is MPI_COMM_NULL");
    rc = MPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_test_inter", -1);
    if (inter)
        return sbn__error(SBN_ERR_BAD_VALUE, "comm is an intercommunicator; expected an "
                          "intracommunicator");
    s = sbn__comm_timeout(timeout_seconds, &timeout);
    if (SBN_FAILED(s)) return s;

    s = duplicate(comm, timeout, &dup);
    if (SBN_FAILED(s)) return s;
    s = make_handle(dup, timeout, &c);
    if (SBN_FAILED(s)) return s;
    *out = &c->base;
    return SBN_OK;
}

SBN_API sbn_status sbn_comm_mpi_create(MPI_Comm comm, sbn_comm_t **out)
{
    return sbn_comm_mpi_create_with_timeout(comm, 0.0, out);
}
