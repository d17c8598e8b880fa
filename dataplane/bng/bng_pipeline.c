/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `bng-uplink` and `bng-downlink` pipeline types.  Both read [bng]; the
 * first setup() builds the one shared struct bng (subscribers, profiles,
 * and its module instances: the core FIB "bng" and the uplink ACL
 * "bng-uplink"), the other finds it built.  Each worker gets its own
 * context (per-subscriber meter and counter arrays; a downlink worker also
 * its own rte_sched port).
 *
 * The routes, neighbours and ACL are the modules' commands (route-*,
 * neigh-*, acl-* with table=bng / table=bng-uplink, or without a table
 * when the process has no other FIB or ACL), so a router, a vBNG and any
 * other pipeline can share a process.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>

#include "bng.h"

static struct ep_pipeline_type up_type, down_type;

struct bng *
bng_of(const struct ep_engine *e)
{
	struct bng *b = ep_engine_type_ctx(e, &up_type);

	return b != NULL ? b : ep_engine_type_ctx(e, &down_type);
}

int
bng_attach(struct ep_engine *e, struct bng *b)
{
	return ep_engine_type_ctx_set(e, &up_type, b) | ep_engine_type_ctx_set(e, &down_type, b);
}

static int
bng_setup(struct ep_engine *e, const struct ep_pipeline_type *t, struct ep_err *err)
{
	struct ep_cfg_section *s;
	struct bng_params p;
	struct bng *b = bng_of(e);

	if (b == NULL) {
		s = ep_cfg_find(e->cfg, "bng", NULL);
		if (s == NULL)
			return ep_err_set(err, "bng-uplink / bng-downlink need a [bng] section");
		if (bng_params_from_config(e->cfg, s, &p, err) < 0)
			return -1;
		b = bng_create(e, &p, err);
		if (b == NULL)
			return -1;
		if (bng_load_config(b, e->cfg, s, err) < 0) {
			bng_free(b);
			return -1;
		}
	}
	/* Each type in use holds it: whichever is set up first built it, the
	 * last one torn down frees it. */
	if (ep_engine_type_ctx_set(e, t, b) < 0) {
		if (bng_of(e) == NULL)
			bng_free(b);
		return ep_err_set(err, "bng: too many pipeline types");
	}
	return 0;
}

static int
up_setup(struct ep_engine *e, struct ep_err *err)
{
	return bng_setup(e, &up_type, err);
}

static int
down_setup(struct ep_engine *e, struct ep_err *err)
{
	return bng_setup(e, &down_type, err);
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
	if (ep_worker_add_stage(w, "subscriber", bng_up_subscriber_stage, u, err) < 0 ||
	    ep_worker_add_stage(w, "acl", ep_acl_filter_stage, u->acl, err) < 0 ||
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
	    ep_worker_add_stage(w, "neigh", ep_fib_neigh_stage, d->fw, err) < 0 ||
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
	struct bng *b = bng_of(e);

	if (b == NULL)
		return ep_err_set(err, "bng: setup did not run");
	return bng_up_build(b, w, err);
}

static int
down_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct bng *b = bng_of(e);

	if (b == NULL)
		return ep_err_set(err, "bng: setup did not run");
	return bng_down_build(b, w, err);
}

/* Every loop iteration: drain the scheduler at its own pace, arrivals or not. */
static uint16_t
down_service(struct ep_worker *w)
{
	struct bng_down *d = w->pipeline_ctx;
	struct rte_mbuf *pkts[EP_BURST_MAX];
	uint16_t n = (uint16_t)ep_sched_dequeue(d->hqos, pkts, w->burst, rte_rdtsc());

	if (n != 0)
		ep_worker_tx(w, d->access_port, pkts, n);
	return n;
}

static void
teardown(struct ep_engine *e, const struct ep_pipeline_type *t)
{
	struct bng *b = bng_of(e);

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
	ep_engine_type_ctx_set(e, t, NULL);
	if (bng_of(e) == NULL)
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

/* The shared tables are counted with the uplink workers, or with the
 * downlink ones when there is no uplink worker. */
static uint64_t
up_memory(struct ep_engine *e, int n_workers)
{
	return bng_memory(e, n_workers, 0, true);
}

static uint64_t
down_memory(struct ep_engine *e, int n_workers)
{
	return bng_memory(e, 0, n_workers, ep_mem_workers_of(e, up_type.name) == 0);
}

static struct ep_pipeline_type up_type = {
	.name = "bng-uplink",
	.setup = up_setup,
	.build = up_build,
	.teardown = up_teardown,
	.memory = up_memory,
	/* bng_up_parse_stage writes ep_meta.in_port from the burst's port. */
	.stage_sets_in_port = true,
	/* No uplink stage pushes a header in front of a frame (the encap
	 * moves its start forward): frames on a line, a line less of each
	 * stored and copied frame (docs/benchmarks/bng-uplink-passes.md,
	 * "Ninth pass"). */
	.rx_line_aligned = true,
};
static struct ep_pipeline_type down_type = {
	.name = "bng-downlink",
	.setup = down_setup,
	.build = down_build,
	.service = down_service,
	.teardown = down_teardown,
	.memory = down_memory,
	/* bng_down_parse_stage writes ep_meta.in_port from the burst's port. */
	.stage_sets_in_port = true,
	/* Fed by another core (a ring from the line cards' rx workers, the
	 * benchmark's feeder), every frame's lines are cross-core misses: the
	 * next burst's are prefetched while this one runs (worker.c). */
	.rx_lookahead = true,
};
EP_PIPELINE_REGISTER(up_type);
EP_PIPELINE_REGISTER(down_type);
