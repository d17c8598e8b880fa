/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket server, polled on the main lcore (never on a worker).
 *
 * Protocol: newline-delimited JSON over a Unix stream socket created with
 * mode 0600 (only its owner, normally root, may change the data plane).  Each
 * request line gets exactly one response line, in order.  Requests are
 * hostile input: a line over EP_CTL_MAX_LINE bytes, bad JSON, a missing or
 * unknown "cmd" each get {"ok": false, "error": "..."}; nothing a client
 * sends can stop the server or other clients.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "engine_internal.h"

#define EP_CTL_MAX_LINE    (8u << 20)  /* 8 MiB: acl-replace with many rules */
#define EP_CTL_MAX_CLIENTS 32

struct ep_ctl_client {
	int fd;
	char *buf;
	size_t len, cap;
	struct ep_ctl_client *next_client;
};

static struct ep_ctl_cmd *cmds;

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
ep_ctl_register(struct ep_ctl_cmd *cmd)
{
	cmd->next_cmd = cmds;
	cmds = cmd;
}

const struct ep_ctl_cmd *
ep_ctl_first(void)
{
	return cmds;
}

const char *
ep_ctl_str(json_t *req, const char *key, struct ep_err *err)
{
	json_t *v = json_object_get(req, key);

	if (v == NULL) {
		ep_err_set(err, "missing field '%s'", key);
		return NULL;
	}
	if (!json_is_string(v)) {
		ep_err_set(err, "field '%s' must be a string", key);
		return NULL;
	}
	return json_string_value(v);
}

int
ep_ctl_u64(json_t *req, const char *key, uint64_t def, uint64_t max, uint64_t *out,
	   struct ep_err *err)
{
	json_t *v = json_object_get(req, key);
	json_int_t i;

	if (v == NULL) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return ep_err_set(err, "field '%s' must be an integer", key);
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i > max)
		return ep_err_set(err, "field '%s': %lld is outside [0, %llu]", key, (long long)i,
				  (unsigned long long)max);
	*out = (uint64_t)i;
	return 0;
}

json_t *
ep_ctl_dispatch(struct ep_engine *e, json_t *req)
{
	struct ep_err err = { "" };
	const char *name;
	json_t *result, *resp;

	if (!json_is_object(req))
		return json_pack("{s:b, s:s}", "ok", 0, "error", "request must be a JSON object");
	name = ep_ctl_str(req, "cmd", &err);
	if (name == NULL)
		return json_pack("{s:b, s:s}", "ok", 0, "error", err.msg);
	for (struct ep_ctl_cmd *c = cmds; c != NULL; c = c->next_cmd) {
		if (strcmp(c->name, name) != 0)
			continue;
		result = json_object();
		if (c->fn(e, req, result, &err) < 0) {
			char msg[600];

			json_decref(result);
			snprintf(msg, sizeof(msg), "%s: %s", name,
				 err.msg[0] ? err.msg : "failed");
			return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
		}
		resp = json_pack("{s:b, s:o}", "ok", 1, "result", result);
		return resp;
	}
	{
		char msg[300];

		snprintf(msg, sizeof(msg), "unknown command '%.200s' (try 'help')", name);
		return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	}
}

int
ep_ctl_open(struct ep_engine *e, struct ep_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(e->ctl_path)], *slash;
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
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ep_err_set(err, "control socket: %s", strerror(errno));
	/* A socket file whose server is gone is stale; a live one is an error. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return ep_err_set(err, "control socket %s is in use by another edgeplane-dp",
				  e->ctl_path);
	}
	unlink(e->ctl_path);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		umask(old);
		close(fd);
		return ep_err_set(err, "control socket %s: bind: %s", e->ctl_path, strerror(errno));
	}
	umask(old);
	chmod(e->ctl_path, 0600);
	if (listen(fd, 16) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		close(fd);
		return ep_err_set(err, "control socket: listen: %s", strerror(errno));
	}
	e->ctl_fd = fd;
	return 0;
}

static void
client_close(struct ep_engine *e, struct ep_ctl_client *c)
{
	struct ep_ctl_client **pp = &e->ctl_clients;

	while (*pp != c)
		pp = &(*pp)->next_client;
	*pp = c->next_client;
	close(c->fd);
	free(c->buf);
	free(c);
}

static int
send_all(int fd, const char *s, size_t n)
{
	while (n != 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, 2000) <= 0)
				return -1;  /* a client that stops reading is dropped */
			continue;
		}
		if (k <= 0)
			return -1;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
handle_line(struct ep_engine *e, struct ep_ctl_client *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr), *resp;
	char *out;
	int rc;

	if (req == NULL) {
		char msg[300];

		snprintf(msg, sizeof(msg), "bad JSON at column %d: %s", jerr.column, jerr.text);
		resp = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	} else {
		resp = ep_ctl_dispatch(e, req);
		json_decref(req);
	}
	out = json_dumps(resp, JSON_COMPACT);
	json_decref(resp);
	if (out == NULL)
		return -1;
	rc = send_all(c->fd, out, strlen(out));
	if (rc == 0)
		rc = send_all(c->fd, "\n", 1);
	free(out);
	return rc;
}

static int
client_read(struct ep_engine *e, struct ep_ctl_client *c)
{
	char tmp[65536];
	ssize_t k = recv(c->fd, tmp, sizeof(tmp), 0);
	size_t start = 0;

	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (k <= 0)
		return -1;
	if (c->len + (size_t)k > EP_CTL_MAX_LINE) {
		static const char msg[] =
			"{\"ok\":false,\"error\":\"request line longer than 8 MiB\"}\n";

		send_all(c->fd, msg, sizeof(msg) - 1);
		return -1;
	}
	if (c->len + (size_t)k > c->cap) {
		size_t ncap = RTE_MAX(c->cap * 2, c->len + (size_t)k);
		char *nb = realloc(c->buf, ncap);

		if (nb == NULL)
			return -1;
		c->buf = nb;
		c->cap = ncap;
	}
	memcpy(c->buf + c->len, tmp, (size_t)k);
	c->len += (size_t)k;
	for (size_t i = 0; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		if (i > start && handle_line(e, c, c->buf + start, i - start) < 0)
			return -1;
		start = i + 1;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	return 0;
}

void
ep_ctl_poll(struct ep_engine *e, int timeout_ms)
{
	struct pollfd pfd[EP_CTL_MAX_CLIENTS + 1 + EP_CTL_MAX_WATCH];
	struct ep_ctl_client *cl[EP_CTL_MAX_CLIENTS];
	int n = 0, k, nw = n_watch, first_watch;

	pfd[n++] = (struct pollfd){ .fd = e->ctl_fd, .events = POLLIN };
	for (struct ep_ctl_client *c = e->ctl_clients; c != NULL; c = c->next_client) {
		cl[n - 1] = c;
		pfd[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
	}
	first_watch = n;
	for (int i = 0; i < nw; i++)
		pfd[n++] = (struct pollfd){ .fd = watch[i].fd, .events = POLLIN };
	k = poll(pfd, (nfds_t)n, timeout_ms);
	if (k <= 0)
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
	for (int i = 1; i < first_watch; i++)
		if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
		    client_read(e, cl[i - 1]) < 0)
			client_close(e, cl[i - 1]);
	if ((pfd[0].revents & POLLIN) != 0) {
		int fd = accept4(e->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ep_ctl_client *c;

		if (fd < 0)
			return;
		if (n - 1 >= EP_CTL_MAX_CLIENTS || (c = calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->next_client = e->ctl_clients;
		e->ctl_clients = c;
	}
}

void
ep_ctl_close(struct ep_engine *e)
{
	while (e->ctl_clients != NULL)
		client_close(e, e->ctl_clients);
	if (e->ctl_fd > 0) {
		close(e->ctl_fd);
		unlink(e->ctl_path);
		e->ctl_fd = -1;
	}
}
