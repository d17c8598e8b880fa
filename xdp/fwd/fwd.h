/* SPDX-License-Identifier: GPL-2.0 */
/**
 * @file
 * Types shared by the router's XDP fast path (fwd.bpf.c) and the control
 * path that writes its maps (dataplane/router/xdp_fast.c).  One copy of
 * the program, and so one set of these maps, per port: net_af_xdp loads
 * the object given by its xdp_prog devarg once for each port it opens.
 */
#ifndef EDGEPLANE_FWD_H
#define EDGEPLANE_FWD_H

#include <linux/types.h>

#define FWD_MAX_PORTS 32        /* devmap slots: the engine's logical ports */
#define FWD_MAX_QUEUES 64       /* xsks_map slots: the PMD's rx queues */
#define FWD_MAX_ROUTES4 131072  /* LPM trie entries, per family */
#define FWD_MAX_ROUTES6 131072
#define FWD_MAX_NEXTHOPS 65536  /* next-hop slots (the FIB's indexes) */

#define FWD_COUNTER(id, name, desc) FWD_##id,
enum fwd_counter {
#include "fwd_reasons.def"
	FWD_MAX
};
#undef FWD_COUNTER

/* fwd_cfg_map[0]. */
struct fwd_cfg {
	__u8 mac[6];            /* the port's own MAC: the only unicast destination taken */
	__u8 enabled;           /* 0: every frame to the socket (punt_disabled) */
	__u8 acl_empty;         /* 0: the router filters; every frame to the socket */
};

/* fwd_route4 key: the LPM trie's prefix length, then the address. */
struct fwd_lpm4_key {
	__u32 prefixlen;
	__u32 addr;             /* network order */
};

/* fwd_route6 key. */
struct fwd_lpm6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* fwd_nexthops[i], i the FIB's next-hop index.  Written only for a next hop the
 * fast path may forward to: resolved (not stale), on a port in the devmap. */
struct fwd_nh {
	__u8 eth[12];           /* destination MAC, source MAC: the frame's first 12 bytes */
	__u16 port;             /* devmap key (the engine's logical port) */
	__u16 mtu;              /* egress IP MTU */
	__u8 valid;
	__u8 pad[3];
};

#endif
