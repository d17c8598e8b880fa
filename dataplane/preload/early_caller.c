/*
 * libepl-early-caller.so: a test helper, preloaded beside
 * libedgeplane-preload.so, whose constructor makes the interposed calls
 * before the library's constructor has run (the dynamic loader runs the
 * constructors of preloaded objects in the reverse of their LD_PRELOAD order,
 * so "libedgeplane-preload.so libepl-early-caller.so" runs this one first;
 * tests/test_preload_early_calls.py checks the order with LD_DEBUG=files).
 * This is what ASAN's runtime, another preloaded library or any program's
 * ELF constructor may do: every call must reach libc, not a NULL pointer.
 *
 * It prints one line, "early-calls: ok <n>" or "early-calls: FAIL <call>
 * <errno>", and exits with status 3 on a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static int calls;

static void
check(int ok, const char *call)
{
	char line[96];
	int n;

	calls++;
	if (ok)
		return;
	n = snprintf(line, sizeof(line), "early-calls: FAIL %s %d\n", call, errno);
	(void)!write(1, line, (size_t)n);
	_exit(3);
}

static void
on_usr1(int sig)
{
	(void)sig;
}

static void __attribute__((constructor))
early_calls(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_usr1 };
	socklen_t alen = sizeof(a);
	char buf[16] = "early", line[64];
	struct iovec iov = { buf, 5 };
	int fd, fd2, on = 1, avail = 0, n;
	struct pollfd pfd;
	fd_set rd;

	check(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	check(signal(SIGUSR2, SIG_IGN) != SIG_ERR, "signal");
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	check(fd >= 0, "socket");
	check(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0, "setsockopt");
	check(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
	check(getsockname(fd, (struct sockaddr *)&a, &alen) == 0, "getsockname");
	check(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	check(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl");
	check(ioctl(fd, FIONBIO, &on) == 0, "ioctl");
	check(recv(fd, buf, sizeof(buf), 0) < 0 && errno == EAGAIN, "recv-empty");
	check(send(fd, buf, 5, 0) == 5, "send");
	check(write(fd, buf, 5) == 5, "write");
	check(writev(fd, &iov, 1) == 5, "writev");
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	check(poll(&pfd, 1, 5000) == 1, "poll");
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	check(select(fd + 1, &rd, NULL, NULL, NULL) == 1, "select");
	check(ioctl(fd, FIONREAD, &avail) == 0 && avail == 5, "ioctl-fionread");
	check(recvfrom(fd, buf, sizeof(buf), 0, NULL, NULL) == 5, "recvfrom");
	check(read(fd, buf, sizeof(buf)) == 5, "read");
	check(readv(fd, &iov, 1) == 5, "readv");
	fd2 = dup(fd);
	check(fd2 >= 0, "dup");
	check(dup2(fd, fd2) == fd2, "dup2");
	check(shutdown(fd2, SHUT_RDWR) == 0 || errno == ENOTCONN, "shutdown");
	check(close(fd2) == 0, "close-dup");
	check(close(fd) == 0, "close");
	n = snprintf(line, sizeof(line), "early-calls: ok %d\n", calls);
	(void)!write(1, line, (size_t)n);
}
