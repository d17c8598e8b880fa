/* SPDX-License-Identifier: BSD-3-Clause */
#include "ep_drop.h"

const char *const ep_drop_name[EP_DROP__COUNT] = {
#define EP_DROP(id, name, desc) [EP_DROP_##id] = name,
#include "drop_reasons.def"
#undef EP_DROP
};

const char *const ep_drop_desc[EP_DROP__COUNT] = {
#define EP_DROP(id, name, desc) [EP_DROP_##id] = desc,
#include "drop_reasons.def"
#undef EP_DROP
};
