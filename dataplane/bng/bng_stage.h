/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the bng-uplink and bng-downlink parse stages do alike, before each
 * parses its own side's encapsulation: prefetch frames a few ahead (the
 * first line of the frame and the mbuf's private area with ep_meta: two
 * misses per frame that the parse of the frames in between hides), and drop
 * unicast frames addressed to another MAC than the port's.
 */
#ifndef EP_BNG_STAGE_H
#define EP_BNG_STAGE_H

#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "ep_meta.h"
#include "ep_parse.h"

#define BNG_PREFETCH_AHEAD 4

static __rte_always_inline void
bng_prefetch_frame(struct rte_mbuf *m)
{
	rte_prefetch0(rte_pktmbuf_mtod(m, void *));
	rte_prefetch0(ep_meta(m));
}

/* Before the loop over a burst. */
static __rte_always_inline void
bng_prefetch_first(struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n && i < BNG_PREFETCH_AHEAD; i++)
		bng_prefetch_frame(pkts[i]);
}

/*
 * At packet @p i of the loop: prefetch the one BNG_PREFETCH_AHEAD further,
 * then 1 if packet @p i is unicast to another MAC than @p mine (the caller
 * drops it as EP_DROP_L2_NOT_FOR_US).  Broadcast and multicast pass: ARP,
 * ND and PPPoE discovery are for the port too.
 */
static __rte_always_inline int
bng_next_not_for_us(struct rte_mbuf **pkts, uint16_t i, uint16_t n,
		    const struct rte_ether_addr *mine)
{
	const struct rte_mbuf *m = pkts[i];
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (i + BNG_PREFETCH_AHEAD < n)
		bng_prefetch_frame(pkts[i + BNG_PREFETCH_AHEAD]);
	return likely(m->data_len >= RTE_ETHER_HDR_LEN) && (p[0] & 1) == 0 &&
	       unlikely(!ep_mac_eq(p, mine));
}

#endif
