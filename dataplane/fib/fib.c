/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FIB instances and their routes: rte_lpm in place (RCU-QSBR), rte_lpm6
 * double-buffered, one word per family for the default route, and the
 * route store (rte_hash) that remembers each route's kind and next hop.
 * Control thread only; ep_fib.h says how each change reaches the workers.
 */
/* rte_lpm_rcu_qsbr_add is still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_rcu.h"
#include "fib_private.h"

const char *const ep_fib_route_kind_name[4] = {
	[EP_FIB_RT_STATIC] = "static", [EP_FIB_RT_NEIGH] = "neighbour",
	[EP_FIB_RT_CONNECTED] = "connected", [EP_FIB_RT_LOCAL] = "local",
};

static uint32_t name_seq;          /* unique DPDK object names across instances */

void
ep_fib_params_default(struct ep_fib_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_routes4 = 131072;
	p->max_routes6 = 131072;
	p->lpm4_tbl8s = 8192;       /* 1 KiB each: routes longer than /24 */
	p->lpm6_tbl8s = 32768;      /* 1 KiB each, two tables */
	p->max_nexthops = 4096;
	p->neigh_learn = true;
	p->neigh_reachable_s = 30;  /* Linux's base_reachable_time */
	p->icmp_rate = 1000;        /* Linux's icmp_msgs_per_sec ... */
	p->icmp_burst = 50;         /* ... and icmp_msgs_burst */
}

/* ---- addresses of the engine's ports ---- */

static bool
fib_has_port(const struct ep_fib *fib, int i)
{
	return fib->p.ports == 0 || (fib->p.ports & (1u << i)) != 0;
}

int
ep_fib_port_for(const struct ep_fib *fib, uint8_t family, const uint8_t *ip)
{
	for (int i = 0; i < fib->e->n_ports; i++) {
		const struct ep_port *p = &fib->e->ports[i];

		if (!fib_has_port(fib, i))
			continue;
		for (int a = 0; family == 4 && a < p->n_v4; a++) {
			uint8_t net[16] = {0};

			memcpy(net, &p->v4[a].addr, 4);
			ep_prefix_clear_host(4, net, p->v4[a].plen);
			if (ep_prefix_contains(net, p->v4[a].plen, ip))
				return i;
		}
		for (int a = 0; family == 6 && a < p->n_v6; a++) {
			uint8_t net[16];

			memcpy(net, p->v6[a].addr, 16);
			ep_prefix_clear_host(6, net, p->v6[a].plen);
			if (ep_prefix_contains(net, p->v6[a].plen, ip))
				return i;
		}
	}
	return -1;
}

bool
ep_fib_is_own(const struct ep_fib *fib, uint8_t family, const uint8_t *ip)
{
	for (int i = 0; i < fib->e->n_ports; i++) {
		const struct ep_port *p = &fib->e->ports[i];

		if (!fib_has_port(fib, i))
			continue;
		for (int a = 0; family == 4 && a < p->n_v4; a++)
			if (memcmp(&p->v4[a].addr, ip, 4) == 0)
				return true;
		for (int a = 0; family == 6 && a < p->n_v6; a++)
			if (memcmp(p->v6[a].addr, ip, 16) == 0)
				return true;
	}
	return false;
}

/* ---- the LPM tables ---- */

/* /8 @p top's keep4 word and its keep4b byte, each a release store (a
 * reader reads one of the two): before a route that needs them is added,
 * after the last one that needed them is deleted. */
static void
keep4_store(struct ep_fib *fib, uint32_t top, uint32_t word)
{
	uint8_t b = (uint8_t)(((word & 0x00ffffffu) != 0 ? EP_FIB_KEEP4B_LONG : 0) |
			      ((word & EP_FIB_KEEP4_MARTIAN) != 0 ? EP_FIB_KEEP4B_MARTIAN : 0));

	__atomic_store_n(&fib->keep4b[top], b, __ATOMIC_RELEASE);
	__atomic_store_n(&fib->keep4[top], word, __ATOMIC_RELEASE);
}

static int
lpm_set(struct ep_fib *fib, uint8_t family, const uint8_t *addr, uint8_t plen, uint32_t nh,
	struct ep_err *err)
{
	int rc;

	if (plen == 0) {
		/* The default route: one word, read by the lookup on a miss. */
		__atomic_store_n(&fib->default_nh[family == 4 ? 0 : 1], nh, __ATOMIC_RELEASE);
		return 0;
	}
	if (family == 4) {
		uint32_t ip, h, was;
		bool longer;

		memcpy(&ip, addr, 4);
		h = rte_be_to_cpu_32(ip);
		/* The /8's first longer route: its addresses are looked up as
		 * they are from now on (ep_fib_addr4), before the route is in. */
		longer = plen > 8 && rte_lpm_is_rule_present(fib->lpm4, h, plen, &was) == 0;
		if (longer && fib->n_long4[h >> 24]++ == 0)
			keep4_store(fib, h >> 24, 0x00ffffffu | ep_fib_keep4_base(h >> 24));
		/* In place: readers see either the old or the new entry; tbl8
		 * groups it frees are reclaimed through RCU-QSBR. */
		rc = rte_lpm_add(fib->lpm4, h, plen, nh);
		if (rc < 0 && longer && --fib->n_long4[h >> 24] == 0)
			keep4_store(fib, h >> 24, ep_fib_keep4_base(h >> 24));
	} else {
		struct rte_lpm6 *cur = fib->lpm6_cur;
		struct rte_lpm6 *spare = cur == fib->lpm6[0] ? fib->lpm6[1] : fib->lpm6[0];

		rc = rte_lpm6_add(spare, addr, plen, nh);
		if (rc == 0) {
			ep_rcu_publish(&fib->lpm6_cur, spare);
			ep_rcu_synchronize(fib->e);
			/* Both copies hold the same rules and have the same size,
			 * so this cannot run out of room where the first did not. */
			rc = rte_lpm6_add(cur, addr, plen, nh);
		}
	}
	if (rc < 0)
		return ep_err_set(err, "prefix: route table full (%s); raise %s", strerror(-rc),
				  family == 4 ? "max_routes4/lpm4_tbl8s" : "max_routes6/lpm6_tbl8s");
	return 0;
}

static void
lpm_del(struct ep_fib *fib, uint8_t family, const uint8_t *addr, uint8_t plen)
{
	if (plen == 0) {
		__atomic_store_n(&fib->default_nh[family == 4 ? 0 : 1], EP_FIB_NO_ROUTE,
				 __ATOMIC_RELEASE);
		return;
	}
	if (family == 4) {
		uint32_t ip;

		memcpy(&ip, addr, 4);
		ip = rte_be_to_cpu_32(ip);
		/* The /8's last longer route gone: one fixed address again. */
		if (rte_lpm_delete(fib->lpm4, ip, plen) == 0 && plen > 8 &&
		    --fib->n_long4[ip >> 24] == 0)
			keep4_store(fib, ip >> 24, ep_fib_keep4_base(ip >> 24));
	} else {
		/* rte_lpm6_delete rebuilds the table from its rule list: never on
		 * a table a worker reads. */
		struct rte_lpm6 *cur = fib->lpm6_cur;
		struct rte_lpm6 *spare = cur == fib->lpm6[0] ? fib->lpm6[1] : fib->lpm6[0];

		rte_lpm6_delete(spare, addr, plen);
		ep_rcu_publish(&fib->lpm6_cur, spare);
		ep_rcu_synchronize(fib->e);
		rte_lpm6_delete(cur, addr, plen);
	}
}

/* ---- the route store ---- */

void
fib_route_key(struct route_key *k, uint8_t family, const uint8_t *addr, uint8_t plen)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->plen = plen;
	memcpy(k->addr, addr, family == 4 ? 4 : 16);
}

bool
fib_route_lookup(struct ep_fib *fib, const struct route_key *k, void **val)
{
	return rte_hash_lookup_data(fib->routes, k, val) >= 0;
}

/* A route about to change, into the change log. */
static void
log_change(struct ep_fib *fib, const struct route_key *k)
{
	fib->changes[fib->route_seq++ % EP_FIB_CHANGES] = *k;
}

bool
ep_fib_route_changes_kept(const struct ep_fib *fib, uint64_t since)
{
	return since <= fib->route_seq && fib->route_seq - since <= EP_FIB_CHANGES;
}

int
ep_fib_route_changes(struct ep_fib *fib, uint64_t since,
		     int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen, bool present,
			       enum ep_fib_route_kind kind, uint32_t nh, void *arg),
		     void *arg)
{
	for (uint64_t s = since; s < fib->route_seq; s++) {
		const struct route_key *k = &fib->changes[s % EP_FIB_CHANGES];
		void *val = NULL;
		bool present = fib_route_lookup(fib, k, &val);
		int rc = fn(k->family, k->addr, k->plen, present, present ? RT_KIND(val) : 0,
			    present ? RT_NH(val) : 0, arg);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Install a route and remember it; @p kind / @p nh into both. */
int
fib_route_install(struct ep_fib *fib, uint8_t family, const uint8_t *addr, uint8_t plen,
		  enum ep_fib_route_kind kind, uint32_t nh, struct ep_err *err)
{
	struct route_key k;
	void *old;
	bool exists;

	fib->gen++;
	fib_route_key(&k, family, addr, plen);
	log_change(fib, &k);
	exists = fib_route_lookup(fib, &k, &old);
	if (!exists && (family == 4 ? fib->n_routes4 >= fib->p.max_routes4 :
			fib->n_routes6 >= fib->p.max_routes6))
		return ep_err_set(err, "prefix: route table full (%u routes); raise %s",
				  family == 4 ? fib->p.max_routes4 : fib->p.max_routes6,
				  family == 4 ? "max_routes4" : "max_routes6");
	if (lpm_set(fib, family, addr, plen, nh, err) < 0)
		return -1;
	if (rte_hash_add_key_data(fib->routes, &k, RT_VAL(kind, nh)) < 0) {
		/* Keep the LPM and the route store in step. */
		if (exists)
			lpm_set(fib, family, addr, plen, RT_NH(old), NULL);
		else
			lpm_del(fib, family, addr, plen);
		return ep_err_set(err, "prefix: route store full");
	}
	if (!exists) {
		if (family == 4)
			fib->n_routes4++;
		else
			fib->n_routes6++;
	}
	return 0;
}

void
fib_route_remove(struct ep_fib *fib, const struct route_key *k)
{
	fib->gen++;
	log_change(fib, k);
	lpm_del(fib, k->family, k->addr, k->plen);
	rte_hash_del_key(fib->routes, k);
	if (k->family == 4)
		fib->n_routes4--;
	else
		fib->n_routes6--;
}

int
ep_fib_route_each(struct ep_fib *fib,
		  int (*fn)(uint8_t family, const uint8_t *prefix, uint8_t plen,
			    enum ep_fib_route_kind kind, uint32_t nh, void *arg),
		  void *arg)
{
	const void *key;
	void *val;
	uint32_t it = 0;
	int rc;

	while (rte_hash_iterate(fib->routes, &key, &val, &it) >= 0) {
		const struct route_key *k = key;

		rc = fn(k->family, k->addr, k->plen, RT_KIND(val), RT_NH(val), arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
ep_fib_route_add(struct ep_fib *fib, const char *prefix, const char *via, struct ep_err *err)
{
	uint8_t addr[16], gw[16], plen;
	struct route_key k;
	void *old;
	bool exists;
	int fam, gfam, nh, port;

	fam = ep_prefix_parse(prefix, addr, &plen, 0, err);
	if (fam < 0)
		return ep_err_prefix(err, "prefix: ");
	gfam = ep_addr_parse(via, gw);
	if (gfam == 0)
		return ep_err_set(err, "via: '%s' is not an IP address", via ? via : "");
	if (gfam != fam)
		return ep_err_set(err, "via: '%s' is IPv%d, prefix is IPv%d", via, gfam, fam);
	if (ep_fib_is_own(fib, (uint8_t)fam, gw))
		return ep_err_set(err, "via: '%s' is an address of this router", via);
	fib_route_key(&k, (uint8_t)fam, addr, plen);
	exists = fib_route_lookup(fib, &k, &old);
	if (exists && RT_KIND(old) != EP_FIB_RT_STATIC)
		return ep_err_set(err, "prefix: '%s' is a %s route and cannot be replaced",
				  prefix, ep_fib_route_kind_name[RT_KIND(old)]);
	nh = fib_nh_find(fib, (uint8_t)fam, gw);
	if (exists && nh >= 0 && RT_NH(old) == (uint32_t)nh)
		return 0;               /* the same route again */
	if (nh < 0) {
		port = ep_fib_port_for(fib, (uint8_t)fam, gw);
		if (port < 0)
			return ep_err_set(err, "via: '%s' is not on a connected subnet of any port",
					  via);
		nh = fib_nh_create(fib, (uint8_t)fam, gw, (uint16_t)port, err);
		if (nh < 0)
			return -1;
	}
	fib->nhc[nh].refs++;
	if (fib_route_install(fib, (uint8_t)fam, addr, plen, EP_FIB_RT_STATIC, (uint32_t)nh,
			      err) < 0) {
		fib_nh_put(fib, (uint32_t)nh);
		return -1;
	}
	if (exists)
		fib_nh_put(fib, RT_NH(old));
	return 0;
}

int
ep_fib_route_del(struct ep_fib *fib, const char *prefix, struct ep_err *err)
{
	uint8_t addr[16], plen;
	struct route_key k;
	void *val;
	int fam;

	fam = ep_prefix_parse(prefix, addr, &plen, 0, err);
	if (fam < 0)
		return ep_err_prefix(err, "prefix: ");
	fib_route_key(&k, (uint8_t)fam, addr, plen);
	if (!fib_route_lookup(fib, &k, &val))
		return ep_err_set(err, "prefix: no route '%s'", prefix);
	if (RT_KIND(val) != EP_FIB_RT_STATIC)
		return ep_err_set(err, "prefix: '%s' is a %s route; %s", prefix,
				  ep_fib_route_kind_name[RT_KIND(val)],
				  RT_KIND(val) == EP_FIB_RT_NEIGH ? "use neigh-del" :
				  "it follows the port addresses");
	fib_route_remove(fib, &k);
	fib_nh_put(fib, RT_NH(val));
	return 0;
}

/* ---- create / free ---- */

static int
add_port_routes(struct ep_fib *fib, struct ep_err *err)
{
	struct route_key k;
	void *val;

	for (int i = 0; i < fib->e->n_ports; i++) {
		const struct ep_port *p = &fib->e->ports[i];

		if (!fib_has_port(fib, i))
			continue;
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
			if (fib_route_install(fib, fam, host, (uint8_t)ep_addr_bits(fam),
					      EP_FIB_RT_LOCAL, EP_FIB_NH_LOCAL, err) < 0)
				return -1;
			memcpy(net, host, 16);
			ep_prefix_clear_host(fam, net, plen);
			fib_route_key(&k, fam, net, plen);
			if (plen == ep_addr_bits(fam) || fib_route_lookup(fib, &k, &val))
				continue;   /* a host address, or the subnet is on another port too */
			if (fib_route_install(fib, fam, net, plen, EP_FIB_RT_CONNECTED,
					      EP_FIB_NH_GLEAN, err) < 0)
				return -1;
		}
	}
	return 0;
}

struct ep_fib *
ep_fib_find(struct ep_engine *e, const char *name)
{
	return ep_instance_find(e, EP_FIB_KIND, name);
}

struct ep_fib *
ep_fib_next(struct ep_engine *e, struct ep_fib *prev)
{
	return ep_instance_next(e, EP_FIB_KIND, prev);
}

static void
tick(void *arg, uint64_t now)
{
	ep_fib_tick(arg, now);
}

uint64_t
ep_fib_memory(const struct ep_fib_params *p)
{
	/* What ep_fib_create() allocates, by the tables' documented layouts:
	 * rte_lpm: a tbl24 of 2^24 4-byte entries (64 MiB, whatever the
	 * routes), 256 4-byte entries per tbl8 group, 8 bytes per rule;
	 * rte_lpm6 (two, double-buffered): the same tbl24 and tbl8 groups, a
	 * tbl8 pool and headers, rules in an rte_hash of 17-byte keys. */
	uint64_t extra = 2ull * EP_MAX_PORTS * EP_MAX_ADDRS + p->max_nexthops;
	uint64_t tbl24 = (1ull << 24) * 4;
	uint64_t lpm4 = tbl24 + (uint64_t)p->lpm4_tbl8s * 256 * 4 + (p->max_routes4 + extra) * 8;
	uint64_t lpm6 = tbl24 + (uint64_t)p->lpm6_tbl8s * (256 * 4 + 4 + 8) +
			ep_mem_hash_bytes((uint32_t)(p->max_routes6 + extra), 17, false);
	uint64_t nh = (uint64_t)p->max_nexthops *
		      (sizeof(struct ep_fib_nh *) + sizeof(struct ep_fib_nhc) + sizeof(uint32_t));
	uint64_t hashes = ep_mem_hash_bytes(RTE_MAX(p->max_nexthops, 64u), sizeof(struct nh_key),
					    true) +
			  ep_mem_hash_bytes((uint32_t)(p->max_routes4 + p->max_routes6 + extra),
					    sizeof(struct route_key), true);

	if (p->neigh_learn)
		hashes += ep_mem_hash_bytes(1024, sizeof(struct nh_key), true) +
			  1024 * sizeof(struct ep_fib_event);
	return lpm4 + 2 * lpm6 + nh + hashes;
}

uint64_t
ep_fib_worker_memory(void)
{
	/* Its context and the indirect-mbuf pool of IPv4 fragmentation
	 * (fib_icmp.c). */
	return sizeof(struct ep_fib_worker) + ep_mem_pktmbuf_pool_bytes(1023, 0, 0);
}

struct ep_fib *
ep_fib_create(struct ep_engine *e, const char *name, const struct ep_fib_params *p,
	      struct ep_err *err)
{
	uint32_t seq = __atomic_fetch_add(&name_seq, 1, __ATOMIC_RELAXED);
	uint32_t extra = 2u * EP_MAX_PORTS * EP_MAX_ADDRS + p->max_nexthops;
	char dname[RTE_HASH_NAMESIZE];
	struct ep_fib *fib;

	if (name == NULL || name[0] == '\0' || strlen(name) >= EP_FIB_NAME_LEN) {
		ep_err_set(err, "fib: bad instance name '%s'", name ? name : "");
		return NULL;
	}
	if (ep_fib_find(e, name) != NULL) {
		ep_err_set(err, "fib: a FIB named '%s' exists", name);
		return NULL;
	}
	fib = rte_zmalloc("ep_fib", sizeof(*fib), RTE_CACHE_LINE_SIZE);
	if (fib == NULL) {
		ep_err_set(err, "fib %s: out of memory", name);
		return NULL;
	}
	snprintf(fib->name, sizeof(fib->name), "%s", name);
	fib->e = e;
	fib->p = *p;
	fib->nh_static[EP_FIB_NH_LOCAL].kind = EP_FIB_NH_IS_LOCAL;
	fib->nh_static[EP_FIB_NH_GLEAN].kind = EP_FIB_NH_UNRESOLVED;
	fib->nh_static[EP_FIB_NH_FIRST].kind = EP_FIB_NH_UNRESOLVED;

	snprintf(dname, sizeof(dname), "ep_rt4_%u", seq);
	fib->lpm4 = rte_lpm_create(dname, SOCKET_ID_ANY, &(struct rte_lpm_config){
		.max_rules = p->max_routes4 + extra, .number_tbl8s = p->lpm4_tbl8s });
	if (fib->lpm4 == NULL)
		goto fail_dpdk;
	if (e->qsbr != NULL) {
		struct rte_lpm_rcu_config rc = { .v = e->qsbr, .mode = RTE_LPM_QSBR_MODE_DQ };

		if (rte_lpm_rcu_qsbr_add(fib->lpm4, &rc) != 0)
			goto fail_dpdk;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(dname, sizeof(dname), "ep_rt6_%u_%d", seq, i);
		fib->lpm6[i] = rte_lpm6_create(dname, SOCKET_ID_ANY, &(struct rte_lpm6_config){
			.max_rules = p->max_routes6 + extra, .number_tbl8s = p->lpm6_tbl8s });
		if (fib->lpm6[i] == NULL)
			goto fail_dpdk;
	}
	fib->lpm6_cur = fib->lpm6[0];
	fib->default_nh[0] = EP_FIB_NO_ROUTE;
	fib->default_nh[1] = EP_FIB_NO_ROUTE;
	for (uint32_t top = 0; top < 256; top++)
		keep4_store(fib, top, ep_fib_keep4_base(top));

	fib->nh = rte_zmalloc("ep_fib_nhp", sizeof(fib->nh[0]) * p->max_nexthops,
			      RTE_CACHE_LINE_SIZE);
	fib->nhc = rte_zmalloc("ep_fib_nhc", sizeof(fib->nhc[0]) * p->max_nexthops, 0);
	fib->nh_free = rte_zmalloc("ep_fib_nhf", sizeof(uint32_t) * p->max_nexthops, 0);
	fib->changes = rte_zmalloc("ep_fib_chg", sizeof(fib->changes[0]) * EP_FIB_CHANGES, 0);
	if (fib->nh == NULL || fib->nhc == NULL || fib->nh_free == NULL || fib->changes == NULL) {
		ep_err_set(err, "fib %s: out of memory for %u next hops", name, p->max_nexthops);
		goto fail;
	}
	fib->nh[EP_FIB_NH_LOCAL] = &fib->nh_static[EP_FIB_NH_LOCAL];
	fib->nh[EP_FIB_NH_GLEAN] = &fib->nh_static[EP_FIB_NH_GLEAN];
	for (uint32_t i = EP_FIB_NH_FIRST; i < p->max_nexthops; i++)
		fib->nh[i] = &fib->nh_static[EP_FIB_NH_FIRST];
	for (uint32_t i = p->max_nexthops; i > EP_FIB_NH_FIRST; i--)
		fib->nh_free[fib->n_nh_free++] = i - 1;

	snprintf(dname, sizeof(dname), "ep_nh_%u", seq);
	fib->nh_by_ip = rte_hash_create(&(struct rte_hash_parameters){
		.name = dname, .entries = RTE_MAX(p->max_nexthops, 64u),
		.key_len = sizeof(struct nh_key), .hash_func = rte_jhash,
		.socket_id = SOCKET_ID_ANY, .extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });
	snprintf(dname, sizeof(dname), "ep_rt_%u", seq);
	fib->routes = rte_hash_create(&(struct rte_hash_parameters){
		.name = dname, .entries = p->max_routes4 + p->max_routes6 + extra,
		.key_len = sizeof(struct route_key), .hash_func = rte_jhash,
		.socket_id = SOCKET_ID_ANY, .extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });
	if (fib->nh_by_ip == NULL || fib->routes == NULL)
		goto fail_dpdk;
	if (p->neigh_learn) {
		snprintf(dname, sizeof(dname), "ep_ask_%u", seq);
		fib->asked = rte_hash_create(&(struct rte_hash_parameters){
			.name = dname, .entries = 1024, .key_len = sizeof(struct nh_key),
			.hash_func = rte_jhash, .socket_id = SOCKET_ID_ANY,
			.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });
		snprintf(dname, sizeof(dname), "ep_fev_%u", seq);
		/* Several workers post; the control thread drains. */
		fib->events = rte_ring_create_elem(dname, sizeof(struct ep_fib_event), 1024,
						   SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (fib->asked == NULL || fib->events == NULL)
			goto fail_dpdk;
	}
	if (add_port_routes(fib, err) < 0)
		goto fail;
	if (ep_engine_tick_add(e, tick, fib) < 0) {
		ep_err_set(err, "fib %s: out of memory", name);
		goto fail;
	}
	if (ep_instance_add(e, EP_FIB_KIND, name, fib, err) < 0)
		goto fail;
	return fib;

fail_dpdk:
	ep_err_set(err, "fib %s: creating tables failed: %s (sizes: max_routes4 %u, "
		   "max_routes6 %u, max_nexthops %u)", name, rte_strerror(rte_errno),
		   p->max_routes4, p->max_routes6, p->max_nexthops);
fail:
	ep_fib_free(fib);
	return NULL;
}

void
ep_fib_free(struct ep_fib *fib)
{
	if (fib == NULL)
		return;
	ep_instance_del(fib->e, fib);
	ep_engine_tick_del(fib->e, tick, fib);
	for (uint32_t i = 0; fib->nh != NULL && i < fib->p.max_nexthops; i++)
		if (fib->nh[i] != NULL && !fib_nh_is_static(fib, fib->nh[i]))
			rte_free(fib->nh[i]);
	rte_ring_free(fib->events);
	rte_hash_free(fib->asked);
	rte_hash_free(fib->routes);
	rte_hash_free(fib->nh_by_ip);
	rte_free(fib->changes);
	rte_free(fib->nh_free);
	rte_free(fib->nhc);
	rte_free(fib->nh);
	rte_lpm6_free(fib->lpm6[0]);
	rte_lpm6_free(fib->lpm6[1]);
	rte_lpm_free(fib->lpm4);
	rte_free(fib);
}

/* ---- configuration ---- */

int
ep_fib_params_from_config(struct ep_cfg *cfg, struct ep_cfg_section *s, bool sizing,
			  struct ep_fib_params *p, struct ep_err *err)
{
	static const struct { const char *key; size_t off; uint64_t min, max; } keys[] = {
		{ "max_routes4", offsetof(struct ep_fib_params, max_routes4), 1, 1u << 24 },
		{ "max_routes6", offsetof(struct ep_fib_params, max_routes6), 1, 1u << 24 },
		{ "lpm4_tbl8s", offsetof(struct ep_fib_params, lpm4_tbl8s), 1, 1u << 24 },
		{ "lpm6_tbl8s", offsetof(struct ep_fib_params, lpm6_tbl8s), 1, 1u << 24 },
		/* rte_lpm6 next hops are 21 bits wide. */
		{ "max_nexthops", offsetof(struct ep_fib_params, max_nexthops), 8, 1u << 21 },
	};
	const struct ep_cfg_kv *kv;
	uint64_t v;

	if (s == NULL)
		return 0;
	for (size_t i = 0; sizing && i < RTE_DIM(keys); i++) {
		uint32_t *f = (uint32_t *)((char *)p + keys[i].off);

		if (ep_cfg_u64(cfg, s, keys[i].key, *f, keys[i].min, keys[i].max, &v, err) < 0)
			return -1;
		*f = (uint32_t)v;
	}
	kv = ep_cfg_get(cfg, s, "neigh_learn", err);
	if (kv != NULL) {
		if (strcmp(kv->val, "on") != 0 && strcmp(kv->val, "off") != 0)
			return ep_cfg_error(cfg, kv, err, "'%s' is not on or off", kv->val);
		p->neigh_learn = kv->val[1] == 'n';
	}
	if (ep_cfg_u64(cfg, s, "neigh_reachable", p->neigh_reachable_s, 1, 86400, &v, err) < 0)
		return -1;
	p->neigh_reachable_s = (uint32_t)v;
	if (ep_cfg_u64(cfg, s, "icmp_rate", p->icmp_rate, 0, 1000000, &v, err) < 0)
		return -1;
	p->icmp_rate = (uint32_t)v;
	return 0;
}

/* Split "a b c ..." in place into at most @p max words. */
static int
split(char *s, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = t;
	}
	return n;
}

static int
neighbor_line(void *arg, char *line, struct ep_err *err)
{
	char *w[5];
	int n = split(line, w, 4);

	if (n == 2)
		return ep_fib_neigh_add(arg, w[0], w[1], NULL, err);
	if (n == 4 && strcmp(w[2], "dev") == 0)
		return ep_fib_neigh_add(arg, w[0], w[1], w[3], err);
	return ep_err_set(err, "expected '<ip> <mac> [dev <port>]'");
}

static int
route_line(void *arg, char *line, struct ep_err *err)
{
	char *w[4];
	int n = split(line, w, 3);

	if (n != 3 || strcmp(w[1], "via") != 0)
		return ep_err_set(err, "expected '<prefix> via <gateway>'");
	return ep_fib_route_add(arg, w[0], w[2], err);
}

/* route_file lines (ep_cfg_side_file strips comments and blanks). */
static int
route_file_line(void *arg, char *line, int lineno, struct ep_err *err)
{
	(void)lineno;
	return route_line(arg, line, err);
}

struct each_ctx {
	struct ep_fib *fib;
	struct ep_cfg *cfg;
	struct ep_err *err;
	int (*fn)(void *arg, char *line, struct ep_err *err);
};

static int
each_line(const struct ep_cfg_kv *kv, void *arg)
{
	struct each_ctx *c = arg;
	char buf[EP_SIDE_MAX_LINE + 1];

	snprintf(buf, sizeof(buf), "%s", kv->val);
	if (c->fn(c->fib, buf, c->err) < 0)
		return ep_cfg_error(c->cfg, kv, c->err, "%s", c->err->msg);
	return 0;
}

int
ep_fib_load_config(struct ep_fib *fib, struct ep_cfg *cfg, struct ep_cfg_section *s,
		   struct ep_err *err)
{
	struct each_ctx nc = { fib, cfg, err, neighbor_line }, rc = { fib, cfg, err, route_line };
	const struct ep_cfg_kv *kv;

	if (ep_cfg_each(s, "neighbor", each_line, &nc) != 0 ||
	    ep_cfg_each(s, "route", each_line, &rc) != 0)
		return -1;
	kv = ep_cfg_get(cfg, s, "route_file", err);
	if (kv != NULL && ep_cfg_side_file(cfg, kv, route_file_line, fib, err) != 0)
		return -1;
	return 0;
}
