/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * DOCSIS filter groups and downstream classifiers of a service group in
 * one rte_acl context per address family, so one classify call serves a
 * whole burst across all CMs, filter groups and classifiers (the layout the
 * "filter-group id in the key" approach of Intel's vCMTS uses, extended to
 * the classifiers by the CM id).  Categories:
 *
 *   0  filter rules of group G, matching key.fg_a == G (the CM's 1st group)
 *   1  the same rules, matching key.fg_b == G (its 2nd group)
 *   2  classifiers of CM C, matching key.cm == C
 *   3  unused (rte_acl wants 1 or a multiple of 4 categories)
 *
 * so each filter rule is in the context twice and each classifier once;
 * the highest-priority match per category comes back as the rule's
 * userdata (0: nothing matched).  A set is immutable once built; a change
 * builds a new one aside and publishes it (double-buffered, ep_rcu.h).
 *
 * This is the narrow interface the downstream `filter` stage uses; the
 * project's shared ACL module (dataplane/acl) can replace the
 * implementation behind it.
 *
 * Key layout (network order, as rte_acl reads it):
 *   IPv4  0 proto | 4 fg_a, 5 fg_b, 6 cm (16) | 8 src | 12 dst |
 *         16 sport, 18 dport | 20 tos                      (24 bytes)
 *   IPv6  0 proto | 4 fg_a, 5 fg_b, 6 cm | 8 src (16) | 24 dst (16) |
 *         40 sport, 42 dport | 44 tos                      (48 bytes)
 */
#ifndef EP_CMTS_ACL_H
#define EP_CMTS_ACL_H

#include <stdint.h>

#include <rte_acl.h>

#include "ep_err.h"

#define CMTS_ACL_CAT_FG_A   0
#define CMTS_ACL_CAT_FG_B   1
#define CMTS_ACL_CAT_CLS    2
#define CMTS_ACL_CATS       4

struct cmts_acl_key4 {
	uint8_t proto;
	uint8_t pad0[3];
	uint8_t fg_a, fg_b;
	uint16_t cm;
	uint32_t src, dst;
	uint16_t sport, dport;
	uint8_t tos;
	uint8_t pad1[3];
};

struct cmts_acl_key6 {
	uint8_t proto;
	uint8_t pad0[3];
	uint8_t fg_a, fg_b;
	uint16_t cm;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t tos;
	uint8_t pad1[3];
};

/** Classifier userdata: 1 + (classifier index << 4 | SF). */
#define CMTS_ACL_CLS_UD(idx, sf)   (1u + ((uint32_t)(idx) << 4 | (sf)))
#define CMTS_ACL_CLS_SF(ud)        ((uint8_t)(((ud) - 1) & 0x0f))
#define CMTS_ACL_CLS_IDX(ud)       ((uint8_t)(((ud) - 1) >> 4))

/** One built rule set: workers read it for a burst. */
struct cmts_acl_set {
	struct rte_acl_ctx *ctx4, *ctx6;   /**< NULL: no rule of that family */
	uint32_t n_filters;                /**< filter userdata is 1..n_filters */
	uint8_t *filter_permit;            /**< [n_filters]: 1 permit, 0 deny */
	uint32_t n_rules4, n_rules6;
};

struct cmts_sg;

/** Build a set from the SG's filters and every CM's classifiers; NULL and
 *  err on failure (nothing published). */
struct cmts_acl_set *cmts_acl_build(struct cmts_sg *sg, struct ep_err *err);
void cmts_acl_free(struct cmts_acl_set *s);

#endif
