/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The FIB module's API: instances independent of each other, prefetch +
 * lookup equal to lookup, the next hop in its own ep_meta field, neighbour
 * resolution (ask, hear, install, age), ICMP errors with their rate limit,
 * the out port's MTU (fragmentation, fragmentation needed, packet too big),
 * and the measurement behind rte_lpm over rte_fib.
 */
#include <rte_cycles.h>
#include <rte_fib.h>
#include <rte_icmp.h>
#include <rte_lpm.h>
#include <rte_random.h>

#include "ep_test_l3.h"
#include "engine_internal.h"
#include "fib/ep_fib_burst_words.h"
#include "fib/ep_fib_node.h"

/* DPDK 22.11's RTE_IPV4 shifts an int: 198 << 24 overflows it (UBSAN). */
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

static uint8_t buf[4096];

static struct ep_fib *
fib_new(const char *name, bool learn)
{
	struct ep_fib_params p;
	struct ep_err err = {{0}};
	struct ep_fib *f;

	tr_engine_init();
	ep_fib_params_default(&p);
	p.max_routes4 = p.max_routes6 = 1024;
	p.lpm4_tbl8s = 64;
	p.lpm6_tbl8s = 256;
	p.max_nexthops = 64;
	p.neigh_learn = learn;
	f = ep_fib_create(&tr_eng, name, &p, &err);
	if (f == NULL) {
		printf("    ep_fib_create: %s\n", err.msg);
		abort();
	}
	return f;
}

/* A FIB worker context on its own ep_worker, whose tx buffers collect what
 * it generates. */
static struct ep_fib_worker *
fw_new(struct ep_fib *f)
{
	static unsigned int id;
	struct ep_err err;
	struct ep_worker *w = ep_worker_create(&tr_eng, 200 + id++, "fib", &err);
	struct ep_fib_worker *fw = w != NULL ? ep_fib_worker_create(f, w, SOCKET_ID_ANY) : NULL;

	if (fw == NULL)
		abort();
	return fw;
}

static void
fw_free(struct ep_fib_worker *fw)
{
	struct ep_worker *w = fw->w;

	for (int p = 0; p < 2; p++) {
		rte_pktmbuf_free_bulk(w->txbuf[p].pkts, w->txbuf[p].n);
		w->txbuf[p].n = 0;
	}
	ep_fib_worker_free(fw);
	ep_worker_free(w);
}

/* Take what @p fw sent on @p port (caller frees). */
static uint16_t
sent(struct ep_fib_worker *fw, uint16_t port, struct rte_mbuf **out)
{
	struct ep_txbuf *tb = &fw->w->txbuf[port];
	uint16_t n = tb->n;

	memcpy(out, tb->pkts, sizeof(out[0]) * n);
	tb->n = 0;
	return n;
}

static uint16_t
route1(struct ep_fib_worker *fw, struct rte_mbuf *m)
{
	uint16_t next[1] = {0};

	ep_fib_route_burst(fw, &m, next, 1, EP_FIB_ROUTE_PREFETCH | EP_FIB_ROUTE_SRC_CHECK,
			   ep_fib_local_echo, NULL);
	return next[0];
}

static uint16_t
udp_to(struct ep_fib_worker *fw, int v6, const char *dst, uint32_t *nh)
{
	struct tp_spec s = tp_default(v6, IPPROTO_UDP);
	struct rte_mbuf *m;
	uint16_t v;

	if (v6)
		tp_ip6(s.dst6, dst);
	else
		s.dst4 = tp_ip4(dst);
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	ep_meta(m)->user = 0x5eb5c81b;
	v = route1(fw, m);
	if (nh != NULL)
		*nh = ep_meta(m)->nexthop;
	EP_CHECK_EQ(ep_meta(m)->user, 0x5eb5c81b);     /* the pipeline's field is left alone */
	rte_pktmbuf_free(m);
	return v;
}

/* ---- instances ---- */

EP_TEST(fib_instances_are_independent_and_named_once_per_engine)
{
	struct ep_fib *a = fib_new("a", false), *b = fib_new("b", false);
	struct ep_fib_worker *wa = fw_new(a), *wb = fw_new(b);
	struct ep_fib_params p;
	struct ep_err err;
	uint32_t nh = 0;

	EP_CHECK(ep_fib_find(&tr_eng, "a") == a && ep_fib_find(&tr_eng, "b") == b);
	EP_CHECK_EQ(ep_fib_neigh_add(a, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(a, "198.18.50.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(udp_to(wa, 0, "198.18.50.1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK(nh >= EP_FIB_NH_FIRST);
	EP_CHECK_EQ(udp_to(wb, 0, "198.18.50.1", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	EP_CHECK_EQ(b->n_routes4 + 2, a->n_routes4);     /* the route and the host route */
	ep_fib_params_default(&p);
	EP_CHECK(ep_fib_create(&tr_eng, "a", &p, &err) == NULL);
	EP_CHECK(strstr(err.msg, "exists") != NULL);
	fw_free(wa);
	fw_free(wb);
	ep_fib_free(a);
	EP_CHECK(ep_fib_find(&tr_eng, "a") == NULL);
	EP_CHECK(ep_fib_next(&tr_eng, NULL) == b);
	ep_fib_free(b);
}

/* ---- the route change log ---- */

struct seen_change { int n, present, gone; uint32_t last_nh; uint8_t last_plen; };

static int
count_change(uint8_t family, const uint8_t *prefix, uint8_t plen, bool present,
	     enum ep_fib_route_kind kind, uint32_t nh, void *arg)
{
	struct seen_change *c = arg;

	(void)family;
	(void)prefix;
	(void)kind;
	c->n++;
	if (present) {
		c->present++;
		c->last_nh = nh;
	} else {
		c->gone++;
	}
	c->last_plen = plen;
	return 0;
}

/*
 * The change log gives a mirror each route changed since a point, with its
 * state now (an added and then removed route is gone at every visit), and
 * says when more changes than it keeps happened since (a mirror must then
 * walk the table).
 */
EP_TEST(fib_route_change_log_lists_changed_routes_with_their_state_now_and_says_when_overrun)
{
	struct ep_fib *f = fib_new("cl", false);
	struct seen_change c;
	struct ep_err err;
	uint64_t since;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	since = f->route_seq;
	EP_CHECK(ep_fib_route_changes_kept(f, since));
	EP_CHECK_EQ(ep_fib_route_add(f, "198.18.50.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "198.18.51.0/25", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_del(f, "198.18.51.0/25", &err), 0);
	EP_CHECK_EQ(f->route_seq, since + 3);
	memset(&c, 0, sizeof(c));
	EP_CHECK_EQ(ep_fib_route_changes(f, since, count_change, &c), 0);
	EP_CHECK_EQ(c.n, 3);
	EP_CHECK_EQ(c.present, 1);      /* the /24, present now */
	EP_CHECK_EQ(c.gone, 2);         /* the /25, added then removed: gone both times */
	EP_CHECK_EQ(c.last_plen, 25);
	memset(&c, 0, sizeof(c));
	EP_CHECK_EQ(ep_fib_route_changes(f, since + 3, count_change, &c), 0);
	EP_CHECK_EQ(c.n, 0);
	for (uint32_t i = 0; i < EP_FIB_CHANGES / 2; i++) {
		EP_CHECK_EQ(ep_fib_route_add(f, "198.18.52.0/26", "198.18.1.2", &err), 0);
		EP_CHECK_EQ(ep_fib_route_del(f, "198.18.52.0/26", &err), 0);
	}
	EP_CHECK_EQ(ep_fib_route_add(f, "198.18.52.0/26", "198.18.1.2", &err), 0);
	EP_CHECK(!ep_fib_route_changes_kept(f, since));
	EP_CHECK(ep_fib_route_changes_kept(f, f->route_seq - EP_FIB_CHANGES));
	memset(&c, 0, sizeof(c));
	EP_CHECK_EQ(ep_fib_route_changes(f, f->route_seq - EP_FIB_CHANGES, count_change, &c), 0);
	EP_CHECK(c.n == (int)EP_FIB_CHANGES && c.present == c.n && c.last_plen == 26);
	ep_fib_free(f);
}

/*
 * After adds, replacements and deletes of nested prefixes (/8../30, so
 * tbl8 groups are made and freed), an IPv4 lookup gives each destination
 * its longest match, checked against a search of the route list, or no
 * route; with its tbl24 line prefetched first (as the route burst does) it
 * gives the same.
 */
EP_TEST(fib_ipv4_lookup_finds_the_longest_match_after_adds_and_deletes)
{
	enum { N = 300 };
	struct ep_fib *f = fib_new("pf", false);
	struct ep_err err;
	uint32_t net[N], gw_of[2];
	uint8_t plen[N];
	bool live[N];
	int bad = 0, wrong = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.3", "02:00:00:00:00:0c", NULL, &err), 0);
	gw_of[0] = IP4(198, 18, 1, 3);
	gw_of[1] = IP4(198, 18, 1, 2);
	for (int i = 0; i < N; i++) {
		char pfx[32];
		uint32_t be;

		/* Nested prefixes too: /8../30 under 20.0.0.0/6. */
		plen[i] = (uint8_t)(8 + i % 23);
		net[i] = (IP4(20, 0, 0, 0) | ((uint32_t)rte_rand() & 0x03ffffff)) &
			 (0xffffffffu << (32 - plen[i]));
		be = rte_cpu_to_be_32(net[i]);
		snprintf(pfx, sizeof(pfx), "%u.%u.%u.%u/%u", ((uint8_t *)&be)[0],
			 ((uint8_t *)&be)[1], ((uint8_t *)&be)[2], ((uint8_t *)&be)[3], plen[i]);
		live[i] = ep_fib_route_add(f, pfx, i % 2 ? "198.18.1.2" : "198.18.1.3", &err) == 0;
		EP_CHECK(live[i]);
		for (int k = 0; live[i] && k < i; k++)     /* a later same prefix replaces */
			if (live[k] && net[k] == net[i] && plen[k] == plen[i])
				live[k] = false;
		if (i % 3 == 2 && live[i - 1]) {            /* and some go again */
			be = rte_cpu_to_be_32(net[i - 1]);
			snprintf(pfx, sizeof(pfx), "%u.%u.%u.%u/%u", ((uint8_t *)&be)[0],
				 ((uint8_t *)&be)[1], ((uint8_t *)&be)[2], ((uint8_t *)&be)[3],
				 plen[i - 1]);
			EP_CHECK_EQ(ep_fib_route_del(f, pfx, &err), 0);
			live[i - 1] = false;
		}
	}
	for (int r = 0; r < 200; r++) {
		uint32_t dst[32], nh[32];

		for (int j = 0; j < 32; j++) {
			int k = (int)(rte_rand() % N);

			/* Half inside a route (maybe a longer one under it), half anywhere. */
			dst[j] = j % 2 ? (uint32_t)rte_rand() :
				 net[k] | ((uint32_t)rte_rand() & ~(0xffffffffu << (32 - plen[k])));
		}
		for (int j = 0; j < 32; j++)
			nh[j] = ep_fib_lookup4(f, dst[j]);
		for (int j = 0; j < 32; j++)
			ep_fib_prefetch4(f, dst[j]);
		for (int j = 0; j < 32; j++) {
			int best = -1;

			bad += nh[j] != ep_fib_lookup4(f, dst[j]);
			if ((dst[j] >> 17) == (IP4(198, 18, 0, 0) >> 17))
				continue;           /* the ports' connected routes */
			for (int k = 0; k < N; k++)
				if (live[k] && (dst[j] & (0xffffffffu << (32 - plen[k]))) == net[k] &&
				    (best < 0 || plen[k] > plen[best]))
					best = k;
			if (best < 0) {
				wrong += nh[j] != EP_FIB_NO_ROUTE;
			} else {
				uint32_t gw;

				if (nh[j] >= f->p.max_nexthops) {
					wrong++;
					continue;
				}
				memcpy(&gw, ep_fib_nh_read(f, nh[j])->ip, 4);
				wrong += rte_be_to_cpu_32(gw) != gw_of[best % 2];
			}
		}
	}
	EP_CHECK_EQ(bad, 0);
	EP_CHECK_EQ(wrong, 0);
	ep_fib_free(f);
}

/* rte_lpm's own answer for @p dst, the address as it is (what
 * ep_fib_addr4 may replace by a fixed address of its /8). */
static uint32_t
lpm_as_is(const struct ep_fib *f, uint32_t dst)
{
	uint32_t idx;

	return rte_lpm_lookup(f->lpm4, dst, &idx) == 0 ? idx : f->default_nh[0];
}

static int
lookups_differ(const struct ep_fib *f, int tries)
{
	int bad = 0;

	for (int t = 0; t < tries; t++) {
		uint32_t dst = (uint32_t)rte_rand();

		bad += ep_fib_lookup4(f, dst) != lpm_as_is(f, dst);
	}
	return bad;
}

/* The /8s whose keep4b byte does not say what their keep4 word says. */
static int
keep4b_differ(const struct ep_fib *f)
{
	int n = 0;

	for (uint32_t top = 0; top < 256; top++) {
		uint32_t w = f->keep4[top];
		uint8_t want = (uint8_t)(((w & 0x00ffffffu) != 0 ? EP_FIB_KEEP4B_LONG : 0) |
					 ((w & EP_FIB_KEEP4_MARTIAN) != 0 ? EP_FIB_KEEP4B_MARTIAN : 0));

		n += f->keep4b[top] != want;
	}
	return n;
}

/*
 * A /8 that holds no route longer than /8 is looked up at one fixed
 * address of it (ep_fib_addr4): with a default, /1 and /8 routes, and
 * longer routes added to and deleted from some /8s (replaced too), every
 * lookup equals rte_lpm's for the address as it is, the /8's word says
 * "as it is" exactly while it holds a longer route, and prefetch and
 * lookup read the same line.
 */
EP_TEST(fib_ipv4_slash8_without_longer_routes_is_looked_up_at_one_address_alike)
{
	struct ep_fib *f = fib_new("p8", false);
	struct ep_err err;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "0.0.0.0/0", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "128.0.0.0/1", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.0.0.0/8", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(f->keep4[20], 0u);
	EP_CHECK_EQ(f->keep4[200], 0u);
	EP_CHECK_EQ(f->keep4[198], 0x00ffffffu);         /* the ports' connected routes */
	EP_CHECK_EQ(f->keep4[224], EP_FIB_KEEP4_MARTIAN);
	EP_CHECK_EQ(keep4b_differ(f), 0);
	EP_CHECK_EQ(lookups_differ(f, 20000), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.1.0.0/16", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.1.2.0/24", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.1.2.0/24", "198.18.1.2", &err), 0);  /* replaced */
	EP_CHECK_EQ(ep_fib_route_add(f, "200.9.8.7/32", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(f->keep4[20], 0x00ffffffu);
	EP_CHECK_EQ(f->keep4[200], 0x00ffffffu);
	EP_CHECK_EQ(f->n_long4[20], 2u);
	EP_CHECK_EQ(keep4b_differ(f), 0);
	EP_CHECK_EQ(lookups_differ(f, 20000), 0);
	EP_CHECK_EQ(ep_fib_lookup4(f, IP4(20, 1, 2, 9)), lpm_as_is(f, IP4(20, 1, 2, 9)));
	EP_CHECK_EQ(ep_fib_lookup4(f, IP4(200, 9, 8, 7)), lpm_as_is(f, IP4(200, 9, 8, 7)));
	EP_CHECK(ep_fib_lookup4(f, IP4(200, 9, 8, 7)) != ep_fib_lookup4(f, IP4(200, 9, 8, 6)));
	EP_CHECK_EQ(ep_fib_route_del(f, "20.1.2.0/24", &err), 0);
	EP_CHECK_EQ(f->keep4[20], 0x00ffffffu);          /* 20.1.0.0/16 is left */
	EP_CHECK_EQ(ep_fib_route_del(f, "20.1.0.0/16", &err), 0);
	EP_CHECK_EQ(ep_fib_route_del(f, "200.9.8.7/32", &err), 0);
	EP_CHECK(ep_fib_route_del(f, "200.9.8.7/32", &err) != 0);  /* gone: no count moves */
	EP_CHECK_EQ(f->keep4[20], 0u);
	EP_CHECK_EQ(f->keep4[200], 0u);
	EP_CHECK_EQ(f->n_long4[200], 0u);
	EP_CHECK_EQ(keep4b_differ(f), 0);
	EP_CHECK_EQ(lookups_differ(f, 20000), 0);
	/* A /8 route itself does not make its /8 looked up as it is. */
	EP_CHECK_EQ(ep_fib_route_del(f, "20.0.0.0/8", &err), 0);
	EP_CHECK_EQ(f->keep4[20], 0u);
	EP_CHECK_EQ(lookups_differ(f, 20000), 0);
	/* Fixed addresses: each in its own /8, and their tbl24 lines in
	 * distinct sets of a 2048-set cache (64-byte lines: 16 entries). */
	{
		static uint8_t set_used[2048];
		int folded = 0, clash = 0;

		for (uint32_t top = 0; top < 256; top++) {
			uint32_t a = ep_fib_addr4(f, top << 24 | 0x00abcdefu);

			EP_CHECK_EQ(a >> 24, top);
			if (f->keep4[top] != 0)
				continue;
			folded++;
			clash += set_used[((a >> 8) / 16) % 2048]++ != 0;
		}
		EP_CHECK(folded > 200);
		EP_CHECK_EQ(clash, 0);
	}
	ep_fib_free(f);
}

/* One burst of UDP frames to @p dst through ep_fib_route_burst with
 * @p prefetch (the two-pass form) or without; each packet's next hop, or
 * UINT32_MAX when it was not forwarded, into @p nh. */
static void
route_burst_by8(struct ep_fib_worker *fw, const uint32_t *dst, uint16_t n, bool prefetch,
		uint32_t *nh)
{
	struct rte_mbuf *m[EP_BURST_MAX];
	uint16_t next[EP_BURST_MAX] = {0}, out;

	for (uint16_t i = 0; i < n; i++) {
		struct tp_spec s = tp_default(0, IPPROTO_UDP);

		s.dst4 = dst[i];
		m[i] = tr_mbuf(buf, tp_build(buf, &s), 0);
		ep_meta(m[i])->nexthop = UINT32_MAX;
	}
	if (prefetch)
		out = ep_fib_route_burst(fw, m, next, n, EP_FIB_ROUTE_BY8 | EP_FIB_ROUTE_PREFETCH,
					 ep_fib_local_echo, NULL);
	else
		out = ep_fib_route_burst(fw, m, next, n, EP_FIB_ROUTE_BY8, ep_fib_local_echo, NULL);
	EP_CHECK_EQ(out, 0);
	for (uint16_t i = 0; i < n; i++)
		nh[i] = next[i] == EP_NEXT_CONTINUE ? ep_meta(m[i])->nexthop : UINT32_MAX;
	rte_pktmbuf_free_bulk(m, n);
}

/*
 * Burst routing through ep_fib_addr4 (EP_FIB_ROUTE_BY8), in one pass (the
 * vBNG uplink's) and with the prefetch pass, forwards every packet by the
 * next hop rte_lpm gives its address as it is: destinations in folded
 * /8s, in /8s with longer routes (inside and outside those routes) and at
 * the fixed addresses, before and after the longer routes go.
 */
EP_TEST(fib_route_burst_by8_with_and_without_its_prefetch_pass_agrees_with_rte_lpm)
{
	struct ep_fib *f = fib_new("rb8", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct ep_err err;
	int bad = 0, by_long = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "0.0.0.0/0", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "128.0.0.0/1", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.1.0.0/16", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "20.1.2.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "200.9.8.7/32", "198.18.1.2", &err), 0);
	for (int phase = 0; phase < 2; phase++) {
		if (phase == 1) {
			EP_CHECK_EQ(ep_fib_route_del(f, "20.1.0.0/16", &err), 0);
			EP_CHECK_EQ(ep_fib_route_del(f, "20.1.2.0/24", &err), 0);
			EP_CHECK_EQ(ep_fib_route_del(f, "200.9.8.7/32", &err), 0);
		}
		for (int round = 0; round < 200; round++) {
			uint32_t dst[EP_BURST_MAX], one[EP_BURST_MAX], two[EP_BURST_MAX];

			for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
				uint32_t r = (uint32_t)rte_rand();

				switch (i % 4) {
				case 0: /* 20/8: 20.1.2.x, 20.1.x.x, elsewhere */
					dst[i] = IP4(20, r & 1 ? 1 : r >> 8 & 0xff,
						     r & 2 ? 2 : r >> 16 & 0xff, r >> 24);
					break;
				case 1: /* 200/8: the /32, its neighbour, elsewhere */
					dst[i] = r & 4 ? IP4(200, 9, 8, 6 + (r & 1)) :
						 IP4(200, r >> 8 & 0xff, r >> 16 & 0xff, r >> 24);
					break;
				case 2: /* a fixed address of a folded /8 */
					dst[i] = ep_fib_addr4(f, IP4(11 + r % 100, 0, 0, 1));
					break;
				default: /* anywhere outside the martians and 198/8 */
					dst[i] = IP4(11 + r % 100, r >> 8 & 0xff, r >> 16 & 0xff,
						     r >> 24);
				}
			}
			route_burst_by8(fw, dst, EP_BURST_MAX, false, one);
			route_burst_by8(fw, dst, EP_BURST_MAX, true, two);
			for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
				bad += one[i] != lpm_as_is(f, dst[i]) ||
				       two[i] != lpm_as_is(f, dst[i]);
				by_long += phase == 0 && two[i] != lpm_as_is(f, dst[i] & 0xff000000u);
			}
		}
	}
	EP_CHECK_EQ(bad, 0);
	/* The longer routes did decide some packets. */
	EP_CHECK(by_long > 100);
	fw_free(fw);
	ep_fib_free(f);
}

/*
 * With EP_FIB_ROUTE_BY8 the martian test runs only in /8s whose keep4
 * word carries EP_FIB_KEEP4_MARTIAN: every martian class is still dropped
 * as ipv4_bad_address (also while its /8 holds a longer route), and the
 * other addresses of those /8s and their neighbours are forwarded.
 */
EP_TEST(fib_route_burst_by8_drops_every_martian_class_and_forwards_their_neighbours)
{
	static const struct { uint32_t dst; bool martian; } cases[] = {
		{ IP4(0, 1, 2, 3), true }, { IP4(127, 0, 0, 1), true },
		{ IP4(169, 254, 9, 9), true }, { IP4(224, 0, 0, 5), true },
		{ IP4(239, 1, 1, 1), true }, { IP4(255, 255, 255, 255), true },
		{ IP4(1, 2, 3, 4), false }, { IP4(126, 255, 255, 254), false },
		{ IP4(128, 0, 0, 1), false }, { IP4(169, 253, 1, 1), false },
		{ IP4(169, 255, 1, 1), false }, { IP4(169, 0, 1, 1), false },
		{ IP4(223, 255, 255, 254), false }, { IP4(168, 254, 1, 1), false },
	};
	const uint16_t n = (uint16_t)RTE_DIM(cases);
	struct ep_fib *f = fib_new("m8", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct ep_err err;
	int bad = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "0.0.0.0/0", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(f->keep4[169], EP_FIB_KEEP4_MARTIAN);
	EP_CHECK_EQ(f->keep4[168], 0u);
	for (int phase = 0; phase < 2; phase++) {
		struct rte_mbuf *m[EP_BURST_MAX];
		uint16_t next[EP_BURST_MAX] = {0};

		if (phase == 1) {
			EP_CHECK_EQ(ep_fib_route_add(f, "169.0.0.0/16", "198.18.1.2", &err), 0);
			EP_CHECK_EQ(f->keep4[169], EP_FIB_KEEP4_MARTIAN | 0x00ffffffu);
		}
		for (uint16_t i = 0; i < n; i++) {
			struct tp_spec s = tp_default(0, IPPROTO_UDP);

			s.dst4 = cases[i].dst;
			m[i] = tr_mbuf(buf, tp_build(buf, &s), 0);
		}
		EP_CHECK_EQ(ep_fib_route_burst(fw, m, next, n, EP_FIB_ROUTE_BY8 | EP_FIB_ROUTE_SAME_NH,
					       ep_fib_local_echo, NULL), 6);
		for (uint16_t i = 0; i < n; i++)
			bad += next[i] != (cases[i].martian ?
					   EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS) : EP_NEXT_CONTINUE);
		rte_pktmbuf_free_bulk(m, n);
	}
	EP_CHECK_EQ(bad, 0);
	EP_CHECK_EQ(ep_fib_route_del(f, "169.0.0.0/16", &err), 0);
	EP_CHECK_EQ(f->keep4[169], EP_FIB_KEEP4_MARTIAN);
	fw_free(fw);
	ep_fib_free(f);
}

EP_TEST(fib_route_burst_leaves_the_next_hop_in_its_own_meta_field)
{
	struct ep_fib *f = fib_new("nh", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct ep_err err;
	uint32_t nh4 = 0, nh6 = 0;
	const struct ep_fib_nh *e;

	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(f, "2001:db8:0:2::2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "0.0.0.0/0", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(f, "::/0", "2001:db8:0:2::2", &err), 0);
	EP_CHECK_EQ(udp_to(fw, 0, "198.19.7.7", &nh4), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(udp_to(fw, 1, "2001:db8:77::1", &nh6), EP_NEXT_CONTINUE);
	e = ep_fib_nh_read(f, nh4);
	EP_CHECK_EQ(e->kind, EP_FIB_NH_FORWARD);
	EP_CHECK_EQ(e->port, 1);
	EP_CHECK_MEM(e->eth, MAC_B, 6);
	EP_CHECK_MEM(e->eth + 6, MAC_P1, 6);
	EP_CHECK_EQ(ep_fib_nh_read(f, nh6)->port, 1);
	fw_free(fw);
	ep_fib_free(f);
}

/* ---- the route words handshake (ep_fib_burst_words.h) ---- */

/* Words given for a burst are taken only by a call on exactly that burst
 * (its count and its first mbuf), at most once: another burst, the burst
 * less its first or its last packet, a count of 0, and any second take get
 * nothing, and a take that got nothing forgets them too.  Asking without
 * taking (ep_fib_burst_words_for) leaves them. */
EP_TEST(fib_burst_words_are_taken_once_and_only_by_the_burst_they_were_given_for)
{
	static struct ep_fib_burst_words bw;
	struct rte_mbuf *a[8], *b[8];
	const uint32_t *w;

	tr_engine_init();
	for (int i = 0; i < 8; i++) {
		a[i] = ep_test_mbuf(buf, 64);
		b[i] = ep_test_mbuf(buf, 64);
		bw.words[i] = 0x01000000u + (uint32_t)i;
	}
	/* Given for a, taken by a: the words as given; then gone. */
	ep_fib_burst_words_give(&bw, 8, a[0]);
	EP_CHECK(ep_fib_burst_words_for(&bw, a, 8));
	EP_CHECK(ep_fib_burst_words_for(&bw, a, 8));
	w = ep_fib_burst_words_take(&bw, a, 8);
	EP_CHECK(w == bw.words);
	EP_CHECK_EQ(w[7], 0x01000007u);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 8) == NULL);
	EP_CHECK(!ep_fib_burst_words_for(&bw, a, 8));
	/* Another burst of the same size: nothing, and a's are forgotten. */
	ep_fib_burst_words_give(&bw, 8, a[0]);
	EP_CHECK(!ep_fib_burst_words_for(&bw, b, 8));
	EP_CHECK(ep_fib_burst_words_take(&bw, b, 8) == NULL);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 8) == NULL);
	/* a less its last packet, a less its first: another count. */
	ep_fib_burst_words_give(&bw, 8, a[0]);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 7) == NULL);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 8) == NULL);
	ep_fib_burst_words_give(&bw, 8, a[0]);
	EP_CHECK(ep_fib_burst_words_take(&bw, a + 1, 7) == NULL);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 8) == NULL);
	/* Given as none (a count of 0): nothing for a burst of any size. */
	ep_fib_burst_words_give(&bw, 0, a[0]);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 8) == NULL);
	EP_CHECK(ep_fib_burst_words_take(&bw, a, 0) == NULL);
	rte_pktmbuf_free_bulk(a, 8);
	rte_pktmbuf_free_bulk(b, 8);
}

/* ---- resolution ---- */

/* A frame @p fw sent, parsed; NULL when there is none. */
static struct rte_mbuf *
one_sent(struct ep_fib_worker *fw, uint16_t port, struct ep_meta *md)
{
	struct rte_mbuf *out[2 * EP_BURST_MAX];
	uint16_t n = sent(fw, port, out);

	if (n == 0)
		return NULL;
	rte_pktmbuf_free_bulk(out + 1, n - 1u);
	EP_CHECK_EQ(ep_parse(rte_pktmbuf_mtod(out[0], const uint8_t *), out[0]->data_len,
			     out[0]->pkt_len, md), 0);
	return out[0];
}

EP_TEST(fib_unresolved_ipv4_host_is_asked_heard_installed_and_aged)
{
	struct ep_fib *f = fib_new("arp", true);
	struct ep_fib_worker *fw = fw_new(f);
	uint64_t hz = rte_get_tsc_hz(), now = rte_get_tsc_cycles();
	static const uint8_t mac_h[6] = {2, 0, 0, 0, 0, 0x33};
	struct rte_mbuf *q, *m;
	struct ep_meta md;
	const struct rte_arp_hdr *a;
	uint16_t next[1] = {0};

	/* A host on the core subnet, unknown: dropped, and asked for. */
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.33", NULL),
		    EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	q = one_sent(fw, 1, &md);
	EP_CHECK(q != NULL);
	if (q == NULL)
		goto out;
	a = rte_pktmbuf_mtod_offset(q, const struct rte_arp_hdr *, 14);
	EP_CHECK_EQ(md.l3_type, EP_L3_ARP);
	EP_CHECK_EQ(rte_pktmbuf_mtod(q, const uint8_t *)[0], 0xff);         /* broadcast */
	EP_CHECK_EQ(ntohs(a->arp_opcode), RTE_ARP_OP_REQUEST);
	EP_CHECK_EQ(ntohl(a->arp_data.arp_tip), tp_ip4("198.18.1.33"));
	EP_CHECK_EQ(ntohl(a->arp_data.arp_sip), tp_ip4("198.18.1.1"));
	EP_CHECK_MEM(&a->arp_data.arp_sha, MAC_P1, 6);
	rte_pktmbuf_free(q);
	/* Asked once a second, however many packets wait. */
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.33", NULL),
		    EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK(one_sent(fw, 1, &md) == NULL);
	EP_CHECK_EQ(fw->st.asks_throttled, 1);

	/* The reply arrives on the core port; the resolver installs it. */
	m = tr_mbuf(buf, tp_arp(buf, mac_h, RTE_ARP_OP_REPLY, tp_ip4("198.18.1.33"),
				tp_ip4("198.18.1.1")), 1);
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), MAC_P1, 6);
	EP_CHECK_EQ(ep_fib_neigh_stage(fw, &m, next, 1), 1);
	EP_CHECK_EQ(next[0], EP_NEXT_CONSUMED);
	ep_fib_tick(f, now);
	EP_CHECK_EQ(f->n_learnt, 1);
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.33", NULL), EP_NEXT_CONTINUE);

	/* Reachable for neigh_reachable seconds; then stale: still forwarded,
	 * asked again, unicast; unconfirmed 5 s later it is gone. */
	ep_fib_tick(f, now + (uint64_t)f->p.neigh_reachable_s * hz + 1);
	memset(fw->asked, 0, sizeof(fw->asked));   /* as if the last question were a second old */
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.33", NULL), EP_NEXT_CONTINUE);
	q = one_sent(fw, 1, &md);
	EP_CHECK(q != NULL && memcmp(rte_pktmbuf_mtod(q, const uint8_t *), mac_h, 6) == 0);
	rte_pktmbuf_free(q);
	ep_fib_tick(f, now + ((uint64_t)f->p.neigh_reachable_s + 6) * hz);
	EP_CHECK_EQ(f->n_expired, 1);
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.33", NULL),
		    EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
out:
	fw_free(fw);
	ep_fib_free(f);
}

EP_TEST(fib_unsolicited_answers_change_nothing_and_static_neighbours_win)
{
	struct ep_fib *f = fib_new("unsol", true);
	struct ep_fib_worker *fw = fw_new(f);
	static const uint8_t mac_x[6] = {2, 0, 0, 0, 0, 0x44};
	struct ep_err err;
	struct rte_mbuf *m;
	uint16_t next[1] = {0};
	uint32_t nh = 0;

	m = tr_mbuf(buf, tp_arp(buf, mac_x, RTE_ARP_OP_REPLY, tp_ip4("198.18.1.44"),
				tp_ip4("198.18.1.1")), 1);
	ep_fib_neigh_stage(fw, &m, next, 1);
	ep_fib_tick(f, rte_get_tsc_cycles());
	EP_CHECK_EQ(f->n_learnt, 0);
	EP_CHECK_EQ(f->n_unsolicited, 1);
	/* A static neighbour is never overridden by what is heard. */
	EP_CHECK_EQ(ep_fib_neigh_add(f, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err), 0);
	EP_CHECK_EQ(udp_to(fw, 0, "198.18.1.2", &nh), EP_NEXT_CONTINUE);
	m = tr_mbuf(buf, tp_arp(buf, mac_x, RTE_ARP_OP_REPLY, tp_ip4("198.18.1.2"),
				tp_ip4("198.18.1.1")), 1);
	next[0] = 0;
	ep_fib_neigh_stage(fw, &m, next, 1);
	ep_fib_tick(f, rte_get_tsc_cycles());
	EP_CHECK_MEM(ep_fib_nh_read(f, nh)->eth, MAC_B, 6);
	fw_free(fw);
	ep_fib_free(f);
}

EP_TEST(fib_unresolved_ipv6_gateway_gets_a_solicitation_and_learns_the_advertisement)
{
	struct ep_fib *f = fib_new("nd", true);
	struct ep_fib_worker *fw = fw_new(f);
	static const uint8_t mac_g[6] = {2, 0, 0, 0, 0, 0x55};
	uint8_t gw[16], sol[16] = {0xff, 2, [11] = 1, [12] = 0xff};
	struct ep_err err;
	struct rte_mbuf *q, *m;
	struct ep_meta md;
	uint16_t next[1] = {0};
	const uint8_t *p;
	uint16_t len;

	tp_ip6(gw, "2001:db8:0:2::55");
	memcpy(sol + 13, gw + 13, 3);
	EP_CHECK_EQ(ep_fib_route_add(f, "2001:db8:55::/48", "2001:db8:0:2::55", &err), 0);
	EP_CHECK_EQ(udp_to(fw, 1, "2001:db8:55::1", NULL),
		    EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	q = one_sent(fw, 1, &md);
	EP_CHECK(q != NULL);
	if (q == NULL)
		goto out;
	p = rte_pktmbuf_mtod(q, const uint8_t *);
	EP_CHECK_EQ(p[0], 0x33);
	EP_CHECK_MEM(p + 14 + 24, sol, 16);                      /* solicited-node */
	EP_CHECK_EQ(p[14 + 7], 255);
	EP_CHECK_EQ(p[14 + 40], 135);                             /* NS */
	EP_CHECK_MEM(p + 14 + 40 + 8, gw, 16);
	EP_CHECK_EQ(ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(p + 14), p + 54, 32,
				     IPPROTO_ICMPV6), 0);
	rte_pktmbuf_free(q);
	/* A solicited NA with the target's link-layer address. */
	len = tp_ns(buf, mac_g, gw, gw);
	{
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(buf + 14);
		uint8_t *icmp = buf + 54;
		uint16_t ck;

		memcpy(buf, MAC_P1, 6);
		tp_ip6(ip->dst_addr, "2001:db8:0:2::1");
		icmp[0] = 136;
		icmp[4] = 0x60;                 /* solicited, override */
		icmp[24] = 2;                   /* target link-layer address */
		memcpy(icmp + 26, mac_g, 6);
		icmp[2] = icmp[3] = 0;
		ck = ep_ipv6_l4_cksum(ip, icmp, (uint32_t)len - 54, IPPROTO_ICMPV6);
		memcpy(icmp + 2, &ck, 2);
	}
	m = tr_mbuf(buf, len, 1);
	EP_CHECK_EQ(ep_fib_neigh_stage(fw, &m, next, 1), 1);
	EP_CHECK_EQ(next[0], EP_NEXT_CONSUMED);
	ep_fib_tick(f, rte_get_tsc_cycles());
	EP_CHECK_EQ(f->n_learnt, 1);
	EP_CHECK_EQ(udp_to(fw, 1, "2001:db8:55::1", NULL), EP_NEXT_CONTINUE);
out:
	fw_free(fw);
	ep_fib_free(f);
}

/* ---- ICMP errors ---- */

EP_TEST(fib_icmp_errors_quote_the_packet_back_to_the_previous_hop)
{
	struct ep_fib *f = fib_new("icmp", false);
	struct ep_fib_worker *fw = fw_new(f);
	static const struct { int v6; enum ep_fib_icmp_kind kind; uint8_t type, code; } cases[] = {
		{ 0, EP_FIB_ICMP_TIME_EXCEEDED, 11, 0 }, { 1, EP_FIB_ICMP_TIME_EXCEEDED, 3, 0 },
		{ 0, EP_FIB_ICMP_NET_UNREACHABLE, 3, 0 }, { 1, EP_FIB_ICMP_NET_UNREACHABLE, 1, 0 },
		{ 0, EP_FIB_ICMP_ADMIN_PROHIBITED, 3, 13 }, { 1, EP_FIB_ICMP_ADMIN_PROHIBITED, 1, 1 },
		{ 0, EP_FIB_ICMP_FRAG_NEEDED, 3, 4 }, { 1, EP_FIB_ICMP_PACKET_TOO_BIG, 2, 0 },
	};

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		struct tp_spec s = tp_default(cases[i].v6, IPPROTO_UDP);
		uint16_t len;
		struct rte_mbuf *m, *e;
		struct ep_meta md;
		const uint8_t *p, *l3, *icmp;

		s.n_vlans = 1;
		s.payload = 700;                /* longer than an IPv4 error may quote */
		len = tp_build(buf, &s);
		m = tr_mbuf(buf, len, 0);
		ep_fib_icmp_error(fw, m, cases[i].kind, 1400);
		e = one_sent(fw, 0, &md);
		EP_CHECK(e != NULL);
		if (e == NULL) {
			rte_pktmbuf_free(m);
			continue;
		}
		p = rte_pktmbuf_mtod(e, const uint8_t *);
		l3 = p + md.l3_off;
		icmp = p + md.l4_off;
		EP_CHECK_MEM(p, MAC_A, 6);                       /* to the previous hop */
		EP_CHECK_MEM(p + 6, MAC_P0, 6);
		EP_CHECK_EQ(md.n_vlans, 1);                      /* its tag kept */
		EP_CHECK_EQ(icmp[0], cases[i].type);
		EP_CHECK_EQ(icmp[1], cases[i].code);
		if (!cases[i].v6) {
			uint32_t src;

			EP_CHECK_EQ(md.l3_len, 576);             /* RFC 1812 4.3.2.3 */
			memcpy(&src, l3 + 12, 4);
			EP_CHECK_EQ(ntohl(src), tp_ip4("198.18.0.1"));
			EP_CHECK_EQ(rte_raw_cksum(icmp, md.l3_len - 20u), 0xffff);
			EP_CHECK_MEM(icmp + 8, buf + 18, 20);    /* the original header */
			if (cases[i].kind == EP_FIB_ICMP_FRAG_NEEDED)
				EP_CHECK_EQ(icmp[6] << 8 | icmp[7], 1400);
		} else {
			EP_CHECK_EQ(md.l3_len, 40 + 8 + 700 + 8 + 40);   /* all of it fits 1280 */
			EP_CHECK_EQ(ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)l3, icmp,
						     md.l3_len - 40u, IPPROTO_ICMPV6), 0);
			EP_CHECK_MEM(icmp + 8, buf + 18, 40);
			if (cases[i].kind == EP_FIB_ICMP_PACKET_TOO_BIG)
				EP_CHECK_EQ(icmp[6] << 8 | icmp[7], 1400);
		}
		rte_pktmbuf_free(e);
		rte_pktmbuf_free(m);
	}
	EP_CHECK_EQ(fw->st.icmp_sent[EP_FIB_ICMP_TIME_EXCEEDED], 2);
	fw_free(fw);
	ep_fib_free(f);
}

EP_TEST(fib_no_icmp_error_about_an_error_a_later_fragment_or_a_martian)
{
	struct ep_fib *f = fib_new("noerr", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct rte_mbuf *out[2 * EP_BURST_MAX], *m;
	struct tp_spec s = tp_default(0, IPPROTO_ICMP);
	uint16_t len;

	s.icmp_type = 3;                                         /* an error itself */
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
	rte_pktmbuf_free(m);
	s = tp_default(0, IPPROTO_UDP);
	s.frag = 185;                                            /* non-first fragment */
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
	rte_pktmbuf_free(m);
	s = tp_default(0, IPPROTO_UDP);
	s.dst4 = tp_ip4("224.0.0.9");                            /* to a group */
	len = tp_build(buf, &s);
	m = tr_mbuf(buf, len, 0);
	ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
	rte_pktmbuf_free(m);
	s = tp_default(1, IPPROTO_ICMPV6);
	s.icmp_type = 1;                                         /* an ICMPv6 error */
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
	rte_pktmbuf_free(m);
	EP_CHECK_EQ(sent(fw, 0, out), 0);
	EP_CHECK_EQ(fw->st.icmp_not_sent, 4);
	fw_free(fw);
	ep_fib_free(f);
}

EP_TEST(fib_icmp_errors_are_rate_limited_per_worker)
{
	struct ep_fib *f = fib_new("rate", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct rte_mbuf *out[2 * EP_BURST_MAX];
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint16_t len = tp_build(buf, &s), got = 0;

	/* Far more than the burst, faster than the rate refills it. */
	for (int i = 0; i < 200; i++) {
		struct rte_mbuf *m = tr_mbuf(buf, len, 0);
		uint16_t k;

		ep_fib_icmp_error(fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
		rte_pktmbuf_free(m);
		k = sent(fw, 0, out);
		got += k;
		rte_pktmbuf_free_bulk(out, k);
	}
	EP_CHECK(got >= f->p.icmp_burst && got < 100);
	EP_CHECK_EQ(got + fw->st.icmp_rate_limited, 200);
	printf("    %u of 200 back-to-back errors sent (burst %u, %u/s)\n", got, f->p.icmp_burst,
	       f->p.icmp_rate);
	fw_free(fw);
	ep_fib_free(f);
}

/* ---- the out port's MTU ---- */

EP_TEST(fib_ipv4_without_df_is_fragmented_to_the_mtu_and_reassembles)
{
	struct rte_mempool *big = rte_pktmbuf_pool_create("fib_big", 256, 0, EP_META_SIZE, 4096 +
							  RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	struct ep_fib *f = fib_new("frag", false);
	struct ep_fib_worker *fw = fw_new(f);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_mbuf *m, *out[2 * EP_BURST_MAX];
	uint8_t whole[4096];
	uint16_t len, n, next;
	uint32_t covered = 0;

	s.payload = 3000 - 28;
	len = tp_build(buf, &s);
	memcpy(whole, buf, len);
	m = rte_pktmbuf_alloc(big);
	memcpy(rte_pktmbuf_append(m, len), buf, len);
	ep_meta(m)->in_port = 0;
	EP_CHECK_EQ(ep_parse_mbuf(m, ep_meta(m)), 0);
	EP_CHECK_EQ(ep_fib_too_big(fw, m, 1500), 0);            /* DF clear: fragment */
	next = ep_fib_fragment(fw, m, 1, 1500);
	EP_CHECK_EQ(next, EP_NEXT_CONSUMED);
	n = sent(fw, 1, out);
	EP_CHECK_EQ(n, 3);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *fr = out[i];
		uint8_t flat[2048];
		const struct rte_ipv4_hdr *ip;
		uint16_t off, tl;

		EP_CHECK(fr->pkt_len <= 14 + 1500);
		rte_pktmbuf_read(fr, 0, fr->pkt_len, flat);
		EP_CHECK_MEM(flat, whole, 14);                   /* the L2 header copied */
		ip = (const struct rte_ipv4_hdr *)(flat + 14);
		off = (uint16_t)((ntohs(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) * 8);
		tl = ntohs(ip->total_length);
		EP_CHECK_EQ(rte_raw_cksum(ip, 20), 0xffff);
		EP_CHECK_EQ(!!(ntohs(ip->fragment_offset) & RTE_IPV4_HDR_MF_FLAG), i + 1 < n);
		EP_CHECK_MEM(flat + 34, whole + 34 + off, tl - 20u);
		covered += tl - 20u;
	}
	EP_CHECK_EQ(covered, 3000 - 20);
	EP_CHECK_EQ(fw->st.fragments, 3);
	rte_pktmbuf_free_bulk(out, n);
	/* DF set: fragmentation needed back to the sender, with the MTU. */
	((struct rte_ipv4_hdr *)(buf + 14))->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	tp_fix_ipv4_cksum(buf, 14);
	m = rte_pktmbuf_alloc(big);
	memcpy(rte_pktmbuf_append(m, len), buf, len);
	EP_CHECK_EQ(ep_parse_mbuf(m, ep_meta(m)), 0);
	EP_CHECK_EQ(ep_fib_too_big(fw, m, 1500), EP_NEXT_DROP(EP_DROP_IPV4_FRAG_NEEDED));
	EP_CHECK_EQ(fw->st.icmp_sent[EP_FIB_ICMP_FRAG_NEEDED], 1);
	n = sent(fw, 0, out);
	rte_pktmbuf_free_bulk(out, n);
	rte_pktmbuf_free(m);
	/* IPv6 is never fragmented by a router: packet too big. */
	s = tp_default(1, IPPROTO_UDP);
	s.payload = 2000;
	len = tp_build(buf, &s);
	m = rte_pktmbuf_alloc(big);
	memcpy(rte_pktmbuf_append(m, len), buf, len);
	EP_CHECK_EQ(ep_parse_mbuf(m, ep_meta(m)), 0);
	EP_CHECK_EQ(ep_fib_too_big(fw, m, 1500), EP_NEXT_DROP(EP_DROP_IPV6_PACKET_TOO_BIG));
	EP_CHECK_EQ(fw->st.icmp_sent[EP_FIB_ICMP_PACKET_TOO_BIG], 1);
	n = sent(fw, 0, out);
	rte_pktmbuf_free_bulk(out, n);
	rte_pktmbuf_free(m);
	fw_free(fw);
	ep_fib_free(f);
	rte_mempool_free(big);
}

/* ---- rte_lpm or rte_fib ---- */

/*
 * The measurement behind ep_fib.h's choice: random destinations inside
 * 1K and 100K routes (/16../24), bursts of 32; rte_lpm_lookup per packet
 * with every tbl24 line prefetched first (how this FIB looked up before)
 * against rte_fib's DIR-24-8 bulk lookup with 2- and 4-byte entries.
 * EP_TEST_HUGE=1 runs it on hugepages, as the data plane does.  Printed,
 * never judged: timings on a shared machine are not a test.
 */
EP_TEST(fib_lookup_methods_compared)
{
	enum { N_DST = 4096, ROUNDS = 100, N_FIB = 2 };
	static const enum rte_fib_dir24_8_nh_sz sz[N_FIB] = { RTE_FIB_DIR24_8_2B,
							      RTE_FIB_DIR24_8_4B };
	static const int n_routes[2] = { 1000, 100000 };
	uint32_t *dst = malloc(sizeof(uint32_t) * N_DST);
	uint32_t *net = malloc(sizeof(uint32_t) * 100000);
	uint8_t *plen = malloc(100000);

	EP_CHECK(dst != NULL && net != NULL && plen != NULL);
	for (int t = 0; t < 2 && dst != NULL && net != NULL && plen != NULL; t++) {
		struct rte_lpm *lpm = rte_lpm_create("cmp_lpm", SOCKET_ID_ANY,
			&(struct rte_lpm_config){ .max_rules = 131072, .number_tbl8s = 4096 });
		struct rte_fib *fib[N_FIB] = { NULL };
		uint64_t best[1 + N_FIB], nh[32];
		uint32_t nh32[32];
		int same = 1;

		for (int f = 0; f < N_FIB; f++) {
			struct rte_fib_conf fc = { .type = RTE_FIB_DIR24_8, .default_nh = 0,
						   .max_routes = 131072,
						   .dir24_8 = { .nh_sz = sz[f], .num_tbl8 = 4096 } };
			char name[16];

			snprintf(name, sizeof(name), "cmp_fib%d", f);
			fib[f] = rte_fib_create(name, SOCKET_ID_ANY, &fc);
			EP_CHECK(fib[f] != NULL);
		}
		if (lpm == NULL || fib[0] == NULL || fib[1] == NULL)
			goto next;
		for (int i = 0; i < n_routes[t]; i++) {
			plen[i] = (uint8_t)(16 + rte_rand() % 9);
			net[i] = (uint32_t)rte_rand() & (0xffffffffu << (32 - plen[i]));
			rte_lpm_add(lpm, net[i], plen[i], 1 + (uint32_t)(i % 1000));
			for (int f = 0; f < N_FIB; f++)
				rte_fib_add(fib[f], net[i], plen[i], 1 + (uint64_t)(i % 1000));
		}
		for (int i = 0; i < N_DST; i++) {
			int k = (int)(rte_rand() % (uint64_t)n_routes[t]);

			dst[i] = net[k] | ((uint32_t)rte_rand() & ~(0xffffffffu << (32 - plen[k])));
		}
		for (int m = 0; m <= N_FIB; m++)
			best[m] = UINT64_MAX;
		for (int r = 0; r < 7; r++) {
			uint64_t t0 = rte_rdtsc(), t1;

			for (int k = 0; k < ROUNDS; k++)
				for (int b = 0; b < N_DST; b += 32) {
					for (int j = 0; j < 32; j++)
						rte_prefetch0(&lpm->tbl24[dst[b + j] >> 8]);
					for (int j = 0; j < 32; j++)
						if (rte_lpm_lookup(lpm, dst[b + j], &nh32[j]) != 0)
							nh32[j] = 0;
				}
			t1 = rte_rdtsc();
			best[0] = RTE_MIN(best[0], (t1 - t0) * 10 / ((uint64_t)ROUNDS * N_DST));
			for (int f = 0; f < N_FIB; f++) {
				t0 = rte_rdtsc();
				for (int k = 0; k < ROUNDS; k++)
					for (int b = 0; b < N_DST; b += 32)
						rte_fib_lookup_bulk(fib[f], &dst[b], nh, 32);
				t1 = rte_rdtsc();
				best[1 + f] = RTE_MIN(best[1 + f],
						      (t1 - t0) * 10 / ((uint64_t)ROUNDS * N_DST));
			}
		}
		for (int b = 0; b < N_DST; b += 32)
			for (int f = 0; f < N_FIB; f++) {
				rte_fib_lookup_bulk(fib[f], &dst[b], nh, 32);
				for (int j = 0; j < 32; j++) {
					if (rte_lpm_lookup(lpm, dst[b + j], &nh32[j]) != 0)
						nh32[j] = 0;
					same &= nh32[j] == nh[j];
				}
			}
		EP_CHECK(same);         /* all find the same next hops */
		printf("    %d routes, cycles/lookup (min of 7): rte_lpm + prefetch %" PRIu64
		       ".%" PRIu64 ", rte_fib 2-byte %" PRIu64 ".%" PRIu64 ", rte_fib 4-byte %"
		       PRIu64 ".%" PRIu64 "\n", n_routes[t], best[0] / 10, best[0] % 10,
		       best[1] / 10, best[1] % 10, best[2] / 10, best[2] % 10);
next:
		rte_lpm_free(lpm);
		for (int f = 0; f < N_FIB; f++)
			rte_fib_free(fib[f]);
	}
	free(plen);
	free(net);
	free(dst);
}
