/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's side of the attach socket (hs_abi.h): start-up, the
 * per-process attachment, requests, mapping regions, doorbells, and the
 * descriptors a process inherits across exec.
 *
 * Environment:
 *   EDGEPLANE_PRELOAD=0|off     do nothing (pass every call to libc): set it
 *                               for a child that must use the kernel
 *   EDGEPLANE_HOSTSTACK=PATH    attach socket (default /run/edgeplane/hoststack.sock)
 *   EDGEPLANE_PRELOAD_STRICT=1  when edgeplane-dp cannot be reached, fail
 *                               bind/connect/sendto with ENETDOWN instead of
 *                               leaving the socket with the kernel
 *   EDGEPLANE_PRELOAD_DEBUG=1   one line on stderr per decision
 *
 * Attachment is per process and lazy: the first socket that could be
 * accelerated attaches; a forked child attaches again (its own doorbell
 * rings) the first time it needs the dp.  Requests block every signal
 * while they run, so a handler that longjmps (iperf3 does) never leaves
 * the attach connection half-used.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hs_ring.h"
#include "preload.h"

struct epl_libc_fns epl_libc_tab;
bool epl_libc_ready;
bool epl_strict;

static struct {
	bool enabled;
	bool debug;
	char path[108];
	pid_t pid;                      /* attached process; 0: not attached */
	int conn;
	struct hs_app_shm *app;
	size_t app_size;
	const struct hs_worker_shm *wpage;
	size_t wpage_size;
	int kick[HS_MAX_WORKERS];
	uint32_t n_workers;
	uint32_t seq;
	pthread_mutex_t lock;           /* one request at a time */
	/* This process's pid, kept by the constructor and the fork child
	 * handler, so the doorbell's "still attached?" costs no getpid()
	 * system call (glibc does not cache it).  A child made without
	 * fork()'s handlers (vfork, posix_spawn, raw clone) must exec
	 * before it touches a socket, as POSIX already requires of vfork. */
	pid_t self;
} att = { .conn = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

bool
epl_enabled(void)
{
	return att.enabled;
}

/* stderr without stdio: safe in any context the library runs in. */
static void
say(const char *fmt, va_list ap)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "edgeplane-preload[%d]: ", (int)getpid());

	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (epl_libc.write != NULL && epl_libc.write(2, buf, (size_t)n) < 0) {
		/* nothing to do about a closed stderr */
	}
}

void
epl_warn_once(const char *key, const char *fmt, ...)
{
	static const char *seen[64];
	static int n_seen;
	va_list ap;

	pthread_mutex_lock(&warn_lock);
	for (int i = 0; i < n_seen; i++)
		if (strcmp(seen[i], key) == 0) {
			pthread_mutex_unlock(&warn_lock);
			return;
		}
	if (n_seen < 64)
		seen[n_seen++] = key;
	pthread_mutex_unlock(&warn_lock);
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void
epl_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void
epl_debug(const char *fmt, ...)
{
	va_list ap;

	if (!att.debug)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

/* The library's own descriptors live high, out of the way of the
 * application's "lowest free descriptor" (a program that closes 0 and
 * opens a file expects 0). */
static int
high_fd(int fd)
{
	int nfd;

	if (fd < 0)
		return fd;
	nfd = epl_libc.fcntl(fd, F_DUPFD_CLOEXEC, epl_high_fd_base());
	if (nfd < 0)
		return fd;
	epl_libc.close(fd);
	return nfd;
}

static void
detach_locked(void)
{
	if (att.conn >= 0)
		epl_libc.close(att.conn);
	att.conn = -1;
	if (att.app != NULL)
		munmap(att.app, att.app_size);
	att.app = NULL;
	if (att.wpage != NULL)
		munmap((void *)att.wpage, att.wpage_size);
	att.wpage = NULL;
	for (uint32_t i = 0; i < att.n_workers; i++)
		if (att.kick[i] >= 0)
			epl_libc.close(att.kick[i]);
	att.n_workers = 0;
	att.pid = 0;
}

/* One message each way on the attach connection, with descriptors. */
static int
xfer_locked(struct hs_req *q, const int *fds, int n_fds, struct hs_resp *r, int *rfds,
	    int max_rfds, int *n_rfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (HS_MAX_WORKERS + 2))];
	struct iovec iov = { q, sizeof(*q) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd pfd = { .fd = att.conn, .events = POLLIN };
	ssize_t n;

	q->h.magic = HS_ABI_MAGIC;
	q->h.version = HS_ABI_VERSION;
	q->h.seq = ++att.seq;
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
	if (epl_libc.sendmsg(att.conn, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*q))
		return -ENETDOWN;
	/* The dp answers from its control loop within milliseconds; a dp that
	 * does not answer in 5 s is as good as gone. */
	if (epl_libc.poll(&pfd, 1, 5000) <= 0)
		return -ENETDOWN;
	iov = (struct iovec){ r, sizeof(*r) };
	mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	n = epl_libc.recvmsg(att.conn, &mh, MSG_CMSG_CLOEXEC);
	if (n_rfds != NULL)
		*n_rfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (rfds != NULL && n_rfds != NULL && *n_rfds < max_rfds)
				rfds[(*n_rfds)++] = fd;
			else
				epl_libc.close(fd);
		}
	}
	if (n != (ssize_t)sizeof(*r) || r->h.magic != HS_ABI_MAGIC || r->h.seq != q->h.seq) {
		for (int i = 0; n_rfds != NULL && i < *n_rfds; i++)
			epl_libc.close(rfds[i]);
		return -ENETDOWN;
	}
	return 0;
}

static int
attach_locked(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hs_req q = { .h.op = HS_OP_HELLO };
	struct hs_resp r;
	int fds[2 + HS_MAX_WORKERS], n = 0, rc;
	void *map;

	if (att.pid == getpid() && att.conn >= 0)
		return 0;
	/* A forked child: the parent's connection and rings are the parent's. */
	detach_locked();
	att.conn = high_fd(epl_libc.socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (att.conn < 0)
		return -ENETDOWN;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", att.path);
	if (epl_libc.connect(att.conn, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = errno;
		detach_locked();
		epl_warn_once("attach", "cannot reach edgeplane-dp at %s (%s): UDP sockets %s",
			      att.path, strerror(rc),
			      epl_strict ? "fail with ENETDOWN (EDGEPLANE_PRELOAD_STRICT)" :
					   "stay with the kernel");
		return -ENETDOWN;
	}
	q.pid = (uint32_t)getpid();
	rc = xfer_locked(&q, NULL, 0, &r, fds, (int)EPL_DIM(fds), &n);
	if (rc < 0 || r.err != 0 || n < 2 || r.n_workers == 0 || r.n_workers > HS_MAX_WORKERS ||
	    n != 2 + (int)r.n_workers) {
		for (int i = 0; i < n; i++)
			epl_libc.close(fds[i]);
		detach_locked();
		epl_warn_once("hello", "edgeplane-dp at %s refused to attach", att.path);
		return -ENETDOWN;
	}
	map = mmap(NULL, r.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	epl_libc.close(fds[0]);
	if (map == MAP_FAILED) {
		for (int i = 1; i < n; i++)
			epl_libc.close(fds[i]);
		detach_locked();
		return -ENETDOWN;
	}
	att.app = map;
	att.app_size = r.region_size;
	map = mmap(NULL, r.worker_size, PROT_READ, MAP_SHARED, fds[1], 0);
	epl_libc.close(fds[1]);
	att.wpage = map == MAP_FAILED ? NULL : map;
	att.wpage_size = r.worker_size;
	att.n_workers = r.n_workers;
	for (uint32_t i = 0; i < r.n_workers; i++)
		att.kick[i] = high_fd(fds[2 + i]);
	if (att.wpage == NULL || att.wpage_size < r.n_workers * sizeof(struct hs_worker_shm) ||
	    att.app->n_workers != r.n_workers ||
	    att.app->db_slots == 0 || (att.app->db_slots & (att.app->db_slots - 1)) != 0) {
		detach_locked();
		return -ENETDOWN;
	}
	for (uint32_t w = 0; w < att.n_workers; w++) {
		pthread_mutexattr_t ma;
		pthread_mutex_t *lk = (pthread_mutex_t *)att.app->ring[w].app_private;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(lk, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	att.pid = getpid();
	epl_debug("attached to %s: app %u, %u workers", att.path, r.app_id, r.n_workers);
	return 0;
}

int
epl_attach(void)
{
	sigset_t all, old;
	int rc;

	if (att.pid == att.self && att.conn >= 0)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&att.lock);
	rc = attach_locked();
	pthread_mutex_unlock(&att.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
epl_request(struct hs_req *q, const int *fds, int n_fds, struct hs_resp *r, int *rfds,
	    int max_rfds, int *n_rfds)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&att.lock);
	rc = attach_locked();
	if (rc == 0) {
		rc = xfer_locked(q, fds, n_fds, r, rfds, max_rfds, n_rfds);
		if (rc < 0) {
			epl_warn_once("gone", "edgeplane-dp at %s went away: its sockets fail with "
				      "ENETDOWN", att.path);
			detach_locked();
		}
	}
	pthread_mutex_unlock(&att.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
epl_map_region(struct epl_sock *p, int shm_fd, uint32_t size, bool init_locks)
{
	struct hs_sock_shm *h;
	struct epl_shared *sh;

	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	if (h == MAP_FAILED)
		return -ENOMEM;
	/* Geometry from the dp is checked like any other input. */
	if (!hs_sock_layout_valid(h, size) || (h->family != 4 && h->family != 6)) {
		munmap(h, size);
		return -EPROTO;
	}
	p->shm = h;
	p->region_size = size;
	p->rx_slots = h->rx_slots;
	p->tx_slots = h->tx_slots;
	p->rx_bytes = h->rx_bytes;
	p->tx_bytes = h->tx_bytes;
	p->rx_desc = (struct hs_desc *)((uint8_t *)h + h->rx_desc_off);
	p->tx_desc = (struct hs_desc *)((uint8_t *)h + h->tx_desc_off);
	p->rx_data = (uint8_t *)h + h->rx_data_off;
	p->tx_data = (uint8_t *)h + h->tx_data_off;
	p->worker = h->worker;
	p->sock_id = h->sock_id;
	p->family = h->family == 4 ? AF_INET : AF_INET6;
	sh = (struct epl_shared *)h->app_private;
	p->sh = sh;
	if (init_locks && sh->init != EPL_SHARED_INIT) {
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&sh->rx_lock, &ma);
		pthread_mutex_init(&sh->tx_lock, &ma);
		pthread_mutexattr_destroy(&ma);
		sh->mtu_discover = -1;
		__atomic_store_n(&sh->init, EPL_SHARED_INIT, __ATOMIC_RELEASE);
	}
	p->accel = true;
	return 0;
}

/*
 * "This socket has datagrams to send": push its id on this process's
 * doorbell ring for the socket's worker, once per idle -> pending
 * transition (tx_pending), and kick the worker only when its page says it
 * is about to sleep.
 */
void
epl_doorbell(struct epl_sock *p)
{
	struct hs_db_ring *r;
	pthread_mutex_t *lk;
	uint32_t w = p->worker;

	if (__atomic_load_n(&p->shm->tx_pending.v, __ATOMIC_RELAXED) != 0 ||
	    __atomic_exchange_n(&p->shm->tx_pending.v, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (epl_attach() < 0 || w >= att.n_workers) {
		/* No rings to ring: a worker that rescans finds it anyway. */
		return;
	}
	r = &att.app->ring[w];
	lk = (pthread_mutex_t *)r->app_private;
	epl_lock(lk);
	if (hs_db_push(r, hs_app_db_slots(att.app, w), att.app->db_slots, p->sock_id) < 0)
		__atomic_store_n(&r->rescan.v, 1, __ATOMIC_RELEASE);
	epl_unlock(lk);
	hs_fence();
	if (att.wpage != NULL && __atomic_load_n(&att.wpage[w].sleeping.v, __ATOMIC_RELAXED) != 0) {
		uint64_t one = 1;

		if (epl_libc.write(att.kick[w], &one, sizeof(one)) < 0) {
			/* counter saturated: the worker is being woken anyway */
		}
	}
}

bool
epl_workers_poll(void)
{
	const struct hs_worker_shm *wp = __atomic_load_n(&att.wpage, __ATOMIC_ACQUIRE);
	uint32_t n = __atomic_load_n(&att.n_workers, __ATOMIC_RELAXED);

	for (uint32_t w = 0; wp != NULL && w < n; w++)
		if (__atomic_load_n(&wp[w].polls.v, __ATOMIC_RELAXED) != 0)
			return true;
	return false;
}

/* ---- descriptors inherited across exec ---- */

/* A socketpair end: AF_UNIX stream, no name on either side. */
static bool
maybe_ours(int fd)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);
	int v;
	socklen_t vl = sizeof(v);
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	if (epl_libc.getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &vl) < 0 || v != AF_UNIX)
		return false;
	vl = sizeof(v);
	if (epl_libc.getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) < 0 || v != SOCK_STREAM)
		return false;
	if (epl_libc.getsockname(fd, (struct sockaddr *)&a, &len) < 0 || len > sizeof(sa_family_t))
		return false;
	len = sizeof(a);
	return epl_libc.getpeername(fd, (struct sockaddr *)&a, &len) == 0 &&
	       len <= sizeof(sa_family_t);
}

static void
identify(int fd)
{
	struct hs_req q = { .h.op = HS_OP_IDENTIFY };
	struct hs_resp r;
	struct epl_sock *p;
	int rfd, n = 0;

	if (epl_request(&q, &fd, 1, &r, &rfd, 1, &n) < 0 || r.err != 0 || n != 1) {
		if (n == 1)
			epl_libc.close(rfd);
		return;
	}
	p = epl_alloc();
	if (p != NULL && epl_map_region(p, rfd, r.region_size, false) == 0 &&
	    epl_own_fd(p, fd) == 0) {
		epl_set(fd, p);
		epl_debug("fd %d: inherited socket %u", fd, p->sock_id);
	}
	epl_libc.close(rfd);
	epl_put(p);
}

void
epl_scan_inherited(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fds[256], n = 0;
	struct stat st;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && n < (int)EPL_DIM(fds)) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (*end != '\0' || fd == dirfd(d))
			continue;
		fds[n++] = (int)fd;
	}
	closedir(d);
	/* No dp on this machine: nothing can be ours. */
	if (stat(att.path, &st) < 0)
		return;
	for (int i = 0; i < n; i++)
		if (maybe_ours(fds[i]))
			identify(fds[i]);
}

/* ---- start-up ---- */

static void
atfork_prepare(void)
{
	pthread_mutex_lock(&att.lock);
}

static void
atfork_parent(void)
{
	pthread_mutex_unlock(&att.lock);
}

static void
atfork_child(void)
{
	/* att.pid no longer matches: the child attaches again when it needs
	 * the dp.  The parent's connection stays the parent's. */
	att.self = getpid();
	pthread_mutex_unlock(&att.lock);
}

#define RESOLVE(name) \
	(epl_libc_tab.name = (__typeof__(epl_libc_tab.name))dlsym(RTLD_NEXT, #name))

/* Idempotent and lock-free: threads that race here (only possible before
 * our constructor, which calls it first) store the same pointers, and the
 * flag is published only after every one is stored.  glibc's dlsym takes
 * the loader's lock and may allocate, but calls none of the functions we
 * interpose, so resolving cannot recurse into itself; a lock of ours here
 * would only add a way to deadlock in another thread's constructor. */
void
epl_libc_resolve(void)
{
	RESOLVE(socket); RESOLVE(bind); RESOLVE(connect); RESOLVE(listen); RESOLVE(accept);
	RESOLVE(accept4); RESOLVE(getsockname); RESOLVE(getpeername); RESOLVE(setsockopt);
	RESOLVE(getsockopt); RESOLVE(shutdown); RESOLVE(close); RESOLVE(close_range);
	RESOLVE(closefrom); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl);
	RESOLVE(ioctl); RESOLVE(send); RESOLVE(sendto); RESOLVE(sendmsg); RESOLVE(sendmmsg);
	RESOLVE(recv); RESOLVE(recvfrom); RESOLVE(recvmsg); RESOLVE(recvmmsg); RESOLVE(read);
	RESOLVE(write); RESOLVE(readv); RESOLVE(writev); RESOLVE(sendfile); RESOLVE(splice);
	RESOLVE(sigaction); RESOLVE(poll); RESOLVE(ppoll); RESOLVE(select); RESOLVE(pselect);
	RESOLVE(epoll_ctl); RESOLVE(epoll_pwait);
	__atomic_store_n(&epl_libc_ready, true, __ATOMIC_RELEASE);
}

static void __attribute__((constructor))
epl_init(void)
{
	const char *v = getenv("EDGEPLANE_PRELOAD");

	(void)epl_libc_get();
	for (int i = 0; i < (int)HS_MAX_WORKERS; i++)
		att.kick[i] = -1;
	if (v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "no") == 0))
		return;
	v = getenv("EDGEPLANE_HOSTSTACK");
	snprintf(att.path, sizeof(att.path), "%s", v != NULL && v[0] != '\0' ? v :
		 HS_ATTACH_PATH_DEFAULT);
	v = getenv("EDGEPLANE_PRELOAD_STRICT");
	epl_strict = v != NULL && strcmp(v, "1") == 0;
	v = getenv("EDGEPLANE_PRELOAD_DEBUG");
	att.debug = v != NULL && strcmp(v, "1") == 0;
	epl_spin_init();
	att.self = getpid();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	att.enabled = true;
	epl_scan_inherited();
}
