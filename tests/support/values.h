/*
 * values.h - header-only test values for the communicator tests: a value that
 * depends on (rank, index, salt) with magnitudes spread over 2^-20..2^20, so
 * that a sum over ranks depends on its order. Header-only (static inline) so
 * that tests/mpi/test_mpi_comm.c, which does not link sbn_testlib, shares it
 * with test_comm_threads.c.
 */
#ifndef SBN_TEST_VALUES_H
#define SBN_TEST_VALUES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* A value that depends on (rank, i, salt), with magnitudes spread so the sum order matters. */
static inline double tsup_spread_value(int rank, size_t i, int salt)
{
    uint64_t x = (uint64_t)rank * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull +
                 (uint64_t)salt * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return ldexp((double)(x >> 11) / 9007199254740992.0 - 0.5, (int)(x % 41) - 20);
}

#endif /* SBN_TEST_VALUES_H */
