/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * What the router's two fast-path programs share: the maps of fwd.h that
 * the control path writes (route LPM tries, next hops, cfg, the counters of
 * fwd_reasons.def) and the checks both make before forwarding.  Included
 * by fwd.bpf.c (XDP, loaded by net_af_xdp) and tcfwd.bpf.c (tc ingress, the
 * measurement program of docs/benchmarks/rfc2544-router-fast-paths.md, "A
 * copy-free path on veth: tc ingress"), once per object.
 */
#ifndef EDGEPLANE_FWD_COMMON_H
#define EDGEPLANE_FWD_COMMON_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../include/parse_helpers.h"
#include "../include/csum.h"
#include "fwd.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FWD_MAX_ROUTES4);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fwd_lpm4_key);
	__type(value, __u32);
} fwd_route4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FWD_MAX_ROUTES6);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fwd_lpm6_key);
	__type(value, __u32);
} fwd_route6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FWD_MAX_NEXTHOPS);
	__type(key, __u32);
	__type(value, struct fwd_nh);
} fwd_nexthops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fwd_cfg);
} fwd_cfg_map SEC(".maps");

/* One copy per CPU: no atomics on the path; the control path sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FWD_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fwd_counters SEC(".maps");

/* bpf2go's -type needs the enum referenced. */
const enum fwd_counter fwd_counter_unused __attribute__((unused));

static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&fwd_counters, &what);

	if (c)
		*c += 1;
}

/* Six bytes as a 4- and a 2-byte compare (clang does not inline memcmp
 * for BPF). */
static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return *(const __u32 *)a == *(const __u32 *)b &&
	       *(const __u16 *)(a + 4) == *(const __u16 *)(b + 4);
}

/* ep_ipv4_martian (dataplane/proto/ep_ip.h): 0/8, 127/8, 169.254/16,
 * 224/4 and above. */
static __always_inline int martian4(__be32 a)
{
	__u32 h = bpf_ntohl(a);
	__u32 top = h >> 24;

	return top == 0 || top == 127 || top >= 224 || (h >> 16) == 0xa9fe;
}

/* ep_ipv6_martian: multicast, link-local, and in ::/80 the unspecified,
 * loopback and IPv4-mapped addresses. */
static __always_inline int martian6(const struct in6_addr *a)
{
	const __u32 *w = (const __u32 *)a;
	__u8 b0 = a->s6_addr[0], b1 = a->s6_addr[1];

	if (b0 == 0xff || (b0 == 0xfe && (b1 & 0xc0) == 0x80))
		return 1;
	if (w[0] != 0 || w[1] != 0 || a->s6_addr16[4] != 0)
		return 0;
	return a->s6_addr16[5] == 0xffff ||
	       (a->s6_addr16[5] == 0 && (w[3] == 0 || w[3] == bpf_htonl(1)));
}

/* ep_ipv6_is_ext (dataplane/proto/ep_parse.h): the Next Header values the
 * full pipeline walks as extension headers, and drops when the chain is
 * malformed or too long.  The fast path does not walk them: a packet with
 * any is punted, so only the pipeline judges a chain (and reads a
 * hop-by-hop header, which every router must, RFC 8200 4.3). */
static __always_inline int ipv6_ext(__u8 nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_FRAGMENT ||
	       nh == IPPROTO_DSTOPTS || nh == IPPROTO_AH || nh == 135 /* Mobility */ ||
	       nh == 139 /* HIP */ || nh == 140 /* Shim6 */;
}

/* The 20-byte header sums to 0xffff (RFC 1071); the full pipeline drops it
 * otherwise, so the fast path must not forward it. */
static __always_inline int ipv4_csum_ok(const struct iphdr *iph)
{
	const __u16 *w = (const __u16 *)iph;
	__u32 sum = 0;
	int i;

#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	return csum_fold(sum) == 0xffff;
}

/* The next hop of route value *idx, ready to forward a packet of @p len
 * bytes to; NULL with *why set otherwise. */
static __always_inline struct fwd_nh *next_hop(__u32 *idx, __u32 len, __u32 *why)
{
	struct fwd_nh *hop;

	if (!idx) {
		*why = FWD_PUNT_NO_ROUTE;
		return 0;
	}
	if (*idx == 0) {        /* EP_FIB_NH_LOCAL: one of our addresses */
		*why = FWD_PUNT_LOCAL;
		return 0;
	}
	hop = bpf_map_lookup_elem(&fwd_nexthops, idx);
	if (!hop || !hop->valid) {
		*why = FWD_PUNT_NEXTHOP;
		return 0;
	}
	if (len > hop->mtu) {
		*why = FWD_PUNT_MTU;
		return 0;
	}
	return hop;
}

#endif
