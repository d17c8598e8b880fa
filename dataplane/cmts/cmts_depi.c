/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage `depi`: DOCSIS frames into L2TPv3 DEPI packets toward the RPD
 * (ep_depi.h has the formats), per channel:
 *
 *   OFDM (PSP)   frames of one channel in one burst share a DEPI packet
 *                while they fit the DEPI MTU (at most CMTS_PSP_MAX_SEGS):
 *                the first frame's mbuf becomes the packet, the DEPI
 *                headers go into its headroom and the other frames are
 *                chained behind it as segments -- no copy.  Each frame is
 *                one PSP segment (B and E set).  A frame above the MTU goes
 *                alone.  The DEPI packets leave in the order of their first
 *                frame.
 *   SC-QAM       DOCSIS in MPEG-TS (D-MPT): frames are copied into 188-byte
 *   (D-MPT)      TS packets on PID 0x1FFE, up to mpt_ts of them per DEPI
 *                packet, with the pointer field marking where a frame
 *                starts and 0xFF stuff bytes closing a TS packet at the end
 *                of a burst.  A TS packet opened in the middle of a frame
 *                gets PUSI and a pointer when the frame ends inside it,
 *                so the next frame can start right after it.
 *
 * Counters per channel: DEPI packets, PSP segments per DEPI packet
 * (1..7, 8+), TS packets.
 */
/* rte_prefetch1_write (cmts_worker.h) is experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <assert.h>

#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ep_csum.h"
#include "ep_depi.h"
#include "ep_docsis.h"
#include "cmts.h"
#include "cmts_worker.h"

#define DEPI_L2L3      (RTE_ETHER_HDR_LEN + 20)           /* Ethernet + IPv4 */
#define DEPI_FIXED     (DEPI_L2L3 + EP_DEPI_HDR_LEN)      /* + session, sub-layer */
#define TS_PAYLOAD     (EP_MPT_TS_LEN - EP_MPT_TS_HDR)     /* 184 */
#define MPT_POOL       4095

static_assert(CMTS_MAX_DS_CH <= 64, "a burst's open channels are bits of a uint64_t");

int
cmts_depi_init(struct cmts_ds *d, int socket, struct ep_err *err)
{
	struct cmts_sg *sg = d->sg;
	struct ep_port *port = &sg->e->ports[d->rpd_port];
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)d->depi_tpl;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d->depi_tpl + RTE_ETHER_HDR_LEN);
	char name[RTE_MEMPOOL_NAMESIZE];
	bool mpt = false;

	rte_ether_addr_copy(&sg->rpd_mac, &eh->dst_addr);
	rte_ether_addr_copy(&port->mac, &eh->src_addr);
	eh->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = EP_IPPROTO_L2TP;
	ip->src_addr = sg->cmts_ip;
	ip->dst_addr = sg->rpd_ip;
	d->depi_tpl_csum = ep_csum(ip, sizeof(*ip));
	d->depi_mtu = sg->p.depi_mtu;
	d->mpt_max_ts = (uint16_t)sg->p.mpt_ts;
	for (int c = 0; c < CMTS_MAX_DS_CH; c++)
		mpt |= sg->ds_ch[c].in_use && sg->ds_ch[c].type == CMTS_CH_SCQAM;
	if (!mpt)
		return 0;
	snprintf(name, sizeof(name), "cmts_mpt_%u", d->w->id);
	d->pool = rte_pktmbuf_pool_create(name, MPT_POOL, 256, EP_META_SIZE,
					  RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (d->pool == NULL)
		return ep_err_set(err, "cmts: no memory for the D-MPT packet pool");
	return 0;
}

void
cmts_depi_fini(struct cmts_ds *d)
{
	for (int c = 0; c < CMTS_MAX_DS_CH; c++) {
		rte_pktmbuf_free(d->ch[c].mpt);
		d->ch[c].mpt = NULL;
	}
	rte_mempool_free(d->pool);
	d->pool = NULL;
}

/* Ethernet + IPv4 (total length @p ip_len) + session and sub-layer. */
static __rte_always_inline void
depi_headers(const struct cmts_ds *d, struct cmts_ds_chan *ch, uint8_t *p, uint16_t ip_len,
	     uint8_t count)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
	uint16_t tl = rte_cpu_to_be_16(ip_len);

	memcpy(p, d->depi_tpl, 32);
	memcpy(p + 32, d->depi_tpl + 32, DEPI_L2L3 - 32);
	ip->total_length = tl;
	ip->hdr_checksum = ep_csum_update16(d->depi_tpl_csum, 0, tl);
	ep_depi_put_hdr(p + DEPI_L2L3, ch->session, ch->flow_id, count, ch->seq++);
	ch->depi_pkts++;
}

/* ---- PSP ---- */

/* Prepend the headers and the segment table to the packet being built on
 * channel @p ch (its frames are the chain's segments).  Inline at both
 * calls: three in four frames open a packet, and each closes one. */
static __rte_always_inline void
psp_close(struct cmts_ds *d, struct cmts_ds_chan *ch)
{
	struct rte_mbuf *head = ch->psp_head, *s;
	uint16_t nseg = ch->psp_n, hdr = (uint16_t)(DEPI_FIXED + 2 * nseg);
	uint8_t *p = (uint8_t *)rte_pktmbuf_prepend(head, hdr), *tab;

	/* The framing stage checked the headroom for the largest table. */
	depi_headers(d, ch, p, (uint16_t)(head->pkt_len - RTE_ETHER_HDR_LEN), (uint8_t)nseg);
	tab = p + DEPI_FIXED;
	ep_psp_put_seg(tab, true, true, (uint16_t)(head->data_len - hdr));
	s = head->next;
	for (uint16_t k = 1; k < nseg; k++, s = s->next)
		ep_psp_put_seg(tab + 2 * k, true, true, s->data_len);
	ch->psp_segs[RTE_MIN(nseg, 8) - 1]++;
	ch->psp_head = ch->psp_tail = NULL;
	ch->psp_n = 0;
}

/* ---- D-MPT ---- */

static void
mpt_close(struct cmts_ds *d, struct cmts_ds_chan *ch, struct rte_mbuf **out, uint16_t *n_out)
{
	struct rte_mbuf *m = ch->mpt;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t len;

	if (ch->mpt_fill < TS_PAYLOAD) {
		/* Stuff bytes close the last TS packet (MULPI: 0xFF between
		 * MAC frames). */
		memset(p + DEPI_FIXED + EP_MPT_TS_LEN * (ch->mpt_ts - 1) + EP_MPT_TS_HDR +
		       ch->mpt_fill, EP_DOCSIS_FC_STUFF, TS_PAYLOAD - ch->mpt_fill);
		ch->mpt_fill = TS_PAYLOAD;
	}
	len = (uint16_t)(DEPI_FIXED + EP_MPT_TS_LEN * ch->mpt_ts);
	m->data_len = len;
	m->pkt_len = len;
	depi_headers(d, ch, p, (uint16_t)(len - RTE_ETHER_HDR_LEN), 0);
	ch->mpt_pkts += ch->mpt_ts;
	out[(*n_out)++] = m;
	ch->mpt = NULL;
}

/* Copy one DOCSIS frame into the channel's TS packets; -1 when no buffer. */
static int
mpt_put(struct cmts_ds *d, struct cmts_ds_chan *ch, const uint8_t *src, uint32_t len,
	struct rte_mbuf **out, uint16_t *n_out)
{
	uint32_t done = 0;
	bool start = true;

	while (done < len) {
		uint8_t *ts;
		uint32_t k;

		if (ch->mpt != NULL && ch->mpt_ts == d->mpt_max_ts && ch->mpt_fill == TS_PAYLOAD)
			mpt_close(d, ch, out, n_out);
		if (ch->mpt == NULL) {
			ch->mpt = rte_pktmbuf_alloc(d->pool);
			if (unlikely(ch->mpt == NULL))
				return -1;
			ch->mpt_ts = 0;
			ch->mpt_fill = TS_PAYLOAD;
		}
		ts = rte_pktmbuf_mtod(ch->mpt, uint8_t *) + DEPI_FIXED +
		     EP_MPT_TS_LEN * (ch->mpt_ts - (ch->mpt_ts != 0));
		if (ch->mpt_fill == TS_PAYLOAD) {
			/* Open a TS packet.  PUSI and a pointer when a frame
			 * starts in it: this one (pointer 0), or the next one
			 * right after the rest of this frame when that rest ends
			 * inside the packet. */
			uint32_t rem = len - done;

			ts = rte_pktmbuf_mtod(ch->mpt, uint8_t *) + DEPI_FIXED +
			     EP_MPT_TS_LEN * ch->mpt_ts++;
			ch->mpt_pusi = start || rem < TS_PAYLOAD - 1;
			ep_mpt_put_ts_hdr(ts, ch->mpt_pusi, ch->mpt_cc++);
			ch->mpt_fill = 0;
			if (ch->mpt_pusi)
				ts[EP_MPT_TS_HDR + ch->mpt_fill++] = (uint8_t)(start ? 0 : rem);
		} else if (start && !ch->mpt_pusi) {
			/* No pointer in this TS packet: a frame cannot start in
			 * it.  Stuff the rest. */
			memset(ts + EP_MPT_TS_HDR + ch->mpt_fill, EP_DOCSIS_FC_STUFF,
			       TS_PAYLOAD - ch->mpt_fill);
			ch->mpt_fill = TS_PAYLOAD;
			continue;
		}
		k = RTE_MIN(len - done, (uint32_t)(TS_PAYLOAD - ch->mpt_fill));
		memcpy(ts + EP_MPT_TS_HDR + ch->mpt_fill, src + done, k);
		ch->mpt_fill = (uint16_t)(ch->mpt_fill + k);
		done += k;
		start = false;
	}
	return 0;
}

uint16_t
cmts_ds_depi_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_ds *d = ctx;
	struct rte_mbuf *mpt_out[EP_BURST_MAX * 3], *freed[EP_BURST_MAX];
	uint16_t n_mpt = 0, n_freed = 0;
	uint64_t open = 0;              /* channels with a packet being built: bit c */
	const uint16_t tx = EP_NEXT_TX(d->rpd_port);

	/* Frames out of the crypto device are often earlier bursts': their
	 * mbuf and metadata lines went cold while the device streamed through
	 * the payloads. */
	for (uint16_t i = 0; i < n && i < 4; i++) {
		rte_prefetch0(pkts[i]);
		rte_prefetch0(ep_meta(pkts[i]));
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (i + 4 < n) {
			rte_prefetch0(pkts[i + 4]);
			rte_prefetch0(ep_meta(pkts[i + 4]));
		}
		uint8_t c = DSM_CH(ep_meta(m)->user);
		struct cmts_ds_chan *ch = &d->ch[c];
		uint32_t flen = m->pkt_len;

		if (ch->type == CMTS_CH_SCQAM) {
			if (unlikely(mpt_put(d, ch, rte_pktmbuf_mtod(m, const uint8_t *), flen,
					     mpt_out, &n_mpt) < 0)) {
				next[i] = EP_NEXT_DROP(EP_DROP_CMTS_NO_MBUF);
				continue;
			}
			open |= 1ull << c;
			freed[n_freed++] = m;
			next[i] = EP_NEXT_CONSUMED;
			continue;
		}
		if (ch->psp_head != NULL && ch->psp_n < CMTS_PSP_MAX_SEGS &&
		    20u + EP_DEPI_HDR_LEN + 2u * (ch->psp_n + 1) + ch->psp_len + flen <= d->depi_mtu) {
			ch->psp_tail->next = m;
			ch->psp_tail = m;
			ch->psp_head->nb_segs++;
			ch->psp_head->pkt_len += flen;
			ch->psp_len += flen;
			ch->psp_n++;
			next[i] = EP_NEXT_CONSUMED;
			continue;
		}
		if (ch->psp_head != NULL)
			psp_close(d, ch);
		ch->psp_head = ch->psp_tail = m;
		ch->psp_n = 1;
		ch->psp_len = flen;
		open |= 1ull << c;
		next[i] = tx;
	}
	/* Close what this burst opened: the set bits of @c open only (a
	 * walk over all 64 channel slots was ~5 cycles a frame, bench.cmts_ab
	 * 0.982, docs/benchmarks/cmts-history.md). */
	while (open != 0) {
		struct cmts_ds_chan *ch = &d->ch[rte_bsf64(open)];

		open &= open - 1;
		if (ch->psp_head != NULL)
			psp_close(d, ch);
		if (ch->mpt != NULL)
			mpt_close(d, ch, mpt_out, &n_mpt);
	}
	if (n_freed != 0)
		rte_pktmbuf_free_bulk(freed, n_freed);
	if (n_mpt != 0)
		ep_worker_tx(d->w, d->rpd_port, mpt_out, n_mpt);
	return n;
}
