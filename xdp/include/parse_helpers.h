/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * Header parsing in the xdp-tools header-cursor style: each parse_* helper
 * bounds-checks its header against data_end, moves the cursor past it and
 * returns the next protocol (>= 0) or a negative code. The caller names the
 * drop reason, since only it knows which layer it asked for.
 *
 * Protocols: Ethernet (RFC 894) with up to VLAN_MAX_DEPTH 802.1Q/802.1ad
 * tags, IPv4 (RFC 791), IPv6 (RFC 8200) with its extension headers, UDP, TCP,
 * VXLAN (RFC 7348) and GTP-U (3GPP TS 29.281, section 5.2: the extension
 * header chain is walked, each header's length read, never assumed).
 *
 * Every loop has a constant bound so the verifier sees a finite program.
 */
#ifndef EDGEPLANE_PARSE_HELPERS_H
#define EDGEPLANE_PARSE_HELPERS_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>

#ifndef VLAN_MAX_DEPTH
#define VLAN_MAX_DEPTH 2       /* QinQ: an S-tag and a C-tag */
#endif
#ifndef IPV6_EXT_MAX
#define IPV6_EXT_MAX 3         /* hop-by-hop, routing, destination options */
#endif
#ifndef GTP_EXT_MAX
#define GTP_EXT_MAX 4          /* PDU session container and a few more */
#endif

#define VXLAN_PORT 4789
#define GTPU_PORT 2152

/* Malformed frames are the exception: the hint keeps the bookkeeping of
 * their exits (drop reason, verdict) off the path of well-formed ones. */
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif

#define PARSE_TRUNC (-1)       /* header cut short by the end of the frame */
#define PARSE_BAD (-2)         /* header present but invalid */

struct hdr_cursor {
	void *pos;
};

struct vlan_hdr {
	__be16 h_vlan_TCI;
	__be16 h_vlan_encapsulated_proto;
};

struct ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

/* RFC 7348 section 5. */
struct vxlanhdr {
	__be32 vx_flags;       /* I flag (0x08000000): the VNI is valid */
	__be32 vx_vni;         /* VNI in the upper 24 bits */
};
#define VXLAN_F_VNI 0x08000000

/* TS 29.281 5.1: the mandatory part of the GTP-U header. */
struct gtpu_hdr {
	__u8 flags;            /* version(3) PT(1) spare(1) E(1) S(1) PN(1) */
	__u8 type;             /* message type; 255 is a G-PDU carrying a T-PDU */
	__be16 length;         /* octets after the mandatory part */
	__be32 teid;
};

/* The optional part, present when any of E, S or PN is set. */
struct gtpu_opt {
	__be16 seq;
	__u8 npdu;
	__u8 next_ext;         /* type of the first extension header, 0: none */
};

#define GTP_F_VERSION_MASK 0xe0
#define GTP_F_VERSION_1 0x20
#define GTP_F_PT 0x10
#define GTP_F_E 0x04
#define GTP_F_S 0x02
#define GTP_F_PN 0x01
#define GTP_TYPE_GPDU 255

static __always_inline int proto_is_vlan(__be16 h_proto)
{
	return h_proto == bpf_htons(ETH_P_8021Q) || h_proto == bpf_htons(ETH_P_8021AD);
}

/* Returns the EtherType (network order) or PARSE_TRUNC. */
static __always_inline int parse_ethhdr(struct hdr_cursor *nh, void *data_end,
					struct ethhdr **ethhdr)
{
	struct ethhdr *eth = nh->pos;

	if (unlikely((void *)(eth + 1) > data_end))
		return PARSE_TRUNC;
	nh->pos = eth + 1;
	*ethhdr = eth;
	/* struct ethhdr is packed: eth->h_proto would be two byte loads. */
	return ((const __be16 *)eth)[6];
}

/* Skips up to VLAN_MAX_DEPTH tags; returns the EtherType behind them (a
 * third tag is returned as is, and is then not steerable) or PARSE_TRUNC. */
static __always_inline int parse_vlans(struct hdr_cursor *nh, void *data_end,
				       int h_proto)
{
	int i;

#pragma unroll
	for (i = 0; i < VLAN_MAX_DEPTH; i++) {
		struct vlan_hdr *vlh = nh->pos;

		if (!proto_is_vlan(h_proto))
			break;
		if (unlikely((void *)(vlh + 1) > data_end))
			return PARSE_TRUNC;
		h_proto = vlh->h_vlan_encapsulated_proto;
		nh->pos = vlh + 1;
	}
	return h_proto;
}

/* Returns the IP protocol, PARSE_TRUNC or PARSE_BAD (version, IHL). */
static __always_inline int parse_iphdr(struct hdr_cursor *nh, void *data_end,
				       struct iphdr **iphdr)
{
	struct iphdr *iph = nh->pos;
	int hdrsize;

	if (unlikely((void *)(iph + 1) > data_end))
		return PARSE_TRUNC;
	/* Version 4 and IHL 5..15 in one unsigned compare of the first byte. */
	if (unlikely((__u8)(*(__u8 *)iph - 0x45) > 0x0a))
		return PARSE_BAD;
	hdrsize = iph->ihl * 4;
	if (unlikely(nh->pos + hdrsize > data_end))
		return PARSE_TRUNC;
	nh->pos += hdrsize;
	*iphdr = iph;
	return iph->protocol;
}

/*
 * Returns the upper-layer protocol after up to IPV6_EXT_MAX extension
 * headers, or PARSE_TRUNC. *frag is set when a fragment header is present:
 * the transport header is then absent or incomplete in this packet.
 */
static __always_inline int parse_ip6hdr(struct hdr_cursor *nh, void *data_end,
					struct ipv6hdr **ip6hdr, int *frag)
{
	struct ipv6hdr *ip6h = nh->pos;
	__u8 next;
	int i;

	if (unlikely((void *)(ip6h + 1) > data_end))
		return PARSE_TRUNC;
	if (unlikely(ip6h->version != 6))
		return PARSE_BAD;
	nh->pos = ip6h + 1;
	*ip6hdr = ip6h;
	next = ip6h->nexthdr;

#pragma unroll
	for (i = 0; i < IPV6_EXT_MAX; i++) {
		if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING ||
		    next == IPPROTO_DSTOPTS) {
			struct ipv6_opt_hdr *oh = nh->pos;
			int size;

			if (unlikely((void *)(oh + 1) > data_end))
				return PARSE_TRUNC;
			size = (oh->hdrlen + 1) * 8;
			if (unlikely(nh->pos + size > data_end))
				return PARSE_TRUNC;
			next = oh->nexthdr;
			nh->pos += size;
		} else if (next == IPPROTO_FRAGMENT) {
			struct ipv6_frag_hdr *fh = nh->pos;

			if (unlikely((void *)(fh + 1) > data_end))
				return PARSE_TRUNC;
			*frag = 1;
			next = fh->nexthdr;
			nh->pos = fh + 1;
		} else {
			break;
		}
	}
	return next;
}

/* Returns 0 or PARSE_TRUNC. */
static __always_inline int parse_udphdr(struct hdr_cursor *nh, void *data_end,
					struct udphdr **udphdr)
{
	struct udphdr *h = nh->pos;

	if (unlikely((void *)(h + 1) > data_end))
		return PARSE_TRUNC;
	nh->pos = h + 1;
	*udphdr = h;
	return 0;
}

/* Returns 0, PARSE_TRUNC or PARSE_BAD (data offset below 5). Options are
 * not walked: nothing after the TCP header is parsed. */
static __always_inline int parse_tcphdr(struct hdr_cursor *nh, void *data_end,
					struct tcphdr **tcphdr)
{
	struct tcphdr *h = nh->pos;

	if (unlikely((void *)(h + 1) > data_end))
		return PARSE_TRUNC;
	if (unlikely(h->doff < 5))
		return PARSE_BAD;
	nh->pos = h + 1;
	*tcphdr = h;
	return 0;
}

/* Returns 0 with *vni set, 1 when the I flag is clear (not a VXLAN frame
 * we classify), or PARSE_TRUNC. */
static __always_inline int parse_vxlanhdr(struct hdr_cursor *nh, void *data_end,
					  __u32 *vni)
{
	struct vxlanhdr *vh = nh->pos;

	if (unlikely((void *)(vh + 1) > data_end))
		return PARSE_TRUNC;
	nh->pos = vh + 1;
	if (!(vh->vx_flags & bpf_htonl(VXLAN_F_VNI)))
		return 1;
	*vni = bpf_ntohl(vh->vx_vni) >> 8;
	return 0;
}

/*
 * Returns 0 with *teid and *type set, 1 when this is not GTPv1-U (version or
 * PT), PARSE_TRUNC, or PARSE_BAD for an extension header of length 0 or a
 * chain longer than GTP_EXT_MAX. Each extension header is
 * [length in 4-octet units][content][next extension header type].
 */
static __always_inline int parse_gtpuhdr(struct hdr_cursor *nh, void *data_end,
					 __u32 *teid, __u8 *type)
{
	struct gtpu_hdr *gh = nh->pos;
	struct gtpu_opt *opt;
	__u8 next;
	int i;

	if (unlikely((void *)(gh + 1) > data_end))
		return PARSE_TRUNC;
	if ((gh->flags & GTP_F_VERSION_MASK) != GTP_F_VERSION_1 || !(gh->flags & GTP_F_PT))
		return 1;
	nh->pos = gh + 1;
	*teid = bpf_ntohl(gh->teid);
	*type = gh->type;
	if (!(gh->flags & (GTP_F_E | GTP_F_S | GTP_F_PN)))
		return 0;
	opt = nh->pos;
	if (unlikely((void *)(opt + 1) > data_end))
		return PARSE_TRUNC;
	nh->pos = opt + 1;
	if (!(gh->flags & GTP_F_E))
		return 0;
	next = opt->next_ext;

#pragma unroll
	for (i = 0; i < GTP_EXT_MAX; i++) {
		__u8 *lenp = nh->pos;
		__u8 *lastp;
		int len;

		if (next == 0)
			return 0;
		if (unlikely((void *)(lenp + 1) > data_end))
			return PARSE_TRUNC;
		len = *lenp * 4;
		if (unlikely(len == 0))
			return PARSE_BAD;
		lastp = nh->pos + len - 1;
		if (unlikely((void *)(lastp + 1) > data_end))
			return PARSE_TRUNC;
		next = *lastp;
		nh->pos = lastp + 1;
	}
	return next == 0 ? 0 : PARSE_BAD;
}

#endif
