/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `hoststack` pipeline type: [hoststack] configuration, the stack
 * built once by setup(), a context and five stages per worker, the service
 * hook (hs_tx.c) and the idle wait on the kick eventfd.
 *
 *   [worker w0]
 *   pipeline = hoststack
 *   rx = uplink
 *
 * Every worker running the pipeline owns a share of the sockets (given out
 * round-robin as they are opened) and polls the doorbells of every
 * attached application for them.
 */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "ep_rcu.h"
#include "hoststack.h"

int hs_stack_workers_ready(struct hs_stack *s, struct ep_err *err);

const struct hs_stage_def hs_stages[5] = {
	{ "parse", hs_parse_stage },
	{ "neigh", hs_neigh_stage },
	{ "reasm", hs_reasm_stage },
	{ "icmp", hs_icmp_stage },
	{ "udp", hs_udp_stage },
};

static struct ep_pipeline_type hs_type;

static int
hs_setup(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg_section *sec = ep_cfg_find(e->cfg, "hoststack", NULL);
	struct hs_params p;
	struct hs_stack *s;

	if (hs_global != NULL)
		return 0;
	if (hs_params_from_config(e, sec, &p, err) < 0)
		return -1;
	s = hs_stack_create(e, &p, err);
	if (s == NULL)
		return -1;
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w->type != &hs_type)
			continue;
		if (s->n_w == (int)HS_MAX_WORKERS) {
			ep_err_set(err, "hoststack: more than %u workers", HS_MAX_WORKERS);
			goto fail;
		}
		s->w[s->n_w] = hs_wctx_create(s, w, (uint16_t)s->n_w, err);
		if (s->w[s->n_w] == NULL)
			goto fail;
		s->n_w++;
	}
	if (hs_stack_workers_ready(s, err) < 0 || hs_load_config(s, e->cfg, sec, err) < 0)
		goto fail;
	hs_global = s;
	return 0;
fail:
	hs_stack_free(s);
	return -1;
}

static int
hs_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct hs_stack *s = hs_global;
	struct hs_wctx *c = NULL;

	if (s == NULL)
		return ep_err_set(err, "hoststack: setup did not run");
	for (int i = 0; i < s->n_w; i++)
		if (s->w[i]->w == w)
			c = s->w[i];
	if (c == NULL)
		return ep_err_set(err, "hoststack: worker %s has no context", w->name);
	w->pipeline_ctx = c;
	for (size_t i = 0; i < RTE_DIM(hs_stages); i++) {
		if (ep_worker_add_stage(w, hs_stages[i].name, hs_stages[i].fn, c, err) < 0)
			return -1;
		if (strcmp(hs_stages[i].name, "udp") == 0)
			c->stage_udp = &w->stages[w->n_stages - 1];
		if (strcmp(hs_stages[i].name, "reasm") == 0)
			c->stage_reasm = &w->stages[w->n_stages - 1];
	}
	c->touch_seq = (uint64_t)c->idx << 48 | 1;
	for (int i = 0; i < s->n_static_nb; i++)
		hs_nb_learn(c, s->static_nb[i].family, &s->static_nb[i].ip, &s->static_nb[i].mac,
			    s->static_nb[i].port, true);
	if (c->idx != 0)
		return 0;
	/* Once, after the ports started (their MACs are known now).  Under
	 * --check ports are never started: no attach socket then, it could
	 * be a live instance's. */
	if (hs_routes_build(s, err) < 0)
		return -1;
	if (e->n_ports == 0 || !e->ports[0].started)
		return 0;
	return hs_attach_open(s, err);
}

static void
hs_teardown(struct ep_engine *e)
{
	struct hs_stack *s = hs_global;

	if (s == NULL)
		return;
	hs_global = NULL;
	for (int i = 0; i < s->n_w; i++)
		s->w[i]->w->pipeline_ctx = NULL;
	/* Workers have stopped: messages to them run inline (ep_worker_call). */
	hs_stack_free(s);
}

static struct ep_pipeline_type hs_type = {
	.name = "hoststack",
	.setup = hs_setup,
	.build = hs_build,
	.service = hs_service,
	.wait = hs_wait,
	.wait_covers_rx = true,
	.teardown = hs_teardown,
};
EP_PIPELINE_REGISTER(hs_type)
