/*
 * rsum.h - an order-independent ("reproducible") accumulator for sums of doubles.
 * Every finite double t is an integer T times 2^-1074 (the grid). The grid is cut
 * into bins of 32 bits (bin j holds grid bits [32j, 32j + 32)); an accumulator keeps
 * a window of the 4 bins below and at `top`, the highest bin any of its terms
 * reached, as one int64 digit per bin plus a count of negative terms standing for
 * their sign extension. Terms are split into the window bins by floor, digits are
 * summed as plain integers and never carried, and bits below the window are dropped.
 * The accumulated value is therefore a function of the multiset of terms only, so
 * any order of sbn__rsum_add calls and any tree of sbn__rsum_merge calls give the
 * same bytes and, through sbn__rsum_value, the same correctly rounded double. Used to
 * combine per-sample partial sums from many ranks and threads bitwise reproducibly.
 */
#ifndef SBN_CORE_RSUM_H
#define SBN_CORE_RSUM_H

#include <stddef.h>
#include <stdint.h>

/* Bins in the window of an accumulator. */
#define SBN_RSUM_DIGITS 4
/*
 * The highest top bin a state may have. Plain doubles reach bin 65 (DBL_MAX); terms
 * deposited at an offset (sbn__rsum_add_scaled, t * 2^(32 bins)) reach higher, which
 * is how the SyncBN layer sums squares and products past DBL_MAX (bin 101 at most
 * there). A merged state with a top outside -1..SBN_RSUM_MAX_TOP is corrupt.
 */
#define SBN_RSUM_MAX_TOP 127
/* The largest offset sbn__rsum_add_scaled takes: 65 + 62 = SBN_RSUM_MAX_TOP. */
#define SBN_RSUM_MAX_BINS 62
/*
 * The most terms (deposits, summed over all merged accumulators) one accumulator may
 * take: every digit is a sum of parts < 2^32, so 2^31 - 1 terms keep it below 2^63.
 * The caller guarantees it (SyncBN adds at most one term per sample and channel);
 * nothing is checked. Past it the digits wrap (no undefined behaviour, a wrong sum).
 */
#define SBN_RSUM_MAX_TERMS ((int64_t)2147483647)

/* Bits of sbn__rsum.flags. */
#define SBN_RSUM_NAN 1      /* a NaN was added */
#define SBN_RSUM_POS_INF 2  /* +Inf was added */
#define SBN_RSUM_NEG_INF 4  /* -Inf was added */

/*
 * The accumulator: 7 int64 words, 56 bytes, no padding (it travels as bytes between
 * ranks; both sides have the same endianness).
 *
 *   top       the highest top bin of all finite nonzero terms so far, 0..SBN_RSUM_MAX_TOP
 *             (the top bin of a term is the bin of the highest set bit of |T|; DBL_MAX
 *             has bin 65, a term t * 2^(32 b) of sbn__rsum_add_scaled t's bin + b);
 *             -1 when the accumulator holds no finite nonzero term (empty).
 *   digit[k]  the sum of every term's part in bin lo + k, lo = top - 3 (k = 0 is the
 *             lowest bin of the window). Bins below 0 hold no grid bits: always 0.
 *   neg       the number of negative terms; it stands for -neg * 2^(32 (top + 1)).
 *   flags     SBN_RSUM_NAN | SBN_RSUM_POS_INF | SBN_RSUM_NEG_INF as seen.
 *
 * A term T gives, for each window bin j, part_j = floor(T / 2^(32j)) mod 2^32 in
 * [0, 2^32) (its two's complement bits), and counts 1 in neg when T < 0. The value is
 *
 *   V = (sum_k digit[k] 2^(32 (lo + k)) - neg 2^(32 (top + 1))) * 2^-1074
 *     = sum over terms of floor(T_i / 2^(32 lo)) * 2^(32 lo) * 2^-1074.
 *
 * When top rises from t0 to t1, every negative term's sign extension fills bins
 * t0 + 1 .. t1 with 2^32 - 1 (digit += neg (2^32 - 1)) and the digits that fall below
 * the new window are dropped, never carried. The representation is canonical: the
 * same multiset of terms (and the same flags) gives the same 56 bytes, whatever the
 * order and merge tree, so accumulators may be compared with memcmp/sbn__rsum_equal.
 *
 * Accuracy: a term loses less than 2^(32 lo) grid units to the floor, and the largest
 * term is at least 2^(32 top) units, so for n terms
 *
 *   |sum_i t_i - V| < n * 2^-96 * max_i |t_i|,
 *
 * then sbn__rsum_value rounds V once to nearest even. When no term has a set bit below
 * grid bit 32 lo (2^(32 lo - 1074)), V is the exact sum and the result is the correctly
 * rounded sum: for example doubles in [-1, 1] (top <= 33, lo <= 30) with no bits below
 * 2^-114.
 */
typedef struct sbn__rsum {
    int64_t top;
    int64_t neg;
    int64_t digit[SBN_RSUM_DIGITS];
    int64_t flags;
} sbn__rsum;

/* Sets n accumulators to empty: top = -1, neg = 0, digits 0, flags 0. */
void sbn__rsum_clear(sbn__rsum *a, size_t n);
/*
 * Deposits t exactly as described above (a += floor(T / 2^(32 lo)) 2^(32 lo), after
 * raising top to t's top bin if higher). +0 and -0 deposit nothing; NaN and +-Inf only
 * set their flag.
 */
void sbn__rsum_add(sbn__rsum *a, double t);
/*
 * Deposits the exact value t * 2^(32 bins), 0 <= bins <= SBN_RSUM_MAX_BINS, on the same
 * grid: its parts are t's, `bins` bins higher, so the state is the one any other
 * split of the same exact term (t' * 2^(32 b') = t * 2^(32 bins)) would give, and
 * terms past DBL_MAX can be summed. bins = 0 is sbn__rsum_add.
 */
void sbn__rsum_add_scaled(sbn__rsum *a, double t, int64_t bins);
/*
 * inout[i] = inout[i] (+) in[i] for i < n: both windows are raised to the higher top,
 * digits and neg are added as integers, flags are ORed. Exactly associative and
 * commutative; the result is what adding both sets of terms to one accumulator gives.
 * inout and in may be the same array (doubles every term).
 */
void sbn__rsum_merge(sbn__rsum *inout, const sbn__rsum *in, size_t n);
/* sbn__rsum_merge on untyped buffers of n accumulators (any alignment): a merge callback.
 * A state whose top is outside -1..SBN_RSUM_MAX_TOP (not one a deposit can make: corrupt
 * bytes from a peer) merges as NaN instead of being trusted. */
void sbn__rsum_merge_bytes(void *inout, const void *in, size_t n);
/*
 * V correctly rounded to the nearest double, ties to even: NaN when a NaN or both
 * infinities were added; +-Inf when one infinity was added, or when V rounds past
 * DBL_MAX (|V| >= 2^1024 - 2^970); +0.0 when V = 0 (an empty accumulator, or only
 * zeros, or terms that cancel). Subnormal results are rounded once, directly.
 */
double sbn__rsum_value(const sbn__rsum *a);
/* V * 2^(-32 bins) (bins >= 0) rounded once as sbn__rsum_value rounds V: finite where
 * V itself is past DBL_MAX. bins = 0 is sbn__rsum_value. */
double sbn__rsum_value_scaled(const sbn__rsum *a, int64_t bins);
/* The most doubles sbn__rsum_parts writes. */
#define SBN_RSUM_PARTS (2 * SBN_RSUM_DIGITS + 1)
/*
 * V as at most SBN_RSUM_PARTS nonzero doubles whose exact sum is V (for products
 * with V split exactly, as the SyncBN layer's M2 finish needs): each digit's high
 * and low 32 bits at their bins, and the sign extension -neg 2^(32 (top + 1)). Each
 * part is an integer below 2^32 times a power of two >= 2^-1074, so it is exact
 * unless V is near the overflow threshold (then a part is infinite). Flags are not
 * represented. Returns the number written (0 for an empty accumulator).
 */
int sbn__rsum_parts(const sbn__rsum *a, double parts[SBN_RSUM_PARTS]);
/* The same for V * 2^(-32 bins) (bins >= 0): every part is exact while the state's
 * bins lo - bins .. top + 1 - bins lie within doubles' range (top - bins <= 45 keeps
 * every part below 2^431 within the term limit). bins = 0 is sbn__rsum_parts. */
int sbn__rsum_parts_scaled(const sbn__rsum *a, int64_t bins, double parts[SBN_RSUM_PARTS]);
/*
 * The merge of many ranks' accumulators as integer maxima and sums (for a framework
 * whose collectives are element-wise MAX and SUM of int64, e.g. torch.distributed):
 *   1. sbn__rsum_tops: each accumulator's top (tops[i] for acc[i]); the ranks take the
 *      element-wise MAX of their tops;
 *   2. sbn__rsum_pack: each accumulator raised to tops[i] (the maximum) as
 *      SBN_RSUM_INT_WORDS int64 words, each in [0, 2^32) or (the flags word) a sum of
 *      counts in 21-bit fields, so the element-wise SUM over at most 2^20 ranks never
 *      overflows; the ranks take the element-wise SUM of the words;
 *   3. sbn__rsum_unpack: the summed words and the maxima back into accumulators.
 * The result has the same bytes as sbn__rsum_merge_bytes of all the ranks' accumulators
 * in any order (wrapped digits included). acc is untyped (any alignment), as for
 * sbn__rsum_merge_bytes, and a state it would sanitize is sanitized the same way.
 */
#define SBN_RSUM_INT_WORDS 11
#define SBN_RSUM_INT_MAX_RANKS (1 << 20)
void sbn__rsum_tops(const void *acc, size_t n, int64_t *tops);
void sbn__rsum_pack(const void *acc, size_t n, const int64_t *tops, int64_t *words);
void sbn__rsum_unpack(void *acc, size_t n, const int64_t *tops, const int64_t *words);
/* 1 when a and b hold the same state (for canonical states: the same multiset of terms). */
int sbn__rsum_equal(const sbn__rsum *a, const sbn__rsum *b);

#endif /* SBN_CORE_RSUM_H */
