/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the router.  Each handler reads its fields and
 * calls the one function of router.c / router_acl.c that the config loader
 * uses too.  Handlers run on the control thread only.
 *
 *   route-add     prefix=<cidr> via=<ip>
 *   route-del     prefix=<cidr>
 *   route-list    [limit=<n>]                  (default 1000)
 *   neigh-add     ip=<ip> mac=<mac> [dev=<port>]
 *   neigh-del     ip=<ip>
 *   neigh-list
 *   acl-add       rule="<rule>" [index=<n>]    (insert before rule n; default: append)
 *   acl-del       index=<n>
 *   acl-list
 *   acl-replace   rules=[...] | rules="<rule>; <rule>; ..."   (atomic)
 *   acl-set-default action=permit|deny
 *   addr-list
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ctl.h"
#include "router.h"

static struct router *
router_or_err(struct ep_err *err)
{
	if (router_global == NULL)
		ep_err_set(err, "no router pipeline is configured");
	return router_global;
}

static int
ctl_route_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *prefix, *via;

	if (r == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL ||
	    (via = ep_ctl_str(req, "via", err)) == NULL)
		return -1;
	return router_route_add(r, prefix, via, err);
}

static int
ctl_route_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *prefix;

	if (r == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL)
		return -1;
	return router_route_del(r, prefix, err);
}

struct list_ctx {
	struct router *r;
	json_t *arr;
	uint64_t limit, count;
};

static int
route_one(uint8_t family, const uint8_t *prefix, uint8_t plen, enum router_route_kind kind,
	  uint32_t nh, void *arg)
{
	static const char *const kinds[] = { "static", "neighbor", "connected", "local" };
	struct list_ctx *c = arg;
	char a[INET6_ADDRSTRLEN], pfx[INET6_ADDRSTRLEN + 4];
	json_t *o;

	if (c->count++ >= c->limit)
		return 0;
	snprintf(pfx, sizeof(pfx), "%s/%u", router_ip_str(family, prefix, a, sizeof(a)), plen);
	o = json_pack("{s:s, s:s, s:i}", "prefix", pfx, "kind", kinds[kind], "nexthop", (int)nh);
	if (kind == ROUTER_RT_STATIC || kind == ROUTER_RT_NEIGH) {
		const struct router_nhc *n = &c->r->nhc[nh];

		json_object_set_new(o, "via", json_string(router_ip_str(n->family, n->ip, a,
									sizeof(a))));
		json_object_set_new(o, "port", json_string(c->r->e->ports[n->port].name));
		json_object_set_new(o, "resolved", json_boolean(n->neigh));
	}
	json_array_append_new(c->arr, o);
	return 0;
}

static int
ctl_route_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	struct list_ctx c = { .r = r };

	if (r == NULL || ep_ctl_u64(req, "limit", 1000, UINT32_MAX, &c.limit, err) < 0)
		return -1;
	c.arr = json_array();
	router_route_each(r, route_one, &c);
	json_object_set_new(res, "routes", c.arr);
	json_object_set_new(res, "count", json_integer((json_int_t)c.count));
	json_object_set_new(res, "routes4", json_integer(r->n_routes4));
	json_object_set_new(res, "routes6", json_integer(r->n_routes6));
	return 0;
}

static const char *
opt_str(json_t *req, const char *key)
{
	json_t *v = json_object_get(req, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int
ctl_neigh_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *ip, *mac;

	if (r == NULL || (ip = ep_ctl_str(req, "ip", err)) == NULL ||
	    (mac = ep_ctl_str(req, "mac", err)) == NULL)
		return -1;
	if (json_object_get(req, "dev") != NULL && opt_str(req, "dev") == NULL)
		return ep_err_set(err, "dev: must be a port name");
	return router_neigh_add(r, ip, mac, opt_str(req, "dev"), err);
}

static int
ctl_neigh_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *ip;

	if (r == NULL || (ip = ep_ctl_str(req, "ip", err)) == NULL)
		return -1;
	return router_neigh_del(r, ip, err);
}

static int
ctl_neigh_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	json_t *arr;

	if (r == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = ROUTER_NH_FIRST; i < r->p.max_nexthops; i++) {
		const struct router_nhc *n = &r->nhc[i];
		char a[INET6_ADDRSTRLEN], m[RTE_ETHER_ADDR_FMT_SIZE];

		if (!n->in_use || !n->neigh)
			continue;
		rte_ether_format_addr(m, sizeof(m), &n->mac);
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i, s:i}",
			"ip", router_ip_str(n->family, n->ip, a, sizeof(a)), "mac", m,
			"port", r->e->ports[n->port].name, "nexthop", (int)i,
			"routes_via", (int)(n->refs - 1)));
	}
	json_object_set_new(res, "neighbors", arr);
	return 0;
}

static int
ctl_acl_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *rule;
	uint64_t index;

	if (r == NULL || (rule = ep_ctl_str(req, "rule", err)) == NULL ||
	    ep_ctl_u64(req, "index", r->n_rules, UINT32_MAX, &index, err) < 0)
		return -1;
	if (router_acl_insert(r, rule, (int64_t)index, err) < 0)
		return -1;
	json_object_set_new(res, "index", json_integer((json_int_t)index));
	json_object_set_new(res, "rules", json_integer(r->n_rules));
	return 0;
}

static int
ctl_acl_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	uint64_t index;

	if (r == NULL)
		return -1;
	if (json_object_get(req, "index") == NULL)
		return ep_err_set(err, "index: missing");
	if (ep_ctl_u64(req, "index", 0, UINT32_MAX, &index, err) < 0)
		return -1;
	if (router_acl_delete(r, index, err) < 0)
		return -1;
	json_object_set_new(res, "rules", json_integer(r->n_rules));
	return 0;
}

static int
ctl_acl_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	json_t *arr;

	if (r == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = 0; i < r->n_rules; i++) {
		char text[512];

		router_acl_format(&r->rules[i], text, sizeof(text));
		json_array_append_new(arr, json_pack("{s:i, s:s}", "index", (int)i, "rule", text));
	}
	json_object_set_new(res, "rules", arr);
	json_object_set_new(res, "default", json_string(r->default_deny ? "deny" : "permit"));
	json_object_set_new(res, "classify", json_string(router_acl_alg_name(r->acl_alg)));
	return 0;
}

static int
ctl_acl_replace(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	json_t *v = json_object_get(req, "rules");
	const char **list = NULL;
	char *copy = NULL;
	uint32_t n = 0;
	int rc;

	if (r == NULL)
		return -1;
	if (json_is_array(v)) {
		list = calloc(json_array_size(v) + 1, sizeof(*list));
		for (size_t i = 0; list != NULL && i < json_array_size(v); i++) {
			if (!json_is_string(json_array_get(v, i))) {
				free(list);
				return ep_err_set(err, "rules[%zu]: must be a string", i);
			}
			list[n++] = json_string_value(json_array_get(v, i));
		}
	} else if (json_is_string(v)) {
		/* The CLI sends one string: rules separated by ';'. */
		char *save = NULL;

		copy = strdup(json_string_value(v));
		list = calloc(strlen(json_string_value(v)) / 2 + 2, sizeof(*list));
		for (char *t = copy ? strtok_r(copy, ";", &save) : NULL; list != NULL && t != NULL;
		     t = strtok_r(NULL, ";", &save)) {
			while (*t == ' ')
				t++;
			if (*t != '\0')
				list[n++] = t;
		}
		/* "" or " " is more likely a mistake than a wish to drop every
		 * rule: emptying the ACL takes an explicit empty list. */
		if (list != NULL && n == 0) {
			free(list);
			free(copy);
			return ep_err_set(err, "rules: the string holds no rule; to remove every "
					  "rule send an empty list (rules=[])");
		}
	} else {
		return ep_err_set(err, "rules: missing (an array of rule strings, or one "
				  "string with rules separated by ';')");
	}
	if (list == NULL) {
		free(copy);
		return ep_err_set(err, "out of memory");
	}
	rc = router_acl_replace(r, list, n, err);
	free(list);
	free(copy);
	if (rc == 0)
		json_object_set_new(res, "rules", json_integer(r->n_rules));
	return rc;
}

static int
ctl_acl_set_default(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct router *r = router_or_err(err);
	const char *action;

	if (r == NULL || (action = ep_ctl_str(req, "action", err)) == NULL)
		return -1;
	return router_acl_set_default(r, action, err);
}

static int
ctl_addr_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	json_t *arr = json_array();

	for (int i = 0; i < e->n_ports; i++) {
		const struct ep_port *p = &e->ports[i];
		char a[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN + 4], m[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(m, sizeof(m), &p->mac);
		for (int k = 0; k < p->n_v4 + p->n_v6; k++) {
			if (k < p->n_v4)
				snprintf(s, sizeof(s), "%s/%u", router_ip_str(4,
					 (const uint8_t *)&p->v4[k].addr, a, sizeof(a)), p->v4[k].plen);
			else
				snprintf(s, sizeof(s), "%s/%u", router_ip_str(6,
					 p->v6[k - p->n_v4].addr, a, sizeof(a)),
					 p->v6[k - p->n_v4].plen);
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "port", p->name,
							     "address", s, "mac", m));
		}
	}
	json_object_set_new(res, "addresses", arr);
	return 0;
}

static struct ep_ctl_cmd c_route_add = { "route-add", "prefix=<cidr> via=<ip>",
	"add or replace a static route", ctl_route_add, NULL };
static struct ep_ctl_cmd c_route_del = { "route-del", "prefix=<cidr>",
	"delete a static route", ctl_route_del, NULL };
static struct ep_ctl_cmd c_route_list = { "route-list", "[limit=<n>]",
	"list routes (static, neighbor, connected, local)", ctl_route_list, NULL };
static struct ep_ctl_cmd c_neigh_add = { "neigh-add", "ip=<ip> mac=<mac> [dev=<port>]",
	"add or change a static neighbour and its host route", ctl_neigh_add, NULL };
static struct ep_ctl_cmd c_neigh_del = { "neigh-del", "ip=<ip>",
	"delete a neighbour; routes via it become unresolved", ctl_neigh_del, NULL };
static struct ep_ctl_cmd c_neigh_list = { "neigh-list", "",
	"list neighbours", ctl_neigh_list, NULL };
static struct ep_ctl_cmd c_acl_add = { "acl-add", "rule=<rule> [index=<n>]",
	"insert an ACL rule before rule n (default: append)", ctl_acl_add, NULL };
static struct ep_ctl_cmd c_acl_del = { "acl-del", "index=<n>",
	"delete ACL rule n", ctl_acl_del, NULL };
static struct ep_ctl_cmd c_acl_list = { "acl-list", "",
	"list ACL rules in order and the default action", ctl_acl_list, NULL };
static struct ep_ctl_cmd c_acl_replace = { "acl-replace", "rules=<rule;rule;...>",
	"replace the whole ACL atomically", ctl_acl_replace, NULL };
static struct ep_ctl_cmd c_acl_set_default = { "acl-set-default", "action=permit|deny",
	"action when no rule matches", ctl_acl_set_default, NULL };
static struct ep_ctl_cmd c_addr_list = { "addr-list", "",
	"the data plane's own addresses per port", ctl_addr_list, NULL };

EP_CTL_REGISTER(c_route_add)
EP_CTL_REGISTER(c_route_del)
EP_CTL_REGISTER(c_route_list)
EP_CTL_REGISTER(c_neigh_add)
EP_CTL_REGISTER(c_neigh_del)
EP_CTL_REGISTER(c_neigh_list)
EP_CTL_REGISTER(c_acl_add)
EP_CTL_REGISTER(c_acl_del)
EP_CTL_REGISTER(c_acl_list)
EP_CTL_REGISTER(c_acl_replace)
EP_CTL_REGISTER(c_acl_set_default)
EP_CTL_REGISTER(c_addr_list)
