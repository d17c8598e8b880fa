/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared fixture of the router tests: the two-port test engine of
 * ep_test_l3.h, a small router, and helpers to run the whole pipeline on
 * crafted frames (the pipeline tests take transmitted packets out of the
 * worker's tx buffers).
 */
#ifndef EP_TEST_ROUTER_H
#define EP_TEST_ROUTER_H

#include <stdlib.h>
#include <rte_malloc.h>

#include "ep_test.h"
#include "ep_test_l3.h"
#include "ep_parse.h"
#include "engine_internal.h"
#include "router.h"
#include "test_pkt.h"

/* A router sized for tests, with both hosts as neighbours. */
static inline struct router *
tr_router(void)
{
	struct router_params p;
	struct ep_err err = {{0}};
	struct router *r;

	tr_engine_init();
	router_params_default(&p);
	p.fib.max_routes4 = 1024;
	p.fib.max_routes6 = 1024;
	p.fib.lpm4_tbl8s = 64;
	p.fib.lpm6_tbl8s = 512;
	p.fib.max_nexthops = 64;
	r = router_create(&tr_eng, "router", &p, &err);
	if (r == NULL) {
		printf("    router_create: %s\n", err.msg);
		abort();
	}
	if (ep_fib_neigh_add(r->fib, "198.18.0.2", "02:00:00:00:00:0a", NULL, &err) < 0 ||
	    ep_fib_neigh_add(r->fib, "198.18.1.2", "02:00:00:00:00:0b", NULL, &err) < 0 ||
	    ep_fib_neigh_add(r->fib, "2001:db8:0:1::2", "02:00:00:00:00:0a", NULL, &err) < 0 ||
	    ep_fib_neigh_add(r->fib, "2001:db8:0:2::2", "02:00:00:00:00:0b", NULL, &err) < 0) {
		printf("    neigh_add: %s\n", err.msg);
		abort();
	}
	return r;
}

/* ---- whole pipeline through the engine's burst function ---- */

static inline struct ep_worker *
tr_worker(struct router *r)
{
	static unsigned int id;
	struct ep_err err;
	struct ep_worker *w = ep_worker_create(&tr_eng, 100 + id++, "tr", &err);
	struct router_worker *rw = w != NULL ? router_worker_create(r, w, SOCKET_ID_ANY) : NULL;

	if (w == NULL || rw == NULL)
		abort();
	w->pipeline_ctx = rw;
	w->type = ep_pipeline_find("router");
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
	struct rte_mbuf *out[2 * EP_BURST_MAX];

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
