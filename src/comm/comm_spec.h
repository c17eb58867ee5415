/*
 * comm_spec.h - the speculative one-SUM merge of the callbacks backend with an
 * allreduce_int64 callback. A merge of the library's exact accumulators normally
 * takes two collectives: a MAX (the header check, with the accumulators' tops)
 * and a SUM of their words aligned to the maximum tops (core/rsum.h). In training
 * the same merges come back every step with the same tops, so a merge can guess
 * both the header and the maximum tops from the collective one period earlier and
 * send only the SUM, aligned to the guessed tops, with the proof that the guess
 * was right folded into the same SUM. The period P (1 to SBN_SPEC_MAX_PERIOD) is
 * the smallest for which the last two collectives repeat the two P before them
 * (same op, count, tag and element size, both agreed merges): 2 for a forward and
 * a backward that alternate, 1 for forwards alone, 4 for two forwards and two
 * backwards (gradient accumulation). The SUM's words:
 *
 *   words[0 .. 11 n)          the accumulators packed at the guessed tops P
 *                             (sbn__rsum_pack), as in the second collective;
 *   words[11 n .. 11 n + ceil(n / 3))
 *                             per accumulator i, 1 in the 21-bit field i % 3 of
 *                             word i / 3 when this rank's top equals P[i]: the
 *                             sum counts the ranks that reach P[i] (<= 2^20);
 *   fits                      1 when this rank's call is that merge (op, count,
 *                             element size, tag as guessed, call number + P), its
 *                             step is the guessed one plus d, 0 <= d < 2^11, and
 *                             every top i is at most P[i]; else 0 (and the rest
 *                             of its words 0): a rank in another collective, a
 *                             failing rank, a rank whose tops grew;
 *   d, d * d                  the step's distance from the guess.
 *
 * Every rank sees the same sums and takes the same branch. The guess held when
 * the fits sum is W (every rank is in that merge with tops at most P), every
 * accumulator's count is at least 1 (so the maximum top is exactly P) and
 * W * sum(d^2) == (sum d)^2, which holds iff every d is equal (Cauchy-Schwarz;
 * exact: sum(d) < 2^31 and W sum(d^2) < 2^62), i.e. every rank is at the same
 * step. Then every check of the two-collective path would have passed and its
 * SUM would have been this one, word for word: the result has its bits. When the
 * guess failed, every rank goes on with the two-collective path (which then
 * reports any disagreement or failure as before), one collective later.
 *
 * The guess must be the same on every rank, since it sets the size of the first
 * collective: it comes only from what every rank saw, the agreed headers and
 * maximum tops of the last collectives (a collective that did not agree, or was
 * not such a merge, is no guess and matches nothing), and a rank whose callback
 * failed drops its guesses as it drops out of step. Every collective of an armed
 * handle starts with the guessed SUM, whatever it is, so that the ranks' calls
 * pair up: a barrier, an allgather or a failure announcement sends fits = 0.
 * Memory for the next guess is reserved before the header (sbn__spec_reserve), so
 * that a failed allocation is announced instead of leaving the ranks' guesses
 * apart.
 */
#ifndef SBN_COMM_SPEC_H
#define SBN_COMM_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "comm_internal.h"

#define SBN_SPEC_STEP_BITS 11
#define SBN_SPEC_FIELD_BITS 21
#define SBN_SPEC_MAX_PERIOD 4
/* The records kept: the period's test reads up to 2 P back (P + 1 and 1 before it), and
 * the next record is written over the oldest, which no guess reads. */
#define SBN_SPEC_RECORDS (2 * SBN_SPEC_MAX_PERIOD)

/* One collective as every rank saw it: the agreed header and, for a merge, the maximum tops. */
typedef struct sbn__spec_record {
    int valid;                    /* 1: an rsum merge that agreed, with its tops */
    size_t n;                     /* its count */
    int64_t hdr[SBN_HDR_STATUS];  /* its agreed header words */
    int64_t *tops;                /* n maximum tops (grow-only, cap) */
    size_t cap;
} sbn__spec_record;

typedef struct sbn__spec {
    sbn__spec_record rec[SBN_SPEC_RECORDS];  /* a ring, rec[newest] the last collective */
    int newest;
    int guess, period;            /* set by sbn__spec_armed: rec[guess], P; guess -1: none */
    int64_t *buf;                 /* the guessed SUM's words (grow-only) */
    size_t buf_cap;
} sbn__spec;

/* Words of the speculative SUM for a merge of n accumulators. */
size_t sbn__spec_words(size_t n);
/* Grows the buffers a merge of n needs for its own record and a later guess. */
sbn_status sbn__spec_reserve(sbn__spec *sp, size_t n);
/* 1 when the next collective starts with the guessed SUM (it finds the period and the
 * guess, for the calls below). */
int sbn__spec_armed(sbn__spec *sp);
/* The count of the guess (after sbn__spec_armed answered 1). */
size_t sbn__spec_guess_n(const sbn__spec *sp);
/*
 * Fills sp->buf (sbn__spec_words of the guess's n) for this rank's header `mine`;
 * data/tops/count: the accumulators of an rsum merge and their tops (data NULL for
 * any other collective).
 */
void sbn__spec_fill(sbn__spec *sp, const int64_t *mine, const void *data, const int64_t *tops,
                    size_t count);
/* After the SUM: 1 when the guess held on every rank (then data holds the merge). */
int sbn__spec_verdict(sbn__spec *sp, int size, void *data);
/* Records the collective that just started: a merge of n with header `hdr` that agreed
 * (tops filled later by sbn__spec_tops), or nothing to guess from (hdr NULL). */
void sbn__spec_record_start(sbn__spec *sp, const int64_t *hdr, size_t n);
/* The maximum tops of the merge just recorded; it becomes a guess. */
void sbn__spec_record_tops(sbn__spec *sp, const int64_t *tops, size_t n);
/* Forgets every guess (this rank's callback failed: it is out of step). */
void sbn__spec_forget(sbn__spec *sp);
void sbn__spec_free(sbn__spec *sp);

#endif /* SBN_COMM_SPEC_H */
