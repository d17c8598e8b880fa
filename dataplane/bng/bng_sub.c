/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Subscriber operations: add or replace a batch (one or many), delete, and
 * the lookups the control side shares with the fast path.  Control thread
 * only; bng.h says how each table reaches the workers.
 *
 * An add is planned, then applied, whole or not at all:
 *
 *   plan     per entry: fields, profiles and subport exist; the id, access
 *            key and ranges are free or already this subscriber's, in the
 *            tables and in the rest of the batch; a record from the pool is
 *            filled; a pipe is reserved (new subscriber, or a move to
 *            another subport).  Nothing a worker reads has changed.
 *   HQoS     the batch's pipe configurations, one message per downlink
 *            worker (ep_sched_pipes_apply): new pipes and pipes whose
 *            profile changes are set before any record names them
 *   insert   new access keys, IPv4 ranges and IPv6 prefixes -> id
 *            (rte_hash, in place); a failure (table full) deletes what this
 *            batch inserted
 *   publish  subs[id] = new record (release store)
 *   remove   keys / ranges the new records no longer have, pipes left
 *            behind; old records to the RCU defer queue
 *
 * A failure before `publish` undoes the plan (records back to the pool,
 * reserved pipes released, changed pipes set back), so the tables, the
 * pipes and the per-worker counters (keyed by the record's generation,
 * which is only consumed on success) show no trace of it.
 *
 * Nothing waits for a grace period: replaced records, key slots and prefix
 * lists go to RCU defer queues, so an add costs two or three hash inserts
 * and a record copy, and a batch one message per downlink worker.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "ep_rcu.h"
#include "bng.h"

/*
 * Set (v = bng_key_data) or clear (v = 0) the QinQ entry of key @p k, if
 * it is a QinQ IPoE key.  A block is allocated on the first entry of its
 * outer VID, up to BNG_QINQ_BLOCKS_MAX; without one the key is the hash's
 * alone (struct bng_qinq).
 */
static void
qinq_set(struct bng *b, const struct bng_key *k, uint64_t v)
{
	uint64_t *blk;

	if (k->n_vlans != 2 || k->pppoe || k->outer >= BNG_VID_N || k->inner >= BNG_VID_N)
		return;
	blk = b->qinq->blk[k->outer];
	if (blk == NULL) {
		if (v == 0 || b->qinq->n_blk == BNG_QINQ_BLOCKS_MAX)
			return;
		blk = rte_zmalloc("ep_bng_qinqb", sizeof(blk[0]) * BNG_VID_N, RTE_CACHE_LINE_SIZE);
		if (blk == NULL)
			return;
		__atomic_store_n(&b->qinq->blk[k->outer], blk, __ATOMIC_RELEASE);
		b->qinq->n_blk++;
	}
	__atomic_store_n(&blk[k->inner], v, __ATOMIC_RELEASE);
}

/*
 * Set (v = bng_key_data) or clear (v = 0) the PPPoE map's entry of key
 * @p k, if it is a PPPoE key and the entry is free or already its own
 * (struct bng_pppoe: the entry's data word is cleared before its key words
 * change and written after them).
 */
static void
pppoe_set(struct bng *b, const struct bng_key *k, uint64_t v)
{
	struct bng_pppoe_ent *blk, *e;
	uint64_t w[2];
	bool own;

	if (!k->pppoe)
		return;
	memcpy(w, k, sizeof(w));
	blk = b->pppoe->blk[k->session / BNG_PPPOE_BLK];
	if (blk == NULL) {
		if (v == 0)
			return;
		blk = rte_zmalloc("ep_bng_pppoeb", sizeof(blk[0]) * BNG_PPPOE_BLK,
				  RTE_CACHE_LINE_SIZE);
		if (blk == NULL)
			return;
		__atomic_store_n(&b->pppoe->blk[k->session / BNG_PPPOE_BLK], blk,
				 __ATOMIC_RELEASE);
	}
	e = &blk[k->session % BNG_PPPOE_BLK];
	own = e->data != 0 && e->key[0] == w[0] && e->key[1] == w[1];
	if (v == 0 || own) {
		/* Cleared, or the same key's new data (a replace). */
		if (own)
			__atomic_store_n(&e->data, v, __ATOMIC_RELEASE);
		return;
	}
	if (e->data != 0)
		return;         /* another session with this id: the hash's alone */
	__atomic_store_n(&e->key[0], w[0], __ATOMIC_RELEASE);
	__atomic_store_n(&e->key[1], w[1], __ATOMIC_RELEASE);
	__atomic_store_n(&e->data, v, __ATOMIC_RELEASE);
}

/* The key's data in all of its tables: bng.keys (inserted or updated in
 * place), the QinQ map, the PPPoE map. */
static int
key_put(struct bng *b, const struct bng_sub *s)
{
	if (rte_hash_add_key_data(b->keys, &s->key, bng_key_data(s)) < 0)
		return -1;
	qinq_set(b, &s->key, (uint64_t)(uintptr_t)bng_key_data(s));
	pppoe_set(b, &s->key, (uint64_t)(uintptr_t)bng_key_data(s));
	return 0;
}

/* Key @p k out of all tables (the maps' entries first: a reader that still
 * finds it in the hash has the same answer). */
static void
key_del(struct bng *b, const struct bng_key *k)
{
	qinq_set(b, k, 0);
	pppoe_set(b, k, 0);
	rte_hash_del_key(b->keys, k);
}

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
	return (int64_t)(uint32_t)(uintptr_t)data;      /* bng_key_data: the id */
}

static bool
v4_has(const struct bng_sub *s, uint32_t a, uint8_t plen)
{
	for (int i = 0; s != NULL && i < s->n_v4; i++)
		if (s->ranges.v4_net[i] == a && s->v4_plen[i] == plen)
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
dst_add(struct bng *b, int family, const void *addr, uint8_t plen, const struct bng_sub *s)
{
	uint32_t *ref = family == 4 ? &b->len_refs4[plen] : &b->len_refs6[plen];
	struct bng_dst_key k;

	dst_key(&k, family, addr, plen);
	if (rte_hash_add_key_data(b->dst, &k, bng_dst_data(b, s)) < 0)
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

/* A destination @p s keeps from the record it replaces: its data names @p s
 * from now on.  An update of a present key allocates nothing and does not
 * fail; if it ever did, the destination is removed (its packets dropped as
 * no subscriber until the next change) rather than left naming a record
 * about to be retired. */
static void
dst_repoint(struct bng *b, int family, const void *addr, uint8_t plen, const struct bng_sub *s)
{
	struct bng_dst_key k;

	dst_key(&k, family, addr, plen);
	if (rte_hash_add_key_data(b->dst, &k, bng_dst_data(b, s)) < 0)
		dst_del(b, family, addr, plen);
}

static int64_t
dst_find(const struct bng *b, int family, const void *addr, uint8_t plen)
{
	struct bng_dst_key k;
	void *data;

	dst_key(&k, family, addr, plen);
	if (rte_hash_lookup_data(b->dst, &k, &data) < 0)
		return -1;
	return bng_dst_id(data);
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
		ep_prefix_clear_host(family, a, plen);
		id = dst_find(b, family, a, plen);
		if (id >= 0)
			return id;
	}
	return -1;
}

/* ---- the access header template of the downlink (see bng_down.c) ---- */

static void
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
}

/* ---- what a batch claims: ids, access keys, ranges ---- */

/* A small open-addressed set of 16-byte keys (access keys, destination
 * keys, ids) with the id that claims each, so conflicts inside a batch are
 * found in one pass instead of comparing every pair. */
struct claim { uint32_t id; uint8_t kind; uint8_t used; uint8_t key[16]; };
struct claims { struct claim *slot; uint32_t cap; };

enum { CLAIM_ID = 1, CLAIM_KEY, CLAIM_DST };

/* 0 if (kind, key) is now claimed by @p id, else the id that claimed it. */
static uint32_t
claim(struct claims *c, uint8_t kind, const void *key, uint32_t id)
{
	uint32_t h = rte_hash_crc(key, 16, kind) & (c->cap - 1);

	for (;; h = (h + 1) & (c->cap - 1)) {
		struct claim *s = &c->slot[h];

		if (!s->used) {
			*s = (struct claim){ .id = id, .kind = kind, .used = 1 };
			memcpy(s->key, key, 16);
			return 0;
		}
		if (s->kind == kind && memcmp(s->key, key, 16) == 0)
			return s->id == id ? 0 : s->id;
	}
}

/* ---- plan ---- */

struct plan {
	struct bng_sub *rec;            /* new, unpublished */
	struct bng_sub *old;            /* the id's current record, or NULL */
	bool new_pipe;                  /* reserved by this plan */
	bool pipe_cfg;                  /* the pipe needs its profile set */
};

/* Check one request and fill its record; reserve its pipe.  Nothing a
 * worker reads changes.  -1 with err naming what is wrong. */
static int
plan_one(struct bng *b, struct claims *cl, uint32_t idx, const struct bng_sub_req *r,
	 struct plan *pl, struct ep_err *err)
{
	struct bng_key key = r->key;
	struct bng_sub *s, *old;
	int pol = -1, prof;
	int64_t other;
	uint32_t pipe;

	memset(pl, 0, sizeof(*pl));
	if (r->id == 0 || r->id > b->p.max_subscribers)
		return ep_err_set(err, "id: %u is not 1-%u (max_subscribers)", r->id,
				  b->p.max_subscribers);
	if (!r->has_key_vlan && !r->has_pppoe && !r->has_mac)
		return ep_err_set(err, "needs vlan=, qinq=, pppoe= or, on an untagged IPoE line, "
				  "mac= (the access key)");
	if (r->has_pppoe && !r->has_mac)
		return ep_err_set(err, "pppoe: needs mac= (the client MAC is part of the key)");
	if (r->policer[0] != '\0' && (pol = ep_policer_find(b->pol, r->policer)) < 0)
		return ep_err_set(err, "policer: no profile '%s'", r->policer);
	prof = ep_sched_profile_find(b->hqos, r->pipe);
	if (prof < 0)
		return ep_err_set(err, "pipe: no profile '%s'", r->pipe);
	if (r->subport >= b->hqos->n_subports || !b->hqos->sub[r->subport].in_use)
		return ep_err_set(err, "subport: %u is not configured", r->subport);
	/* The client MAC is part of a PPPoE session's key, and the whole key
	 * of an untagged IPoE subscriber. */
	if (r->has_pppoe || !r->has_key_vlan)
		memcpy(key.mac, &r->mac, 6);
	/* An id is claimed by the entry (index + 1): a second entry conflicts. */
	if (claim(cl, CLAIM_ID, (uint8_t[16]){ (uint8_t)r->id, (uint8_t)(r->id >> 8),
						(uint8_t)(r->id >> 16), (uint8_t)(r->id >> 24) },
		  idx + 1) != 0)
		return ep_err_set(err, "id: %u is in the batch twice", r->id);
	old = b->subs[r->id];
	other = bng_sub_find_key(b, &key);
	if (other >= 0 && (uint32_t)other != r->id)
		return ep_err_set(err, "access key already belongs to subscriber %" PRId64, other);
	other = claim(cl, CLAIM_KEY, &key, r->id);
	if (other != 0)
		return ep_err_set(err, "access key already belongs to subscriber %" PRId64
				  " in this batch", other);
	for (int i = 0; i < r->n_v4; i++) {
		uint32_t net = r->v4[i] & ep_ipv4_mask_be(r->v4_plen[i]);
		struct bng_dst_key k;

		for (int j = 0; j < i; j++)
			if (r->v4[j] == r->v4[i] && r->v4_plen[j] == r->v4_plen[i])
				return ep_err_set(err, "ipv4: listed twice");
		other = dst_find(b, 4, &net, r->v4_plen[i]);
		if (other >= 0 && (uint32_t)other != r->id)
			return ep_err_set(err, "ipv4: a range of subscriber %" PRId64, other);
		dst_key(&k, 4, &net, r->v4_plen[i]);
		other = claim(cl, CLAIM_DST, &k, r->id);
		if (other != 0)
			return ep_err_set(err, "ipv4: a range of subscriber %" PRId64
					  " in this batch", other);
	}
	if (r->has_v6) {
		struct bng_dst_key k;

		other = dst_find(b, 6, r->v6, r->v6_plen);
		if (other >= 0 && (uint32_t)other != r->id)
			return ep_err_set(err, "ipv6: the prefix of subscriber %" PRId64, other);
		dst_key(&k, 6, r->v6, r->v6_plen);
		other = claim(cl, CLAIM_DST, &k, r->id);
		if (other != 0)
			return ep_err_set(err, "ipv6: the prefix of subscriber %" PRId64
					  " in this batch", other);
	}
	s = bng_rec_alloc(b);
	if (s == NULL)
		return ep_err_set(err, "out of subscriber records");
	if (old != NULL && old->subport == r->subport) {
		pipe = old->pipe;
	} else if (ep_sched_pipe_reserve(b->hqos, r->subport, &pipe, err) < 0) {
		b->rec_free[b->n_rec_free++] = s;
		return -1;
	} else {
		pl->new_pipe = true;
	}
	memset(s, 0, sizeof(*s));
	s->id = r->id;
	s->gen = old != NULL ? old->gen : ++b->gen;
	/* A version per record: what the workers' copies of its hot fields
	 * are checked against (bng_key_data).  0 means "no copy". */
	s->ver = ++b->ver != 0 ? b->ver : ++b->ver;
	s->policer = pol < 0 ? BNG_NO_POLICER : (uint16_t)pol;
	s->n_v4 = r->n_v4;
	for (int i = 0; i < r->n_v4; i++) {
		ep_prefix_set_v4(&s->ranges, i, r->v4[i], r->v4_plen[i]);
		s->v4_plen[i] = r->v4_plen[i];
	}
	s->has_v6 = r->has_v6;
	if (r->has_v6) {
		memcpy(s->v6, r->v6, 16);
		s->v6_plen = r->v6_plen;
		ep_prefix_set_v6(&s->ranges, r->v6, r->v6_plen);
	}
	/* No range: a net no masked address equals (the downlink's rpf). */
	s->v4_net0 = r->n_v4 != 0 ? s->ranges.v4_net[0] : UINT32_MAX;
	s->v4_mask0 = r->n_v4 != 0 ? s->ranges.v4_mask[0] : 0;
	s->subport = (uint16_t)r->subport;
	s->pipe = pipe;
	s->pipe_prof = (uint16_t)prof;
	s->key = key;
	s->mac = r->mac;
	s->has_mac = r->has_mac;
	s->can_encap = r->has_pppoe || r->has_mac;
	build_template(b, s, r);
	pl->rec = s;
	pl->old = old;
	pl->pipe_cfg = pl->new_pipe || old->pipe_prof != s->pipe_prof;
	return 0;
}

/* Undo plans [0, n): records back to the pool, pipes released. */
static void
plan_undo(struct bng *b, struct plan *pl, uint32_t n, uint32_t gen)
{
	for (uint32_t i = 0; i < n; i++) {
		if (pl[i].new_pipe)
			ep_sched_pipe_release(b->hqos, pl[i].rec->subport, pl[i].rec->pipe);
		b->rec_free[b->n_rec_free++] = pl[i].rec;
	}
	b->gen = gen;
}

/* Set back the profiles of live pipes a failed batch had changed. */
static void
pipes_restore(struct bng *b, const struct plan *pl, uint32_t n)
{
	struct ep_sched_pipe_cfg *c = malloc(sizeof(*c) * (n ? n : 1));
	uint32_t k = 0;

	for (uint32_t i = 0; c != NULL && i < n; i++)
		if (pl[i].pipe_cfg && !pl[i].new_pipe)
			c[k++] = (struct ep_sched_pipe_cfg){ pl[i].old->subport, pl[i].old->pipe,
							     pl[i].old->pipe_prof };
	if (k != 0)
		ep_sched_pipes_apply(b->hqos, c, k, NULL);
	free(c);
}

/* ---- apply ---- */

/* Insert what new record @p s adds over @p old; all of it or nothing. */
static int
insert_one(struct bng *b, const struct bng_sub *s, const struct bng_sub *old)
{
	bool key_new = old == NULL || memcmp(&old->key, &s->key, sizeof(s->key)) != 0;
	bool v6_new = s->has_v6 && !v6_same(old, s);
	int j;

	for (j = 0; j < s->n_v4; j++)
		if (!v4_has(old, s->ranges.v4_net[j], s->v4_plen[j]) &&
		    dst_add(b, 4, &s->ranges.v4_net[j], s->v4_plen[j], s) < 0)
			goto undo_v4;
	if (v6_new && dst_add(b, 6, s->v6, s->v6_plen, s) < 0)
		goto undo_v4;
	if (key_new && key_put(b, s) < 0)
		goto undo_v6;
	return 0;
undo_v6:
	if (v6_new)
		dst_del(b, 6, s->v6, s->v6_plen);
undo_v4:
	while (j-- > 0)
		if (!v4_has(old, s->ranges.v4_net[j], s->v4_plen[j]))
			dst_del(b, 4, &s->ranges.v4_net[j], s->v4_plen[j]);
	return -1;
}

/* Take back what insert_one put in. */
static void
remove_one(struct bng *b, const struct bng_sub *s, const struct bng_sub *old)
{
	if (old == NULL || memcmp(&old->key, &s->key, sizeof(s->key)) != 0)
		key_del(b, &s->key);
	for (int k = 0; k < s->n_v4; k++)
		if (!v4_has(old, s->ranges.v4_net[k], s->v4_plen[k]))
			dst_del(b, 4, &s->ranges.v4_net[k], s->v4_plen[k]);
	if (s->has_v6 && !v6_same(old, s))
		dst_del(b, 6, s->v6, s->v6_plen);
}

/* Insert what the new records add; on a failure (a table full) take back
 * what this batch inserted and return -1 with the entry in *failed. */
static int
insert_all(struct bng *b, const struct plan *pl, uint32_t n, struct ep_err *err,
	   uint32_t *failed)
{
	for (uint32_t i = 0; i < n; i++) {
		if (insert_one(b, pl[i].rec, pl[i].old) == 0)
			continue;
		*failed = i;
		while (i-- > 0)
			remove_one(b, pl[i].rec, pl[i].old);
		return ep_err_set(err, "subscriber tables full (access keys or addresses)");
	}
	return 0;
}

/* Publish the new records; remove what the old ones had and the new ones
 * do not; retire the old records.  Cannot fail. */
static void
publish_all(struct bng *b, const struct plan *pl, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct bng_sub *s = pl[i].rec;
		struct bng_sub *old = pl[i].old;

		ep_rcu_publish(&b->subs[s->id], pl[i].rec);
		if (old == NULL) {
			b->n_subs++;
			continue;
		}
		/* Same key: its data names the new version (an update of a
		 * present key allocates nothing and cannot fail; if it did,
		 * workers would re-read subs[id] per packet, still right). */
		if (memcmp(&old->key, &s->key, sizeof(s->key)) != 0)
			key_del(b, &old->key);
		else
			(void)key_put(b, s);
		/* Destinations: the ones kept name the new record, the others
		 * go; the old record is retired after, below. */
		for (int k = 0; k < old->n_v4; k++)
			if (!v4_has(s, old->ranges.v4_net[k], old->v4_plen[k]))
				dst_del(b, 4, &old->ranges.v4_net[k], old->v4_plen[k]);
			else
				dst_repoint(b, 4, &old->ranges.v4_net[k], old->v4_plen[k], s);
		if (old->has_v6 && !v6_same(old, s))
			dst_del(b, 6, old->v6, old->v6_plen);
		else if (old->has_v6)
			dst_repoint(b, 6, old->v6, old->v6_plen, s);
		if (pl[i].new_pipe)
			ep_sched_pipe_release(b->hqos, old->subport, old->pipe);
		bng_rec_retire(b, old);
	}
}

int
bng_sub_add(struct bng *b, const struct bng_sub_req *reqs, uint32_t n, uint32_t *failed,
	    struct ep_err *err)
{
	struct claims cl = { NULL, rte_align32pow2(RTE_MAX(2u * n * (BNG_MAX_V4 + 3), 64u)) };
	struct plan *pl = calloc(n ? n : 1, sizeof(*pl));
	struct ep_sched_pipe_cfg *cfg = calloc(n ? n : 1, sizeof(*cfg));
	uint32_t i = 0, n_cfg = 0, gen = b->gen, bad = 0;
	int rc = -1;

	cl.slot = calloc(cl.cap, sizeof(*cl.slot));
	if (pl == NULL || cfg == NULL || cl.slot == NULL) {
		ep_err_set(err, "out of memory for a batch of %u", n);
		goto out;
	}
	/* Plan. */
	for (i = 0; i < n; i++)
		if (plan_one(b, &cl, i, &reqs[i], &pl[i], err) < 0)
			break;
	if (i < n) {
		bad = i;
		plan_undo(b, pl, i, gen);
		goto fail;
	}
	/* HQoS: the pipes, on every downlink worker, before any record names them. */
	for (i = 0; i < n; i++)
		if (pl[i].pipe_cfg)
			cfg[n_cfg++] = (struct ep_sched_pipe_cfg){ pl[i].rec->subport, pl[i].rec->pipe,
								   pl[i].rec->pipe_prof };
	if (ep_sched_pipes_apply(b->hqos, cfg, n_cfg, err) < 0) {
		ep_err_prefix(err, "hqos: ");
		for (bad = 0; bad < n && !pl[bad].pipe_cfg; bad++)
			;
		pipes_restore(b, pl, n);
		plan_undo(b, pl, n, gen);
		goto fail;
	}
	/* Insert, publish, remove. */
	if (insert_all(b, pl, n, err, &bad) < 0) {
		pipes_restore(b, pl, n);
		plan_undo(b, pl, n, gen);
		goto fail;
	}
	publish_all(b, pl, n);
	rc = 0;
	goto out;
fail:
	if (failed != NULL)
		*failed = bad;
	if (n > 1 && err != NULL) {
		ep_err_prefix(err, "subscribers[%u] (id %u): ", bad, reqs[bad].id);
		snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
			 " (none added)");
	}
out:
	free(cl.slot);
	free(cfg);
	free(pl);
	return rc;
}

int
bng_sub_del(struct bng *b, uint32_t id, struct ep_err *err)
{
	struct bng_sub *old = (struct bng_sub *)bng_sub_get(b, id);

	if (old == NULL)
		return ep_err_set(err, "id: no subscriber %u", id);
	/* Unreachable first, then gone: the record outlives every reader that
	 * found it through a key or an address (defer queue). */
	key_del(b, &old->key);
	for (int i = 0; i < old->n_v4; i++)
		dst_del(b, 4, &old->ranges.v4_net[i], old->v4_plen[i]);
	if (old->has_v6)
		dst_del(b, 6, old->v6, old->v6_plen);
	ep_rcu_publish(&b->subs[id], NULL);
	ep_sched_pipe_release(b->hqos, old->subport, old->pipe);
	b->n_subs--;
	bng_rec_retire(b, old);
	return 0;
}
