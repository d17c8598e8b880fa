/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Moving datagrams: the send and receive calls on accelerated sockets.
 *
 * Send: under the socket's tx lock, room for the datagram in the tx ring
 * (a slot and a contiguous span of the data area, within SO_SNDBUF), the
 * iovecs copied into it as ONE datagram (VPP's shim sends one per iovec),
 * the descriptor published, then the doorbell (preload_attach.c).  A full
 * ring means EAGAIN for a non-blocking send; a blocking one sleeps in
 * ppoll() on its own descriptor waiting only for a hang-up of the dp
 * (20 us, doubling to 1 ms, so the sleeping sender leaves the CPU to the
 * worker that drains the ring), and gives up after SO_SNDTIMEO.
 *
 * Receive: under the rx lock, the oldest descriptor, its payload copied
 * out, MSG_TRUNC / MSG_PEEK / the sender's address / IP_PKTINFO, IP_TOS
 * control messages as the kernel gives them.  When the ring is found
 * empty, the wake bytes are drained and rx_signalled cleared, and the
 * ring is looked at once more (the dp publishes, then reads the flag):
 * after that, the descriptor is readable exactly when a datagram waits,
 * which is what select/poll/epoll on it report.  A blocking receive waits
 * in ppoll() for that (SO_RCVTIMEO bounds it); end of file on the
 * descriptor means edgeplane-dp is gone: ENETDOWN.
 */
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hs_ring.h"
#include "preload.h"

int64_t
epl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool
nonblocking(const struct epl_sock *p, int flags)
{
	return (flags & MSG_DONTWAIT) != 0 ||
	       (__atomic_load_n(&p->shm->opt_flags, __ATOMIC_RELAXED) & HS_OPT_NONBLOCK) != 0;
}

int
epl_unsignal(struct epl_sock *p)
{
	static const uint8_t again = 1;
	char buf[64];
	ssize_t n;

	while ((n = epl_libc.recv(p->wfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	if (n == 0)
		return -ENETDOWN;
	__atomic_store_n(&p->shm->rx_signalled.v, 0, __ATOMIC_RELAXED);
	hs_fence();
	/* A datagram published while the bytes were drained found the flag
	 * still set and wrote no byte: the descriptor would say "nothing" with
	 * a datagram waiting.  Ask the dp for the byte back (it answers from
	 * its control thread when the ring is not empty). */
	if (hs_load_acq(&p->shm->rx_prod.v) != p->shm->rx_cons.v &&
	    epl_libc.send(p->wfd, &again, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* a full buffer already holds requests */
	}
	return 0;
}

bool
epl_dead(int fd, struct epl_sock *p)
{
	struct pollfd pfd = { .fd = p->wfd, .events = POLLRDHUP };

	(void)fd;
	return epl_libc.poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP)) != 0;
}

/* Wait for @p events on @p fd until @p deadline (0: none).  0 when woken,
 * -EAGAIN at the deadline, -EINTR for a signal that must interrupt. */
static int
wait_fd(int fd, short events, int64_t deadline, int64_t step_us)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = step_us;
		struct timespec ts;
		int rc;

		if (deadline != 0) {
			int64_t rem = deadline - epl_now_us();

			if (rem <= 0)
				return -EAGAIN;
			if (left <= 0 || left > rem)
				left = rem;
		}
		ts.tv_sec = left / 1000000;
		ts.tv_nsec = (left % 1000000) * 1000;
		rc = epl_libc.ppoll(&pfd, 1, left > 0 ? &ts : NULL, NULL);
		if (rc > 0 || (rc == 0 && step_us > 0))
			return 0;
		if (rc < 0 && errno == EINTR) {
			/* Linux restarts a socket call after an SA_RESTART handler
			 * unless the socket has a timeout. */
			if (deadline == 0 && epl_restart_ok())
				continue;
			return -EINTR;
		}
		if (rc < 0)
			return -errno;
	}
}

/* A blocking receive spins on its ring before the descriptor is made
 * exact (preload_spin.c decides whether and how long).  rx_signalled is
 * left as it is: a reader that took its last datagram after a wake-up
 * still has the flag set (and that byte undrained), so the worker that
 * publishes the next datagram writes no byte, and a reader that catches
 * it while spinning costs the worker no send(2) and no wake-up of a
 * thread (the try_to_wake_up behind sock_def_readable was 14 % of a
 * host-stack worker's samples in a ping-pong), and itself no drain.  The
 * flag is never set without a byte behind it, so whoever else waits on
 * the descriptor (another thread's epoll, a forked process) sees it
 * exactly as without the spin, even if the spinner dies.  A spin that
 * finds nothing ends in the ordinary path: drain, clear, look again,
 * sleep.  true when there is something to look at (a datagram, an
 * error, a shutdown). */
static bool
rx_spin(const struct epl_sock *p, int64_t deadline)
{
	const struct hs_sock_shm *shm = p->shm;
	int64_t t0 = epl_now_us();
	int64_t budget = epl_spin_budget(deadline == 0 ? -1 : deadline > t0 ? deadline - t0 : 0);

	int64_t last = t0;

	if (budget <= 0)
		return false;
	do {
		if (hs_load_acq(&shm->rx_prod.v) != shm->rx_cons.v ||
		    __atomic_load_n(&shm->so_error.v, __ATOMIC_RELAXED) != 0 ||
		    (__atomic_load_n(&shm->state, __ATOMIC_RELAXED) & HS_ST_SHUT_RD) != 0)
			return true;
		epl_cpu_relax();
	} while (!epl_spin_lost_cpu(&last) && last - t0 < budget);
	return false;
}

/* A blocking receive's sleep on the descriptor, made exact before: 0 when
 * there may be something to take, -EAGAIN at the deadline, -errno. */
static int
rx_wait(struct epl_sock *p, int64_t deadline)
{
	return wait_fd(p->wfd, POLLIN | POLLRDHUP, deadline, 0);
}

/* ---- send ---- */

static uint32_t
eff_limit(uint32_t set, uint32_t bytes)
{
	if (set == 0 || set > bytes / 2)
		return bytes;
	return set * 2 < 2048 ? 2048 : set * 2;
}

static int
dest_of(const struct epl_sock *p, const struct msghdr *m, struct hs_desc *d)
{
	struct hs_sockaddr a;
	int rc;

	if (m->msg_name == NULL || m->msg_namelen == 0) {
		if (!(__atomic_load_n(&p->shm->state, __ATOMIC_ACQUIRE) & HS_ST_CONNECTED))
			return -EDESTADDRREQ;
		d->flags = 0;
		return 0;
	}
	rc = epl_sa_to_hs(p, m->msg_name, m->msg_namelen, &a, false);
	if (rc < 0)
		return rc;
	if (a.port == 0)
		return -EINVAL;         /* udp_sendmsg: no destination port */
	if (p->family == AF_INET6 && (p->shm->opt_flags & HS_OPT_V6ONLY) &&
	    memcmp(a.addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)
		return -ENETUNREACH;
	memcpy(d->addr, a.addr, 16);
	d->port = a.port;
	d->family = a.family;
	d->flags = HS_DESC_F_PEER;
	return 0;
}

ssize_t
epl_sendmsg(int fd, struct epl_sock *p, const struct msghdr *m, int flags)
{
	struct epl_shared *sh = p->sh;
	uint64_t total = 0;
	struct hs_desc d;
	int64_t deadline = 0, step = 20;
	uint32_t max = p->family == AF_INET ? HS_MAX_DGRAM : HS_MAX_DGRAM6;
	int rc;

	if (flags & (MSG_OOB | MSG_MORE)) {
		epl_warn_once("sendflags", "MSG_OOB and MSG_MORE are not supported on edgeplane-dp "
			      "UDP sockets: EOPNOTSUPP");
		errno = EOPNOTSUPP;
		return -1;
	}
	if (m->msg_controllen != 0) {
		epl_warn_once("sendcmsg", "ancillary data on send (IP_PKTINFO, IP_TOS ...) is not "
			      "supported on edgeplane-dp UDP sockets: EINVAL");
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total += m->msg_iov[i].iov_len;
	if (total > max) {
		errno = EMSGSIZE;
		return -1;
	}
	memset(&d, 0, sizeof(d));
	rc = dest_of(p, m, &d);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	d.len = (uint32_t)total;
	/* A pending asynchronous error (ICMP port unreachable) is reported by
	 * the next send as by the next receive, as Linux does. */
	rc = (int)__atomic_exchange_n(&p->shm->so_error.v, 0, __ATOMIC_ACQ_REL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	if (__atomic_load_n(&p->shm->state, __ATOMIC_ACQUIRE) & HS_ST_SHUT_WR) {
		errno = EPIPE;
		return -1;
	}
	/* A dp that went away: found by its hang-up, every 256 sends (a
	 * blocked sender finds it at once). */
	if ((p->sends++ & 255) == 0 && epl_dead(fd, p)) {
		errno = ENETDOWN;
		return -1;
	}
	if (p->sh->sndtimeo_us > 0)
		deadline = epl_now_us() + p->sh->sndtimeo_us;
	for (;;) {
		uint32_t prod, cons, off, nhead, tail;
		int64_t queued;

		epl_lock(&sh->tx_lock);
		prod = p->shm->tx_prod.v;
		cons = hs_load_acq(&p->shm->tx_cons.v);
		queued = hs_ring_count(prod, cons, p->tx_slots);
		if (queued < 0) {
			epl_unlock(&sh->tx_lock);
			errno = EIO;
			return -1;
		}
		tail = queued != 0 ? p->tx_desc[cons & (p->tx_slots - 1)].off : 0;
		if ((uint32_t)queued < p->tx_slots &&
		    hs_data_alloc(p->tx_bytes, eff_limit(p->shm->opt_sndbuf, p->tx_bytes), sh->tx_head,
				  tail, queued == 0, d.len, &off, &nhead) == 0) {
			uint32_t done = 0;

			for (size_t i = 0; i < m->msg_iovlen; i++) {
				memcpy(p->tx_data + off + done, m->msg_iov[i].iov_base,
				       m->msg_iov[i].iov_len);
				done += (uint32_t)m->msg_iov[i].iov_len;
			}
			d.off = off;
			p->tx_desc[prod & (p->tx_slots - 1)] = d;
			sh->tx_head = nhead;
			hs_store_rel(&p->shm->tx_prod.v, prod + 1);
			epl_unlock(&sh->tx_lock);
			break;
		}
		epl_unlock(&sh->tx_lock);
		/* Full: a doorbell in case the worker does not know yet. */
		epl_doorbell(p);
		if (nonblocking(p, flags)) {
			errno = EAGAIN;
			return -1;
		}
		rc = wait_fd(p->wfd, POLLRDHUP, deadline, step);
		if (rc == 0 && epl_dead(fd, p))
			rc = -ENETDOWN;
		if (rc < 0) {
			errno = -rc;
			return -1;
		}
		if (step < 1000)
			step *= 2;
	}
	epl_doorbell(p);
	return (ssize_t)total;
}

/* ---- receive ---- */

static void
put_cmsg(struct msghdr *m, size_t *used, int level, int type, const void *data, size_t len)
{
	struct cmsghdr *c;

	if (m->msg_control == NULL || *used + CMSG_SPACE(len) > m->msg_controllen) {
		m->msg_flags |= MSG_CTRUNC;
		return;
	}
	c = (struct cmsghdr *)((uint8_t *)m->msg_control + *used);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	*used += CMSG_SPACE(len);
}

static void
control(const struct epl_sock *p, struct msghdr *m, const struct hs_desc *d)
{
	uint32_t fl = __atomic_load_n(&p->shm->opt_flags, __ATOMIC_RELAXED);
	size_t used = 0;
	int ifindex = (int)(d->flags >> 16);    /* the dp's port index + 1 */

	if (p->family == AF_INET) {
		if (fl & HS_OPT_PKTINFO) {
			struct in_pktinfo pi = { .ipi_ifindex = ifindex };

			memcpy(&pi.ipi_spec_dst, d->local, 4);
			memcpy(&pi.ipi_addr, d->local, 4);
			put_cmsg(m, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
		if (fl & HS_OPT_RECVTOS)
			put_cmsg(m, &used, IPPROTO_IP, IP_TOS, &d->tos, 1);
	} else {
		if ((fl & HS_OPT_PKTINFO) && d->family == 4) {
			struct in_pktinfo pi = { .ipi_ifindex = ifindex };

			memcpy(&pi.ipi_spec_dst, d->local, 4);
			memcpy(&pi.ipi_addr, d->local, 4);
			put_cmsg(m, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
		if (fl & HS_OPT_PKTINFO6) {
			struct in6_pktinfo pi = { .ipi6_ifindex = (unsigned int)ifindex };

			if (d->family == 4) {
				memcpy((uint8_t *)&pi.ipi6_addr + 10, "\xff\xff", 2);
				memcpy((uint8_t *)&pi.ipi6_addr + 12, d->local, 4);
			} else {
				memcpy(&pi.ipi6_addr, d->local, 16);
			}
			put_cmsg(m, &used, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
		}
		if (fl & HS_OPT_RECVTCLASS) {
			int tc = d->tos;

			put_cmsg(m, &used, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof(tc));
		}
	}
	m->msg_controllen = used;
}

ssize_t
epl_recvmsg(int fd, struct epl_sock *p, struct msghdr *m, int flags)
{
	struct epl_shared *sh = p->sh;
	int64_t deadline = 0, wait_t0 = 0;
	bool spun = false;
	int rc;

	if (flags & MSG_ERRQUEUE) {
		errno = EAGAIN;         /* no error queue: always empty */
		return -1;
	}
	if (flags & MSG_OOB) {
		errno = EINVAL;
		return -1;
	}
	if (p->sh->rcvtimeo_us > 0 && !nonblocking(p, flags))
		deadline = epl_now_us() + p->sh->rcvtimeo_us;
	for (;;) {
		uint32_t cons, prod;
		int64_t queued;
		int err;

		epl_lock(&sh->rx_lock);
		err = (int)__atomic_exchange_n(&p->shm->so_error.v, 0, __ATOMIC_ACQ_REL);
		if (err != 0) {
			epl_unlock(&sh->rx_lock);
			if (wait_t0 != 0)
				epl_spin_note(epl_now_us() - wait_t0);
			errno = err;
			return -1;
		}
		cons = p->shm->rx_cons.v;
		prod = hs_load_acq(&p->shm->rx_prod.v);
		queued = hs_ring_count(prod, cons, p->rx_slots);
		if (queued < 0) {
			epl_unlock(&sh->rx_lock);
			errno = EIO;
			return -1;
		}
		if (queued > 0) {
			struct hs_desc d = p->rx_desc[cons & (p->rx_slots - 1)];
			uint32_t copied = 0;

			if (!hs_desc_in_area(d.off, d.len, p->rx_bytes))
				d.len = 0;      /* never read outside the area */
			for (size_t i = 0; i < m->msg_iovlen && copied < d.len; i++) {
				uint32_t k = d.len - copied;

				if (m->msg_iov[i].iov_len < k)
					k = (uint32_t)m->msg_iov[i].iov_len;
				memcpy(m->msg_iov[i].iov_base, p->rx_data + d.off + copied, k);
				copied += k;
			}
			m->msg_flags = copied < d.len ? MSG_TRUNC : 0;
			if (m->msg_name != NULL)
				epl_hs_to_sa(p, d.addr, d.family, d.port, m->msg_name, &m->msg_namelen);
			if (m->msg_control != NULL || m->msg_controllen != 0)
				control(p, m, &d);
			if (!(flags & MSG_PEEK))
				hs_store_rel(&p->shm->rx_cons.v, cons + 1);
			epl_unlock(&sh->rx_lock);
			if (wait_t0 != 0)
				epl_spin_note(epl_now_us() - wait_t0);
			/* The descriptor may stay readable on an empty ring until
			 * something is about to sleep on it (preload_poll.c) or a
			 * receive finds the ring empty (below); in an epoll set,
			 * whose waits the library does not see, it is made exact
			 * as soon as the ring empties. */
			if (!(flags & MSG_PEEK) &&
			    __atomic_load_n(&sh->epoll_users, __ATOMIC_RELAXED) != 0 &&
			    hs_load_acq(&p->shm->rx_prod.v) == cons + 1)
				epl_unsignal(p);
			return (flags & MSG_TRUNC) ? (ssize_t)d.len : (ssize_t)copied;
		}
		epl_unlock(&sh->rx_lock);
		if (__atomic_load_n(&p->shm->state, __ATOMIC_ACQUIRE) & HS_ST_SHUT_RD)
			return 0;
		if (!nonblocking(p, flags) && epl_spin_us != 0) {
			if (wait_t0 == 0)
				wait_t0 = epl_now_us();
			if (!spun) {
				spun = true;
				if (rx_spin(p, deadline))
					continue;
			}
		}
		rc = epl_unsignal(p);
		if (rc < 0) {
			epl_warn_once("gone-rx", "edgeplane-dp is gone: receives fail with ENETDOWN");
			errno = ENETDOWN;
			return -1;
		}
		if (hs_load_acq(&p->shm->rx_prod.v) != p->shm->rx_cons.v)
			continue;
		if (nonblocking(p, flags)) {
			errno = EAGAIN;
			return -1;
		}
		rc = rx_wait(p, deadline);
		if (rc < 0) {
			if (wait_t0 != 0)
				epl_spin_note(epl_now_us() - wait_t0);
			errno = -rc;
			return -1;
		}
	}
}

int
epl_fionread(struct epl_sock *p)
{
	uint32_t cons = p->shm->rx_cons.v, prod = hs_load_acq(&p->shm->rx_prod.v);
	struct hs_desc d;

	if (hs_ring_count(prod, cons, p->rx_slots) <= 0)
		return 0;
	d = p->rx_desc[cons & (p->rx_slots - 1)];
	return hs_desc_in_area(d.off, d.len, p->rx_bytes) ? (int)d.len : 0;
}

int
epl_siocoutq(struct epl_sock *p)
{
	uint32_t prod = p->shm->tx_prod.v, cons = hs_load_acq(&p->shm->tx_cons.v);
	uint64_t bytes = 0;

	if (hs_ring_count(prod, cons, p->tx_slots) < 0)
		return 0;
	for (uint32_t i = cons; i != prod; i++)
		bytes += p->tx_desc[i & (p->tx_slots - 1)].len;
	return bytes > INT32_MAX ? INT32_MAX : (int)bytes;
}

/* ---- signals: may an interrupted call restart? ---- */

static uint64_t handled_mask, restart_mask;

bool
epl_restart_ok(void)
{
	uint64_t h = __atomic_load_n(&handled_mask, __ATOMIC_RELAXED);

	return (h & ~__atomic_load_n(&restart_mask, __ATOMIC_RELAXED)) == 0;
}

static void
note_handler(int sig, const struct sigaction *sa)
{
	uint64_t bit;

	if (sig <= 0 || sig >= 64 || sa == NULL)
		return;
	bit = 1ull << sig;
	if (sa->sa_handler == SIG_DFL || sa->sa_handler == SIG_IGN) {
		__atomic_and_fetch(&handled_mask, ~bit, __ATOMIC_RELAXED);
		return;
	}
	__atomic_or_fetch(&handled_mask, bit, __ATOMIC_RELAXED);
	if (sa->sa_flags & SA_RESTART)
		__atomic_or_fetch(&restart_mask, bit, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&restart_mask, ~bit, __ATOMIC_RELAXED);
}

EPL_EXPORT int
sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	int rc = epl_libc.sigaction(sig, sa, old);

	if (rc == 0)
		note_handler(sig, sa);
	return rc;
}

/* signal() installs BSD semantics: SA_RESTART. */
EPL_EXPORT sighandler_t
signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- the calls ---- */

static struct epl_sock *
accel(int fd)
{
	struct epl_sock *p = epl_get(fd);

	if (p != NULL && !p->accel) {
		epl_put(p);
		return NULL;
	}
	return p;
}

EPL_EXPORT ssize_t
sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct epl_sock *p = epl_get(fd);
	ssize_t rc;
	int err;

	if (p == NULL)
		return epl_libc.sendmsg(fd, m, flags);
	if (!p->accel) {
		struct epl_sock *cand = p;

		p = epl_send_decide(fd, cand, m->msg_name, m->msg_namelen, &err);
		epl_put(cand);
		if (p == NULL) {
			if (err != 0) {
				errno = err;
				return -1;
			}
			return epl_libc.sendmsg(fd, m, flags);
		}
	}
	rc = epl_sendmsg(fd, p, m, flags);
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_name = (void *)to, .msg_namelen = to != NULL ? tolen : 0,
			    .msg_iov = &iov, .msg_iovlen = 1 };
	struct epl_sock *p = epl_get(fd);

	if (p == NULL)
		return epl_libc.sendto(fd, buf, len, flags, to, tolen);
	epl_put(p);
	return sendmsg(fd, &m, flags);
}

EPL_EXPORT ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	struct epl_sock *p = accel(fd);
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.send(fd, buf, len, flags);
	rc = epl_sendmsg(fd, p, &m, flags);
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
write(int fd, const void *buf, size_t len)
{
	struct epl_sock *p = accel(fd);
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.write(fd, buf, len);
	rc = epl_sendmsg(fd, p, &m, 0);
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
writev(int fd, const struct iovec *iov, int n)
{
	struct epl_sock *p = accel(fd);
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n < 0 ? 0 : (size_t)n };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.writev(fd, iov, n);
	if (n < 0 || n > IOV_MAX) {
		epl_put(p);
		errno = EINVAL;
		return -1;
	}
	rc = epl_sendmsg(fd, p, &m, 0);
	epl_put(p);
	return rc;
}

EPL_EXPORT int
sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	struct epl_sock *p = epl_get(fd);
	unsigned int i;

	if (p == NULL || n == 0) {
		epl_put(p);
		return epl_libc.sendmmsg(fd, v, n, flags);
	}
	epl_put(p);
	for (i = 0; i < n; i++) {
		ssize_t k = sendmsg(fd, &v[i].msg_hdr, flags);

		if (k < 0)
			return i == 0 ? -1 : (int)i;
		v[i].msg_len = (unsigned int)k;
	}
	return (int)i;
}

EPL_EXPORT ssize_t
recvmsg(int fd, struct msghdr *m, int flags)
{
	struct epl_sock *p = accel(fd);
	ssize_t rc;

	if (p == NULL)
		return epl_libc.recvmsg(fd, m, flags);
	rc = epl_recvmsg(fd, p, m, flags);
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	struct epl_sock *p = accel(fd);
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_name = from, .msg_namelen = fromlen != NULL ? *fromlen : 0,
			    .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.recvfrom(fd, buf, len, flags, from, fromlen);
	if (from == NULL)
		m.msg_name = NULL;
	rc = epl_recvmsg(fd, p, &m, flags);
	if (rc >= 0 && from != NULL && fromlen != NULL)
		*fromlen = m.msg_namelen;
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

EPL_EXPORT ssize_t
read(int fd, void *buf, size_t len)
{
	struct epl_sock *p = accel(fd);
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.read(fd, buf, len);
	rc = epl_recvmsg(fd, p, &m, 0);
	epl_put(p);
	return rc;
}

EPL_EXPORT ssize_t
readv(int fd, const struct iovec *iov, int n)
{
	struct epl_sock *p = accel(fd);
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n < 0 ? 0 : (size_t)n };
	ssize_t rc;

	if (p == NULL)
		return epl_libc.readv(fd, iov, n);
	if (n < 0 || n > IOV_MAX) {
		epl_put(p);
		errno = EINVAL;
		return -1;
	}
	rc = epl_recvmsg(fd, p, &m, 0);
	epl_put(p);
	return rc;
}

EPL_EXPORT int
recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *timeout)
{
	struct epl_sock *p = accel(fd);
	int64_t deadline = 0;
	unsigned int i;

	if (p == NULL)
		return epl_libc.recvmmsg(fd, v, n, flags, timeout);
	if (timeout != NULL) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000) {
			epl_put(p);
			errno = EINVAL;
			return -1;
		}
		deadline = epl_now_us() + timeout->tv_sec * 1000000 + timeout->tv_nsec / 1000;
	}
	for (i = 0; i < n; i++) {
		int f = flags & ~MSG_WAITFORONE;
		ssize_t k;

		/* MSG_WAITFORONE: only the first receive may block. */
		if (i > 0 && (flags & MSG_WAITFORONE))
			f |= MSG_DONTWAIT;
		k = epl_recvmsg(fd, p, &v[i].msg_hdr, f);
		if (k < 0)
			break;
		v[i].msg_len = (unsigned int)k;
		/* Linux checks the timeout after each datagram, as here. */
		if (deadline != 0 && epl_now_us() >= deadline) {
			i++;
			break;
		}
	}
	epl_put(p);
	return i == 0 ? -1 : (int)i;
}

/* _FORTIFY_SOURCE builds (Debian's iperf3) call the checking variants. */
EPL_EXPORT ssize_t
__read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__builtin_trap();
	return read(fd, buf, len);
}

EPL_EXPORT ssize_t
__recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__builtin_trap();
	return recv(fd, buf, len, flags);
}

EPL_EXPORT ssize_t
__recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *from,
	       socklen_t *fromlen)
{
	if (len > buflen)
		__builtin_trap();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}
