/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `router` pipeline type: its [router] configuration, the instances
 * built once by setup(), and per-worker stage contexts built by build().
 *
 *   [router]
 *   max_routes4 = 131072         # sizing (see ep_fib_params_default)
 *   neighbor = 198.18.0.2 02:00:00:00:00:0a          # optional: dev <port>
 *   route = 198.18.10.0/24 via 198.18.1.2
 *   route_file = /path/routes.txt                    # "<prefix> via <gw>" lines
 *   neigh_learn = on             # resolve next hops by ARP / ND (off: static only)
 *   icmp_rate = 1000             # ICMP errors per second per worker (0: none)
 *   acl = deny proto tcp dst 198.18.10.0/24 dport 22
 *   acl_file = /path/acl.txt                         # one rule per line
 *   acl_default = permit
 *   acl_classify = auto          # rte_acl method: avx512x32|avx512x16|avx2|sse|scalar;
 *                                # auto: the fastest here, timed at each build (acl.c)
 *   acl_icmp = off               # on: denied packets get ICMP administratively prohibited
 *   fast_path = xdp              # xdp|tc|off: which fast path (tc: xdp_fast_tc.c)
 *   xdp_fast_path = auto         # on|off: the XDP fast path on net_af_xdp ports (xdp_fast.h)
 *
 * Neighbours load first, so a route may go via a neighbour given with dev;
 * inline acl lines come before acl_file's, and the rule set is built once.
 */
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "router.h"
#include "ep_ctl.h"
#include "xdp_fast.h"

const struct router_stage_def router_stages[5] = {
	{ "parse", router_parse_stage },
	{ "neigh", router_neigh_after_parse_stage },
	{ "acl", router_acl_stage },
	{ "route", router_route_stage },
	{ "rewrite", router_rewrite_stage },
};

int
router_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s,
			  struct router_params *p, struct ep_err *err)
{
	uint64_t v;

	router_params_default(p);
	if (s == NULL)
		return 0;
	if (ep_fib_params_from_config(cfg, s, true, &p->fib, err) < 0 ||
	    ep_cfg_u64(cfg, s, "max_acl_rules", p->max_acl_rules, 1, 1u << 20, &v, err) < 0)
		return -1;
	p->max_acl_rules = (uint32_t)v;
	return 0;
}

int
router_load_config(struct router *r, struct ep_cfg *cfg, struct ep_cfg_section *s,
		   struct ep_err *err)
{
	const struct ep_cfg_kv *kv;

	if (ep_fib_load_config(r->fib, cfg, s, err) < 0 ||
	    ep_acl_load_config(r->acl, cfg, s, err) < 0)
		return -1;
	kv = ep_cfg_get(cfg, s, "acl_icmp", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "on") != 0 && strcmp(kv->val, "off") != 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not on or off", kv->val);
		r->acl_icmp = kv->val[1] == 'n';
	}
	return 0;
}

/* ---- worker contexts ---- */

struct router_worker *
router_worker_create(struct router *r, struct ep_worker *w, int socket)
{
	struct router_worker *rw = rte_zmalloc_socket("ep_router_worker", sizeof(*rw),
						      RTE_CACHE_LINE_SIZE, socket);

	if (rw == NULL)
		return NULL;
	rw->r = r;
	rw->fw = ep_fib_worker_create(r->fib, w, socket);
	rw->acl = ep_acl_filter_create(r->acl, socket);
	if (rw->fw == NULL || rw->acl == NULL) {
		router_worker_free(rw);
		return NULL;
	}
	rw->parse_x8 = router_parse_x8_usable();
	rw->parse_x8_lines = rw->parse_x8 && router_parse_x8_lines();
	return rw;
}

void
router_worker_free(struct router_worker *rw)
{
	if (rw == NULL)
		return;
	ep_acl_filter_free(rw->acl);
	ep_fib_worker_free(rw->fw);
	rte_free(rw);
}

/* ---- pipeline type ---- */

static struct ep_pipeline_type router_type;

static int
router_setup(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "router", NULL);
	struct router_params p;
	struct router *r;

	if (router_params_from_config(e->cfg, s, &p, err) < 0)
		return -1;
	/* The router routes between the ports its workers poll and those no
	 * worker polls (a port it only sends on), never another pipeline's. */
	uint32_t mine = 0, others = 0;
	for (int i = 0; i < e->n_workers; i++)
		for (int q = 0; q < e->workers[i]->n_rx; q++) {
			uint32_t bit = 1u << e->workers[i]->rx[q].port;
			if (e->workers[i]->type == &router_type)
				mine |= bit;
			else
				others |= bit;
		}
	p.fib.ports = (((e->n_ports >= 32 ? 0 : 1u << e->n_ports) - 1) & ~others) | mine;
	r = router_create(e, "router", &p, err);
	if (r == NULL)
		return -1;
	if ((s != NULL && router_load_config(r, e->cfg, s, err) < 0) ||
	    ep_engine_type_ctx_set(e, &router_type, r) < 0) {
		router_free(r);
		return -1;
	}
	/* The fast path's maps are found once the ports start (the PMD
	 * attaches the program then): the tick finds them and syncs. */
	err->msg[0] = '\0';
	r->xdp = router_xdp_create(r, mine, err);
	if (r->xdp == NULL && err->msg[0] != '\0')
		return -1;
	if (r->xdp != NULL && ep_engine_tick_add(e, router_xdp_tick, r->xdp) < 0)
		return ep_err_set(err, "router: cannot add the XDP fast path's tick");
	return 0;
}

static int
router_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct router *r = ep_engine_type_ctx(e, &router_type);
	struct router_worker *rw;

	if (r == NULL)
		return ep_err_set(err, "router: setup did not run");
	rw = router_worker_create(r, w, (int)rte_lcore_to_socket_id(w->lcore));
	if (rw == NULL)
		return ep_err_set(err, "router: out of memory for worker %s", w->name);
	w->pipeline_ctx = rw;
	for (size_t i = 0; i < RTE_DIM(router_stages); i++)
		if (ep_worker_add_stage(w, router_stages[i].name, router_stages[i].fn, rw,
					err) < 0)
			return -1;
	return 0;
}

/* Before the EAL: the FIB and ACL of [router] as configured (defaults
 * where a key is bad: setup reports it with its line), and per worker its
 * stage context and FIB worker. */
static uint64_t
router_memory(struct ep_engine *e, int n_workers)
{
	struct router_params p;
	struct ep_acl_params ap;
	struct ep_err tmp;

	if (router_params_from_config(e->cfg, ep_cfg_find(e->cfg, "router", NULL), &p, &tmp) < 0)
		router_params_default(&p);
	ep_acl_params_default(&ap);
	ap.max_rules = p.max_acl_rules;
	return ep_fib_memory(&p.fib) + ep_acl_memory(&ap) +
	       (uint64_t)n_workers * (sizeof(struct router_worker) + ep_fib_worker_memory());
}

static void
router_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w != NULL && w->type == &router_type) {
			router_worker_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		}
	}
	struct router *r = ep_engine_type_ctx(e, &router_type);

	if (r != NULL && r->xdp != NULL) {
		ep_engine_tick_del(e, router_xdp_tick, r->xdp);
		router_xdp_free(r->xdp);
		r->xdp = NULL;
	}
	router_free(r);
	ep_engine_type_ctx_set(e, &router_type, NULL);
}

static struct ep_pipeline_type router_type = {
	.name = "router",
	.setup = router_setup,
	.build = router_build,
	.teardown = router_teardown,
	.memory = router_memory,
	.port_devargs = router_xdp_port_devargs,
	/* The rewrite only ever removes bytes in front (VLAN tags): frames
	 * start on a cache line, one line for a 64-byte frame (ep_meta.h). */
	.rx_line_aligned = true,
	/* The parse stage writes ep_meta.in_port from the burst's port. */
	.stage_sets_in_port = true,
};
EP_PIPELINE_REGISTER(router_type);

/* ---- control socket ---- */

static int
cmd_xdp_fast(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	struct router *r = ep_engine_type_ctx(e, &router_type);

	if (r == NULL || r->xdp == NULL) {
		json_object_set_new(result, "active", json_false());
		return 0;
	}
	router_xdp_json(r->xdp, result);
	return 0;
}

static struct ep_ctl_cmd c_xdp_fast = {
	"xdp-fast", "", "the router's XDP fast path: ports, sync state, forwarded and punted frames",
	cmd_xdp_fast, NULL };
EP_CTL_REGISTER(c_xdp_fast)
