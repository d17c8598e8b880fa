/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Downstream cases with crafted frames: every stage's verdicts, the DOCSIS
 * header bytes, HCS and BPI+ of what leaves, DEPI PSP packing and D-MPT,
 * the service-flow token bucket arithmetic, bonding sequence numbers, and a
 * key roll while operations are in flight.  What leaves is taken apart with
 * the proto helpers and decrypted the way a cable modem would.
 */
#include "test_cmts.h"

#include <rte_cpuflags.h>
#include <rte_cycles.h>

#include "ep_depi.h"
#include "ep_docsis.h"
#include "test_pkt.h"

static const uint8_t cpe1_mac[6] = { 0x02, 0, 0, 0x02, 0, 0x01 };
static const uint8_t cpe2_mac[6] = { 0x02, 0, 0, 0x02, 0, 0x02 };

/* A bed with CM 1 (bonded, bonding group 0) and CM 2 (one channel). */
static struct cb *
bed(const char *extra)
{
	char text[4096];
	size_t o;

	/* cb_cm_line returns a static buffer: one call per copy. */
	o = (size_t)snprintf(text, sizeof(text), "%s", cb_cm_line(1, 0, NULL));
	o += (size_t)snprintf(text + o, sizeof(text) - o, "%s", cb_cm_line(2, 1, NULL));
	snprintf(text + o, sizeof(text) - o, "%s", extra ? extra : "");
	return cb_new(text);
}

/* Send one frame; its verdict is "sent" when exactly one DOCSIS frame came
 * out (copied to @p f), else how it was dropped (0: nothing seen). */
static int
one(struct cb *t, const uint8_t *frame, uint16_t len, struct cb_frame *f)
{
	struct rte_mbuf *in = ep_test_mbuf(frame, len), *out[16];
	uint16_t k = cb_ds(t, &in, 1, out, 16);
	struct cb_frame fr[16];
	int nf = cb_depi_frames(out, k, fr, 16);

	rte_pktmbuf_free_bulk(out, k);
	if (nf == 1 && f != NULL)
		*f = fr[0];
	return nf;
}

EP_TEST(ds_frame_roundtrip_exact)
{
	struct cb *t = bed(NULL);
	uint8_t frame[2048], eth[2048];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 600, cpe1_mac);
	struct cb_frame f;
	struct ep_docsis_hdr h;

	EP_CHECK_EQ(one(t, frame, len, &f), 1);
	EP_CHECK_EQ(ep_docsis_parse(f.b, f.len, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.bpi_type, EP_DOCSIS_EH_BP_DOWN);
	EP_CHECK(h.enc);
	EP_CHECK_EQ(h.key_seq, 1);
	EP_CHECK_EQ(h.said, 1);
	EP_CHECK_EQ(h.ds_len, 5);
	EP_CHECK_EQ(h.dsid, 1);
	EP_CHECK_EQ(h.psn, 0);
	EP_CHECK_EQ(h.frame_len, f.len);
	/* The Ethernet frame is encrypted after the MAC addresses... */
	EP_CHECK_MEM(f.b + h.hdr_len, frame, 12);
	EP_CHECK(memcmp(f.b + h.hdr_len + 12, frame + 12, 16) != 0);
	/* ...and decrypts, CRC verified, to exactly what went in. */
	EP_CHECK_EQ(cb_ds_decode(t, 1, &f, eth), len);
	EP_CHECK_MEM(eth, frame, len);
	cb_free(t);
}

EP_TEST(ds_mac_header_and_hcs_exact)
{
	struct cb *t = bed("sf = 1 1 prio=5\ncls = 1 0 sf=1 dport=7000\n");
	uint8_t frame[2048], want[32];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 7000, 200, cpe1_mac);
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_DOWN, .key_seq = 1, .enc = true,
		.said = 1, .ds_len = 5, .traffic_prio = 5, .dsid = 1, .psn = 0 };
	struct cb_frame f;
	uint16_t hl;

	EP_CHECK_EQ(one(t, frame, len, &f), 1);
	hl = ep_docsis_build(want, sizeof(want), &s, len + 4u);
	EP_CHECK_EQ(hl, 17);
	EP_CHECK_MEM(f.b, want, hl);
	/* The second frame of the flow: PSN 1, a different HCS. */
	s.psn = 1;
	hl = ep_docsis_build(want, sizeof(want), &s, len + 4u);
	EP_CHECK_EQ(one(t, frame, len, &f), 1);
	EP_CHECK_MEM(f.b, want, hl);
	cb_free(t);
}

EP_TEST(ds_unknown_cpe_dropped)
{
	struct cb *t = bed(NULL);
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.99.1", 1000, 2000, 100, NULL);

	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_UNKNOWN_CPE), 1);
	cb_free(t);
}

EP_TEST(ds_source_that_is_the_cms_own_address_dropped)
{
	struct cb *t = bed(NULL);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint8_t frame[2048];
	uint16_t len;

	memcpy(s.dmac, cpe1_mac, 6);
	s.src4 = tp_ip4("198.19.1.2");
	s.dst4 = tp_ip4("198.19.1.1");
	len = tp_build(frame, &s);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_SPOOFED_SOURCE), 1);
	cb_free(t);
}

EP_TEST(ds_destination_mac_not_the_cpes_dropped)
{
	struct cb *t = bed(NULL);
	static const uint8_t other[6] = { 0x02, 9, 9, 9, 9, 9 };
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 100, other);

	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_DST_MAC_MISMATCH), 1);
	/* 198.19.1.2 has no MAC configured: any destination MAC goes. */
	len = cb_udp4(frame, "198.19.1.2", 1000, 2000, 100, other);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);
	cb_free(t);
}

/* One frame from @p src to @p dst (dotted IPv4) with destination MAC
 * @p dmac through the bed: its verdict as one() gives it. */
static int
one_from(struct cb *t, const char *src, const char *dst, const uint8_t *dmac)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint8_t frame[2048];

	memcpy(s.dmac, dmac, 6);
	s.src4 = tp_ip4(src);
	s.dst4 = tp_ip4(dst);
	return one(t, frame, tp_build(frame, &s), NULL);
}

/* Submgmt's four compares each way (one vector compare on x86) against
 * every CPE slot: the destination's MAC checked in slot 2, a spoofed
 * source in slot 2, and an IPv6 slot whose IPv4 word is zero never taken
 * for the source 0.0.0.0. */
EP_TEST(ds_submgmt_checks_every_cpe_slot_and_skips_ipv6_ones)
{
	static const uint8_t mac3[6] = { 0x02, 0, 0, 0x02, 0, 0x33 };
	struct cb *t = cb_new("cm = id=5 mac=02:00:00:01:00:05 cpe=198.19.5.1,198.19.5.2,"
			      "198.19.5.3@02:00:00:02:00:33,2001:db8:5::1 bg=1 bpi=off\n");

	EP_CHECK_EQ(one_from(t, "198.18.0.2", "198.19.5.3", mac3), 1);
	EP_CHECK_EQ(one_from(t, "198.18.0.2", "198.19.5.3", cpe1_mac), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_DST_MAC_MISMATCH), 1);
	EP_CHECK_EQ(one_from(t, "198.19.5.3", "198.19.5.2", cpe1_mac), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_SPOOFED_SOURCE), 1);
	EP_CHECK_EQ(one_from(t, "0.0.0.0", "198.19.5.1", cpe1_mac), 1);
	EP_CHECK_EQ(one_from(t, "198.18.0.2", "198.19.5.4", cpe1_mac), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_UNKNOWN_CPE), 1);
	cb_free(t);
}

EP_TEST(ds_filter_deny_permit_unmatched)
{
	struct cb *t;
	struct cmts_ds *d;
	uint8_t frame[2048];
	uint16_t len;
	char text[4096];

	snprintf(text, sizeof(text),
		 "filter = 1 10 deny proto=17 dport=5000\n"
		 "filter = 1 20 permit proto=17 dport=5000-5999\n"
		 "filter = 2 10 deny proto=17 sport=777\n"
		 "filter = 3 10 deny proto=17\n"
		 "%s", cb_cm_line(1, 0, "fg=1,2"));
	t = cb_new(text);
	d = t->ds->pipeline_ctx;
	len = cb_udp4(frame, "198.19.1.1", 1000, 5000, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);              /* group 1, first rule */
	len = cb_udp4(frame, "198.19.1.1", 1000, 5001, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);              /* group 1, second rule */
	len = cb_udp4(frame, "198.19.1.1", 777, 80, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);              /* the CM's 2nd group */
	len = cb_udp4(frame, "198.19.1.1", 1000, 80, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);              /* unmatched: default permit */
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_FILTER_DENY), 2);
	EP_CHECK_EQ(d->filter_deny, 2);
	EP_CHECK_EQ(d->filter_permit, 2);
	EP_CHECK_EQ(d->filter_unmatched, 1);
	cb_free(t);
}

EP_TEST(ds_filter_default_deny)
{
	char text[4096];
	struct cb *t;
	uint8_t frame[2048];
	uint16_t len;

	snprintf(text, sizeof(text), "filter_default = deny\nfilter = 1 10 permit proto=17 dport=53\n"
		 "%s", cb_cm_line(1, 0, "fg=1"));
	t = cb_new(text);
	len = cb_udp4(frame, "198.19.1.1", 1000, 53, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);
	len = cb_udp4(frame, "198.19.1.1", 1000, 54, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_FILTER_DENY), 1);
	cb_free(t);
}

EP_TEST(ds_classifier_to_each_flow)
{
	struct cb *t = bed("sf = 1 1 prio=1\nsf = 1 2 prio=4\nsf = 1 3 prio=7\n"
			   "cls = 1 0 sf=1 proto=17 dport=1001\n"
			   "cls = 1 1 sf=2 proto=17 dport=1002\n"
			   "cls = 1 2 sf=3 dst=198.19.1.1/32 dport=1003\n"
			   "cls = 1 3 sf=1 prio=5 dport=2000-2999\n"
			   "cls = 1 4 sf=2 prio=10 dport=2500\n");
	static const struct { uint16_t dport; uint8_t prio; } c[] = {
		{ 1001, 1 }, { 1002, 4 }, { 1003, 7 }, { 80, 0 }, { 2100, 1 }, { 2500, 4 },
	};
	const struct cmts_ds_dyn *y = &((struct cmts_ds *)t->ds->pipeline_ctx)->dyn[1];

	for (size_t i = 0; i < RTE_DIM(c); i++) {
		uint8_t frame[2048];
		uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, c[i].dport, 100, cpe1_mac);
		struct cb_frame f;
		struct ep_docsis_hdr h;

		EP_CHECK_EQ(one(t, frame, len, &f), 1);
		ep_docsis_parse(f.b, f.len, &h);
		EP_CHECK_EQ(h.traffic_prio, c[i].prio);
	}
	EP_CHECK_EQ(y->cls_matched, 5);
	EP_CHECK_EQ(y->cls_unmatched, 1);
	EP_CHECK_EQ(y->sf[0].pkts, 1);
	EP_CHECK_EQ(y->sf[1].pkts, 2);
	EP_CHECK_EQ(y->sf[2].pkts, 2);
	EP_CHECK_EQ(y->sf[3].pkts, 1);
	cb_free(t);
}

/* One burst of both families: the IPv4 frames take the filter groups'
 * lane tables and the CM's classifier table, the IPv6 frames the two ACL
 * instances, and the one verdict pass gives each its own. */
EP_TEST(ds_burst_of_both_families_gets_each_frame_its_filter_verdict_and_sf)
{
	struct cb *t = cb_new("filter = 1 10 deny proto=17 dport=5000\nsf = 7 1 prio=5\n"
			      "cls = 7 0 sf=1 proto=17 dport=1001\n"
			      "cm = id=7 mac=02:00:00:01:00:07 cpe=198.19.7.1,2001:db8:7::1 bg=1 "
			      "bpi=off fg=1\n");
	struct cmts_ds *d = t->ds->pipeline_ctx;
	static const uint16_t dport[4] = { 5000, 1001, 5000, 1001 };
	struct rte_mbuf *in[4], *out[16];
	struct cb_frame *fr = malloc(sizeof(*fr) * 4);
	uint16_t k;
	int nf;

	for (int i = 0; i < 4; i++) {
		struct tp_spec s = tp_default(i >= 2, IPPROTO_UDP);
		uint8_t frame[2048];

		s.dst4 = tp_ip4("198.19.7.1");
		tp_ip6(s.dst6, "2001:db8:7::1");
		s.dport = dport[i];
		s.payload = 100;
		in[i] = ep_test_mbuf(frame, tp_build(frame, &s));
	}
	k = cb_ds(t, in, 4, out, 16);
	nf = cb_depi_frames(out, k, fr, 4);
	rte_pktmbuf_free_bulk(out, k);
	EP_CHECK_EQ(nf, 2);
	for (int i = 0; i < nf; i++) {
		struct ep_docsis_hdr h;

		EP_CHECK_EQ(ep_docsis_parse(fr[i].b, fr[i].len, &h), EP_DOCSIS_OK);
		EP_CHECK_EQ(h.traffic_prio, 5);
	}
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_FILTER_DENY), 2);
	EP_CHECK_EQ(d->filter_deny, 2);
	EP_CHECK_EQ(d->filter_permit, 2);
	EP_CHECK_EQ(d->filter_unmatched, 2);    /* the port 1001 frames: no rule */
	EP_CHECK_EQ(d->dyn[7].cls_matched, 2);
	free(fr);
	cb_free(t);
}

static uint32_t
match_scalar(const struct cmts_cls4 *t, const struct ep_acl_key4_set *k)
{
	return cmts_cls4_match_scalar(t, k);
}

#ifdef RTE_ARCH_X86
static CMTS_AVX512 uint32_t
match_avx512(const struct cmts_cls4 *t, const struct ep_acl_key4_set *k)
{
	return cmts_cls4_match_avx512(t, k);
}
#endif

/* A random IPv4 key around the test profile's classifier and filter rules
 * (10.x sources, 198.19.1.x destinations, ports 998-1011, TOS 64 in a
 * quarter) from the six random words @p r. */
static void
random_key4(struct ep_acl_key4_set *k, const uint32_t *r)
{
	static const uint8_t protos[] = { 1, 6, 17, 47 };

	memset(k, 0, sizeof(*k));
	k->proto = protos[r[0] % 4];
	k->src[0] = 10;
	k->src[1] = (uint8_t)(r[1] % 3);
	k->src[2] = (uint8_t)(1 + r[1] / 3 % 3);
	k->src[3] = (uint8_t)(r[1] / 9 % 5);
	k->dst[0] = 198;
	k->dst[1] = 19;
	k->dst[2] = 1;
	k->dst[3] = (uint8_t)(r[2] % 20);
	k->sport = rte_cpu_to_be_16((uint16_t)(998 + r[3] % 10));
	k->dport = rte_cpu_to_be_16((uint16_t)(998 + r[4] % 14));
	k->tos = (uint8_t)(r[5] % 4 == 0 ? 64 : r[5] % 256);
}

/*
 * The filter stage matches IPv4 frames against their CM's compiled
 * classifier table (struct cmts_cls4), not the classifier ACL: both must
 * pick the same classifier for any key.  16 classifiers using every field
 * (protocol or any, source and destination prefixes, port and tos ranges,
 * priorities with ties, one IPv6-only), then random keys drawn near their
 * values, each classified both ways (both compilations of the table's
 * match where the CPU has AVX-512).
 */
EP_TEST(ds_classifier_table_agrees_with_acl)
{
	struct cb *t = bed("sf = 1 1 prio=1\nsf = 1 2 prio=4\nsf = 1 3 prio=7\n"
			   "cls = 1 0 sf=1 proto=17 dport=1000-1010\n"
			   "cls = 1 1 sf=2 prio=3 proto=6 dport=1005\n"
			   "cls = 1 2 sf=3 prio=3 dst=198.19.1.0/28 dport=1000-1003\n"
			   "cls = 1 3 sf=1 prio=9 src=10.1.0.0/16 sport=1000-1001\n"
			   "cls = 1 4 sf=2 tos=32-63\n"
			   "cls = 1 5 sf=3 prio=2 proto=1\n"
			   "cls = 1 6 sf=1 prio=2 src=10.1.2.3/32 dst=198.19.1.2/31\n"
			   "cls = 1 7 sf=2 prio=7 sport=1002 dport=1002 tos=0-31\n"
			   "cls = 1 8 sf=3 prio=1 proto=17 sport=1003-1004\n"
			   "cls = 1 9 sf=1 prio=8 dst=2001:db8::/64\n"
			   "cls = 1 10 sf=2 prio=5 tos=64-64 dport=1001\n"
			   "cls = 1 11 sf=3 prio=5 src=10.0.0.0/8 proto=6\n"
			   "cls = 1 12 sf=1 prio=4 dst=198.19.1.1/32\n"
			   "cls = 1 13 sf=2 prio=6 sport=1000-1004 dport=1006-1009\n"
			   "cls = 1 14 sf=3 prio=6 proto=17 tos=1-200 dport=1008\n"
			   "cls = 1 15 sf=1 prio=0 src=10.1.2.0/24\n");
	const struct ep_acl_set *cs = ep_acl_read(t->sg->cls_acl);
	const struct cmts_cm *cm = t->sg->cms[1];
	static struct ep_acl_scratch sc;
	uint16_t ids[EP_BURST_MAX];
	uint32_t res[EP_BURST_MAX], matched = 0, seed = 1;
	bool avx512 = rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0;

	EP_CHECK(cm != NULL && cs != NULL);
	EP_CHECK_EQ(__builtin_popcount(cm->cls4.valid), 15);   /* the IPv6 one takes no lane */
	for (int round = 0; round < 200; round++) {
		for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
			struct ep_acl_key4_set *k = &sc.key[i].v4s;
			uint32_t r[6];

			for (int x = 0; x < 6; x++) {
				seed = seed * 1103515245u + 12345u;
				r[x] = seed >> 8;
			}
			random_key4(k, r);
			sc.data[i] = (const uint8_t *)k;
			sc.pkt[i] = i;
			ids[i] = 1;
		}
		sc.n = sc.n4 = EP_BURST_MAX;
		sc.n6 = 0;
		ep_acl_classify_keys(cs, &sc, ids, res);
		for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
			uint32_t want = res[i] != 0 ? 1 + ep_acl_res_value(cs, res[i]) : 0;

			EP_CHECK_EQ(match_scalar(&cm->cls4, &sc.key[i].v4s), want);
#ifdef RTE_ARCH_X86
			if (avx512)
				EP_CHECK_EQ(match_avx512(&cm->cls4, &sc.key[i].v4s), want);
#endif
			matched += want != 0;
		}
	}
	/* The keys reach most classifiers, and not every key matches. */
	EP_CHECK(matched > 200 * EP_BURST_MAX / 4 && matched < 200 * EP_BURST_MAX);
	cb_free(t);
}

/*
 * The filter stage matches IPv4 frames against the SG's filter-group lane
 * tables (struct cmts_fg4), not the filter ACL: for any key and any pair of
 * groups both must give the same verdict and the same "matched".  Three
 * groups of 16 IPv4 rules using every field, permit and deny interleaved,
 * one IPv6-only rule (it takes no lane), then random keys near the rules'
 * values in every pair of groups (0: none), each matched both ways (both
 * compilations where the CPU has AVX-512).  A group with 17 rules for IPv4
 * leaves the tables out (the stage takes the ACL) until it shrinks.
 */
EP_TEST(ds_filter_group_tables_agree_with_acl)
{
	static const char *const shapes[] = {
		"proto=17 dport=1000-1010", "proto=6 dport=1005", "dst=198.19.1.0/28 dport=1000-1003",
		"src=10.1.0.0/16 sport=1000-1001", "tos=32-63", "proto=1",
		"src=10.1.2.3/32 dst=198.19.1.2/31", "sport=1002 dport=1002 tos=0-31",
		"proto=17 sport=1003-1004", "tos=64-64 dport=1001", "src=10.0.0.0/8 proto=6",
		"dst=198.19.1.1/32", "sport=1000-1004 dport=1006-1009", "proto=17 tos=1-200 dport=1008",
		"src=10.1.2.0/24", "proto=17 dport=1000",
	};
	static struct ep_acl_scratch sc;
	struct cb *t = bed("filter = 2 3 deny dst=2001:db8::/64\n");
	struct ep_err err = { 0 };
	const struct ep_acl_set *fs;
	const struct cmts_fg4 *fg4;
	uint16_t ids[2 * EP_BURST_MAX];
	uint32_t res[2 * EP_BURST_MAX], seed = 7, matched = 0, denied = 0, n = 0;
	char rule[128];
	bool avx512 = rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
		      rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0;

	for (int g = 1; g <= 3; g++)
		for (int r = 0; r < 16; r++) {
			snprintf(rule, sizeof(rule), "%d %d %s %s", g, 10 * r,
				 (r + g) % 3 == 0 ? "deny" : "permit", shapes[(r * 5 + g) % 16]);
			EP_CHECK_EQ(cmts_filter_add(t->sg, rule, true, &err), 0);
		}
	fs = ep_acl_read(t->sg->filter_acl);
	fg4 = t->sg->fg4;
	EP_CHECK(fs != NULL && fg4 != NULL);
	EP_CHECK_EQ(fg4->g[1].valid, 0xffff);
	EP_CHECK_EQ(fg4->g[2].valid, 0xffff);               /* the IPv6 rule takes no lane */
	EP_CHECK_EQ(fg4->g[4].valid, 0);
	for (int round = 0; round < 200; round++) {
		for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
			struct ep_acl_key4_set *k = &sc.key[i].v4s;
			uint32_t r[8];

			for (int x = 0; x < 8; x++) {
				seed = seed * 1103515245u + 12345u;
				r[x] = seed >> 8;
			}
			random_key4(k, r);
			sc.data[i] = (const uint8_t *)k;
			sc.pkt[i] = i;
			ids[2 * i] = (uint16_t)(r[6] % 5);         /* 0..4: none, 3 groups, an empty one */
			ids[2 * i + 1] = (uint16_t)(r[7] % 5);
		}
		sc.n = sc.n4 = EP_BURST_MAX;
		sc.n6 = 0;
		ep_acl_classify_keys(fs, &sc, ids, res);
		for (uint16_t i = 0; i < EP_BURST_MAX; i++) {
			const struct ep_acl_key4_set *k = &sc.key[i].v4s;
			const struct cmts_cls4 *g0 = &fg4->g[ids[2 * i]], *g1 = &fg4->g[ids[2 * i + 1]];
			int m, deny = ep_acl_lanes_deny(fs, &res[2 * i], &m);
			uint8_t want = (uint8_t)((m ? CMTS_FV_MATCHED : 0) |
						 (m && deny ? CMTS_FV_DENY : 0));

			EP_CHECK_EQ(cmts_fg4_verdict(match_scalar(g0, k), match_scalar(g1, k)), want);
#ifdef RTE_ARCH_X86
			if (avx512)
				EP_CHECK_EQ(cmts_fg4_verdict(match_avx512(g0, k),
							     match_avx512(g1, k)), want);
#endif
			matched += m != 0;
			denied += m && deny;
			n++;
		}
	}
	/* The keys reach both verdicts, and not every key matches. */
	EP_CHECK(matched > n / 4 && matched < n);
	EP_CHECK(denied > n / 20 && denied < matched);
	EP_CHECK_EQ(cmts_filter_add(t->sg, "1 500 deny proto=47", true, &err), 0);
	EP_CHECK(t->sg->fg4 == NULL);
	EP_CHECK_EQ(cmts_filter_del(t->sg, 1, 500, &err), 0);
	EP_CHECK(t->sg->fg4 != NULL);
	cb_free(t);
}

/*
 * The lookup finds CMs in the SG's address table (struct cmts_addr_tab),
 * not the rte_hash the control side keeps: both must give the same CM (or
 * none) for any address.  62 more CMs with two IPv4 and one IPv6 address
 * each, then random addresses of both families near and among theirs,
 * looked up both ways; again after CMs are deleted and others take new
 * addresses.  Then a frame is delivered with the table gone (the lookup's
 * fallback to the rte_hash).
 */
static void
addr_tab_check(struct cb *t, uint32_t *seed, uint32_t *found)
{
	const struct cmts_addr_tab *tab = t->sg->addr_tab;

	EP_CHECK(tab != NULL);
	for (int i = 0; i < 4000; i++) {
		uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8 };
		uint32_t r, a4, want, got;
		int64_t owner;

		*seed = *seed * 1103515245u + 12345u;
		r = *seed >> 8;
		if (r % 3 != 0) {
			a4 = 198u << 24 | 19u << 16 | (r / 3 % 80) << 8 | (r / 240 % 6);
			a[0] = (uint8_t)(a4 >> 24);
			a[1] = (uint8_t)(a4 >> 16);
			a[2] = (uint8_t)(a4 >> 8);
			a[3] = (uint8_t)a4;
			owner = cmts_cm_find_addr(t->sg, 4, a);
			got = cmts_addr4_find(tab, a4, cmts_addr4_home(tab, a4));
		} else {
			a[14] = (uint8_t)(r / 3 % 3);
			a[15] = (uint8_t)(r / 9 % 80);
			owner = cmts_cm_find_addr(t->sg, 6, a);
			got = cmts_addr6_find(tab, a, cmts_addr6_home(tab, a));
		}
		want = owner < 0 ? 0 : (uint32_t)owner;
		EP_CHECK_EQ(got, want);
		*found += got != 0;
	}
}

EP_TEST(ds_addr_table_agrees_with_hash)
{
	struct cb *t = bed(NULL);
	struct ep_err err = { 0 };
	struct cmts_addr_tab *tab;
	struct cmts_cm_req r[62];
	uint32_t seed = 3, found = 0;
	uint8_t frame[2048];
	uint16_t len;
	char line[256];

	for (uint32_t id = 3; id <= 64; id++) {
		snprintf(line, sizeof(line), "id=%u mac=02:00:00:01:01:%02x bg=0 bpi=off "
			 "cpe=198.19.%u.3,198.19.%u.4,2001:db8::%x", id, id, id, id, id);
		EP_CHECK_EQ(cmts_cm_req_parse(&r[id - 3], line, &err), 0);
	}
	EP_CHECK_EQ(cmts_cm_add_bulk(t->sg, r, 62, NULL, &err), 0);
	addr_tab_check(t, &seed, &found);
	/* Deleted CMs leave, others move to new addresses (one of them a
	 * deleted CM's). */
	for (uint32_t id = 3; id <= 20; id++)
		EP_CHECK_EQ(cmts_cm_del(t->sg, id, &err), 0);
	for (uint32_t id = 21; id <= 30; id++) {
		snprintf(line, sizeof(line), "id=%u mac=02:00:00:01:01:%02x bg=0 bpi=off "
			 "cpe=198.19.%u.5,198.19.%u.3,2001:db8::1:%x", id, id, id - 18, id, id);
		EP_CHECK_EQ(cmts_cm_req_parse(&r[id - 21], line, &err), 0);
	}
	EP_CHECK_EQ(cmts_cm_add_bulk(t->sg, r, 10, NULL, &err), 0);
	addr_tab_check(t, &seed, &found);
	/* Many random addresses belong to a CM, not all. */
	EP_CHECK(found > 8000 / 10 && found < 8000 / 2);
	tab = t->sg->addr_tab;
	t->sg->addr_tab = NULL;
	len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);
	t->sg->addr_tab = tab;
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);
	cb_free(t);
}

EP_TEST(ds_bonding_sequence_numbers)
{
	struct cb *t = bed(NULL);
	struct rte_mbuf *in[6], *out[16];
	struct cb_frame f[16];
	uint32_t seen[4] = { 0 };
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 1400, cpe1_mac), k;
	int nf;

	for (int i = 0; i < 6; i++)
		in[i] = ep_test_mbuf(frame, len);
	k = cb_ds(t, in, 6, out, 16);
	nf = cb_depi_frames(out, k, f, 16);
	rte_pktmbuf_free_bulk(out, k);
	EP_CHECK_EQ(nf, 6);
	for (int i = 0; i < nf; i++) {
		struct ep_docsis_hdr h;

		ep_docsis_parse(f[i].b, f[i].len, &h);
		EP_CHECK_EQ(h.ds_len, 5);
		seen[f[i].session - CB_DEPI_SESSION(0)]++;
		/* Consecutive PSNs, in order within each channel. */
		EP_CHECK(h.psn < 6);
	}
	/* Spread over the bonding group's three channels. */
	EP_CHECK(seen[0] != 0 && seen[1] != 0 && seen[2] != 0);
	EP_CHECK_EQ(seen[3], 0);
	/* A CM on one channel: DS service EH without PSN (3 bytes). */
	len = cb_udp4(frame, "198.19.2.1", 1000, 2000, 100, cpe2_mac);
	EP_CHECK_EQ(one(t, frame, len, &f[0]), 1);
	{
		struct ep_docsis_hdr h;

		ep_docsis_parse(f[0].b, f[0].len, &h);
		EP_CHECK_EQ(h.ds_len, 3);
		EP_CHECK_EQ(h.hdr_len, 15);
		EP_CHECK_EQ(f[0].session, CB_DEPI_SESSION(0));
	}
	cb_free(t);
}

/*
 * PSP packing: the frames of one channel that leave the crypto stage
 * together share DEPI packets, up to 16 segments and the DEPI MTU.  Which
 * frames leave together depends on the crypto device (cmts_crypto.c: the
 * stage takes what completed, the rest comes with the next call), so the
 * checks are bounds, not an exact grouping.
 */
EP_TEST(ds_depi_psp_packing)
{
	struct cb *t = bed(NULL);
	struct rte_mbuf *in[20], *out[32];
	struct cb_frame f[32];
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.2.1", 1000, 2000, 100, cpe2_mac), k;
	int nf, most = 0;

	/* CM 2 has one channel. */
	for (int i = 0; i < 5; i++)
		in[i] = ep_test_mbuf(frame, len);
	k = cb_ds(t, in, 5, out, 32);
	nf = cb_depi_frames(out, k, f, 32);
	EP_CHECK_EQ(nf, 5);
	EP_CHECK(k >= 1 && k <= 2);
	for (int i = 0; i < nf; i++)
		most = RTE_MAX(most, f[i].depi_segs);
	EP_CHECK(most >= 3);
	rte_pktmbuf_free_bulk(out, k);
	for (int i = 0; i < 20; i++)
		in[i] = ep_test_mbuf(frame, len);
	k = cb_ds(t, in, 20, out, 32);
	nf = cb_depi_frames(out, k, f, 32);
	EP_CHECK_EQ(nf, 20);
	EP_CHECK(k >= 2 && k <= 4);             /* never more than 16 per packet */
	for (uint16_t i = 0; i < k; i++)
		EP_CHECK(out[i]->pkt_len <= 14 + 1500);
	rte_pktmbuf_free_bulk(out, k);
	/* Two 1000-byte frames never share a 1500-byte DEPI packet. */
	len = cb_udp4(frame, "198.19.2.1", 1000, 2000, 1000, cpe2_mac);
	in[0] = ep_test_mbuf(frame, len);
	in[1] = ep_test_mbuf(frame, len);
	k = cb_ds(t, in, 2, out, 32);
	EP_CHECK_EQ(k, 2);
	rte_pktmbuf_free_bulk(out, k);
	cb_free(t);
}

EP_TEST(ds_depi_mpt_for_scqam)
{
	struct cb *t;
	struct rte_mbuf *in[8], *out[32];
	struct cb_frame f[32];
	static const uint16_t sizes[] = { 64, 150, 183, 184, 600, 1514, 90, 1200 };
	uint8_t frames[8][2048], eth[2048];
	uint16_t len[8], k;
	int nf;

	t = cb_new(cb_cm_line(3, 2, NULL));
	for (int i = 0; i < 8; i++) {
		len[i] = cb_udp4(frames[i], "198.19.3.1", (uint16_t)(1000 + i), 2000, sizes[i] < 60 ?
				 60 : sizes[i], (const uint8_t[]){ 0x02, 0, 0, 0x02, 0, 0x03 });
		in[i] = ep_test_mbuf(frames[i], len[i]);
	}
	k = cb_ds(t, in, 8, out, 32);
	EP_CHECK(k >= 2);
	for (uint16_t i = 0; i < k; i++)
		EP_CHECK_EQ((out[i]->pkt_len - 42) % 188, 0);
	nf = cb_depi_frames(out, k, f, 32);
	rte_pktmbuf_free_bulk(out, k);
	EP_CHECK_EQ(nf, 8);
	for (int i = 0; i < nf && i < 8; i++) {
		EP_CHECK_EQ(f[i].session, CB_DEPI_SESSION(3));
		EP_CHECK_EQ(cb_ds_decode(t, 3, &f[i], eth), len[i]);
		EP_CHECK_MEM(eth, frames[i], len[i]);
	}
	cb_free(t);
}

/* Lookup to classify by hand, then sf_sched at time @p now. */
static void
to_sf_sched(struct cb *t, struct rte_mbuf **p, uint16_t n, uint64_t now, uint16_t *next)
{
	for (int s = 0; s < 4; s++) {
		memset(next, 0, sizeof(next[0]) * n);
		EP_CHECK_EQ(t->ds->stages[s].fn(t->ds->pipeline_ctx, p, next, n), 0);
	}
	memset(next, 0, sizeof(next[0]) * n);
	t->ds->stage_tsc = now;
	t->ds->stages[4].fn(t->ds->pipeline_ctx, p, next, n);
}

EP_TEST(ds_sf_rate_and_burst_arithmetic)
{
	/* 8 Mbit/s = 1 MB/s: 1 byte per microsecond; burst 3044 bytes. */
	struct cb *t = bed("sf = 1 1 rate=8M burst=3044\ncls = 1 0 sf=1 dport=9000\n");
	struct cmts_ds *d = t->ds->pipeline_ctx;
	struct rte_mbuf *p[4], *out[8];
	uint16_t next[4], k;
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc();
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 9000, 1000, cpe1_mac);  /* PDU 1004 */

	for (int i = 0; i < 4; i++)
		p[i] = ep_test_mbuf(frame, len);
	to_sf_sched(t, p, 4, t0, next);
	/* A full bucket holds three 1004-byte PDUs (3012 <= 3044), not four. */
	EP_CHECK_EQ(next[0], EP_NEXT_CONTINUE);
	EP_CHECK_EQ(next[1], EP_NEXT_CONTINUE);
	EP_CHECK_EQ(next[2], EP_NEXT_CONTINUE);
	EP_CHECK_EQ(next[3], EP_NEXT_CONSUMED);
	EP_CHECK_EQ(d->queued, 1);
	rte_pktmbuf_free_bulk(p, 3);
	/* 32 bytes left: the fourth needs 972 more, 972 us at 1 byte/us. */
	t->ds->stage_tsc = t0 + hz / 1000000 * 900;
	cmts_ds_service(t->ds);
	EP_CHECK_EQ(d->queued, 1);
	t->ds->stage_tsc = t0 + hz / 1000000 * 1000;
	cmts_ds_service(t->ds);
	EP_CHECK_EQ(d->queued, 0);
	k = cb_ds(t, NULL, 0, out, 8);
	EP_CHECK_EQ(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	cb_free(t);
}

/*
 * The SF's "holds frames" state (the worker's CM line, not the queue):
 * a frame with tokens enough still waits behind frames of its SF that
 * wait, and once the service hook has drained them the next one goes
 * straight on.
 */
EP_TEST(ds_sf_frame_waits_behind_queued_ones_then_goes_straight)
{
	struct cb *t = bed("sf = 1 1 rate=8M burst=3044\ncls = 1 0 sf=1 dport=9000\n");
	struct cmts_ds *d = t->ds->pipeline_ctx;
	struct rte_mbuf *p[4], *small, *out[8];
	uint16_t next[4], k;
	uint64_t us = rte_get_tsc_hz() / 1000000, t0 = rte_rdtsc();
	uint8_t frame[2048], tiny[128];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 9000, 1000, cpe1_mac);  /* PDU 1004 */
	uint16_t tlen = cb_udp4(tiny, "198.19.1.1", 1000, 9000, 60, cpe1_mac);    /* PDU 64 */

	for (int i = 0; i < 4; i++)
		p[i] = ep_test_mbuf(frame, len);
	to_sf_sched(t, p, 4, t0, next);
	EP_CHECK_EQ(next[3], EP_NEXT_CONSUMED);
	rte_pktmbuf_free_bulk(p, 3);
	/* ~130 bytes of tokens: enough for 64, but one frame waits. */
	small = ep_test_mbuf(tiny, tlen);
	to_sf_sched(t, &small, 1, t0 + 100 * us, next);
	EP_CHECK_EQ(next[0], EP_NEXT_CONSUMED);
	EP_CHECK_EQ(d->queued, 2);
	/* The 1004-byte frame first (~1030 tokens), then the small one. */
	t->ds->stage_tsc = t0 + 1000 * us;
	cmts_ds_service(t->ds);
	EP_CHECK_EQ(d->queued, 1);
	t->ds->stage_tsc = t0 + 1300 * us;
	cmts_ds_service(t->ds);
	EP_CHECK_EQ(d->queued, 0);
	k = cb_ds(t, NULL, 0, out, 8);
	EP_CHECK_EQ(k, 2);
	rte_pktmbuf_free_bulk(out, k);
	/* Drained: the next frame within the rate goes on at once. */
	small = ep_test_mbuf(tiny, tlen);
	to_sf_sched(t, &small, 1, t0 + 1600 * us, next);
	EP_CHECK_EQ(next[0], EP_NEXT_CONTINUE);
	EP_CHECK_EQ(d->queued, 0);
	rte_pktmbuf_free(small);
	cb_free(t);
}

EP_TEST(ds_sf_queue_full_and_cm_gone)
{
	struct cb *t = bed("sf_queue = 2\nsf = 1 1 rate=8M burst=1522\ncls = 1 0 sf=1 dport=9000\n");
	struct cmts_ds *d = t->ds->pipeline_ctx;
	struct rte_mbuf *p[4];
	uint16_t next[4];
	uint8_t frame[2048];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 9000, 1000, cpe1_mac);
	struct ep_err err;

	for (int i = 0; i < 4; i++)
		p[i] = ep_test_mbuf(frame, len);
	to_sf_sched(t, p, 4, rte_rdtsc(), next);
	EP_CHECK_EQ(next[0], EP_NEXT_CONTINUE);
	EP_CHECK_EQ(next[1], EP_NEXT_CONSUMED);
	EP_CHECK_EQ(next[2], EP_NEXT_CONSUMED);
	EP_CHECK_EQ(next[3], EP_NEXT_DROP(EP_DROP_CMTS_SF_QUEUE_FULL));
	rte_pktmbuf_free(p[0]);
	rte_pktmbuf_free(p[3]);
	/* The CM goes while two of its packets wait: they are dropped. */
	EP_CHECK_EQ(cmts_cm_del(t->sg, 1, &err), 0);
	t->ds->stage_tsc = rte_rdtsc() + rte_get_tsc_hz();
	cmts_ds_service(t->ds);
	EP_CHECK_EQ(d->queued, 0);
	EP_CHECK_EQ(d->stage_sf->stats.drops[EP_DROP_CMTS_UNKNOWN_CPE], 2);
	cb_free(t);
}

EP_TEST(ds_key_roll_during_traffic)
{
	struct cb *t = bed(NULL);
	struct cmts_ds *d = t->ds->pipeline_ctx;
	struct rte_mbuf *in[32], *out[64];
	struct cb_frame f[64];
	uint8_t frame[2048], eth[2048], key[16], iv[16];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 1200, cpe1_mac), k;
	struct ep_err err;
	int nf, seq1 = 0, seq2 = 0;

	for (int i = 0; i < 32; i++)
		in[i] = ep_test_mbuf(frame, len);
	/* A burst goes in; some of it stays in the crypto device... */
	ep_worker_run_burst(t->ds, in, 32);
	EP_CHECK(d->in_flight != 0);
	/* ...while the next key is installed and activated. */
	cb_key(1, 2, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 2, key, iv, &err), 0);
	EP_CHECK_EQ(cmts_key_activate(t->sg, 1, 2, &err), 0);
	for (int i = 0; i < 32; i++)
		in[i] = ep_test_mbuf(frame, len);
	k = cb_ds(t, in, 32, out, 64);
	nf = cb_depi_frames(out, k, f, 64);
	rte_pktmbuf_free_bulk(out, k);
	EP_CHECK_EQ(nf, 64);
	for (int i = 0; i < nf; i++) {
		struct ep_docsis_hdr h;

		ep_docsis_parse(f[i].b, f[i].len, &h);
		seq1 += h.key_seq == 1;
		seq2 += h.key_seq == 2;
		EP_CHECK_EQ(cb_ds_decode(t, 1, &f[i], eth), len);
		EP_CHECK_MEM(eth, frame, len);
	}
	EP_CHECK_EQ(seq1, 32);
	EP_CHECK_EQ(seq2, 32);
	/* The slot the downstream uses cannot be overwritten (kseq 4: even,
	 * like 2); the other one can (kseq 3 replaces 1). */
	cb_key(1, 4, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 4, key, iv, &err), -1);
	cb_key(1, 3, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 3, key, iv, &err), 0);
	EP_CHECK_EQ(cmts_key_activate(t->sg, 1, 1, &err), -1);   /* 1 is gone */
	cb_free(t);
}

/* A frame framed under one record and encrypted after the next was
 * published (a key activated between the framing and the crypto of one
 * burst: the control thread publishes at any time) is encrypted with the
 * key its header names, not with the newer record's. */
EP_TEST(ds_crypto_follows_the_key_its_frame_names_not_a_newer_record)
{
	struct cb *t = bed(NULL);
	struct cmts_ds *d = t->ds->pipeline_ctx;
	const struct cmts_cm *cm = cmts_cm_get(t->sg, 1);
	uint8_t frame[2048], buf[2400], eth[2048], key[16], iv[16];
	uint16_t len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 600, cpe1_mac), nx[1];
	uint32_t hl = cm->hdr_len, total = hl + len + EP_DOCSIS_CRC_LEN;
	struct rte_mbuf *m;
	struct cb_frame f;
	struct ep_docsis_hdr h;
	struct ep_err err;

	/* What framing makes of it under the record of key sequence 1. */
	memcpy(buf, cm->hdr_tpl, hl);
	buf[2] = (uint8_t)((total - 6) >> 8);
	buf[3] = (uint8_t)(total - 6);
	ep_docsis_put_hcs(buf + hl - 2, ep_docsis_hcs(buf, hl - 2));
	memcpy(buf + hl, frame, len);
	memset(buf + hl + len, 0, EP_DOCSIS_CRC_LEN);
	m = ep_test_mbuf(buf, (uint16_t)total);
	ep_meta(m)->user = DSM_MAKE(1, 0, 0);
	/* Key sequence 2 is installed and activated before the crypto. */
	cb_key(1, 2, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 2, key, iv, &err), 0);
	EP_CHECK_EQ(cmts_key_activate(t->sg, 1, 2, &err), 0);
	EP_CHECK_EQ(cmts_ds_crypto_stage(d, &m, nx, 1), 0);
	EP_CHECK_EQ(d->in_flight, 0);
	f.len = rte_pktmbuf_data_len(m);
	memcpy(f.b, rte_pktmbuf_mtod(m, uint8_t *), f.len);
	rte_pktmbuf_free(m);
	EP_CHECK_EQ(ep_docsis_parse(f.b, f.len, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.key_seq, 1);
	EP_CHECK_EQ(cb_ds_decode(t, 1, &f, eth), len);
	EP_CHECK_MEM(eth, frame, len);
	cb_free(t);
}

/* The crypto stage takes a record's key sequence from its header
 * template (CMTS_TPL_KSEQ, line 0): the template must name ds_kseq in its
 * BPI EH whenever the record has a downstream session, after the CM is
 * added and after each activation. */
EP_TEST(ds_template_names_the_active_key_sequence)
{
	struct cb *t = bed(NULL);
	const struct cmts_cm *cm = cmts_cm_get(t->sg, 1);
	uint8_t key[16], iv[16];
	struct ep_err err;

	EP_CHECK(cm->ds_sess != NULL);
	EP_CHECK_EQ(cm->hdr_tpl[4] >> 4, EP_DOCSIS_EH_BP_DOWN);
	EP_CHECK_EQ(cm->hdr_tpl[CMTS_TPL_KSEQ] >> 4, 1);
	EP_CHECK_EQ(cm->ds_kseq, 1);
	cb_key(1, 2, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 2, key, iv, &err), 0);
	cm = cmts_cm_get(t->sg, 1);
	EP_CHECK_EQ(cm->hdr_tpl[CMTS_TPL_KSEQ] >> 4, 1);  /* installed, not active */
	EP_CHECK_EQ(cmts_key_activate(t->sg, 1, 2, &err), 0);
	cm = cmts_cm_get(t->sg, 1);
	EP_CHECK_EQ(cm->ds_kseq, 2);
	EP_CHECK_EQ(cm->hdr_tpl[4] >> 4, EP_DOCSIS_EH_BP_DOWN);
	EP_CHECK_EQ(cm->hdr_tpl[CMTS_TPL_KSEQ] >> 4, 2);
	cb_free(t);
}

EP_TEST(ds_bpi_off_gets_crc_only)
{
	struct cb *t = cb_new("cm = id=5 mac=02:00:00:01:00:05 cpe=198.19.5.1 bg=1 bpi=off\n");
	uint8_t frame[2048], eth[2048];
	uint16_t len = cb_udp4(frame, "198.19.5.1", 1000, 2000, 300, NULL);
	struct cb_frame f;
	struct ep_docsis_hdr h;

	EP_CHECK_EQ(one(t, frame, len, &f), 1);
	ep_docsis_parse(f.b, f.len, &h);
	EP_CHECK_EQ(h.bpi_type, 0);
	EP_CHECK_EQ(h.hdr_len, 10);             /* DS service EH only */
	EP_CHECK_MEM(f.b + h.hdr_len, frame, len);
	EP_CHECK_EQ(cb_ds_decode(t, 5, &f, eth), len);   /* the CRC verifies */
	cb_free(t);
}

EP_TEST(ds_truncated_and_oversized_frames)
{
	struct cb *t = bed(NULL);
	uint8_t frame[2100];
	uint16_t len;
	struct tp_spec s = tp_default(1, IPPROTO_UDP);

	/* The longest frame a DOCSIS PDU carries (2000 with its CRC) goes... */
	len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 1996, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 1);
	/* ...one byte more does not. */
	len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 1997, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_FRAME_TOO_LONG), 1);
	/* Cut in the IPv4 header, in the Ethernet header. */
	len = cb_udp4(frame, "198.19.1.1", 1000, 2000, 100, cpe1_mac);
	EP_CHECK_EQ(one(t, frame, 30, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_IPV4_TRUNCATED), 1);
	EP_CHECK_EQ(one(t, frame, 10, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_L2_TRUNCATED), 1);
	/* An IPv6 frame to an IPv4-only CM: no CM has the address. */
	len = tp_build(frame, &s);
	EP_CHECK_EQ(one(t, frame, len, NULL), 0);
	EP_CHECK_EQ(cb_drops(t->ds, EP_DROP_CMTS_UNKNOWN_CPE), 1);
	cb_free(t);
}

EP_TEST(ds_ipv6_cpe_roundtrip)
{
	struct cb *t = cb_new("cm = id=7 mac=02:00:00:01:00:07 cpe=2001:db8:7::1 bg=1 bpi=off\n");
	struct tp_spec s = tp_default(1, IPPROTO_TCP);
	uint8_t frame[2048], eth[2048];
	struct cb_frame f;
	uint16_t len;

	tp_ip6(s.dst6, "2001:db8:7::1");
	s.payload = 500;
	len = tp_build(frame, &s);
	EP_CHECK_EQ(one(t, frame, len, &f), 1);
	EP_CHECK_EQ(cb_ds_decode(t, 7, &f, eth), len);
	EP_CHECK_MEM(eth, frame, len);
	cb_free(t);
}
