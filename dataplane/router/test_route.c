/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `route` and the route/neighbour tables: longest match, fallback on
 * delete, IPv6 through the double-buffered tables, unresolved next hops,
 * martians, echo replies from the data plane, control-operation errors.
 */
#include "test_router.h"

static uint8_t buf[2048];

static uint16_t
route_v4(struct router_worker *w, const char *dst, uint32_t *nh)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_mbuf *m;
	uint16_t v;

	s.dst4 = tp_ip4(dst);
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	v = tr_stage1(router_route_stage, w, m);
	if (nh != NULL)
		*nh = ep_meta(m)->nexthop;
	rte_pktmbuf_free(m);
	return v;
}

static uint16_t
route_v6(struct router_worker *w, const char *dst, uint32_t *nh)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct rte_mbuf *m;
	uint16_t v;

	tp_ip6(s.dst6, dst);
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	v = tr_stage1(router_route_stage, w, m);
	if (nh != NULL)
		*nh = ep_meta(m)->nexthop;
	rte_pktmbuf_free(m);
	return v;
}

static int
nh_of(struct router *r, int fam, const char *ip)
{
	uint8_t a[16];

	ep_addr_parse(ip, a);
	for (uint32_t i = EP_FIB_NH_FIRST; i < r->fib->p.max_nexthops; i++)
		if (r->fib->nhc[i].in_use && r->fib->nhc[i].family == fam &&
		    memcmp(r->fib->nhc[i].ip, a, fam == 4 ? 4 : 16) == 0)
			return (int)i;
	return -1;
}

EP_TEST(lpm_longest_match_and_delete_falls_back_to_shorter_prefix)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;
	uint32_t nh = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.1.3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.16.0/20", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.16.0/24", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.16.128/25", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.16.5", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.3"));
	EP_CHECK_EQ(route_v4(w, "198.18.16.200", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.2"));
	EP_CHECK_EQ(route_v4(w, "198.18.17.5", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.2"));
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "198.18.16.0/24", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.16.5", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.2"));
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "198.18.16.0/20", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.16.5", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	EP_CHECK_EQ(route_v4(w, "198.18.16.129", NULL), EP_NEXT_CONTINUE);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(lpm6_longest_match_and_delete_on_both_table_copies)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;
	uint32_t nh = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "2001:db8:0:2::3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:100::/48", "2001:db8:0:2::2", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:100:5::/64", "2001:db8:0:2::3", &err), 0);
	/* Each change flips the published copy: check lookups over several flips. */
	for (int round = 0; round < 2; round++) {
		EP_CHECK_EQ(route_v6(w, "2001:db8:100:5::9", &nh), EP_NEXT_CONTINUE);
		EP_CHECK_EQ(nh, nh_of(r, 6, "2001:db8:0:2::3"));
		EP_CHECK_EQ(route_v6(w, "2001:db8:100:6::9", &nh), EP_NEXT_CONTINUE);
		EP_CHECK_EQ(nh, nh_of(r, 6, "2001:db8:0:2::2"));
		EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:999::/48", "2001:db8:0:2::2", &err), 0);
		EP_CHECK_EQ(ep_fib_route_del(r->fib, "2001:db8:999::/48", &err), 0);
	}
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "2001:db8:100:5::/64", &err), 0);
	EP_CHECK_EQ(route_v6(w, "2001:db8:100:5::9", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 6, "2001:db8:0:2::2"));
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "2001:db8:999::/48", "2001:db8:0:2::2", &err), 0);
	EP_CHECK_EQ(route_v6(w, "2001:db8:100:5::9", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(route_v6(w, "2001:db8:999::1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(route_v6(w, "2001:db8:aaaa::1", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	router_worker_free(w);
	router_free(r);
}

EP_TEST(default_routes_catch_misses_and_lose_to_every_longer_prefix)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;
	uint32_t nh = 0;

	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.1.3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "2001:db8:0:2::3", "02:00:00:00:00:0c", NULL, &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.19.200.1", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "0.0.0.0/0", "198.18.1.3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "::/0", "2001:db8:0:2::3", &err), 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.19.0.0/16", "198.18.1.2", &err), 0);
	/* A miss takes the default; any covering prefix beats it. */
	EP_CHECK_EQ(route_v4(w, "198.18.200.1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.3"));
	EP_CHECK_EQ(route_v4(w, "198.19.200.1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.2"));
	EP_CHECK_EQ(route_v6(w, "2001:db8:aaaa::1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 6, "2001:db8:0:2::3"));
	/* Deleting a default brings back no_route, for that family only. */
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "0.0.0.0/0", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.200.1", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	EP_CHECK_EQ(route_v6(w, "2001:db8:aaaa::1", NULL), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "::/0", &err), 0);
	EP_CHECK_EQ(route_v6(w, "2001:db8:aaaa::1", NULL), EP_NEXT_DROP(EP_DROP_NO_ROUTE));
	router_worker_free(w);
	router_free(r);
}

EP_TEST(connected_host_without_neighbour_is_unresolved_until_added)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;

	EP_CHECK_EQ(route_v4(w, "198.18.1.9", NULL), EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK_EQ(route_v6(w, "2001:db8:0:2::9", NULL),
		    EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.1.9", "02:00:00:00:00:99", NULL, &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.1.9", NULL), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(ep_fib_neigh_del(r->fib, "198.18.1.9", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.1.9", NULL), EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK(ep_fib_neigh_del(r->fib, "198.18.1.9", &err) < 0);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(route_via_gateway_without_mac_resolves_when_neighbour_arrives)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;
	const struct ep_fib_nh *nh;
	uint32_t idx = 0;

	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.40.0/24", "198.18.1.40", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.40.1", NULL), EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.1.40", "02:00:00:00:00:40", NULL, &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.40.1", &idx), EP_NEXT_CONTINUE);
	nh = r->fib->nh[idx];
	EP_CHECK_EQ(nh->port, 1);
	EP_CHECK_EQ(nh->eth[5], 0x40);
	EP_CHECK_MEM(nh->eth + 6, MAC_P1, 6);
	/* Neighbour gone: the route stays, unresolved. */
	EP_CHECK_EQ(ep_fib_neigh_del(r->fib, "198.18.1.40", &err), 0);
	EP_CHECK_EQ(route_v4(w, "198.18.40.1", NULL), EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED));
	EP_CHECK_EQ(ep_fib_route_del(r->fib, "198.18.40.0/24", &err), 0);
	EP_CHECK_EQ(nh_of(r, 4, "198.18.1.40"), -1);    /* next hop released */
	router_worker_free(w);
	router_free(r);
}

EP_TEST(route_replace_moves_to_the_new_gateway_and_releases_the_old)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct ep_err err;
	uint32_t nh = 0;

	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.50.0/24", "198.18.1.50", &err), 0);
	EP_CHECK(nh_of(r, 4, "198.18.1.50") >= 0);
	EP_CHECK_EQ(ep_fib_route_add(r->fib, "198.18.50.0/24", "198.18.1.2", &err), 0);
	EP_CHECK_EQ(nh_of(r, 4, "198.18.1.50"), -1);
	EP_CHECK_EQ(route_v4(w, "198.18.50.1", &nh), EP_NEXT_CONTINUE);
	EP_CHECK_EQ(nh, nh_of(r, 4, "198.18.1.2"));
	router_worker_free(w);
	router_free(r);
}

EP_TEST(martian_addresses_are_never_routed)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	static const char *const dst4[] = {"127.0.0.1", "0.1.2.3", "224.0.0.251",
					   "255.255.255.255", "169.254.1.1"};
	static const char *const dst6[] = {"ff02::1", "::1", "::", "fe80::1", "::ffff:198.18.1.2"};
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_mbuf *m;

	for (size_t i = 0; i < RTE_DIM(dst4); i++)
		EP_CHECK_EQ(route_v4(w, dst4[i], NULL), EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS));
	for (size_t i = 0; i < RTE_DIM(dst6); i++)
		EP_CHECK_EQ(route_v6(w, dst6[i], NULL), EP_NEXT_DROP(EP_DROP_IPV6_BAD_ADDRESS));
	s.src4 = tp_ip4("224.1.1.1");
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS));
	rte_pktmbuf_free(m);
	s = tp_default(1, IPPROTO_UDP);
	tp_ip6(s.src6, "fe80::2");
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_DROP(EP_DROP_IPV6_BAD_ADDRESS));
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(echo_request_to_own_ipv4_address_gets_a_reply)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(0, IPPROTO_ICMP);
	struct rte_mbuf *m;
	const uint8_t *p;
	const struct rte_ipv4_hdr *ip;
	uint16_t len;

	s.dst4 = tp_ip4("198.18.0.1");
	s.n_vlans = 1;
	len = tp_build(buf, &s);
	memset(buf + len, 0, 8);       /* Ethernet padding, dropped in the reply */
	m = tr_mbuf(buf, (uint16_t)(len + 8), 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_TX(0));
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	ip = (const struct rte_ipv4_hdr *)(p + 18);
	EP_CHECK_EQ(rte_pktmbuf_pkt_len(m), len);
	EP_CHECK_MEM(p, MAC_A, 6);
	EP_CHECK_MEM(p + 6, MAC_P0, 6);
	EP_CHECK_EQ(p[14], 0);         /* VLAN tag kept: reply on the same VLAN */
	EP_CHECK_EQ(p[15], 100);
	EP_CHECK_EQ(ntohl(ip->src_addr), tp_ip4("198.18.0.1"));
	EP_CHECK_EQ(ntohl(ip->dst_addr), tp_ip4("198.18.0.2"));
	EP_CHECK_EQ(rte_raw_cksum(ip, 20), 0xffff);
	EP_CHECK_EQ(p[38], RTE_IP_ICMP_ECHO_REPLY);
	EP_CHECK_EQ(rte_raw_cksum(p + 38, len - 38u), 0xffff);
	EP_CHECK_MEM(p + 42, buf + 42, 4);   /* identifier and sequence echoed */
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(echo_request_to_own_ipv6_address_gets_a_reply)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(1, IPPROTO_ICMPV6);
	struct rte_mbuf *m;
	const uint8_t *p;
	uint16_t len;
	uint8_t own[16];

	tp_ip6(own, "2001:db8:0:2::1");     /* the core port's address, asked on access */
	memcpy(s.dst6, own, 16);
	len = tp_build(buf, &s);
	m = tr_mbuf(buf, len, 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_TX(0));
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	EP_CHECK_MEM(p + 14 + 8, own, 16);
	EP_CHECK_MEM(p + 14 + 24, s.src6, 16);
	EP_CHECK_EQ(p[54], 129);
	EP_CHECK_EQ(ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(p + 14), p + 54, len - 54u, 58),
		    0);
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(other_traffic_to_own_address_is_local_unsupported)
{
	struct router *r = tr_router();
	struct router_worker *w = router_worker_create(r, NULL, SOCKET_ID_ANY);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_mbuf *m;
	uint16_t len;

	s.dst4 = tp_ip4("198.18.0.1");
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED));
	rte_pktmbuf_free(m);
	s = tp_default(0, IPPROTO_ICMP);
	s.dst4 = tp_ip4("198.18.0.1");
	s.icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	m = tr_mbuf(buf, tp_build(buf, &s), 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED));
	rte_pktmbuf_free(m);
	s.icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	len = tp_build(buf, &s);
	buf[len - 1] ^= 0xff;    /* payload changed, ICMP checksum not */
	m = tr_mbuf(buf, len, 0);
	EP_CHECK_EQ(tr_stage1(router_route_stage, w, m), EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM));
	rte_pktmbuf_free(m);
	router_worker_free(w);
	router_free(r);
}

EP_TEST(route_and_neighbour_operations_reject_bad_input_naming_the_field)
{
	struct router *r = tr_router();
	struct ep_err err;
	static const struct { const char *prefix, *via, *needle; } bad[] = {
		{ "198.18.9.0/33", "198.18.1.2", "prefix" },
		{ "198.18.9.1/24", "198.18.1.2", "host bits" },
		{ "198.18.9.0/24", "198.18.77.2", "not on a connected subnet" },
		{ "198.18.9.0/24", "2001:db8:0:2::2", "via" },
		{ "198.18.9.0/24", "banana", "via" },
		{ "198.18.9.0/24", "198.18.1.1", "address of this router" },
		{ "198.18.1.0/24", "198.18.1.2", "connected" },
		{ "198.18.1.2/32", "198.18.1.3", "neighbour" },
	};

	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		err.msg[0] = '\0';
		EP_CHECK(ep_fib_route_add(r->fib, bad[i].prefix, bad[i].via, &err) < 0);
		if (strstr(err.msg, bad[i].needle) == NULL) {
			printf("    %s via %s: '%s' lacks '%s'\n", bad[i].prefix, bad[i].via,
			       err.msg, bad[i].needle);
			ep_test_failed = 1;
		}
	}
	EP_CHECK(ep_fib_route_del(r->fib, "198.18.0.0/24", &err) < 0);
	EP_CHECK(strstr(err.msg, "connected") != NULL);
	EP_CHECK(ep_fib_route_del(r->fib, "198.18.99.0/24", &err) < 0);
	EP_CHECK(strstr(err.msg, "no route") != NULL);
	EP_CHECK(ep_fib_neigh_add(r->fib, "198.18.77.2", "02:00:00:00:00:01", NULL, &err) < 0);
	EP_CHECK(strstr(err.msg, "dev") != NULL);
	EP_CHECK_EQ(ep_fib_neigh_add(r->fib, "198.18.77.2", "02:00:00:00:00:01", "core", &err), 0);
	EP_CHECK(ep_fib_neigh_add(r->fib, "198.18.0.9", "ff:ff:ff:ff:ff:ff", NULL, &err) < 0);
	EP_CHECK(strstr(err.msg, "mac") != NULL);
	EP_CHECK(ep_fib_neigh_add(r->fib, "198.18.0.9", "02:00:00:00:00:01", "nope", &err) < 0);
	EP_CHECK(strstr(err.msg, "dev") != NULL);
	EP_CHECK(ep_fib_neigh_add(r->fib, "198.18.0.1", "02:00:00:00:00:01", NULL, &err) < 0);
	router_free(r);
}

EP_TEST(route_table_full_is_an_error_not_a_crash)
{
	struct router *r = tr_router();
	struct ep_err err;
	char prefix[32];
	int i, rc = 0;

	for (i = 0; i < 2000 && rc == 0; i++) {
		snprintf(prefix, sizeof(prefix), "198.19.%d.%d/32", i / 256, i % 256);
		rc = ep_fib_route_add(r->fib, prefix, "198.18.1.2", &err);
	}
	EP_CHECK(rc < 0);
	EP_CHECK(strstr(err.msg, "max_routes4") != NULL);
	EP_CHECK_EQ(r->fib->n_routes4, r->fib->p.max_routes4);
	router_free(r);
}
