/*
 * test_aclnn_executor.c - the executor of the two-phase protocol, driven through
 * the internal API of src/aclnn/aclnn_internal.h with a dummy run function that
 * counts its calls and checks its views: the lifecycle (create, add, run, freed
 * by the run), a second run of the same pointer (561103, no use after free under
 * ASan), a destroyed, discarded or foreign (stack) executor, NULL (161001 in
 * phase 2, 561103 in the public calls), another op's executor (161002, still
 * runnable by its own op), a repeatable executor reused many times and then
 * destroyed, address refresh through aclSetInputTensorAddr/aclSetOutputTensorAddr
 * /aclSetTensorAddr (index counting, view offsets kept, a tensor used as input
 * and output refreshed in both views, out-of-range indices), a workspace smaller
 * than promised, NULL and real streams, absent optional tensors, the tensor cap,
 * allocation failure in create, and threads creating, running and sharing
 * executors at once.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn/aclnn_internal.h"
#include "acl/acl.h"
#include "aclnn_support.h"
#include "harness/harness.h"
#include "support/alloc_counter.h"

static const char *const OP = "aclnnDummy";

/* The dummy run: counts calls, remembers the views' data, returns ints[7]. */
static int g_runs;
static void *g_seen[SBN_ACL_EXEC_MAX_TENSORS];

static aclnnStatus dummy_run(aclOpExecutor *e, void *workspace, uint64_t workspace_size)
{
    int i;
    (void)workspace, (void)workspace_size;
    __atomic_add_fetch(&g_runs, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < e->ntensors; i++) g_seen[i] = e->views[i].data;
    return (aclnnStatus)e->ints[7];
}

/* The objects behind handles (internal API): the executor's views, a tensor's data. */
#define EX(h) ((aclOpExecutor *)sbn__acl_object_get((h), SBN_ACL_KIND_EXECUTOR))
#define TENSOR(h) sbn__acl_tensor_of(h)

/* A small 2-D FLOAT tensor over `data` at `offset` elements (its storage: offset + 6). */
static aclTensor *tensor_at(float *data, int64_t offset)
{
    const int64_t dims[2] = {2, 3}, storage[1] = {offset + 6};
    return aclCreateTensor(dims, 2, ACL_FLOAT, NULL, offset, ACL_FORMAT_ND, storage, 1, data);
}

/* Adds tensor handle t to the executor object e with its view (channels_last as given). */
static int add(aclOpExecutor *e, const aclTensor *t, int channels_last, int is_output)
{
    return sbn__acl_exec_add(e, TENSOR(t), sbn__acl_view(TENSOR(t), channels_last), is_output);
}

/* A new executor of OP; its handle (what phase 2 and the public calls take). */
static aclOpExecutor *create(uint64_t workspace)
{
    aclOpExecutor *e = sbn__acl_exec_create(OP, dummy_run, workspace);
    return e == NULL ? NULL : sbn__acl_exec_handle(e);
}

/* The handle of an executor with inputs a, b and output c (views from sbn__acl_view). */
static aclOpExecutor *make3(aclTensor *a, aclTensor *b, aclTensor *c, uint64_t workspace)
{
    aclOpExecutor *h = create(workspace);
    if (h == NULL) return NULL;
    if (add(EX(h), a, 0, 0) != 0 || add(EX(h), b, 0, 0) != 1 || add(EX(h), c, 0, 1) != 2) {
        sbn__acl_exec_discard(h);
        return NULL;
    }
    return h;
}

static void lifecycle_and_double_run(void)
{
    float x[16], y[16], z[16];
    aclTensor *a = tensor_at(x, 0), *b = tensor_at(y, 2), *c = tensor_at(z, 1);
    aclOpExecutor *e = make3(a, b, c, 0);
    CHECK(e != NULL);
    CHECK(sbn__acl_exec_view(EX(e), 1)->data == (void *)(y + 2));
    CHECK(sbn__acl_exec_view(EX(e), -1) == NULL && sbn__acl_exec_view(EX(e), 3) == NULL);
    g_runs = 0;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK(g_runs == 1 && g_seen[0] == x && g_seen[1] == y + 2 && g_seen[2] == z + 1);
    /* freed by the run: the same pointer again is refused without being touched */
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK(atsup_msg_has("not a live executor"));
    CHECK(g_runs == 1);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_ERR_INNER);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_ERR_INNER);
    aclDestroyTensor(a), aclDestroyTensor(b), aclDestroyTensor(c);
}

static void run_status_is_returned_and_executor_freed(void)
{
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 0);
    CHECK(e != NULL);
    EX(e)->ints[7] = ACLNN_ERR_PARAM_INVALID;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    aclDestroyTensor(a);
}

static void destroyed_and_discarded(void)
{
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 0);
    CHECK(e != NULL);
    /* a non-repeatable executor that was never run may be destroyed */
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_ERR_INNER);
    e = make3(a, a, a, 0);
    CHECK(e != NULL);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    e = make3(a, a, a, 0);
    CHECK(e != NULL);
    sbn__acl_exec_discard(e);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    sbn__acl_exec_discard(e);    /* unknown: ignored */
    sbn__acl_exec_discard(NULL); /* ignored */
    aclDestroyTensor(a);
}

static void foreign_and_null(void)
{
    struct aclOpExecutor fake;
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    memset(&fake, 0, sizeof fake);
    fake.op = OP;
    fake.run = dummy_run;
    g_runs = 0;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, &fake, NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK(g_runs == 0);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(&fake), ACLNN_ERR_INNER);
    CHECK_ACL(aclDestroyAclOpExecutor(&fake), ACLNN_ERR_INNER);
    CHECK_ACL(aclSetInputTensorAddr(&fake, 0, a, x), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(atsup_msg_has("executor is NULL"));
    CHECK_ACL(aclSetAclOpExecutorRepeatable(NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(aclDestroyAclOpExecutor(NULL), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(aclSetInputTensorAddr(NULL, 0, a, x), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(aclSetOutputTensorAddr(NULL, 0, a, x), ACLNN_ERR_INNER_NULLPTR);
    CHECK_ACL(aclSetTensorAddr(NULL, 0, a, x), ACLNN_ERR_INNER_NULLPTR);
    aclDestroyTensor(a);
}

static void other_ops_executor(void)
{
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 0);
    CHECK(e != NULL);
    g_runs = 0;
    CHECK_ACL(sbn__acl_exec_run("aclnnOther", NULL, 0, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("created by aclnnDummyGetWorkspaceSize"));
    CHECK(g_runs == 0);
    /* not consumed: its own op still runs it */
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK(g_runs == 1);
    aclDestroyTensor(a);
}

static void repeatable_reuse(void)
{
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 0);
    int i;
    CHECK(e != NULL);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS); /* twice is fine */
    g_runs = 0;
    for (i = 0; i < 500; i++) CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK(g_runs == 500);
    /* a failing run does not free a repeatable executor */
    EX(e)->ints[7] = ACLNN_ERR_PARAM_INVALID;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_PARAM_INVALID);
    EX(e)->ints[7] = 0;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_ERR_INNER_NULLPTR);
    aclDestroyTensor(a);
}

static void address_refresh(void)
{
    float x[16], y[16], z[16], x2[16], y2[16], z2[16];
    aclTensor *a = tensor_at(x, 0), *b = tensor_at(y, 3), *c = tensor_at(z, 5);
    aclOpExecutor *e = make3(a, b, c, 0);
    CHECK(e != NULL);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    /* input index 1 is b; the view keeps its offset of 3 elements */
    CHECK_ACL(aclSetInputTensorAddr(e, 1, b, y2), ACLNN_SUCCESS);
    CHECK(TENSOR(b)->data == y2 && EX(e)->views[1].data == (void *)(y2 + 3));
    CHECK_ACL(aclSetInputTensorAddr(e, 0, a, x2), ACLNN_SUCCESS);
    CHECK(EX(e)->views[0].data == x2);
    CHECK_ACL(aclSetOutputTensorAddr(e, 0, c, z2), ACLNN_SUCCESS);
    CHECK(EX(e)->views[2].data == (void *)(z2 + 5));
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK(g_seen[0] == x2 && g_seen[1] == y2 + 3 && g_seen[2] == z2 + 5);
    /* aclSetTensorAddr counts inputs then outputs: 0 = a, 1 = b, 2 = c */
    CHECK_ACL(aclSetTensorAddr(e, 2, c, z), ACLNN_SUCCESS);
    CHECK(EX(e)->views[2].data == (void *)(z + 5));
    CHECK_ACL(aclSetTensorAddr(e, 1, b, y), ACLNN_SUCCESS);
    CHECK(EX(e)->views[1].data == (void *)(y + 3));
    /* out of range */
    CHECK_ACL(aclSetInputTensorAddr(e, 2, b, y), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("has 2 inputs"));
    CHECK_ACL(aclSetOutputTensorAddr(e, 1, c, z), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("has 1 output"));
    CHECK_ACL(aclSetTensorAddr(e, 3, c, z), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclSetTensorAddr(e, (size_t)-1, c, z), ACLNN_ERR_PARAM_INVALID);
    /* NULL tensor */
    CHECK_ACL(aclSetInputTensorAddr(e, 0, NULL, x), ACLNN_ERR_INNER_NULLPTR);
    /* a NULL address is stored as NULL (no arithmetic on it) */
    CHECK_ACL(aclSetInputTensorAddr(e, 1, b, NULL), ACLNN_SUCCESS);
    CHECK(EX(e)->views[1].data == NULL && TENSOR(b)->data == NULL);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    aclDestroyTensor(a), aclDestroyTensor(b), aclDestroyTensor(c);
}

static void address_refresh_in_place_and_late_data(void)
{
    float x[16], r[4], r2[4];
    const int64_t dims[1] = {3}, storage[1] = {4};
    aclTensor *in = tensor_at(x, 0);
    /* created without data, as CANN allows; it is both an input and an output */
    aclTensor *run = aclCreateTensor(dims, 1, ACL_FLOAT, NULL, 1, ACL_FORMAT_ND, storage, 1, NULL);
    aclOpExecutor *e;
    CHECK(in != NULL && run != NULL);
    e = create(0);
    CHECK(e != NULL);
    CHECK(add(EX(e), in, 0, 0) == 0);
    CHECK(sbn__acl_exec_add(EX(e), NULL, sbn__acl_view(NULL, 0), 0) == -1); /* absent optional */
    CHECK(add(EX(e), run, 0, 0) == 1);
    CHECK(add(EX(e), run, 0, 1) == 2);
    CHECK(EX(e)->views[1].data == NULL && EX(e)->views[2].data == NULL);
    /* input index 1 is `run` (the absent optional is not counted); both views follow */
    CHECK_ACL(aclSetInputTensorAddr(e, 1, run, r), ACLNN_SUCCESS);
    CHECK(EX(e)->views[1].data == (void *)(r + 1) && EX(e)->views[2].data == (void *)(r + 1));
    CHECK_ACL(aclSetOutputTensorAddr(e, 0, run, r2), ACLNN_SUCCESS);
    CHECK(EX(e)->views[1].data == (void *)(r2 + 1) && EX(e)->views[2].data == (void *)(r2 + 1));
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK(g_seen[2] == r2 + 1);
    aclDestroyTensor(in), aclDestroyTensor(run);
}

static void address_refresh_channels_last_view(void)
{
    float x[64], x2[64];
    const int64_t dims[4] = {2, 2, 2, 3}, storage[1] = {28}; /* NHWC, C = 3 */
    aclTensor *t = aclCreateTensor(dims, 4, ACL_FLOAT, NULL, 4, ACL_FORMAT_NHWC, storage, 1, x);
    aclOpExecutor *e = create(0);
    sbn_tensor v;
    CHECK(t != NULL && e != NULL);
    v = sbn__acl_view(TENSOR(t), 1);
    CHECK(v.shape[1] == 3 && v.strides[1] == 1 && v.data == (void *)(x + 4));
    CHECK(sbn__acl_exec_add(EX(e), TENSOR(t), v, 0) == 0);
    CHECK_ACL(aclSetInputTensorAddr(e, 0, t, x2), ACLNN_SUCCESS);
    CHECK(EX(e)->views[0].data == (void *)(x2 + 4) && EX(e)->views[0].shape[1] == 3);
    sbn__acl_exec_discard(e);
    aclDestroyTensor(t);
}

static void workspace_smaller_than_promised(void)
{
    float x[8];
    unsigned char ws[256];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 128);
    CHECK(e != NULL);
    g_runs = 0;
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 128, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(atsup_msg_has("smaller than the 128 bytes"));
    CHECK_ACL(sbn__acl_exec_run(OP, ws, 127, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK(g_runs == 0);
    /* still alive: a retry with the right workspace runs it */
    CHECK_ACL(sbn__acl_exec_run(OP, ws, 128, e, NULL), ACLNN_SUCCESS);
    CHECK(g_runs == 1);
    /* a promise of 0 bytes accepts NULL, and any buffer */
    e = make3(a, a, a, 0);
    CHECK(e != NULL);
    CHECK_ACL(sbn__acl_exec_run(OP, ws, sizeof ws, e, NULL), ACLNN_SUCCESS);
    aclDestroyTensor(a);
}

static void streams_are_accepted(void)
{
    float x[8];
    aclrtStream s = NULL;
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = make3(a, a, a, 0);
    CHECK(e != NULL);
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS); /* streams need a current device */
    CHECK(aclrtCreateStream(&s) == ACL_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, s), ACLNN_SUCCESS);
    CHECK(aclrtSynchronizeStream(s) == ACL_SUCCESS);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    CHECK(aclrtDestroyStream(s) == ACL_SUCCESS);
    aclDestroyTensor(a);
}

static void tensor_cap(void)
{
    float x[8];
    aclTensor *a = tensor_at(x, 0);
    aclOpExecutor *e = create(0);
    int i;
    CHECK(e != NULL);
    for (i = 0; i < SBN_ACL_EXEC_MAX_TENSORS; i++) CHECK(add(EX(e), a, 0, i % 2) == i);
    CHECK(add(EX(e), a, 0, 0) == -1);
    CHECK(add(NULL, a, 0, 0) == -1);
    sbn__acl_exec_discard(e);
    aclDestroyTensor(a);
}

static void create_out_of_memory(void)
{
    tsup_counter c = {.fail_at = 1};
    aclOpExecutor *e;
    tsup_counter_install(&c);
    e = create(0);
    sbn_set_allocator(NULL, NULL, NULL);
    CHECK(e == NULL && c.live == 0);
    CHECK(atsup_msg_has("out of memory"));
    c.calls = 0;
    c.fail_at = 0;
    tsup_counter_install(&c);
    e = create(0);
    CHECK(e != NULL && c.live == 1);
    CHECK_ACL(sbn__acl_exec_run(OP, NULL, 0, e, NULL), ACLNN_SUCCESS);
    sbn_set_allocator(NULL, NULL, NULL);
    CHECK_MSG(c.live == 0, "%ld executor allocation(s) left after the run", c.live);
}

/* ---- threads ---- */

static void *create_and_run_many(void *arg)
{
    int i, *bad = arg;
    for (i = 0; i < 300; i++) {
        aclOpExecutor *e = create(0);
        if (e == NULL || sbn__acl_exec_run(OP, NULL, 0, e, NULL) != ACLNN_SUCCESS ||
            sbn__acl_exec_run(OP, NULL, 0, e, NULL) != ACLNN_ERR_INNER_NULLPTR)
            (*bad)++;
    }
    return NULL;
}

static void threads_create_and_run(void)
{
    pthread_t th[4];
    int bad[4] = {0, 0, 0, 0}, i;
    g_runs = 0;
    for (i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, create_and_run_many, &bad[i]) == 0);
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 4; i++) CHECK_MSG(bad[i] == 0, "thread %d: %d bad round(s)", i, bad[i]);
    CHECK(g_runs == 1200);
}

typedef struct shared_job {
    aclOpExecutor *e;
    int ok, claimed;
} shared_job;

static void *run_shared(void *arg)
{
    shared_job *j = arg;
    aclnnStatus s = sbn__acl_exec_run(OP, NULL, 0, j->e, NULL);
    if (s == ACLNN_SUCCESS) __atomic_add_fetch(&j->ok, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Eight threads race to run one non-repeatable executor: exactly one runs it. */
static void threads_race_for_one_executor(void)
{
    pthread_t th[8];
    int round, i;
    for (round = 0; round < 50; round++) {
        shared_job j = {NULL, 0, 0};
        j.e = create(0);
        CHECK(j.e != NULL);
        for (i = 0; i < 8; i++) CHECK(pthread_create(&th[i], NULL, run_shared, &j) == 0);
        for (i = 0; i < 8; i++) pthread_join(th[i], NULL);
        CHECK_MSG(j.ok == 1, "round %d: %d threads ran the executor", round, j.ok);
    }
}

static void *run_repeatable_until_gone(void *arg)
{
    shared_job *j = arg;
    while (sbn__acl_exec_run(OP, NULL, 0, j->e, NULL) == ACLNN_SUCCESS)
        __atomic_add_fetch(&j->ok, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A repeatable executor destroyed while other threads run it: no use after free. */
static void threads_destroy_while_running(void)
{
    pthread_t th[4];
    int i;
    shared_job j = {NULL, 0, 0};
    j.e = create(0);
    CHECK(j.e != NULL);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(j.e), ACLNN_SUCCESS);
    for (i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, run_repeatable_until_gone, &j) == 0);
    while (__atomic_load_n(&j.ok, __ATOMIC_SEQ_CST) < 200) {
    }
    CHECK_ACL(aclDestroyAclOpExecutor(j.e), ACLNN_SUCCESS);
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CHECK_ACL(aclDestroyAclOpExecutor(j.e), ACLNN_ERR_INNER);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(lifecycle_and_double_run),
    SBN_TEST_CASE(run_status_is_returned_and_executor_freed),
    SBN_TEST_CASE(destroyed_and_discarded),
    SBN_TEST_CASE(foreign_and_null),
    SBN_TEST_CASE(other_ops_executor),
    SBN_TEST_CASE(repeatable_reuse),
    SBN_TEST_CASE(address_refresh),
    SBN_TEST_CASE(address_refresh_in_place_and_late_data),
    SBN_TEST_CASE(address_refresh_channels_last_view),
    SBN_TEST_CASE(workspace_smaller_than_promised),
    SBN_TEST_CASE(streams_are_accepted),
    SBN_TEST_CASE(tensor_cap),
    SBN_TEST_CASE(create_out_of_memory),
    SBN_TEST_CASE(threads_create_and_run),
    SBN_TEST_CASE(threads_race_for_one_executor),
    SBN_TEST_CASE(threads_destroy_while_running),
};

SBN_TEST_MAIN(k_cases)
