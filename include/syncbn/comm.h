/*
 * comm.h - the communicator: how the ranks of a SyncBN world exchange doubles
 * (and fixed-size accumulators). A handle has a rank and a size and four
 * collectives: allgather, allreduce-sum, allreduce-merge (fixed-size elements
 * merged by an exact user function) and barrier. Backends: in-process threads (a
 * world of W ranks, each handle used from its own thread; the default, nothing to
 * set up), MPI (syncbn/comm_mpi.h, built when MPI is found) and user callbacks (a
 * framework carries the bytes).
 *
 * Safety: every collective first exchanges a small header (operation, element
 * count and size, a caller tag such as C and dtype, a per-handle call number and
 * the caller's step from sbn_comm_set_step). If
 * the ranks disagree, every rank returns SBN_ERR_COMM_MISMATCH with a sentence
 * naming the ranks and the values, instead of mixing up buffers or hanging. A rank
 * that has failed calls sbn_comm_fail() at the point of its next collective, so
 * that its peers return SBN_ERR_PEER_FAILED instead of waiting. The allreduce sums
 * in rank order 0..W-1 on every rank, so every rank gets the same bits whatever
 * the backend's own reduction algorithm.
 */
#ifndef SYNCBN_COMM_H
#define SYNCBN_COMM_H

#include "syncbn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbn_comm sbn_comm_t;

/*
 * Timeouts (threads and MPI backends): a collective waits at most the handle's
 * timeout for the other ranks, then returns SBN_ERR_TIMEOUT naming the ranks that
 * did not arrive. A timeout argument > 0 is used as given (capped at 1e8 s, so
 * INFINITY means practically never); 0, a negative value or NaN means the default:
 * the SBN_COMM_TIMEOUT environment variable (seconds, a number > 0 such as "2" or
 * "0.5"; unset or empty means 60 s; anything else, e.g. "abc", "-1", "0", "nan"
 * or "5s", makes creation fail with SBN_ERR_BAD_VALUE and a sentence quoting it).
 * The environment is read at creation only. The callbacks backend waits as long
 * as the user's callbacks do: their timeouts are theirs.
 */
/*
 * Creates a world of `world` in-process ranks: comms[r] is rank r's handle, to be
 * used by one thread at a time. A collective waits at most timeout_seconds (see
 * above for <= 0) for the other ranks, then returns SBN_ERR_TIMEOUT; after a
 * timeout or a failure the world is broken and every later collective on any of
 * its handles fails at once. Destroy every handle (any thread, any order).
 */
sbn_status sbn_comm_threads_create(int world, double timeout_seconds, sbn_comm_t **comms);

/*
 * The merge of sbn_comm_allreduce_merge: merges `count` elements of `in` into the
 * `count` elements of `inout`, element by element (inout[i] = inout[i] (+) in[i]).
 * It must be associative and commutative EXACTLY, bit for bit (integer sums,
 * max, xor, exact accumulators; not a plain floating-point sum), since every
 * backend merges in its own order (a tree, slices, MPI's algorithm) and the
 * result must be the same bytes on every rank and for every order. It must not
 * call the communicator and may run on any of the backend's threads (MPI calls
 * it from inside MPI_Test). `in` and `inout` do not overlap.
 */
typedef void (*sbn_comm_merge_fn)(void *inout, const void *in, size_t count);

/*
 * User callbacks: the framework's own collectives on bytes. Each returns 0 on
 * success, anything else on failure (mapped to SBN_ERR_COMM).
 *   allgather: every rank contributes `bytes` bytes; recv receives size * bytes,
 *              rank r's block at offset r * bytes.
 *   barrier:   optional (NULL: an allgather of one byte is used).
 *   destroy:   optional, called by sbn_comm_destroy with user.
 *   allreduce: optional: in place over `count` elements of `elem_bytes` bytes,
 *              every rank ends with the merge of all ranks' data, by any
 *              algorithm that calls `merge` (any order: merge is exact). NULL:
 *              sbn_comm_allreduce_merge allgathers every rank's data and merges
 *              it locally in rank order, so each rank receives size * count *
 *              elem_bytes bytes: that fallback's traffic grows with the world.
 *   allreduce_int64: optional: in place over `count` int64 values, every rank
 *              ends with their element-wise sum (op SBN_COMM_INT_SUM) or maximum
 *              (SBN_COMM_INT_MAX) over all ranks, by any algorithm (e.g.
 *              torch.distributed.all_reduce of an int64 tensor, MPI_Allreduce on
 *              MPI_INT64_T): integer sums and maxima are exact in any order, and
 *              the library only asks for sums of values in [0, 2^32) (or below
 *              2^63 / 2^21), which cannot overflow for up to 2^20 ranks. When given
 *              and size <= 2^20, every collective's header check is one MAX over a
 *              fixed 64 words (each header word and its complement: equal maxima
 *              mean every rank agrees; a disagreement or a failure then gathers the
 *              headers with allgather for the sentence), and the SyncBN layer's
 *              merges of its exact accumulators (count elements of 56 bytes) ride
 *              on it: their tops go in that MAX (a second MAX for count > 51), then
 *              one SUM of 11 words per element, so each rank hands 512 + 96 * count
 *              bytes to the callback per merge (512 + 88 * count when count <= 51)
 *              whatever the world size, and the result has the bytes of the
 *              rank-order merge. When the collectives repeat with a period of 1 to
 *              4 (a training step's forward and backward alternate), a merge is
 *              first tried as one SUM aligned to the maximum tops of the merge one
 *              period back, with the proof that the guess holds on every rank folded in
 *              (8 * (11 * count + ceil(count / 3) + 3) bytes; src/comm/comm_spec.h);
 *              when it does not hold, the MAX and the SUM follow, on every rank.
 *              Other merges use `allreduce` or the allgather.
 * A struct zero-initialized and then filled keeps working as members are added
 * at the end (a NULL member is "not provided").
 */
#define SBN_COMM_INT_SUM 0
#define SBN_COMM_INT_MAX 1
typedef struct sbn_comm_callbacks {
    int (*allgather)(void *user, const void *send, size_t bytes, void *recv);
    int (*barrier)(void *user);
    void (*destroy)(void *user);
    int (*allreduce)(void *user, void *data, size_t count, size_t elem_bytes,
                     sbn_comm_merge_fn merge);
    int (*allreduce_int64)(void *user, int64_t *data, size_t count, int op);
} sbn_comm_callbacks;

sbn_status sbn_comm_callbacks_create(int rank, int size, const sbn_comm_callbacks *callbacks,
                                     void *user, sbn_comm_t **comm);

/* Rank and size of a handle; -1 and 0 for NULL. */
int sbn_comm_rank(const sbn_comm_t *comm);
int sbn_comm_size(const sbn_comm_t *comm);

/*
 * allgather: every rank sends `count` doubles; recv (size * count doubles) gets
 * rank r's values at recv[r * count]. `tag` is any value the ranks must agree on
 * (the op checks it, e.g. C and dtype packed by the caller).
 */
sbn_status sbn_comm_allgather(sbn_comm_t *comm, const double *send, size_t count, double *recv,
                              int64_t tag);
/* allreduce-sum in place over `count` doubles, summed in rank order on every rank. */
sbn_status sbn_comm_allreduce_sum(sbn_comm_t *comm, double *values, size_t count, int64_t tag);
/*
 * allreduce-merge in place over `count` elements of `elem_bytes` bytes each:
 * every rank ends with merge(rank 0's data, ..., rank W-1's data), the same bytes
 * on every rank since `merge` is exact (see sbn_comm_merge_fn). The ranks must
 * agree on count, elem_bytes and tag (checked: SBN_ERR_COMM_MISMATCH on every
 * rank, naming the ranks and values); failures, timeouts and steps behave as in
 * the other collectives. Per rank the payload moved stays O(count * elem_bytes)
 * whatever the world size, except through the callbacks' allgather fallback:
 *   threads:   count >= W: reduce-scatter then allgather over the ranks' own
 *              buffers (rank r merges slice r of every rank, then every rank
 *              copies every slice): (W - 2) * n_r + count elements read by rank
 *              r, n_r = count / W give or take one, so under 2 * count when W
 *              divides count and under 3 * count always; count < W: a binary
 *              tree (merge the 2 children, copy the parent's result), at most
 *              3 * count elements read per rank; 2 * log2(W) steps deep.
 *   MPI:       MPI_Iallreduce with a datatype of elem_bytes bytes and a
 *              commutative MPI_Op calling merge, polled against the timeout
 *              (a timeout there breaks the handle: see comm_mpi.h).
 *   callbacks: the allreduce callback, else allgather + local rank-order merge.
 * Errors: SBN_ERR_NULL_ARGUMENT (data NULL with count > 0, merge NULL),
 * SBN_ERR_BAD_VALUE (elem_bytes 0, count * elem_bytes overflowing; on MPI count
 * or elem_bytes above INT_MAX), announced to the peers like any bad argument.
 */
sbn_status sbn_comm_allreduce_merge(sbn_comm_t *comm, void *data, size_t count, size_t elem_bytes,
                                    sbn_comm_merge_fn merge, int64_t tag);
sbn_status sbn_comm_barrier(sbn_comm_t *comm);

/*
 * Bytes this rank's handle has moved since its creation, headers included (each
 * collective's header is 56 bytes per rank; the MPI and callbacks backends
 * allgather it, so a rank receives (W - 1) x 56 header bytes per collective
 * there: that part does grow with W); either pointer may be NULL; 0 and 0 for a
 * NULL handle. Like the getters, it leaves the error sentence alone.
 *   threads:   sent counts each payload this rank publishes once (its header,
 *              its block of an allgather, its buffer of a merge), received the
 *              bytes it reads from other ranks' memory (W - 1 blocks of an
 *              allgather; the slices or tree buffers of a merge). The header
 *              check reads only the next rank's header and one 8-byte word
 *              shared by the world, 64 bytes per collective whatever W, and
 *              W - 1 headers more only when the ranks disagree or one failed.
 *              A world of one moves nothing.
 *   MPI:       the bytes of syncbn's own point-to-point messages (each exchange
 *              sends its block to, and receives one from, each of the W - 1
 *              peers), and count * elem_bytes in and out for each merge's
 *              MPI_Iallreduce: MPI's internal algorithm traffic is not visible.
 *   callbacks: the bytes handed to and received from the callbacks (an allgather
 *              hands `bytes` and receives size * bytes; the allreduce callback
 *              count * elem_bytes each way; allreduce_int64 8 * count each way; the
 *              barrier callback none).
 */
void sbn_comm_traffic(const sbn_comm_t *comm, uint64_t *bytes_sent, uint64_t *bytes_received);

/*
 * Declares the caller's step (e.g. the training iteration) for the collectives
 * that follow on this handle; local, no communication; 0 at creation. The step
 * travels in every header and the ranks must agree on it, so a rank that skipped
 * or repeated a step gets SBN_ERR_COMM_MISMATCH at its next collective, on every
 * rank ("rank 0 is at step 7 but rank 1 is at step 8 ..."), instead of pairing its
 * collectives with its peers' collectives of another step. Without it nothing can
 * catch a skip: every rank's k-th collective meets every other rank's k-th one, so
 * the call numbers always agree, and a rank that skipped a step whose collectives
 * look like the next step's is only noticed when the others wait for the calls it
 * never makes (SBN_ERR_TIMEOUT at the end). Like a mismatch, not sticky.
 */
sbn_status sbn_comm_set_step(sbn_comm_t *comm, int64_t step);
/*
 * Takes part in the next collective as a failed rank: the peers' pending or next
 * collective returns SBN_ERR_PEER_FAILED naming this rank and `reason`'s status.
 * Returns `reason`, so a caller can write `return sbn_comm_fail(comm, s);`, or the
 * backend's error if even the failure could not be announced.
 */
sbn_status sbn_comm_fail(sbn_comm_t *comm, sbn_status reason);

void sbn_comm_destroy(sbn_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_COMM_H */
