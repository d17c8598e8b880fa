/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * ACLs: ordered permit/deny rule lists on the IP 5-tuple, classified with
 * DPDK's rte_acl, in named instances that any pipeline creates (the
 * router's ACL, the vBNG's uplink ACL, a vCMTS's filter groups and
 * classifiers).  Control-path header; stages include ep_acl_node.h.
 *
 * Rules, first match wins, as an operator writes them:
 *
 *   permit|deny [proto tcp|udp|icmp|icmpv6|any|<0-255>] [src <prefix>|<addr>|any]
 *               [dst <prefix>|<addr>|any] [sport <n>[-<m>]] [dport <n>[-<m>]]
 *               [tos <n>[-<m>]] [set <0-65535>] [value <0-4294967295>]
 *
 * `tos` matches the IPv4 type-of-service byte or the IPv6 traffic class
 * (a range of the whole byte, as DOCSIS classifiers' IP ToS range).  `set`
 * puts the rule in one of several rule lists classified by the same
 * rte_acl context (an instance created with sets: the caller puts each
 * packet's list id in its key, e.g. a cable modem's filter group); `value`
 * is a number the caller reads back on a match (a classifier's service
 * flow).
 *
 * Lanes: an instance with sets may give each packet up to EP_ACL_MAX_LANES
 * list ids at once (a DOCSIS cable modem belongs to two filter groups);
 * each rule is then classified in every lane (one rte_acl category per
 * lane) and a packet gets one result per lane: the first rule of the list
 * that lane names.  One classify call still serves the whole burst.
 *
 * Packets without ports (ICMP, other protocols, and IPv4/IPv6
 * fragments after the first, RFC 1858) are classified with sport = dport
 * = 0: a rule with a port range that excludes 0 never matches a non-first
 * fragment, so "deny proto udp dport 53" lets later fragments of a denied
 * datagram through and the destination's reassembly discards them.  Write
 * "deny proto udp dst X" (no ports) to stop every fragment to X.
 *
 * How a change reaches the workers: double-buffered (ep_rcu.h).  A built
 * rule set (struct ep_acl_set) is immutable: a change copies the list,
 * builds new IPv4 and IPv6 contexts aside (the step that can fail: a bad
 * rule, no memory; nothing is published then), publishes the set with one
 * release store, waits for a grace period and frees the old one.  A stage
 * reads the set once per burst.
 */
#ifndef EP_ACL_H
#define EP_ACL_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_acl.h>

#include "ep_config.h"
#include "ep_err.h"

struct ep_engine;

#define EP_ACL_NAME_LEN 32
#define EP_ACL_KIND "ACL"       /**< its kind among the engine's named instances */
#define EP_ACL_MAX_LANES 2

/** A rule as the operator wrote it (addresses in network order). */
struct ep_acl_rule {
	bool deny;
	uint8_t family;         /**< 0 (both), 4 or 6: set by the src/dst prefixes */
	bool any_proto;
	uint8_t proto;
	uint8_t src[16], dst[16];
	uint8_t src_plen, dst_plen;  /**< 0 = any */
	uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
	uint8_t tos_lo, tos_hi;  /**< 0-255: any */
	uint16_t set;           /**< rule list (instances with sets only; else 0) */
	bool has_value;
	uint32_t value;         /**< read back by the caller on a match */
};

/** One built rule set, immutable once published: what a stage reads. */
struct ep_acl_set {
	struct rte_acl_ctx *ctx4;   /**< NULL when no rule applies to IPv4 */
	struct rte_acl_ctx *ctx6;
	uint32_t n_rules;
	bool default_deny;
	bool pass_all;              /**< no deny rule and default permit: a filter stage returns at once */
	bool sets;                  /**< keys carry set ids (the ep_acl_key*_set layouts) */
	bool keyed;                 /**< keys are built for every packet (sets, or a tos rule) */
	uint8_t lanes;              /**< results per packet (1 without sets) */
	uint8_t categories;         /**< rte_acl categories: 1, or 4 for 2 lanes */
	enum rte_acl_classify_alg alg;  /**< the method its contexts classify with
	                                 *   (DEFAULT: no context, nothing to classify) */
	uint8_t n_cal;                  /**< "auto" only: the methods timed at build */
	struct { enum rte_acl_classify_alg alg; double cycles; } cal[8];  /**< cycles per key */
	uint16_t cal_keys;              /**< "auto" only: the keys it timed, each inside a rule */
	uint16_t cal_matched;           /**< of them, those the context matched (all, unless
	                                 *   the keys are built wrong) */
	const uint32_t *value;      /**< [n_rules]: each rule's value (0 when none given) */
	uint8_t deny[];             /**< [n_rules + 1]: rule index -> 1 deny, 0 permit */
};

/** Sizing and options of an instance. */
struct ep_acl_params {
	uint32_t max_rules;
	bool sets;                          /**< rules carry `set N`; keys are built by the caller */
	uint8_t lanes;                      /**< with sets: list ids per packet, 1..EP_ACL_MAX_LANES */
	enum rte_acl_classify_alg alg;      /**< RTE_ACL_CLASSIFY_DEFAULT: rte_acl's pick */
};

/** A named instance.  Control thread only, except `cur` (ep_acl_node.h). */
struct ep_acl {
	char name[EP_ACL_NAME_LEN];
	struct ep_engine *e;
	struct ep_acl_params p;
	struct ep_acl_set *cur;             /**< published rule set */
	struct ep_acl_rule *rules;          /**< the list it was built from */
	uint32_t n_rules;
	bool default_deny;
	/** Non-empty: the rules are derived from another table (a vCMTS's
	 *  classifiers, its filter groups) and the generic acl-add/-del/
	 *  -replace/-set-default commands refuse to edit them; this says what
	 *  to use instead.  acl-list and acl-tables still show them. */
	char owner[64];
};

void ep_acl_params_default(struct ep_acl_params *p);
/** A new instance with no rule and default permit.  Names are unique per
 *  engine ("router", "bng-uplink"); -1/NULL with err on a duplicate. */
/** Bytes of DPDK memory an instance of @p p may take (before the EAL). */
uint64_t ep_acl_memory(const struct ep_acl_params *p);
struct ep_acl *ep_acl_create(struct ep_engine *e, const char *name,
			     const struct ep_acl_params *p, struct ep_err *err);
void ep_acl_free(struct ep_acl *acl);
/** Instance @p name of @p e, or NULL. */
struct ep_acl *ep_acl_find(struct ep_engine *e, const char *name);
/** Visit the instances of @p e in creation order. */
struct ep_acl *ep_acl_next(struct ep_engine *e, struct ep_acl *prev);

/** "permit" / "deny": the one place that vocabulary is parsed.  0 or -1. */
int ep_acl_action_parse(const char *s, bool *deny);
/** A rule that matches everything (permit, any protocol, port and tos). */
void ep_acl_rule_init(struct ep_acl_rule *rule);
/** Set one match word of @p rule from its text value: proto, src, dst,
 *  sport, dport, tos, set (when @p sets), value.  The one parser of match
 *  fields: the rule text uses it word by word, and pipelines whose lines
 *  spell fields as key=value (the vCMTS's filter and classifier lines) call
 *  it per pair.  0, or -1 with err naming the word. */
int ep_acl_match_set(struct ep_acl_rule *rule, const char *word, const char *val, bool sets,
		     struct ep_err *err);
/** Parse one rule; @p sets: whether `set` is allowed (the instance's kind). */
int ep_acl_rule_parse(const char *text, bool sets, struct ep_acl_rule *rule,
		      struct ep_err *err);
/** The rule as text that parses back to it. */
void ep_acl_rule_format(const struct ep_acl_rule *rule, char *buf, size_t n);

/** Build and publish @p rules (copied) as the new rule set; the old one is
 *  freed after a grace period.  On error nothing changes. */
int ep_acl_commit(struct ep_acl *acl, const struct ep_acl_rule *rules, uint32_t n,
		  bool default_deny, struct ep_err *err);
/** Insert rule text before rule @p index (< 0: append). */
int ep_acl_insert(struct ep_acl *acl, const char *rule, int64_t index, struct ep_err *err);
int ep_acl_delete(struct ep_acl *acl, uint64_t index, struct ep_err *err);
/** Replace the whole list at once; a bad rule (named by its index) changes nothing. */
int ep_acl_replace(struct ep_acl *acl, const char *const *rules, uint32_t n,
		   struct ep_err *err);
int ep_acl_set_default(struct ep_acl *acl, const char *action, struct ep_err *err);

/** acl_classify value (auto, avx512x32, avx512x16, avx2, sse, scalar) ->
 *  rte_acl method; -1 for a name it does not know. */
int ep_acl_alg_parse(const char *name, enum rte_acl_classify_alg *alg);
const char *ep_acl_alg_name(enum rte_acl_classify_alg alg);
/** The method the published rule set classifies with, as acl_classify
 *  names it ("avx512x16", "avx2", ...: what "auto" resolved to on this
 *  CPU and EAL), or "none" when no rule needs a classifier. */
const char *ep_acl_method_name(const struct ep_acl *acl);

/**
 * The ACL keys of a config section, as every pipeline spells them:
 *
 *   acl = <rule>             repeatable, in order
 *   acl_file = <path>        one rule per line ('#' comments), after the acl lines
 *   acl_default = permit|deny
 *   acl_classify = auto|avx512x32|avx512x16|avx2|sse|scalar
 *
 * The rule set is built once, at the end.  Errors are "file:line: ...".
 */
int ep_acl_load_config(struct ep_acl *acl, struct ep_cfg *cfg, struct ep_cfg_section *s,
		       struct ep_err *err);

#endif
