/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-packet helpers of proto/ (ep_ip.h, ep_rx.h, the MPLS branch of
 * ep_parse.h) and the text forms of ep_addr.h, each case named for what it
 * shows.
 */
#include <stdlib.h>

#include "ep_test.h"
#include "ep_addr.h"
#include "ep_ip.h"
#include "ep_parse.h"
#include "ep_rx.h"
#include "test_pkt.h"

static uint8_t buf[2048];

/* ---- addresses ---- */

EP_TEST(addr_parse_takes_both_families_and_refuses_the_rest)
{
	uint8_t a[16];

	EP_CHECK_EQ(ep_addr_parse("198.18.0.1", a), 4);
	EP_CHECK_EQ(a[0], 198);
	EP_CHECK_EQ(a[4], 0);                   /* zero-padded */
	EP_CHECK_EQ(ep_addr_parse("2001:db8::1", a), 6);
	EP_CHECK_EQ(a[15], 1);
	EP_CHECK_EQ(ep_addr_parse("198.18.0.256", a), 0);
	EP_CHECK_EQ(ep_addr_parse("198.18.0.1/24", a), 0);
	EP_CHECK_EQ(ep_addr_parse("", a), 0);
	EP_CHECK_EQ(ep_addr_parse(NULL, a), 0);
}

EP_TEST(prefix_parse_flags_decide_bare_addresses_and_host_bits)
{
	uint8_t a[16], plen = 0;
	struct ep_err err;

	EP_CHECK_EQ(ep_prefix_parse("198.18.4.0/22", a, &plen, 0, &err), 4);
	EP_CHECK_EQ(plen, 22);
	EP_CHECK(ep_prefix_parse("198.18.5.0/22", a, &plen, 0, &err) < 0);
	EP_CHECK(strstr(err.msg, "host bits") != NULL);
	EP_CHECK_EQ(ep_prefix_parse("198.18.5.9/22", a, &plen, EP_PREFIX_CLEAR_HOST, &err), 4);
	EP_CHECK_EQ(a[2], 4);
	EP_CHECK_EQ(a[3], 0);
	EP_CHECK_EQ(ep_prefix_parse("198.18.5.9/22", a, &plen, EP_PREFIX_KEEP_HOST, &err), 4);
	EP_CHECK_EQ(a[3], 9);
	EP_CHECK(ep_prefix_parse("198.18.5.9", a, &plen, 0, &err) < 0);
	EP_CHECK(strstr(err.msg, "prefix length") != NULL);
	EP_CHECK_EQ(ep_prefix_parse("198.18.5.9", a, &plen, EP_PREFIX_BARE_OK, &err), 4);
	EP_CHECK_EQ(plen, 32);
	EP_CHECK_EQ(ep_prefix_parse("2001:db8:1::/48", a, &plen, 0, &err), 6);
	EP_CHECK_EQ(plen, 48);
	EP_CHECK(ep_prefix_parse("2001:db8::/129", a, &plen, 0, &err) < 0);
	EP_CHECK(strstr(err.msg, "0..128") != NULL);
	EP_CHECK(ep_prefix_parse("198.18.0.0/+8", a, &plen, 0, &err) < 0);
	EP_CHECK(ep_prefix_parse("198.18.0.0/", a, &plen, 0, &err) < 0);
	EP_CHECK(ep_prefix_parse("banana/8", a, &plen, 0, &err) < 0);
	EP_CHECK(strstr(err.msg, "banana") != NULL);
	EP_CHECK_EQ(ep_prefix_parse("0.0.0.0/0", a, &plen, 0, &err), 4);
	EP_CHECK_EQ(plen, 0);
}

EP_TEST(mac_parse_wants_six_colon_separated_hex_bytes)
{
	struct rte_ether_addr m = {{0}};

	EP_CHECK_EQ(ep_parse_mac("02:00:00:0A:0b:ff", &m), 0);
	EP_CHECK_EQ(m.addr_bytes[3], 0x0a);
	EP_CHECK_EQ(m.addr_bytes[5], 0xff);
	EP_CHECK(ep_parse_mac("02:00:00:0a:0b", &m) < 0);
	EP_CHECK(ep_parse_mac("02-00-00-0a-0b-0c", &m) < 0);
	EP_CHECK(ep_parse_mac("02:00:00:0a:0b:0g", &m) < 0);
	EP_CHECK(ep_parse_mac(" 2:00:00:0a:0b:0c", &m) < 0);
	EP_CHECK_EQ(m.addr_bytes[5], 0xff);     /* a refused text leaves it as it was */
}

EP_TEST(prefix_contains_and_text_round_trip)
{
	uint8_t net[16], ip[16], plen;
	char txt[EP_PREFIX_STRLEN];
	struct ep_err err;

	ep_prefix_parse("2001:db8:ab00::/40", net, &plen, 0, &err);
	ep_addr_parse("2001:db8:abff::1", ip);
	EP_CHECK(ep_prefix_contains(net, plen, ip));
	ep_addr_parse("2001:db8:ac00::1", ip);
	EP_CHECK(!ep_prefix_contains(net, plen, ip));
	EP_CHECK(strcmp(ep_prefix_str(6, net, plen, txt, sizeof(txt)), "2001:db8:ab00::/40") == 0);
}

/* ---- TTL, DSCP ---- */

EP_TEST(ttl_dec_updates_the_checksum_as_a_full_recompute_would)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint8_t *l3 = buf + 14;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

	for (int ttl = 2; ttl <= 255; ttl += 17) {
		uint16_t want;

		s.ttl = (uint8_t)ttl;
		tp_build(buf, &s);
		EP_CHECK_EQ(ep_ip_ttl_dec(l3, EP_L3_IPV4), 0);
		EP_CHECK_EQ(ip->time_to_live, ttl - 1);
		want = ip->hdr_checksum;
		ip->hdr_checksum = 0;
		EP_CHECK_EQ(want, rte_ipv4_cksum(ip));
		EP_CHECK_EQ(ep_ip_ttl(l3, EP_L3_IPV4), ttl - 1);
	}
}

/* The TTL decrement's short update equals RFC 1624's general one for every
 * checksum value the header may carry (valid or not: it is not verified on
 * every path that decrements), and any TTL and protocol; so does the
 * checked decrement (ep_ip_ttl_dec: the TTL test, then the same update), which
 * leaves the protocol as it was. */
EP_TEST(ttl_dec_checksum_equals_rfc1624_update_for_every_checksum_value)
{
	struct rte_ipv4_hdr ip, ip2;
	uint32_t bad = 0;

	memset(&ip, 0, sizeof(ip));
	for (uint32_t c = 0; c <= 0xffff; c++) {
		uint16_t old_w, new_w, want;

		ip.time_to_live = (uint8_t)(2 + c % 254);
		ip.next_proto_id = (uint8_t)(c >> 8);
		ip.hdr_checksum = (uint16_t)c;
		ip2 = ip;
		memcpy(&old_w, &ip.time_to_live, 2);
		new_w = (uint16_t)(old_w - RTE_BE16(0x0100));
		want = ep_csum_update16((uint16_t)c, old_w, new_w);
		ep_ipv4_ttl_dec(&ip);
		bad += ip.hdr_checksum != want || ip.time_to_live != (uint8_t)(1 + c % 254);
		bad += ep_ip_ttl_dec((uint8_t *)&ip2, EP_L3_IPV4) != 0;
		bad += memcmp(&ip, &ip2, sizeof(ip)) != 0;
	}
	EP_CHECK_EQ(bad, 0);
}

EP_TEST(ttl_zero_or_one_is_expired_and_left_alone)
{
	static const struct { int v6; uint8_t ttl; int rc; } cases[] = {
		{ 0, 1, EP_DROP_IPV4_TTL_EXPIRED }, { 0, 0, EP_DROP_IPV4_TTL_EXPIRED },
		{ 1, 1, EP_DROP_IPV6_HOP_LIMIT_EXPIRED }, { 1, 0, EP_DROP_IPV6_HOP_LIMIT_EXPIRED },
	};

	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		struct tp_spec s = tp_default(cases[i].v6, IPPROTO_UDP);
		uint8_t before[64];

		s.ttl = cases[i].ttl;
		tp_build(buf, &s);
		memcpy(before, buf + 14, sizeof(before));
		EP_CHECK_EQ(ep_ip_ttl_dec(buf + 14, cases[i].v6 ? EP_L3_IPV6 : EP_L3_IPV4),
			    cases[i].rc);
		EP_CHECK_MEM(buf + 14, before, sizeof(before));
	}
}

EP_TEST(hop_limit_dec_of_ipv6)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);

	s.ttl = 2;
	tp_build(buf, &s);
	EP_CHECK_EQ(ep_ip_ttl_dec(buf + 14, EP_L3_IPV6), 0);
	EP_CHECK_EQ(buf[14 + 7], 1);
}

EP_TEST(dscp_set_keeps_ecn_and_checksum_both_families)
{
	for (int v6 = 0; v6 <= 1; v6++) {
		struct tp_spec s = tp_default(v6, IPPROTO_UDP);
		uint8_t *l3 = buf + 14;

		tp_build(buf, &s);
		/* ECN CE (3) in the low bits of the TOS / traffic class. */
		if (v6)
			l3[1] |= 0x30;
		else {
			l3[1] |= 3;
			tp_fix_ipv4_cksum(buf, 14);
		}
		EP_CHECK_EQ(ep_ip_dscp(l3, v6 ? EP_L3_IPV6 : EP_L3_IPV4), 0);
		ep_ip_set_dscp(l3, v6 ? EP_L3_IPV6 : EP_L3_IPV4, 46);
		EP_CHECK_EQ(ep_ip_dscp(l3, v6 ? EP_L3_IPV6 : EP_L3_IPV4), 46);
		if (v6) {
			EP_CHECK_EQ(l3[0] >> 4, 6);
			EP_CHECK_EQ((l3[1] >> 4) & 3, 3);
		} else {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
			uint16_t got = ip->hdr_checksum;

			EP_CHECK_EQ(l3[1] & 3, 3);
			ip->hdr_checksum = 0;
			EP_CHECK_EQ(got, rte_ipv4_cksum(ip));
		}
	}
}

/* ---- martians, prefix sets ---- */

EP_TEST(martian_addresses_of_both_families)
{
	static const char *const bad4[] = { "0.1.2.3", "127.0.0.1", "169.254.9.9", "224.0.0.5",
					    "255.255.255.255" };
	static const char *const bad6[] = { "::", "::1", "ff02::1", "fe80::1", "::ffff:1.2.3.4" };
	uint8_t a[16];

	for (size_t i = 0; i < RTE_DIM(bad4); i++)
		EP_CHECK(ep_ipv4_martian(tp_ip4(bad4[i])));
	EP_CHECK(!ep_ipv4_martian(tp_ip4("198.18.0.1")));
	for (size_t i = 0; i < RTE_DIM(bad6); i++) {
		ep_addr_parse(bad6[i], a);
		EP_CHECK(ep_ipv6_martian(a));
	}
	ep_addr_parse("2001:db8::1", a);
	EP_CHECK(!ep_ipv6_martian(a));
}

EP_TEST(prefix_set_finds_sources_in_its_ranges_only)
{
	struct ep_prefix_set set;
	uint8_t v6[16];
	struct tp_spec s = tp_default(0, IPPROTO_UDP);

	memset(&set, 0, sizeof(set));
	RTE_BUILD_BUG_ON(sizeof(set) != RTE_CACHE_LINE_SIZE);
	ep_prefix_set_v4(&set, 0, htonl(tp_ip4("198.18.0.2")), 32);
	ep_prefix_set_v4(&set, 1, htonl(tp_ip4("198.18.8.77")), 24);   /* host bits cleared */
	ep_addr_parse("2001:db8:0:1::", v6);
	ep_prefix_set_v6(&set, v6, 56);
	tp_build(buf, &s);
	EP_CHECK(ep_prefix_set_has_src(&set, 2, true, buf + 14, EP_L3_IPV4));
	s.src4 = tp_ip4("198.18.8.200");
	tp_build(buf, &s);
	EP_CHECK(ep_prefix_set_has_src(&set, 2, true, buf + 14, EP_L3_IPV4));
	EP_CHECK(!ep_prefix_set_has_src(&set, 1, true, buf + 14, EP_L3_IPV4));
	s.src4 = tp_ip4("198.18.9.1");
	tp_build(buf, &s);
	EP_CHECK(!ep_prefix_set_has_src(&set, 2, true, buf + 14, EP_L3_IPV4));
	s = tp_default(1, IPPROTO_UDP);       /* 2001:db8:0:1::2 */
	tp_build(buf, &s);
	EP_CHECK(ep_prefix_set_has_src(&set, 2, true, buf + 14, EP_L3_IPV6));
	EP_CHECK(!ep_prefix_set_has_src(&set, 2, false, buf + 14, EP_L3_IPV6));
	tp_ip6(s.src6, "2001:db8:0:100::2");
	tp_build(buf, &s);
	EP_CHECK(!ep_prefix_set_has_src(&set, 2, true, buf + 14, EP_L3_IPV6));
}

/* ---- MPLS ---- */

/* An MPLS frame: @p labels entries (the last with S=1) over the IP packet
 * of @p s.  Returns its length. */
static uint16_t
mpls_frame(const struct tp_spec *s, int labels)
{
	uint8_t ip[1500];
	uint16_t len = tp_build(ip, s), o = 12;

	memcpy(buf, ip, 12);
	buf[o++] = 0x88;
	buf[o++] = 0x47;
	for (int k = 0; k < labels; k++) {
		uint32_t lse = htonl((uint32_t)(1000 + k) << 12 | (k == labels - 1) << 8 | 64);

		memcpy(buf + o, &lse, 4);
		o += 4;
	}
	memcpy(buf + o, ip + 14, len - 14u);
	return (uint16_t)(o + len - 14);
}

EP_TEST(mpls_stack_is_walked_to_ip_when_the_pipeline_asks)
{
	for (int labels = 1; labels <= EP_PARSE_MPLS_MAX; labels++) {
		for (int v6 = 0; v6 <= 1; v6++) {
			struct tp_spec s = tp_default(v6, IPPROTO_UDP);
			uint16_t len = mpls_frame(&s, labels);
			struct ep_meta m;

			EP_CHECK_EQ(ep_parse_opts(buf, len, len, &m, EP_PARSE_F_MPLS), 0);
			EP_CHECK_EQ(m.l3_type, v6 ? EP_L3_IPV6 : EP_L3_IPV4);
			EP_CHECK_EQ(m.l3_off, 14 + 4 * labels);
			EP_CHECK(m.flags & EP_META_F_MPLS);
			EP_CHECK(m.flags & EP_META_F_HAS_L4);
			/* Without the flag it is an EtherType the pipeline does not take. */
			EP_CHECK_EQ(ep_parse(buf, len, len, &m), EP_DROP_ETHERTYPE_UNSUPPORTED);
		}
	}
}

EP_TEST(mpls_too_deep_not_ip_or_truncated_is_refused)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = mpls_frame(&s, EP_PARSE_MPLS_MAX + 1);

	EP_CHECK_EQ(ep_parse_opts(buf, len, len, &m, EP_PARSE_F_MPLS), EP_DROP_MPLS_UNSUPPORTED);
	len = mpls_frame(&s, 1);
	buf[18] = 0x10;                         /* version nibble 1 under the stack */
	EP_CHECK_EQ(ep_parse_opts(buf, len, len, &m, EP_PARSE_F_MPLS), EP_DROP_MPLS_UNSUPPORTED);
	len = mpls_frame(&s, 2);
	for (uint16_t cut = 14; cut < 14 + 8 + 1; cut++) {
		uint8_t *copy = malloc(cut);

		memcpy(copy, buf, cut);
		EP_CHECK_EQ(ep_parse_opts(copy, cut, cut, &m, EP_PARSE_F_MPLS), EP_DROP_L2_TRUNCATED);
		free(copy);
	}
}

/* ---- the parse prologue ---- */

EP_TEST(rx_not_for_us_is_unicast_to_another_mac_only)
{
	static const struct rte_ether_addr mine = {{0x02, 0, 0, 0, 0x01, 0x01}};
	static const uint8_t other[6] = {0x02, 0, 0, 0, 0x01, 0x02};
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t mcast[6] = {0x33, 0x33, 0xff, 0, 0, 1};
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint16_t len = tp_build(buf, &s);
	struct rte_mbuf *m = ep_test_mbuf(buf, len);

	EP_CHECK(!ep_rx_not_for_us(m, &mine));
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), other, 6);
	EP_CHECK(ep_rx_not_for_us(m, &mine));
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), bcast, 6);
	EP_CHECK(!ep_rx_not_for_us(m, &mine));
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), mcast, 6);
	EP_CHECK(!ep_rx_not_for_us(m, &mine));
	rte_pktmbuf_free(m);
}
