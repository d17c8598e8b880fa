/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cmts-us stages (RPD -> network) and the upstream worker.
 *
 *   uepi_verify  Ethernet, IPv4 (checksum) to the CMTS address with
 *                protocol 115, the L2TPv3 session of a known upstream
 *                channel; the sub-layer sequence number against the
 *                channel's (a gap is remembered for reassembly)
 *   uepi_decap   the PSP segment table: a header segment (B, the burst's
 *                scheduled SID), payload segments, a trailer segment (E);
 *                the payload bytes of the packet as one range
 *   reassembly   per channel, in packet order: a frame cut at the end of the
 *                previous packet is completed from the head of this one
 *                (copied into its own mbuf); whole frames are found by
 *                their LEN; a cut tail is kept for the next packet.  A
 *                sequence gap, a new burst before the frame ended or a
 *                burst that ends inside a frame loses that frame
 *                (reassembly failed) and resynchronises at the next burst
 *   extract      each frame's MAC header parsed and its HCS checked
 *   decrypt      rte_security DOCSIS uplink per encrypted frame: decrypt
 *                from byte 12 of the PDU, then the CRC-32 check when the
 *                SG's crc_verify is on (CRC length 0 otherwise); the key is
 *                the SID's CM's TEK with the frame's key sequence.  Frames
 *                of a burst are enqueued together and all dequeued before
 *                the stage returns
 *   cm_lookup    the frame's SID (privacy EH, else the burst's scheduled
 *                SID) -> CM; Ethernet source is the CM's MAC or a known CPE
 *                MAC; an IP source must be one of the CM's addresses
 *   forward      the Ethernet frames without DOCSIS header and CRC, in
 *                order: the last frame of a packet reuses the packet's mbuf,
 *                earlier ones are copied, reassembled ones are their own
 *
 * After `reassembly` the stages decide about frames, which are counted as
 * drops in the stage that decided (one UEPI packet carries several).
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_cryptodev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_net_crc.h>
#include <rte_security.h>

#include "ep_depi.h"
#include "ep_docsis.h"
#include "ep_parse.h"
#include "ep_rx.h"
#include "cmts.h"
#include "cmts_worker.h"

#define CMTS_US_FRAME_MAX (EP_DOCSIS_HDR_MAX + EP_DOCSIS_PDU_MAX)
#define CMTS_IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define US_POOL 8191
#define US_PREFETCH_AHEAD 4

enum { ST_VERIFY, ST_DECAP, ST_REASM, ST_EXTRACT, ST_DECRYPT, ST_CM, ST_FORWARD, ST__N };

static __rte_always_inline void
frame_drop(struct cmts_us *u, int stage, struct cmts_us_frame *f, uint16_t reason)
{
	f->verdict = reason;
	u->stage[stage]->stats.drops[reason]++;
}

/* ---- uepi_verify ---- */

uint16_t
cmts_us_verify_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;
	const struct cmts_sg *sg = u->sg;
	uint16_t out = 0;

	u->n_pd = 0;
	u->n_fr = 0;
	/* UEPI packets another core wrote (the NIC's DMA, a generator):
	 * their mbufs first, then data and metadata a few packets ahead, and
	 * the rest of each packet toward L2 for reassembly, extraction and
	 * the decryption in place.  Without it this stage paid the misses,
	 * then the crypto again: the benchmark's upstream 886 -> 712 CPU
	 * cycles a frame (8 alternating rounds,
	 * docs/benchmarks/cmts-history.md). */
	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0(pkts[i]);
	for (uint16_t i = 0; i < n && i < US_PREFETCH_AHEAD; i++) {
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
		rte_prefetch0(ep_meta(pkts[i]));
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct ep_meta *md = ep_meta(m);

		if (i + US_PREFETCH_AHEAD < n) {
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + US_PREFETCH_AHEAD], void *));
			rte_prefetch0(ep_meta(pkts[i + US_PREFETCH_AHEAD]));
		}
		cmts_prefetch_rest(m);
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *), *l2tp;
		struct ep_depi_info di;
		struct cmts_us_pkt *pd;
		struct cmts_us_chan *ch = NULL;
		uint32_t dst, l2tp_len;
		int rc = m->nb_segs == 1 ? ep_parse_mbuf(m, md) : EP_DROP_CMTS_UEPI_MALFORMED;
		int c;

		if (unlikely(rc != 0)) {
			next[i] = EP_NEXT_DROP(rc);
			out++;
			continue;
		}
		memcpy(&dst, p + md->l3_off + 16, 4);
		if (unlikely(md->l3_type != EP_L3_IPV4 || md->l4_proto != EP_IPPROTO_L2TP ||
			     (md->flags & EP_META_F_FRAGMENT) || dst != sg->cmts_ip)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_NOT_UEPI);
			out++;
			continue;
		}
		l2tp = p + md->l4_off;
		l2tp_len = (uint32_t)md->l3_off + md->l3_len - md->l4_off;
		if (unlikely(ep_depi_get_hdr(l2tp, l2tp_len, &di) < 0)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UEPI_MALFORMED);
			u->l2tp_invalid++;
			out++;
			continue;
		}
		for (c = 0; c < CMTS_MAX_US_CH; c++) {
			if (u->ch[c].in_use && u->ch[c].session == di.session) {
				ch = &u->ch[c];
				break;
			}
		}
		if (unlikely(ch == NULL)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UEPI_UNKNOWN_SESSION);
			u->l2tp_invalid++;
			out++;
			continue;
		}
		u->l2tp_valid++;
		ch->pkts++;
		pd = &u->pd[u->n_pd];
		md->user = u->n_pd++;
		memset(pd, 0, sizeof(*pd));
		pd->ch = (uint8_t)c;
		if (di.flags & EP_DEPI_S) {
			if (ch->seq_valid && di.seq != ch->next_seq) {
				pd->gap = true;
				ch->seq_errors++;
			}
			ch->next_seq = (uint16_t)(di.seq + 1);
			ch->seq_valid = true;
		}
		pd->pay_off = md->l4_off;
		pd->pay_len = (uint16_t)l2tp_len;
	}
	return out;
}

/* ---- uepi_decap ---- */

uint16_t
cmts_us_decap_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct cmts_us_pkt *pd = &u->pd[ep_meta(m)->user];
		const uint8_t *l2tp = rte_pktmbuf_mtod_offset(m, const uint8_t *, pd->pay_off);
		uint16_t seg[EP_PSP_MAX_SEGS];
		uint32_t pos, start = 0, len = 0;
		uint8_t count = l2tp[5];
		int off = ep_psp_parse(l2tp, pd->pay_len, count, seg, EP_PSP_MAX_SEGS);
		bool bad = off < 0;

		pos = (uint32_t)off;
		for (uint8_t k = 0; !bad && k < count; k++) {
			uint16_t sl = seg[k] & EP_PSP_LEN_MASK;
			bool b = seg[k] & EP_PSP_B, e = seg[k] & EP_PSP_E;

			if (b && e) {
				bad = true;     /* a whole PDU: DEPI style, not a UEPI unit */
			} else if (b) {
				struct ep_uepi_burst hb;

				if (k != 0 || sl < EP_UEPI_HDR_SEG_LEN) {
					bad = true;
					break;
				}
				ep_uepi_get_hdr_seg(l2tp + pos, &hb);
				pd->hdr_seg = true;
				pd->sid = hb.sid;
			} else if (e) {
				if (k != count - 1 || sl < EP_UEPI_TRL_SEG_LEN)
					bad = true;
				pd->trl_seg = true;
			} else {
				if (len == 0)
					start = pos;
				len += sl;
			}
			pos += sl;
		}
		if (unlikely(bad)) {
			next[i] = EP_NEXT_DROP(EP_DROP_CMTS_UEPI_MALFORMED);
			u->l2tp_invalid++;
			out++;
			continue;
		}
		pd->pay_off = (uint16_t)(pd->pay_off + start);
		pd->pay_len = (uint16_t)len;
	}
	return out;
}

/* ---- reassembly ---- */

/*
 * The length of the DOCSIS frame whose first @p avail bytes are at @p p:
 * 0 with *total, 1 when more bytes are needed to know, -1 when these bytes
 * cannot start a frame (the stream is out of sync).
 */
static __rte_always_inline int
frame_total(const uint8_t *p, uint32_t avail, uint32_t *total)
{
	uint8_t fc, ehdr;
	uint32_t len;

	if (avail < 1)
		return 1;
	fc = p[0];
	if (EP_DOCSIS_FC_TYPE(fc) == EP_DOCSIS_FCT_MAC) {
		uint8_t parm = EP_DOCSIS_FC_PARM(fc);

		if (parm == EP_DOCSIS_MAC_REQ || parm == EP_DOCSIS_MAC_CONCAT) {
			*total = EP_DOCSIS_HDR_MIN;
			return 0;
		}
		if (parm == EP_DOCSIS_MAC_QDB_REQ) {
			*total = EP_DOCSIS_HDR_MIN + 1;
			return 0;
		}
	}
	if (avail < 4)
		return 1;
	ehdr = (fc & EP_DOCSIS_FC_EHDR_ON) ? p[1] : 0;
	len = (uint32_t)(p[2] << 8 | p[3]);
	if (ehdr > EP_DOCSIS_EHDR_MAX || len < ehdr ||
	    EP_DOCSIS_HDR_MIN + len > CMTS_US_FRAME_MAX)
		return -1;
	*total = EP_DOCSIS_HDR_MIN + len;
	return 0;
}

static void
add_frame(struct cmts_us *u, struct cmts_us_pkt *pd, struct rte_mbuf *m, uint32_t off,
	  uint32_t len, bool own, uint16_t sid)
{
	struct cmts_us_frame *f;

	if (unlikely(u->n_fr == CMTS_US_MAX_FRAMES)) {
		u->stage[ST_REASM]->stats.drops[EP_DROP_CMTS_US_TOO_MANY_FRAMES]++;
		if (own)
			rte_pktmbuf_free(m);
		return;
	}
	f = &u->fr[u->n_fr++];
	memset(f, 0, sizeof(*f));
	f->m = m;
	f->off = (uint16_t)off;
	f->len = (uint16_t)len;
	f->own = own;
	f->sid = sid;
	pd->nf++;
}

static void
part_fail(struct cmts_us *u, struct cmts_us_chan *ch)
{
	if (ch->part != NULL) {
		rte_pktmbuf_free(ch->part);
		ch->part = NULL;
		ch->reasm_fail++;
		u->stage[ST_REASM]->stats.drops[EP_DROP_CMTS_REASSEMBLY_FAILED]++;
	}
}

static void
part_append(struct rte_mbuf *pm, const uint8_t *src, uint32_t k)
{
	memcpy(rte_pktmbuf_append(pm, (uint16_t)k), src, k);
}

uint16_t
cmts_us_reasm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct cmts_us_pkt *pd = &u->pd[ep_meta(m)->user];
		struct cmts_us_chan *ch = &u->ch[pd->ch];
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		uint32_t pos = pd->pay_off, end = pos + pd->pay_len;

		pd->f0 = (uint16_t)u->n_fr;
		pd->nf = 0;
		if (pd->gap) {
			part_fail(u, ch);
			if (ch->in_burst)
				ch->skip = true;
		}
		if (pd->hdr_seg) {
			part_fail(u, ch);
			ch->in_burst = true;
			ch->skip = false;
			ch->sid = pd->sid;
			ch->bursts++;
		} else if (!ch->in_burst) {
			ch->skip = true;
		}
		if (ch->skip)
			pos = end;
		/* Complete a frame cut at the end of the last packet. */
		while (ch->part != NULL && pos < end) {
			struct rte_mbuf *pm = ch->part;
			uint32_t have = pm->data_len, total = 0, k;
			int r = frame_total(rte_pktmbuf_mtod(pm, const uint8_t *), have, &total);

			if (r < 0) {
				part_fail(u, ch);
				ch->skip = true;
				pos = end;
				break;
			}
			k = r > 0 ? 4 - have : total - have;
			k = RTE_MIN(k, end - pos);
			part_append(pm, p + pos, k);
			pos += k;
			if (r == 0 && pm->data_len == total) {
				add_frame(u, pd, pm, 0, total, true, ch->sid);
				ch->part = NULL;
				ch->reasm_ok++;
			}
		}
		/* Whole frames, and a cut tail kept for the next packet. */
		while (pos < end) {
			uint32_t total;
			int r = frame_total(p + pos, end - pos, &total);

			if (unlikely(r < 0)) {
				u->stage[ST_REASM]->stats.drops[EP_DROP_CMTS_US_FRAME_MALFORMED]++;
				ch->skip = true;
				break;
			}
			if (r == 0 && total <= end - pos) {
				add_frame(u, pd, m, pos, total, false, ch->sid);
				pos += total;
				continue;
			}
			ch->part = rte_pktmbuf_alloc(u->pool);
			if (unlikely(ch->part == NULL)) {
				u->stage[ST_REASM]->stats.drops[EP_DROP_CMTS_NO_MBUF]++;
				ch->skip = true;
				break;
			}
			part_append(ch->part, p + pos, end - pos);
			break;
		}
		if (pd->trl_seg) {
			part_fail(u, ch);
			ch->in_burst = false;
		}
		u->frames_per_pkt[RTE_MIN(pd->nf, 7)]++;
	}
	return 0;
}

/* ---- extract ---- */

uint16_t
cmts_us_extract_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;

	for (uint32_t j = 0; j < u->n_fr; j++) {
		struct cmts_us_frame *f = &u->fr[j];
		const uint8_t *p = rte_pktmbuf_mtod_offset(f->m, const uint8_t *, f->off);
		struct ep_docsis_hdr h;

		u->frames++;
		if (unlikely(ep_docsis_parse(p, f->len, &h) != EP_DOCSIS_OK)) {
			frame_drop(u, ST_EXTRACT, f, EP_DROP_CMTS_US_FRAME_MALFORMED);
			continue;
		}
		if (unlikely(!ep_docsis_hcs_ok(p, h.hdr_len))) {
			u->hcs_fail++;
			frame_drop(u, ST_EXTRACT, f, EP_DROP_CMTS_HCS_BAD);
			continue;
		}
		u->hcs_ok++;
		if (EP_DOCSIS_FC_TYPE(h.fc) != EP_DOCSIS_FCT_PACKET) {
			/* Requests, concatenation headers, MAC management: for
			 * the MAC's control side, not forwarded here. */
			frame_drop(u, ST_EXTRACT, f, EP_DROP_CMTS_US_MAC_FRAME);
			continue;
		}
		if (unlikely(f->len - h.hdr_len < RTE_ETHER_HDR_LEN + EP_DOCSIS_CRC_LEN)) {
			frame_drop(u, ST_EXTRACT, f, EP_DROP_CMTS_US_FRAME_MALFORMED);
			continue;
		}
		f->hdr_len = h.hdr_len;
		if (h.bpi_type == EP_DOCSIS_EH_BP_UP || h.bpi_type == EP_DOCSIS_EH_BP_UP2) {
			f->sid = h.said;
			f->enc = h.enc;
			f->kseq = h.key_seq;
		}
	}
	return 0;
}

/* ---- decrypt ---- */

static void
decrypt_run(struct cmts_us *u, struct rte_crypto_op **ops, uint32_t *idx, uint16_t k)
{
	struct cmts *c = u->sg->c;
	struct rte_crypto_op *done[EP_BURST_MAX];
	uint16_t sent = rte_cryptodev_enqueue_burst(c->cdev, u->qp, ops, k), got = 0;

	for (uint16_t j = sent; j < k; j++) {
		u->op_free[u->n_op_free++] = ops[j];
		frame_drop(u, ST_DECRYPT, &u->fr[idx[j]], EP_DROP_CMTS_CRYPTO_FAILED);
	}
	/* Upstream frames are needed now, in this burst: wait for all.  They
	 * come back in the order they went in (intel-ipsec-mb completes jobs
	 * in submission order), so op j is frame idx[j]. */
	while (got < sent) {
		uint16_t d = rte_cryptodev_dequeue_burst(c->cdev, u->qp, done, sent - got);

		for (uint16_t j = 0; j < d; j++) {
			struct rte_crypto_op *op = done[j];
			struct cmts_us_frame *f = &u->fr[idx[got + j]];

			if (op->status == RTE_CRYPTO_OP_STATUS_SUCCESS) {
				u->decrypted++;
				if (op->sym->auth.data.length != 0)
					u->crc_ok++;
			} else if (op->status == RTE_CRYPTO_OP_STATUS_AUTH_FAILED) {
				u->crc_fail++;
				frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_CRC_BAD);
			} else {
				frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_CRYPTO_FAILED);
			}
			u->op_free[u->n_op_free++] = op;
		}
		got = (uint16_t)(got + d);
	}
}

uint16_t
cmts_us_decrypt_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;
	const struct cmts_sg *sg = u->sg;
	struct rte_crypto_op *ops[EP_BURST_MAX];
	uint32_t idx[EP_BURST_MAX];
	uint16_t k = 0;

	for (uint32_t j = 0; j < u->n_fr; j++) {
		struct cmts_us_frame *f = &u->fr[j];
		const struct cmts_cm *cm;
		const struct cmts_key *key;
		struct rte_crypto_op *op;
		struct rte_crypto_sym_op *s;
		uint32_t pdu, at;

		if (f->verdict != 0)
			continue;
		f->cm = __atomic_load_n(&sg->sid_cm[f->sid & (CMTS_SID_SPACE - 1)], __ATOMIC_ACQUIRE);
		cm = cmts_cm_of(sg, f->cm);
		if (unlikely(cm == NULL)) {
			frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_US_UNKNOWN_SID);
			continue;
		}
		pdu = (uint32_t)f->len - f->hdr_len;
		at = (uint32_t)f->off + f->hdr_len;
		if (!f->enc) {
			if (cm->bpi) {
				frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_US_UNENCRYPTED);
			} else if (sg->p.crc_verify) {
				const uint8_t *e = rte_pktmbuf_mtod_offset(f->m, const uint8_t *, at);
				uint32_t want = rte_net_crc_calc(e, pdu - EP_DOCSIS_CRC_LEN,
								 RTE_NET_CRC32_ETH), got;

				memcpy(&got, e + pdu - EP_DOCSIS_CRC_LEN, 4);
				if (rte_cpu_to_le_32(want) != got) {
					u->crc_fail++;
					frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_CRC_BAD);
				} else {
					u->crc_ok++;
				}
			}
			continue;
		}
		key = cm->key[f->kseq & 1];
		if (unlikely(key == NULL || key->kseq != f->kseq)) {
			frame_drop(u, ST_DECRYPT, f, EP_DROP_CMTS_US_KEY_UNKNOWN);
			continue;
		}
		op = u->op_free[--u->n_op_free];
		s = op->sym;
		op->status = RTE_CRYPTO_OP_STATUS_NOT_PROCESSED;
		op->sess_type = RTE_CRYPTO_OP_SECURITY_SESSION;
		s->session = key->sess_us;
		s->m_src = f->m;
		s->m_dst = NULL;
		memcpy(rte_crypto_op_ctod_offset(op, uint8_t *, CMTS_IV_OFF), key->iv, 16);
		s->auth.data.offset = at;
		s->auth.data.length = sg->p.crc_verify ? pdu - EP_DOCSIS_CRC_LEN : 0;
		s->cipher.data.offset = at + RTE_ETHER_HDR_LEN - RTE_ETHER_TYPE_LEN;
		s->cipher.data.length = pdu - (RTE_ETHER_HDR_LEN - RTE_ETHER_TYPE_LEN);
		ops[k] = op;
		idx[k++] = j;
		if (k == EP_BURST_MAX) {
			decrypt_run(u, ops, idx, k);
			k = 0;
		}
	}
	if (k != 0)
		decrypt_run(u, ops, idx, k);
	return 0;
}

/* ---- cm_lookup ---- */

uint16_t
cmts_us_cm_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;

	for (uint32_t j = 0; j < u->n_fr; j++) {
		struct cmts_us_frame *f = &u->fr[j];
		const struct cmts_cm *cm;
		const uint8_t *e;
		struct cmts_us_dyn *y;
		uint16_t et;
		bool mac_ok;

		if (f->verdict != 0)
			continue;
		cm = cmts_cm_of(u->sg, f->cm);
		if (unlikely(cm == NULL)) {
			frame_drop(u, ST_CM, f, EP_DROP_CMTS_US_UNKNOWN_SID);
			continue;
		}
		e = rte_pktmbuf_mtod_offset(f->m, const uint8_t *, f->off + f->hdr_len);
		mac_ok = ep_mac_eq(e + 6, &cm->mac);
		for (int k = 0; !mac_ok && k < cm->n_cpe; k++)
			mac_ok = cm->cpe[k].has_mac && ep_mac_eq(e + 6, &cm->cpe[k].mac);
		if (unlikely(!mac_ok)) {
			frame_drop(u, ST_CM, f, EP_DROP_CMTS_US_UNKNOWN_SOURCE_MAC);
			continue;
		}
		/* Source address verification: an IPv4/IPv6 source must be one
		 * of the CM's addresses of that family, when it has any
		 * (the unspecified address of DHCP/SLAAC is let through). */
		et = (uint16_t)(e[12] << 8 | e[13]);
		if (cm->n_cpe != 0 && (et == RTE_ETHER_TYPE_IPV4 || et == RTE_ETHER_TYPE_IPV6)) {
			uint32_t pdu = (uint32_t)f->len - f->hdr_len - EP_DOCSIS_CRC_LEN;
			uint8_t fam = et == RTE_ETHER_TYPE_IPV4 ? 4 : 6;
			uint32_t alen = fam == 4 ? 4 : 16, so = fam == 4 ? 14 + 12 : 14 + 8;
			static const uint8_t zero[16];
			bool any = false, ok = false;

			if (pdu >= so + alen && memcmp(e + so, zero, alen) != 0) {
				for (int k = 0; k < cm->n_cpe; k++) {
					if (cm->cpe[k].family != fam)
						continue;
					any = true;
					ok |= memcmp(cm->cpe[k].addr, e + so, alen) == 0;
				}
				if (any && !ok) {
					frame_drop(u, ST_CM, f, EP_DROP_CMTS_SPOOFED_SOURCE);
					continue;
				}
			}
		}
		y = &u->dyn[cm->id];
		if (unlikely(y->gen != cm->gen)) {
			memset(y, 0, sizeof(*y));
			y->gen = cm->gen;
		}
		y->pkts++;
		y->bytes += (uint32_t)f->len - f->hdr_len;
	}
	return 0;
}

/* ---- forward ---- */

uint16_t
cmts_us_forward_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct cmts_us *u = ctx;
	struct rte_mbuf *out[EP_BURST_MAX], *carriers[EP_BURST_MAX];
	uint16_t n_out = 0, n_free = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct cmts_us_pkt *pd = &u->pd[ep_meta(m)->user];
		int32_t last = -1;
		bool used = false;

		for (uint32_t j = pd->f0; j < (uint32_t)pd->f0 + pd->nf; j++)
			if (u->fr[j].verdict == 0 && !u->fr[j].own)
				last = (int32_t)j;
		for (uint32_t j = pd->f0; j < (uint32_t)pd->f0 + pd->nf; j++) {
			struct cmts_us_frame *f = &u->fr[j];
			uint32_t at = (uint32_t)f->off + f->hdr_len;
			uint16_t eth = (uint16_t)(f->len - f->hdr_len - EP_DOCSIS_CRC_LEN);
			struct rte_mbuf *o;

			if (f->verdict != 0) {
				if (f->own)
					rte_pktmbuf_free(f->m);
				continue;
			}
			if (f->own || (int32_t)j == last) {
				o = f->m;
				rte_pktmbuf_adj(o, (uint16_t)at);
				rte_pktmbuf_trim(o, (uint16_t)(o->data_len - eth));
				used |= !f->own;
			} else {
				o = rte_pktmbuf_alloc(u->pool);
				if (unlikely(o == NULL)) {
					u->stage[ST_FORWARD]->stats.drops[EP_DROP_CMTS_NO_MBUF]++;
					continue;
				}
				memcpy(rte_pktmbuf_append(o, eth),
				       rte_pktmbuf_mtod_offset(f->m, const uint8_t *, at), eth);
			}
			out[n_out++] = o;
			if (n_out == EP_BURST_MAX) {
				ep_worker_tx(u->w, u->net_port, out, n_out);
				n_out = 0;
			}
		}
		if (!used)
			carriers[n_free++] = m;
		next[i] = EP_NEXT_CONSUMED;
	}
	if (n_out != 0)
		ep_worker_tx(u->w, u->net_port, out, n_out);
	if (n_free != 0)
		rte_pktmbuf_free_bulk(carriers, n_free);
	return n;
}

/* ---- the worker ---- */

void
cmts_us_free(struct cmts_us *u)
{
	if (u == NULL)
		return;
	for (int c = 0; c < CMTS_MAX_US_CH; c++)
		rte_pktmbuf_free(u->ch[c].part);
	cmts_crypto_worker_fini(u->op_pool, u->op_free, u->n_op_free);
	rte_mempool_free(u->pool);
	rte_free(u->fr);
	rte_free(u->dyn);
	rte_free(u);
}

int
cmts_us_build(struct cmts_sg *sg, struct ep_worker *w, uint16_t tx, struct ep_err *err)
{
	static const struct { const char *name; ep_stage_fn fn; } st[ST__N] = {
		[ST_VERIFY] = { "uepi_verify", cmts_us_verify_stage },
		[ST_DECAP] = { "uepi_decap", cmts_us_decap_stage },
		[ST_REASM] = { "reassembly", cmts_us_reasm_stage },
		[ST_EXTRACT] = { "extract", cmts_us_extract_stage },
		[ST_DECRYPT] = { "decrypt", cmts_us_decrypt_stage },
		[ST_CM] = { "cm_lookup", cmts_us_cm_stage },
		[ST_FORWARD] = { "forward", cmts_us_forward_stage },
	};
	int socket = (int)rte_lcore_to_socket_id(w->lcore);
	char name[RTE_MEMPOOL_NAMESIZE];
	struct cmts_us *u;

	if (sg->n_us == EP_MAX_WORKERS)
		return ep_err_set(err, "cmts: too many upstream workers");
	u = rte_zmalloc_socket("cmts_us", sizeof(*u), RTE_CACHE_LINE_SIZE, socket);
	if (u == NULL)
		return ep_err_set(err, "cmts: out of memory for an upstream worker");
	u->sg = sg;
	u->w = w;
	u->net_port = tx;
	for (int c = 0; c < CMTS_MAX_US_CH; c++) {
		u->ch[c].in_use = sg->us_ch[c].in_use;
		u->ch[c].session = sg->us_ch[c].session;
	}
	u->dyn = rte_zmalloc_socket("cmts_usdyn", sizeof(u->dyn[0]) * (sg->p.max_cms + 1),
				    RTE_CACHE_LINE_SIZE, socket);
	u->fr = rte_malloc_socket("cmts_usfr", sizeof(u->fr[0]) * CMTS_US_MAX_FRAMES,
				  RTE_CACHE_LINE_SIZE, socket);
	snprintf(name, sizeof(name), "cmts_us_%u", w->id);
	/* Room for the largest DOCSIS frame: reassembly copies whole frames. */
	u->pool = rte_pktmbuf_pool_create(name, US_POOL, 256, EP_META_SIZE,
					  RTE_PKTMBUF_HEADROOM + CMTS_US_FRAME_MAX, socket);
	if (u->dyn == NULL || u->fr == NULL || u->pool == NULL) {
		cmts_us_free(u);
		return ep_err_set(err, "cmts: out of memory for an upstream worker");
	}
	snprintf(name, sizeof(name), "cmts_uops_%u", w->id);
	if (cmts_crypto_worker_init(sg->c, &u->op_pool, &u->op_free, &u->n_op_free, &u->qp, name,
				    socket, err) < 0) {
		cmts_us_free(u);
		return -1;
	}
	w->pipeline_ctx = u;
	sg->us[sg->n_us++] = u;
	for (int i = 0; i < ST__N; i++) {
		if (ep_worker_add_stage(w, st[i].name, st[i].fn, u, err) < 0)
			return -1;
		u->stage[i] = &w->stages[w->n_stages - 1];
	}
	return 0;
}
