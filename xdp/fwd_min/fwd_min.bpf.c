// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of any XDP forwarder, for measurement only (not loaded by the
 * product): one array lookup for the port's next hop (both MACs and the
 * egress port), the Ethernet header rewritten, bpf_redirect_map() into a
 * devmap.  No parse beyond the Ethernet header's length, no checks, no
 * counter.  control/internal/xdpfwd's BenchmarkProgramCost times the
 * router's program (xdp/fwd) against it with BPF_PROG_TEST_RUN, so that
 * what the router's program adds to a forwarded frame (its parse, checks,
 * LPM lookup and counter) is measured, not assumed
 * (docs/benchmarks/rfc2544-router-fast-paths.md, "What bounds
 * `vs_linux-forwarding` with the fast path: the veth floor").
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

struct fwd_min_nh {
	__u8 eth[12];           /* destination MAC, then source MAC */
	__u32 port;             /* the devmap slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fwd_min_nh);
} fwd_min_nh_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} fwd_min_tx SEC(".maps");

SEC("xdp")
int xdp_fwd_min(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fwd_min_nh *nh;
	__u32 zero = 0;

	if (data + ETH_HLEN > data_end)
		return XDP_PASS;
	nh = bpf_map_lookup_elem(&fwd_min_nh_map, &zero);
	if (nh == NULL)
		return XDP_PASS;
	__builtin_memcpy(data, nh->eth, sizeof(nh->eth));
	return bpf_redirect_map(&fwd_min_tx, nh->port, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
