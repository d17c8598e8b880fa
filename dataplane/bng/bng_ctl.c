/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the BNG.  Each handler turns its JSON fields
 * into the same text the config file uses (integers and arrays become
 * "4094", "a,b") and calls the one business function, so both paths accept
 * and reject exactly the same input.
 *
 *   sub-add       id=<n> qinq=<o.i>|vlan=<n> [pppoe=<s> mac=<mac>] [mac=<mac>]
 *                 | id=<n> mac=<mac> (untagged IPoE: keyed by the client MAC)
 *                 [ipv4=<a[/l]>[,...] | ["a", ...]] [ipv6=<prefix>] [policer=<name>]
 *                 [pipe=<name>] [subport=<n>]
 *   sub-add-bulk  subscribers=[{sub-add fields}, ...]
 *   sub-del       id=<n>
 *   sub-get       id=<n>
 *   sub-list      [limit=<n>] [offset=<n>]
 *   policer-add   name=<n> cir= cbs= pir= pbs= [mode=rfc2698|rfc4115] [yellow=]
 *   pipe-add      name=<n> rate= [tb_size=] [tc_rates=] [tc_period=] [wrr=] [tc_ov_weight=]
 *   profile-list
 *   bng-stats
 *
 * The uplink ACL and the core routes are the modules' commands (acl-*
 * with table=bng-uplink, route-* and neigh-* with table=bng).
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>

#include "ep_ctl.h"
#include "bng.h"
#include "bng_counters.h"

static struct bng *
bng_or_err(struct ep_engine *e, struct ep_err *err)
{
	struct bng *b = bng_of(e);

	if (b == NULL)
		ep_err_set(err, "no bng pipeline is configured");
	return b;
}

static int
req_from_json(json_t *obj, struct bng_sub_req *r, struct ep_err *err)
{
	const char *key;
	json_t *v;

	bng_sub_req_init(r);
	if (!json_is_object(obj))
		return ep_err_set(err, "a subscriber must be an object");
	json_object_foreach(obj, key, v) {
		char text[512];

		if (strcmp(key, "cmd") == 0)
			continue;
		if (ep_ctl_field_text(key, v, text, sizeof(text), err) < 0)
			return -1;
		if (bng_sub_req_set(r, key, text, err) < 0)
			return -1;
	}
	if (r->id == 0)
		return ep_err_set(err, "id: missing");
	return 0;
}

static int
ctl_sub_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	struct bng_sub_req r;

	if (b == NULL || req_from_json(req, &r, err) < 0)
		return -1;
	return bng_sub_add(b, &r, 1, NULL, err);
}

static int
ctl_sub_add_bulk(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	json_t *arr = json_object_get(req, "subscribers"), *o;
	struct bng_sub_req *r;
	size_t i, n;
	int rc = 0;

	if (b == NULL)
		return -1;
	if (!json_is_array(arr))
		return ep_err_set(err, "subscribers: must be a list of sub-add objects");
	n = json_array_size(arr);
	r = malloc(sizeof(*r) * (n ? n : 1));
	if (r == NULL)
		return ep_err_set(err, "out of memory");
	json_array_foreach(arr, i, o) {
		if (req_from_json(o, &r[i], err) < 0) {
			char inner[sizeof(err->msg)];

			snprintf(inner, sizeof(inner), "%s", err->msg);
			ep_err_set(err, "subscribers[%zu]: %s (none added)", i, inner);
			rc = -1;
			break;
		}
	}
	if (rc == 0) {
		uint64_t t0 = rte_rdtsc();

		rc = bng_sub_add(b, r, (uint32_t)n, NULL, err);
		/* The table work alone (JSON decoding excluded), for adds/s. */
		if (rc == 0)
			json_object_set_new(res, "table_us", json_integer((json_int_t)(
				(rte_rdtsc() - t0) * 1000000 / rte_get_tsc_hz())));
	}
	free(r);
	if (rc == 0)
		json_object_set_new(res, "added", json_integer((json_int_t)n));
	return rc;
}

static int
ctl_sub_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	uint64_t id;

	if (b == NULL || ep_ctl_u64(req, "id", 0, UINT32_MAX, &id, err) < 0)
		return -1;
	return bng_sub_del(b, (uint32_t)id, err);
}

static json_t *
counter(uint64_t pkts, uint64_t bytes)
{
	return json_pack("{s:I, s:I}", "pkts", (json_int_t)pkts, "bytes", (json_int_t)bytes);
}

static json_t *
sub_json(const struct bng *b, const struct bng_sub *s, bool counters)
{
	char a[INET6_ADDRSTRLEN], t[64];
	json_t *o = json_pack("{s:i}", "id", (int)s->id), *v4 = json_array();

	if (s->key.n_vlans == 2) {
		snprintf(t, sizeof(t), "%u.%u", s->key.outer, s->key.inner);
		json_object_set_new(o, "qinq", json_string(t));
	} else if (s->key.n_vlans == 1) {
		json_object_set_new(o, "vlan", json_integer(s->key.outer));
	}
	if (s->key.pppoe)
		json_object_set_new(o, "pppoe", json_integer(s->key.session));
	if (s->has_mac) {
		rte_ether_format_addr(t, sizeof(t), &s->mac);
		json_object_set_new(o, "mac", json_string(t));
	}
	for (int i = 0; i < s->n_v4; i++) {
		char p[INET6_ADDRSTRLEN + 4];

		inet_ntop(AF_INET, &s->ranges.v4_net[i], a, sizeof(a));
		snprintf(p, sizeof(p), s->v4_plen[i] == 32 ? "%s" : "%s/%u", a, s->v4_plen[i]);
		json_array_append_new(v4, json_string(p));
	}
	json_object_set_new(o, "ipv4", v4);
	if (s->has_v6) {
		char p[INET6_ADDRSTRLEN + 4];

		inet_ntop(AF_INET6, s->v6, a, sizeof(a));
		snprintf(p, sizeof(p), "%s/%u", a, s->v6_plen);
		json_object_set_new(o, "ipv6", json_string(p));
	}
	json_object_set_new(o, "policer", s->policer == BNG_NO_POLICER ? json_null() :
			    json_string(b->pol->pol[s->policer]->name));
	json_object_set_new(o, "pipe", json_string(b->hqos->prof[s->pipe_prof].name));
	json_object_set_new(o, "subport", json_integer(s->subport));
	json_object_set_new(o, "pipe_id", json_integer(s->pipe));
	if (counters) {
		static const char *const colour[3] = { "green", "yellow", "red" };
		struct bng_sub_counters c;
		json_t *up = json_object(), *drops;

		bng_sub_counters(b, s, &c);
		for (int k = 0; k < 3; k++)
			json_object_set_new(up, colour[k], counter(c.pkts[k], c.bytes[k]));
		json_object_set_new(o, "uplink", up);
		json_object_set_new(o, "downlink", counter(c.down_pkts, c.down_bytes));
		drops = json_pack("{s:I, s:I}", "bng_policer_red", (json_int_t)c.pkts[2],
				  "bng_spoofed_source", (json_int_t)c.spoofed);
		json_object_set_new(o, "drops", drops);
	}
	return o;
}

static int
ctl_sub_get(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	const struct bng_sub *s;
	uint64_t id;

	if (b == NULL || ep_ctl_u64(req, "id", 0, UINT32_MAX, &id, err) < 0)
		return -1;
	s = bng_sub_get(b, (uint32_t)id);
	if (s == NULL)
		return ep_err_set(err, "id: no subscriber %" PRIu64, id);
	{
		json_t *o = sub_json(b, s, true);

		json_object_update(res, o);
		json_decref(o);
	}
	return 0;
}

static int
ctl_sub_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	uint64_t limit, offset, seen = 0;
	json_t *arr;

	if (b == NULL || ep_ctl_u64(req, "limit", 100, UINT32_MAX, &limit, err) < 0 ||
	    ep_ctl_u64(req, "offset", 0, UINT32_MAX, &offset, err) < 0)
		return -1;
	arr = json_array();
	for (uint32_t id = 1; id <= b->p.max_subscribers && json_array_size(arr) < limit; id++) {
		const struct bng_sub *s = b->subs[id];

		if (s != NULL && seen++ >= offset)
			json_array_append_new(arr, sub_json(b, s, false));
	}
	json_object_set_new(res, "subscribers", arr);
	json_object_set_new(res, "total", json_integer(b->n_subs));
	return 0;
}

/* "k=v k=v" from every field but cmd and name. */
static int
spec_from_json(json_t *req, char *spec, size_t n, const char **name, struct ep_err *err)
{
	static const char *const skip[] = { "name", NULL };

	*name = ep_ctl_name(req, "name", err);
	if (*name == NULL)
		return -1;
	return ep_ctl_spec(req, skip, spec, n, err);
}

static int
ctl_policer_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	const char *name;
	char spec[512];

	if (b == NULL || spec_from_json(req, spec, sizeof(spec), &name, err) < 0)
		return -1;
	return ep_policer_set(b->pol, name, spec, err);
}

static int
ctl_pipe_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	const char *name;
	char spec[512];

	if (b == NULL || spec_from_json(req, spec, sizeof(spec), &name, err) < 0)
		return -1;
	return ep_sched_profile_set(b->hqos, name, spec[0] ? spec : "", err);
}

static int
ctl_profile_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	json_t *pols, *pipes;

	if (b == NULL)
		return -1;
	pols = json_array();
	for (uint32_t i = 0; i < b->pol->n; i++) {
		const struct ep_policer *p = b->pol->pol[i];
		bool r4115 = p->mode == EP_POLICER_RFC4115;

		json_array_append_new(pols, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:i}",
			"name", p->name, "mode", r4115 ? "rfc4115" : "rfc2698",
			"cir", (json_int_t)(p->cir * 8), "cbs", (json_int_t)p->cbs,
			r4115 ? "eir" : "pir", (json_int_t)(p->pir * 8),
			r4115 ? "ebs" : "pbs", (json_int_t)p->pbs, "yellow", p->yellow));
	}
	pipes = json_array();
	for (uint32_t i = 0; i < b->hqos->n_prof; i++) {
		const struct ep_sched_profile *p = &b->hqos->prof[i];
		json_t *tc = json_array();

		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
			json_array_append_new(tc, json_integer((json_int_t)(p->p.tc_rate[t] * 8)));
		json_array_append_new(pipes, json_pack("{s:s, s:I, s:I, s:o, s:I, s:[iiii]}",
			"name", p->name, "rate", (json_int_t)(p->p.tb_rate * 8),
			"tb_size", (json_int_t)p->p.tb_size, "tc_rates", tc,
			"tc_period", (json_int_t)p->p.tc_period, "wrr", p->p.wrr_weights[0],
			p->p.wrr_weights[1], p->p.wrr_weights[2], p->p.wrr_weights[3]));
	}
	json_object_set_new(res, "policers", pols);
	json_object_set_new(res, "pipes", pipes);
	return 0;
}

static int
ctl_bng_stats(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct bng *b = bng_or_err(e, err);
	static const char *const colour[3] = { "green", "yellow", "red" };
	uint64_t punt[BNG_PUNT__COUNT] = {0}, cp[3] = {0}, cb[3] = {0};
	uint64_t up = 0, down = 0, full = 0, answered = 0;
	json_t *u, *p, *d, *tcs;

	if (b == NULL || ep_sched_stats_collect(b->hqos, err) < 0)
		return -1;
	for (int w = 0; w < b->n_up; w++) {
		const struct bng_up *x = b->up[w];

		for (int k = 0; k < BNG_PUNT__COUNT; k++)
			punt[k] += x->punt[k];
		for (int c = 0; c < 3; c++) {
			cp[c] += x->colour_pkts[c];
			cb[c] += x->colour_bytes[c];
		}
		up += x->pkts;
		full += x->punt_ring_full;
		answered += x->nd_answered;
	}
	u = json_pack("{s:I}", "pkts", (json_int_t)up);
	p = json_object();
	for (int k = 0; k < BNG_PUNT__COUNT; k++)
		json_object_set_new(p, bng_punt_name[k], json_integer((json_int_t)punt[k]));
	json_object_set_new(u, "punted", p);
	json_object_set_new(u, "punt_ring_full", json_integer((json_int_t)full));
	json_object_set_new(u, "punt_ring_queued",
			    json_integer(b->punt_ring ? (json_int_t)rte_ring_count(b->punt_ring) : 0));
	json_object_set_new(u, "nd_answered", json_integer((json_int_t)answered));
	for (int c = 0; c < 3; c++)
		json_object_set_new(u, colour[c], counter(cp[c], cb[c]));
	tcs = json_array();
	for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++) {
		uint64_t enq = 0, drop = 0;

		for (int k = 0; k < b->hqos->n_ports; k++) {
			enq += b->hqos->ports[k]->tc_pkts[t];
			drop += b->hqos->ports[k]->tc_dropped[t];
		}
		json_array_append_new(tcs, json_pack("{s:i, s:I, s:I}", "tc", t, "enqueued",
						     (json_int_t)enq, "dropped", (json_int_t)drop));
	}
	for (int w = 0; w < b->n_down; w++)
		down += b->down[w]->pkts;
	d = json_pack("{s:I, s:o}", "pkts", (json_int_t)down, "hqos_tc", tcs);
	json_object_set_new(res, "subscribers", json_integer(b->n_subs));
	json_object_set_new(res, "uplink", u);
	json_object_set_new(res, "downlink", d);
	return 0;
}

static struct ep_ctl_cmd c_sub_add = { "sub-add",
	"id=<n> qinq=<o.i>|vlan=<n> [pppoe=<s>] [mac=<mac>] (untagged IPoE: mac= alone) "
	"[ipv4=<a>[,<a>]] [ipv6=<prefix>] "
	"[policer=<name>] [pipe=<name>] [subport=<n>]",
	"add or replace a subscriber atomically", ctl_sub_add, NULL };
static struct ep_ctl_cmd c_sub_add_bulk = { "sub-add-bulk", "subscribers=[{...}, ...]",
	"add or replace many subscribers (one grace period for the batch)", ctl_sub_add_bulk,
	NULL };
static struct ep_ctl_cmd c_sub_del = { "sub-del", "id=<n>", "delete a subscriber",
	ctl_sub_del, NULL };
static struct ep_ctl_cmd c_sub_get = { "sub-get", "id=<n>",
	"a subscriber with its counters", ctl_sub_get, NULL };
static struct ep_ctl_cmd c_sub_list = { "sub-list", "[limit=<n>] [offset=<n>]",
	"list subscribers", ctl_sub_list, NULL };
static struct ep_ctl_cmd c_policer_add = { "policer-add",
	"name=<n> cir= cbs= pir= pbs= [mode=rfc2698|rfc4115] [yellow=bump|cs0|<dscp>]",
	"add or change an uplink policer profile", ctl_policer_add, NULL };
static struct ep_ctl_cmd c_pipe_add = { "pipe-add",
	"name=<n> rate= [tb_size=] [tc_rates=] [tc_period=] [wrr=] [tc_ov_weight=]",
	"add or change a downlink HQoS pipe profile", ctl_pipe_add, NULL };
static struct ep_ctl_cmd c_profile_list = { "profile-list", "",
	"policer and pipe profiles", ctl_profile_list, NULL };
static struct ep_ctl_cmd c_bng_stats = { "bng-stats", "",
	"BNG totals: punted by kind, policer colours, HQoS per traffic class", ctl_bng_stats,
	NULL };
EP_CTL_REGISTER(c_sub_add)
EP_CTL_REGISTER(c_sub_add_bulk)
EP_CTL_REGISTER(c_sub_del)
EP_CTL_REGISTER(c_sub_get)
EP_CTL_REGISTER(c_sub_list)
EP_CTL_REGISTER(c_policer_add)
EP_CTL_REGISTER(c_pipe_add)
EP_CTL_REGISTER(c_profile_list)
EP_CTL_REGISTER(c_bng_stats)
