/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * FIB fast path: what a stage calls to route a burst, and the per-worker
 * context of the L3 services (ARP/ND responder, next-hop resolution, ICMP).
 *
 *   ep_fib_prefetch4    start the tbl24 miss of an IPv4 destination; a
 *                       stage that has other work between (the vBNG's
 *                       subscriber stage) issues it one stage ahead
 *   ep_fib_lookup4      rte_lpm_lookup (inline: one tbl24 load, a tbl8 load
 *                       for the few longer prefixes) at ep_fib_addr4's
 *                       address, the default route on a miss; prefetch +
 *                       lookup = lookup
 *   ep_fib_addr4        a /8 without routes longer than /8 is looked up at
 *                       one fixed address of it (ep_fib_prefetch4_by8 and
 *                       EP_FIB_ROUTE_BY8: the vBNG uplink's)
 *   ep_fib_lookup6_bulk rte_lpm6_lookup_bulk_func on the published table
 *   ep_fib_nh_read      next-hop index -> immutable entry (one acquire load)
 *   ep_fib_route_burst  all of it over a parsed burst: martians, lookup,
 *                       next-hop resolution, the next-hop index into
 *                       ep_meta.nexthop (ep_meta.user stays the pipeline's);
 *                       with EP_FIB_ROUTE_SAME_NH a tbl24 word equal to the
 *                       previous forwarded packet's reuses its answer
 *   ep_fib_route_burst_words  the same for a burst whose tbl24 words an
 *                       earlier stage read eight at a time (ep_fib_x8.h)
 *
 * An entry read here stays valid until this worker's next quiescent state,
 * after the burst: entries are freed only after every worker passed one.
 */
#ifndef EP_FIB_NODE_H
#define EP_FIB_NODE_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_mbuf.h>
#include <rte_meter.h>
#include <rte_prefetch.h>

#include "ep_engine.h"
#include "ep_fib.h"
#include "ep_ip.h"
#include "ep_stage.h"

/** The ICMP errors a FIB worker sends (RFC 792, RFC 1191, RFC 4443). */
#define EP_FIB_ICMP_KINDS(X) \
	X(TIME_EXCEEDED,   "time_exceeded") \
	X(NET_UNREACHABLE, "net_unreachable") \
	X(ADMIN_PROHIBITED, "admin_prohibited") \
	X(FRAG_NEEDED,     "frag_needed") \
	X(PACKET_TOO_BIG,  "packet_too_big")
enum ep_fib_icmp_kind {
#define X(id, name) EP_FIB_ICMP_##id,
	EP_FIB_ICMP_KINDS(X)
#undef X
	EP_FIB_ICMP__COUNT
};
extern const char *const ep_fib_icmp_name[EP_FIB_ICMP__COUNT];

/** Per-worker counters of the L3 services; written by their worker only. */
struct ep_fib_worker_stats {
	uint64_t arp_requests;          /**< ARP requests sent to resolve a next hop */
	uint64_t nd_solicits;           /**< neighbour solicitations sent */
	uint64_t asks_throttled;        /**< resolutions not asked again within a second */
	uint64_t asks_failed;           /**< no source address on the port, or no mbuf */
	uint64_t heard;                 /**< ARP replies / NAs / requests posted to the resolver */
	uint64_t events_lost;           /**< resolver ring full */
	uint64_t icmp_sent[EP_FIB_ICMP__COUNT];
	uint64_t icmp_rate_limited;     /**< errors not sent: over the rate limit */
	uint64_t icmp_not_sent;         /**< errors not sent: about an ICMP error, a
	                                 *   non-first fragment, a multicast or martian
	                                 *   source, no mbuf (RFC 1812 4.3.2.7) */
	uint64_t fragmented;            /**< IPv4 packets split to fit the port MTU */
	uint64_t fragments;             /**< fragments sent */
};

#define EP_FIB_ASK_SLOTS 64

/** A worker's context for one FIB (one per FIB the worker routes with). */
struct ep_fib_worker {
	struct ep_fib *fib;
	struct ep_worker *w;            /**< emits generated packets (NULL: they are counted, freed) */
	uint64_t tsc_hz;
	uint16_t n_ports;
	struct {
		struct rte_ether_addr mac;
		uint16_t mtu;           /**< IP MTU of the port */
		uint16_t qinq_tpid;     /**< outer TPID of double-tagged replies (0: as received) */
		bool learn;             /**< post what the responder hears here to the resolver */
		int n_v4, n_v6;
		uint32_t v4[EP_MAX_ADDRS];          /**< network order */
		uint32_t v4_mask[EP_MAX_ADDRS];
		uint8_t v6[EP_MAX_ADDRS][16];
		uint8_t v6_plen[EP_MAX_ADDRS];
	} port[EP_MAX_PORTS];
	/* Resolution requests sent, by target: one per target per second. */
	struct { uint64_t tsc; uint32_t key; } asked[EP_FIB_ASK_SLOTS];
	/* ICMP errors: one token bucket per worker (rte_meter srTCM, one "byte"
	 * per message: green sends, anything else is rate limited). */
	struct rte_meter_srtcm icmp_meter;
	struct rte_meter_srtcm_profile icmp_profile;
	struct rte_mempool *frag_indirect;  /**< IPv4 fragmentation: payload attachments */
	struct ep_fib_worker_stats st;
	/* route scratch */
	uint32_t ip4[EP_BURST_MAX];
	uint16_t pkt4[EP_BURST_MAX];
	uint8_t ip6[EP_BURST_MAX][16];
	int32_t nh6[EP_BURST_MAX];
	uint16_t pkt6[EP_BURST_MAX];
};

/**
 * A worker context of @p fib for worker @p w (NULL in tests without one:
 * generated packets are then counted and freed).  Copies the ports'
 * addresses and MTUs (static after start).
 */
struct ep_fib_worker *ep_fib_worker_create(struct ep_fib *fib, struct ep_worker *w, int socket);
void ep_fib_worker_free(struct ep_fib_worker *fw);
/** Replies and errors this worker sends on @p port with two VLAN tags get
 *  @p tpid as the outer TPID (network order: RTE_BE16(0x88a8)), whatever
 *  the request arrived with: a vBNG's access side expects what its
 *  downlink sends, and veth/af_packet paths that re-insert a stripped
 *  outer tag as 0x8100 disagree on what arrived. */
void ep_fib_worker_set_qinq_tpid(struct ep_fib_worker *fw, uint16_t port, uint16_t tpid);
/** Stop posting what this worker's responder hears on @p port (a side
 *  whose ARP and ND belong to another control plane: a vBNG's access port;
 *  its replies and advertisements are then not for us). */
void ep_fib_worker_no_learning(struct ep_fib_worker *fw, uint16_t port);
/** Sum of the counters of every worker context of @p fib. */
void ep_fib_worker_stats_sum(const struct ep_fib *fib, struct ep_fib_worker_stats *sum);

/* ---- lookups ---- */

/*
 * The address rte_lpm is asked for IPv4 destination @p dst: @p dst while
 * its /8 holds a route longer than /8; else one fixed address of the /8,
 * which has the same longest match as every address of it (every route
 * that covers part of such a /8 covers all of it).  So destinations
 * scattered over a /8 that only a short route covers (a default or a /1,
 * the vBNG's core) read one tbl24 line instead of one each: the vBNG
 * uplink's 4096 flows 256 lines instead of 4096 (256 KiB less of L2 for
 * the frames and the subscriber states; docs/benchmarks/
 * bng-uplink-passes.md, "Ninth pass").
 * The fixed addresses sit 256 KiB + 256 bytes apart in tbl24, so they
 * fall into different cache sets.  The control thread sets the word
 * before it adds the /8's first longer route and clears it after it
 * deleted the last one (fib.c lpm_set/lpm_del): a reader that read the
 * old word looks the packet up as the table was before the change.
 */
static __rte_always_inline uint32_t
ep_fib_addr4_keep(uint32_t dst /* host order */, uint32_t keep)
{
	return (dst & (0xff000000u | keep)) | (((dst >> 24) << 14) & ~keep);
}

static __rte_always_inline uint32_t
ep_fib_addr4(const struct ep_fib *fib, uint32_t dst /* host order */)
{
	return ep_fib_addr4_keep(dst, __atomic_load_n(&fib->keep4[dst >> 24], __ATOMIC_ACQUIRE));
}

static __rte_always_inline void
ep_fib_prefetch4(const struct ep_fib *fib, uint32_t dst /* host order */)
{
	rte_prefetch0(&fib->lpm4->tbl24[dst >> 8]);
}

/** The line a lookup through ep_fib_addr4 reads (EP_FIB_ROUTE_BY8). */
static __rte_always_inline void
ep_fib_prefetch4_by8(const struct ep_fib *fib, uint32_t dst /* host order */)
{
	rte_prefetch0(&fib->lpm4->tbl24[ep_fib_addr4(fib, dst) >> 8]);
}

static __rte_always_inline uint32_t
ep_fib_lookup4(const struct ep_fib *fib, uint32_t dst /* host order */)
{
	uint32_t idx;

	if (unlikely(rte_lpm_lookup(fib->lpm4, ep_fib_addr4(fib, dst), &idx) != 0))
		idx = __atomic_load_n(&fib->default_nh[0], __ATOMIC_ACQUIRE);
	return idx;
}

/** Next-hop indexes of @p n IPv6 destinations into @p nh. */
static __rte_always_inline void
ep_fib_lookup6_bulk(const struct ep_fib *fib, uint8_t ips[][16], int32_t *res, uint32_t *nh,
		    uint16_t n)
{
	struct rte_lpm6 *lpm6 = __atomic_load_n(&fib->lpm6_cur, __ATOMIC_ACQUIRE);

	rte_lpm6_lookup_bulk_func(lpm6, ips, res, n);
	for (uint16_t j = 0; j < n; j++)
		nh[j] = res[j] < 0 ? __atomic_load_n(&fib->default_nh[1], __ATOMIC_ACQUIRE) :
				     (uint32_t)res[j];
}

/** The entry of next hop @p idx (valid: it came from a lookup or ep_meta). */
static __rte_always_inline const struct ep_fib_nh *
ep_fib_nh_read(const struct ep_fib *fib, uint32_t idx)
{
	return __atomic_load_n(&fib->nh[idx], __ATOMIC_ACQUIRE);
}

/* ---- slow paths (fib_neigh.c, fib_icmp.c) ---- */

/** What a pipeline does with a packet to one of the data plane's own
 *  addresses: returns its next action (ep_fib_local_echo answers echo
 *  requests, RFC 792 / RFC 4443 4.1, and drops the rest). */
typedef uint16_t (*ep_fib_local_fn)(struct ep_fib_worker *fw, struct rte_mbuf *m, void *arg);
uint16_t ep_fib_local_echo(struct ep_fib_worker *fw, struct rte_mbuf *m, void *arg);

/** A next hop that is not plainly forwardable (stale, unresolved, local,
 *  out of range): sets *next and returns 1, or 0 to forward. */
uint16_t ep_fib_nh_slow(struct ep_fib_worker *fw, struct rte_mbuf *m, uint32_t idx,
			uint16_t *next, ep_fib_local_fn local, void *arg);

/** Ask for @p ip on @p port (ARP request / neighbour solicitation), at most
 *  once a second per target; @p mac: unicast probe to a known address. */
void ep_fib_ask(struct ep_fib_worker *fw, struct rte_mempool *pool, uint8_t family,
		const uint8_t *ip, uint16_t port, const uint8_t *mac);

/**
 * ICMP error about packet @p m (parsed; its in_port is where the error
 * goes, to the previous hop): time exceeded, destination unreachable
 * (no route, administratively prohibited), fragmentation needed (@p mtu) /
 * packet too big.  Rate limited; @p m itself is left to the caller (it is
 * dropped under its own reason either way).
 */
void ep_fib_icmp_error(struct ep_fib_worker *fw, struct rte_mbuf *m, enum ep_fib_icmp_kind kind,
		       uint32_t mtu);

/**
 * Packet @p m (L2 as received) is larger than @p mtu, the IP MTU of the
 * port it would leave on: IPv4 with DF and IPv6 (routers never fragment
 * it, RFC 8200 section 5) get fragmentation needed / packet too big with
 * the MTU (RFC 1191, RFC 8201) and the drop verdict is returned; IPv4
 * without DF returns 0: the caller finishes its rewrite and calls
 * ep_fib_fragment.
 */
uint16_t ep_fib_too_big(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t mtu);

/**
 * Split IPv4 packet @p m, rewritten for @p port (data starts at its final
 * L2 header, ep_meta.l3_off bytes long), into fragments of at most @p mtu
 * bytes (RFC 791; rte_ip_frag), send them on @p port and free @p m.
 * Returns EP_NEXT_CONSUMED, or a drop verdict if it could not (no buffers,
 * more than EP_FIB_MAX_FRAGS fragments).
 */
#define EP_FIB_MAX_FRAGS 64
uint16_t ep_fib_fragment(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t port,
			 uint16_t mtu);
/** ep_fib_fragment's work without the sending: the fragments, each with
 *  the L2 header and @p m's ep_meta, into @p frags (EP_FIB_MAX_FRAGS);
 *  returns how many (m freed), or -1 (m untouched but for its L2 header,
 *  which is then gone: drop it as ipv4_frag_failed). */
int ep_fib_fragment_out(struct ep_fib_worker *fw, struct rte_mbuf *m, uint16_t mtu,
			struct rte_mbuf **frags);

/** Send a generated packet on @p port after the burst (the worker's tx). */
void ep_fib_emit(struct ep_fib_worker *fw, uint16_t port, struct rte_mbuf *m);
/** The ICMP rate limiter and the fragmentation pool of a new worker context. */
int ep_fib_icmp_init(struct ep_fib_worker *fw, int socket);

/** ARP requests and neighbour solicitations for the receiving port's own
 *  addresses answered in place; replies and advertisements posted to the
 *  resolver; every other ARP/ND message counted and dropped.  Returns the
 *  packets diverted (IP traffic continues). */
uint16_t ep_fib_neigh_burst(struct ep_fib_worker *fw, struct rte_mbuf **pkts, uint16_t *next,
			    uint16_t n);
/** The same as a stage function (ctx: the struct ep_fib_worker). */
uint16_t ep_fib_neigh_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/* ---- routing a burst ---- */

#define EP_FIB_ROUTE_PREFETCH 0x1u  /**< prefetch tbl24 lines here (no earlier stage did) */
#define EP_FIB_ROUTE_SRC_CHECK 0x2u /**< drop martian sources too (no earlier stage proved them) */
#define EP_FIB_ROUTE_BY8 0x4u       /**< look up through ep_fib_addr4 (an earlier stage prefetched
				     *   with ep_fib_prefetch4_by8); without it the address as it
				     *   is: the router's 100K routes leave few /8s to fold, and the
				     *   word's load cost its route stage ~1.2 cycles a packet */
#define EP_FIB_ROUTE_SAME_NH 0x8u   /**< most packets of a burst share their tbl24 word (the
				     *   vBNG's core: two /1s to one next hop): one compare with
				     *   the previous forwarded packet's word stands for the
				     *   lookup's decode and the next hop's resolution (without
				     *   EP_FIB_ROUTE_PREFETCH only) */

/* Next hop @p idx for @p m: forwardable, into ep_meta; else ep_fib_nh_slow.
 * @p nhs and @p max_nh are fib's, passed so a caller's loop keeps them in
 * registers (the ep_meta stores could alias fib's fields as far as the
 * compiler knows). */
static __rte_always_inline uint16_t
ep_fib_nh_resolve_in(struct ep_fib_worker *fw, struct ep_fib_nh *const *nhs, uint32_t max_nh,
		     struct rte_mbuf *m, uint32_t idx, uint16_t *next, ep_fib_local_fn local,
		     void *arg)
{
	const struct ep_fib_nh *e;

	if (likely(idx < max_nh) &&
	    likely((e = __atomic_load_n(&nhs[idx], __ATOMIC_ACQUIRE))->kind == EP_FIB_NH_FORWARD)) {
		struct ep_meta *md = ep_meta(m);

		md->nexthop = idx;
		ep_meta_set_nh(m, e);
		return 0;
	}
	return ep_fib_nh_slow(fw, m, idx, next, local, arg);
}

static __rte_always_inline uint16_t
ep_fib_nh_resolve(struct ep_fib_worker *fw, struct rte_mbuf *m, uint32_t idx, uint16_t *next,
		  ep_fib_local_fn local, void *arg)
{
	return ep_fib_nh_resolve_in(fw, fw->fib->nh, fw->fib->p.max_nexthops, m, idx, next, local,
				    arg);
}

/* One IPv4 lookup and its next hop's resolution. */
static __rte_always_inline uint16_t
ep_fib_route4_one(struct ep_fib_worker *fw, const struct rte_lpm *lpm,
		  struct ep_fib_nh *const *nhs, uint32_t max_nh, struct rte_mbuf *m, uint32_t dst,
		  uint16_t *next, ep_fib_local_fn local, void *arg)
{
	uint32_t idx;

	if (unlikely(rte_lpm_lookup(lpm, dst, &idx) != 0))
		idx = __atomic_load_n(&fw->fib->default_nh[0], __ATOMIC_ACQUIRE);
	return ep_fib_nh_resolve_in(fw, nhs, max_nh, m, idx, next, local, arg);
}

/* What the last forwarded packet's tbl24 word resolved to
 * (EP_FIB_ROUTE_SAME_NH); a burst's own, on its stage's stack. */
struct ep_fib_same_nh {
	uint64_t word;                  /**< UINT64_MAX: none yet (no 32-bit word equals it) */
	uint32_t idx;
	const struct ep_fib_nh *e;
};

/* A valid tbl24 word without the extended bit (RTE_LPM_LOOKUP_SUCCESS:
 * rte_lpm_lookup's whole answer, its low 24 bits the next hop), other
 * than @p c's: its next hop resolved, and kept in @p c when forwardable. */
static __rte_always_inline uint16_t
ep_fib_route4_new_word(struct ep_fib_worker *fw, struct ep_fib_nh *const *nhs, uint32_t max_nh,
		       struct ep_fib_same_nh *c, struct rte_mbuf *m, uint32_t word,
		       uint16_t *next, ep_fib_local_fn local, void *arg)
{
	const uint32_t idx = word & 0x00ffffffu;
	const struct ep_fib_nh *e;

	if (likely(idx < max_nh) &&
	    likely((e = __atomic_load_n(&nhs[idx], __ATOMIC_ACQUIRE))->kind == EP_FIB_NH_FORWARD)) {
		c->word = word;
		c->idx = idx;
		c->e = e;
		ep_meta(m)->nexthop = idx;
		ep_meta_set_nh(m, e);
		return 0;
	}
	return ep_fib_nh_slow(fw, m, idx, next, local, arg);
}

/*
 * One IPv4 lookup as ep_fib_route4_one, answered from @p c when the tbl24
 * word at @p dst is the one @p c holds.  Equal words give equal answers:
 * a word that is valid and not extended (RTE_LPM_LOOKUP_SUCCESS without
 * the tbl8 bit) is rte_lpm_lookup's whole answer, its low 24 bits the next
 * hop (rte_lpm.h), so the decode and the resolution are done once per
 * word, not per packet -- rte_lpm has no lookup that reuses a previous
 * answer.  Extended and invalid words take rte_lpm_lookup.  A route or
 * next hop changed within the burst is seen from the next burst, as an
 * entry read earlier in the burst is (valid until the quiescent state).
 */
static __rte_always_inline uint16_t
ep_fib_route4_same(struct ep_fib_worker *fw, const struct rte_lpm *lpm,
		   struct ep_fib_nh *const *nhs, uint32_t max_nh, struct ep_fib_same_nh *c,
		   struct rte_mbuf *m, uint32_t dst, uint16_t *next, ep_fib_local_fn local,
		   void *arg)
{
	uint32_t word;

	memcpy(&word, &lpm->tbl24[dst >> 8], 4);
	if (likely(word == c->word)) {
		ep_meta(m)->nexthop = c->idx;
		ep_meta_set_nh(m, c->e);
		return 0;
	}
	if ((word & RTE_LPM_VALID_EXT_ENTRY_BITMASK) != RTE_LPM_LOOKUP_SUCCESS)
		return ep_fib_route4_one(fw, lpm, nhs, max_nh, m, dst, next, local, arg);
	return ep_fib_route4_new_word(fw, nhs, max_nh, c, m, word, next, local, arg);
}

/**
 * Route a parsed burst (only IP reaches here; anything else is dropped as
 * ethertype_unsupported):
 *
 *   pass 1  per packet: martian destination (and source with
 *           EP_FIB_ROUTE_SRC_CHECK) dropped as ipv4/ipv6_bad_address (four
 *           compares per address, one branch); IPv4 looked up and its next
 *           hop resolved right there, or with EP_FIB_ROUTE_PREFETCH its
 *           tbl24 line prefetched and the destination kept for pass 2;
 *           IPv6 destinations into a 16-byte array
 *   pass 2  IPv4 with EP_FIB_ROUTE_PREFETCH: lookup and resolution; IPv6:
 *           one bulk lookup, then resolution.  Forwardable: ep_meta.nexthop
 *           and nexthop_entry set, next[] left alone; the rest by
 *           ep_fib_nh_slow
 *
 * Without the prefetch, one pass: the lookups of successive packets are
 * independent and the core overlaps their tbl24 misses by itself, and the
 * destination array's stores and reloads are gone.
 *
 * @p flags and @p local are constants at every call: the compiler folds
 * them.  Returns the packets diverted.
 */
static __rte_always_inline uint16_t
ep_fib_route_burst(struct ep_fib_worker *fw, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
		   const unsigned int flags, ep_fib_local_fn local, void *arg)
{
	const struct ep_fib *fib = fw->fib;
	const struct rte_lpm *lpm = fib->lpm4;
	struct ep_fib_nh *const *nhs = fib->nh;
	const uint32_t max_nh = fib->p.max_nexthops;
	struct ep_fib_same_nh same = { .word = UINT64_MAX };
	uint16_t n4 = 0, n6 = 0, out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md = ep_meta(m);
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, md->l3_off);

		if (likely(md->l3_type == EP_L3_IPV4)) {
			const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
			uint32_t dst = rte_be_to_cpu_32(ip->dst_addr);
			uint32_t keep = 0;
			int bad;

			if (flags & EP_FIB_ROUTE_BY8) {
				/* The fold's word says whether dst's /8 holds martians. */
				keep = __atomic_load_n(&fib->keep4[dst >> 24], __ATOMIC_ACQUIRE);
				bad = unlikely(keep & EP_FIB_KEEP4_MARTIAN) && ep_ipv4_martian(dst);
			} else {
				bad = ep_ipv4_martian(dst);
			}
			if (flags & EP_FIB_ROUTE_SRC_CHECK)
				bad |= ep_ipv4_martian(rte_be_to_cpu_32(ip->src_addr));
			if (unlikely(bad)) {
				next[i] = EP_NEXT_DROP(EP_DROP_IPV4_BAD_ADDRESS);
				out++;
				continue;
			}
			if (flags & EP_FIB_ROUTE_BY8)
				dst = ep_fib_addr4_keep(dst, keep);
			if (!(flags & EP_FIB_ROUTE_PREFETCH) && (flags & EP_FIB_ROUTE_SAME_NH)) {
				out += ep_fib_route4_same(fw, lpm, nhs, max_nh, &same, m, dst,
							  &next[i], local, arg);
				continue;
			}
			if (!(flags & EP_FIB_ROUTE_PREFETCH)) {
				out += ep_fib_route4_one(fw, lpm, nhs, max_nh, m, dst, &next[i],
							 local, arg);
				continue;
			}
			/* Start every packet's tbl24 miss before the first lookup
			 * needs its line.  (Prefetching it earlier, in a router's
			 * parse stage, was measured: the miss cost moved into
			 * parse, +14 cycles there for -8 here.) */
			ep_fib_prefetch4(fib, dst);
			fw->ip4[n4] = dst;
			fw->pkt4[n4++] = i;
		} else if (md->l3_type == EP_L3_IPV6) {
			const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)l3;
			int bad = ep_ipv6_martian(ip->dst_addr);

			if (flags & EP_FIB_ROUTE_SRC_CHECK)
				bad = bad || ep_ipv6_martian(ip->src_addr);
			if (unlikely(bad)) {
				next[i] = EP_NEXT_DROP(EP_DROP_IPV6_BAD_ADDRESS);
				out++;
				continue;
			}
			memcpy(fw->ip6[n6], ip->dst_addr, 16);
			fw->pkt6[n6++] = i;
		} else {
			next[i] = EP_NEXT_DROP(EP_DROP_ETHERTYPE_UNSUPPORTED);
			out++;
		}
	}
	for (uint16_t j = 0; j < n4; j++) {
		uint16_t i = fw->pkt4[j];

		out += ep_fib_route4_one(fw, lpm, nhs, max_nh, pkts[i], fw->ip4[j], &next[i],
					 local, arg);
	}
	if (unlikely(n6 != 0)) {
		uint32_t nh6[EP_BURST_MAX];

		ep_fib_lookup6_bulk(fib, fw->ip6, fw->nh6, nh6, n6);
		for (uint16_t j = 0; j < n6; j++) {
			uint16_t i = fw->pkt6[j];

			out += ep_fib_nh_resolve(fw, pkts[i], nh6[j], &next[i], local, arg);
		}
	}
	return out;
}

/**
 * ep_fib_route_burst with EP_FIB_ROUTE_BY8 | EP_FIB_ROUTE_SAME_NH for a
 * burst of IPv4 packets whose tbl24 words an earlier stage of the same
 * burst read (ep_fib_x8_words: the word at ep_fib_addr4's address of the
 * destination, whose /8 holds no martian): @p words[i] is packet i's.  A
 * word equal to the previous forwarded packet's takes that packet's
 * answer (a load and a compare, no read of the frame); another valid word
 * without the extended bit is decoded as it is (ep_fib_route4_new_word:
 * no read of the frame either, the router's case, whose destinations
 * spread over many routes); an extended or invalid word's packet is
 * routed as ep_fib_route_burst routes it, its word read again.  Returns
 * the packets diverted.
 */
static __rte_always_inline uint16_t
ep_fib_route_burst_words(struct ep_fib_worker *fw, struct rte_mbuf **pkts, uint16_t *next,
			 uint16_t n, const uint32_t *words, ep_fib_local_fn local, void *arg)
{
	const struct ep_fib *fib = fw->fib;
	const struct rte_lpm *lpm = fib->lpm4;
	struct ep_fib_nh *const *nhs = fib->nh;
	const uint32_t max_nh = fib->p.max_nexthops;
	struct ep_fib_same_nh same = { .word = UINT64_MAX };
	uint16_t out = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ep_meta *md;
		const struct rte_ipv4_hdr *ip;

		if (likely(words[i] == same.word)) {
			ep_meta(m)->nexthop = same.idx;
			ep_meta_set_nh(m, same.e);
			continue;
		}
		if (likely((words[i] & RTE_LPM_VALID_EXT_ENTRY_BITMASK) == RTE_LPM_LOOKUP_SUCCESS)) {
			out += ep_fib_route4_new_word(fw, nhs, max_nh, &same, m, words[i], &next[i],
						      local, arg);
			continue;
		}
		md = ep_meta(m);
		ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, md->l3_off);
		out += ep_fib_route4_same(fw, lpm, nhs, max_nh, &same, m,
					  ep_fib_addr4(fib, rte_be_to_cpu_32(ip->dst_addr)), &next[i],
					  local, arg);
	}
	return out;
}

#endif
