/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the host stack's datagrams go: its own addresses (the ports'
 * ipv4/ipv6), their connected subnets, static routes ([hoststack] route),
 * and the neighbours on them (ARP, RFC 826; IPv6 neighbour discovery,
 * RFC 4861), learnt by each worker or configured static.
 *
 * This is the one small interface the rest of the host stack calls
 * (hs_route_lookup, hs_is_own, hs_nb_output), so that the shared FIB
 * module (dataplane/fib/) can replace what is behind it; the host stack does
 * not use that module yet.
 *
 * Routes: an immutable snapshot (at most HS_MAX_ROUTES entries, longest
 * prefix first) rebuilt on every change and published; a host stack has a
 * handful of routes, so a linear walk of a few cache lines is the lookup,
 * and a connected socket caches its answer (keyed by the snapshot's gen).
 *
 * Neighbours: each worker keeps its own table (rte_hash, written and read
 * only by that worker, so no sharing at all), learns from ARP requests and
 * replies and from NS/NA of hosts on its connected subnets, and resolves
 * what it needs itself: the first datagram to an unknown next hop sends an
 * ARP request or a neighbour solicitation and waits in a queue of
 * HS_NEIGH_QUEUE frames; three probes a second apart, then the queue is
 * dropped (neighbor_unresolved) and the next datagram starts over.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "ep_csum.h"
#include "ep_rcu.h"
#include "hoststack.h"

int
hs_parse_ip(const char *s, struct hs_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, s, ip->b) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, ip->b) == 1)
		return 6;
	return 0;
}

int
hs_parse_prefix(const char *s, struct hs_ip *ip, uint8_t *plen, struct ep_err *err)
{
	char buf[64], *slash, *end;
	unsigned long l;
	int fam;

	if (strlen(s) >= sizeof(buf))
		return ep_err_set(err, "'%s' is not a prefix", s);
	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash != NULL)
		*slash = '\0';
	fam = hs_parse_ip(buf, ip);
	if (fam == 0)
		return ep_err_set(err, "'%s' is not an IPv4 or IPv6 address", buf);
	if (slash == NULL) {
		*plen = fam == 4 ? 32 : 128;
		return fam;
	}
	l = strtoul(slash + 1, &end, 10);
	if (*end != '\0' || slash[1] == '\0' || l > (fam == 4 ? 32u : 128u))
		return ep_err_set(err, "'%s' is not a prefix", s);
	*plen = (uint8_t)l;
	/* 198.18.0.1/24 means the /24. */
	hs_prefix_mask((uint8_t)fam, ip, *plen);
	return fam;
}

void
hs_prefix_mask(uint8_t family, struct hs_ip *ip, uint8_t plen)
{
	for (uint32_t i = 0; i < hs_ip_len(family); i++) {
		int bits = (int)plen - (int)i * 8;

		if (bits <= 0)
			ip->b[i] = 0;
		else if (bits < 8)
			ip->b[i] &= (uint8_t)(0xff << (8 - bits));
	}
}

const char *
hs_ip_str(uint8_t family, const struct hs_ip *ip, char *buf, size_t n)
{
	if (inet_ntop(family == 4 ? AF_INET : AF_INET6, ip->b, buf, (socklen_t)n) == NULL)
		snprintf(buf, n, "?");
	return buf;
}

bool
hs_prefix_match(uint8_t family, const struct hs_ip *a, const struct hs_ip *prefix,
		uint8_t plen)
{
	uint32_t full = plen / 8, rem = plen % 8;

	if (memcmp(a->b, prefix->b, full) != 0)
		return false;
	if (rem == 0)
		return true;
	return ((a->b[full] ^ prefix->b[full]) & (uint8_t)(0xff << (8 - rem))) == 0;
}

/* ---- the snapshot ---- */

static int
rt_cmp(const void *a, const void *b)
{
	const struct hs_rt_entry *x = a, *y = b;

	return (int)y->plen - (int)x->plen;
}

/* The port whose connected subnet holds @p ip, or -1. */
static int
connected_port(const struct hs_routes *r, uint8_t family, const struct hs_ip *ip)
{
	for (int i = 0; i < r->n_rt; i++)
		if (r->rt[i].connected && r->rt[i].family == family &&
		    hs_prefix_match(family, ip, &r->rt[i].prefix, r->rt[i].plen))
			return r->rt[i].port;
	return -1;
}

/* Fill own addresses and connected routes from the ports; static routes
 * already in @p r (connected == false) are kept. */
static void
rt_from_ports(struct hs_stack *s, struct hs_routes *r)
{
	struct ep_engine *e = s->e;
	int k = 0;

	for (int i = 0; i < r->n_rt; i++)
		if (!r->rt[i].connected)
			r->rt[k++] = r->rt[i];
	r->n_rt = k;
	r->n_own = 0;
	for (int p = 0; p < e->n_ports; p++) {
		const struct ep_port *port = &e->ports[p];

		r->mac[p] = port->mac;
		r->mtu[p] = s->p.mtu[p];
		for (int a = 0; a < port->n_v4 + port->n_v6; a++) {
			struct hs_own_addr *o = &r->own[r->n_own++];
			struct hs_rt_entry *c = &r->rt[r->n_rt++];

			memset(o, 0, sizeof(*o));
			o->port = (uint16_t)p;
			if (a < port->n_v4) {
				o->family = 4;
				o->plen = port->v4[a].plen;
				memcpy(o->ip.b, &port->v4[a].addr, 4);
			} else {
				o->family = 6;
				o->plen = port->v6[a - port->n_v4].plen;
				memcpy(o->ip.b, port->v6[a - port->n_v4].addr, 16);
			}
			memset(c, 0, sizeof(*c));
			c->family = o->family;
			c->plen = o->plen;
			c->port = o->port;
			c->connected = true;
			c->prefix = o->ip;
			hs_prefix_mask(o->family, &c->prefix, o->plen);
		}
	}
}

/* Publish a copy of routes_cfg; the old snapshot is freed after a grace
 * period.  Nothing is published when the copy cannot be made. */
static int
rt_publish(struct hs_stack *s, struct ep_err *err)
{
	struct hs_routes *n = malloc(sizeof(*n)), *old;

	if (n == NULL)
		return ep_err_set(err, "out of memory");
	*n = *s->routes_cfg;
	n->gen = s->routes != NULL ? s->routes->gen + 1 : 1;
	qsort(n->rt, (size_t)n->n_rt, sizeof(n->rt[0]), rt_cmp);
	old = s->routes;
	ep_rcu_publish(&s->routes, n);
	if (old != NULL) {
		ep_rcu_synchronize(s->e);
		free(old);
	}
	return 0;
}

int
hs_routes_build(struct hs_stack *s, struct ep_err *err)
{
	rt_from_ports(s, s->routes_cfg);
	return rt_publish(s, err);
}

int
hs_route_add(struct hs_stack *s, const char *prefix, const char *via, struct ep_err *err)
{
	struct hs_routes *r = s->routes_cfg;
	struct hs_rt_entry nr = { 0 };
	int fam, gfam, port;

	fam = hs_parse_prefix(prefix, &nr.prefix, &nr.plen, err);
	if (fam < 0)
		return -1;
	gfam = hs_parse_ip(via, &nr.gw);
	if (gfam != fam)
		return ep_err_set(err, "via: '%s' is not an IPv%d address", via, fam);
	nr.family = (uint8_t)fam;
	port = connected_port(r, nr.family, &nr.gw);
	if (port < 0)
		return ep_err_set(err, "via: '%s' is not on a connected subnet of any port", via);
	nr.port = (uint16_t)port;
	for (int i = 0; i < r->n_rt; i++) {
		struct hs_rt_entry *x = &r->rt[i];

		if (!x->connected && x->family == nr.family && x->plen == nr.plen &&
		    hs_ip_eq(nr.family, &x->prefix, &nr.prefix)) {
			*x = nr;
			return rt_publish(s, err);
		}
	}
	if (r->n_rt == HS_MAX_ROUTES)
		return ep_err_set(err, "more than %d routes", HS_MAX_ROUTES);
	r->rt[r->n_rt++] = nr;
	return rt_publish(s, err);
}

int
hs_route_del(struct hs_stack *s, const char *prefix, struct ep_err *err)
{
	struct hs_routes *r = s->routes_cfg;
	struct hs_ip pfx;
	uint8_t plen;
	int fam = hs_parse_prefix(prefix, &pfx, &plen, err);

	if (fam < 0)
		return -1;
	for (int i = 0; i < r->n_rt; i++) {
		struct hs_rt_entry *x = &r->rt[i];

		if (!x->connected && x->family == fam && x->plen == plen &&
		    hs_ip_eq((uint8_t)fam, &x->prefix, &pfx)) {
			r->rt[i] = r->rt[--r->n_rt];
			return rt_publish(s, err);
		}
	}
	return ep_err_set(err, "no static route %s", prefix);
}

bool
hs_is_own(const struct hs_routes *rt, uint8_t family, const struct hs_ip *ip, uint16_t *port)
{
	for (int i = 0; i < rt->n_own; i++)
		if (rt->own[i].family == family && hs_ip_eq(family, &rt->own[i].ip, ip)) {
			if (port != NULL)
				*port = rt->own[i].port;
			return true;
		}
	return false;
}

/* Source address for a datagram leaving @p port towards @p via: the
 * port's address on via's subnet, else its first of the family. */
static bool
choose_src(const struct hs_routes *rt, uint16_t port, uint8_t family, const struct hs_ip *via,
	   struct hs_ip *src)
{
	int first = -1;

	for (int i = 0; i < rt->n_own; i++) {
		const struct hs_own_addr *o = &rt->own[i];

		if (o->port != port || o->family != family)
			continue;
		if (first < 0)
			first = i;
		if (hs_prefix_match(family, via, &o->ip, o->plen)) {
			*src = o->ip;
			return true;
		}
	}
	if (first < 0)
		return false;
	*src = rt->own[first].ip;
	return true;
}

bool
hs_route_lookup(const struct hs_routes *rt, uint8_t family, const struct hs_ip *dst,
		struct hs_nexthop *nh)
{
	memset(nh, 0, sizeof(*nh));
	nh->family = family;
	if (hs_is_own(rt, family, dst, &nh->port)) {
		nh->local = true;
		nh->via = *dst;
		nh->src = *dst;
		return true;
	}
	for (int i = 0; i < rt->n_rt; i++) {
		const struct hs_rt_entry *r = &rt->rt[i];

		if (r->family != family || !hs_prefix_match(family, dst, &r->prefix, r->plen))
			continue;
		nh->port = r->port;
		nh->via = r->connected ? *dst : r->gw;
		return choose_src(rt, r->port, family, &nh->via, &nh->src);
	}
	return false;
}

/* ---- static neighbours (config, control) ---- */

int
hs_neigh_static_add(struct hs_stack *s, const char *ip, const char *mac, struct ep_err *err)
{
	struct hs_neigh nb = { 0 };
	int fam = hs_parse_ip(ip, &nb.ip), port;

	if (fam == 0)
		return ep_err_set(err, "'%s' is not an IP address", ip);
	if (ep_parse_mac(mac, &nb.mac) < 0 || !rte_is_unicast_ether_addr(&nb.mac) ||
	    rte_is_zero_ether_addr(&nb.mac))
		return ep_err_set(err, "'%s' is not a unicast MAC address", mac);
	nb.family = (uint8_t)fam;
	port = connected_port(s->routes_cfg, nb.family, &nb.ip);
	if (port < 0)
		return ep_err_set(err, "'%s' is not on a connected subnet of any port", ip);
	nb.port = (uint16_t)port;
	nb.state = HS_NB_STATIC;
	for (int i = 0; i < s->n_static_nb; i++)
		if (s->static_nb[i].family == nb.family &&
		    hs_ip_eq(nb.family, &s->static_nb[i].ip, &nb.ip)) {
			s->static_nb[i] = nb;
			return 0;
		}
	if (s->n_static_nb == (int)RTE_DIM(s->static_nb))
		return ep_err_set(err, "more than %zu static neighbours", RTE_DIM(s->static_nb));
	s->static_nb[s->n_static_nb++] = nb;
	return 0;
}

/* ---- worker-side neighbour table ---- */

struct nb_key {
	uint8_t family;
	uint8_t pad[3];
	struct hs_ip ip;
} __attribute__((aligned(8)));

int
hs_nb_init(struct hs_wctx *c, uint32_t max, struct ep_err *err)
{
	char name[RTE_HASH_NAMESIZE];

	snprintf(name, sizeof(name), "hs_nb_%p", (void *)c);
	c->nb_hash = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = max, .key_len = sizeof(struct nb_key),
		.hash_func = rte_hash_crc, .socket_id = SOCKET_ID_ANY });
	c->nb = rte_zmalloc("hs_nb", sizeof(*c->nb) * max, RTE_CACHE_LINE_SIZE);
	c->nb_max = max;
	if (c->nb_hash == NULL || c->nb == NULL)
		return ep_err_set(err, "hoststack: neighbour table: out of memory");
	return 0;
}

void
hs_nb_free(struct hs_wctx *c)
{
	if (c->nb != NULL)
		for (uint32_t i = 0; i < c->nb_max; i++)
			if (c->nb[i].n_queued != 0)
				rte_pktmbuf_free_bulk(c->nb[i].queued, c->nb[i].n_queued);
	rte_hash_free(c->nb_hash);
	rte_free(c->nb);
}

static struct nb_key
nb_key(uint8_t family, const struct hs_ip *ip)
{
	struct nb_key k;

	memset(&k, 0, sizeof(k));
	k.family = family;
	memcpy(k.ip.b, ip->b, hs_ip_len(family));
	return k;
}

struct hs_neigh *
hs_nb_find(struct hs_wctx *c, uint8_t family, const struct hs_ip *ip)
{
	struct nb_key k = nb_key(family, ip);
	int32_t i = rte_hash_lookup(c->nb_hash, &k);

	return i < 0 ? NULL : &c->nb[i];
}

static struct hs_neigh *
nb_add(struct hs_wctx *c, uint8_t family, const struct hs_ip *ip)
{
	struct nb_key k = nb_key(family, ip);
	int32_t i = rte_hash_add_key(c->nb_hash, &k);

	if (i < 0 || (uint32_t)i >= c->nb_max)
		return NULL;
	memset(&c->nb[i], 0, sizeof(c->nb[i]));
	c->nb[i].family = family;
	c->nb[i].ip = k.ip;
	return &c->nb[i];
}

static void
nb_remove(struct hs_wctx *c, struct hs_neigh *nb)
{
	struct nb_key k = nb_key(nb->family, &nb->ip);

	rte_hash_del_key(c->nb_hash, &k);
	nb->state = HS_NB_FREE;
}

/* Prepend Ethernet and queue on the port's batch (flushed by hs_flush_ports). */
static void
eth_out(struct hs_wctx *c, struct rte_mbuf *m, uint16_t port, uint8_t family,
	const struct rte_ether_addr *dmac)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eh));

	if (eh == NULL || port >= EP_MAX_PORTS) {
		c->w->service_stage.stats.drops[EP_DROP_HS_ALLOC_FAILED]++;
		rte_pktmbuf_free(m);
		return;
	}
	rte_ether_addr_copy(dmac, &eh->dst_addr);
	rte_ether_addr_copy(&c->rt->mac[port], &eh->src_addr);
	eh->ether_type = family == 4 ? RTE_BE16(RTE_ETHER_TYPE_IPV4) : RTE_BE16(RTE_ETHER_TYPE_IPV6);
	hs_port_queue(c, port, m);
}

void
hs_port_queue(struct hs_wctx *c, uint16_t port, struct rte_mbuf *m)
{
	if (c->n_txq[port] == HS_PORTQ) {
		/* Only frames that are not from a socket ring get here when it
		 * is full (ARP, ICMP): the port has been refusing for a while. */
		c->w->tx_stage.stats.drops[EP_DROP_TX_FULL]++;
		rte_pktmbuf_free(m);
		return;
	}
	c->txq[port][c->n_txq[port]++] = m;
	if (c->n_txq[port] >= EP_BURST_MAX)
		hs_flush_port(c, port);
}

/* Offer a port its queue; keep what it does not take, so the sockets'
 * senders block as on a full qdisc.  A port that takes nothing has its
 * queue dropped after 100 ms if its link is down (a peer gone) and after
 * 1 s otherwise: a live peer that the scheduler starves (other processes
 * on shared cores) must not turn its pauses into loss, a dead one must
 * not hold the sockets.  The link is read only on that slow path. */
static bool
port_link_up(const struct hs_wctx *c, uint16_t p)
{
	struct rte_eth_link link;

	if (rte_eth_link_get_nowait(c->s->e->ports[p].port_id, &link) != 0)
		return true;    /* unknown: wait the full second */
	return link.link_status == RTE_ETH_LINK_UP;
}

void
hs_flush_port(struct hs_wctx *c, uint16_t p)
{
	uint16_t n = c->n_txq[p], sent;
	uint64_t now;

	if (n == 0)
		return;
	sent = ep_worker_tx_keep(c->w, p, c->txq[p], n);
	if (sent == n) {
		c->n_txq[p] = 0;
		c->txq_stall_tsc[p] = 0;
		return;
	}
	memmove(c->txq[p], c->txq[p] + sent, sizeof(c->txq[p][0]) * (n - sent));
	c->n_txq[p] = (uint16_t)(n - sent);
	now = rte_rdtsc();
	if (sent != 0 || c->txq_stall_tsc[p] == 0) {
		c->txq_stall_tsc[p] = now;
	} else if (now - c->txq_stall_tsc[p] > c->tsc_hz ||
		   (now - c->txq_stall_tsc[p] > c->tsc_hz / 10 && !port_link_up(c, p))) {
		c->w->tx_stage.stats.drops[EP_DROP_TX_FULL] += c->n_txq[p];
		rte_pktmbuf_free_bulk(c->txq[p], c->n_txq[p]);
		c->n_txq[p] = 0;
		c->txq_stall_tsc[p] = 0;
	}
}

void
hs_flush_ports(struct hs_wctx *c)
{
	for (uint16_t p = 0; p < EP_MAX_PORTS && p < c->s->e->n_ports; p++)
		hs_flush_port(c, p);
}

/* ARP request (RFC 826) or neighbour solicitation (RFC 4861 4.3) for @p nb. */
static void
nb_probe(struct hs_wctx *c, struct hs_neigh *nb, uint64_t now)
{
	struct ep_port *p = &c->s->e->ports[nb->port];
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	const struct rte_ether_addr *mac = &c->rt->mac[nb->port];
	struct hs_ip src;

	nb->probe_tsc = now;
	nb->probes++;
	if (m == NULL || !choose_src(c->rt, nb->port, nb->family, &nb->ip, &src)) {
		rte_pktmbuf_free(m);
		return;
	}
	if (nb->family == 4) {
		struct rte_ether_hdr *eh;
		struct rte_arp_hdr *a;

		eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eh) + sizeof(*a));
		a = (struct rte_arp_hdr *)(eh + 1);
		memset(&eh->dst_addr, 0xff, 6);
		rte_ether_addr_copy(mac, &eh->src_addr);
		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
		a->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
		a->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
		a->arp_hlen = 6;
		a->arp_plen = 4;
		a->arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
		rte_ether_addr_copy(mac, &a->arp_data.arp_sha);
		memcpy(&a->arp_data.arp_sip, src.b, 4);
		memset(&a->arp_data.arp_tha, 0, 6);
		memcpy(&a->arp_data.arp_tip, nb->ip.b, 4);
		c->st.arp_requests_sent++;
	} else {
		struct rte_ether_hdr *eh;
		struct rte_ipv6_hdr *ip;
		uint8_t *icmp;
		uint16_t ck;

		eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eh) + 40 + 32);
		ip = (struct rte_ipv6_hdr *)(eh + 1);
		icmp = (uint8_t *)(ip + 1);
		/* Solicited-node multicast ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX. */
		eh->dst_addr = (struct rte_ether_addr){ { 0x33, 0x33, 0xff, nb->ip.b[13],
							  nb->ip.b[14], nb->ip.b[15] } };
		rte_ether_addr_copy(mac, &eh->src_addr);
		eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
		ip->vtc_flow = RTE_BE32(6u << 28);
		ip->payload_len = RTE_BE16(32);
		ip->proto = IPPROTO_ICMPV6;
		ip->hop_limits = 255;
		memcpy(ip->src_addr, src.b, 16);
		memset(ip->dst_addr, 0, 16);
		ip->dst_addr[0] = 0xff;
		ip->dst_addr[1] = 0x02;
		ip->dst_addr[11] = 0x01;
		ip->dst_addr[12] = 0xff;
		memcpy(ip->dst_addr + 13, nb->ip.b + 13, 3);
		memset(icmp, 0, 32);
		icmp[0] = 135;                  /* neighbour solicitation */
		memcpy(icmp + 8, nb->ip.b, 16);
		icmp[24] = 1;                   /* source link-layer address option */
		icmp[25] = 1;
		memcpy(icmp + 26, mac, 6);
		ck = ep_ipv6_l4_cksum(ip, icmp, 32, IPPROTO_ICMPV6);
		memcpy(icmp + 2, &ck, 2);
		c->st.ns_sent++;
	}
	hs_port_queue(c, nb->port, m);
}

void
hs_nb_output(struct hs_wctx *c, struct rte_mbuf *m, uint16_t port, uint8_t family,
	     const struct hs_ip *via)
{
	struct hs_neigh *nb = hs_nb_find(c, family, via);

	if (nb != NULL && (nb->state == HS_NB_REACHABLE || nb->state == HS_NB_STATIC)) {
		eth_out(c, m, nb->port, family, &nb->mac);
		return;
	}
	if (nb == NULL) {
		nb = nb_add(c, family, via);
		if (nb == NULL) {
			c->w->service_stage.stats.drops[EP_DROP_NEIGHBOR_UNRESOLVED]++;
			rte_pktmbuf_free(m);
			return;
		}
		nb->state = HS_NB_INCOMPLETE;
		nb->port = port;
		nb->queued[nb->n_queued++] = m;
		nb_probe(c, nb, rte_rdtsc());
		return;
	}
	if (nb->n_queued == HS_NEIGH_QUEUE) {
		c->w->service_stage.stats.drops[EP_DROP_NEIGHBOR_UNRESOLVED]++;
		rte_pktmbuf_free(m);
		return;
	}
	nb->queued[nb->n_queued++] = m;
}

void
hs_nb_learn(struct hs_wctx *c, uint8_t family, const struct hs_ip *ip,
	    const struct rte_ether_addr *mac, uint16_t port, bool stat)
{
	struct hs_neigh *nb = hs_nb_find(c, family, ip);

	if (!rte_is_unicast_ether_addr(mac) || rte_is_zero_ether_addr(mac))
		return;
	if (nb == NULL) {
		nb = nb_add(c, family, ip);
		if (nb == NULL)
			return;
	} else if (nb->state == HS_NB_STATIC && !stat) {
		return;         /* configured wins over learnt */
	}
	nb->mac = *mac;
	nb->port = port;
	nb->state = stat ? HS_NB_STATIC : HS_NB_REACHABLE;
	nb->seen_tsc = rte_rdtsc();
	nb->probes = 0;
	for (uint8_t i = 0; i < nb->n_queued; i++)
		eth_out(c, nb->queued[i], port, family, mac);
	nb->n_queued = 0;
}

/* Every 100 ms: re-probe incomplete entries once a second, give up after
 * three probes (their queued packets are dropped as unresolved). */
void
hs_nb_timers(struct hs_wctx *c, uint64_t now)
{
	struct hs_neigh *dead[32];
	const void *key;
	void *data;
	uint32_t it = 0, n_dead = 0;
	int32_t pos;

	if (now < c->nb_next_tsc)
		return;
	c->nb_next_tsc = now + c->tsc_hz / 10;
	while ((pos = rte_hash_iterate(c->nb_hash, &key, &data, &it)) >= 0) {
		struct hs_neigh *nb = &c->nb[pos];

		if (nb->state != HS_NB_INCOMPLETE || now < nb->probe_tsc + c->tsc_hz)
			continue;
		if (nb->probes < 3) {
			nb_probe(c, nb, now);
			continue;
		}
		c->w->service_stage.stats.drops[EP_DROP_NEIGHBOR_UNRESOLVED] += nb->n_queued;
		if (nb->n_queued != 0)
			rte_pktmbuf_free_bulk(nb->queued, nb->n_queued);
		nb->n_queued = 0;
		/* Removed after the walk: deleting under rte_hash_iterate may
		 * move entries it has yet to visit.  The rest go next time. */
		if (n_dead < RTE_DIM(dead))
			dead[n_dead++] = nb;
	}
	for (uint32_t i = 0; i < n_dead; i++)
		nb_remove(c, dead[i]);
}
