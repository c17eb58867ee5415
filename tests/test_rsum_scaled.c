/*
 * test_rsum_scaled.c - deposits at an offset (sbn__rsum_add_scaled: t * 2^(32 b)) and
 * the scaled readouts of the reproducible accumulator, which let the SyncBN layer sum
 * squares and products past DBL_MAX. test_rsum.c checks the plain accumulator against
 * a big-integer oracle; here every scaled state is checked against a plain one through
 * the identity that defines it: the terms t_i deposited b bins higher give the same
 * digits, neg and flags with top + b, value_scaled(., b) and parts_scaled(., b) give
 * the plain value and parts bit for bit, and any split of an exact term (t * 2^-32k at
 * offset b + k) gives the same 56 bytes, so states stay canonical under merges of any
 * tree and mix of offsets. Then values past DBL_MAX: +-Inf from sbn__rsum_value,
 * exact from value_scaled, a cancellation back into range, and the widened range of
 * trusted tops (a merged top past SBN_RSUM_MAX_TOP is corrupt: NaN).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rsum.h"
#include "harness/harness.h"
#include "support/support.h"

static tsup_rng g_rng = {0x5CA1ED0FF5E7ull};

static size_t rnd_below(size_t n)
{
    return (size_t)(tsup_next_u64(&g_rng) % n);
}

/* Finite doubles over the whole range: normal with a random significand and exponent,
 * subnormal, small integers, exact cancellations of earlier terms, zeros. */
static void rnd_terms(double *t, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        size_t kind = rnd_below(10);
        double m = (double)((tsup_next_u64(&g_rng) >> 11) | (UINT64_C(1) << 52));
        double sign = tsup_next_u64(&g_rng) & 1 ? -1.0 : 1.0;
        if (kind < 5) t[i] = sign * ldexp(m, (int)rnd_below(2046) - 1022 - 52);
        else if (kind == 5) t[i] = sign * ldexp((double)(1 + rnd_below(1000)), -1074);
        else if (kind == 6) t[i] = sign * (double)rnd_below(100);
        else if (kind == 7 && i > 0) t[i] = -t[rnd_below(i)];
        else if (kind == 8) t[i] = sign * ldexp(m, 1023 - 52); /* near DBL_MAX */
        else t[i] = 0.0;
    }
}

static int same_bits(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* 1 when b is a's state `bins` bins higher (an empty state stays empty). */
static int shifted(const sbn__rsum *a, const sbn__rsum *b, int64_t bins)
{
    int k;
    for (k = 0; k < SBN_RSUM_DIGITS; k++)
        if (a->digit[k] != b->digit[k]) return 0;
    return a->neg == b->neg && a->flags == b->flags &&
           b->top == (a->top < 0 ? a->top : a->top + bins);
}

/* t's exact value t * 2^(32 bins) as (t * 2^(-32 k), bins + k) for the largest k <= 3
 * that keeps t * 2^(-32 k) normal (the value is then exact). */
static void add_split(sbn__rsum *a, double t, int64_t bins)
{
    int k = 3;
    while (k > 0 && (t == 0 || fabs(ldexp(t, -32 * k)) < DBL_MIN)) k--;
    sbn__rsum_add_scaled(a, ldexp(t, -32 * k), bins + k);
}

/* Plain and scaled states of random term sets, term by term and split, any offset. */
static void scaled_is_shifted(void)
{
    enum { N = 300, SETS = 400 };
    static double t[N];
    int set, checked = 0;
    g_rng.state = 1;
    for (set = 0; set < SETS; set++) {
        size_t n = 1 + rnd_below(N), i;
        int64_t bins = (int64_t)rnd_below(SBN_RSUM_MAX_BINS - 2); /* room for add_split's k */
        sbn__rsum plain, sc, split;
        double pp[SBN_RSUM_PARTS], sp[SBN_RSUM_PARTS];
        int np, ns, k;
        rnd_terms(t, n);
        sbn__rsum_clear(&plain, 1);
        sbn__rsum_clear(&sc, 1);
        sbn__rsum_clear(&split, 1);
        for (i = 0; i < n; i++) {
            sbn__rsum_add(&plain, t[i]);
            sbn__rsum_add_scaled(&sc, t[i], bins);
            add_split(&split, t[i], bins);
        }
        CHECK_MSG(shifted(&plain, &sc, bins), "set %d: the state at offset %lld is not the "
                  "plain state %lld bins higher", set, (long long)bins, (long long)bins);
        CHECK_MSG(memcmp(&sc, &split, sizeof sc) == 0, "set %d: split terms (t 2^-32k at "
                  "offset %lld + k) gave other bytes", set, (long long)bins);
        CHECK_MSG(same_bits(sbn__rsum_value_scaled(&sc, bins), sbn__rsum_value(&plain)),
                  "set %d: value_scaled %a, plain value %a", set,
                  sbn__rsum_value_scaled(&sc, bins), sbn__rsum_value(&plain));
        np = sbn__rsum_parts(&plain, pp);
        ns = sbn__rsum_parts_scaled(&sc, bins, sp);
        CHECK_MSG(np == ns, "set %d: %d plain parts, %d scaled", set, np, ns);
        for (k = 0; k < np; k++)
            CHECK_MSG(same_bits(pp[k], sp[k]), "set %d part %d: %a vs %a", set, k, pp[k], sp[k]);
        checked++;
    }
    printf("    %d sets: offsets 0..%d, same digits, values and parts\n", checked,
           SBN_RSUM_MAX_BINS - 3);
}

/* Terms at random offsets, merged in random groups and orders: the same bytes. */
static void mixed_offsets_merge(void)
{
    enum { N = 400, GROUPS = 7, ROUNDS = 50 };
    static double t[N];
    static int64_t b[N];
    int round;
    g_rng.state = 2;
    for (round = 0; round < ROUNDS; round++) {
        sbn__rsum ref, grp[GROUPS], tree;
        size_t i;
        int g;
        rnd_terms(t, N);
        for (i = 0; i < N; i++) b[i] = (int64_t)rnd_below(40);
        sbn__rsum_clear(&ref, 1);
        for (i = 0; i < N; i++) sbn__rsum_add_scaled(&ref, t[i], b[i]);
        sbn__rsum_clear(grp, GROUPS);
        for (i = N; i-- > 0;) sbn__rsum_add_scaled(&grp[rnd_below(GROUPS)], t[i], b[i]);
        tree = grp[GROUPS - 1];
        for (g = GROUPS - 2; g >= 0; g--) {
            if (g % 2) sbn__rsum_merge(&tree, &grp[g], 1);
            else {
                sbn__rsum_merge_bytes(&grp[g], &tree, 1);
                tree = grp[g];
            }
        }
        CHECK_MSG(memcmp(&ref, &tree, sizeof ref) == 0, "round %d: a merge tree of states at "
                  "mixed offsets gave other bytes", round);
    }
}

/* Sums past DBL_MAX: Inf in the plain readout, exact in the scaled one. */
static void values_past_dbl_max(void)
{
    const double big = ldexp(1.0, 1000), mant = 0x1.23456789abcdep0;
    sbn__rsum a;
    double parts[SBN_RSUM_PARTS], sum = 0;
    int np, k;
    sbn__rsum_clear(&a, 1);
    sbn__rsum_add_scaled(&a, mant * big, 2); /* mant 2^1064 */
    sbn__rsum_add_scaled(&a, mant * big, 2);
    CHECK_MSG(sbn__rsum_value(&a) == INFINITY, "value %a", sbn__rsum_value(&a));
    CHECK_MSG(sbn__rsum_value_scaled(&a, 2) == 2 * mant * big, "value_scaled %a",
              sbn__rsum_value_scaled(&a, 2));
    CHECK_MSG(sbn__rsum_value_scaled(&a, 4) == ldexp(2 * mant, 936), "value_scaled(4) %a",
              sbn__rsum_value_scaled(&a, 4));
    np = sbn__rsum_parts_scaled(&a, 3, parts); /* 2 mant 2^968: parts in range, exact */
    for (k = 0; k < np; k++) sum += parts[k];
    CHECK_MSG(sum == ldexp(2 * mant, 968), "parts_scaled sum %a", sum);
    /* minus both, plus 2^948 * 2^64: back in range, exactly */
    sbn__rsum_add_scaled(&a, -mant * big, 2);
    sbn__rsum_add_scaled(&a, -mant * big, 2);
    sbn__rsum_add_scaled(&a, ldexp(1.0, 948), 2);
    CHECK_MSG(sbn__rsum_value(&a) == ldexp(1.0, 1012) && a.top > 65, "value %a, top %lld",
              sbn__rsum_value(&a), (long long)a.top);
    /* the negative side: -Inf plain */
    sbn__rsum_clear(&a, 1);
    sbn__rsum_add_scaled(&a, -DBL_MAX, SBN_RSUM_MAX_BINS);
    CHECK(a.top == SBN_RSUM_MAX_TOP);
    CHECK_MSG(sbn__rsum_value(&a) == -INFINITY, "value %a", sbn__rsum_value(&a));
    CHECK_MSG(sbn__rsum_value_scaled(&a, SBN_RSUM_MAX_BINS) == -DBL_MAX, "value_scaled %a",
              sbn__rsum_value_scaled(&a, SBN_RSUM_MAX_BINS));
}

/* A merged top up to SBN_RSUM_MAX_TOP is a state a deposit makes; one past it is corrupt. */
static void top_range_of_peer_bytes(void)
{
    sbn__rsum good, peer;
    sbn__rsum_clear(&good, 1);
    sbn__rsum_add(&good, 1.5);
    sbn__rsum_clear(&peer, 1);
    sbn__rsum_add_scaled(&peer, 3.0, SBN_RSUM_MAX_BINS);
    CHECK(peer.top <= SBN_RSUM_MAX_TOP);
    sbn__rsum_merge_bytes(&good, &peer, 1);
    CHECK_MSG(sbn__rsum_value_scaled(&good, SBN_RSUM_MAX_BINS) == 3.0, "merged %a",
              sbn__rsum_value_scaled(&good, SBN_RSUM_MAX_BINS));
    peer.top = SBN_RSUM_MAX_TOP + 1; /* clean flags: only the top is wrong */
    peer.flags = 0;
    sbn__rsum_clear(&good, 1);
    sbn__rsum_add(&good, 1.5);
    sbn__rsum_merge_bytes(&good, &peer, 1);
    CHECK_MSG(isnan(sbn__rsum_value(&good)), "top %d merged into a number",
              SBN_RSUM_MAX_TOP + 1);
}

static const sbn_test_case cases[] = {
    SBN_TEST_CASE(scaled_is_shifted),
    SBN_TEST_CASE(mixed_offsets_merge),
    SBN_TEST_CASE(values_past_dbl_max),
    SBN_TEST_CASE(top_range_of_peer_bytes),
};

SBN_TEST_MAIN(cases)
