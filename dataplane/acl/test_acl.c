/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ACL module: the filter stage and the rule language (first match
 * wins, port-range edges, prefixes, protocols, IPv6, packets without ports,
 * default action), the control operations (insert, delete, atomic
 * replace), and the instance API: instances independent of each other,
 * rule sets classified in one call, lanes (several rule lists per packet,
 * one result each), tos ranges, the match-field parser pipelines share,
 * rule values, a commit while a worker classifies.
 */
#include <pthread.h>
#include <stdlib.h>

#include <rte_malloc.h>

#include "ep_test.h"
#include "ep_engine.h"
#include "ep_parse.h"
#include "acl/ep_acl.h"
#include "acl/ep_acl_node.h"
#include "test_pkt.h"

static uint8_t buf[2048];
static struct ep_engine eng;

static void
eng_init(void)
{
	if (eng.qsbr == NULL) {
		eng.qsbr = rte_zmalloc("acl_qsbr", rte_rcu_qsbr_get_memsize(4), RTE_CACHE_LINE_SIZE);
		rte_rcu_qsbr_init(eng.qsbr, 4);
	}
}

struct acl_env {
	struct ep_acl *acl;
	struct ep_acl_filter *f;
};

static struct acl_env
env_lanes(const char *name, bool sets, uint8_t lanes, const char *const *rules, uint32_t n)
{
	struct ep_acl_params p;
	struct acl_env e = { NULL, NULL };
	struct ep_err err = {{0}};

	eng_init();
	ep_acl_params_default(&p);
	p.sets = sets;
	p.lanes = lanes;
	e.acl = ep_acl_create(&eng, name, &p, &err);
	if (e.acl == NULL || ep_acl_replace(e.acl, rules, n, &err) < 0) {
		printf("    acl: %s\n", err.msg);
		abort();
	}
	e.f = ep_acl_filter_create(e.acl, SOCKET_ID_ANY);
	return e;
}

static struct acl_env
env_named(const char *name, bool sets, const char *const *rules, uint32_t n)
{
	return env_lanes(name, sets, 1, rules, n);
}

static struct acl_env
env(const char *const *rules, uint32_t n)
{
	return env_named("test", false, rules, n);
}

static void
env_free(struct acl_env *e)
{
	ep_acl_filter_free(e->f);
	ep_acl_free(e->acl);
}

/* An mbuf holding @p len bytes of @p b, parsed. */
static struct rte_mbuf *
parsed(const uint8_t *b, uint16_t len)
{
	struct rte_mbuf *m = ep_test_mbuf(b, len);

	if (ep_parse_mbuf(m, ep_meta(m)) != 0)
		printf("    (fixture: frame does not parse)\n");
	return m;
}

static uint16_t
stage1(struct acl_env *e, struct rte_mbuf *m)
{
	uint16_t next[1] = {0};

	ep_acl_filter_stage(e->f, &m, next, 1);
	return next[0];
}

/* Verdict of the filter stage on the frame @p s describes. */
static uint16_t
verdict(struct acl_env *e, const struct tp_spec *s)
{
	struct rte_mbuf *m = parsed(buf, tp_build(buf, s));
	uint16_t v = stage1(e, m);

	rte_pktmbuf_free(m);
	return v;
}

#define PERMIT EP_NEXT_CONTINUE
#define DENY EP_NEXT_DROP(EP_DROP_ACL_DENY)

static uint16_t
udp_to(struct acl_env *e, uint16_t dport)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	s.dport = dport;
	return verdict(e, &s);
}

EP_TEST(acl_first_matching_rule_wins)
{
	const char *rules[] = { "permit proto udp dport 80", "deny proto udp" };
	const char *reversed[] = { "deny proto udp", "permit proto udp dport 80" };
	struct acl_env e = env(rules, 2);

	EP_CHECK_EQ(udp_to(&e, 80), PERMIT);
	EP_CHECK_EQ(udp_to(&e, 81), DENY);
	env_free(&e);
	e = env(reversed, 2);
	EP_CHECK_EQ(udp_to(&e, 80), DENY);
	env_free(&e);
}

EP_TEST(acl_port_range_edges)
{
	const char *rules[] = { "deny proto tcp dport 1000-2000", "deny proto tcp sport 7-7" };
	struct acl_env e = env(rules, 2);
	struct tp_spec s = tp_default(0, IPPROTO_TCP);
	static const struct { uint16_t dport; uint16_t want; } cases[] = {
		{999, PERMIT}, {1000, DENY}, {1500, DENY}, {2000, DENY}, {2001, PERMIT},
	};

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		s.dport = cases[i].dport;
		EP_CHECK_EQ(verdict(&e, &s), cases[i].want);
	}
	s.dport = 80;
	s.sport = 7;
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.sport = 8;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s.sport = 6;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

EP_TEST(acl_source_and_destination_prefixes)
{
	const char *rules[] = { "deny src 198.18.0.0/25", "deny dst 198.18.1.7",
				"deny dst 198.18.2.0/23" };
	struct acl_env e = env(rules, 3);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	s.src4 = tp_ip4("198.18.0.127");
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.src4 = tp_ip4("198.18.0.128");
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s.dst4 = tp_ip4("198.18.1.7");
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dst4 = tp_ip4("198.18.1.6");
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s.dst4 = tp_ip4("198.18.3.255");
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dst4 = tp_ip4("198.18.4.0");
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

EP_TEST(acl_protocol_by_name_and_number)
{
	const char *rules[] = { "deny proto icmp", "deny proto 132" };
	struct acl_env e = env(rules, 2);
	struct tp_spec s = tp_default(0, IPPROTO_ICMP);

	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s = tp_default(0, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s = tp_default(0, IPPROTO_SCTP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	env_free(&e);
}

EP_TEST(acl_ipv6_rules_match_ipv6_only)
{
	const char *rules[] = { "deny proto tcp src 2001:db8:0:1::/64 dport 22",
				"deny dst 2001:db8:0:2::2/128 proto udp" };
	struct acl_env e = env(rules, 2);
	struct tp_spec s = tp_default(1, IPPROTO_TCP);

	s.dport = 22;
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	tp_ip6(s.src6, "2001:db8:0:3::2");
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s = tp_default(1, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	tp_ip6(s.dst6, "2001:db8:0:2::3");
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	/* IPv4 TCP to port 22 is not touched by an IPv6 rule. */
	s = tp_default(0, IPPROTO_TCP);
	s.dport = 22;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

EP_TEST(acl_packets_without_ports_match_as_port_zero)
{
	const char *rules[] = { "deny proto udp dport 0", "deny dport 0" };
	struct acl_env e = env(rules, 1);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	s.frag = 185;            /* non-first fragment: no UDP header */
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.frag = RTE_IPV4_HDR_MF_FLAG;   /* first fragment: real ports (80) */
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
	e = env(rules + 1, 1);
	s = tp_default(0, IPPROTO_ICMP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s = tp_default(1, IPPROTO_ICMPV6);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s = tp_default(0, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

/* rte_acl reads the common packet in place (the rule layout is the frame's,
 * ep_acl_node.h); options, extension headers and VLAN tags move the fields,
 * and each of those frames must still be classified by its real ports. */
EP_TEST(acl_ports_are_found_behind_vlans_ipv4_options_and_ipv6_extension_headers)
{
	const char *rules[] = { "deny proto udp src 198.18.0.2 dst 198.18.1.2 sport 1234 dport 80",
				"deny proto udp src 2001:db8:0:1::2 dport 80" };
	static const uint8_t dstopt[8] = { IPPROTO_UDP, 0, 1, 4, 0, 0, 0, 0 };  /* PadN */
	struct acl_env e = env(rules, 2);
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct rte_ipv4_hdr *ip;
	uint16_t len;

	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.n_vlans = 2;
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dport = 81;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);

	/* IPv4 with one option word (NOP x4): ports 4 bytes further on. */
	s = tp_default(0, IPPROTO_UDP);
	len = tp_build(buf, &s);
	memmove(buf + 14 + 24, buf + 14 + 20, len - 14 - 20);
	memset(buf + 14 + 20, 1, 4);
	ip = (struct rte_ipv4_hdr *)(buf + 14);
	ip->version_ihl = 0x46;
	ip->total_length = rte_cpu_to_be_16(rte_be_to_cpu_16(ip->total_length) + 4);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	{
		struct rte_mbuf *m = parsed(buf, (uint16_t)(len + 4));

		EP_CHECK_EQ(ep_meta(m)->l4_off, 14 + 24);
		EP_CHECK_EQ(stage1(&e, m), DENY);
		rte_pktmbuf_free(m);
	}

	/* IPv6 with a destination options header before UDP. */
	s = tp_default(1, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.ext = dstopt;
	s.ext_len = sizeof(dstopt);
	s.ext_first = IPPROTO_DSTOPTS;
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dport = 81;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

EP_TEST(acl_rule_set_that_cannot_deny_is_flagged_pass_all)
{
	const char *permits[] = { "permit proto tcp dport 22", "permit" };
	const char *deny[] = { "permit proto tcp dport 22", "deny proto udp" };
	struct acl_env e = env(permits, 2);
	struct ep_err err;
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	EP_CHECK(e.acl->cur->pass_all);
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	EP_CHECK_EQ(ep_acl_set_default(e.acl, "deny", &err), 0);
	EP_CHECK(!e.acl->cur->pass_all);
	EP_CHECK_EQ(ep_acl_replace(e.acl, permits, 1, &err), 0);
	EP_CHECK_EQ(verdict(&e, &s), DENY);           /* default deny */
	EP_CHECK_EQ(ep_acl_set_default(e.acl, "permit", &err), 0);
	EP_CHECK_EQ(ep_acl_replace(e.acl, deny, 2, &err), 0);
	EP_CHECK(!e.acl->cur->pass_all);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	EP_CHECK_EQ(ep_acl_replace(e.acl, NULL, 0, &err), 0);
	EP_CHECK(e.acl->cur->pass_all);
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	env_free(&e);
}

EP_TEST(acl_default_action_applies_when_nothing_matches)
{
	const char *rules[] = { "permit proto tcp dport 443" };
	struct acl_env e = env(rules, 1);
	struct ep_err err;
	struct tp_spec s = tp_default(0, IPPROTO_TCP);

	s.dport = 80;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	EP_CHECK_EQ(ep_acl_set_default(e.acl, "deny", &err), 0);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dport = 443;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s = tp_default(1, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	EP_CHECK(ep_acl_set_default(e.acl, "maybe", &err) < 0);
	EP_CHECK(strstr(err.msg, "action") != NULL);
	env_free(&e);
}

EP_TEST(acl_insert_at_index_and_delete_change_the_order)
{
	struct acl_env e = env(NULL, 0);
	struct ep_err err;

	EP_CHECK_EQ(ep_acl_insert(e.acl, "deny proto udp", -1, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 53), DENY);
	EP_CHECK_EQ(ep_acl_insert(e.acl, "permit proto udp dport 53", 0, &err), 0);
	EP_CHECK_EQ(e.acl->n_rules, 2);
	EP_CHECK_EQ(udp_to(&e, 53), PERMIT);
	EP_CHECK_EQ(udp_to(&e, 54), DENY);
	EP_CHECK(ep_acl_insert(e.acl, "permit", 3, &err) < 0);
	EP_CHECK(strstr(err.msg, "index") != NULL);
	EP_CHECK_EQ(ep_acl_delete(e.acl, 1, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 54), PERMIT);
	EP_CHECK(ep_acl_delete(e.acl, 1, &err) < 0);
	env_free(&e);
}

EP_TEST(acl_replace_with_a_bad_rule_changes_nothing)
{
	const char *rules[] = { "deny proto udp" };
	const char *bad[] = { "permit proto udp", "deny proto udp dport 70000" };
	struct acl_env e = env(rules, 1);
	struct ep_err err;

	EP_CHECK(ep_acl_replace(e.acl, bad, 2, &err) < 0);
	EP_CHECK(strstr(err.msg, "rules[1]") != NULL);
	EP_CHECK_EQ(e.acl->n_rules, 1);
	EP_CHECK_EQ(udp_to(&e, 80), DENY);
	env_free(&e);
}

EP_TEST(acl_rule_text_errors_name_the_problem)
{
	struct ep_acl_rule r;
	struct ep_err err;
	static const struct { const char *text, *needle; } bad[] = {
		{ "allow", "permit or deny" },
		{ "permit proto gre", "proto" },
		{ "permit dport 2000-1000", "dport" },
		{ "permit dport", "needs a value" },
		{ "permit src 198.18.0.0/24 dst 2001:db8::/32", "IP versions" },
		{ "permit proto icmp dport 5", "ports need" },
		{ "permit src 198.18.0.0/40", "src" },
		{ "permit sport 1 sport 2", "twice" },
		{ "permit port 80", "unknown word" },
		{ "permit set 3", "no rule sets" },
		{ "permit value 4294967296", "value" },
		{ "permit value -1", "value" },
		{ "permit tos 256", "tos" },
		{ "permit tos 40-8", "tos" },
	};

	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		err.msg[0] = '\0';
		EP_CHECK(ep_acl_rule_parse(bad[i].text, false, &r, &err) < 0);
		if (strstr(err.msg, bad[i].needle) == NULL) {
			printf("    '%s': message '%s' lacks '%s'\n", bad[i].text, err.msg,
			       bad[i].needle);
			ep_test_failed = 1;
		}
	}
}

EP_TEST(acl_rule_text_round_trips_through_format)
{
	static const char *const texts[] = {
		"permit",
		"deny proto tcp src 198.18.0.0/24 dst 198.18.1.0/24 sport 1024-65535 dport 22",
		"deny proto udp dst 2001:db8::/32 dport 53",
		"permit proto 47",
		"deny proto icmpv6 src 2001:db8:0:1::2/128",
		"permit proto udp dport 5000-5010 set 7 value 42",
		"deny value 0",
		"permit proto udp tos 32-63 set 2",
		"deny tos 5",
	};
	struct ep_acl_rule r;
	struct ep_err err;
	char out[512];

	for (size_t i = 0; i < RTE_DIM(texts); i++) {
		EP_CHECK_EQ(ep_acl_rule_parse(texts[i], true, &r, &err), 0);
		ep_acl_rule_format(&r, out, sizeof(out));
		if (strcmp(out, texts[i]) != 0) {
			printf("    '%s' formatted as '%s'\n", texts[i], out);
			ep_test_failed = 1;
		}
	}
}

EP_TEST(acl_thousand_rules_build_and_the_last_one_still_matches)
{
	struct acl_env e = env(NULL, 0);
	struct ep_acl_rule *rules = calloc(1001, sizeof(*rules));
	struct ep_err err;
	char text[128];

	for (int i = 0; i < 1000; i++) {
		snprintf(text, sizeof(text), "deny proto udp src 198.19.%d.%d/32 dport %d",
			 i / 250, i % 250, 1000 + i);
		EP_CHECK_EQ(ep_acl_rule_parse(text, false, &rules[i], &err), 0);
	}
	EP_CHECK_EQ(ep_acl_rule_parse("deny proto udp dport 4242", false, &rules[1000], &err), 0);
	EP_CHECK_EQ(ep_acl_commit(e.acl, rules, 1001, false, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 4242), DENY);
	EP_CHECK_EQ(udp_to(&e, 4243), PERMIT);
	free(rules);
	env_free(&e);
}

/* ---- instances ---- */

EP_TEST(acl_instances_are_independent_and_named_once_per_engine)
{
	const char *deny_udp[] = { "deny proto udp" };
	struct acl_env a = env_named("a", false, deny_udp, 1);
	struct acl_env b = env_named("b", false, NULL, 0);
	struct ep_acl_params p;
	struct ep_err err;

	EP_CHECK(ep_acl_find(&eng, "a") == a.acl);
	EP_CHECK(ep_acl_find(&eng, "b") == b.acl);
	EP_CHECK(ep_acl_find(&eng, "c") == NULL);
	EP_CHECK_EQ(udp_to(&a, 80), DENY);
	EP_CHECK_EQ(udp_to(&b, 80), PERMIT);
	EP_CHECK_EQ(ep_acl_set_default(b.acl, "deny", &err), 0);
	EP_CHECK_EQ(udp_to(&b, 80), DENY);
	EP_CHECK_EQ(ep_acl_replace(a.acl, NULL, 0, &err), 0);
	EP_CHECK_EQ(udp_to(&a, 80), PERMIT);
	EP_CHECK_EQ(udp_to(&b, 80), DENY);
	ep_acl_params_default(&p);
	EP_CHECK(ep_acl_create(&eng, "a", &p, &err) == NULL);
	EP_CHECK(strstr(err.msg, "exists") != NULL);
	env_free(&a);
	EP_CHECK(ep_acl_find(&eng, "a") == NULL);
	EP_CHECK(ep_acl_next(&eng, NULL) == b.acl);
	env_free(&b);
}

/* One rte_acl_classify per family serves packets of several rule lists:
 * each packet's set id picks its list, first match wins within it. */
EP_TEST(acl_sets_serve_several_rule_lists_in_one_classify)
{
	const char *rules[] = {
		"permit proto udp dport 53 set 1 value 10",
		"deny proto udp set 1 value 11",
		"permit proto udp dport 80 set 2 value 20",
		"permit src 2001:db8:0:1::/64 set 2 value 21",
		"deny set 3",
	};
	struct acl_env e = env_named("sets", true, rules, RTE_DIM(rules));
	static const struct { int v6; uint16_t dport; uint16_t set; uint32_t rule; } cases[] = {
		{ 0, 53, 1, 1 }, { 0, 80, 1, 2 }, { 0, 80, 2, 3 }, { 0, 53, 2, 0 },
		{ 1, 80, 2, 3 }, { 1, 53, 2, 4 }, { 1, 53, 3, 5 }, { 0, 53, 4, 0 },
	};
	struct rte_mbuf *pkts[RTE_DIM(cases)];
	uint16_t sets[RTE_DIM(cases)];
	uint32_t res[RTE_DIM(cases)];
	struct ep_acl_scratch *sc = rte_zmalloc(NULL, sizeof(*sc), 0);
	const struct ep_acl_set *set = ep_acl_read(e.acl);

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		struct tp_spec s = tp_default(cases[i].v6, IPPROTO_UDP);

		s.dport = cases[i].dport;
		pkts[i] = parsed(buf, tp_build(buf, &s));
		sets[i] = cases[i].set;
	}
	ep_acl_classify(set, sc, pkts, RTE_DIM(cases), sets, res);
	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		EP_CHECK_EQ(res[i], cases[i].rule);
		if (cases[i].rule != 0)
			EP_CHECK_EQ(ep_acl_res_value(set, res[i]),
				    cases[i].rule <= 2 ? 9 + cases[i].rule :
				    cases[i].rule <= 4 ? 17 + cases[i].rule : 0);
	}
	EP_CHECK(ep_acl_res_denies(set, res[1]));
	EP_CHECK(!ep_acl_res_denies(set, res[0]));
	rte_pktmbuf_free_bulk(pkts, RTE_DIM(cases));
	rte_free(sc);
	env_free(&e);
}

/* The method in use is named whatever picked it: "auto" resolves to one
 * of the methods it timed (which one depends on the CPU, the EAL and the
 * timing: printed, never asserted), a method asked for is the one used
 * without timing, and a list without rules has none. */
EP_TEST(acl_reports_the_classify_method_in_use)
{
	const char *rules[] = { "deny proto udp dport 53" };
	struct acl_env e = env_named("method", false, NULL, 0);
	struct ep_err err = {{0}};
	enum rte_acl_classify_alg alg;
	const char *m;

	EP_CHECK(strcmp(ep_acl_method_name(e.acl), "none") == 0);
	EP_CHECK_EQ(ep_acl_replace(e.acl, rules, 1, &err), 0);
	m = ep_acl_method_name(e.acl);
	EP_CHECK(ep_acl_alg_parse(m, &alg) == 0 && alg != RTE_ACL_CLASSIFY_DEFAULT);
	EP_CHECK(e.acl->cur->n_cal >= 1);
	bool timed = false;
	for (uint8_t i = 0; i < e.acl->cur->n_cal; i++) {
		printf("    auto timed %-9s %.1f cycles/key\n", ep_acl_alg_name(e.acl->cur->cal[i].alg),
		       e.acl->cur->cal[i].cycles);
		timed |= e.acl->cur->cal[i].alg == alg;
	}
	EP_CHECK(timed);
	e.acl->p.alg = RTE_ACL_CLASSIFY_SCALAR;
	EP_CHECK_EQ(ep_acl_replace(e.acl, rules, 1, &err), 0);
	EP_CHECK(strcmp(ep_acl_method_name(e.acl), "scalar") == 0);
	EP_CHECK_EQ(e.acl->cur->n_cal, 0);
	EP_CHECK_EQ(udp_to(&e, 53), DENY);
	EP_CHECK_EQ(udp_to(&e, 54), PERMIT);
	env_free(&e);
}

/* "auto" times the methods on keys built inside the rules (acl.c
 * cal_keys_make): on rules narrow enough that a random key almost never
 * matches (/32 to /17 prefixes, single ports, one protocol), every one of
 * its keys must match, in each layout a context can have: IPv4 and IPv6
 * packets, the keyed layout of a tos rule, and sets with two lanes.  A key
 * written in the wrong byte order or at the wrong offset matches nothing. */
EP_TEST(acl_calibration_keys_fall_inside_the_rules_of_every_layout)
{
	static const char *v4[] = {
		"deny proto tcp src 198.18.1.0/24 dst 203.0.113.7/32 sport 1000-1999 dport 443",
		"deny proto udp dst 198.19.0.0/17 dport 53",
		"deny proto 47 src 192.0.2.0/28 dst 198.18.200.1/32",
		"permit proto udp src 10.1.2.3/32 dport 5000-5100",
	};
	static const char *v6[] = {
		"deny proto tcp src 2001:db8:1::/48 dst 2001:db8:ff::1/128 dport 22",
		"deny proto udp dst 2001:db8:2:3::/64 sport 123",
	};
	static const char *tos[] = {
		"deny proto udp tos 32-63 dst 198.18.5.0/24 dport 9",
		"deny proto tcp dst 198.18.6.6/32 dport 8080",
	};
	static const char *sets[] = {
		"deny proto udp src 198.18.0.0/16 dport 53 set 1",
		"permit proto tcp dst 198.18.9.9/32 dport 80 set 2",
	};
	static const struct { const char *name; const char *const *rules; uint32_t n;
			      bool sets; uint8_t lanes; } cases[] = {
		{ "cal4", v4, RTE_DIM(v4), false, 1 }, { "cal6", v6, RTE_DIM(v6), false, 1 },
		{ "caltos", tos, RTE_DIM(tos), false, 1 }, { "calsets", sets, RTE_DIM(sets), true, 2 },
	};

	for (size_t c = 0; c < RTE_DIM(cases); c++) {
		struct acl_env e = env_lanes(cases[c].name, cases[c].sets, cases[c].lanes,
					     cases[c].rules, cases[c].n);

		printf("    %s: %u of %u calibration keys matched (%s)\n", cases[c].name,
		       e.acl->cur->cal_matched, e.acl->cur->cal_keys, ep_acl_method_name(e.acl));
		EP_CHECK(e.acl->cur->n_cal >= 1);
		EP_CHECK_EQ(e.acl->cur->cal_keys, 256);
		EP_CHECK_EQ(e.acl->cur->cal_matched, e.acl->cur->cal_keys);
		env_free(&e);
	}
}

EP_TEST(acl_non_ip_packets_are_reported_not_classified)
{
	const char *rules[] = { "deny proto udp" };
	struct acl_env e = env(rules, 1);
	uint16_t len = tp_arp(buf, (const uint8_t[6]){2, 0, 0, 0, 0, 0x0a}, RTE_ARP_OP_REQUEST,
			      tp_ip4("198.18.0.2"), tp_ip4("198.18.0.1"));
	struct rte_mbuf *m = parsed(buf, len);

	EP_CHECK_EQ(stage1(&e, m), EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED));
	rte_pktmbuf_free(m);
	env_free(&e);
}

/* A reader classifying in a loop on another thread, reporting quiescent
 * states as a worker does between bursts, while the control thread swaps
 * rule sets: every burst sees one whole set (all packets permitted or all
 * denied), and ASAN sees no set freed under the reader. */
struct reader {
	struct acl_env *e;
	struct rte_mbuf *pkts[32];
	uint32_t stop;
	uint64_t bursts, mixed;
};

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	unsigned int id = 3;

	rte_rcu_qsbr_thread_register(eng.qsbr, id);
	rte_rcu_qsbr_thread_online(eng.qsbr, id);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		uint16_t next[32] = {0};
		uint16_t denied;

		denied = ep_acl_filter_stage(r->e->f, r->pkts, next, 32);
		if (denied != 0 && denied != 32)
			r->mixed++;
		r->bursts++;
		rte_rcu_qsbr_quiescent(eng.qsbr, id);
	}
	rte_rcu_qsbr_thread_offline(eng.qsbr, id);
	rte_rcu_qsbr_thread_unregister(eng.qsbr, id);
	return NULL;
}

EP_TEST(acl_commit_while_a_worker_classifies_swaps_whole_sets)
{
	const char *deny[] = { "permit proto tcp", "deny proto udp src 198.18.0.0/24" };
	const char *permit[] = { "deny proto tcp", "permit proto udp" };
	struct acl_env e = env(deny, 2);
	struct reader r = { .e = &e };
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_err err;
	pthread_t th;
	int swaps = 0;

	for (int i = 0; i < 32; i++) {
		s.sport = (uint16_t)(1000 + i);
		r.pkts[i] = parsed(buf, tp_build(buf, &s));
	}
	EP_CHECK_EQ(pthread_create(&th, NULL, reader_main, &r), 0);
	for (int i = 0; i < 200; i++)
		swaps += ep_acl_replace(e.acl, i % 2 ? deny : permit, 2, &err) == 0;
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	EP_CHECK_EQ(swaps, 200);
	EP_CHECK(r.bursts > 0);
	EP_CHECK_EQ(r.mixed, 0);
	printf("    %" PRIu64 " bursts classified during 200 commits\n", r.bursts);
	rte_pktmbuf_free_bulk(r.pkts, 32);
	env_free(&e);
}

/* The tos byte of a frame tp_build wrote without VLANs: IPv4's type of
 * service, IPv6's traffic class (the 4 bits after the version and the 4
 * before the flow label). */
static void
set_tos(uint8_t *b, int v6, uint8_t tos)
{
	if (v6) {
		b[14] = (uint8_t)(0x60 | tos >> 4);
		b[15] = (uint8_t)((b[15] & 0x0f) | (tos & 0x0f) << 4);
	} else {
		b[15] = tos;
		b[24] = b[25] = 0;
		*(uint16_t *)&b[24] = rte_ipv4_cksum((const struct rte_ipv4_hdr *)&b[14]);
	}
}

/* A tos range matches IPv4's ToS byte and IPv6's traffic class, both ends
 * included; an instance without sets takes the key path for it (the tos
 * byte is out of rte_acl's reach in the packet). */
EP_TEST(acl_tos_range_matches_ipv4_tos_and_ipv6_traffic_class)
{
	const char *rules[] = { "deny proto udp tos 32-63", "permit" };
	struct acl_env e = env(rules, RTE_DIM(rules));
	static const struct { int v6; uint8_t tos; uint16_t want; } cases[] = {
		{ 0, 0, PERMIT }, { 0, 31, PERMIT }, { 0, 32, DENY }, { 0, 40, DENY },
		{ 0, 63, DENY }, { 0, 64, PERMIT }, { 1, 31, PERMIT }, { 1, 32, DENY },
		{ 1, 0x3f, DENY }, { 1, 0xb8, PERMIT },
	};

	EP_CHECK(ep_acl_read(e.acl)->keyed);
	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		struct tp_spec s = tp_default(cases[i].v6, IPPROTO_UDP);
		uint16_t len = tp_build(buf, &s);
		struct rte_mbuf *m;

		set_tos(buf, cases[i].v6, cases[i].tos);
		m = parsed(buf, len);
		if (stage1(&e, m) != cases[i].want) {
			printf("    IPv%d tos %u: wrong verdict\n", cases[i].v6 ? 6 : 4, cases[i].tos);
			ep_test_failed = 1;
		}
		rte_pktmbuf_free(m);
	}
	env_free(&e);
}

/* Two lanes: each packet names two rule lists (a cable modem's two filter
 * groups) and gets the first match of each, from one classify call; the
 * verdict is deny when either lane denies, the default when neither
 * matched. */
EP_TEST(acl_lanes_give_each_packet_the_first_match_of_two_rule_lists)
{
	const char *rules[] = {
		"permit proto udp dport 53 set 1",
		"deny proto udp set 1",
		"deny proto udp dport 137-139 set 2",
		"permit proto udp set 2",
		"deny set 3",
	};
	struct acl_env e = env_lanes("lanes", true, 2, rules, RTE_DIM(rules));
	static const struct {
		int v6; uint16_t dport; uint16_t set[2]; uint32_t rule[2]; int deny, matched;
	} cases[] = {
		{ 0, 53, { 1, 2 }, { 1, 4 }, 0, 1 },
		{ 0, 80, { 1, 2 }, { 2, 4 }, 1, 1 },
		{ 0, 137, { 2, 0 }, { 3, 0 }, 1, 1 },
		{ 0, 137, { 0, 2 }, { 0, 3 }, 1, 1 },
		{ 1, 80, { 2, 1 }, { 4, 2 }, 1, 1 },
		{ 1, 53, { 2, 1 }, { 4, 1 }, 0, 1 },
		{ 0, 80, { 0, 0 }, { 0, 0 }, 0, 0 },
		{ 1, 80, { 4, 5 }, { 0, 0 }, 0, 0 },
		{ 0, 80, { 3, 3 }, { 5, 5 }, 1, 1 },
	};
	enum { N = RTE_DIM(cases) };
	struct rte_mbuf *pkts[N];
	uint16_t sets[2 * N];
	uint32_t res[2 * N];
	struct ep_acl_scratch *sc = rte_zmalloc(NULL, sizeof(*sc), 0);
	const struct ep_acl_set *set = ep_acl_read(e.acl);

	EP_CHECK_EQ(set->lanes, 2);
	for (size_t i = 0; i < N; i++) {
		struct tp_spec s = tp_default(cases[i].v6, IPPROTO_UDP);

		s.dport = cases[i].dport;
		pkts[i] = parsed(buf, tp_build(buf, &s));
		sets[2 * i] = cases[i].set[0];
		sets[2 * i + 1] = cases[i].set[1];
	}
	ep_acl_classify(set, sc, pkts, N, sets, res);
	for (size_t i = 0; i < N; i++) {
		int matched = -1, deny = ep_acl_lanes_deny(set, &res[2 * i], &matched);

		if (res[2 * i] != cases[i].rule[0] || res[2 * i + 1] != cases[i].rule[1] ||
		    deny != cases[i].deny || matched != cases[i].matched) {
			printf("    case %zu: rules %u/%u deny %d matched %d\n", i, res[2 * i],
			       res[2 * i + 1], deny, matched);
			ep_test_failed = 1;
		}
	}
	/* The same set with default deny: an unmatched packet is denied. */
	EP_CHECK_EQ(ep_acl_set_default(e.acl, "deny", &(struct ep_err){{0}}), 0);
	set = ep_acl_read(e.acl);
	ep_acl_classify(set, sc, pkts, N, sets, res);
	{
		int matched;

		EP_CHECK(ep_acl_lanes_deny(set, &res[2 * 6], &matched) && !matched);
		EP_CHECK(!ep_acl_lanes_deny(set, &res[0], &matched) && matched);
	}
	rte_pktmbuf_free_bulk(pkts, N);
	rte_free(sc);
	env_free(&e);
}

/* The one match-field parser, called per key=value pair by pipelines whose
 * lines spell fields that way: each word sets its field, a bad value names
 * the word, `set` only where the instance has sets. */
EP_TEST(acl_match_fields_parse_one_by_one_as_key_value_lines_use_them)
{
	struct ep_acl_rule r;
	struct ep_err err = {{0}};

	ep_acl_rule_init(&r);
	EP_CHECK_EQ(ep_acl_match_set(&r, "proto", "17", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "dst", "198.18.0.0/24", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "sport", "1024-2047", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "dport", "5060", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "tos", "32-63", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "set", "7", true, &err), 0);
	EP_CHECK_EQ(ep_acl_match_set(&r, "value", "3", true, &err), 0);
	EP_CHECK(!r.any_proto && r.proto == 17 && r.family == 4 && r.dst_plen == 24);
	EP_CHECK(r.sport_lo == 1024 && r.sport_hi == 2047 && r.dport_lo == 5060 &&
		 r.dport_hi == 5060 && r.tos_lo == 32 && r.tos_hi == 63 && r.set == 7 &&
		 r.has_value && r.value == 3);
	EP_CHECK(ep_acl_match_set(&r, "src", "2001:db8::/32", true, &err) < 0);
	EP_CHECK(strstr(err.msg, "IP versions") != NULL);
	EP_CHECK(ep_acl_match_set(&r, "dport", "70000", true, &err) < 0);
	EP_CHECK(strstr(err.msg, "dport") != NULL);
	EP_CHECK(ep_acl_match_set(&r, "set", "1", false, &err) < 0);
	EP_CHECK(ep_acl_match_set(&r, "ttl", "1", true, &err) < 0);
	EP_CHECK(strstr(err.msg, "ttl") != NULL);
}

/* One key pass for two instances with sets gives each the results its own
 * ep_acl_classify gives (a vCMTS classifies a burst with its filter groups
 * and its classifiers), non-IP packets included. */
EP_TEST(acl_one_key_pass_serves_two_instances_as_their_own_classify_would)
{
	const char *fr[] = { "deny proto udp dport 53 set 1", "permit proto udp set 2",
			     "deny tos 32-63 set 2" };
	const char *cr[] = { "permit proto udp dport 5060 set 7 value 3",
			     "permit dst 2001:db8::/32 set 8 value 4" };
	struct acl_env f = env_lanes("keys-f", true, 2, fr, RTE_DIM(fr));
	struct acl_env c = env_lanes("keys-c", true, 1, cr, RTE_DIM(cr));
	enum { N = 8 };
	struct rte_mbuf *pkts[N];
	uint16_t fids[2 * N], cids[N];
	uint32_t fa[2 * N], fb[2 * N], ca[N], cb[N];
	struct ep_acl_scratch *sc = rte_zmalloc(NULL, sizeof(*sc), 0);
	const struct ep_acl_set *fs = ep_acl_read(f.acl), *cs = ep_acl_read(c.acl);

	for (int i = 0; i < N; i++) {
		struct tp_spec s = tp_default(i & 1, IPPROTO_UDP);
		uint16_t len;

		s.dport = (uint16_t[]){ 53, 5060, 80, 53 }[i % 4];
		len = tp_build(buf, &s);
		set_tos(buf, i & 1, i >= 4 ? 40 : 0);
		if (i == 6)
			len = tp_arp(buf, (const uint8_t[6]){2, 0, 0, 0, 0, 0x0a}, RTE_ARP_OP_REQUEST,
				     tp_ip4("198.18.0.2"), tp_ip4("198.18.0.1"));
		pkts[i] = parsed(buf, len);
		fids[2 * i] = (uint16_t)(1 + i % 2);
		fids[2 * i + 1] = (uint16_t)(i % 3);
		cids[i] = (uint16_t)(7 + i % 2);
	}
	ep_acl_classify(fs, sc, pkts, N, fids, fa);
	ep_acl_classify(cs, sc, pkts, N, cids, ca);
	ep_acl_keys_build(fs, sc, pkts, N);
	ep_acl_classify_keys(fs, sc, fids, fb);
	ep_acl_classify_keys(cs, sc, cids, cb);
	EP_CHECK(memcmp(fa, fb, sizeof(fa)) == 0);
	EP_CHECK(memcmp(ca, cb, sizeof(ca)) == 0);
	EP_CHECK_EQ(ca[6], EP_ACL_NOT_IP);
	EP_CHECK_EQ(fa[0], 1);         /* IPv4 dport 53 in group 1 */
	EP_CHECK_EQ(ca[1], 2);         /* IPv6 to 2001:db8::/32 in list 8 */
	EP_CHECK_EQ(ca[3], 2);
	EP_CHECK_EQ(ca[0], 0);         /* IPv4 dport 53 in list 7: no rule */
	rte_pktmbuf_free_bulk(pkts, N);
	rte_free(sc);
	env_free(&f);
	env_free(&c);
}

/* The key pass writes an IPv4 frame's fields where the keyed layout has
 * them (network order, set ids zero until ep_acl_classify_keys): proto,
 * source, destination, UDP ports behind a VLAN tag, ToS; a frame without
 * ports (ICMP) keys them as zero. */
EP_TEST(acl_key_pass_puts_each_ipv4_field_in_the_keyed_layout)
{
	const char *fr[] = { "permit proto udp dport 53 set 1" };
	struct acl_env f = env_lanes("keys-ipv4", true, 2, fr, RTE_DIM(fr));
	struct ep_acl_scratch *sc = rte_zmalloc(NULL, sizeof(*sc), 0);
	const struct ep_acl_set *fs = ep_acl_read(f.acl);
	struct rte_mbuf *pkts[2];
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	const struct ep_acl_key4_set *k;
	uint16_t len;

	s.n_vlans = 1;
	s.tpid[0] = RTE_ETHER_TYPE_VLAN;
	s.vid[0] = 100;
	s.src4 = tp_ip4("198.18.1.2");
	s.dst4 = tp_ip4("198.19.3.4");
	s.sport = 40000;
	s.dport = 443;
	len = tp_build(buf, &s);
	set_tos(buf + 4, 0, 0xb8);               /* behind the tag */
	pkts[0] = parsed(buf, len);
	s = tp_default(0, IPPROTO_ICMP);
	len = tp_build(buf, &s);
	pkts[1] = parsed(buf, len);
	ep_acl_keys_build(fs, sc, pkts, 2);
	EP_CHECK_EQ(sc->n4, 2);
	EP_CHECK_EQ(sc->n6, 0);
	k = &sc->key[0].v4s;
	EP_CHECK_EQ(k->proto, IPPROTO_UDP);
	EP_CHECK_EQ(k->set[0], 0);
	EP_CHECK_EQ(k->set[1], 0);
	EP_CHECK(memcmp(k->src, (const uint8_t[]){ 198, 18, 1, 2 }, 4) == 0);
	EP_CHECK(memcmp(k->dst, (const uint8_t[]){ 198, 19, 3, 4 }, 4) == 0);
	EP_CHECK_EQ(rte_be_to_cpu_16(k->sport), 40000);
	EP_CHECK_EQ(rte_be_to_cpu_16(k->dport), 443);
	EP_CHECK_EQ(k->tos, 0xb8);
	EP_CHECK(sc->data[0] == (const uint8_t *)k);
	k = &sc->key[1].v4s;
	EP_CHECK_EQ(k->proto, IPPROTO_ICMP);
	EP_CHECK_EQ(k->sport, 0);
	EP_CHECK_EQ(k->dport, 0);
	rte_pktmbuf_free_bulk(pkts, 2);
	rte_free(sc);
	env_free(&f);
}

/* A stage that parsed the burst gives the filter its inputs
 * (ep_acl_filter_input4): the verdicts are the filter stage's own, under a
 * default permit (the burst that matches nothing ends after one OR of the
 * results) and a default deny, with rules that match some packets, and
 * with a rule set that needs keys (a tos rule: the inputs are not used). */
EP_TEST(acl_filter_with_inputs_from_the_parse_decides_as_the_filter_stage)
{
	const char *plain[] = { "deny proto udp dport 5000-5099", "permit proto tcp dport 22",
				"deny proto tcp src 198.18.0.0/24 dport 20-30" };
	const char *tos[] = { "deny proto udp tos 32-63", "deny proto tcp dport 7" };
	struct { const char *const *rules; uint32_t n; const char *dflt; } sets[] = {
		{ plain, RTE_DIM(plain), "permit" }, { plain, RTE_DIM(plain), "deny" },
		{ tos, RTE_DIM(tos), "permit" }, { NULL, 0, "deny" },
	};
	uint64_t x = 0x2545f4914f6cdd1dull;
	unsigned int wrong = 0, denied = 0, passed = 0;

	for (size_t k = 0; k < RTE_DIM(sets); k++) {
		struct acl_env e = env(sets[k].rules, sets[k].n);
		struct ep_err err;

		EP_CHECK_EQ(ep_acl_set_default(e.acl, sets[k].dflt, &err), 0);
		for (int b = 0; b < 60; b++) {
			struct rte_mbuf *pkts[32];
			uint16_t na[32] = {0}, nb[32] = {0}, oa, ob;

			for (int i = 0; i < 32; i++) {
				struct tp_spec s = tp_default(0, (x & 1) ? IPPROTO_TCP : IPPROTO_UDP);
				uint16_t len;

				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				/* Most bursts match no rule; every fourth has hits. */
				s.dport = (uint16_t)(b % 4 == 3 ? (x >> 8) % 6000 : 6000 + (x >> 8) % 50000);
				len = tp_build(buf, &s);
				set_tos(buf, 0, (uint8_t)(x >> 32));
				pkts[i] = parsed(buf, len);
				ep_acl_filter_input4(e.f, (uint16_t)i,
						     rte_pktmbuf_mtod(pkts[i], uint8_t *) + 14);
			}
			oa = ep_acl_filter_inputs4(e.f, pkts, na, 32);
			ob = ep_acl_filter_stage(e.f, pkts, nb, 32);
			wrong += oa != ob || memcmp(na, nb, sizeof(na)) != 0;
			denied += ob;
			passed += 32u - ob;
			rte_pktmbuf_free_bulk(pkts, 32);
		}
		env_free(&e);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(denied > 2000);
	EP_CHECK(passed > 2000);
}

/* ---- the trie's field order against a linear first match ---- */

static uint64_t
xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The first @p plen bits of @p a and @p b (network order) are equal. */
static bool
prefix_eq(const uint8_t *a, const uint8_t *b, uint8_t plen)
{
	for (int i = 0; i < plen; i++)
		if (((a[i / 8] ^ b[i / 8]) >> (7 - i % 8)) & 1)
			return false;
	return true;
}

/* The rule language read literally: index + 1 of the first rule of @p r
 * that the packet matches, 0 for none (packets without ports as 0, 0). */
static uint32_t
linear_first_match(const struct ep_acl_rule *r, uint32_t n, const struct tp_spec *s)
{
	uint8_t src[16], dst[16];
	uint16_t sp = 0, dp = 0;
	int fam = s->v6 ? 6 : 4;

	if (s->v6) {
		memcpy(src, s->src6, 16);
		memcpy(dst, s->dst6, 16);
	} else {
		uint32_t a = htonl(s->src4), b = htonl(s->dst4);

		memcpy(src, &a, 4);
		memcpy(dst, &b, 4);
	}
	if (s->proto == IPPROTO_TCP || s->proto == IPPROTO_UDP) {
		sp = s->sport;
		dp = s->dport;
	}
	for (uint32_t i = 0; i < n; i++)
		if ((r[i].family == 0 || r[i].family == fam) &&
		    (r[i].any_proto || r[i].proto == s->proto) &&
		    prefix_eq(src, r[i].src, r[i].src_plen) && prefix_eq(dst, r[i].dst, r[i].dst_plen) &&
		    sp >= r[i].sport_lo && sp <= r[i].sport_hi &&
		    dp >= r[i].dport_lo && dp <= r[i].dport_hi)
			return i + 1;
	return 0;
}

/* A random address of family @p fam, most often inside @p near's prefix
 * (host bits random), so the walks reach every depth of the trie. */
static void
random_addr(uint64_t *x, const struct ep_acl_rule *near, int fam, bool src, uint8_t *out)
{
	int len = fam == 6 ? 16 : 4;

	for (int i = 0; i < len; i++)
		out[i] = (uint8_t)xorshift(x);
	if ((*x >> 3) % 4 != 0 && near->family == fam)
		for (int i = 0; i < (src ? near->src_plen : near->dst_plen); i++) {
			uint8_t bit = (uint8_t)(0x80 >> (i % 8));

			out[i / 8] = (uint8_t)((out[i / 8] & ~bit) |
					       ((src ? near->src : near->dst)[i / 8] & bit));
		}
}

/* A port at an edge of @p near's range, one off it, or anywhere. */
static uint16_t
random_port(uint64_t *x, const struct ep_acl_rule *near, bool sport)
{
	uint16_t lo = sport ? near->sport_lo : near->dport_lo;
	uint16_t hi = sport ? near->sport_hi : near->dport_hi;
	uint64_t v = xorshift(x);

	switch (v % 6) {
	case 0: return (uint16_t)(v >> 16);
	case 1: return (uint16_t)(lo - 1);
	case 2: return (uint16_t)(hi + 1);
	case 3: return hi;
	default: return lo;
	}
}

/* A random rule: a family's prefixes (one or both, of any length from
 * 8 bits) with any protocol or one, or no address and a port range or a
 * single port of TCP or UDP (so that few rules match everything). */
static void
random_rule(uint64_t *x, struct ep_acl_rule *r)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6 };
	uint64_t v = xorshift(x);
	int fam = v % 3 == 0 ? 0 : v % 3 == 1 ? 4 : 6;
	int bits = fam == 6 ? 128 : 32;

	ep_acl_rule_init(r);
	r->deny = (v >> 4) & 1;
	r->any_proto = fam != 0 && (v >> 5) % 4 == 0;
	r->proto = fam == 0 ? protos[(v >> 8) % 2] : protos[(v >> 8) % 4];
	r->family = (uint8_t)fam;
	for (int k = 0; k < 2 && fam != 0; k++) {
		uint8_t *a = k ? r->dst : r->src;
		uint8_t *plen = k ? &r->dst_plen : &r->src_plen;

		*plen = (uint8_t)(8 + xorshift(x) % (uint64_t)(bits - 7));
		if ((int)((v >> 12) % 3) == k)
			*plen = 0;         /* many rules give one address only */
		for (int i = 0; i < 16; i++)
			a[i] = (uint8_t)xorshift(x);
		for (int i = *plen; i < 128; i++)      /* host bits cleared, as the parser does */
			a[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
	}
	if (!r->any_proto && (r->proto == IPPROTO_TCP || r->proto == IPPROTO_UDP) &&
	    (fam == 0 || (*x >> 30) % 2)) {
		uint16_t lo = (uint16_t)xorshift(x), w = (uint16_t)((*x >> 16) % 600);

		if ((*x >> 32) % 3 == 0) {
			r->sport_lo = lo;
			r->sport_hi = (uint16_t)RTE_MIN(65535, lo + w);
		} else {
			r->dport_lo = lo;
			r->dport_hi = (uint16_t)RTE_MIN(65535, (*x >> 36) % 2 ? lo : lo + w);
		}
	}
}

/* The layout rte_acl walks (field order, groups, types: acl.c) changes
 * where a key leaves the trie, never which rule it finds: 400 random
 * rules (IPv4, IPv6 and both; prefixes of every length; port ranges and
 * single ports; any protocol) against 6,400 packets of both families and
 * four protocols, their addresses often inside a rule's prefix and their
 * ports at a range's edges, classified by the module and by a linear
 * first match of the rule list. */
EP_TEST(acl_packet_layout_classifies_as_a_linear_first_match_on_random_rules_and_keys)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6 };
	struct acl_env e = env(NULL, 0);
	struct ep_acl_rule *rules = calloc(400, sizeof(*rules));
	struct ep_acl_scratch *sc = rte_zmalloc(NULL, sizeof(*sc), 0);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int wrong = 0, matched = 0;
	struct ep_err err;

	for (int i = 0; i < 400; i++)
		random_rule(&x, &rules[i]);
	EP_CHECK_EQ(ep_acl_commit(e.acl, rules, 400, false, &err), 0);
	for (int b = 0; b < 200; b++) {
		const struct ep_acl_set *set = ep_acl_read(e.acl);
		struct rte_mbuf *pkts[32];
		struct tp_spec s[32];
		uint32_t res[32];

		for (int i = 0; i < 32; i++) {
			/* Each packet aims at one rule (its family, protocol,
			 * prefixes and port edges), and often misses it by a bit. */
			const struct ep_acl_rule *near = &rules[xorshift(&x) % 400];
			int v6 = near->family != 0 ? near->family == 6 : (int)((x >> 12) % 2);
			uint8_t proto = near->any_proto || (x >> 14) % 8 == 0 ?
				protos[(x >> 17) % 4] : near->proto;

			s[i] = tp_default(v6, proto);
			if (s[i].proto == (v6 ? IPPROTO_ICMP : IPPROTO_ICMPV6))
				s[i].proto = (uint8_t)(v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
			if (v6) {
				random_addr(&x, near, 6, true, s[i].src6);
				random_addr(&x, near, 6, false, s[i].dst6);
			} else {
				uint8_t a[4], d[4];

				random_addr(&x, near, 4, true, a);
				random_addr(&x, near, 4, false, d);
				s[i].src4 = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
					    (uint32_t)a[2] << 8 | a[3];
				s[i].dst4 = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 |
					    (uint32_t)d[2] << 8 | d[3];
			}
			s[i].sport = random_port(&x, near, true);
			s[i].dport = random_port(&x, near, false);
			pkts[i] = parsed(buf, tp_build(buf, &s[i]));
		}
		ep_acl_classify(set, sc, pkts, 32, NULL, res);
		for (int i = 0; i < 32; i++) {
			uint32_t want = linear_first_match(rules, 400, &s[i]);

			wrong += res[i] != want;
			matched += want != 0;
		}
		rte_pktmbuf_free_bulk(pkts, 32);
	}
	printf("    %u of 6400 packets matched a rule, %u classified otherwise\n", matched, wrong);
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(matched > 1600);      /* a quarter of the packets found a rule */
	free(rules);
	rte_free(sc);
	env_free(&e);
}
