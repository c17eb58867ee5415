/*
 * rng.h - the deterministic random source of the kernel tests (test_kernels*.c,
 * test_kernels_stream*.c): support.c's splitmix64 over a per-program state seeded with
 * TSUP_RNG_SEED, which the including file defines first, and the draws built on it
 * (uniform, below, a random sign), plus the bit views of a double. Header-only with
 * static state, so each test program keeps its own seed and sequence; the harness runs
 * every case in a fresh child, so every case starts from the seed.
 */
#ifndef SBN_TEST_RNG_H
#define SBN_TEST_RNG_H

#include <stdint.h>
#include <string.h>

#include "support/support.h"

#ifndef TSUP_RNG_SEED
#error "define TSUP_RNG_SEED before including support/rng.h"
#endif

static tsup_rng g_rng = {TSUP_RNG_SEED};

static inline uint64_t next_u64(void)
{
    return tsup_next_u64(&g_rng);
}

static inline uint32_t next_u32(void)
{
    return (uint32_t)(next_u64() >> 32);
}

static inline double uniform(void) /* [0, 1) */
{
    return (double)(next_u64() >> 11) * 0x1.0p-53;
}

static inline int below(int n)
{
    return (int)(uniform() * n);
}

static inline double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double random_sign(double v)
{
    return next_u64() & 1 ? -v : v;
}

#endif /* SBN_TEST_RNG_H */
