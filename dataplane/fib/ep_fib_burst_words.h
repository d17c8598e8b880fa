/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The tbl24 words a stage read for a burst, handed to the route stage of
 * the same burst: a parse that checked eight frames in vector registers
 * reads every packet's word there (ep_fib_x8_words, ep_fib_x8.h), and the
 * route stage routes on them (ep_fib_route_burst_words) instead of reading
 * each frame's destination and its tbl24 word again.
 *
 *   producer  writes words[0 .. n) (packet i's word in words[i]), then
 *             ep_fib_burst_words_give(bw, n, pkts[0]) -- n = 0 when it
 *             has no word for some packet, or diverted one
 *   consumer  ep_fib_burst_words_take(bw, pkts, n): the words when its
 *             call is on exactly the burst given (same count, same first
 *             mbuf: the engine keeps passed packets in order, so a stage
 *             between that dropped one changes the count), else NULL;
 *             either way the words are forgotten, so a later burst never
 *             sees them
 *   a stage between that wants to know without taking (the vBNG's
 *   subscriber stage: the lines it would prefetch are read already)
 *   asks ep_fib_burst_words_for.
 *
 * The same handshake as the ACL filter's given inputs (ep_acl_filter_give,
 * acl/ep_acl_node.h), one per worker context of a pipeline that has an x8
 * parse (the router, the vBNG uplink).
 */
#ifndef EP_FIB_BURST_WORDS_H
#define EP_FIB_BURST_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "ep_stage.h"

/** The words of the burst of n packets from first; none when n is 0. */
struct ep_fib_burst_words {
	uint32_t words[EP_BURST_MAX];
	uint16_t n;
	const struct rte_mbuf *first;
};

/** After the producer's loop: words[0 .. @p n) are those of the @p n
 *  packets it passes on from @p first, in order (@p n 0: no words). */
static __rte_always_inline void
ep_fib_burst_words_give(struct ep_fib_burst_words *bw, uint16_t n, const struct rte_mbuf *first)
{
	bw->n = n;
	bw->first = first;
}

/** Whether the words given are those of the burst @p pkts of @p n packets
 *  (nothing taken). */
static __rte_always_inline bool
ep_fib_burst_words_for(const struct ep_fib_burst_words *bw, struct rte_mbuf *const *pkts,
		       uint16_t n)
{
	return bw->n != 0 && bw->n == n && bw->first == pkts[0];
}

/** The words of the burst @p pkts of @p n packets if they were given for
 *  exactly it, else NULL; the words are forgotten either way. */
static __rte_always_inline const uint32_t *
ep_fib_burst_words_take(struct ep_fib_burst_words *bw, struct rte_mbuf *const *pkts, uint16_t n)
{
	const bool mine = ep_fib_burst_words_for(bw, pkts, n);

	bw->n = 0;
	return mine ? bw->words : NULL;
}

#endif
