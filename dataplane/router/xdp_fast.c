/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's XDP fast path, control side (xdp_fast.h says what and
 * how).  libbpf's syscall wrappers do the map work: one bpf() call per
 * entry written, read or deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "router.h"
#include "xdp_fast.h"
#include "../../xdp/fwd/fwd.h"

/* The counters' names, from the one list (xdp/fwd/fwd_reasons.def). */
#define FWD_COUNTER(id, name, desc) name,
static const char *const fwd_counter_name[FWD_MAX] = {
#include "../../xdp/fwd/fwd_reasons.def"
};
#undef FWD_COUNTER

#define FWD_PROG_NAME "xdp_router_fwd"   /* the SEC("xdp") function: what we write into */

enum xdp_mode { XDP_FAST_OFF, XDP_FAST_AUTO, XDP_FAST_ON };
static const char *const mode_name[] = { "off", "auto", "on" };

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
	int ifindex;
	uint32_t prog_id;
	int fd_cfg, fd_tx, fd_route4, fd_route6, fd_nh, fd_counters;
	struct fwd_nh *nh;      /* what fwd_nexthops holds, [n_nh] */
	/* What its tries hold when `exact` (a fresh program's are empty;
	 * after a failed write they are compared with the FIB instead). */
	struct route_sets last;
	bool exact;
};

struct router_xdp {
	struct router *r;
	enum xdp_mode mode;
	char prog[PATH_MAX];
	uint32_t n_nh;          /* next-hop slots mirrored: min(max_nexthops, FWD_MAX_NEXTHOPS) */
	uint64_t gen;           /* ep_fib.gen at the last sync */
	int acl_empty;          /* at the last sync; -1: never synced */
	bool warned_capacity;   /* max_routes4/6 above the tries' size, said */
	uint64_t syncs, sync_errors, sync_retries;
	/* The last sync's cost on the control thread, TSC cycles: the FIB's
	 * walk and sort, and the whole (the ports' diffs and writes too). */
	uint64_t last_walk_cycles, last_sync_cycles;
	char last_error[192];
	int ncpu;
	struct xdp_port port[EP_MAX_PORTS];
};

/* ---- configuration ---- */

static int
parse_mode(struct ep_cfg *cfg, struct ep_cfg_section *s, enum xdp_mode *m, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = s != NULL ? ep_cfg_get(cfg, s, "xdp_fast_path", err) : NULL;

	*m = XDP_FAST_AUTO;
	if (kv == NULL)
		return 0;
	for (size_t i = 0; i < RTE_DIM(mode_name); i++)
		if (strcmp(kv->val, mode_name[i]) == 0) {
			*m = (enum xdp_mode)i;
			return 0;
		}
	return ep_cfg_error(cfg, kv, err, "'%s' is not auto, on or off", kv->val);
}

/* The object: xdp_fast_path_prog, or ../xdp/fwd.o from the binary
 * (build/dp/edgeplane-dp -> build/xdp/fwd.o, where make build-xdp puts it). */
static int
prog_path(struct ep_cfg *cfg, struct ep_cfg_section *s, char *out, size_t len, struct ep_err *err)
{
	const struct ep_cfg_kv *kv = s != NULL ? ep_cfg_get(cfg, s, "xdp_fast_path_prog", err) : NULL;
	char exe[PATH_MAX];
	ssize_t n;

	if (kv != NULL) {
		if (strchr(kv->val, ',') != NULL || strlen(kv->val) >= len)
			return ep_cfg_error(cfg, kv, err, "'%s': a path without commas, shorter than %zu",
					    kv->val, len);
		snprintf(out, len, "%s", kv->val);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return ep_err_set(err, "xdp_fast_path: cannot read /proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash != NULL)
		*slash = '\0';
	if ((size_t)snprintf(out, len, "%s/../xdp/fwd.o", exe) >= len)
		return ep_err_set(err, "xdp_fast_path: binary path too long");
	return 0;
}

static bool
is_af_xdp(const struct ep_port *p)
{
	return strncmp(p->device, "net_af_xdp", 10) == 0;
}

/* Whether the fast path runs: mode, the router's ports' drivers, the
 * object.  @p polled: a bit per port a router worker polls. */
static int
decide(struct ep_engine *e, uint32_t polled, enum xdp_mode *mode, char *path, size_t len,
       bool *on, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "router", NULL);

	*on = false;
	if (parse_mode(e->cfg, s, mode, err) < 0)
		return -1;
	if (*mode == XDP_FAST_OFF || polled == 0)
		return 0;
	if (prog_path(e->cfg, s, path, len, err) < 0)
		return -1;
	for (int i = 0; i < e->n_ports; i++)
		if ((polled >> i & 1) && !is_af_xdp(&e->ports[i])) {
			if (*mode == XDP_FAST_ON)
				return ep_err_set(err, "xdp_fast_path = on: port %s is not net_af_xdp",
						  e->ports[i].name);
			return 0;
		}
	if (access(path, R_OK) != 0) {
		if (*mode == XDP_FAST_ON)
			return ep_err_set(err, "xdp_fast_path = on: cannot read %s (make build-xdp): %s",
					  path, strerror(errno));
		return 0;
	}
	*on = true;
	return 0;
}

static uint32_t
router_polled(struct ep_engine *e)
{
	uint32_t polled = 0;

	for (int i = 0; i < e->n_workers; i++)
		if (e->workers[i]->type != NULL && strcmp(e->workers[i]->type->name, "router") == 0)
			for (int q = 0; q < e->workers[i]->n_rx; q++)
				polled |= 1u << e->workers[i]->rx[q].port;
	return polled;
}

/* The name of the program attached to @p ifindex ("" when none). */
static void
attached_name(int ifindex, char *name, size_t len)
{
	struct bpf_prog_info pi;
	uint32_t id = 0, il = sizeof(pi);
	int fd;

	name[0] = '\0';
	if (bpf_xdp_query_id(ifindex, 0, &id) != 0 || id == 0)
		return;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return;
	memset(&pi, 0, sizeof(pi));
	if (bpf_obj_get_info_by_fd(fd, &pi, &il) == 0)
		snprintf(name, len, "%s", pi.name);
	close(fd);
}

/* An XDP program stays attached when the process that attached it dies
 * without closing its port (SIGKILL, a crash): the PMD then cannot attach
 * its own and the port fails to start ("XDP program already attached").
 * Our program left on the port's interface by such a process is removed
 * before the port opens; any other program is left alone. */
static void
detach_stale(const struct ep_port *p)
{
	const char *at = strstr(p->device, "iface=");
	char ifname[IF_NAMESIZE], name[BPF_OBJ_NAME_LEN];
	size_t n;
	int ifindex;

	if (at == NULL)
		return;
	at += strlen("iface=");
	n = strcspn(at, ",");
	if (n == 0 || n >= sizeof(ifname))
		return;
	memcpy(ifname, at, n);
	ifname[n] = '\0';
	ifindex = (int)if_nametoindex(ifname);
	if (ifindex == 0)
		return;
	attached_name(ifindex, name, sizeof(name));
	if (strcmp(name, FWD_PROG_NAME) == 0 && bpf_xdp_detach(ifindex, 0, NULL) == 0)
		printf("router: port %s: removed the " FWD_PROG_NAME " a process that did not exit "
		       "left on %s\n", p->name, ifname);
}

int
router_xdp_port_devargs(struct ep_engine *e, const struct ep_port *p, char *buf, size_t len,
			struct ep_err *err)
{
	char path[PATH_MAX];
	enum xdp_mode mode;
	bool on;

	if (is_af_xdp(p))
		detach_stale(p);
	if (decide(e, router_polled(e), &mode, path, sizeof(path), &on, err) < 0)
		return -1;
	if (!on || strstr(p->device, "xdp_prog=") != NULL)
		return 0;
	if ((size_t)snprintf(buf, len, ",xdp_prog=%s", path) >= len)
		return ep_err_set(err, "port %s: device string too long for xdp_prog=%s", p->name, path);
	return 0;
}

/* ---- finding the maps ---- */

static void
port_close(struct xdp_port *xp)
{
	int *fds[] = { &xp->fd_cfg, &xp->fd_tx, &xp->fd_route4, &xp->fd_route6, &xp->fd_nh,
		      &xp->fd_counters };

	for (size_t i = 0; i < RTE_DIM(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	xp->found = false;
}

/* The FIB may hold more routes than the program's tries (max_routes4/6
 * raised past the object's FWD_MAX_ROUTES4/6): said once at start, as the
 * fast path then goes off (every frame to the full pipeline) past them. */
static void
warn_capacity(struct router_xdp *x, const struct xdp_port *xp)
{
	const struct ep_fib_params *fp = &x->r->fib->p;

	if (x->warned_capacity)
		return;
	for (int f = 0; f < 2; f++) {
		uint32_t fib_max = f ? fp->max_routes6 : fp->max_routes4;

		if (fib_max > xp->max_routes[f]) {
			printf("router: max_routes%d %u exceeds the XDP fast path's IPv%d trie "
			       "(%u entries): past that many routes every frame goes to the full "
			       "pipeline\n", f ? 6 : 4, fib_max, f ? 6 : 4, xp->max_routes[f]);
			fflush(stdout);
			x->warned_capacity = true;
		}
	}
}

/* The program attached to the port's ifindex, if it is ours: its maps by
 * name.  0 when found, -1 when not (yet). */
static int
port_find(struct router_xdp *x, struct xdp_port *xp)
{
	struct { const char *name; int *fd; } want[] = {
		{ "fwd_cfg_map", &xp->fd_cfg }, { "fwd_tx_ports", &xp->fd_tx },
		{ "fwd_route4", &xp->fd_route4 }, { "fwd_route6", &xp->fd_route6 },
		{ "fwd_nexthops", &xp->fd_nh },
		{ "fwd_counters", &xp->fd_counters },
	};
	struct bpf_prog_info pi;
	uint32_t ids[16], len = sizeof(pi), id = 0;
	int pfd, n_found = 0;

	if (bpf_xdp_query_id(xp->ifindex, 0, &id) != 0 || id == 0)
		return -1;
	pfd = bpf_prog_get_fd_by_id(id);
	if (pfd < 0)
		return -1;
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = RTE_DIM(ids);
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(pfd, &pi, &len) != 0 || strcmp(pi.name, FWD_PROG_NAME) != 0) {
		close(pfd);
		snprintf(x->last_error, sizeof(x->last_error),
			 "ifindex %d: attached program is not " FWD_PROG_NAME, xp->ifindex);
		return -1;
	}
	close(pfd);
	for (uint32_t i = 0; i < pi.nr_map_ids && i < RTE_DIM(ids); i++) {
		struct bpf_map_info mi;
		uint32_t mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);
		bool kept = false;

		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (bpf_obj_get_info_by_fd(fd, &mi, &mlen) == 0)
			for (size_t k = 0; k < RTE_DIM(want); k++)
				if (*want[k].fd < 0 && strcmp(mi.name, want[k].name) == 0) {
					*want[k].fd = fd;
					if (want[k].fd == &xp->fd_route4 || want[k].fd == &xp->fd_route6)
						xp->max_routes[want[k].fd == &xp->fd_route6] =
							mi.max_entries;
					kept = true;
					n_found++;
				}
		if (!kept)
			close(fd);
	}
	if (n_found != (int)RTE_DIM(want)) {
		port_close(xp);
		return -1;
	}
	xp->prog_id = id;
	xp->found = true;
	warn_capacity(x, xp);
	memset(xp->nh, 0, sizeof(*xp->nh) * x->n_nh);   /* a fresh array map is zeros */
	xp->last.fam[0].n = xp->last.fam[1].n = 0;      /* and its tries are empty */
	xp->exact = true;
	return 0;
}

/* ---- sync ---- */

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

/* Routes of one family into @p fd: added or changed ones. */
static int
routes_add(int fd, const struct route_set *rs, uint64_t *writes)
{
	for (uint32_t i = 0; i < rs->n; i++) {
		uint32_t have;

		if (bpf_map_lookup_elem(fd, &rs->v[i].key, &have) == 0 && have == rs->v[i].nh)
			continue;
		(*writes)++;
		if (bpf_map_update_elem(fd, &rs->v[i].key, &rs->v[i].nh, BPF_ANY) != 0)
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

/* The routes of @p want (sorted) that @p have (sorted: what the trie
 * holds) lacks or has with another next hop: written.  One bpf() call per
 * change, none per unchanged route. */
static int
diff_add(int fd, const struct route_set *have, const struct route_set *want, uint64_t *writes)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < want->n; i++) {
		int c = 1;

		while (j < have->n && (c = cmp_route(&have->v[j], &want->v[i])) < 0)
			j++;
		if (j < have->n && c == 0 && have->v[j].nh == want->v[i].nh)
			continue;
		(*writes)++;
		if (bpf_map_update_elem(fd, &want->v[i].key, &want->v[i].nh, BPF_ANY) != 0)
			return -1;
	}
	return 0;
}

/* The routes of @p have that @p want no longer has: deleted. */
static int
diff_remove(int fd, const struct route_set *have, const struct route_set *want,
	    uint64_t *writes)
{
	uint32_t i = 0;

	for (uint32_t j = 0; j < have->n; j++) {
		int c = -1;

		while (i < want->n && (c = cmp_route(&want->v[i], &have->v[j])) < 0)
			i++;
		if (i < want->n && c == 0)
			continue;
		(*writes)++;
		if (bpf_map_delete_elem(fd, &have->v[j].key) != 0 && errno != ENOENT)
			return -1;
	}
	return 0;
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

/* @p to becomes a copy of @p from. */
static int
set_copy(struct route_set *to, const struct route_set *from)
{
	if (from->n > to->cap) {
		struct want_route *v = realloc(to->v, from->n * sizeof(*v));

		if (v == NULL)
			return -1;
		to->v = v;
		to->cap = from->n;
	}
	if (from->n > 0)
		memcpy(to->v, from->v, from->n * sizeof(*to->v));
	to->n = from->n;
	return 0;
}

/* The routes changed since the port's last sync, by the FIB's change
 * log: one bpf() call per change, nothing per route unchanged (no walk,
 * no sort).  The tries no longer match `last`, which is dropped. */
static int
routes_by_log(struct router_xdp *x, int p, uint64_t *w)
{
	struct xdp_port *xp = &x->port[p];
	struct change_pass c = { .xp = xp, .present = true, .writes = w };

	xp->exact = false;
	xp->last_by = "log";
	if (ep_fib_route_changes(x->r->fib, xp->route_seq, apply_change, &c) != 0)
		return fail_routes(x, p, c.family, "route");
	c.present = false;
	if (ep_fib_route_changes(x->r->fib, xp->route_seq, apply_change, &c) != 0)
		return fail_routes(x, p, c.family, "route removal");
	return 0;
}

/* The routes of @p rs (the FIB's, sorted) against what the tries hold (a
 * diff of two sorted lists: one bpf() call per change), or, when `last`
 * does not list them (after a failed write, after syncs by the log),
 * against the tries themselves (a lookup per route, a walk of the keys). */
static int
routes_by_lists(struct router_xdp *x, int p, const struct route_sets *rs, uint64_t *w)
{
	struct xdp_port *xp = &x->port[p];

	xp->last_by = xp->exact ? "diff" : "compare";
	for (int f = 0; f < 2; f++) {
		int fd = f ? xp->fd_route6 : xp->fd_route4;

		if (xp->exact ? diff_add(fd, &xp->last.fam[f], &rs->fam[f], w) != 0 :
				routes_add(fd, &rs->fam[f], w) != 0) {
			xp->exact = false;
			return fail_routes(x, p, f, "route");
		}
	}
	for (int f = 0; f < 2; f++) {
		int fd = f ? xp->fd_route6 : xp->fd_route4;

		if (xp->exact ? diff_remove(fd, &xp->last.fam[f], &rs->fam[f], w) != 0 :
				routes_remove(fd, &rs->fam[f], f ? sizeof(struct fwd_lpm6_key) :
								   sizeof(struct fwd_lpm4_key), w) != 0) {
			xp->exact = false;
			return fail_routes(x, p, f, "route removal");
		}
	}
	xp->exact = set_copy(&xp->last.fam[0], &rs->fam[0]) == 0 &&
		    set_copy(&xp->last.fam[1], &rs->fam[1]) == 0;
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
	if (rs == NULL ? routes_by_log(x, p, w) != 0 : routes_by_lists(x, p, rs, w) != 0)
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

		if (xp->fast && !xp->found && port_find(x, xp) == 0)
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

/* ---- lifecycle ---- */

struct router_xdp *
router_xdp_create(struct router *r, uint32_t polled, struct ep_err *err)
{
	struct ep_engine *e = r->e;
	struct router_xdp *x;
	enum xdp_mode mode;
	char path[PATH_MAX];
	bool on;

	if (decide(e, polled, &mode, path, sizeof(path), &on, err) < 0 || !on)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		ep_err_set(err, "router: out of memory for the XDP fast path");
		return NULL;
	}
	x->r = r;
	x->mode = mode;
	snprintf(x->prog, sizeof(x->prog), "%s", path);
	x->n_nh = RTE_MIN(r->fib->p.max_nexthops, (uint32_t)FWD_MAX_NEXTHOPS);
	x->acl_empty = -1;
	x->ncpu = libbpf_num_possible_cpus();
	for (int p = 0; p < EP_MAX_PORTS; p++) {
		struct xdp_port *xp = &x->port[p];
		struct rte_eth_dev_info info;

		xp->fd_cfg = xp->fd_tx = xp->fd_route4 = xp->fd_route6 = xp->fd_nh = -1;
		xp->fd_counters = -1;
		if (p >= e->n_ports || !(polled >> p & 1) ||
		    rte_eth_dev_info_get(e->ports[p].port_id, &info) != 0 || info.if_index == 0)
			continue;
		xp->fast = true;
		xp->ifindex = (int)info.if_index;
		xp->nh = calloc(x->n_nh, sizeof(*xp->nh));
		if (xp->nh == NULL) {
			router_xdp_free(x);
			ep_err_set(err, "router: out of memory for the XDP fast path");
			return NULL;
		}
	}
	return x;
}

void
router_xdp_free(struct router_xdp *x)
{
	if (x == NULL)
		return;
	for (int p = 0; p < EP_MAX_PORTS; p++) {
		port_close(&x->port[p]);
		free(x->port[p].nh);
		free(x->port[p].last.fam[0].v);
		free(x->port[p].last.fam[1].v);
	}
	free(x);
}

/* ---- report ---- */

static void
read_counters(const struct router_xdp *x, const struct xdp_port *xp, uint64_t *out)
{
	uint64_t per[x->ncpu > 0 ? x->ncpu : 1];

	for (uint32_t c = 0; c < FWD_MAX; c++) {
		out[c] = 0;
		if (x->ncpu <= 0 || bpf_map_lookup_elem(xp->fd_counters, &c, per) != 0)
			continue;
		for (int i = 0; i < x->ncpu; i++)
			out[c] += per[i];
	}
}

static json_int_t
cycles_us(uint64_t cycles)
{
	return (json_int_t)(cycles * 1000000 / rte_get_tsc_hz());
}

/* While failing: the wait before the next attempt (0: at the next tick). */
static json_int_t
retry_in_ms(const struct xdp_port *xp)
{
	uint64_t now = rte_rdtsc();

	return now >= xp->retry_at ? 0 :
	       (json_int_t)((xp->retry_at - now) * 1000 / rte_get_tsc_hz());
}

static json_t *
counters_json(const uint64_t *v)
{
	json_t *o = json_object();

	for (int c = 0; c < FWD_MAX; c++)
		json_object_set_new(o, fwd_counter_name[c], json_integer((json_int_t)v[c]));
	return o;
}

void
router_xdp_json(struct router_xdp *x, json_t *out)
{
	uint64_t tot[FWD_MAX] = { 0 }, v[FWD_MAX];
	json_t *ports = json_array();

	json_object_set_new(out, "active", json_true());
	json_object_set_new(out, "mode", json_string(mode_name[x->mode]));
	json_object_set_new(out, "prog", json_string(x->prog));
	json_object_set_new(out, "syncs", json_integer((json_int_t)x->syncs));
	json_object_set_new(out, "sync_errors", json_integer((json_int_t)x->sync_errors));
	json_object_set_new(out, "sync_retries", json_integer((json_int_t)x->sync_retries));
	json_object_set_new(out, "last_sync_us", json_integer(cycles_us(x->last_sync_cycles)));
	json_object_set_new(out, "last_sync_walk_us", json_integer(cycles_us(x->last_walk_cycles)));
	json_object_set_new(out, "last_error", json_string(x->last_error));
	for (int p = 0; p < x->r->e->n_ports; p++) {
		struct xdp_port *xp = &x->port[p];
		json_t *o;

		if (!xp->fast)
			continue;
		o = json_pack("{s:s, s:i, s:b, s:b, s:I}", "port", x->r->e->ports[p].name,
			      "ifindex", xp->ifindex, "attached", xp->found, "synced", xp->synced,
			      "prog_id", (json_int_t)xp->prog_id);
		json_object_set_new(o, "sync_attempts", json_integer((json_int_t)xp->attempts));
		json_object_set_new(o, "sync_failures", json_integer((json_int_t)xp->failures));
		json_object_set_new(o, "last_error", json_string(xp->last_error));
		json_object_set_new(o, "last_sync_route_writes",
				    json_integer((json_int_t)xp->last_route_writes));
		json_object_set_new(o, "last_sync_by", json_string(xp->last_by ? xp->last_by : ""));
		if (xp->failing)
			json_object_set_new(o, "retry_in_ms", json_integer(retry_in_ms(xp)));
		json_object_set_new(o, "max_routes", json_pack("{s:I, s:I}",
			"ipv4", (json_int_t)xp->max_routes[0], "ipv6", (json_int_t)xp->max_routes[1]));
		if (xp->found) {
			read_counters(x, xp, v);
			for (int c = 0; c < FWD_MAX; c++)
				tot[c] += v[c];
			json_object_set_new(o, "counters", counters_json(v));
		}
		json_array_append_new(ports, o);
	}
	json_object_set_new(out, "ports", ports);
	json_object_set_new(out, "counters", counters_json(tot));
}
