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
