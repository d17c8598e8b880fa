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
 * every quiet gap (docs/benchmarks/rfc2544-router-fast-paths.md, "The XDP
 * fast path").  The kernel's samples/bpf xdp_fwd, Cilium and Katran forward the
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

#include "fwd_common.h"

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

/* To the full pipeline, unchanged: as the PMD's default program does, the
 * socket of this rx queue, or the kernel's stack when it has none. */
static __always_inline int punt(struct xdp_md *ctx, __u32 why)
{
	count(why);
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
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
