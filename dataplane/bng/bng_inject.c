/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `bng-inject` pipeline type: the way back of the control packet
 * redirect (BBF TR-459, CP to UP).  The control plane's frames for a
 * subscriber -- PADO, PADS, LCP, DHCP offers, router advertisements --
 * reach the user-plane function in GTP-U; it puts each on the session's
 * logical port with the session's tags and writes it to the BNG's control
 * port (`[bng] control_port`, the port punted frames leave on).  A worker
 * of this type polls that port and sends every frame out of the access
 * port as it is:
 *
 *   edgeplane upf --frame--> control port --rx--> [inject] --tx--> access port
 *
 * The frame is the function's, not a subscriber's, so nothing is looked
 * up; it is checked for size only: at least an Ethernet header (else
 * l2_truncated), at most a QinQ-tagged 1500-byte frame (else
 * bng_inject_oversize).  A double-tagged frame leaves with an 802.1ad
 * outer tag, as the downlink sends QinQ subscribers theirs: a control
 * port on net_af_packet hands frames in with the outer TPID turned into
 * 0x8100 (the kernel moves a received frame's outer tag into its metadata
 * and DPDK 22.11's PMD puts it back as 0x8100).  About 20 cycles a packet;
 * the worker sleeps with the engine's adaptive polling while the control
 * plane is quiet.
 *
 *   [worker inject]
 *   pipeline = bng-inject
 *   rx = ctl                  # the [bng] control_port, nothing else
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <string.h>

#include <rte_ether.h>
#include <rte_malloc.h>

#include "bng_inject.h"

/** Longest frame injected: 1500 bytes of payload, Ethernet, two tags. */
#define BNG_INJECT_MAX_FRAME (RTE_ETHER_MTU + RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN)

struct bng_inject {
	uint16_t access_port;
};

static uint16_t
bng_inject_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct bng_inject *c = ctx;

	for (uint16_t i = 0; i < n; i++) {
		uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);

		if (len < RTE_ETHER_HDR_LEN)
			next[i] = EP_NEXT_DROP(EP_DROP_L2_TRUNCATED);
		else if (len > BNG_INJECT_MAX_FRAME)
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_INJECT_OVERSIZE);
		else {
			struct rte_ether_hdr *eh = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
			struct rte_vlan_hdr *v = (struct rte_vlan_hdr *)(eh + 1);

			if (len >= RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN &&
			    eh->ether_type == RTE_BE16(RTE_ETHER_TYPE_VLAN) &&
			    v->eth_proto == RTE_BE16(RTE_ETHER_TYPE_VLAN))
				eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_QINQ);
			next[i] = EP_NEXT_TX(c->access_port);
		}
	}
	return n;
}

int
bng_inject_build(struct bng *b, struct ep_worker *w, struct ep_err *err)
{
	struct bng_inject *c;

	if (b->control_port < 0)
		return ep_err_set(err, "worker %s: bng-inject needs [bng] control_port", w->name);
	for (int i = 0; i < w->n_rx; i++)
		if (w->rx[i].port != (uint16_t)b->control_port)
			return ep_err_set(err, "worker %s: bng-inject takes frames from the control "
					  "port only (rx = %s)", w->name,
					  w->engine->ports[b->control_port].name);
	c = rte_zmalloc("bng_inject", sizeof(*c), RTE_CACHE_LINE_SIZE);
	if (c == NULL)
		return ep_err_set(err, "bng-inject: out of memory");
	c->access_port = b->access_port;
	w->pipeline_ctx = c;
	return ep_worker_add_stage(w, "inject", bng_inject_stage, c, err);
}

static int
inject_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	if (bng_of(e) == NULL)
		return ep_err_set(err, "worker %s: bng-inject runs beside bng-uplink and "
				  "bng-downlink workers (their [bng] section)", w->name);
	return bng_inject_build(bng_of(e), w, err);
}

static void
inject_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w != NULL && w->type != NULL && strcmp(w->type->name, "bng-inject") == 0) {
			rte_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		}
	}
}

static struct ep_pipeline_type inject_type = {
	.name = "bng-inject",
	.build = inject_build,
	.teardown = inject_teardown,
};
EP_PIPELINE_REGISTER(inject_type);
