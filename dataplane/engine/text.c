/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile text: integers, names, side files (ep_text.h).
 *
 * strtoul() is not used for integers because each of its conveniences is a
 * trap for a configuration value: it skips spaces, takes a sign ("-1"
 * becomes 18446744073709551615), reads 0x and octal ("010" is 8), and
 * callers cast the result to a narrower type (subport 4294967297 became
 * subport 1).  Here a value is digits, checked against its range before
 * anything narrows it.
 *
 * Side files are read with a bounded line buffer rather than fgets() into
 * a fixed array, which splits a long line and parses its tail as a new line
 * (a commented-out rule whose tail became live), and rather than getline(),
 * which lets one line take the whole file's size in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ep_text.h"

const char *
ep_text_quote(const char *s, char *buf, size_t n)
{
	size_t o = 0;

	if (n < 8) {
		if (n > 0)
			buf[0] = '\0';
		return buf;
	}
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		size_t need = (c >= 0x20 && c < 0x7f) ? 1 : 4;

		if (o + need + 4 > n) {   /* room for "..." and the NUL */
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (need == 1)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static int
parse_uint(const char *s, bool hex_ok, uint64_t min, uint64_t max, uint64_t *out,
	   struct ep_err *err)
{
	const char *p = s;
	unsigned int base = 10;
	uint64_t v = 0;
	bool over = false;
	char q[64];

	if (hex_ok && s != NULL && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (p == NULL || *p == '\0')
		return ep_err_set(err, "'%s' is not a non-negative integer",
				  ep_text_quote(s, q, sizeof(q)));
	for (; *p != '\0'; p++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			return ep_err_set(err, "'%s' is not a non-negative integer",
					  ep_text_quote(s, q, sizeof(q)));
		if (v > (UINT64_MAX - d) / base)
			over = true;
		else
			v = v * base + d;
	}
	if (over || v < min || v > max)
		return ep_err_set(err, "%s is outside [%llu, %llu]", ep_text_quote(s, q, sizeof(q)),
				  (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int
ep_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, struct ep_err *err)
{
	return parse_uint(s, false, min, max, out, err);
}

int
ep_parse_u64_hex(const char *s, uint64_t min, uint64_t max, uint64_t *out, struct ep_err *err)
{
	return parse_uint(s, true, min, max, out, err);
}

int
ep_name_check(const char *s, struct ep_err *err)
{
	size_t n = 0;
	char q[48];

	for (const char *p = s; p != NULL && *p != '\0'; p++, n++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			break;
	}
	if (s == NULL || n == 0 || s[n] != '\0' || n > EP_NAME_MAX)
		return ep_err_set(err, "'%s' is not a name (1 to %d letters, digits, '_', '-', '.')",
				  ep_text_quote(s, q, sizeof(q)), EP_NAME_MAX);
	return 0;
}

static const char *
file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a file";
}

int
ep_open_regular(const char *path, uint64_t max, uint64_t *size, struct ep_err *err)
{
	struct stat before, st;
	int fd;

	/* stat() before open(): opening some devices has effects of its own. */
	if (stat(path, &before) < 0)
		return ep_err_set(err, "%s: %s", path, strerror(errno));
	if (!S_ISREG(before.st_mode))
		return ep_err_set(err, "%s: not a regular file (%s)", path,
				  file_kind(before.st_mode));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return ep_err_set(err, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != before.st_ino ||
	    st.st_dev != before.st_dev) {
		close(fd);
		return ep_err_set(err, "%s: changed while being opened", path);
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return ep_err_set(err, "%s: %llu bytes, more than the %llu MiB limit", path,
				  (unsigned long long)st.st_size, (unsigned long long)(max >> 20));
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

struct side {
	const char *path;
	int lineno;
	int (*fn)(void *arg, char *line, int lineno, struct ep_err *err);
	void *arg;
	struct ep_err *err;
	char line[EP_SIDE_MAX_LINE + 1];
	size_t len;
};

/* A whole line is in s->line: strip the comment and blanks, hand it on. */
static int
side_line(struct side *s)
{
	char *t = s->line, *e, *hash;
	int rc;

	s->line[s->len] = '\0';
	s->len = 0;
	hash = strchr(t, '#');
	if (hash != NULL)
		*hash = '\0';
	t += strspn(t, " \t\r");
	e = t + strlen(t);
	while (e > t && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	if (*t == '\0')
		return 0;
	rc = s->fn(s->arg, t, s->lineno, s->err);
	if (rc != 0) {
		char inner[sizeof(s->err->msg)];

		snprintf(inner, sizeof(inner), "%s", s->err->msg);
		ep_err_set(s->err, "%s:%d: %s", s->path, s->lineno, inner);
	}
	return rc;
}

/* Append bytes without a newline to the current line, refusing it whole
 * when it grows past the limit or holds a NUL. */
static int
side_append(struct side *s, const char *p, size_t n)
{
	if (memchr(p, '\0', n) != NULL)
		return ep_err_set(s->err, "%s:%d: NUL byte in line (binary file?)", s->path,
				  s->lineno);
	if (n > EP_SIDE_MAX_LINE - s->len)
		return ep_err_set(s->err, "%s:%d: line longer than %d bytes", s->path, s->lineno,
				  EP_SIDE_MAX_LINE);
	memcpy(s->line + s->len, p, n);
	s->len += n;
	return 0;
}

int
ep_side_file_each(const char *path, int (*fn)(void *arg, char *line, int lineno, struct ep_err *err),
		  void *arg, struct ep_err *err)
{
	struct side s;
	char chunk[65536];
	uint64_t size, total = 0;
	int fd = ep_open_regular(path, EP_SIDE_MAX_FILE, &size, err), rc = 0;

	if (fd < 0)
		return -1;
	s = (struct side){ .path = path, .lineno = 1, .fn = fn, .arg = arg, .err = err };
	for (;;) {
		ssize_t k = read(fd, chunk, sizeof(chunk));
		const char *p = chunk, *end;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = ep_err_set(err, "%s: read: %s", path, strerror(errno));
			break;
		}
		if (k == 0) {
			if (s.len != 0)
				rc = side_line(&s);
			break;
		}
		total += (uint64_t)k;
		if (total > EP_SIDE_MAX_FILE) {
			rc = ep_err_set(err, "%s: grew past the %llu MiB limit while being read", path,
					(unsigned long long)(EP_SIDE_MAX_FILE >> 20));
			break;
		}
		end = chunk + k;
		while (rc == 0 && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = (size_t)((nl != NULL ? nl : end) - p);

			rc = side_append(&s, p, n);
			if (rc == 0 && nl != NULL) {
				rc = side_line(&s);
				s.lineno++;
			}
			p += n + (nl != NULL);
		}
		if (rc != 0)
			break;
	}
	close(fd);
	return rc;
}
