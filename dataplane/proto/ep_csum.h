/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Internet checksum helpers that DPDK's rte_ip.h does not provide.
 *
 * Incremental update per RFC 1624 (eqn. 3): when a 16-bit word of a
 * checksummed region changes from m to m', the checksum HC becomes
 *
 *     HC' = ~(~HC + ~m + m')
 *
 * in one's complement arithmetic.  Unlike RFC 1141's HC + m - m', this never
 * produces 0x0000 from a non-zero sum (the -0 problem), so a TTL decrement
 * gives exactly what a full recomputation (rte_ipv4_cksum) gives.  Cost: four
 * adds and two folds, against ~10 loads for the full 20-byte header.
 */
#ifndef EP_CSUM_H
#define EP_CSUM_H

#include <stdint.h>
#include <string.h>
#include <rte_byteorder.h>
#include <rte_ip.h>

/** RFC 1624 update of a checksum (network order) for one 16-bit word
 *  changing from @p old_w to @p new_w (both network order). */
static inline uint16_t
ep_csum_update16(uint16_t cksum, uint16_t old_w, uint16_t new_w)
{
	uint32_t s = (uint32_t)(uint16_t)~cksum + (uint16_t)~old_w + new_w;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
/**
 * The same decrement on the header's bytes 8-11 (TTL, protocol, checksum)
 * loaded as one little-endian word @p w: TTL in bits 0-7, the checksum as
 * stored in bits 16-31.  TTL - 1 is w - 1 (no borrow past the TTL byte:
 * TTL > 1); the checksum's + 0x0100 in network order is + 1 on the
 * stored halfword, + 0x10000 here, whose carry out of bit 31 drops as the
 * 16-bit add's did, and the end-around carry (stored halfword >= 0xfffe)
 * one more.  One load, one add, a compare and one store for the whole
 * update, where two halfword loads and their merge cost ~6 instructions
 * more (the vBNG uplink's encap: docs/benchmarks/bng-passes.md,
 * "Thirteenth pass, continued").
 */
static __rte_always_inline uint32_t
ep_ipv4_ttl_word_dec(uint32_t w)
{
	return w + 0xffffu + (w >= 0xfffe0000u ? 0x10000u : 0);
}
#endif

/**
 * Decrement the IPv4 TTL and update the header checksum incrementally.
 * The TTL shares a 16-bit word with the protocol: read in network order,
 * the word is ttl << 8 | proto, so the new word is the old one minus 0x0100
 * (no borrow: the caller checked TTL > 1).  The word is computed in a
 * register and stored once.  Storing the TTL byte and then reloading the
 * word it belongs to for the checksum would be a narrow store followed by a
 * wider overlapping load, which store-to-load forwarding cannot serve: that
 * stall was ~20 cycles per packet, most of the rewrite stage's own cost.
 *
 * The checksum: RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), where for this
 * change ~m + m' is the one's complement of 0x0100 whatever the word
 * was, so HC' = HC + 0x0100 with the end-around carry: one add and one
 * compare-and-add (as Linux's ip_decrease_ttl does) instead of the
 * general update's two complements, three adds and two folds.  It equals
 * ep_csum_update16() for every checksum value (test_proto checks all
 * 65536); the router's rewrite measured 9.3-9.4 -> 8.6-8.7 cycles a
 * packet (test_router_cycles minima, three alternated runs of each).
 */
static __rte_always_inline void
ep_ipv4_ttl_dec(struct rte_ipv4_hdr *ip)
{
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	uint32_t w;

	memcpy(&w, &ip->time_to_live, 4);
	w = ep_ipv4_ttl_word_dec(w);
	memcpy(&ip->time_to_live, &w, 4);
#else
	uint16_t w;
	uint32_t s;

	memcpy(&w, &ip->time_to_live, 2);
	w = (uint16_t)(w - RTE_BE16(0x0100));
	memcpy(&ip->time_to_live, &w, 2);
	s = (uint32_t)ip->hdr_checksum + RTE_BE16(0x0100);
	ip->hdr_checksum = (uint16_t)(s + (s >= 0xffff));
#endif
}

/**
 * Checksum (network order, complemented, ready to store) of an upper-layer
 * message in IPv6 (RFC 8200 section 8.1): pseudo-header of source,
 * destination, upper-layer length and next header, then @p len bytes at
 * @p l4 with the message's checksum field included as it is.  Unlike
 * rte_ipv6_udptcp_cksum it takes the upper-layer length and protocol
 * explicitly, so it is right after extension headers too.  To verify, call
 * it on the received message: the result is 0 when the checksum is correct.
 */
static inline uint16_t
ep_ipv6_l4_cksum(const struct rte_ipv6_hdr *ip, const void *l4, uint32_t len, uint8_t proto)
{
	uint32_t sum;
	uint32_t plen_be = rte_cpu_to_be_32(len);
	uint32_t proto_be = rte_cpu_to_be_32(proto);

	sum = __rte_raw_cksum(ip->src_addr, 32, 0);
	sum = __rte_raw_cksum(&plen_be, 4, sum);
	sum = __rte_raw_cksum(&proto_be, 4, sum);
	sum = __rte_raw_cksum(l4, len, sum);
	return (uint16_t)~__rte_raw_cksum_reduce(sum);
}

/** One's complement checksum (network order, complemented) of @p len bytes:
 *  ICMPv4 messages and IPv4 headers with their checksum field zeroed. */
static inline uint16_t
ep_csum(const void *p, uint32_t len)
{
	return (uint16_t)~rte_raw_cksum(p, len);
}

#endif
