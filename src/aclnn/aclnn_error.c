/*
 * aclnn_error.c - the calling thread's recent error message for the aclnn layer
 * and the acl runtime, read with aclGetRecentErrMsg(). A failure records one
 * sentence "<op>: <what was wrong>"; sbn__acl_clear_error() forgets it (the aclnn
 * op entry points call it first, per the internal contract). As in CANN,
 * aclGetRecentErrMsg() returns and clears the message: the text is moved to a
 * second per-thread buffer, so the returned pointer stays valid until the next
 * aclGetRecentErrMsg() call on the same thread, whatever fails in between, and
 * a second call with nothing new recorded returns NULL. CANN stacks several
 * messages when they are not fetched; here the newest one replaces the older.
 * Native failures are mapped to aclnn codes with sbn_last_error()'s sentence
 * (a misaligned or too large view is a parameter error, 161002).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define SBN_ACL_ERROR_TEXT_SIZE 1024

static _Thread_local char g_recent[SBN_ACL_ERROR_TEXT_SIZE];
static _Thread_local char g_returned[SBN_ACL_ERROR_TEXT_SIZE];

void sbn__acl_clear_error(void)
{
    g_recent[0] = '\0';
}

aclnnStatus sbn__acl_fail(aclnnStatus code, const char *op, const char *fmt, ...)
{
    va_list ap;
    int used = snprintf(g_recent, sizeof g_recent, "%s: ", op ? op : "aclnn");
    if (used < 0) used = 0;
    if ((size_t)used < sizeof g_recent) {
        va_start(ap, fmt);
        vsnprintf(g_recent + used, sizeof g_recent - (size_t)used, fmt, ap);
        va_end(ap);
    }
    return code;
}

aclnnStatus sbn__acl_from_native(sbn_status status, const char *op)
{
    aclnnStatus code;
    const char *why = sbn_last_error();
    if (!SBN_FAILED(status)) return ACLNN_SUCCESS;
    switch (status) {
    case SBN_ERR_NULL_ARGUMENT:
        code = ACLNN_ERR_PARAM_NULLPTR;
        break;
    case SBN_ERR_OUT_OF_MEMORY:
        code = ACLNN_ERR_INNER;
        break;
    case SBN_ERR_MISALIGNED: /* the caller's data or view: a parameter */
    case SBN_ERR_TOO_LARGE:
        code = ACLNN_ERR_PARAM_INVALID;
        break;
    default:
        code = ACLNN_ERR_PARAM_INVALID;
        break;
    }
    if (why == NULL || why[0] == '\0') why = sbn_status_str(status);
    return sbn__acl_fail(code, op, "%s (%s)", why, sbn_status_name(status));
}

SBN_ACL_API const char *aclGetRecentErrMsg(void)
{
    if (g_recent[0] == '\0') return NULL;
    memcpy(g_returned, g_recent, sizeof g_returned);
    g_recent[0] = '\0';
    return g_returned;
}
