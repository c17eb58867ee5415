/*
 * acl_config.c - reads the JSON file given to aclInit. The whole file must be one
 * valid JSON value (RFC 8259: objects, arrays, strings with their escapes,
 * numbers, true/false/null; nesting up to 64 levels; at most 1 MiB); syncbn reads
 * one key, {"syncbn": {"num_threads": N}} at the top level, N a whole number from
 * 1 to 1024, the size of the thread pool of the aclnn ops. Every other key (CANN's
 * dump, profiling, ... settings) is accepted and ignored, as they have no CPU
 * meaning. Codes, as CANN's aclInit: a path that cannot be opened ->
 * ACL_ERROR_INVALID_FILE, an empty file -> success (no setting), text that is not
 * JSON or a file over the size limit -> ACL_ERROR_PARSE_FILE, a "syncbn" value that
 * is not an object or a "num_threads" that is not a whole number 1..1024 ->
 * ACL_ERROR_FILE_ATTR_INVALID; each with a message naming the file and the place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

#define CONFIG_MAX_BYTES (1L << 20)
#define CONFIG_MAX_DEPTH 64

typedef struct json_reader {
    const char *text;
    size_t pos, len;
    const char *error; /* why the text is not JSON */
    /* what was found */
    int depth;
    int threads;           /* 0: not given */
    const char *bad_value; /* why the syncbn settings are invalid */
} json_reader;

static void skip_space(json_reader *r)
{
    while (r->pos < r->len && (r->text[r->pos] == ' ' || r->text[r->pos] == '\t' ||
                               r->text[r->pos] == '\n' || r->text[r->pos] == '\r'))
        r->pos++;
}

static int fail(json_reader *r, const char *why)
{
    if (r->error == NULL) r->error = why;
    return 0;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at r->pos; its raw contents (escapes not decoded) in [*start, *start + *n). */
static int read_string(json_reader *r, size_t *start, size_t *n)
{
    if (r->pos >= r->len || r->text[r->pos] != '"') return fail(r, "a string was expected");
    r->pos++;
    *start = r->pos;
    while (r->pos < r->len) {
        unsigned char c = (unsigned char)r->text[r->pos];
        if (c == '"') {
            *n = r->pos - *start;
            r->pos++;
            return 1;
        }
        if (c < 0x20) return fail(r, "a control character inside a string");
        if (c == '\\') {
            char e;
            if (++r->pos >= r->len) break;
            e = r->text[r->pos];
            if (e == 'u') {
                int k;
                for (k = 1; k <= 4; k++)
                    if (r->pos + (size_t)k >= r->len || !is_hex(r->text[r->pos + (size_t)k]))
                        return fail(r, "a bad \\u escape");
                r->pos += 4;
            } else if (strchr("\"\\/bfnrt", e) == NULL || e == '\0') {
                return fail(r, "a bad escape in a string");
            }
        }
        r->pos++;
    }
    return fail(r, "a string is not closed");
}

/* A number; *whole = its value when it is an integer of at most 9 digits, else -1. */
static int read_number(json_reader *r, long *whole)
{
    size_t digits = 0, begin = r->pos;
    int integral = 1;
    if (r->pos < r->len && r->text[r->pos] == '-') r->pos++;
    if (r->pos < r->len && r->text[r->pos] == '0') {
        r->pos++;
        digits = 1;
    } else {
        while (r->pos < r->len && r->text[r->pos] >= '0' && r->text[r->pos] <= '9') {
            r->pos++;
            digits++;
        }
    }
    if (digits == 0) return fail(r, "a value was expected");
    if (r->pos < r->len && r->text[r->pos] == '.') {
        size_t frac = 0;
        integral = 0;
        for (r->pos++; r->pos < r->len && r->text[r->pos] >= '0' && r->text[r->pos] <= '9';
             r->pos++)
            frac++;
        if (frac == 0) return fail(r, "a number has no digits after '.'");
    }
    if (r->pos < r->len && (r->text[r->pos] == 'e' || r->text[r->pos] == 'E')) {
        size_t exp = 0;
        integral = 0;
        r->pos++;
        if (r->pos < r->len && (r->text[r->pos] == '+' || r->text[r->pos] == '-')) r->pos++;
        for (; r->pos < r->len && r->text[r->pos] >= '0' && r->text[r->pos] <= '9'; r->pos++)
            exp++;
        if (exp == 0) return fail(r, "a number has no exponent digits");
    }
    *whole = -1;
    if (integral && digits <= 9) *whole = strtol(r->text + begin, NULL, 10);
    return 1;
}

static int read_literal(json_reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->text + r->pos, word, n) != 0)
        return fail(r, "a value was expected");
    r->pos += n;
    return 1;
}

static int read_value(json_reader *r, int where);

/* Where a value sits: decides which values syncbn reads. */
enum { AT_OTHER, AT_TOP, AT_SYNCBN, AT_NUM_THREADS };

static int key_is(const json_reader *r, size_t start, size_t n, const char *key)
{
    return n == strlen(key) && memcmp(r->text + start, key, n) == 0;
}

static int read_object(json_reader *r, int where)
{
    r->pos++; /* '{' */
    skip_space(r);
    if (r->pos < r->len && r->text[r->pos] == '}') {
        r->pos++;
        return 1;
    }
    for (;;) {
        size_t start, n;
        int child = AT_OTHER;
        skip_space(r);
        if (!read_string(r, &start, &n)) return 0;
        if (where == AT_TOP && key_is(r, start, n, "syncbn")) child = AT_SYNCBN;
        if (where == AT_SYNCBN && key_is(r, start, n, "num_threads")) child = AT_NUM_THREADS;
        skip_space(r);
        if (r->pos >= r->len || r->text[r->pos] != ':') return fail(r, "':' was expected");
        r->pos++;
        if (!read_value(r, child)) return 0;
        skip_space(r);
        if (r->pos < r->len && r->text[r->pos] == ',') {
            r->pos++;
            continue;
        }
        if (r->pos < r->len && r->text[r->pos] == '}') {
            r->pos++;
            return 1;
        }
        return fail(r, "',' or '}' was expected");
    }
}

static int read_array(json_reader *r)
{
    r->pos++; /* '[' */
    skip_space(r);
    if (r->pos < r->len && r->text[r->pos] == ']') {
        r->pos++;
        return 1;
    }
    for (;;) {
        if (!read_value(r, AT_OTHER)) return 0;
        skip_space(r);
        if (r->pos < r->len && r->text[r->pos] == ',') {
            r->pos++;
            continue;
        }
        if (r->pos < r->len && r->text[r->pos] == ']') {
            r->pos++;
            return 1;
        }
        return fail(r, "',' or ']' was expected");
    }
}

static int read_value(json_reader *r, int where)
{
    int ok;
    char c;
    skip_space(r);
    if (r->pos >= r->len) return fail(r, "the text ends where a value was expected");
    c = r->text[r->pos];
    if (where == AT_SYNCBN && c != '{') r->bad_value = "\"syncbn\" must be an object";
    if (where == AT_NUM_THREADS && (c < '0' || c > '9'))
        r->bad_value = "\"num_threads\" must be a whole number from 1 to 1024";
    if (c == '{' || c == '[') {
        if (++r->depth > CONFIG_MAX_DEPTH) return fail(r, "nesting is deeper than 64 levels");
        ok = c == '{' ? read_object(r, where) : read_array(r);
        r->depth--;
        return ok;
    }
    if (c == '"') {
        size_t start, n;
        return read_string(r, &start, &n);
    }
    if (c == 't') return read_literal(r, "true");
    if (c == 'f') return read_literal(r, "false");
    if (c == 'n') return read_literal(r, "null");
    {
        long whole;
        if (!read_number(r, &whole)) return 0;
        if (where == AT_NUM_THREADS) {
            if (whole >= 1 && whole <= 1024)
                r->threads = (int)whole;
            else
                r->bad_value = "\"num_threads\" must be a whole number from 1 to 1024";
        }
        return 1;
    }
}

aclError sbn__acl_read_config(const char *op, const char *path, int *threads)
{
    FILE *f;
    char *text;
    long size;
    size_t got;
    json_reader r;
    *threads = 0;
    if (path == NULL || path[0] == '\0') return ACL_SUCCESS;
    f = fopen(path, "rb");
    if (f == NULL)
        return sbn__acl_fail(ACL_ERROR_INVALID_FILE, op, "config file \"%s\" cannot be opened",
                             path);
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return sbn__acl_fail(ACL_ERROR_INVALID_FILE, op, "config file \"%s\" cannot be read",
                             path);
    }
    if (size == 0) {
        fclose(f);
        return ACL_SUCCESS; /* as CANN: an empty file sets nothing */
    }
    if (size > CONFIG_MAX_BYTES) {
        fclose(f);
        return sbn__acl_fail(ACL_ERROR_PARSE_FILE, op,
                             "config file \"%s\" has %ld bytes; at most %ld are read", path,
                             size, CONFIG_MAX_BYTES);
    }
    text = (char *)sbn_malloc((size_t)size);
    if (text == NULL) {
        fclose(f);
        return sbn__acl_fail(ACL_ERROR_BAD_ALLOC, op, "out of memory reading \"%s\"", path);
    }
    got = fread(text, 1, (size_t)size, f);
    fclose(f);
    memset(&r, 0, sizeof r);
    r.text = text;
    r.len = got;
    if (read_value(&r, AT_TOP)) {
        skip_space(&r);
        if (r.pos != r.len) fail(&r, "text follows the JSON value");
    }
    sbn_free(text);
    if (r.error != NULL)
        return sbn__acl_fail(ACL_ERROR_PARSE_FILE, op,
                             "config file \"%s\" is not valid JSON: %s at byte %zu", path,
                             r.error, r.pos);
    if (r.bad_value != NULL)
        return sbn__acl_fail(ACL_ERROR_FILE_ATTR_INVALID, op, "config file \"%s\": %s", path,
                             r.bad_value);
    *threads = r.threads;
    return ACL_SUCCESS;
}
