/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Downstream scheduling: service flows, then channels.
 *
 *   sf_sched   each SF is a token bucket (MULPI Annex C.2.2.7.2: over any
 *              interval T at most T x max sustained rate / 8 + max traffic
 *              burst bytes), an rte_meter srTCM whose committed bucket is the
 *              SF's (CIR = rate, CBS = burst, EBS = 0): green is "within
 *              the envelope", anything else waits.  A packet of an SF with
 *              an empty queue and tokens goes straight on -- the common
 *              case costs one meter check; otherwise it joins the SF's FIFO
 *              and the service hook releases it when tokens come, higher
 *              traffic priority first (DOCSIS traffic priority 7..0)
 *   ch_sched   each channel is a queue drained at its rate: free_at is
 *              when what was already sent has left it.  A frame goes to
 *              the channel of the CM's bonding group that frees first,
 *              unless even that one is more than ch_backlog_us ahead of
 *              now (the RPD's buffer): then it waits in the bonding group's
 *              FIFO of its priority.  A bonded CM's frames get consecutive
 *              DS packet sequence numbers here, in transmission order
 *              (the CM resequences by them, MULPI 8.2.3)
 *
 * Why not rte_sched: its hierarchy is port -> subport -> pipe -> 13 traffic
 * classes -> queues, one output link per port.  DOCSIS needs (a) many
 * output channels of different rates fed from one set of flows, with
 * bonding groups that share channels -- not a tree; Intel's vCMTS
 * patched rte_sched for it; (b) a per-flow token bucket with an explicit
 * burst size, where rte_sched has per-TC credits refilled each tc_period;
 * (c) 8 strict priorities per CM instead of 12 strict + 4 WRR.  And the
 * cost: an rte_sched enqueue + dequeue per packet measured 57 + 124
 * cycles in the BNG downlink on this machine (docs/bng.md), while the
 * downstream's whole budget beside the crypto is ~100 cycles.  Here an
 * unshaped packet costs one meter check and one channel pick; queues
 * are touched only when a flow or a channel is over its rate.
 */
/* rte_prefetch1_write (cmts_worker.h) is experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_malloc.h>

#include "ep_docsis.h"
#include "cmts.h"
#include "cmts_worker.h"

static void
fifo_init(struct cmts_fifo *q, struct rte_mbuf **slots, uint32_t size)
{
	q->head = 0;
	q->n = 0;
	q->mask = (uint16_t)(size - 1);
	q->active = 0;
	q->slot = slots;
}

int
cmts_sched_init(struct cmts_ds *d, int socket, struct ep_err *err)
{
	const struct cmts_sg *sg = d->sg;
	uint32_t nq = (sg->p.max_cms + 1) * CMTS_MAX_SF;
	uint64_t hz = rte_get_tsc_hz();
	struct rte_mbuf **slots;

	d->sfq = rte_zmalloc_socket("cmts_sfq", sizeof(d->sfq[0]) * nq, RTE_CACHE_LINE_SIZE,
				    socket);
	slots = rte_zmalloc_socket("cmts_sfqs", sizeof(slots[0]) *
				   ((size_t)nq * sg->p.sf_qsize +
				    (size_t)CMTS_MAX_BG * CMTS_PRIOS * sg->p.bg_qsize), 0, socket);
	for (int p = 0; p < CMTS_PRIOS; p++)
		d->active[p] = rte_malloc_socket("cmts_act", sizeof(uint32_t) * nq, 0, socket);
	if (d->sfq == NULL || slots == NULL || d->active[CMTS_PRIOS - 1] == NULL)
		return ep_err_set(err, "cmts: out of memory for %u service-flow queues of %u",
				  nq, sg->p.sf_qsize);
	for (uint32_t i = 0; i < nq; i++)
		fifo_init(&d->sfq[i], slots + (size_t)i * sg->p.sf_qsize, sg->p.sf_qsize);
	slots += (size_t)nq * sg->p.sf_qsize;
	for (int b = 0; b < CMTS_MAX_BG; b++)
		for (int p = 0; p < CMTS_PRIOS; p++, slots += sg->p.bg_qsize)
			fifo_init(&d->bgq[b][p], slots, sg->p.bg_qsize);
	for (int b = 0; b < CMTS_MAX_BG; b++) {
		d->bg_n[b] = sg->bg[b].in_use ? sg->bg[b].n_ch : 0;
		memcpy(d->bg_ch[b], sg->bg[b].ch, sizeof(d->bg_ch[b]));
	}
	for (int c = 0; c < CMTS_MAX_DS_CH; c++) {
		struct cmts_ds_chan *ch = &d->ch[c];

		if (!sg->ds_ch[c].in_use)
			continue;
		ch->cyc_per_kb = hz * 8 * 1024 / sg->ds_ch[c].rate_bps;
		ch->horizon = hz / 1000000 * sg->p.ch_backlog_us;
		ch->type = sg->ds_ch[c].type;
		ch->flow_id = sg->ds_ch[c].flow_id;
		ch->session = sg->ds_ch[c].session;
	}
	return 0;
}

void
cmts_sched_fini(struct cmts_ds *d)
{
	uint32_t nq = (d->sg->p.max_cms + 1) * CMTS_MAX_SF;

	if (d->sfq != NULL) {
		for (uint32_t i = 0; i < nq; i++)
			while (d->sfq[i].n != 0)
				rte_pktmbuf_free(cmts_fifo_pop(&d->sfq[i]));
		rte_free(d->sfq[0].slot);
	}
	for (int b = 0; b < CMTS_MAX_BG; b++)
		for (int p = 0; p < CMTS_PRIOS; p++)
			while (d->bgq[b][p].n != 0)
				rte_pktmbuf_free(cmts_fifo_pop(&d->bgq[b][p]));
	for (int p = 0; p < CMTS_PRIOS; p++)
		rte_free(d->active[p]);
	rte_free(d->sfq);
}

/* ---- sf_sched ---- */

static __rte_always_inline uint32_t
pdu_len(const struct rte_mbuf *m)
{
	return m->pkt_len + EP_DOCSIS_CRC_LEN;
}

uint16_t
cmts_ds_sf_sched_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	uint64_t now = d->w->stage_tsc;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint64_t u = ep_meta(m)->user;
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(u));
		uint8_t s = DSM_SF(u);
		struct cmts_fifo *q;
		struct cmts_ds_dyn *y;
		uint32_t len = pdu_len(m);

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		y = cmts_ds_dyn_of(d, cm);
		/* The queue's state from the CM's line, not the queue's own
		 * (one line fewer a frame: the queues are 16 bytes apiece,
		 * 2709 of them in the default profile). */
		if (likely(!(y->sf_queued & (1u << s))) &&
		    (!(cm->sf_shaped & (1u << s)) ||
		     rte_meter_srtcm_color_blind_check(&y->sf[s].meter, cmts_sf_prof(cm, s), now, len) ==
		     RTE_COLOR_GREEN)) {
			y->sf[s].pkts++;
			y->sf[s].bytes += len;
			continue;
		}
		/* Over its rate, or behind packets that are: wait in order. */
		q = &d->sfq[DSM_CM(u) * CMTS_MAX_SF + s];
		y->sf_queued |= (uint16_t)(1u << s);
		if (unlikely(!cmts_fifo_push(q, m))) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_SF_QUEUE_FULL);
			out++;
			d->sched_drops++;
			continue;
		}
		if (!q->active) {
			uint8_t p = DSM_PRIO(u);

			q->active = 1;
			d->active[p][d->n_active[p]++] = DSM_CM(u) * CMTS_MAX_SF + s;
		}
		d->queued++;
		next[i] = EP_NEXT_CONSUMED;
		out++;
	}
	return out;
}

/* ---- ch_sched ---- */

/* The channel of bonding group @p bg that frees first. */
static __rte_always_inline uint8_t
earliest(const struct cmts_ds *d, uint8_t bg)
{
	const uint8_t *chs = d->bg_ch[bg];
	uint8_t best = chs[0];
	uint64_t t = d->ch[best].free_at;

	for (uint8_t k = 1; k < d->bg_n[bg]; k++) {
		uint8_t c = chs[k];

		if (d->ch[c].free_at < t) {
			t = d->ch[c].free_at;
			best = c;
		}
	}
	return best;
}

uint16_t
cmts_ds_ch_sched_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	uint64_t now = d->w->stage_tsc;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);
		uint64_t u = md->user;
		const struct cmts_cm *cm = cmts_cm_of(d->sg, DSM_CM(u));
		struct cmts_fifo *bq;
		struct cmts_ds_chan *ch;
		uint8_t c;
		uint32_t bytes;

		if (unlikely(cm == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UNKNOWN_CPE);
			out++;
			continue;
		}
		cmts_prefetch_headroom(m);
		bq = &d->bgq[cm->bg][DSM_PRIO(u)];
		c = earliest(d, cm->bg);
		ch = &d->ch[c];
		/* A packet the service hook released from the bonding-group
		 * queue is placed even if the channel filled meanwhile. */
		if (unlikely(!(u & DSM_FROM_BG) && (bq->n != 0 || ch->free_at > now + ch->horizon))) {
			if (unlikely(!cmts_fifo_push(bq, m))) {
				next[i] = EP_NEXT_DROP(EP_DROP_CMTS_CHANNEL_QUEUE_FULL);
				d->sched_drops++;
			} else {
				d->queued++;
				next[i] = EP_NEXT_CONSUMED;
			}
			out++;
			continue;
		}
		bytes = pdu_len(m) + cm->hdr_len;
		ch->free_at = RTE_MAX(ch->free_at, now) + (bytes * ch->cyc_per_kb >> 10);
		ch->pkts++;
		ch->bytes += bytes;
		md->user = DSM_SET_CH(u & ~DSM_FROM_BG, c);
		if (cm->bonded)
			md->nexthop = cmts_ds_dyn_of(d, cm)->psn++;
	}
	return out;
}

/* ---- service: release what waited ---- */

static uint16_t
drain_sf(struct cmts_ds *d, struct rte_mbuf **out, uint16_t max, uint64_t now)
{
	uint16_t n = 0;

	for (int p = CMTS_PRIOS - 1; p >= 0 && n < max; p--) {
		for (uint32_t j = 0; j < d->n_active[p] && n < max;) {
			uint32_t qi = d->active[p][j];
			struct cmts_fifo *q = &d->sfq[qi];
			const struct cmts_cm *cm = cmts_cm_of(d->sg, qi / CMTS_MAX_SF);
			uint8_t s = (uint8_t)(qi % CMTS_MAX_SF);

			while (q->n != 0 && n < max) {
				struct rte_mbuf *m = cmts_fifo_peek(q);

				if (cm == NULL || !cm->sf[s].in_use) {
					/* The CM or its SF is gone. */
					d->stage_sf->stats.drops[EP_DROP_CMTS_UNKNOWN_CPE]++;
					rte_pktmbuf_free(cmts_fifo_pop(q));
					d->queued--;
					continue;
				}
				if (cm->sf[s].shaped) {
					struct cmts_ds_dyn *y = cmts_ds_dyn_of(d, cm);

					if (rte_meter_srtcm_color_blind_check(&y->sf[s].meter,
							cmts_sf_prof(cm, s), now, pdu_len(m)) !=
					    RTE_COLOR_GREEN)
						break;
					y->sf[s].pkts++;
					y->sf[s].bytes += pdu_len(m);
				}
				out[n++] = cmts_fifo_pop(q);
				d->queued--;
			}
			if (q->n == 0) {
				if (cm != NULL)
					cmts_ds_dyn_of(d, cm)->sf_queued &= (uint16_t)~(1u << s);
				q->active = 0;
				d->active[p][j] = d->active[p][--d->n_active[p]];
			} else {
				j++;
			}
		}
	}
	return n;
}

static uint16_t
drain_bg(struct cmts_ds *d, struct rte_mbuf **out, uint16_t max, uint64_t now)
{
	uint16_t n = 0;

	for (int b = 0; b < CMTS_MAX_BG && n < max; b++) {
		const struct cmts_ds_chan *ch;

		if (d->bg_n[b] == 0)
			continue;
		ch = &d->ch[earliest(d, (uint8_t)b)];
		if (ch->free_at > now + ch->horizon)
			continue;
		for (int p = CMTS_PRIOS - 1; p >= 0 && n < max; p--) {
			struct cmts_fifo *q = &d->bgq[b][p];

			while (q->n != 0 && n < max) {
				struct rte_mbuf *m = cmts_fifo_pop(q);

				ep_meta(m)->user |= DSM_FROM_BG;
				out[n++] = m;
				d->queued--;
			}
		}
	}
	return n;
}

uint16_t
cmts_ds_service(struct ep_worker *w)
{
	struct cmts_ds *d = w->pipeline_ctx;
	struct rte_mbuf *pkts[EP_BURST_MAX];
	uint16_t moved = 0, k;

	if (unlikely(d->queued != 0)) {
		k = drain_sf(d, pkts, w->burst, w->stage_tsc);
		if (k != 0)
			ep_worker_run_from(w, d->st_ch_sched, pkts, k);
		moved += k;
		k = drain_bg(d, pkts, w->burst, w->stage_tsc);
		if (k != 0)
			ep_worker_run_from(w, d->st_ch_sched, pkts, k);
		moved += k;
	}
	/* No new burst reached the crypto stage since the last call: take
	 * what the device still holds (dequeue with nothing new to submit
	 * makes intel-ipsec-mb flush its lanes). */
	if (!d->crypto_ran && d->in_flight != 0) {
		k = cmts_ds_crypto_drain(d, pkts, w->burst);
		if (k != 0)
			ep_worker_run_from(w, d->st_depi, pkts, k);
		moved += k;
	}
	d->crypto_ran = false;
	if (moved != 0)
		ep_worker_flush_tx(w);
	return moved;
}
