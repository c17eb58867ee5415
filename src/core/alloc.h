/*
 * alloc.h - the library's own allocations (alloc.c), which go through the functions
 * sbn_set_allocator installed (malloc and free by default), so that a caller or a test
 * injecting failures sees every allocation. Ops never allocate; objects such as pools do.
 */
#ifndef SBN_CORE_ALLOC_H
#define SBN_CORE_ALLOC_H

#include <stddef.h>

void *sbn__malloc(size_t bytes);
void *sbn__calloc(size_t count, size_t size);
void sbn__free(void *ptr);

#endif /* SBN_CORE_ALLOC_H */
