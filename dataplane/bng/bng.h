/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The vBNG data plane, after the BNG of Intel's vBNG reference
 * architecture and BBF TR-459's user plane: subscribers, and the two
 * pipelines, built on the shared modules (acl/, fib/, qos/).
 *
 *   bng-uplink   (subscriber -> core), stages in order:
 *     parse      access encapsulation: Ethernet, VLAN/QinQ, PPPoE session
 *                (RFC 2516) + PPP (RFC 1661) -> IPv4/IPv6; control traffic
 *                (PPPoE discovery, LCP/NCP/auth, DHCP, DHCPv6, ARP, ND) is
 *                punted to the control port or the punt ring
 *     subscriber classify (bulk rte_hash on the access key -> subscriber),
 *                anti-spoofing (source must be one of the subscriber's
 *                IPv4 ranges or in its IPv6 prefix) and policing (rte_meter
 *                trTCM, RFC 2698 or RFC 4115, of the subscriber's profile,
 *                colour blind: green passes, yellow is DSCP-remarked, red
 *                is dropped)
 *     acl        the ACL module's filter on the uplink ACL "bng-uplink"
 *     route      the FIB module's burst routing on the core FIB "bng"
 *     encap      strip the access header, TTL/hop limit - 1, add the core
 *                header (none / VLAN / MPLS), next-hop MACs, tx core port
 *
 *   bng-downlink (core -> subscriber):
 *     parse      Ethernet (+ tags or an MPLS label stack) -> IPv4/IPv6
 *     neigh      the core FIB's ARP/NS responder for the core port's addresses
 *     lookup     bulk rte_hash on the destination -> subscriber
 *     rpf        reverse-path rule of the subscriber: a packet to the
 *                subscriber whose source is in the subscriber's own ranges
 *                did not come from it through the core: drop
 *     encap      strip the core header, TTL - 1, add the subscriber's access
 *                header (VLAN/QinQ, PPPoE session + PPP) from its template
 *     hqos       DSCP -> traffic class/queue, ep_sched_pkt_write per
 *                packet, one ep_sched_enqueue per burst (consumed);
 *                the pipeline's service hook dequeues and transmits
 *
 * How each table reaches the workers (ep_rcu.h):
 *
 *   table                 way
 *   access key -> id      rte_hash, lock-free readers, RCU-QSBR (key slots
 *                         reclaimed through the hash's own defer queue); the
 *                         data is the id and the record's version
 *                         (bng_key_data), updated in place on a replace
 *   QinQ pair, PPPoE      direct maps mirroring those keys of the access
 *   session id -> data    key table (struct bng_qinq, struct bng_pppoe):
 *                         entries written in place by release stores, read
 *                         with acquire loads; blocks freed with the BNG only
 *   id -> record          array of pointers to immutable records; a change
 *                         publishes a new record, the old one goes to an
 *                         RCU-QSBR defer queue (no wait on the control thread)
 *   dst prefix -> id and  rte_hash {family, length, prefix}, lock-free
 *   record slot           readers, RCU-QSBR (bng_dst_data: the data names
 *                         the published record itself, updated in place on
 *                         a replace); searched per prefix length in
 *                         use, longest first (tuple space, as VPP's IPv6 FIB
 *                         does with bihash).  Not a FIB instance: a FIB's
 *                         rte_lpm and rte_lpm6 tables take 192 MiB whatever
 *                         they hold, and subscriber prefixes come in one or
 *                         two lengths (/32, /56), so one bulk hash lookup
 *                         per burst and family does the job in place
 *   prefix lengths in use immutable list, published, old one freed after a
 *                         grace period (changes only when a length appears
 *                         or disappears)
 *   policer profiles      the QoS module's table "bng" (array of pointers to
 *                         immutable profiles); per-worker meter contexts
 *   pipe profiles, pipes  the QoS module's scheduler "bng": messages
 *                         (ep_worker_call) to each downlink worker's own
 *                         scheduling port (ours or rte_sched's)
 *   uplink ACL            the ACL module's double-buffered rte_acl set
 *   core routes, next hops the FIB module's instance
 *   DSCP map, core encap  static after start (copied into worker contexts)
 *
 * Per-subscriber dynamic state (meter contexts, counters) is per worker and
 * written without atomics; a record's generation number tells the worker to
 * reset it when the subscriber was replaced by a new one with the same id.
 *
 * Subscriber changes are planned, then applied (bng_sub.c): everything that
 * can fail -- validation, conflicts, records, pipes, the downlink workers'
 * HQoS pipe configuration -- happens before any record is published; a
 * batch goes in whole or not at all.
 *
 * Control operations run on the control thread only (config loading and
 * control socket share them: one function per operation).
 */
#ifndef EP_BNG_H
#define EP_BNG_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_meter.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_sched.h>

#include "acl/ep_acl_node.h"
#include "fib/ep_fib_burst_words.h"
#include "fib/ep_fib_node.h"
#include "qos/ep_qos_node.h"
#include "ep_engine.h"
#include "ep_err.h"
#include "ep_ip.h"
#include "ep_stage.h"

#define BNG_MAX_V4          EP_PREFIX_SET_V4  /**< IPv4 ranges per subscriber */
#define BNG_MAX_DOWN        EP_MAX_WORKERS
#define BNG_NAME_LEN        EP_QOS_NAME_LEN
#define BNG_NO_POLICER      0xffffu
#define BNG_TPL_MAX         32      /**< longest access header: 12 + 8 + 8 + 2 */

/** Access key: what identifies a subscriber on the access side (16 bytes,
 *  hashed with CRC32).  IPoE on a VLAN or QinQ line: the VLAN ids (the line
 *  is the subscriber); IPoE on an untagged port: the client's MAC (a shared
 *  segment whose subscribers only their source MACs tell apart, as
 *  TR-459's Ethernet packet filter of the PDI names them); PPPoE: session,
 *  client MAC and the VLAN ids it arrives on.  Unused fields are zero. */
struct bng_key {
	uint16_t outer;     /**< VID of the outer tag (the only tag for one VLAN) */
	uint16_t inner;     /**< VID of the inner tag (QinQ) */
	uint16_t session;   /**< PPPoE session id (host order), 0 for IPoE */
	uint8_t mac[6];     /**< PPPoE or untagged IPoE client MAC */
	uint8_t n_vlans;    /**< 0, 1 or 2 */
	uint8_t pppoe;      /**< 1 for a PPPoE session */
	uint8_t pad[2];
} __rte_aligned(8);         /* rte_hash_crc reads 8 bytes at a time */

/**
 * IPoE lines on QinQ by their VLAN pair, for the uplink's classification:
 * two levels of 4096 (outer VID -> a block by inner VID), as VPP's
 * ethernet-input finds a QinQ sub-interface.  An entry is the line's
 * access key data (bng_key_data) or 0.  A mirror of those keys of
 * bng.keys, kept with it by the control thread: a packet whose pair has an
 * entry needs one array load where rte_hash reads a bucket and a key slot,
 * and one without falls back to the hash -- so a pair left out (the
 * blocks are capped, or one could not be allocated) costs the hash, never
 * a wrong answer.  Blocks are only freed with the BNG: an entry is read
 * with an acquire load, written with a release store.
 */
#define BNG_VID_N           4096
#define BNG_QINQ_BLOCKS_MAX 64u         /**< outer VIDs with a block: 64 x 32 KiB */

struct bng_qinq {
	uint64_t *blk[BNG_VID_N];       /**< by outer VID: [BNG_VID_N] by inner VID */
	uint32_t n_blk;
};

/**
 * PPPoE sessions by session id, for the uplink's classification: two
 * levels of 256 (id >> 8 -> a block of 256 entries by id & 0xff).  RFC
 * 2516 makes a session id unique per pair of Ethernet addresses only, so
 * an entry holds the whole access key (its two words, as the uplink builds
 * them: struct bng_key) beside the key's data (bng_key_data), and a frame
 * takes the entry only if its own key is equal.  A mirror of the PPPoE
 * keys of bng.keys, kept with it by the control thread: a second session
 * with an id already in the map (another client MAC or line), and any key
 * while its block could not be allocated, is the hash's alone, so the map
 * can only ever save work.  Blocks (8 KiB) are only freed with the BNG.
 *
 * An entry changes under lock-free readers as rte_hash's lock-free
 * lookups do (a change counter read before and after the key compare),
 * with the data word as the counter: the writer clears it, writes the key
 * words, then writes it (release stores); a reader loads it (acquire), the
 * key words, and again, and takes the entry only if both loads saw the
 * same non-zero data -- a record's version is never given twice, so the
 * data names one key.
 */
#define BNG_PPPOE_BLK 256
struct bng_pppoe_ent {
	uint64_t data;                  /**< bng_key_data, 0: free */
	uint64_t key[2];                /**< the key's two words */
	uint64_t pad;
};

struct bng_pppoe {
	struct bng_pppoe_ent *blk[65536 / BNG_PPPOE_BLK];    /**< by session id >> 8 */
};

/** Punted control traffic, by kind (counted per worker). */
#define BNG_PUNT_KINDS(X) \
	X(PPPOE_DISCOVERY, "pppoe_discovery") \
	X(PPP_LCP,         "ppp_lcp") \
	X(PPP_AUTH,        "ppp_auth") \
	X(PPP_NCP,         "ppp_ncp") \
	X(PPP_OTHER,       "ppp_other") \
	X(DHCP,            "dhcp") \
	X(DHCPV6,          "dhcpv6") \
	X(ARP,             "arp") \
	X(ND,              "nd")
enum bng_punt_kind {
#define X(id, name) BNG_PUNT_##id,
	BNG_PUNT_KINDS(X)
#undef X
	BNG_PUNT__COUNT
};
extern const char *const bng_punt_name[BNG_PUNT__COUNT];

/** Destination lookup key: a subscriber's IPv4 range or IPv6 prefix (up
 *  to /64, a delegated prefix, so 8 address bytes do).  16 bytes: rte_hash
 *  compares 16-byte keys with one vector compare (other sizes: memcmp). */
struct bng_dst_key {
	uint8_t family;     /**< 4 or 6 */
	uint8_t plen;
	uint8_t pad[6];
	uint8_t addr[8];    /**< network order, host bits clear */
} __rte_aligned(8);

/**
 * The hash of both of the module's 16-byte-key tables, the access keys
 * (struct bng_key) and the destinations (struct bng_dst_key): rte_hash_crc
 * over the key, initial value 0 (what bng_create gives rte_hash_create),
 * of a key held as its two 64-bit words: two CRC32C instructions on
 * registers.  rte_hash's own bulk lookup calls the hash function through a
 * pointer per key and reloads the key from memory; the uplink's classify
 * and the downlink's lookup compute it while they build the key and call
 * rte_hash_lookup_with_hash_bulk_data.  test_bng_up and test_bng_down
 * check it against rte_hash_hash on each table.
 */
static __rte_always_inline hash_sig_t
bng_key_hash(uint64_t w0, uint64_t w1)
{
	return rte_hash_crc_8byte(w1, rte_hash_crc_8byte(w0, 0));
}

/** Prefix lengths that have at least one subscriber, longest first. */
struct bng_lens {
	uint8_t n4, n6;
	uint8_t len4[33];
	uint8_t len6[129];
};

/**
 * A subscriber, as workers read it: immutable once published.  Two cache
 * lines carry everything the fast path reads:
 *   line 0  identity, the downlink HQoS path, the access header, whether
 *           it can be built (can_encap), and the first IPv4 range (the
 *           downlink's reverse-path check of an IPv4 packet of a
 *           subscriber with one range reads nothing else)
 *   line 1  the address ranges (anti-spoof up; reverse path down for IPv6
 *           and a second IPv4 range)
 * The downlink's lookup prefetches line 0, and line 1 for IPv6 only; the
 * uplink reads both when its copy of the hot fields is stale.  Everything
 * after line 1 is the control side's: no packet reads it (has_mac was
 * read by the downlink's encap from line 2, unprefetched, until the
 * can_encap byte took its place; docs/benchmarks/bng-downlink-passes-later.md,
 * "The record's first line").
 */
struct bng_sub {
	/* Line 0. */
	uint32_t id;
	uint32_t gen;                   /**< unique per subscriber, kept on replace */
	uint32_t pipe;
	uint32_t v4_net0, v4_mask0;     /**< ranges' first IPv4 range; none: UINT32_MAX, 0 */
	uint16_t subport;               /**< < EP_SCHED_MAX_SUBPORTS */
	uint16_t tag_v4, tag_v6;        /**< last two template bytes: EtherType or PPP protocol (network order) */
	uint8_t n_v4;
	uint8_t has_v6;
	uint8_t pppoe;
	uint8_t tpl_len;                /**< bytes pushed in front of the IP header (14..30) */
	uint8_t can_encap;              /**< pppoe || has_mac: the template names a destination */
	uint8_t tpl[BNG_TPL_MAX] __rte_aligned(32);     /**< dst MAC, src MAC, tags, [PPPoE header] */
	/* Line 1. */
	struct ep_prefix_set ranges __rte_cache_aligned;  /**< n_v4 IPv4 ranges, the IPv6 prefix if has_v6 */
	/* Control side (sub-get). */
	struct bng_key key;
	uint8_t v4_plen[BNG_MAX_V4];
	uint8_t v6_plen;
	uint8_t v6[16];
	uint16_t policer;               /**< index into bng.pol->pol[], BNG_NO_POLICER (the uplink's copy is in bng_up_dyn) */
	uint16_t pipe_prof;             /**< index into bng.hqos->prof[] */
	struct rte_ether_addr mac;      /**< IPoE downlink destination / PPPoE client */
	bool has_mac;
	uint32_t ver;                   /**< unique per published record, never 0 */
} __rte_cache_aligned;

_Static_assert(offsetof(struct bng_sub, tpl) + BNG_TPL_MAX <= RTE_CACHE_LINE_SIZE &&
	       offsetof(struct bng_sub, ranges) == RTE_CACHE_LINE_SIZE,
	       "the downlink's fast path reads line 0 (and line 1 for IPv6)");

/**
 * The access key's data in bng.keys: the record's version and the
 * subscriber id, not a pointer.  The uplink finds its per-worker state
 * (u->dyn[id]) and checks that its copy of the record's hot fields is
 * current (dyn.ver == ver) without reading the record or bng.subs[id]: one
 * dependent pair of lines fewer per packet.  Publishing a record with the same
 * key updates the key's data in place (rte_hash_add_key_data on a present
 * key: one release store of the data, lock-free readers see the old or
 * the new value); a new key is inserted with it.  A reader that sees a
 * version its copy does not have re-reads subs[id], so a stale or racing
 * version costs a refresh, never a wrong answer.
 */
static inline void *
bng_key_data(const struct bng_sub *s)
{
	return (void *)(uintptr_t)((uint64_t)s->ver << 32 | s->id);
}

/**
 * Per-worker, per-subscriber uplink state, owned by one worker: everything
 * a data packet of a subscriber with one IPv4 range reads or writes, in one
 * cache line (4096 subscribers: 256 KiB of a worker's L2, not 512):
 *
 *   bytes  0-39  the meter (rte_meter trTCM) and the profile it is armed for
 *         40-47  the green counters since the last spill (32-bit: see below)
 *         48-55  the record version the rest was copied from, the policer
 *                index, the number of IPv4 ranges, whether it has IPv6
 *         56-63  the first IPv4 range (anti-spoofing)
 *
 * A subscriber with more IPv4 ranges or an IPv6 prefix also reads its
 * whole set from bng_up.ranges[id] (a line of its own, only for them).  A
 * packet waits for this line and the lookup's only: the record is read
 * when the access key's data names a version other than @c ver (the
 * subscriber changed, or the id was given to a new one), see bng_key_data.
 *
 * The green counters are 32-bit here: before the byte counter reaches
 * 2^31 (a compare a packet; the packet counter is never the larger) the
 * worker adds both into the 64-bit totals of bng_up_cold and clears them,
 * inside that line's sequence count, so a control thread summing total and
 * remainder (bng_up_green_read) retries across a spill instead of reading
 * a counter go backwards.
 */
struct bng_up_dyn {
	struct ep_policer_ctx meter;
	uint32_t green_pkts, green_bytes;       /**< since the last spill */
	uint32_t ver;                   /**< bng_sub.ver copied from, 0: none */
	uint16_t policer;
	uint8_t n_v4;
	uint8_t has_v6;
	uint32_t v4_net, v4_mask;       /**< the first IPv4 range (n_v4 >= 1) */
} __rte_cache_aligned;

#define BNG_UP_GREEN_SPILL (1u << 31)   /**< green bytes that trigger a spill */

/** Per-worker, per-subscriber uplink counters of the rarer outcomes, the
 *  green totals spilled from bng_up_dyn, and the generation they belong
 *  to: touched when a packet is not green, is spoofed, the green bytes
 *  reach BNG_UP_GREEN_SPILL, or the record changed. */
struct bng_up_cold {
	uint32_t gen;
	uint32_t seq;                   /**< odd while the worker changes the green counters */
	uint64_t pkts[3], bytes[3];      /**< by colour; [RTE_COLOR_GREEN]: spilled totals */
	uint64_t spoofed;
};

/** The green counters of @p d and @p o, read by a thread other than the
 *  owning worker: monotonic across spills (sequence count, see above). */
static inline void
bng_up_green_read(const struct bng_up_dyn *d, const struct bng_up_cold *o, uint64_t *pkts,
		  uint64_t *bytes)
{
	uint32_t s1, s2;

	do {
		s1 = __atomic_load_n(&o->seq, __ATOMIC_ACQUIRE);
		*pkts = __atomic_load_n(&o->pkts[RTE_COLOR_GREEN], __ATOMIC_RELAXED) +
			__atomic_load_n(&d->green_pkts, __ATOMIC_RELAXED);
		*bytes = __atomic_load_n(&o->bytes[RTE_COLOR_GREEN], __ATOMIC_RELAXED) +
			 __atomic_load_n(&d->green_bytes, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&o->seq, __ATOMIC_RELAXED);
	} while ((s1 & 1) != 0 || s1 != s2);
}

/** Per-worker, per-subscriber downlink state. */
struct bng_down_dyn {
	uint32_t gen;
	uint32_t pad;
	uint64_t pkts, bytes;
};

/** Uplink worker context. */
struct bng_up {
	struct bng *b;
	struct ep_fib_worker *fw;       /**< core routes, the access port's ARP/ND, ICMP */
	struct ep_acl_filter *acl;      /**< the uplink ACL */
	struct ep_worker *w;
	struct bng_up_dyn *dyn;         /**< [max_subscribers + 1] */
	struct ep_prefix_set *ranges;   /**< [max_subscribers + 1]: all of each one's ranges */
	struct bng_up_cold *cold;       /**< [max_subscribers + 1] */
	struct ep_stage *parse_stage;   /**< for ring-full drops */
	uint16_t access_port, core_port;
	int32_t control_port;           /**< -1: punt to the ring */
	bool nd_answer;
	bool parse_x8;                  /**< parse eight frames at a time (AVX-512: bng_up_parse_x8_usable) */
	bool parse_x8_lines;            /**< its loads as lines, not gathers (bng_up_parse_x8_lines) */
	struct rte_ether_addr access_mac;
	uint32_t core_tag;              /**< VLAN TCI or MPLS label << 12 */
	/* counters */
	uint64_t punt[BNG_PUNT__COUNT];
	uint64_t punt_ring_full;
	uint64_t nd_answered;           /**< ARP requests / NS answered in place */
	uint64_t pkts, colour_pkts[3], colour_bytes[3];
	/* classify scratch */
	struct bng_key keys[EP_BURST_MAX];
	const void *key_ptr[EP_BURST_MAX];
	hash_sig_t sig[EP_BURST_MAX];   /**< bng_key_hash of keys[] */
	void *data[EP_BURST_MAX];
	/* The QinQ map's answers the x8 parse found for the burst it passed
	 * on whole (bng_qinq_x8_entries): data[i] of each lane in pre_hits, valid for
	 * the subscriber stage's next call on pre_n packets from pre_first. */
	uint64_t pre_hits;
	uint16_t pre_n;
	const struct rte_mbuf *pre_first;
	/* The core route's tbl24 words the x8 parse read for every packet of
	 * the burst it passed on whole (ep_fib_x8_words), taken by the route
	 * stage's next call if it is on that burst (ep_fib_burst_words.h). */
	struct ep_fib_burst_words route_words;
};

/** Downlink worker context. */
struct bng_down {
	struct bng *b;
	struct ep_fib_worker *fw;       /**< the core port's ARP/ND, ICMP back to the core */
	struct ep_worker *w;
	struct bng_down_dyn *dyn;
	struct ep_sched_port *hqos;     /**< this worker's port of the scheduler "bng" */
	struct ep_stage *hqos_stage;
	/* Read per packet by parse: not across a cache line (a split load). */
	struct rte_ether_addr core_mac;
	uint16_t access_port, core_port;
	uint16_t access_mtu;            /**< IP MTU of the access port */
	uint8_t dscp_tc[64];            /**< tc << 2 | queue */
	uint64_t pkts;
	/** Our scheduler's class path of each DSCP (ep_hsched_class_path). */
	uint64_t dscp_path[64];
	/* lookup scratch */
	uint8_t addr[EP_BURST_MAX][16];
	uint16_t pend[EP_BURST_MAX];
	struct bng_dst_key keys[EP_BURST_MAX];
	const void *key_ptr[EP_BURST_MAX];
	hash_sig_t sig[EP_BURST_MAX];   /**< bng_key_hash of keys[] */
	void *data[EP_BURST_MAX];
};

/** Sizing and static settings, from [bng]. */
struct bng_params {
	uint32_t max_subscribers;
	uint32_t max_routes;            /**< core routing table, per family */
	struct ep_fib_params fib;       /**< the core FIB (sized from max_routes) */
	uint32_t punt_ring_size;
	struct ep_sched_params hqos;    /**< the downlink scheduler's port */
	uint8_t dscp_tc[64];
};

enum bng_core_encap { BNG_CORE_NONE = 0, BNG_CORE_VLAN, BNG_CORE_MPLS };

struct bng {
	struct ep_engine *e;
	struct bng_params p;
	struct ep_fib *fib;             /**< core routes and neighbours: FIB "bng" */
	struct ep_acl *acl;             /**< uplink ACL: "bng-uplink" */

	/* Read by workers. */
	struct rte_hash *keys;          /**< bng_key -> bng_key_data (version, id) */
	struct bng_qinq *qinq;          /**< QinQ IPoE keys of bng.keys, by VLAN pair */
	struct bng_pppoe *pppoe;        /**< PPPoE keys of bng.keys, by session id */
	struct bng_sub **subs;          /**< [max_subscribers + 1] */
	struct rte_hash *dst;           /**< bng_dst_key -> bng_dst_data (id, record slot) */
	struct bng_lens *lens;
	struct ep_policers *pol;        /**< uplink policer profiles: "bng" */
	struct ep_sched *hqos;          /**< downlink scheduler: "bng" */
	struct rte_ring *punt_ring;

	/* Static after setup. */
	uint16_t access_port, core_port;
	int32_t control_port;
	bool nd_answer;
	enum bng_core_encap core_encap;
	uint32_t core_tag;

	/* Control thread only. */
	uint32_t len_refs4[33], len_refs6[129];
	struct rte_rcu_qsbr_dq *dq;     /**< deferred frees of records and profiles */
	struct bng_sub *rec_pool;
	struct bng_sub **rec_free;
	uint32_t n_rec_free, n_rec;
	uint32_t gen;
	uint32_t ver;                   /**< last bng_sub.ver given */
	uint32_t n_subs;
	struct bng_down *down[BNG_MAX_DOWN];
	int n_down;
	struct bng_up *up[BNG_MAX_DOWN];
	int n_up;
};

/**
 * The destination table's data (bng.dst): the subscriber id and the slot
 * of its published record in bng.rec_pool, not the id alone.  The
 * downlink's lookup gets the record's address and its per-worker counters'
 * (dyn[id]) from the data by arithmetic and prefetches both at once,
 * instead of loading subs[id] first: one dependent load fewer a packet.
 * Kept right the way the access keys' data is: a replacing record's new
 * destinations go in naming it before it is published; the destinations
 * it keeps are updated in place after (rte_hash_add_key_data on a present
 * key: one release store of the data, lock-free readers see the old value
 * or the new); the old record is retired only then, so it outlives every
 * reader that found it (RCU-QSBR defer queue, bng_rec_retire).
 */
static inline void *
bng_dst_data(const struct bng *b, const struct bng_sub *s)
{
	return (void *)(uintptr_t)((uint64_t)s->id << 32 | (uint32_t)(s - b->rec_pool));
}

/** The record bng_dst_data @p data names. */
static __rte_always_inline const struct bng_sub *
bng_dst_rec(const struct bng *b, const void *data)
{
	return &b->rec_pool[(uint32_t)(uintptr_t)data];
}

/** The subscriber id bng_dst_data @p data names. */
static __rte_always_inline uint32_t
bng_dst_id(const void *data)
{
	return (uint32_t)((uint64_t)(uintptr_t)data >> 32);
}

/** The vBNG of engine @p e (built by the pipelines' setup), or NULL. */
struct bng *bng_of(const struct ep_engine *e);
/** Make @p b the vBNG of @p e, as the pipelines' setup does (tests that
 *  build one without running the engine), or forget it with NULL. */
int bng_attach(struct ep_engine *e, struct bng *b);

/* ---- tables and operations (bng.c) ---- */
void bng_params_default(struct bng_params *p);
struct bng *bng_create(struct ep_engine *e, const struct bng_params *p, struct ep_err *err);
void bng_free(struct bng *b);

/** One subscriber change request: filled field by field from text
 *  ("qinq", "100.200") by the config loader and the control socket alike. */
struct bng_sub_req {
	uint32_t id;
	struct bng_key key;
	bool has_key_vlan, has_pppoe, has_mac;
	struct rte_ether_addr mac;
	uint8_t n_v4;
	uint32_t v4[BNG_MAX_V4];        /**< network order */
	uint8_t v4_plen[BNG_MAX_V4];
	bool has_v6;
	uint8_t v6[16];
	uint8_t v6_plen;
	char policer[BNG_NAME_LEN];
	char pipe[BNG_NAME_LEN];
	uint32_t subport;
};
void bng_sub_req_init(struct bng_sub_req *r);
/** Set one field ("id", "qinq", "vlan", "pppoe", "mac", "ipv4", "ipv6",
 *  "policer", "pipe", "subport") from its text.  -1 with err naming it.
 *  An IPoE request with mac= and neither vlan= nor qinq= is an untagged
 *  line, keyed by that MAC. */
int bng_sub_req_set(struct bng_sub_req *r, const char *key, const char *val,
		    struct ep_err *err);
/** Parse a whole "id=1 qinq=100.200 ..." line. */
int bng_sub_req_parse(struct bng_sub_req *r, const char *line, struct ep_err *err);

/**
 * Add or replace @p n subscribers, whole or not at all: planned (every
 * entry validated, checked against the tables and the rest of the batch,
 * records and pipes taken aside), then the downlink workers' HQoS pipes
 * configured (one message per worker for the batch), then published.  If
 * any step fails nothing is left of the batch; err names the first bad
 * entry ("subscribers[i] (id n): ..." for a batch) and @p failed (if not
 * NULL) its index.
 */
int bng_sub_add(struct bng *b, const struct bng_sub_req *reqs, uint32_t n, uint32_t *failed,
		struct ep_err *err);
int bng_sub_del(struct bng *b, uint32_t id, struct ep_err *err);
/** Current record of @p id (control thread), or NULL. */
const struct bng_sub *bng_sub_get(const struct bng *b, uint32_t id);
/** Look an access key up as the uplink does: id or -1. */
int64_t bng_sub_find_key(const struct bng *b, const struct bng_key *k);
/** Longest-prefix subscriber of a destination (4 or 16 bytes): id or -1. */
int64_t bng_sub_find_dst(const struct bng *b, int family, const void *addr);
/** rte_free @p obj after a grace period (never waits). */
void bng_defer_free(struct bng *b, void *obj);
/** A subscriber record from the pool (control side), or NULL. */
struct bng_sub *bng_rec_alloc(struct bng *b);
/** Back to the pool once no worker can hold it. */
void bng_rec_retire(struct bng *b, struct bng_sub *rec);

/* ---- configuration ([bng]; bng_config.c) ---- */
int bng_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s, struct bng_params *p,
			   struct ep_err *err);
/** Ports, profiles, routes, ACL and subscribers from [bng]. */
/** Bytes of DPDK memory the vBNG of @p e's [bng] takes, before the EAL:
 *  the shared tables if @p shared, @p n_up uplink and @p n_down downlink
 *  workers (each downlink worker's scheduling port). */
uint64_t bng_memory(struct ep_engine *e, int n_up, int n_down, bool shared);
int bng_load_config(struct bng *b, struct ep_cfg *cfg, struct ep_cfg_section *s,
		    struct ep_err *err);

/* ---- workers and stages ---- */
struct bng_up *bng_up_create(struct bng *b, struct ep_worker *w, int socket, struct ep_err *err);
void bng_up_free(struct bng_up *u);
struct bng_down *bng_down_create(struct bng *b, struct ep_worker *w, int socket,
				 struct ep_err *err);
void bng_down_free(struct bng_down *d);
/** Add the uplink / downlink stages to @p w (also used by tests). */
int bng_up_build(struct bng *b, struct ep_worker *w, struct ep_err *err);
int bng_down_build(struct bng *b, struct ep_worker *w, struct ep_err *err);

uint16_t bng_up_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** Whether this CPU runs the uplink parse's eight-frame path (AVX-512). */
bool bng_up_parse_x8_usable(void);
/** Whether its loads run faster here as lines than as gathers
 *  (ep_parse_x8_lines, timed once a process). */
bool bng_up_parse_x8_lines(void);
/** classify + antispoof + police in one stage (`subscriber`). */
uint16_t bng_up_subscriber_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_up_route_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_up_encap_none_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_up_encap_vlan_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_up_encap_mpls_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** Policing alone, of packets whose ep_meta.user is their subscriber
 *  record, at an explicit time (TSC cycles), for tests. */
uint16_t bng_up_police_at(struct bng_up *u, struct rte_mbuf **pkts, uint16_t *next, uint16_t n,
			  uint64_t now);

uint16_t bng_down_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_down_lookup_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_down_rpf_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_down_encap_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t bng_down_hqos_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

#endif
