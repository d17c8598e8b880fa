/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The socket table, on the control thread: regions, binding, connecting,
 * and the two lookup tables the workers read.
 *
 *   conn  (family, local, lport, remote, rport) -> socket id   connected sockets
 *   bind  (family, local or any, port) -> group                unconnected bound sockets
 *
 * A received datagram tries conn first, then bind with its destination
 * address, then bind with the wildcard: the order in which Linux scores a
 * connected socket above a specific bind above a wildcard one
 * (udp4_lib_lookup2's compute_score).
 *
 * Binding follows Linux's rules for UDP (inet_rcv_saddr_equal with
 * wildcards, udp_lib_lport_inuse): each bound socket claims addresses on
 * its port -- an AF_INET socket its IPv4 address or any IPv4; an AF_INET6
 * socket bound to :: both families unless IPV6_V6ONLY; a v4-mapped address
 * its IPv4 one -- and two claims of one family clash when the addresses
 * are equal or either is the wildcard, unless both sockets set SO_REUSEADDR
 * or both set SO_REUSEPORT (EADDRINUSE otherwise).  connect() on a socket
 * bound to a wildcard fixes its local address (as ip4_datagram_connect
 * does), so a server can connect its listener to the first peer and bind a
 * new listener to the same port: iperf3 does exactly that.  Groups of
 * SO_REUSEPORT sockets spread datagrams by a hash of the 4-tuple;
 * otherwise the most recently bound socket receives (Linux adds UDP
 * sockets at the head of their chain).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_malloc.h>

#include "ep_rcu.h"
#include "hoststack.h"
#include "hs_ring.h"

int hs_memfd(const char *name, uint32_t size, void **map);
void hs_worker_forget(struct hs_stack *s, struct hs_sock *k);

/* Sockets per port number, for the bind conflict check (control only). */
struct port_users {
	uint32_t n, cap;
	uint32_t *ids;
};

static bool
is_v4mapped(const struct hs_ip *a)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(a->b, pfx, 12) == 0;
}

/* An application address (family 4 or 6 as the socket speaks it) as the
 * wire sees it: a v4-mapped IPv6 address is IPv4. */
static uint8_t
wire_family(const struct hs_sockaddr *a, struct hs_ip *out)
{
	memset(out, 0, sizeof(*out));
	if (a->family == 4) {
		memcpy(out->b, a->addr, 4);
		return 4;
	}
	memcpy(out->b, a->addr, 16);
	if (is_v4mapped(out)) {
		memmove(out->b, out->b + 12, 4);
		memset(out->b + 4, 0, 12);
		return 4;
	}
	return 6;
}

static int
users_add(struct hs_stack *s, uint16_t port, uint32_t id)
{
	struct port_users *u;

	if (s->port_users == NULL && (s->port_users = calloc(65536, sizeof(*u))) == NULL)
		return -ENOMEM;
	u = &((struct port_users *)s->port_users)[port];
	if (u->n == u->cap) {
		uint32_t cap = u->cap ? u->cap * 2 : 4;
		uint32_t *ids = realloc(u->ids, sizeof(*ids) * cap);

		if (ids == NULL)
			return -ENOMEM;
		u->ids = ids;
		u->cap = cap;
	}
	u->ids[u->n++] = id;
	return 0;
}

static void
users_del(struct hs_stack *s, uint16_t port, uint32_t id)
{
	struct port_users *u = s->port_users != NULL ?
			       &((struct port_users *)s->port_users)[port] : NULL;

	for (uint32_t i = 0; u != NULL && i < u->n; i++)
		if (u->ids[i] == id) {
			memmove(&u->ids[i], &u->ids[i + 1], sizeof(u->ids[0]) * (u->n - i - 1));
			u->n--;
			return;
		}
}

static bool
claims_clash(const struct hs_key_bind *a, const struct hs_key_bind *b)
{
	if (a->family != b->family)
		return false;
	return hs_ip_is_zero(a->family, &a->addr) || hs_ip_is_zero(b->family, &b->addr) ||
	       hs_ip_eq(a->family, &a->addr, &b->addr);
}

/* Reuse flags as the application set them (read from its shared page, so
 * an application can only ever share its own socket). */
static uint32_t
opt_flags(const struct hs_sock *k)
{
	return __atomic_load_n(&k->shm->opt_flags, __ATOMIC_RELAXED);
}

static bool
bind_conflict(struct hs_stack *s, const struct hs_sock *k, const struct hs_key_bind *claims,
	      int n_claims, uint16_t port, uint32_t kflags)
{
	struct port_users *u = s->port_users != NULL ?
			       &((struct port_users *)s->port_users)[rte_be_to_cpu_16(port)] : NULL;

	for (uint32_t i = 0; u != NULL && i < u->n; i++) {
		struct hs_sock *o = s->socks[u->ids[i]];
		uint32_t of;

		if (o == NULL || o == k)
			continue;
		of = opt_flags(o);
		if ((kflags & of & HS_OPT_REUSEADDR) != 0)
			continue;
		/* SO_REUSEPORT shares a port among sockets of one user only. */
		if ((kflags & of & HS_OPT_REUSEPORT) != 0 && o->uid == k->uid)
			continue;
		for (int a = 0; a < n_claims; a++)
			for (int b = 0; b < o->n_bkey; b++)
				if (claims_clash(&claims[a], &o->bkey[b]))
					return true;
	}
	return false;
}

/* Claims of a socket bound to @p a (port network order). */
static int
make_claims(const struct hs_sock *k, const struct hs_sockaddr *a, struct hs_key_bind *c)
{
	struct hs_ip ip;
	uint8_t fam = wire_family(a, &ip);
	int n = 0;

	memset(c, 0, sizeof(*c) * 2);
	c[0].family = fam;
	c[0].port = a->port;
	c[0].addr = ip;
	n = 1;
	if (k->family == 6 && fam == 6 && hs_ip_is_zero(6, &ip) && !k->v6only) {
		c[1].family = 4;
		c[1].port = a->port;
		n = 2;
	}
	return n;
}

/* Replace the group at @p key by itself plus (or minus) @p id. */
static int
group_change(struct hs_stack *s, const struct hs_key_bind *key, uint32_t id, bool add)
{
	struct hs_group *old = NULL, *g;
	uint32_t n = 0;
	bool rp = true;

	if (rte_hash_lookup_data(s->bind, key, (void **)&old) < 0)
		old = NULL;
	/* In rte_malloc memory like the hash that points to it. */
	g = rte_malloc("hs_group", sizeof(*g) + sizeof(uint32_t) * ((old ? old->n : 0) + 1), 0);
	if (g == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; old != NULL && i < old->n; i++)
		if (old->ids[i] != id)
			g->ids[n++] = old->ids[i];
	if (add)
		g->ids[n++] = id;
	g->n = n;
	for (uint32_t i = 0; i < n; i++)
		rp = rp && s->socks[g->ids[i]] != NULL &&
		     (opt_flags(s->socks[g->ids[i]]) & HS_OPT_REUSEPORT) != 0;
	g->reuseport = rp && n > 1;
	if (n == 0) {
		rte_free(g);
		if (old != NULL)
			rte_hash_del_key(s->bind, key);
	} else if (rte_hash_add_key_data(s->bind, key, g) < 0) {
		rte_free(g);
		return -ENOMEM;
	}
	if (old != NULL) {
		ep_rcu_synchronize(s->e);
		rte_free(old);
	}
	return 0;
}

/* Leave the delivery groups (connected, closed) but keep the claims. */
static void
ungroup(struct hs_stack *s, struct hs_sock *k)
{
	if (!k->in_bind_table)
		return;
	for (int i = 0; i < k->n_bkey; i++)
		group_change(s, &k->bkey[i], k->id, false);
	k->in_bind_table = false;
}

static void
unbind(struct hs_stack *s, struct hs_sock *k)
{
	ungroup(s, k);
	if (k->n_bkey != 0)
		users_del(s, rte_be_to_cpu_16(k->bkey[0].port), k->id);
	k->n_bkey = 0;
	k->state &= ~HS_ST_BOUND;
	memset(&k->local, 0, sizeof(k->local));
}

static int
regroup(struct hs_stack *s, struct hs_sock *k)
{
	for (int i = 0; i < k->n_bkey; i++) {
		int rc = group_change(s, &k->bkey[i], k->id, true);

		if (rc < 0)
			return rc;
	}
	k->in_bind_table = true;
	return 0;
}

static void
publish_state(struct hs_stack *s, struct hs_sock *k)
{
	k->shm->local = k->local;
	k->shm->peer = k->peer;
	__atomic_store_n(&k->shm->state, k->state, __ATOMIC_RELEASE);
	hs_worker_sync(s, k);
}

static int
do_bind(struct hs_stack *s, struct hs_sock *k, const struct hs_sockaddr *a, bool user)
{
	struct hs_key_bind claims[2];
	struct hs_sockaddr b = *a;
	uint32_t kflags = opt_flags(k);
	int n, rc;

	if (b.port == 0) {
		uint32_t span = (uint32_t)s->p.eph_hi - s->p.eph_lo + 1;

		for (uint32_t i = 0; i < span; i++) {
			uint16_t port = (uint16_t)(s->p.eph_lo + (s->eph_next - s->p.eph_lo + i) % span);

			if (s->port_users != NULL &&
			    ((struct port_users *)s->port_users)[port].n != 0)
				continue;
			b.port = rte_cpu_to_be_16(port);
			s->eph_next = port + 1u > s->p.eph_hi ? s->p.eph_lo : port + 1u;
			break;
		}
		if (b.port == 0)
			return -EAGAIN;     /* Linux: EAGAIN when the range is exhausted */
	}
	n = make_claims(k, &b, claims);
	if (bind_conflict(s, k, claims, n, b.port, kflags))
		return -EADDRINUSE;
	rc = users_add(s, rte_be_to_cpu_16(b.port), k->id);
	if (rc < 0)
		return rc;
	memcpy(k->bkey, claims, sizeof(claims));
	k->n_bkey = n;
	k->local = b;
	k->state |= HS_ST_BOUND;
	if (!(k->state & HS_ST_CONNECTED)) {
		rc = regroup(s, k);
		if (rc < 0) {
			unbind(s, k);
			return rc;
		}
	}
	(void)user;
	return 0;
}

int
hs_sock_bind(struct hs_stack *s, struct hs_sock *k, const struct hs_sockaddr *a,
	     uint32_t opt)
{
	struct hs_ip ip;
	uint8_t fam;
	int rc;

	if (k->state & HS_ST_BOUND)
		return -EINVAL;
	if ((k->family == 4 && a->family != 4) || (k->family == 6 && a->family != 6))
		return k->family == 4 ? -EAFNOSUPPORT : -EINVAL;
	fam = wire_family(a, &ip);
	if (fam == 4 && k->family == 6 && k->v6only)
		return -EINVAL;
	if (!hs_ip_is_zero(fam, &ip) && !hs_is_own(s->routes, fam, &ip, NULL))
		return -EADDRNOTAVAIL;
	rc = do_bind(s, k, a, true);
	if (rc == 0) {
		k->bind_addr_locked = !hs_ip_is_zero(fam, &ip);
		k->bind_port_locked = a->port != 0;
		publish_state(s, k);
	}
	(void)opt;
	return rc;
}

int
hs_sock_autobind(struct hs_stack *s, struct hs_sock *k, uint16_t want_port)
{
	struct hs_sockaddr a = { .family = k->family, .port = want_port };
	int rc;

	if (k->state & HS_ST_BOUND)
		return 0;
	/* An address bind() chose survives connect(AF_UNSPEC). */
	if (k->bind_addr_locked)
		memcpy(a.addr, k->local.addr, sizeof(a.addr));
	rc = do_bind(s, k, &a, false);
	if (rc == 0) {
		k->bind_port_locked = want_port != 0;
		publish_state(s, k);
	}
	return rc;
}

static void
disconnect(struct hs_stack *s, struct hs_sock *k)
{
	if (k->in_conn_table) {
		rte_hash_del_key(s->conn, &k->ckey);
		k->in_conn_table = false;
	}
	k->state &= ~HS_ST_CONNECTED;
	memset(&k->peer, 0, sizeof(k->peer));
}

int
hs_sock_connect(struct hs_stack *s, struct hs_sock *k, const struct hs_sockaddr *a)
{
	struct hs_ip rip, lip;
	struct hs_nexthop nh;
	struct hs_sockaddr local;
	uint8_t fam;
	int rc;

	if (a->family == 0) {
		/* connect(AF_UNSPEC): __udp_disconnect.  The local address goes
		 * back to the wildcard unless bind() chose it, the port is
		 * released unless bind() chose it. */
		bool was_bound = (k->state & HS_ST_BOUND) != 0;
		struct hs_sockaddr keep = k->local;

		disconnect(s, k);
		if (was_bound) {
			unbind(s, k);
			if (!k->bind_addr_locked)
				memset(keep.addr, 0, sizeof(keep.addr));
			if (k->bind_port_locked) {
				rc = do_bind(s, k, &keep, true);
				if (rc < 0)
					return rc;
			} else if (k->bind_addr_locked) {
				/* unbound, but the address bind() chose stays */
				keep.port = 0;
				k->local = keep;
			}
		}
		ep_rcu_synchronize(s->e);
		publish_state(s, k);
		return 0;
	}
	if ((k->family == 4 && a->family != 4) || (k->family == 6 && a->family != 6))
		return -EAFNOSUPPORT;
	if (a->port == 0)
		return -ECONNREFUSED;   /* Linux refuses port 0 at send time; connect says so too */
	fam = wire_family(a, &rip);
	if (fam == 4 && k->family == 6 && k->v6only)
		return -ENETUNREACH;
	if (!hs_route_lookup(s->routes, fam, &rip, &nh))
		return -ENETUNREACH;
	disconnect(s, k);
	rc = hs_sock_autobind(s, k, 0);
	if (rc < 0)
		return rc;
	/* A wildcard local address becomes the route's source (and the bind
	 * claim with it, as Linux rehashes the socket). */
	if (hs_ip_is_zero(wire_family(&k->local, &lip), &lip)) {
		local = k->local;
		memset(local.addr, 0, sizeof(local.addr));
		if (k->family == 4) {
			memcpy(local.addr, nh.src.b, 4);
		} else if (fam == 4) {
			local.addr[10] = local.addr[11] = 0xff;
			memcpy(local.addr + 12, nh.src.b, 4);
		} else {
			memcpy(local.addr, nh.src.b, 16);
		}
		unbind(s, k);
		rc = do_bind(s, k, &local, false);
		if (rc < 0)
			return rc;
	} else if (wire_family(&k->local, &lip) != fam) {
		/* bound to an IPv6 address, connecting to IPv4 (or the reverse):
		 * no route from that source */
		return -ENETUNREACH;
	}
	wire_family(&k->local, &lip);
	ungroup(s, k);
	memset(&k->ckey, 0, sizeof(k->ckey));
	k->ckey.family = fam;
	k->ckey.lport = k->local.port;
	k->ckey.rport = a->port;
	memcpy(k->ckey.laddr.b, lip.b, hs_ip_len(fam));
	memcpy(k->ckey.raddr.b, rip.b, hs_ip_len(fam));
	rc = rte_hash_add_key_data(s->conn, &k->ckey, (void *)(uintptr_t)k->id);
	if (rc < 0) {
		regroup(s, k);
		return -ENOMEM;
	}
	k->in_conn_table = true;
	k->peer = *a;
	k->state |= HS_ST_CONNECTED;
	k->rt_gen = 0;          /* the worker recomputes the next hop */
	publish_state(s, k);
	return 0;
}

int
hs_sock_shutdown(struct hs_stack *s, struct hs_sock *k, int how)
{
	static const uint8_t byte = 1;

	if (how < SHUT_RD || how > SHUT_RDWR)
		return -EINVAL;
	/* Linux (6.x) answers ENOTCONN for an unconnected UDP socket and
	 * leaves it as it was. */
	if (!(k->state & HS_ST_CONNECTED))
		return -ENOTCONN;
	if (how != SHUT_WR)
		k->state |= HS_ST_SHUT_RD;
	if (how != SHUT_RD)
		k->state |= HS_ST_SHUT_WR;
	publish_state(s, k);
	/* Wake blocked readers (they see SHUT_RD and return 0), as
	 * inet_shutdown's sk_state_change does. */
	__atomic_store_n(&k->shm->rx_signalled.v, 1, __ATOMIC_SEQ_CST);
	if (send(k->wake_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
		k->st.wakeups++;
	return 0;
}

struct hs_sock *
hs_sock_open(struct hs_stack *s, uint8_t family, int wake_fd, uint64_t dev, uint64_t ino,
	     struct hs_app *app, struct ep_err *err)
{
	struct hs_sock *k;
	struct hs_sock_shm hdr;
	uint32_t id = UINT32_MAX, size;
	void *map;
	char name[48];

	for (uint32_t i = 0; i < s->p.max_sockets; i++) {
		uint32_t c = (s->next_id + i) % s->p.max_sockets;

		if (s->socks[c] == NULL) {
			id = c;
			break;
		}
	}
	if (id == UINT32_MAX) {
		ep_err_set(err, "all %u sockets in use", s->p.max_sockets);
		return NULL;
	}
	k = rte_zmalloc("hs_sock", sizeof(*k), RTE_CACHE_LINE_SIZE);
	if (k == NULL) {
		ep_err_set(err, "out of memory");
		return NULL;
	}
	k->id = id;
	k->gen = ++s->sock_gen[id];
	k->family = family;
	k->wake_fd = wake_fd;
	k->dev = dev;
	k->ino = ino;
	k->app = app;
	k->pid = app != NULL ? app->pid : 0;
	k->uid = app != NULL ? app->uid : 0;
	k->worker = (uint16_t)(s->rr++ % (uint32_t)s->n_w);
	k->prio = s->p.default_priority;
	k->rx_slots = s->p.rx_slots;
	k->tx_slots = s->p.tx_slots;
	k->rx_bytes = s->p.rx_bytes;
	k->tx_bytes = s->p.tx_bytes;
	memset(&hdr, 0, sizeof(hdr));
	hdr.rx_slots = k->rx_slots;
	hdr.tx_slots = k->tx_slots;
	hdr.rx_bytes = k->rx_bytes;
	hdr.tx_bytes = k->tx_bytes;
	size = hs_sock_layout(&hdr);
	snprintf(name, sizeof(name), "edgeplane-hs-sock-%u", id);
	k->shm_fd = hs_memfd(name, size, &map);
	k->rx_shadow_off = rte_zmalloc("hs_shadow", sizeof(uint32_t) * k->rx_slots, 0);
	if (k->shm_fd < 0 || k->rx_shadow_off == NULL) {
		ep_err_set(err, "socket region of %u bytes: %s", size, strerror(errno));
		if (k->shm_fd >= 0) {
			munmap(map, size);
			close(k->shm_fd);
		}
		rte_free(k->rx_shadow_off);
		rte_free(k);
		return NULL;
	}
	k->shm = map;
	k->region_size = size;
	*k->shm = hdr;
	k->shm->magic = HS_ABI_MAGIC;
	k->shm->version = HS_ABI_VERSION;
	k->shm->sock_id = id;
	k->shm->gen = k->gen;
	k->shm->worker = k->worker;
	k->shm->family = family;
	k->shm->rcvbuf = k->rx_bytes;
	k->shm->sndbuf = k->tx_bytes;
	k->rx_desc = (struct hs_desc *)((uint8_t *)map + hdr.rx_desc_off);
	k->tx_desc = (struct hs_desc *)((uint8_t *)map + hdr.tx_desc_off);
	k->rx_data = (uint8_t *)map + hdr.rx_data_off;
	k->tx_data = (uint8_t *)map + hdr.tx_data_off;
	s->next_id = id + 1;
	s->n_live++;
	if (app != NULL)
		app->n_socks++;
	__atomic_store_n(&s->socks[id], k, __ATOMIC_RELEASE);
	return k;
}

/* Free the conflict index (stack teardown). */
void
hs_port_users_free(struct hs_stack *s)
{
	struct port_users *u = s->port_users;

	for (uint32_t i = 0; u != NULL && i < 65536; i++)
		free(u[i].ids);
	free(u);
	s->port_users = NULL;
}

void
hs_sock_close(struct hs_stack *s, struct hs_sock *k)
{
	disconnect(s, k);
	unbind(s, k);
	__atomic_store_n(&s->socks[k->id], NULL, __ATOMIC_RELEASE);
	hs_worker_forget(s, k);
	ep_rcu_synchronize(s->e);
	if (k->wake_fd >= 0) {
		if (s->epfd >= 0)
			epoll_ctl(s->epfd, EPOLL_CTL_DEL, k->wake_fd, NULL);
		close(k->wake_fd);
	}
	munmap(k->shm, k->region_size);
	close(k->shm_fd);
	rte_free(k->rx_shadow_off);
	if (k->app != NULL && k->app->n_socks > 0)
		k->app->n_socks--;
	s->n_live--;
	rte_free(k);
}

struct hs_sock *
hs_sock_by_ino(struct hs_stack *s, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < s->p.max_sockets; i++)
		if (s->socks[i] != NULL && s->socks[i]->ino == ino && s->socks[i]->dev == dev)
			return s->socks[i];
	return NULL;
}

/* ---- what the stack serves ---- */

bool
hs_serves_bind(struct hs_stack *s, const struct hs_sockaddr *a, bool dual)
{
	struct hs_ip ip;
	uint8_t fam = wire_family(a, &ip);
	uint16_t port = rte_be_to_cpu_16(a->port);
	bool wild = hs_ip_is_zero(fam, &ip);

	if (!wild && !hs_is_own(s->routes, fam, &ip, NULL))
		return false;
	if (s->n_term == 0)
		return true;
	for (int i = 0; i < s->n_term; i++) {
		const struct hs_term_rule *r = &s->term[i];
		bool addr_ok = r->any_addr || wild ||
			       (r->family == fam && hs_ip_eq(fam, &r->addr, &ip));

		if (!r->any_addr && wild && r->family != fam && !(dual && fam == 6))
			addr_ok = false;
		/* Port 0 asks for an ephemeral port: the rule must allow them all. */
		if (addr_ok && (port == 0 ? r->lo <= s->p.eph_lo && r->hi >= s->p.eph_hi :
					    port >= r->lo && port <= r->hi))
			return true;
	}
	return false;
}

bool
hs_serves_dest(struct hs_stack *s, const struct hs_sockaddr *a)
{
	struct hs_ip ip;
	struct hs_nexthop nh;
	uint8_t fam = wire_family(a, &ip);

	return hs_route_lookup(s->routes, fam, &ip, &nh);
}

/* ---- terminate rules: "<address|any> <port|lo-hi|any>" ---- */

int
hs_term_parse(const char *text, struct hs_term_rule *r, struct ep_err *err)
{
	char a[64], p[32], extra[8];
	unsigned int lo, hi;
	int n = sscanf(text, "%63s %31s %7s", a, p, extra);

	memset(r, 0, sizeof(*r));
	if (n != 2)
		return ep_err_set(err, "'%s': expected '<address|any> <port|lo-hi|any>'", text);
	if (strcmp(a, "any") == 0) {
		r->any_addr = true;
	} else {
		int fam = hs_parse_ip(a, &r->addr);

		if (fam == 0)
			return ep_err_set(err, "'%s' is not an address or 'any'", a);
		r->family = (uint8_t)fam;
	}
	if (strcmp(p, "any") == 0) {
		lo = 1;
		hi = 65535;
	} else if (sscanf(p, "%u-%u%7s", &lo, &hi, extra) == 2) {
		/* range */
	} else if (sscanf(p, "%u%7s", &lo, extra) == 1) {
		hi = lo;
	} else {
		return ep_err_set(err, "'%s' is not a port, a range lo-hi or 'any'", p);
	}
	if (lo < 1 || hi > 65535 || lo > hi)
		return ep_err_set(err, "'%s': ports are 1-65535, low <= high", p);
	r->lo = (uint16_t)lo;
	r->hi = (uint16_t)hi;
	return 0;
}

void
hs_term_format(const struct hs_term_rule *r, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	if (r->any_addr)
		snprintf(a, sizeof(a), "any");
	else
		hs_ip_str(r->family, &r->addr, a, sizeof(a));
	if (r->lo == 1 && r->hi == 65535)
		snprintf(buf, n, "%s any", a);
	else if (r->lo == r->hi)
		snprintf(buf, n, "%s %u", a, r->lo);
	else
		snprintf(buf, n, "%s %u-%u", a, r->lo, r->hi);
}

int
hs_term_add(struct hs_stack *s, const char *text, struct ep_err *err)
{
	struct hs_term_rule r;

	if (hs_term_parse(text, &r, err) < 0)
		return -1;
	if (!r.any_addr && !hs_is_own(s->routes_cfg->n_own ? s->routes_cfg : s->routes,
				      r.family, &r.addr, NULL))
		return ep_err_set(err, "'%s' is not an address of any port", text);
	if (s->n_term == HS_MAX_TERMINATE)
		return ep_err_set(err, "more than %d terminate rules", HS_MAX_TERMINATE);
	s->term[s->n_term++] = r;
	return 0;
}

int
hs_term_del(struct hs_stack *s, const char *text, struct ep_err *err)
{
	struct hs_term_rule r;

	if (hs_term_parse(text, &r, err) < 0)
		return -1;
	for (int i = 0; i < s->n_term; i++) {
		const struct hs_term_rule *x = &s->term[i];

		if (x->any_addr == r.any_addr && x->lo == r.lo && x->hi == r.hi &&
		    (r.any_addr || (x->family == r.family && hs_ip_eq(r.family, &x->addr, &r.addr)))) {
			memmove(&s->term[i], &s->term[i + 1], sizeof(s->term[0]) * (size_t)(s->n_term - i - 1));
			s->n_term--;
			return 0;
		}
	}
	return ep_err_set(err, "no terminate rule '%s'", text);
}
