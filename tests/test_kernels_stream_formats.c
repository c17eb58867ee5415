/*
 * test_kernels_stream_formats.c - the element conversions that test_kernels_stream.c's
 * oracle is built on (support/ieee_formats.h, written from the IEEE definitions), checked
 * themselves before the kernels are checked against them: narrowing and widening of
 * known fp16, bf16 and fp32 values (ties, overflow, subnormals, NaN payloads), then
 * agreement with the library's own conversions on every fp16 and bf16 bit pattern, and on
 * random fp32 bits and doubles drawn near fp32/fp16/bf16 rounding ties, mixed or random
 * (support/stream_values.h, the streaming test's generator and seed).
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "kernels/kernels.h"
#define TSUP_RNG_SEED 0x57EA5EED0BADCAFEull
#include "support/ieee_formats.h"
#include "support/stream_values.h"

/* The oracle's conversions: known IEEE values, then agreement with the library's own
 * element conversions (every fp16/bf16 pattern, random fp32 bits, doubles near ties). */
static void test_oracle_conversions(void)
{
    static const struct {
        int dt;
        double v;
        uint64_t want;
    } k_known[] = {
        {SBN_KD_F16, 1.0, 0x3C00},           {SBN_KD_F16, 65504.0, 0x7BFF},
        {SBN_KD_F16, 65519.99, 0x7BFF},      {SBN_KD_F16, 65520.0, 0x7C00},
        {SBN_KD_F16, 0x1p-24, 0x0001},       {SBN_KD_F16, 0x1p-25, 0x0000},
        {SBN_KD_F16, 0x1p-25 + 0x1p-60, 1},  {SBN_KD_F16, -0x1.8p-24, 0x8002},
        {SBN_KD_F16, 1.0 + 0x1p-11, 0x3C00}, {SBN_KD_F16, 1.0 + 0x1p-11 + 0x1p-40, 0x3C01},
        {SBN_KD_BF16, 1.0, 0x3F80},          {SBN_KD_BF16, 1.0 + 0x1p-8, 0x3F80},
        {SBN_KD_BF16, 1.0 + 0x1p-8 + 0x1p-40, 0x3F81}, {SBN_KD_BF16, 1.0 + 0x1.8p-7, 0x3F82},
        {SBN_KD_BF16, -0.0, 0x8000},         {SBN_KD_BF16, 0x1p-133, 0x0001},
        {SBN_KD_BF16, 0x1.fffffffp127, 0x7F80}, {SBN_KD_BF16, -INFINITY, 0xFF80},
        {SBN_KD_F32, 1.0 + 0x1p-24, 0x3F800000}, {SBN_KD_F32, 1.0 + 0x1p-24 + 0x1p-50, 0x3F800001},
        {SBN_KD_F32, 0x1p-149, 0x00000001},  {SBN_KD_F32, 0x1p-150, 0x00000000},
        {SBN_KD_F32, 0x1.ffffffp127, 0x7F800000}, {SBN_KD_F32, 0x1.fffffefp127, 0x7F7FFFFF},
    };
    size_t i;
    uint32_t u;
    for (i = 0; i < sizeof k_known / sizeof k_known[0]; i++)
        CHECK_MSG(narrow(k_known[i].dt, k_known[i].v) == k_known[i].want, "narrow %s %a: %llx",
                  k_fmt[k_known[i].dt].name, k_known[i].v,
                  (unsigned long long)narrow(k_known[i].dt, k_known[i].v));
    CHECK(narrow(SBN_KD_F16, from_bits(0xFFF0000000000001ull)) == 0xFE00);
    CHECK(narrow(SBN_KD_BF16, from_bits(0x7FF0000020000000ull)) == 0x7FC0);
    CHECK(narrow(SBN_KD_F32, from_bits(0x7FF123456789ABCDull)) == (0x7FC91A2Bu));
    CHECK(bits_of(widen(SBN_KD_F16, 0x7C01)) == 0x7FF8040000000000ull);
    CHECK(widen(SBN_KD_F16, 0x0001) == 0x1p-24 && widen(SBN_KD_BF16, 0x8001) == -0x1p-133);
    for (u = 0; u < 0x10000u; u++) {
        double h = sbn__f16_to_float((uint16_t)u), b = sbn__bf16_to_float((uint16_t)u);
        CHECK_MSG(bits_of(widen(SBN_KD_F16, u)) == bits_of(h), "f16 %04x", u);
        CHECK_MSG(bits_of(widen(SBN_KD_BF16, u)) == bits_of(b), "bf16 %04x", u);
    }
    for (i = 0; i < 300000; i++) {
        uint32_t fb = (uint32_t)next_u64();
        float f;
        double v;
        memcpy(&f, &fb, 4);
        CHECK_MSG(bits_of(widen(SBN_KD_F32, fb)) == bits_of((double)f), "f32 %08x", fb);
        switch (i % 5) {
        case 0: v = mixed_value(); break;
        case 1: v = near_tie(24, -30, 20); break;
        case 2: v = near_tie(11, -24, 15); break;
        case 3: v = near_tie(8, -133, 127); break;
        default: v = from_bits(next_u64()); break;
        }
        f = (float)v;
        memcpy(&fb, &f, 4);
        CHECK_MSG(narrow(SBN_KD_F32, v) == fb, "f32 narrow %a", v);
        f = sbn__narrow_round_to_odd(v);
        CHECK_MSG(narrow(SBN_KD_F16, v) == sbn__float_to_f16(f), "f16 narrow %a", v);
        CHECK_MSG(narrow(SBN_KD_BF16, v) == sbn__float_to_bf16(f), "bf16 narrow %a", v);
    }
}

int main(int argc, char **argv)
{
    static const sbn_test_case cases[] = {
        SBN_TEST_CASE(test_oracle_conversions),
    };
    return sbn_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
