/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The router's fast path at tc ingress ([router] fast_path = tc): the
 * program xdp/fwd/tcfwd.bpf.c, loaded here with libbpf, one copy per port,
 * and attached to the port's wire device, the veth or NIC the traffic
 * arrives on; the DPDK port itself polls the far end of a punt veth pair
 * (docs/benchmarks/rfc2544-router-fast-paths.md, "A copy-free path on
 * veth: tc ingress", has the design and why: any XDP program on a veth
 * copies every frame).
 *
 *    wire --[tc ingress: tc_router_fwd_peer]--bpf_redirect_peer--> egress wire's peer
 *              | punt: bpf_redirect(punt, egress)
 *    punt ==veth== the DPDK port's device (net_af_xdp / net_af_packet, the wire's MAC)
 *              | what the pipeline sends: [tc ingress of punt: tc_router_punt_out]
 *              +--bpf_redirect(wire)--> out of the wire
 *
 *   [router]
 *   fast_path = tc                   # xdp (default: xdp_fast_path decides) | tc | off
 *   tc_fast_path_prog = <path>       # default: ../xdp/tcfwd.o from the binary
 *   [port pa]
 *   device = net_af_xdp0,iface=pa_p  # the punt pair's far end, carrying the wire's MAC
 *   fast_path_wire = pa              # the device the traffic arrives on
 *   fast_path_punt = pa_k            # the punt pair's near end
 *
 * Whoever sets up the ports creates the punt pair (the lab in tests and
 * benches, lab/router_lab.py; an operator otherwise): the router only
 * attaches to devices that exist, and says which one is missing.
 *
 * The maps are those of fwd.h, written by the one sync (xdp_fast_sync.c)
 * as for the XDP program's copies; fwd_tc_ports (port -> wire ifindex)
 * takes the devmap's role.  The forwarding ending is bpf_redirect_peer()
 * when every wire device is a veth (the frame enters the peer's ingress in
 * the same softirq), bpf_redirect() to the wire's egress otherwise.
 *
 * Attach replaces (BPF_TC_F_REPLACE, a fixed handle and priority) what a
 * process that died left on the devices, with a fresh copy whose config
 * says punt everything until the first sync: no stale program forwards on
 * stale maps past a restart.  Stop detaches both programs and removes the
 * clsact hooks we own, when nothing else is left on them.
 *
 * Which hooks we own is recorded where it survives a crash and cannot go
 * stale: in our filter's handle on the hook itself.  A filter on a clsact
 * hook that was there before us has handle TC_HANDLE_FOUND; on one we
 * created, TC_HANDLE_MADE.  A process that finds the hook (EEXIST) with
 * our filter of handle TC_HANDLE_MADE on it, left by one of ours that died,
 * owns that hook as its creator did, and keeps the handle.  A record in a
 * file instead would outlive the hook (an operator's `tc qdisc del`, a
 * device gone) and then name someone else's, and ifindexes repeat across
 * namespaces.  Removing every clsact that is empty after our detach,
 * owned or not, would break whoever else uses one: an operator's hook
 * waiting for its filters, a chain template, a shared block.  And an
 * owned hook that holds someone else's filter (added to it while we ran)
 * is left: destroying the qdisc would take their filter with it.
 */
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <rte_common.h>

#include "router.h"
#include "xdp_fast.h"
#include "xdp_fast_private.h"

#define TC_HANDLE_FOUND 0xe9f0  /* ours, on a clsact hook that was there before us */
#define TC_HANDLE_MADE 0xe9f1   /* ours, on a clsact hook one of ours created */
#define TC_PRIORITY 1
#define TC_PUNT_OUT "tc_router_punt_out"

/* The driver of @p ifname (ETHTOOL_GDRVINFO); "" when unknown. */
static void
driver_of(const char *ifname, char *drv, size_t len)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	drv[0] = '\0';
	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&info;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		snprintf(drv, len, "%s", info.driver);
	close(fd);
}

/* The value of iface= in a DPDK device string ("" when none). */
static void
device_iface(const char *device, char *out, size_t len)
{
	const char *at = strstr(device, "iface=");
	size_t n;

	out[0] = '\0';
	if (at == NULL)
		return;
	at += strlen("iface=");
	n = strcspn(at, ",");
	if (n < len) {
		memcpy(out, at, n);
		out[n] = '\0';
	}
}

static int
device_name(struct ep_cfg *cfg, const struct ep_cfg_kv *kv, const char *port, char *out,
	    int *ifindex, struct ep_err *err)
{
	if (strlen(kv->val) >= IF_NAMESIZE || kv->val[0] == '\0')
		return ep_cfg_error(cfg, kv, err, "port %s: '%s' is not an interface name", port,
				    kv->val);
	snprintf(out, IF_NAMESIZE, "%s", kv->val);
	*ifindex = (int)if_nametoindex(out);
	if (*ifindex == 0)
		return ep_cfg_error(cfg, kv, err, "port %s: no interface '%s' (fast_path = tc: "
				    "whoever sets up the ports creates the punt pair)", port, out);
	return 0;
}

int
tc_ports_config(struct ep_engine *e, enum fast_kind kind, uint32_t polled, struct router_xdp *x,
		struct ep_err *err)
{
	for (int p = 0; p < e->n_ports; p++) {
		struct ep_cfg_section *s = ep_cfg_find(e->cfg, "port", e->ports[p].name);
		const struct ep_cfg_kv *wire = s ? ep_cfg_get(e->cfg, s, "fast_path_wire", err) : NULL;
		const struct ep_cfg_kv *punt = s ? ep_cfg_get(e->cfg, s, "fast_path_punt", err) : NULL;
		const char *name = e->ports[p].name;
		char iface[IF_NAMESIZE];
		struct xdp_port *xp;
		int wi, pi;

		if (kind != FAST_TC || !(polled >> p & 1)) {
			const struct ep_cfg_kv *kv = wire ? wire : punt;

			if (kv != NULL)
				return ep_cfg_error(e->cfg, kv, err, "port %s: %s applies to a router "
						    "port with [router] fast_path = tc", name, kv->key);
			continue;
		}
		if (wire == NULL || punt == NULL)
			return ep_err_set(err, "port %s: fast_path = tc needs fast_path_wire (the "
					  "device the traffic arrives on) and fast_path_punt (the "
					  "near end of the punt veth pair whose far end the port "
					  "polls)", name);
		if (strcmp(wire->val, punt->val) == 0)
			return ep_cfg_error(e->cfg, punt, err, "port %s: fast_path_punt is the wire "
					    "device", name);
		device_iface(e->ports[p].device, iface, sizeof(iface));
		if (strcmp(iface, wire->val) == 0 || strcmp(iface, punt->val) == 0)
			return ep_err_set(err, "port %s: fast_path = tc: the port's device must poll "
					  "the far end of the punt pair, not %s (%s)", name, iface,
					  strcmp(iface, wire->val) == 0 ? "the wire" :
					  "the punt pair's near end");
		if (x == NULL)
			continue;
		xp = &x->port[p];
		if (device_name(e->cfg, wire, name, xp->wire, &wi, err) < 0 ||
		    device_name(e->cfg, punt, name, xp->punt, &pi, err) < 0)
			return -1;
		xp->ifindex = wi;
		xp->punt_ifindex = pi;
	}
	return 0;
}

/*
 * libbpf prints the kernel's extended ack of every refused netlink request
 * ("libbpf: Kernel error message: ...", at LIBBPF_WARN, on stderr).  Two
 * refusals are expected at a start and say nothing wrong, but a reader of
 * the log takes them for errors: bpf_tc_hook_create() on a device whose
 * clsact hook exists (EEXIST, "Exclusivity flag on, cannot modify": the
 * hook is then found, not made) and bpf_tc_query() for our filter of handle
 * TC_HANDLE_MADE on a found hook that does not hold it (ENOENT, "Cannot
 * find specified filter chain": the hook is not ours).  While one of those
 * two calls runs, the one message it expects is dropped; every other
 * message goes on to the printer that was set (libbpf's own, to stderr).
 * Only the control thread attaches and detaches.
 */
#define TC_EXPECTED_EXISTS "Exclusivity flag on, cannot modify"
#define TC_EXPECTED_NO_FILTER "Cannot find specified filter chain"

static libbpf_print_fn_t outer_print;
static const char *expected_msg;

static int
print_unexpected(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[256];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(line, sizeof(line), fmt, copy);
	va_end(copy);
	if (level == LIBBPF_WARN && strstr(line, expected_msg) != NULL)
		return 0;
	return outer_print != NULL ? outer_print(level, fmt, ap) : 0;
}

static void
expect_begin(const char *msg)
{
	expected_msg = msg;
	outer_print = libbpf_set_print(print_unexpected);
}

static void
expect_end(void)
{
	libbpf_set_print(outer_print);
}

/* Whether our filter of handle TC_HANDLE_MADE is on @p hook: a process of
 * ours created the hook. */
static bool
hook_made_by_us(struct bpf_tc_hook *hook)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, q, .handle = TC_HANDLE_MADE, .priority = TC_PRIORITY);
	int rc;

	expect_begin(TC_EXPECTED_NO_FILTER);
	rc = bpf_tc_query(hook, &q);
	expect_end();
	return rc == 0;
}

/* Our program on @p ifindex's tc ingress, with handle TC_HANDLE_MADE on a
 * hook we own (*created), TC_HANDLE_FOUND otherwise. */
static int
hook_attach(int ifindex, int prog_fd, bool *created, bool *attached)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .priority = TC_PRIORITY, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	int rc;

	expect_begin(TC_EXPECTED_EXISTS);
	rc = bpf_tc_hook_create(&hook);
	expect_end();
	if (rc == 0)
		*created = true;
	else if (rc != -EEXIST)
		return rc;
	else
		*created = hook_made_by_us(&hook);
	opts.handle = *created ? TC_HANDLE_MADE : TC_HANDLE_FOUND;
	rc = bpf_tc_attach(&hook, &opts);
	if (rc == 0)
		*attached = true;
	return rc;
}

/* Whether @p ifindex's clsact holds any filter at @p parent (a netlink
 * dump of its filters, RTM_GETTFILTER: libbpf's tc API queries one handle
 * only); -1 when the dump fails. */
static int
point_has_filters(int ifindex, uint32_t parent)
{
	struct {
		struct nlmsghdr nh;
		struct tcmsg tc;
	} req = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)), .nlmsg_type = RTM_GETTFILTER,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex, .tcm_parent = parent },
	};
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), found = -1;

	if (fd < 0)
		return -1;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		goto out;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh = (struct nlmsghdr *)buf;

		if (n <= 0)
			goto out;
		for (; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_DONE) {
				found = found > 0;
				goto out;
			}
			if (nh->nlmsg_type == NLMSG_ERROR)
				goto out;
			if (nh->nlmsg_type == RTM_NEWTFILTER)
				found = 1;
		}
	}
out:
	close(fd);
	return found;
}

static void
hook_detach(int ifindex, bool *created, bool *attached)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .priority = TC_PRIORITY,
			    .handle = *created ? TC_HANDLE_MADE : TC_HANDLE_FOUND);

	if (*attached)
		bpf_tc_detach(&hook, &opts);
	/* Ours, and nothing else on it at either point: the whole clsact
	 * qdisc goes (both points at once). */
	if (*created &&
	    point_has_filters(ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)) == 0 &&
	    point_has_filters(ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)) == 0) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
	*attached = *created = false;
}

static int
put_u32(struct bpf_object *obj, const char *map, uint32_t key, uint32_t val)
{
	int fd = bpf_object__find_map_fd_by_name(obj, map);

	return fd < 0 ? -1 : bpf_map_update_elem(fd, &key, &val, BPF_ANY);
}

/* A device that refused a program: which, where, and why.  EINVAL from
 * the replace is most often another classifier (u32, flower, ...) at our
 * priority: the kernel keeps one kind per priority and protocol. */
static int
attach_error(struct ep_err *err, const char *port, const char *prog, const char *dev, int rc)
{
	return ep_err_set(err, "fast_path = tc: port %s: attaching %s to %s's tc ingress "
			  "at priority %d: %s%s; no port keeps a program", port, prog, dev,
			  TC_PRIORITY, strerror(-rc),
			  rc == -EINVAL ? " (a filter of another kind at that priority?)" : "");
}

static int
attach_port(struct router_xdp *x, int p, struct ep_err *err)
{
	struct xdp_port *xp = &x->port[p];
	const char *name = x->r->e->ports[p].name;
	struct bpf_program *prog, *fwd = NULL, *out = NULL;
	int rc;

	xp->obj = bpf_object__open_file(x->prog, NULL);
	if (xp->obj == NULL || libbpf_get_error(xp->obj)) {
		xp->obj = NULL;
		return ep_err_set(err, "fast_path = tc: cannot open %s (make build-xdp): %s", x->prog,
				  strerror(errno));
	}
	bpf_object__for_each_program(prog, xp->obj) {
		const char *pn = bpf_program__name(prog);

		if (strcmp(pn, x->tc_prog_name) == 0)
			fwd = prog;
		else if (strcmp(pn, TC_PUNT_OUT) == 0)
			out = prog;
		else
			bpf_program__set_autoload(prog, false);
	}
	if (fwd == NULL || out == NULL)
		return ep_err_set(err, "fast_path = tc: %s has no %s or no " TC_PUNT_OUT, x->prog,
				  x->tc_prog_name);
	rc = bpf_object__load(xp->obj);
	if (rc != 0)
		return ep_err_set(err, "fast_path = tc: loading %s: %s", x->prog, strerror(-rc));
	/* A fresh fwd_cfg_map is zeros: enabled = 0, every frame punted
	 * until the first sync writes the tables. */
	if (put_u32(xp->obj, "fwd_tc_punt", 0, (uint32_t)xp->punt_ifindex) != 0 ||
	    put_u32(xp->obj, "fwd_tc_wire", 0, (uint32_t)xp->ifindex) != 0)
		return ep_err_set(err, "fast_path = tc: port %s: writing the punt and wire devices: %s",
				  name, strerror(errno));
	/* The way back first, then the way in.  On a failure the caller
	 * detaches every port, this one's punt program included. */
	rc = hook_attach(xp->punt_ifindex, bpf_program__fd(out), &xp->tc_punt_hook,
			 &xp->tc_punt_attached);
	if (rc != 0)
		return attach_error(err, name, TC_PUNT_OUT, xp->punt, rc);
	rc = hook_attach(xp->ifindex, bpf_program__fd(fwd), &xp->tc_wire_hook,
			 &xp->tc_wire_attached);
	if (rc != 0)
		return attach_error(err, name, x->tc_prog_name, xp->wire, rc);
	printf("router: port %s: tc fast path %s on %s, punting through %s\n", name,
	       x->tc_prog_name, xp->wire, xp->punt);
	return 0;
}

int
tc_attach(struct router_xdp *x, struct ep_err *err)
{
	bool all_veth = true;
	char drv[32];

	for (int p = 0; p < x->r->e->n_ports; p++)
		if (x->port[p].fast) {
			driver_of(x->port[p].wire, drv, sizeof(drv));
			if (strcmp(drv, "veth") != 0)
				all_veth = false;
		}
	x->tc_prog_name = all_veth ? "tc_router_fwd_peer" : "tc_router_fwd";
	for (int p = 0; p < x->r->e->n_ports; p++)
		if (x->port[p].fast && attach_port(x, p, err) < 0)
			return -1;
	fflush(stdout);
	return 0;
}

int
tc_port_find(struct router_xdp *x, struct xdp_port *xp)
{
	struct { const char *name; int *fd; } want[] = {
		{ "fwd_cfg_map", &xp->fd_cfg }, { "fwd_tc_ports", &xp->fd_tx },
		{ "fwd_route4", &xp->fd_route4 }, { "fwd_route6", &xp->fd_route6 },
		{ "fwd_nexthops", &xp->fd_nh }, { "fwd_counters", &xp->fd_counters },
	};
	struct bpf_program *prog;

	if (xp->obj == NULL || !xp->tc_wire_attached)
		return -1;
	for (size_t k = 0; k < RTE_DIM(want); k++) {
		struct bpf_map *m = bpf_object__find_map_by_name(xp->obj, want[k].name);

		/* A dup: the port's fds are closed apart from the object. */
		*want[k].fd = m != NULL ? dup(bpf_map__fd(m)) : -1;
		if (*want[k].fd < 0) {
			snprintf(x->last_error, sizeof(x->last_error), "tcfwd.o: no map %s",
				 want[k].name);
			return -1;
		}
		if (want[k].fd == &xp->fd_route4 || want[k].fd == &xp->fd_route6)
			xp->max_routes[want[k].fd == &xp->fd_route6] = bpf_map__max_entries(m);
	}
	prog = bpf_object__find_program_by_name(xp->obj, x->tc_prog_name);
	if (prog != NULL) {
		struct bpf_prog_info pi;
		uint32_t len = sizeof(pi);

		memset(&pi, 0, sizeof(pi));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &pi, &len) == 0)
			xp->prog_id = pi.id;
	}
	xp->found = true;
	xdp_warn_capacity(x, xp);
	memset(xp->nh, 0, sizeof(*xp->nh) * x->n_nh);   /* a fresh array map is zeros */
	return 0;
}

void
tc_detach(struct xdp_port *xp)
{
	if (xp->ifindex > 0)
		hook_detach(xp->ifindex, &xp->tc_wire_hook, &xp->tc_wire_attached);
	if (xp->punt_ifindex > 0)
		hook_detach(xp->punt_ifindex, &xp->tc_punt_hook, &xp->tc_punt_attached);
	if (xp->obj != NULL)
		bpf_object__close(xp->obj);
	xp->obj = NULL;
}
