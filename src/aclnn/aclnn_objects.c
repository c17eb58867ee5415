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
    t = (aclTensor *)sbn__malloc(sizeof *t);
    if (t == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory");
        return NULL;
    }
    memset(t, 0, sizeof *t);
    t->magic = SBN_ACL_TENSOR_MAGIC;
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
    aclTensor *t = (aclTensor *)(uintptr_t)tensor;
    if (tensor == NULL) return ACLNN_SUCCESS;
    if (!sbn__acl_tensor_is_live(tensor))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor",
                             "%p is not a live aclTensor (already destroyed, or not made by "
                             "aclCreateTensor)",
                             (const void *)tensor);
    t->magic = SBN_ACL_DEAD_MAGIC;
    sbn__free(t);
    return ACLNN_SUCCESS;
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
    s = (aclScalar *)sbn__malloc(sizeof *s);
    if (s == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->magic = SBN_ACL_SCALAR_MAGIC;
    s->dtype = dataType;
    memcpy(s->value.bytes, value, bytes);
    return s;
}

SBN_API aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
    aclScalar *s = (aclScalar *)(uintptr_t)scalar;
    if (scalar == NULL) return ACLNN_SUCCESS;
    if (scalar->magic != SBN_ACL_SCALAR_MAGIC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar",
                             "%p is not a live aclScalar", (const void *)scalar);
    s->magic = SBN_ACL_DEAD_MAGIC;
    sbn__free(s);
    return ACLNN_SUCCESS;
}

/* ---- arrays: one block, the header then the values ---- */

/* Header of `header_bytes` followed by size * elem bytes, copied from value; NULL on failure. */
static void *make_array(const char *op, const void *value, uint64_t size, size_t elem,
                        size_t header_bytes, void **values_out)
{
    unsigned char *block;
    size_t bytes;
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
    bytes = header_bytes + (size_t)size * elem;
    block = (unsigned char *)sbn__malloc(bytes);
    if (block == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory");
        return NULL;
    }
    memset(block, 0, header_bytes);
    if (size > 0) memcpy(block + header_bytes, value, (size_t)size * elem);
    *values_out = block + header_bytes;
    return block;
}

/* Header sizes rounded up to 16 bytes so that the values that follow are aligned. */
#define SBN_ACL_HEADER(type) ((sizeof(type) + 15u) / 16u * 16u)

SBN_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    void *values = NULL;
    aclIntArray *a = (aclIntArray *)make_array("aclCreateIntArray", value, size, sizeof(int64_t),
                                               SBN_ACL_HEADER(aclIntArray), &values);
    if (a == NULL) return NULL;
    a->magic = SBN_ACL_INT_ARRAY_MAGIC;
    a->size = size;
    a->values = (int64_t *)values;
    return a;
}

SBN_API aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size)
{
    void *values = NULL;
    aclFloatArray *a = (aclFloatArray *)make_array("aclCreateFloatArray", value, size,
                                                   sizeof(float), SBN_ACL_HEADER(aclFloatArray),
                                                   &values);
    if (a == NULL) return NULL;
    a->magic = SBN_ACL_FLOAT_ARRAY_MAGIC;
    a->size = size;
    a->values = (float *)values;
    return a;
}

SBN_API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size)
{
    void *values = NULL;
    aclBoolArray *a = (aclBoolArray *)make_array("aclCreateBoolArray", value, size, sizeof(bool),
                                                 SBN_ACL_HEADER(aclBoolArray), &values);
    if (a == NULL) return NULL;
    a->magic = SBN_ACL_BOOL_ARRAY_MAGIC;
    a->size = size;
    a->values = (bool *)values;
    return a;
}

SBN_API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size)
{
    void *values = NULL;
    aclTensorList *l = (aclTensorList *)make_array("aclCreateTensorList", value, size,
                                                   sizeof(aclTensor *),
                                                   SBN_ACL_HEADER(aclTensorList), &values);
    if (l == NULL) return NULL;
    l->magic = SBN_ACL_TENSOR_LIST_MAGIC;
    l->size = size;
    l->tensors = (aclTensor **)values;
    return l;
}

/* Frees an array-like object after checking its magic. */
static aclnnStatus destroy_block(const void *obj, uint64_t magic, uint64_t want, const char *op,
                                 const char *type)
{
    if (obj == NULL) return ACLNN_SUCCESS;
    if (magic != want)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not a live %s", obj, type);
    *(uint64_t *)(uintptr_t)obj = SBN_ACL_DEAD_MAGIC; /* magic is every object's first member */
    sbn__free((void *)(uintptr_t)obj);
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclDestroyIntArray(const aclIntArray *array)
{
    return destroy_block(array, array ? array->magic : 0, SBN_ACL_INT_ARRAY_MAGIC,
                         "aclDestroyIntArray", "aclIntArray");
}

SBN_API aclnnStatus aclDestroyFloatArray(const aclFloatArray *array)
{
    return destroy_block(array, array ? array->magic : 0, SBN_ACL_FLOAT_ARRAY_MAGIC,
                         "aclDestroyFloatArray", "aclFloatArray");
}

SBN_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array)
{
    return destroy_block(array, array ? array->magic : 0, SBN_ACL_BOOL_ARRAY_MAGIC,
                         "aclDestroyBoolArray", "aclBoolArray");
}

SBN_API aclnnStatus aclDestroyTensorList(const aclTensorList *array)
{
    uint64_t i, j;
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != SBN_ACL_TENSOR_LIST_MAGIC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList",
                             "%p is not a live aclTensorList", (const void *)array);
    /* The list owns its tensors (CANN); a tensor listed twice is destroyed once. */
    for (i = 0; i < array->size; i++) {
        const aclTensor *t = array->tensors[i];
        int seen = 0;
        for (j = 0; j < i && !seen; j++) seen = array->tensors[j] == t;
        if (!seen && t != NULL) aclDestroyTensor(t);
    }
    return destroy_block(array, array->magic, SBN_ACL_TENSOR_LIST_MAGIC, "aclDestroyTensorList",
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
    aclnnStatus s = getter_args("aclGetViewShape", tensor, viewDims, viewDimsNum);
    if (s != ACLNN_SUCCESS) return s;
    return hand_out("aclGetViewShape", tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

SBN_API aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                       uint64_t *storageDimsNum)
{
    aclnnStatus s = getter_args("aclGetStorageShape", tensor, storageDims, storageDimsNum);
    if (s != ACLNN_SUCCESS) return s;
    return hand_out("aclGetStorageShape", tensor->storage_dims, tensor->storage_ndim, storageDims,
                    storageDimsNum);
}

SBN_API aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                      uint64_t *stridesNum)
{
    aclnnStatus s = getter_args("aclGetViewStrides", tensor, stridesValue, stridesNum);
    if (s != ACLNN_SUCCESS) return s;
    return hand_out("aclGetViewStrides", tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

SBN_API aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset)
{
    aclnnStatus s = getter_args("aclGetViewOffset", tensor, offset, offset);
    if (s != ACLNN_SUCCESS) return s;
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format)
{
    aclnnStatus s = getter_args("aclGetFormat", tensor, format, format);
    if (s != ACLNN_SUCCESS) return s;
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType)
{
    aclnnStatus s = getter_args("aclGetDataType", tensor, dataType, dataType);
    if (s != ACLNN_SUCCESS) return s;
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

/* The size getters: 161001 for NULL, 161002 for an object of the wrong kind. */
static aclnnStatus get_size(const char *op, const void *obj, uint64_t magic, uint64_t want,
                            uint64_t n, uint64_t *size)
{
    if (obj == NULL || size == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "%s is NULL",
                             obj == NULL ? "the array" : "size");
    if (magic != want) return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%p is not live", obj);
    *size = n;
    return ACLNN_SUCCESS;
}

SBN_API aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size)
{
    return get_size("aclGetIntArraySize", array, array ? array->magic : 0,
                    SBN_ACL_INT_ARRAY_MAGIC, array ? array->size : 0, size);
}

SBN_API aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size)
{
    return get_size("aclGetFloatArraySize", array, array ? array->magic : 0,
                    SBN_ACL_FLOAT_ARRAY_MAGIC, array ? array->size : 0, size);
}

SBN_API aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size)
{
    return get_size("aclGetBoolArraySize", array, array ? array->magic : 0,
                    SBN_ACL_BOOL_ARRAY_MAGIC, array ? array->size : 0, size);
}

SBN_API aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size)
{
    return get_size("aclGetTensorListSize", tensorList, tensorList ? tensorList->magic : 0,
                    SBN_ACL_TENSOR_LIST_MAGIC, tensorList ? tensorList->size : 0, size);
}
