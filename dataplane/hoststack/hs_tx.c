/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's service hook: everything that is not driven by a received
 * packet, run once per loop iteration after rx (timed as "service").
 *
 *   hand-off ring   datagrams another worker received for our sockets
 *   doorbells       app region ring[worker]: ids of sockets that went from
 *                   idle to "datagrams to send" -> the active lists
 *   active lists    one per priority (policy), highest first, HS_TX_BUDGET
 *                   datagrams per socket per round, at most SERVICE_BUDGET
 *                   per call so received traffic is never starved
 *   tx ring         descriptor copied out once, checked against the area;
 *                   payload copied into an mbuf with the UDP checksum
 *                   computed in the same pass (hs_csum.h); IPv4/IPv6 +
 *                   UDP headers; fragments when longer than the port's MTU
 *                   (rte_ip_frag); neighbour (hs_route.c); port batch
 *   timers          neighbour probes, reassembly expiry (every 10 ms)
 *
 * A socket leaves its active list when its tx ring is empty: the worker
 * clears tx_pending, fences, and looks once more (the application sets
 * tx_pending after publishing, so one of the two sees the other).
 *
 * An IPv4 datagram longer than the port's MTU is cut into fragments while
 * it is copied out of the socket ring (build_frags4): building it whole
 * and handing it to rte_ipv4_fragment_copy_nonseg_packet copies every
 * byte twice and takes a third mbuf per 1860-byte datagram, on the worker
 * that bounds the send path (docs/benchmarks/udp-termination-history.md,
 * "S2 against S1"):
 * 1,200 cycles per datagram against 2,200-3,200 (test_hs_cycles).
 * rte_ip_frag stays the fragmenter of everything else: IPv6 (the fragment
 * header), hairpinned and forwarded datagrams (built whole already), and
 * fragments that would not fit one mbuf.
 */
#define ALLOW_EXPERIMENTAL_API 1   /* rte_ip_frag_table_del_expired_entries, rte_ipv4_fragment_copy_nonseg_packet */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_ip_frag.h>
#include <rte_udp.h>

#include "ep_rcu.h"
#include "hoststack.h"
#include "hs_csum.h"
#include "hs_ring.h"

#define SERVICE_BUDGET 256      /* datagrams sent per service call */
#define MAX_FRAGS      HS_MAX_FRAGS

static void activate(struct hs_wctx *c, struct hs_sock *k);

/* ---- messages from the control thread (run between bursts) ---- */

struct app_msg {
	struct hs_app *a;
	bool add;
};

static void
app_msg_fn(struct ep_worker *w, void *arg)
{
	struct hs_wctx *c = w->pipeline_ctx;
	const struct app_msg *m = arg;

	if (m->add) {
		if (c->n_apps == (int)RTE_DIM(c->apps))
			return;
		/* Pointers and sizes from the dp's own record, never from the
		 * application-writable header. */
		c->apps[c->n_apps].shm = m->a->shm;
		c->apps[c->n_apps].n_slots = m->a->db_slots;
		c->apps[c->n_apps].slots = (uint32_t *)((uint8_t *)m->a->shm +
			sizeof(struct hs_app_shm)) + (uint64_t)c->idx * m->a->db_slots;
		c->apps[c->n_apps].cons = 0;
		c->apps[c->n_apps].app_id = m->a->id;
		c->n_apps++;
		return;
	}
	for (int i = 0; i < c->n_apps; i++)
		if (c->apps[i].app_id == m->a->id) {
			/* Doorbells the application pushed before it went (a child
			 * that sends and exits): their sockets outlive it. */
			uint32_t ids[64];
			int n;

			while ((n = hs_db_pop(&c->apps[i].shm->ring[c->idx], c->apps[i].slots,
					      c->apps[i].n_slots, &c->apps[i].cons, ids,
					      RTE_DIM(ids))) > 0)
				for (int j = 0; j < n; j++) {
					struct hs_sock *k = hs_sock_get(c->s, ids[j]);

					if (k != NULL && k->worker == c->idx)
						activate(c, k);
				}
			c->apps[i] = c->apps[--c->n_apps];
			return;
		}
}

static void
each_worker(struct hs_stack *s, void (*fn)(struct ep_worker *, void *), void *arg)
{
	struct ep_err err;

	for (int i = 0; i < s->n_w; i++) {
		/* Wake it first: a sleeping worker answers at its next loop. */
		uint64_t one = 1;

		if (s->kick_fd[i] >= 0 && write(s->kick_fd[i], &one, sizeof(one)) < 0) {
			/* a full eventfd counter is already a wake-up */
		}
		if (s->w[i]->w != NULL)
			ep_worker_call(s->w[i]->w, fn, arg, 2000, &err);
		else
			fn(NULL, arg);
	}
}

void hs_worker_add_app(struct hs_stack *s, struct hs_app *a);
void hs_worker_del_app(struct hs_stack *s, struct hs_app *a);
void hs_worker_forget(struct hs_stack *s, struct hs_sock *k);
void hs_worker_sync(struct hs_stack *s, struct hs_sock *k);

void
hs_worker_add_app(struct hs_stack *s, struct hs_app *a)
{
	struct app_msg m = { a, true };

	each_worker(s, app_msg_fn, &m);
}

void
hs_worker_del_app(struct hs_stack *s, struct hs_app *a)
{
	struct app_msg m = { a, false };

	each_worker(s, app_msg_fn, &m);
}

static void
active_remove(struct hs_wctx *c, struct hs_sock *k)
{
	for (int p = 0; p < 8; p++)
		for (uint32_t i = 0; i < c->n_active[p]; i++)
			if (c->active[p][i] == k->id) {
				c->active[p][i] = c->active[p][--c->n_active[p]];
				k->active = false;
				return;
			}
}

struct sock_msg {
	struct hs_stack *s;
	struct hs_sock *k;
};

static void
forget_fn(struct ep_worker *w, void *arg)
{
	struct sock_msg *m = arg;
	struct hs_wctx *c = m->s->w[m->k->worker];

	active_remove(c, m->k);
}

static void
sync_fn(struct ep_worker *w, void *arg)
{
	struct sock_msg *m = arg;

	m->k->wv_local = m->k->local;
	m->k->wv_peer = m->k->peer;
	m->k->wv_state = m->k->state;
	m->k->rt_gen = 0;
}

static void
call_owner(struct hs_stack *s, struct hs_sock *k, void (*fn)(struct ep_worker *, void *))
{
	struct sock_msg m = { s, k };
	struct hs_wctx *c = s->w[k->worker];
	struct ep_err err;
	uint64_t one = 1;

	if (c == NULL || c->w == NULL) {
		fn(NULL, &m);
		return;
	}
	if (write(s->kick_fd[k->worker], &one, sizeof(one)) < 0) {
		/* already pending */
	}
	ep_worker_call(c->w, fn, &m, 2000, &err);
}

void
hs_worker_forget(struct hs_stack *s, struct hs_sock *k)
{
	call_owner(s, k, forget_fn);
}

/* The worker's copy of a socket's addresses changes between bursts only,
 * so a datagram is never built from half an old and half a new peer. */
void
hs_worker_sync(struct hs_stack *s, struct hs_sock *k)
{
	call_owner(s, k, sync_fn);
}

/* ---- output ---- */

static void
hairpin(struct hs_wctx *c, struct rte_mbuf *m, uint16_t port, uint8_t family)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eh));

	if (eh == NULL || c->n_hairpin == EP_BURST_MAX) {
		c->w->service_stage.stats.drops[EP_DROP_HS_ALLOC_FAILED]++;
		rte_pktmbuf_free(m);
		return;
	}
	rte_ether_addr_copy(&c->rt->mac[port], &eh->dst_addr);
	rte_ether_addr_copy(&c->rt->mac[port], &eh->src_addr);
	eh->ether_type = family == 4 ? RTE_BE16(RTE_ETHER_TYPE_IPV4) : RTE_BE16(RTE_ETHER_TYPE_IPV6);
	ep_meta(m)->in_port = port;
	c->hairpin[c->n_hairpin++] = m;
	c->st.hairpin++;
}

/* Fragment an IP packet (data at L3) longer than @p mtu.  The IPv6
 * fragment header's identification is set here: rte_ipv6_fragment_packet
 * leaves it 0 for every datagram, and a receiver that sees two datagrams'
 * fragments interleave would join them. */
static int
fragment(struct hs_wctx *c, struct rte_mbuf *m, uint8_t family, uint16_t mtu,
	 struct rte_mempool *pool, struct rte_mbuf **out)
{
	int32_t n;

	if (family == 4) {
		if (m->nb_segs == 1)
			n = rte_ipv4_fragment_copy_nonseg_packet(m, out, MAX_FRAGS, mtu, pool);
		else
			n = rte_ipv4_fragment_packet(m, out, MAX_FRAGS, mtu, pool,
						     c->s->indirect_pool);
		/* rte_ip_frag leaves the header checksum to tx offload, which
		 * virtual ports do not have. */
		for (int32_t i = 0; i < n; i++) {
			struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(out[i], struct rte_ipv4_hdr *);

			ip->hdr_checksum = 0;
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
	} else {
		n = rte_ipv6_fragment_packet(m, out, MAX_FRAGS, mtu, pool, c->s->indirect_pool);
		if (n > 0) {
			uint32_t id = rte_cpu_to_be_32(++c->frag_id);

			for (int32_t i = 0; i < n; i++) {
				struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod(out[i], struct rte_ipv6_hdr *);
				struct rte_ipv6_fragment_ext *fh = (struct rte_ipv6_fragment_ext *)(ip + 1);

				if (ip->proto == IPPROTO_FRAGMENT)
					memcpy(&fh->id, &id, 4);
			}
		}
	}
	return n;
}

void
hs_output_ip(struct hs_wctx *c, struct rte_mbuf *m, uint8_t family, const struct hs_ip *dst)
{
	struct hs_nexthop nh;

	if (!hs_route_lookup(c->rt, family, dst, &nh)) {
		c->w->service_stage.stats.drops[EP_DROP_NO_ROUTE]++;
		rte_pktmbuf_free(m);
		return;
	}
	hs_output_nh(c, m, &nh);
}

void
hs_output_nh(struct hs_wctx *c, struct rte_mbuf *m, const struct hs_nexthop *nh)
{
	struct rte_mbuf *frags[MAX_FRAGS];
	uint16_t mtu = c->rt->mtu[nh->port];
	int32_t n;

	if (nh->local) {
		hairpin(c, m, nh->port, nh->family);
		return;
	}
	if (rte_pktmbuf_pkt_len(m) <= mtu) {
		hs_nb_output(c, m, nh->port, nh->family, &nh->via);
		return;
	}
	n = fragment(c, m, nh->family, mtu, c->s->e->ports[nh->port].pool, frags);
	rte_pktmbuf_free(m);
	if (n < 0) {
		c->w->service_stage.stats.drops[EP_DROP_HS_ALLOC_FAILED]++;
		return;
	}
	c->st.fragments_out += (uint64_t)n;
	for (int32_t i = 0; i < n; i++)
		hs_nb_output(c, frags[i], nh->port, nh->family, &nh->via);
}

/* ---- building a datagram ---- */

/* An IPv4 header without options for a UDP datagram or a fragment of one
 * (@p frag: offset in 8-byte units and flags, host order; @p id_be: the
 * identification in network order), its checksum computed. */
static inline void
put_ipv4(struct rte_ipv4_hdr *ip, uint8_t tos, uint16_t total_len, uint16_t id_be, uint16_t frag,
	 const struct hs_ip *src, const struct hs_ip *dst)
{
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = tos;
	ip->total_length = rte_cpu_to_be_16(total_len);
	ip->packet_id = id_be;
	ip->fragment_offset = rte_cpu_to_be_16(frag);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	memcpy(&ip->src_addr, src->b, 4);
	memcpy(&ip->dst_addr, dst->b, 4);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/* The UDP checksum from @p sum (payload and pseudo-header, unfolded) and
 * the UDP header itself, whose checksum field is 0. */
static inline void
put_udp_cksum(struct rte_udp_hdr *udp, uint32_t sum)
{
	uint16_t ck = (uint16_t)~hs_csum_fold(hs_csum_add(sum, __rte_raw_cksum(udp, 8, 0)));

	/* RFC 768: a computed 0 is sent as all ones (0 means "no checksum"). */
	udp->dgram_cksum = ck == 0 ? 0xffff : ck;
}

/* An IP + UDP packet carrying @p len bytes from @p payload, the UDP
 * checksum computed while copying.  Data starts at L3. */
static struct rte_mbuf *
build_dgram(struct hs_wctx *c, struct rte_mempool *pool, uint8_t family,
	    const struct hs_ip *src, const struct hs_ip *dst, uint16_t sport, uint16_t dport,
	    uint8_t tos, const uint8_t *payload, uint32_t len)
{
	uint32_t l3 = family == 4 ? sizeof(struct rte_ipv4_hdr) : sizeof(struct rte_ipv6_hdr);
	uint32_t room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *seg;
	struct rte_udp_hdr *udp;
	uint32_t sum = 0, done, first;
	uint8_t *p;

	if (m == NULL)
		return NULL;
	/* Even pieces keep the checksum's word alignment across segments. */
	room &= ~1u;
	first = RTE_MIN(len, room - l3 - 8);
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(l3 + 8 + first));
	udp = (struct rte_udp_hdr *)(p + l3);
	sum = hs_csum_copy(udp + 1, payload, first, 0);
	done = first;
	seg = m;
	while (done < len) {
		struct rte_mbuf *n = rte_pktmbuf_alloc(pool);
		uint32_t k = RTE_MIN(len - done, room);

		if (n == NULL) {
			rte_pktmbuf_free(m);
			return NULL;
		}
		sum = hs_csum_copy(rte_pktmbuf_append(n, (uint16_t)k), payload + done, k, sum);
		seg->next = n;
		seg = n;
		m->nb_segs++;
		m->pkt_len += k;
		done += k;
	}
	udp->src_port = sport;
	udp->dst_port = dport;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len + 8));
	udp->dgram_cksum = 0;
	if (family == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)p;

		put_ipv4(ip, tos, (uint16_t)(l3 + 8 + len), rte_cpu_to_be_16((uint16_t)++c->frag_id), 0,
			 src, dst);
		sum = hs_csum_add(sum, rte_ipv4_phdr_cksum(ip, 0));
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)p;

		ip->vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)tos << 20);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(8 + len));
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, src->b, 16);
		memcpy(ip->dst_addr, dst->b, 16);
		sum = hs_csum_add(sum, rte_ipv6_phdr_cksum(ip, 0));
	}
	put_udp_cksum(udp, sum);
	return m;
}

/* An IPv4 + UDP datagram of @p len payload bytes longer than @p mtu, cut
 * into fragments while it is copied out of the socket ring (RFC 791: one
 * identification, offsets in 8-byte units, MF on all but the last), the
 * UDP checksum summed in the same pass (every piece but the last has a
 * length that is a multiple of 8, so the 16-bit words stay aligned) and
 * written into the first fragment at the end.  Data starts at L3.
 * Returns the number of fragments in @p out, -1 without mbufs, 0 when the
 * datagram is not one this cuts (rte_ip_frag's path then). */
static int
build_frags4(struct hs_wctx *c, struct rte_mempool *pool, uint16_t mtu, const struct hs_ip *src,
	     const struct hs_ip *dst, uint16_t sport, uint16_t dport, uint8_t tos,
	     const uint8_t *payload, uint32_t len, struct rte_mbuf **out)
{
	const uint32_t l3 = sizeof(struct rte_ipv4_hdr);
	uint32_t room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	uint32_t per = mtu > l3 ? (mtu - l3) & ~7u : 0;  /* IP payload per fragment */
	uint32_t total = 8 + len, n, sum = 0, done = 0;
	struct rte_udp_hdr *udp = NULL;
	uint16_t id;
	struct {
		uint8_t src[4], dst[4];
		uint8_t zero, proto;
		uint16_t len;
	} __rte_packed ph;

	if (per < 16 || l3 + per > room)
		return 0;
	n = (total + per - 1) / per;
	if (n < 2 || n > MAX_FRAGS)
		return 0;
	if (rte_pktmbuf_alloc_bulk(pool, out, n) != 0)
		return -1;
	id = rte_cpu_to_be_16((uint16_t)++c->frag_id);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t at = i * per, plen = RTE_MIN(per, total - at), k = plen;
		uint8_t *p = (uint8_t *)rte_pktmbuf_append(out[i], (uint16_t)(l3 + plen));
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)p;
		uint8_t *data = p + l3;

		if (i == 0) {
			udp = (struct rte_udp_hdr *)data;
			data += 8;
			k -= 8;
		}
		sum = hs_csum_copy(data, payload + done, k, sum);
		done += k;
		put_ipv4(ip, tos, (uint16_t)(l3 + plen), id,
			 (uint16_t)(at / 8) | (i + 1 < n ? RTE_IPV4_HDR_MF_FLAG : 0), src, dst);
	}
	udp->src_port = sport;
	udp->dst_port = dport;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)total);
	udp->dgram_cksum = 0;
	/* The pseudo-header is the whole datagram's (RFC 768), not a fragment's. */
	memcpy(ph.src, src->b, 4);
	memcpy(ph.dst, dst->b, 4);
	ph.zero = 0;
	ph.proto = IPPROTO_UDP;
	ph.len = udp->dgram_len;
	put_udp_cksum(udp, hs_csum_add(sum, __rte_raw_cksum(&ph, sizeof(ph), 0)));
	return (int)n;
}

/* The destination of descriptor @p d as the wire sees it. */
static bool
desc_dest(const struct hs_sock *k, const struct hs_desc *d, uint8_t *fam, struct hs_ip *ip,
	  uint16_t *port)
{
	static const uint8_t v4m[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *a;
	uint8_t f;

	if (d->flags & HS_DESC_F_PEER) {
		a = d->addr;
		f = d->family;
		*port = d->port;
	} else {
		if (!(k->wv_state & HS_ST_CONNECTED))
			return false;
		a = k->wv_peer.addr;
		f = k->wv_peer.family;
		*port = k->wv_peer.port;
	}
	memset(ip, 0, sizeof(*ip));
	if (f == 4 && k->family == 4) {
		memcpy(ip->b, a, 4);
		*fam = 4;
	} else if (f == 6 && k->family == 6) {
		if (memcmp(a, v4m, 12) == 0) {
			if (k->v6only)
				return false;
			memcpy(ip->b, a + 12, 4);
			*fam = 4;
		} else {
			memcpy(ip->b, a, 16);
			*fam = 6;
		}
	} else {
		return false;
	}
	return *port != 0;
}

static void
sock_src(const struct hs_sock *k, uint8_t fam, struct hs_ip *src)
{
	memset(src, 0, sizeof(*src));
	if (k->wv_local.family == 4)
		memcpy(src->b, k->wv_local.addr, 4);
	else if (fam == 4)
		memcpy(src->b, k->wv_local.addr + 12, 4);
	else
		memcpy(src->b, k->wv_local.addr, 16);
}

/* Send up to @p budget datagrams of socket @p k; returns how many left
 * the ring (sent or dropped). */
static uint32_t
tx_socket(struct hs_wctx *c, struct hs_sock *k, uint32_t budget, uint64_t now)
{
	struct ep_stage_stats *ss = &c->w->service_stage.stats;
	uint32_t prod = hs_load_acq(&k->shm->tx_prod.v);
	int64_t avail = hs_ring_count(prod, k->tx_cons, k->tx_slots);
	const struct hs_policy *pol = ep_rcu_read(&c->s->policy);
	struct hs_desc d[HS_TX_BUDGET];
	struct hs_flow fl[HS_TX_BUDGET];
	uint32_t res[HS_TX_BUDGET], n, i;
	uint8_t fam[HS_TX_BUDGET], tos;
	struct hs_ip dst[HS_TX_BUDGET];
	uint16_t dport[HS_TX_BUDGET];
	bool ok[HS_TX_BUDGET];

	if (avail < 0) {
		/* An impossible producer index: the application wrote over its
		 * ring.  The socket is no longer served (hs-sockets shows it). */
		k->broken = true;
		ss->drops[EP_DROP_HS_TX_BAD_DESC]++;
		return 0;
	}
	n = RTE_MIN((uint32_t)avail, RTE_MIN(budget, (uint32_t)HS_TX_BUDGET));
	tos = (uint8_t)__atomic_load_n(&k->shm->opt_tos, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		struct hs_ip src;

		/* One copy out of shared memory, then only the copy is used. */
		memcpy(&d[i], &k->tx_desc[(k->tx_cons + i) & (k->tx_slots - 1)], sizeof(d[i]));
		ok[i] = hs_desc_in_area(d[i].off, d[i].len, k->tx_bytes) &&
			d[i].len <= (k->family == 4 ? HS_MAX_DGRAM : HS_MAX_DGRAM6) &&
			desc_dest(k, &d[i], &fam[i], &dst[i], &dport[i]);
		if (!ok[i]) {
			ss->drops[EP_DROP_HS_TX_BAD_DESC]++;
			k->st.tx_bad_desc++;
			continue;
		}
		sock_src(k, fam[i], &src);
		fl[i] = (struct hs_flow){ .family = fam[i], .proto = IPPROTO_UDP,
					  .dscp = tos >> 2, .remote = dst[i], .local = src,
					  .rport = rte_be_to_cpu_16(dport[i]),
					  .lport = rte_be_to_cpu_16(k->wv_local.port) };
	}
	memset(res, 0, sizeof(res[0]) * n);
	if (pol != NULL && pol->n != 0)
		hs_policy_classify(pol, HS_DIR_TX, fl, n, res);
	for (i = 0; i < n; i++) {
		const struct hs_policy_rule *r = res[i] ? &pol->rules[res[i] - 1] : NULL;
		struct hs_nexthop nh, *nhp = &nh;
		struct hs_ip src;
		struct rte_mbuf *m;

		if (!ok[i])
			continue;
		/* A connected socket keeps its route until the table changes. */
		if (!(d[i].flags & HS_DESC_F_PEER) && k->rt_gen == c->rt->gen) {
			nhp = &k->nh;
		} else if (!hs_route_lookup(c->rt, fam[i], &dst[i], &nh)) {
			ss->drops[EP_DROP_NO_ROUTE]++;
			k->st.tx_no_route++;
			continue;
		} else if (!(d[i].flags & HS_DESC_F_PEER)) {
			k->nh = nh;
			k->rt_gen = c->rt->gen;
		}
		/* Back-pressure: a port (or the hairpin) without room for this
		 * datagram's frames stops the ring here; the rest waits in it. */
		if (nhp->local ? c->n_hairpin == EP_BURST_MAX :
		    c->n_txq[nhp->port] + d[i].len / 1024u + 2 > HS_PORTQ)
			break;
		if (r != NULL) {
			k->prio = r->priority;
			if (r->drop || !hs_policy_meter(c, r, HS_DIR_TX, d[i].len, now)) {
				ss->drops[r->drop ? EP_DROP_HS_POLICY_DROP : EP_DROP_HS_POLICY_RATE]++;
				k->st.tx_policy_drop++;
				continue;
			}
		}
		sock_src(k, fam[i], &src);
		if (hs_ip_is_zero(fam[i], &src))
			src = nhp->src;
		if (fam[i] == 4 && !nhp->local && d[i].len + 28u > c->rt->mtu[nhp->port]) {
			struct rte_mbuf *fr[MAX_FRAGS];
			int nf = build_frags4(c, c->s->e->ports[nhp->port].pool,
					      c->rt->mtu[nhp->port], &src, &dst[i], k->wv_local.port,
					      dport[i], tos, k->tx_data + d[i].off, d[i].len, fr);

			if (nf < 0) {
				ss->drops[EP_DROP_HS_ALLOC_FAILED]++;
				continue;
			}
			if (nf > 0) {
				k->st.tx_dgrams++;
				k->st.tx_bytes += d[i].len;
				c->st.fragments_out += (uint64_t)nf;
				for (int j = 0; j < nf; j++)
					hs_nb_output(c, fr[j], nhp->port, 4, &nhp->via);
				continue;
			}
		}
		m = build_dgram(c, c->s->e->ports[nhp->port].pool, fam[i], &src, &dst[i],
				k->wv_local.port, dport[i], tos, k->tx_data + d[i].off, d[i].len);
		if (m == NULL) {
			ss->drops[EP_DROP_HS_ALLOC_FAILED]++;
			continue;
		}
		k->st.tx_dgrams++;
		k->st.tx_bytes += d[i].len;
		hs_output_nh(c, m, nhp);
	}
	n = i;
	/* Payloads are copied: the application may reuse the space. */
	k->tx_cons += n;
	hs_store_rel(&k->shm->tx_cons.v, k->tx_cons);
	return n;
}

static void
activate(struct hs_wctx *c, struct hs_sock *k)
{
	uint8_t p = k->prio & 7;

	if (k->active || k->broken || c->n_active[p] >= c->active_cap)
		return;
	c->active[p][c->n_active[p]++] = k->id;
	k->active = true;
}

static uint16_t
doorbells(struct hs_wctx *c)
{
	uint32_t ids[64];
	uint16_t got = 0;

	for (int a = 0; a < c->n_apps; a++) {
		struct hs_db_ring *r = &c->apps[a].shm->ring[c->idx];
		int n = hs_db_pop(r, c->apps[a].slots, c->apps[a].n_slots, &c->apps[a].cons, ids,
				  RTE_DIM(ids));

		if (n < 0) {
			/* Hostile producer index: resynchronise to it and walk
			 * every socket once, as for an overflow. */
			c->apps[a].cons = hs_load_acq(&r->prod.v);
			hs_store_rel(&r->cons.v, c->apps[a].cons);
			__atomic_store_n(&r->rescan.v, 1, __ATOMIC_RELAXED);
			n = 0;
		}
		for (int i = 0; i < n; i++) {
			struct hs_sock *k = hs_sock_get(c->s, ids[i]);

			if (k != NULL && k->worker == c->idx)
				activate(c, k);
		}
		got = (uint16_t)(got + n);
		c->st.doorbells += (uint64_t)n;
		if (__atomic_load_n(&r->rescan.v, __ATOMIC_RELAXED) != 0 &&
		    __atomic_exchange_n(&r->rescan.v, 0, __ATOMIC_ACQ_REL) != 0) {
			c->st.rescans++;
			for (uint32_t id = 0; id < c->s->p.max_sockets; id++) {
				struct hs_sock *k = hs_sock_get(c->s, id);

				if (k != NULL && k->worker == c->idx &&
				    hs_load_acq(&k->shm->tx_prod.v) != k->tx_cons)
					activate(c, k);
			}
		}
	}
	return got;
}

static uint16_t
tx_active(struct hs_wctx *c, uint64_t now)
{
	uint32_t budget = SERVICE_BUDGET, sent = 0;

	for (int p = 7; p >= 0 && budget != 0; p--) {
		for (uint32_t i = 0; i < c->n_active[p] && budget != 0; ) {
			struct hs_sock *k = hs_sock_get(c->s, c->active[p][i]);
			uint32_t n;

			if (k == NULL || k->broken || k->worker != c->idx) {
				if (k != NULL)
					k->active = false;
				c->active[p][i] = c->active[p][--c->n_active[p]];
				continue;
			}
			n = tx_socket(c, k, RTE_MIN(budget, (uint32_t)HS_TX_BUDGET), now);
			sent += n;
			budget -= n;
			if (hs_load_acq(&k->shm->tx_prod.v) != k->tx_cons) {
				if ((k->prio & 7) != p) {
					/* policy moved it to another priority */
					c->active[p][i] = c->active[p][--c->n_active[p]];
					k->active = false;
					activate(c, k);
					continue;
				}
				i++;
				continue;
			}
			/* Empty: leave the list, then look once more (Dekker with
			 * the application's publish-then-set tx_pending). */
			__atomic_store_n(&k->shm->tx_pending.v, 0, __ATOMIC_RELAXED);
			hs_fence();
			if (hs_load_acq(&k->shm->tx_prod.v) != k->tx_cons &&
			    __atomic_exchange_n(&k->shm->tx_pending.v, 1, __ATOMIC_ACQ_REL) == 0) {
				i++;
				continue;
			}
			c->active[p][i] = c->active[p][--c->n_active[p]];
			k->active = false;
		}
	}
	return (uint16_t)RTE_MIN(sent, (uint32_t)UINT16_MAX);
}

/* Datagrams other workers received for our sockets (mbuf, socket id and
 * generation in ep_meta.user, priority in nexthop). */
static uint16_t
inbox(struct hs_wctx *c)
{
	struct rte_mbuf *m[EP_BURST_MAX];
	unsigned int n = rte_ring_sc_dequeue_burst(c->inbox, (void **)m, EP_BURST_MAX, NULL);

	for (unsigned int i = 0; i < n; i++) {
		struct ep_meta *md = ep_meta(m[i]);
		struct hs_sock *k = hs_sock_get(c->s, (uint32_t)md->user);

		c->st.handoff_in++;
		if (k == NULL || k->gen != (uint32_t)(md->user >> 32) || k->worker != c->idx) {
			c->stage_udp->stats.drops[EP_DROP_HS_NO_SOCKET]++;
			rte_pktmbuf_free(m[i]);
			continue;
		}
		/* Delivered or dropped (counted), the payload is copied either way. */
		hs_deliver(c, k, m[i], (uint8_t)md->nexthop);
		rte_pktmbuf_free(m[i]);
	}
	return (uint16_t)n;
}

static void
run_hairpin(struct hs_wctx *c)
{
	/* Bounded: an ICMP error about a hairpinned datagram is hairpinned
	 * too, but never an error about an error. */
	for (int pass = 0; pass < 4 && c->n_hairpin != 0; pass++) {
		struct rte_mbuf *m[EP_BURST_MAX];
		uint16_t n = c->n_hairpin;

		memcpy(m, c->hairpin, sizeof(m[0]) * n);
		c->n_hairpin = 0;
		ep_worker_run_burst(c->w, m, n);
		ep_worker_flush_tx(c->w);
	}
}

uint16_t
hs_service(struct ep_worker *w)
{
	struct hs_wctx *c = w->pipeline_ctx;
	uint64_t now = w->stage_tsc;
	uint16_t moved = 0;

	c->rt = ep_rcu_read(&c->s->routes);
	moved += inbox(c);
	if (unlikely(c->timed_out)) {
		uint16_t db = doorbells(c);

		/* Work at hand right after a wait ran to its timeout: its
		 * wake-up was lost or never sent. */
		c->timed_out = false;
		c->st.late_rx += w->stats.rx_pkts != c->rx_at_wait;
		c->st.late_doorbell += db != 0;
		moved += db;
	} else {
		moved += doorbells(c);
	}
	moved += tx_active(c, now);
	hs_nb_timers(c, now);
	if (now >= c->reasm_next_tsc) {
		uint32_t before = c->dr.cnt;

		c->reasm_next_tsc = now + c->tsc_hz / 100;
		rte_ip_frag_table_del_expired_entries(c->frag, &c->dr, now);
		c->stage_reasm->stats.drops[EP_DROP_HS_REASM_TIMEOUT] += c->dr.cnt - before;
		rte_ip_frag_free_death_row(&c->dr, 0);
	}
	hs_flush_ports(c);
	hs_signal_touched(c);
	if (c->n_hairpin != 0) {
		run_hairpin(c);
		/* What the hairpin delivered (a datagram, an ICMP error's
		 * SO_ERROR) wakes its readers now, not after the worker's next
		 * wait: a worker that blocks would sleep on them. */
		hs_signal_touched(c);
	}
	if (moved != 0)
		c->last_busy_tsc = now;
	/* Frames a full port refused keep the worker polling. */
	for (uint16_t p = 0; p < c->s->e->n_ports; p++)
		moved = (uint16_t)(moved + (c->n_txq[p] != 0));
	return moved;
}

/*
 * Idle: block on the kick eventfd instead of sleeping blind, so an
 * application that pushes a doorbell wakes the worker at once.  The flag
 * goes up first, then the worker looks at its doorbell rings once more:
 * an application publishes its doorbell and then reads the flag, so
 * either the worker sees the doorbell or the application sees the flag
 * and kicks.  Frames on a link whose rx queues have sockets (net_af_xdp,
 * net_af_packet: ep_worker_rx_fds) wake it too; on memif they are found
 * by the timeout (the engine's adaptive pause, up to max_sleep_us).  A
 * control call (ep_worker_call) writes the engine's message eventfd, which
 * the wait watches too, so it is answered at once.
 *
 * Only a time-shared worker that a frame cannot wake (memif) yields for
 * spin_us after traffic (a real-time one would hold its CPU against the
 * applications): on a link with sockets the yielding thread would be one more
 * time-shared thread for the applications to queue behind (sockperf
 * ping-pong over AF_XDP, p50 141 against 42 us), where a blocked worker
 * costs one wake-up per hop, which the engine's `auto` makes prompt
 * (SCHED_FIFO 1, pipeline type's wait_covers_rx).  Whether it yields is
 * published in the worker page (`polls`): the preload library does not
 * busy-poll before a wait while a worker keeps its CPU that way, since on
 * shared cores the spinning application and the yielding worker take
 * turns and each delays the other (sockperf ping-pong over memif, p99
 * about five times the kernel's with both spinning, at par without).
 */
void
hs_wait(struct ep_worker *w, uint32_t us)
{
	struct hs_wctx *c = w->pipeline_ctx;
	struct hs_worker_shm *ws = &c->s->wshm[c->idx];
	struct pollfd pfds[1 + EP_MAX_RX + 1] = { { .fd = c->s->kick_fd[c->idx], .events = POLLIN } };
	struct pollfd *pfd = &pfds[0];
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	bool work = false;
	uint64_t v, now = rte_rdtsc();
	int n = 1 + ep_worker_rx_fds(w, pfds + 1, EP_MAX_RX);
	bool link_wakes = w->n_rx > 0 && n - 1 == w->n_rx;
	int msg = -1;            /* pfds[msg]: the engine's message eventfd (ep_worker_call) */
	bool rt = w->power != NULL && w->power->rt_applied != 0 && !w->power->rt.demoted;
	uint32_t polls;

	/* Shortly after traffic, give the CPU away without sleeping: a woken
	 * application runs at once, and the next packet of a request/response
	 * exchange finds the worker awake instead of a timer away. */
	if (w->stats.rx_pkts != c->last_rx_pkts) {
		c->last_rx_pkts = w->stats.rx_pkts;
		c->last_busy_tsc = now;
	}
	polls = !link_wakes && !rt && c->s->p.spin_us != 0;
	if (__atomic_load_n(&ws->polls.v, __ATOMIC_RELAXED) != polls)
		__atomic_store_n(&ws->polls.v, polls, __ATOMIC_RELAXED);
	if (polls && now - c->last_busy_tsc < c->tsc_hz / 1000000 * c->s->p.spin_us) {
		sched_yield();
		return;
	}

	__atomic_store_n(&ws->sleeping.v, 1, __ATOMIC_RELAXED);
	hs_fence();
	for (int a = 0; a < c->n_apps && !work; a++) {
		const struct hs_db_ring *r = &c->apps[a].shm->ring[c->idx];

		work = hs_load_acq(&r->prod.v) != c->apps[a].cons ||
		       __atomic_load_n(&r->rescan.v, __ATOMIC_RELAXED) != 0;
	}
	if (!work && rte_ring_empty(c->inbox) && rte_ring_empty(w->msgq)) {
		int rc;

		c->st.waits++;
		c->rx_at_wait = w->stats.rx_pkts;
		/* A control call (configuration, statistics) queued after the
		 * check above writes the message eventfd: it ends the wait
		 * instead of waiting out its timeout. */
		if (w->power != NULL && w->power->msg_fd >= 0) {
			msg = n++;
			pfds[msg] = (struct pollfd){ .fd = w->power->msg_fd, .events = POLLIN };
		}
		rc = ppoll(pfds, (nfds_t)n, &ts, NULL);
		if (rc > 0 && (pfd->revents & POLLIN) != 0)
			c->st.kicks_seen++;
		if (rc == 0) {
			c->st.wait_timeouts++;
			c->timed_out = true;
		}
	}
	__atomic_store_n(&ws->sleeping.v, 0, __ATOMIC_RELAXED);
	if (read(pfd->fd, &v, sizeof(v)) < 0) {
		/* nothing pending: EAGAIN */
	}
	if (msg >= 0 && (pfds[msg].revents & POLLIN) != 0 &&
	    read(pfds[msg].fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: the message loop runs after the wait anyway */
	}
}
