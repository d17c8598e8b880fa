/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HQoS: one rte_sched port per downlink worker, five levels
 *
 *   port (hqos_port_rate) -> subport (rate, its pipes) -> pipe (one per
 *   subscriber, its pipe profile) -> 13 traffic classes (0-11 strict
 *   priority, 12 best effort) -> queue (one per strict TC; 4 WRR queues in
 *   best effort)
 *
 * Every port is built from the same control-side tables (subports, the pipe
 * profile slots, the subscribers' pipes), so all downlink workers agree on
 * subport/pipe ids.  After start, a port is only touched by its worker:
 * pipe (re)configuration, new profile slots and statistics reads arrive as
 * messages (ep_worker_call) and run between two bursts.  rte_sched keeps its
 * own time base (TSC), so the service hook drains at the configured rates
 * whether or not packets arrive.
 *
 * Best-effort oversubscription is a subport option (`tc_ov=on`, off by
 * default here): without it rte_sched ignores the pipes' tc_ov_weight and
 * an oversubscribed subport is split evenly among its busy pipes.  With it
 * (rte_sched_subport_tc_ov_config; not part of the subport params in
 * 22.11), each subport tc_period a pipe may send at most watermark x
 * tc_ov_weight bytes of best effort.  The watermark is a slow controller:
 * each subport tc_period it moves by 1/128 -- down when the subport's best
 * effort was used up (within one MTU), up otherwise -- and settles where
 * the busy pipes' shares add up to the subport: watermark = subport
 * credits / sum(weights).
 *
 * Where it starts is the catch.  DPDK 22.11 computes its ceiling,
 * tc_ov_wm_max, in rte_sched_subport_config as
 *
 *     rte_sched_time_ms_to_bytes(profile->tc_period, pipe_tc_be_rate_max)
 *
 * but profile->tc_period is the subport period already converted to bytes
 * of port time (tc_period_ms x port rate / 1000), not milliseconds: the
 * ceiling comes out port_rate/1000 times too large.  A 100 Mbit/s subport
 * with 10 ms periods on a 10 Gbit/s port starts at 1.6e11 bytes against a
 * settled 31 kB (weights 1+3): 128 x ln(5e6) = 1975 periods, 20 s during
 * which the weights do nothing (measured: 1:1.00 for as long as a test
 * runs).  The ceiling is computed once, from the largest best-effort rate
 * in the table the subport is configured with, and is not recomputed when
 * profiles are added later.  So every subport is configured with a table
 * of one placeholder profile whose best-effort rate makes the buggy
 * formula give the intended ceiling -- one subport period of the subport's
 * best-effort credits:
 *
 *     placeholder BE rate = subport BE rate x 1000 / port rate   (>= 1)
 *
 * and the real profiles are added after it with
 * rte_sched_subport_pipe_profile_add: rte_sched profile id = our sched id
 * + 1 in every subport of every port.  No pipe ever uses profile 0.  The
 * watermark then settles in 128 x ln(sum of the busy pipes' weights)
 * periods: 177 for 1+3 (test_bng_hqos.c).
 */
/* rte_rcu_qsbr_dq and rte_sched's PIE inlines are still
 * experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>

#include "bng.h"

/* rte_sched pipe profile id of our profile slot (profile 0 is the
 * watermark placeholder, see above). */
#define HQOS_PROF_ID(sched_id) ((int32_t)(sched_id) + 1)

/* The placeholder that sets a subport's tc_ov watermark ceiling: a copy
 * of @p like whose TC rates are the smallest rte_sched accepts, with the
 * best-effort rate chosen as explained at the top of this file. */
static void
bng_hqos_wm_placeholder(struct rte_sched_pipe_params *out, const struct rte_sched_pipe_params *like,
			const struct rte_sched_subport_profile_params *sp, uint64_t port_rate)
{
	uint64_t be = sp->tc_rate[RTE_SCHED_TRAFFIC_CLASS_BE] * 1000 / port_rate;

	*out = *like;
	for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
		out->tc_rate[t] = 1;
	out->tc_rate[RTE_SCHED_TRAFFIC_CLASS_BE] = RTE_MAX(be, (uint64_t)1);
}

struct rte_sched_port *
bng_hqos_port_create(struct bng *b, unsigned int worker_id, int socket, struct ep_err *err)
{
	struct rte_sched_subport_profile_params sprof[BNG_MAX_SUBPORTS];
	struct rte_sched_port *port;
	uint32_t n_sp;
	char name[64];
	static uint32_t seq;

	if (b->n_subports == 0)
		return ep_err_set(err, "hqos: no subport configured"), NULL;
	for (uint32_t i = 0; i < b->n_subports; i++) {
		if (!b->subport[i].in_use) {
			ep_err_set(err, "hqos: subport %u missing (subports are 0..%u without gaps)",
				   i, b->n_subports - 1);
			return NULL;
		}
		sprof[i] = b->subport[i].prof;
	}
	/* rte_sched wants a power-of-two number of subports: the ones above
	 * the configured ids are shaped like subport 0 and have one pipe, which
	 * no subscriber ever gets. */
	n_sp = rte_align32pow2(b->n_subports);
	for (uint32_t i = b->n_subports; i < n_sp; i++)
		sprof[i] = b->subport[0].prof;
	snprintf(name, sizeof(name), "bng_hqos_%u_%u", worker_id,
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	port = rte_sched_port_config(&(struct rte_sched_port_params){
		.name = name, .socket = socket, .rate = b->p.hqos_rate, .mtu = b->p.hqos_mtu,
		.frame_overhead = b->p.hqos_frame_overhead,
		.n_subports_per_port = n_sp, .subport_profiles = sprof,
		.n_subport_profiles = n_sp, .n_max_subport_profiles = n_sp,
		.n_pipes_per_subport = b->max_pipes });
	if (port == NULL) {
		ep_err_set(err, "hqos: rte_sched_port_config failed (rate %" PRIu64 " B/s, %u "
			   "subports, %u pipes)", b->p.hqos_rate, b->n_subports, b->max_pipes);
		return NULL;
	}
	for (uint32_t i = 0; i < n_sp; i++) {
		bool real = i < b->n_subports;
		struct rte_sched_pipe_params ph;
		struct rte_sched_subport_params sp = {
			.n_pipes_per_subport_enabled = real ? b->subport[i].n_pipes : 1,
			.pipe_profiles = &ph, .n_pipe_profiles = 1,
			.n_max_pipe_profiles = BNG_MAX_PIPE_PROF + 1,
		};
		int rc;

		bng_hqos_wm_placeholder(&ph, &b->sched[0], &sprof[i], b->p.hqos_rate);
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++)
			sp.qsize[t] = (uint16_t)b->p.hqos_qsize;
		rc = rte_sched_subport_config(port, i, &sp, i);
		if (rc == 0)
			rc = rte_sched_subport_tc_ov_config(port, i, real && b->subport[i].tc_ov);
		for (uint32_t k = 0; rc == 0 && real && k < b->n_sched; k++) {
			uint32_t id;

			rc = rte_sched_subport_pipe_profile_add(port, i, &b->sched[k], &id);
			if (rc == 0 && id != (uint32_t)HQOS_PROF_ID(k))
				rc = -EINVAL;
		}
		if (rc != 0) {
			ep_err_set(err, "hqos: subport %u: rte_sched_subport_config failed (%d): "
				   "check its rate, pipes and the pipe profiles", i, rc);
			rte_sched_port_free(port);
			return NULL;
		}
	}
	for (uint32_t id = 1; id <= b->p.max_subscribers; id++) {
		const struct bng_sub *s = b->subs[id];

		if (s != NULL && rte_sched_pipe_config(port, s->subport, s->pipe,
				HQOS_PROF_ID(b->pipe_prof[s->pipe_prof].sched_id)) != 0) {
			ep_err_set(err, "hqos: pipe config of subscriber %u failed", id);
			rte_sched_port_free(port);
			return NULL;
		}
	}
	return port;
}

struct pipes_msg { struct bng_down *d; const struct bng_pipe_cfg *c; uint32_t n; int rc; };

static void
pipes_on_worker(struct ep_worker *w, void *arg)
{
	struct pipes_msg *m = arg;

	for (uint32_t i = 0; i < m->n; i++)
		if (rte_sched_pipe_config(m->d->sched, m->c[i].subport, m->c[i].pipe,
					  HQOS_PROF_ID(m->c[i].prof)) != 0)
			m->rc = -1;
}

int
bng_hqos_pipes_config(struct bng *b, const struct bng_pipe_cfg *c, uint32_t n, struct ep_err *err)
{
	for (int i = 0; i < b->n_down; i++) {
		struct pipes_msg m = { b->down[i], c, n, 0 };

		if (ep_worker_call(b->down[i]->w, pipes_on_worker, &m, 1000, err) < 0)
			return -1;
		if (m.rc != 0)
			return ep_err_set(err, "hqos: rte_sched_pipe_config failed on worker %s",
					  b->down[i]->w->name);
	}
	return 0;
}

struct prof_msg { struct bng *b; struct bng_down *d; uint32_t slot; int rc; };

static void
prof_on_worker(struct ep_worker *w, void *arg)
{
	struct prof_msg *m = arg;

	for (uint32_t sp = 0; sp < m->b->n_subports; sp++) {
		uint32_t id;

		if (rte_sched_subport_pipe_profile_add(m->d->sched, sp, &m->b->sched[m->slot],
						       &id) != 0 || id != (uint32_t)HQOS_PROF_ID(m->slot))
			m->rc = -1;
	}
}

int
bng_hqos_profile_add_all(struct bng *b, uint32_t slot, struct ep_err *err)
{
	for (int i = 0; i < b->n_down; i++) {
		struct prof_msg m = { b, b->down[i], slot, 0 };

		if (ep_worker_call(b->down[i]->w, prof_on_worker, &m, 1000, err) < 0)
			return -1;
		if (m.rc != 0)
			return ep_err_set(err, "hqos: rte_sched rejected the pipe profile (rates "
					  "vs the port and subport, tc_period)");
	}
	return 0;
}

static void
stats_on_worker(struct ep_worker *w, void *arg)
{
	struct bng_down *d = arg;

	for (uint32_t sp = 0; sp < d->b->n_subports; sp++) {
		struct rte_sched_subport_stats st;
		uint32_t tc_ov;

		/* rte_sched clears its counters on read: accumulate. */
		if (rte_sched_subport_read_stats(d->sched, sp, &st, &tc_ov) != 0)
			continue;
		for (int t = 0; t < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; t++) {
			d->tc_pkts[t] += st.n_pkts_tc[t];
			d->tc_dropped[t] += st.n_pkts_tc_dropped[t];
		}
	}
}

int
bng_hqos_stats_collect(struct bng *b, struct ep_err *err)
{
	for (int i = 0; i < b->n_down; i++)
		if (ep_worker_call(b->down[i]->w, stats_on_worker, b->down[i], 1000, err) < 0)
			return -1;
	return 0;
}

uint16_t
bng_hqos_dequeue(struct bng_down *d, struct rte_mbuf **pkts, uint16_t max)
{
	return (uint16_t)rte_sched_port_dequeue(d->sched, pkts, max);
}
