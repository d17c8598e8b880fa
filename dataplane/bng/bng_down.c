/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bng-downlink stages (core -> subscriber):
 *
 *   parse    Ethernet destination check, ep_parse with MPLS (core_encap =
 *            mpls on the way up): the label stack is walked to the IP header
 *   neigh    the core FIB's ARP/ND responder for the core port's addresses
 *            (and what it hears resolves the core next hops)
 *   lookup   per family, for each prefix length in use (longest first;
 *            usually one: /32, /56): keys of the packets still unresolved,
 *            hashed while built (bng_key_hash: two CRC32C on the key's
 *            words), one rte_hash_lookup_with_hash_bulk_data whose data
 *            names the record and the id (bng_dst_data: no load of
 *            subs[id] between); record pointer into ep_meta.user, the
 *            record's line 0 (and line 1 for IPv6) and the per-worker
 *            state prefetched
 *   rpf      the subscriber's reverse-path rule: a packet addressed to it
 *            whose source lies in its own ranges did not come from it
 *            through the core (reflection / spoofing): dropped.  A
 *            per-subscriber reverse-path ACL rule has exactly one candidate,
 *            the destination subscriber's, so it is the record's prefix set
 *            (ep_ip.h) checked on the record lookup found, instead of an
 *            rte_acl that would need a rebuild for every subscriber added.
 *            An IPv4 packet of a subscriber with one range reads only the
 *            record's line 0 (its copy of that range)
 *   encap    TTL - 1, the core header is replaced by the subscriber's
 *            template (dst MAC, access port MAC, tags, [PPPoE session,
 *            length = IP length + 2, PPP protocol]) in one data-offset
 *            move and one copy; before HQoS so the shaper counts the bytes
 *            that go on the access wire.  TTL expiry gets ICMP time
 *            exceeded back to the core; a packet over the access MTU (less
 *            8 bytes of PPPoE) fragmentation needed / packet too big, or,
 *            IPv4 without DF, fragments that go to the scheduler
 *   hqos     DSCP -> (traffic class, queue) from the map, then the path
 *            written per packet (ours: one 64-bit store of a per-DSCP
 *            word OR the pipe's id) and one ep_sched_enqueue for
 *            the burst (the QoS module's scheduler: ours, qos_hsched.c,
 *            or rte_sched): consumed, except what a full queue refuses
 *            (freed by the scheduler: counted as bng_hqos_queue_full, not
 *            consumed).  The service hook dequeues.
 *
 * Measured (test_bng_cycles: 4096 subscribers, 496-byte IPv4 frames out as
 * 504-byte QinQ, 4 DSCPs, queues of 64, bursts of 32, minimum over
 * trials), cycles per packet, Intel Xeon at 2.6 GHz, 2026-11-25, our
 * scheduler sending a pipe's only packet without its queue loop, the
 * record's line 0 holding all an IPv4 packet reads (EP_TEST_HUGE=1, 5
 * runs; docs/benchmarks/bng-downlink-passes-later.md, "The record's first
 * line"), hqos after "The hqos stage's two lines":
 *
 *   parse 14   neigh 3   lookup 30-32   rpf 4.5   encap 13-14   hqos 20-21
 *   + dequeue (service hook) 19-21   = ~106-110 before rx/tx
 *
 * The same test with rte_sched (main's build, alternated with this one
 * three times): hqos 55-67 + dequeue 97-99 = 249-266.  lookup is
 * the price of the hashed destination table (an rte_lpm tbl24 read would
 * be ~20, at 64 MiB); encap was 70 before the record was laid out so that
 * the header template sits in the line lookup prefetches and copied with
 * two fixed 16-byte moves.
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ep_ip.h"
#include "ep_parse.h"
#include "ep_rcu.h"
#include "ep_rx.h"
#include "bng.h"

/* ---- parse ---- */

uint16_t
bng_down_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_down *d = ctx;
	uint16_t out = 0;
	/* A burst from rx: in_port is written here with the rest of the meta
	 * line (down_type.stage_sets_in_port), not by an engine pass of its
	 * own; a burst handed in (tests, ep_worker_run_burst) keeps its own. */
	const uint16_t port = d->w != NULL ? d->w->rx_port : EP_RX_PORT_META;

	ep_rx_prefetch_first(pkts, n, 1);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		int rc;

		ep_rx_prefetch_next(pkts, i, n, 1);
		if (port != EP_RX_PORT_META)
			md->in_port = port;
		/* The mbuf's second line too (next, pool: what the tx stage's
		 * free reads).  Fed from a ring by another core, that core's
		 * rte_pktmbuf_reset wrote it: without this the free waited on
		 * a cross-core miss (bench.bng_ab, down-504-ring, Intel Xeon,
		 * 6 rounds: tx 47.5 -> 20.4, the worker 0.950 of the cycles;
		 * read from our own rx, 1.011, within its noise). */
		if (i + EP_RX_PREFETCH_AHEAD < n)
			rte_prefetch0(RTE_PTR_ADD(pkts[i + EP_RX_PREFETCH_AHEAD], RTE_CACHE_LINE_SIZE));
		if (ep_rx_not_for_us(m, &d->core_mac)) {
			next[i] = EP_NEXT_DROP(EP_DROP_L2_NOT_FOR_US);
			out++;
			continue;
		}
		rc = ep_parse_mbuf_opts(m, md, EP_PARSE_F_MPLS);
		if (unlikely(rc != 0)) {
			next[i] = EP_NEXT_DROP(rc);
			out++;
		}
	}
	return out;
}

/* ---- lookup ---- */

/* The hash data names the record and the id (bng_dst_data): both
 * addresses by arithmetic, no load of subs[id] in between.  The record's
 * line 0 has what rpf (an IPv4 packet, one range), encap and hqos read;
 * its line 1 (the ranges) is prefetched for IPv6 only. */
static __rte_always_inline void
found(struct bng_down *d, struct rte_mbuf *m, const void *data, const uint8_t family)
{
	const struct bng_sub *s = bng_dst_rec(d->b, data);

	rte_prefetch0(s);
	if (family == 6)
		rte_prefetch0(&s->ranges);
	rte_prefetch0(&d->dyn[bng_dst_id(data)]);
	ep_meta(m)->user = (uintptr_t)s;
}

/* Resolve the @p np packets in d->pend of one family, longest length first. */
static __rte_always_inline uint16_t
lookup_family(struct bng_down *d, struct rte_mbuf **pkts, uint16_t *next, uint16_t np,
	      const uint8_t family, const uint8_t *lens, uint8_t n_lens)
{
	const uint32_t alen = family == 4 ? 4 : 8;
	uint16_t out = 0;

	RTE_BUILD_BUG_ON(sizeof(struct bng_dst_key) != 16 ||
			 offsetof(struct bng_dst_key, plen) != 1 ||
			 offsetof(struct bng_dst_key, addr) != 8);
	for (uint8_t l = 0; l < n_lens && np != 0; l++) {
		uint8_t plen = lens[l];
		/* The key as two words stored whole (bng_sub.c's dst_key
		 * byte for byte: family, length, zeros, the prefix with its
		 * host bits clear): rte_hash's CRC reads it 8 bytes at a
		 * time, and a load over narrower stores (the memset, two
		 * bytes, a memcpy, the masked byte) is not forwarded from
		 * the store buffer but waits for them to retire. */
		const uint64_t w0 = family | (uint64_t)plen << 8;
		const uint64_t mask = plen >= 64 ? UINT64_MAX :
				      rte_cpu_to_be_64(~(UINT64_MAX >> plen));
		uint64_t hits = 0;
		uint16_t left = 0;

		for (uint16_t j = 0; j < np; j++) {
			struct bng_dst_key *k = &d->keys[j];
			const uint8_t *a = d->addr[d->pend[j]];
			uint64_t w1 = 0;

			memcpy(&w1, a, alen);
			w1 &= mask;
			memcpy(k, &w0, 8);
			memcpy(k->addr, &w1, 8);
			d->key_ptr[j] = k;
			d->sig[j] = bng_key_hash(w0, w1);
		}
		rte_hash_lookup_with_hash_bulk_data(d->b->dst, d->key_ptr, d->sig, np, &hits,
						    d->data);
		for (uint16_t j = 0; j < np; j++) {
			uint16_t i = d->pend[j];

			if ((hits >> j) & 1)
				found(d, pkts[i], d->data[j], family);
			else
				d->pend[left++] = i;
		}
		np = left;
	}
	for (uint16_t j = 0; j < np; j++) {
		next[d->pend[j]] = EP_NEXT_DROP(EP_DROP_BNG_NO_SUBSCRIBER);
		out++;
	}
	return out;
}

uint16_t
bng_down_lookup_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_down *d = ctx;
	const struct bng_lens *lens = ep_rcu_read(&d->b->lens);
	uint16_t n4 = 0, n6 = 0, out = 0;

	/* IPv4 indexes fill d->pend from the front, IPv6 from the back. */
	for (uint16_t i = 0; i < n; i++) {
		const struct ep_meta *md = ep_meta(pkts[i]);
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(pkts[i], const uint8_t *, md->l3_off);

		if (likely(md->l3_type == EP_L3_IPV4)) {
			memcpy(d->addr[i], l3 + 16, 4);
			d->pend[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			memcpy(d->addr[i], l3 + 24, 16);
			d->pend[EP_BURST_MAX - 1 - n6++] = i;
		} else {
			next[i] = EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED);
			out++;
		}
	}
	if (n4 != 0)
		out += lookup_family(d, pkts, next, n4, 4, lens->len4, lens->n4);
	if (n6 != 0) {
		uint16_t tmp[EP_BURST_MAX];

		for (uint16_t j = 0; j < n6; j++)
			tmp[j] = d->pend[EP_BURST_MAX - 1 - j];
		memcpy(d->pend, tmp, sizeof(tmp[0]) * n6);
		out += lookup_family(d, pkts, next, n6, 6, lens->len6, lens->n6);
	}
	return out;
}

/* ---- reverse path ---- */

uint16_t
bng_down_rpf_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	uint16_t out = 0;

	(void)ctx;
	for (uint16_t i = 0; i < n; i++) {
		const struct ep_meta *md = ep_meta(pkts[i]);
		const struct bng_sub *s = (const struct bng_sub *)(uintptr_t)md->user;
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(pkts[i], const uint8_t *, md->l3_off);
		int hit;

		if (likely(md->l3_type == EP_L3_IPV4 && s->n_v4 <= 1)) {
			/* The first range is in the record's line 0 (no
			 * range: a net no masked source equals). */
			uint32_t a;

			memcpy(&a, l3 + 12, 4);
			hit = (a & s->v4_mask0) == s->v4_net0;
		} else {
			hit = ep_prefix_set_has_src(&s->ranges, s->n_v4, s->has_v6, l3, md->l3_type);
		}
		if (unlikely(hit)) {
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_RPF_FAIL);
			out++;
		}
	}
	return out;
}

/* ---- HQoS enqueue ---- */

/* DSCP -> (traffic class, queue), the path written per packet, one enqueue
 * for the burst; what a full queue refuses the scheduler frees. */
static __rte_always_inline uint32_t
hqos_enqueue(struct bng_down *d, struct rte_mbuf **pkts, uint16_t n)
{
	/* Ours: the path's class part from the per-DSCP table (dscp_path),
	 * OR the pipe, one 64-bit store; which scheduler read once a burst. */
	const bool ours = d->hqos->hs != NULL;
	const uint32_t pipes_log2 = d->hqos->pipes_log2;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const struct bng_sub *s = (const struct bng_sub *)(uintptr_t)md->user;
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);
		uint8_t dscp = ep_ip_dscp(l3, md->l3_type);

		if (likely(ours)) {
			ep_hsched_path_write(m, pipes_log2, s->subport, s->pipe, d->dscp_path[dscp]);
		} else {
			uint8_t tcq = d->dscp_tc[dscp];

			ep_sched_pkt_write(d->hqos, m, s->subport, s->pipe, tcq >> 2, tcq & 3);
		}
	}
	return ep_sched_enqueue(d->hqos, pkts, n);
}

/* ---- access encapsulation ---- */

/* IPv4 over the access MTU, DF clear: fragments (with the access header,
 * PPPoE lengths their own) straight into the scheduler. */
static __rte_noinline uint16_t
down_fragment(struct bng_down *d, struct rte_mbuf *m, uint16_t mtu)
{
	struct rte_mbuf *frags[EP_FIB_MAX_FRAGS];
	int n = ep_fib_fragment_out(d->fw, m, mtu, frags);
	uint32_t k;

	if (n < 0)
		return EP_NEXT_DROP(EP_DROP_IPV4_FRAG_FAILED);
	k = hqos_enqueue(d, frags, (uint16_t)n);
	if (k < (uint32_t)n && d->hqos_stage != NULL)
		d->hqos_stage->stats.drops[EP_DROP_BNG_HQOS_QUEUE_FULL] += (uint32_t)n - k;
	return EP_NEXT_CONSUMED;
}

uint16_t
bng_down_encap_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_down *d = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		const struct bng_sub *s = (const struct bng_sub *)(uintptr_t)md->user;
		uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, md->l3_off);
		uint32_t end = (uint32_t)md->l3_off + md->l3_len;
		/* A PPPoE session header takes 8 bytes of the access MTU (RFC 2516: 1492). */
		uint16_t mtu = (uint16_t)(d->access_mtu - (s->pppoe ? 8 : 0));
		struct bng_down_dyn *dy;
		uint16_t tag = md->l3_type == EP_L3_IPV4 ? s->tag_v4 : s->tag_v6;
		int rc = ep_ip_ttl_dec(l3, md->l3_type);
		bool frag = false;
		uint8_t *e;

		if (unlikely(rc != 0)) {
			ep_fib_icmp_error(d->fw, m, EP_FIB_ICMP_TIME_EXCEEDED, 0);
			next[i] = EP_NEXT_DROP(rc);
			out++;
			continue;
		}
		if (unlikely(!s->can_encap)) {
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_NO_ENCAP);
			out++;
			continue;
		}
		if (unlikely(md->l3_len > mtu)) {
			next[i] = ep_fib_too_big(d->fw, m, mtu);
			if (next[i] != 0) {
				out++;
				continue;
			}
			frag = true;
		}
		if (unlikely(m->pkt_len > end))
			rte_pktmbuf_trim(m, (uint16_t)(m->pkt_len - end));
		if (md->l3_off >= s->tpl_len) {
			rte_pktmbuf_adj(m, (uint16_t)(md->l3_off - s->tpl_len));
		} else if (unlikely(rte_pktmbuf_prepend(m, (uint16_t)(s->tpl_len - md->l3_off)) ==
				    NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_BNG_NO_ENCAP);
			out++;
			continue;
		}
		e = rte_pktmbuf_mtod(m, uint8_t *);
		/* Templates are 14..30 bytes: two fixed copies that overlap
		 * cost two moves, a variable memcpy a call.  16-byte copies
		 * for tagged lines and PPPoE (18..30); 8-byte ones for an
		 * untagged IPoE line (14: a 16-byte copy would overwrite the
		 * IP header's first bytes). */
		RTE_BUILD_BUG_ON(BNG_TPL_MAX > 32);
		if (likely(s->tpl_len >= 16)) {
			memcpy(e, s->tpl, 16);
			memcpy(e + s->tpl_len - 16, s->tpl + s->tpl_len - 16, 16);
		} else {
			memcpy(e, s->tpl, 8);
			memcpy(e + s->tpl_len - 8, s->tpl + s->tpl_len - 8, 8);
		}
		memcpy(e + s->tpl_len - 2, &tag, 2);
		if (s->pppoe) {
			uint16_t plen = rte_cpu_to_be_16((uint16_t)(md->l3_len + 2));

			memcpy(e + s->tpl_len - 4, &plen, 2);
		}
		md->l4_off = (uint16_t)(md->l4_off - md->l3_off + s->tpl_len);
		md->l3_off = s->tpl_len;
		dy = &d->dyn[s->id];
		if (unlikely(dy->gen != s->gen)) {
			memset(dy, 0, sizeof(*dy));
			dy->gen = s->gen;
		}
		dy->pkts++;
		dy->bytes += m->pkt_len;
		if (unlikely(frag)) {
			next[i] = down_fragment(d, m, mtu);
			out++;
		}
	}
	d->pkts += n - out;
	return out;
}

/* ---- HQoS ---- */

uint16_t
bng_down_hqos_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct bng_down *d = ctx;
	uint32_t k;

	for (uint16_t i = 0; i < n; i++)
		next[i] = EP_NEXT_CONSUMED;
	k = hqos_enqueue(d, pkts, n);
	if (unlikely(k < n) && d->hqos_stage != NULL)
		ep_stage_consumed_were_dropped(d->hqos_stage, EP_DROP_BNG_HQOS_QUEUE_FULL, n - k);
	return n;
}

/* ---- worker ---- */

struct bng_down *
bng_down_create(struct bng *b, struct ep_worker *w, int socket, struct ep_err *err)
{
	struct bng_down *d = rte_zmalloc_socket("ep_bng_down", sizeof(*d), RTE_CACHE_LINE_SIZE,
						socket);

	if (d == NULL) {
		ep_err_set(err, "bng: out of memory for a downlink worker");
		return NULL;
	}
	d->b = b;
	d->w = w;
	d->dyn = rte_zmalloc_socket("ep_bng_dndyn",
				    sizeof(d->dyn[0]) * (b->p.max_subscribers + 1),
				    RTE_CACHE_LINE_SIZE, socket);
	d->fw = ep_fib_worker_create(b->fib, w, socket);
	if (d->dyn == NULL || d->fw == NULL) {
		ep_err_set(err, "bng: out of memory for a downlink worker");
		bng_down_free(d);
		return NULL;
	}
	d->hqos = ep_sched_port_create(b->hqos, w, socket, err);
	if (d->hqos == NULL) {
		bng_down_free(d);
		return NULL;
	}
	d->access_port = b->access_port;
	d->core_port = b->core_port;
	d->core_mac = b->e->ports[b->core_port].mac;
	d->access_mtu = d->fw->port[b->access_port].mtu;
	memcpy(d->dscp_tc, b->p.dscp_tc, sizeof(d->dscp_tc));
	for (uint32_t i = 0; i < RTE_DIM(d->dscp_path); i++)
		d->dscp_path[i] = ep_hsched_class_path(d->dscp_tc[i] >> 2, d->dscp_tc[i] & 3);
	return d;
}

void
bng_down_free(struct bng_down *d)
{
	if (d == NULL)
		return;
	ep_sched_port_free(d->hqos);
	ep_fib_worker_free(d->fw);
	rte_free(d->dyn);
	rte_free(d);
}
