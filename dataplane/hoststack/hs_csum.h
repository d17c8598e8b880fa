/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Copy and Internet-checksum (RFC 1071) in one pass over the payload.
 *
 * A datagram's payload is touched twice on each side of the host stack if
 * copy and checksum are separate (the socket ring <-> mbuf copy, then
 * rte_raw_cksum over the same bytes).  Linux fuses them
 * (csum_and_copy_from_user); DPDK has no copy-with-checksum, so this is
 * the one hand-written loop: 8 bytes per step, the two 32-bit halves added
 * into a 64-bit accumulator (2^31 steps before it could carry out, far
 * beyond 64 KiB), folded at the end.  Summing 32-bit native words and
 * folding gives the same 16-bit one's complement sum as summing the
 * 16-bit words (RFC 1071 2.(B): the sum is independent of byte order and
 * of word size), so the result combines with rte_ipv4_phdr_cksum() and
 * __rte_raw_cksum() partial sums.
 *
 * Lengths of all but the last piece of one checksummed region must be even
 * (an odd piece would shift the 16-bit word alignment of the next).
 */
#ifndef HS_CSUM_H
#define HS_CSUM_H

#include <stdint.h>
#include <string.h>

/** Copy @p len bytes and return the running 32-bit partial sum (not folded
 *  to 16 bits, not complemented), starting from @p sum. */
static inline uint32_t
hs_csum_copy(void *dst, const void *src, uint32_t len, uint32_t sum)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	uint64_t acc = sum;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, s + i, 8);
		memcpy(d + i, &v, 8);
		acc += (v & 0xffffffffu) + (v >> 32);
	}
	for (; i + 2 <= len; i += 2) {
		uint16_t v;

		memcpy(&v, s + i, 2);
		memcpy(d + i, &v, 2);
		acc += v;
	}
	if (i < len) {
		uint16_t v = 0;

		d[i] = s[i];
		memcpy(&v, s + i, 1);   /* the odd byte as the first of a word, as __rte_raw_cksum */
		acc += v;
	}
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

/** Fold a partial sum to 16 bits (not complemented). */
static inline uint16_t
hs_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/** Add two partial sums. */
static inline uint32_t
hs_csum_add(uint32_t a, uint32_t b)
{
	uint64_t s = (uint64_t)a + b;

	return (uint32_t)((s & 0xffffffffu) + (s >> 32));
}

#endif
