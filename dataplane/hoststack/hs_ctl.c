/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the host stack.  Each handler reads its
 * fields and calls the function the configuration loader uses too.
 *
 *   hs-sockets        [limit=<n>]            sockets, their counters and drops
 *   hs-apps                                  attached applications
 *   hs-stats                                 per worker: wake-ups, doorbells, ICMP, reassembly
 *   hs-neigh-list                            neighbours each worker knows
 *   hs-neigh-add      ip=<ip> mac=<mac>      a static neighbour (every worker)
 *   hs-route-add      prefix=<cidr> via=<ip>
 *   hs-route-del      prefix=<cidr>
 *   hs-route-list
 *   hs-terminate-add  rule="<address|any> <port|lo-hi|any>"
 *   hs-terminate-del  rule="..."
 *   hs-terminate-list
 *   hs-policy-add     rule="<name> key=value ..." [index=<n>]
 *   hs-policy-del     name=<name>
 *   hs-policy-list
 *   hs-policy-replace rules=[...]            atomic: one bad rule and nothing changes
 *
 * Counters are written by the owning worker without atomics and read here
 * with relaxed loads: a reading may be one burst behind.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ctl.h"
#include "hoststack.h"
#include "hs_ring.h"

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static struct hs_stack *
stack_or_err(struct ep_err *err)
{
	if (hs_global == NULL)
		ep_err_set(err, "no hoststack pipeline is configured");
	return hs_global;
}

static json_t *
addr_json(const struct hs_sockaddr *a)
{
	char buf[INET6_ADDRSTRLEN];

	if (a->family != 4 && a->family != 6)
		return json_null();
	if (inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->addr, buf, sizeof(buf)) == NULL)
		return json_null();
	return json_pack("{s:s, s:i}", "address", buf, "port", rte_be_to_cpu_16(a->port));
}

static json_t *
sock_json(const struct hs_sock *k)
{
	static const char *const st[] = { "bound", "connected", "shut_rd", "shut_wr", "closed" };
	json_t *state = json_array(), *o;
	uint32_t rx_prod = RD(k->shm->rx_prod.v), rx_cons = RD(k->shm->rx_cons.v);
	uint32_t tx_prod = RD(k->shm->tx_prod.v), tx_cons = RD(k->shm->tx_cons.v);

	for (int b = 0; b < 5; b++)
		if (k->state & (1u << b))
			json_array_append_new(state, json_string(st[b]));
	o = json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:i, s:b}",
		      "id", (int)k->id, "gen", (int)k->gen, "pid", (int)k->pid,
		      "family", k->family == 4 ? 4 : 6, "local", addr_json(&k->local),
		      "peer", addr_json(&k->peer), "state", state, "worker", k->worker,
		      "broken", k->broken);
	json_object_set_new(o, "app", k->app != NULL ? json_integer(k->app->id) : json_null());
	json_object_set_new(o, "rx_queued", json_integer((json_int_t)(uint32_t)(rx_prod - rx_cons)));
	json_object_set_new(o, "tx_queued", json_integer((json_int_t)(uint32_t)(tx_prod - tx_cons)));
	json_object_set_new(o, "counters", json_pack("{s:I, s:I, s:I, s:I, s:I}",
		"rx_dgrams", (json_int_t)RD(k->st.rx_dgrams), "rx_bytes", (json_int_t)RD(k->st.rx_bytes),
		"tx_dgrams", (json_int_t)RD(k->st.tx_dgrams), "tx_bytes", (json_int_t)RD(k->st.tx_bytes),
		"wakeups", (json_int_t)RD(k->st.wakeups)));
	json_object_set_new(o, "drops", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
		"ring_full", (json_int_t)RD(k->st.rx_ring_full),
		"low_prio_shed", (json_int_t)RD(k->st.rx_low_prio_shed),
		"policy_rx", (json_int_t)RD(k->st.rx_policy_drop),
		"policy_tx", (json_int_t)RD(k->st.tx_policy_drop),
		"no_route", (json_int_t)RD(k->st.tx_no_route),
		"bad_desc", (json_int_t)RD(k->st.tx_bad_desc)));
	return o;
}

static int
ctl_sockets(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *arr;
	uint64_t limit, n = 0;

	if (s == NULL || ep_ctl_u64(req, "limit", 1000, UINT32_MAX, &limit, err) < 0)
		return -1;
	arr = json_array();
	for (uint32_t i = 0; i < s->p.max_sockets && n < limit; i++)
		if (s->socks[i] != NULL) {
			json_array_append_new(arr, sock_json(s->socks[i]));
			n++;
		}
	json_object_set_new(res, "sockets", arr);
	json_object_set_new(res, "count", json_integer(s->n_live));
	return 0;
}

static int
ctl_apps(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *arr;

	if (s == NULL)
		return -1;
	arr = json_array();
	for (const struct hs_app *a = s->apps; a != NULL; a = a->next_app)
		json_array_append_new(arr, json_pack("{s:i, s:i, s:i, s:i, s:b}", "id", (int)a->id,
						     "pid", (int)a->pid, "uid", (int)a->uid,
						     "sockets", (int)a->n_socks,
						     "attached", a->shm != NULL));
	json_object_set_new(res, "apps", arr);
	json_object_set_new(res, "attach_socket", json_string(s->p.attach_path));
	return 0;
}

static int
ctl_stats(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *arr, *drops = json_object();

	if (s == NULL)
		return -1;
	arr = json_array();
	for (int i = 0; i < s->n_w; i++) {
		const struct hs_wstats *w = &s->w[i]->st;

		json_array_append_new(arr, json_pack(
			"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
			" s:I, s:I, s:I, s:b}",
			"worker", s->w[i]->w != NULL ? s->w[i]->w->name : "",
			"icmp_unreach_sent", (json_int_t)RD(w->icmp_unreach_sent),
			"icmp_unreach_suppressed", (json_int_t)RD(w->icmp_unreach_suppressed),
			"echo_replies", (json_int_t)RD(w->echo_replies),
			"reassembled", (json_int_t)RD(w->reasm_done),
			"fragments_out", (json_int_t)RD(w->fragments_out),
			"handoff_out", (json_int_t)RD(w->handoff_out),
			"handoff_in", (json_int_t)RD(w->handoff_in),
			"doorbells", (json_int_t)RD(w->doorbells),
			"rescans", (json_int_t)RD(w->rescans),
			"waits", (json_int_t)RD(w->waits),
			"kicks_seen", (json_int_t)RD(w->kicks_seen),
			"wait_timeouts", (json_int_t)RD(w->wait_timeouts),
			"late_rx", (json_int_t)RD(w->late_rx),
			"late_doorbell", (json_int_t)RD(w->late_doorbell),
			"arp_requests_sent", (json_int_t)RD(w->arp_requests_sent),
			"ns_sent", (json_int_t)RD(w->ns_sent),
			"hairpin", (json_int_t)RD(w->hairpin),
			"redirected", (json_int_t)RD(w->redirected),
			/* its worker page's flag: applications do not spin meanwhile */
			"polls", __atomic_load_n(&s->wshm[s->w[i]->idx].polls.v, __ATOMIC_RELAXED) != 0));
	}
	/* The host stack's own drop reasons summed over its workers' stages. */
	for (int r = 0; r < EP_DROP__COUNT; r++) {
		uint64_t t = 0;

		if (strncmp(ep_drop_name[r], "hs_", 3) != 0)
			continue;
		for (int i = 0; i < s->n_w; i++) {
			const struct ep_worker *w = s->w[i]->w;

			if (w == NULL)
				continue;
			t += RD(w->service_stage.stats.drops[r]);
			for (int st = 0; st < w->n_stages; st++)
				t += RD(w->stages[st].stats.drops[r]);
		}
		json_object_set_new(drops, ep_drop_name[r], json_integer((json_int_t)t));
	}
	json_object_set_new(res, "workers", arr);
	json_object_set_new(res, "drops", drops);
	json_object_set_new(res, "sockets", json_integer(s->n_live));
	return 0;
}

/* Neighbour tables are worker-private: each worker copies its own out. */
struct nb_snap {
	struct hs_neigh *nb;
	uint32_t n, cap;
};

static void
nb_snap_fn(struct ep_worker *w, void *arg)
{
	struct nb_snap *sn = arg;
	struct hs_wctx *c = w->pipeline_ctx;
	const void *key;
	void *data;
	uint32_t it = 0;
	int32_t pos;

	while (sn->n < sn->cap && (pos = rte_hash_iterate(c->nb_hash, &key, &data, &it)) >= 0)
		sn->nb[sn->n++] = c->nb[pos];
}

static int
ctl_neigh_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	static const char *const states[] = { "free", "static", "reachable", "incomplete" };
	struct hs_stack *s = stack_or_err(err);
	json_t *arr;

	if (s == NULL)
		return -1;
	arr = json_array();
	for (int i = 0; i < s->n_w; i++) {
		struct nb_snap sn = { calloc(1024, sizeof(struct hs_neigh)), 0, 1024 };
		char ip[INET6_ADDRSTRLEN], mac[RTE_ETHER_ADDR_FMT_SIZE];

		if (sn.nb == NULL)
			return ep_err_set(err, "out of memory");
		if (ep_worker_call(s->w[i]->w, nb_snap_fn, &sn, 2000, err) < 0) {
			free(sn.nb);
			return -1;
		}
		for (uint32_t j = 0; j < sn.n; j++) {
			const struct hs_neigh *nb = &sn.nb[j];

			rte_ether_format_addr(mac, sizeof(mac), &nb->mac);
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}",
				"worker", s->w[i]->w->name,
				"ip", hs_ip_str(nb->family, &nb->ip, ip, sizeof(ip)),
				"mac", nb->state == HS_NB_INCOMPLETE ? "" : mac,
				"state", states[nb->state & 3], "port", nb->port,
				"queued", nb->n_queued));
		}
		free(sn.nb);
	}
	json_object_set_new(res, "neighbors", arr);
	return 0;
}

struct nb_add_msg {
	struct hs_neigh nb;
};

static void
nb_add_fn(struct ep_worker *w, void *arg)
{
	const struct nb_add_msg *m = arg;

	hs_nb_learn(w->pipeline_ctx, m->nb.family, &m->nb.ip, &m->nb.mac, m->nb.port, true);
}

/* Static neighbours reach every worker's table by message. */
int hs_neigh_push_static(struct hs_stack *s, struct ep_err *err);

int
hs_neigh_push_static(struct hs_stack *s, struct ep_err *err)
{
	for (int i = 0; i < s->n_static_nb; i++) {
		struct nb_add_msg m = { s->static_nb[i] };

		for (int w = 0; w < s->n_w; w++)
			if (ep_worker_call(s->w[w]->w, nb_add_fn, &m, 2000, err) < 0)
				return -1;
	}
	return 0;
}

static int
ctl_neigh_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *ip, *mac;

	if (s == NULL || (ip = ep_ctl_str(req, "ip", err)) == NULL ||
	    (mac = ep_ctl_str(req, "mac", err)) == NULL)
		return -1;
	if (hs_neigh_static_add(s, ip, mac, err) < 0)
		return -1;
	return hs_neigh_push_static(s, err);
}

static int
ctl_route_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *prefix, *via;

	if (s == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL ||
	    (via = ep_ctl_str(req, "via", err)) == NULL)
		return -1;
	return hs_route_add(s, prefix, via, err);
}

static int
ctl_route_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *prefix;

	if (s == NULL || (prefix = ep_ctl_str(req, "prefix", err)) == NULL)
		return -1;
	return hs_route_del(s, prefix, err);
}

static int
ctl_route_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const struct hs_routes *r;
	json_t *arr, *own;
	char a[INET6_ADDRSTRLEN], pfx[INET6_ADDRSTRLEN + 4];

	if (s == NULL)
		return -1;
	r = s->routes;
	arr = json_array();
	for (int i = 0; r != NULL && i < r->n_rt; i++) {
		const struct hs_rt_entry *x = &r->rt[i];
		json_t *o;

		snprintf(pfx, sizeof(pfx), "%s/%u", hs_ip_str(x->family, &x->prefix, a, sizeof(a)),
			 x->plen);
		o = json_pack("{s:s, s:s, s:s, s:i}", "prefix", pfx,
			      "kind", x->connected ? "connected" : "static",
			      "port", s->e->ports[x->port].name, "mtu", r->mtu[x->port]);
		if (!x->connected)
			json_object_set_new(o, "via", json_string(hs_ip_str(x->family, &x->gw, a,
									     sizeof(a))));
		json_array_append_new(arr, o);
	}
	own = json_array();
	for (int i = 0; r != NULL && i < r->n_own; i++)
		json_array_append_new(own, json_string(hs_ip_str(r->own[i].family, &r->own[i].ip, a,
								 sizeof(a))));
	json_object_set_new(res, "routes", arr);
	json_object_set_new(res, "addresses", own);
	return 0;
}

static int
ctl_term_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *rule;

	if (s == NULL || (rule = ep_ctl_str(req, "rule", err)) == NULL)
		return -1;
	return hs_term_add(s, rule, err);
}

static int
ctl_term_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *rule;

	if (s == NULL || (rule = ep_ctl_str(req, "rule", err)) == NULL)
		return -1;
	return hs_term_del(s, rule, err);
}

static int
ctl_term_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *arr;
	char buf[96];

	if (s == NULL)
		return -1;
	arr = json_array();
	for (int i = 0; i < s->n_term; i++) {
		hs_term_format(&s->term[i], buf, sizeof(buf));
		json_array_append_new(arr, json_string(buf));
	}
	json_object_set_new(res, "rules", arr);
	json_object_set_new(res, "all", json_boolean(s->n_term == 0));
	return 0;
}

static int
ctl_policy_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *rule;
	uint64_t index;

	if (s == NULL || (rule = ep_ctl_str(req, "rule", err)) == NULL ||
	    ep_ctl_u64(req, "index", UINT32_MAX, UINT32_MAX, &index, err) < 0)
		return -1;
	if (hs_policy_add(s, rule, index == UINT32_MAX ? -1 : (int64_t)index, err) < 0)
		return -1;
	json_object_set_new(res, "rules", json_integer(s->n_prules));
	return 0;
}

static int
ctl_policy_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	const char *name;

	if (s == NULL || (name = ep_ctl_str(req, "name", err)) == NULL)
		return -1;
	if (hs_policy_del(s, name, err) < 0)
		return -1;
	json_object_set_new(res, "rules", json_integer(s->n_prules));
	return 0;
}

static int
ctl_policy_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *arr;
	char buf[512];

	if (s == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = 0; i < s->n_prules; i++) {
		hs_policy_format(&s->prules[i], buf, sizeof(buf));
		json_array_append_new(arr, json_pack("{s:i, s:s}", "index", (int)i, "rule", buf));
	}
	json_object_set_new(res, "rules", arr);
	return 0;
}

static int
ctl_policy_replace(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct hs_stack *s = stack_or_err(err);
	json_t *rules = json_object_get(req, "rules"), *v;
	struct hs_policy_rule *all;
	size_t i, n;
	int rc;

	if (s == NULL)
		return -1;
	if (!json_is_array(rules))
		return ep_err_set(err, "field 'rules' must be an array of rule strings");
	n = json_array_size(rules);
	if (n > HS_MAX_POLICY)
		return ep_err_set(err, "more than %d rules", HS_MAX_POLICY);
	all = calloc(n ? n : 1, sizeof(*all));
	if (all == NULL)
		return ep_err_set(err, "out of memory");
	json_array_foreach(rules, i, v) {
		char inner[sizeof(err->msg)];

		if (!json_is_string(v) || hs_policy_parse(json_string_value(v), &all[i], err) < 0) {
			snprintf(inner, sizeof(inner), "%s", json_is_string(v) ? err->msg : "not a string");
			free(all);
			return ep_err_set(err, "rules[%zu]: %s", i, inner);
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(all[j].name, all[i].name) == 0) {
				free(all);
				return ep_err_set(err, "rules[%zu]: name '%s' given twice", i,
						  all[i].name);
			}
	}
	rc = hs_policy_commit(s, all, (uint32_t)n, err);
	free(all);
	if (rc == 0)
		json_object_set_new(res, "rules", json_integer((json_int_t)n));
	return rc;
}

#define CMD(var, name, args, help, fn) \
	static struct ep_ctl_cmd var = { name, args, help, fn, NULL }; \
	EP_CTL_REGISTER(var)

CMD(c_sockets, "hs-sockets", "[limit=<n>]", "host stack sockets: addresses, state, counters, drops", ctl_sockets)
CMD(c_apps, "hs-apps", "", "applications attached to the host stack", ctl_apps)
CMD(c_stats, "hs-stats", "", "host stack per worker: wake-ups, doorbells, ICMP, reassembly; its drops", ctl_stats)
CMD(c_nb_list, "hs-neigh-list", "", "neighbours each host stack worker knows", ctl_neigh_list)
CMD(c_nb_add, "hs-neigh-add", "ip=<ip> mac=<mac>", "a static neighbour for the host stack", ctl_neigh_add)
CMD(c_rt_add, "hs-route-add", "prefix=<cidr> via=<ip>", "a static route of the host stack", ctl_route_add)
CMD(c_rt_del, "hs-route-del", "prefix=<cidr>", "remove a static route of the host stack", ctl_route_del)
CMD(c_rt_list, "hs-route-list", "", "the host stack's addresses and routes", ctl_route_list)
CMD(c_term_add, "hs-terminate-add", "rule=\"<address|any> <port|lo-hi|any>\"", "addresses and ports the host stack takes sockets for", ctl_term_add)
CMD(c_term_del, "hs-terminate-del", "rule=\"...\"", "remove a terminate rule (existing sockets stay)", ctl_term_del)
CMD(c_term_list, "hs-terminate-list", "", "terminate rules (none: everything)", ctl_term_list)
CMD(c_pol_add, "hs-policy-add", "rule=\"<name> key=value ...\" [index=<n>]", "insert a policy rule (default: append)", ctl_policy_add)
CMD(c_pol_del, "hs-policy-del", "name=<name>", "remove a policy rule", ctl_policy_del)
CMD(c_pol_list, "hs-policy-list", "", "policy rules in order", ctl_policy_list)
CMD(c_pol_rep, "hs-policy-replace", "rules=[...]", "replace the whole policy atomically", ctl_policy_replace)
