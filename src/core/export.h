/*
 * export.h - SBN_API, the mark on the definition of every public sbn_* function:
 * default visibility while the library is built (everything else is compiled with
 * -fvisibility=hidden, so internal sbn__* names never reach the export table), and
 * nothing in any other build. Every module that defines a public function includes it.
 */
#ifndef SBN_CORE_EXPORT_H
#define SBN_CORE_EXPORT_H

#if defined(SBN_BUILDING_LIBRARY) && defined(__GNUC__)
#define SBN_API __attribute__((visibility("default")))
#else
#define SBN_API
#endif

#endif /* SBN_CORE_EXPORT_H */
