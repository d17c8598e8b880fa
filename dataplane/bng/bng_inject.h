/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The `bng-inject` pipeline type (bng_inject.c): frames from the BNG's
 * control port go out of its access port, the control plane's way back to
 * its subscribers (BBF TR-459 control packet redirect, CP to UP).
 */
#ifndef EP_BNG_INJECT_H
#define EP_BNG_INJECT_H

#include "bng.h"

/** Build an inject worker on @p b: one stage, control port to access port. */
int bng_inject_build(struct bng *b, struct ep_worker *w, struct ep_err *err);

#endif
