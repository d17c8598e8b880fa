/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket commands of the vCMTS.  Every command takes an optional
 * sg=<name> (required when the process has several service groups).  Each
 * handler turns its JSON fields into the text the config file uses and
 * calls the one business function of cmts_cm.c, so both paths accept and
 * reject exactly the same input.
 *
 *   cm-add           id= mac= [cpe=] bg= [fg=] [said= kseq= key= iv=] [sid=] [dsid=] [bpi=]
 *   cm-add-bulk      cms=[{cm-add fields}, ...]
 *   cm-del           id=
 *   cm-get           id=     the record, its SFs, classifiers and counters
 *   cm-list          [limit=] [offset=]
 *   cm-key           id= kseq= key= iv=     install the next TEK
 *   cm-key-activate  id= kseq=              the downstream switches to it
 *   sf-set           cm= sf= [rate=] [burst=] [prio=]
 *   sf-del           cm= sf=
 *   cls-set          cm= cls= sf= [prio=] [proto= src= dst= sport= dport= tos=]
 *   cls-del          cm= cls=
 *   filter-add       rule="<group> <order> permit|deny [match...]"
 *   filter-del       group= order=
 *   filter-list
 *   cmts-stats       the SG's counters, per channel and per upstream channel
 *
 * Counters are written by the workers without atomics and read here with
 * relaxed loads: a reading may be a burst old, never torn (64-bit words).
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "ep_ctl.h"
#include "cmts.h"
#include "cmts_worker.h"

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static struct cmts_sg *
sg_of(json_t *req, struct ep_err *err)
{
	json_t *v = json_object_get(req, "sg");
	struct cmts_sg *sg;

	if (cmts_global == NULL)
		return ep_err_set(err, "no cmts pipeline is configured"), NULL;
	if (v != NULL && !json_is_string(v))
		return ep_err_set(err, "sg: must be a string"), NULL;
	sg = cmts_sg_find(cmts_global, v ? json_string_value(v) : NULL);
	if (sg == NULL)
		ep_err_set(err, v ? "sg: no service group '%s'" :
			   "sg: required (%s service groups)", v ? json_string_value(v) : "several");
	return sg;
}

/* A field as text; NULL with err when missing and @p required. */
static const char *
field(json_t *req, const char *key, char *buf, size_t n, bool required, struct ep_err *err)
{
	json_t *v = json_object_get(req, key);

	if (v == NULL) {
		if (required)
			ep_err_set(err, "%s: missing", key);
		return NULL;
	}
	return ep_ctl_field_text(key, v, buf, n, err) < 0 ? NULL : buf;
}

static int
req_from_json(json_t *obj, struct cmts_cm_req *r, struct ep_err *err)
{
	const char *key;
	json_t *v;

	cmts_cm_req_init(r);
	if (!json_is_object(obj))
		return ep_err_set(err, "a CM must be an object");
	json_object_foreach(obj, key, v) {
		char text[512];

		if (strcmp(key, "cmd") == 0 || strcmp(key, "sg") == 0)
			continue;
		if (ep_ctl_field_text(key, v, text, sizeof(text), err) < 0)
			return -1;
		if (cmts_cm_req_set(r, key, text, err) < 0)
			return -1;
	}
	if (r->id == 0)
		return ep_err_set(err, "id: missing");
	return 0;
}

static int
ctl_cm_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	struct cmts_cm_req r;

	if (sg == NULL || req_from_json(req, &r, err) < 0)
		return -1;
	return cmts_cm_add_bulk(sg, &r, 1, NULL, err);
}

static int
ctl_cm_add_bulk(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	json_t *arr = json_object_get(req, "cms"), *o;
	struct cmts_cm_req *r;
	uint32_t failed = 0;
	size_t i, n;
	int rc = 0;

	if (sg == NULL)
		return -1;
	if (!json_is_array(arr))
		return ep_err_set(err, "cms: must be a list of cm-add objects");
	n = json_array_size(arr);
	r = malloc(sizeof(*r) * (n ? n : 1));
	if (r == NULL)
		return ep_err_set(err, "out of memory");
	json_array_foreach(arr, i, o) {
		if (req_from_json(o, &r[i], err) < 0) {
			char inner[sizeof(err->msg)];

			snprintf(inner, sizeof(inner), "%s", err->msg);
			ep_err_set(err, "cms[%zu]: %s (none added)", i, inner);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && cmts_cm_add_bulk(sg, r, (uint32_t)n, &failed, err) < 0) {
		char inner[sizeof(err->msg)];

		snprintf(inner, sizeof(inner), "%s", err->msg);
		ep_err_set(err, "cms[%u]: %s (the ones before it are in)", failed, inner);
		rc = -1;
	}
	free(r);
	if (rc == 0)
		json_object_set_new(res, "added", json_integer((json_int_t)n));
	return rc;
}

static int
id_field(json_t *req, const char *key, uint32_t max, uint32_t *out, struct ep_err *err)
{
	uint64_t v;

	if (json_object_get(req, key) == NULL)
		return ep_err_set(err, "%s: missing", key);
	if (ep_ctl_u64(req, key, 0, max, &v, err) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
ctl_cm_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0;

	if (sg == NULL || id_field(req, "id", 0xffff, &id, err) < 0)
		return -1;
	return cmts_cm_del(sg, id, err);
}

static json_t *
match_json(const struct ep_acl_rule *m)
{
	json_t *o = json_object();
	char a[INET6_ADDRSTRLEN], t[INET6_ADDRSTRLEN + 8];
	int af = m->family == 6 ? AF_INET6 : AF_INET;

	if (!m->any_proto)
		json_object_set_new(o, "proto", json_integer(m->proto));
	if (m->src_plen != 0) {
		inet_ntop(af, m->src, a, sizeof(a));
		snprintf(t, sizeof(t), "%s/%u", a, m->src_plen);
		json_object_set_new(o, "src", json_string(t));
	}
	if (m->dst_plen != 0) {
		inet_ntop(af, m->dst, a, sizeof(a));
		snprintf(t, sizeof(t), "%s/%u", a, m->dst_plen);
		json_object_set_new(o, "dst", json_string(t));
	}
	if (m->sport_lo != 0 || m->sport_hi != 65535) {
		snprintf(t, sizeof(t), "%u-%u", m->sport_lo, m->sport_hi);
		json_object_set_new(o, "sport", json_string(t));
	}
	if (m->dport_lo != 0 || m->dport_hi != 65535) {
		snprintf(t, sizeof(t), "%u-%u", m->dport_lo, m->dport_hi);
		json_object_set_new(o, "dport", json_string(t));
	}
	if (m->tos_lo != 0 || m->tos_hi != 255) {
		snprintf(t, sizeof(t), "%u-%u", m->tos_lo, m->tos_hi);
		json_object_set_new(o, "tos", json_string(t));
	}
	return o;
}

static json_t *
cm_json(const struct cmts_sg *sg, const struct cmts_cm *cm, bool detail)
{
	json_t *o = json_pack("{s:i, s:i, s:b}", "id", (int)cm->id, "bg", cm->bg, "bpi", cm->bpi);
	json_t *cpes = json_array(), *sids = json_array(), *fgs = json_array();
	char t[INET6_ADDRSTRLEN + 48];

	rte_ether_format_addr(t, sizeof(t), &cm->mac);
	json_object_set_new(o, "mac", json_string(t));
	for (int i = 0; i < cm->n_cpe; i++) {
		char a[INET6_ADDRSTRLEN], m[32];

		inet_ntop(cm->cpe[i].family == 4 ? AF_INET : AF_INET6, cm->cpe[i].addr, a, sizeof(a));
		if (cm->cpe[i].has_mac) {
			rte_ether_format_addr(m, sizeof(m), &cm->cpe[i].mac);
			snprintf(t, sizeof(t), "%s@%s", a, m);
		} else {
			snprintf(t, sizeof(t), "%s", a);
		}
		json_array_append_new(cpes, json_string(t));
	}
	json_object_set_new(o, "cpe", cpes);
	for (int i = 0; i < cm->n_sid; i++)
		json_array_append_new(sids, json_integer(cm->sid[i]));
	json_object_set_new(o, "sid", sids);
	for (int i = 0; i < CMTS_MAX_FG_PER_CM; i++)
		if (cm->fg[i] != 0)
			json_array_append_new(fgs, json_integer(cm->fg[i]));
	json_object_set_new(o, "fg", fgs);
	json_object_set_new(o, "dsid", json_integer(cm->dsid));
	if (cm->bpi) {
		json_t *keys = json_array();

		json_object_set_new(o, "said", json_integer(cm->said));
		json_object_set_new(o, "ds_kseq", json_integer(cm->ds_kseq));
		for (int k = 0; k < 2; k++)
			if (cm->key[k] != NULL)
				json_array_append_new(keys, json_integer(cm->key[k]->kseq));
		json_object_set_new(o, "kseqs", keys);
	}
	if (detail) {
		json_t *sfs = json_array(), *cls = json_array();
		uint64_t cm_m = 0, cm_u = 0, us_p = 0, us_b = 0;

		for (int s = 0; s < CMTS_MAX_SF; s++) {
			uint64_t p = 0, b = 0;

			if (!cm->sf[s].in_use)
				continue;
			for (int w = 0; w < sg->n_ds; w++) {
				const struct cmts_ds_dyn *y = &sg->ds[w]->dyn[cm->id];

				if (RD(y->gen) == cm->gen) {
					p += RD(y->sf[s].pkts);
					b += RD(y->sf[s].bytes);
				}
			}
			json_array_append_new(sfs, json_pack("{s:i, s:I, s:i, s:i, s:I, s:I}", "sf", s,
				"rate", (json_int_t)cm->sf[s].rate_bps, "burst", (int)cm->sf[s].burst,
				"prio", cm->sf[s].prio, "pkts", (json_int_t)p, "bytes", (json_int_t)b));
		}
		for (int k = 0; k < CMTS_MAX_CLS; k++) {
			json_t *c;

			if (!cm->cls[k].in_use)
				continue;
			c = match_json(&cm->cls[k].m);
			json_object_set_new(c, "cls", json_integer(k));
			json_object_set_new(c, "sf", json_integer(cm->cls[k].sf));
			json_object_set_new(c, "prio", json_integer(cm->cls[k].prio));
			json_array_append_new(cls, c);
		}
		for (int w = 0; w < sg->n_ds; w++) {
			const struct cmts_ds_dyn *y = &sg->ds[w]->dyn[cm->id];

			if (RD(y->gen) == cm->gen) {
				cm_m += RD(y->cls_matched);
				cm_u += RD(y->cls_unmatched);
			}
		}
		for (int w = 0; w < sg->n_us; w++) {
			const struct cmts_us_dyn *y = &sg->us[w]->dyn[cm->id];

			if (RD(y->gen) == cm->gen) {
				us_p += RD(y->pkts);
				us_b += RD(y->bytes);
			}
		}
		json_object_set_new(o, "sf", sfs);
		json_object_set_new(o, "cls", cls);
		json_object_set_new(o, "classifier_matched", json_integer((json_int_t)cm_m));
		json_object_set_new(o, "classifier_unmatched", json_integer((json_int_t)cm_u));
		json_object_set_new(o, "us_pkts", json_integer((json_int_t)us_p));
		json_object_set_new(o, "us_bytes", json_integer((json_int_t)us_b));
	}
	return o;
}

static int
ctl_cm_get(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	const struct cmts_cm *cm;
	uint32_t id = 0;

	if (sg == NULL || id_field(req, "id", 0xffff, &id, err) < 0)
		return -1;
	cm = cmts_cm_get(sg, id);
	if (cm == NULL)
		return ep_err_set(err, "no CM %u", id);
	json_object_set_new(res, "cm", cm_json(sg, cm, true));
	return 0;
}

static int
ctl_cm_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint64_t limit, offset, seen = 0;
	json_t *arr = json_array();

	if (sg == NULL || ep_ctl_u64(req, "limit", 1000, 1u << 20, &limit, err) < 0 ||
	    ep_ctl_u64(req, "offset", 0, UINT32_MAX, &offset, err) < 0) {
		json_decref(arr);
		return -1;
	}
	for (uint32_t id = 1; id <= sg->p.max_cms && json_array_size(arr) < limit; id++) {
		const struct cmts_cm *cm = sg->cms[id];

		if (cm != NULL && seen++ >= offset)
			json_array_append_new(arr, cm_json(sg, cm, false));
	}
	json_object_set_new(res, "total", json_integer(sg->n_cms));
	json_object_set_new(res, "cms", arr);
	return 0;
}

static int
hex16(json_t *req, const char *key, uint8_t out[16], struct ep_err *err)
{
	struct cmts_cm_req r;
	char buf[64];

	if (field(req, key, buf, sizeof(buf), true, err) == NULL)
		return -1;
	cmts_cm_req_init(&r);
	if (cmts_cm_req_set(&r, key, buf, err) < 0)
		return -1;
	memcpy(out, key[0] == 'k' ? r.key : r.iv, 16);
	return 0;
}

static int
ctl_cm_key(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint8_t key[16], iv[16];
	uint32_t id = 0, kseq = 0;

	if (sg == NULL || id_field(req, "id", 0xffff, &id, err) < 0 ||
	    id_field(req, "kseq", 15, &kseq, err) < 0 || hex16(req, "key", key, err) < 0 ||
	    hex16(req, "iv", iv, err) < 0)
		return -1;
	return cmts_key_set(sg, id, (uint8_t)kseq, key, iv, err);
}

static int
ctl_cm_key_activate(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0, kseq = 0;

	if (sg == NULL || id_field(req, "id", 0xffff, &id, err) < 0 ||
	    id_field(req, "kseq", 15, &kseq, err) < 0)
		return -1;
	return cmts_key_activate(sg, id, (uint8_t)kseq, err);
}

static int
ctl_sf_set(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	static const char *const skip[] = { "sg", "cm", "sf", NULL };
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0, sf = 0;
	char spec[1024];

	if (sg == NULL || id_field(req, "cm", 0xffff, &id, err) < 0 ||
	    id_field(req, "sf", CMTS_MAX_SF - 1, &sf, err) < 0 ||
	    ep_ctl_spec(req, skip, spec, sizeof(spec), err) < 0)
		return -1;
	return cmts_sf_set(sg, id, (uint8_t)sf, spec, err);
}

static int
ctl_sf_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0, sf = 0;

	if (sg == NULL || id_field(req, "cm", 0xffff, &id, err) < 0 ||
	    id_field(req, "sf", CMTS_MAX_SF - 1, &sf, err) < 0)
		return -1;
	return cmts_sf_del(sg, id, (uint8_t)sf, err);
}

static int
ctl_cls_set(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	static const char *const skip[] = { "sg", "cm", "cls", NULL };
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0, cls = 0;
	char spec[1024];

	if (sg == NULL || id_field(req, "cm", 0xffff, &id, err) < 0 ||
	    id_field(req, "cls", CMTS_MAX_CLS - 1, &cls, err) < 0 ||
	    ep_ctl_spec(req, skip, spec, sizeof(spec), err) < 0)
		return -1;
	return cmts_cls_set(sg, id, (uint8_t)cls, spec, err);
}

static int
ctl_cls_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t id = 0, cls = 0;

	if (sg == NULL || id_field(req, "cm", 0xffff, &id, err) < 0 ||
	    id_field(req, "cls", CMTS_MAX_CLS - 1, &cls, err) < 0)
		return -1;
	return cmts_cls_del(sg, id, (uint8_t)cls, err);
}

static int
ctl_filter_add(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	char rule[1024];

	if (sg == NULL || field(req, "rule", rule, sizeof(rule), true, err) == NULL)
		return -1;
	return cmts_filter_add(sg, rule, true, err);
}

static int
ctl_filter_del(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	uint32_t g = 0, o = 0;

	if (sg == NULL || id_field(req, "group", CMTS_MAX_FG, &g, err) < 0 ||
	    id_field(req, "order", 0xffff, &o, err) < 0)
		return -1;
	return cmts_filter_del(sg, (uint8_t)g, (uint16_t)o, err);
}

static int
ctl_filter_list(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);
	json_t *arr;

	if (sg == NULL)
		return -1;
	arr = json_array();
	for (uint32_t i = 0; i < sg->n_filters; i++) {
		const struct ep_acl_rule *f = &sg->filters[i];
		json_t *o = match_json(f);

		json_object_set_new(o, "group", json_integer(f->set));
		json_object_set_new(o, "order", json_integer(f->value));
		json_object_set_new(o, "action", json_string(f->deny ? "deny" : "permit"));
		json_array_append_new(arr, o);
	}
	json_object_set_new(res, "filters", arr);
	json_object_set_new(res, "default", json_string(sg->filter_acl->default_deny ? "deny" :
							  "permit"));
	/* The ACL instances behind them (acl-list table=<name> shows their rules). */
	json_object_set_new(res, "filter_table", json_string(sg->filter_acl->name));
	json_object_set_new(res, "classifier_table", json_string(sg->cls_acl->name));
	json_object_set_new(res, "classifier_rules", json_integer(sg->cls_acl->n_rules));
	return 0;
}

static json_t *
ds_stats(const struct cmts_sg *sg)
{
	uint64_t hit = 0, miss = 0, fp = 0, fd = 0, fu = 0, crc = 0, drops = 0, queued = 0;
	uint64_t in_flight = 0;
	json_t *chs = json_array();

	for (int w = 0; w < sg->n_ds; w++) {
		const struct cmts_ds *d = sg->ds[w];

		hit += RD(d->lookup_hit);
		miss += RD(d->lookup_miss);
		fp += RD(d->filter_permit);
		fd += RD(d->filter_deny);
		fu += RD(d->filter_unmatched);
		crc += RD(d->crc_generated);
		drops += RD(d->sched_drops);
		queued += RD(d->queued);
		in_flight += RD(d->in_flight);
	}
	for (int c = 0; c < CMTS_MAX_DS_CH; c++) {
		uint64_t p = 0, b = 0, dp = 0, ts = 0, segs[8] = { 0 };
		json_t *h = json_array();

		if (!sg->ds_ch[c].in_use)
			continue;
		for (int w = 0; w < sg->n_ds; w++) {
			const struct cmts_ds_chan *ch = &sg->ds[w]->ch[c];

			p += RD(ch->pkts);
			b += RD(ch->bytes);
			dp += RD(ch->depi_pkts);
			ts += RD(ch->mpt_pkts);
			for (int k = 0; k < 8; k++)
				segs[k] += RD(ch->psp_segs[k]);
		}
		for (int k = 0; k < 8; k++)
			json_array_append_new(h, json_integer((json_int_t)segs[k]));
		json_array_append_new(chs, json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:o}",
			"channel", c, "type", sg->ds_ch[c].type == CMTS_CH_OFDM ? "ofdm" : "scqam",
			"rate_bps", (json_int_t)sg->ds_ch[c].rate_bps, "pkts", (json_int_t)p,
			"bits", (json_int_t)(b * 8), "depi_pkts", (json_int_t)dp,
			"mpt_ts_pkts", (json_int_t)ts, "psp_segments_per_depi", h));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
		"lookup_matched", (json_int_t)hit, "lookup_unmatched", (json_int_t)miss,
		"filter_permit", (json_int_t)fp, "filter_deny", (json_int_t)fd,
		"filter_unmatched", (json_int_t)fu, "crc_generated", (json_int_t)crc,
		"sched_dropped", (json_int_t)drops, "sched_queued", (json_int_t)queued,
		"crypto_in_flight", (json_int_t)in_flight, "channels", chs);
}

static json_t *
us_stats(const struct cmts_sg *sg)
{
	uint64_t v = 0, iv = 0, fr = 0, ho = 0, hf = 0, co = 0, cf = 0, dec = 0, fpp[8] = { 0 };
	json_t *chs = json_array(), *h = json_array();

	for (int w = 0; w < sg->n_us; w++) {
		const struct cmts_us *u = sg->us[w];

		v += RD(u->l2tp_valid);
		iv += RD(u->l2tp_invalid);
		fr += RD(u->frames);
		ho += RD(u->hcs_ok);
		hf += RD(u->hcs_fail);
		co += RD(u->crc_ok);
		cf += RD(u->crc_fail);
		dec += RD(u->decrypted);
		for (int k = 0; k < 8; k++)
			fpp[k] += RD(u->frames_per_pkt[k]);
	}
	for (int k = 0; k < 8; k++)
		json_array_append_new(h, json_integer((json_int_t)fpp[k]));
	for (int c = 0; c < CMTS_MAX_US_CH; c++) {
		uint64_t p = 0, se = 0, bu = 0, ok = 0, fail = 0;

		if (!sg->us_ch[c].in_use)
			continue;
		for (int w = 0; w < sg->n_us; w++) {
			const struct cmts_us_chan *ch = &sg->us[w]->ch[c];

			p += RD(ch->pkts);
			se += RD(ch->seq_errors);
			bu += RD(ch->bursts);
			ok += RD(ch->reasm_ok);
			fail += RD(ch->reasm_fail);
		}
		json_array_append_new(chs, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "channel", c,
			"pkts", (json_int_t)p, "seq_errors", (json_int_t)se, "bursts", (json_int_t)bu,
			"reassembly_success", (json_int_t)ok, "reassembly_fail", (json_int_t)fail));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:b}",
		"l2tp_valid", (json_int_t)v, "l2tp_invalid", (json_int_t)iv, "frames", (json_int_t)fr,
		"hcs_ok", (json_int_t)ho, "hcs_fail", (json_int_t)hf, "crc_verified", (json_int_t)co,
		"crc_failed", (json_int_t)cf, "decrypted", (json_int_t)dec,
		"frames_per_uepi_pkt", h, "channels", chs, "crc_verify", sg->p.crc_verify);
}

static int
ctl_cmts_stats(struct ep_engine *e, json_t *req, json_t *res, struct ep_err *err)
{
	struct cmts_sg *sg = sg_of(req, err);

	if (sg == NULL)
		return -1;
	json_object_set_new(res, "sg", json_string(sg->name));
	json_object_set_new(res, "cms", json_integer(sg->n_cms));
	json_object_set_new(res, "downstream", ds_stats(sg));
	json_object_set_new(res, "upstream", us_stats(sg));
	return 0;
}

#define CMD(var, name, args, help, fn) \
	static struct ep_ctl_cmd var = { name, args, help, fn, NULL }; \
	EP_CTL_REGISTER(var)

CMD(c_cm_add, "cm-add", "[sg=] id= mac= bg= [cpe=a[@mac],...] [fg=a,b] [said= kseq= key= iv=] "
    "[sid=s,...] [dsid=] [bpi=off]", "add or replace a cable modem", ctl_cm_add)
CMD(c_cm_add_bulk, "cm-add-bulk", "[sg=] cms=[{cm-add fields}, ...]",
    "add or replace many cable modems (one ACL build)", ctl_cm_add_bulk)
CMD(c_cm_del, "cm-del", "[sg=] id=", "delete a cable modem", ctl_cm_del)
CMD(c_cm_get, "cm-get", "[sg=] id=", "a cable modem with its SFs, classifiers and counters",
    ctl_cm_get)
CMD(c_cm_list, "cm-list", "[sg=] [limit=] [offset=]", "list cable modems", ctl_cm_list)
CMD(c_cm_key, "cm-key", "[sg=] id= kseq= key=<32 hex> iv=<32 hex>",
    "install a BPI+ TEK (the next key sequence; the downstream keeps the current one)",
    ctl_cm_key)
CMD(c_cm_key_activate, "cm-key-activate", "[sg=] id= kseq=",
    "encrypt the downstream with an installed TEK from now on", ctl_cm_key_activate)
CMD(c_sf_set, "sf-set", "[sg=] cm= sf=0-8 [rate=<bit/s>] [burst=<bytes>] [prio=0-7]",
    "add or change a downstream service flow", ctl_sf_set)
CMD(c_sf_del, "sf-del", "[sg=] cm= sf=1-8", "delete a service flow", ctl_sf_del)
CMD(c_cls_set, "cls-set", "[sg=] cm= cls=0-15 sf=1-8 [prio=] [proto=] [src=] [dst=] [sport=] "
    "[dport=] [tos=]", "add or change a downstream classifier", ctl_cls_set)
CMD(c_cls_del, "cls-del", "[sg=] cm= cls=", "delete a classifier", ctl_cls_del)
CMD(c_filter_add, "filter-add", "[sg=] rule=\"<group> <order> permit|deny [match...]\"",
    "add or replace a filter-group rule", ctl_filter_add)
CMD(c_filter_del, "filter-del", "[sg=] group= order=", "delete a filter-group rule",
    ctl_filter_del)
CMD(c_filter_list, "filter-list", "[sg=]", "filter-group rules", ctl_filter_list)
CMD(c_cmts_stats, "cmts-stats", "[sg=]",
    "service-group counters: lookup, filters, CRC, scheduler, channels, upstream",
    ctl_cmts_stats)
