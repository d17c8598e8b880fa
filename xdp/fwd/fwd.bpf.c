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
 * Taken: an untagged frame to the port's MAC, IPv4 without options, a
 * verified header checksum, TTL > 1, source and destination not martian
 * (RFC 1812 5.3.7), a route (LPM trie) to a next hop that is resolved, on
 * a port in the devmap, with an MTU the packet fits.  Then: TTL - 1 with
 * the incremental checksum update (RFC 1624, "Computation of the Internet
 * Checksum via Incremental Update"), both MACs rewritten, redirected.
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

SEC("xdp")
int xdp_router_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct hdr_cursor nh = { .pos = data };
	struct fwd_lpm4_key key;
	struct ethhdr *eth;
	struct iphdr *iph;
	struct fwd_cfg *cfg;
	struct fwd_nh *hop;
	__u32 zero = 0, *idx, port;
	__u16 old, new;
	int proto;

	cfg = bpf_map_lookup_elem(&fwd_cfg_map, &zero);
	if (!cfg || !cfg->enabled)
		return punt(ctx, FWD_PUNT_DISABLED);
	if (!cfg->acl_empty)
		return punt(ctx, FWD_PUNT_ACL);

	proto = parse_ethhdr(&nh, data_end, &eth);
	if (proto < 0 || !mac_eq(eth->h_dest, cfg->mac))
		return punt(ctx, FWD_PUNT_L2);
	if (proto != bpf_htons(ETH_P_IP))
		return punt(ctx, proto_is_vlan(proto) ? FWD_PUNT_L2 : FWD_PUNT_NOT_IPV4);

	iph = nh.pos;
	if ((void *)(iph + 1) > data_end || *(__u8 *)iph != 0x45 ||
	    bpf_ntohs(iph->tot_len) < sizeof(*iph) ||
	    bpf_ntohs(iph->tot_len) > (__u64)(data_end - (void *)iph) || !ipv4_csum_ok(iph))
		return punt(ctx, FWD_PUNT_IPV4_HEADER);
	if (iph->ttl <= 1)
		return punt(ctx, FWD_PUNT_TTL);
	if (martian4(iph->saddr) || martian4(iph->daddr))
		return punt(ctx, FWD_PUNT_MARTIAN);

	key.prefixlen = 32;
	key.addr = iph->daddr;
	idx = bpf_map_lookup_elem(&fwd_route4, &key);
	if (!idx)
		return punt(ctx, FWD_PUNT_NO_ROUTE);
	if (*idx == 0)          /* EP_FIB_NH_LOCAL: one of our addresses */
		return punt(ctx, FWD_PUNT_LOCAL);
	hop = bpf_map_lookup_elem(&fwd_nexthops, idx);
	if (!hop || !hop->valid)
		return punt(ctx, FWD_PUNT_NEXTHOP);
	port = hop->port;
	if (!bpf_map_lookup_elem(&fwd_tx_ports, &port))
		return punt(ctx, FWD_PUNT_PORT);
	if (bpf_ntohs(iph->tot_len) > hop->mtu)
		return punt(ctx, FWD_PUNT_MTU);

	/* TTL is the high byte of the header's fifth word (TTL, protocol). */
	old = ((__u16 *)iph)[4];
	iph->ttl--;
	new = ((__u16 *)iph)[4];
	csum_replace_words(&iph->check, &old, &new, 1);
	__builtin_memcpy(eth, hop->eth, 12);
	count(FWD_FORWARDED);
	return bpf_redirect_map(&fwd_tx_ports, port, 0);
}

char _license[] SEC("license") = "GPL";
