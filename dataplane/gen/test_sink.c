/* SPDX-License-Identifier: BSD-3-Clause */
/* Sink: sequence accounting, foreign packets, latency histogram. */
#include <rte_ip.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_test.h"
#include "gen.h"

/* A generated IPv4 frame (64 bytes) for @p flow / @p seq sent at @p tsc. */
static struct rte_mbuf *
gen_frame(uint16_t flow, uint64_t seq, uint64_t tsc)
{
	/* Ether / IPv4 198.18.0.1 > 198.18.1.1 / UDP 1024 > 1025, checksum
	 * 0xad98 for total length 46 (as in test_gen.c). */
	uint8_t f[60] = {
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0x98, 0xc6, 0x12,
		0x00, 0x01, 0xc6, 0x12, 0x01, 0x01,
		0x04, 0x00, 0x04, 0x01, 0x00, 0x1a, 0x00, 0x00,
	};
	struct ep_gen_hdr h;

	ep_gen_hdr_make(&h, flow, seq, tsc);
	memcpy(f + 42, &h, sizeof(h));
	return ep_test_mbuf(f, sizeof(f));
}

/* Feed packets of @p flow with sequence numbers @p seqs through the stage. */
static void
feed(struct ep_sink *s, uint16_t flow, const uint64_t *seqs, int n, uint64_t now)
{
	for (int i = 0; i < n; i++) {
		struct rte_mbuf *m = gen_frame(flow, seqs[i], now);
		uint16_t next = 0;

		EP_CHECK_EQ(ep_sink_process(s, &m, &next, 1, now), 1);
		EP_CHECK_EQ(next, EP_NEXT_CONSUMED);
	}
}

static struct ep_sink *
new_sink(void)
{
	struct ep_sink *s = ep_sink_create(SOCKET_ID_ANY);

	EP_CHECK(s != NULL);
	return s;
}

EP_TEST(sink_in_order_all_received_none_lost)
{
	struct ep_sink *s = new_sink();
	uint64_t seqs[100];

	if (s == NULL)
		return;
	for (int i = 0; i < 100; i++)
		seqs[i] = (uint64_t)i;
	feed(s, 7, seqs, 100, 1000);
	EP_CHECK_EQ(s->c.rx_pkts, 100);
	EP_CHECK_EQ(s->c.rx_bytes, 100 * 64);
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->c.reordered_pkts, 0);
	EP_CHECK_EQ(s->c.duplicate_pkts, 0);
	EP_CHECK_EQ(s->flow[7].expected, 100);
	ep_sink_free(s);
}

EP_TEST(sink_gap_counts_lost)
{
	struct ep_sink *s = new_sink();
	static const uint64_t seqs[] = { 0, 1, 2, 5, 6, 100 };

	if (s == NULL)
		return;
	feed(s, 0, seqs, 6, 1000);
	EP_CHECK_EQ(s->c.rx_pkts, 6);
	EP_CHECK_EQ(s->c.lost_pkts, 2 + 93);
	EP_CHECK_EQ(s->c.reordered_pkts, 0);
	ep_sink_free(s);
}

EP_TEST(sink_first_packets_missing_count_as_lost)
{
	struct ep_sink *s = new_sink();
	static const uint64_t seqs[] = { 3, 4 };

	if (s == NULL)
		return;
	feed(s, 1, seqs, 2, 1000);
	EP_CHECK_EQ(s->c.lost_pkts, 3);
	ep_sink_free(s);
}

EP_TEST(sink_late_packet_counts_reordered_and_corrects_lost)
{
	struct ep_sink *s = new_sink();
	static const uint64_t a[] = { 0, 1, 3 }, b[] = { 2 }, c[] = { 4, 9 }, d[] = { 6, 5 };

	if (s == NULL)
		return;
	feed(s, 2, a, 3, 1000);
	EP_CHECK_EQ(s->c.lost_pkts, 1);
	feed(s, 2, b, 1, 1000);
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->c.reordered_pkts, 1);
	feed(s, 2, c, 2, 1000);
	EP_CHECK_EQ(s->c.lost_pkts, 4);    /* 5..8 */
	feed(s, 2, d, 2, 1000);
	EP_CHECK_EQ(s->c.lost_pkts, 2);    /* 7, 8 */
	EP_CHECK_EQ(s->c.reordered_pkts, 3);
	EP_CHECK_EQ(s->c.duplicate_pkts, 0);
	ep_sink_free(s);
}

EP_TEST(sink_duplicate_detected_not_counted_as_late)
{
	struct ep_sink *s = new_sink();
	static const uint64_t seqs[] = { 0, 1, 1, 3, 2, 2, 3, 0 };

	if (s == NULL)
		return;
	feed(s, 3, seqs, 8, 1000);
	EP_CHECK_EQ(s->c.rx_pkts, 8);
	EP_CHECK_EQ(s->c.duplicate_pkts, 4);   /* 1, 2, 3, 0 again */
	EP_CHECK_EQ(s->c.reordered_pkts, 1);   /* 2 after 3 */
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	ep_sink_free(s);
}

EP_TEST(sink_duplicate_beyond_window_counts_as_late)
{
	struct ep_sink *s = new_sink();
	uint64_t seqs[101];

	if (s == NULL)
		return;
	for (int i = 0; i < 100; i++)
		seqs[i] = (uint64_t)i;
	seqs[100] = 5;   /* 94 packets back: outside the 64-packet window */
	feed(s, 4, seqs, 101, 1000);
	EP_CHECK_EQ(s->c.duplicate_pkts, 0);
	EP_CHECK_EQ(s->c.reordered_pkts, 1);
	EP_CHECK_EQ(s->c.lost_pkts, -1);
	ep_sink_free(s);
}

EP_TEST(sink_flows_are_independent)
{
	struct ep_sink *s = new_sink();
	static const uint64_t seqs[] = { 0, 1, 2 };

	if (s == NULL)
		return;
	feed(s, 0, seqs, 3, 1000);
	feed(s, 65535, seqs, 3, 1000);
	feed(s, 0, seqs + 2, 1, 1000);    /* flow 0 seq 2 again: duplicate */
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->c.duplicate_pkts, 1);
	EP_CHECK_EQ(s->flow[65535].expected, 3);
	ep_sink_free(s);
}

EP_TEST(sink_foreign_packets_dropped_and_counted)
{
	struct ep_sink *s = new_sink();
	struct rte_mbuf *pkts[5];
	uint16_t next[5] = { 0 };
	unsigned int avail;

	if (s == NULL)
		return;
	pkts[0] = gen_frame(0, 0, 1000);
	/* Same frame, wrong magic. */
	pkts[1] = gen_frame(0, 1, 1000);
	rte_pktmbuf_mtod(pkts[1], uint8_t *)[42] ^= 0xff;
	/* Payload cut short: the IPv4 total length leaves 10 bytes after UDP. */
	pkts[2] = gen_frame(0, 1, 1000);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(pkts[2], struct rte_ipv4_hdr *, 14);

		ip->total_length = rte_cpu_to_be_16(20 + 8 + 10);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	/* An ARP request. */
	{
		uint8_t arp[42] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06,
				    0, 1, 0x08, 0, 6, 4, 0, 1 };

		pkts[3] = ep_test_mbuf(arp, sizeof(arp));
	}
	/* A runt. */
	pkts[4] = ep_test_mbuf("\x02\x00", 2);
	avail = rte_mempool_avail_count(ep_test_pool());
	EP_CHECK_EQ(ep_sink_process(s, pkts, next, 5, 1000), 5);
	EP_CHECK_EQ(next[0], EP_NEXT_CONSUMED);
	for (int i = 1; i < 5; i++)
		EP_CHECK_EQ(next[i], EP_NEXT_DROP(EP_DROP_SINK_FOREIGN));
	EP_CHECK_EQ(s->c.foreign_pkts, 4);
	EP_CHECK_EQ(s->c.rx_pkts, 1);
	/* The consumed packet went back to its pool; drops are the engine's. */
	EP_CHECK_EQ(rte_mempool_avail_count(ep_test_pool()), avail + 1);
	rte_pktmbuf_free_bulk(pkts + 1, 4);
	ep_sink_free(s);
}

EP_TEST(sink_reads_generated_ipv6_vlan_frames)
{
	struct ep_gen_params p;
	struct ep_err err = { "" };
	struct ep_sink *s = new_sink();
	struct rte_mbuf *pkts[32];
	uint16_t next[32] = { 0 };
	struct ep_gen *g;

	ep_gen_params_init(&p);
	EP_CHECK_EQ(ep_gen_param_set(&p, "src", "2001:db8::1", &err), 0);
	EP_CHECK_EQ(ep_gen_param_set(&p, "dst", "2001:db8:1::1", &err), 0);
	EP_CHECK_EQ(ep_gen_param_set(&p, "dst_mac", "02:00:00:00:00:02", &err), 0);
	EP_CHECK_EQ(ep_gen_param_set(&p, "vlan", "100", &err), 0);
	EP_CHECK_EQ(ep_gen_param_set(&p, "size", "88:3,256:2,1280:15", &err), 0);
	EP_CHECK_EQ(ep_gen_param_set(&p, "flows", "5", &err), 0);
	g = ep_gen_create(&p, ep_test_pool(), 32, 200, SOCKET_ID_ANY, &err);
	if (g == NULL || s == NULL) {
		printf("    %s\n", err.msg);
		ep_test_failed = 1;
		return;
	}
	ep_gen_start(g, 0);
	for (int r = 0; r < 4; r++) {
		uint16_t n = ep_gen_produce(g, pkts, 32, 5000);

		EP_CHECK_EQ(ep_sink_process(s, pkts, next, n, 5000 + 777), n);
	}
	EP_CHECK_EQ(s->c.rx_pkts, 128);
	EP_CHECK_EQ(s->c.rx_bytes, g->c.sent_bytes);
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->c.foreign_pkts, 0);
	EP_CHECK_EQ(s->lat.min, 777);
	EP_CHECK_EQ(s->lat.max, 777);
	ep_gen_free(g);
	ep_sink_free(s);
}

EP_TEST(sink_latency_is_rx_minus_tx_tsc_modulo_2_48)
{
	struct ep_sink *s = new_sink();
	struct ep_gen_hdr h;

	if (s == NULL)
		return;
	ep_gen_hdr_make(&h, 0, 0, 1000);
	ep_sink_account(s, &h, 64, 6000);
	/* Sent just before the 48-bit wrap, received just after. */
	ep_gen_hdr_make(&h, 0, 1, EP_GEN_MASK48 - 99);
	ep_sink_account(s, &h, 64, (1ull << 48) + 200);
	/* A transmit time in the future: not a latency. */
	ep_gen_hdr_make(&h, 0, 2, 9000);
	ep_sink_account(s, &h, 64, 8000);
	EP_CHECK_EQ(s->lat.count, 2);
	EP_CHECK_EQ(s->lat.min, 300);
	EP_CHECK_EQ(s->lat.max, 5000);
	EP_CHECK_EQ(s->c.latency_invalid_pkts, 1);
	EP_CHECK_EQ(s->c.first_rx_tsc, 6000);
	EP_CHECK_EQ(s->c.last_rx_tsc, 8000);
	ep_sink_free(s);
}

EP_TEST(sink_reset_forgets_everything)
{
	struct ep_sink *s = new_sink();
	static const uint64_t seqs[] = { 0, 5 }, again[] = { 0 };

	if (s == NULL)
		return;
	feed(s, 9, seqs, 2, 1000);
	ep_sink_reset(s);
	EP_CHECK_EQ(s->c.rx_pkts, 0);
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->lat.count, 0);
	feed(s, 9, again, 1, 1000);       /* a new run starts at 0 again */
	EP_CHECK_EQ(s->c.lost_pkts, 0);
	EP_CHECK_EQ(s->c.duplicate_pkts, 0);
	ep_sink_free(s);
}

/* ---- histogram ---- */

EP_TEST(hist_buckets_exact_below_256_and_within_1_percent_above)
{
	for (uint64_t v = 0; v < 256; v++) {
		uint64_t w;

		EP_CHECK_EQ(ep_hist_lower(ep_hist_index(v), &w), v);
		EP_CHECK_EQ(w, 1);
	}
	/* Every bucket boundary region up to 2^47, and random values. */
	for (uint64_t v = 256, x = 1; v < (1ull << EP_HIST_MAX_BITS); v += v / 97 + (x % 13)) {
		uint64_t w, lo = ep_hist_lower(ep_hist_index(v), &w);

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (!(lo <= v && v < lo + w && w * 128 <= lo)) {
			printf("    v=%llu lo=%llu w=%llu\n", (unsigned long long)v,
			       (unsigned long long)lo, (unsigned long long)w);
			ep_test_failed = 1;
			break;
		}
	}
	EP_CHECK(ep_hist_index((1ull << EP_HIST_MAX_BITS) - 1) < EP_HIST_BUCKETS);
	EP_CHECK_EQ(ep_hist_index(UINT64_MAX), ep_hist_index((1ull << EP_HIST_MAX_BITS) - 1));
}

static int
within(uint64_t got, double want, double rel)
{
	double d = (double)got - want;

	if (d < 0)
		d = -d;
	if (d <= want * rel)
		return 1;
	printf("    got %llu, want %.1f +- %.2f%%\n", (unsigned long long)got, want, rel * 100);
	return 0;
}

EP_TEST(hist_percentiles_of_uniform_distribution)
{
	struct ep_hist *h = rte_zmalloc("h", sizeof(*h), 0);

	if (h == NULL)
		return;
	ep_hist_reset(h);
	/* 100,000 values 1,000 .. 100,999 (e.g. 0.33 .. 33 us at 3 GHz). */
	for (uint64_t v = 1000; v < 101000; v++)
		ep_hist_add(h, v);
	EP_CHECK(within(ep_hist_percentile(h, 500), 50999, 0.004));
	EP_CHECK(within(ep_hist_percentile(h, 990), 99999, 0.004));
	EP_CHECK(within(ep_hist_percentile(h, 999), 100899, 0.004));
	EP_CHECK_EQ(h->min, 1000);
	EP_CHECK_EQ(h->max, 100999);
	EP_CHECK_EQ(h->sum / h->count, 50999);
	rte_free(h);
}

EP_TEST(hist_percentiles_of_bimodal_distribution_with_tail)
{
	struct ep_hist *h = rte_zmalloc("h", sizeof(*h), 0);
	struct ep_hist *h2 = rte_zmalloc("h2", sizeof(*h2), 0);

	if (h == NULL || h2 == NULL)
		return;
	ep_hist_reset(h);
	ep_hist_reset(h2);
	/* 989 fast (3,000 cycles = 1 us), 10 slow (30 ms), 1 very slow (10 s). */
	for (int i = 0; i < 989; i++)
		ep_hist_add(h, 3000);
	for (int i = 0; i < 10; i++)
		ep_hist_add(h2, 90000000);
	ep_hist_add(h2, 30000000000ull);
	ep_hist_merge(h, h2);
	EP_CHECK_EQ(h->count, 1000);
	EP_CHECK(within(ep_hist_percentile(h, 500), 3000, 0.004));
	EP_CHECK(within(ep_hist_percentile(h, 990), 90000000, 0.004));
	EP_CHECK(within(ep_hist_percentile(h, 999), 90000000, 0.004));
	EP_CHECK(within(ep_hist_percentile(h, 1000), 30000000000.0, 0.004));
	EP_CHECK_EQ(h->max, 30000000000ull);
	EP_CHECK_EQ(h->min, 3000);
	ep_hist_reset(h);
	EP_CHECK_EQ(ep_hist_percentile(h, 500), 0);
	rte_free(h);
	rte_free(h2);
}
