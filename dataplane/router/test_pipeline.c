/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The whole router pipeline through the engine's burst function
 * (ep_worker_run_burst): verdicts and per-stage counters, tables changed
 * between bursts, the [router] configuration and the control commands.
 */
#include <unistd.h>

#include "ep_ctl.h"
#include "test_router.h"

static uint8_t buf[2048];

static struct rte_mbuf *
frame(struct tp_spec *s)
{
	return tr_mbuf(buf, tp_build(buf, s), 0);
}

EP_TEST(pipeline_forwards_ipv4_and_ipv6_with_0_1_2_tags_to_the_core_port)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct rte_mbuf *pkts[6], *out[EP_BURST_MAX];

	for (int i = 0; i < 6; i++) {
		struct tp_spec s = tp_default(i & 1, i < 2 ? IPPROTO_UDP : IPPROTO_TCP);

		s.n_vlans = i / 2;
		pkts[i] = frame(&s);
	}
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 6), 0);
	EP_CHECK_EQ(tr_take_tx(w, 1, out), 6);
	for (int i = 0; i < 6; i++) {
		EP_CHECK_EQ(ep_meta(out[i])->n_vlans, 0);
		EP_CHECK_MEM(rte_pktmbuf_mtod(out[i], uint8_t *), MAC_B, 6);
	}
	rte_pktmbuf_free_bulk(out, 6);
	EP_CHECK_EQ(tr_stage(w, "rewrite")->stats.pkts_tx, 6);
	EP_CHECK_EQ(tr_stage(w, "parse")->stats.pkts_out, 6);
	tr_worker_free(w);
	router_free(r);
}

/* Frame @p k of a parse test into buf (its length returned): IPv4/IPv6,
 * protocols, 0-2 tags, to @p port's MAC, then as built (3 in 8) or
 * mutated by @p x: a bit of the first 40 bytes, the destination MAC, the
 * length, multicast, a byte of the IP header. */
static uint16_t
mutated_frame(int k, uint16_t port, uint64_t *x)
{
	static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP, IPPROTO_GRE,
					  IPPROTO_ICMPV6 };
	struct tp_spec sp = tp_default(k % 7 == 6, protos[k % 5]);
	uint16_t len;
	uint64_t v;

	sp.n_vlans = k % 9 == 8 ? 1 + (k & 1) : 0;
	memcpy(sp.dmac, port == 1 ? MAC_P1 : MAC_P0, 6);
	len = tp_build(buf, &sp);
	v = tp_next(x);
	switch (v % 8) {
	case 0: case 1: case 2:
		break;                                  /* as built */
	case 3:
		buf[(v >> 8) % 40] ^= (uint8_t)(1u << (v >> 16) % 8);
		break;
	case 4:
		buf[(v >> 8) % 6] = (uint8_t)(v >> 24); /* destination MAC */
		break;
	case 5:
		len = (uint16_t)((v >> 8) % (len + 1));
		break;
	case 6:
		buf[0] |= 1;                            /* multicast */
		break;
	default:
		buf[14 + (v >> 8) % 20] = (uint8_t)(v >> 24);
		break;
	}
	return len;
}

/*
 * A burst from rx (the worker's rx_port set, router_type.stage_sets_in_port:
 * the parse writes in_port and checks the port's MAC once a burst) parses
 * exactly as the same burst handed in with each packet's in_port set
 * (ep_worker_run_burst's path): the same next[], diverted count, neigh
 * flag and ep_meta, over built and mutated frames (IPv4/IPv6, tags,
 * protocols, header bytes, MACs, lengths) on both ports and on a port
 * index the FIB does not have.
 */
EP_TEST(parse_of_a_burst_from_rx_equals_parse_through_each_in_port)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct router_worker *rw = w->pipeline_ctx;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int wrong = 0, diverted = 0, kept = 0;

	for (int b = 0; b < 400; b++) {
		struct rte_mbuf *via_rx[32], *via_meta[32];
		uint16_t next_rx[32] = {0}, next_meta[32] = {0}, out_rx, out_meta;
		uint16_t port = b % 5 == 4 ? 7 : (uint16_t)(b & 1);
		uint32_t l2_rx, l2_meta;

		for (int i = 0; i < 32; i++) {
			uint16_t len = mutated_frame(b * 32 + i, port, &x);

			via_rx[i] = ep_test_mbuf(buf, len);
			via_meta[i] = ep_test_mbuf(buf, len);
			memset(ep_meta(via_rx[i]), 0x5a, sizeof(struct ep_meta));
			memset(ep_meta(via_meta[i]), 0x5a, sizeof(struct ep_meta));
			ep_meta(via_meta[i])->in_port = port;
		}
		w->rx_port = port;
		out_rx = router_parse_stage(rw, via_rx, next_rx, 32);
		l2_rx = rw->l2ctl;
		w->rx_port = EP_RX_PORT_META;
		out_meta = router_parse_stage(rw, via_meta, next_meta, 32);
		l2_meta = rw->l2ctl;
		wrong += out_rx != out_meta || l2_rx != l2_meta ||
			 memcmp(next_rx, next_meta, sizeof(next_rx)) != 0;
		for (int i = 0; i < 32; i++) {
			wrong += memcmp(ep_meta(via_rx[i]), ep_meta(via_meta[i]),
					sizeof(struct ep_meta)) != 0;
			wrong += ep_meta(via_rx[i])->in_port != port;
		}
		diverted += out_rx;
		kept += 32u - out_rx;
		rte_pktmbuf_free_bulk(via_rx, 32);
		rte_pktmbuf_free_bulk(via_meta, 32);
	}
	EP_CHECK_EQ(wrong, 0);
	/* Both outcomes were exercised: frames parsed and frames dropped. */
	EP_CHECK(diverted > 2000);
	EP_CHECK(kept > 4000);
	tr_worker_free(w);
	router_free(r);
}

/*
 * The parse's eight-frame path (AVX-512, router_worker.parse_x8) against
 * its scalar loop on the same bursts from rx, of every size from 1 to 32
 * (groups of eight and the lanes of a last, shorter group): the same
 * next[], diverted count, neigh flag, ep_meta, and ACL inputs given for
 * the same bursts (each input the same bytes of its frame).
 */
EP_TEST(parse_x8_path_equals_the_scalar_parse_on_bursts_of_every_size)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct router_worker *rw = w->pipeline_ctx;
	uint64_t x = 0x2545f4914f6cdd1dull;
	unsigned int wrong = 0, given = 0;

	if (!router_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the parse runs its scalar loop only\n");
		tr_worker_free(w);
		router_free(r);
		return;
	}
	for (int b = 0; b < 320; b++) {
		struct rte_mbuf *vec[32], *sca[32];
		uint16_t next_v[32] = {0}, next_s[32] = {0}, out_v, out_s, n = (uint16_t)(1 + b % 32);
		uint16_t port = (uint16_t)(b & 1), given_v;
		ptrdiff_t in_v[32];
		uint32_t l2_v;

		for (int i = 0; i < n; i++) {
			/* One burst in four IPv4 UDP/TCP as built (the ACL's inputs
			 * are given), the others built and mutated. */
			struct tp_spec sp = tp_default(0, i & 1 ? IPPROTO_TCP : IPPROTO_UDP);
			uint16_t len;

			memcpy(sp.dmac, port == 1 ? MAC_P1 : MAC_P0, 6);
			len = b % 4 == 3 ? tp_build(buf, &sp) : mutated_frame(b * 32 + i, port, &x);
			vec[i] = ep_test_mbuf(buf, len);
			sca[i] = ep_test_mbuf(buf, len);
			memset(ep_meta(vec[i]), 0x5a, sizeof(struct ep_meta));
			memset(ep_meta(sca[i]), 0x5a, sizeof(struct ep_meta));
		}
		w->rx_port = port;
		rw->parse_x8 = true;
		rw->parse_x8_lines = (b >> 1) & 1;     /* both forms of the loads */
		out_v = router_parse_stage(rw, vec, next_v, n);
		l2_v = rw->l2ctl;
		given_v = rw->acl->given;
		for (int i = 0; i < n; i++)
			in_v[i] = rw->acl->sc.data[i] - rte_pktmbuf_mtod(vec[i], const uint8_t *);
		rw->parse_x8 = false;
		out_s = router_parse_stage(rw, sca, next_s, n);
		wrong += out_v != out_s || l2_v != rw->l2ctl || given_v != rw->acl->given ||
			 memcmp(next_v, next_s, sizeof(next_v)) != 0;
		for (int i = 0; i < n; i++) {
			wrong += memcmp(ep_meta(vec[i]), ep_meta(sca[i]), sizeof(struct ep_meta)) != 0;
			if (given_v != 0)
				wrong += in_v[i] != rw->acl->sc.data[i] -
						    rte_pktmbuf_mtod(sca[i], const uint8_t *);
		}
		given += given_v != 0;
		rte_pktmbuf_free_bulk(vec, n);
		rte_pktmbuf_free_bulk(sca, n);
	}
	w->rx_port = EP_RX_PORT_META;
	rw->parse_x8 = router_parse_x8_usable();
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(given >= 80);
	tr_worker_free(w);
	router_free(r);
}

EP_TEST(pipeline_counts_each_drop_in_the_stage_that_decided)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct rte_mbuf *pkts[8], *out[EP_BURST_MAX];
	struct ep_err err;
	struct tp_spec s;
	uint16_t len;
	int n = 0;

	EP_CHECK_EQ(ep_acl_insert(r->acl, "deny proto udp dport 666", -1, &err), 0);
	s = tp_default(0, IPPROTO_UDP);                /* forwarded */
	pkts[n++] = frame(&s);
	len = tp_build(buf, &s);                       /* bad header checksum */
	buf[24] ^= 1;
	pkts[n++] = ep_test_mbuf(buf, len);            /* in_port 0; parse stage finds it */
	s.dport = 666;                                 /* ACL deny */
	pkts[n++] = frame(&s);
	s = tp_default(0, IPPROTO_UDP);                /* no route */
	s.dst4 = tp_ip4("198.19.9.9");
	pkts[n++] = frame(&s);
	s = tp_default(1, IPPROTO_UDP);                /* hop limit 1 */
	s.ttl = 1;
	pkts[n++] = frame(&s);
	pkts[n++] = tr_mbuf(buf, tp_arp(buf, MAC_A, 1, tp_ip4("198.18.0.2"),
					tp_ip4("198.18.0.1")), 0);   /* ARP reply */
	s = tp_default(0, IPPROTO_UDP);                /* another host's MAC */
	s.dmac[5] = 0x77;
	pkts[n++] = frame(&s);
	s = tp_default(0, IPPROTO_ICMP);               /* ping the gateway */
	s.dst4 = tp_ip4("198.18.0.1");
	pkts[n++] = frame(&s);

	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, (uint16_t)n), 0);
	EP_CHECK_EQ(tr_stage(w, "parse")->stats.drops[EP_DROP_IPV4_BAD_CHECKSUM], 1);
	EP_CHECK_EQ(tr_stage(w, "parse")->stats.drops[EP_DROP_L2_NOT_FOR_US], 1);
	EP_CHECK_EQ(tr_stage(w, "neigh")->stats.pkts_tx, 1);
	EP_CHECK_EQ(tr_stage(w, "acl")->stats.drops[EP_DROP_ACL_DENY], 1);
	EP_CHECK_EQ(tr_stage(w, "route")->stats.drops[EP_DROP_NO_ROUTE], 1);
	EP_CHECK_EQ(tr_stage(w, "route")->stats.pkts_tx, 1);
	EP_CHECK_EQ(tr_stage(w, "rewrite")->stats.drops[EP_DROP_IPV6_HOP_LIMIT_EXPIRED], 1);
	EP_CHECK_EQ(tr_stage(w, "rewrite")->stats.pkts_tx, 1);
	/* ARP reply, echo reply, and the ICMP errors the no-route and the
	 * hop-limit-1 packets earned their senders. */
	EP_CHECK_EQ(tr_take_tx(w, 0, out), 4);
	rte_pktmbuf_free_bulk(out, 4);
	EP_CHECK_EQ(tr_take_tx(w, 1, out), 1);
	rte_pktmbuf_free_bulk(out, 1);
	tr_worker_free(w);
	router_free(r);
}

/* Send one UDP frame to @p dst through the pipeline; the port it left on or
 * -1 (what the router generated about it, ICMP errors and ARP/ND
 * questions, does not count). */
static int
send_udp(struct ep_worker *w, int v6, const char *dst, uint16_t dport)
{
	struct tp_spec s = tp_default(v6, IPPROTO_UDP);
	struct rte_mbuf *m, *out[2 * EP_BURST_MAX];
	int port = -1;

	if (v6)
		tp_ip6(s.dst6, dst);
	else
		s.dst4 = tp_ip4(dst);
	s.dport = dport;
	m = frame(&s);
	ep_worker_run_burst(w, &m, 1);
	for (uint16_t p = 0; p < 2; p++) {
		uint16_t k = tr_take_tx(w, p, out);

		for (uint16_t j = 0; j < k; j++) {
			struct ep_meta md;

			if (ep_parse(rte_pktmbuf_mtod(out[j], const uint8_t *), out[j]->data_len,
				     out[j]->pkt_len, &md) == 0 && md.l4_proto == IPPROTO_UDP)
				port = p;
		}
		rte_pktmbuf_free_bulk(out, k);
	}
	return port;
}

/* The parse gives the ACL each packet's input when the whole burst is
 * IPv4 TCP/UDP without options (router_acl_stage then skips the filter's
 * own pass): the acl stage after the parse decides as the filter stage
 * alone, on such bursts and on bursts with ICMP, IPv6, tags and frames
 * the parse dropped (which take the filter's own pass). */
EP_TEST(acl_stage_after_the_parse_decides_as_the_filter_stage_alone)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct router_worker *rw = w->pipeline_ctx;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int wrong = 0, denied = 0, given = 0;
	struct ep_err err;

	EP_CHECK_EQ(ep_acl_insert(r->acl, "deny proto udp dport 5000-5099", -1, &err), 0);
	EP_CHECK_EQ(ep_acl_insert(r->acl, "deny proto tcp dport 22", -1, &err), 0);
	for (int b = 0; b < 300; b++) {
		struct rte_mbuf *pkts[32], *keep[32];
		uint16_t next[32] = {0}, na[32] = {0}, nb[32] = {0}, nk = 0, oa, ob;
		const bool mixed = b % 3 == 2;

		for (int i = 0; i < 32; i++) {
			struct tp_spec sp;
			uint16_t len;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			sp = tp_default(mixed && x % 5 == 0, x & 2 ? IPPROTO_TCP : IPPROTO_UDP);
			if (mixed && x % 7 == 1)
				sp = tp_default(0, IPPROTO_ICMP);
			sp.n_vlans = mixed && x % 11 == 3 ? 1 : 0;
			sp.dport = (uint16_t)(x % 3 == 0 ? 5000 + (x >> 8) % 100 : 1024 + (x >> 8) % 60000);
			if (x % 13 == 4)
				sp.dport = 22;
			memcpy(sp.dmac, MAC_P0, 6);
			len = tp_build(buf, &sp);
			if (mixed && x % 17 == 5)
				buf[0] ^= 2;                    /* another unicast MAC: dropped */
			pkts[i] = ep_test_mbuf(buf, len);
		}
		w->rx_port = 0;
		router_parse_stage(rw, pkts, next, 32);
		given += rw->acl->given == 32;
		for (int i = 0; i < 32; i++)
			if (next[i] == EP_NEXT_CONTINUE)
				keep[nk++] = pkts[i];
			else
				rte_pktmbuf_free(pkts[i]);
		if (nk == 0)
			continue;
		oa = router_acl_stage(rw, keep, na, nk);
		ob = ep_acl_filter_stage(rw->acl, keep, nb, nk);
		wrong += oa != ob || memcmp(na, nb, sizeof(na)) != 0;
		denied += ob;
		rte_pktmbuf_free_bulk(keep, nk);
	}
	w->rx_port = EP_RX_PORT_META;
	EP_CHECK_EQ(wrong, 0);
	/* Both paths ran, and both verdicts were given. */
	EP_CHECK_EQ(given, 200);
	EP_CHECK(denied > 1000);
	tr_worker_free(w);
	router_free(r);
}

EP_TEST(acl_deny_added_between_bursts_takes_effect_on_the_next_burst)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct ep_err err;

	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 5001), 1);
	EP_CHECK_EQ(ep_acl_insert(r->acl, "deny proto udp dport 5001", -1, &err), 0);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 5001), -1);
	EP_CHECK_EQ(tr_stage(w, "acl")->stats.drops[EP_DROP_ACL_DENY], 1);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 5002), 1);
	EP_CHECK_EQ(ep_acl_delete(r->acl, 0, &err), 0);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 5001), 1);
	tr_worker_free(w);
	router_free(r);
}

EP_TEST(route_change_leaves_other_flows_alone)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct ep_err err;

	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.20.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.21.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:20::/48", "2001:db8:0:2::2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:21::/48", "2001:db8:0:2::2", &err), 0);
	for (int i = 0; i < 3; i++) {
		/* Flip the other prefix between access and core; the watched
		 * flows must be forwarded after every change. */
		const char *gw4 = i % 2 ? "198.18.1.2" : "198.18.0.2";
		const char *gw6 = i % 2 ? "2001:db8:0:2::2" : "2001:db8:0:1::2";

		EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.21.0/24", gw4, &err), 0);
		EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:21::/48", gw6, &err), 0);
		EP_CHECK_EQ(send_udp(w, 0, "198.18.20.9", 1), 1);
		EP_CHECK_EQ(send_udp(w, 1, "2001:db8:20::9", 1), 1);
		EP_CHECK_EQ(send_udp(w, 0, "198.18.21.9", 1), i % 2 ? 1 : 0);
		EP_CHECK_EQ(send_udp(w, 1, "2001:db8:21::9", 1), i % 2 ? 1 : 0);
	}
	tr_worker_free(w);
	router_free(r);
}

/* ---- [router] configuration ---- */

static struct ep_cfg *
cfg_text(const char *text)
{
	struct ep_err err;
	struct ep_cfg *cfg = ep_cfg_parse(text, "test.conf", &err);

	if (cfg == NULL)
		printf("    cfg: %s\n", err.msg);
	return cfg;
}

static int
load(struct router *r, const char *text, struct ep_err *err)
{
	struct ep_cfg *cfg = cfg_text(text);
	int rc = router_load_config(r, cfg, ep_cfg_find(cfg, "router", NULL), err);

	ep_cfg_free(cfg);
	return rc;
}

EP_TEST(config_routes_neighbours_and_acl_load_in_order)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct ep_err err = {{0}};

	EP_CHECK_EQ(load(r, "[router]\n"
			 "route = 198.18.30.0/24 via 198.18.1.30\n"
			 "neighbor = 198.18.1.30 02:00:00:00:00:30\n"
			 "neighbor = 198.18.66.1 02:00:00:00:00:66 dev core\n"
			 "route = 198.18.31.0/24 via 198.18.66.1\n"
			 "acl = deny proto udp dport 7\n"
			 "acl = permit proto udp\n"
			 "acl_default = deny\n", &err), 0);
	if (err.msg[0])
		printf("    %s\n", err.msg);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.30.1", 9), 1);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.31.1", 9), 1);
	EP_CHECK_EQ(send_udp(w, 0, "198.18.31.1", 7), -1);
	EP_CHECK_EQ(r->acl->n_rules, 2);
	EP_CHECK(r->acl->default_deny);
	tr_worker_free(w);
	router_free(r);
}

/* Every classify method the CPU allows decides as the default one: a deny
 * rule on a port, a permit, the default action.  A method it does not allow
 * is refused by name and leaves the rule set as it was. */
EP_TEST(config_acl_classify_methods_decide_alike)
{
	static const char *const names[] = { "auto", "avx512x32", "avx512x16", "avx2", "sse",
					     "scalar" };
	int usable = 0;

	for (size_t i = 0; i < RTE_DIM(names); i++) {
		struct router *r = tr_router();
		struct ep_worker *w = tr_worker(r);
		struct ep_err err = {{0}};
		char text[512];

		snprintf(text, sizeof(text), "[router]\n"
			 "route = 198.18.30.0/24 via 198.18.1.30\n"
			 "neighbor = 198.18.1.30 02:00:00:00:00:30\n"
			 "acl = deny proto udp dport 7\n"
			 "acl = permit proto udp dport 9\n"
			 "acl_default = deny\n"
			 "acl_classify = %s\n", names[i]);
		if (load(r, text, &err) < 0) {
			/* Not on this CPU / SIMD width: refused with its name. */
			printf("    %s refused: %s\n", names[i], err.msg);
			EP_CHECK(strstr(err.msg, names[i]) != NULL);
			EP_CHECK(strcmp(names[i], "auto") != 0 && strcmp(names[i], "scalar") != 0);
			EP_CHECK(r->acl == NULL || r->acl->n_rules == 0);
		} else {
			usable++;
			EP_CHECK_EQ(send_udp(w, 0, "198.18.30.1", 9), 1);
			EP_CHECK_EQ(send_udp(w, 0, "198.18.30.1", 7), -1);
			EP_CHECK_EQ(send_udp(w, 0, "198.18.30.1", 11), -1);
			EP_CHECK_EQ(strcmp(ep_acl_alg_name(r->acl->p.alg), names[i]), 0);
		}
		tr_worker_free(w);
		router_free(r);
	}
	EP_CHECK(usable >= 3);     /* auto, sse and scalar on any x86-64 DPDK supports */
}

EP_TEST(config_errors_name_file_line_and_field)
{
	static const struct { const char *text, *needle; } bad[] = {
		{ "[router]\nroute = 198.18.30.0/24 198.18.1.30\n", "test.conf:2" },
		{ "[router]\n\nroute = 198.18.30.0/24 via 10.0.0.1\n", "test.conf:3" },
		{ "[router]\nneighbor = 198.18.1.30\n", "<ip> <mac>" },
		{ "[router]\nacl = permit proto udp dport x\n", "dport" },
		{ "[router]\nacl_default = maybe\n", "permit or deny" },
		{ "[router]\nacl = deny proto udp\nacl_classify = fastest\n", "avx2, sse or scalar" },
		{ "[router]\nroute_file = /nonexistent/routes\n", "No such file or directory" },
	};

	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		struct router *r = tr_router();
		struct ep_err err = {{0}};

		EP_CHECK(load(r, bad[i].text, &err) < 0);
		if (strstr(err.msg, bad[i].needle) == NULL) {
			printf("    case %zu: '%s' lacks '%s'\n", i, err.msg, bad[i].needle);
			ep_test_failed = 1;
		}
		router_free(r);
	}
}

EP_TEST(config_route_and_acl_files_load_with_line_numbers_in_errors)
{
	char rpath[] = "/tmp/ep_routes_XXXXXX", apath[] = "/tmp/ep_acl_XXXXXX";
	int rfd = mkstemp(rpath), afd = mkstemp(apath);
	FILE *rf = fdopen(rfd, "w"), *af = fdopen(afd, "w");
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	struct ep_err err = {{0}};
	char text[256];

	fprintf(rf, "# routes\n");
	for (int i = 0; i < 500; i++)
		fprintf(rf, "198.19.%d.0/24 via 198.18.1.2\n", i % 250 + (i >= 250 ? 0 : 0));
	fprintf(rf, "\n2001:db8:77::/48 via 2001:db8:0:2::2   # v6 too\n");
	fclose(rf);
	fprintf(af, "deny proto udp dport 9   \npermit\n");
	fclose(af);
	snprintf(text, sizeof(text), "[router]\nroute_file = %s\nacl_file = %s\n", rpath, apath);
	EP_CHECK_EQ(load(r, text, &err), 0);
	EP_CHECK_EQ(send_udp(w, 0, "198.19.200.1", 1), 1);
	EP_CHECK_EQ(send_udp(w, 1, "2001:db8:77::1", 1), 1);
	EP_CHECK_EQ(send_udp(w, 0, "198.19.200.1", 9), -1);
	EP_CHECK_EQ(r->acl->n_rules, 2);
	tr_worker_free(w);
	router_free(r);

	rf = fopen(rpath, "w");
	fprintf(rf, "198.19.1.0/24 via 198.18.1.2\n198.19.2.0/24 via\n");
	fclose(rf);
	r = tr_router();
	snprintf(text, sizeof(text), "[router]\nroute_file = %s\n", rpath);
	EP_CHECK(load(r, text, &err) < 0);
	snprintf(text, sizeof(text), "%s:2:", rpath);
	EP_CHECK(strstr(err.msg, text) != NULL);
	router_free(r);
	unlink(rpath);
	unlink(apath);
}

/* ---- control commands ---- */

static json_t *
ctl(const char *json)
{
	json_error_t je;
	json_t *req = json_loads(json, 0, &je);
	json_t *res = ep_ctl_dispatch(&tr_eng, req);

	json_decref(req);
	return res;
}

static int
ctl_ok(const char *json)
{
	json_t *res = ctl(json);
	int ok = json_is_true(json_object_get(res, "ok"));

	if (!ok)
		printf("    %s -> %s\n", json, json_string_value(json_object_get(res, "error")));
	json_decref(res);
	return ok;
}

static int
ctl_err_has(const char *json, const char *needle)
{
	json_t *res = ctl(json);
	const char *e = json_string_value(json_object_get(res, "error"));
	int ok = !json_is_true(json_object_get(res, "ok")) && e != NULL && strstr(e, needle);

	if (!ok)
		printf("    %s -> %s (want '%s')\n", json, e ? e : "ok", needle);
	json_decref(res);
	return ok;
}

EP_TEST(ctl_route_neigh_acl_commands_change_the_tables)
{
	struct router *r = tr_router();
	struct ep_worker *w = tr_worker(r);
	json_t *res;

	EP_CHECK(ctl_ok("{\"cmd\":\"route-add\",\"prefix\":\"198.18.40.0/24\",\"via\":\"198.18.1.2\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.40.1", 1), 1);
	res = ctl("{\"cmd\":\"route-list\",\"limit\":2}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(res, "result"), "routes")), 2);
	EP_CHECK_EQ(json_integer_value(json_object_get(json_object_get(res, "result"), "count")),
		    r->fib->n_routes4 + r->fib->n_routes6);
	json_decref(res);
	EP_CHECK(ctl_ok("{\"cmd\":\"route-del\",\"prefix\":\"198.18.40.0/24\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.40.1", 1), -1);

	EP_CHECK(ctl_ok("{\"cmd\":\"neigh-add\",\"ip\":\"198.18.1.44\",\"mac\":\"02:00:00:00:00:44\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.44", 1), 1);
	res = ctl("{\"cmd\":\"neigh-list\"}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(res, "result"), "neighbors")), 5);
	json_decref(res);
	EP_CHECK(ctl_ok("{\"cmd\":\"neigh-del\",\"ip\":\"198.18.1.44\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.44", 1), -1);

	EP_CHECK(ctl_ok("{\"cmd\":\"acl-add\",\"rule\":\"deny proto udp dport 53\"}"));
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-add\",\"rule\":\"permit proto udp dport 53 src 198.18.0.2\",\"index\":0}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 53), 1);
	res = ctl("{\"cmd\":\"acl-list\"}");
	EP_CHECK_EQ(strcmp(json_string_value(json_object_get(json_array_get(json_object_get(
		json_object_get(res, "result"), "rules"), 0), "rule")),
		"permit proto udp src 198.18.0.2/32 dport 53"), 0);
	json_decref(res);
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-del\",\"index\":0}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 53), -1);
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-replace\",\"rules\":\"deny proto udp dport 54; permit\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 53), 1);
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-replace\",\"rules\":[\"deny proto udp\"]}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 53), -1);
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-replace\",\"rules\":[]}"));
	EP_CHECK(ctl_ok("{\"cmd\":\"acl-set-default\",\"action\":\"deny\"}"));
	EP_CHECK_EQ(send_udp(w, 0, "198.18.1.2", 53), -1);
	res = ctl("{\"cmd\":\"addr-list\"}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(res, "result"), "addresses")), 4);
	json_decref(res);
	tr_worker_free(w);
	router_free(r);
}

EP_TEST(ctl_errors_name_the_command_and_field)
{
	struct router *r = tr_router();

	EP_CHECK(ctl_err_has("{\"cmd\":\"route-add\",\"via\":\"198.18.1.2\"}", "prefix"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"route-add\",\"prefix\":\"198.18.40.0/24\",\"via\":\"x\"}",
			     "route-add: via"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"neigh-add\",\"ip\":\"198.18.1.4\",\"mac\":\"zz\"}",
			     "neigh-add: mac"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"acl-add\",\"rule\":\"permit bogus\"}", "acl-add: rule"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"acl-del\",\"index\":9}", "acl-del: index"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"acl-del\"}", "index"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"acl-replace\",\"rules\":[\"permit\", 5]}", "rules[1]"));
	EP_CHECK(ctl_err_has("{\"cmd\":\"acl-set-default\",\"action\":\"drop\"}", "action"));
	router_free(r);
	EP_CHECK(ctl_err_has("{\"cmd\":\"route-list\"}", "no FIB"));
}

/* ---- the README's examples ---- */

static char *
readme(void)
{
	/* meson runs tests in the build directory, where __FILE__ is relative. */
	char path[512];
	const char *slash = strrchr(__FILE__, '/');
	FILE *f;
	char *text;
	long n;

	snprintf(path, sizeof(path), "%.*s/README.md", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".");
	f = fopen(path, "r");
	if (f == NULL)
		f = fopen("dataplane/router/README.md", "r");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		text[0] = '\0';
	fclose(f);
	return text;
}

EP_TEST(readme_config_example_loads_and_its_commands_exist)
{
	char *text = readme(), *block, *end, *line, *save = NULL;
	char cfg[4096] = "";
	struct router *r = tr_router();
	struct ep_err err = {{0}};
	int commands = 0;

	EP_CHECK(text != NULL);
	if (text == NULL) {
		router_free(r);
		return;
	}
	/* Every command in the table is registered (an unknown one would say so). */
	for (char *p = strstr(text, "| `"); p != NULL; p = strstr(p + 3, "| `")) {
		char name[32], req[96];
		json_t *res;
		const char *e;

		if (sscanf(p, "| `%31[a-z-]`", name) != 1 || strchr(name, '-') == NULL)
			continue;
		snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"limit\":1}", name);
		if (strcmp(name, "acl-set-default") == 0 || strcmp(name, "acl-replace") == 0)
			continue;   /* these would change the set just loaded; covered above */
		res = ctl(req);
		e = json_string_value(json_object_get(res, "error"));
		if (e != NULL && strstr(e, "unknown command") != NULL) {
			printf("    README names '%s': %s\n", name, e);
			ep_test_failed = 1;
		}
		commands++;
		json_decref(res);
	}
	EP_CHECK(commands >= 10);
	/* (Last: strtok_r cuts the text.) */
	/* The [router] example, without the two file keys (paths of the reader's
	 * system), loads into the test ports (sizing keys are setup()'s, unread here). */
	block = strstr(text, "```\n[router]\n");
	EP_CHECK(block != NULL);
	end = block ? strstr(block + 4, "```") : NULL;
	if (block != NULL && end != NULL) {
		*end = '\0';
		for (line = strtok_r(block + 4, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save))
			if (strncmp(line, "route_file", 10) != 0 && strncmp(line, "acl_file", 8) != 0)
				snprintf(cfg + strlen(cfg), sizeof(cfg) - strlen(cfg), "%s\n", line);
		EP_CHECK_EQ(load(r, cfg, &err), 0);
		if (err.msg[0])
			printf("    README config: %s\n", err.msg);
		EP_CHECK_EQ(r->acl->n_rules, 2);
	}
	free(text);
	router_free(r);
}
