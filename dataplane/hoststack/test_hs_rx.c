/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive stages through the engine's burst function: delivery into a
 * socket's ring, lookup order, checksums, ICMP, ARP/ND, reassembly, the
 * wake-up byte, and what a hostile application's ring index does.
 */
#include <errno.h>

#include "test_hs.h"

EP_TEST(udp_datagram_lands_in_the_bound_sockets_ring_with_its_sender)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5000);
	struct rte_mbuf *m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5000, 100);
	struct hs_desc d = { 0 };
	uint8_t buf[256];

	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_rx_count(&t), 1);
	EP_CHECK_EQ(th_recv(&t, &d, buf, sizeof(buf)), 100);
	EP_CHECK_EQ(d.family, 4);
	EP_CHECK_EQ(rte_be_to_cpu_16(d.port), 4000);
	EP_CHECK_EQ(d.addr[0], 198);
	EP_CHECK_EQ(d.addr[3], 2);
	EP_CHECK_EQ(d.local[3], 1);
	EP_CHECK_EQ(buf[0], 0x30);              /* tp_build's payload pattern */
	EP_CHECK_EQ(buf[99], (uint8_t)(0x30 + 99));
	EP_CHECK_EQ(t.k->st.rx_dgrams, 1);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.pkts_consumed, 1);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(udp_checksum_is_checked_and_a_bad_one_counted)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5000);
	struct rte_mbuf *m[3];

	m[0] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5000, 64);
	rte_pktmbuf_mtod_offset(m[0], uint8_t *, 14 + 20 + 8)[5] ^= 0x40;   /* payload bit */
	m[1] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5000, 64);
	memset(rte_pktmbuf_mtod_offset(m[1], uint8_t *, 14 + 20 + 6), 0, 2);   /* no checksum: IPv4 allows */
	m[2] = th_udp_frame(1, "2001:db8:30::2", "2001:db8:30::1", 4000, 5000, 64);
	memset(rte_pktmbuf_mtod_offset(m[2], uint8_t *, 14 + 40 + 6), 0, 2);   /* IPv6 must have one */
	th_rx(s, m, 3);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.drops[EP_DROP_HS_UDP_BAD_CHECKSUM], 2);
	EP_CHECK_EQ(th_rx_count(&t), 1);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(udp_length_beyond_the_ip_payload_is_dropped)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5000);
	struct rte_mbuf *m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5000, 64);

	rte_pktmbuf_mtod_offset(m, uint8_t *, 14 + 20 + 4)[1] += 8;
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.drops[EP_DROP_HS_UDP_BAD_LENGTH], 1);
	EP_CHECK_EQ(th_rx_count(&t), 0);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(connected_socket_wins_over_specific_and_wildcard_binds)
{
	struct hs_stack *s = th_stack();
	struct th_sock wild = th_open(s, 4), spec = th_open(s, 4), conn = th_open(s, 4);
	struct hs_sockaddr any = th_addr("0.0.0.0", 5000), a1 = th_addr("198.18.30.1", 5000);
	struct hs_sockaddr peer = th_addr("198.18.30.2", 4000);
	struct rte_mbuf *m[3];

	wild.k->shm->opt_flags = spec.k->shm->opt_flags = conn.k->shm->opt_flags = HS_OPT_REUSEADDR;
	EP_CHECK_EQ(hs_sock_bind(s, wild.k, &any, 0), 0);
	EP_CHECK_EQ(hs_sock_bind(s, spec.k, &a1, 0), 0);
	EP_CHECK_EQ(hs_sock_bind(s, conn.k, &a1, 0), 0);
	EP_CHECK_EQ(hs_sock_connect(s, conn.k, &peer), 0);
	m[0] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5000, 10);   /* the peer */
	m[1] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4001, 5000, 10);   /* another port */
	m[2] = th_udp_frame(0, "198.18.30.2", "198.18.30.5", 4000, 5000, 10);   /* other address */
	th_rx(s, m, 3);
	EP_CHECK_EQ(th_rx_count(&conn), 1);
	EP_CHECK_EQ(th_rx_count(&spec), 1);
	EP_CHECK_EQ(th_rx_count(&wild), 1);
	th_close(s, &wild);
	th_close(s, &spec);
	th_close(s, &conn);
	th_stack_free(s);
}

EP_TEST(bind_conflicts_follow_linux_rules)
{
	struct hs_stack *s = th_stack();
	struct th_sock a = th_open(s, 4), b = th_open(s, 4), c = th_open(s, 6), d = th_open(s, 6);
	struct hs_sockaddr any4 = th_addr("0.0.0.0", 5100), a1 = th_addr("198.18.30.1", 5100);
	struct hs_sockaddr any6 = th_addr("::", 5100);

	EP_CHECK_EQ(hs_sock_bind(s, a.k, &a1, 0), 0);
	EP_CHECK_EQ(hs_sock_bind(s, b.k, &any4, 0), -EADDRINUSE);      /* wildcard vs specific */
	EP_CHECK_EQ(hs_sock_bind(s, c.k, &any6, 0), -EADDRINUSE);      /* dual-stack covers IPv4 */
	d.k->shm->opt_flags = HS_OPT_V6ONLY;
	d.k->v6only = true;
	EP_CHECK_EQ(hs_sock_bind(s, d.k, &any6, 0), 0);                /* IPv6 only: no clash */
	EP_CHECK_EQ(hs_sock_bind(s, a.k, &a1, 0), -EINVAL);            /* bound already */
	b.k->shm->opt_flags = HS_OPT_REUSEADDR;
	EP_CHECK_EQ(hs_sock_bind(s, b.k, &any4, 0), -EADDRINUSE);      /* only one side reuses */
	a.k->shm->opt_flags = HS_OPT_REUSEADDR;
	EP_CHECK_EQ(hs_sock_bind(s, b.k, &any4, 0), 0);
	{
		struct hs_sockaddr other = th_addr("198.18.99.1", 5200);

		EP_CHECK_EQ(hs_sock_bind(s, c.k, &other, 0), -EINVAL);   /* IPv4 on IPv6 socket */
		other = th_addr("198.18.99.1", 5200);
		EP_CHECK_EQ(hs_sock_bind(s, th_open(s, 4).k, &other, 0), -EADDRNOTAVAIL);
	}
	th_stack_free(s);
}

EP_TEST(reuseport_group_keeps_one_flow_on_one_socket)
{
	struct hs_stack *s = th_stack();
	struct th_sock a = th_open(s, 4), b = th_open(s, 4);
	struct hs_sockaddr a1 = th_addr("198.18.30.1", 5300);
	struct rte_mbuf *m[32];

	a.k->shm->opt_flags = b.k->shm->opt_flags = HS_OPT_REUSEPORT;
	EP_CHECK_EQ(hs_sock_bind(s, a.k, &a1, 0), 0);
	EP_CHECK_EQ(hs_sock_bind(s, b.k, &a1, 0), 0);
	for (int i = 0; i < 32; i++)
		m[i] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", (uint16_t)(4000 + i / 8), 5300, 10);
	th_rx(s, m, 32);
	EP_CHECK_EQ(th_rx_count(&a) + th_rx_count(&b), 32);
	/* four flows of 8: each socket's count is a multiple of 8 */
	EP_CHECK_EQ(th_rx_count(&a) % 8, 0);
	th_close(s, &a);
	th_close(s, &b);
	th_stack_free(s);
}

EP_TEST(no_socket_answers_icmp_port_unreachable_with_the_invoking_header)
{
	struct hs_stack *s = th_stack();
	struct rte_mbuf *m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5999, 20), *out[4];
	const uint8_t *p;

	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.drops[EP_DROP_HS_NO_SOCKET], 1);
	EP_CHECK_EQ(th_take_tx(out, 4), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_MEM(p, TH_MAC_PEER, 6);
	EP_CHECK_EQ(p[14 + 9], IPPROTO_ICMP);
	EP_CHECK_EQ(p[34], 3);                  /* destination unreachable */
	EP_CHECK_EQ(p[35], 3);                  /* port */
	EP_CHECK_EQ(ep_csum(p + 34, rte_pktmbuf_data_len(out[0]) - 34), 0);
	EP_CHECK_EQ(p[42 + 9], IPPROTO_UDP);    /* the invoking IPv4 header */
	EP_CHECK_EQ(p[42 + 20 + 2] << 8 | p[42 + 20 + 3], 5999);
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(s->w[0]->st.icmp_unreach_sent, 1);
	th_stack_free(s);
}

EP_TEST(port_unreachable_for_a_connected_socket_becomes_its_so_error)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5400);
	struct hs_sockaddr peer = th_addr("198.18.30.2", 9);
	struct rte_mbuf *m, *out[4];
	uint8_t *p;
	unsigned int n;

	EP_CHECK_EQ(hs_sock_connect(s, t.k, &peer), 0);
	th_send(s, &t, "x", 1, NULL, 0);
	th_service(s, 0);
	n = th_take_tx(out, 4);
	EP_CHECK_EQ(n, 1);
	/* the peer answers with a port unreachable quoting our datagram */
	m = rte_pktmbuf_alloc(ep_test_pool());
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(14 + 20 + 8 + 28));
	memcpy(p, TH_MAC_PORT, 6);
	memcpy(p + 6, TH_MAC_PEER, 6);
	p[12] = 0x08;
	p[13] = 0;
	{
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + 14);
		const uint8_t *orig = rte_pktmbuf_mtod_offset(out[0], const uint8_t *, 14);

		memset(ip, 0, 20);
		ip->version_ihl = 0x45;
		ip->total_length = rte_cpu_to_be_16(20 + 8 + 28);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_ICMP;
		ip->src_addr = ((const struct rte_ipv4_hdr *)orig)->dst_addr;
		ip->dst_addr = ((const struct rte_ipv4_hdr *)orig)->src_addr;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		memset(p + 34, 0, 8);
		p[34] = 3;
		p[35] = 3;
		memcpy(p + 42, orig, 28);
		{
			uint16_t ck = ep_csum(p + 34, 36);

			memcpy(p + 36, &ck, 2);
		}
	}
	rte_pktmbuf_free(out[0]);
	ep_meta(m)->in_port = 0;
	th_rx(s, &m, 1);
	EP_CHECK_EQ(t.k->shm->so_error.v, ECONNREFUSED);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(arp_request_for_our_address_is_answered_and_its_sender_learnt)
{
	struct hs_stack *s = th_stack();
	static uint8_t b[64];
	static const uint8_t other[6] = { 2, 0, 0, 0, 0x30, 9 };
	struct rte_mbuf *m, *out[4];
	const uint8_t *p;
	struct hs_ip ip;

	m = ep_test_mbuf(b, tp_arp(b, other, 1, tp_ip4("198.18.30.9"), tp_ip4("198.18.30.5")));
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_take_tx(out, 4), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_MEM(p, other, 6);
	EP_CHECK_EQ(p[21], 2);                  /* reply */
	EP_CHECK_MEM(p + 22, TH_MAC_PORT, 6);
	EP_CHECK_EQ(p[31], 5);                  /* sender IP: the address asked for */
	rte_pktmbuf_free(out[0]);
	hs_parse_ip("198.18.30.9", &ip);
	EP_CHECK(hs_nb_find(s->w[0], 4, &ip) != NULL);
	th_stack_free(s);
}

EP_TEST(neighbour_solicitation_is_answered_with_an_advertisement)
{
	struct hs_stack *s = th_stack();
	static uint8_t b[128];
	uint8_t src[16], target[16];
	struct rte_mbuf *m, *out[4];
	const uint8_t *p;

	tp_ip6(src, "2001:db8:30::9");
	tp_ip6(target, "2001:db8:30::1");
	m = ep_test_mbuf(b, tp_ns(b, TH_MAC_PEER, src, target));
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_take_tx(out, 4), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_EQ(p[54], 136);                /* neighbour advertisement */
	EP_CHECK_MEM(p + 54 + 8, target, 16);
	EP_CHECK_MEM(p + 54 + 26, TH_MAC_PORT, 6);
	EP_CHECK_EQ(ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(p + 14), p + 54, 32,
				     IPPROTO_ICMPV6), 0);
	rte_pktmbuf_free(out[0]);
	th_stack_free(s);
}

EP_TEST(echo_request_to_our_address_is_answered)
{
	struct hs_stack *s = th_stack();
	static uint8_t b[256];
	struct tp_spec sp = tp_default(0, IPPROTO_ICMP);
	struct rte_mbuf *m, *out[4];
	const uint8_t *p;

	memcpy(sp.dmac, TH_MAC_PORT, 6);
	memcpy(sp.smac, TH_MAC_PEER, 6);
	sp.src4 = tp_ip4("198.18.30.2");
	sp.dst4 = tp_ip4("198.18.30.1");
	m = ep_test_mbuf(b, tp_build(b, &sp));
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_take_tx(out, 4), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_EQ(p[34], 0);                  /* echo reply */
	EP_CHECK_EQ(ep_csum(p + 34, rte_pktmbuf_data_len(out[0]) - 34), 0);
	EP_CHECK_EQ(p[29], 1);                  /* source: our 198.18.30.1 */
	EP_CHECK_EQ(p[33], 2);                  /* destination: the asker */
	rte_pktmbuf_free(out[0]);
	th_stack_free(s);
}

EP_TEST(frames_for_other_hosts_and_protocols_are_counted)
{
	struct hs_stack *s = th_stack();
	struct rte_mbuf *m[2];
	static uint8_t b[256];
	struct tp_spec sp = tp_default(0, IPPROTO_TCP);

	m[0] = th_udp_frame(0, "198.18.30.2", "198.18.30.77", 4000, 5000, 10);
	memcpy(sp.dmac, TH_MAC_PORT, 6);
	sp.src4 = tp_ip4("198.18.30.2");
	sp.dst4 = tp_ip4("198.18.30.1");
	m[1] = ep_test_mbuf(b, tp_build(b, &sp));
	th_rx(s, m, 2);
	EP_CHECK_EQ(th_stage(s, "parse")->stats.drops[EP_DROP_HS_NOT_LOCAL], 1);
	EP_CHECK_EQ(th_stage(s, "icmp")->stats.drops[EP_DROP_LOCAL_UNSUPPORTED], 1);
	th_stack_free(s);
}

static void
reassembly_case(int v6)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, v6 ? "2001:db8:30::1" : "198.18.30.1", 5500);
	struct rte_mbuf *frags[16];
	struct hs_desc d = { 0 };
	static uint8_t buf[2000];
	int n;

	n = th_fragment(th_udp_frame(v6, v6 ? "2001:db8:30::2" : "198.18.30.2",
				     v6 ? "2001:db8:30::1" : "198.18.30.1", 4000, 5500, 1860),
			v6, 1500, frags);
	EP_CHECK_EQ(n, 2);
	/* second fragment first: order does not matter */
	th_rx(s, &frags[1], 1);
	EP_CHECK_EQ(th_rx_count(&t), 0);
	th_rx(s, &frags[0], 1);
	EP_CHECK_EQ(th_rx_count(&t), 1);
	EP_CHECK_EQ(th_recv(&t, &d, buf, sizeof(buf)), 1860);
	EP_CHECK_EQ(buf[1859], (uint8_t)(0x30 + 1859));
	EP_CHECK_EQ(s->w[0]->st.reasm_done, 1);
	EP_CHECK_EQ(th_stage(s, "reasm")->stats.pkts_consumed, 1);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(ipv4_fragments_of_an_1860_byte_datagram_are_reassembled)
{
	reassembly_case(0);
}

EP_TEST(ipv6_fragments_of_an_1860_byte_datagram_are_reassembled)
{
	reassembly_case(1);
}

EP_TEST(a_datagram_missing_a_fragment_expires_as_reassembly_timeout)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5500);
	struct rte_mbuf *frags[16];
	int n = th_fragment(th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5500, 1860), 0,
			    1500, frags);

	th_rx(s, &frags[0], 1);
	rte_pktmbuf_free_bulk(&frags[1], (unsigned int)n - 1);
	/* the service's expiry, reasm_timeout_ms (3 s) later */
	th_service(s, rte_rdtsc() + rte_get_tsc_hz() * 4);
	EP_CHECK_EQ(th_stage(s, "reasm")->stats.drops[EP_DROP_HS_REASM_TIMEOUT], 1);
	EP_CHECK_EQ(th_rx_count(&t), 0);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(full_ring_counts_the_drop_on_the_socket)
{
	struct hs_params p;
	struct hs_stack *s;
	struct th_sock t;
	struct rte_mbuf *m[20];

	hs_params_default(&p);
	p.max_sockets = 8;
	p.rx_slots = 16;
	p.tx_slots = 16;
	p.rx_bytes = 65536;
	p.tx_bytes = 65536;
	s = th_stack_params(&p);
	t = th_bound(s, "198.18.30.1", 5600);
	for (int i = 0; i < 20; i++)
		m[i] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5600, 10);
	th_rx(s, m, 20);
	EP_CHECK_EQ(th_rx_count(&t), 16);
	EP_CHECK_EQ(t.k->st.rx_ring_full, 4);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.drops[EP_DROP_HS_RING_FULL], 4);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(a_wake_byte_goes_out_only_when_the_reader_cleared_its_flag)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5700);
	struct rte_mbuf *m;
	char b[16];

	t.k->shm->rx_signalled.v = 0;
	m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5700, 10);
	th_rx(s, &m, 1);
	EP_CHECK_EQ(recv(t.app_fd, b, sizeof(b), MSG_DONTWAIT), 1);
	EP_CHECK_EQ(t.k->shm->rx_signalled.v, 1);
	/* the reader has not cleared the flag: no more bytes */
	m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5700, 10);
	th_rx(s, &m, 1);
	EP_CHECK_EQ(recv(t.app_fd, b, sizeof(b), MSG_DONTWAIT), -1);
	EP_CHECK_EQ(t.k->st.wakeups, 1);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(an_application_that_moves_its_consumer_index_wrongly_is_no_longer_served)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 5800);
	struct rte_mbuf *m = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 4000, 5800, 10);

	t.k->shm->rx_cons.v = 12345;    /* beyond anything published */
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_stage(s, "udp")->stats.drops[EP_DROP_HS_APP_RING_CORRUPT], 1);
	EP_CHECK(t.k->broken);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(policy_priority_sheds_low_priority_datagrams_above_the_watermark)
{
	struct hs_params p;
	struct hs_stack *s;
	struct th_sock t;
	struct ep_err err;
	struct rte_mbuf *m[16];

	hs_params_default(&p);
	p.max_sockets = 8;
	p.rx_slots = 16;
	p.tx_slots = 16;
	p.rx_bytes = 65536;
	p.tx_bytes = 65536;
	s = th_stack_params(&p);
	t = th_bound(s, "198.18.30.1", 5900);
	EP_CHECK_EQ(hs_policy_add(s, "bulk rport=1000-1999 priority=1", -1, &err), 0);
	EP_CHECK_EQ(hs_policy_add(s, "tel rport=2000 priority=7", -1, &err), 0);
	/* 12 bulk datagrams: above 75 % of 16 slots, the rest are shed */
	for (int i = 0; i < 16; i++)
		m[i] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 1000, 5900, 10);
	th_rx(s, m, 16);
	EP_CHECK_EQ(th_rx_count(&t), 13);
	EP_CHECK_EQ(t.k->st.rx_low_prio_shed, 3);
	/* telemetry still gets the last slots */
	for (int i = 0; i < 3; i++)
		m[i] = th_udp_frame(0, "198.18.30.2", "198.18.30.1", 2000, 5900, 10);
	th_rx(s, m, 3);
	EP_CHECK_EQ(th_rx_count(&t), 16);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(policy_redirect_forwards_the_datagram_to_the_central_node)
{
	struct hs_stack *s = th_stack();
	struct ep_err err;
	struct rte_mbuf *m, *out[4];
	const uint8_t *p;

	EP_CHECK_EQ(hs_policy_add(s, "core lport=7000 redirect=198.18.30.2", -1, &err), 0);
	m = th_udp_frame(0, "198.18.30.9", "198.18.30.1", 4000, 7000, 100);
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_take_tx(out, 4), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_MEM(p, TH_MAC_PEER, 6);        /* to the central node's MAC */
	EP_CHECK_EQ(p[14 + 8], 63);             /* TTL decremented */
	EP_CHECK_EQ(p[14 + 19], 1);             /* destination unchanged: 198.18.30.1 */
	EP_CHECK(ep_ipv4_cksum_ok(p + 14, 20));
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(s->w[0]->st.redirected, 1);
	th_stack_free(s);
}
