/*
 * aclnn_objects.c - aclTensor, aclScalar, the int/float/bool arrays and
 * aclTensorList: create, destroy and the getters, with the behaviour of CANN's
 * libnnopbase where it is documented or visible. Every object copies what it is
 * given (a tensor list copies the array of pointers and, as in CANN, owns the
 * tensors: aclDestroyTensorList destroys them); every allocation goes through
 * sbn__malloc, and a create returns NULL when it fails or when its arguments are
 * invalid, leaving the reason for aclGetRecentErrMsg(). Destroying NULL succeeds
 * (CANN returns 0 there), destroying something that is not a live object of that
 * type returns 161002 without freeing. aclGetViewShape, aclGetStorageShape and
 * aclGetViewStrides hand out a new array that the caller releases: CANN documents
 * `delete[]`; this C library allocates it with malloc(), so C callers free() it
 * (C++ `delete[]` of int64_t on glibc also ends in free(), though ASan calls that
 * an alloc-dealloc mismatch). Creation and getters do not clear the recent message.
 */
#include <stdlib.h>
#include <string.h>

#include "aclnn_internal.h"

#define SBN_ACL_DEAD_MAGIC 0x4445414444454144ull /* "DEADDEAD": set before an object is freed */

int sbn__acl_tensor_is_live(const aclTensor *t)
{
    return t != NULL && t->magic == SBN_ACL_TENSOR_MAGIC;
}

/*
 * Every object starts with its magic. new_object allocates `bytes`, zeroes the
 * first `zeroed` of them and sets the magic; NULL (recent message set) when out of
 * memory. destroy_object frees a live object of the kind `want` names (its magic is
 * set dead first); NULL succeeds, anything else is refused with 161002 and the
 * sentence "<obj> is not a live <what>".
 */
static void *new_object(const char *op, size_t bytes, size_t zeroed, uint64_t magic)
{
    uint64_t *obj = (uint64_t *)sbn__malloc(bytes);
    if (obj == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory");
        return NULL;
    }
    memset(obj, 0, zeroed);
    *obj = magic;
    return obj;
}

static aclnnStatus destroy_object(const char *op, const void *obj, uint64_t want,
                                  const char *what)
{
    uint64_t *magic = (uint64_t *)(uintptr_t)obj;
    if (obj == NULL) return ACLNN_SUCCESS;
    if (*magic != want)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not a live %s", obj, what);
    *magic = SBN_ACL_DEAD_MAGIC;
    sbn__free(magic);
    return ACLNN_SUCCESS;
}

/* ---- aclTensor ---- */

SBN_API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                   aclDataType dataType, const int64_t *stride, int64_t offset,
                                   aclFormat format, const int64_t *storageDims,
                                   uint64_t storageDimsNum, void *tensorData)
{
    static const char *op = "aclCreateTensor";
    aclTensor *t;
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
    t = (aclTensor *)new_object(op, sizeof *t, sizeof *t, SBN_ACL_TENSOR_MAGIC);
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
    return t;
}

SBN_API aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
    return destroy_object("aclDestroyTensor", tensor, SBN_ACL_TENSOR_MAGIC,
                          "aclTensor (already destroyed, or not made by aclCreateTensor)");
}

/* ---- aclScalar ---- */

/* Bytes of one host value of dtype; 0 when aclCreateScalar does not take it. */
static size_t scalar_bytes(aclDataType dtype)
{
    switch (dtype) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
        return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
        return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
        return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
        return 8;
    case ACL_COMPLEX128:
        return 16;
    default:
        return 0;
    }
}

SBN_API aclScalar *aclCreateScalar(void *value, aclDataType dataType)
{
    static const char *op = "aclCreateScalar";
    size_t bytes = scalar_bytes(dataType);
    aclScalar *s;
    if (value == NULL) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "value is NULL");
        return NULL;
    }
    if (bytes == 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "dtype %s (%d) has no scalar form",
                      sbn__acl_dtype_name(dataType), (int)dataType);
        return NULL;
    }
    s = (aclScalar *)new_object(op, sizeof *s, sizeof *s, SBN_ACL_SCALAR_MAGIC);
    if (s == NULL) return NULL;
    s->dtype = dataType;
    memcpy(s->value.bytes, value, bytes);
    return s;
}

SBN_API aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
    return destroy_object("aclDestroyScalar", scalar, SBN_ACL_SCALAR_MAGIC, "aclScalar");
}

/* ---- arrays: one block, the header then the values ---- */

/*
 * A zeroed header of `header_bytes` with `magic`, followed by size * elem bytes
 * copied from value; NULL on failure.
 */
static void *make_array(const char *op, const void *value, uint64_t size, size_t elem,
                        size_t header_bytes, uint64_t magic, void **values_out)
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
    block = (unsigned char *)new_object(op, header_bytes + (size_t)size * elem, header_bytes,
                                        magic);
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
#define SBN_ACL_CREATE_ARRAY(op, type, elem, magic, member)                             \
    do {                                                                                \
        void *values_ = NULL;                                                           \
        type *array_ = (type *)make_array(op, value, size, sizeof(elem),                \
                                          SBN_ACL_HEADER(type), magic, &values_);       \
        if (array_ == NULL) return NULL;                                                \
        array_->size = size;                                                            \
        array_->member = (elem *)values_;                                               \
        return array_;                                                                  \
    } while (0)

SBN_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateIntArray", aclIntArray, int64_t, SBN_ACL_INT_ARRAY_MAGIC,
                         values);
}

SBN_API aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateFloatArray", aclFloatArray, float, SBN_ACL_FLOAT_ARRAY_MAGIC,
                         values);
}

SBN_API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateBoolArray", aclBoolArray, bool, SBN_ACL_BOOL_ARRAY_MAGIC,
                         values);
}

SBN_API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size)
{
    SBN_ACL_CREATE_ARRAY("aclCreateTensorList", aclTensorList, aclTensor *,
                         SBN_ACL_TENSOR_LIST_MAGIC, tensors);
}

SBN_API aclnnStatus aclDestroyIntArray(const aclIntArray *array)
{
    return destroy_object("aclDestroyIntArray", array, SBN_ACL_INT_ARRAY_MAGIC, "aclIntArray");
}

SBN_API aclnnStatus aclDestroyFloatArray(const aclFloatArray *array)
{
    return destroy_object("aclDestroyFloatArray", array, SBN_ACL_FLOAT_ARRAY_MAGIC,
                          "aclFloatArray");
}

SBN_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array)
{
    return destroy_object("aclDestroyBoolArray", array, SBN_ACL_BOOL_ARRAY_MAGIC, "aclBoolArray");
}

SBN_API aclnnStatus aclDestroyTensorList(const aclTensorList *array)
{
    uint64_t i, j;
    /* The list owns its tensors (CANN); a tensor listed twice is destroyed once. */
    if (array != NULL && array->magic == SBN_ACL_TENSOR_LIST_MAGIC) {
        for (i = 0; i < array->size; i++) {
            const aclTensor *t = array->tensors[i];
            int seen = 0;
            for (j = 0; j < i && !seen; j++) seen = array->tensors[j] == t;
            if (!seen && t != NULL) aclDestroyTensor(t);
        }
    }
    return destroy_object("aclDestroyTensorList", array, SBN_ACL_TENSOR_LIST_MAGIC,
                          "aclTensorList");
}

/* ---- getters ---- */

/* 161001 for a NULL argument, 161002 for a tensor that is not live. */
static aclnnStatus getter_args(const char *op, const aclTensor *t, const void *out1,
                               const void *out2)
{
    if (t == NULL || out1 == NULL || out2 == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "%s is NULL",
                             t == NULL ? "tensor" : "an output pointer");
    if (!sbn__acl_tensor_is_live(t))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not a live aclTensor",
                             (const void *)t);
    return ACLNN_SUCCESS;
}

/* A malloc()'ed copy of n values for the caller to free (at least one element, never NULL). */
static aclnnStatus hand_out(const char *op, const int64_t *src, uint64_t n, int64_t **out,
                            uint64_t *count)
{
    int64_t *copy = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (copy == NULL) return sbn__acl_fail(ACLNN_ERR_INNER_NULLPTR, op, "out of memory");
    if (n > 0) memcpy(copy, src, (size_t)n * sizeof(int64_t));
    *out = copy;
    *count = n;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                    uint64_t *viewDimsNum)
{
    SBN_ACL_TRY(getter_args("aclGetViewShape", tensor, viewDims, viewDimsNum));
    return hand_out("aclGetViewShape", tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

SBN_API aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                       uint64_t *storageDimsNum)
{
    SBN_ACL_TRY(getter_args("aclGetStorageShape", tensor, storageDims, storageDimsNum));
    return hand_out("aclGetStorageShape", tensor->storage_dims, tensor->storage_ndim, storageDims,
                    storageDimsNum);
}

SBN_API aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                      uint64_t *stridesNum)
{
    SBN_ACL_TRY(getter_args("aclGetViewStrides", tensor, stridesValue, stridesNum));
    return hand_out("aclGetViewStrides", tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

SBN_API aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset)
{
    SBN_ACL_TRY(getter_args("aclGetViewOffset", tensor, offset, offset));
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format)
{
    SBN_ACL_TRY(getter_args("aclGetFormat", tensor, format, format));
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType)
{
    SBN_ACL_TRY(getter_args("aclGetDataType", tensor, dataType, dataType));
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

/*
 * The size getters: 161001 for NULL, 161002 for an object that is not a live one of
 * the kind `want` names (its magic is its first member); else *size = *n.
 */
static aclnnStatus get_size(const char *op, const void *obj, uint64_t want, const uint64_t *n,
                            uint64_t *size)
{
    if (obj == NULL || size == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "%s is NULL",
                             obj == NULL ? "the array" : "size");
    if (*(const uint64_t *)obj != want)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not live", obj);
    *size = *n;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size)
{
    return get_size("aclGetIntArraySize", array, SBN_ACL_INT_ARRAY_MAGIC,
                    array ? &array->size : NULL, size);
}

SBN_API aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size)
{
    return get_size("aclGetFloatArraySize", array, SBN_ACL_FLOAT_ARRAY_MAGIC,
                    array ? &array->size : NULL, size);
}

SBN_API aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size)
{
    return get_size("aclGetBoolArraySize", array, SBN_ACL_BOOL_ARRAY_MAGIC,
                    array ? &array->size : NULL, size);
}

SBN_API aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size)
{
    return get_size("aclGetTensorListSize", tensorList, SBN_ACL_TENSOR_LIST_MAGIC,
                    tensorList ? &tensorList->size : NULL, size);
}
