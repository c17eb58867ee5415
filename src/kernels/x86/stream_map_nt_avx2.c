/*
 * stream_map_nt_avx2.c - the AVX2 elementwise maps once more, writing their output
 * with non-temporal stores: the entry points sbn_<dt>_<map>_ukernel__avx2_nt of
 * kernels.h. The code is stream_map_avx2.c's (and io_avx2.h's stores), built with
 * SBN_MAP_NT = 1; the values, hence the bits, are those of the cached maps. For
 * outputs far larger than the last-level cache, as stream_map_nt_avx512.c.
 */
#define SBN_MAP_NT 1
#include "kernels/x86/stream_map_avx2.c"
