/*
 * test_fold_conv.c - sbn_fold_conv against a double-precision oracle written here:
 * scale = gamma / sqrt(var + eps), W' = W * scale[o], b' = (b - mean) * scale + beta,
 * rounded once to the output dtype. Covers conv weights of rank 2 (linear), 4 and 5,
 * f32/f64/f16, permuted (channels-last) weight strides, in place, the optional
 * tensors left out, and the refusals (missing, wrong length, overlapping, bad eps),
 * which must leave every output untouched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/support.h"
#include "syncbn/ops.h"

enum { MAXO = 8 };

typedef struct fold_case {
    sbn_dtype dtype;
    int rank;
    int64_t shape[5];
    int has_bias, has_affine, channels_last, in_place;
} fold_case;

/* The oracle of one weight element and of b'[o]. */
static double oracle_scale(const double *gamma, const double *var, int64_t o, double eps)
{
    return (gamma ? gamma[o] : 1.0) / sqrt(var[o] + eps);
}

static void run_case(const fold_case *fc)
{
    const double eps = 1e-5;
    tsup_rng rng = tsup_rng_seed(42 + (uint64_t)fc->rank * 7 + (uint64_t)fc->dtype);
    int64_t o_count = fc->shape[0], numel = tsup_numel(fc->rank, fc->shape), o, i;
    double gamma[MAXO], beta[MAXO], mean[MAXO], var[MAXO], bias[MAXO];
    double *w = malloc((size_t)numel * sizeof(double)), *got = malloc((size_t)numel * sizeof(double));
    double *wref = malloc((size_t)numel * sizeof(double)), bgot[MAXO];
    tsup_layout layout = fc->channels_last ? TSUP_CHANNELS_LAST : TSUP_CHANNELS_FIRST;
    tsup_buf wb, outb, biasb, gb, bb, mb, vb, fbb;
    sbn_tensor *fw, *fb;
    for (o = 0; o < o_count; o++) {
        gamma[o] = 0.5 + tsup_uniform(&rng);
        beta[o] = tsup_normal(&rng);
        mean[o] = tsup_normal(&rng);
        var[o] = 0.1 + 2 * tsup_uniform(&rng);
        bias[o] = tsup_normal(&rng);
    }
    tsup_fill_normal(&rng, w, numel, 0.0, 1.0, fc->dtype);
    wb = tsup_make(fc->dtype, fc->rank, fc->shape, layout, w);
    outb = tsup_make(fc->dtype, fc->rank, fc->shape, layout, NULL);
    biasb = tsup_make_1d(SBN_F32, o_count, bias);
    gb = tsup_make_1d(SBN_F64, o_count, gamma);
    bb = tsup_make_1d(SBN_F32, o_count, beta);
    mb = tsup_make_1d(SBN_F32, o_count, mean);
    vb = tsup_make_1d(SBN_F64, o_count, var);
    fbb = tsup_make_1d(SBN_F32, o_count, NULL);
    /* the oracle reads the values as the tensors hold them (rounded to their dtypes) */
    tsup_read(&wb.view, w);
    for (o = 0; o < o_count; o++) {
        bias[o] = tsup_get1(&biasb.view, o);
        beta[o] = tsup_get1(&bb.view, o);
        mean[o] = tsup_get1(&mb.view, o);
    }
    fw = fc->in_place ? &wb.view : &outb.view;
    fb = fc->in_place && fc->has_bias ? &biasb.view : &fbb.view;
    CHECK_STATUS(sbn_fold_conv(&wb.view, fc->has_bias ? &biasb.view : NULL,
                               fc->has_affine ? &gb.view : NULL, fc->has_affine ? &bb.view : NULL,
                               &mb.view, &vb.view, eps, fw, fb),
                 SBN_OK);
    tsup_read(fw, got);
    for (o = 0; o < o_count; o++) bgot[o] = tsup_get1(fb, o);
    for (i = 0; i < numel; i++) {
        o = i / (numel / o_count);
        wref[i] = tsup_round(fc->dtype, w[i] * oracle_scale(fc->has_affine ? gamma : NULL, var, o, eps));
    }
    CHECK(tsup_close("folded_weight", got, wref, numel, 0.0, 0.0));
    for (o = 0; o < o_count; o++) {
        double s = oracle_scale(fc->has_affine ? gamma : NULL, var, o, eps);
        double want = tsup_round(SBN_F32, ((fc->has_bias ? bias[o] : 0.0) - mean[o]) * s +
                                              (fc->has_affine ? beta[o] : 0.0));
        CHECK_MSG(bgot[o] == want, "folded_bias[%lld] %.9g, want %.9g", (long long)o, bgot[o], want);
    }
    CHECK(tsup_guard_intact(&wb) && tsup_guard_intact(&outb) && tsup_guard_intact(&fbb));
    tsup_free(&wb);
    tsup_free(&outb);
    tsup_free(&biasb);
    tsup_free(&gb);
    tsup_free(&bb);
    tsup_free(&mb);
    tsup_free(&vb);
    tsup_free(&fbb);
    free(w);
    free(got);
    free(wref);
}

static void fold_matches_oracle(void)
{
    static const fold_case cases[] = {
        {SBN_F32, 4, {4, 3, 3, 3, 0}, 1, 1, 0, 0},
        {SBN_F32, 4, {4, 3, 3, 3, 0}, 1, 1, 1, 0},  /* channels-last weight strides */
        {SBN_F32, 4, {5, 2, 1, 7, 0}, 0, 0, 0, 0},  /* no conv bias, no affine */
        {SBN_F64, 2, {6, 5, 0, 0, 0}, 1, 1, 0, 0},  /* a linear layer */
        {SBN_F64, 5, {3, 2, 2, 3, 2}, 1, 0, 0, 0},  /* conv3d */
        {SBN_F16, 3, {8, 4, 3, 0, 0}, 1, 1, 0, 0},
        {SBN_BF16, 4, {2, 2, 2, 2, 0}, 0, 1, 1, 0},
        {SBN_F32, 4, {4, 3, 3, 3, 0}, 1, 1, 0, 1},  /* in place */
        {SBN_F64, 3, {4, 1, 300, 0, 0}, 0, 1, 0, 1}, /* in place, runs longer than a piece */
    };
    unsigned k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_case(&cases[k]);
        CHECK_MSG(sbn_test_failures() == 0, "case %u failed", k);
    }
}

/* Refusals name the argument and leave both outputs as they were. */
static void fold_refusals(void)
{
    float w[24], out[24], rm[4] = {0, 1, 2, 3}, rv[4] = {1, 1, 1, 1}, fb[4], short_v[3];
    float before_out[24], before_fb[4];
    int64_t shape[4] = {4, 3, 2, 1};
    sbn_tensor wv = sbn_tensor_contiguous(w, SBN_F32, 4, shape);
    sbn_tensor ov = sbn_tensor_contiguous(out, SBN_F32, 4, shape);
    sbn_tensor rmv = sbn_tensor_1d(rm, SBN_F32, 4), rvv = sbn_tensor_1d(rv, SBN_F32, 4);
    sbn_tensor fbv = sbn_tensor_1d(fb, SBN_F32, 4), shortv = sbn_tensor_1d(short_v, SBN_F32, 3);
    sbn_tensor over_rm = sbn_tensor_contiguous(rm, SBN_F32, 4, shape);
    int i;
    for (i = 0; i < 24; i++) w[i] = (float)i, out[i] = -7.0f;
    for (i = 0; i < 4; i++) fb[i] = -9.0f;
    memcpy(before_out, out, sizeof out);
    memcpy(before_fb, fb, sizeof fb);
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, NULL, NULL, &rmv, &rvv, 1e-5, &ov, NULL),
                 SBN_ERR_NULL_ARGUMENT);
    CHECK(strstr(sbn_last_error(), "folded_bias") != NULL);
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, NULL, NULL, NULL, &rvv, 1e-5, &ov, &fbv),
                 SBN_ERR_NULL_ARGUMENT);
    CHECK(strstr(sbn_last_error(), "running_mean") != NULL);
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, &shortv, NULL, &rmv, &rvv, 1e-5, &ov, &fbv),
                 SBN_ERR_BAD_SHAPE);
    CHECK(strstr(sbn_last_error(), "bn_weight") != NULL);
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, NULL, NULL, &rmv, &rvv, NAN, &ov, &fbv),
                 SBN_ERR_BAD_VALUE);
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, NULL, NULL, &rmv, &rvv, 1e-5, &over_rm, &fbv),
                 SBN_ERR_ALIAS);
    CHECK(strstr(sbn_last_error(), "folded_weight") != NULL);
    /* folded_bias in place over running_mean is not the allowed twin (conv_bias is) */
    CHECK_STATUS(sbn_fold_conv(&wv, NULL, NULL, NULL, &rmv, &rvv, 1e-5, &ov, &rmv), SBN_ERR_ALIAS);
    CHECK(memcmp(before_out, out, sizeof out) == 0);
    CHECK(memcmp(before_fb, fb, sizeof fb) == 0);
    CHECK(rm[1] == 1.0f);
}

static const sbn_test_case k_cases[] = {
    SBN_TEST_CASE(fold_matches_oracle),
    SBN_TEST_CASE(fold_refusals),
};

SBN_TEST_MAIN(k_cases)
