/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Access-side frame parsing for the vBNG uplink: Ethernet, up to two VLAN
 * tags, then IPv4/IPv6 directly (IPoE) or inside a PPPoE session (RFC 2516
 * section 4 and 5: ver = type = 1, code 0, session id, payload length; then
 * the PPP protocol field of RFC 1661, 0x0021 IPv4, 0x0057 IPv6).
 *
 *   | dst | src | [88a8/8100 tci] [8100 tci] | 8864 | 11 00 sess len | proto | IP ...
 *                                                   <------- len -------->
 *
 * The PPPoE length must match the frame: not beyond it, and not short of it
 * unless the frame is a minimum-size (60-byte) frame carrying Ethernet
 * padding.  The IP header is then checked against the PPPoE payload end, not
 * the frame end, so padding or a lying IP length cannot reach further.
 *
 * Control traffic is not data: it is recognised here and returned as a punt
 * kind so the stage hands it to the control plane before ACL and
 * classification (a DHCP DISCOVER has source 0.0.0.0 and would fail the
 * anti-spoof check):
 *   0x8863 PPPoE discovery; PPP LCP 0xc021, PAP 0xc023, CHAP 0xc223,
 *   EAP 0xc227, IPCP 0x8021, IPV6CP 0x8057, any other PPP protocol (the
 *   control plane answers with an LCP Protocol-Reject); ARP; IPv4 UDP port
 *   67/68 (DHCP); IPv6 UDP port 546/547 (DHCPv6); ICMPv6 133-137 (RS, RA,
 *   NS, NA, redirect).  Over IPoE and over PPPoE alike.
 *
 * No allocation, no writes to the frame.  ep_meta.user is set to
 * BNG_USER_PPPOE for a PPPoE session frame (the classify stage reads the
 * session id and client MAC from the frame then) and 0 otherwise.
 *
 * Cost: a QinQ IPv4/UDP frame is ep_parse_ipv4 (~25 cycles with its
 * checksum) plus two tag loads and the UDP port compares; PPPoE adds one
 * 8-byte header check.
 */
#ifndef EP_BNG_ACCESS_H
#define EP_BNG_ACCESS_H

#include <stdint.h>
#include <netinet/in.h>

#include "ep_parse.h"
#include "ep_parse_x8.h"
#include "bng.h"

#define BNG_ETHER_PPPOE_DISC 0x8863
#define BNG_ETHER_PPPOE_SESS 0x8864
#define BNG_PPP_IPV4   0x0021
#define BNG_PPP_IPV6   0x0057
#define BNG_PPP_LCP    0xc021
#define BNG_PPP_PAP    0xc023
#define BNG_PPP_CHAP   0xc223
#define BNG_PPP_EAP    0xc227
#define BNG_PPP_IPCP   0x8021
#define BNG_PPP_IPV6CP 0x8057
#define BNG_PPPOE_HDR  6        /**< ver/type, code, session, length */
#define BNG_ETHER_MIN  60       /**< minimum frame without FCS: may carry padding */

#define BNG_USER_PPPOE 1u

/** Punt verdict of bng_parse_access for @p kind: negative. */
#define BNG_PUNT(kind) (-1 - (int)(kind))
#define BNG_PUNT_KIND(rc) ((enum bng_punt_kind)(-1 - (rc)))

static __rte_always_inline uint16_t
bng_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* IP control traffic: DHCP, DHCPv6, neighbour discovery.  0 = data. */
static __rte_always_inline int
bng_ip_control(const uint8_t *p, const struct ep_meta *m)
{
	const uint8_t *l4 = p + m->l4_off;

	if (!(m->flags & EP_META_F_HAS_L4))
		return 0;
	if (m->l4_proto == IPPROTO_UDP) {
		uint16_t sport = bng_be16(l4), dport = bng_be16(l4 + 2);

		if (m->l3_type == EP_L3_IPV4) {
			if (unlikely(dport == 67 || dport == 68 || sport == 68))
				return BNG_PUNT(BNG_PUNT_DHCP);
		} else if (unlikely(dport == 547 || dport == 546 || sport == 546)) {
			return BNG_PUNT(BNG_PUNT_DHCPV6);
		}
	} else if (m->l4_proto == IPPROTO_ICMPV6 && m->l3_type == EP_L3_IPV6) {
		if (l4[0] >= 133 && l4[0] <= 137)
			return BNG_PUNT(BNG_PUNT_ND);
	}
	return 0;
}

static __rte_always_inline int
bng_ppp_punt(uint16_t proto)
{
	switch (proto) {
	case BNG_PPP_LCP:
		return BNG_PUNT(BNG_PUNT_PPP_LCP);
	case BNG_PPP_PAP: case BNG_PPP_CHAP: case BNG_PPP_EAP:
		return BNG_PUNT(BNG_PUNT_PPP_AUTH);
	case BNG_PPP_IPCP: case BNG_PPP_IPV6CP:
		return BNG_PUNT(BNG_PUNT_PPP_NCP);
	default:
		return BNG_PUNT(BNG_PUNT_PPP_OTHER);
	}
}

/**
 * Parse an access frame, every kind step by step (bng_parse_access takes
 * the commonest first).
 * @return 0: IPv4/IPv6 data, ep_meta filled (l3_off at the IP header);
 *         > 0: an enum ep_drop_reason;
 *         < 0: control traffic to punt, BNG_PUNT_KIND(rc) says which.
 */
static __rte_always_inline int
bng_parse_access_full(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	uint16_t et;
	int rc;

	m->flags = 0;
	m->l3_type = EP_L3_NONE;
	m->l4_proto = 0;
	m->l3_len = 0;
	m->l4_off = 0;
	m->user = 0;
	if (unlikely(frame_len < seg_len))
		seg_len = frame_len;
	rc = ep_parse_l2(p, seg_len, m, &et);
	if (unlikely(rc != 0))
		return rc;
	if (et == BNG_ETHER_PPPOE_SESS) {
		uint32_t off = m->l3_off, avail, len, end;
		uint16_t sess, proto;

		if (unlikely(seg_len < off + BNG_PPPOE_HDR + 2))
			return EP_DROP_BNG_PPPOE_BAD_LENGTH;
		if (unlikely(p[off] != 0x11 || p[off + 1] != 0))
			return EP_DROP_BNG_PPPOE_BAD_HEADER;
		sess = bng_be16(p + off + 2);
		if (unlikely(sess == 0 || sess == 0xffff))
			return EP_DROP_BNG_PPPOE_BAD_SESSION;
		len = bng_be16(p + off + 4);
		avail = frame_len - off - BNG_PPPOE_HDR;
		if (unlikely(len < 2 || len > avail || (len < avail && frame_len > BNG_ETHER_MIN)))
			return EP_DROP_BNG_PPPOE_BAD_LENGTH;
		proto = bng_be16(p + off + BNG_PPPOE_HDR);
		end = off + BNG_PPPOE_HDR + len;
		m->user = BNG_USER_PPPOE;
		m->l3_off = (uint16_t)(off + BNG_PPPOE_HDR + 2);
		if (likely(proto == BNG_PPP_IPV4))
			rc = ep_parse_ipv4(p, RTE_MIN(seg_len, end), end, m);
		else if (likely(proto == BNG_PPP_IPV6))
			rc = ep_parse_ipv6(p, RTE_MIN(seg_len, end), end, m);
		else
			return bng_ppp_punt(proto);
	} else if (likely(et == RTE_ETHER_TYPE_IPV4)) {
		rc = ep_parse_ipv4(p, seg_len, frame_len, m);
	} else if (likely(et == RTE_ETHER_TYPE_IPV6)) {
		rc = ep_parse_ipv6(p, seg_len, frame_len, m);
	} else if (et == RTE_ETHER_TYPE_ARP) {
		rc = ep_parse_arp(p, seg_len, m);
		return rc != 0 ? rc : BNG_PUNT(BNG_PUNT_ARP);
	} else if (et == BNG_ETHER_PPPOE_DISC) {
		return BNG_PUNT(BNG_PUNT_PPPOE_DISCOVERY);
	} else {
		return EP_DROP_ETHERTYPE_UNSUPPORTED;
	}
	if (unlikely(rc != 0))
		return rc;
	return bng_ip_control(p, m);
}

/**
 * The commonest PPPoE frame in one go, as ep_parse_qinq_ipv4_plain takes
 * the commonest IPoE one: two tags (any accepted TPIDs), a session
 * header with ver = type = 1, code 0, a session id other than 0 and
 * 0xffff, a length that ends exactly at the frame's end (no Ethernet
 * padding), PPP protocol IPv4, and the IPv4 header without options that
 * ep_parse_ipv4_plain_after accepts.  Returns 0 with @p m filled as
 * bng_parse_access_full fills it (before its control check), or -1 for
 * any other frame: the full parse then names the verdict.  The PPPoE
 * header's fields are folded into one branch with the IPv4 checks, where
 * the full parse walks the tags, dispatches on the EtherType and tests
 * each field on its own.
 */
static __rte_always_inline int
bng_parse_qinq_pppoe_ipv4_plain(const uint8_t *p, uint32_t seg_len, uint32_t frame_len,
				struct ep_meta *m)
{
	const uint32_t off = RTE_ETHER_HDR_LEN + 2 * sizeof(struct rte_vlan_hdr);
	const uint32_t l3 = off + BNG_PPPOE_HDR + 2;
	uint16_t sess, len;
	int bad;

	if (unlikely(RTE_MIN(seg_len, frame_len) < l3) ||
	    bng_be16(p + 20) != BNG_ETHER_PPPOE_SESS)
		return -1;
	sess = bng_be16(p + off + 2);
	len = bng_be16(p + off + 4);
	bad = !ep_ether_type_is_vlan(bng_be16(p + 12)) | !ep_ether_type_is_vlan(bng_be16(p + 16)) |
	      (bng_be16(p + off) != 0x1100) | (sess == 0) | (sess == 0xffff) |
	      ((uint32_t)len + off + BNG_PPPOE_HDR != frame_len);
	if (unlikely(bad) ||
	    ep_parse_ipv4_plain_after(p, l3, seg_len, frame_len, m, RTE_BE16(BNG_PPP_IPV4)) != 0)
		return -1;
	m->n_vlans = 2;
	m->vlan_tci[0] = bng_be16(p + 14);
	m->vlan_tci[1] = bng_be16(p + 18);
	m->user = BNG_USER_PPPOE;
	return 0;
}

#ifdef EP_PARSE_X8
/** Bytes of a frame the QinQ PPPoE loads read: the word at 48, whose
 *  bytes 50..53 are the ports of a QinQ PPPoE IPv4 frame. */
#define BNG_PPPOE_X8_MIN 56u

/** ep_parse_qinq_x8_words' counterpart for QinQ PPPoE session frames:
 *  the words at 0, 12, 20 (the session header), 28, 36, 44 (the PPP
 *  protocol and the IPv4 header) and 48 (the ports). */
static __rte_always_inline EP_X8_TARGET void
bng_qinq_pppoe_x8_words(struct ep_parse_x8_in *in, const bool lines)
{
	static const uint8_t off[8] = { 0, 12, 20, 28, 36, 44, 48 };
	__m512i w[8];

	ep_x8_frame_words(in, BNG_PPPOE_X8_MIN, off, 7, w, lines);
	in->q0 = w[0];
	in->q12 = w[1];
	in->q20 = w[2];
	in->q28 = w[3];
	in->q36 = w[4];
	in->q44 = w[5];
	in->q48 = w[6];
}

/** The mbuf fields (ep_x8_load_mbufs, minimum BNG_PPPOE_X8_MIN) and
 *  bng_qinq_pppoe_x8_words in one call, as lines or as gathers. */
static __rte_always_inline EP_X8_TARGET void
bng_qinq_pppoe_x8_load(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in,
		       const bool lines)
{
	ep_x8_load_mbufs(m, lanes, BNG_PPPOE_X8_MIN, in, lines);
	bng_qinq_pppoe_x8_words(in, lines);
}

/**
 * bng_parse_qinq_pppoe_ipv4_plain for the eight lanes @p in holds
 * (bng_qinq_pppoe_x8_load), as ep_parse_qinq_x8_check for QinQ IPoE: the
 * tags and the IPv4 checks at 30 after PPP protocol 0x0021
 * (ep_x8_qinq_ipv4), and the session header at 22 (EtherType 0x8864 at
 * 20, ver/type 0x11, code 0, a session other than 0 and 0xffff, a length
 * that ends at the frame's end).  Writes nothing (ep_parse_qinq_x8_store
 * does, with user BNG_USER_PPPOE).  test_bng_up checks it against the
 * scalar parse.
 */
static __rte_always_inline EP_X8_TARGET void
bng_qinq_pppoe_x8_check(const struct ep_parse_x8_in *in, uint64_t mac, uint16_t in_port,
			struct ep_parse_qinq_x8 *x)
{
	const uint32_t off = RTE_ETHER_HDR_LEN + 2 * sizeof(struct rte_vlan_hdr);
	const __m512i sess = ep_x8_be16(in->q20, 32), len = ep_x8_be16(in->q20, 48);
	__mmask8 bad;

	ep_x8_qinq_ipv4(in, in->q28, in->q36, in->q44, in->q48, off + BNG_PPPOE_HDR + 2,
			RTE_BE16(BNG_PPP_IPV4), mac, in_port, x);
	/* Bytes 20..23: 88 64 11 00. */
	bad = _mm512_cmpneq_epi64_mask(_mm512_and_si512(in->q20, _mm512_set1_epi64(0xffffffff)),
				       _mm512_set1_epi64(0x00116488));
	bad |= _mm512_cmpeq_epi64_mask(sess, _mm512_setzero_si512()) |
	       _mm512_cmpeq_epi64_mask(sess, _mm512_set1_epi64(0xffff));
	bad |= _mm512_cmpneq_epi64_mask(_mm512_add_epi64(len, _mm512_set1_epi64(off + BNG_PPPOE_HDR)),
					in->pkt_len);
	x->ok &= (__mmask8)~bad;
}

/*
 * The QinQ map (struct bng_qinq) for eight QinQ IPoE lanes, from their
 * ep_meta bytes 8..15 as ep_x8_qinq_ipv4 computes them (x->hi: the outer
 * and inner TCI, host order, at bits 32 and 48), as the uplink's
 * subscriber stage reads it (two acquire loads; an x86 gather's elements
 * are aligned 8-byte loads, ordered as loads are): first the outer VIDs'
 * blocks (bng_qinq_x8_blocks), then the inner VIDs' entries
 * (bng_qinq_x8_entries).  Two functions, so that a caller gathers every
 * group's blocks before the first group's entries: each gather waits
 * ~16-26 cycles for its lines, and a group's two in a row would wait twice.
 */
static __rte_always_inline EP_X8_TARGET __m512i
bng_qinq_x8_blocks(const struct bng_qinq *q, __mmask8 lanes, __m512i hi)
{
	__m512i outer = _mm512_and_si512(_mm512_srli_epi64(hi, 32), _mm512_set1_epi64(0x0fff));

	return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), lanes, outer,
					   (const void *)q->blk, 8);
}

/** The entries of the lanes @p lanes (their blocks @p blk, from
 *  bng_qinq_x8_blocks on the same @p hi): the mapped ones' data in
 *  @p data, those lanes returned (a lane without a block or entry is
 *  not). */
static __rte_always_inline EP_X8_TARGET __mmask8
bng_qinq_x8_entries(__mmask8 lanes, __m512i hi, __m512i blk, __m512i *data)
{
	__m512i inner = _mm512_and_si512(_mm512_srli_epi64(hi, 48), _mm512_set1_epi64(0x0fff));
	__mmask8 has = _mm512_mask_test_epi64_mask(lanes, blk, blk);
	__m512i v;

	v = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), has,
					_mm512_add_epi64(blk, _mm512_slli_epi64(inner, 3)), NULL, 1);
	*data = v;
	return _mm512_mask_test_epi64_mask(has, v, v);
}
#endif

/**
 * bng_parse_access_full, with a QinQ IPoE line's IPv4 frame without options
 * first (ep_parse_qinq_ipv4_plain: one branch for the tags and every IPv4
 * check, ep_meta written once), then a QinQ PPPoE session's
 * (bng_parse_qinq_pppoe_ipv4_plain): the same result and ep_meta for every
 * frame (test_bng_up checks both on mutated frames).  Callgrind
 * (test_bng_cycles cycles_uplink_4k, 128-byte QinQ IPoE): the uplink's parse
 * stage 175 -> 128 instructions a packet; docs/benchmarks/
 * bng-uplink-passes.md, "Eighth pass", has PPPoE's.
 */
static __rte_always_inline int
bng_parse_access(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	if (likely(ep_parse_qinq_ipv4_plain(p, seg_len, frame_len, m) == 0)) {
		m->user = 0;
		return bng_ip_control(p, m);
	}
	if (bng_parse_qinq_pppoe_ipv4_plain(p, seg_len, frame_len, m) == 0)
		return bng_ip_control(p, m);
	return bng_parse_access_full(p, seg_len, frame_len, m);
}

/**
 * The access key of a parsed data frame (classification).  Tags are VIDs
 * (PCP and DEI are not part of the identity); PPPoE adds the session and
 * the source MAC, untagged IPoE is keyed by the source MAC alone.
 */
static __rte_always_inline void
bng_key_of(const uint8_t *p, const struct ep_meta *m, struct bng_key *k)
{
	uint64_t *w = (uint64_t *)k;

	w[0] = 0;
	w[1] = 0;
	k->n_vlans = m->n_vlans;
	if (m->n_vlans >= 1)
		k->outer = m->vlan_tci[0] & 0x0fff;
	if (m->n_vlans == 2)
		k->inner = m->vlan_tci[1] & 0x0fff;
	if (m->user == BNG_USER_PPPOE) {
		/* The PPPoE header sits 8 bytes before the IP header. */
		k->session = bng_be16(p + m->l3_off - 2 - BNG_PPPOE_HDR + 2);
		memcpy(k->mac, p + 6, 6);
		k->pppoe = 1;
	} else if (m->n_vlans == 0) {
		/* Untagged IPoE: no line to key by, the source MAC is the
		 * subscriber (one 6-byte copy from the line already loaded). */
		memcpy(k->mac, p + 6, 6);
	}
}

#endif
