/*
 * aclnn_internal.h - what the aclnn-compatible layer's files share: the layout of
 * the aclnn objects, the per-thread recent error message, the checks in CANN's
 * order (null, dtype, format, shape) with CANN's status codes, the conversion of
 * an aclTensor to a native sbn_tensor view, and the executor with its registry.
 * The aclnn layer validates and maps; every number is computed by the native ops.
 */
#ifndef SBN_ACLNN_INTERNAL_H
#define SBN_ACLNN_INTERNAL_H

#include "aclnn/acl_meta.h"
#include "core/internal.h"

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

/* ---- the other objects (aclnn_objects.c); added to the contract, nothing above changed ---- */
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

/* 1 when t is non-NULL and carries the live-tensor magic (a destroyed tensor does not). */
int sbn__acl_tensor_is_live(const aclTensor *t);

/* ---- recent error message (aclnn_error.c) ---- */
/* Clears the calling thread's message; every aclnn entry point calls it first. */
void sbn__acl_clear_error(void);
/* Records "<op>: <sentence>" as the thread's recent message and returns code. */
aclnnStatus sbn__acl_fail(aclnnStatus code, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps a native status to an aclnn status (NULL -> 161001, other failures -> 161002,
 * out of memory -> 561000) and copies sbn_last_error() into the recent message. */
aclnnStatus sbn__acl_from_native(sbn_status status, const char *op);

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

/* ---- native views (aclnn_view.c) ---- */
/* The native dtype of an aclDataType; 0 when there is none (out: *ok = 0). */
sbn_dtype sbn__acl_native_dtype(aclDataType dtype, int *ok);
/*
 * The native view of t: data + offset, dims and strides as given. When
 * channels_last is set and t has rank >= 3, the last dim is moved to dim 1 (for
 * NHWC/NDHWC tensors whose channel is the last dim).
 */
sbn_tensor sbn__acl_view(const aclTensor *t, int channels_last);

/* ---- executor (aclnn_executor.c) ---- */
#define SBN_ACL_EXEC_MAX_TENSORS 16

typedef aclnnStatus (*sbn__acl_run_fn)(aclOpExecutor *executor, void *workspace,
                                       uint64_t workspace_size);

/*
 * An executor holds everything phase 2 needs: the op, the native views of every
 * tensor argument (with the tensors they came from, so that aclSet*TensorAddr can
 * refresh addresses), scalars, and the workspace size promised in phase 1.
 * Tensors are numbered in the op's signature order among the present inputs
 * (input index) and among the present outputs (output index).
 */
struct aclOpExecutor {
    uint64_t magic;
    const char *op;
    sbn__acl_run_fn run;
    uint64_t workspace_size;
    int repeatable;
    int ntensors;
    sbn_tensor views[SBN_ACL_EXEC_MAX_TENSORS];
    const aclTensor *sources[SBN_ACL_EXEC_MAX_TENSORS];
    int is_output[SBN_ACL_EXEC_MAX_TENSORS];
    int64_t view_offset_bytes[SBN_ACL_EXEC_MAX_TENSORS]; /* view data - tensor data */
    double scalars[8];
    int64_t ints[8];
};

/*
 * Creates and registers an executor for op; NULL (with the recent message set)
 * when out of memory. The op's phase 1 fills it and hands it to the caller.
 */
aclOpExecutor *sbn__acl_exec_create(const char *op, sbn__acl_run_fn run, uint64_t workspace_size);
/* Frees an executor created by phase 1 that is not handed out (a later check failed). */
void sbn__acl_exec_discard(aclOpExecutor *executor);
/*
 * Adds a tensor argument (t may be NULL: an absent optional, which gets slot -1);
 * returns its slot, whose native view is executor->views[slot].
 */
int sbn__acl_exec_add(aclOpExecutor *executor, const aclTensor *t, sbn_tensor view,
                      int is_output);
/* The native view of a slot, or NULL for slot -1. */
sbn_tensor *sbn__acl_exec_view(aclOpExecutor *executor, int slot);
/*
 * The whole of a phase 2: checks that executor is a live executor of `op` (never
 * dereferencing a pointer that is not registered), that the workspace is large
 * enough, runs it, and frees it unless it is repeatable.
 */
aclnnStatus sbn__acl_exec_run(const char *op, void *workspace, uint64_t workspace_size,
                              aclOpExecutor *executor, aclrtStream stream);

#endif /* SBN_ACLNN_INTERNAL_H */
