/*
 * map.h - the chunked elementwise maps (channel_map.c): the per-channel affine
 * normalize and backward maps every forward and backward op ends with.
 */
#ifndef SBN_OPS_MAP_H
#define SBN_OPS_MAP_H

#include <stdint.h>

#include "syncbn/syncbn.h"

/*
 * Per-channel affine maps, with coefficients in structure-of-arrays form, a [4][C]
 * double array (k0 of channel c at coef[c], k1 at coef[C + c], ...):
 *   SBN_MAP_NORMALIZE: out = (x - k0) * k1 + k2                 (in0 = x)
 *   SBN_MAP_BACKWARD:  out = (dy - k0 - (x - k1) * k2) * k3     (in0 = dy, in1 = x)
 * computed in double when a tensor is fp64, else in float (kernels.h). The caller's
 * coefficient block is SBN_MAP_COEF_DOUBLES * C doubles: the [4][C] coefficients,
 * then room the map uses for their [4][C] float form.
 */
#define SBN_MAP_COEF_DOUBLES 6
typedef enum sbn__map_kind { SBN_MAP_NORMALIZE, SBN_MAP_BACKWARD } sbn__map_kind;
void sbn__channel_map(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                      double *coef, sbn_tensor *out, sbn_pool_t *pool);
/*
 * The same with the coefficients computed by the map: coefs(ctx, begin, end) writes the
 * [4][C] double coefficients of channels [begin, end) (and whatever per-channel outputs
 * its op has); the map calls it exactly once for every channel, before mapping that
 * channel, also when there are no elements to map. Where plan.c says so it runs inside
 * the map's tasks a block of channels at a time, else in a loop of its own first;
 * coefs_ns estimates its work over all C channels (plan.c's team sizes).
 */
typedef void (*sbn__coefs_fn)(void *ctx, int64_t begin, int64_t end);
void sbn__channel_map_with(sbn__map_kind kind, const sbn_tensor *in0, const sbn_tensor *in1,
                           double *coef, sbn__coefs_fn coefs, void *ctx, double coefs_ns,
                           sbn_tensor *out, sbn_pool_t *pool);

#endif /* SBN_OPS_MAP_H */
