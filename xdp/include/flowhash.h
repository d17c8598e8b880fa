/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * The index hash of the steering program: which prio_map set a (masked)
 * flow key lives in, and which alternative node an offloaded flow goes to.
 * control/internal/steer/flowhash.go is the same function in Go; the agent
 * places rules with it and the tests check that the two agree.
 *
 * A multilinear hash over the key's six 64-bit words with a multiplicative
 * finaliser:
 *
 *   s = w0*K0 + w1*K1 + ... + w5*K5          (mod 2^64, six odd constants)
 *   s ^= s >> 32                              (high input bits reach the low half)
 *   h = (s * GOLDEN) >> 32                    (Fibonacci hashing: top 32 bits)
 *
 * Cost: six independent multiplies (one per cycle on x86) summed in a tree,
 * then one more: about 13 cycles of latency. jhash2 over the same 12 words
 * is a serial chain of 4 mix rounds and a final, each a run of 32-bit
 * rotates the BPF instruction set has no instruction for (three
 * instructions each): about 100 cycles, the largest single cost of the
 * earlier program. The distribution was checked against random keys for
 * sequential TEIDs, VNIs, ports, IPv4 /16s and IPv6 prefixes: the fullest
 * 2-way set of 8192 holds no more than with random keys.
 *
 * It is not the flow hash of the intent API (jhash2, the XDP steering
 * paper's "adapted jhash", computed by the agent only), and it is not keyed: a colliding key
 * costs a compare, never a wrong verdict, since the full key is compared.
 */
#ifndef EDGEPLANE_FLOWHASH_H
#define EDGEPLANE_FLOWHASH_H

#include <linux/types.h>

#define FLOWHASH_K0 0x9e3779b97f4a7c15ULL
#define FLOWHASH_K1 0xc2b2ae3d27d4eb4fULL
#define FLOWHASH_K2 0x165667b19e3779f9ULL
#define FLOWHASH_K3 0xd6e8feb86659fd93ULL
#define FLOWHASH_K4 0xff51afd7ed558ccdULL
#define FLOWHASH_K5 0xc4ceb9fe1a85ec53ULL
#define FLOWHASH_FINAL 0x9e3779b97f4a7c15ULL

static __always_inline __u32 flowhash6(__u64 w0, __u64 w1, __u64 w2, __u64 w3,
				       __u64 w4, __u64 w5)
{
	__u64 s;

	/* Pairwise sums: three adds deep rather than five. */
	s = (w0 * FLOWHASH_K0 + w1 * FLOWHASH_K1) +
	    (w2 * FLOWHASH_K2 + w3 * FLOWHASH_K3) +
	    (w4 * FLOWHASH_K4 + w5 * FLOWHASH_K5);
	s ^= s >> 32;
	return (__u32)((s * FLOWHASH_FINAL) >> 32);
}

#endif
