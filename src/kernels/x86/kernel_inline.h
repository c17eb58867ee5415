/*
 * kernel_inline.h - SBN_KERNEL_INLINE, how the SIMD kernels' helpers are inlined. The
 * helpers take the element type, the group width and the mode as parameters and every
 * kernel passes constants, so in an optimised build they are forced inline and each
 * kernel compiles to straight-line code for its case. Under AddressSanitizer, which
 * expands each masked load and store into a check per element, forcing the same helpers
 * into the dozens of kernels a file defines multiplies those checks until compiling one
 * file takes minutes (docs/building.md); there the helpers are plain static inline and
 * the compiler weighs each call. The operations and their order are the same either way,
 * hence the same bits.
 */
#ifndef SBN_KERNEL_INLINE_H
#define SBN_KERNEL_INLINE_H

#if defined(__has_feature) /* clang before 17 does not define __SANITIZE_ADDRESS__ */
#if __has_feature(address_sanitizer)
#define SBN_KERNELS_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SBN_KERNELS_UNDER_ASAN)
#define SBN_KERNELS_UNDER_ASAN 1
#endif

#ifdef SBN_KERNELS_UNDER_ASAN
#define SBN_KERNEL_INLINE static inline
#else
#define SBN_KERNEL_INLINE static inline __attribute__((always_inline))
#endif

#endif
