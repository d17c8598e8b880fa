/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `rewrite`: TTL / hop limit, the incremental checksum against a full
 * recomputation, MACs from the next hop, VLAN tags removed on egress.
 */
#include "test_router.h"

static uint8_t buf[2048];

/* Route then rewrite one frame (rewrite reads the next hop route chose). */
static uint16_t
forward(struct router_worker *w, struct rte_mbuf *m)
{
	uint16_t v = tr_stage1(router_route_stage, w, m);

	if (v != EP_NEXT_CONTINUE)
		return v;
	return tr_stage1(router_rewrite_stage, w, m);
}

EP_TEST(incremental_ttl_checksum_equals_full_recomputation)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	int bad = 0;

	/* Every TTL, with header contents that drive the checksum through its
	 * carries and through 0x0000/0xffff. */
	for (uint32_t ttl = 2; ttl <= 255; ttl++) {
		for (uint32_t id = 0; id < 65536; id += 257) {
			struct rte_ipv4_hdr *ip;
			uint16_t want;

			s.ttl = (uint8_t)ttl;
			tp_build(buf, &s);
			ip = (struct rte_ipv4_hdr *)(buf + 14);
			ip->packet_id = htons((uint16_t)id);
			tp_fix_ipv4_cksum(buf, 14);
			ep_ipv4_ttl_dec(ip);
			want = ip->hdr_checksum;
			ip->hdr_checksum = 0;
			bad += rte_ipv4_cksum(ip) != want;
		}
	}
	EP_CHECK_EQ(bad, 0);
}

EP_TEST(forwarded_ipv4_has_new_macs_ttl_minus_one_and_a_valid_checksum)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(0, IPPROTO_TCP);
	uint16_t len = tp_build(buf, &s);
	struct rte_mbuf *m = tr_mbuf(buf, len, 0);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	struct rte_ipv4_hdr ip;

	EP_CHECK_EQ(forward(w, m), EP_NEXT_TX(1));
	EP_CHECK_MEM(p, MAC_B, 6);
	EP_CHECK_MEM(p + 6, MAC_P1, 6);
	memcpy(&ip, p + 14, 20);
	EP_CHECK_EQ(ip.time_to_live, 63);
	EP_CHECK_EQ(rte_raw_cksum(&ip, 20), 0xffff);
	ip.hdr_checksum = 0;
	EP_CHECK_EQ(((const struct rte_ipv4_hdr *)(p + 14))->hdr_checksum, rte_ipv4_cksum(&ip));
	EP_CHECK_MEM(p + 34, buf + 34, len - 34u);     /* L4 untouched */
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(forwarded_ipv6_has_hop_limit_minus_one)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct rte_mbuf *m = tr_mbuf(buf, tp_build(buf, &s), 0);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	EP_CHECK_EQ(forward(w, m), EP_NEXT_TX(1));
	EP_CHECK_MEM(p, MAC_B, 6);
	EP_CHECK_MEM(p + 6, MAC_P1, 6);
	EP_CHECK_EQ(p[14 + 7], 63);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

static void
check_expiry(int v6, uint8_t ttl, uint16_t want)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(v6, IPPROTO_UDP);
	struct rte_mbuf *m;

	s.ttl = ttl;
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(forward(w, m), want);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(ipv4_ttl_zero_and_one_expire_two_forwards)
{
	check_expiry(0, 0, EP_NEXT_DROP(EP_DROP_IPV4_TTL_EXPIRED));
	check_expiry(0, 1, EP_NEXT_DROP(EP_DROP_IPV4_TTL_EXPIRED));
	check_expiry(0, 2, EP_NEXT_TX(1));
}

EP_TEST(ipv6_hop_limit_zero_and_one_expire_two_forwards)
{
	check_expiry(1, 0, EP_NEXT_DROP(EP_DROP_IPV6_HOP_LIMIT_EXPIRED));
	check_expiry(1, 1, EP_NEXT_DROP(EP_DROP_IPV6_HOP_LIMIT_EXPIRED));
	check_expiry(1, 2, EP_NEXT_TX(1));
}

static void
check_vlan_strip(int v6, int n_vlans)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(v6, IPPROTO_UDP);
	uint16_t len, l3 = (uint16_t)(14 + 4 * n_vlans);
	struct rte_mbuf *m;
	const uint8_t *p;

	s.n_vlans = n_vlans;
	s.tpid[0] = RTE_ETHER_TYPE_QINQ;
	len = tp_build(buf, &s);
	m = tr_mbuf(buf, len, 0);
	EP_CHECK_EQ(forward(w, m), EP_NEXT_TX(1));
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(m), len - 4u * n_vlans);
	EP_CHECK_MEM(p, MAC_B, 6);
	EP_CHECK_MEM(p + 6, MAC_P1, 6);
	EP_CHECK_EQ(p[12], v6 ? 0x86 : 0x08);
	EP_CHECK_EQ(p[13], v6 ? 0xdd : 0x00);
	EP_CHECK_EQ(ep_meta(m)->l3_off, 14);
	EP_CHECK_EQ(ep_meta(m)->n_vlans, 0);
	/* Everything past the TTL/hop-limit byte is as it came in. */
	EP_CHECK_MEM(p + 14 + 12, buf + l3 + 12, len - l3 - 12u);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(one_and_two_ingress_vlan_tags_are_removed_on_egress)
{
	check_vlan_strip(0, 1);
	check_vlan_strip(0, 2);
	check_vlan_strip(1, 1);
	check_vlan_strip(1, 2);
}
