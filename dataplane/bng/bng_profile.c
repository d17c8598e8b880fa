/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared profiles: uplink policers (rte_meter trTCM, RFC 2698 / RFC 4115),
 * downlink HQoS pipe profiles and subports (rte_sched), the DSCP -> traffic
 * class map, and the rate/size syntax they share.  Control thread only.
 *
 * Policer profiles are precomputed once (rte_meter_*_profile_config turns
 * rates into TSC periods and bytes per period) and published through an
 * array of pointers; the per-subscriber meter contexts live in the workers.
 * Changing a profile publishes a new one; a worker notices the pointer
 * changed and re-arms its contexts (full buckets) on the next packet.
 *
 * rte_sched cannot edit a pipe profile in place, so changing one adds a new
 * slot in every subport's profile table and moves the subscribers' pipes to
 * it (rte_sched_pipe_config, by message on each downlink worker).
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "ep_rcu.h"
#include "bng.h"

/* ---- numbers ---- */

static int
parse_scaled(const char *s, uint64_t unit, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mul = 1;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': mul = unit; end++; break;
	case 'm': case 'M': mul = unit * unit; end++; break;
	case 'g': case 'G': mul = unit * unit * unit; end++; break;
	default: break;
	}
	if (*end != '\0' || v < 0 || v * (double)mul > 1e18)
		return -1;
	*out = (uint64_t)(v * (double)mul + 0.5);
	return 0;
}

int
bng_parse_rate(const char *s, uint64_t *bps)
{
	return parse_scaled(s, 1000, bps);
}

int
bng_parse_size(const char *s, uint64_t *bytes)
{
	return parse_scaled(s, 1024, bytes);
}

/* "k=v k=v" -> calls fn(key, val); values may not contain spaces. */
static int
each_kv(const char *spec, int (*fn)(void *arg, const char *k, const char *v, struct ep_err *err),
	void *arg, struct ep_err *err)
{
	char buf[512], *save = NULL;

	if (spec == NULL)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, " \t", &save); t != NULL; t = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(t, '=');

		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", t);
		*eq = '\0';
		if (fn(arg, t, eq + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- policers ---- */

static void
yellow_map(uint8_t map[64], int yellow)
{
	for (int d = 0; d < 64; d++) {
		int cls = d >> 3, dp = d & 7;

		if (yellow >= 0)
			map[d] = (uint8_t)yellow;
		else if (yellow == -1 && cls >= 1 && cls <= 4 && (dp == 2 || dp == 4 || dp == 6))
			map[d] = (uint8_t)(dp == 6 ? d : d + 2);   /* AFx1 -> AFx2 -> AFx3 */
		else
			map[d] = 0;                                 /* CS0 */
	}
}

int
bng_policer_find(const struct bng *b, const char *name)
{
	for (uint32_t i = 0; i < b->n_pol; i++)
		if (strcmp(b->pol_name[i], name) == 0)
			return (int)i;
	return -1;
}

int
bng_policer_set_raw(struct bng *b, const char *name, enum bng_police_mode mode, uint64_t cir,
		    uint64_t cbs, uint64_t pir, uint64_t pbs, int yellow, struct ep_err *err)
{
	struct bng_policer *p, *old;
	int idx = bng_policer_find(b, name), rc;

	if (ep_name_check(name, err) < 0)
		return -1;
	if (strcmp(name, "none") == 0)
		return ep_err_set(err, "policer: 'none' means no policer; pick another name");
	if (idx < 0 && b->n_pol == BNG_MAX_POLICERS)
		return ep_err_set(err, "policer: all %d profiles in use", BNG_MAX_POLICERS);
	p = rte_zmalloc("ep_bng_pol", sizeof(*p), RTE_CACHE_LINE_SIZE);
	if (p == NULL)
		return ep_err_set(err, "policer: out of memory");
	p->mode = (uint8_t)mode;
	if (mode == BNG_RFC2698)
		rc = rte_meter_trtcm_profile_config(&p->p2698, &(struct rte_meter_trtcm_params){
			.cir = cir, .pir = pir, .cbs = cbs, .pbs = pbs });
	else
		rc = rte_meter_trtcm_rfc4115_profile_config(&p->p4115,
			&(struct rte_meter_trtcm_rfc4115_params){
				.cir = cir, .eir = pir, .cbs = cbs, .ebs = pbs });
	if (rc != 0) {
		rte_free(p);
		return ep_err_set(err, "policer %s: rte_meter rejects the rates (%s needs %s)", name,
				  mode == BNG_RFC2698 ? "RFC 2698" : "RFC 4115",
				  mode == BNG_RFC2698 ? "0 < cir <= pir, cbs > 0, pbs > 0" :
				  "cir or eir > 0, and a burst size for each non-zero rate");
	}
	p->cir = cir;
	p->cbs = cbs;
	p->pir = pir;
	p->pbs = pbs;
	p->yellow = yellow;
	yellow_map(p->yellow_dscp, yellow);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (idx < 0) {
		idx = (int)b->n_pol++;
		snprintf(b->pol_name[idx], BNG_NAME_LEN, "%s", name);
	}
	old = b->pol[idx];
	ep_rcu_publish(&b->pol[idx], p);
	if (old != NULL)
		bng_defer_free(b, old);
	return 0;
}

struct pol_args { uint64_t cir, cbs, pir, pbs; bool has[4]; int mode; int yellow; };

static int
pol_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct pol_args *a = arg;

	if (strcmp(k, "cir") == 0 || strcmp(k, "pir") == 0 || strcmp(k, "eir") == 0) {
		uint64_t *f = k[0] == 'c' ? &a->cir : &a->pir;

		if (bng_parse_rate(v, f) < 0)
			return ep_err_set(err, "%s: '%s' is not a rate in bit/s (k, M, G)", k, v);
		*f /= 8;
		a->has[k[0] == 'c' ? 0 : 2] = true;
	} else if (strcmp(k, "cbs") == 0 || strcmp(k, "pbs") == 0 || strcmp(k, "ebs") == 0) {
		uint64_t *f = k[0] == 'c' ? &a->cbs : &a->pbs;

		if (bng_parse_size(v, f) < 0)
			return ep_err_set(err, "%s: '%s' is not a size in bytes (K, M)", k, v);
		a->has[k[0] == 'c' ? 1 : 3] = true;
	} else if (strcmp(k, "mode") == 0) {
		if (strcmp(v, "rfc2698") == 0)
			a->mode = BNG_RFC2698;
		else if (strcmp(v, "rfc4115") == 0)
			a->mode = BNG_RFC4115;
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
bng_policer_set(struct bng *b, const char *name, const char *spec, struct ep_err *err)
{
	struct pol_args a = { .mode = BNG_RFC2698, .yellow = -1 };

	if (each_kv(spec, pol_kv, &a, err) < 0)
		return -1;
	for (int i = 0; i < 4; i++)
		if (!a.has[i])
			return ep_err_set(err, "policer %s: needs cir, cbs, %s", name,
					  a.mode == BNG_RFC2698 ? "pir and pbs" : "eir and ebs");
	return bng_policer_set_raw(b, name, (enum bng_police_mode)a.mode, a.cir, a.cbs, a.pir,
				   a.pbs, a.yellow, err);
}

/* ---- rte_sched rates: "r0,r1,..." ---- */

static int
rate_list(const char *v, uint64_t *out, int n)
{
	char buf[512], *save = NULL;
	int i = 0;

	if (strlen(v) >= sizeof(buf))
		return -1;
	strcpy(buf, v);
	for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		if (i == n || bng_parse_rate(t, &out[i]) < 0)
			return -1;
		out[i++] /= 8;
	}
	return i == n ? 0 : -1;
}

/* The token-bucket keys pipes and subports share (rate, tb_size, tc_rates,
 * tc_period), into the fields rte_sched's pipe and subport profile
 * parameters both have.  1 if @p k is one of them and @p v good, -1 if @p v
 * is bad, 0 if @p k is another key. */
static int
tb_kv(const char *k, const char *v, uint64_t *tb_rate, uint64_t *tb_size, uint64_t *tc_rate,
      uint64_t *tc_period, bool *has_rate, bool *has_tb, bool *has_tc, struct ep_err *err)
{
	uint64_t x;

	if (strcmp(k, "rate") == 0) {
		if (bng_parse_rate(v, &x) < 0 || x < 8)
			return ep_err_set(err, "rate: '%s' is not a rate in bit/s", v);
		*tb_rate = x / 8;
		*has_rate = true;
	} else if (strcmp(k, "tb_size") == 0) {
		if (bng_parse_size(v, tb_size) < 0 || *tb_size == 0)
			return ep_err_set(err, "tb_size: '%s' is not a size in bytes", v);
		*has_tb = true;
	} else if (strcmp(k, "tc_rates") == 0) {
		if (rate_list(v, tc_rate, RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE) < 0)
			return ep_err_set(err, "tc_rates: needs %d comma-separated rates in bit/s",
					  RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE);
		*has_tc = true;
	} else if (strcmp(k, "tc_period") == 0) {
		if (bng_parse_size(v, tc_period) < 0 || *tc_period == 0 || *tc_period > 1000)
			return ep_err_set(err, "tc_period: '%s' is not 1-1000 ms", v);
	} else {
		return 0;
	}
	return 1;
}

/* After the keys: token-bucket size and TC rates that were not given
 * default to 4 ms of the rate (at least a few full frames) and to the rate;
 * every TC rate must be within the rate.  @p what names the pipe or
 * subport in the error. */
static int
tb_finish(const struct bng *b, uint64_t tb_rate, uint64_t *tb_size, uint64_t *tc_rate,
	  bool has_tb, bool has_tc, const char *what, struct ep_err *err)
{
	if (tb_rate > b->p.hqos_rate)
		return ep_err_set(err, "%s: rate above hqos_port_rate", what);
	if (!has_tb)
		*tb_size = RTE_MAX(tb_rate / 250, 4ull * b->p.hqos_mtu);
	for (int i = 0; i < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; i++) {
		if (!has_tc)
			tc_rate[i] = tb_rate;
		if (tc_rate[i] == 0 || tc_rate[i] > tb_rate)
			return ep_err_set(err, "%s: tc_rates[%d] must be > 0 and <= rate", what, i);
	}
	return 0;
}

struct pipe_args { struct rte_sched_pipe_params p; bool has_rate, has_tc, has_tb; };

static int
pipe_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct pipe_args *a = arg;
	uint64_t x;
	int rc = tb_kv(k, v, &a->p.tb_rate, &a->p.tb_size, a->p.tc_rate, &a->p.tc_period,
		       &a->has_rate, &a->has_tb, &a->has_tc, err);

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
		if (bng_parse_size(v, &x) < 0 || x == 0 || x > 255)
			return ep_err_set(err, "tc_ov_weight: '%s' is not 1-255", v);
		a->p.tc_ov_weight = (uint8_t)x;
	} else {
		return ep_err_set(err, "unknown key '%s' (rate, tb_size, tc_rates, tc_period, wrr, "
				  "tc_ov_weight)", k);
	}
	return 0;
}

int
bng_pipe_find(const struct bng *b, const char *name)
{
	for (uint32_t i = 0; i < b->n_pipe_prof; i++)
		if (strcmp(b->pipe_prof[i].name, name) == 0)
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

/* The rte_sched profile slot holding @p p: an existing one with the same
 * parameters (rte_sched refuses duplicates, and a profile changed back
 * and forth then costs no slot), else a new one, added to every port. */
static int
pipe_slot(struct bng *b, const struct rte_sched_pipe_params *p, const char *name,
	  struct ep_err *err)
{
	uint32_t slot;

	for (slot = 0; slot < b->n_sched; slot++)
		if (pipe_params_equal(&b->sched[slot], p))
			return (int)slot;
	if (b->n_sched == BNG_MAX_PIPE_PROF)
		return ep_err_set(err, "pipe %s: all %d profile slots used", name,
				  BNG_MAX_PIPE_PROF);
	b->sched[slot] = *p;
	if (b->n_down != 0 && bng_hqos_profile_add_all(b, slot, err) < 0)
		return -1;
	b->n_sched++;
	return (int)slot;
}

int
bng_pipe_set(struct bng *b, const char *name, const char *spec, struct ep_err *err)
{
	struct pipe_args a = { .p = { .tc_period = 10, .tc_ov_weight = 1,
				      .wrr_weights = { 1, 1, 1, 1 } } };
	int idx = bng_pipe_find(b, name);
	char what[BNG_NAME_LEN + 8];
	uint32_t slot;
	int rc;

	if (ep_name_check(name, err) < 0)
		return -1;
	if (each_kv(spec, pipe_kv, &a, err) < 0)
		return -1;
	if (!a.has_rate) {
		if (spec != NULL)
			return ep_err_set(err, "pipe %s: needs rate=", name);
		a.p.tb_rate = b->p.hqos_rate;
	}
	snprintf(what, sizeof(what), "pipe %s", name);
	if (tb_finish(b, a.p.tb_rate, &a.p.tb_size, a.p.tc_rate, a.has_tb, a.has_tc, what,
		      err) < 0)
		return -1;
	if (idx < 0 && b->n_pipe_prof == BNG_MAX_PIPE_PROF)
		return ep_err_set(err, "pipe %s: all %d profile names used", name,
				  BNG_MAX_PIPE_PROF);
	rc = pipe_slot(b, &a.p, name, err);
	if (rc < 0)
		return -1;
	slot = (uint32_t)rc;
	if (idx < 0) {
		idx = (int)b->n_pipe_prof++;
		snprintf(b->pipe_prof[idx].name, BNG_NAME_LEN, "%s", name);
		b->pipe_prof[idx].in_use = true;
	}
	b->pipe_prof[idx].p = a.p;
	b->pipe_prof[idx].sched_id = slot;
	if (b->n_down != 0) {
		/* Move the pipes of this profile's subscribers to the new slot. */
		struct bng_pipe_cfg *c = malloc(sizeof(*c) * (b->n_subs + 1));
		uint32_t n = 0;

		if (c == NULL)
			return ep_err_set(err, "out of memory");
		for (uint32_t id = 1; id <= b->p.max_subscribers && n < b->n_subs; id++) {
			const struct bng_sub *s = b->subs[id];

			if (s != NULL && s->pipe_prof == idx)
				c[n++] = (struct bng_pipe_cfg){ s->subport, s->pipe, slot };
		}
		rc = n != 0 ? bng_hqos_pipes_config(b, c, n, err) : 0;
		free(c);
		return rc;
	}
	return 0;
}

/* ---- subports ---- */

struct subport_args { struct rte_sched_subport_profile_params p; uint64_t pipes; bool has_rate,
		      has_tc, has_tb, tc_ov; };

static int
subport_kv(void *arg, const char *k, const char *v, struct ep_err *err)
{
	struct subport_args *a = arg;
	int rc = tb_kv(k, v, &a->p.tb_rate, &a->p.tb_size, a->p.tc_rate, &a->p.tc_period,
		       &a->has_rate, &a->has_tb, &a->has_tc, err);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (strcmp(k, "pipes") == 0) {
		/* rte_sched enables a power of two pipes per subport. */
		if (bng_parse_size(v, &a->pipes) < 0 || a->pipes == 0 || a->pipes > 65536 ||
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

int
bng_subport_set(struct bng *b, uint32_t id, const char *spec, struct ep_err *err)
{
	struct subport_args a = { .p = { .tc_period = 10 }, .pipes = 4096 };
	char what[32];
	struct bng_subport *sp;

	if (id >= BNG_MAX_SUBPORTS)
		return ep_err_set(err, "subport %u: ids are 0-%d", id, BNG_MAX_SUBPORTS - 1);
	if (b->n_down != 0)
		return ep_err_set(err, "subport %u: subports are fixed once downlink workers run", id);
	if (b->subport[id].in_use)
		return ep_err_set(err, "subport %u: given twice", id);
	if (each_kv(spec, subport_kv, &a, err) < 0)
		return -1;
	if (!a.has_rate)
		a.p.tb_rate = b->p.hqos_rate;
	snprintf(what, sizeof(what), "subport %u", id);
	if (tb_finish(b, a.p.tb_rate, &a.p.tb_size, a.p.tc_rate, a.has_tb, a.has_tc, what,
		      err) < 0)
		return -1;
	sp = &b->subport[id];
	sp->pipe_free = rte_malloc("ep_bng_pipes", sizeof(uint32_t) * a.pipes, 0);
	if (sp->pipe_free == NULL)
		return ep_err_set(err, "subport %u: out of memory", id);
	sp->n_pipes = (uint32_t)a.pipes;
	sp->n_free = 0;
	for (uint32_t i = sp->n_pipes; i > 0; i--)
		sp->pipe_free[sp->n_free++] = i - 1;
	sp->prof = a.p;
	sp->tc_ov = a.tc_ov;
	sp->in_use = true;
	if (id >= b->n_subports)
		b->n_subports = id + 1;
	if (rte_align32pow2(sp->n_pipes) > b->max_pipes)
		b->max_pipes = rte_align32pow2(sp->n_pipes);
	return 0;
}

/* ---- DSCP -> traffic class ---- */

#define TCQ(tc, q) ((uint8_t)((tc) << 2 | (q)))

void
bng_dscp_map_default(uint8_t map[64])
{
	for (int d = 0; d < 64; d++)
		map[d] = TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 0);
	map[46] = TCQ(0, 0);                 /* EF: the highest priority */
	map[44] = TCQ(0, 0);                 /* VOICE-ADMIT */
	map[48] = map[56] = TCQ(1, 0);       /* CS6, CS7: network control */
	map[40] = TCQ(2, 0);                 /* CS5 */
	map[34] = map[36] = map[38] = TCQ(3, 0); map[32] = TCQ(4, 0);   /* AF4x, CS4 */
	map[26] = map[28] = map[30] = TCQ(5, 0); map[24] = TCQ(6, 0);   /* AF3x, CS3 */
	map[18] = map[20] = map[22] = TCQ(7, 0); map[16] = TCQ(8, 0);   /* AF2x, CS2 */
	map[10] = map[12] = map[14] = TCQ(9, 0);                        /* AF1x */
	map[8] = TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 3);  /* CS1: lower effort */
	map[1] = TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 3);  /* LE (RFC 8622) */
}

static int
dscp_value(const char *s)
{
	static const struct { const char *n; int v; } names[] = {
		{ "be", 0 }, { "default", 0 }, { "ef", 46 }, { "va", 44 }, { "le", 1 },
		{ "cs0", 0 }, { "cs1", 8 }, { "cs2", 16 }, { "cs3", 24 }, { "cs4", 32 },
		{ "cs5", 40 }, { "cs6", 48 }, { "cs7", 56 },
	};
	uint64_t v;

	for (size_t i = 0; i < RTE_DIM(names); i++)
		if (strcasecmp(s, names[i].n) == 0)
			return names[i].v;
	if ((s[0] == 'a' || s[0] == 'A') && (s[1] == 'f' || s[1] == 'F') && s[2] >= '1' &&
	    s[2] <= '4' && s[3] >= '1' && s[3] <= '3' && s[4] == '\0')
		return (s[2] - '0') * 8 + (s[3] - '0') * 2;
	if (ep_parse_u64(s, 0, 63, &v, NULL) < 0)
		return -1;
	return (int)v;
}

int
bng_dscp_map_parse(uint8_t map[64], const char *spec, struct ep_err *err)
{
	char buf[1024], *save = NULL;

	if (strlen(spec) >= sizeof(buf))
		return ep_err_set(err, "too long");
	strcpy(buf, spec);
	for (char *t = strtok_r(buf, " \t,", &save); t != NULL; t = strtok_r(NULL, " \t,", &save)) {
		char *colon = strchr(t, ':'), *dot;
		uint64_t tc, q = 0;
		int d;

		if (colon == NULL)
			return ep_err_set(err, "'%s' is not <dscp>:<tc>[.<queue>]", t);
		*colon = '\0';
		d = dscp_value(t);
		if (d < 0)
			return ep_err_set(err, "'%s' is not a DSCP (0-63, ef, afXY, csN, be, le, va)",
					  t);
		dot = strchr(colon + 1, '.');
		if (dot != NULL)
			*dot = '\0';
		if (ep_parse_u64(colon + 1, 0, RTE_SCHED_TRAFFIC_CLASS_BE, &tc, NULL) < 0)
			return ep_err_set(err, "'%s': traffic class must be 0-%d", colon + 1,
					  RTE_SCHED_TRAFFIC_CLASS_BE);
		if (dot != NULL) {
			if (ep_parse_u64(dot + 1, 0, RTE_SCHED_BE_QUEUES_PER_PIPE - 1, &q, NULL) < 0 ||
			    tc != RTE_SCHED_TRAFFIC_CLASS_BE)
				return ep_err_set(err, "'%s': only traffic class %d has queues 0-%d",
						  colon + 1, RTE_SCHED_TRAFFIC_CLASS_BE,
						  RTE_SCHED_BE_QUEUES_PER_PIPE - 1);
		}
		map[d] = TCQ(tc, q);
	}
	return 0;
}
