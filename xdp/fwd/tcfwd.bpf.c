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
 * check chain, fwd_common.h's fwd_check() (header and checksum, TTL / hop
 * limit, martians, route, next hop, MTU), bounded by skb->len where the XDP
 * program has the frame's end; then the port in fwd_tc_ports, TTL - 1
 * with RFC 1624's incremental update ("Computation of the Internet
 * Checksum via Incremental Update") or hop limit - 1 (fwd_decrement()),
 * and one of three endings, one program each:
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

/* The port step: the next hop's port -> its wire's ifindex, in place of
 * the XDP program's devmap slot; 0 when the port has none (punt_port). */
static __always_inline __u32 tc_port(const struct fwd_nh *hop)
{
	__u32 port = hop->port, *dev = bpf_map_lookup_elem(&fwd_tc_ports, &port);

	return dev ? *dev : 0;
}

static __always_inline int send(void *data, const struct fwd_hit *h, __u32 ifindex,
				enum tc_ending end)
{
	count(FWD_FORWARDED);
	if (end == END_NEIGH) {
		struct bpf_redir_neigh nh = { .nh_family = TC_AF_INET };
		__u32 idx = h->nh_idx, *a = h->v6 ? 0 : bpf_map_lookup_elem(&fwd_tc_nh4, &idx);

		if (a && *a) {
			nh.ipv4_nh = *a;
			return bpf_redirect_neigh(ifindex, &nh, sizeof(nh), 0);
		}
		/* IPv6, or no address: the kernel's route for the packet. */
		return bpf_redirect_neigh(ifindex, 0, 0, 0);
	}
	__builtin_memcpy(data, h->hop->eth, 12);
	if (end == END_PEER)
		return bpf_redirect_peer(ifindex, 0);
	return bpf_redirect(ifindex, 0);
}

static __always_inline int tc_fwd(struct __sk_buff *skb, enum tc_ending end)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct fwd_hit h = {};
	struct fwd_cfg *cfg;
	__u32 ifindex;

	cfg = fwd_cfg_get(&h.why);
	if (!cfg)
		return punt(h.why);
	/* af_packet's TX ring (tpacket_snd) leaves only the Ethernet header in
	 * the skb's linear part: pull the IP header in, as ip_rcv's
	 * pskb_may_pull() does (a copy of the header only). */
	if (data + sizeof(struct ethhdr) + sizeof(struct ipv6hdr) > data_end) {
		__u32 want = sizeof(struct ethhdr) + sizeof(struct ipv6hdr);

		if (skb->len < want)
			want = skb->len;
		if (bpf_skb_pull_data(skb, want))
			return punt(FWD_PUNT_IP_HEADER);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	if (!fwd_check(cfg, data, data_end, skb->len, &h))
		return punt(h.why);
	ifindex = tc_port(h.hop);
	if (!ifindex)
		return punt(FWD_PUNT_PORT);
	fwd_decrement(&h);
	return send(data, &h, ifindex, end);
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
