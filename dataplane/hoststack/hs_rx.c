/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive stages before UDP: parse, neigh, reasm, icmp.
 *
 *   parse  ep_parse (Ethernet, VLANs, IPv4 header checksum, IPv6 extension
 *          headers); the destination MAC must be the port's, broadcast
 *          (ARP) or IPv6 multicast (ND); the destination address must be
 *          one of ours (or a solicited-node group for ND): a host stack
 *          forwards nothing
 *   neigh  ARP requests for our addresses and neighbour solicitations
 *          (RFC 4861 7.1.1 checks) answered in place; the sender learnt
 *          when it is on a connected subnet of the port (ARP requests and
 *          replies, NS source and NA target link-layer options)
 *   reasm  IPv4 and IPv6 fragments to rte_ip_frag: held (consumed) until the
 *          datagram is whole, then the whole datagram takes the first
 *          fragment's place in the burst; what the library gives up on is
 *          counted (hs_reasm_failed now, hs_reasm_timeout when expired)
 *   icmp   echo requests answered in place; port unreachable about a
 *          connected socket's datagram -> its SO_ERROR (ECONNREFUSED, as
 *          Linux reports it); other ICMP and other protocols counted
 */
#include <errno.h>

#include <rte_arp.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ep_csum.h"
#include "ep_parse.h"
#include "ep_rcu.h"
#include "ep_rx.h"
#include "hoststack.h"
#include "hs_ring.h"

/* ---- parse ---- */

static __rte_always_inline bool
ipv6_solicited_node(const uint8_t *a)
{
	return a[0] == 0xff && a[1] == 0x02 && a[11] == 0x01 && a[12] == 0xff;
}

static __rte_always_inline uint16_t
parse_one(struct hs_wctx *c, struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	struct hs_ip dst;
	int rc = ep_parse_mbuf(m, md);

	if (unlikely(rc != 0))
		return EP_NEXT_DROP(rc);
	if (unlikely(md->in_port >= c->s->e->n_ports))
		return EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
	if (!ep_mac_eq(p, &c->rt->mac[md->in_port]) && !(p[0] & 1))
		return EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
	if (md->l3_type == EP_L3_ARP)
		return EP_NEXT_CONTINUE;
	memset(&dst, 0, sizeof(dst));
	if (md->l3_type == EP_L3_IPV4) {
		memcpy(dst.b, p + md->l3_off + 16, 4);
		if (likely(hs_is_own(c->rt, 4, &dst, NULL)))
			goto local;
		return EP_NEXT_DROP(EP_DROP_HS_NOT_LOCAL);
	}
	memcpy(dst.b, p + md->l3_off + 24, 16);
	if (likely(hs_is_own(c->rt, 6, &dst, NULL)) ||
	    (ipv6_solicited_node(dst.b) && md->l4_proto == IPPROTO_ICMPV6))
		goto local;
	return EP_NEXT_DROP(EP_DROP_HS_NOT_LOCAL);
local:
	md->flags |= EP_META_F_LOCAL;
	return EP_NEXT_CONTINUE;
}

uint16_t
hs_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct hs_wctx *c = ctx;
	uint16_t out = 0;

	/* One snapshot of the routes for the whole burst. */
	c->rt = ep_rcu_read(&c->s->routes);
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		next[i] = parse_one(c, pkts[i]);
		out += next[i] != EP_NEXT_CONTINUE;
	}
	return out;
}

/* ---- neigh ---- */

#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2

static bool
on_link(const struct hs_routes *rt, uint16_t port, uint8_t family, const struct hs_ip *ip)
{
	for (int i = 0; i < rt->n_own; i++)
		if (rt->own[i].port == port && rt->own[i].family == family &&
		    hs_prefix_match(family, ip, &rt->own[i].ip, rt->own[i].plen))
			return true;
	return false;
}

static uint16_t
arp_in(struct hs_wctx *c, struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(p + md->l3_off);
	const struct rte_ether_addr *mac = &c->rt->mac[md->in_port];
	struct hs_ip sip = { 0 }, tip = { 0 };
	uint16_t port;

	memcpy(sip.b, &a->arp_data.arp_sip, 4);
	memcpy(tip.b, &a->arp_data.arp_tip, 4);
	/* Learn from anyone on our subnets: replies to our requests, requests
	 * (their sender will talk to us next), gratuitous ARP. */
	if (on_link(c->rt, md->in_port, 4, &sip))
		hs_nb_learn(c, 4, &sip, &a->arp_data.arp_sha, md->in_port, false);
	if (a->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST) || !hs_is_own(c->rt, 4, &tip, &port) ||
	    port != md->in_port)
		return EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US);
	memcpy(p, p + 6, 6);
	memcpy(p + 6, mac, 6);
	a->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	a->arp_data.arp_tha = a->arp_data.arp_sha;
	a->arp_data.arp_tip = a->arp_data.arp_sip;
	rte_ether_addr_copy(mac, &a->arp_data.arp_sha);
	memcpy(&a->arp_data.arp_sip, tip.b, 4);
	return EP_NEXT_TX(md->in_port);
}

/* The link-layer address option @p type of an NS/NA body, or NULL;
 * false when the options are malformed. */
static bool
nd_option(const uint8_t *icmp, uint32_t len, uint8_t type, const uint8_t **lla)
{
	*lla = NULL;
	for (uint32_t o = 24; o < len; ) {
		uint32_t olen;

		if (o + 2 > len)
			return false;
		olen = (uint32_t)icmp[o + 1] * 8;
		if (olen == 0 || o + olen > len)
			return false;
		if (icmp[o] == type && olen >= 8)
			*lla = icmp + o + 2;
		o += olen;
	}
	return true;
}

static uint16_t
nd_in(struct hs_wctx *c, struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + md->l3_off);
	uint8_t *icmp = p + md->l4_off;
	uint32_t len = (uint32_t)md->l3_off + md->l3_len - md->l4_off;
	const struct rte_ether_addr *mac = &c->rt->mac[md->in_port];
	struct hs_ip target, src;
	const uint8_t *lla;
	bool dad;
	uint16_t ck, port;

	if (ip->hop_limits != 255 || icmp[1] != 0 || len < 24 ||
	    (uint32_t)md->l4_off + len > m->data_len ||
	    ep_ipv6_l4_cksum(ip, icmp, len, IPPROTO_ICMPV6) != 0)
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	memcpy(target.b, icmp + 8, 16);
	memcpy(src.b, ip->src_addr, 16);
	if (icmp[0] == ND_NA) {
		if (!nd_option(icmp, len, ND_OPT_TLLA, &lla))
			return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
		if (lla != NULL && on_link(c->rt, md->in_port, 6, &target))
			hs_nb_learn(c, 6, &target, (const struct rte_ether_addr *)lla, md->in_port,
				    false);
		return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
	}
	if (icmp[0] != ND_NS || target.b[0] == 0xff)
		return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
	if (!nd_option(icmp, len, ND_OPT_SLLA, &lla))
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	dad = hs_ip_is_zero(6, &src);
	if (dad && (lla != NULL || !ipv6_solicited_node(ip->dst_addr)))
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	if (lla != NULL && on_link(c->rt, md->in_port, 6, &src))
		hs_nb_learn(c, 6, &src, (const struct rte_ether_addr *)lla, md->in_port, false);
	if (!hs_is_own(c->rt, 6, &target, &port) || port != md->in_port)
		return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
	/* Neighbour advertisement (RFC 4861 4.4, 7.2.4), in place. */
	if (m->nb_segs != 1 || rte_pktmbuf_data_len(m) < md->l3_off + 72u)
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - (md->l3_off + 72u)));
	if (dad) {
		static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };

		memcpy(ip->dst_addr, all_nodes, 16);
		p[0] = 0x33, p[1] = 0x33, p[2] = 0, p[3] = 0, p[4] = 0, p[5] = 1;
	} else {
		memcpy(ip->dst_addr, src.b, 16);
		memcpy(p, p + 6, 6);
	}
	memcpy(p + 6, mac, 6);
	memcpy(ip->src_addr, target.b, 16);
	ip->payload_len = RTE_BE16(32);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	icmp = (uint8_t *)(ip + 1);
	memset(icmp, 0, 32);
	icmp[0] = ND_NA;
	icmp[4] = dad ? 0x20 : 0x60;    /* override, solicited unless DAD */
	memcpy(icmp + 8, target.b, 16);
	icmp[24] = ND_OPT_TLLA;
	icmp[25] = 1;
	memcpy(icmp + 26, mac, 6);
	ck = ep_ipv6_l4_cksum(ip, icmp, 32, IPPROTO_ICMPV6);
	memcpy(icmp + 2, &ck, 2);
	return EP_NEXT_TX(md->in_port);
}

uint16_t
hs_neigh_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct hs_wctx *c = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct ep_meta *md = ep_meta(pkts[i]);

		if (unlikely(md->l3_type == EP_L3_ARP)) {
			next[i] = arp_in(c, pkts[i]);
			out++;
		} else if (unlikely(md->l4_proto == IPPROTO_ICMPV6) && (md->flags & EP_META_F_HAS_L4) &&
			   !(md->flags & EP_META_F_FRAGMENT)) {
			uint8_t t = rte_pktmbuf_mtod_offset(pkts[i], const uint8_t *, md->l4_off)[0];

			if (t >= 133 && t <= 137) {
				next[i] = t == ND_NS || t == ND_NA ? nd_in(c, pkts[i]) :
					  EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
				out++;
			}
		}
	}
	/* Learning may have released datagrams held for a neighbour. */
	hs_flush_ports(c);
	return out;
}

/* ---- reasm ---- */

static struct rte_mbuf *
reasm_one(struct hs_wctx *c, struct rte_mbuf *m, uint64_t now, uint16_t *verdict)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, md->l3_off);
	struct rte_mbuf *whole;
	uint32_t before = c->dr.cnt;

	m->l2_len = md->l3_off;
	if (md->l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		m->l3_len = rte_ipv4_hdr_len(ip);
		whole = rte_ipv4_frag_reassemble_packet(c->frag, &c->dr, m, now, ip);
		if (whole != NULL) {
			/* rte_ip_frag zeroes the header checksum of the result */
			ip = rte_pktmbuf_mtod_offset(whole, struct rte_ipv4_hdr *, md->l3_off);
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)l3;
		struct rte_ipv6_fragment_ext *fh = rte_ipv6_frag_get_ipv6_fragment_header(ip);

		if (fh == NULL) {
			/* rte_ip_frag wants the fragment header right after the
			 * fixed header; other extension headers first: not handled */
			*verdict = EP_NEXT_DROP(EP_DROP_HS_REASM_FAILED);
			return NULL;
		}
		m->l3_len = sizeof(*ip) + sizeof(*fh);
		whole = rte_ipv6_frag_reassemble_packet(c->frag, &c->dr, m, now, ip, fh);
	}
	c->stage_reasm->stats.drops[EP_DROP_HS_REASM_FAILED] += c->dr.cnt - before;
	if (whole == NULL) {
		*verdict = EP_NEXT_CONSUMED;
		return NULL;
	}
	c->st.reasm_done++;
	/* The whole datagram is parsed again: offsets and lengths of the
	 * first fragment no longer hold (IPv6 lost its fragment header). */
	{
		struct ep_meta *wm = ep_meta(whole);
		uint16_t in_port = md->in_port;
		int rc = ep_parse_mbuf(whole, wm);

		wm->in_port = in_port;
		wm->flags |= EP_META_F_LOCAL;
		if (rc != 0 || (wm->flags & EP_META_F_FRAGMENT)) {
			rte_pktmbuf_free(whole);
			c->stage_reasm->stats.drops[rc != 0 ? rc : EP_DROP_HS_REASM_FAILED]++;
			*verdict = EP_NEXT_CONSUMED;
			return NULL;
		}
	}
	*verdict = EP_NEXT_CONTINUE;
	return whole;
}

uint16_t
hs_reasm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct hs_wctx *c = ctx;
	uint64_t now = c->w != NULL ? c->w->stage_tsc : rte_rdtsc();
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *whole;

		if (likely(!(ep_meta(pkts[i])->flags & EP_META_F_FRAGMENT)))
			continue;
		whole = reasm_one(c, pkts[i], now, &next[i]);
		if (whole != NULL)
			pkts[i] = whole;
		else
			out++;
		/* rte_ip_frag's death row holds RTE_IP_FRAG_DEATH_ROW_MBUF_LEN
		 * and a failed datagram adds up to MAX_FRAG + 1: empty it early. */
		if (c->dr.cnt > RTE_IP_FRAG_DEATH_ROW_MBUF_LEN - (RTE_LIBRTE_IP_FRAG_MAX_FRAG + 1))
			rte_ip_frag_free_death_row(&c->dr, 0);
	}
	if (c->dr.cnt != 0)
		rte_ip_frag_free_death_row(&c->dr, 3);
	return out;
}

/* ---- icmp ---- */

static uint16_t
echo_reply(struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *), tmp[16];
	uint8_t *l4 = p + md->l4_off;
	uint32_t len = (uint32_t)md->l3_off + md->l3_len - md->l4_off;
	uint16_t old, ck;

	if (m->nb_segs != 1 || md->l4_off + len > m->data_len)
		return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
	if (md->l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + md->l3_off);
		uint32_t a = ip->src_addr;

		if (ep_csum(l4, len) != 0)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		ip->src_addr = ip->dst_addr;
		ip->dst_addr = a;
		ip->time_to_live = 64;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		memcpy(&old, l4, 2);
		l4[0] = RTE_IP_ICMP_ECHO_REPLY;
		memcpy(&ck, l4 + 2, 2);
		ck = ep_csum_update16(ck, old, *(uint16_t *)l4);
		memcpy(l4 + 2, &ck, 2);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + md->l3_off);

		if (ep_ipv6_l4_cksum(ip, l4, len, IPPROTO_ICMPV6) != 0)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		memcpy(tmp, ip->src_addr, 16);
		memcpy(ip->src_addr, ip->dst_addr, 16);
		memcpy(ip->dst_addr, tmp, 16);
		ip->hop_limits = 64;
		l4[0] = 129;
		l4[2] = l4[3] = 0;
		ck = ep_ipv6_l4_cksum(ip, l4, len, IPPROTO_ICMPV6);
		memcpy(l4 + 2, &ck, 2);
	}
	memcpy(tmp, p, 6);
	memcpy(p, p + 6, 6);
	memcpy(p + 6, tmp, 6);
	return EP_NEXT_TX(md->in_port);
}

/* A port unreachable about a datagram we sent: the invoking packet's
 * UDP 4-tuple names a connected socket, which gets ECONNREFUSED as its
 * pending error (__udp4_lib_err: only connected sockets hear of it). */
static void
unreach_in(struct hs_wctx *c, struct rte_mbuf *m, uint8_t family)
{
	const struct ep_meta *md = ep_meta(m);
	uint32_t off = md->l4_off + 8;
	struct hs_key_conn key;
	uint8_t inner[48];
	uint32_t hl, id;
	const uint8_t *in;

	in = rte_pktmbuf_read(m, off, family == 4 ? 28 : 48, inner);
	if (in == NULL)
		return;
	memset(&key, 0, sizeof(key));
	key.family = family;
	if (family == 4) {
		if ((in[0] >> 4) != 4 || in[9] != IPPROTO_UDP)
			return;
		hl = (in[0] & 0xf) * 4u;
		if (hl != 20)
			return;
		memcpy(key.laddr.b, in + 12, 4);
		memcpy(key.raddr.b, in + 16, 4);
	} else {
		if ((in[0] >> 4) != 6 || in[6] != IPPROTO_UDP)
			return;
		hl = 40;
		memcpy(key.laddr.b, in + 8, 16);
		memcpy(key.raddr.b, in + 24, 16);
	}
	memcpy(&key.lport, in + hl, 2);
	memcpy(&key.rport, in + hl + 2, 2);
	{
		void *v;

		if (rte_hash_lookup_data(c->s->conn, &key, &v) < 0)
			return;
		id = (uint32_t)(uintptr_t)v;
	}
	{
		struct hs_sock *k = hs_sock_get(c->s, id);

		if (k == NULL)
			return;
		__atomic_store_n(&k->shm->so_error.v, ECONNREFUSED, __ATOMIC_RELEASE);
		/* Wake a reader: its recv() returns the error. */
		hs_touch(c, k);
	}
}

static __rte_always_inline uint16_t
icmp_one(struct hs_wctx *c, struct rte_mbuf *m)
{
	const struct ep_meta *md = ep_meta(m);
	uint8_t type, code;
	const uint8_t *l4;

	if (likely(md->l4_proto == IPPROTO_UDP))
		return EP_NEXT_CONTINUE;
	if (md->l4_proto != IPPROTO_ICMP && md->l4_proto != IPPROTO_ICMPV6)
		return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
	if ((md->l4_proto == IPPROTO_ICMP) != (md->l3_type == EP_L3_IPV4) ||
	    !(md->flags & EP_META_F_HAS_L4))
		return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
	l4 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l4_off);
	type = l4[0];
	code = l4[1];
	if ((md->l3_type == EP_L3_IPV4 && type == RTE_IP_ICMP_ECHO_REQUEST) ||
	    (md->l3_type == EP_L3_IPV6 && type == 128)) {
		uint16_t v = echo_reply(m);

		if ((v & EP_NEXT_TX_FLAG) != 0)
			c->st.echo_replies++;
		return v;
	}
	if ((md->l3_type == EP_L3_IPV4 && type == 3 && code == 3) ||
	    (md->l3_type == EP_L3_IPV6 && type == 1 && code == 4)) {
		unreach_in(c, m, md->l3_type == EP_L3_IPV4 ? 4 : 6);
		rte_pktmbuf_free(m);
		return EP_NEXT_CONSUMED;
	}
	return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
}

uint16_t
hs_icmp_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct hs_wctx *c = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		next[i] = icmp_one(c, pkts[i]);
		out += next[i] != EP_NEXT_CONTINUE;
	}
	if (c->n_touched != 0)
		hs_signal_touched(c);
	return out;
}

/* ---- ICMP errors we send ---- */

/* The invoking packet's first @p len bytes from @p off (any segments). */
static void
copy_invoking(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint8_t *to)
{
	const void *src = rte_pktmbuf_read(m, off, len, to);

	if (src != NULL && src != to)
		memcpy(to, src, len);
}

void
hs_icmp_unreach(struct hs_wctx *c, struct rte_mbuf *m)
{
	const struct ep_meta *md = ep_meta(m);
	uint64_t now = c->w != NULL ? c->w->stage_tsc : rte_rdtsc();
	struct rte_mempool *pool = c->s->e->ports[md->in_port].pool;
	uint32_t inv = rte_pktmbuf_pkt_len(m) - md->l3_off, take;
	struct hs_ip dst = { 0 };
	struct rte_mbuf *r;
	uint8_t *p;

	/* Token bucket of icmp_rate per second (Linux: icmp_ratelimit). */
	if (now - c->icmp_last_tsc >= c->tsc_hz / 1000) {
		uint64_t add = (now - c->icmp_last_tsc) * c->s->p.icmp_rate / c->tsc_hz;

		c->icmp_tokens = RTE_MIN(c->icmp_tokens + add, (uint64_t)c->s->p.icmp_rate);
		c->icmp_last_tsc = now;
	}
	if (c->icmp_tokens == 0 || (r = rte_pktmbuf_alloc(pool)) == NULL) {
		c->st.icmp_unreach_suppressed++;
		return;
	}
	c->icmp_tokens--;
	if (md->l3_type == EP_L3_IPV4) {
		const struct rte_ipv4_hdr *oip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *,
									md->l3_off);
		struct rte_ipv4_hdr *ip;
		uint8_t *icmp;

		/* RFC 1812 4.3.2.3: as much of the datagram as fits in 576 bytes. */
		take = RTE_MIN(inv, 576u - 28u);
		p = (uint8_t *)rte_pktmbuf_append(r, (uint16_t)(28 + take));
		if (p == NULL) {
			rte_pktmbuf_free(r);
			return;
		}
		ip = (struct rte_ipv4_hdr *)p;
		icmp = p + 20;
		memset(ip, 0, 28);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(28 + take));
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_ICMP;
		ip->src_addr = oip->dst_addr;
		ip->dst_addr = oip->src_addr;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		icmp[0] = 3;
		icmp[1] = 3;
		copy_invoking(m, md->l3_off, take, icmp + 8);
		{
			uint16_t ck = ep_csum(icmp, 8 + take);

			memcpy(icmp + 2, &ck, 2);
		}
		memcpy(dst.b, &oip->src_addr, 4);
		hs_output_ip(c, r, 4, &dst);
	} else {
		const struct rte_ipv6_hdr *oip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *,
									md->l3_off);
		struct rte_ipv6_hdr *ip;
		uint8_t *icmp;
		uint16_t ck;

		/* RFC 4443 2.4(c): as much as fits in the minimum MTU, 1280. */
		take = RTE_MIN(inv, 1280u - 48u);
		take = RTE_MIN(take, (uint32_t)rte_pktmbuf_tailroom(r) - 48u);
		p = (uint8_t *)rte_pktmbuf_append(r, (uint16_t)(48 + take));
		if (p == NULL) {
			rte_pktmbuf_free(r);
			return;
		}
		ip = (struct rte_ipv6_hdr *)p;
		icmp = p + 40;
		memset(ip, 0, 48);
		ip->vtc_flow = RTE_BE32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(8 + take));
		ip->proto = IPPROTO_ICMPV6;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, oip->dst_addr, 16);
		memcpy(ip->dst_addr, oip->src_addr, 16);
		icmp[0] = 1;
		icmp[1] = 4;
		copy_invoking(m, md->l3_off, take, icmp + 8);
		ck = ep_ipv6_l4_cksum(ip, icmp, 8 + take, IPPROTO_ICMPV6);
		memcpy(icmp + 2, &ck, 2);
		memcpy(dst.b, oip->src_addr, 16);
		hs_output_ip(c, r, 6, &dst);
	}
	c->st.icmp_unreach_sent++;
}
