/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The configuration file: sections of `key = value` lines, `#` comments.
 *
 *   # one router between two veths
 *   [engine]
 *   burst = 32
 *   [port access]
 *   device = net_af_packet0,iface=dut-a
 *   ipv4 = 198.18.0.1/24
 *   [worker w0]
 *   pipeline = router
 *   rx = access, core
 *   [router]
 *   route = 198.18.1.0/24 via 198.18.0.2
 *
 * A section is `[type]` or `[type name]`.  A key may repeat (route = ...)
 * and every value remembers its line, so an error says "file:line: key: what
 * is wrong".  Any key no consumer asked for is an error too (ep_cfg_check_unused),
 * so a typo never silently falls back to a default.
 *
 * Control path only: nothing here runs on a worker.
 */
#ifndef EP_CONFIG_H
#define EP_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>

#include "ep_err.h"
#include "ep_text.h"

struct ep_cfg_kv {
	char *key;
	char *val;
	int line;
	bool used;
};

struct ep_cfg_section {
	char *type;          /**< "port", "worker", "router", ... */
	char *name;          /**< "access" in [port access]; "" when absent */
	int line;
	struct ep_cfg_kv *kv;
	int n_kv;
};

struct ep_cfg {
	char *path;
	struct ep_cfg_section *sec;
	int n_sec;
};

/** Parse a file; NULL with err set on a syntax error. */
struct ep_cfg *ep_cfg_load(const char *path, struct ep_err *err);
/** Parse text (tests, fuzzing); @p name is used in messages. */
struct ep_cfg *ep_cfg_parse(const char *text, const char *name, struct ep_err *err);
void ep_cfg_free(struct ep_cfg *cfg);

/** First section of @p type (and @p name unless NULL), or NULL. */
struct ep_cfg_section *ep_cfg_find(struct ep_cfg *cfg, const char *type, const char *name);

/** The single value of @p key (marked used), or NULL.  A repeated key is an error. */
const struct ep_cfg_kv *ep_cfg_get(const struct ep_cfg *cfg, struct ep_cfg_section *s,
				   const char *key, struct ep_err *err);
/** Visit every value of @p key in order; stops at the first non-zero return. */
int ep_cfg_each(struct ep_cfg_section *s, const char *key,
		int (*fn)(const struct ep_cfg_kv *kv, void *arg), void *arg);

/** Integer in [min, max] (ep_parse_u64: decimal digits, never truncated); @p def
 *  when absent.  0 or -1 with err set. */
int ep_cfg_u64(const struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
	       uint64_t def, uint64_t min, uint64_t max, uint64_t *out, struct ep_err *err);
/** String value or @p def. */
const char *ep_cfg_str(const struct ep_cfg *cfg, struct ep_cfg_section *s, const char *key,
		       const char *def, struct ep_err *err);

/** Error "path:line: key 'k': <fmt>". Returns -1. */
int ep_cfg_error(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv, struct ep_err *err,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** Error "path:line: [type name]: <fmt>". Returns -1. */
int ep_cfg_section_error(const struct ep_cfg *cfg, const struct ep_cfg_section *s,
			 struct ep_err *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/**
 * Read the side file named by @p kv (route_file = PATH, ...) line by line
 * with ep_side_file_each(); an error names both places:
 * "dp.conf:12: key 'route_file': /etc/routes:3: what is wrong".
 */
int ep_cfg_side_file(const struct ep_cfg *cfg, const struct ep_cfg_kv *kv,
		     int (*fn)(void *arg, char *line, int lineno, struct ep_err *err), void *arg,
		     struct ep_err *err);
/** -1 with an error naming the first key nobody read. */
int ep_cfg_check_unused(const struct ep_cfg *cfg, struct ep_err *err);

#endif
