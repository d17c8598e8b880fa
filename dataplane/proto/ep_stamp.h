/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The tester's stamp: the 18-byte payload header the `gen` pipeline puts
 * right after the UDP header of every frame it sends (dataplane/gen/README.md
 * has the whole layout), read here by anything that wants to know how old a
 * test frame is -- the sink for end-to-end latency, and a DUT worker for the
 * time from a frame's transmission to the rx burst that took it after the
 * worker paused (engine/ep_power.h).
 *
 *   offset 0   magic   u32  EP_STAMP_MAGIC ("EPG1")
 *          4   flow    u16
 *          6   seq     u48
 *         12   tsc     u48  low 48 bits of the sender's TSC
 *
 * all little-endian.  The TSC is invariant and common to every core of one
 * machine (constant_tsc, nonstop_tsc), so a stamp written by one process is
 * comparable with another's TSC on the same host, modulo 2^48.
 *
 * Reading it costs the L2 walk of ep_parse_l2, one IP header look and one
 * 4-byte compare: a worker does it for one frame per pause, not per packet.
 */
#ifndef EP_STAMP_H
#define EP_STAMP_H

#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "ep_parse.h"

#define EP_STAMP_MAGIC    0x31475045u   /**< "EPG1" as little-endian bytes */
#define EP_STAMP_LEN      18            /**< payload header bytes on the wire */
#define EP_STAMP_TSC_OFF  12            /**< offset of the TSC field */
#define EP_STAMP_MASK48   ((1ull << 48) - 1)

/**
 * The sender's TSC (low 48 bits) from a test frame in the first segment of
 * @p m: Ethernet, up to two VLAN tags, IPv4 (any IHL, first fragment) or
 * IPv6 (UDP as the first next header), UDP, then the stamp.  Returns 1 and
 * sets @p tsc48, or 0 for any other frame.
 */
static inline int
ep_stamp_tsc(const struct rte_mbuf *m, uint64_t *tsc48)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, off;
	struct ep_meta meta;
	uint16_t et;
	uint32_t magic;
	uint64_t v = 0;

	if (ep_parse_l2(p, len, &meta, &et) != 0)
		return 0;
	off = meta.l3_off;
	if (et == RTE_ETHER_TYPE_IPV4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + off);

		if (len < off + sizeof(*ip) || ip->next_proto_id != IPPROTO_UDP ||
		    (rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) != 0)
			return 0;
		off += (uint32_t)(ip->version_ihl & 0x0f) * 4;
	} else if (et == RTE_ETHER_TYPE_IPV6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + off);

		if (len < off + sizeof(*ip) || ip->proto != IPPROTO_UDP)
			return 0;
		off += sizeof(*ip);
	} else {
		return 0;
	}
	off += sizeof(struct rte_udp_hdr);
	if (len < off + EP_STAMP_LEN)
		return 0;
	memcpy(&magic, p + off, sizeof(magic));
	if (magic != rte_cpu_to_le_32(EP_STAMP_MAGIC))
		return 0;
	memcpy(&v, p + off + EP_STAMP_TSC_OFF, 6);
	*tsc48 = rte_le_to_cpu_64(v);
	return 1;
}

/** Cycles from a stamp to @p now, modulo 2^48; -1 (as UINT64_MAX) when the
 *  stamp lies in the future (more than 2^47 cycles "ago"). */
static inline uint64_t
ep_stamp_age(uint64_t tsc48, uint64_t now)
{
	uint64_t d = ((now & EP_STAMP_MASK48) - tsc48) & EP_STAMP_MASK48;

	return d >= (1ull << 47) ? UINT64_MAX : d;
}

#endif
