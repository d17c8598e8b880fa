/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Policer profile tables (ep_qos.h): rte_meter trTCM profiles, RFC 2698 or
 * RFC 4115, precomputed once and published through an array of pointers;
 * the per-flow contexts live in the workers (ep_qos_node.h).  A changed
 * profile is a new one: built and checked aside (rte_meter refuses bad
 * rates: nothing changes then), published with one release store, the old
 * one retired after a grace period.  Control thread only.
 */
/* rte_sched's PIE inlines (through ep_qos.h) are still experimental in
 * DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_qos.h"
#include "ep_rcu.h"
#include "ep_text.h"

#define EP_POLICERS_KIND "policers"

/* Yellow packets' DSCP by their DSCP: bump drops AF precedence one step
 * (RFC 2597: AFx1 -> AFx2 -> AFx3), cs0 sends them best effort, a number
 * sets that DSCP. */
static void
yellow_map(uint8_t map[64], int yellow)
{
	for (int d = 0; d < 64; d++) {
		int cls = d >> 3, dp = d & 7;

		if (yellow >= 0)
			map[d] = (uint8_t)yellow;
		else if (yellow == -1 && cls >= 1 && cls <= 4 && (dp == 2 || dp == 4 || dp == 6))
			map[d] = (uint8_t)(dp == 6 ? d : d + 2);
		else
			map[d] = 0;
	}
}

struct ep_policers *
ep_policers_create(struct ep_engine *e, const char *name, struct ep_err *err)
{
	struct ep_policers *t = rte_zmalloc("ep_policers", sizeof(*t), RTE_CACHE_LINE_SIZE);

	if (t == NULL) {
		ep_err_set(err, "policers %s: out of memory", name);
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->e = e;
	if (ep_instance_add(e, EP_POLICERS_KIND, name, t, err) < 0) {
		rte_free(t);
		return NULL;
	}
	return t;
}

void
ep_policers_free(struct ep_policers *t)
{
	if (t == NULL)
		return;
	ep_instance_del(t->e, t);
	for (uint32_t i = 0; i < EP_POLICER_MAX; i++)
		rte_free(t->pol[i]);
	rte_free(t);
}

int
ep_policer_find(const struct ep_policers *t, const char *name)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (strcmp(t->pol[i]->name, name) == 0)
			return (int)i;
	return -1;
}

int
ep_policer_set_raw(struct ep_policers *t, const char *name, enum ep_policer_mode mode,
		   uint64_t cir, uint64_t cbs, uint64_t pir, uint64_t pbs, int yellow,
		   struct ep_err *err)
{
	struct ep_policer *p, *old;
	int idx = ep_policer_find(t, name), rc;

	if (ep_name_check(name, err) < 0)
		return -1;
	if (strcmp(name, "none") == 0)
		return ep_err_set(err, "policer: 'none' means no policer; pick another name");
	if (idx < 0 && t->n == EP_POLICER_MAX)
		return ep_err_set(err, "policer: all %d profiles in use", EP_POLICER_MAX);
	p = rte_zmalloc("ep_policer", sizeof(*p), RTE_CACHE_LINE_SIZE);
	if (p == NULL)
		return ep_err_set(err, "policer: out of memory");
	p->mode = (uint8_t)mode;
	if (mode == EP_POLICER_RFC2698)
		rc = rte_meter_trtcm_profile_config(&p->p2698, &(struct rte_meter_trtcm_params){
			.cir = cir, .pir = pir, .cbs = cbs, .pbs = pbs });
	else
		rc = rte_meter_trtcm_rfc4115_profile_config(&p->p4115,
			&(struct rte_meter_trtcm_rfc4115_params){
				.cir = cir, .eir = pir, .cbs = cbs, .ebs = pbs });
	if (rc != 0) {
		rte_free(p);
		return ep_err_set(err, "policer %s: rte_meter rejects the rates (%s needs %s)", name,
				  mode == EP_POLICER_RFC2698 ? "RFC 2698" : "RFC 4115",
				  mode == EP_POLICER_RFC2698 ? "0 < cir <= pir, cbs > 0, pbs > 0" :
				  "cir or eir > 0, and a burst size for each non-zero rate");
	}
	p->cir = cir;
	p->cbs = cbs;
	p->pir = pir;
	p->pbs = pbs;
	p->yellow = yellow;
	yellow_map(p->yellow_dscp, yellow);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (idx < 0)
		idx = (int)t->n++;
	old = t->pol[idx];
	ep_rcu_publish(&t->pol[idx], p);
	if (old == NULL)
		return 0;
	if (t->retire != NULL) {
		t->retire(t->retire_arg, old);
	} else {
		ep_rcu_synchronize(t->e);
		rte_free(old);
	}
	return 0;
}

struct pol_args { uint64_t cir, cbs, pir, pbs; bool has[4]; int mode; int yellow; };

static int
pol_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct pol_args *a = arg;

	if (strcmp(k, "cir") == 0 || strcmp(k, "pir") == 0 || strcmp(k, "eir") == 0) {
		uint64_t *f = k[0] == 'c' ? &a->cir : &a->pir;

		if (ep_qos_parse_rate(v, f) < 0)
			return ep_err_set(err, "%s: '%s' is not a rate in bit/s (k, M, G)", k, v);
		*f /= 8;
		a->has[k[0] == 'c' ? 0 : 2] = true;
	} else if (strcmp(k, "cbs") == 0 || strcmp(k, "pbs") == 0 || strcmp(k, "ebs") == 0) {
		uint64_t *f = k[0] == 'c' ? &a->cbs : &a->pbs;

		if (ep_qos_parse_size(v, f) < 0)
			return ep_err_set(err, "%s: '%s' is not a size in bytes (K, M)", k, v);
		a->has[k[0] == 'c' ? 1 : 3] = true;
	} else if (strcmp(k, "mode") == 0) {
		if (strcmp(v, "rfc2698") == 0)
			a->mode = EP_POLICER_RFC2698;
		else if (strcmp(v, "rfc4115") == 0)
			a->mode = EP_POLICER_RFC4115;
		else
			return ep_err_set(err, "mode: '%s' is not rfc2698 or rfc4115", v);
	} else if (strcmp(k, "yellow") == 0) {
		uint64_t d;

		if (strcmp(v, "bump") == 0)
			a->yellow = -1;
		else if (strcmp(v, "cs0") == 0)
			a->yellow = -2;
		else if (ep_parse_u64(v, 0, 63, &d, NULL) == 0)
			a->yellow = (int)d;
		else
			return ep_err_set(err, "yellow: '%s' is not bump, cs0 or a DSCP 0-63", v);
	} else {
		return ep_err_set(err, "unknown key '%s' (cir, cbs, pir, pbs, eir, ebs, mode, "
				  "yellow)", k);
	}
	return 0;
}

int
ep_policer_set(struct ep_policers *t, const char *name, const char *spec, struct ep_err *err)
{
	struct pol_args a = { .mode = EP_POLICER_RFC2698, .yellow = -1 };

	if (ep_qos_each_kv(spec, pol_kv, &a, err) < 0)
		return -1;
	for (int i = 0; i < 4; i++)
		if (!a.has[i])
			return ep_err_set(err, "policer %s: needs cir, cbs, %s", name,
					  a.mode == EP_POLICER_RFC2698 ? "pir and pbs" : "eir and ebs");
	return ep_policer_set_raw(t, name, (enum ep_policer_mode)a.mode, a.cir, a.cbs, a.pir,
				  a.pbs, a.yellow, err);
}
