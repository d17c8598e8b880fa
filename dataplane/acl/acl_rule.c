/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rule language (ep_acl.h): the one place "permit"/"deny" and the
 * match words are parsed and printed.  Control path only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "ep_acl.h"
#include "ep_addr.h"
#include "ep_text.h"

int
ep_acl_action_parse(const char *s, bool *deny)
{
	if (s != NULL && strcmp(s, "deny") == 0)
		*deny = true;
	else if (s != NULL && strcmp(s, "permit") == 0)
		*deny = false;
	else
		return -1;
	return 0;
}

static int
parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	return s == NULL ? -1 : ep_parse_u64(s, 0, max, out, NULL);
}

/* "<n>" or "<lo>-<hi>" within 0..max. */
static int
parse_range(const char *s, uint64_t max, uint64_t *lo, uint64_t *hi)
{
	char a[8];
	const char *dash = s != NULL ? strchr(s, '-') : NULL;

	if (s == NULL)
		return -1;
	if (dash == NULL) {
		if (parse_uint(s, max, lo) < 0)
			return -1;
		*hi = *lo;
		return 0;
	}
	if ((size_t)(dash - s) >= sizeof(a))
		return -1;
	memcpy(a, s, (size_t)(dash - s));
	a[dash - s] = '\0';
	if (parse_uint(a, max, lo) < 0 || parse_uint(dash + 1, max, hi) < 0 || *lo > *hi)
		return -1;
	return 0;
}

enum { K_PROTO, K_SRC, K_DST, K_SPORT, K_DPORT, K_TOS, K_SET, K_VALUE, K__N };
static const char *const kw[K__N] = { "proto", "src", "dst", "sport", "dport", "tos", "set",
				      "value" };

static int
parse_proto(const char *val, struct ep_acl_rule *rule)
{
	static const struct { const char *name; uint8_t proto; } names[] = {
		{ "tcp", IPPROTO_TCP }, { "udp", IPPROTO_UDP }, { "icmp", IPPROTO_ICMP },
		{ "icmpv6", IPPROTO_ICMPV6 },
	};
	uint64_t p;

	if (strcmp(val, "any") == 0) {
		rule->any_proto = true;
		return 0;
	}
	rule->any_proto = false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(val, names[i].name) == 0) {
			rule->proto = names[i].proto;
			return 0;
		}
	if (parse_uint(val, 255, &p) < 0)
		return -1;
	rule->proto = (uint8_t)p;
	return 0;
}

void
ep_acl_rule_init(struct ep_acl_rule *rule)
{
	memset(rule, 0, sizeof(*rule));
	rule->any_proto = true;
	rule->sport_hi = rule->dport_hi = 65535;
	rule->tos_hi = 255;
}

static int
word_index(const char *word)
{
	int k;

	for (k = 0; k < K__N && strcmp(word, kw[k]) != 0; k++)
		;
	return k;
}

int
ep_acl_match_set(struct ep_acl_rule *rule, const char *word, const char *val, bool sets,
		 struct ep_err *err)
{
	int k = word != NULL ? word_index(word) : K__N;
	uint64_t v, w;

	if (k == K__N)
		return ep_err_set(err, "unknown word '%s' (expected proto, src, dst, sport, dport, "
				  "tos%s or value)", word ? word : "", sets ? ", set" : "");
	if (val == NULL)
		return ep_err_set(err, "%s needs a value", word);
	switch (k) {
	case K_PROTO:
		if (parse_proto(val, rule) < 0)
			return ep_err_set(err, "proto '%s' is not tcp, udp, icmp, icmpv6, any or "
					  "0-255", val);
		break;
	case K_SRC:
	case K_DST: {
		uint8_t *addr = k == K_SRC ? rule->src : rule->dst;
		uint8_t *plen = k == K_SRC ? &rule->src_plen : &rule->dst_plen;
		int fam;

		if (strcmp(val, "any") == 0) {
			memset(addr, 0, 16);
			*plen = 0;
			break;
		}
		/* A bare address means the host. */
		fam = ep_prefix_parse(val, addr, plen, EP_PREFIX_BARE_OK | EP_PREFIX_CLEAR_HOST, err);
		if (fam < 0)
			return ep_err_prefix(err, "%s: ", word);
		if (rule->family != 0 && rule->family != fam)
			return ep_err_set(err, "src and dst are different IP versions");
		rule->family = (uint8_t)fam;
		break;
	}
	case K_SPORT:
	case K_DPORT:
		if (parse_range(val, 65535, &v, &w) < 0)
			return ep_err_set(err, "%s '%s' is not a port or a range lo-hi within 0-65535",
					  word, val);
		*(k == K_SPORT ? &rule->sport_lo : &rule->dport_lo) = (uint16_t)v;
		*(k == K_SPORT ? &rule->sport_hi : &rule->dport_hi) = (uint16_t)w;
		break;
	case K_TOS:
		if (parse_range(val, 255, &v, &w) < 0)
			return ep_err_set(err, "tos '%s' is not 0-255 or a range lo-hi", val);
		rule->tos_lo = (uint8_t)v;
		rule->tos_hi = (uint8_t)w;
		break;
	case K_SET:
		if (!sets)
			return ep_err_set(err, "this ACL has no rule sets");
		if (parse_uint(val, UINT16_MAX, &v) < 0)
			return ep_err_set(err, "set '%s' is not 0-65535", val);
		rule->set = (uint16_t)v;
		break;
	default:
		if (parse_uint(val, UINT32_MAX, &v) < 0)
			return ep_err_set(err, "value '%s' is not 0-4294967295", val);
		rule->value = (uint32_t)v;
		rule->has_value = true;
		break;
	}
	return 0;
}

int
ep_acl_rule_parse(const char *text, bool sets, struct ep_acl_rule *rule, struct ep_err *err)
{
	char buf[512], *save = NULL, *tok, *val;
	bool seen[K__N] = {false};

	ep_acl_rule_init(rule);
	if (text == NULL || strlen(text) >= sizeof(buf))
		return ep_err_set(err, "rule: missing or longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, text);
	tok = strtok_r(buf, " \t", &save);
	if (ep_acl_action_parse(tok, &rule->deny) < 0)
		return ep_err_set(err, "rule: '%s': must start with permit or deny", text);
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		int k = word_index(tok);

		if (k < K__N && seen[k])
			return ep_err_set(err, "rule: '%s': %s given twice", text, tok);
		if (k < K__N)
			seen[k] = true;
		val = strtok_r(NULL, " \t", &save);
		if (ep_acl_match_set(rule, tok, val, sets, err) < 0)
			return ep_err_prefix(err, "rule: '%s': ", text);
	}
	if ((seen[K_SPORT] || seen[K_DPORT]) && !rule->any_proto &&
	    rule->proto != IPPROTO_TCP && rule->proto != IPPROTO_UDP)
		return ep_err_set(err, "rule: '%s': ports need proto tcp or udp", text);
	return 0;
}

void
ep_acl_rule_format(const struct ep_acl_rule *r, char *buf, size_t n)
{
	char a[EP_ADDR_STRLEN];
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
		OUT(" src %s/%u", ep_addr_str(r->family, r->src, a, sizeof(a)), r->src_plen);
	if (r->dst_plen != 0)
		OUT(" dst %s/%u", ep_addr_str(r->family, r->dst, a, sizeof(a)), r->dst_plen);
	if (r->sport_lo != 0 || r->sport_hi != 65535)
		OUT(r->sport_lo == r->sport_hi ? " sport %u" : " sport %u-%u", r->sport_lo,
		    r->sport_hi);
	if (r->dport_lo != 0 || r->dport_hi != 65535)
		OUT(r->dport_lo == r->dport_hi ? " dport %u" : " dport %u-%u", r->dport_lo,
		    r->dport_hi);
	if (r->tos_lo != 0 || r->tos_hi != 255)
		OUT(r->tos_lo == r->tos_hi ? " tos %u" : " tos %u-%u", r->tos_lo, r->tos_hi);
	if (r->set != 0)
		OUT(" set %u", r->set);
	if (r->has_value)
		OUT(" value %u", r->value);
#undef OUT
}
