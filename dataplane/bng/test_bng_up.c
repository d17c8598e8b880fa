/* SPDX-License-Identifier: BSD-3-Clause */
/* bng-uplink: crafted frames through the real stages, verdicts and bytes. */
#include "test_bng.h"

#include <rte_ip.h>

#include "bng/bng_access.h"
#include "bng/bng_counters.h"
#include "ep_rx.h"
#include "test_pkt.h"

static const char up_conf[] =
	"policer = gold cir=8M cbs=64K pir=16M pbs=128K\n"
	"acl = deny proto udp dport 1900\n"
	"subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 ipv6=2001:db8:100::/56 "
	"mac=02:00:00:00:10:01\n"
	"subscriber = id=2 vlan=101 ipv4=198.18.100.3,198.18.101.0/29 mac=02:00:00:00:10:02 "
	"policer=gold\n"
	"subscriber = id=3 pppoe=0x12 mac=02:00:00:00:10:01 qinq=100.201 ipv4=198.18.100.4 "
	"ipv6=2001:db8:101::/56\n"
	"subscriber = id=4 pppoe=7 mac=02:00:00:00:10:04 ipv4=198.18.100.5\n";

static const uint8_t s_tag_tpid[2] = { 0x88, 0xa8 };

static struct tb_pkt
qinq_v4(uint16_t o, uint16_t i, const char *sip)
{
	return (struct tb_pkt){ .n_vlans = 2, .vid = { o, i }, .ip = 4, .sip = sip,
				.dip = "198.51.100.7", .sport = 1000, .dport = 2000, .payload = 18 };
}

/* The frame the uplink sends to the core for @p p, untagged: the next
 * hop's and the core port's MACs, the IP packet with its TTL (hop limit)
 * one less; its length. */
static uint16_t
core_frame(uint8_t *want, struct tb_pkt *p)
{
	memcpy(want, tb_core_nh_mac, 6);
	memcpy(want + 6, tb_core_mac, 6);
	want[12] = p->ip == 6 ? 0x86 : 0x08;
	want[13] = p->ip == 6 ? 0xdd : 0x00;
	p->ttl = 63;
	return (uint16_t)(14 + tb_ip(want + 14, p));
}

EP_TEST(uplink_qinq_ipv4_forwarded_untagged_to_core_bytes_exact)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, core_frame(want, &p));
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

/* A burst from rx (rx_port set: the parse writes in_port, the engine does
 * not, bng-uplink's stage_sets_in_port) parses as the same burst handed in
 * with in_port set: the same verdicts and ep_meta, in_port the access port. */
EP_TEST(uplink_parse_of_a_burst_from_rx_writes_in_port_and_equals_the_handed_in_burst)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt kinds[4] = {
		qinq_v4(100, 200, "198.18.100.2"),
		{ .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12, .ip = 6,
		  .sip = "2001:db8:101:5::1", .dip = "2001:db8:ffff::1", .sport = 5, .dport = 6,
		  .payload = 10 },
		qinq_v4(100, 999, "198.18.100.2"),
		qinq_v4(7, 200, "198.18.100.9"),
	};

	tb_check_parse_from_rx(t->up, TB_ACCESS, kinds, 40);
	tb_free(t);
}

/* bng_parse_access (the QinQ IPoE and PPPoE IPv4 fast paths first) and
 * bng_parse_access_full give the same result and ep_meta on every frame:
 * QinQ, single-tagged and untagged IPoE, PPPoE, IPv4 and IPv6, UDP (DHCP
 * ports too), TCP, ICMP, with mutated tag, header, port and length bytes. */
EP_TEST(uplink_parse_fast_path_agrees_with_the_full_access_parse)
{
	static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP };
	static const uint16_t dports[] = { 53, 67, 68, 547, 4000 };
	uint64_t x = 0x2545f4914f6cdd1dull;
	unsigned int wrong = 0, fast = 0, fast_pppoe = 0;
	uint8_t f[512];

	for (int i = 0; i < 60000; i++) {
		struct tb_pkt p = qinq_v4((uint16_t)(1 + i % 4000), (uint16_t)(1 + (i * 7) % 4000),
					  "198.18.100.2");
		struct ep_meta a, b;
		uint32_t seg, frame;
		uint16_t len;
		int ra, rb;

		p.n_vlans = i % 9 == 8 ? i % 2 : 2;
		p.pppoe = i % 13 == 12 || i % 4 == 1;
		p.session = (uint16_t)(1 + i % 100);
		if (i % 5 == 4) {
			p.ip = 6;
			p.sip = "2001:db8:101:5::1";
			p.dip = "2001:db8:ffff::1";
		}
		p.proto = protos[i % 3];
		p.dport = dports[i % 5];
		p.sport = i % 17 == 16 ? 68 : 1234;
		len = tb_frame(f, &p);
		/* QinQ: the IPv4 header at 22; flips over the tags and header. */
		tp_mutate(f, len, 22, 40, &x, &seg, &frame);
		memset(&a, 0x5a, sizeof(a));
		memset(&b, 0x5a, sizeof(b));
		ra = bng_parse_access(f, seg, frame, &a);
		rb = bng_parse_access_full(f, seg, frame, &b);
		wrong += ra != rb || memcmp(&a, &b, sizeof(a)) != 0;
		fast += ep_parse_qinq_ipv4_plain(f, seg, frame, &b) == 0;
		fast_pppoe += bng_parse_qinq_pppoe_ipv4_plain(f, seg, frame, &b) == 0;
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(fast > 10000);
	EP_CHECK(fast_pppoe > 4000);
}

#ifdef EP_PARSE_X8
/* The PPPoE lanes of @p m through bng_qinq_pppoe_x8_check, ep_meta of the
 * ok ones written as the parse writes it; their ok mask. */
/* Each call's loads the other form (lines, gathers) than the call before. */
static unsigned int pppoe_x8_calls;

static EP_X8_TARGET __mmask8
pppoe_x8(struct rte_mbuf *const *m, __mmask8 lanes)
{
	struct ep_parse_x8_in in;
	struct ep_parse_qinq_x8 x;
	uint32_t mac4;
	uint16_t mac2;

	ep_mac_words((const struct rte_ether_addr *)tb_access_mac, &mac4, &mac2);
	bng_qinq_pppoe_x8_load(m, lanes, &in, pppoe_x8_calls++ & 1);
	bng_qinq_pppoe_x8_check(&in, mac4 | (uint64_t)mac2 << 32, TB_ACCESS, &x);
	ep_parse_qinq_x8_store(&x, in.mb, x.ok, BNG_USER_PPPOE);
	return x.ok;
}

/*
 * bng_qinq_pppoe_x8_check against bng_parse_qinq_pppoe_ipv4_plain, lane
 * by lane: 3,000 bursts of 1..8 QinQ PPPoE session frames (some IPoE, IPv6,
 * single-tagged), sessions 0 and 0xffff, PPPoE lengths one off, mutated
 * (tp_mutate over the tags and headers): a lane is ok exactly when the
 * scalar fast path takes it (and it is long enough for the gathers), with
 * the same ep_meta (in_port beside it); every other lane untouched.
 */
EP_TEST(uplink_qinq_pppoe_x8_agrees_with_the_scalar_pppoe_fast_path)
{
	uint64_t x = 0x853c49e6748fea9bull;
	unsigned int wrong = 0, ok_lanes = 0, lanes_run = 0;
	uint8_t f[512];

	if (!bng_up_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		return;
	}
	for (int b = 0; b < 3000; b++) {
		struct rte_mbuf *m[8] = { NULL };
		struct ep_meta want[8];
		unsigned int n = 1 + b % 8;
		__mmask8 ok;

		for (unsigned int j = 0; j < n; j++) {
			int k = b * 8 + (int)j;
			struct tb_pkt p = qinq_v4(100, 201, "198.18.100.4");
			uint32_t seg, frame;
			uint16_t len;

			p.pppoe = k % 11 != 5;
			p.session = k % 23 == 3 ? 0 : k % 23 == 4 ? 0xffff : (uint16_t)(1 + k % 500);
			p.proto = k % 3 == 0 ? IPPROTO_TCP : IPPROTO_UDP;
			p.n_vlans = k % 19 == 7 ? 1 : 2;
			p.payload = (uint16_t)(k % 4 == 0 ? 0 : k % 60);
			if (k % 13 == 6) {
				p.ip = 6;
				p.sip = "2001:db8:101:5::1";
				p.dip = "2001:db8:ffff::1";
			}
			len = tb_frame(f, &p);
			if (k % 17 == 2)
				f[27] ^= 1;                     /* PPPoE length one off */
			tp_mutate(f, len, 30, 40, &x, &seg, &frame);
			m[j] = ep_test_mbuf(f, len);
			m[j]->data_len = (uint16_t)RTE_MIN(seg, len);
			m[j]->pkt_len = RTE_MIN(frame, len);
			memset(ep_meta(m[j]), 0x5a, sizeof(struct ep_meta));
			memset(&want[j], 0x5a, sizeof(want[j]));
			want[j].in_port = TB_ACCESS;
			if (RTE_MIN(m[j]->data_len, m[j]->pkt_len) < BNG_PPPOE_X8_MIN ||
			    bng_parse_qinq_pppoe_ipv4_plain(f, m[j]->data_len, m[j]->pkt_len,
							    &want[j]) != 0)
				memset(&want[j], 0x5a, sizeof(want[j]));
		}
		ok = pppoe_x8(m, (__mmask8)((1u << n) - 1));
		wrong += ok >> n != 0;
		for (unsigned int j = 0; j < n; j++) {
			bool want_ok = want[j].in_port == TB_ACCESS;

			wrong += want_ok != ((ok >> j) & 1);
			wrong += memcmp(ep_meta(m[j]), &want[j], sizeof(want[j])) != 0;
			ok_lanes += want_ok;
			lanes_run++;
		}
		rte_pktmbuf_free_bulk(m, n);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(ok_lanes > lanes_run / 5);
	EP_CHECK(ok_lanes < lanes_run * 3 / 4);
}
#endif

/* Burst @p c of the x8 test: @p n frames of mixed kinds (a third of the
 * bursts only kinds the ACL classifies in place), a third mutated; QinQ
 * IPoE or PPPoE sessions the most frequent kind by turns. */
static void
x8_burst(unsigned int c, unsigned int n, uint64_t *x, struct rte_mbuf **a, struct rte_mbuf **b)
{
	static const uint16_t dports[] = { 2000, 1900, 67, 68, 547, 80, 4000 };
	static const uint8_t other[6] = { 0x02, 0, 0, 0, 0x77, 0x01 };
	const bool pppoe_major = (c / 3) % 2 == 1;
	uint8_t f[512];

	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = c * 32 + i;
		struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
		uint32_t seg, frame;
		uint16_t len;

		p.proto = k % 5 == 1 ? IPPROTO_TCP : k % 11 == 3 ? IPPROTO_ICMP : IPPROTO_UDP;
		p.dport = dports[k % 7];
		p.sport = k % 13 == 5 ? 68 : 1000;
		if (c % 3 == 0) {
			/* A burst the ACL gets its inputs for: all kept, IPv4
			 * TCP or UDP, some to the denied port (and rarely an
			 * ICMP echo, which must take that away). */
			p.proto = k % 5 == 1 ? IPPROTO_TCP : k % 37 == 8 ? IPPROTO_ICMP : IPPROTO_UDP;
			p.dport = k % 7 == 1 ? 1900 : 2000;
			p.sport = 1000;
		}
		/* Every other run of three bursts mostly PPPoE sessions. */
		if (c % 3 == 0 ? pppoe_major : pppoe_major != (k % 9 == 4)) {
			p.pppoe = true;
			p.vid[1] = 201;
			p.session = 0x12;
		}
		if (k % 10 == 7) {
			p.ip = 6;
			p.sip = "2001:db8:100:1::1";
			p.dip = "2001:db8:ffff::1";
		}
		p.n_vlans = k % 23 == 11 && c % 3 != 0 ? 1 : 2;
		p.dst = k % 29 == 3 && c % 3 != 0 ? other : NULL;
		len = tb_frame(f, &p);
		/* Mutations in bursts of a third of the cases: others pass whole. */
		if (c % 3 == 2)
			tp_mutate(f, len, p.pppoe ? 30 : 22, 40, x, &seg, &frame);
		else
			seg = frame = len;
		a[i] = ep_test_mbuf(f, len);
		b[i] = ep_test_mbuf(f, len);
		a[i]->data_len = b[i]->data_len = (uint16_t)RTE_MIN(seg, len);
		a[i]->pkt_len = b[i]->pkt_len = RTE_MIN(frame, len);
		memset(ep_meta(a[i]), 0x5a, sizeof(struct ep_meta));
		memset(ep_meta(b[i]), 0x5a, sizeof(struct ep_meta));
	}
}

/* The punt ring emptied (each side's punts find it as the other did). */
static void
x8_drain(struct tb *t)
{
	struct rte_mbuf *m[32];
	unsigned int k;

	while ((k = rte_ring_dequeue_burst(t->b->punt_ring, (void **)m, 32, NULL)) != 0)
		rte_pktmbuf_free_bulk(m, k);
}

/*
 * The parse's eight-frame path (AVX-512, bng_up.parse_x8) against its
 * scalar loop on the same bursts from rx, of every size from 1 to 32:
 * QinQ IPoE and PPPoE IPv4 (UDP, TCP, ICMP; DHCP ports; the ACL's denied
 * port), IPv6, single-tagged, another MAC, a third of the bursts mutated.
 * The same verdicts and ep_meta for every frame; and when the x8 path gave
 * the ACL its inputs, every frame was kept and is IPv4 TCP or UDP in place,
 * and the filter's verdicts from them equal its own pass over the burst.
 */
EP_TEST(uplink_parse_x8_equals_the_scalar_parse_and_gives_the_acl_its_own_inputs)
{
	struct tb *t = tb_new(up_conf);
	struct bng_up *u = t->up->pipeline_ctx;
	struct ep_stage *parse = &t->up->stages[0], *acl = &t->up->stages[2];
	unsigned int wrong = 0, given = 0, denied = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if (!bng_up_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		tb_free(t);
		return;
	}
	EP_CHECK(acl->fn == ep_acl_filter_stage);
	for (unsigned int c = 0; c < 6 * 32 * 4; c++) {
		unsigned int n = 1 + c % 32;
		struct rte_mbuf *a[32], *b[32];
		uint16_t na[32] = {0}, nb[32] = {0}, oa, ob;

		x8_burst(c, n, &x, a, b);
		t->up->rx_port = TB_ACCESS;
		u->parse_x8 = true;
		u->parse_x8_lines = (c >> 1) & 1;      /* both forms of the loads */
		oa = parse->fn(parse->ctx, a, na, (uint16_t)n);
		if (u->acl->given == n) {
			uint16_t ga[32] = {0}, gb[32] = {0};

			given++;
			/* Given only when each is classifiable in place. */
			for (unsigned int i = 0; i < n; i++)
				wrong += ep_meta(a[i])->l3_type != EP_L3_IPV4 ||
					 !ep_acl_in_place(ep_meta(a[i]), sizeof(struct rte_ipv4_hdr));
			ep_acl_filter_stage(u->acl, a, ga, (uint16_t)n);
			ep_acl_filter_stage(u->acl, a, gb, (uint16_t)n);   /* not given: its own pass */
			wrong += memcmp(ga, gb, sizeof(ga[0]) * n) != 0;
			for (unsigned int i = 0; i < n; i++)
				denied += ga[i] == EP_NEXT_DROP(EP_DROP_ACL_DENY);
		}
		x8_drain(t);
		u->parse_x8 = false;
		ob = parse->fn(parse->ctx, b, nb, (uint16_t)n);
		x8_drain(t);
		u->parse_x8 = true;
		t->up->rx_port = EP_RX_PORT_META;
		wrong += oa != ob || memcmp(na, nb, sizeof(na[0]) * n) != 0;
		for (unsigned int i = 0; i < n; i++) {
			wrong += memcmp(ep_meta(a[i]), ep_meta(b[i]), sizeof(struct ep_meta)) != 0;
			if (na[i] != EP_NEXT_CONSUMED)
				rte_pktmbuf_free(a[i]);
			if (nb[i] != EP_NEXT_CONSUMED)
				rte_pktmbuf_free(b[i]);
		}
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(given > 40);
	EP_CHECK(denied > 0);
	tb_free(t);
}

/* The QinQ map's data for VLAN pair @p o.@p i (0: not mapped), read as
 * the subscriber stage reads it. */
static uint64_t
qinq_map_data(const struct bng *b, uint16_t o, uint16_t i)
{
	const uint64_t *blk = b->qinq->blk[o & 0x0fff];

	return blk != NULL ? blk[i & 0x0fff] : 0;
}

/*
 * The QinQ map's lookup the x8 parse does for the subscriber stage
 * (bng_qinq_x8_entries): bursts of every size from 1 to 32 of QinQ IPoE frames on
 * a mapped pair, a pair in a mapped block without an entry, a pair whose
 * outer VID has no block, a PPPoE line's pair, spoofed sources and PPPoE
 * sessions among them.  Each lane it answers carries the map's data of its
 * own pair (a mapped one: the others are the stage's to drop); the subscriber stage's verdicts
 * after it equal those after the scalar parse (which answers none); and a
 * different burst of the same size given to the subscriber stage next is
 * classified by its own frames, not by the answers.
 */
EP_TEST(uplink_parse_x8_qinq_map_answers_equal_the_subscriber_stages_own_lookup)
{
	static const uint16_t pairs[][2] = { { 100, 200 }, { 100, 202 }, { 300, 200 }, { 100, 201 } };
	struct tb *t = tb_new(up_conf);
	struct bng_up *u = t->up->pipeline_ctx;
	struct ep_stage *parse = &t->up->stages[0], *sub = &t->up->stages[1];
	unsigned int wrong = 0, answered = 0, stale = 0;
	uint8_t f[256];

	if (!bng_up_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		tb_free(t);
		return;
	}
	for (unsigned int c = 0; c < 32 * 4; c++) {
		unsigned int n = 1 + c % 32;
		struct rte_mbuf *a[32], *b[32], *d[32];
		uint16_t na[32] = {0}, nb[32] = {0}, sa[32] = {0}, sb[32] = {0}, sd[32] = {0};
		uint16_t oa, ob;
		uint64_t pre;

		for (unsigned int i = 0; i < n; i++) {
			unsigned int k = c * 7 + i;
			const uint16_t *v = pairs[c % 4 == 0 ? 0 : k % 4];
			struct tb_pkt p = qinq_v4(v[0], v[1], k % 11 == 3 ? "198.18.9.9" : "198.18.100.2");
			uint16_t len;

			if (k % 13 == 6) {
				p.pppoe = true;
				p.vid[1] = 201;
				p.session = 0x12;
			}
			len = tb_frame(f, &p);
			a[i] = ep_test_mbuf(f, len);
			b[i] = ep_test_mbuf(f, len);
			/* The same size, every frame on a pair no one has. */
			p = qinq_v4(300, 200, "198.18.100.2");
			len = tb_frame(f, &p);
			d[i] = ep_test_mbuf(f, len);
		}
		t->up->rx_port = TB_ACCESS;
		u->parse_x8 = true;
		oa = parse->fn(parse->ctx, a, na, (uint16_t)n);
		pre = u->pre_n == n ? u->pre_hits : 0;
		for (unsigned int i = 0; i < n; i++) {
			const struct ep_meta *md = ep_meta(a[i]);
			uint64_t want = md->user == BNG_USER_PPPOE ? 0 :
					qinq_map_data(t->b, md->vlan_tci[0], md->vlan_tci[1]);

			/* A lane of a group loaded as PPPoE takes the scalar
			 * parse: not answered, looked up by the stage. */
			wrong += ((pre >> i) & 1) &&
				 (want == 0 || (uint64_t)(uintptr_t)u->data[i] != want);
			answered += (pre >> i) & 1;
		}
		sub->fn(sub->ctx, a, sa, (uint16_t)n);
		u->parse_x8 = false;
		ob = parse->fn(parse->ctx, b, nb, (uint16_t)n);
		wrong += u->pre_n != 0;
		sub->fn(sub->ctx, b, sb, (uint16_t)n);
		wrong += oa != 0 || ob != 0 || memcmp(sa, sb, sizeof(sa[0]) * n) != 0;
		/* Answers for a parsed burst, then another burst of its size:
		 * the answers name the first. */
		parse->fn(parse->ctx, d, sd, (uint16_t)n);
		u->parse_x8 = true;
		parse->fn(parse->ctx, b, nb, (uint16_t)n);
		wrong += u->pre_n != n;
		sub->fn(sub->ctx, d, sd, (uint16_t)n);
		for (unsigned int i = 0; i < n; i++)
			stale += sd[i] != EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER);
		t->up->rx_port = EP_RX_PORT_META;
		rte_pktmbuf_free_bulk(a, n);
		rte_pktmbuf_free_bulk(b, n);
		rte_pktmbuf_free_bulk(d, n);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK_EQ(stale, 0);
	EP_CHECK(answered > 32 * 4 * 16 / 4);
	tb_free(t);
}

/* The route stage's verdicts and next hops for @p n packets of @p pkts
 * (parsed): 0 when @p other's are the same. */
static unsigned int
route_differs(struct ep_stage *route, struct rte_mbuf **pkts, struct rte_mbuf **other, uint16_t n)
{
	uint16_t na[32] = {0}, nb[32] = {0};
	unsigned int wrong = 0;

	route->fn(route->ctx, pkts, na, n);
	route->fn(route->ctx, other, nb, n);
	for (uint16_t i = 0; i < n; i++) {
		wrong += na[i] != nb[i];
		if (na[i] == 0 && nb[i] == 0)
			wrong += ep_meta(pkts[i])->nexthop != ep_meta(other[i])->nexthop ||
				 ep_meta_nh(pkts[i]) != ep_meta_nh(other[i]);
	}
	return wrong;
}

/*
 * The tbl24 words the x8 parse reads for the route stage
 * (ep_fib_x8_words): bursts of every size of QinQ IPoE and PPPoE frames to
 * folded /8s, /8s with longer routes on another next hop, martian /8s
 * (not answered: the route stage drops them itself) and 169/8 outside
 * 169.254/16 (its /8's martian bit set: not answered, forwarded).  The
 * route stage after the x8 parse gives every packet the verdict, next-hop
 * index and entry it gives after the scalar parse; the words are used
 * only for a burst whose every lane was answered, and never for another
 * burst of the same size.
 */
EP_TEST(uplink_parse_x8_route_words_route_as_the_route_stages_own_lookup)
{
	static const char *const dips[] = {
		"10.1.2.3", "198.51.100.7", "203.0.113.9", "10.200.0.1", "198.51.102.9",
		"127.0.0.1", "224.0.0.5", "169.254.1.1", "169.1.1.1", "0.1.2.3",
	};
	char text[2048];
	struct tb *t;
	struct bng_up *u;
	struct ep_stage *parse, *route;
	unsigned int wrong = 0, used = 0, unanswered = 0;
	uint8_t f[256];

	snprintf(text, sizeof(text), "%s%s", up_conf,
		 "neighbor = 198.18.1.3 02:00:00:00:02:03\n"
		 "route = 198.51.102.0/24 via 198.18.1.3\n"
		 "route = 203.0.113.0/24 via 198.18.1.3\n");
	t = tb_new(text);
	u = t->up->pipeline_ctx;
	parse = &t->up->stages[0];
	route = &t->up->stages[3];
	if (!bng_up_parse_x8_usable()) {
		printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
		tb_free(t);
		return;
	}
	t->up->rx_port = TB_ACCESS;
	for (unsigned int c = 0; c < 32 * 6; c++) {
		uint16_t n = (uint16_t)(1 + c % 32), sa[32] = {0}, sb[32] = {0};
		struct rte_mbuf *a[32], *b[32], *d[32], *e[32];
		/* Every second size: only the /8s without martians. */
		const unsigned int kinds = c / 32 % 2 ? 5 : RTE_DIM(dips);
		bool all = true;

		for (unsigned int i = 0; i < n; i++) {
			unsigned int k = c * 5 + i * 3;
			struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
			uint16_t len;

			p.dip = dips[c / 64 == 2 ? 0 : k % kinds];
			all &= k % kinds < 5 || c / 64 == 2;
			if (c / 64 == 1 && k % 4 == 1) {
				p.pppoe = true;
				p.vid[1] = 201;
				p.session = 0x12;
				p.sip = "198.18.100.4";
			}
			len = tb_frame(f, &p);
			a[i] = ep_test_mbuf(f, len);
			b[i] = ep_test_mbuf(f, len);
			/* A burst of the same size, its first packet to 10/8,
			 * the rest to another next hop. */
			p = qinq_v4(100, 200, "198.18.100.2");
			p.dip = i == 0 ? "10.1.2.3" : "203.0.113.9";
			len = tb_frame(f, &p);
			d[i] = ep_test_mbuf(f, len);
			e[i] = ep_test_mbuf(f, len);
		}
		u->parse_x8 = true;
		wrong += parse->fn(parse->ctx, a, sa, n) != 0;
		/* Only a burst whose every lane was answered: a PPPoE lane of
		 * a group loaded as IPoE takes the scalar parse, unanswered. */
		if (u->route_words.n == n) {
			used++;
			/* Each the word rte_lpm's table holds for the packet. */
			for (unsigned int i = 0; i < n; i++) {
				const struct ep_fib *fib = u->fw->fib;
				const uint8_t *l3 = rte_pktmbuf_mtod_offset(
					a[i], const uint8_t *, ep_meta(a[i])->l3_off);
				uint32_t dst, word;

				memcpy(&dst, l3 + 16, 4);
				dst = ep_fib_addr4(fib, rte_be_to_cpu_32(dst));
				memcpy(&word, &fib->lpm4->tbl24[dst >> 8], 4);
				wrong += u->route_words.words[i] != word;
			}
		} else {
			unanswered += all;
		}
		wrong += u->route_words.n == n && !all;
		u->parse_x8 = false;
		wrong += parse->fn(parse->ctx, b, sb, n) != 0;
		wrong += u->route_words.n != 0;
		u->parse_x8 = true;
		parse->fn(parse->ctx, a, sa, n);
		wrong += route_differs(route, a, b, n);
		/* Words for a burst of 10/8 only, then another burst of its
		 * size routed: it is looked up by its own frames. */
		for (unsigned int i = 0; i < n; i++) {
			struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
			uint16_t len;

			p.dip = "10.1.2.3";
			len = tb_frame(f, &p);
			rte_pktmbuf_free(a[i]);
			a[i] = ep_test_mbuf(f, len);
		}
		parse->fn(parse->ctx, a, sa, n);
		wrong += u->route_words.n != n;
		u->parse_x8 = false;
		parse->fn(parse->ctx, e, sb, n);
		u->parse_x8 = true;
		parse->fn(parse->ctx, d, sa, n);
		parse->fn(parse->ctx, a, sa, n);
		wrong += route_differs(route, d, e, n);
		rte_pktmbuf_free_bulk(a, n);
		rte_pktmbuf_free_bulk(b, n);
		rte_pktmbuf_free_bulk(d, n);
		rte_pktmbuf_free_bulk(e, n);
	}
	t->up->rx_port = EP_RX_PORT_META;
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(used >= 64);
	printf("    %u of %u bursts routed by the parse's words; %u of them all answerable "
	       "but not answered (PPPoE lanes in IPoE groups)\n", used, 32 * 6, unanswered);
	tb_free(t);
}

EP_TEST(uplink_pppoe_ipv6_stripped_bytes_exact)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12,
			    .ip = 6, .sip = "2001:db8:101:5::1", .dip = "2001:db8:ffff::1",
			    .sport = 5, .dport = 6, .payload = 10 };
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, core_frame(want, &p));
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

EP_TEST(uplink_pppoe_ipv4_untagged_session_stripped_bytes_exact)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .pppoe = true, .session = 7, .ip = 4, .sip = "198.18.100.5",
			    .dip = "198.51.100.1", .dscp = 18, .payload = 40,
			    .src = (const uint8_t[]){ 2, 0, 0, 0, 0x10, 0x04 } };
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, core_frame(want, &p));
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

EP_TEST(uplink_core_encap_vlan_bytes_exact)
{
	struct tb *t = tb_new("core_encap = vlan 300\n"
			      "subscriber = id=1 vlan=101 ipv4=198.18.100.3 mac=02:00:00:00:10:02\n");
	struct tb_pkt p = { .n_vlans = 1, .vid = { 101 }, .ip = 4, .sip = "198.18.100.3",
			    .dip = "198.51.100.9", .dscp = 46, .payload = 30 };
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	memcpy(want, tb_core_nh_mac, 6);
	memcpy(want + 6, tb_core_mac, 6);
	memcpy(want + 12, (const uint8_t[]){ 0x81, 0x00, 0x01, 0x2c, 0x08, 0x00 }, 6);
	p.ttl = 63;
	EP_CHECK_EQ(olen, 18 + tb_ip(want + 18, &p));
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

EP_TEST(uplink_core_encap_mpls_label_tc_ttl_bytes_exact)
{
	struct tb *t = tb_new("core_encap = mpls 1000\n"
			      "subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 "
			      "ipv6=2001:db8:100::/56 mac=02:00:00:00:10:01\n");
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = 6,
			    .sip = "2001:db8:100:1::2", .dip = "2001:db8:ffff::9", .dscp = 34,
			    .ttl = 10, .payload = 8 };
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;
	/* label 1000 << 12 | TC (AF41 = 34 -> 4) << 9 | S << 8 | TTL 9 */
	uint32_t lse = 1000u << 12 | 4u << 9 | 1u << 8 | 9u;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	memcpy(want, tb_core_nh_mac, 6);
	memcpy(want + 6, tb_core_mac, 6);
	want[12] = 0x88;
	want[13] = 0x47;
	want[14] = (uint8_t)(lse >> 24);
	want[15] = (uint8_t)(lse >> 16);
	want[16] = (uint8_t)(lse >> 8);
	want[17] = (uint8_t)lse;
	p.ttl = 9;
	EP_CHECK_EQ(olen, 18 + tb_ip(want + 18, &p));
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

/* One burst of frames of subscriber 1 (QinQ 100.200) to @p dips through
 * the uplink, @p ttls theirs; each frame forwarded must leave as the core
 * frame for its own next hop (@p nh_last: the last byte of its MAC) and
 * family with @p tag (NULL: untagged; else the 4 bytes after the MACs)
 * in front.  Returns the frames that differ; @p sent: how many left. */
static int
encap_burst_differs(struct tb *t, const char *const *dips, const uint8_t *ttls,
		    const uint8_t *nh_last, const uint8_t *tag, int n, int *sent)
{
	struct rte_mbuf *m[16];
	struct ep_txbuf *b = &t->up->txbuf[TB_CORE];
	int bad = 0, k = 0;

	for (int i = 0; i < n; i++) {
		bool v6 = strchr(dips[i], ':') != NULL;
		struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = v6 ? 6 : 4,
				    .sip = v6 ? "2001:db8:100:1::2" : "198.18.100.2",
				    .dip = dips[i], .ttl = ttls[i], .sport = 7,
				    .dport = (uint16_t)(100 + i), .payload = (uint16_t)(20 + i) };
		uint8_t f[256];

		m[i] = ep_test_mbuf(f, tb_frame(f, &p));
		ep_meta(m[i])->in_port = TB_ACCESS;
	}
	ep_worker_run_burst(t->up, m, (uint16_t)n);
	for (int i = 0; i < n; i++) {
		bool v6 = strchr(dips[i], ':') != NULL;
		struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = v6 ? 6 : 4,
				    .sip = v6 ? "2001:db8:100:1::2" : "198.18.100.2",
				    .dip = dips[i], .ttl = (uint8_t)(ttls[i] - 1), .sport = 7,
				    .dport = (uint16_t)(100 + i), .payload = (uint16_t)(20 + i) };
		uint8_t want[256];
		uint16_t h = tag == NULL ? 12 : 16, len;

		if (ttls[i] <= 1)
			continue;
		memcpy(want, tb_core_nh_mac, 5);
		want[5] = nh_last[i];
		memcpy(want + 6, tb_core_mac, 6);
		if (tag != NULL)
			memcpy(want + 12, tag, 4);
		want[h] = v6 ? 0x86 : 0x08;
		want[h + 1] = v6 ? 0xdd : 0x00;
		len = (uint16_t)(h + 2 + tb_ip(want + h + 2, &p));
		bad += k >= b->n || rte_pktmbuf_pkt_len(b->pkts[k]) != len ||
		       rte_pktmbuf_data_len(b->pkts[k]) != len ||
		       memcmp(rte_pktmbuf_mtod(b->pkts[k], uint8_t *), want, len) != 0;
		k++;
	}
	*sent = b->n;
	rte_pktmbuf_free_bulk(b->pkts, b->n);
	b->n = 0;
	t->up->tx_pending = 0;
	return bad;
}

/* The route answers once per tbl24 word and the encap builds the core
 * header once per next hop and family, each reused while consecutive
 * packets share it: a burst that alternates two next hops (by /1s, a /24,
 * and a /29 inside another /24: an extended word) and both families, with
 * an expired TTL between (no header written), leaves every frame with its
 * own next hop's MAC, ethertype and tag. */
EP_TEST(uplink_route_and_encap_burst_of_mixed_next_hops_and_families_bytes_exact)
{
	static const char routes[] =
		"neighbor = 198.18.1.3 02:00:00:00:02:03\n"
		"neighbor = 2001:db8:0:2::3 02:00:00:00:02:03\n"
		"route = 198.51.100.0/24 via 198.18.1.3\n"
		"route = 198.51.102.0/24 via 198.18.1.3\n"
		"route = 198.51.102.8/29 via 198.18.1.2\n"
		"route = 2001:db8:ffff::/48 via 2001:db8:0:2::3\n"
		"subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 ipv6=2001:db8:100::/56 "
		"mac=02:00:00:00:10:01\n";
	static const char *const dips[] = {
		"198.51.100.7", "198.51.100.8", "203.0.113.7", "2001:db8:ffff::1",
		"2001:db8:ffff::2", "2001:db8:eeee::1", "203.0.113.8", "198.51.102.9",
		"198.51.102.20", "198.51.100.10", "203.0.113.9",
	};
	static const uint8_t ttls[] = { 64, 9, 64, 64, 2, 64, 1, 64, 64, 64, 64 };
	static const uint8_t nh[] = { 3, 3, 2, 3, 3, 2, 2, 2, 3, 3, 2 };
	static const uint8_t vlan[4] = { 0x81, 0x00, 0x01, 0x2c };
	char text[1024];
	int sent = 0;

	for (int mode = 0; mode < 2; mode++) {
		struct tb *t;

		snprintf(text, sizeof(text), "%s%s", mode ? "core_encap = vlan 300\n" : "", routes);
		t = tb_new(text);
		EP_CHECK_EQ(encap_burst_differs(t, dips, ttls, nh, mode ? vlan : NULL,
						(int)RTE_DIM(dips), &sent), 0);
		EP_CHECK_EQ(sent, (int)RTE_DIM(dips) - 1);
		EP_CHECK_EQ(tb_drops(t->up, EP_DROP_IPV4_TTL_EXPIRED), 1);
		tb_free(t);
	}
}

EP_TEST(uplink_unknown_subscriber_dropped)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = qinq_v4(100, 999, "198.18.100.2");
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);

	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	/* The same VLAN pair as a single tag is another key. */
	p = (struct tb_pkt){ .n_vlans = 1, .vid = { 100 }, .ip = 4, .sip = "198.18.100.2",
			     .dip = "198.51.100.7", .payload = 18 };
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	tb_free(t);
}

/* An untagged IPoE line is a shared segment: the source MAC is the
 * subscriber.  Another MAC, or the same MAC behind a tag, is not it; a
 * PPPoE session of the same MAC is another key. */
EP_TEST(uplink_untagged_ipoe_keyed_by_source_mac)
{
	static const uint8_t mac5[6] = { 2, 0, 0, 0, 0x10, 0x05 }, other[6] = { 2, 0, 0, 0, 0x10, 0x06 };
	struct tb *t = tb_new("subscriber = id=5 mac=02:00:00:00:10:05 ipv4=198.18.100.9\n"
			      "subscriber = id=6 pppoe=9 mac=02:00:00:00:10:05 ipv4=198.18.100.10\n");
	struct tb_pkt p = { .src = mac5, .ip = 4, .sip = "198.18.100.9", .dip = "198.51.100.7",
			    .sport = 1000, .dport = 2000, .payload = 18 };
	uint8_t f[256], out[2048], want[256];
	uint16_t len = tb_frame(f, &p), olen = 0;
	struct bng_key k;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, core_frame(want, &p));
	EP_CHECK_MEM(out, want, olen);
	/* The table's key is what the classify stage builds from the frame. */
	memset(&k, 0, sizeof(k));
	memcpy(k.mac, mac5, 6);
	EP_CHECK_EQ(bng_sub_find_key(t->b, &k), 5);
	p.ttl = 0;
	p.src = other;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	p.src = mac5;
	p.n_vlans = 1;
	p.vid[0] = 100;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	/* The PPPoE subscriber's address from the IPoE key: anti-spoofing. */
	p.n_vlans = 0;
	p.sip = "198.18.100.10";
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	tb_free(t);
}

EP_TEST(uplink_spoofed_ipv4_source_dropped)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = qinq_v4(100, 200, "198.18.100.3");   /* subscriber 2's address */
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);

	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	/* Subscriber 2 owns a /29 besides its /32: inside passes, outside not. */
	p = (struct tb_pkt){ .n_vlans = 1, .vid = { 101 }, .ip = 4, .sip = "198.18.101.7",
			     .dip = "198.51.100.7", .payload = 18 };
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	p.sip = "198.18.101.8";
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	tb_free(t);
}

EP_TEST(uplink_spoofed_ipv6_source_dropped)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = 6,
			    .sip = "2001:db8:100:ff::1", .dip = "2001:db8:ffff::1", .payload = 8 };
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);

	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	p.sip = "2001:db8:101::1";          /* the next /56: subscriber 3's */
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	/* Subscriber 2 has no IPv6 prefix: every IPv6 source is spoofed. */
	p.n_vlans = 1;
	p.vid[0] = 101;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	tb_free(t);
}

EP_TEST(uplink_pppoe_wrong_session_or_mac_dropped)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x13,
			    .ip = 4, .sip = "198.18.100.4", .dip = "198.51.100.1", .payload = 8 };
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);

	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	p.session = 0x12;
	p.src = (const uint8_t[]){ 2, 0, 0, 0, 0x10, 0x99 };
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	p.src = NULL;
	p.session = 0xffff;                 /* reserved (RFC 2516) */
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	p.session = 0x12;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	tb_free(t);
}

EP_TEST(uplink_pppoe_bad_length_and_header_dropped)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12,
			    .ip = 4, .sip = "198.18.100.4", .dip = "198.51.100.1", .payload = 100 };
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);
	uint16_t lo = 12 + 8 + 2 + 4;       /* PPPoE length field */

	f[lo + 1]++;                        /* one more than the frame holds */
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_LENGTH));
	f[lo + 1] -= 2;                     /* one less, frame is not minimum size */
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_LENGTH));
	f[lo] = 0;
	f[lo + 1] = 1;                      /* no room for the PPP protocol */
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_LENGTH));
	len = tb_frame(f, &p);
	f[lo - 4] = 0x21;                   /* version 2 */
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_HEADER));
	len = tb_frame(f, &p);
	f[lo - 3] = 0x09;                   /* code PADI inside a session frame */
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_HEADER));
	tb_free(t);
}

EP_TEST(uplink_pppoe_short_frame_with_padding_accepted)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .pppoe = true, .session = 7, .ip = 4, .sip = "198.18.100.5",
			    .dip = "198.51.100.1", .payload = 0,
			    .src = (const uint8_t[]){ 2, 0, 0, 0, 0x10, 0x04 } };
	uint8_t f[256] = {0}, out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK(len < 60);
	EP_CHECK_EQ(tb_run(t, t->up, f, 60, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, 14 + 28);         /* padding gone */
	tb_free(t);
}

struct punt_case { const char *name; struct tb_pkt p; int kind; };

EP_TEST(uplink_each_control_kind_punted_to_ring_and_counted)
{
	struct tb *t = tb_new(up_conf);
	struct bng_up *u = t->up->pipeline_ctx;
	const struct punt_case cases[] = {
		{ "pppoe discovery", { .n_vlans = 2, .vid = { 100, 201 }, .ether_type = 0x8863,
				       .payload = 40 }, BNG_PUNT_PPPOE_DISCOVERY },
		{ "lcp", { .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12,
			   .ppp_proto = 0xc021, .payload = 10 }, BNG_PUNT_PPP_LCP },
		{ "chap", { .pppoe = true, .session = 7, .ppp_proto = 0xc223, .payload = 10 },
		  BNG_PUNT_PPP_AUTH },
		{ "ipcp", { .pppoe = true, .session = 7, .ppp_proto = 0x8021, .payload = 10 },
		  BNG_PUNT_PPP_NCP },
		{ "ipv6cp", { .pppoe = true, .session = 7, .ppp_proto = 0x8057, .payload = 10 },
		  BNG_PUNT_PPP_NCP },
		{ "ccp", { .pppoe = true, .session = 7, .ppp_proto = 0x80fd, .payload = 10 },
		  BNG_PUNT_PPP_OTHER },
		{ "dhcp discover", { .n_vlans = 2, .vid = { 100, 200 }, .ip = 4, .sip = "0.0.0.0",
				     .dip = "255.255.255.255", .sport = 68, .dport = 67,
				     .payload = 240 }, BNG_PUNT_DHCP },
		{ "dhcpv6 solicit", { .n_vlans = 2, .vid = { 100, 200 }, .ip = 6,
				      .sip = "fe80::1", .dip = "ff02::1:2", .sport = 546,
				      .dport = 547, .payload = 20 }, BNG_PUNT_DHCPV6 },
		{ "dhcpv6 in pppoe", { .pppoe = true, .session = 7, .ip = 6, .sip = "fe80::1",
				       .dip = "ff02::1:2", .sport = 546, .dport = 547,
				       .payload = 20 }, BNG_PUNT_DHCPV6 },
		{ "arp reply", { .n_vlans = 2, .vid = { 100, 200 }, .ether_type = 0x0806,
				 .payload = 28 }, BNG_PUNT_ARP },
		{ "router solicitation", { .n_vlans = 2, .vid = { 100, 200 }, .ip = 6,
					   .sip = "fe80::1", .dip = "ff02::2",
					   .proto = IPPROTO_ICMPV6, .sport = 133 << 8,
					   .ttl = 255, .payload = 0 }, BNG_PUNT_ND },
	};

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		uint8_t f[512];
		struct tb_pkt p = cases[i].p;
		uint16_t len;
		uint64_t before = u->punt[cases[i].kind];

		if (p.ether_type == 0x0806) {
			/* An ARP reply (op 2): never answered, always punted. */
			len = tb_frame(f, &p);
			memcpy(f + len - 28, (const uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 2 }, 8);
		} else {
			len = tb_frame(f, &p);
		}
		EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_CONSUMED);
		EP_CHECK_EQ(u->punt[cases[i].kind], before + 1);
		if (u->punt[cases[i].kind] != before + 1)
			printf("    case: %s\n", cases[i].name);
	}
	EP_CHECK_EQ(rte_ring_count(t->b->punt_ring), RTE_DIM(cases));
	tb_free(t);
}

EP_TEST(uplink_control_packets_go_to_control_port_unchanged)
{
	struct tb *t = tb_new("control_port = core\n"
			      "subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 "
			      "mac=02:00:00:00:10:01\n");
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = 4, .sip = "0.0.0.0",
			    .dip = "255.255.255.255", .sport = 68, .dport = 67, .payload = 240 };
	uint8_t f[512], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(olen, len);
	EP_CHECK_MEM(out, f, len);
	EP_CHECK(t->b->punt_ring == NULL);
	tb_free(t);
}

EP_TEST(uplink_arp_request_for_gateway_answered_with_tags)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .dst = (const uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
			    .n_vlans = 2, .vid = { 100, 200 }, .ether_type = 0x0806,
			    .payload = 28 };
	uint8_t f[256], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;
	uint8_t *a = f + len - 28;

	memcpy(a, (const uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 1 }, 8);
	memcpy(a + 8, tb_sub_mac, 6);
	memcpy(a + 14, (const uint8_t[]){ 198, 18, 100, 2 }, 4);
	memcpy(a + 24, (const uint8_t[]){ 198, 18, 0, 1 }, 4);
	/* Outer tag as af_packet re-inserts a stripped 802.1ad tag: 0x8100. */
	f[12] = 0x81;
	f[13] = 0x00;
	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_ACCESS));
	EP_CHECK_MEM(out, tb_sub_mac, 6);
	EP_CHECK_MEM(out + 6, tb_access_mac, 6);
	EP_CHECK_MEM(out + 12, s_tag_tpid, 2);                   /* 802.1ad outer TPID */
	EP_CHECK_MEM(out + 14, f + 14, 6);                       /* both tags kept */
	EP_CHECK_EQ(out[len - 28 + 7], 2);                       /* ARP reply */
	EP_CHECK_MEM(out + len - 28 + 8, tb_access_mac, 6);
	tb_free(t);
}

EP_TEST(uplink_acl_denies_after_classification)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
	uint8_t f[256];
	uint16_t len;

	p.dport = 1900;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_DROP(EP_DROP_ACL_DENY));
	/* An unknown subscriber's packet never reaches rte_acl: the access
	 * key lookup drops it first. */
	p.vid[1] = 999;
	len = tb_frame(f, &p);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	tb_free(t);
}

EP_TEST(uplink_ping_to_gateway_answered_inside_pppoe)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12,
			    .ip = 4, .sip = "198.18.100.4", .dip = "198.18.0.1",
			    .proto = IPPROTO_ICMP, .payload = 0 };
	uint8_t f[256], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;
	uint8_t *icmp = f + 12 + 8 + 2 + 8 + 20;

	/* Echo request, id/seq 0x0102/0x0304, checksum over the 8 bytes. */
	memcpy(icmp, (const uint8_t[]){ 8, 0, 0, 0, 1, 2, 3, 4 }, 8);
	{
		uint16_t ck = (uint16_t)~rte_raw_cksum(icmp, 8);

		memcpy(icmp + 2, &ck, 2);
	}
	EP_CHECK_EQ(tb_run(t, t->up, f, len, out, &olen), EP_NEXT_TX(TB_ACCESS));
	EP_CHECK_MEM(out + 12, f + 12, 16);              /* tags and PPPoE header kept */
	EP_CHECK_MEM(out + 12, s_tag_tpid, 2);
	EP_CHECK_EQ(out[12 + 8 + 2 + 8 + 20], 0);            /* echo reply */
	tb_free(t);
}

/* The uplink hashes its access keys itself (bng_key_hash, from the key's two
 * words) and hands the hashes to rte_hash: they must be the table's own
 * (rte_hash_hash) for every kind of key, or every lookup would miss. */
EP_TEST(uplink_key_hash_is_the_access_tables_hash)
{
	struct tb *t = tb_new(up_conf);
	const struct tb_pkt pk[] = {
		qinq_v4(100, 200, "198.18.100.2"),
		{ .n_vlans = 1, .vid = { 101 }, .ip = 4, .sip = "198.18.100.3",
		  .dip = "198.51.100.7", .sport = 1, .dport = 2, .payload = 18 },
		{ .n_vlans = 2, .vid = { 100, 201 }, .pppoe = true, .session = 0x12, .ip = 6,
		  .sip = "2001:db8:101:5::1", .dip = "2001:db8:ffff::1", .sport = 5, .dport = 6,
		  .payload = 10 },
		{ .pppoe = true, .session = 7, .src = (const uint8_t[6]){ 2, 0, 0, 0, 0x10, 4 },
		  .ip = 4, .sip = "198.18.100.5", .dip = "198.51.100.7", .sport = 1, .dport = 2,
		  .payload = 18 },
	};

	for (size_t i = 0; i < RTE_DIM(pk); i++) {
		uint8_t f[256];
		struct ep_meta md = {0};
		struct bng_key k;
		uint64_t w[2];
		uint16_t len = tb_frame(f, &pk[i]);

		EP_CHECK_EQ(bng_parse_access(f, len, len, &md), 0);
		bng_key_of(f, &md, &k);
		memcpy(w, &k, sizeof(w));
		EP_CHECK_EQ(bng_key_hash(w[0], w[1]), rte_hash_hash(t->b->keys, &k));
		/* And the key is a configured subscriber's. */
		EP_CHECK(bng_sub_find_key(t->b, &k) >= 1);
	}
	tb_free(t);
}

/* The uplink's per-subscriber green counters are 32-bit in the state line
 * and spilled into the cold line's 64-bit totals before the byte counter
 * reaches 2^31: the subscriber's totals stay exact across a spill, the
 * remainder starts again from zero, and the cold line's sequence count
 * (what a reader retries on) moved by one whole change. */
EP_TEST(uplink_green_counters_spill_into_64_bit_totals_exactly)
{
	struct tb *t = tb_new(up_conf);
	struct tb_pkt p = qinq_v4(100, 200, "198.18.100.2");
	const struct bng_sub *s = bng_sub_get(t->b, 1);
	struct bng_up *u = t->b->up[0];
	struct bng_sub_counters c;
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);
	const uint32_t ip_len = (uint32_t)len - 14 - 8;     /* QinQ: two tags */
	uint32_t seq;

	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	bng_sub_counters(t->b, s, &c);
	EP_CHECK_EQ(c.pkts[RTE_COLOR_GREEN], 1);
	EP_CHECK_EQ(c.bytes[RTE_COLOR_GREEN], ip_len);
	/* As if 2^31 bytes less one packet had gone by since the last spill. */
	u->dyn[1].green_pkts = 1000;
	u->dyn[1].green_bytes = BNG_UP_GREEN_SPILL - 1;
	bng_sub_counters(t->b, s, &c);
	EP_CHECK_EQ(c.pkts[RTE_COLOR_GREEN], 1000);
	EP_CHECK_EQ(c.bytes[RTE_COLOR_GREEN], BNG_UP_GREEN_SPILL - 1);
	seq = u->cold[1].seq;
	EP_CHECK_EQ(seq & 1, 0);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(u->dyn[1].green_pkts, 0);
	EP_CHECK_EQ(u->dyn[1].green_bytes, 0);
	EP_CHECK_EQ(u->cold[1].seq, seq + 2);
	EP_CHECK_EQ(u->cold[1].pkts[RTE_COLOR_GREEN], 1001);
	EP_CHECK_EQ(u->cold[1].bytes[RTE_COLOR_GREEN], (uint64_t)BNG_UP_GREEN_SPILL - 1 + ip_len);
	EP_CHECK_EQ(tb_run(t, t->up, f, len, NULL, NULL), EP_NEXT_TX(TB_CORE));
	bng_sub_counters(t->b, s, &c);
	EP_CHECK_EQ(c.pkts[RTE_COLOR_GREEN], 1002);
	EP_CHECK_EQ(c.bytes[RTE_COLOR_GREEN], (uint64_t)BNG_UP_GREEN_SPILL - 1 + 2ull * ip_len);
	tb_free(t);
}
