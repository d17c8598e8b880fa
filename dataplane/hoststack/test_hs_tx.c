/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send path (the worker's service hook): datagrams built from a tx
 * ring, checksums, fragments, neighbour resolution, hairpin, doorbells,
 * and what a hostile application's descriptors and indices do.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "test_hs.h"

void hs_worker_add_app(struct hs_stack *s, struct hs_app *a);
void hs_worker_del_app(struct hs_stack *s, struct hs_app *a);
int hs_memfd(const char *name, uint32_t size, void **map);

static uint8_t payload[70000];

static void
fill(void)
{
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
}

/* The UDP checksum of a whole (unfragmented) frame verifies. */
static int
udp_ok(const uint8_t *p, uint32_t len)
{
	if (p[12] == 0x08) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + 14);

		return ep_ipv4_cksum_ok(ip, 20) &&
		       rte_ipv4_udptcp_cksum_verify(ip, p + 34) == 0;
	}
	return ep_ipv6_l4_cksum((const struct rte_ipv6_hdr *)(p + 14), p + 54, len - 54,
				IPPROTO_UDP) == 0;
}

static void
builds_one(int v6)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, v6 ? "2001:db8:30::1" : "198.18.30.1", 6000);
	struct rte_mbuf *out[8];
	const uint8_t *p;

	fill();
	EP_CHECK_EQ(th_send(s, &t, payload, 1000, v6 ? "2001:db8:30::2" : "198.18.30.2", 9000), 0);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_MEM(p, TH_MAC_PEER, 6);
	EP_CHECK_MEM(p + 6, TH_MAC_PORT, 6);
	EP_CHECK(udp_ok(p, rte_pktmbuf_data_len(out[0])));
	EP_CHECK_EQ(p[(v6 ? 54 : 34)] << 8 | p[(v6 ? 54 : 34) + 1], 6000);     /* source port */
	EP_CHECK_EQ(p[(v6 ? 54 : 34) + 2] << 8 | p[(v6 ? 54 : 34) + 3], 9000);
	EP_CHECK_MEM(p + (v6 ? 62 : 42), payload, 1000);
	EP_CHECK_EQ(t.k->shm->tx_cons.v, 1);            /* the slot is given back */
	EP_CHECK_EQ(t.k->st.tx_dgrams, 1);
	rte_pktmbuf_free(out[0]);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(ipv4_datagram_is_built_with_its_checksums)
{
	builds_one(0);
}

EP_TEST(ipv6_datagram_is_built_with_its_checksums)
{
	builds_one(1);
}

EP_TEST(datagram_of_1860_bytes_leaves_as_two_fragments_for_a_1500_mtu)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 6001);
	struct rte_mbuf *out[8];
	const struct rte_ipv4_hdr *ip0, *ip1;

	fill();
	EP_CHECK_EQ(th_send(s, &t, payload, 1860, "198.18.30.2", 9000), 0);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 2);
	ip0 = rte_pktmbuf_mtod_offset(out[0], const struct rte_ipv4_hdr *, 14);
	ip1 = rte_pktmbuf_mtod_offset(out[1], const struct rte_ipv4_hdr *, 14);
	EP_CHECK_EQ(rte_be_to_cpu_16(ip0->total_length), 1500);
	EP_CHECK_EQ(rte_be_to_cpu_16(ip0->fragment_offset), RTE_IPV4_HDR_MF_FLAG);
	EP_CHECK_EQ(rte_be_to_cpu_16(ip1->fragment_offset), 1480 / 8);
	EP_CHECK_EQ(rte_be_to_cpu_16(ip1->total_length), 20 + 8 + 1860 - 1480);
	EP_CHECK_EQ(ip0->packet_id, ip1->packet_id);
	EP_CHECK(ep_ipv4_cksum_ok(ip0, 20) && ep_ipv4_cksum_ok(ip1, 20));
	EP_CHECK_EQ(s->w[0]->st.fragments_out, 2);
	/* joined again (RFC 791), the datagram is the payload sent and its
	 * UDP checksum, computed across both fragments, verifies */
	{
		static uint8_t frame[14 + 20 + 8 + 1860];

		memcpy(frame, rte_pktmbuf_mtod(out[0], const uint8_t *), 14 + 1500);
		memcpy(frame + 14 + 1500, (const uint8_t *)ip1 + 20, 1860 + 8 - 1480);
		((struct rte_ipv4_hdr *)(frame + 14))->total_length = rte_cpu_to_be_16(20 + 8 + 1860);
		((struct rte_ipv4_hdr *)(frame + 14))->fragment_offset = 0;
		EP_CHECK_EQ(rte_ipv4_udptcp_cksum_verify((const struct rte_ipv4_hdr *)(frame + 14),
							 frame + 34), 0);
		EP_CHECK_EQ(frame[34] << 8 | frame[35], 6001);
		EP_CHECK_EQ(frame[38] << 8 | frame[39], 8 + 1860);
		EP_CHECK_MEM(frame + 42, payload, 1860);
	}
	rte_pktmbuf_free_bulk(out, 2);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(ipv6_fragments_of_two_datagrams_carry_different_identifications)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "2001:db8:30::1", 6002);
	struct rte_mbuf *out[8];
	uint32_t id[4];

	fill();
	th_send(s, &t, payload, 1860, "2001:db8:30::2", 9000);
	th_send(s, &t, payload, 1860, "2001:db8:30::2", 9000);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 4);
	for (int i = 0; i < 4; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(out[i], const uint8_t *);

		EP_CHECK_EQ(p[14 + 6], IPPROTO_FRAGMENT);
		memcpy(&id[i], p + 54 + 4, 4);
	}
	EP_CHECK_EQ(id[0], id[1]);
	EP_CHECK_EQ(id[2], id[3]);
	EP_CHECK(id[0] != id[2]);
	rte_pktmbuf_free_bulk(out, 4);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(unknown_neighbour_is_resolved_by_arp_and_the_datagram_then_leaves)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 6003);
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0x30, 0x44 };
	static uint8_t b[64];
	struct rte_mbuf *out[8], *m;
	const uint8_t *p;

	fill();
	th_send(s, &t, "hello", 5, "198.18.30.44", 9000);
	th_send(s, &t, payload, 1860, "198.18.30.44", 9000);    /* two fragments */
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);             /* only the ARP request */
	p = rte_pktmbuf_mtod(out[0], const uint8_t *);
	EP_CHECK_EQ(p[12] << 8 | p[13], RTE_ETHER_TYPE_ARP);
	EP_CHECK_EQ(p[0], 0xff);
	EP_CHECK_EQ(p[41], 44);                 /* target IP */
	rte_pktmbuf_free(out[0]);
	/* the reply: the held datagram goes out */
	tp_arp(b, mac, 2, tp_ip4("198.18.30.44"), tp_ip4("198.18.30.1"));
	memcpy(b, TH_MAC_PORT, 6);
	m = ep_test_mbuf(b, 60);
	th_rx(s, &m, 1);
	EP_CHECK_EQ(th_take_tx(out, 8), 3);
	for (int i = 0; i < 3; i++) {
		p = rte_pktmbuf_mtod(out[i], const uint8_t *);
		EP_CHECK_MEM(p, mac, 6);
		EP_CHECK_EQ(p[12] << 8 | p[13], RTE_ETHER_TYPE_IPV4);
	}
	rte_pktmbuf_free_bulk(out, 3);
	EP_CHECK_EQ(th_stage(s, "service")->stats.drops[EP_DROP_NEIGHBOR_UNRESOLVED], 0);
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(datagram_to_our_own_address_is_hairpinned_to_the_local_socket)
{
	struct hs_stack *s = th_stack();
	struct th_sock a = th_bound(s, "198.18.30.1", 6004), b = th_bound(s, "198.18.30.5", 6005);
	struct rte_mbuf *out[8];
	struct hs_desc d = { 0 };
	uint8_t buf[2000];

	fill();
	th_send(s, &a, payload, 1860, "198.18.30.5", 6005);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 0);             /* nothing on the wire */
	EP_CHECK_EQ(th_recv(&b, &d, buf, sizeof(buf)), 1860);
	EP_CHECK_MEM(buf, payload, 1860);
	EP_CHECK_EQ(rte_be_to_cpu_16(d.port), 6004);
	EP_CHECK_EQ(s->w[0]->st.hairpin, 1);
	th_close(s, &a);
	th_close(s, &b);
	th_stack_free(s);
}

EP_TEST(descriptor_outside_the_area_is_dropped_and_counted)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 6006);
	struct rte_mbuf *out[8];

	th_send(s, &t, "x", 1, "198.18.30.2", 9000);
	t.k->tx_desc[0].off = t.k->tx_bytes - 10;       /* span runs past the end */
	t.k->tx_desc[0].len = 100;
	th_send(s, &t, "y", 1, "198.18.30.2", 9000);
	t.k->tx_desc[1].flags = 0;                      /* "connected", and it is not */
	th_send(s, &t, "z", 1, "198.18.30.2", 0);       /* port 0 */
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 0);
	EP_CHECK_EQ(th_stage(s, "service")->stats.drops[EP_DROP_HS_TX_BAD_DESC], 3);
	EP_CHECK_EQ(t.k->st.tx_bad_desc, 3);
	EP_CHECK_EQ(t.k->shm->tx_cons.v, 3);            /* consumed all the same */
	th_close(s, &t);
	th_stack_free(s);
}

EP_TEST(impossible_producer_index_stops_serving_the_socket)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 6007);
	struct rte_mbuf *out[8];

	th_send(s, &t, "x", 1, "198.18.30.2", 9000);
	t.k->shm->tx_prod.v = 100000;
	th_service(s, 0);
	EP_CHECK(t.k->broken);
	EP_CHECK_EQ(th_take_tx(out, 8), 0);
	th_close(s, &t);
	th_stack_free(s);
}

/* An attached application: its app region, as HELLO makes it. */
static struct hs_app *
app(struct hs_stack *s)
{
	struct hs_app *a = calloc(1, sizeof(*a));
	struct hs_app_shm hdr = { .n_workers = 1, .db_slots = 8 };
	void *map;

	a->id = 77;
	a->conn_fd = -1;
	hs_app_layout(&hdr);
	a->shm_fd = hs_memfd("th_app", hdr.region_size, &map);
	a->shm = map;
	*a->shm = hdr;
	a->region_size = hdr.region_size;
	a->db_slots = 8;
	hs_worker_add_app(s, a);
	return a;
}

static void
app_free(struct hs_stack *s, struct hs_app *a)
{
	hs_worker_del_app(s, a);
	munmap(a->shm, a->region_size);
	close(a->shm_fd);
	free(a);
}

EP_TEST(doorbells_from_an_application_region_activate_their_sockets)
{
	struct hs_stack *s = th_stack();
	struct hs_app *a = app(s);
	struct th_sock t = th_bound(s, "198.18.30.1", 6008);
	struct rte_mbuf *out[8];

	th_send(s, &t, "x", 1, "198.18.30.2", 9000);
	/* undo th_send's shortcut: only the doorbell may activate it */
	s->w[0]->n_active[4] = 0;
	t.k->active = false;
	EP_CHECK_EQ(hs_db_push(&a->shm->ring[0], hs_app_db_slots(a->shm, 0), 8, t.k->id), 0);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(s->w[0]->st.doorbells, 1);
	/* drained: it leaves the active list and clears tx_pending */
	EP_CHECK_EQ(t.k->shm->tx_pending.v, 0);
	EP_CHECK(!t.k->active);
	/* an overflowed ring asks for a rescan, which finds the socket */
	th_send(s, &t, "y", 1, "198.18.30.2", 9000);
	s->w[0]->n_active[4] = 0;
	t.k->active = false;
	a->shm->ring[0].rescan.v = 1;
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(s->w[0]->st.rescans, 1);
	/* doorbells left by an application that goes are still served */
	th_send(s, &t, "z", 1, "198.18.30.2", 9000);
	s->w[0]->n_active[4] = 0;
	t.k->active = false;
	hs_db_push(&a->shm->ring[0], hs_app_db_slots(a->shm, 0), 8, t.k->id);
	app_free(s, a);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	rte_pktmbuf_free(out[0]);
	th_close(s, &t);
	th_stack_free(s);
}

/* A wait that runs to its timeout and is followed at once by a doorbell
 * is a wake-up that did not come: counted (late_doorbell), so that a lost
 * kick shows in hs-stats instead of as a latency tail.  A kicked wait is
 * not a timeout. */
EP_TEST(doorbell_after_a_timed_out_wait_counts_as_a_late_wake_up)
{
	struct hs_stack *s = th_stack();
	struct hs_wctx *c = s->w[0];
	struct hs_app *a = app(s);
	struct th_sock t = th_bound(s, "198.18.30.1", 6010);
	struct rte_mbuf *out[8];
	uint64_t one = 1, v;

	s->p.spin_us = 0;
	th_service(s, 0);
	/* the kick that adding the application left */
	if (read(s->kick_fd[0], &v, sizeof(v)) < 0)
		EP_CHECK_EQ(errno, EAGAIN);
	hs_wait(c->w, 1);                       /* nothing to wake it: 1 us timeout */
	EP_CHECK_EQ(c->st.wait_timeouts, 1);
	EP_CHECK_EQ(c->st.waits, 1);
	th_send(s, &t, "x", 1, "198.18.30.2", 9000);
	c->n_active[4] = 0;
	t.k->active = false;
	EP_CHECK_EQ(hs_db_push(&a->shm->ring[0], hs_app_db_slots(a->shm, 0), 8, t.k->id), 0);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(c->st.late_doorbell, 1);
	EP_CHECK_EQ(c->st.late_rx, 0);
	/* a kick ends the wait: no timeout, nothing late */
	c->last_busy_tsc = 0;
	EP_CHECK_EQ(write(s->kick_fd[0], &one, sizeof(one)), (ssize_t)sizeof(one));
	hs_wait(c->w, 1000000);
	EP_CHECK_EQ(c->st.kicks_seen, 1);
	EP_CHECK_EQ(c->st.wait_timeouts, 1);
	th_send(s, &t, "y", 1, "198.18.30.2", 9000);
	th_service(s, 0);
	EP_CHECK_EQ(th_take_tx(out, 8), 1);
	rte_pktmbuf_free(out[0]);
	EP_CHECK_EQ(c->st.late_doorbell, 1);
	app_free(s, a);
	th_close(s, &t);
	th_stack_free(s);
}

/* A control call (ep_worker_call: configuration, statistics) posts its
 * message and writes the engine's message eventfd: that ends the worker's
 * wait at once instead of after its timeout, and the count is taken so the
 * next wait blocks again. */
EP_TEST(control_message_ends_the_wait_not_its_timeout)
{
	struct hs_stack *s = th_stack();
	struct hs_wctx *c = s->w[0];
	uint64_t v, timeouts;

	s->p.spin_us = 0;
	EP_CHECK(c->w->power != NULL && c->w->power->msg_fd >= 0);
	if (c->w->power == NULL || c->w->power->msg_fd < 0) {
		th_stack_free(s);
		return;
	}
	if (read(s->kick_fd[0], &v, sizeof(v)) < 0)
		EP_CHECK_EQ(errno, EAGAIN);
	timeouts = c->st.wait_timeouts;
	EP_CHECK_EQ(write(c->w->power->msg_fd, &(uint64_t){ 1 }, sizeof(uint64_t)), 8);
	hs_wait(c->w, 2000000);                 /* 2 s bound: the message ends it */
	EP_CHECK_EQ(c->st.wait_timeouts, timeouts);
	EP_CHECK_EQ(c->st.kicks_seen, 0);
	EP_CHECK(read(c->w->power->msg_fd, &v, sizeof(v)) < 0 && errno == EAGAIN);
	hs_wait(c->w, 1);                       /* nothing posted: its timeout */
	EP_CHECK_EQ(c->st.wait_timeouts, timeouts + 1);
	th_stack_free(s);
}

/* The worker page says whether the worker keeps its CPU between packets
 * (yields for spin_us after traffic on a link that cannot wake it): the
 * preload library does not busy-poll against such a worker.  One that
 * blocks says it does not. */
EP_TEST(worker_page_says_whether_the_worker_keeps_its_cpu)
{
	struct hs_stack *s = th_stack();
	struct hs_wctx *c = s->w[0];
	const struct hs_worker_shm *ws = &s->wshm[c->idx];
	uint64_t waits;

	s->p.spin_us = 1000;
	c->last_busy_tsc = rte_rdtsc();
	waits = c->st.waits;
	hs_wait(c->w, 1);                       /* just after traffic: yields */
	EP_CHECK_EQ(ws->polls.v, 1);
	EP_CHECK_EQ(c->st.waits, waits);
	EP_CHECK_EQ(ws->sleeping.v, 0);
	s->p.spin_us = 0;
	hs_wait(c->w, 1);                       /* blocks (1 us timeout) */
	EP_CHECK_EQ(ws->polls.v, 0);
	EP_CHECK_EQ(c->st.waits, waits + 1);
	th_stack_free(s);
}

EP_TEST(policy_rate_limit_and_drop_apply_on_the_send_path)
{
	struct hs_stack *s = th_stack();
	struct th_sock t = th_bound(s, "198.18.30.1", 6009);
	struct ep_err err;
	struct rte_mbuf *out[16];

	EP_CHECK_EQ(hs_policy_add(s, "nope dir=tx rport=9001 action=drop", -1, &err), 0);
	EP_CHECK_EQ(hs_policy_add(s, "lim dir=tx rport=9002 rate=8M burst=3000", -1, &err), 0);
	for (int i = 0; i < 4; i++) {
		th_send(s, &t, payload, 1000, "198.18.30.2", 9001);
		th_send(s, &t, payload, 1000, "198.18.30.2", 9002);
	}
	th_service(s, 0);
	/* nothing for 9001; 3 of the 4 to 9002 fit the 3000-byte bucket */
	EP_CHECK_EQ(th_take_tx(out, 16), 3);
	rte_pktmbuf_free_bulk(out, 3);
	EP_CHECK_EQ(th_stage(s, "service")->stats.drops[EP_DROP_HS_POLICY_DROP], 4);
	EP_CHECK_EQ(th_stage(s, "service")->stats.drops[EP_DROP_HS_POLICY_RATE], 1);
	th_close(s, &t);
	th_stack_free(s);
}

/* A port that refuses (the peer's ring is full) keeps its queue: for a
 * second while its link is up (a peer starved of CPU), for 100 ms once its
 * link is down (a peer gone); then the queue is dropped as tx_full. */
EP_TEST(refusing_port_keeps_its_queue_1s_with_link_up_100ms_with_link_down)
{
	static const uint8_t frame[60] = { 2, 0, 0, 0, 0x30, 2, 2, 0, 0, 0, 0x30, 1, 8, 0 };
	struct hs_stack *s = th_stack();
	struct hs_wctx *c = s->w[0];
	uint64_t *tx_full = &th_stage(s, "tx")->stats.drops[EP_DROP_TX_FULL];
	uint16_t port_id = th_eng.ports[0].port_id, kept;

	for (int i = 0; i < 3000 && c->n_txq[0] < 100; i++) {
		hs_port_queue(c, 0, ep_test_mbuf(frame, sizeof(frame)));
		hs_flush_port(c, 0);
	}
	kept = c->n_txq[0];
	EP_CHECK(kept >= 100);                  /* the ring refused; nothing lost */
	EP_CHECK_EQ(*tx_full, 0);
	c->txq_stall_tsc[0] = rte_rdtsc() - c->tsc_hz / 2;
	hs_flush_port(c, 0);
	EP_CHECK_EQ(c->n_txq[0], kept);         /* link up, 0.5 s: still kept */
	c->txq_stall_tsc[0] = rte_rdtsc() - 2 * c->tsc_hz;
	hs_flush_port(c, 0);
	EP_CHECK_EQ(c->n_txq[0], 0);            /* link up, 2 s: dropped */
	EP_CHECK_EQ(*tx_full, kept);
	for (int i = 0; i < 10; i++)
		hs_port_queue(c, 0, ep_test_mbuf(frame, sizeof(frame)));
	hs_flush_port(c, 0);
	EP_CHECK_EQ(c->n_txq[0], 10);
	EP_CHECK_EQ(rte_eth_dev_set_link_down(port_id), 0);
	c->txq_stall_tsc[0] = rte_rdtsc() - c->tsc_hz / 5;
	hs_flush_port(c, 0);
	EP_CHECK_EQ(c->n_txq[0], 0);            /* link down, 200 ms: dropped */
	EP_CHECK_EQ(*tx_full, kept + 10u);
	EP_CHECK_EQ(rte_eth_dev_set_link_up(port_id), 0);
	th_stack_free(s);
}
