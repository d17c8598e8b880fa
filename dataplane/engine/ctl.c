/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control commands: the registry, the dispatcher and the helpers handlers
 * use to read their fields.  The socket itself (connections, queues,
 * deadlines) is ctl_server.c.
 *
 * Protocol: newline-delimited JSON over a Unix stream socket created with
 * mode 0600 (only its owner, normally root, may change the data plane).  Each
 * request line gets exactly one response line, in order.  Requests are
 * hostile input: bad JSON, a missing or unknown "cmd", a field of the wrong
 * type or outside its range each get {"ok": false, "error": "..."}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ctl.h"
#include "ep_engine.h"
#include "engine_internal.h"

static struct ep_ctl_cmd *cmds;

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

const char *
ep_ctl_name(json_t *req, const char *key, struct ep_err *err)
{
	const char *s = ep_ctl_str(req, key, err);
	char inner[sizeof(err->msg)];

	if (s == NULL || ep_name_check(s, err) == 0)
		return s;
	snprintf(inner, sizeof(inner), "%s", err->msg);
	ep_err_set(err, "field '%s': %s", key, inner);
	return NULL;
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

int
ep_ctl_text(json_t *v, char *buf, size_t n)
{
	size_t o = 0;
	size_t i;
	json_t *e;

	if (json_is_string(v))
		return snprintf(buf, n, "%s", json_string_value(v)) < (int)n ? 0 : -1;
	if (json_is_integer(v))
		return snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < (int)n ?
		       0 : -1;
	if (!json_is_array(v) || n == 0)
		return -1;
	buf[0] = '\0';
	json_array_foreach(v, i, e) {
		char one[256];

		if (json_is_array(e) || ep_ctl_text(e, one, sizeof(one)) < 0)
			return -1;
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s", i ? "," : "", one);
	}
	return o < n ? 0 : -1;
}

int
ep_ctl_field_text(const char *key, json_t *v, char *buf, size_t n, struct ep_err *err)
{
	if (ep_ctl_text(v, buf, n) < 0)
		return ep_err_set(err, "%s: must be a string, an integer or a list of them", key);
	return 0;
}

int
ep_ctl_spec(json_t *req, const char *const *skip, char *buf, size_t n, struct ep_err *err)
{
	const char *key;
	json_t *v;
	size_t o = 0;

	if (n == 0)
		return ep_err_set(err, "request too long");
	buf[0] = '\0';
	json_object_foreach(req, key, v) {
		char text[512];
		bool skipped = strcmp(key, "cmd") == 0;

		for (int i = 0; skip != NULL && skip[i] != NULL; i++)
			skipped |= strcmp(key, skip[i]) == 0;
		if (skipped)
			continue;
		if (ep_ctl_field_text(key, v, text, sizeof(text), err) < 0)
			return -1;
		/* The spec is "k=v k=v": a key or value with a blank in it would
		 * smuggle in a key of its own. */
		if (ep_name_check(key, NULL) < 0 || strpbrk(text, " \t\r\n") != NULL) {
			char q[48];

			return ep_err_set(err, "field '%s': names are letters, digits, '_', '-', '.' "
					  "and values have no blanks", ep_text_quote(key, q, sizeof(q)));
		}
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s=%s", o ? " " : "", key, text);
		if (o >= n)
			return ep_err_set(err, "request too long");
	}
	return 0;
}

int
ep_ctl_value_text(const char *key, json_t *v, char *buf, size_t len, struct ep_err *err)
{
	if ((!json_is_integer(v) && !json_is_string(v)) || ep_ctl_text(v, buf, len) < 0)
		return ep_err_set(err, "field '%s' must be an integer or a short string", key);
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
