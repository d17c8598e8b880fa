/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The `router` pipeline: shared tables, their control operations, and the
 * five stages.
 *
 *   rx -> parse -> neigh -> acl -> route -> rewrite -> tx(next-hop port)
 *                   |                |
 *                   +-> ARP reply / NA, tx(in_port)
 *                                    +-> ICMP echo reply, tx(in_port)
 *
 * How each table reaches the workers (ep_rcu.h):
 *
 *   table              writer (control thread)                 reader (worker)
 *   IPv4 routes        rte_lpm add/delete in place, tbl8s      rte_lpm_lookup_bulk
 *                      reclaimed by RCU-QSBR (e->qsbr)
 *   IPv6 routes        two rte_lpm6 tables: change the spare,   rte_lpm6_lookup_bulk_func
 *                      publish it, synchronize, change the      on the published one
 *                      other (rte_lpm6 has no RCU in 22.11 and
 *                      rebuilds itself on delete)
 *   next hops          nh[i] is a pointer to an immutable       one acquire load per packet
 *                      entry; a change publishes a new entry,
 *                      synchronizes, frees the old one, so no
 *                      reader sees half a MAC
 *   ACL                a new rte_acl context pair is built      rte_acl_classify per burst
 *                      aside, published, old freed after a
 *                      grace period
 *   port MACs, own     static after start: copied into each     plain reads
 *   addresses          worker's context at build time
 *
 * Route values are next-hop indexes.  Index 0 is the data plane itself
 * (own addresses, /32 and /128), index 1 is "connected, not in the neighbour
 * table" (the ports' subnets).  Neighbours are static: each one is a next hop
 * with a MAC and a host route (/32, /128) to it.
 *
 * Every control operation is one function below, used by the config loader
 * and by the control-socket handlers alike.  They run on the control thread
 * only, so the control-side structures need no locks.
 */
#ifndef EP_ROUTER_H
#define EP_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "acl/ep_acl_node.h"
#include "ep_engine.h"
#include "ep_err.h"
#include "ep_stage.h"

#define ROUTER_NH_LOCAL 0u      /**< next hop of the data plane's own addresses */
#define ROUTER_NH_GLEAN 1u      /**< connected subnet, host not in the neighbour table */
#define ROUTER_NH_FIRST 2u      /**< first index for gateways and neighbours */

enum router_nh_kind {
	ROUTER_NH_FORWARD = 0,  /**< MACs and port known: forward */
	ROUTER_NH_UNRESOLVED,   /**< no link-layer address: NEIGHBOR_UNRESOLVED */
	ROUTER_NH_IS_LOCAL,     /**< to us: echo reply or LOCAL_UNSUPPORTED */
};

/** What a worker reads for a next hop.  Immutable once published. */
struct router_nh {
	uint8_t eth[12];        /**< destination MAC, source MAC (the port's): the frame's first 12 bytes */
	uint16_t port;          /**< logical tx port */
	uint8_t kind;           /**< enum router_nh_kind */
};

/** Control-side record of a next hop. */
struct router_nhc {
	bool in_use;
	bool neigh;                 /**< a neighbour entry gave it a MAC (and a host route) */
	uint8_t family;             /**< 4 or 6 */
	uint8_t ip[16];             /**< gateway / neighbour address */
	uint16_t port;
	struct rte_ether_addr mac;
	uint32_t refs;              /**< routes through it (its host route included) */
};

/** Sizing, from [router]. */
struct router_params {
	uint32_t max_routes4;
	uint32_t max_routes6;
	uint32_t lpm4_tbl8s;
	uint32_t lpm6_tbl8s;
	uint32_t max_nexthops;
	uint32_t max_acl_rules;
};

#define ROUTER_NO_DEFAULT UINT32_MAX

struct router {
	struct ep_engine *e;
	struct router_params p;

	/* Read by workers. */
	struct rte_lpm *lpm4;
	struct rte_lpm6 *lpm6_cur;          /**< published one of lpm6[] */
	struct router_nh **nh;              /**< [max_nexthops], never NULL entries */
	struct ep_acl *acl;                 /**< the ACL instance (acl/)*/
	/** Next hop of 0.0.0.0/0 ([0]) and ::/0 ([1]), or ROUTER_NO_DEFAULT:
	 *  rte_lpm/rte_lpm6 take depths from 1, so the default route is one
	 *  word each, stored with release and used on a lookup miss. */
	uint32_t default_nh[2];

	/* Control thread only. */
	struct rte_lpm6 *lpm6[2];
	struct router_nhc *nhc;             /**< [max_nexthops] */
	uint32_t *nh_free;                  /**< stack of free indexes */
	uint32_t n_nh_free;
	struct rte_hash *nh_by_ip;          /**< {family, ip} -> index */
	struct rte_hash *routes;            /**< {family, plen, prefix} -> route value */
	uint32_t n_routes4, n_routes6;
	struct router_nh nh_static[ROUTER_NH_FIRST + 1]; /**< local, glean, "unused" entries */
};

/** Route kinds, stored with each route's next-hop index. */
enum router_route_kind {
	ROUTER_RT_STATIC = 0,       /**< route = ... via ...  / route-add */
	ROUTER_RT_NEIGH,            /**< host route of a neighbour */
	ROUTER_RT_CONNECTED,        /**< a port's subnet */
	ROUTER_RT_LOCAL,            /**< a port's own address */
};

/* ---- tables and control operations (router.c) ---- */
void router_params_default(struct router_params *p);
/** Tables of a router; its ACL instance is named @p acl_name. */
struct router *router_create(struct ep_engine *e, const char *acl_name,
			     const struct router_params *p, struct ep_err *err);
void router_free(struct router *r);
/** The router of this process (set by the pipeline's setup), or NULL. */
extern struct router *router_global;

int router_route_add(struct router *r, const char *prefix, const char *via, struct ep_err *err);
int router_route_del(struct router *r, const char *prefix, struct ep_err *err);
int router_neigh_add(struct router *r, const char *ip, const char *mac, const char *dev,
		     struct ep_err *err);
int router_neigh_del(struct router *r, const char *ip, struct ep_err *err);
/** Visit routes: fn(family, prefix, plen, kind, nh index, arg); stops on non-zero. */
int router_route_each(struct router *r,
		      int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen,
				enum router_route_kind kind, uint32_t nh, void *arg),
		      void *arg);

/* ---- configuration ([router] section; router_config.c) ---- */
int router_load_config(struct router *r, struct ep_cfg *cfg, struct ep_cfg_section *s,
		       struct ep_err *err);
int router_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s,
			      struct router_params *p, struct ep_err *err);

/* ---- stages ---- */

/** Per-worker context shared by the five stages: static port data and the
 *  scratch arrays the burst-wide table calls need. */
struct router_worker {
	struct router *r;
	uint16_t n_ports;
	struct {
		struct rte_ether_addr mac;
		int n_v4, n_v6;
		uint32_t v4[EP_MAX_ADDRS];          /* network order */
		uint8_t v6[EP_MAX_ADDRS][16];
	} port[EP_MAX_PORTS];

	/* parse -> neigh: non-zero when the burst had ARP or ICMPv6 packets */
	uint32_t l2ctl;

	/* acl: the ACL module's filter stage */
	struct ep_acl_filter *acl;

	/* route */
	uint32_t ip4[EP_BURST_MAX];
	uint32_t nh4[EP_BURST_MAX];
	uint16_t pkt4[EP_BURST_MAX];
	uint8_t ip6[EP_BURST_MAX][16];
	int32_t nh6[EP_BURST_MAX];
	uint16_t pkt6[EP_BURST_MAX];
};

struct router_worker *router_worker_create(struct router *r, int socket);
void router_worker_free(struct router_worker *w);

uint16_t router_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** The neigh stage over any burst parsed by ep_parse (the BNG uses it). */
uint16_t router_neigh_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** The same, in the router pipeline right after router_parse_stage: returns
 *  at once when the parse stage saw no ARP and no ICMPv6 in the burst. */
uint16_t router_neigh_after_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next,
					uint16_t n);
/** The ACL module's filter stage on the router's instance. */
uint16_t router_acl_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t router_route_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
uint16_t router_rewrite_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);

/** The stages in pipeline order, for the pipeline's build() and for tests. */
struct router_stage_def { const char *name; ep_stage_fn fn; };
extern const struct router_stage_def router_stages[5];

#endif
