/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The [cmts NAME] sections (dataplane/cmts/README.md has every key): one
 * service group each.  Static parts first (ports, addresses, channels,
 * bonding groups, upstream channels), then the run-time tables through the
 * same functions the control socket calls: filter rules, CMs (one batch),
 * their SFs and classifiers, and one ACL build at the end.  Every error is
 * "file:line: key 'k': ..."; lines of a cm_file add "path:line:".
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_malloc.h>

#include "ep_depi.h"
#include "qos/ep_qos.h"
#include "cmts.h"

static int
wrap(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	snprintf(inner, sizeof(inner), "%s", err->msg);
	return ep_cfg_error(cfg, kv, err, "%s", inner);
}

static int
sec_wrap(const struct ep_cfg *cfg, const struct ep_cfg_section *s, struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	snprintf(inner, sizeof(inner), "%s", err->msg);
	return ep_cfg_section_error(cfg, s, err, "%s", inner);
}

static int
params(struct ep_cfg *cfg, struct ep_cfg_section *s, struct cmts_sg_params *p,
       struct ep_err *err)
{
	static const struct { const char *key; size_t off; uint64_t min, max; } keys[] = {
		{ "max_cms", offsetof(struct cmts_sg_params, max_cms), 1, 65535 },
		{ "max_rules", offsetof(struct cmts_sg_params, max_rules), 16, 1u << 20 },
		{ "sf_queue", offsetof(struct cmts_sg_params, sf_qsize), 2, 4096 },
		{ "bg_queue", offsetof(struct cmts_sg_params, bg_qsize), 2, 32768 },
		{ "depi_mtu", offsetof(struct cmts_sg_params, depi_mtu), 576, 9216 },
		{ "mpt_ts", offsetof(struct cmts_sg_params, mpt_ts), 1, EP_MPT_MAX_TS },
		{ "ch_backlog_us", offsetof(struct cmts_sg_params, ch_backlog_us), 10, 1000000 },
	};
	const struct ep_cfg_kv *kv;

	cmts_sg_params_default(p);
	for (size_t i = 0; i < RTE_DIM(keys); i++) {
		uint32_t *f = (uint32_t *)((char *)p + keys[i].off);
		uint64_t v;

		if (ep_cfg_u64(cfg, s, keys[i].key, *f, keys[i].min, keys[i].max, &v, err) < 0)
			return -1;
		*f = (uint32_t)v;
	}
	if (!rte_is_power_of_2(p->sf_qsize))
		return ep_cfg_error(cfg, ep_cfg_get(cfg, s, "sf_queue", NULL), err,
				    "must be a power of two");
	if (!rte_is_power_of_2(p->bg_qsize))
		return ep_cfg_error(cfg, ep_cfg_get(cfg, s, "bg_queue", NULL), err,
				    "must be a power of two");
	kv = ep_cfg_get(cfg, s, "crc_verify", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "on") != 0 && strcmp(kv->val, "off") != 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not on or off", kv->val);
		p->crc_verify = kv->val[1] == 'n';
	}
	kv = ep_cfg_get(cfg, s, "filter_default", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "permit") != 0 && strcmp(kv->val, "deny") != 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not permit or deny", kv->val);
		p->filter_default_permit = kv->val[0] == 'p';
	}
	return 0;
}

static int
port_key(struct cmts_sg *sg, struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
	 uint16_t *out, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(cfg, s, key, err);
	struct ep_port *p;

	if (kv == NULL)
		return ep_cfg_section_error(cfg, s, err, "%s is required", key);
	p = ep_port_by_name(sg->e, kv->val);
	if (p == NULL)
		return ep_cfg_error(cfg, kv, err, "no [port %s]", kv->val);
	*out = p->index;
	return 0;
}

static int
ipv4_key(struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key, uint32_t *out,
	 struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(cfg, s, key, err);

	if (kv == NULL)
		return ep_cfg_section_error(cfg, s, err, "%s is required", key);
	if (inet_pton(AF_INET, kv->val, out) != 1)
		return ep_cfg_error(cfg, kv, err, "'%s' is not an IPv4 address", kv->val);
	return 0;
}

/* "<id> ofdm|scqam rate=<bit/s> session=<id> [flow=<0-7>]" */
static int
channel_line(struct cmts_sg *sg, const char *val, struct ep_err *err)
{
	char type[16], rest[256], *save = NULL;
	unsigned int id;
	int used = 0;
	struct cmts_ds_ch ch = { .in_use = true };
	bool has_rate = false, has_session = false;

	if (sscanf(val, "%u %15s %n", &id, type, &used) != 2)
		return ep_err_set(err, "expected '<id> ofdm|scqam rate=<bit/s> session=<id>'");
	if (id >= CMTS_MAX_DS_CH)
		return ep_err_set(err, "channel id %u is not 0-%d", id, CMTS_MAX_DS_CH - 1);
	if (sg->ds_ch[id].in_use)
		return ep_err_set(err, "channel %u defined twice", id);
	if (strcmp(type, "ofdm") == 0)
		ch.type = CMTS_CH_OFDM;
	else if (strcmp(type, "scqam") == 0)
		ch.type = CMTS_CH_SCQAM;
	else
		return ep_err_set(err, "'%s' is not ofdm or scqam", type);
	snprintf(rest, sizeof(rest), "%s", val + used);
	for (char *t = strtok_r(rest, " \t", &save); t != NULL; t = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(t, '='), *end;
		uint64_t bps;

		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", t);
		*eq++ = '\0';
		if (strcmp(t, "rate") == 0) {
			if (ep_qos_parse_rate(eq, &bps) < 0 || bps < 100000 ||
			    bps > 1000000000000ull)
				return ep_err_set(err, "rate: '%s' is not 100k..1000G bit/s", eq);
			ch.rate_bps = bps;
			has_rate = true;
		} else if (strcmp(t, "session") == 0) {
			unsigned long s = strtoul(eq, &end, 0);

			if (end == eq || *end != '\0' || s == 0 || s > UINT32_MAX)
				return ep_err_set(err, "session: '%s' is not an L2TPv3 session id 1..2^32-1",
						  eq);
			ch.session = (uint32_t)s;
			has_session = true;
		} else if (strcmp(t, "flow") == 0) {
			unsigned long f = strtoul(eq, &end, 10);

			if (end == eq || *end != '\0' || f > 7)
				return ep_err_set(err, "flow: '%s' is not 0-7", eq);
			ch.flow_id = (uint8_t)f;
		} else {
			return ep_err_set(err, "unknown channel field '%s' (rate, session, flow)", t);
		}
	}
	if (!has_rate || !has_session)
		return ep_err_set(err, "a channel needs rate= and session=");
	sg->ds_ch[id] = ch;
	sg->n_ds_ch++;
	return 0;
}

/* "<id> <ch>,<ch>,..." */
static int
bg_line(struct cmts_sg *sg, const char *val, struct ep_err *err)
{
	char list[512], *save = NULL;
	unsigned int id;
	struct cmts_bg *bg;

	if (sscanf(val, "%u %511s", &id, list) != 2)
		return ep_err_set(err, "expected '<id> <channel>,<channel>,...'");
	if (id >= CMTS_MAX_BG)
		return ep_err_set(err, "bonding group %u is not 0-%d", id, CMTS_MAX_BG - 1);
	bg = &sg->bg[id];
	if (bg->in_use)
		return ep_err_set(err, "bonding group %u defined twice", id);
	for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long c = strtoul(t, &end, 10);

		if (end == t || *end != '\0' || c >= CMTS_MAX_DS_CH || !sg->ds_ch[c].in_use)
			return ep_err_set(err, "'%s' is not a channel defined above", t);
		for (int k = 0; k < bg->n_ch; k++)
			if (bg->ch[k] == c)
				return ep_err_set(err, "channel %lu listed twice", c);
		bg->ch[bg->n_ch++] = (uint8_t)c;
	}
	bg->in_use = true;
	return 0;
}

/* "<id> session=<id>" */
static int
us_line(struct cmts_sg *sg, const char *val, struct ep_err *err)
{
	unsigned int id;
	unsigned long s;
	char *end;
	const char *eq;

	if (sscanf(val, "%u", &id) != 1 || (eq = strstr(val, "session=")) == NULL)
		return ep_err_set(err, "expected '<id> session=<L2TPv3 session id>'");
	if (id >= CMTS_MAX_US_CH)
		return ep_err_set(err, "upstream channel %u is not 0-%d", id, CMTS_MAX_US_CH - 1);
	if (sg->us_ch[id].in_use)
		return ep_err_set(err, "upstream channel %u defined twice", id);
	s = strtoul(eq + 8, &end, 0);
	if (end == eq + 8 || *end != '\0' || s == 0 || s > UINT32_MAX)
		return ep_err_set(err, "session: not an L2TPv3 session id 1..2^32-1");
	for (int c = 0; c < CMTS_MAX_US_CH; c++)
		if (sg->us_ch[c].in_use && sg->us_ch[c].session == s)
			return ep_err_set(err, "session %lu used by upstream channel %d", s, c);
	sg->us_ch[id].in_use = true;
	sg->us_ch[id].session = (uint32_t)s;
	return 0;
}

/* ---- run-time tables: lines of the section or of a cm_file ---- */

struct lines {
	struct cmts_cm_req *cm;
	uint32_t n_cm, cap_cm;
	const struct ep_cfg_kv **cm_kv;
	int *cm_fline;
	/* sf and cls lines, applied after the CMs exist */
	char **later;
	const struct ep_cfg_kv **later_kv;
	int *later_fline;
	uint32_t n_later, cap_later;
};

static int
grow(void **p, size_t elt, uint32_t cap)
{
	void *n = realloc(*p, elt * cap);

	if (n == NULL)
		return -1;
	*p = n;
	return 0;
}

static int
located(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, int fline, struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	if (fline != 0) {
		snprintf(inner, sizeof(inner), "%s", err->msg);
		ep_err_set(err, "%s:%d: %s", kv->val, fline, inner);
	}
	return wrap(cfg, kv, err);
}

/* One "key value" line (key: cm, sf, cls, filter). */
static int
one_line(struct cmts_sg *sg, struct lines *L, const char *key, const char *val,
	 const struct ep_cfg_kv *kv, int fline, struct ep_err *err)
{
	if (strcmp(key, "filter") == 0)
		return cmts_filter_add(sg, val, false, err);
	if (strcmp(key, "cm") == 0) {
		if (L->n_cm == L->cap_cm) {
			uint32_t cap = L->cap_cm ? 2 * L->cap_cm : 256;

			if (grow((void **)&L->cm, sizeof(*L->cm), cap) < 0 ||
			    grow((void **)&L->cm_kv, sizeof(*L->cm_kv), cap) < 0 ||
			    grow((void **)&L->cm_fline, sizeof(*L->cm_fline), cap) < 0)
				return ep_err_set(err, "out of memory");
			L->cap_cm = cap;
		}
		if (cmts_cm_req_parse(&L->cm[L->n_cm], val, err) < 0)
			return -1;
		L->cm_kv[L->n_cm] = kv;
		L->cm_fline[L->n_cm++] = fline;
		return 0;
	}
	if (strcmp(key, "sf") == 0 || strcmp(key, "cls") == 0) {
		if (L->n_later == L->cap_later) {
			uint32_t cap = L->cap_later ? 2 * L->cap_later : 1024;

			if (grow((void **)&L->later, sizeof(*L->later), cap) < 0 ||
			    grow((void **)&L->later_kv, sizeof(*L->later_kv), cap) < 0 ||
			    grow((void **)&L->later_fline, sizeof(*L->later_fline), cap) < 0)
				return ep_err_set(err, "out of memory");
			L->cap_later = cap;
		}
		if (asprintf(&L->later[L->n_later], "%s %s", key, val) < 0)
			return ep_err_set(err, "out of memory");
		L->later_kv[L->n_later] = kv;
		L->later_fline[L->n_later++] = fline;
		return 0;
	}
	return ep_err_set(err, "unknown line '%s' (cm, sf, cls, filter)", key);
}

static int
load_file(struct cmts_sg *sg, struct lines *L, const struct ep_cfg *cfg,
	  const struct ep_cfg_kv *kv, struct ep_err *err)
{
	FILE *f = fopen(kv->val, "r");
	char line[2048];
	int n = 0;

	if (f == NULL) {
		ep_err_set(err, "cannot open '%s': %s", kv->val, strerror(errno));
		return wrap(cfg, kv, err);
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *hash = strchr(line, '#'), *t = line, *v;

		n++;
		if (hash != NULL)
			*hash = '\0';
		t += strspn(t, " \t\r\n");
		if (*t == '\0')
			continue;
		t[strcspn(t, "\r\n")] = '\0';
		v = t + strcspn(t, " \t=");
		if (*v != '\0')
			*v++ = '\0';
		v += strspn(v, " \t=");
		if (one_line(sg, L, t, v, kv, n, err) < 0) {
			fclose(f);
			return located(cfg, kv, n, err);
		}
	}
	fclose(f);
	return 0;
}

/* "sf <cm> <sf> spec" / "cls <cm> <idx> spec" */
static int
later_line(struct cmts_sg *sg, const char *text, struct ep_err *err)
{
	char key[8];
	unsigned int cm, idx;
	int used = 0;

	if (sscanf(text, "%7s %u %u %n", key, &cm, &idx, &used) != 3)
		return ep_err_set(err, "expected '<cm id> <%s> key=value ...'",
				  text[0] == 's' ? "sf 0-8" : "classifier 0-15");
	if (key[0] == 's')
		return cmts_sf_set(sg, cm, (uint8_t)RTE_MIN(idx, 255u), text + used, err);
	return cmts_cls_set_nobuild(sg, cm, (uint8_t)RTE_MIN(idx, 255u), text + used, err);
}

static int
load_sg(struct cmts *c, struct ep_cfg *cfg, struct ep_cfg_section *s, struct ep_err *err)
{
	struct cmts_sg_params p;
	struct cmts_sg *sg;
	struct lines L = { 0 };
	const struct ep_cfg_kv *kv;
	uint32_t failed = 0;
	int rc = -1;

	if (params(cfg, s, &p, err) < 0)
		return -1;
	if (cmts_sg_find(c, s->name) != NULL)
		return ep_cfg_section_error(cfg, s, err, "service group '%s' defined twice", s->name);
	sg = cmts_sg_create(c, s->name, &p, err);
	if (sg == NULL)
		return sec_wrap(cfg, s, err);
	if (port_key(sg, cfg, s, "rpd_port", &sg->rpd_port, err) < 0 ||
	    port_key(sg, cfg, s, "net_port", &sg->net_port, err) < 0 ||
	    ipv4_key(cfg, s, "cmts_ip", &sg->cmts_ip, err) < 0 ||
	    ipv4_key(cfg, s, "rpd_ip", &sg->rpd_ip, err) < 0)
		return -1;
	if (sg->rpd_port == sg->net_port)
		return ep_cfg_section_error(cfg, s, err, "rpd_port and net_port must differ");
	kv = ep_cfg_get(cfg, s, "rpd_mac", err);
	if (kv == NULL)
		return ep_cfg_section_error(cfg, s, err, "rpd_mac is required (the next hop "
					    "toward the RPD)");
	if (ep_parse_mac(kv->val, &sg->rpd_mac) < 0)
		return ep_cfg_error(cfg, kv, err, "'%s' is not a MAC address", kv->val);
	/* Static parts, in file order per key. */
	for (int i = 0; i < s->n_kv; i++) {
		struct ep_cfg_kv *k = &s->kv[i];
		int r;

		if (strcmp(k->key, "channel") == 0)
			r = channel_line(sg, k->val, err);
		else if (strcmp(k->key, "bonding_group") == 0)
			r = bg_line(sg, k->val, err);
		else if (strcmp(k->key, "us_channel") == 0)
			r = us_line(sg, k->val, err);
		else
			continue;
		k->used = true;
		if (r < 0)
			return wrap(cfg, k, err);
	}
	if (sg->n_ds_ch == 0)
		return ep_cfg_section_error(cfg, s, err, "no downstream channel (channel = ...)");
	/* Run-time tables. */
	for (int i = 0; i < s->n_kv; i++) {
		struct ep_cfg_kv *k = &s->kv[i];

		if (strcmp(k->key, "cm") != 0 && strcmp(k->key, "sf") != 0 &&
		    strcmp(k->key, "cls") != 0 && strcmp(k->key, "filter") != 0)
			continue;
		k->used = true;
		if (one_line(sg, &L, k->key, k->val, k, 0, err) < 0) {
			wrap(cfg, k, err);
			goto out;
		}
	}
	for (int i = 0; i < s->n_kv; i++) {
		struct ep_cfg_kv *k = &s->kv[i];

		if (strcmp(k->key, "cm_file") != 0)
			continue;
		k->used = true;
		if (load_file(sg, &L, cfg, k, err) < 0)
			goto out;
	}
	if (L.n_cm != 0 && cmts_cm_add_bulk(sg, L.cm, L.n_cm, &failed, err) < 0) {
		located(cfg, L.cm_kv[failed], L.cm_fline[failed], err);
		goto out;
	}
	for (uint32_t i = 0; i < L.n_later; i++) {
		if (later_line(sg, L.later[i], err) < 0) {
			located(cfg, L.later_kv[i], L.later_fline[i], err);
			goto out;
		}
	}
	if (cmts_acl_rebuild(sg, err) < 0) {
		sec_wrap(cfg, s, err);
		goto out;
	}
	rc = 0;
out:
	for (uint32_t i = 0; i < L.n_later; i++)
		free(L.later[i]);
	free(L.later);
	free(L.later_kv);
	free(L.later_fline);
	free(L.cm);
	free(L.cm_kv);
	free(L.cm_fline);
	return rc;
}

int
cmts_load_config(struct cmts *c, struct ep_cfg *cfg, struct ep_err *err)
{
	for (int i = 0; i < cfg->n_sec; i++) {
		struct ep_cfg_section *s = &cfg->sec[i];

		if (strcmp(s->type, "cmts") != 0 || s->name[0] == '\0')
			continue;
		if (load_sg(c, cfg, s, err) < 0)
			return -1;
	}
	return 0;
}
