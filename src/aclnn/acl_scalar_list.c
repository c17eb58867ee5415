/*
 * acl_scalar_list.c - aclScalarList, CANN's list of aclScalar handles, with the
 * rules of this project's aclTensorList: aclCreateScalarList copies the handles it
 * is given (NULL entries allowed; value NULL with size > 0, or a size whose bytes
 * overflow, gives NULL and a message; size 0 is an empty list) into one object of
 * the shared registry (aclnn_handles.c), and the caller gets a handle, never the
 * object's memory. The list owns its scalars, as CANN's lists own their elements:
 * aclDestroyScalarList destroys each live scalar once (one listed twice is
 * destroyed once; one already destroyed on its own is skipped, its handle being
 * dead), then the list. NULL gives 0, as every aclDestroy*; a handle that is not a
 * live list gives 161002 and is never dereferenced.
 */
#include <string.h>

#include "aclnn_internal.h"

#define SBN_ACL_SCALAR_LIST_MAGIC 0x53424e534c495354ull /* "SBNSLIST" */

struct aclScalarList {
    uint64_t magic;
    uint64_t size;
    aclScalar **scalars; /* the handles, just past this header */
};

#define LIST_HEADER_BYTES ((sizeof(struct aclScalarList) + 15u) / 16u * 16u)

SBN_ACL_API aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size)
{
    static const char *op = "aclCreateScalarList";
    struct aclScalarList *list;
    size_t bytes, total;
    sbn__acl_clear_error();
    if (value == NULL && size > 0) {
        sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op, "value is NULL with size %llu",
                      (unsigned long long)size);
        return NULL;
    }
    if (size > SIZE_MAX / sizeof(aclScalar *) ||
        !sbn__acl_add_size((size_t)size * sizeof(aclScalar *), LIST_HEADER_BYTES, &total)) {
        sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "size %llu is too large",
                      (unsigned long long)size);
        return NULL;
    }
    bytes = (size_t)size * sizeof(aclScalar *);
    list = (struct aclScalarList *)sbn__acl_object_new(SBN_ACL_KIND_SCALAR_LIST, total);
    if (list == NULL) {
        sbn__acl_fail(ACLNN_ERR_INNER, op, "out of memory for a list of %llu scalars",
                      (unsigned long long)size);
        return NULL;
    }
    list->magic = SBN_ACL_SCALAR_LIST_MAGIC;
    list->size = size;
    list->scalars = (aclScalar **)(void *)((unsigned char *)list + LIST_HEADER_BYTES);
    if (bytes > 0) memcpy(list->scalars, value, bytes);
    return (aclScalarList *)sbn__acl_object_handle(list);
}

SBN_ACL_API aclnnStatus aclDestroyScalarList(const aclScalarList *array)
{
    struct aclScalarList *list;
    uint64_t i, j;
    sbn__acl_clear_error();
    if (array == NULL) return ACLNN_SUCCESS;
    /* out of the registry first: a second destroy of the same list finds it dead */
    sbn__acl_registry_lock();
    list = (struct aclScalarList *)sbn__acl_object_find_locked(array, SBN_ACL_KIND_SCALAR_LIST);
    if (list != NULL) sbn__acl_object_unlink_locked(list);
    sbn__acl_registry_unlock();
    if (list == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalarList",
                             "%p is not a live aclScalarList", (const void *)array);
    for (i = 0; i < list->size; i++) {
        const aclScalar *s = list->scalars[i];
        int seen = 0;
        for (j = 0; j < i && !seen; j++) seen = list->scalars[j] == s;
        if (!seen && s != NULL) sbn__acl_object_destroy(s, SBN_ACL_KIND_SCALAR);
    }
    sbn__acl_object_free(list);
    return ACLNN_SUCCESS;
}

uint64_t sbn__acl_scalar_list_size(const aclScalarList *array)
{
    struct aclScalarList *list =
        (struct aclScalarList *)sbn__acl_object_get(array, SBN_ACL_KIND_SCALAR_LIST);
    return list != NULL ? list->size : 0;
}
