/*
 * env.h - the SBN_* environment variables the library reads, parsed by one parser
 * (env.c) into one struct, once per process: the first call that needs any of them
 * reads them all (thread-safe), and later changes to the environment are not seen.
 * Each variable is parsed strictly and bounded; surrounding blanks are allowed and a
 * blank value means unset. A tuning switch with a bad value (SBN_ONE_PASS_BYTES,
 * SBN_STREAM_STORES, SBN_ROW_TILES, SBN_FORCE_SCALAR, SBN_NUM_THREADS) is ignored:
 * its default applies and one warning naming it and its value goes to stderr. A bad
 * SBN_COMM_TIMEOUT is refused: every communicator creation that would use it fails
 * with SBN_ERR_BAD_VALUE and the variable's message. The library's code and the
 * `syncbn` command read these fields, never getenv.
 */
#ifndef SBN_CORE_ENV_H
#define SBN_CORE_ENV_H

#include <stddef.h>
#include <stdint.h>

/* The bounds of the numeric variables. */
#define SBN_ENV_MAX_ONE_PASS_BYTES ((int64_t)1 << 40) /* 1 TiB: far above any L2 */
#define SBN_ENV_MAX_THREADS 1024
#define SBN_COMM_DEFAULT_TIMEOUT 60.0 /* seconds, when SBN_COMM_TIMEOUT is unset */
#define SBN_COMM_MAX_TIMEOUT 1e8      /* about three years: keeps a deadline representable */

typedef enum sbn__env_id {
    SBN_ENV_ONE_PASS_BYTES,
    SBN_ENV_STREAM_STORES,
    SBN_ENV_ROW_TILES,
    SBN_ENV_FORCE_SCALAR,
    SBN_ENV_NUM_THREADS,
    SBN_ENV_COMM_TIMEOUT,
    SBN_ENV_COUNT
} sbn__env_id;

#define SBN_ENV_TEXT 72     /* bytes kept of a value for messages (longer ones end in "...") */
#define SBN_ENV_MESSAGE 256 /* bytes of an invalid value's sentence */

/* What was found for one variable. */
typedef struct sbn__env_var {
    const char *name;              /* "SBN_ONE_PASS_BYTES", ... */
    int set;                       /* present and not blank */
    int valid;                     /* set, well formed and within its bounds */
    char text[SBN_ENV_TEXT];       /* the value as given (unprintable bytes as '?') */
    char message[SBN_ENV_MESSAGE]; /* when set and not valid: names it, its value, the form */
} sbn__env_var;

/* The values the library uses: each is its default when the variable is unset or invalid. */
typedef struct sbn__env {
    int64_t one_pass_bytes; /* -1: the size rule; 0: off; else bytes ("l2": half the L2) */
    int stream_stores;      /* -1: by size; 0 never; 1 always */
    int row_tiles;          /* -1: by size; 0 never; 1 always */
    int force_scalar;       /* 1: the scalar kernels */
    int num_threads;        /* 0: the CPUs of the affinity mask; else 1..SBN_ENV_MAX_THREADS */
    double comm_timeout;    /* 0: SBN_COMM_DEFAULT_TIMEOUT; else seconds, capped */
    sbn__env_var var[SBN_ENV_COUNT];
} sbn__env;

/* The parsed environment (read on the first call). */
const sbn__env *sbn__env_get(void);

/* Reads the environment again (tests, after setenv; not while another thread uses
 * the library). Prints the warnings of the new values as on the first read. */
void sbn__env_reload(void);

/* A whole decimal number of digits only (no sign, no blanks), at most hi, into *out: 1;
 * else 0 and *out untouched. The parser of the SBN_* counts, and of the numbers the
 * cgroup files and the launchers' variables hold (cgroup_cpus.c, local_ranks.c). */
int sbn__parse_whole(const char *s, int64_t hi, int64_t *out);

/*
 * One variable's state in words into buf (always NUL-terminated): "unset (<default>)",
 * the parsed value with its meaning, or "invalid: <message>; <ignored: default |
 * refused>". For `syncbn info`.
 */
void sbn__env_describe(const sbn__env *env, sbn__env_id id, char *buf, size_t size);

#endif /* SBN_CORE_ENV_H */
