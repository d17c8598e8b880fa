/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * DOCSIS MAC frames: the MAC header, its extended headers (EHDR) and the
 * header check sequence, as CableLabs MAC and Upper Layer Protocols
 * Interface Specification (CM-SP-MULPIv3.1) section 6.2 defines them, and
 * the BPI+ privacy extended headers of the Security Specification
 * (CM-SP-SECv3.1; ITU-T J.125).  No allocation, explicit lengths: the
 * vCMTS stages, the unit tests and the fuzz target all use these.
 *
 *   byte 0     FC: FC_TYPE (2 bits) | FC_PARM (5) | EHDR_ON (1)
 *   byte 1     MAC_PARM: the EHDR length when EHDR_ON, else type-specific
 *   bytes 2-3  LEN (big endian): EHDR length + bytes after the HCS
 *   4..        EHDR: elements of a 4-bit type and 4-bit length, then value
 *   next 2     HCS: CRC-16 over FC .. end of EHDR
 *   then       the PDU: for a Packet PDU the Ethernet frame with its CRC-32
 *
 * Extended header elements used here (MULPIv3.1 table 6-?, "EH element
 * format"; values as Wireshark's DOCSIS dissector decodes them):
 *
 *   type 4, len 4  DS privacy (BP_DOWN): KEY_SEQ(4) | Version(4),
 *                  E(1) | T(1) | SAID(14), reserved(8)
 *   type 7, len 3  US privacy, version 2 (BP_UP2): KEY_SEQ(4) | Version(4),
 *                  E(1) | T(1) | SID(14)
 *   type 3, len 4  US privacy (BP_UP): as BP_UP2 plus a request byte (read
 *                  only; a CM may still send it)
 *   type 8, len 1  DS service: traffic priority(3) | reserved(5)
 *   type 8, len 3  + DSID (20 bits): TP(3) | rsvd(1) | DSID(20)
 *   type 8, len 5  + sequence change count and packet sequence number:
 *                  TP(3) | SCC(1) | DSID(20), PSN(16) (bonded flows)
 *
 * HCS: CRC-16 with the CCITT polynomial x^16 + x^12 + x^5 + 1 as ITU-T
 * X.25 uses it (reflected, preset 0xFFFF, ones' complement at the end:
 * "CRC-16/X-25"), transmitted least significant byte first.  That is
 * DPDK's RTE_NET_CRC16_CCITT; ep_docsis_hcs() is that call.  The vCMTS
 * downstream builds ~2 M headers a second whose bytes differ from a
 * per-modem template only in LEN and the DS service EH, so it updates a
 * template's HCS byte by byte instead (ep_crc16_x25_delta: the CRC is
 * affine in the message, so changing one byte d positions before the end
 * changes the CRC by a value that depends only on the change and d) --
 * ~6 cycles instead of ~45 for rte_net_crc_calc over 15 bytes on this
 * machine's EPYC.
 */
#ifndef EP_DOCSIS_H
#define EP_DOCSIS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>

#define EP_DOCSIS_HDR_MIN      6     /**< FC, MAC_PARM, LEN, HCS */
#define EP_DOCSIS_EHDR_MAX     240   /**< MULPI: EHDR at most 240 bytes */
#define EP_DOCSIS_HDR_MAX      (EP_DOCSIS_HDR_MIN + EP_DOCSIS_EHDR_MAX)
#define EP_DOCSIS_CRC_LEN      4     /**< the Ethernet PDU's CRC-32 */
#define EP_DOCSIS_PDU_MIN      64    /**< shortest Ethernet PDU with its CRC (IEEE 802.3) */
#define EP_DOCSIS_PDU_MAX      2000  /**< longest Ethernet PDU accepted (MULPI: 1518 + tags; 2000-byte frames) */

/* FC byte. */
#define EP_DOCSIS_FC_TYPE(fc)  ((uint8_t)((fc) >> 6))
#define EP_DOCSIS_FC_PARM(fc)  ((uint8_t)(((fc) >> 1) & 0x1f))
#define EP_DOCSIS_FC_EHDR_ON   0x01
#define EP_DOCSIS_FCT_PACKET   0     /**< Packet PDU (Ethernet frame) */
#define EP_DOCSIS_FCT_ISOLAT   2     /**< Isolation Packet PDU */
#define EP_DOCSIS_FCT_MAC      3     /**< MAC-specific header */
#define EP_DOCSIS_MAC_TIMING   0x00
#define EP_DOCSIS_MAC_MGMT     0x01
#define EP_DOCSIS_MAC_REQ      0x02
#define EP_DOCSIS_MAC_FRAG     0x03
#define EP_DOCSIS_MAC_QDB_REQ  0x04  /**< queue-depth based request: 7-byte header */
#define EP_DOCSIS_MAC_CONCAT   0x1c
#define EP_DOCSIS_FC_STUFF     0xff  /**< stuff byte between frames (DOCSIS over MPEG) */

/* EH element types. */
#define EP_DOCSIS_EH_REQUEST   1
#define EP_DOCSIS_EH_BP_UP     3
#define EP_DOCSIS_EH_BP_DOWN   4
#define EP_DOCSIS_EH_BP_UP2    7
#define EP_DOCSIS_EH_DS_SVC    8
#define EP_DOCSIS_EH_EXTENDED  15

#define EP_DOCSIS_BPI_VERSION  1     /**< BPI+ version in the privacy EH */
#define EP_DOCSIS_SAID_MAX     0x3fff
#define EP_DOCSIS_DSID_MAX     0xfffff

/** What ep_docsis_parse() found in a MAC header. */
struct ep_docsis_hdr {
	uint8_t fc;
	uint8_t ehdr_len;       /**< 0 when EHDR_ON is clear */
	uint16_t len;           /**< LEN field */
	uint16_t hdr_len;       /**< bytes from FC through HCS */
	uint32_t frame_len;     /**< hdr_len + bytes after the HCS: the whole frame */
	/* Privacy EH (BP_DOWN, BP_UP, BP_UP2), if present. */
	uint8_t bpi_type;       /**< 0: none, else EP_DOCSIS_EH_BP_* */
	uint8_t key_seq;        /**< 4 bits */
	uint8_t bpi_version;
	bool enc;               /**< E bit: the PDU is encrypted */
	bool toggle;            /**< T bit: odd key (LSB of the key sequence) */
	uint16_t said;          /**< SAID (downstream) or SID (upstream), 14 bits */
	/* DS service EH, if present. */
	uint8_t ds_len;         /**< 0: none; 1, 3 or 5 */
	uint8_t traffic_prio;
	uint8_t seq_change;
	uint32_t dsid;
	uint16_t psn;
};

/** Parse results (0 is success). */
enum ep_docsis_err {
	EP_DOCSIS_OK = 0,
	EP_DOCSIS_TRUNCATED,    /**< fewer bytes than the header needs */
	EP_DOCSIS_BAD_EHDR,     /**< EHDR longer than LEN or an element overruns it */
	EP_DOCSIS_BAD_LEN,      /**< LEN shorter than the EHDR */
};

/** CRC-16/X-25 of @p n bytes: the HCS of a header whose HCS starts at @p n. */
uint16_t ep_docsis_hcs(const uint8_t *p, uint32_t n);

/**
 * The change of a CRC-16/X-25 when a byte that is @p after bytes before
 * the end of the message changes by XOR @p x (after = 0: the last byte).
 * Valid for any message length and any preset: the CRC is affine in the
 * message bits.  @p after must be below EP_CRC16_DELTA_MAX.
 */
#define EP_CRC16_DELTA_MAX 32
extern uint16_t ep_crc16_x25_tab[EP_CRC16_DELTA_MAX][256];
static __rte_always_inline uint16_t
ep_crc16_x25_delta(uint8_t x, unsigned int after)
{
	return ep_crc16_x25_tab[after][x];
}

/** Write @p hcs at @p p as the MAC header carries it (LSB first). */
static __rte_always_inline void
ep_docsis_put_hcs(uint8_t *p, uint16_t hcs)
{
	p[0] = (uint8_t)hcs;
	p[1] = (uint8_t)(hcs >> 8);
}

static __rte_always_inline uint16_t
ep_docsis_get_hcs(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/** True when the HCS of the header at @p p (hdr_len bytes) verifies. */
static inline bool
ep_docsis_hcs_ok(const uint8_t *p, uint16_t hdr_len)
{
	return ep_docsis_hcs(p, (uint32_t)hdr_len - 2) == ep_docsis_get_hcs(p + hdr_len - 2);
}

/**
 * Parse the MAC header at @p p with @p avail readable bytes: FC, LEN, the
 * EHDR elements this file knows (others are skipped by their length).
 * Checks lengths only, not the HCS (ep_docsis_hcs_ok).  A 7-byte queue-depth
 * request header is recognised.  frame_len may exceed @p avail: the caller
 * decides whether the rest of the frame is still to come.
 */
int ep_docsis_parse(const uint8_t *p, uint32_t avail, struct ep_docsis_hdr *h);

/** How to build a Packet PDU header (ep_docsis_build). */
struct ep_docsis_pdu_spec {
	uint8_t bpi_type;       /**< 0, EP_DOCSIS_EH_BP_DOWN or EP_DOCSIS_EH_BP_UP2 */
	uint8_t key_seq;
	bool enc;
	uint16_t said;          /**< SAID (BP_DOWN) or SID (BP_UP2) */
	uint8_t ds_len;         /**< 0 (no DS service EH), 1, 3 or 5 */
	uint8_t traffic_prio;
	uint8_t seq_change;
	uint32_t dsid;
	uint16_t psn;
};

/** Header length ep_docsis_build() writes for @p s. */
static inline uint16_t
ep_docsis_hdr_len(const struct ep_docsis_pdu_spec *s)
{
	uint16_t eh = 0;

	if (s->bpi_type == 4)
		eh += 5;
	else if (s->bpi_type == 7)
		eh += 4;
	if (s->ds_len != 0)
		eh += (uint16_t)(1 + s->ds_len);
	return (uint16_t)(EP_DOCSIS_HDR_MIN + eh);
}

/**
 * Write a Packet PDU MAC header for a PDU of @p pdu_len bytes (the Ethernet
 * frame with its CRC) into @p out (@p room bytes), HCS included.  Returns
 * the header length, or 0 when it does not fit or a field is out of range.
 */
uint16_t ep_docsis_build(uint8_t *out, uint32_t room, const struct ep_docsis_pdu_spec *s,
			 uint32_t pdu_len);

#endif
