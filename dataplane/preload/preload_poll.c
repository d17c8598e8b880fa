/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * select, pselect, poll, ppoll: readiness of accelerated sockets without a
 * kernel round trip when datagrams are already waiting, and a real kernel
 * wait (never a busy loop, unless EDGEPLANE_PRELOAD_SPIN_US asks for a
 * bounded one first: preload_spin.c) when none are.
 *
 *   any accelerated descriptor whose ring holds a datagram (or an error)?
 *     yes: the kernel is asked about the other descriptors with a zero
 *          timeout (skipped when every descriptor is ours), and the rings
 *          answer for ours: no sleep, at most one system call
 *     no:  each accelerated descriptor is made exact first (wake bytes
 *          drained, rx_signalled cleared, ring looked at once more), then
 *          the kernel waits on all the descriptors with the caller's
 *          timeout and signal mask, the dp's wake byte ending the wait
 *
 * Why: the descriptor alone is correct (readable <=> wake byte pending),
 * but keeping it exact costs a drain after every datagram a reader takes
 * when the ring empties; with this shortcut the drain happens only before
 * the process really sleeps.  epoll_wait is intercepted only to spin
 * (preload_spin.c): epoll_ctl counts the sets a socket is in, and a socket in one is kept exact by
 * the receive that empties its ring, so level-triggered epoll sees what
 * the kernel would show.
 *
 * Writability: a UDP socket is writable while its send buffer has room;
 * the tx ring answers that (a slot and SO_SNDBUF bytes free).
 *
 * The one system call that remains when datagrams wait is the zero-timeout
 * look at the kernel's descriptors of a mixed set.  A reader that takes
 * one datagram per select() (iperf3's server: its stream sockets beside
 * its TCP control connection) pays it per datagram.  With
 * EDGEPLANE_PRELOAD_KERNEL_POLL_US=N a thread whose accelerated
 * descriptors are ready asks the kernel at most every N µs and otherwise
 * reports the kernel's descriptors not ready, as OpenOnload's
 * EF_SELECT_FAST / EF_POLL_FAST (on there by default) and
 * EF_SELECT_NONBLOCK_FAST_USEC do: a kernel descriptor's readiness is
 * then seen up to N µs late while accelerated traffic flows, never lost
 * (a call that finds none of ours ready asks the kernel, and waits in
 * it).  Off by default: the kernel's semantics are exact without it.
 */
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "hs_ring.h"
#include "preload.h"

/* Readiness of an accelerated socket from its rings (poll bits). */
static short
ring_events(struct epl_sock *p)
{
	short ev = 0;
	uint32_t prod = hs_load_acq(&p->shm->rx_prod.v), cons = p->shm->rx_cons.v;
	uint32_t tprod = p->shm->tx_prod.v, tcons = hs_load_acq(&p->shm->tx_cons.v);

	if (prod != cons || (__atomic_load_n(&p->shm->state, __ATOMIC_RELAXED) & HS_ST_SHUT_RD))
		ev |= POLLIN | POLLRDNORM;
	if (__atomic_load_n(&p->shm->so_error.v, __ATOMIC_RELAXED) != 0)
		ev |= POLLERR;
	if ((uint32_t)(tprod - tcons) < p->tx_slots)
		ev |= POLLOUT | POLLWRNORM;
	return ev;
}

static int64_t
ts_us(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000 + t->tv_nsec / 1000;
}

int64_t epl_kernel_poll_us;

/* When this thread last asked the kernel about a mixed set's descriptors. */
static __thread int64_t kernel_polled_us;

bool
epl_kernel_poll_due(void)
{
	int64_t now;

	if (epl_kernel_poll_us == 0)
		return true;
	now = epl_now_us();
	if (now - kernel_polled_us < epl_kernel_poll_us)
		return false;
	kernel_polled_us = now;
	return true;
}

/* ---- poll family ---- */

/* The kernel's wait, spun on with a zero timeout first (preload_spin.c):
 * the accelerated descriptors were made exact, so the kernel's answer is
 * the truth for all of them. */
struct poll_call {
	struct pollfd *fds;
	nfds_t n;
	const sigset_t *mask;
};

static int
poll_call(void *arg, int64_t timeout_us)
{
	struct poll_call *c = arg;
	struct timespec t = { timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000 };

	return epl_libc.ppoll(c->fds, c->n, timeout_us < 0 ? NULL : &t, c->mask);
}

static int
poll_common(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	struct epl_sock *socks[64];
	short ours[64];
	nfds_t k = n < 64 ? n : 64;
	int ready = 0, accel = 0, rc;
	bool only_ours = n <= 64;

	/* Beyond 64 descriptors the kernel answers for all: still correct. */
	for (nfds_t i = 0; i < k; i++) {
		struct epl_sock *p = fds[i].fd >= 0 ? epl_get(fds[i].fd) : NULL;

		if (p != NULL && !p->accel) {
			epl_put(p);
			p = NULL;
		}
		socks[i] = p;
		ours[i] = 0;
		if (p == NULL) {
			only_ours = only_ours && fds[i].fd < 0;
			continue;
		}
		accel++;
		ours[i] = ring_events(p) & (fds[i].events | POLLERR);
		ready += ours[i] != 0;
	}
	if (accel == 0)
		goto kernel_wait;
	if (ready == 0) {
		/* Nothing waiting: make each descriptor exact before sleeping. */
		for (nfds_t i = 0; i < k; i++)
			if (socks[i] != NULL && (fds[i].events & POLLIN)) {
				epl_unsignal(socks[i]);
				ours[i] = ring_events(socks[i]) & (fds[i].events | POLLERR);
				ready += ours[i] != 0;
			}
	}
	if (ready == 0)
		goto kernel_wait;
	if (only_ours || !epl_kernel_poll_due()) {
		rc = 0;
		for (nfds_t i = 0; i < n; i++) {
			fds[i].revents = i < k ? ours[i] : 0;
			rc += fds[i].revents != 0;
		}
	} else {
		struct timespec zero = { 0, 0 };

		rc = epl_libc.ppoll(fds, n, &zero, mask);
		if (rc < 0)
			goto out;
		rc = 0;
		for (nfds_t i = 0; i < n; i++) {
			if (i < k && socks[i] != NULL)
				fds[i].revents = (short)((fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) |
							 ours[i]);
			rc += fds[i].revents != 0;
		}
	}
	goto out;
kernel_wait:
	if (accel != 0) {
		struct poll_call c = { .fds = fds, .n = n, .mask = mask };

		rc = epl_spin_wait(poll_call, &c, tmo == NULL ? -1 : ts_us(tmo));
	} else {
		rc = epl_libc.ppoll(fds, n, tmo, mask);
	}
out:
	for (nfds_t i = 0; i < k; i++)
		epl_put(socks[i]);
	return rc;
}

EPL_EXPORT int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec t = { timeout / 1000, (long)(timeout % 1000) * 1000000 };

	if (!epl_enabled())
		return epl_libc.poll(fds, n, timeout);
	return poll_common(fds, n, timeout < 0 ? NULL : &t, NULL);
}

EPL_EXPORT int
__poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (n > fdslen / sizeof(*fds))
		__builtin_trap();
	return poll(fds, n, timeout);
}

EPL_EXPORT int
ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	if (!epl_enabled())
		return epl_libc.ppoll(fds, n, tmo, mask);
	return poll_common(fds, n, tmo, mask);
}

/* ---- select family ---- */

/* Readiness of one select() descriptor set entry from the rings: bits
 * into @p rr/@p ww; returns the number of bits set. */
static int
select_ours(int fd, struct epl_sock *p, bool in_r, bool in_w, fd_set *rr, fd_set *ww)
{
	short ev = ring_events(p);
	int n = 0;

	/* select reports a pending error as readable and writable */
	if (in_r && (ev & (POLLIN | POLLERR))) {
		FD_SET(fd, rr);
		n++;
	}
	if (in_w && (ev & (POLLOUT | POLLERR))) {
		FD_SET(fd, ww);
		n++;
	}
	return n;
}

/* As poll_call, for select: the sets are the caller's again before
 * every try (the kernel overwrites them). */
struct select_call {
	int nfds;
	fd_set *r, *w, *e;
	fd_set r0, w0, e0;
	const sigset_t *mask;
};

static int
select_call(void *arg, int64_t timeout_us)
{
	struct select_call *c = arg;
	struct timespec t = { timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000 };

	if (c->r != NULL)
		*c->r = c->r0;
	if (c->w != NULL)
		*c->w = c->w0;
	if (c->e != NULL)
		*c->e = c->e0;
	return epl_libc.pselect(c->nfds, c->r, c->w, c->e, timeout_us < 0 ? NULL : &t, c->mask);
}

static int
select_common(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
	      const sigset_t *mask)
{
	fd_set rr, ww;
	int ready = 0, accel = 0, rc;
	bool only_ours = true;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return epl_libc.pselect(nfds, r, w, e, tmo, mask);
	FD_ZERO(&rr);
	FD_ZERO(&ww);
	for (int pass = 0; pass < 2 && ready == 0; pass++) {
		for (int fd = 0; fd < nfds; fd++) {
			bool in_r = r != NULL && FD_ISSET(fd, r), in_w = w != NULL && FD_ISSET(fd, w);
			bool in_e = e != NULL && FD_ISSET(fd, e);
			struct epl_sock *p;

			if (!in_r && !in_w && !in_e)
				continue;
			p = epl_get(fd);
			if (p == NULL || !p->accel) {
				epl_put(p);
				only_ours = false;
				continue;
			}
			if (pass == 0) {
				accel++;
			} else if (in_r) {
				/* about to sleep: make the descriptor exact */
				epl_unsignal(p);
			}
			ready += select_ours(fd, p, in_r, in_w, &rr, &ww);
			epl_put(p);
		}
		if (accel == 0)
			break;
	}
	if (accel == 0)
		return epl_libc.pselect(nfds, r, w, e, tmo, mask);
	if (ready == 0) {
		struct select_call c = { .nfds = nfds, .r = r, .w = w, .e = e, .mask = mask };

		if (r != NULL)
			c.r0 = *r;
		if (w != NULL)
			c.w0 = *w;
		if (e != NULL)
			c.e0 = *e;
		return epl_spin_wait(select_call, &c, tmo == NULL ? -1 : ts_us(tmo));
	}
	if (!only_ours && epl_kernel_poll_due()) {
		struct timespec zero = { 0, 0 };

		rc = epl_libc.pselect(nfds, r, w, e, &zero, mask);
		if (rc < 0)
			return rc;
	} else {
		if (r != NULL)
			FD_ZERO(r);
		if (w != NULL)
			FD_ZERO(w);
		if (e != NULL)
			FD_ZERO(e);
	}
	/* Ours from the rings (and end of file from the kernel), the kernel's
	 * answer for the rest. */
	rc = 0;
	for (int fd = 0; fd < nfds; fd++) {
		bool kr = r != NULL && FD_ISSET(fd, r);

		if (FD_ISSET(fd, &rr) || FD_ISSET(fd, &ww) || kr ||
		    (w != NULL && FD_ISSET(fd, w))) {
			struct epl_sock *p = epl_get(fd);

			if (p != NULL && p->accel) {
				if (r != NULL) {
					if (FD_ISSET(fd, &rr) || (kr && epl_dead(fd, p)))
						FD_SET(fd, r);
					else
						FD_CLR(fd, r);
				}
				if (w != NULL) {
					if (FD_ISSET(fd, &ww))
						FD_SET(fd, w);
					else
						FD_CLR(fd, w);
				}
			}
			epl_put(p);
		}
		rc += (r != NULL && FD_ISSET(fd, r)) + (w != NULL && FD_ISSET(fd, w)) +
		      (e != NULL && FD_ISSET(fd, e));
	}
	return rc;
}

EPL_EXPORT int
select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	struct timespec t, *tp = NULL;
	int64_t start = 0;
	int rc;

	if (!epl_enabled())
		return epl_libc.select(nfds, r, w, e, tv);
	if (tv != NULL) {
		t.tv_sec = tv->tv_sec;
		t.tv_nsec = tv->tv_usec * 1000;
		tp = &t;
		start = epl_now_us();
	}
	rc = select_common(nfds, r, w, e, tp, NULL);
	/* Linux's select updates the timeout with the time not slept. */
	if (tv != NULL) {
		int64_t left = ts_us(&t) - (epl_now_us() - start);

		if (left < 0)
			left = 0;
		tv->tv_sec = left / 1000000;
		tv->tv_usec = left % 1000000;
	}
	return rc;
}

EPL_EXPORT int
pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
	const sigset_t *mask)
{
	if (!epl_enabled())
		return epl_libc.pselect(nfds, r, w, e, tmo, mask);
	return select_common(nfds, r, w, e, tmo, mask);
}

/* ---- epoll: membership only ---- */

EPL_EXPORT int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int rc = epl_libc.epoll_ctl(epfd, op, fd, ev);
	struct epl_sock *p;

	if (rc != 0 || (op != EPOLL_CTL_ADD && op != EPOLL_CTL_DEL))
		return rc;
	p = epl_get(fd);
	if (p != NULL && p->accel) {
		if (op == EPOLL_CTL_ADD) {
			__atomic_add_fetch(&p->sh->epoll_users, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&epl_epoll_accel, true, __ATOMIC_RELAXED);
		}
		else if (__atomic_load_n(&p->sh->epoll_users, __ATOMIC_RELAXED) != 0) {
			__atomic_sub_fetch(&p->sh->epoll_users, 1, __ATOMIC_RELAXED);
		}
	}
	epl_put(p);
	return rc;
}
