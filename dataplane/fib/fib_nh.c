/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Next hops and neighbours of a FIB: the immutable entries workers read,
 * static neighbours from config and the control socket, and the learnt ones
 * the resolver installs and ages (ep_fib_tick).  Control thread only.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "ep_engine.h"
#include "ep_rcu.h"
#include "fib_private.h"

#define ASKED_VALID_S 3         /* an answer is solicited if asked this recently */
#define STALE_GRACE_S 5         /* a stale neighbour is re-asked this long, then removed */

bool
fib_nh_is_static(const struct ep_fib *fib, const struct ep_fib_nh *v)
{
	return v >= &fib->nh_static[0] && v <= &fib->nh_static[EP_FIB_NH_FIRST];
}

/*
 * Replace what workers read for next hop @p idx.  The new entry is whole
 * before its pointer is published; the old one is freed only after every
 * worker passed a quiescent state, so no reader ever sees a torn MAC or a
 * freed entry.
 */
int
fib_nh_publish(struct ep_fib *fib, uint32_t idx, struct ep_err *err)
{
	const struct ep_fib_nhc *c = &fib->nhc[idx];
	struct ep_fib_nh *v, *old = fib->nh[idx];

	fib->gen++;
	if (!c->in_use) {
		v = &fib->nh_static[EP_FIB_NH_FIRST];
	} else {
		v = rte_zmalloc("ep_fib_nh", sizeof(*v), 0);
		if (v == NULL)
			return ep_err_set(err, "out of memory for a next hop");
		v->port = c->port;
		v->mtu = fib->e->ports[c->port].mtu != 0 ? fib->e->ports[c->port].mtu :
							     RTE_ETHER_MTU;
		v->family = c->family;
		memcpy(v->ip, c->ip, 16);
		if (c->neigh) {
			memcpy(v->eth, &c->mac, 6);
			memcpy(v->eth + 6, &fib->e->ports[c->port].mac, 6);
			v->kind = c->stale ? EP_FIB_NH_STALE : EP_FIB_NH_FORWARD;
		} else {
			/* A gateway without a MAC yet: the worker asks for v->ip. */
			v->kind = EP_FIB_NH_UNRESOLVED;
		}
	}
	ep_rcu_publish(&fib->nh[idx], v);
	if (old != v && !fib_nh_is_static(fib, old)) {
		ep_rcu_synchronize(fib->e);
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

int
fib_nh_find(struct ep_fib *fib, uint8_t family, const uint8_t *ip)
{
	struct nh_key k;
	void *val;

	nh_key_make(&k, family, ip);
	if (rte_hash_lookup_data(fib->nh_by_ip, &k, &val) < 0)
		return -1;
	return (int)(uintptr_t)val;
}

int
fib_nh_create(struct ep_fib *fib, uint8_t family, const uint8_t *ip, uint16_t port,
	      struct ep_err *err)
{
	struct ep_fib_nhc *c;
	struct nh_key k;
	uint32_t idx;

	if (fib->n_nh_free == 0)
		return ep_err_set(err, "next-hop table full (%u); raise max_nexthops",
				  fib->p.max_nexthops);
	idx = fib->nh_free[fib->n_nh_free - 1];
	nh_key_make(&k, family, ip);
	if (rte_hash_add_key_data(fib->nh_by_ip, &k, (void *)(uintptr_t)idx) < 0)
		return ep_err_set(err, "next-hop table full; raise max_nexthops");
	fib->n_nh_free--;
	c = &fib->nhc[idx];
	memset(c, 0, sizeof(*c));
	c->in_use = true;
	c->family = family;
	memcpy(c->ip, ip, family == 4 ? 4 : 16);
	c->port = port;
	if (fib_nh_publish(fib, idx, err) < 0) {
		rte_hash_del_key(fib->nh_by_ip, &k);
		c->in_use = false;
		fib->n_nh_free++;
		return -1;
	}
	return (int)idx;
}

/* Drop one reference; release the index when no route and no neighbour uses it. */
void
fib_nh_put(struct ep_fib *fib, uint32_t idx)
{
	struct ep_fib_nhc *c = &fib->nhc[idx];
	struct nh_key k;

	if (c->refs > 0)
		c->refs--;
	if (c->refs > 0 || c->neigh)
		return;
	nh_key_make(&k, c->family, c->ip);
	rte_hash_del_key(fib->nh_by_ip, &k);
	c->in_use = false;
	/* After the grace period no worker still holds this index from a
	 * lookup of a route that is gone, so reusing it cannot misdirect. */
	fib_nh_publish(fib, idx, NULL);
	ep_rcu_synchronize(fib->e);
	fib->nh_free[fib->n_nh_free++] = idx;
}

/* ---- neighbours ---- */

/* Make @p ip (on @p port) a neighbour at @p mac: its next hop gets the MAC,
 * a host route goes to it.  @p dynamic: learnt, aged. */
static int
neigh_set(struct ep_fib *fib, uint8_t family, const uint8_t *ip, uint16_t port,
	  const struct rte_ether_addr *mac, bool dynamic, uint64_t now, struct ep_err *err)
{
	uint8_t plen = (uint8_t)ep_addr_bits(family);
	struct ep_fib_nhc *c, before;
	struct route_key k;
	void *val;
	int nh;
	bool created = false;

	fib_route_key(&k, family, ip, plen);
	if (fib_route_lookup(fib, &k, &val) && RT_KIND(val) == EP_FIB_RT_STATIC)
		return ep_err_set(err, "ip: a static route to this address exists; delete it "
				  "first");
	nh = fib_nh_find(fib, family, ip);
	if (nh < 0) {
		nh = fib_nh_create(fib, family, ip, port, err);
		if (nh < 0)
			return -1;
		created = true;
	}
	c = &fib->nhc[nh];
	before = *c;
	if (!c->neigh) {
		c->refs++;
		if (fib_route_install(fib, family, ip, plen, EP_FIB_RT_NEIGH, (uint32_t)nh,
				      err) < 0) {
			fib_nh_put(fib, (uint32_t)nh);
			return -1;
		}
	}
	c->neigh = true;
	c->dynamic = dynamic;
	c->stale = false;
	c->mac = *mac;
	c->port = port;
	c->confirmed = now;
	if (fib_nh_publish(fib, (uint32_t)nh, err) < 0) {
		/* Out of memory: undo to the state before the call. */
		if (!before.neigh && fib_route_lookup(fib, &k, &val) &&
		    RT_KIND(val) == EP_FIB_RT_NEIGH) {
			fib_route_remove(fib, &k);
			c->neigh = false;
			fib_nh_put(fib, (uint32_t)nh);
		} else if (created) {
			c->neigh = false;
			fib_nh_put(fib, (uint32_t)nh);
		} else {
			*c = before;
		}
		return -1;
	}
	return 0;
}

int
ep_fib_neigh_add(struct ep_fib *fib, const char *ip_s, const char *mac_s, const char *dev,
		 struct ep_err *err)
{
	uint8_t ip[16];
	struct rte_ether_addr mac;
	int fam, port;

	fam = ep_addr_parse(ip_s, ip);
	if (fam == 0)
		return ep_err_set(err, "ip: '%s' is not an IP address", ip_s ? ip_s : "");
	if (mac_s == NULL || ep_parse_mac(mac_s, &mac) < 0)
		return ep_err_set(err, "mac: '%s' is not a MAC address", mac_s ? mac_s : "");
	if (rte_is_multicast_ether_addr(&mac) || rte_is_zero_ether_addr(&mac))
		return ep_err_set(err, "mac: '%s' is not a unicast MAC address", mac_s);
	if (ep_fib_is_own(fib, (uint8_t)fam, ip))
		return ep_err_set(err, "ip: '%s' is an address of this router", ip_s);
	if (dev != NULL && dev[0] != '\0') {
		struct ep_port *p = ep_port_by_name(fib->e, dev);

		if (p == NULL || (fib->p.ports != 0 && !(fib->p.ports & (1u << p->index))))
			return ep_err_set(err, "dev: no port '%s'%s", dev,
					  p != NULL ? " in this FIB" : "");
		port = p->index;
	} else {
		port = ep_fib_port_for(fib, (uint8_t)fam, ip);
		if (port < 0)
			return ep_err_set(err, "ip: '%s' is not on a connected subnet of any port "
					  "(name one with dev)", ip_s);
	}
	return neigh_set(fib, (uint8_t)fam, ip, (uint16_t)port, &mac, false, 0, err);
}

static void
neigh_remove(struct ep_fib *fib, uint32_t nh)
{
	struct ep_fib_nhc *c = &fib->nhc[nh];
	struct route_key k;
	void *val;

	fib_route_key(&k, c->family, c->ip, (uint8_t)ep_addr_bits(c->family));
	if (fib_route_lookup(fib, &k, &val) && RT_KIND(val) == EP_FIB_RT_NEIGH)
		fib_route_remove(fib, &k);
	c->neigh = false;
	c->dynamic = false;
	c->stale = false;
	/* Routes via this address stay, unresolved, until a MAC comes back. */
	fib_nh_publish(fib, nh, NULL);
	fib_nh_put(fib, nh);
}

int
ep_fib_neigh_del(struct ep_fib *fib, const char *ip_s, struct ep_err *err)
{
	uint8_t ip[16];
	int fam, nh;

	fam = ep_addr_parse(ip_s, ip);
	if (fam == 0)
		return ep_err_set(err, "ip: '%s' is not an IP address", ip_s ? ip_s : "");
	nh = fib_nh_find(fib, (uint8_t)fam, ip);
	if (nh < 0 || !fib->nhc[nh].neigh)
		return ep_err_set(err, "ip: no neighbour '%s'", ip_s);
	neigh_remove(fib, (uint32_t)nh);
	return 0;
}

/* ---- the resolver ---- */

/* An answer heard by a worker: installs or refreshes a learnt neighbour if
 * it was asked for or is known; never overrides a static one. */
static void
heard(struct ep_fib *fib, const struct ep_fib_event *ev, uint64_t now)
{
	struct rte_ether_addr mac;
	struct nh_key k;
	void *val;
	int nh = fib_nh_find(fib, ev->family, ev->ip);
	bool asked;

	memcpy(&mac, ev->mac, 6);
	if (rte_is_multicast_ether_addr(&mac) || rte_is_zero_ether_addr(&mac) ||
	    ev->port >= fib->e->n_ports || ep_fib_is_own(fib, ev->family, ev->ip) ||
	    ep_fib_port_for(fib, ev->family, ev->ip) != ev->port)
		return;
	if (nh >= 0 && fib->nhc[nh].neigh && !fib->nhc[nh].dynamic)
		return;                                 /* static wins */
	nh_key_make(&k, ev->family, ev->ip);
	asked = rte_hash_lookup_data(fib->asked, &k, &val) >= 0 &&
		now - (uint64_t)(uintptr_t)val < ASKED_VALID_S * rte_get_tsc_hz();
	if (!asked && (nh < 0 || !fib->nhc[nh].neigh)) {
		fib->n_unsolicited++;
		return;
	}
	rte_hash_del_key(fib->asked, &k);
	if (nh >= 0 && fib->nhc[nh].neigh && !fib->nhc[nh].stale &&
	    rte_is_same_ether_addr(&fib->nhc[nh].mac, &mac) && fib->nhc[nh].port == ev->port) {
		fib->nhc[nh].confirmed = now;           /* nothing the workers see changes */
		return;
	}
	if (neigh_set(fib, ev->family, ev->ip, ev->port, &mac, true, now, NULL) == 0)
		fib->n_learnt++;
}

void
ep_fib_tick(struct ep_fib *fib, uint64_t now)
{
	uint64_t hz = rte_get_tsc_hz(), reachable = fib->p.neigh_reachable_s * hz;
	struct ep_fib_event ev[32];
	unsigned int k;

	if (fib->events == NULL)
		return;
	while ((k = rte_ring_dequeue_burst_elem(fib->events, ev, sizeof(ev[0]), RTE_DIM(ev),
						NULL)) != 0) {
		for (unsigned int i = 0; i < k; i++) {
			struct nh_key key;

			if (ev[i].type == EP_FIB_EV_ASKED) {
				nh_key_make(&key, ev[i].family, ev[i].ip);
				rte_hash_add_key_data(fib->asked, &key, (void *)(uintptr_t)now);
			} else {
				heard(fib, &ev[i], now);
			}
		}
	}
	/* Questions nobody answered are forgotten, once a second. */
	if (now - fib->asked_purged >= hz) {
		struct nh_key old[64];
		const void *key;
		void *val;
		uint32_t it = 0, n = 0;

		/* Collected first: a delete may move keys under the iterator. */
		fib->asked_purged = now;
		while (n < RTE_DIM(old) && rte_hash_iterate(fib->asked, &key, &val, &it) >= 0)
			if (now - (uint64_t)(uintptr_t)val >= ASKED_VALID_S * hz)
				memcpy(&old[n++], key, sizeof(old[0]));
		for (uint32_t i = 0; i < n; i++)
			rte_hash_del_key(fib->asked, &old[i]);
	}
	/* Age learnt neighbours: stale after neigh_reachable, gone 5 s later. */
	for (uint32_t i = EP_FIB_NH_FIRST; i < fib->p.max_nexthops; i++) {
		struct ep_fib_nhc *c = &fib->nhc[i];

		if (!c->in_use || !c->neigh || !c->dynamic || now - c->confirmed < reachable)
			continue;
		if (now - c->confirmed >= reachable + STALE_GRACE_S * hz) {
			neigh_remove(fib, i);
			fib->n_expired++;
		} else if (!c->stale) {
			c->stale = true;
			fib_nh_publish(fib, i, NULL);
		}
	}
}
