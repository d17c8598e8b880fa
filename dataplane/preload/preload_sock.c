/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Socket calls that are not about moving datagrams: socket, bind, connect,
 * names, options, shutdown, close, dup, fcntl, ioctl.  Each one either
 * passes to libc (a descriptor the library does not own) or acts on the
 * accelerated socket with the kernel's semantics and errno values.
 *
 * When a candidate becomes accelerated (epl_open): the kernel UDP socket's
 * options are read back from the kernel (SO_REUSEADDR, SO_REUSEPORT,
 * IPV6_V6ONLY, SO_RCVTIMEO, ...), a socketpair is made, OPEN carries both
 * ends to the dp, and dup3() puts the application's end in the place of
 * the kernel socket, keeping the descriptor number, O_NONBLOCK and
 * FD_CLOEXEC.  A candidate's first bind/connect/sendto decides for good:
 * the dp's answer "not mine" leaves a plain kernel socket (forgotten by
 * the table), except bind(any, 0), after which the first connect or
 * sendto still decides.
 */
/* Both fcntl and fcntl64 (sendfile, sendfile64) are exported, so the
 * header's redirection of one name to the other must be off here. */
#undef _FILE_OFFSET_BITS
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "hs_ring.h"
#include "preload.h"

#ifndef SO_RCVTIMEO_NEW
#define SO_RCVTIMEO_NEW 66
#define SO_SNDTIMEO_NEW 67
#endif

static const uint8_t v4mapped_pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int
epl_sa_to_hs(const struct epl_sock *p, const struct sockaddr *sa, socklen_t len,
	     struct hs_sockaddr *out, bool allow_unspec)
{
	memset(out, 0, sizeof(*out));
	if (sa == NULL || len < (socklen_t)sizeof(sa_family_t))
		return -EINVAL;
	if (sa->sa_family == AF_UNSPEC && allow_unspec)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		if (len < (socklen_t)sizeof(*in))
			return -EINVAL;
		out->port = in->sin_port;
		if (p->family == AF_INET) {
			out->family = 4;
			memcpy(out->addr, &in->sin_addr, 4);
		} else {
			/* An IPv4 address on a dual-stack socket: v4-mapped. */
			out->family = 6;
			memcpy(out->addr, v4mapped_pfx, 12);
			memcpy(out->addr + 12, &in->sin_addr, 4);
		}
		return 0;
	}
	if (sa->sa_family == AF_INET6 && p->family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (len < (socklen_t)sizeof(*in6))
			return -EINVAL;
		out->family = 6;
		out->port = in6->sin6_port;
		memcpy(out->addr, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void
epl_hs_to_sa(const struct epl_sock *p, const uint8_t *addr, uint8_t family, uint16_t port,
	     struct sockaddr *sa, socklen_t *len)
{
	struct sockaddr_storage ss;
	socklen_t full;

	memset(&ss, 0, sizeof(ss));
	if (p->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = port;
		memcpy(&in->sin_addr, addr, 4);
		full = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = port;
		if (family == 4) {
			memcpy(&in6->sin6_addr, v4mapped_pfx, 12);
			memcpy((uint8_t *)&in6->sin6_addr + 12, addr, 4);
		} else {
			memcpy(&in6->sin6_addr, addr, 16);
		}
		full = sizeof(*in6);
	}
	if (sa != NULL && len != NULL)
		memcpy(sa, &ss, *len < full ? *len : full);
	if (len != NULL)
		*len = full;
}

/* ---- becoming accelerated ---- */

static int
kopt(int fd, int level, int name)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return epl_libc.getsockopt(fd, level, name, &v, &l) == 0 ? v : 0;
}

static int64_t
ktimeo(int fd, int name)
{
	struct timeval tv = { 0, 0 };
	socklen_t l = sizeof(tv);

	if (epl_libc.getsockopt(fd, SOL_SOCKET, name, &tv, &l) < 0)
		return 0;
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

int
epl_open(int fd, struct epl_sock *cand, uint16_t action, const struct sockaddr *sa,
	 socklen_t len, struct epl_sock **out)
{
	struct hs_req q = { .h.op = HS_OP_OPEN, .action = action };
	struct hs_resp r;
	struct stat st;
	struct epl_sock *p;
	int sv[2], rfd = -1, n = 0, rc, fl, fdfl;
	int64_t rto, sto;

	*out = NULL;
	rc = epl_sa_to_hs(cand, sa, len, &q.addr, false);
	if (rc < 0)
		return rc;
	q.family = cand->family == AF_INET ? 4 : 6;
	if (action != HS_OPEN_BIND) {
		struct sockaddr_storage ls;
		socklen_t ll = sizeof(ls);

		/* A kernel socket bound to the wildcard keeps its port. */
		if (epl_libc.getsockname(fd, (struct sockaddr *)&ls, &ll) == 0)
			q.want_port = ls.ss_family == AF_INET ?
				((struct sockaddr_in *)&ls)->sin_port :
				((struct sockaddr_in6 *)&ls)->sin6_port;
	}
	q.opt_flags = (kopt(fd, SOL_SOCKET, SO_REUSEADDR) ? HS_OPT_REUSEADDR : 0) |
		      (kopt(fd, SOL_SOCKET, SO_REUSEPORT) ? HS_OPT_REUSEPORT : 0) |
		      (kopt(fd, SOL_SOCKET, SO_BROADCAST) ? HS_OPT_BROADCAST : 0);
	if (cand->family == AF_INET6)
		q.opt_flags |= (kopt(fd, IPPROTO_IPV6, IPV6_V6ONLY) ? HS_OPT_V6ONLY : 0) |
			       (kopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO) ? HS_OPT_PKTINFO6 : 0) |
			       (kopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS) ? HS_OPT_RECVTCLASS : 0);
	else
		q.opt_flags |= (kopt(fd, IPPROTO_IP, IP_PKTINFO) ? HS_OPT_PKTINFO : 0) |
			       (kopt(fd, IPPROTO_IP, IP_RECVTOS) ? HS_OPT_RECVTOS : 0);
	q.opt_tos = (uint32_t)(cand->family == AF_INET ? kopt(fd, IPPROTO_IP, IP_TOS) :
							  kopt(fd, IPPROTO_IPV6, IPV6_TCLASS));
	q.opt_rcvbuf = cand->cand_rcvbuf;
	q.opt_sndbuf = cand->cand_sndbuf;
	rto = ktimeo(fd, SO_RCVTIMEO);
	sto = ktimeo(fd, SO_SNDTIMEO);
	fl = epl_libc.fcntl(fd, F_GETFL);
	fdfl = epl_libc.fcntl(fd, F_GETFD);
	if (fl < 0 || fdfl < 0)
		return -EBADF;
	if (fl & O_NONBLOCK)
		q.opt_flags |= HS_OPT_NONBLOCK;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (fstat(sv[0], &st) < 0) {
		rc = -errno;
		goto fail_sv;
	}
	q.ino = (uint64_t)st.st_ino;
	rc = epl_request(&q, sv, 2, &r, &rfd, 1, &n);
	if (rc < 0)
		goto fail_sv;
	if (r.err == HS_ERR_NOT_MINE) {
		rc = HS_ERR_NOT_MINE;
		goto fail_sv;
	}
	if (r.err != 0 || n != 1) {
		rc = r.err != 0 ? -r.err : -EPROTO;
		goto fail_sv;
	}
	epl_libc.close(sv[1]);
	p = epl_alloc();
	if (p == NULL) {
		epl_libc.close(rfd);
		epl_libc.close(sv[0]);
		return -ENOMEM;
	}
	rc = epl_map_region(p, rfd, r.region_size, true);
	epl_libc.close(rfd);
	if (rc < 0) {
		epl_put(p);
		epl_libc.close(sv[0]);
		return rc;
	}
	p->sh->rcvtimeo_us = rto;
	p->sh->sndtimeo_us = sto;
	if (fl & O_NONBLOCK)
		epl_libc.fcntl(sv[0], F_SETFL, O_NONBLOCK);
	/* The socket's descriptor number, close-on-exec flag and all: the
	 * kernel UDP socket goes away here. */
	if (epl_libc.dup3(sv[0], fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		rc = -errno;
		epl_put(p);
		epl_libc.close(sv[0]);
		return rc;
	}
	rc = epl_own_fd(p, sv[0]);
	epl_libc.close(sv[0]);
	if (rc < 0) {
		epl_put(p);
		return rc;
	}
	epl_set(fd, p);
	epl_debug("fd %d: edgeplane-dp socket %u (worker %u)", fd, p->sock_id, p->worker);
	*out = p;
	return 0;
fail_sv:
	epl_libc.close(sv[0]);
	epl_libc.close(sv[1]);
	return rc;
}

/* The candidate's first bind/connect/sendto: accelerate, or let it be a
 * kernel socket from now on.  Returns the accelerated socket (referenced),
 * NULL for "the kernel's", or sets *err. */
static struct epl_sock *
decide(int fd, struct epl_sock *cand, uint16_t action, const struct sockaddr *sa, socklen_t len,
       int *err)
{
	struct epl_sock *p = NULL;
	int rc = epl_open(fd, cand, action, sa, len, &p);

	*err = 0;
	if (rc == 0) {
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
		epl_put(p);     /* the creator's reference; the table and ours remain */
		return p;
	}
	if (rc == -ENETDOWN && epl_strict) {
		*err = ENETDOWN;
		return NULL;
	}
	if (rc != HS_ERR_NOT_MINE && rc != -ENETDOWN) {
		/* The dp took the socket and refused the operation (port in use,
		 * address not available): the application gets that error, and
		 * the kernel socket stays as it was. */
		*err = -rc;
		return NULL;
	}
	epl_debug("fd %d: stays with the kernel", fd);
	return NULL;
}

static void
forget_candidate(int fd)
{
	epl_put(epl_take(fd));
}

/* ---- the calls ---- */

EPL_EXPORT int
socket(int domain, int type, int protocol)
{
	int fd = epl_libc.socket(domain, type, protocol);
	struct epl_sock *p;

	if (fd < 0 || !epl_enabled() || (domain != AF_INET && domain != AF_INET6) ||
	    (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_DGRAM ||
	    (protocol != 0 && protocol != IPPROTO_UDP))
		return fd;
	p = epl_alloc();
	if (p == NULL)
		return fd;
	p->family = domain;
	epl_set(fd, p);
	epl_put(p);
	return fd;
}

EPL_EXPORT int
bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct epl_sock *p = epl_get(fd);
	struct hs_req q = { .h.op = HS_OP_BIND };
	struct hs_resp r;
	int rc, err;

	if (p == NULL)
		return epl_libc.bind(fd, sa, len);
	if (!p->accel) {
		struct epl_sock *a = NULL;

		/* Linux refuses an IPv4 address on an AF_INET6 socket here. */
		if (p->family == AF_INET6 && sa != NULL && len >= sizeof(sa_family_t) &&
		    sa->sa_family != AF_INET6) {
			epl_put(p);
			return epl_libc.bind(fd, sa, len);
		}
		a = decide(fd, p, HS_OPEN_BIND, sa, len, &err);
		if (a != NULL) {
			epl_put(a);
			epl_put(p);
			return 0;
		}
		if (err != 0) {
			epl_put(p);
			errno = err;
			return -1;
		}
		rc = epl_libc.bind(fd, sa, len);
		/* bind(any, 0): the first connect or sendto still decides. */
		{
			struct sockaddr_storage ss;
			socklen_t l = sizeof(ss);
			bool wild0 = false;

			if (rc == 0 && epl_libc.getsockname(fd, (struct sockaddr *)&ss, &l) == 0) {
				if (ss.ss_family == AF_INET)
					wild0 = ((struct sockaddr_in *)&ss)->sin_addr.s_addr == 0 &&
						sa != NULL && ((const struct sockaddr_in *)sa)->sin_port == 0;
				else
					wild0 = memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr,
						       &in6addr_any, 16) == 0 && sa != NULL &&
						((const struct sockaddr_in6 *)sa)->sin6_port == 0;
			}
			if (rc == 0 && !wild0)
				forget_candidate(fd);
		}
		epl_put(p);
		return rc;
	}
	rc = epl_sa_to_hs(p, sa, len, &q.addr, false);
	if (rc == 0) {
		rc = epl_request(&q, &fd, 1, &r, NULL, 0, NULL);
		if (rc == 0)
			rc = -r.err;
	}
	epl_put(p);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

EPL_EXPORT int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct epl_sock *p = epl_get(fd);
	struct hs_req q = { .h.op = HS_OP_CONNECT };
	struct hs_resp r;
	int rc, err;

	if (p == NULL)
		return epl_libc.connect(fd, sa, len);
	if (!p->accel) {
		struct epl_sock *a;

		if (sa == NULL || len < sizeof(sa_family_t) || sa->sa_family == AF_UNSPEC) {
			epl_put(p);
			return epl_libc.connect(fd, sa, len);
		}
		a = decide(fd, p, HS_OPEN_CONNECT, sa, len, &err);
		epl_put(p);
		if (a != NULL) {
			epl_put(a);
			return 0;
		}
		if (err != 0) {
			errno = err;
			return -1;
		}
		forget_candidate(fd);
		return epl_libc.connect(fd, sa, len);
	}
	rc = epl_sa_to_hs(p, sa, len, &q.addr, true);
	if (rc == 0) {
		rc = epl_request(&q, &fd, 1, &r, NULL, 0, NULL);
		if (rc == 0)
			rc = -r.err;
	}
	epl_put(p);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

struct epl_sock *
epl_send_decide(int fd, struct epl_sock *p, const struct sockaddr *to, socklen_t tolen, int *err)
{
	struct epl_sock *a;

	*err = 0;
	if (to == NULL || tolen < sizeof(sa_family_t) || to->sa_family == AF_UNSPEC)
		return NULL;
	a = decide(fd, p, HS_OPEN_SEND, to, tolen, err);
	if (a == NULL && *err == 0) {
		/* The kernel sends it; unless it was bind(any, 0) the socket
		 * is the kernel's now (it auto-binds there). */
		forget_candidate(fd);
	}
	return a;
}

EPL_EXPORT int
listen(int fd, int backlog)
{
	struct epl_sock *p = epl_get(fd);

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.listen(fd, backlog);
	}
	epl_put(p);
	errno = EOPNOTSUPP;
	return -1;
}

EPL_EXPORT int
accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	struct epl_sock *p = epl_get(fd);

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.accept4(fd, sa, len, flags);
	}
	epl_put(p);
	errno = EOPNOTSUPP;
	return -1;
}

EPL_EXPORT int
accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct epl_sock *p = epl_get(fd);

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.accept(fd, sa, len);
	}
	epl_put(p);
	errno = EOPNOTSUPP;
	return -1;
}

EPL_EXPORT int
getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct epl_sock *p = epl_get(fd);
	struct hs_sockaddr a;

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.getsockname(fd, sa, len);
	}
	if (len == NULL) {
		epl_put(p);
		errno = EFAULT;
		return -1;
	}
	a = p->shm->local;
	epl_hs_to_sa(p, a.addr, a.family, a.port, sa, len);
	epl_put(p);
	return 0;
}

EPL_EXPORT int
getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct epl_sock *p = epl_get(fd);
	struct hs_sockaddr a;

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.getpeername(fd, sa, len);
	}
	if (!(__atomic_load_n(&p->shm->state, __ATOMIC_ACQUIRE) & HS_ST_CONNECTED)) {
		epl_put(p);
		errno = ENOTCONN;
		return -1;
	}
	if (len == NULL) {
		epl_put(p);
		errno = EFAULT;
		return -1;
	}
	a = p->shm->peer;
	epl_hs_to_sa(p, a.addr, a.family, a.port, sa, len);
	epl_put(p);
	return 0;
}

static void
set_flag(struct epl_sock *p, uint32_t bit, bool on)
{
	if (on)
		__atomic_or_fetch(&p->shm->opt_flags, bit, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&p->shm->opt_flags, ~bit, __ATOMIC_RELAXED);
}

/* ENOPROTOOPT, said once per (level, option). */
static int
unsupported_opt(int level, int name)
{
	static uint32_t seen[64];
	static unsigned int n_seen;
	uint32_t key = (uint32_t)level << 16 | ((uint32_t)name & 0xffff);
	bool said = false;

	for (unsigned int i = 0; i < __atomic_load_n(&n_seen, __ATOMIC_ACQUIRE) && i < 64; i++)
		said = said || seen[i] == key;
	if (!said) {
		unsigned int i = __atomic_fetch_add(&n_seen, 1, __ATOMIC_ACQ_REL);

		if (i < 64)
			seen[i] = key;
		epl_warn("socket option level %d name %d is not supported on edgeplane-dp UDP "
			 "sockets: ENOPROTOOPT", level, name);
	}
	errno = ENOPROTOOPT;
	return -1;
}

static int
int_arg(const void *v, socklen_t len, int *out)
{
	if (v == NULL || len < (socklen_t)sizeof(int)) {
		if (v != NULL && len == 1) {
			*out = *(const uint8_t *)v;     /* Linux takes a byte for IP_TOS and friends */
			return 0;
		}
		errno = EINVAL;
		return -1;
	}
	memcpy(out, v, sizeof(int));
	return 0;
}

static int
setopt_accel(int fd, struct epl_sock *p, int level, int name, const void *v, socklen_t len)
{
	int x;

	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVTIMEO: case SO_SNDTIMEO: case SO_RCVTIMEO_NEW: case SO_SNDTIMEO_NEW: {
			struct timeval tv;
			int64_t us;

			if (v == NULL || len < (socklen_t)sizeof(tv)) {
				errno = EINVAL;
				return -1;
			}
			memcpy(&tv, v, sizeof(tv));
			if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
				errno = EDOM;
				return -1;
			}
			us = tv.tv_sec < 0 ? 0 : (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
			if (name == SO_RCVTIMEO || name == SO_RCVTIMEO_NEW)
				p->sh->rcvtimeo_us = us;
			else
				p->sh->sndtimeo_us = us;
			return 0;
		}
		case SO_LINGER:
			if (v == NULL || len < (socklen_t)sizeof(struct linger)) {
				errno = EINVAL;
				return -1;
			}
			memcpy(&p->sh->linger, v, sizeof(struct linger));
			return 0;
		default:
			break;
		}
		if (int_arg(v, len, &x) < 0)
			return -1;
		switch (name) {
		case SO_RCVBUF: case SO_RCVBUFFORCE:
			__atomic_store_n(&p->shm->opt_rcvbuf, x < 0 ? 0u : (uint32_t)x, __ATOMIC_RELAXED);
			return 0;
		case SO_SNDBUF: case SO_SNDBUFFORCE:
			__atomic_store_n(&p->shm->opt_sndbuf, x < 0 ? 0u : (uint32_t)x, __ATOMIC_RELAXED);
			return 0;
		case SO_REUSEADDR: set_flag(p, HS_OPT_REUSEADDR, x != 0); return 0;
		case SO_REUSEPORT: set_flag(p, HS_OPT_REUSEPORT, x != 0); return 0;
		case SO_BROADCAST: set_flag(p, HS_OPT_BROADCAST, x != 0); return 0;
		case SO_PRIORITY: p->sh->priority = x; return 0;
		case SO_KEEPALIVE: p->sh->keepalive = x; return 0;
		default:
			return unsupported_opt(level, name);
		}
	}
	if (level == IPPROTO_IP && p->family == AF_INET) {
		if (int_arg(v, len, &x) < 0)
			return -1;
		switch (name) {
		case IP_TOS:
			__atomic_store_n(&p->shm->opt_tos, (uint32_t)x & 0xfc, __ATOMIC_RELAXED);
			return 0;
		case IP_PKTINFO: set_flag(p, HS_OPT_PKTINFO, x != 0); return 0;
		case IP_RECVTOS: set_flag(p, HS_OPT_RECVTOS, x != 0); return 0;
		case IP_MTU_DISCOVER:
			/* We fragment (rte_ip_frag): DONT and WANT are what we do. */
			if (x == IP_PMTUDISC_DONT || x == IP_PMTUDISC_WANT) {
				p->sh->mtu_discover = x;
				return 0;
			}
			return unsupported_opt(level, name);
		default:
			return unsupported_opt(level, name);
		}
	}
	if (level == IPPROTO_IPV6 && p->family == AF_INET6) {
		if (int_arg(v, len, &x) < 0)
			return -1;
		switch (name) {
		case IPV6_V6ONLY:
			/* Linux: only before bind; ours are always bound. */
			errno = EINVAL;
			return -1;
		case IPV6_TCLASS:
			if (x < -1 || x > 255) {
				errno = EINVAL;
				return -1;
			}
			__atomic_store_n(&p->shm->opt_tos, x < 0 ? 0u : (uint32_t)x, __ATOMIC_RELAXED);
			return 0;
		case IPV6_RECVPKTINFO: set_flag(p, HS_OPT_PKTINFO6, x != 0); return 0;
		case IPV6_RECVTCLASS: set_flag(p, HS_OPT_RECVTCLASS, x != 0); return 0;
		default:
			return unsupported_opt(level, name);
		}
	}
	(void)fd;
	return unsupported_opt(level, name);
}

EPL_EXPORT int
setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
	struct epl_sock *p = epl_get(fd);
	int rc;

	if (p == NULL)
		return epl_libc.setsockopt(fd, level, name, v, len);
	if (!p->accel) {
		rc = epl_libc.setsockopt(fd, level, name, v, len);
		if (rc == 0 && level == SOL_SOCKET && v != NULL && len >= (socklen_t)sizeof(int)) {
			if (name == SO_RCVBUF || name == SO_RCVBUFFORCE)
				memcpy(&p->cand_rcvbuf, v, sizeof(int));
			if (name == SO_SNDBUF || name == SO_SNDBUFFORCE)
				memcpy(&p->cand_sndbuf, v, sizeof(int));
		}
		epl_put(p);
		return rc;
	}
	rc = setopt_accel(fd, p, level, name, v, len);
	epl_put(p);
	return rc;
}

static int
put_int(void *v, socklen_t *len, int x)
{
	if (v == NULL || len == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (*len >= (socklen_t)sizeof(int)) {
		memcpy(v, &x, sizeof(int));
		*len = sizeof(int);
	} else if (*len > 0) {
		*(uint8_t *)v = (uint8_t)x;     /* Linux answers a short buffer with one byte */
		*len = 1;
	}
	return 0;
}

/* SO_RCVBUF as Linux reports it: twice what was set, here capped by the
 * ring; with nothing set, the whole ring. */
static int
eff_buf(uint32_t set, uint32_t bytes)
{
	if (set == 0 || set > bytes / 2)
		return (int)bytes;
	return (int)(set * 2 < 2048 ? 2048 : set * 2);
}

static int
getopt_accel(struct epl_sock *p, int level, int name, void *v, socklen_t *len)
{
	uint32_t fl = __atomic_load_n(&p->shm->opt_flags, __ATOMIC_RELAXED);

	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_TYPE: return put_int(v, len, SOCK_DGRAM);
		case SO_DOMAIN: return put_int(v, len, p->family);
		case SO_PROTOCOL: return put_int(v, len, IPPROTO_UDP);
		case SO_ERROR:
			return put_int(v, len, (int)__atomic_exchange_n(&p->shm->so_error.v, 0,
									__ATOMIC_ACQ_REL));
		case SO_RCVBUF: return put_int(v, len, eff_buf(p->shm->opt_rcvbuf, p->rx_bytes));
		case SO_SNDBUF: return put_int(v, len, eff_buf(p->shm->opt_sndbuf, p->tx_bytes));
		case SO_REUSEADDR: return put_int(v, len, !!(fl & HS_OPT_REUSEADDR));
		case SO_REUSEPORT: return put_int(v, len, !!(fl & HS_OPT_REUSEPORT));
		case SO_BROADCAST: return put_int(v, len, !!(fl & HS_OPT_BROADCAST));
		case SO_ACCEPTCONN: return put_int(v, len, 0);
		case SO_PRIORITY: return put_int(v, len, p->sh->priority);
		case SO_KEEPALIVE: return put_int(v, len, p->sh->keepalive);
		case SO_RCVTIMEO: case SO_SNDTIMEO: case SO_RCVTIMEO_NEW: case SO_SNDTIMEO_NEW: {
			int64_t us = (name == SO_RCVTIMEO || name == SO_RCVTIMEO_NEW) ?
				     p->sh->rcvtimeo_us : p->sh->sndtimeo_us;
			struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };

			if (v == NULL || len == NULL || *len < (socklen_t)sizeof(tv)) {
				errno = EINVAL;
				return -1;
			}
			memcpy(v, &tv, sizeof(tv));
			*len = sizeof(tv);
			return 0;
		}
		case SO_LINGER:
			if (v == NULL || len == NULL || *len < (socklen_t)sizeof(struct linger)) {
				errno = EINVAL;
				return -1;
			}
			memcpy(v, &p->sh->linger, sizeof(struct linger));
			*len = sizeof(struct linger);
			return 0;
		default:
			return unsupported_opt(level, name);
		}
	}
	if (level == IPPROTO_IP && p->family == AF_INET) {
		switch (name) {
		case IP_TOS: return put_int(v, len, (int)p->shm->opt_tos);
		case IP_PKTINFO: return put_int(v, len, !!(fl & HS_OPT_PKTINFO));
		case IP_RECVTOS: return put_int(v, len, !!(fl & HS_OPT_RECVTOS));
		case IP_MTU_DISCOVER:
			return put_int(v, len, p->sh->mtu_discover < 0 ? IP_PMTUDISC_WANT :
					       p->sh->mtu_discover);
		default: return unsupported_opt(level, name);
		}
	}
	if (level == IPPROTO_IPV6 && p->family == AF_INET6) {
		switch (name) {
		case IPV6_V6ONLY: return put_int(v, len, !!(fl & HS_OPT_V6ONLY));
		case IPV6_TCLASS: return put_int(v, len, (int)p->shm->opt_tos);
		case IPV6_RECVPKTINFO: return put_int(v, len, !!(fl & HS_OPT_PKTINFO6));
		case IPV6_RECVTCLASS: return put_int(v, len, !!(fl & HS_OPT_RECVTCLASS));
		default: return unsupported_opt(level, name);
		}
	}
	return unsupported_opt(level, name);
}

EPL_EXPORT int
getsockopt(int fd, int level, int name, void *v, socklen_t *len)
{
	struct epl_sock *p = epl_get(fd);
	int rc;

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.getsockopt(fd, level, name, v, len);
	}
	rc = getopt_accel(p, level, name, v, len);
	epl_put(p);
	return rc;
}

EPL_EXPORT int
shutdown(int fd, int how)
{
	struct epl_sock *p = epl_get(fd);
	struct hs_req q = { .h.op = HS_OP_SHUTDOWN, .how = (uint16_t)how };
	struct hs_resp r;
	int rc;

	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.shutdown(fd, how);
	}
	if (how < SHUT_RD || how > SHUT_RDWR) {
		epl_put(p);
		errno = EINVAL;
		return -1;
	}
	rc = epl_request(&q, &fd, 1, &r, NULL, 0, NULL);
	epl_put(p);
	if (rc < 0 || r.err != 0) {
		errno = rc < 0 ? -rc : r.err;
		return -1;
	}
	return 0;
}

EPL_EXPORT int
close(int fd)
{
	struct epl_sock *p = epl_take(fd);
	int rc = epl_libc.close(fd);

	epl_put(p);
	return rc;
}

EPL_EXPORT int
close_range(unsigned int lo, unsigned int hi, int flags)
{
	int rc = epl_libc.close_range(lo, hi, flags);

	/* CLOSE_RANGE_CLOEXEC only marks them: they stay open. */
	if (rc == 0 && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */))
		epl_forget_range(lo, hi);
	return rc;
}

EPL_EXPORT void
closefrom(int lo)
{
	epl_libc.closefrom(lo);
	if (lo >= 0)
		epl_forget_range((unsigned int)lo, UINT32_MAX);
}

static int
dup_to(int old, int nfd)
{
	struct epl_sock *p;

	if (nfd < 0)
		return nfd;
	p = epl_get(old);
	epl_set(nfd, p);        /* NULL clears what dup2 replaced */
	epl_put(p);
	return nfd;
}

EPL_EXPORT int
dup(int fd)
{
	return dup_to(fd, epl_libc.dup(fd));
}

EPL_EXPORT int
dup2(int old, int nfd)
{
	int rc = epl_libc.dup2(old, nfd);

	if (rc < 0 || old == nfd)
		return rc;
	return dup_to(old, rc);
}

EPL_EXPORT int
dup3(int old, int nfd, int flags)
{
	return dup_to(old, epl_libc.dup3(old, nfd, flags));
}

static int
do_fcntl(int fd, int cmd, unsigned long arg)
{
	struct epl_sock *p;
	int rc;

	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		return dup_to(fd, epl_libc.fcntl(fd, cmd, arg));
	case F_SETFL:
		rc = epl_libc.fcntl(fd, cmd, arg);
		p = epl_get(fd);
		if (rc == 0 && p != NULL && p->accel)
			set_flag(p, HS_OPT_NONBLOCK, (arg & O_NONBLOCK) != 0);
		epl_put(p);
		return rc;
	default:
		return epl_libc.fcntl(fd, cmd, arg);
	}
}

EPL_EXPORT int
fcntl(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	return do_fcntl(fd, cmd, arg);
}

EPL_EXPORT int
fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	return do_fcntl(fd, cmd, arg);
}

EPL_EXPORT int
ioctl(int fd, unsigned long req, ...)
{
	struct epl_sock *p;
	va_list ap;
	void *arg;
	int rc;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	p = epl_get(fd);
	if (p == NULL || !p->accel) {
		epl_put(p);
		return epl_libc.ioctl(fd, req, arg);
	}
	switch (req) {
	case FIONBIO:
		rc = epl_libc.ioctl(fd, req, arg);
		if (rc == 0 && arg != NULL)
			set_flag(p, HS_OPT_NONBLOCK, *(int *)arg != 0);
		break;
	case FIONREAD:
		rc = arg == NULL ? (errno = EFAULT, -1) : (*(int *)arg = epl_fionread(p), 0);
		break;
	case SIOCOUTQ:
		rc = arg == NULL ? (errno = EFAULT, -1) : (*(int *)arg = epl_siocoutq(p), 0);
		break;
	default:
		/* Interface ioctls (SIOCGIFADDR, ...) work on any socket. */
		rc = epl_libc.ioctl(fd, req, arg);
		break;
	}
	epl_put(p);
	return rc;
}

static ssize_t
no_zero_copy(const char *call)
{
	epl_warn_once(call, "%s() to or from an edgeplane-dp UDP socket is not supported: EINVAL",
		      call);
	errno = EINVAL;
	return -1;
}

EPL_EXPORT ssize_t
sendfile(int out, int in, off_t *off, size_t n)
{
	struct epl_sock *p = epl_get(out), *q = epl_get(in);
	bool ours = (p != NULL && p->accel) || (q != NULL && q->accel);

	epl_put(p);
	epl_put(q);
	return ours ? no_zero_copy("sendfile") : epl_libc.sendfile(out, in, off, n);
}

EPL_EXPORT ssize_t
sendfile64(int out, int in, off_t *off, size_t n)
{
	return sendfile(out, in, off, n);
}

EPL_EXPORT ssize_t
splice(int in, off_t *oin, int out, off_t *oout, size_t n, unsigned int flags)
{
	struct epl_sock *p = epl_get(out), *q = epl_get(in);
	bool ours = (p != NULL && p->accel) || (q != NULL && q->accel);

	epl_put(p);
	epl_put(q);
	return ours ? no_zero_copy("splice") : epl_libc.splice(in, oin, out, oout, n, flags);
}
