// SPDX-License-Identifier: GPL-2.0
/*
 * The floor: an XDP program that passes every frame and does nothing else.
 * The steering benchmark runs it in the same process and reports the
 * steering program's cost above it. The integration tests also attach it to
 * veth peers, since a veth only accepts XDP_TX frames when its peer has an
 * XDP program.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_noop(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
