/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DOCSIS MAC header, HCS and DEPI/UEPI helper cases: the HCS against the
 * CRC-16/X-25 check value and against rte_net_crc on random headers, the
 * delta tables against full recomputation, exact header bytes for the
 * downstream and upstream headers the vCMTS builds, the parser on every
 * truncation and malformed EHDR, and the PSP segment table.  Every parse
 * reads an exact-size heap copy, so under ASAN a read past the end fails.
 */
#include <stdlib.h>

#include "ep_test.h"
#include "ep_docsis.h"
#include "ep_depi.h"

static int
parse_copy(const uint8_t *p, uint32_t n, struct ep_docsis_hdr *h)
{
	uint8_t *c = malloc(n ? n : 1);
	int rc;

	memcpy(c, p, n);
	rc = ep_docsis_parse(c, n, h);
	free(c);
	return rc;
}

EP_TEST(hcs_is_crc16_x25_check_value)
{
	/* The catalogued check value of CRC-16/X-25 over "123456789". */
	EP_CHECK_EQ(ep_docsis_hcs((const uint8_t *)"123456789", 9), 0x906e);
}

EP_TEST(hcs_delta_tables_equal_full_recomputation)
{
	uint8_t h[20];

	srand(7);
	for (int t = 0; t < 2000; t++) {
		uint32_t n = 6 + (uint32_t)rand() % 14;
		uint32_t pos = (uint32_t)rand() % n;
		uint8_t x = (uint8_t)(1 + rand() % 255);
		uint16_t before, after;

		for (uint32_t i = 0; i < n; i++)
			h[i] = (uint8_t)rand();
		before = ep_docsis_hcs(h, n);
		h[pos] ^= x;
		after = ep_docsis_hcs(h, n);
		EP_CHECK_EQ(before ^ ep_crc16_x25_delta(x, n - 1 - pos), after);
	}
}

/* The downstream header of a bonded, encrypted flow: BP_DOWN (key sequence
 * 3, SAID 0x1234) and a 5-byte DS service EH (priority 5, DSID 0xabcde,
 * PSN 0x0102), for a 64-byte PDU.  Bytes worked out from MULPI 6.2 by
 * hand; the HCS from the check-value-verified function. */
EP_TEST(ds_header_bytes_exact)
{
	static const uint8_t want[15] = {
		0x01, 0x0b, 0x00, 0x4b,                 /* FC EHDR_ON, EHDR 11, LEN 11 + 64 */
		0x44, 0x31, 0xd2, 0x34, 0x00,           /* BP_DOWN: kseq 3 v1, E T SAID, rsvd */
		0x85, 0xaa, 0xbc, 0xde, 0x01, 0x02,     /* DS svc: TP 5 SCC 0 DSID, PSN */
	};
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_DOWN, .key_seq = 3, .enc = true,
		.said = 0x1234, .ds_len = 5, .traffic_prio = 5, .dsid = 0xabcde, .psn = 0x0102 };
	uint8_t out[32];
	uint16_t hcs;

	EP_CHECK_EQ(ep_docsis_hdr_len(&s), 17);
	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 64), 17);
	EP_CHECK_MEM(out, want, sizeof(want));
	hcs = ep_docsis_hcs(want, 15);
	EP_CHECK_EQ(out[15], hcs & 0xff);       /* LSB first */
	EP_CHECK_EQ(out[16], hcs >> 8);
	EP_CHECK(ep_docsis_hcs_ok(out, 17));
}

EP_TEST(us_header_bytes_exact)
{
	static const uint8_t want[10] = {
		0x01, 0x04, 0x00, 0x84,                 /* EHDR 4, LEN 4 + 128 */
		0x73, 0x21, 0x80, 0x2a,                 /* BP_UP2: kseq 2 v1, E, T=0, SID 42 */
	};
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_UP2, .key_seq = 2, .enc = true,
		.said = 42 };
	uint8_t out[16];

	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 128), 10);
	EP_CHECK_MEM(out, want, 8);
	EP_CHECK(ep_docsis_hcs_ok(out, 10));
}

EP_TEST(plain_header_has_no_ehdr)
{
	struct ep_docsis_pdu_spec s = { 0 };
	uint8_t out[8];

	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 100), 6);
	EP_CHECK_EQ(out[0], 0x00);
	EP_CHECK_EQ(out[1], 0x00);
	EP_CHECK_EQ(out[2] << 8 | out[3], 100);
}

EP_TEST(build_refuses_bad_fields)
{
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_DOWN, .said = 0x4000 };
	uint8_t out[32];

	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 64), 0);      /* SAID > 14 bits */
	s.said = 1;
	s.ds_len = 2;
	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 64), 0);      /* DS EH length 2 */
	s.ds_len = 5;
	EP_CHECK_EQ(ep_docsis_build(out, 16, &s, 64), 0);               /* no room */
	EP_CHECK_EQ(ep_docsis_build(out, sizeof(out), &s, 0x10000), 0); /* LEN overflow */
}

EP_TEST(parse_roundtrip_every_field)
{
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_DOWN, .key_seq = 9, .enc = true,
		.said = 0x3fff, .ds_len = 5, .traffic_prio = 7, .seq_change = 1, .dsid = 0xfffff,
		.psn = 0xfffe };
	struct ep_docsis_hdr h;
	uint8_t out[32];
	uint16_t hl = ep_docsis_build(out, sizeof(out), &s, 1500);

	EP_CHECK_EQ(parse_copy(out, hl, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.hdr_len, hl);
	EP_CHECK_EQ(h.frame_len, hl + 1500u);
	EP_CHECK_EQ(h.bpi_type, EP_DOCSIS_EH_BP_DOWN);
	EP_CHECK_EQ(h.key_seq, 9);
	EP_CHECK_EQ(h.bpi_version, EP_DOCSIS_BPI_VERSION);
	EP_CHECK(h.enc);
	EP_CHECK(h.toggle);
	EP_CHECK_EQ(h.said, 0x3fff);
	EP_CHECK_EQ(h.ds_len, 5);
	EP_CHECK_EQ(h.traffic_prio, 7);
	EP_CHECK_EQ(h.seq_change, 1);
	EP_CHECK_EQ(h.dsid, 0xfffff);
	EP_CHECK_EQ(h.psn, 0xfffe);
}

EP_TEST(parse_truncated_at_every_length)
{
	struct ep_docsis_pdu_spec s = { .bpi_type = EP_DOCSIS_EH_BP_DOWN, .said = 5, .ds_len = 3,
		.dsid = 7 };
	struct ep_docsis_hdr h;
	uint8_t out[32];
	uint16_t hl = ep_docsis_build(out, sizeof(out), &s, 64);

	for (uint16_t n = 0; n < hl; n++)
		EP_CHECK_EQ(parse_copy(out, n, &h), EP_DOCSIS_TRUNCATED);
	EP_CHECK_EQ(parse_copy(out, hl, &h), EP_DOCSIS_OK);
}

EP_TEST(parse_rejects_ehdr_overruns)
{
	uint8_t f[16] = { 0x01, 0x04, 0x00, 0x40, 0x45, 0, 0, 0, 0, 0 };
	struct ep_docsis_hdr h;

	/* BP_DOWN claims 5 value bytes inside a 4-byte EHDR. */
	EP_CHECK_EQ(parse_copy(f, 10, &h), EP_DOCSIS_BAD_EHDR);
	/* BP_DOWN with a length other than 4. */
	f[1] = 4;
	f[4] = 0x43;
	EP_CHECK_EQ(parse_copy(f, 10, &h), EP_DOCSIS_BAD_EHDR);
	/* DS service EH of length 2. */
	f[4] = 0x82;
	f[1] = 3;
	EP_CHECK_EQ(parse_copy(f, 9, &h), EP_DOCSIS_BAD_EHDR);
	/* LEN shorter than the EHDR. */
	f[1] = 4;
	f[2] = 0;
	f[3] = 3;
	f[4] = 0x44;
	EP_CHECK_EQ(parse_copy(f, 10, &h), EP_DOCSIS_BAD_LEN);
	/* EHDR above 240 bytes. */
	f[1] = 241;
	f[3] = 0xff;
	EP_CHECK_EQ(parse_copy(f, 16, &h), EP_DOCSIS_BAD_EHDR);
}

EP_TEST(parse_mac_specific_headers)
{
	static const uint8_t req[6] = { 0xc4, 0x05, 0x00, 0x2a, 0, 0 };
	static const uint8_t qdb[7] = { 0xc8, 0x01, 0x00, 0x00, 0x2a, 0, 0 };
	static const uint8_t cat[6] = { 0xf8, 0x02, 0x01, 0x00, 0, 0 };
	struct ep_docsis_hdr h;

	EP_CHECK_EQ(parse_copy(req, 6, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.frame_len, 6);
	EP_CHECK_EQ(parse_copy(qdb, 7, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.frame_len, 7);
	EP_CHECK_EQ(parse_copy(qdb, 6, &h), EP_DOCSIS_TRUNCATED);
	EP_CHECK_EQ(parse_copy(cat, 6, &h), EP_DOCSIS_OK);
	EP_CHECK_EQ(h.frame_len, 6);
}

EP_TEST(depi_header_roundtrip)
{
	struct ep_depi_info d;
	uint8_t p[8];

	ep_depi_put_hdr(p, 0x80001234, 5, 3, 0xbeef);
	EP_CHECK_EQ(p[4], 0x4a);                 /* S | flow 5 << 1 */
	EP_CHECK_EQ(ep_depi_get_hdr(p, 8, &d), 0);
	EP_CHECK_EQ(d.session, 0x80001234);
	EP_CHECK_EQ(d.flow_id, 5);
	EP_CHECK_EQ(d.count, 3);
	EP_CHECK_EQ(d.seq, 0xbeef);
	EP_CHECK_EQ(ep_depi_get_hdr(p, 7, &d), -1);
	memset(p, 0, 4);
	EP_CHECK_EQ(ep_depi_get_hdr(p, 8, &d), -1);   /* session 0: control */
}

EP_TEST(psp_table_must_add_up)
{
	uint8_t p[64] = { 0 };
	uint16_t seg[4];

	ep_depi_put_hdr(p, 1, 0, 2, 0);
	ep_psp_put_seg(p + 8, true, true, 20);
	ep_psp_put_seg(p + 10, true, false, 30);
	/* 8 + 4 + 50 bytes exactly. */
	EP_CHECK_EQ(ep_psp_parse(p, 62, 2, seg, 4), 12);
	EP_CHECK_EQ(seg[0], EP_PSP_B | EP_PSP_E | 20);
	EP_CHECK_EQ(seg[1], EP_PSP_B | 30);
	EP_CHECK_EQ(ep_psp_parse(p, 61, 2, seg, 4), -1);   /* one byte short */
	EP_CHECK_EQ(ep_psp_parse(p, 63, 2, seg, 4), -1);   /* one byte over */
	EP_CHECK_EQ(ep_psp_parse(p, 62, 2, seg, 1), -1);   /* more than max */
	EP_CHECK_EQ(ep_psp_parse(p, 62, 0, seg, 4), -1);   /* no segment */
	EP_CHECK_EQ(ep_psp_parse(p, 10, 2, seg, 4), -1);   /* table cut */
}

EP_TEST(uepi_burst_header_roundtrip)
{
	struct ep_uepi_burst b = { .flags = 0x40, .iuc = 6, .sid = 0x1234, .minislot = 0xa1b2c3d4 }, r;
	uint8_t p[8];

	ep_uepi_put_hdr_seg(p, &b);
	ep_uepi_get_hdr_seg(p, &r);
	EP_CHECK_EQ(r.flags, 0x40);
	EP_CHECK_EQ(r.iuc, 6);
	EP_CHECK_EQ(r.sid, 0x1234);
	EP_CHECK_EQ(r.minislot, 0xa1b2c3d4);
}

EP_TEST(mpeg_ts_header_for_docsis_pid)
{
	uint8_t p[4];

	ep_mpt_put_ts_hdr(p, true, 17);
	EP_CHECK_EQ(p[0], 0x47);
	EP_CHECK_EQ(p[1], 0x5f);                 /* PUSI, PID high bits */
	EP_CHECK_EQ(p[2], 0xfe);
	EP_CHECK_EQ(p[3], 0x11);                 /* payload only, cc 17 mod 16 */
}
