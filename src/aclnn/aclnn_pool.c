/*
 * aclnn_pool.c - the one thread pool every aclnn op of the process runs on. It is
 * created on first use (the first op's phase 2, or aclrtSetDevice) with a size
 * chosen in this order: the "syncbn": {"num_threads": N} key of the aclInit
 * config file, else sbn_pool_default_threads(): the SBN_NUM_THREADS environment
 * variable (1..1024, read by libsyncbn; any other value is ignored with a warning),
 * else the number of CPUs in the process's affinity mask, at most its cgroup's CPU
 * quota and its share of the machine among the local ranks of its job. A phase 2 holds
 * the pool for reading while it runs (a pthread rwlock); aclInit with a new size and
 * aclFinalize take it for writing, so the pool is only replaced or
 * destroyed when no op is using it. Several host threads may run ops at once: the
 * native pool (sbn_pool_t) serialises their parallel loops on its run lock,
 * and since a loop's result never depends on which thread ran which index, every
 * op gives the same bits as when run alone, with any pool size. A forked child
 * drops the parent's pool (its worker threads do not exist there) and builds its
 * own. A phase 2 takes the pool when its op first asks for it (sbn__acl_run_pool,
 * per thread), so an op that computes nothing never creates it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "aclnn_internal.h"

#define MAX_POOL_THREADS 1024 /* sbn_pool_create's limit */

static pthread_rwlock_t g_pool_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static sbn_pool_t *g_pool;     /* NULL: not created, or serial (one thread) */
static int g_pool_threads;     /* threads of g_pool; 0: not decided yet */
static int g_config_threads;   /* from aclInit's config file; 0: not set */
/* The running phase 2 of this thread: inside one, and holding the pool (read lock). */
static _Thread_local int g_run_active, g_run_held;
static _Thread_local sbn_pool_t *g_run_pool;

/* The child of a fork has none of the parent's worker threads: forget the pool there. */
static void forget_pool_in_child(void)
{
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    g_pool_lock = fresh;
    g_pool = NULL; /* its memory belongs to threads that do not exist here: leaked on purpose */
    g_pool_threads = 0;
    g_run_pool = NULL;
    g_run_held = 0;
    g_run_active = 0;
}

static void install_atfork(void)
{
    pthread_atfork(NULL, NULL, forget_pool_in_child);
}

int sbn__acl_pool_default_threads(void)
{
    int n = g_config_threads > 0 ? g_config_threads : sbn_pool_default_threads();
    return n > MAX_POOL_THREADS ? MAX_POOL_THREADS : n;
}

/* Under the write lock: makes the pool exist with its default size. When its threads
 * cannot be made the ops of this call run serially, and the next use tries again. */
static void create_locked(void)
{
    int n;
    if (g_pool_threads > 0) return;
    n = sbn__acl_pool_default_threads();
    g_pool = NULL;
    if (n > 1 && sbn_pool_create(n, &g_pool) != SBN_OK) {
        g_pool = NULL;
        return;
    }
    g_pool_threads = n;
}

/* Under the write lock: destroys the pool; the next use creates it again. */
static void drop_locked(void)
{
    sbn_pool_destroy(g_pool);
    g_pool = NULL;
    g_pool_threads = 0;
}

sbn_pool_t *sbn__acl_pool_acquire(void)
{
    pthread_once(&g_atfork_once, install_atfork);
    pthread_rwlock_rdlock(&g_pool_lock);
    if (g_pool_threads > 0) return g_pool;
    pthread_rwlock_unlock(&g_pool_lock);
    pthread_rwlock_wrlock(&g_pool_lock);
    create_locked();
    pthread_rwlock_unlock(&g_pool_lock);
    pthread_rwlock_rdlock(&g_pool_lock);
    return g_pool; /* NULL when it could not be made (or was dropped meanwhile): serial */
}

void sbn__acl_pool_release(void)
{
    pthread_rwlock_unlock(&g_pool_lock);
}

void sbn__acl_pool_warm(void)
{
    sbn__acl_pool_acquire();
    sbn__acl_pool_release();
}

void sbn__acl_pool_configure(int threads)
{
    pthread_once(&g_atfork_once, install_atfork);
    pthread_rwlock_wrlock(&g_pool_lock);
    if (threads != g_config_threads) {
        g_config_threads = threads;
        drop_locked(); /* sized again at the next use */
    }
    pthread_rwlock_unlock(&g_pool_lock);
}

void sbn__acl_pool_shutdown(void)
{
    pthread_once(&g_atfork_once, install_atfork);
    pthread_rwlock_wrlock(&g_pool_lock);
    g_config_threads = 0;
    drop_locked();
    pthread_rwlock_unlock(&g_pool_lock);
}

int sbn__acl_pool_threads(void)
{
    int n;
    sbn__acl_pool_acquire();
    n = g_pool_threads;
    sbn__acl_pool_release();
    return n > 0 ? n : 1;
}

void sbn__acl_run_begin(void)
{
    g_run_active = 1;
}

sbn_pool_t *sbn__acl_run_pool(void)
{
    if (!g_run_active) return NULL; /* not inside a phase 2: serial */
    if (!g_run_held) {
        g_run_pool = sbn__acl_pool_acquire();
        g_run_held = 1;
    }
    return g_run_pool;
}

void sbn__acl_run_end(void)
{
    if (g_run_held) sbn__acl_pool_release();
    g_run_held = 0;
    g_run_active = 0;
    g_run_pool = NULL;
}
