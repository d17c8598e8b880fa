/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The `router` pipeline: an IPv4/IPv6 router (RFC 1812, RFC 8200) on the
 * shared modules, five stages per worker.
 *
 *   rx -> parse -> neigh -> acl -> route -> rewrite -> tx(next-hop port)
 *                   |        |       |         |
 *                   |        |       |         +-> TTL / hop limit expired: ICMP time
 *                   |        |       |             exceeded; larger than the out port's
 *                   |        |       |             MTU: fragmented (IPv4) or ICMP
 *                   |        |       |             fragmentation needed / packet too big
 *                   |        |       +-> ICMP echo reply; no route: ICMP unreachable;
 *                   |        |           unresolved: ARP request / NS
 *                   |        +-> denied (optionally ICMP administratively prohibited)
 *                   +-> ARP reply / NA, tx(in_port)
 *
 * Tables live in the modules, one instance each, both named "router":
 *   routes, next hops, neighbours   fib/ (ep_fib.h says how they reach workers)
 *   ACL                             acl/ (double-buffered rte_acl sets)
 *   port MACs, addresses, MTUs      copied into each worker's FIB context
 *
 * Their control operations are the modules' (ep_fib_route_add,
 * ep_acl_insert...), reached from the config file and the control socket
 * (route-*, neigh-*, acl-* with table=router, or no table when the process
 * has one FIB / one ACL).
 */
#ifndef EP_ROUTER_H
#define EP_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/ep_acl_node.h"
#include "fib/ep_fib_burst_words.h"
#include "fib/ep_fib_node.h"
#include "ep_engine.h"
#include "ep_err.h"
#include "ep_stage.h"

/** Sizing, from [router]. */
struct router_params {
	struct ep_fib_params fib;
	uint32_t max_acl_rules;
};

/** One router's instances. */
struct router {
	struct ep_engine *e;
	struct ep_fib *fib;
	struct ep_acl *acl;
	bool acl_icmp;          /**< answer denied packets with ICMP unreachable (RFC 1812 5.2.7.1) */
	struct router_xdp *xdp; /**< the XDP fast path's control side (xdp_fast.h), or NULL: off */
};

void router_params_default(struct router_params *p);
/** A router's FIB and ACL, both named @p name. */
struct router *router_create(struct ep_engine *e, const char *name,
			     const struct router_params *p, struct ep_err *err);
void router_free(struct router *r);

/* ---- configuration ([router] section; router_pipeline.c) ---- */
int router_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s,
			      struct router_params *p, struct ep_err *err);
/** Neighbours, routes, route_file, the ACL keys and acl_icmp of [router]. */
int router_load_config(struct router *r, struct ep_cfg *cfg, struct ep_cfg_section *s,
		       struct ep_err *err);

/* ---- stages ---- */

/** Per-worker context shared by the five stages. */
struct router_worker {
	struct router *r;
	struct ep_fib_worker *fw;       /**< routes, ARP/ND, ICMP, port data */
	struct ep_acl_filter *acl;
	/* parse -> neigh: non-zero when the burst had ARP or ICMPv6 packets */
	uint32_t l2ctl;
	/** parse bursts from rx eight frames at a time (AVX-512, where the
	 *  CPU has it; tests clear it to run the scalar path) */
	bool parse_x8;
	/** the x8 parse's loads as lines, not gathers (router_parse_x8_lines:
	 *  timed on this CPU) */
	bool parse_x8_lines;
	/* parse -> route: every packet's tbl24 word, read by the x8 parse for
	 * a burst it passed on whole (ep_fib_x8_words), sources and
	 * destinations proved not martian; taken by the route stage's next
	 * call if it is on that burst (ep_fib_burst_words.h). */
	struct ep_fib_burst_words route_words;
};

/** Whether the parse stage's eight-frame path runs on this CPU. */
bool router_parse_x8_usable(void);
/** Whether its loads run faster here as lines than as gathers
 *  (ep_parse_x8_lines). */
bool router_parse_x8_lines(void);

/** A worker context; @p w sends what the stages generate (NULL in tests:
 *  generated packets are counted and freed). */
struct router_worker *router_worker_create(struct router *r, struct ep_worker *w, int socket);
void router_worker_free(struct router_worker *w);

uint16_t router_parse_stage(void *ctx, struct rte_mbuf **pkts, uint16_t *next, uint16_t n);
/** The FIB's ARP/ND responder; returns at once when the parse stage saw no
 *  ARP and no ICMPv6 in the burst. */
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
