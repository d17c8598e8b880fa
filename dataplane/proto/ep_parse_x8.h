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
 * a lane's fields come from seven gathers (buf_addr, data_off and
 * pkt_len/data_len of the mbuf; the frame's 8-byte words at 0, 12, 20 and
 * 28), every check is one vector operation for eight frames, and
 * ep_meta's first 12 bytes are one 8-byte and one 4-byte store (two
 * scatters measured no faster).
 *
 * The loads and the checks are two functions: a gather here costs ~16-26
 * TSC cycles of latency (~2.6 of throughput, in L1), and a group's two
 * gathers in a row (the mbuf's, then the frame's) made each group of eight
 * wait ~50 cycles for its own; a caller that loads every group of its
 * burst before it checks the first overlaps them (router parse 12.6 ->
 * 10.4 cycles a packet in test_router_cycles).  Measured in
 * docs/benchmarks.md (the eighth pass).
 *
 * What it decides, per lane of @p lanes:
 *   - eligible: first segment and frame both at least EP_PARSE_X8_MIN
 *     bytes (every byte a gather reads is inside the frame's data);
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

/** Bytes of a frame (first segment and whole) the gathers read: the last
 *  is the 8-byte word at 28, which holds the IPv4 destination. */
#define EP_PARSE_X8_MIN 36u

_Static_assert(offsetof(struct rte_mbuf, data_len) == offsetof(struct rte_mbuf, pkt_len) + 4,
	       "pkt_len and data_len in one 8-byte word");
_Static_assert(offsetof(struct ep_meta, in_port) == 0 && offsetof(struct ep_meta, l3_off) == 2 &&
	       offsetof(struct ep_meta, l4_off) == 4 && offsetof(struct ep_meta, l3_len) == 6 &&
	       offsetof(struct ep_meta, l3_type) == 8 && offsetof(struct ep_meta, l4_proto) == 9 &&
	       offsetof(struct ep_meta, n_vlans) == 10 && offsetof(struct ep_meta, flags) == 11,
	       "ep_meta's first 12 bytes as two words");

/** The eight lanes' results. */
struct ep_parse_x8 {
	__mmask8 ok;            /**< parsed, ep_meta written */
	__mmask8 not_for_us;    /**< unicast to another MAC: EP_DROP_L2_NOT_FOR_US */
	__m512i l3;             /**< each lane's IPv4 header address (frame + 14) */
	__m512i proto;          /**< each lane's IPv4 protocol, in its low byte */
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

/** What ep_parse_x8_load gathers for eight lanes, for ep_parse_x8_check. */
struct ep_parse_x8_in {
	__m512i mb, pkt_len, seg, p, q0, q12, q20, q28;
	__mmask8 elig;
};

/**
 * The loads of eight mbufs from @p m (lanes not in @p lanes are not
 * read): a caller loads every group of a burst before it checks the first,
 * so the groups' gathers (~25 cycles each, two in a row) overlap instead
 * of each group waiting for its own.
 */
static __rte_always_inline EP_X8_TARGET void
ep_parse_x8_load(struct rte_mbuf *const *m, __mmask8 lanes, struct ep_parse_x8_in *in)
{
	const __m512i lo16 = _mm512_set1_epi64(0xffff), lo32 = _mm512_set1_epi64(0xffffffff);
	const __m512i mb = _mm512_maskz_loadu_epi64(lanes, m);
	__m512i z = _mm512_setzero_si512();
	__m512i buf, off, lens, seg, p;
	__mmask8 elig;

	/* The mbuf's fields: one gather each (the pointers' first line). */
	buf = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, buf_addr), 1);
	off = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, data_off), 1);
	lens = _mm512_mask_i64gather_epi64(z, lanes, mb, (const void *)offsetof(struct rte_mbuf, pkt_len), 1);
	in->mb = mb;
	in->pkt_len = _mm512_and_si512(lens, lo32);
	seg = _mm512_min_epu64(_mm512_and_si512(_mm512_srli_epi64(lens, 32), lo16), in->pkt_len);
	in->seg = seg;
	elig = _mm512_mask_cmpge_epu64_mask(lanes, seg, _mm512_set1_epi64(EP_PARSE_X8_MIN));
	in->elig = elig;
	p = _mm512_add_epi64(buf, _mm512_and_si512(off, lo16));
	in->p = p;

	/* The frame's four words: MACs; EtherType, version/IHL, TOS, total
	 * length, id; fragment field, TTL, protocol, checksum, source;
	 * source, destination, the first port. */
	in->q0 = _mm512_mask_i64gather_epi64(z, elig, p, (const void *)0, 1);
	in->q12 = _mm512_mask_i64gather_epi64(z, elig, p, (const void *)12, 1);
	in->q20 = _mm512_mask_i64gather_epi64(z, elig, p, (const void *)20, 1);
	in->q28 = _mm512_mask_i64gather_epi64(z, elig, p, (const void *)28, 1);
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
	const __m512i lo16 = _mm512_set1_epi64(0xffff), lo32 = _mm512_set1_epi64(0xffffffff);
	const __m512i mb = in->mb, pkt_len = in->pkt_len, seg = in->seg, p = in->p;
	const __m512i q0 = in->q0, q12 = in->q12, q20 = in->q20, q28 = in->q28;
	const __mmask8 elig = in->elig;
	__m512i tlen, l3_end, proto, need, s, t;
	__mmask8 bad, fail, ok;

	/* ep_rx_not_for_us_words: unicast (I/G bit clear) and another MAC. */
	x->not_for_us = _mm512_mask_testn_epi64_mask(elig, q0, _mm512_set1_epi64(1)) &
			_mm512_test_epi64_mask(_mm512_xor_si512(q0, _mm512_set1_epi64((long long)mac)),
					       _mm512_set1_epi64(0xffffffffffffLL));

	/* EtherType 0x0800, version 4 with IHL 5 (bytes 12, 13, 14). */
	bad = _mm512_cmpneq_epi64_mask(_mm512_and_si512(q12, _mm512_set1_epi64(0xffffff)),
				       _mm512_set1_epi64(0x450008));
	/* MF or a fragment offset (bytes 20, 21: 0x3fff in network order). */
	bad |= _mm512_test_epi64_mask(q20, _mm512_set1_epi64(0xff3f));
	/* Total length (bytes 16, 17, network order) >= 20 and inside the frame. */
	t = _mm512_and_si512(_mm512_srli_epi64(q12, 32), lo16);
	tlen = _mm512_or_si512(_mm512_srli_epi64(t, 8),
			       _mm512_and_si512(_mm512_slli_epi64(t, 8), _mm512_set1_epi64(0xff00)));
	bad |= _mm512_cmplt_epu64_mask(tlen, _mm512_set1_epi64(sizeof(struct rte_ipv4_hdr)));
	l3_end = _mm512_add_epi64(tlen, _mm512_set1_epi64(RTE_ETHER_HDR_LEN));
	bad |= _mm512_cmpgt_epu64_mask(l3_end, pkt_len);
	/* The L4 header inside the packet and the first segment. */
	proto = _mm512_and_si512(_mm512_srli_epi64(q20, 24), _mm512_set1_epi64(0xff));
	need = ep_x8_table(ep_parse_l4_min_len, proto);
	l3_end = _mm512_min_epu64(l3_end, seg);
	bad |= _mm512_cmpgt_epu64_mask(
		_mm512_add_epi64(need, _mm512_set1_epi64(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr))),
		l3_end);

	/* The header checksum (ep_ipv4_cksum_ok): bytes 14..33 as 32-bit
	 * words and the 16-bit words at 18 and 32, all even-aligned, summed
	 * in 64 bits; a non-zero multiple of 0xffff, tested by the same
	 * multiply by the inverse as the scalar path. */
	t = _mm512_srli_epi64(q12, 16);
	s = _mm512_add_epi64(_mm512_and_si512(t, lo32), _mm512_srli_epi64(t, 32));
	s = _mm512_add_epi64(s, _mm512_and_si512(q20, lo32));
	s = _mm512_add_epi64(s, _mm512_srli_epi64(q20, 32));
	s = _mm512_add_epi64(s, _mm512_and_si512(q28, lo32));
	s = _mm512_add_epi64(s, _mm512_and_si512(_mm512_srli_epi64(q28, 32), lo16));
	t = _mm512_add_epi64(_mm512_and_si512(s, lo16), _mm512_srli_epi64(s, 16));
	t = _mm512_add_epi64(_mm512_and_si512(t, lo16), _mm512_srli_epi64(t, 16));
	t = _mm512_add_epi64(_mm512_and_si512(t, lo16), _mm512_srli_epi64(t, 16));
	fail = _mm512_cmpneq_epi64_mask(t, lo16);

	ok = elig & ~x->not_for_us & ~bad & ~fail;
	x->ok = ok;
	x->l3 = _mm512_add_epi64(p, _mm512_set1_epi64(RTE_ETHER_HDR_LEN));
	x->proto = proto;
	/* ep_meta bytes 0..7: in_port, l3_off 14, l4_off 34, l3_len; 8..11:
	 * l3_type, l4_proto, n_vlans 0, flags (HAS_L4 when the protocol has
	 * a minimum header). */
	t = _mm512_or_si512(_mm512_set1_epi64((long long)in_port |
					      (long long)RTE_ETHER_HDR_LEN << 16 |
					      (long long)(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr)) << 32),
			    _mm512_slli_epi64(tlen, 48));
	{
		uint64_t lo[8], hi[8], mp[8];
		__m512i h = _mm512_or_si512(
			_mm512_or_si512(_mm512_set1_epi64(EP_L3_IPV4), _mm512_slli_epi64(proto, 8)),
			_mm512_maskz_set1_epi64(_mm512_test_epi64_mask(need, need),
						(long long)EP_META_F_HAS_L4 << 24));

		_mm512_storeu_si512(lo, t);
		_mm512_storeu_si512(hi, h);
		_mm512_storeu_si512(mp, mb);
		for (unsigned int b = ok; b != 0; b &= b - 1) {
			unsigned int j = __builtin_ctz(b);
			uint8_t *md = (uint8_t *)(uintptr_t)mp[j] + sizeof(struct rte_mbuf);
			uint32_t h32 = (uint32_t)hi[j];

			memcpy(md, &lo[j], 8);
			memcpy(md + 8, &h32, 4);
		}
	}
}

/** ep_parse_x8_load and ep_parse_x8_check of one group of eight. */
static __rte_always_inline EP_X8_TARGET void
ep_parse_ipv4_plain_x8(struct rte_mbuf *const *m, __mmask8 lanes, uint64_t mac, uint16_t in_port,
		       struct ep_parse_x8 *x)
{
	struct ep_parse_x8_in in;

	ep_parse_x8_load(m, lanes, &in);
	ep_parse_x8_check(&in, mac, in_port, x);
}

#endif /* RTE_ARCH_X86_64 */
#endif
