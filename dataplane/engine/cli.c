/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `edgeplane-dp ctl`: the control socket for people.
 *
 *   edgeplane-dp ctl [-s SOCKET] [--raw] CMD [key=value ...]
 *   edgeplane-dp ctl -s /run/edgeplane/dp.sock route-add prefix=198.18.5.0/24 via=198.18.1.2
 *   edgeplane-dp ctl top [--watch SECONDS]    per-stage table (packets, drops, cycles/pkt)
 *
 * key=value pairs become JSON fields: integers, true/false, and values that
 * start with '[' or '{' (parsed as JSON) keep their type; the rest are
 * strings.  The response's result is printed as indented JSON (or the raw
 * response line with --raw); exit status 1 when the data plane said no.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "engine_internal.h"

#define CTL_MAX_ANSWER (256 << 20)

static int
ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ctl: socket path %s is too long\n", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		fprintf(stderr, "ctl: cannot connect to %s: %s%s\n", path, strerror(e),
			e == ENOENT || e == ECONNREFUSED ?
			" (is edgeplane-dp running? the path is [engine] ctl_socket; give it "
			"with -s or EDGEPLANE_CTL)" : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Send one request, read one answer line.  The data plane may close the
 * connection at any time (it stops, or drops a client that broke a limit):
 * that is an error message and exit status 1, never death by SIGPIPE.
 */
static json_t *
ctl_call(int fd, const char *path, json_t *req)
{
	char *line = json_dumps(req, JSON_COMPACT);
	size_t cap = 65536, len = 0, off = 0, n;
	char *buf = malloc(cap);
	json_t *resp = NULL;
	json_error_t jerr;

	if (line == NULL || buf == NULL) {
		fprintf(stderr, "ctl: out of memory\n");
		goto out;
	}
	n = strlen(line);
	line[n] = '\n';        /* json_dumps' NUL becomes the line's end */
	while (off <= n) {
		ssize_t k = send(fd, line + off, n + 1 - off, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			/* Closed on us: it may have said why first (a request
			 * over its line limit), so read before giving up. */
			break;
		}
		if (k < 0) {
			fprintf(stderr, "ctl: %s: sending the request: %s\n", path, strerror(errno));
			goto out;
		}
		off += (size_t)k;
	}
	for (;;) {
		ssize_t k;

		if (len == cap) {
			char *nb = cap < CTL_MAX_ANSWER ? realloc(buf, cap * 2) : NULL;

			if (nb == NULL) {
				fprintf(stderr, "ctl: %s: answer longer than %d MiB\n", path,
					CTL_MAX_ANSWER >> 20);
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		k = recv(fd, buf + len, cap - len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == ECONNRESET)
			k = 0;
		if (k < 0) {
			fprintf(stderr, "ctl: %s: reading the answer: %s\n", path, strerror(errno));
			goto out;
		}
		if (k == 0) {
			fprintf(stderr, "ctl: %s: the data plane closed the connection before it "
				"answered\n", path);
			goto out;
		}
		len += (size_t)k;
		if (memchr(buf + len - (size_t)k, '\n', (size_t)k) != NULL)
			break;
	}
	resp = json_loadb(buf, (size_t)((char *)memchr(buf, '\n', len) - buf), 0, &jerr);
	if (resp == NULL || !json_is_object(resp)) {
		fprintf(stderr, "ctl: %s: the answer is not a JSON object\n", path);
		json_decref(resp);
		resp = NULL;
	}
out:
	free(line);
	free(buf);
	return resp;
}

static json_t *
value_of(const char *v)
{
	char *end;
	long long i;

	if (v[0] == '[' || v[0] == '{') {
		json_t *j = json_loads(v, 0, NULL);

		if (j != NULL)
			return j;
	}
	if (strcmp(v, "true") == 0)
		return json_true();
	if (strcmp(v, "false") == 0)
		return json_false();
	errno = 0;
	i = strtoll(v, &end, 10);
	if (v[0] != '\0' && *end == '\0' && errno == 0)
		return json_integer(i);
	return json_string(v);
}

static void
print_top(json_t *result)
{
	json_t *workers = json_object_get(result, "workers"), *w;
	size_t i;

	json_array_foreach(workers, i, w) {
		json_t *stages = json_object_get(w, "stages"), *s;
		size_t k;

		printf("worker %s (%s, lcore %lld): busy %.1f%%, rx %lld, tx %lld, sleeps %lld\n",
		       json_string_value(json_object_get(w, "name")),
		       json_string_value(json_object_get(w, "pipeline")),
		       json_integer_value(json_object_get(w, "lcore")),
		       json_real_value(json_object_get(w, "busy_pct")),
		       json_integer_value(json_object_get(w, "rx_pkts")),
		       json_integer_value(json_object_get(w, "tx_pkts")),
		       json_integer_value(json_object_get(w, "sleeps")));
		printf("  %-12s %12s %12s %10s %10s %10s  %s\n", "stage", "in", "out", "tx",
		       "dropped", "cyc/pkt", "drops by reason");
		json_array_foreach(stages, k, s) {
			json_t *drops = json_object_get(s, "drops"), *d;
			const char *reason;
			char dbuf[256] = "";

			json_object_foreach(drops, reason, d)
				snprintf(dbuf + strlen(dbuf), sizeof(dbuf) - strlen(dbuf), "%s=%lld ",
					 reason, json_integer_value(d));
			printf("  %-12s %12lld %12lld %10lld %10lld %10.1f  %s\n",
			       json_string_value(json_object_get(s, "name")),
			       json_integer_value(json_object_get(s, "pkts_in")),
			       json_integer_value(json_object_get(s, "pkts_out")),
			       json_integer_value(json_object_get(s, "pkts_tx")),
			       json_integer_value(json_object_get(s, "pkts_dropped")),
			       json_real_value(json_object_get(s, "cycles_per_pkt")), dbuf);
		}
	}
	fflush(stdout);
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: edgeplane-dp ctl [-s SOCKET] [--raw] CMD [key=value ...]\n"
		"       edgeplane-dp ctl [-s SOCKET] top [--watch SECONDS]\n"
		"       (CMD 'help' lists the data plane's commands)\n");
}

int
ep_cli_main(int argc, char **argv)
{
	const char *sock = getenv("EDGEPLANE_CTL");
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "raw", no_argument, NULL, 'r' },
		{ "watch", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int raw = 0, c, fd, rc = 0;
	bool top = false;
	uint64_t watch = 0;
	struct ep_err err;
	json_t *req;

	/* Writes report EPIPE instead of killing us (and send() says
	 * MSG_NOSIGNAL too, for callers that install their own handler). */
	signal(SIGPIPE, SIG_IGN);
	if (sock == NULL)
		sock = "/run/edgeplane/dp.sock";
	optind = 1;
	for (;;) {
		c = getopt_long(argc, argv, "+s:rw:", opts, NULL);
		if (c == -1) {
			/* `top` takes its options after it: top --watch 1. */
			if (!top && optind < argc && strcmp(argv[optind], "top") == 0) {
				top = true;
				optind++;
				continue;
			}
			break;
		}
		switch (c) {
		case 's': sock = optarg; break;
		case 'r': raw = 1; break;
		case 'w':
			if (ep_parse_u64(optarg, 1, 86400, &watch, &err) < 0) {
				fprintf(stderr, "ctl: --watch: %s seconds\n", err.msg);
				return 2;
			}
			break;
		default: usage(); return 2;
		}
	}
	if (top ? optind < argc : optind >= argc) {
		usage();
		return 2;
	}
	fd = ctl_connect(sock);
	if (fd < 0)
		return 1;
	if (top) {
		for (;;) {
			json_t *resp;

			req = json_pack("{s:s}", "cmd", "stages");
			resp = ctl_call(fd, sock, req);
			json_decref(req);
			if (resp == NULL) {
				rc = 1;
				break;
			}
			if (!json_is_true(json_object_get(resp, "ok"))) {
				const char *msg = json_string_value(json_object_get(resp, "error"));

				fprintf(stderr, "error: %s\n", msg != NULL ? msg : "(no error text)");
				json_decref(resp);
				rc = 1;
				break;
			}
			if (watch)
				printf("\033[H\033[2J");
			print_top(json_object_get(resp, "result"));
			json_decref(resp);
			if (!watch)
				break;
			sleep((unsigned int)watch);
		}
		close(fd);
		return rc;
	}
	req = json_pack("{s:s}", "cmd", argv[optind]);
	for (int i = optind + 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL || eq == argv[i]) {
			fprintf(stderr, "ctl: argument '%s' is not key=value\n", argv[i]);
			json_decref(req);
			close(fd);
			return 2;
		}
		*eq = '\0';
		json_object_set_new(req, argv[i], value_of(eq + 1));
	}
	{
		json_t *resp = ctl_call(fd, sock, req);

		json_decref(req);
		close(fd);
		if (resp == NULL)
			return 1;
		if (raw) {
			char *s = json_dumps(resp, JSON_COMPACT);

			printf("%s\n", s);
			free(s);
		} else if (json_is_true(json_object_get(resp, "ok"))) {
			char *s = json_dumps(json_object_get(resp, "result"), JSON_INDENT(2));

			printf("%s\n", s);
			free(s);
		} else {
			const char *msg = json_string_value(json_object_get(resp, "error"));

			fprintf(stderr, "error: %s\n", msg != NULL ? msg : "(no error text)");
		}
		rc = json_is_true(json_object_get(resp, "ok")) ? 0 : 1;
		json_decref(resp);
	}
	return rc;
}
