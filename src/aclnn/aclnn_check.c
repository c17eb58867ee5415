/*
 * aclnn_check.c - the argument checks of the aclnn ops, in CANN's order (null,
 * dtype, format, shape) and with CANN's codes: 161001 for an illegal NULL and
 * 161002 for everything else. Each failing check records one sentence for
 * aclGetRecentErrMsg() naming the op, the argument, its dtype, format and shape,
 * and the rule it broke. A pointer that is not a live aclTensor (destroyed, or
 * never made by aclCreateTensor) is refused with 161002 by every tensor check.
 * The pairwise rules (same dtype, same format), the 5-D format rule and the
 * channel count C (dim 1, or by format the last dim for NHWC/NDHWC) are here too,
 * shared by the ops that apply them. Also here: dtype and format names, the
 * public-format test, element counts and shape strings.
 */
#include <stdio.h>
#include <string.h>

#include "aclnn_internal.h"

static const aclDataType g_floats[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static const aclDataType g_float_only[] = {ACL_FLOAT};

const sbn__acl_dtypes SBN_ACL_FLOATS = {g_floats, 3};
const sbn__acl_dtypes SBN_ACL_FLOAT_ONLY = {g_float_only, 1};

const char *sbn__acl_dtype_name(aclDataType dtype)
{
    switch (dtype) {
    case ACL_DT_UNDEFINED: return "DT_UNDEFINED";
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_INT8: return "INT8";
    case ACL_INT32: return "INT32";
    case ACL_UINT8: return "UINT8";
    case ACL_INT16: return "INT16";
    case ACL_UINT16: return "UINT16";
    case ACL_UINT32: return "UINT32";
    case ACL_INT64: return "INT64";
    case ACL_UINT64: return "UINT64";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_BOOL: return "BOOL";
    case ACL_STRING: return "STRING";
    case ACL_COMPLEX64: return "COMPLEX64";
    case ACL_COMPLEX128: return "COMPLEX128";
    case ACL_BF16: return "BF16";
    case ACL_INT4: return "INT4";
    case ACL_UINT1: return "UINT1";
    case ACL_COMPLEX32: return "COMPLEX32";
    case ACL_HIFLOAT8: return "HIFLOAT8";
    case ACL_FLOAT8_E5M2: return "FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN: return "FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0: return "FLOAT8_E8M0";
    case ACL_FLOAT6_E3M2: return "FLOAT6_E3M2";
    case ACL_FLOAT6_E2M3: return "FLOAT6_E2M3";
    case ACL_FLOAT4_E2M1: return "FLOAT4_E2M1";
    case ACL_FLOAT4_E1M2: return "FLOAT4_E1M2";
    }
    return "UNKNOWN_DTYPE";
}

const char *sbn__acl_format_name(aclFormat format)
{
    switch (format) {
    case ACL_FORMAT_UNDEFINED: return "UNDEFINED";
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    case ACL_FORMAT_NC1HWC0: return "NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z: return "FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04: return "NC1HWC0_C04";
    case ACL_FORMAT_HWCN: return "HWCN";
    case ACL_FORMAT_NDHWC: return "NDHWC";
    case ACL_FORMAT_FRACTAL_NZ: return "FRACTAL_NZ";
    case ACL_FORMAT_NCDHW: return "NCDHW";
    case ACL_FORMAT_NDC1HWC0: return "NDC1HWC0";
    case ACL_FRACTAL_Z_3D: return "FRACTAL_Z_3D";
    case ACL_FORMAT_NC: return "NC";
    case ACL_FORMAT_NCL: return "NCL";
    }
    return "UNKNOWN_FORMAT";
}

int sbn__acl_format_is_public(aclFormat format)
{
    switch (format) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL:
        return 1;
    default:
        return 0;
    }
}

/* The product of the view dims; 0 when any dim is 0 (or negative); INT64_MAX on overflow. */
int64_t sbn__acl_numel(const aclTensor *t)
{
    int64_t n = 1;
    uint64_t d;
    if (!sbn__acl_tensor_is_live(t)) return 0;
    for (d = 0; d < t->ndim; d++)
        if (t->dims[d] <= 0) return 0;
    for (d = 0; d < t->ndim; d++) {
        if (n > INT64_MAX / t->dims[d]) return INT64_MAX;
        n *= t->dims[d];
    }
    return n;
}

const char *sbn__acl_shape_str(const aclTensor *t, char *buf, size_t size)
{
    size_t used;
    uint64_t d;
    if (buf == NULL || size == 0) return buf;
    buf[0] = '\0';
    if (t == NULL) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    if (!sbn__acl_tensor_is_live(t)) {
        snprintf(buf, size, "(not a live aclTensor)");
        return buf;
    }
    used = (size_t)snprintf(buf, size, "[");
    for (d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)t->dims[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* "dtype FLOAT16, format ND, shape [2, 3]" into buf. */
static const char *describe(const aclTensor *t, char *buf, size_t size)
{
    char shape[256];
    snprintf(buf, size, "dtype %s, format %s, shape %s", sbn__acl_dtype_name(t->dtype),
             sbn__acl_format_name(t->format), sbn__acl_shape_str(t, shape, sizeof shape));
    return buf;
}

aclnnStatus sbn__acl_check_null(const char *op, const void *p, const char *name)
{
    if (p == NULL)
        return sbn__acl_fail(ACLNN_ERR_PARAM_NULLPTR, op,
                             "%s is NULL; it is a required argument and must not be a null pointer",
                             name);
    return ACLNN_SUCCESS;
}

/* NULL -> 161001; a pointer that is not a live aclTensor -> 161002. */
static aclnnStatus check_live(const char *op, const aclTensor *t, const char *name)
{
    SBN_ACL_TRY(sbn__acl_check_null(op, t, name));
    if (!sbn__acl_tensor_is_live(t))
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s is not a live aclTensor: it was destroyed or never made by "
                             "aclCreateTensor",
                             name);
    return ACLNN_SUCCESS;
}

aclnnStatus sbn__acl_check_dtype(const char *op, const aclTensor *t, const char *name,
                                 const sbn__acl_dtypes *allowed)
{
    char desc[320], list[160];
    size_t used = 0;
    int i;
    SBN_ACL_TRY(check_live(op, t, name));
    if (allowed == NULL) return ACLNN_SUCCESS;
    for (i = 0; i < allowed->count; i++)
        if (allowed->list[i] == t->dtype) return ACLNN_SUCCESS;
    list[0] = '\0';
    for (i = 0; i < allowed->count && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 sbn__acl_dtype_name(allowed->list[i]));
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has %s; its dtype (%d) must be one of: %s", name,
                         describe(t, desc, sizeof desc), (int)t->dtype, list);
}

aclnnStatus sbn__acl_check_format(const char *op, const aclTensor *t, const char *name)
{
    char desc[320];
    SBN_ACL_TRY(check_live(op, t, name));
    if (sbn__acl_format_is_public(t->format)) return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has %s; format %d is private to the NPU, the format must be one of "
                         "ND, NCHW, NHWC, HWCN, NDHWC, NCDHW, NC, NCL",
                         name, describe(t, desc, sizeof desc), (int)t->format);
}

aclnnStatus sbn__acl_check_rank(const char *op, const aclTensor *t, const char *name, int lo,
                                int hi)
{
    char desc[320];
    SBN_ACL_TRY(check_live(op, t, name));
    if (t->ndim >= (uint64_t)(lo < 0 ? 0 : lo) && t->ndim <= (uint64_t)(hi < 0 ? 0 : hi))
        return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%s has %s; its rank %llu must be in %d..%d",
                         name, describe(t, desc, sizeof desc), (unsigned long long)t->ndim, lo,
                         hi);
}

aclnnStatus sbn__acl_check_vector(const char *op, const aclTensor *t, const char *name,
                                  int64_t c)
{
    char desc[320];
    SBN_ACL_TRY(check_live(op, t, name));
    if (t->ndim == 1 && t->dims[0] == c) return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has %s; it must be a 1-D tensor of shape [%lld] (one value per "
                         "channel)",
                         name, describe(t, desc, sizeof desc), (long long)c);
}

aclnnStatus sbn__acl_check_same_shape(const char *op, const aclTensor *t, const char *name,
                                      const aclTensor *ref, const char *ref_name)
{
    char desc[320], ref_shape[256];
    SBN_ACL_TRY(check_live(op, t, name));
    SBN_ACL_TRY(check_live(op, ref, ref_name));
    if (t->ndim == ref->ndim &&
        (t->ndim == 0 || memcmp(t->dims, ref->dims, (size_t)t->ndim * sizeof t->dims[0]) == 0))
        return ACLNN_SUCCESS;
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has %s; its shape must equal the shape of %s, %s", name,
                         describe(t, desc, sizeof desc), ref_name,
                         sbn__acl_shape_str(ref, ref_shape, sizeof ref_shape));
}

/* "<name> has <what> <value> but <ref_name> has <what> <ref_value>; they must be equal" */
static aclnnStatus not_equal(const char *op, const char *what, const char *name,
                             const char *value, const char *ref_name, const char *ref_value)
{
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                         "%s has %s %s but %s has %s %s; they must be equal", name, what, value,
                         ref_name, what, ref_value);
}

aclnnStatus sbn__acl_check_same_dtype(const char *op, const aclTensor *t, const char *name,
                                      const aclTensor *ref, const char *ref_name)
{
    if (t->dtype == ref->dtype) return ACLNN_SUCCESS;
    return not_equal(op, "dtype", name, sbn__acl_dtype_name(t->dtype), ref_name,
                     sbn__acl_dtype_name(ref->dtype));
}

aclnnStatus sbn__acl_check_same_format(const char *op, const aclTensor *t, const char *name,
                                       const aclTensor *ref, const char *ref_name)
{
    if (t->format == ref->format) return ACLNN_SUCCESS;
    return not_equal(op, "format", name, sbn__acl_format_name(t->format), ref_name,
                     sbn__acl_format_name(ref->format));
}

int sbn__acl_format_is_channels_last(aclFormat format)
{
    return format == ACL_FORMAT_NHWC || format == ACL_FORMAT_NDHWC;
}

aclnnStatus sbn__acl_check_5d_format(const char *op, const aclTensor *t, const char *name)
{
    if (t->ndim == 5 && t->format != ACL_FORMAT_NCDHW && t->format != ACL_FORMAT_NDHWC)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s is 5-D with format %s; a 5-D tensor must be NCDHW or NDHWC",
                             name, sbn__acl_format_name(t->format));
    return ACLNN_SUCCESS;
}

aclnnStatus sbn__acl_check_channels(const char *op, const aclTensor *t, const char *name,
                                    int by_format, int64_t *c)
{
    char shape[160];
    int last = by_format && sbn__acl_format_is_channels_last(t->format);
    *c = t->dims[last ? t->ndim - 1 : 1];
    if (*c != 0) return ACLNN_SUCCESS;
    if (by_format)
        return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op,
                             "%s has shape %s and format %s: the channel dim is 0", name,
                             sbn__acl_shape_str(t, shape, sizeof shape),
                             sbn__acl_format_name(t->format));
    return sbn__acl_fail(ACLNN_ERR_PARAM_INVALID, op, "%s has shape %s: the channel dim (1) is 0",
                         name, sbn__acl_shape_str(t, shape, sizeof shape));
}
