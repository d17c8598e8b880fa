/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `acl`: classify the whole burst with rte_acl, first match wins.
 *
 *   pass 1  per packet: the classifier's input.  The rule fields are laid
 *           out as the frame is (router_acl.c), so for IPv4 without options
 *           and IPv6 without extension headers carrying TCP or UDP, the
 *           input is a pointer to the protocol byte inside the frame: no key
 *           is written.  Anything else (options, extension headers, ICMP,
 *           fragments without ports) gets a key in the worker's scratch
 *           array.  IPv4 inputs fill the data pointer array from the front,
 *           IPv6 from the back.
 *   pass 2  one rte_acl_classify per family over its part of the array
 *           (the SIMD classifier walks 16 packets at once, which is why the
 *           call is per burst and not per packet)
 *   pass 3  userdata -> permit/deny (rule index + 1; 0: default action)
 *
 * A rule set that cannot deny anything (no deny rule, default permit: the
 * flag is computed when the set is built and published with it) returns
 * before pass 1: the stage then costs the engine's two rdtsc.
 *
 * The rule set is read once per burst; it stays valid until this worker's
 * next quiescent state, after the burst.
 *
 * Measured (test_router_cycles, minimum over trials): ~43 cycles/packet
 * with 1000 rules that all miss (was ~44 with keys copied), almost all of it
 * inside rte_acl_classify (the trie walk).  In the benchmark, where the trie
 * competes with the packets and the LPM lines for L2, ~60 with 1000 rules
 * (was ~62) and ~23 with one rule (was ~27).  A set that cannot deny
 * returns at once: ~1.
 */
#include <stddef.h>

#include <rte_ip.h>

#include "ep_rcu.h"
#include "router.h"

/* The packet's own bytes can be classified: TCP or UDP header present right
 * after a fixed-size L3 header (no IPv4 options, no IPv6 extension header;
 * non-first fragments have HAS_L4 clear). */
static __rte_always_inline int
acl_in_place(const struct ep_meta *md, uint16_t l3_hdr)
{
	return (md->flags & EP_META_F_HAS_L4) && md->l4_off - md->l3_off == l3_hdr &&
	       ((md->l4_proto == IPPROTO_TCP) | (md->l4_proto == IPPROTO_UDP));
}

/* Source and destination port as they are on the wire, or zeros. */
static __rte_always_inline void
acl_ports(const uint8_t *p, const struct ep_meta *md, uint8_t ports[4])
{
	if ((md->flags & EP_META_F_HAS_L4) &&
	    (md->l4_proto == IPPROTO_TCP || md->l4_proto == IPPROTO_UDP))
		memcpy(ports, p + md->l4_off, 4);
	else
		memset(ports, 0, 4);
}

static __rte_noinline const uint8_t *
acl_key4(struct router_worker *w, uint16_t i, const uint8_t *p, const struct ep_meta *md)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + md->l3_off);
	struct router_acl_key4 *k = &w->acl_key[i].v4;

	k->proto = md->l4_proto;
	memcpy(k->src, &ip->src_addr, 8);    /* src, dst */
	acl_ports(p, md, (uint8_t *)k + offsetof(struct router_acl_key4, sport));
	return (const uint8_t *)k;
}

static __rte_noinline const uint8_t *
acl_key6(struct router_worker *w, uint16_t i, const uint8_t *p, const struct ep_meta *md)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + md->l3_off);
	struct router_acl_key6 *k = &w->acl_key[i].v6;

	k->proto = md->l4_proto;
	memcpy(k->src, ip->src_addr, 32);    /* src, dst */
	acl_ports(p, md, (uint8_t *)k + offsetof(struct router_acl_key6, sport));
	return (const uint8_t *)k;
}

uint16_t
router_acl_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *w = ctx;
	const struct router_acl *acl = ep_rcu_read(&w->r->acl);
	uint16_t n4 = 0, n6 = 0, out = 0;

	if (acl->pass_all)
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

		if (likely(md->l3_type == EP_L3_IPV4)) {
			w->acl_data[n4] = likely(acl_in_place(md, sizeof(struct rte_ipv4_hdr))) ?
				p + md->l3_off + offsetof(struct rte_ipv4_hdr, next_proto_id) :
				acl_key4(w, i, p, md);
			w->acl_pkt[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			uint16_t slot = (uint16_t)(EP_BURST_MAX - 1 - n6++);

			w->acl_data[slot] = likely(acl_in_place(md, sizeof(struct rte_ipv6_hdr))) ?
				p + md->l3_off + offsetof(struct rte_ipv6_hdr, proto) :
				acl_key6(w, i, p, md);
			w->acl_pkt[slot] = i;
		} else {
			/* Nothing but IP reaches this stage in the router. */
			next[i] = EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED);
			out++;
		}
	}
	if (n4 != 0) {
		if (acl->ctx4 != NULL)
			rte_acl_classify(acl->ctx4, w->acl_data, w->acl_res, n4, 1);
		else
			memset(w->acl_res, 0, sizeof(w->acl_res[0]) * n4);
	}
	if (n6 != 0) {
		uint16_t first = (uint16_t)(EP_BURST_MAX - n6);

		/* The v6 slots were filled from the back: packet order is reversed,
		 * which does not matter, each slot names its packet. */
		if (acl->ctx6 != NULL)
			rte_acl_classify(acl->ctx6, &w->acl_data[first], &w->acl_res[first], n6, 1);
		else
			memset(&w->acl_res[first], 0, sizeof(w->acl_res[0]) * n6);
	}
	for (uint16_t j = 0; j < n4 + n6; j++) {
		uint16_t slot = j < n4 ? j : (uint16_t)(EP_BURST_MAX - n6 + (j - n4));
		uint32_t res = w->acl_res[slot];
		bool deny = res == 0 ? acl->default_deny : acl->deny[res - 1];

		if (unlikely(deny)) {
			next[w->acl_pkt[slot]] = EP_NEXT_DROP(EP_DROP_ACL_DENY);
			out++;
		}
	}
	return out;
}
