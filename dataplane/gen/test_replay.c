/* SPDX-License-Identifier: BSD-3-Clause */
/* Replay: frames learnt in order, sent cycling, only write_bytes written. */
#include <rte_mbuf.h>

#include "ep_engine.h"
#include "ep_meta.h"
#include "ep_test.h"
#include "replay.h"

#define FRAME_LEN 200

/* A small pool of its own, so a test knows which buffers a send gets. */
static struct rte_mempool *
own_pool(const char *name, unsigned int n)
{
	struct rte_mempool *p = rte_pktmbuf_pool_create(name, n, 0, EP_META_SIZE,
							RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);

	if (p == NULL)
		ep_test_failed = 1;
	return p;
}

/* A replay of @p frames frames writing @p wb bytes, on a pool of its own of
 * @p mbufs buffers (*p); NULL and the case failed if either is missing. */
static struct ep_replay *
make_replay(const char *name, unsigned int mbufs, uint32_t frames, uint16_t wb,
	    struct rte_mempool **p)
{
	struct ep_err err = { "" };
	struct ep_replay *r;

	*p = own_pool(name, mbufs);
	r = *p ? ep_replay_create(frames, wb, 1, *p, SOCKET_ID_ANY, &err) : NULL;
	if (r == NULL) {
		ep_test_failed = 1;
		rte_mempool_free(*p);
	}
	return r;
}

static void
done(struct ep_replay *r, struct rte_mempool *p)
{
	ep_replay_free(r);
	rte_mempool_free(p);
}

/* Frame @p k: every byte k * 16 + its offset (mod 256), distinct per frame. */
static struct rte_mbuf *
frame(unsigned int k, uint16_t len)
{
	uint8_t b[FRAME_LEN];

	for (unsigned int i = 0; i < len; i++)
		b[i] = (uint8_t)(k * 16 + i);
	return ep_test_mbuf(b, len);
}

static void
learn_frames(struct ep_replay *r, unsigned int n, uint16_t len)
{
	struct rte_mbuf *pkts[8];

	for (unsigned int k = 0; k < n; k++)
		pkts[k] = frame(k, len);
	ep_replay_learn(r, pkts, (uint16_t)n);
}

/* Every buffer of @p p filled with @p byte, so what a send leaves shows. */
static void
fill_pool(struct rte_mempool *p, unsigned int n, uint8_t byte)
{
	struct rte_mbuf *m[8];

	if (rte_pktmbuf_alloc_bulk(p, m, n) != 0) {
		ep_test_failed = 1;
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		memset(rte_pktmbuf_mtod(m[i], uint8_t *), byte, FRAME_LEN);
	rte_pktmbuf_free_bulk(m, n);
}

EP_TEST(sends_nothing_until_every_frame_is_learnt)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t1", 8, 3, 64, &p);
	struct rte_mbuf *out[4];

	if (r == NULL)
		return;
	learn_frames(r, 2, FRAME_LEN);
	EP_CHECK_EQ(r->n_tpl, 2);
	EP_CHECK_EQ(ep_replay_produce(r, out, 4), 0);
	EP_CHECK_EQ(rte_mempool_avail_count(p), 8);
	done(r, p);
}

EP_TEST(learnt_frames_are_sent_in_order_cycling_with_their_lengths)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t2", 8, 3, 64, &p);
	struct rte_mbuf *in[4], *out[7];
	uint16_t n;

	if (r == NULL)
		return;
	for (unsigned int k = 0; k < 4; k++)
		in[k] = frame(k, (uint16_t)(100 + k));
	/* The fourth is beyond `frames`: freed and counted, not kept. */
	EP_CHECK_EQ(ep_replay_learn(r, in, 4), 3);
	EP_CHECK_EQ(r->own_drops[EP_REPLAY_LEARNT], 1);
	n = ep_replay_produce(r, out, 7);
	EP_CHECK_EQ(n, 7);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = i % 3;
		struct rte_mbuf *want = frame(k, (uint16_t)(100 + k));

		EP_CHECK_EQ(out[i]->data_len, 100 + k);
		EP_CHECK_EQ(out[i]->pkt_len, 100 + k);
		EP_CHECK_MEM(rte_pktmbuf_mtod(out[i], uint8_t *), rte_pktmbuf_mtod(want, uint8_t *),
			     64);
		rte_pktmbuf_free(want);
	}
	EP_CHECK_EQ(r->sent, 7);
	rte_pktmbuf_free_bulk(out, n);
	done(r, p);
}

EP_TEST(only_write_bytes_of_a_frame_are_written)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t3", 4, 1, 16, &p);
	struct rte_mbuf *out[4], *want = frame(0, FRAME_LEN);
	uint8_t *d;

	if (r == NULL) {
		rte_pktmbuf_free(want);
		return;
	}
	fill_pool(p, 4, 0xa5);
	learn_frames(r, 1, FRAME_LEN);
	EP_CHECK_EQ(ep_replay_produce(r, out, 4), 4);
	for (unsigned int i = 0; i < 4; i++) {
		d = rte_pktmbuf_mtod(out[i], uint8_t *);
		EP_CHECK_MEM(d, rte_pktmbuf_mtod(want, uint8_t *), 16);
		EP_CHECK_EQ(d[16], 0xa5);
		EP_CHECK_EQ(d[FRAME_LEN - 1], 0xa5);
		EP_CHECK_EQ(out[i]->data_len, FRAME_LEN);
	}
	rte_pktmbuf_free_bulk(out, 4);
	rte_pktmbuf_free(want);
	done(r, p);
}

EP_TEST(write_all_copies_every_byte_of_the_frame)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t4", 4, 2, EP_REPLAY_WRITE_ALL, &p);
	struct rte_mbuf *out[2];

	if (r == NULL)
		return;
	fill_pool(p, 4, 0xa5);
	learn_frames(r, 2, FRAME_LEN);
	EP_CHECK_EQ(ep_replay_produce(r, out, 2), 2);
	for (unsigned int k = 0; k < 2; k++) {
		struct rte_mbuf *want = frame(k, FRAME_LEN);

		EP_CHECK_MEM(rte_pktmbuf_mtod(out[k], uint8_t *),
			     rte_pktmbuf_mtod(want, uint8_t *), FRAME_LEN);
		rte_pktmbuf_free(want);
	}
	rte_pktmbuf_free_bulk(out, 2);
	done(r, p);
}

EP_TEST(a_frame_shorter_than_write_bytes_is_written_to_its_length)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t5", 2, 1, 64, &p);
	struct rte_mbuf *out[1], *want = frame(3, 40);
	uint8_t *d;

	if (r == NULL) {
		rte_pktmbuf_free(want);
		return;
	}
	fill_pool(p, 2, 0xa5);
	{
		struct rte_mbuf *in = frame(3, 40);

		ep_replay_learn(r, &in, 1);
	}
	EP_CHECK_EQ(ep_replay_produce(r, out, 1), 1);
	d = rte_pktmbuf_mtod(out[0], uint8_t *);
	EP_CHECK_MEM(d, rte_pktmbuf_mtod(want, uint8_t *), 40);
	EP_CHECK_EQ(d[40], 0xa5);
	EP_CHECK_EQ(out[0]->data_len, 40);
	rte_pktmbuf_free(out[0]);
	rte_pktmbuf_free(want);
	done(r, p);
}

EP_TEST(chained_and_empty_frames_are_refused_and_counted)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t6", 4, 1, 64, &p);
	struct rte_mbuf *in[3];

	if (r == NULL)
		return;
	in[0] = frame(0, 60);
	EP_CHECK_EQ(rte_pktmbuf_chain(in[0], frame(1, 60)), 0);
	in[1] = rte_pktmbuf_alloc(ep_test_pool());     /* no bytes */
	in[2] = frame(2, 60);
	EP_CHECK_EQ(ep_replay_learn(r, in, 3), 1);
	EP_CHECK_EQ(r->own_drops[EP_REPLAY_REFUSED], 2);
	EP_CHECK_EQ(r->len[0], 60);
	done(r, p);
}

EP_TEST(an_empty_pool_sends_nothing_and_counts_the_burst)
{
	struct rte_mempool *p;
	struct ep_replay *r = make_replay("replay_t7", 2, 1, 64, &p);
	struct rte_mbuf *out[4];

	if (r == NULL)
		return;
	learn_frames(r, 1, 60);
	EP_CHECK_EQ(ep_replay_produce(r, out, 4), 0);
	EP_CHECK_EQ(r->own_drops[EP_REPLAY_ALLOC_FAILED], 4);
	EP_CHECK_EQ(r->sent, 0);
	done(r, p);
}

EP_TEST(frame_counts_outside_1_to_65536_are_rejected)
{
	struct ep_err err = { "" };

	EP_CHECK(ep_replay_create(0, 64, 1, ep_test_pool(), SOCKET_ID_ANY, &err) == NULL);
	EP_CHECK(strstr(err.msg, "frames must be") != NULL);
	err.msg[0] = '\0';
	EP_CHECK(ep_replay_create(EP_REPLAY_MAX_FRAMES + 1, 64, 1, ep_test_pool(), SOCKET_ID_ANY,
				  &err) == NULL);
	EP_CHECK(strstr(err.msg, "frames must be") != NULL);
}

EP_TEST(replay_tx_stage_sends_everything_to_the_tx_port)
{
	struct ep_replay r = { .tx_port = 2 };
	struct rte_mbuf *pkts[3] = { NULL, NULL, NULL };
	uint16_t next[3] = { 0, 0, 0 };

	EP_CHECK_EQ(ep_replay_tx_stage(&r, pkts, next, 3), 3);
	for (int i = 0; i < 3; i++)
		EP_CHECK_EQ(next[i], EP_NEXT_TX(2));
}
