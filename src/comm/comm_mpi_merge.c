/*
 * comm_mpi_merge.c - the MPI objects of the MPI backend's merge allreduce
 * (comm_mpi_merge.h): per handle one MPI_Op (MPI_Op_create with commute = 1, so
 * MPI may use any of its algorithms: the merge is exact) and one datatype per
 * (elem_bytes, merge) pair (MPI_Type_contiguous(elem_bytes, MPI_BYTE),
 * committed), and the staging buffer. MPI calls a user op as fn(in, inout, len,
 * datatype) with no context pointer, so the merge is found from the datatype: a
 * process-wide registry (a small array under a mutex, freed when empty) maps each
 * datatype handle created here to its merge function, and the op's function looks
 * up the handle it is given (MPI passes the datatype of the call). A handle
 * value is unique while its datatype lives, and an entry leaves the registry
 * before its datatype is freed. A datatype whose handle abandoned a request is
 * never freed, nor unregistered: MPI may still reduce with it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "comm_mpi_merge.h"
#include "core/alloc.h"
#include "core/status.h"

/* ---- the registry: datatype handle -> merge ---- */

typedef struct registry_entry {
    MPI_Datatype type;
    sbn_comm_merge_fn merge;
} registry_entry;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static registry_entry *registry;
static int registry_n, registry_cap;

static int registry_add(MPI_Datatype type, sbn_comm_merge_fn merge)
{
    int ok = 1;
    pthread_mutex_lock(&registry_lock);
    if (registry_n == registry_cap) {
        int cap = registry_cap ? 2 * registry_cap : 8;
        registry_entry *p = sbn__malloc((size_t)cap * sizeof *p);
        if (p == NULL) {
            ok = 0;
        } else {
            if (registry_n > 0) memcpy(p, registry, (size_t)registry_n * sizeof *p);
            sbn__free(registry);
            registry = p;
            registry_cap = cap;
        }
    }
    if (ok) {
        registry[registry_n].type = type;
        registry[registry_n].merge = merge;
        registry_n++;
    }
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

static void registry_remove(MPI_Datatype type)
{
    int i;
    pthread_mutex_lock(&registry_lock);
    for (i = 0; i < registry_n; i++) {
        if (registry[i].type != type) continue;
        registry[i] = registry[--registry_n];
        break;
    }
    if (registry_n == 0) { /* nothing left: no allocation outlives the handles */
        sbn__free(registry);
        registry = NULL;
        registry_cap = 0;
    }
    pthread_mutex_unlock(&registry_lock);
}

static sbn_comm_merge_fn registry_find(MPI_Datatype type)
{
    sbn_comm_merge_fn merge = NULL;
    int i;
    pthread_mutex_lock(&registry_lock);
    for (i = 0; i < registry_n && merge == NULL; i++)
        if (registry[i].type == type) merge = registry[i].merge;
    pthread_mutex_unlock(&registry_lock);
    return merge;
}

/* The MPI_User_function of every handle's op: inout = in (+) inout, *len elements. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    sbn_comm_merge_fn merge = registry_find(*type);
    if (merge == NULL) { /* MPI reduced with a datatype syncbn did not give it: cannot go on */
        fprintf(stderr, "syncbn: the MPI merge allreduce's op was called with a datatype it "
                "does not know; aborting\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
        return;
    }
    if (*len > 0) merge(inout, in, (size_t)*len);
}

/* ---- per handle ---- */

void sbn__mpi_merge_init(sbn__mpi_merge *m)
{
    memset(m, 0, sizeof *m);
    m->op = MPI_OP_NULL;
    m->request = MPI_REQUEST_NULL;
}

MPI_Datatype sbn__mpi_merge_type_of(const sbn__mpi_merge *m, size_t elem_bytes,
                                    sbn_comm_merge_fn merge)
{
    int i;
    for (i = 0; i < m->ntypes; i++)
        if (m->types[i].elem_bytes == elem_bytes && m->types[i].merge == merge)
            return m->types[i].type;
    return MPI_DATATYPE_NULL;
}

static sbn_status mpi_failed(int code, const char *call)
{
    char text[MPI_MAX_ERROR_STRING + 64];
    sbn__mpi_text(code, text, sizeof text);
    return sbn__error(SBN_ERR_COMM, "%s failed: %s", call, text);
}

/* A new committed, registered datatype for (elem_bytes, merge), appended to m->types. */
static sbn_status add_type(sbn__mpi_merge *m, size_t elem_bytes, sbn_comm_merge_fn merge)
{
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int rc;
    if (m->ntypes == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        sbn__mpi_merge_type *p = sbn__malloc((size_t)cap * sizeof *p);
        if (p == NULL)
            return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the datatype table of "
                              "the MPI merge allreduce");
        if (m->ntypes > 0) memcpy(p, m->types, (size_t)m->ntypes * sizeof *p);
        sbn__free(m->types);
        m->types = p;
        m->cap = cap;
    }
    rc = MPI_Type_contiguous((int)elem_bytes, MPI_BYTE, &type);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&type);
    if (rc != MPI_SUCCESS) {
        if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
        return mpi_failed(rc, "creating the MPI datatype of the merge allreduce");
    }
    if (!registry_add(type, merge)) {
        MPI_Type_free(&type);
        return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the registry of the MPI "
                          "merge allreduce's datatypes");
    }
    m->types[m->ntypes].elem_bytes = elem_bytes;
    m->types[m->ntypes].merge = merge;
    m->types[m->ntypes].type = type;
    m->ntypes++;
    return SBN_OK;
}

sbn_status sbn__mpi_merge_prepare(sbn__mpi_merge *m, size_t count, size_t elem_bytes,
                                  sbn_comm_merge_fn merge)
{
    size_t bytes;
    int rc;
    if (count > (size_t)INT_MAX || elem_bytes > (size_t)INT_MAX)
        return sbn__error(SBN_ERR_BAD_VALUE, "%s %zu is above INT_MAX: MPI_Iallreduce takes an "
                          "int count of a datatype of an int number of bytes",
                          count > (size_t)INT_MAX ? "count" : "elem_bytes",
                          count > (size_t)INT_MAX ? count : elem_bytes);
    bytes = count * elem_bytes; /* fits: the generic layer checked */
    if (bytes > SIZE_MAX / 2)
        return sbn__error(SBN_ERR_BAD_VALUE, "the two staging buffers of %zu bytes of an MPI "
                          "merge allreduce overflow the address space", bytes);
    if (2 * bytes > m->stage_bytes) {
        unsigned char *p = sbn__malloc(2 * bytes);
        if (p == NULL)
            return sbn__error(SBN_ERR_OUT_OF_MEMORY, "could not allocate the 2 x %zu-byte staging "
                              "buffer of an MPI merge allreduce", bytes);
        sbn__free(m->stage);
        m->stage = p;
        m->stage_bytes = 2 * bytes;
    }
    if (m->op == MPI_OP_NULL) {
        rc = MPI_Op_create(merge_op, 1, &m->op);
        if (rc != MPI_SUCCESS) {
            m->op = MPI_OP_NULL;
            return mpi_failed(rc, "MPI_Op_create of the merge allreduce");
        }
    }
    if (sbn__mpi_merge_type_of(m, elem_bytes, merge) != MPI_DATATYPE_NULL) return SBN_OK;
    return add_type(m, elem_bytes, merge);
}

void sbn__mpi_merge_release(sbn__mpi_merge *m, int mpi_alive)
{
    int i;
    if (m->abandoned) return;
    for (i = 0; i < m->ntypes; i++) {
        registry_remove(m->types[i].type);
        if (mpi_alive) MPI_Type_free(&m->types[i].type);
    }
    if (mpi_alive && m->op != MPI_OP_NULL) MPI_Op_free(&m->op);
    sbn__free(m->types);
    sbn__free(m->stage);
    sbn__mpi_merge_init(m);
}
