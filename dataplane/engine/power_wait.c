/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The idle actions of the polling policies, run on the worker (RCU-offline:
 * worker.c goes offline around them), and its telemetry.
 *
 *   sleep-rx   ppoll() on the worker's rx sockets.  The af_packet PMD reads
 *              a TPACKET_V2 ring the kernel fills; packet_poll() reports
 *              POLLIN while the frame before the kernel's head is not yet
 *              handed back, i.e. while the ring holds an unread frame.  A
 *              frame that lands after our last empty rx_burst and before
 *              ppoll() is therefore seen at once, never slept through.
 *
 *   cpu-wait   the core's monitored wait: it arms a monitor on one cache
 *              line, checks the condition once more (a write that came
 *              before the arm would never wake it), and waits until that
 *              line is written or the deadline passes.  The line is the rx
 *              queue's next descriptor when the worker polls one queue whose
 *              PMD names it (rte_eth_get_monitor_addr: net_ring, af_xdp,
 *              most NICs), else the producer tail of the worker's message
 *              ring, so a control message still ends the wait early.
 *              Intel: DPDK's rte_power_monitor() (UMONITOR/UMWAIT, C0.2 as
 *              DPDK asks for it).  AMD: MONITORX/MWAITX below, because DPDK
 *              22.11's rte_power_monitor() has no AMD path (later DPDK
 *              releases added one); MWAITX's timer counts TSC cycles.
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_power_intrinsics.h>

#include "ep_engine.h"
#include "ep_stamp.h"
#include "power_internal.h"

/* The EAL thread outlives the worker loop (it waits for the next launch),
 * so its CPU clock stays readable after the loop returns. */
void
ep_power_thread_start(struct ep_worker *w)
{
	w->power->thread = pthread_self();
	w->power->tid = gettid();
	__atomic_store_n(&w->power->have_thread, true, __ATOMIC_RELEASE);
	ep_power_rt_apply(w);
}

uint64_t
ep_power_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The real-time guard's decision, carried out on the worker thread: one
 * CPU-clock read per 10 ms window, a syscall only to change class. */
void
ep_power_rt_tick(struct ep_worker *w, uint64_t now)
{
	struct ep_power *p = w->power;
	struct sched_param sp = { .sched_priority = 0 };
	enum ep_rt_act a;

	if (!ep_rt_due(&p->rt, now))
		return;
	a = ep_rt_judge(&p->rt, now, ep_power_thread_cpu_ns());
	if (a == EP_RT_KEEP)
		return;
	if (a == EP_RT_PROMOTE)
		sp.sched_priority = p->rt_applied;
	pthread_setschedparam(pthread_self(), a == EP_RT_PROMOTE ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (a == EP_RT_DEMOTE)
		p->rt_demotions++;
}

void
ep_power_wait_rx(struct ep_worker *w, uint32_t us)
{
	struct ep_power *p = w->power;
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	uint64_t v;

	/* fds[n_fds] is the message eventfd, after the rx sockets. */
	if (ppoll(p->fds, (nfds_t)p->n_fds + 1, &ts, NULL) > 0 &&
	    (p->fds[p->n_fds].revents & POLLIN) != 0 && read(p->fds[p->n_fds].fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: another wait took it */
	}
}

/*
 * The `sleep` policy's pause, on the message eventfd rather than in
 * nanosleep: the same hrtimer and timer slack, but a control operation
 * (a subscriber added, a table swapped: ep_worker_call) that needs this
 * worker's answer gets it at once instead of after up to max_sleep_us.
 * A worker on ports without a socket (net_null, net_ring, a NIC) sleeps
 * this way; with nanosleep a control client sending one operation at a
 * time waited out a pause per operation (6,700 -> 970 single sub-adds a
 * second at max_sleep_us = 1000).
 */
bool
ep_power_wait_msg(struct ep_worker *w, uint32_t us)
{
	struct pollfd pfd = { .fd = w->power->msg_fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	uint64_t v;

	if (ppoll(&pfd, 1, &ts, NULL) <= 0 || (pfd.revents & POLLIN) == 0)
		return false;
	if (read(pfd.fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: another wait took it */
	}
	return true;
}

static uint64_t
monitored_value(const struct rte_power_monitor_cond *pmc)
{
	switch (pmc->size) {
	case 1: return *(const volatile uint8_t *)pmc->addr;
	case 2: return *(const volatile uint16_t *)pmc->addr;
	case 4: return *(const volatile uint32_t *)pmc->addr;
	default: return *(const volatile uint64_t *)pmc->addr;
	}
}

/* The ring's condition: abort the wait once the producer tail moved. */
static int
ring_tail_moved(const uint64_t val, const uint64_t opaque[RTE_POWER_MONITOR_OPAQUE_SZ])
{
	return val != opaque[0] ? -1 : 0;
}

__attribute__((target("mwaitx"))) static void
mwaitx_until(const struct rte_power_monitor_cond *pmc, uint64_t deadline)
{
	uint64_t now = rte_rdtsc();

	if (now >= deadline)
		return;
	_mm_monitorx((void *)(uintptr_t)pmc->addr, 0, 0);
	if (pmc->fn != NULL && pmc->fn(monitored_value(pmc), pmc->opaque) != 0)
		return;
	/* ECX bit 1: EBX holds a timeout in TSC cycles; hint 0: C1. */
	_mm_mwaitx(0x2, 0, (unsigned int)RTE_MIN(deadline - now, (uint64_t)UINT32_MAX));
}

void
ep_power_cpu_wait(struct ep_worker *w, uint64_t deadline)
{
	struct ep_power *p = w->power;
	struct rte_power_monitor_cond pmc;

	if (!p->rx_monitor ||
	    rte_eth_get_monitor_addr(w->engine->ports[p->mon_port].port_id, p->mon_queue,
				     &pmc) != 0) {
		pmc = (struct rte_power_monitor_cond){
			.addr = &w->msgq->prod.tail,
			.size = sizeof(w->msgq->prod.tail),
			.fn = ring_tail_moved,
		};
		pmc.opaque[0] = w->msgq->prod.tail;
	}
	if (w->engine->power_caps.waitpkg)
		rte_power_monitor(&pmc, deadline);
	else
		mwaitx_until(&pmc, deadline);
}

void
ep_power_freq_tick(struct ep_worker *w, uint64_t now, uint64_t busy)
{
	struct ep_power *p = w->power;
	enum ep_freq_act a = ep_freq_account(&p->gov, now, busy);
	char buf[24];
	int n;

	if (a == EP_FREQ_KEEP || p->freq_fd < 0)
		return;
	/* A write to sysfs: ~10 us, at most once per window (10 ms). */
	n = snprintf(buf, sizeof(buf), "%u", a == EP_FREQ_LOW ? p->freq_low_khz : p->freq_high_khz);
	if (pwrite(p->freq_fd, buf, (size_t)n, 0) == n)
		p->freq_changes++;
	else
		p->freq_errors++;
}

void
ep_power_sample(struct ep_worker *w, const struct rte_mbuf *m, uint64_t now)
{
	struct ep_power *p = w->power;
	uint64_t tsc, age;

	if (w->sample == EP_SAMPLE_WAKE)
		p->wakeups_rx++;
	if (!ep_stamp_tsc(m, &tsc))
		p->stamp_missing++;
	else if ((age = ep_stamp_age(tsc, now)) == UINT64_MAX)
		p->stamp_invalid++;
	else
		ep_hist_add(w->sample == EP_SAMPLE_WAKE ? &p->wake_lat : &p->poll_lat, age);
	w->sample = EP_SAMPLE_NONE;
}
