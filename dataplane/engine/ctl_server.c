/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket server: connections, queues and deadlines.  It runs on
 * the control thread (main lcore), which also runs every table writer, so
 * nothing here may wait on a client: sockets are non-blocking and poll()
 * drives both directions.  What a client may count on (docs/architecture.md,
 * "Control socket guarantees"):
 *
 *   per client                       limit              when passed
 *   ------------------------------   ----------------   ---------------------------
 *   one request line                 8 MiB              error answer, then closed
 *   time to finish a started line    5 s                error answer, then closed
 *   queued answers not yet read      256 KiB            its next requests wait unread
 *   no byte of its answers taken     5 s                closed (nothing is waited for)
 *   one answer                       64 MiB             error answer instead
 *   requests served per poll round   8                  the rest wait for the next round
 *
 *   clients: 64.  A 65th connection closes the oldest one that is stalled
 *   mid-line, else the one idle the longest; if every client is busy the new
 *   one gets an error line and is closed.
 *
 * One poll round:
 *
 *   poll(listener, clients: POLLIN if it may send requests, POLLOUT if an
 *        answer is queued; timeout = 0 if requests are waiting, else the
 *        nearest deadline, at most the caller's)
 *   for each client: send what it will take; read one chunk (64 KiB) only if
 *        no whole request line is already buffered; serve up to 8 lines;
 *        check its deadlines
 *   accept new connections (evicting as above)
 *
 * So a flooding client's requests wait in its own buffer and socket (it
 * costs at most 8 requests per round), a client that does not read stops
 * being served once 256 KiB of answers wait for it and is closed 5 s later,
 * and 64 stalled connections cannot lock out an operator.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "engine_internal.h"

#define EP_CTL_MAX_LINE       (8u << 20)   /* acl-replace with many rules */
#define EP_CTL_LINE_MS        5000u        /* a started line must be done within */
#define EP_CTL_SEND_MS        5000u        /* queued answers must move within */
#define EP_CTL_OUT_PAUSE      (256u << 10) /* stop reading a client above this */
#define EP_CTL_MAX_RESPONSE   (64u << 20)
#define EP_CTL_REQS_PER_ROUND 8
#define EP_CTL_READ_CHUNK     65536
#define EP_CTL_ACCEPT_PER_ROUND 16
#define EP_CTL_MAX_CLIENTS    64

struct ep_ctl_client {
	int fd;
	char *in;                 /* received bytes; in[in_off, in_len) not yet served */
	size_t in_off, in_len, in_cap;
	size_t scanned;           /* in[in_off, scanned) holds no newline */
	char *out;                /* answers; out[out_off, out_len) not yet sent */
	size_t out_off, out_len, out_cap;
	uint64_t line_ms;         /* when the unfinished line began; 0 if none */
	uint64_t stall_ms;        /* since when queued answers have not moved; 0 if none */
	uint64_t active_ms;       /* last request served or byte sent: eviction order */
	bool eof;                 /* the client shut its sending side */
	bool gone;                /* hung up: answers cannot be delivered */
	bool closing;             /* answered a fatal error: flush, then close */
	struct ep_ctl_client *next_client;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the socket file ---- */

/*
 * Take the path for our socket.  Only a socket whose server is gone (connect
 * refused) is removed: a live socket is another instance, and anything that
 * is not a socket (a file named by mistake) is never deleted.
 */
static int
claim_path(const char *path, const struct sockaddr_un *sa, struct ep_err *err)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 :
			ep_err_set(err, "control socket %s: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return ep_err_set(err, "control socket %s: exists and is not a socket; "
				  "not replacing it", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ep_err_set(err, "control socket: %s", strerror(errno));
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	if (rc == 0 || errno == EAGAIN) {
		/* EAGAIN: its backlog is full, so its server is alive. */
		close(fd);
		return ep_err_set(err, "control socket %s is in use by another edgeplane-dp",
				  path);
	}
	close(fd);
	if (errno != ECONNREFUSED)
		return ep_err_set(err, "control socket %s: %s", path, strerror(errno));
	if (unlink(path) < 0 && errno != ENOENT)
		return ep_err_set(err, "control socket %s: stale, cannot remove: %s", path,
				  strerror(errno));
	return 0;
}

int
ep_ctl_open(struct ep_engine *e, struct ep_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(e->ctl_path)], *slash;
	struct stat st;
	mode_t old;
	int fd;

	snprintf(dir, sizeof(dir), "%s", e->ctl_path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return ep_err_set(err, "control socket directory %s: %s", dir,
					  strerror(errno));
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->ctl_path);
	if (claim_path(e->ctl_path, &sa, err) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ep_err_set(err, "control socket: %s", strerror(errno));
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		umask(old);
		close(fd);
		return ep_err_set(err, "control socket %s: bind: %s", e->ctl_path, strerror(errno));
	}
	umask(old);
	if (chmod(e->ctl_path, 0600) < 0 || listen(fd, 64) < 0 || lstat(e->ctl_path, &st) < 0) {
		ep_err_set(err, "control socket %s: %s", e->ctl_path, strerror(errno));
		close(fd);
		unlink(e->ctl_path);
		return -1;
	}
	e->ctl_fd = fd;
	e->ctl_dev = st.st_dev;
	e->ctl_ino = st.st_ino;
	return 0;
}

/* ---- one client ---- */

static void
client_close(struct ep_engine *e, struct ep_ctl_client *c)
{
	struct ep_ctl_client **pp = &e->ctl_clients;

	while (*pp != c)
		pp = &(*pp)->next_client;
	*pp = c->next_client;
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
	e->n_ctl_clients--;
}

static size_t
out_pending(const struct ep_ctl_client *c)
{
	return c->out_len - c->out_off;
}

static int
out_append(struct ep_ctl_client *c, const char *s, size_t n)
{
	if (c->gone)
		return 0;
	if (c->out_off != 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + n > c->out_cap) {
		size_t pending = out_pending(c);
		size_t cap = RTE_MAX(pending + n, 2 * pending + 4096);
		char *nb = malloc(cap);

		if (nb == NULL)
			return -1;
		if (pending != 0)
			memcpy(nb, c->out + c->out_off, pending);
		free(c->out);
		c->out = nb;
		c->out_cap = cap;
		c->out_off = 0;
		c->out_len = pending;
	}
	memcpy(c->out + c->out_len, s, n);
	c->out_len += n;
	return 0;
}

/* An error line, for answers the dispatcher never saw. */
static int
out_error(struct ep_ctl_client *c, const char *msg)
{
	json_t *j = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	int rc = s != NULL ? out_append(c, s, strlen(s)) : -1;

	if (rc == 0)
		rc = out_append(c, "\n", 1);
	free(s);
	json_decref(j);
	return rc;
}

/* Send what the socket takes now; -1 if the client is gone. */
static int
flush(struct ep_ctl_client *c, uint64_t now)
{
	while (out_pending(c) != 0) {
		ssize_t k = send(c->fd, c->out + c->out_off, out_pending(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (k <= 0)
			return -1;
		c->out_off += (size_t)k;
		c->stall_ms = 0;
		c->active_ms = now;
	}
	if (out_pending(c) != 0 && c->stall_ms == 0)
		c->stall_ms = now;
	return 0;
}

static int
serve_line(struct ep_engine *e, struct ep_ctl_client *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr), *resp;
	char *out;
	int rc;

	if (req == NULL) {
		char msg[300];

		snprintf(msg, sizeof(msg), "bad JSON at column %d: %s", jerr.column, jerr.text);
		return out_error(c, msg);
	}
	resp = ep_ctl_dispatch(e, req);
	json_decref(req);
	out = resp != NULL ? json_dumps(resp, JSON_COMPACT) : NULL;
	json_decref(resp);
	if (out == NULL)
		return out_error(c, "out of memory building the answer");
	if (strlen(out) > EP_CTL_MAX_RESPONSE) {
		char msg[160];

		snprintf(msg, sizeof(msg), "answer of %zu bytes is over the %u MiB limit: ask for "
			 "less (limit=, offset=)", strlen(out), EP_CTL_MAX_RESPONSE >> 20);
		free(out);
		return out_error(c, msg);
	}
	rc = out_append(c, out, strlen(out));
	if (rc == 0)
		rc = out_append(c, "\n", 1);
	free(out);
	return rc;
}

/* The next whole line in the input buffer, or NULL. */
static char *
next_line(struct ep_ctl_client *c, size_t *len)
{
	char *start, *nl;

	if (c->scanned == c->in_len)
		return NULL;
	start = c->in + c->in_off;
	nl = memchr(c->in + c->scanned, '\n', c->in_len - c->scanned);
	if (nl == NULL) {
		c->scanned = c->in_len;
		return NULL;
	}
	*len = (size_t)(nl - start);
	c->in_off = (size_t)(nl - c->in) + 1;
	c->scanned = c->in_off;
	return start;
}

static bool
has_line(const struct ep_ctl_client *c)
{
	return c->scanned < c->in_len &&
	       memchr(c->in + c->scanned, '\n', c->in_len - c->scanned) != NULL;
}

/* Whether to read this client's socket this round. */
static bool
may_read(const struct ep_ctl_client *c)
{
	return !c->eof && !c->closing && out_pending(c) < EP_CTL_OUT_PAUSE && !has_line(c);
}

/* Serve up to EP_CTL_REQS_PER_ROUND whole lines. */
static int
serve(struct ep_engine *e, struct ep_ctl_client *c, uint64_t now)
{
	char *line;
	size_t len;

	for (int n = 0; n < EP_CTL_REQS_PER_ROUND && !c->closing &&
	     out_pending(c) < EP_CTL_OUT_PAUSE; n++) {
		line = next_line(c, &len);
		if (line == NULL)
			break;
		c->active_ms = now;
		if (len != 0 && serve_line(e, c, line, len) < 0)
			return -1;
		c->line_ms = c->in_off < c->in_len ? now : 0;
	}
	/* At end of input, an unterminated last line is still a request. */
	if (c->eof && !c->closing && !has_line(c) && c->in_off < c->in_len &&
	    out_pending(c) < EP_CTL_OUT_PAUSE) {
		len = c->in_len - c->in_off;
		line = c->in + c->in_off;
		c->in_off = c->scanned = c->in_len;
		c->line_ms = 0;
		if (serve_line(e, c, line, len) < 0)
			return -1;
	}
	return 0;
}

/* One recv of at most EP_CTL_READ_CHUNK bytes; -1 if the client is gone. */
static int
client_read(struct ep_ctl_client *c, uint64_t now)
{
	const char *nl;
	ssize_t k;

	if (c->in_off != 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->scanned -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_cap - c->in_len < EP_CTL_READ_CHUNK) {
		size_t cap = RTE_MAX(2 * c->in_cap, c->in_len + EP_CTL_READ_CHUNK);
		char *nb = realloc(c->in, cap);

		if (nb == NULL)
			return -1;
		c->in = nb;
		c->in_cap = cap;
	}
	k = recv(c->fd, c->in + c->in_len, EP_CTL_READ_CHUNK, MSG_DONTWAIT);
	if (k < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
	if (k == 0) {
		c->eof = true;
		return 0;
	}
	if (c->in_len == 0)
		c->line_ms = now;
	c->in_len += (size_t)k;
	/* Only read with no whole line buffered: the first newline, if any
	 * came, ends the one line being received. */
	nl = memchr(c->in + c->scanned, '\n', c->in_len - c->scanned);
	if ((size_t)((nl != NULL ? nl : c->in + c->in_len) - c->in) > EP_CTL_MAX_LINE) {
		c->in_off = c->in_len = c->scanned = 0;
		c->closing = true;
		return out_error(c, "request line longer than 8 MiB");
	}
	return 0;
}

/* A client's deadlines; -1 to close it now. */
static int
deadlines(struct ep_ctl_client *c, uint64_t now)
{
	if (c->stall_ms != 0 && now - c->stall_ms >= EP_CTL_SEND_MS)
		return -1;      /* it does not read: not waited for */
	if (c->line_ms != 0 && !c->closing && !has_line(c) && c->in_off < c->in_len &&
	    now - c->line_ms >= EP_CTL_LINE_MS) {
		c->in_off = c->in_len = c->scanned = 0;
		c->line_ms = 0;
		c->closing = true;
		return out_error(c, "request line not completed within 5 s");
	}
	return 0;
}

/* Done with a client: nothing more will come and nothing is left to send. */
static bool
finished(const struct ep_ctl_client *c)
{
	if (c->gone)
		return c->eof && !has_line(c);
	return out_pending(c) == 0 && (c->closing || (c->eof && !has_line(c) &&
							 c->in_off == c->in_len));
}

static void
client_round(struct ep_engine *e, struct ep_ctl_client *c, short revents, uint64_t now)
{
	int rc = 0;

	if ((revents & (POLLHUP | POLLERR)) != 0) {
		/* Hung up: requests it already sent still run, answers are dropped. */
		c->gone = true;
		c->out_off = c->out_len = 0;
		c->stall_ms = 0;
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && (may_read(c) || (c->gone &&
	    !c->eof && !has_line(c))))
		rc = client_read(c, now);
	if (rc == 0)
		rc = serve(e, c, now);
	if (rc == 0 && !c->gone)
		rc = flush(c, now);
	if (rc == 0)
		rc = deadlines(c, now);
	if (rc == 0 && !c->gone && out_pending(c) != 0)
		rc = flush(c, now);     /* a deadline's error line */
	if (rc < 0 || finished(c))
		client_close(e, c);
}

/* ---- the client table ---- */

/* The client to close for a new one: the oldest stalled mid-line, else the
 * one idle the longest; NULL if every client has work in flight. */
static struct ep_ctl_client *
eviction_victim(struct ep_engine *e)
{
	struct ep_ctl_client *partial = NULL, *idle = NULL;

	for (struct ep_ctl_client *c = e->ctl_clients; c != NULL; c = c->next_client) {
		char b;

		if (out_pending(c) != 0 || c->closing || has_line(c))
			continue;
		if (c->in_off < c->in_len) {
			if (partial == NULL || c->line_ms < partial->line_ms)
				partial = c;
		} else if ((idle == NULL || c->active_ms < idle->active_ms) &&
			   recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0) {
			/* Idle, and no request arrived since this round's read:
			 * closing it loses nothing it asked for. */
			idle = c;
		}
	}
	return partial != NULL ? partial : idle;
}

static void
say_and_close(int fd, const char *line)
{
	ssize_t k = send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)k;    /* best effort: the connection is closed either way */
	close(fd);
}

static void
accept_clients(struct ep_engine *e, uint64_t now)
{
	for (int i = 0; i < EP_CTL_ACCEPT_PER_ROUND; i++) {
		int fd = accept4(e->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ep_ctl_client *c, **pp;

		if (fd < 0) {
			/* Out of descriptors: leave the backlog for 100 ms rather
			 * than spin on a listener that stays readable. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				e->ctl_accept_after_ms = now + 100;
			return;
		}
		if (e->n_ctl_clients >= EP_CTL_MAX_CLIENTS) {
			struct ep_ctl_client *v = eviction_victim(e);

			if (v == NULL) {
				say_and_close(fd, "{\"ok\":false,\"error\":\"control socket busy: "
					      "every client slot has a request in flight\"}\n");
				continue;
			}
			say_and_close(v->fd, "{\"ok\":false,\"error\":\"connection closed: "
				      "client slots full and this one was stalled or idle "
				      "the longest\"}\n");
			v->fd = -1;
			client_close(e, v);
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->active_ms = now;
		/* At the tail: the list is in accept order, so among equal times
		 * the oldest connection comes first (eviction, fairness). */
		for (pp = &e->ctl_clients; *pp != NULL; pp = &(*pp)->next_client)
			;
		*pp = c;
		e->n_ctl_clients++;
	}
}

/* Descriptors pipelines asked the control thread to watch. */
static struct {
	int fd;
	void (*fn)(void *arg);
	void *arg;
} watch[EP_CTL_MAX_WATCH];
static int n_watch;

int
ep_ctl_watch(struct ep_engine *e, int fd, void (*fn)(void *arg), void *arg)
{
	if (n_watch == EP_CTL_MAX_WATCH)
		return -1;
	watch[n_watch].fd = fd;
	watch[n_watch].fn = fn;
	watch[n_watch].arg = arg;
	n_watch++;
	return 0;
}

void
ep_ctl_unwatch(struct ep_engine *e, int fd)
{
	for (int i = 0; i < n_watch; i++)
		if (watch[i].fd == fd) {
			watch[i] = watch[--n_watch];
			return;
		}
}

void
ep_ctl_poll(struct ep_engine *e, int timeout_ms)
{
	struct pollfd pfd[EP_CTL_MAX_CLIENTS + 1 + EP_CTL_MAX_WATCH];
	struct ep_ctl_client *cl[EP_CTL_MAX_CLIENTS], *next;
	uint64_t now = now_ms(), wake = now + (uint64_t)timeout_ms;
	bool listen = now >= e->ctl_accept_after_ms;
	int n = 1, k, first_watch;

	pfd[0] = (struct pollfd){ .fd = listen ? e->ctl_fd : -1, .events = POLLIN };
	for (struct ep_ctl_client *c = e->ctl_clients; c != NULL; c = c->next_client) {
		short ev = 0;

		if (may_read(c) || (c->gone && !c->eof))
			ev |= POLLIN;
		if (out_pending(c) != 0)
			ev |= POLLOUT;
		if ((has_line(c) && out_pending(c) < EP_CTL_OUT_PAUSE) || finished(c))
			wake = now;         /* work waiting in our own buffer */
		if (c->stall_ms != 0)
			wake = RTE_MIN(wake, c->stall_ms + EP_CTL_SEND_MS);
		if (c->line_ms != 0 && c->in_off < c->in_len)
			wake = RTE_MIN(wake, c->line_ms + EP_CTL_LINE_MS);
		cl[n - 1] = c;
		pfd[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
	}
	if (!listen)
		wake = RTE_MIN(wake, e->ctl_accept_after_ms);
	first_watch = n;
	for (int i = 0; i < n_watch; i++)
		pfd[n++] = (struct pollfd){ .fd = watch[i].fd, .events = POLLIN };
	k = poll(pfd, (nfds_t)n, wake > now ? (int)(wake - now) : 0);
	if (k < 0)
		return;
	/* Watched descriptors first: a callback may unwatch (n_watch shrinks),
	 * so each is matched by descriptor, not by slot. */
	for (int i = first_watch; i < n; i++) {
		if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
			continue;
		for (int j = 0; j < n_watch; j++)
			if (watch[j].fd == pfd[i].fd) {
				watch[j].fn(watch[j].arg);
				break;
			}
	}
	n = first_watch;
	now = now_ms();
	/* Clients in list order; one that is closed is not touched again. */
	for (int i = 1; i < n; i++) {
		next = cl[i - 1];
		client_round(e, next, pfd[i].revents, now);
	}
	if ((pfd[0].revents & POLLIN) != 0)
		accept_clients(e, now);
}

void
ep_ctl_close(struct ep_engine *e)
{
	struct stat st;

	while (e->ctl_clients != NULL)
		client_close(e, e->ctl_clients);
	if (e->ctl_fd > 0) {
		close(e->ctl_fd);
		/* Only our own socket: not one another process put in its place. */
		if (lstat(e->ctl_path, &st) == 0 && st.st_dev == e->ctl_dev &&
		    st.st_ino == e->ctl_ino)
			unlink(e->ctl_path);
		e->ctl_fd = -1;
	}
}
