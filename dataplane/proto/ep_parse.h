/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Packet parsing: Ethernet (IEEE 802.3), up to two VLAN tags (IEEE 802.1Q,
 * 802.1ad; 0x9100 as a legacy outer TPID), optionally an MPLS label stack
 * (RFC 3032) over IP, IPv4 (RFC 791, RFC 1071 checksum),
 * IPv6 (RFC 8200, extension headers walked per RFC 7045/6564, AH per
 * RFC 4302) and ARP (RFC 826).
 *
 * No allocation, no writes to the packet, explicit lengths.  The parser fills
 * struct ep_meta and returns 0 or an enum ep_drop_reason; it never decides
 * about forwarding (TTL, hop limit, addresses), so pipelines that terminate
 * traffic reuse it unchanged.
 *
 * Two lengths are passed: @p seg_len, the bytes readable at @p p (the first
 * mbuf segment: every header must lie inside it), and @p frame_len, the whole
 * frame (pkt_len: what the IPv4 total length and IPv6 payload length are
 * checked against).  For a single-segment mbuf they are equal.
 *
 * Cost: the router's parse stage, which is this parser plus a MAC compare
 * and prefetches, measures ~26 cycles per 64-byte IPv4/UDP frame
 * (test_router_cycles); the header checksum verification is two 64-bit and
 * one 32-bit load and five adds.  The extension-header walk is out of line
 * since most traffic has none.
 */
#ifndef EP_PARSE_H
#define EP_PARSE_H

#include <stdint.h>
#include <string.h>
#include <rte_byteorder.h>
#include <rte_branch_prediction.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_arp.h>

#include "ep_drop.h"
#include "ep_meta.h"

/** Extension headers walked before EP_DROP_IPV6_EXT_TOO_MANY. */
#ifndef EP_PARSE_IPV6_EXT_MAX
#define EP_PARSE_IPV6_EXT_MAX 8
#endif

#define EP_ETHER_TYPE_QINQ_9100 0x9100  /**< pre-802.1ad S-tag TPID still seen in the field */

/** Labels walked before EP_DROP_MPLS_UNSUPPORTED. */
#ifndef EP_PARSE_MPLS_MAX
#define EP_PARSE_MPLS_MAX 4
#endif

/** ep_parse_frame_opts flags (compile-time constants: the branch folds away). */
#define EP_PARSE_F_MPLS 0x1u    /**< accept MPLS unicast (0x8847) with IP under the stack */

static __rte_always_inline int
ep_ether_type_is_vlan(uint16_t et)
{
	return et == RTE_ETHER_TYPE_VLAN || et == RTE_ETHER_TYPE_QINQ ||
	       et == EP_ETHER_TYPE_QINQ_9100;
}

/**
 * Layer 2: Ethernet and up to two VLAN tags.  Sets l3_off, n_vlans,
 * vlan_tci[] and stores the inner EtherType (host order) in @p ether_type.
 * Returns 0, EP_DROP_L2_TRUNCATED or EP_DROP_VLAN_TOO_MANY.
 */
static __rte_always_inline int
ep_parse_l2(const uint8_t *p, uint32_t seg_len, struct ep_meta *m, uint16_t *ether_type)
{
	uint32_t off = sizeof(struct rte_ether_hdr);
	uint16_t et;

	if (unlikely(seg_len < off))
		return EP_DROP_L2_TRUNCATED;
	/* struct rte_ether_hdr is 2-byte aligned; frames may not be: load bytes. */
	et = (uint16_t)(p[12] << 8 | p[13]);
	m->n_vlans = 0;
	/* Any of the three TPIDs is accepted in either position (0x9100 is in
	 * practice only an outer tag, but nothing breaks if it is inner). */
	while (unlikely(ep_ether_type_is_vlan(et))) {
		const struct rte_vlan_hdr *v = (const struct rte_vlan_hdr *)(p + off);

		if (m->n_vlans == 2)
			return EP_DROP_VLAN_TOO_MANY;
		if (seg_len < off + sizeof(*v))
			return EP_DROP_L2_TRUNCATED;
		m->vlan_tci[m->n_vlans++] = rte_be_to_cpu_16(v->vlan_tci);
		et = rte_be_to_cpu_16(v->eth_proto);
		off += sizeof(*v);
	}
	m->l3_off = (uint16_t)off;
	*ether_type = et;
	return 0;
}

/**
 * An MPLS label stack (RFC 3032 section 2.1: label, TC, S, TTL per 4-byte
 * entry) starting at m->l3_off, walked to the bottom-of-stack entry; the
 * payload's first nibble names it (RFC 4928: 4 IPv4, 6 IPv6).  Sets l3_off
 * past the stack, EP_META_F_MPLS, and the payload's EtherType in
 * @p ether_type.  Returns 0, EP_DROP_L2_TRUNCATED, or EP_DROP_MPLS_UNSUPPORTED
 * (deeper than EP_PARSE_MPLS_MAX, or not IP under the stack).
 */
static __rte_always_inline int
ep_parse_mpls(const uint8_t *p, uint32_t seg_len, struct ep_meta *m, uint16_t *ether_type)
{
	uint32_t off = m->l3_off;

	for (int k = 0; k < EP_PARSE_MPLS_MAX; k++, off += 4) {
		if (off + 4 + 1 > seg_len)
			return EP_DROP_L2_TRUNCATED;
		if (!(p[off + 2] & 1))
			continue;                       /* not the bottom of the stack */
		m->l3_off = (uint16_t)(off + 4);
		m->flags |= EP_META_F_MPLS;
		switch (p[off + 4] >> 4) {
		case 4: *ether_type = RTE_ETHER_TYPE_IPV4; return 0;
		case 6: *ether_type = RTE_ETHER_TYPE_IPV6; return 0;
		default: return EP_DROP_MPLS_UNSUPPORTED;
		}
	}
	return EP_DROP_MPLS_UNSUPPORTED;
}

/** Minimum L4 header the parser requires before it sets EP_META_F_HAS_L4,
 *  by IP protocol number: TCP 20, UDP 8, ICMP 8 (type, code, checksum, id/seq
 *  or unused word), ICMPv6 4 (type, code, checksum; the message body
 *  varies), 0 for the rest (ep_parse.c).  A table: one load where the
 *  switch it replaced was four compares and two branches per packet. */
extern const uint8_t ep_parse_l4_min_len[256];

static __rte_always_inline uint32_t
ep_parse_l4_min(uint8_t proto)
{
	return ep_parse_l4_min_len[proto];
}

/*
 * L4 presence: for TCP/UDP/ICMP/ICMPv6 the header must fit inside the L3
 * payload the header claims (tiny first fragments, RFC 1858, are dropped);
 * other protocols are passed with HAS_L4 clear.
 */
static __rte_always_inline int
ep_parse_l4(struct ep_meta *m, uint32_t l4_off, uint32_t l3_end)
{
	uint32_t need = ep_parse_l4_min(m->l4_proto);

	m->l4_off = (uint16_t)l4_off;
	if (need == 0)
		return 0;
	if (unlikely(l4_off + need > l3_end))
		return EP_DROP_L4_TRUNCATED;
	m->flags |= EP_META_F_HAS_L4;
	return 0;
}

/**
 * IPv4 header checksum check over @p len bytes (multiple of 4, >= 20): the
 * RFC 1071 sum of the header including its checksum field folds to 0xffff.
 * The common 20-byte header is two 64-bit loads and one 32-bit load, summed
 * as five 32-bit words in a 64-bit accumulator (one's complement sums are
 * word-size and byte-order neutral, RFC 1071 2.(B),(C)), checked as a
 * multiple of 0xffff: about 6 cycles against ~20 for rte_raw_cksum's
 * 16-bit loop.  (A memcpy of the header into
 * a uint32_t[5] made the compiler copy it through the stack with a 16-byte
 * store and reload it as 4-byte words, which stalled on store forwarding.)
 * Headers with options take rte_raw_cksum.
 */
static __rte_always_inline int
ep_ipv4_cksum_ok(const void *hdr, uint32_t len)
{
	if (likely(len == 20)) {
		const uint8_t *h = (const uint8_t *)hdr;
		uint64_t q0, q1, s;
		uint32_t d;

		memcpy(&q0, h, 8);
		memcpy(&q1, h + 8, 8);
		memcpy(&d, h + 16, 4);
		s = (q0 & 0xffffffff) + (q0 >> 32) + (q1 & 0xffffffff) + (q1 >> 32) + d;
		/* Folding to 16 bits with end-around carries keeps the value
		 * modulo 0xffff (2^16 = 1 mod 0xffff) and gives 0xffff for a
		 * non-zero multiple of it: so the fold is 0xffff exactly when s
		 * is a non-zero multiple of 0xffff (in either byte order: 256 is
		 * invertible mod 0xffff).  The compiler tests divisibility by a
		 * constant with one multiply and one compare, against four
		 * dependent shift-mask-add folds. */
		return s != 0 && s % 0xffff == 0;
	}
	return rte_raw_cksum(hdr, len) == 0xffff;
}

static __rte_always_inline int
ep_parse_ipv4(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	uint32_t off = m->l3_off;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + off);
	uint32_t hlen, tlen;
	uint16_t frag;

	m->l3_type = EP_L3_IPV4;
	if (unlikely(seg_len < off + sizeof(*ip)))
		return EP_DROP_IPV4_TRUNCATED;
	if (unlikely((ip->version_ihl >> 4) != 4))
		return EP_DROP_IPV4_BAD_VERSION;
	hlen = (uint32_t)(ip->version_ihl & 0x0f) * 4;
	if (unlikely(hlen < sizeof(*ip) || off + hlen > seg_len))
		return EP_DROP_IPV4_BAD_IHL;
	tlen = rte_be_to_cpu_16(ip->total_length);
	if (unlikely(tlen < hlen || off + tlen > frame_len))
		return EP_DROP_IPV4_BAD_TOTAL_LENGTH;
	if (unlikely(!ep_ipv4_cksum_ok(ip, hlen)))
		return EP_DROP_IPV4_BAD_CHECKSUM;
	m->l3_len = (uint16_t)tlen;
	m->l4_proto = ip->next_proto_id;
	frag = rte_be_to_cpu_16(ip->fragment_offset);
	if (unlikely(frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))) {
		m->flags |= EP_META_F_FRAGMENT;
		if (frag & RTE_IPV4_HDR_OFFSET_MASK) {
			/* Non-first fragment: no L4 header here. */
			m->l4_off = (uint16_t)(off + hlen);
			return 0;
		}
	}
	/* Headers must be contiguous: the L4 header is checked against the
	 * first segment too. */
	return ep_parse_l4(m, off + hlen, RTE_MIN(off + tlen, seg_len));
}

/** Out of line: walk IPv6 extension headers starting at @p nh (see ep_parse.c). */
int ep_parse_ipv6_ext(const uint8_t *p, uint32_t l3_end, uint32_t off, uint8_t nh,
		      struct ep_meta *m);

/** True for Next Header values the walk treats as extension headers. */
static __rte_always_inline int
ep_ipv6_is_ext(uint8_t nh)
{
	switch (nh) {
	case IPPROTO_HOPOPTS: case IPPROTO_ROUTING: case IPPROTO_FRAGMENT:
	case IPPROTO_DSTOPTS: case IPPROTO_AH:
	case 135 /* Mobility */: case 139 /* HIP */: case 140 /* Shim6 */:
		return 1;
	default:
		return 0;
	}
}

static __rte_always_inline int
ep_parse_ipv6(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	uint32_t off = m->l3_off;
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + off);
	uint32_t plen, l3_end;

	m->l3_type = EP_L3_IPV6;
	if (unlikely(seg_len < off + sizeof(*ip)))
		return EP_DROP_IPV6_TRUNCATED;
	if (unlikely((*(const uint8_t *)ip >> 4) != 6))
		return EP_DROP_IPV6_BAD_VERSION;
	plen = rte_be_to_cpu_16(ip->payload_len);
	/* Payload length 0 with a hop-by-hop header is a jumbogram (RFC 2675):
	 * never on Ethernet.  Trailing Ethernet padding past the payload is fine. */
	if (unlikely(off + sizeof(*ip) + plen > frame_len ||
		     (plen == 0 && ip->proto == IPPROTO_HOPOPTS)))
		return EP_DROP_IPV6_BAD_PAYLOAD_LENGTH;
	m->l3_len = (uint16_t)(sizeof(*ip) + plen);
	l3_end = RTE_MIN(off + (uint32_t)sizeof(*ip) + plen, seg_len);
	if (unlikely(ep_ipv6_is_ext(ip->proto)))
		return ep_parse_ipv6_ext(p, l3_end, off + sizeof(*ip), ip->proto, m);
	m->l4_proto = ip->proto;
	return ep_parse_l4(m, off + sizeof(*ip), l3_end);
}

/** ARP: Ethernet/IPv4 only (htype 1, ptype 0x0800, hlen 6, plen 4). */
static __rte_always_inline int
ep_parse_arp(const uint8_t *p, uint32_t seg_len, struct ep_meta *m)
{
	const struct rte_arp_hdr *a = (const struct rte_arp_hdr *)(p + m->l3_off);

	m->l3_type = EP_L3_ARP;
	if (unlikely(seg_len < m->l3_off + sizeof(*a)))
		return EP_DROP_ARP_MALFORMED;
	if (unlikely(a->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
		     a->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
		     a->arp_hlen != RTE_ETHER_ADDR_LEN || a->arp_plen != 4))
		return EP_DROP_ARP_MALFORMED;
	m->l3_len = sizeof(*a);
	m->l4_off = (uint16_t)(m->l3_off + sizeof(*a));
	return 0;
}

/** The MPLS label stack at m->l3_off and the IP packet under it. */
static __rte_noinline int
ep_parse_mpls_ip(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	uint16_t et;
	int rc = ep_parse_mpls(p, seg_len, m, &et);

	if (rc != 0)
		return rc;
	return et == RTE_ETHER_TYPE_IPV4 ? ep_parse_ipv4(p, seg_len, frame_len, m) :
					   ep_parse_ipv6(p, seg_len, frame_len, m);
}

/**
 * Parse a whole frame: L2 (and, with EP_PARSE_F_MPLS, a label stack), then
 * IPv4, IPv6 or ARP.  Clears and fills every parsed field of @p m except
 * in_port, nexthop and user.  Other EtherTypes return
 * EP_DROP_ETHERTYPE_UNSUPPORTED with l3_off and l3_type (NONE) set, so a
 * pipeline with its own L3 (PPPoE) can call ep_parse_l2() instead.
 * @p flags is a constant (EP_PARSE_F_*): what a pipeline does not accept
 * costs nothing.
 * @return 0 or an enum ep_drop_reason.
 */
static __rte_always_inline int
ep_parse_frame_opts(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m,
		    const unsigned int flags)
{
	uint16_t et;
	int rc;

	m->flags = 0;
	m->l3_type = EP_L3_NONE;
	m->l4_proto = 0;
	m->l3_len = 0;
	m->l4_off = 0;
	if (unlikely(frame_len < seg_len))
		seg_len = frame_len;
	rc = ep_parse_l2(p, seg_len, m, &et);
	if (unlikely(rc != 0))
		return rc;
	if (likely(et == RTE_ETHER_TYPE_IPV4))
		return ep_parse_ipv4(p, seg_len, frame_len, m);
	if (likely(et == RTE_ETHER_TYPE_IPV6))
		return ep_parse_ipv6(p, seg_len, frame_len, m);
	if (et == RTE_ETHER_TYPE_ARP)
		return ep_parse_arp(p, seg_len, m);
	/* Last, and out of line: IP frames pay nothing for it (a call on
	 * their path made the compiler keep more registers: +3 cycles). */
	if ((flags & EP_PARSE_F_MPLS) && et == RTE_ETHER_TYPE_MPLS)
		return ep_parse_mpls_ip(p, seg_len, frame_len, m);
	return EP_DROP_ETHERTYPE_UNSUPPORTED;
}

/**
 * The commonest frame in one go: untagged IPv4 without options, not a
 * fragment, total length inside the frame, checksum right, and for TCP,
 * UDP, ICMP (and ICMPv6 numbered in IPv4) the L4 header inside the packet.
 * Returns 0 with @p m filled exactly as ep_parse_frame() fills it, or -1
 * with @p m untouched for every other frame (tags, options, fragments,
 * IPv6, ARP, MPLS, anything malformed): the caller then runs the full
 * parse, which names the drop reason.
 *
 * Why a second path: the full parse takes a branch per header field and
 * writes each ep_meta field twice (cleared, then set); this one reads the
 * few fields it needs, folds every test into one branch and writes
 * ep_meta once.  test_parse checks it against ep_parse on mutated frames.
 */
static __rte_always_inline int
ep_parse_ipv4_plain_after(const uint8_t *p, const uint32_t l3, uint32_t seg_len,
			  uint32_t frame_len, struct ep_meta *m, const uint16_t et_want);

static __rte_always_inline int
ep_parse_ipv4_plain_at(const uint8_t *p, const uint32_t l3, uint32_t seg_len, uint32_t frame_len,
		       struct ep_meta *m)
{
	return ep_parse_ipv4_plain_after(p, l3, seg_len, frame_len, m,
					 RTE_BE16(RTE_ETHER_TYPE_IPV4));
}

/**
 * ep_parse_ipv4_plain_at with the two bytes before the IP header compared
 * with @p et_want (network order) instead of the IPv4 EtherType: the PPP
 * protocol field of a PPPoE session frame (0x0021), for the vBNG's access
 * parse.
 */
static __rte_always_inline int
ep_parse_ipv4_plain_after(const uint8_t *p, const uint32_t l3, uint32_t seg_len,
			  uint32_t frame_len, struct ep_meta *m, const uint16_t et_want)
{
	const uint32_t l4 = l3 + sizeof(struct rte_ipv4_hdr);
	uint16_t et, tlen, frag;
	uint32_t need, l3_end;
	uint8_t proto;
	int bad;

	if (unlikely(frame_len < seg_len))
		seg_len = frame_len;
	if (unlikely(seg_len < l4))
		return -1;
	memcpy(&et, p + l3 - 2, 2);
	memcpy(&tlen, p + l3 + 2, 2);
	memcpy(&frag, p + l3 + 6, 2);
	tlen = rte_be_to_cpu_16(tlen);
	proto = p[l3 + 9];
	need = ep_parse_l4_min(proto);
	l3_end = RTE_MIN(l3 + tlen, seg_len);
	bad = (et != et_want) | (p[l3] != 0x45) |
	      ((frag & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0) |
	      (tlen < sizeof(struct rte_ipv4_hdr)) | (l3 + tlen > frame_len) |
	      (l4 + need > l3_end);
	if (unlikely(bad) || unlikely(!ep_ipv4_cksum_ok(p + l3, sizeof(struct rte_ipv4_hdr))))
		return -1;
	m->l3_off = (uint16_t)l3;
	m->l4_off = (uint16_t)l4;
	m->l3_len = tlen;
	m->l3_type = EP_L3_IPV4;
	m->l4_proto = proto;
	m->flags = need != 0 ? EP_META_F_HAS_L4 : 0;
	return 0;
}

static __rte_always_inline int
ep_parse_ipv4_plain(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	if (ep_parse_ipv4_plain_at(p, RTE_ETHER_HDR_LEN, seg_len, frame_len, m) != 0)
		return -1;
	m->n_vlans = 0;
	return 0;
}

/**
 * ep_parse_ipv4_plain for a frame with two VLAN tags (any of the TPIDs
 * ep_parse_l2 accepts, in either position): an access line's QinQ frame,
 * the vBNG uplink's commonest.  Returns 0 with @p m filled as
 * ep_parse_frame() fills it (both TCIs, n_vlans 2), or -1 with @p m
 * untouched.  test_parse checks it against ep_parse on mutated frames.
 */
static __rte_always_inline int
ep_parse_qinq_ipv4_plain(const uint8_t *p, uint32_t seg_len, uint32_t frame_len,
			 struct ep_meta *m)
{
	const uint32_t l3 = RTE_ETHER_HDR_LEN + 2 * sizeof(struct rte_vlan_hdr);

	/* The inner EtherType first: a PPPoE session frame on a QinQ line
	 * leaves here after one compare (the whole IPv4 check on it cost
	 * the uplink's PPPoE parse ~46 instructions a packet). */
	if (unlikely(RTE_MIN(seg_len, frame_len) < l3) ||
	    (uint16_t)(p[20] << 8 | p[21]) != RTE_ETHER_TYPE_IPV4 ||
	    unlikely(!ep_ether_type_is_vlan((uint16_t)(p[12] << 8 | p[13]))) ||
	    unlikely(!ep_ether_type_is_vlan((uint16_t)(p[16] << 8 | p[17]))) ||
	    ep_parse_ipv4_plain_at(p, l3, seg_len, frame_len, m) != 0)
		return -1;
	m->n_vlans = 2;
	m->vlan_tci[0] = (uint16_t)(p[14] << 8 | p[15]);
	m->vlan_tci[1] = (uint16_t)(p[18] << 8 | p[19]);
	return 0;
}

/** ep_parse_frame_opts without options: what a router accepts. */
static __rte_always_inline int
ep_parse_frame(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	return ep_parse_frame_opts(p, seg_len, frame_len, m, 0);
}

/** ep_parse_frame_opts() on an mbuf's first segment. */
static __rte_always_inline int
ep_parse_mbuf_opts(struct rte_mbuf *mb, struct ep_meta *m, const unsigned int flags)
{
	return ep_parse_frame_opts(rte_pktmbuf_mtod(mb, const uint8_t *),
				   rte_pktmbuf_data_len(mb), rte_pktmbuf_pkt_len(mb), m, flags);
}

/** ep_parse_frame() on an mbuf's first segment. */
static __rte_always_inline int
ep_parse_mbuf(struct rte_mbuf *mb, struct ep_meta *m)
{
	return ep_parse_mbuf_opts(mb, m, 0);
}

/** Out-of-line ep_parse_frame_opts() for slow paths, tests and the fuzzer. */
int ep_parse(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m);
int ep_parse_opts(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m,
		  unsigned int flags);

#endif
