/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Frame replay (`pipeline = replay`): a benchmark feeder that learns the
 * first `frames` frames its rx port delivers (a pcap through net_pcap), in
 * order, and then sends them again and again on its tx port, each send a
 * fresh mbuf from its own pool of which it writes only the first
 * `write_bytes` bytes of the frame (the headers a consumer parses) and the
 * lengths.  The rest of the buffer keeps whatever an earlier frame left
 * there: the consumer the replay exists for (the vBNG downlink, fed through
 * a net_ring) reads only headers, and net_null's tx reads nothing.
 *
 * Why not net_pcap's infinite rx behind an xconnect: net_pcap copies every
 * byte of every stored frame into a fresh mbuf (4096 stored 504-byte
 * frames, sources and destinations larger than the 2 MiB L2), 241-246 of
 * the ~253 cycles a packet that feeder costs on this host -- slower than
 * the downlink worker it feeds, so a benchmark behind it measures the
 * feeder.  A NIC's DMA does not cost the receiving core that copy either.
 */
#ifndef EP_REPLAY_H
#define EP_REPLAY_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "ep_err.h"

#define EP_REPLAY_MAX_FRAMES 65536u     /**< `frames` at most */
#define EP_REPLAY_WRITE_ALL  0          /**< write_bytes: every byte of the frame */
#define EP_REPLAY_WRITE_DEF  64         /**< write_bytes by default: one vector copy */

/** ep_replay.drops[]: what each counts. */
enum ep_replay_drop { EP_REPLAY_ALLOC_FAILED, EP_REPLAY_REFUSED, EP_REPLAY_LEARNT };

struct ep_replay {
	struct rte_mempool *pool;       /**< where every sent frame's mbuf comes from */
	struct rte_mbuf **tpl;          /**< the frames learnt, held for the run */
	const uint8_t **data;           /**< their first bytes (no mbuf line read per send) */
	uint16_t *len;                  /**< their lengths */
	uint32_t want;                  /**< frames to learn before sending */
	uint32_t n_tpl;                 /**< frames learnt */
	uint32_t next;                  /**< the next frame to send */
	uint16_t write_bytes;           /**< bytes written per send, 0 = whole frame */
	uint16_t tx_port;               /**< logical port the stage sends to */
	uint64_t sent;                  /**< frames produced */
	/** The stage's drop counters (gen_alloc_failed, replay_refused,
	 *  replay_learnt), or the replay's own where it has no stage (tests). */
	uint64_t *drops[3];
	uint64_t own_drops[3];
};

/** A replay of @p frames frames (1..EP_REPLAY_MAX_FRAMES) writing
 *  @p write_bytes of each; NULL with @p err set. */
struct ep_replay *ep_replay_create(uint32_t frames, uint16_t write_bytes, uint16_t tx_port,
				   struct rte_mempool *pool, int socket, struct ep_err *err);
/** Frees the learnt frames and the replay (not the pool). NULL is a no-op. */
void ep_replay_free(struct ep_replay *r);
/** Keep received frames as templates until `frames` are learnt; every
 *  other one is freed and counted (replay_learnt beyond the count,
 *  replay_refused chained, empty or too large for the pool's buffers).
 *  Returns how many were kept. */
uint16_t ep_replay_learn(struct ep_replay *r, struct rte_mbuf **pkts, uint16_t n);
/** Up to @p max frames in fresh mbufs, the learnt frames in order, cycling;
 *  0 until all are learnt or when the pool is empty (counted). */
uint16_t ep_replay_produce(struct ep_replay *r, struct rte_mbuf **pkts, uint16_t max);
/** The one stage: every frame to the tx port. */
uint16_t ep_replay_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

#endif
