/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The router's XDP fast path on net_af_xdp ports, control side: the
 * xdp_prog devarg the engine adds when it opens a router port, and the
 * sync that writes the attached programs' maps from the router's FIB and
 * ACL.  The program is xdp/fwd/fwd.bpf.c;
 * docs/benchmarks/rfc2544-router-fast-paths.md, "The XDP fast path", has
 * the design and figures.
 *
 *   [router]
 *   xdp_fast_path = auto         # on | off; auto: on when every port the
 *                                # router's workers poll is net_af_xdp
 *   xdp_fast_path_prog = <path>  # default: ../xdp/fwd.o from the binary
 *   fast_path = xdp              # tc: tcfwd.bpf.c on the ports' wire devices
 *                                # (xdp_fast_tc.c), the same maps and sync;
 *                                # off: none
 *
 * How the maps follow the tables (control thread only; the workers never
 * touch them): an engine tick compares the FIB's generation (ep_fib.gen)
 * and the ACL's emptiness with what it wrote last, and on a change brings
 * every port's copy to the tables (the routes by the FIB's change log
 * since the port's last sync, ep_fib_route_changes: one bpf() call per
 * route changed and no walk of the table; a fresh program, a failed
 * attempt or a log overrun compare the whole table instead), in an order
 * that never lets the program
 * forward on a half-written state: the config (punt everything) first
 * when the ACL gained rules; next hops that became forwardable; routes
 * added or changed; routes removed; next hops no longer forwardable; the
 * config last.  A write that fails (a full map, ENOMEM) leaves that
 * port's copy disabled (the config says punt all: every frame to the full
 * pipeline), and the port is tried again on later ticks, the wait doubling
 * from 10 ms to 1 s, or at once on the next change; each attempt and
 * failure is counted, the last failure's text kept, and the log says it
 * once when the port leaves its synced state and once when it is back.
 * The window between a control command and the sync is one control-loop
 * turn (the tick runs after each command is handled, at least every
 * 20 ms).
 *
 * The maps are found through the port's ifindex (the attached program's
 * id, its map ids, each map's name), not by pinning: `ip netns exec`
 * hides /sys/fs/bpf, and the PMD pins nothing.
 */
#ifndef EP_ROUTER_XDP_FAST_H
#define EP_ROUTER_XDP_FAST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ep_engine.h"
#include "ep_err.h"

struct router;
struct router_xdp;

/** ep_pipeline_type.port_devargs of the router: ",xdp_prog=<object>" on a
 *  net_af_xdp port when the fast path is on. */
int router_xdp_port_devargs(struct ep_engine *e, const struct ep_port *p, char *buf, size_t len,
			    struct ep_err *err);

/** From [router] at setup: NULL and no error when the fast path is off
 *  (then @p r runs without it); NULL with @p err on a bad key.  @p polled:
 *  a bit per port the router's workers poll. */
struct router_xdp *router_xdp_create(struct router *r, uint32_t polled, struct ep_err *err);
void router_xdp_free(struct router_xdp *x);

/** Find the ports' programs not found yet and sync the maps if the FIB or
 *  the ACL changed since the last sync (an engine tick). */
void router_xdp_tick(void *arg, uint64_t now);

/** The `xdp-fast` report: mode, ports, sync state, counters by name (the
 *  one list, xdp/fwd/fwd_reasons.def), summed over ports and CPUs and per
 *  port. */
void router_xdp_json(struct router_xdp *x, json_t *out);

#endif
