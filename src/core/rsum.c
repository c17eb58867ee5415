/*
 * rsum.c - the reproducible accumulator of rsum.h. A deposit reads the term's bits,
 * raises the window when the term's top bin is above it, splits the term's two's
 * complement integer into the 4 window bins (at most 3 bins hold its 53 significant
 * bits; bins below hold 0, bins above hold its sign extension) and adds each 32-bit
 * part to its digit; nothing is carried, so no digit depends on the order. A deposit
 * at an offset of `bins` bins (sbn__rsum_add_scaled) is the same split, `bins` bins
 * higher. Merging aligns the two windows the same way and adds integers. Only
 * sbn__rsum_value carries: on a local copy it forms the signed integer D = sum_k
 * digit[k] 2^(32k) - neg 2^128 (units of 2^(32 lo - 1074)) in 32-bit limbs, takes its
 * sign and rounds |D| once to 53 bits (or to the subnormal grid) with a round and a
 * sticky bit. Digit arithmetic is done in uint64 so that even an overfull accumulator
 * wraps instead of being UB.
 */
#include <math.h>
#include <string.h>

#include "rsum.h"

#define RSUM_EMPTY_TOP (-1)
#define RSUM_LIMB_MASK UINT64_C(0xFFFFFFFF)
/* Limbs of D: |D| < 2^191 (neg < 2^63 at 2^128; digits < 2^63 up to 2^96), sign included. */
#define RSUM_LIMBS 7
#define RSUM_FRAC_BITS 52
#define RSUM_FRAC_MASK ((UINT64_C(1) << RSUM_FRAC_BITS) - 1)

/* The highest set bit of x, for 0 < x < 2^53 (the conversion to double is exact). */
static int high_bit53(uint64_t x)
{
    double d = (double)x;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (int)((bits >> RSUM_FRAC_BITS) & 0x7FF) - 1023;
}

/* digit += v in uint64 arithmetic (a wrap past the documented limit is not UB). */
static int64_t add_wrap(int64_t digit, uint64_t v)
{
    return (int64_t)((uint64_t)digit + v);
}

/*
 * Raises a's window to top bin t (t > a->top): the digits of bins that stay are moved
 * down, bins above the old top get every negative term's sign extension, neg (2^32 - 1),
 * and digits below the new window are dropped.
 */
static void rsum_raise(sbn__rsum *a, int64_t t)
{
    int64_t d = t - a->top;
    int64_t fill = (int64_t)((uint64_t)a->neg * RSUM_LIMB_MASK);
    int k;
    for (k = 0; k < SBN_RSUM_DIGITS; k++)
        a->digit[k] = k + d < SBN_RSUM_DIGITS ? a->digit[k + d] : fill;
    a->top = t;
}

void sbn__rsum_clear(sbn__rsum *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].top = RSUM_EMPTY_TOP;
    }
}

void sbn__rsum_add(sbn__rsum *a, double t)
{
    sbn__rsum_add_scaled(a, t, 0);
}

void sbn__rsum_add_scaled(sbn__rsum *a, double t, int64_t bins)
{
    uint64_t bits, m, low, high, sign, fill;
    int64_t biased, sh, top_bin, d;
    uint32_t part[7];
    int negative, k;

    memcpy(&bits, &t, sizeof bits);
    biased = (int64_t)((bits >> RSUM_FRAC_BITS) & 0x7FF);
    m = bits & RSUM_FRAC_MASK;
    negative = (int)(bits >> 63);
    if (biased == 0x7FF) {
        a->flags |= m ? SBN_RSUM_NAN : negative ? SBN_RSUM_NEG_INF : SBN_RSUM_POS_INF;
        return;
    }
    if (biased == 0) { /* subnormal: T = m */
        if (m == 0) return;
        sh = 0;
        top_bin = (high_bit53(m) >> 5) + bins;
    } else { /* normal: T = (2^52 + m) 2^(biased - 1), highest bit biased + 51 */
        m |= UINT64_C(1) << RSUM_FRAC_BITS;
        sh = biased - 1;
        top_bin = ((biased + 51) >> 5) + bins;
    }
    if (top_bin > a->top) rsum_raise(a, top_bin);

    /* |T| = (high:low) 2^(32 b0), b0 = sh / 32 + bins: at most 85 bits, bins b0 .. b0 + 2 */
    low = m << (sh & 31);
    high = (m >> 1) >> (63 - (sh & 31)); /* m >> (64 - r), also for r = 0 */
    /* T < 0: the two's complement of the 128-bit (high:low), without a branch */
    sign = 0 - (uint64_t)negative;
    high = (high ^ sign) + (uint64_t)(negative & (low == 0));
    low = (low ^ sign) - sign;
    fill = sign & RSUM_LIMB_MASK;
    /* part[3 + i] is bin b0 + i; part[0..2] bins below b0 (0), part[6] bins above (sign) */
    part[0] = part[1] = part[2] = 0;
    part[3] = (uint32_t)(low & RSUM_LIMB_MASK);
    part[4] = (uint32_t)(low >> 32);
    part[5] = (uint32_t)(high & RSUM_LIMB_MASK);
    part[6] = (uint32_t)fill;
    /* window bin lo + k = b0 + (d + k - 3), d = top - b0 >= top_bin - b0 >= 0 */
    d = a->top - ((sh >> 5) + bins);
    for (k = 0; k < SBN_RSUM_DIGITS; k++)
        a->digit[k] = add_wrap(a->digit[k], part[d + k < 6 ? d + k : 6]);
    a->neg = add_wrap(a->neg, (uint64_t)negative);
}

/* x (+)= y for one accumulator; y is read before x is written (they may be the same). */
static void rsum_merge_one(sbn__rsum *x, const sbn__rsum *y)
{
    sbn__rsum b = *y;
    int k;
    if (b.top > x->top) rsum_raise(x, b.top);
    else if (x->top > b.top) rsum_raise(&b, x->top);
    for (k = 0; k < SBN_RSUM_DIGITS; k++) x->digit[k] = add_wrap(x->digit[k], (uint64_t)b.digit[k]);
    x->neg = add_wrap(x->neg, (uint64_t)b.neg);
    x->flags |= b.flags;
}

void sbn__rsum_merge(sbn__rsum *inout, const sbn__rsum *in, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) rsum_merge_one(&inout[i], &in[i]);
}

/*
 * Bytes from a peer are not trusted to hold a state a deposit could make: a top
 * outside -1..SBN_RSUM_MAX_TOP would send the window arithmetic out of range, so such a
 * state is replaced by NaN (a loud, propagating result) instead of being merged.
 */
static void rsum_sanitize(sbn__rsum *a)
{
    if (a->top >= RSUM_EMPTY_TOP && a->top <= SBN_RSUM_MAX_TOP) return;
    memset(a, 0, sizeof *a);
    a->top = RSUM_EMPTY_TOP;
    a->flags = SBN_RSUM_NAN;
}

void sbn__rsum_merge_bytes(void *inout, const void *in, size_t n)
{
    unsigned char *out = (unsigned char *)inout;
    const unsigned char *src = (const unsigned char *)in;
    size_t i;
    for (i = 0; i < n; i++) {
        sbn__rsum x, y;
        memcpy(&x, out + i * sizeof x, sizeof x);
        memcpy(&y, src + i * sizeof y, sizeof y);
        rsum_sanitize(&x);
        rsum_sanitize(&y);
        rsum_merge_one(&x, &y);
        memcpy(out + i * sizeof x, &x, sizeof x);
    }
}

int sbn__rsum_parts(const sbn__rsum *a, double parts[SBN_RSUM_PARTS])
{
    return sbn__rsum_parts_scaled(a, 0, parts);
}

int sbn__rsum_parts_scaled(const sbn__rsum *a, int64_t bins, double parts[SBN_RSUM_PARTS])
{
    int64_t lo = a->top - (SBN_RSUM_DIGITS - 1), k;
    int np = 0;
    if (a->top < 0) return 0;
    for (k = 0; k < SBN_RSUM_DIGITS; k++) {
        uint64_t d = (uint64_t)a->digit[k]; /* sums of parts in [0, 2^32): never negative */
        int64_t bin = lo + k;
        if (bin < 0) continue; /* below the grid: always 0 */
        if (d & RSUM_LIMB_MASK)
            parts[np++] = ldexp((double)(d & RSUM_LIMB_MASK), (int)(32 * (bin - bins) - 1074));
        if (d >> 32)
            parts[np++] = ldexp((double)(d >> 32), (int)(32 * (bin + 1 - bins) - 1074));
    }
    if (a->neg != 0)
        parts[np++] = -ldexp((double)a->neg, (int)(32 * (a->top + 1 - bins) - 1074));
    return np;
}

int sbn__rsum_equal(const sbn__rsum *a, const sbn__rsum *b)
{
    int k;
    for (k = 0; k < SBN_RSUM_DIGITS; k++)
        if (a->digit[k] != b->digit[k]) return 0;
    return a->top == b->top && a->neg == b->neg && a->flags == b->flags;
}

/* ---- the value: carries, sign and one rounding ---- */

/* D = sum_k digit[k] 2^(32k) - neg 2^128 into |D| (limbs, low first); returns D < 0. */
static int rsum_magnitude(const sbn__rsum *a, uint32_t mag[RSUM_LIMBS])
{
    uint64_t acc[RSUM_LIMBS] = {0}, sub[RSUM_LIMBS] = {0}, carry = 0, borrow = 0;
    uint64_t neg = (uint64_t)a->neg;
    int i, k, negative;
    for (k = 0; k < SBN_RSUM_DIGITS; k++) {
        uint64_t dk = (uint64_t)a->digit[k];
        acc[k] += dk & RSUM_LIMB_MASK;
        acc[k + 1] += dk >> 32;
    }
    sub[4] = neg & RSUM_LIMB_MASK;
    sub[5] = neg >> 32;
    for (i = 0; i < RSUM_LIMBS; i++) { /* carry the sums, subtract neg 2^128 */
        uint64_t v = acc[i] + carry, s = sub[i] + borrow;
        carry = v >> 32;
        v &= RSUM_LIMB_MASK;
        borrow = v < s;
        mag[i] = (uint32_t)((v - s) & RSUM_LIMB_MASK);
    }
    negative = (int)(mag[RSUM_LIMBS - 1] >> 31);
    if (negative) { /* |D| = ~D + 1 */
        carry = 1;
        for (i = 0; i < RSUM_LIMBS; i++) {
            uint64_t v = (uint64_t)(uint32_t)~mag[i] + carry;
            mag[i] = (uint32_t)(v & RSUM_LIMB_MASK);
            carry = v >> 32;
        }
    }
    return negative;
}

static uint64_t limb_at(const uint32_t mag[RSUM_LIMBS], int64_t i)
{
    return i >= 0 && i < RSUM_LIMBS ? mag[i] : 0;
}

/* Bits [b, b + 64) of mag (b >= 0). */
static uint64_t bits_from(const uint32_t mag[RSUM_LIMBS], int64_t b)
{
    int64_t w = b >> 5;
    int sh = (int)(b & 31);
    uint64_t x = (limb_at(mag, w) | limb_at(mag, w + 1) << 32) >> sh;
    if (sh) x |= limb_at(mag, w + 2) << (64 - sh);
    return x;
}

/* 1 when any of the bits [0, b) of mag is set. */
static int any_below(const uint32_t mag[RSUM_LIMBS], int64_t b)
{
    int64_t i;
    for (i = 0; i < b >> 5; i++)
        if (limb_at(mag, i)) return 1;
    return (b & 31) && (limb_at(mag, b >> 5) & ((UINT64_C(1) << (b & 31)) - 1)) != 0;
}

/* The highest set bit of mag, -1 when it is 0. */
static int64_t high_bit(const uint32_t mag[RSUM_LIMBS])
{
    int i;
    for (i = RSUM_LIMBS - 1; i >= 0; i--)
        if (mag[i]) return 32 * (int64_t)i + high_bit53(mag[i]);
    return -1;
}

/* (-1)^negative |D| 2^s rounded to nearest even, |D| in mag (nonzero). */
static double round_to_double(const uint32_t mag[RSUM_LIMBS], int negative, int64_t s)
{
    int64_t p = high_bit(mag), cut, e2;
    uint64_t q, out;
    double r;
    /* keep 53 bits, but none below 2^-1074 (bit -1074 - s; |D| has no set bit below it) */
    cut = p - 52 > -1074 - s ? p - 52 : -1074 - s;
    if (cut <= 0) { /* exact: |D| < 2^53 */
        q = bits_from(mag, 0) << -cut;
    } else {
        q = bits_from(mag, cut); /* bits above p are 0: q < 2^53 */
        if (((bits_from(mag, cut - 1) & 1) != 0) && (any_below(mag, cut - 1) || (q & 1))) q++;
    }
    e2 = s + cut;
    if (q >> 53) { /* rounded up to 2^53 */
        q >>= 1;
        e2++;
    }
    if (q >> 52) { /* normal: q 2^e2 = 1.f 2^(e2 + 52) */
        int64_t biased = e2 + 52 + 1023;
        if (biased >= 0x7FF) return negative ? -INFINITY : INFINITY;
        out = (uint64_t)biased << 52 | (q & RSUM_FRAC_MASK);
    } else { /* subnormal: e2 = -1074 here */
        out = q;
    }
    out |= (uint64_t)negative << 63;
    memcpy(&r, &out, sizeof r);
    return r;
}

double sbn__rsum_value(const sbn__rsum *a)
{
    return sbn__rsum_value_scaled(a, 0);
}

double sbn__rsum_value_scaled(const sbn__rsum *a, int64_t bins)
{
    const int64_t both = SBN_RSUM_POS_INF | SBN_RSUM_NEG_INF;
    uint32_t mag[RSUM_LIMBS];
    int negative;
    if ((a->flags & SBN_RSUM_NAN) || (a->flags & both) == both) return NAN;
    if (a->flags & SBN_RSUM_POS_INF) return INFINITY;
    if (a->flags & SBN_RSUM_NEG_INF) return -INFINITY;
    if (a->top < 0) return 0.0;
    negative = rsum_magnitude(a, mag);
    if (high_bit(mag) < 0) return 0.0;
    return round_to_double(mag, negative, 32 * (a->top - (SBN_RSUM_DIGITS - 1) - bins) - 1074);
}

/* ---- the merge as integer sums (a framework's allreduce of int64 sums and maxima) ---- */

/*
 * A merge of accumulators from many ranks is the sum, bin by bin, of every rank's
 * accumulator raised to the highest top T of all of them (raising is linear in the
 * digits and neg, and raising twice is raising once), with the flags ORed: that is
 * what any tree of sbn__rsum_merge calls gives. So a framework that can only take
 * element-wise maxima and sums of int64 can merge: a MAX of the tops gives T, each rank
 * raises its own copy to T, and a SUM of the digits and neg gives the merged ones. The
 * digits and neg are sent as their low and high 32 bits, and each flag as a count in
 * its own 21-bit field, so every word a rank sends is below 2^32 (2^63 / 2^21 for the
 * flags) and sums of up to 2^20 ranks never overflow an int64; the unpacked digits are
 * lo + hi 2^32 in uint64, i.e. exactly the wrapped sums sbn__rsum_merge forms.
 */
#define RSUM_FLAG_BITS 21

static sbn__rsum rsum_load(const void *bytes, size_t i)
{
    sbn__rsum a;
    memcpy(&a, (const unsigned char *)bytes + i * sizeof a, sizeof a);
    rsum_sanitize(&a); /* as sbn__rsum_merge_bytes treats it */
    return a;
}

void sbn__rsum_tops(const void *acc, size_t n, int64_t *tops)
{
    size_t i;
    for (i = 0; i < n; i++) tops[i] = rsum_load(acc, i).top;
}

void sbn__rsum_pack(const void *acc, size_t n, const int64_t *tops, int64_t *words)
{
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        sbn__rsum a = rsum_load(acc, i);
        int64_t *w = words + i * SBN_RSUM_INT_WORDS;
        if (tops[i] > a.top) rsum_raise(&a, tops[i]);
        for (k = 0; k < SBN_RSUM_DIGITS; k++) {
            w[2 * k] = (int64_t)((uint64_t)a.digit[k] & RSUM_LIMB_MASK);
            w[2 * k + 1] = (int64_t)((uint64_t)a.digit[k] >> 32);
        }
        w[8] = (int64_t)((uint64_t)a.neg & RSUM_LIMB_MASK);
        w[9] = (int64_t)((uint64_t)a.neg >> 32);
        w[10] = (int64_t)(((a.flags & SBN_RSUM_NAN) != 0) |
                          (uint64_t)((a.flags & SBN_RSUM_POS_INF) != 0) << RSUM_FLAG_BITS |
                          (uint64_t)((a.flags & SBN_RSUM_NEG_INF) != 0) << 2 * RSUM_FLAG_BITS);
    }
}

void sbn__rsum_unpack(void *acc, size_t n, const int64_t *tops, const int64_t *words)
{
    const uint64_t field = (UINT64_C(1) << RSUM_FLAG_BITS) - 1;
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        const int64_t *w = words + i * SBN_RSUM_INT_WORDS;
        uint64_t f = (uint64_t)w[10];
        sbn__rsum a;
        a.top = tops[i];
        for (k = 0; k < SBN_RSUM_DIGITS; k++)
            a.digit[k] = (int64_t)((uint64_t)w[2 * k] + ((uint64_t)w[2 * k + 1] << 32));
        a.neg = (int64_t)((uint64_t)w[8] + ((uint64_t)w[9] << 32));
        a.flags = ((f & field) ? SBN_RSUM_NAN : 0) |
                  (((f >> RSUM_FLAG_BITS) & field) ? SBN_RSUM_POS_INF : 0) |
                  (((f >> 2 * RSUM_FLAG_BITS) & field) ? SBN_RSUM_NEG_INF : 0);
        memcpy((unsigned char *)acc + i * sizeof a, &a, sizeof a);
    }
}
