/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `replay` pipeline (replay.h): learn a pcap's frames from the rx port,
 * then send them for ever, writing only their headers.
 *
 *   [port feed]
 *   device = net_pcap0,rx_pcap=down.pcap,infinite_rx=1
 *   [worker feed]
 *   pipeline = replay
 *   rx = feed            # read until `frames` frames are learnt, then never
 *   tx = core
 *   frames = 4096        # the pcap's frame count: learnt in the pcap's order
 *   write_bytes = 64     # bytes of each frame written per send; all = every byte
 *
 * Per sent frame: one mbuf from a per-lcore-cached pool (a bulk get per
 * burst), one 64-byte copy from the learnt frame (constant size, two
 * 32-byte vector moves) and the two length words.  The learnt frames' first
 * bytes and lengths are kept in two arrays (4096 frames: 256 KiB of header
 * bytes read per cycle, 8 KiB of lengths), so no learnt mbuf's own line is
 * read per send.  The pool is the replay's own, with the tx port's private
 * area and data room, so the consumer finds the frame where that port's
 * own rx would have put it.
 */
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>

#include "ep_engine.h"
#include "ep_meta.h"
#include "gen.h"
#include "replay.h"

#define REPLAY_POOL_MBUFS 16383         /* the ring (1024) and the consumer's queues, many times */
#define REPLAY_POOL_CACHE 256

struct ep_replay *
ep_replay_create(uint32_t frames, uint16_t write_bytes, uint16_t tx_port,
		 struct rte_mempool *pool, int socket, struct ep_err *err)
{
	struct ep_replay *r;

	if (frames == 0 || frames > EP_REPLAY_MAX_FRAMES) {
		ep_err_set(err, "frames must be 1..%u", EP_REPLAY_MAX_FRAMES);
		return NULL;
	}
	r = rte_zmalloc_socket("ep_replay", sizeof(*r), RTE_CACHE_LINE_SIZE, socket);
	if (r == NULL) {
		ep_err_set(err, "out of memory");
		return NULL;
	}
	r->tpl = rte_zmalloc_socket("ep_replay_tpl", sizeof(r->tpl[0]) * frames,
				    RTE_CACHE_LINE_SIZE, socket);
	r->data = rte_zmalloc_socket("ep_replay_data", sizeof(r->data[0]) * frames,
				     RTE_CACHE_LINE_SIZE, socket);
	r->len = rte_zmalloc_socket("ep_replay_len", sizeof(r->len[0]) * frames,
				    RTE_CACHE_LINE_SIZE, socket);
	if (r->tpl == NULL || r->data == NULL || r->len == NULL) {
		ep_replay_free(r);
		ep_err_set(err, "out of memory for %u frames", frames);
		return NULL;
	}
	for (int i = 0; i < 3; i++)
		r->drops[i] = &r->own_drops[i];
	r->pool = pool;
	r->want = frames;
	r->write_bytes = write_bytes;
	r->tx_port = tx_port;
	return r;
}

void
ep_replay_free(struct ep_replay *r)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; i < r->n_tpl; i++)
		rte_pktmbuf_free(r->tpl[i]);
	rte_free(r->tpl);
	rte_free(r->data);
	rte_free(r->len);
	rte_free(r);
}

uint16_t
ep_replay_learn(struct ep_replay *r, struct rte_mbuf **pkts, uint16_t n)
{
	const uint32_t room = rte_pktmbuf_data_room_size(r->pool) - RTE_PKTMBUF_HEADROOM;
	uint16_t kept = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (r->n_tpl == r->want) {
			(*r->drops[EP_REPLAY_LEARNT])++;
			rte_pktmbuf_free(m);
			continue;
		}
		/* One segment that a pool buffer holds: a send copies from one
		 * place into one place. */
		if (m->nb_segs != 1 || m->data_len > room || m->data_len == 0) {
			(*r->drops[EP_REPLAY_REFUSED])++;
			rte_pktmbuf_free(m);
			continue;
		}
		r->tpl[r->n_tpl] = m;
		r->data[r->n_tpl] = rte_pktmbuf_mtod(m, const uint8_t *);
		r->len[r->n_tpl] = m->data_len;
		r->n_tpl++;
		kept++;
	}
	return kept;
}

uint16_t
ep_replay_produce(struct ep_replay *r, struct rte_mbuf **pkts, uint16_t max)
{
	uint32_t k = r->next;

	if (r->n_tpl < r->want || max == 0)
		return 0;
	if (unlikely(rte_pktmbuf_alloc_bulk(r->pool, pkts, max) != 0)) {
		/* Everything is downstream: nothing sent, counted. */
		*r->drops[EP_REPLAY_ALLOC_FAILED] += max;
		return 0;
	}
	for (uint16_t i = 0; i < max; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
		const uint16_t len = r->len[k];

		if (r->write_bytes == EP_REPLAY_WRITE_DEF && len >= EP_REPLAY_WRITE_DEF)
			memcpy(d, r->data[k], EP_REPLAY_WRITE_DEF);
		else
			rte_memcpy(d, r->data[k], r->write_bytes == EP_REPLAY_WRITE_ALL ||
				   r->write_bytes > len ? len : r->write_bytes);
		m->data_len = len;
		m->pkt_len = len;
		if (++k == r->n_tpl)
			k = 0;
	}
	r->next = k;
	r->sent += max;
	return max;
}

uint16_t
ep_replay_tx_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct ep_replay *r = ctx;
	const uint16_t to = EP_NEXT_TX(r->tx_port);

	(void)pkts;
	for (uint16_t i = 0; i < n; i++)
		next[i] = to;
	return n;
}

static struct ep_pipeline_type replay_type;

/* Until every frame is learnt, read the rx queues and keep what comes
 * (the engine does not poll them: source_polls_rx); then send. */
static uint16_t
replay_source(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t max)
{
	struct ep_replay *r = w->pipeline_ctx;

	for (int i = 0; i < w->n_rx && r->n_tpl < r->want; i++) {
		const struct ep_rx_queue *rq = &w->rx[i];
		uint16_t n = rte_eth_rx_burst(w->engine->ports[rq->port].port_id, rq->queue,
					      pkts, max);

		ep_replay_learn(r, pkts, n);
	}
	return ep_replay_produce(r, pkts, max);
}

static int
replay_build(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	struct ep_cfg *cfg = e->cfg;
	struct ep_port *port = ep_gen_tx_port(e, w, err);
	const char *wb;
	struct rte_mempool *pool;
	struct ep_replay *r;
	struct ep_err e2 = { "" };
	char name[RTE_MEMPOOL_NAMESIZE];
	uint64_t frames, write_bytes = EP_REPLAY_WRITE_DEF;
	unsigned int s = rte_lcore_to_socket_id(w->lcore);
	int socket = s < RTE_MAX_NUMA_NODES ? (int)s : SOCKET_ID_ANY;

	if (port == NULL)
		return -1;
	if (w->n_rx == 0)
		return ep_cfg_section_error(cfg, w->cfg, err,
					    "needs 'rx = <port>': where the frames are learnt");
	if (ep_cfg_u64(cfg, w->cfg, "frames", 0, 1, EP_REPLAY_MAX_FRAMES, &frames, err) < 0)
		return -1;
	if (frames == 0)
		return ep_cfg_section_error(cfg, w->cfg, err,
					    "needs 'frames = N': how many frames to learn");
	wb = ep_cfg_str(cfg, w->cfg, "write_bytes", NULL, err);
	if (err->msg[0] != '\0')
		return -1;
	if (wb != NULL && strcmp(wb, "all") == 0)
		write_bytes = EP_REPLAY_WRITE_ALL;
	else if (ep_cfg_u64(cfg, w->cfg, "write_bytes", EP_REPLAY_WRITE_DEF, 1, UINT16_MAX,
			    &write_bytes, err) < 0)
		return -1;
	snprintf(name, sizeof(name), "ep_replay_%u", w->id);
	pool = rte_pktmbuf_pool_create(name, REPLAY_POOL_MBUFS, REPLAY_POOL_CACHE,
				       port->priv_size ? port->priv_size : EP_META_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (pool == NULL)
		return ep_cfg_section_error(cfg, w->cfg, err, "mbuf pool of %u: %s",
					    REPLAY_POOL_MBUFS, rte_strerror(rte_errno));
	r = ep_replay_create((uint32_t)frames, (uint16_t)write_bytes, port->index, pool, socket,
			     &e2);
	if (r == NULL) {
		rte_mempool_free(pool);
		return ep_cfg_section_error(cfg, w->cfg, err, "%s", e2.msg);
	}
	if (ep_worker_add_stage(w, "replay_tx", ep_replay_tx_stage, r, err) < 0) {
		ep_replay_free(r);
		rte_mempool_free(pool);
		return -1;
	}
	{
		uint64_t *d = w->stages[w->n_stages - 1].stats.drops;

		r->drops[EP_REPLAY_ALLOC_FAILED] = &d[EP_DROP_GEN_ALLOC_FAILED];
		r->drops[EP_REPLAY_REFUSED] = &d[EP_DROP_REPLAY_REFUSED];
		r->drops[EP_REPLAY_LEARNT] = &d[EP_DROP_REPLAY_LEARNT];
	}
	w->pipeline_ctx = r;
	return 0;
}

/* The pool is not freed here: ports are stopped after pipeline teardown
 * and may still hold its mbufs (as gen's). */
static void
replay_teardown(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++)
		if (e->workers[i]->type == &replay_type)
			ep_replay_free(e->workers[i]->pipeline_ctx);
}

static struct ep_pipeline_type replay_type = {
	.name = "replay",
	.build = replay_build,
	.source = replay_source,
	.source_polls_rx = true,
	.stage_sets_in_port = true,     /* its stage reads no packet's meta line */
	.teardown = replay_teardown,
};
EP_PIPELINE_REGISTER(replay_type);
