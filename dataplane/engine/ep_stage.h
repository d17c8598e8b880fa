/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The stage contract: fast-path header, included by every stage.
 *
 * A stage is a function over a burst.  It reads pkts[0..n), writes one next
 * action per packet into next[] (the engine zeroes next[] before the call, so
 * "continue to the next stage" costs nothing) and returns how many packets it
 * diverted (dropped, sent, consumed).  The engine then, in one pass:
 *
 *   next[i] == EP_NEXT_CONTINUE    -> kept, compacted for the next stage
 *   EP_NEXT_DROP(reason)           -> freed in bulk, stage.drops[reason]++
 *   EP_NEXT_TX(port)               -> queued for tx on logical port `port`
 *   EP_NEXT_CONSUMED               -> the stage kept or freed the mbuf itself
 *
 * When a stage returns 0 the pass is skipped, so a stage that diverts nothing
 * costs only its own work.  Every stage is timed: a polling worker reads the
 * clock at each stage boundary on one burst in EP_STAGE_TIMED_EVERY, and on
 * the others once after tx, splitting that burst's exact time over rx, the
 * stages and tx by the shares of the last timed burst (worker.c; rdtsc
 * costs ~80 cycles on some virtual machines, six of them a burst ~8 cycles
 * a packet).  w->stage_tsc is the stage's clock: when it was called on a
 * timed burst, when the burst's rx began on the others (at most the
 * burst's length, a few microseconds, older).
 *
 * Stage functions must not block, allocate from the heap, take locks or
 * sleep.  Tables they read change only by the three ways of ep_rcu.h.
 */
#ifndef EP_STAGE_H
#define EP_STAGE_H

#include <stdint.h>
#include <rte_mbuf.h>

#include "ep_drop.h"
#include "ep_meta.h"

#define EP_BURST_MAX 64         /**< largest burst a stage sees */
#define EP_STAGE_TIMED_EVERY 16 /**< a polling worker times each stage on one burst in this many (power of 2) */

#define EP_NEXT_CONTINUE  ((uint16_t)0)
#define EP_NEXT_CONSUMED  ((uint16_t)0x2000)
#define EP_NEXT_TX_FLAG   ((uint16_t)0x4000)
#define EP_NEXT_DROP_FLAG ((uint16_t)0x8000)
#define EP_NEXT_ARG_MASK  ((uint16_t)0x0fff)

/** Next action: drop, counted under @p reason (enum ep_drop_reason). */
#define EP_NEXT_DROP(reason) ((uint16_t)(EP_NEXT_DROP_FLAG | (uint16_t)(reason)))
/** Next action: transmit on logical port index @p port (config order). */
#define EP_NEXT_TX(port)     ((uint16_t)(EP_NEXT_TX_FLAG | (uint16_t)(port)))

/**
 * A stage function.
 * @param ctx   the stage's per-worker context (from ep_worker_add_stage)
 * @param pkts  the burst; the stage may modify packets and replace pointers
 *              (a stage that builds a reply may swap in a new mbuf)
 * @param next  one next action per packet, zero on entry
 * @param n     burst size, 1..EP_BURST_MAX
 * @return      number of packets whose next action is not CONTINUE
 */
typedef uint16_t (*ep_stage_fn)(void *ctx, struct rte_mbuf **pkts, uint16_t *next,
				uint16_t n);

/** Per-stage counters; owned by one worker, written without atomics. */
struct ep_stage_stats {
	uint64_t calls;          /**< bursts processed */
	uint64_t pkts_in;        /**< packets entering the stage */
	uint64_t pkts_out;       /**< packets continuing to the next stage */
	uint64_t pkts_tx;        /**< packets this stage sent to a port */
	uint64_t pkts_consumed;  /**< packets the stage kept or freed itself */
	uint64_t cycles;         /**< TSC cycles inside the stage, dispatch included */
	uint64_t drops[EP_DROP__COUNT];
};

struct ep_stage {
	char name[24];
	ep_stage_fn fn;
	void *ctx;
	struct ep_stage_stats stats;
} __rte_cache_aligned;

/**
 * For a stage that hands the packets it returned as consumed to a library
 * that frees some of them itself (rte_sched frees what its full queues
 * refuse and only says how many): count @p n of them as dropped under
 * @p reason instead of as consumed.  Called from the stage function, before
 * the engine adds the consumed packets to the stage's counters.
 */
static inline void
ep_stage_consumed_were_dropped(struct ep_stage *s, int reason, uint64_t n)
{
	s->stats.pkts_consumed -= n;
	s->stats.drops[reason] += n;
}

#endif
