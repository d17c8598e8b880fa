/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Policy on terminated traffic: per-flow classification to a priority, a
 * rate limit, a drop, or a redirect to a central node.
 *
 *   policy = <name> [dir=rx|tx|both] [remote=<prefix>] [local=<prefix>]
 *                   [rport=<n>[-<m>]] [lport=<n>[-<m>]] [dscp=<0-63>]
 *                   [priority=<0-7>] [rate=<bits/s>[k|M|G]] [burst=<bytes>[k|M]]
 *                   [redirect=<ip>] [action=drop]
 *
 * Fields name the flow as the socket sees it (remote peer, local address),
 * so one rule reads the same on the receive and the send path.  Rules are
 * ordered: the first that matches decides.  Classification is rte_acl, one
 * context per family and direction, one call per burst; the rule set is
 * built aside and published whole (double-buffered, ep_rcu.h), so a change
 * never disturbs a flow it does not touch.  Rate limits are rte_meter
 * srTCM (RFC 2697) with EBS 0 (green passes, red is dropped), one per rule
 * and direction per worker; a rule keeps its meter (slot) across changes
 * of other rules, and keeps its bucket unless its own rate changes.
 *
 * Priority acts twice: on the send path, sockets are served highest
 * priority first (hs_tx.c); on the receive path, a datagram below
 * shed_priority is refused once its socket's ring is above
 * shed_watermark_pct, keeping the last quarter for the flows that matter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_acl.h>
#include <rte_cycles.h>
#include <rte_meter.h>

#include "ep_rcu.h"
#include "hoststack.h"

/* Classification keys.  rte_acl reads the first field as one byte and
 * every later group (input_index) as one word of 4 bytes that its fields
 * must fill, so the DSCP byte shares its word with two match-anything
 * padding fields. */
struct key4 {
	uint8_t proto, pad0[3];
	uint8_t remote[4], local[4];
	uint16_t rport, lport;          /* network order */
	uint8_t dscp, pad1[3];
} __attribute__((packed));

struct key6 {
	uint8_t proto, pad0[3];
	uint8_t remote[16], local[16];
	uint16_t rport, lport;
	uint8_t dscp, pad1[3];
} __attribute__((packed));

static void
field(struct rte_acl_field_def *d, int *n, uint8_t type, uint8_t size, int input, uint32_t off)
{
	d[*n] = (struct rte_acl_field_def){ .type = type, .size = size, .field_index = (uint8_t)*n,
					    .input_index = (uint8_t)input, .offset = off };
	(*n)++;
}

/* Field order: proto, remote (1 or 4 words), local, rport, lport, dscp, 2 x pad. */
static int
fields(uint8_t family, struct rte_acl_field_def *d)
{
	int n = 0, w = family == 4 ? 1 : 4, input = 1;
	uint32_t off_r = family == 4 ? offsetof(struct key4, remote) : offsetof(struct key6, remote);
	uint32_t off_l = family == 4 ? offsetof(struct key4, local) : offsetof(struct key6, local);
	uint32_t off_p = family == 4 ? offsetof(struct key4, rport) : offsetof(struct key6, rport);
	uint32_t off_d = family == 4 ? offsetof(struct key4, dscp) : offsetof(struct key6, dscp);

	field(d, &n, RTE_ACL_FIELD_TYPE_BITMASK, 1, 0, 0);
	for (int i = 0; i < w; i++)
		field(d, &n, RTE_ACL_FIELD_TYPE_MASK, 4, input++, off_r + 4u * (uint32_t)i);
	for (int i = 0; i < w; i++)
		field(d, &n, RTE_ACL_FIELD_TYPE_MASK, 4, input++, off_l + 4u * (uint32_t)i);
	field(d, &n, RTE_ACL_FIELD_TYPE_RANGE, 2, input, off_p);
	field(d, &n, RTE_ACL_FIELD_TYPE_RANGE, 2, input++, off_p + 2);
	field(d, &n, RTE_ACL_FIELD_TYPE_BITMASK, 1, input, off_d);
	field(d, &n, RTE_ACL_FIELD_TYPE_BITMASK, 1, input, off_d + 1);
	field(d, &n, RTE_ACL_FIELD_TYPE_BITMASK, 2, input, off_d + 2);
	return n;
}

RTE_ACL_RULE_DEF(hs_acl_rule, 1 + 8 + 2 + 3);

/* A prefix as rte_acl MASK fields: one 32-bit word per field, host order. */
static void
prefix_fields(struct rte_acl_field *f, uint8_t family, const struct hs_ip *ip, uint8_t plen)
{
	int w = family == 4 ? 1 : 4;

	for (int i = 0; i < w; i++) {
		uint32_t v;
		int bits = (int)plen - 32 * i;

		memcpy(&v, ip->b + 4 * i, 4);
		f[i].value.u32 = rte_be_to_cpu_32(v);
		f[i].mask_range.u32 = bits >= 32 ? 32 : bits <= 0 ? 0 : (uint32_t)bits;
	}
}

static struct rte_acl_ctx *
build_ctx(const struct hs_policy_rule *rules, uint32_t n, uint8_t family, enum hs_dir dir,
	  uint32_t gen, struct ep_err *err)
{
	struct rte_acl_config cfg = { .num_categories = 1 };
	struct rte_acl_ctx *ctx;
	char name[RTE_ACL_NAMESIZE];
	uint32_t used = 0;
	int nf;

	nf = fields(family, cfg.defs);
	cfg.num_fields = (uint32_t)nf;
	snprintf(name, sizeof(name), "hs_pol%u_%u_%u", family, dir, gen);
	ctx = rte_acl_create(&(struct rte_acl_param){ .name = name, .socket_id = SOCKET_ID_ANY,
		.rule_size = RTE_ACL_RULE_SZ(nf), .max_rule_num = n + 1 });
	if (ctx == NULL) {
		ep_err_set(err, "rte_acl_create failed");
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct hs_policy_rule *r = &rules[i];
		struct hs_acl_rule ar;
		int w = family == 4 ? 1 : 4;

		if ((r->dir & dir) == 0 || (r->family != 0 && r->family != family))
			continue;
		memset(&ar, 0, sizeof(ar));
		ar.data.category_mask = 1;
		ar.data.priority = (int32_t)(n - i);    /* earlier rules win */
		ar.data.userdata = i + 1;
		ar.field[0].value.u8 = IPPROTO_UDP;
		ar.field[0].mask_range.u8 = 0xff;
		prefix_fields(&ar.field[1], family, &r->src, r->family ? r->src_plen : 0);
		prefix_fields(&ar.field[1 + w], family, &r->dst, r->family ? r->dst_plen : 0);
		ar.field[1 + 2 * w].value.u16 = r->sport_lo;
		ar.field[1 + 2 * w].mask_range.u16 = r->sport_hi;
		ar.field[2 + 2 * w].value.u16 = r->dport_lo;
		ar.field[2 + 2 * w].mask_range.u16 = r->dport_hi;
		if (r->dscp >= 0) {
			ar.field[3 + 2 * w].value.u8 = (uint8_t)r->dscp;
			ar.field[3 + 2 * w].mask_range.u8 = 0x3f;
		}
		if (rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&ar, 1) < 0) {
			rte_acl_free(ctx);
			ep_err_set(err, "rule %s: rte_acl_add_rules failed", r->name);
			return NULL;
		}
		used++;
	}
	if (used == 0) {
		rte_acl_free(ctx);
		return NULL;
	}
	if (rte_acl_build(ctx, &cfg) != 0) {
		rte_acl_free(ctx);
		ep_err_set(err, "rte_acl_build failed");
		return NULL;
	}
	return ctx;
}

void
hs_policy_free(struct hs_policy *p)
{
	if (p == NULL)
		return;
	rte_acl_free(p->ctx4);
	rte_acl_free(p->ctx6);
	rte_acl_free(p->ctx4_tx);
	rte_acl_free(p->ctx6_tx);
	free(p);
}

static uint32_t build_gen;

int
hs_policy_commit(struct hs_stack *s, const struct hs_policy_rule *rules, uint32_t n,
		 struct ep_err *err)
{
	struct hs_policy *np = calloc(1, sizeof(*np) + sizeof(rules[0]) * (n ? n : 1)), *old;
	uint8_t used[HS_POLICY_SLOTS] = { 0 };
	uint32_t gen = ++build_gen;

	if (np == NULL)
		return ep_err_set(err, "out of memory");
	np->n = n;
	memcpy(np->rules, rules, sizeof(rules[0]) * n);
	/* Slots: a rule that exists by name keeps its meter; its bucket is
	 * reset only if its own rate or burst changed (mgen). */
	for (uint32_t i = 0; i < n; i++) {
		struct hs_policy_rule *r = &np->rules[i];
		const struct hs_policy_rule *prev = NULL;

		for (uint32_t j = 0; j < s->n_prules; j++)
			if (strcmp(s->prules[j].name, r->name) == 0)
				prev = &s->prules[j];
		if (prev != NULL) {
			r->slot = prev->slot;
			r->mgen = (prev->rate_bps == r->rate_bps && prev->burst_bytes == r->burst_bytes) ?
				  prev->mgen : ++s->slot_gen[r->slot];
			used[r->slot] = 1;
		} else {
			r->slot = UINT32_MAX;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct hs_policy_rule *r = &np->rules[i];

		if (r->slot != UINT32_MAX)
			continue;
		for (uint32_t sl = 0; sl < HS_POLICY_SLOTS; sl++)
			if (!used[sl]) {
				used[sl] = 1;
				r->slot = sl;
				r->mgen = ++s->slot_gen[sl];
				break;
			}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct hs_policy_rule *r = &np->rules[i];

		if (r->has_rate && rte_meter_srtcm_profile_config(&r->prof,
				&(struct rte_meter_srtcm_params){ .cir = r->rate_bps / 8,
					.cbs = r->burst_bytes, .ebs = 0 }) != 0) {
			hs_policy_free(np);
			return ep_err_set(err, "rule %s: rate %llu bit/s, burst %llu: rejected by "
					  "rte_meter", r->name, (unsigned long long)r->rate_bps,
					  (unsigned long long)r->burst_bytes);
		}
	}
	if (n != 0) {
		struct ep_err berr = { "" };

		/* NULL without an error: no rule of that family and direction. */
		np->ctx4 = build_ctx(np->rules, n, 4, HS_DIR_RX, gen, &berr);
		np->ctx6 = build_ctx(np->rules, n, 6, HS_DIR_RX, gen, &berr);
		np->ctx4_tx = build_ctx(np->rules, n, 4, HS_DIR_TX, gen, &berr);
		np->ctx6_tx = build_ctx(np->rules, n, 6, HS_DIR_TX, gen, &berr);
		if (berr.msg[0] != '\0') {
			hs_policy_free(np);
			return ep_err_set(err, "%s", berr.msg);
		}
	}
	old = s->policy;
	ep_rcu_publish(&s->policy, np);
	memcpy(s->prules, np->rules, sizeof(rules[0]) * n);
	s->n_prules = n;
	if (old != NULL) {
		ep_rcu_synchronize(s->e);
		hs_policy_free(old);
	}
	return 0;
}

void
hs_policy_classify(const struct hs_policy *p, enum hs_dir dir, const struct hs_flow *f,
		   uint32_t n, uint32_t *res)
{
	struct rte_acl_ctx *c4 = dir == HS_DIR_RX ? p->ctx4 : p->ctx4_tx;
	struct rte_acl_ctx *c6 = dir == HS_DIR_RX ? p->ctx6 : p->ctx6_tx;
	struct key4 k4[EP_BURST_MAX];
	struct key6 k6[EP_BURST_MAX];
	const uint8_t *d4[EP_BURST_MAX], *d6[EP_BURST_MAX];
	uint32_t r4[EP_BURST_MAX], r6[EP_BURST_MAX], i4[EP_BURST_MAX], i6[EP_BURST_MAX];
	uint32_t n4 = 0, n6 = 0;

	for (uint32_t i = 0; i < n && i < EP_BURST_MAX; i++) {
		if (f[i].family == 4 && c4 != NULL) {
			struct key4 *k = &k4[n4];

			k->proto = f[i].proto;
			k->dscp = f[i].dscp;
			memcpy(k->remote, f[i].remote.b, 4);
			memcpy(k->local, f[i].local.b, 4);
			k->rport = rte_cpu_to_be_16(f[i].rport);
			k->lport = rte_cpu_to_be_16(f[i].lport);
			d4[n4] = (const uint8_t *)k;
			i4[n4++] = i;
		} else if (f[i].family == 6 && c6 != NULL) {
			struct key6 *k = &k6[n6];

			k->proto = f[i].proto;
			k->dscp = f[i].dscp;
			memcpy(k->remote, f[i].remote.b, 16);
			memcpy(k->local, f[i].local.b, 16);
			k->rport = rte_cpu_to_be_16(f[i].rport);
			k->lport = rte_cpu_to_be_16(f[i].lport);
			d6[n6] = (const uint8_t *)k;
			i6[n6++] = i;
		}
	}
	if (n4 != 0 && rte_acl_classify(c4, d4, r4, n4, 1) == 0)
		for (uint32_t i = 0; i < n4; i++)
			res[i4[i]] = r4[i];
	if (n6 != 0 && rte_acl_classify(c6, d6, r6, n6, 1) == 0)
		for (uint32_t i = 0; i < n6; i++)
			res[i6[i]] = r6[i];
}

bool
hs_policy_meter(struct hs_wctx *c, const struct hs_policy_rule *r, enum hs_dir dir,
		uint32_t bytes, uint64_t now)
{
	int d = dir == HS_DIR_RX ? 0 : 1;

	if (!r->has_rate)
		return true;
	{
	/* rte_meter takes the (read-only) profile through a non-const pointer. */
	struct rte_meter_srtcm_profile *prof = (struct rte_meter_srtcm_profile *)(uintptr_t)&r->prof;

	if (c->meter_gen[r->slot] != r->mgen) {
		rte_meter_srtcm_config(&c->meter[0][r->slot], prof);
		rte_meter_srtcm_config(&c->meter[1][r->slot], prof);
		c->meter_gen[r->slot] = r->mgen;
	}
	return rte_meter_srtcm_color_blind_check(&c->meter[d][r->slot], prof, now,
						 bytes) == RTE_COLOR_GREEN;
	}
}

/* ---- text ---- */

static int
parse_range(const char *v, uint16_t *lo, uint16_t *hi)
{
	unsigned int a, b;
	char extra[4];

	if (sscanf(v, "%u-%u%3s", &a, &b, extra) == 2 && a <= b && b <= 65535) {
		*lo = (uint16_t)a;
		*hi = (uint16_t)b;
		return 0;
	}
	if (sscanf(v, "%u%3s", &a, extra) == 1 && a <= 65535) {
		*lo = *hi = (uint16_t)a;
		return 0;
	}
	return -1;
}

static int
parse_scaled(const char *v, uint64_t unit, uint64_t *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || x < 0)
		return -1;
	if (*end == 'k' || *end == 'K')
		x *= (double)unit, end++;
	else if (*end == 'M')
		x *= (double)unit * unit, end++;
	else if (*end == 'G')
		x *= (double)unit * unit * unit, end++;
	if (*end != '\0' || x > 1e15)
		return -1;
	*out = (uint64_t)x;
	return 0;
}

int
hs_policy_parse(const char *text, struct hs_policy_rule *r, struct ep_err *err)
{
	char buf[512], *tok, *save = NULL;
	bool first = true;

	memset(r, 0, sizeof(*r));
	r->dir = HS_DIR_BOTH;
	r->dscp = -1;
	r->sport_hi = r->dport_hi = 65535;
	if (strlen(text) >= sizeof(buf))
		return ep_err_set(err, "rule longer than %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(tok, '='), *v;
		struct hs_ip ip;
		uint8_t plen;
		int fam;

		if (first) {
			if (eq != NULL || strlen(tok) >= sizeof(r->name))
				return ep_err_set(err, "a rule starts with its name (up to %zu characters)",
						  sizeof(r->name) - 1);
			snprintf(r->name, sizeof(r->name), "%s", tok);
			first = false;
			continue;
		}
		if (eq == NULL)
			return ep_err_set(err, "'%s' is not key=value", tok);
		*eq = '\0';
		v = eq + 1;
		if (strcmp(tok, "dir") == 0) {
			if (strcmp(v, "rx") == 0)
				r->dir = HS_DIR_RX;
			else if (strcmp(v, "tx") == 0)
				r->dir = HS_DIR_TX;
			else if (strcmp(v, "both") == 0)
				r->dir = HS_DIR_BOTH;
			else
				return ep_err_set(err, "dir: '%s' is not rx, tx or both", v);
		} else if (strcmp(tok, "remote") == 0 || strcmp(tok, "local") == 0) {
			fam = hs_parse_prefix(v, &ip, &plen, err);
			if (fam < 0)
				return -1;
			if (r->family != 0 && r->family != fam)
				return ep_err_set(err, "remote and local are of different families");
			r->family = (uint8_t)fam;
			if (tok[0] == 'r') {
				r->src = ip;
				r->src_plen = plen;
			} else {
				r->dst = ip;
				r->dst_plen = plen;
			}
		} else if (strcmp(tok, "rport") == 0) {
			if (parse_range(v, &r->sport_lo, &r->sport_hi) < 0)
				return ep_err_set(err, "rport: '%s' is not a port or lo-hi", v);
		} else if (strcmp(tok, "lport") == 0) {
			if (parse_range(v, &r->dport_lo, &r->dport_hi) < 0)
				return ep_err_set(err, "lport: '%s' is not a port or lo-hi", v);
		} else if (strcmp(tok, "dscp") == 0) {
			char *end;
			long d = strtol(v, &end, 0);

			if (*end != '\0' || d < 0 || d > 63)
				return ep_err_set(err, "dscp: '%s' is not 0-63", v);
			r->dscp = (int16_t)d;
		} else if (strcmp(tok, "priority") == 0) {
			char *end;
			long p = strtol(v, &end, 10);

			if (*end != '\0' || p < 0 || p > 7)
				return ep_err_set(err, "priority: '%s' is not 0-7", v);
			r->priority = (uint8_t)p;
		} else if (strcmp(tok, "rate") == 0) {
			if (parse_scaled(v, 1000, &r->rate_bps) < 0 || r->rate_bps < 8)
				return ep_err_set(err, "rate: '%s' is not bits/s (k, M, G)", v);
			r->has_rate = true;
		} else if (strcmp(tok, "burst") == 0) {
			if (parse_scaled(v, 1024, &r->burst_bytes) < 0 || r->burst_bytes == 0 ||
			    r->burst_bytes > UINT32_MAX)
				return ep_err_set(err, "burst: '%s' is not bytes (k, M)", v);
		} else if (strcmp(tok, "redirect") == 0) {
			fam = hs_parse_ip(v, &r->redirect_to);
			if (fam == 0)
				return ep_err_set(err, "redirect: '%s' is not an IP address", v);
			r->redirect = true;
			r->redirect_family = (uint8_t)fam;
		} else if (strcmp(tok, "action") == 0) {
			if (strcmp(v, "drop") != 0)
				return ep_err_set(err, "action: '%s' (only drop)", v);
			r->drop = true;
		} else {
			return ep_err_set(err, "unknown key '%s'", tok);
		}
	}
	if (first)
		return ep_err_set(err, "empty rule");
	if (r->redirect) {
		if (r->dir == HS_DIR_TX)
			return ep_err_set(err, "redirect applies to received traffic: not with dir=tx");
		r->dir = HS_DIR_RX;
		if (r->family != 0 && r->family != r->redirect_family)
			return ep_err_set(err, "redirect to IPv%u for an IPv%u rule",
					  r->redirect_family, r->family);
		r->family = r->redirect_family;
	}
	if (r->has_rate && r->burst_bytes == 0)
		/* Default burst: 10 ms at the rate, at least one 64 KiB datagram. */
		r->burst_bytes = RTE_MAX(r->rate_bps / 8 / 100, (uint64_t)65536);
	if (r->burst_bytes != 0 && !r->has_rate)
		return ep_err_set(err, "burst without rate");
	return 0;
}

void
hs_policy_format(const struct hs_policy_rule *r, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];
	size_t o = 0;

#define PUT(...) (o += (size_t)snprintf(buf + o, o < n ? n - o : 0, __VA_ARGS__))
	PUT("%s", r->name);
	if (r->dir != HS_DIR_BOTH)
		PUT(" dir=%s", r->dir == HS_DIR_RX ? "rx" : "tx");
	if (r->family != 0 && r->src_plen != 0)
		PUT(" remote=%s/%u", hs_ip_str(r->family, &r->src, a, sizeof(a)), r->src_plen);
	if (r->family != 0 && r->dst_plen != 0)
		PUT(" local=%s/%u", hs_ip_str(r->family, &r->dst, a, sizeof(a)), r->dst_plen);
	if (r->sport_lo != 0 || r->sport_hi != 65535)
		PUT(r->sport_lo == r->sport_hi ? " rport=%u" : " rport=%u-%u", r->sport_lo,
		    r->sport_hi);
	if (r->dport_lo != 0 || r->dport_hi != 65535)
		PUT(r->dport_lo == r->dport_hi ? " lport=%u" : " lport=%u-%u", r->dport_lo,
		    r->dport_hi);
	if (r->dscp >= 0)
		PUT(" dscp=%d", r->dscp);
	if (r->priority != 0)
		PUT(" priority=%u", r->priority);
	if (r->has_rate)
		PUT(" rate=%llu burst=%llu", (unsigned long long)r->rate_bps,
		    (unsigned long long)r->burst_bytes);
	if (r->redirect)
		PUT(" redirect=%s", hs_ip_str(r->redirect_family, &r->redirect_to, a, sizeof(a)));
	if (r->drop)
		PUT(" action=drop");
#undef PUT
}

int
hs_policy_add(struct hs_stack *s, const char *text, int64_t index, struct ep_err *err)
{
	struct hs_policy_rule r, *all;
	uint32_t n = s->n_prules;
	int rc;

	if (hs_policy_parse(text, &r, err) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(s->prules[i].name, r.name) == 0)
			return ep_err_set(err, "a rule named '%s' exists (delete it first)", r.name);
	if (n == HS_MAX_POLICY)
		return ep_err_set(err, "more than %d rules", HS_MAX_POLICY);
	if (index < 0 || index > (int64_t)n)
		index = n;
	all = malloc(sizeof(*all) * (n + 1));
	if (all == NULL)
		return ep_err_set(err, "out of memory");
	memcpy(all, s->prules, sizeof(*all) * (size_t)index);
	all[index] = r;
	memcpy(all + index + 1, s->prules + index, sizeof(*all) * (n - (size_t)index));
	rc = hs_policy_commit(s, all, n + 1, err);
	free(all);
	return rc;
}

int
hs_policy_del(struct hs_stack *s, const char *name, struct ep_err *err)
{
	struct hs_policy_rule *all;
	uint32_t n = s->n_prules, k = 0;
	int rc;

	all = malloc(sizeof(*all) * (n ? n : 1));
	if (all == NULL)
		return ep_err_set(err, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(s->prules[i].name, name) != 0)
			all[k++] = s->prules[i];
	if (k == n) {
		free(all);
		return ep_err_set(err, "no rule named '%s'", name);
	}
	rc = hs_policy_commit(s, all, k, err);
	free(all);
	return rc;
}
