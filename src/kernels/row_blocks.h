/*
 * row_blocks.h - the blocks of rows the SIMD row reductions take (rows_avx2.c,
 * rows_avx512.c). Rows go in blocks (a multiple of 16 rows); within a block, lane
 * (lane + q) % 16 takes rows q, q + 16, ... of the block in order, so every lane still
 * adds its rows in increasing order. No row is read twice; the block sets how many rows
 * a lane adds per load and store of its accumulators (block / 16) and how many rows (of
 * each tensor) are read side by side: 8 streams suit the hardware prefetchers. The
 * forward reads x alone and takes 128 rows, 8 streams (256 gains nothing at 64 channels
 * and loses on wider rows); the backward reads dy and x, so 64 rows make its 8 streams
 * (bench_kernels row reductions from DRAM). Rows narrower than the ISA's group of
 * channels held in registers (32 for AVX-512, 16 for AVX2) go four lanes at a time, four
 * adjacent rows a step, and take 512 rows: 32 rows a lane per load and store of its
 * accumulators, where 128 rows gave 8 and the loads and stores cost as much as the rows
 * (bench_ops 16384x16 and 32x3x224x224 NHWC; 1024 rows gained nothing more).
 */
#ifndef SBN_ROW_BLOCKS_H
#define SBN_ROW_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define SBN_ROW_BLOCK 128
#define SBN_ROW_BLOCK_BWD 64
#define SBN_ROW_BLOCK_NARROW 512

/* The block of a row reduction: backward or forward, rows narrower than a group or not. */
static inline size_t sbn__row_block(int bwd, int narrow)
{
    return narrow ? SBN_ROW_BLOCK_NARROW : bwd ? SBN_ROW_BLOCK_BWD : SBN_ROW_BLOCK;
}

/* The number of rows of a block of nb rows that fall to offset q < 16. */
static inline size_t sbn__lane_rows(size_t nb, size_t q)
{
    return (nb - q + SBN_LANES - 1) / SBN_LANES;
}

/*
 * Prefetch (to L2) of lane q's share of the block after the one at row r: rows
 * r + block + q * block / 16 onwards, block / 16 of them (those below `rows`), row_bytes
 * each, rows `stride` bytes apart. A block's rows are read a lane at a time, 16 rows
 * apart, an order the hardware prefetchers follow poorly when rows are short; prefetched
 * a lane's share at a time while that lane is added, the next block arrives in memory
 * order. A line shared by neighbouring rows (rows narrower than a line) is asked for once.
 * The SIMD row reductions call it for tensors beyond the cache (their _pf entry points).
 */
static inline void sbn__prefetch_next_block(const void *x, int64_t stride, size_t row_bytes,
                                            size_t rows, size_t block, size_t r, size_t q)
{
    size_t u = r + block + q * (block / SBN_LANES), end = u + block / SBN_LANES;
    uintptr_t done = 0; /* the last line asked for */
    if (end > rows) end = rows;
    for (; u < end; u++) {
        const char *p = (const char *)x + (int64_t)u * stride;
        uintptr_t o = (uintptr_t)p & ~(uintptr_t)63, stop = (uintptr_t)p + row_bytes;
        for (o = o == done ? o + 64 : o; o < stop; o += 64) {
            __builtin_prefetch((const void *)o, 0, 2); /* prefetcht1: to L2 */
            done = o;
        }
    }
}

#endif /* SBN_ROW_BLOCKS_H */
