/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's XDP fast path: the sync of each port's maps with the
 * router's FIB and ACL on an engine tick, and its retries (xdp_fast.h
 * says what and how).  libbpf's syscall wrappers do the map work: one
 * bpf() call per entry written, read or deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "router.h"
#include "xdp_fast.h"
#include "xdp_fast_private.h"

static int
collect_route(uint8_t family, const uint8_t *prefix, uint8_t plen, enum ep_fib_route_kind kind,
	      uint32_t nh, void *arg)
{
	struct route_set *rs = &((struct route_sets *)arg)->fam[family == 6];

	if (rs->n == rs->cap) {
		uint32_t cap = rs->cap ? rs->cap * 2 : 256;
		struct want_route *v = realloc(rs->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		rs->v = v;
		rs->cap = cap;
	}
	memset(&rs->v[rs->n], 0, sizeof(rs->v[rs->n]));
	rs->v[rs->n].key.prefixlen = plen;
	memcpy(rs->v[rs->n].key.addr, prefix, family == 6 ? 16 : 4);
	rs->v[rs->n++].nh = nh;
	return 0;
}

static int
cmp_route(const void *a, const void *b)
{
	return memcmp(&((const struct want_route *)a)->key, &((const struct want_route *)b)->key,
		      sizeof(struct fwd_lpm6_key));
}

/* What fwd_nexthops[idx] should hold: a forwardable next hop (MACs and
 * port known, not stale: a stale one is re-asked by the worker that meets
 * it, so its frames must reach a worker). */
static struct fwd_nh
want_nh(const struct ep_fib *fib, uint32_t idx)
{
	struct fwd_nh v;
	const struct ep_fib_nh *nh = fib->nh[idx];

	memset(&v, 0, sizeof(v));
	if (idx < EP_FIB_NH_FIRST || nh->kind != EP_FIB_NH_FORWARD)
		return v;
	memcpy(v.eth, nh->eth, sizeof(v.eth));
	v.port = nh->port;
	v.mtu = nh->mtu;
	v.valid = 1;
	return v;
}

static int
write_cfg(struct router_xdp *x, struct xdp_port *xp, int p, bool enabled, bool acl_empty)
{
	struct fwd_cfg c;
	uint32_t zero = 0;

	memset(&c, 0, sizeof(c));
	memcpy(c.mac, x->r->e->ports[p].mac.addr_bytes, 6);
	c.enabled = enabled;
	c.acl_empty = acl_empty;
	return bpf_map_update_elem(xp->fd_cfg, &zero, &c, BPF_ANY);
}

/* A failed write: its text for the port and the report. */
static int
fail(struct router_xdp *x, int p, const char *what)
{
	struct xdp_port *xp = &x->port[p];

	snprintf(xp->last_error, sizeof(xp->last_error), "%s: %s", what, strerror(errno));
	snprintf(x->last_error, sizeof(x->last_error), "port %s: %s", x->r->e->ports[p].name,
		 xp->last_error);
	return -1;
}

/* A route write of family @p f failed: what, with the table's size and
 * the trie's (a full trie says ENOSPC). */
static int
fail_routes(struct router_xdp *x, int p, int f, const char *what)
{
	const struct ep_fib *fib = x->r->fib;
	char buf[128];

	snprintf(buf, sizeof(buf), "IPv%d %s (%u routes in the FIB, fwd_route%d holds at most %u)",
		 f ? 6 : 4, what, f ? fib->n_routes6 : fib->n_routes4, f ? 6 : 4,
		 x->port[p].max_routes[f]);
	return fail(x, p, buf);
}

/* One route into its trie, counted. */
static int
write_route(int fd, const struct want_route *r, uint64_t *writes)
{
	(*writes)++;
	return bpf_map_update_elem(fd, &r->key, &r->nh, BPF_ANY) != 0 ? -1 : 0;
}

/* Routes of one family into @p fd: added or changed ones.  Into a trie
 * that held no key (@p empty: a fresh program's), every route is written
 * without its lookup. */
static int
routes_add(int fd, const struct route_set *rs, bool empty, uint64_t *writes)
{
	for (uint32_t i = 0; i < rs->n; i++) {
		uint32_t have;

		if (!(!empty && bpf_map_lookup_elem(fd, &rs->v[i].key, &have) == 0 &&
		      have == rs->v[i].nh) &&
		    write_route(fd, &rs->v[i], writes) != 0)
			return -1;
	}
	return 0;
}

/* Routes of one family in @p fd that @p rs no longer has: deleted.  The
 * trie's keys are collected first (deleting while walking would skip). */
static int
routes_remove(int fd, const struct route_set *rs, size_t key_len, uint64_t *writes)
{
	struct want_route w, *gone = NULL;
	struct fwd_lpm6_key key, next;
	uint32_t n_gone = 0, cap_gone = 0;
	void *prev = NULL;
	int rc = 0;

	memset(&next, 0, sizeof(next));
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		memset(&w, 0, sizeof(w));
		memcpy(&w.key, &next, key_len);
		if (bsearch(&w, rs->v, rs->n, sizeof(w), cmp_route) == NULL) {
			if (n_gone == cap_gone) {
				void *g = realloc(gone, (cap_gone = cap_gone ? cap_gone * 2 : 64) *
							 sizeof(*gone));
				if (g == NULL) {
					free(gone);
					return -1;
				}
				gone = g;
			}
			gone[n_gone++] = w;
		}
		key = next;
		prev = &key;
	}
	for (uint32_t i = 0; i < n_gone && rc == 0; i++, (*writes)++)
		if (bpf_map_delete_elem(fd, &gone[i].key) != 0 && errno != ENOENT)
			rc = -1;
	free(gone);
	return rc;
}

/* One pass over the FIB's change log: the routes present now (@p present)
 * written, or those gone deleted. */
struct change_pass {
	const struct xdp_port *xp;
	bool present;
	int family;             /* of the write that failed: 0 IPv4, 1 IPv6 */
	uint64_t *writes;
};

static int
apply_change(uint8_t family, const uint8_t *prefix, uint8_t plen, bool present,
	     enum ep_fib_route_kind kind, uint32_t nh, void *arg)
{
	struct change_pass *c = arg;
	int fd = family == 6 ? c->xp->fd_route6 : c->xp->fd_route4;
	struct fwd_lpm6_key key;

	(void)kind;
	if (present != c->present)
		return 0;
	memset(&key, 0, sizeof(key));   /* IPv4's fwd_lpm4_key is its first 8 bytes */
	key.prefixlen = plen;
	memcpy(key.addr, prefix, family == 6 ? 16 : 4);
	c->family = family == 6;
	(*c->writes)++;
	if (present)
		return bpf_map_update_elem(fd, &key, &nh, BPF_ANY) != 0 ? -1 : 0;
	return bpf_map_delete_elem(fd, &key) != 0 && errno != ENOENT ? -1 : 0;
}

/* The routes changed since the port's last sync, by the FIB's change
 * log: one bpf() call per change, nothing per route unchanged (no walk,
 * no sort). */
static int
routes_by_log(struct router_xdp *x, int p, uint64_t *w)
{
	struct xdp_port *xp = &x->port[p];
	struct change_pass c = { .xp = xp, .present = true, .writes = w };

	xp->last_by = "log";
	if (ep_fib_route_changes(x->r->fib, xp->route_seq, apply_change, &c) != 0)
		return fail_routes(x, p, c.family, "route");
	c.present = false;
	if (ep_fib_route_changes(x->r->fib, xp->route_seq, apply_change, &c) != 0)
		return fail_routes(x, p, c.family, "route removal");
	return 0;
}

/* The routes of @p rs (the FIB's, sorted) against the tries themselves:
 * a lookup per route, a write per route missing or changed, then a walk
 * of the tries' keys and a delete per key the FIB lacks.  Whatever wrote
 * the tries last (a fresh program's are empty, a failed attempt left them
 * half written, someone else may have written them), they end up holding
 * the FIB's routes alone.  A trie found empty (one bpf() call: the first
 * sync after attach) needs neither the lookups nor the walk. */
static int
routes_by_compare(struct router_xdp *x, int p, const struct route_sets *rs, uint64_t *w)
{
	struct xdp_port *xp = &x->port[p];
	bool empty[2];

	xp->last_by = "compare";
	for (int f = 0; f < 2; f++) {
		int fd = f ? xp->fd_route6 : xp->fd_route4;
		struct fwd_lpm6_key first;

		empty[f] = bpf_map_get_next_key(fd, NULL, &first) != 0 && errno == ENOENT;
		if (routes_add(fd, &rs->fam[f], empty[f], w) != 0)
			return fail_routes(x, p, f, "route");
	}
	for (int f = 0; f < 2; f++)
		if (!empty[f] &&
		    routes_remove(f ? xp->fd_route6 : xp->fd_route4, &rs->fam[f],
				  f ? sizeof(struct fwd_lpm6_key) : sizeof(struct fwd_lpm4_key),
				  w) != 0)
			return fail_routes(x, p, f, "route removal");
	return 0;
}

/* One port's maps to the FIB: its routes by the change log (@p rs NULL)
 * or by @p rs (sorted), and its next hops. */
static int
sync_port(struct router_xdp *x, int p, const struct route_sets *rs, bool acl_empty)
{
	struct xdp_port *xp = &x->port[p];
	const struct ep_fib *fib = x->r->fib;
	uint64_t *w = &xp->last_route_writes;

	*w = 0;

	/* Rules appeared: nothing is forwarded past them from here on (a
	 * failing port stays disabled until its last write). */
	if (!acl_empty && write_cfg(x, xp, p, !xp->failing, false) != 0)
		return fail(x, p, "config");
	for (int q = 0; q < x->r->e->n_ports; q++)
		if (x->port[q].fast) {
			uint32_t k = (uint32_t)q, ifx = (uint32_t)x->port[q].ifindex;

			if (bpf_map_update_elem(xp->fd_tx, &k, &ifx, BPF_ANY) != 0)
				return fail(x, p, "devmap");
		}
	/* Next hops before the routes that use them. */
	for (uint32_t i = 0; i < x->n_nh; i++) {
		struct fwd_nh v = want_nh(fib, i);

		if (v.valid && memcmp(&v, &xp->nh[i], sizeof(v)) != 0) {
			if (bpf_map_update_elem(xp->fd_nh, &i, &v, BPF_ANY) != 0)
				return fail(x, p, "next hop");
			xp->nh[i] = v;
		}
	}
	/* Routes added or changed, then those removed. */
	if (rs == NULL ? routes_by_log(x, p, w) != 0 : routes_by_compare(x, p, rs, w) != 0)
		return -1;
	/* Then the next hops no longer forwardable. */
	for (uint32_t i = 0; i < x->n_nh; i++) {
		struct fwd_nh v = want_nh(fib, i);

		if (!v.valid && xp->nh[i].valid) {
			if (bpf_map_update_elem(xp->fd_nh, &i, &v, BPF_ANY) != 0)
				return fail(x, p, "next hop removal");
			xp->nh[i] = v;
		}
	}
	if (write_cfg(x, xp, p, true, acl_empty) != 0)
		return fail(x, p, "config");
	return 0;
}

/* The port's attempt failed: every frame to the full pipeline (the
 * config, a one-entry array that a write does not fail on for want of
 * room), and the next attempt after the backoff.  Said once when the port
 * leaves its synced state, not at every retry. */
static void
port_failed(struct router_xdp *x, int p, bool acl_empty, uint64_t now)
{
	struct xdp_port *xp = &x->port[p];
	const char *name = x->r->e->ports[p].name;

	if (write_cfg(x, xp, p, false, acl_empty) != 0)
		fail(x, p, "config (disabling)");
	x->sync_errors++;
	xp->failures++;
	xp->failed_in_row++;
	xp->retry_ms = xp->failing ? RTE_MIN(xp->retry_ms * 2, (uint32_t)RETRY_MAX_MS) :
				     RETRY_FIRST_MS;
	xp->retry_at = now + rte_get_tsc_hz() / 1000 * xp->retry_ms;
	if (!xp->failing) {
		printf("router: port %s: XDP fast path off, every frame to the full pipeline: %s; "
		       "retrying from %d ms up to every %d ms\n", name, xp->last_error,
		       RETRY_FIRST_MS, RETRY_MAX_MS);
		fflush(stdout);
	}
	xp->failing = true;
}

static void
port_succeeded(struct router_xdp *x, int p)
{
	struct xdp_port *xp = &x->port[p];

	if (xp->failing) {
		printf("router: port %s: XDP fast path in sync again after %" PRIu64
		       " failed attempts\n", x->r->e->ports[p].name, xp->failed_in_row);
		fflush(stdout);
	}
	xp->failing = false;
	xp->failed_in_row = 0;
	xp->retry_ms = 0;
}

/* Whether the port follows the FIB by its change log: in sync with what
 * the FIB was at xp->route_seq, and every change since still logged.
 * Otherwise (a fresh program, a failed attempt, more changes than the log
 * keeps) the routes are compared whole. */
static bool
by_log(const struct router_xdp *x, const struct xdp_port *xp)
{
	return xp->synced && ep_fib_route_changes_kept(x->r->fib, xp->route_seq);
}

/* Sync the ports of @p mask whose maps are open. */
static void
sync_ports(struct router_xdp *x, uint64_t mask, bool acl_empty, uint64_t now)
{
	uint64_t t0 = rte_rdtsc(), seq = x->r->fib->route_seq;
	struct route_sets rs;
	bool walk = false, ok = true;

	for (int p = 0; p < x->r->e->n_ports; p++)
		if (x->port[p].found && (mask >> p & 1) && !by_log(x, &x->port[p]))
			walk = true;
	memset(&rs, 0, sizeof(rs));
	if (walk) {
		ok = ep_fib_route_each(x->r->fib, collect_route, &rs) == 0;
		if (ok)
			for (int f = 0; f < 2; f++)
				qsort(rs.fam[f].v, rs.fam[f].n, sizeof(*rs.fam[f].v), cmp_route);
	}
	x->last_walk_cycles = rte_rdtsc() - t0;
	for (int p = 0; p < x->r->e->n_ports; p++) {
		struct xdp_port *xp = &x->port[p];
		bool log = by_log(x, xp);

		if (!xp->found || !(mask >> p & 1))
			continue;
		xp->attempts++;
		if (!log && !ok)
			snprintf(xp->last_error, sizeof(xp->last_error),
				 "out of memory for the route list");
		xp->synced = (log || ok) && sync_port(x, p, log ? NULL : &rs, acl_empty) == 0;
		if (xp->synced) {
			xp->route_seq = seq;
			port_succeeded(x, p);
		} else {
			port_failed(x, p, acl_empty, now);
		}
	}
	free(rs.fam[0].v);
	free(rs.fam[1].v);
	x->syncs++;
	x->last_sync_cycles = rte_rdtsc() - t0;
}

void
router_xdp_tick(void *arg, uint64_t now)
{
	struct router_xdp *x = arg;
	const struct ep_acl *acl = x->r->acl;
	int acl_empty = acl->n_rules == 0 && !acl->default_deny;
	uint64_t due = 0;
	bool fresh = false;

	for (int p = 0; p < x->r->e->n_ports; p++) {
		struct xdp_port *xp = &x->port[p];

		if (xp->fast && !xp->found && xdp_port_find(x, xp) == 0)
			fresh = true;
		if (xp->found && xp->failing && now >= xp->retry_at)
			due |= UINT64_C(1) << p;
	}
	if (fresh || x->gen != x->r->fib->gen || x->acl_empty != acl_empty) {
		/* A change: every port now, a failing one too. */
		x->gen = x->r->fib->gen;
		x->acl_empty = acl_empty;
		sync_ports(x, UINT64_MAX, acl_empty, now);
	} else if (due != 0) {
		/* No change, but a failed write may succeed now. */
		x->sync_retries++;
		sync_ports(x, due, acl_empty, now);
	}
}
