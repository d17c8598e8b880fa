/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * ep_parse_ipv4_plain and the destination-MAC check for eight frames at
 * once, with AVX-512 (F, BW, DQ, VBMI; where the CPU has them): the checks
 * of the commonest frame (untagged IPv4 without options, not a fragment,
 * lengths, the RFC 1071 header checksum, the L4 header inside the packet)
 * as vector compares over eight lanes, one per frame.
 *
 * Why by hand: no DPDK library validates headers (rte_net_get_ptype
 * classifies; it checks neither lengths against the frame nor the
 * checksum), and the scalar plain path is ~75 instructions a packet in the
 * router's parse loop (objdump of parse_node.c: the frame's fields one
 * load each, a setcc and an or per check, the checksum's shifts and adds,
 * eight byte and word stores into ep_meta), at ~14 cycles a packet.  Here
 * a lane's fields (buf_addr, data_off and pkt_len/data_len of the mbuf;
 * the frame's 8-byte words at 0, 12, 20 and 28) come from full-width loads
 * of each mbuf's first line and each frame's first bytes, turned into
 * per-field vectors by shuffles (ep_x8_load_mbufs, ep_x8_frame_words:
 * gathers cost more, below), every check is one vector operation for
 * eight frames, and ep_meta's first 12 bytes are one 8-byte and one
 * 4-byte store (two scatters measured no faster).
 *
 * The loads and the checks are two functions: the loads of a group wait
 * for its mbufs' lines and then its frames' (when they were gathers,
 * ~16-26 TSC cycles of latency each on an Intel Xeon, each group of eight
 * waited ~50 cycles for its own); a caller that loads every group of its
 * burst before it checks the first overlaps them (router parse 12.6 ->
 * 10.4 cycles a packet in test_router_cycles).  Measured in
 * docs/benchmarks/router-passes.md, "The eighth pass".
 *
 * What it decides, per lane of @p lanes:
 *   - eligible: first segment and frame both at least EP_PARSE_X8_MIN
 *     bytes (every byte the loads read is inside the frame's data);
 *     other lanes are in neither result and left to the scalar path
 *   - not_for_us: a unicast destination MAC that is not @p mac, as
 *     ep_rx_not_for_us_words decides it
 *   - ok: for us, and ep_parse_ipv4_plain would return 0; ep_meta's
 *     in_port (@p in_port), l3_off, l4_off, l3_len, l3_type, l4_proto,
 *     n_vlans and flags written as ep_parse_ipv4_plain writes them, and
 *     nothing else of it
 * A lane in neither is untouched: the caller runs its scalar parse on it,
 * which names the drop reason of a malformed frame.  test_parse_x8 checks
 * every lane against ep_rx_not_for_us_words and ep_parse_ipv4_plain.
 */
#ifndef EP_PARSE_X8_H
#define EP_PARSE_X8_H

#ifdef RTE_ARCH_X86_64
#define EP_PARSE_X8 1

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <immintrin.h>
#include <rte_cpuflags.h>

#include "ep_parse.h"

/* The build's -march is DPDK's (pkg-config's -march=corei7 comes after
 * the project's own flags), so the AVX-512 code is compiled for its
 * functions alone and chosen at run time (ep_parse_x8_usable). */
#define EP_X8_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi")))

/** Whether this CPU runs the functions below (else: the scalar path). */
static inline bool
ep_parse_x8_usable(void)
{
	return rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512DQ) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VBMI) > 0;
}

/** What the loads of a lane outside the mask read instead (ep_parse.c). */
extern const uint8_t ep_x8_dummy_line[64];

/** Bytes of a frame (first segment and whole) the untagged loads read:
 *  the last is the 8-byte word at 28, which holds the IPv4 destination. */
#define EP_PARSE_X8_MIN 36u

_Static_assert(offsetof(struct rte_mbuf, data_len) == offsetof(struct rte_mbuf, pkt_len) + 4,
	       "pkt_len and data_len in one 8-byte word");
_Static_assert(offsetof(struct ep_meta, in_port) == 0 && offsetof(struct ep_meta, l3_off) == 2 &&
	       offsetof(struct ep_meta, l4_off) == 4 && offsetof(struct ep_meta, l3_len) == 6 &&
	       offsetof(struct ep_meta, l3_type) == 8 && offsetof(struct ep_meta, l4_proto) == 9 &&
	       offsetof(struct ep_meta, n_vlans) == 10 && offsetof(struct ep_meta, flags) == 11 &&
	       offsetof(struct ep_meta, vlan_tci) == 12,
	       "ep_meta's first 16 bytes as two words");

/** The eight lanes' results. */
struct ep_parse_x8 {
	__mmask8 ok;            /**< parsed, ep_meta written */
	__mmask8 not_for_us;    /**< unicast to another MAC: EP_DROP_L2_NOT_FOR_US */
	__m512i l3;             /**< each lane's IPv4 header address (frame + 14) */
	__m512i proto;          /**< each lane's IPv4 protocol, in its low byte */
	__m512i src, dst;       /**< the IPv4 source and destination, host order, low 32 bits */
};

/** A 256-entry byte table at the low byte of each 64-bit lane of @p idx
 *  (its other bytes ignored); the result in the low byte of each lane, 0
 *  elsewhere.  Four 64-byte loads of the table, two two-table permutes. */
static __rte_always_inline EP_X8_TARGET __m512i
ep_x8_table(const uint8_t tbl[256], __m512i idx)
{
	const __m512i t0 = _mm512_loadu_si512(tbl), t1 = _mm512_loadu_si512(tbl + 64);
	const __m512i t2 = _mm512_loadu_si512(tbl + 128), t3 = _mm512_loadu_si512(tbl + 192);
	__m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);   /* bit 6 picks t0 / t1 */
	__m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
	__mmask64 high = _mm512_test_epi8_mask(idx, _mm512_set1_epi8((char)0x80));

	return _mm512_and_si512(_mm512_mask_blend_epi8(high, lo, hi), _mm512_set1_epi64(0xff));
}

/** What ep_parse_x8_load (or ep_parse_qinq_x8_load) reads for eight
 *  lanes: the mbufs' fields and the frames' 8-byte words at 0, 12, 20, 28
 *  (and 36, 40; 44 and 48 for a caller's own layout, a PPPoE session's). */
struct ep_parse_x8_in {
	__m512i mb, pkt_len, seg, p, q0, q12, q20, q28, q36, q40, q44, q48;
	__mmask8 elig;
};

/*
 * The loads, two ways.  The eight lanes' fields (the mbufs' buf_addr,
 * data_off, pkt_len/data_len; the frames' 8-byte words) are either
 * gathers (seven a group for an untagged frame, nine for QinQ) or
 * full-width loads of each mbuf's first line and each frame's first bytes
 * turned into the same per-field vectors by shuffles ("lines").  Which is
 * cheaper depends on the core: on AMD Zen 5 a 512-bit gather has ~9 TSC
 * cycles of throughput, four times the loads it stands for, and the
 * router's parse read ~2-3 cycles a packet lower with lines, the vBNG
 * uplink's ~3; on an Intel Xeon a gather had ~2.6
 * (docs/benchmarks/router-passes-later.md, "The seventeenth pass" and
 * "The twentieth pass").  So every load function takes @p lines, a
 * constant at each call site, and a pipeline instantiates its parse for
 * both and picks one per worker from ep_parse_x8_lines(), which times both
 * forms on this CPU once.  test_x8_loads checks that both give the same
 * values in every lane.  In the lines form, lanes outside the mask and
 * frames not eligible read ep_x8_dummy_line instead of through their
 * pointers (a masked gather reads nothing for them); their fields are 0
 * in both forms.
 */

/** Whether this CPU runs the loads below faster as lines than as gathers
 *  (ep_parse_x8.c: both timed once a process; EP_X8_LOADS=lines or
 *  gathers in the environment decides it instead).  Only where
 *  ep_parse_x8_usable(). */
bool ep_parse_x8_lines(void);

/** The figures ep_parse_x8_lines chose by: TSC cycles a packet of
 *  @p f[layout][form] (layout 0 untagged, 1 QinQ PPPoE; form 0 gathers,
 *  1 lines), all 0 if it did not time them; what decided (a sentence). */
const char *ep_parse_x8_figures(double f[2][2]);

/* The mbufs' fields of @p lanes by gathers (one each, from the pointers'
 * first line); eligible: first segment and frame at least @p min bytes. */
static __rte_always_inline EP_X8_TARGET void
ep_x8_gather_mbufs(struct rte_mbuf *const *m, __mmask8 lanes, uint32_t min,
		   struct ep_parse_x8_in *in)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff), lo32 = _mm512_set1_epi64(0xffffffff);
	const __m512i mb = _mm512_maskz_loadu_epi64(lanes, m);
	__m512i z = _mm512_setzero_si512();
	__m512i buf, off, lens, seg;

	buf = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, buf_addr), 1);
	off = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, data_off), 1);
	lens = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, pkt_len), 1);
	in->mb = mb;
	in->pkt_len = _mm512_and_si512(lens, lo32);
	seg = _mm512_min_epu64(_mm512_and_si512(_mm512_srli_epi64(lens, 32), lo16), in->pkt_len);
	in->seg = seg;
	in->elig = _mm512_mask_cmpge_epu64_mask(lanes, seg, _mm512_set1_epi64(min));
	in->p = _mm512_add_epi64(buf, _mm512_and_si512(off, lo16));
}

/* The frame's 8-byte word at @p off of each eligible lane of @p in, by a
 * gather. */
#define EP_X8_WORD(in, off) \
	_mm512_mask_i64gather_epi64(_mm512_setzero_si512(), (in)->elig, (in)->p, (const void *)(uintptr_t)(off), 1)

/* ep_x8_gather_mbufs by lines: one 64-byte load a mbuf (its words 0
 * (buf_addr), 2 (data_off), 4 (packet_type, pkt_len) and 5 (data_len)),
 * transposed by eight two-table permutes and four lane shuffles. */
static __rte_always_inline EP_X8_TARGET void
ep_x8_line_mbufs(struct rte_mbuf *const *m, __mmask8 lanes, uint32_t min,
		 struct ep_parse_x8_in *in)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff);
	const __m512i dummy = _mm512_set1_epi64((long long)(uintptr_t)ep_x8_dummy_line);
	const __m512i mb = _mm512_mask_loadu_epi64(dummy, lanes, m);
	alignas(64) uint64_t mp[8];
	__m512i r[8], t[4], u[4], buf, off, c4, c5, seg;
	/* Pairs of rows, then quads, then eight. */
	const __m512i i1 = _mm512_set_epi64(13, 5, 12, 4, 10, 2, 8, 0);
	const __m512i lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
	const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);

	_Static_assert(offsetof(struct rte_mbuf, buf_addr) == 0 &&
		       offsetof(struct rte_mbuf, data_off) == 16 &&
		       offsetof(struct rte_mbuf, pkt_len) == 36 &&
		       offsetof(struct rte_mbuf, data_len) == 40, "the mbuf's first line");
	_mm512_store_si512(mp, mb);
	for (int i = 0; i < 8; i++)
		r[i] = _mm512_loadu_si512((const void *)(uintptr_t)mp[i]);
	for (int i = 0; i < 4; i++)
		t[i] = _mm512_permutex2var_epi64(r[2 * i], i1, r[2 * i + 1]);
	u[0] = _mm512_permutex2var_epi64(t[0], lo, t[1]);
	u[1] = _mm512_permutex2var_epi64(t[0], hi, t[1]);
	u[2] = _mm512_permutex2var_epi64(t[2], lo, t[3]);
	u[3] = _mm512_permutex2var_epi64(t[2], hi, t[3]);
	buf = _mm512_shuffle_i64x2(u[0], u[2], 0x44);
	off = _mm512_shuffle_i64x2(u[0], u[2], 0xee);
	c4 = _mm512_shuffle_i64x2(u[1], u[3], 0x44);
	c5 = _mm512_shuffle_i64x2(u[1], u[3], 0xee);
	in->mb = _mm512_maskz_mov_epi64(lanes, mb);
	in->pkt_len = _mm512_maskz_srli_epi64(lanes, c4, 32);
	seg = _mm512_min_epu64(_mm512_and_si512(c5, lo16), in->pkt_len);
	in->seg = seg;
	in->elig = _mm512_mask_cmpge_epu64_mask(lanes, seg, _mm512_set1_epi64(min));
	in->p = _mm512_maskz_add_epi64(lanes, buf, _mm512_and_si512(off, lo16));
}

/** The mbufs' fields of @p lanes (their pointers at @p m; lanes not in
 *  @p lanes are not read), as lines or as gathers; eligible: first
 *  segment and frame at least @p min bytes. */
static __rte_always_inline EP_X8_TARGET void
ep_x8_load_mbufs(struct rte_mbuf *const *m, __mmask8 lanes, uint32_t min,
		 struct ep_parse_x8_in *in, const bool lines)
{
	if (lines)
		ep_x8_line_mbufs(m, lanes, min, in);
	else
		ep_x8_gather_mbufs(m, lanes, min, in);
}

/* Each eligible lane's frame pointer, the others' ep_x8_dummy_line, into
 * @p fp. */
static __rte_always_inline EP_X8_TARGET void
ep_x8_frame_ptrs(const struct ep_parse_x8_in *in, uint64_t fp[8])
{
	const __m512i dummy = _mm512_set1_epi64((long long)(uintptr_t)ep_x8_dummy_line);

	_mm512_storeu_si512(fp, _mm512_mask_mov_epi64(dummy, in->elig, in->p));
}

/*
 * The eligible lanes' 8-byte frame words at the @p n offsets @p off (each
 * at most @p min - 8) into @p w[0 .. n), 0 in the other lanes.  As gathers,
 * one a word; as lines, each frame's first @p min bytes as one masked
 * 64-byte load (nothing past them is read), one byte permute a row that
 * puts the words in its 8-byte slots, and an 8 x 8 transpose (eight
 * unpacks, sixteen lane shuffles; the compiler drops what unused words
 * would cost).
 */
static __rte_always_inline EP_X8_TARGET void
ep_x8_frame_words(const struct ep_parse_x8_in *in, uint32_t min, const uint8_t off[8],
		  unsigned int n, __m512i w[8], const bool lines)
{
	const __mmask64 bytes = min >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << min) - 1;
	const long long ones = 0x0101010101010101ll;
	alignas(64) uint64_t fp[8];
	__m512i r[8], t[8], u[8], at, v[8];

	if (!lines) {
		for (unsigned int k = 0; k < n; k++)
			w[k] = EP_X8_WORD(in, off[k]);
		return;
	}
	at = _mm512_add_epi64(_mm512_set_epi64(off[7] * ones, off[6] * ones, off[5] * ones,
					       off[4] * ones, off[3] * ones, off[2] * ones,
					       off[1] * ones, off[0] * ones),
			      _mm512_set1_epi64(0x0706050403020100ll));
	ep_x8_frame_ptrs(in, fp);
	for (int i = 0; i < 8; i++)
		r[i] = _mm512_permutexvar_epi8(
			at, _mm512_maskz_loadu_epi8(bytes, (const void *)(uintptr_t)fp[i]));
	/* rows (0,1) .. (6,7): words 0,2,4,6 of both rows, then 1,3,5,7 */
	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm512_unpacklo_epi64(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi64(r[2 * i], r[2 * i + 1]);
	}
	/* rows 0..3 and 4..7: words (0,4), (2,6), (1,5), (3,7) */
	for (int h = 0; h < 2; h++) {
		u[4 * h + 0] = _mm512_shuffle_i64x2(t[4 * h + 0], t[4 * h + 2], 0x88);
		u[4 * h + 1] = _mm512_shuffle_i64x2(t[4 * h + 0], t[4 * h + 2], 0xdd);
		u[4 * h + 2] = _mm512_shuffle_i64x2(t[4 * h + 1], t[4 * h + 3], 0x88);
		u[4 * h + 3] = _mm512_shuffle_i64x2(t[4 * h + 1], t[4 * h + 3], 0xdd);
	}
	v[0] = _mm512_shuffle_i64x2(u[0], u[4], 0x88);
	v[4] = _mm512_shuffle_i64x2(u[0], u[4], 0xdd);
	v[2] = _mm512_shuffle_i64x2(u[1], u[5], 0x88);
	v[6] = _mm512_shuffle_i64x2(u[1], u[5], 0xdd);
	v[1] = _mm512_shuffle_i64x2(u[2], u[6], 0x88);
	v[5] = _mm512_shuffle_i64x2(u[2], u[6], 0xdd);
	v[3] = _mm512_shuffle_i64x2(u[3], u[7], 0x88);
	v[7] = _mm512_shuffle_i64x2(u[3], u[7], 0xdd);
	for (unsigned int k = 0; k < n; k++)
		w[k] = _mm512_maskz_mov_epi64(in->elig, v[k]);
}

/*
 * The four words of an untagged IPv4 frame (0, 12, 20, 28) of the
 * eligible lanes of @p in by lines: each frame's bytes 0..31 and 4..35 as
 * two 32-byte loads (nothing past EP_PARSE_X8_MIN), rows i and i + 4 in
 * one register's halves, then eight inserts, six unpacks and four
 * permutes: fewer shuffles than ep_x8_frame_words for four words.
 */
static __rte_always_inline EP_X8_TARGET void
ep_x8_untagged_words(struct ep_parse_x8_in *in)
{
	alignas(64) uint64_t fp[8];
	__m512i f0[4], f4[4];
	const __m512i even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
	const __m512i odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);

	ep_x8_frame_ptrs(in, fp);
	for (int i = 0; i < 4; i++) {
		const uint8_t *a = (const uint8_t *)(uintptr_t)fp[i];
		const uint8_t *b = (const uint8_t *)(uintptr_t)fp[i + 4];

		f0[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)a)),
					   _mm256_loadu_si256((const void *)b), 1);
		f4[i] = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(a + 4))),
			_mm256_loadu_si256((const void *)(b + 4)), 1);
	}
	/* 4 x 4 transposes in each half: word k of rows a..h in order. */
	__m512i l01 = _mm512_unpacklo_epi64(f4[0], f4[1]), h01 = _mm512_unpackhi_epi64(f4[0], f4[1]);
	__m512i l23 = _mm512_unpacklo_epi64(f4[2], f4[3]), h23 = _mm512_unpackhi_epi64(f4[2], f4[3]);
	__m512i z01 = _mm512_unpacklo_epi64(f0[0], f0[1]), z23 = _mm512_unpacklo_epi64(f0[2], f0[3]);

	in->q0 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(z01, even, z23));
	in->q12 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(h01, even, h23));
	in->q20 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(l01, odd, l23));
	in->q28 = _mm512_maskz_mov_epi64(in->elig, _mm512_permutex2var_epi64(h01, odd, h23));
}

/**
 * The loads of eight mbufs from @p m (lanes not in @p lanes are not
 * read), as lines or as gathers: a caller loads every group of a burst
 * before it checks the first, so the groups' misses overlap instead of
 * each group waiting for its own.
 */
static __rte_always_inline EP_X8_TARGET void
ep_parse_x8_load(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in,
		 const bool lines)
{
	ep_x8_load_mbufs(m, lanes, EP_PARSE_X8_MIN, in, lines);
	if (lines) {
		ep_x8_untagged_words(in);
		return;
	}
	in->q0 = EP_X8_WORD(in, 0);
	in->q12 = EP_X8_WORD(in, 12);
	in->q20 = EP_X8_WORD(in, 20);
	in->q28 = EP_X8_WORD(in, 28);
}

/* ep_rx_not_for_us_words for eight lanes: unicast (I/G bit clear) and
 * another MAC than @p mac (the frame's first word in @p q0). */
static __rte_always_inline EP_X8_TARGET __mmask8
ep_x8_not_for_us(__mmask8 elig, __m512i q0, uint64_t mac)
{
	return _mm512_mask_testn_epi64_mask(elig, q0, _mm512_set1_epi64(1)) &
	       _mm512_test_epi64_mask(_mm512_xor_si512(q0, _mm512_set1_epi64((long long)mac)),
				      _mm512_set1_epi64(0xffffffffffffLL));
}

/**
 * ep_parse_ipv4_plain_after's checks for eight lanes whose IPv4 header
 * starts @p l3 bytes into the frame: @p qe the frame's 8-byte word at
 * l3 - 2 (the EtherType or PPP protocol, version/IHL, TOS, total length,
 * id), @p qf the one at l3 + 6 (fragment field, TTL, protocol, checksum,
 * source), @p qs the one at l3 + 14 (source, destination, the first
 * port); @p et_want the two bytes before the header as a little-endian
 * load reads them.  Returns the lanes that fail (any check, the header
 * checksum included); the total length, protocol and L4 minimum in
 * @p tlen, @p proto, @p need.
 */
static __rte_always_inline EP_X8_TARGET __mmask8
ep_x8_ipv4_bad(__m512i qe, __m512i qf, __m512i qs, __m512i pkt_len, __m512i seg, uint32_t l3,
	       uint16_t et_want, __m512i *tlen_o, __m512i *proto_o, __m512i *need_o)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff), lo32 = _mm512_set1_epi64(0xffffffff);
	__m512i tlen, l3_end, proto, need, s, t;
	__mmask8 bad;

	/* The EtherType (or PPP protocol), version 4 with IHL 5. */
	bad = _mm512_cmpneq_epi64_mask(_mm512_and_si512(qe, _mm512_set1_epi64(0xffffff)),
				       _mm512_set1_epi64(0x450000 | et_want));
	/* MF or a fragment offset (0x3fff in network order). */
	bad |= _mm512_test_epi64_mask(qf, _mm512_set1_epi64(0xff3f));
	/* Total length (network order) >= 20 and inside the frame. */
	t = _mm512_and_si512(_mm512_srli_epi64(qe, 32), lo16);
	tlen = _mm512_or_si512(_mm512_srli_epi64(t, 8),
			       _mm512_and_si512(_mm512_slli_epi64(t, 8), _mm512_set1_epi64(0xff00)));
	bad |= _mm512_cmplt_epu64_mask(tlen, _mm512_set1_epi64(sizeof(struct rte_ipv4_hdr)));
	l3_end = _mm512_add_epi64(tlen, _mm512_set1_epi64(l3));
	bad |= _mm512_cmpgt_epu64_mask(l3_end, pkt_len);
	/* The L4 header inside the packet and the first segment. */
	proto = _mm512_and_si512(_mm512_srli_epi64(qf, 24), _mm512_set1_epi64(0xff));
	need = ep_x8_table(ep_parse_l4_min_len, proto);
	l3_end = _mm512_min_epu64(l3_end, seg);
	bad |= _mm512_cmpgt_epu64_mask(
		_mm512_add_epi64(need, _mm512_set1_epi64(l3 + sizeof(struct rte_ipv4_hdr))), l3_end);

	/* The header checksum (ep_ipv4_cksum_ok): its 32-bit words and the
	 * 16-bit words at l3 + 4 and l3 + 18, all even-aligned, summed in 64
	 * bits; a non-zero multiple of 0xffff, tested by folding. */
	t = _mm512_srli_epi64(qe, 16);
	s = _mm512_add_epi64(_mm512_and_si512(t, lo32), _mm512_srli_epi64(t, 32));
	s = _mm512_add_epi64(s, _mm512_and_si512(qf, lo32));
	s = _mm512_add_epi64(s, _mm512_srli_epi64(qf, 32));
	s = _mm512_add_epi64(s, _mm512_and_si512(qs, lo32));
	s = _mm512_add_epi64(s, _mm512_and_si512(_mm512_srli_epi64(qs, 32), lo16));
	t = _mm512_add_epi64(_mm512_and_si512(s, lo16), _mm512_srli_epi64(s, 16));
	t = _mm512_add_epi64(_mm512_and_si512(t, lo16), _mm512_srli_epi64(t, 16));
	t = _mm512_add_epi64(_mm512_and_si512(t, lo16), _mm512_srli_epi64(t, 16));
	bad |= _mm512_cmpneq_epi64_mask(t, lo16);
	*tlen_o = tlen;
	*proto_o = proto;
	*need_o = need;
	return bad;
}

/* The low 32 bits of each lane of @p q, bytes 2..5 of it byte-swapped (a
 * host-order IPv4 address from the frame's word that holds it): one
 * shuffle, its index bytes per 16-byte half 5 4 3 2, then 13 12 11 10
 * (0x80 zeroes). */
static __rte_always_inline EP_X8_TARGET __m512i
ep_x8_addr_at2(__m512i q)
{
	const long long sw0 = (long long)0x8080808002030405ull, sw1 = (long long)0x808080800a0b0c0dull;

	return _mm512_shuffle_epi8(q, _mm512_set_epi64(sw1, sw0, sw1, sw0, sw1, sw0, sw1, sw0));
}

/* ep_meta's bytes 8..11 of a lane: l3_type IPv4, l4_proto, @p n_vlans,
 * flags (HAS_L4 when the protocol has a minimum header). */
static __rte_always_inline EP_X8_TARGET __m512i
ep_x8_meta_hi(__m512i proto, __m512i need, unsigned int n_vlans)
{
	return _mm512_or_si512(
		_mm512_or_si512(_mm512_set1_epi64(EP_L3_IPV4 | n_vlans << 16),
				_mm512_slli_epi64(proto, 8)),
		_mm512_maskz_set1_epi64(_mm512_test_epi64_mask(need, need),
					(long long)EP_META_F_HAS_L4 << 24));
}

/* ep_meta's bytes 0..7 of a lane: in_port, l3_off, l4_off, l3_len. */
static __rte_always_inline EP_X8_TARGET __m512i
ep_x8_meta_lo(uint16_t in_port, uint32_t l3, __m512i tlen)
{
	return _mm512_or_si512(_mm512_set1_epi64((long long)in_port | (long long)l3 << 16 |
						 (long long)(l3 + sizeof(struct rte_ipv4_hdr)) << 32),
			       _mm512_slli_epi64(tlen, 48));
}

/* One lane's ep_meta bytes 0..15 (@p v) and user, when @p on. */
static __rte_always_inline EP_X8_TARGET void
ep_x8_meta_pair(uint64_t mb, unsigned int on, __m128i v, const bool with_user, uint64_t user)
{
	struct ep_meta *md;

	if (on == 0)
		return;
	md = ep_meta((struct rte_mbuf *)(uintptr_t)mb);
	_mm_storeu_si128((__m128i *)(void *)md, v);
	if (with_user)
		md->user = user;
}

/*
 * ep_meta of the lanes @p ok (mbufs @p mb): bytes 0..7 from @p lo, the
 * next @p hi_len (4 or 8) from @p hi, and ep_meta.user = @p user when
 * @p with_user.  With @p hi_len 8 (the QinQ parses) each lane's 16 bytes
 * leave the registers directly: lo and hi interleaved by two permutes,
 * then one vextracti64x2 store a lane.  Read back from the arrays below,
 * the lanes' 8- or 16-byte loads of what one 64-byte store had just
 * written waited for it (in `perf annotate` of the vBNG's parse, the loop's
 * loads and stores held ~18 % of its samples; the direct stores took its
 * parse ~2.5 cycles a packet lower in test_bng_cycles,
 * docs/benchmarks/bng-passes.md "Seventeenth pass").  With @p hi_len 4 (12 bytes a lane, the router's
 * untagged parse) through 64-byte-aligned arrays: a vector store to an
 * unaligned one can straddle two lines, and the 8-byte loads that read it
 * back then wait for it instead of being forwarded (the vBNG's parse 3-4
 * cycles a packet dearer).  Two scatters instead measured no faster.
 */
static __rte_always_inline EP_X8_TARGET void
ep_x8_meta_store(__m512i mb, __mmask8 ok, __m512i lo, __m512i hi, const unsigned int hi_len,
		 const bool with_user, uint64_t user)
{
	alignas(64) uint64_t l[8], h[8], mp[8];

	_mm512_store_si512(mp, mb);
	if (hi_len == 8) {
		/* Each lane's 16 bytes side by side (lo, hi of lane 0, then
		 * of lane 1, ...), stored straight from the registers: one
		 * vextracti64x2 a lane (a 16-byte load from the arrays above,
		 * which a 64-byte store had just written, waited for it). */
		const __m512i p0 = _mm512_permutex2var_epi64(
			lo, _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), hi);
		const __m512i p1 = _mm512_permutex2var_epi64(
			lo, _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4), hi);

		ep_x8_meta_pair(mp[0], ok & 1, _mm512_extracti64x2_epi64(p0, 0), with_user, user);
		ep_x8_meta_pair(mp[1], ok & 2, _mm512_extracti64x2_epi64(p0, 1), with_user, user);
		ep_x8_meta_pair(mp[2], ok & 4, _mm512_extracti64x2_epi64(p0, 2), with_user, user);
		ep_x8_meta_pair(mp[3], ok & 8, _mm512_extracti64x2_epi64(p0, 3), with_user, user);
		ep_x8_meta_pair(mp[4], ok & 16, _mm512_extracti64x2_epi64(p1, 0), with_user, user);
		ep_x8_meta_pair(mp[5], ok & 32, _mm512_extracti64x2_epi64(p1, 1), with_user, user);
		ep_x8_meta_pair(mp[6], ok & 64, _mm512_extracti64x2_epi64(p1, 2), with_user, user);
		ep_x8_meta_pair(mp[7], ok & 128, _mm512_extracti64x2_epi64(p1, 3), with_user, user);
		return;
	}
	_mm512_store_si512(l, lo);
	_mm512_store_si512(h, hi);
	for (unsigned int b = ok; b != 0; b &= b - 1) {
		unsigned int j = __builtin_ctz(b);
		struct ep_meta *md = ep_meta((struct rte_mbuf *)(uintptr_t)mp[j]);

		memcpy(md, &l[j], 8);
		memcpy((uint8_t *)md + 8, &h[j], hi_len);
		if (with_user)
			md->user = user;
	}
}

/**
 * The checks of the eight lanes @p in holds; @p mac the receiving port's
 * MAC in the low 48 bits, in memory order (its six bytes loaded as a
 * little-endian word).  Fills @p x; see the file comment.
 */
static __rte_always_inline EP_X8_TARGET void
ep_parse_x8_check(const struct ep_parse_x8_in *in, uint64_t mac, uint16_t in_port,
		  struct ep_parse_x8 *x)
{
	__m512i tlen, proto, need;
	__mmask8 bad, ok;

	x->not_for_us = ep_x8_not_for_us(in->elig, in->q0, mac);
	bad = ep_x8_ipv4_bad(in->q12, in->q20, in->q28, in->pkt_len, in->seg, RTE_ETHER_HDR_LEN,
			     RTE_BE16(RTE_ETHER_TYPE_IPV4), &tlen, &proto, &need);
	ok = in->elig & ~x->not_for_us & ~bad;
	x->ok = ok;
	x->l3 = _mm512_add_epi64(in->p, _mm512_set1_epi64(RTE_ETHER_HDR_LEN));
	x->proto = proto;
	/* Bytes 26..29 (the word at 24's bytes 2..5: the frame's halves at 20
	 * and 28 joined) and 30..33 (q28's 2..5), for a caller's route stage
	 * (the router's: ep_fib_x8_words, ep_fib_x8_no_martian). */
	x->src = ep_x8_addr_at2(_mm512_or_si512(_mm512_srli_epi64(in->q20, 32),
						_mm512_slli_epi64(in->q28, 32)));
	x->dst = ep_x8_addr_at2(in->q28);
	ep_x8_meta_store(in->mb, ok, ep_x8_meta_lo(in_port, RTE_ETHER_HDR_LEN, tlen),
			 ep_x8_meta_hi(proto, need, 0), 4, false, 0);
}

/** ep_parse_x8_load and ep_parse_x8_check of one group of eight. */
static __rte_always_inline EP_X8_TARGET void
ep_parse_ipv4_plain_x8(struct rte_mbuf *const *m, __mmask8 lanes, uint64_t mac, uint16_t in_port,
		       struct ep_parse_x8 *x, const bool lines)
{
	struct ep_parse_x8_in in;

	ep_parse_x8_load(m, lanes, &in, lines);
	ep_parse_x8_check(&in, mac, in_port, x);
}

/*
 * ep_parse_qinq_ipv4_plain for eight frames: two tags (any TPID
 * ep_parse_l2 accepts, in either position), then the IPv4 checks of
 * ep_parse_ipv4_plain at offset 22.  The vBNG uplink's commonest frame (an
 * access line's), where the router's untagged one is at 14.  Six words of
 * the frame: 0 (MACs), 12 (both tags), 20, 28, 36 (the EtherType and the
 * IPv4 header, as 12, 20, 28 for an untagged frame) and 40, whose bytes
 * 42..45 are the ports (for the caller's own checks: the vBNG punts DHCP).
 * Same contract as the untagged path: ok lanes as the scalar path decides
 * them, their ep_meta written (in_port, l3_off 22, l4_off 42, l3_len,
 * l3_type, l4_proto, n_vlans 2, flags, both TCIs, and user), others
 * untouched; test_parse_x8 checks every lane against
 * ep_parse_qinq_ipv4_plain.
 */
/** Bytes of a frame the QinQ loads read: the word at 40 (the ports). */
#define EP_PARSE_QINQ_X8_MIN 48u

/** The eight lanes' results of ep_parse_qinq_x8_check. */
struct ep_parse_qinq_x8 {
	__mmask8 ok;            /**< passed every check (ep_meta not yet written) */
	__mmask8 not_for_us;    /**< unicast to another MAC: EP_DROP_L2_NOT_FOR_US */
	__m512i l3;             /**< each lane's IPv4 header address (frame + 22, or the caller's l3) */
	__m512i proto;          /**< each lane's IPv4 protocol, in its low byte */
	__m512i ports;          /**< bytes l3 + 20..23 (source, destination port) in the low 32 bits */
	__m512i dst;            /**< the IPv4 destination, host order, in the low 32 bits */
	__m512i lo, hi;         /**< each lane's ep_meta bytes 0..7 and 8..15 */
};

/** The QinQ frames' words (0, 12, 20, 28, 36, 40) of the eligible lanes
 *  of @p in, whose mbuf fields ep_x8_load_mbufs (minimum
 *  EP_PARSE_QINQ_X8_MIN) loaded: apart, for a caller that loads every
 *  group's mbuf fields before the first group's frame words (each frame
 *  load waits for its group's mbuf fields otherwise). */
static __rte_always_inline EP_X8_TARGET void
ep_parse_qinq_x8_words(struct ep_parse_x8_in *in, const bool lines)
{
	static const uint8_t off[8] = { 0, 12, 20, 28, 36, 40 };
	__m512i w[8];

	ep_x8_frame_words(in, EP_PARSE_QINQ_X8_MIN, off, 6, w, lines);
	in->q0 = w[0];
	in->q12 = w[1];
	in->q20 = w[2];
	in->q28 = w[3];
	in->q36 = w[4];
	in->q40 = w[5];
}

/** ep_parse_x8_load's counterpart for QinQ frames. */
static __rte_always_inline EP_X8_TARGET void
ep_parse_qinq_x8_load(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in,
		      const bool lines)
{
	ep_x8_load_mbufs(m, lanes, EP_PARSE_QINQ_X8_MIN, in, lines);
	ep_parse_qinq_x8_words(in, lines);
}

/* The lanes of @p tpid (a TPID as a little-endian load reads it, in the
 * low 16 bits) that ep_ether_type_is_vlan accepts. */
static __rte_always_inline EP_X8_TARGET __mmask8
ep_x8_is_vlan(__m512i tpid)
{
	return _mm512_cmpeq_epi64_mask(tpid, _mm512_set1_epi64(RTE_BE16(RTE_ETHER_TYPE_VLAN))) |
	       _mm512_cmpeq_epi64_mask(tpid, _mm512_set1_epi64(RTE_BE16(RTE_ETHER_TYPE_QINQ))) |
	       _mm512_cmpeq_epi64_mask(tpid, _mm512_set1_epi64(RTE_BE16(EP_ETHER_TYPE_QINQ_9100)));
}

/* The 16-bit network-order field in bits @p sh.. of each lane, in host
 * order in the low 16 bits. */
static __rte_always_inline EP_X8_TARGET __m512i
ep_x8_be16(__m512i v, unsigned int sh)
{
	__m512i t = _mm512_srli_epi64(v, sh);

	return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi64(t, 8), _mm512_set1_epi64(0xff)),
			       _mm512_and_si512(_mm512_slli_epi64(t, 8), _mm512_set1_epi64(0xff00)));
}

/**
 * The checks of eight lanes with two tags (bytes 12..19, any accepted
 * TPIDs) and an IPv4 header without options at @p l3, the two bytes before
 * it @p et_want (as ep_x8_ipv4_bad takes them): @p qe, @p qf, @p qs the
 * words at l3 - 2, l3 + 6, l3 + 14 (ep_x8_ipv4_bad), @p qp the one at
 * l3 + 18 (the ports).  Fills @p x (n_vlans 2 and both TCIs in x->hi); a
 * caller with more header between the tags and the IP one (PPPoE) checks
 * it and takes its lanes out of x->ok.
 */
static __rte_always_inline EP_X8_TARGET void
ep_x8_qinq_ipv4(const struct ep_parse_x8_in *in, __m512i qe, __m512i qf, __m512i qs, __m512i qp,
		const uint32_t l3, uint16_t et_want, uint64_t mac, uint16_t in_port,
		struct ep_parse_qinq_x8 *x)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff);
	__m512i tlen, proto, need;
	__mmask8 bad;

	x->not_for_us = ep_x8_not_for_us(in->elig, in->q0, mac);
	bad = ~(ep_x8_is_vlan(_mm512_and_si512(in->q12, lo16)) &
		ep_x8_is_vlan(_mm512_and_si512(_mm512_srli_epi64(in->q12, 32), lo16)));
	bad |= ep_x8_ipv4_bad(qe, qf, qs, in->pkt_len, in->seg, l3, et_want, &tlen, &proto, &need);
	x->ok = in->elig & ~x->not_for_us & ~bad;
	x->l3 = _mm512_add_epi64(in->p, _mm512_set1_epi64(l3));
	x->proto = proto;
	x->ports = _mm512_and_si512(_mm512_srli_epi64(qp, 16), _mm512_set1_epi64(0xffffffff));
	/* Bytes l3 + 16..19 of each lane (bytes 2..5 of @p qs): for a
	 * caller's route lookup (the vBNG's). */
	x->dst = ep_x8_addr_at2(qs);
	x->lo = ep_x8_meta_lo(in_port, l3, tlen);
	/* Bytes 12..15: the outer and inner TCI, host order. */
	x->hi = _mm512_or_si512(ep_x8_meta_hi(proto, need, 2),
				_mm512_or_si512(_mm512_slli_epi64(ep_x8_be16(in->q12, 16), 32),
						_mm512_slli_epi64(ep_x8_be16(in->q12, 48), 48)));
}

/** The checks of the eight QinQ lanes @p in holds (ep_parse_qinq_x8_load);
 *  @p mac as for ep_parse_x8_check.  Writes nothing: the caller may take
 *  lanes out of @p x->ok before ep_parse_qinq_x8_store. */
static __rte_always_inline EP_X8_TARGET void
ep_parse_qinq_x8_check(const struct ep_parse_x8_in *in, uint64_t mac, uint16_t in_port,
		       struct ep_parse_qinq_x8 *x)
{
	ep_x8_qinq_ipv4(in, in->q20, in->q28, in->q36, in->q40,
			RTE_ETHER_HDR_LEN + 2 * sizeof(struct rte_vlan_hdr),
			RTE_BE16(RTE_ETHER_TYPE_IPV4), mac, in_port, x);
}

/** ep_meta of the lanes @p ok of @p x as ep_parse_qinq_ipv4_plain writes
 *  it, with in_port and ep_meta.user (@p user) besides; @p mb the lanes'
 *  mbufs (ep_parse_x8_in.mb). */
static __rte_always_inline EP_X8_TARGET void
ep_parse_qinq_x8_store(const struct ep_parse_qinq_x8 *x, __m512i mb, __mmask8 ok, uint64_t user)
{
	ep_x8_meta_store(mb, ok, x->lo, x->hi, 8, true, user);
}

#endif /* RTE_ARCH_X86_64 */
#endif
