/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `parse`: Ethernet destination check, then ep_parse (proto/).
 *
 * A unicast frame whose destination MAC is not the receiving port's is not
 * ours (af_packet and promiscuous ports deliver them): L2_NOT_FOR_US, counted
 * before parsing so a foreign frame is never blamed on its headers.
 * Broadcast and multicast frames go on (ARP requests, neighbour
 * solicitations); the route stage drops multicast IP it does not forward.
 *
 * Loop shape: the frame's two header lines and the ep_meta line of packet
 * i+4 are prefetched while packet i is parsed; the meta line of the mbuf is
 * written here and read by every later stage.  As it parses, the stage ORs
 * "ARP or ICMPv6" over the burst into the worker context, so the neigh stage
 * skips bursts of plain IP traffic.
 *
 * Untagged IPv4 without options takes ep_parse_ipv4_plain (one branch for
 * every check, ep_meta written once); everything else, and every error,
 * ep_parse_mbuf, out of line.
 *
 * The ACL's inputs: for a frame the plain path took, the stage writes the
 * pointer rte_acl classifies from (the protocol byte) into the filter's
 * scratch, and when every packet of the burst is IPv4 TCP/UDP without
 * options and none was diverted it gives them to the filter
 * (ep_acl_filter_give), whose own pass over the meta lines is then not
 * run: callgrind 444.0 -> 407.0 instructions a packet in all (parse
 * 95.4 -> 107.6, the ACL's own code 53.4 -> 3.4), test_router_cycles'
 * stages 84 -> 78.5 cycles (docs/benchmarks/router-passes.md, "The sixth
 * pass").
 *
 * in_port: on a burst from rx the engine leaves it to this stage
 * (stage_sets_in_port), which writes it with the rest of the meta line and
 * checks the destination MAC against the burst's port, read once.  Callgrind
 * (EP_CYCLES_V4_ONLY=1 EP_CYCLES_ROUTES=1000 test_router_cycles, instructions
 * per packet): parse 100.0 -> 95.4, and the engine's in_port pass (~4) gone.
 *
 * Measured (test_router_cycles, burst 32, 64-byte frames in cache, 3/4 IPv4,
 * minimum over trials): ~16.6 cycles/packet (17.5 before the one-branch
 * path; ~26 before the line-aligned frames); in the in-process benchmark
 * (bench/bench_router.py, packets fresh from net_pcap) ~17-19.  The checksum
 * no longer goes through the stack (ep_parse.h): 26.1 -> 25.4 in an
 * alternated A/B of whole builds, 34 -> 25 in another (noisy machine).
 * Prefetching the route stage's tbl24 line from here was tried and
 * measured worse: the miss cost moved into this stage (+14 cycles here,
 * -8 in route).  Reading the words with gathers in the x8 path, eight
 * lanes' misses in flight at once and the route stage left a compare or a
 * decode per packet, measured better (parse_burst_x8;
 * docs/benchmarks/router-passes.md, "The tenth pass").
 */
#include "ep_parse.h"
#include "ep_parse_x8.h"
#include "fib/ep_fib_x8.h"
#include "ep_rx.h"
#include "router.h"

/* The frame's first line, its second one and the ep_meta line (ep_rx.h).
 * On the router's own ports frames start on a line (rx_line_aligned,
 * ep_meta.h) and the second prefetch falls in the first line; on a port
 * shared with a pipeline that keeps frames half a line in, the IPv4
 * destination and the ports of a 64-byte frame are in the next line. */
#define PREFETCH_LINES 2

/* Returns PARSE_DIVERTED and/or PARSE_L2CTL (bits, kept in registers by
 * the caller's loop). */
#define PARSE_DIVERTED 1u
#define PARSE_L2CTL    2u
/* Not IPv4 TCP or UDP without options: the ACL builds its own inputs.
 * The bit of EP_META_F_HAS_L4, so that for a frame ep_parse_ipv4_plain
 * took it is the ACL's table entry of its protocol, flipped: a load and an
 * xor (two compares, two setcc, an and and a shift were ~7 instructions
 * a packet more). */
#define PARSE_NOT_ACL4 EP_META_F_HAS_L4
_Static_assert((PARSE_NOT_ACL4 & (PARSE_DIVERTED | PARSE_L2CTL)) == 0, "parse bits");

/* Everything but untagged IPv4 without options, and every error (for its
 * reason): out of line, so the loop over the common frame keeps its
 * values in registers (inlined, the full parse made the compiler spill
 * the loop's state to the stack). */
static __rte_noinline uint32_t
parse_full(struct rte_mbuf *m, uint16_t *next)
{
	struct ep_meta *md = ep_meta(m);
	int rc = ep_parse_mbuf(m, md);

	if (unlikely(rc != 0)) {
		*next = EP_NEXT_DROP(rc);
		return PARSE_DIVERTED | PARSE_NOT_ACL4;
	}
	/* ARP or ICMPv6 (maybe ND): the neigh stage has work in this burst. */
	return ((md->l3_type == EP_L3_ARP) | (md->l4_proto == IPPROTO_ICMPV6)) * PARSE_L2CTL |
	       PARSE_NOT_ACL4;
}

/* Packet @p m from the port whose MAC is @p mac4/@p mac2; with
 * @p from_meta the caller set in_port and the MAC is looked up per packet
 * through it, else in_port is written here. */
static __rte_always_inline uint32_t
parse_one(const struct ep_fib_worker *w, struct ep_acl_filter *acl, struct rte_mbuf *m,
	  uint16_t i, uint16_t *next, const bool from_meta, uint16_t port, uint32_t mac4,
	  uint16_t mac2)
{
	struct ep_meta *md = ep_meta(m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (from_meta) {
		port = md->in_port;
		if (unlikely(port >= w->n_ports)) {
			*next = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
			return PARSE_DIVERTED | PARSE_NOT_ACL4;
		}
		ep_mac_words(&w->port[port].mac, &mac4, &mac2);
	} else {
		md->in_port = port;
	}
	if (ep_rx_not_for_us_words(m, mac4, mac2)) {
		*next = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
		return PARSE_DIVERTED | PARSE_NOT_ACL4;
	}
	if (likely(ep_parse_ipv4_plain(p, rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m),
				       md) == 0)) {
		/* The ACL's input for this packet, the frame's bytes from its
		 * protocol byte (used when every packet of the burst has one). */
		ep_acl_filter_input4(acl, i, p + RTE_ETHER_HDR_LEN);
		return ep_acl_port_protos[md->l4_proto] ^ PARSE_NOT_ACL4;
	}
	return parse_full(m, next);
}

static __rte_always_inline uint16_t
parse_burst(struct router_worker *w, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
	    const bool from_meta, uint16_t port)
{
	const struct ep_fib_worker *fw = w->fw;
	struct ep_acl_filter *acl = w->acl;
	uint32_t l2ctl = 0, r, mac4 = 0;
	uint16_t out = 0, mac2 = 0;

	if (!from_meta)
		ep_mac_words(&fw->port[port].mac, &mac4, &mac2);
	ep_rx_prefetch_first(pkts, n, PREFETCH_LINES);
	for (uint16_t i = 0; i < n; i++) {
		ep_rx_prefetch_next(pkts, i, n, PREFETCH_LINES);
		r = parse_one(fw, acl, pkts[i], i, &next[i], from_meta, port, mac4, mac2);
		out += r & PARSE_DIVERTED;
		l2ctl |= r;
	}
	w->l2ctl = l2ctl & PARSE_L2CTL;
	/* Every packet goes on to the ACL with its input given. */
	ep_acl_filter_give(acl, (l2ctl & PARSE_NOT_ACL4) == 0 ? n : 0, n != 0 ? pkts[0] : NULL);
	return out;
}

#ifdef EP_PARSE_X8
/*
 * parse_burst for a burst from rx, eight frames at a time (AVX-512, where
 * the CPU has it: router_worker.parse_x8).  First every group's loads
 * (ep_parse_x8_load: lines or gathers, router_worker.parse_x8_lines; the
 * groups' loads overlap) and the meta lines' prefetches,
 * then per group the MAC check and the plain IPv4 checks
 * (ep_parse_x8_check, proto/): a lane that passes has its ep_meta written
 * and its ACL input given by one vector store; a frame to another MAC is
 * dropped here as l2_not_for_us; every other lane (shorter than the
 * loads read, tags, options, IPv6, ARP, any error) takes parse_one,
 * which names the reason.  Whether the burst is all TCP/UDP for the ACL
 * is one table lookup for eight lanes.
 *
 * Measured (docs/benchmarks/router-passes.md, "The eighth pass"): parse
 * 14.5-14.8 ->
 * 11.9 cycles a packet in test_router_cycles; in the bench (bench.router_ab, 9
 * rounds) 103.2 -> 101.7 cycles a packet, parse 14.5 -> 10.8, ahead in 7
 * rounds of 9.  Without the meta lines' prefetch the bench read parse
 * 12.6 and 102.5 cycles a packet: the scalar loop prefetches them four
 * frames ahead, and the gathers do not touch that line.
 *
 * A burst with nothing diverted also has every packet's tbl24 word read
 * for the route stage (ep_fib_x8_words, fib/; router_worker.route_words),
 * and the /8s of its sources and destinations tested for martians by
 * their keep4 words, which stands for the route stage's four compares
 * per address (RFC 1812 5.3.7).  Measured (docs/benchmarks/router-passes.md,
 * "The tenth pass"; bench.router_ab, 9 rounds, both orders, against the
 * ninth pass's build): 93.8 -> 90.3 and 92.0 -> 85.0 cycles a packet, the
 * route stage 13.2 -> 5.9 and 12.7 -> 5.7, parse +2, neigh +1.8 (the
 * gathers' misses still in flight when the next stage's clock is read).  Issuing the
 * tbl24 gathers before each group's checks, so that the checks' work hid
 * their misses, measured worse (85.9 -> 87.5, 0 rounds of 9 ahead):
 * neigh -1.3, every other stage up.  Each group's tbl24 gather issued
 * right after its checks measured worse too (85.9 -> 90.6, 0 of 9), and
 * the keep4 gathers alone moved into the checks loop read level (bench
 * medians 0.998-1.030; the eleventh pass).
 *
 * The loads as lines instead of gathers, and the keep4 words from keep4b
 * by permutes, on the Zen 5 (bench.router_ab, 9 rounds, beside two
 * copies of main's build): parse 16.1-16.3 -> 12.9-13.3 cycles a packet,
 * vs_dpdk-l3fwd-acl 1.10-1.13 -> 1.15-1.17
 * (docs/benchmarks/router-passes-later.md, "The twentieth pass").
 */
static __rte_always_inline EP_X8_TARGET uint16_t
parse_burst_x8(struct router_worker *w, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
	       uint16_t port, const bool lines)
{
	const struct ep_fib_worker *fw = w->fw;
	struct ep_acl_filter *acl = w->acl;
	uint32_t l2ctl = 0, mac4;
	uint64_t mac;
	uint16_t out = 0, mac2;
	struct ep_parse_x8_in in[EP_BURST_MAX / 8];
	__m512i src[EP_BURST_MAX / 8], dst[EP_BURST_MAX / 8];
	__mmask8 oks[EP_BURST_MAX / 8];
	uint64_t words = 0;

	ep_mac_words(&fw->port[port].mac, &mac4, &mac2);
	mac = mac4 | (uint64_t)mac2 << 32;
	for (uint16_t i = 0; i < n; i += 8)
		ep_parse_x8_load(&pkts[i], (__mmask8)((1u << RTE_MIN(n - i, 8)) - 1), &in[i / 8],
				 lines);
	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0(ep_meta(pkts[i]));
	for (uint16_t i = 0; i < n; i += 8) {
		__mmask8 lanes = (__mmask8)((1u << RTE_MIN(n - i, 8)) - 1), acl_ok, rest;
		struct ep_parse_x8 x;

		ep_parse_x8_check(&in[i / 8], mac, port, &x);
		oks[i / 8] = x.ok;
		src[i / 8] = x.src;
		dst[i / 8] = x.dst;
		ep_acl_filter_input4_x8(acl, i, x.ok, x.l3);
		acl_ok = _mm512_test_epi64_mask(ep_x8_table(ep_acl_port_protos, x.proto),
						_mm512_set1_epi64(EP_META_F_HAS_L4));
		l2ctl |= (x.ok & acl_ok) != x.ok ? PARSE_NOT_ACL4 : 0;
		for (unsigned int b = x.not_for_us; b != 0; b &= b - 1) {
			uint16_t j = (uint16_t)(i + __builtin_ctz(b));

			ep_meta(pkts[j])->in_port = port;
			next[j] = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
			out++;
			l2ctl |= PARSE_NOT_ACL4;
		}
		rest = lanes & ~x.ok & ~x.not_for_us;
		for (unsigned int b = rest; b != 0; b &= b - 1) {
			uint16_t j = (uint16_t)(i + __builtin_ctz(b));
			uint32_t r = parse_one(fw, acl, pkts[j], j, &next[j], false, port, mac4,
					       mac2);

			out += r & PARSE_DIVERTED;
			l2ctl |= r;
		}
	}
	/* When no packet was diverted: every packet's tbl24 word for the
	 * route stage (router_worker.route_words), its destination's and its
	 * source's /8 proved free of martians by their keep4 words.  Two
	 * gathers in a chain per group (keep4 words, then tbl24 words): every
	 * group's keep4 words first, so that the groups' misses overlap. */
	if (out == 0) {
		const struct ep_fib *fib = fw->fib;
		__m512i keep[EP_BURST_MAX / 8];
		__mmask8 src_ok[EP_BURST_MAX / 8];

		for (uint16_t i = 0; i < n; i += 8) {
			keep[i / 8] = ep_fib_x8_keep(fib, oks[i / 8], dst[i / 8]);
			src_ok[i / 8] = ep_fib_x8_no_martian(
				oks[i / 8], ep_fib_x8_keep(fib, oks[i / 8], src[i / 8]));
		}
		for (uint16_t i = 0; i < n; i += 8) {
			__m256i wd;
			__mmask8 has = ep_fib_x8_words(fib, src_ok[i / 8], dst[i / 8], keep[i / 8],
						       &wd);

			_mm256_storeu_si256((__m256i *)&w->route_words.words[i], wd);
			words |= (uint64_t)has << i;
		}
	}
	ep_fib_burst_words_give(&w->route_words,
				out == 0 && n != 0 && words == UINT64_MAX >> (64 - n) ? n : 0,
				n != 0 ? pkts[0] : NULL);
	w->l2ctl = l2ctl & PARSE_L2CTL;
	ep_acl_filter_give(acl, (l2ctl & PARSE_NOT_ACL4) == 0 ? n : 0, n != 0 ? pkts[0] : NULL);
	return out;
}

/* parse_burst_x8 for each form of the loads: one is chosen per CPU. */
static __rte_noinline EP_X8_TARGET uint16_t
parse_burst_x8_lines(struct router_worker *w, struct rte_mbuf **pkts, uint16_t *next,
		     uint16_t n, uint16_t port)
{
	return parse_burst_x8(w, pkts, next, n, port, true);
}

static __rte_noinline EP_X8_TARGET uint16_t
parse_burst_x8_gathers(struct router_worker *w, struct rte_mbuf **pkts, uint16_t *next,
		       uint16_t n, uint16_t port)
{
	return parse_burst_x8(w, pkts, next, n, port, false);
}
#endif

bool
router_parse_x8_usable(void)
{
#ifdef EP_PARSE_X8
	return ep_parse_x8_usable();
#else
	return false;
#endif
}

bool
router_parse_x8_lines(void)
{
#ifdef EP_PARSE_X8
	return ep_parse_x8_lines();     /* false where the x8 parse cannot run */
#else
	return false;
#endif
}

/* In a burst from rx (router_type.stage_sets_in_port) the port is the
 * worker's rx_port, written into each packet's meta line here, which the
 * parse writes anyway: the engine's own pass over the burst, a store to
 * every meta line before anything read it, is gone, and the port's MAC is
 * read once a burst instead of per packet through in_port.  A port that is
 * not the FIB's (none is, today) takes the per-packet path, which drops
 * its frames as l2_not_for_us. */
uint16_t
router_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct router_worker *w = ctx;
	uint16_t port = w->fw->w != NULL ? w->fw->w->rx_port : EP_RX_PORT_META;

	/* no tbl24 words but the x8 path's */
	ep_fib_burst_words_give(&w->route_words, 0, NULL);
	if (likely(port < w->fw->n_ports)) {
#ifdef EP_PARSE_X8
		if (w->parse_x8)
			return w->parse_x8_lines ? parse_burst_x8_lines(w, pkts, next, n, port) :
						   parse_burst_x8_gathers(w, pkts, next, n, port);
#endif
		return parse_burst(w, pkts, next, n, false, port);
	}
	if (port != EP_RX_PORT_META)
		for (uint16_t i = 0; i < n; i++)
			ep_meta(pkts[i])->in_port = port;
	return parse_burst(w, pkts, next, n, true, 0);
}
