/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `router` pipeline type: its [router] configuration, shared tables
 * built once by setup(), and per-worker stage contexts built by build().
 *
 *   [router]
 *   max_routes4 = 131072         # sizing (see router_params_default)
 *   neighbor = 198.18.0.2 02:00:00:00:00:0a          # optional: dev <port>
 *   route = 198.18.10.0/24 via 198.18.1.2
 *   route_file = /path/routes.txt                    # "<prefix> via <gw>" lines
 *   acl = deny proto tcp dst 198.18.10.0/24 dport 22
 *   acl_file = /path/acl.txt                         # one rule per line
 *   acl_default = permit
 *   acl_classify = auto          # rte_acl method: avx512x32|avx512x16|avx2|sse|scalar
 *
 * Neighbours load first, so a route may go via a neighbour given with dev;
 * inline acl lines come before acl_file's, and the rule set is built once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "router.h"

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
	static const struct { const char *key; size_t off; uint64_t min, max; } keys[] = {
		{ "max_routes4", offsetof(struct router_params, max_routes4), 1, 1u << 24 },
		{ "max_routes6", offsetof(struct router_params, max_routes6), 1, 1u << 24 },
		{ "lpm4_tbl8s", offsetof(struct router_params, lpm4_tbl8s), 1, 1u << 24 },
		{ "lpm6_tbl8s", offsetof(struct router_params, lpm6_tbl8s), 1, 1u << 24 },
		/* rte_lpm6 next hops are 21 bits wide. */
		{ "max_nexthops", offsetof(struct router_params, max_nexthops), 8, 1u << 21 },
		{ "max_acl_rules", offsetof(struct router_params, max_acl_rules), 1, 1u << 20 },
	};

	router_params_default(p);
	for (size_t i = 0; s != NULL && i < RTE_DIM(keys); i++) {
		uint32_t *f = (uint32_t *)((char *)p + keys[i].off);
		uint64_t v;

		if (ep_cfg_u64(cfg, s, keys[i].key, *f, keys[i].min, keys[i].max, &v, err) < 0)
			return -1;
		*f = (uint32_t)v;
	}
	return 0;
}

struct load_ctx {
	struct router *r;
	struct ep_cfg *cfg;
	struct ep_err *err;
	struct router_acl_rule *rules;
	uint32_t n_rules, cap;
};

/* Prefix an error already in ctx->err with "file:line: key 'k': ". */
static int
kv_error(struct load_ctx *c, const struct ep_cfg_kv *kv)
{
	char inner[sizeof(c->err->msg)];

	snprintf(inner, sizeof(inner), "%s", c->err->msg);
	return ep_cfg_error(c->cfg, kv, c->err, "%s", inner);
}

/* Split "a b c ..." in place into at most @p max words. */
static int
split(char *s, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = t;
	}
	return n;
}

static int
neighbor_line(char *line, struct router *r, struct ep_err *err)
{
	char *w[5];
	int n = split(line, w, 4);

	if (n == 2)
		return router_neigh_add(r, w[0], w[1], NULL, err);
	if (n == 4 && strcmp(w[2], "dev") == 0)
		return router_neigh_add(r, w[0], w[1], w[3], err);
	return ep_err_set(err, "expected '<ip> <mac> [dev <port>]'");
}

static int
route_line(char *line, struct router *r, struct ep_err *err)
{
	char *w[4];
	int n = split(line, w, 3);

	if (n != 3 || strcmp(w[1], "via") != 0)
		return ep_err_set(err, "expected '<prefix> via <gateway>'");
	return router_route_add(r, w[0], w[2], err);
}

static int
acl_push(struct load_ctx *c, const char *text)
{
	if (c->n_rules == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->rules, sizeof(*c->rules) * cap);

		if (p == NULL)
			return ep_err_set(c->err, "out of memory");
		c->rules = p;
		c->cap = cap;
	}
	if (router_acl_parse(text, &c->rules[c->n_rules], c->err) < 0)
		return -1;
	c->n_rules++;
	return 0;
}

static int
each_neighbor(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	char buf[EP_SIDE_MAX_LINE + 1];

	snprintf(buf, sizeof(buf), "%s", kv->val);
	return neighbor_line(buf, c->r, c->err) < 0 ? kv_error(c, kv) : 0;
}

static int
each_route(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	char buf[EP_SIDE_MAX_LINE + 1];

	snprintf(buf, sizeof(buf), "%s", kv->val);
	return route_line(buf, c->r, c->err) < 0 ? kv_error(c, kv) : 0;
}

static int
each_acl(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;

	return acl_push(c, kv->val) < 0 ? kv_error(c, kv) : 0;
}

/* route_file and acl_file lines (ep_cfg_side_file strips comments and blanks). */
static int
file_route(void *arg, char *line, int lineno, struct ep_err *err)
{
	return route_line(line, ((struct load_ctx *)arg)->r, err);
}

static int
file_acl(void *arg, char *line, int lineno, struct ep_err *err)
{
	return acl_push(arg, line);
}

int
router_load_config(struct router *r, struct ep_cfg *cfg, struct ep_cfg_section *s,
		   struct ep_err *err)
{
	struct load_ctx c = { .r = r, .cfg = cfg, .err = err };
	const struct ep_cfg_kv *kv;
	bool deny = false;
	int rc = -1;

	if (ep_cfg_each(s, "neighbor", each_neighbor, &c) != 0 ||
	    ep_cfg_each(s, "route", each_route, &c) != 0)
		goto out;
	kv = ep_cfg_get(cfg, s, "route_file", err);
	if (kv != NULL && ep_cfg_side_file(cfg, kv, file_route, &c, err) != 0)
		goto out;
	if (ep_cfg_each(s, "acl", each_acl, &c) != 0)
		goto out;
	kv = ep_cfg_get(cfg, s, "acl_file", err);
	if (kv != NULL && ep_cfg_side_file(cfg, kv, file_acl, &c, err) != 0)
		goto out;
	kv = ep_cfg_get(cfg, s, "acl_default", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "deny") == 0)
			deny = true;
		else if (strcmp(kv->val, "permit") != 0) {
			ep_cfg_error(cfg, kv, err, "'%s' is not permit or deny", kv->val);
			goto out;
		}
	}
	kv = ep_cfg_get(cfg, s, "acl_classify", err);
	if (kv != NULL && router_acl_alg_parse(kv->val, &r->acl_alg) < 0) {
		ep_cfg_error(cfg, kv, err, "'%s' is not auto, avx512x32, avx512x16, avx2, sse or "
			     "scalar", kv->val);
		goto out;
	}
	if (router_acl_commit(r, c.rules, c.n_rules, deny, err) < 0)
		goto out;
	rc = 0;
out:
	free(c.rules);
	return rc;
}

/* ---- pipeline type ---- */

struct router_worker *
router_worker_create(struct router *r, int socket)
{
	struct router_worker *w = rte_zmalloc_socket("ep_router_worker", sizeof(*w),
						     RTE_CACHE_LINE_SIZE, socket);

	if (w == NULL)
		return NULL;
	w->r = r;
	w->n_ports = (uint16_t)r->e->n_ports;
	for (int i = 0; i < r->e->n_ports && i < EP_MAX_PORTS; i++) {
		const struct ep_port *p = &r->e->ports[i];

		w->port[i].mac = p->mac;
		w->port[i].n_v4 = p->n_v4;
		w->port[i].n_v6 = p->n_v6;
		for (int a = 0; a < p->n_v4; a++)
			w->port[i].v4[a] = p->v4[a].addr;
		for (int a = 0; a < p->n_v6; a++)
			memcpy(w->port[i].v6[a], p->v6[a].addr, 16);
	}
	return w;
}

void
router_worker_free(struct router_worker *w)
{
	rte_free(w);
}

static int
router_setup(struct ep_engine *e, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "router", NULL);
	struct router_params p;
	struct router *r;

	if (router_global != NULL)
		return 0;
	if (router_params_from_config(e->cfg, s, &p, err) < 0)
		return -1;
	r = router_create(e, &p, err);
	if (r == NULL)
		return -1;
	if (s != NULL && router_load_config(r, e->cfg, s, err) < 0) {
		router_free(r);
		return -1;
	}
	router_global = r;
	return 0;
}

static int
router_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct router_worker *rw;

	if (router_global == NULL)
		return ep_err_set(err, "router: setup did not run");
	rw = router_worker_create(router_global, (int)rte_lcore_to_socket_id(w->lcore));
	if (rw == NULL)
		return ep_err_set(err, "router: out of memory for worker %s", w->name);
	w->pipeline_ctx = rw;
	for (size_t i = 0; i < RTE_DIM(router_stages); i++)
		if (ep_worker_add_stage(w, router_stages[i].name, router_stages[i].fn, rw,
					err) < 0)
			return -1;
	return 0;
}

static void
router_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];

		if (w != NULL && w->type != NULL && strcmp(w->type->name, "router") == 0) {
			router_worker_free(w->pipeline_ctx);
			w->pipeline_ctx = NULL;
		}
	}
	router_free(router_global);
	router_global = NULL;
}

static struct ep_pipeline_type router_type = {
	.name = "router",
	.setup = router_setup,
	.build = router_build,
	.teardown = router_teardown,
};
EP_PIPELINE_REGISTER(router_type);
