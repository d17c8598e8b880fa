// SPDX-License-Identifier: GPL-2.0
/*
 * The router's fast-path work at tc ingress (cls_bpf, direct action): the
 * router's `fast_path = tc` (dataplane/router/xdp_fast_tc.c loads and
 * attaches it, one copy per port, and writes its maps with the sync the
 * XDP program's copies get), designed and measured in
 * docs/benchmarks/rfc2544-router-fast-paths.md, "A copy-free path on veth:
 * tc ingress" and "The tc fast path in the router".
 *
 * Why tc: on a veth, any XDP program makes the kernel copy every frame from
 * its skb into a page-pool page first (veth_convert_skb_to_xdp_buff: the
 * skb of a sender has less than XDP_PACKET_HEADROOM), and build a new skb
 * at the far end after the redirect.  At tc ingress the program works on
 * the skb the sender built; bpf_redirect_peer() then hands it to the
 * ingress of the egress veth's peer (the next hop's end, in its own
 * namespace) in the same softirq, without the egress veth's xmit and the
 * peer's NAPI or backlog (the switch Cilium uses between pods).
 *
 * The same maps as fwd.bpf.c (fwd.h: the route LPM tries, next hops,
 * cfg, the counters of fwd_reasons.def), so that the router's control
 * path could write both alike; the devmap becomes fwd_tc_ports (the
 * engine's port -> the ifindex of its veth in this namespace).  The same
 * checks in the same order (header and checksum, TTL / hop limit,
 * martians, route, next hop, MTU, port), then TTL - 1 with RFC 1624's
 * incremental update ("Computation of the Internet Checksum via
 * Incremental Update") or hop limit - 1, and one of three endings, one
 * program each:
 *   tc_router_fwd_peer   both MACs from the next hop, bpf_redirect_peer()
 *   tc_router_fwd        both MACs from the next hop, bpf_redirect() (egress)
 *   tc_router_fwd_neigh  bpf_redirect_neigh() to the next hop's address
 *                        (fwd_tc_nh4): the kernel's neighbour table fills L2
 * A frame the program does not forward counts its reason and goes,
 * unchanged, to the punt device (fwd_tc_punt[0], an ifindex: the veth pair
 * whose far end the full pipeline polls), or, with none set, on into the
 * kernel's stack (TC_ACT_OK).  tc_router_punt_out, at the ingress of the
 * punt device, sends what the pipeline transmits there out of the wire
 * device (fwd_tc_wire[0]).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fwd_common.h"

#define TC_AF_INET 2            /* AF_INET, for struct bpf_redir_neigh */

/* The devmap's role: the engine's port -> its veth's ifindex (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FWD_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fwd_tc_ports SEC(".maps");

/* [0]: the punt device's ifindex (0: the kernel's stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fwd_tc_punt SEC(".maps");

/* [0]: the wire device's ifindex, where tc_router_punt_out sends (0: the
 * kernel's stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fwd_tc_wire SEC(".maps");

/* tc_router_fwd_neigh only: next hop -> its IPv4 address (network order). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FWD_MAX_NEXTHOPS);
	__type(key, __u32);
	__type(value, __u32);
} fwd_tc_nh4 SEC(".maps");

enum tc_ending { END_PEER, END_EGRESS, END_NEIGH };

static __always_inline int punt(__u32 why)
{
	__u32 zero = 0, *dev = bpf_map_lookup_elem(&fwd_tc_punt, &zero);

	count(why);
	if (dev && *dev)
		return bpf_redirect(*dev, 0);
	return TC_ACT_OK;
}

/* next_hop() (fwd_common.h), then its port's ifindex in place of the
 * devmap slot. */
static __always_inline struct fwd_nh *tc_next_hop(__u32 *idx, __u32 len, __u32 *ifindex,
						  __u32 *why)
{
	struct fwd_nh *hop = next_hop(idx, len, why);
	__u32 port, *dev;

	if (!hop)
		return 0;
	port = hop->port;
	dev = bpf_map_lookup_elem(&fwd_tc_ports, &port);
	if (!dev || !*dev) {
		*why = FWD_PUNT_PORT;
		return 0;
	}
	*ifindex = *dev;
	return hop;
}

static __always_inline int send(struct ethhdr *eth, struct fwd_nh *hop, __u32 nh_idx,
				__u32 ifindex, enum tc_ending end)
{
	count(FWD_FORWARDED);
	if (end == END_NEIGH) {
		struct bpf_redir_neigh nh = { .nh_family = TC_AF_INET };
		__u32 *a = bpf_map_lookup_elem(&fwd_tc_nh4, &nh_idx);

		if (a && *a) {
			nh.ipv4_nh = *a;
			return bpf_redirect_neigh(ifindex, &nh, sizeof(nh), 0);
		}
		/* IPv6, or no address: the kernel's route for the packet. */
		return bpf_redirect_neigh(ifindex, 0, 0, 0);
	}
	__builtin_memcpy(eth, hop->eth, 12);
	if (end == END_PEER)
		return bpf_redirect_peer(ifindex, 0);
	return bpf_redirect(ifindex, 0);
}

static __always_inline int tc_fwd(struct __sk_buff *skb, enum tc_ending end)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct fwd_nh *hop;
	struct fwd_cfg *cfg;
	__u32 zero = 0, why = 0, ifindex = 0, *idx;

	cfg = bpf_map_lookup_elem(&fwd_cfg_map, &zero);
	if (!cfg || !cfg->enabled)
		return punt(FWD_PUNT_DISABLED);
	if (!cfg->acl_empty)
		return punt(FWD_PUNT_ACL);
	/* af_packet's TX ring (tpacket_snd) leaves only the Ethernet header in
	 * the skb's linear part: pull the IP header in, as ip_rcv's
	 * pskb_may_pull() does (a copy of the header only). */
	if (data + sizeof(*eth) + sizeof(struct ipv6hdr) > data_end) {
		__u32 want = sizeof(*eth) + sizeof(struct ipv6hdr);

		if (skb->len < want)
			want = skb->len;
		if (bpf_skb_pull_data(skb, want))
			return punt(FWD_PUNT_IP_HEADER);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
	}
	if ((void *)(eth + 1) > data_end || !mac_eq(eth->h_dest, cfg->mac))
		return punt(FWD_PUNT_L2);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);
		struct fwd_lpm4_key key;
		__u16 old, new;

		if ((void *)(iph + 1) > data_end || *(__u8 *)iph != 0x45 ||
		    bpf_ntohs(iph->tot_len) < sizeof(*iph) ||
		    bpf_ntohs(iph->tot_len) > skb->len - sizeof(*eth) || !ipv4_csum_ok(iph))
			return punt(FWD_PUNT_IP_HEADER);
		if (iph->ttl <= 1)
			return punt(FWD_PUNT_TTL);
		if (martian4(iph->saddr) || martian4(iph->daddr))
			return punt(FWD_PUNT_MARTIAN);
		key.prefixlen = 32;
		key.addr = iph->daddr;
		idx = bpf_map_lookup_elem(&fwd_route4, &key);
		hop = tc_next_hop(idx, bpf_ntohs(iph->tot_len), &ifindex, &why);
		if (!hop || !idx)
			return punt(why);
		old = ((__u16 *)iph)[4];
		iph->ttl--;
		new = ((__u16 *)iph)[4];
		csum_replace_words(&iph->check, &old, &new, 1);
		return send(eth, hop, *idx, ifindex, end);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);
		struct fwd_lpm6_key key;

		if ((void *)(ip6h + 1) > data_end || ip6h->version != 6 ||
		    sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len) > skb->len - sizeof(*eth) ||
		    ipv6_ext(ip6h->nexthdr))
			return punt(FWD_PUNT_IP_HEADER);
		if (ip6h->hop_limit <= 1)
			return punt(FWD_PUNT_TTL);
		if (martian6(&ip6h->saddr) || martian6(&ip6h->daddr))
			return punt(FWD_PUNT_MARTIAN);
		key.prefixlen = 128;
		__builtin_memcpy(key.addr, &ip6h->daddr, 16);
		idx = bpf_map_lookup_elem(&fwd_route6, &key);
		hop = tc_next_hop(idx, sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len), &ifindex, &why);
		if (!hop || !idx)
			return punt(why);
		ip6h->hop_limit--;
		return send(eth, hop, 0, ifindex, end);
	}
	return punt(proto_is_vlan(eth->h_proto) ? FWD_PUNT_L2 : FWD_PUNT_NOT_IP);
}

SEC("tc")
int tc_router_fwd_peer(struct __sk_buff *skb)
{
	return tc_fwd(skb, END_PEER);
}

SEC("tc")
int tc_router_fwd(struct __sk_buff *skb)
{
	return tc_fwd(skb, END_EGRESS);
}

SEC("tc")
int tc_router_fwd_neigh(struct __sk_buff *skb)
{
	return tc_fwd(skb, END_NEIGH);
}

/* At the punt device's ingress: what the full pipeline sent on the port
 * (ARP and ND answers, ICMP, its forwarded frames) goes out of the wire
 * device unchanged. */
SEC("tc")
int tc_router_punt_out(struct __sk_buff *skb)
{
	__u32 zero = 0, *dev = bpf_map_lookup_elem(&fwd_tc_wire, &zero);

	if (dev && *dev)
		return bpf_redirect(*dev, 0);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
