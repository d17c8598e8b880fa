/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Polling policies on the control path: the configuration keys, one
 * function that changes a worker's policy (used at start and by
 * `poll-set`), and the `power`, `poll-set` and `power-reset` commands.
 *
 * A change is planned on the control thread without side effects (checks
 * against the machine's facts, descriptors gathered, the cpufreq file
 * opened), then applied whole by the worker between two bursts (the
 * message ring): DPDK's PMD power management is attached to or detached
 * from its rx queues there, where no rx_burst on them can be in progress,
 * as rte_power_ethdev_pmgmt_queue_enable() requires.  If DPDK refuses, the
 * worker keeps its old policy and the error names the port and queue.
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_power_pmd_mgmt.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "engine_internal.h"
#include "power_internal.h"

_Static_assert(EP_POWER_MAX_RX == EP_MAX_RX, "sleep-rx waits on every rx queue of a worker");

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define POWER_CALL_MS 2000
#define RAPL_ROOT "/sys/class/powercap"

/* ------------------------------------------------------------------------ */
/* Configuration keys.                                                      */

/* The policy keys of section @p s over @p c; min <= max checked here so the
 * error names the section, the rest at start (it needs the ports). */
static int
read_section(const struct ep_cfg *cfg, struct ep_cfg_section *s, struct ep_poll_cfg *c,
	     bool *policy_given, struct ep_err *err)
{
	*policy_given = false;
	for (int i = 0; ep_poll_cfg_keys[i] != NULL; i++) {
		const struct ep_cfg_kv *kv = ep_cfg_get(cfg, s, ep_poll_cfg_keys[i], err);
		struct ep_err e2 = { "" };

		if (kv == NULL) {
			if (err->msg[0] != '\0')
				return -1;
			continue;
		}
		if (ep_poll_cfg_set(c, ep_poll_cfg_keys[i], kv->val, &e2) < 0)
			return ep_cfg_error(cfg, kv, err, "%s", e2.msg);
		*policy_given = *policy_given || i == 0;
	}
	if (c->max_sleep_us < c->min_sleep_us)
		return ep_cfg_section_error(cfg, s, err, "max_sleep_us is below min_sleep_us "
					    "(%u < %u)", c->max_sleep_us, c->min_sleep_us);
	return 0;
}

int
ep_power_engine_config(struct ep_engine *e, struct ep_cfg_section *s, struct ep_err *err)
{
	bool given;

	ep_poll_cfg_default(&e->poll);
	if (read_section(e->cfg, s, &e->poll, &given, err) < 0)
		return -1;
	/* `idle_polls = 0` alone is the older spelling of busy polling. */
	if (!given && e->poll.idle_polls == 0) {
		e->poll.policy = EP_POLL_BUSY;
		e->poll.auto_policy = false;
		e->poll.idle_polls = EP_POLL_IDLE_POLLS;
	}
	return 0;
}

int
ep_power_worker_config(struct ep_engine *e, struct ep_worker *w, struct ep_err *err)
{
	bool given;

	w->power->want = e->poll;
	return read_section(e->cfg, w->cfg, &w->power->want, &given, err);
}

/* The line to blame for a refused policy: the key in the worker's section,
 * else in [engine]. */
static int
config_error(struct ep_engine *e, struct ep_worker *w, const char *key, const char *msg,
	     struct ep_err *err)
{
	const struct ep_cfg_kv *kv = ep_cfg_get(e->cfg, w->cfg, key, NULL);

	if (kv == NULL)
		kv = ep_cfg_get(e->cfg, ep_cfg_find(e->cfg, "engine", NULL), key, NULL);
	if (kv != NULL)
		return ep_cfg_error(e->cfg, kv, err, "worker %s: %s", w->name, msg);
	return ep_cfg_section_error(e->cfg, w->cfg, err, "%s", msg);
}

/* ------------------------------------------------------------------------ */
/* Changing a worker's policy: plan, then apply on the worker.              */

struct policy_plan {
	struct ep_poll_cfg cfg;      /* resolved (ep_poll_resolve) */
	struct pollfd fds[EP_POWER_MAX_RX + 1];
	int n_fds;
	int freq_fd;                 /* the new one; after apply, the old one to close */
	uint32_t freq_low_khz, freq_high_khz;
	int freq_cpu;
	bool rx_monitor;
	uint16_t mon_port, mon_queue;
	int rc;                      /* set by the worker */
	char msg[200];
};

static enum rte_power_pmd_mgmt_type
dpdk_mode(enum ep_pmgmt_mode m)
{
	return m == EP_PMGMT_MONITOR ? RTE_POWER_MGMT_TYPE_MONITOR :
	       m == EP_PMGMT_SCALE ? RTE_POWER_MGMT_TYPE_SCALE : RTE_POWER_MGMT_TYPE_PAUSE;
}

/*
 * DPDK attaches or detaches its callback only while the queue is stopped:
 * a PMD that reports queue state (rxq_info_get) answers -EBUSY for a
 * started one, which is stopped and started again around the call (the
 * worker that owns it is the one running this); PMDs without queue state
 * (af_packet, ring, null, af_xdp in 22.11) count as stopped.
 */
static int
pmgmt_queue(struct ep_worker *w, int i, bool enable, enum ep_pmgmt_mode mode)
{
	uint16_t port = w->engine->ports[w->rx[i].port].port_id, q = w->rx[i].queue;
	int rc = enable ? rte_power_ethdev_pmgmt_queue_enable(w->lcore, port, q, dpdk_mode(mode)) :
			  rte_power_ethdev_pmgmt_queue_disable(w->lcore, port, q);

	if (rc == -EBUSY && rte_eth_dev_rx_queue_stop(port, q) == 0) {
		rc = enable ? rte_power_ethdev_pmgmt_queue_enable(w->lcore, port, q,
								  dpdk_mode(mode)) :
			      rte_power_ethdev_pmgmt_queue_disable(w->lcore, port, q);
		rte_eth_dev_rx_queue_start(port, q);
	}
	return rc;
}

/* Every rx queue of @p w, or none: a refusal undoes the queues done. */
static int
pmgmt_all(struct ep_worker *w, bool enable, enum ep_pmgmt_mode mode, char *msg, size_t len)
{
	for (int i = 0; i < w->n_rx; i++) {
		int rc = pmgmt_queue(w, i, enable, mode);

		if (rc < 0 && enable) {
			for (int j = 0; j < i; j++)
				pmgmt_queue(w, j, false, mode);
			snprintf(msg, len, "dpdk-pmgmt %s: DPDK refused port %s rx queue %u: %s%s",
				 ep_pmgmt_mode_name[mode], w->engine->ports[w->rx[i].port].name,
				 w->rx[i].queue, rte_strerror(-rc),
				 rc == -EBUSY ? " (the queue is started and its PMD cannot stop it "
						"alone)" : "");
			return -1;
		}
	}
	return 0;
}

/*
 * The worker thread's scheduling class for its policy's rt_priority, on the
 * worker thread (at its start, and from a policy change it runs).  auto
 * without the right to it (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) stays
 * SCHED_OTHER and says why in `power`; an explicit priority was checked by
 * the same call on the control thread's behalf (plan_rt).
 */
void
ep_power_rt_apply(struct ep_worker *w)
{
	struct ep_power *p = w->power;
	int prio = w->poll.rt_priority > 0 ? w->poll.rt_priority : 0;
	struct sched_param sp = { .sched_priority = prio };

	bool demoted = p->rt.demoted;

	ep_rt_guard_init(&p->rt, w->engine->tsc_hz, rte_rdtsc(), ep_power_thread_cpu_ns());
	if (prio == p->rt_applied && !demoted)
		return;
	if (pthread_setschedparam(pthread_self(), prio ? SCHED_FIFO : SCHED_OTHER, &sp) == 0) {
		p->rt_applied = prio;
		p->rt_note[0] = '\0';
	} else {
		snprintf(p->rt_note, sizeof(p->rt_note), "SCHED_FIFO %d refused (needs "
			 "CAP_SYS_NICE or RLIMIT_RTPRIO): SCHED_OTHER", prio);
	}
}

/* On the worker, between two bursts. */
static void
apply_on_worker(struct ep_worker *w, void *arg)
{
	struct policy_plan *pl = arg;
	struct ep_power *p = w->power;
	const struct ep_poll_cfg old = w->poll;
	bool pm_old = old.policy == EP_POLL_DPDK_PMGMT, pm_new = pl->cfg.policy == EP_POLL_DPDK_PMGMT;
	bool pm_change = pm_old != pm_new || (pm_old && old.pmgmt_mode != pl->cfg.pmgmt_mode);
	int fd;

	if (pm_change && pm_old)
		pmgmt_all(w, false, old.pmgmt_mode, NULL, 0);
	if (pm_change && pm_new && pmgmt_all(w, true, pl->cfg.pmgmt_mode, pl->msg,
					     sizeof(pl->msg)) < 0) {
		if (pm_old)
			pmgmt_all(w, true, old.pmgmt_mode, NULL, 0);
		pl->rc = -1;
		return;
	}
	memcpy(p->fds, pl->fds, sizeof(p->fds));
	p->n_fds = pl->n_fds;
	fd = p->freq_fd;
	p->freq_fd = pl->freq_fd;
	pl->freq_fd = fd;
	/* The old frequency bound goes back to the control thread with its fd. */
	RTE_SWAP(p->freq_high_khz, pl->freq_high_khz);
	p->freq_low_khz = pl->freq_low_khz;
	p->freq_cpu = pl->freq_cpu;
	p->rx_monitor = pl->rx_monitor;
	p->mon_port = pl->mon_port;
	p->mon_queue = pl->mon_queue;
	ep_freq_gov_init(&p->gov, w->engine->tsc_hz, rte_rdtsc());
	w->poll = pl->cfg;
	ep_poll_state_reset(&w->poll, &w->poll_state);
	/* At start-up this runs on the control thread: the worker applies its
	 * scheduling class itself when it starts (ep_power_thread_start). */
	if (__atomic_load_n(&p->have_thread, __ATOMIC_ACQUIRE) &&
	    pthread_equal(pthread_self(), p->thread))
		ep_power_rt_apply(w);
	p->policy_changes++;
	pl->rc = 0;
}

/* rt_priority was given as a number, not left to auto. */
static bool
want_rt_explicit(const struct ep_worker *w, const struct ep_poll_cfg *c)
{
	(void)w;
	for (int i = 0; ep_poll_cfg_keys[i] != NULL; i++)
		if (strcmp(ep_poll_cfg_keys[i], "rt_priority") == 0)
			return (c->given & (1u << i)) != 0;
	return false;
}

/* Whether this process may use SCHED_FIFO @p prio at all (CAP_SYS_NICE, or
 * RLIMIT_RTPRIO as high): asked of the kernel, which is the only judge. */
static int
plan_rt(int prio, struct ep_err *err)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur >= (rlim_t)prio)
		return 0;
	if (sched_get_priority_max(SCHED_FIFO) >= prio && geteuid() == 0)
		return 0;
	return ep_err_set(err, "rt_priority = %d: this process may not use SCHED_FIFO (it "
			  "needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d)", prio, prio);
}

/* Phase 1: refuse what cannot run, gather what the worker will use. */
static int
plan_policy(struct ep_engine *e, struct ep_worker *w, const struct ep_poll_cfg *c,
	    struct policy_plan *pl, struct ep_err *err)
{
	struct ep_poll_facts f;

	memset(pl, 0, sizeof(*pl));
	pl->freq_fd = -1;
	ep_power_facts(e, w, true, &f);
	ep_poll_resolve(c, &f, &pl->cfg);
	c = &pl->cfg;
	if (ep_poll_check(c, &e->power_caps, &f, err) < 0)
		return -1;
	if (c->rt_priority > 0 && want_rt_explicit(w, c) && plan_rt(c->rt_priority, err) < 0)
		return -1;
	if (c->policy == EP_POLL_SLEEP_RX) {
		for (int i = 0; i < f.n_rx; i++) {
			pl->fds[i].fd = ep_port_rx_fd(w->rx[i].port, w->rx[i].queue);
			pl->fds[i].events = POLLIN;
			pl->n_fds++;
		}
		/* A control message ends the wait too (ep_worker_call kicks it). */
		pl->fds[pl->n_fds].fd = w->power->msg_fd;
		pl->fds[pl->n_fds].events = POLLIN;
	}
	if (c->policy == EP_POLL_CPU_WAIT && f.n_rx == 1 && f.rx[0].has_monitor) {
		pl->rx_monitor = true;
		pl->mon_port = w->rx[0].port;
		pl->mon_queue = w->rx[0].queue;
	}
	if (c->cpufreq) {
		struct ep_power_freq fr;
		char why[192];

		if (ep_power_cpufreq_find(w, &fr, why, sizeof(why)) < 0)
			return ep_err_set(err, "cpufreq = on: %s", why);
		pl->freq_fd = open(fr.path, O_WRONLY | O_CLOEXEC);
		if (pl->freq_fd < 0)
			return ep_err_set(err, "cpufreq = on: %s: %s", fr.path, strerror(errno));
		pl->freq_low_khz = (uint32_t)fr.low_khz;
		pl->freq_high_khz = (uint32_t)fr.high_khz;
		pl->freq_cpu = fr.cpu;
	}
	if (c->policy == EP_POLL_DPDK_PMGMT) {
		/* Process-wide in DPDK; ep_poll_check made every user agree. */
		rte_power_pmd_mgmt_set_emptypoll_max(c->idle_polls);
		rte_power_pmd_mgmt_set_pause_duration(c->min_sleep_us);
	}
	return 0;
}

/* After apply: the descriptor the worker let go of; the CPU it scaled gets
 * its highest frequency back. */
static void
plan_release(struct policy_plan *pl)
{
	char buf[24];
	int n;

	if (pl->freq_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%u", pl->freq_high_khz);
	if (pl->freq_high_khz != 0 && pwrite(pl->freq_fd, buf, (size_t)n, 0) != n)
		fprintf(stderr, "edgeplane-dp: cpufreq: cannot restore %u kHz: %s\n",
			pl->freq_high_khz, strerror(errno));
	close(pl->freq_fd);
	pl->freq_fd = -1;
}

/* The one function that changes a worker's policy: start-up and poll-set. */
static int
set_policy(struct ep_engine *e, struct ep_worker *w, const struct ep_poll_cfg *c,
	   struct ep_err *err)
{
	struct policy_plan *pl = calloc(1, sizeof(*pl));
	int rc;

	if (pl == NULL)
		return ep_err_set(err, "worker %s: out of memory", w->name);
	if (plan_policy(e, w, c, pl, err) < 0) {
		plan_release(pl);
		free(pl);
		return -1;
	}
	if (ep_worker_call(w, apply_on_worker, pl, POWER_CALL_MS, err) < 0) {
		/* The worker may still run it: leave the plan to it. */
		return -1;
	}
	rc = pl->rc;
	if (rc == 0)
		w->power->want = *c;
	if (rc < 0)
		ep_err_set(err, "%s", pl->msg);
	plan_release(pl);
	free(pl);
	return rc;
}

int
ep_power_start(struct ep_engine *e, bool check_only, struct ep_err *err)
{
	struct ep_err e2 = { "" };

	ep_power_caps_detect(&e->power_caps);
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];
		const struct ep_poll_cfg *want = &w->power->want;
		struct ep_poll_facts f;
		const char *key;

		struct ep_poll_cfg run;

		ep_power_facts(e, w, !check_only, &f);
		ep_poll_resolve(want, &f, &run);
		if (ep_poll_check(&run, &e->power_caps, &f, &e2) == 0 &&
		    (check_only || set_policy(e, w, want, &e2) == 0)) {
			/* --check applies nothing, but pipelines' builds read it. */
			w->poll = run;
			continue;
		}
		key = strncmp(e2.msg, "cpufreq", 7) == 0 ? "cpufreq" :
		      strncmp(e2.msg, "max_sleep", 9) == 0 ? "max_sleep_us" :
		      strstr(e2.msg, "idle_polls") != NULL ? "idle_polls" : "poll_policy";
		return config_error(e, w, key, e2.msg, err);
	}
	if (!check_only) {
		e->rapl = rte_zmalloc("ep_rapl", sizeof(*e->rapl), 0);
		if (e->rapl != NULL && ep_rapl_open(e->rapl, RAPL_ROOT) < 0) {
			rte_free(e->rapl);
			e->rapl = NULL;
		}
	}
	return 0;
}

void
ep_power_stop(struct ep_engine *e)
{
	for (int i = 0; i < e->n_workers; i++) {
		struct ep_worker *w = e->workers[i];
		struct ep_poll_cfg busy = { .policy = EP_POLL_BUSY, .min_sleep_us = 1,
					    .max_sleep_us = 1 };
		struct policy_plan pl = { .freq_fd = -1 };

		if (w->poll.policy == EP_POLL_DPDK_PMGMT || w->power->freq_fd >= 0) {
			pl.cfg = busy;
			apply_on_worker(w, &pl);
			plan_release(&pl);
		}
	}
	rte_free(e->rapl);
	e->rapl = NULL;
}

/* ------------------------------------------------------------------------ */
/* Commands.                                                                */

static int
select_workers(struct ep_engine *e, json_t *req, struct ep_worker **out, struct ep_err *err)
{
	json_t *v = json_object_get(req, "worker");
	int n = 0;

	if (v != NULL && !json_is_string(v))
		return ep_err_set(err, "field 'worker' must be a string");
	for (int i = 0; i < e->n_workers; i++)
		if (v == NULL || strcmp(e->workers[i]->name, json_string_value(v)) == 0)
			out[n++] = e->workers[i];
	if (n == 0)
		return ep_err_set(err, "no worker named '%s'", json_string_value(v));
	return n;
}

static const char *
mechanism(const struct ep_engine *e, const struct ep_worker *w)
{
	const struct ep_power *p = w->power;
	bool intel = e->power_caps.waitpkg;

	switch (w->poll.policy) {
	case EP_POLL_SLEEP:
		if (w->type->wait != NULL)
			return w->type->wait_covers_rx ?
			       "the pipeline's wait: its descriptors and the rx queues' sockets" :
			       "the pipeline's wait: its descriptors";
		return p->msg_fd >= 0 ? "timed ppoll on the message eventfd" : "nanosleep";
	case EP_POLL_SLEEP_RX:
		return "ppoll on the rx queues' sockets";
	case EP_POLL_CPU_WAIT:
		return p->rx_monitor ? (intel ? "UMWAIT on the rx descriptor" :
					"MWAITX on the rx descriptor") :
		       (intel ? "UMWAIT on the message ring" : "MWAITX on the message ring");
	case EP_POLL_DPDK_PMGMT:
		return w->poll.pmgmt_mode == EP_PMGMT_MONITOR ? "DPDK rte_power_monitor (UMWAIT)" :
		       w->poll.pmgmt_mode == EP_PMGMT_SCALE ? "DPDK rte_power_freq_min/max" :
		       e->power_caps.dpdk_tpause ? "DPDK rte_power_pause (TPAUSE)" :
						   "DPDK rte_pause() spin (no TPAUSE on this CPU)";
	default:
		return "none: polls on";
	}
}

static json_t *
latency_json(const struct ep_hist *h, uint64_t hz)
{
	uint64_t n = RD(h->count);

	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "samples", (json_int_t)n,
			 "p50_ns", (json_int_t)ep_cyc_to_ns(ep_hist_percentile(h, 500), hz),
			 "p99_ns", (json_int_t)ep_cyc_to_ns(ep_hist_percentile(h, 990), hz),
			 "mean_ns", (json_int_t)(n ? ep_cyc_to_ns(RD(h->sum) / n, hz) : 0),
			 "max_ns", (json_int_t)(n ? ep_cyc_to_ns(RD(h->max), hz) : 0));
}

static json_t *
poll_cfg_json(const struct ep_engine *e, const struct ep_worker *w)
{
	const struct ep_poll_cfg *c = &w->poll;
	const struct ep_power *p = w->power;

	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:s, s:b, s:s, s:{s:i, s:i, s:b, s:I, s:s}}",
			 "poll_policy", ep_poll_policy_name[c->policy],
			 "auto", c->auto_policy,
			 "idle_polls", (json_int_t)c->idle_polls,
			 "min_sleep_us", (json_int_t)c->min_sleep_us,
			 "max_sleep_us", (json_int_t)c->max_sleep_us,
			 "pmgmt_mode", ep_pmgmt_mode_name[c->pmgmt_mode],
			 "cpufreq", c->cpufreq, "mechanism", mechanism(e, w),
			 "sched", "rt_priority", c->rt_priority,
			 "fifo_priority", RD(p->rt_applied),
			 "demoted", RD(p->rt.demoted),
			 "demotions", (json_int_t)RD(p->rt_demotions),
			 "note", p->rt_note);
}

static json_t *
worker_power_json(const struct ep_engine *e, const struct ep_worker *w)
{
	const struct ep_power *p = w->power;
	uint64_t cpu_ns, wait_ns;
	json_t *o;

	ep_power_thread_cpu(p, &cpu_ns, &wait_ns);
	o = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I}",
		      "name", w->name, "pipeline", w->type->name, "poll", poll_cfg_json(e, w),
		      "busy_cycles", (json_int_t)RD(w->stats.busy_cycles),
		      "idle_cycles", (json_int_t)RD(w->stats.idle_cycles),
		      "sleep_cycles", (json_int_t)RD(w->stats.sleep_cycles),
		      "sleeps", (json_int_t)RD(w->stats.sleeps),
		      "wakeups_with_rx", (json_int_t)RD(p->wakeups_rx),
		      "policy_changes", (json_int_t)RD(p->policy_changes),
		      "cpu_ns", (json_int_t)cpu_ns, "runq_wait_ns", (json_int_t)wait_ns,
		      "wake_latency", latency_json(&p->wake_lat, e->tsc_hz),
		      "poll_latency", latency_json(&p->poll_lat, e->tsc_hz),
		      "stamps_missing", (json_int_t)RD(p->stamp_missing),
		      "stamps_invalid", (json_int_t)RD(p->stamp_invalid));
	if (w->poll.cpufreq)
		json_object_set_new(o, "cpufreq", json_pack("{s:i, s:I, s:I, s:b, s:I, s:I}",
			"cpu", p->freq_cpu, "low_khz", (json_int_t)p->freq_low_khz,
			"high_khz", (json_int_t)p->freq_high_khz, "low", RD(p->gov.low),
			"changes", (json_int_t)RD(p->freq_changes),
			"errors", (json_int_t)RD(p->freq_errors)));
	return o;
}

static json_t *
energy_json(struct ep_engine *e)
{
	json_t *zones;

	if (e->rapl == NULL)
		return json_pack("{s:s, s:s}", "source", "cpu_time", "note",
				 "no RAPL package zone in " RAPL_ROOT ": each worker's cpu_ns "
				 "(its thread's CPU time) is the power proxy");
	zones = json_array();
	for (int i = 0; i < e->rapl->n; i++)
		json_array_append_new(zones, json_string(e->rapl->zone[i].name));
	return json_pack("{s:s, s:I, s:o}", "source", "rapl",
			 "energy_uj", (json_int_t)ep_rapl_read_uj(e->rapl), "zones", zones);
}

static int
power_result(struct ep_engine *e, struct ep_worker **ws, int n, json_t *result)
{
	const struct ep_power_caps *c = &e->power_caps;
	json_t *list = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(list, worker_power_json(e, ws[i]));
	json_object_set_new(result, "tsc_hz", json_integer((json_int_t)e->tsc_hz));
	json_object_set_new(result, "now_ns", json_integer((json_int_t)ep_cyc_to_ns(
		rte_rdtsc() - e->start_tsc, e->tsc_hz)));
	json_object_set_new(result, "energy", energy_json(e));
	json_object_set_new(result, "cpu", json_pack("{s:s, s:b, s:b, s:b, s:b}",
		"model", c->cpu, "waitpkg", c->waitpkg, "monitorx", c->monitorx,
		"dpdk_monitor", c->dpdk_monitor, "dpdk_tpause", c->dpdk_tpause));
	json_object_set_new(result, "workers", list);
	return 0;
}

static int
cmd_power(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	struct ep_worker *ws[EP_MAX_WORKERS];
	const char *key;
	json_t *v;
	int n;

	json_object_foreach(req, key, v)
		if (strcmp(key, "cmd") != 0 && strcmp(key, "worker") != 0)
			return ep_err_set(err, "unexpected field '%s' (this command takes only worker)",
					  key);
	n = select_workers(e, req, ws, err);
	return n < 0 ? -1 : power_result(e, ws, n, result);
}

static int
cmd_poll_set(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	struct ep_worker *ws[EP_MAX_WORKERS];
	struct ep_poll_cfg want[EP_MAX_WORKERS], old[EP_MAX_WORKERS];
	int n = select_workers(e, req, ws, err), keys = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const char *key;
		json_t *v;

		want[i] = old[i] = ws[i]->power->want;
		json_object_foreach(req, key, v) {
			char val[64];

			if (strcmp(key, "cmd") == 0 || strcmp(key, "worker") == 0)
				continue;
			if (ep_ctl_value_text(key, v, val, sizeof(val), err) < 0 ||
			    ep_poll_cfg_set(&want[i], key, val, err) < 0)
				return -1;
			keys++;
		}
	}
	if (keys == 0)
		return ep_err_set(err, "nothing to set: give poll_policy, idle_polls, min_sleep_us, "
				  "max_sleep_us, pmgmt_mode, cpufreq or rt_priority");
	/* All workers or none: a refusal puts back the ones already changed. */
	for (int i = 0; i < n; i++) {
		struct ep_err e2 = { "" };

		if (set_policy(e, ws[i], &want[i], &e2) == 0)
			continue;
		for (int j = 0; j < i; j++)
			set_policy(e, ws[j], &old[j], &(struct ep_err){ "" });
		return ep_err_set(err, "worker %s: %s", ws[i]->name, e2.msg);
	}
	return power_result(e, ws, n, result);
}

static void
reset_on_worker(struct ep_worker *w, void *arg)
{
	struct ep_power *p = w->power;

	ep_hist_reset(&p->wake_lat);
	ep_hist_reset(&p->poll_lat);
	p->wakeups_rx = 0;
	p->stamp_missing = 0;
	p->stamp_invalid = 0;
}

static int
cmd_power_reset(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err)
{
	struct ep_worker *ws[EP_MAX_WORKERS];
	int n = select_workers(e, req, ws, err);

	for (int i = 0; i < n; i++)
		if (ep_worker_call(ws[i], reset_on_worker, NULL, POWER_CALL_MS, err) < 0)
			return -1;
	return n < 0 ? -1 : power_result(e, ws, n, result);
}

static struct ep_ctl_cmd c_power = { "power", "[worker=]",
	"per worker: polling policy, busy/idle/paused cycles, wake-ups, wake-up latency "
	"samples, CPU time; the host's energy counters or the CPU-time proxy", cmd_power, NULL };
static struct ep_ctl_cmd c_poll_set = { "poll-set",
	"[worker=] [poll_policy=auto|busy|sleep|sleep-rx|cpu-wait|dpdk-pmgmt] [idle_polls=] "
	"[min_sleep_us=] [max_sleep_us=] [pmgmt_mode=pause|monitor|scale] [cpufreq=on|off] "
	"[rt_priority=auto|0-99]",
	"change the polling policy of one worker (or all), applied between two bursts",
	cmd_poll_set, NULL };
static struct ep_ctl_cmd c_power_reset = { "power-reset", "[worker=]",
	"zero the wake-up latency samples and wake-up counts", cmd_power_reset, NULL };
EP_CTL_REGISTER(c_power)
EP_CTL_REGISTER(c_poll_set)
EP_CTL_REGISTER(c_power_reset)
