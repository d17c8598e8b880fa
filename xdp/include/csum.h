/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * Incremental Internet checksum update, RFC 1624 eqn. 3:
 *   HC' = ~(~HC + ~m + m')
 * applied to every 16-bit word that changed. The sum is byte-order
 * independent, so words are used as they sit in the packet. Rewriting a
 * destination address costs 2 words (IPv4) or 8 words (IPv6) per checksum,
 * far less than re-summing the header and a pseudo-header.
 */
#ifndef EDGEPLANE_CSUM_H
#define EDGEPLANE_CSUM_H

#include <linux/types.h>

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * Update *check for `nwords` 16-bit words changing from `from` to `to`.
 * `from` and `to` point to the stack (old value saved before the rewrite).
 */
static __always_inline void csum_replace_words(__u16 *check, const __u16 *from,
					       const __u16 *to, int nwords)
{
	__u32 sum = (__u16)~*check;
	int i;

#pragma unroll
	for (i = 0; i < nwords; i++) {
		sum += (__u16)~from[i];
		sum += to[i];
	}
	*check = (__u16)~csum_fold(sum);
}

#endif
