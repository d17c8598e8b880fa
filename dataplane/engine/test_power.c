/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The polling policies' pure core, driven with a fake clock: thresholds,
 * the pause ladder and its bounds, the frequency governor's windows, the
 * refusal of what a CPU, a host or a port cannot do; the tester's stamp as
 * a worker reads it; RAPL zones from a fake powercap tree.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_stamp.h"
#include "ep_test.h"
#include "engine_internal.h"
#include "power_internal.h"
#include "test_pkt.h"

static struct ep_poll_cfg
cfg(enum ep_poll_policy p, uint32_t idle, uint32_t min, uint32_t max)
{
	struct ep_poll_cfg c;

	ep_poll_cfg_default(&c);
	c.policy = p;
	c.idle_polls = idle;
	c.min_sleep_us = min;
	c.max_sleep_us = max;
	return c;
}

/* ------------------------------------------------------------------------ */
/* The state machine.                                                        */

EP_TEST(busy_never_pauses)
{
	struct ep_poll_cfg c = cfg(EP_POLL_BUSY, 1, 1, 100);
	struct ep_poll_state s;
	uint32_t us = 0;
	int pauses = 0;

	ep_poll_state_reset(&c, &s);
	for (int i = 0; i < 100000; i++)
		pauses += ep_poll_empty(&c, &s, &us) != EP_ACT_POLL;
	EP_CHECK_EQ(pauses, 0);
}

EP_TEST(dpdk_pmgmt_never_pauses_in_the_engine_loop)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 1, 1, 100);
	struct ep_poll_state s;
	uint32_t us = 0;
	int pauses = 0;

	ep_poll_state_reset(&c, &s);
	for (int i = 0; i < 10000; i++)
		pauses += ep_poll_empty(&c, &s, &us) != EP_ACT_POLL;
	EP_CHECK_EQ(pauses, 0);
}

EP_TEST(sleep_pauses_only_after_idle_polls_empty_polls)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 5, 2, 100);
	struct ep_poll_state s;
	uint32_t us = 0;

	ep_poll_state_reset(&c, &s);
	for (int i = 1; i < 5; i++)
		EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_POLL);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_SLEEP);
	EP_CHECK_EQ(us, 2);
	/* Past the threshold every empty poll pauses. */
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_SLEEP);
}

EP_TEST(sleep_pause_doubles_from_min_and_stops_at_max)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 1, 3, 20);
	static const uint32_t want[] = { 3, 6, 12, 20, 20, 20 };
	struct ep_poll_state s;
	uint32_t us = 0;

	ep_poll_state_reset(&c, &s);
	for (size_t i = 0; i < RTE_DIM(want); i++) {
		EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_SLEEP);
		EP_CHECK_EQ(us, want[i]);
	}
}

EP_TEST(ladder_never_exceeds_the_largest_max)
{
	struct ep_poll_cfg c = cfg(EP_POLL_CPU_WAIT, 1, 1, EP_POLL_SLEEP_MAX_US);
	struct ep_poll_state s;
	uint32_t us = 0, top = 0;

	ep_poll_state_reset(&c, &s);
	for (int i = 0; i < 64; i++) {
		EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_CPU_WAIT);
		top = RTE_MAX(top, us);
		EP_CHECK(us <= EP_POLL_SLEEP_MAX_US);
	}
	EP_CHECK_EQ(top, EP_POLL_SLEEP_MAX_US);
}

EP_TEST(a_busy_poll_restarts_threshold_and_ladder)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 3, 4, 64);
	struct ep_poll_state s;
	uint32_t us = 0;

	ep_poll_state_reset(&c, &s);
	for (int i = 0; i < 10; i++)
		ep_poll_empty(&c, &s, &us);
	EP_CHECK_EQ(us, 64);
	ep_poll_found(&c, &s);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_POLL);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_POLL);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_SLEEP);
	EP_CHECK_EQ(us, 4);
}

EP_TEST(sleep_rx_waits_its_whole_bound_at_once)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP_RX, 2, 1, 500);
	struct ep_poll_state s;
	uint32_t us = 0;

	ep_poll_state_reset(&c, &s);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_POLL);
	EP_CHECK_EQ(ep_poll_empty(&c, &s, &us), EP_ACT_WAIT_RX);
	EP_CHECK_EQ(us, 500);
}

/*
 * A worker loop on a fake clock: an empty poll costs 200 ns, a pause its
 * length plus a fixed 15 us wake-up (what nanosleep costs on the project's
 * VM), a busy poll 1 us.  Frames arrive every @p gap_ns.  Returns the
 * longest wait of a frame (arrival to the poll that takes it) and the share
 * of the time spent paused, in permille.
 */
static void
simulate(const struct ep_poll_cfg *c, uint64_t gap_ns, uint64_t *worst_ns, uint64_t *paused_pm)
{
	const uint64_t empty_ns = 200, busy_ns = 1000, wake_ns = 15000, end = 200000000;
	struct ep_poll_state s;
	uint64_t now = 0, next = gap_ns, paused = 0;

	*worst_ns = 0;
	ep_poll_state_reset(c, &s);
	while (now < end) {
		uint32_t us = 0;
		enum ep_poll_act a;

		if (now >= next) {
			*worst_ns = RTE_MAX(*worst_ns, now - next);
			next += gap_ns;
			ep_poll_found(c, &s);
			now += busy_ns;
			continue;
		}
		now += empty_ns;
		a = ep_poll_empty(c, &s, &us);
		if (a == EP_ACT_POLL)
			continue;
		if (a == EP_ACT_WAIT_RX && next < now + us * 1000ull) {
			/* The frame's arrival ends the wait. */
			paused += next + wake_ns - now;
			now = next + wake_ns;
		} else {
			paused += us * 1000ull + wake_ns;
			now += us * 1000ull + wake_ns;
		}
	}
	*paused_pm = paused * 1000 / now;
}

EP_TEST(fake_clock_added_wait_is_bounded_by_max_pause_and_wake_up)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 10, 1, 50);
	uint64_t worst, paused;

	for (uint64_t gap = 3000; gap < 2000000; gap = gap * 3 + 777) {
		simulate(&c, gap, &worst, &paused);
		EP_CHECK(worst <= 50000 + 15000 + 200);
	}
}

EP_TEST(fake_clock_sleep_rx_adds_only_the_wake_up)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP_RX, 10, 1, 1000);
	uint64_t worst, paused;

	for (uint64_t gap = 3000; gap < 2000000; gap = gap * 3 + 777) {
		simulate(&c, gap, &worst, &paused);
		EP_CHECK(worst <= 15000 + 200);
	}
}

EP_TEST(fake_clock_low_load_is_mostly_paused_high_load_never)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 10, 1, 100);
	uint64_t worst, paused;

	simulate(&c, 100000, &worst, &paused);     /* 10 kpps */
	EP_CHECK(paused > 900);
	simulate(&c, 1500, &worst, &paused);       /* faster than 10 empty polls */
	EP_CHECK_EQ(paused, 0);
}

/* ------------------------------------------------------------------------ */
/* The frequency governor: 1 GHz fake TSC, 10 ms windows = 1e7 cycles.       */

EP_TEST(freq_lowers_after_three_quiet_windows_only)
{
	struct ep_freq_gov g;
	uint64_t w = 10000000;

	ep_freq_gov_init(&g, 1000000000, 0);
	EP_CHECK_EQ(g.window, w);
	EP_CHECK_EQ(ep_freq_account(&g, w, 0), EP_FREQ_KEEP);
	EP_CHECK_EQ(ep_freq_account(&g, 2 * w, w / 20), EP_FREQ_KEEP);  /* 5 %: quiet */
	EP_CHECK_EQ(ep_freq_account(&g, 3 * w - 1, 0), EP_FREQ_KEEP);   /* not a window yet */
	EP_CHECK_EQ(ep_freq_account(&g, 3 * w, 0), EP_FREQ_LOW);
	EP_CHECK(g.low);
	EP_CHECK_EQ(ep_freq_account(&g, 4 * w, 0), EP_FREQ_KEEP);       /* already low */
}

EP_TEST(freq_busy_window_restarts_the_quiet_count)
{
	struct ep_freq_gov g;
	uint64_t w = 10000000;

	ep_freq_gov_init(&g, 1000000000, 0);
	ep_freq_account(&g, w, 0);
	ep_freq_account(&g, 2 * w, 0);
	EP_CHECK_EQ(ep_freq_account(&g, 3 * w, w / 5), EP_FREQ_KEEP);   /* 20 %: not quiet */
	EP_CHECK_EQ(ep_freq_account(&g, 4 * w, 0), EP_FREQ_KEEP);
	EP_CHECK_EQ(ep_freq_account(&g, 5 * w, 0), EP_FREQ_KEEP);
	EP_CHECK_EQ(ep_freq_account(&g, 6 * w, 0), EP_FREQ_LOW);
}

EP_TEST(freq_raises_within_the_window_once_half_busy)
{
	struct ep_freq_gov g;
	uint64_t w = 10000000;

	ep_freq_gov_init(&g, 1000000000, 0);
	for (int i = 1; i <= 3; i++)
		ep_freq_account(&g, (uint64_t)i * w, 0);
	EP_CHECK(g.low);
	EP_CHECK_EQ(ep_freq_account(&g, 3 * w + 100, w / 4), EP_FREQ_KEEP);
	EP_CHECK_EQ(ep_freq_account(&g, 3 * w + 200, w / 4), EP_FREQ_HIGH);  /* mid-window */
	EP_CHECK(!g.low);
}

/* ------------------------------------------------------------------------ */
/* Refusal by name.                                                          */

static struct ep_poll_facts
facts(int n_rx, const char *driver, bool fd, bool monitor)
{
	struct ep_poll_facts f;

	memset(&f, 0, sizeof(f));
	f.worker = "w0";
	f.probed = true;
	f.n_rx = n_rx;
	for (int i = 0; i < n_rx; i++) {
		snprintf(f.rx[i].port, sizeof(f.rx[i].port), "p%d", i);
		snprintf(f.rx[i].driver, sizeof(f.rx[i].driver), "%s", driver);
		f.rx[i].has_fd = fd;
		f.rx[i].has_monitor = monitor;
	}
	return f;
}

static const struct ep_power_caps no_caps = { .cpu = "AMD EPYC" };


static int
refused(const struct ep_poll_cfg *c, const struct ep_power_caps *caps,
	const struct ep_poll_facts *f, const char *needle)
{
	struct ep_err err = { "" };

	if (ep_poll_check(c, caps, f, &err) == 0)
		return 0;
	if (strstr(err.msg, needle) == NULL) {
		printf("    message '%s' lacks '%s'\n", err.msg, needle);
		return 0;
	}
	return 1;
}

static int
accepted(const struct ep_poll_cfg *c, const struct ep_power_caps *caps,
	 const struct ep_poll_facts *f)
{
	struct ep_err err = { "" };

	if (ep_poll_check(c, caps, f, &err) == 0)
		return 1;
	printf("    refused: %s\n", err.msg);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* auto and rt_priority, resolved against a worker's facts.                  */

EP_TEST(auto_is_the_default_and_waits_on_af_packet_sockets)
{
	struct ep_poll_cfg want, run;
	struct ep_poll_facts f = facts(2, "net_af_packet", true, false);

	ep_poll_cfg_default(&want);
	EP_CHECK(want.auto_policy);
	ep_poll_resolve(&want, &f, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP_RX);
	EP_CHECK_EQ(run.idle_polls, EP_AUTO_IDLE_POLLS);
	EP_CHECK_EQ(run.max_sleep_us, EP_AUTO_RX_WAIT_US);
	EP_CHECK_EQ(run.rt_priority, 1);
}

/* The router's ports with its XDP fast path: net_af_xdp sockets that see
 * only what the program punts.  auto blocks on them for the long bound
 * (the timer only wakes the worker for nothing); a bound the
 * configuration gives is kept. */
EP_TEST(auto_sleep_rx_on_af_xdp_sockets_waits_the_long_bound_unless_one_is_given)
{
	struct ep_poll_cfg want, run;
	struct ep_err err = { "" };
	struct ep_poll_facts f = facts(2, "net_af_xdp", true, false);

	ep_poll_cfg_default(&want);
	ep_poll_resolve(&want, &f, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP_RX);
	EP_CHECK_EQ(run.max_sleep_us, EP_AUTO_RX_WAIT_US);
	EP_CHECK(EP_AUTO_RX_WAIT_US > EP_AUTO_MAX_SLEEP_US);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "max_sleep_us", "1000", &err), 0);
	ep_poll_resolve(&want, &f, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP_RX);
	EP_CHECK_EQ(run.max_sleep_us, 1000);
}

EP_TEST(auto_sleeps_where_no_socket_can_wake_the_worker)
{
	struct ep_poll_cfg want, run;
	struct ep_poll_facts ring = facts(1, "net_ring", false, true);
	struct ep_poll_facts mixed = facts(2, "net_af_packet", true, false);
	struct ep_poll_facts hooks = facts(1, "net_af_packet", true, false);
	struct ep_poll_facts unprobed = facts(1, "net_af_packet", true, false);
	struct ep_poll_facts source = facts(0, "net_af_packet", false, false);

	ep_poll_cfg_default(&want);
	mixed.rx[1].has_fd = false;
	hooks.own_wakeups = true;
	unprobed.probed = false;
	const struct ep_poll_facts *all[] = { &ring, &mixed, &hooks, &unprobed, &source };

	for (size_t i = 0; i < RTE_DIM(all); i++) {
		ep_poll_resolve(&want, all[i], &run);
		EP_CHECK_EQ(run.policy, EP_POLL_SLEEP);
		EP_CHECK_EQ(run.idle_polls, EP_POLL_IDLE_POLLS);
		EP_CHECK_EQ(run.max_sleep_us, 100);
		EP_CHECK_EQ(run.rt_priority, 0);
	}
}

EP_TEST(auto_makes_a_wait_hook_on_the_rx_sockets_event_driven)
{
	struct ep_poll_cfg want, run;
	struct ep_poll_facts xsk = facts(1, "net_af_xdp", true, false);
	struct ep_poll_facts memif = facts(1, "net_memif", false, false);

	ep_poll_cfg_default(&want);
	xsk.own_wakeups = xsk.wait_covers_rx = true;
	memif.own_wakeups = memif.wait_covers_rx = true;
	/* The hook waits (sleep), the whole pause from the first one on. */
	ep_poll_resolve(&want, &xsk, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP);
	EP_CHECK_EQ(run.idle_polls, EP_EVENT_IDLE_POLLS);
	EP_CHECK_EQ(run.min_sleep_us, EP_AUTO_MAX_SLEEP_US);
	EP_CHECK_EQ(run.max_sleep_us, EP_AUTO_MAX_SLEEP_US);
	EP_CHECK_EQ(run.rt_priority, 1);
	/* A queue without a socket cannot wake it: the timer's defaults. */
	ep_poll_resolve(&want, &memif, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP);
	EP_CHECK_EQ(run.idle_polls, EP_POLL_IDLE_POLLS);
	EP_CHECK_EQ(run.min_sleep_us, 1);
	EP_CHECK_EQ(run.max_sleep_us, 100);
	EP_CHECK_EQ(run.rt_priority, 0);
}

EP_TEST(auto_keeps_the_keys_given)
{
	struct ep_poll_cfg want, run;
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);
	struct ep_err err = { "" };

	ep_poll_cfg_default(&want);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "idle_polls", "50", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "max_sleep_us", "300", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "rt_priority", "0", &err), 0);
	ep_poll_resolve(&want, &f, &run);
	EP_CHECK_EQ(run.policy, EP_POLL_SLEEP_RX);
	EP_CHECK_EQ(run.idle_polls, 50);
	EP_CHECK_EQ(run.max_sleep_us, 300);
	EP_CHECK_EQ(run.rt_priority, 0);
	/* A named policy is not auto any more; rt auto follows it. */
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "poll_policy", "busy", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "rt_priority", "auto", &err), 0);
	ep_poll_resolve(&want, &f, &run);
	EP_CHECK(!run.auto_policy);
	EP_CHECK_EQ(run.policy, EP_POLL_BUSY);
	EP_CHECK_EQ(run.rt_priority, 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&want, "poll_policy", "auto", &err), 0);
	EP_CHECK(want.auto_policy);
}

EP_TEST(rt_priority_refused_with_a_policy_that_keeps_the_cpu)
{
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);
	struct ep_power_caps all = { .waitpkg = true, .monitorx = true, .cpu = "x" };
	enum ep_poll_policy keep[] = { EP_POLL_BUSY, EP_POLL_CPU_WAIT, EP_POLL_DPDK_PMGMT };
	enum ep_poll_policy release[] = { EP_POLL_SLEEP, EP_POLL_SLEEP_RX };

	for (size_t i = 0; i < RTE_DIM(keep); i++) {
		struct ep_poll_cfg c = cfg(keep[i], 10, 1, 100);

		c.rt_priority = 5;
		EP_CHECK(refused(&c, &all, &f, "never releases its CPU"));
		c.rt_priority = 0;
		EP_CHECK(accepted(&c, &all, &f));
	}
	for (size_t i = 0; i < RTE_DIM(release); i++) {
		struct ep_poll_cfg c = cfg(release[i], 10, 1, 100);

		c.rt_priority = 5;
		EP_CHECK(accepted(&c, &all, &f));
	}
}

/* The guard judges each 10 ms window by the thread's CPU time: demoted
 * after a window 90 % on the CPU, promoted after one under 50 %; a worker
 * whose turns took long because it was preempted is not demoted. */
EP_TEST(rt_guard_demotes_a_saturated_worker_and_promotes_it_after)
{
	struct ep_rt_guard g;
	const uint64_t hz = 2000000000, ms = hz / 1000, ms_ns = 1000000;
	uint64_t t = 0, cpu = 0;
	int demote = 0, promote = 0;

	ep_rt_guard_init(&g, hz, t, cpu);
	EP_CHECK(!ep_rt_due(&g, t + 9 * ms));
	EP_CHECK(ep_rt_due(&g, t + 10 * ms));
	/* 20 % on the CPU, and preempted the rest: never demoted. */
	for (int i = 0; i < 5; i++) {
		t += 10 * ms;
		cpu += 2 * ms_ns;
		demote += ep_rt_judge(&g, t, cpu) == EP_RT_DEMOTE;
	}
	EP_CHECK_EQ(demote, 0);
	/* A whole window on the CPU: demoted at its end. */
	t += 10 * ms;
	cpu += 10 * ms_ns;
	EP_CHECK_EQ(ep_rt_judge(&g, t, cpu), EP_RT_DEMOTE);
	EP_CHECK(g.demoted);
	/* Still saturated: stays demoted, no flapping. */
	for (int i = 0; i < 5; i++) {
		t += 10 * ms;
		cpu += 9 * ms_ns;
		promote += ep_rt_judge(&g, t, cpu) == EP_RT_PROMOTE;
	}
	EP_CHECK_EQ(promote, 0);
	/* Load falls to 30 %: promoted at the end of that window. */
	t += 10 * ms;
	cpu += 3 * ms_ns;
	EP_CHECK_EQ(ep_rt_judge(&g, t, cpu), EP_RT_PROMOTE);
	EP_CHECK(!g.demoted);
	/* A clock that went backwards counts as idle, not as a wrap. */
	t += 10 * ms;
	EP_CHECK_EQ(ep_rt_judge(&g, t, cpu - 1), EP_RT_KEEP);
}

EP_TEST(cpu_wait_refused_without_waitpkg_or_monitorx)
{
	struct ep_poll_cfg c = cfg(EP_POLL_CPU_WAIT, 10, 1, 100);
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);
	struct ep_power_caps intel = { .waitpkg = true }, amd = { .monitorx = true };

	EP_CHECK(refused(&c, &no_caps, &f, "UMWAIT"));
	EP_CHECK(refused(&c, &no_caps, &f, "MWAITX"));
	EP_CHECK(refused(&c, &no_caps, &f, "AMD EPYC"));
	EP_CHECK(accepted(&c, &intel, &f));
	EP_CHECK(accepted(&c, &amd, &f));
}

EP_TEST(sleep_rx_refused_on_a_port_without_a_descriptor)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP_RX, 10, 1, 100);
	struct ep_poll_facts ring = facts(2, "net_ring", false, true);
	struct ep_poll_facts afp = facts(2, "net_af_packet", true, false);

	EP_CHECK(refused(&c, &no_caps, &ring, "port p0 (net_ring) has no file descriptor"));
	EP_CHECK(accepted(&c, &no_caps, &afp));
}

EP_TEST(sleep_rx_refused_for_a_generating_worker)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP_RX, 10, 1, 100);
	struct ep_poll_facts src = facts(0, "", false, false);

	EP_CHECK(refused(&c, &no_caps, &src, "polls no rx queue"));
}

EP_TEST(unprobed_ports_are_not_judged_at_check_time)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP_RX, 10, 1, 100);
	struct ep_poll_facts f = facts(1, "net_ring", false, false);

	f.probed = false;
	EP_CHECK(accepted(&c, &no_caps, &f));
}

EP_TEST(pmgmt_pause_accepted_on_any_cpu_and_port)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 512, 1, 100);
	struct ep_poll_facts f = facts(3, "net_af_packet", true, false);

	EP_CHECK(accepted(&c, &no_caps, &f));
}

EP_TEST(pmgmt_monitor_refused_without_waitpkg)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 512, 1, 100);
	struct ep_poll_facts f = facts(1, "net_ring", false, true);

	c.pmgmt_mode = EP_PMGMT_MONITOR;
	EP_CHECK(refused(&c, &no_caps, &f, "no UMONITOR/UMWAIT"));
}

EP_TEST(pmgmt_monitor_refused_on_a_port_without_a_monitor_address)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 512, 1, 100);
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);
	struct ep_power_caps intel = { .waitpkg = true, .dpdk_monitor = true };

	c.pmgmt_mode = EP_PMGMT_MONITOR;
	EP_CHECK(refused(&c, &intel, &f, "port p0 (net_af_packet) gives no rx descriptor"));
	f = facts(1, "net_ring", false, true);
	EP_CHECK(accepted(&c, &intel, &f));
}

EP_TEST(pmgmt_monitor_of_several_queues_needs_rtm)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 512, 1, 100);
	struct ep_poll_facts f = facts(2, "net_ring", false, true);
	struct ep_power_caps intel = { .waitpkg = true, .dpdk_monitor = true };

	c.pmgmt_mode = EP_PMGMT_MONITOR;
	EP_CHECK(refused(&c, &intel, &f, "several only with WAITPKG and RTM"));
	intel.dpdk_monitor_multi = true;
	EP_CHECK(accepted(&c, &intel, &f));
}

EP_TEST(frequency_scaling_refused_with_the_hosts_reason)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 10, 1, 100);
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);

	snprintf(f.cpufreq_why, sizeof(f.cpufreq_why), "this host has no cpufreq driver");
	c.cpufreq = true;
	EP_CHECK(refused(&c, &no_caps, &f, "cpufreq = on: this host has no cpufreq driver"));
	c.cpufreq = false;
	c.policy = EP_POLL_DPDK_PMGMT;
	c.pmgmt_mode = EP_PMGMT_SCALE;
	EP_CHECK(refused(&c, &no_caps, &f, "dpdk-pmgmt scale: this host has no cpufreq"));
	f.cpufreq_why[0] = '\0';
	EP_CHECK(accepted(&c, &no_caps, &f));
	c.cpufreq = true;
	EP_CHECK(refused(&c, &no_caps, &f, "would fight it"));
}

EP_TEST(pmgmt_process_wide_values_must_agree)
{
	struct ep_poll_cfg c = cfg(EP_POLL_DPDK_PMGMT, 512, 1, 100);
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);

	f.pmgmt_idle_polls = 512;
	f.pmgmt_pause_us = 1;
	EP_CHECK(accepted(&c, &no_caps, &f));
	f.pmgmt_idle_polls = 16;
	EP_CHECK(refused(&c, &no_caps, &f, "process-wide"));
}

EP_TEST(idle_polls_zero_refused_for_pausing_policies)
{
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);

	for (int p = EP_POLL_SLEEP; p < EP_POLL__COUNT; p++) {
		struct ep_poll_cfg c = cfg((enum ep_poll_policy)p, 0, 1, 100);
		struct ep_power_caps all = { .waitpkg = true, .monitorx = true };

		EP_CHECK(refused(&c, &all, &f, "idle_polls = 0"));
	}
	{
		struct ep_poll_cfg c = cfg(EP_POLL_BUSY, 0, 1, 100);

		EP_CHECK(accepted(&c, &no_caps, &f));
	}
}

EP_TEST(max_below_min_refused)
{
	struct ep_poll_cfg c = cfg(EP_POLL_SLEEP, 10, 50, 10);
	struct ep_poll_facts f = facts(1, "net_af_packet", true, false);

	EP_CHECK(refused(&c, &no_caps, &f, "max_sleep_us (10) is below min_sleep_us (50)"));
}

/* ------------------------------------------------------------------------ */
/* Keys, as the file and the socket give them.                               */

EP_TEST(cfg_set_takes_every_key)
{
	struct ep_poll_cfg c;
	struct ep_err err = { "" };

	ep_poll_cfg_default(&c);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "poll_policy", "sleep-rx", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "idle_polls", "16", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "min_sleep_us", "2", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "max_sleep_us", "400", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "pmgmt_mode", "monitor", &err), 0);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "cpufreq", "on", &err), 0);
	EP_CHECK_EQ(c.policy, EP_POLL_SLEEP_RX);
	EP_CHECK_EQ(c.idle_polls, 16);
	EP_CHECK_EQ(c.min_sleep_us, 2);
	EP_CHECK_EQ(c.max_sleep_us, 400);
	EP_CHECK_EQ(c.pmgmt_mode, EP_PMGMT_MONITOR);
	EP_CHECK(c.cpufreq);
	for (int i = 0; ep_poll_cfg_keys[i] != NULL; i++)
		EP_CHECK(strstr("poll_policy idle_polls min_sleep_us max_sleep_us pmgmt_mode cpufreq "
				"rt_priority", ep_poll_cfg_keys[i]) != NULL);
}

EP_TEST(cfg_set_refuses_bad_values_and_leaves_the_config)
{
	struct ep_poll_cfg c, before;
	struct ep_err err = { "" };

	ep_poll_cfg_default(&c);
	before = c;
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "poll_policy", "turbo", &err), -1);
	EP_CHECK(strstr(err.msg, "busy, sleep, sleep-rx, cpu-wait, dpdk-pmgmt") != NULL);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "idle_polls", "1073741825", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "idle_polls", "-1", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "min_sleep_us", "0", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "max_sleep_us", "100001", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "pmgmt_mode", "umwait", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "cpufreq", "yes", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "rt_priority", "100", &err), -1);
	EP_CHECK(strstr(err.msg, "1-99") != NULL);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "rt_priority", "high", &err), -1);
	EP_CHECK_EQ(ep_poll_cfg_set(&c, "policy", "busy", &err), -1);
	EP_CHECK(strstr(err.msg, "unknown key 'policy'") != NULL);
	EP_CHECK_MEM(&c, &before, sizeof(c));
}

/* ------------------------------------------------------------------------ */
/* The tester's stamp, as a worker samples it.                               */

static uint16_t
stamped_frame(uint8_t *b, int v6, int n_vlans, uint64_t tsc)
{
	struct tp_spec s = tp_default(v6, IPPROTO_UDP);
	uint32_t magic = rte_cpu_to_le_32(EP_STAMP_MAGIC);
	uint64_t t = rte_cpu_to_le_64(tsc);
	uint16_t len, off;

	s.n_vlans = n_vlans;
	len = tp_build(b, &s);
	off = (uint16_t)(len - EP_STAMP_LEN);
	memcpy(b + off, &magic, 4);
	memcpy(b + off + EP_STAMP_TSC_OFF, &t, 6);
	return len;
}

EP_TEST(stamp_read_from_ipv4_ipv6_and_tagged_frames)
{
	uint8_t b[2048];

	for (int v6 = 0; v6 <= 1; v6++)
		for (int tags = 0; tags <= 2; tags++) {
			struct rte_mbuf *m = ep_test_mbuf(b, stamped_frame(b, v6, tags, 0x123456789abcull));
			uint64_t tsc = 0;

			EP_CHECK_EQ(ep_stamp_tsc(m, &tsc), 1);
			EP_CHECK_EQ(tsc, 0x123456789abcull);
			rte_pktmbuf_free(m);
		}
}

EP_TEST(stamp_absent_from_foreign_truncated_and_fragment_frames)
{
	uint8_t b[2048];
	uint16_t len = stamped_frame(b, 0, 0, 42);
	struct tp_spec tcp = tp_default(0, IPPROTO_TCP);
	struct rte_mbuf *m;
	uint64_t tsc;

	m = ep_test_mbuf(b, (uint16_t)(len - 1));           /* one byte short */
	EP_CHECK_EQ(ep_stamp_tsc(m, &tsc), 0);
	rte_pktmbuf_free(m);
	b[len - EP_STAMP_LEN] ^= 1;                         /* wrong magic */
	m = ep_test_mbuf(b, len);
	EP_CHECK_EQ(ep_stamp_tsc(m, &tsc), 0);
	rte_pktmbuf_free(m);
	m = ep_test_mbuf(b, tp_build(b, &tcp));
	EP_CHECK_EQ(ep_stamp_tsc(m, &tsc), 0);
	rte_pktmbuf_free(m);
	len = stamped_frame(b, 0, 0, 42);                   /* a later fragment */
	b[14 + 6] = 0;
	b[14 + 7] = 185;
	tp_fix_ipv4_cksum(b, 14);
	m = ep_test_mbuf(b, len);
	EP_CHECK_EQ(ep_stamp_tsc(m, &tsc), 0);
	rte_pktmbuf_free(m);
}

EP_TEST(stamp_age_wraps_at_48_bits_and_refuses_the_future)
{
	EP_CHECK_EQ(ep_stamp_age(1000, 5000), 4000);
	EP_CHECK_EQ(ep_stamp_age(EP_STAMP_MASK48 - 99, (1ull << 48) + 100), 200);
	EP_CHECK_EQ(ep_stamp_age(5000, 1000), UINT64_MAX);
}

EP_TEST(worker_samples_wake_and_poll_latency_into_their_histograms)
{
	static struct ep_engine eng;
	struct ep_err err = { "" };
	struct ep_worker *w;
	uint8_t b[2048];
	struct rte_mbuf *m;

	memset(&eng, 0, sizeof(eng));
	eng.burst = 32;
	w = ep_worker_create(&eng, 0, "pw", &err);
	EP_CHECK(w != NULL);
	if (w == NULL)
		return;
	m = ep_test_mbuf(b, stamped_frame(b, 0, 1, 1000));
	w->sample = EP_SAMPLE_WAKE;
	ep_power_sample(w, m, 31000);
	EP_CHECK_EQ(w->sample, EP_SAMPLE_NONE);
	EP_CHECK_EQ(w->power->wake_lat.count, 1);
	EP_CHECK_EQ(w->power->wake_lat.max, 30000);
	EP_CHECK_EQ(w->power->wakeups_rx, 1);
	w->sample = EP_SAMPLE_POLL;
	ep_power_sample(w, m, 3000);
	EP_CHECK_EQ(w->power->poll_lat.count, 1);
	EP_CHECK_EQ(w->power->wakeups_rx, 1);
	w->sample = EP_SAMPLE_POLL;
	ep_power_sample(w, m, 10);                          /* before the stamp */
	EP_CHECK_EQ(w->power->stamp_invalid, 1);
	rte_pktmbuf_free(m);
	m = ep_test_mbuf(b, 60);                            /* no stamp */
	memset(b, 0, 60);
	w->sample = EP_SAMPLE_WAKE;
	ep_power_sample(w, m, 10);
	EP_CHECK_EQ(w->power->stamp_missing, 1);
	EP_CHECK_EQ(w->power->wakeups_rx, 2);
	rte_pktmbuf_free(m);
	ep_worker_free(w);
}

/* The `sleep` policy's pause ends when a control message is posted (the
 * worker's message eventfd, which ep_worker_call writes), not at its
 * bound: a pause of 30 s that a message ends reports the message.  So
 * does a kick (ep_worker_kick: the quit flag at shutdown), which ends
 * sleep-rx's wait of up to 100 ms on the same eventfd. */
static void *
pause_thirty_seconds(void *arg)
{
	static bool by_message;

	by_message = ep_power_wait_msg(arg, 30u * 1000000u);
	return &by_message;
}

EP_TEST(a_worker_pause_is_ended_by_a_control_message_or_a_kick_not_its_bound)
{
	static struct ep_engine eng;
	struct ep_err err = { "" };
	struct ep_worker *w;
	pthread_t t;
	void *ret = NULL;

	memset(&eng, 0, sizeof(eng));
	eng.burst = 32;
	w = ep_worker_create(&eng, 0, "pm", &err);
	EP_CHECK(w != NULL);
	if (w == NULL)
		return;
	EP_CHECK(w->power->msg_fd >= 0);
	EP_CHECK(!ep_power_wait_msg(w, 1000));              /* nothing posted: its bound */
	EP_CHECK_EQ(pthread_create(&t, NULL, pause_thirty_seconds, w), 0);
	EP_CHECK_EQ(write(w->power->msg_fd, &(uint64_t){ 1 }, sizeof(uint64_t)), 8);
	EP_CHECK_EQ(pthread_join(t, &ret), 0);
	EP_CHECK(ret != NULL && *(bool *)ret);
	EP_CHECK(!ep_power_wait_msg(w, 1000));              /* the count was taken */
	EP_CHECK_EQ(pthread_create(&t, NULL, pause_thirty_seconds, w), 0);
	ep_worker_kick(w);
	EP_CHECK_EQ(pthread_join(t, &ret), 0);
	EP_CHECK(ret != NULL && *(bool *)ret);
	ep_worker_free(w);
}

/* ------------------------------------------------------------------------ */
/* RAPL from a fake powercap tree.                                           */

static void
put(const char *dir, const char *file, const char *text)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

EP_TEST(rapl_sums_package_zones_and_carries_wraps)
{
	char root[] = "/tmp/ep-rapl-XXXXXX", pkg[600], core[600], psys[600];
	struct ep_rapl r;

	if (mkdtemp(root) == NULL)
		abort();
	snprintf(pkg, sizeof(pkg), "%s/intel-rapl:0", root);
	snprintf(core, sizeof(core), "%s/intel-rapl:0:0", root);
	snprintf(psys, sizeof(psys), "%s/intel-rapl:1", root);
	mkdir(pkg, 0700);
	mkdir(core, 0700);
	mkdir(psys, 0700);
	put(pkg, "name", "package-0\n");
	put(pkg, "energy_uj", "1000\n");
	put(pkg, "max_energy_range_uj", "10000\n");
	put(core, "name", "core\n");
	put(core, "energy_uj", "7\n");
	put(core, "max_energy_range_uj", "10000\n");
	put(psys, "name", "psys\n");
	put(psys, "energy_uj", "9\n");
	put(psys, "max_energy_range_uj", "10000\n");
	EP_CHECK_EQ(ep_rapl_open(&r, root), 0);
	EP_CHECK_EQ(r.n, 1);
	EP_CHECK_EQ(ep_rapl_read_uj(&r), 0);
	put(pkg, "energy_uj", "5000\n");
	EP_CHECK_EQ(ep_rapl_read_uj(&r), 4000);
	put(pkg, "energy_uj", "200\n");                    /* wrapped */
	EP_CHECK_EQ(ep_rapl_read_uj(&r), 4000 + 5000 + 200);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			printf("    could not remove %s\n", root);
	}
}

EP_TEST(rapl_absent_gives_no_zones)
{
	struct ep_rapl r;

	EP_CHECK_EQ(ep_rapl_open(&r, "/nonexistent/powercap"), -1);
	EP_CHECK_EQ(r.n, 0);
}
