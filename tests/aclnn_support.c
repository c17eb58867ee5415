/*
 * aclnn_support.c - aclTensors over tsup buffers for the aclnn tests: the
 * tensorData, offset, strides and storage dims handed to aclCreateTensor follow
 * from the tsup view (strides in elements); tensors with their logical values;
 * raw tensors for the argument checks; phase 2 with a malloc'ed workspace; the
 * argument-check tables, the shared executor rules and the recent-message checks
 * (the message copy is per thread).
 */
#include "aclnn_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_rt.h"

int atsup_native_dtype(aclDataType dtype, sbn_dtype *out)
{
    switch (dtype) {
    case ACL_FLOAT: *out = SBN_F32; return 1;
    case ACL_FLOAT16: *out = SBN_F16; return 1;
    case ACL_BF16: *out = SBN_BF16; return 1;
    case ACL_DOUBLE: *out = SBN_F64; return 1;
    case ACL_INT32: *out = SBN_I32; return 1;
    case ACL_INT64: *out = SBN_I64; return 1;
    default: return 0;
    }
}

const char *atsup_dtype_name(aclDataType dtype)
{
    switch (dtype) {
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_BF16: return "BF16";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_INT32: return "INT32";
    case ACL_INT64: return "INT64";
    case ACL_INT8: return "INT8";
    case ACL_UINT8: return "UINT8";
    case ACL_BOOL: return "BOOL";
    default: return "?";
    }
}

atsup_tensor atsup_raw(aclDataType dtype, int rank, const int64_t *shape, aclFormat format)
{
    atsup_tensor a;
    int64_t strides[16], numel = 1;
    int d;
    memset(&a, 0, sizeof a);
    a.dtype = dtype;
    if (rank < 0 || rank > 16) return a;
    for (d = rank - 1; d >= 0; d--) {
        strides[d] = numel;
        numel *= shape[d] > 0 ? shape[d] : 1;
    }
    a.raw = calloc((size_t)numel, 8);
    a.data = a.raw;
    a.t = aclCreateTensor(shape, (uint64_t)rank, dtype, rank ? strides : NULL, 0, format, shape,
                          (uint64_t)rank, a.data);
    return a;
}

/* 1 + the largest element index the view reaches (0 for an empty view). */
static int64_t view_extent(const sbn_tensor *v)
{
    int64_t extent = 1;
    int d;
    for (d = 0; d < v->rank; d++) {
        if (v->shape[d] == 0) return 0;
        extent += (v->shape[d] - 1) * v->strides[d];
    }
    return extent;
}

atsup_tensor atsup_make(aclDataType dtype, int rank, const int64_t *shape, tsup_layout layout,
                        atsup_place place, aclFormat format, const double *values)
{
    atsup_tensor a;
    sbn_dtype sd;
    size_t es;
    int64_t strides[SBN_MAX_RANK], storage, offset = 0;
    int d;

    if (!atsup_native_dtype(dtype, &sd) || rank < 0 || rank > SBN_MAX_RANK)
        return atsup_raw(dtype, rank, shape, format);
    memset(&a, 0, sizeof a);
    a.dtype = dtype;
    a.native = 1;
    a.buf = tsup_make(sd, rank, shape, layout, values);
    es = sbn_dtype_size(sd);
    for (d = 0; d < rank; d++) strides[d] = a.buf.view.strides[d];
    if (place == ATSUP_OFFSET) {
        a.data = a.buf.alloc;
        offset = (int64_t)(((unsigned char *)a.buf.view.data - a.buf.alloc) / es);
        storage = (int64_t)(a.buf.alloc_bytes / es);
        a.t = aclCreateTensor(shape, (uint64_t)rank, dtype, strides, offset, format, &storage, 1,
                              a.data);
    } else if (layout == TSUP_CHANNELS_FIRST) {
        a.data = a.buf.view.data;
        a.t = aclCreateTensor(shape, (uint64_t)rank, dtype, strides, 0, format, shape,
                              (uint64_t)rank, a.data);
    } else {
        a.data = a.buf.view.data;
        storage = view_extent(&a.buf.view);
        a.t = aclCreateTensor(shape, (uint64_t)rank, dtype, strides, 0, format, &storage, 1,
                              a.data);
    }
    return a;
}

atsup_tensor atsup_plain(aclDataType dtype, int rank, const int64_t *shape, const double *values)
{
    return atsup_make(dtype, rank, shape, TSUP_CHANNELS_FIRST, ATSUP_PLAIN, ACL_FORMAT_ND, values);
}

atsup_tensor atsup_vec(aclDataType dtype, int64_t n, const double *values)
{
    return atsup_plain(dtype, 1, &n, values);
}

double *atsup_normal(uint64_t seed, int64_t count, double mean, double std, aclDataType dtype)
{
    tsup_rng rng = tsup_rng_seed(seed);
    sbn_dtype sd = SBN_F64;
    double *v = malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
    atsup_native_dtype(dtype, &sd);
    tsup_fill_normal(&rng, v, count, mean, std, sd);
    return v;
}

void atsup_read(const atsup_tensor *a, double *out)
{
    if (a->native) tsup_read(&a->buf.view, out);
}

int atsup_guard_ok(const atsup_tensor *a)
{
    return !a->native || tsup_guard_intact(&a->buf);
}

void atsup_free(atsup_tensor *a)
{
    if (a->t) aclDestroyTensor(a->t);
    if (a->native) tsup_free(&a->buf);
    free(a->raw);
    memset(a, 0, sizeof *a);
}

void atsup_handles(const atsup_tensor *t, aclTensor **a, int n)
{
    int i;
    for (i = 0; i < n; i++) a[i] = t[i].t;
}

void atsup_free_n(atsup_tensor *t, int n)
{
    int i;
    for (i = 0; i < n; i++) atsup_free(&t[i]);
}

sbn_dtype atsup_native(aclDataType dtype)
{
    sbn_dtype d = SBN_F32;
    atsup_native_dtype(dtype, &d);
    return d;
}

atsup_tv atsup_tv_make(aclDataType dt, int rank, const int64_t *shape, tsup_layout layout,
                       atsup_place place, aclFormat format, tsup_rng *rng, double mean,
                       double std)
{
    atsup_tv t;
    int64_t i;
    t.n = tsup_numel(rank, shape);
    t.v = malloc((size_t)(t.n > 0 ? t.n : 1) * sizeof *t.v);
    for (i = 0; i < t.n; i++) t.v[i] = tsup_round(atsup_native(dt), mean);
    if (rng) tsup_fill_normal(rng, t.v, t.n, mean, std, atsup_native(dt));
    t.a = atsup_make(dt, rank, shape, layout, place, format, t.v);
    return t;
}

void atsup_tv_free(atsup_tv *t)
{
    atsup_free(&t->a);
    free(t->v);
    memset(t, 0, sizeof *t);
}

int atsup_tv_close(const char *what, const atsup_tv *t, const double *want, aclDataType dt)
{
    double *got = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *got);
    int ok;
    atsup_read(&t->a, got);
    ok = tsup_close(what, got, want, t->n, 1e-9, 2 * tsup_unit_roundoff(atsup_native(dt)));
    if (ok && !atsup_guard_ok(&t->a)) ok = 0, fprintf(stderr, "    %s: guard bytes\n", what);
    free(got);
    return ok;
}

int atsup_tv_close_tol(const char *what, const atsup_tv *t, const double *want,
                       const double *tol)
{
    double *got = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *got);
    int ok;
    atsup_read(&t->a, got);
    ok = tsup_close_tol(what, got, want, tol, t->n);
    if (ok && !atsup_guard_ok(&t->a)) ok = 0, fprintf(stderr, "    %s: guard bytes\n", what);
    free(got);
    return ok;
}

double atsup_map_u(aclDataType in0, aclDataType in1, aclDataType out)
{
    int all64 = in0 == ACL_DOUBLE && in1 == ACL_DOUBLE && out == ACL_DOUBLE;
    return all64 ? 0.0 : ldexp(1.0, -24);
}

/* atsup_tv_close's tolerance of want in out. */
static double rounding_tol(double want, aclDataType out)
{
    return 1e-9 + 2 * tsup_unit_roundoff(atsup_native(out)) * fabs(want);
}

void atsup_normalize_tol(const double *x, int64_t n, int64_t c, int64_t s, const double *mean,
                         const double *invstd, const double *w, const double *b,
                         const double *want, aclDataType out, double u_c, double *tol)
{
    int64_t i;
    for (i = 0; i < n * c * s; i++) {
        int64_t ch = (i / s) % c;
        double m = mean ? mean[ch] : 0.0, wc = w ? w[ch] : 1.0, bc = b ? b[ch] : 0.0;
        tol[i] = rounding_tol(want[i], out) +
                 4.0 * u_c * (fabs(bc) + fabs((x[i] - m) * invstd[ch] * wc));
    }
}

void atsup_backward_tol(const double *dy, const double *x, int64_t n, int64_t c, int64_t s,
                        const double *mean, const double *invstd, const double *w,
                        const double *sum_dy, const double *sum_dy_xmu, double count,
                        const double *want, aclDataType out, double u_c, double *tol)
{
    int64_t i;
    for (i = 0; i < n * c * s; i++) {
        int64_t ch = (i / s) % c;
        double is = invstd[ch], wc = w ? w[ch] : 1.0, m = mean ? mean[ch] : 0.0;
        double terms = fabs(dy[i]) + fabs(sum_dy[ch] / count) +
                       fabs((x[i] - m) * is * is * sum_dy_xmu[ch] / count);
        tol[i] = rounding_tol(want[i], out) + 6.0 * u_c * terms * fabs(is * wc);
    }
}

aclnnStatus atsup_run(atsup_phase2_fn fn, uint64_t size, aclOpExecutor *executor)
{
    void *workspace = size ? malloc((size_t)size) : NULL;
    aclnnStatus status = fn(workspace, size, executor, NULL);
    free(workspace);
    return status;
}

const char *atsup_msg(void)
{
    static _Thread_local char copy[1024];
    const char *msg = aclGetRecentErrMsg();
    snprintf(copy, sizeof copy, "%s", msg ? msg : "");
    return copy;
}

int atsup_msg_has(const char *needle)
{
    const char *msg = atsup_msg();
    if (strstr(msg, needle)) return 1;
    fprintf(stderr, "    recent message \"%s\" does not contain \"%s\"\n", msg, needle);
    return 0;
}

int atsup_expect(atsup_call_fn fn, aclTensor *const *args, int nargs, const atsup_case *c)
{
    aclTensor *copy[ATSUP_MAX_ARGS];
    atsup_tensor made[2];
    int null_ws = 0, null_ex = 0, i, ok;
    aclnnStatus got;
    const char *msg;

    memset(made, 0, sizeof made);
    for (i = 0; i < nargs && i < ATSUP_MAX_ARGS; i++) copy[i] = args[i];
    for (i = 0; i < c->nsub && i < 2; i++) {
        const atsup_arg *a = &c->sub[i];
        if (a->slot == ATSUP_SLOT_WS) {
            null_ws = 1;
        } else if (a->slot == ATSUP_SLOT_EX) {
            null_ex = 1;
        } else if (a->slot >= 0 && a->slot < nargs) {
            if (a->rank == ATSUP_NULL) {
                copy[a->slot] = NULL;
            } else {
                made[i] = atsup_raw(a->dtype, a->rank, a->shape, a->format);
                copy[a->slot] = made[i].t;
            }
        }
    }
    got = fn(copy, null_ws, null_ex);
    msg = atsup_msg();
    ok = got == c->want;
    if (ok && c->want != ACLNN_SUCCESS && c->needle && !strstr(msg, c->needle)) ok = 0;
    if (!ok)
        fprintf(stderr, "    case \"%s\": status %d (expected %d), message \"%s\" (expected to "
                "contain \"%s\")\n",
                c->label, (int)got, (int)c->want, msg, c->needle ? c->needle : "");
    for (i = 0; i < 2; i++) atsup_free(&made[i]);
    return ok;
}

int atsup_expect_all(atsup_call_fn fn, aclTensor *const *args, int nargs,
                     const atsup_case *cases, int ncases)
{
    int i, failed = 0;
    for (i = 0; i < ncases; i++) failed += !atsup_expect(fn, args, nargs, &cases[i]);
    return failed;
}

/* Prints a failed expectation of atsup_check_executor_rules and returns 0. */
static int rule_failed(const char *rule, aclnnStatus got)
{
    fprintf(stderr, "    executor rule \"%s\" broken: status %d, message \"%s\"\n", rule,
            (int)got, atsup_msg());
    return 0;
}

int atsup_check_executor_rules(atsup_phase1_fn phase1, void *ctx, atsup_phase2_fn phase2)
{
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclrtStream stream = NULL;
    aclnnStatus s;

    if ((s = phase1(ctx, &ws, &ex)) != ACLNN_SUCCESS) return rule_failed("phase 1", s);
    if ((s = atsup_run(phase2, ws, ex)) != ACLNN_SUCCESS) return rule_failed("first run", s);
    if ((s = atsup_run(phase2, ws, ex)) == ACLNN_SUCCESS || atsup_msg()[0] == '\0')
        return rule_failed("a second run is refused with a message", s);

    if ((s = phase1(ctx, &ws, &ex)) != ACLNN_SUCCESS) return rule_failed("phase 1", s);
    if (ws > 0 && (s = atsup_run(phase2, ws - 1, ex)) != ACLNN_ERR_PARAM_INVALID)
        return rule_failed("a short workspace gives 161002", s);
    /* a stream needs a current device, as in CANN */
    if (aclrtSetDevice(0) != ACL_SUCCESS) return rule_failed("aclrtSetDevice", -1);
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return rule_failed("aclrtCreateStream", -1);
    {
        void *workspace = ws ? malloc((size_t)ws) : NULL;
        s = phase2(workspace, ws, ex, stream);
        free(workspace);
    }
    aclrtDestroyStream(stream);
    if (s != ACLNN_SUCCESS) return rule_failed("a run on a created stream", s);

    if ((s = phase2(NULL, 0, NULL, NULL)) != ACLNN_ERR_PARAM_NULLPTR)
        return rule_failed("a NULL executor gives 161001", s);

    if ((s = phase1(ctx, &ws, &ex)) != ACLNN_SUCCESS) return rule_failed("phase 1", s);
    if ((s = aclSetAclOpExecutorRepeatable(ex)) != ACLNN_SUCCESS)
        return rule_failed("aclSetAclOpExecutorRepeatable", s);
    if ((s = atsup_run(phase2, ws, ex)) != ACLNN_SUCCESS) return rule_failed("repeatable run 1", s);
    if ((s = atsup_run(phase2, ws, ex)) != ACLNN_SUCCESS) return rule_failed("repeatable run 2", s);
    if ((s = aclDestroyAclOpExecutor(ex)) != ACLNN_SUCCESS)
        return rule_failed("aclDestroyAclOpExecutor", s);
    if ((s = atsup_run(phase2, ws, ex)) == ACLNN_SUCCESS)
        return rule_failed("a destroyed executor is refused", s);
    return 1;
}

int atsup_check_no_data(atsup_phase1_fn phase1, void *ctx, atsup_phase2_fn phase2,
                        aclTensor **slot, aclDataType dtype, int rank, const int64_t *shape,
                        aclFormat format)
{
    aclTensor *keep = *slot;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus s;
    int ok = 1;
    *slot = aclCreateTensor(shape, (uint64_t)rank, dtype, NULL, 0, format, shape,
                            (uint64_t)rank, NULL);
    if ((s = phase1(ctx, &ws, &ex)) != ACLNN_SUCCESS)
        ok = rule_failed("phase 1 accepts a tensor without data", s);
    else if ((s = atsup_run(phase2, ws, ex)) != ACLNN_ERR_PARAM_NULLPTR)
        ok = rule_failed("phase 2 refuses a tensor without data with 161001", s);
    aclDestroyTensor(*slot);
    *slot = keep;
    return ok;
}
