/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Drop reasons: the enum generated from drop_reasons.def, and their names.
 */
#ifndef EP_DROP_H
#define EP_DROP_H

enum ep_drop_reason {
#define EP_DROP(id, name, desc) EP_DROP_##id,
#include "drop_reasons.def"
#undef EP_DROP
	EP_DROP__COUNT
};

/** Control-socket name of each reason ("ipv4_bad_checksum"). */
extern const char *const ep_drop_name[EP_DROP__COUNT];
/** One-line description of each reason. */
extern const char *const ep_drop_desc[EP_DROP__COUNT];

#endif
