/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the FIB instances.  Every command names its
 * FIB with `table=<name>`; without it, the only FIB of the process is meant
 * (a process with several refuses and names them).  Each handler calls the
 * one function of fib.c / fib_nh.c the config loader uses too.
 *
 *   fib-tables
 *   route-add     [table=<fib>] prefix=<cidr> via=<ip>
 *   route-del     [table=<fib>] prefix=<cidr>
 *   route-list    [table=<fib>] [limit=<n>]                  (default 1000)
 *   neigh-add     [table=<fib>] ip=<ip> mac=<mac> [dev=<port>]
 *   neigh-del     [table=<fib>] ip=<ip>
 *   neigh-list    [table=<fib>]
 *   fib-stats     [table=<fib>]     resolver and ICMP counters of its workers
 *   addr-list                       the data plane's own addresses per port
 */
#include <stdio.h>
#include <string.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "ep_fib_node.h"

static struct ep_fib *
fib_of(struct ep_engine *e, json_t *req, struct ep_err *err)
{
	return ep_ctl_instance(e, req, EP_FIB_KIND, err);
}

static int
ctl_fib_tables(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	json_t *arr = json_array();

	for (struct ep_fib *f = ep_fib_next(e, NULL); f != NULL; f = ep_fib_next(e, f))
		json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:b}", "table", f->name,
			"routes4", (int)f->n_routes4, "routes6", (int)f->n_routes6,
			"neigh_learn", f->p.neigh_learn));
	json_object_set_new(res, "tables", arr);
	return 0;
}

static int
ctl_route_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	const char *prefix, *via;

	if (f == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL ||
	    (via = ep_ctl_str(req, "via", err)) == NULL)
		return -1;
	return ep_fib_route_add(f, prefix, via, err);
}

static int
ctl_route_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	const char *prefix;

	if (f == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL)
		return -1;
	return ep_fib_route_del(f, prefix, err);
}

struct list_ctx {
	struct ep_fib *f;
	json_t *arr;
	uint64_t limit, count;
};

static int
route_one(uint8_t family, const uint8_t *prefix, uint8_t plen, enum ep_fib_route_kind kind,
	  uint32_t nh, void *arg)
{
	static const char *const kinds[] = { "static", "neighbor", "connected", "local" };
	struct list_ctx *c = arg;
	char a[EP_ADDR_STRLEN], pfx[EP_PREFIX_STRLEN];
	json_t *o;

	if (c->count++ >= c->limit)
		return 0;
	o = json_pack("{s:s, s:s, s:i}", "prefix", ep_prefix_str(family, prefix, plen, pfx,
		      sizeof(pfx)), "kind", kinds[kind], "nexthop", (int)nh);
	if (kind == EP_FIB_RT_STATIC || kind == EP_FIB_RT_NEIGH) {
		const struct ep_fib_nhc *n = &c->f->nhc[nh];

		json_object_set_new(o, "via", json_string(ep_addr_str(n->family, n->ip, a,
									sizeof(a))));
		json_object_set_new(o, "port", json_string(c->f->e->ports[n->port].name));
		json_object_set_new(o, "resolved", json_boolean(n->neigh));
	}
	json_array_append_new(c->arr, o);
	return 0;
}

static int
ctl_route_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	struct list_ctx c = { .f = f };

	if (f == NULL || ep_ctl_u64(req, "limit", 1000, UINT32_MAX, &c.limit, err) < 0)
		return -1;
	c.arr = json_array();
	ep_fib_route_each(f, route_one, &c);
	json_object_set_new(res, "table", json_string(f->name));
	json_object_set_new(res, "routes", c.arr);
	json_object_set_new(res, "count", json_integer((json_int_t)c.count));
	json_object_set_new(res, "routes4", json_integer(f->n_routes4));
	json_object_set_new(res, "routes6", json_integer(f->n_routes6));
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
	struct ep_fib *f = fib_of(e, req, err);
	const char *ip, *mac;

	if (f == NULL || (ip = ep_ctl_str(req, "ip", err)) == NULL ||
	    (mac = ep_ctl_str(req, "mac", err)) == NULL)
		return -1;
	if (json_object_get(req, "dev") != NULL && opt_str(req, "dev") == NULL)
		return ep_err_set(err, "dev: must be a port name");
	return ep_fib_neigh_add(f, ip, mac, opt_str(req, "dev"), err);
}

static int
ctl_neigh_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	const char *ip;

	if (f == NULL || (ip = ep_ctl_str(req, "ip", err)) == NULL)
		return -1;
	return ep_fib_neigh_del(f, ip, err);
}

static int
ctl_neigh_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	json_t *arr;

	if (f == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = EP_FIB_NH_FIRST; i < f->p.max_nexthops; i++) {
		const struct ep_fib_nhc *n = &f->nhc[i];
		char a[EP_ADDR_STRLEN], m[RTE_ETHER_ADDR_FMT_SIZE];

		if (!n->in_use || !n->neigh)
			continue;
		rte_ether_format_addr(m, sizeof(m), &n->mac);
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i, s:i, s:s}",
			"ip", ep_addr_str(n->family, n->ip, a, sizeof(a)), "mac", m,
			"port", e->ports[n->port].name, "nexthop", (int)i,
			"routes_via", (int)(n->refs - 1),
			"state", !n->dynamic ? "static" : n->stale ? "stale" : "reachable"));
	}
	json_object_set_new(res, "table", json_string(f->name));
	json_object_set_new(res, "neighbors", arr);
	return 0;
}

static int
ctl_fib_stats(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct ep_fib *f = fib_of(e, req, err);
	struct ep_fib_worker_stats st;
	json_t *icmp;

	if (f == NULL)
		return -1;
	ep_fib_worker_stats_sum(f, &st);
	icmp = json_object();
	for (int k = 0; k < EP_FIB_ICMP__COUNT; k++)
		json_object_set_new(icmp, ep_fib_icmp_name[k],
				    json_integer((json_int_t)st.icmp_sent[k]));
	json_object_set_new(icmp, "rate_limited", json_integer((json_int_t)st.icmp_rate_limited));
	json_object_set_new(icmp, "not_sent", json_integer((json_int_t)st.icmp_not_sent));
	json_object_set_new(res, "table", json_string(f->name));
	json_object_set_new(res, "icmp_errors", icmp);
	json_object_set_new(res, "resolver", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		"s:I}", "arp_requests", (json_int_t)st.arp_requests,
		"nd_solicits", (json_int_t)st.nd_solicits,
		"throttled", (json_int_t)st.asks_throttled, "failed", (json_int_t)st.asks_failed,
		"heard", (json_int_t)st.heard, "events_lost", (json_int_t)st.events_lost,
		"learnt", (json_int_t)f->n_learnt, "unsolicited", (json_int_t)f->n_unsolicited,
		"expired", (json_int_t)f->n_expired));
	json_object_set_new(res, "fragmented", json_pack("{s:I, s:I}", "packets",
		(json_int_t)st.fragmented, "fragments", (json_int_t)st.fragments));
	return 0;
}

static int
ctl_addr_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	json_t *arr = json_array();

	for (int i = 0; i < e->n_ports; i++) {
		const struct ep_port *p = &e->ports[i];
		char s[EP_PREFIX_STRLEN], m[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(m, sizeof(m), &p->mac);
		for (int k = 0; k < p->n_v4 + p->n_v6; k++) {
			if (k < p->n_v4)
				ep_prefix_str(4, (const uint8_t *)&p->v4[k].addr, p->v4[k].plen, s,
					      sizeof(s));
			else
				ep_prefix_str(6, p->v6[k - p->n_v4].addr, p->v6[k - p->n_v4].plen,
					      s, sizeof(s));
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i}", "port", p->name,
							     "address", s, "mac", m, "mtu", p->mtu));
		}
	}
	json_object_set_new(res, "addresses", arr);
	return 0;
}

static struct ep_ctl_cmd c_fib_tables = { "fib-tables", "",
	"the FIB instances with their route counts", ctl_fib_tables, NULL };
static struct ep_ctl_cmd c_route_add = { "route-add", "[table=<fib>] prefix=<cidr> via=<ip>",
	"add or replace a static route", ctl_route_add, NULL };
static struct ep_ctl_cmd c_route_del = { "route-del", "[table=<fib>] prefix=<cidr>",
	"delete a static route", ctl_route_del, NULL };
static struct ep_ctl_cmd c_route_list = { "route-list", "[table=<fib>] [limit=<n>]",
	"list routes (static, neighbor, connected, local)", ctl_route_list, NULL };
static struct ep_ctl_cmd c_neigh_add = { "neigh-add",
	"[table=<fib>] ip=<ip> mac=<mac> [dev=<port>]",
	"add or change a static neighbour and its host route", ctl_neigh_add, NULL };
static struct ep_ctl_cmd c_neigh_del = { "neigh-del", "[table=<fib>] ip=<ip>",
	"delete a neighbour; routes via it become unresolved", ctl_neigh_del, NULL };
static struct ep_ctl_cmd c_neigh_list = { "neigh-list", "[table=<fib>]",
	"list neighbours (static and learnt)", ctl_neigh_list, NULL };
static struct ep_ctl_cmd c_fib_stats = { "fib-stats", "[table=<fib>]",
	"ARP/ND resolution and ICMP error counters of the FIB's workers", ctl_fib_stats, NULL };
static struct ep_ctl_cmd c_addr_list = { "addr-list", "",
	"the data plane's own addresses per port", ctl_addr_list, NULL };

EP_CTL_REGISTER(c_fib_tables)
EP_CTL_REGISTER(c_route_add)
EP_CTL_REGISTER(c_route_del)
EP_CTL_REGISTER(c_route_list)
EP_CTL_REGISTER(c_neigh_add)
EP_CTL_REGISTER(c_neigh_del)
EP_CTL_REGISTER(c_neigh_list)
EP_CTL_REGISTER(c_fib_stats)
EP_CTL_REGISTER(c_addr_list)
