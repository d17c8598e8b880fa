/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sink's fast path: find the payload header, account sequence and
 * latency per flow, free every packet.
 *
 * Per packet: ep_parse (about 25 cycles for IPv4 with its checksum check),
 * one 18-byte read, a flow-state update (16 bytes, indexed directly by the
 * flow id: no hash) and a histogram increment.  Latency is the TSC at the
 * start of the burst minus the transmit TSC in the packet: the TSC is
 * invariant and common to all cores of a machine (constant_tsc,
 * nonstop_tsc), so generator and sink may run on different cores.
 */
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "ep_meta.h"
#include "ep_parse.h"
#include "gen.h"

#define SINK_PREFETCH 4

struct ep_sink *
ep_sink_create(int socket)
{
	struct ep_sink *s = rte_zmalloc_socket("ep_sink", sizeof(*s), RTE_CACHE_LINE_SIZE, socket);

	if (s != NULL)
		ep_sink_reset(s);
	return s;
}

void
ep_sink_free(struct ep_sink *s)
{
	rte_free(s);
}

void
ep_sink_reset(struct ep_sink *s)
{
	/* 1 MB of flow state: about 50 us on the worker, between trials. */
	memset(&s->c, 0, sizeof(s->c));
	memset(s->flow, 0, sizeof(s->flow));
	ep_hist_reset(&s->lat);
}

void
ep_sink_account(struct ep_sink *s, const struct ep_gen_hdr *h, uint32_t frame_len,
		uint64_t now)
{
	struct ep_sink_flow *f = &s->flow[rte_le_to_cpu_16(h->flow)];
	uint64_t seq = ep_gen_u48(h->seq);
	uint64_t lat = ((now & EP_GEN_MASK48) - ep_gen_u48(h->tsc)) & EP_GEN_MASK48;

	if (s->c.rx_pkts == 0)
		s->c.first_rx_tsc = now;
	s->c.last_rx_tsc = now;
	s->c.rx_pkts++;
	s->c.rx_bytes += frame_len;
	/* A difference in the upper half of the 48-bit space is negative: the
	 * transmit time lies in the future (a forged or corrupted header). */
	if (unlikely(lat >> 47))
		s->c.latency_invalid_pkts++;
	else
		ep_hist_add(&s->lat, lat);

	if (likely(seq == f->expected)) {
		f->window = (f->window << 1) | 1;
		f->expected = seq + 1;
	} else if (seq > f->expected) {
		uint64_t gap = seq - f->expected;

		s->c.lost_pkts += (int64_t)gap;
		f->window = gap >= 63 ? 1 : (f->window << (gap + 1)) | 1;
		f->expected = seq + 1;
	} else {
		uint64_t back = f->expected - 1 - seq;

		if (back < 64 && (f->window & (1ull << back)) != 0) {
			s->c.duplicate_pkts++;
			return;
		}
		/* A late packet fills a gap counted as lost.  Beyond the
		 * 64-packet window a duplicate cannot be told from a late
		 * packet and is counted as late. */
		if (back < 64)
			f->window |= 1ull << back;
		s->c.reordered_pkts++;
		s->c.lost_pkts--;
	}
}

/* The payload header of a generated packet, or -1 for anything else. */
static __rte_always_inline int
sink_header(struct rte_mbuf *m, struct ep_gen_hdr *h)
{
	struct ep_meta *meta = ep_meta(m);
	const void *p;
	uint32_t off;

	if (ep_parse_mbuf(m, meta) != 0 || meta->l4_proto != IPPROTO_UDP ||
	    (meta->flags & (EP_META_F_HAS_L4 | EP_META_F_FRAGMENT)) != EP_META_F_HAS_L4)
		return -1;
	off = (uint32_t)meta->l4_off + sizeof(struct rte_udp_hdr);
	if (off + sizeof(*h) > (uint32_t)meta->l3_off + meta->l3_len)
		return -1;
	p = rte_pktmbuf_read(m, off, sizeof(*h), h);
	if (p == NULL)
		return -1;
	if (p != h)
		memcpy(h, p, sizeof(*h));
	return h->magic == rte_cpu_to_le_32(EP_GEN_MAGIC) ? 0 : -1;
}

uint16_t
ep_sink_process(struct ep_sink *s, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
		uint64_t now)
{
	struct rte_mbuf *done[EP_BURST_MAX];
	uint16_t nd = 0;

	for (uint16_t i = 0; i < n && i < SINK_PREFETCH; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_gen_hdr h;

		if (i + SINK_PREFETCH < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + SINK_PREFETCH], void *));
		if (unlikely(sink_header(m, &h) != 0)) {
			s->c.foreign_pkts++;
			next[i] = EP_NEXT_DROP(EP_DROP_SINK_FOREIGN);
			continue;
		}
		ep_sink_account(s, &h, rte_pktmbuf_pkt_len(m) + EP_GEN_FCS_LEN, now);
		next[i] = EP_NEXT_CONSUMED;
		done[nd++] = m;
	}
	if (nd != 0)
		rte_pktmbuf_free_bulk(done, nd);
	return n;
}

uint16_t
ep_sink_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return ep_sink_process(ctx, pkts, next, n, rte_rdtsc());
}
