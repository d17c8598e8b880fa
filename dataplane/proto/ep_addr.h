/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Addresses as text: IPv4 (RFC 791 dotted quad), IPv6 (RFC 4291 section
 * 2.2 text forms), prefixes "address/length" (RFC 4632 section 3.1, RFC 4291
 * section 2.3) and Ethernet MACs (IEEE 802 "02:00:00:00:00:01"), parsed and
 * formatted in one place for the config file, the control socket and every
 * module.  Control path only.
 *
 * An address is carried as 16 bytes in network order with its family (4 or
 * 6); an IPv4 address uses the first 4 bytes and the rest are zero, so the
 * same buffers and keys serve both families.
 */
#ifndef EP_ADDR_H
#define EP_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_ether.h>

#include "ep_err.h"

/** Longest text ep_addr_str / ep_prefix_str write, with the NUL. */
#define EP_ADDR_STRLEN   46
#define EP_PREFIX_STRLEN 50

/** ep_prefix_parse flags. */
#define EP_PREFIX_BARE_OK   0x1u  /**< "a.b.c.d" alone is the host prefix (/32, /128) */
#define EP_PREFIX_KEEP_HOST 0x2u  /**< keep bits beyond the length ("198.18.0.1/24": a port address) */
#define EP_PREFIX_CLEAR_HOST 0x4u /**< clear bits beyond the length instead of refusing them */

/** Bits in an address of @p family (32 or 128). */
static inline unsigned int
ep_addr_bits(int family)
{
	return family == 4 ? 32u : 128u;
}

/** Parse an IPv4 or IPv6 address into @p addr (zero-padded): 4, 6, or 0. */
int ep_addr_parse(const char *s, uint8_t addr[16]);

/**
 * Parse "address/length" into @p addr (zero-padded) and @p plen.  Without
 * flags the length is required and host bits beyond it are refused ("has
 * host bits set"), which is what a route or a subscriber range must be.
 * @return 4 or 6, or -1 with @p err saying what is wrong (quoting @p s).
 */
int ep_prefix_parse(const char *s, uint8_t addr[16], uint8_t *plen, unsigned int flags,
		    struct ep_err *err);

/** "198.18.0.1/24" or a bare address (host prefix) with host bits kept,
 *  writing 4 bytes for IPv4 and 16 for IPv6 at @p addr: port addresses. */
int ep_parse_prefix(const char *s, void *addr, uint8_t *plen, struct ep_err *err);

/** Parse "02:00:00:00:00:01" (exactly six two-digit hex bytes): 0 or -1. */
int ep_parse_mac(const char *s, struct rte_ether_addr *mac);

/** Text of an address; returns @p buf. */
const char *ep_addr_str(int family, const uint8_t *addr, char *buf, size_t n);
/** "address/length"; returns @p buf. */
const char *ep_prefix_str(int family, const uint8_t *addr, uint8_t plen, char *buf, size_t n);

/** Clear the bits of @p addr beyond @p plen. */
void ep_prefix_clear_host(int family, uint8_t addr[16], uint8_t plen);
/** True if @p ip lies in @p net / @p plen (same family). */
bool ep_prefix_contains(const uint8_t *net, uint8_t plen, const uint8_t *ip);
/** IPv4 netmask of @p plen in network order (0 for /0). */
static inline uint32_t
ep_ipv4_mask_be(uint8_t plen)
{
	uint32_t m = plen == 0 ? 0 : ~0u << (32 - plen);

	return rte_cpu_to_be_32(m);
}

#endif
