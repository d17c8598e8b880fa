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
 * rte_acl walks the groups in the order of the field definitions, not the
 * bytes' order: here proto, src, the ports, then dst, so that a key no
 * rule can match any more (most deny rules name ports) leaves the walk
 * before the destination's bytes (acl.c, with the figures).
 *
 * Instances with sets, and rule sets with a tos rule (the tos byte is
 * before the protocol byte, where rte_acl cannot reach), use a key built
 * for every packet, with the packet's rule-list ids (one 16-bit id per
 * lane, both lanes in one 4-byte group) after the protocol and the tos
 * byte last:
 *
 *   IPv4  proto @0, set @1, src @5, dst @9, sport @13, dport @15, tos @17
 *   IPv6  proto @0, set @1, src @5 (4 x 4), dst @21 (4 x 4), sport @37, dport @39,
 *         tos @41
 *
 * One rte_acl_classify call per family serves the whole burst, whichever
 * lists its packets belong to (the SIMD classifier walks 8 or 16 packets at
 * once, which is why the call is per burst).
 *
 * Result per packet and lane: 0 when no rule matched (the default action
 * applies), else the index of the first matching rule + 1; EP_ACL_NOT_IP
 * for a packet that is neither IPv4 nor IPv6.
 */
#ifndef EP_ACL_NODE_H
#define EP_ACL_NODE_H

#include <stddef.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_ip.h>
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

/** Keys of instances with sets (and of rule sets with tos rules). */
struct ep_acl_key4_set {
	uint8_t proto;
	uint16_t set[EP_ACL_MAX_LANES]; /**< network order */
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
	uint8_t tos;
	uint8_t pad[3];
} __attribute__((packed));

struct ep_acl_key6_set {
	uint8_t proto;
	uint16_t set[EP_ACL_MAX_LANES]; /**< network order */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t tos;
	uint8_t pad[3];
} __attribute__((packed));

/** Per-worker scratch for ep_acl_classify (a stage context embeds it). */
struct ep_acl_scratch {
	const uint8_t *data[EP_BURST_MAX];
	uint32_t res[EP_BURST_MAX * RTE_ACL_RESULTS_MULTIPLIER];   /**< by slot and category */
	uint16_t pkt[EP_BURST_MAX];
	uint16_t n, n4, n6;             /**< ep_acl_keys_build's burst */
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
 * Classify the parsed packets @p pkts[0..n) with @p set: res[i * lanes + k]
 * for packet i and lane k (see above; lanes = set->lanes, 1 without sets).
 * @p set_ids: the packets' rule lists, in the same order, for an instance
 * with sets (NULL: list 0 in every lane); ignored otherwise.
 */
void ep_acl_classify(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
		     struct rte_mbuf **pkts, uint16_t n, const uint16_t *set_ids,
		     uint32_t *res);

/**
 * One key pass, several classifications: ep_acl_keys_build writes the keys
 * of a burst into @p sc once; ep_acl_classify_keys then classifies them
 * with any instance with sets (the key layout is the same for all; only
 * the set ids differ, written in place before each call).  Results as
 * ep_acl_classify's.  A pipeline classifying a burst with two instances
 * (a vCMTS's filter groups and classifiers) saves the second key pass.
 * @p set of ep_acl_keys_build: any of the instances (its lanes bound the
 * ids written; the keys hold EP_ACL_MAX_LANES).
 */
void ep_acl_keys_build(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
		       struct rte_mbuf **pkts, uint16_t n);
void ep_acl_classify_keys(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
			  const uint16_t *set_ids, uint32_t *res);

/** True if result @p res means "deny" (the default action when 0). */
static __rte_always_inline int
ep_acl_res_denies(const struct ep_acl_set *set, uint32_t res)
{
	return res == 0 ? set->default_deny : set->deny[res - 1];
}

/**
 * The verdict over the @p set->lanes results of one packet: a deny in any
 * lane wins (a DOCSIS cable modem's two filter groups); when no lane
 * matched, the default action.  *@p matched: whether any lane matched.
 */
static __rte_always_inline int
ep_acl_lanes_deny(const struct ep_acl_set *set, const uint32_t *res, int *matched)
{
	int deny = 0, any = 0;

	for (uint8_t k = 0; k < set->lanes; k++)
		if (res[k] != 0 && res[k] != EP_ACL_NOT_IP) {
			any = 1;
			deny |= set->deny[res[k] - 1];
		}
	*matched = any;
	return any ? deny : set->default_deny;
}

/** The value of the rule behind result @p res (0 when none matched). */
static __rte_always_inline uint32_t
ep_acl_res_value(const struct ep_acl_set *set, uint32_t res)
{
	return res == 0 || res == EP_ACL_NOT_IP ? 0 : set->value[res - 1];
}

/**
 * The permit/deny filter stage: denied packets are dropped as acl_deny,
 * anything not IP as ethertype_unsupported.  An instance with sets
 * classifies every packet in list 0 of each lane.  A set that cannot deny (no
 * deny rule, default permit) returns before touching a packet.
 */
struct ep_acl_filter {
	const struct ep_acl *acl;
	uint16_t given;                 /**< ep_acl_filter_give: inputs of a burst of this size */
	const struct rte_mbuf *given_first;
	struct ep_acl_scratch sc;
};

struct ep_acl_filter *ep_acl_filter_create(const struct ep_acl *acl, int socket);
void ep_acl_filter_free(struct ep_acl_filter *f);
uint16_t ep_acl_filter_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/** EP_META_F_HAS_L4 for the protocols whose ports the rules match (TCP,
 *  UDP), 0 for the rest. */
extern const uint8_t ep_acl_port_protos[256];

/** Whether packet @p md is classified in place, from its own bytes: TCP
 *  or UDP header present right after a fixed-size L3 header of @p l3_hdr
 *  bytes (no IPv4 options, no IPv6 extension header; non-first fragments
 *  have HAS_L4 clear).  Without branches: a table load and two compares
 *  (the three tests in a row were ~17 instructions a packet). */
static __rte_always_inline int
ep_acl_in_place(const struct ep_meta *md, uint16_t l3_hdr)
{
	return ((ep_acl_port_protos[md->l4_proto] & md->flags) != 0) &
	       (md->l4_off - md->l3_off == l3_hdr);
}

/**
 * Inputs given by a stage before the filter: a stage that has just proved
 * the @p i th packet it passes on classifiable in place (ep_acl_in_place
 * for IPv4, or a parse's own equivalent checks) records the packet's own
 * bytes from @p l3 as its input, in the filter's scratch, while the packet
 * is in its registers; then ep_acl_filter_give.  The filter's pass over
 * the burst's meta lines is not run.
 */
static __rte_always_inline void
ep_acl_filter_input4(struct ep_acl_filter *f, uint16_t i, const uint8_t *l3)
{
	f->sc.data[i] = l3 + offsetof(struct rte_ipv4_hdr, next_proto_id);
}

#ifdef RTE_ARCH_X86_64
#include <immintrin.h>

/** ep_acl_filter_input4 for packets @p i .. @p i + 7 at once, those of
 *  @p lanes, their IPv4 headers' addresses in @p l3 (a parse that checked
 *  eight frames in vector registers, proto/ep_parse_x8.h). */
static __rte_always_inline __attribute__((target("avx512f"))) void
ep_acl_filter_input4_x8(struct ep_acl_filter *f, uint16_t i, __mmask8 lanes, __m512i l3)
{
	_mm512_mask_storeu_epi64(
		&f->sc.data[i], lanes,
		_mm512_add_epi64(l3, _mm512_set1_epi64(offsetof(struct rte_ipv4_hdr, next_proto_id))));
}
#endif

/**
 * After its loop, the stage that gave inputs: @p n when it gave one to each
 * of the @p n packets it passes on (in their order, @p first the first of
 * them), else 0.  The filter's next call takes them when it gets exactly
 * that burst (the engine keeps passed packets in order), and forgets them
 * either way: a burst handed in at a later stage builds its own.
 */
static __rte_always_inline void
ep_acl_filter_give(struct ep_acl_filter *f, uint16_t n, const struct rte_mbuf *first)
{
	f->given = n;
	f->given_first = first;
}

/**
 * The filter on a burst whose @p n packets, in this order, all got their
 * input from ep_acl_filter_input4 (ep_acl_filter_stage calls it when they
 * were given).  The same verdicts; a rule set that needs keys (sets, tos
 * rules) builds them as the filter stage does.
 */
uint16_t ep_acl_filter_inputs4(struct ep_acl_filter *f, struct rte_mbuf **pkts, uint16_t *next,
			       uint16_t n);

#endif
