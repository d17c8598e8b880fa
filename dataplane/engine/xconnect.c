/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `xconnect` pipeline: every packet received on one port leaves on its
 * peer port unchanged (a patch cable in software).  No parsing, no tables:
 * it measures the engine's own cost (rx, the stage contract, tx), the floor
 * under every real pipeline, and lets a lab check a topology end to end.
 *
 *   [worker x]
 *   pipeline = xconnect
 *   rx = a, b
 *   pairs = a:b          # a -> b and b -> a
 */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "ep_engine.h"

struct xconnect_ctx {
	const struct ep_worker *w;
	uint16_t peer[EP_MAX_PORTS];    /* logical port -> logical port */
};

/* A burst from rx has one port (ep_worker.rx_port; the type says
 * stage_sets_in_port): no packet's ep_meta line is read or written.  That
 * line is in the mbuf's private area, a line of its own: a worker this one
 * feeds through a ring (the vBNG downlink's benchmark) would otherwise
 * find it modified in this core's cache.  A burst handed in
 * (ep_worker_run_burst) keeps the in_port its caller set. */
static uint16_t
xconnect_stage(void *arg, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct xconnect_ctx *c = arg;
	const uint16_t port = c->w->rx_port;

	if (port != EP_RX_PORT_META) {
		const uint16_t to = EP_NEXT_TX(c->peer[port]);

		for (uint16_t i = 0; i < n; i++)
			next[i] = to;
		return n;
	}
	for (uint16_t i = 0; i < n; i++)
		next[i] = EP_NEXT_TX(c->peer[ep_meta(pkts[i])->in_port]);
	return n;
}

static int
xconnect_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct xconnect_ctx *c = rte_zmalloc("xconnect", sizeof(*c), RTE_CACHE_LINE_SIZE);
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, "pairs", err);
	char buf[EP_SIDE_MAX_LINE + 1], *tok, *save = NULL;

	if (c == NULL)
		return ep_err_set(err, "worker %s: out of memory", w->name);
	w->pipeline_ctx = c;
	c->w = w;
	if (kv == NULL)
		return err->msg[0] ? -1 : ep_cfg_section_error(e->cfg, w->cfg, err,
			"xconnect needs 'pairs = <port>:<port>[, ...]'");
	/* Unpaired ports send to an index no port has: counted bad_tx_port. */
	memset(c->peer, 0xff, sizeof(c->peer));
	snprintf(buf, sizeof(buf), "%s", kv->val);
	for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
		char *colon = strchr(tok, ':');
		struct ep_port *a, *b;

		if (colon == NULL)
			return ep_cfg_error(e->cfg, kv, err, "'%s' is not <port>:<port>", tok);
		*colon = '\0';
		a = ep_port_by_name(e, tok);
		b = ep_port_by_name(e, colon + 1);
		if (a == NULL || b == NULL)
			return ep_cfg_error(e->cfg, kv, err, "no [port %s]",
					    a == NULL ? tok : colon + 1);
		c->peer[a->index] = b->index;
		c->peer[b->index] = a->index;
	}
	for (int i = 0; i < EP_MAX_PORTS; i++)
		if (c->peer[i] == 0xffff)
			c->peer[i] = EP_NEXT_ARG_MASK;
	return ep_worker_add_stage(w, "xconnect", xconnect_stage, c, err);
}

static void
xconnect_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++)
		if (strcmp(e->workers[i]->type->name, "xconnect") == 0)
			rte_free(e->workers[i]->pipeline_ctx);
}

static struct ep_pipeline_type xconnect_type = {
	.name = "xconnect",
	.build = xconnect_build,
	.teardown = xconnect_teardown,
	/* xconnect_stage takes the port from the burst (no meta line). */
	.stage_sets_in_port = true,
};
EP_PIPELINE_REGISTER(xconnect_type)
