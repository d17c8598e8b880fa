/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-packet metadata, kept in the mbuf's second cache line: the 36 bytes
 * of dynamic-field space there (dynfield1, offsets 92-127) hold ep_meta's
 * 28, registered with DPDK's dynamic-field API at a fixed offset
 * (ep_meta_register), so ep_meta(m) is a constant offset and no driver or
 * library can be given the same bytes.  That line is the mbuf's `next`,
 * read on every free and written at every allocation, so the metadata
 * costs no line of its own.  The parse stage fills the offsets; later
 * stages read them instead of re-parsing.
 *
 * The next hop's entry (8 bytes) did not fit: it stays in the mbuf's
 * private area (ep_meta_nh), read only by the stages that write a routed
 * frame (the router's rewrite, the vBNG uplink's encap).
 *
 * Measured (docs/benchmarks/router-passes.md, "ep_meta in the mbuf's
 * second line"):
 * the vCMTS, whose frames another core writes or which wait in queues,
 * -3 % cycles a frame downstream and -7 % upstream; the router and the
 * vBNG uplink, whose mbufs are recycled hot on one core, within the noise.
 */
#ifndef EP_META_H
#define EP_META_H

#include <stddef.h>
#include <stdint.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

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

/* Packed to 28 bytes with 4-byte alignment: at offset 92 `user` still
 * lands on an 8-byte boundary (112), and 120-127 stay free for the one
 * 8-byte, 8-aligned field a driver registers (net_pcap's Rx timestamp: its
 * probe fails without it). */
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
} __attribute__((packed, aligned(4)));

/** Where ep_meta lives: the start of the mbuf's dynamic-field area. */
#define EP_META_OFFSET offsetof(struct rte_mbuf, dynfield1)
/** The name it is registered under (rte_mbuf_dynfield_list shows it). */
#define EP_META_DYNFIELD_NAME "edgeplane_ep_meta"

_Static_assert(sizeof(struct ep_meta) == 28, "ep_meta is 28 bytes");
_Static_assert(EP_META_OFFSET % 4 == 0 && (EP_META_OFFSET + offsetof(struct ep_meta, user)) % 8 == 0,
	       "ep_meta's user on an 8-byte boundary");
_Static_assert(RTE_ALIGN_CEIL(EP_META_OFFSET + sizeof(struct ep_meta), 8) + 8 <=
	       offsetof(struct rte_mbuf, dynfield1) + sizeof(((struct rte_mbuf *)0)->dynfield1),
	       "an 8-byte, 8-aligned dynamic field left for a driver (net_pcap's Rx timestamp)");

/* The private area's size: half a line, which holds the next hop's entry
 * (ep_meta_nh) and makes a frame (after the 128-byte headroom) start
 * half-way into a cache line: a header pushed in front (the vBNG
 * downlink's 4 to 16 bytes) stays in the frame's first line, and the parse
 * and ACL read the same lines as before (measured: a frame starting 40
 * bytes in cost the ACL ~2 cycles a packet, one starting on a line
 * boundary cost the downlink encap ~7). */
#define EP_META_SIZE (RTE_CACHE_LINE_SIZE / 2)

/* The private area of a port whose frames no stage pushes a header in
 * front of (every pipeline that polls it says so: ep_pipeline_type
 * rx_line_aligned): one line (the next hop's entry), so a frame starts on
 * a line boundary (128-byte mbuf + 64 + 128-byte headroom = 320) and a
 * 64-byte frame is one cache line instead of two.  That is a line less for
 * the driver's copy into the mbuf (and, for net_pcap, for reading its
 * stored frame, which lives in the same pool), and the IPv4 destination no
 * longer straddles two lines (it sat 62 bytes into the frame's first
 * line). */
#define EP_META_SIZE_LINE RTE_CACHE_LINE_SIZE

/**
 * Registers ep_meta's bytes with DPDK's dynamic-field API at
 * EP_META_OFFSET.  Call after rte_eal_init and before any port is probed
 * (a driver registering first could be given those bytes).  Idempotent.
 * @return 0, or -1 with rte_errno set (the bytes are taken: a driver or
 *         library registered a field there first).
 */
static inline int
ep_meta_register(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = EP_META_DYNFIELD_NAME,
		.size = sizeof(struct ep_meta),
		.align = __alignof__(struct ep_meta),
	};
	int off = rte_mbuf_dynfield_register_offset(&desc, EP_META_OFFSET);

	if (off < 0)
		return -1;
	if ((size_t)off != EP_META_OFFSET) {
		rte_errno = EEXIST;
		return -1;
	}
	return 0;
}

static inline struct ep_meta *
ep_meta(struct rte_mbuf *m)
{
	return (struct ep_meta *)(void *)((uint8_t *)m + EP_META_OFFSET);
}

/** Sets the next hop's entry a route stage chose (with ep_meta.nexthop),
 *  valid until the worker's quiescent state after the burst: the stage
 *  that writes the frame reads it without going through the FIB's table
 *  again (a dependent load less per packet: ~3 cycles in the vBNG's
 *  uplink encap).  In the private area: ep_meta's line had no room. */
static inline void
ep_meta_set_nh(struct rte_mbuf *m, const struct ep_fib_nh *nh)
{
	*(const struct ep_fib_nh **)rte_mbuf_to_priv(m) = nh;
}

/** The next hop's entry ep_meta_set_nh left. */
static inline const struct ep_fib_nh *
ep_meta_nh(struct rte_mbuf *m)
{
	return *(const struct ep_fib_nh *const *)rte_mbuf_to_priv(m);
}

#endif
