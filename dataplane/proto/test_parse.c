/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parser cases: valid frames with 0/1/2 VLAN tags, truncation at every
 * header boundary, each malformed IPv4 field, IPv6 extension-header chains,
 * ARP.  Every frame is parsed from a heap copy of exactly its length, so
 * under ASAN a read one byte past the frame fails the test run.
 */
#include <stdlib.h>

#include "ep_test.h"
#include "ep_parse.h"
#include "test_pkt.h"

static uint8_t buf[2048];

/* Parse @p len bytes of buf from an exact-size copy. */
static int
parse_n(uint16_t len, uint32_t frame_len, struct ep_meta *m)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, buf, len);
	memset(m, 0xa5, sizeof(*m));
	rc = ep_parse(copy, len, frame_len, m);
	free(copy);
	return rc;
}

static int
parse(uint16_t len, struct ep_meta *m)
{
	return parse_n(len, len, m);
}

static void
check_valid(struct tp_spec *s, uint8_t l3_type, uint8_t n_vlans)
{
	struct ep_meta m;
	uint16_t len = tp_build(buf, s);
	uint16_t l3 = (uint16_t)(14 + 4 * n_vlans);

	EP_CHECK_EQ(parse(len, &m), 0);
	EP_CHECK_EQ(m.l3_type, l3_type);
	EP_CHECK_EQ(m.n_vlans, n_vlans);
	EP_CHECK_EQ(m.l3_off, l3);
	EP_CHECK_EQ(m.l4_off, l3 + (s->v6 ? 40 : 20));
	EP_CHECK_EQ(m.l4_proto, s->proto);
	EP_CHECK_EQ(m.l3_len, len - l3);
	EP_CHECK_EQ(m.flags, EP_META_F_HAS_L4);
	if (n_vlans >= 1)
		EP_CHECK_EQ(m.vlan_tci[0], s->vid[0]);
	if (n_vlans == 2)
		EP_CHECK_EQ(m.vlan_tci[1], s->vid[1]);
}

EP_TEST(ipv4_udp_untagged_is_valid)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	check_valid(&s, EP_L3_IPV4, 0);
}

EP_TEST(ipv4_tcp_one_vlan_tag_is_valid)
{
	struct tp_spec s = tp_default(0, IPPROTO_TCP);
	s.n_vlans = 1;
	check_valid(&s, EP_L3_IPV4, 1);
}

EP_TEST(ipv4_icmp_qinq_88a8_8100_is_valid)
{
	struct tp_spec s = tp_default(0, IPPROTO_ICMP);
	s.n_vlans = 2;
	s.tpid[0] = RTE_ETHER_TYPE_QINQ;
	check_valid(&s, EP_L3_IPV4, 2);
}

EP_TEST(ipv4_udp_qinq_9100_outer_is_valid)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	s.n_vlans = 2;
	s.tpid[0] = 0x9100;
	check_valid(&s, EP_L3_IPV4, 2);
}

EP_TEST(ipv6_udp_untagged_is_valid)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	check_valid(&s, EP_L3_IPV6, 0);
}

EP_TEST(ipv6_tcp_one_vlan_tag_is_valid)
{
	struct tp_spec s = tp_default(1, IPPROTO_TCP);
	s.n_vlans = 1;
	check_valid(&s, EP_L3_IPV6, 1);
}

EP_TEST(ipv6_icmpv6_two_vlan_tags_is_valid)
{
	struct tp_spec s = tp_default(1, IPPROTO_ICMPV6);
	s.n_vlans = 2;
	s.tpid[0] = RTE_ETHER_TYPE_QINQ;
	check_valid(&s, EP_L3_IPV6, 2);
}

EP_TEST(three_vlan_tags_are_too_many)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint8_t frame[2048];
	uint16_t len;

	s.n_vlans = 2;
	len = tp_build(frame, &s);
	/* Insert a third 0x8100 tag after the second. */
	memcpy(buf, frame, 20);
	buf[20] = 0x81; buf[21] = 0x00; buf[22] = 0x01; buf[23] = 0x2c;
	memcpy(buf + 24, frame + 20, len - 20u);
	EP_CHECK_EQ(parse((uint16_t)(len + 4), &m), EP_DROP_VLAN_TOO_MANY);
}

EP_TEST(unknown_ethertype_is_unsupported)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[12] = 0x88; buf[13] = 0xcc;   /* LLDP */
	EP_CHECK_EQ(parse(len, &m), EP_DROP_ETHERTYPE_UNSUPPORTED);
	EP_CHECK_EQ(m.l3_off, 14);
	EP_CHECK_EQ(m.l3_type, EP_L3_NONE);
}

/*
 * Cut a frame at every length from 0 to its end: the reason must name the
 * layer the cut falls in.  With the IP length fields intact, a cut inside the
 * payload is a length-field error (the header claims more than the frame).
 */
static void
check_truncations(struct tp_spec *s)
{
	uint16_t len = tp_build(buf, s);
	uint16_t l3 = (uint16_t)(14 + 4 * s->n_vlans);
	uint16_t iph = s->v6 ? 40 : 20;
	struct ep_meta m;

	for (uint16_t cut = 0; cut < len; cut++) {
		int want;

		if (cut < l3)
			want = EP_DROP_L2_TRUNCATED;
		else if (cut < l3 + iph)
			want = s->v6 ? EP_DROP_IPV6_TRUNCATED : EP_DROP_IPV4_TRUNCATED;
		else
			want = s->v6 ? EP_DROP_IPV6_BAD_PAYLOAD_LENGTH :
				EP_DROP_IPV4_BAD_TOTAL_LENGTH;
		if (parse(cut, &m) != want) {
			printf("    cut at %u of %u: got %d want %d\n", cut, len,
			       parse(cut, &m), want);
			ep_test_failed = 1;
		}
	}
	EP_CHECK_EQ(parse(len, &m), 0);
}

EP_TEST(truncated_ipv4_at_every_length_untagged)
{
	struct tp_spec s = tp_default(0, IPPROTO_TCP);
	check_truncations(&s);
}

EP_TEST(truncated_ipv4_at_every_length_two_tags)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	s.n_vlans = 2;
	check_truncations(&s);
}

EP_TEST(truncated_ipv6_at_every_length_one_tag)
{
	struct tp_spec s = tp_default(1, IPPROTO_TCP);
	s.n_vlans = 1;
	check_truncations(&s);
}

/* The IP header claims just less than a full L4 header. */
static void
check_l4_truncated(int v6, uint8_t proto, uint16_t l4_have)
{
	struct tp_spec s = tp_default(v6, proto);
	struct ep_meta m;
	uint16_t len;

	s.payload = 0;
	len = tp_build(buf, &s);
	if (v6) {
		buf[18] = 0;
		buf[19] = (uint8_t)l4_have;
	} else {
		buf[16] = 0;
		buf[17] = (uint8_t)(20 + l4_have);
		tp_fix_ipv4_cksum(buf, 14);
	}
	EP_CHECK_EQ(parse(len, &m), EP_DROP_L4_TRUNCATED);
}

EP_TEST(truncated_l4_headers_tcp_udp_icmp)
{
	check_l4_truncated(0, IPPROTO_TCP, 19);
	check_l4_truncated(0, IPPROTO_UDP, 7);
	check_l4_truncated(0, IPPROTO_ICMP, 7);
	check_l4_truncated(1, IPPROTO_TCP, 19);
	check_l4_truncated(1, IPPROTO_UDP, 7);
	check_l4_truncated(1, IPPROTO_ICMPV6, 3);
}

EP_TEST(headers_beyond_first_segment_are_truncated)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	/* Whole frame is long enough, but only 24 bytes are contiguous. */
	EP_CHECK_EQ(parse_n(24, len, &m), EP_DROP_IPV4_TRUNCATED);
}

EP_TEST(ipv4_bad_version)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[14] = 0x65;
	tp_fix_ipv4_cksum(buf, 14);
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_VERSION);
}

EP_TEST(ipv4_bad_ihl_below_five)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	for (uint8_t ihl = 0; ihl < 5; ihl++) {
		buf[14] = (uint8_t)(0x40 | ihl);
		EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_IHL);
	}
}

EP_TEST(ipv4_bad_ihl_beyond_frame)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len;

	s.payload = 0;
	len = tp_build(buf, &s);    /* 14 + 20 + 8 = 42 bytes */
	buf[14] = 0x4f;             /* 60-byte header in a 28-byte packet */
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_IHL);
}

EP_TEST(ipv4_options_are_skipped_to_l4)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint8_t frame[2048];
	uint16_t len = tp_build(frame, &s);

	/* Rebuild with a 4-byte NOP option block: IHL 6. */
	memcpy(buf, frame, 34);
	memset(buf + 34, 1, 4);
	memcpy(buf + 38, frame + 34, len - 34u);
	buf[14] = 0x46;
	buf[16] = 0;
	buf[17] = (uint8_t)(frame[17] + 4);
	tp_fix_ipv4_cksum(buf, 14);
	EP_CHECK_EQ(parse((uint16_t)(len + 4), &m), 0);
	EP_CHECK_EQ(m.l4_off, 38);
	EP_CHECK_EQ(m.flags, EP_META_F_HAS_L4);
}

EP_TEST(ipv4_bad_checksum)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[24] ^= 0x01;
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_CHECKSUM);
	buf[24] ^= 0x01;
	buf[22] = 7;     /* TTL changed, checksum not */
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_CHECKSUM);
}

/* The 20-byte header fast path of ep_ipv4_cksum_ok (a divisibility test)
 * against the RFC 1071 fold of rte_raw_cksum: random headers with their
 * checksum right, off by one bit, and random; all-zero and all-ones
 * headers; every header whose sum is a multiple of 0xffff is one of the
 * valid cases, every other one not. */
EP_TEST(ipv4_checksum_fast_path_agrees_with_rfc1071_fold)
{
	uint8_t h[20];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int disagree = 0, valid = 0;

	for (int i = 0; i < 200000; i++) {
		for (int k = 0; k < 20; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			h[k] = (uint8_t)x;
		}
		if (i % 3 != 2) {
			uint16_t c;

			h[10] = h[11] = 0;
			c = (uint16_t)~rte_raw_cksum(h, 20);
			memcpy(h + 10, &c, 2);
			if (i % 3 == 1)
				h[x % 20] ^= (uint8_t)(1u << (x >> 8) % 8);
		}
		valid += rte_raw_cksum(h, 20) == 0xffff;
		disagree += ep_ipv4_cksum_ok(h, 20) != (rte_raw_cksum(h, 20) == 0xffff);
	}
	EP_CHECK_EQ(disagree, 0);
	EP_CHECK(valid > 60000);
	memset(h, 0, sizeof(h));
	EP_CHECK_EQ(ep_ipv4_cksum_ok(h, 20), 0);
	memset(h, 0xff, sizeof(h));
	EP_CHECK_EQ(ep_ipv4_cksum_ok(h, 20), rte_raw_cksum(h, 20) == 0xffff);
}

typedef int (*fast_parse_fn)(const uint8_t *p, uint32_t seg_len, uint32_t frame_len,
			     struct ep_meta *m);

/* Fast path @p fast against ep_parse over 100,000 frames (@p tags sets frame
 * i's tags, @p want_tags of them being the fast path's kind; IPv4 header at
 * @p l3 there), IPv4 and IPv6, TCP, UDP, ICMP and other protocols, mutated
 * (tp_mutate): wherever it takes a frame, ep_parse accepts it with the same
 * ep_meta; where it does not, it left ep_meta untouched; and it takes every
 * plain IPv4 frame with those tags. */
static void
fast_path_agrees_with_ep_parse(fast_parse_fn fast_fn, void (*tags)(struct tp_spec *, int),
			       int want_tags, unsigned int l3, uint64_t x)
{
	static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP, IPPROTO_GRE,
					  IPPROTO_ICMPV6 };
	unsigned int taken = 0, plain = 0, wrong = 0;

	for (int i = 0; i < 100000; i++) {
		struct tp_spec sp = tp_default(i % 11 == 10, protos[i % 5]);
		struct ep_meta fast, full;
		uint32_t seg, frame;
		uint16_t len;

		tags(&sp, i);
		len = tp_build(buf, &sp);
		tp_mutate(buf, len, l3, l3 + 16, &x, &seg, &frame);
		memset(&fast, 0x5a, sizeof(fast));
		memset(&full, 0x5a, sizeof(full));
		if (fast_fn(buf, seg, frame, &fast) == 0) {
			taken++;
			wrong += ep_parse(buf, seg, frame, &full) != 0 ||
				 memcmp(&fast, &full, sizeof(fast)) != 0;
		} else {
			wrong += memcmp(&fast, &full, sizeof(fast)) != 0;   /* untouched */
		}
		plain += x % 8 < 3 && !sp.v6 && sp.n_vlans == want_tags;
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(taken >= plain);
	EP_CHECK(plain > 20000);
}

static void
untagged_mostly(struct tp_spec *sp, int i)
{
	sp->n_vlans = i % 7 == 6;
}

/* ep_parse_ipv4_plain: untagged frames and a few with one tag. */
EP_TEST(ipv4_plain_fast_path_agrees_with_ep_parse)
{
	fast_path_agrees_with_ep_parse(ep_parse_ipv4_plain, untagged_mostly, 0,
				       RTE_ETHER_HDR_LEN, 0x2545f4914f6cdd1dull);
}

static void
two_tags_mostly(struct tp_spec *sp, int i)
{
	static const uint16_t tpids[] = { RTE_ETHER_TYPE_VLAN, RTE_ETHER_TYPE_QINQ,
					  EP_ETHER_TYPE_QINQ_9100 };

	sp->n_vlans = i % 7 == 6 ? i % 2 : 2;
	sp->tpid[0] = tpids[i % 3];
	sp->tpid[1] = tpids[(i / 3) % 3];
	sp->vid[0] = (uint16_t)(i & 0xfff);
	sp->vid[1] = (uint16_t)((i * 7) & 0xfff);
}

/* The QinQ variant the vBNG uplink takes first (both TCIs, n_vlans 2):
 * frames with 0-2 tags of each TPID. */
EP_TEST(qinq_ipv4_plain_fast_path_agrees_with_ep_parse)
{
	fast_path_agrees_with_ep_parse(ep_parse_qinq_ipv4_plain, two_tags_mostly, 2,
				       RTE_ETHER_HDR_LEN + 8, 0x853c49e6748fea9bull);
}

EP_TEST(ipv4_bad_total_length_below_header)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[16] = 0;
	buf[17] = 19;
	tp_fix_ipv4_cksum(buf, 14);
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_TOTAL_LENGTH);
}

EP_TEST(ipv4_bad_total_length_beyond_frame)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[17]++;
	tp_fix_ipv4_cksum(buf, 14);
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV4_BAD_TOTAL_LENGTH);
}

EP_TEST(ipv4_ethernet_padding_is_accepted)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len;

	s.payload = 0;
	len = tp_build(buf, &s);           /* 42 bytes */
	memset(buf + len, 0, 60u - len);
	EP_CHECK_EQ(parse(60, &m), 0);
	EP_CHECK_EQ(m.l3_len, 28);
}

EP_TEST(ipv4_ttl_zero_and_one_are_not_a_parser_matter)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;

	s.ttl = 0;
	EP_CHECK_EQ(parse(tp_build(buf, &s), &m), 0);
	s.ttl = 1;
	EP_CHECK_EQ(parse(tp_build(buf, &s), &m), 0);
}

EP_TEST(ipv4_first_fragment_keeps_l4_later_fragment_has_none)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	struct ep_meta m;

	s.frag = RTE_IPV4_HDR_MF_FLAG;
	EP_CHECK_EQ(parse(tp_build(buf, &s), &m), 0);
	EP_CHECK_EQ(m.flags, EP_META_F_FRAGMENT | EP_META_F_HAS_L4);
	s.frag = 185;    /* offset 1480 bytes, last fragment */
	EP_CHECK_EQ(parse(tp_build(buf, &s), &m), 0);
	EP_CHECK_EQ(m.flags, EP_META_F_FRAGMENT);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_UDP);
}

EP_TEST(ipv4_tiny_first_fragment_is_l4_truncated)
{
	struct tp_spec s = tp_default(0, IPPROTO_TCP);
	struct ep_meta m;
	uint16_t len;

	s.frag = RTE_IPV4_HDR_MF_FLAG;
	s.payload = 0;
	len = tp_build(buf, &s);
	buf[17] = 20 + 8;    /* first fragment carries only 8 bytes of TCP */
	tp_fix_ipv4_cksum(buf, 14);
	EP_CHECK_EQ(parse(len, &m), EP_DROP_L4_TRUNCATED);
}

EP_TEST(ipv6_bad_version)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[14] = 0x40;
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV6_BAD_VERSION);
}

EP_TEST(ipv6_payload_length_beyond_frame)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len = tp_build(buf, &s);

	buf[19]++;
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV6_BAD_PAYLOAD_LENGTH);
}

EP_TEST(ipv6_ethernet_padding_is_accepted)
{
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len;

	s.payload = 0;
	len = tp_build(buf, &s);    /* 62 bytes */
	memset(buf + len, 0, 8);
	EP_CHECK_EQ(parse((uint16_t)(len + 8), &m), 0);
	EP_CHECK_EQ(m.l3_len, 48);
}

EP_TEST(ipv6_jumbogram_is_bad_payload_length)
{
	static const uint8_t hbh[8] = {IPPROTO_UDP, 0, 0xc2, 4, 0, 0, 0, 0};
	struct tp_spec s = tp_default(1, IPPROTO_UDP);
	struct ep_meta m;
	uint16_t len;

	s.ext = hbh;
	s.ext_len = 8;
	s.ext_first = IPPROTO_HOPOPTS;
	len = tp_build(buf, &s);
	buf[18] = buf[19] = 0;
	EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV6_BAD_PAYLOAD_LENGTH);
}

/* Build an IPv6/UDP frame behind @p ext and parse it. */
static int
parse_ext(const uint8_t *ext, uint16_t ext_len, uint8_t first, uint8_t proto,
	  struct ep_meta *m)
{
	struct tp_spec s = tp_default(1, proto);

	s.ext = ext;
	s.ext_len = ext_len;
	s.ext_first = first;
	return parse(tp_build(buf, &s), m);
}

EP_TEST(ipv6_ext_hop_by_hop_routing_dstopts_chain_reaches_udp)
{
	uint8_t ext[8 + 24 + 16] = {0};
	struct ep_meta m;

	ext[0] = IPPROTO_ROUTING;  ext[1] = 0;           /* HBH, 8 bytes */
	ext[8] = IPPROTO_DSTOPTS;  ext[9] = 2;           /* Routing, 24 bytes */
	ext[32] = IPPROTO_UDP;     ext[33] = 1;          /* DstOpts, 16 bytes */
	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_HOPOPTS, IPPROTO_UDP, &m), 0);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_UDP);
	EP_CHECK_EQ(m.l4_off, 14 + 40 + 48);
	EP_CHECK_EQ(m.flags, EP_META_F_HAS_L4);
}

EP_TEST(ipv6_ext_ah_length_counts_in_4_byte_units)
{
	uint8_t ext[24] = {0};
	struct ep_meta m;

	ext[0] = IPPROTO_TCP;
	ext[1] = 4;          /* (4 + 2) * 4 = 24 bytes; in 8-byte units it would be 40 */
	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_AH, IPPROTO_TCP, &m), 0);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_TCP);
	EP_CHECK_EQ(m.l4_off, 14 + 40 + 24);
}

EP_TEST(ipv6_ext_first_fragment_has_l4)
{
	uint8_t ext[8] = {IPPROTO_UDP, 0, 0x00, 0x01, 0, 0, 0, 1};   /* offset 0, M=1 */
	struct ep_meta m;

	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_FRAGMENT, IPPROTO_UDP, &m), 0);
	EP_CHECK_EQ(m.flags, EP_META_F_FRAGMENT | EP_META_F_HAS_L4);
	EP_CHECK_EQ(m.l4_off, 14 + 48);
}

EP_TEST(ipv6_ext_later_fragment_stops_without_l4)
{
	uint8_t ext[8] = {IPPROTO_TCP, 0, 0x05, 0xc8, 0, 0, 0, 1};   /* offset 185*8 */
	struct ep_meta m;

	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_FRAGMENT, IPPROTO_TCP, &m), 0);
	EP_CHECK_EQ(m.flags, EP_META_F_FRAGMENT);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_TCP);
}

EP_TEST(ipv6_ext_esp_and_no_next_header_stop_the_walk)
{
	uint8_t ext[8] = {IPPROTO_ESP, 0};
	struct ep_meta m;

	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_DSTOPTS, 0x32, &m), 0);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_ESP);
	EP_CHECK_EQ(m.flags, 0);
	ext[0] = IPPROTO_NONE;
	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_DSTOPTS, 0x3b, &m), 0);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_NONE);
}

EP_TEST(ipv6_ext_length_past_payload_is_truncated)
{
	/* Claims 48 bytes; 16 + 8 (UDP) + 18 (payload) = 42 follow the IPv6 header. */
	uint8_t ext[16] = {IPPROTO_UDP, 5};
	struct ep_meta m;

	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_DSTOPTS, 0x11, &m),
		    EP_DROP_IPV6_EXT_TRUNCATED);
	ext[1] = 10;                          /* beyond the whole frame */
	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_DSTOPTS, 0x11, &m),
		    EP_DROP_IPV6_EXT_TRUNCATED);
}

EP_TEST(ipv6_ext_header_cut_at_its_first_bytes_is_truncated)
{
	struct tp_spec s = tp_default(1, IPPROTO_NONE);
	uint8_t ext[8] = {IPPROTO_NONE, 0};
	struct ep_meta m;
	uint16_t len;

	s.payload = 0;
	s.ext = ext;
	s.ext_len = 8;
	s.ext_first = IPPROTO_HOPOPTS;
	len = tp_build(buf, &s);
	for (uint8_t pl = 1; pl < 8; pl++) {
		buf[19] = pl;     /* payload ends inside the hop-by-hop header */
		EP_CHECK_EQ(parse(len, &m), EP_DROP_IPV6_EXT_TRUNCATED);
	}
}

EP_TEST(ipv6_ext_chain_longer_than_limit_is_too_many)
{
	uint8_t ext[8 * (EP_PARSE_IPV6_EXT_MAX + 1)] = {0};
	struct ep_meta m;

	for (int i = 0; i <= EP_PARSE_IPV6_EXT_MAX; i++)
		ext[8 * i] = i == EP_PARSE_IPV6_EXT_MAX ? IPPROTO_UDP : IPPROTO_DSTOPTS;
	EP_CHECK_EQ(parse_ext(ext, sizeof(ext), IPPROTO_DSTOPTS, IPPROTO_UDP, &m),
		    EP_DROP_IPV6_EXT_TOO_MANY);
	/* One header fewer is within the limit. */
	EP_CHECK_EQ(parse_ext(ext + 8, sizeof(ext) - 8, IPPROTO_DSTOPTS, IPPROTO_UDP, &m), 0);
	EP_CHECK_EQ(m.l4_proto, IPPROTO_UDP);
}

EP_TEST(arp_request_parses)
{
	static const uint8_t mac[6] = {2, 0, 0, 0, 0, 0x0a};
	struct ep_meta m;
	uint16_t len = tp_arp(buf, mac, 1, tp_ip4("198.18.0.2"), tp_ip4("198.18.0.1"));

	EP_CHECK_EQ(parse(len, &m), 0);
	EP_CHECK_EQ(m.l3_type, EP_L3_ARP);
	EP_CHECK_EQ(m.l3_off, 14);
	EP_CHECK_EQ(parse(14 + 27, &m), EP_DROP_ARP_MALFORMED);
	buf[19] = 16;     /* protocol address length of IPv6: not Ethernet/IPv4 ARP */
	EP_CHECK_EQ(parse(len, &m), EP_DROP_ARP_MALFORMED);
}

EP_TEST(mbuf_wrapper_parses_first_segment)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	uint16_t len = tp_build(buf, &s);
	struct rte_mbuf *mb = ep_test_mbuf(buf, len);

	EP_CHECK_EQ(ep_parse_mbuf(mb, ep_meta(mb)), 0);
	EP_CHECK_EQ(ep_meta(mb)->l4_off, 34);
	rte_pktmbuf_free(mb);
}
