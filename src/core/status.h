/*
 * status.h - the thread-local error report behind sbn_last_error() (status.c): every
 * public entry point clears it first, and a failure records one sentence naming the
 * argument, shape or value at fault together with the status it returns.
 */
#ifndef SBN_CORE_STATUS_H
#define SBN_CORE_STATUS_H

#include "syncbn/syncbn.h"

/* Clears the calling thread's error text; every public entry point calls it first. */
void sbn__clear_error(void);
/* Records a printf-style sentence for sbn_last_error() and returns `status`. */
sbn_status sbn__error(sbn_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SBN_CORE_STATUS_H */
