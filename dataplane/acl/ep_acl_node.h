/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * ACL fast path: classify a parsed burst with an instance's published rule
 * set, and the permit/deny filter stage built on it.
 *
 * Classification input is the packet's own layout, counted from the IPv4
 * protocol byte (IPv6: next header), the layout DPDK's ACL guide and
 * l3fwd-acl use: a 1-byte first field, then 4-byte input groups, all in
 * network order:
 *
 *   IPv4  proto @0, src @3, dst @7, sport @11, dport @13
 *   IPv6  proto @0, src @2 (4 x 4 bytes), dst @18 (4 x 4), sport @34, dport @36
 *
 * so for the common packet (IPv4 without options or IPv6 without extension
 * headers, TCP or UDP with its header present) rte_acl reads the frame
 * itself: no key is built, no extra line touched.  Every other packet gets
 * a key with the same layout in the caller's scratch: options and extension
 * headers move the ports, and packets without ports present zeros.
 *
 * Instances with sets use a key the caller always builds, with the packet's
 * rule-list id as a 4-byte exact-match group after the protocol:
 *
 *   IPv4  proto @0, set @1, src @5, dst @9, sport @13, dport @15
 *   IPv6  proto @0, set @1, src @5 (4 x 4), dst @21 (4 x 4), sport @37, dport @39
 *
 * One rte_acl_classify call per family serves the whole burst, whichever
 * lists its packets belong to (the SIMD classifier walks 8 or 16 packets at
 * once, which is why the call is per burst).
 *
 * Result per packet: 0 when no rule matched (the default action applies),
 * else the index of the first matching rule + 1; EP_ACL_NOT_IP for a
 * packet that is neither IPv4 nor IPv6.
 */
#ifndef EP_ACL_NODE_H
#define EP_ACL_NODE_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "ep_acl.h"
#include "ep_stage.h"

#define EP_ACL_NOT_IP UINT32_MAX

/** Keys in the packet layout (see above). */
struct ep_acl_key4 {
	uint8_t proto, pad[2];
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
	uint8_t pad2;
} __attribute__((packed));

struct ep_acl_key6 {
	uint8_t proto, pad;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t pad2[2];
} __attribute__((packed));

/** Keys of instances with sets. */
struct ep_acl_key4_set {
	uint8_t proto;
	uint32_t set;                   /**< network order */
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
	uint8_t pad[3];
} __attribute__((packed));

struct ep_acl_key6_set {
	uint8_t proto;
	uint32_t set;                   /**< network order */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t pad[3];
} __attribute__((packed));

/** Per-worker scratch for ep_acl_classify (a stage context embeds it). */
struct ep_acl_scratch {
	const uint8_t *data[EP_BURST_MAX];
	uint32_t res[EP_BURST_MAX];
	uint16_t pkt[EP_BURST_MAX];
	union {
		struct ep_acl_key4 v4;
		struct ep_acl_key6 v6;
		struct ep_acl_key4_set v4s;
		struct ep_acl_key6_set v6s;
	} key[EP_BURST_MAX];
};

/** The published rule set of @p acl, for one burst (worker side). */
static __rte_always_inline const struct ep_acl_set *
ep_acl_read(const struct ep_acl *acl)
{
	return __atomic_load_n(&acl->cur, __ATOMIC_ACQUIRE);
}

/**
 * Classify the parsed packets @p pkts[0..n) with @p set: res[i] per packet
 * (see above).  @p set_ids: each packet's rule list for an instance with
 * sets (NULL: list 0); ignored otherwise.
 */
void ep_acl_classify(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
		     struct rte_mbuf **pkts, uint16_t n, const uint16_t *set_ids,
		     uint32_t *res);

/** True if result @p res means "deny" (the default action when 0). */
static __rte_always_inline int
ep_acl_res_denies(const struct ep_acl_set *set, uint32_t res)
{
	return res == 0 ? set->default_deny : set->deny[res - 1];
}

/** The value of the rule behind result @p res (0 when none matched). */
static __rte_always_inline uint32_t
ep_acl_res_value(const struct ep_acl_set *set, uint32_t res)
{
	return res == 0 || res == EP_ACL_NOT_IP ? 0 : set->value[res - 1];
}

/**
 * The permit/deny filter stage: denied packets are dropped as acl_deny,
 * anything not IP as ethertype_unsupported.  A set that cannot deny (no
 * deny rule, default permit) returns before touching a packet.
 */
struct ep_acl_filter {
	const struct ep_acl *acl;
	struct ep_acl_scratch sc;
};

struct ep_acl_filter *ep_acl_filter_create(const struct ep_acl *acl, int socket);
void ep_acl_filter_free(struct ep_acl_filter *f);
uint16_t ep_acl_filter_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

#endif
