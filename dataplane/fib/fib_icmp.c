/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ICMP side of a FIB worker: echo replies for the data plane's own
 * addresses, and the errors a router owes the sender (RFC 792, RFC 1812
 * section 4.3, RFC 4443), on a slow path that is rate limited and counted;
 * and IPv4 fragmentation to a port's MTU (RFC 791, DPDK's rte_ip_frag).
 *
 * An error goes back to the previous hop on the link the packet arrived on:
 * the original frame's source MAC becomes the destination, the port's MAC
 * the source, VLAN tags stay as received (a PPPoE session header gets its
 * length; an MPLS label stack is dropped: those labels named our service,
 * not the way back).  That is the route back on a router's connected links
 * and on the vBNG's access and core sides alike; the error's source is the
 * receiving port's address (RFC 1812 4.3.2.4, RFC 4443 2.2).
 *
 * What is quoted: the original IP header and as much of the datagram as
 * keeps the error within 576 bytes (RFC 1812 4.3.2.3) or the IPv6 minimum
 * MTU of 1280 (RFC 4443 2.4 (c)).
 *
 * Never an error about (RFC 1812 4.3.2.7, RFC 4443 2.4 (e)): an ICMP
 * error, a non-first IPv4 fragment, a packet to a multicast or broadcast
 * destination (except packet too big), or from a source that is not one
 * host.  Those, and errors over the rate, are counted, not sent.
 *
 * Rate: a token bucket per worker (rte_meter's srTCM with one token per
 * message, green = send), icmp_rate per second with a burst of icmp_burst,
 * Linux's icmp_msgs_per_sec and icmp_msgs_burst by default.
 */
#include <rte_cycles.h>
#include <rte_icmp.h>
#include <rte_ip_frag.h>
#include <rte_malloc.h>

#include "ep_csum.h"
#include "fib_private.h"

#define ECHO_REPLY_TTL   64
#define ERROR_TTL        64
#define ICMP4_ERROR_MAX  576     /* RFC 1812 4.3.2.3 */
#define ICMP6_ERROR_MAX  1280    /* RFC 4443 2.4 (c) */
#define ETHER_TYPE_PPPOE_SESS 0x8864

const char *const ep_fib_icmp_name[EP_FIB_ICMP__COUNT] = {
#define X(id, name) name,
	EP_FIB_ICMP_KINDS(X)
#undef X
};

/* Type, code of each kind per family (RFC 792 / RFC 1191; RFC 4443). */
static const uint8_t icmp4_type_code[EP_FIB_ICMP__COUNT][2] = {
	[EP_FIB_ICMP_TIME_EXCEEDED] = { 11, 0 },
	[EP_FIB_ICMP_NET_UNREACHABLE] = { 3, 0 },
	[EP_FIB_ICMP_ADMIN_PROHIBITED] = { 3, 13 },   /* RFC 1812 5.2.7.1 */
	[EP_FIB_ICMP_FRAG_NEEDED] = { 3, 4 },
	[EP_FIB_ICMP_PACKET_TOO_BIG] = { 3, 4 },
};
static const uint8_t icmp6_type_code[EP_FIB_ICMP__COUNT][2] = {
	[EP_FIB_ICMP_TIME_EXCEEDED] = { 3, 0 },
	[EP_FIB_ICMP_NET_UNREACHABLE] = { 1, 0 },
	[EP_FIB_ICMP_ADMIN_PROHIBITED] = { 1, 1 },
	[EP_FIB_ICMP_FRAG_NEEDED] = { 2, 0 },
	[EP_FIB_ICMP_PACKET_TOO_BIG] = { 2, 0 },
};

static uint32_t pool_seq;

int
ep_fib_icmp_init(struct ep_fib_worker *fw, int socket)
{
	const struct ep_fib_params *p = &fw->fib->p;
	char name[RTE_MEMPOOL_NAMESIZE];

	if (p->icmp_rate != 0) {
		struct rte_meter_srtcm_params mp = { .cir = p->icmp_rate,
			.cbs = RTE_MAX(p->icmp_burst, 1u), .ebs = 0 };

		if (rte_meter_srtcm_profile_config(&fw->icmp_profile, &mp) != 0 ||
		    rte_meter_srtcm_config(&fw->icmp_meter, &fw->icmp_profile) != 0)
			return -1;
	}
	/* Fragments carry the original payload by reference: indirect mbufs,
	 * no data room of their own. */
	snprintf(name, sizeof(name), "ep_frag_%u",
		 __atomic_fetch_add(&pool_seq, 1, __ATOMIC_RELAXED));
	fw->frag_indirect = rte_pktmbuf_pool_create(name, 1023, 0, 0, 0, socket);
	return fw->frag_indirect != NULL ? 0 : -1;
}

/* ---- echo ---- */

uint16_t
ep_fib_local_echo(struct ep_fib_worker *fw, struct rte_mbuf *m, void *arg)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t end = (uint32_t)md->l3_off + md->l3_len;
	uint16_t old_w, new_w, ck;
	uint8_t *icmp = p + md->l4_off;

	(void)arg;
	if (!(md->flags & EP_META_F_HAS_L4) || (md->flags & EP_META_F_FRAGMENT) ||
	    end > m->data_len || m->nb_segs != 1 || md->in_port >= fw->n_ports)
		return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
	if (md->l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + md->l3_off);
		uint32_t a;

		/* No options: an echo would reflect them (record route...). */
		if (md->l4_proto != IPPROTO_ICMP || ip->version_ihl != 0x45 ||
		    icmp[0] != RTE_IP_ICMP_ECHO_REQUEST || icmp[1] != 0)
			return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
		if (rte_raw_cksum(icmp, end - md->l4_off) != 0xffff)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		a = ip->src_addr;
		ip->src_addr = ip->dst_addr;
		ip->dst_addr = a;
		ip->time_to_live = ECHO_REPLY_TTL;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		memcpy(&old_w, icmp, 2);
		icmp[0] = RTE_IP_ICMP_ECHO_REPLY;
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + md->l3_off);
		uint8_t a[16];

		if (md->l4_proto != IPPROTO_ICMPV6 || md->l4_off != md->l3_off + 40 ||
		    end - md->l4_off < 8 || icmp[0] != 128 || icmp[1] != 0)
			return EP_NEXT_DROP(EP_DROP_LOCAL_UNSUPPORTED);
		if (ep_ipv6_l4_cksum(ip, icmp, end - md->l4_off, IPPROTO_ICMPV6) != 0)
			return EP_NEXT_DROP(EP_DROP_ICMP_BAD_CHECKSUM);
		/* Swapping source and destination leaves the pseudo-header sum
		 * as it was: only the type word changes. */
		memcpy(a, ip->src_addr, 16);
		memcpy(ip->src_addr, ip->dst_addr, 16);
		memcpy(ip->dst_addr, a, 16);
		ip->hop_limits = ECHO_REPLY_TTL;
		memcpy(&old_w, icmp, 2);
		icmp[0] = 129;
	}
	memcpy(&new_w, icmp, 2);
	memcpy(&ck, icmp + 2, 2);
	ck = ep_csum_update16(ck, old_w, new_w);
	memcpy(icmp + 2, &ck, 2);
	/* Back to the sender, from the port's MAC; Ethernet padding dropped. */
	memmove(p, p + 6, 6);
	memcpy(p + 6, &fw->port[md->in_port].mac, 6);
	fib_reply_tpid(fw, p, md->in_port, md->n_vlans);
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len - end));
	return EP_NEXT_TX(md->in_port);
}

/* ---- errors ---- */

/* May an error be sent about this packet at all? */
static bool
error_allowed(const struct ep_meta *md, const uint8_t *l3, enum ep_fib_icmp_kind kind)
{
	const uint8_t *l4 = l3 + (md->l4_off - md->l3_off);

	if (md->l3_type == EP_L3_IPV4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
		uint32_t src = rte_be_to_cpu_32(ip->src_addr), dst = rte_be_to_cpu_32(ip->dst_addr);

		if ((rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) != 0 ||
		    ep_ipv4_martian(src) || dst >= 0xe0000000u)
			return false;
		/* Errors about errors: only echo, timestamp, information and
		 * mask queries (0, 8, 13-18) may be answered with one. */
		if (md->l4_proto == IPPROTO_ICMP && (md->flags & EP_META_F_HAS_L4) &&
		    !(l4[0] == 0 || l4[0] == 8 || (l4[0] >= 13 && l4[0] <= 18)))
			return false;
		return true;
	}
	{
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)l3;

		if (ep_ipv6_martian(ip->src_addr) ||
		    (ip->dst_addr[0] == 0xff && kind != EP_FIB_ICMP_PACKET_TOO_BIG))
			return false;
		/* ICMPv6 types below 128 are errors (RFC 4443 2.1). */
		if (md->l4_proto == IPPROTO_ICMPV6 && (md->flags & EP_META_F_HAS_L4) && l4[0] < 128)
			return false;
		return true;
	}
}

/* A PPPoE session header (RFC 2516) right before the IP header of an
 * @p l2 byte L2 header gets its length: the IP packet and the PPP protocol. */
static void
pppoe_length(uint8_t *h, uint16_t l2, uint32_t ip_len)
{
	if (l2 >= 22 && h[l2 - 10] == 0x88 && h[l2 - 9] == 0x64) {
		h[l2 - 4] = (uint8_t)((ip_len + 2) >> 8);
		h[l2 - 3] = (uint8_t)(ip_len + 2);
	}
}

/* The L2 header of the error: the original one turned around.  Returns its
 * length, or 0 if it does not fit @p room. */
static uint16_t
error_l2(const struct ep_fib_worker *fw, const uint8_t *orig, const struct ep_meta *md,
	 uint8_t *out, uint16_t room, uint16_t ip_len)
{
	uint16_t l2 = md->l3_off;
	uint16_t et = md->l3_type == EP_L3_IPV4 ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6;

	if (md->flags & EP_META_F_MPLS)
		l2 = (uint16_t)(RTE_ETHER_HDR_LEN + 4 * md->n_vlans);
	if (l2 > room)
		return 0;
	memcpy(out, orig + 6, 6);
	memcpy(out + 6, &fw->port[md->in_port].mac, 6);
	memcpy(out + 12, orig + 12, l2 - 12u);
	fib_reply_tpid(fw, out, md->in_port, md->n_vlans);
	if (md->flags & EP_META_F_MPLS) {
		out[l2 - 2] = (uint8_t)(et >> 8);
		out[l2 - 1] = (uint8_t)et;
	} else {
		pppoe_length(out, l2, ip_len);
	}
	return l2;
}

void
ep_fib_icmp_error(struct ep_fib_worker *fw, struct rte_mbuf *m, enum ep_fib_icmp_kind kind,
		  uint32_t mtu)
{
	const struct ep_meta *md = ep_meta(m);
	const uint8_t *orig = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *l3 = orig + md->l3_off;
	bool v4 = md->l3_type == EP_L3_IPV4;
	uint16_t port = md->in_port;
	uint32_t quote, ip_len, hdr = v4 ? 20 + 8 : 40 + 8;
	uint8_t src[16];
	struct rte_mbuf *e;
	uint8_t *b, *ip, *icmp;
	uint16_t l2;

	if (fw->fib->p.icmp_rate == 0)
		return;
	if (port >= fw->n_ports || !error_allowed(md, l3, kind) ||
	    (v4 ? fw->port[port].n_v4 == 0 : fw->port[port].n_v6 == 0)) {
		fw->st.icmp_not_sent++;
		return;
	}
	if (rte_meter_srtcm_color_blind_check(&fw->icmp_meter, &fw->icmp_profile, rte_rdtsc(),
					      1) != RTE_COLOR_GREEN) {
		fw->st.icmp_rate_limited++;
		return;
	}
	/* What is quoted: the datagram as far as the first segment and the
	 * size limit go. */
	quote = RTE_MIN((uint32_t)md->l3_len, (uint32_t)(m->data_len - md->l3_off));
	quote = RTE_MIN(quote, (v4 ? ICMP4_ERROR_MAX : ICMP6_ERROR_MAX) - hdr);
	ip_len = hdr + quote;
	e = rte_pktmbuf_alloc(m->pool);
	if (e == NULL) {
		fw->st.icmp_not_sent++;
		return;
	}
	b = rte_pktmbuf_mtod(e, uint8_t *);
	l2 = error_l2(fw, orig, md, b, (uint16_t)(rte_pktmbuf_tailroom(e) - ip_len),
		      (uint16_t)ip_len);
	if (l2 == 0) {
		rte_pktmbuf_free(e);
		fw->st.icmp_not_sent++;
		return;
	}
	ip = b + l2;
	icmp = ip + (v4 ? 20 : 40);
	memset(icmp, 0, 8);
	icmp[0] = v4 ? icmp4_type_code[kind][0] : icmp6_type_code[kind][0];
	icmp[1] = v4 ? icmp4_type_code[kind][1] : icmp6_type_code[kind][1];
	if (kind == EP_FIB_ICMP_FRAG_NEEDED || kind == EP_FIB_ICMP_PACKET_TOO_BIG) {
		if (v4) {
			icmp[6] = (uint8_t)(mtu >> 8);       /* next-hop MTU, RFC 1191 */
			icmp[7] = (uint8_t)mtu;
		} else {
			uint32_t be = rte_cpu_to_be_32(mtu);

			memcpy(icmp + 4, &be, 4);
		}
	}
	memcpy(icmp + 8, l3, quote);
	if (v4) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;
		uint16_t ck;

		memcpy(src, &fw->port[port].v4[0], 4);
		memset(h, 0, 20);
		h->version_ihl = 0x45;
		h->type_of_service = 0xc0;      /* internetwork control, RFC 1812 4.3.2.5 */
		h->total_length = rte_cpu_to_be_16((uint16_t)ip_len);
		h->time_to_live = ERROR_TTL;
		h->next_proto_id = IPPROTO_ICMP;
		memcpy(&h->src_addr, src, 4);
		h->dst_addr = ((const struct rte_ipv4_hdr *)l3)->src_addr;
		h->hdr_checksum = rte_ipv4_cksum(h);
		ck = ep_csum(icmp, 8 + quote);
		memcpy(icmp + 2, &ck, 2);
	} else {
		struct rte_ipv6_hdr *h = (struct rte_ipv6_hdr *)ip;
		uint16_t ck;

		memcpy(src, fw->port[port].v6[0], 16);
		memset(h, 0, 40);
		h->vtc_flow = RTE_BE32(6u << 28);
		h->payload_len = rte_cpu_to_be_16((uint16_t)(8 + quote));
		h->proto = IPPROTO_ICMPV6;
		h->hop_limits = ERROR_TTL;
		memcpy(h->src_addr, src, 16);
		memcpy(h->dst_addr, ((const struct rte_ipv6_hdr *)l3)->src_addr, 16);
		ck = ep_ipv6_l4_cksum(h, icmp, 8 + quote, IPPROTO_ICMPV6);
		memcpy(icmp + 2, &ck, 2);
	}
	e->data_len = e->pkt_len = l2 + ip_len;
	fw->st.icmp_sent[kind]++;
	ep_fib_emit(fw, port, e);
}

/* ---- the out port's MTU ---- */

uint16_t
ep_fib_too_big(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t mtu)
{
	const struct ep_meta *md = ep_meta(m);
	const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);

	if (md->l3_type == EP_L3_IPV4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;

		if (!(ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_DF_FLAG)))
			return 0;
		ep_fib_icmp_error(fw, m, EP_FIB_ICMP_FRAG_NEEDED, mtu);
		return EP_NEXT_DROP(EP_DROP_IPV4_FRAG_NEEDED);
	}
	ep_fib_icmp_error(fw, m, EP_FIB_ICMP_PACKET_TOO_BIG, mtu);
	return EP_NEXT_DROP(EP_DROP_IPV6_PACKET_TOO_BIG);
}

int
ep_fib_fragment_out(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t mtu,
		    struct rte_mbuf **frags)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t l2[64];
	uint16_t l2_len = md->l3_off;
	int32_t n;

	if (l2_len > sizeof(l2) || m->data_len < l2_len)
		return -1;
	/* rte_ip_frag wants the packet from its IP header on, without the
	 * Ethernet padding; each fragment gets the L2 header back. */
	memcpy(l2, rte_pktmbuf_mtod(m, const uint8_t *), l2_len);
	rte_pktmbuf_adj(m, l2_len);
	if (m->pkt_len > md->l3_len)
		rte_pktmbuf_trim(m, (uint16_t)(m->pkt_len - md->l3_len));
	n = rte_ipv4_fragment_packet(m, frags, EP_FIB_MAX_FRAGS, mtu, m->pool,
				     fw->frag_indirect);
	if (n < 0)
		return -1;
	for (int32_t i = 0; i < n; i++) {
		struct rte_mbuf *f = frags[i];
		uint8_t *h = (uint8_t *)rte_pktmbuf_prepend(f, l2_len);
		struct rte_ipv4_hdr *ip;

		if (h == NULL) {
			/* Direct mbufs come with headroom; never in practice. */
			rte_pktmbuf_free_bulk(&frags[i], (unsigned int)(n - i));
			n = i;
			break;
		}
		memcpy(h, l2, l2_len);
		ip = (struct rte_ipv4_hdr *)(h + l2_len);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		*ep_meta(f) = *md;
		ep_meta(f)->l3_len = rte_be_to_cpu_16(ip->total_length);
		ep_meta(f)->flags |= EP_META_F_FRAGMENT;
		pppoe_length(h, l2_len, ep_meta(f)->l3_len);
	}
	rte_pktmbuf_free(m);    /* the fragments hold their own references */
	fw->st.fragmented++;
	fw->st.fragments += (uint64_t)n;
	return n;
}

uint16_t
ep_fib_fragment(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t port, uint16_t mtu)
{
	struct rte_mbuf *frags[EP_FIB_MAX_FRAGS];
	int n = ep_fib_fragment_out(fw, m, mtu, frags);

	if (n < 0)
		return EP_NEXT_DROP(EP_DROP_IPV4_FRAG_FAILED);   /* the caller frees m */
	for (int i = 0; i < n; i++)
		ep_fib_emit(fw, port, frags[i]);
	return EP_NEXT_CONSUMED;
}
