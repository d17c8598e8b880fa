/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-packet IP helpers every forwarding pipeline needs, written once:
 *
 *   ep_ip_ttl_dec      RFC 1812 section 5.3.1 / RFC 8200 section 3: a packet
 *                      whose TTL (hop limit) is 0 or 1 is not forwarded;
 *                      otherwise it is decremented (IPv4 checksum updated
 *                      incrementally, RFC 1624)
 *   ep_ip_dscp,        the DSCP (RFC 2474) of an IPv4 TOS byte or an IPv6
 *   ep_ip_set_dscp     traffic class; the setter keeps the ECN bits
 *                      (RFC 3168) and updates the IPv4 checksum
 *   ep_ipv4_martian,   addresses a router never forwards (RFC 1812 5.3.7,
 *   ep_ipv6_martian    RFC 3927; RFC 4291 2.5.6)
 *   ep_prefix_set      up to four IPv4 ranges and one IPv6 prefix in one
 *                      cache line, and the check that an address lies in
 *                      one of them: a subscriber's anti-spoofing and
 *                      reverse-path rules, a cable modem's CPE set
 *
 * All take the L3 header as bytes (@p l3) and its type (enum ep_l3_type),
 * as ep_meta gives them.  No allocation, no branches beyond the family.
 */
#ifndef EP_IP_H
#define EP_IP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include "ep_csum.h"
#include "ep_drop.h"
#include "ep_meta.h"

/**
 * TTL / hop limit check and decrement of a packet being forwarded.
 * @return 0 (decremented) or EP_DROP_IPV4_TTL_EXPIRED /
 *         EP_DROP_IPV6_HOP_LIMIT_EXPIRED (unchanged: the caller drops it,
 *         or answers with time exceeded, RFC 792 / RFC 4443 section 3.3).
 */
static __rte_always_inline int
ep_ip_ttl_dec(uint8_t *l3, uint8_t l3_type)
{
	if (l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		if (unlikely(ip->time_to_live <= 1))
			return EP_DROP_IPV4_TTL_EXPIRED;
		ep_ipv4_ttl_dec(ip);    /* one 32-bit load and store (ep_csum.h) */
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)l3;

		if (unlikely(ip->hop_limits <= 1))
			return EP_DROP_IPV6_HOP_LIMIT_EXPIRED;
		ip->hop_limits--;
	}
	return 0;
}

/** The TTL or hop limit (after ep_ip_ttl_dec: the one the packet leaves with). */
static __rte_always_inline uint8_t
ep_ip_ttl(const uint8_t *l3, uint8_t l3_type)
{
	return l3_type == EP_L3_IPV4 ? l3[8] : l3[7];
}

/** DSCP: IPv4 TOS bits 7..2; IPv6 traffic class bits 7..2, which straddle
 *  the first two bytes (vvvv TTTT | TTTT ffff). */
static __rte_always_inline uint8_t
ep_ip_dscp(const uint8_t *l3, uint8_t l3_type)
{
	if (l3_type == EP_L3_IPV4)
		return l3[1] >> 2;
	return (uint8_t)(((l3[0] & 0x0f) << 4 | l3[1] >> 4) >> 2);
}

/** Set the DSCP, keeping ECN; IPv4 checksum by RFC 1624 (one word changes). */
static __rte_always_inline void
ep_ip_set_dscp(uint8_t *l3, uint8_t l3_type, uint8_t dscp)
{
	if (l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
		uint16_t old_w, new_w;

		memcpy(&old_w, l3, 2);
		ip->type_of_service = (uint8_t)(dscp << 2 | (ip->type_of_service & 3));
		memcpy(&new_w, l3, 2);
		ip->hdr_checksum = ep_csum_update16(ip->hdr_checksum, old_w, new_w);
	} else {
		uint8_t tc = (uint8_t)(dscp << 2 | ((l3[1] >> 4) & 3));

		l3[0] = (uint8_t)((l3[0] & 0xf0) | tc >> 4);
		l3[1] = (uint8_t)((l3[1] & 0x0f) | (uint8_t)(tc << 4));
	}
}

/*
 * IPv4 martians (RFC 1812 5.3.7, RFC 3927): never forwarded and never
 * answered.  0/8, 127/8, 169.254/16, 224/4 and above (multicast, reserved,
 * limited broadcast).  Bitwise ors: four compares and no branch, so a caller
 * tests two addresses with one branch.
 */
static __rte_always_inline int
ep_ipv4_martian(uint32_t a /* host order */)
{
	uint8_t top = (uint8_t)(a >> 24);

	return (top == 0) | (top == 127) | (top >= 224) | ((a >> 16) == 0xa9fe);
}

/* IPv6: unspecified, loopback, multicast, link-local (RFC 4291 2.5.6: never
 * forwarded); ::ffff:0:0/96 mapped addresses never appear on the wire. */
static __rte_always_inline int
ep_ipv6_martian(const uint8_t *a)
{
	static const uint8_t zero[10];
	uint32_t w3;

	if (a[0] == 0xff || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80))
		return 1;
	if (a[0] != 0 || memcmp(a, zero, 10) != 0)
		return 0;
	memcpy(&w3, a + 12, 4);
	return (a[10] == 0xff && a[11] == 0xff) ||
	       (a[10] == 0 && a[11] == 0 && (w3 == 0 || w3 == RTE_BE32(1)));
}

#define EP_PREFIX_SET_V4 4

/**
 * Up to EP_PREFIX_SET_V4 IPv4 ranges and one IPv6 prefix, masks and
 * networks in network order: exactly one cache line.  The counts live with
 * whoever owns the set (a subscriber record keeps them in its first line),
 * so the check reads this line and the packet only.
 */
struct ep_prefix_set {
	uint32_t v4_net[EP_PREFIX_SET_V4];  /**< host bits clear */
	uint32_t v4_mask[EP_PREFIX_SET_V4];
	uint64_t v6_net[2], v6_mask[2];     /**< the IPv6 prefix as two words */
};

/** Fill entry @p i of @p s with an IPv4 range (address in network order). */
void ep_prefix_set_v4(struct ep_prefix_set *s, int i, uint32_t addr, uint8_t plen);
/** Set the IPv6 prefix of @p s. */
void ep_prefix_set_v6(struct ep_prefix_set *s, const uint8_t addr[16], uint8_t plen);

/**
 * 1 if the address at byte @p off of the L3 header (12: IPv4 source, 16:
 * IPv4 destination; 8 and 24 for IPv6) is in @p s, else 0.  @p n_v4 ranges
 * are checked (masked compares, or-ed: no early exit, no branch per range).
 */
static __rte_always_inline int
ep_prefix_set_has(const struct ep_prefix_set *s, unsigned int n_v4, bool has_v6,
		  const uint8_t *l3, uint8_t l3_type, const unsigned int v4_off,
		  const unsigned int v6_off)
{
	if (l3_type == EP_L3_IPV4) {
		uint32_t a;
		int ok = 0;

		memcpy(&a, l3 + v4_off, 4);
		for (unsigned int k = 0; k < n_v4; k++)
			ok |= (a & s->v4_mask[k]) == s->v4_net[k];
		return ok;
	} else {
		uint64_t w[2];

		memcpy(w, l3 + v6_off, 16);
		return has_v6 && (w[0] & s->v6_mask[0]) == s->v6_net[0] &&
		       (w[1] & s->v6_mask[1]) == s->v6_net[1];
	}
}

/** The source address is in @p s (anti-spoofing; a reverse-path rule). */
static __rte_always_inline int
ep_prefix_set_has_src(const struct ep_prefix_set *s, unsigned int n_v4, bool has_v6,
		      const uint8_t *l3, uint8_t l3_type)
{
	return ep_prefix_set_has(s, n_v4, has_v6, l3, l3_type, 12, 8);
}

#endif
