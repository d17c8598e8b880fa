/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * What the router's two fast-path programs share: the maps of fwd.h that
 * the control path writes (route LPM tries, next hops, cfg, the counters of
 * fwd_reasons.def) and the one check chain both run before forwarding
 * (fwd_check(), then fwd_decrement()).  Included by fwd.bpf.c (XDP, loaded
 * by net_af_xdp) and tcfwd.bpf.c (tc ingress, the router's fast_path = tc),
 * once per object.
 *
 * A program is, in order:
 *   fwd_cfg_get()      enabled, no ACL rules
 *   fwd_check()        L2, IP header and checksum, TTL / hop limit,
 *                      martians, route, next hop, MTU: the next hop or a
 *                      punt reason, the frame untouched
 *   its port step      the next hop's port in its own map (XDP: the devmap,
 *                      through bpf_redirect_map(); tc: fwd_tc_ports), a
 *                      punt (punt_port) with the frame still untouched
 *   fwd_decrement()    TTL - 1 with RFC 1624's incremental checksum update,
 *                      or hop limit - 1
 *   its ending         the MACs and the redirect
 * A check added to fwd_check() reaches both programs; only the frame's
 * bounds, the port step and the ending are a program's own.
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

/* fwd_cfg_map[0] when the fast path may forward at all; NULL with *why set
 * (punt_disabled, punt_acl: while the router has ACL rules every frame
 * goes to the full pipeline, which filters). */
static __always_inline struct fwd_cfg *fwd_cfg_get(__u32 *why)
{
	__u32 zero = 0;
	struct fwd_cfg *cfg = bpf_map_lookup_elem(&fwd_cfg_map, &zero);

	if (!cfg || !cfg->enabled) {
		*why = FWD_PUNT_DISABLED;
		return 0;
	}
	if (!cfg->acl_empty) {
		*why = FWD_PUNT_ACL;
		return 0;
	}
	return cfg;
}

/* What fwd_check() found for a frame to forward. */
struct fwd_hit {
	struct fwd_nh *hop;     /* the next hop (fwd_nexthops[nh_idx]) */
	void *l3;               /* the IP header, within the frame's bounds */
	__u32 nh_idx;           /* the route's value: the next hop's index */
	__u32 why;              /* the punt reason when fwd_check() returns NULL */
	__u8 v6;                /* l3 is an IPv6 header */
};

static __always_inline struct fwd_nh *fwd_check4(struct iphdr *iph, void *data_end, __u64 room,
						 struct fwd_hit *h)
{
	struct fwd_lpm4_key key;
	__u32 *idx;

	if ((void *)(iph + 1) > data_end || *(__u8 *)iph != 0x45 ||
	    bpf_ntohs(iph->tot_len) < sizeof(*iph) || bpf_ntohs(iph->tot_len) > room ||
	    !ipv4_csum_ok(iph)) {
		h->why = FWD_PUNT_IP_HEADER;
		return 0;
	}
	if (iph->ttl <= 1) {
		h->why = FWD_PUNT_TTL;
		return 0;
	}
	if (martian4(iph->saddr) || martian4(iph->daddr)) {
		h->why = FWD_PUNT_MARTIAN;
		return 0;
	}
	key.prefixlen = 32;
	key.addr = iph->daddr;
	idx = bpf_map_lookup_elem(&fwd_route4, &key);
	h->hop = next_hop(idx, bpf_ntohs(iph->tot_len), &h->why);
	if (h->hop)
		h->nh_idx = *idx;
	return h->hop;
}

static __always_inline struct fwd_nh *fwd_check6(struct ipv6hdr *ip6h, void *data_end,
						 __u64 room, struct fwd_hit *h)
{
	struct fwd_lpm6_key key;
	__u32 *idx;

	if ((void *)(ip6h + 1) > data_end || ip6h->version != 6 ||
	    sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len) > room || ipv6_ext(ip6h->nexthdr)) {
		h->why = FWD_PUNT_IP_HEADER;
		return 0;
	}
	if (ip6h->hop_limit <= 1) {
		h->why = FWD_PUNT_TTL;
		return 0;
	}
	if (martian6(&ip6h->saddr) || martian6(&ip6h->daddr)) {
		h->why = FWD_PUNT_MARTIAN;
		return 0;
	}
	key.prefixlen = 128;
	__builtin_memcpy(key.addr, &ip6h->daddr, 16);
	idx = bpf_map_lookup_elem(&fwd_route6, &key);
	h->hop = next_hop(idx, sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len), &h->why);
	if (h->hop)
		h->nh_idx = *idx;
	return h->hop;
}

/*
 * The checks before forwarding, on the frame at @p data: the next hop, with
 * the IP header and the route's next-hop index in @p h, or NULL with
 * h->why the punt reason.  The frame is not written.
 *
 * @p data_end bounds what the program may read; @p len is the frame's
 * length in bytes, which the IP header's length must not exceed: the same
 * as data_end - data for XDP, skb->len at tc, where bytes past data_end
 * (an skb's paged part) are the frame's too.
 */
static __always_inline struct fwd_nh *fwd_check(const struct fwd_cfg *cfg, void *data,
						void *data_end, __u64 len, struct fwd_hit *h)
{
	struct ethhdr *eth = data;
	__be16 proto;

	if ((void *)(eth + 1) > data_end || !mac_eq(eth->h_dest, cfg->mac)) {
		h->why = FWD_PUNT_L2;
		return 0;
	}
	/* struct ethhdr is packed: eth->h_proto would be two byte loads. */
	proto = ((const __be16 *)eth)[6];
	h->l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_IP)) {
		h->v6 = 0;
		return fwd_check4(h->l3, data_end, len - sizeof(*eth), h);
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		h->v6 = 1;
		return fwd_check6(h->l3, data_end, len - sizeof(*eth), h);
	}
	h->why = proto_is_vlan(proto) ? FWD_PUNT_L2 : FWD_PUNT_NOT_IP;
	return 0;
}

/* After fwd_check() and the program's port step: TTL - 1 with the
 * incremental checksum update (RFC 1624, "Computation of the Internet
 * Checksum via Incremental Update"), or hop limit - 1 (IPv6 has no header
 * checksum). */
static __always_inline void fwd_decrement(struct fwd_hit *h)
{
	if (h->v6) {
		((struct ipv6hdr *)h->l3)->hop_limit--;
	} else {
		struct iphdr *iph = h->l3;
		__u16 old, new;

		/* TTL is the high byte of the header's fifth word (TTL, protocol). */
		old = ((__u16 *)iph)[4];
		iph->ttl--;
		new = ((__u16 *)iph)[4];
		csum_replace_words(&iph->check, &old, &new, 1);
	}
}

#endif
