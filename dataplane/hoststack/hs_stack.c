/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host stack's shared state: socket table, lookup hashes, the worker
 * page applications map read-only, the workers' kick eventfds, and the
 * per-worker contexts (reassembly table, neighbours, hand-off ring).
 * Control thread only, except the per-worker contexts' contents.
 */
#define ALLOW_EXPERIMENTAL_API 1   /* rte_ip_frag_table_del_expired_entries, rte_ipv4_fragment_copy_nonseg_packet */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ep_rcu.h"
#include "hoststack.h"
#include "hs_ring.h"

struct hs_stack *hs_global;

void
hs_params_default(struct hs_params *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->attach_path, sizeof(p->attach_path), "%s", HS_ATTACH_PATH_DEFAULT);
	p->max_sockets = 4096;
	/* Receive: 8 MiB, ~4300 datagrams of 1860 bytes, ~40 ms at 1.7 Gbit/s,
	 * longer than a reader is away on a busy shared machine (a single-
	 * threaded iperf3 server is, for tens of ms at a time).  Send: 4 MiB,
	 * the sender is held back (blocking send) rather than dropped.  Pages
	 * are touched as a ring wraps: an idle socket costs a few pages, a busy
	 * one its whole area. */
	p->rx_slots = 8192;
	p->tx_slots = 4096;
	p->rx_bytes = 8u << 20;
	p->tx_bytes = 4u << 20;
	p->db_slots = 4096;
	/* Linux's ip_local_port_range default. */
	p->eph_lo = 32768;
	p->eph_hi = 60999;
	p->reasm_ms = 3000;
	p->reasm_entries = 4096;
	p->icmp_rate = 1000;
	p->shed_watermark_pct = 75;
	p->shed_priority = 4;
	p->default_priority = 4;
	p->max_wait_us = 1000;
	p->spin_us = 1000;
	for (int i = 0; i < EP_MAX_PORTS; i++)
		p->mtu[i] = 1500;
}

/* Memory both sides map: a sealed memfd, so an application can never
 * shrink it under the dp (a shrunk file is SIGBUS on access). */
int hs_memfd(const char *name, uint32_t size, void **map);

int
hs_memfd(const char *name, uint32_t size, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	*map = p;
	return fd;
}

static struct rte_hash *
make_hash(struct ep_engine *e, const char *name, uint32_t entries, uint32_t key_len)
{
	struct rte_hash *h = rte_hash_create(&(struct rte_hash_parameters){
		.name = name, .entries = RTE_MAX(entries, 1024u), .key_len = key_len,
		.hash_func = rte_hash_crc, .socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF });

	if (h != NULL && e->qsbr != NULL &&
	    rte_hash_rcu_qsbr_add(h, &(struct rte_hash_rcu_config){
		    .v = e->qsbr, .mode = RTE_HASH_QSBR_MODE_DQ }) != 0) {
		rte_hash_free(h);
		return NULL;
	}
	return h;
}

struct hs_stack *
hs_stack_create(struct ep_engine *e, const struct hs_params *p, struct ep_err *err)
{
	struct hs_stack *s = calloc(1, sizeof(*s));
	char name[RTE_MEMPOOL_NAMESIZE];
	static unsigned int instance;
	unsigned int inst = instance++;

	if (s == NULL) {
		ep_err_set(err, "hoststack: out of memory");
		return NULL;
	}
	s->e = e;
	s->p = *p;
	s->listen_fd = -1;
	s->epfd = -1;
	s->worker_shm_fd = -1;
	s->worker_ro_fd = -1;
	for (int i = 0; i < EP_MAX_WORKERS; i++)
		s->kick_fd[i] = -1;
	s->socks = calloc(p->max_sockets, sizeof(*s->socks));
	s->sock_gen = calloc(p->max_sockets, sizeof(*s->sock_gen));
	s->routes_cfg = calloc(1, sizeof(*s->routes_cfg));
	s->prules = calloc(HS_MAX_POLICY, sizeof(*s->prules));
	if (s->socks == NULL || s->sock_gen == NULL || s->routes_cfg == NULL || s->prules == NULL) {
		ep_err_set(err, "hoststack: out of memory for %u sockets", p->max_sockets);
		goto fail;
	}
	snprintf(name, sizeof(name), "hs_conn_%u", inst);
	s->conn = make_hash(e, name, p->max_sockets * 2, sizeof(struct hs_key_conn));
	snprintf(name, sizeof(name), "hs_bind_%u", inst);
	s->bind = make_hash(e, name, p->max_sockets * 2, sizeof(struct hs_key_bind));
	if (s->conn == NULL || s->bind == NULL) {
		ep_err_set(err, "hoststack: socket tables: %s", rte_strerror(rte_errno));
		goto fail;
	}
	/* Indirect mbufs for rte_ipv6_fragment_packet (payload segments that
	 * point into the original datagram). */
	snprintf(name, sizeof(name), "hs_ind_%u", inst);
	s->indirect_pool = rte_pktmbuf_pool_create(name, 8192, 256, 0, 0, SOCKET_ID_ANY);
	if (s->indirect_pool == NULL) {
		ep_err_set(err, "hoststack: indirect mbuf pool: %s", rte_strerror(rte_errno));
		goto fail;
	}
	s->eph_next = p->eph_lo;
	return s;
fail:
	hs_stack_free(s);
	return NULL;
}

/* The worker page and kick eventfds, once the workers are known. */
int hs_stack_workers_ready(struct hs_stack *s, struct ep_err *err);

int
hs_stack_workers_ready(struct hs_stack *s, struct ep_err *err)
{
	char path[64];
	void *map;

	s->wshm_size = (uint32_t)RTE_ALIGN_CEIL(sizeof(struct hs_worker_shm) * HS_MAX_WORKERS,
						4096);
	s->worker_shm_fd = hs_memfd("edgeplane-hs-workers", s->wshm_size, &map);
	if (s->worker_shm_fd < 0)
		return ep_err_set(err, "hoststack: worker page: %s", strerror(errno));
	s->wshm = map;
	/* Applications get a read-only open of the same memfd: they can map
	 * it only PROT_READ, so no application can say a worker is awake. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->worker_shm_fd);
	s->worker_ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->worker_ro_fd < 0)
		return ep_err_set(err, "hoststack: read-only worker page: %s", strerror(errno));
	for (int i = 0; i < s->n_w; i++) {
		s->kick_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->kick_fd[i] < 0)
			return ep_err_set(err, "hoststack: kick eventfd: %s", strerror(errno));
	}
	return 0;
}

void
hs_stack_free(struct hs_stack *s)
{
	if (s == NULL)
		return;
	hs_attach_close(s);
	if (s->socks != NULL)
		for (uint32_t i = 0; i < s->p.max_sockets; i++)
			if (s->socks[i] != NULL)
				hs_sock_close(s, s->socks[i]);
	for (int i = 0; i < s->n_w; i++)
		hs_wctx_free(s->w[i]);
	s->n_w = 0;
	if (s->bind != NULL) {
		const void *key;
		void *data;
		uint32_t it = 0;

		while (rte_hash_iterate(s->bind, &key, &data, &it) >= 0)
			rte_free(data);
	}
	hs_port_users_free(s);
	rte_hash_free(s->conn);
	rte_hash_free(s->bind);
	hs_policy_free(s->policy);
	free(s->routes);
	free(s->routes_cfg);
	free(s->prules);
	free(s->socks);
	free(s->sock_gen);
	if (s->wshm != NULL)
		munmap(s->wshm, s->wshm_size);
	if (s->worker_shm_fd >= 0)
		close(s->worker_shm_fd);
	if (s->worker_ro_fd >= 0)
		close(s->worker_ro_fd);
	for (int i = 0; i < EP_MAX_WORKERS; i++)
		if (s->kick_fd[i] >= 0)
			close(s->kick_fd[i]);
	rte_mempool_free(s->indirect_pool);
	free(s);
}

struct hs_wctx *
hs_wctx_create(struct hs_stack *s, struct ep_worker *w, uint16_t idx, struct ep_err *err)
{
	int socket = w != NULL ? (int)rte_lcore_to_socket_id(w->lcore) : SOCKET_ID_ANY;
	struct hs_wctx *c = rte_zmalloc_socket("hs_wctx", sizeof(*c), RTE_CACHE_LINE_SIZE,
					       socket);
	char name[RTE_RING_NAMESIZE];
	uint64_t hz = rte_get_tsc_hz();

	if (c == NULL) {
		ep_err_set(err, "hoststack: out of memory for a worker context");
		return NULL;
	}
	c->s = s;
	c->w = w;
	c->idx = idx;
	c->tsc_hz = hz;
	c->active_cap = s->p.max_sockets;
	for (int p = 0; p < 8; p++) {
		c->active[p] = rte_zmalloc_socket("hs_active", sizeof(uint32_t) * c->active_cap, 0,
						  socket);
		if (c->active[p] == NULL) {
			ep_err_set(err, "hoststack: out of memory for the active lists");
			goto fail;
		}
	}
	snprintf(name, sizeof(name), "hs_inbox_%p", (void *)c);
	c->inbox = rte_ring_create(name, 4096, socket, RING_F_SC_DEQ);
	if (c->inbox == NULL) {
		ep_err_set(err, "hoststack: hand-off ring: %s", rte_strerror(rte_errno));
		goto fail;
	}
	/* rte_ip_frag: buckets of 8 (the associativity it documents), entries
	 * for reasm_entries datagrams in flight, each living reasm_ms. */
	c->frag = rte_ip_frag_table_create(RTE_MAX(s->p.reasm_entries / 8, 16u), 8,
					   RTE_MAX(s->p.reasm_entries, 128u),
					   hz / 1000 * s->p.reasm_ms, socket);
	if (c->frag == NULL) {
		ep_err_set(err, "hoststack: reassembly table: %s", rte_strerror(rte_errno));
		goto fail;
	}
	if (hs_nb_init(c, 1024, err) < 0)
		goto fail;
	c->icmp_tokens = s->p.icmp_rate;
	return c;
fail:
	hs_wctx_free(c);
	return NULL;
}

void
hs_wctx_free(struct hs_wctx *c)
{
	struct rte_mbuf *m;

	if (c == NULL)
		return;
	if (c->inbox != NULL) {
		while (rte_ring_sc_dequeue(c->inbox, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(c->inbox);
	}
	if (c->frag != NULL) {
		rte_ip_frag_table_del_expired_entries(c->frag, &c->dr, UINT64_MAX);
		rte_ip_frag_free_death_row(&c->dr, 0);
		rte_ip_frag_table_destroy(c->frag);
	}
	for (uint16_t p = 0; p < EP_MAX_PORTS; p++)
		if (c->n_txq[p] != 0)
			rte_pktmbuf_free_bulk(c->txq[p], c->n_txq[p]);
	if (c->n_hairpin != 0)
		rte_pktmbuf_free_bulk(c->hairpin, c->n_hairpin);
	hs_nb_free(c);
	for (int p = 0; p < 8; p++)
		rte_free(c->active[p]);
	rte_free(c);
}
