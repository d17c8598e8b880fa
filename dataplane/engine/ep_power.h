/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Power-aware polling: what a worker does when its queues are empty, chosen
 * per worker in the configuration (`poll_policy` in [engine], overridden in
 * [worker NAME]) and at run time (`poll-set` on the control socket, applied
 * by the worker between two bursts, as every configuration change is).
 *
 *   policy      after idle_polls empty polls the worker ...        costs (this VM)
 *   ---------   ------------------------------------------------   -------------------------
 *   busy        polls on; never pauses                             a whole core, always
 *   sleep       nanosleep()s min_sleep_us, doubling to              a wake-up: ~15 us above the
 *               max_sleep_us; the first packet resets the ladder    pause (timer + scheduler)
 *   sleep-rx    blocks in ppoll() on its rx queues' sockets         a wake-up on the packet
 *               (af_packet) for at most max_sleep_us: the kernel    itself (IPI + scheduler)
 *               wakes it when a frame lands in a ring
 *   cpu-wait    the core's own light sleep: UMONITOR/UMWAIT         keeps the CPU (no CPU time
 *               (Intel WAITPKG) or MONITORX/MWAITX (AMD) on the     saved, power saved on bare
 *               rx descriptor or its message ring, for at most      metal); refused where the
 *               the pause (the same ladder as sleep)                CPU has neither
 *   dpdk-pmgmt  busy-polls; DPDK's ethdev PMD power management      pause without TPAUSE is
 *               (rte_power_ethdev_pmgmt_queue_enable: pause,        rte_pause() spinning
 *               monitor or scale) pauses inside rx_burst after
 *               idle_polls empty polls (its emptypoll_max), for
 *               min_sleep_us (its pause_duration)
 *
 *   auto        (the default) sleep-rx when every rx queue of the worker has
 *               a socket to wait on and its pipeline has no wake-up source
 *               of its own (no generator, service hook or wait hook), with
 *               20 empty polls and a 100 ms bound (EP_AUTO_RX_WAIT_US)
 *               unless those keys are given; sleep otherwise
 *
 * Scheduling (`rt_priority`): a worker that blocks on its rx sockets runs
 * as the kernel's own receive path does, at a real-time priority
 * (SCHED_FIFO), so on a shared core a frame wakes it ahead of the
 * time-shared threads instead of queueing behind them.  `auto` (the
 * default) does so, at priority 1, for sleep-rx; 0 keeps SCHED_OTHER;
 * 1-99 asks for that priority with any policy that releases the CPU.  A
 * guard (ep_rt_judge) demotes the worker to SCHED_OTHER after a 10 ms window
 * it spent 90 % on the CPU -- overload, as the kernel hands softirq work to
 * ksoftirqd after 2 ms -- and promotes it again after a window under 50 %.
 *
 * and, with any of them, `cpufreq = on`: the worker's CPU runs at its
 * lowest cpufreq frequency while it is mostly idle and at its highest as
 * soon as it is busy (a window governor below; biased, as Intel's
 * Infrastructure Power Manager is, to slow reduction and fast increase).
 *
 * This header is the pure core: the policy state machine and the frequency
 * governor take the time and the poll results as arguments and return what
 * to do, so unit tests drive them with a fake clock; ep_poll_check() refuses
 * by name what a CPU, a port or a host cannot do, from facts gathered
 * elsewhere (power_hw.c).  The worker loop (worker.c) calls them and
 * performs the actions (power_wait.c).
 */
#ifndef EP_POWER_H
#define EP_POWER_H

#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <sys/types.h>

#include "ep_err.h"
#include "ep_hist.h"

#define EP_POWER_MAX_RX       8       /**< = EP_MAX_RX: rx fds one worker waits on */
#define EP_POLL_IDLE_POLLS    200     /**< default empty polls before the first pause */
#define EP_POLL_SLEEP_MAX_US  100000  /**< longest pause a configuration may ask for */

enum ep_poll_policy {
	EP_POLL_BUSY = 0,
	EP_POLL_SLEEP,
	EP_POLL_SLEEP_RX,
	EP_POLL_CPU_WAIT,
	EP_POLL_DPDK_PMGMT,
	EP_POLL__COUNT
};

/** DPDK's rte_power_pmd_mgmt_type, by our names. */
enum ep_pmgmt_mode { EP_PMGMT_PAUSE = 0, EP_PMGMT_MONITOR, EP_PMGMT_SCALE, EP_PMGMT__COUNT };

extern const char *const ep_poll_policy_name[EP_POLL__COUNT];
extern const char *const ep_pmgmt_mode_name[EP_PMGMT__COUNT];

#define EP_RT_AUTO            (-1)    /**< rt_priority: FIFO 1 for sleep-rx, else none */
#define EP_AUTO_IDLE_POLLS    20      /**< auto's sleep-rx: empty polls before waiting */
#define EP_AUTO_MAX_SLEEP_US  1000    /**< auto, a wait hook on the rx sockets: its pause */
/*
 * auto's sleep-rx: the longest wait without a frame.  Every source of work
 * of such a worker wakes it (a frame in an rx socket, a control message on
 * its eventfd, the quit flag: ep_worker_kick), so the bound is only
 * housekeeping, and every time it expires the worker wakes for nothing: a
 * thread woken on a CPU the traffic's senders need, at SCHED_FIFO 1, and
 * its idle_polls empty polls (on net_af_xdp with busy_budget, a recvfrom()
 * each).  That is the whole of its work when an XDP program in front of
 * its sockets forwards every frame (the router's fast path): at the old
 * 1 ms, ~960 wake-ups a second and 3-5 % of a CPU, and the rfc2544-router
 * generator, which pays the forwarding in its own sendto(), offered 0.89x
 * Linux forwarding's rate where the same DUT waiting 100 ms offered 0.99x
 * (and 1.15x the 1 ms DUT, per-round median of 10 alternating rounds on 2
 * shared vCPUs; docs/benchmarks/rfc2544-router-fast-paths.md, "The
 * worker's idle wake-ups").  A frame's latency does not depend on it:
 * the frame wakes the worker.
 */
#define EP_AUTO_RX_WAIT_US    EP_POLL_SLEEP_MAX_US
#define EP_EVENT_IDLE_POLLS   5       /**< auto, a wait hook on the rx sockets: empty polls before waiting */

/** A worker's polling policy: [engine] defaults, [worker] overrides, poll-set. */
struct ep_poll_cfg {
	enum ep_poll_policy policy; /**< with auto_policy: the fallback until resolved */
	bool auto_policy;           /**< poll_policy = auto: ep_poll_resolve() chooses */
	int rt_priority;            /**< EP_RT_AUTO, 0 (SCHED_OTHER) or 1-99 (SCHED_FIFO) */
	uint32_t given;             /**< bit i: ep_poll_cfg_keys[i] was set explicitly */
	uint32_t idle_polls;        /**< empty polls before the first pause */
	uint32_t min_sleep_us;      /**< first pause (dpdk-pmgmt: its pause_duration) */
	uint32_t max_sleep_us;      /**< longest pause: the bound on the added latency */
	enum ep_pmgmt_mode pmgmt_mode;
	bool cpufreq;               /**< scale the CPU's frequency with its load */
};

/** The built-in defaults: auto (sleep after 200 empty polls, 1 to 100 us,
 *  where sleep-rx cannot run), rt_priority auto. */
void ep_poll_cfg_default(struct ep_poll_cfg *c);

/**
 * Set one key from its text: poll_policy (busy, sleep, sleep-rx, cpu-wait,
 * dpdk-pmgmt), idle_polls, min_sleep_us, max_sleep_us, pmgmt_mode (pause,
 * monitor, scale), cpufreq (on, off).  The configuration file and the
 * control socket both come here.  -1 with err for a bad value or an unknown
 * key; @p c is left unchanged then.
 */
int ep_poll_cfg_set(struct ep_poll_cfg *c, const char *key, const char *val,
		    struct ep_err *err);
/** NULL-terminated list of the keys ep_poll_cfg_set() takes. */
extern const char *const ep_poll_cfg_keys[];

/* ------------------------------------------------------------------------ */
/* The policy state machine (worker fast path: called after every poll).   */

/**
 * The policy a worker runs: @p want with auto resolved against the
 * worker's facts (ep_poll_facts) and rt_priority auto made a number.
 * Pure; the result is what ep_poll_check() judges and the worker applies.
 */
struct ep_poll_facts;
void ep_poll_resolve(const struct ep_poll_cfg *want, const struct ep_poll_facts *f,
		     struct ep_poll_cfg *out);

/** What the worker does after an empty poll. */
enum ep_poll_act {
	EP_ACT_POLL = 0,       /**< poll again */
	EP_ACT_SLEEP,          /**< nanosleep for the pause */
	EP_ACT_WAIT_RX,        /**< ppoll() the rx sockets for at most the pause */
	EP_ACT_CPU_WAIT,       /**< the core's monitored light sleep for at most the pause */
};

struct ep_poll_state {
	uint32_t empty;        /**< consecutive empty polls */
	uint32_t pause_us;     /**< the next pause */
};

static inline void
ep_poll_state_reset(const struct ep_poll_cfg *c, struct ep_poll_state *s)
{
	s->empty = 0;
	s->pause_us = c->min_sleep_us;
}

/** A poll found packets: the next idle stretch starts from the first rung. */
static inline void
ep_poll_found(const struct ep_poll_cfg *c, struct ep_poll_state *s)
{
	s->empty = 0;
	s->pause_us = c->min_sleep_us;
}

/**
 * An empty poll: poll again, or pause for *@p us.  Pauses start after
 * idle_polls consecutive empty polls and then follow every empty poll;
 * sleep and cpu-wait double theirs from min_sleep_us to max_sleep_us,
 * sleep-rx waits max_sleep_us at once (a frame ends its wait, so only the
 * worker's messages and its pipeline's timers wait that long).
 */
static inline enum ep_poll_act
ep_poll_empty(const struct ep_poll_cfg *c, struct ep_poll_state *s, uint32_t *us)
{
	uint32_t next;

	if (c->policy == EP_POLL_BUSY || c->policy == EP_POLL_DPDK_PMGMT)
		return EP_ACT_POLL;
	if (s->empty < c->idle_polls)
		s->empty++;
	if (s->empty < c->idle_polls)
		return EP_ACT_POLL;
	if (c->policy == EP_POLL_SLEEP_RX) {
		*us = c->max_sleep_us;
		return EP_ACT_WAIT_RX;
	}
	*us = s->pause_us;
	next = s->pause_us * 2;
	s->pause_us = next > c->max_sleep_us || next < s->pause_us ? c->max_sleep_us : next;
	return c->policy == EP_POLL_SLEEP ? EP_ACT_SLEEP : EP_ACT_CPU_WAIT;
}

/* ------------------------------------------------------------------------ */
/* The frequency governor (cpufreq = on).                                   */

#define EP_FREQ_WINDOW_US     10000   /**< utilisation is judged per 10 ms window */
#define EP_FREQ_UP_PCT        50      /**< busy share that raises the frequency at once */
#define EP_FREQ_DOWN_PCT      10      /**< busy share under which a window is quiet */
#define EP_FREQ_DOWN_WINDOWS  3       /**< quiet windows in a row before lowering */

enum ep_freq_act { EP_FREQ_KEEP = 0, EP_FREQ_LOW, EP_FREQ_HIGH };

struct ep_freq_gov {
	uint64_t window;       /**< TSC cycles per window */
	uint64_t start;        /**< start of the current window */
	uint64_t busy;         /**< busy cycles in it */
	uint32_t quiet;        /**< quiet windows in a row */
	bool low;              /**< the frequency is lowered */
};

static inline void
ep_freq_gov_init(struct ep_freq_gov *g, uint64_t hz, uint64_t now)
{
	g->window = hz / 1000000 * EP_FREQ_WINDOW_US;
	g->start = now;
	g->busy = 0;
	g->quiet = 0;
	g->low = false;
}

/**
 * Account @p busy cycles at time @p now.  Fast increase: once a window's
 * busy cycles pass EP_FREQ_UP_PCT of a whole window, the frequency goes up
 * without waiting for the window's end.  Slow reduction: only after
 * EP_FREQ_DOWN_WINDOWS windows in a row under EP_FREQ_DOWN_PCT busy.
 */
static inline enum ep_freq_act
ep_freq_account(struct ep_freq_gov *g, uint64_t now, uint64_t busy)
{
	uint64_t elapsed = now - g->start;

	g->busy += busy;
	if (g->low && g->busy * 100 >= g->window * EP_FREQ_UP_PCT) {
		g->low = false;
		g->quiet = 0;
		g->start = now;
		g->busy = 0;
		return EP_FREQ_HIGH;
	}
	if (elapsed < g->window)
		return EP_FREQ_KEEP;
	if (g->busy * 100 < elapsed * EP_FREQ_DOWN_PCT)
		g->quiet++;
	else
		g->quiet = 0;
	g->start = now;
	g->busy = 0;
	if (!g->low && g->quiet >= EP_FREQ_DOWN_WINDOWS) {
		g->low = true;
		g->quiet = 0;
		return EP_FREQ_LOW;
	}
	return EP_FREQ_KEEP;
}

/* ------------------------------------------------------------------------ */
/* The real-time guard (rt_priority > 0).                                   */

#define EP_RT_WINDOW_US       10000   /**< CPU share judged per 10 ms window */
#define EP_RT_DEMOTE_PCT      90      /**< a window this much on the CPU demotes */
#define EP_RT_PROMOTE_PCT     50      /**< once demoted, a window under this promotes */

enum ep_rt_act { EP_RT_KEEP = 0, EP_RT_DEMOTE, EP_RT_PROMOTE };

/*
 * The worker's own CPU time decides, not the wall time of its loop: a
 * worker preempted by a higher-priority thread (a tester, an interrupt)
 * is not saturated, however long its turn took.
 */
struct ep_rt_guard {
	uint64_t window;       /**< TSC cycles per window */
	uint64_t start;        /**< TSC at the start of the current window */
	uint64_t cpu_start_ns; /**< the thread's CPU time then */
	uint64_t hz;
	bool demoted;          /**< running SCHED_OTHER until a quieter window */
};

static inline void
ep_rt_guard_init(struct ep_rt_guard *g, uint64_t hz, uint64_t now, uint64_t cpu_ns)
{
	g->hz = hz;
	g->window = hz / 1000000 * EP_RT_WINDOW_US;
	g->start = now;
	g->cpu_start_ns = cpu_ns;
	g->demoted = false;
}

/** The current window is over: time to read the CPU clock and judge. */
static inline bool
ep_rt_due(const struct ep_rt_guard *g, uint64_t now)
{
	return now - g->start >= g->window;
}

/**
 * Judge the window ending at @p now in which the thread's CPU clock
 * reached @p cpu_ns: demote a worker that was on the CPU for
 * EP_RT_DEMOTE_PCT of it (saturated: at a real-time priority it would
 * starve its CPU), promote a demoted one after a window under
 * EP_RT_PROMOTE_PCT.
 */
static inline enum ep_rt_act
ep_rt_judge(struct ep_rt_guard *g, uint64_t now, uint64_t cpu_ns)
{
	uint64_t elapsed_ns = (now - g->start) * 1000000000ull / (g->hz ? g->hz : 1);
	uint64_t used = cpu_ns > g->cpu_start_ns ? cpu_ns - g->cpu_start_ns : 0;

	g->start = now;
	g->cpu_start_ns = cpu_ns;
	if (!g->demoted && used * 100 >= elapsed_ns * EP_RT_DEMOTE_PCT) {
		g->demoted = true;
		return EP_RT_DEMOTE;
	}
	if (g->demoted && used * 100 < elapsed_ns * EP_RT_PROMOTE_PCT) {
		g->demoted = false;
		return EP_RT_PROMOTE;
	}
	return EP_RT_KEEP;
}

/* ------------------------------------------------------------------------ */
/* What the host, the CPU and the ports can do: checked before anything     */
/* changes, so a policy is refused by name rather than failing later.       */

/** The CPU and host, detected once at start (ep_power_caps_detect). */
struct ep_power_caps {
	bool waitpkg;          /**< UMONITOR/UMWAIT/TPAUSE: CPUID.(EAX=7,ECX=0):ECX[5] */
	bool monitorx;         /**< MONITORX/MWAITX: CPUID.80000001h:ECX[29] (AMD) */
	bool dpdk_monitor;     /**< DPDK's rte_power_monitor() works (22.11: WAITPKG only) */
	bool dpdk_monitor_multi; /**< ... on several queues (WAITPKG and RTM) */
	bool dpdk_tpause;      /**< DPDK's pause mode uses TPAUSE, not a rte_pause() spin */
	char cpu[64];          /**< vendor and model, for messages */
};

/** One rx queue a worker polls, as the policy checks see it. */
struct ep_poll_queue_facts {
	char port[32];
	char driver[32];       /**< the PMD's name: net_af_packet, net_ring, ... */
	bool has_fd;           /**< a file descriptor to ppoll (af_packet sockets) */
	bool has_monitor;      /**< rte_eth_get_monitor_addr() answers for it */
};

/** A worker as the policy checks see it. */
struct ep_poll_facts {
	const char *worker;
	bool probed;           /**< ports are up: queue facts are known (not --check) */
	int n_rx;              /**< rx queues it polls (0: its pipeline is a source) */
	bool own_wakeups;      /**< its pipeline has a service or wait hook or is a source */
	bool wait_covers_rx;   /**< ... and its wait hook waits on the rx sockets too */
	struct ep_poll_queue_facts rx[EP_POWER_MAX_RX];
	/** Why its CPU's frequency cannot be set ("" when it can): not pinned
	 *  to one CPU, no cpufreq driver, read-only sysfs. */
	char cpufreq_why[192];
	/** Another worker's dpdk-pmgmt idle_polls and min_sleep_us, which DPDK
	 *  keeps process-wide (0 when no other worker uses dpdk-pmgmt). */
	uint32_t pmgmt_idle_polls, pmgmt_pause_us;
};

/**
 * Whether @p c can run on that CPU, host and worker: 0, or -1 with err
 * naming what is missing.  No side effect.
 */
int ep_poll_check(const struct ep_poll_cfg *c, const struct ep_power_caps *caps,
		  const struct ep_poll_facts *f, struct ep_err *err);

/* ------------------------------------------------------------------------ */
/* Per worker: wait resources and telemetry (ep_worker.power).              */

enum ep_sample {
	EP_SAMPLE_NONE = 0,
	EP_SAMPLE_WAKE,        /**< the first poll after a pause found packets */
	EP_SAMPLE_POLL,        /**< every EP_SAMPLE_EVERY-th busy poll not after a pause */
};
#define EP_SAMPLE_EVERY 64

struct ep_power {
	/** The configured policy, applied at start (control thread only). */
	struct ep_poll_cfg want;

	/* Wait resources, owned by the worker once a policy is applied. */
	struct pollfd fds[EP_POWER_MAX_RX + 1]; /**< sleep-rx: its rx queues' sockets, then msg_fd */
	int n_fds;                           /**< rx sockets in fds[] */
	int msg_fd;                          /**< eventfd: a control message waits (ep_worker_call) */
	struct ep_rt_guard rt;               /**< rt_priority > 0: the overload guard */
	int rt_applied;                      /**< the SCHED_FIFO priority in force, 0: none */
	uint64_t rt_demotions;               /**< times the guard demoted the worker */
	char rt_note[96];                    /**< why rt_priority auto stayed at 0 */
	int freq_fd;                         /**< cpufreq: scaling_max_freq, or -1 */
	int freq_cpu;
	uint32_t freq_low_khz, freq_high_khz;
	struct ep_freq_gov gov;
	bool rx_monitor;                     /**< cpu-wait on the rx descriptor (else the ring) */
	uint16_t mon_port, mon_queue;

	/* The worker thread, for its CPU time (read by the control thread). */
	pthread_t thread;
	pid_t tid;
	bool have_thread;                    /**< set (release) once thread and tid are */

	/* Telemetry: written by the worker only. */
	uint64_t busy_iters;                 /**< loop turns that found packets */
	uint64_t wakeups_rx;                 /**< pauses after which the next poll found packets */
	uint64_t stamp_missing;              /**< sampled frames without a tester's stamp */
	uint64_t stamp_invalid;              /**< stamps in the future */
	uint64_t freq_changes;
	uint64_t freq_errors;                /**< cpufreq writes the kernel refused */
	uint64_t policy_changes;
	struct ep_hist wake_lat;             /**< stamp to rx, first packet after a pause */
	struct ep_hist poll_lat;             /**< stamp to rx, a packet of a busy poll */
};

#endif
