/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DOCSIS MAC header parsing and building (ep_docsis.h).  The parser treats
 * its input as hostile: every EHDR element is bounded by the EHDR length,
 * the EHDR by LEN and by the bytes available, and an element's value is
 * read only when its length is the one the type defines.
 */
#include <rte_net_crc.h>

#include "ep_docsis.h"

uint16_t ep_crc16_x25_tab[EP_CRC16_DELTA_MAX][256];

/*
 * The delta tables: the CRC of a message that is zero except for byte x at
 * `after` bytes before the end, XOR the CRC of the all-zero message of the
 * same length -- the linear part of the CRC, which does not depend on the
 * preset, the final XOR or the bytes before.  Computed bit by bit with the
 * reflected polynomial 0x8408 (the CRC register starts at 0, so no preset
 * and no final XOR are applied: exactly the linear part).
 */
static void __attribute__((constructor))
crc16_delta_init(void)
{
	for (unsigned int x = 0; x < 256; x++) {
		uint16_t r = (uint16_t)x;      /* the byte enters the register... */

		for (unsigned int a = 0; a < EP_CRC16_DELTA_MAX; a++) {
			/* ...and each following (zero) byte shifts it 8 times. */
			for (int b = 0; b < 8; b++)
				r = (uint16_t)((r & 1) ? (r >> 1) ^ 0x8408 : r >> 1);
			ep_crc16_x25_tab[a][x] = r;
		}
	}
}

uint16_t
ep_docsis_hcs(const uint8_t *p, uint32_t n)
{
	return (uint16_t)rte_net_crc_calc(p, n, RTE_NET_CRC16_CCITT);
}

int
ep_docsis_parse(const uint8_t *p, uint32_t avail, struct ep_docsis_hdr *h)
{
	uint32_t pos, end;

	memset(h, 0, sizeof(*h));
	if (unlikely(avail < EP_DOCSIS_HDR_MIN))
		return EP_DOCSIS_TRUNCATED;
	h->fc = p[0];
	if (unlikely(EP_DOCSIS_FC_TYPE(h->fc) == EP_DOCSIS_FCT_MAC &&
		     EP_DOCSIS_FC_PARM(h->fc) == EP_DOCSIS_MAC_QDB_REQ)) {
		/* 2-byte MAC_PARM (bytes requested), SID, HCS: no PDU. */
		if (avail < EP_DOCSIS_HDR_MIN + 1)
			return EP_DOCSIS_TRUNCATED;
		h->len = (uint16_t)(p[3] << 8 | p[4]);       /* the SID */
		h->hdr_len = EP_DOCSIS_HDR_MIN + 1;
		h->frame_len = h->hdr_len;
		return EP_DOCSIS_OK;
	}
	h->len = (uint16_t)(p[2] << 8 | p[3]);
	if (EP_DOCSIS_FC_TYPE(h->fc) == EP_DOCSIS_FCT_MAC &&
	    EP_DOCSIS_FC_PARM(h->fc) == EP_DOCSIS_MAC_REQ) {
		/* Request frame: MAC_PARM = mini-slots, LEN = SID, no PDU. */
		h->hdr_len = EP_DOCSIS_HDR_MIN;
		h->frame_len = EP_DOCSIS_HDR_MIN;
		return EP_DOCSIS_OK;
	}
	if (EP_DOCSIS_FC_TYPE(h->fc) == EP_DOCSIS_FCT_MAC &&
	    EP_DOCSIS_FC_PARM(h->fc) == EP_DOCSIS_MAC_CONCAT) {
		/* Concatenation header: MAC_PARM = frame count, LEN = the
		 * frames that follow; the header itself is 6 bytes. */
		h->hdr_len = EP_DOCSIS_HDR_MIN;
		h->frame_len = EP_DOCSIS_HDR_MIN;
		return EP_DOCSIS_OK;
	}
	if (h->fc & EP_DOCSIS_FC_EHDR_ON)
		h->ehdr_len = p[1];
	if (unlikely(h->ehdr_len > EP_DOCSIS_EHDR_MAX))
		return EP_DOCSIS_BAD_EHDR;
	if (unlikely(h->len < h->ehdr_len))
		return EP_DOCSIS_BAD_LEN;
	h->hdr_len = (uint16_t)(EP_DOCSIS_HDR_MIN + h->ehdr_len);
	h->frame_len = (uint32_t)EP_DOCSIS_HDR_MIN + h->len;
	if (unlikely(avail < h->hdr_len))
		return EP_DOCSIS_TRUNCATED;
	pos = 4;
	end = 4u + h->ehdr_len;
	while (pos < end) {
		uint8_t type = p[pos] >> 4, len = p[pos] & 0x0f;
		const uint8_t *v = p + pos + 1;

		if (unlikely(pos + 1 + len > end))
			return EP_DOCSIS_BAD_EHDR;
		switch (type) {
		case EP_DOCSIS_EH_BP_DOWN:
		case EP_DOCSIS_EH_BP_UP:
		case EP_DOCSIS_EH_BP_UP2:
			if (len != (type == EP_DOCSIS_EH_BP_UP2 ? 3 : 4))
				return EP_DOCSIS_BAD_EHDR;
			h->bpi_type = type;
			h->key_seq = v[0] >> 4;
			h->bpi_version = v[0] & 0x0f;
			h->enc = (v[1] & 0x80) != 0;
			h->toggle = (v[1] & 0x40) != 0;
			h->said = (uint16_t)((v[1] & 0x3f) << 8 | v[2]);
			break;
		case EP_DOCSIS_EH_DS_SVC:
			if (len != 1 && len != 3 && len != 5)
				return EP_DOCSIS_BAD_EHDR;
			h->ds_len = len;
			h->traffic_prio = v[0] >> 5;
			if (len >= 3)
				h->dsid = (uint32_t)(v[0] & 0x0f) << 16 | (uint32_t)v[1] << 8 | v[2];
			if (len == 5) {
				h->seq_change = (v[0] >> 4) & 1;
				h->psn = (uint16_t)(v[3] << 8 | v[4]);
			}
			break;
		default:
			/* Other elements (request, path verify, extended, null
			 * padding) are skipped by their length. */
			break;
		}
		pos += 1u + len;
	}
	return EP_DOCSIS_OK;
}

uint16_t
ep_docsis_build(uint8_t *out, uint32_t room, const struct ep_docsis_pdu_spec *s,
		uint32_t pdu_len)
{
	uint16_t hl = ep_docsis_hdr_len(s);
	uint32_t eh = hl - EP_DOCSIS_HDR_MIN, len = eh + pdu_len;
	uint8_t *e = out + 4;

	if (room < hl || len > 0xffff || s->said > EP_DOCSIS_SAID_MAX || s->key_seq > 15 ||
	    s->dsid > EP_DOCSIS_DSID_MAX || s->traffic_prio > 7 ||
	    (s->bpi_type != 0 && s->bpi_type != EP_DOCSIS_EH_BP_DOWN &&
	     s->bpi_type != EP_DOCSIS_EH_BP_UP2) ||
	    (s->ds_len != 0 && s->ds_len != 1 && s->ds_len != 3 && s->ds_len != 5))
		return 0;
	out[0] = (uint8_t)(EP_DOCSIS_FCT_PACKET << 6 | (eh != 0 ? EP_DOCSIS_FC_EHDR_ON : 0));
	out[1] = (uint8_t)eh;
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	if (s->bpi_type != 0) {
		uint8_t bl = s->bpi_type == EP_DOCSIS_EH_BP_DOWN ? 4 : 3;

		e[0] = (uint8_t)(s->bpi_type << 4 | bl);
		e[1] = (uint8_t)(s->key_seq << 4 | EP_DOCSIS_BPI_VERSION);
		e[2] = (uint8_t)((s->enc ? 0x80 : 0) | ((s->key_seq & 1) ? 0x40 : 0) |
				 (s->said >> 8));
		e[3] = (uint8_t)s->said;
		if (bl == 4)
			e[4] = 0;
		e += 1 + bl;
	}
	if (s->ds_len != 0) {
		e[0] = (uint8_t)(EP_DOCSIS_EH_DS_SVC << 4 | s->ds_len);
		e[1] = (uint8_t)(s->traffic_prio << 5);
		if (s->ds_len >= 3) {
			e[1] |= (uint8_t)(s->dsid >> 16);
			e[2] = (uint8_t)(s->dsid >> 8);
			e[3] = (uint8_t)s->dsid;
		}
		if (s->ds_len == 5) {
			e[1] |= (uint8_t)((s->seq_change & 1) << 4);
			e[4] = (uint8_t)(s->psn >> 8);
			e[5] = (uint8_t)s->psn;
		}
	}
	ep_docsis_put_hcs(out + hl - 2, ep_docsis_hcs(out, (uint32_t)hl - 2));
	return hl;
}
