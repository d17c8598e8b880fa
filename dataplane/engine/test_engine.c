/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stage contract as the worker applies it: continue keeps order, drops
 * are counted under their reason in the stage that decided, TX reaches the
 * port, a packet falling off the end is NO_NEXT, a verdict outside the
 * contract never reaches a port.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_meta.h"
#include "ep_test.h"
#include "engine_internal.h"

static struct ep_engine eng;

/* Virtual device @p name with one queue pair, started (mbufs of the test
 * pool); aborts the test run when it cannot be. */
static uint16_t
vdev_port(const char *name)
{
	struct rte_eth_conf conf = { 0 };
	uint16_t pid;

	if (rte_dev_probe(name) != 0 || rte_eth_dev_get_port_by_name(name, &pid) != 0 ||
	    rte_eth_dev_configure(pid, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(pid, 0, 256, SOCKET_ID_ANY, NULL, ep_test_pool()) != 0 ||
	    rte_eth_tx_queue_setup(pid, 0, 256, SOCKET_ID_ANY, NULL) != 0 ||
	    rte_eth_dev_start(pid) != 0)
		abort();
	return pid;
}

/* A null port to transmit into, created once. */
static uint16_t
null_port(void)
{
	static int ready;
	static uint16_t pid;

	if (!ready)
		pid = vdev_port("net_null_test");
	ready = 1;
	return pid;
}

static struct ep_worker *
test_worker(void)
{
	struct ep_err err;
	static unsigned int id;
	struct ep_worker *w;

	memset(&eng, 0, sizeof(eng));
	eng.n_ports = 1;
	eng.ports[0].port_id = null_port();
	eng.burst = 32;
	w = ep_worker_create(&eng, id++, "t", &err);
	if (w == NULL)
		abort();
	return w;
}

/* Stage: drop packets whose first byte is odd, as IPV4_BAD_CHECKSUM. */
static uint16_t
stage_drop_odd(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		if (rte_pktmbuf_mtod(pkts[i], uint8_t *)[0] & 1) {
			next[i] = EP_NEXT_DROP(EP_DROP_IPV4_BAD_CHECKSUM);
			k++;
		}
	}
	return k;
}

/* Stage: remember the order of first bytes it sees, then send all to port 0. */
static uint8_t seen[128];
static uint16_t n_seen;

static uint16_t
stage_record_and_tx(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		seen[n_seen++] = rte_pktmbuf_mtod(pkts[i], uint8_t *)[0];
		next[i] = EP_NEXT_TX(*(uint16_t *)ctx);
	}
	return n;
}

static uint16_t
stage_nothing(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	return 0;
}

static uint16_t
stage_bogus_verdict(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		next[i] = 0x1234;
	return n;
}

static void
make_burst(struct rte_mbuf **pkts, uint16_t n)
{
	uint8_t frame[60];

	for (uint16_t i = 0; i < n; i++) {
		memset(frame, 0, sizeof(frame));
		frame[0] = (uint8_t)i;
		pkts[i] = ep_test_mbuf(frame, sizeof(frame));
	}
}

EP_TEST(engine_drop_reasons_counted_in_deciding_stage_and_order_kept)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[16];
	uint16_t port0 = 0;
	struct ep_err err;
	unsigned int avail = rte_mempool_avail_count(ep_test_pool());

	ep_worker_add_stage(w, "drop_odd", stage_drop_odd, NULL, &err);
	ep_worker_add_stage(w, "to_port", stage_record_and_tx, &port0, &err);
	n_seen = 0;
	make_burst(pkts, 16);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 16), 0);
	ep_worker_flush_tx(w);
	EP_CHECK_EQ(w->stages[0].stats.pkts_in, 16);
	EP_CHECK_EQ(w->stages[0].stats.pkts_out, 8);
	EP_CHECK_EQ(w->stages[0].stats.drops[EP_DROP_IPV4_BAD_CHECKSUM], 8);
	EP_CHECK_EQ(w->stages[1].stats.pkts_tx, 8);
	EP_CHECK_EQ(n_seen, 8);
	for (uint16_t i = 0; i < n_seen; i++)
		EP_CHECK_EQ(seen[i], 2 * i);
	EP_CHECK_EQ(w->tx_stage.stats.pkts_out, 8);
	EP_CHECK_EQ(w->stats.tx_pkts, 8);
	/* Every mbuf went back: dropped ones bulk-freed, sent ones by the null PMD. */
	EP_CHECK_EQ(rte_mempool_avail_count(ep_test_pool()), avail);
	ep_worker_free(w);
}

EP_TEST(engine_packet_falling_off_the_pipeline_is_no_next)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[4];
	struct ep_err err;

	ep_worker_add_stage(w, "nothing", stage_nothing, NULL, &err);
	make_burst(pkts, 4);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 4), 4);
	EP_CHECK_EQ(w->stages[0].stats.drops[EP_DROP_NO_NEXT], 4);
	ep_worker_free(w);
}

EP_TEST(engine_tx_to_unknown_port_is_bad_tx_port)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[3];
	uint16_t port9 = 9;
	struct ep_err err;

	n_seen = 0;
	ep_worker_add_stage(w, "to_port9", stage_record_and_tx, &port9, &err);
	make_burst(pkts, 3);
	ep_worker_run_burst(w, pkts, 3);
	EP_CHECK_EQ(w->stages[0].stats.drops[EP_DROP_BAD_TX_PORT], 3);
	EP_CHECK_EQ(w->tx_pending, 0);
	ep_worker_free(w);
}

EP_TEST(engine_verdict_outside_contract_is_dropped_not_sent)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[5];
	struct ep_err err;

	ep_worker_add_stage(w, "bogus", stage_bogus_verdict, NULL, &err);
	make_burst(pkts, 5);
	ep_worker_run_burst(w, pkts, 5);
	EP_CHECK_EQ(w->stages[0].stats.drops[EP_DROP_NO_NEXT], 5);
	EP_CHECK_EQ(w->stages[0].stats.pkts_tx, 0);
	ep_worker_free(w);
}

/* Stage: counts the entries of next[0..n) that are not CONTINUE on entry
 * (the contract says every one is), then drops the packet whose first byte
 * is *ctx, leaving its verdict in next[] for the engine to clear. */
static unsigned int next_dirty;

static uint16_t
stage_check_next_then_drop_one(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const uint8_t victim = *(const uint8_t *)ctx;
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		next_dirty += next[i] != EP_NEXT_CONTINUE;
		if (rte_pktmbuf_mtod(pkts[i], uint8_t *)[0] == victim) {
			next[i] = EP_NEXT_DROP(EP_DROP_IPV4_BAD_CHECKSUM);
			k++;
		}
	}
	return k;
}

/* next[] is cleared in two sizes (half the array up to EP_BURST_MAX / 2
 * packets): the first stage's verdict left at index 40 of a 63- or
 * 64-packet burst, or at n / 2 of a smaller one, must not reach the
 * second stage, which still has that index (one packet fewer); the second
 * drops the packet of first byte 0. */
EP_TEST(engine_next_is_continue_on_entry_to_every_stage_for_bursts_of_1_to_64)
{
	static const uint16_t sizes[] = { 1, 2, 31, 32, 33, 40, 63, 64 };

	for (size_t z = 0; z < RTE_DIM(sizes); z++) {
		const uint16_t n = sizes[z];
		uint8_t first = (uint8_t)(n > 40 ? 40 : n / 2), second = 0;
		struct ep_worker *w = test_worker();
		struct rte_mbuf *pkts[EP_BURST_MAX];
		uint16_t port0 = 0;
		uint16_t sent = (uint16_t)(n - (n > 1) - 1);
		struct ep_err err;

		ep_worker_add_stage(w, "first", stage_check_next_then_drop_one, &first, &err);
		ep_worker_add_stage(w, "second", stage_check_next_then_drop_one, &second, &err);
		ep_worker_add_stage(w, "to_port", stage_record_and_tx, &port0, &err);
		n_seen = 0;
		next_dirty = 0;
		make_burst(pkts, n);
		EP_CHECK_EQ(ep_worker_run_burst(w, pkts, n), 0);
		EP_CHECK_EQ(next_dirty, 0);
		EP_CHECK_EQ(w->stages[0].stats.drops[EP_DROP_IPV4_BAD_CHECKSUM], 1);
		EP_CHECK_EQ(w->stages[1].stats.drops[EP_DROP_IPV4_BAD_CHECKSUM], n > 1 ? 1 : 0);
		EP_CHECK_EQ(w->stages[2].stats.pkts_tx, sent);
		EP_CHECK_EQ(n_seen, sent);
		ep_worker_flush_tx(w);
		EP_CHECK_EQ(w->stats.tx_pkts, sent);
		ep_worker_free(w);
	}
}

/* Stage: even first bytes to port 0 one by one (the per-packet dispatch),
 * the odd ones continue. */
static uint16_t
stage_evens_to_port0(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		if ((rte_pktmbuf_mtod(pkts[i], uint8_t *)[0] & 1) == 0) {
			next[i] = EP_NEXT_TX(0);
			k++;
		}
	}
	return k;
}

EP_TEST(engine_whole_burst_to_one_port_queued_after_earlier_ones_in_order)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[16];
	uint16_t port0 = 0;
	struct ep_err err;

	n_seen = 0;
	ep_worker_add_stage(w, "evens", stage_evens_to_port0, NULL, &err);
	ep_worker_add_stage(w, "rest", stage_record_and_tx, &port0, &err);
	make_burst(pkts, 16);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 16), 0);
	/* The last stage's uniform verdict takes the copy path: its packets
	 * follow the ones queued before, in burst order. */
	EP_CHECK_EQ(w->txbuf[0].n, 16);
	for (uint16_t i = 0; i < 16; i++)
		EP_CHECK_EQ(rte_pktmbuf_mtod(w->txbuf[0].pkts[i], uint8_t *)[0],
			    i < 8 ? 2 * i : 2 * (i - 8) + 1);
	EP_CHECK_EQ(w->stages[0].stats.pkts_tx, 8);
	EP_CHECK_EQ(w->stages[1].stats.pkts_tx, 8);
	EP_CHECK_EQ(w->stages[1].stats.pkts_out, 0);
	EP_CHECK_EQ(w->tx_pending, 1u);
	ep_worker_flush_tx(w);
	EP_CHECK_EQ(w->stats.tx_pkts, 16);
	ep_worker_free(w);
}

/* Stage: a packer's verdicts (DEPI's): the packets whose first byte is a
 * multiple of 3 get the verdict ctx names (open a packet: TX to port 0;
 * or, as the crypto's completed frames, continue), the others are
 * consumed (the stage chained them, or they are in the device; here they
 * go to the test's bin).  A packet of first byte 7 continues when ctx
 * says so. */
struct pack_verdicts {
	uint16_t on_3;
	bool leave_7;
};
static struct rte_mbuf *consumed[64];
static uint16_t n_consumed;

static uint16_t
stage_open_or_consume(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct pack_verdicts *v = ctx;
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		uint8_t b = rte_pktmbuf_mtod(pkts[i], uint8_t *)[0];

		if (v->leave_7 && b == 7)
			continue;
		if (b % 3 == 0) {
			next[i] = v->on_3;
		} else {
			consumed[n_consumed++] = pkts[i];
			next[i] = EP_NEXT_CONSUMED;
		}
		k += next[i] != EP_NEXT_CONTINUE;
	}
	return k;
}

/* Port 0's queue holds @p n packets, of first bytes @p first in order. */
static void
check_queued(const struct ep_worker *w, const uint8_t *first, uint16_t n)
{
	EP_CHECK_EQ(w->txbuf[0].n, n);
	for (uint16_t i = 0; i < n && i < w->txbuf[0].n; i++)
		EP_CHECK_EQ(rte_pktmbuf_mtod(w->txbuf[0].pkts[i], uint8_t *)[0], first[i]);
}

/* Stage @p s's packets sent, consumed and passed on. */
static void
check_counts(const struct ep_stage *s, uint64_t tx, uint64_t consumed, uint64_t out)
{
	EP_CHECK_EQ(s->stats.pkts_tx, tx);
	EP_CHECK_EQ(s->stats.pkts_consumed, consumed);
	EP_CHECK_EQ(s->stats.pkts_out, out);
}

EP_TEST(engine_burst_of_sends_and_consumed_queues_the_sent_in_order_and_counts_both)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[16];
	struct pack_verdicts v = { EP_NEXT_TX(0), false };
	struct ep_err err;

	n_consumed = 0;
	ep_worker_add_stage(w, "pack", stage_open_or_consume, &v, &err);
	make_burst(pkts, 16);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 16), 0);
	check_queued(w, (const uint8_t[]){ 0, 3, 6, 9, 12, 15 }, 6);
	check_counts(&w->stages[0], 6, 10, 0);
	EP_CHECK_EQ(w->tx_pending, 1u);
	ep_worker_flush_tx(w);
	EP_CHECK_EQ(w->stats.tx_pkts, 6);
	rte_pktmbuf_free_bulk(consumed, n_consumed);
	ep_worker_free(w);
}

EP_TEST(engine_sends_and_consumed_with_one_continuing_keep_it_for_the_next_stage)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[16];
	struct pack_verdicts v = { EP_NEXT_TX(0), true };
	uint16_t port0 = 0;
	struct ep_err err;

	n_consumed = 0;
	n_seen = 0;
	ep_worker_add_stage(w, "pack", stage_open_or_consume, &v, &err);
	ep_worker_add_stage(w, "rest", stage_record_and_tx, &port0, &err);
	make_burst(pkts, 16);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 16), 0);
	/* Not every packet diverted: the general loop, the one left goes on. */
	EP_CHECK_EQ(n_seen, 1);
	EP_CHECK_EQ(seen[0], 7);
	check_queued(w, (const uint8_t[]){ 0, 3, 6, 9, 12, 15, 7 }, 7);
	check_counts(&w->stages[0], 6, 9, 1);
	ep_worker_flush_tx(w);
	rte_pktmbuf_free_bulk(consumed, n_consumed);
	ep_worker_free(w);
}

EP_TEST(engine_continuing_and_consumed_keep_the_burst_order_and_queue_nothing)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[16];
	struct pack_verdicts v = { EP_NEXT_CONTINUE, false };
	uint16_t port0 = 0;
	struct ep_err err;

	n_consumed = 0;
	n_seen = 0;
	ep_worker_add_stage(w, "device", stage_open_or_consume, &v, &err);
	ep_worker_add_stage(w, "rest", stage_record_and_tx, &port0, &err);
	make_burst(pkts, 16);
	EP_CHECK_EQ(ep_worker_run_burst(w, pkts, 16), 0);
	/* The continuing ones reach the next stage in burst order. */
	EP_CHECK_EQ(n_seen, 6);
	EP_CHECK_EQ(memcmp(seen, (const uint8_t[]){ 0, 3, 6, 9, 12, 15 }, 6), 0);
	check_counts(&w->stages[0], 0, 10, 6);
	ep_worker_flush_tx(w);
	rte_pktmbuf_free_bulk(consumed, n_consumed);
	ep_worker_free(w);
}

/* Stage: note the clock the engine handed it, pass everything on. */
static uint64_t clock_seen[2];
static unsigned int n_clock;

static uint16_t
stage_note_clock(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct ep_worker *w = ctx;

	clock_seen[n_clock++ % 2] = w->stage_tsc;
	return 0;
}

EP_TEST(engine_stage_clock_is_the_time_the_stage_was_called)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[4];
	uint64_t before, after;
	struct ep_err err;

	n_clock = 0;
	ep_worker_add_stage(w, "first", stage_note_clock, w, &err);
	ep_worker_add_stage(w, "second", stage_note_clock, w, &err);
	make_burst(pkts, 4);
	before = rte_rdtsc();
	ep_worker_run_burst(w, pkts, 4);
	after = rte_rdtsc();
	EP_CHECK_EQ(n_clock, 2);
	EP_CHECK(clock_seen[0] >= before && clock_seen[0] <= after);
	EP_CHECK(clock_seen[1] >= clock_seen[0] && clock_seen[1] <= after);
	/* One boundary read: the first stage ends when the second starts. */
	EP_CHECK_EQ(w->stages[0].stats.cycles, clock_seen[1] - clock_seen[0]);
	ep_worker_free(w);
}

/* Stage: note the clock, send a burst of its own on port 0 (a pipeline
 * whose stage sends by itself), pass its packets on. */
static struct rte_mbuf *own_sends[3];

static uint16_t
stage_note_clock_and_send(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct ep_worker *w = ctx;

	clock_seen[n_clock++ % 2] = w->stage_tsc;
	ep_worker_tx(w, 0, own_sends, RTE_DIM(own_sends));
	return 0;
}

/* Stage: note the clock, drop everything. */
static uint16_t
stage_note_clock_and_drop(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct ep_worker *w = ctx;

	clock_seen[n_clock++ % 2] = w->stage_tsc;
	for (uint16_t i = 0; i < n; i++)
		next[i] = EP_NEXT_DROP(EP_DROP_NO_NEXT);
	return n;
}

EP_TEST(engine_a_stages_own_send_is_booked_to_tx_not_also_to_the_stage)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[4];
	struct ep_err err;

	n_clock = 0;
	ep_worker_add_stage(w, "sends", stage_note_clock_and_send, w, &err);
	ep_worker_add_stage(w, "drops", stage_note_clock_and_drop, w, &err);
	make_burst(pkts, 4);
	make_burst(own_sends, RTE_DIM(own_sends));
	ep_worker_run_burst(w, pkts, 4);
	EP_CHECK_EQ(n_clock, 2);
	EP_CHECK_EQ(w->tx_stage.stats.pkts_in, RTE_DIM(own_sends));
	EP_CHECK(w->tx_stage.stats.cycles > 0);
	/* The first stage's span is split between it and tx, whole. */
	EP_CHECK_EQ(w->stages[0].stats.cycles + w->tx_stage.stats.cycles,
		    clock_seen[1] - clock_seen[0]);
	ep_worker_free(w);
}

static void
set_flag(struct ep_worker *w, void *arg)
{
	*(int *)arg = (int)w->id + 100;
}

EP_TEST(engine_worker_call_runs_inline_when_worker_not_running)
{
	struct ep_worker *w = test_worker();
	struct ep_err err;
	int flag = 0;

	EP_CHECK_EQ(ep_worker_call(w, set_flag, &flag, 100, &err), 0);
	EP_CHECK_EQ(flag, (int)w->id + 100);
	ep_worker_free(w);
}

EP_TEST(engine_too_many_stages_is_an_error)
{
	struct ep_worker *w = test_worker();
	struct ep_err err;
	int rc = 0;

	for (int i = 0; i <= EP_MAX_STAGES; i++)
		rc = ep_worker_add_stage(w, "s", stage_nothing, NULL, &err);
	EP_CHECK(rc < 0);
	EP_CHECK(strstr(err.msg, "stages") != NULL);
	ep_worker_free(w);
}

EP_TEST(engine_worker_tx_sends_outside_the_burst_and_counts)
{
	struct ep_worker *w = test_worker();
	struct rte_mbuf *pkts[7];
	unsigned int avail = rte_mempool_avail_count(ep_test_pool());

	make_burst(pkts, 7);
	ep_worker_tx(w, 0, pkts, 5);
	EP_CHECK_EQ(w->tx_stage.stats.pkts_out, 5);
	EP_CHECK_EQ(w->stats.tx_pkts, 5);
	ep_worker_tx(w, 3, pkts + 5, 2);
	EP_CHECK_EQ(w->tx_stage.stats.drops[EP_DROP_BAD_TX_PORT], 2);
	EP_CHECK_EQ(rte_mempool_avail_count(ep_test_pool()), avail);
	ep_worker_free(w);
}

/* A net_ring port whose one rte_ring its tx queue fills and its rx queue
 * drains (net_ring without arguments: one ring per queue pair). */
static uint16_t
ring_port(void)
{
	static int ready;
	static uint16_t pid;

	if (!ready)
		pid = vdev_port("net_ring_ahead");
	ready = 1;
	return pid;
}

/* @p n frames into the ring, their first bytes @p first, first + 1, ... */
static void
ring_fill(uint16_t pid, uint8_t first, uint16_t n)
{
	uint8_t frame[60];

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m;

		memset(frame, 0, sizeof(frame));
		frame[0] = (uint8_t)(first + i);
		m = ep_test_mbuf(frame, sizeof(frame));
		if (rte_eth_tx_burst(pid, 0, &m, 1) != 1)
			abort();
	}
}

static const struct ep_pipeline_type ahead_type = { .name = "ahead", .rx_lookahead = true };

/* A worker of ahead_type polling the ring port (logical 1), sending every
 * packet to the null port (logical 0). */
static struct ep_worker *
ahead_worker(void)
{
	static uint16_t port0;
	struct ep_worker *w = test_worker();
	struct ep_err err;

	eng.n_ports = 2;
	eng.ports[1].port_id = ring_port();
	w->type = &ahead_type;
	w->rx[0] = (struct ep_rx_queue){ .port = 1, .queue = 0 };
	w->n_rx = 1;
	ep_worker_add_stage(w, "to_port", stage_record_and_tx, &port0, &err);
	n_seen = 0;
	return w;
}

/* Three bursts waiting (32, 32, 10): each poll runs one and receives the
 * next ahead; the frames come out in arrival order, the last burst is run
 * by the poll that found the ring empty, and the poll after it finds
 * nothing held. */
EP_TEST(engine_rx_lookahead_runs_bursts_in_order_and_holds_none_through_an_empty_poll)
{
	struct ep_worker *w = ahead_worker();
	unsigned int avail = rte_mempool_avail_count(ep_test_pool());
	uint64_t tsc = rte_rdtsc();

	ring_fill(eng.ports[1].port_id, 0, 74);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 32);
	EP_CHECK_EQ(n_seen, 32);
	EP_CHECK_EQ(w->ahead[0].n, 32);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 32);
	EP_CHECK_EQ(w->ahead[0].n, 10);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 10);
	EP_CHECK_EQ(w->ahead[0].n, 0);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 0);
	EP_CHECK_EQ(n_seen, 74);
	for (uint16_t i = 0; i < n_seen; i++)
		EP_CHECK_EQ(seen[i], i);
	EP_CHECK_EQ(w->stats.rx_pkts, 74);
	EP_CHECK_EQ(w->stats.tx_pkts, 74);
	EP_CHECK_EQ(w->rx_stage.stats.pkts_in, 74);
	EP_CHECK_EQ(rte_mempool_avail_count(ep_test_pool()), avail);
	ep_worker_free(w);
}

/* A burst alone in the ring (less than a burst): run at once, nothing
 * received ahead, so a trickle of traffic waits for no second burst. */
EP_TEST(engine_rx_lookahead_runs_a_lone_burst_in_the_poll_that_received_it)
{
	struct ep_worker *w = ahead_worker();
	uint64_t tsc = rte_rdtsc();

	ring_fill(eng.ports[1].port_id, 100, 5);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 5);
	EP_CHECK_EQ(n_seen, 5);
	EP_CHECK_EQ(seen[4], 104);
	EP_CHECK_EQ(w->ahead[0].n, 0);
	EP_CHECK_EQ(w->stats.empty_polls, 0);
	ep_worker_free(w);
}

/* A port whose driver copies each frame on the polling core (net_pcap's
 * kind): the worker runs every burst in the poll that received it. */
EP_TEST(engine_rx_lookahead_skips_a_port_whose_rx_copies_the_frames)
{
	struct ep_worker *w = ahead_worker();
	uint64_t tsc = rte_rdtsc();

	eng.ports[1].rx_copies = true;
	ring_fill(eng.ports[1].port_id, 0, 40);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 32);
	EP_CHECK_EQ(w->ahead[0].n, 0);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 8);
	EP_CHECK_EQ(n_seen, 40);
	eng.ports[1].rx_copies = false;
	ep_worker_free(w);
}

/* A worker stopping with a burst received ahead runs it (the worker loop
 * does at exit): every frame is sent, none leaks from the pool. */
EP_TEST(engine_rx_lookahead_burst_held_at_exit_is_run_not_leaked)
{
	struct ep_worker *w = ahead_worker();
	unsigned int avail = rte_mempool_avail_count(ep_test_pool());
	uint64_t tsc = rte_rdtsc();

	ring_fill(eng.ports[1].port_id, 0, 40);
	EP_CHECK_EQ(ep_worker_poll_rx(w, &tsc), 32);
	EP_CHECK_EQ(w->ahead[0].n, 8);
	ep_worker_run_ahead(w);
	EP_CHECK_EQ(w->ahead[0].n, 0);
	EP_CHECK_EQ(n_seen, 40);
	EP_CHECK_EQ(seen[39], 39);
	EP_CHECK_EQ(w->stats.rx_pkts, 40);
	EP_CHECK_EQ(w->stats.tx_pkts, 40);
	EP_CHECK_EQ(rte_mempool_avail_count(ep_test_pool()), avail);
	ep_worker_free(w);
}

/* An AF_PACKET socket bound to lo (up in every namespace the tests run in). */
static int
packet_socket_on_lo(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)if_nametoindex("lo") };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static uint32_t
fanout_of(int fd)
{
	uint32_t v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &v, &len) == 0 ? v : 0;
}

/*
 * net_af_packet names a port's fanout group (pid ^ ifindex) & 0xffff; a
 * stranger holding that id in another mode (or on another device) made the
 * kernel refuse it, and the data plane failed to start.  The engine's
 * setsockopt() takes a group the kernel numbers instead, and the port's
 * next queue joins it, in the PMD's mode without the defragment flag.
 */
EP_TEST(af_packet_fanout_group_is_ours_when_the_pmd_id_is_taken)
{
	const uint32_t pmd_id = 0x4d2;
	uint32_t stranger = pmd_id | ((uint32_t)PACKET_FANOUT_LB << 16);
	uint32_t pmd = pmd_id | ((uint32_t)(PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG |
					     PACKET_FANOUT_FLAG_ROLLOVER) << 16);
	int s = packet_socket_on_lo(), q0 = packet_socket_on_lo(), q1 = packet_socket_on_lo();

	if (s < 0 || q0 < 0 || q1 < 0) {
		printf("    skipped: no AF_PACKET socket on lo (needs CAP_NET_RAW)\n");
		goto out;
	}
	EP_CHECK_EQ(syscall(SYS_setsockopt, s, SOL_PACKET, PACKET_FANOUT, &stranger, sizeof(stranger)), 0);
	EP_CHECK_EQ(setsockopt(q0, SOL_PACKET, PACKET_FANOUT, &pmd, sizeof(pmd)), 0);
	EP_CHECK_EQ(setsockopt(q1, SOL_PACKET, PACKET_FANOUT, &pmd, sizeof(pmd)), 0);
	EP_CHECK((fanout_of(q0) & 0xffff) != pmd_id);
	EP_CHECK_EQ(fanout_of(q0), fanout_of(q1));
	EP_CHECK_EQ((fanout_of(q0) >> 16) & 0xff, PACKET_FANOUT_HASH);
	/* flags byte: rollover kept, defragment cleared (the id flag is ephemeral) */
	EP_CHECK_EQ(fanout_of(q0) >> 24, PACKET_FANOUT_FLAG_ROLLOVER >> 8);
	EP_CHECK_EQ(ep_af_packet_fd(0, 1), -1);   /* not claimed by a port yet */
out:
	ep_af_packet_forget();
	int fds[3] = { s, q0, q1 };

	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * ep_meta's bytes belong to it under DPDK's dynamic-field API (ep_test.c
 * registers them as the engine does, before any port), nothing else can be
 * given them, and net_pcap -- whose probe registers an 8-byte, 8-aligned Rx
 * timestamp and fails without one -- still probes, its field beside ours.
 */
EP_TEST(ep_meta_owns_its_dynfield_bytes_and_net_pcap_still_probes_beside_it)
{
	static const uint8_t pcap_header[24] = {
		0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff, 0, 0, 1, 0, 0, 0,   /* snaplen 65535, Ethernet */
	};
	const struct rte_mbuf_dynfield overlap = { .name = "ep_test_overlap", .size = 8,
						   .align = 8 };
	struct rte_mbuf_dynfield got;
	char path[] = "/tmp/ep_test_meta_XXXXXX", dev[128];
	int fd = mkstemp(path), ts;

	EP_CHECK_EQ(rte_mbuf_dynfield_lookup(EP_META_DYNFIELD_NAME, &got), (int)EP_META_OFFSET);
	EP_CHECK_EQ(got.size, sizeof(struct ep_meta));
	EP_CHECK_EQ(ep_meta_register(), 0);        /* again: idempotent */
	EP_CHECK_EQ(rte_mbuf_dynfield_register_offset(&overlap,
						      RTE_ALIGN_CEIL(EP_META_OFFSET, 8)), -1);
	EP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	EP_CHECK_EQ(write(fd, pcap_header, sizeof(pcap_header)), (ssize_t)sizeof(pcap_header));
	close(fd);
	snprintf(dev, sizeof(dev), "net_pcap_ep_meta,rx_pcap=%s,tx_pcap=/dev/null", path);
	EP_CHECK_EQ(rte_dev_probe(dev), 0);
	ts = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	EP_CHECK(ts >= (int)(EP_META_OFFSET + sizeof(struct ep_meta)));
	EP_CHECK_EQ(rte_eal_hotplug_remove("vdev", "net_pcap_ep_meta"), 0);
	unlink(path);
}

/* The next hop's entry sits in the private area: setting it leaves every
 * byte of ep_meta as it was, and ep_meta is the mbuf's dynamic-field area. */
EP_TEST(ep_meta_nexthop_entry_is_kept_apart_from_ep_meta)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ep_test_pool());
	uint8_t before[sizeof(struct ep_meta)];
	const struct ep_fib_nh *nh = (const struct ep_fib_nh *)(uintptr_t)0x1234567890abcdefull;

	EP_CHECK(m != NULL);
	if (m == NULL)
		return;
	EP_CHECK_EQ((uintptr_t)ep_meta(m), (uintptr_t)m + EP_META_OFFSET);
	memset(ep_meta(m), 0x5a, sizeof(struct ep_meta));
	memcpy(before, ep_meta(m), sizeof(before));
	ep_meta_set_nh(m, nh);
	EP_CHECK(ep_meta_nh(m) == nh);
	EP_CHECK_MEM(ep_meta(m), before, sizeof(before));
	rte_pktmbuf_free(m);
}
