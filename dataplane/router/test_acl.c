/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `acl` and the rule language: first match wins, port-range edges,
 * prefixes, protocols, IPv6, packets without ports, default action, and the
 * control operations (insert, delete, atomic replace).
 */
#include "test_router.h"

static uint8_t buf[2048];

struct acl_env {
	struct router *r;
	struct router_worker *w;
};

static struct acl_env
env(const char *const *rules, uint32_t n)
{
	struct acl_env e = { tr_router(), NULL };
	struct ep_err err = {{0}};

	if (router_acl_replace(e.r, rules, n, &err) < 0) {
		printf("    acl_replace: %s\n", err.msg);
		ep_test_failed = 1;
	}
	e.w = router_worker_create(e.r, SOCKET_ID_ANY);
	return e;
}

static void
env_free(struct acl_env *e)
{
	router_worker_free(e->w);
	router_free(e->r);
}

/* Verdict of the acl stage on the frame @p s describes. */
static uint16_t
verdict(struct acl_env *e, const struct tp_spec *s)
{
	struct rte_mbuf *m = tr_mbuf(buf, tp_build(buf, s), 0);
	uint16_t v = tr_stage1(router_acl_stage, e->w, m);

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
 * router_acl.c); options, extension headers and VLAN tags move the fields,
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
		struct rte_mbuf *m = tr_mbuf(buf, (uint16_t)(len + 4), 0);

		EP_CHECK_EQ(ep_meta(m)->l4_off, 14 + 24);
		EP_CHECK_EQ(tr_stage1(router_acl_stage, e.w, m), DENY);
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

	EP_CHECK(e.r->acl->pass_all);
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	EP_CHECK_EQ(router_acl_set_default(e.r, "deny", &err), 0);
	EP_CHECK(!e.r->acl->pass_all);
	EP_CHECK_EQ(router_acl_replace(e.r, permits, 1, &err), 0);
	EP_CHECK_EQ(verdict(&e, &s), DENY);           /* default deny */
	EP_CHECK_EQ(router_acl_set_default(e.r, "permit", &err), 0);
	EP_CHECK_EQ(router_acl_replace(e.r, deny, 2, &err), 0);
	EP_CHECK(!e.r->acl->pass_all);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	EP_CHECK_EQ(router_acl_replace(e.r, NULL, 0, &err), 0);
	EP_CHECK(e.r->acl->pass_all);
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
	EP_CHECK_EQ(router_acl_set_default(e.r, "deny", &err), 0);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	s.dport = 443;
	EP_CHECK_EQ(verdict(&e, &s), PERMIT);
	s = tp_default(1, IPPROTO_UDP);
	EP_CHECK_EQ(verdict(&e, &s), DENY);
	EP_CHECK(router_acl_set_default(e.r, "maybe", &err) < 0);
	EP_CHECK(strstr(err.msg, "action") != NULL);
	env_free(&e);
}

EP_TEST(acl_insert_at_index_and_delete_change_the_order)
{
	struct acl_env e = env(NULL, 0);
	struct ep_err err;

	EP_CHECK_EQ(router_acl_insert(e.r, "deny proto udp", -1, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 53), DENY);
	EP_CHECK_EQ(router_acl_insert(e.r, "permit proto udp dport 53", 0, &err), 0);
	EP_CHECK_EQ(e.r->n_rules, 2);
	EP_CHECK_EQ(udp_to(&e, 53), PERMIT);
	EP_CHECK_EQ(udp_to(&e, 54), DENY);
	EP_CHECK(router_acl_insert(e.r, "permit", 3, &err) < 0);
	EP_CHECK(strstr(err.msg, "index") != NULL);
	EP_CHECK_EQ(router_acl_delete(e.r, 1, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 54), PERMIT);
	EP_CHECK(router_acl_delete(e.r, 1, &err) < 0);
	env_free(&e);
}

EP_TEST(acl_replace_with_a_bad_rule_changes_nothing)
{
	const char *rules[] = { "deny proto udp" };
	const char *bad[] = { "permit proto udp", "deny proto udp dport 70000" };
	struct acl_env e = env(rules, 1);
	struct ep_err err;

	EP_CHECK(router_acl_replace(e.r, bad, 2, &err) < 0);
	EP_CHECK(strstr(err.msg, "rules[1]") != NULL);
	EP_CHECK_EQ(e.r->n_rules, 1);
	EP_CHECK_EQ(udp_to(&e, 80), DENY);
	env_free(&e);
}

EP_TEST(acl_rule_text_errors_name_the_problem)
{
	struct router_acl_rule r;
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
	};

	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		err.msg[0] = '\0';
		EP_CHECK(router_acl_parse(bad[i].text, &r, &err) < 0);
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
	};
	struct router_acl_rule r;
	struct ep_err err;
	char out[512];

	for (size_t i = 0; i < RTE_DIM(texts); i++) {
		EP_CHECK_EQ(router_acl_parse(texts[i], &r, &err), 0);
		router_acl_format(&r, out, sizeof(out));
		if (strcmp(out, texts[i]) != 0) {
			printf("    '%s' formatted as '%s'\n", texts[i], out);
			ep_test_failed = 1;
		}
	}
}

EP_TEST(acl_thousand_rules_build_and_the_last_one_still_matches)
{
	struct acl_env e = env(NULL, 0);
	struct router_acl_rule *rules = calloc(1001, sizeof(*rules));
	struct ep_err err;
	char text[128];

	for (int i = 0; i < 1000; i++) {
		snprintf(text, sizeof(text), "deny proto udp src 198.19.%d.%d/32 dport %d",
			 i / 250, i % 250, 1000 + i);
		EP_CHECK_EQ(router_acl_parse(text, &rules[i], &err), 0);
	}
	EP_CHECK_EQ(router_acl_parse("deny proto udp dport 4242", &rules[1000], &err), 0);
	EP_CHECK_EQ(router_acl_commit(e.r, rules, 1001, false, &err), 0);
	EP_CHECK_EQ(udp_to(&e, 4242), DENY);
	EP_CHECK_EQ(udp_to(&e, 4243), PERMIT);
	free(rules);
	env_free(&e);
}
