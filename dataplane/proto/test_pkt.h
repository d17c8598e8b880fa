/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Crafted frames for the unit tests, the fuzz seed corpus and the stage
 * benchmarks: Ethernet, 0-2 VLAN tags, IPv4 or IPv6 (with raw extension
 * headers), TCP/UDP/ICMP/ICMPv6, every checksum correct.  Tests then break
 * exactly the field a case is about.  Header-only: no allocation.
 */
#ifndef EP_TEST_PKT_H
#define EP_TEST_PKT_H

#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_udp.h>
#include <rte_icmp.h>
#include <rte_arp.h>

#include "ep_csum.h"

struct tp_spec {
	uint8_t dmac[6], smac[6];
	int n_vlans;
	uint16_t tpid[2], vid[2];
	int v6;                       /**< 0: IPv4, 1: IPv6 */
	uint32_t src4, dst4;          /**< host order */
	uint8_t src6[16], dst6[16];
	uint8_t proto;                /**< IPPROTO_UDP, _TCP, _ICMP, _ICMPV6, other */
	uint8_t ttl;                  /**< TTL / hop limit */
	uint16_t sport, dport;        /**< TCP/UDP ports; ICMP: id, seq */
	uint8_t icmp_type, icmp_code;
	uint16_t payload;             /**< bytes after the L4 header */
	const uint8_t *ext;           /**< IPv6 extension headers, already chained */
	uint16_t ext_len;
	uint8_t ext_first;            /**< Next Header of the IPv6 header when ext_len != 0 */
	uint16_t frag;                /**< IPv4 fragment_offset field, host order */
};

static inline void
tp_ip6(uint8_t *a, const char *s)
{
	if (inet_pton(AF_INET6, s, a) != 1)
		memset(a, 0xee, 16);
}

static inline uint32_t
tp_ip4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return 0xeeeeeeee;
	return ntohl(a.s_addr);
}

static inline struct tp_spec
tp_default(int v6, uint8_t proto)
{
	struct tp_spec s = {
		.dmac = {0x02, 0, 0, 0, 0x01, 0x01}, .smac = {0x02, 0, 0, 0, 0, 0x0a},
		.v6 = v6, .proto = proto, .ttl = 64, .sport = 1234, .dport = 80,
		.icmp_type = v6 ? 128 : RTE_IP_ICMP_ECHO_REQUEST, .payload = 18,
		.tpid = {RTE_ETHER_TYPE_VLAN, RTE_ETHER_TYPE_VLAN}, .vid = {100, 200},
	};
	s.src4 = tp_ip4("198.18.0.2");
	s.dst4 = tp_ip4("198.18.1.2");
	tp_ip6(s.src6, "2001:db8:0:1::2");
	tp_ip6(s.dst6, "2001:db8:0:2::2");
	return s;
}

static inline uint16_t
tp_l4_len(const struct tp_spec *s)
{
	switch (s->proto) {
	case IPPROTO_TCP: return 20;
	case IPPROTO_UDP: return 8;
	case IPPROTO_ICMP: case IPPROTO_ICMPV6: return 8;
	default: return 0;
	}
}

/** Build the frame into @p b (room for 2048 bytes); returns its length. */
static inline uint16_t
tp_build(uint8_t *b, const struct tp_spec *s)
{
	uint16_t off = 12, l3, l4, l4len = tp_l4_len(s), et;

	memcpy(b, s->dmac, 6);
	memcpy(b + 6, s->smac, 6);
	for (int i = 0; i < s->n_vlans; i++) {
		b[off] = (uint8_t)(s->tpid[i] >> 8);
		b[off + 1] = (uint8_t)s->tpid[i];
		b[off + 2] = (uint8_t)(s->vid[i] >> 8);
		b[off + 3] = (uint8_t)s->vid[i];
		off += 4;
	}
	et = s->v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4;
	b[off] = (uint8_t)(et >> 8);
	b[off + 1] = (uint8_t)et;
	l3 = (uint16_t)(off + 2);
	if (s->v6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(b + l3);

		ip->vtc_flow = htonl(6u << 28);
		ip->payload_len = htons((uint16_t)(s->ext_len + l4len + s->payload));
		ip->proto = s->ext_len ? s->ext_first : s->proto;
		ip->hop_limits = s->ttl;
		memcpy(ip->src_addr, s->src6, 16);
		memcpy(ip->dst_addr, s->dst6, 16);
		if (s->ext_len != 0)
			memcpy(b + l3 + 40, s->ext, s->ext_len);
		l4 = (uint16_t)(l3 + 40 + s->ext_len);
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + l3);

		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = 0x45;
		ip->total_length = htons((uint16_t)(20 + l4len + s->payload));
		ip->packet_id = htons(1);
		ip->fragment_offset = htons(s->frag);
		ip->time_to_live = s->ttl;
		ip->next_proto_id = s->proto;
		ip->src_addr = htonl(s->src4);
		ip->dst_addr = htonl(s->dst4);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		l4 = (uint16_t)(l3 + 20);
	}
	memset(b + l4, 0, l4len);
	for (uint16_t i = 0; i < s->payload; i++)
		b[l4 + l4len + i] = (uint8_t)(0x30 + i);
	if (s->proto == IPPROTO_TCP || s->proto == IPPROTO_UDP) {
		b[l4] = (uint8_t)(s->sport >> 8);
		b[l4 + 1] = (uint8_t)s->sport;
		b[l4 + 2] = (uint8_t)(s->dport >> 8);
		b[l4 + 3] = (uint8_t)s->dport;
	}
	if (s->proto == IPPROTO_TCP) {
		b[l4 + 12] = 0x50;
		b[l4 + 13] = 0x02;   /* SYN */
		b[l4 + 15] = 0xff;
	}
	if (s->proto == IPPROTO_UDP) {
		b[l4 + 4] = (uint8_t)((8 + s->payload) >> 8);
		b[l4 + 5] = (uint8_t)(8 + s->payload);
	}
	if (s->proto == IPPROTO_ICMP || s->proto == IPPROTO_ICMPV6) {
		b[l4] = s->icmp_type;
		b[l4 + 1] = s->icmp_code;
		b[l4 + 4] = (uint8_t)(s->sport >> 8);
		b[l4 + 5] = (uint8_t)s->sport;
		b[l4 + 6] = (uint8_t)(s->dport >> 8);
		b[l4 + 7] = (uint8_t)s->dport;
	}
	if (l4len != 0) {
		uint16_t ck, len = (uint16_t)(l4len + s->payload);
		int ck_off = s->proto == IPPROTO_TCP ? 16 : s->proto == IPPROTO_UDP ? 6 : 2;

		if (s->v6)
			ck = ep_ipv6_l4_cksum((struct rte_ipv6_hdr *)(b + l3), b + l4, len, s->proto);
		else if (s->proto == IPPROTO_ICMP)
			ck = ep_csum(b + l4, len);
		else
			ck = rte_ipv4_udptcp_cksum((struct rte_ipv4_hdr *)(b + l3), b + l4);
		if (s->proto == IPPROTO_UDP && ck == 0)
			ck = 0xffff;
		memcpy(b + l4 + ck_off, &ck, 2);
	}
	return (uint16_t)(l4 + l4len + s->payload);
}

/** Recompute the IPv4 header checksum after a test edited the header. */
static inline void
tp_fix_ipv4_cksum(uint8_t *b, uint16_t l3)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + l3);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/** ARP frame: @p op (1 request, 2 reply), sender/target IPv4 (host order). */
static inline uint16_t
tp_arp(uint8_t *b, const uint8_t *smac, uint16_t op, uint32_t sip, uint32_t tip)
{
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(b + 14);

	memset(b, 0xff, 6);
	memcpy(b + 6, smac, 6);
	b[12] = 0x08;
	b[13] = 0x06;
	a->arp_hardware = htons(RTE_ARP_HRD_ETHER);
	a->arp_protocol = htons(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = htons(op);
	memcpy(&a->arp_data.arp_sha, smac, 6);
	a->arp_data.arp_sip = htonl(sip);
	memset(&a->arp_data.arp_tha, 0, 6);
	a->arp_data.arp_tip = htonl(tip);
	memset(b + 42, 0, 18);   /* Ethernet padding to 60 bytes */
	return 60;
}

/**
 * Neighbour solicitation (RFC 4861 4.3) for @p target from @p src (NULL:
 * unspecified, a DAD probe) to the target's solicited-node multicast group,
 * with a source link-layer address option unless the source is unspecified.
 */
static inline uint16_t
tp_ns(uint8_t *b, const uint8_t *smac, const uint8_t *src, const uint8_t *target)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(b + 14);
	uint8_t *icmp = b + 54;
	uint16_t len = src != NULL ? 32 : 24, ck;
	static const uint8_t snm[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};

	b[0] = 0x33; b[1] = 0x33; b[2] = 0xff;
	b[3] = target[13]; b[4] = target[14]; b[5] = target[15];
	memcpy(b + 6, smac, 6);
	b[12] = 0x86;
	b[13] = 0xdd;
	ip->vtc_flow = htonl(6u << 28);
	ip->payload_len = htons(len);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	if (src != NULL)
		memcpy(ip->src_addr, src, 16);
	else
		memset(ip->src_addr, 0, 16);
	memcpy(ip->dst_addr, snm, 13);
	memcpy(ip->dst_addr + 13, target + 13, 3);
	memset(icmp, 0, len);
	icmp[0] = 135;
	memcpy(icmp + 8, target, 16);
	if (src != NULL) {
		icmp[24] = 1;   /* source link-layer address */
		icmp[25] = 1;
		memcpy(icmp + 26, smac, 6);
	}
	ck = ep_ipv6_l4_cksum(ip, icmp, len, IPPROTO_ICMPV6);
	memcpy(icmp + 2, &ck, 2);
	return (uint16_t)(54 + len);
}

/** The next value of the xorshift64 generator in @p x (Marsaglia,
 *  "Xorshift RNGs"): the tests' reproducible mutations. */
static inline uint64_t
tp_next(uint64_t *x)
{
	uint64_t v = *x;

	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	*x = v;
	return v;
}

/**
 * One xorshift64 step of @p x, then a mutation of the frame @p b of @p len
 * octets whose IPv4 header starts at @p l3, for tests that hold a fast
 * path against its reference parse: as built (3 in 8), a bit flipped in
 * octets 12 .. 12 + @p span (EtherTypes, tags, the IP header), an octet
 * of the IPv4 header replaced, the first segment (*seg) or the frame
 * (*frame) cut short, or the IPv4 total length replaced.  *seg and
 * *frame are set to @p len first.
 */
static inline void
tp_mutate(uint8_t *b, uint16_t len, unsigned int l3, unsigned int span, uint64_t *x,
	  uint32_t *seg, uint32_t *frame)
{
	uint64_t v = tp_next(x);

	*seg = *frame = len;
	switch (v % 8) {
	case 0: case 1: case 2:
		break;                                  /* as built */
	case 3:
		b[12 + (v >> 8) % span] ^= (uint8_t)(1u << (v >> 16) % 8);
		break;
	case 4:
		b[l3 + (v >> 8) % 20] = (uint8_t)(v >> 24);
		break;
	case 5:
		*seg = (uint32_t)((v >> 8) % (len + 1u));
		break;
	case 6:
		*frame = (uint32_t)((v >> 8) % (len + 1u));
		break;
	default:
		b[l3 + 2] = (uint8_t)(v >> 8);          /* total length */
		b[l3 + 3] = (uint8_t)(v >> 16);
		break;
	}
}

#endif
