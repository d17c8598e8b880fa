/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * FIBs: IPv4/IPv6 routes, next hops and neighbours in named instances
 * (VRF-ready: a pipeline creates one per table it routes with), and the
 * L3 services every forwarding pipeline shares: the ARP (RFC 826) and
 * neighbour discovery (RFC 4861) responder for the engine's port
 * addresses, next-hop resolution, ICMP echo and errors.  Control-path
 * header; stages include ep_fib_node.h.
 *
 * How each table reaches the workers (ep_rcu.h):
 *
 *   table              writer (control thread)                 reader (worker)
 *   IPv4 routes        rte_lpm add/delete in place, tbl8s      rte_lpm_lookup per packet
 *                      reclaimed by RCU-QSBR (e->qsbr)         (tbl24 line prefetched
 *                                                              one loop ahead)
 *   keep4 (per /8)     one word, stored before a /8's first    acquire load per lookup
 *                      route longer than /8 is added, after    with EP_FIB_ROUTE_BY8
 *                      its last one is deleted (bit 31, the    (ep_fib_addr4), which
 *                      /8 holds martians, fixed at creation)   also gates the martian test
 *   keep4b (per /8)    one byte with each keep4 word, the      two byte permutes per eight
 *                      same order (keep4_store): bit 0 the     frames in the x8 parses
 *                      fold, bit 7 the martian /8s             (ep_fib_x8_keep)
 *   IPv6 routes        two rte_lpm6 tables: change the spare,  rte_lpm6_lookup_bulk_func
 *                      publish it, synchronize, change the     on the published one
 *                      other (rte_lpm6 has no RCU in 22.11
 *                      and rebuilds itself on delete)
 *   default routes     one word per family (rte_lpm/rte_lpm6   acquire load on a miss
 *                      take depths from 1), release store
 *   next hops          nh[i] points to an immutable entry; a    one acquire load per packet
 *                      change publishes a new entry,
 *                      synchronizes, frees the old one, so no
 *                      reader sees half a MAC
 *   port MACs and      static after start: copied into each     plain reads
 *   addresses          worker's context
 *   learnt neighbours  workers post what they asked and what    rte_ring (MP/SC), drained
 *                      they heard on a ring; the control        by ep_fib_tick on the
 *                      thread installs them as next hops        control thread
 *   route changes      the key of every route install and       (control thread only: a
 *                      removal into a ring of EP_FIB_CHANGES    mirror of the tables, the
 *                      (ep_fib_route_changes), 20 B each        router's XDP fast path,
 *                                                              follows it, router/xdp_fast.c)
 *
 * Why rte_lpm and not rte_fib (DIR-24-8 with vector bulk lookups): DPDK
 * 22.11's rte_fib has no RCU integration, so a delete frees tbl8 groups a
 * worker may still be reading; changing it safely means double-buffering
 * (two tables, a grace period per change, as rte_lpm6 is below).  Nor is
 * it faster where the data plane runs, on hugepages, even with 2-byte
 * next hops (a 32 MiB tbl24 for rte_lpm's 64 MiB): fib_lookup_methods_compared
 * in test_fib.c (random destinations in 1K and 100K routes of /16../24,
 * bursts of 32, minimum of 7 runs, EP_TEST_HUGE=1) measured rte_lpm_lookup
 * with the tbl24 line prefetched a loop ahead at 1.1 and 4.5 cycles a
 * lookup, rte_fib_lookup_bulk with 2-byte entries at 2.6 and 4.0 (4-byte:
 * 2.7 and 5.5).  Only on 4 KiB pages (memory = auto falling back to
 * --no-huge) does the half-size table win clearly (100K routes: 12.7
 * against 7.9), and in the router's stage test it cost ~2 cycles a packet
 * (the bulk call and its 8-byte results).  IPv6 keeps rte_lpm6,
 * double-buffered, for the same reason (rte_fib6 has no RCU either).
 *
 * Memory: rte_lpm's and rte_lpm6's tbl24 are 64 MiB each, so an instance
 * takes ~192 MiB (one IPv4 table, two IPv6 copies) whatever its size.
 *
 * Route values are next-hop indexes.  Index 0 is the data plane itself
 * (own addresses, /32 and /128), index 1 is "connected, host not in the
 * neighbour table" (the ports' subnets: resolved on demand).  A neighbour
 * is a next hop with a MAC and a host route (/32, /128) to it; static ones
 * come from config and the control socket, dynamic ones are learnt:
 *
 *   a packet meets an unresolved next hop -> dropped as neighbor_unresolved,
 *     and the worker sends an ARP request / neighbour solicitation (one per
 *     target per second per worker) and posts "asked X" to the ring
 *   an ARP reply to us / a solicited NA arrives -> posted as "X is at M"
 *   ep_fib_tick: an answer to a question asked in the last 3 s, or from a
 *     neighbour already known, installs or refreshes the entry (a static
 *     neighbour is never overridden); unsolicited answers are ignored
 *   reachable for neigh_reachable seconds after its last confirmation; then
 *     STALE: still forwarded, and the workers using it re-ask (unicast);
 *     unconfirmed 5 s later it is removed and resolves afresh on demand
 *
 * Every control operation is one function below, used by the config
 * loader and the control socket alike.  They run on the control thread
 * only, so the control-side structures need no locks.
 */
#ifndef EP_FIB_H
#define EP_FIB_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_ring.h>

#include "ep_config.h"
#include "ep_err.h"

struct ep_engine;
struct ep_fib_worker;

#define EP_FIB_NAME_LEN 32
#define EP_FIB_KIND "FIB"       /**< its kind among the engine's named instances */

#define EP_FIB_NH_LOCAL 0u      /**< next hop of the data plane's own addresses */
#define EP_FIB_NH_GLEAN 1u      /**< connected subnet, host not in the neighbour table */
#define EP_FIB_NH_FIRST 2u      /**< first index for gateways and neighbours */
#define EP_FIB_NO_ROUTE UINT32_MAX

enum ep_fib_nh_kind {
	EP_FIB_NH_FORWARD = 0,  /**< MACs and port known: forward */
	EP_FIB_NH_STALE,        /**< forward, and ask again (its confirmation is old) */
	EP_FIB_NH_UNRESOLVED,   /**< no link-layer address: neighbor_unresolved, ask */
	EP_FIB_NH_IS_LOCAL,     /**< to us: echo reply or local_unsupported */
};

/** What a worker reads for a next hop.  Immutable once published. */
struct ep_fib_nh {
	uint8_t eth[12];        /**< destination MAC, source MAC (the port's): the frame's first 12 bytes */
	uint16_t port;          /**< logical tx port */
	uint16_t mtu;           /**< its IP MTU (ports' MTUs are static): one load less per packet */
	uint8_t ip[16];         /**< the gateway / neighbour: what to resolve */
	uint8_t kind;           /**< enum ep_fib_nh_kind */
	uint8_t family;         /**< 4 or 6 (gateways; 0 for the static entries) */
};

/** Route kinds, stored with each route's next-hop index. */
enum ep_fib_route_kind {
	EP_FIB_RT_STATIC = 0,   /**< route = ... via ...  / route-add */
	EP_FIB_RT_NEIGH,        /**< host route of a neighbour */
	EP_FIB_RT_CONNECTED,    /**< a port's subnet */
	EP_FIB_RT_LOCAL,        /**< a port's own address */
};

/** Control-side record of a next hop. */
struct ep_fib_nhc {
	bool in_use;
	bool neigh;             /**< a neighbour entry gave it a MAC (and a host route) */
	bool dynamic;           /**< learnt (aged), not configured */
	bool stale;             /**< published as EP_FIB_NH_STALE */
	uint8_t family;         /**< 4 or 6 */
	uint8_t ip[16];         /**< gateway / neighbour address */
	uint16_t port;
	struct rte_ether_addr mac;
	uint32_t refs;          /**< routes through it (its host route included) */
	uint64_t confirmed;     /**< TSC of the last confirmation (dynamic) */
};

/** Sizing and neighbour behaviour. */
struct ep_fib_params {
	uint32_t max_routes4;
	uint32_t max_routes6;
	uint32_t lpm4_tbl8s;
	uint32_t lpm6_tbl8s;
	uint32_t max_nexthops;
	bool neigh_learn;               /**< resolve unresolved next hops (ARP / ND) */
	uint32_t neigh_reachable_s;     /**< a learnt neighbour is reachable this long */
	uint32_t ports;                 /**< bit per engine port the FIB routes between (0: all):
	                                 *   its connected and local routes, the ports gateways
	                                 *   may be on; a router and a vBNG in one process do
	                                 *   not route into each other's links */
	uint32_t icmp_rate;             /**< ICMP errors per second per worker (0: none) */
	uint32_t icmp_burst;            /**< ... and the burst the limit allows */
};

/** A resolver event, worker -> control thread (32 bytes, on fib->events). */
struct ep_fib_event {
	uint8_t type;           /**< EP_FIB_EV_* */
	uint8_t family;
	uint16_t port;
	uint8_t ip[16];
	uint8_t mac[6];
	uint8_t pad[6];
};
#define EP_FIB_EV_ASKED 1       /**< a worker asked for ip on port */
#define EP_FIB_EV_HEARD 2       /**< ip is at mac on port (reply, NA, or a request from it) */

struct ep_fib {
	char name[EP_FIB_NAME_LEN];
	struct ep_engine *e;
	struct ep_fib_params p;

	/* Read by workers. */
	struct rte_lpm *lpm4;
	struct rte_lpm6 *lpm6_cur;          /**< published one of lpm6[] */
	struct ep_fib_nh **nh;              /**< [max_nexthops], never NULL entries */
	uint32_t default_nh[2];             /**< of 0.0.0.0/0 and ::/0, or EP_FIB_NO_ROUTE */
	/** Per first octet: 0x00ffffff while the /8 holds a route longer
	 *  than /8, else 0 (the /8 is looked up at one fixed address:
	 *  ep_fib_addr4); or'd with EP_FIB_KEEP4_MARTIAN for the /8s that
	 *  hold martian addresses (ep_fib_keep4_base). */
	uint32_t keep4[256];
	/** keep4 as one byte per /8 (EP_FIB_KEEP4B_*), stored with it
	 *  (keep4_store): eight lanes' words from two byte permutes of its
	 *  four lines (ep_fib_x8_keep), where a masked 32-bit gather of
	 *  keep4 costs 28-42 cycles of throughput on Zen 5. */
	uint8_t keep4b[256] __rte_cache_aligned;
	struct rte_ring *events;            /**< struct ep_fib_event, MP/SC; NULL without learning */

	/* Control thread only. */
	struct rte_lpm6 *lpm6[2];
	struct ep_fib_nhc *nhc;             /**< [max_nexthops] */
	uint32_t *nh_free;                  /**< stack of free indexes */
	uint32_t n_nh_free;
	struct rte_hash *nh_by_ip;          /**< {family, ip} -> index */
	struct rte_hash *routes;            /**< {family, plen, prefix} -> route value */
	struct rte_hash *asked;             /**< {family, ip} -> TSC of the question */
	uint32_t n_routes4, n_routes6;
	uint32_t n_long4[256];              /**< IPv4 routes longer than /8, per first octet */
	uint64_t asked_purged;              /**< TSC of the last sweep of `asked` */
	uint64_t n_learnt, n_unsolicited, n_expired;
	/** Bumped by every route install or removal and every next-hop
	 *  publish: a mirror of the tables (the router's XDP fast path,
	 *  router/xdp_fast.c) re-syncs when it moves. */
	uint64_t gen;
	/** The keys of the last EP_FIB_CHANGES route installs and removals
	 *  (a ring; route_seq counts them all): a mirror follows the routes
	 *  by what changed instead of walking the table
	 *  (ep_fib_route_changes). */
	struct route_key *changes;
	uint64_t route_seq;
	struct ep_fib_nh nh_static[EP_FIB_NH_FIRST + 1]; /**< local, glean, "unused" entries */
	struct ep_fib_worker *workers[16];  /**< for stats */
	int n_workers;
};

/* keep4's bit for a /8 that holds addresses ep_ipv4_martian rejects (0/8,
 * 127/8, 169/8 for 169.254/16, 224/8-255/8): a route stage that loads the
 * word for the fold (EP_FIB_ROUTE_BY8) tests only those addresses, one bit
 * test for the others instead of the four compares
 * (docs/benchmarks/bng-passes.md, "Thirteenth pass, continued").  Bit 31 leaves ep_fib_addr4's fold as it was. */
#define EP_FIB_KEEP4_MARTIAN 0x80000000u

/* keep4b's bits: the fold's 0x00ffffff, EP_FIB_KEEP4_MARTIAN. */
#define EP_FIB_KEEP4B_LONG    0x01u
#define EP_FIB_KEEP4B_MARTIAN 0x80u

/** keep4's word of /8 @p top without routes longer than /8. */
static inline uint32_t
ep_fib_keep4_base(uint32_t top)
{
	return top == 0 || top == 127 || top == 169 || top >= 224 ? EP_FIB_KEEP4_MARTIAN : 0;
}

void ep_fib_params_default(struct ep_fib_params *p);
/** Bytes of DPDK memory a FIB of @p p takes (before the EAL; rte_lpm's
 *  tbl24 alone is 64 MiB per table). */
uint64_t ep_fib_memory(const struct ep_fib_params *p);
/** ... and per worker that uses it. */
uint64_t ep_fib_worker_memory(void);
/** A FIB with the ports' local and connected routes.  Names are unique per
 *  engine ("router", "bng"). */
struct ep_fib *ep_fib_create(struct ep_engine *e, const char *name,
			     const struct ep_fib_params *p, struct ep_err *err);
void ep_fib_free(struct ep_fib *fib);
struct ep_fib *ep_fib_find(struct ep_engine *e, const char *name);
struct ep_fib *ep_fib_next(struct ep_engine *e, struct ep_fib *prev);

/** Add or replace a static route "prefix via gateway". */
int ep_fib_route_add(struct ep_fib *fib, const char *prefix, const char *via,
		     struct ep_err *err);
int ep_fib_route_del(struct ep_fib *fib, const char *prefix, struct ep_err *err);
/** Route installs and removals the change log keeps: the last this many. */
#define EP_FIB_CHANGES 4096u

/** Whether every route change after the @p since'th (a past route_seq) is
 *  still in the log; if not, a mirror walks the table (ep_fib_route_each). */
bool ep_fib_route_changes_kept(const struct ep_fib *fib, uint64_t since);
/** Visit the routes changed after the @p since'th change, oldest first, a
 *  route as often as it changed, each with its state now: fn(family,
 *  prefix, plen, present, kind, nh index, arg), @p kind and @p nh
 *  meaningless when it is gone; stops on non-zero.  Only when
 *  ep_fib_route_changes_kept(@p since). */
int ep_fib_route_changes(struct ep_fib *fib, uint64_t since,
			 int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen, bool present,
				   enum ep_fib_route_kind kind, uint32_t nh, void *arg),
			 void *arg);
/** Visit routes: fn(family, prefix, plen, kind, nh index, arg); stops on non-zero. */
int ep_fib_route_each(struct ep_fib *fib,
		      int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen,
				enum ep_fib_route_kind kind, uint32_t nh, void *arg),
		      void *arg);
/** Add or change a static neighbour (and its host route); @p dev names the
 *  port when the address is on no connected subnet. */
int ep_fib_neigh_add(struct ep_fib *fib, const char *ip, const char *mac, const char *dev,
		     struct ep_err *err);
int ep_fib_neigh_del(struct ep_fib *fib, const char *ip, struct ep_err *err);
/** Port whose connected subnet holds @p ip, or -1. */
int ep_fib_port_for(const struct ep_fib *fib, uint8_t family, const uint8_t *ip);
/** True if @p ip is one of the data plane's own addresses. */
bool ep_fib_is_own(const struct ep_fib *fib, uint8_t family, const uint8_t *ip);

/**
 * Control-thread housekeeping, at @p now (TSC): drain the resolver ring
 * (install answers to questions asked, refresh known neighbours), age
 * learnt neighbours.  The engine calls it on every control-loop turn.
 */
void ep_fib_tick(struct ep_fib *fib, uint64_t now);

/**
 * The routing keys of a config section, as every pipeline spells them
 * (neighbours first, so a route may go via a neighbour given with dev):
 *
 *   neighbor = <ip> <mac> [dev <port>]       repeatable
 *   route = <prefix> via <gateway>           repeatable
 *   route_file = <path>                      "<prefix> via <gateway>" lines
 */
int ep_fib_load_config(struct ep_fib *fib, struct ep_cfg *cfg, struct ep_cfg_section *s,
		       struct ep_err *err);
/** FIB keys of a section onto @p p: neigh_learn = on|off,
 *  neigh_reachable = <seconds>, icmp_rate = <errors/s per worker, 0: none>,
 *  and with @p sizing the table sizes
 *  (max_routes4, max_routes6, lpm4_tbl8s, lpm6_tbl8s, max_nexthops). */
int ep_fib_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s, bool sizing,
			      struct ep_fib_params *p, struct ep_err *err);

#endif
