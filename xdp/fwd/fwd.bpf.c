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
 * Taken (fwd_check() of fwd_common.h, the chain the tc program runs too):
 * an untagged frame to the port's MAC; IPv4 without options, with a
 * verified header checksum, or IPv6 without extension headers (the
 * pipeline walks and judges those); TTL / hop limit > 1; source and
 * destination not martian (RFC 1812 5.3.7, RFC 4291 2.5.6); a route (LPM
 * trie per family) to a next hop that is resolved, with an MTU the packet
 * fits; then here, its port in the devmap.  Then (fwd_decrement()): TTL - 1
 * with the incremental checksum update (RFC 1624, "Computation of the
 * Internet Checksum via Incremental Update") or hop limit - 1 (no IPv6
 * header checksum); both MACs rewritten, redirected.
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

SEC("xdp")
int xdp_router_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fwd_hit h = {};
	struct fwd_cfg *cfg;
	int verdict;

	cfg = fwd_cfg_get(&h.why);
	if (!cfg || !fwd_check(cfg, data, data_end, data_end - data, &h))
		return punt(ctx, h.why);
	verdict = redirect(h.hop);
	if (verdict != XDP_REDIRECT)
		return punt(ctx, FWD_PUNT_PORT);
	fwd_decrement(&h);
	__builtin_memcpy(data, h.hop->eth, 12);
	count(FWD_FORWARDED);
	return verdict;
}

char _license[] SEC("license") = "GPL";
