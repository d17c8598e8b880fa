/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `neigh`: ARP and neighbour-solicitation answers built in place, and
 * every other ARP/ND message counted under its reason.
 */
#include "test_router.h"

static uint8_t buf[2048];
static uint8_t ip6_port0[16], ip6_host_a[16];

static void
addrs(void)
{
	tp_ip6(ip6_port0, "2001:db8:0:1::1");
	tp_ip6(ip6_host_a, "2001:db8:0:1::2");
}

static uint16_t
neigh(struct router_worker *w, struct rte_mbuf *m)
{
	return tr_stage1(ep_fib_neigh_stage, w->fw, m);
}

EP_TEST(arp_request_for_own_address_is_answered_in_place)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	uint16_t len = tp_arp(buf, MAC_A, 1, tp_ip4("198.18.0.2"), tp_ip4("198.18.0.1"));
	struct rte_mbuf *m = tr_mbuf(buf, len, 0);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_arp_hdr *a = (const struct rte_arp_hdr *)(p + 14);

	EP_CHECK_EQ(neigh(w, m), EP_NEXT_TX(0));
	EP_CHECK_MEM(p, MAC_A, 6);
	EP_CHECK_MEM(p + 6, MAC_P0, 6);
	EP_CHECK_EQ(ntohs(a->arp_opcode), RTE_ARP_OP_REPLY);
	EP_CHECK_MEM(&a->arp_data.arp_sha, MAC_P0, 6);
	EP_CHECK_MEM(&a->arp_data.arp_tha, MAC_A, 6);
	EP_CHECK_EQ(ntohl(a->arp_data.arp_sip), tp_ip4("198.18.0.1"));
	EP_CHECK_EQ(ntohl(a->arp_data.arp_tip), tp_ip4("198.18.0.2"));
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(arp_request_for_address_of_other_port_or_host_is_not_for_us)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct rte_mbuf *m;

	/* 198.18.1.1 is ours, but on the core port: not answered on access. */
	m = tr_mbuf(buf, tp_arp(buf, MAC_A, 1, tp_ip4("198.18.0.2"), tp_ip4("198.18.1.1")), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US));
	rte_pktmbuf_free(m);
	m = tr_mbuf(buf, tp_arp(buf, MAC_A, 1, tp_ip4("198.18.0.2"), tp_ip4("198.18.0.9")), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US));
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

/* A reply to one of our addresses goes to the FIB's resolver (consumed:
 * the stage freed it); with learning off it is not for us. */
EP_TEST(arp_reply_goes_to_the_resolver_or_is_not_for_us)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct rte_mbuf *m = tr_mbuf(buf, tp_arp(buf, MAC_A, 2, tp_ip4("198.18.0.2"),
						 tp_ip4("198.18.0.1")), 0);

	EP_CHECK_EQ(neigh(w, m), EP_NEXT_CONSUMED);
	EP_CHECK_EQ(w->fw->st.heard, 1);
	ep_fib_worker_no_learning(w->fw, 0);
	m = tr_mbuf(buf, tp_arp(buf, MAC_A, 2, tp_ip4("198.18.0.2"), tp_ip4("198.18.0.1")), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US));
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(ns_for_own_address_gets_na_with_flags_and_target_lladdr)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct rte_mbuf *m;
	const uint8_t *p, *icmp;
	const struct rte_ipv6_hdr *ip;

	addrs();
	m = tr_mbuf(buf, tp_ns(buf, MAC_A, ip6_host_a, ip6_port0), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_TX(0));
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	ip = (const struct rte_ipv6_hdr *)(p + 14);
	icmp = p + 54;
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(m), 14 + 40 + 32);
	EP_CHECK_MEM(p, MAC_A, 6);
	EP_CHECK_MEM(p + 6, MAC_P0, 6);
	EP_CHECK_EQ(ip->hop_limits, 255);
	EP_CHECK_EQ(ntohs(ip->payload_len), 32);
	EP_CHECK_MEM(ip->src_addr, ip6_port0, 16);
	EP_CHECK_MEM(ip->dst_addr, ip6_host_a, 16);
	EP_CHECK_EQ(icmp[0], 136);
	EP_CHECK_EQ(icmp[1], 0);
	EP_CHECK_EQ(icmp[4], 0x80 | 0x40 | 0x20);   /* router, solicited, override */
	EP_CHECK_MEM(icmp + 8, ip6_port0, 16);
	EP_CHECK_EQ(icmp[24], 2);                    /* target link-layer address */
	EP_CHECK_EQ(icmp[25], 1);
	EP_CHECK_MEM(icmp + 26, MAC_P0, 6);
	EP_CHECK_EQ(ep_ipv6_l4_cksum(ip, icmp, 32, IPPROTO_ICMPV6), 0);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(ns_dad_probe_is_answered_to_all_nodes_without_solicited_flag)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	static const uint8_t all_nodes[16] = {0xff, 2, [15] = 1};
	static const uint8_t mc[6] = {0x33, 0x33, 0, 0, 0, 1};
	struct rte_mbuf *m;
	const uint8_t *p;

	addrs();
	m = tr_mbuf(buf, tp_ns(buf, MAC_A, NULL, ip6_port0), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_TX(0));
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	EP_CHECK_MEM(p, mc, 6);
	EP_CHECK_MEM(p + 14 + 24, all_nodes, 16);
	EP_CHECK_EQ(p[54 + 4], 0x80 | 0x20);
	EP_CHECK_EQ(ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(p + 14), p + 54, 32, 58), 0);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

/* Build an NS for our address, let @p edit break it, expect @p want. */
static void
check_ns(void (*edit)(uint8_t *b, uint16_t *len), uint16_t want)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct rte_mbuf *m;
	uint16_t len;

	addrs();
	len = tp_ns(buf, MAC_A, ip6_host_a, ip6_port0);
	edit(buf, &len);
	m = tr_mbuf(buf, len, 0);
	EP_CHECK_EQ(neigh(w, m), want);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

static void
fix_cksum(uint8_t *b, uint16_t len)
{
	uint16_t ck;

	b[56] = b[57] = 0;
	ck = ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(b + 14), b + 54, len - 54u, 58);
	memcpy(b + 56, &ck, 2);
}

static void edit_hop_limit(uint8_t *b, uint16_t *len) { b[21] = 64; }
static void edit_code(uint8_t *b, uint16_t *len) { b[55] = 1; fix_cksum(b, *len); }
static void edit_cksum(uint8_t *b, uint16_t *len) { b[57] ^= 0x5a; }
static void edit_multicast_target(uint8_t *b, uint16_t *len) { b[62] = 0xff; fix_cksum(b, *len); }
static void edit_opt_len_zero(uint8_t *b, uint16_t *len) { b[79] = 0; fix_cksum(b, *len); }
static void
edit_short(uint8_t *b, uint16_t *len)
{
	*len = 54 + 20;     /* 20-byte NS: no room for the target */
	b[19] = 20;
	fix_cksum(b, *len);
}
static void
edit_other_target(uint8_t *b, uint16_t *len)
{
	b[54 + 8 + 15] = 0x77;
	fix_cksum(b, *len);
}
static void edit_type_ra(uint8_t *b, uint16_t *len) { b[54] = 134; fix_cksum(b, *len); }
static void edit_type_na(uint8_t *b, uint16_t *len) { b[54] = 136; fix_cksum(b, *len); }
static void edit_type_rs(uint8_t *b, uint16_t *len) { b[54] = 133; fix_cksum(b, *len); }

EP_TEST(ns_hop_limit_not_255_is_malformed)
{
	check_ns(edit_hop_limit, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_code_not_zero_is_malformed)
{
	check_ns(edit_code, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_bad_icmpv6_checksum_is_malformed)
{
	check_ns(edit_cksum, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_multicast_target_is_malformed)
{
	check_ns(edit_multicast_target, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_option_of_length_zero_is_malformed)
{
	check_ns(edit_opt_len_zero, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_shorter_than_24_bytes_is_malformed)
{
	check_ns(edit_short, EP_NEXT_DROP(EP_DROP_ND_MALFORMED));
}

EP_TEST(ns_for_other_target_is_not_for_us)
{
	check_ns(edit_other_target, EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US));
}

EP_TEST(ra_na_rs_are_not_for_us)
{
	check_ns(edit_type_ra, EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US));
	check_ns(edit_type_na, EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US));
	check_ns(edit_type_rs, EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US));
}

EP_TEST(ip_traffic_and_echo_requests_pass_the_neigh_stage)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_mbuf *m = tr_mbuf(buf, tp_build(buf, &s), 0);

	EP_CHECK_EQ(neigh(w, m), EP_NEXT_CONTINUE);
	rte_pktmbuf_free(m);
	s = tp_default(1, IPPROTO_ICMPV6);    /* echo request */
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(neigh(w, m), EP_NEXT_CONTINUE);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}
