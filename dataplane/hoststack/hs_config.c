/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The [hoststack] section.
 *
 *   [hoststack]
 *   attach_socket = /run/edgeplane/hoststack.sock   # where applications attach
 *   attach_group = edgeplane        # socket mode 0660 with this group (default: 0600, root)
 *   terminate = 198.18.10.2 5201-5299   # repeatable: <address|any> <port|lo-hi|any>
 *                                       # none at all: every address, every port
 *   route = 198.18.50.0/24 via 198.18.10.1
 *   neighbor = 198.18.10.1 02:00:00:00:10:01
 *   policy = telemetry lport=9000-9099 dscp=46 priority=7
 *   max_sockets = 4096
 *   rx_bytes = 8388608              # per socket and direction: the largest SO_RCVBUF / SO_SNDBUF
 *   tx_bytes = 4194304
 *   rx_slots = 8192                 # datagrams per ring (power of two)
 *   tx_slots = 4096
 *   doorbell_slots = 4096           # per application and worker (power of two)
 *   ephemeral_ports = 32768-60999
 *   mtu = 1500                      # every port; port_mtu = <port> <mtu> for one
 *   reasm_timeout_ms = 3000
 *   reasm_entries = 4096            # datagrams being reassembled, per worker
 *   icmp_ratelimit = 1000           # ICMP errors per second per worker
 *   shed_watermark_pct = 75         # receive ring fill above which ...
 *   shed_priority = 4               # ... datagrams of a lower priority are refused
 *   default_priority = 4            # datagrams no policy rule matches
 *
 * Errors name file:line and the key, like every section.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hoststack.h"

static bool
pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int
hs_params_from_config(struct ep_engine *e, struct ep_cfg_section *s, struct hs_params *p,
		      struct ep_err *err)
{
	static const struct { const char *key; size_t off; uint64_t min, max; bool p2; } keys[] = {
		{ "max_sockets", offsetof(struct hs_params, max_sockets), 1, 1u << 20, false },
		{ "rx_slots", offsetof(struct hs_params, rx_slots), 16, 1u << 20, true },
		{ "tx_slots", offsetof(struct hs_params, tx_slots), 16, 1u << 20, true },
		{ "rx_bytes", offsetof(struct hs_params, rx_bytes), 65536, 1u << 30, false },
		{ "tx_bytes", offsetof(struct hs_params, tx_bytes), 65536, 1u << 30, false },
		{ "doorbell_slots", offsetof(struct hs_params, db_slots), 16, 1u << 20, true },
		{ "reasm_timeout_ms", offsetof(struct hs_params, reasm_ms), 1, 120000, false },
		{ "reasm_entries", offsetof(struct hs_params, reasm_entries), 16, 1u << 20, false },
		{ "icmp_ratelimit", offsetof(struct hs_params, icmp_rate), 0, 1000000, false },
		{ "shed_watermark_pct", offsetof(struct hs_params, shed_watermark_pct), 1, 100, false },
		{ "max_wait_us", offsetof(struct hs_params, max_wait_us), 1, 1000000, false },
		{ "spin_us", offsetof(struct hs_params, spin_us), 0, 1000000, false },
	};
	const struct ep_cfg_kv *kv;
	const char *v;
	uint64_t x;

	hs_params_default(p);
	if (s == NULL)
		return 0;
	for (size_t i = 0; i < RTE_DIM(keys); i++) {
		uint32_t *f = (uint32_t *)((char *)p + keys[i].off);

		if (ep_cfg_u64(e->cfg, s, keys[i].key, *f, keys[i].min, keys[i].max, &x, err) < 0)
			return -1;
		if (keys[i].p2 && !pow2(x))
			return ep_cfg_error(e->cfg, ep_cfg_get(e->cfg, s, keys[i].key, NULL), err,
					    "%llu is not a power of two", (unsigned long long)x);
		*f = (uint32_t)x;
	}
	if (ep_cfg_u64(e->cfg, s, "shed_priority", p->shed_priority, 0, 8, &x, err) < 0)
		return -1;
	p->shed_priority = (uint8_t)x;
	if (ep_cfg_u64(e->cfg, s, "default_priority", p->default_priority, 0, 7, &x, err) < 0)
		return -1;
	p->default_priority = (uint8_t)x;
	v = ep_cfg_str(e->cfg, s, "attach_socket", p->attach_path, err);
	if (v == NULL)
		return -1;
	kv = ep_cfg_get(e->cfg, s, "attach_socket", NULL);
	if (v[0] != '/' || strlen(v) >= sizeof(p->attach_path))
		return ep_cfg_error(e->cfg, kv, err, "must be an absolute path shorter than %zu bytes",
				    sizeof(p->attach_path));
	snprintf(p->attach_path, sizeof(p->attach_path), "%s", v);
	v = ep_cfg_str(e->cfg, s, "attach_group", "", err);
	if (v == NULL)
		return -1;
	if (strlen(v) >= sizeof(p->attach_group))
		return ep_cfg_error(e->cfg, ep_cfg_get(e->cfg, s, "attach_group", NULL), err,
				    "group name too long");
	snprintf(p->attach_group, sizeof(p->attach_group), "%s", v);
	kv = ep_cfg_get(e->cfg, s, "ephemeral_ports", err);
	if (kv == NULL && err->msg[0] != '\0')
		return -1;
	if (kv != NULL) {
		unsigned int lo, hi;
		char extra[4];

		if (sscanf(kv->val, "%u-%u%3s", &lo, &hi, extra) != 2 || lo < 1024 || hi > 65535 ||
		    lo > hi)
			return ep_cfg_error(e->cfg, kv, err, "'%s' is not lo-hi within 1024-65535",
					    kv->val);
		p->eph_lo = (uint16_t)lo;
		p->eph_hi = (uint16_t)hi;
	}
	/* A 1280-byte IPv6 minimum; 9000 for jumbo links. */
	if (ep_cfg_u64(e->cfg, s, "mtu", 1500, 1280, 9000, &x, err) < 0)
		return -1;
	for (int i = 0; i < EP_MAX_PORTS; i++)
		p->mtu[i] = (uint16_t)x;
	return 0;
}

struct load_ctx {
	struct hs_stack *s;
	struct ep_cfg *cfg;
	struct ep_err *err;
	struct hs_policy_rule *rules;
	uint32_t n_rules;
};

/* Prefix the error already in c->err with "file:line: key 'k': ". */
static int
kv_error(struct load_ctx *c, const struct ep_cfg_kv *kv)
{
	char inner[sizeof(c->err->msg)];

	snprintf(inner, sizeof(inner), "%s", c->err->msg);
	return ep_cfg_error(c->cfg, kv, c->err, "%s", inner);
}

static int
each_port_mtu(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	char name[64], extra[4];
	unsigned int mtu;
	struct ep_port *p;

	if (sscanf(kv->val, "%63s %u%3s", name, &mtu, extra) != 2)
		return ep_cfg_error(c->cfg, kv, c->err, "expected '<port> <mtu>'");
	p = ep_port_by_name(c->s->e, name);
	if (p == NULL)
		return ep_cfg_error(c->cfg, kv, c->err, "no [port %s]", name);
	if (mtu < 1280 || mtu > 9000)
		return ep_cfg_error(c->cfg, kv, c->err, "%u is outside [1280, 9000]", mtu);
	c->s->p.mtu[p->index] = (uint16_t)mtu;
	c->s->routes_cfg->mtu[p->index] = (uint16_t)mtu;
	return 0;
}

static int
each_route(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	char pfx[64], via[8], gw[64], extra[4];

	if (sscanf(kv->val, "%63s %7s %63s%3s", pfx, via, gw, extra) != 3 || strcmp(via, "via") != 0)
		return ep_cfg_error(c->cfg, kv, c->err, "expected '<prefix> via <gateway>'");
	return hs_route_add(c->s, pfx, gw, c->err) < 0 ? kv_error(c, kv) : 0;
}

static int
each_neighbor(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	char ip[64], mac[32], extra[4];

	if (sscanf(kv->val, "%63s %31s%3s", ip, mac, extra) != 2)
		return ep_cfg_error(c->cfg, kv, c->err, "expected '<ip> <mac>'");
	return hs_neigh_static_add(c->s, ip, mac, c->err) < 0 ? kv_error(c, kv) : 0;
}

static int
each_terminate(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;

	return hs_term_add(c->s, kv->val, c->err) < 0 ? kv_error(c, kv) : 0;
}

static int
each_policy(const struct ep_cfg_kv *kv, void *arg)
{
	struct load_ctx *c = arg;
	struct hs_policy_rule *r;

	if (c->n_rules == HS_MAX_POLICY)
		return ep_cfg_error(c->cfg, kv, c->err, "more than %d policy rules", HS_MAX_POLICY);
	r = &c->rules[c->n_rules];
	if (hs_policy_parse(kv->val, r, c->err) < 0)
		return kv_error(c, kv);
	for (uint32_t i = 0; i < c->n_rules; i++)
		if (strcmp(c->rules[i].name, r->name) == 0)
			return ep_cfg_error(c->cfg, kv, c->err, "a rule named '%s' is given twice",
					    r->name);
	c->n_rules++;
	return 0;
}

int
hs_load_config(struct hs_stack *s, struct ep_cfg *cfg, struct ep_cfg_section *sec,
	       struct ep_err *err)
{
	struct load_ctx c = { .s = s, .cfg = cfg, .err = err };
	int rc = -1;

	c.rules = calloc(HS_MAX_POLICY, sizeof(*c.rules));
	if (c.rules == NULL)
		return ep_err_set(err, "out of memory");
	/* Addresses and connected subnets first: routes and neighbours are
	 * checked against them. */
	if (hs_routes_build(s, err) < 0)
		goto out;
	if (ep_cfg_each(sec, "port_mtu", each_port_mtu, &c) != 0 ||
	    ep_cfg_each(sec, "route", each_route, &c) != 0 ||
	    ep_cfg_each(sec, "neighbor", each_neighbor, &c) != 0 ||
	    ep_cfg_each(sec, "terminate", each_terminate, &c) != 0 ||
	    ep_cfg_each(sec, "policy", each_policy, &c) != 0)
		goto out;
	if (hs_policy_commit(s, c.rules, c.n_rules, err) < 0)
		goto out;
	rc = 0;
out:
	free(c.rules);
	return rc;
}
