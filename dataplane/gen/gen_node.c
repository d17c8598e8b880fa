/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generator's fast path: the source (pace, allocate, fill) and the
 * gen_tx stage.
 *
 * Per packet the fill copies the flow's 96-byte template (two cache lines,
 * constant size so the compiler emits vector moves), writes three length
 * words, the IPv4 header checksum from the template's precomputed sum (one
 * add and a fold) or the IPv6 UDP checksum (the template sum plus the 18
 * payload-header bytes), the payload header, and zeroes the payload beyond
 * the template.  Zeroing rather than trusting a pre-zeroed pool keeps the
 * IPv6 checksum right even if an in-process consumer wrote into the payload
 * before freeing the mbuf; it costs about one store per 32 bytes (about 40
 * cycles for a 1280-byte frame), nothing for 64-byte frames.
 *
 * All packets of a burst carry the TSC read once at the start of the burst:
 * the time between building and handing the burst to the port (well under a
 * microsecond) counts as latency, as it would on a hardware tester's queue.
 */
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "ep_meta.h"
#include "gen.h"

#define GEN_PREFETCH 4   /* packets ahead: covers the ~100-cycle miss on the data line */

static __rte_always_inline void
fill_one(const struct ep_gen_profile *pr, struct rte_mbuf *m, uint32_t flow, uint8_t cls,
	 uint64_t seq, uint64_t tsc, uint16_t port, const bool v6)
{
	const struct ep_gen_flow_tpl *t = &pr->tpl[flow];
	uint16_t len = pr->frame_len[cls];
	uint16_t l3_len = (uint16_t)(len - pr->l2_len);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct ep_gen_hdr h;
	struct ep_meta *meta;

	memcpy(d, t->hdr, EP_GEN_TPL_LEN);
	ep_gen_hdr_make(&h, (uint16_t)flow, seq, tsc);
	if (v6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(d + pr->l2_len);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		uint16_t ulen = rte_cpu_to_be_16((uint16_t)(l3_len - sizeof(*ip)));
		uint32_t sum;
		uint16_t ck;

		ip->payload_len = ulen;
		udp->dgram_len = ulen;
		/* Length twice: in the pseudo-header and in the UDP header. */
		sum = __rte_raw_cksum(&h, sizeof(h), t->sum + ulen + ulen);
		ck = (uint16_t)~__rte_raw_cksum_reduce(sum);
		/* 0 means "no checksum", forbidden for IPv6 (RFC 8200 8.1). */
		udp->dgram_cksum = ck == 0 ? 0xffff : ck;
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + pr->l2_len);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		uint16_t tlen = rte_cpu_to_be_16(l3_len);

		ip->total_length = tlen;
		ip->hdr_checksum = (uint16_t)~__rte_raw_cksum_reduce(t->sum + tlen);
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(l3_len - sizeof(*ip)));
	}
	memcpy(d + pr->hdr_len, &h, sizeof(h));
	if (len > EP_GEN_TPL_LEN)
		memset(d + EP_GEN_TPL_LEN, 0, len - EP_GEN_TPL_LEN);
	m->data_len = len;
	m->pkt_len = len;
	meta = ep_meta(m);
	memset(meta, 0, sizeof(*meta));
	meta->in_port = port;
}

/* One body, specialised for IPv4 and IPv6 by the constant @p v6. */
static __rte_always_inline uint64_t
fill_burst(struct ep_gen *g, struct rte_mbuf **pkts, uint16_t n, uint64_t now, const bool v6)
{
	const struct ep_gen_profile *pr = g->prof;
	uint32_t flow = g->next_flow, slot = g->next_slot;
	uint64_t bytes = 0, tsc = now & EP_GEN_MASK48;

	for (uint16_t i = 0; i < n && i < GEN_PREFETCH; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		uint8_t cls = pr->sched[slot];

		if (i + GEN_PREFETCH < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + GEN_PREFETCH], void *));
		fill_one(pr, pkts[i], flow, cls, g->seq[flow]++, tsc, g->tx_port, v6);
		bytes += pr->frame_len[cls] + EP_GEN_FCS_LEN;
		if (++flow == pr->n_flows)
			flow = 0;
		if (++slot == pr->sched_len)
			slot = 0;
	}
	g->next_flow = flow;
	g->next_slot = slot;
	return bytes;
}

static uint64_t
fill_burst_v4(struct ep_gen *g, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	return fill_burst(g, pkts, n, now, false);
}

static uint64_t
fill_burst_v6(struct ep_gen *g, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	return fill_burst(g, pkts, n, now, true);
}

uint16_t
ep_gen_produce(struct ep_gen *g, struct rte_mbuf **pkts, uint16_t max, uint64_t now)
{
	uint16_t n;

	if (!g->running)
		return 0;
	n = ep_gen_pace_take(&g->pace, now, max);
	if (g->count != 0) {
		uint64_t left = g->count > g->c.sent_pkts ? g->count - g->c.sent_pkts : 0;

		if (left == 0)
			g->running = false;
		if (n > left)
			n = (uint16_t)left;
	}
	if (n == 0)
		return 0;
	if (unlikely(rte_pktmbuf_alloc_bulk(g->pool, pkts, n) != 0)) {
		/* The pool is empty (packets stuck downstream): these packets are
		 * not sent and use no sequence numbers, so the sink sees no gap. */
		g->c.alloc_failed_pkts += n;
		*g->alloc_drops += n;
		return 0;
	}
	g->c.sent_bytes += g->prof->v6 ? fill_burst_v6(g, pkts, n, now) :
					 fill_burst_v4(g, pkts, n, now);
	g->c.sent_pkts += n;
	if (g->c.first_tx_tsc == 0)
		g->c.first_tx_tsc = now;
	g->c.last_tx_tsc = now;
	if (g->count != 0 && g->c.sent_pkts >= g->count)
		g->running = false;
	return n;
}

uint16_t
ep_gen_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct ep_gen *g = ctx;
	uint16_t a = EP_NEXT_TX(g->tx_port);

	for (uint16_t i = 0; i < n; i++)
		next[i] = a;
	return n;
}

void
ep_gen_start(struct ep_gen *g, uint64_t now)
{
	/* Every flow, not only the current profile's: a later gen-set with more
	 * flows must also start them at 0, which is what a reset sink expects.
	 * 512 KB, about 30 us, once per run. */
	memset(g->seq, 0, sizeof(g->seq[0]) * EP_GEN_MAX_FLOWS);
	memset(&g->c, 0, sizeof(g->c));
	g->c.start_tsc = now;
	g->next_flow = 0;
	g->next_slot = 0;
	ep_gen_pace_init(&g->pace, g->pace.hz, g->pace.rate_pps, g->burst, g->depth_us, now);
	g->running = true;
}

void
ep_gen_set_rate(struct ep_gen *g, uint64_t rate_pps, uint64_t now)
{
	ep_gen_pace_init(&g->pace, g->pace.hz, rate_pps, g->burst, g->depth_us, now);
}
