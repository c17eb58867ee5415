/*
 * internal.h - an umbrella over the headers of the modules below src/aclnn, kept only
 * because src/aclnn (the CANN face, moving into a library of its own on the public
 * API) still reaches into the library's internals through it. Nothing else includes
 * it: every other file includes the headers of the modules it uses. Once src/aclnn
 * stops using internals, this file goes. It is the one header of core that names a
 * module above core (kernels/); scripts/check_layers.sh knows it.
 */
#ifndef SBN_CORE_INTERNAL_H
#define SBN_CORE_INTERNAL_H

#include "core/alloc.h"
#include "core/arith.h"
#include "core/check.h"
#include "core/export.h"
#include "core/extent.h"
#include "core/machine.h"
#include "core/pool.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/convert.h"
#include "syncbn/ops.h"
#include "syncbn/syncbn.h"

#endif /* SBN_CORE_INTERNAL_H */
