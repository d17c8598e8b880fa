/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-subscriber counters summed over the workers (bng_counters.c): what
 * `sub-get` shows and `sub-counters` reads for many subscribers at once
 * (a PFCP user-plane function's usage reports, TS 29.244 clause 5.2.2).
 */
#ifndef EP_BNG_COUNTERS_H
#define EP_BNG_COUNTERS_H

#include "bng.h"

/** A subscriber's counters: uplink by policer colour (IP bytes), downlink
 *  (access frame bytes), anti-spoofing drops. */
struct bng_sub_counters {
	uint64_t pkts[3], bytes[3];    /**< green, yellow, red */
	uint64_t spoofed;
	uint64_t down_pkts, down_bytes;
};

/** Sum @p s's counters over the uplink and downlink workers.  Control
 *  thread; the workers' counters are read with plain 64-bit loads, the
 *  uplink's green ones with bng_up_green_read (monotonic across spills). */
void bng_sub_counters(const struct bng *b, const struct bng_sub *s, struct bng_sub_counters *c);

#endif
