/*
 * test_errors.c - argument validation of every op in ops.h, table-driven. Each op
 * is described once by an op_spec (its tensor arguments with their kind: activation,
 * per-channel, [W,C], counts or raw moments; which are outputs and which optional;
 * its scalars and its in-place pair) and a call wrapper. Generators derive from the
 * spec a list of mutations per status class (NULL, dtype, rank, shape, value, alias,
 * workspace, and the *_workspace_size functions' own checks); every mutation is applied to a fresh set of valid arguments (x is
 * (2, 3, 4), W = 2), and the test asserts the exact status, that no byte of any
 * buffer changed, and that sbn_last_error() names the offending argument as a word.
 * Positive controls (the untouched arguments, optional tensors left out, boundary
 * values, counts of every dtype, the allowed in-place views, a pool) must succeed
 * and leave sbn_last_error() empty after a failure.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/support.h"
#include "syncbn/ops.h"

#define MAXS 10
enum { N0 = 2, C0 = 3, S0 = 4, W0 = 2, R0 = N0 * S0 };
/* Argument kinds: x, another activation of x's shape, [C], [W,C], counts [W], moments. */
enum { K_X, K_ACT, K_PC, K_WC, K_CNT, K_MOMC, K_MOMWC };
enum { F_OUT = 1, F_OPT = 2, F_ABSENT = 4, F_OUTOPT = F_OUT | F_OPT };
enum { S_EPS = 1, S_MOM = 2, S_COUNT = 4, S_WORLD = 8 };
enum { CAT_NULL, CAT_DTYPE, CAT_RANK, CAT_SHAPE, CAT_VALUE, CAT_ALIAS, CAT_VALID, CAT_WS,
       CAT_WSFN };

typedef struct slot_spec {
    const char *name;
    int kind, flags;
} slot_spec;

typedef struct ctx ctx;
typedef struct op_spec {
    const char *name;
    sbn_status (*call)(ctx *c);
    sbn_status (*ws)(const sbn_tensor *t, size_t *bytes); /* NULL: no workspace */
    int prim;          /* x, or the first [W,C] input, or parts */
    int in_out, in_in; /* output that may be exactly the view of this input; -1 */
    int scalars;       /* S_* */
    int training;
    int nslots;
    slot_spec s[MAXS];
} op_spec;

struct ctx {
    const op_spec *op;
    int64_t n, c, sp, w;
    tsup_buf b[MAXS];
    sbn_tensor v[MAXS];
    sbn_tensor *p[MAXS];
    double *vals[MAXS];
    double eps, momentum;
    int64_t count, world, channels;
    void *ws;
    size_t ws_bytes;
    sbn_pool_t *pool;
};

/* ---- call wrappers, one per op, arguments in slot order ---- */
#define T(i) (c->p[i])
#define WS c->ws, c->ws_bytes, c->pool
static sbn_moments *mom(ctx *c, int i) { return c->p[i] ? (sbn_moments *)c->p[i]->data : NULL; }
static sbn_status call_stats(ctx *c) { return sbn_stats(T(0), c->eps, T(1), T(2), WS); }
static sbn_status call_moments(ctx *c) { return sbn_stats_moments(T(0), mom(c, 1), WS); }
static sbn_status call_gswc(ctx *c)
{
    return sbn_gather_stats_with_counts(T(0), T(1), T(2), c->momentum, c->eps, T(3), T(4), T(5),
                                        T(6), WS);
}
static sbn_status call_gm(ctx *c)
{
    return sbn_gather_moments(mom(c, 0), c->world, c->channels, c->momentum, c->eps, T(1), T(2),
                              mom(c, 3), T(4), T(5));
}
static sbn_status call_gsfs(ctx *c)
{
    return sbn_gather_stats_from_sums(T(0), T(1), T(2), c->momentum, c->eps, T(3), T(4), T(5),
                                      T(6));
}
static sbn_status call_reduce(ctx *c) { return sbn_reduce(T(0), T(1), T(2), WS); }
static sbn_status call_elemt(ctx *c) { return sbn_elemt(T(0), T(1), T(2), T(3), T(4), T(5), WS); }
static sbn_status call_breduce(ctx *c)
{
    return sbn_backward_reduce(T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7), WS);
}
static sbn_status call_belemt(ctx *c)
{
    return sbn_backward_elemt(T(0), T(1), T(2), T(3), T(4), T(5), T(6), c->count, T(7), WS);
}
static sbn_status call_bn(ctx *c)
{
    return sbn_batch_norm(T(0), T(1), T(2), c->op->training, c->momentum, c->eps, T(3), T(4),
                          T(5), T(6), T(7), WS);
}
static sbn_status call_bnb(ctx *c)
{
    return sbn_batch_norm_backward(T(0), T(1), T(2), T(3), T(4), T(5), T(6), c->op->training,
                                   c->eps, T(7), T(8), T(9), WS);
}

/* ---- the op table ---- */
#define RUNNING {"running_mean", K_PC, F_OUTOPT}, {"running_var", K_PC, F_OUTOPT}
static const op_spec OP_stats = {
    "stats", call_stats, sbn_stats_workspace_size, 0, -1, -1, S_EPS, 0, 3,
    {{"x", K_X, 0}, {"mean", K_PC, F_OUT}, {"invstd", K_PC, F_OUT}}};
static const op_spec OP_stats_moments = {
    "stats_moments", call_moments, sbn_stats_moments_workspace_size, 0, -1, -1, 0, 0, 2,
    {{"x", K_X, 0}, {"moments", K_MOMC, F_OUT}}};
static const op_spec OP_gather_counts = {
    "gather_stats_with_counts", call_gswc, sbn_gather_stats_with_counts_workspace_size, 0, -1, -1,
    S_EPS | S_MOM, 0, 7,
    {{"mean_all", K_WC, 0}, {"invstd_all", K_WC, 0}, {"counts", K_CNT, 0}, RUNNING,
     {"mean", K_PC, F_OUT}, {"invstd", K_PC, F_OUT}}};
static const op_spec OP_gather_moments = {
    "gather_moments", call_gm, NULL, 0, -1, -1, S_EPS | S_MOM | S_WORLD, 0, 6,
    {{"parts", K_MOMWC, 0}, RUNNING, {"total", K_MOMC, F_OUTOPT}, {"mean", K_PC, F_OUTOPT},
     {"invstd", K_PC, F_OUTOPT}}};
static const op_spec OP_gather_sums = {
    "gather_stats_from_sums", call_gsfs, NULL, 0, -1, -1, S_EPS | S_MOM, 0, 7,
    {{"total_sum", K_WC, 0}, {"total_square_sum", K_WC, 0}, {"sample_count", K_CNT, 0}, RUNNING,
     {"mean", K_PC, F_OUT}, {"invstd", K_PC, F_OUT}}};
static const op_spec OP_reduce = {
    "reduce", call_reduce, sbn_reduce_workspace_size, 0, -1, -1, 0, 0, 3,
    {{"x", K_X, 0}, {"sum", K_PC, F_OUT}, {"square_sum", K_PC, F_OUT}}};
static const op_spec OP_elemt = {
    "elemt", call_elemt, sbn_elemt_workspace_size, 0, 5, 0, 0, 0, 6,
    {{"x", K_X, 0}, {"mean", K_PC, 0}, {"invstd", K_PC, 0}, {"weight", K_PC, F_OPT},
     {"bias", K_PC, F_OPT}, {"y", K_ACT, F_OUT}}};
static const op_spec OP_backward_reduce = {
    "backward_reduce", call_breduce, sbn_backward_reduce_workspace_size, 1, -1, -1, 0, 0, 8,
    {{"dy", K_ACT, 0}, {"x", K_X, 0}, {"mean", K_PC, 0}, {"invstd", K_PC, 0},
     {"sum_dy", K_PC, F_OUTOPT}, {"sum_dy_xmu", K_PC, F_OUTOPT}, {"grad_weight", K_PC, F_OUTOPT},
     {"grad_bias", K_PC, F_OUTOPT}}};
static const op_spec OP_backward_elemt = {
    "backward_elemt", call_belemt, sbn_backward_elemt_workspace_size, 1, 7, 0, S_COUNT, 0, 8,
    {{"dy", K_ACT, 0}, {"x", K_X, 0}, {"mean", K_PC, 0}, {"invstd", K_PC, 0},
     {"weight", K_PC, F_OPT}, {"sum_dy", K_PC, 0}, {"sum_dy_xmu", K_PC, 0},
     {"grad_input", K_ACT, F_OUT}}};
static const op_spec OP_bn_train = {
    "batch_norm(training)", call_bn, sbn_batch_norm_workspace_size, 0, 5, 0, S_EPS | S_MOM, 1, 8,
    {{"x", K_X, 0}, {"weight", K_PC, F_OPT}, {"bias", K_PC, F_OPT}, RUNNING, {"y", K_ACT, F_OUT},
     {"save_mean", K_PC, F_OUTOPT}, {"save_invstd", K_PC, F_OUTOPT}}};
static const op_spec OP_bn_eval = {
    /* momentum is not used, and not checked, in eval mode */
    "batch_norm(eval)", call_bn, sbn_batch_norm_workspace_size, 0, 5, 0, S_EPS, 0, 8,
    {{"x", K_X, 0}, {"weight", K_PC, F_OPT}, {"bias", K_PC, F_OPT}, {"running_mean", K_PC, 0},
     {"running_var", K_PC, 0}, {"y", K_ACT, F_OUT}, {"save_mean", K_PC, F_ABSENT},
     {"save_invstd", K_PC, F_ABSENT}}};
#define BNB_OUTPUTS \
    {"grad_input", K_ACT, F_OUTOPT}, {"grad_weight", K_PC, F_OUTOPT}, {"grad_bias", K_PC, F_OUTOPT}
static const op_spec OP_bnb_train = {
    "batch_norm_backward(training)", call_bnb, sbn_batch_norm_backward_workspace_size, 1, 7, 0,
    S_EPS, 1, 10,
    {{"dy", K_ACT, 0}, {"x", K_X, 0}, {"weight", K_PC, F_OPT}, {"running_mean", K_PC, F_ABSENT},
     {"running_var", K_PC, F_ABSENT}, {"save_mean", K_PC, 0}, {"save_invstd", K_PC, 0},
     BNB_OUTPUTS}};
static const op_spec OP_bnb_eval = {
    "batch_norm_backward(eval)", call_bnb, sbn_batch_norm_backward_workspace_size, 1, 7, 0, S_EPS,
    0, 10,
    {{"dy", K_ACT, 0}, {"x", K_X, 0}, {"weight", K_PC, F_OPT}, {"running_mean", K_PC, 0},
     {"running_var", K_PC, 0}, {"save_mean", K_PC, F_ABSENT}, {"save_invstd", K_PC, F_ABSENT},
     BNB_OUTPUTS}};

/* ---- building valid arguments ---- */
static int kind_dims(const ctx *c, int kind, int64_t *shape)
{
    switch (kind) {
    case K_X:
    case K_ACT: shape[0] = c->n; shape[1] = c->c; shape[2] = c->sp; return 3;
    case K_PC: shape[0] = c->c; return 1;
    case K_WC: shape[0] = c->w; shape[1] = c->c; return 2;
    case K_CNT: shape[0] = c->w; return 1;
    case K_MOMC: shape[0] = 3 * c->c; return 1;
    default: shape[0] = 3 * c->w * c->c; return 1;
    }
}

/* (Re)builds slot i's buffer from c->vals[i] in dtype dt. */
static void slot_build(ctx *c, int i, sbn_dtype dt)
{
    int64_t shape[3];
    int rank = kind_dims(c, c->op->s[i].kind, shape);
    if (c->b[i].alloc) tsup_free(&c->b[i]);
    c->b[i] = tsup_make(dt, rank, shape, TSUP_CHANNELS_FIRST, c->vals[i]);
    c->v[i] = c->b[i].view;
    c->p[i] = &c->v[i];
}

static void ws_fit(ctx *c, size_t extra)
{
    size_t bytes = 0;
    free(c->ws);
    c->ws = NULL;
    c->ws_bytes = 0;
    if (!c->op->ws || !c->p[c->op->prim]) return;
    if (SBN_FAILED(c->op->ws(c->p[c->op->prim], &bytes))) return;
    c->ws_bytes = bytes + extra;
    c->ws = c->ws_bytes ? malloc(c->ws_bytes) : NULL;
}

static void ctx_init(ctx *c, const op_spec *op, int64_t n, int64_t ch, int64_t sp)
{
    tsup_rng rng = tsup_rng_seed(7);
    int i;
    memset(c, 0, sizeof *c);
    c->op = op;
    c->n = n, c->c = ch, c->sp = sp, c->w = W0;
    c->eps = 1e-5, c->momentum = 0.1, c->count = 2 * n * sp;
    c->world = W0, c->channels = ch;
    for (i = 0; i < op->nslots; i++) {
        int kind = op->s[i].kind;
        int64_t shape[3], numel, j;
        if (op->s[i].flags & F_ABSENT) continue;
        numel = tsup_numel(kind_dims(c, kind, shape), shape);
        c->vals[i] = malloc((size_t)(numel > 0 ? numel : 1) * sizeof(double));
        for (j = 0; j < numel; j++) {
            double *val = &c->vals[i][j];
            if (kind == K_X || kind == K_ACT) *val = tsup_normal(&rng);
            else if (kind == K_PC || kind == K_WC) *val = 0.5 + tsup_uniform(&rng);
            else if (kind == K_CNT) *val = (double)(4 + j);
            else if (kind == K_MOMC) *val = 0.0;
            else *val = j % 3 == 0 ? (double)(4 + j / 3 / ch)
                        : j % 3 == 1 ? tsup_normal(&rng) : 1.0 + tsup_uniform(&rng);
        }
        slot_build(c, i, kind >= K_MOMC ? SBN_F64 : SBN_F32);
    }
    ws_fit(c, 0);
}

static void ctx_free(ctx *c)
{
    int i;
    for (i = 0; i < MAXS; i++) {
        if (c->b[i].alloc) tsup_free(&c->b[i]);
        free(c->vals[i]);
    }
    free(c->ws);
    sbn_pool_destroy(c->pool);
}

/* ---- mutations: one change to a valid argument set ---- */
#define MUT_KINDS(X)                                                                          \
    X(M_NONE) X(M_PTR_NULL) X(M_DATA_NULL) X(M_DTYPE) X(M_RANK) X(M_XRANK) X(M_DIM) X(M_XDIM) \
    X(M_EPS) X(M_MOM) X(M_COUNT) X(M_WORLD) X(M_CHANNELS) X(M_SETVAL) X(M_REBUILD)            \
    X(M_XREBUILD) X(M_ALIAS) X(M_SHIFT) X(M_RESTRIDE) X(M_INPLACE) X(M_ZSTRIDE) X(M_POOL)     \
    X(M_EMPTY) X(M_WSBIG) X(M_WS) X(M_BYTES_NULL) X(M_INTERLEAVE) X(M_NEGSTRIDE)
#define MUT_ENUM(k) k,
#define MUT_NAME(k) #k,
enum { MUT_KINDS(MUT_ENUM) M_KINDS };
static const char *const mut_names[] = {MUT_KINDS(MUT_NAME)};

typedef struct mut {
    int kind, slot, other; /* other: a second slot, a dim or an element index */
    int64_t a;             /* a rank, dim size, dtype, count, thread count or mode */
    double d;              /* a scalar or element value */
    sbn_status want;
    char names[128];       /* argument names the message may cite, '|' separated */
} mut;

typedef struct mlist {
    const op_spec *op;
    sbn_status want; /* of the mutations added next */
    int n;
    mut m[192];
} mlist;

static mut *named(mut *m, const char *name)
{
    size_t len = strlen(m->names);
    snprintf(m->names + len, sizeof m->names - len, "%s%s", len ? "|" : "", name);
    return m;
}

static mut *add(mlist *L, int kind, int slot, int other, int64_t a, double d)
{
    mut *m = &L->m[L->n < 191 ? L->n++ : L->n];
    memset(m, 0, sizeof *m);
    m->kind = kind, m->slot = slot, m->other = other, m->a = a, m->d = d, m->want = L->want;
    return slot >= 0 ? named(m, L->op->s[slot].name) : m;
}

#define BIT(k) (1 << (k))
#define PRESENT(op, i) (!((op)->s[i].flags & F_ABSENT))
#define IS_OUT(op, i) (((op)->s[i].flags & F_OUT) != 0)
#define FOR_SLOTS(op, i, prim_only) \
    for (i = 0; i < (op)->nslots; i++) if (PRESENT(op, i) && (!(prim_only) || i == (op)->prim))

/* Adds the names of every present slot whose kind is in `kinds` (a bit mask). */
static mut *kinds_named(mut *m, const op_spec *op, int kinds)
{
    int i;
    FOR_SLOTS(op, i, 0) if (kinds >> op->s[i].kind & 1) named(m, op->s[i].name);
    return m;
}

static void gen_null(mlist *L, int prim_only)
{
    const op_spec *op = L->op;
    int i;
    L->want = SBN_ERR_NULL_ARGUMENT;
    FOR_SLOTS(op, i, prim_only) {
        if (!(op->s[i].flags & F_OPT)) add(L, M_PTR_NULL, i, 0, 0, 0);
        if (!prim_only && op->s[i].kind < K_MOMC) add(L, M_DATA_NULL, i, 0, 0, 0);
    }
}

static void gen_dtype(mlist *L, int prim_only)
{
    int i;
    L->want = SBN_ERR_BAD_DTYPE;
    FOR_SLOTS(L->op, i, prim_only) {
        int kind = L->op->s[i].kind;
        if (kind >= K_MOMC) continue;
        add(L, M_DTYPE, i, 0, kind == K_CNT ? -1 : SBN_I32, 0); /* counts take every dtype */
        add(L, M_DTYPE, i, 0, 99, 0);
    }
}

static void gen_rank(mlist *L, int prim_only)
{
    static const int64_t xr[] = {1, 9, 0, -1};
    const op_spec *op = L->op;
    int i, k;
    L->want = SBN_ERR_BAD_RANK;
    FOR_SLOTS(op, i, prim_only) {
        int kind = op->s[i].kind;
        for (k = 0; k < 4; k++) {
            if (kind == K_X) kinds_named(add(L, M_XRANK, i, 0, xr[k], 0), op, BIT(K_ACT));
            if ((kind == K_PC || kind == K_CNT) && k < 2) add(L, M_RANK, i, 0, k ? 0 : 2, 0);
            if (kind == K_WC && k < 2) add(L, M_RANK, i, 0, k ? 3 : 1, 0);
        }
    }
}

static void gen_shape(mlist *L, int prim_only)
{
    const op_spec *op = L->op;
    const char *prim = op->s[op->prim].name;
    int i;
    L->want = SBN_ERR_BAD_SHAPE;
    FOR_SLOTS(op, i, prim_only) {
        int kind = op->s[i].kind;
        if (kind == K_X) { /* negative dims, C == 0 (applied to x's whole family) */
            kinds_named(add(L, M_XDIM, i, 0, -1, 0), op, BIT(K_ACT));
            kinds_named(add(L, M_XDIM, i, 2, -3, 0), op, BIT(K_ACT));
            kinds_named(add(L, M_XDIM, i, 1, 0, 0), op, BIT(K_ACT) | BIT(K_PC));
        } else if (kind == K_WC && i == op->prim) {
            kinds_named(add(L, M_XDIM, i, 0, -1, 0), op, BIT(K_WC) | BIT(K_CNT));
            kinds_named(add(L, M_XDIM, i, 1, 0, 0), op, BIT(K_WC) | BIT(K_PC));
            kinds_named(add(L, M_XDIM, i, 1, -2, 0), op, BIT(K_WC) | BIT(K_PC));
        } else if (kind == K_ACT) { /* dy, y, grad_input not of x's shape */
            named(add(L, M_DIM, i, 2, S0 - 1, 0), prim);
            named(add(L, M_DIM, i, 0, N0 - 1, 0), prim);
        } else if (kind == K_PC) {
            named(add(L, M_DIM, i, 0, C0 - 1, 0), prim);
            named(add(L, M_DIM, i, 0, C0 + 1, 0), prim);
        } else if (kind == K_WC || kind == K_CNT) { /* W or C disagreeing with the first [W, C] */
            named(add(L, M_DIM, i, 0, W0 - 1, 0), prim);
            named(add(L, M_DIM, i, 0, W0 + 1, 0), prim);
            if (kind == K_WC) named(add(L, M_DIM, i, 1, C0 - 1, 0), prim);
        }
    }
    if ((op->scalars & S_WORLD) && !prim_only) {
        named(add(L, M_WORLD, -1, 0, 0, 0), "world");
        named(add(L, M_WORLD, -1, 0, -1, 0), "world");
        named(add(L, M_CHANNELS, -1, 0, 0, 0), "channels");
        named(add(L, M_CHANNELS, -1, 0, -2, 0), "channels");
        named(kinds_named(add(L, M_CHANNELS, -1, 0, C0 - 1, 0), op, BIT(K_PC)), "channels");
    }
}

static void gen_value(mlist *L)
{
    static const double eps_bad[] = {-1e-5, NAN, INFINITY, -INFINITY};
    static const double mom_bad[] = {-0.1, 1.5, NAN, INFINITY};
    static const double cnt_bad[] = {-1.0, NAN, INFINITY};
    static const int64_t count_bad[] = {0, R0 - 1, -3};
    const op_spec *op = L->op;
    int i, k;
    L->want = SBN_ERR_BAD_VALUE;
    for (k = 0; k < 4; k++) {
        if (op->scalars & S_EPS) named(add(L, M_EPS, -1, 0, 0, eps_bad[k]), "eps");
        if (op->scalars & S_MOM) named(add(L, M_MOM, -1, 0, 0, mom_bad[k]), "momentum");
        if ((op->scalars & S_COUNT) && k < 3)
            named(add(L, M_COUNT, -1, 0, count_bad[k], 0), "count");
    }
    FOR_SLOTS(op, i, 0) {
        if (op->s[i].kind == K_CNT) {
            for (k = 0; k < 3; k++) add(L, M_SETVAL, i, 1, SBN_F32, cnt_bad[k]);
            add(L, M_SETVAL, i, 1, SBN_I32, -1);
            add(L, M_SETVAL, i, 0, SBN_I64, -2);
        } else if (op->s[i].kind == K_MOMWC) { /* parts[1].count */
            for (k = 0; k < 3; k++) add(L, M_SETVAL, i, 3, SBN_F64, cnt_bad[k]);
        }
    }
}

static void gen_alias(mlist *L)
{
    const op_spec *op = L->op;
    int o, i;
    L->want = SBN_ERR_ALIAS;
    FOR_SLOTS(op, o, 0) {
        if (!IS_OUT(op, o)) continue;
        FOR_SLOTS(op, i, 0) {
            if (i == o || (IS_OUT(op, i) && i < o)) continue;
            if (o == op->in_out && i == op->in_in) { /* in place needs the identical view */
                named(add(L, M_SHIFT, o, i, 0, 0), op->s[i].name);
                named(add(L, M_RESTRIDE, o, i, 0, 0), op->s[i].name);
                named(add(L, M_INTERLEAVE, o, i, 0, 0), op->s[i].name);
            } else {
                named(add(L, M_ALIAS, o, i, 0, 0), op->s[i].name);
            }
        }
        if (op->s[o].kind == K_PC) add(L, M_ZSTRIDE, o, 0, 0, 0);
        if (op->s[o].kind == K_ACT) add(L, M_ZSTRIDE, o, 2, 0, 0);
    }
}

static void gen_workspace(mlist *L)
{
    int mode;
    L->want = SBN_ERR_WORKSPACE_TOO_SMALL;
    for (mode = 0; mode < 3; mode++)
        named(add(L, M_WS, -1, 0, mode, 0), "workspace|workspace_bytes");
}

/* Positive controls: each must succeed and clear sbn_last_error(). */
static void gen_valid(mlist *L)
{
    static const sbn_dtype cnt_types[] = {SBN_I32, SBN_I64, SBN_F64, SBN_F16, SBN_BF16};
    const op_spec *op = L->op;
    int i, k;
    L->want = SBN_OK;
    add(L, M_NONE, -1, 0, 0, 0);
    add(L, M_POOL, -1, 0, 3, 0);
    if (op->ws) add(L, M_WSBIG, -1, 0, 0, 0);
    if (op->in_out >= 0) add(L, M_INPLACE, op->in_out, op->in_in, 0, 0);
    if (op->scalars & S_EPS) add(L, M_EPS, -1, 0, 0, 0.0);
    if (op->scalars & S_MOM) add(L, M_MOM, -1, 0, 0, 0.0), add(L, M_MOM, -1, 0, 0, 1.0);
    if (op->scalars & S_COUNT) add(L, M_COUNT, -1, 0, R0, 0);
    if (op->s[op->prim].kind == K_X) {
        add(L, M_XREBUILD, op->prim, 0, SBN_BF16, 0);
        add(L, M_XREBUILD, op->prim, 0, SBN_F64, 0);
        add(L, M_EMPTY, op->prim, 0, 0, 0); /* numel 0 with data NULL is fine */
    }
    FOR_SLOTS(op, i, 0) {
        int kind = op->s[i].kind;
        if (op->s[i].flags & F_OPT) add(L, M_PTR_NULL, i, 0, 0, 0);
        if (kind == K_CNT)
            for (k = 0; k < 5; k++) add(L, M_REBUILD, i, 0, cnt_types[k], 0);
        if (kind == K_PC || kind == K_WC) add(L, M_REBUILD, i, 0, SBN_F64, 0);
        if (kind == K_PC && !IS_OUT(op, i)) add(L, M_ZSTRIDE, i, 0, 0, 0); /* broadcast input */
        if ((kind == K_PC || kind == K_X) && !IS_OUT(op, i)) add(L, M_NEGSTRIDE, i, 0, 0, 0);
        if (kind == K_ACT) add(L, M_REBUILD, i, 0, SBN_F16, 0), add(L, M_RESTRIDE, i, i, 0, 0);
    }
}

static void set_rank(sbn_tensor *v, int64_t rank)
{
    int d;
    if (rank >= 1 && rank <= SBN_MAX_RANK && rank > v->rank) {
        for (d = v->rank; d < rank; d++) v->shape[d] = 1, v->strides[d] = 1;
    } else if (rank >= 1 && rank < v->rank) { /* collapse the trailing dims (contiguous views) */
        v->strides[rank - 1] = v->strides[v->rank - 1];
        for (d = (int)rank; d < v->rank; d++) v->shape[rank - 1] *= v->shape[d];
    }
    v->rank = (int)rank;
}

static int64_t span_bytes(const sbn_tensor *v)
{
    int64_t last = 0;
    int d;
    for (d = 0; d < v->rank; d++) last += (v->shape[d] - 1) * llabs(v->strides[d]);
    return (last + 1) * (int64_t)sbn_dtype_size(v->dtype);
}

/* Changes x's family at once: x and its activations, plus the tensors tied to the changed dim. */
static void apply_family(ctx *c, const mut *m)
{
    const op_spec *op = c->op;
    int i, x_prim = op->s[op->prim].kind == K_X;
    FOR_SLOTS(op, i, 0) {
        int kind = op->s[i].kind, fam = x_prim ? kind == K_X || kind == K_ACT : kind == K_WC;
        sbn_tensor *t = &c->v[i];
        if (m->kind == M_XRANK && fam) set_rank(t, m->a);
        if (m->kind == M_XREBUILD && fam) slot_build(c, i, (sbn_dtype)m->a);
        if (m->kind == M_EMPTY && fam) t->shape[0] = 0, t->data = NULL, c->count = 0;
        if (m->kind == M_INTERLEAVE && fam) t->shape[2] /= 2, t->strides[2] *= 2;
        if (m->kind == M_XDIM && fam) t->shape[m->other] = m->a;
        if (m->kind == M_XDIM && ((kind == K_PC && m->other == 1) || (kind == K_CNT && !m->other)))
            t->shape[0] = m->a;
    }
    if (m->kind == M_XREBUILD || m->kind == M_EMPTY) ws_fit(c, 0);
    if (m->kind == M_INTERLEAVE) { /* out takes the odd elements of the in's even ones */
        c->v[m->slot] = c->v[m->other];
        c->v[m->slot].data = (char *)c->v[m->other].data + sbn_dtype_size(c->v[m->other].dtype);
    }
}

static void apply(ctx *c, const mut *m)
{
    sbn_tensor *v = m->slot >= 0 ? &c->v[m->slot] : NULL, *u = &c->v[m->other];
    switch (m->kind) {
    case M_PTR_NULL: c->p[m->slot] = NULL; break;
    case M_DATA_NULL: v->data = NULL; break;
    case M_DTYPE: v->dtype = (sbn_dtype)m->a; break;
    case M_RANK: set_rank(v, m->a); break;
    case M_DIM: v->shape[m->other] = m->a; break;
    case M_EPS: c->eps = m->d; break;
    case M_MOM: c->momentum = m->d; break;
    case M_COUNT: c->count = m->a; break;
    case M_WORLD: c->world = m->a; break;
    case M_CHANNELS: c->channels = m->a; break;
    case M_SETVAL: c->vals[m->slot][m->other] = m->d; /* fall through */
    case M_REBUILD: slot_build(c, m->slot, (sbn_dtype)m->a); break;
    case M_ZSTRIDE: v->strides[m->other] = 0; break;
    case M_NEGSTRIDE: /* the last dim walked backwards */
        v->data = (char *)v->data + (v->shape[v->rank - 1] - 1) * v->strides[v->rank - 1] *
                                        (int64_t)sbn_dtype_size(v->dtype);
        v->strides[v->rank - 1] = -v->strides[v->rank - 1];
        break;
    case M_INPLACE: *v = *u; break;
    case M_SHIFT: /* the same view one element further on: a partial overlap */
        *v = *u;
        v->data = (char *)u->data + sbn_dtype_size(u->dtype);
        break;
    case M_RESTRIDE: /* the same data and shape, channels-last strides */
        *v = sbn_tensor_channels_last(u->data, u->dtype, u->rank, u->shape);
        break;
    case M_ALIAS: { /* the view that fits inside the other's buffer starts at its first byte */
        const tsup_buf *ub = &c->b[m->other];
        if (span_bytes(v) <= (int64_t)(ub->alloc + ub->alloc_bytes - (unsigned char *)u->data))
            v->data = u->data;
        else
            u->data = v->data;
        break;
    }
    case M_POOL: CHECK_OK(sbn_pool_create((int)m->a, &c->pool)); break;
    case M_WSBIG: ws_fit(c, 4096); break;
    case M_WS: /* 0: one byte short; 1: NULL with the size; 2: NULL and 0 */
        c->ws_bytes -= m->a == 0 ? 1 : m->a == 2 ? c->ws_bytes : 0;
        if (m->a) free(c->ws), c->ws = NULL;
        break;
    case M_NONE:
    case M_BYTES_NULL: break;
    default: apply_family(c, m); break;
    }
}

/* 1 when one of the '|'-separated names occurs in msg as a whole identifier. */
static int has_word(const char *msg, const char *names)
{
    char word[64];
    while (*names) {
        size_t len = strcspn(names, "|");
        const char *h;
        if (len > 0 && len < sizeof word) {
            memcpy(word, names, len);
            word[len] = 0;
            for (h = strstr(msg, word); h; h = strstr(h + 1, word))
                if ((h == msg || !(isalnum((unsigned char)h[-1]) || h[-1] == '_')) &&
                    !(isalnum((unsigned char)h[len]) || h[len] == '_'))
                    return 1;
        }
        names += len + (names[len] == '|');
    }
    return 0;
}

static void describe(const op_spec *op, const mut *m, const int64_t *shape, char *out, size_t n)
{
    int pair = m->kind == M_ALIAS || m->kind == M_SHIFT || m->kind == M_RESTRIDE ||
               m->kind == M_INPLACE || m->kind == M_INTERLEAVE;
    char other[32];
    snprintf(other, sizeof other, "%d", m->other);
    snprintf(out, n, "%s %s(%s, %s, a=%lld, d=%g) x (%lld, %lld, %lld)", op->name,
             mut_names[m->kind], m->slot >= 0 ? op->s[m->slot].name : "-",
             pair ? op->s[m->other].name : other, (long long)m->a, m->d, (long long)shape[0],
             (long long)shape[1], (long long)shape[2]);
}

#define FAIL(...) sbn_test_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Leaves a failure in sbn_last_error() so that a later success must clear it. */
static void provoke_failure(void)
{
    if (sbn_reduce(NULL, NULL, NULL, NULL, 0, NULL) != SBN_ERR_NULL_ARGUMENT ||
        !sbn_last_error()[0])
        FAIL("sbn_reduce(NULL, ...) did not fail with a message");
}

/* Checks status and message; snap (may be NULL) holds every buffer, none may have changed. */
static void check_failure(const char *desc, const mut *m, sbn_status st, const ctx *c,
                          unsigned char *const *snap)
{
    const char *msg = sbn_last_error() ? sbn_last_error() : "(null)";
    int i;
    if (getenv("SBN_TEST_VERBOSE")) printf("    %s -> %s \"%s\"\n", desc, sbn_status_name(st), msg);
    if (st != m->want)
        FAIL("%s: returned %s, expected %s (\"%s\")", desc, sbn_status_name(st),
             sbn_status_name(m->want), msg);
    for (i = 0; snap && i < MAXS; i++)
        if (snap[i] && !tsup_unchanged(&c->b[i], snap[i]))
            FAIL("%s: %s changed on failure", desc, c->op->s[i].name);
    if (!msg[0])
        FAIL("%s: sbn_last_error() is empty", desc);
    else if (!has_word(msg, m->names))
        FAIL("%s: message \"%s\" names none of %s", desc, msg, m->names);
}

/* Runs the op (or, for wsfn, its workspace_size function) on a valid set changed by m. */
static void run_one(const op_spec *op, const mut *m, const int64_t *shape, int valid, int wsfn)
{
    ctx c;
    unsigned char *snap[MAXS] = {0};
    char desc[256];
    size_t bytes = 12345;
    sbn_status st;
    int i;
    ctx_init(&c, op, shape[0], shape[1], shape[2]);
    apply(&c, m);
    describe(op, m, shape, desc, sizeof desc);
    for (i = 0; i < MAXS; i++)
        if (c.b[i].alloc) snap[i] = tsup_snapshot(&c.b[i]);
    if (valid) provoke_failure();
    if (wsfn) {
        st = op->ws(c.p[op->prim], m->kind == M_BYTES_NULL ? NULL : &bytes);
        check_failure(desc, m, st, &c, NULL);
        if (bytes != 12345) FAIL("%s: workspace_size wrote %zu on failure", desc, bytes);
    } else if (!valid) {
        check_failure(desc, m, op->call(&c), &c, snap);
    } else if (SBN_FAILED(st = op->call(&c))) {
        FAIL("%s: valid call returned %s (\"%s\")", desc, sbn_status_name(st), sbn_last_error());
    } else if (sbn_last_error()[0]) {
        FAIL("%s: sbn_last_error() is \"%s\" after success", desc, sbn_last_error());
    }
    for (i = 0; i < MAXS; i++) free(snap[i]);
    ctx_free(&c);
}

/* Shape of x for which the op needs a workspace; 0 when none of the tried ones does. */
static int ws_shape(const op_spec *op, int64_t *shape)
{
    static const int64_t shapes[][3] = {{N0, C0, S0}, {4, 8, 64}, {8, 16, 1024}, {16, 32, 4096}};
    int k;
    for (k = 0; k < 4; k++) {
        ctx c;
        size_t need;
        ctx_init(&c, op, shapes[k][0], shapes[k][1], shapes[k][2]);
        need = c.ws_bytes;
        ctx_free(&c);
        if (need > 0) {
            memcpy(shape, shapes[k], sizeof shapes[k]);
            return 1;
        }
    }
    return 0;
}

static void run_cat(const op_spec *op, int cat)
{
    static const char *const cat_names[] = {"null", "dtype", "rank", "shape", "value",
                                            "alias", "valid", "workspace", "workspace_size"};
    int64_t shape[3] = {N0, C0, S0};
    mlist *L = calloc(1, sizeof *L);
    int k;
    L->op = op;
    switch (cat) {
    case CAT_NULL: gen_null(L, 0); break;
    case CAT_DTYPE: gen_dtype(L, 0); break;
    case CAT_RANK: gen_rank(L, 0); break;
    case CAT_SHAPE: gen_shape(L, 0); break;
    case CAT_VALUE: gen_value(L); break;
    case CAT_ALIAS: gen_alias(L); break;
    case CAT_VALID: gen_valid(L); break;
    case CAT_WS:
        if (ws_shape(op, shape)) gen_workspace(L);
        else printf("    %s needs no workspace for any tried shape\n", op->name);
        break;
    default: /* the workspace_size function: x (or mean_all) and bytes */
        gen_null(L, 1), gen_dtype(L, 1), gen_rank(L, 1), gen_shape(L, 1);
        named(add(L, M_BYTES_NULL, -1, 0, 0, 0), "bytes")->want = SBN_ERR_NULL_ARGUMENT;
        break;
    }
    for (k = 0; k < L->n; k++) run_one(op, &L->m[k], shape, cat == CAT_VALID, cat == CAT_WSFN);
    printf("    %s/%s: %d argument sets\n", op->name, cat_names[cat], L->n);
    free(L);
}

#define OP_TESTS(id)                                                \
    static void id##_null(void) { run_cat(&OP_##id, CAT_NULL); }    \
    static void id##_dtype(void) { run_cat(&OP_##id, CAT_DTYPE); }  \
    static void id##_rank(void) { run_cat(&OP_##id, CAT_RANK); }    \
    static void id##_shape(void) { run_cat(&OP_##id, CAT_SHAPE); }  \
    static void id##_alias(void) { run_cat(&OP_##id, CAT_ALIAS); }  \
    static void id##_valid(void) { run_cat(&OP_##id, CAT_VALID); }
#define WS_TESTS(id)                                                     \
    static void id##_workspace(void) { run_cat(&OP_##id, CAT_WS); }      \
    static void id##_workspace_size(void) { run_cat(&OP_##id, CAT_WSFN); }
#define VALUE_TESTS(id) static void id##_value(void) { run_cat(&OP_##id, CAT_VALUE); }
#define ENTRIES(id)                                                                 \
    {#id "_null", id##_null}, {#id "_dtype", id##_dtype}, {#id "_rank", id##_rank}, \
    {#id "_shape", id##_shape}, {#id "_alias", id##_alias}, {#id "_valid", id##_valid}
#define WS_ENTRIES(id) \
    {#id "_workspace", id##_workspace}, {#id "_workspace_size", id##_workspace_size}
#define VALUE_ENTRIES(id) {#id "_value", id##_value}

OP_TESTS(stats) WS_TESTS(stats) VALUE_TESTS(stats)
OP_TESTS(stats_moments) WS_TESTS(stats_moments)
OP_TESTS(gather_counts) WS_TESTS(gather_counts) VALUE_TESTS(gather_counts)
OP_TESTS(gather_moments) VALUE_TESTS(gather_moments)
OP_TESTS(gather_sums) VALUE_TESTS(gather_sums)
OP_TESTS(reduce) WS_TESTS(reduce)
OP_TESTS(elemt) WS_TESTS(elemt)
OP_TESTS(backward_reduce) WS_TESTS(backward_reduce)
OP_TESTS(backward_elemt) WS_TESTS(backward_elemt) VALUE_TESTS(backward_elemt)
OP_TESTS(bn_train) WS_TESTS(bn_train) VALUE_TESTS(bn_train)
OP_TESTS(bn_eval) WS_TESTS(bn_eval) VALUE_TESTS(bn_eval)
OP_TESTS(bnb_train) WS_TESTS(bnb_train) VALUE_TESTS(bnb_train)
OP_TESTS(bnb_eval) WS_TESTS(bnb_eval) VALUE_TESTS(bnb_eval)

/* gather_moments and gather_stats_from_sums take no workspace; stats_moments, reduce,
   elemt and backward_reduce no checked scalar or element value */
static const sbn_test_case k_cases[] = {
    ENTRIES(stats), WS_ENTRIES(stats), VALUE_ENTRIES(stats),
    ENTRIES(stats_moments), WS_ENTRIES(stats_moments),
    ENTRIES(gather_counts), WS_ENTRIES(gather_counts), VALUE_ENTRIES(gather_counts),
    ENTRIES(gather_moments), VALUE_ENTRIES(gather_moments),
    ENTRIES(gather_sums), VALUE_ENTRIES(gather_sums),
    ENTRIES(reduce), WS_ENTRIES(reduce),
    ENTRIES(elemt), WS_ENTRIES(elemt),
    ENTRIES(backward_reduce), WS_ENTRIES(backward_reduce),
    ENTRIES(backward_elemt), WS_ENTRIES(backward_elemt), VALUE_ENTRIES(backward_elemt),
    ENTRIES(bn_train), WS_ENTRIES(bn_train), VALUE_ENTRIES(bn_train),
    ENTRIES(bn_eval), WS_ENTRIES(bn_eval), VALUE_ENTRIES(bn_eval),
    ENTRIES(bnb_train), WS_ENTRIES(bnb_train), VALUE_ENTRIES(bnb_train),
    ENTRIES(bnb_eval), WS_ENTRIES(bnb_eval), VALUE_ENTRIES(bnb_eval),
};

SBN_TEST_MAIN(k_cases)
