/* SPDX-License-Identifier: BSD-3-Clause */
/* bng-downlink: lookup, reverse path, access encapsulation bytes, HQoS path. */
#include "test_bng.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <pthread.h>

#include <rte_ip.h>
#include <rte_rcu_qsbr.h>

static const char down_conf[] =
	"hqos_port_rate = 10G\n"
	"subport = 0 rate=10G pipes=64\n"
	"subport = 1 rate=1G pipes=16\n"
	"pipe = gold rate=100M\n"
	"dscp_tc = af11:10 57:12.2\n"
	"subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 ipv6=2001:db8:100::/56 "
	"mac=02:00:00:00:10:01 pipe=gold\n"
	"subscriber = id=2 vlan=101 ipv4=198.18.100.3 ipv6=2001:db8:102::/56 "
	"mac=02:00:00:00:10:02 subport=1\n"
	"subscriber = id=3 pppoe=0x12 mac=02:00:00:00:10:01 qinq=100.201 ipv4=198.18.100.4 "
	"ipv6=2001:db8:101::/56 pipe=gold\n"
	"subscriber = id=4 vlan=102 ipv4=198.18.100.6\n";

struct path { uint32_t subport, pipe, tc, queue; };

/* Through the stages, then out of the scheduler: the frame on the access
 * wire and the HQoS path it took. */
static uint16_t
down_run(struct tb *t, const struct tb_pkt *p, uint8_t *out, uint16_t *olen, struct path *path)
{
	struct bng_down *d = t->down->pipeline_ctx;
	struct rte_mbuf *m[4];
	uint8_t f[2048];
	uint16_t len = tb_frame(f, p), v, k = 0;

	v = tb_run(t, t->down, f, len, NULL, NULL);
	if (v != EP_NEXT_CONSUMED)
		return v;
	for (int tries = 0; tries < 1000 && k == 0; tries++)
		k = (uint16_t)ep_sched_dequeue(d->hqos, m, 4, rte_rdtsc());
	EP_CHECK_EQ(k, 1);
	if (k != 1)
		return EP_NEXT_DROP(EP_DROP_NO_NEXT);
	*olen = (uint16_t)rte_pktmbuf_pkt_len(m[0]);
	memcpy(out, rte_pktmbuf_mtod(m[0], void *), *olen);
	ep_sched_pkt_read(d->hqos, m[0], &path->subport, &path->pipe, &path->tc, &path->queue);
	rte_pktmbuf_free(m[0]);
	return EP_NEXT_TX(TB_ACCESS);
}

static struct tb_pkt
core_pkt(int ip, const char *sip, const char *dip, uint8_t dscp, uint16_t payload)
{
	return (struct tb_pkt){ .dst = tb_core_mac, .src = tb_core_nh_mac, .ip = ip, .sip = sip,
				.dip = dip, .dscp = dscp, .sport = 80, .dport = 5555,
				.payload = payload };
}

static uint16_t
l2(uint8_t *w, const uint8_t *tags, uint16_t n)
{
	memcpy(w, tb_sub_mac, 6);
	memcpy(w + 6, tb_access_mac, 6);
	memcpy(w + 12, tags, n);
	return (uint16_t)(12 + n);
}

EP_TEST(downlink_qinq_ipv4_encap_bytes_exact)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.2", 0, 40);
	uint8_t out[2048], want[2048];
	uint16_t olen = 0, o;
	struct path path;

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	o = l2(want, (const uint8_t[]){ 0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0xc8,
					0x08, 0x00 }, 10);
	p.ttl = 63;
	o += tb_ip(want + o, &p);
	EP_CHECK_EQ(olen, o);
	EP_CHECK_MEM(out, want, o);
	tb_free(t);
}

EP_TEST(downlink_vlan_ipv6_encap_bytes_exact)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(6, "2001:db8:ffff::1", "2001:db8:102:7::1", 0, 20);
	uint8_t out[2048], want[2048];
	uint16_t olen = 0, o;
	struct path path;
	static const uint8_t mac2[6] = { 2, 0, 0, 0, 0x10, 0x02 };

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	o = l2(want, (const uint8_t[]){ 0x81, 0x00, 0x00, 0x65, 0x86, 0xdd }, 6);
	memcpy(want, mac2, 6);
	p.ttl = 63;
	o += tb_ip(want + o, &p);
	EP_CHECK_EQ(olen, o);
	EP_CHECK_MEM(out, want, o);
	EP_CHECK_EQ(path.subport, 1);
	tb_free(t);
}

EP_TEST(downlink_pppoe_ipv4_and_ipv6_length_and_protocol_exact)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p4 = core_pkt(4, "198.51.100.7", "198.18.100.4", 0, 100);
	struct tb_pkt p6 = core_pkt(6, "2001:db8:ffff::1", "2001:db8:101:1::5", 0, 100);
	uint8_t out[2048], want[2048];
	uint16_t olen = 0, o, ipl;
	struct path path;

	EP_CHECK_EQ(down_run(t, &p4, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	p4.ttl = 63;
	ipl = tb_ip(want + 30, &p4);
	o = l2(want, (const uint8_t[]){ 0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0xc9,
					0x88, 0x64, 0x11, 0x00, 0x00, 0x12,
					(uint8_t)((ipl + 2) >> 8), (uint8_t)(ipl + 2),
					0x00, 0x21 }, 18);
	EP_CHECK_EQ(o, 30);
	EP_CHECK_EQ(olen, o + ipl);
	EP_CHECK_MEM(out, want, olen);

	EP_CHECK_EQ(down_run(t, &p6, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	p6.ttl = 63;
	ipl = tb_ip(want + 30, &p6);
	l2(want, (const uint8_t[]){ 0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0xc9,
				    0x88, 0x64, 0x11, 0x00, 0x00, 0x12,
				    (uint8_t)((ipl + 2) >> 8), (uint8_t)(ipl + 2), 0x00, 0x57 }, 18);
	EP_CHECK_EQ(olen, 30 + ipl);
	EP_CHECK_MEM(out, want, olen);
	tb_free(t);
}

EP_TEST(downlink_mpls_labelled_frame_from_core_delivered)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.2", 0, 40);
	uint8_t f[512], g[512], out[2048];
	uint16_t len = tb_frame(f, &p), olen = 0;
	struct bng_down *d = t->down->pipeline_ctx;
	struct rte_mbuf *m[2];
	uint16_t k = 0;

	/* Insert two labels (16 and 1000, bottom of stack) before the IP header. */
	memcpy(g, f, 12);
	memcpy(g + 12, (const uint8_t[]){ 0x88, 0x47, 0x00, 0x01, 0x00, 0x40,
					  0x00, 0x3e, 0x81, 0x40 }, 10);
	memcpy(g + 22, f + 14, len - 14);
	EP_CHECK_EQ(tb_run(t, t->down, g, (uint16_t)(len + 8), NULL, NULL), EP_NEXT_CONSUMED);
	for (int tries = 0; tries < 1000 && k == 0; tries++)
		k = (uint16_t)ep_sched_dequeue(d->hqos, m, 2, rte_rdtsc());
	EP_CHECK_EQ(k, 1);
	if (k == 1) {
		olen = (uint16_t)rte_pktmbuf_pkt_len(m[0]);
		memcpy(out, rte_pktmbuf_mtod(m[0], void *), olen);
		EP_CHECK_EQ(olen, len + 8);                     /* QinQ replaces 14 + 8 */
		rte_pktmbuf_free(m[0]);
	}
	tb_free(t);
}

EP_TEST(downlink_no_subscriber_for_destination_dropped)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.99", 0, 40);
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path),
		    EP_NEXT_DROP(EP_DROP_BNG_NO_SUBSCRIBER));
	p = core_pkt(6, "2001:db8:ffff::1", "2001:db8:200::1", 0, 40);
	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path),
		    EP_NEXT_DROP(EP_DROP_BNG_NO_SUBSCRIBER));
	tb_free(t);
}

/* The lookup hashes its destination keys itself (bng_key_hash, from the
 * key's two words as the stage builds them: family | length << 8, then the
 * prefix) and hands the hashes to rte_hash: they must be the table's own
 * (rte_hash_hash) for both families, or every lookup would miss. */
EP_TEST(downlink_dst_key_hash_is_the_destination_tables_hash)
{
	struct tb *t = tb_new(down_conf);
	const struct { int family; const char *addr; uint8_t plen; } dst[] = {
		{ 4, "198.18.100.2", 32 }, { 4, "198.18.100.6", 32 },
		{ 6, "2001:db8:100::", 56 }, { 6, "2001:db8:101::", 56 },
	};

	for (size_t i = 0; i < RTE_DIM(dst); i++) {
		struct bng_dst_key k = { .family = (uint8_t)dst[i].family, .plen = dst[i].plen };
		uint8_t a[16] = {0};
		uint64_t w1 = 0;

		inet_pton(dst[i].family == 4 ? AF_INET : AF_INET6, dst[i].addr, a);
		memcpy(k.addr, a, dst[i].family == 4 ? 4 : 8);
		memcpy(&w1, k.addr, 8);
		EP_CHECK_EQ(bng_key_hash(k.family | (uint64_t)k.plen << 8, w1),
			    rte_hash_hash(t->b->dst, &k));
		/* And the key is a configured subscriber's. */
		EP_CHECK(bng_sub_find_dst(t->b, dst[i].family, a) >= 1);
	}
	tb_free(t);
}

EP_TEST(downlink_reverse_path_rule_drops_source_in_own_range)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.18.100.2", "198.18.100.2", 0, 40);
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_DROP(EP_DROP_BNG_RPF_FAIL));
	p = core_pkt(6, "2001:db8:100:9::9", "2001:db8:100::1", 0, 40);
	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_DROP(EP_DROP_BNG_RPF_FAIL));
	/* Another subscriber's source (hairpin through the core) passes. */
	p = core_pkt(4, "198.18.100.3", "198.18.100.2", 0, 40);
	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	tb_free(t);
}

/* The record's line 0 holds the first IPv4 range, which rpf reads for a
 * subscriber with one; with more it checks the whole set (line 1): a
 * source in any of them is dropped, whichever range the destination is
 * in, and one just outside them passes. */
EP_TEST(downlink_reverse_path_rule_checks_the_first_and_the_later_ipv4_ranges)
{
	struct tb *t = tb_new("subscriber = id=7 vlan=107 ipv4=198.18.107.1,198.18.108.0/29 "
			      "mac=02:00:00:00:10:07\n");
	static const char *const dropped[][2] = {
		{ "198.18.107.1", "198.18.108.3" },     /* first range, dst in the second */
		{ "198.18.108.7", "198.18.107.1" },     /* second range, dst in the first */
		{ "198.18.108.1", "198.18.108.2" },
	};
	static const char *const passed[][2] = {
		{ "198.18.108.8", "198.18.107.1" },     /* one past the /29 */
		{ "198.18.107.2", "198.18.108.3" },     /* beside the /32 */
	};
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	for (size_t i = 0; i < RTE_DIM(dropped); i++) {
		struct tb_pkt p = core_pkt(4, dropped[i][0], dropped[i][1], 0, 40);

		EP_CHECK_EQ(down_run(t, &p, out, &olen, &path),
			    EP_NEXT_DROP(EP_DROP_BNG_RPF_FAIL));
	}
	for (size_t i = 0; i < RTE_DIM(passed); i++) {
		struct tb_pkt p = core_pkt(4, passed[i][0], passed[i][1], 0, 40);

		EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	}
	tb_free(t);
}

/* Untagged IPoE: the client MAC (the key) is the frame's destination, no
 * tag. */
EP_TEST(downlink_untagged_ipoe_encap_bytes_exact)
{
	struct tb *t = tb_new("subscriber = id=5 mac=02:00:00:00:10:05 ipv4=198.18.100.9\n");
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.9", 0, 40);
	uint8_t out[2048], want[2048];
	uint16_t olen = 0, o;
	struct path path;
	static const uint8_t mac5[6] = { 2, 0, 0, 0, 0x10, 0x05 };

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
	o = l2(want, (const uint8_t[]){ 0x08, 0x00 }, 2);
	memcpy(want, mac5, 6);
	p.ttl = 63;
	o += tb_ip(want + o, &p);
	EP_CHECK_EQ(olen, o);
	EP_CHECK_MEM(out, want, o);
	tb_free(t);
}

EP_TEST(downlink_ipoe_subscriber_without_mac_dropped_no_encap)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.6", 0, 40);
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_DROP(EP_DROP_BNG_NO_ENCAP));
	tb_free(t);
}

EP_TEST(downlink_ttl_expired_and_foreign_mac_dropped)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.2", 0, 40);
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	p.ttl = 1;
	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_DROP(EP_DROP_IPV4_TTL_EXPIRED));
	p.ttl = 64;
	p.dst = tb_sub_mac;
	EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US));
	tb_free(t);
}

/* Every DSCP of the list in both families: the IPv6 DSCP straddles two
 * bytes, and the path comes from a per-DSCP table built from the map. */
EP_TEST(downlink_hqos_path_per_dscp_subport_pipe_tc_queue_ipv4_and_ipv6)
{
	struct tb *t = tb_new(down_conf);
	struct bng_down *d = t->down->pipeline_ctx;
	const struct bng_sub *s1 = bng_sub_get(t->b, 1), *s2 = bng_sub_get(t->b, 2);
	static const struct { uint8_t dscp; uint32_t tc, queue; } want[] = {
		{ 46, 0, 0 },  /* EF */          { 48, 1, 0 },  /* CS6 */
		{ 56, 1, 0 },  /* CS7 */         { 40, 2, 0 },  /* CS5 */
		{ 34, 3, 0 },  /* AF41 */        { 32, 4, 0 },  /* CS4 */
		{ 26, 5, 0 },  /* AF31 */        { 24, 6, 0 },  /* CS3 */
		{ 20, 7, 0 },  /* AF22 */        { 16, 8, 0 },  /* CS2 */
		{ 12, 9, 0 },  /* AF12 */        { 10, 10, 0 }, /* AF11: dscp_tc af11:10 */
		{ 0, 12, 0 },  /* BE */          { 8, 12, 3 },  /* CS1: lower effort */
		{ 57, 12, 2 }, /* dscp_tc 57:12.2 */
	};

	EP_CHECK(s1 != NULL && s2 != NULL);
	if (s1 == NULL || s2 == NULL)
		return;
	EP_CHECK(s1->pipe != s2->pipe || s1->subport != s2->subport);
	for (size_t k = 0; k < 2 * RTE_DIM(want); k++) {
		const size_t i = k / 2;
		struct tb_pkt p = core_pkt(k % 2 ? 6 : 4, k % 2 ? "2001:db8:ffff::1" :
					   "198.51.100.7", k % 2 ? "2001:db8:100::5" :
					   "198.18.100.2", want[i].dscp, 40);
		uint8_t out[2048];
		uint16_t olen;
		struct path path = {0};
		struct rte_sched_queue_stats qs;
		uint64_t pk0[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE], pk[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];
		uint64_t dr[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];
		uint16_t qlen;
		uint32_t q;

		if (d->hqos->hs != NULL)
			ep_hsched_stats(d->hqos->hs, pk0, dr);

		EP_CHECK_EQ(down_run(t, &p, out, &olen, &path), EP_NEXT_TX(TB_ACCESS));
		EP_CHECK_EQ(path.subport, s1->subport);
		EP_CHECK_EQ(path.pipe, s1->pipe);
		EP_CHECK_EQ(path.tc, want[i].tc);
		EP_CHECK_EQ(path.queue, want[i].queue);
		/* The queue's own counters agree: queue id = (subport, pipe) * 16 + q. */
		q = (s1->subport * t->b->hqos->max_pipes + s1->pipe) * RTE_SCHED_QUEUES_PER_PIPE +
		    (want[i].tc < RTE_SCHED_TRAFFIC_CLASS_BE ? want[i].tc :
		     RTE_SCHED_TRAFFIC_CLASS_BE + want[i].queue);
		if (d->hqos->hs != NULL) {
			/* Ours counts per traffic class. */
			ep_hsched_stats(d->hqos->hs, pk, dr);
			EP_CHECK_EQ(pk[want[i].tc] - pk0[want[i].tc], 1);
			continue;
		}
		EP_CHECK_EQ(rte_sched_queue_read_stats(d->hqos->port, q, &qs, &qlen), 0);
		EP_CHECK_EQ(qs.n_pkts, 1);
	}
	tb_free(t);
}

EP_TEST(downlink_hqos_queue_full_counted)
{
	struct tb *t = tb_new("hqos_qsize = 4\n"
			      "subscriber = id=1 qinq=100.200 ipv4=198.18.100.2 "
			      "mac=02:00:00:00:10:01\n");
	struct rte_mbuf *m[8];
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.2", 0, 40);
	uint8_t f[256];
	uint16_t len = tb_frame(f, &p);

	for (int i = 0; i < 8; i++) {
		m[i] = ep_test_mbuf(f, len);
		ep_meta(m[i])->in_port = TB_CORE;
	}
	ep_worker_run_burst(t->down, m, 8);
	EP_CHECK_EQ(tb_drops(t->down, EP_DROP_BNG_HQOS_QUEUE_FULL), 4);
	tb_free(t);
}

/* A burst from rx (rx_port set: the parse writes in_port, the engine does
 * not, bng-downlink's stage_sets_in_port) parses as the same burst handed
 * in with in_port set: the same verdicts and ep_meta, in_port the core
 * port, whose neighbour answers (ARP, ND) go back out of it. */
EP_TEST(downlink_parse_of_a_burst_from_rx_writes_in_port_and_equals_the_handed_in_burst)
{
	struct tb *t = tb_new(down_conf);
	struct tb_pkt kinds[4] = {
		core_pkt(4, "203.0.113.9", "198.18.100.2", 0, 40),
		core_pkt(6, "2001:db8:ffff::1", "2001:db8:100::5", 10, 20),
		core_pkt(4, "203.0.113.9", "198.18.100.77", 46, 400),
		core_pkt(4, "203.0.113.9", "198.18.100.3", 0, 0),
	};

	tb_check_parse_from_rx(t->down, TB_CORE, kinds, 34);
	tb_free(t);
}

/* ---- subscriber changes under a running lookup ---- */

/* The last byte of the destination MAC a frame from the core to @p dip
 * leaves the scheduler with, or -1 if it does not. */
static int
mac_byte_to(struct tb *t, const char *dip)
{
	struct tb_pkt p = core_pkt(4, "198.51.100.7", dip, 0, 40);
	uint8_t out[2048];
	uint16_t olen;
	struct path path;

	return down_run(t, &p, out, &olen, &path) == EP_NEXT_TX(TB_ACCESS) ? out[5] : -1;
}

/* Replacing a subscriber with its address kept: the destination table's
 * data (bng_dst_data) names the record it finds, so the kept address must
 * name the new record at once (its MAC on the wire), and a deleted one
 * nothing. */
EP_TEST(downlink_replace_keeping_the_address_sends_with_the_new_record)
{
	struct tb *t = tb_new(down_conf);
	const uint32_t seven = htonl(0xc6126407);      /* 198.18.100.7 */
	struct ep_err err;

	EP_CHECK_EQ(tb_sub_add(t, "id=4 vlan=102 ipv4=198.18.100.6 mac=02:00:00:00:10:44"), 0);
	EP_CHECK_EQ(mac_byte_to(t, "198.18.100.6"), 0x44);
	EP_CHECK_EQ(tb_sub_add(t, "id=4 vlan=102 ipv4=198.18.100.6 mac=02:00:00:00:10:45"), 0);
	EP_CHECK_EQ(mac_byte_to(t, "198.18.100.6"), 0x45);
	/* Another address beside the kept one: both name the newest record. */
	EP_CHECK_EQ(tb_sub_add(t, "id=4 vlan=102 ipv4=198.18.100.6,198.18.100.7 "
				  "mac=02:00:00:00:10:46"), 0);
	EP_CHECK_EQ(mac_byte_to(t, "198.18.100.6"), 0x46);
	EP_CHECK_EQ(mac_byte_to(t, "198.18.100.7"), 0x46);
	EP_CHECK_EQ(bng_sub_find_dst(t->b, 4, &seven), 4);
	EP_CHECK_EQ(bng_sub_del(t->b, 4, &err), 0);
	EP_CHECK_EQ(mac_byte_to(t, "198.18.100.7"), -1);
	EP_CHECK_EQ(tb_drops(t->down, EP_DROP_BNG_NO_SUBSCRIBER), 1);
	EP_CHECK_EQ(bng_sub_find_dst(t->b, 4, &seven), -1);
	tb_free(t);
}

/* A downlink lookup on another thread, in a loop, reporting a quiescent
 * state after each burst as a worker does, while the control thread
 * replaces (address kept, MAC changed), deletes and re-adds the subscriber
 * its packets go to, and reclaims retired records as soon as it may.  The
 * reader reads every record it found as the rpf and encap stages do; a
 * record reclaimed under it, or named by the table after its retirement,
 * is poisoned in the ASAN build (bng.c) and reported there. */
struct churn_reader {
	struct tb *t;
	struct rte_mbuf *pkts[32];
	uint32_t stop;
	uint64_t bursts, found, torn;
};

static void *
churn_reader_main(void *arg)
{
	struct churn_reader *r = arg;
	struct bng_down *d = r->t->down->pipeline_ctx;
	struct rte_rcu_qsbr *q = r->t->e.qsbr;
	unsigned int id = r->t->down->id;

	rte_rcu_qsbr_thread_register(q, id);
	rte_rcu_qsbr_thread_online(q, id);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		uint16_t next[32] = {0};

		bng_down_lookup_stage(d, r->pkts, next, 32);
		for (int i = 0; i < 32; i++) {
			const struct bng_sub *s =
				(const struct bng_sub *)(uintptr_t)ep_meta(r->pkts[i])->user;

			if (next[i] != 0)
				continue;
			r->found++;
			/* One whole record: id, range and MAC of one version. */
			if (s->id != 4 || s->n_v4 != 1 ||
			    s->ranges.v4_net[0] != htonl(0xc6126406) ||
			    (s->tpl[5] != 0x44 && s->tpl[5] != 0x45))
				r->torn++;
		}
		__atomic_store_n(&r->bursts, r->bursts + 1, __ATOMIC_RELAXED);
		rte_rcu_qsbr_quiescent(q, id);
	}
	rte_rcu_qsbr_thread_offline(q, id);
	rte_rcu_qsbr_thread_unregister(q, id);
	return NULL;
}

EP_TEST(downlink_lookup_during_replace_and_delete_reads_no_retired_record)
{
	struct tb *t = tb_new(down_conf);
	struct churn_reader r = { .t = t };
	struct tb_pkt p = core_pkt(4, "198.51.100.7", "198.18.100.6", 0, 40);
	struct bng_down *d = t->down->pipeline_ctx;
	struct ep_err err;
	uint16_t next[32] = {0};
	uint8_t f[2048];
	uint16_t len = tb_frame(f, &p);
	pthread_t th;
	int changes = 0;

	for (int i = 0; i < 32; i++)
		r.pkts[i] = ep_test_mbuf(f, len);
	EP_CHECK_EQ(bng_down_parse_stage(d, r.pkts, next, 32), 0);
	EP_CHECK_EQ(tb_sub_add(t, "id=4 vlan=102 ipv4=198.18.100.6 mac=02:00:00:00:10:44"), 0);
	EP_CHECK_EQ(pthread_create(&th, NULL, churn_reader_main, &r), 0);
	for (int i = 0; i < 300; i++) {
		uint64_t seen = __atomic_load_n(&r.bursts, __ATOMIC_RELAXED);

		/* A burst of the reader's between changes (two shared cores:
		 * give up waiting after ~1 s). */
		for (int w = 0; w < 1000000 &&
				__atomic_load_n(&r.bursts, __ATOMIC_RELAXED) == seen; w++)
			rte_pause();
		if (i % 3 == 2)
			changes += bng_sub_del(t->b, 4, &err) == 0;
		else
			changes += tb_sub_add(t, i % 2 ? "id=4 vlan=102 ipv4=198.18.100.6 "
							   "mac=02:00:00:00:10:45" :
							   "id=4 vlan=102 ipv4=198.18.100.6 "
							   "mac=02:00:00:00:10:44") == 0;
		rte_rcu_qsbr_dq_reclaim(t->b->dq, UINT32_MAX, NULL, NULL, NULL);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	EP_CHECK_EQ(changes, 300);
	EP_CHECK(r.bursts > 0);
	EP_CHECK_EQ(r.torn, 0);
	printf("    %" PRIu64 " bursts, %" PRIu64 " packets found during 300 changes\n", r.bursts,
	       r.found);
	rte_pktmbuf_free_bulk(r.pkts, 32);
	tb_free(t);
}
