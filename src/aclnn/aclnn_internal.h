/*
 * aclnn_internal.h - what the files of libsyncbn_acl (the CANN-compatible acl and
 * aclnn API) share: the layout of the aclnn objects, the per-thread recent error
 * message, the checks in CANN's order (null, dtype, format, shape) with CANN's
 * status codes, the conversion of an aclTensor to a native sbn_tensor view, the
 * executor with its registry and per-argument slot table, the steps every op file
 * repeats (SBN_ACL_TRY, the eps/momentum/workspaceSize/executor checks, the workspace
 * size, default vectors, phase 2), and the few arithmetic helpers the layer needs
 * (checked int64 arithmetic, a view's extent, fp16). The layer is a client of
 * libsyncbn: it includes only the public include/syncbn headers and this directory's
 * own files, never libsyncbn's internals, and it validates and maps while every
 * number is computed by the native ops.
 */
#ifndef SBN_ACLNN_INTERNAL_H
#define SBN_ACLNN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "aclnn/acl_meta.h"
#include "syncbn/ops.h"
#include "syncbn/syncbn.h"

/* The acl and aclnn entry points are the library's exports; everything else is hidden
 * (the library is compiled with -fvisibility=hidden). */
#define SBN_ACL_API __attribute__((visibility("default")))

/* ---- checked arithmetic and views (aclnn_extent.c) ---- */
/* *out = a * b, a + b; 0 when the result does not fit (then *out is unspecified). */
static inline int sbn__acl_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline int sbn__acl_add_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline int sbn__acl_add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/*
 * Where a native view lies: the element offsets it reaches, lo..hi (inclusive,
 * lo = the sum of the negative (shape - 1) * stride, hi the sum of the positive
 * ones), and its bytes [byte_lo, byte_hi) from its data pointer.
 */
typedef struct sbn__acl_extent {
    int64_t lo, hi;
    uintptr_t byte_lo, byte_hi;
} sbn__acl_extent;
typedef enum sbn__acl_extent_result {
    SBN_ACL_EXTENT_EMPTY = 0,    /* a dim is 0: the view reaches no element */
    SBN_ACL_EXTENT_OK = 1,
    SBN_ACL_EXTENT_OVERFLOW = -1 /* an offset or an address does not fit */
} sbn__acl_extent_result;
/* The extent of v (rank 0..SBN_MAX_RANK, a known dtype), in overflow-checked arithmetic. */
sbn__acl_extent_result sbn__acl_view_extent(const sbn_tensor *v, sbn__acl_extent *e);
/* "[2, 3]" of n values into buf ("(rank n)" for a negative n). */
const char *sbn__acl_dims_str(const int64_t *v, int64_t n, char *buf, size_t size);

/* Largest view rank aclCreateTensor accepts (ops accept 2..8 and reject the rest with 161002). */
#define SBN_ACL_MAX_CREATE_DIMS 64

#define SBN_ACL_TENSOR_MAGIC 0x53424e54454e5352ull /* "SBNTENSR" */

struct aclTensor {
    uint64_t magic;
    aclDataType dtype;
    aclFormat format;
    uint64_t ndim;
    int64_t dims[SBN_ACL_MAX_CREATE_DIMS];
    int64_t strides[SBN_ACL_MAX_CREATE_DIMS];
    int64_t offset;
    uint64_t storage_ndim;
    int64_t storage_dims[SBN_ACL_MAX_CREATE_DIMS];
    void *data;
};

/* ---- the other objects (aclnn_objects.c) ---- */
#define SBN_ACL_SCALAR_MAGIC 0x53424e5343414c52ull      /* "SBNSCALR" */
#define SBN_ACL_INT_ARRAY_MAGIC 0x53424e494e544152ull   /* "SBNINTAR" */
#define SBN_ACL_FLOAT_ARRAY_MAGIC 0x53424e464c544152ull /* "SBNFLTAR" */
#define SBN_ACL_BOOL_ARRAY_MAGIC 0x53424e424f4f4c41ull  /* "SBNBOOLA" */
#define SBN_ACL_TENSOR_LIST_MAGIC 0x53424e544c495354ull /* "SBNTLIST" */

/* A host value of dtype, copied at creation (bytes as the caller's value held them). */
struct aclScalar {
    uint64_t magic;
    aclDataType dtype;
    union {
        unsigned char bytes[16];
        double align_as_double;
        int64_t align_as_int64;
    } value;
};

/* The arrays own a copy of their values; `values` points just past the header. */
struct aclIntArray {
    uint64_t magic;
    uint64_t size;
    int64_t *values;
};
struct aclFloatArray {
    uint64_t magic;
    uint64_t size;
    float *values;
};
struct aclBoolArray {
    uint64_t magic;
    uint64_t size;
    bool *values;
};
/* Owns its tensors, as in CANN: aclDestroyTensorList destroys them (entries may be NULL). */
struct aclTensorList {
    uint64_t magic;
    uint64_t size;
    aclTensor **tensors;
};

/* ---- the registry of live objects (aclnn_handles.c) ---- */
/*
 * What callers hold is a handle, never the object's address: an address in
 * reserved, inaccessible address space, unique for the life of the process. The
 * library's internal code works on objects; every public entry point turns the
 * handles it is given into objects first (sbn__acl_object_get, or
 * sbn__acl_resolve_tensors for an op's tensors) and never dereferences a handle.
 */
typedef enum sbn__acl_kind {
    SBN_ACL_KIND_TENSOR = 1,
    SBN_ACL_KIND_SCALAR,
    SBN_ACL_KIND_INT_ARRAY,
    SBN_ACL_KIND_FLOAT_ARRAY,
    SBN_ACL_KIND_BOOL_ARRAY,
    SBN_ACL_KIND_TENSOR_LIST,
    SBN_ACL_KIND_EXECUTOR,
    SBN_ACL_KIND_STREAM,
    SBN_ACL_KIND_CONTEXT,    /* acl_context.c */
    SBN_ACL_KIND_EVENT,      /* acl_stream.c */
    SBN_ACL_KIND_SCALAR_LIST /* acl_scalar_list.c */
} sbn__acl_kind;

/* A new zeroed object of `bytes` with a new handle; NULL when out of memory or handles. */
void *sbn__acl_object_new(sbn__acl_kind kind, size_t bytes);
/* The handle of a live object (what the caller is given). */
void *sbn__acl_object_handle(const void *obj);
/* The object of a live handle of `kind`; NULL for anything else. handle is never dereferenced. */
void *sbn__acl_object_get(const void *handle, sbn__acl_kind kind);
/* Unregisters the object of a live handle of `kind` and frees it; 1 when it was live. */
int sbn__acl_object_destroy(const void *handle, sbn__acl_kind kind);
/* For callers that need several steps atomically (the executor): the registry lock, */
void sbn__acl_registry_lock(void);
void sbn__acl_registry_unlock(void);
/* and under it: lookup, unregistering (the handle is dead from then on), then the free. */
void *sbn__acl_object_find_locked(const void *handle, sbn__acl_kind kind);
void sbn__acl_object_unlink_locked(void *obj);
void sbn__acl_object_free(void *obj);

/* 1 when t is a live tensor object (sbn__acl_resolve_tensors' dead stand-in is not). */
int sbn__acl_tensor_is_live(const aclTensor *t);
/* The tensor object of a live handle, else NULL. */
aclTensor *sbn__acl_tensor_of(const aclTensor *handle);
/*
 * out[k] = the object of handle[k] for an op's phase 1: NULL stays NULL (the NULL
 * checks report it), a handle that is not live becomes a read-only stand-in that
 * every tensor check refuses with 161002 ("not a live aclTensor").
 */
void sbn__acl_resolve_tensors(const aclTensor *const *handle, const aclTensor **out, int n);

/* ---- recent error message (aclnn_error.c) ---- */
/* Clears the calling thread's message; every aclnn entry point calls it first. */
void sbn__acl_clear_error(void);
/* Records "<op>: <sentence>" as the thread's recent message and returns code. */
aclnnStatus sbn__acl_fail(aclnnStatus code, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps a native status to an aclnn status (NULL -> 161001, other failures -> 161002,
 * out of memory -> 561000) and copies sbn_last_error() into the recent message. */
aclnnStatus sbn__acl_from_native(sbn_status status, const char *op);

/* Returns from the calling function with expr's status unless it is ACLNN_SUCCESS. */
#define SBN_ACL_TRY(expr)                                        \
    do {                                                         \
        aclnnStatus sbn_acl_try_ = (expr);                       \
        if (sbn_acl_try_ != ACLNN_SUCCESS) return sbn_acl_try_; \
    } while (0)

/* ---- checks in CANN's order (aclnn_check.c); each returns ACLNN_SUCCESS or records why ---- */
typedef struct sbn__acl_dtypes {
    const aclDataType *list;
    int count;
} sbn__acl_dtypes;

extern const sbn__acl_dtypes SBN_ACL_FLOATS;      /* FLOAT, FLOAT16, BF16 */
extern const sbn__acl_dtypes SBN_ACL_FLOAT_ONLY;  /* FLOAT */

const char *sbn__acl_dtype_name(aclDataType dtype);
const char *sbn__acl_format_name(aclFormat format);
/* 1 for ND, NCHW, NHWC, HWCN, NDHWC, NCDHW, NC, NCL. */
int sbn__acl_format_is_public(aclFormat format);
int64_t sbn__acl_numel(const aclTensor *t);
/* "[2, 3, 4]" */
const char *sbn__acl_shape_str(const aclTensor *t, char *buf, size_t size);

aclnnStatus sbn__acl_check_null(const char *op, const void *p, const char *name);
aclnnStatus sbn__acl_check_dtype(const char *op, const aclTensor *t, const char *name,
                                 const sbn__acl_dtypes *allowed);
/* 161002 for an NPU-private format. */
aclnnStatus sbn__acl_check_format(const char *op, const aclTensor *t, const char *name);
aclnnStatus sbn__acl_check_rank(const char *op, const aclTensor *t, const char *name, int lo,
                                int hi);
/* A 1-D tensor of length c. */
aclnnStatus sbn__acl_check_vector(const char *op, const aclTensor *t, const char *name,
                                  int64_t c);
/* Same view dims as ref. */
aclnnStatus sbn__acl_check_same_shape(const char *op, const aclTensor *t, const char *name,
                                      const aclTensor *ref, const char *ref_name);
/* Same dtype as ref ("... they must be equal"); t and ref are live (checked before). */
aclnnStatus sbn__acl_check_same_dtype(const char *op, const aclTensor *t, const char *name,
                                      const aclTensor *ref, const char *ref_name);
/* Same format as ref ("... they must be equal"); t and ref are live (checked before). */
aclnnStatus sbn__acl_check_same_format(const char *op, const aclTensor *t, const char *name,
                                       const aclTensor *ref, const char *ref_name);
/* 1 for NHWC and NDHWC, the formats whose channel is the last dim. */
int sbn__acl_format_is_channels_last(aclFormat format);
/* A 5-D tensor must be NCDHW or NDHWC (the rule of aclnnBatchNorm* on 950). */
aclnnStatus sbn__acl_check_5d_format(const char *op, const aclTensor *t, const char *name);
/*
 * *c = the channel count C of t, a live tensor of rank >= 2, which must not be 0.
 * by_format 0: C is dim 1 whatever the format; by_format 1: the last dim for
 * NHWC/NDHWC (sbn__acl_format_is_channels_last), dim 1 otherwise.
 */
aclnnStatus sbn__acl_check_channels(const char *op, const aclTensor *t, const char *name,
                                    int by_format, int64_t *c);

/*
 * The bounded-view rule, checked for every tensor an executor is built from (in
 * phase 1) and again for every view in phase 2: the elements the view (dims,
 * strides, offset) reaches lie inside its storage, the product of its storage
 * dims elements from the data pointer, and the storage's byte range fits in the
 * address space; all in overflow-checked arithmetic; data that is set is aligned to
 * the element size. 161002 otherwise, naming the argument, its view shape, strides
 * and offset, and the storage size. A view without elements touches nothing and
 * passes (alignment aside).
 */
aclnnStatus sbn__acl_check_storage(const char *op, const aclTensor *t, const char *name);

/* ---- native views (aclnn_view.c) ---- */
/* The native dtype of an aclDataType; 0 when there is none (out: *ok = 0). */
sbn_dtype sbn__acl_native_dtype(aclDataType dtype, int *ok);
/*
 * The native view of t: data + offset, dims and strides as given. When
 * channels_last is set and t has rank >= 3, the last dim is moved to dim 1 (for
 * NHWC/NDHWC tensors whose channel is the last dim).
 */
sbn_tensor sbn__acl_view(const aclTensor *t, int channels_last);
/* The same view without data (what the sizes of the native ops depend on). */
sbn_tensor sbn__acl_shape_view(const aclTensor *t, int channels_last);

/* ---- executor (aclnn_executor.c) ---- */
#define SBN_ACL_EXEC_MAX_TENSORS 16
#define SBN_ACL_EXEC_MAX_PARAMS 8 /* scalars[] and ints[] */

typedef aclnnStatus (*sbn__acl_run_fn)(aclOpExecutor *executor, void *workspace,
                                       uint64_t workspace_size);

/*
 * An executor holds everything phase 2 needs: the op, the native views of every
 * tensor argument (with the tensors they came from, so that aclSet*TensorAddr can
 * refresh addresses), scalars, and the workspace size promised in phase 1.
 * Tensors are numbered in the op's signature order among the present inputs
 * (input index) and among the present outputs (output index). An executor made by
 * sbn__acl_exec_build also maps each tensor argument of the op's signature (argument
 * k, present or not) to its slot: arg_slots[k], -1 for an absent one.
 */
struct aclOpExecutor {
    uint64_t magic;
    const char *op;
    sbn__acl_run_fn run;
    uint64_t workspace_size;
    int repeatable;
    int ntensors;
    sbn_tensor views[SBN_ACL_EXEC_MAX_TENSORS];
    const aclTensor *sources[SBN_ACL_EXEC_MAX_TENSORS]; /* the tensors' handles */
    int is_output[SBN_ACL_EXEC_MAX_TENSORS];
    int64_t view_offset_bytes[SBN_ACL_EXEC_MAX_TENSORS]; /* view data - tensor data */
    int64_t storage_bytes[SBN_ACL_EXEC_MAX_TENSORS];     /* the tensor's storage, -1: too large */
    const char *names[SBN_ACL_EXEC_MAX_TENSORS];         /* argument names for messages */
    int nargs;                               /* tensor arguments of the op's signature */
    int arg_slots[SBN_ACL_EXEC_MAX_TENSORS]; /* argument k -> its slot, -1 when absent */
    double scalars[SBN_ACL_EXEC_MAX_PARAMS];
    int64_t ints[SBN_ACL_EXEC_MAX_PARAMS];
};

/*
 * Creates and registers an executor for op and returns the object (its handle is
 * sbn__acl_exec_handle); NULL (with the recent message set) when out of memory. The
 * op's phase 1 fills it and hands its handle to the caller.
 */
aclOpExecutor *sbn__acl_exec_create(const char *op, sbn__acl_run_fn run, uint64_t workspace_size);
/* The handle of a live executor object (what callers and sbn__acl_exec_run take). */
aclOpExecutor *sbn__acl_exec_handle(const aclOpExecutor *executor);
/* Frees the executor of a handle that is not handed out (a later check failed); else nothing. */
void sbn__acl_exec_discard(aclOpExecutor *handle);
/*
 * Adds a tensor argument (t, a tensor object, may be NULL: an absent optional,
 * which gets slot -1); returns its slot, whose native view is executor->views[slot].
 */
int sbn__acl_exec_add(aclOpExecutor *executor, const aclTensor *t, sbn_tensor view,
                      int is_output);
/* The native view of a slot, or NULL for slot -1. */
sbn_tensor *sbn__acl_exec_view(aclOpExecutor *executor, int slot);
/* The native view of tensor argument k (signature order), or NULL when it is absent. */
sbn_tensor *sbn__acl_arg(aclOpExecutor *executor, int k);

/*
 * What phase 1 of an op hands to sbn__acl_exec_build once its checks passed (the
 * fields an op does not name with a designated initializer are 0).
 */
typedef struct sbn__acl_exec_spec {
    sbn__acl_run_fn run;
    uint64_t workspace_size;
    const aclTensor *const *tensors; /* the op's tensor arguments in signature order */
    const int *on;          /* NULL: all; on[k] == 0: tensor k is not an argument (a disabled
                               output, eval's saveMean/saveInvstd) and gets slot -1 */
    const char *const *names; /* the argument names, for messages (NULL: "a tensor") */
    int count;              /* number of tensor arguments, <= SBN_ACL_EXEC_MAX_TENSORS */
    int first_output;       /* tensors[first_output..count - 1] are the outputs */
    unsigned channels_last; /* bit k: tensor k's view moves its last dim to dim 1 */
    double scalars[SBN_ACL_EXEC_MAX_PARAMS];
    int64_t ints[SBN_ACL_EXEC_MAX_PARAMS];
} sbn__acl_exec_spec;

/*
 * The end of every phase 1: checks every present tensor against its storage
 * (sbn__acl_check_storage), creates the executor of op (561101 when that fails),
 * adds the present tensor arguments with their native views (sbn__acl_view),
 * fills the slot table, scalars and ints, and hands out *workspaceSize and
 * *executor (both non-NULL, checked before).
 */
aclnnStatus sbn__acl_exec_build(const char *op, const sbn__acl_exec_spec *spec,
                                uint64_t *workspaceSize, aclOpExecutor **executor);
/*
 * The whole of a phase 2: checks that executor is a live executor handle of `op`
 * (never dereferencing a pointer that is not registered), that the workspace is
 * large enough and that every view lies inside its storage at its current address,
 * runs it, and frees it unless it is repeatable.
 */
aclnnStatus sbn__acl_exec_run(const char *op, void *workspace, uint64_t workspace_size,
                              aclOpExecutor *executor, aclrtStream stream);

/* ---- the steps the op files share (aclnn_op_common.c) ---- */
/*
 * workspaceSize and executor must not be NULL (161001, workspaceSize first). CANN
 * does not check them (it would crash); neither is dereferenced here.
 */
aclnnStatus sbn__acl_check_out_args(const char *op, const uint64_t *workspaceSize,
                                    aclOpExecutor *const *executor);
/* The native rules, checked in phase 1: eps finite and >= 0, momentum in [0, 1] (161002). */
aclnnStatus sbn__acl_check_eps(const char *op, double eps);
aclnnStatus sbn__acl_check_momentum(const char *op, double momentum);

/* The native sbn_<op>_workspace_size signature. */
typedef sbn_status (*sbn__acl_size_fn)(const sbn_tensor *x, size_t *bytes);
/*
 * *bytes = what size_fn asks for the native view of t (channels_last as in
 * sbn__acl_view) without its data (sbn__acl_shape_view): the size depends on the
 * shape only, so t's data may still be NULL (CANN lets aclSet*TensorAddr set it
 * before phase 2); a native failure is mapped by sbn__acl_from_native.
 */
aclnnStatus sbn__acl_workspace_size(const char *op, sbn__acl_size_fn size_fn, const aclTensor *t,
                                    int channels_last, uint64_t *bytes);

/* Read-only [c] vectors of zeros and of ones: stride-0 F64 views of a constant. */
sbn_tensor sbn__acl_zeros(int64_t c);
sbn_tensor sbn__acl_ones(int64_t c);

/* A phase 2 with nothing to compute (an empty input, C == 0): success. */
aclnnStatus sbn__acl_run_nothing(aclOpExecutor *executor, void *workspace,
                                 uint64_t workspace_size);
/* An op's phase 2 entry point: clears the recent message, then sbn__acl_exec_run. */
aclnnStatus sbn__acl_phase2(const char *op, void *workspace, uint64_t workspace_size,
                            aclOpExecutor *executor, aclrtStream stream);

/* ---- runtime and threads (acl_runtime.c, acl_context.c, acl_stream.c, acl_config.c,
 * aclnn_pool.c) ---- */
#include "acl/acl_rt.h"

/*
 * The process-wide pool of the aclnn ops. acquire returns it (NULL: run serially),
 * creating it on first use, and holds it for reading until release: it is neither
 * replaced nor destroyed meanwhile. Sized by sbn__acl_pool_default_threads.
 */
sbn_pool_t *sbn__acl_pool_acquire(void);
void sbn__acl_pool_release(void);
/* Creates the pool now if it does not exist (aclrtSetDevice). */
void sbn__acl_pool_warm(void);
/* aclInit's config: threads > 0 sizes the pool, 0 leaves it to the environment. */
void sbn__acl_pool_configure(int threads);
/* aclFinalize: forgets the config and destroys the pool (the next use makes a new one). */
void sbn__acl_pool_shutdown(void);
/* The size the pool is made with: config, else SBN_NUM_THREADS (1..1024), else the CPUs. */
int sbn__acl_pool_default_threads(void);
/* The threads of the pool (creating it); 1 when the ops run serially. */
int sbn__acl_pool_threads(void);
/*
 * sbn__acl_exec_run brackets each run with begin/end; inside, sbn__acl_run_pool is
 * the pool the op passes to the native op (acquired at the first call, released at
 * end); outside a run it is NULL.
 */
void sbn__acl_run_begin(void);
sbn_pool_t *sbn__acl_run_pool(void);
void sbn__acl_run_end(void);

/* Reads aclInit's JSON config file: *threads = "syncbn": {"num_threads"} or 0. */
aclError sbn__acl_read_config(const char *op, const char *path, int *threads);
/* ACL_SUCCESS for NULL (the default stream) or a live stream; else `code` with a message. */
aclError sbn__acl_check_stream(const char *op, aclrtStream stream, aclError code);
/* The checks and the work of aclrtMemcpy/aclrtMemset, shared with the async calls. */
aclError sbn__acl_memcpy(const char *op, void *dst, size_t destMax, const void *src, size_t count,
                         aclrtMemcpyKind kind);
aclError sbn__acl_memset(const char *op, void *devPtr, size_t maxCount, int32_t value,
                         size_t count);
/* The calling thread's current device, -1 when it has none. */
int32_t sbn__acl_current_device(void);
/*
 * ACL_SUCCESS when the calling thread has a live current context (aclrtSetDevice,
 * aclrtCreateContext or aclrtSetCurrentContext, not undone by aclrtResetDevice or
 * aclrtDestroyContext); else ACL_ERROR_RT_CONTEXT_NULL with a message for `op`
 * saying to call aclrtSetDevice first, as CANN refuses the calls that need one.
 */
aclError sbn__acl_require_context(const char *op);

/* aclScalarList (acl_scalar_list.c; declared in aclnn/acl_meta.h). */
/* The size of a live list, 0 for anything else (tests). */
uint64_t sbn__acl_scalar_list_size(const aclScalarList *array);

/*
 * Phase 1 of aclnnBatchNormBackward (fast 0) and of aclnnFastBatchNormBackward (fast 1:
 * version must be 0 or 1; an enabled gradInput must have gradOut's dtype), named `op`
 * in messages (op_batch_norm_backward.c).
 */
aclnnStatus sbn__acl_batch_norm_backward_phase1(
    const char *op, int fast, int version, const aclTensor *gradOut, const aclTensor *input,
    const aclTensor *weight, const aclTensor *runningMean, const aclTensor *runningVar,
    const aclTensor *saveMean, const aclTensor *saveInvstd, bool training, double eps,
    const aclBoolArray *outputMask, aclTensor *gradInput, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor);

#endif /* SBN_ACLNN_INTERNAL_H */
