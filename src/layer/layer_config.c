/*
 * layer_config.c - the sized sbn_syncbn_config: its defaults and its reading.
 *
 * The struct only grows by appending fields, each with a default, and carries the
 * size the caller compiled (layer.h). Reading copies the fields whose bytes lie
 * wholly inside that size over the defaults, so a caller built against an older,
 * smaller header gets the defaults for the fields it does not know, and a size past
 * this library's struct (a newer header than the library) is refused instead of
 * guessed at: the library cannot know what the unknown tail asks for.
 */
#include <stddef.h>
#include <string.h>

#include "core/check.h"
#include "core/export.h"
#include "core/status.h"
#include "layer/layer_config.h"

/* The smallest size a config can have: its size field alone (every option default). */
#define MIN_SIZE (offsetof(sbn_syncbn_config, size) + sizeof(size_t))

static void set_defaults(sbn_syncbn_config *config)
{
    memset(config, 0, sizeof *config);
    config->size = sizeof *config;
    config->eps = 1e-5;
    config->momentum = 0.1;
    config->training = 1;
}

static sbn_status check_size(size_t size)
{
    if (size < MIN_SIZE)
        return sbn__error(SBN_ERR_BAD_VALUE,
                          "config->size is %zu but a sbn_syncbn_config holds at least its %zu-byte "
                          "size field: initialise it with SBN_SYNCBN_CONFIG_INIT or "
                          "sbn_syncbn_config_default()", size, (size_t)MIN_SIZE);
    if (size > sizeof(sbn_syncbn_config))
        return sbn__error(SBN_ERR_BAD_VALUE,
                          "config->size is %zu but this libsyncbn (%s) knows a sbn_syncbn_config "
                          "of %zu bytes: the caller was built against a newer syncbn/layer.h "
                          "than the library it runs with", size, sbn_version(),
                          sizeof(sbn_syncbn_config));
    return SBN_OK;
}

/* Copies field f of in to out when its bytes lie inside size. */
#define TAKE(f)                                                                            \
    do {                                                                                   \
        if (offsetof(sbn_syncbn_config, f) + sizeof in->f <= size) out->f = in->f;         \
    } while (0)

sbn_status sbn__layer_read_config(const sbn_syncbn_config *in, sbn_syncbn_config *out)
{
    size_t size = in->size;
    sbn_status s;
    set_defaults(out);
    if ((s = check_size(size)) != SBN_OK) return s;
    TAKE(eps);
    TAKE(momentum);
    TAKE(cumulative);
    TAKE(training);
    TAKE(sync_grad_params);
    TAKE(nan_guard);
    TAKE(reproducible);
    TAKE(timing);
    return SBN_OK;
}

SBN_API sbn_status sbn_syncbn_config_init(sbn_syncbn_config *config, size_t size)
{
    sbn_syncbn_config defaults;
    sbn_status s;
    sbn__clear_error();
    if ((s = sbn__check_present(config, "config")) != SBN_OK) return s;
    if ((s = check_size(size)) != SBN_OK) return s;
    set_defaults(&defaults);
    defaults.size = size;
    memcpy(config, &defaults, size);
    return SBN_OK;
}
