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
 *   acl    the ACL module's filter stage (acl_node.c; its inputs given by
 *          the parse when the burst is all IPv4 TCP/UDP), and with acl_icmp
 *          the RFC 1812 5.2.7.1 "administratively prohibited" for what it
 *          denied (the option's default is off: a silent drop)
 *   route  the FIB's burst routing (ep_fib_route_burst): martian sources
 *          and destinations, LPM, next-hop resolution; echo replies for
 *          the router's own addresses.  Without EP_FIB_ROUTE_PREFETCH: the
 *          first pass's 32 tbl24 prefetches in a row stalled on the core's
 *          miss buffers (40 % of the stage's samples on the instruction
 *          after the prefetch), and the lookups, which are independent of
 *          each other, overlap their misses by themselves; so the FIB
 *          routes IPv4 in one pass (15.1-15.3 -> 14.6-14.8 cycles/packet
 *          in test_router_cycles against the two-pass loop).  Two bench A/Bs on the 1K-route ACL input (5 rounds
 *          each): 181.9 -> 169.0 and 180.8 -> 170.6 cycles/pkt without
 *          it; on the 100K-route input 161.7 against 167.8, within the
 *          noise.  test_router_cycles (frames and the 1024 flows' tbl24
 *          lines in cache) reads ~15.5 cycles/packet either way.  Most of
 *          the stage's cost in the benchmark is the tbl24 load (the 64 MB
 *          table hit at random); l3fwd's LPM mode pays the same load.
 *          On a burst the x8 parse passed whole, that load is the parse's
 *          (its gathers: router_worker.route_words) and the stage takes
 *          ep_fib_route_burst_words: per packet a compare with the
 *          previous word, or the word decoded as it is, no read of the
 *          frame but for an extended or invalid word (13.2 -> 5.8 cycles
 *          a packet in the bench; docs/benchmarks/router-passes.md,
 *          "The tenth pass").
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
	const uint32_t *words = ep_fib_burst_words_take(&rw->route_words, pkts, n);

	/* Every packet's tbl24 word read by the x8 parse, its addresses
	 * proved not martian there: a compare each, a lookup per new word. */
	if (words != NULL)
		return ep_fib_route_burst_words(rw->fw, pkts, next, n, words,
						ep_fib_local_echo, NULL);
	return ep_fib_route_burst(rw->fw, pkts, next, n,
				  EP_FIB_ROUTE_SRC_CHECK,
				  ep_fib_local_echo, NULL);
}
