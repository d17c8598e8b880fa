/* SPDX-License-Identifier: BSD-3-Clause */
/* Policer arithmetic (RFC 2698, RFC 4115), subscriber table changes, config
 * errors, and the add rate (reported, never asserted). */
#include "test_bng.h"

#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ip.h>

#include "bng/bng_access.h"
#include "bng/bng_counters.h"
#include "ep_ctl.h"

/* ---- policer ---- */

/* Run one frame up to (not including) the subscriber stage, find its
 * subscriber as that stage does, and return the mbuf as the police stage
 * sees it (ep_meta.user = record). */
static struct rte_mbuf *
to_police(struct tb *t, const struct tb_pkt *p)
{
	uint8_t f[2048];
	uint16_t len = tb_frame(f, p), next = 0;
	struct rte_mbuf *m = ep_test_mbuf(f, len);
	struct bng_key k;
	int64_t id;

	for (int i = 0; i < t->up->n_stages; i++) {
		if (strcmp(t->up->stages[i].name, "subscriber") == 0)
			break;
		t->up->stages[i].fn(t->up->stages[i].ctx, &m, &next, 1);
		EP_CHECK_EQ(next, EP_NEXT_CONTINUE);
	}
	bng_key_of(rte_pktmbuf_mtod(m, const uint8_t *), ep_meta(m), &k);
	id = bng_sub_find_key(t->b, &k);
	EP_CHECK(id > 0);
	ep_meta(m)->user = (uintptr_t)bng_sub_get(t->b, (uint32_t)id);
	return m;
}

/* The token buckets of RFC 2698 section 3 (and RFC 4115 section 2, colour
 * blind), in bytes, refilled by rate * elapsed exactly: the test drives time
 * in whole token periods, where the formula and rte_meter must agree. */
struct ref {
	bool rfc4115;
	uint64_t cbs, pbs;       /* pbs is EBS in RFC 4115 */
	uint64_t c_per, p_per;   /* TSC cycles per byte of each bucket */
	uint64_t tc, tp, last;
};

static enum rte_color
ref_colour(struct ref *r, uint64_t now, uint32_t len)
{
	uint64_t dt = now - r->last;

	r->tc = RTE_MIN(r->cbs, r->tc + dt / r->c_per);
	r->tp = RTE_MIN(r->pbs, r->tp + dt / r->p_per);
	r->last = now;
	if (!r->rfc4115) {
		/* RFC 2698: red if B > Tp; yellow if B > Tc (Tp -= B); else
		 * green (both -= B). */
		if (r->tp < len)
			return RTE_COLOR_RED;
		if (r->tc < len) {
			r->tp -= len;
			return RTE_COLOR_YELLOW;
		}
		r->tc -= len;
		r->tp -= len;
		return RTE_COLOR_GREEN;
	}
	/* RFC 4115: green if B <= Tc (Tc -= B); yellow if B <= Te (Te -= B). */
	if (r->tc >= len) {
		r->tc -= len;
		return RTE_COLOR_GREEN;
	}
	if (r->tp >= len) {
		r->tp -= len;
		return RTE_COLOR_YELLOW;
	}
	return RTE_COLOR_RED;
}

struct arrival { uint64_t dt; uint16_t len; enum rte_color want; };

static void
drive(bool rfc4115, const struct arrival *a, size_t n)
{
	struct tb *t = tb_new("subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 "
			      "mac=02:00:00:00:10:01 policer=p\n"
			      "policer = p cir=8M cbs=1000 pir=16M pbs=2000\n");
	struct bng_up *u = t->up->pipeline_ctx;
	uint64_t hz = rte_get_tsc_hz();
	/* Rates whose token period is a whole number of cycles: 1000 cycles
	 * per committed byte, 500 (2698) or 1000 (4115) per peak/excess byte. */
	uint64_t cir = hz / 1000, pir = rfc4115 ? hz / 1000 : hz / 500;
	struct ref r = { .rfc4115 = rfc4115, .cbs = 1000, .pbs = rfc4115 ? 1000 : 2000,
			 .c_per = 1000, .p_per = rfc4115 ? 1000 : 500 };
	uint64_t now = 1000000007;  /* any start: the meter arms on the first packet */
	struct ep_err err;

	EP_CHECK_EQ(ep_policer_set_raw(t->b->pol, "p", rfc4115 ? EP_POLICER_RFC4115 : EP_POLICER_RFC2698, cir,
					r.cbs, pir, r.pbs, -1, &err), 0);
	r.tc = r.cbs;
	r.tp = r.pbs;
	r.last = now;
	for (size_t i = 0; i < n; i++) {
		struct tb_pkt p = { .n_vlans = 2, .vid = { 100, 200 }, .ip = 4,
				    .sip = "198.18.100.2", .dip = "198.51.100.1",
				    .dscp = 10, .payload = (uint16_t)(a[i].len - 28) };
		struct rte_mbuf *m = to_police(t, &p);
		uint16_t next = 0;
		enum rte_color ref;

		now += a[i].dt;
		ref = ref_colour(&r, now, a[i].len);
		EP_CHECK_EQ(ref, a[i].want);        /* the arithmetic written down below */
		bng_up_police_at(u, &m, &next, 1, now);
		if (a[i].want == RTE_COLOR_RED) {
			EP_CHECK_EQ(next, EP_NEXT_DROP(EP_DROP_BNG_POLICER_RED));
		} else {
			const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, 22);

			EP_CHECK_EQ(next, EP_NEXT_CONTINUE);
			/* Yellow AF11 is remarked AF12; the header checksum stays valid. */
			EP_CHECK_EQ(ip[1] >> 2, a[i].want == RTE_COLOR_YELLOW ? 12 : 10);
			EP_CHECK_EQ(rte_raw_cksum(ip, 20), 0xffff);
		}
		rte_pktmbuf_free(m);
	}
	{
		struct bng_sub_counters c;
		uint64_t g = 0, y = 0, rd = 0;

		for (size_t i = 0; i < n; i++) {
			g += a[i].want == RTE_COLOR_GREEN;
			y += a[i].want == RTE_COLOR_YELLOW;
			rd += a[i].want == RTE_COLOR_RED;
		}
		bng_sub_counters(t->b, bng_sub_get(t->b, 1), &c);
		EP_CHECK_EQ(c.pkts[RTE_COLOR_GREEN], g);
		EP_CHECK_EQ(c.pkts[RTE_COLOR_YELLOW], y);
		EP_CHECK_EQ(c.pkts[RTE_COLOR_RED], rd);
	}
	tb_free(t);
}

EP_TEST(policer_rfc2698_colours_follow_token_arithmetic)
{
	/* CBS 1000, PBS 2000; C refills 1 byte / 1000 cycles, P 1 / 500.
	 *  t+0      600: Tp 2000, Tc 1000 -> green  (Tc 400, Tp 1400)
	 *  t+0      600: Tc 400 < 600     -> yellow (Tp 800)
	 *  t+0      600: Tc 400 < 600     -> yellow (Tp 200)
	 *  t+0      600: Tp 200 < 600     -> red
	 *  t+200000 600: Tc 600, Tp 600   -> green  (0, 0)
	 *  t+100000 200: Tc 100, Tp 200   -> yellow (Tp 0)
	 *  t+1000   100: Tc 101, Tp 2     -> red
	 *  t+1e7    600: both full        -> green */
	static const struct arrival a[] = {
		{ 0, 600, RTE_COLOR_GREEN }, { 0, 600, RTE_COLOR_YELLOW },
		{ 0, 600, RTE_COLOR_YELLOW }, { 0, 600, RTE_COLOR_RED },
		{ 200000, 600, RTE_COLOR_GREEN }, { 100000, 200, RTE_COLOR_YELLOW },
		{ 1000, 100, RTE_COLOR_RED }, { 10000000, 600, RTE_COLOR_GREEN },
	};

	drive(false, a, RTE_DIM(a));
}

EP_TEST(policer_rfc4115_colours_follow_token_arithmetic)
{
	/* CBS = EBS = 1000; both refill 1 byte / 1000 cycles.  Unlike RFC
	 * 2698, green does not spend the excess bucket.
	 *  t+0      600: Tc 1000          -> green  (Tc 400)
	 *  t+0      600: Tc 400, Te 1000  -> yellow (Te 400)
	 *  t+0      600: Tc 400, Te 400   -> red
	 *  t+300000 600: Tc 700           -> green  (Tc 100)
	 *  t+0      600: Tc 100, Te 700   -> yellow (Te 100)
	 *  t+0      300: Tc 100, Te 100   -> red */
	static const struct arrival a[] = {
		{ 0, 600, RTE_COLOR_GREEN }, { 0, 600, RTE_COLOR_YELLOW },
		{ 0, 600, RTE_COLOR_RED }, { 300000, 600, RTE_COLOR_GREEN },
		{ 0, 600, RTE_COLOR_YELLOW }, { 0, 300, RTE_COLOR_RED },
	};

	drive(true, a, RTE_DIM(a));
}

/* The whole subscriber stage on one burst (the cases above call
 * bng_up_police_at a packet at a time): each packet is metered by its own
 * subscriber's profile, not by one read for the burst.  Subscribers 1 and 2
 * alternate; 1's buckets (1000 bytes) can never hold a 1200-byte packet,
 * 2's can. */
EP_TEST(subscriber_stage_meters_each_packet_of_a_burst_by_its_own_profile)
{
	struct tb *t = tb_new("subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 "
			      "mac=02:00:00:00:10:01 policer=small\n"
			      "subscriber = id=2 qinq=100.201 ipv4=198.18.100.3 "
			      "mac=02:00:00:00:10:02 policer=big\n"
			      "policer = small cir=8M cbs=1000 pir=16M pbs=1000\n"
			      "policer = big cir=8M cbs=64K pir=16M pbs=128K\n");
	struct rte_mbuf *m[4];
	uint16_t next[4] = {0}, dropped;
	int sub = -1;

	for (int i = 0; i < 4; i++) {
		struct tb_pkt p = { .n_vlans = 2, .vid = { 100, (uint16_t)(200 + (i & 1)) },
				    .ip = 4, .sip = i & 1 ? "198.18.100.3" : "198.18.100.2",
				    .dip = "198.51.100.1", .payload = 1200 - 28 };

		m[i] = to_police(t, &p);
	}
	for (int i = 0; i < t->up->n_stages; i++)
		if (strcmp(t->up->stages[i].name, "subscriber") == 0)
			sub = i;
	EP_CHECK(sub >= 0);
	dropped = t->up->stages[sub].fn(t->up->stages[sub].ctx, m, next, 4);
	EP_CHECK_EQ(dropped, 2);
	for (int i = 0; i < 4; i++) {
		EP_CHECK_EQ(next[i], (i & 1) ? EP_NEXT_CONTINUE :
			    EP_NEXT_DROP(EP_DROP_BNG_POLICER_RED));
		rte_pktmbuf_free(m[i]);
	}
	tb_free(t);
}

EP_TEST(policer_profile_text_and_bad_rates)
{
	struct tb *t = tb_new("");
	struct ep_err err;
	const struct ep_policer *p;

	EP_CHECK_EQ(ep_policer_set(t->b->pol, "g", "cir=20M cbs=64K pir=40M pbs=128K yellow=cs0",
				    &err), 0);
	p = t->b->pol->pol[ep_policer_find(t->b->pol, "g")];
	EP_CHECK_EQ(p->cir, 2500000);
	EP_CHECK_EQ(p->cbs, 65536);
	EP_CHECK_EQ(p->yellow_dscp[10], 0);
	EP_CHECK_EQ(ep_policer_set(t->b->pol, "bad", "cir=40M cbs=64K pir=20M pbs=128K", &err), -1);
	EP_CHECK(strstr(err.msg, "cir <= pir") != NULL);
	EP_CHECK_EQ(ep_policer_set(t->b->pol, "bad", "cir=1M cbs=1K", &err), -1);
	EP_CHECK_EQ(ep_policer_set(t->b->pol, "x", "cir=1M cbs=1K eir=1M ebs=1K mode=rfc4115", &err),
		    0);
	tb_free(t);
}

/* ---- subscriber table ---- */

static int
add(struct tb *t, const char *line)
{
	return tb_sub_add(t, line);
}

static uint16_t
up_qinq(struct tb *t, uint16_t o, uint16_t i, const char *sip)
{
	struct tb_pkt p = { .n_vlans = 2, .vid = { o, i }, .ip = 4, .sip = sip,
			    .dip = "198.51.100.1", .payload = 10 };
	uint8_t f[256];

	return tb_run(t, t->up, f, tb_frame(f, &p), NULL, NULL);
}

/* Green packets of subscriber @p id, as sub-get counts them. */
static uint64_t
green(struct tb *t, uint32_t id)
{
	struct bng_sub_counters c;

	bng_sub_counters(t->b, bng_sub_get(t->b, id), &c);
	return c.pkts[RTE_COLOR_GREEN];
}

static int64_t
dst_id(struct tb *t, const char *ip)
{
	uint8_t a[16];
	int fam = strchr(ip, ':') ? 6 : 4;

	inet_pton(fam == 4 ? AF_INET : AF_INET6, ip, a);
	return bng_sub_find_dst(t->b, fam, a);
}

EP_TEST(runtime_add_replace_delete_keeps_tables_consistent)
{
	struct tb *t = tb_new("subscriber = id=9 vlan=300 ipv4=198.18.50.1 mac=02:00:00:00:00:09\n");
	struct ep_err err;
	const struct bng_sub *s;
	uint32_t pipe;

	EP_CHECK_EQ(add(t, "id=1 qinq=10.20 ipv4=198.18.40.1 mac=02:00:00:00:00:01"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 20, "198.18.40.1"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(dst_id(t, "198.18.40.1"), 1);
	EP_CHECK_EQ(green(t, 1), 1);
	pipe = bng_sub_get(t->b, 1)->pipe;

	/* Replace: new key and address; the old ones stop working at once. */
	EP_CHECK_EQ(add(t, "id=1 qinq=10.21 ipv4=198.18.40.2 mac=02:00:00:00:00:01"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 20, "198.18.40.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.1"), EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.2"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(dst_id(t, "198.18.40.1"), -1);
	EP_CHECK_EQ(dst_id(t, "198.18.40.2"), 1);
	s = bng_sub_get(t->b, 1);
	EP_CHECK_EQ(s->pipe, pipe);                        /* same subport: same pipe */
	EP_CHECK_EQ(green(t, 1), 2);   /* a change keeps counters */
	EP_CHECK_EQ(t->b->n_subs, 2);

	/* Replace with the same key: the key's data names the new record, and
	 * the worker's copy of the ranges follows at once. */
	EP_CHECK_EQ(add(t, "id=1 qinq=10.21 ipv4=198.18.40.5 mac=02:00:00:00:00:01"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.2"), EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.5"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(bng_sub_find_key(t->b, &bng_sub_get(t->b, 1)->key), 1);
	EP_CHECK_EQ(green(t, 1), 3);
	EP_CHECK_EQ(add(t, "id=1 qinq=10.21 ipv4=198.18.40.2 mac=02:00:00:00:00:01"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.5"), EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.2"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(green(t, 1), 4);

	/* Conflicts are refused and change nothing. */
	EP_CHECK_EQ(add(t, "id=2 vlan=300 ipv4=198.18.40.9 mac=02:00:00:00:00:02"), -1);
	EP_CHECK_EQ(add(t, "id=2 vlan=301 ipv4=198.18.50.1 mac=02:00:00:00:00:02"), -1);
	EP_CHECK(bng_sub_get(t->b, 2) == NULL);
	EP_CHECK_EQ(dst_id(t, "198.18.50.1"), 9);

	/* Delete: key, address and record gone; the id can be reused. */
	EP_CHECK_EQ(bng_sub_del(t->b, 1, &err), 0);
	EP_CHECK(bng_sub_get(t->b, 1) == NULL);
	EP_CHECK_EQ(up_qinq(t, 10, 21, "198.18.40.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	EP_CHECK_EQ(dst_id(t, "198.18.40.2"), -1);
	EP_CHECK_EQ(bng_sub_del(t->b, 1, &err), -1);
	EP_CHECK_EQ(add(t, "id=1 qinq=10.22 ipv4=198.18.40.3 mac=02:00:00:00:00:01"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 22, "198.18.40.3"), EP_NEXT_TX(TB_CORE));
	/* A new subscriber under an old id starts with fresh counters. */
	EP_CHECK_EQ(green(t, 1), 1);
	EP_CHECK_EQ(t->b->n_subs, 2);
	tb_free(t);
}

/* The QinQ map (struct bng_qinq) holds what the hash holds for QinQ IPoE
 * keys, through adds, replaces and deletes; past its last block, lines of
 * further outer VIDs are classified by the hash alone. */
EP_TEST(qinq_map_mirrors_the_hash_and_falls_back_past_its_blocks)
{
	struct tb *t = tb_new("");
	struct ep_err err;
	char line[160], ip[32];
	const struct bng_sub *s;

	for (int o = 1; o <= (int)BNG_QINQ_BLOCKS_MAX + 1; o++) {
		snprintf(line, sizeof(line), "id=%d qinq=%d.7 ipv4=198.18.60.%d", o, o, o);
		EP_CHECK_EQ(add(t, line), 0);
	}
	EP_CHECK_EQ(t->b->qinq->n_blk, BNG_QINQ_BLOCKS_MAX);
	EP_CHECK(t->b->qinq->blk[BNG_QINQ_BLOCKS_MAX + 1] == NULL);
	for (int o = 1; o <= (int)BNG_QINQ_BLOCKS_MAX + 1; o++) {
		snprintf(ip, sizeof(ip), "198.18.60.%d", o);
		EP_CHECK_EQ(up_qinq(t, (uint16_t)o, 7, ip), EP_NEXT_TX(TB_CORE));
		EP_CHECK_EQ(green(t, (uint32_t)o), 1);
	}
	s = bng_sub_get(t->b, 1);
	EP_CHECK_EQ(t->b->qinq->blk[1][7], (uint64_t)(uintptr_t)bng_key_data(s));
	/* Same key: the entry names the new record. */
	EP_CHECK_EQ(add(t, "id=1 qinq=1.7 ipv4=198.18.61.1"), 0);
	s = bng_sub_get(t->b, 1);
	EP_CHECK_EQ(t->b->qinq->blk[1][7], (uint64_t)(uintptr_t)bng_key_data(s));
	EP_CHECK_EQ(up_qinq(t, 1, 7, "198.18.60.1"), EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	EP_CHECK_EQ(up_qinq(t, 1, 7, "198.18.61.1"), EP_NEXT_TX(TB_CORE));
	/* New key: the old pair is gone from the map and from the hash. */
	EP_CHECK_EQ(add(t, "id=1 qinq=1.8 ipv4=198.18.61.1"), 0);
	s = bng_sub_get(t->b, 1);
	EP_CHECK_EQ(t->b->qinq->blk[1][7], 0);
	EP_CHECK_EQ(t->b->qinq->blk[1][8], (uint64_t)(uintptr_t)bng_key_data(s));
	EP_CHECK_EQ(up_qinq(t, 1, 7, "198.18.61.1"), EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	EP_CHECK_EQ(up_qinq(t, 1, 8, "198.18.61.1"), EP_NEXT_TX(TB_CORE));
	/* Deleted: no entry, unknown; the blockless outer VID likewise. */
	EP_CHECK_EQ(bng_sub_del(t->b, 1, &err), 0);
	EP_CHECK_EQ(bng_sub_del(t->b, BNG_QINQ_BLOCKS_MAX + 1, &err), 0);
	EP_CHECK_EQ(t->b->qinq->blk[1][8], 0);
	EP_CHECK_EQ(up_qinq(t, 1, 8, "198.18.61.1"), EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	EP_CHECK_EQ(up_qinq(t, BNG_QINQ_BLOCKS_MAX + 1, 7, "198.18.60.65"),
		    EP_NEXT_DROP(EP_DROP_BNG_UNKNOWN_SUBSCRIBER));
	/* A PPPoE session on a QinQ pair is keyed by the hash, not the map. */
	EP_CHECK_EQ(add(t, "id=2 qinq=2.9 pppoe=0x21 mac=02:00:00:00:00:02 ipv4=198.18.62.2"), 0);
	EP_CHECK_EQ(t->b->qinq->blk[2][9], 0);
	tb_free(t);
}

/* A PPPoE session frame from client MAC 02:00:00:00:00:<mac> on QinQ pair
 * 2.9 (the same line for every session of the test below). */
static uint16_t
up_pppoe(struct tb *t, uint16_t session, uint8_t mac, const char *sip)
{
	const uint8_t src[6] = { 0x02, 0, 0, 0, 0, mac };
	struct tb_pkt p = { .src = src, .n_vlans = 2, .vid = { 2, 9 }, .pppoe = true,
			    .session = session, .ip = 4, .sip = sip, .dip = "198.51.100.1",
			    .payload = 10 };
	uint8_t f[256];

	return tb_run(t, t->up, f, tb_frame(f, &p), NULL, NULL);
}

/* The map's entry of PPPoE session @p session, or NULL without a block. */
static const struct bng_pppoe_ent *
pppoe_ent(struct tb *t, uint16_t session)
{
	const struct bng_pppoe_ent *blk = t->b->pppoe->blk[session / BNG_PPPOE_BLK];

	return blk != NULL ? &blk[session % BNG_PPPOE_BLK] : NULL;
}

/* The PPPoE map (struct bng_pppoe) holds what the hash holds for PPPoE
 * keys, through adds, replaces and deletes; a second session with an id in
 * use (another client MAC) is the hash's alone and classified all the
 * same, and a frame whose MAC is not its session's is not the session's. */
EP_TEST(pppoe_map_mirrors_the_hash_and_leaves_a_shared_session_id_to_it)
{
	struct tb *t = tb_new("");
	struct ep_err err;
	const struct bng_pppoe_ent *e;
	const struct bng_sub *s;

	EP_CHECK(pppoe_ent(t, 0x121) == NULL);
	EP_CHECK_EQ(add(t, "id=2 qinq=2.9 pppoe=0x121 mac=02:00:00:00:00:02 ipv4=198.18.62.2"), 0);
	EP_CHECK_EQ(add(t, "id=3 qinq=2.9 pppoe=0x121 mac=02:00:00:00:00:03 ipv4=198.18.62.3"), 0);
	e = pppoe_ent(t, 0x121);
	EP_CHECK(e != NULL);
	if (e == NULL) {
		tb_free(t);
		return;
	}
	s = bng_sub_get(t->b, 2);
	EP_CHECK_EQ(e->data, (uint64_t)(uintptr_t)bng_key_data(s));
	EP_CHECK(memcmp(e->key, &s->key, sizeof(e->key)) == 0);
	EP_CHECK_EQ(up_pppoe(t, 0x121, 2, "198.18.62.2"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 3, "198.18.62.3"), EP_NEXT_TX(TB_CORE));  /* by the hash */
	EP_CHECK_EQ(green(t, 2), 1);
	EP_CHECK_EQ(green(t, 3), 1);
	EP_CHECK_EQ(up_pppoe(t, 0x121, 4, "198.18.62.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	EP_CHECK_EQ(up_pppoe(t, 0x122, 2, "198.18.62.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	/* Same key: the entry names the new record. */
	EP_CHECK_EQ(add(t, "id=2 qinq=2.9 pppoe=0x121 mac=02:00:00:00:00:02 ipv4=198.18.63.2"), 0);
	s = bng_sub_get(t->b, 2);
	EP_CHECK_EQ(e->data, (uint64_t)(uintptr_t)bng_key_data(s));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 2, "198.18.62.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_SPOOFED_SOURCE));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 2, "198.18.63.2"), EP_NEXT_TX(TB_CORE));
	/* The owner goes: the entry is free, the other session still the
	 * hash's; a new session of the id takes the entry. */
	EP_CHECK_EQ(bng_sub_del(t->b, 2, &err), 0);
	EP_CHECK_EQ(e->data, 0);
	EP_CHECK_EQ(up_pppoe(t, 0x121, 2, "198.18.63.2"),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 3, "198.18.62.3"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(add(t, "id=4 qinq=2.9 pppoe=0x121 mac=02:00:00:00:00:04 ipv4=198.18.62.4"), 0);
	s = bng_sub_get(t->b, 4);
	EP_CHECK_EQ(e->data, (uint64_t)(uintptr_t)bng_key_data(s));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 4, "198.18.62.4"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(up_pppoe(t, 0x121, 3, "198.18.62.3"), EP_NEXT_TX(TB_CORE));
	/* A new key for id 4 (another session): the old entry freed. */
	EP_CHECK_EQ(add(t, "id=4 qinq=2.9 pppoe=0x1ff mac=02:00:00:00:00:04 ipv4=198.18.62.4"), 0);
	EP_CHECK_EQ(e->data, 0);
	EP_CHECK_EQ(up_pppoe(t, 0x121, 4, "198.18.62.4"),
		    EP_NEXT_DROP(EP_DROP_BNG_PPPOE_BAD_SESSION));
	EP_CHECK_EQ(up_pppoe(t, 0x1ff, 4, "198.18.62.4"), EP_NEXT_TX(TB_CORE));
	tb_free(t);
}

/* The downlink worker does not answer the HQoS pipe configuration (stuck
 * or descheduled past the time-out): the add fails, and nothing of it is
 * left -- no record, no key or address, no pipe taken, no generation (the
 * per-worker counters' key) spent.  When the worker runs the message late,
 * its pipe configuration is harmless: that pipe is free again. */
EP_TEST(subscriber_add_whose_hqos_step_fails_leaves_no_trace)
{
	struct tb *t = tb_new("subscriber = id=9 vlan=300 ipv4=198.18.50.1 mac=02:00:00:00:00:09\n");
	struct ep_sched_subport *sp = &t->b->hqos->sub[0];
	uint32_t free0 = sp->n_free, gen0 = t->b->gen, subs0 = t->b->n_subs;
	int32_t keys0 = rte_hash_count(t->b->keys), dst0 = rte_hash_count(t->b->dst);
	struct bng_sub_req r;
	struct ep_err err = {{0}};
	void *obj;

	t->down->msgq = rte_ring_create("tb_down_msgq", 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
	EP_CHECK(t->down->msgq != NULL);
	__atomic_store_n(&t->down->running, true, __ATOMIC_RELEASE);
	EP_CHECK_EQ(bng_sub_req_parse(&r, "id=10 qinq=10.20 ipv4=198.18.40.1 ipv6=2001:db8:40::/56 "
				      "mac=02:00:00:00:00:10", &err), 0);
	EP_CHECK_EQ(bng_sub_add(t->b, &r, 1, NULL, &err), -1);
	EP_CHECK(strstr(err.msg, "hqos") != NULL && strstr(err.msg, "no answer") != NULL);
	EP_CHECK(bng_sub_get(t->b, 10) == NULL);
	EP_CHECK_EQ(bng_sub_find_key(t->b, &bng_sub_get(t->b, 9)->key), 9);
	EP_CHECK_EQ(rte_hash_count(t->b->keys), keys0);
	EP_CHECK_EQ(rte_hash_count(t->b->dst), dst0);
	EP_CHECK_EQ(dst_id(t, "198.18.40.1"), -1);
	EP_CHECK_EQ(dst_id(t, "2001:db8:40::1"), -1);
	EP_CHECK_EQ(sp->n_free, free0);
	EP_CHECK_EQ(t->b->gen, gen0);
	EP_CHECK_EQ(t->b->n_subs, subs0);
	/* Late, the worker runs what was queued. */
	__atomic_store_n(&t->down->running, false, __ATOMIC_RELEASE);
	while (rte_ring_dequeue(t->down->msgq, &obj) == 0) {
		struct ep_worker_msg *m = obj;

		m->fn(t->down, m->arg);
		free(m);
	}
	/* The same add now goes in and carries traffic. */
	EP_CHECK_EQ(add(t, "id=10 qinq=10.20 ipv4=198.18.40.1 mac=02:00:00:00:00:10"), 0);
	EP_CHECK_EQ(up_qinq(t, 10, 20, "198.18.40.1"), EP_NEXT_TX(TB_CORE));
	EP_CHECK_EQ(sp->n_free, free0 - 1);
	rte_ring_free(t->down->msgq);
	t->down->msgq = NULL;
	tb_free(t);
}

/* A batch with one bad entry adds none of it, and names the entry. */
EP_TEST(bulk_add_with_one_bad_entry_adds_none)
{
	static const char *const bad[][3] = {
		{ "id=20 qinq=20.1 ipv4=198.18.60.1 mac=02:00:00:00:00:20",
		  "id=21 qinq=20.2 ipv4=198.18.60.2 mac=02:00:00:00:00:21 policer=nosuch",
		  "id=22 qinq=20.3 ipv4=198.18.60.3 mac=02:00:00:00:00:22" },
		/* The batch itself: a key twice, an address twice, an id twice. */
		{ "id=20 qinq=20.1 ipv4=198.18.60.1 mac=02:00:00:00:00:20",
		  "id=21 qinq=20.1 ipv4=198.18.60.2 mac=02:00:00:00:00:21",
		  "id=22 qinq=20.3 ipv4=198.18.60.3 mac=02:00:00:00:00:22" },
		{ "id=20 qinq=20.1 ipv4=198.18.60.1 mac=02:00:00:00:00:20",
		  "id=21 qinq=20.2 ipv4=198.18.60.1 mac=02:00:00:00:00:21",
		  "id=22 qinq=20.3 ipv4=198.18.60.3 mac=02:00:00:00:00:22" },
		{ "id=20 qinq=20.1 ipv4=198.18.60.1 mac=02:00:00:00:00:20",
		  "id=20 qinq=20.2 ipv4=198.18.60.2 mac=02:00:00:00:00:21",
		  "id=22 qinq=20.3 ipv4=198.18.60.3 mac=02:00:00:00:00:22" },
		/* Untagged IPoE: the client MAC is the key, twice in the batch. */
		{ "id=20 mac=02:00:00:00:00:30 ipv4=198.18.60.1",
		  "id=21 mac=02:00:00:00:00:30 ipv4=198.18.60.2",
		  "id=22 qinq=20.3 ipv4=198.18.60.3 mac=02:00:00:00:00:22" },
	};
	static const char *const why[] = { "policer", "access key", "ipv4", "twice", "access key" };
	struct tb *t = tb_new("subscriber = id=9 vlan=300 ipv4=198.18.50.1 mac=02:00:00:00:00:09\n");
	uint32_t free0 = t->b->hqos->sub[0].n_free, recs0 = t->b->n_rec_free;

	for (size_t c = 0; c < RTE_DIM(bad); c++) {
		struct bng_sub_req r[3];
		struct ep_err err = {{0}};
		uint32_t failed = 99;

		for (int i = 0; i < 3; i++)
			EP_CHECK_EQ(bng_sub_req_parse(&r[i], bad[c][i], &err), 0);
		EP_CHECK_EQ(bng_sub_add(t->b, r, 3, &failed, &err), -1);
		EP_CHECK_EQ(failed, 1);
		if (strstr(err.msg, "subscribers[1] (id ") == NULL ||
		    strstr(err.msg, why[c]) == NULL || strstr(err.msg, "none added") == NULL) {
			printf("    case %zu: '%s'\n", c, err.msg);
			ep_test_failed = 1;
		}
		for (uint32_t id = 20; id <= 22; id++)
			EP_CHECK(bng_sub_get(t->b, id) == NULL);
		EP_CHECK_EQ(dst_id(t, "198.18.60.1"), -1);
		EP_CHECK_EQ(t->b->n_subs, 1);
		EP_CHECK_EQ(t->b->hqos->sub[0].n_free, free0);
		EP_CHECK_EQ(t->b->n_rec_free, recs0);
	}
	tb_free(t);
}

EP_TEST(runtime_prefixes_longest_match_and_length_list)
{
	struct tb *t = tb_new("");
	struct ep_err err;

	EP_CHECK_EQ(add(t, "id=5 qinq=1.2 ipv6=2001:db8:500::/56 ipv4=198.18.60.0/24 "
			"mac=02:00:00:00:00:05"), 0);
	EP_CHECK_EQ(add(t, "id=6 qinq=1.3 ipv6=2001:db8:500:10::/64 ipv4=198.18.60.7 "
			"mac=02:00:00:00:00:06"), 0);
	EP_CHECK_EQ(dst_id(t, "2001:db8:500:ff::1"), 5);
	EP_CHECK_EQ(dst_id(t, "2001:db8:500:10::1"), 6);     /* the longer prefix wins */
	EP_CHECK_EQ(dst_id(t, "198.18.60.7"), 6);
	EP_CHECK_EQ(dst_id(t, "198.18.60.8"), 5);
	EP_CHECK_EQ(t->b->lens->n4, 2);
	EP_CHECK_EQ(t->b->lens->len4[0], 32);
	EP_CHECK_EQ(t->b->lens->n6, 2);
	EP_CHECK_EQ(t->b->lens->len6[0], 64);
	EP_CHECK_EQ(bng_sub_del(t->b, 6, &err), 0);
	EP_CHECK_EQ(dst_id(t, "2001:db8:500:10::1"), 5);
	EP_CHECK_EQ(dst_id(t, "198.18.60.7"), 5);
	EP_CHECK_EQ(t->b->lens->n6, 1);                      /* /64 no longer searched */
	EP_CHECK_EQ(t->b->lens->n4, 1);
	EP_CHECK_EQ(bng_sub_del(t->b, 5, &err), 0);
	EP_CHECK_EQ(dst_id(t, "2001:db8:500:ff::1"), -1);
	EP_CHECK_EQ(t->b->lens->n6, 0);
	tb_free(t);
}

EP_TEST(bulk_add_4096_subscribers_reports_adds_per_second)
{
	struct tb *t = tb_new("max_subscribers = 8192\nhqos_qsize = 16\n"
			      "subport = 0 rate=10G pipes=8192\n");
	struct bng_sub_req *r = calloc(4096, sizeof(*r));
	struct ep_err err;
	uint64_t t0, t1;
	char line[256];

	for (int i = 0; i < 4096; i++) {
		snprintf(line, sizeof(line), "id=%d qinq=%d.%d ipv4=198.19.%d.%d "
			 "ipv6=2001:db8:%x:%x00::/56 mac=02:00:00:01:%02x:%02x", i + 1,
			 100 + i / 1000, 1 + i % 1000, i / 250, 1 + i % 250, 0x1000 + i / 256,
			 i % 256, i >> 8, i & 0xff);
		EP_CHECK_EQ(bng_sub_req_parse(&r[i], line, &err), 0);
	}
	t0 = rte_rdtsc();
	EP_CHECK_EQ(bng_sub_add(t->b, r, 4096, NULL, &err), 0);
	t1 = rte_rdtsc();
	printf("    4096 subscribers in one batch: %.0f adds/s (%.1f us each)\n",
	       4096.0 * (double)rte_get_tsc_hz() / (double)(t1 - t0),
	       (double)(t1 - t0) * 1e6 / (double)rte_get_tsc_hz() / 4096.0);
	EP_CHECK_EQ(t->b->n_subs, 4096);
	EP_CHECK_EQ(up_qinq(t, 104, 96, "198.19.16.96"), EP_NEXT_TX(TB_CORE));
	/* A batch with a conflict names the entry and adds none. */
	{
		struct bng_sub_req two[2];

		EP_CHECK_EQ(bng_sub_req_parse(&two[0], "id=5000 qinq=200.1 ipv4=198.19.200.1 "
					      "mac=02:00:00:00:50:00", &err), 0);
		EP_CHECK_EQ(bng_sub_req_parse(&two[1], "id=5001 qinq=100.3 "
					      "mac=02:00:00:00:50:01", &err), 0);
		EP_CHECK_EQ(bng_sub_add(t->b, two, 2, NULL, &err), -1);
		EP_CHECK(strstr(err.msg, "subscribers[1]") != NULL);
		EP_CHECK(strstr(err.msg, "none added") != NULL);
		EP_CHECK(bng_sub_get(t->b, 5000) == NULL);
		EP_CHECK(bng_sub_get(t->b, 5001) == NULL);
	}
	free(r);
	tb_free(t);
}

/* ---- configuration errors ---- */

static void
expect_error(const char *text, const char *where, const char *what)
{
	struct ep_err err = {{0}};
	struct tb *t = tb_try(text, &err);

	EP_CHECK(t == NULL);
	tb_free(t);
	if (strstr(err.msg, where) == NULL || strstr(err.msg, what) == NULL) {
		printf("    error '%s' lacks '%s' / '%s'\n", err.msg, where, what);
		ep_test_failed = 1;
	}
}

EP_TEST(config_errors_name_file_and_line)
{
	/* The test bed's fixed [bng] head is 11 lines: text starts on line 12. */
	expect_error("subscriber = id=1 qinq=100\n", "test.conf:12", "qinq");
	expect_error("\nsubscriber = id=1 vlan=5 policer=nope\n", "test.conf:13", "policer");
	expect_error("subscriber = id=1 vlan=5\nsubscriber = id=2 vlan=5\n", "test.conf:13",
		     "already belongs to subscriber 1");
	expect_error("policer = p cir=1M cbs=1K pir=2M\n", "test.conf:12", "pbs");
	expect_error("pipe = p rate=100M wrr=1,2,3\n", "test.conf:12", "wrr");
	expect_error("core_encap = mpls 3\n", "test.conf:12", "mpls");
	expect_error("dscp_tc = ef:13\n", "test.conf:12", "traffic class");
	expect_error("subscriber = id=1 pppoe=5 vlan=3\n", "test.conf:12", "mac");
	expect_error("hqos_qsize = 48\n", "test.conf:12", "power of two");
	expect_error("subscriber_file = /nonexistent/subs\n", "test.conf:12", "No such file or directory");
}

/* ---- the README's example and the control commands ---- */

static char *
readme_bng_section(void)
{
	char path[1024], *text, *ini, *bng, *end;
	const char *slash = strrchr(__FILE__, '/');
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%.*sREADME.md", slash ? (int)(slash - __FILE__ + 1) : 0,
		 __FILE__);
	f = fopen(path, "r");
	if (f == NULL && path[0] != '/') {
		/* __FILE__ is relative to the build directory, where the
		 * executable is: also when run from elsewhere. */
		char exe[512], rel[1600];
		ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		char *d;

		if (k > 0) {
			exe[k] = '\0';
			d = strrchr(exe, '/');
			if (d != NULL)
				*d = '\0';
			snprintf(rel, sizeof(rel), "%s/%s", exe, path);
			f = fopen(rel, "r");
		}
	}
	if (f == NULL) {
		printf("    cannot open %s\n", path);
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		n = 0;
	fclose(f);
	ini = strstr(text, "```ini\n");
	bng = ini ? strstr(ini, "\n[bng]\n") : NULL;
	end = bng ? strstr(bng, "```") : NULL;
	if (end == NULL) {
		free(text);
		return NULL;
	}
	*end = '\0';
	memmove(text, bng + 1, strlen(bng + 1) + 1);
	return text;
}

static json_t *
ctl(struct tb *t, const char *json)
{
	json_error_t je;
	json_t *req = json_loads(json, 0, &je), *resp;

	resp = ep_ctl_dispatch(&t->e, req);
	json_decref(req);
	if (!json_is_true(json_object_get(resp, "ok")))
		printf("    %s -> %s\n", json, json_string_value(json_object_get(resp, "error")));
	return resp;
}

static bool
ctl_ok(struct tb *t, const char *json)
{
	json_t *r = ctl(t, json);
	bool ok = json_is_true(json_object_get(r, "ok"));

	json_decref(r);
	return ok;
}

EP_TEST(readme_example_loads_and_control_commands_work)
{
	char *text = readme_bng_section();
	struct ep_err err = {{0}};
	struct tb *t;
	json_t *r, *res;

	EP_CHECK(text != NULL);
	if (text == NULL)
		return;
	t = tb_try_raw(text, &err);
	free(text);
	EP_CHECK(t != NULL);
	if (t == NULL) {
		printf("    README example: %s\n", err.msg);
		return;
	}
	EP_CHECK_EQ(t->b->n_subs, 3);
	EP_CHECK_EQ(t->b->core_encap, BNG_CORE_NONE);

	EP_CHECK(ctl_ok(t, "{\"cmd\": \"policer-add\", \"name\": \"bronze\", \"cir\": \"1M\", "
		 "\"cbs\": \"16K\", \"pir\": \"2M\", \"pbs\": \"32K\"}"));
	EP_CHECK(ctl_ok(t, "{\"cmd\": \"pipe-add\", \"name\": \"slow\", \"rate\": \"10M\"}"));
	EP_CHECK(ctl_ok(t, "{\"cmd\": \"sub-add\", \"id\": 7, \"qinq\": \"100.207\", \"ipv4\": "
		 "[\"198.18.100.9\", \"198.18.102.0/30\"], \"ipv6\": \"2001:db8:107::/56\", \"mac\": "
		 "\"02:00:00:00:10:07\", \"policer\": \"bronze\", \"pipe\": \"slow\"}"));
	EP_CHECK(!ctl_ok(t, "{\"cmd\": \"sub-add\", \"id\": 8, \"qinq\": \"100.207\", "
		  "\"mac\": \"02:00:00:00:10:08\"}"));                  /* key taken */
	EP_CHECK(ctl_ok(t, "{\"cmd\": \"sub-add-bulk\", \"subscribers\": [{\"id\": 20, \"vlan\": "
		 "20, \"mac\": \"02:00:00:00:20:20\"}, {\"id\": 21, \"pppoe\": 21, \"mac\": "
		 "\"02:00:00:00:20:21\"}]}"));
	r = ctl(t, "{\"cmd\": \"sub-get\", \"id\": 7}");
	res = json_object_get(r, "result");
	EP_CHECK_EQ(json_array_size(json_object_get(res, "ipv4")), 2);
	EP_CHECK(strcmp(json_string_value(json_object_get(res, "policer")), "bronze") == 0);
	EP_CHECK(json_object_get(json_object_get(res, "uplink"), "green") != NULL);
	json_decref(r);
	r = ctl(t, "{\"cmd\": \"sub-list\", \"limit\": 2, \"offset\": 1}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(r, "result"),
						    "subscribers")), 2);
	EP_CHECK_EQ(json_integer_value(json_object_get(json_object_get(r, "result"), "total")), 6);
	json_decref(r);
	r = ctl(t, "{\"cmd\": \"profile-list\"}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(r, "result"), "policers")), 3);
	json_decref(r);
	r = ctl(t, "{\"cmd\": \"bng-stats\"}");
	EP_CHECK_EQ(json_array_size(json_object_get(json_object_get(json_object_get(r, "result"),
		"downlink"), "hqos_tc")), RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE);
	json_decref(r);
	EP_CHECK(ctl_ok(t, "{\"cmd\": \"acl-add\", \"rule\": \"deny proto tcp dport 25\", "
		 "\"dir\": \"uplink\"}"));
	EP_CHECK_EQ(t->b->acl->n_rules, 3);
	EP_CHECK(ctl_ok(t, "{\"cmd\": \"sub-del\", \"id\": 7}"));
	EP_CHECK(!ctl_ok(t, "{\"cmd\": \"sub-del\", \"id\": 7}"));
	tb_free(t);
}
