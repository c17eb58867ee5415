/*
 * test_acl_scalar_list.c - aclCreateScalarList / aclDestroyScalarList (issue 12):
 * a list of scalars and an empty one, NULL entries, value NULL with a size and a
 * size whose bytes overflow (NULL and a message), destroy of NULL (0), of a stale
 * or foreign handle (161002, never dereferenced), the list owning its scalars (they
 * are dead afterwards; one listed twice, or destroyed before, is not destroyed
 * again), and a scalar list handle refused where another kind is expected.
 */
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_internal.h"
#include "aclnn_support.h"
#include "harness/harness.h"

static void create_and_destroy(void)
{
    float a = 1.5f;
    int32_t b = 7;
    aclScalar *s[3];
    aclScalarList *list;
    s[0] = aclCreateScalar(&a, ACL_FLOAT);
    s[1] = aclCreateScalar(&b, ACL_INT32);
    s[2] = NULL;
    CHECK(s[0] != NULL && s[1] != NULL);
    list = aclCreateScalarList((const aclScalar *const *)s, 3);
    CHECK(list != NULL);
    CHECK(sbn__acl_scalar_list_size(list) == 3);
    CHECK_ACL(aclDestroyScalarList(list), ACLNN_SUCCESS);
    /* the list owned its scalars */
    CHECK_ACL(aclDestroyScalar(s[0]), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyScalar(s[1]), ACLNN_ERR_PARAM_INVALID);
    /* a stale list handle */
    CHECK_ACL(aclDestroyScalarList(list), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("not a live aclScalarList"));
    CHECK(sbn__acl_scalar_list_size(list) == 0);
    CHECK_ACL(aclDestroyScalarList(NULL), ACLNN_SUCCESS);
}

static void empty_and_bad_arguments(void)
{
    float a = 2.0f;
    aclScalar *s = aclCreateScalar(&a, ACL_FLOAT);
    aclScalarList *list = aclCreateScalarList(NULL, 0);
    CHECK(list != NULL && sbn__acl_scalar_list_size(list) == 0);
    CHECK_ACL(aclDestroyScalarList(list), ACLNN_SUCCESS);
    CHECK(aclCreateScalarList(NULL, 2) == NULL);
    CHECK(atsup_msg_has("value is NULL"));
    CHECK(aclCreateScalarList((const aclScalar *const *)&s, UINT64_MAX / 4) == NULL);
    CHECK(atsup_msg_has("too large"));
    /* foreign pointers and other kinds are refused */
    CHECK_ACL(aclDestroyScalarList((const aclScalarList *)&a), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyScalarList((const aclScalarList *)s), ACLNN_ERR_PARAM_INVALID);
    list = aclCreateScalarList((const aclScalar *const *)&s, 1);
    CHECK(list != NULL);
    CHECK_ACL(aclDestroyScalar((const aclScalar *)list), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyScalarList(list), ACLNN_SUCCESS);
}

static void repeated_and_already_destroyed(void)
{
    float a = 3.0f, b = 4.0f;
    aclScalar *s[3];
    aclScalarList *list;
    s[0] = aclCreateScalar(&a, ACL_FLOAT);
    s[1] = s[0];
    s[2] = aclCreateScalar(&b, ACL_FLOAT);
    list = aclCreateScalarList((const aclScalar *const *)s, 3);
    CHECK(list != NULL);
    CHECK_ACL(aclDestroyScalar(s[2]), ACLNN_SUCCESS); /* destroyed on its own first */
    CHECK_ACL(aclDestroyScalarList(list), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyScalar(s[0]), ACLNN_ERR_PARAM_INVALID);
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(create_and_destroy),
    SBN_TEST_CASE(empty_and_bad_arguments),
    SBN_TEST_CASE(repeated_and_already_destroyed),
};

SBN_TEST_MAIN(cases)
