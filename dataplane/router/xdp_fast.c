/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's XDP fast path, control side (xdp_fast.h says what and
 * how): the configuration, the ports' programs and maps, the report.  The
 * sync of the maps with the FIB and the ACL is xdp_fast_sync.c.
 */
#include <errno.h>
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
#include "xdp_fast_private.h"

/* The counters' names, from the one list (xdp/fwd/fwd_reasons.def). */
#define FWD_COUNTER(id, name, desc) name,
static const char *const fwd_counter_name[FWD_MAX] = {
#include "../../xdp/fwd/fwd_reasons.def"
};
#undef FWD_COUNTER

#define FWD_PROG_NAME "xdp_router_fwd"   /* the SEC("xdp") function: what we write into */

static const char *const mode_name[] = { "off", "auto", "on" };
static const char *const kind_name[] = { "xdp", "tc" };

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

/* [router] fast_path = xdp | tc | off.  Absent or xdp: xdp_fast_path
 * decides, as before the key existed; tc: the tc program on the wire
 * devices, xdp_fast_path then given is an error; off: no fast path, an
 * xdp_fast_path other than off is an error. */
static int
parse_kind(struct ep_cfg *cfg, struct ep_cfg_section *s, enum fast_kind *k, enum xdp_mode *m,
	   struct ep_err *err)
{
	const struct ep_cfg_kv *kv = s != NULL ? ep_cfg_get(cfg, s, "fast_path", err) : NULL;
	const struct ep_cfg_kv *xkv = s != NULL ? ep_cfg_get(cfg, s, "xdp_fast_path", err) : NULL;

	*k = FAST_XDP;
	if (kv == NULL || strcmp(kv->val, "xdp") == 0)
		return parse_mode(cfg, s, m, err);
	if (strcmp(kv->val, "off") == 0) {
		if (xkv != NULL && strcmp(xkv->val, "off") != 0)
			return ep_cfg_error(cfg, xkv, err, "xdp_fast_path = %s with fast_path = off",
					    xkv->val);
		*m = XDP_FAST_OFF;
		return 0;
	}
	if (strcmp(kv->val, "tc") == 0) {
		if (xkv != NULL)
			return ep_cfg_error(cfg, xkv, err, "xdp_fast_path applies to fast_path = xdp, "
					    "not tc");
		*k = FAST_TC;
		*m = XDP_FAST_ON;
		return 0;
	}
	return ep_cfg_error(cfg, kv, err, "fast_path '%s' is not xdp, tc or off", kv->val);
}

/* The object: xdp_fast_path_prog (tc_fast_path_prog), or ../xdp/fwd.o
 * (../xdp/tcfwd.o) from the binary (build/dp/edgeplane-dp ->
 * build/xdp/fwd.o, where make build-xdp puts it). */
static int
prog_path(struct ep_cfg *cfg, struct ep_cfg_section *s, enum fast_kind k, char *out, size_t len,
	  struct ep_err *err)
{
	const char *key = k == FAST_TC ? "tc_fast_path_prog" : "xdp_fast_path_prog";
	const char *other = k == FAST_TC ? "xdp_fast_path_prog" : "tc_fast_path_prog";
	const struct ep_cfg_kv *kv = s != NULL ? ep_cfg_get(cfg, s, key, err) : NULL;
	const struct ep_cfg_kv *okv = s != NULL ? ep_cfg_get(cfg, s, other, err) : NULL;
	char exe[PATH_MAX];
	ssize_t n;

	if (okv != NULL)
		return ep_cfg_error(cfg, okv, err, "%s with fast_path = %s", other, kind_name[k]);
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
	if ((size_t)snprintf(out, len, "%s/../xdp/%s", exe,
			     k == FAST_TC ? "tcfwd.o" : "fwd.o") >= len)
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
decide(struct ep_engine *e, uint32_t polled, enum fast_kind *kind, enum xdp_mode *mode,
       char *path, size_t len, bool *on, struct ep_err *err)
{
	struct ep_cfg_section *s = ep_cfg_find(e->cfg, "router", NULL);

	*on = false;
	if (parse_kind(e->cfg, s, kind, mode, err) < 0)
		return -1;
	if (tc_ports_config(e, *mode == XDP_FAST_OFF ? FAST_XDP : *kind, polled, NULL, err) < 0)
		return -1;
	if (*mode == XDP_FAST_OFF || polled == 0)
		return 0;
	if (prog_path(e->cfg, s, *kind, path, len, err) < 0)
		return -1;
	if (*kind == FAST_TC) {
		if (access(path, R_OK) != 0)
			return ep_err_set(err, "fast_path = tc: cannot read %s (make build-xdp): %s",
					  path, strerror(errno));
		*on = true;
		return 0;
	}
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
 * before the port opens; any other program is left alone, and named, as
 * the port's start will then fail (the ports before it have opened and
 * are closed again, their programs with them). */
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
	else if (name[0] != '\0')
		printf("router: port %s: %s holds another XDP program, %s, which net_af_xdp will "
		       "not replace: the port cannot start\n", p->name, ifname, name);
	fflush(stdout);
}

int
router_xdp_port_devargs(struct ep_engine *e, const struct ep_port *p, char *buf, size_t len,
			struct ep_err *err)
{
	char path[PATH_MAX];
	enum fast_kind kind;
	enum xdp_mode mode;
	bool on;

	if (is_af_xdp(p))
		detach_stale(p);
	if (decide(e, router_polled(e), &kind, &mode, path, sizeof(path), &on, err) < 0)
		return -1;
	/* tc: the port polls the punt pair with the PMD's own program. */
	if (!on || kind == FAST_TC || strstr(p->device, "xdp_prog=") != NULL)
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
void
xdp_warn_capacity(struct router_xdp *x, const struct xdp_port *xp)
{
	const struct ep_fib_params *fp = &x->r->fib->p;

	if (x->warned_capacity)
		return;
	for (int f = 0; f < 2; f++) {
		uint32_t fib_max = f ? fp->max_routes6 : fp->max_routes4;

		if (fib_max > xp->max_routes[f]) {
			printf("router: max_routes%d %u exceeds the %s fast path's IPv%d trie "
			       "(%u entries): past that many routes every frame goes to the full "
			       "pipeline\n", f ? 6 : 4, fib_max, x->kind == FAST_TC ? "tc" : "XDP",
			       f ? 6 : 4, xp->max_routes[f]);
			fflush(stdout);
			x->warned_capacity = true;
		}
	}
}

int
xdp_port_find(struct router_xdp *x, struct xdp_port *xp)
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

	if (x->kind == FAST_TC)
		return tc_port_find(x, xp);
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
	xdp_warn_capacity(x, xp);
	memset(xp->nh, 0, sizeof(*xp->nh) * x->n_nh);   /* a fresh array map is zeros */
	return 0;
}

/* ---- lifecycle ---- */

struct router_xdp *
router_xdp_create(struct router *r, uint32_t polled, struct ep_err *err)
{
	struct ep_engine *e = r->e;
	struct router_xdp *x;
	enum fast_kind kind;
	enum xdp_mode mode;
	char path[PATH_MAX];
	bool on;

	if (decide(e, polled, &kind, &mode, path, sizeof(path), &on, err) < 0 || !on)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		ep_err_set(err, "router: out of memory for the XDP fast path");
		return NULL;
	}
	x->r = r;
	x->kind = kind;
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
		if (p >= e->n_ports || !(polled >> p & 1))
			continue;
		if (kind == FAST_XDP) {
			if (rte_eth_dev_info_get(e->ports[p].port_id, &info) != 0 ||
			    info.if_index == 0)
				continue;
			xp->ifindex = (int)info.if_index;
		}
		xp->fast = true;
		xp->nh = calloc(x->n_nh, sizeof(*xp->nh));
		if (xp->nh == NULL) {
			router_xdp_free(x);
			ep_err_set(err, "router: out of memory for the XDP fast path");
			return NULL;
		}
	}
	if (kind == FAST_TC &&
	    (tc_ports_config(e, kind, polled, x, err) < 0 || tc_attach(x, err) < 0)) {
		router_xdp_free(x);
		return NULL;
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
		if (x->kind == FAST_TC)
			tc_detach(&x->port[p]);
		free(x->port[p].nh);
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
	json_object_set_new(out, "kind", json_string(kind_name[x->kind]));
	json_object_set_new(out, "mode", json_string(mode_name[x->mode]));
	if (x->kind == FAST_TC)
		json_object_set_new(out, "tc_prog", json_string(x->tc_prog_name));
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
		if (x->kind == FAST_TC)
			json_object_set_new(o, "tc", json_pack("{s:s, s:s, s:i}", "wire", xp->wire,
				"punt", xp->punt, "punt_ifindex", xp->punt_ifindex));
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
