/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The out-of-line half of the parser: the IPv6 extension-header walk.
 *
 * Most IPv6 traffic has no extension header, so this runs rarely; it is
 * written for safety, not speed.  Every header's length is checked against
 * the end of the payload the IPv6 header claims before it is used, and the
 * walk stops after EP_PARSE_IPV6_EXT_MAX headers, so a crafted chain costs a
 * bounded number of reads.
 *
 *   header              length of this header              stop?
 *   Hop-by-Hop (0)      (hdr_ext_len + 1) * 8              -
 *   Routing (43)        (hdr_ext_len + 1) * 8              -
 *   Destination (60)    (hdr_ext_len + 1) * 8              -
 *   Mobility/HIP/Shim6  (hdr_ext_len + 1) * 8 (RFC 6564)   -
 *   Fragment (44)       8                                  offset != 0: yes, no L4
 *   AH (51)             (payload_len + 2) * 4 (RFC 4302)   -
 *   ESP (50), No Next (59), anything else                   yes: that is l4_proto
 */
#include "ep_parse.h"

/* Read by the eight-frame loads for lanes they must not read through
 * (ep_x8_load_lines): one line of zeros. */
const uint8_t ep_x8_dummy_line[64] __attribute__((aligned(64)));

const uint8_t ep_parse_l4_min_len[256] = {
	[IPPROTO_TCP] = 20,
	[IPPROTO_UDP] = 8,
	[IPPROTO_ICMP] = 8,
	[IPPROTO_ICMPV6] = 4,
};

int
ep_parse_ipv6_ext(const uint8_t *p, uint32_t l3_end, uint32_t off, uint8_t nh,
		  struct ep_meta *m)
{
	for (int n = 0; ep_ipv6_is_ext(nh); n++) {
		uint32_t len;

		if (n == EP_PARSE_IPV6_EXT_MAX)
			return EP_DROP_IPV6_EXT_TOO_MANY;
		/* Every extension header starts with Next Header and a length byte,
		 * and is at least 8 bytes long. */
		if (off + 8 > l3_end)
			return EP_DROP_IPV6_EXT_TRUNCATED;
		if (nh == IPPROTO_FRAGMENT) {
			uint16_t fo = (uint16_t)(p[off + 2] << 8 | p[off + 3]);

			m->flags |= EP_META_F_FRAGMENT;
			nh = p[off];
			off += 8;
			if ((fo & 0xfff8) != 0) {
				/* Non-first fragment: the rest is payload. */
				m->l4_proto = nh;
				m->l4_off = (uint16_t)off;
				return 0;
			}
			continue;
		}
		if (nh == IPPROTO_AH)
			len = ((uint32_t)p[off + 1] + 2) * 4;
		else
			len = ((uint32_t)p[off + 1] + 1) * 8;
		if (off + len > l3_end)
			return EP_DROP_IPV6_EXT_TRUNCATED;
		nh = p[off];
		off += len;
	}
	m->l4_proto = nh;
	return ep_parse_l4(m, off, l3_end);
}

int
ep_parse(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m)
{
	return ep_parse_frame(p, seg_len, frame_len, m);
}

int
ep_parse_opts(const uint8_t *p, uint32_t seg_len, uint32_t frame_len, struct ep_meta *m,
	      unsigned int flags)
{
	return flags & EP_PARSE_F_MPLS ? ep_parse_frame_opts(p, seg_len, frame_len, m,
							     EP_PARSE_F_MPLS) :
		ep_parse_frame_opts(p, seg_len, frame_len, m, 0);
}
