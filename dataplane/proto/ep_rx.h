/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * What every parse stage does before it parses: prefetch frames a few
 * ahead, and drop unicast frames addressed to another MAC.
 *
 * Prefetch: a frame costs two misses before its parse can start, its first
 * line and the mbuf's private area with ep_meta (the meta line is written
 * by the parse and read by every later stage).  Issued EP_RX_PREFETCH_AHEAD
 * frames ahead, the parses in between hide them.  A pipeline whose parse
 * reads past the first line (IPv4 destination and ports of a 64-byte frame
 * that starts mid-line) asks for the second line too.
 *
 * Not for us: ports run promiscuous (af_packet and promiscuous NICs deliver
 * every frame on the wire), so a unicast frame whose destination is not the
 * port's MAC is counted as EP_DROP_L2_NOT_FOR_US before it is parsed, and a
 * foreign frame is never blamed on its headers.  Broadcast and multicast
 * frames go on: ARP, neighbour discovery and PPPoE discovery are for the
 * port too.
 */
#ifndef EP_RX_H
#define EP_RX_H

#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "ep_meta.h"

#define EP_RX_PREFETCH_AHEAD 4

/** 1 if the 6 bytes at @p a are MAC @p b: one 4-byte and one 2-byte
 *  compare (the frame's destination is not 2-byte aligned for a wider one). */
static __rte_always_inline int
ep_mac_eq(const uint8_t *a, const struct rte_ether_addr *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;

	memcpy(&a4, a, 4);
	memcpy(&b4, b->addr_bytes, 4);
	memcpy(&a2, a + 4, 2);
	memcpy(&b2, b->addr_bytes + 4, 2);
	return a4 == b4 && a2 == b2;
}

/** Prefetch a frame's first @p lines lines (1 or 2) and its ep_meta line. */
static __rte_always_inline void
ep_rx_prefetch(struct rte_mbuf *m, const unsigned int lines)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	rte_prefetch0(p);
	if (lines > 1)
		rte_prefetch0(p + 48);
	rte_prefetch0(ep_meta(m));
}

/** Before the loop over a burst: the first EP_RX_PREFETCH_AHEAD frames. */
static __rte_always_inline void
ep_rx_prefetch_first(struct rte_mbuf **pkts, uint16_t n, const unsigned int lines)
{
	for (uint16_t i = 0; i < n && i < EP_RX_PREFETCH_AHEAD; i++)
		ep_rx_prefetch(pkts[i], lines);
}

/** At packet @p i of the loop: the frame EP_RX_PREFETCH_AHEAD further. */
static __rte_always_inline void
ep_rx_prefetch_next(struct rte_mbuf **pkts, uint16_t i, uint16_t n, const unsigned int lines)
{
	if (i + EP_RX_PREFETCH_AHEAD < n)
		ep_rx_prefetch(pkts[i + EP_RX_PREFETCH_AHEAD], lines);
}

/** 1 if @p m is a unicast frame to another MAC than @p mine (the caller
 *  drops it as EP_DROP_L2_NOT_FOR_US).  A frame too short for an Ethernet
 *  header is left to the parser (EP_DROP_L2_TRUNCATED). */
static __rte_always_inline int
ep_rx_not_for_us(const struct rte_mbuf *m, const struct rte_ether_addr *mine)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	return likely(m->data_len >= RTE_ETHER_HDR_LEN) && (p[0] & 1) == 0 &&
	       unlikely(!ep_mac_eq(p, mine));
}

/** The MAC @p mine as the two words ep_rx_not_for_us_words compares: a
 *  stage that knows its burst's port loads them once, into registers. */
static __rte_always_inline void
ep_mac_words(const struct rte_ether_addr *mine, uint32_t *w4, uint16_t *w2)
{
	memcpy(w4, mine->addr_bytes, 4);
	memcpy(w2, mine->addr_bytes + 4, 2);
}

/** ep_rx_not_for_us against a MAC given as ep_mac_words' two words. */
static __rte_always_inline int
ep_rx_not_for_us_words(const struct rte_mbuf *m, uint32_t w4, uint16_t w2)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t a4;
	uint16_t a2;

	/* Shorter than a header: the parse drops it; its bytes are not read. */
	if (unlikely(m->data_len < RTE_ETHER_HDR_LEN))
		return 0;
	memcpy(&a4, p, 4);
	memcpy(&a2, p + 4, 2);
	return (p[0] & 1) == 0 && unlikely(((a4 ^ w4) | (uint32_t)(a2 ^ w2)) != 0);
}

#endif
