/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared fixture of the router tests: an engine with two ports (no devices:
 * stages never touch a port; the pipeline tests take transmitted packets out
 * of the worker's tx buffers), a small router, and helpers to run one stage
 * or the whole pipeline on crafted frames.
 *
 *   port 0 "access"  02:00:00:00:01:01  198.18.0.1/24  2001:db8:0:1::1/64
 *   port 1 "core"    02:00:00:00:02:01  198.18.1.1/24  2001:db8:0:2::1/64
 *   hosts: 198.18.0.2 / 2001:db8:0:1::2 (02:..:0a) on access,
 *          198.18.1.2 / 2001:db8:0:2::2 (02:..:0b) on core
 */
#ifndef EP_TEST_ROUTER_H
#define EP_TEST_ROUTER_H

#include <stdlib.h>
#include <rte_malloc.h>

#include "ep_test.h"
#include "ep_parse.h"
#include "engine_internal.h"
#include "router.h"
#include "test_pkt.h"

static const uint8_t MAC_A[6] = {2, 0, 0, 0, 0, 0x0a};
static const uint8_t MAC_B[6] = {2, 0, 0, 0, 0, 0x0b};
static const uint8_t MAC_P0[6] = {2, 0, 0, 0, 1, 1};
static const uint8_t MAC_P1[6] = {2, 0, 0, 0, 2, 1};

static struct ep_engine tr_eng;

static inline void
tr_engine_init(void)
{
	static const char *names[2] = {"access", "core"};

	if (tr_eng.qsbr == NULL) {
		size_t sz = rte_rcu_qsbr_get_memsize(4);

		tr_eng.qsbr = rte_zmalloc("tr_qsbr", sz, RTE_CACHE_LINE_SIZE);
		rte_rcu_qsbr_init(tr_eng.qsbr, 4);
	}
	tr_eng.n_ports = 2;
	tr_eng.burst = 32;
	for (int i = 0; i < 2; i++) {
		struct ep_port *p = &tr_eng.ports[i];
		char v6[64];

		memset(p, 0, sizeof(*p));
		snprintf(p->name, sizeof(p->name), "%s", names[i]);
		p->index = (uint16_t)i;
		memcpy(&p->mac, i == 0 ? MAC_P0 : MAC_P1, 6);
		p->v4[0].addr = htonl(tp_ip4(i == 0 ? "198.18.0.1" : "198.18.1.1"));
		p->v4[0].plen = 24;
		p->n_v4 = 1;
		snprintf(v6, sizeof(v6), "2001:db8:0:%d::1", i + 1);
		tp_ip6(p->v6[0].addr, v6);
		p->v6[0].plen = 64;
		p->n_v6 = 1;
	}
}

/* A router sized for tests, with both hosts as neighbours. */
static inline struct router *
tr_router(void)
{
	struct router_params p;
	struct ep_err err = {{0}};
	struct router *r;

	tr_engine_init();
	router_params_default(&p);
	p.max_routes4 = 1024;
	p.max_routes6 = 1024;
	p.lpm4_tbl8s = 64;
	p.lpm6_tbl8s = 512;
	p.max_nexthops = 64;
	r = router_create(&tr_eng, "router", &p, &err);
	if (r == NULL) {
		printf("    router_create: %s\n", err.msg);
		abort();
	}
	if (router_neigh_add(r, "198.18.0.2", "02:00:00:00:00:0a", NULL, &err) < 0 ||
	    router_neigh_add(r, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err) < 0 ||
	    router_neigh_add(r, "2001:db8:0:1::2", "02:00:00:00:00:0a", NULL, &err) < 0 ||
	    router_neigh_add(r, "2001:db8:0:2::2", "02:00:00:00:00:0b", NULL, &err) < 0) {
		printf("    neigh_add: %s\n", err.msg);
		abort();
	}
	router_global = r;
	return r;
}

/* An mbuf holding @p len bytes of @p b, arriving on @p port, parsed. */
static inline struct rte_mbuf *
tr_mbuf(const uint8_t *b, uint16_t len, uint16_t port)
{
	struct rte_mbuf *m = ep_test_mbuf(b, len);

	ep_meta(m)->in_port = port;
	if (ep_parse_mbuf(m, ep_meta(m)) != 0)
		printf("    (fixture: frame does not parse)\n");
	return m;
}

/* Run one stage on one packet; returns its next action. */
static inline uint16_t
tr_stage1(ep_stage_fn fn, void *ctx, struct rte_mbuf *m)
{
	uint16_t next[1] = {0};

	fn(ctx, &m, next, 1);
	return next[0];
}

/* ---- whole pipeline through the engine's burst function ---- */

static inline struct ep_worker *
tr_worker(struct router *r)
{
	static unsigned int id;
	struct ep_err err;
	struct ep_worker *w = ep_worker_create(&tr_eng, 100 + id++, "tr", &err);
	struct router_worker *rw = router_worker_create(r, SOCKET_ID_ANY);

	if (w == NULL || rw == NULL)
		abort();
	w->pipeline_ctx = rw;
	for (int i = 0; i < 5; i++)
		if (ep_worker_add_stage(w, router_stages[i].name, router_stages[i].fn, rw, &err) < 0)
			abort();
	return w;
}

static inline void
tr_worker_free(struct ep_worker *w)
{
	router_worker_free(w->pipeline_ctx);
	ep_worker_free(w);
}

/* Take the packets queued for @p port out of the worker (caller frees). */
static inline uint16_t
tr_take_tx(struct ep_worker *w, uint16_t port, struct rte_mbuf **out)
{
	uint16_t n = w->txbuf[port].n;

	memcpy(out, w->txbuf[port].pkts, sizeof(out[0]) * n);
	w->txbuf[port].n = 0;
	w->tx_pending &= ~(1u << port);
	return n;
}

static inline void
tr_free_tx(struct ep_worker *w)
{
	struct rte_mbuf *out[EP_BURST_MAX];

	for (uint16_t p = 0; p < 2; p++) {
		uint16_t n = tr_take_tx(w, p, out);

		rte_pktmbuf_free_bulk(out, n);
	}
}

/* Stage by name. */
static inline struct ep_stage *
tr_stage(struct ep_worker *w, const char *name)
{
	for (int i = 0; i < w->n_stages; i++)
		if (strcmp(w->stages[i].name, name) == 0)
			return &w->stages[i];
	abort();
}

#endif
