/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Policy rules: parsing, canonical text, classification (rte_acl) in both
 * directions, first-match order, meters that keep their state across
 * changes of other rules.
 */
#include "test_hs.h"

static struct hs_flow
flow(const char *remote, uint16_t rport, const char *local, uint16_t lport, uint8_t dscp)
{
	struct hs_flow f = { .proto = IPPROTO_UDP, .rport = rport, .lport = lport, .dscp = dscp };

	f.family = (uint8_t)hs_parse_ip(remote, &f.remote);
	hs_parse_ip(local, &f.local);
	return f;
}

static uint32_t
classify1(struct hs_stack *s, enum hs_dir dir, struct hs_flow f)
{
	uint32_t res = 0;

	hs_policy_classify(s->policy, dir, &f, 1, &res);
	return res;
}

EP_TEST(policy_text_round_trips_to_canonical_form)
{
	struct hs_policy_rule r;
	struct ep_err err;
	char buf[256];

	EP_CHECK_EQ(hs_policy_parse("tel dir=rx remote=198.18.0.0/16 lport=9000-9099 dscp=46 "
				    "priority=7 rate=10M burst=64k", &r, &err), 0);
	hs_policy_format(&r, buf, sizeof(buf));
	EP_CHECK(strcmp(buf, "tel dir=rx remote=198.18.0.0/16 lport=9000-9099 dscp=46 priority=7 "
			"rate=10000000 burst=65536") == 0);
	EP_CHECK_EQ(hs_policy_parse("x priority=8", &r, &err), -1);
	EP_CHECK(strstr(err.msg, "priority") != NULL);
	EP_CHECK_EQ(hs_policy_parse("x dir=tx redirect=198.18.31.2", &r, &err), -1);
	EP_CHECK_EQ(hs_policy_parse("x remote=198.18.0.0/16 local=2001:db8::/32", &r, &err), -1);
	EP_CHECK_EQ(hs_policy_parse("x burst=1k", &r, &err), -1);
	EP_CHECK_EQ(hs_policy_parse("x color=red", &r, &err), -1);
}

EP_TEST(policy_classifies_by_port_range_address_and_dscp_first_match_wins)
{
	struct hs_stack *s = th_stack();
	struct ep_err err;

	EP_CHECK_EQ(hs_policy_add(s, "tel lport=9000-9099 dscp=46 priority=7", -1, &err), 0);
	EP_CHECK_EQ(hs_policy_add(s, "bulk lport=9000-9999 priority=1", -1, &err), 0);
	EP_CHECK_EQ(hs_policy_add(s, "peer6 remote=2001:db8:30::/64 priority=5", -1, &err), 0);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("198.18.30.9", 1, "198.18.30.1", 9050, 46)), 1);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("198.18.30.9", 1, "198.18.30.1", 9050, 0)), 2);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("198.18.30.9", 1, "198.18.30.1", 9500, 46)), 2);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("198.18.30.9", 1, "198.18.30.1", 8000, 46)), 0);
	EP_CHECK_EQ(classify1(s, HS_DIR_TX, flow("2001:db8:30::9", 1, "2001:db8:30::1", 1, 0)), 3);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("2001:db8:31::9", 1, "2001:db8:30::1", 1, 0)), 0);
	th_stack_free(s);
}

EP_TEST(policy_direction_limits_a_rule_to_one_path)
{
	struct hs_stack *s = th_stack();
	struct ep_err err;

	EP_CHECK_EQ(hs_policy_add(s, "in dir=rx lport=5220 rate=40M", -1, &err), 0);
	EP_CHECK_EQ(classify1(s, HS_DIR_RX, flow("198.18.30.2", 40000, "198.18.30.1", 5220, 0)), 1);
	EP_CHECK_EQ(classify1(s, HS_DIR_TX, flow("198.18.30.2", 40000, "198.18.30.1", 5220, 0)), 0);
	th_stack_free(s);
}

EP_TEST(policy_meter_drops_above_the_rate_and_keeps_its_bucket_across_other_changes)
{
	struct hs_stack *s = th_stack();
	struct hs_wctx *c = s->w[0];
	struct ep_err err;
	uint64_t now = rte_rdtsc(), passed = 0;
	uint32_t slot, mgen;

	EP_CHECK_EQ(hs_policy_add(s, "lim lport=1 rate=8M burst=100000", -1, &err), 0);
	/* 1 MB/s with a 100 kB bucket: at one instant, 100 datagrams of 1000 B
	 * pass and the rest is red. */
	for (int i = 0; i < 200; i++)
		passed += hs_policy_meter(c, &s->policy->rules[0], HS_DIR_RX, 1000, now);
	EP_CHECK_EQ(passed, 100);
	slot = s->policy->rules[0].slot;
	mgen = s->policy->rules[0].mgen;
	/* Another rule comes and goes: this one keeps its slot and its (empty) bucket. */
	EP_CHECK_EQ(hs_policy_add(s, "other lport=2 priority=3", 0, &err), 0);
	EP_CHECK_EQ(s->policy->rules[1].slot, slot);
	EP_CHECK_EQ(s->policy->rules[1].mgen, mgen);
	EP_CHECK(!hs_policy_meter(c, &s->policy->rules[1], HS_DIR_RX, 1000, now));
	/* Its own rate changes: a fresh bucket. */
	EP_CHECK_EQ(hs_policy_del(s, "lim", &err), 0);
	EP_CHECK_EQ(hs_policy_add(s, "lim lport=1 rate=16M burst=100000", -1, &err), 0);
	EP_CHECK(hs_policy_meter(c, &s->policy->rules[1], HS_DIR_RX, 1000, now));
	th_stack_free(s);
}
