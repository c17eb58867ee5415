/*
 * acl_data_type.c - the element-type helpers of CANN's acl_base.h: aclDataTypeSize
 * (bytes per element: 1, 2, 4, 8 or 16 for the whole-byte types; 0 for
 * ACL_DT_UNDEFINED, ACL_STRING, the sub-byte types INT4, UINT1, FLOAT6_* and
 * FLOAT4_*, and any value that is not an aclDataType) and the aclFloat16
 * conversions, IEEE binary16 with round to nearest, ties to even, the rounding the
 * native ops store fp16 with: NaN stays NaN (the quiet NaN 0x7E00), values from
 * 65520 up become Inf, tiny ones subnormals or zero. The layer's own readers of
 * fp16 data (a counter) use the same routines.
 */
#include <math.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_internal.h"

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits. A normal half h has
 * the float exponent e + 112 (127 - 15) and its mantissa shifted up by 13; a
 * subnormal is mantissa x 2^-24.
 */
float sbn__acl_f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    if (exponent == 0) {
        float v = (float)mantissa * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    if (exponent == 31) return bits_float(sign | 0x7F800000u | (mantissa << 13));
    return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t sbn__acl_float_to_f16(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return (uint16_t)(sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 rounds to infinity */
    if (a < 0x38800000u) {                                    /* below 2^-14: subnormal */
        float scaled = bits_float(a) * 16777216.0f;             /* exact: times 2^24 */
        return (uint16_t)(sign | (uint16_t)nearbyintf(scaled)); /* ties to even */
    }
    a += 0xFFFu + ((a >> 13) & 1u); /* round to nearest even on the 13 dropped bits */
    return (uint16_t)(sign | (uint16_t)((a >> 13) - (112u << 10)));
}

SBN_ACL_API size_t aclDataTypeSize(aclDataType dataType)
{
    switch (dataType) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
        return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
        return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
        return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
        return 8;
    case ACL_COMPLEX128:
        return 16;
    default:
        return 0;
    }
}

SBN_ACL_API aclFloat16 aclFloatToFloat16(float value)
{
    return (aclFloat16)sbn__acl_float_to_f16(value);
}

SBN_ACL_API float aclFloat16ToFloat(aclFloat16 value)
{
    return sbn__acl_f16_to_float((uint16_t)value);
}
