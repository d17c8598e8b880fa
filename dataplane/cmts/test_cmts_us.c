/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Upstream cases: UEPI packets built as an RPD sends them, carrying DOCSIS
 * frames as a cable modem sends them (BP_UP2 EH, CRC-32, BPI+), through the
 * cmts-us stages; the Ethernet frames on the network port must be exactly
 * the CM's.  Frames cut across UEPI packets at many offsets, sequence gaps,
 * bursts that end inside a frame, bad HCS and CRC, unknown sessions, SIDs
 * and keys, source checks, and UEPI packets truncated at every length.
 */
#include "test_cmts.h"

#include <arpa/inet.h>

#include "ep_depi.h"
#include "ep_docsis.h"
#include "test_pkt.h"

/* An Ethernet frame from CPE 198.19.<cm>.1 (MAC 02:00:00:02:00:<cm>). */
static uint16_t
cpe_frame(uint8_t *b, uint32_t cm, uint16_t size, uint16_t sport)
{
	struct tp_spec s = tp_default(0, IPPROTO_UDP);
	char a[32];

	memcpy(s.smac, (const uint8_t[]){ 0x02, 0, 0, 0x02, 0, (uint8_t)cm }, 6);
	memcpy(s.dmac, cb_net_port_mac, 6);
	snprintf(a, sizeof(a), "198.19.%u.1", cm);
	s.src4 = tp_ip4(a);
	s.dst4 = tp_ip4("198.18.0.2");
	s.sport = sport;
	s.payload = (uint16_t)(size - 14 - 20 - 8);
	return tp_build(b, &s);
}

static struct cb *
bed(const char *extra)
{
	char text[4096];
	size_t o;

	o = (size_t)snprintf(text, sizeof(text), "%s", cb_cm_line(1, 0, NULL));
	o += (size_t)snprintf(text + o, sizeof(text) - o, "%s", cb_cm_line(2, 1, NULL));
	snprintf(text + o, sizeof(text) - o, "%s", extra ? extra : "");
	return cb_new(text);
}

/* A burst of @p n frames of CM @p cm (sizes from @p sizes); returns its
 * length, the Ethernet frames in eth[], their lengths in elen[]. */
static uint32_t
burst_of(struct cb *t, uint32_t cm, int n, const uint16_t *sizes, uint8_t *burst,
	 uint8_t eth[][2048], uint16_t *elen)
{
	uint32_t len = 0;

	for (int i = 0; i < n; i++) {
		elen[i] = cpe_frame(eth[i], cm, sizes[i], (uint16_t)(4000 + i));
		len += cb_us_frame(t, cm, 1, eth[i], elen[i], burst + len);
	}
	return len;
}

/* Deliver @p k UEPI packets; check the frames that come out are exactly
 * eth[0..n) in order. */
static void
expect(struct cb *t, struct rte_mbuf **pk, uint16_t k, uint8_t eth[][2048], const uint16_t *elen,
       int n)
{
	struct rte_mbuf *out[256];
	uint16_t got = cb_us(t, pk, k, out, 256);

	EP_CHECK_EQ(got, n);
	for (int i = 0; i < got && i < n; i++) {
		EP_CHECK_EQ(out[i]->pkt_len, elen[i]);
		EP_CHECK_MEM(rte_pktmbuf_mtod(out[i], uint8_t *), eth[i], elen[i]);
	}
	rte_pktmbuf_free_bulk(out, got);
}

EP_TEST(us_single_frame_roundtrip)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[4096], eth[1][2048];
	uint16_t elen[1], seq = 0, sizes[] = { 84 }, k;
	struct rte_mbuf *pk[4];
	uint32_t len = burst_of(t, 1, 1, sizes, burst, eth, elen);

	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 1);
	cb_free(t);
}

EP_TEST(us_many_frames_in_order)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[16384], eth[10][2048];
	uint16_t elen[10], seq = 0, k;
	static const uint16_t sizes[10] = { 84, 256, 64, 500, 84, 84, 300, 256, 100, 64 };
	struct rte_mbuf *pk[4];
	uint32_t len = burst_of(t, 1, 10, sizes, burst, eth, elen);

	k = cb_uepi(t, CB_UEPI_SESSION(1), &seq, 1, burst, len, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 10);
	cb_free(t);
}

EP_TEST(us_frames_cut_across_packets_at_every_offset)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[8192], eth[3][2048];
	uint16_t elen[3], seq = 0, k;
	static const uint16_t sizes[3] = { 84, 300, 256 };
	struct rte_mbuf *pk[8];
	uint32_t len = burst_of(t, 1, 3, sizes, burst, eth, elen);
	struct cmts_us *u = t->us->pipeline_ctx;

	/* One cut at every offset of the burst (inside headers included)... */
	for (uint32_t c = 1; c < len; c++) {
		k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, &c, 1, pk);
		expect(t, pk, k, eth, elen, 3);
	}
	/* ...and three cuts, one byte apart, around the second frame's header. */
	for (uint32_t c = 90; c < 110; c++) {
		uint32_t cuts[3] = { c, c + 1, c + 2 };

		k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, cuts, 3, pk);
		expect(t, pk, k, eth, elen, 3);
	}
	EP_CHECK_EQ(u->ch[0].reasm_fail, 0);
	EP_CHECK(u->ch[0].reasm_ok >= len - 1);
	cb_free(t);
}

EP_TEST(us_sequence_gap_loses_the_cut_frame)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[8192], eth[4][2048];
	uint16_t elen[4], seq = 0;
	static const uint16_t sizes[4] = { 200, 200, 200, 200 };
	struct rte_mbuf *pk[8], *out[8];
	uint32_t len = burst_of(t, 1, 4, sizes, burst, eth, elen);
	uint32_t f0 = len / 4, cuts[2] = { f0 + 50, 2 * f0 + 60 };
	struct cmts_us *u = t->us->pipeline_ctx;
	uint16_t k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, cuts, 2, pk), got;

	EP_CHECK_EQ(k, 3);
	/* The middle packet is lost: frame 0 is whole in the first packet;
	 * frame 1 lost its end, and the rest of the burst is skipped. */
	rte_pktmbuf_free(pk[1]);
	pk[1] = pk[2];
	got = cb_us(t, pk, 2, out, 8);
	EP_CHECK_EQ(got, 1);
	EP_CHECK_MEM(rte_pktmbuf_mtod(out[0], uint8_t *), eth[0], elen[0]);
	rte_pktmbuf_free_bulk(out, got);
	EP_CHECK_EQ(u->ch[0].seq_errors, 1);
	EP_CHECK_EQ(u->ch[0].reasm_fail, 1);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_REASSEMBLY_FAILED), 1);
	/* The next burst is whole again. */
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, cuts, 2, pk);
	expect(t, pk, k, eth, elen, 4);
	cb_free(t);
}

EP_TEST(us_burst_ending_inside_a_frame)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[8192], eth[2][2048];
	uint16_t elen[2], seq = 0, k;
	static const uint16_t sizes[2] = { 300, 300 };
	struct rte_mbuf *pk[4];
	uint32_t len = burst_of(t, 1, 2, sizes, burst, eth, elen);

	/* The burst's bytes end 10 bytes before the second frame does. */
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len - 10, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 1);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_REASSEMBLY_FAILED), 1);
	cb_free(t);
}

EP_TEST(us_hcs_bad_dropped_rest_delivered)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[8192], eth[3][2048];
	uint16_t elen[3], seq = 0, k;
	static const uint16_t sizes[3] = { 100, 100, 100 };
	struct rte_mbuf *pk[4];
	uint32_t len = burst_of(t, 1, 3, sizes, burst, eth, elen), f0 = len / 3;

	burst[f0 + 5] ^= 0x01;          /* the 2nd frame's privacy EH: HCS fails */
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	memcpy(eth[1], eth[2], elen[2]);
	expect(t, pk, k, eth, elen, 2);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_HCS_BAD), 1);
	cb_free(t);
}

EP_TEST(us_crc_checked_only_when_on)
{
	static uint8_t burst[4096], eth[1][2048];
	uint16_t elen[1], seq = 0, k;
	static const uint16_t sizes[1] = { 300 };
	struct rte_mbuf *pk[4], *out[4];
	struct cb *t = bed("crc_verify = on\n");
	uint32_t len = burst_of(t, 1, 1, sizes, burst, eth, elen);

	burst[len - 20] ^= 0x40;        /* inside the encrypted PDU */
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_CRC_BAD), 1);
	cb_free(t);
	/* Intel's vCMTS reference benchmark setting (0 % upstream CRC
	 * verification): no check, the frame goes (damaged). */
	t = bed(NULL);
	len = burst_of(t, 1, 1, sizes, burst, eth, elen);
	burst[len - 20] ^= 0x40;
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	k = cb_us(t, pk, k, out, 4);
	EP_CHECK_EQ(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	cb_free(t);
}

EP_TEST(us_unknown_session_and_not_uepi)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[4096], eth[1][2048];
	uint16_t elen[1], seq = 0, k;
	static const uint16_t sizes[1] = { 84 };
	struct rte_mbuf *pk[4], *out[4];
	uint32_t len = burst_of(t, 1, 1, sizes, burst, eth, elen);
	uint8_t *p;

	k = cb_uepi(t, 0x7777, &seq, 1, burst, len, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_UEPI_UNKNOWN_SESSION), 1);
	/* Another destination address, another IP protocol. */
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	p = rte_pktmbuf_mtod(pk[0], uint8_t *);
	p[33] ^= 1;
	tp_fix_ipv4_cksum(p, 14);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	p = rte_pktmbuf_mtod(pk[0], uint8_t *);
	p[23] = 17;
	tp_fix_ipv4_cksum(p, 14);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_NOT_UEPI), 2);
	cb_free(t);
}

EP_TEST(us_unknown_sid_key_and_unencrypted)
{
	struct cb *t = bed("cm = id=9 mac=02:00:00:01:00:09 cpe=198.19.9.1@02:00:00:02:00:09 bg=1 "
			   "sid=9 bpi=off\n");
	static uint8_t burst[4096], eth[2][2048];
	uint16_t elen[2], seq = 0, k, n;
	struct rte_mbuf *pk[4], *out[4];

	/* A frame of CM 1 whose header (HCS recomputed) names SID 999. */
	elen[0] = cpe_frame(eth[0], 1, 200, 1);
	n = cb_us_frame(t, 1, 1, eth[0], elen[0], burst);
	{
		struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_UP2, .key_seq = 1,
						.enc = true, .said = 999 };

		ep_docsis_build(burst, 64, &s, elen[0] + 4u);
	}
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_US_UNKNOWN_SID), 1);
	/* The same frame claiming key sequence 2, which CM 1 does not have. */
	{
		struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_UP2, .key_seq = 2,
						.enc = true, .said = 1 };

		n = cb_us_frame(t, 1, 1, eth[0], elen[0], burst);
		ep_docsis_build(burst, 64, &s, elen[0] + 4u);
	}
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_US_KEY_UNKNOWN), 1);
	/* No privacy EH: the SID is the burst's.  CM 1 has BPI+ on: refused;
	 * CM 9 has it off: forwarded. */
	n = cb_us_frame(t, 1, -1, eth[0], elen[0], burst);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_US_UNENCRYPTED), 1);
	elen[1] = cpe_frame(eth[1], 9, 200, 1);
	n = cb_us_frame(t, 9, -1, eth[1], elen[1], burst);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 9, burst, n, NULL, 0, pk);
	expect(t, pk, k, eth + 1, elen + 1, 1);
	cb_free(t);
}

EP_TEST(us_source_mac_and_address_checks)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[4096], eth[1][2048];
	uint16_t elen[1], seq = 0, k, n;
	struct rte_mbuf *pk[4], *out[4];

	/* Another MAC than the CM's or its CPE's. */
	elen[0] = cpe_frame(eth[0], 1, 200, 1);
	eth[0][11] = 0x77;
	n = cb_us_frame(t, 1, 1, eth[0], elen[0], burst);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_US_UNKNOWN_SOURCE_MAC), 1);
	/* The CM's own MAC is fine; a source address of another CM is not. */
	elen[0] = cpe_frame(eth[0], 1, 200, 1);
	memcpy(eth[0] + 6, (const uint8_t[]){ 0x02, 0, 0, 1, 0, 1 }, 6);
	eth[0][14 + 14] = 2;            /* 198.19.2.1 */
	tp_fix_ipv4_cksum(eth[0], 14);
	n = cb_us_frame(t, 1, 1, eth[0], elen[0], burst);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	EP_CHECK_EQ(cb_us(t, pk, k, out, 4), 0);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_SPOOFED_SOURCE), 1);
	/* 0.0.0.0 (DHCP discover) is let through. */
	memset(eth[0] + 26, 0, 4);
	tp_fix_ipv4_cksum(eth[0], 14);
	n = cb_us_frame(t, 1, 1, eth[0], elen[0], burst);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, n, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 1);
	cb_free(t);
}

EP_TEST(us_mac_frames_not_forwarded)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[8192], eth[2][2048];
	uint16_t elen[2], seq = 0, k;
	struct rte_mbuf *pk[4];
	uint32_t len = 0;
	uint8_t req[6] = { 0xc4, 0x05, 0x00, 0x01, 0, 0 };

	ep_docsis_put_hcs(req + 4, ep_docsis_hcs(req, 4));
	elen[0] = cpe_frame(eth[0], 1, 100, 1);
	elen[1] = cpe_frame(eth[1], 1, 100, 2);
	len += cb_us_frame(t, 1, 1, eth[0], elen[0], burst + len);
	memcpy(burst + len, req, 6);    /* a bandwidth request between two frames */
	len += 6;
	len += cb_us_frame(t, 1, 1, eth[1], elen[1], burst + len);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 2);
	EP_CHECK_EQ(cb_drops(t->us, EP_DROP_CMTS_US_MAC_FRAME), 1);
	cb_free(t);
}

EP_TEST(us_uepi_truncated_at_every_length)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[4096], eth[2][2048], whole[4096];
	uint16_t elen[2], seq = 0, k, wl;
	static const uint16_t sizes[2] = { 84, 120 };
	struct rte_mbuf *pk[4], *out[4];
	uint32_t len = burst_of(t, 1, 2, sizes, burst, eth, elen);

	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	wl = (uint16_t)pk[0]->pkt_len;
	memcpy(whole, rte_pktmbuf_mtod(pk[0], uint8_t *), wl);
	rte_pktmbuf_free(pk[0]);
	/* Every length short of the whole, with the IP length made to match
	 * so that the UEPI layers are the ones cut. */
	for (uint16_t n = 0; n < wl; n++) {
		struct rte_mbuf *m = ep_test_mbuf(whole, n);

		if (n >= 34) {
			uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

			p[16] = (uint8_t)((n - 14) >> 8);
			p[17] = (uint8_t)(n - 14);
			tp_fix_ipv4_cksum(p, 14);
		}
		k = cb_us(t, &m, 1, out, 4);
		EP_CHECK_EQ(k, 0);
		rte_pktmbuf_free_bulk(out, k);
	}
	cb_free(t);
}

EP_TEST(us_key_roll_both_keys_accepted)
{
	struct cb *t = bed(NULL);
	static uint8_t burst[4096], eth[2][2048];
	uint16_t elen[2], seq = 0, k;
	uint8_t key[16], iv[16];
	struct rte_mbuf *pk[4];
	struct ep_err err;
	uint32_t len = 0;

	cb_key(1, 2, key, iv);
	EP_CHECK_EQ(cmts_key_set(t->sg, 1, 2, key, iv, &err), 0);
	elen[0] = cpe_frame(eth[0], 1, 300, 1);
	elen[1] = cpe_frame(eth[1], 1, 300, 2);
	len += cb_us_frame(t, 1, 1, eth[0], elen[0], burst + len);
	len += cb_us_frame(t, 1, 2, eth[1], elen[1], burst + len);
	k = cb_uepi(t, CB_UEPI_SESSION(0), &seq, 1, burst, len, NULL, 0, pk);
	expect(t, pk, k, eth, elen, 2);
	cb_free(t);
}
