/*
 * fuzz_native_ops.c - a libFuzzer target over every native op of syncbn/ops.h with
 * random views into one guarded 64 KiB buffer. The input bytes fill the buffer with
 * a pattern, pick an op, a shape plan, and for every tensor argument: NULL or not,
 * its dtype (valid and invalid), rank (0..9), dims (0, 1, small, 2^31, 2^40, 2^62,
 * negative), strides (contiguous, channels-last, permuted, gapped, negative, 0, 2^40,
 * 2^62, INT64_MIN, INT64_MAX) and where its data lies (aligned or at any byte, or on
 * another argument's data); plus eps, momentum and counts (NaN, Inf, 1.0000001, ...),
 * the workspace (NULL, short, exact, larger, on a tensor) and the pool (NULL or two
 * threads). A view is only ever generated if it lies inside the buffer, is empty, or
 * cannot be addressed at all (more than 2^56 elements or a byte range of 2^63 or more,
 * which the library must refuse); a view that would fit the address space but not the
 * buffer is moved into the buffer or emptied, so every finding is the library's.
 * Oracles (abort() on violation): a failed call leaves every byte outside the workspace
 * unchanged; a successful call changes no byte outside its outputs' elements and its
 * workspace, no output element shares memory with another output, itself or an input
 * (except the identical in-place views the op allows), the workspace it needed shares
 * no byte with any argument, and sbn_stats/sbn_stats_moments never report finite
 * statistics for a channel that holds a NaN or an infinity. FUZZ_VERBOSE=1 prints each
 * call before it runs; FUZZ_OPS=0,5 fuzzes only those ops (indices into op_names).
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz_util.h"
#include "syncbn/ops.h"

#define BUF_BYTES 65536
#define MAX_VIEW_ELEMENTS 4096 /* per view: keeps one input's work well under a millisecond */
#define MAX_ARGS 12
#define OUTPUT_BITS 0xffffu

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef enum role { ROLE_ACTIVATION, ROLE_VECTOR, ROLE_MATRIX, ROLE_COUNTS } role;

typedef struct fuzz_arg {
    const char *name;
    sbn_tensor view;
    int present, output;
    /* raw arrays of sbn_moments (stats_moments, gather_moments) instead of a view */
    const unsigned char *raw;
    size_t raw_bytes;
} fuzz_arg;

typedef struct fuzz_call {
    fz_reader r;
    int rank;                         /* the plan: x is (shape[0..rank)), C = shape[1] */
    int64_t shape[SBN_MAX_RANK], world;
    sbn_dtype dtype;
    fuzz_arg args[MAX_ARGS];
    int nargs;
    unsigned char *ws;
    size_t ws_bytes, ws_need; /* ws_need: what the op's workspace_size said (0: unknown/none) */
    int ws_need_known;
    int inplace_out, inplace_in; /* the op's in-place pair (arg indices), -1 if none */
    unsigned op;
    sbn_pool_t *pool;
} fuzz_call;

static _Alignas(64) unsigned char g_buffer[BUF_BYTES];
static unsigned char g_before[BUF_BYTES];
static uint32_t g_mark[BUF_BYTES]; /* bit i < 16: output arg i; bit 16 + j: input arg j */

static const char *const op_names[] = {
    "stats", "stats_moments", "gather_stats_with_counts", "gather_moments", "gather_stats_from_sums",
    "reduce", "elemt", "backward_reduce", "backward_elemt", "batch_norm", "batch_norm_backward"};

/* Prints the call's arguments (data as byte offsets into the buffer). */
static void describe(const fuzz_call *fc)
{
    int i;
    for (i = 0; i < fc->nargs; i++) {
        const fuzz_arg *a = &fc->args[i];
        const sbn_tensor *t = &a->view;
        int d;
        if (!a->present) {
            fprintf(stderr, "  %-14s NULL\n", a->name);
            continue;
        }
        if (a->raw) {
            fprintf(stderr, "  %-14s raw moments at +%ld, %zu bytes%s\n", a->name,
                    (long)(a->raw - g_buffer), a->raw_bytes, a->output ? " (output)" : "");
            continue;
        }
        fprintf(stderr, "  %-14s %s dtype %d rank %d data %+ld shape", a->name,
                a->output ? "out" : "in ", (int)t->dtype, t->rank,
                t->data ? (long)((unsigned char *)t->data - g_buffer) : -1L);
        for (d = 0; d < t->rank && d < SBN_MAX_RANK; d++) fprintf(stderr, " %lld", (long long)t->shape[d]);
        fprintf(stderr, " strides");
        for (d = 0; d < t->rank && d < SBN_MAX_RANK; d++)
            fprintf(stderr, " %lld", (long long)t->strides[d]);
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "  workspace %+ld, %zu bytes (op needs %zu)\n",
            fc->ws ? (long)(fc->ws - g_buffer) : -1L, fc->ws_bytes, fc->ws_need);
}

static void violation(const fuzz_call *fc, const char *what, long offset)
{
    fprintf(stderr, "fuzz_native_ops: VIOLATION in sbn_%s: %s (buffer byte %ld)\n",
            op_names[fc->op], what, offset);
    fprintf(stderr, "  last error: %s\n", sbn_last_error());
    describe(fc);
    abort();
}

/* FUZZ_VERBOSE=1 prints every call before it runs (to read a crash input that kills the process). */
static void before_call(fuzz_call *fc, unsigned op)
{
    static int verbose = -1;
    fc->op = op;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (!verbose) return;
    fprintf(stderr, "sbn_%s (pool %s):\n", op_names[op], fc->pool ? "2 threads" : "NULL");
    describe(fc);
}

/* ---- argument generation ---------------------------------------------------------------- */

static const int64_t special_dims[] = {0, 1, 2, 3, 7, (int64_t)1 << 31, (int64_t)1 << 40,
                                       (int64_t)1 << 62, -1, INT64_MAX};
static const int64_t special_strides[] = {0, 1, -1, 2, 3, (int64_t)1 << 40, (int64_t)1 << 62,
                                          INT64_MIN, -((int64_t)1 << 62), INT64_MAX,
                                          ((int64_t)1 << 62) + 1, ((int64_t)1 << 61) + 1};

static sbn_dtype pick_dtype(fz_reader *r, role ro, sbn_dtype usual)
{
    static const sbn_dtype floats[] = {SBN_F32, SBN_F64, SBN_F16, SBN_BF16};
    static const sbn_dtype odd[] = {SBN_I32, SBN_I64, (sbn_dtype)-1, (sbn_dtype)6, (sbn_dtype)99};
    unsigned b = fz_next(r);
    if (b % 16 == 15) return odd[(b >> 4) % 5];
    if (ro == ROLE_COUNTS) return (sbn_dtype)((b >> 2) % 6);
    if (ro == ROLE_ACTIVATION) return b % 4 == 3 ? floats[(b >> 4) % 4] : usual;
    return floats[(b >> 2) % 4];
}

/* Strides of `shape` in memory order `order` (order[0] outermost), spaced by `gap`. */
static void layout_strides(sbn_tensor *t, const int *order, int64_t gap)
{
    int64_t step = gap;
    int k;
    for (k = t->rank - 1; k >= 0; k--) {
        int d = order[k];
        t->strides[d] = step;
        if (t->shape[d] > 0 && step < ((int64_t)1 << 40)) step *= t->shape[d];
    }
}

/* data placed so that [data + e.lo, data + e.hi) lies in the buffer; 0 when it cannot */
static int place_inside(sbn_tensor *t, fz_extent e, unsigned raw, int misaligned)
{
    size_t es = sbn_dtype_size(t->dtype);
    __int128 size = e.hi - e.lo;
    long start;
    if (size > BUF_BYTES || e.numel > MAX_VIEW_ELEMENTS) return 0;
    start = (long)(raw % (unsigned)(BUF_BYTES - size + 1));
    start -= start % (long)es;
    if (misaligned && es > 1) {
        start += 1 + (long)(raw >> 16) % (long)(es - 1);
        if (start + size > BUF_BYTES) start -= (long)es;
        if (start < 0) start += 1; /* the buffer holds the view at byte 1 at worst */
    }
    t->data = g_buffer + start - (long)e.lo;
    return 1;
}

/* A tensor argument of `role`, or NULL; see the file comment for what may vary. */
static sbn_tensor *tensor_arg(fuzz_call *fc, role ro, const char *name, int output)
{
    fz_reader *r = &fc->r;
    fuzz_arg *a = &fc->args[fc->nargs++];
    sbn_tensor *t = &a->view;
    unsigned mode = fz_next(r), place = fz_next16(r) | (fz_next(r) << 16);
    int order[SBN_MAX_RANK], d;
    fz_extent e;
    memset(a, 0, sizeof *a);
    a->name = name;
    a->output = output;
    if (mode % 32 == 0) return NULL;
    a->present = 1;
    t->dtype = pick_dtype(r, ro, fc->dtype);
    switch (ro) {
    case ROLE_ACTIVATION:
        t->rank = fc->rank;
        memcpy(t->shape, fc->shape, sizeof t->shape);
        break;
    case ROLE_VECTOR: t->rank = 1, t->shape[0] = fc->shape[1]; break;
    case ROLE_MATRIX: t->rank = 2, t->shape[0] = fc->world, t->shape[1] = fc->shape[1]; break;
    default: t->rank = 1, t->shape[0] = fc->world; break;
    }
    for (d = 0; d < t->rank; d++) order[d] = d;
    if (ro == ROLE_ACTIVATION && t->rank > 2 && (mode >> 5) % 4 == 1) { /* channels-last */
        for (d = 1; d < t->rank - 1; d++) order[d] = d + 1;
        order[t->rank - 1] = 1;
    } else if (t->rank > 1 && (mode >> 5) % 4 == 2) { /* some permutation */
        for (d = t->rank - 1; d > 0; d--) {
            int k = (int)fz_pick(r, (unsigned)d + 1), tmp = order[d];
            order[d] = order[k];
            order[k] = tmp;
        }
    }
    layout_strides(t, order, (mode >> 7) ? 1 + fz_pick(r, 3) : 1);
    if (fz_pick(r, 4) == 0 && t->rank > 0) /* a reversed dim */
        t->strides[fz_pick(r, (unsigned)t->rank)] *= -1;
    if (fz_pick(r, 8) == 0) { /* another rank, 0..9 (9 is beyond SBN_MAX_RANK) */
        int rank = (int)fz_pick(r, SBN_MAX_RANK + 2);
        for (d = t->rank; d < rank && d < SBN_MAX_RANK; d++) {
            t->shape[d] = 1 + fz_pick(r, 3);
            t->strides[d] = 1;
        }
        t->rank = rank;
    }
    if (fz_pick(r, 6) == 0 && t->rank > 0 && t->rank <= SBN_MAX_RANK)
        t->shape[fz_pick(r, (unsigned)t->rank)] =
            special_dims[fz_pick(r, sizeof special_dims / sizeof special_dims[0])];
    if (fz_pick(r, 6) == 0 && t->rank > 0 && t->rank <= SBN_MAX_RANK)
        t->strides[fz_pick(r, (unsigned)t->rank)] =
            special_strides[fz_pick(r, sizeof special_strides / sizeof special_strides[0])];

    e = fz_view_extent(t);
    if (e.kind == FZ_VIEW_OK && !(e.hi - e.lo <= BUF_BYTES && e.numel <= MAX_VIEW_ELEMENTS)) {
        /* addressable but not inside the buffer (or too slow): make it empty */
        t->shape[0] = 0;
        e = fz_view_extent(t);
    }
    if (e.kind == FZ_VIEW_OK) {
        int misaligned = (mode >> 6) % 4 == 3;
        /* sometimes on another argument's data, so that views overlap */
        if (fc->nargs > 1 && place % 4 == 0) {
            const fuzz_arg *other = &fc->args[place / 4 % (unsigned)(fc->nargs - 1)];
            if (other->present && other->view.data) {
                long start = (long)((unsigned char *)other->view.data - g_buffer) + (long)e.lo;
                if (start >= 0 && start + (e.hi - e.lo) <= BUF_BYTES) {
                    t->data = other->view.data;
                    return t;
                }
            }
        }
        if (!place_inside(t, e, place, misaligned)) abort(); /* cannot happen: sizes checked */
    } else {
        /* empty, invalid or unaddressable: any pointer, also NULL or misaligned */
        t->data = place % 8 == 1 ? NULL : g_buffer + place % BUF_BYTES;
    }
    return t;
}

/* count sbn_moments at an 8-aligned place in the buffer (or on another argument) */
static void *moments_arg(fuzz_call *fc, const char *name, int output, int64_t count)
{
    fuzz_arg *a = &fc->args[fc->nargs++];
    unsigned mode = fz_next(&fc->r), place = fz_next16(&fc->r);
    size_t bytes;
    long start;
    memset(a, 0, sizeof *a);
    a->name = name;
    a->output = output;
    if (mode % 16 == 0 || count < 0 || count > BUF_BYTES / (int64_t)sizeof(sbn_moments)) return NULL;
    bytes = (size_t)count * sizeof(sbn_moments);
    start = (long)(place % (BUF_BYTES - bytes + 1));
    if (mode % 4 == 1 && fc->nargs > 1) { /* on an earlier argument's data */
        const fuzz_arg *o = &fc->args[(mode >> 2) % (unsigned)(fc->nargs - 1)];
        const unsigned char *p = o->raw ? o->raw : (const unsigned char *)o->view.data;
        if (o->present && p >= g_buffer && p < g_buffer + BUF_BYTES) start = (long)(p - g_buffer);
    }
    start -= start % 8;
    if (start < 0 || start + (long)bytes > BUF_BYTES) start = 0;
    a->present = 1;
    a->raw = g_buffer + start;
    a->raw_bytes = bytes;
    return g_buffer + start;
}

static double pick_eps(fz_reader *r)
{
    static const double v[] = {1e-5, 0.0, 1e-3, -1e-5, NAN, INFINITY, 1e300, 0.1, 5e-324, -0.0};
    return v[fz_pick(r, sizeof v / sizeof v[0])];
}

static double pick_momentum(fz_reader *r)
{
    static const double v[] = {0.1, 0.0, 1.0, 1.0000001, -0.1, NAN, INFINITY, 0.5, -0.0, 1e-300};
    return v[fz_pick(r, sizeof v / sizeof v[0])];
}

/* The workspace: NULL, short, exact, larger, or on a tensor's data; always inside the buffer. */
static void pick_workspace(fuzz_call *fc, sbn_status size_status, size_t need)
{
    unsigned mode = fz_next(&fc->r), place = fz_next16(&fc->r);
    size_t bytes;
    long start = (long)(place % BUF_BYTES);
    fc->ws_need_known = !SBN_FAILED(size_status);
    fc->ws_need = fc->ws_need_known ? need : 0;
    if (!fc->ws_need_known) need = fz_next16(&fc->r) % 4096;
    switch (mode % 8) {
    case 0: fc->ws = NULL, fc->ws_bytes = mode & 8 ? need : 0; return;
    case 1: bytes = need / 2; break;
    case 2: bytes = need > 0 ? need - 1 : 0; break;
    case 3: bytes = need + fz_next(&fc->r); break;
    case 4: /* on one of the tensors */
        bytes = need;
        if (fc->nargs > 0) {
            const fuzz_arg *a = &fc->args[place % (unsigned)fc->nargs];
            const unsigned char *p = a->raw ? a->raw : (const unsigned char *)a->view.data;
            if (a->present && p >= g_buffer && p < g_buffer + BUF_BYTES)
                start = (long)(p - g_buffer) - (long)(mode >> 4);
        }
        break;
    default: bytes = need; break;
    }
    if (start < 0) start = 0;
    if (bytes > BUF_BYTES) bytes = BUF_BYTES; /* short: the op must refuse it */
    if (start + (long)bytes > BUF_BYTES) start = BUF_BYTES - (long)bytes;
    fc->ws = g_buffer + start;
    fc->ws_bytes = bytes;
}

/* ---- the ops ------------------------------------------------------------------------------ */

static int64_t x_channels(const fuzz_call *fc)
{
    const sbn_tensor *x = &fc->args[0].view;
    if (fc->args[0].present && x->rank >= 2 && x->rank <= SBN_MAX_RANK && x->shape[1] > 0)
        return x->shape[1];
    return fc->shape[1];
}

/* W x C x sizeof(sbn_moments) in 128 bits, saturated at 2^100 (0 or negative when W or C is) */
static __int128 moments_bytes(int64_t w, int64_t c)
{
    __int128 cells = (__int128)w * c; /* |cells| < 2^126 */
    if (cells > ((__int128)1 << 100)) cells = (__int128)1 << 100;
    if (cells < -((__int128)1 << 100)) cells = -((__int128)1 << 100);
    return cells * (__int128)sizeof(sbn_moments);
}

static sbn_status run_op(fuzz_call *fc, unsigned op, sbn_pool_t *pool)
{
    fz_reader *r = &fc->r;
    sbn_tensor *t[MAX_ARGS];
    size_t need = 0;
    sbn_status s, ss;
    double eps = pick_eps(r), momentum = pick_momentum(r);
    int training = (int)fz_pick(r, 3) % 2 ? 1 : (fz_pick(r, 2) ? 0 : 2);
    fc->inplace_out = fc->inplace_in = -1;
    switch (op) {
    case 0: /* stats */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[1] = tensor_arg(fc, ROLE_VECTOR, "mean", 1);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "invstd", 1);
        ss = sbn_stats_workspace_size(t[0], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_stats(t[0], eps, t[1], t[2], fc->ws, fc->ws_bytes, pool);
    case 1: { /* stats_moments: C moments, NULL when they would not fit the buffer */
        sbn_moments *m;
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        m = moments_arg(fc, "moments", 1, x_channels(fc));
        ss = sbn_stats_moments_workspace_size(t[0], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_stats_moments(t[0], m, fc->ws, fc->ws_bytes, pool);
    }
    case 3: { /* gather_moments: W x C moments fit the buffer, or cannot be addressed at all */
        static const int64_t odd[] = {0, -1, (int64_t)1 << 31, (int64_t)1 << 40, (int64_t)1 << 62,
                                      INT64_MAX, INT64_MIN};
        const __int128 unaddressable = (__int128)1 << 63;
        int64_t w = fc->world, c = fc->shape[1];
        __int128 bytes;
        const sbn_moments *parts;
        sbn_moments *total;
        if (fz_pick(r, 6) == 0) w = odd[fz_pick(r, 7)];
        if (fz_pick(r, 6) == 0) c = odd[fz_pick(r, 7)];
        bytes = moments_bytes(w, c);
        if (w > 0 && c > 0 && bytes > BUF_BYTES && bytes < unaddressable) w = fc->world;
        if (c > 0 && (__int128)c * 24 > BUF_BYTES && (__int128)c * 24 < unaddressable)
            w = fc->world, c = fc->shape[1];
        bytes = moments_bytes(w, c);
        if (w > 0 && c > 0 && bytes > BUF_BYTES && bytes < unaddressable) abort(); /* bug here */
        if (bytes > 0 && bytes <= BUF_BYTES) {
            parts = moments_arg(fc, "parts", 0, w * c);
        } else { /* the library must refuse W x C before reading parts: not an argument here */
            parts = (const sbn_moments *)(void *)(g_buffer + 64);
            fc->nargs++;
            memset(&fc->args[0], 0, sizeof fc->args[0]);
            fc->args[0].name = "parts (unread)";
        }
        if (c > 0 && c <= MAX_VIEW_ELEMENTS) fc->shape[1] = c;
        t[0] = tensor_arg(fc, ROLE_VECTOR, "running_mean", 1);
        t[1] = tensor_arg(fc, ROLE_VECTOR, "running_var", 1);
        total = moments_arg(fc, "total", 1, c > 0 && c <= BUF_BYTES / 24 ? c : -1);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "mean", 1);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "invstd", 1);
        fc->ws = NULL, fc->ws_bytes = 0, fc->ws_need = 0, fc->ws_need_known = 1;
        before_call(fc, op);
        return sbn_gather_moments(parts, w, c, momentum, eps, t[0], t[1], total, t[2], t[3]);
    }
    case 4: /* gather_stats_from_sums */
        t[0] = tensor_arg(fc, ROLE_MATRIX, "total_sum", 0);
        t[1] = tensor_arg(fc, ROLE_MATRIX, "total_square_sum", 0);
        t[2] = tensor_arg(fc, ROLE_COUNTS, "sample_count", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "running_mean", 1);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "running_var", 1);
        t[5] = tensor_arg(fc, ROLE_VECTOR, "mean", 1);
        t[6] = tensor_arg(fc, ROLE_VECTOR, "invstd", 1);
        fc->ws = NULL, fc->ws_bytes = 0, fc->ws_need = 0, fc->ws_need_known = 1;
        before_call(fc, op);
        return sbn_gather_stats_from_sums(t[0], t[1], t[2], momentum, eps, t[3], t[4], t[5], t[6]);
    case 5: /* reduce */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[1] = tensor_arg(fc, ROLE_VECTOR, "sum", 1);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "square_sum", 1);
        ss = sbn_reduce_workspace_size(t[0], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_reduce(t[0], t[1], t[2], fc->ws, fc->ws_bytes, pool);
    case 6: /* elemt, y may be x */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[1] = tensor_arg(fc, ROLE_VECTOR, "mean", 0);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "invstd", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "weight", 0);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "bias", 0);
        t[5] = tensor_arg(fc, ROLE_ACTIVATION, "y", 1);
        if (t[0] && t[5] && fz_pick(r, 4) == 0) fc->args[5].view = fc->args[0].view;
        fc->inplace_out = 5, fc->inplace_in = 0;
        ss = sbn_elemt_workspace_size(t[0], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_elemt(t[0], t[1], t[2], t[3], t[4], t[5], fc->ws, fc->ws_bytes, pool);
    case 7: /* backward_reduce */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "dy", 0);
        t[1] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "mean", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "invstd", 0);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "sum_dy", 1);
        t[5] = tensor_arg(fc, ROLE_VECTOR, "sum_dy_xmu", 1);
        t[6] = tensor_arg(fc, ROLE_VECTOR, "grad_weight", 1);
        t[7] = tensor_arg(fc, ROLE_VECTOR, "grad_bias", 1);
        ss = sbn_backward_reduce_workspace_size(t[1], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_backward_reduce(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], fc->ws,
                                   fc->ws_bytes, pool);
    case 8: { /* backward_elemt, grad_input may be dy */
        int64_t r_count = fc->shape[1] > 0 ? fc->shape[0] : 0, count;
        int d;
        for (d = 2; d < fc->rank; d++) r_count *= fc->shape[d];
        {
            const int64_t counts[] = {r_count, r_count * fc->world, r_count - 1, 0, -1, 1,
                                      INT64_MAX, (int64_t)1 << 62};
            count = counts[fz_pick(r, 8)];
        }
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "dy", 0);
        t[1] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "mean", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "invstd", 0);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "weight", 0);
        t[5] = tensor_arg(fc, ROLE_VECTOR, "sum_dy", 0);
        t[6] = tensor_arg(fc, ROLE_VECTOR, "sum_dy_xmu", 0);
        t[7] = tensor_arg(fc, ROLE_ACTIVATION, "grad_input", 1);
        if (t[0] && t[7] && fz_pick(r, 4) == 0) fc->args[7].view = fc->args[0].view;
        fc->inplace_out = 7, fc->inplace_in = 0;
        ss = sbn_backward_elemt_workspace_size(t[1], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_backward_elemt(t[0], t[1], t[2], t[3], t[4], t[5], t[6], count, t[7], fc->ws,
                                  fc->ws_bytes, pool);
    }
    case 9: /* batch_norm, y may be x */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[1] = tensor_arg(fc, ROLE_VECTOR, "weight", 0);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "bias", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "running_mean", 1);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "running_var", 1);
        t[5] = tensor_arg(fc, ROLE_ACTIVATION, "y", 1);
        t[6] = tensor_arg(fc, ROLE_VECTOR, "save_mean", 1);
        t[7] = tensor_arg(fc, ROLE_VECTOR, "save_invstd", 1);
        if (t[0] && t[5] && fz_pick(r, 4) == 0) fc->args[5].view = fc->args[0].view;
        fc->inplace_out = 5, fc->inplace_in = 0;
        fc->args[3].output = fc->args[4].output = training != 0; /* read only in eval */
        ss = sbn_batch_norm_workspace_size(t[0], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        return sbn_batch_norm(t[0], t[1], t[2], training, momentum, eps, t[3], t[4], t[5], t[6],
                              t[7], fc->ws, fc->ws_bytes, pool);
    default: /* batch_norm_backward, grad_input may be dy */
        t[0] = tensor_arg(fc, ROLE_ACTIVATION, "dy", 0);
        t[1] = tensor_arg(fc, ROLE_ACTIVATION, "x", 0);
        t[2] = tensor_arg(fc, ROLE_VECTOR, "weight", 0);
        t[3] = tensor_arg(fc, ROLE_VECTOR, "running_mean", 0);
        t[4] = tensor_arg(fc, ROLE_VECTOR, "running_var", 0);
        t[5] = tensor_arg(fc, ROLE_VECTOR, "save_mean", 0);
        t[6] = tensor_arg(fc, ROLE_VECTOR, "save_invstd", 0);
        t[7] = tensor_arg(fc, ROLE_ACTIVATION, "grad_input", 1);
        t[8] = tensor_arg(fc, ROLE_VECTOR, "grad_weight", 1);
        t[9] = tensor_arg(fc, ROLE_VECTOR, "grad_bias", 1);
        if (t[0] && t[7] && fz_pick(r, 4) == 0) fc->args[7].view = fc->args[0].view;
        fc->inplace_out = 7, fc->inplace_in = 0;
        ss = sbn_batch_norm_backward_workspace_size(t[1], &need);
        pick_workspace(fc, ss, need);
        before_call(fc, op);
        s = sbn_batch_norm_backward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], training, eps, t[7],
                                    t[8], t[9], fc->ws, fc->ws_bytes, pool);
        return s;
    }
}

/* ---- the oracles -------------------------------------------------------------------------- */

typedef struct mark_ctx {
    const fuzz_call *fc;
    const unsigned char *base;
    int64_t es;
    uint32_t bit;
    int output;
} mark_ctx;

static void mark_element(void *ctx, int64_t byte_offset, const int64_t *index)
{
    mark_ctx *m = ctx;
    long at = (long)(m->base - g_buffer) + (long)byte_offset, b;
    (void)index;
    for (b = at; b < at + (long)m->es; b++) {
        if (b < 0 || b >= BUF_BYTES) violation(m->fc, "fuzzer bug: an element outside the buffer", b);
        if (m->output && (g_mark[b] & m->bit))
            violation(m->fc, "accepted an output whose strides make two elements share memory", b);
        g_mark[b] |= m->bit;
    }
}

/* Marks every byte of every argument's elements: bit i (outputs) or 16 + i (inputs). */
static void mark_arguments(const fuzz_call *fc)
{
    int i;
    memset(g_mark, 0, sizeof g_mark);
    for (i = 0; i < fc->nargs; i++) {
        const fuzz_arg *a = &fc->args[i];
        uint32_t bit = a->output ? 1u << i : 1u << (16 + i);
        if (!a->present) continue;
        if (a->raw) {
            size_t b;
            for (b = 0; b < a->raw_bytes; b++) {
                if (a->output && (g_mark[a->raw - g_buffer + (long)b] & bit)) abort();
                g_mark[a->raw - g_buffer + (long)b] |= bit;
            }
        } else {
            mark_ctx m = {fc, a->view.data, (int64_t)sbn_dtype_size(a->view.dtype), bit, a->output};
            if (a->view.data != NULL)
                fz_for_each_element(&a->view, MAX_VIEW_ELEMENTS, mark_element, &m);
        }
    }
}

static int in_workspace(const fuzz_call *fc, long b, size_t bytes)
{
    return fc->ws != NULL && b >= fc->ws - g_buffer && b < (fc->ws - g_buffer) + (long)bytes;
}

static void check_refused_call(const fuzz_call *fc)
{
    long b;
    if (memcmp(g_buffer, g_before, BUF_BYTES) == 0) return;
    for (b = 0; b < BUF_BYTES; b++)
        if (g_buffer[b] != g_before[b] && !in_workspace(fc, b, fc->ws_bytes))
            violation(fc, "a refused call changed memory outside its workspace", b);
}

static void check_successful_call(const fuzz_call *fc)
{
    size_t ws_used = fc->ws_need_known && fc->ws_need < fc->ws_bytes ? fc->ws_need : fc->ws_bytes;
    long b;
    mark_arguments(fc);
    for (b = 0; b < BUF_BYTES; b++) {
        uint32_t m = g_mark[b], outs = m & OUTPUT_BITS, ins = m >> 16;
        if (g_buffer[b] != g_before[b] && outs == 0 && !in_workspace(fc, b, ws_used))
            violation(fc, "a successful call changed memory outside its outputs and workspace", b);
        if (outs & (outs - 1)) violation(fc, "accepted two outputs that share memory", b);
        if (outs && ins) {
            int o = __builtin_ctz(outs), i = __builtin_ctz(ins);
            int allowed = o == fc->inplace_out && i == fc->inplace_in && (ins & (ins - 1)) == 0 &&
                          fz_same_view(&fc->args[o].view, &fc->args[i].view);
            if (!allowed) violation(fc, "accepted an output that shares memory with an input", b);
        }
        if (m && fc->ws_need > 0 && in_workspace(fc, b, fc->ws_need))
            violation(fc, "accepted a workspace that shares memory with an argument", b);
    }
}

/* Channels of x holding a NaN or an infinity (bit c for c < 64), read from the snapshot. */
typedef struct nonfinite_ctx {
    const unsigned char *base;
    sbn_dtype dtype;
    uint64_t channels;
} nonfinite_ctx;

static void note_nonfinite(void *ctx, int64_t byte_offset, const int64_t *index)
{
    nonfinite_ctx *n = ctx;
    long at = (long)(n->base - g_buffer) + (long)byte_offset;
    if (index[1] < 64 && !isfinite(fz_load(n->dtype, g_before + at))) n->channels |= 1ull << index[1];
}

static double load_vector(const sbn_tensor *v, int64_t i)
{
    return fz_load(v->dtype, (const unsigned char *)v->data +
                                 i * v->strides[0] * (int64_t)sbn_dtype_size(v->dtype));
}

/* stats and stats_moments must not report finite statistics for a channel with a NaN or Inf. */
static void check_nonfinite_stats(const fuzz_call *fc, unsigned op)
{
    const sbn_tensor *x = &fc->args[0].view;
    nonfinite_ctx n = {x->data, x->dtype, 0};
    int64_t c;
    if (!fz_for_each_element(x, MAX_VIEW_ELEMENTS, note_nonfinite, &n) || n.channels == 0) return;
    for (c = 0; c < x->shape[1] && c < 64; c++) {
        int finite;
        if (!(n.channels >> c & 1)) continue;
        if (op == 0) {
            const fuzz_arg *mean = &fc->args[1], *invstd = &fc->args[2];
            finite = isfinite(load_vector(&mean->view, c)) && isfinite(load_vector(&invstd->view, c));
        } else {
            sbn_moments m;
            memcpy(&m, fc->args[1].raw + c * (int64_t)sizeof m, sizeof m);
            finite = isfinite(m.mean) && isfinite(m.m2);
        }
        if (finite) violation(fc, "finite statistics for a channel holding a NaN or an infinity", -1);
    }
}

/* Fills the buffer: one repeated byte (0x3c gives values near 1 or 0.01 in every float type),
 * a repeated 16-bit word, or a pseudo-random stream; then up to 3 special values poked in. */
static void fill_buffer(fz_reader *r)
{
    static const uint64_t pokes[] = {0x7fc000007fc00000ull, 0x7ff8000000000000ull,
                                     0x7c007c007c007c00ull, 0xff80ff80ff80ff80ull,
                                     0x0000000000000000ull, 0x3ff0000000000000ull,
                                     0xbf800000bf800000ull, 0x7f8000007f800000ull};
    unsigned mode = fz_next(r), value = fz_next(r), count, i;
    long b;
    if (mode % 3 == 0) {
        memset(g_buffer, (int)value, BUF_BYTES);
    } else if (mode % 3 == 1) {
        unsigned word = value | fz_next(r) << 8;
        for (b = 0; b < BUF_BYTES; b += 2) g_buffer[b] = (unsigned char)word, g_buffer[b + 1] = (unsigned char)(word >> 8);
    } else {
        uint64_t z = value * 0x9E3779B97F4A7C15ull + 1;
        for (b = 0; b < BUF_BYTES; b++) {
            z ^= z << 13, z ^= z >> 7, z ^= z << 17;
            g_buffer[b] = (unsigned char)(z >> 24);
        }
    }
    count = fz_pick(r, 4);
    for (i = 0; i < count; i++) {
        long at = (long)(fz_next16(r) % (BUF_BYTES - 8));
        memcpy(g_buffer + at, &pokes[fz_pick(r, 8)], 8);
    }
}

/* The op; FUZZ_OPS=3,9 (op indices of op_names) restricts the choice, e.g. to go on fuzzing
 * the other ops while a finding in one is being fixed. */
static unsigned pick_op(fz_reader *r)
{
    static unsigned allowed[11], count;
    static int ready;
    if (!ready) {
        const char *list = getenv("FUZZ_OPS");
        ready = 1;
        while (list && *list && count < 11) {
            char *end;
            unsigned long op = strtoul(list, &end, 10);
            if (end == list) break;
            if (op < 11) allowed[count++] = (unsigned)op;
            list = *end == ',' ? end + 1 : end;
        }
        if (count == 0)
            for (count = 0; count < 11; count++) allowed[count] = count;
    }
    return allowed[fz_pick(r, count)];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sbn_pool_t *two_threads;
    fuzz_call fc;
    unsigned op, d;
    sbn_status s;
    if (two_threads == NULL && sbn_pool_create(2, &two_threads) != SBN_OK) abort();
    memset(&fc, 0, sizeof fc);
    fc.r.data = data;
    fc.r.size = size;
    fill_buffer(&fc.r);
    op = pick_op(&fc.r);
    /* the plan: rank 2..4 mostly (up to 8), N 0..5, C 1..6, spatial dims 1..4, W 1..4 */
    fc.rank = 2 + (int)fz_pick(&fc.r, 3);
    if (fz_pick(&fc.r, 8) == 0) fc.rank = 2 + (int)fz_pick(&fc.r, SBN_MAX_RANK - 1);
    fc.shape[0] = fz_pick(&fc.r, 6);
    fc.shape[1] = 1 + fz_pick(&fc.r, 6);
    for (d = 2; d < (unsigned)fc.rank; d++) fc.shape[d] = 1 + fz_pick(&fc.r, fc.rank > 4 ? 2 : 4);
    fc.world = 1 + fz_pick(&fc.r, 4);
    fc.dtype = (sbn_dtype)fz_pick(&fc.r, 4);
    {
        sbn_pool_t *pool = fz_pick(&fc.r, 2) ? two_threads : NULL;
        memcpy(g_before, g_buffer, BUF_BYTES);
        fc.pool = pool;
        fc.op = op;
        s = run_op(&fc, op, pool);
    }
    if (SBN_FAILED(s)) {
        check_refused_call(&fc);
    } else {
        check_successful_call(&fc);
        if ((op == 0 || op == 1) && fc.args[0].present) check_nonfinite_stats(&fc, op);
    }
    return 0;
}
