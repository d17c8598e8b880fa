/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hs_semantics: the UDP socket-semantics suite.  The same named cases run
 * once on the kernel and once under libedgeplane-preload.so; each case
 * checks what the kernel's UDP does (the specification) and records what
 * it observed, and tests/test_udp_semantics.py asserts that both runs
 * pass and observe the same.
 *
 *   hs_semantics --v4 198.18.20.1 --v4b 198.18.20.2 --v6 2001:db8:20::1 [case ...]
 *   hs_semantics --list
 *
 * One JSON line per case: {"case": NAME, "ok": true|false, "obs": "...",
 * "why": "..."}.  Every case runs in its own process with a 10 s alarm, so a
 * hang is a failure, not a stuck suite.  Observations leave out what
 * legitimately differs (ephemeral port numbers, interface indexes, default
 * buffer sizes, timings beyond "it waited").
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *v4 = "198.18.20.1", *v4b = "198.18.20.2", *v6 = "2001:db8:20::1";
static const char *self_path;
static char obs[4096], why[512];
static bool failed;

#define OBS(...) do { \
	size_t l_ = strlen(obs); \
	snprintf(obs + l_, sizeof(obs) - l_, "%s", l_ ? " " : ""); \
	l_ = strlen(obs); \
	snprintf(obs + l_, sizeof(obs) - l_, __VA_ARGS__); \
} while (0)

#define CHECK(cond) do { \
	if (!(cond)) { \
		if (!failed) \
			snprintf(why, sizeof(why), "line %d: %s (errno %d %s)", __LINE__, #cond, \
				 errno, strerror(errno)); \
		failed = true; \
	} } while (0)

/* ---- helpers ---- */

/* Under the sanitizers' runtime (tests/test_udp_semantics_asan.py preloads
 * it before the library), memory the case's process lost is a failure of the
 * case: the process ends with _exit, which skips LeakSanitizer's check at
 * exit, so it is asked here.  Without the runtime the symbol is absent. */
static void
check_leaks(void)
{
	int (*leak_check)(void) =
		(int (*)(void))dlsym(RTLD_DEFAULT, "__lsan_do_recoverable_leak_check");

	if (leak_check != NULL && leak_check() != 0) {
		if (!failed)
			snprintf(why, sizeof(why), "LeakSanitizer: memory leaked (its report on stderr)");
		failed = true;
	}
}

static socklen_t
sa_make(struct sockaddr_storage *ss, int family, const char *addr, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		inet_pton(AF_INET, addr, &in->sin_addr);
		return sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &in6->sin6_addr);
		return sizeof(*in6);
	}
}

static int
udp(int family)
{
	int fd = socket(family, SOCK_DGRAM, 0);

	CHECK(fd >= 0);
	return fd;
}

/* bind; 0 or errno */
static int
bind_to(int fd, int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t l = sa_make(&ss, family, addr, port);

	return bind(fd, (struct sockaddr *)&ss, l) == 0 ? 0 : errno;
}

static int
connect_to(int fd, int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t l = sa_make(&ss, family, addr, port);

	return connect(fd, (struct sockaddr *)&ss, l) == 0 ? 0 : errno;
}

static uint16_t
port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
		     ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static const char *
addr_of(int fd, bool peer, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &l) :
			getsockname(fd, (struct sockaddr *)&ss, &l);

	if (rc < 0) {
		snprintf(buf, n, "errno=%d", errno);
		return buf;
	}
	inet_ntop(ss.ss_family, ss.ss_family == AF_INET ?
		  (void *)&((struct sockaddr_in *)&ss)->sin_addr :
		  (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr, buf, (socklen_t)n);
	return buf;
}

static ssize_t
send_to(int fd, int family, const char *addr, uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t l = sa_make(&ss, family, addr, port);

	return sendto(fd, buf, len, 0, (struct sockaddr *)&ss, l);
}

/* A bound IPv4 receiver on v4 and its port. */
static int
receiver(int family, uint16_t *port)
{
	int fd = udp(family);

	CHECK(bind_to(fd, family, family == AF_INET ? v4 : v6, 0) == 0);
	*port = port_of(fd);
	return fd;
}

static void
set_rcvtimeo(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "name=<result> errno=<errno>" for one call: result and errno taken
 * right after it (argument order would not guarantee that). */
#define OBS_CALL(name, expr) do { \
	long r_; int e_; \
	errno = 0; \
	r_ = (long)(expr); \
	e_ = errno; \
	OBS("%s=%ld errno=%d", name, r_, r_ < 0 ? e_ : 0); \
} while (0)

/* ---- cases ---- */

static void
nonblocking_recv_eagain(void)
{
	uint16_t port;
	int fd = receiver(AF_INET, &port);
	char b[16];

	CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
	OBS_CALL("recv", recv(fd, b, sizeof(b), 0));
	CHECK(errno == EAGAIN);
	OBS("nonblock_flag=%d", !!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0);
	OBS_CALL("dontwait", recv(fd, b, sizeof(b), MSG_DONTWAIT));
	CHECK(errno == EAGAIN);
	{
		int on = 1;

		CHECK(ioctl(fd, FIONBIO, &on) == 0);
		OBS_CALL("fionbio", recv(fd, b, sizeof(b), 0));
		CHECK(errno == EAGAIN);
	}
	close(fd);
}

struct delayed { int fd, family; const char *addr; uint16_t port; int ms; size_t len; };

static void *
send_later(void *arg)
{
	struct delayed *d = arg;
	char buf[2000];

	memset(buf, 'd', sizeof(buf));
	usleep((useconds_t)d->ms * 1000);
	send_to(d->fd, d->family, d->addr, d->port, buf, d->len);
	return NULL;
}

static void
blocking_recv_waits_for_datagram(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET);
	struct delayed d = { s, AF_INET, v4, port, 100, 1860 };
	pthread_t th;
	char b[4000];
	double t0 = now_s();
	ssize_t n;

	pthread_create(&th, NULL, send_later, &d);
	n = recv(r, b, sizeof(b), 0);
	OBS("recv=%zd waited=%d", n, now_s() - t0 > 0.05);
	CHECK(n == 1860);
	pthread_join(th, NULL);
	close(r);
	close(s);
}

static void
receive_timeout(void)
{
	uint16_t port;
	int fd = receiver(AF_INET, &port);
	char b[16];
	double t0;
	ssize_t n;

	set_rcvtimeo(fd, 200);
	t0 = now_s();
	n = recv(fd, b, sizeof(b), 0);
	OBS("recv=%zd errno=%d waited=%d", n, n < 0 ? errno : 0, now_s() - t0 > 0.15);
	CHECK(n < 0 && errno == EAGAIN);
	close(fd);
}

static void
message_boundaries(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET);
	static const size_t sizes[] = { 10, 0, 300, 1860, 9000 };
	char b[16000];

	set_rcvtimeo(r, 2000);
	for (size_t i = 0; i < 5; i++) {
		memset(b, (int)('a' + i), sizes[i]);
		CHECK(send_to(s, AF_INET, v4, port, b, sizes[i]) == (ssize_t)sizes[i]);
	}
	for (size_t i = 0; i < 5; i++) {
		ssize_t n = recv(r, b, sizeof(b), 0);

		OBS("len%zu=%zd", i, n);
		CHECK(n == (ssize_t)sizes[i]);
		CHECK(n <= 0 || (b[0] == (char)('a' + i) && b[n - 1] == (char)('a' + i)));
	}
	close(r);
	close(s);
}

static void
truncation_flagged(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET);
	char b[200], small[10];
	struct iovec iov = { small, sizeof(small) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	set_rcvtimeo(r, 2000);
	memset(b, 'x', sizeof(b));
	send_to(s, AF_INET, v4, port, b, 100);
	send_to(s, AF_INET, v4, port, b, 100);
	send_to(s, AF_INET, v4, port, b, 50);
	n = recvmsg(r, &m, 0);
	OBS("recvmsg=%zd trunc=%d", n, !!(m.msg_flags & MSG_TRUNC));
	CHECK(n == 10 && (m.msg_flags & MSG_TRUNC));
	n = recv(r, small, sizeof(small), MSG_TRUNC);
	OBS("msg_trunc=%zd", n);
	CHECK(n == 100);
	n = recv(r, b, sizeof(b), 0);
	OBS("third=%zd", n);
	CHECK(n == 50);
	close(r);
	close(s);
}

static void
peek_and_fionread(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), avail = -1;
	char b[200];

	set_rcvtimeo(r, 2000);
	CHECK(ioctl(r, FIONREAD, &avail) == 0);
	OBS("fionread_empty=%d", avail);
	send_to(s, AF_INET, v4, port, "abcdef", 6);
	send_to(s, AF_INET, v4, port, "xyz", 3);
	usleep(50000);
	CHECK(ioctl(r, FIONREAD, &avail) == 0);
	OBS("fionread=%d", avail);
	OBS("peek=%zd", recv(r, b, sizeof(b), MSG_PEEK));
	OBS("peek_again=%zd", recv(r, b, sizeof(b), MSG_PEEK));
	OBS("recv=%zd", recv(r, b, sizeof(b), 0));
	OBS("next=%zd", recv(r, b, sizeof(b), 0));
	CHECK(strstr(obs, "fionread=6 peek=6 peek_again=6 recv=6 next=3") != NULL);
	close(r);
	close(s);
}

static void
connected_vs_unconnected_send(void)
{
	uint16_t port, port2;
	int r = receiver(AF_INET, &port), r2 = receiver(AF_INET, &port2), c = udp(AF_INET);
	char b[64], a[64];
	ssize_t n;

	set_rcvtimeo(r, 2000);
	set_rcvtimeo(c, 300);
	OBS_CALL("unconnected_send", send(c, "x", 1, 0));
	CHECK(errno == EDESTADDRREQ);
	OBS("getpeername_unconnected=%s", addr_of(c, true, a, sizeof(a)));
	CHECK(connect_to(c, AF_INET, v4, port) == 0);
	OBS("local=%s", addr_of(c, false, a, sizeof(a)));
	OBS("peer=%s", addr_of(c, true, a, sizeof(a)));
	CHECK(send(c, "hello", 5, 0) == 5);
	n = recvfrom(r, b, sizeof(b), 0, NULL, NULL);
	OBS("got=%zd", n);
	/* A connected socket hears only its peer. */
	send_to(r2, AF_INET, v4, port_of(c), "stranger", 8);
	send_to(r, AF_INET, v4, port_of(c), "peer", 4);
	n = recv(c, b, sizeof(b), 0);
	OBS("connected_got=%zd", n);
	CHECK(n == 4 && memcmp(b, "peer", 4) == 0);
	OBS_CALL("then", recv(c, b, sizeof(b), 0));
	CHECK(errno == EAGAIN);
	/* sendto with an address still works on a connected socket */
	CHECK(send_to(c, AF_INET, v4, port2, "over", 4) == 4);
	set_rcvtimeo(r2, 2000);
	OBS("override=%zd", recv(r2, b, sizeof(b), 0));
	close(r);
	close(r2);
	close(c);
}

static void
connect_unspec_dissolves(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), c = udp(AF_INET), c2;
	struct sockaddr sa = { .sa_family = AF_UNSPEC };
	char a[64];

	CHECK(connect_to(c, AF_INET, v4, port) == 0);
	CHECK(connect(c, &sa, sizeof(sa)) == 0);
	OBS("peer=%s", addr_of(c, true, a, sizeof(a)));
	OBS("local=%s port0=%d", addr_of(c, false, a, sizeof(a)), port_of(c) == 0);
	c2 = udp(AF_INET);
	CHECK(bind_to(c2, AF_INET, v4, 0) == 0);
	CHECK(connect_to(c2, AF_INET, v4, port) == 0);
	CHECK(connect(c2, &sa, sizeof(sa)) == 0);
	OBS("bound_local=%s port0=%d", addr_of(c2, false, a, sizeof(a)), port_of(c2) == 0);
	close(r);
	close(c);
	close(c2);
}

static void
wildcard_vs_specific_bind(void)
{
	uint16_t port;
	int a = receiver(AF_INET, &port), w = udp(AF_INET), one = 1, s = udp(AF_INET);
	char b[16];

	OBS("wild_after_specific=%d", bind_to(w, AF_INET, "0.0.0.0", port));
	close(w);
	close(a);
	a = udp(AF_INET);
	w = udp(AF_INET);
	setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(w, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(bind_to(w, AF_INET, "0.0.0.0", port) == 0);
	OBS("specific_after_wild_reuse=%d", bind_to(a, AF_INET, v4, port));
	set_rcvtimeo(a, 1000);
	set_rcvtimeo(w, 300);
	/* The specific bind wins over the wildcard for its address... */
	send_to(s, AF_INET, v4, port, "spec", 4);
	OBS("specific_got=%zd", recv(a, b, sizeof(b), 0));
	OBS("wild_got=%zd", recv(w, b, sizeof(b), MSG_DONTWAIT));
	/* ...and the wildcard takes the other address. */
	send_to(s, AF_INET, v4b, port, "other", 5);
	set_rcvtimeo(w, 1000);
	OBS("wild_other=%zd", recv(w, b, sizeof(b), 0));
	CHECK(strstr(obs, "specific_got=4 wild_got=-1 wild_other=5") != NULL);
	close(a);
	close(w);
	close(s);
}

static void
port_in_use(void)
{
	uint16_t port;
	int a = receiver(AF_INET, &port), b = udp(AF_INET), c = udp(AF_INET), one = 1;
	int e;

	e = bind_to(b, AF_INET, v4, port);
	OBS("second_bind=%d", e);
	CHECK(e == EADDRINUSE);
	/* SO_REUSEADDR on one side only is not enough */
	setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	OBS("reuse_one_side=%d", bind_to(c, AF_INET, v4, port));
	/* a bound socket cannot bind again */
	OBS("rebind=%d", bind_to(a, AF_INET, v4, 0));
	close(a);
	close(b);
	close(c);
}

static void
reuseport_group(void)
{
	int a = udp(AF_INET), b = udp(AF_INET), s = udp(AF_INET), one = 1, got = 0;
	uint16_t port;
	char buf[16];

	setsockopt(a, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	setsockopt(b, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	CHECK(bind_to(a, AF_INET, v4, 0) == 0);
	port = port_of(a);
	OBS("second=%d", bind_to(b, AF_INET, v4, port));
	for (int i = 0; i < 8; i++)
		send_to(s, AF_INET, v4, port, "r", 1);
	usleep(100000);
	while (recv(a, buf, sizeof(buf), MSG_DONTWAIT) == 1)
		got++;
	while (recv(b, buf, sizeof(buf), MSG_DONTWAIT) == 1)
		got++;
	OBS("delivered=%d", got);
	CHECK(got == 8);
	close(a);
	close(b);
	close(s);
}

static void
ipv6_send_receive(void)
{
	uint16_t port;
	int r = receiver(AF_INET6, &port), s = udp(AF_INET6);
	struct sockaddr_in6 from;
	socklen_t fl = sizeof(from);
	char b[4000], a[64];
	ssize_t n;

	set_rcvtimeo(r, 2000);
	memset(b, '6', 3000);
	CHECK(send_to(s, AF_INET6, v6, port, b, 3000) == 3000);
	n = recvfrom(r, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	inet_ntop(AF_INET6, &from.sin6_addr, a, sizeof(a));
	OBS("got=%zd from=%s fromlen=%u", n, a, fl);
	CHECK(n == 3000 && strcmp(a, v6) == 0);
	close(r);
	close(s);
}

static void
ipv4_mapped_dual_stack(void)
{
	int d = udp(AF_INET6), o = udp(AF_INET6), s4 = udp(AF_INET), zero = 0, one = 1;
	struct sockaddr_in6 from;
	socklen_t fl = sizeof(from);
	char b[64], a[64], mapped[64];
	uint16_t port;
	ssize_t n;

	CHECK(setsockopt(d, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) == 0);
	CHECK(bind_to(d, AF_INET6, "::", 0) == 0);
	port = port_of(d);
	set_rcvtimeo(d, 2000);
	CHECK(send_to(s4, AF_INET, v4, port, "v4", 2) == 2);
	n = recvfrom(d, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	inet_ntop(AF_INET6, &from.sin6_addr, a, sizeof(a));
	snprintf(mapped, sizeof(mapped), "::ffff:%s", v4);
	OBS("got=%zd from=%s", n, strcmp(a, mapped) == 0 ? "mapped" : a);
	CHECK(n == 2 && strcmp(a, mapped) == 0);
	/* reply through the mapped address reaches the IPv4 socket */
	set_rcvtimeo(s4, 2000);
	CHECK(sendto(d, "back", 4, 0, (struct sockaddr *)&from, fl) == 4);
	OBS("v4_got=%zd", recv(s4, b, sizeof(b), 0));
	/* an IPV6_V6ONLY socket leaves the IPv4 port free */
	CHECK(setsockopt(o, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == 0);
	CHECK(bind_to(o, AF_INET6, "::", 0) == 0);
	{
		int s = udp(AF_INET);

		OBS("v4_same_port_as_v6only=%d", bind_to(s, AF_INET, "0.0.0.0", port_of(o)));
		close(s);
		s = udp(AF_INET);
		OBS("v4_same_port_as_dual=%d", bind_to(s, AF_INET, "0.0.0.0", port));
		close(s);
	}
	close(d);
	close(o);
	close(s4);
}

static void
select_poll_epoll_mixed(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), p[2], ep, n;
	struct timeval tv = { 0, 50000 };
	struct pollfd pfd[2];
	struct epoll_event ev, out[4];
	fd_set rs;
	char b[16];

	CHECK(pipe(p) == 0);
	FD_ZERO(&rs);
	FD_SET(r, &rs);
	FD_SET(p[0], &rs);
	n = select((r > p[0] ? r : p[0]) + 1, &rs, NULL, NULL, &tv);
	OBS("select_idle=%d", n);
	CHECK(write(p[1], "p", 1) == 1);
	send_to(s, AF_INET, v4, port, "u", 1);
	usleep(50000);
	FD_ZERO(&rs);
	FD_SET(r, &rs);
	FD_SET(p[0], &rs);
	tv = (struct timeval){ 1, 0 };
	n = select((r > p[0] ? r : p[0]) + 1, &rs, NULL, NULL, &tv);
	OBS("select=%d udp=%d pipe=%d", n, FD_ISSET(r, &rs) != 0, FD_ISSET(p[0], &rs) != 0);
	pfd[0] = (struct pollfd){ .fd = r, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	n = poll(pfd, 2, 1000);
	OBS("poll=%d udp=%d pipe=%d", n, !!(pfd[0].revents & POLLIN), !!(pfd[1].revents & POLLIN));
	ep = epoll_create1(0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = r };
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = p[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	n = epoll_wait(ep, out, 4, 1000);
	OBS("epoll=%d", n);
	/* Level-triggered: readable until read, then not. */
	CHECK(recv(r, b, sizeof(b), 0) == 1);
	CHECK(read(p[0], b, 1) == 1);
	n = epoll_wait(ep, out, 4, 100);
	OBS("epoll_after_read=%d", n);
	/* A datagram arriving while blocked wakes epoll_wait. */
	{
		struct delayed d = { s, AF_INET, v4, port, 100, 5 };
		pthread_t th;
		double t0 = now_s();

		pthread_create(&th, NULL, send_later, &d);
		n = epoll_wait(ep, out, 4, 3000);
		OBS("epoll_woken=%d fd_is_udp=%d waited=%d", n, n == 1 && out[0].data.fd == r,
		    now_s() - t0 > 0.05);
		pthread_join(th, NULL);
	}
	CHECK(strstr(obs, "select_idle=0 select=2 udp=1 pipe=1 poll=2 udp=1 pipe=1 epoll=2 "
			  "epoll_after_read=0 epoll_woken=1 fd_is_udp=1") != NULL);
	close(ep);
	close(p[0]);
	close(p[1]);
	close(r);
	close(s);
}

static void
fork_with_open_socket(void)
{
	uint16_t port, sport;
	int r = receiver(AF_INET, &port), s = receiver(AF_INET, &sport), st;
	pid_t pid;
	char b[64];

	/* Both sockets are bound before fork(): under the preload library a
	 * socket's first bind/connect/sendto decides where it lives, and a
	 * socket forked before that decision stays the kernel's in the other
	 * process (docs/udp-termination.md, "What differs"). */
	set_rcvtimeo(r, 3000);
	pid = fork();
	if (pid == 0) {
		ssize_t n = recv(r, b, sizeof(b), 0);

		/* the child answers through the inherited socket too */
		send_to(r, AF_INET, v4, port_of(s), "child", 5);
		_exit(n == 5 && memcmp(b, "hello", 5) == 0 ? 0 : 1);
	}
	CHECK(send_to(s, AF_INET, v4, port, "hello", 5) == 5);
	waitpid(pid, &st, 0);
	OBS("child_ok=%d", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	set_rcvtimeo(s, 2000);
	OBS("reply=%zd", recv(s, b, sizeof(b), 0));
	/* the parent's socket still works after the child exited */
	send_to(s, AF_INET, v4, port, "again", 5);
	OBS("parent_after=%zd", recv(r, b, sizeof(b), 0));
	CHECK(strstr(obs, "child_ok=1 reply=5 parent_after=5") != NULL);
	close(r);
	close(s);
}

static void
exec_of_a_child(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), cx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	char fdarg[16], cxarg[16], b[64];
	pid_t pid;
	int st;

	CHECK(bind_to(cx, AF_INET, v4, 0) == 0);
	set_rcvtimeo(s, 3000);
	snprintf(fdarg, sizeof(fdarg), "%d", r);
	snprintf(cxarg, sizeof(cxarg), "%d", cx);
	pid = fork();
	if (pid == 0) {
		execl(self_path, self_path, "--exec-child", fdarg, cxarg, (char *)NULL);
		_exit(127);
	}
	usleep(200000);
	CHECK(send_to(s, AF_INET, v4, port, "to-exec", 7) == 7);
	OBS("reply=%zd", recv(s, b, sizeof(b), 0));
	waitpid(pid, &st, 0);
	OBS("exit=%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(r);
	close(s);
	close(cx);
}

/* In the exec'd child: the inherited socket receives and answers; the
 * close-on-exec one is gone. */
static int
exec_child(int fd, int cx)
{
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	char b[64];
	ssize_t n;

	set_rcvtimeo(fd, 3000);
	n = recvfrom(fd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	if (n != 7 || sendto(fd, "exec-ok", 7, 0, (struct sockaddr *)&from, fl) != 7)
		return 1;
	return fcntl(cx, F_GETFD) < 0 && errno == EBADF ? 0 : 2;
}

static void
dup2_over_a_descriptor(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), p[2], q[2], other;
	char b[64];

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	other = p[0];
	set_rcvtimeo(r, 2000);
	/* the socket over an unrelated descriptor (a pipe's read end) */
	CHECK(dup2(s, other) == other);
	CHECK(send_to(other, AF_INET, v4, port, "via-dup", 7) == 7);
	OBS("via_dup=%zd", recv(r, b, sizeof(b), 0));
	/* closing the original keeps the socket alive through the copy */
	close(s);
	CHECK(send_to(other, AF_INET, v4, port, "still", 5) == 5);
	OBS("after_close=%zd", recv(r, b, sizeof(b), 0));
	/* and dup2 of another pipe's write end over the socket replaces it */
	CHECK(dup2(q[1], other) == other);
	OBS("now_pipe_write=%zd", write(other, "p", 1));
	OBS("pipe_read=%zd", read(q[0], b, 1));
	{
		int t = 0;
		socklen_t tl = sizeof(t);

		OBS_CALL("sockopt_on_pipe", getsockopt(other, SOL_SOCKET, SO_TYPE, &t, &tl));
	}
	CHECK(strstr(obs, "via_dup=7 after_close=5 now_pipe_write=1 pipe_read=1") != NULL);
	close(r);
	close(other);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

struct blocked { int fd; ssize_t n; int err; };

static void *
recv_blocked(void *arg)
{
	struct blocked *bl = arg;
	char b[64];

	bl->n = recv(bl->fd, b, sizeof(b), 0);
	bl->err = bl->n < 0 ? errno : 0;
	return NULL;
}

static void
close_from_another_thread(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), again;
	struct blocked bl = { r, 0, 0 };
	pthread_t th;

	set_rcvtimeo(r, 1500);
	pthread_create(&th, NULL, recv_blocked, &bl);
	usleep(200000);
	close(r);
	/* the socket lives while the blocked call holds it */
	send_to(s, AF_INET, v4, port, "late", 4);
	pthread_join(th, NULL);
	OBS("blocked_recv=%zd errno=%d", bl.n, bl.err);
	usleep(100000);
	again = udp(AF_INET);
	OBS("port_free_after=%d", bind_to(again, AF_INET, v4, port));
	close(again);
	close(s);
}

static void
names_and_options(void)
{
	int fd = udp(AF_INET), v = 0, one = 1, tos = 0x28;
	socklen_t l = sizeof(v);
	char a[64];

	CHECK(bind_to(fd, AF_INET, v4, 0) == 0);
	OBS("local=%s ephemeral=%d", addr_of(fd, false, a, sizeof(a)), port_of(fd) >= 1024);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l);
	OBS("type=%d", v);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l);
	OBS("domain=%d", v);
	getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l);
	OBS("protocol=%d", v);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &l);
	OBS("error=%d", v);
	v = 100000;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l);
	OBS("rcvbuf=%d", v);
	v = 100000;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &l);
	OBS("sndbuf=%d", v);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &l);
	OBS("reuseaddr=%d", v);
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	getsockopt(fd, IPPROTO_IP, IP_TOS, &v, &l);
	OBS("tos=%d", v);
	{
		struct timeval tv = { 1, 500000 }, got = { 0, 0 };
		socklen_t tl = sizeof(got);

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &got, &tl);
		OBS("rcvtimeo=%ld.%06ld", (long)got.tv_sec, (long)got.tv_usec);
	}
	{
		int f6 = udp(AF_INET6);

		getsockopt(f6, IPPROTO_IPV6, IPV6_V6ONLY, &v, &l);
		OBS("v6only_default=%d", v);
		close(f6);
	}
	close(fd);
}

static void
connection_refused(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), c = udp(AF_INET), v = -1;
	socklen_t l = sizeof(v);
	char b[16];
	ssize_t n;

	close(r);       /* nobody listens on port now */
	usleep(50000);
	CHECK(connect_to(c, AF_INET, v4, port) == 0);
	set_rcvtimeo(c, 1000);
	CHECK(send(c, "x", 1, 0) == 1);
	n = recv(c, b, sizeof(b), 0);
	OBS("recv=%zd errno=%d", n, n < 0 ? errno : 0);
	CHECK(n < 0 && errno == ECONNREFUSED);
	CHECK(send(c, "x", 1, 0) == 1);
	usleep(100000);
	OBS_CALL("next_send", send(c, "y", 1, 0));
	CHECK(send(c, "x", 1, 0) == 1 || errno == ECONNREFUSED);
	usleep(100000);
	getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &l);
	OBS("so_error=%d", v);
	close(c);
}

static void
mmsg_batches(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET);
	struct mmsghdr out[5], in[8];
	struct iovec oi[5], ii[8];
	char ob[5][100], ib[8][200];
	struct sockaddr_storage dst;
	socklen_t dl = sa_make(&dst, AF_INET, v4, port);
	struct timespec to = { 1, 0 };
	int n;

	memset(out, 0, sizeof(out));
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 5; i++) {
		memset(ob[i], '0' + i, sizeof(ob[i]));
		oi[i] = (struct iovec){ ob[i], (size_t)(10 * (i + 1)) };
		out[i].msg_hdr.msg_iov = &oi[i];
		out[i].msg_hdr.msg_iovlen = 1;
		out[i].msg_hdr.msg_name = &dst;
		out[i].msg_hdr.msg_namelen = dl;
	}
	for (int i = 0; i < 8; i++) {
		ii[i] = (struct iovec){ ib[i], sizeof(ib[i]) };
		in[i].msg_hdr.msg_iov = &ii[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	n = sendmmsg(s, out, 5, 0);
	OBS("sent=%d", n);
	usleep(100000);
	n = recvmmsg(r, in, 8, MSG_WAITFORONE, &to);
	OBS("received=%d", n);
	for (int i = 0; i < n && i < 8; i++)
		OBS("len%d=%u", i, in[i].msg_len);
	CHECK(n == 5);
	close(r);
	close(s);
}

static void
iovecs_make_one_datagram(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET);
	struct sockaddr_storage dst;
	struct iovec iov[3] = { { "abc", 3 }, { "", 0 }, { "defgh", 5 } }, rv[2];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 3 };
	char p1[4], p2[16];

	m.msg_name = &dst;
	m.msg_namelen = sa_make(&dst, AF_INET, v4, port);
	set_rcvtimeo(r, 2000);
	OBS("sendmsg=%zd", sendmsg(s, &m, 0));
	rv[0] = (struct iovec){ p1, sizeof(p1) };
	rv[1] = (struct iovec){ p2, sizeof(p2) };
	m = (struct msghdr){ .msg_iov = rv, .msg_iovlen = 2 };
	OBS("recvmsg=%zd head=%.4s tail=%.4s", recvmsg(r, &m, 0), p1, p2);
	OBS("then=%zd", recv(r, p2, sizeof(p2), MSG_DONTWAIT));
	CHECK(strstr(obs, "sendmsg=8 recvmsg=8 head=abcd tail=efgh then=-1") != NULL);
	close(r);
	close(s);
}

static void
pktinfo_gives_destination(void)
{
	uint16_t port;
	int r = udp(AF_INET), s = udp(AF_INET), one = 1;
	char cbuf[256], b[16], a[64];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	int found = 0, tos = -1;

	CHECK(bind_to(r, AF_INET, "0.0.0.0", 0) == 0);
	port = port_of(r);
	setsockopt(r, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	setsockopt(r, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	set_rcvtimeo(r, 2000);
	{
		int t = 0x48;

		setsockopt(s, IPPROTO_IP, IP_TOS, &t, sizeof(t));
	}
	send_to(s, AF_INET, v4b, port, "pi", 2);
	OBS("recvmsg=%zd", recvmsg(r, &m, 0));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			inet_ntop(AF_INET, &pi.ipi_addr, a, sizeof(a));
			found = strcmp(a, v4b) == 0;
		}
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			tos = *(uint8_t *)CMSG_DATA(c);
	}
	OBS("pktinfo_dst=%d tos=%d", found, tos);
	CHECK(found && tos == 0x48);
	close(r);
	close(s);
}

static void
oversize_and_port_zero(void)
{
	int s = udp(AF_INET);
	static char big[65600];

	OBS_CALL("65508", send_to(s, AF_INET, v4, 9, big, 65508));
	OBS_CALL("port0", send_to(s, AF_INET, v4, 0, "x", 1));
	OBS_CALL("v6_65528", send_to(udp(AF_INET6), AF_INET6, v6, 9, big, 65528));
	CHECK(strstr(obs, "errno=90") != NULL && strstr(obs, "errno=22") != NULL);
	close(s);
}

static void
shutdown_semantics(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), c = udp(AF_INET);
	struct blocked bl = { c, 0, 0 };
	pthread_t th;

	OBS_CALL("unconnected", shutdown(r, SHUT_RD));
	CHECK(connect_to(c, AF_INET, v4, port) == 0);
	set_rcvtimeo(c, 2000);
	pthread_create(&th, NULL, recv_blocked, &bl);
	usleep(200000);
	OBS("connected=%d", shutdown(c, SHUT_RDWR));
	pthread_join(th, NULL);
	OBS("woken_recv=%zd errno=%d", bl.n, bl.err);
	{
		static volatile sig_atomic_t pipes;
		struct sigaction sa = { .sa_handler = SIG_IGN };

		(void)pipes;
		sigaction(SIGPIPE, &sa, NULL);
	}
	OBS_CALL("send_after", send(c, "x", 1, 0));
	close(r);
	close(c);
}

static void
zero_length_datagram(void)
{
	uint16_t port;
	int r = receiver(AF_INET, &port), s = udp(AF_INET), avail = -1;
	char b[8];

	set_rcvtimeo(r, 2000);
	OBS("send=%zd", send_to(s, AF_INET, v4, port, "", 0));
	usleep(50000);
	{
		struct pollfd p = { .fd = r, .events = POLLIN };

		OBS("readable=%d", poll(&p, 1, 1000));
	}
	ioctl(r, FIONREAD, &avail);
	OBS("fionread=%d recv=%zd", avail, recv(r, b, sizeof(b), 0));
	OBS("after=%zd", recv(r, b, sizeof(b), MSG_DONTWAIT));
	CHECK(strstr(obs, "send=0 readable=1 fionread=0 recv=0 after=-1") != NULL);
	close(r);
	close(s);
}

/* ---- harness ---- */

struct test_case { const char *name; void (*fn)(void); };

static const struct test_case cases[] = {
	{ "nonblocking_recv_eagain", nonblocking_recv_eagain },
	{ "blocking_recv_waits_for_datagram", blocking_recv_waits_for_datagram },
	{ "receive_timeout", receive_timeout },
	{ "message_boundaries", message_boundaries },
	{ "truncation_flagged", truncation_flagged },
	{ "peek_and_fionread", peek_and_fionread },
	{ "zero_length_datagram", zero_length_datagram },
	{ "connected_vs_unconnected_send", connected_vs_unconnected_send },
	{ "connect_unspec_dissolves", connect_unspec_dissolves },
	{ "wildcard_vs_specific_bind", wildcard_vs_specific_bind },
	{ "port_in_use", port_in_use },
	{ "reuseport_group", reuseport_group },
	{ "ipv6_send_receive", ipv6_send_receive },
	{ "ipv4_mapped_dual_stack", ipv4_mapped_dual_stack },
	{ "select_poll_epoll_mixed", select_poll_epoll_mixed },
	{ "fork_with_open_socket", fork_with_open_socket },
	{ "exec_of_a_child", exec_of_a_child },
	{ "dup2_over_a_descriptor", dup2_over_a_descriptor },
	{ "close_from_another_thread", close_from_another_thread },
	{ "names_and_options", names_and_options },
	{ "connection_refused", connection_refused },
	{ "mmsg_batches", mmsg_batches },
	{ "iovecs_make_one_datagram", iovecs_make_one_datagram },
	{ "pktinfo_gives_destination", pktinfo_gives_destination },
	{ "oversize_and_port_zero", oversize_and_port_zero },
	{ "shutdown_semantics", shutdown_semantics },
};

static void
json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s >= 32 ? *s : '?');
	}
	putchar('"');
}

static void
run(const struct test_case *tc)
{
	int p[2], st;
	pid_t pid;
	char buf[sizeof(obs) + sizeof(why) + 8];
	ssize_t n = 0, k;

	if (pipe(p) < 0)
		exit(2);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		alarm(10);
		obs[0] = why[0] = '\0';
		tc->fn();
		check_leaks();
		snprintf(buf, sizeof(buf), "%d\n%s\n%s", failed ? 0 : 1, obs, why);
		if (write(p[1], buf, strlen(buf)) < 0)
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	while ((k = read(p[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += k;
	buf[n] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	printf("{\"case\": ");
	json_str(tc->name);
	if (n == 0 || !WIFEXITED(st)) {
		printf(", \"ok\": false, \"obs\": \"\", \"why\": \"died: %s %d\"}\n",
		       WIFSIGNALED(st) ? "signal" : "status",
		       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	} else {
		char *o = strchr(buf, '\n'), *w = o != NULL ? strchr(o + 1, '\n') : NULL;

		if (o != NULL)
			*o++ = '\0';
		if (w != NULL)
			*w++ = '\0';
		printf(", \"ok\": %s, \"obs\": ", buf[0] == '1' ? "true" : "false");
		json_str(o != NULL ? o : "");
		printf(", \"why\": ");
		json_str(w != NULL ? w : "");
		printf("}\n");
	}
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	int first = 1;
	bool any = false;

	self_path = argv[0];
	if (argc == 4 && strcmp(argv[1], "--exec-child") == 0)
		return exec_child(atoi(argv[2]), atoi(argv[3]));
	while (first < argc && strncmp(argv[first], "--", 2) == 0) {
		if (strcmp(argv[first], "--list") == 0) {
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				printf("%s\n", cases[i].name);
			return 0;
		}
		if (first + 1 >= argc)
			break;
		if (strcmp(argv[first], "--v4") == 0)
			v4 = argv[first + 1];
		else if (strcmp(argv[first], "--v4b") == 0)
			v4b = argv[first + 1];
		else if (strcmp(argv[first], "--v6") == 0)
			v6 = argv[first + 1];
		first += 2;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool want = first >= argc;

		for (int a = first; a < argc; a++)
			want = want || strcmp(argv[a], cases[i].name) == 0;
		if (want) {
			run(&cases[i]);
			any = true;
		}
	}
	return any ? 0 : 2;
}
