/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hierarchical schedulers (ep_qos.h): an instance describes the tree
 * (subports, named pipe profiles, the pipes in use); each scheduling worker
 * owns a port built from it -- ours (qos_hsched.c, which says why and what
 * differs) or an rte_sched port -- and every change reaches the ports as a
 * message run between two bursts.  Control thread only, except the
 * functions a message runs (*_on_worker).  What follows is about rte_sched.
 *
 * Best-effort oversubscription is a subport option (`tc_ov=on`, off by
 * default): without it rte_sched ignores the pipes' tc_ov_weight and an
 * oversubscribed subport is split evenly among its busy pipes.  With it
 * (rte_sched_subport_tc_ov_config; not part of the subport params in
 * 22.11), each subport tc_period a pipe may send at most watermark x
 * tc_ov_weight bytes of best effort.  The watermark is a slow controller:
 * each subport tc_period it moves by 1/128 -- down when the subport's best
 * effort was used up (within one MTU), up otherwise -- and settles where
 * the busy pipes' shares add up to the subport: watermark = subport
 * credits / sum(weights).
 *
 * Where it starts is the catch.  DPDK 22.11 computes its ceiling,
 * tc_ov_wm_max, in rte_sched_subport_config as
 *
 *     rte_sched_time_ms_to_bytes(profile->tc_period, pipe_tc_be_rate_max)
 *
 * but profile->tc_period is the subport period already converted to bytes
 * of port time (tc_period_ms x port rate / 1000), not milliseconds: the
 * ceiling comes out port_rate/1000 times too large.  A 100 Mbit/s subport
 * with 10 ms periods on a 10 Gbit/s port starts at 1.6e11 bytes against a
 * settled 31 kB (weights 1+3): 128 x ln(5e6) = 1975 periods, 20 s during
 * which the weights do nothing (measured: 1:1.00 for as long as a test
 * runs).  The ceiling is computed once, from the largest best-effort rate
 * in the table the subport is configured with, and is not recomputed when
 * profiles are added later.  So every subport is configured with a table
 * of one placeholder profile whose best-effort rate makes the buggy
 * formula give the intended ceiling -- one subport period of the subport's
 * best-effort credits:
 *
 *     placeholder BE rate = subport BE rate x 1000 / port rate   (>= 1)
 *
 * and the real profiles are added after it with
 * rte_sched_subport_pipe_profile_add: rte_sched profile id = our slot + 1
 * in every subport of every port.  No pipe ever uses profile 0.  The
 * watermark then settles in 128 x ln(sum of the busy pipes' weights)
 * periods: 177 for 1+3 (test_qos.c, test_bng_hqos.c).
 *
 * Messages and time-outs: a message's argument is on the heap and counted
 * (the caller's reference and the worker's), so a worker that answers
 * after the caller gave up still finds it; what it then applies late is
 * harmless by construction (pipes of a change that failed are free again,
 * and any later configuration of them is queued after it).
 */
/* rte_sched's PIE inlines are still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_qos.h"
#include "ep_text.h"

#define EP_SCHED_KIND "scheduler"

/* rte_sched pipe profile id of our slot (profile 0 is the watermark
 * placeholder, see above). */
#define PROF_ID(slot) ((int32_t)(slot) + 1)

/* ---- messages to the ports' workers ---- */

struct call {
	uint32_t refs;                  /* the caller's and the worker's */
	int rc;
	void (*fn)(struct ep_sched_port *sp, struct call *c);
	struct ep_sched_port *sp;
	uint32_t n;
	struct ep_sched_pipe_cfg_slot { uint32_t subport, pipe, slot; } pipes[];
};

static void
call_put(struct call *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(c);
}

static void
call_on_worker(struct ep_worker *w, void *arg)
{
	struct call *c = arg;

	(void)w;
	c->fn(c->sp, c);
	call_put(c);
}

/* Run @p c's function on the worker of @p sp: 0, 1 if the function
 * failed, or -1 with err set (no answer, no room for the message). */
static int
call_port(struct ep_sched_port *sp, struct call *c, struct ep_err *err)
{
	int rc;

	if (__atomic_load_n(&sp->w->running, __ATOMIC_ACQUIRE) &&
	    rte_ring_free_count(sp->w->msgq) == 0) {
		free(c);
		return ep_err_set(err, "worker %s: message queue full", sp->w->name);
	}
	c->sp = sp;
	c->refs = 2;
	c->rc = 0;
	if (ep_worker_call(sp->w, call_on_worker, c, EP_QOS_CALL_TIMEOUT_MS, err) < 0) {
		call_put(c);            /* the worker's reference stays with the queued message */
		return -1;
	}
	rc = c->rc != 0;
	call_put(c);
	return rc;
}

static struct call *
call_new(void (*fn)(struct ep_sched_port *, struct call *), uint32_t n)
{
	struct call *c = calloc(1, sizeof(*c) + sizeof(c->pipes[0]) * n);

	if (c != NULL) {
		c->fn = fn;
		c->n = n;
	}
	return c;
}

/* ---- instances ---- */

const char *const ep_sched_impl_names[3] = { "auto", "ep", "rte_sched" };

int
ep_sched_impl_parse(const char *v)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(v, ep_sched_impl_names[i]) == 0)
			return i;
	return -1;
}

void
ep_sched_params_default(struct ep_sched_params *p)
{
	p->impl = EP_SCHED_IMPL_AUTO;
	p->rate = 10000000000ull / 8;
	p->mtu = 1522;
	p->frame_overhead = RTE_SCHED_FRAME_OVERHEAD_DEFAULT;
	p->qsize = 64;
}

struct ep_sched *
ep_sched_create(struct ep_engine *e, const char *name, const struct ep_sched_params *p,
		struct ep_err *err)
{
	struct ep_sched *s;

	if (p->impl == EP_SCHED_IMPL_EP && p->qsize > 128) {
		ep_err_set(err, "scheduler %s: impl ep keeps queues of up to 128 packets", name);
		return NULL;
	}
	s = rte_zmalloc("ep_sched", sizeof(*s), RTE_CACHE_LINE_SIZE);
	if (s == NULL) {
		ep_err_set(err, "scheduler %s: out of memory", name);
		return NULL;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->e = e;
	s->p = *p;
	if (ep_instance_add(e, EP_SCHED_KIND, name, s, err) < 0) {
		rte_free(s);
		return NULL;
	}
	/* The default pipe profile (index 0): the whole port rate. */
	if (ep_sched_profile_set(s, "default", NULL, err) < 0) {
		ep_sched_free(s);
		return NULL;
	}
	return s;
}

void
ep_sched_free(struct ep_sched *s)
{
	if (s == NULL)
		return;
	ep_instance_del(s->e, s);
	for (uint32_t i = 0; i < EP_SCHED_MAX_SUBPORTS; i++) {
		rte_free(s->sub[i].pipe_free);
		rte_free(s->sub[i].pipe_prof);
	}
	rte_free(s);
}

/* ---- rte_sched rates: "r0,r1,..." and the token-bucket keys ---- */

static int
rate_list(const char *v, uint64_t *out, int n)
{
	char buf[512], *save = NULL;
	int i = 0;

	if (strlen(v) >= sizeof(buf))
		return -1;
	strcpy(buf, v);
	for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		if (i == n || ep_qos_parse_rate(t, &out[i]) < 0)
			return -1;
		out[i++] /= 8;
	}
	return i == n ? 0 : -1;
}

/* The token-bucket keys pipes and subports share (rate, tb_size, tc_rates,
 * tc_period), into the fields rte_sched's pipe and subport profile
 * parameters both have.  1 if @p k is one of them and @p v good, -1 if @p v
 * is bad, 0 if @p k is another key. */
struct tb {
	uint64_t *rate, *size, *tc_rate, *tc_period;
	bool has_rate, has_size, has_tc;
};

static int
tb_kv(struct tb *tb, const char *k, const char *v, struct ep_err *err)
{
	uint64_t x;

	if (strcmp(k, "rate") == 0) {
		if (ep_qos_parse_rate(v, &x) < 0 || x < 8)
			return ep_err_set(err, "rate: '%s' is not a rate in bit/s", v);
		*tb->rate = x / 8;
		tb->has_rate = true;
	} else if (strcmp(k, "tb_size") == 0) {
		if (ep_qos_parse_size(v, tb->size) < 0 || *tb->size == 0)
			return ep_err_set(err, "tb_size: '%s' is not a size in bytes", v);
		tb->has_size = true;
	} else if (strcmp(k, "tc_rates") == 0) {
		if (rate_list(v, tb->tc_rate, RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE) < 0)
			return ep_err_set(err, "tc_rates: needs %d comma-separated rates in bit/s",
					  RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE);
		tb->has_tc = true;
	} else if (strcmp(k, "tc_period") == 0) {
		if (ep_qos_parse_size(v, tb->tc_period) < 0 || *tb->tc_period == 0 ||
		    *tb->tc_period > 1000)
			return ep_err_set(err, "tc_period: '%s' is not 1-1000 ms", v);
	} else {
		return 0;
	}
	return 1;
}

/* After the keys: token-bucket size and TC rates that were not given
 * default to 4 ms of the rate (at least a few full frames) and to the rate;
 * every TC rate must be within the rate. */
static int
tb_finish(const struct ep_sched *s, struct tb *tb, const char *what, struct ep_err *err)
{
	if (*tb->rate > s->p.rate)
		return ep_err_set(err, "%s: rate above the port rate", what);
	if (!tb->has_size)
		*tb->size = RTE_MAX(*tb->rate / 250, 4ull * s->p.mtu);
	for (int i = 0; i < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; i++) {
		if (!tb->has_tc)
			tb->tc_rate[i] = *tb->rate;
		if (tb->tc_rate[i] == 0 || tb->tc_rate[i] > *tb->rate)
			return ep_err_set(err, "%s: tc_rates[%d] must be > 0 and <= rate", what, i);
	}
	return 0;
}

/* ---- subports ---- */

struct subport_args { struct rte_sched_subport_profile_params p; struct tb tb; uint64_t pipes;
		      bool tc_ov; };

static int
subport_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct subport_args *a = arg;
	int rc = tb_kv(&a->tb, k, v, err);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (strcmp(k, "pipes") == 0) {
		/* rte_sched enables a power of two pipes per subport. */
		if (ep_qos_parse_size(v, &a->pipes) < 0 || a->pipes == 0 || a->pipes > 65536 ||
		    !rte_is_power_of_2((uint32_t)a->pipes))
			return ep_err_set(err, "pipes: '%s' is not a power of two 1-65536", v);
	} else if (strcmp(k, "tc_ov") == 0) {
		if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
			return ep_err_set(err, "tc_ov: '%s' is not on or off", v);
		a->tc_ov = v[1] == 'n';
	} else {
		return ep_err_set(err, "unknown key '%s' (rate, pipes, tb_size, tc_rates, tc_period, "
				  "tc_ov)", k);
	}
	return 0;
}

static void
subport_args_init(struct subport_args *a)
{
	*a = (struct subport_args){ .p = { .tc_period = 10 }, .pipes = 4096 };
	a->tb = (struct tb){ &a->p.tb_rate, &a->p.tb_size, a->p.tc_rate, &a->p.tc_period };
}

uint32_t
ep_sched_spec_pipes(const char *spec)
{
	struct subport_args a;
	struct ep_err err;

	subport_args_init(&a);
	return ep_qos_each_kv(spec, subport_kv, &a, &err) < 0 ? 0 : (uint32_t)a.pipes;
}

int
ep_sched_subport_set(struct ep_sched *s, uint32_t id, const char *spec, struct ep_err *err)
{
	struct subport_args a;
	struct ep_sched_subport *sp;
	char what[32];

	subport_args_init(&a);
	if (id >= EP_SCHED_MAX_SUBPORTS)
		return ep_err_set(err, "subport %u: ids are 0-%d", id, EP_SCHED_MAX_SUBPORTS - 1);
	if (s->n_ports != 0)
		return ep_err_set(err, "subport %u: subports are fixed once schedulers run", id);
	if (s->sub[id].in_use)
		return ep_err_set(err, "subport %u: given twice", id);
	if (ep_qos_each_kv(spec, subport_kv, &a, err) < 0)
		return -1;
	if (a.tc_ov && s->p.impl == EP_SCHED_IMPL_EP)
		return ep_err_set(err, "subport %u: tc_ov needs impl rte_sched (or auto)", id);
	if (!a.tb.has_rate)
		a.p.tb_rate = s->p.rate;
	snprintf(what, sizeof(what), "subport %u", id);
	if (tb_finish(s, &a.tb, what, err) < 0)
		return -1;
	sp = &s->sub[id];
	sp->pipe_free = rte_malloc("ep_sched_pipes", sizeof(uint32_t) * a.pipes, 0);
	sp->pipe_prof = rte_malloc("ep_sched_pprof", sizeof(uint16_t) * a.pipes, 0);
	if (sp->pipe_free == NULL || sp->pipe_prof == NULL) {
		rte_free(sp->pipe_free);
		rte_free(sp->pipe_prof);
		sp->pipe_free = NULL;
		sp->pipe_prof = NULL;
		return ep_err_set(err, "subport %u: out of memory", id);
	}
	sp->n_pipes = (uint32_t)a.pipes;
	sp->n_free = 0;
	for (uint32_t i = sp->n_pipes; i > 0; i--) {
		sp->pipe_free[sp->n_free++] = i - 1;
		sp->pipe_prof[i - 1] = EP_SCHED_NO_PROFILE;
	}
	sp->prof = a.p;
	sp->tc_ov = a.tc_ov;
	sp->in_use = true;
	if (id >= s->n_subports)
		s->n_subports = id + 1;
	if (rte_align32pow2(sp->n_pipes) > s->max_pipes)
		s->max_pipes = rte_align32pow2(sp->n_pipes);
	return 0;
}

/* ---- pipe profiles ---- */

struct pipe_args { struct rte_sched_pipe_params p; struct tb tb; };

static int
pipe_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct pipe_args *a = arg;
	uint64_t x;
	int rc = tb_kv(&a->tb, k, v, err);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (strcmp(k, "wrr") == 0) {
		char buf[64], *save = NULL, *w;
		int i = 0;

		if (snprintf(buf, sizeof(buf), "%s", v) >= (int)sizeof(buf))
			return ep_err_set(err, "wrr: needs 4 comma-separated weights 1-255");
		for (w = strtok_r(buf, ",", &save); w != NULL; w = strtok_r(NULL, ",", &save), i++) {
			if (i == 4 || ep_parse_u64(w, 1, 255, &x, err) < 0)
				return ep_err_set(err, "wrr: needs 4 comma-separated weights 1-255");
			a->p.wrr_weights[i] = (uint8_t)x;
		}
		if (i != 4)
			return ep_err_set(err, "wrr: needs 4 comma-separated weights 1-255");
	} else if (strcmp(k, "tc_ov_weight") == 0) {
		if (ep_qos_parse_size(v, &x) < 0 || x == 0 || x > 255)
			return ep_err_set(err, "tc_ov_weight: '%s' is not 1-255", v);
		a->p.tc_ov_weight = (uint8_t)x;
	} else {
		return ep_err_set(err, "unknown key '%s' (rate, tb_size, tc_rates, tc_period, wrr, "
				  "tc_ov_weight)", k);
	}
	return 0;
}

int
ep_sched_profile_find(const struct ep_sched *s, const char *name)
{
	for (uint32_t i = 0; i < s->n_prof; i++)
		if (strcmp(s->prof[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool
pipe_params_equal(const struct rte_sched_pipe_params *x, const struct rte_sched_pipe_params *y)
{
	return x->tb_rate == y->tb_rate && x->tb_size == y->tb_size &&
	       memcmp(x->tc_rate, y->tc_rate, sizeof(x->tc_rate)) == 0 &&
	       x->tc_period == y->tc_period && x->tc_ov_weight == y->tc_ov_weight &&
	       memcmp(x->wrr_weights, y->wrr_weights, sizeof(x->wrr_weights)) == 0;
}

/* On a worker: add the slots this port lacks, up to c->n, to every subport.
 * Idempotent per port: a port that got a slot in an attempt that failed
 * elsewhere keeps it and is not asked again. */
static void
slots_on_worker(struct ep_sched_port *sp, struct call *c)
{
	struct ep_sched *s = sp->s;

	if (sp->hs != NULL) {
		/* Ours has room for every slot: just the parameters. */
		for (; sp->n_slots < c->n; sp->n_slots++)
			ep_hsched_profile_set(sp->hs, sp->n_slots, &s->slot[sp->n_slots]);
		return;
	}
	while (sp->n_slots < c->n) {
		for (uint32_t i = 0; i < s->n_subports; i++) {
			uint32_t id;

			if (rte_sched_subport_pipe_profile_add(sp->port, i, &s->slot[sp->n_slots],
							       &id) != 0 ||
			    id != (uint32_t)PROF_ID(sp->n_slots)) {
				c->rc = -1;
				return;
			}
		}
		sp->n_slots++;
	}
}

/* On a worker: configure the pipes of the message. */
static void
pipes_on_worker(struct ep_sched_port *sp, struct call *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (sp->hs != NULL)
			ep_hsched_pipe_config(sp->hs, c->pipes[i].subport, c->pipes[i].pipe,
					      c->pipes[i].slot);
		else if (rte_sched_pipe_config(sp->port, c->pipes[i].subport, c->pipes[i].pipe,
					  PROF_ID(c->pipes[i].slot)) != 0)
			c->rc = -1;
}

/* Configure pipes (subport, pipe, slot) on every port. */
static int
pipes_to_ports(struct ep_sched *s, const struct ep_sched_pipe_cfg_slot *p, uint32_t n,
	       struct ep_err *err)
{
	int rc;

	for (int k = 0; k < s->n_ports; k++) {
		struct call *c = call_new(pipes_on_worker, n);

		if (c == NULL)
			return ep_err_set(err, "out of memory");
		memcpy(c->pipes, p, sizeof(p[0]) * n);
		rc = call_port(s->ports[k], c, err);
		if (rc > 0)
			return ep_err_set(err, "scheduler %s: rte_sched_pipe_config failed on "
					  "worker %s", s->name, s->ports[k]->w->name);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Move every pipe that uses profile @p prof to its slot. */
static int
move_profile_pipes(struct ep_sched *s, uint16_t prof, struct ep_err *err)
{
	struct ep_sched_pipe_cfg_slot *p;
	uint32_t n = 0, cap = 0;
	int rc;

	for (uint32_t i = 0; i < s->n_subports; i++)
		cap += s->sub[i].in_use ? s->sub[i].n_pipes - s->sub[i].n_free : 0;
	if (cap == 0 || s->n_ports == 0)
		return 0;
	p = malloc(sizeof(*p) * cap);
	if (p == NULL)
		return ep_err_set(err, "out of memory");
	for (uint32_t i = 0; i < s->n_subports; i++)
		for (uint32_t j = 0; s->sub[i].in_use && j < s->sub[i].n_pipes; j++)
			if (s->sub[i].pipe_prof[j] == prof && n < cap)
				p[n++] = (struct ep_sched_pipe_cfg_slot){ i, j, s->prof[prof].slot };
	rc = n != 0 ? pipes_to_ports(s, p, n, err) : 0;
	free(p);
	return rc;
}

int
ep_sched_profile_set(struct ep_sched *s, const char *name, const char *spec,
		     struct ep_err *err)
{
	struct pipe_args a = { .p = { .tc_period = 10, .tc_ov_weight = 1,
				      .wrr_weights = { 1, 1, 1, 1 } } };
	int idx = ep_sched_profile_find(s, name), rc;
	uint32_t slot, old_slot = 0;
	bool fresh;
	char what[EP_QOS_NAME_LEN + 8];

	/* Plan: nothing changes until every check passed. */
	a.tb = (struct tb){ &a.p.tb_rate, &a.p.tb_size, a.p.tc_rate, &a.p.tc_period };
	if (ep_name_check(name, err) < 0)
		return -1;
	if (ep_qos_each_kv(spec, pipe_kv, &a, err) < 0)
		return -1;
	if (!a.tb.has_rate) {
		if (spec != NULL)
			return ep_err_set(err, "pipe %s: needs rate=", name);
		a.p.tb_rate = s->p.rate;
	}
	snprintf(what, sizeof(what), "pipe %s", name);
	if (tb_finish(s, &a.tb, what, err) < 0)
		return -1;
	if (idx < 0 && s->n_prof == EP_SCHED_MAX_PROFILES)
		return ep_err_set(err, "pipe %s: all %d profile names used", name,
				  EP_SCHED_MAX_PROFILES);
	/* The rte_sched slot holding these parameters: an existing one (rte_sched
	 * refuses duplicates, and a profile changed back and forth then costs
	 * no slot), else a new one; every port must have it. */
	for (slot = 0; slot < s->n_slots; slot++)
		if (pipe_params_equal(&s->slot[slot], &a.p))
			break;
	fresh = slot == s->n_slots;
	if (fresh && s->n_slots == EP_SCHED_MAX_PROFILES)
		return ep_err_set(err, "pipe %s: all %d profile slots used", name,
				  EP_SCHED_MAX_PROFILES);
	s->slot[slot] = a.p;
	for (int k = 0; k < s->n_ports; k++) {
		struct call *c;

		if (s->ports[k]->n_slots > slot)
			continue;
		c = call_new(slots_on_worker, 0);
		if (c == NULL)
			return ep_err_set(err, "out of memory");
		c->n = slot + 1;
		rc = call_port(s->ports[k], c, err);
		if (rc == 0)
			continue;
		/* A slot some port has (or may still get, from a message that
		 * timed out) stays recorded with these parameters, so the ports
		 * never disagree on a slot; the profile does not take it.
		 * Refused by the first port asked: never added anywhere. */
		if (fresh && (k != 0 || rc < 0))
			s->n_slots++;
		return rc < 0 ? -1 : ep_err_set(err, "pipe %s: rte_sched rejected the profile "
						"(rates vs the port and subport, tc_period)", name);
	}
	if (fresh)
		s->n_slots++;
	/* Apply: record it, then move its pipes; put it back if that fails. */
	if (idx < 0) {
		idx = (int)s->n_prof++;
		snprintf(s->prof[idx].name, EP_QOS_NAME_LEN, "%s", name);
	} else {
		old_slot = s->prof[idx].slot;
	}
	s->prof[idx].p = a.p;
	s->prof[idx].slot = slot;
	if (move_profile_pipes(s, (uint16_t)idx, err) < 0) {
		s->prof[idx].slot = old_slot;
		s->prof[idx].p = s->slot[old_slot];
		move_profile_pipes(s, (uint16_t)idx, NULL);
		return -1;
	}
	return 0;
}

/* ---- pipes ---- */

int
ep_sched_pipe_reserve(struct ep_sched *s, uint32_t subport, uint32_t *pipe, struct ep_err *err)
{
	struct ep_sched_subport *sp;

	if (subport >= s->n_subports || !s->sub[subport].in_use)
		return ep_err_set(err, "subport: %u is not configured", subport);
	sp = &s->sub[subport];
	if (sp->n_free == 0)
		return ep_err_set(err, "subport %u: all %u pipes in use", subport, sp->n_pipes);
	*pipe = sp->pipe_free[--sp->n_free];
	return 0;
}

void
ep_sched_pipe_release(struct ep_sched *s, uint32_t subport, uint32_t pipe)
{
	struct ep_sched_subport *sp = &s->sub[subport];

	sp->pipe_prof[pipe] = EP_SCHED_NO_PROFILE;
	sp->pipe_free[sp->n_free++] = pipe;
}

int
ep_sched_pipes_apply(struct ep_sched *s, const struct ep_sched_pipe_cfg *c, uint32_t n,
		     struct ep_err *err)
{
	struct ep_sched_pipe_cfg_slot *p;
	int rc;

	if (n == 0)
		return 0;
	p = malloc(sizeof(*p) * n);
	if (p == NULL)
		return ep_err_set(err, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		p[i] = (struct ep_sched_pipe_cfg_slot){ c[i].subport, c[i].pipe,
							s->prof[c[i].prof].slot };
	rc = pipes_to_ports(s, p, n, err);
	free(p);
	if (rc < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		s->sub[c[i].subport].pipe_prof[c[i].pipe] = c[i].prof;
	return 0;
}

/* ---- ports ---- */

/* The placeholder that sets a subport's tc_ov watermark ceiling: a copy
 * of @p like whose TC rates are the smallest rte_sched accepts, with the
 * best-effort rate chosen as explained at the top of this file. */
static void
wm_placeholder(struct rte_sched_pipe_params *out, const struct rte_sched_pipe_params *like,
	       const struct rte_sched_subport_profile_params *sp, uint64_t port_rate)
{
	uint64_t be = sp->tc_rate[RTE_SCHED_TRAFFIC_CLASS_BE] * 1000 / port_rate;

	*out = *like;
	for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
		out->tc_rate[t] = 1;
	out->tc_rate[RTE_SCHED_TRAFFIC_CLASS_BE] = RTE_MAX(be, (uint64_t)1);
}

uint64_t
ep_sched_port_memory(const struct ep_sched_params *p, const uint32_t *pipes, uint32_t n_subports)
{
	/* The shape ep_sched_port_create() gives rte_sched (subports rounded up
	 * to a power of two, the extra ones with one pipe; every subport's
	 * profile table EP_SCHED_MAX_PROFILES + 1 long), with rates that pass
	 * its checks: the footprint depends on the shape only. */
	struct rte_sched_subport_profile_params sprof[EP_SCHED_MAX_SUBPORTS];
	struct rte_sched_subport_params sub[EP_SCHED_MAX_SUBPORTS], *subp[EP_SCHED_MAX_SUBPORTS];
	struct rte_sched_pipe_params pipe = { .tb_rate = p->rate, .tb_size = 4ull * p->mtu,
					      .tc_period = 10, .tc_ov_weight = 1 };
	uint32_t n_sp, max_pipes = 1;
	uint64_t bytes;

	if (n_subports == 0 || n_subports > EP_SCHED_MAX_SUBPORTS)
		return 0;
	for (uint32_t i = 0; i < n_subports; i++)
		max_pipes = RTE_MAX(max_pipes, rte_align32pow2(RTE_MAX(pipes[i], 1u)));
	n_sp = rte_align32pow2(n_subports);
	for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
		pipe.tc_rate[t] = p->rate;
	for (int q = 0; q < RTE_SCHED_BE_QUEUES_PER_PIPE; q++)
		pipe.wrr_weights[q] = 1;
	for (uint32_t i = 0; i < n_sp; i++) {
		sprof[i] = (struct rte_sched_subport_profile_params){ .tb_rate = p->rate,
			.tb_size = 4ull * p->mtu, .tc_period = 10 };
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
			sprof[i].tc_rate[t] = p->rate;
		sub[i] = (struct rte_sched_subport_params){
			.n_pipes_per_subport_enabled =
				i < n_subports ? rte_align32pow2(RTE_MAX(pipes[i], 1u)) : 1,
			.pipe_profiles = &pipe, .n_pipe_profiles = 1,
			.n_max_pipe_profiles = EP_SCHED_MAX_PROFILES + 1 };
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
			sub[i].qsize[t] = (uint16_t)p->qsize;
		subp[i] = &sub[i];
	}
	bytes = rte_sched_port_get_memory_footprint(&(struct rte_sched_port_params){
		.name = "ep_sched_estimate", .socket = 0, .rate = p->rate, .mtu = p->mtu,
		.frame_overhead = p->frame_overhead, .n_subports_per_port = n_sp,
		.subport_profiles = sprof, .n_subport_profiles = n_sp,
		.n_max_subport_profiles = n_sp, .n_pipes_per_subport = max_pipes }, subp);
	/* Either implementation may run (auto decides when the subports are
	 * known): the larger. */
	bytes = RTE_MAX(bytes, ep_hsched_memory(n_subports, max_pipes, p->qsize));
	/* Our own per-pipe bookkeeping (pipe_free, pipe_prof) per subport. */
	for (uint32_t i = 0; i < n_subports; i++)
		bytes += (uint64_t)pipes[i] * (sizeof(uint32_t) + sizeof(uint16_t));
	return bytes;
}

static uint32_t port_seq;

struct ep_sched_port *
ep_sched_port_create(struct ep_sched *s, struct ep_worker *w, int socket, struct ep_err *err)
{
	struct rte_sched_subport_profile_params sprof[EP_SCHED_MAX_SUBPORTS];
	struct ep_sched_port *sp;
	uint32_t n_sp;
	char name[64];

	if (s->n_subports == 0)
		return ep_err_set(err, "scheduler %s: no subport configured", s->name), NULL;
	if (s->n_ports == (int)RTE_DIM(s->ports))
		return ep_err_set(err, "scheduler %s: too many ports", s->name), NULL;
	for (uint32_t i = 0; i < s->n_subports; i++) {
		if (!s->sub[i].in_use) {
			ep_err_set(err, "scheduler %s: subport %u missing (subports are 0..%u "
				   "without gaps)", s->name, i, s->n_subports - 1);
			return NULL;
		}
		sprof[i] = s->sub[i].prof;
	}
	if (socket < 0)
		socket = 0;     /* rte_sched wants a NUMA node, not SOCKET_ID_ANY */
	sp = rte_zmalloc_socket("ep_sched_port", sizeof(*sp), RTE_CACHE_LINE_SIZE, socket);
	if (sp == NULL)
		return ep_err_set(err, "scheduler %s: out of memory", s->name), NULL;
	sp->s = s;
	sp->w = w;
	if (s->p.impl == EP_SCHED_IMPL_EP ||
	    (s->p.impl == EP_SCHED_IMPL_AUTO && ep_hsched_supports(s, NULL))) {
		sp->hs = ep_hsched_create(s, socket, err);
		if (sp->hs == NULL) {
			rte_free(sp);
			return NULL;
		}
		sp->pipes_log2 = rte_log2_u32(s->max_pipes);
		sp->n_slots = s->n_slots;
		s->ports[s->n_ports++] = sp;
		return sp;
	}
	/* rte_sched wants a power-of-two number of subports: the ones above
	 * the configured ids are shaped like subport 0 and have one pipe, which
	 * is never allocated. */
	n_sp = rte_align32pow2(s->n_subports);
	for (uint32_t i = s->n_subports; i < n_sp; i++)
		sprof[i] = s->sub[0].prof;
	snprintf(name, sizeof(name), "ep_sched_%s_%u", s->name,
		 __atomic_fetch_add(&port_seq, 1, __ATOMIC_RELAXED));
	sp->port = rte_sched_port_config(&(struct rte_sched_port_params){
		.name = name, .socket = socket, .rate = s->p.rate, .mtu = s->p.mtu,
		.frame_overhead = s->p.frame_overhead,
		.n_subports_per_port = n_sp, .subport_profiles = sprof,
		.n_subport_profiles = n_sp, .n_max_subport_profiles = n_sp,
		.n_pipes_per_subport = s->max_pipes });
	if (sp->port == NULL) {
		ep_err_set(err, "scheduler %s: rte_sched_port_config failed (rate %" PRIu64 " B/s, "
			   "%u subports, %u pipes)", s->name, s->p.rate, s->n_subports, s->max_pipes);
		rte_free(sp);
		return NULL;
	}
	for (uint32_t i = 0; i < n_sp; i++) {
		bool real = i < s->n_subports;
		struct rte_sched_pipe_params ph;
		struct rte_sched_subport_params sub = {
			.n_pipes_per_subport_enabled = real ? s->sub[i].n_pipes : 1,
			.pipe_profiles = &ph, .n_pipe_profiles = 1,
			.n_max_pipe_profiles = EP_SCHED_MAX_PROFILES + 1,
		};
		int rc;

		wm_placeholder(&ph, &s->slot[0], &sprof[i], s->p.rate);
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
			sub.qsize[t] = (uint16_t)s->p.qsize;
		rc = rte_sched_subport_config(sp->port, i, &sub, i);
		if (rc == 0)
			rc = rte_sched_subport_tc_ov_config(sp->port, i, real && s->sub[i].tc_ov);
		for (uint32_t k = 0; rc == 0 && real && k < s->n_slots; k++) {
			uint32_t id;

			rc = rte_sched_subport_pipe_profile_add(sp->port, i, &s->slot[k], &id);
			if (rc == 0 && id != (uint32_t)PROF_ID(k))
				rc = -EINVAL;
		}
		if (rc != 0) {
			ep_err_set(err, "scheduler %s: subport %u: rte_sched_subport_config failed "
				   "(%d): check its rate, pipes and the pipe profiles", s->name, i, rc);
			rte_sched_port_free(sp->port);
			rte_free(sp);
			return NULL;
		}
	}
	sp->n_slots = s->n_slots;
	for (uint32_t i = 0; i < s->n_subports; i++)
		for (uint32_t j = 0; j < s->sub[i].n_pipes; j++) {
			uint16_t prof = s->sub[i].pipe_prof[j];

			if (prof != EP_SCHED_NO_PROFILE &&
			    rte_sched_pipe_config(sp->port, i, j, PROF_ID(s->prof[prof].slot)) != 0) {
				ep_err_set(err, "scheduler %s: pipe %u of subport %u: "
					   "rte_sched_pipe_config failed", s->name, j, i);
				rte_sched_port_free(sp->port);
				rte_free(sp);
				return NULL;
			}
		}
	s->ports[s->n_ports++] = sp;
	return sp;
}

void
ep_sched_port_free(struct ep_sched_port *sp)
{
	struct ep_sched *s;

	if (sp == NULL)
		return;
	s = sp->s;
	for (int k = 0; k < s->n_ports; k++)
		if (s->ports[k] == sp) {
			s->ports[k] = s->ports[--s->n_ports];
			break;
		}
	ep_hsched_free(sp->hs);
	rte_sched_port_free(sp->port);
	rte_free(sp);
}

/* ---- statistics ---- */

static void
stats_on_worker(struct ep_sched_port *sp, struct call *c)
{
	(void)c;
	if (sp->hs != NULL) {
		ep_hsched_stats(sp->hs, sp->tc_pkts, sp->tc_dropped);
		return;
	}
	for (uint32_t i = 0; i < sp->s->n_subports; i++) {
		struct rte_sched_subport_stats st;
		uint32_t tc_ov;

		/* rte_sched clears its counters on read: accumulate. */
		if (rte_sched_subport_read_stats(sp->port, i, &st, &tc_ov) != 0)
			continue;
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++) {
			sp->tc_pkts[t] += st.n_pkts_tc[t];
			sp->tc_dropped[t] += st.n_pkts_tc_dropped[t];
		}
	}
}

int
ep_sched_stats_collect(struct ep_sched *s, struct ep_err *err)
{
	for (int k = 0; k < s->n_ports; k++) {
		struct call *c = call_new(stats_on_worker, 0);

		if (c == NULL)
			return ep_err_set(err, "out of memory");
		if (call_port(s->ports[k], c, err) < 0)
			return -1;
	}
	return 0;
}
