/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vBNG tables: create/free, deferred frees, and subscriber requests as text
 * (the config file and the control socket fill the same request).  The
 * operations on subscribers are in bng_sub.c.  Control thread only; bng.h
 * says how each table reaches the workers.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "ep_rcu.h"
#include "bng.h"

/* Records come from a pool, not the allocator: under AddressSanitizer a
 * record back in the pool is poisoned until it is taken again, so a reader
 * that still uses a record after its grace period (a table entry left
 * naming it, a stage reading it past its quiescent state) is reported
 * where plain rte_free would have hidden nothing (test_bng_down's churn
 * cases). */
#if defined(__SANITIZE_ADDRESS__)
#define BNG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BNG_ASAN 1
#endif
#endif
#ifdef BNG_ASAN
#include <sanitizer/asan_interface.h>
#define rec_poison(r, n)   ASAN_POISON_MEMORY_REGION((r), sizeof(struct bng_sub) * (n))
#define rec_unpoison(r, n) ASAN_UNPOISON_MEMORY_REGION((r), sizeof(struct bng_sub) * (n))
#else
#define rec_poison(r, n)   ((void)(r), (void)(n))
#define rec_unpoison(r, n) ((void)(r), (void)(n))
#endif

const char *const bng_punt_name[BNG_PUNT__COUNT] = {
#define X(id, name) name,
	BNG_PUNT_KINDS(X)
#undef X
};

static uint32_t name_seq;

/* ---- deferred frees ---- */

enum { DQ_RECORD = 1, DQ_RTE_FREE = 2 };
struct dq_elem { uint64_t kind; void *obj; };

static void
dq_free(void *p, void *e, unsigned int n)
{
	struct bng *b = p;
	struct dq_elem *el = e;

	for (unsigned int i = 0; i < n; i++) {
		if (el[i].kind == DQ_RECORD) {
			rec_poison(el[i].obj, 1);
			b->rec_free[b->n_rec_free++] = el[i].obj;
		} else
			rte_free(el[i].obj);
	}
}

/* Free @p obj once no worker can hold it.  Never waits: the defer queue is
 * sized for every record and profile, and reclaims as it fills. */
static void
defer_free(struct bng *b, int kind, void *obj)
{
	struct dq_elem el = { (uint64_t)kind, obj };

	if (b->dq == NULL || rte_rcu_qsbr_dq_enqueue(b->dq, &el) != 0) {
		/* No RCU (never in practice) or queue full: wait here. */
		ep_rcu_synchronize(b->e);
		dq_free(b, &el, 1);
	}
}

struct bng_sub *
bng_rec_alloc(struct bng *b)
{
	if (b->n_rec_free == 0 && b->dq != NULL) {
		rte_rcu_qsbr_dq_reclaim(b->dq, UINT32_MAX, NULL, NULL, NULL);
		if (b->n_rec_free == 0) {
			ep_rcu_synchronize(b->e);
			rte_rcu_qsbr_dq_reclaim(b->dq, UINT32_MAX, NULL, NULL, NULL);
		}
	}
	if (b->n_rec_free == 0)
		return NULL;
	rec_unpoison(b->rec_free[b->n_rec_free - 1], 1);
	return b->rec_free[--b->n_rec_free];
}

void
bng_rec_retire(struct bng *b, struct bng_sub *rec)
{
	defer_free(b, DQ_RECORD, rec);
}

void
bng_defer_free(struct bng *b, void *obj)
{
	defer_free(b, DQ_RTE_FREE, obj);
}

static void
retire(void *arg, void *obj)
{
	bng_defer_free(arg, obj);
}

/* ---- create / free ---- */

void
bng_params_default(struct bng_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_subscribers = 65536;
	p->max_routes = 1024;
	ep_fib_params_default(&p->fib);
	p->punt_ring_size = 1024;
	ep_sched_params_default(&p->hqos);
	ep_qos_dscp_map_default(p->dscp_tc);
}

struct bng *
bng_create(struct ep_engine *e, const struct bng_params *p, struct ep_err *err)
{
	struct bng *b = rte_zmalloc("ep_bng", sizeof(*b), RTE_CACHE_LINE_SIZE);
	uint32_t seq = __atomic_fetch_add(&name_seq, 1, __ATOMIC_RELAXED);
	uint32_t max = p->max_subscribers;
	struct ep_acl_params ap;
	char name[RTE_HASH_NAMESIZE];

	if (b == NULL) {
		ep_err_set(err, "bng: out of memory");
		return NULL;
	}
	b->e = e;
	b->p = *p;
	b->control_port = -1;

	ep_acl_params_default(&ap);
	b->acl = ep_acl_create(e, "bng-uplink", &ap, err);
	if (b->acl == NULL)
		goto fail;
	b->pol = ep_policers_create(e, "bng", err);
	if (b->pol == NULL)
		goto fail;
	b->pol->retire = retire;            /* on the defer queue, never a wait */
	b->pol->retire_arg = b;
	b->hqos = ep_sched_create(e, "bng", &p->hqos, err);
	if (b->hqos == NULL)
		goto fail;

	b->subs = rte_zmalloc("ep_bng_subs", sizeof(b->subs[0]) * (max + 1), RTE_CACHE_LINE_SIZE);
	b->qinq = rte_zmalloc("ep_bng_qinq", sizeof(*b->qinq), RTE_CACHE_LINE_SIZE);
	b->pppoe = rte_zmalloc("ep_bng_pppoe", sizeof(*b->pppoe), RTE_CACHE_LINE_SIZE);
	/* Two records per subscriber: a replacement lives next to the record
	 * it replaces until the grace period ends. */
	b->n_rec = 2 * max + 64;
	b->rec_pool = rte_zmalloc("ep_bng_rec", sizeof(b->rec_pool[0]) * b->n_rec,
				  RTE_CACHE_LINE_SIZE);
	b->rec_free = rte_malloc("ep_bng_recf", sizeof(b->rec_free[0]) * b->n_rec, 0);
	if (b->subs == NULL || b->qinq == NULL || b->pppoe == NULL || b->rec_pool == NULL ||
	    b->rec_free == NULL) {
		ep_err_set(err, "bng: out of memory for %u subscribers", max);
		goto fail;
	}
	for (uint32_t i = b->n_rec; i > 0; i--)
		b->rec_free[b->n_rec_free++] = &b->rec_pool[i - 1];

	if (e->qsbr != NULL) {
		snprintf(name, sizeof(name), "bng_dq_%u", seq);
		b->dq = rte_rcu_qsbr_dq_create(&(struct rte_rcu_qsbr_dq_parameters){
			.name = name, .flags = RTE_RCU_QSBR_DQ_MT_UNSAFE,
			.size = b->n_rec + 2 * EP_POLICER_MAX, .esize = sizeof(struct dq_elem),
			.trigger_reclaim_limit = 64, .max_reclaim_size = 256,
			.v = e->qsbr, .free_fn = dq_free, .p = b });
		if (b->dq == NULL)
			goto fail_dpdk;
	}

	snprintf(name, sizeof(name), "bng_keys_%u", seq);
	b->keys = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = RTE_MAX(2 * max, 1024u), .key_len = sizeof(struct bng_key),
		.hash_func = rte_hash_crc, .socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF });
	if (b->keys == NULL)
		goto fail_dpdk;
	if (e->qsbr != NULL && rte_hash_rcu_qsbr_add(b->keys, &(struct rte_hash_rcu_config){
			.v = e->qsbr, .mode = RTE_HASH_QSBR_MODE_DQ }) != 0)
		goto fail_dpdk;

	snprintf(name, sizeof(name), "bng_dst_%u", seq);
	b->dst = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = RTE_MAX(max * (BNG_MAX_V4 + 1) + max / 2, 1024u),
		.key_len = sizeof(struct bng_dst_key), .hash_func = rte_hash_crc,
		.socket_id = SOCKET_ID_ANY, .extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF });
	if (b->dst == NULL)
		goto fail_dpdk;
	if (e->qsbr != NULL && rte_hash_rcu_qsbr_add(b->dst, &(struct rte_hash_rcu_config){
			.v = e->qsbr, .mode = RTE_HASH_QSBR_MODE_DQ }) != 0)
		goto fail_dpdk;
	b->lens = rte_zmalloc("ep_bng_lens", sizeof(*b->lens), 0);
	if (b->lens == NULL)
		goto fail_dpdk;
	return b;

fail_dpdk:
	ep_err_set(err, "bng: creating tables failed: %s (max_subscribers %u)",
		   rte_strerror(rte_errno), max);
fail:
	bng_free(b);
	return NULL;
}

void
bng_free(struct bng *b)
{
	if (b == NULL)
		return;
	if (b->punt_ring != NULL) {
		void *m[32];
		unsigned int k;

		while ((k = rte_ring_dequeue_burst(b->punt_ring, m, RTE_DIM(m), NULL)) != 0)
			rte_pktmbuf_free_bulk((struct rte_mbuf **)m, k);
		rte_ring_free(b->punt_ring);
	}
	if (b->dq != NULL) {
		/* Workers are stopped: everything queued is safe to free. */
		rte_rcu_qsbr_dq_reclaim(b->dq, UINT32_MAX, NULL, NULL, NULL);
		rte_rcu_qsbr_dq_delete(b->dq);
	}
	ep_sched_free(b->hqos);
	ep_policers_free(b->pol);
	rte_free(b->lens);
	rte_hash_free(b->dst);
	rte_hash_free(b->keys);
	rte_free(b->rec_free);
	if (b->rec_pool != NULL)
		rec_unpoison(b->rec_pool, b->n_rec);     /* rte_free clears it */
	rte_free(b->rec_pool);
	if (b->qinq != NULL)
		for (int i = 0; i < BNG_VID_N; i++)
			rte_free(b->qinq->blk[i]);
	rte_free(b->qinq);
	if (b->pppoe != NULL)
		for (size_t i = 0; i < RTE_DIM(b->pppoe->blk); i++)
			rte_free(b->pppoe->blk[i]);
	rte_free(b->pppoe);
	rte_free(b->subs);
	ep_acl_free(b->acl);
	ep_fib_free(b->fib);
	rte_free(b);
}

/* ---- requests ---- */

void
bng_sub_req_init(struct bng_sub_req *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->pipe, sizeof(r->pipe), "default");
}

static int
parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (ep_parse_u64(s, 0, max, &v, NULL) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
parse_v4(struct bng_sub_req *r, const char *val, struct ep_err *err)
{
	char buf[256], *save = NULL;

	if (strlen(val) >= sizeof(buf))
		return ep_err_set(err, "ipv4: too long");
	strcpy(buf, val);
	for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		uint8_t a[16], plen = 32;

		if (r->n_v4 == BNG_MAX_V4)
			return ep_err_set(err, "ipv4: more than %d addresses", BNG_MAX_V4);
		if (ep_prefix_parse(t, a, &plen, EP_PREFIX_BARE_OK, err) != 4)
			return ep_err_set(err, "ipv4: '%s' is not an IPv4 %s", t,
					  strchr(t, '/') != NULL ? "prefix" : "address");
		if (plen < 8)
			return ep_err_set(err, "ipv4: '%s' is shorter than /8", t);
		memcpy(&r->v4[r->n_v4], a, 4);
		r->v4_plen[r->n_v4++] = plen;
	}
	return 0;
}

int
bng_sub_req_set(struct bng_sub_req *r, const char *key, const char *val, struct ep_err *err)
{
	uint32_t v, w;

	if (val == NULL)
		return ep_err_set(err, "%s: missing value", key);
	if (strcmp(key, "id") == 0) {
		if (parse_u32(val, UINT32_MAX, &r->id) < 0 || r->id == 0)
			return ep_err_set(err, "id: '%s' is not a positive integer", val);
	} else if (strcmp(key, "vlan") == 0) {
		if (parse_u32(val, 4094, &v) < 0 || v == 0)
			return ep_err_set(err, "vlan: '%s' is not a VLAN id 1-4094", val);
		r->key.n_vlans = 1;
		r->key.outer = (uint16_t)v;
		r->key.inner = 0;
		r->has_key_vlan = true;
	} else if (strcmp(key, "qinq") == 0) {
		char a[16], *dot = strchr(val, '.');

		if (dot == NULL || (size_t)(dot - val) >= sizeof(a))
			return ep_err_set(err, "qinq: '%s' is not <outer>.<inner>", val);
		memcpy(a, val, (size_t)(dot - val));
		a[dot - val] = '\0';
		if (parse_u32(a, 4094, &v) < 0 || v == 0 || parse_u32(dot + 1, 4094, &w) < 0 ||
		    w == 0)
			return ep_err_set(err, "qinq: '%s' is not <outer>.<inner> with VLAN ids "
					  "1-4094", val);
		r->key.n_vlans = 2;
		r->key.outer = (uint16_t)v;
		r->key.inner = (uint16_t)w;
		r->has_key_vlan = true;
	} else if (strcmp(key, "pppoe") == 0) {
		uint64_t sid;

		if (ep_parse_u64_hex(val, 1, 0xfffe, &sid, NULL) < 0)
			return ep_err_set(err, "pppoe: '%s' is not a session id 1-65534", val);
		r->key.session = (uint16_t)sid;
		r->key.pppoe = 1;
		r->has_pppoe = true;
	} else if (strcmp(key, "mac") == 0) {
		if (ep_parse_mac(val, &r->mac) < 0 || rte_is_multicast_ether_addr(&r->mac) ||
		    rte_is_zero_ether_addr(&r->mac))
			return ep_err_set(err, "mac: '%s' is not a unicast MAC address", val);
		r->has_mac = true;
	} else if (strcmp(key, "ipv4") == 0) {
		r->n_v4 = 0;
		return parse_v4(r, val, err);
	} else if (strcmp(key, "ipv6") == 0) {
		if (ep_prefix_parse(val, r->v6, &r->v6_plen, 0, err) != 6)
			return ep_err_set(err, "ipv6: '%s' %s", val,
					  strchr(val, '/') ? "is not an IPv6 prefix with host bits "
					  "clear" : "needs a prefix length (2001:db8:1::/56)");
		if (r->v6_plen < 16 || r->v6_plen > 64)
			return ep_err_set(err, "ipv6: '%s': a subscriber's prefix is /16 to /64", val);
		r->has_v6 = true;
	} else if (strcmp(key, "policer") == 0 || strcmp(key, "pipe") == 0) {
		struct ep_err why;

		if (ep_name_check(val, &why) < 0)
			return ep_err_set(err, "%s: %.400s", key, why.msg);
		if (key[1] == 'o')
			snprintf(r->policer, sizeof(r->policer), "%s", strcmp(val, "none") ? val : "");
		else
			snprintf(r->pipe, sizeof(r->pipe), "%s", val);
	} else if (strcmp(key, "subport") == 0) {
		if (parse_u32(val, EP_SCHED_MAX_SUBPORTS - 1, &r->subport) < 0)
			return ep_err_set(err, "subport: '%s' is not 0-%d", val, EP_SCHED_MAX_SUBPORTS - 1);
	} else {
		return ep_err_set(err, "unknown field '%s' (id, qinq, vlan, pppoe, mac, ipv4, ipv6, "
				  "policer, pipe, subport)", key);
	}
	return 0;
}

int
bng_sub_req_parse(struct bng_sub_req *r, const char *line, struct ep_err *err)
{
	char buf[1024], *save = NULL;

	bng_sub_req_init(r);
	if (strlen(line) >= sizeof(buf))
		return ep_err_set(err, "subscriber line longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, line);
	for (char *t = strtok_r(buf, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		char *eq = strchr(t, '=');

		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", t);
		*eq = '\0';
		if (bng_sub_req_set(r, t, eq + 1, err) < 0)
			return -1;
	}
	if (r->id == 0)
		return ep_err_set(err, "id: missing");
	return 0;
}

