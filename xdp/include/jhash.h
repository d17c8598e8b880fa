/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * jhash2: Bob Jenkins' lookup3 hash over 32-bit words, as the kernel's
 * include/linux/jhash.h has it (that header is not UAPI, so BPF programs
 * carry their own copy). control/internal/steer/jhash.go is the same function
 * in Go; a test checks both give the same hash for crafted packets.
 *
 * Cost: for the 12-word flow key, 4 mix rounds and a final, about 70 ALU
 * instructions with no memory access beyond the key: a few nanoseconds.
 */
#ifndef EDGEPLANE_JHASH_H
#define EDGEPLANE_JHASH_H

#include <linux/types.h>

static __always_inline __u32 rol32(__u32 word, unsigned int shift)
{
	return (word << shift) | (word >> ((-shift) & 31));
}

#define __jhash_mix(a, b, c)			\
	{					\
		a -= c; a ^= rol32(c, 4);  c += b; \
		b -= a; b ^= rol32(a, 6);  a += c; \
		c -= b; c ^= rol32(b, 8);  b += a; \
		a -= c; a ^= rol32(c, 16); c += b; \
		b -= a; b ^= rol32(a, 19); a += c; \
		c -= b; c ^= rol32(b, 4);  b += a; \
	}

#define __jhash_final(a, b, c)			\
	{					\
		c ^= b; c -= rol32(b, 14);	\
		a ^= c; a -= rol32(c, 11);	\
		b ^= a; b -= rol32(a, 25);	\
		c ^= b; c -= rol32(b, 16);	\
		a ^= c; a -= rol32(c, 4);	\
		b ^= a; b -= rol32(a, 14);	\
		c ^= b; c -= rol32(b, 24);	\
	}

#define JHASH_INITVAL 0xdeadbeef

/* Hash a key of `length` 32-bit words; `length` is a compile-time constant
 * at every call site, so the loop unrolls into straight-line code. */
static __always_inline __u32 jhash2(const __u32 *k, __u32 length, __u32 initval)
{
	__u32 a, b, c;

	a = b = c = JHASH_INITVAL + (length << 2) + initval;
#pragma unroll
	while (length > 3) {
		a += k[0];
		b += k[1];
		c += k[2];
		__jhash_mix(a, b, c);
		length -= 3;
		k += 3;
	}
	switch (length) {
	case 3: c += k[2]; /* fall through */
	case 2: b += k[1]; /* fall through */
	case 1: a += k[0];
		__jhash_final(a, b, c);
		break;
	case 0:
		break;
	}
	return c;
}

#endif
