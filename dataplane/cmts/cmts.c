/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vCMTS service groups: create/free, deferred frees.  Control thread only;
 * cmts.h says how each table reaches the workers.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "ep_rcu.h"
#include "cmts.h"
#include "ep_depi.h"

struct cmts *cmts_global;

enum { DQ_RECORD = 1, DQ_RTE_FREE };
struct dq_elem { uint64_t kind; void *obj; };

static void
dq_free(void *p, void *e, unsigned int n)
{
	struct cmts_sg *sg = p;
	struct dq_elem *el = e;

	for (unsigned int i = 0; i < n; i++) {
		if (el[i].kind == DQ_RECORD)
			sg->rec_free[sg->n_rec_free++] = el[i].obj;
		else
			rte_free(el[i].obj);
	}
}

static void
defer(struct cmts_sg *sg, int kind, void *obj)
{
	struct dq_elem el = { (uint64_t)kind, obj };

	if (obj == NULL)
		return;
	if (sg->dq == NULL || rte_rcu_qsbr_dq_enqueue(sg->dq, &el) != 0) {
		ep_rcu_synchronize(sg->e);
		dq_free(sg, &el, 1);
	}
}

void
cmts_defer_free(struct cmts_sg *sg, void *obj)
{
	defer(sg, DQ_RTE_FREE, obj);
}

void
cmts_defer_record(struct cmts_sg *sg, struct cmts_cm *rec)
{
	defer(sg, DQ_RECORD, rec);
}

struct cmts_cm *
cmts_rec_alloc(struct cmts_sg *sg)
{
	if (sg->n_rec_free == 0 && sg->dq != NULL) {
		rte_rcu_qsbr_dq_reclaim(sg->dq, UINT32_MAX, NULL, NULL, NULL);
		if (sg->n_rec_free == 0) {
			ep_rcu_synchronize(sg->e);
			rte_rcu_qsbr_dq_reclaim(sg->dq, UINT32_MAX, NULL, NULL, NULL);
		}
	}
	return sg->n_rec_free != 0 ? sg->rec_free[--sg->n_rec_free] : NULL;
}

void
cmts_sg_params_default(struct cmts_sg_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_cms = 1024;
	p->max_rules = 32768;
	p->sf_qsize = 64;
	p->bg_qsize = 256;
	p->depi_mtu = 1500;
	p->mpt_ts = EP_MPT_MAX_TS;
	p->ch_backlog_us = 2000;
	p->crc_verify = false;
	p->filter_default_permit = true;
}

/*
 * The SG's two instances of the shared ACL module, named <sg>-filter and
 * <sg>-cls (acl-list and acl-tables show them; their rules are edited with
 * filter-add/-del and cls-set/-del, which keep the DOCSIS order fields).
 * Filters: set = filter group, two lanes (a CM's two groups), default =
 * filter_default.  Classifiers: set = CM id, one lane.
 */
static int
acls_create(struct cmts_sg *sg, struct ep_err *err)
{
	struct ep_acl_params p;
	char name[EP_ACL_NAME_LEN];

	if (strlen(sg->name) + sizeof("-filter") > sizeof(name))
		return ep_err_set(err, "cmts %s: a service group's name takes at most %zu "
				  "characters (its ACLs are named <sg>-filter, <sg>-cls)", sg->name,
				  sizeof(name) - sizeof("-filter"));
	ep_acl_params_default(&p);
	p.max_rules = sg->p.max_rules;
	p.sets = true;
	p.lanes = CMTS_MAX_FG_PER_CM;
	snprintf(name, sizeof(name), "%s-filter", sg->name);
	sg->filter_acl = ep_acl_create(sg->e, name, &p, err);
	if (sg->filter_acl == NULL)
		return -1;
	snprintf(sg->filter_acl->owner, sizeof(sg->filter_acl->owner),
		 "cmts %s (filter-add, filter-del)", sg->name);
	if (!sg->p.filter_default_permit &&
	    ep_acl_commit(sg->filter_acl, NULL, 0, true, err) < 0)
		return -1;
	p.lanes = 1;
	snprintf(name, sizeof(name), "%s-cls", sg->name);
	sg->cls_acl = ep_acl_create(sg->e, name, &p, err);
	if (sg->cls_acl == NULL)
		return -1;
	snprintf(sg->cls_acl->owner, sizeof(sg->cls_acl->owner),
		 "cmts %s's CMs (cls-set, cls-del)", sg->name);
	return 0;
}

struct cmts_sg *
cmts_sg_create(struct cmts *c, const char *name, const struct cmts_sg_params *p,
	       struct ep_err *err)
{
	static uint32_t seq;
	uint32_t s = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
	struct cmts_sg *sg;
	char hname[RTE_HASH_NAMESIZE];

	if (c->n_sg == CMTS_MAX_SGS)
		return ep_err_set(err, "cmts: more than %d service groups", CMTS_MAX_SGS), NULL;
	sg = rte_zmalloc("cmts_sg", sizeof(*sg), RTE_CACHE_LINE_SIZE);
	if (sg == NULL)
		return ep_err_set(err, "cmts: out of memory"), NULL;
	snprintf(sg->name, sizeof(sg->name), "%s", name);
	sg->c = c;
	sg->e = c->e;
	sg->p = *p;
	sg->cms = rte_zmalloc("cmts_cms", sizeof(sg->cms[0]) * (p->max_cms + 1),
			      RTE_CACHE_LINE_SIZE);
	sg->sid_cm = rte_zmalloc("cmts_sid", sizeof(sg->sid_cm[0]) * CMTS_SID_SPACE,
				 RTE_CACHE_LINE_SIZE);
	/* Two records per CM: a replacement lives beside the record it
	 * replaces until the grace period ends. */
	sg->n_rec = 2 * p->max_cms + 64;
	sg->rec_pool = rte_zmalloc("cmts_rec", sizeof(sg->rec_pool[0]) * sg->n_rec,
				   RTE_CACHE_LINE_SIZE);
	sg->rec_free = rte_malloc("cmts_recf", sizeof(sg->rec_free[0]) * sg->n_rec, 0);
	if (sg->cms == NULL || sg->sid_cm == NULL || sg->rec_pool == NULL ||
	    sg->rec_free == NULL) {
		ep_err_set(err, "cmts: out of memory for %u CMs", p->max_cms);
		goto fail;
	}
	for (uint32_t i = sg->n_rec; i > 0; i--)
		sg->rec_free[sg->n_rec_free++] = &sg->rec_pool[i - 1];
	if (c->e->qsbr != NULL) {
		snprintf(hname, sizeof(hname), "cmts_dq_%u", s);
		sg->dq = rte_rcu_qsbr_dq_create(&(struct rte_rcu_qsbr_dq_parameters){
			.name = hname, .flags = RTE_RCU_QSBR_DQ_MT_UNSAFE,
			.size = sg->n_rec + 1024, .esize = sizeof(struct dq_elem),
			.trigger_reclaim_limit = 64, .max_reclaim_size = 256,
			.v = c->e->qsbr, .free_fn = dq_free, .p = sg });
		if (sg->dq == NULL)
			goto fail_dpdk;
	}
	snprintf(hname, sizeof(hname), "cmts_addr_%u", s);
	sg->addr = rte_hash_create(&(struct rte_hash_parameters){
		.name = hname, .entries = RTE_MAX(p->max_cms * CMTS_MAX_CPE * 2, 1024u),
		.key_len = 16, .hash_func = rte_hash_crc, .socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF });
	if (sg->addr == NULL)
		goto fail_dpdk;
	if (c->e->qsbr != NULL && rte_hash_rcu_qsbr_add(sg->addr, &(struct rte_hash_rcu_config){
			.v = c->e->qsbr, .mode = RTE_HASH_QSBR_MODE_DQ }) != 0)
		goto fail_dpdk;
	if (acls_create(sg, err) < 0)
		goto fail;
	c->sg[c->n_sg++] = sg;
	return sg;
fail_dpdk:
	ep_err_set(err, "cmts: creating tables failed: %s", rte_strerror(rte_errno));
fail:
	cmts_sg_free(sg);
	return NULL;
}

void
cmts_sg_free(struct cmts_sg *sg)
{
	if (sg == NULL)
		return;
	if (sg->dq != NULL) {
		/* Workers are stopped: everything queued can go. */
		rte_rcu_qsbr_dq_reclaim(sg->dq, UINT32_MAX, NULL, NULL, NULL);
		rte_rcu_qsbr_dq_delete(sg->dq);
	}
	for (uint32_t id = 1; sg->cms != NULL && id <= sg->p.max_cms; id++) {
		struct cmts_cm *cm = sg->cms[id];

		if (cm == NULL)
			continue;
		for (int k = 0; k < 2; k++) {
			if (cm->key[k] == NULL)
				continue;
			cmts_key_destroy(sg->c, (struct cmts_key *)(uintptr_t)cm->key[k]);
			rte_free((void *)(uintptr_t)cm->key[k]);
		}
	}
	ep_acl_free(sg->filter_acl);
	rte_free(sg->fg4);
	ep_acl_free(sg->cls_acl);
	rte_hash_free(sg->addr);
	rte_free(sg->addr_tab);
	rte_free(sg->filters);
	rte_free(sg->rec_free);
	rte_free(sg->rec_pool);
	rte_free(sg->sid_cm);
	rte_free(sg->cms);
	rte_free(sg);
}

struct cmts_sg *
cmts_sg_find(struct cmts *c, const char *name)
{
	if (c == NULL)
		return NULL;
	if (name == NULL || *name == '\0')
		return c->n_sg == 1 ? c->sg[0] : NULL;
	for (int i = 0; i < c->n_sg; i++)
		if (strcmp(c->sg[i]->name, name) == 0)
			return c->sg[i];
	return NULL;
}

void
cmts_free(struct cmts *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->n_sg; i++)
		cmts_sg_free(c->sg[i]);
	cmts_crypto_fini(c);
	if (cmts_global == c)
		cmts_global = NULL;
	rte_free(c);
}
