/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attach socket: how applications (the preload library) reach the
 * host stack.  Control thread only; one epoll set watched by the engine's
 * control loop (ep_ctl_watch) holds
 *
 *   the listening socket          -> accept, peer credentials
 *   each application's connection -> one request, one reply (hs_abi.h)
 *   each socket's dp end          -> hang-up: every copy of the
 *                                    application's descriptor is closed
 *                                    (close, exit, crash, exec with
 *                                    close-on-exec): the socket is freed
 *
 * Requests are fixed-size messages on SOCK_SEQPACKET (boundaries kept by
 * the kernel) with descriptors as SCM_RIGHTS.  Every request is hostile:
 * wrong size, magic, version or descriptor count is refused with EINVAL; a
 * connection that stops reading its replies is dropped.  An operation on a
 * socket carries the socket's own descriptor, and the dp checks its inode
 * against the one recorded at OPEN: only a process that holds the socket
 * can bind, connect or shut it down.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_malloc.h>

#include "ep_ctl.h"
#include "hoststack.h"
#include "hs_ring.h"

int hs_memfd(const char *name, uint32_t size, void **map);
void hs_worker_add_app(struct hs_stack *s, struct hs_app *a);
void hs_worker_del_app(struct hs_stack *s, struct hs_app *a);

#define TAG_LISTEN 1ull
#define TAG_APP    2ull
#define TAG_SOCK   3ull
#define TAG(t, v)  ((t) << 56 | (uint64_t)(v))
#define MAX_FDS    (2 + EP_MAX_WORKERS)

int
hs_attach_open(struct hs_stack *s, struct ep_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_LISTEN, 0) };
	char dir[sizeof(sa.sun_path)], *slash;
	mode_t old;
	int fd;

	if (strlen(s->p.attach_path) >= sizeof(sa.sun_path))
		return ep_err_set(err, "attach socket path longer than %zu", sizeof(sa.sun_path) - 1);
	snprintf(dir, sizeof(dir), "%s", s->p.attach_path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return ep_err_set(err, "attach socket directory %s: %s", dir, strerror(errno));
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->p.attach_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ep_err_set(err, "attach socket: %s", strerror(errno));
	/* A live socket file belongs to another instance; a dead one is stale. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return ep_err_set(err, "attach socket %s is in use by another edgeplane-dp",
				  s->p.attach_path);
	}
	unlink(s->p.attach_path);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		umask(old);
		close(fd);
		return ep_err_set(err, "attach socket %s: bind: %s", s->p.attach_path,
				  strerror(errno));
	}
	umask(old);
	if (s->p.attach_group[0] != '\0') {
		struct group *g = getgrnam(s->p.attach_group);

		if (g == NULL || chown(s->p.attach_path, (uid_t)-1, g->gr_gid) < 0 ||
		    chmod(s->p.attach_path, 0660) < 0) {
			close(fd);
			unlink(s->p.attach_path);
			return ep_err_set(err, "attach socket: group '%s': %s", s->p.attach_group,
					  g == NULL ? "no such group" : strerror(errno));
		}
	} else {
		chmod(s->p.attach_path, 0600);
	}
	if (listen(fd, 64) < 0) {
		close(fd);
		return ep_err_set(err, "attach socket: listen: %s", strerror(errno));
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(fd);
		return ep_err_set(err, "attach socket: epoll: %s", strerror(errno));
	}
	s->listen_fd = fd;
	if (ep_ctl_watch(s->e, s->epfd, hs_attach_poll, s) < 0)
		return ep_err_set(err, "attach socket: the control loop watches too many descriptors");
	return 0;
}

static struct hs_app *
app_find(struct hs_stack *s, uint32_t id)
{
	for (struct hs_app *a = s->apps; a != NULL; a = a->next_app)
		if (a->id == id)
			return a;
	return NULL;
}

static void
app_free(struct hs_stack *s, struct hs_app *a)
{
	struct hs_app **pp = &s->apps;

	if (a->shm != NULL)
		hs_worker_del_app(s, a);
	if (a->conn_fd >= 0) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, a->conn_fd, NULL);
		close(a->conn_fd);
	}
	/* Its sockets live on (a forked child may hold them): they only lose
	 * the name of their creator. */
	for (uint32_t i = 0; i < s->p.max_sockets; i++)
		if (s->socks[i] != NULL && s->socks[i]->app == a)
			s->socks[i]->app = NULL;
	if (a->shm != NULL)
		munmap(a->shm, a->region_size);
	if (a->shm_fd >= 0)
		close(a->shm_fd);
	while (*pp != a)
		pp = &(*pp)->next_app;
	*pp = a->next_app;
	free(a);
}

void
hs_attach_close(struct hs_stack *s)
{
	while (s->apps != NULL)
		app_free(s, s->apps);
	if (s->epfd >= 0) {
		ep_ctl_unwatch(s->e, s->epfd);
		close(s->epfd);
		s->epfd = -1;
	}
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		unlink(s->p.attach_path);
		s->listen_fd = -1;
	}
}

static void
accept_app(struct hs_stack *s)
{
	for (int i = 0; i < 16; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		struct hs_app *a;
		struct epoll_event ev;

		if (fd < 0)
			return;
		a = calloc(1, sizeof(*a));
		if (a == NULL || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
			free(a);
			close(fd);
			continue;
		}
		a->id = ++s->next_app_id;
		a->pid = (uint32_t)cred.pid;
		a->uid = cred.uid;
		a->conn_fd = fd;
		a->shm_fd = -1;
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP,
					   .data.u64 = TAG(TAG_APP, a->id) };
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			free(a);
			continue;
		}
		a->next_app = s->apps;
		s->apps = a;
	}
}

/* Send a reply with up to MAX_FDS descriptors; a connection whose buffer
 * is full (it stopped reading) is dropped by the caller. */
static int
reply(int fd, const struct hs_resp *r, const int *fds, int n_fds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = { (void *)r, sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n_fds);
	}
	return sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(*r) ? 0 : -1;
}

static int
do_hello(struct hs_stack *s, struct hs_app *a, struct hs_resp *r, int *fds, int *n_fds)
{
	struct hs_app_shm hdr = { 0 };
	void *map;
	char name[48];

	if (a->shm != NULL)
		return -EISCONN;
	hdr.n_workers = (uint32_t)s->n_w;
	hdr.db_slots = s->p.db_slots;
	hs_app_layout(&hdr);
	snprintf(name, sizeof(name), "edgeplane-hs-app-%u", a->id);
	a->shm_fd = hs_memfd(name, hdr.region_size, &map);
	if (a->shm_fd < 0)
		return -ENOMEM;
	a->shm = map;
	a->region_size = hdr.region_size;
	a->db_slots = hdr.db_slots;
	*a->shm = hdr;
	a->shm->magic = HS_ABI_MAGIC;
	a->shm->version = HS_ABI_VERSION;
	a->shm->app_id = a->id;
	hs_worker_add_app(s, a);
	r->app_id = a->id;
	r->n_workers = (uint32_t)s->n_w;
	r->region_size = hdr.region_size;
	r->worker_size = s->wshm_size;
	fds[0] = a->shm_fd;
	fds[1] = s->worker_ro_fd;
	for (int i = 0; i < s->n_w; i++)
		fds[2 + i] = s->kick_fd[i];
	*n_fds = 2 + s->n_w;
	return 0;
}

static void
opts_to_shm(struct hs_sock *k, const struct hs_req *q)
{
	k->shm->opt_flags = q->opt_flags & (HS_OPT_REUSEADDR | HS_OPT_REUSEPORT | HS_OPT_V6ONLY |
					    HS_OPT_NONBLOCK | HS_OPT_PKTINFO | HS_OPT_RECVTOS |
					    HS_OPT_BROADCAST | HS_OPT_PKTINFO6 |
					    HS_OPT_RECVTCLASS);
	k->shm->opt_rcvbuf = q->opt_rcvbuf;
	k->shm->opt_sndbuf = q->opt_sndbuf;
	k->shm->opt_tos = q->opt_tos & 0xff;
	k->v6only = k->family == 6 && (q->opt_flags & HS_OPT_V6ONLY) != 0;
}

static int
do_open(struct hs_stack *s, struct hs_app *a, const struct hs_req *q, const int *in, int n_in,
	struct hs_resp *r, int *fds, int *n_fds)
{
	struct epoll_event ev;
	struct ep_err err;
	struct stat st;
	struct hs_sock *k;
	bool mine;
	int rc;

	if (n_in != 2 || (q->family != 4 && q->family != 6) || a->shm == NULL)
		return -EINVAL;
	if (fstat(in[0], &st) < 0 || !S_ISSOCK(st.st_mode))
		return -EINVAL;
	/* Only the dp end stays open here: a copy of the application's end
	 * kept by the dp would keep the socket alive after its last close. */
	switch (q->action) {
	case HS_OPEN_BIND:
		mine = hs_serves_bind(s, &q->addr, q->family == 6 &&
				      !(q->opt_flags & HS_OPT_V6ONLY));
		break;
	case HS_OPEN_CONNECT:
	case HS_OPEN_SEND:
		mine = q->addr.family == 0 ? false : hs_serves_dest(s, &q->addr);
		break;
	default:
		return -EINVAL;
	}
	if (!mine)
		return HS_ERR_NOT_MINE;
	if (fcntl(in[1], F_SETFL, O_NONBLOCK) < 0)
		return -EINVAL;
	k = hs_sock_open(s, (uint8_t)q->family, in[1], (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			 a, &err);
	if (k == NULL)
		return -ENOBUFS;
	opts_to_shm(k, q);
	switch (q->action) {
	case HS_OPEN_BIND:
		rc = hs_sock_bind(s, k, &q->addr, q->opt_flags);
		break;
	case HS_OPEN_CONNECT:
		rc = hs_sock_autobind(s, k, q->want_port);
		if (rc == 0)
			rc = hs_sock_connect(s, k, &q->addr);
		break;
	default:
		rc = hs_sock_autobind(s, k, q->want_port);
		break;
	}
	if (rc < 0) {
		k->wake_fd = -1;        /* the caller closes its copy of in[1] */
		hs_sock_close(s, k);
		return rc;
	}
	/* The generation rides along: an event still queued for a socket
	 * freed meanwhile must not touch the next socket in its slot. */
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP,
				   .data.u64 = TAG(TAG_SOCK, (uint64_t)k->gen << 24 | k->id) };
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, k->wake_fd, &ev) < 0) {
		k->wake_fd = -1;
		hs_sock_close(s, k);
		return -ENOMEM;
	}
	r->sock_id = k->id;
	r->region_size = k->region_size;
	fds[0] = k->shm_fd;
	*n_fds = 1;
	return 1;       /* in[1] is the socket's now */
}

static struct hs_sock *
sock_of_fd(struct hs_stack *s, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return NULL;
	return hs_sock_by_ino(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

/* Handle one request; returns the number of received descriptors the
 * stack kept (the rest are closed by the caller). */
static int
handle(struct hs_stack *s, struct hs_app *a, const struct hs_req *q, const int *in, int n_in)
{
	struct hs_resp r = { .h = { HS_ABI_MAGIC, q->h.op, HS_ABI_VERSION, q->h.seq, 0 } };
	int fds[MAX_FDS], n_fds = 0, kept = 0, rc = -EINVAL;
	struct hs_sock *k = NULL;

	switch (q->h.op) {
	case HS_OP_HELLO:
		rc = n_in == 0 ? do_hello(s, a, &r, fds, &n_fds) : -EINVAL;
		break;
	case HS_OP_OPEN:
		rc = do_open(s, a, q, in, n_in, &r, fds, &n_fds);
		if (rc == 1) {
			kept = 1;
			rc = 0;
		}
		break;
	case HS_OP_CLOSED:
		if (n_in == 0 && q->sock_id < s->p.max_sockets && (k = s->socks[q->sock_id]) != NULL &&
		    k->gen == q->gen) {
			struct pollfd pfd = { .fd = k->wake_fd, .events = POLLRDHUP };

			if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP)) != 0)
				hs_sock_close(s, k);
		}
		rc = 0;
		break;
	case HS_OP_BIND:
	case HS_OP_CONNECT:
	case HS_OP_SHUTDOWN:
	case HS_OP_IDENTIFY:
		if (n_in != 1 || (k = sock_of_fd(s, in[0])) == NULL) {
			rc = q->h.op == HS_OP_IDENTIFY ? HS_ERR_NOT_MINE : -EBADF;
			break;
		}
		if (q->h.op == HS_OP_BIND) {
			rc = hs_sock_bind(s, k, &q->addr, q->opt_flags);
		} else if (q->h.op == HS_OP_CONNECT) {
			rc = hs_sock_connect(s, k, &q->addr);
		} else if (q->h.op == HS_OP_SHUTDOWN) {
			rc = hs_sock_shutdown(s, k, q->how);
		} else {
			rc = 0;
			r.sock_id = k->id;
			r.region_size = k->region_size;
			fds[0] = k->shm_fd;
			n_fds = 1;
		}
		break;
	default:
		break;
	}
	r.err = rc == HS_ERR_NOT_MINE ? HS_ERR_NOT_MINE : -rc;
	if (reply(a->conn_fd, &r, fds, n_fds) < 0)
		return -1 - kept;
	return kept;
}

static void
serve_app(struct hs_stack *s, struct hs_app *a, uint32_t events)
{
	for (int round = 0; round < 8; round++) {
		char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct hs_req q;
		struct iovec iov = { &q, sizeof(q) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		int in[MAX_FDS], n_in = 0, kept;
		ssize_t n = recvmsg(a->conn_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			app_free(s, a);
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (n_in < MAX_FDS)
					in[n_in++] = fd;
				else
					close(fd);
			}
		}
		if ((size_t)n != sizeof(q) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
		    q.h.magic != HS_ABI_MAGIC || q.h.version != HS_ABI_VERSION) {
			struct hs_resp r = { .h = { HS_ABI_MAGIC, 0, HS_ABI_VERSION, 0, 0 },
					     .err = EINVAL };

			for (int i = 0; i < n_in; i++)
				close(in[i]);
			if (reply(a->conn_fd, &r, NULL, 0) < 0) {
				app_free(s, a);
				return;
			}
			continue;
		}
		kept = handle(s, a, &q, in, n_in);
		/* OPEN keeps the dp end (in[1]); everything else is closed. */
		for (int i = 0; i < n_in; i++)
			if (!((kept == 1 || kept == -2) && i == 1))
				close(in[i]);
		if (kept < 0) {
			app_free(s, a);
			return;
		}
	}
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		app_free(s, a);
}

/* Bytes the library writes into its socket end arrive here: each asks for
 * the wake byte back (it drained one while a datagram was being
 * published, preload_io.c).  Anything else an application writes is read
 * and dropped the same way. */
static void
serve_sock(struct hs_stack *s, uint64_t v, uint32_t events)
{
	uint32_t id = (uint32_t)(v & ((1u << 24) - 1)), gen = (uint32_t)(v >> 24);
	struct hs_sock *k = id < s->p.max_sockets ? s->socks[id] : NULL;
	char junk[256];

	if (k == NULL || k->gen != gen)
		return;
	if (events & EPOLLIN) {
		bool asked = false;
		static const uint8_t byte = 1;

		while (recv(k->wake_fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			asked = true;
		/* The byte back when something still waits: a datagram, an
		 * error, a shut-down receive side. */
		if (asked && (__atomic_load_n(&k->shm->rx_prod.v, __ATOMIC_ACQUIRE) !=
			      __atomic_load_n(&k->shm->rx_cons.v, __ATOMIC_ACQUIRE) ||
			      __atomic_load_n(&k->shm->so_error.v, __ATOMIC_ACQUIRE) != 0 ||
			      (__atomic_load_n(&k->shm->state, __ATOMIC_ACQUIRE) & HS_ST_SHUT_RD)) &&
		    __atomic_exchange_n(&k->shm->rx_signalled.v, 1, __ATOMIC_ACQ_REL) == 0 &&
		    send(k->wake_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			k->st.wakeups++;
	}
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		hs_sock_close(s, k);
}

void
hs_attach_poll(void *arg)
{
	struct hs_stack *s = arg;
	struct epoll_event ev[64];
	int n = epoll_wait(s->epfd, ev, RTE_DIM(ev), 0);

	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64 >> 56, v = ev[i].data.u64 & ((1ull << 56) - 1);

		if (tag == TAG_LISTEN) {
			accept_app(s);
		} else if (tag == TAG_APP) {
			struct hs_app *a = app_find(s, (uint32_t)v);

			if (a != NULL)
				serve_app(s, a, ev[i].events);
		} else if (tag == TAG_SOCK) {
			serve_sock(s, v, ev[i].events);
		}
	}
}
