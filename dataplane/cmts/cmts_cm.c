/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cable modems, their BPI+ keys, service flows, classifiers, and the SG's
 * filter rules: the one business function of each operation, called by the
 * config loader and the control socket alike.  Control thread only.
 *
 * Add/replace of a CM, in the order a reader tolerates:
 *
 *   validate   id, MAC, bonding group, filter groups, SAID, SIDs and CPE
 *              addresses free or already this CM's; a new key gets its
 *              sessions                              (nothing published yet)
 *   publish    cms[id] = new record (release store)
 *   add        new CPE addresses -> id (rte_hash), new SIDs -> id
 *   remove     addresses and SIDs the new record no longer has
 *   retire     the old record to the RCU defer queue; keys no record uses
 *              any more are destroyed once the downstream workers have
 *              dequeued every crypto operation enqueued before the change
 *              (cmts_crypto.c: operations stay in the device across bursts)
 *
 * A batch (cm-add-bulk, config loading) rebuilds the filter/classifier
 * ACL once at its end.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "ep_docsis.h"
#include "ep_rcu.h"
#include "qos/ep_qos.h"
#include "cmts.h"
#include "cmts_worker.h"

/* ---- text ---- */

static int
parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	v = strtoull(s, &end, 0);
	if (*end != '\0' || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
parse_hex16(const char *s, uint8_t out[16])
{
	if (s == NULL || strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		out[i] = (uint8_t)b;
	}
	return 0;
}

/* Split "k=v k=v" and call @p fn for each pair. */
static int
each_kv(const char *spec, int (*fn)(void *, const char *, const char *, struct ep_err *),
	void *arg, struct ep_err *err)
{
	char buf[1024], *save = NULL;

	if (spec == NULL)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		char *eq = strchr(t, '=');

		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", t);
		*eq = '\0';
		if (fn(arg, t, eq + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- CM requests ---- */

void
cmts_cm_req_init(struct cmts_cm_req *r)
{
	memset(r, 0, sizeof(*r));
	r->bg = -1;
	r->said = -1;
}

static int
parse_cpes(struct cmts_cm_req *r, const char *val, struct ep_err *err)
{
	char buf[512], *save = NULL;

	if (strlen(val) >= sizeof(buf))
		return ep_err_set(err, "cpe: too long");
	strcpy(buf, val);
	r->n_cpe = 0;
	for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		struct cmts_cpe *c = &r->cpe[r->n_cpe];
		char *at = strchr(t, '@');
		uint8_t plen;
		struct ep_err e2;
		int fam;

		if (r->n_cpe == CMTS_MAX_CPE)
			return ep_err_set(err, "cpe: more than %d addresses", CMTS_MAX_CPE);
		memset(c, 0, sizeof(*c));
		if (at != NULL) {
			*at = '\0';
			if (ep_parse_mac(at + 1, &c->mac) < 0 || rte_is_multicast_ether_addr(&c->mac))
				return ep_err_set(err, "cpe: '%s' is not a unicast MAC", at + 1);
			c->has_mac = true;
		}
		fam = ep_parse_prefix(t, c->addr, &plen, &e2);
		if (fam < 0 || plen != (fam == 4 ? 32 : 128))
			return ep_err_set(err, "cpe: '%s' is not an IPv4 or IPv6 address", t);
		c->family = (uint8_t)fam;
		r->n_cpe++;
	}
	return 0;
}

int
cmts_cm_req_set(struct cmts_cm_req *r, const char *key, const char *val, struct ep_err *err)
{
	uint32_t v;

	if (val == NULL)
		return ep_err_set(err, "%s: missing value", key);
	if (strcmp(key, "id") == 0) {
		if (parse_u32(val, 0xffff, &r->id) < 0 || r->id == 0)
			return ep_err_set(err, "id: '%s' is not 1-65535", val);
	} else if (strcmp(key, "mac") == 0) {
		if (ep_parse_mac(val, &r->mac) < 0 || rte_is_multicast_ether_addr(&r->mac) ||
		    rte_is_zero_ether_addr(&r->mac))
			return ep_err_set(err, "mac: '%s' is not a unicast MAC address", val);
		r->has_mac = true;
	} else if (strcmp(key, "cpe") == 0) {
		return parse_cpes(r, val, err);
	} else if (strcmp(key, "bg") == 0) {
		if (parse_u32(val, CMTS_MAX_BG - 1, &v) < 0)
			return ep_err_set(err, "bg: '%s' is not a bonding group 0-%d", val,
					  CMTS_MAX_BG - 1);
		r->bg = (int)v;
	} else if (strcmp(key, "fg") == 0) {
		char buf[32], *save = NULL;

		if (strlen(val) >= sizeof(buf))
			return ep_err_set(err, "fg: too long");
		strcpy(buf, val);
		r->n_fg = 0;
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (r->n_fg == CMTS_MAX_FG_PER_CM)
				return ep_err_set(err, "fg: more than %d filter groups",
						  CMTS_MAX_FG_PER_CM);
			if (parse_u32(t, CMTS_MAX_FG, &v) < 0 || v == 0)
				return ep_err_set(err, "fg: '%s' is not a filter group 1-%d", t,
						  CMTS_MAX_FG);
			r->fg[r->n_fg++] = (uint8_t)v;
		}
	} else if (strcmp(key, "said") == 0) {
		if (parse_u32(val, EP_DOCSIS_SAID_MAX, &v) < 0)
			return ep_err_set(err, "said: '%s' is not 0-%d", val, EP_DOCSIS_SAID_MAX);
		r->said = (int)v;
	} else if (strcmp(key, "dsid") == 0) {
		if (parse_u32(val, EP_DOCSIS_DSID_MAX, &r->dsid) < 0 || r->dsid == 0)
			return ep_err_set(err, "dsid: '%s' is not 1-%d", val, EP_DOCSIS_DSID_MAX);
	} else if (strcmp(key, "sid") == 0) {
		char buf[128], *save = NULL;

		if (strlen(val) >= sizeof(buf))
			return ep_err_set(err, "sid: too long");
		strcpy(buf, val);
		r->n_sid = 0;
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (r->n_sid == CMTS_MAX_SID)
				return ep_err_set(err, "sid: more than %d SIDs", CMTS_MAX_SID);
			/* 0 and 0x3fff are not unicast SIDs (MULPI). */
			if (parse_u32(t, CMTS_SID_SPACE - 2, &v) < 0 || v == 0)
				return ep_err_set(err, "sid: '%s' is not 1-%d", t, CMTS_SID_SPACE - 2);
			r->sid[r->n_sid++] = (uint16_t)v;
		}
	} else if (strcmp(key, "kseq") == 0) {
		if (parse_u32(val, 15, &v) < 0)
			return ep_err_set(err, "kseq: '%s' is not 0-15", val);
		r->kseq = (uint8_t)v;
	} else if (strcmp(key, "key") == 0) {
		if (parse_hex16(val, r->key) < 0)
			return ep_err_set(err, "key: expected 32 hex digits (AES-128)");
		r->has_key = true;
	} else if (strcmp(key, "iv") == 0) {
		if (parse_hex16(val, r->iv) < 0)
			return ep_err_set(err, "iv: expected 32 hex digits");
	} else if (strcmp(key, "bpi") == 0) {
		if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0)
			return ep_err_set(err, "bpi: '%s' is not on or off", val);
		r->bpi_off = strcmp(val, "off") == 0;
	} else {
		return ep_err_set(err, "unknown field '%s' (id, mac, cpe, bg, fg, said, dsid, sid, "
				  "kseq, key, iv, bpi)", key);
	}
	return 0;
}

static int
req_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	return cmts_cm_req_set(arg, k, v, err);
}

int
cmts_cm_req_parse(struct cmts_cm_req *r, const char *line, struct ep_err *err)
{
	cmts_cm_req_init(r);
	if (each_kv(line, req_kv, r, err) < 0)
		return -1;
	if (r->id == 0)
		return ep_err_set(err, "id: missing");
	return 0;
}

/* ---- tables ---- */

static void
addr_key(uint8_t k[16], int family, const void *a)
{
	if (family == 4) {
		/* IPv4-mapped (RFC 4291 2.5.5.2): one 16-byte key for both. */
		memset(k, 0, 10);
		k[10] = k[11] = 0xff;
		memcpy(k + 12, a, 4);
	} else {
		memcpy(k, a, 16);
	}
}

int64_t
cmts_cm_find_addr(const struct cmts_sg *sg, int family, const void *addr)
{
	uint8_t k[16];
	void *data;

	addr_key(k, family, addr);
	if (rte_hash_lookup_data(sg->addr, k, &data) < 0)
		return -1;
	return (int64_t)(uintptr_t)data;
}

const struct cmts_cm *
cmts_cm_get(const struct cmts_sg *sg, uint32_t id)
{
	return id >= 1 && id <= sg->p.max_cms ? sg->cms[id] : NULL;
}

static bool
cm_has_cpe(const struct cmts_cm *cm, const struct cmts_cpe *c)
{
	for (int i = 0; cm != NULL && i < cm->n_cpe; i++)
		if (cm->cpe[i].family == c->family && memcmp(cm->cpe[i].addr, c->addr, 16) == 0)
			return true;
	return false;
}

static bool
cm_has_sid(const struct cmts_cm *cm, uint16_t sid)
{
	for (int i = 0; cm != NULL && i < cm->n_sid; i++)
		if (cm->sid[i] == sid)
			return true;
	return false;
}

/* The header template of a record: everything but LEN, the priority bits
 * and the PSN, with its HCS (ep_docsis.h: the framing stage adds the rest
 * byte by byte). */
static void
cm_template(struct cmts_cm *cm)
{
	struct ep_docsis_pdu_spec s = {
		.bpi_type = cm->bpi ? EP_DOCSIS_EH_BP_DOWN : 0,
		.key_seq = cm->ds_kseq, .enc = cm->bpi, .said = cm->said,
		.ds_len = cm->bonded ? 5 : 3, .dsid = cm->dsid,
	};

	memset(cm->hdr_tpl, 0, sizeof(cm->hdr_tpl));
	cm->hdr_len = (uint8_t)ep_docsis_build(cm->hdr_tpl, sizeof(cm->hdr_tpl), &s, 0);
	cm->hdr_tpl[2] = cm->hdr_tpl[3] = 0;
	cm->tp_pos = (uint8_t)(4 + (cm->bpi ? 5 : 0) + 1);
	cm->tpl_hcs = ep_docsis_hcs(cm->hdr_tpl, (uint32_t)cm->hdr_len - 2);
}

/* The CM's classifiers in the order they are tried: rule priority
 * descending, ties to the lower index (MULPI's classifier rule priority). */
static int
cls_order(const struct cmts_cm *cm, uint8_t order[CMTS_MAX_CLS])
{
	int k = 0;

	for (int i = 0; i < CMTS_MAX_CLS; i++)
		if (cm->cls[i].in_use) {
			int j = k++;

			/* insertion by (prio desc, index asc) */
			while (j > 0 && cm->cls[order[j - 1]].prio < cm->cls[i].prio) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = (uint8_t)i;
		}
	return k;
}

static uint32_t
prefix_mask(uint8_t plen)
{
	return plen == 0 ? 0 : ~0u << (32 - RTE_MIN(plen, 32));
}

static uint32_t
word_of(const uint8_t *a)
{
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/*
 * One more lane of a 16-lane table (struct cmts_cls4) for IPv4 rule @p r,
 * with the ACL's field semantics (acl.c: protocol under a mask, address
 * prefixes, inclusive port and tos ranges); false when the table is full.
 * A rule for IPv6 only takes no lane (true: nothing to add).  An unused
 * lane matches nothing (valid), so its fields stay zero.
 */
static bool
cls4_lane(struct cmts_cls4 *t, const struct ep_acl_rule *r, uint8_t value)
{
	int n = __builtin_popcount(t->valid);

	if (r->family == 6)
		return true;
	if (n == CMTS_MAX_CLS)
		return false;
	t->dport_lo[n] = r->dport_lo;
	t->dport_hi[n] = r->dport_hi;
	t->sport_lo[n] = r->sport_lo;
	t->sport_hi[n] = r->sport_hi;
	t->proto_mask[n] = r->any_proto ? 0 : 0xff;
	t->proto[n] = r->proto & t->proto_mask[n];
	t->tos_lo[n] = r->tos_lo;
	t->tos_hi[n] = r->tos_hi;
	t->src_mask[n] = prefix_mask(r->src_plen);
	t->src[n] = word_of(r->src) & t->src_mask[n];
	t->dst_mask[n] = prefix_mask(r->dst_plen);
	t->dst[n] = word_of(r->dst) & t->dst_mask[n];
	t->value[n] = value;
	t->uses |= (r->sport_lo != 0 || r->sport_hi != UINT16_MAX ? CMTS_CLS4_SPORT : 0) |
		   (r->tos_lo != 0 || r->tos_hi != UINT8_MAX ? CMTS_CLS4_TOS : 0) |
		   (r->src_plen != 0 ? CMTS_CLS4_SRC : 0) |
		   (r->dst_plen != 0 ? CMTS_CLS4_DST : 0);
	t->valid |= (uint16_t)(1u << n);
	return true;
}

/*
 * The record's IPv4 classifiers for the filter stage's 16-lane compare
 * (struct cmts_cls4), in the classifier ACL's order: a CM has at most 16
 * classifiers, so they always fit.
 */
static void
cm_cls4(struct cmts_cm *cm)
{
	uint8_t order[CMTS_MAX_CLS];
	int k = cls_order(cm, order);

	memset(&cm->cls4, 0, sizeof(cm->cls4));
	for (int j = 0; j < k; j++) {
		const struct cmts_cls *c = &cm->cls[order[j]];

		cls4_lane(&cm->cls4, &c->m, (uint8_t)CMTS_CLS_VALUE(order[j], c->sf));
	}
}

/* The record's hot lines (struct cmts_cm): line 0 must stay one line,
 * line 1 too, or the downstream reads more than it counts on. */
static_assert(offsetof(struct cmts_cm, cpe4) == RTE_CACHE_LINE_SIZE, "cm line 0");
static_assert(offsetof(struct cmts_cm, cpe_mac_mask) < 2 * RTE_CACHE_LINE_SIZE, "cm line 1");
static_assert(sizeof(struct rte_meter_srtcm_profile) == 32, "two SF profiles a line");

/*
 * Everything a record's downstream lines hold, from its control-side
 * fields: called whenever a record is made or edited, before it is
 * published.
 */
static void
cm_derive(struct cmts_cm *cm)
{
	cm->ds_key = cm->bpi ? cm->key[cm->ds_kseq & 1] : NULL;
	/* A key object always holds its sessions (key_new fails otherwise),
	 * so ds_sess is NULL exactly when the downstream sends in clear. */
	cm->ds_sess = cm->ds_key != NULL ? cm->ds_key->sess_ds : NULL;
	if (cm->ds_key != NULL)
		memcpy(cm->ds_iv, cm->ds_key->iv, sizeof(cm->ds_iv));
	else
		memset(cm->ds_iv, 0, sizeof(cm->ds_iv));
	cm_template(cm);
	cm_cls4(cm);
	memset(cm->cpe4, 0, sizeof(cm->cpe4));
	memset(cm->cpe_mac, 0, sizeof(cm->cpe_mac));
	cm->cpe4_mask = cm->cpe_mac_mask = 0;
	for (int k = 0; k < cm->n_cpe; k++) {
		if (cm->cpe[k].family == 4) {
			memcpy(&cm->cpe4[k], cm->cpe[k].addr, 4);
			cm->cpe4_mask |= (uint8_t)(1u << k);
		}
		if (cm->cpe[k].has_mac) {
			cm->cpe_mac[k] = cm->cpe[k].mac;
			cm->cpe_mac_mask |= (uint8_t)(1u << k);
		}
	}
	cm->sf_in_use = cm->sf_shaped = 0;
	for (int s = 0; s < CMTS_MAX_SF; s++) {
		cm->sf_in_use |= (uint16_t)(cm->sf[s].in_use << s);
		cm->sf_shaped |= (uint16_t)(cm->sf[s].shaped << s);
		cm->sf_prio[s] = cm->sf[s].prio;
		cm->sf_prof[s] = cm->sf[s].prof;
	}
}

static void
sf_default(struct cmts_sf *sf)
{
	memset(sf, 0, sizeof(*sf));
	sf->in_use = true;
}

/*
 * Wait until every downstream worker of the SG has dequeued the crypto
 * operations it had enqueued when this was called (ipsec-mb completes in
 * order), so no operation in flight uses a key about to be destroyed.  The
 * caller has already passed a grace period: no new operation uses it.
 */
static void
ds_crypto_drain_wait(struct cmts_sg *sg)
{
	uint64_t snap[EP_MAX_WORKERS];
	uint64_t deadline = rte_get_tsc_cycles() + 2 * rte_get_tsc_hz();

	for (int i = 0; i < sg->n_ds; i++)
		snap[i] = __atomic_load_n(&sg->ds[i]->enq_total, __ATOMIC_ACQUIRE);
	for (int i = 0; i < sg->n_ds; i++) {
		while (__atomic_load_n(&sg->ds[i]->w->running, __ATOMIC_ACQUIRE) &&
		       __atomic_load_n(&sg->ds[i]->deq_total, __ATOMIC_ACQUIRE) < snap[i]) {
			if (rte_get_tsc_cycles() > deadline)
				return;
			rte_delay_us_sleep(50);
		}
	}
}

/* Destroy keys nobody references any more (after the waits above). */
static void
keys_retire(struct cmts_sg *sg, struct cmts_key **k, uint32_t n)
{
	if (n == 0)
		return;
	ep_rcu_synchronize(sg->e);
	ds_crypto_drain_wait(sg);
	for (uint32_t i = 0; i < n; i++) {
		cmts_key_destroy(sg->c, k[i]);
		rte_free(k[i]);
	}
}

static struct cmts_key *
key_new(struct cmts_sg *sg, uint8_t kseq, const uint8_t key[16], const uint8_t iv[16],
	struct ep_err *err)
{
	struct cmts_key *k = rte_zmalloc("cmts_key", sizeof(*k), 0);

	if (k == NULL)
		return ep_err_set(err, "out of memory for a key"), NULL;
	k->kseq = kseq;
	memcpy(k->key, key, 16);
	memcpy(k->iv, iv, 16);
	if (cmts_key_sessions(sg->c, k, err) < 0) {
		rte_free(k);
		return NULL;
	}
	return k;
}

/*
 * Publish @p rec as CM @p id in place of @p old: addresses, SIDs, record.
 * Cannot fail once the hash has room (checked by validation: entries are
 * sized for every CM's addresses twice).
 */
static int
cm_publish(struct cmts_sg *sg, struct cmts_cm *rec, const struct cmts_cm *old)
{
	uint32_t id = rec->id;

	ep_rcu_publish(&sg->cms[id], rec);
	for (int i = 0; i < rec->n_cpe; i++) {
		uint8_t k[16];

		if (cm_has_cpe(old, &rec->cpe[i]))
			continue;
		addr_key(k, rec->cpe[i].family, rec->cpe[i].addr);
		if (rte_hash_add_key_data(sg->addr, k, (void *)(uintptr_t)id) < 0)
			return -1;
	}
	for (int i = 0; old != NULL && i < old->n_cpe; i++) {
		uint8_t k[16];

		if (cm_has_cpe(rec, &old->cpe[i]))
			continue;
		addr_key(k, old->cpe[i].family, old->cpe[i].addr);
		rte_hash_del_key(sg->addr, k);
	}
	for (int i = 0; i < rec->n_sid; i++)
		__atomic_store_n(&sg->sid_cm[rec->sid[i]], (uint16_t)id, __ATOMIC_RELEASE);
	for (int i = 0; old != NULL && i < old->n_sid; i++)
		if (!cm_has_sid(rec, old->sid[i]))
			__atomic_store_n(&sg->sid_cm[old->sid[i]], 0, __ATOMIC_RELEASE);
	return 0;
}

static uint32_t
addr_tab_slots(uint32_t n)
{
	return rte_align32pow2(RTE_MAX(16u, n + n / 2 + 1));
}

int
cmts_addr_tab_publish(struct cmts_sg *sg)
{
	struct cmts_addr_tab *t, *old = sg->addr_tab;
	uint32_t n4 = 0, n6 = 0, s4, s6;
	size_t hdr = RTE_CACHE_LINE_ROUNDUP(sizeof(*t));

	for (uint32_t id = 1; id <= sg->p.max_cms; id++)
		for (int i = 0; sg->cms[id] != NULL && i < sg->cms[id]->n_cpe; i++) {
			n4 += sg->cms[id]->cpe[i].family == 4;
			n6 += sg->cms[id]->cpe[i].family == 6;
		}
	s4 = addr_tab_slots(n4);
	s6 = addr_tab_slots(n6);
	t = rte_zmalloc("cmts_addr_tab", hdr + sizeof(uint64_t) * s4 + sizeof(t->s6[0]) * s6,
			RTE_CACHE_LINE_SIZE);
	if (t != NULL) {
		t->mask4 = s4 - 1;
		t->mask6 = s6 - 1;
		t->s4 = (uint64_t *)((uint8_t *)t + hdr);
		t->s6 = (struct cmts_addr6_slot *)(t->s4 + s4);
		for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
			const struct cmts_cm *cm = sg->cms[id];

			for (int i = 0; cm != NULL && i < cm->n_cpe; i++) {
				const struct cmts_cpe *c = &cm->cpe[i];
				uint32_t h;

				if (c->family == 4) {
					uint32_t a = word_of(c->addr);

					for (h = cmts_addr4_home(t, a); t->s4[h] != 0; h = (h + 1) & t->mask4)
						;
					t->s4[h] = (uint64_t)a << 32 | id;
				} else {
					for (h = cmts_addr6_home(t, c->addr); t->s6[h].id != 0;
					     h = (h + 1) & t->mask6)
						;
					memcpy(t->s6[h].a, c->addr, 16);
					t->s6[h].id = id;
				}
			}
		}
	}
	ep_rcu_publish(&sg->addr_tab, t);
	cmts_defer_free(sg, old);
	return t != NULL ? 0 : -1;
}

/* Validate @p r against the tables; fill @p rec (a copy of the current
 * record's SFs, classifiers and keys when replacing). */
static int
cm_build(struct cmts_sg *sg, const struct cmts_cm_req *r, struct cmts_cm *rec,
	 struct cmts_key **new_key, struct ep_err *err)
{
	const struct cmts_cm *old;

	*new_key = NULL;
	if (r->id == 0 || r->id > sg->p.max_cms)
		return ep_err_set(err, "id: %u is outside 1..max_cms (%u)", r->id, sg->p.max_cms);
	if (r->id > 0xffff)
		return ep_err_set(err, "id: above 65535");
	old = sg->cms[r->id];
	if (!r->has_mac)
		return ep_err_set(err, "mac: missing");
	if (r->bg < 0 || !sg->bg[r->bg].in_use)
		return ep_err_set(err, "bg: %s", r->bg < 0 ? "missing" :
				  "no such bonding group in this service group");
	for (int i = 0; i < r->n_cpe; i++) {
		int64_t owner = cmts_cm_find_addr(sg, r->cpe[i].family, r->cpe[i].addr);
		char a[INET6_ADDRSTRLEN];

		if (owner >= 0 && owner != r->id) {
			inet_ntop(r->cpe[i].family == 4 ? AF_INET : AF_INET6, r->cpe[i].addr, a,
				  sizeof(a));
			return ep_err_set(err, "cpe: %s belongs to CM %" PRId64, a, owner);
		}
		for (int j = 0; j < i; j++)
			if (r->cpe[j].family == r->cpe[i].family &&
			    memcmp(r->cpe[j].addr, r->cpe[i].addr, 16) == 0)
				return ep_err_set(err, "cpe: an address is listed twice");
	}
	for (int i = 0; i < r->n_sid; i++) {
		uint16_t owner = sg->sid_cm[r->sid[i]];

		if (owner != 0 && owner != r->id)
			return ep_err_set(err, "sid: %u belongs to CM %u", r->sid[i], owner);
	}
	if (!r->bpi_off && r->has_key && r->said < 0)
		return ep_err_set(err, "said: a key needs the CM's SAID");
	if (!r->bpi_off && r->said >= 0 && !r->has_key && (old == NULL || !old->bpi))
		return ep_err_set(err, "key: BPI+ (said=) needs a key (or bpi=off)");

	memset(rec, 0, sizeof(*rec));
	if (old != NULL) {
		memcpy(rec->sf, old->sf, sizeof(rec->sf));
		memcpy(rec->cls, old->cls, sizeof(rec->cls));
		rec->key[0] = old->key[0];
		rec->key[1] = old->key[1];
		rec->ds_kseq = old->ds_kseq;
		rec->bpi = old->bpi;
		rec->said = old->said;
		rec->gen = old->gen;
	} else {
		sf_default(&rec->sf[0]);
		rec->gen = ++sg->gen;
	}
	rec->id = r->id;
	rec->mac = r->mac;
	rec->bg = (uint8_t)r->bg;
	rec->bonded = sg->bg[r->bg].n_ch > 1;
	rec->n_cpe = r->n_cpe;
	memcpy(rec->cpe, r->cpe, sizeof(rec->cpe));
	memcpy(rec->fg, r->fg, sizeof(rec->fg));
	rec->n_sid = r->n_sid;
	memcpy(rec->sid, r->sid, sizeof(rec->sid));
	rec->dsid = r->dsid != 0 ? r->dsid : r->id;
	if (r->bpi_off) {
		rec->bpi = false;
		rec->key[0] = rec->key[1] = NULL;
	} else if (r->said >= 0) {
		rec->said = (uint16_t)r->said;
		rec->bpi = true;
	}
	if (r->has_key && !r->bpi_off) {
		*new_key = key_new(sg, r->kseq, r->key, r->iv, err);
		if (*new_key == NULL)
			return -1;
		rec->key[r->kseq & 1] = *new_key;
		rec->ds_kseq = r->kseq;
	}
	cm_derive(rec);
	return 0;
}

/* Keys of @p old that @p rec does not reference. */
static uint32_t
keys_dropped(const struct cmts_cm *old, const struct cmts_cm *rec, struct cmts_key **out)
{
	uint32_t n = 0;

	for (int k = 0; old != NULL && k < 2; k++)
		if (old->key[k] != NULL && old->key[k] != rec->key[0] && old->key[k] != rec->key[1])
			out[n++] = (struct cmts_key *)(uintptr_t)old->key[k];
	return n;
}

int
cmts_cm_add_bulk(struct cmts_sg *sg, const struct cmts_cm_req *r, uint32_t n,
		 uint32_t *failed, struct ep_err *err)
{
	struct cmts_key **retire = malloc(sizeof(*retire) * (2 * (size_t)n + 1));
	uint32_t n_retire = 0;
	int rc = 0;

	if (retire == NULL)
		return ep_err_set(err, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const struct cmts_cm *old = r[i].id <= sg->p.max_cms ? sg->cms[r[i].id] : NULL;
		struct cmts_cm *rec = cmts_rec_alloc(sg);
		struct cmts_key *nk;

		if (failed != NULL)
			*failed = i;
		if (rec == NULL) {
			rc = ep_err_set(err, "out of CM records");
			break;
		}
		if (cm_build(sg, &r[i], rec, &nk, err) < 0) {
			sg->rec_free[sg->n_rec_free++] = rec;
			rc = -1;
			break;
		}
		if (cm_publish(sg, rec, old) < 0) {
			/* The hash is sized for every CM's addresses twice:
			 * this means max_cms is exceeded in addresses. */
			rc = ep_err_set(err, "address table full");
			break;
		}
		n_retire += keys_dropped(old, rec, retire + n_retire);
		if (old != NULL)
			cmts_defer_record(sg, (struct cmts_cm *)(uintptr_t)old);
		else
			sg->n_cms++;
	}
	if (n != 0)
		cmts_addr_tab_publish(sg);      /* NULL on failure: the lookup takes the rte_hash */
	if (n != 0 && cmts_cls_commit(sg, NULL, rc < 0 ? NULL : err) < 0 && rc == 0)
		rc = -1;
	keys_retire(sg, retire, n_retire);
	free(retire);
	return rc;
}

int
cmts_cm_del(struct cmts_sg *sg, uint32_t id, struct ep_err *err)
{
	const struct cmts_cm *old = cmts_cm_get(sg, id);
	struct cmts_key *retire[2];
	uint32_t n = 0;

	if (old == NULL)
		return ep_err_set(err, "no CM %u", id);
	ep_rcu_publish(&sg->cms[id], NULL);
	for (int i = 0; i < old->n_cpe; i++) {
		uint8_t k[16];

		addr_key(k, old->cpe[i].family, old->cpe[i].addr);
		rte_hash_del_key(sg->addr, k);
	}
	for (int i = 0; i < old->n_sid; i++)
		if (sg->sid_cm[old->sid[i]] == id)
			__atomic_store_n(&sg->sid_cm[old->sid[i]], 0, __ATOMIC_RELEASE);
	for (int k = 0; k < 2; k++)
		if (old->key[k] != NULL)
			retire[n++] = (struct cmts_key *)(uintptr_t)old->key[k];
	cmts_defer_record(sg, (struct cmts_cm *)(uintptr_t)old);
	sg->n_cms--;
	cmts_addr_tab_publish(sg);
	cmts_cls_commit(sg, NULL, err);
	keys_retire(sg, retire, n);
	return 0;
}

/* Replace CM @p id by a copy that @p edit changes: keys, SFs, classifiers. */
static int
cm_edit(struct cmts_sg *sg, uint32_t id,
	int (*edit)(struct cmts_sg *, struct cmts_cm *, void *, struct ep_err *), void *arg,
	bool rebuild, struct ep_err *err)
{
	const struct cmts_cm *old = cmts_cm_get(sg, id);
	struct cmts_key *retire[2];
	struct cmts_cm *rec;
	uint32_t n;

	if (old == NULL)
		return ep_err_set(err, "no CM %u", id);
	rec = cmts_rec_alloc(sg);
	if (rec == NULL)
		return ep_err_set(err, "out of CM records");
	memcpy(rec, old, sizeof(*rec));
	if (edit(sg, rec, arg, err) < 0) {
		sg->rec_free[sg->n_rec_free++] = rec;
		return -1;
	}
	cm_derive(rec);
	/* The classifiers first, with the new record in place: a failed ACL
	 * build leaves both as they were.  Until the record is published a
	 * frame may meet a classifier whose SF the old record lacks: the
	 * classify stage sends it to SF 0. */
	if (rebuild && cmts_cls_commit(sg, rec, err) < 0) {
		sg->rec_free[sg->n_rec_free++] = rec;
		return -1;
	}
	ep_rcu_publish(&sg->cms[id], rec);
	n = keys_dropped(old, rec, retire);
	cmts_defer_record(sg, (struct cmts_cm *)(uintptr_t)old);
	keys_retire(sg, retire, n);
	return 0;
}

struct key_arg { uint8_t kseq; const uint8_t *key, *iv; };

static int
edit_key_set(struct cmts_sg *sg, struct cmts_cm *rec, void *a, struct ep_err *err)
{
	struct key_arg *k = a;
	struct cmts_key *nk;

	if (!rec->bpi)
		return ep_err_set(err, "CM %u has BPI+ off (no SAID)", rec->id);
	/* The downstream encrypts with slot ds_kseq & 1: a key of the same
	 * parity would replace it under the CM's feet.  A roll installs the
	 * next sequence number (the other slot), then activates it. */
	if (rec->ds_key != NULL && (k->kseq & 1) == (rec->ds_kseq & 1))
		return ep_err_set(err, "key sequence %u would replace %u, which the downstream "
				  "uses: install the next one (other parity), then activate it",
				  k->kseq, rec->ds_kseq);
	nk = key_new(sg, k->kseq, k->key, k->iv, err);
	if (nk == NULL)
		return -1;
	rec->key[k->kseq & 1] = nk;
	return 0;
}

int
cmts_key_set(struct cmts_sg *sg, uint32_t id, uint8_t kseq, const uint8_t key[16],
	     const uint8_t iv[16], struct ep_err *err)
{
	struct key_arg a = { kseq, key, iv };

	if (kseq > 15)
		return ep_err_set(err, "kseq: %u is not 0-15", kseq);
	return cm_edit(sg, id, edit_key_set, &a, false, err);
}

static int
edit_key_activate(struct cmts_sg *sg, struct cmts_cm *rec, void *a, struct ep_err *err)
{
	uint8_t kseq = *(uint8_t *)a;
	const struct cmts_key *k = rec->key[kseq & 1];

	if (!rec->bpi)
		return ep_err_set(err, "CM %u has BPI+ off", rec->id);
	if (k == NULL || k->kseq != kseq)
		return ep_err_set(err, "CM %u has no key with sequence %u installed", rec->id, kseq);
	rec->ds_kseq = kseq;
	return 0;
}

int
cmts_key_activate(struct cmts_sg *sg, uint32_t id, uint8_t kseq, struct ep_err *err)
{
	return cm_edit(sg, id, edit_key_activate, &kseq, false, err);
}

/* ---- service flows ---- */

struct sf_arg { uint8_t sf; const char *spec; bool del; };

static int
sf_kv(void *a, const char *k, const char *v, struct ep_err *err)
{
	struct cmts_sf *sf = a;
	uint32_t x;

	if (strcmp(k, "rate") == 0) {
		/* The QoS module's rate text: bit/s, k, M, G = 10^3, 10^6, 10^9. */
		if (ep_qos_parse_rate(v, &sf->rate_bps) < 0 || sf->rate_bps > 1000000000000ull)
			return ep_err_set(err, "rate: '%s' is not a rate in bit/s (k, M, G) up to "
					  "1000G", v);
	} else if (strcmp(k, "burst") == 0) {
		if (parse_u32(v, 1u << 24, &x) < 0 || x < 1522)
			return ep_err_set(err, "burst: '%s' is not 1522..16M bytes (MULPI: at least "
					  "1522)", v);
		sf->burst = x;
	} else if (strcmp(k, "prio") == 0) {
		if (parse_u32(v, 7, &x) < 0)
			return ep_err_set(err, "prio: '%s' is not a traffic priority 0-7", v);
		sf->prio = (uint8_t)x;
	} else {
		return ep_err_set(err, "unknown SF field '%s' (rate, burst, prio)", k);
	}
	return 0;
}

static int
edit_sf(struct cmts_sg *sg, struct cmts_cm *rec, void *a, struct ep_err *err)
{
	struct sf_arg *s = a;
	struct cmts_sf sf;

	if (s->del) {
		if (s->sf == 0)
			return ep_err_set(err, "SF 0 (the default flow) cannot be deleted");
		if (!rec->sf[s->sf].in_use)
			return ep_err_set(err, "CM %u has no SF %u", rec->id, s->sf);
		memset(&rec->sf[s->sf], 0, sizeof(sf));
		return 0;
	}
	sf_default(&sf);
	sf.burst = 3044;                /* MULPI's default max traffic burst */
	if (each_kv(s->spec, sf_kv, &sf, err) < 0)
		return -1;
	sf.shaped = sf.rate_bps != 0;
	if (sf.shaped && rte_meter_srtcm_profile_config(&sf.prof, &(struct rte_meter_srtcm_params){
			.cir = sf.rate_bps / 8, .cbs = sf.burst, .ebs = 0 }) != 0)
		return ep_err_set(err, "rate %" PRIu64 " / burst %u rejected by rte_meter",
				  sf.rate_bps, sf.burst);
	rec->sf[s->sf] = sf;
	return 0;
}

/* An SF change needs no ACL rebuild: classifiers name SFs by index, and
 * the classify stage falls back to SF 0 for an index not in use. */
static int
sf_op(struct cmts_sg *sg, uint32_t id, uint8_t sf, const char *spec, bool del,
      struct ep_err *err)
{
	struct sf_arg a = { sf, spec, del };

	if (sf >= CMTS_MAX_SF)
		return ep_err_set(err, "sf: %u is not 0-%d", sf, CMTS_MAX_SF - 1);
	return cm_edit(sg, id, edit_sf, &a, false, err);
}

int
cmts_sf_set(struct cmts_sg *sg, uint32_t id, uint8_t sf, const char *spec, struct ep_err *err)
{
	return sf_op(sg, id, sf, spec, false, err);
}

int
cmts_sf_del(struct cmts_sg *sg, uint32_t id, uint8_t sf, struct ep_err *err)
{
	return sf_op(sg, id, sf, NULL, true, err);
}

/* A match field of a filter or classifier line: the ACL module's parser;
 * `value` (and `set`) are the SG's to fill (order, CM, SF). */
static int
match_kv(struct ep_acl_rule *m, const char *k, const char *v, struct ep_err *err)
{
	if (strcmp(k, "value") == 0)
		return ep_err_set(err, "unknown match field 'value' (proto, src, dst, sport, "
				  "dport, tos)");
	return ep_acl_match_set(m, k, v, false, err);
}

/* ---- classifiers ---- */

struct cls_arg { uint8_t idx; const char *spec; bool del; };

static int
cls_kv(void *a, const char *k, const char *v, struct ep_err *err)
{
	struct cmts_cls *c = a;
	uint32_t x;

	if (strcmp(k, "sf") == 0) {
		if (parse_u32(v, CMTS_MAX_SF - 1, &x) < 0 || x == 0)
			return ep_err_set(err, "sf: '%s' is not 1-%d", v, CMTS_MAX_SF - 1);
		c->sf = (uint8_t)x;
	} else if (strcmp(k, "prio") == 0) {
		if (parse_u32(v, 255, &x) < 0)
			return ep_err_set(err, "prio: '%s' is not 0-255", v);
		c->prio = (uint8_t)x;
	} else {
		/* The match fields: the ACL module's parser, key=value. */
		return match_kv(&c->m, k, v, err);
	}
	return 0;
}

static int
edit_cls(struct cmts_sg *sg, struct cmts_cm *rec, void *a, struct ep_err *err)
{
	struct cls_arg *s = a;
	struct cmts_cls c;

	if (s->del) {
		if (!rec->cls[s->idx].in_use)
			return ep_err_set(err, "CM %u has no classifier %u", rec->id, s->idx);
		memset(&rec->cls[s->idx], 0, sizeof(c));
		return 0;
	}
	memset(&c, 0, sizeof(c));
	ep_acl_rule_init(&c.m);
	if (each_kv(s->spec, cls_kv, &c, err) < 0)
		return -1;
	if (c.sf == 0)
		return ep_err_set(err, "sf: missing (the SF 1-8 the classifier selects)");
	if (!rec->sf[c.sf].in_use)
		return ep_err_set(err, "sf: CM %u has no SF %u", rec->id, c.sf);
	c.in_use = true;
	rec->cls[s->idx] = c;
	return 0;
}

static int
cls_op(struct cmts_sg *sg, uint32_t id, uint8_t idx, const char *spec, bool del, bool rebuild,
       struct ep_err *err)
{
	struct cls_arg a = { idx, spec, del };

	if (idx >= CMTS_MAX_CLS)
		return ep_err_set(err, "cls: %u is not 0-%d", idx, CMTS_MAX_CLS - 1);
	return cm_edit(sg, id, edit_cls, &a, rebuild, err);
}

int
cmts_cls_set(struct cmts_sg *sg, uint32_t id, uint8_t cls, const char *spec, struct ep_err *err)
{
	return cls_op(sg, id, cls, spec, false, true, err);
}

int
cmts_cls_set_nobuild(struct cmts_sg *sg, uint32_t id, uint8_t cls, const char *spec,
		     struct ep_err *err)
{
	return cls_op(sg, id, cls, spec, false, false, err);
}

int
cmts_cls_del(struct cmts_sg *sg, uint32_t id, uint8_t cls, struct ep_err *err)
{
	return cls_op(sg, id, cls, NULL, true, true, err);
}

/* ---- filter rules ---- */

static int
filter_kv(void *a, const char *k, const char *v, struct ep_err *err)
{
	return match_kv(a, k, v, err);
}

/* Position of (group, order) in the sorted list, and whether it is there. */
static uint32_t
filter_find(const struct cmts_sg *sg, uint16_t group, uint32_t order, bool *found)
{
	uint32_t i = 0;

	while (i < sg->n_filters && (sg->filters[i].set < group ||
	       (sg->filters[i].set == group && sg->filters[i].value < order)))
		i++;
	*found = i < sg->n_filters && sg->filters[i].set == group && sg->filters[i].value == order;
	return i;
}

/* Publish @p list (n rules) as the filter ACL and keep it as the SG's list;
 * on error nothing changes and @p list is freed. */
/*
 * Commit @p list (n rules, sorted by group and order) as the filter ACL
 * and publish its IPv4 lane tables (struct cmts_fg4) beside it: NULL when
 * a group has more IPv4 rules than a table has lanes.  The two are
 * published one after the other, so a burst between them may see the old
 * rules in one and the new in the other: each is a whole rule set.
 */
static int
filters_publish(struct cmts_sg *sg, const struct ep_acl_rule *list, uint32_t n,
		struct ep_err *err)
{
	struct cmts_fg4 *t = rte_zmalloc("cmts_fg4", sizeof(*t), RTE_CACHE_LINE_SIZE), *old;

	for (uint32_t i = 0; t != NULL && i < n; i++)
		if (list[i].set > CMTS_MAX_FG ||
		    !cls4_lane(&t->g[list[i].set], &list[i],
			       list[i].deny ? CMTS_FG4_DENY : CMTS_FG4_PERMIT)) {
			rte_free(t);
			t = NULL;
		}
	if (ep_acl_commit(sg->filter_acl, list, n, sg->filter_acl->default_deny, err) < 0) {
		rte_free(t);
		return -1;
	}
	old = sg->fg4;
	ep_rcu_publish(&sg->fg4, t);
	if (old != NULL) {
		ep_rcu_synchronize(sg->e);
		rte_free(old);
	}
	return 0;
}

static int
filters_commit(struct cmts_sg *sg, struct ep_acl_rule *list, uint32_t n, uint32_t cap,
	       bool publish, struct ep_err *err)
{
	if (publish && filters_publish(sg, list, n, err) < 0) {
		rte_free(list);
		return -1;
	}
	rte_free(sg->filters);
	sg->filters = list;
	sg->n_filters = n;
	sg->cap_filters = cap;
	return 0;
}

int
cmts_filter_add(struct cmts_sg *sg, const char *text, bool rebuild, struct ep_err *err)
{
	char grp[16], ord[16], act[16];
	struct ep_acl_rule f, *list;
	uint32_t g, o, at, n, cap;
	bool found;
	int used = 0;

	ep_acl_rule_init(&f);
	if (text == NULL || sscanf(text, "%15s %15s %15s %n", grp, ord, act, &used) != 3)
		return ep_err_set(err, "expected '<group> <order> permit|deny [match ...]'");
	if (parse_u32(grp, CMTS_MAX_FG, &g) < 0 || g == 0)
		return ep_err_set(err, "group: '%s' is not 1-%d", grp, CMTS_MAX_FG);
	if (parse_u32(ord, 0xffff, &o) < 0)
		return ep_err_set(err, "order: '%s' is not 0-65535", ord);
	if (ep_acl_action_parse(act, &f.deny) < 0)
		return ep_err_set(err, "action: '%s' is not permit or deny", act);
	if (each_kv(text + used, filter_kv, &f, err) < 0)
		return -1;
	/* The list is sorted by group and order: a group is an ordered list
	 * (lower order first), the ACL's first match within a set. */
	f.set = (uint16_t)g;
	f.value = o;
	f.has_value = true;
	at = filter_find(sg, f.set, o, &found);
	n = sg->n_filters + !found;
	cap = RTE_MAX(n, 64u);
	list = rte_malloc("cmts_filters", sizeof(*list) * cap, 0);
	if (list == NULL)
		return ep_err_set(err, "out of memory for filter rules");
	if (sg->n_filters != 0)
		memcpy(list, sg->filters, sizeof(*list) * at);
	list[at] = f;
	if (sg->n_filters > at + found)
		memcpy(&list[at + 1], &sg->filters[at + found],
		       sizeof(*list) * (sg->n_filters - at - found));
	return filters_commit(sg, list, n, cap, rebuild, err);
}

int
cmts_filter_del(struct cmts_sg *sg, uint8_t group, uint16_t order, struct ep_err *err)
{
	bool found;
	uint32_t at = filter_find(sg, group, order, &found), cap = RTE_MAX(sg->n_filters, 64u);
	struct ep_acl_rule *list;

	if (!found)
		return ep_err_set(err, "no filter rule %u in group %u", order, group);
	list = rte_malloc("cmts_filters", sizeof(*list) * cap, 0);
	if (list == NULL)
		return ep_err_set(err, "out of memory for filter rules");
	memcpy(list, sg->filters, sizeof(*list) * at);
	memcpy(&list[at], &sg->filters[at + 1], sizeof(*list) * (sg->n_filters - at - 1));
	return filters_commit(sg, list, sg->n_filters - 1, cap, true, err);
}

/*
 * The classifier ACL's list: every CM's classifiers (@p rec in place of
 * the published record of its id), set = CM id, value = index and SF.
 * Within a CM higher rule priority first, ties to the lower index (MULPI's
 * classifier rule priority); lists of different CMs never compete.
 */
int
cmts_cls_commit(struct cmts_sg *sg, const struct cmts_cm *rec, struct ep_err *err)
{
	struct ep_acl_rule *list = NULL;
	uint32_t n = 0;
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t id = 1; id <= sg->p.max_cms; id++) {
			const struct cmts_cm *cm = rec != NULL && rec->id == id ? rec : sg->cms[id];
			uint8_t order[CMTS_MAX_CLS];
			int k = cm != NULL ? cls_order(cm, order) : 0;

			for (int j = 0; j < k; j++, n++) {
				const struct cmts_cls *c = &cm->cls[order[j]];

				if (list == NULL)
					continue;
				list[n] = c->m;
				list[n].deny = false;
				list[n].set = (uint16_t)id;
				list[n].value = CMTS_CLS_VALUE(order[j], c->sf);
				list[n].has_value = true;
			}
		}
		if (pass == 0) {
			list = malloc(sizeof(*list) * (n ? n : 1));
			if (list == NULL)
				return ep_err_set(err, "out of memory for classifiers");
			n = 0;
		}
	}
	rc = ep_acl_commit(sg->cls_acl, list, n, false, err);
	free(list);
	return rc;
}

int
cmts_acl_rebuild(struct cmts_sg *sg, struct ep_err *err)
{
	if (filters_publish(sg, sg->filters, sg->n_filters, err) < 0)
		return -1;
	return cmts_cls_commit(sg, NULL, err);
}
