/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ACL: rule text, rte_acl contexts, and the double-buffered swap.
 *
 * Rules are an ordered list, first match wins, as an operator writes them.
 * rte_acl picks the highest priority among matches, so rule i of n gets
 * priority n - i, and its userdata is i + 1 (0 means "no rule matched" and
 * selects the default action).
 *
 * A rule set is immutable once built: a change copies the list, builds new
 * IPv4 and IPv6 contexts aside (this is what can fail: bad rule, no memory),
 * publishes the new set with one pointer store, waits for a grace period and
 * frees the old contexts.  A worker uses one set for a whole burst.
 *
 * Classification input, in network order as rte_acl expects (rule values
 * are in host order).  The field layout is the packet's own, counted from
 * the protocol byte, the layout DPDK's ACL guide and l3fwd-acl use: a 1-byte
 * first field, then 4-byte input groups:
 *
 *   IPv4  base = &ip->next_proto_id: proto @0, src @3, dst @7, sport @11, dport @13
 *   IPv6  base = &ip6->proto:        proto @0, src @2 (4 x 4 bytes),
 *                                    dst @18 (4 x 4), sport @34, dport @36
 *
 * so for the common packet (IPv4 without options or IPv6 without extension
 * headers, TCP or UDP with its header present) the acl stage hands rte_acl a
 * pointer into the frame: no key is built, no extra cache line is touched.
 * Every other packet gets a key with the same layout in the worker's scratch
 * array: IPv4 options and extension headers move the ports, and packets
 * without ports (ICMP, other protocols, non-first fragments) must present
 * sport = dport = 0, so a rule with a port range that does not include 0
 * never matches them; first fragments carry their ports.
 *
 * rte_acl picks its classify method at rte_acl_create: on an AVX-512 CPU
 * with the EAL's default SIMD width (256 bits) that is AVX512X16.
 * AVX512X32 (needs --force-max-simd-bitwidth=512) measured within noise of
 * it (test_router_cycles, 1000 rules), AVX2 about 10 % slower, so the
 * library's choice is the default; `acl_classify = <method>` overrides it
 * (test_bng_cycles prints the uplink's acl stage under each).  One
 * category: first match only.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_ip.h>
#include <rte_malloc.h>

#include "ep_rcu.h"
#include "router.h"

enum { F_PROTO, F_SRC, F_DST, F_SPORT, F_DPORT, NF4 };
enum { F6_PROTO, F6_SRC0, F6_DST0 = F6_SRC0 + 4, F6_SPORT = F6_DST0 + 4, F6_DPORT, NF6 };

RTE_ACL_RULE_DEF(acl4_rule, NF4);
RTE_ACL_RULE_DEF(acl6_rule, NF6);

/* Offsets from the protocol byte (see above); the key structs in router.h
 * have the same layout. */
#define O4_SRC   3
#define O4_DST   7
#define O4_PORTS 11
#define O6_SRC   2
#define O6_DST   18
#define O6_PORTS 34

static const struct rte_acl_field_def defs4[NF4] = {
	{ .type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1, .field_index = F_PROTO,
	  .input_index = 0, .offset = 0 },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_SRC,
	  .input_index = 1, .offset = O4_SRC },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_DST,
	  .input_index = 2, .offset = O4_DST },
	{ .type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_SPORT,
	  .input_index = 3, .offset = O4_PORTS },
	{ .type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_DPORT,
	  .input_index = 3, .offset = O4_PORTS + 2 },
};

/* The packet layout and the scratch keys' layout must agree. */
_Static_assert(offsetof(struct rte_ipv4_hdr, src_addr) -
	       offsetof(struct rte_ipv4_hdr, next_proto_id) == O4_SRC, "v4 src");
_Static_assert(sizeof(struct rte_ipv4_hdr) -
	       offsetof(struct rte_ipv4_hdr, next_proto_id) == O4_PORTS, "v4 ports");
_Static_assert(offsetof(struct rte_ipv6_hdr, src_addr) -
	       offsetof(struct rte_ipv6_hdr, proto) == O6_SRC, "v6 src");
_Static_assert(sizeof(struct rte_ipv6_hdr) -
	       offsetof(struct rte_ipv6_hdr, proto) == O6_PORTS, "v6 ports");
_Static_assert(offsetof(struct router_acl_key4, src) == O4_SRC &&
	       offsetof(struct router_acl_key4, dst) == O4_DST &&
	       offsetof(struct router_acl_key4, sport) == O4_PORTS, "key4 layout");
_Static_assert(offsetof(struct router_acl_key6, src) == O6_SRC &&
	       offsetof(struct router_acl_key6, dst) == O6_DST &&
	       offsetof(struct router_acl_key6, sport) == O6_PORTS, "key6 layout");

static struct rte_acl_field_def defs6[NF6];

static void __attribute__((constructor))
defs6_init(void)
{
	defs6[F6_PROTO] = (struct rte_acl_field_def){ .type = RTE_ACL_FIELD_TYPE_BITMASK,
		.size = 1, .field_index = F6_PROTO, .input_index = 0, .offset = 0 };
	for (int i = 0; i < 8; i++)
		defs6[F6_SRC0 + i] = (struct rte_acl_field_def){ .type = RTE_ACL_FIELD_TYPE_MASK,
			.size = 4, .field_index = (uint8_t)(F6_SRC0 + i),
			.input_index = (uint8_t)(1 + i), .offset = (uint32_t)(O6_SRC + 4 * i) };
	defs6[F6_SPORT] = (struct rte_acl_field_def){ .type = RTE_ACL_FIELD_TYPE_RANGE,
		.size = 2, .field_index = F6_SPORT, .input_index = 9, .offset = O6_PORTS };
	defs6[F6_DPORT] = (struct rte_acl_field_def){ .type = RTE_ACL_FIELD_TYPE_RANGE,
		.size = 2, .field_index = F6_DPORT, .input_index = 9, .offset = O6_PORTS + 2 };
}

/* ---- rule text ---- */

static int
parse_ports(const char *s, uint16_t *lo, uint16_t *hi)
{
	char buf[16], *dash;
	uint64_t a, b;

	if (s == NULL || snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return -1;
	dash = strchr(buf, '-');
	if (dash != NULL)
		*dash = '\0';
	if (ep_parse_u64(buf, 0, 65535, &a, NULL) < 0 ||
	    ep_parse_u64(dash != NULL ? dash + 1 : buf, a, 65535, &b, NULL) < 0)
		return -1;
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

int
router_acl_parse(const char *text, struct router_acl_rule *rule, struct ep_err *err)
{
	char buf[512], *save = NULL, *tok, *val;
	bool seen[5] = {false};
	static const char *const kw[5] = {"proto", "src", "dst", "sport", "dport"};

	memset(rule, 0, sizeof(*rule));
	rule->any_proto = true;
	rule->sport_hi = rule->dport_hi = 65535;
	if (text == NULL || strlen(text) >= sizeof(buf))
		return ep_err_set(err, "rule: missing or longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, text);
	tok = strtok_r(buf, " \t", &save);
	if (tok != NULL && strcmp(tok, "deny") == 0)
		rule->deny = true;
	else if (tok == NULL || strcmp(tok, "permit") != 0)
		return ep_err_set(err, "rule: '%s': must start with permit or deny", text);
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		int k;

		for (k = 0; k < 5 && strcmp(tok, kw[k]) != 0; k++)
			;
		if (k == 5)
			return ep_err_set(err, "rule: '%s': unknown word '%s' (expected proto, "
					  "src, dst, sport or dport)", text, tok);
		if (seen[k])
			return ep_err_set(err, "rule: '%s': %s given twice", text, tok);
		seen[k] = true;
		val = strtok_r(NULL, " \t", &save);
		if (val == NULL)
			return ep_err_set(err, "rule: '%s': %s needs a value", text, tok);
		if (k == 0) {
			uint64_t p;

			rule->any_proto = false;
			if (strcmp(val, "tcp") == 0)
				rule->proto = IPPROTO_TCP;
			else if (strcmp(val, "udp") == 0)
				rule->proto = IPPROTO_UDP;
			else if (strcmp(val, "icmp") == 0)
				rule->proto = IPPROTO_ICMP;
			else if (strcmp(val, "icmpv6") == 0)
				rule->proto = IPPROTO_ICMPV6;
			else if (strcmp(val, "any") == 0)
				rule->any_proto = true;
			else if (ep_parse_u64(val, 0, 255, &p, NULL) == 0)
				rule->proto = (uint8_t)p;
			else
				return ep_err_set(err, "rule: '%s': proto '%s' is not tcp, udp, icmp, "
						  "icmpv6 or 0-255", text, val);
		} else if (k == 1 || k == 2) {
			uint8_t *addr = k == 1 ? rule->src : rule->dst;
			uint8_t *plen = k == 1 ? &rule->src_plen : &rule->dst_plen;
			const char *why;
			int fam;

			if (strcmp(val, "any") == 0)
				continue;
			fam = router_parse_prefix(val, addr, plen, false, &why);
			if (fam == 0) {
				/* A bare address means the host. */
				fam = router_parse_ip(val, addr);
				*plen = fam == 4 ? 32 : 128;
			}
			if (fam == 0)
				return ep_err_set(err, "rule: '%s': %s '%s' %s", text, tok, val, why);
			if (rule->family != 0 && rule->family != fam)
				return ep_err_set(err, "rule: '%s': src and dst are different IP "
						  "versions", text);
			rule->family = (uint8_t)fam;
		} else {
			uint16_t *lo = k == 3 ? &rule->sport_lo : &rule->dport_lo;
			uint16_t *hi = k == 3 ? &rule->sport_hi : &rule->dport_hi;

			if (parse_ports(val, lo, hi) < 0)
				return ep_err_set(err, "rule: '%s': %s '%s' is not a port or a "
						  "range lo-hi within 0-65535", text, tok, val);
		}
	}
	if ((seen[3] || seen[4]) && !rule->any_proto && rule->proto != IPPROTO_TCP &&
	    rule->proto != IPPROTO_UDP)
		return ep_err_set(err, "rule: '%s': ports need proto tcp or udp", text);
	return 0;
}

void
router_acl_format(const struct router_acl_rule *r, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];
	size_t o = 0;

#define OUT(...) do { int w_ = snprintf(buf + o, o < n ? n - o : 0, __VA_ARGS__); \
		      if (w_ > 0) o += (size_t)w_; } while (0)
	OUT("%s", r->deny ? "deny" : "permit");
	if (!r->any_proto) {
		const char *name = r->proto == IPPROTO_TCP ? "tcp" : r->proto == IPPROTO_UDP ?
			"udp" : r->proto == IPPROTO_ICMP ? "icmp" :
			r->proto == IPPROTO_ICMPV6 ? "icmpv6" : NULL;

		if (name != NULL)
			OUT(" proto %s", name);
		else
			OUT(" proto %u", r->proto);
	}
	if (r->src_plen != 0)
		OUT(" src %s/%u", router_ip_str(r->family, r->src, a, sizeof(a)), r->src_plen);
	if (r->dst_plen != 0)
		OUT(" dst %s/%u", router_ip_str(r->family, r->dst, a, sizeof(a)), r->dst_plen);
	if (r->sport_lo != 0 || r->sport_hi != 65535)
		OUT(r->sport_lo == r->sport_hi ? " sport %u" : " sport %u-%u", r->sport_lo,
		    r->sport_hi);
	if (r->dport_lo != 0 || r->dport_hi != 65535)
		OUT(r->dport_lo == r->dport_hi ? " dport %u" : " dport %u-%u", r->dport_lo,
		    r->dport_hi);
#undef OUT
}

/* ---- contexts ---- */

/* A 32-bit MASK field for bits [32*i, 32*i+32) of a prefix. */
static void
mask_field(struct rte_acl_field *f, const uint8_t *addr, uint8_t plen, int i)
{
	uint32_t w;
	int bits = (int)plen - 32 * i;

	memcpy(&w, addr + 4 * i, 4);
	f->value.u32 = ntohl(w);
	f->mask_range.u32 = (uint32_t)(bits < 0 ? 0 : bits > 32 ? 32 : bits);
}

static void
rule_common(struct rte_acl_rule_data *d, struct rte_acl_field *proto, struct rte_acl_field *sp,
	    struct rte_acl_field *dp, const struct router_acl_rule *r, uint32_t i, uint32_t n)
{
	d->category_mask = 1;
	d->priority = (int32_t)(n - i);
	d->userdata = i + 1;
	proto->value.u8 = r->proto;
	proto->mask_range.u8 = r->any_proto ? 0 : 0xff;
	sp->value.u16 = r->sport_lo;
	sp->mask_range.u16 = r->sport_hi;
	dp->value.u16 = r->dport_lo;
	dp->mask_range.u16 = r->dport_hi;
}

static struct rte_acl_ctx *
build_ctx(int family, const struct router_acl_rule *rules, uint32_t n, uint32_t gen,
	  struct ep_err *err)
{
	uint32_t count = 0;
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_ctx *ctx;
	struct rte_acl_config cfg = { .num_categories = 1 };
	int rc;

	for (uint32_t i = 0; i < n; i++)
		count += rules[i].family == 0 || rules[i].family == family;
	if (count == 0)
		return NULL;
	/* rte_acl names are process-wide; gen is unique per build. */
	snprintf(name, sizeof(name), "ep_acl%d_%u", family, gen);
	ctx = rte_acl_create(&(struct rte_acl_param){ .name = name, .socket_id = SOCKET_ID_ANY,
		.rule_size = family == 4 ? RTE_ACL_RULE_SZ(NF4) : RTE_ACL_RULE_SZ(NF6),
		.max_rule_num = count });
	if (ctx == NULL) {
		ep_err_set(err, "acl: cannot create a context for %u rules", count);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct router_acl_rule *r = &rules[i];

		if (r->family != 0 && r->family != family)
			continue;
		if (family == 4) {
			struct acl4_rule a;

			memset(&a, 0, sizeof(a));
			rule_common(&a.data, &a.field[F_PROTO], &a.field[F_SPORT],
				    &a.field[F_DPORT], r, i, n);
			mask_field(&a.field[F_SRC], r->src, r->src_plen, 0);
			mask_field(&a.field[F_DST], r->dst, r->dst_plen, 0);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&a, 1);
		} else {
			struct acl6_rule a;

			memset(&a, 0, sizeof(a));
			rule_common(&a.data, &a.field[F6_PROTO], &a.field[F6_SPORT],
				    &a.field[F6_DPORT], r, i, n);
			for (int w = 0; w < 4; w++) {
				mask_field(&a.field[F6_SRC0 + w], r->src, r->src_plen, w);
				mask_field(&a.field[F6_DST0 + w], r->dst, r->dst_plen, w);
			}
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&a, 1);
		}
		if (rc != 0) {
			ep_err_set(err, "acl: adding rule %u failed: %s", i, strerror(-rc));
			rte_acl_free(ctx);
			return NULL;
		}
	}
	cfg.num_fields = family == 4 ? NF4 : NF6;
	memcpy(cfg.defs, family == 4 ? defs4 : defs6, sizeof(cfg.defs[0]) * cfg.num_fields);
	rc = rte_acl_build(ctx, &cfg);
	if (rc != 0) {
		ep_err_set(err, "acl: building the IPv%d context failed: %s", family,
			   strerror(-rc));
		rte_acl_free(ctx);
		return NULL;
	}
	return ctx;
}

static const struct { const char *name; enum rte_acl_classify_alg alg; } acl_algs[] = {
	{ "auto", RTE_ACL_CLASSIFY_DEFAULT },
	{ "avx512x32", RTE_ACL_CLASSIFY_AVX512X32 },
	{ "avx512x16", RTE_ACL_CLASSIFY_AVX512X16 },
	{ "avx2", RTE_ACL_CLASSIFY_AVX2 },
	{ "sse", RTE_ACL_CLASSIFY_SSE },
	{ "scalar", RTE_ACL_CLASSIFY_SCALAR },
};

int
router_acl_alg_parse(const char *name, enum rte_acl_classify_alg *alg)
{
	for (size_t i = 0; i < RTE_DIM(acl_algs); i++)
		if (strcmp(name, acl_algs[i].name) == 0) {
			*alg = acl_algs[i].alg;
			return 0;
		}
	return -1;
}

const char *
router_acl_alg_name(enum rte_acl_classify_alg alg)
{
	for (size_t i = 0; i < RTE_DIM(acl_algs); i++)
		if (acl_algs[i].alg == alg)
			return acl_algs[i].name;
	return "?";
}

/* A chosen method the CPU or the EAL's SIMD width does not allow is an
 * error, not a silent fallback: the operator asked for it. */
static int
set_alg(struct rte_acl_ctx *ctx, enum rte_acl_classify_alg alg, struct ep_err *err)
{
	int rc;

	if (ctx == NULL || alg == RTE_ACL_CLASSIFY_DEFAULT)
		return 0;
	rc = rte_acl_set_ctx_classify(ctx, alg);
	if (rc != 0)
		return ep_err_set(err, "acl: classify method %s is not usable here (%s; AVX-512 "
				  "methods also need the EAL's --force-max-simd-bitwidth)",
				  router_acl_alg_name(alg), strerror(-rc));
	return 0;
}

struct router_acl *
router_acl_build(const struct router_acl_rule *rules, uint32_t n, bool default_deny,
		 uint32_t gen, enum rte_acl_classify_alg alg, struct ep_err *err)
{
	struct router_acl *acl = rte_zmalloc("ep_acl", sizeof(*acl) + n + 1, RTE_CACHE_LINE_SIZE);
	bool need4 = false, need6 = false;

	if (acl == NULL) {
		ep_err_set(err, "acl: out of memory");
		return NULL;
	}
	acl->n_rules = n;
	acl->default_deny = default_deny;
	acl->pass_all = !default_deny;
	for (uint32_t i = 0; i < n; i++) {
		acl->deny[i] = rules[i].deny;
		acl->pass_all &= !rules[i].deny;
		need4 |= rules[i].family != 6;
		need6 |= rules[i].family != 4;
	}
	acl->ctx4 = build_ctx(4, rules, n, gen, err);
	acl->ctx6 = build_ctx(6, rules, n, gen, err);
	if ((need4 && acl->ctx4 == NULL) || (need6 && acl->ctx6 == NULL) ||
	    set_alg(acl->ctx4, alg, err) < 0 || set_alg(acl->ctx6, alg, err) < 0) {
		router_acl_free(acl);
		return NULL;
	}
	return acl;
}

void
router_acl_free(struct router_acl *acl)
{
	if (acl == NULL)
		return;
	rte_acl_free(acl->ctx4);
	rte_acl_free(acl->ctx6);
	rte_free(acl);
}

/* ---- control operations ---- */

static uint32_t acl_seq;

int
router_acl_commit(struct router *r, const struct router_acl_rule *rules, uint32_t n,
		  bool default_deny, struct ep_err *err)
{
	struct router_acl_rule *copy = NULL;
	struct router_acl *acl, *old;

	if (n > r->p.max_acl_rules)
		return ep_err_set(err, "acl: %u rules, more than max_acl_rules %u", n,
				  r->p.max_acl_rules);
	if (n != 0) {
		copy = rte_malloc("ep_acl_rules", sizeof(*copy) * n, 0);
		if (copy == NULL)
			return ep_err_set(err, "acl: out of memory");
		memcpy(copy, rules, sizeof(*copy) * n);
	}
	acl = router_acl_build(copy, n, default_deny,
			       __atomic_add_fetch(&acl_seq, 1, __ATOMIC_RELAXED), r->acl_alg, err);
	if (acl == NULL) {
		rte_free(copy);
		return -1;
	}
	old = r->acl;
	ep_rcu_publish(&r->acl, acl);
	if (old != NULL) {
		ep_rcu_synchronize(r->e);
		router_acl_free(old);
	}
	rte_free(r->rules);
	r->rules = copy;
	r->n_rules = n;
	r->default_deny = default_deny;
	return 0;
}

int
router_acl_insert(struct router *r, const char *text, int64_t index, struct ep_err *err)
{
	struct router_acl_rule rule, *list;
	uint32_t at;
	int rc;

	if (router_acl_parse(text, &rule, err) < 0)
		return -1;
	if (index > (int64_t)r->n_rules)
		return ep_err_set(err, "index: %" PRId64 " is beyond the end of the %u rules",
				  index, r->n_rules);
	at = index < 0 ? r->n_rules : (uint32_t)index;
	list = malloc(sizeof(*list) * (r->n_rules + 1));
	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	if (r->n_rules != 0)
		memcpy(list, r->rules, sizeof(*list) * r->n_rules);
	memmove(&list[at + 1], &list[at], sizeof(*list) * (r->n_rules - at));
	list[at] = rule;
	rc = router_acl_commit(r, list, r->n_rules + 1, r->default_deny, err);
	free(list);
	return rc;
}

int
router_acl_delete(struct router *r, uint64_t index, struct ep_err *err)
{
	struct router_acl_rule *list;
	int rc;

	if (index >= r->n_rules)
		return ep_err_set(err, "index: %" PRIu64 " is not a rule (there are %u)", index,
				  r->n_rules);
	list = malloc(sizeof(*list) * r->n_rules);
	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	memcpy(list, r->rules, sizeof(*list) * r->n_rules);
	memmove(&list[index], &list[index + 1], sizeof(*list) * (r->n_rules - index - 1));
	rc = router_acl_commit(r, list, r->n_rules - 1, r->default_deny, err);
	free(list);
	return rc;
}

int
router_acl_replace(struct router *r, const char *const *rules, uint32_t n, struct ep_err *err)
{
	struct router_acl_rule *list = malloc(sizeof(*list) * (n ? n : 1));
	int rc = 0;

	if (list == NULL)
		return ep_err_set(err, "acl: out of memory");
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		rc = router_acl_parse(rules[i], &list[i], err);
		if (rc < 0) {
			char inner[sizeof(err->msg)];

			snprintf(inner, sizeof(inner), "%s", err->msg);
			ep_err_set(err, "rules[%u]: %s", i, inner);
		}
	}
	if (rc == 0)
		rc = router_acl_commit(r, list, n, r->default_deny, err);
	free(list);
	return rc;
}

int
router_acl_set_default(struct router *r, const char *action, struct ep_err *err)
{
	bool deny;

	if (action != NULL && strcmp(action, "deny") == 0)
		deny = true;
	else if (action != NULL && strcmp(action, "permit") == 0)
		deny = false;
	else
		return ep_err_set(err, "action: '%s' is not permit or deny", action ? action : "");
	if (deny == r->default_deny)
		return 0;
	return router_acl_commit(r, r->rules, r->n_rules, deny, err);
}
