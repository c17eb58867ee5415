/*
 * status.c - the status table's names and descriptions, generated from the one
 * X-macro table in syncbn.h, and the calling thread's last error sentence.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/export.h"
#include "core/status.h"
#include "syncbn/syncbn.h"

#define SBN_ERROR_TEXT_SIZE 512

static _Thread_local char g_last_error[SBN_ERROR_TEXT_SIZE];

SBN_API const char *sbn_status_name(sbn_status status)
{
    switch (status) {
#define SBN_STATUS_NAME_ROW(name, value, text) \
    case name: return #name;
        SBN_STATUS_TABLE(SBN_STATUS_NAME_ROW)
#undef SBN_STATUS_NAME_ROW
    }
    return "SBN_UNKNOWN_STATUS";
}

SBN_API const char *sbn_status_str(sbn_status status)
{
    switch (status) {
#define SBN_STATUS_TEXT_ROW(name, value, text) \
    case name: return text;
        SBN_STATUS_TABLE(SBN_STATUS_TEXT_ROW)
#undef SBN_STATUS_TEXT_ROW
    }
    return "unknown status";
}

SBN_API const char *sbn_last_error(void)
{
    return g_last_error;
}

void sbn__clear_error(void)
{
    g_last_error[0] = '\0';
}

sbn_status sbn__error(sbn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    return status;
}

SBN_API const char *sbn_version(void)
{
#define SBN_STR2(x) #x
#define SBN_STR(x) SBN_STR2(x)
    return SBN_STR(SBN_VERSION_MAJOR) "." SBN_STR(SBN_VERSION_MINOR) "." SBN_STR(SBN_VERSION_PATCH);
#undef SBN_STR
#undef SBN_STR2
}
