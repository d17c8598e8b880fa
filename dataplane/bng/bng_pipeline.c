/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `bng-uplink` and `bng-downlink` pipeline types.  Both read [bng]; the
 * first setup() builds the one shared struct bng (subscribers, profiles, the
 * BNG's router instance for core routes and the uplink ACL), the other
 * finds it built.  Each worker gets its own context (per-subscriber meter
 * and counter arrays; a downlink worker also its own rte_sched port).
 *
 * The BNG's router instance is also published as router_global when no
 * `router` pipeline runs in the process, so the router's control commands
 * (route-*, neigh-*, acl-*, addr-list) manage the BNG's core routes and
 * uplink ACL.  A process runs either the router or the BNG, not both.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>

#include "router/router.h"
#include "bng.h"

static struct ep_pipeline_type up_type, down_type;

static int
bng_setup(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg_section *s;
	struct bng_params p;
	struct bng *b;

	if (bng_global != NULL)
		return 0;
	s = ep_cfg_find(e->cfg, "bng", NULL);
	if (s == NULL)
		return ep_err_set(err, "bng-uplink / bng-downlink need a [bng] section");
	for (int i = 0; i < e->n_workers; i++)
		if (strcmp(e->workers[i]->type->name, "router") == 0)
			return ep_err_set(err, "worker %s: a process runs the router or the BNG, "
					  "not both (they share the route and ACL commands)",
					  e->workers[i]->name);
	if (bng_params_from_config(e->cfg, s, &p, err) < 0)
		return -1;
	b = bng_create(e, &p, err);
	if (b == NULL)
		return -1;
	if (bng_load_config(b, e->cfg, s, err) < 0)
		goto fail;
	bng_global = b;
	if (router_global == NULL)
		router_global = b->rt;
	return 0;
fail:
	bng_free(b);
	return -1;
}

int
bng_up_build(struct bng *b, struct ep_worker *w, struct ep_err *err)
{
	static const ep_stage_fn encap[] = {
		[BNG_CORE_NONE] = bng_up_encap_none_stage,
		[BNG_CORE_VLAN] = bng_up_encap_vlan_stage,
		[BNG_CORE_MPLS] = bng_up_encap_mpls_stage,
	};
	struct bng_up *u;

	if (b->n_up == BNG_MAX_DOWN)
		return ep_err_set(err, "bng: too many uplink workers");
	u = bng_up_create(b, w, (int)rte_lcore_to_socket_id(w->lcore), err);
	if (u == NULL)
		return -1;
	w->pipeline_ctx = u;
	b->up[b->n_up++] = u;
	if (ep_worker_add_stage(w, "parse", bng_up_parse_stage, u, err) < 0)
		return -1;
	u->parse_stage = &w->stages[w->n_stages - 1];
	if (ep_worker_add_stage(w, "acl", router_acl_stage, u->rw, err) < 0 ||
	    ep_worker_add_stage(w, "subscriber", bng_up_subscriber_stage, u, err) < 0 ||
	    ep_worker_add_stage(w, "route", bng_up_route_stage, u, err) < 0 ||
	    ep_worker_add_stage(w, "encap", encap[b->core_encap], u, err) < 0)
		return -1;
	return 0;
}

int
bng_down_build(struct bng *b, struct ep_worker *w, struct ep_err *err)
{
	struct bng_down *d;

	if (b->n_down == BNG_MAX_DOWN)
		return ep_err_set(err, "bng: too many downlink workers");
	d = bng_down_create(b, w, (int)rte_lcore_to_socket_id(w->lcore), err);
	if (d == NULL)
		return -1;
	w->pipeline_ctx = d;
	b->down[b->n_down++] = d;
	if (ep_worker_add_stage(w, "parse", bng_down_parse_stage, d, err) < 0 ||
	    ep_worker_add_stage(w, "neigh", router_neigh_stage, d->rw, err) < 0 ||
	    ep_worker_add_stage(w, "lookup", bng_down_lookup_stage, d, err) < 0 ||
	    ep_worker_add_stage(w, "rpf", bng_down_rpf_stage, d, err) < 0 ||
	    ep_worker_add_stage(w, "encap", bng_down_encap_stage, d, err) < 0 ||
	    ep_worker_add_stage(w, "hqos", bng_down_hqos_stage, d, err) < 0)
		return -1;
	d->hqos_stage = &w->stages[w->n_stages - 1];
	return 0;
}

static int
up_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	if (bng_global == NULL)
		return ep_err_set(err, "bng: setup did not run");
	return bng_up_build(bng_global, w, err);
}

static int
down_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	if (bng_global == NULL)
		return ep_err_set(err, "bng: setup did not run");
	return bng_down_build(bng_global, w, err);
}

/* Every loop iteration: drain the scheduler at its own pace, arrivals or not. */
static uint16_t
down_service(struct ep_worker *w)
{
	struct bng_down *d = w->pipeline_ctx;
	struct rte_mbuf *pkts[EP_BURST_MAX];
	uint16_t n = bng_hqos_dequeue(d, pkts, w->burst);

	if (n != 0)
		ep_worker_tx(w, d->access_port, pkts, n);
	return n;
}

static void
teardown(struct ep_engine *e, const struct ep_pipeline_type *t)
{
	struct bng *b = bng_global;

	if (b == NULL)
		return;
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w == NULL || w->type != t || w->pipeline_ctx == NULL)
			continue;
		if (t == &up_type) {
			bng_up_free(w->pipeline_ctx);
			b->n_up--;
		} else {
			bng_down_free(w->pipeline_ctx);
			b->n_down--;
		}
		w->pipeline_ctx = NULL;
	}
	if (b->n_up == 0 && b->n_down == 0)
		bng_free(b);
}

static void
up_teardown(struct ep_engine *e)
{
	teardown(e, &up_type);
}

static void
down_teardown(struct ep_engine *e)
{
	teardown(e, &down_type);
}

static struct ep_pipeline_type up_type = {
	.name = "bng-uplink",
	.setup = bng_setup,
	.build = up_build,
	.teardown = up_teardown,
};
static struct ep_pipeline_type down_type = {
	.name = "bng-downlink",
	.setup = bng_setup,
	.build = down_build,
	.service = down_service,
	.teardown = down_teardown,
};
EP_PIPELINE_REGISTER(up_type);
EP_PIPELINE_REGISTER(down_type);
