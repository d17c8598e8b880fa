/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP fast path's route sync (xdp_fast_sync.c) against real BPF LPM
 * tries: the maps a port's program would have, created here (bpf()), the
 * router's FIB changed through its API, router_xdp_tick() run as the
 * control thread runs it.  After every sync the tries must hold the FIB's
 * routes and nothing else, whichever way the sync compared them: the
 * first sync after the program is attached (empty tries), a sync by the
 * FIB's change log, a sync by the route list that follows another one
 * (more changes than the log keeps), and a list sync repairing what
 * another writer put in the tries.  Needs CAP_BPF (root): without it the
 * cases say so and check nothing.
 */
#include <errno.h>

#include <bpf/bpf.h>

#include "test_router.h"
#include "xdp_fast.h"
#include "xdp_fast_private.h"

struct want { struct want_route v[4096]; uint32_t n; };

static int
collect(uint8_t family, const uint8_t *prefix, uint8_t plen, enum ep_fib_route_kind kind,
	uint32_t nh, void *arg)
{
	struct want *w = arg;
	struct want_route *r = &w->v[w->n++];

	(void)kind;
	memset(r, 0, sizeof(*r));
	r->key.prefixlen = plen | (family == 6 ? 0x100u : 0);   /* the family, for the test */
	memcpy(r->key.addr, prefix, family == 6 ? 16 : 4);
	r->nh = nh;
	return w->n == RTE_DIM(w->v) ? -1 : 0;
}

/* Whether @p fd (family @p f) holds exactly the FIB's routes of that
 * family with their next hops: every FIB route looked up, every key of
 * the trie counted. */
static bool
trie_is_fib(struct router *r, int fd, int f)
{
	static struct want w;
	struct fwd_lpm6_key key, next, *prev = NULL;
	uint32_t n_fib = 0, n_trie = 0;

	w.n = 0;
	if (ep_fib_route_each(r->fib, collect, &w) != 0)
		return false;
	for (uint32_t i = 0; i < w.n; i++) {
		struct fwd_lpm6_key k = w.v[i].key;
		uint32_t have;

		if ((k.prefixlen >> 8) != (uint32_t)f)
			continue;
		k.prefixlen &= 0xff;
		n_fib++;
		if (bpf_map_lookup_elem(fd, &k, &have) != 0 || have != w.v[i].nh) {
			printf("    route %u/%u: %s in the trie\n", k.addr[0], k.prefixlen,
			       bpf_map_lookup_elem(fd, &k, &have) != 0 ? "missing" : "another next hop");
			return false;
		}
	}
	memset(&next, 0, sizeof(next));
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		n_trie++;
		key = next;
		prev = &key;
	}
	if (n_trie != n_fib)
		printf("    IPv%d: %u keys in the trie, %u routes in the FIB\n", f ? 6 : 4, n_trie,
		       n_fib);
	return n_trie == n_fib;
}

static uint32_t
fib_routes(struct router *r)
{
	static struct want w;

	w.n = 0;
	ep_fib_route_each(r->fib, collect, &w);
	return w.n;
}

/* The router's fast path with both ports' maps as a program's would be,
 * found and empty (a fresh program).  NULL when bpf() is refused. */
static struct router_xdp *
fixture(struct router *r)
{
	struct router_xdp *x = calloc(1, sizeof(*x));
	LIBBPF_OPTS(bpf_map_create_opts, trie, .map_flags = BPF_F_NO_PREALLOC);

	EP_CHECK(x != NULL);
	x->r = r;
	x->n_nh = RTE_MIN(r->fib->p.max_nexthops, (uint32_t)FWD_MAX_NEXTHOPS);
	x->acl_empty = -1;
	for (int p = 0; p < EP_MAX_PORTS; p++) {
		struct xdp_port *xp = &x->port[p];

		xp->fd_cfg = xp->fd_tx = xp->fd_route4 = xp->fd_route6 = xp->fd_nh = -1;
		xp->fd_counters = -1;
		if (p >= r->e->n_ports)
			continue;
		xp->found = true;       /* fast stays false: no program to look for */
		xp->nh = calloc(x->n_nh, sizeof(*xp->nh));
		xp->fd_cfg = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fwd_cfg_map", 4,
					    sizeof(struct fwd_cfg), 1, NULL);
		xp->fd_nh = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fwd_nexthops", 4,
					   sizeof(struct fwd_nh), x->n_nh, NULL);
		xp->fd_route4 = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fwd_route4",
					       sizeof(struct fwd_lpm4_key), 4, 8192, &trie);
		xp->fd_route6 = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fwd_route6",
					       sizeof(struct fwd_lpm6_key), 4, 8192, &trie);
		xp->max_routes[0] = xp->max_routes[1] = 8192;
		if (xp->fd_cfg < 0 || xp->fd_nh < 0 || xp->fd_route4 < 0 || xp->fd_route6 < 0) {
			printf("    bpf() refused (%s): not checked here\n", strerror(errno));
			router_xdp_free(x);
			return NULL;
		}
	}
	return x;
}

static bool
in_sync(struct router_xdp *x)
{
	bool ok = true;

	for (int p = 0; p < x->r->e->n_ports; p++)
		ok = ok && x->port[p].synced && trie_is_fib(x->r, x->port[p].fd_route4, 0) &&
		     trie_is_fib(x->r, x->port[p].fd_route6, 1);
	return ok;
}

/* One tick of the control thread; then every port has synced, @p by
 * ("log" or "compare"), port 0 with @p first route writes and every other
 * port with @p rest, and each port's tries hold the FIB's routes. */
static void
tick_synced(struct router_xdp *x, const char *by, uint64_t first, uint64_t rest)
{
	router_xdp_tick(x, 0);
	for (int p = 0; p < x->r->e->n_ports; p++) {
		EP_CHECK(x->port[p].last_by != NULL && strcmp(x->port[p].last_by, by) == 0);
		EP_CHECK_EQ(x->port[p].last_route_writes, p == 0 ? first : rest);
	}
	EP_CHECK(in_sync(x));
}

/* More route changes than the change log keeps, the table the same at the
 * end, then a tick: the sync cannot follow the log and compares the route
 * list (tick_synced(), by "compare"). */
static void
compare_synced(struct router_xdp *x, uint64_t first, uint64_t rest)
{
	struct ep_err err;

	for (uint32_t i = 0; i <= EP_FIB_CHANGES / 2; i++) {
		EP_CHECK(ep_fib_route_add(x->r->fib, "198.18.50.0/24", "198.18.1.2", &err) == 0);
		EP_CHECK(ep_fib_route_del(x->r->fib, "198.18.50.0/24", &err) == 0);
	}
	tick_synced(x, "compare", first, rest);
}

/* The fixture after its first sync: the tries were empty, so every
 * route of the FIB was written, by the compare.  NULL without bpf(). */
static struct router_xdp *
attached(struct router *r)
{
	struct router_xdp *x = fixture(r);

	if (x == NULL)
		return NULL;
	EP_CHECK(fib_routes(r) > 4);
	tick_synced(x, "compare", fib_routes(r), fib_routes(r));
	return x;
}

EP_TEST(xdp_sync_first_sync_after_attach_writes_every_route_then_the_log_only_changes)
{
	struct router *r = tr_router();
	struct router_xdp *x = attached(r);
	struct ep_err err;

	if (x == NULL)
		goto out;
	EP_CHECK(ep_fib_route_add(r->fib, "198.18.40.0/24", "198.18.1.2", &err) == 0);
	EP_CHECK(ep_fib_route_add(r->fib, "2001:db8:40::/48", "2001:db8:0:2::2", &err) == 0);
	tick_synced(x, "log", 2, 2);
	EP_CHECK(ep_fib_route_del(r->fib, "198.18.40.0/24", &err) == 0);
	tick_synced(x, "log", 1, 1);
	router_xdp_free(x);
out:
	router_free(r);
}

EP_TEST(xdp_sync_a_list_sync_after_a_list_sync_writes_only_what_changed)
{
	struct router *r = tr_router();
	struct router_xdp *x = attached(r);
	struct ep_err err;

	if (x == NULL)
		goto out;
	/* A list sync right after the first: one route more, one write. */
	EP_CHECK(ep_fib_route_add(r->fib, "198.18.41.0/24", "198.18.1.2", &err) == 0);
	compare_synced(x, 1, 1);
	/* And another: one route fewer, one delete. */
	EP_CHECK(ep_fib_route_del(r->fib, "198.18.41.0/24", &err) == 0);
	compare_synced(x, 1, 1);
	/* And one with nothing changed: no write. */
	compare_synced(x, 0, 0);
	router_xdp_free(x);
out:
	router_free(r);
}

EP_TEST(xdp_sync_a_list_sync_removes_foreign_entries_and_rewrites_changed_ones)
{
	struct router *r = tr_router();
	struct router_xdp *x = attached(r);
	struct fwd_lpm4_key k4;
	struct fwd_lpm6_key k6;
	uint32_t bad = 9, have;
	struct ep_err err;

	if (x == NULL)
		goto out;
	EP_CHECK(ep_fib_route_add(r->fib, "198.18.42.0/24", "198.18.1.2", &err) == 0);
	tick_synced(x, "log", 1, 1);
	/* Another writer: a route the FIB does not have in each trie of port
	 * 0, and the FIB's 198.18.42.0/24 pointed elsewhere. */
	memset(&k4, 0, sizeof(k4));
	memset(&k6, 0, sizeof(k6));
	k4.prefixlen = 32;
	k4.addr = htonl(tp_ip4("198.19.7.7"));
	k6.prefixlen = 128;
	tp_ip6(k6.addr, "2001:db8:77::7");
	EP_CHECK(bpf_map_update_elem(x->port[0].fd_route4, &k4, &bad, BPF_ANY) == 0);
	EP_CHECK(bpf_map_update_elem(x->port[0].fd_route6, &k6, &bad, BPF_ANY) == 0);
	k4.prefixlen = 24;
	k4.addr = htonl(tp_ip4("198.18.42.0"));
	EP_CHECK(bpf_map_update_elem(x->port[0].fd_route4, &k4, &bad, BPF_ANY) == 0);
	EP_CHECK(!in_sync(x));

	/* Port 0: one rewrite, two deletes; port 1 had nothing to repair. */
	compare_synced(x, 3, 0);
	EP_CHECK(bpf_map_lookup_elem(x->port[0].fd_route4, &k4, &have) == 0 && have != bad);
	router_xdp_free(x);
out:
	router_free(r);
}
