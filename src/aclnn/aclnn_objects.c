/*
 * aclnn_objects.c - aclTensor, aclScalar, the int/float/bool arrays and
 * aclTensorList: create, destroy and the getters, with the behaviour of CANN's
 * libnnopbase where it is documented or visible. Every object copies what it is
 * given (a tensor list copies the array of pointers and, as in CANN, owns the
 * tensors: aclDestroyTensorList destroys them); every allocation goes through
 * sbn_malloc, and a create returns NULL when it fails or when its arguments are
 * invalid, leaving the reason for aclGetRecentErrMsg(). Every object is registered
 * (aclnn_handles.c): the caller holds a handle that is looked up before anything is
 * read, so a destroyed, foreign or other-kind pointer is refused with 161002 and
 * never dereferenced, even when a new object now sits where the old one was.
 * Destroying NULL succeeds (CANN returns 0 there), destroying something that is
 * not a live object of that type returns 161002 without freeing. aclGetViewShape,
 * aclGetStorageShape and
 * aclGetViewStrides hand out a new array that the caller releases, as CANN documents,
 * with C++ `delete[]`: whenever the process has a C++ runtime (any C++ program, and
 * every process under AddressSanitizer, whose runtime provides the operators) the array
 * comes from `operator new[]` itself (hand_out_alloc), so `delete[]` matches it; C
 * callers release it with sbn_acl_free_array (aclnn/aclnn_base.h), which picks the
 * matching release. Creation and getters do not clear the recent message.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn/aclnn_base.h"
#include "aclnn_internal.h"

/* What a handle that is not live stands for in an op's checks: never live, never written. */
static const aclTensor k_dead_tensor = {.magic = 0};

int sbn__acl_tensor_is_live(const aclTensor *t)
{
    return t != NULL && t->magic == SBN_ACL_TENSOR_MAGIC;
}

aclTensor *sbn__acl_tensor_of(const aclTensor *handle)
{
    return (aclTensor *)sbn__acl_object_get(handle, SBN_ACL_KIND_TENSOR);
}

void sbn__acl_resolve_tensors(const aclTensor *const *handle, const aclTensor **out, int n)
{
    int k;
    for (k = 0; k < n; k++) {
        const aclTensor *t = sbn__acl_tensor_of(handle[k]);
        out[k] = handle[k] == NULL ? NULL : t != NULL ? t : &k_dead_tensor;
    }
}

/*
 * Every object starts with its magic. new_object makes a registered zeroed object
 * of `bytes` (the handle out in *handle) and sets the magic; NULL (recent message
 * set) when out of memory. destroy_object frees the object of a live handle of
 * `kind`; NULL succeeds, anything else is refused with 161002 and the sentence
 * "<handle> is not a live <what>", without reading it.
 */
static void *new_object(const char *op, sbn__acl_kind kind, size_t bytes, uint64_t magic,
                        void **handle)
{
    uint64_t *obj = (uint64_t *)sbn__acl_object_new(kind, bytes);
    if (obj == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory");
        return NULL;
    }
    *obj = magic;
    *handle = sbn__acl_object_handle(obj);
    return obj;
}

static aclnnStatus destroy_object(const char *op, const void *handle, sbn__acl_kind kind,
                                  const char *what)
{
    if (handle == NULL) return ACLNN_SUCCESS;
    if (!sbn__acl_object_destroy(handle, kind))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not a live %s", handle, what);
    return ACLNN_SUCCESS;
}

/* ---- aclTensor ---- */

SBN_ACL_API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                   aclDataType dataType, const int64_t *stride, int64_t offset,
                                   aclFormat format, const int64_t *storageDims,
                                   uint64_t storageDimsNum, void *tensorData)
{
    static const char *op = "aclCreateTensor";
    aclTensor *t;
    void *handle = NULL;
    uint64_t d;
    if (viewDims == NULL && viewDimsNum > 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "viewDims is NULL but viewDimsNum is %llu",
                      (unsigned long long)viewDimsNum);
        return NULL;
    }
    if (storageDims == NULL && storageDimsNum > 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "storageDims is NULL but storageDimsNum is %llu",
                      (unsigned long long)storageDimsNum);
        return NULL;
    }
    if (viewDimsNum > SBN_ACL_MAX_CREATE_DIMS || storageDimsNum > SBN_ACL_MAX_CREATE_DIMS) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                      "viewDimsNum %llu / storageDimsNum %llu: at most %d dims are supported",
                      (unsigned long long)viewDimsNum, (unsigned long long)storageDimsNum,
                      SBN_ACL_MAX_CREATE_DIMS);
        return NULL;
    }
    for (d = 0; d < viewDimsNum; d++) {
        if (viewDims[d] < 0) {
            sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "viewDims[%llu] is %lld; dims must be >= 0",
                          (unsigned long long)d, (long long)viewDims[d]);
            return NULL;
        }
        if (stride != NULL && stride[d] < 0) {
            sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                          "stride[%llu] is %lld; strides must be >= 0", (unsigned long long)d,
                          (long long)stride[d]);
            return NULL;
        }
    }
    for (d = 0; d < storageDimsNum; d++) {
        if (storageDims[d] < 0) {
            sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                          "storageDims[%llu] is %lld; dims must be >= 0", (unsigned long long)d,
                          (long long)storageDims[d]);
            return NULL;
        }
    }
    if (offset < 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "offset is %lld; it must be >= 0",
                      (long long)offset);
        return NULL;
    }
    t = (aclTensor *)new_object(op, SBN_ACL_KIND_TENSOR, sizeof *t, SBN_ACL_TENSOR_MAGIC, &handle);
    if (t == NULL) return NULL;
    t->dtype = dataType;
    t->format = format;
    t->ndim = viewDimsNum;
    t->offset = offset;
    t->storage_ndim = storageDimsNum;
    t->data = tensorData;
    if (viewDimsNum > 0) memcpy(t->dims, viewDims, (size_t)viewDimsNum * sizeof t->dims[0]);
    if (storageDimsNum > 0)
        memcpy(t->storage_dims, storageDims, (size_t)storageDimsNum * sizeof t->storage_dims[0]);
    if (stride != NULL) {
        if (viewDimsNum > 0) memcpy(t->strides, stride, (size_t)viewDimsNum * sizeof t->strides[0]);
    } else {
        /* As CANN does: no strides means contiguous row-major strides of the view dims. */
        int64_t step = 1;
        for (d = viewDimsNum; d-- > 0;) {
            t->strides[d] = step;
            if (viewDims[d] > 0 && step <= INT64_MAX / viewDims[d]) step *= viewDims[d];
        }
    }
    return (aclTensor *)handle;
}

SBN_ACL_API aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
    return destroy_object("aclDestroyTensor", tensor, SBN_ACL_KIND_TENSOR,
                          "aclTensor (already destroyed, or not made by aclCreateTensor)");
}

/* ---- aclScalar ---- */

SBN_ACL_API aclScalar *aclCreateScalar(void *value, aclDataType dataType)
{
    static const char *op = "aclCreateScalar";
    size_t bytes = aclDataTypeSize(dataType);
    aclScalar *s;
    void *handle = NULL;
    if (value == NULL) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "value is NULL");
        return NULL;
    }
    if (bytes == 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "dtype %s (%d) has no scalar form",
                      sbn__acl_dtype_name(dataType), (int)dataType);
        return NULL;
    }
    s = (aclScalar *)new_object(op, SBN_ACL_KIND_SCALAR, sizeof *s, SBN_ACL_SCALAR_MAGIC, &handle);
    if (s == NULL) return NULL;
    s->dtype = dataType;
    memcpy(s->value.bytes, value, bytes);
    return (aclScalar *)handle;
}

SBN_ACL_API aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
    return destroy_object("aclDestroyScalar", scalar, SBN_ACL_KIND_SCALAR, "aclScalar");
}

/* ---- arrays: one block, the header then the values ---- */

/*
 * A zeroed header of `header_bytes` with `magic`, followed by size * elem bytes
 * copied from value; NULL on failure. *handle gets its handle.
 */
static void *make_array(const char *op, const void *value, uint64_t size, size_t elem,
                        size_t header_bytes, sbn__acl_kind kind, uint64_t magic,
                        void **values_out, void **handle)
{
    unsigned char *block;
    if (value == NULL && size > 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "value is NULL but size is %llu",
                      (unsigned long long)size);
        return NULL;
    }
    if (size > (SIZE_MAX - header_bytes) / elem) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "size %llu is too large",
                      (unsigned long long)size);
        return NULL;
    }
    block = (unsigned char *)new_object(op, kind, header_bytes + (size_t)size * elem, magic,
                                        handle);
    if (block == NULL) return NULL;
    if (size > 0) memcpy(block + header_bytes, value, (size_t)size * elem);
    *values_out = block + header_bytes;
    return block;
}

/* Header sizes rounded up to 16 bytes so that the values that follow are aligned. */
#define SBN_ACL_HEADER(type) ((sizeof(type) + 15u) / 16u * 16u)

/*
 * The body of the four array creators (parameters `value` and `size`): a `type`
 * block from make_array whose `member` points at the copied `elem` values.
 */
#define SBN_ACL_CREATE_ARRAY(op, type, elem, kind, magic, member)                       \
    do {                                                                                \
        void *values_ = NULL, *handle_ = NULL;                                          \
        type *array_ = (type *)make_array(op, value, size, sizeof(elem),                \
                                          SBN_ACL_HEADER(type), kind, magic, &values_,  \
                                          &handle_);                                    \
        if (array_ == NULL) return NULL;                                                \
        array_->size = size;                                                            \
        array_->member = (elem *)values_;                                               \
        return (type *)handle_;                                                         \
    } while (0)

SBN_ACL_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateIntArray", aclIntArray, int64_t, SBN_ACL_KIND_INT_ARRAY,
                         SBN_ACL_INT_ARRAY_MAGIC, values);
}

SBN_ACL_API aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateFloatArray", aclFloatArray, float, SBN_ACL_KIND_FLOAT_ARRAY,
                         SBN_ACL_FLOAT_ARRAY_MAGIC, values);
}

SBN_ACL_API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateBoolArray", aclBoolArray, bool, SBN_ACL_KIND_BOOL_ARRAY,
                         SBN_ACL_BOOL_ARRAY_MAGIC, values);
}

SBN_ACL_API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size)
{
    /* the list keeps the handles it is given */
    SBN_ACL_CREATE_ARRAY("aclCreateTensorList", aclTensorList, aclTensor *,
                         SBN_ACL_KIND_TENSOR_LIST, SBN_ACL_TENSOR_LIST_MAGIC, tensors);
}

SBN_ACL_API aclnnStatus aclDestroyIntArray(const aclIntArray *array)
{
    return destroy_object("aclDestroyIntArray", array, SBN_ACL_KIND_INT_ARRAY, "aclIntArray");
}

SBN_ACL_API aclnnStatus aclDestroyFloatArray(const aclFloatArray *array)
{
    return destroy_object("aclDestroyFloatArray", array, SBN_ACL_KIND_FLOAT_ARRAY,
                          "aclFloatArray");
}

SBN_ACL_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array)
{
    return destroy_object("aclDestroyBoolArray", array, SBN_ACL_KIND_BOOL_ARRAY, "aclBoolArray");
}

SBN_ACL_API aclnnStatus aclDestroyTensorList(const aclTensorList *array)
{
    aclTensorList *list;
    uint64_t i, j;
    if (array == NULL) return ACLNN_SUCCESS;
    /* taken out of the registry first: a second destroy of the same list finds it dead */
    sbn__acl_registry_lock();
    list = (aclTensorList *)sbn__acl_object_find_locked(array, SBN_ACL_KIND_TENSOR_LIST);
    if (list != NULL) sbn__acl_object_unlink_locked(list);
    sbn__acl_registry_unlock();
    if (list == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList",
                             "%p is not a live aclTensorList", (const void *)array);
    /* The list owns its tensors (CANN); a tensor listed twice is destroyed once, and a
     * tensor already destroyed on its own is skipped (its handle is dead). */
    for (i = 0; i < list->size; i++) {
        const aclTensor *t = list->tensors[i];
        int seen = 0;
        for (j = 0; j < i && !seen; j++) seen = list->tensors[j] == t;
        if (!seen && t != NULL) sbn__acl_object_destroy(t, SBN_ACL_KIND_TENSOR);
    }
    sbn__acl_object_free(list);
    return ACLNN_SUCCESS;
}

/* ---- getters ---- */

/* 161001 for a NULL argument, 161002 for a handle that is not a live tensor; else *t. */
static aclnnStatus getter_args(const char *op, const aclTensor *handle, const void *out1,
                               const void *out2, const aclTensor **t)
{
    if (handle == NULL || out1 == NULL || out2 == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "%s is NULL",
                             handle == NULL ? "tensor" : "an output pointer");
    *t = sbn__acl_tensor_of(handle);
    if (*t == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%p is not a live aclTensor (destroyed, or not made by "
                             "aclCreateTensor)",
                             (const void *)handle);
    return ACLNN_SUCCESS;
}

/*
 * The arrays the getters hand out. CANN's callers release them with C++ delete[], so
 * they must come from operator new[] (an array from malloc released by delete[] is an
 * alloc-dealloc mismatch, which ASan reports). The library stays C: it reaches
 * operator new[](size_t, const std::nothrow_t &) and operator delete[](void *) through
 * their Itanium C++ ABI names as weak references, bound when the process has a C++
 * runtime (libstdc++ or libc++ loaded by a C++ program, or the sanitizer runtime) and
 * NULL otherwise; a process without them cannot call delete[], and gets malloc().
 * sbn_acl_free_array releases either way. The nothrow_t argument is an empty tag the
 * operator never reads; any valid address stands for it.
 */
#if defined(__GNUC__) && defined(__ELF__) && defined(__SIZEOF_SIZE_T__) && \
    __SIZEOF_SIZE_T__ == 8 && !defined(SBN_NO_CXX_ARRAYS)
extern void *_ZnamRKSt9nothrow_t(size_t bytes, const void *nothrow_tag) __attribute__((weak));
extern void _ZdaPv(void *array) __attribute__((weak));
#define SBN_CXX_NEW_ARRAY _ZnamRKSt9nothrow_t
#define SBN_CXX_DELETE_ARRAY _ZdaPv
#endif

/* 1 when the arrays come from operator new[] (both operators are bound). */
static int cxx_arrays(void)
{
#ifdef SBN_CXX_NEW_ARRAY
    return SBN_CXX_NEW_ARRAY != NULL && SBN_CXX_DELETE_ARRAY != NULL;
#else
    return 0;
#endif
}

static int64_t *hand_out_alloc(size_t n)
{
#ifdef SBN_CXX_NEW_ARRAY
    static const char nothrow_tag = 0;
    if (cxx_arrays()) return (int64_t *)SBN_CXX_NEW_ARRAY(n * sizeof(int64_t), &nothrow_tag);
#endif
    return (int64_t *)malloc(n * sizeof(int64_t));
}

SBN_ACL_API void sbn_acl_free_array(void *array)
{
    if (array == NULL) return;
#ifdef SBN_CXX_DELETE_ARRAY
    if (cxx_arrays()) {
        SBN_CXX_DELETE_ARRAY(array);
        return;
    }
#endif
    free(array);
}

/* A new[]'ed (or malloc()'ed, see above) copy of n values, at least one element, never NULL. */
static aclnnStatus hand_out(const char *op, const int64_t *src, uint64_t n, int64_t **out,
                            uint64_t *count)
{
    int64_t *copy = hand_out_alloc((size_t)(n > 0 ? n : 1));
    if (copy == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "out of memory");
    if (n > 0) memcpy(copy, src, (size_t)n * sizeof(int64_t));
    *out = copy;
    *count = n;
    return ACLNN_SUCCESS;
}

SBN_ACL_API aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                    uint64_t *viewDimsNum)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetViewShape", tensor, viewDims, viewDimsNum, &t));
    return hand_out("aclGetViewShape", t->dims, t->ndim, viewDims, viewDimsNum);
}

SBN_ACL_API aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                       uint64_t *storageDimsNum)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetStorageShape", tensor, storageDims, storageDimsNum, &t));
    return hand_out("aclGetStorageShape", t->storage_dims, t->storage_ndim, storageDims,
                    storageDimsNum);
}

SBN_ACL_API aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                      uint64_t *stridesNum)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetViewStrides", tensor, stridesValue, stridesNum, &t));
    return hand_out("aclGetViewStrides", t->strides, t->ndim, stridesValue, stridesNum);
}

SBN_ACL_API aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetViewOffset", tensor, offset, offset, &t));
    *offset = t->offset;
    return ACLNN_SUCCESS;
}

SBN_ACL_API aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetFormat", tensor, format, format, &t));
    *format = t->format;
    return ACLNN_SUCCESS;
}

SBN_ACL_API aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType)
{
    const aclTensor *t = NULL;
    SBN_ACL_TRY(getter_args("aclGetDataType", tensor, dataType, dataType, &t));
    *dataType = t->dtype;
    return ACLNN_SUCCESS;
}

/*
 * The size getters: 161001 for NULL, 161002 for a handle that is not a live object
 * of `kind`; else *size = its size. Every array kind and the list keep their size
 * right after their magic.
 */
typedef struct sized_object {
    uint64_t magic;
    uint64_t size;
} sized_object;

static aclnnStatus get_size(const char *op, const void *handle, sbn__acl_kind kind,
                            uint64_t *size)
{
    const sized_object *obj;
    if (handle == NULL || size == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "%s is NULL",
                             handle == NULL ? "the array" : "size");
    sbn__acl_registry_lock();
    obj = (const sized_object *)sbn__acl_object_find_locked(handle, kind);
    if (obj != NULL) *size = obj->size;
    sbn__acl_registry_unlock();
    if (obj == NULL) return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not live", handle);
    return ACLNN_SUCCESS;
}

_Static_assert(offsetof(aclIntArray, size) == offsetof(sized_object, size), "size member");
_Static_assert(offsetof(aclFloatArray, size) == offsetof(sized_object, size), "size member");
_Static_assert(offsetof(aclBoolArray, size) == offsetof(sized_object, size), "size member");
_Static_assert(offsetof(aclTensorList, size) == offsetof(sized_object, size), "size member");

SBN_ACL_API aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size)
{
    return get_size("aclGetIntArraySize", array, SBN_ACL_KIND_INT_ARRAY, size);
}

SBN_ACL_API aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size)
{
    return get_size("aclGetFloatArraySize", array, SBN_ACL_KIND_FLOAT_ARRAY, size);
}

SBN_ACL_API aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size)
{
    return get_size("aclGetBoolArraySize", array, SBN_ACL_KIND_BOOL_ARRAY, size);
}

SBN_ACL_API aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size)
{
    return get_size("aclGetTensorListSize", tensorList, SBN_ACL_KIND_TENSOR_LIST, size);
}
