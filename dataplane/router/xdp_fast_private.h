/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's XDP fast path, control side: what xdp_fast.c (the
 * configuration, the ports' maps, the report) and xdp_fast_sync.c (the
 * sync of the maps with the FIB and the ACL) share.  Private to them.
 */
#ifndef EP_ROUTER_XDP_FAST_PRIVATE_H
#define EP_ROUTER_XDP_FAST_PRIVATE_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "ep_engine.h"
#include "../../xdp/fwd/fwd.h"

enum xdp_mode { XDP_FAST_OFF, XDP_FAST_AUTO, XDP_FAST_ON };

/* [router] fast_path: which program the maps belong to.  XDP: fwd.bpf.c,
 * attached by net_af_xdp to the port's own device; TC: tcfwd.bpf.c,
 * loaded and attached by us to the port's wire device (xdp_fast_tc.c). */
enum fast_kind { FAST_XDP, FAST_TC };

struct bpf_object;

/* A route as the LPM tries key it: prefix length, then the address
 * (fwd_lpm4_key / fwd_lpm6_key; IPv4 uses the first 4 bytes). */
struct want_route { struct fwd_lpm6_key key; uint32_t nh; };

struct route_set { struct want_route *v; uint32_t n, cap; };

/* IPv4 and IPv6 routes, each family sorted apart. */
struct route_sets { struct route_set fam[2]; };

/* A port whose sync failed is tried again on a later tick, the wait
 * doubling from the first to the last (a full map, ENOMEM: writes that
 * may succeed later without any table change). */
#define RETRY_FIRST_MS 10
#define RETRY_MAX_MS 1000

/* One port's attached copy of the program and its maps. */
struct xdp_port {
	bool fast;              /* a router port opened with the program */
	bool found;             /* its maps are open */
	bool synced;            /* its maps hold the last sync (else disabled) */
	bool failing;           /* the last attempt failed: the config says punt all */
	uint32_t retry_ms;      /* the wait before the next attempt while failing */
	uint64_t retry_at;      /* TSC of the next attempt while failing */
	uint64_t attempts, failures, failed_in_row;
	uint32_t max_routes[2]; /* the tries' max_entries, IPv4 and IPv6 */
	uint64_t last_route_writes; /* route updates and deletes of its last attempt */
	uint64_t route_seq;     /* the FIB's route_seq its tries hold, when synced */
	const char *last_by;    /* how its last attempt compared the routes */
	char last_error[160];   /* the last failure's text ("" when none yet) */
	int ifindex;            /* XDP: the port's device; tc: its wire device */
	uint32_t prog_id;
	/* fast_path = tc: the wire and punt devices ([port] fast_path_wire,
	 * fast_path_punt), this port's copy of tcfwd.o, and which clsact
	 * hooks we created (removed again on stop). */
	char wire[IF_NAMESIZE], punt[IF_NAMESIZE];
	int punt_ifindex;
	struct bpf_object *obj;
	bool tc_wire_attached, tc_punt_attached, tc_wire_hook, tc_punt_hook;
	int fd_cfg, fd_tx, fd_route4, fd_route6, fd_nh, fd_counters;
	struct fwd_nh *nh;      /* what fwd_nexthops holds, [n_nh] */
};

struct router_xdp {
	struct router *r;
	enum fast_kind kind;
	enum xdp_mode mode;
	const char *tc_prog_name; /* tc: the forwarding program attached on the wires */
	char prog[PATH_MAX];
	uint32_t n_nh;          /* next-hop slots mirrored: min(max_nexthops, FWD_MAX_NEXTHOPS) */
	uint64_t gen;           /* ep_fib.gen at the last sync */
	int acl_empty;          /* at the last sync; -1: never synced */
	bool warned_capacity;   /* max_routes4/6 above the tries' size, said */
	uint64_t syncs, sync_errors, sync_retries;
	/* The last sync's cost on the control thread, TSC cycles: the FIB's
	 * walk and sort, and the whole (the ports' compares and writes too). */
	uint64_t last_walk_cycles, last_sync_cycles;
	char last_error[192];
	int ncpu;
	struct xdp_port port[EP_MAX_PORTS];
};

/* The program attached to the port's ifindex, if it is ours: its maps by
 * name (xdp_fast.c).  0 when found, -1 when not (yet). */
int xdp_port_find(struct router_xdp *x, struct xdp_port *xp);

/* Shared by both kinds (xdp_fast.c): the capacity warning, said once. */
void xdp_warn_capacity(struct router_xdp *x, const struct xdp_port *xp);

/* fast_path = tc (xdp_fast_tc.c).  The [port] keys of every port: the
 * wire and punt devices when @p kind is FAST_TC and @p polled has the
 * port (required then), an error when given otherwise. */
int tc_ports_config(struct ep_engine *e, enum fast_kind kind, uint32_t polled,
		    struct router_xdp *x, struct ep_err *err);
/* Load one copy of @p x->prog per tc port, point its punt and wire maps,
 * attach it (replacing what a process that died left) with every frame
 * punted until the first sync. */
int tc_attach(struct router_xdp *x, struct ep_err *err);
/* The port's maps from its loaded object (the tc counterpart of finding
 * them through the attached XDP program). */
int tc_port_find(struct router_xdp *x, struct xdp_port *xp);
/* Detach and unload (router_xdp_free). */
void tc_detach(struct xdp_port *xp);

#endif
