/*
 * comm_spec.c - the guesses of the speculative one-SUM merge (comm_spec.h): a ring
 * of records of the last collectives as every rank saw them, the period found in
 * them, the guessed SUM's words for this rank, and the verdict every rank reads
 * from the summed words. The
 * packing is core/rsum.c's, at the guessed tops, so a guess that held gives the
 * words the two-collective path would have summed.
 */
#include <string.h>

#include "comm_spec.h"
#include "core/alloc.h"
#include "core/rsum.h"
#include "core/status.h"

#define SPEC_TAIL 3 /* fits, d, d * d */

size_t sbn__spec_words(size_t n)
{
    return n * SBN_RSUM_INT_WORDS + (n + 2) / 3 + SPEC_TAIL;
}

static int grow(int64_t **p, size_t *cap, size_t n)
{
    int64_t *q;
    if (n <= *cap) return 1;
    q = sbn__malloc(n * sizeof *q);
    if (q == NULL) return 0;
    if (*cap > 0) memcpy(q, *p, *cap * sizeof *q); /* the guess being replaced is still read */
    sbn__free(*p);
    *p = q;
    *cap = n;
    return 1;
}

/* The record k collectives back (0: the last one). */
static sbn__spec_record *back(sbn__spec *sp, int k)
{
    return &sp->rec[(sp->newest - k + SBN_SPEC_RECORDS) % SBN_SPEC_RECORDS];
}

sbn_status sbn__spec_reserve(sbn__spec *sp, size_t n)
{
    sbn__spec_record *next = back(sp, SBN_SPEC_RECORDS - 1); /* the record this merge overwrites */
    if (n > (SIZE_MAX / sizeof(int64_t) - SPEC_TAIL) / (SBN_RSUM_INT_WORDS + 1) ||
        !grow(&next->tops, &next->cap, n) || !grow(&sp->buf, &sp->buf_cap, sbn__spec_words(n)))
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the %zu-word buffers of "
                          "the speculative merge", sbn__spec_words(n));
    return SBN_OK;
}

/* 1 when a and b are agreed merges of the same call (op, count, tag, element size). */
static int same_call(const sbn__spec_record *a, const sbn__spec_record *b)
{
    return a->valid && b->valid && a->n == b->n && a->hdr[SBN_HDR_OP] == b->hdr[SBN_HDR_OP] &&
           a->hdr[SBN_HDR_COUNT] == b->hdr[SBN_HDR_COUNT] &&
           a->hdr[SBN_HDR_TAG] == b->hdr[SBN_HDR_TAG] &&
           a->hdr[SBN_HDR_ELEM] == b->hdr[SBN_HDR_ELEM];
}

int sbn__spec_armed(sbn__spec *sp)
{
    int p;
    sp->guess = -1;
    for (p = 1; p <= SBN_SPEC_MAX_PERIOD; p++) {
        /* the last two collectives repeat the two p before them: the next repeats p back */
        if (same_call(back(sp, 0), back(sp, p)) && same_call(back(sp, 1), back(sp, p + 1))) {
            sp->guess = (int)(back(sp, p - 1) - sp->rec);
            sp->period = p;
            return 1;
        }
    }
    return 0;
}

size_t sbn__spec_guess_n(const sbn__spec *sp)
{
    return sp->rec[sp->guess].n;
}

/* 1 when this rank's call is the guessed merge, its step d from the guess's (0 <= d < 2^11)
 * and every top at most the guessed one. */
static int fits(const sbn__spec_record *g, int period, const int64_t *mine, const int64_t *tops,
                size_t count, int64_t *d)
{
    uint64_t step = (uint64_t)mine[SBN_HDR_STEP] - (uint64_t)g->hdr[SBN_HDR_STEP];
    size_t i;
    if (mine[SBN_HDR_OP] != g->hdr[SBN_HDR_OP] || mine[SBN_HDR_COUNT] != g->hdr[SBN_HDR_COUNT] ||
        mine[SBN_HDR_TAG] != g->hdr[SBN_HDR_TAG] || mine[SBN_HDR_ELEM] != g->hdr[SBN_HDR_ELEM] ||
        (uint64_t)mine[SBN_HDR_SEQ] != (uint64_t)g->hdr[SBN_HDR_SEQ] + (uint64_t)period || count != g->n ||
        step >= (UINT64_C(1) << SBN_SPEC_STEP_BITS))
        return 0;
    for (i = 0; i < count; i++)
        if (tops[i] > g->tops[i]) return 0;
    *d = (int64_t)step;
    return 1;
}

void sbn__spec_fill(sbn__spec *sp, const int64_t *mine, const void *data, const int64_t *tops,
                    size_t count)
{
    const sbn__spec_record *g = &sp->rec[sp->guess];
    size_t m = sbn__spec_words(g->n), reach = g->n * SBN_RSUM_INT_WORDS, i;
    int64_t *w = sp->buf, d = 0;
    memset(w, 0, m * sizeof *w);
    if (data == NULL || !fits(g, sp->period, mine, tops, count, &d)) return; /* fits = 0 */
    sbn__rsum_pack(data, count, g->tops, w);
    for (i = 0; i < count; i++)
        if (tops[i] == g->tops[i])
            w[reach + i / 3] += (int64_t)1 << (SBN_SPEC_FIELD_BITS * (int)(i % 3));
    w[m - 3] = 1;
    w[m - 2] = d;
    w[m - 1] = d * d;
}

int sbn__spec_verdict(sbn__spec *sp, int size, void *data)
{
    const sbn__spec_record *g = &sp->rec[sp->guess];
    const uint64_t field = (UINT64_C(1) << SBN_SPEC_FIELD_BITS) - 1;
    size_t m = sbn__spec_words(g->n), reach = g->n * SBN_RSUM_INT_WORDS, i;
    const int64_t *w = sp->buf;
    if (w[m - 3] != size || (int64_t)size * w[m - 1] != w[m - 2] * w[m - 2]) return 0;
    for (i = 0; i < g->n; i++)
        if ((((uint64_t)w[reach + i / 3] >> (SBN_SPEC_FIELD_BITS * (i % 3))) & field) == 0)
            return 0; /* no rank reached the guessed top: the maximum is lower */
    sbn__rsum_unpack(data, g->n, g->tops, w);
    return 1;
}

void sbn__spec_record_start(sbn__spec *sp, const int64_t *hdr, size_t n)
{
    sbn__spec_record *r;
    sp->newest = (sp->newest + 1) % SBN_SPEC_RECORDS; /* over the oldest */
    r = back(sp, 0);
    r->valid = 0;
    r->n = n;
    if (hdr != NULL) memcpy(r->hdr, hdr, sizeof r->hdr);
}

void sbn__spec_record_tops(sbn__spec *sp, const int64_t *tops, size_t n)
{
    sbn__spec_record *r = back(sp, 0);
    if (r->n != n || n > r->cap) return;
    if (r->tops != tops) memcpy(r->tops, tops, n * sizeof *tops);
    r->valid = 1;
}

void sbn__spec_forget(sbn__spec *sp)
{
    int k;
    for (k = 0; k < SBN_SPEC_RECORDS; k++) sp->rec[k].valid = 0;
}

void sbn__spec_free(sbn__spec *sp)
{
    int k;
    for (k = 0; k < SBN_SPEC_RECORDS; k++) sbn__free(sp->rec[k].tops);
    sbn__free(sp->buf);
    memset(sp, 0, sizeof *sp);
}
