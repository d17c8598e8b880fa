/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's stages that are the modules' own work on its instances:
 *
 *   neigh  the FIB's ARP/ND responder (fib_neigh.c).  The parse stage ORs
 *          "ARP or ICMPv6" over the burst as it parses (one OR per packet,
 *          no extra line), and a burst without either skips the loop, so
 *          the stage costs the engine's rdtsc and the next[] clear: ~1
 *          cycle/packet on forwarded traffic (test_router_cycles), against
 *          ~2.5 for the per-packet loop.  ARP and ND stay a separate stage
 *          with their own counters and drop reasons.
 *   acl    the ACL module's filter stage (acl_node.c), and with acl_icmp
 *          the RFC 1812 5.2.7.1 "administratively prohibited" for what it
 *          denied (the option's default is off: a silent drop)
 *   route  the FIB's burst routing (ep_fib_route_burst): martian sources
 *          and destinations, LPM with the tbl24 line prefetched a loop
 *          ahead, next-hop resolution; echo replies for the router's own
 *          addresses.  Measured: ~22 cycles/packet in test_router_cycles
 *          (100K IPv4 /24 and 20K IPv6 /48 routes, 1024 flows); in the
 *          benchmark (100K Internet-like IPv4 routes, 4000 destinations)
 *          ~24.  Most of it is the tbl24 load: the 64 MB table is hit at
 *          random, and the profile puts more than half of the stage's
 *          samples on the prefetch instruction itself (the TLB walk).
 *          l3fwd pays the same load.
 */
#include "router.h"

uint16_t
router_neigh_after_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *rw = ctx;

	if (likely(rw->l2ctl == 0))
		return 0;
	return ep_fib_neigh_burst(rw->fw, pkts, next, n);
}

uint16_t
router_acl_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *rw = ctx;
	uint16_t out = ep_acl_filter_stage(rw->acl, pkts, next, n);

	if (unlikely(out != 0) && rw->r->acl_icmp)
		for (uint16_t i = 0; i < n; i++)
			if (next[i] == EP_NEXT_DROP(EP_DROP_ACL_DENY))
				ep_fib_icmp_error(rw->fw, pkts[i], EP_FIB_ICMP_ADMIN_PROHIBITED, 0);
	return out;
}

uint16_t
router_route_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *rw = ctx;

	return ep_fib_route_burst(rw->fw, pkts, next, n,
				  EP_FIB_ROUTE_PREFETCH | EP_FIB_ROUTE_SRC_CHECK,
				  ep_fib_local_echo, NULL);
}
