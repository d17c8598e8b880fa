/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration file parser.  Hand-written because what we need is small and
 * specific: line numbers on every value for error messages, repeated keys in
 * order (routes, ACL rules), and an "unused key" check.  rte_cfgfile keeps no
 * line numbers and caps entries per section, so it cannot say
 * "router.conf:12: key 'route': ..." for a 100K-route file.
 *
 * Grammar, one item per line:
 *   # comment            (also after a value: "burst = 32  # default")
 *   [type]  or  [type name]
 *   key = value
 * Values are trimmed; a value may be quoted with "..." to keep a '#'.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ep_config.h"

#define EP_CFG_MAX_FILE (64u << 20)   /* 64 MiB: room for a million routes */
#define EP_CFG_MAX_LINE 4096

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Strip a trailing comment that is not inside double quotes; unquote. */
static int
clean_value(char *v, char **out)
{
	int inq = 0;
	char *p;

	for (p = v; *p != '\0'; p++) {
		if (*p == '"')
			inq = !inq;
		else if (*p == '#' && !inq) {
			*p = '\0';
			break;
		}
	}
	if (inq)
		return -1;
	v = trim(v);
	if (v[0] == '"') {
		size_t n = strlen(v);

		if (n < 2 || v[n - 1] != '"')
			return -1;
		v[n - 1] = '\0';
		v++;
	}
	*out = v;
	return 0;
}

static int
add_section(struct ep_cfg *cfg, const char *type, const char *name, int line)
{
	struct ep_cfg_section *ns = realloc(cfg->sec, sizeof(*ns) * (cfg->n_sec + 1));

	if (ns == NULL)
		return -1;
	cfg->sec = ns;
	ns = &cfg->sec[cfg->n_sec++];
	memset(ns, 0, sizeof(*ns));
	ns->type = strdup(type);
	ns->name = strdup(name);
	ns->line = line;
	return (ns->type == NULL || ns->name == NULL) ? -1 : 0;
}

static int
add_kv(struct ep_cfg_section *s, const char *key, const char *val, int line, int *cap)
{
	if (s->n_kv == *cap) {
		int ncap = *cap ? *cap * 2 : 8;
		struct ep_cfg_kv *nkv = realloc(s->kv, sizeof(*nkv) * ncap);

		if (nkv == NULL)
			return -1;
		s->kv = nkv;
		*cap = ncap;
	}
	s->kv[s->n_kv].key = strdup(key);
	s->kv[s->n_kv].val = strdup(val);
	s->kv[s->n_kv].line = line;
	s->kv[s->n_kv].used = false;
	if (s->kv[s->n_kv].key == NULL || s->kv[s->n_kv].val == NULL)
		return -1;
	s->n_kv++;
	return 0;
}

struct ep_cfg *
ep_cfg_parse(const char *text, const char *name, struct ep_err *err)
{
	struct ep_cfg *cfg = calloc(1, sizeof(*cfg));
	char buf[EP_CFG_MAX_LINE];
	const char *p = text;
	int line = 0, cap = 0;

	if (cfg == NULL || (cfg->path = strdup(name)) == NULL) {
		ep_err_set(err, "%s: out of memory", name);
		goto fail;
	}
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *l, *eq;

		line++;
		if (len >= sizeof(buf)) {
			ep_err_set(err, "%s:%d: line longer than %d bytes", name, line,
				   EP_CFG_MAX_LINE - 1);
			goto fail;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		p += len + (nl ? 1 : 0);
		if (memchr(buf, '\0', len) != NULL) {
			ep_err_set(err, "%s:%d: NUL byte in line", name, line);
			goto fail;
		}
		l = trim(buf);
		if (*l == '\0' || *l == '#')
			continue;
		if (*l == '[') {
			char *close = strchr(l, ']'), *type, *sname, *rest;

			if (close == NULL) {
				ep_err_set(err, "%s:%d: section header without ']'", name, line);
				goto fail;
			}
			rest = trim(close + 1);
			if (*rest != '\0' && *rest != '#') {
				ep_err_set(err, "%s:%d: text after section header", name, line);
				goto fail;
			}
			*close = '\0';
			type = trim(l + 1);
			sname = type;
			while (*sname != '\0' && *sname != ' ' && *sname != '\t')
				sname++;
			if (*sname != '\0')
				*sname++ = '\0';
			sname = trim(sname);
			if (ep_name_check(type, NULL) < 0 ||
			    (*sname != '\0' && ep_name_check(sname, NULL) < 0)) {
				ep_err_set(err, "%s:%d: section must be [type] or [type name] "
					   "(1 to %d letters, digits, '_', '-', '.')", name, line,
					   EP_NAME_MAX);
				goto fail;
			}
			if (ep_cfg_find(cfg, type, sname) != NULL) {
				ep_err_set(err, "%s:%d: section [%s%s%s] appears twice", name,
					   line, type, *sname ? " " : "", sname);
				goto fail;
			}
			if (add_section(cfg, type, sname, line) < 0) {
				ep_err_set(err, "%s: out of memory", name);
				goto fail;
			}
			cap = 0;
			continue;
		}
		eq = strchr(l, '=');
		if (eq == NULL) {
			ep_err_set(err, "%s:%d: expected 'key = value' or '[section]'", name, line);
			goto fail;
		}
		*eq = '\0';
		{
			char *key = trim(l), *val;

			if (ep_name_check(key, NULL) < 0) {
				char q[48];

				ep_err_set(err, "%s:%d: bad key '%s'", name, line,
					   ep_text_quote(key, q, sizeof(q)));
				goto fail;
			}
			if (clean_value(eq + 1, &val) < 0) {
				ep_err_set(err, "%s:%d: key '%s': unterminated quote", name, line,
					   key);
				goto fail;
			}
			if (cfg->n_sec == 0) {
				ep_err_set(err, "%s:%d: key '%s' before any [section]", name,
					   line, key);
				goto fail;
			}
			if (add_kv(&cfg->sec[cfg->n_sec - 1], key, val, line, &cap) < 0) {
				ep_err_set(err, "%s: out of memory", name);
				goto fail;
			}
		}
	}
	return cfg;
fail:
	ep_cfg_free(cfg);
	return NULL;
}

struct ep_cfg *
ep_cfg_load(const char *path, struct ep_err *err)
{
	struct ep_cfg *cfg = NULL;
	uint64_t size;
	char *text;
	ssize_t n;
	int fd = ep_open_regular(path, EP_CFG_MAX_FILE, &size, err);

	if (fd < 0)
		return NULL;
	text = malloc((size_t)size + 1);
	if (text == NULL) {
		ep_err_set(err, "%s: out of memory", path);
		close(fd);
		return NULL;
	}
	do
		n = pread(fd, text, (size_t)size, 0);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0) {
		ep_err_set(err, "%s: read: %s", path, strerror(errno));
		free(text);
		return NULL;
	}
	text[n] = '\0';
	if (memchr(text, '\0', (size_t)n) != NULL)
		ep_err_set(err, "%s: contains a NUL byte (binary file?)", path);
	else
		cfg = ep_cfg_parse(text, path, err);
	free(text);
	return cfg;
}

void
ep_cfg_free(struct ep_cfg *cfg)
{
	if (cfg == NULL)
		return;
	for (int i = 0; i < cfg->n_sec; i++) {
		struct ep_cfg_section *s = &cfg->sec[i];

		for (int k = 0; k < s->n_kv; k++) {
			free(s->kv[k].key);
			free(s->kv[k].val);
		}
		free(s->kv);
		free(s->type);
		free(s->name);
	}
	free(cfg->sec);
	free(cfg->path);
	free(cfg);
}

struct ep_cfg_section *
ep_cfg_find(struct ep_cfg *cfg, const char *type, const char *name)
{
	for (int i = 0; i < cfg->n_sec; i++)
		if (strcmp(cfg->sec[i].type, type) == 0 &&
		    (name == NULL || strcmp(cfg->sec[i].name, name) == 0))
			return &cfg->sec[i];
	return NULL;
}

int
ep_cfg_error(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, struct ep_err *err,
	     const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ep_err_set(err, "%s:%d: key '%s': %s", cfg->path, kv->line, kv->key, msg);
}

int
ep_cfg_section_error(const struct ep_cfg *cfg, const struct ep_cfg_section *s,
		     struct ep_err *err, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ep_err_set(err, "%s:%d: [%s%s%s]: %s", cfg->path, s->line, s->type,
			  s->name[0] ? " " : "", s->name, msg);
}

const struct ep_cfg_kv *
ep_cfg_get(const struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
	   struct ep_err *err)
{
	struct ep_cfg_kv *found = NULL;

	if (s == NULL)
		return NULL;
	for (int i = 0; i < s->n_kv; i++) {
		if (strcmp(s->kv[i].key, key) != 0)
			continue;
		s->kv[i].used = true;
		if (found != NULL) {
			ep_cfg_error(cfg, &s->kv[i], err, "given twice (first on line %d)",
				     found->line);
			return NULL;
		}
		found = &s->kv[i];
	}
	if (found == NULL && err != NULL)
		err->msg[0] = '\0';
	return found;
}

int
ep_cfg_each(struct ep_cfg_section *s, const char *key,
	    int (*fn)(const struct ep_cfg_kv *kv, void *arg), void *arg)
{
	if (s == NULL)
		return 0;
	for (int i = 0; i < s->n_kv; i++) {
		int rc;

		if (strcmp(s->kv[i].key, key) != 0)
			continue;
		s->kv[i].used = true;
		rc = fn(&s->kv[i], arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
ep_cfg_u64(const struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key, uint64_t def,
	   uint64_t min, uint64_t max, uint64_t *out, struct ep_err *err)
{
	const struct ep_cfg_kv *kv;
	struct ep_err tmp;

	if (err == NULL)
		err = &tmp;
	err->msg[0] = '\0';
	kv = ep_cfg_get(cfg, s, key, err);
	if (kv == NULL) {
		if (err->msg[0] != '\0')
			return -1;
		*out = def;
		return 0;
	}
	if (ep_parse_u64(kv->val, min, max, out, err) < 0) {
		char inner[sizeof(err->msg)];

		snprintf(inner, sizeof(inner), "%s", err->msg);
		return ep_cfg_error(cfg, kv, err, "%s", inner);
	}
	return 0;
}

const char *
ep_cfg_str(const struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
	   const char *def, struct ep_err *err)
{
	const struct ep_cfg_kv *kv;

	if (err != NULL)
		err->msg[0] = '\0';
	kv = ep_cfg_get(cfg, s, key, err);
	if (kv == NULL)
		return (err != NULL && err->msg[0] != '\0') ? NULL : def;
	return kv->val;
}

int
ep_cfg_check_unused(const struct ep_cfg *cfg, struct ep_err *err)
{
	for (int i = 0; i < cfg->n_sec; i++) {
		const struct ep_cfg_section *s = &cfg->sec[i];

		for (int k = 0; k < s->n_kv; k++)
			if (!s->kv[k].used)
				return ep_err_set(err, "%s:%d: [%s%s%s]: unknown key '%s'",
						  cfg->path, s->kv[k].line, s->type,
						  s->name[0] ? " " : "", s->name, s->kv[k].key);
	}
	return 0;
}

int
ep_cfg_side_file(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv,
		 int (*fn)(void *arg, char *line, int lineno, struct ep_err *err), void *arg,
		 struct ep_err *err)
{
	char inner[sizeof(err->msg)];

	if (ep_side_file_each(kv->val, fn, arg, err) == 0)
		return 0;
	snprintf(inner, sizeof(inner), "%s", err->msg);
	return ep_cfg_error(cfg, kv, err, "%s", inner);
}
