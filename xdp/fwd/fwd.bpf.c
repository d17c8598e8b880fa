// SPDX-License-Identifier: GPL-2.0
/*
 * The router's XDP fast path: forwards the common case in the driver's
 * context, and hands everything else, unchanged, to the AF_XDP socket that
 * edgeplane-dp's router pipeline polls (the slow path, the full pipeline).
 *
 * Loaded by DPDK's net_af_xdp through its xdp_prog devarg, once per port;
 * the PMD inserts its sockets into xsks_map (the name it requires), one
 * per rx queue.  edgeplane-dp's control path (dataplane/router/xdp_fast.c)
 * writes the other maps from the router's FIB and ACL; the worker never
 * touches them.
 *
 * Why: Linux forwards inside the sender's own softirq and never waits for
 * a CPU; a polling worker on a shared core must be woken and scheduled for
 * every quiet gap (docs/benchmarks.md, rfc2544-router, "The XDP fast
 * path").  The kernel's samples/bpf xdp_fwd, Cilium and Katran forward the
 * same way; unlike xdp_fwd this does not ask the kernel's FIB
 * (bpf_fib_lookup) but the router's own tables, so both paths route alike.
 *
 * Taken: an untagged frame to the port's MAC; IPv4 without options, with
 * a verified header checksum, or IPv6 without extension headers (the
 * pipeline walks and judges those); TTL / hop limit > 1; source
 * and destination not martian (RFC 1812 5.3.7, RFC 4291 2.5.6); a route
 * (LPM trie per family) to a next hop that is resolved, on a port in the
 * devmap, with an MTU the packet fits.  Then: TTL - 1 with the incremental
 * checksum update (RFC 1624, "Computation of the Internet Checksum via
 * Incremental Update") or hop limit - 1 (no IPv6 header checksum), both
 * MACs rewritten, redirected.
 * Everything else counts its punt reason (fwd_reasons.def) and goes to the
 * socket; the full pipeline then does what the router does for it (ARP,
 * ICMP errors, ACL, fragmentation, ...).  While the router has ACL rules,
 * every frame goes there.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../include/parse_helpers.h"
#include "../include/csum.h"
#include "fwd.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, FWD_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, FWD_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fwd_tx_ports SEC(".maps");

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

/* To the full pipeline, unchanged: as the PMD's default program does, the
 * socket of this rx queue, or the kernel's stack when it has none. */
static __always_inline int punt(struct xdp_md *ctx, __u32 why)
{
	count(why);
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
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

/* The redirect to the next hop's port, before the frame is touched.
 * bpf_redirect_map() looks the port up in the devmap itself (the per-CPU
 * redirect target it sets is what the driver sends to) and returns its
 * flags argument, 0, when the slot is empty: that is the punt_port test,
 * without a separate bpf_map_lookup_elem() of the same slot (a helper
 * call per forwarded frame).  A punt after it is still unchanged: punt()'s
 * own bpf_redirect_map() replaces the target. */
static __always_inline int redirect(struct fwd_nh *hop)
{
	return bpf_redirect_map(&fwd_tx_ports, hop->port, 0);
}

static __always_inline int forward(struct ethhdr *eth, struct fwd_nh *hop, int verdict)
{
	__builtin_memcpy(eth, hop->eth, 12);
	count(FWD_FORWARDED);
	return verdict;
}

static __always_inline int fwd_ipv4(struct xdp_md *ctx, struct ethhdr *eth, struct iphdr *iph,
				    void *data_end)
{
	struct fwd_lpm4_key key;
	struct fwd_nh *hop;
	__u32 why = 0;
	__u16 old, new;
	int verdict;

	if ((void *)(iph + 1) > data_end || *(__u8 *)iph != 0x45 ||
	    bpf_ntohs(iph->tot_len) < sizeof(*iph) ||
	    bpf_ntohs(iph->tot_len) > (__u64)(data_end - (void *)iph) || !ipv4_csum_ok(iph))
		return punt(ctx, FWD_PUNT_IP_HEADER);
	if (iph->ttl <= 1)
		return punt(ctx, FWD_PUNT_TTL);
	if (martian4(iph->saddr) || martian4(iph->daddr))
		return punt(ctx, FWD_PUNT_MARTIAN);
	key.prefixlen = 32;
	key.addr = iph->daddr;
	hop = next_hop(bpf_map_lookup_elem(&fwd_route4, &key), bpf_ntohs(iph->tot_len), &why);
	if (!hop)
		return punt(ctx, why);
	verdict = redirect(hop);
	if (verdict != XDP_REDIRECT)
		return punt(ctx, FWD_PUNT_PORT);
	/* TTL is the high byte of the header's fifth word (TTL, protocol). */
	old = ((__u16 *)iph)[4];
	iph->ttl--;
	new = ((__u16 *)iph)[4];
	csum_replace_words(&iph->check, &old, &new, 1);
	return forward(eth, hop, verdict);
}

static __always_inline int fwd_ipv6(struct xdp_md *ctx, struct ethhdr *eth, struct ipv6hdr *ip6h,
				    void *data_end)
{
	struct fwd_lpm6_key key;
	struct fwd_nh *hop;
	__u32 why = 0;
	int verdict;

	if ((void *)(ip6h + 1) > data_end || ip6h->version != 6 ||
	    sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len) > (__u64)(data_end - (void *)ip6h) ||
	    ipv6_ext(ip6h->nexthdr))
		return punt(ctx, FWD_PUNT_IP_HEADER);
	if (ip6h->hop_limit <= 1)
		return punt(ctx, FWD_PUNT_TTL);
	if (martian6(&ip6h->saddr) || martian6(&ip6h->daddr))
		return punt(ctx, FWD_PUNT_MARTIAN);
	key.prefixlen = 128;
	__builtin_memcpy(key.addr, &ip6h->daddr, 16);
	hop = next_hop(bpf_map_lookup_elem(&fwd_route6, &key),
		       sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len), &why);
	if (!hop)
		return punt(ctx, why);
	verdict = redirect(hop);
	if (verdict != XDP_REDIRECT)
		return punt(ctx, FWD_PUNT_PORT);
	ip6h->hop_limit--;
	return forward(eth, hop, verdict);
}

SEC("xdp")
int xdp_router_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct hdr_cursor nh = { .pos = data };
	struct ethhdr *eth;
	struct fwd_cfg *cfg;
	__u32 zero = 0;
	int proto;

	cfg = bpf_map_lookup_elem(&fwd_cfg_map, &zero);
	if (!cfg || !cfg->enabled)
		return punt(ctx, FWD_PUNT_DISABLED);
	if (!cfg->acl_empty)
		return punt(ctx, FWD_PUNT_ACL);

	proto = parse_ethhdr(&nh, data_end, &eth);
	if (proto < 0 || !mac_eq(eth->h_dest, cfg->mac))
		return punt(ctx, FWD_PUNT_L2);
	if (proto == bpf_htons(ETH_P_IP))
		return fwd_ipv4(ctx, eth, nh.pos, data_end);
	if (proto == bpf_htons(ETH_P_IPV6))
		return fwd_ipv6(ctx, eth, nh.pos, data_end);
	return punt(ctx, proto_is_vlan(proto) ? FWD_PUNT_L2 : FWD_PUNT_NOT_IP);
}

char _license[] SEC("license") = "GPL";
