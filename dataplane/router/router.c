/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Router tables and their control operations: routes, next hops, neighbours.
 * Control thread only (config loading and control-socket handlers); see
 * router.h for how each change reaches the workers.
 */
/* rte_lpm_rcu_qsbr_add is still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_jhash.h>

#include "ep_rcu.h"
#include "router.h"

struct router *router_global;

struct route_key {
	uint8_t family;
	uint8_t plen;
	uint8_t pad[2];
	uint8_t addr[16];
};

struct nh_key {
	uint8_t family;
	uint8_t pad[3];
	uint8_t ip[16];
};

#define RT_VAL(kind, nh) ((void *)(uintptr_t)(((uintptr_t)(kind) << 24) | (nh)))
#define RT_KIND(v) ((enum router_route_kind)((uintptr_t)(v) >> 24))
#define RT_NH(v) ((uint32_t)((uintptr_t)(v) & 0xffffff))

static const char *const route_kind_name[] = {
	[ROUTER_RT_STATIC] = "static", [ROUTER_RT_NEIGH] = "neighbour",
	[ROUTER_RT_CONNECTED] = "connected", [ROUTER_RT_LOCAL] = "local",
};

static uint32_t name_seq;   /* unique DPDK object names across routers (tests) */

void
router_params_default(struct router_params *p)
{
	p->max_routes4 = 131072;
	p->max_routes6 = 131072;
	p->lpm4_tbl8s = 8192;       /* 1 KiB each: routes longer than /24 */
	p->lpm6_tbl8s = 32768;      /* 1 KiB each, two tables */
	p->max_nexthops = 4096;
	p->max_acl_rules = 65536;
}

/* ---- addresses ---- */

int
router_parse_ip(const char *s, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (s == NULL)
		return 0;
	if (inet_pton(AF_INET, s, addr) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return 6;
	return 0;
}

int
router_parse_prefix(const char *s, uint8_t addr[16], uint8_t *plen, bool strict,
		    const char **why)
{
	char ip[64];
	const char *slash = s != NULL ? strchr(s, '/') : NULL;
	uint64_t len;
	int fam;

	*why = "is not a prefix (address/length)";
	if (slash == NULL || (size_t)(slash - s) >= sizeof(ip))
		return 0;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	fam = router_parse_ip(ip, addr);
	if (fam == 0 || slash[1] < '0' || slash[1] > '9')
		return 0;
	if (ep_parse_u64(slash + 1, 0, fam == 4 ? 32u : 128u, &len, NULL) < 0) {
		*why = "prefix length out of range";
		return 0;
	}
	for (unsigned int bit = (unsigned int)len; bit < (fam == 4 ? 32u : 128u); bit++) {
		uint8_t mask = (uint8_t)(0x80 >> (bit % 8));

		if ((addr[bit / 8] & mask) != 0 && strict) {
			*why = "has host bits set beyond the prefix length";
			return 0;
		}
		addr[bit / 8] &= (uint8_t)~mask;
	}
	*plen = (uint8_t)len;
	return fam;
}

const char *
router_ip_str(uint8_t family, const uint8_t *addr, char *buf, size_t n)
{
	if (inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, buf, (socklen_t)n) == NULL)
		snprintf(buf, n, "?");
	return buf;
}

static bool
prefix_contains(uint8_t family, const uint8_t *net, uint8_t plen, const uint8_t *ip)
{
	unsigned int full = plen / 8u, rest = plen % 8u;

	(void)family;
	if (memcmp(net, ip, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((net[full] ^ ip[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Port whose connected subnet holds @p ip, or -1. */
static int
port_for(struct router *r, uint8_t family, const uint8_t *ip)
{
	for (int i = 0; i < r->e->n_ports; i++) {
		const struct ep_port *p = &r->e->ports[i];

		if (family == 4) {
			for (int a = 0; a < p->n_v4; a++)
				if (prefix_contains(4, (const uint8_t *)&p->v4[a].addr,
						    p->v4[a].plen, ip))
					return i;
		} else {
			for (int a = 0; a < p->n_v6; a++)
				if (prefix_contains(6, p->v6[a].addr, p->v6[a].plen, ip))
					return i;
		}
	}
	return -1;
}

static bool
is_own(struct router *r, uint8_t family, const uint8_t *ip)
{
	for (int i = 0; i < r->e->n_ports; i++) {
		const struct ep_port *p = &r->e->ports[i];

		for (int a = 0; family == 4 && a < p->n_v4; a++)
			if (memcmp(&p->v4[a].addr, ip, 4) == 0)
				return true;
		for (int a = 0; family == 6 && a < p->n_v6; a++)
			if (memcmp(p->v6[a].addr, ip, 16) == 0)
				return true;
	}
	return false;
}

/* ---- the FIB: rte_lpm in place, rte_lpm6 double-buffered ---- */

static int
fib_set(struct router *r, uint8_t family, const uint8_t *addr, uint8_t plen, uint32_t nh,
	struct ep_err *err)
{
	int rc;

	if (plen == 0) {
		/* The default route: one word, read by the route stage on a miss. */
		__atomic_store_n(&r->default_nh[family == 4 ? 0 : 1], nh, __ATOMIC_RELEASE);
		return 0;
	}
	if (family == 4) {
		uint32_t ip;

		memcpy(&ip, addr, 4);
		/* In place: readers see either the old or the new entry; tbl8
		 * groups it frees are reclaimed through RCU-QSBR. */
		rc = rte_lpm_add(r->lpm4, rte_be_to_cpu_32(ip), plen, nh);
	} else {
		struct rte_lpm6 *cur = r->lpm6_cur;
		struct rte_lpm6 *spare = cur == r->lpm6[0] ? r->lpm6[1] : r->lpm6[0];

		rc = rte_lpm6_add(spare, addr, plen, nh);
		if (rc == 0) {
			ep_rcu_publish(&r->lpm6_cur, spare);
			ep_rcu_synchronize(r->e);
			/* Both copies hold the same rules and have the same size,
			 * so this cannot run out of room where the first did not. */
			rc = rte_lpm6_add(cur, addr, plen, nh);
		}
	}
	if (rc < 0)
		return ep_err_set(err, "prefix: route table full (%s); raise %s",
				  strerror(-rc), family == 4 ? "max_routes4/lpm4_tbl8s" :
				  "max_routes6/lpm6_tbl8s");
	return 0;
}

static void
fib_del(struct router *r, uint8_t family, const uint8_t *addr, uint8_t plen)
{
	if (plen == 0) {
		__atomic_store_n(&r->default_nh[family == 4 ? 0 : 1], ROUTER_NO_DEFAULT,
				 __ATOMIC_RELEASE);
		return;
	}
	if (family == 4) {
		uint32_t ip;

		memcpy(&ip, addr, 4);
		rte_lpm_delete(r->lpm4, rte_be_to_cpu_32(ip), plen);
	} else {
		/* rte_lpm6_delete rebuilds the table from its rule list: never on
		 * a table a worker reads. */
		struct rte_lpm6 *cur = r->lpm6_cur;
		struct rte_lpm6 *spare = cur == r->lpm6[0] ? r->lpm6[1] : r->lpm6[0];

		rte_lpm6_delete(spare, addr, plen);
		ep_rcu_publish(&r->lpm6_cur, spare);
		ep_rcu_synchronize(r->e);
		rte_lpm6_delete(cur, addr, plen);
	}
}

static void
route_key_make(struct route_key *k, uint8_t family, const uint8_t *addr, uint8_t plen)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->plen = plen;
	memcpy(k->addr, addr, family == 4 ? 4 : 16);
}

static int
route_lookup(struct router *r, const struct route_key *k, void **val)
{
	return rte_hash_lookup_data(r->routes, k, val) >= 0;
}

/* Install a route and remember it; @p kind / @p nh into both. */
static int
route_install(struct router *r, uint8_t family, const uint8_t *addr, uint8_t plen,
	      enum router_route_kind kind, uint32_t nh, struct ep_err *err)
{
	struct route_key k;
	void *old;
	bool exists;

	route_key_make(&k, family, addr, plen);
	exists = route_lookup(r, &k, &old);
	if (!exists && (family == 4 ? r->n_routes4 >= r->p.max_routes4 :
			r->n_routes6 >= r->p.max_routes6))
		return ep_err_set(err, "prefix: route table full (%u routes); raise %s",
				  family == 4 ? r->p.max_routes4 : r->p.max_routes6,
				  family == 4 ? "max_routes4" : "max_routes6");
	if (fib_set(r, family, addr, plen, nh, err) < 0)
		return -1;
	if (rte_hash_add_key_data(r->routes, &k, RT_VAL(kind, nh)) < 0) {
		/* Keep the FIB and the route store in step. */
		if (exists)
			fib_set(r, family, addr, plen, RT_NH(old), NULL);
		else
			fib_del(r, family, addr, plen);
		return ep_err_set(err, "prefix: route store full");
	}
	if (!exists) {
		if (family == 4)
			r->n_routes4++;
		else
			r->n_routes6++;
	}
	return 0;
}

static void
route_remove(struct router *r, const struct route_key *k)
{
	fib_del(r, k->family, k->addr, k->plen);
	rte_hash_del_key(r->routes, k);
	if (k->family == 4)
		r->n_routes4--;
	else
		r->n_routes6--;
}

int
router_route_each(struct router *r,
		  int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen,
			    enum router_route_kind kind, uint32_t nh, void *arg),
		  void *arg)
{
	const void *key;
	void *val;
	uint32_t it = 0;
	int rc;

	while (rte_hash_iterate(r->routes, &key, &val, &it) >= 0) {
		const struct route_key *k = key;

		rc = fn(k->family, k->addr, k->plen, RT_KIND(val), RT_NH(val), arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- next hops ---- */

static bool
nh_is_static(struct router *r, const struct router_nh *v)
{
	return v >= &r->nh_static[0] && v <= &r->nh_static[ROUTER_NH_FIRST];
}

/*
 * Replace what workers read for next hop @p idx.  The new entry is whole
 * before its pointer is published; the old one is freed only after every
 * worker passed a quiescent state, so no reader ever sees a torn MAC or a
 * freed entry.
 */
static int
nh_publish(struct router *r, uint32_t idx, struct ep_err *err)
{
	const struct router_nhc *c = &r->nhc[idx];
	struct router_nh *v, *old = r->nh[idx];

	if (!c->in_use) {
		v = &r->nh_static[ROUTER_NH_FIRST];
	} else if (c->neigh) {
		v = rte_zmalloc("ep_router_nh", sizeof(*v), 0);
		if (v == NULL)
			return ep_err_set(err, "out of memory for a next hop");
		memcpy(v->eth, &c->mac, 6);
		memcpy(v->eth + 6, &r->e->ports[c->port].mac, 6);
		v->port = c->port;
		v->kind = ROUTER_NH_FORWARD;
	} else {
		v = &r->nh_static[ROUTER_NH_GLEAN];
	}
	ep_rcu_publish(&r->nh[idx], v);
	if (old != v && !nh_is_static(r, old)) {
		ep_rcu_synchronize(r->e);
		rte_free(old);
	}
	return 0;
}

static void
nh_key_make(struct nh_key *k, uint8_t family, const uint8_t *ip)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	memcpy(k->ip, ip, family == 4 ? 4 : 16);
}

static int
nh_find(struct router *r, uint8_t family, const uint8_t *ip)
{
	struct nh_key k;
	void *val;

	nh_key_make(&k, family, ip);
	if (rte_hash_lookup_data(r->nh_by_ip, &k, &val) < 0)
		return -1;
	return (int)(uintptr_t)val;
}

static int
nh_create(struct router *r, uint8_t family, const uint8_t *ip, uint16_t port,
	  struct ep_err *err)
{
	struct router_nhc *c;
	struct nh_key k;
	uint32_t idx;

	if (r->n_nh_free == 0)
		return ep_err_set(err, "next-hop table full (%u); raise max_nexthops",
				  r->p.max_nexthops);
	idx = r->nh_free[r->n_nh_free - 1];
	nh_key_make(&k, family, ip);
	if (rte_hash_add_key_data(r->nh_by_ip, &k, (void *)(uintptr_t)idx) < 0)
		return ep_err_set(err, "next-hop table full; raise max_nexthops");
	r->n_nh_free--;
	c = &r->nhc[idx];
	memset(c, 0, sizeof(*c));
	c->in_use = true;
	c->family = family;
	memcpy(c->ip, ip, family == 4 ? 4 : 16);
	c->port = port;
	/* Unresolved: workers already see the "unused" entry, which drops the
	 * same way; nothing to publish until a MAC arrives. */
	return (int)idx;
}

/* Drop one reference; release the index when no route and no neighbour uses it. */
static void
nh_put(struct router *r, uint32_t idx)
{
	struct router_nhc *c = &r->nhc[idx];
	struct nh_key k;

	if (c->refs > 0)
		c->refs--;
	if (c->refs > 0 || c->neigh)
		return;
	nh_key_make(&k, c->family, c->ip);
	rte_hash_del_key(r->nh_by_ip, &k);
	c->in_use = false;
	/* After the grace period no worker still holds this index from a
	 * lookup of a route that is gone, so reusing it cannot misdirect. */
	nh_publish(r, idx, NULL);
	ep_rcu_synchronize(r->e);
	r->nh_free[r->n_nh_free++] = idx;
}

/* ---- routes ---- */

int
router_route_add(struct router *r, const char *prefix, const char *via, struct ep_err *err)
{
	uint8_t addr[16], gw[16], plen;
	const char *why;
	struct route_key k;
	void *old;
	bool exists;
	int fam, gfam, nh, port;

	fam = router_parse_prefix(prefix, addr, &plen, true, &why);
	if (fam == 0)
		return ep_err_set(err, "prefix: '%s' %s", prefix ? prefix : "", why);
	gfam = router_parse_ip(via, gw);
	if (gfam == 0)
		return ep_err_set(err, "via: '%s' is not an IP address", via ? via : "");
	if (gfam != fam)
		return ep_err_set(err, "via: '%s' is IPv%d, prefix is IPv%d", via, gfam, fam);
	if (is_own(r, (uint8_t)fam, gw))
		return ep_err_set(err, "via: '%s' is an address of this router", via);
	route_key_make(&k, (uint8_t)fam, addr, plen);
	exists = route_lookup(r, &k, &old);
	if (exists && RT_KIND(old) != ROUTER_RT_STATIC)
		return ep_err_set(err, "prefix: '%s' is a %s route and cannot be replaced",
				  prefix, route_kind_name[RT_KIND(old)]);
	nh = nh_find(r, (uint8_t)fam, gw);
	if (exists && nh >= 0 && RT_NH(old) == (uint32_t)nh)
		return 0;               /* the same route again */
	if (nh < 0) {
		port = port_for(r, (uint8_t)fam, gw);
		if (port < 0)
			return ep_err_set(err, "via: '%s' is not on a connected subnet of any port",
					  via);
		nh = nh_create(r, (uint8_t)fam, gw, (uint16_t)port, err);
		if (nh < 0)
			return -1;
	}
	r->nhc[nh].refs++;
	if (route_install(r, (uint8_t)fam, addr, plen, ROUTER_RT_STATIC, (uint32_t)nh, err) < 0) {
		nh_put(r, (uint32_t)nh);
		return -1;
	}
	if (exists)
		nh_put(r, RT_NH(old));
	return 0;
}

int
router_route_del(struct router *r, const char *prefix, struct ep_err *err)
{
	uint8_t addr[16], plen;
	const char *why;
	struct route_key k;
	void *val;
	int fam;

	fam = router_parse_prefix(prefix, addr, &plen, true, &why);
	if (fam == 0)
		return ep_err_set(err, "prefix: '%s' %s", prefix ? prefix : "", why);
	route_key_make(&k, (uint8_t)fam, addr, plen);
	if (!route_lookup(r, &k, &val))
		return ep_err_set(err, "prefix: no route '%s'", prefix);
	if (RT_KIND(val) != ROUTER_RT_STATIC)
		return ep_err_set(err, "prefix: '%s' is a %s route; %s", prefix,
				  route_kind_name[RT_KIND(val)],
				  RT_KIND(val) == ROUTER_RT_NEIGH ? "use neigh-del" :
				  "it follows the port addresses");
	route_remove(r, &k);
	nh_put(r, RT_NH(val));
	return 0;
}

/* ---- neighbours ---- */

int
router_neigh_add(struct router *r, const char *ip_s, const char *mac_s, const char *dev,
		 struct ep_err *err)
{
	uint8_t ip[16];
	struct rte_ether_addr mac;
	struct route_key k;
	struct router_nhc *c;
	void *val;
	int fam, port, nh;
	bool created = false;

	fam = router_parse_ip(ip_s, ip);
	if (fam == 0)
		return ep_err_set(err, "ip: '%s' is not an IP address", ip_s ? ip_s : "");
	if (mac_s == NULL || ep_parse_mac(mac_s, &mac) < 0)
		return ep_err_set(err, "mac: '%s' is not a MAC address", mac_s ? mac_s : "");
	if (rte_is_multicast_ether_addr(&mac) || rte_is_zero_ether_addr(&mac))
		return ep_err_set(err, "mac: '%s' is not a unicast MAC address", mac_s);
	if (is_own(r, (uint8_t)fam, ip))
		return ep_err_set(err, "ip: '%s' is an address of this router", ip_s);
	if (dev != NULL && dev[0] != '\0') {
		struct ep_port *p = ep_port_by_name(r->e, dev);

		if (p == NULL)
			return ep_err_set(err, "dev: no port '%s'", dev);
		port = p->index;
	} else {
		port = port_for(r, (uint8_t)fam, ip);
		if (port < 0)
			return ep_err_set(err, "ip: '%s' is not on a connected subnet of any port "
					  "(name one with dev)", ip_s);
	}
	route_key_make(&k, (uint8_t)fam, ip, fam == 4 ? 32 : 128);
	if (route_lookup(r, &k, &val) && RT_KIND(val) == ROUTER_RT_STATIC)
		return ep_err_set(err, "ip: a static route to '%s' exists; delete it first",
				  ip_s);
	nh = nh_find(r, (uint8_t)fam, ip);
	if (nh < 0) {
		nh = nh_create(r, (uint8_t)fam, ip, (uint16_t)port, err);
		if (nh < 0)
			return -1;
		created = true;
	}
	c = &r->nhc[nh];
	if (!c->neigh) {
		c->refs++;
		if (route_install(r, (uint8_t)fam, ip, fam == 4 ? 32 : 128, ROUTER_RT_NEIGH,
				  (uint32_t)nh, err) < 0) {
			nh_put(r, (uint32_t)nh);
			return -1;
		}
	}
	c->neigh = true;
	c->mac = mac;
	c->port = (uint16_t)port;
	if (nh_publish(r, (uint32_t)nh, err) < 0) {
		/* Out of memory: undo to the state before the call. */
		c->neigh = false;
		if (route_lookup(r, &k, &val) && RT_KIND(val) == ROUTER_RT_NEIGH) {
			route_remove(r, &k);
			nh_put(r, (uint32_t)nh);
		} else if (created) {
			nh_put(r, (uint32_t)nh);
		}
		return -1;
	}
	return 0;
}

int
router_neigh_del(struct router *r, const char *ip_s, struct ep_err *err)
{
	uint8_t ip[16];
	struct route_key k;
	struct router_nhc *c;
	void *val;
	int fam, nh;

	fam = router_parse_ip(ip_s, ip);
	if (fam == 0)
		return ep_err_set(err, "ip: '%s' is not an IP address", ip_s ? ip_s : "");
	nh = nh_find(r, (uint8_t)fam, ip);
	if (nh < 0 || !r->nhc[nh].neigh)
		return ep_err_set(err, "ip: no neighbour '%s'", ip_s);
	c = &r->nhc[nh];
	route_key_make(&k, (uint8_t)fam, ip, fam == 4 ? 32 : 128);
	if (route_lookup(r, &k, &val) && RT_KIND(val) == ROUTER_RT_NEIGH)
		route_remove(r, &k);
	c->neigh = false;
	/* Routes via this address stay, unresolved, until a MAC comes back. */
	nh_publish(r, (uint32_t)nh, NULL);
	nh_put(r, (uint32_t)nh);
	return 0;
}

/* ---- create / free ---- */

static int
add_port_routes(struct router *r, struct ep_err *err)
{
	struct route_key k;
	void *val;

	for (int i = 0; i < r->e->n_ports; i++) {
		const struct ep_port *p = &r->e->ports[i];

		for (int a = 0; a < p->n_v4 + p->n_v6; a++) {
			uint8_t fam = a < p->n_v4 ? 4 : 6;
			uint8_t host[16] = {0}, net[16], plen;

			if (fam == 4) {
				memcpy(host, &p->v4[a].addr, 4);
				plen = p->v4[a].plen;
			} else {
				memcpy(host, p->v6[a - p->n_v4].addr, 16);
				plen = p->v6[a - p->n_v4].plen;
			}
			if (route_install(r, fam, host, fam == 4 ? 32 : 128, ROUTER_RT_LOCAL,
					  ROUTER_NH_LOCAL, err) < 0)
				return -1;
			memcpy(net, host, 16);
			for (unsigned int bit = plen; bit < (fam == 4 ? 32u : 128u); bit++)
				net[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
			route_key_make(&k, fam, net, plen);
			if (plen == (fam == 4 ? 32 : 128) || route_lookup(r, &k, &val))
				continue;   /* a host address, or the subnet is on another port too */
			if (route_install(r, fam, net, plen, ROUTER_RT_CONNECTED, ROUTER_NH_GLEAN,
					  err) < 0)
				return -1;
		}
	}
	return 0;
}

struct router *
router_create(struct ep_engine *e, const struct router_params *p, struct ep_err *err)
{
	struct router *r = rte_zmalloc("ep_router", sizeof(*r), RTE_CACHE_LINE_SIZE);
	uint32_t seq = __atomic_fetch_add(&name_seq, 1, __ATOMIC_RELAXED);
	uint32_t extra = 2u * EP_MAX_PORTS * EP_MAX_ADDRS + p->max_nexthops;
	char name[RTE_HASH_NAMESIZE];

	if (r == NULL) {
		ep_err_set(err, "router: out of memory");
		return NULL;
	}
	r->e = e;
	r->p = *p;
	r->nh_static[ROUTER_NH_LOCAL].kind = ROUTER_NH_IS_LOCAL;
	r->nh_static[ROUTER_NH_GLEAN].kind = ROUTER_NH_UNRESOLVED;
	r->nh_static[ROUTER_NH_FIRST].kind = ROUTER_NH_UNRESOLVED;

	snprintf(name, sizeof(name), "ep_rt4_%u", seq);
	r->lpm4 = rte_lpm_create(name, SOCKET_ID_ANY, &(struct rte_lpm_config){
		.max_rules = p->max_routes4 + extra, .number_tbl8s = p->lpm4_tbl8s });
	if (r->lpm4 == NULL)
		goto fail_dpdk;
	if (e->qsbr != NULL) {
		struct rte_lpm_rcu_config rc = { .v = e->qsbr, .mode = RTE_LPM_QSBR_MODE_DQ };

		if (rte_lpm_rcu_qsbr_add(r->lpm4, &rc) != 0)
			goto fail_dpdk;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "ep_rt6_%u_%d", seq, i);
		r->lpm6[i] = rte_lpm6_create(name, SOCKET_ID_ANY, &(struct rte_lpm6_config){
			.max_rules = p->max_routes6 + extra, .number_tbl8s = p->lpm6_tbl8s });
		if (r->lpm6[i] == NULL)
			goto fail_dpdk;
	}
	r->lpm6_cur = r->lpm6[0];
	r->default_nh[0] = ROUTER_NO_DEFAULT;
	r->default_nh[1] = ROUTER_NO_DEFAULT;

	r->nh = rte_zmalloc("ep_router_nhp", sizeof(r->nh[0]) * p->max_nexthops,
			    RTE_CACHE_LINE_SIZE);
	r->nhc = rte_zmalloc("ep_router_nhc", sizeof(r->nhc[0]) * p->max_nexthops, 0);
	r->nh_free = rte_zmalloc("ep_router_nhf", sizeof(uint32_t) * p->max_nexthops, 0);
	if (r->nh == NULL || r->nhc == NULL || r->nh_free == NULL) {
		ep_err_set(err, "router: out of memory for %u next hops", p->max_nexthops);
		goto fail;
	}
	r->nh[ROUTER_NH_LOCAL] = &r->nh_static[ROUTER_NH_LOCAL];
	r->nh[ROUTER_NH_GLEAN] = &r->nh_static[ROUTER_NH_GLEAN];
	for (uint32_t i = ROUTER_NH_FIRST; i < p->max_nexthops; i++)
		r->nh[i] = &r->nh_static[ROUTER_NH_FIRST];
	for (uint32_t i = p->max_nexthops; i > ROUTER_NH_FIRST; i--)
		r->nh_free[r->n_nh_free++] = i - 1;

	snprintf(name, sizeof(name), "ep_nh_%u", seq);
	r->nh_by_ip = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = RTE_MAX(p->max_nexthops, 64u),
		.key_len = sizeof(struct nh_key), .hash_func = rte_jhash,
		.socket_id = SOCKET_ID_ANY, .extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });
	snprintf(name, sizeof(name), "ep_rt_%u", seq);
	r->routes = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = p->max_routes4 + p->max_routes6 + extra,
		.key_len = sizeof(struct route_key), .hash_func = rte_jhash,
		.socket_id = SOCKET_ID_ANY, .extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });
	if (r->nh_by_ip == NULL || r->routes == NULL)
		goto fail_dpdk;
	if (add_port_routes(r, err) < 0)
		goto fail;
	if (router_acl_commit(r, NULL, 0, false, err) < 0)
		goto fail;
	return r;

fail_dpdk:
	ep_err_set(err, "router: creating tables failed: %s (sizes: max_routes4 %u, "
		   "max_routes6 %u, max_nexthops %u)", rte_strerror(rte_errno),
		   p->max_routes4, p->max_routes6, p->max_nexthops);
fail:
	router_free(r);
	return NULL;
}

void
router_free(struct router *r)
{
	if (r == NULL)
		return;
	if (router_global == r)
		router_global = NULL;
	for (uint32_t i = 0; r->nh != NULL && i < r->p.max_nexthops; i++)
		if (r->nh[i] != NULL && !nh_is_static(r, r->nh[i]))
			rte_free(r->nh[i]);
	router_acl_free(r->acl);
	rte_free(r->rules);
	rte_hash_free(r->routes);
	rte_hash_free(r->nh_by_ip);
	rte_free(r->nh_free);
	rte_free(r->nhc);
	rte_free(r->nh);
	rte_lpm6_free(r->lpm6[0]);
	rte_lpm6_free(r->lpm6[1]);
	rte_lpm_free(r->lpm4);
	rte_free(r);
}
