/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The [bng] section (README.md has every key with examples).  Each line goes
 * through the same function the control socket uses (ep_policer_set,
 * ep_sched_profile_set, bng_sub_req_parse + bng_sub_add, the FIB's route
 * and neighbour loader, the ACL's), and every error is
 * "file:line: key 'k': ...".
 *
 * Order: sizes (bng_params_from_config, before the tables exist), then
 * ports, core encapsulation, subports, policers, pipes, the FIB keys
 * (neighbor, route, route_file), the ACL keys (acl, acl_file, acl_default,
 * acl_classify), and last the subscribers as one batch.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bng.h"

static int
wrap(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	snprintf(inner, sizeof(inner), "%s", err->msg);
	return ep_cfg_error(cfg, kv, err, "%s", inner);
}

int
bng_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s, struct bng_params *p,
		       struct ep_err *err)
{
	static const struct { const char *key; size_t off; uint64_t min, max; } keys[] = {
		{ "max_subscribers", offsetof(struct bng_params, max_subscribers), 1, 1u << 20 },
		{ "max_routes", offsetof(struct bng_params, max_routes), 16, 1u << 24 },
		{ "punt_ring_size", offsetof(struct bng_params, punt_ring_size), 16, 1u << 20 },
		{ "hqos_mtu", offsetof(struct bng_params, hqos.mtu), 64, 9216 },
		{ "hqos_frame_overhead", offsetof(struct bng_params, hqos.frame_overhead), 0, 64 },
		{ "hqos_qsize", offsetof(struct bng_params, hqos.qsize), 4, 4096 },
	};
	const struct ep_cfg_kv *kv;

	bng_params_default(p);
	if (s == NULL)
		return 0;
	if (ep_fib_params_from_config(cfg, s, false, &p->fib, err) < 0)
		return -1;
	for (size_t i = 0; i < RTE_DIM(keys); i++) {
		uint32_t *f = (uint32_t *)((char *)p + keys[i].off);
		uint64_t v;

		if (ep_cfg_u64(cfg, s, keys[i].key, *f, keys[i].min, keys[i].max, &v, err) < 0)
			return -1;
		*f = (uint32_t)v;
	}
	kv = ep_cfg_get(cfg, s, "punt_ring_size", NULL);
	if (!rte_is_power_of_2(p->punt_ring_size))
		return ep_cfg_error(cfg, kv, err, "must be a power of two");
	kv = ep_cfg_get(cfg, s, "hqos_qsize", NULL);
	if (!rte_is_power_of_2(p->hqos.qsize))
		return ep_cfg_error(cfg, kv, err, "must be a power of two");
	kv = ep_cfg_get(cfg, s, "hqos_port_rate", err);
	if (kv != NULL) {
		uint64_t bps;

		if (ep_qos_parse_rate(kv->val, &bps) < 0 || bps < 8000)
			return ep_cfg_error(cfg, kv, err, "'%s' is not a rate in bit/s (k, M, G)",
					    kv->val);
		p->hqos.rate = bps / 8;
	}
	kv = ep_cfg_get(cfg, s, "hqos_impl", err);
	if (kv != NULL) {
		int impl = ep_sched_impl_parse(kv->val);

		if (impl < 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not auto, ep or rte_sched", kv->val);
		p->hqos.impl = (uint32_t)impl;
	}
	if (p->hqos.impl == EP_SCHED_IMPL_EP && p->hqos.qsize > 128)
		return ep_cfg_error(cfg, ep_cfg_get(cfg, s, "hqos_qsize", NULL), err,
				    "hqos_impl ep keeps queues of up to 128 packets");
	for (int i = 0; i < s->n_kv; i++) {
		if (strcmp(s->kv[i].key, "dscp_tc") != 0)
			continue;
		s->kv[i].used = true;
		if (ep_qos_dscp_map_parse(p->dscp_tc, s->kv[i].val, err) < 0)
			return wrap(cfg, &s->kv[i], err);
	}
	return 0;
}

/* The core FIB "bng": few routes (a default and some aggregates), between
 * the access and core ports only (another pipeline's ports are not its). */
static void
bng_fib_params(const struct bng_params *p, struct ep_fib_params *fp)
{
	*fp = p->fib;
	fp->max_routes4 = fp->max_routes6 = p->max_routes;
	fp->lpm4_tbl8s = 256;
	fp->lpm6_tbl8s = 1024;
	fp->max_nexthops = 1024;
}

static int
bng_fib_create(struct bng *b, struct ep_err *err)
{
	struct ep_fib_params fp;

	bng_fib_params(&b->p, &fp);
	fp.ports = 1u << b->access_port | 1u << b->core_port;
	b->fib = ep_fib_create(b->e, "bng", &fp, err);
	return b->fib != NULL ? 0 : -1;
}

static int
port_key(struct bng *b, struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
	 bool required, int32_t *out, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(cfg, s, key, err);
	struct ep_port *p;

	if (kv == NULL) {
		if (required)
			return ep_cfg_section_error(cfg, s, err, "%s is required", key);
		return 0;
	}
	p = ep_port_by_name(b->e, kv->val);
	if (p == NULL)
		return ep_cfg_error(cfg, kv, err, "no [port %s]", kv->val);
	*out = p->index;
	return 0;
}

/* "none" | "vlan <vid>" | "mpls <label>" */
static int
core_encap(struct bng *b, struct ep_cfg *cfg, struct ep_cfg_section *s, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(cfg, s, "core_encap", err);
	char kind[16], num[24], tail;
	uint64_t v;
	int n;

	if (kv == NULL)
		return 0;
	n = sscanf(kv->val, "%15s %23s %c", kind, num, &tail);
	if (n == 1 && strcmp(kind, "none") == 0)
		return 0;
	if (n == 2 && strcmp(kind, "vlan") == 0 && ep_parse_u64(num, 1, 4094, &v, NULL) == 0) {
		b->core_encap = BNG_CORE_VLAN;
		b->core_tag = (uint32_t)v;
		return 0;
	}
	/* Labels 0-15 are reserved (RFC 3032). */
	if (n == 2 && strcmp(kind, "mpls") == 0 && ep_parse_u64(num, 16, 0xfffff, &v, NULL) == 0) {
		b->core_encap = BNG_CORE_MPLS;
		b->core_tag = (uint32_t)v << 12;
		return 0;
	}
	return ep_cfg_error(cfg, kv, err, "'%s' is not none, vlan <1-4094> or mpls <16-1048575>",
			    kv->val);
}

/* "NAME spec..." of policer / pipe / subport lines. */
static int
name_and_spec(const char *val, char *name, size_t n, const char **spec)
{
	size_t len = strcspn(val, " \t");

	if (len == 0 || len >= n)
		return -1;
	memcpy(name, val, len);
	name[len] = '\0';
	*spec = val + len + strspn(val + len, " \t");
	return 0;
}

/* One subport at the port rate when no `subport` line says otherwise;
 * more pipes need subport lines. */
static uint32_t
default_subport_pipes(const struct bng_params *p)
{
	return rte_align32pow2(RTE_MIN(p->max_subscribers, 4096u));
}

uint64_t
bng_memory(struct ep_engine *e, int n_up, int n_down, bool shared)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "bng", NULL);
	uint32_t pipes[EP_SCHED_MAX_SUBPORTS] = { 0 }, n_sub = 0, max, n_rec;
	struct ep_fib_params fp;
	struct ep_acl_params ap;
	struct bng_params p;
	struct ep_err tmp;
	uint64_t bytes = 0;

	/* Defaults where a key is bad: setup reports it with its line. */
	if (bng_params_from_config(e->cfg, s, &p, &tmp) < 0)
		bng_params_default(&p);
	for (int i = 0; s != NULL && i < s->n_kv; i++) {
		char name[BNG_NAME_LEN];
		const char *spec;
		uint64_t id;

		if (strcmp(s->kv[i].key, "subport") != 0 ||
		    name_and_spec(s->kv[i].val, name, sizeof(name), &spec) < 0 ||
		    ep_parse_u64(name, 0, EP_SCHED_MAX_SUBPORTS - 1, &id, &tmp) < 0)
			continue;
		pipes[id] = ep_sched_spec_pipes(spec);
		n_sub = RTE_MAX(n_sub, (uint32_t)id + 1);
	}
	if (n_sub == 0) {
		pipes[0] = default_subport_pipes(&p);
		n_sub = 1;
	}
	max = p.max_subscribers;
	if (shared) {
		/* bng_create(): the core FIB, the uplink ACL, subscriber slots,
		 * two records each, the two hashes, the defer queue, the punt
		 * ring; the QinQ map's blocks as lines are added. */
		n_rec = 2 * max + 64;
		bng_fib_params(&p, &fp);
		ep_acl_params_default(&ap);
		bytes += ep_fib_memory(&fp) + ep_acl_memory(&ap) + sizeof(struct bng) +
			 sizeof(struct bng_sub *) * (max + 1ull) +
			 (uint64_t)n_rec * (sizeof(struct bng_sub) + sizeof(struct bng_sub *)) +
			 (n_rec + 2ull * EP_POLICER_MAX) * 2 * sizeof(uint64_t) +
			 ep_mem_hash_bytes(RTE_MAX(2 * max, 1024u), sizeof(struct bng_key), false) +
			 ep_mem_hash_bytes(RTE_MAX(max * (BNG_MAX_V4 + 1) + max / 2, 1024u),
					   sizeof(struct bng_dst_key), false) +
			 (uint64_t)p.punt_ring_size * sizeof(void *) +
			 /* the QinQ map, all of its blocks */
			 sizeof(struct bng_qinq) +
			 (uint64_t)RTE_MIN(max, BNG_QINQ_BLOCKS_MAX) * BNG_VID_N * sizeof(uint64_t) +
			 /* the PPPoE map, all of its blocks (2 MiB) */
			 sizeof(struct bng_pppoe) + 65536ull * sizeof(struct bng_pppoe_ent);
	}
	/* Per worker: its context and per-subscriber state; a downlink worker
	 * also its rte_sched port (the HQoS queues: pipes x 16 queues x qsize
	 * mbuf pointers, the bulk of a BNG's memory). */
	bytes += (uint64_t)n_up * (sizeof(struct bng_up) + ep_fib_worker_memory() +
				   (sizeof(struct bng_up_dyn) + sizeof(struct ep_prefix_set) +
				    sizeof(struct bng_up_cold)) *
				   (max + 1ull));
	bytes += (uint64_t)n_down * (sizeof(struct bng_down) + ep_fib_worker_memory() +
				     sizeof(struct bng_down_dyn) * (max + 1ull) +
				     ep_sched_port_memory(&p.hqos, pipes, n_sub));
	return bytes;
}

struct subs {
	struct bng_sub_req *r;
	const struct ep_cfg_kv **kv;     /* the line of each, or the subscriber_file key */
	int *fline;                      /* line in subscriber_file, 0 for inline */
	uint32_t n, cap;
};

static int
subs_push(struct subs *ss, const char *text, const struct ep_cfg_kv *kv, int fline,
	  struct ep_err *err)
{
	if (ss->n == ss->cap) {
		uint32_t cap = ss->cap ? 2 * ss->cap : 256;
		void *a = realloc(ss->r, sizeof(*ss->r) * cap);
		void *b = realloc(ss->kv, sizeof(*ss->kv) * cap);
		void *c = realloc(ss->fline, sizeof(*ss->fline) * cap);

		if (a != NULL)
			ss->r = a;
		if (b != NULL)
			ss->kv = b;
		if (c != NULL)
			ss->fline = c;
		if (a == NULL || b == NULL || c == NULL)
			return ep_err_set(err, "out of memory");
		ss->cap = cap;
	}
	if (bng_sub_req_parse(&ss->r[ss->n], text, err) < 0)
		return -1;
	ss->kv[ss->n] = kv;
	ss->fline[ss->n] = fline;
	ss->n++;
	return 0;
}

static int
sub_error(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, int fline, struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	if (fline == 0)
		return wrap(cfg, kv, err);
	snprintf(inner, sizeof(inner), "%s", err->msg);
	ep_err_set(err, "%s:%d: %s", kv->val, fline, inner);
	return wrap(cfg, kv, err);
}

struct sub_file {
	struct subs *ss;
	const struct ep_cfg_kv *kv;
};

/* One subscriber_file line; ep_cfg_side_file adds "file:line" to an error. */
static int
sub_file_line(void *arg, char *line, int lineno, struct ep_err *err)
{
	struct sub_file *f = arg;

	return subs_push(f->ss, line, f->kv, lineno, err);
}

int
bng_load_config(struct bng *b, struct ep_cfg *cfg, struct ep_cfg_section *s, struct ep_err *err)
{
	const struct ep_cfg_kv *kv;
	struct subs ss = {0};
	int32_t access = -1, core = -1;
	uint32_t failed = 0;
	int rc = -1;

	if (port_key(b, cfg, s, "access_port", true, &access, err) < 0 ||
	    port_key(b, cfg, s, "core_port", true, &core, err) < 0 ||
	    port_key(b, cfg, s, "control_port", false, &b->control_port, err) < 0)
		return -1;
	if (access == core)
		return ep_cfg_section_error(cfg, s, err, "access_port and core_port must differ");
	b->access_port = (uint16_t)access;
	b->core_port = (uint16_t)core;
	if (bng_fib_create(b, err) < 0)
		return -1;
	b->nd_answer = true;
	kv = ep_cfg_get(cfg, s, "access_nd", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "punt") == 0)
			b->nd_answer = false;
		else if (strcmp(kv->val, "answer") != 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not answer or punt", kv->val);
	}
	if (core_encap(b, cfg, s, err) < 0)
		return -1;

	for (int i = 0; i < s->n_kv; i++) {
		const struct ep_cfg_kv *k = &s->kv[i];
		char name[BNG_NAME_LEN];
		const char *spec;
		int r = 0;

		if (strcmp(k->key, "subport") == 0) {
			uint64_t id;

			s->kv[i].used = true;
			if (name_and_spec(k->val, name, sizeof(name), &spec) < 0)
				return ep_cfg_error(cfg, k, err, "expected '<id> rate=... pipes=...'");
			if (ep_parse_u64(name, 0, EP_SCHED_MAX_SUBPORTS - 1, &id, err) < 0)
				return wrap(cfg, k, err);
			r = ep_sched_subport_set(b->hqos, (uint32_t)id, spec, err);
		} else if (strcmp(k->key, "policer") == 0 || strcmp(k->key, "pipe") == 0) {
			s->kv[i].used = true;
			if (name_and_spec(k->val, name, sizeof(name), &spec) < 0)
				return ep_cfg_error(cfg, k, err, "expected '<name> key=value ...'");
			r = k->key[1] == 'o' ? ep_policer_set(b->pol, name, spec, err) :
					       ep_sched_profile_set(b->hqos, name, spec, err);
		}
		if (r < 0)
			return wrap(cfg, k, err);
	}
	if (b->hqos->n_subports == 0) {
		char spec[64];

		snprintf(spec, sizeof(spec), "pipes=%u", default_subport_pipes(&b->p));
		if (ep_sched_subport_set(b->hqos, 0, spec, err) < 0)
			return -1;
	}
	if (ep_fib_load_config(b->fib, cfg, s, err) < 0 ||
	    ep_acl_load_config(b->acl, cfg, s, err) < 0)
		return -1;

	for (int i = 0; i < s->n_kv; i++) {
		if (strcmp(s->kv[i].key, "subscriber") != 0)
			continue;
		s->kv[i].used = true;
		if (subs_push(&ss, s->kv[i].val, &s->kv[i], 0, err) < 0) {
			wrap(cfg, &s->kv[i], err);
			goto out;
		}
	}
	kv = ep_cfg_get(cfg, s, "subscriber_file", err);
	if (kv != NULL &&
	    ep_cfg_side_file(cfg, kv, sub_file_line, &(struct sub_file){ &ss, kv }, err) != 0)
		goto out;
	if (b->control_port < 0 && b->punt_ring == NULL) {
		char name[RTE_RING_NAMESIZE];
		static uint32_t seq;

		snprintf(name, sizeof(name), "bng_punt_%u", seq++);
		/* Several uplink workers enqueue; one control plane dequeues. */
		b->punt_ring = rte_ring_create(name, b->p.punt_ring_size, SOCKET_ID_ANY,
					       RING_F_SC_DEQ);
		if (b->punt_ring == NULL) {
			ep_err_set(err, "bng: cannot create the punt ring");
			goto out;
		}
	}
	if (ss.n != 0 && bng_sub_add(b, ss.r, ss.n, &failed, err) < 0) {
		sub_error(cfg, ss.kv[failed], ss.fline[failed], err);
		goto out;
	}
	rc = 0;
out:
	free(ss.r);
	free(ss.kv);
	free(ss.fline);
	return rc;
}
