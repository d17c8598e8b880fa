/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `route`: longest-prefix match over the burst, next-hop resolution,
 * and the data plane's own traffic (ICMP echo).
 *
 *   pass 1  per packet: martian check (addresses a router never forwards:
 *           IPV4/IPV6_BAD_ADDRESS; four compares per address, one branch),
 *           gather destinations: IPv4 into a host-order array with a
 *           prefetch of its tbl24 entry, IPv6 into a 16-byte array
 *   pass 2  IPv4: rte_lpm_lookup (inline) and next-hop resolution in the
 *           same loop; IPv6: rte_lpm6_lookup_bulk_func, then resolution.
 *           Resolution: next-hop index -> entry (one acquire load);
 *           forward: remember index and entry in ep_meta for `rewrite`;
 *           unresolved: NEIGHBOR_UNRESOLVED; local: echo reply or
 *           LOCAL_UNSUPPORTED
 *
 * The entry pointer handed to `rewrite` stays valid: entries are freed only
 * after every worker passed a quiescent state, which happens after the burst.
 *
 * Measured: ~22 cycles/packet in test_router_cycles (100K IPv4 /24 and 20K
 * IPv6 /48 routes, 1024 flows); in the benchmark (100K Internet-like IPv4
 * routes, 4000 destinations) ~24, down from ~28 with the bulk lookup and a
 * separate resolution pass (alternated A/B of whole builds).  Most of what is left is the tbl24 load: the
 * 64 MB table is hit at random, and the profile puts more than half of the
 * stage's samples on the prefetch instruction itself (the TLB walk; the
 * guest's 2 MB pages are not necessarily 2 MB on the host).  l3fwd pays the
 * same load.
 */
#include <rte_icmp.h>
#include <rte_prefetch.h>

#include "ep_csum.h"
#include "ep_ip.h"
#include "ep_rcu.h"
#include "router.h"

#define ECHO_REPLY_TTL 64

/* ICMP echo request to one of our addresses -> echo reply out of in_port. */
static __rte_noinline uint16_t
local_deliver(const struct router_worker *w, struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t end = (uint32_t)md->l3_off + md->l3_len;
	uint16_t old_w, new_w, ck;
	uint8_t *icmp = p + md->l4_off;

	if (!(md->flags & EP_META_F_HAS_L4) || (md->flags & EP_META_F_FRAGMENT) ||
	    end > m->data_len || m->nb_segs != 1 || md->in_port >= w->n_ports)
		return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
	if (md->l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + md->l3_off);
		uint32_t a;

		/* No options: an echo would reflect them (record route...). */
		if (md->l4_proto != IPPROTO_ICMP || ip->version_ihl != 0x45 ||
		    icmp[0] != RTE_IP_ICMP_ECHO_REQUEST || icmp[1] != 0)
			return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
		if (rte_raw_cksum(icmp, end - md->l4_off) != 0xffff)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		a = ip->src_addr;
		ip->src_addr = ip->dst_addr;
		ip->dst_addr = a;
		ip->time_to_live = ECHO_REPLY_TTL;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		memcpy(&old_w, icmp, 2);
		icmp[0] = RTE_IP_ICMP_ECHO_REPLY;
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + md->l3_off);
		uint8_t a[16];

		if (md->l4_proto != IPPROTO_ICMPV6 || md->l4_off != md->l3_off + 40 ||
		    end - md->l4_off < 8 || icmp[0] != 128 || icmp[1] != 0)
			return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
		if (ep_ipv6_l4_cksum(ip, icmp, end - md->l4_off, IPPROTO_ICMPV6) != 0)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		/* Swapping source and destination leaves the pseudo-header sum
		 * as it was: only the type word changes. */
		memcpy(a, ip->src_addr, 16);
		memcpy(ip->src_addr, ip->dst_addr, 16);
		memcpy(ip->dst_addr, a, 16);
		ip->hop_limits = ECHO_REPLY_TTL;
		memcpy(&old_w, icmp, 2);
		icmp[0] = 129;
	}
	memcpy(&new_w, icmp, 2);
	memcpy(&ck, icmp + 2, 2);
	ck = ep_csum_update16(ck, old_w, new_w);
	memcpy(icmp + 2, &ck, 2);
	/* Back to the sender, from the port's MAC; Ethernet padding dropped. */
	memmove(p, p + 6, 6);
	memcpy(p + 6, &w->port[md->in_port].mac, 6);
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len - end));
	return EP_NEXT_TX(md->in_port);
}

static __rte_always_inline uint16_t
resolve(const struct router_worker *w, struct rte_mbuf *m, uint32_t idx, uint16_t *next)
{
	struct ep_meta *md = ep_meta(m);
	const struct router_nh *nh;

	if (unlikely(idx >= w->r->p.max_nexthops)) {
		*next = EP_NEXT_DROP(EP_DROP_NO_ROUTE);
		return 1;
	}
	nh = ep_rcu_read(&w->r->nh[idx]);
	if (likely(nh->kind == ROUTER_NH_FORWARD)) {
		md->nexthop = idx;
		md->user = (uintptr_t)nh;
		return 0;
	}
	if (nh->kind == ROUTER_NH_IS_LOCAL)
		*next = local_deliver(w, m);
	else
		*next = EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED);
	return 1;
}

uint16_t
router_route_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *w = ctx;
	const struct rte_lpm *lpm = w->r->lpm4;
	struct rte_lpm6 *lpm6 = ep_rcu_read(&w->r->lpm6_cur);
	uint16_t n4 = 0, n6 = 0, out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);

		if (likely(md->l3_type == EP_L3_IPV4)) {
			const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
			uint32_t dst = rte_be_to_cpu_32(ip->dst_addr);

			if (unlikely(ep_ipv4_martian(dst) | ep_ipv4_martian(rte_be_to_cpu_32(ip->src_addr)))) {
				next[i] = EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS);
				out++;
				continue;
			}
			/* Start every packet's tbl24 miss before the first lookup
			 * needs its line.  (Prefetching it earlier, in parse, was
			 * measured: the miss cost moved into parse, +14 cycles
			 * there for -8 here.) */
			rte_prefetch0(&lpm->tbl24[dst >> 8]);
			w->ip4[n4] = dst;
			w->pkt4[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)l3;

			if (unlikely(ep_ipv6_martian(ip->dst_addr) || ep_ipv6_martian(ip->src_addr))) {
				next[i] = EP_NEXT_DROP(EP_DROP_IPV6_BAD_ADDRESS);
				out++;
				continue;
			}
			memcpy(w->ip6[n6], ip->dst_addr, 16);
			w->pkt6[n6++] = i;
		} else {
			next[i] = EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED);
			out++;
		}
	}
	/* Lookup and next-hop resolution in one pass: rte_lpm_lookup is inline
	 * (one tbl24 load, a tbl8 load for the few longer prefixes). */
	for (uint16_t j = 0; j < n4; j++) {
		uint16_t i = w->pkt4[j];
		uint32_t idx;

		if (unlikely(rte_lpm_lookup(lpm, w->ip4[j], &idx) != 0))
			idx = __atomic_load_n(&w->r->default_nh[0], __ATOMIC_ACQUIRE);
		out += resolve(w, pkts[i], idx, &next[i]);
	}
	if (unlikely(n6 != 0)) {
		rte_lpm6_lookup_bulk_func(lpm6, w->ip6, w->nh6, n6);
		for (uint16_t j = 0; j < n6; j++) {
			uint16_t i = w->pkt6[j];

			uint32_t idx = w->nh6[j] < 0 ?
				__atomic_load_n(&w->r->default_nh[1], __ATOMIC_ACQUIRE) :
				(uint32_t)w->nh6[j];

			out += resolve(w, pkts[i], idx, &next[i]);
		}
	}
	return out;
}
