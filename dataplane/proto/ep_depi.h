/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Remote PHY pseudowires: L2TPv3 over IP (RFC 3931, IP protocol 115) data
 * sessions carrying DOCSIS toward and from a Remote PHY Device, as the
 * CableLabs Remote DOCSIS Timing Interface / Downstream External PHY
 * Interface (CM-SP-R-DEPI) and Upstream External PHY Interface
 * (CM-SP-R-UEPI) specifications define them.  No allocation, explicit
 * lengths.
 *
 *   L2TPv3 data message over IP (no cookie):
 *     0   session ID (32, never 0 for data)
 *     4   DEPI sub-layer header (4 bytes):
 *           V(1) S(1) H(2) Flow ID(3) R(1) | byte 1 | sequence number (16)
 *         D-MPT (pseudowire type 0x000C): byte 1 reserved, then N x 188-byte
 *           MPEG-TS packets carrying DOCSIS on PID 0x1FFE
 *         PSP (pseudowire type 0x000D): byte 1 = segment count, then the
 *           PSP segment table, one 16-bit entry per segment:
 *           B(1) E(1) length(14), then the segments back to back
 *
 * PSP segments: B marks the first segment of a PDU, E the last; B and E
 * together a whole PDU.  Downstream (DEPI PSP), a PDU is a DOCSIS MAC
 * frame, and one DEPI packet may carry several (PSP concatenation).
 * Upstream (UEPI), a PSP transmission unit is one upstream burst: a header
 * segment (B) of burst information, payload segments with the burst's
 * bytes (concatenated DOCSIS frames, cut at any byte: PSP fragmentation
 * across packets), and a trailer segment (E) of burst status.
 *
 *   UEPI header segment (8 bytes): version(2) | no-burst(1) | rsvd(5), IUC,
 *     scheduled SID (16), start minislot (32)
 *   UEPI trailer segment (8 bytes here; more with equaliser or vendor
 *     fields): status (16: version(2), ranging required, ..., FEC valid,
 *     SNR valid, EQ present, vendor present), good FEC blocks (16),
 *     corrected (8), uncorrected (8), burst SNR (16)
 *
 * DOCSIS over MPEG-TS (ITU-T J.83 Annex B transport, CM-SP-DRFI and MULPI's
 * "Downstream Transmission Convergence"): TS header 0x47, PUSI set when a
 * MAC frame starts in the packet (then the first payload byte is a
 * pointer_field: the offset of that start), PID 0x1FFE, payload only,
 * continuity counter mod 16; gaps are filled with 0xFF stuff bytes.
 */
#ifndef EP_DEPI_H
#define EP_DEPI_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>

#define EP_IPPROTO_L2TP        115
#define EP_L2TP_SESSION_LEN    4
#define EP_DEPI_SUBLAYER_LEN   4
#define EP_DEPI_HDR_LEN        (EP_L2TP_SESSION_LEN + EP_DEPI_SUBLAYER_LEN)

#define EP_DEPI_V              0x80
#define EP_DEPI_S              0x40   /**< sequence number valid */
#define EP_DEPI_H_MASK         0x30   /**< extended header present (not used here) */
#define EP_DEPI_FLOW_SHIFT     1
#define EP_DEPI_FLOW_MASK      0x0e

#define EP_PSP_B               0x8000
#define EP_PSP_E               0x4000
#define EP_PSP_LEN_MASK        0x3fff
#define EP_PSP_MAX_SEGS        255

#define EP_PW_MPT              0x000c /**< pseudowire type D-MPT (IANA L2TPv3 PW types) */
#define EP_PW_PSP              0x000d

#define EP_MPT_TS_LEN          188
#define EP_MPT_TS_HDR          4
#define EP_MPT_SYNC            0x47
#define EP_MPT_DOCSIS_PID      0x1ffe
#define EP_MPT_MAX_TS          7      /**< 7 x 188 = 1316 bytes: fits a 1500-byte MTU */

#define EP_UEPI_HDR_SEG_LEN    8
#define EP_UEPI_TRL_SEG_LEN    8
#define EP_UEPI_HDR_NO_BURST   0x20

/** The DEPI/UEPI sub-layer header fields. */
struct ep_depi_info {
	uint32_t session;
	uint8_t flags;          /**< byte 4: V, S, H, flow id */
	uint8_t flow_id;
	uint8_t count;          /**< byte 5: PSP segment count (reserved in D-MPT) */
	uint16_t seq;
};

/** Write the L2TPv3 session and the DEPI sub-layer header (8 bytes). */
static __rte_always_inline void
ep_depi_put_hdr(uint8_t *p, uint32_t session, uint8_t flow_id, uint8_t count, uint16_t seq)
{
	p[0] = (uint8_t)(session >> 24);
	p[1] = (uint8_t)(session >> 16);
	p[2] = (uint8_t)(session >> 8);
	p[3] = (uint8_t)session;
	p[4] = (uint8_t)(EP_DEPI_S | (flow_id << EP_DEPI_FLOW_SHIFT & EP_DEPI_FLOW_MASK));
	p[5] = count;
	p[6] = (uint8_t)(seq >> 8);
	p[7] = (uint8_t)seq;
}

/** Read the session and sub-layer header; -1 when @p len is too short or
 *  the session id is 0 (a control message on L2TPv3 over IP). */
static __rte_always_inline int
ep_depi_get_hdr(const uint8_t *p, uint32_t len, struct ep_depi_info *d)
{
	if (unlikely(len < EP_DEPI_HDR_LEN))
		return -1;
	d->session = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	d->flags = p[4];
	d->flow_id = (uint8_t)((p[4] & EP_DEPI_FLOW_MASK) >> EP_DEPI_FLOW_SHIFT);
	d->count = p[5];
	d->seq = (uint16_t)(p[6] << 8 | p[7]);
	return d->session == 0 ? -1 : 0;
}

static __rte_always_inline void
ep_psp_put_seg(uint8_t *p, bool b, bool e, uint16_t len)
{
	uint16_t v = (uint16_t)((b ? EP_PSP_B : 0) | (e ? EP_PSP_E : 0) | (len & EP_PSP_LEN_MASK));

	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static __rte_always_inline uint16_t
ep_psp_get_seg(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/**
 * A PSP packet's segments: the table after the sub-layer header at @p p
 * (@p len bytes from the session id on).  Fills seg[] (up to @p max) with
 * each table entry and returns the offset of the first segment's data from
 * @p p; -1 when the table does not fit, the count exceeds @p max or the
 * lengths do not add up to exactly the bytes after the table.
 */
static inline int
ep_psp_parse(const uint8_t *p, uint32_t len, uint8_t count, uint16_t *seg, unsigned int max)
{
	uint32_t off = EP_DEPI_HDR_LEN + 2u * count, sum = 0;

	if (unlikely(count == 0 || count > max || off > len))
		return -1;
	for (unsigned int i = 0; i < count; i++) {
		seg[i] = ep_psp_get_seg(p + EP_DEPI_HDR_LEN + 2 * i);
		sum += seg[i] & EP_PSP_LEN_MASK;
	}
	return sum == len - off ? (int)off : -1;
}

/** An MPEG-TS header for DOCSIS: @p pusi when a MAC frame starts in it. */
static __rte_always_inline void
ep_mpt_put_ts_hdr(uint8_t *p, bool pusi, uint8_t cc)
{
	p[0] = EP_MPT_SYNC;
	p[1] = (uint8_t)((pusi ? 0x40 : 0) | (EP_MPT_DOCSIS_PID >> 8));
	p[2] = (uint8_t)(EP_MPT_DOCSIS_PID & 0xff);
	p[3] = (uint8_t)(0x10 | (cc & 0x0f));     /* payload only */
}

/** UEPI header segment (8 bytes). */
struct ep_uepi_burst {
	uint8_t flags;          /**< version | EP_UEPI_HDR_NO_BURST */
	uint8_t iuc;
	uint16_t sid;           /**< scheduled SID */
	uint32_t minislot;
};

static __rte_always_inline void
ep_uepi_put_hdr_seg(uint8_t *p, const struct ep_uepi_burst *b)
{
	p[0] = b->flags;
	p[1] = b->iuc;
	p[2] = (uint8_t)(b->sid >> 8);
	p[3] = (uint8_t)b->sid;
	p[4] = (uint8_t)(b->minislot >> 24);
	p[5] = (uint8_t)(b->minislot >> 16);
	p[6] = (uint8_t)(b->minislot >> 8);
	p[7] = (uint8_t)b->minislot;
}

static __rte_always_inline void
ep_uepi_get_hdr_seg(const uint8_t *p, struct ep_uepi_burst *b)
{
	b->flags = p[0];
	b->iuc = p[1];
	b->sid = (uint16_t)(p[2] << 8 | p[3]);
	b->minislot = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
}

/** A minimal UEPI trailer segment: burst received, FEC counts valid. */
static __rte_always_inline void
ep_uepi_put_trl_seg(uint8_t *p, uint16_t good_fec)
{
	p[0] = 0x00;
	p[1] = 0x08;            /* FEC valid */
	p[2] = (uint8_t)(good_fec >> 8);
	p[3] = (uint8_t)good_fec;
	p[4] = 0;               /* corrected */
	p[5] = 0;               /* uncorrected */
	p[6] = 0;               /* SNR (not valid) */
	p[7] = 0;
}

#endif
