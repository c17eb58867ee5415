/*
 * test_aclnn_memory.c - the memory safety of the aclnn face (issue 10, items 1, 2
 * and 11). Handles: a tensor destroyed twice, and a destroyed tensor given to
 * aclSetInputTensorAddr, aclGetViewShape and (inside a list) aclDestroyTensorList,
 * are refused or skipped without being read (ASan would report the use after
 * free); a stale handle of every object kind stays dead after a new object of the
 * same kind was created, so destroying it again does not free the new one; a
 * forged object (foreign memory that holds a live magic) is refused; threads
 * create and destroy at once. Views: a view [4] over storage [2] (an 8-byte
 * buffer), an offset past the storage, an output larger than its storage and a
 * huge offset are refused in phase 1 with 161002 and a message naming the
 * argument, its view and its storage, whether the data is set or not, and no byte
 * of any buffer is written; a view whose storage does not fit at the address set
 * later is refused in phase 2, and so is a misaligned counter (phase 1, or phase 2
 * when its address is set later). The aclnnBatchNormElemtBackward counter message
 * states its limit (2^53).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aclnn/aclnn_internal.h"
#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_support.h"
#include "aclnnop/aclnn_batch_norm_backward.h"
#include "aclnnop/aclnn_batch_norm_elemt.h"
#include "aclnnop/aclnn_batch_norm_elemt_backward.h"
#include "aclnnop/aclnn_batch_norm_stats.h"
#include "harness/harness.h"

/* A 1-D FLOAT tensor of n over data with `storage` elements of storage at `offset`. */
static aclTensor *vec(void *data, int64_t n, int64_t storage, int64_t offset)
{
    const int64_t dims[1] = {n}, sdims[1] = {storage};
    return aclCreateTensor(dims, 1, ACL_FLOAT, NULL, offset, ACL_FORMAT_ND, sdims, 1, data);
}

/* A contiguous 2-D FLOAT tensor [r, c] over data (storage = the view). */
static aclTensor *mat(void *data, int64_t r, int64_t c)
{
    const int64_t dims[2] = {r, c};
    return aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, data);
}

/* ---- item 1: handles ---- */

static void tensor_destroyed_twice(void)
{
    float x[4] = {0};
    aclTensor *t = vec(x, 4, 4, 0);
    CHECK(t != NULL);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("not a live aclTensor");
}

static void destroyed_tensor_in_every_call(void)
{
    const int64_t dims[2] = {2, 4};
    float x[8] = {0}, m[4], v[4];
    int64_t *got = NULL;
    uint64_t n = 0, ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = mat(x, 2, 4), *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0);
    aclTensor *dead = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 2, x);
    const aclTensor *items[2];
    aclTensorList *list;
    CHECK(in && mean && invstd && dead);
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &e),
              ACLNN_SUCCESS);
    CHECK_ACL(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensor(dead), ACLNN_SUCCESS);
    CHECK_ACL(aclSetInputTensorAddr(e, 0, dead, x), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("not a live aclTensor");
    CHECK_ACL(aclGetViewShape(dead, &got, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK(got == NULL);
    CHECK_ACL(aclGetStorageShape(dead, &got, &n), ACLNN_ERR_PARAM_INVALID);
    /* in an op: refused in phase 1 */
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(dead, 1e-5, mean, invstd, &ws, &e),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("input is not a live aclTensor");
    /* a list whose tensor was destroyed on its own: the list skips it */
    items[0] = vec(x, 2, 2, 0);
    items[1] = vec(x, 2, 2, 0);
    CHECK(items[0] && items[1]);
    list = aclCreateTensorList(items, 2);
    CHECK(list != NULL);
    CHECK_ACL(aclDestroyTensor(items[1]), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensorList(list), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensor(items[0]), ACLNN_ERR_PARAM_INVALID); /* the list destroyed it */
    /* a destroyed list, and a tensor handle given as a list */
    CHECK_ACL(aclDestroyTensorList(list), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyTensorList((const aclTensorList *)(const void *)in),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd);
}

/*
 * The stale-handle case: an object is destroyed, new objects of the same kind are
 * made (malloc hands the freed memory back at once in a release build); the old
 * handle must still be refused, and refusing it must leave every new one live.
 */
#define ROUNDS 8

static void stale_tensor_after_reuse(void)
{
    float x[4] = {0};
    int64_t *got = NULL;
    uint64_t n = 0;
    aclTensor *fresh[ROUNDS];
    aclTensor *old = vec(x, 4, 4, 0);
    int i;
    CHECK(old != NULL);
    CHECK_ACL(aclDestroyTensor(old), ACLNN_SUCCESS);
    for (i = 0; i < ROUNDS; i++) {
        fresh[i] = vec(x, 3, 4, 0);
        CHECK(fresh[i] != NULL && fresh[i] != old);
    }
    CHECK_ACL(aclDestroyTensor(old), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclGetViewShape(old, &got, &n), ACLNN_ERR_PARAM_INVALID);
    for (i = 0; i < ROUNDS; i++) {
        CHECK_ACL(aclGetViewShape(fresh[i], &got, &n), ACLNN_SUCCESS);
        CHECK(n == 1 && got[0] == 3);
        sbn_acl_free_array(got);
        CHECK_ACL(aclDestroyTensor(fresh[i]), ACLNN_SUCCESS);
    }
}

static void stale_handles_of_every_kind(void)
{
    double d = 1.0;
    int64_t iv[2] = {1, 2};
    float fv[2] = {1, 2};
    bool bv[2] = {true, false};
    uint64_t n = 0;
    int i;
    aclScalar *s = aclCreateScalar(&d, ACL_DOUBLE), *s2[ROUNDS];
    aclIntArray *ia = aclCreateIntArray(iv, 2), *ia2[ROUNDS];
    aclFloatArray *fa = aclCreateFloatArray(fv, 2), *fa2[ROUNDS];
    aclBoolArray *ba = aclCreateBoolArray(bv, 2), *ba2[ROUNDS];
    aclTensorList *tl = aclCreateTensorList(NULL, 0), *tl2[ROUNDS];
    aclrtStream st = NULL, st2[ROUNDS];
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS); /* streams need a current device */
    CHECK(s && ia && fa && ba && tl && aclrtCreateStream(&st) == ACL_SUCCESS);
    CHECK_ACL(aclDestroyScalar(s), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyIntArray(ia), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
    CHECK_ACL(aclDestroyTensorList(tl), ACLNN_SUCCESS);
    CHECK(aclrtDestroyStream(st) == ACL_SUCCESS);
    for (i = 0; i < ROUNDS; i++) {
        s2[i] = aclCreateScalar(&d, ACL_DOUBLE);
        ia2[i] = aclCreateIntArray(iv, 2);
        fa2[i] = aclCreateFloatArray(fv, 2);
        ba2[i] = aclCreateBoolArray(bv, 2);
        tl2[i] = aclCreateTensorList(NULL, 0);
        CHECK(s2[i] && ia2[i] && fa2[i] && ba2[i] && tl2[i]);
        CHECK(aclrtCreateStream(&st2[i]) == ACL_SUCCESS);
    }
    CHECK_ACL(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclGetIntArraySize(ia, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyFloatArray(fa), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyBoolArray(ba), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyTensorList(tl), ACLNN_ERR_PARAM_INVALID);
    CHECK(aclrtDestroyStream(st) != ACL_SUCCESS);
    CHECK(aclrtSynchronizeStream(st) != ACL_SUCCESS);
    for (i = 0; i < ROUNDS; i++) {
        CHECK_ACL(aclGetIntArraySize(ia2[i], &n), ACLNN_SUCCESS);
        CHECK(n == 2);
        CHECK_ACL(aclDestroyScalar(s2[i]), ACLNN_SUCCESS);
        CHECK_ACL(aclDestroyIntArray(ia2[i]), ACLNN_SUCCESS);
        CHECK_ACL(aclDestroyFloatArray(fa2[i]), ACLNN_SUCCESS);
        CHECK_ACL(aclDestroyBoolArray(ba2[i]), ACLNN_SUCCESS);
        CHECK_ACL(aclDestroyTensorList(tl2[i]), ACLNN_SUCCESS);
        CHECK(aclrtDestroyStream(st2[i]) == ACL_SUCCESS);
    }
}

static void stale_executor_after_reuse(void)
{
    float x[8] = {0}, m[4], v[4];
    uint64_t ws = 0;
    aclOpExecutor *old = NULL, *fresh[ROUNDS];
    aclTensor *in = mat(x, 2, 4), *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0);
    int i;
    CHECK(in && mean && invstd);
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &old),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, old), ACLNN_SUCCESS); /* frees it */
    for (i = 0; i < ROUNDS; i++) {
        fresh[i] = NULL;
        CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &fresh[i]),
                  ACLNN_SUCCESS);
        CHECK(fresh[i] != old);
    }
    CHECK_ACL(aclDestroyAclOpExecutor(old), ACLNN_ERR_INNER);
    CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, old), ACLNN_ERR_INNER_NULLPTR);
    for (i = 0; i < ROUNDS; i++)
        CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, fresh[i]), ACLNN_SUCCESS);
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd);
}

/* Foreign memory that holds a live tensor's magic (and plausible fields) is not a tensor. */
static void forged_objects_are_refused(void)
{
    aclTensor forged;
    aclBoolArray forged_mask;
    bool values[3] = {true, true, true};
    float x[8] = {0}, m[4], v[4], g[8], gw[4], gb[4];
    int64_t *got = NULL;
    uint64_t n = 0;
    memset(&forged, 0, sizeof forged);
    forged.magic = SBN_ACL_TENSOR_MAGIC;
    forged.dtype = ACL_FLOAT;
    forged.ndim = 1;
    forged.dims[0] = 4;
    forged.strides[0] = 1;
    forged.storage_ndim = 1;
    forged.storage_dims[0] = 4;
    forged.data = x;
    CHECK_ACL(aclGetViewShape(&forged, &got, &n), ACLNN_ERR_PARAM_INVALID);
    CHECK_ACL(aclDestroyTensor(&forged), ACLNN_ERR_PARAM_INVALID);
    forged_mask.magic = SBN_ACL_BOOL_ARRAY_MAGIC;
    forged_mask.size = 3;
    forged_mask.values = values;
    {
        aclTensor *in = mat(x, 2, 4), *go = mat(g, 2, 4), *gi = mat(g, 2, 4);
        aclTensor *sm = vec(m, 4, 4, 0), *si = vec(v, 4, 4, 0);
        aclTensor *tw = vec(gw, 4, 4, 0), *tb = vec(gb, 4, 4, 0);
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        CHECK(in && go && gi && sm && si && tw && tb);
        CHECK_ACL(aclnnBatchNormBackwardGetWorkspaceSize(go, in, NULL, NULL, NULL, sm, si, true,
                                                         1e-5, &forged_mask, gi, tw, tb, &ws,
                                                         &e),
                  ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS("outputMask");
        aclDestroyTensor(in), aclDestroyTensor(go), aclDestroyTensor(gi);
        aclDestroyTensor(sm), aclDestroyTensor(si), aclDestroyTensor(tw), aclDestroyTensor(tb);
    }
}

static void *create_destroy_many(void *arg)
{
    int *bad = arg, i;
    float x[4];
    for (i = 0; i < 2000; i++) {
        aclTensor *t = vec(x, 4, 4, 0);
        if (t == NULL || aclDestroyTensor(t) != ACLNN_SUCCESS ||
            aclDestroyTensor(t) != ACLNN_ERR_PARAM_INVALID)
            (*bad)++;
    }
    return NULL;
}

static void threads_create_and_destroy(void)
{
    pthread_t th[4];
    int bad[4] = {0, 0, 0, 0}, i;
    for (i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, create_destroy_many, &bad[i]) == 0);
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 4; i++) CHECK_MSG(bad[i] == 0, "thread %d: %d bad round(s)", i, bad[i]);
}

/* ---- item 2: views inside their storage ---- */

/* A buffer of `bytes` filled with 0xA5 (malloc'ed to its exact size, so ASan sees it). */
static unsigned char *guarded(size_t bytes)
{
    unsigned char *p = (unsigned char *)malloc(bytes);
    if (p) memset(p, 0xA5, bytes);
    return p;
}

static int untouched(const unsigned char *p, size_t bytes)
{
    size_t i;
    for (i = 0; i < bytes; i++)
        if (p[i] != 0xA5) return 0;
    return 1;
}

/*
 * aclnnBatchNormStats over input [2, 4] with mean given by (mean_n, storage, offset)
 * over a buffer of storage floats; phase 1 must refuse with a message holding each
 * needle, and no byte of any buffer may change (phase 2 runs if phase 1 did not refuse).
 */
static void stats_with_mean(int64_t mean_n, int64_t storage, int64_t offset, int with_data,
                            const char *const *needles, int nneedles)
{
    unsigned char *x = guarded(8 * sizeof(float)), *m = guarded((size_t)storage * 4 + 4);
    unsigned char *v = guarded(4 * sizeof(float));
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in, *mean, *invstd;
    aclnnStatus st;
    const char *msg;
    int i;
    CHECK(x && m && v);
    memset(x, 0, 8 * sizeof(float));
    in = mat(x, 2, 4);
    mean = vec(with_data ? m : NULL, mean_n, storage, offset);
    invstd = vec(v, 4, 4, 0);
    CHECK(in && mean && invstd);
    st = aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &e);
    if (st == ACLNN_SUCCESS) {
        if (!with_data) aclSetOutputTensorAddr(e, 0, mean, m);
        atsup_run(aclnnBatchNormStats, ws, e); /* the overflow this test guards against */
    }
    CHECK_MSG(st == ACLNN_ERR_PARAM_INVALID, "phase 1 returned %d, expected 161002", (int)st);
    msg = atsup_msg();
    for (i = 0; i < nneedles; i++)
        CHECK_MSG(strstr(msg, needles[i]) != NULL, "message \"%s\" lacks \"%s\"", msg,
                  needles[i]);
    CHECK(untouched(m, (size_t)storage * 4 + 4) && untouched(v, 16));
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd);
    free(x), free(m), free(v);
}

static void view_larger_than_storage(void)
{
    /* the case: a view [4] over storage dims [2], an 8-byte buffer */
    static const char *const needles[] = {"mean has view shape [4]", "storage dims [2]",
                                          "holds 2 elements"};
    stats_with_mean(4, 2, 0, 1, needles, 3);
    RETURN_IF_FAILED();
    stats_with_mean(4, 2, 0, 0, needles, 3); /* data set later: refused all the same */
}

static void offset_past_storage(void)
{
    static const char *const past[] = {"offset 4", "holds 4 elements"};
    static const char *const one_past[] = {"offset 3", "reaches element 6", "holds 6 elements"};
    stats_with_mean(4, 4, 4, 1, past, 2);
    RETURN_IF_FAILED();
    stats_with_mean(4, 6, 3, 1, one_past, 3); /* the last element one past the storage */
}

static void huge_offset(void)
{
    static const char *const needles[] = {"mean has view shape [4]", "offset"};
    stats_with_mean(4, 4, INT64_MAX - 1, 1, needles, 2);
    RETURN_IF_FAILED();
    stats_with_mean(4, 4, INT64_MAX / 2, 1, needles, 2);
    RETURN_IF_FAILED();
    stats_with_mean(4, 4, INT64_MAX / 2, 0, needles, 2);
}

/*
 * An empty input whose other dims multiply past 64 bits: refused in phase 1 (the
 * native walk multiplied them: a signed overflow under UBSan; found by
 * fuzz_aclnn_phase2).
 */
static void empty_view_with_huge_dims(void)
{
    const int64_t dims[4] = {0, 4, (int64_t)1 << 59, 4}, one[1] = {1};
    float x[1] = {0}, m[4], v[4];
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = aclCreateTensor(dims, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCHW, one, 1, x);
    aclTensor *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0);
    CHECK(in && mean && invstd);
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &e),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("overflows 64 bits");
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd);
}

/* aclnnBatchNormElemt whose output [2, 4] has storage [2, 2]. */
static void output_larger_than_storage(void)
{
    const int64_t dims[2] = {2, 4}, small[2] = {2, 2};
    float x[8] = {0}, m[4] = {0}, v[4] = {1, 1, 1, 1};
    unsigned char *y = guarded(4 * sizeof(float));
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = mat(x, 2, 4), *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0);
    aclTensor *out = aclCreateTensor(dims, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, small, 2, y);
    aclnnStatus st;
    CHECK(y && in && mean && invstd && out);
    st = aclnnBatchNormElemtGetWorkspaceSize(in, NULL, NULL, mean, invstd, 1e-5, out, &ws, &e);
    if (st == ACLNN_SUCCESS) atsup_run(aclnnBatchNormElemt, ws, e);
    CHECK_MSG(st == ACLNN_ERR_PARAM_INVALID, "phase 1 returned %d, expected 161002", (int)st);
    CHECK_MSG_HAS("output has view shape [2, 4]");
    CHECK(untouched(y, 16));
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd), aclDestroyTensor(out);
    free(y);
}

/* Storage that does not fit at the address given in phase 2: refused before any access. */
static void storage_past_the_address_space_in_phase2(void)
{
    float x[8] = {0}, v[4];
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = mat(x, 2, 4), *mean = vec(NULL, 4, 4, 0), *invstd = vec(v, 4, 4, 0);
    void *top = (void *)(UINTPTR_MAX - 7); /* 8-byte aligned, 8 bytes below the end */
    CHECK(in && mean && invstd);
    CHECK_ACL(aclnnBatchNormStatsGetWorkspaceSize(in, 1e-5, mean, invstd, &ws, &e),
              ACLNN_SUCCESS);
    CHECK_ACL(aclSetOutputTensorAddr(e, 0, mean, top), ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormStats, ws, e), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("mean");
    aclDestroyTensor(in), aclDestroyTensor(mean), aclDestroyTensor(invstd);
}

/*
 * A counter whose data is not aligned to its element size: refused in phase 1 when
 * the data is given at creation, in phase 2 when it is set later, before it is read
 * (UBSan would report the misaligned load; found by fuzz_aclnn_phase2).
 */
static void misaligned_counter(void)
{
    float x[8] = {0}, g[8] = {0}, gi[8], m[4] = {0}, v[4] = {1, 1, 1, 1}, s[4] = {0};
    int32_t raw[4] = {64, 64, 64, 0};
    void *odd = (char *)raw + 2;
    const int64_t two[1] = {2};
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = mat(x, 2, 4), *go = mat(g, 2, 4), *out = mat(gi, 2, 4);
    aclTensor *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0), *sdy = vec(s, 4, 4, 0);
    aclTensor *sdx = vec(s, 4, 4, 0);
    aclTensor *cnt = aclCreateTensor(two, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, two, 1, odd);
    aclTensor *late = aclCreateTensor(two, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, two, 1, NULL);
    CHECK(in && go && out && mean && invstd && sdy && sdx && cnt && late);
    CHECK_ACL(aclnnBatchNormElemtBackwardGetWorkspaceSize(go, in, mean, invstd, NULL, sdy, sdx,
                                                          cnt, out, &ws, &e),
              ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("counter's data");
    CHECK_ACL(aclnnBatchNormElemtBackwardGetWorkspaceSize(go, in, mean, invstd, NULL, sdy, sdx,
                                                          late, out, &ws, &e),
              ACLNN_SUCCESS);
    CHECK_ACL(aclSetInputTensorAddr(e, 0, late, odd), ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormElemtBackward, ws, e), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("not aligned");
    aclDestroyTensor(in), aclDestroyTensor(go), aclDestroyTensor(out), aclDestroyTensor(mean);
    aclDestroyTensor(invstd), aclDestroyTensor(sdy), aclDestroyTensor(sdx);
    aclDestroyTensor(cnt), aclDestroyTensor(late);
}

/* ---- item 11: the counter limit is stated ---- */

static void counter_limit_is_stated(void)
{
    float x[8] = {0}, g[8] = {0}, gi[8], m[4] = {0}, v[4] = {1, 1, 1, 1}, s[4] = {0};
    float counter[2] = {18014398509481984.0f, 1.0f}; /* 2^54 */
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclTensor *in = mat(x, 2, 4), *go = mat(g, 2, 4), *out = mat(gi, 2, 4);
    aclTensor *mean = vec(m, 4, 4, 0), *invstd = vec(v, 4, 4, 0), *sdy = vec(s, 4, 4, 0);
    aclTensor *sdx = vec(s, 4, 4, 0), *cnt = vec(counter, 2, 2, 0);
    CHECK(in && go && out && mean && invstd && sdy && sdx && cnt);
    CHECK_ACL(aclnnBatchNormElemtBackwardGetWorkspaceSize(go, in, mean, invstd, NULL, sdy, sdx,
                                                          cnt, out, &ws, &e),
              ACLNN_SUCCESS);
    CHECK_ACL(atsup_run(aclnnBatchNormElemtBackward, ws, e), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS("2^53");
    aclDestroyTensor(in), aclDestroyTensor(go), aclDestroyTensor(out), aclDestroyTensor(mean);
    aclDestroyTensor(invstd), aclDestroyTensor(sdy), aclDestroyTensor(sdx), aclDestroyTensor(cnt);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(tensor_destroyed_twice),
    SBN_TEST_CASE(destroyed_tensor_in_every_call),
    SBN_TEST_CASE(stale_tensor_after_reuse),
    SBN_TEST_CASE(stale_handles_of_every_kind),
    SBN_TEST_CASE(stale_executor_after_reuse),
    SBN_TEST_CASE(forged_objects_are_refused),
    SBN_TEST_CASE(threads_create_and_destroy),
    SBN_TEST_CASE(view_larger_than_storage),
    SBN_TEST_CASE(offset_past_storage),
    SBN_TEST_CASE(huge_offset),
    SBN_TEST_CASE(output_larger_than_storage),
    SBN_TEST_CASE(empty_view_with_huge_dims),
    SBN_TEST_CASE(storage_past_the_address_space_in_phase2),
    SBN_TEST_CASE(misaligned_counter),
    SBN_TEST_CASE(counter_limit_is_stated),
};

SBN_TEST_MAIN(k_cases)
