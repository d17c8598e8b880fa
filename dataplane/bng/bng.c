/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BNG tables: create/free, deferred frees, and the subscriber operations
 * (add or replace, bulk add, delete).  Control thread only; bng.h says how
 * each table reaches the workers.
 *
 * Add/replace of one subscriber, in the order a reader can tolerate:
 *
 *   validate     id, key and addresses free or already this subscriber's,
 *                profiles exist, a pipe in the subport      (nothing changed yet)
 *   publish      subs[id] = new record (release store); readers that
 *                found id through an old key or address now see the new one
 *   add          new key -> id, new IPv4 ranges and IPv6 prefix -> id
 *                (both rte_hash, in place)
 *   remove       keys / ranges the new record no longer has
 *   retire       the old record to the RCU defer queue: reused only after
 *                every worker passed a quiescent state
 *
 * Nothing waits for a grace period: replaced records, key slots and prefix
 * lists go to RCU defer queues.  A batch (sub-add-bulk, config loading) ends
 * with one message per downlink worker for the pipe configurations, so an
 * add costs two or three hash inserts and a record copy.
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
#include "router/router.h"
#include "bng.h"

struct bng *bng_global;

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
		if (el[i].kind == DQ_RECORD)
			b->rec_free[b->n_rec_free++] = el[i].obj;
		else
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

static struct bng_sub *
rec_alloc(struct bng *b)
{
	if (b->n_rec_free == 0 && b->dq != NULL) {
		rte_rcu_qsbr_dq_reclaim(b->dq, UINT32_MAX, NULL, NULL, NULL);
		if (b->n_rec_free == 0) {
			ep_rcu_synchronize(b->e);
			rte_rcu_qsbr_dq_reclaim(b->dq, UINT32_MAX, NULL, NULL, NULL);
		}
	}
	return b->n_rec_free != 0 ? b->rec_free[--b->n_rec_free] : NULL;
}

void
bng_defer_free(struct bng *b, void *obj)
{
	defer_free(b, DQ_RTE_FREE, obj);
}

/* ---- create / free ---- */

void
bng_params_default(struct bng_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_subscribers = 65536;
	p->max_routes = 1024;
	p->punt_ring_size = 1024;
	p->hqos_rate = 10000000000ull / 8;
	p->hqos_mtu = 1522;
	p->hqos_frame_overhead = RTE_SCHED_FRAME_OVERHEAD_DEFAULT;
	p->hqos_qsize = 64;
	bng_dscp_map_default(p->dscp_tc);
}

struct bng *
bng_create(struct ep_engine *e, const struct bng_params *p, struct ep_err *err)
{
	struct bng *b = rte_zmalloc("ep_bng", sizeof(*b), RTE_CACHE_LINE_SIZE);
	uint32_t seq = __atomic_fetch_add(&name_seq, 1, __ATOMIC_RELAXED);
	uint32_t max = p->max_subscribers;
	struct router_params rp;
	char name[RTE_HASH_NAMESIZE];

	if (b == NULL) {
		ep_err_set(err, "bng: out of memory");
		return NULL;
	}
	b->e = e;
	b->p = *p;
	b->control_port = -1;

	router_params_default(&rp);
	rp.max_routes4 = rp.max_routes6 = p->max_routes;
	rp.lpm4_tbl8s = 256;
	rp.lpm6_tbl8s = 1024;
	rp.max_nexthops = 1024;
	rp.max_acl_rules = 65536;
	b->rt = router_create(e, &rp, err);
	if (b->rt == NULL)
		goto fail;

	b->subs = rte_zmalloc("ep_bng_subs", sizeof(b->subs[0]) * (max + 1), RTE_CACHE_LINE_SIZE);
	/* Two records per subscriber: a replacement lives next to the record
	 * it replaces until the grace period ends. */
	b->n_rec = 2 * max + 64;
	b->rec_pool = rte_zmalloc("ep_bng_rec", sizeof(b->rec_pool[0]) * b->n_rec,
				  RTE_CACHE_LINE_SIZE);
	b->rec_free = rte_malloc("ep_bng_recf", sizeof(b->rec_free[0]) * b->n_rec, 0);
	if (b->subs == NULL || b->rec_pool == NULL || b->rec_free == NULL) {
		ep_err_set(err, "bng: out of memory for %u subscribers", max);
		goto fail;
	}
	for (uint32_t i = b->n_rec; i > 0; i--)
		b->rec_free[b->n_rec_free++] = &b->rec_pool[i - 1];

	if (e->qsbr != NULL) {
		snprintf(name, sizeof(name), "bng_dq_%u", seq);
		b->dq = rte_rcu_qsbr_dq_create(&(struct rte_rcu_qsbr_dq_parameters){
			.name = name, .flags = RTE_RCU_QSBR_DQ_MT_UNSAFE,
			.size = b->n_rec + 2 * BNG_MAX_POLICERS, .esize = sizeof(struct dq_elem),
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

	/* The default pipe profile (index 0): the whole port rate. */
	if (bng_pipe_set(b, "default", NULL, err) < 0)
		goto fail;
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
	if (bng_global == b)
		bng_global = NULL;
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
	for (int i = 0; i < BNG_MAX_POLICERS; i++)
		rte_free(b->pol[i]);
	for (uint32_t i = 0; i < BNG_MAX_SUBPORTS; i++)
		rte_free(b->subport[i].pipe_free);
	rte_free(b->lens);
	rte_hash_free(b->dst);
	rte_hash_free(b->keys);
	rte_free(b->rec_free);
	rte_free(b->rec_pool);
	rte_free(b->subs);
	router_free(b->rt);
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
		const char *why;

		if (r->n_v4 == BNG_MAX_V4)
			return ep_err_set(err, "ipv4: more than %d addresses", BNG_MAX_V4);
		if (strchr(t, '/') != NULL) {
			if (router_parse_prefix(t, a, &plen, true, &why) != 4)
				return ep_err_set(err, "ipv4: '%s' is not an IPv4 prefix", t);
		} else if (router_parse_ip(t, a) != 4) {
			return ep_err_set(err, "ipv4: '%s' is not an IPv4 address", t);
		}
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
		const char *why;

		if (router_parse_prefix(val, r->v6, &r->v6_plen, true, &why) != 6)
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
		if (parse_u32(val, BNG_MAX_SUBPORTS - 1, &r->subport) < 0)
			return ep_err_set(err, "subport: '%s' is not 0-%d", val, BNG_MAX_SUBPORTS - 1);
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

/* ---- subscriber operations ---- */

const struct bng_sub *
bng_sub_get(const struct bng *b, uint32_t id)
{
	return id >= 1 && id <= b->p.max_subscribers ? b->subs[id] : NULL;
}

int64_t
bng_sub_find_key(const struct bng *b, const struct bng_key *k)
{
	void *data;

	if (rte_hash_lookup_data(b->keys, k, &data) < 0)
		return -1;
	return (int64_t)(uintptr_t)data;
}

static bool
v4_has(const struct bng_sub *s, uint32_t a, uint8_t plen)
{
	for (int i = 0; s != NULL && i < s->n_v4; i++)
		if (s->v4_net[i] == a && s->v4_plen[i] == plen)
			return true;
	return false;
}

static bool
v6_same(const struct bng_sub *a, const struct bng_sub *b)
{
	if (a == NULL || b == NULL || a->has_v6 != b->has_v6)
		return false;
	return !a->has_v6 || (a->v6_plen == b->v6_plen && memcmp(a->v6, b->v6, 16) == 0);
}

/* ---- destination table: {family, length, prefix} -> id ---- */

static void
dst_key(struct bng_dst_key *k, int family, const void *addr, uint8_t plen)
{
	memset(k, 0, sizeof(*k));
	k->family = (uint8_t)family;
	k->plen = plen;
	memcpy(k->addr, addr, family == 4 ? 4 : 8);
}

/* Republish the list of prefix lengths in use (rare: a length appears or
 * disappears). */
static int
lens_publish(struct bng *b)
{
	struct bng_lens *l = rte_zmalloc("ep_bng_lens", sizeof(*l), 0), *old = b->lens;

	if (l == NULL)
		return -1;
	for (int i = 32; i >= 0; i--)
		if (b->len_refs4[i] != 0)
			l->len4[l->n4++] = (uint8_t)i;
	for (int i = 128; i >= 0; i--)
		if (b->len_refs6[i] != 0)
			l->len6[l->n6++] = (uint8_t)i;
	ep_rcu_publish(&b->lens, l);
	bng_defer_free(b, old);
	return 0;
}

static int
dst_add(struct bng *b, int family, const void *addr, uint8_t plen, uint32_t id)
{
	uint32_t *ref = family == 4 ? &b->len_refs4[plen] : &b->len_refs6[plen];
	struct bng_dst_key k;

	dst_key(&k, family, addr, plen);
	if (rte_hash_add_key_data(b->dst, &k, (void *)(uintptr_t)id) < 0)
		return -1;
	/* The key goes in before its length is listed: a reader that sees the
	 * new length finds the key under it. */
	if ((*ref)++ == 0 && lens_publish(b) < 0) {
		(*ref)--;
		rte_hash_del_key(b->dst, &k);
		return -1;
	}
	return 0;
}

static void
dst_del(struct bng *b, int family, const void *addr, uint8_t plen)
{
	uint32_t *ref = family == 4 ? &b->len_refs4[plen] : &b->len_refs6[plen];
	struct bng_dst_key k;

	dst_key(&k, family, addr, plen);
	if (rte_hash_del_key(b->dst, &k) < 0)
		return;
	if (--(*ref) == 0)
		lens_publish(b);
}

static int64_t
dst_find(const struct bng *b, int family, const void *addr, uint8_t plen)
{
	struct bng_dst_key k;
	void *data;

	dst_key(&k, family, addr, plen);
	if (rte_hash_lookup_data(b->dst, &k, &data) < 0)
		return -1;
	return (int64_t)(uintptr_t)data;
}

int64_t
bng_sub_find_dst(const struct bng *b, int family, const void *addr)
{
	const struct bng_lens *l = b->lens;
	int n = family == 4 ? l->n4 : l->n6;

	for (int i = 0; i < n; i++) {
		uint8_t plen = family == 4 ? l->len4[i] : l->len6[i], a[16] = {0};
		int64_t id;

		memcpy(a, addr, family == 4 ? 4 : 16);
		for (unsigned int bit = plen; bit < (family == 4 ? 32u : 128u); bit++)
			a[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
		id = dst_find(b, family, a, plen);
		if (id >= 0)
			return id;
	}
	return -1;
}

/* Pipe configurations of a batch: one message per downlink worker. */
struct batch {
	struct bng_pipe_cfg *pipes;
	uint32_t n_pipes, cap_pipes;
};

static int
batch_pipe(struct batch *bt, uint32_t subport, uint32_t pipe, uint32_t prof, struct ep_err *err)
{
	if (bt->n_pipes == bt->cap_pipes) {
		uint32_t cap = bt->cap_pipes ? 2 * bt->cap_pipes : 16;
		void *p = realloc(bt->pipes, sizeof(*bt->pipes) * cap);

		if (p == NULL)
			return ep_err_set(err, "out of memory");
		bt->pipes = p;
		bt->cap_pipes = cap;
	}
	bt->pipes[bt->n_pipes++] = (struct bng_pipe_cfg){ subport, pipe, prof };
	return 0;
}

static int
batch_commit(struct bng *b, struct batch *bt, struct ep_err *err)
{
	int rc = 0;

	if (bt->n_pipes != 0)
		rc = bng_hqos_pipes_config(b, bt->pipes, bt->n_pipes, err);
	free(bt->pipes);
	return rc;
}

static void
v6_words(const uint8_t *a, uint8_t plen, uint64_t net[2], uint64_t mask[2])
{
	uint8_t m[16] = {0};

	for (unsigned int i = 0; i < plen; i++)
		m[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	memcpy(mask, m, 16);
	memcpy(net, a, 16);
	net[0] &= mask[0];
	net[1] &= mask[1];
}

/* The access header template of the downlink (see bng_down.c). */
static int
build_template(struct bng *b, struct bng_sub *s, const struct bng_sub_req *r)
{
	uint8_t *t = s->tpl;
	uint32_t o = 12;
	static const uint16_t tpid[2][2] = { { RTE_ETHER_TYPE_VLAN, 0 },
					     { RTE_ETHER_TYPE_QINQ, RTE_ETHER_TYPE_VLAN } };

	memset(t, 0, sizeof(s->tpl));
	memcpy(t, &r->mac, 6);
	memcpy(t + 6, &b->e->ports[b->access_port].mac, 6);
	for (int i = 0; i < r->key.n_vlans; i++) {
		uint16_t vid = i == 0 ? r->key.outer : r->key.inner;

		t[o] = (uint8_t)(tpid[r->key.n_vlans - 1][i] >> 8);
		t[o + 1] = (uint8_t)tpid[r->key.n_vlans - 1][i];
		t[o + 2] = (uint8_t)(vid >> 8);
		t[o + 3] = (uint8_t)vid;
		o += 4;
	}
	if (r->has_pppoe) {
		t[o] = 0x88;            /* EtherType 0x8864: PPPoE session */
		t[o + 1] = 0x64;
		t[o + 2] = 0x11;
		t[o + 3] = 0;
		t[o + 4] = (uint8_t)(r->key.session >> 8);
		t[o + 5] = (uint8_t)r->key.session;
		/* length (2, per packet), PPP protocol (2, per family) */
		o += 2 + 4 + 2 + 2;
		s->tag_v4 = rte_cpu_to_be_16(0x0021);
		s->tag_v6 = rte_cpu_to_be_16(0x0057);
	} else {
		o += 2;
		s->tag_v4 = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		s->tag_v6 = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	}
	s->tpl_len = (uint8_t)o;
	s->pppoe = r->has_pppoe;
	return 0;
}

/* Undo the destination entries of @p s that @p old does not have. */
static void
dst_undo(struct bng *b, const struct bng_sub *s, const struct bng_sub *old, int n4, bool v6)
{
	for (int j = 0; j < n4; j++)
		if (!v4_has(old, s->v4_net[j], s->v4_plen[j]))
			dst_del(b, 4, &s->v4_net[j], s->v4_plen[j]);
	if (v6)
		dst_del(b, 6, s->v6, s->v6_plen);
}

static int
sub_add_one(struct bng *b, struct batch *bt, const struct bng_sub_req *r, struct ep_err *err)
{
	struct bng_sub *old, *s;
	int64_t other;
	int pol = -1, prof;
	uint32_t pipe;
	bool new_pipe = false, v6_new;
	struct bng_key key = r->key;

	if (r->id == 0 || r->id > b->p.max_subscribers)
		return ep_err_set(err, "id: %u is not 1-%u (max_subscribers)", r->id,
				  b->p.max_subscribers);
	if (!r->has_key_vlan && !r->has_pppoe)
		return ep_err_set(err, "needs vlan=, qinq= or pppoe= (the access key)");
	if (r->has_pppoe && !r->has_mac)
		return ep_err_set(err, "pppoe: needs mac= (the client MAC is part of the key)");
	if (r->policer[0] != '\0' && (pol = bng_policer_find(b, r->policer)) < 0)
		return ep_err_set(err, "policer: no profile '%s'", r->policer);
	prof = bng_pipe_find(b, r->pipe);
	if (prof < 0)
		return ep_err_set(err, "pipe: no profile '%s'", r->pipe);
	if (r->subport >= b->n_subports || !b->subport[r->subport].in_use)
		return ep_err_set(err, "subport: %u is not configured", r->subport);
	/* The client MAC is part of a PPPoE session's key. */
	if (r->has_pppoe)
		memcpy(key.mac, &r->mac, 6);
	old = b->subs[r->id];
	other = bng_sub_find_key(b, &key);
	if (other >= 0 && (uint32_t)other != r->id)
		return ep_err_set(err, "access key already belongs to subscriber %" PRId64, other);
	for (int i = 0; i < r->n_v4; i++) {
		uint32_t net = r->v4[i] & rte_cpu_to_be_32(r->v4_plen[i] == 0 ? 0 :
							   ~0u << (32 - r->v4_plen[i]));

		other = dst_find(b, 4, &net, r->v4_plen[i]);
		if (other >= 0 && (uint32_t)other != r->id)
			return ep_err_set(err, "ipv4: a range of subscriber %" PRId64, other);
		for (int j = 0; j < i; j++)
			if (r->v4[j] == r->v4[i] && r->v4_plen[j] == r->v4_plen[i])
				return ep_err_set(err, "ipv4: listed twice");
	}
	if (r->has_v6) {
		other = dst_find(b, 6, r->v6, r->v6_plen);
		if (other >= 0 && (uint32_t)other != r->id)
			return ep_err_set(err, "ipv6: the prefix of subscriber %" PRId64, other);
	}
	if (old != NULL && old->subport == r->subport) {
		pipe = old->pipe;
	} else {
		struct bng_subport *sp = &b->subport[r->subport];

		if (sp->n_free == 0)
			return ep_err_set(err, "subport %u: all %u pipes in use", r->subport,
					  sp->n_pipes);
		pipe = sp->pipe_free[sp->n_free - 1];
		new_pipe = true;
	}
	s = rec_alloc(b);
	if (s == NULL)
		return ep_err_set(err, "out of subscriber records");

	memset(s, 0, sizeof(*s));
	s->id = r->id;
	s->gen = old != NULL ? old->gen : ++b->gen;
	s->policer = pol < 0 ? BNG_NO_POLICER : (uint16_t)pol;
	s->n_v4 = r->n_v4;
	for (int i = 0; i < r->n_v4; i++) {
		s->v4_mask[i] = rte_cpu_to_be_32(r->v4_plen[i] == 0 ? 0 :
						 ~0u << (32 - r->v4_plen[i]));
		s->v4_net[i] = r->v4[i] & s->v4_mask[i];
		s->v4_plen[i] = r->v4_plen[i];
	}
	s->has_v6 = r->has_v6;
	if (r->has_v6) {
		memcpy(s->v6, r->v6, 16);
		s->v6_plen = r->v6_plen;
		v6_words(r->v6, r->v6_plen, s->v6_net, s->v6_mask);
	}
	s->subport = r->subport;
	s->pipe = pipe;
	s->pipe_prof = (uint16_t)prof;
	s->key = key;
	s->mac = r->mac;
	s->has_mac = r->has_mac;
	build_template(b, s, r);
	v6_new = s->has_v6 && !v6_same(old, s);

	/* Inserts first (they can fail: undone), then publish, then removals. */
	for (int i = 0; i < r->n_v4; i++) {
		if (v4_has(old, s->v4_net[i], s->v4_plen[i]))
			continue;
		if (dst_add(b, 4, &s->v4_net[i], s->v4_plen[i], r->id) < 0) {
			dst_undo(b, s, old, i, false);
			b->rec_free[b->n_rec_free++] = s;
			return ep_err_set(err, "ipv4: subscriber address table full");
		}
	}
	if (v6_new && dst_add(b, 6, s->v6, s->v6_plen, r->id) < 0) {
		dst_undo(b, s, old, r->n_v4, false);
		b->rec_free[b->n_rec_free++] = s;
		return ep_err_set(err, "ipv6: subscriber prefix table full");
	}
	if (rte_hash_add_key_data(b->keys, &s->key, (void *)(uintptr_t)r->id) < 0) {
		dst_undo(b, s, old, r->n_v4, v6_new);
		b->rec_free[b->n_rec_free++] = s;
		return ep_err_set(err, "access key table full");
	}
	if (new_pipe)
		b->subport[r->subport].n_free--;
	ep_rcu_publish(&b->subs[r->id], s);

	if (old != NULL) {
		if (memcmp(&old->key, &s->key, sizeof(s->key)) != 0)
			rte_hash_del_key(b->keys, &old->key);
		for (int i = 0; i < old->n_v4; i++)
			if (!v4_has(s, old->v4_net[i], old->v4_plen[i]))
				dst_del(b, 4, &old->v4_net[i], old->v4_plen[i]);
		if (old->has_v6 && !v6_same(old, s))
			dst_del(b, 6, old->v6, old->v6_plen);
		if (new_pipe) {
			struct bng_subport *sp = &b->subport[old->subport];

			sp->pipe_free[sp->n_free++] = old->pipe;
		}
		defer_free(b, DQ_RECORD, old);
	} else {
		b->n_subs++;
	}
	if (new_pipe || old->pipe_prof != s->pipe_prof)
		return batch_pipe(bt, s->subport, s->pipe, b->pipe_prof[prof].sched_id, err);
	return 0;
}

int
bng_sub_add_bulk_idx(struct bng *b, const struct bng_sub_req *reqs, uint32_t n, uint32_t *failed,
		     struct ep_err *err)
{
	struct batch bt = {0};
	int rc = 0;
	uint32_t i;

	for (i = 0; i < n && rc == 0; i++)
		rc = sub_add_one(b, &bt, &reqs[i], err);
	if (rc < 0 && failed != NULL)
		*failed = i - 1;
	if (batch_commit(b, &bt, rc < 0 ? NULL : err) < 0)
		rc = -1;
	return rc;
}

int
bng_sub_add_bulk(struct bng *b, const struct bng_sub_req *reqs, uint32_t n, struct ep_err *err)
{
	uint32_t f = 0;
	int rc = bng_sub_add_bulk_idx(b, reqs, n, &f, err);

	if (rc < 0 && n > 1) {
		char inner[sizeof(err->msg)];

		snprintf(inner, sizeof(inner), "%s", err->msg);
		ep_err_set(err, "subscribers[%u] (id %u): %s (the %u before it are in)", f,
			   reqs[f].id, inner, f);
	}
	return rc;
}

int
bng_sub_add(struct bng *b, const struct bng_sub_req *req, struct ep_err *err)
{
	return bng_sub_add_bulk(b, req, 1, err);
}

int
bng_sub_del(struct bng *b, uint32_t id, struct ep_err *err)
{
	struct bng_sub *old = (struct bng_sub *)bng_sub_get(b, id);
	struct bng_subport *sp;

	if (old == NULL)
		return ep_err_set(err, "id: no subscriber %u", id);
	/* Unreachable first, then gone: the record outlives every reader that
	 * found it through a key or an address (defer queue). */
	rte_hash_del_key(b->keys, &old->key);
	for (int i = 0; i < old->n_v4; i++)
		dst_del(b, 4, &old->v4_net[i], old->v4_plen[i]);
	if (old->has_v6)
		dst_del(b, 6, old->v6, old->v6_plen);
	ep_rcu_publish(&b->subs[id], NULL);
	sp = &b->subport[old->subport];
	sp->pipe_free[sp->n_free++] = old->pipe;
	b->n_subs--;
	defer_free(b, DQ_RECORD, old);
	return 0;
}
