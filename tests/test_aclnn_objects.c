/*
 * test_aclnn_objects.c - the aclnn objects of aclnn/acl_meta.h: aclCreateTensor
 * (every argument copied, strides defaulting to contiguous when NULL as in CANN,
 * NULL data allowed, rank 0 and 64, each invalid argument giving NULL with a
 * recent message), every getter (values, arrays handed out with malloc, NULL
 * arguments -> 161001, a pointer that is not a live object -> 161002), scalars of
 * each dtype, the int/float/bool arrays (copies, sizes, NULL with size 0), the
 * tensor list (owns its tensors, a tensor listed twice destroyed once), destroy
 * of NULL (success) and of foreign memory (161002), and allocation failure: a
 * counting allocator fails the k-th allocation for every k until each create
 * succeeds, and no allocation is left live after the failure or the destroy.
 * Also the shared checks (codes, and messages naming op, argument, dtype, format,
 * shape and rule), dtype/format names, numel and shape strings, the native views
 * (dtype map, offsets, channels-last permutation, NULL data, rank > 8) and the
 * mapping of native statuses to aclnn codes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn/aclnn_internal.h"
#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_support.h"
#include "harness/harness.h"
#include "support/alloc_counter.h"

/* The objects behind handles (internal API), to check what they hold. */
#define TENSOR(h) sbn__acl_tensor_of(h)
#define SCALAR(h) ((const aclScalar *)sbn__acl_object_get((h), SBN_ACL_KIND_SCALAR))
#define INTS(h) ((const aclIntArray *)sbn__acl_object_get((h), SBN_ACL_KIND_INT_ARRAY))
#define FLOATS(h) ((const aclFloatArray *)sbn__acl_object_get((h), SBN_ACL_KIND_FLOAT_ARRAY))
#define BOOLS(h) ((const aclBoolArray *)sbn__acl_object_get((h), SBN_ACL_KIND_BOOL_ARRAY))
#define LIST(h) ((const aclTensorList *)sbn__acl_object_get((h), SBN_ACL_KIND_TENSOR_LIST))

/* ---- tensors ---- */

static void tensor_create_and_getters(void)
{
    const int64_t dims[3] = {2, 3, 4}, strides[3] = {1, 8, 2}, storage[2] = {5, 10};
    float data[64];
    int64_t *got = NULL, offset = -1;
    uint64_t n = 99;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    aclDataType dtype = ACL_DT_UNDEFINED;
    int64_t in_dims[3] = {2, 3, 4};
    aclTensor *t = aclCreateTensor(in_dims, 3, ACL_FLOAT16, strides, 7, ACL_FORMAT_NCL, storage,
                                   2, data);
    CHECK(t != NULL);
    in_dims[0] = 100; /* the tensor holds a copy */
    CHECK(TENSOR(t)->data == data && TENSOR(t)->offset == 7 &&
          TENSOR(t)->magic == SBN_ACL_TENSOR_MAGIC);
    CHECK_ACL(aclGetViewShape(t, &got, &n), ACLNN_SUCCESS);
    CHECK(n == 3 && memcmp(got, dims, sizeof dims) == 0);
    sbn_acl_free_array(got);
    CHECK_ACL(aclGetViewStrides(t, &got, &n), ACLNN_SUCCESS);
    CHECK(n == 3 && memcmp(got, strides, sizeof strides) == 0);
    sbn_acl_free_array(got);
    CHECK_ACL(aclGetStorageShape(t, &got, &n), ACLNN_SUCCESS);
    CHECK(n == 2 && got[0] == 5 && got[1] == 10);
    sbn_acl_free_array(got);
    CHECK_ACL(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
    CHECK(offset == 7);
    CHECK_ACL(aclGetFormat(t, &format), ACLNN_SUCCESS);
    CHECK(format == ACL_FORMAT_NCL);
    CHECK_ACL(aclGetDataType(t, &dtype), ACLNN_SUCCESS);
    CHECK(dtype == ACL_FLOAT16);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
}

static void tensor_null_stride_is_contiguous(void)
{
    const int64_t dims[4] = {2, 3, 4, 5};
    int64_t *got = NULL;
    uint64_t n = 0;
    aclTensor *t = aclCreateTensor(dims, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 4, NULL);
    CHECK_MSG(t != NULL, "NULL strides (CANN's documented example) must be accepted");
    CHECK_ACL(aclGetViewStrides(t, &got, &n), ACLNN_SUCCESS);
    CHECK(n == 4 && got[0] == 60 && got[1] == 20 && got[2] == 5 && got[3] == 1);
    sbn_acl_free_array(got);
    CHECK(TENSOR(t)->data == NULL); /* data may come later (aclSet*TensorAddr) */
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
}

static void tensor_rank_zero_and_max(void)
{
    int64_t dims[SBN_ACL_MAX_CREATE_DIMS + 1], strides[SBN_ACL_MAX_CREATE_DIMS + 1];
    int64_t *got = NULL;
    uint64_t n = 7, i;
    float x = 1.0f;
    aclTensor *t = aclCreateTensor(NULL, 0, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 0, &x);
    CHECK(t != NULL);
    CHECK_ACL(aclGetViewShape(t, &got, &n), ACLNN_SUCCESS);
    CHECK(n == 0 && got != NULL);
    sbn_acl_free_array(got);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
    for (i = 0; i <= SBN_ACL_MAX_CREATE_DIMS; i++) dims[i] = 1, strides[i] = 1;
    t = aclCreateTensor(dims, SBN_ACL_MAX_CREATE_DIMS, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims,
                        SBN_ACL_MAX_CREATE_DIMS, &x);
    CHECK(t != NULL && TENSOR(t)->ndim == SBN_ACL_MAX_CREATE_DIMS);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
    t = aclCreateTensor(dims, SBN_ACL_MAX_CREATE_DIMS + 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND,
                        dims, 1, &x);
    CHECK(t == NULL && atsup_msg_has("aclCreateTensor"));
    t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims,
                        SBN_ACL_MAX_CREATE_DIMS + 1, &x);
    CHECK(t == NULL && atsup_msg_has("storageDimsNum"));
}

static void tensor_bad_arguments(void)
{
    const int64_t dims[2] = {2, 3}, neg[2] = {2, -3}, strides[2] = {3, 1}, neg_strides[2] = {-3, 1};
    float x[6];
    CHECK(aclGetRecentErrMsg() == NULL);
    CHECK(aclCreateTensor(NULL, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, x) == NULL);
    CHECK(atsup_msg_has("viewDims is NULL"));
    CHECK(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, NULL, 2, x) == NULL);
    CHECK(atsup_msg_has("storageDims is NULL"));
    CHECK(aclCreateTensor(neg, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, x) == NULL);
    CHECK(atsup_msg_has("viewDims[1] is -3"));
    CHECK(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, neg, 2, x) == NULL);
    CHECK(atsup_msg_has("storageDims[1]"));
    CHECK(aclCreateTensor(dims, 2, ACL_FLOAT, neg_strides, 0, ACL_FORMAT_ND, dims, 2, x) == NULL);
    CHECK(atsup_msg_has("stride[0]"));
    CHECK(aclCreateTensor(dims, 2, ACL_FLOAT, strides, -1, ACL_FORMAT_ND, dims, 2, x) == NULL);
    CHECK(atsup_msg_has("offset"));
    CHECK(aclGetRecentErrMsg() == NULL); /* fetched and cleared */
}

static void getters_bad_arguments(void)
{
    const int64_t dims[1] = {4};
    float x[4];
    int64_t *arr = NULL, off = 0;
    uint64_t n = 0;
    aclFormat f;
    aclDataType d;
    aclTensor fake;
    aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 1, x);
    CHECK(t != NULL);
    memset(&fake, 0, sizeof fake);
    CHECK_ACL(aclGetViewShape(NULL, &arr, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetViewShape(t, NULL, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetViewShape(t, &arr, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetStorageShape(NULL, &arr, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetStorageShape(t, NULL, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetViewStrides(t, &arr, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetViewOffset(NULL, &off), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetViewOffset(t, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetFormat(t, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetDataType(NULL, &d), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(atsup_msg_has("aclGetDataType"));
    CHECK_ACL(aclGetViewShape(&fake, &arr, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclGetFormat(&fake, &f), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("not a live aclTensor"));
    CHECK_ACL(aclDestroyTensor(&fake), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("aclDestroyTensor"));
    CHECK_ACL(aclDestroyTensor(NULL), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
}

/* ---- scalars ---- */

static void scalar_each_dtype(void)
{
    float f = 1.5f;
    double dbl = -2.25;
    int64_t i64 = -1234567890123ll;
    int32_t i32 = 77;
    bool b = true;
    uint16_t half = 0x3c00; /* 1.0 in fp16 */
    int8_t i8 = -5;
    aclScalar *s;
    s = aclCreateScalar(&f, ACL_FLOAT);
    CHECK(s != NULL && SCALAR(s)->dtype == ACL_FLOAT &&
          memcmp(SCALAR(s)->value.bytes, &f, sizeof f) == 0);
    f = 9.0f; /* a copy */
    CHECK(*(const float *)(const void *)SCALAR(s)->value.bytes == 1.5f);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&dbl, ACL_DOUBLE);
    CHECK(s != NULL && memcmp(SCALAR(s)->value.bytes, &dbl, sizeof dbl) == 0);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&i64, ACL_INT64);
    CHECK(s != NULL && memcmp(SCALAR(s)->value.bytes, &i64, sizeof i64) == 0);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&i32, ACL_INT32);
    CHECK(s != NULL && memcmp(SCALAR(s)->value.bytes, &i32, sizeof i32) == 0);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&b, ACL_BOOL);
    CHECK(s != NULL && SCALAR(s)->value.bytes[0] == 1);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&half, ACL_FLOAT16);
    CHECK(s != NULL && memcmp(SCALAR(s)->value.bytes, &half, 2) == 0 &&
          SCALAR(s)->value.bytes[2] == 0);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    s = aclCreateScalar(&i8, ACL_INT8);
    CHECK(s != NULL && (int8_t)SCALAR(s)->value.bytes[0] == -5);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    CHECK(aclCreateScalar(NULL, ACL_FLOAT) == NULL && atsup_msg_has("value is NULL"));
    CHECK(aclCreateScalar(&f, ACL_STRING) == NULL && atsup_msg_has("STRING"));
    CHECK(aclCreateScalar(&f, ACL_DT_UNDEFINED) == NULL);
    CHECK(aclCreateScalar(&f, (aclDataType)1000) == NULL);
    CHECK_ACL(aclDestroyScalar(NULL), ACLNN_SUCCESS);
}

/* ---- arrays ---- */

static void arrays_copy_and_size(void)
{
    int64_t iv[3] = {4, -5, 6};
    float fv[2] = {0.5f, -1.0f};
    bool bv[3] = {true, false, true};
    uint64_t n = 0;
    aclIntArray *ia = aclCreateIntArray(iv, 3);
    aclFloatArray *fa = aclCreateFloatArray(fv, 2);
    aclBoolArray *ba = aclCreateBoolArray(bv, 3);
    CHECK(ia != NULL && fa != NULL && ba != NULL);
    iv[0] = 0, fv[0] = 0, bv[0] = false;
    CHECK(INTS(ia)->values[0] == 4 && INTS(ia)->values[1] == -5 && INTS(ia)->values[2] == 6);
    CHECK(FLOATS(fa)->values[0] == 0.5f && FLOATS(fa)->values[1] == -1.0f);
    CHECK(BOOLS(ba)->values[0] && !BOOLS(ba)->values[1] && BOOLS(ba)->values[2]);
    CHECK((uintptr_t)INTS(ia)->values % 8 == 0);
    CHECK_ACL(aclGetIntArraySize(ia, &n), ACLNN_SUCCESS);
    CHECK(n == 3);
    CHECK_ACL(aclGetFloatArraySize(fa, &n), ACLNN_SUCCESS);
    CHECK(n == 2);
    CHECK_ACL(aclGetBoolArraySize(ba, &n), ACLNN_SUCCESS);
    CHECK(n == 3);
    CHECK_ACL(aclGetIntArraySize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetFloatArraySize(fa, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetBoolArraySize(NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);
    /* an object of another kind is not taken for this one */
    CHECK_ACL(aclGetIntArraySize((const aclIntArray *)(const void *)fa, &n),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyBoolArray((const aclBoolArray *)(const void *)ia), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyIntArray(ia), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyIntArray(NULL), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyFloatArray(NULL), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyBoolArray(NULL), ACLNN_SUCCESS);
}

static void arrays_empty_and_null(void)
{
    uint64_t n = 9;
    aclIntArray *ia = aclCreateIntArray(NULL, 0);
    aclBoolArray *ba = aclCreateBoolArray(NULL, 0);
    CHECK(ia != NULL && ba != NULL);
    CHECK_ACL(aclGetIntArraySize(ia, &n), ACLNN_SUCCESS);
    CHECK(n == 0);
    CHECK_ACL(aclDestroyIntArray(ia), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
    CHECK(aclCreateIntArray(NULL, 3) == NULL && atsup_msg_has("aclCreateIntArray"));
    CHECK(aclCreateFloatArray(NULL, 1) == NULL && atsup_msg_has("aclCreateFloatArray"));
    CHECK(aclCreateBoolArray(NULL, 2) == NULL && atsup_msg_has("aclCreateBoolArray"));
    CHECK(aclCreateTensorList(NULL, 2) == NULL && atsup_msg_has("aclCreateTensorList"));
    CHECK(aclCreateIntArray((const int64_t *)(const void *)&n, UINT64_MAX / 4) == NULL);
}

/* ---- tensor lists ---- */

static void tensor_list_owns_tensors(void)
{
    const int64_t dims[1] = {3};
    float x[3];
    uint64_t n = 0;
    aclTensor *a = aclCreateTensor(dims, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 1, x);
    aclTensor *b = aclCreateTensor(dims, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 1, x);
    const aclTensor *items[4];
    aclTensorList *l;
    CHECK(a != NULL && b != NULL);
    items[0] = a, items[1] = NULL, items[2] = b, items[3] = a; /* NULL entry, a listed twice */
    l = aclCreateTensorList(items, 4);
    CHECK(l != NULL);
    items[0] = NULL; /* the list keeps its own array */
    CHECK(LIST(l)->tensors[0] == a && LIST(l)->tensors[1] == NULL &&
          LIST(l)->tensors[3] == a);
    CHECK_ACL(aclGetTensorListSize(l, &n), ACLNN_SUCCESS);
    CHECK(n == 4);
    CHECK_ACL(aclGetTensorListSize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(aclGetTensorListSize(l, NULL), ACLNN_ERR_PARAM_NULLPTR);
    /* destroys a and b once each (ASan would report a double free or a leak) */
    CHECK_ACL(aclDestroyTensorList(l), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensorList(NULL), ACLNN_SUCCESS);
    l = aclCreateTensorList(NULL, 0);
    CHECK(l != NULL);
    CHECK_ACL(aclDestroyTensorList(l), ACLNN_SUCCESS);
}

/* ---- allocation failure ---- */

typedef enum make_kind {
    MAKE_TENSOR,
    MAKE_SCALAR,
    MAKE_INTS,
    MAKE_FLOATS,
    MAKE_BOOLS,
    MAKE_LIST
} make_kind;

/* Makes one object of `kind` (a list makes its two tensors first); 1 on success. */
static int make_and_destroy(make_kind kind, int *made)
{
    const int64_t dims[2] = {2, 2};
    int64_t iv[2] = {1, 2};
    float fv[2] = {1, 2}, x[4];
    bool bv[2] = {true, false};
    double d = 3.0;
    aclTensor *ta, *tb;
    const aclTensor *items[2];
    *made = 0;
    switch (kind) {
    case MAKE_TENSOR: {
        aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, x);
        if (!t) return 0;
        *made = 1;
        return aclDestroyTensor(t) == ACLNN_SUCCESS;
    }
    case MAKE_SCALAR: {
        aclScalar *s = aclCreateScalar(&d, ACL_DOUBLE);
        if (!s) return 0;
        *made = 1;
        return aclDestroyScalar(s) == ACLNN_SUCCESS;
    }
    case MAKE_INTS: {
        aclIntArray *a = aclCreateIntArray(iv, 2);
        if (!a) return 0;
        *made = 1;
        return aclDestroyIntArray(a) == ACLNN_SUCCESS;
    }
    case MAKE_FLOATS: {
        aclFloatArray *a = aclCreateFloatArray(fv, 2);
        if (!a) return 0;
        *made = 1;
        return aclDestroyFloatArray(a) == ACLNN_SUCCESS;
    }
    case MAKE_BOOLS: {
        aclBoolArray *a = aclCreateBoolArray(bv, 2);
        if (!a) return 0;
        *made = 1;
        return aclDestroyBoolArray(a) == ACLNN_SUCCESS;
    }
    case MAKE_LIST: {
        aclTensorList *l;
        ta = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, x);
        if (!ta) return 0;
        tb = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, x);
        if (!tb) {
            aclDestroyTensor(ta);
            return 0;
        }
        items[0] = ta, items[1] = tb;
        l = aclCreateTensorList(items, 2);
        if (!l) {
            aclDestroyTensor(ta), aclDestroyTensor(tb);
            return 0;
        }
        *made = 1;
        return aclDestroyTensorList(l) == ACLNN_SUCCESS;
    }
    }
    return 0;
}

static void allocation_failure_each_create(void)
{
    static const char *const names[] = {"tensor", "scalar", "int array", "float array",
                                        "bool array", "tensor list"};
    int kind;
    for (kind = MAKE_TENSOR; kind <= MAKE_LIST; kind++) {
        long k, total = -1;
        for (k = 1; k <= 100 && total < 0; k++) {
            tsup_counter a = {0};
            int made = 0, ok;
            a.fail_at = k;
            tsup_counter_install(&a);
            ok = make_and_destroy((make_kind)kind, &made);
            sbn_set_allocator(NULL, NULL, NULL);
            CHECK_MSG(a.live == 0, "%s, k=%ld: %ld allocation(s) left live", names[kind], k,
                      a.live);
            if (made) {
                CHECK_MSG(ok, "%s: destroy failed", names[kind]);
                CHECK_MSG(a.calls < k, "%s: allocation %ld failed but the create succeeded",
                          names[kind], k);
                total = a.calls;
            } else {
                CHECK_MSG(atsup_msg_has("out of memory"), "%s, k=%ld: no out-of-memory message",
                          names[kind], k);
            }
        }
        CHECK_MSG(total >= 1, "%s never used the allocator hook", names[kind]);
    }
}

static void getters_hand_out_caller_memory(void)
{
    const int64_t dims[2] = {3, 4};
    float x[12];
    int64_t *got = NULL;
    uint64_t n = 0;
    tsup_counter a = {0};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, x);
    CHECK(t != NULL);
    tsup_counter_install(&a);
    CHECK_ACL(aclGetViewShape(t, &got, &n), ACLNN_SUCCESS);
    sbn_set_allocator(NULL, NULL, NULL);
    /* the array is the caller's (delete[] in C++, sbn_acl_free_array in C), not the hook's */
    CHECK(a.calls == 0 && n == 2 && got[0] == 3 && got[1] == 4);
    sbn_acl_free_array(got);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
}

/* ---- checks, views and the native mapping (aclnn_check.c, aclnn_view.c, aclnn_error.c) ---- */

static void checks_codes_and_messages(void)
{
    const int64_t dims[2] = {2, 3}, vec[1] = {3};
    float x[6];
    aclTensor fake;
    aclTensor *t = aclCreateTensor(dims, 2, ACL_INT32, NULL, 0, ACL_FORMAT_NC1HWC0, dims, 2, x);
    aclTensor *h = aclCreateTensor(dims, 2, ACL_FLOAT16, NULL, 0, ACL_FORMAT_NCHW, dims, 2, x);
    aclTensor *v = aclCreateTensor(vec, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, vec, 1, x);
    CHECK(t != NULL && h != NULL && v != NULL);
    memset(&fake, 0, sizeof fake);
    CHECK_ACL(sbn__acl_check_null("aclnnX", NULL, "input"), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(atsup_msg_has("aclnnX: input is NULL"));
    CHECK_ACL(sbn__acl_check_null("aclnnX", x, "input"), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_dtype("aclnnX", TENSOR(h), "input", &SBN_ACL_FLOATS),
              ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_dtype("aclnnX", TENSOR(h), "mean", &SBN_ACL_FLOAT_ONLY),
              ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("aclnnX: mean has dtype FLOAT16, format NCHW, shape [2, 3]"));
    CHECK_ACL(sbn__acl_check_dtype("aclnnX", TENSOR(t), "input", &SBN_ACL_FLOATS),
              ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("must be one of: FLOAT, FLOAT16, BF16"));
    CHECK_ACL(sbn__acl_check_dtype("aclnnX", NULL, "input", &SBN_ACL_FLOATS),
              ACLNN_ERR_PARAM_NULLPTR);
    CHECK_ACL(sbn__acl_check_dtype("aclnnX", &fake, "input", &SBN_ACL_FLOATS),
              ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("not a live aclTensor"));
    CHECK_ACL(sbn__acl_check_format("aclnnX", TENSOR(h), "input"), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_format("aclnnX", TENSOR(t), "input"), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("format NC1HWC0"));
    CHECK_ACL(sbn__acl_check_rank("aclnnX", TENSOR(h), "input", 2, 8), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_rank("aclnnX", TENSOR(v), "input", 2, 8), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("rank 1 must be in 2..8"));
    CHECK_ACL(sbn__acl_check_vector("aclnnX", TENSOR(v), "mean", 3), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_vector("aclnnX", TENSOR(v), "mean", 4), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("shape [4]"));
    CHECK_ACL(sbn__acl_check_vector("aclnnX", TENSOR(h), "mean", 3), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(sbn__acl_check_same_shape("aclnnX", TENSOR(t), "out", TENSOR(h), "input"),
              ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_check_same_shape("aclnnX", TENSOR(v), "out", TENSOR(h), "input"),
              ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("equal the shape of input, [2, 3]"));
    CHECK_ACL(sbn__acl_check_same_shape("aclnnX", TENSOR(v), "out", NULL, "input"),
              ACLNN_ERR_PARAM_NULLPTR);
    aclDestroyTensor(t), aclDestroyTensor(h), aclDestroyTensor(v);
}

static void names_formats_numel(void)
{
    static const aclFormat pub[] = {ACL_FORMAT_ND,   ACL_FORMAT_NCHW,  ACL_FORMAT_NHWC,
                                    ACL_FORMAT_HWCN, ACL_FORMAT_NDHWC, ACL_FORMAT_NCDHW,
                                    ACL_FORMAT_NC,   ACL_FORMAT_NCL};
    static const aclFormat priv[] = {ACL_FORMAT_UNDEFINED, ACL_FORMAT_NC1HWC0,
                                     ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_NC1HWC0_C04,
                                     ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NDC1HWC0,
                                     ACL_FRACTAL_Z_3D,      (aclFormat)99};
    const int64_t d23[2] = {2, 3}, d03[2] = {0, 3};
    char buf[64];
    float x[6];
    aclTensor *a = aclCreateTensor(d23, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d23, 2, x);
    aclTensor *b = aclCreateTensor(d03, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d03, 2, x);
    aclTensor *c = aclCreateTensor(NULL, 0, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 0, x);
    int i;
    for (i = 0; i < 8; i++) CHECK(sbn__acl_format_is_public(pub[i]));
    for (i = 0; i < 8; i++) CHECK(!sbn__acl_format_is_public(priv[i]));
    CHECK(strcmp(sbn__acl_dtype_name(ACL_BF16), "BF16") == 0);
    CHECK(strcmp(sbn__acl_dtype_name((aclDataType)500), "UNKNOWN_DTYPE") == 0);
    CHECK(strcmp(sbn__acl_format_name(ACL_FRACTAL_Z_3D), "FRACTAL_Z_3D") == 0);
    CHECK(a && b && c);
    CHECK(sbn__acl_numel(TENSOR(a)) == 6 && sbn__acl_numel(TENSOR(b)) == 0 &&
          sbn__acl_numel(TENSOR(c)) == 1);
    CHECK(sbn__acl_numel(NULL) == 0);
    CHECK(strcmp(sbn__acl_shape_str(TENSOR(a), buf, sizeof buf), "[2, 3]") == 0);
    CHECK(strcmp(sbn__acl_shape_str(TENSOR(c), buf, sizeof buf), "[]") == 0);
    CHECK(strcmp(sbn__acl_shape_str(NULL, buf, sizeof buf), "(null)") == 0);
    CHECK(strcmp(sbn__acl_shape_str(TENSOR(a), buf, 4), "[2,") == 0);
    aclDestroyTensor(a), aclDestroyTensor(b), aclDestroyTensor(c);
}

static void views_of_tensors(void)
{
    static const struct { aclDataType acl; sbn_dtype native; } map[] = {
        {ACL_FLOAT, SBN_F32}, {ACL_FLOAT16, SBN_F16}, {ACL_BF16, SBN_BF16},
        {ACL_DOUBLE, SBN_F64}, {ACL_INT32, SBN_I32},  {ACL_INT64, SBN_I64}};
    const int64_t dims[4] = {2, 4, 5, 3}, strides[4] = {60, 15, 3, 1};
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    float x[128];
    sbn_tensor v;
    int i, ok = 7;
    aclTensor *t, *u, *n, *r9;
    for (i = 0; i < 6; i++) {
        CHECK(sbn__acl_native_dtype(map[i].acl, &ok) == map[i].native && ok == 1);
    }
    sbn__acl_native_dtype(ACL_INT8, &ok);
    CHECK(ok == 0);
    sbn__acl_native_dtype(ACL_BOOL, NULL); /* ok may be NULL */
    t = aclCreateTensor(dims, 4, ACL_FLOAT, strides, 2, ACL_FORMAT_NHWC, dims, 4, x);
    CHECK(t != NULL);
    v = sbn__acl_view(TENSOR(t), 0);
    CHECK(v.data == (void *)(x + 2) && v.dtype == SBN_F32 && v.rank == 4);
    CHECK(v.shape[1] == 4 && v.strides[1] == 15 && v.shape[3] == 3);
    v = sbn__acl_view(TENSOR(t), 1); /* NHWC: C = 3 moves to dim 1 with its stride */
    CHECK(v.data == (void *)(x + 2) && v.rank == 4);
    CHECK(v.shape[0] == 2 && v.shape[1] == 3 && v.shape[2] == 4 && v.shape[3] == 5);
    CHECK(v.strides[0] == 60 && v.strides[1] == 1 && v.strides[2] == 15 && v.strides[3] == 3);
    u = aclCreateTensor(dims + 1, 1, ACL_FLOAT16, NULL, 3, ACL_FORMAT_ND, dims + 1, 1, x);
    CHECK(u != NULL);
    v = sbn__acl_view(TENSOR(u), 1); /* rank 1: channels_last changes nothing */
    CHECK(v.rank == 1 && v.shape[0] == 4 && v.strides[0] == 1);
    CHECK((char *)v.data == (char *)x + 6);
    n = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 5, ACL_FORMAT_ND, dims, 2, NULL);
    CHECK(n != NULL);
    v = sbn__acl_view(TENSOR(n), 0);
    CHECK(v.data == NULL && v.rank == 2); /* no arithmetic on a NULL address */
    r9 = aclCreateTensor(nine, 9, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, nine, 9, x);
    CHECK(r9 != NULL);
    v = sbn__acl_view(TENSOR(r9), 0);
    CHECK(v.rank == -1);
    v = sbn__acl_view(NULL, 0);
    CHECK(v.rank == -1 && v.data == NULL);
    aclDestroyTensor(t), aclDestroyTensor(u), aclDestroyTensor(n), aclDestroyTensor(r9);
}

static void native_status_mapping(void)
{
    sbn_pool_t *pool = NULL;
    CHECK(sbn__acl_from_native(SBN_OK, "aclnnX") == ACLNN_SUCCESS);
    CHECK(sbn__acl_from_native(SBN_NO_SAMPLES, "aclnnX") == ACLNN_SUCCESS);
    CHECK(aclGetRecentErrMsg() == NULL);
    CHECK(sbn_pool_create(0, &pool) != SBN_OK); /* leaves a native sentence */
    CHECK(sbn__acl_from_native(SBN_ERR_BAD_VALUE, "aclnnX") == ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("aclnnX: "));
    CHECK(sbn__acl_from_native(SBN_ERR_NULL_ARGUMENT, "aclnnX") == ACLNN_ERR_PARAM_NULLPTR);
    CHECK(atsup_msg_has("SBN_ERR_NULL_ARGUMENT"));
    CHECK(sbn__acl_from_native(SBN_ERR_OUT_OF_MEMORY, "aclnnX") == ACLNN_ERR_INNER);
    CHECK(sbn__acl_from_native(SBN_ERR_BAD_SHAPE, "aclnnX") == ACLNN_ERR_PARAM_INVALID);
    CHECK(sbn__acl_from_native(SBN_ERR_ALIAS, "aclnnX") == ACLNN_ERR_PARAM_INVALID);
    sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclnnX", "%d", 5);
    sbn__acl_clear_error();
    CHECK(aclGetRecentErrMsg() == NULL);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(tensor_create_and_getters),
    SBN_TEST_CASE(tensor_null_stride_is_contiguous),
    SBN_TEST_CASE(tensor_rank_zero_and_max),
    SBN_TEST_CASE(tensor_bad_arguments),
    SBN_TEST_CASE(getters_bad_arguments),
    SBN_TEST_CASE(scalar_each_dtype),
    SBN_TEST_CASE(arrays_copy_and_size),
    SBN_TEST_CASE(arrays_empty_and_null),
    SBN_TEST_CASE(tensor_list_owns_tensors),
    SBN_TEST_CASE(allocation_failure_each_create),
    SBN_TEST_CASE(getters_hand_out_caller_memory),
    SBN_TEST_CASE(checks_codes_and_messages),
    SBN_TEST_CASE(names_formats_numel),
    SBN_TEST_CASE(views_of_tensors),
    SBN_TEST_CASE(native_status_mapping),
};

SBN_TEST_MAIN(k_cases)
