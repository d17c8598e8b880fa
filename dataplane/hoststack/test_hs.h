/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared fixture of the host stack's unit tests: an engine with one port,
 * a net_ring vdev whose tx ring is its rx ring (what the stack transmits
 * comes back on rx, where a test reads it), a small stack with one worker and its
 * five stages, and the application's side of a socket driven through
 * hs_ring.h directly (what the preload library does, without it).
 *
 *   port 0 "m"  02:00:00:00:30:01  198.18.30.1/24, 198.18.30.5/24
 *                                  2001:db8:30::1/64
 *   peer        02:00:00:00:30:02  198.18.30.2, 2001:db8:30::2 (static neighbour)
 */
#ifndef EP_TEST_HS_H
#define EP_TEST_HS_H

#define ALLOW_EXPERIMENTAL_API 1
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_ip_frag.h>
#include <rte_malloc.h>

#include "engine_internal.h"
#include "ep_parse.h"
#include "ep_test.h"
#include "hoststack.h"
#include "hs_ring.h"
#include "test_pkt.h"

static const uint8_t TH_MAC_PORT[6] = { 2, 0, 0, 0, 0x30, 1 };
static const uint8_t TH_MAC_PEER[6] = { 2, 0, 0, 0, 0x30, 2 };

int hs_stack_workers_ready(struct hs_stack *s, struct ep_err *err);

static struct ep_engine th_eng;

static inline void
th_engine_init(void)
{
	struct ep_port *p = &th_eng.ports[0];
	struct rte_eth_conf conf;

	if (th_eng.qsbr != NULL)
		return;
	th_eng.qsbr = rte_zmalloc("th_qsbr", rte_rcu_qsbr_get_memsize(4), RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(th_eng.qsbr, 4);
	th_eng.n_ports = 1;
	th_eng.burst = 32;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "m");
	memcpy(&p->mac, TH_MAC_PORT, 6);
	p->v4[0].addr = htonl(tp_ip4("198.18.30.1"));
	p->v4[0].plen = 24;
	p->v4[1].addr = htonl(tp_ip4("198.18.30.5"));
	p->v4[1].plen = 24;
	p->n_v4 = 2;
	tp_ip6(p->v6[0].addr, "2001:db8:30::1");
	p->v6[0].plen = 64;
	p->n_v6 = 1;
	p->pool = ep_test_pool();
	memset(&conf, 0, sizeof(conf));
	/* net_ring without arguments: one ring per queue pair, tx into rx. */
	if (rte_dev_probe("net_ring_th") < 0 ||
	    rte_eth_dev_get_port_by_name("net_ring_th", &p->port_id) != 0 ||
	    rte_eth_dev_configure(p->port_id, 1, 1, &conf) < 0 ||
	    rte_eth_rx_queue_setup(p->port_id, 0, 256, SOCKET_ID_ANY, NULL, p->pool) < 0 ||
	    rte_eth_tx_queue_setup(p->port_id, 0, 256, SOCKET_ID_ANY, NULL) < 0 ||
	    rte_eth_dev_start(p->port_id) < 0) {
		printf("    (fixture: net_ring port failed)\n");
		abort();
	}
	p->started = true;
}

/* What the stack sent since the last call (frames, in order). */
static inline unsigned int
th_take_tx(struct rte_mbuf **out, unsigned int max)
{
	return rte_eth_rx_burst(th_eng.ports[0].port_id, 0, out, (uint16_t)max);
}

static inline void
th_drain_tx(void)
{
	struct rte_mbuf *m[32];
	unsigned int n;

	while ((n = th_take_tx(m, 32)) != 0)
		rte_pktmbuf_free_bulk(m, n);
}

static inline struct hs_stack *
th_stack_params(struct hs_params *p)
{
	static unsigned int id;
	struct ep_err err = { "" };
	struct hs_stack *s;
	struct ep_worker *w;
	struct hs_wctx *c;

	th_engine_init();
	s = hs_stack_create(&th_eng, p, &err);
	w = ep_worker_create(&th_eng, 200 + id++, "th", &err);
	if (s == NULL || w == NULL) {
		printf("    (fixture: %s)\n", err.msg);
		abort();
	}
	c = hs_wctx_create(s, w, 0, &err);
	if (c == NULL)
		abort();
	s->w[0] = c;
	s->n_w = 1;
	if (hs_stack_workers_ready(s, &err) < 0 || hs_routes_build(s, &err) < 0 ||
	    hs_neigh_static_add(s, "198.18.30.2", "02:00:00:00:30:02", &err) < 0 ||
	    hs_neigh_static_add(s, "2001:db8:30::2", "02:00:00:00:30:02", &err) < 0) {
		printf("    (fixture: %s)\n", err.msg);
		abort();
	}
	w->pipeline_ctx = c;
	w->txq[0] = 0;
	for (size_t i = 0; i < RTE_DIM(hs_stages); i++) {
		ep_worker_add_stage(w, hs_stages[i].name, hs_stages[i].fn, c, &err);
		if (strcmp(hs_stages[i].name, "udp") == 0)
			c->stage_udp = &w->stages[w->n_stages - 1];
		if (strcmp(hs_stages[i].name, "reasm") == 0)
			c->stage_reasm = &w->stages[w->n_stages - 1];
	}
	c->touch_seq = 1;
	c->rt = s->routes;
	for (int i = 0; i < s->n_static_nb; i++)
		hs_nb_learn(c, s->static_nb[i].family, &s->static_nb[i].ip, &s->static_nb[i].mac,
			    s->static_nb[i].port, true);
	hs_global = s;
	th_drain_tx();
	return s;
}

static inline struct hs_stack *
th_stack(void)
{
	struct hs_params p;

	hs_params_default(&p);
	p.max_sockets = 64;
	p.rx_slots = 256;
	p.tx_slots = 256;
	p.rx_bytes = 256 * 1024;
	p.tx_bytes = 256 * 1024;
	p.db_slots = 64;
	p.reasm_entries = 64;
	return th_stack_params(&p);
}

static inline void
th_stack_free(struct hs_stack *s)
{
	struct ep_worker *w = s->w[0]->w;

	hs_global = NULL;
	hs_stack_free(s);
	ep_worker_free(w);
	th_drain_tx();
}

static inline struct ep_stage *
th_stage(struct hs_stack *s, const char *name)
{
	struct ep_worker *w = s->w[0]->w;

	if (strcmp(name, "service") == 0)
		return &w->service_stage;
	if (strcmp(name, "tx") == 0)
		return &w->tx_stage;
	for (int i = 0; i < w->n_stages; i++)
		if (strcmp(w->stages[i].name, name) == 0)
			return &w->stages[i];
	abort();
}

/* ---- the application's side of a socket ---- */

struct th_sock {
	struct hs_sock *k;
	int app_fd;             /* the end the application would hold */
	uint32_t tx_head;
};

/* A socket of family 4 or 6, as OPEN makes it (not bound yet). */
static inline struct th_sock
th_open(struct hs_stack *s, uint8_t family)
{
	struct th_sock t = { 0 };
	struct ep_err err;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		abort();
	t.k = hs_sock_open(s, family, sv[1], 0, (uint64_t)sv[0], NULL, &err);
	if (t.k == NULL)
		abort();
	t.app_fd = sv[0];
	return t;
}

static inline struct hs_sockaddr
th_addr(const char *ip, uint16_t port)
{
	struct hs_sockaddr a = { .port = rte_cpu_to_be_16(port) };
	struct hs_ip x;

	a.family = (uint8_t)hs_parse_ip(ip, &x);
	memcpy(a.addr, x.b, 16);
	return a;
}

static inline struct th_sock
th_bound(struct hs_stack *s, const char *ip, uint16_t port)
{
	struct hs_sockaddr a = th_addr(ip, port);
	struct th_sock t = th_open(s, a.family);

	if (hs_sock_bind(s, t.k, &a, 0) != 0)
		abort();
	return t;
}

static inline void
th_close(struct hs_stack *s, struct th_sock *t)
{
	close(t->app_fd);
	hs_sock_close(s, t->k);
}

/* Datagrams waiting in the socket's rx ring. */
static inline uint32_t
th_rx_count(const struct th_sock *t)
{
	return t->k->shm->rx_prod.v - t->k->shm->rx_cons.v;
}

/* Take the next received datagram: its descriptor, payload copied to @p buf. */
static inline int
th_recv(struct th_sock *t, struct hs_desc *d, uint8_t *buf, uint32_t max)
{
	struct hs_sock_shm *h = t->k->shm;
	uint32_t cons = h->rx_cons.v;

	if (h->rx_prod.v == cons)
		return -1;
	*d = t->k->rx_desc[cons & (t->k->rx_slots - 1)];
	memcpy(buf, t->k->rx_data + d->off, RTE_MIN(d->len, max));
	h->rx_cons.v = cons + 1;
	return (int)d->len;
}

/* Queue a datagram on the socket's tx ring and ring its doorbell the way
 * the library does (here: straight into the worker's active list). */
static inline int
th_send(struct hs_stack *s, struct th_sock *t, const void *data, uint32_t len,
	const char *to, uint16_t port)
{
	struct hs_sock_shm *h = t->k->shm;
	uint32_t prod = h->tx_prod.v, cons = h->tx_cons.v, off, nhead;
	struct hs_desc *d;

	if (hs_data_alloc(t->k->tx_bytes, t->k->tx_bytes, t->tx_head,
			  t->k->tx_desc[cons & (t->k->tx_slots - 1)].off, prod == cons, len, &off,
			  &nhead) < 0)
		return -1;
	memcpy(t->k->tx_data + off, data, len);
	d = &t->k->tx_desc[prod & (t->k->tx_slots - 1)];
	memset(d, 0, sizeof(*d));
	d->off = off;
	d->len = len;
	if (to != NULL) {
		struct hs_sockaddr a = th_addr(to, port);

		if (t->k->family == 6 && a.family == 4) {
			memset(d->addr, 0, 10);
			d->addr[10] = d->addr[11] = 0xff;
			memcpy(d->addr + 12, a.addr, 4);
			d->family = 6;
		} else {
			memcpy(d->addr, a.addr, 16);
			d->family = a.family;
		}
		d->port = a.port;
		d->flags = HS_DESC_F_PEER;
	}
	t->tx_head = nhead;
	h->tx_prod.v = prod + 1;
	h->tx_pending.v = 1;
	t->k->prio = 4;
	/* the doorbell's effect: the socket is in its worker's active list */
	if (!t->k->active) {
		s->w[0]->active[4][s->w[0]->n_active[4]++] = t->k->id;
		t->k->active = true;
	}
	return 0;
}

/* One service round at time @p tsc (0: now). */
static inline uint16_t
th_service(struct hs_stack *s, uint64_t tsc)
{
	struct ep_worker *w = s->w[0]->w;

	w->stage_tsc = tsc != 0 ? tsc : rte_rdtsc();
	return hs_service(w);
}

/* A UDP frame from the peer to us (checksums right). */
static inline struct rte_mbuf *
th_udp_frame(int v6, const char *src, const char *dst, uint16_t sport, uint16_t dport,
	     uint16_t payload)
{
	static uint8_t b[2048];
	struct tp_spec sp = tp_default(v6, IPPROTO_UDP);
	struct rte_mbuf *m;

	memcpy(sp.dmac, TH_MAC_PORT, 6);
	memcpy(sp.smac, TH_MAC_PEER, 6);
	if (v6) {
		tp_ip6(sp.src6, src);
		tp_ip6(sp.dst6, dst);
	} else {
		sp.src4 = tp_ip4(src);
		sp.dst4 = tp_ip4(dst);
	}
	sp.sport = sport;
	sp.dport = dport;
	sp.payload = payload;
	m = ep_test_mbuf(b, tp_build(b, &sp));
	ep_meta(m)->in_port = 0;
	return m;
}

/* Run frames through the stages (the engine's burst). */
static inline void
th_rx(struct hs_stack *s, struct rte_mbuf **m, uint16_t n)
{
	ep_worker_run_burst(s->w[0]->w, m, n);
	ep_worker_flush_tx(s->w[0]->w);
}

/* The frame (Ethernet first) split in IPv4 fragments for @p mtu. */
static inline int
th_fragment(struct rte_mbuf *m, int v6, uint16_t mtu, struct rte_mbuf **out)
{
	struct rte_mbuf *frags[16];
	int n;

	rte_pktmbuf_adj(m, 14);
	if (v6)
		n = rte_ipv6_fragment_packet(m, frags, 16, mtu, ep_test_pool(), ep_test_pool());
	else
		n = rte_ipv4_fragment_copy_nonseg_packet(m, frags, 16, mtu, ep_test_pool());
	rte_pktmbuf_free(m);
	for (int i = 0; i < n; i++) {
		uint8_t *eh = (uint8_t *)rte_pktmbuf_prepend(frags[i], 14);

		memcpy(eh, TH_MAC_PORT, 6);
		memcpy(eh + 6, TH_MAC_PEER, 6);
		eh[12] = v6 ? 0x86 : 0x08;
		eh[13] = v6 ? 0xdd : 0x00;
		if (!v6) {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 14);

			ip->hdr_checksum = 0;
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
		/* single segment for the parser: chained fragments are linearised */
		if (frags[i]->nb_segs > 1) {
			struct rte_mbuf *lin = rte_pktmbuf_alloc(ep_test_pool());
			uint32_t len = rte_pktmbuf_pkt_len(frags[i]);

			uint8_t *dst = (uint8_t *)rte_pktmbuf_append(lin, (uint16_t)len);
			const void *src = rte_pktmbuf_read(frags[i], 0, len, dst);

			if (src != dst)
				memcpy(dst, src, len);
			rte_pktmbuf_free(frags[i]);
			frags[i] = lin;
		}
		ep_meta(frags[i])->in_port = 0;
		out[i] = frags[i];
	}
	return n;
}

#endif
