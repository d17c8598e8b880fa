/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The tbl24 words of eight IPv4 destinations at once (AVX-512, where the
 * CPU has it: ep_parse_x8_usable), as EP_FIB_ROUTE_BY8 reads them: each
 * destination's /8 word of keep4 (one gather), the address ep_fib_addr4
 * makes of it, that address's tbl24 word (a second gather).  For a stage
 * that has the destinations in vector lanes already (the vBNG uplink's x8
 * parse) and a route stage later in the same burst that takes the words
 * (ep_fib_route_burst_words): the route stage's per-packet reads of the
 * frame, the /8 word, the fold and the tbl24 word are gone from it.
 *
 * Why by hand: rte_lpm has a vector lookup (rte_lpm_lookupx4) for four
 * addresses in SSE registers, which decodes the words into next hops; the
 * route stage here compares the undecoded word with the previous packet's
 * (EP_FIB_ROUTE_SAME_NH), and the addresses are folded per /8 first
 * (ep_fib_addr4), which rte_lpm does not do.
 *
 * An x86 gather's elements are aligned 4-byte loads, ordered as loads are:
 * the same reads as ep_fib_addr4's acquire load of keep4 and the tbl24
 * load after it.  A word read here is as good as one read in the route
 * stage of the same burst: a route changed meanwhile is seen from the next
 * burst, as ep_fib_route4_same says.
 */
#ifndef EP_FIB_X8_H
#define EP_FIB_X8_H

#include "ep_fib.h"
#include "ep_parse_x8.h"

#ifdef EP_PARSE_X8
_Static_assert(sizeof(((struct rte_lpm *)0)->tbl24[0]) == 4, "a tbl24 entry is one 32-bit word");

/** The keep4 words of the lanes @p lanes of @p dst (host order, low 32
 *  bits of each lane), zero-extended into 64-bit lanes, 0 in the others:
 *  made from keep4b's bytes (two byte permutes of its four lines,
 *  ep_x8_table) instead of gathered from keep4.  A masked 32-bit gather
 *  costs 28-42 cycles of throughput on Zen 5
 *  (docs/benchmarks/router-passes-later.md, the seventeenth and
 *  eighteenth passes).  Apart from ep_fib_x8_words, so
 *  that a caller reads every group's words before the first group's
 *  tbl24 words. */
static __rte_always_inline EP_X8_TARGET __m512i
ep_fib_x8_keep(const struct ep_fib *fib, __mmask8 lanes, __m512i dst)
{
	const __m512i b = ep_x8_table(fib->keep4b, _mm512_srli_epi64(dst, 24));
	const __mmask8 lng = _mm512_mask_test_epi64_mask(lanes, b,
							 _mm512_set1_epi64(EP_FIB_KEEP4B_LONG));
	const __mmask8 mart = _mm512_mask_test_epi64_mask(lanes, b,
							  _mm512_set1_epi64(EP_FIB_KEEP4B_MARTIAN));

	return _mm512_or_si512(_mm512_maskz_set1_epi64(lng, 0x00ffffff),
			       _mm512_maskz_set1_epi64(mart, (long long)EP_FIB_KEEP4_MARTIAN));
}

/** The lanes of @p lanes whose keep4 word @p keep (ep_fib_x8_keep of an
 *  address) says their /8 holds no martian (EP_FIB_KEEP4_MARTIAN clear):
 *  their addresses pass ep_ipv4_martian.  A router's source check
 *  (EP_FIB_ROUTE_SRC_CHECK) for a burst whose words it reads here. */
static __rte_always_inline EP_X8_TARGET __mmask8
ep_fib_x8_no_martian(__mmask8 lanes, __m512i keep)
{
	return _mm512_mask_testn_epi64_mask(lanes, keep, _mm512_set1_epi64(EP_FIB_KEEP4_MARTIAN));
}

/**
 * The tbl24 words of the lanes @p lanes of @p dst (their keep4 words
 * @p keep, from ep_fib_x8_keep) into the eight 32-bit elements of
 * @p words; returns the lanes answered: those whose /8 holds no martian
 * (EP_FIB_KEEP4_MARTIAN clear: the route stage's martian test would pass
 * them).  The others are left to the route stage's own path.
 */
static __rte_always_inline EP_X8_TARGET __mmask8
ep_fib_x8_words(const struct ep_fib *fib, __mmask8 lanes, __m512i dst, __m512i keep,
		__m256i *words)
{
	const __mmask8 ok = ep_fib_x8_no_martian(lanes, keep);
	/* ep_fib_addr4_keep: (dst & (0xff000000 | keep)) |
	 * (((dst >> 24) << 14) & ~keep), then the index dst >> 8. */
	__m512i a = _mm512_or_si512(
		_mm512_and_si512(dst, _mm512_or_si512(keep, _mm512_set1_epi64(0xff000000))),
		_mm512_andnot_si512(keep, _mm512_slli_epi64(_mm512_srli_epi64(dst, 24), 14)));

	*words = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), ok, _mm512_srli_epi64(a, 8),
					     (const void *)fib->lpm4->tbl24, 4);
	return ok;
}
#endif

#endif
