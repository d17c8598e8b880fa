/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ep_parse_ipv4_plain_x8 (ep_parse_x8.h) against the scalar checks it
 * stands for, ep_rx_not_for_us_words and ep_parse_ipv4_plain: crafted
 * frames that each break one check, in every lane of a burst of eight and
 * of every shorter burst, and mutated frames at random.  On a CPU without
 * AVX-512 (ep_parse_x8_usable false) the cases say so and check nothing:
 * the vector path never runs there.
 */
#include "ep_parse_x8.h"
#include "ep_rx.h"
#include "ep_test.h"
#include "test_pkt.h"

#ifdef EP_PARSE_X8

static uint8_t buf[2048];
static const uint8_t MAC[6] = {0x02, 0, 0, 0, 0x01, 0x01};
#define PORT 3

/* The mutated-frame cases' protocols. */
static const uint8_t x8_protos[] = { IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP, IPPROTO_GRE,
				     IPPROTO_ICMPV6 };

/* Frame @p sp (number @p k: every 17th to another host) as an mbuf,
 * mutated by tp_mutate (IPv4 header at @p l3, flips over @p span bytes
 * from 12), its ep_meta filled with 0x5a. */
static struct rte_mbuf *
x8_mutated(struct tp_spec *sp, int k, unsigned int l3, unsigned int span, uint64_t *x)
{
	struct rte_mbuf *m;
	uint32_t seg, frame;
	uint16_t len;

	if (k % 17 == 16)
		sp->dmac[3] = 0x77;
	len = tp_build(buf, sp);
	tp_mutate(buf, len, l3, span, x, &seg, &frame);
	m = ep_test_mbuf(buf, len);
	m->data_len = (uint16_t)seg;
	m->pkt_len = frame;
	memset(ep_meta(m), 0x5a, sizeof(struct ep_meta));
	return m;
}

/* True (and said) on a CPU without the vector path: a case checks nothing. */
static bool
x8_absent(void)
{
	if (ep_parse_x8_usable())
		return false;
	printf("    no AVX-512 F/BW/DQ/VBMI here: the vector path does not run\n");
	return true;
}

/* What the vector path must decide for a lane. */
enum want { WANT_OK, WANT_NOT_FOR_US, WANT_SCALAR };

/* Each call's loads the other form than the call before: both are
 * checked against the scalar path (ep_parse_x8.h, "The loads, two ways"). */
static unsigned int x8_calls;

static EP_X8_TARGET void
run_x8(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8 *x)
{
	uint32_t mac4;
	uint16_t mac2;

	ep_mac_words((const struct rte_ether_addr *)MAC, &mac4, &mac2);
	ep_parse_ipv4_plain_x8(m, lanes, mac4 | (uint64_t)mac2 << 32, PORT, x, x8_calls++ & 1);
}

/* The scalar verdict of lane @p m, its ep_meta as the scalar path writes
 * it into @p want_md (the router writes in_port beside the parse): of
 * ep_parse_ipv4_plain, or with @p qinq of ep_parse_qinq_ipv4_plain with
 * ep_meta.user = @p user beside it too. */
static enum want
scalar_of(struct rte_mbuf *m, bool qinq, uint64_t user, struct ep_meta *want_md)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t mac4;
	uint16_t mac2;
	int rc;

	ep_mac_words((const struct rte_ether_addr *)MAC, &mac4, &mac2);
	memset(want_md, 0x5a, sizeof(*want_md));
	if (RTE_MIN(m->data_len, m->pkt_len) < (qinq ? EP_PARSE_QINQ_X8_MIN : EP_PARSE_X8_MIN))
		return WANT_SCALAR;
	if (ep_rx_not_for_us_words(m, mac4, mac2))
		return WANT_NOT_FOR_US;
	want_md->in_port = PORT;
	if (qinq) {
		want_md->user = user;
		rc = ep_parse_qinq_ipv4_plain(p, m->data_len, m->pkt_len, want_md);
	} else {
		rc = ep_parse_ipv4_plain(p, m->data_len, m->pkt_len, want_md);
	}
	if (rc != 0) {
		memset(want_md, 0x5a, sizeof(*want_md));
		return WANT_SCALAR;
	}
	return WANT_OK;
}

static enum want
scalar(struct rte_mbuf *m, struct ep_meta *want_md)
{
	return scalar_of(m, false, 0, want_md);
}

/* Lane @p j's result in @p x against @p want; ep_meta written exactly
 * when the lane is OK, as the scalar path writes it.  Returns failures. */
static unsigned int
lane_wrong(const struct ep_parse_x8 *x, unsigned int j, struct rte_mbuf *m, enum want want,
	   const struct ep_meta *want_md)
{
	enum want got = (x->ok >> j) & 1 ? WANT_OK :
			(x->not_for_us >> j) & 1 ? WANT_NOT_FOR_US : WANT_SCALAR;

	return (got != want) + (((x->ok & x->not_for_us) >> j) & 1) +
	       (memcmp(ep_meta(m), want_md, sizeof(*want_md)) != 0);
}

/* The valid frame of the cases: IPv4 UDP, 60 bytes, to MAC. */
static uint16_t
base_frame(void)
{
	struct tp_spec sp = tp_default(0, IPPROTO_UDP);

	memcpy(sp.dmac, MAC, 6);
	return tp_build(buf, &sp);
}

static void
set_tlen(uint16_t tlen)
{
	buf[16] = (uint8_t)(tlen >> 8);
	buf[17] = (uint8_t)tlen;
}

/* Header checksum recomputed after a case's edit, so that only the
 * check the case is about fails. */
static void
fix_cksum(void)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(buf + RTE_ETHER_HDR_LEN);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

struct x8_case {
	const char *what;
	enum want want;
};

static const struct x8_case cases[] = {
	{ "as built", WANT_OK },
	{ "another unicast MAC (last byte)", WANT_NOT_FOR_US },
	{ "another unicast MAC (first byte)", WANT_NOT_FOR_US },
	{ "multicast to another MAC", WANT_OK },
	{ "broadcast", WANT_OK },
	{ "EtherType IPv6", WANT_SCALAR },
	{ "a VLAN tag", WANT_SCALAR },
	{ "version 6", WANT_SCALAR },
	{ "IHL 6 (options)", WANT_SCALAR },
	{ "more fragments", WANT_SCALAR },
	{ "fragment offset 1", WANT_SCALAR },
	{ "fragment offset's high bits", WANT_SCALAR },
	{ "DF alone", WANT_OK },
	{ "reserved flag alone", WANT_OK },
	{ "total length 19", WANT_SCALAR },
	{ "total length one past the frame", WANT_SCALAR },
	{ "total length short of the frame (padding)", WANT_OK },
	{ "checksum one off", WANT_SCALAR },
	{ "an all-zero IPv4 header (sum 0)", WANT_SCALAR },
	{ "UDP header cut by the total length", WANT_SCALAR },
	{ "TCP header cut by the total length", WANT_SCALAR },
	{ "GRE (no L4 minimum)", WANT_OK },
	{ "ICMP", WANT_OK },
	{ "protocol 200 (the table's upper half)", WANT_OK },
	{ "first segment of 35 bytes", WANT_SCALAR },
	{ "first segment of 36 bytes, GRE", WANT_OK },
	{ "frame shorter than its first segment", WANT_SCALAR },
	{ "frame longer than its first segment", WANT_OK },
};

/* Case @p c as an mbuf. */
static struct rte_mbuf *
case_mbuf(unsigned int c)
{
	uint16_t len = base_frame();
	uint32_t seg = len, frame = len;
	struct rte_mbuf *m;

	switch (c) {
	case 1: buf[5] ^= 1; break;
	case 2: buf[0] ^= 2; break;
	case 3: buf[0] |= 1; buf[5] ^= 1; break;
	case 4: memset(buf, 0xff, 6); break;
	case 5: buf[12] = 0x86; buf[13] = 0xdd; break;
	case 6: buf[12] = 0x81; buf[13] = 0x00; break;
	case 7: buf[14] = 0x65; fix_cksum(); break;
	case 8: buf[14] = 0x46; fix_cksum(); break;
	case 9: buf[20] |= 0x20; fix_cksum(); break;
	case 10: buf[21] = 1; fix_cksum(); break;
	case 11: buf[20] |= 0x10; fix_cksum(); break;
	case 12: buf[20] = 0x40; fix_cksum(); break;
	case 13: buf[20] = 0x80; fix_cksum(); break;
	case 14: set_tlen(19); fix_cksum(); break;
	case 15: set_tlen((uint16_t)(len - RTE_ETHER_HDR_LEN + 1)); fix_cksum(); break;
	case 16: set_tlen(20 + 8); fix_cksum(); break;
	case 17: buf[25] ^= 1; break;
	case 18:
		/* A sum of 0 folds to 0, not 0xffff: only an all-zero header
		 * has it (so its version is wrong too). */
		memset(buf + 14, 0, 20);
		break;
	case 19: set_tlen(20 + 7); fix_cksum(); break;
	case 20: buf[23] = IPPROTO_TCP; set_tlen(20 + 19); fix_cksum(); break;
	case 21: buf[23] = IPPROTO_GRE; fix_cksum(); break;
	case 22: buf[23] = IPPROTO_ICMP; fix_cksum(); break;
	case 23: buf[23] = 200; fix_cksum(); break;
	case 24: seg = 35; break;
	case 25: buf[23] = IPPROTO_GRE; fix_cksum(); seg = 36; break;
	case 26: frame = 40; break;
	case 27: frame = len + 100u; set_tlen((uint16_t)(len + 100 - RTE_ETHER_HDR_LEN)); fix_cksum(); break;
	default: break;
	}
	m = ep_test_mbuf(buf, len);
	m->data_len = (uint16_t)seg;
	m->pkt_len = frame;
	memset(ep_meta(m), 0x5a, sizeof(struct ep_meta));
	return m;
}

/*
 * Each case in each lane of a burst of eight whose other lanes are valid,
 * and as the last lane of a shorter burst (lanes past it are NULL: a lane
 * outside the mask is not read): the case's lane gets its verdict, the
 * others OK, and ep_meta is as the scalar path writes it.
 */
EP_TEST(ipv4_plain_x8_decides_each_check_alone_in_every_lane)
{
	unsigned int wrong = 0, ran = 0;

	if (x8_absent())
		return;
	for (unsigned int c = 0; c < RTE_DIM(cases); c++) {
		for (unsigned int lane = 0; lane < 8; lane++) {
			for (int shorter = 0; shorter < 2; shorter++) {
				struct rte_mbuf *m[8] = { NULL };
				unsigned int n = shorter ? lane + 1 : 8;
				struct ep_meta want_md;
				struct ep_parse_x8 x;
				unsigned int w = 0;

				for (unsigned int j = 0; j < n; j++)
					m[j] = case_mbuf(j == lane ? c : 0);
				run_x8(m, (__mmask8)((1u << n) - 1), &x);
				for (unsigned int j = 0; j < n; j++) {
					enum want s = scalar(m[j], &want_md);

					/* The case is what its table says, by the scalar path too. */
					w += s != (j == lane ? cases[c].want : WANT_OK);
					w += lane_wrong(&x, j, m[j], s, &want_md);
				}
				w += (x.ok | x.not_for_us) >> n != 0;
				if (w != 0)
					printf("    case '%s' lane %u of %u: %u wrong\n", cases[c].what,
					       lane, n, w);
				wrong += w;
				ran++;
				rte_pktmbuf_free_bulk(m, n);
			}
		}
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK_EQ(ran, RTE_DIM(cases) * 16);
}

/*
 * 4,000 bursts of 1..8 frames, IPv4 and IPv6, tagged and untagged,
 * mutated (tp_mutate: header bytes, segment and frame lengths, total
 * length) and with other destination MACs: every lane the same verdict
 * and ep_meta as the scalar checks; each verdict seen many times.
 */
EP_TEST(ipv4_plain_x8_agrees_with_the_scalar_checks_on_mutated_frames)
{
	uint64_t x = 0x5851f42d4c957f2dull;
	unsigned int wrong = 0, seen[3] = { 0 };

	if (x8_absent())
		return;
	for (int b = 0; b < 4000; b++) {
		struct rte_mbuf *m[8] = { NULL };
		unsigned int n = 1 + b % 8;
		struct ep_parse_x8 r;

		for (unsigned int j = 0; j < n; j++) {
			int k = b * 8 + (int)j;
			struct tp_spec sp = tp_default(k % 11 == 10, x8_protos[k % 5]);

			memcpy(sp.dmac, MAC, 6);
			sp.n_vlans = k % 13 == 12;
			m[j] = x8_mutated(&sp, k, RTE_ETHER_HDR_LEN, 24, &x);
		}
		run_x8(m, (__mmask8)((1u << n) - 1), &r);
		for (unsigned int j = 0; j < n; j++) {
			struct ep_meta want_md;
			enum want s = scalar(m[j], &want_md);

			seen[s]++;
			wrong += lane_wrong(&r, j, m[j], s, &want_md);
		}
		rte_pktmbuf_free_bulk(m, n);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(seen[WANT_OK] > 5000);
	EP_CHECK(seen[WANT_NOT_FOR_US] > 500);
	EP_CHECK(seen[WANT_SCALAR] > 2000);
}

/* The QinQ path's lanes, ep_meta written for its ok lanes with user
 * @p user. */
static EP_X8_TARGET void
run_qinq_x8(struct rte_mbuf *const *m, __mmask8 lanes, uint64_t user, __mmask8 *ok,
	    __mmask8 *not_for_us, uint32_t ports[8], uint32_t dst[8])
{
	struct ep_parse_x8_in in;
	struct ep_parse_qinq_x8 x;
	uint32_t mac4;
	uint16_t mac2;
	uint64_t p[8];

	ep_mac_words((const struct rte_ether_addr *)MAC, &mac4, &mac2);
	ep_parse_qinq_x8_load(m, lanes, &in, x8_calls++ & 1);
	ep_parse_qinq_x8_check(&in, mac4 | (uint64_t)mac2 << 32, PORT, &x);
	ep_parse_qinq_x8_store(&x, in.mb, x.ok, user);
	*ok = x.ok;
	*not_for_us = x.not_for_us;
	_mm512_storeu_si512(p, x.ports);
	for (int j = 0; j < 8; j++)
		ports[j] = (uint32_t)p[j];
	_mm512_storeu_si512(p, x.dst);
	for (int j = 0; j < 8; j++)
		dst[j] = (uint32_t)p[j] | (uint32_t)(p[j] >> 32);  /* the high half must be 0 */
}

/*
 * 6,000 bursts of 1..8 frames with 0, 1 or 2 tags of every accepted TPID
 * and of one that is not a TPID, IPv4 and IPv6, five protocols, mutated
 * (tp_mutate over the tags and the IPv4 header at 22) and with other
 * destination MACs: every lane the same verdict and ep_meta (both TCIs,
 * in_port, user) as ep_parse_qinq_ipv4_plain, the ports word the frame's
 * bytes 42..45, the destination its bytes 38..41 in host order (and
 * nothing in the lane's high half), and each verdict seen many times.
 */
EP_TEST(qinq_ipv4_plain_x8_agrees_with_the_scalar_qinq_parse_on_mutated_frames)
{
	static const uint16_t tpids[] = { RTE_ETHER_TYPE_VLAN, RTE_ETHER_TYPE_QINQ,
					  EP_ETHER_TYPE_QINQ_9100, 0x8847 };
	uint64_t x = 0x2545f4914f6cdd1dull;
	unsigned int wrong = 0, seen[3] = { 0 };

	if (x8_absent())
		return;
	for (int b = 0; b < 6000; b++) {
		struct rte_mbuf *m[8] = { NULL };
		unsigned int n = 1 + b % 8;
		const uint64_t user = 0x1122334455667700ull | (uint64_t)b;
		__mmask8 ok, nfu;
		uint32_t ports[8], dst[8];

		for (unsigned int j = 0; j < n; j++) {
			int k = b * 8 + (int)j;
			struct tp_spec sp = tp_default(k % 11 == 10, x8_protos[k % 5]);

			memcpy(sp.dmac, MAC, 6);
			sp.n_vlans = k % 13 == 12 ? k % 2 : 2;
			sp.tpid[0] = tpids[(k / 3) % 4 == 3 && k % 7 != 0 ? 0 : (k / 3) % 4];
			sp.tpid[1] = tpids[k % 19 == 0 ? 3 : (k / 5) % 3];
			sp.vid[0] = (uint16_t)(k % 4096);
			sp.vid[1] = (uint16_t)((k * 7) % 4096);
			sp.payload = (uint16_t)(k % 3 == 0 ? 0 : 18 + k % 40);
			m[j] = x8_mutated(&sp, k, 22, 30, &x);
		}
		run_qinq_x8(m, (__mmask8)((1u << n) - 1), user, &ok, &nfu, ports, dst);
		wrong += (ok | nfu) >> n != 0;
		for (unsigned int j = 0; j < n; j++) {
			struct ep_meta want_md;
			enum want s = scalar_of(m[j], true, user, &want_md);
			enum want got = (ok >> j) & 1 ? WANT_OK :
					(nfu >> j) & 1 ? WANT_NOT_FOR_US : WANT_SCALAR;
			uint32_t p42, d38;

			seen[s]++;
			wrong += (got != s) + (((ok & nfu) >> j) & 1) +
				 (memcmp(ep_meta(m[j]), &want_md, sizeof(want_md)) != 0);
			if (s == WANT_OK) {
				memcpy(&p42, rte_pktmbuf_mtod(m[j], const uint8_t *) + 42, 4);
				memcpy(&d38, rte_pktmbuf_mtod(m[j], const uint8_t *) + 38, 4);
				wrong += ports[j] != p42 || dst[j] != rte_be_to_cpu_32(d38);
			}
		}
		rte_pktmbuf_free_bulk(m, n);
	}
	EP_CHECK_EQ(wrong, 0);
	EP_CHECK(seen[WANT_OK] > 5000);
	EP_CHECK(seen[WANT_NOT_FOR_US] > 800);
	EP_CHECK(seen[WANT_SCALAR] > 10000);
	printf("    lanes: %u ok, %u not for us, %u left to the scalar path\n", seen[WANT_OK],
	       seen[WANT_NOT_FOR_US], seen[WANT_SCALAR]);
}

/* ep_x8_table against the table itself, for all 256 indexes and with
 * junk in the bytes of each lane it must ignore. */
static EP_X8_TARGET void
table_x8(const uint8_t tbl[256], const uint64_t idx[8], uint64_t out[8])
{
	_mm512_storeu_si512(out, ep_x8_table(tbl, _mm512_loadu_si512(idx)));
}

EP_TEST(x8_table_lookup_reads_every_entry_of_a_256_byte_table)
{
	uint8_t tbl[256];
	unsigned int wrong = 0;

	if (x8_absent())
		return;
	for (int i = 0; i < 256; i++)
		tbl[i] = (uint8_t)(i * 37 + 11);
	for (int i = 0; i < 256; i += 8) {
		uint64_t idx[8], out[8];

		for (int j = 0; j < 8; j++)
			idx[j] = (uint64_t)(i + j) | 0xa5c3e1f0b4d29600ull;
		table_x8(tbl, idx, out);
		for (int j = 0; j < 8; j++)
			wrong += out[j] != tbl[i + j];
	}
	EP_CHECK_EQ(wrong, 0);
}

#endif
