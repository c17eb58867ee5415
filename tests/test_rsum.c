/*
 * test_rsum.c - the reproducible accumulator (src/core/rsum.h) against an oracle of its
 * own: a 2304-bit two's complement integer in uint32 limbs (grid 2^-1074 .. past
 * 2^1100), terms converted through frexp and placed bit by bit, the per-term floor at
 * the final window (lo from the largest term's top bin, found through frexp) applied
 * by clearing bits, and a rounding that takes no shortcut: the nearest of a few
 * neighbouring doubles of a crude estimate, chosen by exact big-integer distances
 * (ties to the even significand), with the overflow threshold 2^1024 - 2^970 checked
 * exactly. Values are compared bit for bit. Then: order independence (permutations,
 * random groups merged in random trees, typed and byte merges, many channels at
 * once) with identical 56-byte states; exactness (a million doubles in [-1, 1],
 * terms within the window, ties, subnormals); the floor below the window; overflow;
 * NaN/Inf flags; the empty state; 2^31 - 1 terms without a wrap; and the ns per add.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rsum.h"
#include "harness/harness.h"
#include "support/support.h"

/* ---- random numbers ---- */

static tsup_rng g_rng = {0x9E3779B97F4A7C15u};

static uint64_t rnd(void) /* support.c's splitmix64; each case reseeds g_rng.state */
{
    return tsup_next_u64(&g_rng);
}

static size_t rnd_below(size_t n)
{
    return (size_t)(rnd() % n);
}

static double rnd_sign(double x)
{
    return rnd() & 1 ? -x : x;
}

/* |x| in [1e-300, 1e300] with a full random significand. */
static double rnd_wide(void)
{
    double m = (double)((rnd() >> 11) | (UINT64_C(1) << 52));
    return rnd_sign(ldexp(m, (int)rnd_below(1994) - 997 - 52));
}

/* A random subnormal (never 0). */
static double rnd_subnormal(void)
{
    uint64_t bits = (rnd() & ((UINT64_C(1) << 52) - 1)) | 1;
    double d;
    memcpy(&d, &bits, sizeof d);
    return rnd_sign(d);
}

/* Uniform in [-1, 1] on the 2^-53 grid. */
static double rnd_unit(void)
{
    return rnd_sign(ldexp((double)(rnd() >> 11), -53));
}

/* 2^e * m for a random 53-bit m, e in [e0, e0 + span] */
static double rnd_band(int e0, int span)
{
    double m = (double)((rnd() >> 11) | (UINT64_C(1) << 52));
    return rnd_sign(ldexp(m, e0 + (int)rnd_below((size_t)span + 1) - 52));
}

/* A nasty mix: wide, subnormal, unit, cancelling copies, zeros, ties, tiny beside huge. */
static void rnd_mixed(double *t, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        size_t kind = rnd_below(20);
        double prev = i ? t[rnd_below(i)] : 1e20;
        if (kind < 7) t[i] = rnd_wide();
        else if (kind < 9) t[i] = rnd_subnormal();
        else if (kind < 12) t[i] = rnd_unit();
        else if (kind < 14) t[i] = -prev; /* cancellation */
        else if (kind == 14) t[i] = rnd() & 1 ? 0.0 : -0.0;
        else if (kind == 15) t[i] = rnd_sign(ldexp(1.0, 53) + (double)rnd_below(4));
        else if (kind == 16) t[i] = rnd_sign(ldexp(1.0, (int)rnd_below(60) - 30)); /* ties */
        else if (kind == 17) t[i] = prev * ldexp(1.0, -53 - (int)rnd_below(120));
        else if (kind == 18) t[i] = rnd_sign(1e20);
        else t[i] = rnd_sign(DBL_TRUE_MIN * (double)(1 + rnd_below(3)));
    }
}

static void shuffle(double *t, size_t n)
{
    size_t i;
    for (i = n; i > 1; i--) {
        size_t j = rnd_below(i);
        double x = t[i - 1];
        t[i - 1] = t[j];
        t[j] = x;
    }
}

static int same_bits(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- the oracle: a wide two's complement integer in grid units (2^-1074) ---- */

#define OL 72 /* 2304 bits */

typedef struct big {
    uint32_t l[OL];
} big;

static int big_negative(const big *a)
{
    return (int)(a->l[OL - 1] >> 31);
}

static int big_is_zero(const big *a)
{
    int i;
    for (i = 0; i < OL; i++)
        if (a->l[i]) return 0;
    return 1;
}

static void big_set_bit(big *a, int bit)
{
    a->l[bit / 32] |= (uint32_t)1 << (bit % 32);
}

/* a += b (sub = 0) or a -= b (sub = 1), modulo 2^2304 */
static void big_addsub(big *a, const big *b, int sub)
{
    uint64_t carry = sub; /* a - b = a + ~b + 1 */
    int i;
    for (i = 0; i < OL; i++) {
        uint64_t v = (uint64_t)a->l[i] + (sub ? (uint32_t)~b->l[i] : b->l[i]) + carry;
        a->l[i] = (uint32_t)v;
        carry = v >> 32;
    }
}

static void big_negate(big *a)
{
    big z;
    memset(&z, 0, sizeof z);
    big_addsub(&z, a, 1);
    *a = z;
}

/* -1, 0, 1 as a <, =, > b (both nonnegative) */
static int big_cmp(const big *a, const big *b)
{
    int i;
    for (i = OL - 1; i >= 0; i--)
        if (a->l[i] != b->l[i]) return a->l[i] < b->l[i] ? -1 : 1;
    return 0;
}

/* |t| as grid integer M * 2^g, through frexp (t finite, nonzero). */
static void oracle_split(double t, uint64_t *m, int *g)
{
    int ex;
    double fr = frexp(fabs(t), &ex);
    *m = (uint64_t)ldexp(fr, 53);
    *g = ex + 1021; /* lsb 2^(ex - 53), in grid units 2^(ex - 53 + 1074) */
    if (*g < 0) {
        *m >>= -*g; /* subnormal: the bits shifted out are 0 */
        *g = 0;
    }
}

/* |t| as a big, bit by bit. */
static void big_from_double(big *a, double t)
{
    uint64_t m;
    int g, b;
    memset(a, 0, sizeof *a);
    if (t == 0) return;
    oracle_split(t, &m, &g);
    for (b = 0; b < 53; b++)
        if ((m >> b) & 1) big_set_bit(a, g + b);
}

/* The bin of |t|'s highest grid bit. */
static int oracle_top_bin(double t)
{
    int ex;
    frexp(fabs(t), &ex); /* highest bit 2^(ex - 1), grid bit ex + 1073 */
    return (ex + 1073) / 32;
}

/*
 * acc += count * floor(t / 2^cut) * 2^cut (cut <= 0: the exact t). The floor of a
 * negative term is minus the magnitude rounded up: clear the bits below cut and add
 * 2^cut back when any was set.
 */
static void oracle_add(big *acc, double t, int cut, uint64_t count)
{
    big mag;
    int i, sticky = 0;
    uint64_t c;
    big_from_double(&mag, t);
    for (i = 0; i < cut / 32; i++) { /* whole limbs below cut */
        sticky |= mag.l[i] != 0;
        mag.l[i] = 0;
    }
    if (cut > 0 && cut % 32) {
        uint32_t low_mask = ((uint32_t)1 << (cut % 32)) - 1;
        sticky |= (mag.l[cut / 32] & low_mask) != 0;
        mag.l[cut / 32] &= ~low_mask;
    }
    if (t < 0 && sticky) {
        big one;
        memset(&one, 0, sizeof one);
        big_set_bit(&one, cut);
        big_addsub(&mag, &one, 0);
    }
    for (c = count; c; c >>= 1) { /* count * mag by doubling */
        if (c & 1) big_addsub(acc, &mag, t < 0);
        big_addsub(&mag, &mag, 0);
    }
}

/* The double nearest to v (grid units), ties to even; +0.0 for 0. */
static double oracle_round(big v)
{
    int negative = big_negative(&v), i, top = -1, k;
    big limit, best_diff;
    double approx, best = 0, c;
    if (negative) big_negate(&v);
    if (big_is_zero(&v)) return 0.0;
    memset(&limit, 0, sizeof limit); /* (2^1024 - 2^970) in grid units */
    big_set_bit(&limit, 2098);
    {
        big half_ulp;
        memset(&half_ulp, 0, sizeof half_ulp);
        big_set_bit(&half_ulp, 2044);
        big_addsub(&limit, &half_ulp, 1);
    }
    if (big_cmp(&v, &limit) >= 0) return negative ? -INFINITY : INFINITY;
    for (i = OL - 1; i >= 0 && top < 0; i--)
        if (v.l[i]) top = i;
    approx = (double)v.l[top] * 4294967296.0 + (top >= 1 ? (double)v.l[top - 1] : 0);
    approx = approx * 4294967296.0 + (top >= 2 ? (double)v.l[top - 2] : 0);
    approx = ldexp(approx, 32 * (top - 2) - 1074);
    if (isinf(approx)) approx = DBL_MAX;
    for (k = 0; k < 3; k++) approx = nextafter(approx, 0.0);
    c = approx;
    for (k = 0; k < 7; k++) {
        big cb, diff = v;
        int better;
        big_from_double(&cb, c);
        big_addsub(&diff, &cb, 1);
        if (big_negative(&diff)) big_negate(&diff);
        if (k == 0) better = 1;
        else {
            int cmp = big_cmp(&diff, &best_diff);
            uint64_t bits;
            memcpy(&bits, &c, sizeof bits);
            better = cmp < 0 || (cmp == 0 && (bits & 1) == 0);
        }
        if (better) {
            best = c;
            best_diff = diff;
        }
        if (c == DBL_MAX) break;
        c = nextafter(c, INFINITY);
    }
    return negative ? -best : best;
}

/* The oracle's sum of t[0..n): truncated at the final window (truncate) or exact. */
static double oracle_sum(const double *t, size_t n, int truncate)
{
    big acc;
    size_t i;
    int nan = 0, pinf = 0, ninf = 0, top = -1;
    for (i = 0; i < n; i++) {
        if (isnan(t[i])) nan = 1;
        else if (isinf(t[i])) *(t[i] > 0 ? &pinf : &ninf) = 1;
        else if (t[i] != 0 && oracle_top_bin(t[i]) > top) top = oracle_top_bin(t[i]);
    }
    if (nan || (pinf && ninf)) return NAN;
    if (pinf || ninf) return pinf ? INFINITY : -INFINITY;
    memset(&acc, 0, sizeof acc);
    for (i = 0; i < n; i++)
        if (isfinite(t[i]) && t[i] != 0) oracle_add(&acc, t[i], truncate ? 32 * (top - 3) : 0, 1);
    return oracle_round(acc);
}

/* ---- helpers on the accumulator ---- */

static sbn__rsum rsum_of(const double *t, size_t n)
{
    sbn__rsum a;
    size_t i;
    sbn__rsum_clear(&a, 1);
    for (i = 0; i < n; i++) sbn__rsum_add(&a, t[i]);
    return a;
}

static double rsum_sum(const double *t, size_t n)
{
    sbn__rsum a = rsum_of(t, n);
    return sbn__rsum_value(&a);
}

/* Checks the accumulator's value of t[0..n) against the truncating oracle, bitwise. */
#define CHECK_SUM(t, n)                                                                     \
    do {                                                                                    \
        double got_ = rsum_sum((t), (n)), want_ = oracle_sum((t), (n), 1);                  \
        CHECK_MSG(same_bits(got_, want_), "%s (n=%zu): rsum %a, oracle %a", #t, (size_t)(n), \
                  got_, want_);                                                             \
    } while (0)

/* Checks that t[0..n) sums to `want` (and that the oracle agrees). */
#define CHECK_LIST(want, ...)                                                                \
    do {                                                                                     \
        const double list_[] = {__VA_ARGS__};                                                \
        size_t n_ = sizeof list_ / sizeof list_[0];                                          \
        double got_ = rsum_sum(list_, n_), oracle_ = oracle_sum(list_, n_, 1);               \
        CHECK_MSG(same_bits(got_, (want)), "{%s}: rsum %a, expected %a", #__VA_ARGS__, got_, \
                  (double)(want));                                                           \
        CHECK_MSG(same_bits(oracle_, (want)), "{%s}: oracle %a, expected %a", #__VA_ARGS__,  \
                  oracle_, (double)(want));                                                  \
    } while (0)

/* ---- cases ---- */

static void layout_and_empty(void)
{
    sbn__rsum a[3], b;
    const double zeros[] = {0.0, -0.0, -0.0};
    CHECK(sizeof(sbn__rsum) == 56);
    CHECK(offsetof(sbn__rsum, top) == 0 && offsetof(sbn__rsum, neg) == 8);
    CHECK(offsetof(sbn__rsum, digit) == 16 && offsetof(sbn__rsum, flags) == 48);
    memset(a, 0x5A, sizeof a);
    sbn__rsum_clear(a, 3);
    CHECK(a[0].top == -1 && a[1].top == -1 && a[2].top == -1);
    CHECK(a[2].neg == 0 && a[2].flags == 0 && a[2].digit[0] == 0 && a[2].digit[3] == 0);
    CHECK(same_bits(sbn__rsum_value(&a[1]), 0.0));
    b = rsum_of(zeros, 3); /* zeros deposit nothing: the empty state, value +0.0 */
    CHECK(sbn__rsum_equal(&b, &a[0]) && memcmp(&b, &a[0], sizeof b) == 0);
    CHECK(same_bits(sbn__rsum_value(&b), 0.0));
    sbn__rsum_merge(&a[0], &a[1], 2); /* empty (+) empty */
    CHECK(sbn__rsum_equal(&a[0], &a[2]) && sbn__rsum_equal(&a[1], &a[2]));
    CHECK_LIST(0.0, 1.5, -1.5);
}

/* The top bin of single terms and the digits of one deposit (the documented state). */
static void state_of_one_term(void)
{
    static const struct {
        double t;
        int64_t top;
    } bins[] = {{1.0, 33},        {-1.0, 33},        {0x1p-18, 33},      {0x1p-19, 32},
                {DBL_MAX, 65},    {-DBL_MAX, 65},    {DBL_TRUE_MIN, 0},  {0x1p-1042, 1},
                {0x1p-1043, 0},   {0x1.fp-1043, 0},  {0x1p-1022, 1},     {0x1p1023, 65},
                {0x1p1006, 65},   {0x1p1005, 64}};
    sbn__rsum a;
    size_t i;
    for (i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        sbn__rsum_clear(&a, 1);
        sbn__rsum_add(&a, bins[i].t);
        CHECK_MSG(a.top == bins[i].top, "%a: top %lld, expected %lld", bins[i].t, (long long)a.top,
                  (long long)bins[i].top);
        CHECK(a.neg == (bins[i].t < 0) && same_bits(sbn__rsum_value(&a), bins[i].t));
    }
    /* -1 = -2^1074 grid units, bit 18 of bin 33: bins 30..32 hold 0, bin 33 ~(2^18 - 1) */
    sbn__rsum_clear(&a, 1);
    sbn__rsum_add(&a, -1.0);
    CHECK(a.digit[0] == 0 && a.digit[1] == 0 && a.digit[2] == 0 && a.digit[3] == 0xFFFC0000);
    /* -2^-1074 under 1: all ones in every bin (its floor is -2^(32 lo)), one more in neg */
    sbn__rsum_add(&a, -DBL_TRUE_MIN);
    CHECK(a.neg == 2 && a.digit[0] == 0xFFFFFFFF && a.digit[1] == 0xFFFFFFFF);
    CHECK(a.digit[2] == 0xFFFFFFFF && a.digit[3] == INT64_C(0xFFFC0000) + 0xFFFFFFFF);
    /* 2^33 (bit 19 of bin 34) raises the window: the two negatives fill bin 34 */
    sbn__rsum_add(&a, 0x1p33);
    CHECK(a.top == 34 && a.neg == 2 && a.digit[0] == 0xFFFFFFFF && a.digit[1] == 0xFFFFFFFF);
    CHECK(a.digit[2] == INT64_C(0xFFFC0000) + 0xFFFFFFFF);
    CHECK(a.digit[3] == 2 * INT64_C(0xFFFFFFFF) + 0x80000);
    CHECK(same_bits(sbn__rsum_value(&a), 0x1p33 - 1.0));
    CHECK_LIST(0.0, -DBL_TRUE_MIN, DBL_TRUE_MIN);
    CHECK_LIST(0.0, -0.0);
}

static void small_exact_sums(void)
{
    const double two53 = 9007199254740992.0;
    CHECK_LIST(1.0, 1e20, 1.0, -1e20);
    CHECK_LIST(-1.0, -1e20, -1.0, 1e20);
    CHECK_LIST(0.30000000000000004, 0.1, 0.2);
    CHECK_LIST(0x1.3333333333334p-2, 0.1, 0.1, 0.1); /* 0.1+0.1+0.1 exactly, then rounded */
    CHECK_LIST(two53, two53, 1.0);           /* tie: to even */
    CHECK_LIST(two53 + 4, two53, 3.0);       /* tie: to even, upwards */
    CHECK_LIST(two53 + 2, two53, 1.0, 0x1p-40); /* just above the tie */
    CHECK_LIST(two53, two53, 1.0, -0x1p-40);    /* just below the tie */
    CHECK_LIST(-two53 - 2, -two53, -1.0, -0x1p-40);
    CHECK_LIST(two53 + 2, 1.0, 0x1p-40, two53); /* the order does not matter */
    CHECK_LIST(0x1p-1022, 0x0.8p-1022, 0x0.8p-1022); /* subnormals to the smallest normal */
    CHECK_LIST(3 * DBL_TRUE_MIN, DBL_TRUE_MIN, DBL_TRUE_MIN, DBL_TRUE_MIN);
    CHECK_LIST(0x0.fffffffffffffp-1022, 0x1p-1022, -DBL_TRUE_MIN);
    CHECK_LIST(0x1.0000000000001p-1022, 0x1p-1022, DBL_TRUE_MIN);
    CHECK_LIST(-0x1p-1000, -0x1p-1000, 0x1p-1070, -0x1p-1070); /* inside the window */
    CHECK_LIST(-0x1.0000000000001p-1000, -0x1p-1000, -0x1p-1052, -0x1p-1070, 0x1p-1070);
}

static void floor_below_the_window(void)
{
    const double two53 = 9007199254740992.0;
    sbn__rsum a;
    /* 2^53 puts lo at bin 32: grid bit 1024, 2^-50. 2^-60 is below: it counts as floor. */
    CHECK_LIST(two53, two53, 1.0, 0x1p-60);      /* +2^-60 dropped: an exact tie -> even */
    CHECK_LIST(two53, two53, 1.0, -0x1p-60);     /* -2^-60 counts -2^-50: below the tie */
    CHECK_LIST(-two53 - 2, -two53, -1.0, -0x1p-60);
    /* 1.0 is grid bit 1074, bin 33: lo = 30, 2^-114. The floor shows when 1 - 1 cancels. */
    CHECK_LIST(-0x1p-114, 1.0, -1.0, -DBL_TRUE_MIN);
    CHECK_LIST(-0x1p-114, -DBL_TRUE_MIN, 1.0, -1.0, DBL_TRUE_MIN * 5);
    CHECK_LIST(0.0, 1.0, -1.0, DBL_TRUE_MIN);
    CHECK_LIST(-0x1p-113, 1.0, -1.0, -DBL_TRUE_MIN, -0x1p-200);
    CHECK_LIST(-0x1p-114, 1.0, -1.0, -0x1p-114); /* on the window's lowest bit: exact */
    CHECK_LIST(-0x1.8p-113, 1.0, -1.0, -0x1.8p-113);
    /* the term count fixes the error: 1000 terms of -2^-1074 under 1 lose 1000 * 2^-114 */
    sbn__rsum_clear(&a, 1);
    sbn__rsum_add(&a, 1.0);
    {
        int i;
        for (i = 0; i < 1000; i++) sbn__rsum_add(&a, -DBL_TRUE_MIN);
    }
    CHECK(a.neg == 1000 && a.top == 33);
    CHECK(same_bits(sbn__rsum_value(&a), 1.0)); /* 1 - 1000 * 2^-114 rounds to 1 */
}

static void overflow_and_limits(void)
{
    const double half_ulp = 0x1p970, max = DBL_MAX;
    CHECK_LIST(INFINITY, max, max);
    CHECK_LIST(-INFINITY, -max, -max);
    CHECK_LIST(INFINITY, max, half_ulp);           /* the tie above DBL_MAX goes up */
    CHECK_LIST(max, max, 0x1p969);
    CHECK_LIST(max, max, half_ulp, -0x1p-1074);    /* just below the tie (by the floor) */
    CHECK_LIST(max, max, half_ulp, -0x1p920);
    CHECK_LIST(-INFINITY, -max, -half_ulp);
    CHECK_LIST(max, max, max, -max);               /* passes DBL_MAX on the way only */
    CHECK_LIST(-max, -max, -max, max, -0x1p900);
    CHECK_LIST(INFINITY, 0x1p1023, 0x1p1023, -0x1p970); /* 2^1024 - 2^970: the tie */
    CHECK_LIST(max, 0x1p1023, 0x1p1023, -0x1p971);      /* 2^1024 - 2^971 = DBL_MAX */
    CHECK_LIST(max, 0x1p1023, 0x1p1023, -0x1p970, -DBL_TRUE_MIN);
}

static void nan_and_infinities(void)
{
    sbn__rsum a, b;
    CHECK_LIST(INFINITY, 1.0, INFINITY, -DBL_MAX);
    CHECK_LIST(-INFINITY, -INFINITY, DBL_MAX, -INFINITY);
    CHECK_LIST(NAN, INFINITY, 1.0, -INFINITY);
    CHECK_LIST(NAN, 1.0, NAN);
    CHECK_LIST(NAN, -NAN, INFINITY);
    sbn__rsum_clear(&a, 1);
    sbn__rsum_add(&a, NAN);
    CHECK(a.flags == SBN_RSUM_NAN && a.top == -1 && a.neg == 0);
    sbn__rsum_clear(&a, 1);
    sbn__rsum_clear(&b, 1);
    sbn__rsum_add(&a, INFINITY);
    sbn__rsum_add(&a, 3.0);
    sbn__rsum_add(&b, -INFINITY);
    CHECK(a.flags == SBN_RSUM_POS_INF && b.flags == SBN_RSUM_NEG_INF);
    CHECK(same_bits(sbn__rsum_value(&a), INFINITY) && same_bits(sbn__rsum_value(&b), -INFINITY));
    sbn__rsum_merge(&a, &b, 1);
    CHECK(a.flags == (SBN_RSUM_POS_INF | SBN_RSUM_NEG_INF) && isnan(sbn__rsum_value(&a)));
}

/* Random sets against the truncating oracle; band sets also against the exact sum. */
static void random_sets_vs_oracle(void)
{
    static double t[400];
    int trial;
    g_rng.state = 1;
    for (trial = 0; trial < 22000; trial++) {
        size_t n = 1 + rnd_below(trial < 20000 ? 12 : 400);
        rnd_mixed(t, n);
        CHECK_SUM(t, n);
    }
    for (trial = 0; trial < 1000; trial++) { /* every bit within 96 of the top bin: exact */
        size_t n = 1 + rnd_below(200), i;
        int e0 = (int)rnd_below(2000) - 1040;
        double exact, got;
        for (i = 0; i < n; i++) t[i] = rnd_band(e0, 40);
        got = rsum_sum(t, n);
        exact = oracle_sum(t, n, 0);
        CHECK_MSG(same_bits(got, exact), "band 2^%d (n=%zu): rsum %a, exact %a", e0, n, got, exact);
        CHECK(same_bits(oracle_sum(t, n, 1), exact));
    }
}

/* The stated bound: |exact - rsum| <= ulp-level rounding + n 2^-96 max|t|. */
static void accuracy_bound(void)
{
    static double t[300];
    int trial;
    g_rng.state = 2;
    for (trial = 0; trial < 500; trial++) {
        size_t n = 1 + rnd_below(300), i;
        double maxabs = 0, exact, got, bound;
        rnd_mixed(t, n);
        for (i = 0; i < n; i++) {
            t[i] = isfinite(t[i]) ? t[i] * 0x1p-60 : 0; /* keep the sums finite */
            if (fabs(t[i]) > maxabs) maxabs = fabs(t[i]);
        }
        got = rsum_sum(t, n);
        exact = oracle_sum(t, n, 0);
        bound = (double)n * 0x1p-96 * maxabs + 2 * (fabs(exact) * DBL_EPSILON + DBL_TRUE_MIN);
        CHECK_MSG(fabs(got - exact) <= bound, "n=%zu: rsum %a, exact %a, bound %a", n, got, exact,
                  bound);
    }
}

/* A million doubles in [-1, 1]: all on the 2^-53 grid, inside the window: exact. */
static void million_units_exact(void)
{
    const size_t n = 1000000;
    double *t = malloc(n * sizeof *t), got, exact, naive = 0;
    size_t i;
    CHECK(t != NULL);
    g_rng.state = 3;
    for (i = 0; i < n; i++) {
        t[i] = rnd_unit();
        naive += t[i];
    }
    got = rsum_sum(t, n);
    exact = oracle_sum(t, n, 0);
    printf("    1e6 units: rsum %a, exact %a, naive %a\n", got, exact, naive);
    free(t);
    CHECK_MSG(same_bits(got, exact), "rsum %a, exact %a", got, exact);
}

/* Merges accs[0..m) pairwise in a random tree, with random operand order and entry point. */
static sbn__rsum merge_random_tree(sbn__rsum *accs, size_t m)
{
    while (m > 1) {
        size_t i = rnd_below(m), j = rnd_below(m - 1);
        if (j >= i) j++;
        if (rnd() & 1) sbn__rsum_merge(&accs[i], &accs[j], 1);
        else {
            unsigned char bi[sizeof(sbn__rsum) + 1], bj[sizeof(sbn__rsum) + 3];
            memcpy(bi + 1, &accs[i], sizeof accs[i]); /* misaligned buffers */
            memcpy(bj + 3, &accs[j], sizeof accs[j]);
            sbn__rsum_merge_bytes(bi + 1, bj + 3, 1);
            memcpy(&accs[i], bi + 1, sizeof accs[i]);
        }
        accs[j] = accs[m - 1];
        m--;
    }
    return accs[0];
}

static void order_independence(void)
{
    enum { N = 256, PERMS = 40, TREES = 40, SETS = 30 };
    static double t[N];
    static sbn__rsum groups[N];
    int set, naive_differs = 0;
    g_rng.state = 4;
    for (set = 0; set < SETS; set++) {
        size_t n = set == 0 ? N : 2 + rnd_below(N - 1), i;
        sbn__rsum ref, again;
        double ref_value, naive0 = 0;
        int p;
        rnd_mixed(t, n);
        ref = rsum_of(t, n);
        ref_value = sbn__rsum_value(&ref);
        CHECK(same_bits(ref_value, oracle_sum(t, n, 1)));
        for (i = 0; i < n; i++) naive0 += t[i];
        for (p = 0; p < PERMS; p++) {
            double naive = 0;
            shuffle(t, n);
            again = rsum_of(t, n);
            CHECK_MSG(memcmp(&again, &ref, sizeof ref) == 0, "set %d perm %d: state differs", set,
                      p);
            CHECK(same_bits(sbn__rsum_value(&again), ref_value));
            for (i = 0; i < n; i++) naive += t[i];
            naive_differs |= !same_bits(naive, naive0);
        }
        for (p = 0; p < TREES; p++) {
            size_t m = 1 + rnd_below(n);
            sbn__rsum_clear(groups, m);
            shuffle(t, n);
            for (i = 0; i < n; i++) sbn__rsum_add(&groups[i < m ? i : rnd_below(m)], t[i]);
            again = merge_random_tree(groups, m);
            CHECK_MSG(sbn__rsum_equal(&again, &ref), "set %d tree %d: state differs", set, p);
            CHECK(same_bits(sbn__rsum_value(&again), ref_value));
        }
    }
    CHECK_MSG(naive_differs, "the data does not stress the order: plain sums never differed");
}

/* W ranks times C channels merged elementwise in different rank orders. */
static void channels_merge(void)
{
    enum { W = 7, C = 5, PER = 30 };
    static sbn__rsum ranks[W][C], fwd[C], rev[C], whole[C];
    double t[PER];
    int w, c, i;
    g_rng.state = 5;
    sbn__rsum_clear(whole, C);
    for (w = 0; w < W; w++) {
        sbn__rsum_clear(ranks[w], C);
        for (c = 0; c < C; c++) {
            rnd_mixed(t, PER);
            for (i = 0; i < PER; i++) {
                sbn__rsum_add(&ranks[w][c], t[i]);
                sbn__rsum_add(&whole[c], t[i]);
            }
        }
    }
    memcpy(fwd, ranks[0], sizeof fwd);
    for (w = 1; w < W; w++) sbn__rsum_merge(fwd, ranks[w], C);
    memcpy(rev, ranks[W - 1], sizeof rev);
    for (w = W - 2; w >= 0; w--) sbn__rsum_merge_bytes(rev, ranks[w], C);
    CHECK(memcmp(fwd, whole, sizeof fwd) == 0 && memcmp(rev, whole, sizeof rev) == 0);
    memcpy(rev, whole, sizeof rev); /* merging with itself doubles every term */
    sbn__rsum_merge(rev, rev, C);
    for (c = 0; c < C; c++) {
        sbn__rsum twice = whole[c];
        sbn__rsum_merge(&twice, &whole[c], 1);
        CHECK(sbn__rsum_equal(&rev[c], &twice));
    }
}

/*
 * 2^31 - 1 terms through self-merges: 2^31 - 2 copies of y (negative, parts in bins
 * 30..32) and one x = 1 (bin 33). Raising the window fills neg (2^32 - 1) into bin 33:
 * the digits reach ~2^63 without wrapping, and the value is exact (y is in the window).
 */
static void max_terms(void)
{
    sbn__rsum pow, total, big_term;
    big acc;
    const double x = 1.0, y = -0x1.23456789abcdfp-40;
    double want, got;
    int k;
    sbn__rsum_clear(&pow, 1);
    sbn__rsum_clear(&total, 1);
    sbn__rsum_clear(&big_term, 1);
    sbn__rsum_add(&pow, y);
    for (k = 1; k <= 30; k++) { /* total = sum of 2^k copies, k = 1..30: 2^31 - 2 */
        sbn__rsum_merge(&pow, &pow, 1);
        sbn__rsum_merge(&total, &pow, 1);
    }
    CHECK(total.neg == SBN_RSUM_MAX_TERMS - 1 && total.top == 32);
    sbn__rsum_add(&big_term, x);
    sbn__rsum_merge(&total, &big_term, 1);
    CHECK(total.top == 33 && total.digit[3] > ((int64_t)1 << 62));
    for (k = 0; k < SBN_RSUM_DIGITS; k++) CHECK(total.digit[k] >= 0);
    memset(&acc, 0, sizeof acc);
    oracle_add(&acc, x, 32 * (oracle_top_bin(x) - 3), 1);
    oracle_add(&acc, y, 32 * (oracle_top_bin(x) - 3), (uint64_t)SBN_RSUM_MAX_TERMS - 1);
    want = oracle_round(acc);
    got = sbn__rsum_value(&total);
    CHECK_MSG(same_bits(got, want), "rsum %a, oracle %a", got, want);
}

/* ns per sbn__rsum_add over 1e6 doubles (printed; the bound is only a sanity check). */
static double ns_per_add(const double *t, size_t n, double *sink)
{
    double best = 1e30;
    int rep;
    for (rep = 0; rep < 5; rep++) {
        struct timespec t0, t1;
        sbn__rsum a;
        size_t i;
        double ns;
        sbn__rsum_clear(&a, 1);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (i = 0; i < n; i++) sbn__rsum_add(&a, t[i]);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        *sink += sbn__rsum_value(&a);
        ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        ns /= (double)n;
        if (ns < best) best = ns;
    }
    return best;
}

static void timing(void)
{
    const size_t n = 1000000;
    double *t = malloc(n * sizeof *t), sink = 0, wide, unit;
    size_t i;
    CHECK(t != NULL);
    g_rng.state = 6;
    for (i = 0; i < n; i++) t[i] = rnd_wide();
    wide = ns_per_add(t, n, &sink);
    for (i = 0; i < n; i++) t[i] = rnd_unit();
    unit = ns_per_add(t, n, &sink);
    free(t);
    printf("    sbn__rsum_add: %.2f ns (|t| in 1e-300..1e300), %.2f ns (t in [-1, 1])\n", wide,
           unit);
    (void)sink; /* printed for the record only: no timing assertion in a test */
}

/* sbn__rsum_parts: at most SBN_RSUM_PARTS nonzero doubles whose exact sum is the
 * accumulator's value, checked against the independent oracle summing them. */
static void parts_sum_to_the_value(void)
{
    enum { N = 200, SETS = 300 };
    static double t[N];
    int set;
    g_rng.state = 7;
    for (set = 0; set < SETS; set++) {
        size_t n = 1 + rnd_below(N), i;
        double parts[SBN_RSUM_PARTS + 1];
        sbn__rsum a;
        int np, k, nonzero = 1;
        rnd_mixed(t, n);
        for (i = 0; i < n; i++) /* finite terms only: flags are not parts */
            if (!isfinite(t[i])) t[i] = 1.0;
        a = rsum_of(t, n);
        np = sbn__rsum_parts(&a, parts);
        CHECK(np >= 0 && np <= SBN_RSUM_PARTS);
        for (k = 0; k < np; k++) nonzero = nonzero && parts[k] != 0 && isfinite(parts[k]);
        CHECK(nonzero);
        CHECK_MSG(same_bits(sbn__rsum_value(&a), np ? oracle_sum(parts, (size_t)np, 0) : 0.0),
                  "set %d: %d parts do not sum to the value", set, np);
    }
}

/* Bytes from a peer with a top no deposit can make merge as NaN, without UB. */
static void corrupted_peer_bytes(void)
{
    static const int64_t bad_tops[] = {-2, 66, INT64_MIN, INT64_MAX};
    unsigned i;
    for (i = 0; i < sizeof bad_tops / sizeof bad_tops[0]; i++) {
        sbn__rsum good[1], bad[1];
        sbn__rsum_clear(good, 1);
        sbn__rsum_add(good, 1.5);
        memset(bad, 0x7f, sizeof bad);
        bad[0].top = bad_tops[i];
        sbn__rsum_merge_bytes(good, bad, 1);
        CHECK_MSG(isnan(sbn__rsum_value(good)), "top %lld merged into a number",
                  (long long)bad_tops[i]);
        sbn__rsum_clear(good, 1);
        sbn__rsum_merge_bytes(bad, good, 1);
        CHECK(isnan(sbn__rsum_value(bad)));
    }
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(layout_and_empty),
    SBN_TEST_CASE(state_of_one_term),
    SBN_TEST_CASE(small_exact_sums),
    SBN_TEST_CASE(floor_below_the_window),
    SBN_TEST_CASE(overflow_and_limits),
    SBN_TEST_CASE(nan_and_infinities),
    SBN_TEST_CASE(random_sets_vs_oracle),
    SBN_TEST_CASE(accuracy_bound),
    SBN_TEST_CASE(million_units_exact),
    SBN_TEST_CASE(order_independence),
    SBN_TEST_CASE(channels_merge),
    SBN_TEST_CASE(max_terms),
    SBN_TEST_CASE(timing),
    SBN_TEST_CASE(corrupted_peer_bytes),
    SBN_TEST_CASE(parts_sum_to_the_value),
};

SBN_TEST_MAIN(cases)
