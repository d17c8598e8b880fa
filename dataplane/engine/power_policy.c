/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Polling policies: their names and keys, and the checks that refuse what a
 * CPU, a host or a port cannot do (ep_power.h).  Pure functions of their
 * arguments: the facts come from power_hw.c, so unit tests give their own.
 */
#include <stdio.h>
#include <string.h>

#include "ep_power.h"
#include "ep_text.h"

const char *const ep_poll_policy_name[EP_POLL__COUNT] = {
	[EP_POLL_BUSY] = "busy",
	[EP_POLL_SLEEP] = "sleep",
	[EP_POLL_SLEEP_RX] = "sleep-rx",
	[EP_POLL_CPU_WAIT] = "cpu-wait",
	[EP_POLL_DPDK_PMGMT] = "dpdk-pmgmt",
};

const char *const ep_pmgmt_mode_name[EP_PMGMT__COUNT] = {
	[EP_PMGMT_PAUSE] = "pause",
	[EP_PMGMT_MONITOR] = "monitor",
	[EP_PMGMT_SCALE] = "scale",
};

const char *const ep_poll_cfg_keys[] = {
	"poll_policy", "idle_polls", "min_sleep_us", "max_sleep_us", "pmgmt_mode", "cpufreq",
	"rt_priority", NULL,
};

void
ep_poll_cfg_default(struct ep_poll_cfg *c)
{
	*c = (struct ep_poll_cfg){
		.policy = EP_POLL_SLEEP,
		.auto_policy = true,
		.rt_priority = EP_RT_AUTO,
		.idle_polls = EP_POLL_IDLE_POLLS,
		.min_sleep_us = 1,
		.max_sleep_us = 100,
		.pmgmt_mode = EP_PMGMT_PAUSE,
		.cpufreq = false,
	};
}

static int
name_index(const char *const *names, int n, const char *val)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], val) == 0)
			return i;
	return -1;
}

static void
names_list(const char *const *names, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", names[i]);
}

int
ep_poll_cfg_set(struct ep_poll_cfg *c, const char *key, const char *val, struct ep_err *err)
{
	char names[128];
	uint64_t v;
	int i;

	if (strcmp(key, "poll_policy") == 0) {
		i = strcmp(val, "auto") == 0 ? EP_POLL_SLEEP :
		    name_index(ep_poll_policy_name, EP_POLL__COUNT, val);
		if (i < 0) {
			names_list(ep_poll_policy_name, EP_POLL__COUNT, names, sizeof(names));
			return ep_err_set(err, "'%s': expected one of %s, or auto", val, names);
		}
		c->policy = (enum ep_poll_policy)i;
		c->auto_policy = strcmp(val, "auto") == 0;
	} else if (strcmp(key, "rt_priority") == 0) {
		if (strcmp(val, "auto") == 0) {
			c->rt_priority = EP_RT_AUTO;
		} else {
			struct ep_err e2 = { "" };

			if (ep_parse_u64(val, 0, 99, &v, &e2) < 0)
				return ep_err_set(err, "'%s': expected auto, 0 (SCHED_OTHER) or a "
						  "SCHED_FIFO priority 1-99", val);
			c->rt_priority = (int)v;
		}
	} else if (strcmp(key, "pmgmt_mode") == 0) {
		i = name_index(ep_pmgmt_mode_name, EP_PMGMT__COUNT, val);
		if (i < 0) {
			names_list(ep_pmgmt_mode_name, EP_PMGMT__COUNT, names, sizeof(names));
			return ep_err_set(err, "'%s': expected one of %s", val, names);
		}
		c->pmgmt_mode = (enum ep_pmgmt_mode)i;
	} else if (strcmp(key, "cpufreq") == 0) {
		if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0)
			return ep_err_set(err, "'%s': expected on or off", val);
		c->cpufreq = strcmp(val, "on") == 0;
	} else if (strcmp(key, "idle_polls") == 0) {
		if (ep_parse_u64(val, 0, 1u << 30, &v, err) < 0)
			return -1;
		c->idle_polls = (uint32_t)v;
	} else if (strcmp(key, "min_sleep_us") == 0 || strcmp(key, "max_sleep_us") == 0) {
		if (ep_parse_u64(val, 1, EP_POLL_SLEEP_MAX_US, &v, err) < 0)
			return -1;
		if (key[1] == 'i')
			c->min_sleep_us = (uint32_t)v;
		else
			c->max_sleep_us = (uint32_t)v;
	} else {
		return ep_err_set(err, "unknown key '%s'", key);
	}
	for (i = 0; ep_poll_cfg_keys[i] != NULL; i++)
		if (strcmp(ep_poll_cfg_keys[i], key) == 0)
			c->given |= 1u << i;
	return 0;
}

static bool
key_given(const struct ep_poll_cfg *c, const char *key)
{
	for (int i = 0; ep_poll_cfg_keys[i] != NULL; i++)
		if (strcmp(ep_poll_cfg_keys[i], key) == 0)
			return (c->given & (1u << i)) != 0;
	return false;
}

/*
 * auto: sleep-rx where the kernel can wake the worker for every source of
 * work it has -- each rx queue a socket, and no generator, service hook or
 * wait hook of its pipeline (those need the timer of sleep) -- else sleep.
 * sleep-rx waits up to EP_AUTO_RX_WAIT_US (100 ms): whatever has work for
 * it wakes it, and the timer only wakes it for nothing (ep_power.h).
 * A pipeline whose wait hook waits on the rx sockets as well as on its own
 * descriptors (the host stack: its applications' kick eventfd) is as
 * event-driven as sleep-rx when every rx queue has a socket: it keeps
 * sleep, so that the hook does the waiting, at SCHED_FIFO 1, after
 * EP_EVENT_IDLE_POLLS empty polls, and waits max_sleep_us (1 ms) from the
 * first pause on: every source of work wakes it, the timer is
 * housekeeping, and a ladder from 1 us would wake it by timer a dozen
 * times per gap of a request/response exchange, each wake-up a preemption
 * of an application on a shared core (sockperf ping-pong over AF_XDP on
 * 2 shared vCPUs, p50 170 against 61 us).
 */
void
ep_poll_resolve(const struct ep_poll_cfg *want, const struct ep_poll_facts *f,
		struct ep_poll_cfg *out)
{
	bool fds = f->probed && f->n_rx > 0 && (!f->own_wakeups || f->wait_covers_rx);
	bool event = false;

	*out = *want;
	for (int i = 0; fds && i < f->n_rx; i++)
		fds = f->rx[i].has_fd;
	if (want->auto_policy) {
		out->policy = fds && !f->own_wakeups ? EP_POLL_SLEEP_RX : EP_POLL_SLEEP;
		if (fds && !key_given(want, "idle_polls"))
			out->idle_polls = EP_AUTO_IDLE_POLLS;
		event = fds && f->own_wakeups;
		if (fds && !key_given(want, "max_sleep_us")) {
			uint32_t bound = event ? EP_AUTO_MAX_SLEEP_US : EP_AUTO_RX_WAIT_US;

			out->max_sleep_us = out->min_sleep_us > bound ? out->min_sleep_us : bound;
		}
		if (event && !key_given(want, "idle_polls"))
			out->idle_polls = EP_EVENT_IDLE_POLLS;
		if (event && !key_given(want, "min_sleep_us"))
			out->min_sleep_us = out->max_sleep_us;
	}
	if (want->rt_priority == EP_RT_AUTO)
		out->rt_priority = out->policy == EP_POLL_SLEEP_RX || event ? 1 : 0;
}

/* pmgmt_mode: what DPDK 22.11 needs for each mode, checked before DPDK is
 * asked, so the refusal says why instead of DPDK's -ENOTSUP. */
static int
check_pmgmt(const struct ep_poll_cfg *c, const struct ep_power_caps *caps,
	    const struct ep_poll_facts *f, struct ep_err *err)
{
	if (f->pmgmt_idle_polls != 0 &&
	    (f->pmgmt_idle_polls != c->idle_polls || f->pmgmt_pause_us != c->min_sleep_us))
		return ep_err_set(err, "dpdk-pmgmt: DPDK keeps emptypoll_max and pause_duration "
				  "process-wide, and another worker uses idle_polls = %u, "
				  "min_sleep_us = %u", f->pmgmt_idle_polls, f->pmgmt_pause_us);
	if (f->probed && f->n_rx == 0)
		return ep_err_set(err, "dpdk-pmgmt: worker %s polls no rx queue (its pipeline "
				  "generates packets): DPDK's callbacks sit on rx queues", f->worker);
	switch (c->pmgmt_mode) {
	case EP_PMGMT_PAUSE:
		return 0;
	case EP_PMGMT_MONITOR:
		if (!caps->dpdk_monitor)
			return ep_err_set(err, "dpdk-pmgmt monitor: this CPU (%s) has no UMONITOR/"
					  "UMWAIT (Intel WAITPKG), which DPDK's rte_power_monitor "
					  "needs", caps->cpu);
		if (f->n_rx > 1 && !caps->dpdk_monitor_multi)
			return ep_err_set(err, "dpdk-pmgmt monitor: worker %s polls %d rx queues; "
					  "DPDK monitors several only with WAITPKG and RTM", f->worker,
					  f->n_rx);
		for (int i = 0; f->probed && i < f->n_rx; i++)
			if (!f->rx[i].has_monitor)
				return ep_err_set(err, "dpdk-pmgmt monitor: port %s (%s) gives no rx "
						  "descriptor address to monitor", f->rx[i].port,
						  f->rx[i].driver);
		return 0;
	case EP_PMGMT_SCALE:
		if (c->cpufreq)
			return ep_err_set(err, "dpdk-pmgmt scale scales the frequency itself: "
					  "cpufreq = on would fight it");
		if (f->cpufreq_why[0] != '\0')
			return ep_err_set(err, "dpdk-pmgmt scale: %s", f->cpufreq_why);
		return 0;
	default:
		return ep_err_set(err, "dpdk-pmgmt: unknown mode %d", (int)c->pmgmt_mode);
	}
}

int
ep_poll_check(const struct ep_poll_cfg *c, const struct ep_power_caps *caps,
	      const struct ep_poll_facts *f, struct ep_err *err)
{
	const char *name = (unsigned int)c->policy < EP_POLL__COUNT ?
			   ep_poll_policy_name[c->policy] : "?";

	if (c->max_sleep_us < c->min_sleep_us)
		return ep_err_set(err, "max_sleep_us (%u) is below min_sleep_us (%u)",
				  c->max_sleep_us, c->min_sleep_us);
	if (c->policy != EP_POLL_BUSY && c->idle_polls == 0)
		return ep_err_set(err, "%s: idle_polls = 0 would pause before a single poll: "
				  "pause after idle_polls >= 1 empty polls, or use busy", name);
	if (c->cpufreq && f->cpufreq_why[0] != '\0')
		return ep_err_set(err, "cpufreq = on: %s", f->cpufreq_why);
	if (c->rt_priority > 0 && c->policy != EP_POLL_SLEEP && c->policy != EP_POLL_SLEEP_RX)
		return ep_err_set(err, "rt_priority = %d: %s never releases its CPU, and at a "
				  "real-time priority it would hold it against every other thread: "
				  "use sleep or sleep-rx, or rt_priority = 0", c->rt_priority, name);
	switch (c->policy) {
	case EP_POLL_BUSY:
	case EP_POLL_SLEEP:
		return 0;
	case EP_POLL_SLEEP_RX:
		if (f->probed && f->n_rx == 0)
			return ep_err_set(err, "sleep-rx: worker %s polls no rx queue (its pipeline "
					  "generates packets): nothing to wait on", f->worker);
		for (int i = 0; f->probed && i < f->n_rx; i++)
			if (!f->rx[i].has_fd)
				return ep_err_set(err, "sleep-rx: port %s (%s) has no file descriptor "
						  "to wait on: sleep-rx needs net_af_packet or net_af_xdp ports",
						  f->rx[i].port, f->rx[i].driver);
		return 0;
	case EP_POLL_CPU_WAIT:
		if (!caps->waitpkg && !caps->monitorx)
			return ep_err_set(err, "cpu-wait: this CPU (%s) has neither UMONITOR/UMWAIT "
					  "(Intel WAITPKG, CPUID.7.0:ECX[5]) nor MONITORX/MWAITX "
					  "(AMD, CPUID.80000001h:ECX[29]) enabled", caps->cpu);
		return 0;
	case EP_POLL_DPDK_PMGMT:
		return check_pmgmt(c, caps, f, err);
	default:
		return ep_err_set(err, "unknown policy %d", (int)c->policy);
	}
}
