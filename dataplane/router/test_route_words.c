/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tbl24 words the parse's eight-frame path reads for the route stage
 * (router_worker.route_words, ep_fib_x8_words): equal to the table's
 * words, refused for bursts with a martian address or a packet the x8
 * checks do not pass, routed as the route stage's own lookups route them,
 * and never used for a burst other than the one they were read for.
 */
#include "fib/ep_fib_x8.h"
#include "test_router.h"

static uint8_t buf[2048];

/* Destinations cycled over a burst: a connected host, a /20, a /25 (an
 * extended tbl24 word: rte_lpm reads tbl8), no route in a routed /8, no
 * route in a /8 without routes (ep_fib_addr4 folds it), the router's own
 * address (ICMP echo: answered by the route stage). */
static const char *const dsts[] = { "198.18.1.2", "198.18.16.5", "198.18.16.200",
				    "198.19.9.9", "10.1.2.3", "198.18.0.1" };

static struct router *
words_router(void)
{
	struct router *r = tr_router();
	struct ep_err err;

	if (ep_fib_route_add(r->fib, "198.18.16.0/20", "198.18.1.2", &err) != 0 ||
	    ep_fib_route_add(r->fib, "198.18.16.128/25", "198.18.0.2", &err) != 0)
		abort();
	return r;
}

/* Packet @p i of a burst: IPv4 to dsts[(i + k) % 6], UDP (ICMP echo to the
 * router's own address), to port 0's MAC, from @p src. */
static struct rte_mbuf *
words_pkt(int i, int k, uint32_t src, uint32_t *dst)
{
	const int d = (i + k) % (int)RTE_DIM(dsts);
	struct tp_spec s = tp_default(0, d == 5 ? IPPROTO_ICMP : IPPROTO_UDP);
	struct rte_mbuf *m;

	s.dst4 = tp_ip4(dsts[d]);
	s.src4 = src;
	s.sport = (uint16_t)(1000 + i);
	memcpy(s.dmac, MAC_P0, 6);
	m = ep_test_mbuf(buf, tp_build(buf, &s));
	memset(ep_meta(m), 0x5a, sizeof(struct ep_meta));
	if (dst != NULL)
		*dst = s.dst4;
	return m;
}

/* The table's tbl24 word for @p dst, as the route stage reads it. */
static uint32_t
table_word(const struct ep_fib *fib, uint32_t dst)
{
	uint32_t word;

	memcpy(&word, &fib->lpm4->tbl24[ep_fib_addr4(fib, dst) >> 8], 4);
	return word;
}

/* A worker of words_router() receiving on port 0 (the parse's x8 path
 * runs on bursts from rx), or NULL where the CPU lacks AVX-512. */
static struct ep_worker *
words_worker(struct router **r, struct router_worker **rw)
{
	struct ep_worker *w;

	if (!router_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the parse reads no words\n");
		return NULL;
	}
	*r = words_router();
	w = tr_worker(*r);
	w->rx_port = 0;
	*rw = w->pipeline_ctx;
	return w;
}

static void
words_done(struct router *r, struct ep_worker *w)
{
	tr_free_tx(w);
	tr_worker_free(w);
	router_free(r);
}

EP_TEST(parse_x8_route_words_equal_the_tables_words_on_bursts_of_every_size)
{
	struct router *r;
	struct router_worker *rw;
	struct ep_worker *w = words_worker(&r, &rw);
	unsigned int wrong = 0;

	if (w == NULL)
		return;
	for (uint16_t n = 1; n <= 32; n++) {
		struct rte_mbuf *pkts[32];
		uint32_t dst[32];
		uint16_t next[32] = {0};

		for (int i = 0; i < n; i++)
			pkts[i] = words_pkt(i, n, tp_ip4("198.18.0.2"), &dst[i]);
		wrong += router_parse_stage(rw, pkts, next, n) != 0;
		wrong += !ep_fib_burst_words_for(&rw->route_words, pkts, n);
		for (int i = 0; i < n; i++)
			wrong += rw->route_words.words[i] != table_word(r->fib, dst[i]);
		rte_pktmbuf_free_bulk(pkts, n);
	}
	EP_CHECK_EQ(wrong, 0);
	words_done(r, w);
}

/* A martian source or destination (RFC 1812 5.3.7) in any lane, or a lane
 * the x8 checks leave to the scalar parse (IPv6), and the burst has no
 * words: the route stage's own path drops or routes it. */
EP_TEST(parse_x8_reads_no_route_words_for_a_burst_with_a_martian_or_ipv6_packet)
{
	static const char *const martians[] = { "224.1.1.1", "127.0.0.1", "169.254.1.1",
						"0.1.2.3" };
	struct router *r;
	struct router_worker *rw;
	struct ep_worker *w = words_worker(&r, &rw);
	unsigned int wrong = 0, cases = 0;

	if (w == NULL)
		return;
	for (size_t k = 0; k < RTE_DIM(martians); k++) {
		for (int as_src = 0; as_src < 3; as_src++) {
			struct rte_mbuf *pkts[20];
			uint16_t next[20] = {0};
			const int bad = (int)(3 + 5 * k) % 20;

			for (int i = 0; i < 20; i++)
				pkts[i] = words_pkt(i, 0, tp_ip4("198.18.0.2"), NULL);
			rte_pktmbuf_free(pkts[bad]);
			if (as_src == 2) {
				struct tp_spec s = tp_default(1, IPPROTO_UDP);

				memcpy(s.dmac, MAC_P0, 6);
				pkts[bad] = ep_test_mbuf(buf, tp_build(buf, &s));
			} else {
				struct tp_spec s = tp_default(0, IPPROTO_UDP);

				memcpy(s.dmac, MAC_P0, 6);
				if (as_src)
					s.src4 = tp_ip4(martians[k]);
				else
					s.dst4 = tp_ip4(martians[k]);
				pkts[bad] = ep_test_mbuf(buf, tp_build(buf, &s));
			}
			router_parse_stage(rw, pkts, next, 20);
			wrong += rw->route_words.n != 0;
			router_route_stage(rw, pkts, next, 20);
			if (as_src < 2)
				wrong += next[bad] != EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS);
			cases++;
			rte_pktmbuf_free_bulk(pkts, 20);
			tr_free_tx(w);
		}
	}
	EP_CHECK_EQ(cases, 12);
	EP_CHECK_EQ(wrong, 0);
	words_done(r, w);
}

/* The same bursts routed with the parse's words and without them (the
 * words dropped before the route stage): the same verdicts, the same next
 * hops, on bursts of every size. */
EP_TEST(route_stage_with_the_parses_words_routes_as_its_own_lookups_on_bursts_of_every_size)
{
	struct router *r;
	struct router_worker *rw;
	struct ep_worker *w = words_worker(&r, &rw);
	unsigned int wrong = 0, used = 0, forwarded = 0, diverted = 0;

	if (w == NULL)
		return;
	for (uint16_t n = 1; n <= 32; n++) {
		struct rte_mbuf *a[32], *b[32];
		uint16_t next_a[32] = {0}, next_b[32] = {0}, out_a, out_b;

		for (int i = 0; i < n; i++) {
			a[i] = words_pkt(i, n, tp_ip4("198.18.0.2"), NULL);
			b[i] = words_pkt(i, n, tp_ip4("198.18.0.2"), NULL);
		}
		router_parse_stage(rw, a, next_a, n);
		used += ep_fib_burst_words_for(&rw->route_words, a, n);
		out_a = router_route_stage(rw, a, next_a, n);
		router_parse_stage(rw, b, next_b, n);
		ep_fib_burst_words_give(&rw->route_words, 0, NULL);
		out_b = router_route_stage(rw, b, next_b, n);
		wrong += out_a != out_b || memcmp(next_a, next_b, sizeof(next_a)) != 0;
		for (int i = 0; i < n; i++) {
			if (next_a[i] != 0)
				continue;
			wrong += ep_meta(a[i])->nexthop != ep_meta(b[i])->nexthop ||
				 ep_meta_nh(a[i]) != ep_meta_nh(b[i]);
			forwarded++;
		}
		diverted += out_a;
		rte_pktmbuf_free_bulk(a, n);
		rte_pktmbuf_free_bulk(b, n);
		tr_free_tx(w);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK_EQ(used, 32);
	/* Both outcomes: forwarded (a resolved next hop) and diverted (no
	 * route, the echo reply). */
	EP_CHECK(forwarded > 200);
	EP_CHECK(diverted > 100);
	words_done(r, w);
}

/*
 * Words are for the burst they were read for: a burst routed after
 * another burst's parse (other mbufs), the same burst less a packet a
 * stage between dropped (first or last), and the same burst routed a
 * second time each take their own lookups.  The frames' destinations are
 * changed after the parse to one without a route, so a stale word would
 * forward them.
 */
EP_TEST(route_stage_never_uses_the_words_of_another_burst)
{
	struct rte_mbuf *a[16], *other[16];
	unsigned int wrong = 0;
	struct router *r;
	struct router_worker *rw;
	struct ep_worker *w = words_worker(&r, &rw);

	if (w == NULL)
		return;
	for (int c = 0; c < 4; c++) {
		struct rte_mbuf **routed = a;
		uint16_t next[16] = {0}, n = 16, out;

		for (int i = 0; i < 16; i++) {
			a[i] = words_pkt(1, 0, tp_ip4("198.18.0.2"), NULL);     /* the /20 */
			other[i] = words_pkt(3, 0, tp_ip4("198.18.0.2"), NULL); /* no route */
		}
		router_parse_stage(rw, other, next, 16);       /* their ep_meta */
		router_parse_stage(rw, a, next, 16);
		wrong += !ep_fib_burst_words_for(&rw->route_words, a, 16);
		if (c == 0) {
			routed = other;                 /* another burst */
		} else {
			for (int i = 0; i < 16; i++) {
				struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(
					a[i], struct rte_ipv4_hdr *, ep_meta(a[i])->l3_off);

				ip->dst_addr = htonl(tp_ip4("198.19.9.9"));
			}
			if (c == 1) {
				routed = a + 1;         /* the first dropped */
				n = 15;
			} else if (c == 2) {
				n = 15;                 /* the last dropped */
			} else {
				uint16_t first[16] = {0};   /* the burst's own route */

				router_route_stage(rw, a, first, 16);
			}
		}
		memset(next, 0, sizeof(next));
		out = router_route_stage(rw, routed, next, n);
		wrong += out != n;
		for (int i = 0; i < n; i++)
			wrong += next[i] != EP_NEXT_DROP(EP_DROP_NO_ROUTE);
		rte_pktmbuf_free_bulk(a, 16);
		rte_pktmbuf_free_bulk(other, 16);
		tr_free_tx(w);
	}
	EP_CHECK_EQ(wrong, 0);
	words_done(r, w);
}


#ifdef EP_PARSE_X8
/* ep_fib_x8_keep's words, made from keep4b's bytes, against keep4's words
 * (what a gather of keep4 read): for every /8 in every lane, under masks
 * of every shape, as routes longer than /8 come into a /8 and go. */
static EP_X8_TARGET unsigned int
keep_lanes_differ(const struct ep_fib *fib, uint64_t *x)
{
	static const __mmask8 masks[] = { 0xff, 0x00, 0x01, 0x80, 0x55, 0xaa, 0x3c };
	unsigned int wrong = 0;

	for (uint32_t top = 0; top < 256; top++)
		for (size_t k = 0; k < RTE_DIM(masks); k++) {
			alignas(64) uint64_t a[8], got[8];

			for (int l = 0; l < 8; l++) {
				/* lane l: /8 top + 37 * l, any low 24 bits */
				*x = *x * 6364136223846793005ull + 1442695040888963407ull;
				a[l] = ((top + 37u * (uint32_t)l) & 0xffu) << 24 | (*x >> 40);
			}
			_mm512_store_si512(got, ep_fib_x8_keep(fib, masks[k],
								_mm512_load_si512(a)));
			for (int l = 0; l < 8; l++)
				wrong += got[l] != ((masks[k] >> l & 1) ? fib->keep4[a[l] >> 24] : 0);
		}
	return wrong;
}

EP_TEST(parse_x8_keep_words_equal_keep4s_for_every_slash8_in_every_lane)
{
	struct router *r;
	struct router_worker *rw;
	struct ep_worker *w = words_worker(&r, &rw);
	unsigned int wrong = 0;
	uint64_t x = 1918;
	struct ep_err err;

	if (w == NULL)
		return;
	wrong += keep_lanes_differ(r->fib, &x);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "20.1.0.0/16", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "224.1.2.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "255.0.0.0/8", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(r->fib->keep4[20], 0x00ffffffu);
	EP_CHECK_EQ(r->fib->keep4[224], 0x00ffffffu | EP_FIB_KEEP4_MARTIAN);
	wrong += keep_lanes_differ(r->fib, &x);
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "20.1.0.0/16", &err), 0);
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "224.1.2.0/24", &err), 0);
	EP_CHECK_EQ(r->fib->keep4[20], 0u);
	wrong += keep_lanes_differ(r->fib, &x);
	EP_CHECK_EQ(wrong, 0);
	words_done(r, w);
}
#endif
