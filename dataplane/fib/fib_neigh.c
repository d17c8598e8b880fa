/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The neighbour side of a FIB worker: the ARP (RFC 826) and neighbour
 * discovery (RFC 4861) responder for the receiving port's own addresses,
 * what it hears for the resolver, and the questions it asks for unresolved
 * next hops.
 *
 * Responder: requests and solicitations are rewritten into the reply in
 * place and sent back out of the port they came in on (VLAN tags kept):
 *
 *   ARP request for a port address          ARP reply (and "heard" the sender)
 *   ARP reply to a port address             "heard", consumed
 *   ARP request for another address         ARP_NOT_FOR_US
 *   NS for a port address (RFC 4861 7.1.1   NA with R, S (unless DAD), O and
 *   validation: hop limit 255, code 0,      the target link-layer option
 *   checksum, length, target not multicast,
 *   DAD rules)
 *   NA for another address on the port's    "heard", consumed
 *   subnet (7.1.2 validation)
 *   malformed NS / NA, unanswerable frame    ND_MALFORMED
 *   NS for another target, RS, RA, redirect ND_NOT_FOR_US
 *
 * "Heard" posts the sender's address and MAC on the FIB's resolver ring;
 * the control thread decides (ep_fib_tick).  With learning off, replies and
 * advertisements are not for us.
 *
 * The fast path looks at ep_meta only (l3_type, l4_proto): IP traffic costs
 * two compares per packet.  Everything else here is out of line.
 */
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_icmp.h>
#include <rte_malloc.h>

#include "ep_csum.h"
#include "ep_rcu.h"
#include "fib_private.h"

#define ND_RS 133
#define ND_NS 135
#define ND_NA 136
#define ND_REDIRECT 137
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define NA_FLAG_ROUTER    0x80
#define NA_FLAG_SOLICITED 0x40
#define NA_FLAG_OVERRIDE  0x20

/* ---- worker contexts ---- */

struct ep_fib_worker *
ep_fib_worker_create(struct ep_fib *fib, struct ep_worker *w, int socket)
{
	struct ep_fib_worker *fw = rte_zmalloc_socket("ep_fib_worker", sizeof(*fw),
						      RTE_CACHE_LINE_SIZE, socket);
	const struct ep_engine *e = fib->e;

	if (fw == NULL)
		return NULL;
	fw->fib = fib;
	fw->w = w;
	fw->tsc_hz = rte_get_tsc_hz();
	fw->n_ports = (uint16_t)RTE_MIN(e->n_ports, EP_MAX_PORTS);
	for (int i = 0; i < fw->n_ports; i++) {
		const struct ep_port *p = &e->ports[i];

		fw->port[i].mac = p->mac;
		fw->port[i].learn = fib->events != NULL;
		fw->port[i].mtu = p->mtu != 0 ? p->mtu : RTE_ETHER_MTU;
		fw->port[i].n_v4 = p->n_v4;
		fw->port[i].n_v6 = p->n_v6;
		for (int a = 0; a < p->n_v4; a++) {
			fw->port[i].v4[a] = p->v4[a].addr;
			fw->port[i].v4_mask[a] = ep_ipv4_mask_be(p->v4[a].plen);
		}
		for (int a = 0; a < p->n_v6; a++) {
			memcpy(fw->port[i].v6[a], p->v6[a].addr, 16);
			fw->port[i].v6_plen[a] = p->v6[a].plen;
		}
	}
	if (ep_fib_icmp_init(fw, socket) < 0) {
		rte_free(fw);
		return NULL;
	}
	if (fib->n_workers < (int)RTE_DIM(fib->workers))
		fib->workers[fib->n_workers++] = fw;
	return fw;
}

void
ep_fib_worker_free(struct ep_fib_worker *fw)
{
	struct ep_fib *fib;

	if (fw == NULL)
		return;
	fib = fw->fib;
	for (int i = 0; i < fib->n_workers; i++)
		if (fib->workers[i] == fw) {
			fib->workers[i] = fib->workers[--fib->n_workers];
			break;
		}
	rte_mempool_free(fw->frag_indirect);
	rte_free(fw);
}

void
ep_fib_worker_set_qinq_tpid(struct ep_fib_worker *fw, uint16_t port, uint16_t tpid)
{
	if (port < fw->n_ports)
		fw->port[port].qinq_tpid = tpid;
}

void
ep_fib_worker_no_learning(struct ep_fib_worker *fw, uint16_t port)
{
	if (port < fw->n_ports)
		fw->port[port].learn = false;
}

void
ep_fib_worker_stats_sum(const struct ep_fib *fib, struct ep_fib_worker_stats *sum)
{
	const size_t n = sizeof(*sum) / sizeof(uint64_t);

	memset(sum, 0, sizeof(*sum));
	/* Other workers' counters: plain 64-bit loads, never torn on the
	 * 64-bit targets DPDK supports. */
	for (int w = 0; w < fib->n_workers; w++) {
		const uint64_t *src = (const uint64_t *)&fib->workers[w]->st;

		for (size_t i = 0; i < n; i++)
			((uint64_t *)sum)[i] += src[i];
	}
}

/* ---- what the resolver hears ---- */

static void
post(struct ep_fib_worker *fw, uint8_t type, uint8_t family, const uint8_t *ip, uint16_t port,
     const uint8_t *mac)
{
	struct ep_fib_event ev = { .type = type, .family = family, .port = port };

	memcpy(ev.ip, ip, family == 4 ? 4 : 16);
	if (mac != NULL)
		memcpy(ev.mac, mac, 6);
	if (rte_ring_mp_enqueue_elem(fw->fib->events, &ev, sizeof(ev)) != 0)
		fw->st.events_lost++;
	else if (type == EP_FIB_EV_HEARD)
		fw->st.heard++;
}

/* 1 if @p ip (network order) is on one of @p port's IPv4 subnets. */
static int
v4_on_port(const struct ep_fib_worker *fw, uint16_t port, uint32_t ip)
{
	for (int i = 0; i < fw->port[port].n_v4; i++)
		if ((ip & fw->port[port].v4_mask[i]) ==
		    (fw->port[port].v4[i] & fw->port[port].v4_mask[i]))
			return 1;
	return 0;
}

static int
v6_on_port(const struct ep_fib_worker *fw, uint16_t port, const uint8_t *ip)
{
	for (int i = 0; i < fw->port[port].n_v6; i++)
		if (ep_prefix_contains(fw->port[port].v6[i], fw->port[port].v6_plen[i], ip))
			return 1;
	return 0;
}

static int
v6_is_own(const struct ep_fib_worker *fw, uint16_t port, const uint8_t *a)
{
	for (int i = 0; i < fw->port[port].n_v6; i++)
		if (memcmp(fw->port[port].v6[i], a, 16) == 0)
			return 1;
	return 0;
}

/* ---- ARP ---- */

static __rte_noinline uint16_t
arp_in(struct ep_fib_worker *fw, struct rte_mbuf *m)
{
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(p + md->l3_off);
	const struct rte_ether_addr *mac;
	uint32_t tip = a->arp_data.arp_tip, sip = a->arp_data.arp_sip;
	bool learn;
	int i;

	if (md->in_port >= fw->n_ports)
		return EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US);
	learn = fw->port[md->in_port].learn;
	for (i = 0; i < fw->port[md->in_port].n_v4; i++)
		if (fw->port[md->in_port].v4[i] == tip)
			break;
	if (i == fw->port[md->in_port].n_v4)
		return EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US);
	/* The sender, if it is a neighbour on this port, is what we heard. */
	if (learn && sip != tip && v4_on_port(fw, md->in_port, sip))
		post(fw, EP_FIB_EV_HEARD, 4, (const uint8_t *)&sip, md->in_port,
		     a->arp_data.arp_sha.addr_bytes);
	if (a->arp_opcode == RTE_BE16(RTE_ARP_OP_REPLY) && learn) {
		rte_pktmbuf_free(m);
		return EP_NEXT_CONSUMED;
	}
	if (a->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST))
		return EP_NEXT_DROP(EP_DROP_ARP_NOT_FOR_US);
	mac = &fw->port[md->in_port].mac;
	/* Ethernet: back to the sender, from us. */
	memmove(p, p + 6, 6);
	memcpy(p + 6, mac, 6);
	a->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	a->arp_data.arp_tha = a->arp_data.arp_sha;
	a->arp_data.arp_tip = a->arp_data.arp_sip;
	memcpy(&a->arp_data.arp_sha, mac, 6);
	a->arp_data.arp_sip = tip;
	fib_reply_tpid(fw, p, md->in_port, md->n_vlans);
	return EP_NEXT_TX(md->in_port);
}

/* ---- neighbour discovery ---- */

/* Set the frame to exactly @p len bytes (single segment). */
static int
frame_set_len(struct rte_mbuf *m, uint32_t len)
{
	if (m->nb_segs != 1)
		return -1;
	if (len > m->data_len)
		return rte_pktmbuf_append(m, (uint16_t)(len - m->data_len)) == NULL ? -1 : 0;
	return rte_pktmbuf_trim(m, (uint16_t)(m->data_len - len));
}

/* The IPv6 payload of a solicitation or advertisement (RFC 4861 4.3, 4.4):
 * 32 bytes, hop limit 255, the target and one link-layer address option
 * (@p opt: source for NS, target for NA) with @p mac; checksum last. */
static void
nd_message(struct rte_ipv6_hdr *ip, uint8_t *icmp, uint8_t type, uint8_t flags,
	   const uint8_t *src, const uint8_t *dst, const uint8_t *target, uint8_t opt,
	   const struct rte_ether_addr *mac)
{
	uint16_t ck;

	ip->payload_len = RTE_BE16(32);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
	memset(icmp, 0, 32);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[24] = opt;
	icmp[25] = 1;
	memcpy(icmp + 26, mac, 6);
	ck = ep_ipv6_l4_cksum(ip, icmp, 32, IPPROTO_ICMPV6);
	memcpy(icmp + 2, &ck, 2);
}

/* RFC 4861 7.1.1 / 7.1.2 checks common to NS and NA, then the options:
 * 0 and the link-layer address option of @p want_opt (or NULL) in *lla,
 * or -1.  @p dad: source unspecified (no SLLA allowed). */
static int
nd_valid(const struct rte_ipv6_hdr *ip, const uint8_t *icmp, uint32_t len, uint8_t want_opt,
	 bool dad, const uint8_t **lla)
{
	*lla = NULL;
	if (ip->hop_limits != 255 || icmp[1] != 0 || len < 24 ||
	    ep_ipv6_l4_cksum(ip, icmp, len, IPPROTO_ICMPV6) != 0 || icmp[8] == 0xff)
		return -1;
	for (uint32_t o = 24; o < len; ) {
		uint32_t olen;

		if (o + 2 > len)
			return -1;
		olen = (uint32_t)icmp[o + 1] * 8;
		if (olen == 0 || o + olen > len)
			return -1;
		if (dad && icmp[o] == ND_OPT_SLLA)
			return -1;
		if (icmp[o] == want_opt && olen >= 8)
			*lla = icmp + o + 2;
		o += olen;
	}
	return 0;
}

static __rte_noinline uint16_t
nd_in(struct ep_fib_worker *fw, struct rte_mbuf *m)
{
	static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
	struct ep_meta *md = ep_meta(m);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + md->l3_off);
	uint8_t *icmp = p + md->l4_off;
	uint32_t len = (uint32_t)md->l3_off + md->l3_len - md->l4_off;
	uint8_t target[16], dst[16];
	const struct rte_ether_addr *mac;
	const uint8_t *lla;
	bool dad;

	/* The parser guaranteed the 4-byte ICMPv6 header inside the first
	 * segment; the rest is checked here. */
	if ((uint32_t)md->l4_off + len > m->data_len || md->in_port >= fw->n_ports)
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	if (icmp[0] != ND_NS && !(icmp[0] == ND_NA && fw->port[md->in_port].learn))
		return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
	dad = memcmp(ip->src_addr, (const uint8_t[16]){0}, 16) == 0;
	if (icmp[0] == ND_NA) {
		/* RFC 4861 7.1.2: a multicast destination means unsolicited. */
		if (dad || nd_valid(ip, icmp, len, ND_OPT_TLLA, false, &lla) < 0 ||
		    (ip->dst_addr[0] == 0xff && (icmp[4] & NA_FLAG_SOLICITED)))
			return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
		memcpy(target, icmp + 8, 16);
		if (lla == NULL || v6_is_own(fw, md->in_port, target) ||
		    !v6_on_port(fw, md->in_port, target))
			return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
		post(fw, EP_FIB_EV_HEARD, 6, target, md->in_port, lla);
		rte_pktmbuf_free(m);
		return EP_NEXT_CONSUMED;
	}
	if (nd_valid(ip, icmp, len, ND_OPT_SLLA, dad, &lla) < 0)
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	if (dad && !(ip->dst_addr[0] == 0xff && ip->dst_addr[1] == 0x02 &&
		     ip->dst_addr[11] == 0x01 && ip->dst_addr[12] == 0xff))
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	memcpy(target, icmp + 8, 16);
	if (!v6_is_own(fw, md->in_port, target))
		return EP_NEXT_DROP(EP_DROP_ND_NOT_FOR_US);
	/* A solicitation names its sender (RFC 4861 7.2.3): heard. */
	if (lla != NULL && fw->port[md->in_port].learn &&
	    v6_on_port(fw, md->in_port, ip->src_addr))
		post(fw, EP_FIB_EV_HEARD, 6, ip->src_addr, md->in_port, lla);

	/* Neighbour advertisement (RFC 4861 4.4, 7.2.4) in place.  Extension
	 * headers of the solicitation, if any, are not carried over. */
	memcpy(dst, dad ? all_nodes : ip->src_addr, 16);
	if (frame_set_len(m, (uint32_t)md->l3_off + 40 + 32) < 0)
		return EP_NEXT_DROP(EP_DROP_ND_MALFORMED);
	p = rte_pktmbuf_mtod(m, uint8_t *);
	ip = (struct rte_ipv6_hdr *)(p + md->l3_off);
	icmp = p + md->l3_off + 40;
	mac = &fw->port[md->in_port].mac;
	if (dad) {
		static const uint8_t mc[6] = {0x33, 0x33, 0, 0, 0, 1};

		memcpy(p, mc, 6);
	} else {
		memmove(p, p + 6, 6);
	}
	memcpy(p + 6, mac, 6);
	fib_reply_tpid(fw, p, md->in_port, md->n_vlans);
	nd_message(ip, icmp, ND_NA,
		   NA_FLAG_ROUTER | NA_FLAG_OVERRIDE | (dad ? 0 : NA_FLAG_SOLICITED), target, dst,
		   target, ND_OPT_TLLA, mac);
	md->l4_off = (uint16_t)(md->l3_off + 40);
	md->l3_len = 72;
	md->flags = EP_META_F_HAS_L4;
	return EP_NEXT_TX(md->in_port);
}

static __rte_always_inline uint16_t
neigh_one(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t *next)
{
	const struct ep_meta *md = ep_meta(m);

	if (unlikely(md->l3_type == EP_L3_ARP)) {
		*next = arp_in(fw, m);
		return 1;
	}
	if (unlikely(md->l4_proto == IPPROTO_ICMPV6) && md->l3_type == EP_L3_IPV6 &&
	    (md->flags & EP_META_F_HAS_L4)) {
		uint8_t type = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l4_off)[0];

		if (type >= ND_RS && type <= ND_REDIRECT) {
			*next = nd_in(fw, m);
			return 1;
		}
	}
	return 0;
}

uint16_t
ep_fib_neigh_burst(struct ep_fib_worker *fw, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++)
		out += neigh_one(fw, pkts[i], &next[i]);
	return out;
}

uint16_t
ep_fib_neigh_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return ep_fib_neigh_burst(ctx, pkts, next, n);
}

/* ---- asking: ARP request, neighbour solicitation ---- */

/* A source address of @p port for talking to @p ip: one on its subnet,
 * else the first of the family; 0 if the port has none. */
static int
source_for(const struct ep_fib_worker *fw, uint16_t port, uint8_t family, const uint8_t *ip,
	   uint8_t *src)
{
	if (family == 4) {
		uint32_t a;

		if (fw->port[port].n_v4 == 0)
			return 0;
		memcpy(&a, ip, 4);
		memcpy(src, &fw->port[port].v4[0], 4);
		for (int i = 0; i < fw->port[port].n_v4; i++)
			if ((a & fw->port[port].v4_mask[i]) ==
			    (fw->port[port].v4[i] & fw->port[port].v4_mask[i]))
				memcpy(src, &fw->port[port].v4[i], 4);
		return 1;
	}
	if (fw->port[port].n_v6 == 0)
		return 0;
	memcpy(src, fw->port[port].v6[0], 16);
	for (int i = 0; i < fw->port[port].n_v6; i++)
		if (ep_prefix_contains(fw->port[port].v6[i], fw->port[port].v6_plen[i], ip))
			memcpy(src, fw->port[port].v6[i], 16);
	return 1;
}

static uint16_t
arp_request(uint8_t *b, const struct rte_ether_addr *smac, const uint8_t *dmac,
	    const uint8_t *sip, const uint8_t *tip)
{
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(b + RTE_ETHER_HDR_LEN);

	memset(b, 0xff, 6);
	if (dmac != NULL)
		memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	b[12] = 0x08;
	b[13] = 0x06;
	a->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = RTE_ETHER_ADDR_LEN;
	a->arp_plen = 4;
	a->arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
	a->arp_data.arp_sha = *smac;
	memcpy(&a->arp_data.arp_sip, sip, 4);
	memset(&a->arp_data.arp_tha, 0, 6);
	memcpy(&a->arp_data.arp_tip, tip, 4);
	return RTE_ETHER_HDR_LEN + sizeof(*a);
}

/* RFC 4861 4.3, 7.2.2: to the target's solicited-node multicast address
 * (ff02::1:ffXX:XXXX, RFC 4291 2.7.1), or unicast to a known address. */
static uint16_t
nd_solicit(uint8_t *b, const struct rte_ether_addr *smac, const uint8_t *dmac,
	   const uint8_t *src, const uint8_t *target)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(b + RTE_ETHER_HDR_LEN);
	uint8_t *icmp = b + RTE_ETHER_HDR_LEN + 40;
	uint8_t dst[16] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};

	memcpy(dst + 13, target + 13, 3);
	if (dmac != NULL) {
		memcpy(b, dmac, 6);
		memcpy(dst, target, 16);
	} else {
		b[0] = b[1] = 0x33;
		memcpy(b + 2, dst + 12, 4);
	}
	memcpy(b + 6, smac, 6);
	b[12] = 0x86;
	b[13] = 0xdd;
	memset(ip, 0, 40);
	ip->vtc_flow = RTE_BE32(6u << 28);
	nd_message(ip, icmp, ND_NS, 0, src, dst, target, ND_OPT_SLLA, smac);
	return RTE_ETHER_HDR_LEN + 40 + 32;
}

void
ep_fib_ask(struct ep_fib_worker *fw, struct rte_mempool *pool, uint8_t family,
	   const uint8_t *ip, uint16_t port, const uint8_t *mac)
{
	uint64_t a[2] = { 0, 0 };       /* rte_hash_crc reads words: aligned */
	uint32_t key;
	uint64_t now = rte_rdtsc();
	uint8_t src[16];
	struct rte_mbuf *m;
	uint8_t *b;
	uint16_t len;
	unsigned int slot;

	memcpy(a, ip, family == 4 ? 4 : 16);
	key = rte_hash_crc(a, family == 4 ? 4 : 16, family);
	slot = key % EP_FIB_ASK_SLOTS;

	if (fw->fib->events == NULL || port >= fw->n_ports)
		return;
	if (fw->asked[slot].key == key && now - fw->asked[slot].tsc < fw->tsc_hz) {
		fw->st.asks_throttled++;
		return;
	}
	if (!source_for(fw, port, family, ip, src) || pool == NULL ||
	    (m = rte_pktmbuf_alloc(pool)) == NULL) {
		fw->st.asks_failed++;
		return;
	}
	fw->asked[slot].key = key;
	fw->asked[slot].tsc = now;
	b = rte_pktmbuf_mtod(m, uint8_t *);
	if (family == 4) {
		len = arp_request(b, &fw->port[port].mac, mac, src, ip);
		fw->st.arp_requests++;
	} else {
		len = nd_solicit(b, &fw->port[port].mac, mac, src, ip);
		fw->st.nd_solicits++;
	}
	m->data_len = m->pkt_len = len;
	post(fw, EP_FIB_EV_ASKED, family, ip, port, NULL);
	ep_fib_emit(fw, port, m);
}

void
ep_fib_emit(struct ep_fib_worker *fw, uint16_t port, struct rte_mbuf *m)
{
	if (fw->w != NULL)
		ep_worker_emit(fw->w, port, m);
	else
		rte_pktmbuf_free(m);
}

/* ---- next hops a worker cannot just forward to ---- */

uint16_t
ep_fib_nh_slow(struct ep_fib_worker *fw, struct rte_mbuf *m, uint32_t idx, uint16_t *next,
	       ep_fib_local_fn local, void *arg)
{
	const struct ep_fib *fib = fw->fib;
	struct ep_meta *md = ep_meta(m);
	const struct ep_fib_nh *nh;

	if (idx >= fib->p.max_nexthops) {
		ep_fib_icmp_error(fw, m, EP_FIB_ICMP_NET_UNREACHABLE, 0);
		*next = EP_NEXT_DROP(EP_DROP_NO_ROUTE);
		return 1;
	}
	nh = ep_fib_nh_read(fib, idx);
	switch (nh->kind) {
	case EP_FIB_NH_FORWARD:
		md->nexthop = idx;
		ep_meta_set_nh(m, nh);
		return 0;
	case EP_FIB_NH_STALE:
		/* Forwarded, and confirmed again by a unicast question. */
		ep_fib_ask(fw, m->pool, nh->family, nh->ip, nh->port, nh->eth);
		md->nexthop = idx;
		ep_meta_set_nh(m, nh);
		return 0;
	case EP_FIB_NH_IS_LOCAL:
		*next = local(fw, m, arg);
		return 1;
	default:
		break;
	}
	if (idx == EP_FIB_NH_GLEAN) {
		/* A host on a connected subnet: ask for the destination itself. */
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);
		uint8_t dst[16] = {0};
		uint8_t fam = md->l3_type == EP_L3_IPV4 ? 4 : 6;
		uint32_t d4;

		memcpy(dst, l3 + (fam == 4 ? 16 : 24), fam == 4 ? 4 : 16);
		memcpy(&d4, dst, 4);
		for (uint16_t p = 0; p < fw->n_ports; p++)
			if (fam == 4 ? v4_on_port(fw, p, d4) : v6_on_port(fw, p, dst)) {
				ep_fib_ask(fw, m->pool, fam, dst, p, NULL);
				break;
			}
	} else if (nh->family != 0) {
		ep_fib_ask(fw, m->pool, nh->family, nh->ip, nh->port, NULL);
	}
	*next = EP_NEXT_DROP(EP_DROP_NEIGHBOR_UNRESOLVED);
	return 1;
}
