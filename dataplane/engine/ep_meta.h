/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-packet metadata, kept in the mbuf private area (rte_mbuf_to_priv).
 * Every mempool the engine creates reserves room for it, so reading it costs
 * no extra cache line beyond the mbuf's second one.  The parse stage fills
 * the offsets; later stages read them instead of re-parsing.
 */
#ifndef EP_META_H
#define EP_META_H

#include <stdint.h>
#include <rte_mbuf.h>

enum ep_l3_type {
	EP_L3_NONE = 0,
	EP_L3_IPV4,
	EP_L3_IPV6,
	EP_L3_ARP,
};

#define EP_META_F_FRAGMENT   0x01  /**< IPv4/IPv6 fragment: L4 header may be absent */
#define EP_META_F_LOCAL      0x02  /**< destination is one of the data plane's own addresses */
#define EP_META_F_HAS_L4     0x04  /**< l4_off points at a complete TCP/UDP/ICMP header */
#define EP_META_F_MPLS       0x08  /**< an MPLS label stack precedes the IP header (l3_off is past it) */

struct ep_fib_nh;

struct ep_meta {
	uint16_t in_port;    /**< logical port index the packet arrived on */
	uint16_t l3_off;     /**< bytes from the start of data to the L3 header */
	uint16_t l4_off;     /**< bytes from the start of data to the L4 header */
	uint16_t l3_len;     /**< L3 header + payload length claimed by the header */
	uint8_t l3_type;     /**< enum ep_l3_type */
	uint8_t l4_proto;    /**< IPPROTO_* after walking IPv6 extension headers */
	uint8_t n_vlans;     /**< 0, 1 or 2 */
	uint8_t flags;       /**< EP_META_F_* */
	uint16_t vlan_tci[2];/**< outer, inner TCI in host order */
	uint32_t nexthop;    /**< next-hop index chosen by a route stage (fib/: the id) */
	uint64_t user;       /**< free for a pipeline (subscriber id, flow id...) */
	/** That next hop's entry, set with nexthop, valid until the worker's
	 *  quiescent state after the burst: the stage that writes the frame
	 *  reads it without going through the FIB's table again (a dependent
	 *  load less per packet: ~3 cycles in the vBNG's uplink encap). */
	const struct ep_fib_nh *nexthop_entry;
};

/* The private area's size: ep_meta in a line of its own, then half a line
 * more, so that a frame (after the 128-byte headroom) starts half-way into
 * a cache line, as it did while ep_meta was 32 bytes: a header pushed in
 * front (the vBNG downlink's 4 to 16 bytes) stays in the frame's first
 * line, and the parse and ACL read the same lines as before (measured: a
 * frame starting 40 bytes in cost the ACL ~2 cycles a packet, one starting
 * on a line boundary cost the downlink encap ~7). */
#define EP_META_SIZE (RTE_ALIGN(sizeof(struct ep_meta), RTE_CACHE_LINE_SIZE) + \
		      RTE_CACHE_LINE_SIZE / 2)

/* The private area of a port whose frames no stage pushes a header in
 * front of (every pipeline that polls it says so: ep_pipeline_type
 * rx_line_aligned): ep_meta's line only, so a frame starts on a line
 * boundary (128-byte mbuf + 64 + 128-byte headroom = 320) and a 64-byte
 * frame is one cache line instead of two.  That is a line less for the
 * driver's copy into the mbuf (and, for net_pcap, for reading its stored
 * frame, which lives in the same pool), and the IPv4 destination no longer
 * straddles two lines (it sat 62 bytes into the frame's first line). */
#define EP_META_SIZE_LINE RTE_ALIGN(sizeof(struct ep_meta), RTE_CACHE_LINE_SIZE)

static inline struct ep_meta *
ep_meta(struct rte_mbuf *m)
{
	return (struct ep_meta *)rte_mbuf_to_priv(m);
}

#endif
