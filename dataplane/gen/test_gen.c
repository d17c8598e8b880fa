/* SPDX-License-Identifier: BSD-3-Clause */
/* Generator: templates, sizes, iMix schedule, pacing, sequence numbers. */
#define ALLOW_EXPERIMENTAL_API 1   /* rte_ipv6_udptcp_cksum_verify */

#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "ep_engine.h"
#include "ep_test.h"
#include "gen.h"

#define TEST_TSC 0x123456789abcull

/* Expected frames computed independently with scapy:
 *   Ether(dst='02:00:00:00:00:02', src='02:00:00:00:00:01')/
 *   IP(src='198.18.0.1', dst='198.18.1.1', ttl=64, flags='DF')/
 *   UDP(sport=1024, dport=1025, chksum=0)/payload header(flow 0, seq 0, TEST_TSC) */
static const uint8_t want_v4_64[60] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0x98, 0xc6, 0x12,
	0x00, 0x01, 0xc6, 0x12, 0x01, 0x01,
	0x04, 0x00, 0x04, 0x01, 0x00, 0x1a, 0x00, 0x00,
	0x45, 0x50, 0x47, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12,
};

/* ... IPv6(src='2001:db8::1', dst='2001:db8:1::1', hlim=64)/UDP(1024, 1025)
 * with scapy's UDP checksum, size 84 (80 bytes). */
static const uint8_t want_v6_84[80] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
	0x60, 0x00, 0x00, 0x00, 0x00, 0x1a, 0x11, 0x40,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01,
	0x04, 0x00, 0x04, 0x01, 0x00, 0x1a, 0xa6, 0xbf,
	0x45, 0x50, 0x47, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12,
};

/* Parameters for a test generator: defaults, then "key", "value" pairs. */
static int
test_params(struct ep_gen_params *p, const char *const *kv, struct ep_err *err)
{
	static const char *const defaults[] = {
		"src", "198.18.0.1", "dst", "198.18.1.1", "dst_mac", "02:00:00:00:00:02",
		"sport", "1024", "dport", "1025", NULL,
	};

	ep_gen_params_init(p);
	p->tx_port = 1;
	ep_parse_mac("02:00:00:00:00:01", &p->src_mac);
	for (int i = 0; defaults[i] != NULL; i += 2)
		if (ep_gen_param_set(p, defaults[i], defaults[i + 1], err) < 0)
			return -1;
	for (int i = 0; kv != NULL && kv[i] != NULL; i += 2)
		if (ep_gen_param_set(p, kv[i], kv[i + 1], err) < 0)
			return -1;
	return 0;
}

static struct ep_gen *
test_gen(const char *const *kv)
{
	struct ep_gen_params p;
	struct ep_err err = { "" };
	struct ep_gen *g = NULL;

	if (test_params(&p, kv, &err) == 0)
		g = ep_gen_create(&p, ep_test_pool(), 32, 200, SOCKET_ID_ANY, &err);
	if (g == NULL) {
		printf("    ep_gen_create: %s\n", err.msg);
		ep_test_failed = 1;
		return NULL;
	}
	ep_gen_start(g, 0);
	return g;
}

static void
free_pkts(struct rte_mbuf **pkts, uint16_t n)
{
	rte_pktmbuf_free_bulk(pkts, n);
}

static struct ep_gen_hdr
payload_hdr(struct rte_mbuf *m, uint32_t off)
{
	struct ep_gen_hdr h;

	memcpy(&h, rte_pktmbuf_mtod_offset(m, void *, off), sizeof(h));
	return h;
}

EP_TEST(template_ipv4_64_bytes_exact)
{
	struct ep_gen *g = test_gen(NULL);
	struct rte_mbuf *pkts[4];
	uint16_t n;

	if (g == NULL)
		return;
	n = ep_gen_produce(g, pkts, 1, TEST_TSC);
	EP_CHECK_EQ(n, 1);
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(pkts[0]), 60);
	EP_CHECK_EQ(rte_pktmbuf_data_len(pkts[0]), 60);
	EP_CHECK_MEM(rte_pktmbuf_mtod(pkts[0], uint8_t *), want_v4_64, sizeof(want_v4_64));
	/* A header with a correct checksum sums to 0xffff: rte_ipv4_cksum gives 0. */
	EP_CHECK_EQ(rte_ipv4_cksum(rte_pktmbuf_mtod_offset(pkts[0], struct rte_ipv4_hdr *, 14)), 0);
	EP_CHECK_EQ(ep_meta(pkts[0])->in_port, 1);
	free_pkts(pkts, n);
	ep_gen_free(g);
}

EP_TEST(template_ipv6_84_bytes_exact)
{
	static const char *const kv[] = { "src", "2001:db8::1", "dst", "2001:db8:1::1",
					  "size", "84", NULL };
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[1];
	struct rte_ipv6_hdr *ip;

	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 1, TEST_TSC), 1);
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(pkts[0]), 80);
	EP_CHECK_MEM(rte_pktmbuf_mtod(pkts[0], uint8_t *), want_v6_84, sizeof(want_v6_84));
	ip = rte_pktmbuf_mtod_offset(pkts[0], struct rte_ipv6_hdr *, 14);
	EP_CHECK_EQ(rte_ipv6_udptcp_cksum_verify(ip, ip + 1), 0);
	free_pkts(pkts, 1);
	ep_gen_free(g);
}

/* Every size class, flow and sequence: lengths consistent, checksums verify. */
static void
check_checksums(const char *const *kv, bool v6, uint32_t l2)
{
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[32];

	if (g == NULL)
		return;
	for (int round = 0; round < 8; round++) {
		uint16_t n = ep_gen_produce(g, pkts, 32, TEST_TSC + (uint64_t)round * 977);

		EP_CHECK_EQ(n, 32);
		for (uint16_t i = 0; i < n; i++) {
			uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
			uint8_t *l3 = rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, l2);

			if (v6) {
				struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)l3;
				struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + 1);

				EP_CHECK_EQ(rte_be_to_cpu_16(ip->payload_len), len - l2 - 40);
				EP_CHECK_EQ(rte_be_to_cpu_16(u->dgram_len), len - l2 - 40);
				EP_CHECK(u->dgram_cksum != 0);
				EP_CHECK_EQ(rte_ipv6_udptcp_cksum_verify(ip, u), 0);
			} else {
				struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
				struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + 1);

				EP_CHECK_EQ(rte_be_to_cpu_16(ip->total_length), len - l2);
				EP_CHECK_EQ(rte_be_to_cpu_16(u->dgram_len), len - l2 - 20);
				EP_CHECK_EQ(rte_ipv4_cksum(ip), 0);
				EP_CHECK_EQ(u->dgram_cksum, 0);
			}
		}
		free_pkts(pkts, n);
	}
	ep_gen_free(g);
}

EP_TEST(checksums_verify_ipv4_imix_many_flows)
{
	static const char *const kv[] = { "size", "imix-down", "flows", "13", NULL };

	check_checksums(kv, false, 14);
}

EP_TEST(checksums_verify_ipv6_imix_vlan_many_flows)
{
	static const char *const kv[] = { "src", "2001:db8::1", "dst", "2001:db8:1::ffff",
					  "size", "88,256:3,1522:2", "flows", "1000",
					  "vlan", "4095", "vary", "both", NULL };

	check_checksums(kv, true, 18);
}

EP_TEST(template_vlan_tag_and_size_includes_tag)
{
	static const char *const kv[] = { "vlan", "0x2064", "size", "68", NULL };
	struct ep_err err = { "" };
	struct ep_gen_params p;
	struct ep_gen *g;
	struct rte_mbuf *m;
	const uint8_t *d;

	/* Hex is not accepted: TCIs are decimal like every other number. */
	EP_CHECK(test_params(&p, kv, &err) < 0);
	{
		static const char *const kv2[] = { "vlan", "8292", "size", "68", NULL };

		g = test_gen(kv2);
	}
	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, &m, 1, TEST_TSC), 1);
	d = rte_pktmbuf_mtod(m, const uint8_t *);
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(m), 64);
	EP_CHECK_EQ(d[12] << 8 | d[13], RTE_ETHER_TYPE_VLAN);
	EP_CHECK_EQ(d[14] << 8 | d[15], 8292);
	EP_CHECK_EQ(d[16] << 8 | d[17], RTE_ETHER_TYPE_IPV4);
	EP_CHECK_EQ(payload_hdr(m, 18 + 20 + 8).magic, rte_cpu_to_le_32(EP_GEN_MAGIC));
	rte_pktmbuf_free(m);
	ep_gen_free(g);
}

EP_TEST(flows_vary_dst_or_sport)
{
	static const char *const kd[] = { "flows", "3", NULL };
	static const char *const ks[] = { "flows", "3", "vary", "sport", NULL };
	struct rte_mbuf *pkts[4];
	struct ep_gen *g = test_gen(kd);

	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 4, TEST_TSC), 4);
	for (int i = 0; i < 4; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

		EP_CHECK_EQ(d[33], 1 + i % 3);            /* dst 198.18.1.(1+flow) */
		EP_CHECK_EQ(d[34] << 8 | d[35], 1024);    /* sport fixed */
	}
	free_pkts(pkts, 4);
	ep_gen_free(g);
	g = test_gen(ks);
	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 4, TEST_TSC), 4);
	for (int i = 0; i < 4; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

		EP_CHECK_EQ(d[33], 1);
		EP_CHECK_EQ(d[34] << 8 | d[35], 1024 + i % 3);
	}
	free_pkts(pkts, 4);
	ep_gen_free(g);
}

EP_TEST(sequence_numbers_per_flow_round_robin)
{
	static const char *const kv[] = { "flows", "3", NULL };
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[7];

	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 7, TEST_TSC), 7);
	for (int i = 0; i < 7; i++) {
		struct ep_gen_hdr h = payload_hdr(pkts[i], 42);

		EP_CHECK_EQ(rte_le_to_cpu_16(h.flow), i % 3);
		EP_CHECK_EQ(ep_gen_u48(h.seq), i / 3);
		EP_CHECK_EQ(ep_gen_u48(h.tsc), TEST_TSC);
	}
	free_pkts(pkts, 7);
	/* A new run starts every flow at 0 again. */
	ep_gen_start(g, 0);
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 1, TEST_TSC), 1);
	EP_CHECK_EQ(ep_gen_u48(payload_hdr(pkts[0], 42).seq), 0);
	EP_CHECK_EQ(g->c.sent_pkts, 1);
	EP_CHECK_EQ(g->c.sent_bytes, 64);
	free_pkts(pkts, 1);
	ep_gen_free(g);
}

EP_TEST(count_ends_the_run)
{
	static const char *const kv[] = { "count", "10", NULL };
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[32];

	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 32, TEST_TSC), 10);
	free_pkts(pkts, 10);
	EP_CHECK(!g->running);
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 32, TEST_TSC), 0);
	EP_CHECK_EQ(g->c.sent_pkts, 10);
	ep_gen_free(g);
}

EP_TEST(alloc_failure_counted_without_using_sequences)
{
	struct rte_mempool *tiny = rte_pktmbuf_pool_create("gen_tiny", 16, 0, EP_META_SIZE,
							   RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	struct ep_gen_params p;
	struct ep_err err = { "" };
	struct rte_mbuf *pkts[32];
	struct ep_gen *g;

	EP_CHECK(tiny != NULL);
	EP_CHECK_EQ(test_params(&p, NULL, &err), 0);
	g = ep_gen_create(&p, tiny, 32, 200, SOCKET_ID_ANY, &err);
	if (tiny == NULL || g == NULL)
		return;
	ep_gen_start(g, 0);
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 32, TEST_TSC), 0);
	EP_CHECK_EQ(g->c.alloc_failed_pkts, 32);
	EP_CHECK_EQ(g->alloc_drops_local, 32);
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 8, TEST_TSC), 8);
	EP_CHECK_EQ(ep_gen_u48(payload_hdr(pkts[0], 42).seq), 0);
	free_pkts(pkts, 8);
	ep_gen_free(g);
	rte_mempool_free(tiny);
}

EP_TEST(gen_tx_stage_sends_everything_to_the_tx_port)
{
	struct ep_gen *g = test_gen(NULL);
	struct rte_mbuf *pkts[5];
	uint16_t next[5] = { 0 };

	if (g == NULL)
		return;
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 5, TEST_TSC), 5);
	EP_CHECK_EQ(ep_gen_tx_stage(g, pkts, next, 5), 5);
	for (int i = 0; i < 5; i++)
		EP_CHECK_EQ(next[i], EP_NEXT_TX(1));
	free_pkts(pkts, 5);
	ep_gen_free(g);
}

/* ---- sizes and the iMix schedule ---- */

static void
check_schedule(const char *spec, int period, const uint32_t *want_counts, int n_classes)
{
	struct ep_gen_sizes sz;
	struct ep_err err = { "" };
	static uint8_t sched[EP_GEN_MAX_SCHED];
	uint32_t counts[EP_GEN_MAX_CLASSES] = { 0 };
	int got;

	EP_CHECK_EQ(ep_gen_sizes_parse(spec, &sz, &err), 0);
	EP_CHECK_EQ(sz.n, n_classes);
	got = ep_gen_schedule_build(&sz, sched, &err);
	EP_CHECK_EQ(got, period);
	for (int i = 0; i < got; i++)
		counts[sched[i]]++;
	for (int c = 0; c < n_classes; c++)
		EP_CHECK_EQ(counts[c], want_counts[c]);
}

EP_TEST(imix_up_schedule_is_65_18_17_over_100)
{
	static const uint32_t want[] = { 65, 18, 17 };
	struct ep_gen_sizes sz;
	struct ep_err err = { "" };

	check_schedule("imix-up", 100, want, 3);
	ep_gen_sizes_parse("imix-up", &sz, &err);
	EP_CHECK_EQ(sz.size[0], 84);
	EP_CHECK_EQ(sz.size[1], 256);
	EP_CHECK_EQ(sz.size[2], 1280);
}

EP_TEST(imix_down_schedule_is_15_10_75_percent_over_20)
{
	static const uint32_t want[] = { 3, 2, 15 };

	check_schedule("imix-down", 20, want, 3);
}

EP_TEST(custom_sizes_default_weight_one)
{
	static const uint32_t want[] = { 1, 2, 1 };

	check_schedule("64, 512:2,1518", 4, want, 3);
}

EP_TEST(schedule_is_shuffled_and_deterministic)
{
	struct ep_gen_sizes sz;
	struct ep_err err = { "" };
	static uint8_t a[EP_GEN_MAX_SCHED], b[EP_GEN_MAX_SCHED];
	int run = 0, longest = 0;

	ep_gen_sizes_parse("imix-up", &sz, &err);
	EP_CHECK_EQ(ep_gen_schedule_build(&sz, a, &err), 100);
	EP_CHECK_EQ(ep_gen_schedule_build(&sz, b, &err), 100);
	EP_CHECK_MEM(a, b, 100);
	/* Unshuffled, the 65 small frames would come in one run. */
	for (int i = 0; i < 100; i++) {
		run = (i > 0 && a[i] == a[i - 1]) ? run + 1 : 1;
		longest = run > longest ? run : longest;
	}
	EP_CHECK(longest < 20);
}

EP_TEST(imix_frames_on_the_wire_match_percentages)
{
	static const char *const kv[] = { "size", "imix-up", "flows", "7", NULL };
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[25];
	uint32_t n80 = 0, n252 = 0, n1276 = 0;

	if (g == NULL)
		return;
	for (int r = 0; r < 4; r++) {
		EP_CHECK_EQ(ep_gen_produce(g, pkts, 25, TEST_TSC), 25);
		for (int i = 0; i < 25; i++) {
			uint32_t l = rte_pktmbuf_pkt_len(pkts[i]);

			n80 += l == 80;
			n252 += l == 252;
			n1276 += l == 1276;
		}
		free_pkts(pkts, 25);
	}
	EP_CHECK_EQ(n80, 65);
	EP_CHECK_EQ(n252, 18);
	EP_CHECK_EQ(n1276, 17);
	EP_CHECK_EQ(g->c.sent_bytes, 65 * 84 + 18 * 256 + 17 * 1280);
	ep_gen_free(g);
}

EP_TEST(sizes_rejected_with_reasons)
{
	static const char *const bad[] = {
		"", "0x40", "64:0", "64,64", "abc", "1523", "64:-1", "64,", NULL,
	};
	struct ep_gen_sizes sz;
	struct ep_err err = { "" };

	for (int i = 0; bad[i] != NULL; i++) {
		int rc = ep_gen_sizes_parse(bad[i], &sz, &err);

		/* "64," parses as one size: trailing separators are harmless. */
		if (strcmp(bad[i], "64,") == 0) {
			EP_CHECK_EQ(rc, 0);
		} else if (rc == 0) {
			printf("    accepted '%s'\n", bad[i]);
			ep_test_failed = 1;
		}
	}
	EP_CHECK_EQ(ep_gen_sizes_parse("64:70000,128:70001", &sz, &err), 0);
	{
		static uint8_t sched[EP_GEN_MAX_SCHED];

		EP_CHECK(ep_gen_schedule_build(&sz, sched, &err) < 0);
		EP_CHECK(strstr(err.msg, "period") != NULL);
	}
}

static int
build_fails(const char *const *kv, const char *needle)
{
	struct ep_gen_params p;
	struct ep_err err = { "" };
	struct ep_gen_profile *pr;

	if (test_params(&p, kv, &err) < 0)
		return strstr(err.msg, needle) != NULL;
	pr = ep_gen_profile_build(&p, SOCKET_ID_ANY, &err);
	if (pr != NULL) {
		ep_gen_profile_free(pr);
		return 0;
	}
	if (strstr(err.msg, needle) == NULL)
		printf("    error '%s' lacks '%s'\n", err.msg, needle);
	return strstr(err.msg, needle) != NULL;
}

EP_TEST(minimum_sizes_per_family_and_vlan)
{
	static const char *const v4_63[] = { "size", "63", NULL };
	static const char *const v4_64[] = { "size", "64", NULL };
	static const char *const v4v_64[] = { "size", "64", "vlan", "1", NULL };
	static const char *const v4v_68[] = { "size", "68", "vlan", "1", NULL };
	static const char *const v6_83[] = { "src", "2001:db8::1", "dst", "2001:db8::2",
					     "size", "83", NULL };
	static const char *const v6_84[] = { "src", "2001:db8::1", "dst", "2001:db8::2",
					     "size", "84", NULL };

	EP_CHECK(build_fails(v4_63, "below 64"));
	EP_CHECK(!build_fails(v4_64, "below"));
	EP_CHECK(build_fails(v4v_64, "below 68"));
	EP_CHECK(!build_fails(v4v_68, "below"));
	EP_CHECK(build_fails(v6_83, "below 84"));
	EP_CHECK(!build_fails(v6_84, "below"));
}

EP_TEST(bad_parameters_rejected_with_reasons)
{
	static const char *const mixed[] = { "dst", "2001:db8::1", NULL };
	static const char *const sport[] = { "sport", "65535", "flows", "2", "vary", "sport", NULL };
	static const char *const wrap[] = { "dst", "255.255.255.255", "flows", "2", NULL };
	static const char *const flows0[] = { "flows", "0", NULL };
	static const char *const flows_big[] = { "flows", "65537", NULL };
	static const char *const unknown[] = { "colour", "blue", NULL };
	static const char *const rate[] = { "rate_pps", "-1", NULL };
	static const char *const mac[] = { "dst_mac", "02:00:00:00:00", NULL };
	struct ep_gen_params p;
	struct ep_err err = { "" };

	EP_CHECK(build_fails(mixed, "same address family"));
	EP_CHECK(build_fails(sport, "beyond port 65535"));
	EP_CHECK(build_fails(wrap, "wrap"));
	EP_CHECK(build_fails(flows0, "flows"));
	EP_CHECK(build_fails(flows_big, "flows"));
	EP_CHECK(build_fails(unknown, "unknown generator parameter"));
	EP_CHECK(build_fails(rate, "rate_pps"));
	EP_CHECK(build_fails(mac, "dst_mac"));
	/* No dst_mac at all: required, a broadcast default would be wrong. */
	ep_gen_params_init(&p);
	ep_gen_param_set(&p, "src", "198.18.0.1", &err);
	ep_gen_param_set(&p, "dst", "198.18.1.1", &err);
	EP_CHECK(ep_gen_profile_build(&p, SOCKET_ID_ANY, &err) == NULL);
	EP_CHECK(strstr(err.msg, "dst_mac: required") != NULL);
}

/* ---- pacing, with an injected clock ---- */

EP_TEST(pace_releases_batches_on_schedule)
{
	struct ep_gen_pace p;
	const uint64_t hz = 1000000000;   /* 1 cycle = 1 ns */

	/* 1 Mpps: one packet per 1000 cycles; batch 20 (20 us), depth 200. */
	ep_gen_pace_init(&p, hz, 1000000, 32, 200, 0);
	EP_CHECK_EQ(p.min_batch, 20);
	EP_CHECK_EQ(p.depth, 200);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 0, 32), 0);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 10000, 32), 0);   /* 10 due: below a batch */
	EP_CHECK_EQ(ep_gen_pace_take(&p, 20999, 32), 20);  /* 20.999 due */
	EP_CHECK_EQ(ep_gen_pace_take(&p, 21000, 32), 0);   /* 1 due */
	EP_CHECK_EQ(ep_gen_pace_take(&p, 41000, 32), 21);  /* the fraction was kept */
}

EP_TEST(pace_long_run_has_no_drift)
{
	struct ep_gen_pace p;
	const uint64_t hz = 2995000000ull;
	uint64_t sent = 0, now = 5;

	/* 333,333 pps for exactly one second of TSC, polled at odd intervals. */
	ep_gen_pace_init(&p, hz, 333333, 32, 200, now);
	while (now < 5 + hz) {
		now += 7919;
		if (now > 5 + hz)
			now = 5 + hz;
		sent += ep_gen_pace_take(&p, now, 32);
	}
	/* Sent plus the credit still in the bucket is exactly rate x time. */
	EP_CHECK_EQ(sent * hz + p.credit, 333333ull * hz);
}

EP_TEST(pace_bucket_bounds_the_catch_up)
{
	struct ep_gen_pace p;
	const uint64_t hz = 1000000000;
	uint64_t total = 0;
	uint16_t n;

	ep_gen_pace_init(&p, hz, 1000000, 32, 200, 0);
	/* Paused for 5 s: at most depth (200 us of traffic) leaves at once. */
	while ((n = ep_gen_pace_take(&p, 5 * hz, 32)) != 0) {
		EP_CHECK(n <= 32);
		total += n;
	}
	/* 192 in six full bursts; the last 8 wait for a batch's worth. */
	EP_CHECK_EQ(total, 192);
	EP_CHECK_EQ(total + p.credit / hz, 200);
}

EP_TEST(pace_low_rate_and_unlimited)
{
	struct ep_gen_pace p;
	const uint64_t hz = 1000000000;

	ep_gen_pace_init(&p, hz, 1000, 32, 200, 0);   /* 1 kpps: 1 ms apart */
	EP_CHECK_EQ(p.min_batch, 1);
	EP_CHECK_EQ(p.depth, 32);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 999999, 32), 0);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 1000000, 32), 1);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 1500000, 32), 0);
	ep_gen_pace_init(&p, hz, 0, 32, 200, 0);
	EP_CHECK_EQ(ep_gen_pace_take(&p, 0, 17), 17);
}

EP_TEST(pace_due_us_says_when_the_next_batch_leaves)
{
	struct ep_gen_pace p;
	const uint64_t hz = 1000000000;   /* 1 cycle = 1 ns */

	/* 1 Mpps, batch 20: due 20 us after the start, then 20 us apart. */
	ep_gen_pace_init(&p, hz, 1000000, 32, 200, 0);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 0), 21);         /* 20 us, rounded up */
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 10000), 11);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 20000), 0);      /* due now */
	EP_CHECK_EQ(ep_gen_pace_take(&p, 20000, 32), 20);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 20000), 21);
	/* A second or more since the last take: due, without overflow. */
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 20000 + 5 * hz), 0);
	/* Unlimited: always due. */
	ep_gen_pace_init(&p, hz, 0, 32, 200, 0);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 0), 0);
	/* 1 kpps: one packet, 1 ms. */
	ep_gen_pace_init(&p, hz, 1000, 32, 200, 0);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 0), 1001);
	EP_CHECK_EQ(ep_gen_pace_due_us(&p, 999500), 1);
}

EP_TEST(produce_follows_the_pace)
{
	static const char *const kv[] = { "rate_pps", "100000", NULL };
	struct ep_gen *g = test_gen(kv);
	struct rte_mbuf *pkts[32];
	uint64_t hz = rte_get_tsc_hz();
	uint16_t n;

	if (g == NULL)
		return;
	ep_gen_start(g, 1000);
	/* 100 kpps: a batch of 2 (20 us) is due 20 us after the start. */
	EP_CHECK_EQ(ep_gen_produce(g, pkts, 32, 1000 + hz / 100000), 0);
	n = ep_gen_produce(g, pkts, 32, 1000 + hz / 50000 + 1);
	EP_CHECK_EQ(n, 2);
	free_pkts(pkts, n);
	ep_gen_free(g);
}
