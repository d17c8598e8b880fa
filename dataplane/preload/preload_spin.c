/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounded, adaptive busy-polling before a wait, as Linux's SO_BUSY_POLL /
 * epoll busy poll and OpenOnload's EF_POLL_USEC do.
 *
 * Why: a datagram for an accelerated socket crosses the data plane's
 * worker, so a request/response exchange (sockperf ping-pong, DNS, a game
 * tick) wakes more threads per round trip than the kernel's, where the
 * sender's system call runs the receiver's UDP input and wakes it
 * synchronously on its own CPU.  Every wake-up of a sleeping thread costs
 * a scheduler pass, and on a virtual machine a wake-up on an idle vCPU an
 * inter-processor interrupt through the hypervisor (tens of microseconds
 * to a millisecond when the host is busy).  A reader that keeps looking
 * for a short while after it found nothing takes the answer without being
 * woken, and its vCPU does not halt.
 *
 * Bounded: at most EDGEPLANE_PRELOAD_SPIN_US (default 200, 0 turns it
 * off) per wait, then the ordinary kernel wait.  Not at all while a worker
 * of the data plane keeps its CPU between packets (a yielding memif
 * worker, its page's `polls`): on shared cores the spinning application
 * and that worker would take turns, each delaying the other, where a
 * worker that blocks is woken, preempts the spinner (it runs at
 * SCHED_FIFO) and hands over the datagram without waking anyone.  Adaptive: per thread, an average of how
 * long its recent waits lasted; a thread whose waits are longer than the
 * spin (an idle server, a bulk receiver between bursts) does not spin at
 * all, so the CPU it would burn is spent only where it buys a wake-up.
 * A wait the spin satisfied counts with its real length, a wait that went
 * to the kernel with its whole length (timeouts included), so one long
 * pause turns spinning off until waits are short again.
 *
 * Not on a contended CPU: a spin that lost its CPU for longer than
 * EDGEPLANE_PRELOAD_SPIN_LOST_US (default 100, 0: never) between two looks (other threads want the core:
 * the scheduler took it away, which a data-plane worker delivering in
 * 10-40 us does not) stops, and the thread does not spin for
 * EPL_SPIN_BACKOFF_US.  A time-shared thread that spins looks CPU-bound
 * to the scheduler: on a host whose other tenants keep both cores busy,
 * each time-slice it loses costs it a whole slice of theirs (sockperf
 * ping-pong over AF_XDP at load average 5-7: p99 740-1090 us spinning
 * against 575-640 sleeping), where a thread woken from sleep is placed
 * ahead of them.
 *
 * What is polled: for recv*() the socket's receive ring (memory, no
 * system call); for poll/select/epoll the kernel itself with a zero
 * timeout (the descriptors were made exact before, so the kernel's
 * answer is the truth for accelerated and kernel descriptors alike, with
 * no emulation of epoll's sets).  A spinning application thread is
 * time-shared: the data plane's real-time workers preempt it whenever a
 * frame or a doorbell wakes them, so the spin never delays the work it
 * waits for on the worker's side.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "hs_ring.h"
#include "preload.h"

int64_t epl_spin_us;

/* Average wait of this thread, µs, in eighths (EWMA with weight 1/8). */
static __thread int64_t wait_avg8;

#define EPL_SPIN_PREEMPTED_US 100
#define EPL_SPIN_BACKOFF_US   100000

/* EDGEPLANE_PRELOAD_SPIN_LOST_US: how long a spin may lose its CPU before
 * it backs off (default EPL_SPIN_PREEMPTED_US; 0: never back off). */
static int64_t spin_lost_us;

/* Until when this thread does not spin (µs, epl_now_us()): its last spin
 * lost its CPU. */
static __thread int64_t spin_off_until;

/* A number of microseconds from the environment, 0-max (unset or not a
 * number: dflt). */
static int64_t
env_us(const char *name, long max, int64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	long us;

	if (v == NULL || v[0] == '\0')
		return dflt;
	us = strtol(v, &end, 10);
	if (*end != '\0' || us < 0 || us > max) {
		epl_warn("%s=%s: not a number of microseconds in 0-%ld; %lld used", name, v, max,
			 (long long)dflt);
		return dflt;
	}
	return us;
}

void
epl_spin_init(void)
{
	epl_spin_us = env_us("EDGEPLANE_PRELOAD_SPIN_US", 1000000, EPL_SPIN_US_DEFAULT);
	spin_lost_us = env_us("EDGEPLANE_PRELOAD_SPIN_LOST_US", 1000000, EPL_SPIN_PREEMPTED_US);
	epl_kernel_poll_us = env_us("EDGEPLANE_PRELOAD_KERNEL_POLL_US", 10000000, 0);
}

int64_t
epl_spin_budget(int64_t timeout_us)
{
	int64_t b = epl_spin_us;

	if (b == 0 || wait_avg8 / 8 > b || epl_workers_poll() ||
	    (spin_off_until != 0 && epl_now_us() < spin_off_until))
		return 0;
	if (timeout_us >= 0 && timeout_us < b)
		b = timeout_us;
	return b;
}

void
epl_spin_note(int64_t waited_us)
{
	if (epl_spin_us == 0)
		return;
	if (waited_us > 1000000)
		waited_us = 1000000;
	wait_avg8 += waited_us - wait_avg8 / 8;
}

bool
epl_spin_lost_cpu(int64_t *last)
{
	int64_t now = epl_now_us();

	if (spin_lost_us != 0 && now - *last > spin_lost_us) {
		spin_off_until = now + EPL_SPIN_BACKOFF_US;
		return true;
	}
	*last = now;
	return false;
}

int
epl_spin_wait(int (*call)(void *arg, int64_t timeout_us), void *arg, int64_t timeout_us)
{
	int64_t t0, budget;
	int rc;

	if (epl_spin_us == 0)
		return call(arg, timeout_us);
	t0 = epl_now_us();
	budget = epl_spin_budget(timeout_us);
	if (budget > 0) {
		int64_t last = t0;

		do {
			rc = call(arg, 0);
			if (rc != 0) {
				epl_spin_note(epl_now_us() - t0);
				return rc;
			}
			epl_cpu_relax();
		} while (!epl_spin_lost_cpu(&last) && last - t0 < budget);
		if (timeout_us > 0) {
			timeout_us -= epl_now_us() - t0;
			if (timeout_us < 0)
				timeout_us = 0;
		}
	}
	rc = call(arg, timeout_us);
	epl_spin_note(epl_now_us() - t0);
	return rc;
}

/* ---- epoll: the kernel's sets, spun on with a zero timeout ---- */

/* Set once this process put an accelerated socket into an epoll set
 * (epoll_ctl): before that, epoll_wait is libc's, untouched. */
bool epl_epoll_accel;

struct epoll_call {
	int epfd, max;
	struct epoll_event *ev;
	const sigset_t *mask;
};

static int
epoll_call(void *arg, int64_t timeout_us)
{
	struct epoll_call *c = arg;

	/* epoll counts in milliseconds: what is left, rounded up */
	return epl_libc.epoll_pwait(c->epfd, c->ev, c->max,
				    timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000), c->mask);
}

EPL_EXPORT int
epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	struct epoll_call c = { .epfd = epfd, .max = max, .ev = ev, .mask = mask };

	if (!__atomic_load_n(&epl_epoll_accel, __ATOMIC_RELAXED) || timeout == 0)
		return epl_libc.epoll_pwait(epfd, ev, max, timeout, mask);
	return epl_spin_wait(epoll_call, &c, timeout < 0 ? -1 : (int64_t)timeout * 1000);
}

EPL_EXPORT int
epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}
