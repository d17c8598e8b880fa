/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ACL fast path (ep_acl_node.h): classify a parsed burst, and the filter
 * stage `acl`.
 *
 *   pass 1  per packet: the classifier's input.  For IPv4 without options
 *           and IPv6 without extension headers carrying TCP or UDP, a
 *           pointer to the protocol byte inside the frame: no key is
 *           written.  Anything else (options, extension headers, ICMP,
 *           fragments without ports), and every packet of an instance with
 *           sets or with a tos rule, gets a key in the scratch array.  IPv4 inputs fill the
 *           data pointer array from the front, IPv6 from the back.  A
 *           stage before the filter that reads every packet anyway can
 *           give these pointers (ep_acl_filter_input4 and _give, when
 *           every packet it passes on is IPv4 TCP or UDP without options:
 *           the router's parse): this pass is then not run.  (Given by the
 *           vBNG uplink's subscriber stage, the test and the store cost
 *           that stage ~9 cycles a packet, as much as the ACL saved:
 *           test_bng_cycles; not done there.)
 *   pass 2  one rte_acl_classify per family over its part of the array
 *   pass 3  ep_acl_classify: the result per packet (rule index + 1; 0: the
 *           default action); the filter stage: the verdicts straight from
 *           the result slots, and a burst that matched nothing under a
 *           default permit ends after one OR over its results
 *
 * Measured (router stage, test_router_cycles, minimum over trials): ~43
 * cycles/packet with 1000 rules that all miss, almost all of it inside
 * rte_acl_classify (the trie walk); ~28 with the inputs given by the
 * router's parse and the verdicts' OR (callgrind: the stage's own code
 * 53.4 -> 3.4 instructions a packet).  In the benchmark, where the trie
 * competes with the packets and the LPM lines for L2, ~60 with 1000 rules
 * and ~23 with one rule.  A filter whose set cannot deny returns at once: ~1.
 *
 * The rule set is read once per burst; it stays valid until this worker's
 * next quiescent state, after the burst.
 */
#include <stddef.h>

#include <rte_ip.h>
#include <rte_malloc.h>

#include "ep_acl_node.h"

const uint8_t ep_acl_port_protos[256] = {
	[IPPROTO_TCP] = EP_META_F_HAS_L4,
	[IPPROTO_UDP] = EP_META_F_HAS_L4,
};

/* Source and destination port as they are on the wire, or zeros. */
static __rte_always_inline void
ports_of(const uint8_t *p, const struct ep_meta *md, uint8_t ports[4])
{
	if ((md->flags & EP_META_F_HAS_L4) &&
	    (md->l4_proto == IPPROTO_TCP || md->l4_proto == IPPROTO_UDP))
		memcpy(ports, p + md->l4_off, 4);
	else
		memset(ports, 0, 4);
}

/* The key layout's IPv4 key for packet @p i (set ids from @p sid, @p lanes
 * of them; NULL: zeros): key4's keyed half, inline in ep_acl_keys_build,
 * where every IPv4 packet takes it: the call a packet was ~4 of the vCMTS
 * filter's 31 cycles a frame (warm micro-run 31 -> 27;
 * docs/benchmarks/cmts-history.md, "The compute round"). */
static __rte_always_inline const uint8_t *
key4_set(struct ep_acl_scratch *sc, uint16_t i, const uint8_t *p, const struct ep_meta *md,
	 const uint16_t *sid, uint8_t lanes)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + md->l3_off);
	struct ep_acl_key4_set *k = &sc->key[i].v4s;

	k->proto = md->l4_proto;
	k->set[0] = sid != NULL ? rte_cpu_to_be_16(sid[0]) : 0;
	k->set[1] = sid != NULL && lanes > 1 ? rte_cpu_to_be_16(sid[1]) : 0;
	memcpy(k->src, &ip->src_addr, 8);        /* src, dst */
	ports_of(p, md, (uint8_t *)k + offsetof(struct ep_acl_key4_set, sport));
	k->tos = ip->type_of_service;
	return (const uint8_t *)k;
}

/* A key for packet @p i in the packet layout, or in the key layout when
 * @p keyed (set ids from @p sid, @p lanes of them; NULL: zeros).  Out of
 * line: the common packet of an instance without sets needs none. */
static __rte_noinline const uint8_t *
key4(struct ep_acl_scratch *sc, uint16_t i, const uint8_t *p, const struct ep_meta *md,
     bool keyed, const uint16_t *sid, uint8_t lanes)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + md->l3_off);
	struct ep_acl_key4 *k = &sc->key[i].v4;

	if (keyed)
		return key4_set(sc, i, p, md, sid, lanes);
	k->proto = md->l4_proto;
	memcpy(k->src, &ip->src_addr, 8);
	ports_of(p, md, (uint8_t *)k + offsetof(struct ep_acl_key4, sport));
	return (const uint8_t *)k;
}

static __rte_noinline const uint8_t *
key6(struct ep_acl_scratch *sc, uint16_t i, const uint8_t *p, const struct ep_meta *md,
     bool keyed, const uint16_t *sid, uint8_t lanes)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + md->l3_off);

	if (keyed) {
		struct ep_acl_key6_set *k = &sc->key[i].v6s;
		const uint8_t *b = (const uint8_t *)ip;

		k->proto = md->l4_proto;
		k->set[0] = sid != NULL ? rte_cpu_to_be_16(sid[0]) : 0;
		k->set[1] = sid != NULL && lanes > 1 ? rte_cpu_to_be_16(sid[1]) : 0;
		memcpy(k->src, ip->src_addr, 32);
		ports_of(p, md, (uint8_t *)k + offsetof(struct ep_acl_key6_set, sport));
		k->tos = (uint8_t)((b[0] & 0x0f) << 4 | b[1] >> 4);   /* traffic class */
		return (const uint8_t *)k;
	} else {
		struct ep_acl_key6 *k = &sc->key[i].v6;

		k->proto = md->l4_proto;
		memcpy(k->src, ip->src_addr, 32);
		ports_of(p, md, (uint8_t *)k + offsetof(struct ep_acl_key6, sport));
		return (const uint8_t *)k;
	}
}

/* Pass 2: one rte_acl_classify per family over the slots. */
static __rte_always_inline void
run_ctx(const struct ep_acl_set *set, struct ep_acl_scratch *sc, uint16_t n4, uint16_t n6)
{
	const uint8_t cats = set->categories;

	if (n4 != 0) {
		if (set->ctx4 != NULL)
			rte_acl_classify(set->ctx4, sc->data, sc->res, n4, cats);
		else
			memset(sc->res, 0, sizeof(sc->res[0]) * n4 * cats);
	}
	if (n6 != 0) {
		uint16_t first = (uint16_t)(EP_BURST_MAX - n6);

		/* The v6 slots were filled from the back: each slot names its packet. */
		if (set->ctx6 != NULL)
			rte_acl_classify(set->ctx6, &sc->data[first], &sc->res[(uint32_t)first * cats],
					 n6, cats);
		else
			memset(&sc->res[(uint32_t)first * cats], 0, sizeof(sc->res[0]) * n6 * cats);
	}
}

/*
 * Passes 1 and 2 over a burst: rte_acl's results are left in sc->res[],
 * set->categories per slot, IPv4 in slots [0, *n4), IPv6 in
 * [EP_BURST_MAX - *n6, EP_BURST_MAX), each slot's packet in sc->pkt[].  A
 * packet that is not IP gets EP_ACL_NOT_IP in every lane of @p res, or is
 * dropped when @p res is NULL (the filter stage).
 */
static __rte_always_inline void
classify_slots(const struct ep_acl_set *set, struct ep_acl_scratch *sc, struct rte_mbuf **pkts,
	       uint16_t n, const uint16_t *set_ids, const bool keyed, uint16_t *n4o,
	       uint16_t *n6o, uint32_t *res, uint16_t *next, uint16_t *out)
{
	const uint8_t lanes = set->lanes;
	uint16_t n4 = 0, n6 = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		const uint16_t *sid = keyed && set_ids != NULL ? &set_ids[(uint32_t)i * lanes] : NULL;

		if (likely(md->l3_type == EP_L3_IPV4)) {
			sc->data[n4] = !keyed &&
				       likely(ep_acl_in_place(md, sizeof(struct rte_ipv4_hdr))) ?
				p + md->l3_off + offsetof(struct rte_ipv4_hdr, next_proto_id) :
				key4(sc, i, p, md, keyed, sid, lanes);
			sc->pkt[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			uint16_t slot = (uint16_t)(EP_BURST_MAX - 1 - n6++);

			sc->data[slot] = !keyed &&
					 likely(ep_acl_in_place(md, sizeof(struct rte_ipv6_hdr))) ?
				p + md->l3_off + offsetof(struct rte_ipv6_hdr, proto) :
				key6(sc, i, p, md, keyed, sid, lanes);
			sc->pkt[slot] = i;
		} else if (res != NULL) {
			for (uint8_t k = 0; k < lanes; k++)
				res[(uint32_t)i * lanes + k] = EP_ACL_NOT_IP;
		} else {
			next[i] = EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED);
			(*out)++;
		}
	}
	run_ctx(set, sc, n4, n6);
	*n4o = n4;
	*n6o = n6;
}

static __rte_always_inline void results(const struct ep_acl_set *set,
					const struct ep_acl_scratch *sc, uint16_t n4, uint16_t n6,
					uint32_t *res);

static __rte_always_inline void
classify(const struct ep_acl_set *set, struct ep_acl_scratch *sc, struct rte_mbuf **pkts,
	 uint16_t n, const uint16_t *set_ids, uint32_t *res, const bool keyed)
{
	uint16_t n4, n6;

	classify_slots(set, sc, pkts, n, set_ids, keyed, &n4, &n6, res, NULL, NULL);
	results(set, sc, n4, n6, res);
}

/* Pass 3: the slots' results to the packets' places in @p res. */
static __rte_always_inline void
results(const struct ep_acl_set *set, const struct ep_acl_scratch *sc, uint16_t n4, uint16_t n6,
	uint32_t *res)
{
	const uint8_t lanes = set->lanes, cats = set->categories;

	if (lanes == 1) {
		for (uint16_t j = 0; j < n4; j++)
			res[sc->pkt[j]] = sc->res[(uint32_t)j * cats];
		for (uint16_t j = (uint16_t)(EP_BURST_MAX - n6); j < EP_BURST_MAX; j++)
			res[sc->pkt[j]] = sc->res[(uint32_t)j * cats];
		return;
	}
	for (uint16_t j = 0; j < n4; j++)
		for (uint8_t k = 0; k < lanes; k++)
			res[(uint32_t)sc->pkt[j] * lanes + k] = sc->res[(uint32_t)j * cats + k];
	for (uint16_t j = (uint16_t)(EP_BURST_MAX - n6); j < EP_BURST_MAX; j++)
		for (uint8_t k = 0; k < lanes; k++)
			res[(uint32_t)sc->pkt[j] * lanes + k] = sc->res[(uint32_t)j * cats + k];
}

void
ep_acl_classify(const struct ep_acl_set *set, struct ep_acl_scratch *sc, struct rte_mbuf **pkts,
		uint16_t n, const uint16_t *set_ids, uint32_t *res)
{
	if (set->keyed)
		classify(set, sc, pkts, n, set_ids, res, true);
	else
		classify(set, sc, pkts, n, NULL, res, false);
}

/* The set ids of both key layouts sit at the same offset of the union. */
_Static_assert(offsetof(struct ep_acl_key4_set, set) == offsetof(struct ep_acl_key6_set, set),
	       "set ids at one offset");

void
ep_acl_keys_build(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
		  struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t n4 = 0, n6 = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

		if (likely(md->l3_type == EP_L3_IPV4)) {
			sc->data[n4] = key4_set(sc, i, p, md, NULL, set->lanes);
			sc->pkt[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			uint16_t slot = (uint16_t)(EP_BURST_MAX - 1 - n6++);

			sc->data[slot] = key6(sc, i, p, md, true, NULL, set->lanes);
			sc->pkt[slot] = i;
		}
	}
	sc->n = n;
	sc->n4 = n4;
	sc->n6 = n6;
}

void
ep_acl_classify_keys(const struct ep_acl_set *set, struct ep_acl_scratch *sc,
		     const uint16_t *set_ids, uint32_t *res)
{
	const uint8_t lanes = set->lanes;
	const uint16_t n4 = sc->n4, n6 = sc->n6;

	for (uint16_t j = 0; j < n4 + n6; j++) {
		uint16_t slot = j < n4 ? j : (uint16_t)(EP_BURST_MAX - n6 + (j - n4));
		uint16_t i = sc->pkt[slot];
		uint16_t ids[EP_ACL_MAX_LANES] = {
			rte_cpu_to_be_16(set_ids[(uint32_t)i * lanes]),
			lanes > 1 ? rte_cpu_to_be_16(set_ids[(uint32_t)i * lanes + 1]) : 0 };

		memcpy((uint8_t *)&sc->key[i] + offsetof(struct ep_acl_key4_set, set), ids,
		       sizeof(ids));
	}
	if (unlikely(n4 + n6 != sc->n))
		for (uint32_t x = 0; x < (uint32_t)sc->n * lanes; x++)
			res[x] = EP_ACL_NOT_IP;
	run_ctx(set, sc, n4, n6);
	results(set, sc, n4, n6, res);
}

/*
 * The verdicts straight from the result slots (no per-packet copy): a deny
 * drops the slot's packet (sc->pkt[slot], or the slot itself when
 * @p in_order: the IPv4 slots of ep_acl_filter_inputs4) as acl_deny.  With
 * one category (every set without lanes) a burst that matched no rule,
 * the common burst of a filter, is found so by one OR over its results
 * (vectorised: a fraction of an instruction a packet), and a default
 * permit then ends it without a look at the rule table per packet.
 */
static __rte_always_inline uint16_t
verdicts(const struct ep_acl_set *set, const struct ep_acl_scratch *sc, uint16_t *next,
	 uint16_t n4, uint16_t n6, uint16_t out, const bool in_order)
{
	const uint8_t cats = set->categories;

	if (cats == 1) {
		const uint32_t *r6 = &sc->res[EP_BURST_MAX - n6];
		uint32_t any = 0;

		for (uint16_t j = 0; j < n4; j++)
			any |= sc->res[j];
		for (uint16_t j = 0; j < n6; j++)
			any |= r6[j];
		if (likely(any == 0) && likely(!set->default_deny))
			return out;
	}
	for (uint16_t j = 0; j < n4 + n6; j++) {
		uint16_t slot = j < n4 ? j : (uint16_t)(EP_BURST_MAX - n6 + (j - n4));
		const uint32_t *r = &sc->res[(uint32_t)slot * cats];
		int matched;

		if (unlikely(cats == 1 ? ep_acl_res_denies(set, r[0]) :
			     ep_acl_lanes_deny(set, r, &matched))) {
			next[in_order ? slot : sc->pkt[slot]] = EP_NEXT_DROP(EP_DROP_ACL_DENY);
			out++;
		}
	}
	return out;
}

static __rte_always_inline uint16_t
filter(const struct ep_acl_set *set, struct ep_acl_scratch *sc, struct rte_mbuf **pkts,
       uint16_t *next, uint16_t n, const bool keyed)
{
	uint16_t n4, n6, out = 0;

	classify_slots(set, sc, pkts, n, NULL, keyed, &n4, &n6, NULL, next, &out);
	return verdicts(set, sc, next, n4, n6, out, false);
}

uint16_t
ep_acl_filter_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	struct ep_acl_filter *f = ctx;
	const struct ep_acl_set *set;

	if (f->given == n && f->given_first == pkts[0]) {
		f->given = 0;
		return ep_acl_filter_inputs4(f, pkts, next, n);
	}
	f->given = 0;
	set = ep_acl_read(f->acl);
	if (set->pass_all)
		return 0;
	return set->keyed ? filter(set, &f->sc, pkts, next, n, true) :
			    filter(set, &f->sc, pkts, next, n, false);
}

/* A stage before gave every packet's input (ep_acl_filter_input4): slot i
 * is packet i, all IPv4, so classify_slots' pass (a meta line and the frame
 * pointer per packet, the in-place test, two stores) is not run. */
uint16_t
ep_acl_filter_inputs4(struct ep_acl_filter *f, struct rte_mbuf **pkts, uint16_t *next, uint16_t n)
{
	const struct ep_acl_set *set = ep_acl_read(f->acl);

	if (set->pass_all)
		return 0;
	if (unlikely(set->keyed))
		return filter(set, &f->sc, pkts, next, n, true);
	run_ctx(set, &f->sc, n, 0);
	return verdicts(set, &f->sc, next, n, 0, 0, true);
}

struct ep_acl_filter *
ep_acl_filter_create(const struct ep_acl *acl, int socket)
{
	struct ep_acl_filter *f = rte_zmalloc_socket("ep_acl_filter", sizeof(*f),
						     RTE_CACHE_LINE_SIZE, socket);

	if (f != NULL)
		f->acl = acl;
	return f;
}

void
ep_acl_filter_free(struct ep_acl_filter *f)
{
	rte_free(f);
}
