/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `udp`: from a whole UDP datagram to a socket's receive ring.
 *
 *   length     8 <= UDP length <= IP payload (trailing bytes cut, RFC 768)
 *   policy     one rte_acl classification for the burst (hs_policy.c):
 *              drop, rate (rte_meter srTCM per rule), redirect to a central
 *              node (forwarded, not terminated), priority for the ring
 *   lookup     connected 5-tuple, then (address, port), then (any, port)
 *   no socket  checksum checked, then ICMP port unreachable (rate limited)
 *   hand-off   the socket belongs to another worker: its hand-off ring
 *   deliver    copy + checksum in one pass into the ring's data area
 *              (hs_csum.h); a bad checksum is found while copying and the
 *              descriptor is simply not published
 *
 * Wake-ups: after the burst, one fence, then for every socket that got a
 * datagram: if the application's reader cleared rx_signalled, set it and
 * write one byte to the socket's descriptor (send(2), non-blocking).  A
 * reader that keeps up costs one byte per burst; one that is busy costs
 * nothing (the flag is already set).
 */
#include <errno.h>
#include <sys/socket.h>

#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ep_csum.h"
#include "ep_rcu.h"
#include "hoststack.h"
#include "hs_csum.h"
#include "hs_ring.h"

/* Addresses and ports of a received datagram (network order). */
struct dgram {
	uint8_t family;
	uint8_t tos;
	struct hs_ip src, dst;
	uint16_t sport, dport;
	uint16_t cksum;
	uint32_t ulen;          /* UDP length: header + payload */
	uint32_t l4;            /* offset of the UDP header */
};

static __rte_always_inline int
dgram_of(const struct rte_mbuf *m, struct dgram *g)
{
	const struct ep_meta *md = ep_meta((struct rte_mbuf *)(uintptr_t)m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_udp_hdr *u;
	uint32_t avail;

	if (!(md->flags & EP_META_F_HAS_L4))
		return EP_DROP_L4_TRUNCATED;
	memset(g, 0, sizeof(*g));
	g->l4 = md->l4_off;
	u = (const struct rte_udp_hdr *)(p + md->l4_off);
	avail = (uint32_t)md->l3_off + md->l3_len - md->l4_off;
	g->ulen = rte_be_to_cpu_16(u->dgram_len);
	if (g->ulen < 8 || g->ulen > avail)
		return EP_DROP_HS_UDP_BAD_LENGTH;
	g->sport = u->src_port;
	g->dport = u->dst_port;
	g->cksum = u->dgram_cksum;
	if (md->l3_type == EP_L3_IPV4) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + md->l3_off);

		g->family = 4;
		g->tos = ip->type_of_service;
		memcpy(g->src.b, &ip->src_addr, 4);
		memcpy(g->dst.b, &ip->dst_addr, 4);
	} else {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + md->l3_off);

		g->family = 6;
		g->tos = (uint8_t)(rte_be_to_cpu_32(ip->vtc_flow) >> 20);
		memcpy(g->src.b, ip->src_addr, 16);
		memcpy(g->dst.b, ip->dst_addr, 16);
		if (g->cksum == 0)
			return EP_DROP_HS_UDP_BAD_CHECKSUM;   /* mandatory in IPv6 (RFC 8200 8.1) */
	}
	return 0;
}

/* The pseudo-header and UDP header words of the checksum. */
static uint32_t
pseudo_sum(const struct dgram *g, const struct rte_mbuf *m)
{
	uint32_t len_be = rte_cpu_to_be_32(g->ulen), proto_be = rte_cpu_to_be_32(IPPROTO_UDP);
	uint32_t sum = __rte_raw_cksum(g->src.b, hs_ip_len(g->family), 0);

	sum = __rte_raw_cksum(g->dst.b, hs_ip_len(g->family), sum);
	if (g->family == 4) {
		uint16_t w[2] = { rte_cpu_to_be_16(IPPROTO_UDP), rte_cpu_to_be_16((uint16_t)g->ulen) };

		sum = __rte_raw_cksum(w, 4, sum);
	} else {
		sum = __rte_raw_cksum(&len_be, 4, sum);
		sum = __rte_raw_cksum(&proto_be, 4, sum);
	}
	return __rte_raw_cksum(rte_pktmbuf_mtod_offset(m, const void *, g->l4), 8, sum);
}

static bool
cksum_ok(const struct dgram *g, const struct rte_mbuf *m)
{
	uint16_t payload_sum;

	if (g->cksum == 0)
		return true;    /* IPv4 without a checksum (dgram_of refused it for IPv6) */
	if (rte_raw_cksum_mbuf(m, g->l4 + 8, g->ulen - 8, &payload_sum) < 0)
		return false;
	return hs_csum_fold(hs_csum_add(pseudo_sum(g, m), payload_sum)) == 0xffff;
}

/* ---- delivery ---- */

int
hs_deliver(struct hs_wctx *c, struct hs_sock *k, struct rte_mbuf *m, uint8_t prio)
{
	struct hs_sock_stats *st = &k->st;
	struct dgram g;
	uint32_t cons, queued, len, limit, tail, off, nhead, sum, done, rcv;
	const struct rte_mbuf *seg;
	uint32_t seg_off;
	struct hs_desc *d;
	bool odd = false;
	int rc = dgram_of(m, &g);

	if (rc != 0)
		return rc;
	len = g.ulen - 8;
	cons = hs_load_acq(&k->shm->rx_cons.v);
	if (!hs_cons_valid(cons, k->rx_cons_seen, k->rx_prod)) {
		/* The application moved its index outside what was published:
		 * it wrote over its own page.  Stop delivering to it. */
		k->broken = true;
		return EP_DROP_HS_APP_RING_CORRUPT;
	}
	k->rx_cons_seen = cons;
	queued = k->rx_prod - cons;
	if (queued >= k->rx_slots) {
		st->rx_ring_full++;
		return EP_DROP_HS_RING_FULL;
	}
	/* SO_RCVBUF as Linux counts it: the value set, doubled; never more
	 * than the area. */
	rcv = __atomic_load_n(&k->shm->opt_rcvbuf, __ATOMIC_RELAXED);
	limit = rcv == 0 || rcv > k->rx_bytes / 2 ? k->rx_bytes : RTE_MAX(rcv * 2, 2048u);
	tail = queued != 0 ? k->rx_shadow_off[cons & (k->rx_slots - 1)] : 0;
	if (prio < c->s->p.shed_priority && queued != 0) {
		uint32_t used = k->rx_head >= tail ? k->rx_head - tail : k->rx_bytes - tail + k->rx_head;

		if ((uint64_t)queued * 100 > (uint64_t)k->rx_slots * c->s->p.shed_watermark_pct ||
		    (uint64_t)used * 100 > (uint64_t)limit * c->s->p.shed_watermark_pct) {
			st->rx_low_prio_shed++;
			return EP_DROP_HS_LOW_PRIO_SHED;
		}
	}
	if (hs_data_alloc(k->rx_bytes, limit, k->rx_head, tail, queued == 0, len, &off, &nhead) < 0) {
		st->rx_ring_full++;
		return EP_DROP_HS_RING_FULL;
	}
	/* Copy the payload out of the (possibly chained) mbuf, summing as we go. */
	sum = 0;
	done = 0;
	seg = m;
	seg_off = g.l4 + 8;
	while (done < len && seg != NULL) {
		uint32_t k_len;

		if (seg_off >= seg->data_len) {
			seg_off -= seg->data_len;
			seg = seg->next;
			continue;
		}
		k_len = RTE_MIN(seg->data_len - seg_off, len - done);
		if ((k_len & 1) != 0 && done + k_len < len)
			odd = true;
		sum = hs_csum_copy(k->rx_data + off + done,
				   rte_pktmbuf_mtod_offset(seg, const uint8_t *, seg_off), k_len, sum);
		done += k_len;
		seg_off += k_len;
	}
	if (done != len)
		return EP_DROP_HS_UDP_BAD_LENGTH;
	if (g.cksum != 0) {
		bool good = odd ? cksum_ok(&g, m) :
			    hs_csum_fold(hs_csum_add(pseudo_sum(&g, m), sum)) == 0xffff;

		if (!good)
			return EP_DROP_HS_UDP_BAD_CHECKSUM;
	}
	d = &k->rx_desc[k->rx_prod & (k->rx_slots - 1)];
	d->off = off;
	d->len = len;
	memcpy(d->addr, g.src.b, 16);
	memcpy(d->local, g.dst.b, 16);
	d->port = g.sport;
	d->family = g.family;
	d->tos = g.tos;
	d->flags = 0;
	k->rx_shadow_off[k->rx_prod & (k->rx_slots - 1)] = off;
	k->rx_head = nhead;
	k->rx_prod++;
	hs_store_rel(&k->shm->rx_prod.v, k->rx_prod);
	st->rx_dgrams++;
	st->rx_bytes += len;
	hs_touch(c, k);
	return 0;
}

void
hs_signal_touched(struct hs_wctx *c)
{
	static const uint8_t byte = 1;

	if (c->n_touched == 0)
		return;
	/* Producer indices are published; the readers' flags are read after. */
	hs_fence();
	for (uint32_t i = 0; i < c->n_touched; i++) {
		struct hs_sock *k = hs_sock_get(c->s, c->touched[i]);

		if (k == NULL || __atomic_load_n(&k->shm->rx_signalled.v, __ATOMIC_RELAXED) != 0)
			continue;
		if (__atomic_exchange_n(&k->shm->rx_signalled.v, 1, __ATOMIC_ACQ_REL) != 0)
			continue;
		/* Never blocks: non-blocking, and at most one byte is outstanding
		 * per cleared flag.  EAGAIN means the reader's buffer is full of
		 * bytes it did not drain, which wakes it just as well. */
		if (send(k->wake_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			k->st.wakeups++;
	}
	c->n_touched = 0;
	c->touch_seq++;
}

/* ---- lookup ---- */

static struct hs_sock *
lookup(struct hs_wctx *c, const struct dgram *g)
{
	struct hs_key_conn ck;
	struct hs_key_bind bk;
	struct hs_group *grp;
	void *v;

	memset(&ck, 0, sizeof(ck));
	ck.family = g->family;
	ck.lport = g->dport;
	ck.rport = g->sport;
	memcpy(ck.laddr.b, g->dst.b, hs_ip_len(g->family));
	memcpy(ck.raddr.b, g->src.b, hs_ip_len(g->family));
	if (rte_hash_lookup_data(c->s->conn, &ck, &v) >= 0)
		return hs_sock_get(c->s, (uint32_t)(uintptr_t)v);
	memset(&bk, 0, sizeof(bk));
	bk.family = g->family;
	bk.port = g->dport;
	bk.addr = ck.laddr;
	if (rte_hash_lookup_data(c->s->bind, &bk, (void **)&grp) < 0) {
		memset(&bk.addr, 0, sizeof(bk.addr));
		if (rte_hash_lookup_data(c->s->bind, &bk, (void **)&grp) < 0)
			return NULL;
	}
	if (grp->n == 0)
		return NULL;
	if (grp->reuseport) {
		/* SO_REUSEPORT: one flow stays on one socket. */
		uint32_t h = rte_hash_crc(&ck, sizeof(ck), 0);

		return hs_sock_get(c->s, grp->ids[h % grp->n]);
	}
	return hs_sock_get(c->s, grp->ids[grp->n - 1]);
}

/* ---- redirect ---- */

/* Forward the datagram, unchanged but for the TTL / hop limit, to the
 * central node: the edge only routes it (policy-based next hop). */
static uint16_t
redirect(struct hs_wctx *c, struct rte_mbuf *m, const struct hs_policy_rule *r)
{
	const struct ep_meta *md = ep_meta(m);
	struct hs_nexthop nh;
	uint8_t *l3;

	if (!hs_route_lookup(c->rt, r->redirect_family, &r->redirect_to, &nh) || nh.local)
		return EP_NEXT_DROP(EP_DROP_NO_ROUTE);
	if (rte_pktmbuf_adj(m, md->l3_off) == NULL)
		return EP_NEXT_DROP(EP_DROP_HS_UDP_BAD_LENGTH);
	l3 = rte_pktmbuf_mtod(m, uint8_t *);
	if (md->l3_type == EP_L3_IPV4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		if (ip->time_to_live <= 1)
			return EP_NEXT_DROP(EP_DROP_IPV4_TTL_EXPIRED);
		ep_ipv4_ttl_dec(ip);
		/* Reassembled here; the next link fragments again if it must. */
		ip->fragment_offset = 0;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)l3;

		if (ip->hop_limits <= 1)
			return EP_NEXT_DROP(EP_DROP_IPV6_HOP_LIMIT_EXPIRED);
		ip->hop_limits--;
	}
	/* Trailing Ethernet padding would be taken for payload. */
	if (rte_pktmbuf_pkt_len(m) > md->l3_len)
		rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - md->l3_len));
	c->st.redirected++;
	hs_output_nh(c, m, &nh);
	return EP_NEXT_CONSUMED;
}

/* ---- the stage ---- */

uint16_t
hs_udp_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct hs_wctx *c = ctx;
	const struct hs_policy *pol = ep_rcu_read(&c->s->policy);
	struct dgram g[EP_BURST_MAX];
	struct hs_flow fl[EP_BURST_MAX];
	uint32_t res[EP_BURST_MAX];
	struct rte_mbuf *done[EP_BURST_MAX];
	uint16_t out = 0, n_done = 0;
	uint64_t now = c->w != NULL ? c->w->stage_tsc : rte_rdtsc();

	for (uint16_t i = 0; i < n; i++) {
		int rc = dgram_of(pkts[i], &g[i]);

		res[i] = 0;
		if (rc != 0) {
			next[i] = EP_NEXT_DROP(rc);
			continue;
		}
		fl[i] = (struct hs_flow){ .family = g[i].family, .proto = IPPROTO_UDP,
					  .dscp = g[i].tos >> 2, .remote = g[i].src,
					  .local = g[i].dst, .rport = rte_be_to_cpu_16(g[i].sport),
					  .lport = rte_be_to_cpu_16(g[i].dport) };
	}
	if (pol != NULL && pol->n != 0)
		hs_policy_classify(pol, HS_DIR_RX, fl, n, res);
	for (uint16_t i = 0; i < n; i++) {
		const struct hs_policy_rule *r;
		struct hs_sock *k;
		uint8_t prio = c->s->p.default_priority;
		int rc;

		if (next[i] != EP_NEXT_CONTINUE) {
			out++;
			continue;
		}
		r = res[i] != 0 ? &pol->rules[res[i] - 1] : NULL;
		if (r != NULL) {
			prio = r->priority;
			if (r->drop) {
				next[i] = EP_NEXT_DROP(EP_DROP_HS_POLICY_DROP);
				out++;
				continue;
			}
			if (!hs_policy_meter(c, r, HS_DIR_RX, g[i].ulen - 8, now)) {
				next[i] = EP_NEXT_DROP(EP_DROP_HS_POLICY_RATE);
				out++;
				continue;
			}
			if (r->redirect) {
				next[i] = redirect(c, pkts[i], r);
				out++;
				continue;
			}
		}
		k = lookup(c, &g[i]);
		if (k == NULL) {
			if (!cksum_ok(&g[i], pkts[i])) {
				next[i] = EP_NEXT_DROP(EP_DROP_HS_UDP_BAD_CHECKSUM);
			} else {
				hs_icmp_unreach(c, pkts[i]);
				next[i] = EP_NEXT_DROP(EP_DROP_HS_NO_SOCKET);
			}
			out++;
			continue;
		}
		if (k->worker != c->idx) {
			struct ep_meta *md = ep_meta(pkts[i]);

			md->user = (uint64_t)k->gen << 32 | k->id;
			md->nexthop = prio;
			if (rte_ring_mp_enqueue(c->s->w[k->worker]->inbox, pkts[i]) != 0) {
				next[i] = EP_NEXT_DROP(EP_DROP_HS_HANDOFF_FULL);
			} else {
				next[i] = EP_NEXT_CONSUMED;
				c->st.handoff_out++;
			}
			out++;
			continue;
		}
		rc = hs_deliver(c, k, pkts[i], prio);
		if (rc != 0) {
			next[i] = EP_NEXT_DROP(rc);
		} else {
			next[i] = EP_NEXT_CONSUMED;
			done[n_done++] = pkts[i];
		}
		out++;
	}
	if (n_done != 0)
		rte_pktmbuf_free_bulk(done, n_done);
	hs_signal_touched(c);
	hs_flush_ports(c);
	return out;
}
