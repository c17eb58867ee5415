/*
 * aclnn_executor.c - the aclOpExecutor of the two-phase protocol and the public
 * executor calls. Phase 1 of an op creates an executor (an object of the shared
 * registry, aclnn_handles.c; the caller gets its handle), adds the native views of its tensor
 * arguments and hands it out; sbn__acl_exec_build does all of that from the op's
 * argument list and records, per argument of the op's signature, the slot its
 * view went to (-1 for an absent one), which phase 2 reads back with
 * sbn__acl_arg. Every tensor is checked against its storage first
 * (sbn__acl_check_storage), and phase 2 checks each view again at the address it
 * has then (set later by aclSet*TensorAddr), before anything is read or written.
 * Phase 2 (sbn__acl_exec_run) looks the handle up
 * in the registry, so a handle that was already run, destroyed, discarded or
 * never created is refused with a status and never dereferenced. A
 * non-repeatable executor is taken out of the registry before it runs (so two
 * threads cannot run it twice) and freed after; a repeatable one stays until
 * aclDestroyAclOpExecutor, which defers the free while a run is in progress.
 * aclSetInputTensorAddr/aclSetOutputTensorAddr/aclSetTensorAddr count the
 * present tensors in the op's signature order: among the inputs, among the
 * outputs, or over all of them (inputs first, then outputs, as CANN's
 * aclSetTensorAddr page numbers them). As in CANN, where the executor reads the
 * aclTensor itself, the new address is written into `tensor` and every view made
 * from that tensor is refreshed, keeping its view offset; the index is checked
 * against the count only. Codes: unknown executor in repeatable/destroy ->
 * 561000 (what CANN's libnnopbase returns for a pointer without an executor
 * magic), NULL there -> 561103; in phase 2 NULL -> 161001, unknown -> 561103,
 * another op's executor or a short workspace -> 161002 (left alive for a retry).
 * Handles are never reused, so a stale handle stays dead even when its memory now
 * holds a newer executor. A slot records the tensor's handle (not its object), so a
 * tensor destroyed after phase 1 is never read again.
 */
#include <stdint.h>
#include <string.h>

#include "aclnn_internal.h"

#define SBN_ACL_EXEC_MAGIC 0x53424e4558454355ull /* "SBNEXECU" */
#define SBN_ACL_EXEC_DEAD 0x4445414445584543ull  /* "DEADEXEC" */

/* The registry object; `ex` (its first member) is what the op's run function sees. */
typedef struct exec_node {
    struct aclOpExecutor ex;
    int busy;   /* runs of a repeatable executor in progress */
    int doomed; /* destroyed while busy: the last run frees it */
} exec_node;

/* The node of a live executor handle, or NULL; the caller holds the registry lock. */
static exec_node *find_locked(const aclOpExecutor *handle)
{
    return (exec_node *)sbn__acl_object_find_locked(handle, SBN_ACL_KIND_EXECUTOR);
}

static void unlink_locked(exec_node *n)
{
    sbn__acl_object_unlink_locked(n);
}

/* Records that executor is not registered; returns code (which differs by caller). */
static aclnnStatus not_live(aclnnStatus code, const char *op, const aclOpExecutor *executor)
{
    return sbn__acl_fail(code, op,
                         "executor %p is not a live executor (already run, destroyed, or never "
                         "created)",
                         (const void *)executor);
}

static void free_node(exec_node *n)
{
    n->ex.magic = SBN_ACL_EXEC_DEAD;
    sbn__acl_object_free(n);
}

aclOpExecutor *sbn__acl_exec_create(const char *op, sbn__acl_run_fn run, uint64_t workspace_size)
{
    exec_node *n = (exec_node *)sbn__acl_object_new(SBN_ACL_KIND_EXECUTOR, sizeof *n);
    if (n == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory while creating the executor");
        return NULL;
    }
    n->ex.magic = SBN_ACL_EXEC_MAGIC;
    n->ex.op = op;
    n->ex.run = run;
    n->ex.workspace_size = workspace_size;
    return &n->ex;
}

aclOpExecutor *sbn__acl_exec_handle(const aclOpExecutor *executor)
{
    return (aclOpExecutor *)sbn__acl_object_handle(executor);
}

void sbn__acl_exec_discard(aclOpExecutor *executor)
{
    exec_node *n;
    if (executor == NULL) return;
    sbn__acl_registry_lock();
    n = find_locked(executor);
    if (n != NULL) unlink_locked(n);
    sbn__acl_registry_unlock();
    if (n != NULL) free_node(n);
}

/* Bytes of t's storage (the product of its storage dims); -1 when that does not fit. */
static int64_t storage_bytes(const aclTensor *t, sbn_dtype dtype)
{
    int64_t bytes = (int64_t)sbn_dtype_size(dtype);
    uint64_t d;
    for (d = 0; d < t->storage_ndim; d++)
        if (!sbn__acl_mul_i64(bytes, t->storage_dims[d], &bytes)) return -1;
    return bytes;
}

int sbn__acl_exec_add(aclOpExecutor *executor, const aclTensor *t, sbn_tensor view, int is_output)
{
    int slot;
    size_t elem;
    if (executor == NULL || t == NULL || executor->ntensors >= SBN_ACL_EXEC_MAX_TENSORS) return -1;
    slot = executor->ntensors++;
    executor->views[slot] = view;
    executor->sources[slot] = (const aclTensor *)sbn__acl_object_handle(t);
    executor->names[slot] = is_output ? "an output" : "an input";
    executor->storage_bytes[slot] = storage_bytes(t, view.dtype);
    executor->is_output[slot] = is_output ? 1 : 0;
    if (t->data != NULL && view.data != NULL) {
        executor->view_offset_bytes[slot] = (int64_t)((uintptr_t)view.data - (uintptr_t)t->data);
    } else {
        elem = sbn_dtype_size(view.dtype);
        if (!sbn__acl_mul_i64(t->offset, (int64_t)elem, &executor->view_offset_bytes[slot]))
            executor->view_offset_bytes[slot] = -1; /* refused by the phase-2 storage check */
    }
    return slot;
}

sbn_tensor *sbn__acl_exec_view(aclOpExecutor *executor, int slot)
{
    if (executor == NULL || slot < 0 || slot >= executor->ntensors) return NULL;
    return &executor->views[slot];
}

sbn_tensor *sbn__acl_arg(aclOpExecutor *executor, int k)
{
    if (executor == NULL || k < 0 || k >= executor->nargs) return NULL;
    return sbn__acl_exec_view(executor, executor->arg_slots[k]);
}

aclnnStatus sbn__acl_exec_build(const char *op, const sbn__acl_exec_spec *spec,
                                uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclOpExecutor *e;
    int k;
    /* the bounded-view rule for every tensor argument, before anything is built */
    for (k = 0; k < spec->count; k++) {
        const aclTensor *t = spec->on == NULL || spec->on[k] ? spec->tensors[k] : NULL;
        if (t != NULL)
            SBN_ACL_TRY(sbn__acl_check_storage(op, t, spec->names ? spec->names[k] : "a tensor"));
    }
    e = sbn__acl_exec_create(op, spec->run, spec->workspace_size);
    if (e == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    for (k = 0; k < spec->count; k++) {
        /* an argument that is off (a disabled output) is added as absent */
        const aclTensor *t = spec->on == NULL || spec->on[k] ? spec->tensors[k] : NULL;
        sbn_tensor view = sbn__acl_view(t, (int)((spec->channels_last >> k) & 1u));
        int slot = sbn__acl_exec_add(e, t, view, k >= spec->first_output);
        if ((t != NULL && slot < 0) || k >= SBN_ACL_EXEC_MAX_TENSORS) {
            sbn__acl_exec_discard(sbn__acl_exec_handle(e));
            return sbn__acl_fail(ACLNN_ERR_INNER, op, "the executor has no room for the tensors");
        }
        if (slot >= 0 && spec->names != NULL) e->names[slot] = spec->names[k];
        e->arg_slots[k] = slot;
    }
    e->nargs = spec->count;
    memcpy(e->scalars, spec->scalars, sizeof e->scalars);
    memcpy(e->ints, spec->ints, sizeof e->ints);
    *workspaceSize = spec->workspace_size;
    *executor = sbn__acl_exec_handle(e);
    return ACLNN_SUCCESS;
}

/*
 * Phase 2's bounded-view rule for slot: the view at its current address reaches
 * only bytes of its tensor's storage, [data, data + storage bytes), where data is
 * the view's address less its offset; all in checked arithmetic.
 */
static aclnnStatus check_slot_storage(const char *op, const aclOpExecutor *e, int slot)
{
    const sbn_tensor *v = &e->views[slot];
    const char *name = e->names[slot] ? e->names[slot] : "a tensor";
    char shape[160], strides[220];
    uintptr_t base, end;
    sbn__acl_extent x;
    sbn__acl_extent_result r;
    int64_t off = e->view_offset_bytes[slot], bytes = e->storage_bytes[slot];
    size_t elem = sbn_dtype_size(v->dtype);
    if (v->data == NULL) return ACLNN_SUCCESS; /* the native op reports the NULL data */
    r = sbn__acl_view_extent(v, &x);
    if (r == SBN_ACL_EXTENT_EMPTY) return ACLNN_SUCCESS;
    /* alignment before any access: the op's own reads (a counter summed here) and an op of
     * several native calls come before the native checks of the later calls */
    if (elem > 1 && (uintptr_t)v->data % elem != 0)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s's data %p is not aligned to its element size (%s, %zu bytes); "
                             "views must start on a multiple of the element size",
                             name, v->data, sbn_dtype_name(v->dtype), elem);
    if (r == SBN_ACL_EXTENT_OK && off >= 0 && bytes >= 0 && (uint64_t)off <= (uintptr_t)v->data) {
        base = (uintptr_t)v->data - (uintptr_t)off;
        if ((uint64_t)bytes <= UINTPTR_MAX - base) {
            end = base + (uintptr_t)bytes;
            if (x.byte_lo >= base && x.byte_hi <= end) return ACLNN_SUCCESS;
        }
    }
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has view shape %s and strides %s at %p (offset %lld bytes into its "
                         "storage of %lld bytes): the view reaches outside its storage%s",
                         name, sbn__acl_dims_str(v->shape, v->rank, shape, sizeof shape),
                         sbn__acl_dims_str(v->strides, v->rank, strides, sizeof strides), v->data,
                         (long long)off, (long long)bytes,
                         r == SBN_ACL_EXTENT_OVERFLOW ? " (its byte range overflows 64 bits)"
                                                      : "");
}

aclnnStatus sbn__acl_exec_run(const char *op, void *workspace, uint64_t workspace_size,
                              aclOpExecutor *executor, aclrtStream stream)
{
    exec_node *n;
    aclnnStatus status;
    int repeatable, slot;
    if (executor == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "executor is NULL");
    /* phase 2 computes at the call on the process's pool; NULL is the default stream, a
     * destroyed one is refused (the executor stays alive) */
    if (sbn__acl_check_stream(op, stream, ACLNN_ERR_PARAM_INVALID) != ACL_SUCCESS)
        return ACLNN_ERR_PARAM_INVALID;
    sbn__acl_registry_lock();
    n = find_locked(executor);
    if (n == NULL) {
        sbn__acl_registry_unlock();
        return not_live(ACLNN_ERR_INNER_NULLPTR, op, executor);
    }
    if (n->ex.op == NULL || op == NULL || strcmp(n->ex.op, op) != 0) {
        const char *owner = n->ex.op ? n->ex.op : "(unknown op)";
        sbn__acl_registry_unlock();
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "executor %p was created by %sGetWorkspaceSize, not by "
                             "%sGetWorkspaceSize",
                             (void *)executor, owner, op ? op : "(unknown op)");
    }
    if (n->ex.workspace_size > 0 && (workspace == NULL || workspace_size < n->ex.workspace_size)) {
        uint64_t promised = n->ex.workspace_size;
        sbn__acl_registry_unlock();
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "workspace %p of %llu bytes is smaller than the %llu bytes that "
                             "%sGetWorkspaceSize asked for",
                             workspace, (unsigned long long)workspace_size,
                             (unsigned long long)promised, op);
    }
    repeatable = n->ex.repeatable;
    if (repeatable)
        n->busy++;
    else
        unlink_locked(n); /* claimed: no other call can find it from now on */
    sbn__acl_registry_unlock();

    status = ACLNN_SUCCESS;
    for (slot = 0; slot < n->ex.ntensors && status == ACLNN_SUCCESS; slot++)
        status = check_slot_storage(op, &n->ex, slot);
    if (status != ACLNN_SUCCESS)
        ; /* refused: nothing was read or written */
    else if (n->ex.run != NULL) {
        sbn__acl_run_begin(); /* the op takes the process's pool with sbn__acl_run_pool */
        status = n->ex.run(&n->ex, workspace, workspace_size);
        sbn__acl_run_end();
    } else
        status = sbn__acl_fail(ACLNN_ERR_INNER, op, "executor %p has nothing to run",
                               (void *)executor);

    if (!repeatable) {
        free_node(n);
    } else {
        int free_now;
        sbn__acl_registry_lock();
        n->busy--;
        free_now = n->doomed && n->busy == 0;
        sbn__acl_registry_unlock();
        if (free_now) free_node(n);
    }
    return status;
}

/* ---- public executor calls ---- */

SBN_ACL_API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)
{
    static const char *op = "aclSetAclOpExecutorRepeatable";
    exec_node *n;
    if (executor == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "executor is NULL");
    sbn__acl_registry_lock();
    n = find_locked(executor);
    if (n != NULL) n->ex.repeatable = 1;
    sbn__acl_registry_unlock();
    if (n == NULL) return not_live(ACLNN_ERR_INNER, op, executor);
    return ACLNN_SUCCESS;
}

SBN_ACL_API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    static const char *op = "aclDestroyAclOpExecutor";
    exec_node *n;
    int free_now = 0;
    if (executor == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "executor is NULL");
    sbn__acl_registry_lock();
    n = find_locked(executor);
    if (n != NULL) {
        unlink_locked(n);
        if (n->busy > 0)
            n->doomed = 1;
        else
            free_now = 1;
    }
    sbn__acl_registry_unlock();
    if (n == NULL) return not_live(ACLNN_ERR_INNER, op, executor);
    if (free_now) free_node(n);
    return ACLNN_SUCCESS;
}

typedef enum addr_scope { SCOPE_INPUT, SCOPE_OUTPUT, SCOPE_ALL } addr_scope;

/* The shared body of the three aclSet*TensorAddr calls. */
static aclnnStatus set_addr(const char *op, aclOpExecutor *executor, size_t index,
                            aclTensor *tensor, void *addr, addr_scope scope)
{
    static const char *const scope_names[] = {"input", "output", "tensor"};
    exec_node *n;
    aclTensor *t;
    int slot, count = 0, found = -1;
    if (executor == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "executor is NULL");
    if (tensor == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "tensor is NULL");
    sbn__acl_registry_lock();
    t = (aclTensor *)sbn__acl_object_find_locked(tensor, SBN_ACL_KIND_TENSOR);
    if (t == NULL) {
        sbn__acl_registry_unlock();
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "tensor %p is not a live aclTensor (destroyed, or not made by "
                             "aclCreateTensor)",
                             (void *)tensor);
    }
    n = find_locked(executor);
    if (n == NULL) {
        sbn__acl_registry_unlock();
        return not_live(ACLNN_ERR_INNER_NULLPTR, op, executor);
    }
    /* Inputs come before outputs in SCOPE_ALL, each group in signature (add) order. */
    if (scope != SCOPE_OUTPUT)
        for (slot = 0; slot < n->ex.ntensors; slot++)
            if (!n->ex.is_output[slot] && (size_t)count++ == index) found = slot;
    if (scope != SCOPE_INPUT)
        for (slot = 0; slot < n->ex.ntensors; slot++)
            if (n->ex.is_output[slot] && (size_t)count++ == index) found = slot;
    if (found < 0) {
        const char *owner = n->ex.op ? n->ex.op : "(unknown op)";
        sbn__acl_registry_unlock();
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "index %zu is out of range: the executor of %s has %d %s%s "
                             "(absent optional tensors are not counted)",
                             index, owner, count, scope_names[scope], count == 1 ? "" : "s");
    }
    t->data = addr;
    for (slot = 0; slot < n->ex.ntensors; slot++) {
        if (n->ex.sources[slot] != tensor) continue;
        n->ex.views[slot].data =
            addr ? (void *)((uintptr_t)addr + (uintptr_t)n->ex.view_offset_bytes[slot]) : NULL;
    }
    sbn__acl_registry_unlock();
    return ACLNN_SUCCESS;
}

SBN_ACL_API aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                          aclTensor *tensor, void *addr)
{
    return set_addr("aclSetInputTensorAddr", executor, index, tensor, addr, SCOPE_INPUT);
}

SBN_ACL_API aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                           aclTensor *tensor, void *addr)
{
    return set_addr("aclSetOutputTensorAddr", executor, index, tensor, addr, SCOPE_OUTPUT);
}

SBN_ACL_API aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index,
                                     aclTensor *tensor, void *addr)
{
    return set_addr("aclSetTensorAddr", executor, index, tensor, addr, SCOPE_ALL);
}
