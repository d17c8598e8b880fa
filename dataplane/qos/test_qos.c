/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QoS module's API: rate and size text, policer profiles published
 * whole or not at all and contexts re-armed when their profile changes,
 * scheduler instances independent of each other, pipes reserved then
 * applied, a changed profile moving its pipes, and a worker that does not
 * answer leaving nothing recorded.
 */
/* rte_sched's PIE inlines are still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "ep_test.h"
#include "ep_engine.h"
#include "engine_internal.h"
#include "qos/ep_qos_node.h"

static struct ep_engine eng;

static void
eng_init(void)
{
	if (eng.qsbr == NULL) {
		eng.qsbr = rte_zmalloc("qos_qsbr", rte_rcu_qsbr_get_memsize(4), RTE_CACHE_LINE_SIZE);
		rte_rcu_qsbr_init(eng.qsbr, 4);
	}
}

EP_TEST(qos_rates_are_bits_in_powers_of_ten_sizes_bytes_in_powers_of_two)
{
	uint64_t v = 0;

	EP_CHECK_EQ(ep_qos_parse_rate("20M", &v), 0);
	EP_CHECK_EQ(v, 20000000);
	EP_CHECK_EQ(ep_qos_parse_rate("1.5G", &v), 0);
	EP_CHECK_EQ(v, 1500000000);
	EP_CHECK_EQ(ep_qos_parse_size("64K", &v), 0);
	EP_CHECK_EQ(v, 65536);
	EP_CHECK(ep_qos_parse_rate("fast", &v) < 0);
	EP_CHECK(ep_qos_parse_rate("10Mbps", &v) < 0);
	EP_CHECK(ep_qos_parse_size("-1", &v) < 0);
}

EP_TEST(qos_dscp_map_names_and_numbers)
{
	uint8_t map[64];
	struct ep_err err;

	ep_qos_dscp_map_default(map);
	EP_CHECK_EQ(map[46], EP_QOS_TCQ(0, 0));
	EP_CHECK_EQ(map[0], EP_QOS_TCQ(RTE_SCHED_TRAFFIC_CLASS_BE, 0));
	EP_CHECK_EQ(ep_qos_dscp_map_parse(map, "af41:2 cs1:12.2 7:5", &err), 0);
	EP_CHECK_EQ(map[34], EP_QOS_TCQ(2, 0));
	EP_CHECK_EQ(map[8], EP_QOS_TCQ(12, 2));
	EP_CHECK_EQ(map[7], EP_QOS_TCQ(5, 0));
	EP_CHECK(ep_qos_dscp_map_parse(map, "ef:3.1", &err) < 0);       /* queues: TC 12 only */
	EP_CHECK(ep_qos_dscp_map_parse(map, "af51:1", &err) < 0);
}

EP_TEST(qos_policer_profile_is_published_whole_or_not_at_all)
{
	struct ep_policers *t;
	const struct ep_policer *p0;
	struct ep_err err;

	eng_init();
	t = ep_policers_create(&eng, "pol", &err);
	EP_CHECK_EQ(ep_policer_set(t, "gold", "cir=20M cbs=64K pir=40M pbs=128K", &err), 0);
	p0 = ep_policer_read(t, 0);
	EP_CHECK_EQ(p0->cir, 20000000 / 8);
	/* Refused by rte_meter (cir > pir): the published profile is the old one. */
	EP_CHECK(ep_policer_set(t, "gold", "cir=40M cbs=64K pir=20M pbs=128K", &err) < 0);
	EP_CHECK(strstr(err.msg, "cir <= pir") != NULL);
	EP_CHECK(ep_policer_read(t, 0) == p0);
	EP_CHECK(ep_policer_set(t, "gold", "cir=1M cbs=1K", &err) < 0);
	EP_CHECK(ep_policer_set(t, "gold", "cir=1M cbs=1K pir=2M pbs=2K colour=red", &err) < 0);
	EP_CHECK(strstr(err.msg, "unknown key") != NULL);
	EP_CHECK(ep_policer_set(t, "none", "cir=1M cbs=1K pir=2M pbs=2K", &err) < 0);
	/* Accepted: a new profile under the same name. */
	EP_CHECK_EQ(ep_policer_set(t, "gold", "cir=10M cbs=64K eir=10M ebs=64K mode=rfc4115",
				   &err), 0);
	EP_CHECK(ep_policer_read(t, 0) != p0);
	EP_CHECK_EQ(ep_policer_read(t, 0)->mode, EP_POLICER_RFC4115);
	EP_CHECK_EQ(ep_policer_find(t, "gold"), 0);
	EP_CHECK_EQ(ep_policer_find(t, "silver"), -1);
	ep_policers_free(t);
}

/* A context measures against its profile's buckets and starts over, full,
 * when the profile it is given is another one. */
EP_TEST(qos_policer_context_rearms_when_its_profile_changes)
{
	struct ep_policers *t;
	struct ep_policer_ctx c;
	struct ep_err err;
	uint64_t hz = rte_get_tsc_hz(), now = 1000 * hz;
	int red = 0;

	eng_init();
	t = ep_policers_create(&eng, "ctx", &err);
	/* 8 kbit/s committed and peak, 1500-byte buckets: one full packet. */
	EP_CHECK_EQ(ep_policer_set_raw(t, "tiny", EP_POLICER_RFC2698, 1000, 1500, 1000, 1500, -1,
				       &err), 0);
	memset(&c, 0, sizeof(c));
	EP_CHECK_EQ(ep_policer_color(&c, ep_policer_read(t, 0), now, 1500), RTE_COLOR_GREEN);
	for (int i = 0; i < 10; i++)
		red += ep_policer_color(&c, ep_policer_read(t, 0), now, 1500) == RTE_COLOR_RED;
	EP_CHECK_EQ(red, 10);
	/* Two seconds later the 1000 B/s refill covers one more packet. */
	EP_CHECK_EQ(ep_policer_color(&c, ep_policer_read(t, 0), now + 2 * hz, 1500),
		    RTE_COLOR_GREEN);
	/* A changed profile: the context re-arms with full buckets. */
	EP_CHECK_EQ(ep_policer_set_raw(t, "tiny", EP_POLICER_RFC2698, 1000, 3000, 1000, 3000, -1,
				       &err), 0);
	EP_CHECK_EQ(ep_policer_color(&c, ep_policer_read(t, 0), now + 2 * hz, 1500),
		    RTE_COLOR_GREEN);
	EP_CHECK_EQ(ep_policer_color(&c, ep_policer_read(t, 0), now + 2 * hz, 1500),
		    RTE_COLOR_GREEN);
	ep_policers_free(t);
}

/* ---- schedulers ---- */

static struct ep_sched *
sched_new(const char *name)
{
	struct ep_sched_params p;
	struct ep_err err = {{0}};
	struct ep_sched *s;

	eng_init();
	ep_sched_params_default(&p);
	p.qsize = 16;
	s = ep_sched_create(&eng, name, &p, &err);
	if (s == NULL || ep_sched_subport_set(s, 0, "rate=1G pipes=64", &err) < 0 ||
	    ep_sched_subport_set(s, 1, "rate=100M pipes=16 tc_ov=on", &err) < 0) {
		printf("    scheduler: %s\n", err.msg);
		abort();
	}
	return s;
}

static struct ep_worker *
worker_new(void)
{
	static unsigned int id;
	struct ep_err err;
	struct ep_worker *w = ep_worker_create(&eng, 300 + id++, "qos", &err);

	if (w == NULL)
		abort();
	return w;
}

EP_TEST(qos_sched_instances_are_independent_and_named_once)
{
	struct ep_sched *a = sched_new("a"), *b = sched_new("b");
	struct ep_sched_params p;
	struct ep_err err;

	EP_CHECK_EQ(ep_sched_profile_set(a, "fast", "rate=500M", &err), 0);
	EP_CHECK(ep_sched_profile_find(a, "fast") > 0);
	EP_CHECK_EQ(ep_sched_profile_find(b, "fast"), -1);
	EP_CHECK_EQ(ep_sched_profile_find(b, "default"), 0);
	EP_CHECK_EQ(a->sub[1].n_pipes, 16);
	ep_sched_params_default(&p);
	EP_CHECK(ep_sched_create(&eng, "a", &p, &err) == NULL);
	EP_CHECK(strstr(err.msg, "exists") != NULL);
	EP_CHECK(ep_sched_profile_set(a, "slow", "rate=20G", &err) < 0);    /* above the port */
	EP_CHECK(ep_sched_profile_set(a, "slow", "rate=10M tc_rates=1M", &err) < 0);
	EP_CHECK(ep_sched_subport_set(a, 2, "rate=1G pipes=3", &err) < 0);  /* not a power of 2 */
	ep_sched_free(a);
	ep_sched_free(b);
}

EP_TEST(qos_sched_pipes_are_reserved_then_applied_on_every_port)
{
	struct ep_sched *s = sched_new("pipes");
	struct ep_worker *w0 = worker_new(), *w1 = worker_new();
	struct ep_sched_port *p0, *p1;
	struct ep_err err;
	uint32_t pipe = 99;
	int fast;

	EP_CHECK_EQ(ep_sched_profile_set(s, "fast", "rate=500M", &err), 0);
	fast = ep_sched_profile_find(s, "fast");
	p0 = ep_sched_port_create(s, w0, SOCKET_ID_ANY, &err);
	p1 = ep_sched_port_create(s, w1, SOCKET_ID_ANY, &err);
	EP_CHECK(p0 != NULL && p1 != NULL);
	EP_CHECK_EQ(ep_sched_pipe_reserve(s, 1, &pipe, &err), 0);
	EP_CHECK_EQ(s->sub[1].n_free, 15);
	EP_CHECK_EQ(s->sub[1].pipe_prof[pipe], EP_SCHED_NO_PROFILE);      /* not applied yet */
	EP_CHECK_EQ(ep_sched_pipes_apply(s, &(struct ep_sched_pipe_cfg){ 1, pipe,
					 (uint16_t)fast }, 1, &err), 0);
	EP_CHECK_EQ(s->sub[1].pipe_prof[pipe], fast);
	/* A profile changed: a new rte_sched slot, on both ports, and the
	 * pipe moved to it; changed back: the first slot again, no new one. */
	{
		uint32_t slot = s->prof[fast].slot, n = s->n_slots;

		EP_CHECK_EQ(ep_sched_profile_set(s, "fast", "rate=400M", &err), 0);
		EP_CHECK(s->prof[fast].slot != slot);
		EP_CHECK_EQ(p0->n_slots, s->n_slots);
		EP_CHECK_EQ(p1->n_slots, s->n_slots);
		EP_CHECK_EQ(ep_sched_profile_set(s, "fast", "rate=500M", &err), 0);
		EP_CHECK_EQ(s->prof[fast].slot, slot);
		EP_CHECK_EQ(s->n_slots, n + 1);
	}
	ep_sched_pipe_release(s, 1, pipe);
	EP_CHECK_EQ(s->sub[1].n_free, 16);
	EP_CHECK(ep_sched_pipe_reserve(s, 7, &pipe, &err) < 0);
	ep_sched_port_free(p0);
	ep_sched_port_free(p1);
	ep_worker_free(w0);
	ep_worker_free(w1);
	ep_sched_free(s);
}

/* A worker that does not answer (stuck, descheduled): the apply fails
 * after the time-out and records nothing; when the worker runs the message
 * later, its argument is still alive (ASAN would see otherwise). */
EP_TEST(qos_sched_worker_that_does_not_answer_leaves_nothing_recorded)
{
	struct ep_sched *s = sched_new("stuck");
	struct ep_worker *w = worker_new();
	struct ep_sched_port *sp;
	struct ep_err err = {{0}};
	uint32_t pipe = 0;
	void *obj;

	sp = ep_sched_port_create(s, w, SOCKET_ID_ANY, &err);
	EP_CHECK(sp != NULL);
	EP_CHECK_EQ(ep_sched_pipe_reserve(s, 0, &pipe, &err), 0);
	__atomic_store_n(&w->running, true, __ATOMIC_RELEASE);     /* it will not answer */
	EP_CHECK(ep_sched_pipes_apply(s, &(struct ep_sched_pipe_cfg){ 0, pipe, 0 }, 1, &err) < 0);
	EP_CHECK(strstr(err.msg, "no answer") != NULL);
	EP_CHECK_EQ(s->sub[0].pipe_prof[pipe], EP_SCHED_NO_PROFILE);
	ep_sched_pipe_release(s, 0, pipe);
	/* The worker comes back and runs what was queued. */
	__atomic_store_n(&w->running, false, __ATOMIC_RELEASE);
	while (rte_ring_dequeue(w->msgq, &obj) == 0) {
		struct ep_worker_msg *m = obj;

		m->fn(w, m->arg);
		free(m);
	}
	ep_sched_port_free(sp);
	ep_worker_free(w);
	ep_sched_free(s);
}

/* ---- our scheduler (qos_hsched.c), on simulated time ----
 *
 * A rig: one instance of one subport, its port on a worker that is not
 * running (configuration messages run at once), a pool of 976-byte frames
 * (+ 24 bytes of frame overhead = 1000 bytes of credit, so that a 10 ms
 * period of 8 Mbit/s -- 10,000 bytes -- is ten whole frames: a class's
 * credits are reset each period, as rte_sched's are, and what a period
 * leaves short of a frame is lost).  `now` is the TSC
 * value the test hands the dequeue: time is whatever the test says, so the
 * byte counts are exact and no check depends on the machine's speed. */
#define HS_FRAME   976
#define HS_CREDIT  (HS_FRAME + 24)

struct hs_rig {
	struct ep_sched *s;
	struct ep_worker *w;
	struct ep_sched_port *sp;
	struct rte_mempool *mp;
	uint64_t now, hz;
};

static void
hs_rig_new(struct hs_rig *r, const char *name, enum ep_sched_impl impl, uint32_t qsize,
	   const char *subport)
{
	struct ep_sched_params p;
	struct ep_err err = {{0}};
	char pool[40];

	eng_init();
	ep_sched_params_default(&p);
	p.impl = impl;
	p.qsize = qsize;
	r->s = ep_sched_create(&eng, name, &p, &err);
	if (r->s == NULL || ep_sched_subport_set(r->s, 0, subport, &err) < 0) {
		printf("    scheduler: %s\n", err.msg);
		abort();
	}
	r->w = worker_new();
	r->sp = NULL;
	snprintf(pool, sizeof(pool), "hs_%s", name);
	r->mp = rte_pktmbuf_pool_create(pool, 8191, 0, 0, 2048, SOCKET_ID_ANY);
	r->hz = rte_get_tsc_hz();
	/* Simulated time starts an hour ahead of the TSC the port was built at. */
	r->now = rte_get_tsc_cycles() + 3600 * r->hz;
	if (r->mp == NULL)
		abort();
}

/* Profiles are given before the port is built; then the port, and pipe
 * @p pipe of subport 0 for each profile named in @p profs. */
static void
hs_rig_start(struct hs_rig *r, const char *const *profs, int n)
{
	struct ep_err err = {{0}};

	r->sp = ep_sched_port_create(r->s, r->w, SOCKET_ID_ANY, &err);
	if (r->sp == NULL) {
		printf("    port: %s\n", err.msg);
		abort();
	}
	for (int i = 0; i < n; i++) {
		uint32_t pipe;
		int prof = ep_sched_profile_find(r->s, profs[i]);

		if (prof < 0 || ep_sched_pipe_reserve(r->s, 0, &pipe, &err) < 0 ||
		    ep_sched_pipes_apply(r->s, &(struct ep_sched_pipe_cfg){ 0, pipe,
					 (uint16_t)prof }, 1, &err) < 0) {
			printf("    pipe %s: %s\n", profs[i], err.msg);
			abort();
		}
	}
}

static void
hs_rig_free(struct hs_rig *r)
{
	ep_sched_port_free(r->sp);
	ep_worker_free(r->w);
	ep_sched_free(r->s);
	rte_mempool_free(r->mp);
}

/* Enqueue @p n frames of @p len bytes to (pipe, tc, q); returns accepted. */
static uint32_t
hs_put(struct hs_rig *r, uint32_t pipe, uint32_t tc, uint32_t q, uint32_t n, uint16_t len)
{
	struct rte_mbuf *m[256];
	uint32_t k = 0;

	for (; k < n && k < RTE_DIM(m); k++) {
		m[k] = rte_pktmbuf_alloc(r->mp);
		if (m[k] == NULL)
			break;
		rte_pktmbuf_append(m[k], len);
		ep_sched_pkt_write(r->sp, m[k], 0, pipe, tc, q);
	}
	return ep_sched_enqueue(r->sp, m, k);
}

/* Dequeue everything allowed at r->now; bytes (with overhead) into
 * @p by_pipe[pipe] and @p by_q[pipe][queue 0-15] when given. */
static uint32_t
hs_take(struct hs_rig *r, uint64_t *by_pipe, uint64_t (*by_q)[16], uint32_t *order, uint32_t cap)
{
	struct rte_mbuf *m[64];
	uint32_t k, total = 0;

	do {
		k = ep_sched_dequeue(r->sp, m, RTE_DIM(m), r->now);
		for (uint32_t i = 0; i < k; i++) {
			uint32_t sp, pipe, tc, q, qi;

			ep_sched_pkt_read(r->sp, m[i], &sp, &pipe, &tc, &q);
			qi = tc < RTE_SCHED_TRAFFIC_CLASS_BE ? tc : tc + q;
			if (by_pipe != NULL)
				by_pipe[pipe] += m[i]->pkt_len + 24;
			if (by_q != NULL)
				by_q[pipe][qi] += m[i]->pkt_len + 24;
			if (order != NULL && total + i < cap)
				order[total + i] = qi;
		}
		rte_pktmbuf_free_bulk(m, k);
		total += k;
	} while (k != 0);
	return total;
}

EP_TEST(qos_hsched_strict_priority_serves_tc0_first_and_best_effort_last)
{
	struct hs_rig r;
	struct ep_err err;
	uint32_t order[16] = {0};
	static const uint32_t want[4] = { 0, 5, 11, 14 };      /* queue 14: BE queue 2 */

	hs_rig_new(&r, "hs_prio", EP_SCHED_IMPL_EP, 16, "rate=1G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=1G", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	/* Enqueued lowest priority first. */
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 2, 3, HS_FRAME), 3);
	EP_CHECK_EQ(hs_put(&r, 0, 11, 0, 3, HS_FRAME), 3);
	EP_CHECK_EQ(hs_put(&r, 0, 5, 0, 3, HS_FRAME), 3);
	EP_CHECK_EQ(hs_put(&r, 0, 0, 0, 3, HS_FRAME), 3);
	EP_CHECK_EQ(hs_take(&r, NULL, NULL, order, 16), 12);
	for (int i = 0; i < 12; i++)
		EP_CHECK_EQ(order[i], want[i / 3]);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_best_effort_queues_share_by_wrr_weight)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t by_q[4][16] = {{0}};
	struct rte_mbuf *m[64];

	hs_rig_new(&r, "hs_wrr", EP_SCHED_IMPL_EP, 64, "rate=10G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=10G wrr=1,2,3,4", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	/* All four queues kept busy; 64 packets a round, 200 rounds. */
	for (int round = 0; round < 200; round++) {
		uint32_t k;

		for (uint32_t q = 0; q < 4; q++)
			hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, q,
			       64 - ep_hsched_queue_len(r.sp->hs, 0, 0, 12 + q), HS_FRAME);
		r.now += r.hz / 1000;
		k = ep_sched_dequeue(r.sp, m, RTE_DIM(m), r.now);
		for (uint32_t i = 0; i < k; i++) {
			uint32_t sp, pipe, tc, q;

			ep_sched_pkt_read(r.sp, m[i], &sp, &pipe, &tc, &q);
			by_q[0][12 + q] += HS_CREDIT;
		}
		rte_pktmbuf_free_bulk(m, k);
	}
	for (uint32_t q = 1; q < 4; q++) {
		double share = (double)by_q[0][12 + q] / (double)by_q[0][12];

		printf("    queue %u / queue 0: %.3f (weight %u)\n", q, share, q + 1);
		EP_CHECK(share > 0.97 * (q + 1) && share < 1.03 * (q + 1));
	}
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

/* A backlogged pipe over @p seconds of 1 ms steps: the bytes it sent. */
static uint64_t
hs_backlogged(struct hs_rig *r, const uint32_t *pipes, int n_pipes, uint32_t tc, int ms,
	      uint64_t *by_pipe)
{
	uint64_t sum = 0, tmp[64] = {0};

	if (by_pipe == NULL)
		by_pipe = tmp;
	for (int t = 0; t < ms; t++) {
		for (int i = 0; i < n_pipes; i++)
			hs_put(r, pipes[i], tc, 0, 32 - ep_hsched_queue_len(r->sp->hs, 0, pipes[i], tc),
			       HS_FRAME);
		r->now += r->hz / 1000;
		hs_take(r, by_pipe, NULL, NULL, 0);
	}
	for (int i = 0; i < n_pipes; i++)
		sum += by_pipe[pipes[i]];
	return sum;
}

EP_TEST(qos_hsched_pipe_rate_and_bucket_bound_what_a_backlogged_pipe_sends)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t got;

	hs_rig_new(&r, "hs_rate", EP_SCHED_IMPL_EP, 32, "rate=1G pipes=4");
	/* 8 Mbit/s = 1,000,000 B/s, a bucket of 4 KiB: one frame a 1 ms step
	 * once the first burst (full bucket) is gone. */
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=8M tb_size=4K", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	got = hs_backlogged(&r, (uint32_t[]){ 0 }, 1, RTE_SCHED_TRAFFIC_CLASS_BE, 2000, NULL);
	printf("    2 s at 1,000,000 B/s, bucket 4096: %" PRIu64 " B\n", got);
	/* Never more than the rate times the time plus one bucket; at most
	 * two frames less (credits short of a whole frame at the ends). */
	EP_CHECK(got <= 2000000 + 4096);
	EP_CHECK(got >= 2000000 - 2 * HS_CREDIT);
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_idle_pipe_tokens_are_capped_at_its_bucket_size)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t by_pipe[4] = {0};

	hs_rig_new(&r, "hs_idle", EP_SCHED_IMPL_EP, 128, "rate=1G pipes=4");
	/* TC credits a whole second, so the bucket is what binds. */
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=8M tb_size=20K tc_period=1000", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	/* Ten idle seconds (10 MB of rate), then 128 frames at one instant. */
	r.now += 10 * r.hz;
	EP_CHECK_EQ(ep_sched_dequeue(r.sp, (struct rte_mbuf *[1]){ NULL }, 1, r.now), 0);
	EP_CHECK_EQ(hs_put(&r, 0, 3, 0, 128, HS_FRAME), 128);
	hs_take(&r, by_pipe, NULL, NULL, 0);
	printf("    after 10 s idle: %" PRIu64 " B at once (bucket 20480)\n", by_pipe[0]);
	EP_CHECK_EQ(by_pipe[0], 20480 / HS_CREDIT * HS_CREDIT);
	r.now += 20 * r.hz;
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_subport_rate_caps_the_sum_of_its_pipes)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t by_pipe[8] = {0}, got;

	/* 8 Mbit/s subport (1,000,000 B/s, bucket 16 KiB), four 8 Mbit/s pipes
	 * with one-frame buckets: a pipe visited sends one frame, so the
	 * split among them is the round robin's, not the bursts' (with
	 * 6-frame buckets a subport period of 10 frames goes 6 + 4). */
	hs_rig_new(&r, "hs_sub", EP_SCHED_IMPL_EP, 32, "rate=8M tb_size=16K pipes=8");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=8M tb_size=1K", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p", "p", "p", "p" }, 4);
	got = hs_backlogged(&r, (uint32_t[]){ 0, 1, 2, 3 }, 4, RTE_SCHED_TRAFFIC_CLASS_BE, 2000,
			    by_pipe);
	printf("    2 s: %" PRIu64 " B in all (%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")\n",
	       got, by_pipe[0], by_pipe[1], by_pipe[2], by_pipe[3]);
	EP_CHECK(got <= 2000000 + 16384);
	EP_CHECK(got >= 2000000 - 4 * HS_CREDIT);
	/* Evenly among the busy pipes, within 2 %. */
	for (int i = 0; i < 4; i++)
		EP_CHECK(by_pipe[i] * 4 > got * 98 / 100 && by_pipe[i] * 4 < got * 102 / 100);
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_tc_rate_limits_its_class_per_period)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t got;

	/* TC 3 at 8 Mbit/s in a 100 Mbit/s pipe: 10,000 B per 10 ms period,
	 * ten frames. */
	hs_rig_new(&r, "hs_tc", EP_SCHED_IMPL_EP, 32, "rate=1G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=100M tc_rates=100M,100M,100M,8M,100M,"
					 "100M,100M,100M,100M,100M,100M,100M,100M", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	got = hs_backlogged(&r, (uint32_t[]){ 0 }, 1, 3, 1000, NULL);
	printf("    1 s of TC 3: %" PRIu64 " B (100 periods x 10 frames = %d)\n", got,
	       100 * 10 * HS_CREDIT);
	/* 100 periods of 10 frames, one period more or less at the ends. */
	EP_CHECK(got >= 99 * 10 * HS_CREDIT && got <= 101 * 10 * HS_CREDIT);
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

/* A pipe's first packet is kept in the pipe's own line (qos_hsched.c,
 * solo) until a second one arrives: each packet must still leave in its
 * class's order and, within a queue, first in first out, and a port freed
 * with such a packet queued must give it back to its pool. */
EP_TEST(qos_hsched_first_packet_of_an_empty_pipe_keeps_its_order_and_is_freed_with_the_port)
{
	struct hs_rig r;
	struct ep_err err;
	struct rte_mbuf *m[8];
	static const uint16_t want[4] = { 300, 100, 200, 400 };
	uint32_t k;

	hs_rig_new(&r, "hs_solo", EP_SCHED_IMPL_EP, 16, "rate=1G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=1G", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	/* Alone in its pipe, out and the pipe empty again. */
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 1, 1, 500), 1);
	r.now += r.hz / 1000;
	k = ep_sched_dequeue(r.sp, m, RTE_DIM(m), r.now);
	EP_CHECK_EQ(k, 1);
	EP_CHECK_EQ(k == 1 ? m[0]->pkt_len : 0, 500);
	rte_pktmbuf_free_bulk(m, k);
	EP_CHECK_EQ(ep_hsched_queue_len(r.sp->hs, 0, 0, 13), 0);
	/* Best effort first (the pipe's only packet), then TC 0 and more
	 * best effort behind it: TC 0 leaves first, best effort in order. */
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 1, 1, 100), 1);
	EP_CHECK_EQ(hs_put(&r, 0, 0, 0, 1, 300), 1);
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 1, 1, 200), 1);
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 1, 1, 400), 1);
	r.now += r.hz / 1000;
	k = ep_sched_dequeue(r.sp, m, RTE_DIM(m), r.now);
	EP_CHECK_EQ(k, 4);
	for (uint32_t i = 0; i < k && i < 4; i++)
		EP_CHECK_EQ(m[i]->pkt_len, want[i]);
	rte_pktmbuf_free_bulk(m, k);
	/* One packet left alone in its pipe when the port goes. */
	EP_CHECK_EQ(hs_put(&r, 0, 3, 0, 1, 100), 1);
	EP_CHECK_EQ(rte_mempool_avail_count(r.mp), 8190u);
	ep_sched_port_free(r.sp);
	r.sp = NULL;
	EP_CHECK_EQ(rte_mempool_avail_count(r.mp), 8191u);
	hs_rig_free(&r);
}

/* One packet at a time into an empty pipe takes the dequeue's solo path
 * (pipe_visit): short of the pipe's bucket or of its class's credits it
 * must stay queued, its pipe still active, and go once time gives them. */
static uint32_t
hs_one_out(struct hs_rig *r)
{
	struct rte_mbuf *m[4];
	uint32_t k = ep_sched_dequeue(r->sp, m, RTE_DIM(m), r->now);

	rte_pktmbuf_free_bulk(m, k);
	return k;
}

EP_TEST(qos_hsched_pipes_only_packet_waits_for_its_bucket_and_class_credits)
{
	struct hs_rig r;
	struct ep_err err;

	hs_rig_new(&r, "hs_solo_wait", EP_SCHED_IMPL_EP, 16, "rate=1G pipes=4");
	/* Pipe 0: 8 Mbit/s (1000 B/ms), a bucket of one frame's credit and a
	 * bit (1024 B).  Pipe 1: 100 Mbit/s, TC 3 at 8 Mbit/s, 10 ms periods
	 * (ten frames a period). */
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "slow", "rate=8M tb_size=1K tc_period=1000", &err),
		    0);
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "tc3", "rate=100M tc_rates=100M,100M,100M,8M,100M,"
					 "100M,100M,100M,100M,100M,100M,100M,100M", &err), 0);
	hs_rig_start(&r, (const char *[]){ "slow", "tc3" }, 2);
	/* The bucket is full (an hour idle): one frame, 24 B left. */
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 2, 1, HS_FRAME), 1);
	EP_CHECK_EQ(hs_one_out(&r), 1);
	EP_CHECK_EQ(hs_put(&r, 0, RTE_SCHED_TRAFFIC_CLASS_BE, 2, 1, HS_FRAME), 1);
	EP_CHECK_EQ(hs_one_out(&r), 0);
	r.now += r.hz / 2000;           /* 0.5 ms: 524 B */
	EP_CHECK_EQ(hs_one_out(&r), 0);
	EP_CHECK_EQ(ep_hsched_queue_len(r.sp->hs, 0, 0, RTE_SCHED_TRAFFIC_CLASS_BE + 2), 1);
	r.now += r.hz / 2000;           /* 1 ms: 1024 B */
	EP_CHECK_EQ(hs_one_out(&r), 1);
	EP_CHECK_EQ(ep_hsched_queue_len(r.sp->hs, 0, 0, RTE_SCHED_TRAFFIC_CLASS_BE + 2), 0);
	/* Ten frames of TC 3 one at a time, each alone in its pipe; the
	 * eleventh waits for the next period. */
	for (int i = 0; i < 10; i++) {
		EP_CHECK_EQ(hs_put(&r, 1, 3, 0, 1, HS_FRAME), 1);
		EP_CHECK_EQ(hs_one_out(&r), 1);
	}
	EP_CHECK_EQ(hs_put(&r, 1, 3, 0, 1, HS_FRAME), 1);
	EP_CHECK_EQ(hs_one_out(&r), 0);
	EP_CHECK_EQ(ep_hsched_queue_len(r.sp->hs, 0, 1, 3), 1);
	r.now += r.hz / 100 + 1;
	EP_CHECK_EQ(hs_one_out(&r), 1);
	EP_CHECK_EQ(rte_mempool_avail_count(r.mp), 8191u);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_tail_drop_at_queue_size_counted_per_tc)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t pk[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE], dr[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];

	hs_rig_new(&r, "hs_drop", EP_SCHED_IMPL_EP, 16, "rate=1G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=1G", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	/* 20 into a queue of 16: 4 freed (the pool gets them back). */
	EP_CHECK_EQ(hs_put(&r, 0, 7, 0, 20, HS_FRAME), 16);
	EP_CHECK_EQ(rte_mempool_in_use_count(r.mp), 16);
	ep_hsched_stats(r.sp->hs, pk, dr);
	EP_CHECK_EQ(pk[7], 16);
	EP_CHECK_EQ(dr[7], 4);
	EP_CHECK_EQ(ep_sched_stats_collect(r.s, &err), 0);
	EP_CHECK_EQ(r.sp->tc_dropped[7], 4);
	EP_CHECK_EQ(hs_take(&r, NULL, NULL, NULL, 0), 16);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_profile_changed_at_run_time_moves_its_pipe_to_the_new_rate)
{
	struct hs_rig r;
	struct ep_err err;
	uint64_t first, second;

	hs_rig_new(&r, "hs_reprof", EP_SCHED_IMPL_EP, 32, "rate=1G pipes=4");
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=8M tb_size=8K", &err), 0);
	hs_rig_start(&r, (const char *[]){ "p" }, 1);
	first = hs_backlogged(&r, (uint32_t[]){ 0 }, 1, RTE_SCHED_TRAFFIC_CLASS_BE, 1000, NULL);
	EP_CHECK_EQ(ep_sched_profile_set(r.s, "p", "rate=24M tb_size=8K", &err), 0);
	second = hs_backlogged(&r, (uint32_t[]){ 0 }, 1, RTE_SCHED_TRAFFIC_CLASS_BE, 1000, NULL);
	printf("    1 s at 8M: %" PRIu64 " B, then 1 s at 24M: %" PRIu64 " B\n", first, second);
	EP_CHECK(first >= 1000000 - 3 * HS_CREDIT && first <= 1000000 + 8192);
	EP_CHECK(second >= 3000000 - 3 * HS_CREDIT && second <= 3000000 + 8192);
	hs_take(&r, NULL, NULL, NULL, 0);
	hs_rig_free(&r);
}

EP_TEST(qos_hsched_instance_refuses_what_only_rte_sched_does)
{
	struct ep_sched_params p;
	struct ep_sched *s;
	struct ep_err err;

	eng_init();
	ep_sched_params_default(&p);
	p.impl = EP_SCHED_IMPL_EP;
	s = ep_sched_create(&eng, "hs_refuse", &p, &err);
	EP_CHECK(s != NULL);
	EP_CHECK(ep_sched_subport_set(s, 0, "rate=1G pipes=4 tc_ov=on", &err) < 0);
	EP_CHECK(strstr(err.msg, "tc_ov") != NULL);
	ep_sched_free(s);
	p.qsize = 256;
	EP_CHECK(ep_sched_create(&eng, "hs_refuse", &p, &err) == NULL);
	EP_CHECK_EQ(ep_sched_impl_parse("rte_sched"), EP_SCHED_IMPL_RTE);
	EP_CHECK_EQ(ep_sched_impl_parse("fast"), -1);
}

/* The same congested input into ours and into rte_sched, side by side on
 * the wall clock (rte_sched reads the TSC itself): a 100 Mbit/s subport,
 * pipes of 60, 60 and 20 Mbit/s each with TC 0 limited to 10 Mbit/s, TC 0
 * and best effort kept full.  Expected: 10 + 10 for the 20M pipe, 10 + 30
 * for each 60M one (the subport's rest split evenly).  Each pipe's and
 * each (pipe, class)'s share of the bytes within 15 % of rte_sched's (both on
 * the wall clock of a loaded machine: runs differ by a few %). */
EP_TEST(qos_hsched_shares_a_congested_subport_like_rte_sched)
{
	static const char *const tc10 = "tc_rates=10M,60M,60M,60M,60M,60M,60M,60M,60M,60M,60M,60M,60M";
	struct hs_rig r[2];
	uint64_t by_q[2][4][16] = {{{0}}};
	uint32_t inq[2][3][2] = {{{0}}};
	uint64_t t_end, total[2] = {0, 0};
	char spec[256];
	struct ep_err err;

	hs_rig_new(&r[0], "cmp_ep", EP_SCHED_IMPL_EP, 32, "rate=100M tb_size=64K pipes=4");
	hs_rig_new(&r[1], "cmp_rte", EP_SCHED_IMPL_RTE, 32, "rate=100M tb_size=64K pipes=4");
	for (int k = 0; k < 2; k++) {
		snprintf(spec, sizeof(spec), "rate=60M %s", tc10);
		EP_CHECK_EQ(ep_sched_profile_set(r[k].s, "big", spec, &err), 0);
		snprintf(spec, sizeof(spec), "rate=20M %s", tc10);
		for (char *c = strstr(spec, "60M"); c != NULL; c = strstr(c, "60M"))
			c[0] = '2', c[1] = '0';
		EP_CHECK_EQ(ep_sched_profile_set(r[k].s, "small", spec, &err), 0);
		hs_rig_start(&r[k], (const char *[]){ "big", "big", "small" }, 3);
	}
	EP_CHECK(r[0].sp->hs != NULL && r[1].sp->port != NULL);
	t_end = rte_get_tsc_cycles() + r[0].hz;        /* one second */
	for (uint64_t now = rte_get_tsc_cycles(); now < t_end; now = rte_get_tsc_cycles()) {
		for (int k = 0; k < 2; k++) {
			struct rte_mbuf *m[64];
			uint32_t n;

			/* Pipes 0, 1, 2 as reserved. */
			for (uint32_t p = 0; p < 3; p++)
				for (uint32_t c = 0; c < 2; c++)
					inq[k][p][c] += hs_put(&r[k], p, c ? 12 : 0, 0,
							       32 - inq[k][p][c], HS_FRAME);
			n = ep_sched_dequeue(r[k].sp, m, RTE_DIM(m), now);
			for (uint32_t i = 0; i < n; i++) {
				uint32_t sp, pipe, tc, q;

				ep_sched_pkt_read(r[k].sp, m[i], &sp, &pipe, &tc, &q);
				inq[k][pipe][tc != 0]--;
				by_q[k][pipe][tc] += HS_CREDIT;
				total[k] += HS_CREDIT;
			}
			rte_pktmbuf_free_bulk(m, n);
		}
	}
	for (uint32_t p = 0; p < 3; p++)
		for (uint32_t c = 0; c < 2; c++) {
			uint32_t tc = c ? 12 : 0;
			double a = (double)by_q[0][p][tc] / (double)total[0];
			double b = (double)by_q[1][p][tc] / (double)total[1];

			printf("    pipe %u tc %2u: ours %.3f rte_sched %.3f of the bytes\n", p, tc,
			       a, b);
			EP_CHECK(a > 0.85 * b && a < 1.15 * b);
		}
	for (int k = 0; k < 2; k++) {
		r[k].now = rte_get_tsc_cycles() + 10 * r[k].hz;
		for (int tries = 0; tries < 100000 && rte_mempool_in_use_count(r[k].mp) != 0;
		     tries++) {
			struct rte_mbuf *m[64];
			uint32_t n = ep_sched_dequeue(r[k].sp, m, RTE_DIM(m), rte_get_tsc_cycles());

			rte_pktmbuf_free_bulk(m, n);
		}
		hs_rig_free(&r[k]);
	}
}
