/*
 * acl_data_type.c - the element-type helpers of CANN's acl_base.h: aclDataTypeSize
 * (bytes per element: 1, 2, 4, 8 or 16 for the whole-byte types; 0 for
 * ACL_DT_UNDEFINED, ACL_STRING, the sub-byte types INT4, UINT1, FLOAT6_* and
 * FLOAT4_*, and any value that is not an aclDataType) and the aclFloat16
 * conversions, IEEE binary16 with round to nearest, ties to even, the rounding the
 * native ops store fp16 with: NaN stays NaN (the quiet NaN 0x7E00), values from
 * 65520 up become Inf, tiny ones subnormals or zero: libsyncbn's public
 * sbn_float_to_f16/sbn_f16_to_float, so both faces round alike.
 */

#include "acl/acl.h"
#include "aclnn_internal.h"

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
    return (aclFloat16)sbn_float_to_f16(value);
}

SBN_ACL_API float aclFloat16ToFloat(aclFloat16 value)
{
    return sbn_f16_to_float((uint16_t)value);
}
