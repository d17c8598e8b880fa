/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker: run to completion over bursts.
 *
 *   loop:
 *     for each rx queue (or the pipeline's source):
 *        n = rx_burst()                      timed as the "rx" stage
 *        for each stage: next[] = 0; k = stage(pkts, next, n)   timed per stage
 *                        if k: dispatch: drop (bulk free, count reason),
 *                              queue for tx, or note consumed; compact the rest
 *        tx_burst per port with pending packets   timed as the "tx" stage
 *     (a type with rx_lookahead receives each queue's next burst before
 *      it runs the current one, and prefetches its lines between the
 *      current burst's stages: "Lookahead" below)
 *     between bursts: run control messages, report RCU quiescent state
 *     after an empty poll: the worker's polling policy (ep_power.h) says
 *       poll again or pause; a pause goes RCU-offline, sleeps, waits on the
 *       rx sockets or in the core's light sleep, and comes back online
 *
 * Cost of the machinery itself: one clock read a burst (after tx; an
 * iteration starts where the last one ended), and on one burst in
 * EP_STAGE_TIMED_EVERY one per stage boundary instead (see split_untimed:
 * rx, the stages and tx still get every burst's cycles, split by the timed
 * bursts' shares).  rdtsc is ~25 cycles on some hosts and ~80 back to back
 * on the guests of docs/benchmarks.md, where the router's seven reads a
 * burst cost ~8 cycles a packet (docs/benchmarks/router-passes.md, "The
 * evening round").  Then next[] zeroed per stage (inline
 * stores: next_clear), and the dispatch pass only when a stage diverted
 * something -- with a short cut when it sent the whole burst to one port,
 * as a pipeline's last stage does.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ep_engine.h"
#include "engine_internal.h"
#include "power_internal.h"

#define EP_CALL_SPIN_US 50   /* ep_worker_call: spin this long before sleeping */

int
ep_worker_add_stage(struct ep_worker *w, const char *name, ep_stage_fn fn, void *ctx,
		    struct ep_err *err)
{
	struct ep_stage *s;

	if (w->n_stages >= EP_MAX_STAGES)
		return ep_err_set(err, "worker %s: more than %d stages", w->name, EP_MAX_STAGES);
	s = &w->stages[w->n_stages++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->fn = fn;
	s->ctx = ctx;
	return 0;
}

/*
 * A burst whose every packet went to one port or was consumed (a stage
 * that packs several packets into one, as the vCMTS's DEPI chains frames
 * behind the first of each packet): one vectorisable pass that checks it,
 * then one branch-free pass that appends the sent ones in order, where the
 * general loop below takes an unpredictable branch per packet.  Returns
 * false, having done nothing, for any other burst.
 */
static inline bool
dispatch_tx_or_consumed(struct ep_worker *w, struct ep_stage *s, struct rte_mbuf **pkts,
			const uint16_t *next, uint16_t n)
{
	uint16_t tx = EP_NEXT_CONSUMED, other = 0, k;
	struct ep_txbuf *tb;

	for (uint16_t i = 0; i < n && tx == EP_NEXT_CONSUMED; i++)
		tx = next[i];
	if ((tx & ~EP_NEXT_ARG_MASK) != EP_NEXT_TX_FLAG ||
	    (tx & EP_NEXT_ARG_MASK) >= w->engine->n_ports)
		return false;
	for (uint16_t i = 0; i < n; i++)
		other |= (uint16_t)(next[i] != tx && next[i] != EP_NEXT_CONSUMED);
	if (other != 0)
		return false;
	tb = &w->txbuf[tx & EP_NEXT_ARG_MASK];
	k = tb->n;
	for (uint16_t i = 0; i < n; i++) {
		tb->pkts[k] = pkts[i];
		k = (uint16_t)(k + (next[i] == tx));
	}
	s->stats.pkts_tx += (uint16_t)(k - tb->n);
	s->stats.pkts_consumed += (uint16_t)(n - (k - tb->n));
	tb->n = k;
	w->tx_pending |= 1u << (tx & EP_NEXT_ARG_MASK);
	return true;
}

/*
 * Apply the next actions a stage set: keep CONTINUE packets in order at the
 * front of pkts[], queue TX ones, free DROP ones in one bulk call.  An action
 * outside the contract is a pipeline bug: the packet is dropped as NO_NEXT
 * rather than trusted.
 */
static inline uint16_t
dispatch(struct ep_worker *w, struct ep_stage *s, struct rte_mbuf **pkts, const uint16_t *next,
	 uint16_t n, uint16_t diverted)
{
	struct rte_mbuf *drop[EP_BURST_MAX];
	uint16_t keep = 0, nd = 0, same = 0;
	int n_ports = w->engine->n_ports;

	/* The whole burst to one port (the last stage of a forwarding
	 * pipeline): one vectorisable compare pass and one copy instead of the
	 * per-packet branches below.  Looked for only when the stage says it
	 * diverted every packet. */
	if (diverted == n)
		for (uint16_t i = 0; i < n; i++)
			same |= (uint16_t)(next[i] ^ next[0]);
	if (diverted == n && same == 0 && (next[0] & ~EP_NEXT_ARG_MASK) == EP_NEXT_TX_FLAG &&
	    (next[0] & EP_NEXT_ARG_MASK) < n_ports) {
		struct ep_txbuf *tb = &w->txbuf[next[0] & EP_NEXT_ARG_MASK];

		memcpy(&tb->pkts[tb->n], pkts, sizeof(pkts[0]) * n);
		tb->n = (uint16_t)(tb->n + n);
		w->tx_pending |= 1u << (next[0] & EP_NEXT_ARG_MASK);
		s->stats.pkts_tx += n;
		return 0;
	}
	if (diverted == n && dispatch_tx_or_consumed(w, s, pkts, next, n))
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		uint16_t a = next[i];
		uint16_t arg = a & EP_NEXT_ARG_MASK;

		if (a == EP_NEXT_CONTINUE) {
			pkts[keep++] = pkts[i];
		} else if ((a & EP_NEXT_DROP_FLAG) != 0) {
			s->stats.drops[arg < EP_DROP__COUNT ? arg : EP_DROP_NO_NEXT]++;
			drop[nd++] = pkts[i];
		} else if ((a & EP_NEXT_TX_FLAG) != 0) {
			struct ep_txbuf *tb;

			if (arg >= n_ports) {
				s->stats.drops[EP_DROP_BAD_TX_PORT]++;
				drop[nd++] = pkts[i];
				continue;
			}
			tb = &w->txbuf[arg];
			tb->pkts[tb->n++] = pkts[i];
			w->tx_pending |= 1u << arg;
			s->stats.pkts_tx++;
		} else if (a == EP_NEXT_CONSUMED) {
			s->stats.pkts_consumed++;
		} else {
			s->stats.drops[EP_DROP_NO_NEXT]++;
			drop[nd++] = pkts[i];
		}
	}
	if (nd != 0)
		rte_pktmbuf_free_bulk(drop, nd);
	return keep;
}

/* tx of the queued packets, untimed. */
static inline void
flush_tx(struct ep_worker *w)
{
	uint32_t pending = w->tx_pending;
	uint64_t sent_total = 0, offered = 0;

	while (pending != 0) {
		int p = __builtin_ctz(pending);
		struct ep_txbuf *tb = &w->txbuf[p];
		uint16_t sent;

		pending &= pending - 1;
		sent = rte_eth_tx_burst(w->engine->ports[p].port_id, w->txq[p], tb->pkts, tb->n);
		if (sent < tb->n) {
			w->tx_stage.stats.drops[EP_DROP_TX_FULL] += tb->n - sent;
			rte_pktmbuf_free_bulk(&tb->pkts[sent], tb->n - sent);
		}
		offered += tb->n;
		sent_total += sent;
		tb->n = 0;
	}
	w->tx_pending = 0;
	w->tx_stage.stats.calls++;
	w->tx_stage.stats.pkts_in += offered;
	w->tx_stage.stats.pkts_out += sent_total;
	w->stats.tx_pkts += sent_total;
}

/* A send from inside a stage or the service hook: its cycles are tx's, and
 * the region around it (timed or split) leaves them out of its own. */
static inline void
book_tx_inside(struct ep_worker *w, uint64_t t0)
{
	uint64_t c = rte_rdtsc() - t0;

	w->tx_stage.stats.cycles += c;
	w->booked_inside += c;
}

/* tx of the queued packets, timed from @p t0 (the end of the last stage);
 * returns the time it ended. */
static uint64_t
flush_tx_at(struct ep_worker *w, uint64_t t0)
{
	uint64_t t1;

	flush_tx(w);
	t1 = rte_rdtsc();
	w->tx_stage.stats.cycles += t1 - t0;
	return t1;
}

void
ep_worker_flush_tx(struct ep_worker *w)
{
	uint64_t t0 = rte_rdtsc();

	flush_tx(w);
	book_tx_inside(w, t0);
}

void
ep_worker_emit(struct ep_worker *w, uint16_t port, struct rte_mbuf *m)
{
	struct ep_txbuf *tb;

	if (unlikely(port >= w->engine->n_ports)) {
		w->tx_stage.stats.drops[EP_DROP_BAD_TX_PORT]++;
		rte_pktmbuf_free(m);
		return;
	}
	tb = &w->txbuf[port];
	/* Keep room for a whole burst the dispatch may still add. */
	if (tb->n >= EP_BURST_MAX) {
		ep_worker_tx(w, port, tb->pkts, tb->n);
		tb->n = 0;
	}
	tb->pkts[tb->n++] = m;
	w->tx_pending |= 1u << port;
}

void
ep_worker_tx(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t t0 = rte_rdtsc();
	uint16_t sent = 0;

	if (unlikely(port >= w->engine->n_ports)) {
		w->tx_stage.stats.drops[EP_DROP_BAD_TX_PORT] += n;
		rte_pktmbuf_free_bulk(pkts, n);
		return;
	}
	while (sent < n) {
		uint16_t k = rte_eth_tx_burst(w->engine->ports[port].port_id, w->txq[port],
					      pkts + sent, n - sent);

		if (k == 0)
			break;
		sent += k;
	}
	if (sent < n) {
		w->tx_stage.stats.drops[EP_DROP_TX_FULL] += n - sent;
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	}
	w->tx_stage.stats.calls++;
	w->tx_stage.stats.pkts_in += n;
	w->tx_stage.stats.pkts_out += sent;
	w->stats.tx_pkts += sent;
	book_tx_inside(w, t0);
}

uint16_t
ep_worker_tx_keep(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t t0 = rte_rdtsc();
	uint16_t sent = 0;

	if (unlikely(port >= w->engine->n_ports))
		return 0;
	while (sent < n) {
		uint16_t k = rte_eth_tx_burst(w->engine->ports[port].port_id, w->txq[port],
					      pkts + sent, n - sent);

		if (k == 0)
			break;
		sent += k;
	}
	w->tx_stage.stats.calls++;
	w->tx_stage.stats.pkts_in += sent;
	w->tx_stage.stats.pkts_out += sent;
	w->stats.tx_pkts += sent;
	book_tx_inside(w, t0);
	return sent;
}

/*
 * Lookahead (ep_pipeline_type.rx_lookahead).  Fed by another core (an
 * rte_ring behind net_ring), every line of a burst the parse reads is a
 * cross-core miss: the mbuf's first two lines and the ep_meta line (the
 * feeding core's rx wrote them) and the frame's first 64 bytes (its copy).
 * Prefetched a few frames ahead inside the parse, they stall it: the
 * worker's other stages have no misses of their own in flight to overlap
 * (on the Intel Xeon of docs/benchmarks/bng-downlink-passes.md, "bng-downlink:
 * receiving a burst ahead", the ring-fed downlink's parse cost 76 cycles a
 * frame against 15 read from its own rx).  So the next
 * burst is received before the current one runs, and its lines are
 * prefetched in slices after each of the current burst's stages: first
 * the mbuf lines of every frame, then (their buf_addr and data_off having
 * arrived) the frames.  What is left after the last stage is issued before
 * the service hook and tx.  The prefetches' own cycles are counted in the
 * stage they follow.
 */
static __rte_always_inline void
ahead_pump(struct ep_worker *w, uint16_t steps)
{
	const uint16_t n = w->pump_n;
	const uint16_t end = (uint16_t)RTE_MIN((uint32_t)w->pump_pos + steps, 2u * n);
	uint16_t pos = w->pump_pos;

	for (; pos < end && pos < n; pos++) {
		struct rte_mbuf *m = w->pump[pos];

		rte_prefetch0(m);
		rte_prefetch0(RTE_PTR_ADD(m, RTE_CACHE_LINE_SIZE));
		rte_prefetch0(ep_meta(m));
	}
	for (; pos < end; pos++) {
		const uint8_t *p = rte_pktmbuf_mtod(w->pump[pos - n], const uint8_t *);

		rte_prefetch0(p);
		rte_prefetch0(p + 63);
	}
	w->pump_pos = pos;
}

/* The next burst of @p a is the one to prefetch while the current runs
 * through @p n_stages stages. */
static inline void
ahead_pump_start(struct ep_worker *w, const struct ep_rx_ahead *a, int n_stages)
{
	w->pump = a->pkts;
	w->pump_n = a->n;
	w->pump_pos = 0;
	w->pump_step = (uint16_t)((2u * a->n + (unsigned int)n_stages + 1) /
				  (unsigned int)(n_stages + 2));
}

/* After the last stage: the rest, and the pump stops. */
static inline void
ahead_pump_finish(struct ep_worker *w)
{
	if (w->pump_n != 0)
		ahead_pump(w, (uint16_t)(2 * w->pump_n));
	w->pump_n = 0;
}

/* The pipeline's service hook, timed like a stage. */
static inline uint16_t
run_service(struct ep_worker *w, uint64_t *tsc)
{
	uint64_t t0 = *tsc, t1, inside = w->booked_inside;
	uint16_t k;

	w->stage_tsc = t0;
	k = w->type->service(w);
	if (w->pump_n != 0)
		ahead_pump(w, w->pump_step);
	t1 = rte_rdtsc();
	inside = w->booked_inside - inside;
	w->service_stage.stats.calls++;
	w->service_stage.stats.pkts_out += k;
	w->service_stage.stats.pkts_in += k;
	w->service_stage.stats.cycles += t1 - t0 - RTE_MIN(inside, t1 - t0);
	*tsc = t1;
	return k;
}

/*
 * Where a burst's cycles go.  A timed burst reads the clock at every stage
 * boundary (rdtsc: ~80 TSC ticks back to back on the Zen 4 guest of
 * docs/benchmarks/router-passes.md, "The evening round"; seven reads a
 * burst were ~9 cycles a packet of the router's ~150) and keeps the
 * shares of rx, each stage and tx in it (16-bit fixed point).  The other
 * bursts of a polling worker (EP_STAGE_TIMED_EVERY - 1 of every
 * EP_STAGE_TIMED_EVERY) read it once,
 * after their tx, and split that exact total by the shares of the last
 * timed burst that ran every stage and tx; the last part that ran gets the
 * rest, so the parts always add up to the burst's time.
 */
#define SHARE_RX 0
#define SHARE_STAGE(si) (1 + (si))

static __rte_always_inline uint64_t
share_of(const struct ep_worker *w, int part, uint64_t total)
{
	return (total * w->stage_share[part]) >> 16;
}

/* Stages [0, @p n_ran) ran, then tx if @p tx; @p total cycles since the
 * burst's rx began. */
static inline void
split_untimed(struct ep_worker *w, int n_ran, bool tx, uint64_t total)
{
	uint64_t given = share_of(w, SHARE_RX, total), c;
	int si;

	w->rx_stage.stats.cycles += given;
	for (si = 0; si < n_ran - 1 + tx; si++) {
		c = share_of(w, SHARE_STAGE(si), total);
		w->stages[si].stats.cycles += c;
		given += c;
	}
	c = total - RTE_MIN(given, total);
	if (tx)
		w->tx_stage.stats.cycles += c;
	else
		w->stages[si].stats.cycles += c;
}

/*
 * next[] zeroed for a stage (its contract: CONTINUE on entry) by stores of
 * a constant size, half the array for a burst of up to EP_BURST_MAX / 2
 * (the engine's default burst of 32: four 16-byte stores), else all of it:
 * inline, where memset of n * 2 bytes was a call through the PLT into
 * libc's size dispatch for every stage of every burst
 * (docs/benchmarks/bng-passes.md, "Thirteenth pass, the engine's part":
 * the vBNG uplink's five stages).  Entries past n are
 * never read; zeroing them costs nothing more.
 */
static __rte_always_inline void
next_clear(uint16_t *next, uint16_t n)
{
	if (likely(n <= EP_BURST_MAX / 2))
		memset(next, 0, sizeof(next[0]) * (EP_BURST_MAX / 2));
	else
		memset(next, 0, sizeof(next[0]) * EP_BURST_MAX);
}

/*
 * The stages over one burst.  @p timed: the TSC chained (@p tsc is the
 * time the burst starts, the end of rx, and comes back as the time its
 * last stage ended, which is the start of the tx that follows), each
 * stage's cycles into @p dt when not NULL; untimed: no clock read, every
 * stage sees @p tsc (the burst's start) as w->stage_tsc.  *n_ran: the
 * stages that ran, when not NULL.  Returns the packets that fell off the
 * end.
 */
static __rte_always_inline uint16_t
run_burst_at(struct ep_worker *w, int first, struct rte_mbuf **pkts, uint16_t n, uint64_t *tsc,
	     const bool timed, uint64_t *dt, int *n_ran)
{
	uint16_t next[EP_BURST_MAX];
	uint64_t t0 = *tsc, inside = w->booked_inside;
	int si;

	w->stage_tsc = t0;
	for (si = first; si < w->n_stages && n != 0; si++) {
		struct ep_stage *s = &w->stages[si];
		uint16_t k;

		next_clear(next, n);
		s->stats.calls++;
		s->stats.pkts_in += n;
		k = s->fn(s->ctx, pkts, next, n);
		if (k != 0)
			n = dispatch(w, s, pkts, next, n, k);
		s->stats.pkts_out += n;
		if (w->pump_n != 0)
			ahead_pump(w, w->pump_step);
		if (timed) {
			uint64_t t1 = rte_rdtsc(), own = t1 - t0;

			/* Less what the stage's own sends booked to tx. */
			own -= RTE_MIN(w->booked_inside - inside, own);
			inside = w->booked_inside;
			if (dt != NULL)
				dt[si] = own;
			s->stats.cycles += own;
			t0 = t1;
			w->stage_tsc = t1;
		}
	}
	*tsc = t0;
	if (n != 0) {
		/* Fell off the end of the pipeline: a pipeline must decide. */
		struct ep_stage *last = w->n_stages ? &w->stages[w->n_stages - 1] : &w->rx_stage;

		last->stats.drops[EP_DROP_NO_NEXT] += n;
		rte_pktmbuf_free_bulk(pkts, n);
	}
	if (n_ran != NULL)
		*n_ran = si;
	return n;
}

/* The stages from @p first over a burst handed in by a caller (a test, a
 * pipeline's own injection), as if received on @p port (EP_RX_PORT_META:
 * each packet's in_port as the caller set it); the rx burst this may be
 * called from keeps its port. */
static uint16_t
run_handed_in(struct ep_worker *w, int first, uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t t = rte_rdtsc(), t0 = t, inside = w->booked_inside;
	uint16_t was = w->rx_port, k;

	w->rx_port = port;
	k = run_burst_at(w, first, pkts, n, &t, true, NULL, NULL);
	w->rx_port = was;
	/* Every cycle of it is booked (stages, tx): a service hook or a stage
	 * that handed the burst in leaves them out of its own. */
	w->booked_inside = inside + (t - t0);
	return k;
}

uint16_t
ep_worker_run_burst(struct ep_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	return run_handed_in(w, 0, EP_RX_PORT_META, pkts, n);
}

uint16_t
ep_worker_run_rx_burst(struct ep_worker *w, uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	if (w->type == NULL || !w->type->stage_sets_in_port)
		for (uint16_t i = 0; i < n; i++)
			ep_meta(pkts[i])->in_port = port;
	return run_handed_in(w, 0, port, pkts, n);
}

uint16_t
ep_worker_run_from(struct ep_worker *w, int first, struct rte_mbuf **pkts, uint16_t n)
{
	if (unlikely(first < 0 || first >= w->n_stages)) {
		w->rx_stage.stats.drops[EP_DROP_NO_NEXT] += n;
		rte_pktmbuf_free_bulk(pkts, n);
		return n;
	}
	return run_handed_in(w, first, EP_RX_PORT_META, pkts, n);
}

void
ep_worker_run_ahead(struct ep_worker *w)
{
	for (int i = 0; i < w->n_rx; i++) {
		struct ep_rx_ahead *a = &w->ahead[i];
		uint16_t n = a->n;

		if (n == 0)
			continue;
		a->n = 0;
		w->rx_stage.stats.pkts_in += n;
		w->rx_stage.stats.pkts_out += n;
		w->stats.rx_pkts += n;
		ep_worker_run_rx_burst(w, w->rx[i].port, a->pkts, n);
	}
	if (w->tx_pending != 0)
		ep_worker_flush_tx(w);
}

int
ep_worker_rx_fds(const struct ep_worker *w, struct pollfd *fds, int max)
{
	if (w->n_rx > max)
		return 0;
	for (int i = 0; i < w->n_rx; i++) {
		fds[i].fd = ep_port_rx_fd(w->rx[i].port, w->rx[i].queue);
		fds[i].events = POLLIN;
		fds[i].revents = 0;
		if (fds[i].fd < 0)
			return 0;
	}
	return w->n_rx;
}

/* Returns the messages it ran. */
static unsigned int
run_messages(struct ep_worker *w)
{
	void *objs[8];
	unsigned int k;

	if (likely(rte_ring_empty(w->msgq)))
		return 0;
	k = rte_ring_dequeue_burst(w->msgq, objs, RTE_DIM(objs), NULL);
	for (unsigned int i = 0; i < k; i++) {
		struct ep_worker_msg *m = objs[i];

		m->fn(w, m->arg);
		w->stats.msgs++;
		__atomic_store_n(&m->done, 1, __ATOMIC_RELEASE);
	}
	return k;
}

/*
 * Receive from one queue, or from the pipeline's source, and run the burst.
 * @p tsc: the time now; advanced to the end of the burst's tx when there
 * was a burst (an empty poll leaves it: its few cycles go to whatever is
 * timed next).
 */
static inline uint16_t
rx_queue_burst(struct ep_worker *w, const struct ep_rx_queue *rq, struct rte_mbuf **pkts)
{
	return rte_eth_rx_burst(w->engine->ports[rq->port].port_id, rq->queue, pkts, w->burst);
}

/*
 * rx_lookahead: the burst received ahead last time (or, when there was
 * none, one received now) into @p pkts, and the next one received into
 * @p a, whose lines the pump prefetches while @p pkts runs.  An empty
 * receive leaves @p a empty: nothing waits through an empty poll.
 */
static inline uint16_t
rx_ahead(struct ep_worker *w, const struct ep_rx_queue *rq, struct ep_rx_ahead *a,
	 struct rte_mbuf **pkts)
{
	uint16_t n = a->n;

	ahead_pump_finish(w);
	if (n == 0)
		n = rx_queue_burst(w, rq, pkts);
	else
		memcpy(pkts, a->pkts, sizeof(pkts[0]) * n);
	a->n = n == 0 ? 0 : rx_queue_burst(w, rq, a->pkts);
	if (a->n != 0)
		ahead_pump_start(w, a, w->n_stages);
	return n;
}

static inline uint16_t
poll_one(struct ep_worker *w, const struct ep_rx_queue *rq, struct ep_rx_ahead *a,
	 uint64_t *tsc)
{
	struct rte_mbuf *pkts[EP_BURST_MAX];
	/* A source that runs frames through the stages itself (a tester's
	 * receive side) has booked them: rx leaves them out. */
	uint64_t t0 = *tsc, t1, inside = w->booked_inside;
	uint16_t n;

	if (w->type->source != NULL)
		n = w->type->source(w, pkts, w->burst);
	else if (a != NULL)
		n = rx_ahead(w, rq, a, pkts);
	else
		n = rx_queue_burst(w, rq, pkts);
	w->stats.polls++;
	if (n == 0) {
		w->stats.empty_polls++;
		return 0;
	}
	/* A stage that writes the meta line anyway takes in_port from
	 * rx_port (stage_sets_in_port): no pass of its own here, which
	 * would write every packet's meta line before anything else reads it. */
	if (w->type->source != NULL) {
		w->rx_port = EP_RX_PORT_META;
	} else {
		w->rx_port = rq->port;
		if (!w->type->stage_sets_in_port)
			for (uint16_t i = 0; i < n; i++)
				ep_meta(pkts[i])->in_port = rq->port;
	}
	w->rx_stage.stats.calls++;
	w->rx_stage.stats.pkts_in += n;
	w->rx_stage.stats.pkts_out += n;
	w->stats.rx_pkts += n;
	if (likely((w->bursts++ & (EP_STAGE_TIMED_EVERY - 1)) != 0) &&
	    likely(w->sample == EP_SAMPLE_NONE)) {
		uint64_t total;
		int ran;
		bool tx = false;

		run_burst_at(w, 0, pkts, n, &t0, false, NULL, &ran);
		if (w->tx_pending != 0) {
			flush_tx(w);
			tx = true;
		}
		t1 = rte_rdtsc();
		/* Less what the stages' own sends booked to tx already. */
		total = t1 - t0;
		total -= RTE_MIN(w->booked_inside - inside, total);
		split_untimed(w, ran, tx, total);
	} else {
		uint64_t dt[SHARE_STAGE(EP_MAX_STAGES) + 1];
		int ran;

		t1 = rte_rdtsc();
		dt[SHARE_RX] = t1 - t0 - RTE_MIN(w->booked_inside - inside, t1 - t0);
		w->rx_stage.stats.cycles += dt[SHARE_RX];
		/* The oldest frame of the burst: after a pause it waited longest. */
		if (unlikely(w->sample != EP_SAMPLE_NONE))
			ep_power_sample(w, pkts[0], t1);
		run_burst_at(w, 0, pkts, n, &t1, true, &dt[SHARE_STAGE(0)], &ran);
		uint64_t t2 = w->tx_pending != 0 ? flush_tx_at(w, t1) : t1;

		/* A burst that ran every stage sets the shares, with tx's when
		 * the engine's tx buffers had frames.  A pipeline whose last
		 * stage sends by itself (ep_worker_tx) has no tx share: without
		 * this its untimed bursts all went to that last stage.  The
		 * shares are of the time not booked inside (those sends). */
		uint64_t own = t2 - t0;

		own -= RTE_MIN(w->booked_inside - inside, own);
		if (ran == w->n_stages && own > 0) {
			dt[SHARE_STAGE(ran)] = t2 - t1;
			for (int j = 0; j <= SHARE_STAGE(ran); j++)
				w->stage_share[j] = (uint32_t)((dt[j] << 16) / own);
		}
		t1 = t2;
	}
	if (w->pump_n != 0)
		ahead_pump(w, w->pump_step);
	*tsc = t1;
	return n;
}

uint32_t
ep_worker_poll_rx(struct ep_worker *w, uint64_t *tsc)
{
	static const struct ep_rx_queue src = { 0, 0 };
	uint32_t got = 0;

	if (w->type->source != NULL)
		return poll_one(w, &src, NULL, tsc);
	for (int i = 0; i < w->n_rx; i++) {
		const struct ep_rx_queue *rq = &w->rx[i];
		bool ahead = w->type->rx_lookahead && !w->engine->ports[rq->port].rx_copies;

		got += poll_one(w, rq, ahead ? &w->ahead[i] : NULL, tsc);
	}
	return got;
}

/*
 * A pause, with the thread offline for RCU so that a grace period never
 * waits for a paused worker.  Timer slack is set to 1 us in the worker so
 * the kernel honours short sleeps (the default 50 us slack would dominate
 * them).  Its cycles count as sleep_cycles, not idle_cycles.
 */
static void
pause_worker(struct ep_worker *w, enum ep_poll_act act, uint32_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	uint64_t t0 = rte_rdtsc();

	rte_rcu_qsbr_thread_offline(w->engine->qsbr, w->id);
	if (act == EP_ACT_WAIT_RX)
		ep_power_wait_rx(w, us);
	else if (act == EP_ACT_CPU_WAIT)
		ep_power_cpu_wait(w, t0 + w->engine->tsc_hz / 1000000 * us);
	else if (w->type->wait != NULL)
		w->type->wait(w, us);       /* the pipeline's own wake-up sources */
	else if (w->power->msg_fd >= 0)
		ep_power_wait_msg(w, us);   /* a control message ends it early */
	else
		nanosleep(&ts, NULL);
	rte_rcu_qsbr_thread_online(w->engine->qsbr, w->id);
	w->stats.sleeps++;
	w->stats.sleep_cycles += rte_rdtsc() - t0;
}

int
ep_worker_main(void *arg)
{
	struct ep_worker *w = arg;
	struct ep_engine *e = w->engine;

	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	ep_power_thread_start(w);
	rte_rcu_qsbr_thread_online(e->qsbr, w->id);
	__atomic_store_n(&w->running, true, __ATOMIC_RELEASE);
	/* An iteration starts when the last one ended (its tx, or its empty
	 * poll): one rdtsc less per iteration (~80 cycles on the Zen 3 guest
	 * this was measured on, 2-3 a packet at a burst of 32); the loop's
	 * own tail (RCU quiescent state, the message ring check) is timed as
	 * part of the next rx.  A pause or a message that ran reads the clock
	 * again, so neither is counted as busy or idle time. */
	uint64_t now = rte_rdtsc();

	while (!__atomic_load_n(&e->quit, __ATOMIC_ACQUIRE)) {
		uint64_t t0 = now, t1 = t0;
		uint32_t got = 0, us = 0;
		bool paused = false;

		got = ep_worker_poll_rx(w, &t1);
		if (w->type->service != NULL)
			got += run_service(w, &t1);
		if (got == 0)
			t1 = rte_rdtsc();
		if (got != 0) {
			w->stats.busy_cycles += t1 - t0;
			ep_poll_found(&w->poll, &w->poll_state);
			if ((++w->power->busy_iters & (EP_SAMPLE_EVERY - 1)) == 0)
				w->sample = EP_SAMPLE_POLL;
		} else {
			enum ep_poll_act act = ep_poll_empty(&w->poll, &w->poll_state, &us);

			w->stats.idle_cycles += t1 - t0;
			/* Nothing waited through the pause before this poll. */
			if (w->sample == EP_SAMPLE_WAKE)
				w->sample = EP_SAMPLE_NONE;
			if (act != EP_ACT_POLL) {
				pause_worker(w, act, us);
				w->sample = EP_SAMPLE_WAKE;
				paused = true;
			}
		}
		now = t1;
		if (unlikely(w->poll.cpufreq))
			ep_power_freq_tick(w, t1, got != 0 ? t1 - t0 : 0);
		if (unlikely(w->power->rt_applied != 0))
			ep_power_rt_tick(w, t1);
		if (unlikely(run_messages(w) != 0 || paused))
			now = rte_rdtsc();
		rte_rcu_qsbr_quiescent(e->qsbr, w->id);
	}
	ep_worker_run_ahead(w);
	run_messages(w);
	rte_rcu_qsbr_thread_offline(e->qsbr, w->id);
	__atomic_store_n(&w->running, false, __ATOMIC_RELEASE);
	/* Answer anything that raced with shutdown so no caller waits forever. */
	run_messages(w);
	return 0;
}

/* Wake a worker waiting on its message eventfd (sleep-rx's ppoll, the
 * sleep policy's pause): a control message or the quit flag is then seen
 * at once, not when the wait's bound expires (up to 100 ms in sleep-rx). */
void
ep_worker_kick(struct ep_worker *w)
{
	if (w->power != NULL && w->power->msg_fd >= 0 &&
	    write(w->power->msg_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0) {
		/* EAGAIN: the counter is full, the worker is woken anyway */
	}
}

int
ep_worker_call(struct ep_worker *w, void (*fn)(struct ep_worker *, void *), void *arg,
	       unsigned int timeout_ms, struct ep_err *err)
{
	struct ep_worker_msg *m;
	uint64_t start, spin, deadline;

	if (!__atomic_load_n(&w->running, __ATOMIC_ACQUIRE)) {
		/* Not launched (start-up, --check, unit tests) or stopped: the
		 * control thread is the only one touching this worker. */
		fn(w, arg);
		return 0;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return ep_err_set(err, "worker %s: out of memory", w->name);
	m->fn = fn;
	m->arg = arg;
	if (rte_ring_enqueue(w->msgq, m) != 0) {
		free(m);
		return ep_err_set(err, "worker %s: message queue full", w->name);
	}
	/* A worker waiting on its rx sockets (sleep-rx) wakes for it now. */
	ep_worker_kick(w);
	/*
	 * A polling worker answers within one burst (a few µs): spin on the
	 * flag for up to EP_CALL_SPIN_US so a control operation costs a round
	 * trip, not a sleep.  After that the worker is paused or descheduled
	 * (shared cores): sleep between checks so the control thread does not
	 * take the CPU it is waiting for.
	 */
	start = rte_get_tsc_cycles();
	spin = rte_get_tsc_hz() / 1000000 * EP_CALL_SPIN_US;
	deadline = start + rte_get_tsc_hz() / 1000 * timeout_ms;
	while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
		uint64_t now = rte_get_tsc_cycles();

		if (now > deadline) {
			/* The worker may still run it later and write m->done:
			 * leave m allocated rather than free memory it will touch. */
			return ep_err_set(err, "worker %s: no answer within %u ms", w->name,
					  timeout_ms);
		}
		if (now - start < spin)
			rte_pause();
		else
			rte_delay_us_sleep(10);
	}
	free(m);
	return 0;
}

struct ep_worker *
ep_worker_create(struct ep_engine *e, unsigned int id, const char *name, struct ep_err *err)
{
	struct ep_worker *w = rte_zmalloc("ep_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);
	char rname[RTE_RING_NAMESIZE];

	if (w == NULL) {
		ep_err_set(err, "worker %s: out of memory", name);
		return NULL;
	}
	w->power = rte_zmalloc("ep_power", sizeof(*w->power), RTE_CACHE_LINE_SIZE);
	if (w->power == NULL) {
		rte_free(w);
		ep_err_set(err, "worker %s: out of memory", name);
		return NULL;
	}
	w->power->freq_fd = -1;
	w->power->msg_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ep_hist_reset(&w->power->wake_lat);
	ep_hist_reset(&w->power->poll_lat);
	w->id = id;
	w->engine = e;
	w->burst = e->burst;
	w->rx_port = EP_RX_PORT_META;
	/* Busy polling until ep_power_start() applies the configured policy. */
	w->poll = (struct ep_poll_cfg){ .policy = EP_POLL_BUSY, .min_sleep_us = 1,
					.max_sleep_us = 1 };
	ep_poll_state_reset(&w->poll, &w->poll_state);
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->rx_stage.name, sizeof(w->rx_stage.name), "rx");
	snprintf(w->tx_stage.name, sizeof(w->tx_stage.name), "tx");
	snprintf(w->service_stage.name, sizeof(w->service_stage.name), "service");
	snprintf(rname, sizeof(rname), "ep_msgq_%u", id);
	w->msgq = rte_ring_create(rname, 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (w->msgq == NULL) {
		if (w->power->msg_fd >= 0)
			close(w->power->msg_fd);
		rte_free(w->power);
		rte_free(w);
		ep_err_set(err, "worker %s: message ring: %s", name, rte_strerror(rte_errno));
		return NULL;
	}
	return w;
}

void
ep_worker_free(struct ep_worker *w)
{
	if (w == NULL)
		return;
	rte_ring_free(w->msgq);
	if (w->power->msg_fd >= 0)
		close(w->power->msg_fd);
	rte_free(w->power);
	rte_free(w);
}
