/*
 * nt_store.h - the switch of the streaming map builds, shared by the AVX2 and
 * AVX-512 maps: stream_map_nt_<isa>.c defines SBN_MAP_NT to 1 and includes the
 * map file again, which then writes whole aligned vectors with non-temporal stores
 * (around the caches: no read for ownership, no write-back later). Every other
 * build sees SBN_MAP_NT = 0 and these helpers fold away. A run's first elements
 * up to the store alignment are mapped apart (sbn_nt_head). Non-temporal stores are
 * weakly ordered: the caller fences once after its calls, before another thread may
 * read the output (channel_map.c, at the end of each task): a fence drains the
 * write-combining buffers, too slow to pay per call on 7x7 planes (64x2048x7x7).
 */
#ifndef SBN_NT_STORE_H
#define SBN_NT_STORE_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SBN_MAP_NT
#define SBN_MAP_NT 0
#endif

/* Whether a store of `bytes` (a power of two) at p streams: only when SBN_MAP_NT and aligned. */
static inline int sbn_nt_aligned(const void *p, uintptr_t bytes)
{
    return SBN_MAP_NT && ((uintptr_t)p & (bytes - 1)) == 0;
}

/* The elements (of es bytes) of a run before its output y reaches an `align`-byte
 * boundary, at most n; 0 unless streaming (or when y is not even element-aligned). */
static inline size_t sbn_nt_head(const void *y, size_t es, size_t n, size_t align)
{
    size_t mis = (size_t)((uintptr_t)y & (align - 1)), h;
    if (!SBN_MAP_NT || mis % es != 0) return 0;
    h = ((align - mis) & (align - 1)) / es;
    return h < n ? h : n;
}

#endif /* SBN_NT_STORE_H */
