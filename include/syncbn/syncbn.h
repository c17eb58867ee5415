/*
 * syncbn.h - the foundation of the syncbn public API: status codes, element types,
 * the tensor view every op takes, the caller-owned thread pool, the allocator hook
 * and the library version. Every other public header includes this one.
 *
 * A tensor view is (data, dtype, rank, shape[rank], strides[rank]) with strides
 * counted in elements, not bytes. The channel axis of an activation is always
 * logical dim 1: an (N, C, H, W) view with strides (CHW, HW, W, 1) is
 * channels-first, with strides (HWC, 1, WC, C) it is channels-last, and any
 * other strides (a slice with step 2, a transposed view) are a strided view.
 * Per-channel tensors are 1-D views of length C, with any stride.
 */
#ifndef SYNCBN_SYNCBN_H
#define SYNCBN_SYNCBN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBN_VERSION_MAJOR 0
#define SBN_VERSION_MINOR 2
#define SBN_VERSION_PATCH 0

/* The largest rank a view may have. */
#define SBN_MAX_RANK 8

/*
 * Status table: X(NAME, value, description). Values >= 0 are successes: the
 * outputs were written. Positive values are successes with a note the caller
 * may want to act on. Negative values are failures: no output was written.
 */
#define SBN_STATUS_TABLE(X)                                                                  \
    X(SBN_OK, 0, "success")                                                                  \
    X(SBN_NO_SAMPLES, 1,                                                                     \
      "success, but every count was zero: mean 0, invstd NaN, running statistics unchanged") \
    X(SBN_SINGLE_SAMPLE, 2,                                                                  \
      "success, but only one sample per channel: the unbiased variance is undefined, "       \
      "running_var unchanged")                                                               \
    X(SBN_NON_FINITE_STATS, 3,                                                               \
      "success, but the batch statistics were not finite: running statistics unchanged")     \
    X(SBN_ERR_NULL_ARGUMENT, -1, "a required pointer argument is NULL")                      \
    X(SBN_ERR_BAD_DTYPE, -2, "an element type is not allowed for this argument")             \
    X(SBN_ERR_BAD_RANK, -3, "a tensor has a rank outside the allowed range")                 \
    X(SBN_ERR_BAD_SHAPE, -4, "a tensor has a shape that does not match its peers")           \
    X(SBN_ERR_BAD_VALUE, -5, "a scalar or element value is outside its allowed range")       \
    X(SBN_ERR_ALIAS, -6, "an output overlaps an input or another output")                    \
    X(SBN_ERR_WORKSPACE_TOO_SMALL, -7, "the workspace is smaller than the op needs")         \
    X(SBN_ERR_OUT_OF_MEMORY, -8, "an allocation failed")                                     \
    X(SBN_ERR_THREAD, -9, "a thread could not be created")                                   \
    X(SBN_ERR_INTERNAL, -10, "internal error")                                               \
    X(SBN_ERR_COMM, -11, "the communication backend reported an error")                      \
    X(SBN_ERR_COMM_MISMATCH, -12, "the ranks called different collectives or disagreed on "  \
      "their arguments")                                                                     \
    X(SBN_ERR_TIMEOUT, -13, "a collective timed out waiting for the other ranks")            \
    X(SBN_ERR_PEER_FAILED, -14, "another rank failed before this collective")                \
    X(SBN_ERR_MISALIGNED, -15, "a tensor's data is not aligned to its element size")          \
    X(SBN_ERR_TOO_LARGE, -16, "a size, extent or byte range does not fit in 64 bits")

typedef enum sbn_status {
#define SBN_STATUS_ENUM_ROW(name, value, text) name = value,
    SBN_STATUS_TABLE(SBN_STATUS_ENUM_ROW)
#undef SBN_STATUS_ENUM_ROW
} sbn_status;

/* Nonzero when `status` is a failure (negative). */
#define SBN_FAILED(status) ((int)(status) < 0)

/* "SBN_ERR_BAD_SHAPE" for SBN_ERR_BAD_SHAPE; "SBN_UNKNOWN_STATUS" for values not in the table. */
const char *sbn_status_name(sbn_status status);
/* A one-line description of the status. */
const char *sbn_status_str(sbn_status status);
/*
 * A sentence about the last failure on the calling thread, naming the argument,
 * its shape and the rule it broke; "" when the last call succeeded.
 * Valid until the next syncbn call on the same thread.
 */
const char *sbn_last_error(void);

/* Element types. Activations and per-channel tensors take the float types; counts take all. */
typedef enum sbn_dtype {
    SBN_F32 = 0,
    SBN_F64 = 1,
    SBN_F16 = 2,  /* IEEE binary16 */
    SBN_BF16 = 3, /* bfloat16 */
    SBN_I32 = 4,
    SBN_I64 = 5
} sbn_dtype;

/* Size in bytes of one element; 0 for an unknown dtype. */
size_t sbn_dtype_size(sbn_dtype dtype);
/* "f32", "f64", "f16", "bf16", "i32", "i64"; "?" otherwise. */
const char *sbn_dtype_name(sbn_dtype dtype);
/*
 * IEEE binary16 (SBN_F16) from and to float, the rules the ops load and store fp16 with:
 * round to nearest, ties to even; NaN stays NaN (the quiet NaN 0x7E00), values from 65520 up
 * become Inf, tiny ones subnormals or zero. Every binary16 value is exact as a float.
 */
uint16_t sbn_float_to_f16(float value);
float sbn_f16_to_float(uint16_t bits);

/*
 * A strided view of a tensor. Strides count elements and may be zero or negative for
 * inputs. Every op checks a view before touching it: data must be a multiple of the
 * element size (else SBN_ERR_MISALIGNED; numpy, PyTorch and malloc'd buffers always
 * are), and the view's extent, sum over dims of (shape - 1) * |stride| elements, and
 * its byte range from data must fit in 64-bit arithmetic and in the address space
 * (else SBN_ERR_TOO_LARGE). That the memory behind a view exists is the caller's
 * promise; every overlap between arguments (and with the workspace) is checked.
 */
typedef struct sbn_tensor {
    void *data;
    sbn_dtype dtype;
    int rank;
    int64_t shape[SBN_MAX_RANK];
    int64_t strides[SBN_MAX_RANK];
} sbn_tensor;

/* A contiguous row-major view: strides (d1*...*dk, ..., dk, 1). */
sbn_tensor sbn_tensor_contiguous(void *data, sbn_dtype dtype, int rank, const int64_t *shape);
/*
 * A channels-last view of the logical shape (N, C, d2, ..., dk): memory order is
 * (N, d2, ..., dk, C), so strides[1] = 1. For rank 2 this equals the contiguous view.
 */
sbn_tensor sbn_tensor_channels_last(void *data, sbn_dtype dtype, int rank, const int64_t *shape);
/* A contiguous 1-D view of length n. */
sbn_tensor sbn_tensor_1d(void *data, sbn_dtype dtype, int64_t n);
/* The number of elements of a view (product of its shape); 0 when any dim is 0. */
int64_t sbn_tensor_numel(const sbn_tensor *t); /* INT64_MAX when the count does not fit */

/*
 * Thread pool owned by the caller. An op given a pool splits its work over the
 * pool's threads (the calling thread is one of them); NULL runs serially. Results
 * are bitwise identical for any thread count. A pool may be shared by threads:
 * concurrent ops on one pool run one after the other.
 */
typedef struct sbn_pool sbn_pool_t;

/* Creates a pool of `threads` threads in all (1..1024, the caller counts as one). */
sbn_status sbn_pool_create(int threads, sbn_pool_t **pool);
/* Joins the pool's threads and frees it; NULL is a no-op. */
void sbn_pool_destroy(sbn_pool_t *pool);
/* The pool's thread count; 1 for NULL. */
int sbn_pool_threads(const sbn_pool_t *pool);
/*
 * The size the library picks for a pool when the caller does not: SBN_NUM_THREADS
 * when it is set to 1..1024 (read once per process; another value is ignored with a
 * warning on stderr), else the CPUs of the process's affinity mask, at most the ceiling
 * of its cgroup's CPU quota and, when a launcher says several ranks of the job share
 * this machine (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, LOCAL_WORLD_SIZE), at most
 * the machine's CPUs divided among them (at most 1024).
 * The aclnn library sizes its pool with it; so may any caller of sbn_pool_create.
 */
int sbn_pool_default_threads(void);

/*
 * Allocator hook for every allocation the library makes (pools; never inside an op).
 * NULL functions restore malloc/free. Set it before creating objects, not while
 * the library is in use on other threads.
 */
typedef void *(*sbn_malloc_fn)(size_t bytes, void *user);
typedef void (*sbn_free_fn)(void *ptr, void *user);
void sbn_set_allocator(sbn_malloc_fn malloc_fn, sbn_free_fn free_fn, void *user);
/*
 * Allocates `bytes` (at least 1) through the hook (malloc when none is set), NULL when
 * it fails; sbn_free returns it to the hook (NULL is a no-op). For code built on the
 * library whose objects should go through the same hook as the library's own (the
 * aclnn library's tensors, executors and device memory do).
 */
void *sbn_malloc(size_t bytes);
void sbn_free(void *ptr);

/* "0.2.0" */
const char *sbn_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBN_SYNCBN_H */
