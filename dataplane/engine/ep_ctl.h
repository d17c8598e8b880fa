/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The control socket: a Unix stream socket (mode 0600) speaking one JSON
 * object per line each way.
 *
 *   -> {"cmd": "route-add", "prefix": "198.18.5.0/24", "via": "198.18.1.2"}
 *   <- {"ok": true, "result": {...}}
 *   <- {"ok": false, "error": "route-add: prefix: '198.18.5.0/33' is not a prefix"}
 *
 * Commands are registered by name; the socket's clients (the CLI
 * `edgeplane-dp ctl`, the PFCP user plane `edgeplane upf`) and the config
 * file loader all arrive here, so every operation has one function.
 * Handlers run on the control thread and change tables only through ep_rcu.h.
 */
#ifndef EP_CTL_H
#define EP_CTL_H

#include <stdint.h>
#include <jansson.h>

#include "ep_err.h"

struct ep_engine;

/**
 * A command handler.  @p req is the request object; fill @p result (an empty
 * object) and return 0, or return -1 with err set.
 */
typedef int (*ep_ctl_fn)(struct ep_engine *e, json_t *req, json_t *result, struct ep_err *err);

struct ep_ctl_cmd {
	const char *name;
	const char *args;       /**< "prefix=<cidr> via=<ip>" for help */
	const char *help;
	ep_ctl_fn fn;
	struct ep_ctl_cmd *next_cmd;
};

void ep_ctl_register(struct ep_ctl_cmd *cmd);
#define EP_CTL_REGISTER(c) \
	static void __attribute__((constructor)) ep_ctl_register_##c(void) { ep_ctl_register(&(c)); }

/**
 * Watch a descriptor on the control thread: @p fn(@p arg) runs there
 * whenever @p fd is readable (a pipeline's own control sockets, such as the
 * host stack's attach socket).  At most EP_CTL_MAX_WATCH; -1 when full.
 */
#define EP_CTL_MAX_WATCH 4
int ep_ctl_watch(struct ep_engine *e, int fd, void (*fn)(void *arg), void *arg);
void ep_ctl_unwatch(struct ep_engine *e, int fd);

/** Run one request (used by the socket and by tests); returns the response. */
json_t *ep_ctl_dispatch(struct ep_engine *e, json_t *req);

/** Request helpers: a required string / optional integer field, with errors
 *  that name the command and the field. */
const char *ep_ctl_str(json_t *req, const char *key, struct ep_err *err);
/** A required name field: a string in the name grammar (ep_name_check), so a
 *  name given here is one the configuration file can write too. */
const char *ep_ctl_name(json_t *req, const char *key, struct ep_err *err);
int ep_ctl_u64(json_t *req, const char *key, uint64_t def, uint64_t max, uint64_t *out,
	       struct ep_err *err);
/** A field's value as the text a configuration line would carry (integers
 *  in decimal, strings as they are), for handlers that set keys through the
 *  same parser as the file. */
int ep_ctl_value_text(const char *key, json_t *v, char *buf, size_t len, struct ep_err *err);

/** The module instance of @p kind ("ACL", "FIB") a request names with
 *  `table`, or the only one there is; NULL with err (naming them) if none
 *  or several and no table. */
void *ep_ctl_instance(struct ep_engine *e, json_t *req, const char *kind, struct ep_err *err);
/** A request field as config-file text: a string as is, an integer in
 *  decimal, an array of those joined with commas.  -1 for other types or
 *  when it does not fit @p n bytes. */
int ep_ctl_text(json_t *v, char *buf, size_t n);
/** ep_ctl_text of field @p key, with err ("<key>: must be a string, an
 *  integer or a list of them") when it is not one. */
int ep_ctl_field_text(const char *key, json_t *v, char *buf, size_t n, struct ep_err *err);
/**
 * A request's fields as the "k=v k=v" spec a configuration line carries,
 * every field but "cmd" and those in the NULL-terminated @p skip (may be
 * NULL).  Keys must be names (ep_name_check) and values free of blanks, so
 * no field can smuggle in a key of its own; -1 with err otherwise or when
 * the spec does not fit @p n bytes.
 */
int ep_ctl_spec(json_t *req, const char *const *skip, char *buf, size_t n, struct ep_err *err);

#endif
