/*
 * merge_words.h - the exact test merge shared by the merge-allreduce tests
 * (tests/test_comm_merge.c on threads and callbacks, tests/mpi/test_mpi_merge.c
 * under mpirun). An element is `words` uint64 words; word j of an element merges
 * by j % 4: 0 wrapping sum, 1 max, 2 xor, 3 sum (of ones, so it counts the ranks).
 * Every operation is exactly associative and commutative, so any tree must give
 * the bytes of the serial merge; a missed, doubled or misplaced element changes
 * the sums and the counts. Inputs are hashes of (rank, index, salt), with 1 in
 * the counting words. Header-only (static inline), so each test links it alone.
 */
#ifndef SBN_TEST_MERGE_WORDS_H
#define SBN_TEST_MERGE_WORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t mw_hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull + b * 0xBF58476D1CE4E5B9ull + c * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return x;
}

/* inout (+)= in over `count` elements of `words` words (unaligned buffers allowed). */
static inline void mw_merge(void *inout, const void *in, size_t count, size_t words)
{
    unsigned char *o = inout;
    const unsigned char *p = in;
    size_t i, j;
    for (i = 0; i < count * words; i++) {
        uint64_t a, b;
        memcpy(&a, o + 8 * i, 8);
        memcpy(&b, p + 8 * i, 8);
        j = i % words;
        a = j % 4 == 1 ? (a > b ? a : b) : j % 4 == 2 ? a ^ b : a + b;
        memcpy(o + 8 * i, &a, 8);
    }
}

/* Rank r's input: count elements of elem bytes; `salt` tells the collectives apart. */
static inline void mw_fill_input(unsigned char *buf, int rank, size_t count, size_t elem,
                                 uint64_t salt)
{
    size_t i;
    for (i = 0; i < count * elem / 8; i++) {
        uint64_t v = i % (elem / 8) % 4 == 3 ? 1 : mw_hash3((uint64_t)rank, i, salt);
        memcpy(buf + 8 * i, &v, 8);
    }
}

#endif /* SBN_TEST_MERGE_WORDS_H */
