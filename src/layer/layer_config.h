/*
 * layer_config.h - reading the caller's sized sbn_syncbn_config (layer.h states the
 * rule) into the library's own full struct, so that the rest of the layer sees every
 * field of this version whatever header the caller was built with.
 */
#ifndef SYNCBN_LAYER_CONFIG_H
#define SYNCBN_LAYER_CONFIG_H

#include "syncbn/layer.h"

/*
 * *out = the defaults, overwritten by every field of *in that lies wholly inside
 * in->size. SBN_ERR_BAD_VALUE (with the sentence) when in->size is smaller than the
 * size field or larger than this library's struct; in must not be NULL.
 */
sbn_status sbn__layer_read_config(const sbn_syncbn_config *in, sbn_syncbn_config *out);

#endif /* SYNCBN_LAYER_CONFIG_H */
