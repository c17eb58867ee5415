/*
 * stream_map_nt_avx512.c - the AVX-512 elementwise maps once more, writing their
 * output with non-temporal stores: the entry points sbn_<dt>_<map>_ukernel__avx512_nt
 * of kernels.h. The code is stream_map_avx512.c's, built with SBN_MAP_NT = 1 (that
 * file says what changes); the values, hence the bits, are those of the cached maps.
 * For outputs far larger than the last-level cache: a cached store first reads the
 * line it writes (for ownership) and later writes it back, 2 bytes of memory traffic
 * per byte written, a non-temporal one writes it once.
 */
#define SBN_MAP_NT 1
#include "kernels/x86/stream_map_avx512.c"
